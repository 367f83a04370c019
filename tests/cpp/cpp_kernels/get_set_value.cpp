// pto-isa's Tile::GetValue / SetValue (pto_tile.hpp): the scalar unit reads an element of a Vec tile
// a vector instruction wrote, and writes one the store then moves - in float, half and int16.
#include <pto/pto-inst.hpp>

using namespace pto;

template <typename T> using G = GlobalTensor<T, Shape<1, 1, 1, 4, 16>, Stride<1, 1, 1, 16, 1>>;

template <typename T> static void scale_and_poke(__gm__ T *x, __gm__ T *out, uint32_t at)
{
    Tile<TileType::Vec, T, 4, 16> t;
    TASSIGN(t, at);
    G<T> gx(x), go(out);
    TLOAD(t, gx);
    TADD(t, t, t);
    T v = t.GetValue(17);                 // row 1, column 1 of the doubled tile
    t.SetValue(0, T(float(v) + 1.0f));
    t.SetValue(63, v);
    TSTORE(go, t);
}

extern "C" __global__ AICORE void get_set_value(__gm__ float *xf, __gm__ float *of, __gm__ half *xh,
                                                __gm__ half *oh, __gm__ int16_t *xi, __gm__ int16_t *oi)
{
    if (get_subblockid() != 0) return;
    scale_and_poke(xf, of, 0x0);
    scale_and_poke(xh, oh, 0x400);
    scale_and_poke(xi, oi, 0x800);
}
