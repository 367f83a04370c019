"""Ops a newer pypto writes that ptoas 0.27 does not know: ``pto.subview`` (``tile.slice`` /
``tile.assemble`` / ``tile.gather_row``: a window with its source's row stride and its own valid
shape), ``pto.alloc_multi_tile`` / ``pto.multi_tile_get`` (``memory_planner=PTOAS`` multi-slot
regions) and ``pto.syncall`` (``system.syncall``: an all-core barrier that orders GM accesses),
read and run with numpy goldens; the static verifier says what its value IR lacks."""
import pathlib

import numpy as np
import pytest

from ptopipe.codegen.pto_exec import plan_layout, read_program, run_pto
from ptopipe.codegen.pto_exec.program import walk
from ptopipe.arch import get_platform
from ptopipe.driver.pto import static_verdict
from ptopipe.errors import ConfigError, DataRaceError, DeadlockError, KernelError, MemoryConflictError, ParseError


def vt(r, c, vr=None, vc=None, d="f32", loc="vec"):
    vr = r if vr is None else vr
    vc = c if vc is None else vc
    lay = "blayout=row_major, slayout=none_box" if loc == "vec" else "blayout=col_major, slayout=row_major"
    return (f"!pto.tile_buf<loc={loc}, dtype={d}, rows={r}, cols={c}, v_row={vr}, v_col={vc}, {lay}, "
            f"fractal={1024 if loc == 'acc' else 512}, pad=0>")


def pv(r, c, d="f32"):
    return f"!pto.partition_tensor_view<{r}x{c}x{d}>"


TV = "!pto.tensor_view<?x?xf32>"


def vector_file(body: str, params: str = "%x: !pto.ptr<f32>, %y: !pto.ptr<f32>") -> str:
    return f"""module attributes {{pto.target_arch = "a5"}} {{
  func.func @k({params}) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : {TV}
    %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : {TV}
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : {TV} -> {pv(16, 16)}
    %t = pto.alloc_tile : {vt(16, 16)}
    pto.tload ins(%xp : {pv(16, 16)}) outs(%t : {vt(16, 16)})
{body}
    return
  }}
}}
"""


def line_of(text: str, needle: str) -> int:
    return next(i for i, l in enumerate(text.splitlines(), 1) if needle in l)


X = (np.arange(256, dtype=np.float32).reshape(16, 16) - 100) / 64


# -- pto.subview ---------------------------------------------------------------------------

SLICE = f"""    %n = arith.index_cast %nv : i32 to index
    %s = pto.subview %t[%c0, %c8] sizes [16, 8] valid [%c16, %n] : {vt(16, 16)} -> {vt(16, 8, 16, '?')}
    %o = pto.alloc_tile valid_col = %n : {vt(16, 8, 16, '?')}
    pto.texp ins(%s : {vt(16, 8, 16, '?')}) outs(%o : {vt(16, 8, 16, '?')})
    %yp = pto.partition_view %yv, offsets = [%c0, %c8], sizes = [%c16, %n] : {TV} -> !pto.partition_tensor_view<16x?xf32>
    pto.tstore ins(%o : {vt(16, 8, 16, '?')}) outs(%yp : !pto.partition_tensor_view<16x?xf32>)"""


def test_subview_reads_a_window_with_its_sources_row_stride_and_its_own_valid_shape():
    """tile.slice(x, [16, 8], [0, 8], valid_shape=[16, n]): element (i, j) of the view is x's
    (i, 8 + j) - a contiguous 16 x 8 tile at the offset (pto.subset's lowering) would read rows
    i / 2 - and only its n valid columns are computed and stored."""
    text = vector_file(SLICE, "%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %nv: i32")
    res = run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X), nv=5))
    want = np.zeros_like(X)
    want[:, 8:13] = np.exp(X[:, 8:13])
    np.testing.assert_allclose(res.outputs["y"], want, rtol=1e-6)
    assert not res.warnings          # the view's bytes were loaded (its extent runs past its source)


