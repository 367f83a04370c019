"""The ISA layer as a kernel author relies on it: data movement through strided 5-D
GlobalTensor views, cube and vector numerics against numpy, tile misuse reported with
the kernel's file:line, pipe configuration errors at initialisation, protocol errors,
and deadlocks (M1 / M2) reported - never a hang."""
from __future__ import annotations

import os

import numpy as np
import pytest

import ptopipe
from ptopipe import ConfigError, DeadlockError, KernelError, MemoryConflictError, ProtocolError
from ptopipe.isa import *  # noqa: F403
from markers import line_of
from cube_parts import square_acc

HERE = os.path.basename(__file__)


pytestmark = pytest.mark.usefixtures("no_hang")


def assert_where(err, fn, marker):
    assert err.where is not None, err
    assert err.where.endswith(f"{HERE}:{line_of(fn, marker)}"), (err.where, str(err))
    assert f"{HERE}:{line_of(fn, marker)}" in str(err)


def run_aiv(fn, platform="a2a3", **args):
    return ptopipe.run(aiv=(fn, None), args=args, platform=platform)


def run_aic(fn, platform="a2a3", **args):
    return ptopipe.run(aic=fn, args=args, platform=platform)


# --- TLOAD / TSTORE through 5-D GlobalTensor views -----------------------------------------
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_tload_tstore_strided_5d_views(platform):
    rng = np.random.default_rng(1)
    x = rng.integers(-1000, 1000, (16, 64)).astype(np.float32)

    def k(x, gathered, block, out):
        t = Tile(TileType.Vec, float32, 16, 16, addr=0x0)
        # 4 rows x 4 column blocks of 16 -> a 16x16 tile (row = block * 4 + row), as seed 000
        v = GlobalTensor(x.data() + 64, (1, 1, 4, 4, 16), (1, 1, 16, 64, 1))
        TLOAD(t, v)
        TSTORE(GlobalTensor(gathered.data(), (16, 16)), t)
        # a strided 2-D sub-block x[2:6, 8:16]
        b = Tile(TileType.Vec, float32, 4, 8, addr=0x1000)
        TLOAD(b, GlobalTensor(x.data() + 2 * 64 + 8, (4, 8), (64, 1)))
        TSTORE(GlobalTensor(block.data(), (4, 8)), b)
        # scatter the 16x16 tile back through the same 5-D view shape into out rows 8..11
        TSTORE(GlobalTensor(out.data() + 8 * 64, (1, 1, 4, 4, 16), (1, 1, 16, 64, 1)), t)

    res = run_aiv(k, platform, x=x, gathered=np.zeros((16, 16), np.float32),
                  block=np.zeros((4, 8), np.float32), out=np.zeros((16, 64), np.float32))
    want = x[1:5].reshape(4, 4, 16).transpose(1, 0, 2).reshape(16, 16)
    np.testing.assert_array_equal(res["gathered"], want)
    np.testing.assert_array_equal(res["block"], x[2:6, 8:16])
    out = np.zeros((16, 64), np.float32)
    out[8:12] = x[1:5]
    np.testing.assert_array_equal(res["out"], out)


def test_tload_batched_outer_dims_merge_into_rows():
    x = np.arange(2 * 3 * 4 * 8, dtype=np.float32).reshape(2, 3, 4, 8)

    def k(x, out):
        t = Tile(TileType.Vec, float32, 24, 8, addr=0x0)
        TLOAD(t, x)                                       # the (2, 3, 4, 8) argument: 24 x 8
        TMULS(t, t, 2.0)
        TSTORE(out, t)

    res = run_aiv(k, x=x, out=np.zeros((24, 8), np.float32))
    np.testing.assert_array_equal(res["out"], x.reshape(24, 8) * 2)


def test_tstore_acc_converts_to_gm_dtype():
    a = np.random.default_rng(2).integers(-3, 4, (16, 16)).astype(np.float16)

    def k(a, eye, out):
        a1 = Tile(TileType.Mat, float16, 16, 16, addr=0x0)
        e1 = Tile(TileType.Mat, float16, 16, 16, addr=0x200)
        a0 = Tile(TileType.Left, float16, 16, 16, addr=0x0)
        e0 = Tile(TileType.Right, float16, 16, 16, addr=0x0)
        acc = Tile(TileType.Acc, float32, 16, 16, addr=0x0)
        TLOAD(a1, a)
        TLOAD(e1, eye)
        TMOV(a0, a1)
        TMOV(e0, e1)
        TMATMUL(acc, a0, e0)
        TSTORE(out, acc)                                  # f32 accumulator -> f16 GM (FIX)

    res = run_aic(k, a=a, eye=np.eye(16, dtype=np.float16), out=np.zeros((16, 16), np.float16))
    assert res["out"].dtype == np.float16
    np.testing.assert_array_equal(res["out"], a)


def test_tload_out_of_gm_is_reported_with_kernel_line():
    def k(x):
        t = Tile(TileType.Vec, float32, 16, 16, addr=0x0)
        TLOAD(t, GlobalTensor(x.data() + (1 << 24), (16, 16)))  # oob
    with pytest.raises(MemoryConflictError) as ei:
        run_aiv(k, x=np.zeros((16, 16), np.float32))
    assert_where(ei.value, k, "oob")


def _walk(x, out, offsets):
    t = Tile(TileType.Vec, float32, 4, 8, addr=0x0)
    src = GlobalTensor(x.data(), (4, 8), (32, 1))             # 4x8 blocks of a 32-wide matrix
    dst = GlobalTensor(out.data(), (4, 8))
    for i, off in enumerate(offsets):
        src.assign(x.data() + off)
        TLOAD(t, src)  # walk
        dst.assign(out.data() + i * 32)
        TSTORE(dst, t)


def test_moving_one_globaltensor_through_gm_loads_each_tile_and_stops_at_the_end():
    """One GlobalTensor re-pointed by whole rows, by part of a row (a row stride wider
    than the tile): every TLOAD sees exactly its block; one row past GM's end is an error."""
    x = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    offsets = [0, 4 * 32, 4 * 32 + 3, 60 * 32 + 24, 0]           # the last: back to the start
    res = run_aiv(lambda out, x: _walk(x, out, offsets), out=np.zeros((20, 8), np.float32), x=x)
    want = np.concatenate([x[0:4, 0:8], x[4:8, 0:8], x[4:8, 3:11], x[60:64, 24:32], x[0:4, 0:8]])
    np.testing.assert_array_equal(res["out"], want)
    with pytest.raises(MemoryConflictError) as ei:                # x is the last array in GM
        run_aiv(lambda out, x: _walk(x, out, [60 * 32 + 24, 61 * 32 + 24]),
                out=np.zeros((8, 8), np.float32), x=x)
    assert_where(ei.value, _walk, "walk")
    assert "@GM[0x30e0]" in str(ei.value)                          # the offending address


