"""Parity of a DSL misuse kernel and its pto-isa C++: every misuse of examples/misuse/ that the
``pl`` DSL can express (tests/cpp/dsl_misuse.py) gives, when its C++ (``ptopipe compile --emit
cpp``) runs, the error the DSL kernel's own run gives - the same class, at the C++ line the
writer wrote from the DSL line the run names (the ``// dsl: FILE:LINE:COL`` comment the writer
ends each statement with; the C++ error names both).  A kernel the compiler's static proof
(verify-pipes) refuses is refused with a CompileError at the line the run names (M17, M28:
at the line of the cause, where the run reports the symptom - REFUSED_AT), and its C++
written without that proof (``--no-verify``) runs into the run's error.  By default every kernel's DSL run and
compile are checked on one platform / protocol and the C++ of a few runs (DEFAULT_RUN, the
suite's CPU budget); PTOPIPE_CPP_FULL=1 runs the C++ of every kernel on every platform and
protocol (where the DSL run is clean there, the C++ run is clean too).

The misuse examples the DSL cannot express, and why (the DSL leaves flag ids, addresses,
lanes and pipe objects to the compiler):
"""
from __future__ import annotations

import inspect
import linecache
import os
import re

import numpy as np
import pytest

import ptopipe
from ptopipe.arch.catalogue import OPS
from ptopipe.cli import main as cli_main
from ptopipe.driver.loader import load_module
from ptopipe.codegen import write_cpp
from ptopipe.codegen.cpp_origin import origin_of
from ptopipe.cpp import run_cpp
from ptopipe.errors import (CompileError, ConfigError, DataRaceError, DeadlockError, LeakError, ProtocolError,
                            PtoPipeError)
from ptopipe.passes import compile_program, unverified_pipeline
from ptopipe.runtime import KernelSet

import dsl_misuse as D
from cpp_support import cpp_cache, needs_cxx, pto_inst_precompiled  # noqa: F401 (fixtures)
from layers import ROOT

pytestmark = pytest.mark.usefixtures("pto_inst_precompiled")    # its kernels include <pto/pto-inst.hpp> first

NOT_EXPRESSIBLE = {
    "m1_no_tfree": "InsertTfree (seed 003) inserts the TFREE the kernel lacks: the compiled kernel, and "
                   "so its C++, frees every slot (the uncompiled pair's own run reports the missing TFREE)",
    "m2_flag_mismatch": "flag ids are AllocateFlags': a DSL pipe has no FlagID to get wrong",
    "m4_shared_flag": "flag ids are AllocateFlags', and a DSL kernel initialises one pipe",
    "m5_ring_overlap": "tile addresses are AllocateMemoryAddr's, which keeps tiles out of the rings",
    "m10_schedule_dependent": "two pipes of their own depths in one kernel (a 16-deep C2V ring, an 8-deep "
                              "V2C control ring): a DSL kernel initialises one pipe, whose two ways share "
                              "SlotNum",
    "m14_pingpong_tail": "which of two buffers a load fills is AllocateMemoryAddr's: the DSL has no "
                         "buffer index for the tail to reuse",
    "m16_teardown_hang": "setFreeStatus is not in the DSL",
    "m18_drain_leak": "setAllocateStatus is not in the DSL, and it needs a second (acknowledgement) pipe",
    "m19_tpipe_ctrl_pto_isa": "DIR_V2C_CTRL is not a DSL direction (control words have no DSL op)",
    "m23_lane1_not_dispatched": "a DSL program's Vector kernel runs on both lanes (its C++ entry "
                                "dispatches both); lanes=1 is the DSL's one-lane pipe",
    "m24_v2c_lane1_returns": "the DSL refuses both forms of a lane that leaves the pipe alone: a return "
                             "that is not its block's last op, and a pipe initialised inside an if",
    "m26_rings_overlap_across_cores": "GM ring placement and flag ids are the compiler's, and a DSL "
                                      "kernel initialises one pipe",
    "m27_staged_read_after_free": "the same DSL kernel as M3 (a popped tile read after its TFREE): dsl m3",
    "m32_lane_starvation": "two pipes of their own depths and slot sizes in one kernel (the 16-deep data "
                           "ring, AIV0's 2-deep token ring): a DSL kernel initialises one pipe",
}
#: misuse examples the DSL refuses as the program is made, where they are written
REFUSED_BY_THE_DSL = {"m15_rebind_in_loop": "a pipe initialised inside a loop: a CompileError at that line "
                                            "(test_a_pipe_initialised_in_a_loop_is_refused_at_its_line)"}
__doc__ += "".join(f"\n* {k}: {v}" for k, v in sorted(NOT_EXPRESSIBLE.items()))
__doc__ += "\n\nRefused by the DSL itself:" + "".join(f"\n* {k}: {v}" for k, v in REFUSED_BY_THE_DSL.items())

