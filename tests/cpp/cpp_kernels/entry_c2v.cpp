// A mixed kernel as ptoas writes one: a __global__ entry calling its Cube half under
// __DAV_CUBE__ and its Vector half under __DAV_VEC__ (ptopipe builds the file once per side).
// The Cube pushes X (a 16x32 f32 tile loaded to L1, moved to L0C through a matmul by the
// identity); each Vector core pops its 8-row half and stores it doubled.  out = 2 X.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int R = 16, C = 32;
using Pipe = TPipe<4, Direction::DIR_C2V, R * C * 4, 2>;

AICORE inline void cube_half(__gm__ float *x, __gm__ float *eye, __gm__ uint8_t *fifo)
{
    Pipe pipe(fifo, 0x8000, 0);
    Tile<TileType::Mat, float, R, C> x_l1;
    Tile<TileType::Mat, float, C, C> e_l1;
    TileLeft<float, R, C> x_l0;
    TileRight<float, C, C> e_l0;
    TileAcc<float, R, C> acc;
    TASSIGN(x_l1, 0x0);
    TASSIGN(e_l1, 0x2000);
    TASSIGN(x_l0, 0x0);
    TASSIGN(e_l0, 0x0);
    TASSIGN(acc, 0x0);
    GlobalTensor<float, Shape<1, 1, 1, R, C>, Stride<1, 1, 1, C, 1>> gx(x);
    GlobalTensor<float, Shape<1, 1, 1, C, C>, Stride<1, 1, 1, C, 1>> ge(eye);
    TLOAD(x_l1, gx);
    TLOAD(e_l1, ge);
    TMOV(x_l0, x_l1);
    TMOV(e_l0, e_l1);
    TMATMUL(acc, x_l0, e_l0);
    TPUSH<Pipe, TileAcc<float, R, C>, TileSplitAxis::TILE_UP_DOWN>(pipe, acc);
}

AICORE inline void vec_half(__gm__ float *out, __gm__ uint8_t *fifo)
{
    Pipe pipe(fifo, 0x8000, 0);
    Tile<TileType::Vec, float, R / 2, C> part, o;
    TASSIGN(o, 0x0);
    TPOP<Pipe, Tile<TileType::Vec, float, R / 2, C>, TileSplitAxis::TILE_UP_DOWN>(pipe, part);
    TMULS(o, part, 2.0f);
    TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
    GlobalTensor<float, Shape<1, 1, 1, R / 2, C>, Stride<1, 1, 1, C, 1>> go(out + get_subblockid() * (R / 2) * C);
    TSTORE(go, o);
}

extern "C" __global__ AICORE void doubled(__gm__ void *x, __gm__ void *eye, __gm__ void *out, __gm__ void *fifo)
{
#if defined(__DAV_CUBE__)
    cube_half((__gm__ float *)x, (__gm__ float *)eye, (__gm__ uint8_t *)fifo);
#endif
#if defined(__DAV_VEC__)
    vec_half((__gm__ float *)out, (__gm__ uint8_t *)fifo);
#endif
}
