"""The catalogue's tile instructions beyond the basic element-wise set, run end to end on
a Vector core of both platforms (GM -> tile -> op -> GM) and compared with plain numpy:
integer / bitwise ops, remainders, activations, three-operand and fused forms, compare /
select through packed masks, column broadcasts, the row / column reduction families, the
arg-reductions and the part ops; and the dtype rule of each platform refusing a dtype."""
from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest

import ptopipe
import ptopipe.isa as isa
import ptopipe.language as pl
from ptopipe import KernelError
from ptopipe.errors import CompileError
from ptopipe.isa import *  # noqa: F403
from ptopipe.runtime import run as dsl_run

pytestmark = pytest.mark.usefixtures("no_hang")
PLATFORMS = ["a2a3", "a5"]
BF16 = ml_dtypes.bfloat16


def run_tiles(platform, call, ins, outs, valid=None):
    """Load each array of ``ins`` into a Vec tile, ``call(out_tiles, in_tiles)``, store every
    out tile (``outs``: (shape, dtype) each, or a 2-D array: its initial contents); returns
    the stored outputs.  ``valid`` maps an input index to its valid (rows, cols)."""
    valid = valid or {}
    outs = [o if isinstance(o, np.ndarray) else np.zeros(o[0], o[1]) for o in outs]
    args = {f"i{k}": a for k, a in enumerate(ins)}
    args.update({f"o{k}": o.copy() for k, o in enumerate(outs)})

    def kernel(**g):
        addr = [0]

        def tile(shape, dtype, vr=None, vc=None):
            t = Tile(TileType.Vec, dtype, *shape, addr=addr[0], valid_rows=vr, valid_cols=vc)
            addr[0] += -(-shape[0] * shape[1] * np.dtype(dtype).itemsize // 256) * 256
            return t
        tin = []
        for k, a in enumerate(ins):
            t = tile(a.shape, a.dtype)
            TLOAD(t, g[f"i{k}"])
            if k in valid:
                t = Tile(TileType.Vec, a.dtype, *a.shape, addr=t.addr, valid_rows=valid[k][0],
                         valid_cols=valid[k][1])
            tin.append(t)
        tout = []
        for k, o in enumerate(outs):
            t = tile(o.shape, o.dtype)
            TLOAD(t, g[f"o{k}"])
            tout.append(t)
        call(tout, tin)
        for k, t in enumerate(tout):
            TSTORE(g[f"o{k}"], t)
    res = ptopipe.run(aiv=(kernel, None), args=args, platform=platform)
    return [res[f"o{k}"] for k in range(len(outs))]


def rand(rng, dtype, shape=(8, 32), lo=-50, hi=50):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(lo, info.min), min(hi, info.max) + 1, shape).astype(dtype)
    return rng.uniform(lo, hi, shape).astype(dtype)


