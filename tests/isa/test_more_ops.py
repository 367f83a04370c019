"""The catalogue's power, fused, part-arg, exp-difference, pair-sum, interleave, histogram,
block-gather and sub-view instructions, run end to end on a Vector core of both platforms
(GM -> tile -> op -> GM) and compared with plain numpy; each platform's dtype rule refusing
a dtype at the kernel line; and one .pto text per family run through the PTO-AS executor."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ptopipe
from ptopipe import KernelError
from ptopipe.arch.vocab import TileLayout, TileType, static_shape
from ptopipe.codegen.pto_exec.types import ELEMENT
from ptopipe.errors import DataRaceError
from ptopipe.isa import *  # noqa: F403
from test_catalogue_ops import PLATFORMS, close, rand, rejects, run_tiles

pytestmark = pytest.mark.usefixtures("no_hang")
BF16 = ml_dtypes.bfloat16


def int_pow(base, exp, dtype):
    """``base ** exp`` in Python integers, wrapped to ``dtype`` (a negative exponent: 0, or
    +/-1 for a base of -1; exponent 0 or base 1: 1)."""
    bits = 8 * np.dtype(dtype).itemsize
    out = []
    for b, e in zip(np.asarray(base).ravel().tolist(), np.broadcast_to(exp, np.shape(base)).ravel().tolist()):
        if e == 0 or b == 1:
            r = 1
        elif e < 0:
            r = (1 if e % 2 == 0 else -1) if b == -1 else 0
        else:
            r = b ** e
        out.append(r % (1 << bits))
    return np.array(out, np.uint64).astype(dtype).reshape(np.shape(base))


# -- TPOW / TPOWS --------------------------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
def test_pow_floats_with_and_without_tmp(platform):
    rng = np.random.default_rng(1)
    base = rand(rng, np.float32, lo=0.25, hi=4)
    base[0, :4] = [-2.0, -2.0, 0.0, -1.5]
    exp = rand(rng, np.float32, lo=-3, hi=3)
    exp[0, :4] = [3.0, 2.0, 2.0, 0.5]                  # odd / even integer, 0 ** 2, NaN

    def call(o, i):
        TPOW(o[0], i[0], i[1], o[2])                   # pto-isa's tmp operand
        TPOWS(o[1], i[0], 2.5)
    got = run_tiles(platform, call, [base, exp], [(base.shape, np.float32)] * 3)
    with np.errstate(invalid="ignore"):
        want = np.power(base.astype(np.float64), exp.astype(np.float64)).astype(np.float32)
        want_s = np.power(base.astype(np.float64), 2.5).astype(np.float32)
    np.testing.assert_allclose(got[0], want, rtol=1e-6)
    np.testing.assert_allclose(got[1], want_s, rtol=1e-6)
    assert got[0][0, 0] == -8.0 and got[0][0, 1] == 4.0 and np.isnan(got[0][0, 3])


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, np.uint16])
def test_pow_integers_wrap(platform, dtype):
    """uint16 included: pto-isa's a2a3/TPow.hpp:266 and its ISA page take it on A2A3 too."""
    rng = np.random.default_rng(2)
    lo = 0 if np.dtype(dtype).kind == "u" else -4
    base, exp = rand(rng, dtype, lo=lo, hi=7), rand(rng, dtype, lo=lo, hi=9)
    got = run_tiles(platform, lambda o, i: (TPOW(o[0], i[0], i[1]), TPOWS(o[1], i[0], 3)),
                    [base, exp], [(base.shape, dtype)] * 2)
    np.testing.assert_array_equal(got[0], int_pow(base, exp, dtype))
    np.testing.assert_array_equal(got[1], int_pow(base, 3, dtype))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_pow_low_precision_follows_each_platforms_rule(platform):
    """A5 takes f16 (DEFAULT) and bf16 (HIGH_PRECISION only); A2A3 takes neither."""
    rng = np.random.default_rng(3)
    for dtype, algo in ((np.float16, PowAlgorithm.DEFAULT), (BF16, PowAlgorithm.HIGH_PRECISION)):
        base, exp = rand(rng, dtype, lo=0.5, hi=2), rand(rng, dtype, lo=-2, hi=2)
        base[0, 0], exp[0, 0] = 1.777, 1.607           # f16: 2.5205... rounds via f32 to 2.52

        def call(o, i, algo=algo):
            TPOW(o[0], i[0], i[1], algorithm=algo)
        if platform == "a5":
            got = run_tiles(platform, call, [base, exp], [(base.shape, dtype)])[0]
            want = np.power(base.astype(np.float64), exp.astype(np.float64)).astype(np.float32).astype(dtype)
            np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
            if dtype == np.float16:
                assert got[0, 0] == np.float16(2.52)     # directly from double: 2.521
        else:
            rejects(platform, call, [base, exp], [(base.shape, dtype)], "TPOW takes", "on A2A3")
    bf, bfe = rand(rng, BF16, lo=0.5, hi=2), rand(rng, BF16, lo=-2, hi=2)
    e = rejects(platform, lambda o, i: TPOW(o[0], i[0], i[1]), [bf, bfe], [(bf.shape, BF16)],
                "TPOW takes", "PowAlgorithm.DEFAULT")
    if platform == "a5":
        assert "HIGH_PRECISION" in e.fix


