// A Vector-only kernel as PTOAS's test/compile_cpp writes one: pto-isa's pto/common/pto_instr.hpp
// and the whole file under the A2A3 Vector compile's macros (it exists only there).  y = |x|, x 16 x 16,
// each Vector lane its 8 rows.
#if __CCE_AICORE__ == 220 && defined(__DAV_C220_VEC__)
#include "pto/common/pto_instr.hpp"
using namespace pto;
using GT = GlobalTensor<float, pto::Shape<1, 1, 1, 8, 16>, pto::Stride<128, 128, 128, 16, 1>>;
using VT = Tile<TileType::Vec, float, 8, 16, BLayout::RowMajor, 8, 16, SLayout::NoneBox, 512, PadValue::Null>;
__global__ AICORE void abs_kernel(__gm__ float* x, __gm__ float* y) {
  GT gx = GT(x + get_subblockid() * 128);
  GT gy = GT(y + get_subblockid() * 128);
  VT a;
  TASSIGN(a, 0);
  VT b;
  TASSIGN(b, 4096);
  TLOAD(a, gx);
  TABS(b, a);
  TSTORE(gy, b);
}
#endif
