"""A ``!pto.tile_buf`` short form's layout as ptoas reads it, in both readers (the value IR's
and the run's): a short form that names no blayout / slayout is row_major / none_box in every
location and shape (PTOAS PTOTypeDefs.cpp ``parseCompactTileBufFields`` takes
``TileBufConfigAttr::getDefault``; its C++ declares ``Tile<..., BLayout::RowMajor, ...,
SLayout::NoneBox, ...>``), a Left one with its platform's blayout - not pto-isa's default
layouts (a one-column Vec tile DN, TileLeft ZZ / NZ, TileRight ZN, TileAcc NZ).  So a
``<vec, 16x1xf32>`` column is the row-major tile pto-isa's Tile refuses to declare (its C++ does
not compile) and a short-form matmul's operands are not the fractals the Cube reads: a column
spells ``blayout=col_major``, a matmul's tiles their fractal layouts.  ``PTOAS`` and
``PTO_ISA_ROOT`` set: ptoas's C++ of the column kernel on pto-isa's CPU simulator."""
from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

import ptopipe
from ptopipe.arch.vocab import TileLayout
from ptopipe.codegen.pto_exec import run_pto as exec_run
from ptopipe.codegen.pto_exec.types import TypeReader
from ptopipe.codegen.pto_lexer import tokenize
from ptopipe.codegen.pto_parse import Cursor
from ptopipe.errors import CompileError, ParseError

ND, DN, NZ, ZN, ZZ = TileLayout.ND, TileLayout.DN, TileLayout.NZ, TileLayout.ZN, TileLayout.ZZ

#: (the short form's parts, its layout on A2A3, on A5) - as ptoas's C++ declares the Tile
#: (``ptoas --pto-arch=a3|a5``: BLayout / SLayout template arguments); the run holds a Left tile
#: as its text says (ZZ and NZ are both the fractals the Cube reads), the A2A3 one but for
#: :data:`WRITTEN`
SHORT_FORMS = [
    ("vec, 16x8xf32, valid=16x1", ND, ND),          # a column padded to a 32-byte row: row_major
    ("vec, 1x16xf32", ND, ND),
    ("vec, 16x16xf16", ND, ND),
    ("vec, 16x1xf32, blayout=col_major", DN, DN),   # a column spells its blayout
    ("vec, 32x1xi8, blayout=col_major", DN, DN),
    ("vec, 16x16xf32, blayout=col_major, slayout=row_major", NZ, NZ),
    ("mat, 16x16xf16", ND, ND),
    ("mat, 16x1xf32", ND, ND),
    ("left, 16x16xf16", ND, DN),                    # ptoas: every Left tile the platform's blayout
    ("left, 16x16xf16, slayout=row_major", ZZ, NZ),
    ("left, 16x16xf16, blayout=col_major, slayout=row_major", ZZ, NZ),
    ("right, 16x16xf16", ND, ND),
    ("right, 16x16xf16, slayout=col_major", ZN, ZN),
    ("acc, 16x16xf32", ND, ND),
    ("acc, 16x16xf32, blayout=col_major, slayout=row_major, fractal=1024", NZ, NZ),
    ("bias, 1x16xf32", ND, ND),
]
WRITTEN = {"left, 16x16xf16, blayout=col_major, slayout=row_major": NZ}


def ir_type(text: str, platform: str):
    """The value IR reader's type of ``text`` on ``platform``."""
    c = Cursor(tokenize(text, "t.pto"), "t.pto")
    c.platform = platform
    return c.type_()


def run_type(text: str):
    """The run's (the executor's) type of ``text``."""
    return TypeReader("t.pto").parse(tokenize(text, "t.pto")[:-1])


@pytest.mark.parametrize("parts,a2a3,a5", SHORT_FORMS)
def test_a_short_form_has_the_layout_ptoas_gives_it(parts, a2a3, a5):
    text = f"!pto.tile_buf<{parts}>"
    for platform, want in (("a2a3", a2a3), ("a5", a5)):
        assert ir_type(text, platform).ir.written_layout(platform) is want, (text, platform)
    spec = run_type(text)
    assert TileLayout.of(spec.blayout, spec.slayout) is WRITTEN.get(parts, a2a3), text


