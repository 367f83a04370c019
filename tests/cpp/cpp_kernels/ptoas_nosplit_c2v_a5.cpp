// ptoas's C++ of nosplit_c2v_a5.pto (ptoas --pto-arch=a5 --enable-insert-sync nosplit_c2v_a5.pto): the
// Cube's TPipe<0, DIR_C2V, 1024, 8, 2, true> pushes TILE_NO_SPLIT; the Vector kernel's body, the
// pipe's construction included, runs under if (get_subblockid() == 0) - the A5 no-split pipe's one
// lane, AIV0.  tests/cpp/test_nosplit_lanes_a5.py runs it beside the .pto.
#include "pto/pto-inst.hpp"
using namespace pto;

enum class PTOAutoSyncTailMode : int {
  kBarrierAll = 0,
  kSetWaitMte3ToSEvent0 = 1,
};

static AICORE inline void ptoas_auto_sync_tail(
    PTOAutoSyncTailMode mode = PTOAutoSyncTailMode::kBarrierAll) {
  switch (mode) {
  case PTOAutoSyncTailMode::kSetWaitMte3ToSEvent0:
    set_flag(PIPE_MTE3, PIPE_S, EVENT_ID0);
    wait_flag(PIPE_MTE3, PIPE_S, EVENT_ID0);
    break;
  case PTOAutoSyncTailMode::kBarrierAll:
  default:
    pipe_barrier(PIPE_ALL);
    break;
  }
}