def test_subview_assemble_writes_the_window_in_place():
    """tile.assemble: pto.tmov into a subview of the target writes rows 4..7, columns 8..15 of
    it and nothing else (no valid clause: the window's valid shape is the source's there)."""
    body = f"""    %seven = arith.constant 7.0 : f32
    %src = pto.alloc_tile : {vt(4, 8)}
    pto.texpands ins(%seven : f32) outs(%src : {vt(4, 8)})
    %w = pto.subview %t[%c4, %c8] sizes [4, 8] : {vt(16, 16)} -> {vt(4, 8)}
    pto.tmov ins(%src : {vt(4, 8)}) outs(%w : {vt(4, 8)})
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c16] : {TV} -> {pv(16, 16)}
    pto.tstore ins(%t : {vt(16, 16)}) outs(%yp : {pv(16, 16)})"""
    got = run_pto(text=vector_file(body), inputs=dict(x=X, y=np.zeros_like(X))).outputs["y"]
    want = X.copy()
    want[4:8, 8:16] = 7.0
    np.testing.assert_array_equal(got, want)


def test_a_subview_keeps_its_source_live_for_the_placement():
    """The source's last use by name is the subview; a tile allocated after it while the view
    is still read must not be placed over the source."""
    body = f"""    %v = pto.subview %t[%c0, %c0] sizes [16, 16] : {vt(16, 16)} -> {vt(16, 16)}
    %two = arith.constant 2.0 : f32
    %u = pto.alloc_tile : {vt(16, 16)}
    pto.texpands ins(%two : f32) outs(%u : {vt(16, 16)})
    pto.tadd ins(%v, %u : {vt(16, 16)}, {vt(16, 16)}) outs(%u : {vt(16, 16)})
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c16] : {TV} -> {pv(16, 16)}
    pto.tstore ins(%u : {vt(16, 16)}) outs(%yp : {pv(16, 16)})"""
    got = run_pto(text=vector_file(body), inputs=dict(x=X, y=np.zeros_like(X))).outputs["y"]
    np.testing.assert_array_equal(got, X + 2)


@pytest.mark.parametrize("window,what", [
    ("%t[%c0, %c8] sizes [16, 8] valid [%c16, %c16]", "the valid extent exceeds the window's sizes"),
    ("%t[%c8, %c8] sizes [16, 8] valid [%c16, %c8]", "the valid region leaves the source's static shape"),
    ("%t[%c0, %c4] sizes [16, 8] valid [%c16, %c8]", "not on a 32-byte boundary"),
    ("%t[%c8, %c8] sizes [16, 8]", "the window is rows 8..23 of a source of 16 rows (rows 0..15): it leaves "
                                   "its source, so only 8 of its rows are valid, where the view type says v_row=16"),
])
def test_subview_refusals_name_the_op(window, what):
    body = (f"    %s = pto.subview {window} : {vt(16, 16)} -> {vt(16, 8)}\n"
            f"    pto.texp ins(%s : {vt(16, 8)}) outs(%s : {vt(16, 8)})")
    text = vector_file(body)
    with pytest.raises(KernelError) as e:
        run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X)))
    assert what in e.value.what and "pto.subview 16x8 at" in e.value.what
    assert e.value.where.startswith(f"<pto>:{line_of(text, '%s = pto.subview')}:")


def test_a_parse_error_is_not_said_to_be_one_blocks():
    """A malformed op is wrong in every block: no "(in block b of N)", which a kernel error of a
    block run gets."""
    bad = vector_file(f"    %s = pto.subview %t[%c0] sizes [16, 8] : {vt(16, 16)} -> {vt(16, 8)}")
    with pytest.raises(ParseError) as e:
        run_pto(text=bad, inputs=dict(x=X, y=np.zeros_like(X)), blocks=2)
    assert "needs two offsets" in e.value.what and "(in block" not in str(e.value)
    assert e.value.where.startswith(f"<pto>:{line_of(bad, '%s = pto.subview')}:")
    unaligned = vector_file(f"    %s = pto.subview %t[%c0, %c4] sizes [16, 8] valid [%c16, %c8] : {vt(16, 16)} -> "
                            f"{vt(16, 8)}")
    with pytest.raises(KernelError) as e:
        run_pto(text=unaligned, inputs=dict(x=X, y=np.zeros_like(X)), blocks=2)
    assert "(in block 0 of 2)" in str(e.value)


