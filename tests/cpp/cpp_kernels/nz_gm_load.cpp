// An NZ GlobalTensor (pto-isa's Layout::NZ: x in GM as 16x8 f32 fractals, column block by
// column block): the Cube TLOADs it into an NZ Mat tile - a 16 x 16 matrix, rows d2*d3 and
// columns d0*d1*d4 - multiplies by I and stores the result ND.  out = x.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int N = 16;
using GNZ = GlobalTensor<float, Shape<1, N / 8, 1, 16, 8>, Stride<N * N, 16 * 8, 16 * 8, 8, 1>, Layout::NZ>;
using GND = GlobalTensor<float, Shape<1, 1, 1, N, N>, Stride<1, 1, 1, N, 1>>;
extern "C" __global__ AICORE void cube_kernel(__gm__ float *xnz, __gm__ float *eye, __gm__ float *out)
{
    Tile<TileType::Mat, float, N, N, BLayout::ColMajor, N, N, SLayout::RowMajor, 512> x_l1;
    Tile<TileType::Mat, float, N, N> e_l1;
    TileLeft<float, N, N> x_l0;
    TileRight<float, N, N> e_l0;
    TileAcc<float, N, N> acc;
    TASSIGN(x_l1, 0x0);
    TASSIGN(e_l1, 0x1000);
    TASSIGN(x_l0, 0x0);
    TASSIGN(e_l0, 0x0);
    TASSIGN(acc, 0x0);
    GNZ gx(xnz);
    GND ge(eye), go(out);
    TLOAD(x_l1, gx);
    TLOAD(e_l1, ge);
    TMOV(x_l0, x_l1);
    TMOV(e_l0, e_l1);
    TMATMUL(acc, x_l0, e_l0);
    TSTORE(go, acc);
}
extern "C" __global__ AICORE void vec_kernel(__gm__ float *xnz, __gm__ float *eye, __gm__ float *out) {}