#: DSL kernel -> (its builder, the function its "<- where" is in (or (function, marker)), the
#: run's error class, its default platform / protocol, run options)
CASES = {
    "m3": (D.m3_use_after_free, None, ProtocolError, ("a5", "spec"), {}),
    "m6": (D.m6_tile_too_large, None, ProtocolError, ("a2a3", "pto-isa"), {}),
    "m7": (D.m7_leak, D._c2v_cube, LeakError, ("a2a3", "spec"), {}),
    "m8": (D.m8_pto_isa_slotnum5, D._c2v_cube, ProtocolError, ("a5", "pto-isa"), {}),
    "m17": (D.m17_relaunch_unpopped, D._consumer, ProtocolError, ("a2a3", "pto-isa"), {"launches": 2}),
    "m9": (D.m9_gm_race, None, DataRaceError, ("a2a3", "spec"), {}),
    "m11": (D.m11_missing_wait, None, DataRaceError, ("a5", "pto-isa"), {"sync": "manual"}),
    "m12": (D.m12_misprimed_event, None, DeadlockError, ("a2a3", "spec"), {"sync": "manual"}),
    "m13": (D.m13_event_leak, None, LeakError, ("a5", "spec"), {"sync": "manual"}),
    "m20": (D.m20_both_gm_pto_isa, (D._c2v_cube, "# <- binding"), ConfigError, ("a5", "pto-isa"), {}),
    "m21": (D.m21_a5_tfree_after_gm_pop, D._c2v_cube, ProtocolError, ("a5", "pto-isa"), {}),
    "m22": (D.m22_layout_nd_into_nz, None, ProtocolError, ("a5", "spec"), {}),
    "m25": (D.m25_free_split, None, ProtocolError, ("a2a3", "pto-isa"), {}),
    "m28": (D.m28_sync_period_credit, None, DeadlockError, ("a5", "pto-isa"), {}),
    "m29": (D.m29_prefetch_before_wait, None, DataRaceError, ("a5", "spec"), {}),
    "m30": (D.m30_commit_before_store, None, ProtocolError, ("a2a3", "spec"), {}),
    "m31": (D.m31_lane_init_overwrite, None, DataRaceError, ("a5", "pto-isa"), {}),
}
#: the kernels verify-pipes refuses on their default platform / protocol
REFUSED = ("m3", "m6", "m7", "m17", "m22", "m25", "m28", "m30")
#: where the refusal names the cause and the run its symptom, the refusal's line (function,
#: marker): M17's push that is never popped (the run: launch 2's pop of launch 1's leftover),
#: M28's third held GM slot (more than LocalSlotNum 2; the run: the push that waits for the
#: withheld credit)
REFUSED_AT = {"m17": (D._c2v_cube, "# <- where"), "m28": (D.m28_sync_period_credit, "# <- compile")}
#: where the C++ written without verify-pipes is not the kernel the DSL run ran, so only the
#: refusal is compared: the pto-isa A5 no-split pipe gets one lane from lower-platform (what
#: the refusal asks for), which leaves the layout misuse, not the lane one the run reports
UNVERIFIED_DIFFERS = {("m22", "a5", "pto-isa")}
COMBOS = [(p, q) for p in ("a2a3", "a5") for q in ("spec", "pto-isa")]
#: kernels with C++ on some combinations only: M28's one-lane pipe is an A5 TPipe
#: (test_a_one_lane_pipe_has_cpp_only_where_a_no_split_pipe_has_one_lane)
ONLY_ON = {"m28": [("a5", "spec"), ("a5", "pto-isa")]}
FULL = os.environ.get("PTOPIPE_CPP_FULL") == "1"
#: the kernels whose C++ runs by default (a C++ build each, the suite's CPU budget): a race, an event
#: hang, a protocol error in a kernel verify-pipes refuses; every one with PTOPIPE_CPP_FULL=1
DEFAULT_RUN = ("m9", "m12", "m25")
RUNS = [(k, p, q) for k in CASES for p, q in (ONLY_ON.get(k, COMBOS) if FULL else [CASES[k][3]])
        if FULL or k in DEFAULT_RUN]


def where_line(name: str) -> int:
    """The line the DSL run's error of kernel ``name`` names."""
    build, where = CASES[name][:2]
    return marked_line(*where) if isinstance(where, tuple) else marked_line(where or build)


def marked_line(fn, tag: str = "# <- where") -> int:
    """The one line of ``fn``'s source marked ``tag``."""
    src, first = inspect.getsourcelines(fn)
    hits = [first + i for i, ln in enumerate(src) if tag in ln]
    assert len(hits) == 1, (fn.__name__, tag, hits)
    return hits[0]