def test_a_view_past_its_argument_is_fixed_in_the_files_words():
    """The fix names what a .pto offsets a view by (its pto.partition_view), not Python's x.data()."""
    text = vector_file(f"    %yp = pto.partition_view %yv, offsets = [%c8, %c0], sizes = [%c16, %c16] : {TV} -> {pv(16, 16)}\n"
                       f"    pto.tstore ins(%t : {vt(16, 16)}) outs(%yp : {pv(16, 16)})")
    with pytest.raises(MemoryConflictError) as e:
        run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X)))
    assert e.value.where.startswith(f"<pto>:{line_of(text, 'pto.tstore ins(%t')}:")
    assert "check the loop bound and the offsets of its pto.partition_view" in e.value.fix
    assert ".data()" not in e.value.fix


# -- pto.alloc_multi_tile / pto.multi_tile_get ------------------------------------------------

MB = f"!pto.multi_tile_buf<{vt(16, 16, '?', '?')}, count=2>"


def multi_file(count: int = 2, slot: str = "%k") -> str:
    mb = MB.replace("count=2", f"count={count}")
    return f"""module attributes {{pto.target_arch = "a5"}} {{
  func.func @mb(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %three = arith.constant 3.0 : f32
    %xv = pto.make_tensor_view %x, shape = [%c64, %c16], strides = [%c16, %c1] : {TV}
    %yv = pto.make_tensor_view %y, shape = [%c64, %c16], strides = [%c16, %c1] : {TV}
    %m = pto.alloc_multi_tile valid_row = %c16 valid_col = %c16 : {mb}
    %o = pto.alloc_tile : {vt(16, 16)}
    scf.for %i = %c0 to %c4 step %c1 {{
      %k = arith.remsi %i, %c2 : index
      %t = pto.multi_tile_get %m[{slot}] : {mb} -> {vt(16, 16, '?', '?')}
      %r = arith.muli %i, %c16 : index
      %xp = pto.partition_view %xv, offsets = [%r, %c0], sizes = [%c16, %c16] : {TV} -> {pv(16, 16)}
      pto.tload ins(%xp : {pv(16, 16)}) outs(%t : {vt(16, 16, '?', '?')})
      pto.tmuls ins(%t, %three : {vt(16, 16, '?', '?')}, f32) outs(%o : {vt(16, 16)})
      %yp = pto.partition_view %yv, offsets = [%r, %c0], sizes = [%c16, %c16] : {TV} -> {pv(16, 16)}
      pto.tstore ins(%o : {vt(16, 16)}) outs(%yp : {pv(16, 16)})
    }}
    return
  }}
}}
"""


X64 = np.arange(1024, dtype=np.float32).reshape(64, 16) / 3


def test_multi_tile_region_runs_slot_by_slot():
    got = run_pto(text=multi_file(), inputs=dict(x=X64, y=np.zeros_like(X64))).outputs["y"]
    np.testing.assert_allclose(got, 3 * X64, rtol=1e-6)


def test_multi_tile_region_is_placed_as_count_slots():
    """The region takes count slots side by side; a tile live with it is placed past them."""
    prog = read_program(multi_file(3), "<pto>")
    lay = plan_layout(prog, get_platform("a5"))
    at = {s.results[0]: lay.sites[id(s)] for f in prog.funcs.values() for s in walk(f.body) if id(s) in lay.sites}
    m, o = at["%m"], at["%o"]
    assert o >= m + 3 * 1024 or o + 1024 <= m


def test_multi_tile_slot_out_of_range_and_bad_count():
    text = multi_file(slot="%c2")
    with pytest.raises(KernelError) as e:
        run_pto(text=text, inputs=dict(x=X64, y=np.zeros_like(X64)))
    assert "%m[2]: the region has 2 slots (0..1)" in e.value.what
    assert e.value.where.startswith(f"<pto>:{line_of(text, 'pto.multi_tile_get')}:")
    with pytest.raises(ParseError) as e:
        run_pto(text=multi_file(count=1), inputs=dict(x=X64, y=np.zeros_like(X64)))
    assert "count=1: ptoas takes 2..16 slots" in e.value.what


# -- pto.syncall ------------------------------------------------------------------------------

