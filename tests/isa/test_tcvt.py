"""TCVT converts as the vector unit does: a float becomes an integer rounded by
pto-isa's RoundMode (default CAST_RINT, ties to even) and saturated to the integer's range,
NaN as 0 - not numpy's truncating, wrapping cast.  Checked against plain numpy on both
platforms; CAST_ODD and non-RINT float narrowing are reported at their line."""
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


def _want(x, mode, dt):
    info = np.iinfo(dt)
    return np.clip(np.nan_to_num(ROUND[mode](x.astype(np.float64)), nan=0.0), info.min, info.max).astype(dt)


def _run(mode, dt, platform="a2a3"):
    def vec(x, out):
        a = Tile(TileType.Vec, float32, 1, 32, addr=0)
        b = Tile(TileType.Vec, dt, 1, 32, addr=0x200)
        e = TLOAD(a, x)
        if mode is None:
            TCVT(b, a, e)                       # no mode, an event: CAST_RINT after the load
        else:
            TCVT(b, a, mode)
        TSTORE(out, b)
    res = ptopipe.run(None, (vec, None), dict(x=X, out=np.zeros((1, 32), dt)), platform=platform)
    return res.outputs["out"]


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32])
@pytest.mark.parametrize("mode", [None] + list(ROUND))
def test_float_to_int_rounds_and_saturates(mode, dt, platform):
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


@pytest.mark.parametrize("dtype", [np.float16, bfloat16])
@pytest.mark.parametrize("mode", [RoundMode.CAST_ROUND, RoundMode.CAST_FLOOR, RoundMode.CAST_CEIL,
                                  RoundMode.CAST_TRUNC, RoundMode.CAST_RINT])
def test_float_narrowing_rounds_by_mode(dtype, mode):
    """f32 -> f16 / bf16 under each RoundMode, against numpy's nextafter neighbours of the
    nearest-even result: ties (exact halfway values) and both signs included."""
    rng = np.random.default_rng(3)
    ulp16 = 2.0 ** -10 if dtype is np.float16 else 2.0 ** -7
    base = rng.uniform(-4, 4, 64).astype(np.float32)
    ties = np.array([1 + ulp16 / 2, -(1 + ulp16 / 2), 1 + 3 * ulp16 / 2, 2 + ulp16, -0.0, 0.0], np.float32)
    x = np.concatenate([base, ties, np.zeros(128 - 64 - len(ties), np.float32)]).reshape(4, 32)

    def vec(src, out):
        a = Tile(TileType.Vec, float32, 4, 32, addr=0)
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
