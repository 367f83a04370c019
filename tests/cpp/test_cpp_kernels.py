"""Hand-written pto-isa C++ kernels (tests/cpp/cpp_kernels/, in the style of pto-isa's CPU-simulator
tpushpop tests) run on ptopipe's cluster through ptopipe's headers: a correct one matches numpy
on both platforms and protocols; broken ones are reported with the right error class at the
exact C++ line; a compile error carries the compiler's diagnostics at the user's line; a
crashing kernel is a KernelError naming the signal, and the calling process goes on."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from ptopipe import isa
from ptopipe.cpp import include_dir, run_cpp
from ptopipe.cpp import headergen
from ptopipe.errors import (BudgetError, CompileError, ConfigError, DataRaceError, DeadlockError, KernelError, LeakError,
                            MemoryConflictError, ProtocolError)

from cpp_support import cpp_cache, needs_cxx, pto_inst_precompiled  # noqa: F401 (fixtures)
from layers import ROOT

pytestmark = pytest.mark.usefixtures("pto_inst_precompiled")    # its kernels include <pto/pto-inst.hpp> first

HERE = os.path.dirname(os.path.abspath(__file__))
KDIR = os.path.join(HERE, "cpp_kernels")


def kernel(name: str) -> str:
    return os.path.join(KDIR, name)


def line_of(name: str, text: str, nth: int = 0) -> int:
    """The 1-based line of the ``nth`` line of kernel ``name`` containing ``text``."""
    with open(kernel(name)) as f:
        hits = [i for i, ln in enumerate(f, 1) if text in ln]
    return hits[nth]


def c2v_args(seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, (32, 32)).astype(np.float32)
    b = rng.integers(-3, 4, (32, 32)).astype(np.float32)
    bias = rng.integers(-8, 9, (32, 32)).astype(np.float32)
    return dict(a=a, b=b, bias=bias, out=np.zeros((32, 32), np.float32), fifo=isa.gm_buffer(4 * 2048 + 4096))


def test_the_generated_header_is_current():
    with open(headergen.HEADER) as f:
        assert f.read() == headergen.render(), "run: python -m ptopipe.cpp.headergen"


def test_every_catalogue_instruction_is_declared_once():
    """... and is also spelled as pto-isa's implementation entry point, which its CPU tests'
    kernels call (tconcat's ``TCONCAT_IMPL(dst, src0, src1)``: it was undeclared)."""
    from ptopipe.arch.catalogue import OPS
    text = headergen.render()
    for name in OPS:
        assert text.count(f"// {name} (ABI id ") == 1, name
        assert text.count(f"\n#define {name}_IMPL {name}\n") == 1, name
    assert "\n#define TPUSH_IMPL TPUSH\n" in text


def _rng():
    return np.random.default_rng(7)


def _ints(shape, dtype=np.float32, lo=-3, hi=4):
    return _rng().integers(lo, hi, shape).astype(dtype)


def _gm_slot_flow():
    a, b = _ints((64, 32), np.float16), _ints((32, 32), np.float16)
    p = a.astype(np.float32).reshape(2, 32, 32) @ b.astype(np.float32)
    want = np.concatenate([np.tile(p[i], (1, 2)) for i in range(2)]) + 1
    return dict(a=a, b=b, out=np.zeros((64, 64), np.float32), fifo=isa.gm_buffer(2 * 32 * 64 * 4)), {"out": want}


def _v2c():
    x, w = _ints((32, 32)), _ints((32, 32)) + 1
    return dict(x=x, w=w, out=np.zeros((32, 32), np.float32), fifo=isa.gm_buffer(2 * 4096)), {"out": (2 * x) @ w}


def _both():
    a, b = _ints((96, 32)), _ints((32, 32))
    return dict(a=a, b=b, out=np.zeros((96, 32), np.float32), fifo=isa.gm_buffer(4 * 2048)), {"out": a @ b + 1}


def _entry():
    x = _ints((16, 32))
    return (dict(x=x, eye=np.eye(32, dtype=np.float32), out=np.zeros((16, 32), np.float32),
                 fifo=isa.gm_buffer(2 * 2048)), {"out": 2 * x})


def _events():
    x = _rng().standard_normal((16, 32)).astype(np.float32)
    return dict(x=x, out0=np.zeros_like(x), out1=np.zeros_like(x)), {"out0": np.exp(x), "out1": np.exp(x) + x}


def _tmpipe():
    x = _ints((16, 16))
    return (dict(x=x, eye=np.eye(16, dtype=np.float32), out=np.zeros_like(x), fifo=np.zeros((4, 16, 16), np.float32),
                 tfree=0, one_lane=0), {"out": x + 1})


def _c2v():
    args = c2v_args()
    return args, {"out": args["a"] @ args["b"] + args["bias"]}


def _per_task():
    a, b = _ints((96, 32)), _ints((32, 32))
    return dict(a=a, b=b, out=np.zeros((96, 32), np.float32), fifo=isa.gm_buffer(2 * 2048)), {"out": a @ b + 1}


#: correct kernels: (file, inputs and numpy golden, run options)
CORRECT = [("c2v_add.cpp", _c2v, {}), ("c2v_left_right.cpp", _c2v, {}), ("gm_slot_flow.cpp", _gm_slot_flow, {"aic": "cube_kernel", "aiv": "vec_kernel"}),
           ("v2c_matmul.cpp", _v2c, {}), ("both_ways.cpp", _both, {}), ("entry_c2v.cpp", _entry, {}),
           ("events_vec.cpp", _events, {"aiv": "vec_kernel"}),
           ("events_vec.cpp", _events, {"aiv": "vec_kernel", "sync": "manual"}), ("tmpipe_c2v.cpp", _tmpipe, {}),
           ("pipe_per_task.cpp", _per_task, {})]       # (a TPipe destroyed and constructed again)


#: every correct kernel on every platform x protocol with PTOPIPE_CPP_FULL=1; by default each
#: on one of the two ends, A2A3 / spec and A5 / pto-isa, alternately (a C++ build per kernel and
#: platform: the suite's CPU budget)
_ENDS = [("a2a3", "spec"), ("a5", "pto-isa")]
CORRECT_RUNS = [pytest.param(name, make, opts, p, q, id=f"{name}{'-manual' if opts.get('sync') else ''}-{p}-{q}")
                for k, (name, make, opts) in enumerate(CORRECT)
                for p, q in ([(p, q) for p in ("a2a3", "a5") for q in ("spec", "pto-isa")]
                             if os.environ.get("PTOPIPE_CPP_FULL") == "1" else [_ENDS[k % 2]])]


@needs_cxx
@pytest.mark.parametrize("name,make,opts,platform,protocol", CORRECT_RUNS)
def test_a_correct_kernel_matches_numpy(cpp_cache, platform, protocol, name, make, opts):
    args, want = make()
    r = run_cpp(kernel(name), args, platform=platform, protocol=protocol, **opts)
    for k, v in want.items():
        np.testing.assert_allclose(r[k], v, rtol=1e-6, atol=1e-6, err_msg=k)
    assert r.summary.cycles > 0


@needs_cxx
def test_a_lane_writing_the_other_lanes_part_of_its_talloced_slot_is_refused_at_the_write(cpp_cache):
    """A split V2C TALLOC hands each Vector lane its part of the slot; a C++ pointer made from
    ``slot.data()`` keeps no bounds, so the checker judges the write by address: a TSTORE into
    the other lane's part is a MemoryConflictError at that TSTORE (as a Python view through the
    TALLOCed pointer gets) - also where the other lane leaves those bytes unwritten, which no
    race shows (the Cube would read this lane's rows as the other's)."""
    name = "gm_slot_flow.cpp"
    x = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)

    def run(reach):
        return run_cpp(kernel(name), dict(x=x, fifo=isa.gm_buffer(2 * 4096), reach=reach), aic="v2c_cube",
                       aiv="v2c_vec", platform="a2a3", protocol="pto-isa")
    ring = np.asarray(run(0)["fifo"]).view(np.float32)
    np.testing.assert_array_equal(ring[:32 * 32].reshape(32, 32), x)      # slot 0: both halves
    for reach, line, lane, own in ((1, "AIV0's part of the slot", "AIV0", "AIV1's TILE_UP_DOWN part"),
                                   (2, "past AIV0's half", "AIV1", "AIV0's TILE_UP_DOWN part")):
        with pytest.raises(MemoryConflictError) as ei:
            run(reach)
        e = ei.value
        assert e.where == f"{os.path.relpath(kernel(name))}:{line_of(name, line)}", (reach, e.where)
        assert e.what.startswith("access out of bounds: TSTORE through GlobalTensor") and f"outside {own}" in e.what
        assert f"- {lane}'s part, which {lane} fills itself" in e.what
        assert "keep the view within this lane's part" in e.fix


