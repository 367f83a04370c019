// Events made and waited on in a loop, on one Vector core: each iteration's TADDS waits on the
// previous instruction's event and is waited on by TSYNC (a call site's later calls reuse its
// prepared call, so these events are kept by that path).  out = x + ITER.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int R = 8, C = 16, ITER = 4;
using G = GlobalTensor<float, Shape<1, 1, 1, R, C>, Stride<1, 1, 1, C, 1>>;

extern "C" __global__ AICORE void vec_kernel(__gm__ float *x, __gm__ float *out)
{
    if (get_subblockid() != 0) return;
    Tile<TileType::Vec, float, R, C> t;
    TASSIGN(t, 0x0);
    G gx(x), go(out);
    Event<Op::TLOAD, Op::TADDS> loaded;
    loaded = TLOAD(t, gx);
    Event<Op::TADDS, Op::TADDS> added;
    added = TADDS(t, t, 1.0f, loaded);
    TSYNC(added);
    for (int i = 1; i < ITER; ++i) {
        added = TADDS(t, t, 1.0f, added);
        TSYNC(added);
    }
    TSTORE(go, t, added);
}
