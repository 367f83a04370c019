// A TPipe<..., IsNoSplit = true> constructed by both Vector sub-blocks.  Under pto-isa on A5 a
// no-split pipe has one lane, AIV0, so AIV1's construction is a ConfigError whose fix speaks C++.
#include <pto/pto-inst.hpp>

using namespace pto;

using Pipe = TPipe<0, Direction::DIR_C2V, 16 * 16 * 4, 2, 2, true>;
extern "C" __global__ AICORE void vec_kernel(__gm__ float *fifo)
{
    Pipe pipe(fifo, 0x10000, 0);
}
