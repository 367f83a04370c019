// A TPipe<..., IsNoSplit = true> constructed by both Vector sub-blocks, at function scope as
// pto-isa's A5 no-split test does.  On A5 a no-split pipe has one lane, AIV0: AIV1's
// construction is a warning (what its constructor signals on the device), and with ``use`` 1
// AIV1 frees the pipe - a ConfigError whose fix speaks C++.
#include <pto/pto-inst.hpp>

using namespace pto;

using Pipe = TPipe<0, Direction::DIR_C2V, 16 * 16 * 4, 2, 2, true>;
extern "C" __global__ AICORE void vec_kernel(__gm__ float *fifo, int64_t use)
{
    Pipe pipe(fifo, 0x10000, 0);
    if (use != 0 && get_subblockid() == 1) {
        TFREE<Pipe, TileSplitAxis::TILE_NO_SPLIT>(pipe);
    }
}

// pto-isa's A5 one-lane form (its tpush_a5 no-split tests): only AIV0 constructs and pops the pipe,
// the Vector body under get_subblockid() == 0, ``tiles`` tiles through the pipe's 2 slots.  A5 gives
// the pipe one lane under spec and pto-isa and runs it; A2A3 gives an IsNoSplit pipe both lanes, so
// the Cube's push waits for AIV1 - a deadlock whose fix names --platform a5.  pto-isa's CPU
// simulator runs it with one lane too, but with two Vector threads it releases a slot only after
// both freed it: push #2 waits forever (tests/cpp/test_nosplit_lanes_a5.py runs it there).
extern "C" __global__ AICORE void cube_one_lane(__gm__ float *fifo, int64_t tiles)
{
    Pipe pipe(fifo, 0x10000, 0);
    TileAcc<float, 16, 16> acc;
    TASSIGN(acc, 0x0);
    for (int64_t i = 0; i < tiles; ++i) {
        TPUSH<Pipe, TileAcc<float, 16, 16>, TileSplitAxis::TILE_NO_SPLIT>(pipe, acc);  // the push
    }
}

extern "C" __global__ AICORE void vec_one_lane(__gm__ float *fifo, int64_t tiles)
{
    if (get_subblockid() == 0) {
        Pipe pipe(fifo, 0x10000, 0);
        Tile<TileType::Vec, float, 16, 16> v;
        for (int64_t i = 0; i < tiles; ++i) {
            TPOP<Pipe, Tile<TileType::Vec, float, 16, 16>, TileSplitAxis::TILE_NO_SPLIT>(pipe, v);
            TFREE<Pipe, TileSplitAxis::TILE_NO_SPLIT>(pipe);
        }
    }
}

// pto-isa's CPU simulator's dual-lane form of the pipe (its tpushpop_cv_nosplit dual-lane cases):
// both Vector lanes construct it, pop and free every tile.  With two Vector threads the simulator
// hands AIV0 the tile and AIV1 zeros and releases a slot once both freed it, so ``tiles`` tiles
// pass the 2 slots; each lane stores the last tile it popped at out + 256 * its sub-block.  On the
// device AIV1 has no part in this pipe (A5): under pto-isa its TPOP is a ConfigError.  With
// ``lanes`` 1, pto-isa's device form: AIV1 constructs the pipe and pops nothing - the simulator
// then runs 2 tiles and stalls at push #2.
extern "C" __global__ AICORE void cube_two_lanes(__gm__ float *a, __gm__ float *eye, int64_t tiles)
{
    Pipe pipe((__gm__ void *)nullptr, 0x10000, 0);
    using G = GlobalTensor<float, Shape<1, 1, 1, 16, 16>, Stride<1, 1, 1, 16, 1>>;
    Tile<TileType::Mat, float, 16, 16> a1, e1;
    TileLeft<float, 16, 16> a0;
    TileRight<float, 16, 16> e0;
    TileAcc<float, 16, 16> acc;
    TASSIGN(a1, 0x0);
    TASSIGN(e1, 0x400);
    TASSIGN(a0, 0x0);
    TASSIGN(e0, 0x0);
    TASSIGN(acc, 0x0);
    G ga(a), ge(eye);
    TLOAD(a1, ga);
    TLOAD(e1, ge);
    TMOV(a0, a1);
    TMOV(e0, e1);
    TMATMUL(acc, a0, e0);
    for (int64_t i = 0; i < tiles; ++i) {
        TPUSH<Pipe, TileAcc<float, 16, 16>, TileSplitAxis::TILE_NO_SPLIT>(pipe, acc);
    }
}

extern "C" __global__ AICORE void vec_two_lanes(__gm__ float *out, int64_t tiles, int64_t lanes)
{
    Pipe pipe((__gm__ void *)nullptr, 0x10000, 0);
    Tile<TileType::Vec, float, 16, 16> v;
    GlobalTensor<float, Shape<1, 1, 1, 16, 16>, Stride<1, 1, 1, 16, 1>> g(out + 256 * get_subblockid());
    for (int64_t i = 0; i < tiles && get_subblockid() < lanes; ++i) {
        TPOP<Pipe, Tile<TileType::Vec, float, 16, 16>, TileSplitAxis::TILE_NO_SPLIT>(pipe, v);  // both lanes pop
        TSTORE(g, v);
        TFREE<Pipe, TileSplitAxis::TILE_NO_SPLIT>(pipe);
    }
}
