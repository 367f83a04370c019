"""pto.tstore's forms (PTOAS test/basic/tstore_forms_emitc.pto): ``{atomicType = #pto<atomic_type
atomic_add>}`` runs as pto-isa's ``TSTORE<..., AtomicType::AtomicAdd>`` - the blocks of a launch each
add their tile into what GM held; a value that is no atomic type is an error at its line:col; the
static reader keeps the attribute in the IR - and an accumulator's ``{reluPreMode = ...}`` and
pre-quant scalar operand (``ins(%acc, %pre : ..., i64)``) run as the fixpipe's ReLU and
quantisation; a GM memref operand takes the op's ``{layout = #pto.layout<..>}``.  With ``PTOAS`` set,
ptoas takes the files."""
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


MAT = ("!pto.tile_buf<loc=mat, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, "
       "slayout=row_major, fractal=512, pad=0>")
LEFT = ("!pto.tile_buf<loc=left, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, "
        "slayout=row_major, fractal=512, pad=0>")
RIGHT = ("!pto.tile_buf<loc=right, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, "
         "slayout=col_major, fractal=512, pad=0>")
ACC = ("!pto.tile_buf<loc=acc, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, "
       "slayout=row_major, fractal=1024, pad=0>")
#: pto-isa's quantisation word of scale 1.0, offset 0, signed: the f32 bits, bit 46
WORD = 0x3F800000 | 1 << 46


def _view(name, dt):
    return (f"    %v{name} = pto.make_tensor_view %{name}, shape = [%c16, %c16], strides = [%c16, %c1] : "
            f"!pto.tensor_view<?x?x{dt}>\n    %p{name} = pto.partition_view %v{name}, offsets = [%c0, %c0], sizes = "
            f"[%c16, %c16] : !pto.tensor_view<?x?x{dt}> -> !pto.partition_tensor_view<16x16x{dt}>\n")


CUBE = (f"""module attributes {{pto.target_arch = "a3"}} {{
  func.func @mm(%a: !pto.ptr<f32>, %b: !pto.ptr<f32>, %c: !pto.ptr<f32>, %q: !pto.ptr<i8>) attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %w = arith.constant {WORD} : i64
""" + "".join(_view(n, d) for n, d in (("a", "f32"), ("b", "f32"), ("c", "f32"), ("q", "i8"))) + f"""    %am = pto.alloc_tile : {MAT}
    %bm = pto.alloc_tile : {MAT}
    %al = pto.alloc_tile : {LEFT}
    %br = pto.alloc_tile : {RIGHT}
    %acc = pto.alloc_tile : {ACC}
    pto.tload ins(%pa : !pto.partition_tensor_view<16x16xf32>) outs(%am : {MAT})
    pto.tload ins(%pb : !pto.partition_tensor_view<16x16xf32>) outs(%bm : {MAT})
    pto.tmov ins(%am : {MAT}) outs(%al : {LEFT})
    pto.tmov ins(%bm : {MAT}) outs(%br : {RIGHT})
    pto.tmatmul ins(%al, %br : {LEFT}, {RIGHT}) outs(%acc : {ACC})
    pto.tstore ins(%acc : {ACC}) outs(%pc : !pto.partition_tensor_view<16x16xf32>) {{atomicType = #pto<atomic_type atomic_add>, reluPreMode = #pto<relu_pre_mode normal_relu>}}
    pto.tstore ins(%acc : {ACC}, %w : i64) outs(%pq : !pto.partition_tensor_view<16x16xi8>)
    return
  }}
}}
""")


def test_an_accumulators_relu_and_pre_quant_scalar():
    rng = np.random.default_rng(3)
    a, b = (rng.integers(-6, 7, (16, 16)).astype(np.float32) for _ in range(2))
    c = np.full((16, 16), 0.5, np.float32)
    res = ptopipe.run_pto(text=CUBE, inputs={"a": a, "b": b, "c": c.copy(), "q": np.zeros((16, 16), np.int8)})
    acc = a @ b
    assert (acc < 0).any() and (np.abs(acc) > 127).any()
    np.testing.assert_array_equal(res.outputs["c"], c + np.maximum(acc, 0))          # ReLU, then added
    np.testing.assert_array_equal(res.outputs["q"], np.clip(acc, -128, 127).astype(np.int8))   # scale 1


NZ_TILE = ("!pto.tile_buf<loc=vec, dtype=f16, rows=32, cols=32, v_row=32, v_col=32, blayout=col_major, "
           "slayout=row_major, fractal=512, pad=0>")
NZ_GM = "memref<32x32xf16, #pto.address_space<gm>>"
NZ_COPY = f"""module attributes {{pto.target_arch = "a5"}} {{
  func.func @nz_copy(%src: {NZ_GM}, %dst: {NZ_GM}) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %t = pto.alloc_tile : {NZ_TILE}
    pto.tload ins(%src : {NZ_GM}) outs(%t : {NZ_TILE}) {{layout = #pto.layout<nz>}}
    pto.tstore ins(%t : {NZ_TILE}) outs(%dst : {NZ_GM}) {{layout = #pto.layout<nz>}}
    return
  }}
}}
"""