def close(got, want, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iub":
        np.testing.assert_array_equal(got, want)
    else:
        tol = {2: 1e-2, 4: 1e-6}[dtype.itemsize]
        np.testing.assert_allclose(got.astype(np.float64), np.asarray(want).astype(np.float64),
                                   rtol=tol, atol=tol)


def rejects(platform, call, ins, outs, *words, valid=None):
    """The instruction is refused at issue with a KernelError located in ``call``'s file."""
    with pytest.raises(KernelError) as ei:
        run_tiles(platform, call, ins, outs, valid)
    e = ei.value
    assert e.where and os.path.basename(call.__code__.co_filename) in e.where, e
    for w in words:
        assert w in str(e), (w, str(e))
    return e


# -- integer / bitwise ---------------------------------------------------------------------------
BITWISE = {"TAND": np.bitwise_and, "TOR": np.bitwise_or, "TXOR": np.bitwise_xor}


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", ["i32", "u8", "i16"])
def test_bitwise_binary_and_scalar_forms(platform, dtype):
    rng = np.random.default_rng(1)
    dt = np.dtype({"i32": np.int32, "u8": np.uint8, "i16": np.int16}[dtype])
    a, b = rand(rng, dt, lo=-1000, hi=1000), rand(rng, dt, lo=-1000, hi=1000)
    s = 0x5A
    for name, fn in BITWISE.items():
        ops = [getattr(isa, name), getattr(isa, name + "S")]

        def call(o, i):
            ops[0](o[0], i[0], i[1])
            ops[1](o[1], i[0], s)
        got = run_tiles(platform, call, [a, b], [(a.shape, dt)] * 2)
        np.testing.assert_array_equal(got[0], fn(a, b), err_msg=name)
        np.testing.assert_array_equal(got[1], fn(a, dt.type(s)), err_msg=name + "S")
    got = run_tiles(platform, lambda o, i: TNOT(o[0], i[0]), [a], [(a.shape, dt)])
    np.testing.assert_array_equal(got[0], np.invert(a))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_txor_takes_pto_isa_tmp_operand(platform):
    """TXOR(dst, src0, src1, tmp) / TXORS(dst, src, scalar, tmp), as pto-isa spells them."""
    rng = np.random.default_rng(2)
    a, b = rand(rng, np.int32, lo=0, hi=1 << 20), rand(rng, np.int32, lo=0, hi=1 << 20)

    def call(o, i):
        TXOR(o[0], i[0], i[1], o[2])
        TXORS(o[1], i[0], 77, o[2])
    got = run_tiles(platform, call, [a, b], [(a.shape, np.int32)] * 3)
    np.testing.assert_array_equal(got[0], a ^ b)
    np.testing.assert_array_equal(got[1], a ^ 77)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_shifts(platform):
    rng = np.random.default_rng(3)
    a = rand(rng, np.int32, lo=-(1 << 20), hi=1 << 20)
    sh = rng.integers(0, 12, a.shape).astype(np.int32)
    u = rand(rng, np.uint32, lo=0, hi=1 << 30)

    def call(o, i):
        TSHL(o[0], i[0], i[1])
        TSHR(o[1], i[0], i[1])
        TSHLS(o[2], i[2], 3)
        TSHRS(o[3], i[2], 5)
    got = run_tiles(platform, call, [a, sh, u], [(a.shape, np.int32)] * 2 + [(a.shape, np.uint32)] * 2)
    np.testing.assert_array_equal(got[0], a << sh)
    np.testing.assert_array_equal(got[1], a >> sh)          # arithmetic for signed tiles
    np.testing.assert_array_equal(got[2], u << np.uint32(3))
    np.testing.assert_array_equal(got[3], u >> np.uint32(5))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_shift_scalar_rule_and_platform_dtypes(platform):
    a = np.arange(8 * 32, dtype=np.int32).reshape(8, 32)
    rejects(platform, lambda o, i: TSHLS(o[0], i[0], -1), [a], [(a.shape, np.int32)],
            "TSHLS", "negative")
    b = a.astype(np.int8)
    call = lambda o, i: TSHLS(o[0], i[0], 1)   # noqa: E731
    if platform == "a2a3":                     # pto-isa: TSHLS takes i8 on A5 only
        rejects(platform, call, [b], [(b.shape, np.int8)], "TSHLS takes", "A5 takes int8")
    else:
        np.testing.assert_array_equal(run_tiles(platform, call, [b], [(b.shape, np.int8)])[0], b << 1)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", ["TAND", "TNOT", "TORS"])
def test_bitwise_ops_refuse_float_tiles(platform, name):
    a = np.ones((8, 32), np.float32)
    fn = getattr(isa, name)
    call = {"TAND": lambda o, i: fn(o[0], i[0], i[0]), "TNOT": lambda o, i: fn(o[0], i[0]),
            "TORS": lambda o, i: fn(o[0], i[0], 1.0)}[name]
    rejects(platform, call, [a], [(a.shape, np.float32)], f"{name} takes", "not float32")


# -- remainders ----------------------------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_remainders_follow_divisor_or_dividend_sign(platform, dtype):
    rng = np.random.default_rng(4)
    a = rand(rng, dtype, lo=-40, hi=40)
    b = rand(rng, dtype, lo=1, hi=9) * np.where(rng.random(a.shape) < 0.5, -1, 1).astype(dtype)
    s = -7
    w = np.float64
    cases = {  # name: (call, golden, platforms taking the dtype)
        "TREM": (lambda o, i: TREM(o[0], i[0], i[1]), np.remainder(a.astype(w), b.astype(w)),
                 {np.float32: PLATFORMS, np.int32: PLATFORMS, np.float16: ["a5"]}),
        "TREMS": (lambda o, i: TREMS(o[0], i[0], s), np.remainder(a.astype(w), s),
                  {np.float32: PLATFORMS, np.int32: PLATFORMS, np.float16: ["a5"]}),
        "TFMOD": (lambda o, i: TFMOD(o[0], i[0], i[1]), np.fmod(a.astype(w), b.astype(w)),
                  {np.float32: PLATFORMS, np.int32: ["a5"], np.float16: ["a5"]}),
        "TFMODS": (lambda o, i: TFMODS(o[0], i[0], s), np.fmod(a.astype(w), s),
                   {np.float32: PLATFORMS, np.int32: ["a5"], np.float16: ["a5"]}),
    }
    for name, (call, want, takes) in cases.items():
        if platform in takes[dtype]:
            got = run_tiles(platform, call, [a, b], [(a.shape, dtype)])[0]
            close(got, want.astype(dtype), dtype)
        else:
            rejects(platform, call, [a, b], [(a.shape, dtype)], f"{name} takes")


def test_integer_remainder_by_zero_is_reported_with_its_fix():
    a = np.full((8, 32), 5, np.int32)
    b = np.ones((8, 32), np.int32)
    b[3, 4] = 0
    with pytest.raises(KernelError) as ei:
        run_tiles("a2a3", lambda o, i: TREM(o[0], i[0], i[1]), [a, b], [(a.shape, np.int32)])
    e = ei.value
    assert "TREM / TREMS" in e.what and "division by zero" in e.what and "non-zero" in e.fix, e


# -- activations, three-operand and fused forms -----------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_prelu_and_leaky_relu(platform, dtype):
    rng = np.random.default_rng(5)
    a, slope = rand(rng, dtype, lo=-4, hi=4), rand(rng, dtype, lo=0, hi=1)

    def call(o, i):
        TPRELU(o[0], i[0], i[1], o[2])         # with pto-isa's tmp operand
        TLRELU(o[1], i[0], 0.125)
    got = run_tiles(platform, call, [a, slope], [(a.shape, dtype), (a.shape, dtype), (a.shape, np.uint8)])
    close(got[0], np.where(a > 0, a, a * slope), dtype)
    close(got[1], np.where(a > 0, a, a * dtype(0.125)), dtype)
    i = a.astype(np.int32)
    rejects(platform, lambda o, i: TLRELU(o[0], i[0], 1), [i], [(i.shape, np.int32)], "TLRELU takes")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_three_operand_forms(platform, dtype):
    rng = np.random.default_rng(6)
    a, b, c = (rand(rng, dtype) for _ in range(3))

    def call(o, i):
        TADDC(o[0], i[0], i[1], i[2])
        TSUBC(o[1], i[0], i[1], i[2])
        TADDSC(o[2], i[0], 3, i[1])
        TSUBSC(o[3], i[0], 3, i[1])
    got = run_tiles(platform, call, [a, b, c], [(a.shape, dtype)] * 4)
    three = dtype(3)
    for g, want in zip(got, [(a + b) + c, (a - b) + c, (a + three) + b, (a - three) + b]):
        close(g, want, dtype)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_taddsc_refuses_what_pto_isa_refuses(platform):
    a = np.ones((8, 32), np.uint8)
    rejects(platform, lambda o, i: TADDSC(o[0], i[0], 1, i[0]), [a], [(a.shape, np.uint8)],
            "TADDSC takes")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dst,src", [(np.float32, np.float32), (np.float16, np.float16),
                                     (np.float32, np.float16)])
def test_axpy_accumulates_in_place(platform, dst, src):
    rng = np.random.default_rng(7)
    x, y = rand(rng, src, lo=-2, hi=2), rand(rng, dst, lo=-2, hi=2)
    got = run_tiles(platform, lambda o, i: TAXPY(o[0], i[0], 1.5), [x], [y])[0]
    close(got, src(1.5).astype(dst) * x.astype(dst) + y, dst)


def test_axpy_refuses_f32_into_f16():
    x, y = np.ones((8, 32), np.float32), np.ones((8, 32), np.float16)
    rejects("a5", lambda o, i: TAXPY(o[0], i[0], 1.0), [x], [y], "TAXPY", "f16 into f32")


