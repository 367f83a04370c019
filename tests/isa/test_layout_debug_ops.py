"""The catalogue's layout / generation instructions (TCONCAT, TTRANS, TRESHAPE, TFILLPAD*,
TCI, TTRI, TRANDOM, TINSERT) against numpy on both platforms, and the debugging ones:
TPRINT's output in simulated-time order (also of a failing run), TTRAP's located error,
TPREFETCH changing no data while occupying MTE2."""
from __future__ import annotations

import os

import ml_dtypes
import numpy as np
import pytest

import ptopipe
from ptopipe import KernelError
from ptopipe.isa import *  # noqa: F403
from markers import line_of
from test_catalogue_ops import PLATFORMS, rand, rejects, run_tiles

pytestmark = pytest.mark.usefixtures("no_hang")
HERE = os.path.basename(__file__)


# -- TCONCAT / TTRANS / TRESHAPE -----------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float16, np.int8])
def test_concat_along_columns(platform, dtype):
    rng = np.random.default_rng(1)
    a, b = rand(rng, dtype, (8, 32)), rand(rng, dtype, (8, 32))

    def call(o, i):
        d = Tile(TileType.Vec, dtype, 8, 32, addr=o[0].addr, valid_cols=22)
        TCONCAT(d, i[0], i[1])
    got = run_tiles(platform, call, [a, b], [np.full((8, 32), 7, dtype)], valid={0: (8, 12), 1: (8, 10)})[0]
    want = np.full((8, 32), 7, dtype)
    want[:, :22] = np.concatenate([a[:, :12], b[:, :10]], axis=1)
    np.testing.assert_array_equal(got, want)
    # dst's valid columns must be exactly c0 + c1 on A5; on A2A3 they only fit its static width
    wide = lambda o, i: TCONCAT(o[0], i[0], i[1])          # noqa: E731 (dst valid 32 != 22)
    if platform == "a5":
        rejects(platform, wide, [a, b], [(a.shape, dtype)], "TCONCAT", "22 valid columns",
                valid={0: (8, 12), 1: (8, 10)})
    else:
        got = run_tiles(platform, wide, [a, b], [(a.shape, dtype)], valid={0: (8, 12), 1: (8, 10)})[0]
        np.testing.assert_array_equal(got[:, :22], want[:, :22])


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype,idx_dtype", [(np.float16, np.int32), (np.int8, np.int16), (np.float32, np.uint8)])
def test_concat_indexed_forms_take_per_row_counts(platform, dtype, idx_dtype):
    """The counts are bytes in units of the index dtype's size; src1's columns are cut at dst's
    valid width, and the 6-operand form writes the (cut) total back in the same units."""
    rng = np.random.default_rng(3)
    a, b = rand(rng, dtype, (4, 16)), rand(rng, dtype, (4, 16))
    unit = np.dtype(idx_dtype).itemsize
    n0 = (np.array([[3], [0], [16], [7]]) * unit).astype(idx_dtype)
    n1 = (np.array([[5], [16], [4], [12]]) * unit).astype(idx_dtype)

    def call(o, i):
        TCONCAT(o[0], i[0], i[1], i[2], i[3])
        TCONCAT(o[1], i[0], i[1], o[2], i[2], i[3])
    fill = np.full((4, 16), 9, dtype)
    got = run_tiles(platform, call, [a, b, n0, n1], [fill, fill, ((4, 1), idx_dtype)])
    want = fill.copy()
    for r in range(4):
        c0 = int(n0[r, 0]) // unit
        c1 = min(int(n1[r, 0]) // unit, 16 - c0)
        want[r, :c0 + c1] = np.concatenate([a[r, :c0], b[r, :c1]])
    np.testing.assert_array_equal(got[0], want)
    np.testing.assert_array_equal(got[1], want)
    np.testing.assert_array_equal(got[2][:, 0], [8 * unit, 16 * unit, 16 * unit, 16 * unit])
    wide = (np.array([[17], [0], [0], [0]]) * unit).astype(idx_dtype)     # past src0's 16 columns
    with pytest.raises(KernelError) as ei:
        run_tiles(platform, lambda o, i: TCONCAT(o[0], i[0], i[1], i[2], i[3]),
                  [a, b, wide, n1], [((4, 32), dtype)])
    assert "asks for 17 columns of a 16-column source" in ei.value.what
    rejects(platform, lambda o, i: TCONCAT(o[0], i[0], i[1], i[2], i[3]),
            [a, b, n0.astype(np.float32), n1], [((4, 16), dtype)], "TCONCAT", "index tiles")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype,k", [(np.float32, 0.25), (np.float16, -0.5), (np.int32, 3)])
def test_gather_compare_form(platform, dtype, k):
    """Per row the column numbers (+ offset) of the elements == / > kValue, packed from column 0,
    and their count in cdst[i]; kValue is one scalar (ptoas's form) or a per-row tile."""
    rng = np.random.default_rng(11)
    src = (rng.integers(-4, 5, (4, 32)) if np.dtype(dtype).kind == "i" else
           rng.integers(-4, 5, (4, 32)) / 4).astype(dtype)
    per_row = np.array([[0], [1], [2], [100]], np.uint32)           # converted to the source dtype

    def call(o, i):
        TGATHER(o[0], i[0], dtype(k), o[1], o[4], 5)                       # scalar k, EQ, offset 5
        TGATHER(o[2], i[0], i[1], o[3], o[4], mode=CmpMode.GT) if np.dtype(dtype).kind == "f" else None
    outs = [((4, 32), np.int32), ((1, 8), np.int32), ((4, 32), np.int32), ((4, 1), np.int32), ((4, 32), np.uint8)]
    got = run_tiles(platform, call, [src, per_row], outs)

    def want(hit, offset):
        idx = np.zeros((4, 32), np.int32)
        for r, row in enumerate(hit):
            cols = np.flatnonzero(row)
            idx[r, :cols.size] = offset + cols
        return idx, hit.sum(axis=1)
    idx, cnt = want(src == dtype(k), 5)
    np.testing.assert_array_equal(got[0], idx)
    np.testing.assert_array_equal(got[1][0, :4], cnt)
    if np.dtype(dtype).kind == "f":
        idx, cnt = want(src > per_row.astype(dtype), 0)
        np.testing.assert_array_equal(got[2], idx)
        np.testing.assert_array_equal(got[3][:, 0], cnt)
    # GT on an int32 source: A5 only; LT: neither platform
    gt = lambda o, i: TGATHER(o[0], i[0], 1, o[1], o[2], mode=CmpMode.GT)      # noqa: E731
    ints = np.zeros((4, 32), np.int32)
    if platform == "a2a3":
        rejects(platform, gt, [ints], outs[:2] + outs[4:], "on A2A3", "CmpMode.EQ only")
    else:
        run_tiles(platform, gt, [ints], outs[:2] + outs[4:])
    lt = lambda o, i: TGATHER(o[0], i[0], 1.0, o[1], o[2], mode=CmpMode.LT)    # noqa: E731
    rejects(platform, lt, [src.astype(np.float32)], outs[:2] + outs[4:], "EQ or GT, not LT")
    rejects(platform, lambda o, i: TGATHER(o[0], i[0], 1.0, o[1], o[2]), [src.astype(np.float32)],
            [((4, 32), np.float32)] + outs[1:2] + outs[4:], "int32 / uint32 indices")
    rejects(platform, lambda o, i: TGATHER(o[0], i[0], 1, o[1], o[2]), [src.astype(np.int8)],
            outs[:2] + outs[4:], "compare form takes", "not int8")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16, np.uint8])