@pytest.mark.parametrize("parts,col", [("vec, 16x1xf32", 28), ("vec, 8x1xi32", 28), ("vec, 32x1xf16", 28)])
def test_a_one_column_short_form_is_the_row_major_tile_pto_isa_refuses(parts, col):
    """ptoas's C++ of ``<vec, 16x1xf32>`` is ``Tile<TileType::Vec, float, 16, 1, BLayout::RowMajor,
    ...>``, whose 4-byte rows pto-isa's Tile refuses at compile time ("BFractal_ is RowMajor and
    SFractal_ is NoneBox: Rows must be 32 bytes align")."""
    text = f"    %t = pto.alloc_tile : !pto.tile_buf<{parts}>"
    for read in (lambda: ir_type(text.split(": ", 1)[1], "a2a3"), lambda: run_type(text.split(": ", 1)[1])):
        with pytest.raises(CompileError) as e:
            read()
        assert " Vec tile in layout ND: a row-major (ND) tile's row is Cols x " in e.value.what, e.value.what
        assert e.value.fix.startswith("declare the column blayout=col_major"), e.value.fix
        assert e.value.where == "t.pto:1:1", e.value.where


ROWS = """module attributes {pto.target_arch = "a3"} {
  func.func @rows(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %s: !pto.ptr<f32>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %sv = pto.make_tensor_view %s, shape = [%c16, %c1], strides = [%c1, %c1] : !pto.tensor_view<?x?xf32>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %sp = pto.partition_view %sv, offsets = [%c0, %c0], sizes = [%c16, %c1] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x1xf32>
    %xt = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf32>
    %tmp = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf32>
    %yt = pto.alloc_tile : !pto.tile_buf<vec, 16x16xf32>
    %st = pto.alloc_tile : COL
    pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%xt : !pto.tile_buf<vec, 16x16xf32>)
    pto.trowsum ins(%xt, %tmp : !pto.tile_buf<vec, 16x16xf32>, !pto.tile_buf<vec, 16x16xf32>) outs(%st : COL)
    pto.trowexpandadd ins(%xt, %st : !pto.tile_buf<vec, 16x16xf32>, COL) outs(%yt : !pto.tile_buf<vec, 16x16xf32>)
    pto.tstore ins(%yt : !pto.tile_buf<vec, 16x16xf32>) outs(%yp : !pto.partition_tensor_view<16x16xf32>)
    pto.tstore ins(%st : COL) outs(%sp : !pto.partition_tensor_view<16x1xf32>)
    return
  }
}
"""
COLUMN = "!pto.tile_buf<vec, 16x1xf32, blayout=col_major>"
SHORT_COLUMN = "!pto.tile_buf<vec, 16x1xf32>"


def rows_inputs():
    x = np.random.default_rng(1).standard_normal((16, 16)).astype(np.float32)
    return dict(x=x, y=np.zeros((16, 16), np.float32), s=np.zeros((16, 1), np.float32))


def test_a_short_form_column_of_a_row_reduction_is_refused_where_it_is_declared():
    """Row sums into a [16, 1] column, added back to each row (TROWEXPANDADD), both stored: the
    column spelled col_major gives numpy's numbers; the short form - which the run used to hold
    as a DN column and run clean - is ptoas's row-major [16, 1] tile pto-isa refuses (ptoas itself
    refuses its TROWEXPANDADD: "expects row-major src1 valid_shape[1] to be 32/sizeof(dtype)")."""
    args = rows_inputs()
    r = ptopipe.run_pto(text=ROWS.replace("COL", COLUMN), inputs=dict(args))
    x = args["x"]
    np.testing.assert_allclose(r.outputs["s"], x.sum(1, keepdims=True), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r.outputs["y"], x + x.sum(1, keepdims=True), rtol=1e-5, atol=1e-5)
    text = ROWS.replace("COL", SHORT_COLUMN)
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if ln.startswith("    %st = pto.alloc_tile"))
    for run in (ptopipe.run_pto, exec_run):     # (the run's reader alone too: not at a later store of it)
        with pytest.raises(CompileError) as e:
            run(text=text, inputs=dict(args))
        assert e.value.where == f"<pto>:{line}:28", e.value.where
        assert e.value.what.startswith("a 16x1 Vec tile in layout ND"), e.value.what


def test_an_a5_left_short_form_of_col_major_fractals_is_a_parse_error_at_its_type():
    """ptoas gives an A5 Left tile col_major blocks whatever its type says, so ``<left, 16x16xf32,
    slayout=col_major>`` is col_major blocks of col_major fractals - no layout the value IR has
    (it read it as a KeyError); on A2A3 the same text is ZN."""
    text = "!pto.tile_buf<left, 16x16xf32, slayout=col_major>"
    with pytest.raises(ParseError) as e:
        ir_type(text, "a5")
    assert e.value.what.startswith("a Left tile with slayout=col_major is blayout=col_major on A5"), e.value.what
    assert e.value.where == "t.pto:1:40" and "slayout=row_major" in e.value.fix
    assert ir_type(text, "a2a3").ir.written_layout("a2a3") is ZN
    with pytest.raises(ParseError) as e:
        ir_type("!pto.tile_buf<vec, 16x16xf32, blayout=col_major, slayout=col_major>", "a5")
    assert e.value.what == "blayout=col_major with slayout=col_major is no tile layout", e.value.what