@needs_cxx
def test_the_same_run_twice_is_the_same(cpp_cache):
    r1 = run_cpp(kernel("c2v_add.cpp"), c2v_args(), platform="a5", protocol="pto-isa")
    r2 = run_cpp(kernel("c2v_add.cpp"), c2v_args(), platform="a5", protocol="pto-isa")
    assert r1.summary.cycles == r2.summary.cycles
    np.testing.assert_array_equal(r1["out"], r2["out"])


@needs_cxx
def test_a_timeout_longer_than_any_wait_is_no_bound(cpp_cache):
    """timeout=1e10 s is past what the wait for the child can take (select raised
    OverflowError, a raw error of the run): no bound, as math.inf is."""
    r = run_cpp(kernel("c2v_add.cpp"), c2v_args(), timeout=1e10)
    assert r.summary.cycles > 0


#: broken kernels: (file, inputs, error class, the file and the text of the line it is reported at)
BROKEN = [
    ("c2v_missing_tfree.cpp", c2v_args, LeakError, None, "TPOP<"),
    ("c2v_wrong_split.cpp", c2v_args, ProtocolError, None, "TPOP<"),
    ("c2v_event_leak.cpp", c2v_args, LeakError, None, "set_flag("),
    ("c2v_event_unset.cpp", c2v_args, DeadlockError, None, "wait_flag("),
    ("c2v_flag_collision.cpp", c2v_args, ConfigError, None, "TPipe<0, Direction::DIR_V2C"),
    ("c2v_use_after_free.cpp", c2v_args, ProtocolError, None, "reads the slot it just freed"),
    ("c2v_gm_out_of_bounds.cpp", c2v_args, MemoryConflictError, None, "TSTORE("),
    ("c2v_gm_race.cpp", c2v_args, DataRaceError, None, "TSTORE("),
    ("c2v_unaligned_tassign.cpp", c2v_args, KernelError, None, "TASSIGN(o,"),
    ("c2v_extra_pop.cpp", c2v_args, DeadlockError, None, "TPOP<"),
    ("c2v_ring_too_small.cpp", c2v_args, ConfigError, None, "Pipe8 pipe("),
    ("c2v_leftover.cpp", c2v_args, LeakError, "c2v_cube.hpp", "TPUSH<"),
    ("c2v_free_before_pop.cpp", c2v_args, ProtocolError, None, "frees a slot it does not hold"),
    ("c2v_matmul_on_vec.cpp", c2v_args, KernelError, None, "TMATMUL("),
    ("both_exhaust.cpp", lambda: _both()[0], DeadlockError, None, "TPUSH<Pipe, TileAcc"),
]


#: every broken kernel with PTOPIPE_CPP_FULL=1; by default every other one (the suite's CPU budget)
BROKEN_RUN = BROKEN if os.environ.get("PTOPIPE_CPP_FULL") == "1" else BROKEN[::2]


@needs_cxx
@pytest.mark.parametrize("name,make,cls,in_file,at", BROKEN_RUN, ids=[b[0] for b in BROKEN_RUN])
def test_a_broken_kernel_is_reported_at_its_cpp_line(cpp_cache, name, make, cls, in_file, at):
    # (the kernels order most of their pipes by the scoreboard: sync="auto", whatever events they set)
    with pytest.raises(cls) as ei:
        run_cpp(kernel(name), make(), platform="a2a3", protocol="spec", sync="auto")
    f = in_file or name
    assert ei.value.where == f"{os.path.relpath(kernel(f))}:{line_of(f, at)}", str(ei.value)


@needs_cxx
def test_a_deadlock_in_a_helper_names_the_kernel_line_that_called_it(cpp_cache):
    """A core blocked forever in a TPOP inside a helper: the deadlock is reported at the
    helper's TPOP and the kernel line that called it (the blocked call's native frames, read as
    the run unwinds the suspended kernel), as for any other error in a helper."""
    name = "c2v_extra_pop_helper.cpp"
    with pytest.raises(DeadlockError) as ei:
        run_cpp(kernel(name), c2v_args(), platform="a2a3", protocol="spec", sync="auto")
    at = os.path.relpath(kernel(name))
    assert ei.value.where == f"{at}:{line_of(name, 'TPOP<')} (called from {at}:{line_of(name, 'pop_half(pipe, part);')})"


@needs_cxx
def test_a_pipe_error_under_spec_says_when_pto_isas_protocol_runs_it_clean(tmp_path, cpp_cache, capsys):
    """A kernel without TFREE (pto-isa's a2a3 TPOP frees the GM slot: its own tests have none)
    leaks under the default spec protocol; the command says that it is clean under
    --protocol pto-isa, and says nothing when pto-isa was asked for or fails too."""
    from ptopipe.cli import main as cli_main
    ins = []
    for k, v in c2v_args().items():
        np.save(tmp_path / f"{k}.npy", v)
        ins += ["--input", f"{k}={tmp_path / k}.npy"]
    for name, hint in (("c2v_missing_tfree.cpp", True), ("c2v_extra_pop.cpp", False)):
        assert cli_main(["run", kernel(name)] + ins) == 1
        assert ("clean under --protocol pto-isa" in capsys.readouterr().err) is hint, name


@needs_cxx
def test_tmpipe_double_free_on_a5_pto_isa(cpp_cache):
    """pto-isa's A5 TPOP from a GM ring frees the slot itself: the kernel's TFREE is a second
    free, a credit left on the flag - reported at the C++ line that made the pipe."""
    with pytest.raises(LeakError) as ei:
        run_cpp(kernel("tmpipe_c2v.cpp"), dict(_tmpipe()[0], tfree=1), platform="a5", protocol="pto-isa")
    assert ei.value.where == f"{os.path.relpath(kernel('tmpipe_c2v.cpp'))}:{line_of('tmpipe_c2v.cpp', 'Pipe pipe(')}"
    assert "frees" in ei.value.what


