// The address flow through a GM ring (C2V): the Cube TALLOCs a slot (a 32x64 f32 GlobalTensor),
// TSTOREs the 32x32 accumulator A @ B into both column halves and TPUSHes it; each Vector core
// TPOPs its 16-row half (TILE_UP_DOWN), TLOADs it, adds 1 and stores, then TFREEs the slot.
// The half inputs show `half` crossing into a Cube tile.  The ring is in GM: DIR_C2V on A2A3,
// DIR_C2V_GM on A5 (PTO_NPU_ARCH_A5).  out[r-block] = [P P] + 1, P = A @ B.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int R = 32, C = 32, ROUNDS = 2;
using Slot = GlobalTensor<float, Shape<1, 1, 1, R, 2 * C>, Stride<1, 1, 1, 2 * C, 1>>;
using Half = GlobalTensor<float, Shape<1, 1, 1, R / 2, 2 * C>, Stride<1, 1, 1, 2 * C, 1>>;
#if defined(PTO_NPU_ARCH_A5)
using Pipe = TPipe<0, Direction::DIR_C2V_GM, R * 2 * C * 4, 2>;
#else
using Pipe = TPipe<0, Direction::DIR_C2V, R * 2 * C * 4, 2>;
#endif

extern "C" __global__ AICORE void cube_kernel(__gm__ half *a, __gm__ half *b, __gm__ uint8_t *fifo)
{
    Pipe pipe(fifo, 0, 0);
    Tile<TileType::Mat, half, R, C> a_l1, b_l1;
    TileLeft<half, R, C> a_l0;
    TileRight<half, R, C> b_l0;
    TileAcc<float, R, C> acc;
    TASSIGN(a_l1, 0x0);
    TASSIGN(b_l1, 0x1000);
    TASSIGN(a_l0, 0x0);
    TASSIGN(b_l0, 0x0);
    TASSIGN(acc, 0x0);
    GlobalTensor<half, Shape<1, 1, 1, R, C>, Stride<1, 1, 1, C, 1>> gb(b);
    TLOAD(b_l1, gb);
    TMOV(b_l0, b_l1);
    for (int r = 0; r < ROUNDS; ++r) {
        GlobalTensor<half, Shape<1, 1, 1, R, C>, Stride<1, 1, 1, C, 1>> ga(a + r * R * C);
        TLOAD(a_l1, ga);
        TMOV(a_l0, a_l1);
        TMATMUL(acc, a_l0, b_l0);
        Slot slot;
        TALLOC<Pipe, Slot, TileSplitAxis::TILE_UP_DOWN>(pipe, slot);
        for (int n = 0; n < 2; ++n) {
            GlobalTensor<float, Shape<1, 1, 1, R, C>, Stride<1, 1, 1, 2 * C, 1>> part(slot.data() + n * C);
            TSTORE(part, acc);
        }
        TPUSH<Pipe, Slot, TileSplitAxis::TILE_UP_DOWN>(pipe, slot);
    }
}

extern "C" __global__ AICORE void vec_kernel(__gm__ float *out, __gm__ uint8_t *fifo)
{
    Pipe pipe(fifo, 0, 0);
    Tile<TileType::Vec, float, R / 2, 2 * C> t, o;
    TASSIGN(t, 0x0);
    TASSIGN(o, 0x2000);
    const int64_t sub = get_subblockid();
    for (int r = 0; r < ROUNDS; ++r) {
        Half mine;
        TPOP<Pipe, Half, TileSplitAxis::TILE_UP_DOWN>(pipe, mine);
        TLOAD(t, mine);
        TADDS(o, t, 1.0f);
        Half dst(out + (r * R + sub * (R / 2)) * 2 * C);
        TSTORE(dst, o);
        TFREE<Pipe, Half, TileSplitAxis::TILE_UP_DOWN>(pipe, mine);
    }
}

// The address flow the other way (V2C): each Vector core TALLOCs its TILE_UP_DOWN half of a 32x32 f32
// slot, TSTOREs its half of x there and TPUSHes; the Cube TPOPs the whole slot and TFREEs it (the
// test reads the ring).  A lane writing the other lane's part through its slot's .data() is a
// MemoryConflictError at that TSTORE: with `reach` 1, AIV1 writes AIV0's part (.data() minus a half:
// both lanes write those bytes); with 2, AIV1 fills only 12 of its 16 rows and AIV0 writes the other
// 4, past its own half (no two writes meet there, so no race shows it: only AIV1's rows would differ).
#if defined(PTO_NPU_ARCH_A5)
using V2CPipe = TPipe<2, Direction::DIR_V2C_GM, R * C * 4, 2>;
#else
using V2CPipe = TPipe<2, Direction::DIR_V2C, R * C * 4, 2>;
#endif
using Whole = GlobalTensor<float, Shape<1, 1, 1, R, C>, Stride<1, 1, 1, C, 1>>;
template <int Rows> using Rows_ = GlobalTensor<float, Shape<1, 1, 1, Rows, C>, Stride<1, 1, 1, C, 1>>;
using Part = Rows_<R / 2>;

extern "C" __global__ AICORE void v2c_cube(__gm__ float *x, __gm__ uint8_t *fifo, int64_t reach)
{
    V2CPipe pipe(fifo, 0, 0);
    Whole whole;
    TPOP<V2CPipe, Whole, TileSplitAxis::TILE_UP_DOWN>(pipe, whole);
    TFREE<V2CPipe, Whole, TileSplitAxis::TILE_UP_DOWN>(pipe, whole);
}

extern "C" __global__ AICORE void v2c_vec(__gm__ float *x, __gm__ uint8_t *fifo, int64_t reach)
{
    V2CPipe pipe(fifo, 0, 0);
    Tile<TileType::Vec, float, R / 2, C> t;
    Tile<TileType::Vec, float, R / 2 - 4, C> head;
    Tile<TileType::Vec, float, 4, C> tail;
    TASSIGN(t, 0x0);
    TASSIGN(head, 0x0);
    TASSIGN(tail, 0x0);
    const int64_t sub = get_subblockid();
    Part mine_in(x + sub * (R / 2) * C);
    TLOAD(t, mine_in);
    Part slot;
    TALLOC<V2CPipe, Part, TileSplitAxis::TILE_UP_DOWN>(pipe, slot);
    if (reach == 2 && sub == 1) {
        Rows_<R / 2 - 4> first(slot.data());
        TSTORE(first, head);
    } else {
        TSTORE(slot, t);
    }
    if (reach == 1 && sub == 1) {
        Part theirs(slot.data() - (R / 2) * C);
        TSTORE(theirs, t);                  // AIV0's part of the slot
    }
    if (reach == 2 && sub == 0) {
        Rows_<4> past(slot.data() + (R - 4) * C);
        TSTORE(past, tail);                 // past AIV0's half: AIV1's last 4 rows
    }
    TPUSH<V2CPipe, Part, TileSplitAxis::TILE_UP_DOWN>(pipe, slot);
}
