"""TCVT converts as the vector unit does: a float becomes an integer rounded by
pto-isa's RoundMode (default CAST_RINT, ties to even) and saturated to the integer's range,
NaN as 0 - not numpy's truncating, wrapping cast - except the pairs pto-isa's NPU headers
default to SaturationMode::OFF, which wrap as on the device.  Checked against plain numpy on
both platforms; CAST_ODD and non-RINT float narrowing are reported at their line."""
import ml_dtypes
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import KernelError
from ptopipe.isa import *  # noqa: F403
from markers import line_of

X = np.array([[300, -300, 2.5, 3.5, -2.5, -3.5, 127.6, -128.6, 0.5, -0.5, 1.49, -1.5,
               70000, 1e10, -1e10, np.nan, np.inf, -np.inf] + [0.25] * 14], np.float32)
ROUND = {RoundMode.CAST_RINT: np.rint, RoundMode.CAST_FLOOR: np.floor, RoundMode.CAST_CEIL: np.ceil,
         RoundMode.CAST_TRUNC: np.trunc, RoundMode.CAST_NONE: np.trunc,
         RoundMode.CAST_ROUND: lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5)}


def _src(dt):
    """The source dtype of each destination: TCVT has no f32 -> int8 (docs/isa/TCVT.md), so
    int8 converts from f16 (X rounded to half first; its overflows become infinities)."""
    return np.float16 if dt is np.int8 else np.float32


def _as_src(x, dt):
    with np.errstate(over="ignore"):            # 70000 and 1e10 are infinities in f16
        return x.astype(_src(dt))


def _want(x, mode, dt):
    """f16 -> int8 (SaturationMode::ON) / f32 -> int32 / int64 saturate; f32 -> int16 is one
    of pto-isa's default-OFF pairs: the value saturated into int32, then its low 16 bits."""
    with np.errstate(over="ignore"):
        r = np.nan_to_num(ROUND[mode](_as_src(x, dt).astype(np.float64)), nan=0.0)
    if dt is np.int16:
        return np.clip(r, -2 ** 31, 2 ** 31 - 1).astype(np.int64).astype(np.int16)
    if dt is np.int64:              # 2^63 - 1 is no float64: saturate by comparison
        return np.array([min(max(int(v), -2 ** 63), 2 ** 63 - 1) for v in r[0]], np.int64)[None]
    info = np.iinfo(dt)
    return np.clip(r, info.min, info.max).astype(dt)


def _run(mode, dt, platform="a2a3"):
    def vec(x, out):
        a = Tile(TileType.Vec, np.dtype(_src(dt)), 1, 32, addr=0)
        b = Tile(TileType.Vec, dt, 1, 32, addr=0x400)
        e = TLOAD(a, x)
        if dt is np.int8:                   # f16 -> int8 wraps by default: saturate explicitly
            TCVT(b, a, mode or RoundMode.CAST_RINT, SaturationMode.ON, e)
        elif mode is None:
            TCVT(b, a, e)                       # no mode, an event: CAST_RINT after the load
        else:
            TCVT(b, a, mode)
        TSTORE(out, b)
    res = ptopipe.run(None, (vec, None), dict(x=_as_src(X, dt), out=np.zeros((1, 32), dt)), platform=platform)
    return res.outputs["out"]


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("mode", [None] + list(ROUND))
def test_float_to_int_rounds_and_saturates_or_wraps(mode, dt, platform):
    got = _run(mode, dt, platform)
    np.testing.assert_array_equal(got, _want(X, mode or RoundMode.CAST_RINT, dt))


def test_rint_is_ties_to_even_and_round_is_ties_away():
    assert list(_run(RoundMode.CAST_RINT, np.int32)[0, 2:6]) == [2, 4, -2, -4]
    assert list(_run(RoundMode.CAST_ROUND, np.int32)[0, 2:6]) == [3, 4, -3, -4]
    assert list(_run(None, np.int8)[0, [0, 1, 13, 15]]) == [127, -128, 127, 0]   # saturated, NaN 0