@needs_cxx
def test_a_one_lane_tmpipe_hangs_the_cube_under_pto_isa(cpp_cache):
    """A TMPipe of VecCubeRatio::V1C1_VEC0 whose AIV1 returns: pto-isa's A5 Cube waits for
    FlagID + 1 and FlagID + 1 + 16 before every push whatever the ratio, so its TPUSH waits
    forever for AIV1's free - a DeadlockError at that C++ line naming flag 17 and AIV1; under
    spec (seed 001's 1 Cube : 1 Vector TMPipe) the same kernel runs.  (The A5 build of the
    double-free test: no build of its own.)"""
    args, want = _tmpipe()
    args["one_lane"] = 1
    r = run_cpp(kernel("tmpipe_c2v.cpp"), dict(args), platform="a5", protocol="spec")
    np.testing.assert_array_equal(r["out"], want["out"])
    with pytest.raises(DeadlockError) as ei:
        run_cpp(kernel("tmpipe_c2v.cpp"), dict(args), platform="a5", protocol="pto-isa")
    e = ei.value
    assert e.where == f"{os.path.relpath(kernel('tmpipe_c2v.cpp'))}:{line_of('tmpipe_c2v.cpp', 'one-lane push')}"
    assert "waits for AIV1's free signal" in e.what and "the Cube's flag id 17 (FlagIDPlusOne + 16" in e.what
    assert "AIV1 returned without constructing the pipe" in e.what
    assert "VecCubeRatio::V2C1_VECS" in e.fix and "TPipe<..., IsNoSplit = true>" in e.fix


@needs_cxx
def test_a_one_lane_pipe_built_on_aiv1_gets_a_cpp_fix(cpp_cache):
    """Under pto-isa on A5 a TPipe<..., IsNoSplit = true> has one lane, AIV0: AIV1 constructing
    it (pto-isa's own A5 no-split test does, at function scope) is a warning at that line saying
    what its constructor signals on the device - nothing in the fixed library; SyncPeriod stray
    free credits on AIV1's flag where the constructor posts credits (pto-isa@3186c381), which
    stay on that flag - and AIV1 using the pipe is a ConfigError at the use whose fix gives the
    C++ spelling (the get_subblockid() guard), not the DSL's or the ISA's."""
    name = "nosplit_both_lanes.cpp"
    ctor = f"{os.path.relpath(kernel(name))}:{line_of(name, 'Pipe pipe(')}"

    def run(use, protocol="pto-isa"):
        return run_cpp(kernel(name), dict(fifo=isa.gm_buffer(4096), use=use), aiv="vec_kernel", platform="a5",
                       protocol=protocol)
    warned = [(w, at) for w, at in run(0).summary.leaks if "constructs" in w]
    assert warned == [("AIV1 constructs DIR_C2V pipe FlagID 0 (peers AIV0), whose one Vector lane is AIV0: under "
                       "pto-isa AIV1's constructor and destructor signal nothing (a local no-split TPipe posts no "
                       "start-up credits); AIV1 must not use the pipe", ctor)]
    leaks = [w for w, _at in run(0, "pto-isa@3186c381").summary.leaks]
    assert any("its constructor posts 2 stray free credits on flag 1 (AIV1->AIC)" in w for w in leaks), leaks
    assert any(w.startswith("flag 1 (AIV1->AIC) left at count 2") for w in leaks), leaks
    with pytest.raises(ConfigError) as ei:
        run(1)
    assert ei.value.where == f"{os.path.relpath(kernel(name))}:{line_of(name, 'TFREE<')}"
    assert ei.value.what == f"TFREE on AIV1: AIV1 uses DIR_C2V pipe FlagID 0 (peers AIV0), constructed at {ctor}, " \
                            "whose peers are (0,)"
    fix = ei.value.fix
    assert "`if (get_subblockid() == 0) { ... }`" in fix and "IsNoSplit = true" in fix
    assert "@pl.aiv" not in fix and "peers=" not in fix


@needs_cxx
def test_pto_isas_one_lane_form_runs_under_both_protocols_on_a5_and_stalls_on_a2a3(cpp_cache):
    """A kernel in pto-isa's A5 one-lane form (TPipe<..., IsNoSplit = true>, only AIV0 builds
    and pops it) runs on A5 under spec as under pto-isa: a no-split pipe has one lane there
    whatever the protocol (docs/protocols.md).  On A2A3 an IsNoSplit pipe has both lanes, so the
    Cube's push waits for AIV1: the fix says the kernel is written for A5's one-lane pipe, not to
    write what it already does."""
    name = "nosplit_both_lanes.cpp"

    def run(platform, protocol):
        return run_cpp(kernel(name), dict(fifo=isa.gm_buffer(4096), tiles=1), aic="cube_one_lane",
                       aiv="vec_one_lane", platform=platform, protocol=protocol)
    for protocol in ("spec", "pto-isa"):
        assert [p["lanes"] for p in run("a5", protocol).summary.pipes] == [1]
    with pytest.raises(DeadlockError) as ei:
        run("a2a3", "spec")
    e = ei.value
    assert e.where == f"{os.path.relpath(kernel(name))}:{line_of(name, 'the push')}"
    assert "declares the pipe one-lane (IsNoSplit = true), but under spec on a2a3" in e.what
    assert e.fix.startswith("this kernel gives the pipe one lane as the device does on A5 only") and \
        "--platform a5" in e.fix
    assert "get_subblockid() == 0" not in e.fix


@needs_cxx
def test_a_core_blocked_in_cpp_at_a_deadlock_unwinds_within_its_kernels_frames(cpp_cache):
    """After a deadlock the run's teardown throws into each core blocked inside C++ - from
    elsewhere than the scheduler's switch, so above the core's greenlet stack lie that code's
    words, not the kernel's callers.  The failing call's walk of native return addresses (its
    "called from" lines) stops at the kernel's entry frame: every address it kept is in the
    kernel's own library.  An unbounded walk went on through ctypes and the greenlet into those
    words, and, depending on what earlier work had left there, died of SIGSEGV."""
    from ptopipe.cpp.callers import abort_frames, library_ranges
    from ptopipe.cpp.runner import in_child, load
    from ptopipe.isa.launch import run

    def work(_crash_fd):
        k = load(kernel("nosplit_both_lanes.cpp"), aic="cube_one_lane", aiv="vec_one_lane", platform="a2a3")
        with pytest.raises(DeadlockError):
            run(aic=k.aic, aiv=k.aiv, args=dict(fifo=isa.gm_buffer(4096), tiles=1), platform="a2a3", protocol="spec")
        return library_ranges(k.libs), {path: abort_frames(lib.ptopipe_abort_frames) for path, lib in k.libs.items()}
    ranges, frames = in_child(work)
    if not ranges:
        pytest.skip("no /proc/self/maps: where the libraries were loaded is not known")
    assert any(frames.values())                     # the Cube's TPUSH, unwound by the teardown
    for path, kept in frames.items():
        lo, hi = next((lo, hi) for lo, hi, p in ranges if p == path)
        assert all(lo <= a < hi for a in kept), (path, [hex(a) for a in kept], hex(lo), hex(hi))


@needs_cxx
def test_a_tile_left_in_the_ring_is_the_leak_of_one_launch_with_two(cpp_cache):
    """A launch leaving a tile in the ring (spec: its teardown would wait for that slot's free
    forever): the leak a single launch reports, at the C++ TPUSH, in launch 1 of 2."""
    with pytest.raises(LeakError) as ei:
        run_cpp(kernel("c2v_leftover.cpp"), c2v_args(), launches=2)
    assert ei.value.where == f"{os.path.relpath(kernel('c2v_cube.hpp'))}:{line_of('c2v_cube.hpp', 'TPUSH<')}"
    assert "was pushed but AIV0 never popped it" in ei.value.what and "(in launch 1 of 2)" in str(ei.value)


@needs_cxx
def test_an_error_in_the_shared_cube_half_names_the_header_line(cpp_cache):
    """The wrong split is found at the Vector's TPOP; the report names the Cube's TPUSH line."""
    with pytest.raises(ProtocolError) as ei:
        run_cpp(kernel("c2v_wrong_split.cpp"), c2v_args())
    assert f"c2v_cube.hpp:{line_of('c2v_cube.hpp', 'TPUSH<')}" in str(ei.value)