# --- cube numerics -------------------------------------------------------------------------
def _mm_kernel(M, K, N, dt, acc_dt):
    def k(a, b, a2, b2, c, c_acc):
        a_l1 = Tile(TileType.Mat, dt, M, K, addr=0x0)
        b_l1 = Tile(TileType.Mat, dt, K, N, addr=0x10000)
        a_l0 = Tile(TileType.Left, dt, M, K, addr=0x0)
        b_l0 = Tile(TileType.Right, dt, K, N, addr=0x0)
        acc = Tile(TileType.Acc, acc_dt, M, N, addr=0x0)
        acc2 = Tile(TileType.Acc, acc_dt, M, N, addr=0x8000)
        TLOAD(a_l1, a)
        TLOAD(b_l1, b)
        TMOV(a_l0, a_l1)
        TMOV(b_l0, b_l1)
        TMATMUL(acc, a_l0, b_l0)
        TSTORE(c, acc)
        TLOAD(a_l1, a2)
        TLOAD(b_l1, b2)
        TMOV(a_l0, a_l1)
        TMOV(b_l0, b_l1)
        TMATMUL_ACC(acc2, acc, a_l0, b_l0)                # acc2 = a@b + a2@b2
        TSTORE(c_acc, acc2)
    return k


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("dtype", ["f16", "f32", "int8"])
def test_tmatmul_and_acc_match_numpy(dtype, platform):
    M, K, N = 32, 64, 48
    rng = np.random.default_rng(3)
    if dtype == "int8":
        dt, acc_dt = np.int8, np.int32
        mk = lambda s: rng.integers(-128, 128, s).astype(np.int8)  # noqa: E731
    else:
        dt = np.float16 if dtype == "f16" else np.float32
        acc_dt = np.float32
        mk = lambda s: rng.standard_normal(s).astype(dt)  # noqa: E731
    a, b, a2, b2 = mk((M, K)), mk((K, N)), mk((M, K)), mk((K, N))
    res = run_aic(_mm_kernel(M, K, N, np.dtype(dt), np.dtype(acc_dt)), platform, a=a, b=b, a2=a2,
                  b2=b2, c=np.zeros((M, N), acc_dt), c_acc=np.zeros((M, N), acc_dt))
    ref = a.astype(np.float64) @ b.astype(np.float64)
    ref2 = ref + a2.astype(np.float64) @ b2.astype(np.float64)
    if dtype == "int8":
        np.testing.assert_array_equal(res["c"], ref.astype(np.int32))
        np.testing.assert_array_equal(res["c_acc"], ref2.astype(np.int32))
    else:
        np.testing.assert_allclose(res["c"], ref, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(res["c_acc"], ref2, rtol=1e-4, atol=1e-4)
    assert res["c"].dtype == acc_dt


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_tmatmul_takes_m_k_n_from_a_and_b_whatever_c_and_b_rows_say(platform):
    """pto-isa's TMATMUL: m, k, n are a's valid rows and columns and b's valid columns; it reads
    b's first k rows and writes c's first m x n elements - an accumulator of valid 16 x 12 (as
    pypto declares one for a 12-column tail) takes all 16 columns."""
    rng = np.random.default_rng(9)
    a = rng.integers(-5, 6, (16, 16)).astype(np.float32)
    b = rng.integers(-5, 6, (16, 16)).astype(np.float32)

    def k(a, b, c):
        a_l1 = Tile(TileType.Mat, float32, 16, 16, addr=0x0)
        b_l1 = Tile(TileType.Mat, float32, 16, 16, addr=0x1000)
        a_l0 = Tile(TileType.Left, float32, 16, 16, addr=0x0)
        b_l0 = Tile(TileType.Right, float32, 16, 16, addr=0x0)
        acc = Tile(TileType.Acc, float32, 16, 16, addr=0x0, valid_cols=12)
        TLOAD(a_l1, a)
        TLOAD(b_l1, b)
        TMOV(a_l0, a_l1)
        TMOV(b_l0, b_l1)
        b_l0.SetValid(8, 16)
        TMATMUL(acc, a_l0, b_l0)
        acc.SetValid(16, 16)
        TSTORE(c, acc)

    res = ptopipe.run(k, None, dict(a=a, b=b, c=np.zeros((16, 16), np.float32)), platform=platform)
    np.testing.assert_array_equal(res.outputs["c"], a @ b)


@pytest.mark.parametrize("left,right,valid,words", [
    ((16, 32), (16, 16), (16, 32), "m, k, n = 16, 32, 16 (a's valid rows and columns, b's valid columns) "
                                   "but b holds 16 rows and c 16x16"),
    ((16, 4096), (4096, 16), (16, 4096), "pto-isa asserts each is at most 4095"),
])
def test_tmatmul_refuses_what_pto_isa_asserts_and_a_product_past_its_tiles(left, right, valid, words):
    def k():
        a = Tile(TileType.Left, int8, *left, addr=0x0, valid_rows=valid[0], valid_cols=valid[1])
        b = Tile(TileType.Right, int8, *right, addr=0x0)
        c = Tile(TileType.Acc, int32, left[0], right[1], addr=0x0)
        TMATMUL(c, a, b)  # bad
    with pytest.raises(KernelError) as ei:
        run_aic(k)
    assert words in str(ei.value)
    assert_where(ei.value, k, "bad")


def test_textract_takes_a_k_slice():
    rng = np.random.default_rng(4)
    a = rng.integers(-5, 6, (16, 64)).astype(np.float32)
    b = rng.integers(-5, 6, (32, 16)).astype(np.float32)

    def k(a, b, c):
        a_l1 = Tile(TileType.Mat, float32, 16, 64, addr=0x0)
        b_l1 = Tile(TileType.Mat, float32, 32, 16, addr=0x10000)
        a_l0 = Tile(TileType.Left, float32, 16, 32, addr=0x0)
        b_l0 = Tile(TileType.Right, float32, 32, 16, addr=0x0)
        acc = Tile(TileType.Acc, float32, 16, 16, addr=0x0)
        TLOAD(a_l1, a)
        TLOAD(b_l1, b)
        TEXTRACT(a_l0, a_l1, 0, 32)
        TMOV(b_l0, b_l1)
        TMATMUL(acc, a_l0, b_l0)
        TSTORE(c, acc)

    res = run_aic(k, a=a, b=b, c=np.zeros((16, 16), np.float32))
    np.testing.assert_array_equal(res["c"], a[:, 32:] @ b)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_textract_takes_a_block_of_the_accumulator_into_l1(platform):
    """Acc -> Mat through the fixpipe, converting f32 to f16: pto-isa's TEXTRACT has this
    path on both platforms (A2A3's TEXTRACT_TILE_IMPL too, though its ISA page lists Left /
    Right only)."""
    rng = np.random.default_rng(8)
    a = rng.integers(-5, 6, (32, 16)).astype(np.float32)
    b = rng.integers(-5, 6, (16, 32)).astype(np.float32)

    def k(a, b, c):
        a_l1 = Tile(TileType.Mat, float32, 32, 16, addr=0x0)
        b_l1 = Tile(TileType.Mat, float32, 16, 32, addr=0x2000)
        a_l0 = Tile(TileType.Left, float32, 32, 16, addr=0x0)
        b_l0 = Tile(TileType.Right, float32, 16, 32, addr=0x0)
        acc = Tile(TileType.Acc, float32, 32, 32, addr=0x0)
        blk = Tile(TileType.Mat, float16, 16, 16, addr=0x4000)
        TLOAD(a_l1, a)
        TLOAD(b_l1, b)
        TMOV(a_l0, a_l1)
        TMOV(b_l0, b_l1)
        TMATMUL(acc, a_l0, b_l0)
        TEXTRACT(blk, acc, 16, 16)
        TSTORE(c, blk)

    res = ptopipe.run(k, None, dict(a=a, b=b, c=np.zeros((16, 16), np.float16)), platform=platform)
    np.testing.assert_array_equal(res.outputs["c"], (a @ b)[16:, 16:].astype(np.float16))


# --- vector numerics -----------------------------------------------------------------------
X = np.random.default_rng(5).uniform(-4, 4, (16, 32)).astype(np.float32)
Y = np.random.default_rng(6).uniform(0.5, 4, (16, 32)).astype(np.float32)

VEC_CASES = {
    "TADD": (lambda d, x, y, s: TADD(d, x, y), lambda x, y: x + y),
    "TSUB": (lambda d, x, y, s: TSUB(d, x, y), lambda x, y: x - y),
    "TMUL": (lambda d, x, y, s: TMUL(d, x, y), lambda x, y: x * y),
    "TDIV": (lambda d, x, y, s: TDIV(d, x, y), lambda x, y: x / y),
    "TMAX": (lambda d, x, y, s: TMAX(d, x, y), np.maximum),
    "TMIN": (lambda d, x, y, s: TMIN(d, x, y), np.minimum),
    "TADDS": (lambda d, x, y, s: TADDS(d, x, 3.14), lambda x, y: x + np.float32(3.14)),
    "TMULS": (lambda d, x, y, s: TMULS(d, x, -0.5), lambda x, y: x * np.float32(-0.5)),
    "TSUBS": (lambda d, x, y, s: TSUBS(d, x, 2.0), lambda x, y: x - np.float32(2.0)),
    "TMAXS": (lambda d, x, y, s: TMAXS(d, x, 0.25), lambda x, y: np.maximum(x, np.float32(0.25))),
    "TEXP": (lambda d, x, y, s: TEXP(d, x), lambda x, y: np.exp(x)),
    "TLOG": (lambda d, x, y, s: TLOG(d, y), lambda x, y: np.log(y)),
    "TSQRT": (lambda d, x, y, s: TSQRT(d, y), lambda x, y: np.sqrt(y)),
    "TABS": (lambda d, x, y, s: TABS(d, x), lambda x, y: np.abs(x)),
    "TRELU": (lambda d, x, y, s: TRELU(d, x), lambda x, y: np.maximum(x, 0)),
    "TRECIP": (lambda d, x, y, s: TRECIP(d, y), lambda x, y: 1 / y),
    "TEXPANDS": (lambda d, x, y, s: TEXPANDS(d, 7.0), lambda x, y: np.full_like(x, 7.0)),
    # row reductions write column 0 of a one-per-row tile; expand ops broadcast it back
    "TROWSUM+TROWEXPANDSUB": (lambda d, x, y, s: (TROWSUM(s, x), TROWEXPANDSUB(d, x, s)),
                              lambda x, y: x - x.sum(axis=1, keepdims=True)),
    "TROWMAX+TROWEXPANDDIV": (lambda d, x, y, s: (TROWMAX(s, y), TROWEXPANDDIV(d, y, s)),
                              lambda x, y: y / y.max(axis=1, keepdims=True)),
    "TROWMAX+TROWEXPAND": (lambda d, x, y, s: (TROWMAX(s, x), TROWEXPAND(d, s)),
                           lambda x, y: np.repeat(x.max(axis=1, keepdims=True), 32, axis=1)),
    "TROWEXPANDMUL": (lambda d, x, y, s: (TROWMAX(s, y), TROWEXPANDMUL(d, x, s)),
                      lambda x, y: x * y.max(axis=1, keepdims=True)),
}


@pytest.mark.parametrize("name", list(VEC_CASES))
def test_vector_op_matches_numpy(name):
    op, ref = VEC_CASES[name]

    def k(x, y, out):
        tx = Tile(TileType.Vec, float32, 16, 32, addr=0x0)
        ty = Tile(TileType.Vec, float32, 16, 32, addr=0x800)
        td = Tile(TileType.Vec, float32, 16, 32, addr=0x1000)
        ts = Tile(TileType.Vec, float32, 16, 1, addr=0x1800)    # one value per row (DN), as pto-isa's kernels
        TLOAD(tx, x)
        TLOAD(ty, y)
        op(td, tx, ty, ts)
        TSTORE(out, td)

    res = run_aiv(k, x=X, y=Y, out=np.zeros((16, 32), np.float32))
    np.testing.assert_allclose(res["out"], ref(X, Y).astype(np.float32), rtol=1e-6, atol=1e-6)


def test_tcolsum_and_tcvt_match_numpy():
    x = np.random.default_rng(7).integers(-50, 50, (16, 32)).astype(np.float32)

    def k(x, cs, h):
        t = Tile(TileType.Vec, float32, 16, 32, addr=0x0)
        c = Tile(TileType.Vec, float32, 1, 32, addr=0x800)
        f = Tile(TileType.Vec, float16, 16, 32, addr=0x1000)
        TLOAD(t, x)
        TCOLSUM(c, t)
        TSTORE(cs, c)
        TMULS(t, t, 0.5)
        TCVT(f, t)
        TSTORE(h, f)

    res = run_aiv(k, x=x, cs=np.zeros((1, 32), np.float32), h=np.zeros((16, 32), np.float16))
    np.testing.assert_array_equal(res["cs"][0], x.sum(axis=0))
    np.testing.assert_array_equal(res["h"], (x * 0.5).astype(np.float16))


def test_vector_op_valid_region_only():
    x = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)

    def k(x, out):
        t = Tile(TileType.Vec, float32, 16, 32, valid_rows=8, valid_cols=16, addr=0x0)
        TLOAD(t, GlobalTensor(x.data(), (8, 16), (32, 1)))
        TADDS(t, t, 1.0)
        TSTORE(GlobalTensor(out.data(), (8, 16), (32, 1)), t)

    res = run_aiv(k, x=x, out=np.zeros((16, 32), np.float32))
    want = np.zeros((16, 32), np.float32)
    want[:8, :16] = x[:8, :16] + 1
    np.testing.assert_array_equal(res["out"], want)


