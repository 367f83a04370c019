// pto-isa's unit-flag forms (pto_instr.hpp: TMATMUL<AccPhase::...>, the in-place TMATMUL_ACC(c, a, b),
// TMATMUL_BIAS<Phase>, TSTORE<STPhase::Final>), TASSIGN<Addr>(tile), PtoSetWaitFlag<Src, Dst>()
// (event.hpp), PTO_CEIL, PTO_ASSERT and cpu_stub.hpp's get_coreid / dcci / dsb, all through
// <pto/pto-inst.hpp>: acc = a0 @ b + a1 @ b, then + bias.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int M = 16, K = 32, N = 32;
static_assert(PTO_CEIL(17, 16) == 32 && PTO_DIV_ROUNDUP(17, 16) == 2, "npu/a5/TSort32.hpp's macros");
using G = GlobalTensor<float, Shape<1, 1, 1, M, K>, Stride<1, 1, 1, K, 1>>;
using GB = GlobalTensor<float, Shape<1, 1, 1, K, N>, Stride<1, 1, 1, N, 1>>;
using GBias = GlobalTensor<float, Shape<1, 1, 1, 1, N>, Stride<1, 1, 1, N, 1>>;
using GOut = GlobalTensor<float, Shape<1, 1, 1, M, N>, Stride<1, 1, 1, N, 1>>;

extern "C" __global__ AICORE void acc_phase(__gm__ float *a0, __gm__ float *a1, __gm__ float *b, __gm__ float *bias,
                                            __gm__ float *sum, __gm__ float *biased)
{
    Tile<TileType::Mat, float, M, K, BLayout::ColMajor, M, K, SLayout::RowMajor, 512> a0m, a1m;
    Tile<TileType::Mat, float, K, N, BLayout::ColMajor, K, N, SLayout::RowMajor, 512> bm;
    Tile<TileType::Mat, float, 1, N> biasm;
    TileLeft<float, M, K> l0, l1;
    TileRight<float, K, N> r;
    TileAcc<float, M, N> acc, acc2;
    Tile<TileType::Bias, float, 1, N> bt;
    TASSIGN<0x0>(a0m);
    TASSIGN<0x800>(a1m);
    TASSIGN<0x1000>(bm);
    TASSIGN<0x2000>(biasm);
    TASSIGN<0x0>(l0);
    TASSIGN<0x800>(l1);
    TASSIGN<0x0>(r);
    TASSIGN<0x0>(acc);
    TASSIGN<0x800>(acc2);
    TASSIGN<0x0>(bt);
    G g0(a0), g1(a1);
    GB gb(b);
    GBias gbias(bias);
    TLOAD(a0m, g0);
    TLOAD(a1m, g1);
    TLOAD(bm, gb);
    TLOAD(biasm, gbias);
    PtoSetWaitFlag<PIPE_MTE2, PIPE_MTE1>();
    TMOV(l0, a0m);
    TMOV(l1, a1m);
    TMOV(r, bm);
    TMOV(bt, biasm);
    PtoSetWaitFlag<PIPE_MTE1, PIPE_M>(EVENT_ID1, EVENT_ID1);
    TMATMUL<AccPhase::Partial>(acc, l0, r);
    TMATMUL_ACC(acc, l1, r);                          // c += a @ b, in place
    TMATMUL_BIAS<AccPhase::Final>(acc2, l0, r, bt);
    PtoSetWaitFlag<PIPE_M, PIPE_FIX>();
    GOut gs(sum), gbd(biased);
    PTO_ASSERT(get_coreid() == 0, "one block");
    TSTORE<STPhase::Final>(gs, acc);
    TSTORE(gbd, acc2);
    dcci(biased, cache_line_t::ENTIRE_DATA_CACHE);
    dsb(DSB_DDR);
}