def test_transpose(platform, dtype):
    a = rand(np.random.default_rng(2), dtype, (16, 32))

    def call(o, i):
        TTRANS(o[0], i[0], o[1])                   # with pto-isa's tmp operand
    got = run_tiles(platform, call, [a], [((32, 32), dtype), ((32, 32), dtype)], valid={0: (16, 24)})[0]
    np.testing.assert_array_equal(got[:24, :16], a[:16, :24].T)
    rejects(platform, lambda o, i: TTRANS(o[0], i[0]), [a], [((16, 16), dtype)], "transposes to 32x16")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_reshape_keeps_the_bytes(platform):
    a = rand(np.random.default_rng(3), np.float32, (8, 32))

    def call(o, i):
        TRESHAPE(o[0], i[0])                                      # a copy into another tile
        alias = Tile(TileType.Vec, np.uint8, 32, 32, addr=i[0].addr)
        TRESHAPE(alias, i[0])                                     # the same storage: no copy
        TMOV(o[1], alias)
    got = run_tiles(platform, call, [a], [((16, 16), np.int32), ((32, 32), np.uint8)])
    np.testing.assert_array_equal(got[0], a.reshape(-1).view(np.int32).reshape(16, 16))
    np.testing.assert_array_equal(got[1], a.reshape(-1).view(np.uint8).reshape(32, 32))
    rejects(platform, lambda o, i: TRESHAPE(o[0], i[0]), [a], [((8, 16), np.float32)],
            "1024 bytes", "512")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_reshape_in_place_is_no_instruction_of_any_pipe(platform):
    """pto-isa's TRESHAPE of one storage rebinds the tile (npu TReshape.hpp): under manual sync
    a store after the V -> MTE3 event that ordered the row sum reads it without a race (no V
    write of the reshape's own comes after the event), and no instruction is counted."""
    def vec(x, out):
        if get_subblockid() != 0:
            return
        s, tmp = Tile(TileType.Vec, float32, 8, 64, addr=0), Tile(TileType.Vec, float32, 8, 64, addr=0x800)
        d = Tile(TileType.Vec, float32, 8, 1, addr=0x1000)
        row = Tile(TileType.Vec, float32, 1, 8, addr=0x1000)
        TLOAD(s, GlobalTensor(x.data(), (8, 64)))
        set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
        wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
        TROWSUM(d, s, tmp)
        set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
        wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
        TRESHAPE(row, d)
        TSTORE(GlobalTensor(out.data(), (1, 8)), row)
    x = rand(np.random.default_rng(5), np.float32, (8, 64))
    res = ptopipe.run(None, vec, dict(x=x, out=np.zeros((1, 8), np.float32)), platform=platform,
                      sync="manual", causal=True)
    np.testing.assert_allclose(res.outputs["out"][0], x.sum(axis=1), rtol=1e-5)
    assert res.summary.cores["AIV0"]["instructions"] == 7      # TLOAD, 2 SET, 2 WAIT, TROWSUM, TSTORE


