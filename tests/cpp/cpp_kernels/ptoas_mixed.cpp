// What ptoas writes for a .pto function that uses Cube and Vector tiles and no sections (pypto's
// mixed kernels before their split): one __global__ function, no __DAV_CUBE__ / __DAV_VEC__ test.
// out = a @ b + bias, 16 x 16 f32: the product through GM (c), then a Vector add.
#include "pto/pto-inst.hpp"
using namespace pto;

using GT = GlobalTensor<float, pto::Shape<1, 1, 1, 16, 16>, pto::Stride<256, 256, 256, 16, 1>, pto::Layout::ND>;

__global__ AICORE void mm_bias_block(__gm__ float* v1, __gm__ float* v2, __gm__ float* v3, __gm__ float* v4,
                                     __gm__ float* v5) {
  Tile<TileType::Mat, float, 16, 16, BLayout::ColMajor, 16, 16, SLayout::RowMajor, 512, PadValue::Null, CompactMode::Null> v6;
  TASSIGN(v6, 0);
  Tile<TileType::Mat, float, 16, 16, BLayout::ColMajor, 16, 16, SLayout::RowMajor, 512, PadValue::Null, CompactMode::Null> v7;
  TASSIGN(v7, 1024);
  Tile<TileType::Left, float, 16, 16, BLayout::RowMajor, 16, 16, SLayout::RowMajor, 512, PadValue::Null, CompactMode::Null> v8;
  TASSIGN(v8, 0);
  Tile<TileType::Right, float, 16, 16, BLayout::RowMajor, 16, 16, SLayout::ColMajor, 512, PadValue::Null, CompactMode::Null> v9;
  TASSIGN(v9, 0);
  Tile<TileType::Acc, float, 16, 16, BLayout::ColMajor, 16, 16, SLayout::RowMajor, 1024, PadValue::Null, CompactMode::Null> v10;
  TASSIGN(v10, 0);
  GT v11 = GT(v1);
  GT v12 = GT(v2);
  GT v13 = GT(v4);
  TLOAD(v6, v11);
  TLOAD(v7, v12);
  TMOV(v8, v6);
  TMOV(v9, v7);
  TMATMUL(v10, v8, v9);
  TSTORE(v13, v10);
  Tile<TileType::Vec, float, 16, 16, BLayout::RowMajor, 16, 16, SLayout::NoneBox, 512, PadValue::Null, CompactMode::Null> v14;
  TASSIGN(v14, 0);
  Tile<TileType::Vec, float, 16, 16, BLayout::RowMajor, 16, 16, SLayout::NoneBox, 512, PadValue::Null, CompactMode::Null> v15;
  TASSIGN(v15, 1024);
  GT v16 = GT(v3);
  GT v17 = GT(v5);
  TLOAD(v14, v13);
  TLOAD(v15, v16);
  TADD(v14, v14, v15);
  TSTORE(v17, v14);
  return;
}
