// C2V (c2v_cube.hpp, a ring of one slot): each Vector core pops its half and TSTOREs the popped
// tile itself, then TFREEs it with no MTE3 -> V event between.  Clean under spec (the free
// follows every read of the slot); on A5 under pto-isa the free is one set on PIPE_V, so the
// Cube's next push into the slot may land under the store: a race.  out = A @ B.
#define C2V_DEPTH 1
#include "c2v_cube.hpp"

extern "C" __global__ AICORE void vec_kernel(__gm__ float *bias, __gm__ float *out, __gm__ uint8_t *fifo)
{
    Pipe pipe(fifo, 0x10000, 0);
    using G = GlobalTensor<float, Shape<1, 1, 1, TM / 2, N>, Stride<1, 1, 1, N, 1>>;
    using V = Tile<TileType::Vec, float, TM / 2, N>;
    V part;
    const int64_t sub = get_subblockid();
    for (int i = 0; i < M / TM; ++i) {
        const int64_t row = i * TM + sub * (TM / 2);
        TPOP<Pipe, V, TileSplitAxis::TILE_UP_DOWN>(pipe, part);
        G gout(out + row * N);
        TSTORE(gout, part);
        TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
    }
}
