// A K loop on the Cube: out = a @ b over NK steps of 16.  With start != 0 the first step is
// TMATMUL and the others TMATMUL_ACC (correct); with start == 0 every step is TMATMUL_ACC, so
// the first accumulates onto L0C that nothing of this launch wrote.  Then the fixpipe's forms of
// the store: relu += max(out, 0) (its ReLU and an atomic add), q = out quantised with one word.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int N = 16, NK = 3;
using GA = GlobalTensor<float, Shape<1, 1, 1, N, N>, Stride<1, 1, 1, NK * N, 1>>;
using GB = GlobalTensor<float, Shape<1, 1, 1, N, N>, Stride<1, 1, 1, N, 1>>;
using GQ = GlobalTensor<int8_t, Shape<1, 1, 1, N, N>, Stride<1, 1, 1, N, 1>>;
extern "C" __global__ AICORE void cube_kernel(__gm__ float *a, __gm__ float *b, __gm__ float *out, int start,
                                              __gm__ float *relu, __gm__ int8_t *q, int64_t word)
{
    Tile<TileType::Mat, float, N, N, BLayout::ColMajor, N, N, SLayout::RowMajor, 512> a_l1, b_l1;
    TileLeft<float, N, N> a_l0;
    TileRight<float, N, N> b_l0;
    TileAcc<float, N, N> acc;
    TASSIGN(a_l1, 0x0);
    TASSIGN(b_l1, 0x1000);
    TASSIGN(a_l0, 0x0);
    TASSIGN(b_l0, 0x0);
    TASSIGN(acc, 0x0);
    for (int k = 0; k < NK; ++k) {
        GA ga(a + k * N);
        GB gb(b + k * N * N);
        TLOAD(a_l1, ga);
        TLOAD(b_l1, gb);
        TMOV(a_l0, a_l1);
        TMOV(b_l0, b_l1);
        if (k == 0 && start)
            TMATMUL(acc, a_l0, b_l0);
        else
            TMATMUL_ACC(acc, acc, a_l0, b_l0);
    }
    GB go(out), gr(relu);
    TSTORE(go, acc);
    TSTORE<TileAcc<float, N, N>, GB, AtomicType::AtomicAdd, ReluPreMode::NormalRelu>(gr, acc);
    GQ gq(q);
    TSTORE<TileAcc<float, N, N>, GQ>(gq, acc, static_cast<uint64_t>(word));
}
extern "C" __global__ AICORE void vec_kernel(__gm__ float *a, __gm__ float *b, __gm__ float *out, int start,
                                             __gm__ float *relu, __gm__ int8_t *q, int64_t word) {}