# --- tile misuse ---------------------------------------------------------------------------
@pytest.mark.parametrize("platform,size", [("a2a3", 192 * 1024), ("a5", 256 * 1024)])
def test_tassign_out_of_range(platform, size):
    def ok():
        Tile(TileType.Vec, float32, 16, 16, addr=size - 1024)     # exactly fits the UB

    def bad():
        t = Tile(TileType.Vec, float32, 16, 16)
        TASSIGN(t, size - 512)  # oob
    run_aiv(ok, platform)
    with pytest.raises(MemoryConflictError) as ei:
        run_aiv(bad, platform)
    assert "outside" in str(ei.value) and "UB" in str(ei.value)
    assert_where(ei.value, bad, "oob")


def test_tassign_misaligned_is_kernel_error():
    def k():
        t = Tile(TileType.Vec, float32, 16, 16)
        TASSIGN(t, 0x10)  # bad
    with pytest.raises(KernelError) as ei:
        run_aiv(k)
    assert_where(ei.value, k, "bad")


def test_wrong_tile_type_for_matmul():
    def k():
        a = Tile(TileType.Mat, float32, 16, 16, addr=0x0)
        b = Tile(TileType.Right, float32, 16, 16, addr=0x0)
        c = Tile(TileType.Acc, float32, 16, 16, addr=0x0)
        TMATMUL(c, a, b)  # bad
    with pytest.raises(KernelError) as ei:
        run_aic(k)
    assert "Left" in str(ei.value)
    assert_where(ei.value, k, "bad")


