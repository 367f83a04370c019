"""One checked run shows when every schedule gives its result (ptopipe.sim.determinacy), and
the periodic engine's check then explores no schedule: S1, S4 and S7 on both platforms.  Each
thing that keeps a run from showing it is met by a kernel that has it, and its schedules are
then explored: a flag another schedule overflows (a ring deeper than the counter, a lane that
never answers), unordered atomic adds, unordered stores of identical bytes, tile bytes read
from Python, the scalar unit's GM accesses, and runs configured outside the argument.  Where
the judgement holds, the reference explorer (every schedule run, the exact engine) passes
too: over the examples here and over random kernels, clean and mutated."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import fuzz_kernels as fk
import ptopipe
from ptopipe.arch.vocab import SyncPipe
from ptopipe.cli import main as cli_main
from ptopipe.codegen.pto_exec import run_pto
from ptopipe.driver.loader import load_scenarios
from ptopipe.errors import ProtocolError
from ptopipe.isa import (TLOAD, TSTORE, AtomicType, GlobalTensor, Tile, TileType, float32, get_subblockid)
from ptopipe.isa.crosscore import set_intra_block, wait_intra_block
from ptopipe.isa.explore import explore
from markers import line_of
from test_identical_stores import C, R, _isa_args, _isa_vector    # (both lanes store one window)

EX = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
SCENARIOS = ("s1_cv_split", "s4_both_ways", "s7_long_stream")
TARGETS = (("a2a3", "spec"), ("a5", "pto-isa"))


def _scenario(path: str):
    return load_scenarios(os.path.join(EX, path))[0]


def _unplaced(text: str, line: int) -> str:
    """``text`` with this file's ``path:line`` (as a report spells it) said ``HERE``."""
    where = re.search(r"\S*" + re.escape(os.path.basename(__file__)) + f":{line}\\b", text)
    assert where and os.path.samefile(where.group(0).rsplit(":", 1)[0], __file__), text
    return text.replace(where.group(0), "HERE")


def _both(target, schedules: int = 20, **kw):
    """The periodic engine's check of ``target`` and the reference one (every schedule run)."""
    return (explore(target, schedules=schedules, engine="periodic", **kw),
            explore(target, schedules=schedules, engine="exact", **kw))


@pytest.mark.parametrize("platform,protocol", TARGETS)
@pytest.mark.parametrize("name", SCENARIOS)
def test_a_clean_scenario_needs_only_its_default_schedule(name, platform, protocol):
    sc = _scenario(f"scenarios/{name}.py")
    judged = explore(sc, schedules=200, platform=platform, protocol=protocol, engine="periodic")
    assert judged.ok and judged.determinate and judged.complete, judged.why_explored
    assert judged.runs == 1 and judged.why_explored is None
    ref = explore(sc, schedules=6, platform=platform, protocol=protocol, engine="exact")
    assert ref.ok and ref.runs == 7 and not ref.determinate


# -- flags: the s-th SET must happen after the (s - max)-th WAIT ------------------------------
def _cube(n, acked):
    for i in range(n):
        set_intra_block(SyncPipe.PIPE_S, 0)        # to AIV0: ping
        # to AIV1: a token
        set_intra_block(SyncPipe.PIPE_S, 16)       # <- token
        wait_intra_block(SyncPipe.PIPE_S, 0)       # AIV0's pong
        if acked:
            wait_intra_block(SyncPipe.PIPE_S, 16)  # AIV1's answer


def _vector(n, acked):
    for i in range(n):
        wait_intra_block(SyncPipe.PIPE_S, 0)
        if get_subblockid() == 0 or acked:
            set_intra_block(SyncPipe.PIPE_S, 0)