static AICORE void cube(__gm__ float* v1, __gm__ float* v2) {
  unsigned v3 = 0;
  __gm__ void * v4 = nullptr;
  const int32_t v5 = 2048;
  const int32_t v6 = 16;
  const int32_t v7 = 3;
  const int32_t v8 = 1;
  const int32_t v9 = 0;
  const int64_t v10 = 0;
  const int64_t v11 = 1024;
  using T = float;

  #if defined(__DAV_CUBE__)
  auto v12 = TPipe<0, Direction::DIR_C2V, 1024, 8, 2, true>(v4, v5, v9);
  Tile<TileType::Mat, float, 16, 16, BLayout::ColMajor, 16, 16, SLayout::RowMajor, 512, PadValue::Null, CompactMode::Null> v13;
  TASSIGN(v13, v10);
  Tile<TileType::Right, float, 16, 16, BLayout::RowMajor, 16, 16, SLayout::ColMajor, 512, PadValue::Null, CompactMode::Null> v14;
  TASSIGN(v14, v10);
  Tile<TileType::Mat, float, 16, 16, BLayout::ColMajor, 16, 16, SLayout::RowMajor, 512, PadValue::Null, CompactMode::Null> v15;
  TASSIGN(v15, v11);
  Tile<TileType::Left, float, 16, 16, BLayout::ColMajor, 16, 16, SLayout::RowMajor, 512, PadValue::Null, CompactMode::Null> v16;
  TASSIGN(v16, v10);
  Tile<TileType::Acc, float, 16, 16, BLayout::ColMajor, 16, 16, SLayout::RowMajor, 1024, PadValue::Null, CompactMode::Null> v17;
  TASSIGN(v17, v10);
  pto::Shape<1, 1, 1, 16, 16> v18 = pto::Shape<1, 1, 1, 16, 16>();
  pto::Stride<256, 256, 256, 16, 1> v19 = pto::Stride<256, 256, 256, 16, 1>();
  GlobalTensor<float, pto::Shape<1, 1, 1, 16, 16>, pto::Stride<256, 256, 256, 16, 1>, pto::Layout::ND> v20 = GlobalTensor<float, pto::Shape<1, 1, 1, 16, 16>, pto::Stride<256, 256, 256, 16, 1>, pto::Layout::ND>(v2 + (v3 + v3 * (unsigned) v6 + v3 * (unsigned) v8), v18, v19);
  set_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID0);
  set_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID1);
  set_flag(PIPE_M, PIPE_MTE1, EVENT_ID0);
  set_flag(PIPE_FIX, PIPE_M, EVENT_ID0);
  TLOAD(v13, v20);
  set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
  wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0);
  TMOV(v14, v13);
  for (size_t v21 = (size_t) v9; v21 < ((size_t) v7); v21 += (size_t) v8) {
    pto::Shape<1, 1, 1, 16, 16> v22 = pto::Shape<1, 1, 1, 16, 16>();
    pto::Stride<256, 256, 256, 16, 1> v23 = pto::Stride<256, 256, 256, 16, 1>();
    GlobalTensor<float, pto::Shape<1, 1, 1, 16, 16>, pto::Stride<256, 256, 256, 16, 1>, pto::Layout::ND> v24 = GlobalTensor<float, pto::Shape<1, 1, 1, 16, 16>, pto::Stride<256, 256, 256, 16, 1>, pto::Layout::ND>(v1 + (v3 + (unsigned) ((int32_t) (uint32_t) ((int32_t) v21) * (uint32_t) v6) * (unsigned) v6 + v3 * (unsigned) v8), v22, v23);
    wait_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID0);
    TLOAD(v15, v24);
    set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID1);
    wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID1);
    wait_flag(PIPE_M, PIPE_MTE1, EVENT_ID0);
    TMOV(v16, v15);
    set_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID0);
    set_flag(PIPE_MTE1, PIPE_M, EVENT_ID0);
    wait_flag(PIPE_MTE1, PIPE_M, EVENT_ID0);
    wait_flag(PIPE_FIX, PIPE_M, EVENT_ID0);
    TMATMUL(v17, v16, v14);
    set_flag(PIPE_M, PIPE_MTE1, EVENT_ID0);
    set_flag(PIPE_M, PIPE_FIX, EVENT_ID0);
    wait_flag(PIPE_M, PIPE_FIX, EVENT_ID0);
    TPUSH<TPipe<0, Direction::DIR_C2V, 1024, 8, 2, true>, Tile<TileType::Acc, float, 16, 16, BLayout::ColMajor, 16, 16, SLayout::RowMajor, 1024, PadValue::Null, CompactMode::Null>, TileSplitAxis::TILE_NO_SPLIT>(v12, v17);
    set_flag(PIPE_FIX, PIPE_M, EVENT_ID0);
  }
  wait_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID0);
  wait_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID1);
  wait_flag(PIPE_M, PIPE_MTE1, EVENT_ID0);
  wait_flag(PIPE_FIX, PIPE_M, EVENT_ID0);
  #endif // __DAV_CUBE__

  ptoas_auto_sync_tail(PTOAutoSyncTailMode::kBarrierAll);
  return;
}