# -- compare and select --------------------------------------------------------------------------
def packed(p, dtype):
    """numpy's packing of predicate ``p`` into ``dtype`` words, least significant bit first."""
    bits = 8 * np.dtype(dtype).itemsize
    words = -(-p.shape[1] // bits)
    out = np.zeros((p.shape[0], words), np.uint64)
    for j in range(p.shape[1]):
        out[:, j // bits] |= p[:, j].astype(np.uint64) << np.uint64(j % bits)
    return out.astype(dtype)


CMP = {CmpMode.EQ: np.equal, CmpMode.NE: np.not_equal, CmpMode.LT: np.less,
       CmpMode.LE: np.less_equal, CmpMode.GT: np.greater, CmpMode.GE: np.greater_equal}


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype,mask", [(np.float32, np.uint8), (np.float16, np.uint32)])
def test_compare_packs_one_bit_per_element(platform, dtype, mask):
    rng = np.random.default_rng(8)
    a = rand(rng, dtype, (8, 40), lo=-3, hi=3).round()      # ties, so EQ / LE / GE matter
    b = rand(rng, dtype, (8, 40), lo=-3, hi=3).round()
    words = -(-40 // (8 * np.dtype(mask).itemsize))
    for mode, fn in CMP.items():
        def call(o, i):
            TCMP(o[0], i[0], i[1], mode)
            TCMPS(o[1], i[0], 1.0, mode=mode)
            TCMPS(o[2], i[0], i[1], mode)            # the tile form: src1[0, 0]
        got = run_tiles(platform, call, [a, b], [((8, 32), mask)] * 3)
        for g, want in zip(got, [fn(a, b), fn(a, dtype(1)), fn(a, b[0, 0])]):
            np.testing.assert_array_equal(g[:, :words], packed(want, mask), err_msg=mode.name)
            assert not g[:, words:].any()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_int32_compare_modes_per_platform(platform):
    """pto-isa on A2A3 compares int32 with EQ, and NE as EQ's mask inverted: the ordering modes
    are refused there."""
    a = np.arange(8 * 32, dtype=np.int32).reshape(8, 32) % 7
    b = np.full_like(a, 3)
    eq = run_tiles(platform, lambda o, i: TCMP(o[0], i[0], i[1], CmpMode.EQ), [a, b], [((8, 32), np.uint8)])
    np.testing.assert_array_equal(eq[0][:, :4], packed(a == b, np.uint8))
    ne = run_tiles(platform, lambda o, i: TCMP(o[0], i[0], i[1], CmpMode.NE), [a, b], [((8, 32), np.uint8)])
    np.testing.assert_array_equal(ne[0][:, :4], packed(a != b, np.uint8))
    nes = run_tiles(platform, lambda o, i: TCMPS(o[0], i[0], 3, CmpMode.NE), [a], [((8, 32), np.uint8)])
    np.testing.assert_array_equal(nes[0][:, :4], packed(a != 3, np.uint8))
    lt = lambda o, i: TCMP(o[0], i[0], i[1], "lt")   # noqa: E731  (a mode by name)
    if platform == "a2a3":
        rejects(platform, lt, [a, b], [((8, 32), np.uint8)], "EQ / NE only")
    else:
        got = run_tiles(platform, lt, [a, b], [((8, 32), np.uint8)])
        np.testing.assert_array_equal(got[0][:, :4], packed(a < b, np.uint8))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_int16_compare_scalar_per_platform(platform):
    """pto-isa's A2A3 TCMPS compares an int16 source and scalar as the half floats of their bits
    (a2a3/TCmps.hpp GenCmpCall): -3 is 0xFFFD, a NaN, so GT is false everywhere and NE true,
    and negatives order by magnitude backwards; A5 compares the integers."""
    a = (np.arange(8 * 32, dtype=np.int16).reshape(8, 32) % 11 - 5) * 700
    for mode, scalar in ((CmpMode.GT, -3), (CmpMode.NE, -3), (CmpMode.LT, -1400), (CmpMode.GE, 2100)):
        got = run_tiles(platform, lambda o, i: TCMPS(o[0], i[0], scalar, mode), [a], [((8, 32), np.uint8)])
        if platform == "a2a3":
            h = a.view(np.float16)
            with np.errstate(invalid="ignore"):
                want = CMP[mode](h, np.array(scalar, np.int16).view(np.float16))
        else:
            want = CMP[mode](a, np.int16(scalar))
        np.testing.assert_array_equal(got[0][:, :4], packed(want, np.uint8), err_msg=mode.name)
        if platform == "a2a3" and mode is CmpMode.GT:
            assert not got[0].any()                     # every compare with a NaN is false


def test_uint16_compare_scalar_on_a2a3_is_of_half_bits_and_fillpad_takes_uint16():
    """A2A3's TCMPS takes uint16 too, compared as the half floats of its bits as int16 is
    (a2a3/TCmps.hpp); TFILLPAD takes any 1-, 2- or 4-byte element, uint16's Max its 65535."""
    a = (np.arange(8 * 32, dtype=np.uint16).reshape(8, 32) * 257)
    got = run_tiles("a2a3", lambda o, i: TCMPS(o[0], i[0], 15000, CmpMode.LT), [a], [((8, 32), np.uint8)])
    with np.errstate(invalid="ignore"):
        want = a.view(np.float16) < np.array(15000, np.uint16).view(np.float16)
    np.testing.assert_array_equal(got[0][:, :4], packed(want, np.uint8))

    def pad(o, i):
        part = Tile(TileType.Vec, np.uint16, 8, 32, valid_cols=7, addr=i[0].addr)
        TFILLPAD(o[0], part, PadValue.Max)
    out = run_tiles("a2a3", pad, [a], [((8, 32), np.uint16)])[0]
    np.testing.assert_array_equal(out[:, :7], a[:, :7])
    assert (out[:, 7:] == 65535).all()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_compare_checks_its_mask_and_mode(platform):
    a = np.zeros((8, 32), np.float32)
    rejects(platform, lambda o, i: TCMP(o[0], i[0], i[0]), [a], [((8, 32), np.float32)],
            "predicate masks are 8- or 32-bit words")
    rejects(platform, lambda o, i: TCMP(o[0], i[0], i[0]), [a], [((4, 32), np.uint8)], "8x4")
    rejects(platform, lambda o, i: TCMP(o[0], i[0], i[0], "approx"), [a], [((8, 32), np.uint8)],
            "not a compare mode")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype,mask", [(np.float32, np.uint8), (BF16, np.uint8), (np.int32, np.uint32)])
def test_select_by_mask(platform, dtype, mask):
    rng = np.random.default_rng(9)
    a, b = rand(rng, dtype, (8, 40)), rand(rng, dtype, (8, 40))
    p = rng.random((8, 40)) < 0.5
    m = np.zeros((8, 32), mask)
    m[:, :packed(p, mask).shape[1]] = packed(p, mask)
    tmp = ((1, 64), np.uint32)

    # each dst row reads its own mask row (the NPU's layout; pto-isa's CPU simulator would read
    # row 1 from bytes 5.. of mask row 0, one bit stream over the 32 valid bytes)
    sel = lambda o, i: TSEL(o[0], i[2], i[0], i[1], o[1])   # noqa: E731
    if mask is np.uint32 and platform == "a5":   # A5's TSEL steps mask rows in bytes, not words
        rejects(platform, sel, [a, b, m], [(a.shape, dtype), tmp], "uint32 with 8 rows", "a5/TSel.hpp:45",
                "declare the mask tile uint8")
    else:
        got = run_tiles(platform, sel, [a, b, m], [(a.shape, dtype), tmp])
        close(got[0], np.where(p, a, b), dtype)
    sels = lambda o, i: TSELS(o[0], i[1], i[0], o[1], 7)   # noqa: E731  (tmp, then the scalar)
    if dtype is BF16 and platform == "a5":      # pto-isa's A5 TSELS takes no bf16
        rejects(platform, sels, [a, m], [(a.shape, dtype), tmp], "TSELS takes", "A2A3 takes bfloat16")
    else:
        got = run_tiles(platform, sels, [a, m], [(a.shape, dtype), tmp])
        close(got[0], np.where(p, a, dtype(7)), dtype)


def test_a5_compares_and_selects_take_uint16_and_uint64():
    """pto-isa's A5 TCMP / TCMPS / TSELS take every integer width (a5/TCmp.hpp:138,
    a5/TCmps.hpp:231, a5/TSels.hpp:124) - uint16 and uint64 too, which pto-isa's own tcmp /
    tcmps / tsels tests run; A2A3's TCMP takes int32 and floats only."""
    rng = np.random.default_rng(12)
    for dtype in (np.uint16, np.uint64):
        a = rng.integers(0, 6, (8, 32)).astype(dtype)
        b = rng.integers(0, 6, (8, 32)).astype(dtype)
        got = run_tiles("a5", lambda o, i: (TCMP(o[0], i[0], i[1], CmpMode.LE), TCMPS(o[1], i[0], 3, CmpMode.GT)),
                        [a, b], [((8, 32), np.uint8)] * 2)
        np.testing.assert_array_equal(got[0][:, :4], packed(a <= b, np.uint8))
        np.testing.assert_array_equal(got[1][:, :4], packed(a > 3, np.uint8))
        p = rng.random((8, 32)) < 0.5
        m = np.zeros((8, 32), np.uint8)
        m[:, :4] = packed(p, np.uint8)
        got = run_tiles("a5", lambda o, i: TSELS(o[0], i[1], i[0], o[1], 7), [a, m], [(a.shape, dtype), ((1, 64), np.uint32)])
        np.testing.assert_array_equal(got[0], np.where(p, a, dtype(7)))
    a = np.ones((8, 32), np.uint16)
    rejects("a2a3", lambda o, i: TCMP(o[0], i[0], i[0], CmpMode.EQ), [a], [((8, 32), np.uint8)], "TCMP takes")


def test_a5_tsel_of_1_byte_data_is_refused_past_256_columns():
    rng = np.random.default_rng(11)
    a = rng.integers(0, 100, (2, 512)).astype(np.int8)
    m = np.zeros((2, 64), np.uint8)
    sel = lambda o, i: TSEL(o[0], i[1], i[0], i[0])   # noqa: E731
    rejects("a5", sel, [a, m], [(a.shape, np.int8)], "512 columns of 1-byte data", "a5/TSel.hpp:108")
    got = run_tiles("a5", sel, [a[:, :256], m[:, :32]], [((2, 256), np.int8)])
    np.testing.assert_array_equal(got[0], a[:, :256])


@pytest.mark.parametrize("platform", PLATFORMS)
def test_compare_then_select_is_where(platform):
    rng = np.random.default_rng(10)
    a, b = rand(rng, np.float16, (8, 48)), rand(rng, np.float16, (8, 48))

    def call(o, i):
        TCMP(o[1], i[0], i[1], CmpMode.GT)
        TSEL(o[0], o[1], i[0], i[1])             # max through a mask
    got = run_tiles(platform, call, [a, b], [(a.shape, np.float16), ((8, 32), np.uint8)])
    np.testing.assert_array_equal(got[0], np.maximum(a, b))


# -- column broadcasts and the row / column families ---------------------------------------------
COLX = {"TCOLEXPANDADD": np.add, "TCOLEXPANDSUB": np.subtract, "TCOLEXPANDMUL": np.multiply,
        "TCOLEXPANDMAX": np.maximum, "TCOLEXPANDMIN": np.minimum}


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
def test_column_expand_family(platform, dtype):
    rng = np.random.default_rng(11)
    a = rand(rng, dtype, (8, 32))
    c = rand(rng, dtype, (2, 32), lo=1, hi=9)                # row 0 is the per-column operand
    for name, fn in COLX.items():
        got = run_tiles(platform, lambda o, i: getattr(isa, name)(o[0], i[0], i[1]), [a, c],
                        [(a.shape, dtype)])[0]
        close(got, fn(a, c[:1]), dtype)
    got = run_tiles(platform, lambda o, i: TCOLEXPAND(o[0], i[1]), [a, c], [(a.shape, dtype)])[0]
    close(got, np.broadcast_to(c[:1], a.shape), dtype)
    div = lambda o, i: TCOLEXPANDDIV(o[0], i[0], i[1])     # noqa: E731
    if dtype == np.int32 and platform == "a2a3":
        rejects(platform, div, [a, c], [(a.shape, dtype)], "TCOLEXPANDDIV takes")
    else:
        want = np.trunc(a / c[:1].astype(np.float64)) if dtype == np.int32 else a / c[:1]
        close(run_tiles(platform, div, [a, c], [(a.shape, dtype)])[0], want.astype(dtype), dtype)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float16, np.int32])
def test_row_expand_max_min(platform, dtype):
    """pto-isa's two per-row operands (docs/isa/TROWEXPANDADD.md): a 32-byte block per row that
    repeats along it (mode 2, RowMajor), and one value per row (mode 1); either operand."""
    rng = np.random.default_rng(12)
    block = 32 // np.dtype(dtype).itemsize
    a, r, s = rand(rng, dtype, (8, 32)), rand(rng, dtype, (8, block)), rand(rng, dtype, (8, 1))

    def call(o, i):
        TROWEXPANDMAX(o[0], i[0], i[1])
        TROWEXPANDMIN(o[1], i[0], i[1])
        TROWEXPANDMAX(o[2], i[2], i[0])            # the per-row operand first
    got = run_tiles(platform, call, [a, r, s], [(a.shape, dtype)] * 3)
    repeated = np.tile(r, (1, 32 // block))
    close(got[0], np.maximum(a, repeated), dtype)
    close(got[1], np.minimum(a, repeated), dtype)
    close(got[2], np.maximum(s, a), dtype)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int16])
def test_min_and_product_reductions(platform, dtype):
    rng = np.random.default_rng(13)
    a = rng.choice(np.array([-2, -1, 1, 2], dtype), (8, 16)).astype(dtype)
    if dtype == np.float16:
        a = (a * rng.uniform(0.9, 1.1, a.shape)).astype(dtype)

    def call(o, i):
        TCOLMIN(o[0], i[0])
        TROWPROD(o[1], i[0], o[3])               # with pto-isa's tmp operand
        TCOLPROD(o[2], i[0])
    got = run_tiles(platform, call, [a], [((1, 16), dtype), ((8, 16), dtype), ((1, 16), dtype),
                                          (a.shape, dtype)])
    close(got[0][0], a.min(axis=0), dtype)
    close(got[1][:, 0], np.multiply.reduce(a, axis=1, dtype=dtype), dtype)
    close(got[2][0], np.multiply.reduce(a, axis=0, dtype=dtype), dtype)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_arg_reductions(platform, dtype):
    rng = np.random.default_rng(14)
    a = rand(rng, dtype, (8, 32))
    r8, c32 = ((8, 8), np.int32), ((1, 32), np.int32)
    cidx = np.int16 if np.dtype(dtype).itemsize == 2 else np.int32

    def call(o, i):
        TROWARGMAX(o[0], i[0], o[6])
        TROWARGMIN(o[1], o[2], i[0], o[6])        # value and index
        TCOLARGMAX(o[3], i[0], o[6])
        TCOLARGMIN(o[4], o[5], i[0], o[6])
    got = run_tiles(platform, call, [a], [r8, ((8, 16), dtype), r8, c32, ((1, 32), dtype),
                                          ((1, 32), cidx), (a.shape, dtype)])
    np.testing.assert_array_equal(got[0][:, 0], a.argmax(axis=1))
    np.testing.assert_array_equal(got[2][:, 0], a.argmin(axis=1))
    close(got[1][:, 0], a.min(axis=1), dtype)
    np.testing.assert_array_equal(got[3][0], a.argmax(axis=0))
    np.testing.assert_array_equal(got[5][0], a.argmin(axis=0))
    close(got[4][0], a.min(axis=0), dtype)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_arg_reduction_index_dtype(platform):
    a = np.zeros((8, 32), np.float32)
    rejects(platform, lambda o, i: TROWARGMAX(o[0], i[0]), [a], [((8, 8), np.float32)],
            "indices are int32 or uint32")


# -- part ops --------------------------------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_part_ops_cover_the_union_of_valid_regions(platform, dtype):
    rng = np.random.default_rng(15)
    a, b = rand(rng, dtype, (8, 32)), rand(rng, dtype, (8, 32))
    ops = {"TPARTADD": np.add, "TPARTMUL": np.multiply, "TPARTMAX": np.maximum, "TPARTMIN": np.minimum}
    for name, fn in ops.items():
        for part in (0, 1):                      # either source may be the partial one
            got = run_tiles(platform, lambda o, i: getattr(isa, name)(o[0], i[0], i[1]), [a, b],
                            [(a.shape, dtype)], valid={part: (5, 20)})[0]
            want = (b if part == 0 else a).copy()
            want[:5, :20] = fn(a[:5, :20], b[:5, :20])
            close(got, want, dtype)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_part_op_needs_one_source_covering_dst(platform):
    a = np.ones((8, 32), np.float32)

    def call(o, i):
        s0 = Tile(TileType.Vec, np.float32, 8, 32, addr=i[0].addr, valid_rows=4, valid_cols=32)
        s1 = Tile(TileType.Vec, np.float32, 8, 32, addr=i[0].addr, valid_rows=8, valid_cols=16)
        TPARTADD(o[0], s0, s1)
    rejects(platform, call, [a], [(a.shape, np.float32)], "cover dst exactly")


# -- GEMV (Cube) -------------------------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype,acc", [(np.float16, np.float32), (np.int8, np.int32)])
def test_gemv_family(platform, dtype, acc):
    rng = np.random.default_rng(16)
    a = rng.integers(-4, 4, (1, 32)).astype(dtype)
    b = rng.integers(-4, 4, (32, 16)).astype(dtype)
    c0 = rng.integers(-9, 9, (1, 16)).astype(acc)

    def k(a, b, c0, out, out_acc, out_bias):
        a1 = Tile(TileType.Mat, dtype, 16, 32, addr=0x0, valid_rows=1)
        b1 = Tile(TileType.Mat, dtype, 32, 16, addr=0x800)
        c1 = Tile(TileType.Mat, acc, 1, 16, addr=0x1000)         # a Bias tile's shape (TMovToBt)
        a0 = Tile(TileType.Left, dtype, 16, 32, addr=0x0, valid_rows=1)
        b0 = Tile(TileType.Right, dtype, 32, 16, addr=0x0)
        bias = Tile(TileType.Bias, acc, 1, 16, addr=0x0)
        c = Tile(TileType.Acc, acc, 16, 16, addr=0x0, valid_rows=1)
        ci = Tile(TileType.Acc, acc, 16, 16, addr=0x400, valid_rows=1)
        TLOAD(a1, a)
        TLOAD(b1, b)
        TLOAD(c1, c0)
        TMOV(a0, a1)
        TMOV(b0, b1)
        TMOV(bias, c1)
        TGEMV(c, a0, b0)
        TSTORE(out, c)
        TGEMV_BIAS(ci, a0, b0, bias)
        TSTORE(out_bias, ci)
        TGEMV_ACC(ci, c, a0, b0)                     # c + a @ b
        TSTORE(out_acc, ci)
    z = np.zeros((1, 16), acc)
    res = ptopipe.run(aic=k, platform=platform, args=dict(a=a, b=b, c0=c0, out=z, out_acc=z.copy(),
                                                          out_bias=z.copy()))
    prod = a.astype(acc) @ b.astype(acc)
    np.testing.assert_array_equal(res["out"], prod)
    np.testing.assert_array_equal(res["out_acc"], 2 * prod)
    np.testing.assert_array_equal(res["out_bias"], prod + c0)


@pytest.mark.parametrize("platform,src", [("a2a3", np.float16), ("a5", np.float16), ("a5", bfloat16),
                                          ("a2a3", np.float32)])
def test_mat_to_bias_moves_the_whole_row_and_converts_as_tmovtobt(platform, src):
    """TMOV Mat -> Bias copies the whole static row in one burst (pto-isa's TMovToBt): valid
    regions may differ, a half (A5: also bfloat16) source becomes float."""
    rng = np.random.default_rng(5)
    a = rng.integers(-4, 4, (16, 32)).astype(np.float16)
    b = rng.integers(-4, 4, (32, 32)).astype(np.float16)
    c0 = rng.integers(-9, 9, (1, 32)).astype(src)

    def k(a, b, c0, out):
        a1 = Tile(TileType.Mat, float16, 16, 32, addr=0x0)
        b1 = Tile(TileType.Mat, float16, 32, 32, addr=0x800)
        c1 = Tile(TileType.Mat, src, 1, 32, addr=0x1000, valid_cols=6)    # a 6-column view of the row
        a0 = Tile(TileType.Left, float16, 16, 32, addr=0x0)
        b0 = Tile(TileType.Right, float16, 32, 32, addr=0x0)
        bias = Tile(TileType.Bias, float32, 1, 32, addr=0x0)
        c = Tile(TileType.Acc, float32, 16, 32, addr=0x0)
        TLOAD(a1, a)
        TLOAD(b1, b)
        TLOAD(Tile(TileType.Mat, src, 1, 32, addr=0x1000), c0)
        TMOV(a0, a1)
        TMOV(b0, b1)
        TMOV(bias, c1)
        TMATMUL_BIAS(c, a0, b0, bias)
        TSTORE(out, c)
    res = ptopipe.run(aic=k, platform=platform, args=dict(a=a, b=b, c0=c0, out=np.zeros((16, 32), np.float32)))
    want = a.astype(np.float32) @ b.astype(np.float32) + c0.astype(np.float32)
    np.testing.assert_array_equal(res["out"], want)


def test_matmul_bias_reads_the_results_columns_of_the_bias_row():
    """TMATMUL_BIAS adds the bias table's first n entries for a result of n columns, whatever
    the Bias tile's valid region (the Cube reads the table at its address)."""
    rng = np.random.default_rng(6)
    a = rng.integers(-4, 4, (16, 32)).astype(np.float32)
    b = rng.integers(-4, 4, (32, 16)).astype(np.float32)
    c0 = rng.integers(-9, 9, (1, 32)).astype(np.float32)

    def k(a, b, c0, out, n):
        b1 = Tile(TileType.Mat, float32, 32, 16, addr=0x800)
        c1 = Tile(TileType.Mat, float32, 1, 32, addr=0x1000)
        a0 = Tile(TileType.Left, float32, 16, 32, addr=0x0)
        b0 = Tile(TileType.Right, float32, 32, 16, addr=0x0, valid_cols=n)
        bias = Tile(TileType.Bias, float32, 1, 32, addr=0x0)
        c = Tile(TileType.Acc, float32, 16, 16, addr=0x0, valid_cols=n)
        TLOAD(Tile(TileType.Mat, float32, 16, 32, addr=0x0), a)
        TMOV(a0, Tile(TileType.Mat, float32, 16, 32, addr=0x0))
        TLOAD(b1, b)
        TLOAD(c1, c0)
        TMOV(b0, Tile(TileType.Mat, float32, 32, 16, addr=0x800, valid_cols=n))
        TMOV(bias, c1)
        TMATMUL_BIAS(c, a0, b0, bias)
        TSTORE(GlobalTensor(out.data(), (16, n), (16, 1)), c)
    res = ptopipe.run(aic=k, args=dict(a=a, b=b, c0=c0, out=np.zeros((16, 16), np.float32), n=6))
    np.testing.assert_array_equal(res["out"][:, :6], (a @ b + c0[:, :16])[:, :6])


# 1 + 2^-12 and 1 + 2^-11: a tie between A2A3's TF32 neighbours (11 mantissa bits) and one exact
# there; on A5 (10 bits) the first is below half an ulp, the second a tie
TF32_A = np.float32([1 + 2 ** -12, 1 + 2 ** -11])
TF32_WANT = {("a2a3", "CAST_RINT"): [1, 1 + 2 ** -11], ("a2a3", "CAST_ROUND"): [1 + 2 ** -11, 1 + 2 ** -11],
             ("a5", "CAST_RINT"): [1, 1], ("a5", "CAST_ROUND"): [1, 1 + 2 ** -10]}


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", ["CAST_RINT", "CAST_ROUND"])
def test_the_tf32_mode_rounds_float32_matmul_operands_until_it_is_reset(platform, mode):
    """pto-isa's ``SetMadTF32Mode`` (tmatmul's TF32 tests): float32 matmuls read their operands
    rounded to TF32 - 11 mantissa bits on A2A3, 10 on A5 - ties to even (CAST_RINT) or away
    (CAST_ROUND); the tiles keep their values, and after ``ResetMadMode`` a matmul reads them
    whole again."""
    a = np.zeros((16, 16), np.float32)
    a[:2, 0] = TF32_A
    b = np.zeros((16, 16), np.float32)
    b[0, 0] = 1

    def k(a, b, tf, whole):
        a1, b1 = Tile(TileType.Mat, float32, 16, 16, addr=0x0), Tile(TileType.Mat, float32, 16, 16, addr=0x800)
        a0, b0 = Tile(TileType.Left, float32, 16, 16, addr=0x0), Tile(TileType.Right, float32, 16, 16, addr=0x0)
        c = Tile(TileType.Acc, float32, 16, 16, addr=0x0)
        TLOAD(a1, a)
        TLOAD(b1, b)
        TMOV(a0, a1)
        TMOV(b0, b1)
        a0.SetMadTF32Mode(RoundMode[mode])
        TMATMUL(c, a0, b0)
        TSTORE(tf, c)
        a0.ResetMadMode()
        TMATMUL(c, a0, b0)
        TSTORE(whole, c)
    res = ptopipe.run(aic=k, platform=platform, args=dict(a=a, b=b, tf=np.zeros((16, 16), np.float32),
                                                          whole=np.zeros((16, 16), np.float32)))
    np.testing.assert_array_equal(res["tf"][:2, 0], np.float32(TF32_WANT[platform, mode]))
    np.testing.assert_array_equal(res["whole"], a @ b)


def test_the_tf32_mode_takes_two_roundings_on_the_cube_only():
    """pto-isa asserts the TF32 rounding is CAST_ROUND or CAST_RINT, and declares the mode in
    the Cube's build only: another mode, or a Vector core setting it, is a KernelError at the line."""
    def cube():
        Tile(TileType.Left, float32, 16, 16, addr=0x0).SetMadTF32Mode(RoundMode.CAST_FLOOR)

    def vec():
        Tile(TileType.Vec, float32, 16, 16, addr=0x0).ResetMadMode()
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aic=cube)
    assert ei.value.what.startswith("SetMadTF32Mode(<RoundMode.CAST_FLOOR") and "CAST_RINT only" in ei.value.what
    assert ei.value.where.endswith(f"test_catalogue_ops.py:{cube.__code__.co_firstlineno + 1}")
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aiv=vec)
    assert ei.value.what.startswith("ResetMadMode on AIV0: the TF32 matmul mode is the Cube's"), ei.value.what
    assert ei.value.where.endswith(f"test_catalogue_ops.py:{vec.__code__.co_firstlineno + 1}")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_mat_to_l0_moves_the_destinations_valid_block(platform):
    """An L1 -> L0A / L0B TMOV into a tile of the source's static shape with a smaller valid
    region (a matmul on the first k of a K-padded L1 tile, as pto-isa's textract tests do) moves
    the source's top-left block of that shape; a destination valid beyond the source's is
    refused."""
    rng = np.random.default_rng(8)
    a = rng.integers(-4, 4, (16, 32)).astype(np.float32)
    b = rng.integers(-4, 4, (32, 16)).astype(np.float32)

    def k(a, b, out, kk):
        a1 = Tile(TileType.Mat, float32, 16, 32, addr=0x0)
        b1 = Tile(TileType.Mat, float32, 32, 16, addr=0x800)
        a0 = Tile(TileType.Left, float32, 16, 32, addr=0x0, valid_cols=kk)
        b0 = Tile(TileType.Right, float32, 32, 16, addr=0x0, valid_rows=kk)
        c = Tile(TileType.Acc, float32, 16, 16, addr=0x0)
        TLOAD(a1, a)
        TLOAD(b1, b)
        TMOV(a0, a1)
        TMOV(b0, b1)
        TMATMUL(c, a0, b0)
        TSTORE(out, c)
    res = ptopipe.run(aic=k, platform=platform, args=dict(a=a, b=b, out=np.zeros((16, 16), np.float32), kk=8))
    np.testing.assert_array_equal(res["out"], a[:, :8] @ b[:8])

    def wider():
        TMOV(Tile(TileType.Left, float32, 16, 32, addr=0x0),
             Tile(TileType.Mat, float32, 16, 32, addr=0x0, valid_cols=8))
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aic=wider, platform=platform)
    assert ei.value.what == "TMOV: operand shapes differ (dst 16x32, src 16x8)", ei.value.what


