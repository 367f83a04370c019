// An SPMD kernel as pto-isa writes them (kernels/manual/a2a3/topk): each block offsets its GM views
// by get_block_idx() - block b doubles rows [8 b, 8 b + 8) of x into y.
#include <pto/pto-inst.hpp>
using namespace pto;
extern "C" __global__ AICORE void twice(__gm__ float *x, __gm__ float *y)
{
    using G = GlobalTensor<float, Shape<1, 1, 1, 8, 16>, Stride<1, 1, 1, 16, 1>>;
    using T = Tile<TileType::Vec, float, 8, 16, BLayout::RowMajor, -1, -1>;
    T t(8, 16);
    TASSIGN(t, 0x0);
    G gx(x + get_block_idx() * 128), gy(y + get_block_idx() * 128);
    TLOAD(t, gx);
    TADD(t, t, t);
    TSTORE(gy, t);
}
