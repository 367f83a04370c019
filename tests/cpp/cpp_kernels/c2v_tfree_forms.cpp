// C2V through a 2-slot ring, four tiles (c2v_cube.hpp), each Vector core freeing its half with
// one of pto-isa's TFREE spellings: ``form`` 0 TFREE(pipe), 1 TFREE<Pipe>(pipe) (no split: the
// library's own), 2 TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe).  out = A @ B + bias.
#define C2V_M 64
#define C2V_DEPTH 2
#include "c2v_cube.hpp"

extern "C" __global__ AICORE void vec_kernel(__gm__ float *bias, __gm__ float *out, __gm__ uint8_t *fifo,
                                             int64_t form)
{
    Pipe pipe(fifo, 0x10000, 0);
    using G = GlobalTensor<float, Shape<1, 1, 1, TM / 2, N>, Stride<1, 1, 1, N, 1>>;
    using V = Tile<TileType::Vec, float, TM / 2, N>;
    V part, bv, o;
    TASSIGN(bv, 0x0);
    TASSIGN(o, 0x1000);
    const int64_t sub = get_subblockid();
    for (int i = 0; i < M / TM; ++i) {
        const int64_t row = i * TM + sub * (TM / 2);
        TPOP<Pipe, V, TileSplitAxis::TILE_UP_DOWN>(pipe, part);
        G gbias(bias + row * N);
        TLOAD(bv, gbias);
        TADD(o, part, bv);
        if (form == 0) {
            TFREE(pipe);
        } else if (form == 1) {
            TFREE<Pipe>(pipe);
        } else {
            TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
        }
        G gout(out + row * N);
        TSTORE(gout, o);
    }
}
