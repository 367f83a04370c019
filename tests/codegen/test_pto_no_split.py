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
import re

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
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
    "crossing_c2v": lambda: test_crossing_slots._c2v(16, 32, 16),
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


@pytest.mark.parametrize("name", sorted(NO_SPLIT_KERNELS))
def test_the_written_pto_of_a_no_split_kernel_runs_clean_on_both_platforms(name):
    prog = NO_SPLIT_KERNELS[name]()
    for platform in ("a2a3", "a5"):
        text = write_pto(compile_program(prog, platform), platform)
        res = ptopipe.run_pto(text=text, platform=platform)     # every checker on; raises on a finding
        # (a ring of a SlotNum ptoas does not build, chosen by the kernel, is the writer's note)
        assert [w for w in res.warnings if "ptoas refuses slot_num" not in w] == [], (name, platform)


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
