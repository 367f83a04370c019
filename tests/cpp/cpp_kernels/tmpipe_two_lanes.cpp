// A TMPipe as pto-isa's flash-attention kernel drives one (kernels/automode/a2a3/flash_atten/):
// both Vector lanes (VecCubeRatio::V2C1_VECS, the default), LocalFiFoDepth 0 and the
// one-argument constructor, TPUSH(tile, pipe) / TPOP(tile, pipe) with the tile first, and the
// producer's and consumer's status switches.  The Cube pushes X @ I; each Vector lane pops its
// half of the rows (the Vec tile is half the Acc tile's rows), adds 1 and stores it.
// out = X + 1.  With ``free_status`` 0 the consumers' pops free nothing: the Cube's last wait
// (the TMPipe destructor's) never returns.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int T = 16;
using Acc = TileAcc<float, T, T>;
using Vec = Tile<TileType::Vec, float, T / 2, T>;
using Pipe = TMPipe<0, FIFOType::GM_FIFO, 2, 1, Acc, Vec, false, 0>;
extern "C" __global__ AICORE void cube_kernel(__gm__ float *x, __gm__ float *eye, __gm__ float *out,
                                              __gm__ float *fifo, int64_t free_status)
{
    Pipe pipe(fifo);
    Tile<TileType::Mat, float, T, T> x_l1, e_l1;
    TileLeft<float, T, T> x_l0;
    TileRight<float, T, T> e_l0;
    Acc acc;
    TASSIGN(x_l1, 0x0);
    TASSIGN(e_l1, 0x1000);
    TASSIGN(x_l0, 0x0);
    TASSIGN(e_l0, 0x0);
    TASSIGN(acc, 0x0);
    GlobalTensor<float, Shape<1, 1, 1, T, T>, Stride<1, 1, 1, T, 1>> gx(x), ge(eye);
    TLOAD(x_l1, gx);
    TLOAD(e_l1, ge);
    TMOV(x_l0, x_l1);
    TMOV(e_l0, e_l1);
    TMATMUL(acc, x_l0, e_l0);
    pipe.prod.setAllocateStatus(true);
    pipe.prod.setRecordStatus(true);
    TPUSH(acc, pipe);
}
extern "C" __global__ AICORE void vec_kernel(__gm__ float *x, __gm__ float *eye, __gm__ float *out,
                                             __gm__ float *fifo, int64_t free_status)
{
    Pipe pipe(fifo);
    Vec t, o;
    TASSIGN(t, 0x0);
    TASSIGN(o, 0x1000);
    pipe.cons.setWaitStatus(true);
    pipe.cons.setFreeStatus(free_status != 0);
    TPOP(t, pipe);
    TADDS(o, t, 1.0f);
    GlobalTensor<float, Shape<1, 1, 1, T / 2, T>, Stride<1, 1, 1, T, 1>> go(out + get_subblockid() * (T / 2) * T);
    TSTORE(go, o);
}
