"""``.pto`` files as pypto writes them: the Cube and the Vector function of a kernel share one
signature (each leaves unused the tensors only the other reads), the SPMD identity
parameters ``%__pypto_spmd_subblock_idx`` / ``_block_idx`` / ``_block_num`` bound per core
as pypto's runtime binds them, a lane's zero-row share of a tail tile, ``pto.set_validshape``
(metadata) and an accumulator whose valid shape is narrower than its matmul."""
import pathlib

import numpy as np
import pytest

from ptopipe.codegen.pto_exec import run_pto
from ptopipe.codegen.pto_load import load_pto
from ptopipe.driver.pto import static_verdict
from ptopipe.errors import ConfigError, MemoryConflictError

PAIR_FILE = pathlib.Path(__file__).parent.parent / "pto" / "pypto_c2v_a5.pto"
PAIR = PAIR_FILE.read_text()
#: the same pair with the lane from ptoas's own op instead of pypto's parameter
PAIR_GETSUB = PAIR.replace(", %__pypto_spmd_subblock_idx: i32)", ")").replace(
    "%sb = arith.index_cast %__pypto_spmd_subblock_idx : i32 to index",
    "%sb64 = pto.get_subblock_idx\n    %sb = arith.index_cast %sb64 : i64 to index")


def vec(r, c):
    return (f"!pto.tile_buf<loc=vec, dtype=f32, rows={r}, cols={c}, v_row=?, v_col=?, blayout=row_major, "
            "slayout=none_box, fractal=512, pad=0>")


def static_vec(r, c):
    """A tile of a static valid shape (its alloc_tile gives no valid_row / valid_col)."""
    return vec(r, c).replace("v_row=?, v_col=?", f"v_row={r}, v_col={c}")


def vector_func(params: str, body: str) -> str:
    return f"""module attributes {{pto.target_arch = "a5"}} {{
  func.func @k({params}) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
{body}
    return
  }}
}}
"""


def _mm_bias_gold(out: dict) -> np.ndarray:
    return out["arg0"] @ out["arg1"] + out["arg2"]


def test_a_parameter_takes_its_largest_view_in_any_function_run():
    """The cube never views %arg3 (the vector's output) and the vector never views %arg0: each
    is sized by the function that views it, not given one element by the other."""
    r = run_pto(text=PAIR_GETSUB)
    np.testing.assert_allclose(r.outputs["arg3"], _mm_bias_gold(r.outputs), rtol=1e-5, atol=1e-5)
    assert [n for n in r.notes if n.startswith(("arg0:", "arg3:"))] == [
        "arg0: seeded random float32[16, 16] (give inputs={'arg0': array})",
        "arg3: seeded random float32[16, 16] (give inputs={'arg3': array})"]


def test_an_access_past_a_seeded_argument_says_ptopipe_made_it():
    """Rows 8..23 of a 16-row view: the run stops at the load past the argument, and the error
    carries the note saying the argument is seeded data of the view's size (a run that stops
    prints no notes)."""
    body = f"""    %xp = pto.partition_view %xv, offsets = [%c8, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %t = pto.alloc_tile : {static_vec(16, 16)}
    pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%t : {static_vec(16, 16)})"""
    text = vector_func("%x: !pto.ptr<f32>, %y: !pto.ptr<f32>", body)
    with pytest.raises(MemoryConflictError) as e:
        run_pto(text=text)
    assert "note: x: seeded random float32[16, 16] (give inputs={'x': array})" in e.value.details
    with pytest.raises(MemoryConflictError) as e:       # a given array: nothing to add
        run_pto(text=text, inputs=dict(x=np.zeros((16, 16), np.float32)))
    assert "seeded" not in str(e.value)


