// Tile::data(): a pointer whose value is the tile's byte address, as ptoas reads it to bind a
// second tile at a first one's address.  AIV0 loads x into a tile at 4096, binds a second tile at
// data() of the first and stores that one to out at row (address / 512): out[8:16] = x.  With
// `unbound`, data() of a tile nothing bound: an error at that line.
#include <pto/pto-inst.hpp>
using namespace pto;
using VT = Tile<TileType::Vec, float, 8, 16, BLayout::RowMajor, -1, -1, SLayout::NoneBox, 512, PadValue::Null, CompactMode::Null>;
using GT = GlobalTensor<float, pto::Shape<1, 1, 1, 8, 16>, pto::Stride<128, 128, 128, 16, 1>>;
AICORE void data_vec(__gm__ float* x, __gm__ float* out, int32_t unbound) {
  if (get_subblockid() != 0) return;
  VT first = VT(8, 16);
  TASSIGN(first, 4096);
  TLOAD(first, GT(x));
  VT second = VT(8, 16);
  __ubuf__ float* at = first.data();
  uint64_t addr = reinterpret_cast<uint64_t>(at);
  TASSIGN(second, addr);
  TSTORE(GT(out + addr / 512 * 16), second);
  if (unbound) {
    VT never = VT(8, 16);
    (void) never.data();
  }
}
