"""The ``.pto`` of no-split mixed kernels: a two-lane TILE_NO_SPLIT Vector kernel (A2A3, and A5
under seed 003) is AIV0's data work under ``scf.if %data_lane`` and AIV1's replay of every
handshake; a tile it pushes has a valid shape that is the tile's on AIV0 and 0 x 0 on AIV1
(``pto.alloc_tile valid_row = ... valid_col = ...`` of a ``v_row=?, v_col=?`` tile), as the C++
writer declares it: pto-isa's A2A3 no-split TPUSH writes the valid region at the slot's start
from either lane, so a full-shape push from AIV1 would land its uncomputed tile on AIV0's data.

Every no-split mixed DSL kernel of the examples and of the tests (C2V, V2C, both ways, a GM
scratch, pipelined loops with carried tiles, a tile held over inner pops, hand-split kernels) is
compiled for both platforms, written, and its file run with every checker as ptoas's C++ runs it.
"""
import inspect
import os
import re

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe import CompileError
from ptopipe.codegen import write_pto
from ptopipe.driver.loader import load_module
from ptopipe.passes import compile_program

import layers
import test_cpp_roundtrip
import test_crossing_slots
import test_deep_rings
import test_expand_mixed
import test_expand_mixed_gm
import test_expand_mixed_nosplit
import test_free_order_events
import test_pipeline_loops

S2 = load_module(f"{layers.ROOT}/examples/mixed/s2_cv_nosplit.py")

#: every no-split mixed kernel (and hand-split no-split pair) of the examples and tests
NO_SPLIT_KERNELS = {
    "example_s2_c2v": lambda: S2.KERNELS.source(M=16, N=32, slot_num=4),
    "crossing_v2c": lambda: test_crossing_slots._v2c(16, 32, "f32"),
    "crossing_c2v": lambda: test_crossing_slots._c2v(16, 32, 16, pl.TILE_NO_SPLIT),
    "expand_v2c": test_expand_mixed_nosplit._v2c_program,
    "round_trip": test_pipeline_loops.vector_round_trip,
    "vector_led_carried": lambda: test_pipeline_loops.vector_led(trips=3),
    "gm_scratch_v2c": lambda: test_expand_mixed_gm.scratch_reused("v2c", pl.TILE_NO_SPLIT),
    "gm_scratch_c2v": lambda: test_expand_mixed_gm.scratch_reused("c2v", pl.TILE_NO_SPLIT),
    "deep_ring": lambda: test_deep_rings.stream(4, pl.TILE_NO_SPLIT)[0],
    "held_over_pops": lambda: test_expand_mixed.held_over_inner_pops(pl.TILE_NO_SPLIT, "loop"),
    "mat_store": lambda: test_free_order_events.kernel("mat_store", pl.TILE_NO_SPLIT),
    "hand_split_v2c": test_cpp_roundtrip.v2c_no_split_program,
}
#: kernels written with a two-lane no-split pipe by hand (the A2A3 form): on A5 a no-split pipe
#: has one lane, so the compile refuses them there (test_hand_written_two_lane_no_split_is_refused_on_a5)
TWO_LANES_BY_HAND = {"hand_split_v2c"}


@pytest.mark.parametrize("name", sorted(NO_SPLIT_KERNELS))
def test_the_written_pto_of_a_no_split_kernel_runs_clean_on_both_platforms(name):
    prog = NO_SPLIT_KERNELS[name]()
    for platform in ("a2a3",) if name in TWO_LANES_BY_HAND else ("a2a3", "a5"):
        text = write_pto(compile_program(prog, platform), platform)
        res = ptopipe.run_pto(text=text, platform=platform)     # every checker on; raises on a finding
        # (a ring of a SlotNum ptoas does not build, chosen by the kernel, is the writer's note)
        assert [w for w in res.warnings if "ptoas refuses slot_num" not in w] == [], (name, platform)


def test_hand_written_two_lane_no_split_is_refused_on_a5():
    """A5 gives a no-split pipe one lane, AIV0: a kernel that gives it both is refused at its
    first NO_SPLIT push, the fix naming lanes=1."""
    with pytest.raises(CompileError) as ei:
        compile_program(test_cpp_roundtrip.v2c_no_split_program(), "a5")
    assert "a NO_SPLIT transfer has one lane, AIV0" in ei.value.what and "lanes=1" in ei.value.fix
    path, line, _col = ei.value.where.rsplit(":", 2)
    src = inspect.getsource(test_cpp_roundtrip.v2c_no_split_program).splitlines()
    first = inspect.getsourcelines(test_cpp_roundtrip.v2c_no_split_program)[1]
    push = first + next(i for i, text in enumerate(src) if "pl.TPUSH(" in text)
    assert os.path.samefile(path, test_cpp_roundtrip.__file__) and int(line) == push, ei.value.where


