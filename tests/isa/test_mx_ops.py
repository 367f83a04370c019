"""The MX matmuls (TMATMUL_MX, TGEMV_MX; A5 only) against numpy: fp8 (e4m3, e5m2) and fp4
(e2m1) operands with e8m0 block scales per 32 values of K, the plain, accumulating and biased
forms, the float32 accumulation in k order exactly as pto-isa's CPU model sums, and the
refusals (A2A3, scale tiles of another type / dtype / shape, K not a multiple of 64)."""
from __future__ import annotations

import numpy as np
import pytest

import ptopipe
from ptopipe import KernelError
from ptopipe.isa import *  # noqa: F403

pytestmark = pytest.mark.usefixtures("no_hang")
F32 = np.float32


def golden(a, sa, b, sb, c_in=None, bias=None):
    """sum_k a[i, k] b[k, j] 2^(sa - 127) 2^(sb - 127), each term in double, summed in k order
    into a float32 (pto-isa's CPU model); the scales decoded from their raw exponent bytes."""
    ea = sa.view(np.uint8).astype(np.int64) - 127
    eb = sb.view(np.uint8).astype(np.int64) - 127
    A, B = a.astype(np.float64), b.astype(np.float64)
    acc = np.zeros((a.shape[0], b.shape[1]), F32)
    for k in range(a.shape[1]):
        scale = np.ldexp(1.0, ea[:, k // 32][:, None] + eb[k // 32][None, :])
        acc = (acc.astype(np.float64) + np.outer(A[:, k], B[k]) * scale).astype(F32)
    if c_in is not None:
        acc = c_in + acc
    if bias is not None:
        acc = acc + bias
    return acc


def data(rng, adt, bdt, m=16, k=128, n=16):
    a = rng.uniform(-6, 6, (m, k)).astype(adt)
    b = rng.uniform(-6, 6, (k, n)).astype(bdt)
    sa = rng.integers(118, 136, (m, k // 32)).astype(np.uint8).view(float8_e8m0)
    sb = rng.integers(118, 136, (k // 32, n)).astype(np.uint8).view(float8_e8m0)
    return a, sa, b, sb


def run_mx(platform, body, a, sa, b, sb, extra=None):
    """Load the operands to L1, TMOV them to Left / Right / ScaleLeft / ScaleRight, then
    ``body(la, ls, rb, rs, gm)``; returns the stored outputs."""
    m, k = a.shape
    n = b.shape[1]

    def kern(A, B, SA, SB, **gm):
        ta, tb = Tile(TileType.Mat, a.dtype, m, k, addr=0), Tile(TileType.Mat, b.dtype, k, n, addr=0x4000)
        tsa = Tile(TileType.Mat, float8_e8m0, m, k // 32, addr=0x8000)
        tsb = Tile(TileType.Mat, float8_e8m0, k // 32, n, addr=0x8400)
        for t, g in ((ta, A), (tb, B), (tsa, SA), (tsb, SB)):
            TLOAD(t, g)
        la, rb = Tile(TileType.Left, a.dtype, m, k, addr=0), Tile(TileType.Right, b.dtype, k, n, addr=0)
        ls = Tile(TileType.ScaleLeft, float8_e8m0, m, k // 32, addr=0)
        rs = Tile(TileType.ScaleRight, float8_e8m0, k // 32, n, addr=0)
        TMOV(la, ta)
        TMOV(rb, tb)
        TMOV(ls, tsa)
        TMOV(rs, tsb)
        body(la, ls, rb, rs, gm)
    args = dict(A=a, B=b, SA=sa, SB=sb) | (extra or {})
    return ptopipe.run(aic=kern, args=args, platform=platform).outputs


@pytest.mark.parametrize("adt,bdt", [(float8_e4m3, float8_e4m3), (float8_e5m2, float8_e4m3),
                                     (float4_e2m1, float4_e2m1), (float4_e2m1, float8_e5m2)])
def test_matmul_mx_three_forms(adt, bdt):
    rng = np.random.default_rng(2)
    a, sa, b, sb = data(rng, adt, bdt)
    bias = rng.uniform(-1, 1, (1, 16)).astype(F32)

    def body(la, ls, rb, rs, gm):
        c = Tile(TileType.Acc, float32, 16, 16, addr=0)
        c2 = Tile(TileType.Acc, float32, 16, 16, addr=0x400)
        c3 = Tile(TileType.Acc, float32, 16, 16, addr=0x800)
        tbias = Tile(TileType.Mat, float32, 1, 16, addr=0x9000)
        bt = Tile(TileType.Bias, float32, 1, 16, addr=0)
        TLOAD(tbias, gm["bias"])
        TMOV(bt, tbias)
        TMATMUL_MX(c, la, ls, rb, rs)
        TMATMUL_MX(c2, c, la, ls, rb, rs)                # c2 = c + a @ b
        TMATMUL_MX(c3, la, ls, rb, rs, bt)
        for t, o in ((c, "o"), (c2, "o2"), (c3, "o3")):
            TSTORE(gm[o], t)
    z = np.zeros((16, 16), F32)
    got = run_mx("a5", body, a, sa, b, sb, dict(bias=bias, o=z, o2=z, o3=z))
    want = golden(a, sa, b, sb)
    np.testing.assert_array_equal(got["o"], want)
    np.testing.assert_array_equal(got["o2"], golden(a, sa, b, sb, c_in=want))
    np.testing.assert_array_equal(got["o3"], golden(a, sa, b, sb, bias=bias))
    exact = (a.astype(np.float64) * np.repeat(sa.astype(np.float64), 32, 1)) @ \
        (b.astype(np.float64) * np.repeat(sb.astype(np.float64), 32, 0))
    np.testing.assert_allclose(got["o"], exact, rtol=0, atol=1e-6 * np.abs(exact).max())


def test_gemv_mx_one_row():
    rng = np.random.default_rng(3)
    a, sa, b, sb = data(rng, float8_e5m2, float8_e5m2, m=1, k=64, n=32)

    def body(la, ls, rb, rs, gm):
        c = Tile(TileType.Acc, float32, 1, 32, addr=0)
        TGEMV_MX(c, la, ls, rb, rs)
        TSTORE(gm["o"], c)
    got = run_mx("a5", body, a, sa, b, sb, dict(o=np.zeros((1, 32), F32)))
    np.testing.assert_array_equal(got["o"], golden(a, sa, b, sb))


def test_refusals():
    rng = np.random.default_rng(4)
    a, sa, b, sb = data(rng, float8_e4m3, float8_e4m3, k=64)
    o = {"o": np.zeros((16, 16), F32)}

    def wrong_scale_dtype(la, ls, rb, rs, gm):
        f16 = Tile(TileType.ScaleLeft, float16, 16, 2, addr=0x200)
        TMATMUL_MX(Tile(TileType.Acc, float32, 16, 16, addr=0), la, f16, rb, rs)

    def scaling_scale(la, ls, rb, rs, gm):        # ptoas's spelling: a Scaling tile of a's shape
        sc = Tile(TileType.Scaling, float16, 16, 64, addr=0)
        TMATMUL_MX(Tile(TileType.Acc, float32, 16, 16, addr=0), la, sc, rb, rs)

    def short_scale(la, ls, rb, rs, gm):
        one = Tile(TileType.ScaleRight, float8_e8m0, 2, 16, addr=0x200, valid_rows=1)
        TMATMUL_MX(Tile(TileType.Acc, float32, 16, 16, addr=0), la, ls, rb, one)

    def f16_operand(la, ls, rb, rs, gm):
        lh = Tile(TileType.Left, float16, 16, 64, addr=0x2000)
        TMATMUL_MX(Tile(TileType.Acc, float32, 16, 16, addr=0), lh, ls, rb, rs)

    def not_gemv(la, ls, rb, rs, gm):
        TGEMV_MX(Tile(TileType.Acc, float32, 16, 16, addr=0), la, ls, rb, rs)
    for body, what in ((wrong_scale_dtype, "ScaleLeft tile of float8_e8m0fnu"),
                       (scaling_scale, "a_scale is Scaling"), (short_scale, "it needs 2x16"),
                       (f16_operand, "the MX unit takes"), (not_gemv, "one row (m = 1)")):
        with pytest.raises(KernelError) as e:
            run_mx("a5", body, a, sa, b, sb, o)
        assert what in str(e.value), (what, str(e.value))
        assert "test_mx_ops.py" in e.value.where
    # K = 32 (pto-isa: a's columns a multiple of 64)
    a32, sa32, b32, sb32 = data(rng, float8_e4m3, float8_e4m3, k=32)
    with pytest.raises(KernelError) as e:
        run_mx("a5", lambda la, ls, rb, rs, gm: TMATMUL_MX(Tile(TileType.Acc, float32, 16, 16, addr=0),
                                                           la, ls, rb, rs), a32, sa32, b32, sb32, o)
    assert "a multiple of 64" in e.value.what


def test_a2a3_has_no_mx_unit():
    def k():
        a = Tile(TileType.Left, float8_e4m3, 16, 64, addr=0)
        b = Tile(TileType.Right, float8_e4m3, 64, 16, addr=0)
        TMATMUL_MX(Tile(TileType.Acc, float32, 16, 16, addr=0), a, a, b, b)
    with pytest.raises(KernelError) as e:
        ptopipe.run(aic=k, platform="a2a3")
    assert "TMATMUL_MX is not implemented on A2A3 (pto-isa has it on A5 only)" in e.value.what


def test_get_scale_addr_binds_the_scales_of_an_operand():
    """ScaleLeft / ScaleRight at the Left / Right tile's address >> 4: the scales moved there
    are the ones TMATMUL_MX reads; a ScaleLeft tile for a Right tile is refused."""
    rng = np.random.default_rng(5)
    a, sa, b, sb = data(rng, float8_e4m3, float8_e5m2, k=64)
    got = run_mx("a5", _scaled, a, sa, b, sb, dict(o=np.zeros((16, 16), F32)))
    np.testing.assert_array_equal(got["o"], golden(a, sa, b, sb))

    def crossed(la, ls, rb, rs, gm):
        TGET_SCALE_ADDR(Tile(TileType.ScaleLeft, float8_e8m0, 16, 2), rb)
    with pytest.raises(KernelError) as e:
        run_mx("a5", crossed, a, sa, b, sb)
    assert "TGET_SCALE_ADDR binds a ScaleLeft tile to a Left tile's scales" in e.value.what


def _scaled(la, ls, rb, rs, gm):
    """TMATMUL_MX with scale tiles bound by TGET_SCALE_ADDR to fresh Left / Right copies."""
    la2 = Tile(TileType.Left, float8_e4m3, 16, 64, addr=0x1000)
    rb2 = Tile(TileType.Right, float8_e5m2, 64, 16, addr=0x2000)
    TMOV(la2, Tile(TileType.Mat, float8_e4m3, 16, 64, addr=0))
    TMOV(rb2, Tile(TileType.Mat, float8_e5m2, 64, 16, addr=0x4000))
    s1, s2 = Tile(TileType.ScaleLeft, float8_e8m0, 16, 2), Tile(TileType.ScaleRight, float8_e8m0, 2, 16)
    TGET_SCALE_ADDR(s1, la2)
    TGET_SCALE_ADDR(s2, rb2)
    assert (s1.addr, s2.addr) == (0x100, 0x200)
    TMOV(s1, Tile(TileType.Mat, float8_e8m0, 16, 2, addr=0x8000))
    TMOV(s2, Tile(TileType.Mat, float8_e8m0, 2, 16, addr=0x8400))
    c = Tile(TileType.Acc, float32, 16, 16, addr=0)
    TMATMUL_MX(c, la2, s1, rb2, s2)
    TSTORE(gm["o"], c)


def test_extract_scales_from_l1_block():
    """TEXTRACT Mat -> ScaleLeft (A5): a block of a wider e8m0 tile in L1 is the left scales."""
    rng = np.random.default_rng(6)
    a, _, b, sb = data(rng, float8_e4m3, float8_e4m3, k=64)
    wide = rng.integers(120, 134, (16, 6)).astype(np.uint8).view(float8_e8m0)

    def body(la, ls, rb, rs, gm):
        w = Tile(TileType.Mat, float8_e8m0, 16, 6, addr=0x9000)
        TLOAD(w, gm["W"])
        TEXTRACT(ls, w, 0, 3)
        c = Tile(TileType.Acc, float32, 16, 16, addr=0)
        TMATMUL_MX(c, la, ls, rb, rs)
        TSTORE(gm["o"], c)
    got = run_mx("a5", body, a, wide[:, :2].copy(), b, sb, dict(W=wide, o=np.zeros((16, 16), F32)))
    np.testing.assert_array_equal(got["o"], golden(a, wide[:, 3:5], b, sb))


def test_extract_into_the_fixpipe_buffer_is_refused_with_tmov_as_the_path():
    """Mat -> Scaling (the fixpipe buffer, not an MX scale buffer) is no TEXTRACT path: pto-isa's
    TEXTRACT has no branch for it and would move nothing; TMOV moves a tile there."""
    rng = np.random.default_rng(7)
    a, sa, b, sb = data(rng, float8_e4m3, float8_e4m3, k=64)

    def body(la, ls, rb, rs, gm):
        TEXTRACT(Tile(TileType.Scaling, float16, 1, 32, addr=0), Tile(TileType.Mat, float16, 16, 32, addr=0x9000))
    with pytest.raises(KernelError) as e:
        run_mx("a5", body, a, sa, b, sb)
    assert "TEXTRACT from Mat to Scaling is not a path on a5" in e.value.what
    assert "would move nothing" in e.value.what and e.value.fix.startswith("move the whole tile with TMOV")
