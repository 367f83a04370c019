// Intra-core events on one Vector core per sub-block, no cross-core pipe: TLOAD -> TEXP ->
// TSTORE ordered by set_flag / wait_flag (what a kernel needs in manual sync), and the same
// through pto-isa's events: an Event<SrcOp, DstOp> assigned from an instruction, waited by TSYNC and Wait().
// out0 = exp(x), out1 = exp(x) + x.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int R = 16, C = 32;
using G = GlobalTensor<float, Shape<1, 1, 1, R, C>, Stride<1, 1, 1, C, 1>>;

extern "C" __global__ AICORE void vec_kernel(__gm__ float *x, __gm__ float *out0, __gm__ float *out1)
{
    if (get_subblockid() != 0) return;
    Tile<TileType::Vec, float, R, C> t, e, s;
    TASSIGN(t, 0x0);
    TASSIGN(e, 0x1000);
    TASSIGN(s, 0x2000);
    G gx(x), g0(out0), g1(out1);
    TLOAD(t, gx);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    TEXP(e, t);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID1);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID1);
    TSTORE(g0, e);
    Event<Op::TADD, Op::TSTORE_VEC> added;
    added = TADD(s, e, t);
    TSYNC(added);
    Event<Op::TSTORE_VEC, Op::TLOAD> stored;
    stored = TSTORE(g1, s);
    stored.Wait();
    pipe_barrier(PIPE_ALL);
}
