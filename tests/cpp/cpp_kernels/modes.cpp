// pto-isa's mode template arguments, each passed on to the simulator: TCI<TileData, T,
// descending> (an int), TTRI<TileData, isUpperOrLower> (an int operand), TFILLPAD<TileData,
// PadValue> and TGATHER<Dst, Src, MaskPattern> (enum operands), TPRINT<PrintFormat> and
// TSCATTER<MaskPattern, ScatterAxis> (enum keywords), TSTORE<TileData, GlobalData, AtomicType>
// (an enum keyword: the plain store, then an atomic add of the same tile).  seq = [5, 6, ...;
// 5, 4, ...], tri = twice the upper mask from diagonal 2, pad = x
// with columns 12.. at +inf, gathered = x[:, 0::2], scattered = x at even columns, else 0; the
// TPRINT prints x's first row 10.6f.
// wrong = 1 gathers with a value that is no MaskPattern, wrong = 2 asks TTRI for a third side.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int R = 8, C = 16, VC = 12;
using G = GlobalTensor<float, Shape<1, 1, 1, R, C>, Stride<1, 1, 1, C, 1>>;
using GHalf = GlobalTensor<float, Shape<1, 1, 1, R, C / 2>, Stride<1, 1, 1, C / 2, 1>>;
using GRow = GlobalTensor<int32_t, Shape<1, 1, 1, 1, C>, Stride<1, 1, 1, C, 1>>;
using Row = Tile<TileType::Vec, int32_t, 1, C>;
using V = Tile<TileType::Vec, float, R, C>;
using Half = Tile<TileType::Vec, float, R, C / 2>;

extern "C" __global__ AICORE void vec_kernel(__gm__ float *x, __gm__ int32_t *seq, __gm__ float *tri,
                                             __gm__ float *pad, __gm__ float *gathered, __gm__ float *scattered,
                                             int64_t wrong)
{
    if (get_subblockid() != 0) return;
    Row up, down;
    V t, m, p, sc;
    V part(R, VC);
    Half g;
    Tile<TileType::Vec, float, 1, C> first;
    TASSIGN(up, 0x0);
    TASSIGN(down, 0x100);
    TASSIGN(t, 0x1000);
    TASSIGN(part, 0x1000);          // t's storage, valid columns 0..VC-1
    TASSIGN(first, 0x1000);         // t's first row
    TASSIGN(m, 0x2000);
    TASSIGN(p, 0x3000);
    TASSIGN(g, 0x4000);
    TASSIGN(sc, 0x5000);
    G gx(x), gt(tri), gp(pad), gs(scattered);
    GHalf gg(gathered);
    GRow s0(seq), s1(seq + C);
    TLOAD(t, gx);
    if (wrong == 1) TGATHER<Half, V, static_cast<MaskPattern>(0)>(g, t);
    if (wrong == 2) TTRI<V, 2>(m, 0);
    TCI<Row, int32_t, 0>(up, 5);
    TCI<Row, int32_t, 1>(down, 5);
    TTRI<V, 1>(m, 2);
    TFILLPAD<V, PadValue::Max>(p, part);
    TGATHER<Half, V, MaskPattern::P0101>(g, t);
    TSCATTER<MaskPattern::P0101, ScatterAxis::SCATTER_ROW>(sc, g);
    TPRINT<PrintFormat::Width10_Precision6>(first);
    TSTORE(s0, up);
    TSTORE(s1, down);
    TSTORE<V, G, AtomicType::AtomicNone>(gt, m);
    TSTORE<V, G, AtomicType::AtomicAdd>(gt, m);
    TSTORE(gp, p);
    TSTORE(gg, g);
    TSTORE(gs, sc);
}
