// TPREFETCH_ASYNC as pto-isa's tprefetch_async test spells it: a context over the SDMA workspace, the
// prefetch of one flat line, a wait on the context's session, then the data moved as it is (the
// prefetch changes none).  `again` gets it only where the prefetch was submitted (valid()): on the
// device and in ptopipe; pto-isa's CPU simulator returns an empty event.  The data tile keeps off
// UB 0x0..0xff, the context's SDMA scratch.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int N = 256;
using G = GlobalTensor<float, Shape<1, 1, 1, 1, N>, Stride<N, N, N, N, 1>>;

extern "C" __global__ AICORE void prefetch(__gm__ float *src, __gm__ float *dst, __gm__ float *again,
                                           __gm__ uint8_t *ws)
{
    if (get_subblockid() != 0) {
        return;
    }
    G s(src), d(dst), a(again);
    PrefetchAsyncContext ctx(ws);
    comm::AsyncEvent e = TPREFETCH_ASYNC(s, ctx);
    const bool submitted = e.valid();
    e.Wait(ctx.session);         // (pto-isa's CPU simulator's context has no GetSession())
    Tile<TileType::Vec, float, 1, N> t;
    TASSIGN(t, 0x100);
    TLOAD(t, s);
    set_flag(PIPE_MTE2, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_MTE3, EVENT_ID0);
    TSTORE(d, t);
    if (submitted) {
        TSTORE(a, t);
    }
}
