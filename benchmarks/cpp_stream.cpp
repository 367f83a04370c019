// The per-tile stream kernel of stream_speed.py in C++ (TILE_UP_DOWN): the Cube streams `tiles`
// 16x16 f32 tiles to the Vector side - TLOAD -> TMOV -> TMATMUL by the identity -> TPUSH - and
// each Vector lane does TPOP -> TMULS -> TSTORE -> TFREE.  out = (x @ I) * 3.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int T = 16, SLOT = T * T * 4, DEPTH = 4;
using Pipe = TPipe<0, Direction::DIR_C2V, SLOT, DEPTH>;
using G = GlobalTensor<float, Shape<1, 1, 1, T, T>, Stride<1, 1, 1, T, 1>>;
using GHalf = GlobalTensor<float, Shape<1, 1, 1, T / 2, T>, Stride<1, 1, 1, T, 1>>;

extern "C" __global__ AICORE void cube(__gm__ float *x, __gm__ float *eye, __gm__ uint8_t *fifo, int64_t tiles)
{
    Pipe pipe(fifo, 0x0, 0);
    Tile<TileType::Mat, float, T, T> x_l1, e_l1;
    TileLeft<float, T, T> x_l0;
    TileRight<float, T, T> e_l0;
    TileAcc<float, T, T> acc;
    TASSIGN(x_l1, 0x0);
    TASSIGN(e_l1, SLOT);
    TASSIGN(x_l0, 0x0);
    TASSIGN(e_l0, 0x0);
    TASSIGN(acc, 0x0);
    G ge(eye);
    TLOAD(e_l1, ge);
    TMOV(e_l0, e_l1);
    for (int64_t i = 0; i < tiles; ++i) {
        G src(x + i * T * T);
        TLOAD(x_l1, src);
        TMOV(x_l0, x_l1);
        TMATMUL(acc, x_l0, e_l0);
        TPUSH<Pipe, TileAcc<float, T, T>, TileSplitAxis::TILE_UP_DOWN>(pipe, acc);
    }
}

extern "C" __global__ AICORE void vector(__gm__ float *out, __gm__ uint8_t *fifo, int64_t tiles)
{
    const int64_t sub = get_subblockid();
    Pipe pipe(fifo, 0x0, 0);
    Tile<TileType::Vec, float, T / 2, T> part, o_ub;
    TASSIGN(o_ub, DEPTH * SLOT);     // after the ring's UB part (A2A3: 2 staging slots; A5: the ring)
    for (int64_t i = 0; i < tiles; ++i) {
        TPOP<Pipe, Tile<TileType::Vec, float, T / 2, T>, TileSplitAxis::TILE_UP_DOWN>(pipe, part);
        TMULS(o_ub, part, 3.0f);
        GHalf dst(out + (i * T + sub * (T / 2)) * T);
        TSTORE(dst, o_ub);
        TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
    }
}