def test_vector_op_on_cube_tile_is_kernel_error():
    def k():
        a = Tile(TileType.Mat, float32, 16, 16, addr=0x0)
        TADD(a, a, a)  # bad
    with pytest.raises(KernelError) as ei:
        run_aic(k)
    assert "Vec" in str(ei.value)
    assert_where(ei.value, k, "bad")


def test_vec_tile_on_cube_core_is_kernel_error():
    def k():
        Tile(TileType.Vec, float32, 16, 16, addr=0x0)  # bad
    with pytest.raises(KernelError) as ei:
        run_aic(k)
    assert "UB" in str(ei.value)
    assert_where(ei.value, k, "bad")


def test_wrong_dtype():
    def k():
        a = Tile(TileType.Vec, float32, 16, 16, addr=0x0)
        b = Tile(TileType.Vec, float16, 16, 16, addr=0x1000)
        TADD(a, a, b)  # bad
    with pytest.raises(KernelError) as ei:
        run_aiv(k)
    assert "dtype" in str(ei.value)
    assert_where(ei.value, k, "bad")


def test_wrong_acc_dtype_for_int8_matmul():
    def k():
        a = Tile(TileType.Left, int8, 16, 32, addr=0x0)
        b = Tile(TileType.Right, int8, 32, 16, addr=0x0)
        c = Tile(TileType.Acc, float32, 16, 16, addr=0x0)
        TMATMUL(c, a, b)  # bad
    with pytest.raises(KernelError) as ei:
        run_aic(k)
    assert "int32" in str(ei.value)
    assert_where(ei.value, k, "bad")


def test_wrong_shape():
    def k():
        a = Tile(TileType.Vec, float32, 16, 16, addr=0x0)
        b = Tile(TileType.Vec, float32, 16, 32, addr=0x1000)
        TSUB(a, a, b)  # bad
    with pytest.raises(KernelError) as ei:
        run_aiv(k)
    assert "shape" in str(ei.value)
    assert_where(ei.value, k, "bad")


def test_tload_shape_mismatch():
    def k(x):
        t = Tile(TileType.Vec, float32, 16, 32, addr=0x0)
        TLOAD(t, x)  # bad
    with pytest.raises(KernelError) as ei:
        run_aiv(k, x=np.zeros((16, 16), np.float32))
    assert_where(ei.value, k, "bad")


def test_tload_dtype_mismatch():
    def k(x):
        t = Tile(TileType.Vec, float16, 16, 16, addr=0x0)
        TLOAD(t, x)  # bad
    with pytest.raises(KernelError) as ei:
        run_aiv(k, x=np.zeros((16, 16), np.float32))
    assert_where(ei.value, k, "bad")


# --- pipe configuration errors (at initialisation) ------------------------------------------
SL = 16 * 16 * 4


def _cfg_error(kernel, platform="a2a3", protocol="spec", marker="bad", fifo_bytes=16 * SL):
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(aic=kernel, args=dict(fifo=gm_buffer(fifo_bytes)), platform=platform,
                    protocol=protocol)
    assert_where(ei.value, kernel, marker)
    assert ei.value.fix
    return str(ei.value)


