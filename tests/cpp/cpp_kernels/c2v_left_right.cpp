// C2V with TILE_LEFT_RIGHT: the Cube pushes the 16x32 accumulator of A @ B (c2v_cube.hpp's Cube
// with its split spelt LEFT_RIGHT here); each Vector core pops its 16x16 column half, adds the
// bias half and stores.  out = A @ B + bias.
#define C2V_SPLIT TILE_LEFT_RIGHT
#include "c2v_cube.hpp"

extern "C" __global__ AICORE void vec_kernel(__gm__ float *bias, __gm__ float *out, __gm__ uint8_t *fifo)
{
    Pipe pipe(fifo, 0x10000, 0);
    using G = GlobalTensor<float, Shape<1, 1, 1, TM, N / 2>, Stride<1, 1, 1, N, 1>>;
    using V = Tile<TileType::Vec, float, TM, N / 2>;
    V part, bv, o;
    TASSIGN(bv, 0x0);
    TASSIGN(o, 0x1000);
    const int64_t col = get_subblockid() * (N / 2);
    for (int i = 0; i < M / TM; ++i) {
        TPOP<Pipe, V, TileSplitAxis::TILE_LEFT_RIGHT>(pipe, part);
        G gbias(bias + i * TM * N + col);
        TLOAD(bv, gbias);
        TADD(o, part, bv);
        TFREE<Pipe, TileSplitAxis::TILE_LEFT_RIGHT>(pipe);
        G gout(out + i * TM * N + col);
        TSTORE(gout, o);
    }
}