@pytest.mark.parametrize("platform,src,rows,says", [
    ("a2a3", bfloat16, 1, "TMOV: a bfloat16 Mat tile does not move into a float32 Bias tile on a2a3"),
    ("a5", np.float32, 2, "TMOV: the static shapes differ (dst 1x32, src 2x32)"),
])
def test_mat_to_bias_refuses_what_tmovtobt_asserts(platform, src, rows, says):
    def k():
        TMOV(Tile(TileType.Bias, float32, 1, 32, addr=0x0), Tile(TileType.Mat, src, rows, 32, addr=0x0))
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aic=k, platform=platform)
    assert ei.value.what.startswith(says), ei.value.what


def test_gemv_takes_one_row():
    def k():
        a0 = Tile(TileType.Left, float16, 16, 32, addr=0x0, valid_rows=2)
        b0 = Tile(TileType.Right, float16, 32, 16, addr=0x0)
        c = Tile(TileType.Acc, float32, 16, 16, addr=0x0, valid_rows=2)
        TGEMV(c, a0, b0)
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aic=k)
    assert "m = 2" in ei.value.what and "TMATMUL" in ei.value.fix


# -- the pl DSL: the ops of the derived forms run through the IR interpreter ---------------------
def _dsl_program():
    @pl.aic
    def cube(x: pl.Tensor[[16, 32], pl.i32]):
        pass

    @pl.aiv
    def vec(x: pl.Tensor[[16, 32], pl.i32], z: pl.Tensor[[16, 32], pl.i32],
            y: pl.Tensor[[16, 32], pl.i32], w: pl.Tensor[[16, 32], pl.i32], v: pl.Tensor[[16, 1], pl.i32]):
        if pl.get_subblockid() == 0:
            a = pl.load(x, [0, 0], [16, 32])
            b = pl.load(z, [0, 0], [16, 32])
            c = pl.xor(pl.and_(a, b), pl.shls(a, 2))
            d = pl.addc(c, a, b)
            e = pl.col_expand_max(d, pl.col_min(a))
            pl.store(pl.rems(e, 7), [0, 0], y)
            pl.store(pl.not_(pl.subsc(a, 3, b)), [0, 0], w)
            pl.store(pl.row_prod(pl.ands(a, 3)), [0, 0], v)
    return pl.program(cube, vec, name="int_ops")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_dsl_runs_the_catalogue_ops_of_derived_forms(platform):
    rng = np.random.default_rng(17)
    x, z = (rng.integers(-100, 100, (16, 32)).astype(np.int32) for _ in range(2))
    res = dsl_run(_dsl_program(), dict(x=x, z=z, y=np.zeros_like(x), w=np.zeros_like(x),
                                       v=np.zeros((16, 1), np.int32)), platform=platform)
    d = ((x & z) ^ (x << 2)) + x + z
    np.testing.assert_array_equal(res["y"], np.remainder(np.maximum(d, x.min(axis=0)), 7))
    np.testing.assert_array_equal(res["w"], ~((x - 3) + z))
    np.testing.assert_array_equal(res["v"][:, 0], np.multiply.reduce(x & 3, axis=1, dtype=np.int32))


