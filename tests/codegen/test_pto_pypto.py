"""``.pto`` files as pypto writes them: the Cube and the Vector function of a kernel share one
signature (each leaves unused the tensors only the other reads), a lane's zero-row share of a
tail tile and ``pto.set_validshape`` (metadata)."""
import pathlib

import numpy as np
import pytest

from ptopipe.codegen.pto_exec import run_pto
from ptopipe.codegen.pto_load import load_pto
from ptopipe.errors import MemoryConflictError


PAIR_FILE = pathlib.Path(__file__).parent.parent / "pto" / "pypto_c2v_a5.pto"
PAIR = PAIR_FILE.read_text()
#: the same pair with the lane from ptoas's own op instead of pypto's parameter
PAIR_GETSUB = PAIR.replace(", %__pypto_spmd_subblock_idx: i32)", ")").replace(
    "%sb = arith.index_cast %__pypto_spmd_subblock_idx : i32 to index",
    "%sb64 = pto.get_subblock_idx\n    %sb = arith.index_cast %sb64 : i64 to index")


def vec(r, c):
    return (f"!pto.tile_buf<loc=vec, dtype=f32, rows={r}, cols={c}, v_row=?, v_col=?, blayout=row_major, "
            "slayout=none_box, fractal=512, pad=0>")


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
        "arg0: seeded random float32[16, 16] (give --input arg0=FILE.npy)",
        "arg3: seeded random float32[16, 16] (give --input arg3=FILE.npy)"]


def test_an_access_past_a_seeded_argument_says_ptopipe_made_it():
    """Rows 8..23 of a 16-row view: the run stops at the load past the argument, and the error
    carries the note saying the argument is seeded data of the view's size (a run that stops
    prints no notes)."""
    body = f"""    %xp = pto.partition_view %xv, offsets = [%c8, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %t = pto.alloc_tile : {vec(16, 16)}
    pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%t : {vec(16, 16)})"""
    text = vector_func("%x: !pto.ptr<f32>, %y: !pto.ptr<f32>", body)
    with pytest.raises(MemoryConflictError) as e:
        run_pto(text=text)
    assert "note: x: seeded random float32[16, 16] (give --input x=FILE.npy)" in e.value.details
    with pytest.raises(MemoryConflictError) as e:       # a given array: nothing to add
        run_pto(text=text, inputs=dict(x=np.zeros((16, 16), np.float32)))
    assert "seeded" not in str(e.value)


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