def test_flag_ids_out_of_range_spec():
    def k(fifo):
        TPipe(6, DIR_C2V, SL, 4)(fifo)  # bad
    msg = _cfg_error(k)
    assert "6..9" in msg and "8 flags" in msg


def test_flag_ids_out_of_range_pto_isa():
    def k(fifo):
        TPipe(15, DIR_C2V, SL, 4)(fifo)  # bad
    msg = _cfg_error(k, protocol="pto-isa")
    assert "15/16" in msg


def test_bidirectional_pipe_flags_must_fit_both_directions():
    def ok(fifo):
        TPipe(0, DIR_BOTH, SL, 4)(fifo)            # flags 0..3 C2V, 4..7 V2C

    def bad(fifo):
        TPipe(0, DIR_BOTH, SL, 8)(fifo)  # bad
    ptopipe.run(aic=ok, args=dict(fifo=gm_buffer(8 * SL)))
    msg = _cfg_error(bad)
    assert "V2C" in msg and "8..15" in msg


def test_two_pipes_on_one_core_share_a_flag_m4():
    def overlapping(fifo, fifo2):
        TPipe(0, DIR_C2V, SL, 4)(fifo)
        TPipe(2, DIR_C2V, SL, 4)(fifo2)  # bad
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(aic=overlapping, args=dict(fifo=gm_buffer(4 * SL), fifo2=gm_buffer(4 * SL)))
    assert_where(ei.value, overlapping, "bad")
    assert "share flag 2" in str(ei.value)
    # the fix names both pipes' flag ranges by the protocol's own rule (spec: FlagID + tag)
    assert "uses 2..5" in ei.value.fix and "uses 0..3" in ei.value.fix

    def same_id(fifo, fifo2):
        TPipe(0, DIR_C2V, SL, 4)(fifo)
        TPipe(0, DIR_C2V, SL, 4)(fifo2)  # bad
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(aic=same_id, args=dict(fifo=gm_buffer(4 * SL), fifo2=gm_buffer(4 * SL)))
    assert_where(ei.value, same_id, "bad")

    def disjoint(fifo, fifo2):                     # disjoint ranges are fine
        TPipe(0, DIR_C2V, SL, 4)(fifo)
        TPipe(4, DIR_C2V, SL, 4)(fifo2)
    ptopipe.run(aic=disjoint, args=dict(fifo=gm_buffer(4 * SL), fifo2=gm_buffer(4 * SL)))


def test_slot_num_larger_than_flags():
    def k(fifo):
        TPipe(0, DIR_C2V, SL, 9)(fifo)  # bad
    msg = _cfg_error(k)
    assert "SlotNum 9" in msg


def test_a_null_gm_slot_buffer_on_a2a3_says_its_rings_are_in_gm():
    """A null GM_SLOT_BUFFER (nullptr in C++: A5's spelling of a ring in the consumer's memory)
    is refused on A2A3, whose rings are all in GM, saying so."""
    def k(fifo):
        TPipe(0, DIR_C2V, SL, 4)(None, 0x10000, 0)  # bad
    msg = _cfg_error(k)
    assert "got a null pointer (nullptr / None)" in msg and "every TPipe ring is in GM on A2A3" in msg


def test_ring_not_fitting_gm_slot_buffer():
    def k(fifo):
        TPipe(0, DIR_C2V, SL, 8)(fifo)  # bad
    msg = _cfg_error(k, fifo_bytes=4 * SL)
    assert "GM_SLOT_BUFFER" in msg


@pytest.mark.parametrize("direction,space", [(DIR_C2V, "UB"), (DIR_V2C, "L1")])
def test_ring_not_fitting_consumer_memory_a5(direction, space):
    def k(fifo):
        TPipe(0, direction, 64 * 1024, 8)(fifo, 0x1000, 0x1000)  # bad
    msg = _cfg_error(k, platform="a5")
    assert "does not fit" in msg and space in msg


def test_ring_overlapping_a_tile_a5():
    """A ring over a tile (slot 2 of the ring at 0x7800 is the tile's bytes) is no error by
    itself; reading the tile after the ring wrote it is, at the read, naming the push."""
    def cube(x, fifo, pushes):
        pipe = TPipe(0, DIR_C2V, SL, 4, peers=(0,))(fifo, 0x7800, 0)
        acc = square_acc(x)
        for _ in range(pushes):
            TPUSH(pipe, acc)  # push

    def k(x, out, fifo, pushes):
        t = Tile(TileType.Vec, float32, 16, 16, addr=0x8000)
        TLOAD(t, x)
        pipe = TPipe(0, DIR_C2V, SL, 4, peers=(0,))(fifo, 0x7800, 0)
        p = Tile(TileType.Vec, float32, 16, 16)
        for _ in range(pushes):
            TPOP(pipe, p)
            TFREE(pipe)
        TSTORE(out, t)  # bad
    x = np.eye(16, dtype=np.float32) * 2
    args = dict(x=x, out=np.zeros_like(x), fifo=gm_buffer(4 * SL))
    res = ptopipe.run(cube, (k, None), args=dict(args, pushes=2), platform="a5")
    np.testing.assert_array_equal(res.outputs["out"], x)            # slots 0 and 1 only
    with pytest.raises(MemoryConflictError) as ei:
        ptopipe.run(cube, (k, None), args=dict(args, pushes=3), platform="a5")
    assert "overwrote" in str(ei.value) and f"{HERE}:{line_of(cube, 'push')}" in ei.value.what
    assert_where(ei.value, k, "bad")