# -- TFILLPAD ------------------------------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
def test_fillpad_of_an_l1_tile_zeros_its_padding_on_the_cube(platform):
    """pto-isa's Mat TFILLPAD (create_cbuf_matrix): an L1 tile loaded with 5 valid rows over stale
    bytes gets zeros below them, so a matmul over its whole 16 rows gives zero rows there."""
    junk = np.full((16, 16), 7, np.float32)
    a = rand(np.random.default_rng(6), np.float32, (5, 16))

    def cube(x, stale, eye, out):
        m = Tile(TileType.Mat, float32, 16, 16, addr=0, layout=TileLayout.NZ)
        TLOAD(m, stale)                                           # what the last kernel left
        part = Tile(TileType.Mat, float32, 16, 16, addr=0, layout=TileLayout.NZ, valid_rows=5)
        TLOAD(part, x)
        TFILLPAD(part, part)
        whole, r = Tile(TileType.Mat, float32, 16, 16, addr=0, layout=TileLayout.NZ), \
            Tile(TileType.Mat, float32, 16, 16, addr=0x1000)
        left, right = Tile(TileType.Left, float32, 16, 16, addr=0), Tile(TileType.Right, float32, 16, 16, addr=0)
        acc = Tile(TileType.Acc, float32, 16, 16, addr=0)
        TLOAD(r, eye)
        TMOV(left, whole)
        TMOV(right, r)
        TMATMUL(acc, left, right)
        TSTORE(out, acc)
    res = ptopipe.run(cube, None, dict(x=a, stale=junk, eye=np.eye(16, dtype=np.float32),
                                       out=np.zeros((16, 16), np.float32)), platform=platform)
    np.testing.assert_array_equal(res.outputs["out"][:5], a)
    assert not res.outputs["out"][5:].any()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_fillpad_forms_and_pad_values(platform):
    rng = np.random.default_rng(4)
    f, i16 = rand(rng, np.float32, (8, 32)), rand(rng, np.int16, (8, 32))

    def call(o, i):
        TFILLPAD(o[0], i[0], PadValue.Max)
        TFILLPAD(o[1], i[1], pad=PadValue.Min)
        TFILLPAD_EXPAND(o[2], i[0], -1.5)                   # a custom pad, a larger tile
        whole = Tile(TileType.Vec, np.int16, 8, 32, addr=i[1].addr)
        TFILLPAD_INPLACE(whole, i[1])                       # zero outside the valid region
        TMOV(o[3], whole)
    got = run_tiles(platform, call, [f, i16],
                    [(f.shape, np.float32), (i16.shape, np.int16), ((16, 48), np.float32), (i16.shape, np.int16)],
                    valid={0: (5, 20), 1: (3, 7)})

    def want(src, valid, shape, fill):
        w = np.full(shape, fill, src.dtype)
        w[:valid[0], :valid[1]] = src[:valid[0], :valid[1]]
        return w
    np.testing.assert_array_equal(got[0], want(f, (5, 20), (8, 32), np.inf))
    np.testing.assert_array_equal(got[1], want(i16, (3, 7), (8, 32), -32768))
    np.testing.assert_array_equal(got[2], want(f, (5, 20), (16, 48), -1.5))
    np.testing.assert_array_equal(got[3], want(i16, (3, 7), (8, 32), 0))
    rejects(platform, lambda o, i: TFILLPAD(o[0], i[0]), [f], [((16, 32), np.float32)],
            "static shapes differ", "TFILLPAD_EXPAND")
    # a tile's "no pad value" (pto-isa's Tile default, ptoas's spelling) fills nothing
    rejects(platform, lambda o, i: TFILLPAD(o[0], i[0], PadValue.Null), [f], [(f.shape, np.float32)],
            "PadValue.Null is no pad value", "PadValue.Zero")


# -- TCI / TTRI ----------------------------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
def test_ci_sequences(platform):
    def call(o, i):
        TCI(o[0], 5)
        TCI(o[1], 100, descending=True)
        TCI(o[2], 5, descending=True)              # uint16 (any b16 / b32; A5 lists it): wraps below 0
    got = run_tiles(platform, call, [], [((1, 32), np.int32), ((1, 32), np.int16), ((1, 32), np.uint16)])
    np.testing.assert_array_equal(got[0][0], 5 + np.arange(32))
    np.testing.assert_array_equal(got[1][0], 100 - np.arange(32))
    np.testing.assert_array_equal(got[2][0], (5 - np.arange(32)).astype(np.uint16))
    half = lambda o, i: TCI(o[0], 1.0)           # noqa: E731
    if platform == "a5":                          # pto-isa's A5 TCI: integers only
        rejects(platform, half, [], [((1, 32), np.float16)], "TCI takes", "A2A3 takes float16")
    else:
        np.testing.assert_array_equal(run_tiles(platform, half, [], [((1, 32), np.float16)])[0][0],
                                      1 + np.arange(32, dtype=np.float16))
    rejects(platform, lambda o, i: TCI(o[0], 0), [], [((2, 32), np.int32)], "Rows == 1")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_triangular_masks(platform, dtype):
    def call(o, i):
        TTRI(o[0], 0)
        TTRI(o[1], 2, 1)
        TTRI(o[2], -3, upper_or_lower=0)
    got = run_tiles(platform, call, [], [((16, 24), dtype)] * 3)
    np.testing.assert_array_equal(got[0], np.tril(np.ones((16, 24)), 0))
    np.testing.assert_array_equal(got[1], np.triu(np.ones((16, 24)), 2))
    np.testing.assert_array_equal(got[2], np.tril(np.ones((16, 24)), -3))


