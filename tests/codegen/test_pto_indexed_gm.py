"""``pto.mgather ins(%mem, %idx) outs(%dst)`` / ``pto.mscatter ins(%src, %idx) outs(%mem)`` as
ptoas 0.27 spells them (PTOOps.td MGatherOp / MScatterOp): the Coalesce read off the index
tile's width (ptoas has no attribute for it: one column, a row per index; the data's columns,
an element per index), the modes off ``gatherOob`` / ``scatterAtomicOp`` / ``scatterOob``, run
against numpy; ptoas's verifier refusals (A5 only, an i32 index tile of the data's rows and one
or its columns) at the op's line:col; the warning that ptoas drops the mode attributes; the
static verifier naming what its value IR lacks.  ``PTOAS=...``: ptoas takes the file.

The one-column index tile of a row gather: ptoas's verifier takes it row_major only ("expects idx
to use the row_major blayout"; its short form ``<vec, 8x1xi32>`` is row_major), a [8, 1] i32
row-major Tile pto-isa refuses to declare (4-byte rows), while pto-isa's MGATHER / MSCATTER read
an [R, 1] index tile col_major: the files that run spell it ``blayout=col_major``."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import ptopipe
from ptopipe.errors import KernelError, ParseError

TV, TR, C, R = "!pto.tensor_view<?x?x{d}>", 32, 16, 8
MG = "pto.mgather ins(%tab_p, %ri"           # the row gather's op, where its errors are


def pv(r, c, d):
    return f"!pto.partition_tensor_view<{r}x{c}x{d}>"


def tb(r, c, d):
    return f"!pto.tile_buf<vec, {r}x{c}x{d}>"


def view(name, r, c, d):
    """A make_tensor_view + partition_view of the whole ``r x c`` argument ``%name`` as ``%name_p``."""
    return (f"    %{name}_v = pto.make_tensor_view %{name}, shape = [%c{r}, %c{c}], strides = [%c{c}, %c1] : "
            f"{TV.format(d=d)}\n"
            f"    %{name}_p = pto.partition_view %{name}_v, offsets = [%c0, %c0], sizes = [%c{r}, %c{c}] : "
            f"{TV.format(d=d)} -> {pv(r, c, d)}\n")


def kernel(arch="a5", gather_oob="clamp", scatter_attrs="{scatterAtomicOp = #pto<scatter_atomic_op add>, "
           "scatterOob = #pto<scatter_oob skip>}", ridx_t="i32", ridx_cols=1, ridx_blayout="col_major"):
    """Gathers rows (clamped) and elements of %tab into %rows / %elems, scatter-adds %rows into
    the rows of %acc at the row indices (skipping those past it).  ``ridx_blayout``: a one-column
    row index tile's (None: not written - ptoas's row_major, see the module doc)."""
    g = f" {{gatherOob = #pto<gather_oob {gather_oob}>}}" if gather_oob else ""
    ri = tb(R, ridx_cols, ridx_t)
    if ridx_blayout and ridx_cols == 1:
        ri = ri[:-1] + f", blayout={ridx_blayout}>"
    return f"""module attributes {{pto.target_arch = "{arch}"}} {{
  func.func @mg(%tab: !pto.ptr<f32>, %ridx: !pto.ptr<{ridx_t}>, %eidx: !pto.ptr<i32>, %rows: !pto.ptr<f32>, %elems: !pto.ptr<f32>, %acc: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c{R} = arith.constant {R} : index
    %c{C} = arith.constant {C} : index
    %c{TR} = arith.constant {TR} : index
{view("tab", TR, C, "f32")}{view("ridx", R, ridx_cols, ridx_t) if ridx_cols != C else view("ridx", R, C, ridx_t)}{view("eidx", R, C, "i32")}{view("rows", R, C, "f32")}{view("elems", R, C, "f32")}{view("acc", TR, C, "f32")}    %ri = pto.alloc_tile : {ri}
    %ei = pto.alloc_tile : {tb(R, C, "i32")}
    %d = pto.alloc_tile : {tb(R, C, "f32")}
    %e = pto.alloc_tile : {tb(R, C, "f32")}
    pto.tload ins(%ridx_p : {pv(R, ridx_cols, ridx_t)}) outs(%ri : {ri})
    pto.tload ins(%eidx_p : {pv(R, C, "i32")}) outs(%ei : {tb(R, C, "i32")})
    pto.mgather ins(%tab_p, %ri : {pv(TR, C, "f32")}, {ri}) outs(%d : {tb(R, C, "f32")}){g}
    pto.mgather ins(%tab_p, %ei : {pv(TR, C, "f32")}, {tb(R, C, "i32")}) outs(%e : {tb(R, C, "f32")})
    pto.tstore ins(%d : {tb(R, C, "f32")}) outs(%rows_p : {pv(R, C, "f32")})
    pto.tstore ins(%e : {tb(R, C, "f32")}) outs(%elems_p : {pv(R, C, "f32")})
    pto.mscatter ins(%d, %ri : {tb(R, C, "f32")}, {ri}) outs(%acc_p : {pv(TR, C, "f32")}) {scatter_attrs}
    return
  }}
}}
"""


def line_col(text: str, needle: str) -> str:
    n, ln = next((n, ln) for n, ln in enumerate(text.splitlines(), 1) if needle in ln)
    return f"{n}:{ln.index(needle.strip()) + 1}"


def inputs():
    rng = np.random.default_rng(7)
    ridx = np.array([3, 0, 31, 40, 7, 3, 2, 9], np.int32).reshape(R, 1)
    return dict(tab=rng.standard_normal((TR, C)).astype(np.float32), ridx=ridx,
                eidx=rng.integers(0, TR * C, (R, C)).astype(np.int32), rows=np.zeros((R, C), np.float32),
                elems=np.zeros((R, C), np.float32), acc=np.ones((TR, C), np.float32))


def test_the_ops_run_as_ptoas_spells_them():
    args = inputs()
    run = ptopipe.run_pto(text=kernel(), inputs=args)
    tab, ridx, eidx = args["tab"], args["ridx"][:, 0], args["eidx"]
    want_rows = tab[np.minimum(ridx, TR - 1)]
    np.testing.assert_array_equal(run.outputs["rows"], want_rows)
    np.testing.assert_array_equal(run.outputs["elems"], tab.reshape(-1)[eidx])
    acc = np.ones((TR, C), np.float32)
    for r, i in enumerate(ridx):
        if i < TR:
            acc[i] += want_rows[r]
    np.testing.assert_array_equal(run.outputs["acc"], acc)
    # ptoas drops the modes: its C++ would run them as Undefined / no atomic op
    warned = [w for w in run.warnings if "ptoas 0.27 drops" in w]
    assert len(warned) == 2, run.warnings
    text = kernel()
    assert warned[0].startswith(f"<pto>:{line_col(text, MG)}: ptoas 0.27 drops "
                                "pto.mgather's gatherOob"), warned
    assert "pto.mscatter's scatterAtomicOp and scatterOob" in warned[1]


def test_without_modes_an_index_past_the_table_is_refused_at_the_op():
    text = kernel(gather_oob=None, scatter_attrs="")
    with pytest.raises(KernelError) as ei:
        ptopipe.run_pto(text=text, inputs=inputs())
    assert "MGATHER index 40 at index 3 of the index tile (for row 3) is past the table's 32 rows" in ei.value.what
    assert ei.value.where.endswith(f"<pto>:{line_col(text, MG)}"), ei.value.where


@pytest.mark.parametrize("change,words,at", [
    (dict(arch="a3"), "('pto.mgather' op pto.mgather is only supported on A5 targets)", MG),
    (dict(ridx_t="ui32"), "('pto.mgather' op expects idx element type to be signless i32)", MG),
    (dict(ridx_cols=8), "('pto.mgather' op expects idx cols to be 1 or equal to dst cols)", MG),
    (dict(gather_oob="clip"), "gatherOob #pto < gather_oob clip > is not a GatherOOB", "#pto<gather_oob clip>")])
def test_what_ptoas_refuses_is_a_parse_error_at_the_op(change, words, at):
    text = kernel(**change)
    args = inputs()
    if "ridx_t" in change:
        args["ridx"] = args["ridx"].astype(np.uint32)
    if "ridx_cols" in change:
        args["ridx"] = np.zeros((R, 8), np.int32)
    with pytest.raises(ParseError) as ei:
        ptopipe.run_pto(text=text, inputs=args)
    assert words in str(ei.value), str(ei.value)
    assert ei.value.where.endswith(f"<pto>:{line_col(text, at)}"), ei.value.where


def test_the_static_verifier_names_what_its_value_ir_lacks(tmp_path):
    """A file with pipes that gathers: "not verified" at the op, naming what the value IR lacks."""
    import pathlib
    from ptopipe.driver.pto import static_verdict
    pair = (pathlib.Path(__file__).parent.parent / "pto" / "pypto_c2v_a5.pto").read_text()
    anchor = "    %c = pto.tpop_from_aic"
    gather = ("    %gi = pto.alloc_tile : !pto.tile_buf<vec, 8x1xi32, blayout=col_major>\n"
              "    %g = pto.alloc_tile : !pto.tile_buf<vec, 8x16xf32>\n"
              "    pto.mgather ins(%biasp, %gi : !pto.partition_tensor_view<8x16xf32>, "
              "!pto.tile_buf<vec, 8x1xi32, blayout=col_major>) "
              "outs(%g : !pto.tile_buf<vec, 8x16xf32>)\n")
    assert anchor in pair
    f = tmp_path / "pair_gather.pto"
    f.write_text(pair.replace(anchor, gather + anchor))
    v = static_verdict(str(f), None, "spec")
    assert v["status"] == "not verified", v
    assert "pto.mgather: the static verifier's value IR has no indexed GM reads" in v["detail"], v


@pytest.mark.skipif(not os.environ.get("PTOAS"), reason="PTOAS (a ptoas binary) is not set")
def test_ptoas_takes_the_file(tmp_path):
    f = tmp_path / "mg.pto"
    f.write_text(kernel(ridx_blayout=None))
    r = subprocess.run([os.environ["PTOAS"], "--pto-arch=a5", str(f), "-o", str(tmp_path / "mg.cpp")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    cpp = (tmp_path / "mg.cpp").read_text()
    assert cpp.count("MGATHER(") == 2 and cpp.count("MSCATTER(") == 1       # (no mode: ptoas drops them)
    f.write_text(kernel(arch="a3", ridx_blayout=None))
    r = subprocess.run([os.environ["PTOAS"], "--pto-arch=a3", str(f), "-o", str(tmp_path / "mg3.cpp")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and "pto.mgather is only supported on A5 targets" in r.stderr
