// BROKEN: the Vector kernel pops one tile more than the Cube pushes, its TPOP inside a helper
// (hangs in the helper's TPOP, called from the kernel's loop).
#include "c2v_cube.hpp"

using V = Tile<TileType::Vec, float, TM / 2, N>;

AICORE void pop_half(Pipe &pipe, V &part)
{
    TPOP<Pipe, V, TileSplitAxis::TILE_UP_DOWN>(pipe, part);
}

extern "C" __global__ AICORE void vec_kernel(__gm__ float *bias, __gm__ float *out, __gm__ uint8_t *fifo)
{
    Pipe pipe(fifo, 0x10000, 0);
    using G = GlobalTensor<float, Shape<1, 1, 1, TM / 2, N>, Stride<1, 1, 1, N, 1>>;
    V part, bv, o;
    TASSIGN(bv, 0x0);
    TASSIGN(o, 0x1000);
    const int64_t sub = get_subblockid();
    for (int i = 0; i < M / TM + 1; ++i) {
        const int64_t row = i * TM + sub * (TM / 2);
        pop_half(pipe, part);
        G gbias(bias + row * N);
        TLOAD(bv, gbias);
        TADD(o, part, bv);
        TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
        G gout(out + row * N);
        TSTORE(gout, o);
    }
}
