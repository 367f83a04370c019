// BROKEN (DIR_BOTH slot exhaustion): both_ways.cpp with the Cube pushing every tile before it
// pops any back: with 2 slots per direction the Vector cores block pushing back into a full
// V2C ring while still holding C2V slots, and the Cube blocks pushing into a full C2V ring.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int TM = 16, K = 32, N = 32, ITER = 6;
using Pipe = TPipe<0, Direction::DIR_BOTH, TM * N * 4, 2>;

extern "C" __global__ AICORE void cube_kernel(__gm__ float *a, __gm__ float *b, __gm__ float *out,
                                              __gm__ uint8_t *fifo)
{
    Pipe pipe(fifo, 0x10000, 0x20000);
    Tile<TileType::Mat, float, TM, K> a_l1;
    Tile<TileType::Mat, float, K, N> b_l1;
    Tile<TileType::Mat, float, TM, N> back;
    TileLeft<float, TM, K> a_l0;
    TileRight<float, K, N> b_l0;
    TileAcc<float, TM, N> acc;
    TASSIGN(a_l1, 0x0);
    TASSIGN(b_l1, 0x4000);
    TASSIGN(a_l0, 0x0);
    TASSIGN(b_l0, 0x0);
    TASSIGN(acc, 0x0);
    GlobalTensor<float, Shape<1, 1, 1, K, N>, Stride<1, 1, 1, N, 1>> gb(b);
    TLOAD(b_l1, gb);
    TMOV(b_l0, b_l1);
    for (int i = 0; i < ITER; ++i) {
        GlobalTensor<float, Shape<1, 1, 1, TM, K>, Stride<1, 1, 1, K, 1>> ga(a + i * TM * K);
        TLOAD(a_l1, ga);
        TMOV(a_l0, a_l1);
        TMATMUL(acc, a_l0, b_l0);
        TPUSH<Pipe, TileAcc<float, TM, N>, TileSplitAxis::TILE_UP_DOWN>(pipe, acc);
    }
    for (int i = 0; i < ITER; ++i) {
        TPOP<Pipe, Tile<TileType::Mat, float, TM, N>, TileSplitAxis::TILE_UP_DOWN>(pipe, back);
        GlobalTensor<float, Shape<1, 1, 1, TM, N>, Stride<1, 1, 1, N, 1>> go(out + i * TM * N);
        TSTORE(go, back);
        TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
    }
}

extern "C" __global__ AICORE void vec_kernel(__gm__ uint8_t *fifo)
{
    Pipe pipe(fifo, 0x10000, 0x20000);
    using V = Tile<TileType::Vec, float, TM / 2, N>;
    V part, v;
    TASSIGN(v, 0x0);
    for (int i = 0; i < ITER; ++i) {
        TPOP<Pipe, V, TileSplitAxis::TILE_UP_DOWN>(pipe, part);
        TADDS(v, part, 1.0f);
        TPUSH<Pipe, V, TileSplitAxis::TILE_UP_DOWN>(pipe, v);
        TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
    }
}