def syncall_file(aic_sync: str = "hard", aiv_sync: str = "hard", core_type: str = "mix") -> str:
    """AIV0: ws = 2 x (GM), then the barrier; AIC: the barrier, then out = ws @ w from GM."""
    def sync(mode):
        if mode == "hard":
            return f"    pto.syncall() mode = #pto.sync_all_mode<hard>, core_type = #pto.sync_core_type<{core_type}>"
        if mode.startswith("soft"):
            used = mode[4:]
            ops = "%swp, %used : !pto.partition_tensor_view<16xi32>, i32" if used else \
                "%swp : !pto.partition_tensor_view<16xi32>"
            return ("    %swv = pto.make_tensor_view %sw, shape = [%c16], strides = [%c1] : !pto.tensor_view<?xi32>\n"
                    "    %swp = pto.partition_view %swv, offsets = [%c0], sizes = [%c16] : !pto.tensor_view<?xi32> -> "
                    "!pto.partition_tensor_view<16xi32>\n"
                    + (f"    %used = arith.constant {used} : i32\n" if used else "")
                    + f"    pto.syncall({ops}) mode = #pto.sync_all_mode<soft>, core_type = #pto.sync_core_type<{core_type}>")
        return ""
    params = "%x: !pto.ptr<f32>, %ws: !pto.ptr<f32>, %w: !pto.ptr<f32>, %out: !pto.ptr<f32>, %sw: !pto.ptr<i32>"
    head = """    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index"""

    def view(p):
        return (f"    %{p}v = pto.make_tensor_view %{p}, shape = [%c16, %c16], strides = [%c16, %c1] : {TV}\n"
                f"    %{p}p = pto.partition_view %{p}v, offsets = [%c0, %c0], sizes = [%c16, %c16] : {TV} -> {pv(16, 16)}")
    mat, left, right, acc = vt(16, 16, loc="mat"), vt(16, 16, loc="left"), vt(16, 16, loc="right"), vt(16, 16, loc="acc")
    right = right.replace("blayout=col_major, slayout=row_major", "blayout=row_major, slayout=col_major")
    return f"""module attributes {{pto.target_arch = "a5"}} {{
  func.func @sa_aic({params}) attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
{head}
{view("ws")}
{view("w")}
{view("out")}
    %a = pto.alloc_tile : {mat}
    %b = pto.alloc_tile : {mat}
    %l = pto.alloc_tile : {left}
    %r = pto.alloc_tile : {right}
    %acc = pto.alloc_tile : {acc}
{sync(aic_sync)}
    pto.tload ins(%wsp : {pv(16, 16)}) outs(%a : {mat})
    pto.tload ins(%wp : {pv(16, 16)}) outs(%b : {mat})
    pto.tmov ins(%a : {mat}) outs(%l : {left})
    pto.tmov ins(%b : {mat}) outs(%r : {right})
    pto.tmatmul ins(%l, %r : {left}, {right}) outs(%acc : {acc})
    pto.tstore ins(%acc : {acc}) outs(%outp : {pv(16, 16)})
    return
  }}
  func.func @sa_aiv({params}) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
{head}
    %two = arith.constant 2.0 : f32
{view("x")}
{view("ws")}
    %t = pto.alloc_tile : {vt(16, 16)}
    pto.tload ins(%xp : {pv(16, 16)}) outs(%t : {vt(16, 16)})
    pto.tmuls ins(%t, %two : {vt(16, 16)}, f32) outs(%t : {vt(16, 16)})
    pto.tstore ins(%t : {vt(16, 16)}) outs(%wsp : {pv(16, 16)})
{sync(aiv_sync)}
    return
  }}
}}
"""


RNG = np.random.default_rng(3)
SX, SW = RNG.standard_normal((16, 16)).astype(np.float32), RNG.standard_normal((16, 16)).astype(np.float32)


def run_sync(text, **kw):
    return run_pto(text=text, inputs=dict(x=SX, ws=np.zeros_like(SX), w=SW, out=np.zeros_like(SX),
                                          sw=np.zeros(16, np.int32)), **kw)


