"""A streaming kernel in PTO-AS text, shared by the periodic engine's tests and
benchmarks/stream_speed.py."""
from __future__ import annotations

T = 16
SLOT = T * T * 4
DEPTH = 4


def pto_stream(tiles: int, view_rows: int | None = None) -> str:
    """benchmarks/stream_speed.py's UP_DOWN stream as ptoas spells it (PTO-AS: the PTO-AS
    executor runs it; the Cube pushes ``x @ eye`` tile by tile, each lane multiplies its half
    by 3 and stores it), its tiles allocated once, its trip count an i32 argument; the
    output's view ``view_rows`` rows (fewer: the last windows leave it)."""
    rows = tiles * T
    return f"""module attributes {{pto.target_arch = "a3"}} {{
  func.func @entry(%x: !pto.ptr<f32>, %eye: !pto.ptr<f32>, %out: !pto.ptr<f32>, %n: i32,
                   %gm_slot_buffer: !pto.ptr<f32>) attributes {{pto.entry}} {{
    func.call @cube(%x, %eye, %n, %gm_slot_buffer) : (!pto.ptr<f32>, !pto.ptr<f32>, i32, !pto.ptr<f32>) -> ()
    func.call @vector(%out, %n, %gm_slot_buffer) : (!pto.ptr<f32>, i32, !pto.ptr<f32>) -> ()
    return
  }}
  func.func private @cube(%x: !pto.ptr<f32>, %eye: !pto.ptr<f32>, %n: i32, %gm_slot_buffer: !pto.ptr<f32>)
      attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %rows = arith.constant {rows} : index
    %c0_i32 = arith.constant 0 : i32
    %n_idx = arith.index_cast %n : i32 to index
    %imp = pto.import_reserved_buffer {{name = "c2v_fifo", peer_func = @vector}} -> i32
    pto.aic_initialize_pipe {{dir_mask = 1, slot_size = {SLOT}, slot_num = {DEPTH}}}
      (gm_slot_buffer = %gm_slot_buffer : !pto.ptr<f32>, c2v_consumer_buf = %imp : i32, v2c_consumer_buf = %c0_i32 : i32)
    %xv = pto.make_tensor_view %x, shape = [%rows, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x16xf32>
    %ev = pto.make_tensor_view %eye, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<16x16xf32>
    %pe = pto.partition_view %ev, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<16x16xf32> -> !pto.partition_tensor_view<16x16xf32>
    %em = pto.alloc_tile : !pto.tile_buf<mat, 16x16xf32>
    pto.tload ins(%pe : !pto.partition_tensor_view<16x16xf32>) outs(%em : !pto.tile_buf<mat, 16x16xf32>)
    %er = pto.alloc_tile : !pto.tile_buf<right, 16x16xf32, slayout=col_major>
    pto.tmov ins(%em : !pto.tile_buf<mat, 16x16xf32>) outs(%er : !pto.tile_buf<right, 16x16xf32, slayout=col_major>)
    %xm = pto.alloc_tile : !pto.tile_buf<mat, 16x16xf32>
    %xl = pto.alloc_tile : !pto.tile_buf<left, 16x16xf32, slayout=row_major>
    %acc = pto.alloc_tile : !pto.tile_buf<acc, 16x16xf32, blayout=col_major, slayout=row_major, fractal=1024>
    scf.for %i = %c0 to %n_idx step %c1 {{
      %r = arith.muli %i, %c16 : index
      %px = pto.partition_view %xv, offsets = [%r, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x16xf32> -> !pto.partition_tensor_view<16x16xf32>
      pto.tload ins(%px : !pto.partition_tensor_view<16x16xf32>) outs(%xm : !pto.tile_buf<mat, 16x16xf32>)
      pto.tmov ins(%xm : !pto.tile_buf<mat, 16x16xf32>) outs(%xl : !pto.tile_buf<left, 16x16xf32, slayout=row_major>)
      pto.tmatmul ins(%xl, %er : !pto.tile_buf<left, 16x16xf32, slayout=row_major>, !pto.tile_buf<right, 16x16xf32, slayout=col_major>) outs(%acc : !pto.tile_buf<acc, 16x16xf32, blayout=col_major, slayout=row_major, fractal=1024>)
      pto.tpush_to_aiv(%acc : !pto.tile_buf<acc, 16x16xf32, blayout=col_major, slayout=row_major, fractal=1024>) {{split = 1}}
    }}
    return
  }}
  func.func private @vector(%out: !pto.ptr<f32>, %n: i32, %gm_slot_buffer: !pto.ptr<f32>)
      attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %rows = arith.constant {rows if view_rows is None else view_rows} : index
    %c0_i32 = arith.constant 0 : i32
    %three = arith.constant 3.0 : f32
    %n_idx = arith.index_cast %n : i32 to index
    %loc = pto.reserve_buffer {{name = "c2v_fifo", size = {DEPTH * SLOT}, location = #pto.address_space<vec>, auto = true}} -> i32
    pto.aiv_initialize_pipe {{dir_mask = 1, slot_size = {SLOT}, slot_num = {DEPTH}}}
      (gm_slot_buffer = %gm_slot_buffer : !pto.ptr<f32>, c2v_consumer_buf = %loc : i32, v2c_consumer_buf = %c0_i32 : i32)
    %sub = pto.get_subblockid -> index
    %ov = pto.make_tensor_view %out, shape = [%rows, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x16xf32>
    %o = pto.alloc_tile : !pto.tile_buf<vec, 8x16xf32>
    scf.for %i = %c0 to %n_idx step %c1 {{
      %t = pto.tpop_from_aic {{split = 1}} -> !pto.tile_buf<vec, 8x16xf32>
      pto.tmuls ins(%t, %three : !pto.tile_buf<vec, 8x16xf32>, f32) outs(%o : !pto.tile_buf<vec, 8x16xf32>)
      %r0 = arith.muli %i, %c16 : index
      %r1 = arith.muli %sub, %c8 : index
      %row = arith.addi %r0, %r1 : index
      %po = pto.partition_view %ov, offsets = [%row, %c0], sizes = [%c8, %c16] : !pto.tensor_view<?x16xf32> -> !pto.partition_tensor_view<8x16xf32>
      pto.tstore ins(%o : !pto.tile_buf<vec, 8x16xf32>) outs(%po : !pto.partition_tensor_view<8x16xf32>)
      pto.tfree_from_aic {{split = 1}}
    }}
    return
  }}
}}
"""
