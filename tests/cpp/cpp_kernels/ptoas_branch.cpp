// A Vector kernel as ptoas writes one from a .pto function whose work is under an scf.if on a
// scalar argument: the body in its side's section, every tile declared in the branch.
// y = |x| (16 x 16 f32, each Vector lane its 8 rows) when n > 0; nothing otherwise.
#include "pto/pto-inst.hpp"
using namespace pto;

using GT = GlobalTensor<float, pto::Shape<1, 1, 1, 8, 16>, pto::Stride<128, 128, 128, 16, 1>, pto::Layout::ND>;

__global__ AICORE void abs_if_block(__gm__ float* v1, __gm__ float* v2, int32_t v3) {
  #if defined(__DAV_VEC__)
  set_mask_norm();
  set_vector_mask(-1, -1);
  if (v3 > 0) {
    Tile<TileType::Vec, float, 8, 16, BLayout::RowMajor, 8, 16, SLayout::NoneBox, 512, PadValue::Null, CompactMode::Null> v4;
    TASSIGN(v4, 0);
    GT v5 = GT(v1 + get_subblockid() * 128);
    GT v6 = GT(v2 + get_subblockid() * 128);
    TLOAD(v4, v5);
    TABS(v4, v4);
    TSTORE(v6, v4);
  }
  #endif // __DAV_VEC__
  return;
}