def line_of(where: str) -> int:
    """The line of a DSL location FILE:LINE:COL."""
    return int(where.rsplit(":", 2)[1])


def py_run(program, platform, protocol, opts):
    """The DSL kernel's own run: its error, or None when it runs clean."""
    ks = KernelSet(program)
    try:
        ptopipe.run(ks.aic, ks.aiv, D.args(), platform=platform, protocol=protocol, **opts)
    except PtoPipeError as e:
        return e
    return None


def written_cpp(program, platform, protocol, tmp_path, name):
    """(the C++ file of ``program``, the static proof's CompileError or None): written with the
    default pipeline, or - when verify-pipes refuses it - without that proof."""
    refused = None
    try:
        op = compile_program(program, platform, protocol=protocol)
    except CompileError as e:
        refused = e
        op = compile_program(program, platform, unverified_pipeline(), protocol=protocol)
    path = tmp_path / f"{name}_{platform}_{protocol}.cpp"
    path.write_text(write_cpp(op, platform, protocol))
    return str(path), refused


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_dsl_run_reports_the_misuse_at_its_line_and_the_compiler_agrees(name):
    """No C++ build: the DSL run's class and line, and the static proof refuses it at that line
    (M30: the store after the commit) or passes it, as the C++ run then needs."""
    build, _where, cls, (platform, protocol), opts = CASES[name]
    program = build()
    err = py_run(program, platform, protocol, opts)
    assert type(err) is cls, f"{type(err).__name__}: {err}"
    assert line_of(err.where) == where_line(name), str(err)
    try:
        compile_program(program, platform, protocol=protocol)
    except CompileError as e:
        assert line_of(e.where) == (marked_line(*REFUSED_AT[name]) if name in REFUSED_AT else where_line(name)), str(e)
        assert name in REFUSED, str(e)
    else:
        assert name not in REFUSED


def test_a_pipe_initialised_in_a_loop_is_refused_at_its_line():
    """M15: the DSL refuses it as the program is made - before any run or C++."""
    with pytest.raises(CompileError) as ei:
        D.m15_rebind_in_loop()
    assert line_of(ei.value.where) == marked_line(D.m15_rebind_in_loop), str(ei.value)
    assert "inside a loop" in ei.value.what


@needs_cxx
@pytest.mark.parametrize("name,platform,protocol", RUNS, ids=[f"{k}-{p}-{q}" for k, p, q in RUNS])
def test_the_cpp_run_gives_the_dsl_runs_error_at_the_corresponding_line(cpp_cache, tmp_path, name, platform,
                                                                        protocol):
    build, _where, _cls, _combo, opts = CASES[name]
    program = build()
    py = py_run(program, platform, protocol, opts)
    path, refused = written_cpp(program, platform, protocol, tmp_path, name)
    if refused is not None:
        assert py is not None, f"the DSL run is clean, the compiler refuses it:\n{refused}"
        if name not in REFUSED_AT:
            assert line_of(refused.where) == line_of(py.where), (str(refused), str(py))
        if (name, platform, protocol) in UNVERIFIED_DIFFERS:
            return
    try:
        run_cpp(path, D.args(), platform=platform, protocol=protocol, **opts)
    except PtoPipeError as e:
        cpp = e
    else:
        cpp = None
    if py is None:
        assert cpp is None, f"the DSL run is clean, the C++ run is not:\n{cpp}"
        return
    assert cpp is not None, f"the C++ run is clean, the DSL run is not:\n{py}"
    assert type(cpp) is type(py), f"DSL: {type(py).__name__}: {py}\nC++: {type(cpp).__name__}: {cpp}"
    cpp_file, _, cpp_line = cpp.where.rpartition(":")
    assert os.path.samefile(cpp_file, path), cpp.where
    assert origin_of(path, int(cpp_line)) == py.where, (cpp.where, py.where)
    assert cpp.dsl_where == py.where and f"written from the DSL line {py.where}" in str(cpp), str(cpp)


#: the C++ calls that are not the catalogue's instructions, by the ``pl`` op they are written from
DSL_SPELLING = {"TPUSH": "TPUSH", "TPOP": "TPOP", "TFREE": "TFREE", "TALLOC": "TALLOC",
                "set_flag": "record_event", "wait_flag": "wait_event", "pipe_barrier": "barrier"}
_CALL = re.compile(r"^\s*([A-Za-z_]\w*)\s*[<(]")


def _dsl_call(cpp_name: str) -> str | None:
    d = OPS.get(cpp_name)
    return DSL_SPELLING.get(cpp_name) or (d.dsl if d is not None else None)