def test_a_tile_in_the_ring_unordered_with_a_push_a5():
    """A tile in slot 1's bytes, written and read by AIV0 after its binding posted the slot's
    free credit: the simulator happens to run the Cube's push of slot 1 after the read, but no
    flag orders them - on the device the push may land in between (a race, reported)."""
    def cube(x, fifo):
        pipe = TPipe(0, DIR_C2V, SL, 2, peers=(0,))(fifo, 0x8000, 0)
        acc = square_acc(x)
        for _ in range(2):
            TPUSH(pipe, acc)  # push

    def k(x, out, fifo):
        w = Tile(TileType.Vec, float32, 16, 16, addr=0x8000 + SL)      # slot 1's bytes
        pipe = TPipe(0, DIR_C2V, SL, 2, peers=(0,))(fifo, 0x8000, 0)
        t = Tile(TileType.Vec, float32, 16, 16)
        TLOAD(w, x)
        TSTORE(out, w)  # read
        for _ in range(2):
            TPOP(pipe, t)
            TFREE(pipe)
    x = np.eye(16, dtype=np.float32)
    with pytest.raises(MemoryConflictError) as ei:
        ptopipe.run(cube, (k, None), args=dict(x=x, out=np.zeros_like(x), fifo=gm_buffer(2 * SL)), platform="a5")
    e = ei.value
    assert "shares bytes with slot 1" in e.what and "no flag of the pipe orders it" in e.what
    assert f"{HERE}:{line_of(k, 'read')}" in e.details and f"{HERE}:{line_of(cube, 'push')}" in e.details
    # reported at the tile's use (the push, met second, is correct code), naming where the tile was placed
    assert_where(e, k, "read")
    placed = e.details.splitlines()[0]
    assert placed.startswith("the tile was assigned at ") and placed.endswith(f"{HERE}:{line_of(k, 'slot 1' + chr(39) + 's bytes')}"), placed
    # without the race checker the run goes by the simulator's order: no report
    ptopipe.run(cube, (k, None), args=dict(x=x, out=np.zeros_like(x), fifo=gm_buffer(2 * SL)), platform="a5",
                checks=False)


def test_a_cube_tile_in_the_v2c_ring_unordered_with_a_push_a5():
    """The Cube's Mat tile placed in slot 1 of the V2C ring in L1, loaded before the Vector's
    pushes: the race is reported at the Cube's TLOAD, naming where the tile was placed - not
    at the Vector's TPUSH (correct code of the other core), whichever the run met second."""
    def vec(x, fifo):
        pipe = TPipe(0, DIR_V2C, SL, 2, peers=(0,))(fifo, 0, 0x8000)
        t = Tile(TileType.Vec, float32, 16, 16, addr=0)
        TLOAD(t, x)
        for _ in range(2):
            TPUSH(pipe, t)  # push

    def cube(y, fifo):
        pipe = TPipe(0, DIR_V2C, SL, 2, peers=(0,))(fifo, 0, 0x8000)
        m = Tile(TileType.Mat, float32, 16, 16)
        TASSIGN(m, 0x8000 + SL)  # in the ring
        TLOAD(m, y)  # load
        p = Tile(TileType.Mat, float32, 16, 16)
        for _ in range(2):
            TPOP(pipe, p)
            TFREE(pipe)
    x = np.eye(16, dtype=np.float32)
    with pytest.raises(MemoryConflictError) as ei:
        ptopipe.run(cube, (vec, None), args=dict(x=x, y=2 * x, fifo=gm_buffer(2 * SL)), platform="a5")
    e = ei.value
    assert "AIC's TLOAD writes a tile that shares bytes with slot 1 of V2C pipe" in e.what, e.what
    assert_where(e, cube, "load")
    assert e.details.splitlines()[0].endswith(f"{HERE}:{line_of(cube, 'in the ring')}"), e.details
    assert f"{HERE}:{line_of(vec, 'push')}" in e.details


@pytest.mark.parametrize("mask", [0, 4, 5, 7])
def test_invalid_dir_mask(mask):
    def k(fifo):
        aic_initialize_pipe(mask, SL, fifo)  # bad
    msg = _cfg_error(k)
    assert "DIR_MASK" in msg


def test_initialize_pipe_slot_num_from_dir_mask():
    def k(fifo):
        uni = aic_initialize_pipe(DIR_C2V, SL, fifo, peers=(0,))
        assert uni.c2v.slot_num == 8 and uni.v2c is None
    ptopipe.run(aic=k, args=dict(fifo=gm_buffer(16 * SL)))

    def k2(fifo):
        bi = aic_initialize_pipe(DIR_C2V | DIR_V2C, SL, fifo)
        assert bi.c2v.slot_num == 4 and bi.v2c.slot_num == 4
        assert bi.v2c.gm_base == bi.c2v.gm_base + 4 * SL      # C2V ring, then V2C ring
    ptopipe.run(aic=k2, args=dict(fifo=gm_buffer(16 * SL)))


@pytest.mark.parametrize("direction", [DIR_C2V_GM, DIR_V2C_GM, DIR_BOTH_GM])
def test_gm_direction_on_a2a3(direction):
    def k(fifo):
        TPipe(0, direction, SL, 2)(fifo)  # bad
    msg = _cfg_error(k)
    assert "A5-only" in msg

    def ok(fifo):
        TPipe(0, direction, SL, 2)(fifo)
    ptopipe.run(aic=ok, args=dict(fifo=gm_buffer(8 * SL)), platform="a5")


def test_producer_and_consumer_disagree_on_slot_size():
    def c(fifo):
        TPipe(0, DIR_C2V, SL, 4, peers=(0,))(fifo)

    def v(fifo):
        TPipe(0, DIR_C2V, 2 * SL, 4, peers=(0,))(fifo)  # bad
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(aic=c, aiv=(v, None), args=dict(fifo=gm_buffer(16 * SL)))
    assert "SlotSize" in str(ei.value)
    assert_where(ei.value, v, "bad")


# --- protocol errors -----------------------------------------------------------------------
def _producer(n=1, flag=0, rows=16, slot_num=4):
    def c(fifo):
        p = TPipe(flag, DIR_C2V, SL, slot_num, peers=(0,))(fifo, 0x8000, 0)
        acc = Tile(TileType.Acc, float32, rows, 16, addr=0x0)
        for _ in range(n):
            TPUSH(p, acc)  # push
    return c


def _consumer(n=1, flag=0, free=True, ring=0x8000, slot_num=4):
    def v(fifo):
        p = TPipe(flag, DIR_C2V, SL, slot_num, peers=(0,))(fifo, ring, 0)
        t = Tile(TileType.Vec, float32, 16, 16)
        for _ in range(n):
            TPOP(p, t)  # pop
            if free:
                TFREE(p)
    return v


BOTH = [(pl, pr) for pl in ("a2a3", "a5") for pr in ("spec", "pto-isa")]