def test_a_gm_memrefs_layout_is_the_ops():
    """A tload / tstore of a GM memref parameter with ``{layout = #pto.layout<nz>}`` moves it as
    an NZ GlobalTensor (ptoas's ``GlobalTensor<..., pto::Layout::NZ>`` of it): into and out of an
    NZ Vec tile on A5, which takes only NZ <- NZ, the bytes as they were."""
    x = np.arange(1024, dtype=np.float16).reshape(32, 32)
    res = ptopipe.run_pto(text=NZ_COPY, inputs={"src": x, "dst": np.zeros_like(x)})
    np.testing.assert_array_equal(res.outputs["dst"], x)


RANK3 = """module attributes {pto.target_arch = "a3"} {
  func.func @r3(%a: memref<2x8x16xf32, #pto.address_space<gm>>, %b: memref<2x8x16xf32, #pto.address_space<gm>>) {
    %t = memref.alloc() : memref<2x8x16xf32, #pto.address_space<vec>>
    pto.tload ins(%a : memref<2x8x16xf32, #pto.address_space<gm>>) outs(%t : memref<2x8x16xf32, #pto.address_space<vec>>)
    pto.tstore ins(%t : memref<2x8x16xf32, #pto.address_space<vec>>) outs(%b : memref<2x8x16xf32, #pto.address_space<gm>>)
    return
  }
}
"""


def test_a_rank_3_local_memref_is_the_tile_ptoas_declares():
    """A local ``memref<2x8x16xf32>`` is the tile ptoas's C++ declares for it - its first two dims,
    ``Tile<TileType::Vec, float, 2, 8>`` -, so the load of the 2x8x16 GM memref (16 rows of 16) into
    it is the error pto-isa's TLOAD asserts, at the tload, as the C++ run reports it."""
    with pytest.raises(ptopipe.KernelError) as e:
        ptopipe.run_pto(text=RANK3)
    assert "is 16x16 but the tile's valid region is 2x8" in e.value.what
    assert e.value.where.endswith(":4:5")


MM_MEMREF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pto_broken", "mm_memref_left_nd_a3.pto")


def test_a_cube_memref_is_the_row_major_tile_ptoas_declares():
    """A local memref in left / right / acc / mat is, like one in vec, the row-major NoneBox Tile
    ptoas declares for it (``Tile<TileType::Left, float, 16, 32, BLayout::RowMajor, 16, 32,
    SLayout::NoneBox, ...>``), not the memory's default fractal layout: a memref GEMM's Left operand
    is refused at the pto.tmatmul, as pto-isa's TMATMUL refuses it and the run of ptoas's C++ does."""
    with pytest.raises(ptopipe.KernelError) as e:
        ptopipe.run_pto(MM_MEMREF)
    assert e.value.what.startswith("TMATMUL: a is Left tile '%a_l0' float32 16x32 ND @AIC.L0A[0x0] in layout ND; "
                                   "the Cube reads Left tiles as ZZ or NZ fractals"), e.value.what
    assert e.value.fix.startswith("declare the Left tile as a !pto.tile_buf<loc=left, ..., blayout=row_major, "
                                  "slayout=row_major> (ZZ, on A5 blayout=col_major (NZ); a short form <left, RxCxT> "
                                  "that names no layout, and a memref in left, is ptoas's row_major / none_box tile)"), \
        e.value.fix
    line = next(n for n, ln in enumerate(open(MM_MEMREF), 1) if "pto.tmatmul ins" in ln)
    assert e.value.where.endswith(f"mm_memref_left_nd_a3.pto:{line}:5"), e.value.where


@pytest.mark.skipif(not os.environ.get("PTOAS"), reason="PTOAS (a ptoas binary) is not set")
@pytest.mark.parametrize("which", ["atomic", "cube", "nz", "rank3", "mm"])
def test_ptoas_takes_the_files_and_writes_the_stores(tmp_path, which):
    pto = tmp_path / "k.pto"
    pto.write_text({"atomic": TEXT.replace("ATTR", ATTR), "cube": CUBE, "nz": NZ_COPY, "rank3": RANK3,
                    "mm": open(MM_MEMREF).read()}[which])
    arch = "a5" if which == "nz" else "a3"
    r = subprocess.run([os.environ["PTOAS"], f"--pto-arch={arch}", str(pto), "-o", str(tmp_path / "k.cpp")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    cpp = (tmp_path / "k.cpp").read_text()
    if which == "nz":
        assert cpp.count("pto::Layout::NZ;") == 2
        return
    if which == "rank3":
        assert "Tile<TileType::Vec, float, 2, 8, " in cpp
        return
    if which == "mm":
        assert "Tile<TileType::Left, float, 16, 32, BLayout::RowMajor, 16, 32, SLayout::NoneBox, " in cpp
        assert "Tile<TileType::Acc, float, 16, 16, BLayout::RowMajor, 16, 16, SLayout::NoneBox, " in cpp
        return
    assert "AtomicType::AtomicAdd" in cpp
    if which == "cube":
        assert "ReluPreMode::NormalRelu" in cpp
