"""GM tensors of a .pto in the layout ptoas's InferPTOLayout gives them (PTOAS
``inferLayout5D``): a 16x16x16 f16 view or GM memref is ``Layout::NZ`` in ptoas's C++, so it
moves into an NZ tile and not into a row-major one (pto-isa's TLOAD static_asserts the pair
before any shape), and a ``{layout = ..}`` that contradicts the strides is ptoas's "layout
mismatch" refusal at the view."""
import os
import subprocess

import numpy as np
import pytest

from ptopipe.codegen.pto_exec import run_pto
from ptopipe.errors import KernelError, ParseError

NZ = ("!pto.tile_buf<loc=vec, dtype=f16, rows=256, cols=16, v_row=256, v_col=16, blayout=col_major, "
      "slayout=row_major, fractal=512, pad=0>")
GM3 = "memref<16x16x16xf16, #pto.address_space<gm>>"
PART3 = "!pto.partition_tensor_view<16x16x16xf16>"


def view_kernel(layout: str = "", shape: str = "[%c16, %c16, %c16]") -> str:
    return f"""module {{
  func.func @nz_view(%src: !pto.ptr<f16>, %dst: !pto.ptr<f16>, %n: index) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c256 = arith.constant 256 : index
    %sv = pto.make_tensor_view %src, shape = {shape}, strides = [%c256, %c16, %c1]{layout} : !pto.tensor_view<?x?x?xf16>
    %dv = pto.make_tensor_view %dst, shape = [%c16, %c16, %c16], strides = [%c256, %c16, %c1] : !pto.tensor_view<?x?x?xf16>
    %sp = pto.partition_view %sv, offsets = [%c0, %c0, %c0], sizes = [%c16, %c16, %c16] : !pto.tensor_view<?x?x?xf16> -> {PART3}
    %dp = pto.partition_view %dv, offsets = [%c0, %c0, %c0], sizes = [%c16, %c16, %c16] : !pto.tensor_view<?x?x?xf16> -> {PART3}
    %t = pto.alloc_tile : {NZ}
    pto.tload ins(%sp : {PART3}) outs(%t : {NZ})
    pto.tstore ins(%t : {NZ}) outs(%dp : {PART3})
    return
  }}
}}
"""


def memref_kernel(local: str) -> str:
    return f"""module {{
  func.func @nz_memref(%src: {GM3}, %dst: {GM3}) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %t = {local}
    pto.tload ins(%src : {GM3}) outs(%t : {local.split(' : ')[-1]})
    pto.tstore ins(%t : {local.split(' : ')[-1]}) outs(%dst : {GM3})
    return
  }}
}}
"""


X = (np.arange(4096) % 251).astype(np.float16).reshape(16, 16, 16)


@pytest.mark.parametrize("text,n", [(view_kernel(), dict(n=16)), (memref_kernel(f"pto.alloc_tile : {NZ}"), {})],
                         ids=["view", "memref"])
def test_a_tensor_ptoas_reads_as_nz_moves_into_an_nz_tile(text, n):
    res = run_pto(text=text, inputs=dict(src=X, dst=np.zeros_like(X), **n), platform="a2a3")
    assert np.array_equal(np.asarray(res.outputs["dst"]).reshape(X.shape), X)


def test_an_nz_gm_memref_into_a_row_major_tile_is_refused_for_its_layouts_at_the_load():
    text = memref_kernel("memref.alloc() : memref<16x16x16xf16, #pto.address_space<vec>>")
    with pytest.raises(KernelError) as e:
        run_pto(text=text, inputs=dict(src=X, dst=np.zeros_like(X)), platform="a2a3")
    msg = str(e.value)
    assert "an NZ GM tensor" in msg and "moves only ND<-ND, DN<-DN, NZ<-NZ" in msg, msg
    assert e.value.where.endswith(":4:5"), e.value.where


@pytest.mark.parametrize("layout,shape,said", [
    (" {layout = #pto.layout<nd>}", "[%c16, %c16, %c16]", "user-specified layout=nd but inferred=nz"),
    (" {layout = #pto.layout<dn>}", "[%c16, %c16, %c16]", "user-specified layout=dn but inferred=nz"),
])
def test_a_view_layout_ptoas_contradicts_is_refused_at_the_view(layout, shape, said):
    with pytest.raises(ParseError) as e:
        run_pto(text=view_kernel(layout, shape), inputs=dict(src=X, dst=np.zeros_like(X), n=16), platform="a2a3")
    assert said in str(e.value) and e.value.where.endswith(":7:117"), (e.value.where, str(e.value))


def test_a_2d_view_layout_against_its_strides_is_refused_at_the_view():
    text = """module {
  func.func @k(%x: !pto.ptr<f32>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] {layout = #pto.layout<dn>} : !pto.tensor_view<?x?xf32>
    return
  }
}
"""
    with pytest.raises(ParseError) as e:
        run_pto(text=text, inputs=dict(x=np.zeros((16, 16), np.float32)), platform="a5")
    assert "user-specified layout=dn but inferred=nd" in str(e.value) and e.value.where.endswith(":6:102")


def test_a_view_of_a_shape_ptoas_does_not_know_keeps_the_layout_it_names():
    """ptoas reads a layout only off constant shapes and strides: a dimension from a parameter
    leaves the file's {layout = nd} as it is (ND: a 256x16 row-major tensor)."""
    text = view_kernel(" {layout = #pto.layout<nd>}", "[%n, %c16, %c16]").replace(NZ, NZ.replace(
        "blayout=col_major, slayout=row_major", "blayout=row_major, slayout=none_box"))
    res = run_pto(text=text.replace("%dv = pto.make_tensor_view %dst, shape = [%c16, %c16, %c16], strides = [%c256, %c16, %c1]",
                                    "%dv = pto.make_tensor_view %dst, shape = [%n, %c16, %c16], strides = [%c256, %c16, %c1] "
                                    "{layout = #pto.layout<nd>}"),
                  inputs=dict(src=X, dst=np.zeros_like(X), n=16), platform="a2a3")
    assert np.array_equal(np.asarray(res.outputs["dst"]).reshape(X.shape), X)


@pytest.mark.skipif(not os.environ.get("PTOAS"), reason="PTOAS (path of the real ptoas) not set")
@pytest.mark.parametrize("text,accepted", [
    (view_kernel(), True), (memref_kernel(f"pto.alloc_tile : {NZ}"), True),
    (view_kernel(" {layout = #pto.layout<nd>}"), False), (view_kernel(" {layout = #pto.layout<nz>}"), True),
])
def test_ptoas_reads_these_layouts_so(text, accepted, tmp_path):
    src = tmp_path / "k.pto"
    src.write_text(text)
    r = subprocess.run([os.environ["PTOAS"], "--pto-arch=a3", str(src), "-o", str(tmp_path / "k.cpp")],
                       capture_output=True, text=True, timeout=60)
    assert (r.returncode == 0) == accepted, (r.stdout + r.stderr)[-1500:]
    if accepted:
        assert "pto::Layout::NZ" in (tmp_path / "k.cpp").read_text()