@pytest.mark.parametrize("platform,protocol", BOTH)
def test_pushed_tile_larger_than_slot_m6(platform, protocol):
    c = _producer(rows=32)
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(aic=c, aiv=(_consumer(), None), args=dict(fifo=gm_buffer(8 * SL)),
                    platform=platform, protocol=protocol)
    assert "does not fit SlotSize" in str(ei.value)
    assert_where(ei.value, c, "push")


@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a5", "spec"), ("a5", "pto-isa")])
def test_tfree_with_nothing_held(platform, protocol):
    def v(fifo):
        p = TPipe(0, DIR_C2V, SL, 4, peers=(0,))(fifo, 0x8000, 0)
        t = Tile(TileType.Vec, float32, 16, 16)
        TPOP(p, t)
        TFREE(p)
        TFREE(p)  # bad
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(aic=_producer(), aiv=(v, None), args=dict(fifo=gm_buffer(8 * SL)),
                    platform=platform, protocol=protocol)
    assert "no held slot" in str(ei.value)
    assert_where(ei.value, v, "bad")


def test_tfree_is_a_noop_after_tile_tpop_in_pto_isa_a2a3():
    """pto-isa on A2A3: the tile TPOP frees inside; the tile TFREE does nothing (seed 002)."""
    def v(fifo):
        p = TPipe(0, DIR_C2V, SL, 4, peers=(0,))(fifo, 0x8000, 0)
        t = Tile(TileType.Vec, float32, 16, 16)
        for _ in range(6):
            TPOP(p, t)                                # no TFREE at all
    res = ptopipe.run(aic=_producer(n=6), aiv=(v, None), args=dict(fifo=gm_buffer(8 * SL)),
                      protocol="pto-isa")
    (pipe,) = res.summary.pipes
    assert pipe["pushes"] == pipe["pops"] == 6 and pipe["frees"] == 0     # TFREE instructions: none


def test_run_summary_counts_each_pipe_transaction_once():
    """pushes / pops / frees per pipe: a TALLOCed slot counts as pushed at its TPUSH."""
    def c(fifo):
        p = TPipe(0, DIR_C2V, SL, 4, peers=(0,))(fifo, 0x8000, 0)
        acc = Tile(TileType.Acc, float32, 16, 16, addr=0x0)
        for _ in range(5):
            slot = GlobalTensor(float32, (16, 16))
            TALLOC(p, slot)
            TSTORE(slot, acc)
            TPUSH(p, slot)
        TPUSH(p, acc)                                  # and one tile-flow push
    seen = {}

    def v(fifo):
        p = TPipe(0, DIR_C2V, SL, 4, peers=(0,))(fifo, 0x8000, 0)
        t = Tile(TileType.Vec, float32, 16, 16)
        for _ in range(6):
            TPOP(p, t)
            TFREE(p)
        seen["pipe"] = p.c2v
    res = ptopipe.run(aic=c, aiv=(v, None), args=dict(fifo=gm_buffer(8 * SL)))
    (pipe,) = res.summary.pipes
    assert (pipe["pushes"], pipe["pops"], pipe["frees"]) == (6, 6, 6)
    ch = seen["pipe"]
    assert (ch.pushes, ch.pops, ch.frees) == (6, 6, 6)


def test_pop_beyond_pushes_is_reported():
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(aic=_producer(n=1), aiv=(_consumer(n=2), None), args=dict(fifo=gm_buffer(8 * SL)))
    assert "AIV0" in str(ei.value) and "ready" in str(ei.value)


# --- deadlocks -----------------------------------------------------------------------------
@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a5", "spec"), ("a5", "pto-isa")])
def test_consumer_never_frees_m1_is_a_deadlock(platform, protocol):
    """The consumer takes SlotNum tiles, never TFREEs and returns: the producer's next TPUSH
    waits for free[0] forever.  Reported at once at the consumer's TPOP (the party that
    stopped), naming the blocked producer and its flag too."""
    c = _producer(n=5)
    v = _consumer(n=4, free=False)
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(aic=c, aiv=(v, None), args=dict(fifo=gm_buffer(8 * SL)),
                    platform=platform, protocol=protocol)
    msg = str(ei.value)
    assert "AIC" in msg and "TPUSH" in msg
    assert "flag" in msg and "free" in msg
    fid = 0 if protocol == "spec" else 1            # spec: free[0] = FlagID; pto-isa: FlagID + 1
    assert f"flag {fid} (AIV0->AIC)" in msg or f"flag {fid} AIV0->AIC" in msg
    assert "TFREE" in msg
    assert_where(ei.value, v, "pop")
    assert ei.value.what.startswith("deadlock: AIV0 returned holding slot 0")
    assert f"{HERE}:{line_of(c, 'push')}" in msg


def test_consumer_loop_without_tfree_is_reported_spec():
    """The M1 loop itself (pop every tile, never TFREE) does not run to completion under
    the spec protocol: it is reported (a pop past SlotNum held slots, or the deadlock)."""
    with pytest.raises((DeadlockError, ProtocolError)) as ei:
        ptopipe.run(aic=_producer(n=12), aiv=(_consumer(n=12, free=False), None),
                    args=dict(fifo=gm_buffer(8 * SL)))
    assert "TFREE" in str(ei.value)


@pytest.mark.parametrize("platform,protocol", BOTH)
def test_mismatched_flag_ids_m2_is_a_deadlock(platform, protocol):
    # on A5 each FlagID is its own ring in the AIV's UB: place them apart (else: overlap error)
    v = _consumer(n=2, flag=4, ring=0x8000 if platform == "a2a3" else 0xC000)
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(aic=_producer(n=2, flag=0), aiv=(v, None), args=dict(fifo=gm_buffer(8 * SL)),
                    platform=platform, protocol=protocol)
    msg = str(ei.value)
    assert "AIV0" in msg and "TPOP" in msg
    assert "flag 4" in msg                           # the consumer waits on its own FlagID 4
    if protocol == "spec":                           # both sides block: both flags are named
        assert "AIC" in ei.value.what and "flag 0" in msg
    assert f"{HERE}:{line_of(v, 'pop')}" in msg


def test_deadlock_when_nobody_pushes_names_every_blocked_core():
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(aic=_producer(n=0), aiv=(_consumer(n=1), None), args=dict(fifo=gm_buffer(8 * SL)))
    assert "AIV0" in ei.value.what
    assert "AIC" in str(ei.value)


