// The Cube half of the C2V kernels of this directory (see c2v_add.cpp): A @ B pushed in
// two 16-row accumulator tiles, split TILE_UP_DOWN (or C2V_SPLIT, defined before this header;
// C2V_M rows of A, a ring of C2V_DEPTH slots).
#pragma once
#include <pto/pto-inst.hpp>

using namespace pto;

#ifndef C2V_SPLIT
#define C2V_SPLIT TILE_UP_DOWN
#endif

#ifndef C2V_M
#define C2V_M 32
#endif
#ifndef C2V_DEPTH
#define C2V_DEPTH 4
#endif

constexpr int TM = 16, K = 32, N = 32, M = C2V_M;
using Pipe = TPipe<0, Direction::DIR_C2V, TM * N * 4, C2V_DEPTH>;

extern "C" __global__ AICORE void cube_kernel(__gm__ float *a, __gm__ float *b, __gm__ uint8_t *fifo)
{
    Pipe pipe(fifo, 0x10000, 0);
    using GA = GlobalTensor<float, Shape<1, 1, 1, TM, K>, Stride<1, 1, 1, K, 1>>;
    using GB = GlobalTensor<float, Shape<1, 1, 1, K, N>, Stride<1, 1, 1, N, 1>>;
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
    GB gb(b);
    TLOAD(b_l1, gb);
    TMOV(b_l0, b_l1);
    for (int i = 0; i < M / TM; ++i) {
        GA ga(a + i * TM * K);
        TLOAD(a_l1, ga);
        TMOV(a_l0, a_l1);
        TMATMUL(acc, a_l0, b_l0);
        TPUSH<Pipe, TileAcc<float, TM, N>, TileSplitAxis::C2V_SPLIT>(pipe, acc);
    }
}