@pytest.mark.parametrize("mode", ["hard", "soft", "soft2"])
def test_syncall_orders_a_vector_gm_write_before_a_cube_gm_read(mode):
    got = run_sync(syncall_file(mode, mode)).outputs["out"]
    np.testing.assert_allclose(got, (2 * SX) @ SW, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("aic,aiv,core_type", [("", "", "mix"), ("hard", "hard", "aiv_only")])
def test_without_a_barrier_over_both_cores_the_gm_handoff_is_a_race(aic, aiv, core_type):
    """No syncall, or one whose core_type leaves the Cube out (it only drains its pipes)."""
    text = syncall_file(aic, aiv, core_type)
    with pytest.raises(DataRaceError) as e:
        run_sync(text)
    assert "AIV0 TSTORE and AIC TLOAD" in e.value.what
    assert f":{line_of(text, 'outs(%wsp')}:" in e.value.where


def test_a_core_that_returns_without_reaching_the_syncall_is_a_deadlock_there():
    text = syncall_file("hard", "")
    with pytest.raises(DeadlockError) as e:
        run_sync(text)
    assert e.value.where.startswith(f"<pto>:{line_of(text, 'pto.syncall')}:")
    assert "waits for AIV0 to reach its SYNCALL" in str(e.value)
    assert "returned without reaching one" in e.value.fix


def test_a_syncall_across_several_blocks_is_refused_at_its_line():
    """The barrier spans every block of the launch; the blocks run one after another."""
    text = syncall_file("hard", "hard")
    with pytest.raises(ConfigError) as e:
        run_sync(text, blocks=2)
    assert "all 2 blocks of the launch" in e.value.what
    assert e.value.where.startswith("<pto>:") and f":{line_of(text, 'pto.syncall')}:" in e.value.where
    assert "--blocks 1" in e.value.fix


def test_soft_syncall_participant_count_and_workspace_are_checked():
    with pytest.raises(ConfigError) as e:
        run_sync(syncall_file("soft3", "soft3"))
    assert "used_cores = 3, but the launch has 2 participating core(s)" in e.value.what
    small = syncall_file("soft", "soft").replace("sizes = [%c16] : !pto.tensor_view<?xi32> -> "
                                                 "!pto.partition_tensor_view<16xi32>",
                                                 "sizes = [%c1] : !pto.tensor_view<?xi32> -> "
                                                 "!pto.partition_tensor_view<1xi32>") \
        .replace("%swp : !pto.partition_tensor_view<16xi32>", "%swp : !pto.partition_tensor_view<1xi32>")
    with pytest.raises(ConfigError) as e:
        run_sync(small)
    assert "at least 16 elements" in e.value.what


# -- reading ------------------------------------------------------------------------------------

def test_the_run_reader_knows_the_ops_and_the_static_reader_names_what_it_lacks(tmp_path):
    """Each op is read (every op known before anything runs); the static verifier refuses a file
    with pipes that uses one - "not verified" at the op, naming what its value IR lacks - and
    the run of the same file is checked against numpy."""
    for text in (vector_file(SLICE, "%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %nv: i32"), multi_file(),
                 syncall_file("soft2", "hard")):
        prog = read_program(text, "<pto>")
        names = {s.name for f in prog.funcs.values() for s in walk(f.body)}
        assert names & {"pto.subview", "pto.alloc_multi_tile", "pto.multi_tile_get", "pto.syncall"}
    pair = (pathlib.Path(__file__).parent.parent / "pto" / "pypto_c2v_a5.pto").read_text()
    view = ("    %cv = pto.subview %c[%c0, %c0] sizes [8, 16] valid [%c8, %c16] : !pto.tile_buf<vec, 8x16xf32> -> "
            "!pto.tile_buf<vec, 8x16xf32>\n")
    pair = pair.replace("    %y = pto.alloc_tile : !pto.tile_buf<vec, 8x16xf32>\n",
                        view + "    %y = pto.alloc_tile : !pto.tile_buf<vec, 8x16xf32>\n")
    pair = pair.replace("pto.tadd ins(%c, %bias", "pto.tadd ins(%cv, %bias")
    assert "%cv, %bias" in pair
    f = tmp_path / "pair_subview.pto"
    f.write_text(pair)
    v = static_verdict(str(f), None, "spec")
    assert v["status"] == "not verified"
    assert "pto.subview: the static verifier's value IR has no tile views" in v["detail"]
    assert f"pair_subview.pto:{line_of(pair, '%cv = pto.subview')}:" in v["detail"]
    rng = np.random.default_rng(0)
    a, b, bias = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(3))
    got = run_pto(str(f), inputs=dict(arg0=a, arg1=b, arg2=bias, arg3=np.zeros((16, 16), np.float32)))
    np.testing.assert_allclose(got.outputs["arg3"], a @ b + bias, rtol=1e-4, atol=1e-4)