# -- TRANDOM ---------------------------------------------------------------------------------------
def _philox_ref(ctr: list, key: list, rounds: int = 10) -> list:
    """Philox-4x32 on Python ints (Random123's round and key schedule)."""
    m = 0xFFFFFFFF
    c, k = list(ctr), list(key)
    for _ in range(rounds):
        p0, p1 = c[0] * 0xD2511F53, c[2] * 0xCD9E8D57
        c = [(p1 >> 32) ^ c[1] ^ k[0], p1 & m, (p0 >> 32) ^ c[3] ^ k[1], p0 & m]
        k = [(k[0] + 0x9E3779B9) & m, (k[1] + 0xBB67AE85) & m]
    return c


def _trandom_ref(key, counter, rows, cols, stride, rounds=10):
    """pto-isa's CPU-model layout: 64 lanes x 4 words per block, counter base advancing by
    stride / 4 per block (a 128-bit integer)."""
    out = np.zeros((rows, cols), np.uint32)
    base = sum(w << (32 * i) for i, w in enumerate(counter))
    blocks = -(-cols // 256)
    for r in range(rows):
        for blk in range(blocks):
            for lane in range(64):
                v = base + lane
                words = _philox_ref([(v >> (32 * i)) & 0xFFFFFFFF for i in range(4)], key, rounds)
                for rep in range(4):
                    col = blk * 256 + rep * 64 + lane
                    if col < cols:
                        out[r, col] = words[rep]
            base += stride // 4
    return out


def test_trandom_is_philox_and_deterministic():
    call = lambda o, i: TRANDOM(o[0], [0, 0], [0, 0, 0, 0])          # noqa: E731
    got = run_tiles("a5", call, [], [((2, 320), np.uint32)])[0]
    # Random123's known answer for Philox-4x32-10, counter 0, key 0: lane 0's four words
    assert [hex(int(x)) for x in got[0, [0, 64, 128, 192]]] == ["0x6627e8d5", "0xe169c58d",
                                                                "0xbc57ac4c", "0x9b00dbd8"]
    key, ctr = [0xA4093822, 0x299F31D0], [0xFFFFFFF0, 0xFFFFFFFF, 7, 1]      # carries across words

    def call2(o, i):
        t = Tile(TileType.Vec, np.int32, 2, 320, addr=o[0].addr, valid_cols=300)
        TRANDOM(t, *key, *ctr, rounds=7)                               # pto.trandom's operands
    got = run_tiles("a5", call2, [], [((2, 320), np.int32)])[0]
    want = _trandom_ref(key, ctr, 2, 300, 320, rounds=7)
    np.testing.assert_array_equal(got[:, :300].view(np.uint32), want)
    assert not got[:, 300:].any()
    again = run_tiles("a5", call2, [], [((2, 320), np.int32)])[0]
    np.testing.assert_array_equal(again, got)
    rejects("a2a3", call, [], [((2, 320), np.uint32)], "TRANDOM is not implemented on A2A3")
    rejects("a5", lambda o, i: TRANDOM(o[0], [1, 2], [3]), [], [((2, 320), np.uint32)], "4 32-bit words")


# -- TINSERT -------------------------------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
def test_insert_accumulator_into_mat_converting(platform):
    a = np.random.default_rng(5).integers(-8, 8, (16, 16)).astype(np.float16)

    def k(a, eye, out):
        a1 = Tile(TileType.Mat, float16, 16, 16, addr=0x0)
        e1 = Tile(TileType.Mat, float16, 16, 16, addr=0x200)
        big = Tile(TileType.Mat, float16, 32, 48, addr=0x400)
        a0 = Tile(TileType.Left, float16, 16, 16, addr=0x0)
        e0 = Tile(TileType.Right, float16, 16, 16, addr=0x0)
        acc = Tile(TileType.Acc, float32, 16, 16, addr=0x0)
        TLOAD(a1, a)
        TLOAD(e1, eye)
        TLOAD(big, out)
        TMOV(a0, a1)
        TMOV(e0, e1)
        TMATMUL(acc, a0, e0)
        TINSERT(big, acc, 16, 32)                       # f32 accumulator -> f16 (FIX)
        TSTORE(out, big)
    res = ptopipe.run(aic=k, platform=platform, args={"a": a, "eye": np.eye(16, dtype=np.float16),
                                                      "out": np.ones((32, 48), np.float16)})
    want = np.ones((32, 48), np.float16)
    want[16:, 32:] = a
    np.testing.assert_array_equal(res["out"], want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_insert_vec_into_vec(platform):
    """Both platforms insert Vec -> Vec (pto-isa's a2a3/TInsert.hpp has it, though its ISA page
    marks it A5); A2A3's copy starts a block on a 32-byte column, or inserts one element."""
    a = rand(np.random.default_rng(6), np.float32, (4, 8))
    call = lambda o, i: TINSERT(o[0], i[0], 2, 8)        # noqa: E731
    got = run_tiles(platform, call, [a], [np.zeros((8, 32), np.float32)])[0]
    want = np.zeros((8, 32), np.float32)
    want[2:6, 8:16] = a
    np.testing.assert_array_equal(got, want)
    rejects(platform, lambda o, i: TINSERT(o[0], i[0], 6, 30), [a], [((8, 32), np.float32)],
            "outside the 8x32 destination")
    unaligned = lambda o, i: TINSERT(o[0], i[0], 2, 4)   # noqa: E731  (16 bytes into the row)
    if platform == "a2a3":
        rejects(platform, unaligned, [a], [((8, 32), np.float32)], "32-byte aligned indexCol")
    else:
        want = np.zeros((8, 32), np.float32)
        want[2:6, 4:12] = a
        np.testing.assert_array_equal(run_tiles(platform, unaligned, [a], [((8, 32), np.float32)])[0], want)
    one = run_tiles(platform, lambda o, i: TINSERT(o[0], i[0], 3, 5), [a[:1, :1].copy()], [((8, 32), np.float32)])
    assert one[0][3, 5] == a[0, 0] and np.count_nonzero(one[0]) == 1


# -- TPRINT / TTRAP / TPREFETCH ----------------------------------------------------------------
def _printing_kernels(trap: bool = False):
    """AIV0 prints early, then after 3 long vector ops (late in simulated time, early in its
    instruction count); AIV1 prints after 10 short ones: between them in simulated time, so
    only a TPRINT that waits for its core's pipes (pto-isa's PIPE_ALL barrier) orders them."""
    def aiv0(x):
        t = Tile(TileType.Vec, float32, 2, 3, addr=0)
        big = Tile(TileType.Vec, float32, 64, 256, addr=0x100)
        TLOAD(t, x)
        TPRINT(t)                                  # early: right after the load
        TEXPANDS(big, 1.0)
        for _ in range(3):
            TEXP(big, big)
        TADDS(t, t, 30.0)
        TPRINT(t, PrintFormat.Width8_Precision2)   # late: after the long ops drain
        if trap:
            TTRAP()  # TRAP

    def aiv1(y):
        u = Tile(TileType.Vec, int32, 1, 4, addr=0)
        TLOAD(u, y)
        for _ in range(10):
            TADDS(u, u, 2)
        TPRINT(u)                                  # between AIV0's two prints
    return aiv0, aiv1


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tprint_comes_out_in_simulated_time_order(platform, capsys):
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    y = np.arange(4, dtype=np.int32).reshape(1, 4)
    res = ptopipe.run(aiv=_printing_kernels(), args={"x": x, "y": y}, platform=platform)
    first = "TPRINT 2x3\n" + "\n".join(" ".join(f"{v:8.4f}" for v in row) for row in x)
    middle = "TPRINT 1x4\n" + " ".join(f"{v:8d}" for v in (y + 20)[0])
    last = "TPRINT 2x3\n" + "\n".join(" ".join(f"{v:8.2f}" for v in row) for row in x + 30)
    assert res.prints == [first, middle, last]
    assert capsys.readouterr().out == "\n".join([first, middle, last]) + "\n"
    again = ptopipe.run(aiv=_printing_kernels(), args={"x": x, "y": y}, platform=platform)
    assert again.prints == res.prints


def test_a_tile_written_after_its_tprint_needs_no_event(capsys):
    """pto-isa's TPRINT is the scalar unit's own code (a pipe_barrier(PIPE_ALL), then a printf per
    element): it issues nothing else until the prints are done, so a vector write of the printed
    tile after it is ordered, in the manual mode too (ptoas's sync insertion sets no event there)."""
    def k(x, out):
        src = Tile(TileType.Vec, float32, 2, 8, addr=0)
        t = Tile(TileType.Vec, float32, 2, 8, addr=0x100)
        TLOAD(src, x)
        set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
        wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
        for i in range(2):
            TADDS(t, src, float(i))            # the second write follows the first TPRINT
            TPRINT(t)
        set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
        wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
        TSTORE(out, t)
    x = np.arange(16, dtype=np.float32).reshape(2, 8)
    res = ptopipe.run(aiv=(k, None), args={"x": x, "out": np.zeros_like(x)}, sync="manual")
    np.testing.assert_array_equal(res.outputs["out"], x + 1)
    assert len(res.prints) == 2 and not res.summary.leaks
    capsys.readouterr()


def test_ttrap_stops_at_its_line_and_keeps_the_prints(capsys):
    x = np.zeros((2, 3), np.float32)
    kernels = _printing_kernels(trap=True)
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aiv=kernels, args={"x": x, "y": np.zeros((1, 4), np.int32)})
    e = ei.value
    assert "TTRAP" in e.what and e.where.endswith(f"{HERE}:{line_of(kernels[0], 'TRAP')}"), e
    # the prints issued before the trap come out (AIV0 runs to its trap before AIV1 starts:
    # cores switch when one blocks, and a trap ends the run)
    out = capsys.readouterr().out
    assert out.startswith("TPRINT 2x3\n  0.0000") and out.count("TPRINT 2x3") == 2, out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tprefetch_changes_nothing_but_occupies_mte2(platform):
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)

    def kernel(prefetch):
        def k(x, out):
            t = Tile(TileType.Vec, float32, 64, 32, addr=0)
            if prefetch:
                TPREFETCH(t, x)
            TLOAD(t, x)
            TSTORE(out, t)
        return k
    runs = [ptopipe.run(aiv=(kernel(p), None), args={"x": x, "out": np.zeros_like(x)}, platform=platform)
            for p in (False, True)]
    for r in runs:
        np.testing.assert_array_equal(r["out"], x)
    busy = [r.summary.cores["AIV0"]["busy"]["MTE2"] for r in runs]
    assert busy[1] == 2 * busy[0] > 0