def test_dsl_refuses_a_dtype_the_op_refuses():
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def vec(x: pl.Tensor[[16, 32], pl.f32]):
            a = pl.load(x, [0, 0], [16, 32])
            b = pl.and_(a, a)  # F32-AND
    assert "TAND takes" in ei.value.what and "not float32" in ei.value.what, ei.value


# -- tile-scalar ops whose A5 implementation asks only for src's valid columns ------------------
def _scalar_rows(platform, op, dst_shape, src_valid=(16, 16)):
    """``op(dst, src, 3)`` from a 16x16 source (valid ``src_valid``) into a dst of valid
    ``dst_shape`` (a 16x16 tile), stored whole; returns (the stored dst, the source)."""
    x = np.arange(256, dtype=np.float32).reshape(16, 16) - 100

    def k(x, y):
        src = Tile(TileType.Vec, np.float32, 16, 16, addr=0x0)
        dst = Tile(TileType.Vec, np.float32, 16, 16, addr=0x400)
        TLOAD(src, x)
        TLOAD(dst, y)
        src.SetValid(*src_valid)
        dst.SetValid(*dst_shape)
        op(dst, src, np.float32(3))                       # SCALAR-OP
        dst.SetValid(16, 16)
        TSTORE(y, dst)
    res = ptopipe.run(aiv=(k, None), args=dict(x=x, y=np.zeros((16, 16), np.float32)), platform=platform)
    return res["y"], x