@pytest.mark.parametrize("key,word", [("blayout", "colmajor"), ("slayout", "nonebox"), ("blayout", "none_box")])
def test_an_unknown_layout_word_is_refused_by_the_run_as_by_ptoas(key, word):
    """ptoas: "unknown blayout: colmajor"; the run read an unknown word as no word at all (the
    short form's default, or a long form's row_major / none_box)."""
    text = ROWS.replace("COL", COLUMN).replace("blayout=col_major", f"{key}={word}")
    with pytest.raises(ParseError) as e:
        ptopipe.run_pto(text=text, inputs=rows_inputs())
    assert e.value.what == f'!pto.tile_buf {key}={word}: ptoas refuses the file ("unknown {key}: {word}")', \
        e.value.what
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if ln.startswith("    %st = pto.alloc_tile"))
    assert e.value.where == f"<pto>:{line}:28", e.value.where


# -- the real assembler and pto-isa's CPU simulator --------------------------------------------------
PTOAS = os.environ.get("PTOAS")
PTO_ISA = os.environ.get("PTO_ISA_ROOT")
CXX = os.environ.get("CXX") or next((c for c in ("clang++", "clang++-19", "g++") if shutil.which(c)), None)

MAIN = """#include "kernel.cpp"
#include <cstdio>
int main(int, char **argv)
{
    pto::NPU_MEMORY_INIT(pto::NPUArch::A2A3);
    static float x[256 + 16], y[256 + 16], s[16 + 16];
    FILE *f = std::fopen(argv[1], "rb");
    if (f == nullptr || std::fread(x, 4, 256, f) != 256) return 3;
    std::fclose(f);
    { pto::cpu_sim::ScopedExecutionContext ctx(0, 0, 1); rows(x, y, s); }
    f = std::fopen(argv[2], "wb");
    std::fwrite(y, 4, 256, f); std::fwrite(s, 4, 16, f); std::fclose(f);
    return 0;
}
"""


@pytest.mark.skipif(not (PTOAS and PTO_ISA and CXX), reason="set PTOAS (a ptoas binary) and PTO_ISA_ROOT")
def test_ptoas_cpp_of_the_column_kernel_on_pto_isas_cpu_simulator(tmp_path):
    """ptoas refuses the short-form column's TROWEXPANDADD, and its C++ of the column's row sum and
    store does not compile against pto-isa (its Tile's static assertion); of the col_major column it
    gives the run's numbers."""
    def assemble(text):
        (tmp_path / "k.pto").write_text(text)
        return subprocess.run([PTOAS, "--pto-arch=a3", str(tmp_path / "k.pto"), "-o", str(tmp_path / "kernel.cpp")],
                              capture_output=True, text=True, timeout=120)

    def build(text):
        r = assemble(text)
        assert r.returncode == 0, r.stderr[-2000:]
        (tmp_path / "main.cpp").write_text(MAIN)
        return subprocess.run([CXX, "-std=c++20", "-O0", "-D__CPU_SIM", "-D__DAV_VEC__", "-include", "stdint.h",
                               "-include", "stddef.h", "-w", f"-I{os.path.join(PTO_ISA, 'include')}",
                               "-o", str(tmp_path / "k"), str(tmp_path / "main.cpp"), "-lpthread", "-ldl"],
                              capture_output=True, text=True, timeout=900)
    short = ROWS.replace("COL", SHORT_COLUMN)
    r = assemble(short)
    assert r.returncode != 0 and "expects row-major src1 valid_shape[1] to be 32/sizeof(dtype)" in r.stderr
    r = build("\n".join(ln for ln in short.splitlines() if "pto.trowexpandadd" not in ln))
    assert r.returncode != 0 and "BFractal_ is RowMajor and SFractal_ is NoneBox" in r.stderr, r.stderr[-2000:]
    assert build(ROWS.replace("COL", COLUMN)).returncode == 0
    args = rows_inputs()
    args["x"].tofile(tmp_path / "x.bin")
    run = subprocess.run([str(tmp_path / "k"), str(tmp_path / "x.bin"), str(tmp_path / "out.bin")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    out = np.fromfile(tmp_path / "out.bin", np.float32)
    mine = ptopipe.run_pto(text=ROWS.replace("COL", COLUMN), inputs=args).outputs
    np.testing.assert_allclose(out[:256].reshape(16, 16), mine["y"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[256:].reshape(16, 1), mine["s"], rtol=1e-5, atol=1e-5)
