// pto-isa's custom pad values (constants.hpp: PadValueCustom, PadValueCustom16, PadCustom<V>):
// tiles whose PadVal is one, padded by TFILLPAD and TFILLPAD_EXPAND in four element types.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int R = 4, C = 32;
static_assert(getCustomPadBits(PadValueCustom(-1.0f)) == 0xBF800000U && isCustomPadValue(PadCustom<42>) &&
                  !isCustomPadValue(PadValue::Min) && getCustomPadBits(PadValueCustom(int8_t(-3))) == 0xFDU &&
                  static_cast<uint64_t>(PadValueCustom16(0xBC00)) == 0x10000BC00ULL,
              "constants.hpp's encoding");

template <typename T, int Cols = C> using G = GlobalTensor<T, TileShape2D<T, R, Cols, Layout::ND>, BaseShape2D<T, R, Cols, Layout::ND>>;
template <typename T, PadValue P, int Cols = C>
using Padded = Tile<TileType::Vec, T, R, Cols, BLayout::RowMajor, R, Cols, SLayout::NoneBox, 512, P>;
template <typename T> using Part = Tile<TileType::Vec, T, R, C, BLayout::RowMajor, R, DYNAMIC>;

// x's first `cols` columns, the rest dst's pad value
template <typename T, PadValue P, int Cols = C>
static void pad(__gm__ T *x, __gm__ T *out, int cols, uint32_t at)
{
    Tile<TileType::Vec, T, R, C> whole;
    Part<T> part(cols);                    // its first `cols` columns
    Padded<T, P, Cols> dst;
    TASSIGN(whole, at);
    TASSIGN(part, at);
    TASSIGN(dst, at + 0x400);
    G<T> gx(x);
    TLOAD(whole, gx);
    if constexpr (Cols == C)
        TFILLPAD(dst, part);
    else
        TFILLPAD_EXPAND(dst, part);
    G<T, Cols> go(out);
    TSTORE(go, dst);
}

extern "C" __global__ AICORE void custom_pad(__gm__ float *f32, __gm__ float *f32_out, __gm__ half *f16,
                                             __gm__ half *f16_out, __gm__ int8_t *i8, __gm__ int8_t *i8_out,
                                             __gm__ int32_t *i32, __gm__ int32_t *i32_out)
{
    if (get_subblockid() != 0) return;
    pad<float, PadValueCustom(-1.0f)>(f32, f32_out, 5, 0x0);
    pad<half, PadValueCustom16(0xBC00), 2 * C>(f16, f16_out, 7, 0x1000);     // -1.0 in half, expanded
    pad<int8_t, PadValueCustom(int8_t(-3))>(i8, i8_out, 3, 0x2000);
    pad<int32_t, PadCustom<42>>(i32, i32_out, 9, 0x3000);
}
