// A pipe per task: each call of a task helper constructs its own TPipe, pushes / pops TPT tiles
// through it and returns - the object's destructor (pto-isa's ~TPipe drains the credits its
// pushes left) ends it, and the next task constructs the pipe again on the same FlagID.  The
// kernels run NTASK tasks.  out = A @ B + 1 in 16-row tiles, split TILE_UP_DOWN.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int TM = 16, K = 32, N = 32, TPT = 2, NTASK = 3;
using Pipe = TPipe<0, Direction::DIR_C2V, TM * N * sizeof(float), 2>;
using AccT = TileAcc<float, TM, N>;
using HalfT = Tile<TileType::Vec, float, TM / 2, N>;
using MatA = Tile<TileType::Mat, float, TM, K, BLayout::ColMajor, TM, K, SLayout::RowMajor, 512>;

AICORE inline void CubeTask(__gm__ float *a, __gm__ uint8_t *fifo, MatA &aMat, TileLeft<float, TM, K> &l0,
                            TileRight<float, K, N> &r0, AccT &acc, int task)
{
    Pipe pipe((__gm__ void *)fifo, 0x20000, 0x0);
    using GA = GlobalTensor<float, Shape<1, 1, 1, TM, K>, Stride<1, 1, 1, K, 1>>;
    for (int t = 0; t < TPT; ++t) {
        GA ga(a + (task * TPT + t) * TM * K);
        TLOAD(aMat, ga);
        TMOV(l0, aMat);
        TMATMUL(acc, l0, r0);
        TPUSH<Pipe, AccT, TileSplitAxis::TILE_UP_DOWN>(pipe, acc);
    }
}

AICORE inline void VecTask(__gm__ float *out, __gm__ uint8_t *fifo, HalfT &o, int task)
{
    Pipe pipe((__gm__ void *)fifo, 0x20000, 0x0);
    using GO = GlobalTensor<float, Shape<1, 1, 1, TM / 2, N>, Stride<1, 1, 1, N, 1>>;
    HalfT part;
    const int sub = get_subblockid();
    for (int t = 0; t < TPT; ++t) {
        TPOP<Pipe, HalfT, TileSplitAxis::TILE_UP_DOWN>(pipe, part);
        TADDS(o, part, 1.0f);
        TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
        GO go(out + ((task * TPT + t) * TM + sub * TM / 2) * N);
        TSTORE(go, o);
    }
}

extern "C" __global__ AICORE void cube_kernel(__gm__ float *a, __gm__ float *b, __gm__ uint8_t *fifo)
{
    using GB = GlobalTensor<float, Shape<1, 1, 1, K, N>, Stride<1, 1, 1, N, 1>>;
    MatA aMat;
    Tile<TileType::Mat, float, K, N, BLayout::ColMajor, K, N, SLayout::RowMajor, 512> bMat;
    TileLeft<float, TM, K> l0;
    TileRight<float, K, N> r0;
    AccT acc;
    TASSIGN(aMat, 0x0);
    TASSIGN(bMat, 0x8000);
    TASSIGN(l0, 0x0);
    TASSIGN(r0, 0x0);
    TASSIGN(acc, 0x0);
    GB gb(b);
    TLOAD(bMat, gb);
    TMOV(r0, bMat);
    for (int task = 0; task < NTASK; ++task) {
        CubeTask(a, fifo, aMat, l0, r0, acc, task);
    }
}

extern "C" __global__ AICORE void vec_kernel(__gm__ float *out, __gm__ uint8_t *fifo)
{
    HalfT o;
    TASSIGN(o, 0x0);
    for (int task = 0; task < NTASK; ++task) {
        VecTask(out, fifo, o, task);
    }
}
