// TMPipe (GM FIFO, Acc -> Vec: C2V), driven as pto-isa drives one - TPUSH(tile, pipe) /
// TPOP(tile, pipe), the pop freeing its GM slot itself: the Cube pushes X @ I; each Vector lane
// pops its half of the rows (VecCubeRatio::V2C1_VECS, the default), adds 1 and stores it.
// out = X + 1.  With ``tfree`` set the Vector kernel also calls TFREE on the pipe: on A5 with the
// pto-isa protocol that frees the slot a second time (pto-isa's A5 TPOP already freed it), and
// ptopipe reports the credit left on the flag at the TMPipe line.  With ``one_lane`` set the
// kernel uses a TMPipe of one Vector lane instead (VecCubeRatio::V1C1_VEC0: AIV0 pops the whole
// tile, AIV1 returns): pto-isa's Cube waits for both lanes' flags whatever the ratio, so under
// the pto-isa protocol the Cube's TPUSH waits forever for AIV1's free.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int T = 16;
using Acc = TileAcc<float, T, T>;
using Half = Tile<TileType::Vec, float, T / 2, T>;
using Vec = Tile<TileType::Vec, float, T, T>;
using Pipe = TMPipe<0, FIFOType::GM_FIFO, 2, 1, Acc, Half, false, 2>;
using OneLane = TMPipe<0, FIFOType::GM_FIFO, 2, 1, Acc, Vec, false, 2, VecCubeRatio::V1C1_VEC0>;
extern "C" __global__ AICORE void cube_kernel(__gm__ float *x, __gm__ float *eye, __gm__ float *fifo,
                                              int64_t one_lane)
{
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
    if (one_lane) {
        OneLane pipe(fifo, 0x10000);
        TPUSH(acc, pipe);  // one-lane push
    } else {
        Pipe pipe(fifo, 0x10000);
        TPUSH(acc, pipe);
    }
}
extern "C" __global__ AICORE void vec_kernel(__gm__ float *out, __gm__ float *fifo, int64_t tfree, int64_t one_lane)
{
    if (one_lane) {
        if (get_subblockid() != 0) return;
        OneLane pipe(fifo, 0x10000);
        Vec t, o;
        TASSIGN(o, 0x0);
        TPOP(t, pipe);
        TADDS(o, t, 1.0f);
        GlobalTensor<float, Shape<1, 1, 1, T, T>, Stride<1, 1, 1, T, 1>> go(out);
        TSTORE(go, o);
        return;
    }
    Pipe pipe(fifo, 0x10000);
    Half t, o;
    TASSIGN(o, 0x0);
    TPOP(t, pipe);
    TADDS(o, t, 1.0f);
    if (tfree) {
        TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
    }
    GlobalTensor<float, Shape<1, 1, 1, T / 2, T>, Stride<1, 1, 1, T, 1>> go(out + get_subblockid() * (T / 2) * T);
    TSTORE(go, o);
}