# -- TGATHER / TSCATTER / TSORT32 ----------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float16, np.int32])
def test_gather_and_scatter_by_index(platform, dtype):
    rng = np.random.default_rng(7)
    src = rand(rng, dtype, (8, 32))
    idx = rng.integers(0, 8 * 32, (4, 16)).astype(np.int32)
    # pto-isa's TSCATTER indices are as wide as 4-byte data, 16-bit for 2-byte data (TScatter.hpp)
    perm = rng.permutation(8 * 32)[:4 * 16].reshape(4, 16).astype(np.uint32 if np.dtype(dtype).itemsize == 4
                                                                   else np.uint16)

    def call(o, i):
        TGATHER(o[0], i[0], i[1], o[2])                 # with pto-isa's tmp operand
        TSCATTER(o[1], i[2], i[3])
    got = run_tiles(platform, call, [src, idx, src[:4, :16].copy(), perm],
                    [((4, 16), dtype), np.zeros((8, 32), dtype), ((4, 16), dtype)])
    np.testing.assert_array_equal(got[0], src.reshape(-1)[idx])
    want = np.zeros(8 * 32, dtype)
    want[perm.reshape(-1)] = src[:4, :16].reshape(-1)
    np.testing.assert_array_equal(got[1], want.reshape(8, 32))
    bad = perm.copy()
    bad[1, 2] = 9999
    with pytest.raises(KernelError) as ei:
        run_tiles(platform, lambda o, i: TSCATTER(o[0], i[0], i[1]), [src[:4, :16].copy(), bad],
                  [((8, 32), dtype)])
    assert "index 9999 is outside" in ei.value.what
    for r, c, v in ((2, 5, 8 * 32), (0, 0, -1)):       # the device would read UB past the source
        bad = idx.copy()
        bad[r, c] = v
        gather = lambda o, i: TGATHER(o[0], i[0], i[1])      # noqa: E731
        with pytest.raises(KernelError) as ei:
            run_tiles(platform, gather, [src, bad], [((4, 16), dtype)])
        assert ei.value.what == (f"TGATHER index {v} (for dst element [{r}, {c}]) is outside the 8x32 "
                                 "source tile (256 elements)"), ei.value.what
        assert ei.value.fix.startswith("keep every index in 0 .. 255")
        assert ei.value.where.endswith(f":{gather.__code__.co_firstlineno}"), ei.value.where   # the TGATHER


