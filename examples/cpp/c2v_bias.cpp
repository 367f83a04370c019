// A pto-isa C++ kernel (C2V): the Cube multiplies A (M x 32) by B (32 x 32) in 16-row tiles and
// pushes each accumulator; each Vector core pops its 8-row half (TILE_UP_DOWN), adds the bias
// and stores.  out = A @ B + bias.  Run it with its numpy golden:  ptopipe run c2v_bias.py
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int TM = 16, K = 32, N = 32;
using Pipe = TPipe<0, Direction::DIR_C2V, TM * N * 4, 4>;

extern "C" __global__ AICORE void cube(__gm__ float *a, __gm__ float *b, __gm__ uint8_t *fifo, int64_t M)
{
    Pipe pipe(fifo, 0x10000, 0);
    Tile<TileType::Mat, float, TM, K> a_l1;
    Tile<TileType::Mat, float, K, N> b_l1;
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
    for (int64_t i = 0; i < M / TM; ++i) {
        GlobalTensor<float, Shape<1, 1, 1, TM, K>, Stride<1, 1, 1, K, 1>> ga(a + i * TM * K);
        TLOAD(a_l1, ga);
        TMOV(a_l0, a_l1);
        TMATMUL(acc, a_l0, b_l0);
        TPUSH<Pipe, TileAcc<float, TM, N>, TileSplitAxis::TILE_UP_DOWN>(pipe, acc);
    }
}

extern "C" __global__ AICORE void vec(__gm__ float *bias, __gm__ float *out, __gm__ uint8_t *fifo, int64_t M)
{
    Pipe pipe(fifo, 0x10000, 0);
    using G = GlobalTensor<float, Shape<1, 1, 1, TM / 2, N>, Stride<1, 1, 1, N, 1>>;
    using V = Tile<TileType::Vec, float, TM / 2, N>;
    V part, bv, o;
    TASSIGN(bv, 0x0);
    TASSIGN(o, 0x1000);
    const int64_t sub = get_subblockid();
    for (int64_t i = 0; i < M / TM; ++i) {
        const int64_t row = i * TM + sub * (TM / 2);
        TPOP<Pipe, V, TileSplitAxis::TILE_UP_DOWN>(pipe, part);
        G gbias(bias + row * N);
        TLOAD(bv, gbias);
        TADD(o, part, bv);
        TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
        G gout(out + row * N);
        TSTORE(gout, o);
    }
}
