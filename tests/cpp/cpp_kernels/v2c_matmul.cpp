// V2C: each Vector core scales its 16-row half of X by 2 and pushes it (TILE_UP_DOWN); the Cube
// pops the whole 32x32 tile into L1, multiplies it by W and stores.  out = (2 X) @ W.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int R = 32, C = 32;
using Pipe = TPipe<2, Direction::DIR_V2C, R * C * 4, 2>;

extern "C" __global__ AICORE void vec_kernel(__gm__ float *x, __gm__ uint8_t *fifo)
{
    Pipe pipe(fifo, 0, 0x20000);
    Tile<TileType::Vec, float, R / 2, C> xv, sv;
    TASSIGN(xv, 0x0);
    TASSIGN(sv, 0x1000);
    GlobalTensor<float, Shape<1, 1, 1, R / 2, C>, Stride<1, 1, 1, C, 1>> gx(x + get_subblockid() * (R / 2) * C);
    TLOAD(xv, gx);
    TMULS(sv, xv, 2.0f);
    TPUSH<Pipe, Tile<TileType::Vec, float, R / 2, C>, TileSplitAxis::TILE_UP_DOWN>(pipe, sv);
}

extern "C" __global__ AICORE void cube_kernel(__gm__ float *w, __gm__ float *out, __gm__ uint8_t *fifo)
{
    Pipe pipe(fifo, 0, 0x20000);
    Tile<TileType::Mat, float, R, C> xs, w_l1;
    TileLeft<float, R, C> a_l0;
    TileRight<float, R, C> b_l0;
    TileAcc<float, R, C> acc;
    TASSIGN(w_l1, 0x0);
    TASSIGN(a_l0, 0x0);
    TASSIGN(b_l0, 0x0);
    TASSIGN(acc, 0x0);
    GlobalTensor<float, Shape<1, 1, 1, R, C>, Stride<1, 1, 1, C, 1>> gw(w), go(out);
    TLOAD(w_l1, gw);
    TMOV(b_l0, w_l1);
    TPOP<Pipe, Tile<TileType::Mat, float, R, C>, TileSplitAxis::TILE_UP_DOWN>(pipe, xs);
    TMOV(a_l0, xs);
    TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
    TMATMUL(acc, a_l0, b_l0);
    TSTORE(go, acc);
}