@needs_cxx
def test_a_compile_error_names_the_users_line(cpp_cache):
    with pytest.raises(CompileError) as ei:
        run_cpp(kernel("c2v_compile_error.cpp"), c2v_args())
    e = ei.value
    assert e.where.startswith(f"{os.path.relpath(kernel('c2v_compile_error.cpp'))}:"
                              f"{line_of('c2v_compile_error.cpp', 'TADD(')}:")
    assert "TADD takes 3 to 6 arguments" in e.what and e.details


@needs_cxx
def test_cxxflags_reach_the_compiler_last(cpp_cache, tmp_path, monkeypatch):
    """$CXXFLAGS goes to the compiler after ptopipe's own flags (a user's -O0 or -D wins)."""
    src = tmp_path / "flagged.cpp"
    src.write_text('#ifdef PTOPIPE_TEST_FLAG\n#error "CXXFLAGS reached the compiler"\n#endif\n'
                   + open(kernel("c2v_add.cpp")).read().replace('#include "', f'#include "{KDIR}/'))
    monkeypatch.setenv("CXXFLAGS", "-O0 -DPTOPIPE_TEST_FLAG")
    with pytest.raises(CompileError) as ei:
        run_cpp(str(src), c2v_args())
    assert "CXXFLAGS reached the compiler" in str(ei.value)


@needs_cxx
def test_a_crashing_kernel_is_a_kernel_error_and_the_process_survives(cpp_cache):
    name = "c2v_raw_pointer.cpp"
    with pytest.raises(KernelError) as ei:
        run_cpp(kernel(name), c2v_args())
    assert "SIGSEGV" in ei.value.what and "a write through a __gm__ pointer" in ei.value.what
    # the raw store's own line (the faulting code's, not the TSTORE's before it), and its fix
    assert ei.value.where == f"{os.path.relpath(kernel(name))}:{line_of(name, 'out[row * N] = 1.0f')}"
    assert "TSTORE" in ei.value.fix
    r = run_cpp(kernel("c2v_add.cpp"), c2v_args())           # and this process goes on
    assert r.summary.cycles > 0


@needs_cxx
def test_a_crash_reading_an_instructions_operand_names_the_instruction(cpp_cache):
    """A scalar read through a null __gm__ pointer is passed by reference and read in ptopipe's
    header as the call encodes it: the fault is the instruction's, at its line."""
    name = "c2v_null_scalar.cpp"
    with pytest.raises(KernelError) as ei:
        run_cpp(kernel(name), c2v_args())
    assert "SIGSEGV reading an operand of the instruction at this line" in ei.value.what, ei.value.what
    assert "address 0x0" in ei.value.what and "null pointer" in ei.value.fix
    assert ei.value.where == f"{os.path.relpath(kernel(name))}:{line_of(name, 'TMULS(o, part, scale[i])')}"


def test_a_crash_report_names_what_the_faulting_access_was():
    """The signal handler's report (ptopipe_entry.hpp: signal, last call site, pc, fault address,
    si_code, file) read by the runner: a read past a __gm__ pointer's argument, a tile address
    used as a pointer, and a crash with no report (no address is claimed)."""
    import signal
    from ptopipe.cpp.gmview import ARG_BITS, GM_BASE
    from ptopipe.cpp.runner import _crash_error
    status = signal.SIGSEGV      # (os.WTERMSIG of a raw status: the signal in the low bits)
    past = _crash_error(status, f"PTOPIPE-CRASH 11 7 0 {GM_BASE + (2 << ARG_BITS) + 0x9000} 1 k.cpp\n", False, 1,
                        "the C++ kernel k.cpp")
    assert "after the instruction at this line" in past.what and "GM[0x9000], outside" in past.what
    assert past.where == "k.cpp:7" and "pointer arithmetic" in past.fix
    tile = _crash_error(status, "PTOPIPE-CRASH 11 7 0 16384 1 k.cpp\n", False, 1, "the C++ kernel k.cpp")
    assert "address 0x4000" in tile.what and "data()" in tile.fix
    reading = _crash_error(status, "PTOPIPE-CRASH 11 -9 0 0 1 k.cpp\n", False, 1, "the C++ kernel k.cpp")
    assert reading.where == "k.cpp:9" and "reading an operand of the instruction at this line" in reading.what
    bare = _crash_error(status, "", False, 1, "the C++ kernel k.cpp")
    assert bare.what == "the C++ kernel k.cpp crashed with SIGSEGV before its first instruction"
    # a crash that is no memory access says what it was, not how __gm__ pointers work
    for sig, what, fix in ((signal.SIGFPE, "integer division or remainder by zero", "divisor"),
                           (signal.SIGILL, "a failed DEBUG_CHECK", "does not hold for this run"),
                           (signal.SIGTRAP, "a failed DEBUG_CHECK", "does not hold for this run"),
                           (signal.SIGABRT, "a failed assert(), a C++ exception nothing caught", "printed above")):
        e = _crash_error(status, f"PTOPIPE-CRASH {int(sig)} 7 0 0 0 k.cpp\n", False, 1, "the C++ kernel k.cpp")
        assert e.where == "k.cpp:7" and what in e.what and fix in e.fix, (sig, e)
        assert "__gm__" not in e.fix and "data()" not in e.fix, (sig, e.fix)


@needs_cxx
def test_an_aborting_kernel_names_sigabrt_and_its_last_instruction(cpp_cache):
    name = "c2v_abort.cpp"
    with pytest.raises(KernelError) as ei:
        run_cpp(kernel(name), c2v_args())
    assert "SIGABRT" in ei.value.what
    assert ei.value.where == f"{os.path.relpath(kernel(name))}:{line_of(name, 'TSTORE(')}"


def test_no_compiler_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("CXX", "no-such-compiler-ptopipe")
    with pytest.raises(ConfigError) as ei:
        run_cpp(kernel("c2v_add.cpp"), c2v_args())
    assert "no C++ compiler" in ei.value.what and "g++" in ei.value.fix


def test_unnamed_kernels_are_a_config_error_naming_the_functions(tmp_path):
    p = tmp_path / "k.cpp"
    p.write_text("#include <pto/pto-inst.hpp>\nvoid first() {}\nvoid second() {}\n")
    with pytest.raises(ConfigError) as ei:
        run_cpp(str(p), {})
    assert "--aic NAME --aiv NAME" in ei.value.fix and "first" in ei.value.fix