@pytest.mark.parametrize("platform", PLATFORMS)
def test_scatter_by_index_clears_the_destination_first(platform):
    """TSCATTER's index form zeroes the whole dst tile, then writes the indexed elements (pto-isa's
    a2a3 and a5 TScatter.hpp, InitUBBuffer): what dst held before does not survive."""
    src = np.arange(1, 9, dtype=np.float32).reshape(1, 8)
    idx = np.array([[0, 9, 18, 27, 36, 45, 54, 63]], np.uint32)
    got = run_tiles(platform, lambda o, i: TSCATTER(o[0], i[0], i[1]), [src, idx],
                    [np.full((8, 8), 7.0, np.float32)])[0]
    want = np.zeros(64, np.float32)
    want[idx[0]] = src[0]
    np.testing.assert_array_equal(got, want.reshape(8, 8))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_gather_and_scatter_by_mask_pattern(platform):
    src = np.arange(8 * 32, dtype=np.float32).reshape(8, 32)

    def call(o, i):
        TGATHER(o[0], i[0], MaskPattern.P0101)                          # every other column
        TGATHER(o[1], i[0], MaskPattern.P0010, GatherAxis.GATHER_COL)   # rows 1, 5
        TSCATTER(o[2], o[1], mask_pattern=MaskPattern.P1000, axis=GatherAxis.GATHER_COL)
        TGATHER(o[3], i[0], mask_pattern=MaskPattern.P1000)             # columns 3, 7, ...
    got = run_tiles(platform, call, [src], [((8, 16), np.float32), ((2, 32), np.float32),
                                            ((8, 32), np.float32), ((4, 16), np.int32)])
    np.testing.assert_array_equal(got[0], src[:, 0::2])
    np.testing.assert_array_equal(got[1], src[[1, 5]])
    want = np.zeros((8, 32), np.float32)
    want[[3, 7]] = src[[1, 5]]
    np.testing.assert_array_equal(got[2], want)
    np.testing.assert_array_equal(got[3].reshape(-1)[:64], src[:, 3::4].reshape(-1).view(np.int32))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_sort32_blocks_of_value_index_pairs(platform, dtype):
    rng = np.random.default_rng(8)
    v = rng.integers(-5, 5, (2, 80)).astype(dtype)          # ties: the smaller index first
    idx = np.tile(np.arange(80, dtype=np.uint32), (2, 1)) + 1000
    per = 8 // np.dtype(dtype).itemsize

    def call(o, i):
        TSORT32(o[0], i[0], i[1], o[1])                     # 80 columns: a tail of 16
    got = run_tiles(platform, call, [v, idx], [((2, 80 * per), dtype), ((2, 96), dtype)])[0]
    tuples = got.view(np.uint8).reshape(2, 80, 8)
    for r in range(2):
        for b in range(0, 80, 32):
            pairs = sorted(zip(v[r, b:b + 32].tolist(), idx[r, b:b + 32].tolist()), key=lambda p: (-p[0], p[1]))
            vals = tuples[r, b:b + len(pairs), :np.dtype(dtype).itemsize].copy().view(dtype).reshape(-1)
            ids = tuples[r, b:b + len(pairs), 4:].copy().view(np.uint32).reshape(-1)
            assert vals.tolist() == [p[0] for p in pairs] and ids.tolist() == [p[1] for p in pairs]
    rejects(platform, lambda o, i: TSORT32(o[0], i[0], i[1]), [v, idx], [((2, 80 * per), dtype)],
            "not whole blocks of 32")
    # one index row for every row (pto-isa's idxStride 0 when idx has one valid row)
    shared = run_tiles(platform, call, [v, idx[:1] + 7], [((2, 80 * per), dtype), ((2, 96), dtype)])[0]
    ids = shared.view(np.uint8).reshape(2, 80, 8)[:, :, 4:].copy().view(np.uint32).reshape(2, 80)
    for r in range(2):
        for b in range(0, 80, 32):
            pairs = sorted(zip(v[r, b:b + 32].tolist(), (idx[0, b:b + 32] + 7).tolist()), key=lambda p: (-p[0], p[1]))
            assert ids[r, b:b + len(pairs)].tolist() == [p[1] for p in pairs]


