// A Vector kernel (the file's only kernel: no --aiv needed) whose shape error is inside a helper
// two call levels down; only the second call of the outer helper is wrong (a 16-row dst from
// 8-row sources).
#include <pto/pto-inst.hpp>

using namespace pto;

template <typename D, typename S> AICORE inline void addInto(D &d, S &a)
{
    TADD(d, a, a);
}

template <typename D, typename S> AICORE void twice(D &d, S &a)
{
    addInto(d, a);
}

extern "C" __global__ AICORE void kernel(__gm__ float *x)
{
    if (get_subblockid() != 0) return;
    Tile<TileType::Vec, float, 8, 32> a, b;
    Tile<TileType::Vec, float, 16, 32> big;
    TASSIGN(a, 0x0);
    TASSIGN(b, 0x400);
    TASSIGN(big, 0x800);
    GlobalTensor<float, Shape<1, 1, 1, 8, 32>, Stride<1, 1, 1, 32, 1>> gx(x);
    TLOAD(a, gx);
    twice(b, a);
    twice(big, a);
}