def test_unmodelled_modes_are_reported_at_their_line():
    def vec(x, out):
        a = Tile(TileType.Vec, float32, 1, 32, addr=0)
        b = Tile(TileType.Vec, int32, 1, 32, addr=0x200)
        h = Tile(TileType.Vec, float16, 1, 32, addr=0x400)
        TLOAD(a, x)
        TCVT(h, a)                                      # float narrowing: CAST_RINT, fine
        if out.GetShape(3) == 1:
            TCVT(b, a, RoundMode.CAST_ODD)              # ODD
        TCVT(h, a, RoundMode.CAST_ODD)                  # ODD16
    for rows, marker, text in ((1, "ODD", "CAST_ODD is not modelled"),
                               (2, "ODD16", "von Neumann rounding is not modelled")):
        with pytest.raises(KernelError) as ei:
            ptopipe.run(None, (vec, None), dict(x=X, out=np.zeros((rows, 32), np.int32)))
        assert text in ei.value.what and ei.value.fix
        assert ei.value.where.endswith(f":{line_of(vec, marker)}"), ei.value.where


@pytest.mark.parametrize("src_dtype,dtype", [(np.float32, np.float16), (np.float32, bfloat16),
                                             (np.int32, np.float32)])
@pytest.mark.parametrize("mode", [RoundMode.CAST_ROUND, RoundMode.CAST_FLOOR, RoundMode.CAST_CEIL,
                                  RoundMode.CAST_TRUNC, RoundMode.CAST_RINT])
def test_float_narrowing_rounds_by_mode(src_dtype, dtype, mode):
    """f32 -> f16 / bf16 and i32 -> f32 (beyond 2^24 not every integer is a float32) under each
    RoundMode, against numpy's nextafter neighbours of the nearest-even result: ties (exact
    halfway values) and both signs included."""
    rng = np.random.default_rng(3)
    if src_dtype is np.int32:
        base = rng.integers(-2 ** 31, 2 ** 31 - 1, 64, dtype=np.int64)
        ties = np.array([2 ** 24 + 1, -(2 ** 24 + 1), 2 ** 24 + 3, 2 ** 25 + 2, 0, 7], np.int64)
    else:
        ulp16 = 2.0 ** -10 if dtype is np.float16 else 2.0 ** -7
        base = rng.uniform(-4, 4, 64)
        ties = np.array([1 + ulp16 / 2, -(1 + ulp16 / 2), 1 + 3 * ulp16 / 2, 2 + ulp16, -0.0, 0.0])
    x = np.concatenate([base, ties, np.zeros(128 - 64 - len(ties))]).astype(src_dtype).reshape(4, 32)

    def vec(src, out):
        a = Tile(TileType.Vec, src_dtype, 4, 32, addr=0)
        h = Tile(TileType.Vec, dtype, 4, 32, addr=0x400)
        TLOAD(a, src)
        TCVT(h, a, mode)
        TSTORE(out, h)
    got = ptopipe.run(None, (vec, None), dict(src=x, out=np.zeros((4, 32), dtype))).outputs["out"]
    x64 = x.astype(np.float64)
    near = x.astype(dtype)
    lo = np.where(near.astype(np.float64) > x64, np.nextafter(near, np.array(-np.inf, dtype)), near)
    hi = np.where(near.astype(np.float64) < x64, np.nextafter(near, np.array(np.inf, dtype)), near)
    if mode is RoundMode.CAST_FLOOR:
        want = lo
    elif mode is RoundMode.CAST_CEIL:
        want = hi
    elif mode is RoundMode.CAST_TRUNC:
        want = np.where(x64 < 0, hi, lo)
    elif mode is RoundMode.CAST_ROUND:
        dlo, dhi = x64 - lo.astype(np.float64), hi.astype(np.float64) - x64
        want = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(x64 < 0, lo, hi)))
    else:
        want = near
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("src_dtype,dtype", [(np.float32, np.float16), (np.float32, bfloat16), (np.int32, np.float16)])
@pytest.mark.parametrize("mode", [RoundMode.CAST_RINT, RoundMode.CAST_TRUNC, RoundMode.CAST_CEIL, RoundMode.CAST_FLOOR,
                                  RoundMode.CAST_ROUND])