# -- TQUANT / TDEQUANT -----------------------------------------------------------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
def test_int8_quantise_and_dequantise(platform):
    rng = np.random.default_rng(9)
    x = rng.uniform(-3, 3, (8, 32)).astype(np.float32)
    inv = rng.uniform(20, 40, (8, 8)).astype(np.float32)   # the multiplier 1 / scale, per row
    zp = rng.integers(100, 150, (8, 8)).astype(np.float32)

    def call(o, i):
        TQUANT(o[0], i[0], i[1])                            # INT8_SYM
        TQUANT(o[1], i[0], i[1], o[4], i[2])                # INT8_ASYM, with pto-isa's tmp
        TDEQUANT(o[2], o[0], i[3], i[4])
        TDEQUANT(o[3], i[5], i[3], i[2])                    # int16 codes, a zero point
    scale = (1 / inv).astype(np.float32)
    zero = np.zeros_like(zp)
    codes = rng.integers(-300, 300, (8, 32)).astype(np.int16)
    got = run_tiles(platform, call, [x, inv, zp, scale, zero, codes],
                    [((8, 32), np.int8), ((8, 32), np.uint8), ((8, 32), np.float32), ((8, 32), np.float32),
                     ((8, 32), np.float32)], valid={1: (8, 1), 2: (8, 1), 3: (8, 1), 4: (8, 1)})
    q_sym = np.clip(np.rint(x * inv[:, :1]), -128, 127)
    q_asym = np.clip(np.rint(x * inv[:, :1] + zp[:, :1]), 0, 255)
    np.testing.assert_array_equal(got[0], q_sym.astype(np.int8))
    np.testing.assert_array_equal(got[1], q_asym.astype(np.uint8))
    np.testing.assert_allclose(got[2], q_sym * scale[:, :1], rtol=1e-6)
    np.testing.assert_allclose(got[3], (codes - zp[:, :1]) * scale[:, :1], rtol=1e-6)
    np.testing.assert_allclose(got[2], x, atol=0.5 / 20)      # the round trip, within a step
    rejects(platform, lambda o, i: TQUANT(o[0], i[0], i[1]), [x, inv], [((8, 32), np.uint8)],
            "INT8_ASYM writes uint8 with an offset tile")
    u8 = q_asym.astype(np.uint8)                                # pto-isa dequantises S8 / S16 only
    rejects(platform, lambda o, i: TDEQUANT(o[0], i[0], i[1], i[1]), [u8, scale],
            [((8, 32), np.float32)], "TDEQUANT takes", "not uint8")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_mrgsort_merges_sorted_blocks_and_lists(platform):
    rng = np.random.default_rng(10)
    v = rng.permutation(512).astype(np.float32)[:128].reshape(1, 128) - 256    # distinct values
    idx = np.arange(128, dtype=np.uint32).reshape(1, 128)

    def tuples_of(a):
        t = a.view(np.uint8).reshape(-1, 8)
        return t[:, :4].copy().view(np.float32).reshape(-1), t[:, 4:].copy().view(np.uint32).reshape(-1)

    def call(o, i):
        TSORT32(o[0], i[0], i[1])                   # 4 sorted blocks of 32 pairs
        TMRGSORT(o[1], o[0], 64)                    # one 4-way merge: 128 sorted pairs
    got = run_tiles(platform, call, [v, idx], [((1, 256), np.float32)] * 2)
    vals, ids = tuples_of(got[1])
    order = np.argsort(-v[0], kind="stable")
    np.testing.assert_array_equal(vals, v[0, order])
    np.testing.assert_array_equal(ids, order)

    hi = np.sort(rng.uniform(10, 20, 32)).astype(np.float32)[::-1].reshape(1, 32)
    lo = np.sort(rng.uniform(0, 5, 32)).astype(np.float32)[::-1].reshape(1, 32)
    ix = np.arange(32, dtype=np.uint32).reshape(1, 32)
    counts = {}

    def merge(o, i):
        TSORT32(o[0], i[0], i[2])
        TSORT32(o[1], i[1], i[2])
        part = Tile(TileType.Vec, float32, 1, 128, addr=o[3].addr, valid_cols=80)    # 40 pairs
        ex = MrgSortExecutedNumList()
        TMRGSORT(part, ex, o[2], o[1], o[0])         # lo first: ties would go to lo
        counts["all"] = ex
        ex2 = MrgSortExecutedNumList()
        TMRGSORT(o[4], ex2, o[2], o[0], o[1], exhausted=True)
        counts["exhausted"] = ex2
    got = run_tiles(platform, merge, [hi, lo, ix],
                    [((1, 64), np.float32)] * 2 + [((1, 128), np.float32)] * 3)
    vals, _ = tuples_of(got[3][:, :80])
    np.testing.assert_array_equal(vals, np.concatenate([hi[0], lo[0, :8]]))
    assert (counts["all"].mrgSortList0, counts["all"].mrgSortList1) == (8, 32)
    assert (counts["exhausted"].mrgSortList0, counts["exhausted"].mrgSortList1) == (32, 0)
    vals, _ = tuples_of(got[4][:, :64])
    np.testing.assert_array_equal(vals, hi[0])
    rejects(platform, lambda o, i: TMRGSORT(o[1], o[0], 48), [v], [((1, 256), np.float32)] * 2,
            "multiple of 64")

    def wide_lists(o, i):                           # lists declared wider than they hold (topk's tail)
        TSORT32(o[0], i[0], i[2])
        TSORT32(o[1], i[1], i[2])
        a = Tile(TileType.Vec, float32, 1, 128, addr=o[0].addr, valid_cols=64)
        b = Tile(TileType.Vec, float32, 1, 128, addr=o[1].addr, valid_cols=64)
        TMRGSORT(o[3], MrgSortExecutedNumList(), o[2], a, b)     # tmp: 128 columns, the lists' valid total
    got = run_tiles(platform, wide_lists, [hi, lo, ix], [((1, 128), np.float32)] * 4)
    vals, _ = tuples_of(got[3])
    np.testing.assert_array_equal(vals, np.concatenate([hi[0], lo[0]]))
    rejects(platform, lambda o, i: TMRGSORT(o[1], MrgSortExecutedNumList(), o[2], o[0], o[0]), [v],
            [((1, 64), np.float32)] * 3, "tmp has 64 columns; the lists' valid columns total 128")