def test_a_tile_a_two_lane_no_split_kernel_pushes_is_empty_on_aiv1():
    text = write_pto(compile_program(test_expand_mixed_nosplit._v2c_program(), "a2a3"), "a2a3")
    aiv = text[text.index("@v2c_aiv"):text.index("func.func @v2c(")]
    assert "%lane_c16 = arith.select %data_lane, %c16, %c0 : index" in aiv
    dyn = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=?, v_col=?, blayout=row_major, "
           "slayout=none_box, fractal=512, pad=0>")
    m = re.search(r"(%\w+) = pto.alloc_tile valid_row = %lane_c16 valid_col = %lane_c16 : (.*)\n", aiv)
    assert m and m.group(2) == dyn, aiv
    v = m.group(1)
    assert re.search(rf"scf.if %data_lane {{\n\s+pto.tadds ins\(.*\) outs\({v} : {re.escape(dyn)}\)", aiv)
    assert f"pto.tpush({v}, %pipe : {dyn}, !pto.pipe) {{split = 0}}" in aiv
    assert "valid_row" not in text[:text.index("@v2c_aiv")]        # the Cube pushes whole tiles
    # what the file computes on the device: AIV1's push moves nothing, AIV0's tile arrives whole
    rng = np.random.default_rng(5)
    x = rng.integers(-4, 5, (48, 16)).astype(np.float32)
    a = rng.integers(-3, 4, (16, 16)).astype(np.float32)
    res = ptopipe.run_pto(text=text, platform="a2a3", inputs=dict(x=x, a=a))
    assert res.warnings == []
    want = np.concatenate([a @ (x[16 * k:16 * (k + 1)] + 1) for k in range(3)])
    np.testing.assert_array_equal(res.outputs["out"], want)


def test_carry_moves_of_a_two_lane_no_split_kernel_are_on_the_data_lane():
    """A tile a pipelined loop carries is moved in by AIV0 only: AIV1 computes nothing to move."""
    text = write_pto(compile_program(test_pipeline_loops.vector_led(trips=3), "a2a3"), "a2a3")
    aiv = text[text.index("kernel_kind<vector>"):]
    carries = re.findall(r"\n(\s*)pto.tmov ins\(.*\{ptopipe.carry\}", aiv)
    guarded = re.findall(r"scf.if %data_lane \{\n\s*pto.tmov ins\(.*\{ptopipe.carry\}", aiv)
    assert carries and len(guarded) == len(carries)


# -- a hand-written A2A3 no-split V2C push: the fix a .pto file can apply --------------------------
def _tile(loc, v="16", lay="blayout=row_major, slayout=none_box", fractal=512):
    return (f"!pto.tile_buf<loc={loc}, dtype=f32, rows=16, cols=16, v_row={v}, v_col={v}, {lay}, "
            f"fractal={fractal}, pad=0>")