def test_a_lane_that_never_answers_may_overflow_its_flag_under_another_schedule():
    """AIV1 only takes tokens: the default schedule keeps it in step, a schedule that starves
    it lets the Cube put 16 tokens on a flag that holds 15.  The default run says so and the
    schedules are explored, which find the overflow at the SET's line."""
    line = line_of(_cube, "<- token")
    judged, ref = _both((_cube, _vector), args=dict(n=20, acked=False), platform="a5", protocol="spec")
    assert not judged.determinate
    assert _unplaced(judged.why_explored, line) == (
        "flag 0 (AIC->AIV1) may hold more than its 15 pending SETs under another schedule: its SET "
        "number 16 (at HERE) is not ordered after the WAIT number 1")
    for res in (judged, ref):
        spec, err = res.first
        assert type(err) is ProtocolError and _unplaced(err.where, line) == "HERE", err
    assert str(judged.first[0]) == str(ref.first[0]) and judged.runs == ref.runs


def test_a_lane_that_answers_every_token_keeps_its_flag_within_bounds():
    judged, ref = _both((_cube, _vector), args=dict(n=20, acked=True), platform="a5", protocol="spec")
    assert judged.determinate and judged.runs == 1
    assert ref.ok and ref.runs == 21


def _window_cube(n, ahead):
    """Tokens to AIV1, at most ``ahead`` of its answers."""
    for i in range(n):
        if i >= ahead:
            wait_intra_block(SyncPipe.PIPE_S, 16)
        set_intra_block(SyncPipe.PIPE_S, 16)                # <- window
    for _ in range(min(n, ahead)):
        wait_intra_block(SyncPipe.PIPE_S, 16)


def _answer(n, ahead):
    for _ in range(n):
        wait_intra_block(SyncPipe.PIPE_S, 0)
        set_intra_block(SyncPipe.PIPE_S, 0)


@pytest.mark.parametrize("ahead", [14, 15, 16])
def test_a_window_of_15_tokens_fits_the_counter_in_every_order(ahead):
    """The 16th token waits for the 1st answer: the counter holds 15 in every order (the
    bound is exact: one more and the default schedule itself overflows)."""
    judged, ref = _both((_window_cube, (None, _answer)), args=dict(n=40, ahead=ahead), platform="a5",
                        protocol="spec")
    assert judged.determinate is ref.ok is (ahead <= 15)
    if ahead > 15:
        for res in (judged, ref):
            assert res.runs == 1 and type(res.first[1]) is ProtocolError
            assert _unplaced(res.first[1].where, line_of(_window_cube, "<- window")) == "HERE"


def test_a_ring_deeper_than_its_counter_is_explored_and_the_overflow_found():
    """M10: SlotNum 16 on A5 pto-isa's 15-count ready flag - clean under the default schedule."""
    sc = _scenario("misuse/m10_schedule_dependent.py")
    judged, ref = _both(sc, platform="a5", protocol="pto-isa")
    assert judged.why_explored.startswith("flag 0 (AIC->AIV1) may hold more than its 15 pending SETs")
    assert "its SET number 16" in judged.why_explored
    assert (str(judged.first[0]), judged.first[1].where) == (str(ref.first[0]), ref.first[1].where)
    assert type(judged.first[1]) is ProtocolError


@pytest.mark.parametrize("variant,determinate", [("depth14", True), ("default", False)])
def test_a_ring_that_fits_the_counter_is_judged_and_one_that_does_not_is_explored(variant, determinate):
    """M32 (a starved lane of a split ring): depth 14 fits the 15-count flag in every order."""
    sc = _scenario("misuse/m32_lane_starvation.py")
    judged = explore(sc, schedules=30, variant=variant, platform="a5", protocol="pto-isa", engine="periodic")
    assert judged.determinate is determinate
    assert judged.ok is determinate


# -- memory this run took in one order ----------------------------------------------------------


def _lanes_add(x, out):
    t = Tile(TileType.Vec, float32, R, C, addr=0x0)
    TLOAD(t, GlobalTensor(x.data() + get_subblockid() * R * C, (R, C)))
    TSTORE(GlobalTensor(out.data(), (R, C)), t, atomic_type=AtomicType.AtomicAdd)   # <- add


