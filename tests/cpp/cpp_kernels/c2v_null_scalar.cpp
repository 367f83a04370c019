// BROKEN: a scalar operand read through a null __gm__ pointer (the process faults while the
// instruction reads its operands, in ptopipe's header: the instruction's line is named).
#include "c2v_cube.hpp"

extern "C" __global__ AICORE void vec_kernel(__gm__ float *bias, __gm__ float *out, __gm__ uint8_t *fifo)
{
    Pipe pipe(fifo, 0x10000, 0);
    using G = GlobalTensor<float, Shape<1, 1, 1, TM / 2, N>, Stride<1, 1, 1, N, 1>>;
    using V = Tile<TileType::Vec, float, TM / 2, N>;
    V part, o;
    TASSIGN(o, 0x1000);
    __gm__ float *scale = nullptr;
    const int64_t sub = get_subblockid();
    for (int i = 0; i < M / TM; ++i) {
        const int64_t row = i * TM + sub * (TM / 2);
        TPOP<Pipe, V, TileSplitAxis::TILE_UP_DOWN>(pipe, part);
        TMULS(o, part, scale[i]);
        TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
        G gout(out + row * N);
        TSTORE(gout, o);
    }
}