# -- TSUBRELU and the forms that read dst ---------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_subrelu_and_fused_multiply_adds(platform, dtype):
    rng = np.random.default_rng(4)
    a, b, c = rand(rng, dtype, lo=-4, hi=4), rand(rng, dtype, lo=-4, hi=4), rand(rng, dtype, lo=-4, hi=4)

    def call(o, i):
        TSUBRELU(o[0], i[0], i[1])
        TMULADDDST(o[1], i[0], i[1])                   # o[1] starts as c
        TFUSEDMULADD(o[2], i[0], i[1])
        TFUSEDMULADDRELU(o[3], i[0], i[1])
    got = run_tiles(platform, call, [a, b], [np.zeros_like(a), c.copy(), c.copy(), c.copy()])
    close(got[0], np.maximum(a - b, 0), dtype)
    close(got[1], (a * b) + c, dtype)                  # the product rounded, then the sum
    close(got[2], (a * c) + b, dtype)
    close(got[3], np.maximum((a * c) + b, 0), dtype)
    # TFUSEDMULADD rounds once (vmadd; pto-isa's tfusemuladd golden): (1 + 2^-10)^2 - (1 + 2^-9)
    # is 2^-20 fused, 0 with the product rounded first - as TMULADDDST (vmla) rounds it
    one = np.full((8, 32), 1 + 2.0 ** -10, dtype)
    minus = np.full((8, 32), -(1 + 2.0 ** -9), dtype)
    got = run_tiles(platform, lambda o, i: (TFUSEDMULADD(o[0], i[0], i[1]), TFUSEDMULADDRELU(o[1], i[0], i[1]),
                                            TMULADDDST(o[2], i[0], i[0])), [one, minus], [one.copy(), one.copy(), minus.copy()])
    want = np.float64(1 + 2.0 ** -10) ** 2 - (1 + 2.0 ** -9)
    assert (got[0] == dtype(want)).all() and (got[1] == dtype(want)).all() and want > 0
    assert (got[2] == dtype(1 + 2.0 ** -10) * dtype(1 + 2.0 ** -10) + dtype(-(1 + 2.0 ** -9))).all()
    for op in (TSUBRELU, TMULADDDST, TFUSEDMULADDRELU):
        ia, ib = rand(rng, np.int32), rand(rng, np.int32)
        rejects(platform, lambda o, i, op=op: op(o[0], i[0], i[1]), [ia, ib], [(ia.shape, np.int32)],
                f"{op.__name__} takes f16, f32 tiles", "not int32")


@pytest.mark.parametrize("name", ["TMULADDDST", "TFUSEDMULADD", "TFUSEDMULADDRELU"])
def test_fused_forms_read_their_destination(name):
    """dst is an operand read, not only written: under manual sync, a TLOAD into dst with no
    event before the op is a read-after-write race."""
    op = globals()[name]

    def k(x, y):
        a = Tile(TileType.Vec, float32, 8, 32, addr=0)
        d = Tile(TileType.Vec, float32, 8, 32, addr=1024)
        TLOAD(a, GlobalTensor(x.data(), (8, 32)))
        set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
        wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
        TLOAD(d, GlobalTensor(y.data(), (8, 32)))
        op(d, a, a)
    ones = np.ones((8, 32), np.float32)
    with pytest.raises(DataRaceError) as e:
        ptopipe.run(aiv=(k, None), args=dict(x=ones, y=ones), sync="manual")
    assert f"{name} on PIPE_V (reads)" in e.value.what, e.value


# -- TPARTARGMAX / TPARTARGMIN ---------------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("vdt,idt", [(np.float32, np.int32), (np.float16, np.int16)])
def test_part_arg_max_and_min(platform, vdt, idt):
    rng = np.random.default_rng(5)
    v0, v1 = rand(rng, vdt), rand(rng, vdt)
    v1[0, :8] = v0[0, :8]                              # ties: src0's value and index
    i0 = np.arange(256, dtype=idt).reshape(8, 32)
    i1 = (i0 + 1000).astype(idt)
    rows = 5                                           # src1 covers the first 5 rows only

    def call(o, i):
        TPARTARGMAX(o[0], i[0], i[1], o[1], i[2], i[3])
        TPARTARGMIN(o[2], i[0], i[1], o[3], i[2], i[3])
    got = run_tiles(platform, call, [v0, v1, i0, i1], [(v0.shape, vdt), (v0.shape, idt)] * 2,
                    valid={1: (rows, 32), 3: (rows, 32)})
    for k, better in ((0, np.greater), (2, np.less)):
        take1 = np.zeros(v0.shape, bool)
        take1[:rows] = better(v1[:rows], v0[:rows])
        np.testing.assert_array_equal(got[k], np.where(take1, v1, v0))
        np.testing.assert_array_equal(got[k + 1], np.where(take1, i1, i0))
    assert np.array_equal(got[1][0, :8], i0[0, :8]) and np.array_equal(got[3][0, :8], i0[0, :8])
    bad = np.zeros((8, 32), np.int16 if vdt == np.float32 else np.int8)
    rejects(platform, call, [v0, v1, bad, bad], [(v0.shape, vdt), (v0.shape, bad.dtype)] * 2,
            "TPARTARGMAX: index tiles")
    b16 = v0.astype(BF16)
    rejects(platform, call, [b16, b16, i0, i1], [(v0.shape, BF16), (v0.shape, idt)] * 2,
            "TPARTARGMAX takes f16, f32 tiles")