@pytest.mark.parametrize("name,platform", [("m11", "a2a3"), ("m30", "a5"), ("m31", "a2a3"), ("s1", "a5")])
def test_each_written_statement_names_the_dsl_line_of_its_op(tmp_path, name, platform):
    """The DSL line on each instruction, loop and branch of the written C++ is the line of the
    ``pl`` call (``pl.range``, ``if``) it was written from; nothing else of the C++ names one."""
    if name == "s1":
        m = load_module(os.path.join(ROOT, "examples", "dsl", "s1_cv_split.py"))
        program = m.KERNELS.source(**m.SCENARIO.args(m.SCENARIO.default_variant))
    else:
        program = CASES[name][0]()
    path, _ = written_cpp(program, platform, "pto-isa", tmp_path, name)
    checked = 0
    with open(path) as f:
        for n, text in enumerate(f, 1):
            where = origin_of(path, n)
            stmt = text.split("//")[0].strip()
            call = _CALL.match(stmt)
            dsl = None
            if call and call.group(1) in ("for", "if"):
                dsl = "pl.range(" if call.group(1) == "for" else "if "
            elif call and _dsl_call(call.group(1)):
                dsl = f"pl.{_dsl_call(call.group(1))}("
            if stmt in ("", "{", "}") or stmt.startswith("} else"):
                assert where is None, (n, text)           # comments and braces name none
                continue
            if dsl is None:                               # declarations written for an op
                if where is not None:
                    file, line, _col = where.rsplit(":", 2)
                    code = linecache.getline(file, int(line)).strip()
                    assert code and not code.startswith("#"), (n, text, where)
                continue
            assert where is not None, f"line {n} names no DSL line: {text}"
            file, line, _col = where.rsplit(":", 2)
            assert dsl in linecache.getline(file, int(line)), (n, text, where)
            checked += 1
    assert checked >= 10


@needs_cxx
def test_cli_check_of_the_written_cpp_names_the_dsl_line(cpp_cache, tmp_path, capfd):
    """``ptopipe check kernel.cpp`` explores in a child process and prints the error there: it
    names the DSL line as well (M9's race, at the Vector's load)."""
    path, _ = written_cpp(D.m9_gm_race(), "a2a3", "spec", tmp_path, "m9")
    argv = []
    for k in ("x", "out"):
        np.save(tmp_path / f"{k}.npy", D.args()[k])
        argv += ["--input", f"{k}={tmp_path / f'{k}.npy'}"]
    assert cli_main(["check", path, *argv, "--schedules", "1"]) == 1
    err = capfd.readouterr().err                # printed by the child process
    assert "DataRaceError" in err
    assert re.search(rf"written from the DSL line \S*dsl_misuse.py:{marked_line(D.m9_gm_race)}:\d+", err), err
    # the race's other access: the Cube's TSTORE, on its own C++ line and DSL line
    store = marked_line(D.m9_gm_race, "# <- other")
    assert re.search(rf"the other C\+\+ lines named, written from: \S+m9_a2a3_spec.cpp:\d+ <- "
                     rf"\S*dsl_misuse.py:{store}:\d+$", err, re.M), err


@pytest.mark.parametrize("platform,protocol", [("a2a3", "pto-isa"), ("a2a3", "spec"), ("a5", "spec"), ("a5", "pto-isa")])
def test_a_one_lane_pipe_has_cpp_only_where_a_no_split_pipe_has_one_lane(platform, protocol):
    """A ``lanes=1`` pipe (AIV0 its only peer) is a TPipe of one lane only for TILE_NO_SPLIT on
    A5 (spec and pto-isa); on A2A3 its C++ run would wait for AIV1, which runs nothing: the
    writer refuses it at the init (the DSL run, which binds the pipe with one lane, runs it)."""
    op = compile_program(D.m28_sync_period_credit(), platform, unverified_pipeline(), protocol=protocol)
    if platform == "a5":
        assert "lanes = 1" in write_cpp(op, platform, protocol)
        return
    with pytest.raises(CompileError) as ei:
        write_cpp(op, platform, protocol)
    assert line_of(ei.value.where) == marked_line(D.m28_sync_period_credit, "# <- lanes"), str(ei.value)
    assert "lanes=1 has no pto-isa C++ form" in ei.value.what and "drop lanes=1" in ei.value.fix


def test_every_misuse_example_is_a_dsl_kernel_here_or_listed_with_its_reason():
    examples = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "examples", "misuse")) if re.match(r"m\d+_", f))
    assert len(examples) >= 32
    for ex in examples:
        homes = [ex.split("_")[0] in CASES, ex in NOT_EXPRESSIBLE, ex in REFUSED_BY_THE_DSL]
        assert homes.count(True) == 1, (ex, homes)
    assert set(NOT_EXPRESSIBLE) | set(REFUSED_BY_THE_DSL) <= set(examples)