def test_event_tokens_and_tsync():
    x = np.ones((16, 16), np.float32)

    def k(x, out):
        t = Tile(TileType.Vec, float32, 16, 16, addr=0x0)
        e = TLOAD(t, x)
        TSYNC(e)
        e2 = TADDS(t, t, 1.0, e)
        TSYNC(Op.TADDS)
        TSTORE(out, t, e2)

    res = run_aiv(k, x=x, out=np.zeros((16, 16), np.float32))
    np.testing.assert_array_equal(res["out"], x + 1)

    def bad():
        TSYNC(Op.TMOV_M2V)  # bad
    with pytest.raises(KernelError) as ei:
        run_aiv(bad)
    assert_where(ei.value, bad, "bad")
    assert "has no pipe of its own" in ei.value.what


def test_tsync_of_an_op_is_a_barrier_of_its_pipe_where_pto_isa_has_one():
    """TSYNC<Op>() is pto-isa's pipe_barrier of the op's pipe (OpPipeEntry): A2A3 takes every
    pipe, A5 MTE2 / MTE3 only (its TSYNC_IMPL static-asserts so: no vector-op barrier); a
    barrier of one pipe orders no other pipe in manual sync."""
    x = np.ones((16, 16), np.float32)

    def k(x, out):
        t = Tile(TileType.Vec, float32, 16, 16, addr=0x0)
        TLOAD(t, x)
        TSYNC(Op.TLOAD)
        TADDS(t, t, 1.0)  # after-barrier
        TSTORE(out, t)
    res = run_aiv(k, x=x, out=np.zeros((16, 16), np.float32))
    np.testing.assert_array_equal(res["out"], x + 1)
    with pytest.raises(ptopipe.errors.DataRaceError) as ei:      # MTE2 only: the add still races
        ptopipe.run(aiv=(k, None), args=dict(x=x, out=np.zeros((16, 16), np.float32)), sync="manual")
    assert_where(ei.value, k, "after-barrier")

    def on_a5():
        TSYNC(Op.TMATMUL)  # a5-barrier
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aic=on_a5, platform="a5")
    assert_where(ei.value, on_a5, "a5-barrier")
    assert "takes ops of MTE2 / MTE3 only, not M" in ei.value.what

    def vector_barrier(x, out):
        t = Tile(TileType.Vec, float32, 16, 16, addr=0x0)
        TLOAD(t, x)
        TADDS(t, t, 1.0)
        TSYNC(Op.TADDS)  # a5-vector-barrier
        TSTORE(out, t)
    args = dict(x=x, out=np.zeros((16, 16), np.float32))
    res = ptopipe.run(aiv=(vector_barrier, None), args=dict(args), platform="a2a3")
    np.testing.assert_array_equal(res["out"], x + 1)
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aiv=(vector_barrier, None), args=dict(args), platform="a5")
    assert_where(ei.value, vector_barrier, "a5-vector-barrier")
    assert "TSYNC<TADDS>() is no barrier on a5" in ei.value.what and "not V" in ei.value.what
    assert "include/pto/npu/a5/TSync.hpp:29" in ei.value.fix


# --- the deferred data plane ---------------------------------------------------------------
def test_tile_array_shows_every_instruction_issued_before_it():
    """Instructions queue their numpy work; reading ``.array`` applies it first, so a kernel
    (or a debugger) always sees the data of every instruction issued so far."""
    seen = []

    def k(x):
        t = Tile(TileType.Vec, float32, 16, 16, addr=0x0)
        u = Tile(TileType.Vec, float32, 16, 16, addr=0x400)
        TLOAD(t, x)
        seen.append(t.array.copy())
        TADDS(u, t, 1.0)
        TMULS(t, u, 2.0)
        seen.append(t.array.copy())
        t.array[0, 0] = -5.0                        # a write through the view, then more work
        TADD(u, t, t)
        seen.append(u.array.copy())
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    run_aiv(k, x=x)
    np.testing.assert_array_equal(seen[0], x)
    np.testing.assert_array_equal(seen[1], (x + 1) * 2)
    want = (x + 1) * 4
    want[0, 0] = -10.0
    np.testing.assert_array_equal(seen[2], want)


@pytest.mark.parametrize("timing", [True, False])
def test_queued_data_operations_stay_bounded_in_a_long_kernel(timing):
    from ptopipe.isa.context import current_core
    from ptopipe.sim.core import SYNC_EVERY
    longest = []

    def k(x, out):
        t = Tile(TileType.Vec, float32, 8, 8, addr=0x0)
        TLOAD(t, x)
        pending = current_core().cluster.pending
        for i in range(5 * SYNC_EVERY):
            TADDS(t, t, 1.0)
            longest.append(len(pending))
        TSTORE(out, t)
    x = np.zeros((8, 8), np.float32)
    res = ptopipe.run(aiv=(k, None), args=dict(x=x, out=np.zeros_like(x)), timing=timing)
    np.testing.assert_array_equal(res["out"], x + 5 * SYNC_EVERY)    # applied in order, all of it
    assert 0 < max(longest) <= SYNC_EVERY + 1 and min(longest[SYNC_EVERY:]) < SYNC_EVERY


def test_tload_tstore_through_unmergeable_5d_views_into_a_partial_valid_region():
    """A 5-D GlobalTensor whose rows cannot be merged (outer stride != rows x row stride)
    moves data into / out of a tile whose valid region is not contiguous."""
    def k(x, out):
        t = Tile(TileType.Vec, float32, 8, 16, valid_cols=8, addr=0x0)
        u = Tile(TileType.Vec, float32, 8, 16, valid_cols=8, addr=0x400)
        src = GlobalTensor(x.data(), (2, 4, 8), (100, 8, 1))    # 2 blocks of 4x8, 100 apart
        dst = GlobalTensor(out.data(), (2, 4, 8), (64, 8, 1))
        TLOAD(t, src)
        TADDS(u, t, 1.0)
        TSTORE(dst, u)                                         # reads u's queued result
    x = np.arange(200, dtype=np.float32)
    res = run_aiv(k, x=x, out=np.zeros(128, np.float32))
    blocks = [x[o:o + 32].reshape(4, 8) for o in (0, 100)]
    want = np.zeros(128, np.float32)
    want[0:32] = blocks[0].ravel() + 1
    want[64:96] = blocks[1].ravel() + 1
    np.testing.assert_array_equal(res["out"], want)