# -- a Vector kernel that splits its work by sub-block ------------------------------------------

def lanes_file(sub: str = "op", sync: str = "all") -> str:
    """A Vector-only kernel: lane s stores ws rows [8 s, 8 s + 8) = x + 1, reaches ``sync``
    (``all``: a pto.syncall every lane reaches; ``lane0``: one under ``scf.if`` lane == 0), then
    stores y rows [8 s, 8 s + 8) = 2 * the other lane's ws rows.  ``sub``: how it reads s -
    ``op`` pto.get_subblock_idx, ``param`` pypto's SPMD parameter, ``none`` not at all (s = 0)."""
    v8, p8 = vt(8, 16), pv(8, 16)
    params = "%x: !pto.ptr<f32>, %ws: !pto.ptr<f32>, %y: !pto.ptr<f32>"
    if sub == "param":
        params += ", %__pypto_spmd_subblock_idx: i32"
    lane = {"op": "    %s64 = pto.get_subblock_idx\n    %s = arith.index_cast %s64 : i64 to index",
            "param": "    %s = arith.index_cast %__pypto_spmd_subblock_idx : i32 to index",
            "none": "    %s = arith.constant 0 : index"}[sub]
    barrier = "pto.syncall() mode = #pto.sync_all_mode<hard>, core_type = #pto.sync_core_type<aiv_only>"
    sync_text = {"all": f"    {barrier}", "lane0": f"    scf.if %is0 {{\n      {barrier}\n    }}"}[sync]
    return f"""module attributes {{pto.target_arch = "a3"}} {{
  func.func @lanes({params}) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %one = arith.constant 1.0 : f32
    %two = arith.constant 2.0 : f32
{lane}
    %is0 = arith.cmpi eq, %s, %c0 : index
    %mine = arith.muli %s, %c8 : index
    %other = arith.subi %c1, %s : index
    %theirs = arith.muli %other, %c8 : index
    %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : {TV}
    %wv = pto.make_tensor_view %ws, shape = [%c16, %c16], strides = [%c16, %c1] : {TV}
    %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : {TV}
    %t = pto.alloc_tile : {v8}
    %xp = pto.partition_view %xv, offsets = [%mine, %c0], sizes = [%c8, %c16] : {TV} -> {p8}
    pto.tload ins(%xp : {p8}) outs(%t : {v8})
    pto.tadds ins(%t, %one : {v8}, f32) outs(%t : {v8})
    %wp = pto.partition_view %wv, offsets = [%mine, %c0], sizes = [%c8, %c16] : {TV} -> {p8}
    pto.tstore ins(%t : {v8}) outs(%wp : {p8})
{sync_text}
    %op = pto.partition_view %wv, offsets = [%theirs, %c0], sizes = [%c8, %c16] : {TV} -> {p8}
    pto.tload ins(%op : {p8}) outs(%t : {v8})
    pto.tmuls ins(%t, %two : {v8}, f32) outs(%t : {v8})
    %yp = pto.partition_view %yv, offsets = [%mine, %c0], sizes = [%c8, %c16] : {TV} -> {p8}
    pto.tstore ins(%t : {v8}) outs(%yp : {p8})
    return
  }}
}}
"""


def run_lanes(text):
    return run_pto(text=text, inputs=dict(x=X, ws=np.zeros_like(X), y=np.zeros_like(X)))


@pytest.mark.parametrize("sub", ["op", "param"])
def test_a_vector_only_kernel_that_reads_its_sub_block_runs_on_both_lanes(sub):
    """The C++ front end's rule (isa.launch.lone_vector_lanes): a Vector kernel with nothing of
    the Cube's reaching it runs on AIV0 alone unless it reads its sub-block index - here each
    lane computes half of y, and both halves are there."""
    res = run_lanes(lanes_file(sub))
    want = 2 * (np.concatenate([X[8:], X[:8]]) + 1)
    np.testing.assert_allclose(res.outputs["y"], want, rtol=1e-6)
    assert any("reads its sub-block index (pto.get_subblock_idx): run on both Vector cores" in n
               for n in res.notes), res.notes


