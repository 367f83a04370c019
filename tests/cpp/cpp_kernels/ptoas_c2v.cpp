// A C2V kernel spelled as ptoas writes one (--pto-arch=a3 --enable-insert-sync): two named
// functions, each body under the device compiler's side macro INSIDE the function, tiles with
// all eleven Tile parameters and a dynamic valid shape, a second tile bound at the first's
// address through data(), the Vector side's mask setup and a barrier tail outside the sections.
// out[r] = a[r] @ b + bias[r] for the n 16-row blocks r of an (n*16) x 16 matrix; each Vector lane
// takes its 8 rows of a block (TILE_UP_DOWN).  Some of InsertSync's events only: run with sync="auto".
#include "pto/pto-inst.hpp"
using namespace pto;

static AICORE inline void tail_barrier() { pipe_barrier(PIPE_ALL); }

using Pipe = TPipe<0, Direction::DIR_C2V, 1024, 8, 8, false>;
using MatT = Tile<TileType::Mat, float, 16, 16, BLayout::ColMajor, -1, -1, SLayout::RowMajor, 512, PadValue::Null, CompactMode::Null>;
using LeftT = Tile<TileType::Left, float, 16, 16, BLayout::RowMajor, -1, -1, SLayout::RowMajor, 512, PadValue::Null, CompactMode::Null>;
using RightT = Tile<TileType::Right, float, 16, 16, BLayout::RowMajor, -1, -1, SLayout::ColMajor, 512, PadValue::Null, CompactMode::Null>;
using AccT = Tile<TileType::Acc, float, 16, 16, BLayout::ColMajor, -1, -1, SLayout::RowMajor, 1024, PadValue::Null, CompactMode::Null>;
using HalfT = Tile<TileType::Vec, float, 8, 16, BLayout::RowMajor, -1, -1, SLayout::NoneBox, 512, PadValue::Null, CompactMode::Null>;
using PopT = Tile<TileType::Vec, float, 8, 16, BLayout::RowMajor, 8, 16, SLayout::NoneBox, 512, PadValue::Null, CompactMode::Null>;
using GBlock = GlobalTensor<float, pto::Shape<1, 1, 1, 16, 16>, pto::Stride<256, 256, 256, 16, 1>, pto::Layout::ND>;
using GHalf = GlobalTensor<float, pto::Shape<1, 1, 1, 8, 16>, pto::Stride<128, 128, 128, 16, 1>, pto::Layout::ND>;

AICORE void mm_aic(__gm__ float* a, __gm__ float* b, __gm__ float* bias, __gm__ float* out, __gm__ float* gm_slot_buffer, int32_t n) {
  const int32_t rows = 16;
  #if defined(__DAV_CUBE__)
  auto pipe = Pipe(gm_slot_buffer, 0, 0);
  MatT a_base = MatT(rows, rows);
  TASSIGN(a_base, 0);
  MatT a_l1 = MatT(rows, rows);
  __cbuf__ float* a_ptr = a_base.data();
  TASSIGN(a_l1, reinterpret_cast<uint64_t>(a_ptr));
  MatT b_l1 = MatT(rows, rows);
  TASSIGN(b_l1, 4096);
  LeftT a_l0 = LeftT(rows, rows);
  TASSIGN(a_l0, 0);
  RightT b_l0 = RightT(rows, rows);
  TASSIGN(b_l0, 0);
  AccT acc = AccT(rows, rows);
  TASSIGN(acc, 0);
  GBlock gb = GBlock(b, pto::Shape<1, 1, 1, 16, 16>(), pto::Stride<256, 256, 256, 16, 1>());
  TLOAD(b_l1, gb);
  set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
  wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
  TMOV(b_l0, b_l1);
  for (size_t i = 0; i < (size_t) n; i += 1) {
    GBlock ga = GBlock(a + i * 256, pto::Shape<1, 1, 1, 16, 16>(), pto::Stride<256, 256, 256, 16, 1>());
    TLOAD(a_l1, ga);
    TMOV(a_l0, a_l1);
    TMATMUL(acc, a_l0, b_l0);
    TPUSH<Pipe, AccT, TileSplitAxis::TILE_UP_DOWN>(pipe, acc);
  }
  #endif // __DAV_CUBE__

  tail_barrier();
  return;
}

AICORE void mm_aiv(__gm__ float* a, __gm__ float* b, __gm__ float* bias, __gm__ float* out, __gm__ float* gm_slot_buffer, int32_t n) {
  #if defined(__DAV_VEC__)
  set_mask_norm();
  set_vector_mask(-1, -1);
  auto pipe = Pipe(gm_slot_buffer, 0, 0);
  HalfT x = HalfT(8, 16);
  TASSIGN(x, 8192);
  HalfT y = HalfT(8, 16);
  TASSIGN(y, 9216);
  int64_t sub = get_subblockid();
  for (size_t i = 0; i < (size_t) n; i += 1) {
    size_t row = i * 16 + (size_t) sub * 8;
    PopT c;
    TPOP<Pipe, PopT, TileSplitAxis::TILE_UP_DOWN>(pipe, c);
    GHalf gbias = GHalf(bias + row * 16, pto::Shape<1, 1, 1, 8, 16>(), pto::Stride<128, 128, 128, 16, 1>());
    TLOAD(x, gbias);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    TADD(y, c, x);
    TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
    GHalf gout = GHalf(out + row * 16, pto::Shape<1, 1, 1, 8, 16>(), pto::Stride<128, 128, 128, 16, 1>());
    TSTORE(gout, y);
  }
  #endif // __DAV_VEC__

  tail_barrier();
  return;
}