def test_the_subblock_parameter_is_each_vector_cores_lane():
    """pypto's %__pypto_spmd_subblock_idx: 0 on AIV0, 1 on AIV1 - each core adds and stores its
    own 8 rows (both 0 would be a write/write race on rows 0..7 and rows 8..15 never written);
    the static verifier proves the pair with the lane it binds."""
    rng = np.random.default_rng(2)
    a, b, bias = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(3))
    r = run_pto(text=PAIR, inputs=dict(arg0=a, arg1=b, arg2=bias, arg3=np.full((16, 16), np.nan, np.float32)))
    np.testing.assert_allclose(r.outputs["arg3"], a @ b + bias, rtol=1e-5, atol=1e-5)
    assert any("__pypto_spmd_subblock_idx = the core's lane (AIV0 0, AIV1 1, the Cube 0)" in n for n in r.notes)
    assert load_pto("pypto_c2v_a5.pto", text=PAIR)[1] == []      # no "not proven for all values"
    v = static_verdict(str(PAIR_FILE), None, "spec", None, {})
    assert v["status"] == "verified" and "every value" not in v["detail"]     # (it is bound)


BLOCKS = vector_func(
    "%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %__pypto_spmd_block_idx: i32, %__pypto_spmd_block_num: i32",
    f"""    %bidx = arith.index_cast %__pypto_spmd_block_idx : i32 to index
    %bnum = arith.index_cast %__pypto_spmd_block_num : i32 to index
    %rows = arith.divsi %c16, %bnum : index
    %tiles = arith.divsi %rows, %c8 : index
    %base = arith.muli %bidx, %rows : index
    %t = pto.alloc_tile : {static_vec(8, 16)}
    scf.for %i = %c0 to %tiles step %c1 {{
      %ri = arith.muli %i, %c8 : index
      %r = arith.addi %base, %ri : index
      %xp = pto.partition_view %xv, offsets = [%r, %c0], sizes = [%c8, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>
      pto.tload ins(%xp : !pto.partition_tensor_view<8x16xf32>) outs(%t : {static_vec(8, 16)})
      pto.tadd ins(%t, %t : {static_vec(8, 16)}, {static_vec(8, 16)}) outs(%t : {static_vec(8, 16)})
      %yp = pto.partition_view %yv, offsets = [%r, %c0], sizes = [%c8, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>
      pto.tstore ins(%t : {static_vec(8, 16)}) outs(%yp : !pto.partition_tensor_view<8x16xf32>)
    }}""")


def test_the_block_parameters_are_block_0_of_1():
    """One cluster is simulated: block 0 of 1 (a block count of 0 would divide by zero), so
    the kernel doubles all 16 rows."""
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    r = run_pto(text=BLOCKS, inputs=dict(x=x, y=np.zeros_like(x)))
    np.testing.assert_array_equal(r.outputs["y"], 2 * x)
    assert any("__pypto_spmd_block_idx = the core's block (0 .. N-1 with --blocks N), "
               "__pypto_spmd_block_num = the number of blocks (1 unless --blocks N)" in n for n in r.notes)
    assert r.summary.blocks == 1 and r.summary.asked_block


def test_the_block_parameters_of_two_blocks():
    """blocks=2: pypto's block parameters are each block's index and 2, so each block
    doubles its 8 rows (half the instructions each)."""
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    one = run_pto(text=BLOCKS, inputs=dict(x=x, y=np.zeros_like(x)))
    r = run_pto(text=BLOCKS, inputs=dict(x=x, y=np.zeros_like(x)), blocks=2)
    np.testing.assert_array_equal(r.outputs["y"], 2 * x)
    per_block = [cl.aiv0.instructions for cl in r.result.clusters]
    assert per_block[0] == per_block[1] < one.result.cluster.aiv0.instructions


@pytest.mark.parametrize("name", ["__pypto_spmd_block_num", "__pypto_spmd_subblock_idx"])
def test_a_value_given_to_an_spmd_parameter_is_refused_by_the_run_and_the_verifier(name):
    text = BLOCKS if "block_num" in name else PAIR
    with pytest.raises(ConfigError, match="pypto's runtime gives this parameter") as e:
        run_pto(text=text, inputs={name: 2})
    assert e.value.fix == f"drop {name!r} from inputs=" and e.value.where == "argument inputs="
    with pytest.raises(ConfigError, match="pypto's runtime gives this parameter"):
        load_pto("k.pto", text=text, scalars={name: 1})
    with pytest.raises(ConfigError, match="--range"):
        load_pto("k.pto", text=text, ranges={name: (0, 1)})


