"""``pto.tstore ... {atomicType = #pto<atomic_type atomic_add>}`` (ptoas's spelling, PTOAS
test/basic/tstore_forms_emitc.pto) runs as pto-isa's ``TSTORE<..., AtomicType::AtomicAdd>``:
the blocks of a launch each add their tile into what GM held.  A value that is no atomic type is
an error at its line:col; the static reader keeps the attribute in the IR; with ``PTOAS`` set,
ptoas takes the file."""
import os
import subprocess

import numpy as np
import pytest

import ptopipe
from ptopipe import ParseError

ATTR = "{atomicType = #pto<atomic_type atomic_add>}"
TILE = ("!pto.tile_buf<loc=vec, dtype=f32, rows=4, cols=16, v_row=4, v_col=16, blayout=row_major, "
        "slayout=none_box, fractal=512, pad=0>")
TEXT = f"""module attributes {{pto.target_arch = "a3"}} {{
  func.func @k(%x: !pto.ptr<f32>, %o: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %vx = pto.make_tensor_view %x, shape = [%c4, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %px = pto.partition_view %vx, offsets = [%c0, %c0], sizes = [%c4, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<4x16xf32>
    %vo = pto.make_tensor_view %o, shape = [%c4, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %po = pto.partition_view %vo, offsets = [%c0, %c0], sizes = [%c4, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<4x16xf32>
    %t = pto.alloc_tile : {TILE}
    pto.tload ins(%px : !pto.partition_tensor_view<4x16xf32>) outs(%t : {TILE})
    pto.tstore ins(%t : {TILE}) outs(%po : !pto.partition_tensor_view<4x16xf32>) ATTR
    return
  }}
}}
"""


def _inputs():
    return {"x": np.arange(64, dtype=np.float32).reshape(4, 16) / 8, "o": np.full((4, 16), 0.5, np.float32)}


def test_each_block_adds_its_tile_into_what_gm_held():
    i = _inputs()
    res = ptopipe.run_pto(text=TEXT.replace("ATTR", ATTR), inputs=i, blocks=2)
    np.testing.assert_array_equal(res.outputs["o"], i["o"] + 2 * i["x"])
    assert not [n for n in res.notes if "static pipe verification skipped" in n], res.notes   # the IR reads it


def test_atomic_none_is_a_plain_store():
    i = _inputs()
    res = ptopipe.run_pto(text=TEXT.replace("ATTR", "{atomicType = #pto<atomic_type atomic_none>}"), inputs=i)
    np.testing.assert_array_equal(res.outputs["o"], i["x"])


def test_a_value_that_is_no_atomic_type_is_an_error_at_it():
    text = TEXT.replace("ATTR", "{atomicType = #pto<atomic_type atomic_max>}")
    with pytest.raises(ParseError) as ei:
        ptopipe.run_pto(text=text, inputs=_inputs())
    line = next(n for n, l in enumerate(text.splitlines(), 1) if "atomic_max" in l)
    col = text.splitlines()[line - 1].index("#pto<atomic_type") + 1
    assert ei.value.where.endswith(f":{line}:{col}")
    assert "is not an atomic type" in ei.value.what and "atomic_add" in ei.value.fix


@pytest.mark.skipif(not os.environ.get("PTOAS"), reason="PTOAS (a ptoas binary) is not set")
def test_ptoas_takes_the_file_and_writes_the_atomic_store(tmp_path):
    pto = tmp_path / "k.pto"
    pto.write_text(TEXT.replace("ATTR", ATTR))
    r = subprocess.run([os.environ["PTOAS"], "--pto-arch=a3", str(pto), "-o", str(tmp_path / "k.cpp")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "AtomicType::AtomicAdd>" in (tmp_path / "k.cpp").read_text()
