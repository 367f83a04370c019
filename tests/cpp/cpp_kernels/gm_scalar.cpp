// A scalar operand read from GM through a __gm__ pointer, as pto-isa's own scalar-operand tests
// read it (tests/cpu/st/testcase/tmaxs: TMAXS(dst, src, scalar[0])); then GM the kernel stored
// read back after the synchronisation that makes a store visible to the scalar unit: a barrier
// on every pipe, and a wait of PIPE_S for PIPE_MTE3; src becomes third (a next launch reads that).
//   out = max(src, scalar[0]);  again = src + out[1];  third = src * again[2];  src = third
#include <pto/pto-inst.hpp>
using namespace pto;
extern "C" __global__ AICORE void gm_scalar(__gm__ float *out, __gm__ float *again, __gm__ float *third,
                                            __gm__ float *src, __gm__ float *scalar)
{
    using G = GlobalTensor<float, Shape<1, 1, 1, 8, 8>, Stride<1, 1, 1, 8, 1>>;
    using T = Tile<TileType::Vec, float, 8, 8, BLayout::RowMajor, -1, -1>;
    T s(8, 8), d(8, 8);
    TASSIGN(s, 0x0);
    TASSIGN(d, 0x100);
    G gsrc(src), gout(out), gagain(again), gthird(third);
    TLOAD(s, gsrc);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    TMAXS(d, s, scalar[0]);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    TSTORE(gout, d);
    pipe_barrier(PIPE_ALL);
    TADDS(d, s, out[1]);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    TSTORE(gagain, d);
    set_flag(PIPE_MTE3, PIPE_S, EVENT_ID0);
    wait_flag(PIPE_MTE3, PIPE_S, EVENT_ID0);
    set_flag(PIPE_MTE3, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID0);
    TMULS(d, s, again[2]);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    TSTORE(gthird, d);
    TSTORE(gsrc, d);
}
