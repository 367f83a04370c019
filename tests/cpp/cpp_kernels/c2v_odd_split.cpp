// pto-isa's odd splits (fifo.hpp): the Cube pushes P = X @ W twice, first with 15 valid rows split
// TILE_UP_DOWN_ODD (AIV0 pops 8 rows, AIV1 7 from row 8), then with 15 valid columns split
// TILE_LEFT_RIGHT_ODD (AIV0 pops 8 columns, AIV1 7 from column 8); each Vector core stores its band
// where it starts: sub * (e + sub).  The lanes find their bands in a GM slot (popVecTileFromGMFiFo):
// DIR_C2V on A2A3, DIR_C2V_GM on A5.  out_rows[:15] = P[:15], out_cols[:, :15] = P[:, :15].
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int S = 16, ODD = S - 1;
#if defined(PTO_NPU_ARCH_A5)
using Pipe = TPipe<0, Direction::DIR_C2V_GM, S * S * 4, 2>;
#else
using Pipe = TPipe<0, Direction::DIR_C2V, S * S * 4, 2>;
#endif

extern "C" __global__ AICORE void cube_kernel(__gm__ float *x, __gm__ float *w, __gm__ uint8_t *fifo)
{
    Pipe pipe(fifo, 0, 0);
    // X's first 15 rows, W's first 15 columns: the valid regions of the two products
    using G = GlobalTensor<float, Shape<1, 1, 1, S, S>, Stride<1, 1, 1, S, 1>>;
    using GX = GlobalTensor<float, Shape<1, 1, 1, ODD, S>, Stride<1, 1, 1, S, 1>>;
    using GW = GlobalTensor<float, Shape<1, 1, 1, S, ODD>, Stride<1, 1, 1, S, 1>>;
    Tile<TileType::Mat, float, S, S> x_l1, w_l1;
    Tile<TileType::Mat, float, S, S, BLayout::RowMajor, ODD, S> x15_l1;
    Tile<TileType::Mat, float, S, S, BLayout::RowMajor, S, ODD> w15_l1;
    TileLeft<float, S, S> x_l0;
    TileLeft<float, S, S, ODD, S> x15_l0;
    TileRight<float, S, S> w_l0;
    TileRight<float, S, S, S, ODD> w15_l0;
    TileAcc<float, S, S, ODD, S> acc_rows;
    TileAcc<float, S, S, S, ODD> acc_cols;
    TASSIGN(x_l1, 0x0);
    TASSIGN(w_l1, 0x1000);
    TASSIGN(x15_l1, 0x2000);
    TASSIGN(w15_l1, 0x3000);
    TASSIGN(x_l0, 0x0);
    TASSIGN(x15_l0, 0x1000);
    TASSIGN(w_l0, 0x0);
    TASSIGN(w15_l0, 0x1000);
    TASSIGN(acc_rows, 0x0);
    TASSIGN(acc_cols, 0x1000);
    G gx(x), gw(w);
    GX gx15(x);
    GW gw15(w);
    TLOAD(x_l1, gx);
    TLOAD(w_l1, gw);
    TLOAD(x15_l1, gx15);
    TLOAD(w15_l1, gw15);
    TMOV(x15_l0, x15_l1);
    TMOV(w_l0, w_l1);
    TMATMUL(acc_rows, x15_l0, w_l0);
    TPUSH<Pipe, TileAcc<float, S, S, ODD, S>, TileSplitAxis::TILE_UP_DOWN_ODD>(pipe, acc_rows);
    TMOV(x_l0, x_l1);
    TMOV(w15_l0, w15_l1);
    TMATMUL(acc_cols, x_l0, w15_l0);
    TPUSH<Pipe, TileAcc<float, S, S, S, ODD>, TileSplitAxis::TILE_LEFT_RIGHT_ODD>(pipe, acc_cols);
}

extern "C" __global__ AICORE void vec_kernel(__gm__ float *out_rows, __gm__ float *out_cols, __gm__ uint8_t *fifo)
{
    Pipe pipe(fifo, 0, 0);
    const int sub = get_subblockid();
    const int e = sub == 0 ? S / 2 : ODD / 2;            // AIV0 takes the extra row / column
    using Rows = Tile<TileType::Vec, float, S / 2, S, BLayout::RowMajor, -1, S>;
    using Cols = Tile<TileType::Vec, float, S, S / 2, BLayout::RowMajor, S, -1>;
    using GRows = GlobalTensor<float, Shape<1, 1, 1, -1, S>, Stride<1, 1, 1, S, 1>>;
    using GCols = GlobalTensor<float, Shape<1, 1, 1, S, -1>, Stride<1, 1, 1, S, 1>>;
    Rows rows(e);
    TPOP<Pipe, Rows, TileSplitAxis::TILE_UP_DOWN_ODD>(pipe, rows);
    GRows g_rows(out_rows + sub * (e + sub) * S, Shape<1, 1, 1, -1, S>(e));
    TSTORE(g_rows, rows);
    TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN_ODD>(pipe);
    Cols cols(e);
    TPOP<Pipe, Cols, TileSplitAxis::TILE_LEFT_RIGHT_ODD>(pipe, cols);
    GCols g_cols(out_cols + sub * (e + sub), Shape<1, 1, 1, S, -1>(e));
    TSTORE(g_cols, cols);
    TFREE<Pipe, TileSplitAxis::TILE_LEFT_RIGHT_ODD>(pipe);
}