@pytest.mark.parametrize("name, fn", [("TMULS", np.multiply), ("TMAXS", np.maximum), ("TMINS", np.minimum)])
@pytest.mark.parametrize("rows", [8, 16])
def test_a5_muls_maxs_mins_run_over_dsts_valid_rows(name, fn, rows):
    """pto-isa A5 TMulS / TMaxs / TMins assert only src.GetValidCol() == dst.GetValidCol() and
    iterate dst's valid region: dst's 8 (or 16) valid rows from src's first rows - src valid
    16 or 8 rows; the rest of dst untouched."""
    for src_rows in (16, 8):
        y, x = _scalar_rows("a5", getattr(isa, name), (rows, 16), (src_rows, 16))
        np.testing.assert_array_equal(y[:rows], fn(x[:rows], np.float32(3)))
        assert not y[rows:].any()


@pytest.mark.parametrize("platform, name", [("a2a3", "TMULS"), ("a2a3", "TMAXS"), ("a2a3", "TMINS"),
                                            ("a5", "TADDS"), ("a5", "TSUBS"), ("a5", "TDIVS")])
def test_tile_scalar_ops_asserting_rows_refuse_a_dst_of_other_valid_rows(platform, name):
    """Every A2A3 header and the rest of A5's tile-scalar family assert the rows too."""
    with pytest.raises(KernelError) as e:
        _scalar_rows(platform, getattr(isa, name), (8, 16))
    assert e.value.what == f"{name}: operand shapes differ (dst 8x16, src 16x16)"
    assert e.value.where.endswith(f"test_catalogue_ops.py:{_line_of('SCALAR-OP')}")


