// A5 one-lane V2C pipe (TPipe<..., IsNoSplit = true>): AIV0 pushes whole 16x16 tiles, the Cube pops
// them TILE_NO_SPLIT but frees them with a split - pto-isa's Cube free of a split credits AIV1's
// flag too (setIntraBlockBySplit), a lane the pipe does not have.  out[i] = x[i] @ w.
#include <pto/pto-inst.hpp>
using namespace pto;

constexpr int T = 16, N = 2;
using Pipe = TPipe<1, Direction::DIR_V2C, T * T * 4, 2, 2, true>;
using G = GlobalTensor<float, Shape<1, 1, 1, T, T>, Stride<1, 1, 1, T, 1>>;

extern "C" __global__ AICORE void cube_kernel(__gm__ float *w, __gm__ float *out, __gm__ uint8_t *fifo)
{
    Pipe pipe(fifo, 0, 0x40000);
    Tile<TileType::Mat, float, T, T> w1, x;
    TileLeft<float, T, T> x0;
    TileRight<float, T, T> w0;
    TileAcc<float, T, T> acc;
    TASSIGN(w1, 0x0);
    TASSIGN(x0, 0x0);
    TASSIGN(w0, 0x0);
    TASSIGN(acc, 0x0);
    G gw(w);
    TLOAD(w1, gw);
    TMOV(w0, w1);
    for (int i = 0; i < N; ++i) {
        TPOP<Pipe, Tile<TileType::Mat, float, T, T>, TileSplitAxis::TILE_NO_SPLIT>(pipe, x);
        TMOV(x0, x);
        TFREE<Pipe, TileSplitAxis::TILE_LEFT_RIGHT>(pipe);
        TMATMUL(acc, x0, w0);
        G go(out + i * T * T);
        TSTORE(go, acc);
    }
}

extern "C" __global__ AICORE void vec_kernel(__gm__ float *x, __gm__ uint8_t *fifo)
{
    if (get_subblockid() != 0)
        return;
    Pipe pipe(fifo, 0, 0x40000);
    Tile<TileType::Vec, float, T, T> t;
    TASSIGN(t, 0x0);
    for (int i = 0; i < N; ++i) {
        G gx(x + i * T * T);
        TLOAD(t, gx);
        TPUSH<Pipe, Tile<TileType::Vec, float, T, T>, TileSplitAxis::TILE_NO_SPLIT>(pipe, t);
    }
}