def test_a_vector_only_kernel_that_does_not_read_its_sub_block_runs_on_aiv0_and_says_so():
    res = run_lanes(lanes_file("none"))
    np.testing.assert_allclose(res.outputs["ws"][:8], X[:8] + 1, rtol=1e-6)
    assert not res.outputs["ws"][8:].any()          # (no lane 1)
    assert any("no pto.get_subblock_idx in the file: run on AIV0" in n for n in res.notes), res.notes


def test_a_syncall_one_lane_skips_names_the_barrier_at_the_race():
    """The SYNCALL under scf.if lane == 0: AIV0 waits there for AIV1, which loads AIV0's rows
    unordered - a race at AIV1's TLOAD whose report names the waiting barrier and gives a
    barrier every lane reaches as the fix (not a TPUSH / SET)."""
    text = lanes_file("op", "lane0")
    with pytest.raises(DataRaceError) as e:
        run_lanes(text)
    assert e.value.where.startswith(f"<pto>:{line_of(text, 'pto.tload ins(%op')}:")
    assert f"AIV0 waits at its SYNCALL (<pto>:{line_of(text, '      pto.syncall')}:" in e.value.what
    assert "for AIV1, which made its TLOAD without having reached a SYNCALL" in e.value.what
    assert "put a SYNCALL that every core of its core_type reaches" in e.value.fix
    assert "(e.g. an scf.if on pto.get_subblock_idx)" in e.value.fix and "TPUSH" not in e.value.fix


# -- what ptoas 0.27 refuses of them ------------------------------------------------------------

@pytest.mark.parametrize("form", ["subview", "multi_tile", "syncall", "set_ffts"])
def test_what_only_a_newer_ptoas_reads_is_a_warning_at_it(form):
    """ptoas 0.27 refuses these files ("custom op 'pto.subview' is unknown"; a set_ffts of a
    !pto.ptr: "invalid kind of type specified"): the checked run says so at the op, naming the
    newer ptoas pypto writes for, and runs the file as that one does - not silently."""
    from ptopipe.codegen.pto_load import run_pto as run_checked
    if form == "syncall":
        text, at = syncall_file(), "pto.syncall()"
        res = run_checked(text=text, inputs=dict(x=SX, ws=np.zeros_like(SX), w=SW, out=np.zeros_like(SX),
                                                 sw=np.zeros(16, np.int32)))
    else:
        body = {"subview": SLICE,
                "multi_tile": (f"    %m = pto.alloc_multi_tile valid_row = %c16 valid_col = %c16 : "
                               f"!pto.multi_tile_buf<{vt(16, 16)}, count=2>\n"
                               f"    %u = pto.multi_tile_get %m[%c1] : !pto.multi_tile_buf<{vt(16, 16)}, count=2> -> "
                               f"{vt(16, 16)}\n    pto.tmov ins(%t : {vt(16, 16)}) outs(%u : {vt(16, 16)})"),
                "set_ffts": "    pto.set_ffts %ffts : !pto.ptr<i64>"}[form]
        at = {"subview": "pto.subview", "multi_tile": "pto.alloc_multi_tile", "set_ffts": "!pto.ptr<i64>"}[form]
        text = vector_file(body, "%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %nv: i32, %ffts: !pto.ptr<i64>")
        res = run_checked(text=text, inputs=dict(x=X, y=np.zeros_like(X), nv=5, ffts=np.zeros(256, np.int64)))
    ln = line_of(text, "pto.set_ffts" if form == "set_ffts" else at)
    where = f"<pto>:{ln}:{text.splitlines()[ln - 1].index(at) + 1}: ptoas 0.27"
    assert any(w.startswith(where) and "pypto writes" in w for w in res.warnings), res.warnings


def test_an_ffts_workspace_only_set_ffts_names_needs_no_input():
    """pypto passes a 256 x i64 FFTS workspace with every cross-core sync and hands it to
    pto.set_ffts only; the simulated flags never read it, so the run makes it up rather than
    asking for an --input ("the size of parameter %ffts is not known statically")."""
    text = vector_file("    pto.set_ffts %ffts : !pto.ptr<i64>\n"
                       f"    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c16] : {TV} -> {pv(16, 16)}\n"
                       f"    pto.tstore ins(%t : {vt(16, 16)}) outs(%yp : {pv(16, 16)})",
                       "%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %ffts: !pto.ptr<i64>")
    np.testing.assert_array_equal(run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X))).outputs["y"], X)