def v2c_nosplit_a3(lane1: str) -> str:
    """An A2A3 V2C pair moving one 16x16 tile with split = 0: the Vector kernel's both lanes
    push it (``lane1`` "full"), with ``nosplit = true`` on both inits too ("nosplit"), or AIV1
    pushes an empty valid shape, its load on AIV0 only ("empty")."""
    ns = ", nosplit = true" if lane1 == "nosplit" else ""
    v = "?" if lane1 == "empty" else "16"
    vt, mat = _tile("vec", v), _tile("mat")
    left = _tile("left", lay="blayout=row_major, slayout=row_major")
    right = _tile("right", lay="blayout=row_major, slayout=col_major")
    acc = _tile("acc", lay="blayout=col_major, slayout=row_major", fractal=1024)
    view = "!pto.partition_tensor_view<16x16xf32>"
    alloc = (f"    %r = arith.select %is0, %c16, %c0 : index\n    %xt = pto.alloc_tile valid_row = %r valid_col = %r : {vt}\n"
             if lane1 == "empty" else f"    %xt = pto.alloc_tile : {vt}\n")
    load = f"pto.tload ins(%px : {view}) outs(%xt : {vt})"
    load = f"    scf.if %is0 {{\n      {load}\n    }}\n" if lane1 == "empty" else f"    {load}\n"
    consts = ("    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
              "    %c16 = arith.constant 16 : index\n    %c0_i32 = arith.constant 0 : i32\n")
    tv = "!pto.tensor_view<16x16xf32>"
    return f"""module attributes {{pto.target_arch = "a3"}} {{
  func.func @entry(%x: !pto.ptr<f32>, %b: !pto.ptr<f32>, %out: !pto.ptr<f32>, %g: !pto.ptr<f32>) attributes {{pto.entry}} {{
    func.call @cube(%b, %out, %g) : (!pto.ptr<f32>, !pto.ptr<f32>, !pto.ptr<f32>) -> ()
    func.call @vector(%x, %g) : (!pto.ptr<f32>, !pto.ptr<f32>) -> ()
    return
  }}
  func.func private @cube(%b: !pto.ptr<f32>, %out: !pto.ptr<f32>, %g: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
{consts}    %buf = pto.reserve_buffer {{name = "v2c_fifo", size = 8192, location = #pto.address_space<mat>, auto = true}} -> i32
    pto.aic_initialize_pipe {{dir_mask = 2, slot_size = 1024{ns}}}
      (gm_slot_buffer = %g : !pto.ptr<f32>, c2v_consumer_buf = %c0_i32 : i32, v2c_consumer_buf = %buf : i32)
    %bv = pto.make_tensor_view %b, shape = [%c16, %c16], strides = [%c16, %c1] : {tv}
    %ov = pto.make_tensor_view %out, shape = [%c16, %c16], strides = [%c16, %c1] : {tv}
    %bm = pto.alloc_tile : {mat}
    %br = pto.alloc_tile : {right}
    %al = pto.alloc_tile : {left}
    %acc = pto.alloc_tile : {acc}
    %pb = pto.partition_view %bv, offsets = [%c0, %c0], sizes = [%c16, %c16] : {tv} -> {view}
    pto.tload ins(%pb : {view}) outs(%bm : {mat})
    pto.tmov ins(%bm : {mat}) outs(%br : {right})
    %xm = pto.tpop_from_aiv {{split = 0}} -> {mat}
    pto.tmov ins(%xm : {mat}) outs(%al : {left})
    pto.tfree_from_aiv {{split = 0}}
    pto.tmatmul ins(%al, %br : {left}, {right}) outs(%acc : {acc})
    pto.tstore ins(%acc : {acc}) outs(%pb : {view})
    return
  }}
  func.func private @vector(%x: !pto.ptr<f32>, %g: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
{consts}    %imp = pto.import_reserved_buffer {{name = "v2c_fifo", peer_func = @cube}} -> i32
    pto.aiv_initialize_pipe {{dir_mask = 2, slot_size = 1024{ns}}}
      (gm_slot_buffer = %g : !pto.ptr<f32>, c2v_consumer_buf = %c0_i32 : i32, v2c_consumer_buf = %imp : i32)
    %sub_i64 = pto.get_subblock_idx
    %sub = arith.index_cast %sub_i64 : i64 to index
    %is0 = arith.cmpi eq, %sub, %c0 : index
    %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : {tv}
{alloc}    %px = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : {tv} -> {view}
{load}    pto.tpush_to_aic(%xt : {vt}) {{split = 0}}
    return
  }}
}}
"""


def test_an_a3_no_split_v2c_push_of_both_lanes_gives_the_fix_a_pto_file_can_apply(tmp_path, capsys):
    """Both lanes pushing the whole tile: the static error's fix was nosplit = true (and a
    DSL decorator); with it the run warned and again said nosplit = true.  Both now give the
    .pto spelling of what works on A2A3 - AIV1 pushing an empty valid shape (or a split) -
    and the file that follows it runs clean."""
    from ptopipe.cli import main as cli_main
    f = tmp_path / "k.pto"
    text = v2c_nosplit_a3("full")
    f.write_text(text)
    assert cli_main(["check", "--static", str(f)]) == 1
    err = capsys.readouterr().err
    push = next(i for i, ln in enumerate(text.splitlines(), 1) if "pto.tpush_to_aic" in ln)
    assert f"at {f}:{push}:5\n" in err and "both Vector lanes write the whole slot" in err
    fix = err.split("fix: ", 1)[1]
    assert fix.startswith("split the tile between the lanes (split = 1 or 2 on the push")
    assert "valid_row = %r valid_col = %c : !pto.tile_buf<..., v_row=?, v_col=?, ...>" in fix
    assert "@pl.aiv" not in fix and "nosplit = true alone leaves AIV1 pushing the tile it holds" in fix
    f.write_text(v2c_nosplit_a3("nosplit"))
    assert cli_main(["check", str(f), "--schedules", "2"]) == 0
    out = capsys.readouterr().out
    (warning,) = [ln for ln in out.splitlines() if "both push a TILE_NO_SPLIT tile" in ln]
    assert "give AIV1's pushed tile an empty valid shape" in warning
    assert "nosplit = true on both" not in warning and "SetValid" not in warning
    f.write_text(v2c_nosplit_a3("empty"))
    assert cli_main(["check", str(f), "--schedules", "2"]) == 0
    out = capsys.readouterr().out
    assert "no checker report" in out and "warning" not in out, out