_TRANDOM_PTO = """module attributes {{pto.target_arch = "a5"}} {{
  func.func @k(%o: !pto.ptr<ui32>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c256 = arith.constant 256 : index
    %k0 = arith.constant 305419896 : i32
    %k1 = arith.constant -1698898192 : i32
    %w0 = arith.constant 16 : i32
    %w1 = arith.constant 32 : i32
    %v = pto.make_tensor_view %o, shape = [%c1, %c256], strides = [%c256, %c1] : !pto.tensor_view<?x?xui32>
    %p = pto.partition_view %v, offsets = [%c0, %c0], sizes = [%c1, %c256] : !pto.tensor_view<?x?xui32> -> !pto.partition_tensor_view<1x256xui32>
    %t = pto.alloc_tile : !pto.tile_buf<loc=vec, dtype=ui32, rows=1, cols=256, v_row=1, v_col=256, blayout=row_major, slayout=none_box, fractal=512, pad=0>
    pto.trandom ins(%k0, %k1, %w0, %w1, %w0, %w1{attr} : i32, i32, i32, i32, i32, i32) outs(%t : !pto.tile_buf<loc=vec, dtype=ui32, rows=1, cols=256, v_row=1, v_col=256, blayout=row_major, slayout=none_box, fractal=512, pad=0>)
    pto.tstore ins(%t : !pto.tile_buf<loc=vec, dtype=ui32, rows=1, cols=256, v_row=1, v_col=256, blayout=row_major, slayout=none_box, fractal=512, pad=0>) outs(%p : !pto.partition_tensor_view<1x256xui32>)
    return
  }}
}}
"""


@pytest.mark.parametrize("rounds", [7, 10, None])
def test_pto_trandom_runs_the_rounds_its_attribute_names(rounds):
    """``pto.trandom ... {rounds = 7 : i32}`` runs 7 Philox rounds (ptoas's default: 10)."""
    attr = "" if rounds is None else f" {{rounds = {rounds} : i32}}"
    res = ptopipe.run_pto(text=_TRANDOM_PTO.format(attr=attr), platform="a5",
                          inputs={"o": np.zeros((1, 256), np.uint32)})
    key, ctr = [305419896, -1698898192 & 0xFFFFFFFF], [16, 32, 16, 32]
    want = _trandom_ref(key, ctr, 1, 256, 256, rounds=rounds or 10)
    np.testing.assert_array_equal(res.outputs["o"], want)