def _why_not(aiv, args, **kw) -> str | None:
    return ptopipe.run(None, aiv, args, causal=True, determinacy=True, **kw).cluster.determinacy.why_not


def test_unordered_atomic_adds_are_not_shown_to_commute_in_floating_point():
    x = np.arange(2 * R * C, dtype=np.float32).reshape(2 * R, C) / 3
    why = _why_not(_lanes_add, dict(x=x, out=np.zeros((R, C), np.float32)))
    assert _unplaced(why, line_of(_lanes_add, "<- add")) == (
        "AIV1 and AIV0 atomic-add into the same bytes with no order between them (at HERE): this run took "
        "one order of the two")


@pytest.mark.parametrize("shift", [0, 1])
def test_unordered_stores_of_identical_bytes_are_explored_warned_or_not(shift):
    """Shift 0 is the warned pair (the same store, the same iteration); shift 1 the silent
    one (overlapping windows of two iterations)."""
    why = _why_not(_isa_vector(shift), _isa_args()[1])
    assert why is not None and why.startswith("AIV1 and AIV0 store identical data into the same bytes with no "
                                              "order between them (at "), why


def test_tile_bytes_read_from_python_inside_a_kernel_are_unseen():
    def vector(x, out):
        t = Tile(TileType.Vec, float32, R, C, addr=0)
        TLOAD(t, GlobalTensor(x.data() + get_subblockid() * R * C, (R, C)))
        t.array[0, 0] += 1                                                    # <- python
        TSTORE(GlobalTensor(out.data() + get_subblockid() * R * C, (R, C)), t)
    x = np.zeros((2 * R, C), np.float32)
    why = _why_not(vector, dict(x=x, out=np.zeros_like(x)))
    assert _unplaced(why, line_of(vector, "<- python")) == (
        "a kernel reads or writes tile bytes from Python (Tile.array) (AIV0, at HERE): the race checker "
        "does not see it")


VEC = ("!pto.tile_buf<loc=vec, dtype=f32, rows=1, cols=16, v_row=1, v_col=16, blayout=row_major, "
       "slayout=none_box, fractal=512, pad=0>")


def _vector_pto(body: str) -> str:
    return f"""module {{
  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c3 = arith.constant 3 : index
{body}    return
  }}
}}
"""


def _judged_pto(text: str):
    x = np.arange(16, dtype=np.float32)
    return run_pto(text=text, inputs=dict(x=x, y=np.zeros_like(x)), causal=True, determinacy=True)


def test_the_scalar_units_gm_accesses_are_unseen():
    text = _vector_pto(f"""    %g = pto.load_scalar %x[%c3] : !pto.ptr<f32> -> f32
    pto.store_scalar %g, %y[%c3] : !pto.ptr<f32>, f32
    %t = pto.alloc_tile : {VEC}
""")
    res = _judged_pto(text)
    assert res.outputs["y"][3] == 3
    line = 1 + next(i for i, ln in enumerate(text.splitlines()) if "load_scalar" in ln)
    why = res.result.cluster.determinacy.why_not
    assert why.startswith("a scalar GM load (pto.load_scalar) (AIV0, at ") and f":{line}:" in why, why
    assert why.endswith("the race checker does not see it")


def test_a_tile_element_an_instruction_reads_is_seen():
    """pto.tgetval / pto.tsetval read and write the core's own tile: instructions, not a
    kernel's Python."""
    text = _vector_pto(f"""    %t = pto.alloc_tile : {VEC}
    pto.tsetval ins(%c0, %f : index, f32) outs(%t : {VEC})
    %v = pto.tgetval ins(%t, %c0 : {VEC}, index) outs : f32
""".replace("    pto.tsetval", "    %f = arith.constant 2.0 : f32\n    pto.tsetval"))
    assert _judged_pto(text).result.cluster.determinacy.why_not is None


