// ptopipe's own TileVec / TileMat shorthands, which pto-isa does not have: the kernel runs, and
// the build's deprecation warnings reach the user at these lines (run's summary, check's verdict).
#include <pto/pto-inst.hpp>

using namespace pto;

extern "C" __global__ AICORE void vec_kernel(__gm__ float *out)
{
    TileVec<float, 8, 16> v;  // VEC
    TileMat<float, 8, 16> m;  // MAT
    TASSIGN(v, 0x0);
    TEXPANDS(v, 1.0f);
    GlobalTensor<float, Shape<1, 1, 1, 8, 16>, Stride<1, 1, 1, 16, 1>> go(out + get_subblockid() * 8 * 16);
    TSTORE(go, v);
    (void)m;
}