@needs_cxx
@pytest.mark.parametrize("platform,blayout", [("a2a3", "RowMajor"), ("a5", "ColMajor")])
def test_tile_left_has_pto_isas_layout_per_platform(tmp_path, platform, blayout):
    """TileLeft as pto-isa's pto_tile.hpp declares it: ZZ (BLayout::RowMajor) in an A2A3 build,
    NZ (BLayout::ColMajor) on A5 - arch.vocab.LEFT_LAYOUT."""
    from ptopipe.arch.vocab import LEFT_LAYOUT
    from ptopipe.cpp.build import arch_macro, find_compiler
    assert LEFT_LAYOUT[platform].blayout.name == blayout
    p = tmp_path / "left.cpp"
    p.write_text("#include <pto/pto-inst.hpp>\nusing namespace pto;\n"
                 f"static_assert(TileLeft<float, 16, 16>::BFractal == BLayout::{blayout} && "
                 "TileLeft<float, 16, 16>::SFractal == SLayout::RowMajor);\n")
    r = subprocess.run([find_compiler()[0], "-std=c++17", "-fsyntax-only", f"-D{arch_macro(platform)}",
                        "-I", include_dir(), str(p)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


MODE_CALLS = """#include <pto/pto-inst.hpp>
using namespace pto;
using V = Tile<TileType::Vec, float, 8, 32>;
using W = Tile<TileType::Vec, float, 8, 16>;
using G = GlobalTensor<float, Shape<1, 1, 1, 8, 32>, Stride<1, 1, 1, 32, 1>>;
void k(G &g, V &v, W &w, V &u, Event<Op::TADD, Op::TSTORE_VEC> &e) {
    TSTORE(g, v);                            // the templated form's call (pto-isa's lvalues)
    TSTORE(g, v, e);                         //   with a wait event
    TSTORE<V, G, AtomicType::AtomicNone>(g, v);
    TFILLPAD(v, u);                          // one tile type: the templated form
    TFILLPAD(v, w);                          // two: the plain call
    TPRINT(v);
}
"""


@pytest.mark.parametrize("cxx", ["g++", "clang++", "clang++-19"])
def test_calls_of_instructions_with_templated_forms_resolve_on_every_compiler(tmp_path, cxx):
    """An instruction pto-isa also spells with mode template arguments has plain calls beside its
    templated forms; a call both could take resolves to one of them on g++ and on clang."""
    import shutil
    from ptopipe.cpp.build import arch_macro
    if shutil.which(cxx) is None:
        pytest.skip(f"no {cxx}")
    p = tmp_path / "modes.cpp"
    p.write_text(MODE_CALLS)
    r = subprocess.run([cxx, "-std=c++17", "-fsyntax-only", f"-D{arch_macro('a2a3')}", "-I", include_dir(), str(p)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_the_include_directory_holds_the_headers(capsys):
    from ptopipe.cli import main as cli_main
    assert os.path.isfile(os.path.join(include_dir(), "pto", "pto-inst.hpp"))
    assert cli_main(["--include"]) == 0
    assert capsys.readouterr().out.strip() == include_dir()


def _cli(argv, cwd):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "ptopipe.cli", *argv], capture_output=True, text=True,
                          cwd=cwd, env=env)


def _cli_here(argv, cwd, capfd, monkeypatch):
    """:func:`_cli` run by ``ptopipe.cli.main`` in this process (the kernel still runs in a
    forked child, whose output ``capfd`` takes with this process's): a Python start-up less."""
    from ptopipe.cli import main as cli_main
    monkeypatch.chdir(cwd)
    code = cli_main([str(a) for a in argv])
    out = capfd.readouterr()
    return subprocess.CompletedProcess(argv, code, out.out, out.err)


def _save_inputs(tmp_path) -> list:
    argv = []
    for k, v in c2v_args().items():
        np.save(tmp_path / f"{k}.npy", v)
        argv += ["--input", f"{k}={tmp_path / f'{k}.npy'}"]
    return argv


@needs_cxx
def test_cli_run_of_a_cpp_file_writes_its_outputs(cpp_cache, tmp_path):
    argv = _save_inputs(tmp_path)
    r = _cli(["run", kernel("c2v_add.cpp"), *argv, "--output", f"out={tmp_path / 'res.npy'}",
              "--platform", "a5", "--protocol", "pto-isa", "--timeout", "60"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "PASS c2v_add.cpp on a5 (pto-isa)" in r.stdout
    a = c2v_args()
    np.testing.assert_array_equal(np.load(tmp_path / "res.npy"), a["a"] @ a["b"] + a["bias"])


SPIN = """#include <pto/pto-inst.hpp>
#include <unistd.h>
using namespace pto;
// a loop that calls no PTO instruction (it sleeps rather than spins: the bound is the same, and
// the suite's CPU is not spent)
extern "C" __global__ AICORE void vec_kernel(__gm__ float *x) { while (true) { usleep(1000); } }
extern "C" __global__ AICORE void cube_kernel(__gm__ float *x) {}
"""


BUSY = """#include <pto/pto-inst.hpp>
using namespace pto;
extern "C" __global__ AICORE void vec_kernel(__gm__ float *x)
{
    if (get_subblockid() != 0) return;
    volatile int64_t spin = 0;
    while (spin >= 0) { spin = spin + 1; if (spin > 1000000000) spin = 0; }
}
"""


@needs_cxx
@pytest.mark.parametrize("command", ["run", "check"])
def test_a_cpp_loop_without_instructions_is_stopped_at_the_commands_timeout(command, cpp_cache, tmp_path, capfd,
                                                                            monkeypatch):
    """The command's --timeout (a Deadline shared by its runs) bounds a C++ kernel the watchdog
    cannot interrupt: its child is killed a short grace later and the command says why."""
    from ptopipe.cpp.build import build, find_kernels
    from ptopipe.cpp.runner import bridge
    f = tmp_path / "spin.cpp"
    f.write_text(SPIN)
    build(find_kernels(str(f)))      # compiled here (kernel and bridge): the command's bound is the run's
    bridge()
    np.save(tmp_path / "x.npy", np.zeros(8, np.float32))
    argv = [command, f, "--input", f"x={tmp_path / 'x.npy'}", "--timeout", "0.3"]
    r = _cli_here(argv + (["--schedules", "0"] if command == "check" else []), tmp_path, capfd, monkeypatch)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "error: BudgetError: the C++ kernel spin.cpp did not finish within its wall-clock bound of 0.3 s" \
        in r.stderr, r.stderr
    # (it waits in usleep, outside the kernel's code: the kernel it was running is named)
    vec = next(i for i, ln in enumerate(SPIN.splitlines(), 1) if "vec_kernel" in ln)
    assert f"at spin.cpp:{vec}\n" in r.stderr and "look for a loop at the start of the kernel at this line" in r.stderr, \
        r.stderr


@needs_cxx
def test_a_cpp_loop_without_instructions_is_stopped_at_its_line(cpp_cache, tmp_path, monkeypatch):
    """The stop signal's handler reports the code it interrupted: the loop's own line, after
    the kernel's instructions so far."""
    from ptopipe.cpp import runner
    monkeypatch.setattr(runner, "GRACE", 0.1)       # the stop signal 0.1 s past the bound, not 1 s: less spin
    f = tmp_path / "busy.cpp"
    f.write_text(BUSY)
    with pytest.raises(BudgetError) as ei:
        run_cpp(str(f), dict(x=np.zeros(8, np.float32)), timeout=0.3)
    loop = next(i for i, ln in enumerate(BUSY.splitlines(), 1) if "while (spin" in ln)
    assert ei.value.where == f"{f}:{loop}" and "it was running this line" in ei.value.what, str(ei.value)


IDLE_AFTER = """#include <pto/pto-inst.hpp>
#include <unistd.h>
using namespace pto;
extern "C" __global__ AICORE void vec_kernel(__gm__ float *x)
{
    if (get_subblockid() != 0) return;
    while (true) { usleep(1000); }
}
extern "C" __global__ AICORE void cube_kernel(__gm__ float *x) {}
"""
IN_PROCESS = """import numpy as np, ptopipe
from ptopipe.cpp import kernels
aic, aiv = kernels({path!r})
ptopipe.run(aic, aiv, dict(x=np.zeros(8, np.float32)), timeout=0.3)
print("the run returned")
"""


@needs_cxx
def test_a_cpp_loop_without_instructions_in_this_process_ends_it_with_the_located_error(cpp_cache, tmp_path):
    """C++ kernels run in the caller's process (ptopipe.cpp.kernels: a Scenario's, ``ptopipe run
    file.py``) hold the GIL, so no Python watchdog can stop a loop of theirs that calls no
    instruction: the kernel library's own thread ends the process past the run's timeout, with
    the BudgetError at the call site of the kernel's last instruction (or its start)."""
    from ptopipe.cpp.build import build, find_kernels
    from ptopipe.cpp.runner import bridge
    source, at = IDLE_AFTER, "get_subblockid"
    f = tmp_path / "spin.cpp"
    f.write_text(source)
    build(find_kernels(str(f)))      # compiled here: the child's bound is the run's alone
    bridge()
    (tmp_path / "go.py").write_text(IN_PROCESS.format(path=str(f)))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "go.py"], capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=120)
    assert r.returncode == 1 and "the run returned" not in r.stdout and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("error: BudgetError: the C++ kernel spin.cpp did not finish within timeout=0.3 s"), \
        r.stderr
    line = next(i for i, ln in enumerate(source.splitlines(), 1) if at in ln)
    assert f"\n  at spin.cpp:{line}\n  fix: look for a loop" in r.stderr, r.stderr


@needs_cxx
def test_cli_check_of_a_cpp_file_explores_and_reports_at_the_cpp_line(cpp_cache, tmp_path, capfd, monkeypatch):
    argv = _save_inputs(tmp_path)
    ok = _cli_here(["check", kernel("c2v_add.cpp"), *argv, "--schedules", "3"], tmp_path, capfd, monkeypatch)
    assert ok.returncode == 0 and "3 explored schedules" in ok.stdout, ok.stdout + ok.stderr
    bad = _cli_here(["check", kernel("c2v_wrong_split.cpp"), *argv, "--schedules", "3", "--json"], tmp_path,
                    capfd, monkeypatch)
    assert bad.returncode == 1
    import json
    (rep,) = json.loads(bad.stdout)
    assert rep["failure"]["error"] == "ProtocolError"
    assert rep["failure"]["where"].endswith(f"c2v_wrong_split.cpp:{line_of('c2v_wrong_split.cpp', 'TPOP<')}")


@needs_cxx
def test_ptopipe_only_aliases_are_reported_where_the_kernel_uses_them(cpp_cache, tmp_path, capfd, monkeypatch):
    """TileVec / TileMat are ptopipe's, not pto-isa's: the compiler's deprecation warning, with
    pto-isa's spelling, is a warning of the run (built or from the build cache) and of check,
    at the kernel's line."""
    path = kernel("ptopipe_aliases.cpp")
    out = np.zeros((16, 16), np.float32)
    for _ in range(2):                  # the second run takes the library from the build cache
        r = run_cpp(path, dict(out=out), aiv="vec_kernel")
        np.testing.assert_array_equal(r["out"], 1.0)
        assert [(w.split(":")[0], loc.rsplit(":", 1)[0]) for w, loc in r.summary.leaks] == [   # (column: the compiler's)
            ("TileVec is deprecated", f"{os.path.relpath(path)}:{line_of('ptopipe_aliases.cpp', '// VEC')}"),
            ("TileMat is deprecated", f"{os.path.relpath(path)}:{line_of('ptopipe_aliases.cpp', '// MAT')}")]
        assert "write Tile<TileType::Vec, T, Rows, Cols>" in r.summary.leaks[0][0]
    np.save(tmp_path / "out.npy", out)
    ok = _cli_here(["check", path, "--aiv", "vec_kernel", "--input", f"out={tmp_path / 'out.npy'}",
                    "--schedules", "0"], tmp_path, capfd, monkeypatch)
    assert ok.returncode == 0 and "2 warning(s)" in ok.stdout, ok.stdout + ok.stderr
    assert "warning: TileMat is deprecated: ptopipe-only alias, pto-isa has no TileMat: write " \
           "Tile<TileType::Mat, T, Rows, Cols>" in ok.stdout


@needs_cxx
def test_cli_trace_of_a_cpp_file_writes_its_timeline(cpp_cache, tmp_path, capfd, monkeypatch):
    argv = _save_inputs(tmp_path)
    out = tmp_path / "t.json"
    r = _cli_here(["trace", kernel("c2v_add.cpp"), *argv, "-o", str(out)], tmp_path, capfd, monkeypatch)
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout and "cycles" in r.stdout
    import json
    events = json.loads(out.read_text())["traceEvents"]
    names = [e["name"] for e in events if e.get("ph") == "X"]
    # the Cube's 2 TMATMULs and TPUSHes, each Vector core's 2 TPOPs, TADDs and TFREEs
    assert names.count("TMATMUL") == 2 and names.count("TPUSH") == 2
    assert names.count("TPOP") == 4 and names.count("TADD") == 4 and names.count("TFREE") == 4
    # every slice names its C++ line
    pops = {e["args"]["loc"] for e in events if e.get("ph") == "X" and e["name"] == "TPOP"}
    assert {p.rsplit("/", 1)[-1] for p in pops} == {f"c2v_add.cpp:{line_of('c2v_add.cpp', 'TPOP<')}"}
    assert all("loc" in e["args"] for e in events if e.get("ph") == "X")


@needs_cxx
def test_cli_trace_of_a_failing_cpp_file_writes_its_timeline_up_to_the_error(cpp_cache, tmp_path, capfd,
                                                                             monkeypatch):
    """The timeline matters most when the run fails: the child that ran the kernel writes the
    trace (and the report) of the run up to the error, marked where it stopped."""
    argv = _save_inputs(tmp_path)
    out, html = tmp_path / "t.json", tmp_path / "t.html"
    r = _cli_here(["trace", kernel("c2v_use_after_free.cpp"), *argv, "-o", str(out), "--report", str(html),
                   "--latency", "777"], tmp_path, capfd, monkeypatch)
    assert r.returncode == 1 and "ProtocolError" in r.stderr, r.stdout + r.stderr
    assert f"wrote {out} (c2v_use_after_free.cpp, up to the ProtocolError)" in r.stdout, r.stdout
    import json
    events = json.loads(out.read_text())["traceEvents"]
    assert any(e.get("ph") == "X" and e["name"] == "TFREE" for e in events)
    (stop,) = [e for e in events if e["name"] == "stopped: ProtocolError"]
    line = line_of("c2v_use_after_free.cpp", "reads the slot it just freed")
    assert stop["args"]["where"].endswith(f"c2v_use_after_free.cpp:{line}"), stop
    assert "stopped by ProtocolError" in html.read_text()
    assert "cross-core latency 777 cycles" in html.read_text()      # (--latency reaches the C++ run)


@needs_cxx
def test_cli_run_report_of_a_failing_cpp_file_shows_the_run_up_to_the_error(cpp_cache, tmp_path, capfd,
                                                                           monkeypatch):
    """``run --report`` of a C++ kernel that fails writes the report of the run up to the
    error (as for a Python kernel), titled with what stopped it."""
    argv = _save_inputs(tmp_path)
    html = tmp_path / "r.html"
    r = _cli_here(["run", kernel("c2v_use_after_free.cpp"), *argv, "--report", str(html)], tmp_path, capfd,
                  monkeypatch)
    assert r.returncode == 1 and "ProtocolError" in r.stderr, r.stdout + r.stderr
    assert f"wrote {html}" in r.stdout and "stopped by ProtocolError" in html.read_text()


def test_check_static_of_a_cpp_file_says_to_run_it(capsys):
    from ptopipe.cli import main as cli_main
    assert cli_main(["check", "--static", kernel("c2v_add.cpp")]) == 1
    err = capsys.readouterr().err
    assert "C++ kernel" in err and "without --static" in err


@needs_cxx
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a_correct_kernel_passes_every_explored_schedule(cpp_cache, protocol):
    """Other interleavings of the same kernel (each core's instructions keep their own GM views:
    the two Vector cores run the same C++ lines)."""
    args, want = _c2v()
    for seed in range(8):
        r = run_cpp(kernel("c2v_add.cpp"), {k: v.copy() for k, v in args.items()}, protocol=protocol,
                    schedule_seed=seed, causal=True)
        np.testing.assert_array_equal(r["out"], want["out"], err_msg=f"schedule seed {seed}")


@needs_cxx
@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a5", "pto-isa")])
def test_the_readme_cpp_example_runs_with_its_golden(cpp_cache, capsys, platform, protocol):
    """examples/cpp/c2v_bias.py: a C++ kernel as a Scenario (ptopipe.cpp.kernels), run in this
    process by `ptopipe run FILE.py` and checked against numpy, as a Python kernel is."""
    from ptopipe.cli import main as cli_main
    path = os.path.join(ROOT, "examples", "cpp", "c2v_bias.py")
    assert cli_main(["run", path, "--variant", "all", "--platform", platform, "--protocol", protocol,
                     "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "PASS cpp_c2v_bias[default]" in out and "PASS cpp_c2v_bias[m64]" in out
    assert cli_main(["check", path, "--schedules", "3", "--platform", platform, "--protocol", protocol]) == 0


@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a2a3", "pto-isa")])
def test_a_cpp_tile_popped_again_stages_in_the_next_slot(platform, protocol):
    """A C++ kernel pops into one tile variable every iteration: each TPOP (the ABI's call of
    it) binds the variable afresh but keeps it a ring tile, so on a GM ring it stages into the
    next of LocalSlotNum slots, as pto-isa's TPOP TASSIGNs - not in place at the last one."""
    import ptopipe
    from ptopipe.cpp.abi import Dispatcher
    from ptopipe.isa import (DIR_C2V, TILE_UP_DOWN, TFREE, TMOV, TPipe, TPUSH, Tile, TileType,
                             float32, get_subblockid)
    slot, seen = 16 * 16 * 4, {0: [], 1: []}

    def cube(fifo):
        pipe = TPipe(0, DIR_C2V, slot, 4)(fifo, 0x10000, 0)
        acc = Tile(TileType.Acc, float32, 16, 16, addr=0)
        for _ in range(3):
            TPUSH(pipe, acc, TILE_UP_DOWN)

    def vector(fifo):
        pipe = TPipe(0, DIR_C2V, slot, 4)(fifo, 0x10000, 0)
        t = Tile(TileType.Vec, float32, 8, 16)
        pop = Dispatcher._pop_tile([pipe, t])
        for _ in range(3):
            pop(pipe, t, TILE_UP_DOWN)
            seen[get_subblockid()].append(t.addr)
            TMOV(Tile(TileType.Vec, float32, 8, 16, addr=0), t)
            TFREE(pipe, TILE_UP_DOWN)

    ptopipe.run(cube, vector, dict(fifo=ptopipe.gm_buffer(4 * slot)), platform=platform, protocol=protocol)
    assert seen == {k: [0x10000, 0x10000 + slot, 0x10000] for k in (0, 1)}, seen


@needs_cxx
def test_a_run_in_its_child_process_returns_its_located_warnings(cpp_cache, tmp_path):
    """Under pto-isa on A2A3 a missing TFREE is a warning: the run passes, and the warning
    and its kernel line come back from the child process the C++ kernel ran in."""
    from ptopipe.driver.cpp import run_file
    pairs = []
    for name, value in c2v_args().items():
        np.save(tmp_path / f"{name}.npy", value)
        pairs.append(f"{name}={tmp_path / name}.npy")
    path = kernel("c2v_missing_tfree.cpp")
    _, summary = run_file(path, None, None, pairs, platform="a2a3", protocol="pto-isa")
    assert [w.split(" have no TFREE")[0][-4:] for w, _ in summary.leaks] == ["AIV0", "AIV1"]   # a lane each
    for _, loc in summary.leaks:
        assert os.path.samefile(loc.file, path) and loc.line == line_of("c2v_missing_tfree.cpp", "TPOP<")


def test_pointer_parameters_know_their_element_type():
    """The declared element type of each ``__gm__ T *`` parameter (a byte pointer, a scalar or
    a template type: none, any array may go there)."""
    from ptopipe.arch.dtypes import bfloat16
    from ptopipe.cpp.build import functions
    f = functions("template <typename T> void k(__gm__ float *a, const __gm__ bfloat16_t* __restrict__ b,\n"
                  "    __gm__ uint8_t *fifo, __gm__ T *t, int64_t n, __gm__ int32_t *idx) {}")["k"]
    assert f.params == ["a", "b", "fifo", "t", "n", "idx"]
    assert f.elements == [np.dtype(np.float32), bfloat16, None, None, None, np.dtype(np.int32)]


@needs_cxx
def test_an_array_of_another_element_type_than_the_pointer_is_a_config_error(cpp_cache):
    """An int32 array for a ``__gm__ float *`` parameter would be read as floats: refused,
    naming the argument, both types and the conversion."""
    args = c2v_args()
    args["a"] = args["a"].astype(np.int32)
    with pytest.raises(ConfigError) as ei:
        run_cpp(kernel("c2v_add.cpp"), args, platform="a2a3", protocol="spec")
    e = ei.value
    assert "argument 'a' is an array of int32, but parameter 'a' points to float32 elements" in e.what
    assert e.where.endswith("cube_kernel") and "a.astype(np.float32)" in e.fix


@needs_cxx
def test_an_out_of_bounds_view_is_fixed_in_cpp_pointer_arithmetic(cpp_cache):
    """A C++ kernel's view past its argument: the fix names the pointer arithmetic of the C++
    parameter (``out + offset``), not the Python ``out.data()``."""
    with pytest.raises(MemoryConflictError) as ei:
        run_cpp(kernel("c2v_gm_out_of_bounds.cpp"), c2v_args(), platform="a2a3", protocol="spec")
    fix = ei.value.fix
    assert "the offset added to the pointer (out + offset)" in fix and "within out[0 .. 1024)" in fix
    assert ".data()" not in fix


@needs_cxx
@pytest.mark.parametrize("platform, launches", [("a2a3", 2), ("a5", 1)])
def test_a_scalar_read_through_a_gm_pointer_reads_gm(cpp_cache, platform, launches):
    """``scalar[0]`` of a ``__gm__`` pointer reads the argument's bytes (pto-isa's scalar-operand
    tests), and GM the kernel stored reads back after a pipe_barrier(PIPE_ALL) or a wait_flag
    into PIPE_S (the queued data work applied there); a second launch reads its own GM."""
    rng = np.random.default_rng(3)
    src = rng.integers(-3, 4, (8, 8)).astype(np.float32)
    scalar = np.array([2.5], np.float32)
    z = np.zeros((8, 8), np.float32)
    r = run_cpp(kernel("gm_scalar.cpp"), dict(out=z, again=z, third=z, src=src, scalar=scalar), platform=platform,
                launches=launches)
    for _ in range(launches):
        out = np.maximum(src, scalar[0])
        again = src + out.flat[1]
        src = src * again.flat[2]
    np.testing.assert_array_equal(r["out"], out)
    np.testing.assert_array_equal(r["again"], again)
    np.testing.assert_array_equal(r["third"], src)
    np.testing.assert_array_equal(r["src"], src)


@needs_cxx
def test_a_gm_read_back_in_a_loop_on_the_periodic_engine(cpp_cache, monkeypatch):
    """A loop that reads back through its pointer what it stored (after pipe_barrier(PIPE_ALL)),
    one value of which (iteration 30) takes another branch: the periodic engine cannot see a
    raw read, so the barrier gives it the exact state (it does not record past one) - the
    exact engine's outputs and summary."""
    import dataclasses
    from ptopipe.cpp.runner import in_child, kernels
    from ptopipe.sim.periodic import engine
    monkeypatch.setattr(engine, "WARMUP_CALLS", 8)     # (the loop is learned from its 3rd iteration)
    n = 40
    x = np.random.default_rng(1).integers(-3, 4, (n * 8, 8)).astype(np.float32)
    x[30 * 8, 0] = 1000
    _, aiv = kernels(kernel("gm_reread_loop.cpp"))

    def work(_fd):
        got = []
        for eng in ("exact", "periodic"):
            r = isa.run(aiv=aiv, args=dict(x=x, out=np.zeros_like(x), res=np.zeros_like(x), n=n), platform="a5",
                        engine=eng)
            got.append((r.outputs["res"].copy(), {f.name: getattr(r.summary, f.name) for f in
                                                  dataclasses.fields(r.summary) if f.name != "wall_seconds"}))
        return got
    (res, exact), (res_ff, fast) = in_child(work)
    want = x.copy()
    want[30 * 8:31 * 8] += 1
    np.testing.assert_array_equal(res, want)
    np.testing.assert_array_equal(res_ff, want)
    assert fast == exact


@needs_cxx
def test_a_lone_vector_kernel_run_from_python_reads_gm_through_its_pointers(cpp_cache):
    """:func:`ptopipe.cpp.kernels` of a lone Vector kernel in :func:`ptopipe.run` (in a child
    here, so that a fault is an error): AIV0's kernel, whose run's GM its pointers read."""
    from ptopipe.cpp.runner import in_child, kernels
    src = np.arange(64, dtype=np.float32).reshape(8, 8) - 30
    z = np.zeros((8, 8), np.float32)
    aic, aiv = kernels(kernel("gm_scalar.cpp"))
    assert aic is None and aiv[1] is None

    def work(_fd):
        r = isa.run(aiv=aiv, args=dict(out=z, again=z, third=z, src=src, scalar=np.array([2.5], np.float32)))
        return r.outputs["again"].copy()
    np.testing.assert_array_equal(in_child(work), src + max(src.flat[1], 2.5))


@needs_cxx
def test_an_accumulating_matmul_onto_unwritten_acc_is_reported_at_its_line(cpp_cache):
    """A K loop whose first step is TMATMUL_ACC reads L0C nothing of the launch wrote (stale
    on the device, zeros here: the numbers would look right): a KernelError at that call.
    The correct loop (TMATMUL first) is clean, in one launch and in two on one cluster; its
    stores with pto-isa's ReluPreMode, AtomicType and preQuantScalar give the fixpipe's numbers."""
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, (16, 48)).astype(np.float32)
    b = rng.integers(-3, 4, (48, 16)).astype(np.float32)
    args = dict(a=a, b=b, out=np.zeros((16, 16), np.float32), relu=np.zeros((16, 16), np.float32),
                q=np.zeros((16, 16), np.int8), word=0x3F800000 | 1 << 46)
    for launches in (1, 2):
        r = run_cpp(kernel("acc_k_loop.cpp"), dict(args, start=1), launches=launches)
        np.testing.assert_array_equal(r["out"], a @ b)
        # TSTORE<Acc, G, AtomicAdd, NormalRelu>(g, acc) once a launch; TSTORE<Acc, G>(g, acc, word): scale 1
        np.testing.assert_array_equal(r["relu"], launches * np.maximum(a @ b, 0))
        np.testing.assert_array_equal(r["q"], np.clip(a @ b, -128, 127).astype(np.int8))
    with pytest.raises(KernelError) as ei:
        run_cpp(kernel("acc_k_loop.cpp"), dict(args, start=0))
    assert "TMATMUL_ACC accumulates onto Acc tile" in ei.value.what and "no instruction of this launch wrote" \
        in ei.value.what
    assert ei.value.where == f"{os.path.relpath(kernel('acc_k_loop.cpp'))}:{line_of('acc_k_loop.cpp', 'TMATMUL_ACC(')}"
    assert "TMATMUL (or TMATMUL_BIAS)" in ei.value.fix


@needs_cxx
def test_a_clean_spec_run_that_races_under_pto_isa_says_so(tmp_path, cpp_cache, capsys):
    """A5: the Vector TSTOREs the popped slot and TFREEs it with no MTE3 -> V event - clean
    under the default spec protocol, a race under pto-isa's (its free is one set on PIPE_V).
    `run` and `check` pass and add a note with the race at the TFREE line; a kernel that stores
    a computed copy (c2v_add.cpp) gets no note, nor does a run that asked for spec."""
    from ptopipe.cli import main as cli_main
    ins = []
    for k, v in c2v_args().items():
        np.save(tmp_path / f"{k}.npy", v)
        ins += ["--input", f"{k}={tmp_path / k}.npy"]
    name = "c2v_store_popped.cpp"
    note = ("note: under --protocol pto-isa (what pto-isa's TPipe does on a5) this kernel races: DataRaceError: "
            "slot 0 of C2V pipe FlagID 0")
    at = f"(at {os.path.relpath(kernel(name))}:{line_of(name, 'TFREE<')})"
    assert cli_main(["run", kernel(name), "--platform", "a5", "--quiet"] + ins) == 0
    out = capsys.readouterr().out
    assert out.startswith("PASS ") and note in out and at in out, out
    assert cli_main(["check", kernel(name), "--platform", "a5", "--schedules", "1"] + ins) == 0
    assert note in capsys.readouterr().out
    for cmd in (["run", kernel("c2v_add.cpp"), "--platform", "a5"], ["run", kernel(name), "--platform", "a5",
                                                                      "--protocol", "spec"]):
        assert cli_main(cmd + ["--quiet"] + ins) == 0
        assert "note:" not in capsys.readouterr().out, cmd


# -- cross-core flags of the kernel's own (the CCE intrinsics) ----------------------------------
def _cross_core_args():
    x = _ints((16, 16))
    return dict(x=x, ws=np.zeros((16, 16), np.float32), out=np.zeros((16, 16), np.float32)), x @ x + 1


@needs_cxx
@pytest.mark.parametrize("platform,aic,aiv", [("a2a3", "cube_a2a3", "vec_a2a3"), ("a5", "cube_a5", "vec_a5")])
def test_cross_core_flags_order_a_gm_handoff(cpp_cache, platform, aic, aiv):
    args, want = _cross_core_args()
    res = run_cpp(kernel("cross_core_flags.cpp"), args, aic=aic, aiv=aiv, platform=platform, causal=True)
    np.testing.assert_array_equal(res.outputs["out"], want)
    assert not res.summary.leaks


@needs_cxx
@pytest.mark.parametrize("platform,aic,aiv,cls,at", [
    ("a2a3", "cube_a2a3", "vec_a2a3_other_flag", DeadlockError, "wait_flag_dev(FLAG + 1)"),
    ("a5", "cube_a5_aiv0_only", "vec_a5", DeadlockError, "wait_intra_block(PIPE_MTE2, FLAG)"),
    ("a2a3", "cube_a2a3", "vec_a2a3_unsynced", DataRaceError, "TLOAD(t, gw)")])
def test_a_cross_core_flag_misuse_is_reported_at_its_cpp_line(cpp_cache, platform, aic, aiv, cls, at):
    with pytest.raises(cls) as ei:
        run_cpp(kernel("cross_core_flags.cpp"), _cross_core_args()[0], aic=aic, aiv=aiv, platform=platform,
                causal=True)
    where = f"{os.path.relpath(kernel('cross_core_flags.cpp'))}:{line_of('cross_core_flags.cpp', at)}"
    assert ei.value.where == where or ei.value.where.startswith(where + " (called from"), str(ei.value)