def test_saturation_on_clamps_a_float_narrowing_to_the_largest_finite_value_under_every_mode(
        platform, src_dtype, dtype, mode):
    """SaturationMode.ON, whatever the RoundMode: a value past the destination's range (an
    infinity too) becomes its largest finite value, as pto-isa's TCvt clamps to the two
    types' common range; NaN stays NaN; in-range values round by the mode."""
    if (platform, src_dtype) == ("a5", np.int32):
        return                              # (A5 has no i32 -> f16: the pair refusal's test)
    big = float(np.finfo(dtype).max) if dtype is np.float16 else float(ml_dtypes.finfo(dtype).max)
    if src_dtype is np.int32:
        x = np.array([70000, -70000, 2 ** 31 - 1, -2 ** 31, 65520, 3, 0, -5] * 4, np.int32)
    else:
        with np.errstate(over="ignore"):    # (bf16's max * 1.01 is past float32's: an infinity)
            x = np.array([big * 1.01, -big * 1.01, np.inf, -np.inf, 1e38, -1e38, np.nan, 1.5] * 4, np.float32)
    x = x.reshape(1, 32)

    def vec(src, out):
        a = Tile(TileType.Vec, src_dtype, 1, 32, addr=0)
        h = Tile(TileType.Vec, dtype, 1, 32, addr=0x400)
        TLOAD(a, src)
        TCVT(h, a, mode, SaturationMode.ON)
        TSTORE(out, h)
    got = ptopipe.run(None, (vec, None), dict(src=x, out=np.zeros((1, 32), dtype)), platform=platform).outputs["out"]
    g = got.astype(np.float64)[0]
    x64 = x.astype(np.float64)[0]
    past = np.abs(x64) > big
    np.testing.assert_array_equal(g[past], np.sign(x64[past]) * big)
    assert np.isnan(g[np.isnan(x64)]).all() and np.isfinite(g[~np.isnan(x64)]).all()


#: pto-isa's default-OFF pairs (npu/a2a3/TCvt.hpp kIsNarrowingCvt, npu/a5/TCvt.hpp) and pairs
#: next to them that keep saturating: (source, destination, wraps)
PAIRS = [(np.float16, np.int8, True), (np.float16, np.uint8, True), (np.float16, np.int16, True),
         (np.float32, np.int16, True), (np.int32, np.int16, True), (np.int64, np.int32, True),
         (np.float32, np.int32, False), (np.float32, np.int64, False), (np.float16, np.int32, False)]


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_default_saturation_follows_pto_isa_per_pair(platform):
    """TCVT without a SaturationMode, each pair against numpy: the default-OFF pairs equal an
    explicit SaturationMode::OFF (rounded, through int32, low bits kept); the others saturate."""
    fvals = np.array([200, -200, 300, 127.5, 128, -129, 1000, 40000, -40000, 2.5, -3.5, 255.5, 256, -1, 65504,
                      -65504] * 2, np.float64)
    ivals = np.array([40000, -40000, 2 ** 31 - 1, -2 ** 31, 65535, 32768, -32769, 7] * 4, np.int64)
    inputs = {f"x{k}": (fvals if np.dtype(s).kind == "f" else ivals).astype(s).reshape(1, 32)
              for k, (s, d, _) in enumerate(PAIRS)}
    inputs["x5"] = (ivals * (2 ** 20)).reshape(1, 32)          # int64 values past int32

    def vec(**g):
        for k, (s, d, _) in enumerate(PAIRS):
            a = Tile(TileType.Vec, np.dtype(s), 1, 32, addr=0)
            b = Tile(TileType.Vec, np.dtype(d), 1, 32, addr=0x400)
            TLOAD(a, g[f"x{k}"])
            TCVT(b, a, RoundMode.CAST_RINT)
            TSTORE(g[f"o{k}"], b)
    outs = {f"o{k}": np.zeros((1, 32), d) for k, (s, d, _) in enumerate(PAIRS)}
    res = ptopipe.run(None, (vec, None), dict(inputs, **outs), platform=platform).outputs
    for k, (s, d, wraps) in enumerate(PAIRS):
        x = inputs[f"x{k}"].astype(np.float64) if np.dtype(s).kind == "f" else inputs[f"x{k}"]
        r = np.rint(x) if np.dtype(s).kind == "f" else x
        if wraps:
            want = (np.clip(r, -2 ** 31, 2 ** 31 - 1) if np.dtype(s).kind == "f" else r).astype(np.int64).astype(d)
        else:
            want = np.clip(r, np.iinfo(d).min, np.iinfo(d).max).astype(d)
        np.testing.assert_array_equal(res[f"o{k}"], want, err_msg=f"{np.dtype(s).name} -> {np.dtype(d).name}")
    assert res["o0"][0, 0] == -56                                  # 200.0 wraps into int8