@pytest.mark.parametrize("kw,why", [
    (dict(checks=False), "the checkers are off: nothing orders the cores' accesses"),
    (dict(causal=False), "the race checker orders accesses by their completion times (causal=False), not causally"),
    (dict(timing=False), "without the timing model (timing=False) the race checker has no pipe order to judge by"),
    (dict(until_cycle=10 ** 9), "until_cycle bounds the run's cycles, which other schedules' latencies move"),
    (dict(launches=2), "several launches or blocks: the judgement covers one cluster's one launch"),
    (dict(), None),
])
def test_runs_configured_outside_the_argument_are_not_judged(kw, why):
    sc = _scenario("scenarios/s1_cv_split.py")
    args, _ = sc.prepare("default", 0)
    res = ptopipe.run(sc.aic, sc.aiv, args, determinacy=True, **{"causal": True, **kw})
    assert res.cluster.determinacy.why_not == why


def test_the_judged_run_is_the_exact_one():
    """The periodic engine records nothing of a judged run (its recorded blocks pass no hook)."""
    sc = _scenario("scenarios/s7_long_stream.py")
    args, _ = sc.prepare("default", 0)
    res = ptopipe.run(sc.aic, sc.aiv, args, causal=True, determinacy=True, engine="periodic")
    assert res.fast_forward is None and res.cluster.determinacy.why_not is None


# -- the command ----------------------------------------------------------------------------------
def test_check_says_no_schedule_was_needed_and_why_others_were(capsys):
    s7 = os.path.join(EX, "scenarios", "s7_long_stream.py")
    assert cli_main(["check", s7, "--schedules", "200", "--run-engine", "periodic"]) == 0
    out = capsys.readouterr().out
    assert ("default schedule + 0 explored schedules: none needed, every schedule gives this result (no "
            "race under happens-before, no flag past its counter in any order: docs/schedules.md), no "
            "checker report") in out
    m1 = os.path.join(EX, "misuse", "m1_no_tfree.py")
    assert cli_main(["check", m1, "--protocol", "pto-isa", "--schedules", "3", "--run-engine", "periodic"]) == 0
    out = capsys.readouterr().out
    assert "default schedule + 3 explored schedules (mix, " in out and "; explored as the run warned)" in out


def test_check_without_the_periodic_engine_explores_every_schedule(capsys, monkeypatch):
    monkeypatch.delenv("PTOPIPE_ENGINE", raising=False)
    s1 = os.path.join(EX, "scenarios", "s1_cv_split.py")
    assert cli_main(["check", s1, "--schedules", "5", "--json"]) == 0
    (row,) = __import__("json").loads(capsys.readouterr().out)
    assert (row["runs"], row["determinate"], row["why_explored"]) == (6, False, None)


# -- where the judgement holds, every schedule passes -----------------------------------------
FUZZ = settings(max_examples=25, deadline=None, database=None, derandomize=True,
                suppress_health_check=list(HealthCheck))


@FUZZ
@given(spec=fk.kernel_specs())
def test_random_kernels_judged_determinate_pass_every_explored_schedule(tmp_path_factory, spec):
    mod = fk.load(fk.write_kernel(spec, str(tmp_path_factory.mktemp("k"))))
    kw = dict(args=mod.make_args(np.random.default_rng(spec.data_seed)), platform=spec.platform,
              protocol=spec.protocol, max_instructions=fk.MAX_INSTRUCTIONS)
    judged = explore((mod.cube, mod.vector), schedules=8, engine="periodic", **kw)
    if judged.determinate:
        ref = explore((mod.cube, mod.vector), schedules=8, engine="exact", **kw)
        assert ref.ok, (spec, ref.first)
    elif not judged.ok and judged.first[0] is None:      # the default schedule failed: as the reference's
        ref = explore((mod.cube, mod.vector), schedules=0, engine="exact", **kw)
        assert type(ref.first[1]) is type(judged.first[1]) and ref.first[1].where == judged.first[1].where
