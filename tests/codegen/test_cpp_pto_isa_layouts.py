"""The layouts ptopipe's C++ declares where pto-isa requires one (no pto-isa needed):

* a one-column Vec tile - the [R, 1] per-row operand of the row reductions and row
  expansions - is DN, one column padded to whole 32-byte blocks of rows: pto-isa's
  TROWEXPAND* take that operand ColMajor with one valid column (mode 1), TROWSUM / TROWMAX
  write a DN dst with Cols == 1 (docs/isa/TROWEXPANDADD.md, TROWSUM.md); the allocator
  reserves exactly the bytes the C++ declares, which hold the rows the simulator keeps;
* the element-wise ops on such columns run on their ND [1, R] row views (TRESHAPE), as
  pto-isa's NPU element-wise ops take RowMajor tiles only;
* a Left tile is ZZ on A2A3 and NZ (BLayout::ColMajor) on A5, as pto-isa's TileLeft and ptoas;
* a *_GM direction is spelled as A2A3 has it (the plain direction).
"""
import pathlib
import re

import pytest

from ptopipe.arch.vocab import LEFT_LAYOUT, TileLayout, TileType, default_layout, static_shape
from ptopipe.driver.programs import programs_of
from ptopipe.driver.loader import load_module
from ptopipe.codegen import write_cpp
from ptopipe.codegen.cpp_origin import strip_origins
from ptopipe.codegen import cpp_types as T
from ptopipe.ir.layout import read_layout
from plans import named as named_plan
from ptopipe.ir.types import TileValueType
from ptopipe.passes import compile_program

ROOT = pathlib.Path(__file__).resolve().parents[2]
FA = {d: ROOT / "examples" / d / "fa_forward.py" for d in ("mixed", "dsl")}


def _cpp(path, platform):
    op = compile_program(programs_of(load_module(str(path)))[0], platform, protocol="pto-isa")
    return op, strip_origins(write_cpp(op, platform))      # the C++ alone


@pytest.mark.parametrize("shape,dtype,rows", [((8, 1), "f32", 8), ((4, 1), "f32", 8), ((16, 1), "f32", 16),
                                               ((8, 1), "f16", 16), ((20, 1), "f16", 32), ((1, 1), "f32", 8)])
def test_a_one_column_vec_tile_is_a_dn_column_of_whole_32_byte_blocks(shape, dtype, rows):
    t = TileValueType(shape, dtype, TileType.Vec)
    assert t.effective_layout is TileLayout.DN and t.static_shape == (rows, 1)
    assert T.tile_type(t) == (f"Tile<TileType::Vec, {T.ctype(dtype)}, {rows}, 1, BLayout::ColMajor, "
                              f"{shape[0]}, 1>")
    # the allocator reserves the declared bytes: no fewer than the rows the simulator holds
    assert t.footprint == rows * t.nbytes // shape[0] and t.footprint >= t.nbytes
    assert t.footprint % 32 == 0


def test_only_one_column_vec_tiles_change_their_default():
    assert default_layout(TileType.Vec, 8, 8) is TileLayout.ND
    assert default_layout(TileType.Vec, 1, 8) is TileLayout.ND          # a row stays a row
    assert default_layout(TileType.Mat, 8, 1) is TileLayout.ND
    assert default_layout(TileType.Vec, 8, 1) is TileLayout.DN
    explicit = TileValueType((8, 1), "f32", TileType.Vec, TileLayout.ND)   # a layout given is kept
    assert explicit.effective_layout is TileLayout.ND and explicit.static_shape == (8, 8)
    assert T.tile_type(explicit) == "Tile<TileType::Vec, float, 8, 8, BLayout::RowMajor, 8, 1>"
    assert static_shape(TileType.Vec, TileLayout.DN, 8, 1, 4) == (8, 1)


def test_the_row_view_of_a_column_has_its_bytes():
    t = TileValueType((4, 1), "f32", TileType.Vec)
    assert T.tile_type(t.row_view()) == "Tile<TileType::Vec, float, 1, 8, BLayout::RowMajor, 1, 4>"
    assert t.row_view().footprint == t.footprint == 32
    assert t.is_column and not TileValueType((4, 1), "f32", TileType.Vec, TileLayout.ND).is_column


@pytest.mark.parametrize("platform,blayout", [("a2a3", "RowMajor"), ("a5", "ColMajor")])
def test_left_tiles_have_their_platforms_layout(platform, blayout):
    t = TileValueType((16, 32), "f16", TileType.Left)
    assert LEFT_LAYOUT[platform].blayout.value == blayout
    assert T.tile_type(t, platform) == (f"Tile<TileType::Left, half, 16, 32, BLayout::{blayout}, 16, 32, "
                                        "SLayout::RowMajor, 512>")
    _op, cpp = _cpp(FA["mixed"], platform)
    lefts = re.findall(r"Tile<TileType::Left, [^>]*>", cpp)
    assert lefts and all(f"BLayout::{blayout}," in x for x in lefts), lefts


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("which", ["mixed", "dsl"])
def test_fa_per_row_operands_are_dn_and_their_element_wise_ops_use_row_views(which, platform):
    op, cpp = _cpp(FA[which], platform)
    aiv = cpp[cpp.index("// AIV kernel"):]
    cols = set(re.findall(r"using (\w+) = Tile<TileType::Vec, float, 8, 1, BLayout::ColMajor, 8, 1>;", aiv))
    assert len(cols) == 1 and "float, 8, 8, BLayout::RowMajor, 8, 1>" not in cpp
    col_type = cols.pop()
    columns = set(re.findall(rf"^\s*{col_type} (\w+);", aiv, re.M))
    # the per-row operand of every row expansion and the dst of every row reduction is a column
    expands = re.findall(r"TROWEXPAND\w+\(\w+, \w+, (\w+)\);", aiv)
    reduces = re.findall(r"TROW(?:MAX|SUM)\((\w+), ", aiv)
    assert len(expands) >= 3 and len(reduces) >= 2
    assert set(expands) | set(reduces) <= columns
    # an element-wise op never takes a column itself, only row views TRESHAPEd just before it
    lines = [x.strip() for x in aiv.splitlines()]
    ew = re.compile(r"^(TMAX|TSUB|TMUL|TADD|TEXP|TMULS|TADDS)\((.*)\);$")
    viewed = 0
    for i, line in enumerate(lines):
        m = ew.match(line)
        if not m:
            continue
        operands = [a.strip() for a in m.group(2).split(",") if re.fullmatch(r"\w+", a.strip())]
        assert not set(operands) & columns, line
        views = [a for a in operands if a.endswith("_row")]
        for v in views:
            base = v[:-len("_row")]
            assert base in columns and f"TRESHAPE({v}, {base});" in lines[max(0, i - len(views)):i], line
        viewed += bool(views)
    assert viewed >= 4          # max(m, rowmax), exp(m - m_new), l * alpha, + rowsum


def test_the_allocator_places_columns_at_their_declared_size():
    """FA's running max and sum start as two 8x1 f32 columns: 32 bytes each, side by side."""
    op, _text = _cpp(FA["mixed"], "a2a3")
    (aiv,) = [f for f in op.regions[0].blocks[0] if f.attributes["sym_name"].endswith("_aiv")]
    lay = named_plan(read_layout(aiv))
    (m0_mem, m0), (l0_mem, l0) = lay.tiles["m0"], lay.tiles["l0"]
    assert m0_mem == l0_mem and abs(l0 - m0) == 32
