// SYNCALL<SyncCoreType::AIVOnly> between the two Vector sub-blocks: lane 0 writes ws = 2 x to GM,
// lane 1 reads it after the barrier and writes out = ws + 1.  `mode`: 0 no barrier (a GM race),
// 1 the hard form, 2 the soft form on the int32 workspace `sw` with usedCores = `used`, 3 the hard
// form on lane 0 only (lane 1 never reaches it).
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int R = 16, C = 16;
using G = GlobalTensor<float, Shape<1, 1, 1, R, C>, Stride<1, 1, 1, C, 1>>;
using W = GlobalTensor<int32_t, Shape<1, 1, 1, 1, 16>, Stride<1, 1, 1, 16, 1>>;

extern "C" __global__ AICORE void vec_kernel(__gm__ float *x, __gm__ float *ws, __gm__ float *out,
                                             __gm__ int32_t *sw, int32_t mode, int32_t used)
{
    Tile<TileType::Vec, float, R, C> t;
    TASSIGN(t, 0x0);
    G gx(x), gws(ws), gout(out);
    W gsw(sw);
    if (get_subblockid() == 0) {
        TLOAD(t, gx);
        TMULS(t, t, 2.0f);
        TSTORE(gws, t);
    }
    if (mode == 1) {
        SYNCALL<SyncCoreType::AIVOnly>();
    } else if (mode == 3 && get_subblockid() == 0) {
        SYNCALL<SyncCoreType::AIVOnly>();
    } else if (mode == 2) {
        SYNCALL<SyncAllMode::Soft, SyncCoreType::AIVOnly>(gsw, used);
    }
    if (get_subblockid() == 1) {
        TLOAD(t, gws);
        TADDS(t, t, 1.0f);
        TSTORE(gout, t);
    }
}