static AICORE void vector(__gm__ float* v1, __gm__ float* v2) {
  unsigned v3 = 0;
  __gm__ void * v4 = nullptr;
  const int32_t v5 = 2048;
  const int32_t v6 = 16;
  const int32_t v7 = 3;
  const int32_t v8 = 1;
  const int32_t v9 = 0;
  const int64_t v10 = 0;
  const int64_t v11 = 1024;
  using T = float;

  #if defined(__DAV_VEC__)
  set_mask_norm();
  set_vector_mask(-1, -1);
  if (get_subblockid() == 0) {
  auto v12 = TPipe<0, Direction::DIR_C2V, 1024, 8, 2, true>(v4, v5, v9);
  Tile<TileType::Vec, float, 16, 16, BLayout::RowMajor, 16, 16, SLayout::NoneBox, 512, PadValue::Null, CompactMode::Null> v13;
  TASSIGN(v13, v10);
  Tile<TileType::Vec, float, 16, 16, BLayout::RowMajor, 16, 16, SLayout::NoneBox, 512, PadValue::Null, CompactMode::Null> v14;
  TASSIGN(v14, v11);
  set_flag(PIPE_V, PIPE_S, EVENT_ID0);
  set_flag(PIPE_V, PIPE_S, EVENT_ID1);
  set_flag(PIPE_V, PIPE_MTE2, EVENT_ID0);
  set_flag(PIPE_V, PIPE_MTE2, EVENT_ID1);
  set_flag(PIPE_MTE3, PIPE_V, EVENT_ID0);
  set_flag(PIPE_MTE3, PIPE_V, EVENT_ID1);
  for (size_t v15 = (size_t) v9; v15 < ((size_t) v7); v15 += (size_t) v8) {
    int32_t v16 = (int32_t) ((uint32_t) ((int32_t) v15) * (uint32_t) v6);
    Tile<TileType::Vec, float, 16, 16, BLayout::RowMajor, 16, 16, SLayout::NoneBox, 512, PadValue::Null, CompactMode::Null> v17;
    wait_flag(PIPE_V, PIPE_S, EVENT_ID0);
    TPOP<TPipe<0, Direction::DIR_C2V, 1024, 8, 2, true>, Tile<TileType::Vec, float, 16, 16, BLayout::RowMajor, 16, 16, SLayout::NoneBox, 512, PadValue::Null, CompactMode::Null>, TileSplitAxis::TILE_NO_SPLIT>(v12, v17);
    set_flag(PIPE_S, PIPE_V, EVENT_ID0);
    pto::Shape<1, 1, 1, 16, 16> v18 = pto::Shape<1, 1, 1, 16, 16>();
    pto::Stride<256, 256, 256, 16, 1> v19 = pto::Stride<256, 256, 256, 16, 1>();
    GlobalTensor<float, pto::Shape<1, 1, 1, 16, 16>, pto::Stride<256, 256, 256, 16, 1>, pto::Layout::ND> v20 = GlobalTensor<float, pto::Shape<1, 1, 1, 16, 16>, pto::Stride<256, 256, 256, 16, 1>, pto::Layout::ND>(v1 + (v3 + (unsigned) v16 * (unsigned) v6 + v3 * (unsigned) v8), v18, v19);
    wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID0);
    TLOAD(v13, v20);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_S, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID0);
    TADD(v14, v17, v13);
    set_flag(PIPE_V, PIPE_MTE2, EVENT_ID0);
    set_flag(PIPE_V, PIPE_S, EVENT_ID0);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    TFREE<TPipe<0, Direction::DIR_C2V, 1024, 8, 2, true>, TileSplitAxis::TILE_NO_SPLIT>(v12);
    pto::Shape<1, 1, 1, 16, 16> v21 = pto::Shape<1, 1, 1, 16, 16>();
    pto::Stride<256, 256, 256, 16, 1> v22 = pto::Stride<256, 256, 256, 16, 1>();
    GlobalTensor<float, pto::Shape<1, 1, 1, 16, 16>, pto::Stride<256, 256, 256, 16, 1>, pto::Layout::ND> v23 = GlobalTensor<float, pto::Shape<1, 1, 1, 16, 16>, pto::Stride<256, 256, 256, 16, 1>, pto::Layout::ND>(v2 + (v3 + (unsigned) v16 * (unsigned) v6 + v3 * (unsigned) v8), v21, v22);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    pipe_barrier(PIPE_MTE3);
    TSTORE(v23, v14);
    set_flag(PIPE_MTE3, PIPE_V, EVENT_ID0);
  }
  wait_flag(PIPE_V, PIPE_S, EVENT_ID0);
  wait_flag(PIPE_V, PIPE_S, EVENT_ID1);
  wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID0);
  wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID1);
  wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID0);
  wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID1);
  }
  #endif // __DAV_VEC__

  ptoas_auto_sync_tail(PTOAutoSyncTailMode::kBarrierAll);
  return;
}

__global__ AICORE void entry(__gm__ float* v1, __gm__ float* v2, __gm__ float* v3, __gm__ float* v4) {
  using T = float;
  cube(v1, v2);
  vector(v3, v4);
  return;
}