@pytest.mark.parametrize("platform, src, dst, route", [
    ("a2a3", np.int8, np.float32, "i8 -> f16 -> f32"), ("a2a3", np.uint8, np.float32, "u8 -> f16 -> f32"),
    ("a2a3", np.float16, bfloat16, "f16 -> f32 -> bf16"), ("a2a3", np.float32, np.int8, "f32 -> f16 -> i8"),
    ("a2a3", np.int16, np.int32, "i16 -> f32 -> i32"), ("a5", np.float32, np.int8, "f32 -> f16 -> i8")])
def test_a_pair_the_platform_cannot_convert_is_refused_at_its_line(platform, src, dst, route):
    """pto-isa's A2A3 TCvt.hpp converts nothing for a pair it has no vconv for (the device
    keeps dst's old bytes), A5's has no overload: refused at the line, naming the platform's
    destinations for the source and a two-step route (vocab.TCVT_PAIRS)."""
    def vec(x, out):
        a = Tile(TileType.Vec, np.dtype(src), 1, 32, addr=0)
        b = Tile(TileType.Vec, np.dtype(dst), 1, 32, addr=0x400)
        TLOAD(a, x)
        TCVT(b, a)                                      # PAIR
        TSTORE(out, b)
    with pytest.raises(KernelError) as ei:
        ptopipe.run(None, (vec, None), dict(x=np.ones((1, 32), src), out=np.zeros((1, 32), dst)), platform=platform)
    e = ei.value
    assert "TCVT has no" in e.what and f"on {platform.upper()}" in e.what, e.what
    assert route in e.fix and "converts to" in e.fix, e.fix
    assert e.where.endswith(f":{line_of(vec, 'PAIR')}"), e.where


def test_a5_converts_pairs_a2a3_lacks():
    """i16 -> i32 and i8 -> i32 widen exactly on A5 (castData overloads of a5/TCvt.hpp)."""
    x = np.arange(-16, 16, dtype=np.int16).reshape(1, 32) * 1000

    def vec(x, y, o, p):
        a = Tile(TileType.Vec, int16, 1, 32, addr=0)
        b = Tile(TileType.Vec, int32, 1, 32, addr=0x400)
        c = Tile(TileType.Vec, int8, 1, 32, addr=0x800)
        TLOAD(a, x)
        TCVT(b, a)
        TSTORE(o, b)
        TLOAD(c, y)
        TCVT(b, c)
        TSTORE(p, b)
    y = np.arange(-128, 128, 8, dtype=np.int8).reshape(1, 32)
    res = ptopipe.run(None, (vec, None), dict(x=x, y=y, o=np.zeros((1, 32), np.int32), p=np.zeros((1, 32), np.int32)),
                      platform="a5").outputs
    np.testing.assert_array_equal(res["o"], x.astype(np.int32))
    np.testing.assert_array_equal(res["p"], y.astype(np.int32))
