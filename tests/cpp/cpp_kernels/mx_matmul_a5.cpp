// A5's MX matmuls as pto-isa declares them (pto_instr.hpp): fp8 e4m3 operands with e8m0 block scales,
// one per 32 values of K, in ScaleLeft / ScaleRight tiles; TMATMUL_MX(c, a, a_scale, b, b_scale),
// its accumulating form TMATMUL_MX(c_out, c_in, a, a_scale, b, b_scale) and TGEMV_MX's one row; the
// left scales also in pto-isa's TileLeftScale (32-byte RowMajor fractals), moved from the same Mat tile.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int M = 16, K = 128, N = 16, G = K / 32;
using GA = GlobalTensor<float8_e4m3_t, Shape<1, 1, 1, M, K>, Stride<1, 1, 1, K, 1>>;
using GB = GlobalTensor<float8_e4m3_t, Shape<1, 1, 1, K, N>, Stride<1, 1, 1, N, 1>>;
using GA1 = GlobalTensor<float8_e4m3_t, Shape<1, 1, 1, 1, K>, Stride<1, 1, 1, K, 1>>;
using GSA = GlobalTensor<float8_e8m0_t, Shape<1, 1, 1, M, G>, Stride<1, 1, 1, G, 1>>;
using GSB = GlobalTensor<float8_e8m0_t, Shape<1, 1, 1, G, N>, Stride<1, 1, 1, N, 1>>;
using GOut = GlobalTensor<float, Shape<1, 1, 1, M, N>, Stride<1, 1, 1, N, 1>>;
using GRow = GlobalTensor<float, Shape<1, 1, 1, 1, N>, Stride<1, 1, 1, N, 1>>;
// the scales' rows are short of a 32-byte block: whole blocks declared, G (N) valid columns
using ScaleL = Tile<TileType::ScaleLeft, float8_e8m0_t, M, 32, BLayout::RowMajor, M, G>;
using ScaleR = Tile<TileType::ScaleRight, float8_e8m0_t, G, 32, BLayout::RowMajor, G, N>;

extern "C" __global__ AICORE void mx_matmul(__gm__ float8_e4m3_t *a, __gm__ float8_e4m3_t *b,
                                            __gm__ float8_e8m0_t *sa, __gm__ float8_e8m0_t *sb,
                                            __gm__ float *c, __gm__ float *c2, __gm__ float *row, __gm__ float *c3)
{
    Tile<TileType::Mat, float8_e4m3_t, M, K> am;
    Tile<TileType::Mat, float8_e4m3_t, K, N + 16, BLayout::RowMajor, K, N> bm;
    Tile<TileType::Mat, float8_e4m3_t, 16, K, BLayout::RowMajor, 1, K> a1m;
    Tile<TileType::Mat, float8_e8m0_t, M, 32, BLayout::RowMajor, M, G> sam;
    Tile<TileType::Mat, float8_e8m0_t, G, 32, BLayout::RowMajor, G, N> sbm;
    TileLeft<float8_e4m3_t, M, K> l;
    TileLeft<float8_e4m3_t, 16, K, 1, K> l1;            // TGEMV_MX's one row of a
    TileRight<float8_e4m3_t, K, N> r;
    ScaleL ls;
    TileLeftScale<float8_e8m0_t, M, G> ls2;
    ScaleR rs;
    TileAcc<float, M, N> acc, acc2, acc3;
    TileAcc<float, 16, N, 1, N> acc1;
    TASSIGN(am, 0x0);
    TASSIGN(bm, 0x1000);
    TASSIGN(a1m, 0x3000);
    TASSIGN(sam, 0x2000);
    TASSIGN(sbm, 0x2400);
    TASSIGN(l, 0x0);
    TASSIGN(l1, 0x1000);
    TASSIGN(r, 0x0);
    TASSIGN(ls, 0x0);
    TASSIGN(ls2, 0x200);
    TASSIGN(rs, 0x0);
    TASSIGN(acc, 0x0);
    TASSIGN(acc2, 0x400);
    TASSIGN(acc1, 0x800);
    TASSIGN(acc3, 0xC00);
    GA ga(a);
    GA1 ga1(a);
    GB gb(b);
    GSA gsa(sa);
    GSB gsb(sb);
    TLOAD(am, ga);
    TLOAD(a1m, ga1);
    TLOAD(bm, gb);
    TLOAD(sam, gsa);
    TLOAD(sbm, gsb);
    TMOV(l, am);
    TMOV(l1, a1m);
    TMOV(r, bm);
    TMOV(ls, sam);
    TMOV(rs, sbm);
    TMOV(ls2, sam);
    TMATMUL_MX(acc, l, ls, r, rs);
    TMATMUL_MX(acc2, acc, l, ls, r, rs);                 // acc2 = acc + a @ b
    TGEMV_MX(acc1, l1, ls, r, rs);                       // a's first row @ b
    TMATMUL_MX(acc3, l, ls2, r, rs);
    GOut gc(c), gc2(c2), gc3(c3);
    GRow grow(row);
    TSTORE(gc, acc);
    TSTORE(gc2, acc2);
    TSTORE(grow, acc1);
    TSTORE(gc3, acc3);
}