# -- TROWEXPANDEXPDIF / TCOLEXPANDEXPDIF -------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_expand_exp_differences(platform, dtype):
    rng = np.random.default_rng(6)
    block = 32 // np.dtype(dtype).itemsize              # a 32-byte block per row (pto-isa's mode 2)
    a, r, c = rand(rng, dtype, lo=-3, hi=3), rand(rng, dtype, (8, block), -3, 3), rand(rng, dtype, (8, 32), -3, 3)

    def call(o, i):
        TROWEXPANDEXPDIF(o[0], i[0], i[1], o[2])       # with pto-isa's tmp tile
        TCOLEXPANDEXPDIF(o[1], i[0], i[2])
    got = run_tiles(platform, call, [a, r, c], [(a.shape, dtype)] * 3)
    close(got[0], np.exp((a - np.tile(r, (1, 32 // block))).astype(np.float64)), dtype)
    close(got[1], np.exp((a - c[:1, :]).astype(np.float64)), dtype)
    ia = rand(rng, np.int32)
    rejects(platform, lambda o, i: TCOLEXPANDEXPDIF(o[0], i[0], i[0]), [ia], [(ia.shape, np.int32)],
            "TCOLEXPANDEXPDIF takes f16, f32 tiles")


# -- TPAIRREDUCESUM ---------------------------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_pair_reduce_sum(platform, dtype):
    rng = np.random.default_rng(7)
    a = rand(rng, dtype)
    cols = 13                                          # odd: the last element pairs with 0

    def call(o, i):
        d = Tile(TileType.Vec, dtype, 8, 32, addr=o[0].addr, valid_cols=cols)
        TPAIRREDUCESUM(d, i[0])
    got = run_tiles(platform, call, [a], [np.full((8, 32), 9, dtype)], valid={0: (8, cols)})[0]
    want = np.full((8, 32), 9, dtype)
    want[:, :cols] = 0
    padded = np.concatenate([a[:, :cols], np.zeros((8, 1), dtype)], axis=1)
    want[:, :7] = padded[:, 0::2] + padded[:, 1::2]
    close(got, want, dtype)
    ia = rand(rng, np.int16)
    rejects(platform, lambda o, i: TPAIRREDUCESUM(o[0], i[0]), [ia], [(ia.shape, np.int16)],
            "TPAIRREDUCESUM takes f16, f32 tiles")


# -- TINTERLEAVE / TDEINTERLEAVE ----------------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.int8, BF16, np.float32])
def test_interleave_and_deinterleave(platform, dtype):
    rng = np.random.default_rng(8)
    a, b = rand(rng, dtype, (4, 32)), rand(rng, dtype, (4, 32))
    w = np.concatenate([a, b], axis=1)                 # one source of 64 columns

    def call(o, i):
        TINTERLEAVE(o[1], o[0], i[1], i[0])            # pto-isa's (dst1, dst0, src1, src0)
        TDEINTERLEAVE(o[3], o[2], o[1], o[0])          # back again
        TDEINTERLEAVE(o[5], o[4], i[2])                # the single-source form
    outs = [((4, 32), dtype)] * 6
    if platform == "a2a3":
        rejects(platform, call, [a, b, w], outs, "TINTERLEAVE is not implemented on A2A3")
        return
    got = run_tiles(platform, call, [a, b, w], outs)
    stream = np.empty((4, 64), dtype)
    stream[:, 0::2], stream[:, 1::2] = a, b
    np.testing.assert_array_equal(got[0], stream[:, :32])
    np.testing.assert_array_equal(got[1], stream[:, 32:])
    np.testing.assert_array_equal(got[2], a)
    np.testing.assert_array_equal(got[3], b)
    np.testing.assert_array_equal(got[4], w[:, 0::2])
    np.testing.assert_array_equal(got[5], w[:, 1::2])
    rejects(platform, lambda o, i: TDEINTERLEAVE(o[1], o[0], i[0]), [a], outs[:2],
            "dst0 and dst1 take half the source's 4x32")


# -- TADDRELUCONV / TSUBRELUCONV / TADDDEQRELU --------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name, sign", [("TADDRELUCONV", 1), ("TSUBRELUCONV", -1)])
def test_add_sub_relu_convert(platform, name, sign):
    instr = globals()[name]
    rng = np.random.default_rng(9)
    f, g = rand(rng, np.float32, lo=-100, hi=100), rand(rng, np.float32, lo=-100, hi=100)
    f[0, :2], g[0, :2] = [1e5, 40000.0], [0.0, 0.0]    # saturates to f16's 65504
    h, k = rand(rng, np.float16, lo=-80, hi=80), rand(rng, np.float16, lo=-80, hi=80)
    h[0, :3], k[0, :3] = [0.5, 1.5, 100.0], [0.0, 0.0, 100.0 * sign]   # ties to even, saturation
    s, t = rand(rng, np.int16, lo=-200, hi=200), rand(rng, np.int16, lo=-200, hi=200)

    def call(o, i):
        instr(o[0], i[0], i[1])
        instr(o[1], i[2], i[3])
        instr(o[2], i[4], i[5])
    got = run_tiles(platform, call, [f, g, h, k, s, t],
                    [(f.shape, np.float16), (f.shape, np.int8), (f.shape, np.int8)])
    x = np.maximum(f + sign * g, 0).astype(np.float64)
    np.testing.assert_array_equal(got[0], np.minimum(x, 65504).astype(np.float16))
    y = np.maximum(h + np.float16(sign) * k, 0).astype(np.float64)
    np.testing.assert_array_equal(got[1], np.minimum(np.rint(y), 127).astype(np.int8))
    assert got[1][0, :3].tolist() == [0, 2, 127]
    np.testing.assert_array_equal(got[2], np.minimum(np.maximum(s + np.int16(sign) * t, 0), 127).astype(np.int8))
    rejects(platform, lambda o, i: instr(o[0], i[0], i[1]), [f, g], [(f.shape, np.int8)],
            "float32 sources into an int8 dst", "float32 -> float16")
    ia = rand(rng, np.int32)
    rejects(platform, lambda o, i: instr(o[0], i[0], i[0]), [ia], [(ia.shape, np.int8)],
            f"{name} takes f16, f32, i16 tiles")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_add_dequant_relu(platform):
    rng = np.random.default_rng(10)
    a, b = rand(rng, np.int32, lo=-30000, hi=30000), rand(rng, np.int32, lo=-30000, hi=30000)
    a[0, 0], b[0, 0] = 2 ** 30, 2 ** 30                # wraps to -2**31: relu gives 0
    scale = 0.37

    def call(o, i):
        TADDDEQRELU(o[0], i[0], i[1], scale, o[1])     # with pto-isa's int32 tmp
    got = run_tiles(platform, call, [a, b], [(a.shape, np.float16), (a.shape, np.int32)])[0]
    x = (a.astype(np.int64) + b).astype(np.int32)
    want = np.maximum(x.astype(np.float32) * np.float32(scale), 0)
    np.testing.assert_array_equal(got, np.minimum(want, 65504).astype(np.float16))
    assert got[0, 0] == 0
    fa = a.astype(np.float32)
    rejects(platform, lambda o, i: TADDDEQRELU(o[0], i[0], i[0], scale), [fa], [(a.shape, np.float16)],
            "TADDDEQRELU takes i32 tiles")
    rejects(platform, call, [a, b], [(a.shape, np.float32), (a.shape, np.int32)], "writes float16")


# -- THISTOGRAM --------------------------------------------------------------------------------------
def cumulative_hist(byte_rows, keep):
    return np.stack([np.cumsum(np.bincount(r[m], minlength=256)) for r, m in zip(byte_rows, keep)]
                    ).astype(np.uint32)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_histogram_counts_cumulatively(platform):
    """The bins are cumulative (pto-isa's CPU model and its A5 test goldens: ``chistv2``),
    not the per-value counts its ISA page's formula shows."""
    rng = np.random.default_rng(11)
    u32 = rng.integers(0, 1 << 32, (4, 64), dtype=np.uint64).astype(np.uint32)
    u32[:, :40] = (u32[:, :40] & 0x0000FFFF) | 0x7A3C0000      # many share bytes 3 and 2
    u16 = rng.integers(0, 1 << 16, (4, 64)).astype(np.uint16)
    filt = np.zeros((4, 32), np.uint8)
    filt[0, 0], filt[1, 0] = 0x7A, 0x3C                # u32 BYTE_1: byte 3, then byte 2
    filt[:, 1] = u16[:, 5] >> 8                        # u16 BYTE_0: one upper byte per row
    per_row = np.ascontiguousarray(filt[:, 1:2])

    def call(o, i):
        THISTOGRAM(o[0], i[0], i[2])                   # u32 BYTE_3 (the default): no filter
        THISTOGRAM(o[1], i[0], i[2], HistByte.BYTE_1)
        THISTOGRAM(o[2], i[1], i[2])                   # u16 BYTE_1
        THISTOGRAM(o[3], i[1], i[3], byte=HistByte.BYTE_0)
    outs = [((4, 256), np.uint32)] * 4
    if platform == "a2a3":
        rejects(platform, call, [u32, u16, filt, per_row], outs, "THISTOGRAM is not implemented on A2A3")
        return
    got = run_tiles(platform, call, [u32, u16, filt, per_row], outs)
    every = np.ones(u32.shape, bool)
    np.testing.assert_array_equal(got[0], cumulative_hist(u32 >> 24, every))
    keep = ((u32 >> 24) == 0x7A) & (((u32 >> 16) & 0xFF) == 0x3C)
    np.testing.assert_array_equal(got[1], cumulative_hist((u32 >> 8) & 0xFF, keep))
    assert got[1][:, -1].min() >= 40
    np.testing.assert_array_equal(got[2], cumulative_hist(u16 >> 8, every))
    np.testing.assert_array_equal(got[3], cumulative_hist(u16 & 0xFF, (u16 >> 8) == per_row))
    rejects(platform, lambda o, i: THISTOGRAM(o[0], i[0], i[1], HistByte.BYTE_2), [u16, filt], outs[:1],
            "BYTE_2 of a uint16 source")
    i32 = u32.view(np.int32)
    rejects(platform, lambda o, i: THISTOGRAM(o[0], i[0], i[1]), [i32, filt], outs[:1],
            "THISTOGRAM takes u32, uint16 tiles on A5, not int32")


# -- TGATHERB ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
def test_gather_blocks_by_byte_offset(platform, dtype):
    rng = np.random.default_rng(12)
    src = rand(rng, dtype, (8, 64))
    nbytes = src.nbytes
    per_row = 64 * np.dtype(dtype).itemsize // 32     # dst 4 x 64: blocks per row
    offs = (rng.integers(0, nbytes // 32, (4, 16)) * 32).astype(np.uint32)

    got = run_tiles(platform, lambda o, i: TGATHERB(o[0], i[0], i[1]), [src, offs], [((4, 64), dtype)])[0]
    flat = src.reshape(-1).view(np.uint8)
    want = np.stack([np.concatenate([flat[o:o + 32] for o in row[:per_row]]) for row in offs])
    np.testing.assert_array_equal(got.view(np.uint8), want)
    offs[2, 1] = nbytes - 16                           # its block runs past the source tile
    with pytest.raises(KernelError) as e:
        run_tiles(platform, lambda o, i: TGATHERB(o[0], i[0], i[1]), [src, offs], [((4, 64), dtype)])
    assert "TGATHERB" in e.value.what and f"offset {nbytes - 16}" in e.value.what
    rejects(platform, lambda o, i: TGATHERB(o[0], i[0], i[1]), [src, offs.astype(np.int16)],
            [((4, 64), dtype)], "must be uint32 / int32")
    i64 = np.zeros((8, 64), np.int64)
    rejects(platform, lambda o, i: TGATHERB(o[0], i[0], i[1]), [i64, offs], [((4, 64), np.int64)],
            "TGATHERB takes", "not int64")


# -- TSUBVIEW ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
def test_subview_is_a_view_of_the_source(platform):
    a = rand(np.random.default_rng(13), np.int32, (16, 32))

    def call(o, i):
        v = Tile(TileType.Vec, np.int32, 4, 32, valid_cols=16)
        TSUBVIEW(v, i[0], 5, 8)                        # rows 5..8, cols 8..23 of the source
        TADDS(v, v, 1000)                              # writes through to the source's storage
        TMOV(o[0], i[0])
    got = run_tiles(platform, call, [a], [(a.shape, np.int32)])[0]
    want = a.copy()
    want[5:9, 8:24] += 1000
    np.testing.assert_array_equal(got, want)

    def misaligned(o, i):
        TSUBVIEW(Tile(TileType.Vec, np.int32, 4, 32, valid_cols=16), i[0], 5, 3)
    rejects(platform, misaligned, [a], [(a.shape, np.int32)], "TSUBVIEW at (5, 3)", "not 32-byte aligned")

    def reaching_past(o, i):                             # a 16-row tile, 4 valid rows at row 12:
        v = Tile(TileType.Vec, np.int32, 16, 32, valid_rows=4, valid_cols=16)   # its static rows
        TSUBVIEW(v, i[0], 12, 8)                         # reach past the source (pto-isa: fine)
        TADDS(v, v, 1000)
        TMOV(o[0], i[0])
    got = run_tiles(platform, reaching_past, [a], [(a.shape, np.int32)])[0]
    want = a.copy()
    want[12:16, 8:24] += 1000
    np.testing.assert_array_equal(got, want)

    def narrower(o, i):
        TSUBVIEW(Tile(TileType.Vec, np.int32, 4, 16), i[0], 0, 8)
    rejects(platform, narrower, [a], [(a.shape, np.int32)], "same element type and static columns")


# -- the PTO-AS executor reaches each family -----------------------------------------------------------
def tile_t(r, c, d="f32", vr=None, vc=None):
    """A row-major Vec tile_buf of valid shape ``vr x vc`` (else ``r x c``) declared in the static
    shape pto-isa's Tile takes for ``r x c`` (``arch.vocab.static_shape``)."""
    sr, sc = static_shape(TileType.Vec, TileLayout.ND, r, c, ELEMENT[d].itemsize)
    return (f"!pto.tile_buf<loc=vec, dtype={d}, rows={sr}, cols={sc}, v_row={vr or r}, v_col={vc or c}, "
            "blayout=row_major, slayout=none_box, fractal=512, pad=0>")


def pto_kernel(args: dict, body: str) -> str:
    """A vector function loading each of ``args`` (name -> (rows, cols, dtype)) into tile
    ``%t_<name>``, running ``body``, and storing every tile back."""
    params = ", ".join(f"%{n}: !pto.ptr<{d}>" for n, (_, _, d) in args.items())
    lines = ["    %c0 = arith.constant 0 : index", "    %c1 = arith.constant 1 : index"]
    for n, (r, c, d) in args.items():
        v = f"!pto.partition_tensor_view<{r}x{c}x{d}>"
        lines += [f"    %cr_{n} = arith.constant {r} : index", f"    %cc_{n} = arith.constant {c} : index",
                  f"    %v_{n} = pto.make_tensor_view %{n}, shape = [%cr_{n}, %cc_{n}], strides = [%cc_{n}, %c1] "
                  f": !pto.tensor_view<?x?x{d}>",
                  f"    %p_{n} = pto.partition_view %v_{n}, offsets = [%c0, %c0], sizes = [%cr_{n}, %cc_{n}] "
                  f": !pto.tensor_view<?x?x{d}> -> {v}",
                  f"    %t_{n} = pto.alloc_tile : {tile_t(r, c, d)}",
                  f"    pto.tload ins(%p_{n} : {v}) outs(%t_{n} : {tile_t(r, c, d)})"]
    stores = [f"    pto.tstore ins(%t_{n} : {tile_t(r, c, d)}) outs(%p_{n} : !pto.partition_tensor_view<{r}x{c}x{d}>)"
              for n, (r, c, d) in args.items()]
    return "module {\n  func.func @k(" + params + ") {\n" + "\n".join(lines) + "\n" + body + \
        "\n".join(stores) + "\n    return\n  }\n}\n"


def run_text(args: dict, body: str, inputs: dict, platform: str) -> dict:
    return ptopipe.run_pto(text=pto_kernel(args, body), inputs=inputs, platform=platform).outputs


T8 = tile_t(8, 32)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_pto_pow_and_fused_families(platform):
    rng = np.random.default_rng(14)
    a, b, c = rand(rng, np.float32, lo=0.5, hi=2), rand(rng, np.float32, lo=-2, hi=2), rand(rng, np.float32)
    args = {n: (8, 32, "f32") for n in ("a", "b", "c", "p", "q", "r", "s", "tmp")}
    body = f"""    %two = arith.constant 2.0 : f32
    pto.tpow ins(%t_a, %t_b, %t_tmp : {T8}, {T8}, {T8}) outs(%t_p : {T8})
    pto.tpows ins(%t_a, %two, %t_tmp : {T8}, f32, {T8}) outs(%t_q : {T8})
    pto.tsubrelu ins(%t_b, %t_c : {T8}, {T8}) outs(%t_r : {T8})
    pto.tfusedmuladd ins(%t_a, %t_b : {T8}, {T8}) outs(%t_c : {T8})
    pto.tmuladddst ins(%t_a, %t_b : {T8}, {T8}) outs(%t_s : {T8})
"""
    z = np.zeros_like(a)
    out = run_text(args, body, dict(a=a, b=b, c=c, p=z, q=z, r=z, s=np.ones_like(a), tmp=z), platform)
    np.testing.assert_allclose(out["p"], np.power(a.astype(np.float64), b), rtol=1e-6)
    np.testing.assert_allclose(out["q"], a.astype(np.float64) ** 2, rtol=1e-6)
    np.testing.assert_array_equal(out["r"], np.maximum(b - c, 0))
    np.testing.assert_allclose(out["c"], a * c + b, rtol=1e-6)
    np.testing.assert_allclose(out["s"], a * b + 1, rtol=1e-6)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_pto_part_arg_expdif_and_pair_sum_families(platform):
    rng = np.random.default_rng(15)
    v0, v1, r = rand(rng, np.float32), rand(rng, np.float32), rand(rng, np.float32, (8, 8), -3, 3)
    i0 = np.arange(256, dtype=np.int32).reshape(8, 32)
    args = {"v0": (8, 32, "f32"), "v1": (8, 32, "f32"), "i0": (8, 32, "i32"), "i1": (8, 32, "i32"),
            "dv": (8, 32, "f32"), "di": (8, 32, "i32"), "r": (8, 8, "f32"), "e": (8, 32, "f32"),
            "ps": (8, 32, "f32")}
    I8 = tile_t(8, 32, "i32")
    body = f"""    pto.tpartargmin ins(%t_v0, %t_v1, %t_i0, %t_i1 : {T8}, {T8}, {I8}, {I8}) outs(%t_dv, %t_di : {T8}, {I8})
    pto.trowexpandexpdif ins(%t_v0, %t_r : {T8}, {tile_t(8, 8)}) outs(%t_e : {T8})
    pto.tpairreducesum ins(%t_v1 : {T8}) outs(%t_ps : {T8})
"""
    z = np.zeros_like(v0)
    out = run_text(args, body, dict(v0=v0, v1=v1, i0=i0, i1=i0 + 500, dv=z, di=i0 * 0, r=r, e=z, ps=z),
                   platform)
    one = v1 < v0
    np.testing.assert_array_equal(out["dv"], np.where(one, v1, v0))
    np.testing.assert_array_equal(out["di"], np.where(one, i0 + 500, i0))
    np.testing.assert_allclose(out["e"], np.exp((v0 - np.tile(r, (1, 4))).astype(np.float64)), rtol=1e-6)
    want = np.zeros_like(v1)
    want[:, :16] = v1[:, 0::2] + v1[:, 1::2]
    np.testing.assert_array_equal(out["ps"], want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_pto_conversion_and_gather_families(platform):
    rng = np.random.default_rng(16)
    f, g = rand(rng, np.float32), rand(rng, np.float32)
    x, y = rand(rng, np.int32, lo=-9000, hi=9000), rand(rng, np.int32, lo=-9000, hi=9000)
    offs = (rng.integers(0, 32, (8, 32)) * 32).astype(np.uint32)
    args = {"f": (8, 32, "f32"), "g": (8, 32, "f32"), "h": (8, 32, "f16"), "x": (8, 32, "i32"),
            "y": (8, 32, "i32"), "q": (8, 32, "f16"), "tmp": (8, 32, "i32"), "o": (8, 32, "ui32"),
            "gb": (8, 32, "f32")}
    F16, I8 = tile_t(8, 32, "f16"), tile_t(8, 32, "i32")
    body = f"""    %s = arith.constant 0.125 : f32
    pto.taddreluconv ins(%t_f, %t_g : {T8}, {T8}) outs(%t_h : {F16})
    pto.tadddeqrelu ins(%t_x, %t_y, %s, %t_tmp : {I8}, {I8}, f32, {I8}) outs(%t_q : {F16})
    pto.tgatherb ins(%t_f, %t_o : {T8}, {tile_t(8, 32, "ui32")}) outs(%t_gb : {T8})
"""
    z16 = np.zeros((8, 32), np.float16)
    out = run_text(args, body, dict(f=f, g=g, h=z16, x=x, y=y, q=z16, tmp=x * 0, o=offs, gb=f * 0), platform)
    np.testing.assert_array_equal(out["h"], np.maximum(f + g, 0).astype(np.float16))
    np.testing.assert_array_equal(out["q"], np.maximum((x + y).astype(np.float32) * np.float32(0.125), 0)
                                  .astype(np.float16))
    blocks = f.reshape(-1, 8)                          # 32-byte blocks of 8 floats
    np.testing.assert_array_equal(out["gb"], blocks[offs[:, :4] // 32].reshape(8, 32))


def test_pto_interleave_and_histogram_families_on_a5():
    rng = np.random.default_rng(17)
    a, b = rand(rng, np.int16, (4, 32)), rand(rng, np.int16, (4, 32))
    u = rng.integers(0, 1 << 16, (4, 64)).astype(np.uint16)
    idx = (u[:, :1] >> 8).astype(np.uint8)
    args = {"a": (4, 32, "i16"), "b": (4, 32, "i16"), "x": (4, 32, "i16"), "y": (4, 32, "i16"),
            "p": (4, 32, "i16"), "q": (4, 32, "i16"), "u": (4, 64, "ui16"), "ix": (4, 1, "ui8"),
            "hm": (4, 256, "ui32"), "hl": (4, 256, "ui32")}
    S, U, IX, H = tile_t(4, 32, "i16"), tile_t(4, 64, "ui16"), tile_t(4, 1, "ui8"), tile_t(4, 256, "ui32")
    body = f"""    pto.tinterleave ins(%t_a, %t_b : {S}, {S}) outs(%t_x, %t_y : {S}, {S})
    pto.tdeinterleave ins(%t_x, %t_y : {S}, {S}) outs(%t_p, %t_q : {S}, {S})
    pto.thistogram ins(%t_u, %t_ix : {U}, {IX}) outs(%t_hm : {H})
    pto.thistogram ins(%t_u, %t_ix : {U}, {IX}) outs(%t_hl : {H}) {{isMSB = false}}
"""
    z, zh = np.zeros_like(a), np.zeros((4, 256), np.uint32)
    out = run_text(args, body, dict(a=a, b=b, x=z, y=z, p=z, q=z, u=u, ix=idx, hm=zh, hl=zh), "a5")
    stream = np.empty((4, 64), np.int16)
    stream[:, 0::2], stream[:, 1::2] = a, b
    np.testing.assert_array_equal(out["x"], stream[:, :32])
    np.testing.assert_array_equal(out["y"], stream[:, 32:])
    np.testing.assert_array_equal(out["p"], a)
    np.testing.assert_array_equal(out["q"], b)
    every = np.ones(u.shape, bool)
    np.testing.assert_array_equal(out["hm"], cumulative_hist(u >> 8, every))
    np.testing.assert_array_equal(out["hl"], cumulative_hist(u & 0xFF, (u >> 8) == idx))


# -- operand rules each instruction checks when issued ------------------------------------------------
def test_operand_rules_are_refused_at_the_kernel_line():
    rng = np.random.default_rng(18)
    f = rand(rng, np.float32)
    i32 = rand(rng, np.int32)
    out = [(f.shape, np.float32)]
    # A2A3 computes a float power through tmp: it must be of dst's dtype (A5 ignores it)
    rejects("a2a3", lambda o, i: TPOW(o[0], i[0], i[0], i[1]), [f, i32], out, "the tmp tile", "float32")
    run_tiles("a5", lambda o, i: TPOW(o[0], i[0], i[0], i[1]), [f, i32], out)
    rejects("a2a3", lambda o, i: TADDDEQRELU(o[0], i[0], i[0], 0.5, i[1]), [i32, f], [(f.shape, np.float16)],
            "tmp tile", "must be int32")
    # part-arg: one source covers dst, the other fits inside it
    v = lambda n: (rand(rng, np.float32), np.zeros((8, 32), np.int32))[n]       # noqa: E731
    rejects("a2a3", lambda o, i: TPARTARGMAX(o[0], i[0], i[1], o[1], i[2], i[3]),
            [v(0), v(0), v(1), v(1)], [(f.shape, np.float32), (f.shape, np.int32)],
            "one source must cover dst exactly", valid={0: (5, 32), 1: (8, 16), 2: (5, 32), 3: (8, 16)})
    odd = lambda t: Tile(TileType.Vec, np.float32, 8, 32, addr=t.addr, valid_cols=31)    # noqa: E731
    rejects("a5", lambda o, i: TINTERLEAVE(odd(o[1]), odd(o[0]), i[1], i[0]), [f, f], out * 2,
            "an even number", valid={0: (8, 31), 1: (8, 31)})
    u32 = rng.integers(0, 1 << 31, (4, 64)).astype(np.uint32)
    rejects("a5", lambda o, i: THISTOGRAM(o[0], i[0], i[1]), [u32, np.zeros((4, 32), np.uint8)],
            [((4, 128), np.uint32)], "at least 256 columns")
    rejects("a5", lambda o, i: THISTOGRAM(o[0], i[0], i[1], HistByte.BYTE_0), [u32, np.zeros((2, 32), np.uint8)],
            [((4, 256), np.uint32)], "fewer than the 3 filter rows")
    rejects("a2a3", lambda o, i: TGATHERB(o[0], i[0], i[1]), [f, np.zeros((8, 32), np.uint32)],
            [((8, 4), np.float32)], "not whole 32-byte blocks")
    rejects("a2a3", lambda o, i: TSUBVIEW(Tile(TileType.Vec, np.float32, 4, 32), i[0], 6, 0), [f], out,
            "does not fit")
    none = lambda t: Tile(TileType.Vec, np.float16, 8, 32, addr=t.addr, valid_rows=0)   # noqa: E731
    rejects("a2a3", lambda o, i: TADDRELUCONV(none(o[0]), i[0], i[0]), [f], [(f.shape, np.float16)],
            "an empty valid region", valid={0: (0, 32)})


# -- Tile.GetValue / SetValue ---------------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
def test_get_and_set_value_of_a_vec_tile(platform):
    """pto-isa's Tile::GetValue / SetValue: one element at an offset over the static shape, on the
    scalar pipe after the vector instruction that wrote the tile."""
    a = rand(np.random.default_rng(21), np.float32, (4, 8))

    def call(o, i):
        TMULS(o[0], i[0], 3.0)
        v = o[0].GetValue(10)                          # row 1, column 2
        o[0].SetValue(31, v + 0.5)
    got = run_tiles(platform, call, [a], [(a.shape, np.float32)])[0]
    want = 3 * a
    want[3, 7] = want[1, 2] + np.float32(0.5)
    np.testing.assert_array_equal(got, want)
    rejects(platform, lambda o, i: i[0].GetValue(32), [a], [(a.shape, np.float32)],
            "GetValue(32)", "not one of its 32 elements")


def test_get_value_of_a_mat_tile_is_refused():
    def cube():
        t = Tile(TileType.Mat, np.float32, 16, 16, addr=0)
        t.GetValue(0)
    with pytest.raises(KernelError, match="Vec tile's elements only"):
        ptopipe.run(aic=cube)