TAIL = vector_func("%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %n: index", f"""    %off = arith.subi %c16, %n : index
    %t = pto.alloc_tile valid_row = %c8 valid_col = %c16 : {vec(8, 16)}
    pto.set_validshape %t, %n, %c16 : {vec(8, 16)}
    %xp = pto.partition_view %xv, offsets = [%off, %c0], sizes = [%n, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<?x16xf32>
    pto.tload ins(%xp : !pto.partition_tensor_view<?x16xf32>) outs(%t : {vec(8, 16)})
    %yp = pto.partition_view %yv, offsets = [%off, %c0], sizes = [%n, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<?x16xf32>
    pto.tstore ins(%t : {vec(8, 16)}) outs(%yp : !pto.partition_tensor_view<?x16xf32>)""")


@pytest.mark.parametrize("n", [0, 3])
def test_a_lanes_zero_row_share_at_the_end_of_a_tensor_touches_nothing(n):
    """The last n rows, moved through a tile of valid shape [n, 16]: with n = 0 the views at
    row 16 (one past the end) hold zero bytes - no access out of bounds, nothing stored."""
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    r = run_pto(text=TAIL, inputs=dict(x=x, y=np.zeros_like(x), n=n))
    want = np.zeros_like(x)
    want[16 - n:] = x[16 - n:]
    np.testing.assert_array_equal(r.outputs["y"], want)


def test_set_validshape_in_a_loop_is_no_read_of_the_tile_for_the_static_reader():
    """A tile whose valid shape a loop body sets before it loads the tile is not a value
    carried from the previous iteration: the value IR reads the file."""
    text = vector_func("%x: !pto.ptr<f32>, %y: !pto.ptr<f32>", f"""    %c2 = arith.constant 2 : index
    %t = pto.alloc_tile valid_row = %c8 valid_col = %c16 : {vec(8, 16)}
    scf.for %i = %c0 to %c2 step %c1 {{
      %r = arith.muli %i, %c8 : index
      pto.set_validshape %t, %c8, %c16 : {vec(8, 16)}
      %xp = pto.partition_view %xv, offsets = [%r, %c0], sizes = [%c8, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>
      pto.tload ins(%xp : !pto.partition_tensor_view<8x16xf32>) outs(%t : {vec(8, 16)})
      %yp = pto.partition_view %yv, offsets = [%r, %c0], sizes = [%c8, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>
      pto.tstore ins(%t : {vec(8, 16)}) outs(%yp : !pto.partition_tensor_view<8x16xf32>)
    }}""")
    op, warnings, _ = load_pto("k.pto", text=text)
    assert warnings == [] and [f.sym_name for f in op.body] == ["k"]


@pytest.mark.parametrize("given,v_row,v_col", [("valid_row = %n", "?", "16"), ("valid_col = %n", "16", "?"),
                                               ("valid_row = %n valid_col = %n", "?", "?")])
def test_an_alloc_names_a_runtime_valid_extent_for_each_dimension_its_type_leaves_open(given, v_row, v_col):
    """``pto.alloc_tile valid_row = %n : <..., v_row=?, v_col=16>``: a dynamic row with a static
    column takes no valid_col operand (the only form ptoas accepts: "valid_col operand must be
    absent because result type v_col is 16"); the static reader takes it as the run does."""
    ty = (f"!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row={v_row}, v_col={v_col}, "
          "blayout=row_major, slayout=none_box, fractal=512, pad=0>")
    body = f"""    %n = arith.constant 16 : index
    %t = pto.alloc_tile {given} : {ty}
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%t : {ty})"""
    text = vector_func("%x: !pto.ptr<f32>, %y: !pto.ptr<f32>", body)
    load_pto("k.pto", text=text)
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    run_pto(text=text, inputs=dict(x=x, y=x * 0))
