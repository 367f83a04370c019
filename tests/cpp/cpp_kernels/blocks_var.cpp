// blocks_idx.cpp with the device compiler's builtin variables, as pto-isa's NPU test kernels spell
// them: block b of block_num doubles its share of x into y (8 rows each of 2 blocks).
#include <pto/pto-inst.hpp>
using namespace pto;
extern "C" __global__ AICORE void twice(__gm__ float *x, __gm__ float *y)
{
    using G = GlobalTensor<float, Shape<1, 1, 1, 8, 16>, Stride<1, 1, 1, 16, 1>>;
    using T = Tile<TileType::Vec, float, 8, 16, BLayout::RowMajor, -1, -1>;
    T t(8, 16);
    TASSIGN(t, 0x0);
    int64_t share = 256 / int64_t(block_num);           // x's 256 elements over the blocks
    G gx(x + block_idx * share), gy(y + block_idx * share);
    TLOAD(t, gx);
    TADD(t, t, t);
    TSTORE(gy, t);
}
