// SPMD kernels as pto-isa writes them: each block offsets its GM views by its index - block b
// doubles rows [8 b, 8 b + 8) of x into y - spelled with pto-isa's get_block_idx()
// (kernels/manual/a2a3/topk) and with the device compiler's builtin variables block_idx /
// block_num (pto-isa's NPU test kernels).
#include <pto/pto-inst.hpp>
using namespace pto;
using G = GlobalTensor<float, Shape<1, 1, 1, 8, 16>, Stride<1, 1, 1, 16, 1>>;
using T = Tile<TileType::Vec, float, 8, 16, BLayout::RowMajor, -1, -1>;

AICORE inline void twice_at(__gm__ float *x, __gm__ float *y, int64_t off)
{
    T t(8, 16);
    TASSIGN(t, 0x0);
    G gx(x + off), gy(y + off);
    TLOAD(t, gx);
    TADD(t, t, t);
    TSTORE(gy, t);
}

extern "C" __global__ AICORE void twice_idx(__gm__ float *x, __gm__ float *y)
{
    twice_at(x, y, get_block_idx() * 128);
}

extern "C" __global__ AICORE void twice_var(__gm__ float *x, __gm__ float *y)
{
    int64_t share = 256 / int64_t(block_num);           // x's 256 elements over the blocks
    twice_at(x, y, block_idx * share);
}
