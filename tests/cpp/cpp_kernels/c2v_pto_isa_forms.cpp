// pto-isa's spellings of a TPipe kernel: all seven TPipe template arguments (EN_UNIT_FLAG last)
// and TPUSH / TPOP with an explicit sub-block id.  The Cube pushes X @ I split TILE_UP_DOWN; each
// Vector lane pops its half, adds 1 and stores it.  out = X + 1.  With ``other_lane`` 1 each
// lane names the other lane's sub-block id in its TPOP.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int T = 16;
using Pipe = TPipe<0, Direction::DIR_C2V, T * T * 4, 2, 2, false, true>;
using Half = Tile<TileType::Vec, float, T / 2, T>;
extern "C" __global__ AICORE void cube_kernel(__gm__ float *x, __gm__ float *eye, __gm__ float *out,
                                              __gm__ uint8_t *fifo, int64_t other_lane)
{
    Pipe pipe(fifo, 0x10000, 0);
    Tile<TileType::Mat, float, T, T> x_l1, e_l1;
    TileLeft<float, T, T> x_l0;
    TileRight<float, T, T> e_l0;
    TileAcc<float, T, T> acc;
    TASSIGN(x_l1, 0x0);
    TASSIGN(e_l1, 0x1000);
    TASSIGN(x_l0, 0x0);
    TASSIGN(e_l0, 0x0);
    TASSIGN(acc, 0x0);
    GlobalTensor<float, Shape<1, 1, 1, T, T>, Stride<1, 1, 1, T, 1>> gx(x), ge(eye);
    TLOAD(x_l1, gx);
    TLOAD(e_l1, ge);
    TMOV(x_l0, x_l1);
    TMOV(e_l0, e_l1);
    TMATMUL(acc, x_l0, e_l0);
    TPUSH<Pipe, TileAcc<float, T, T>, TileSplitAxis::TILE_UP_DOWN>(pipe, acc, 0);
}
extern "C" __global__ AICORE void vec_kernel(__gm__ float *x, __gm__ float *eye, __gm__ float *out,
                                             __gm__ uint8_t *fifo, int64_t other_lane)
{
    Pipe pipe(fifo, 0x10000, 0);
    Half p, o;
    TASSIGN(o, 0x0);
    TPOP<Pipe, Half, TileSplitAxis::TILE_UP_DOWN>(pipe, p, get_subblockid() ^ other_lane);
    TADDS(o, p, 1.0f);
    TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
    GlobalTensor<float, Shape<1, 1, 1, T / 2, T>, Stride<1, 1, 1, T, 1>> go(out + get_subblockid() * (T / 2) * T);
    TSTORE(go, o);
}