def test_a5_tmuls_still_needs_srcs_valid_columns():
    with pytest.raises(KernelError) as e:
        _scalar_rows("a5", isa.TMULS, (8, 8))
    assert e.value.what.startswith("TMULS: src has 16 valid columns, dst 8")
    assert e.value.where.endswith(f"test_catalogue_ops.py:{_line_of('SCALAR-OP')}")


def _line_of(marker: str) -> int:
    lines = open(__file__).read().splitlines()
    return next(i for i, ln in enumerate(lines, 1) if ln.rstrip().endswith("# " + marker))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("instr", ["TROWSUM", "TROWMAX", "TCOLSUM", "TCOLMAX", "TROWARGMAX", "TROWEXPAND"])
def test_a_reduction_of_a_dn_tile_is_refused_at_its_line(platform, instr):
    """pto-isa's row and column reductions (the row arg-reductions too) static_assert an ND
    source, TROWEXPAND an ND destination ("only support Nd fractal Tile"): a DN (column-major)
    one is a KernelError at the call, not a result."""
    def vector():
        src = isa.Tile(isa.TileType.Vec, np.float32, 16, 1, blayout=isa.BLayout.ColMajor)
        dst = isa.Tile(isa.TileType.Vec, np.int32 if instr == "TROWARGMAX" else np.float32,
                       1 if instr.startswith("TCOL") else 16, 1, blayout=isa.BLayout.ColMajor)
        isa.TASSIGN(src, 0)
        isa.TASSIGN(dst, 0x100)
        isa.TEXPANDS(src, 1.0)
        getattr(isa, instr)(dst, src)     # the reduction
    with pytest.raises(KernelError, match=f"{instr}'s (source|destination) .* is not an ND tile") as e:
        ptopipe.run(aiv=vector, platform=platform)
    with open(__file__) as f:
        assert e.value.where.endswith(f":{next(i for i, l in enumerate(f.read().splitlines(), 1) if '# the reduction' in l)}")
