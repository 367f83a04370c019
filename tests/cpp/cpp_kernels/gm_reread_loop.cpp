// A loop that reads back, through its __gm__ pointer, GM it stored the same iteration (after
// the barrier that makes a store visible to the scalar unit) and branches on the value:
//   out[i] = x[i];  res[i] = x[i] + (out[i][0] > 100 ? 1 : 0)
#include <pto/pto-inst.hpp>
using namespace pto;
extern "C" __global__ AICORE void gm_reread_loop(__gm__ float *x, __gm__ float *out, __gm__ float *res, int64_t n)
{
    using G = GlobalTensor<float, Shape<1, 1, 1, 8, 8>, Stride<1, 1, 1, 8, 1>>;
    using T = Tile<TileType::Vec, float, 8, 8, BLayout::RowMajor, -1, -1>;
    T s(8, 8), d(8, 8);
    TASSIGN(s, 0x0);
    TASSIGN(d, 0x100);
    for (int64_t i = 0; i < n; ++i) {
        G gx(x + i * 64), go(out + i * 64), gr(res + i * 64);
        TLOAD(s, gx);
        TSTORE(go, s);
        pipe_barrier(PIPE_ALL);
        TADDS(d, s, out[i * 64] > 100.0f ? 1.0f : 0.0f);
        TSTORE(gr, d);
    }
}
