"""No run hangs: a kernel looping forever - issuing instructions, only
TSYNCs, only flag waits, or pure Python with no instruction at all - stops with a
BudgetError naming the kernel line, through the API and through the CLI; a kernel blocked
forever is still a DeadlockError; a real Ctrl-C is still a KeyboardInterrupt; the
watchdog never fires after its run ended."""
from __future__ import annotations

import math
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import ptopipe
from ptopipe import BudgetError, ConfigError, DeadlockError
from ptopipe.isa import (DIR_V2C, TADDS, TFREE, TPipe, TPOP, TSYNC, TILE_NO_SPLIT, Tile,
                         TileType, float32)
from ptopipe.isa.explore import explore
from ptopipe.sim import Cluster
from markers import line_of

HERE = os.path.basename(__file__)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def assert_at(err, fn, marker):
    assert err.where is not None and err.where.endswith(f"{HERE}:{line_of(fn, marker)}"), (err.where, str(err))


# -- the kinds of endless kernels -------------------------------------------------------------
def loops_on_instructions():
    t = Tile(TileType.Vec, float32, 8, 8, addr=0x0)
    while True:
        TADDS(t, t, 1.0)  # LOOP


def loops_on_tsync():
    t = Tile(TileType.Vec, float32, 8, 8, addr=0x0)
    e = TADDS(t, t, 1.0)
    while True:
        TSYNC(e)  # LOOP


def adds_and_waits():
    t = Tile(TileType.Vec, float32, 8, 8, addr=0x0)
    TADDS(t, t, 1.0)
    time.sleep(0.05)                # (the watchdog's thread waits for the run's deadline by now)


def loops_in_python():
    t = Tile(TileType.Vec, float32, 8, 8, addr=0x0)
    TADDS(t, t, 1.0)
    n = 0
    while True:  # LOOP
        n += 1


def test_instruction_loop_hits_the_budget():
    with pytest.raises(BudgetError) as ei:
        ptopipe.run(aiv=(loops_on_instructions, None), max_instructions=500)
    assert "instruction budget of 500" in ei.value.what
    assert_at(ei.value, loops_on_instructions, "LOOP")


def test_tsync_only_loop_hits_the_budget():
    with pytest.raises(BudgetError) as ei:
        ptopipe.run(aiv=(loops_on_tsync, None), max_instructions=500, timeout=30)
    assert "instruction budget of 500" in ei.value.what     # the budget, not the watchdog
    assert_at(ei.value, loops_on_tsync, "LOOP")


def test_tsync_does_not_count_as_an_instruction():
    def k():
        t = Tile(TileType.Vec, float32, 8, 8, addr=0x0)
        e = TADDS(t, t, 1.0)
        for _ in range(10):
            TSYNC(e)
    res = ptopipe.run(aiv=(k, None))
    assert res.summary.cores["AIV0"]["instructions"] == 1


def test_flag_waits_count_toward_the_budget():
    """Two cores ping-pong SET/WAIT without a single instruction."""
    cl = Cluster("a2a3", max_instructions=300, timeout=30)
    ping, pong = cl.flag(cl.aic, cl.aiv0, 0), cl.flag(cl.aiv0, cl.aic, 0)

    def aic():
        while True:
            cl.set_flag(cl.aic, ping, cl.aic.clock)
            cl.aic.wait_flag(pong, "pong")  # AIC

    def aiv():
        while True:
            cl.aiv0.wait_flag(ping, "ping")  # AIV
            cl.set_flag(cl.aiv0, pong, cl.aiv0.clock)

    with pytest.raises(BudgetError) as ei:
        cl.run({cl.aic: (aic, {}), cl.aiv0: (aiv, {})})
    core = ei.value.what.split()[0]
    assert ei.value.what == f"{core} exceeded the instruction budget of 300 (instructions, TSYNCs and flag waits)"
    assert_at(ei.value, aic if core == "AIC" else aiv, core[:3])
    assert cl.aic.instructions == cl.aiv0.instructions == 0


def test_pure_python_loop_is_stopped_by_the_timeout_naming_each_core():
    """AIV0 spins in Python; the Cube core waits in TPOP for it: the error names both lines."""
    def cube(fifo):
        pipe = TPipe(0, DIR_V2C, 256, 2, peers=(0,))(fifo, 0x0, 0)
        t = Tile(TileType.Mat, float32, 8, 8)
        TPOP(pipe, t, TILE_NO_SPLIT)  # POP
        TFREE(pipe)

    with pytest.raises(BudgetError) as ei:
        ptopipe.run(cube, (loops_in_python, None), dict(fifo=ptopipe.gm_buffer(512)), timeout=0.1)
    err = ei.value
    assert "timeout=0.1 s" in err.what
    assert_at(err, loops_in_python, "LOOP")
    lines = err.details.splitlines()
    aiv0 = next(ln for ln in lines if ln.startswith("AIV0"))
    aic_ = next(ln for ln in lines if ln.startswith("AIC"))
    assert aiv0.startswith("AIV0  running at") and f"{HERE}:{line_of(loops_in_python, 'LOOP')}" in aiv0
    assert aic_.startswith("AIC   blocked in TPOP") and f"{HERE}:{line_of(cube, 'POP')}" in aic_
    assert any(ln.startswith("AIV1  runs no kernel") for ln in lines)


def test_a_kernel_swallowing_the_timeout_error_is_stopped_all_the_same(monkeypatch):
    from ptopipe.sim import bounds
    monkeypatch.setattr(bounds, "_REFIRE", 0.05)    # the watchdog's next interrupts come sooner

    def stubborn():
        n = 0
        while True:
            try:
                while True:          # the interrupt lands inside the try
                    n += 1
            except Exception:        # swallows the first BudgetError
                pass

    with pytest.raises(BudgetError) as ei:
        ptopipe.run(aiv=(stubborn, None), timeout=0.1)
    assert "timeout=0.1 s" in ei.value.what


def test_until_cycle_bounds_simulated_time():
    with pytest.raises(BudgetError) as ei:
        ptopipe.run(aiv=(loops_on_instructions, None), until_cycle=2000)
    assert "until_cycle=2,000" in ei.value.what
    assert_at(ei.value, loops_on_instructions, "LOOP")
    with pytest.raises(BudgetError) as ei:          # TSYNC advances the clock too
        ptopipe.run(aiv=(loops_on_tsync, None), until_cycle=2000)
    assert_at(ei.value, loops_on_tsync, "LOOP")


def test_until_cycle_leaves_a_run_that_ends_in_time_unchanged():
    def k():
        t = Tile(TileType.Vec, float32, 8, 8, addr=0x0)
        for _ in range(5):
            TADDS(t, t, 1.0)
    free = ptopipe.run(aiv=(k, None))
    bounded = ptopipe.run(aiv=(k, None), until_cycle=free.summary.cycles)
    assert bounded.summary.cycles == free.summary.cycles
    with pytest.raises(BudgetError):
        ptopipe.run(aiv=(k, None), until_cycle=free.summary.cycles - 1)


def test_blocked_forever_is_still_a_deadlock():
    def cube(fifo):
        pipe = TPipe(0, DIR_V2C, 256, 2, peers=(0,))(fifo, 0x0, 0)
        t = Tile(TileType.Mat, float32, 8, 8)
        TPOP(pipe, t, TILE_NO_SPLIT)  # POP

    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(cube, None, dict(fifo=ptopipe.gm_buffer(512)), timeout=5)
    assert_at(ei.value, cube, "POP")


@pytest.mark.parametrize("kw", [dict(max_instructions=0), dict(max_instructions=-5),
                                dict(max_instructions=1.5), dict(until_cycle=0),
                                dict(timeout=0), dict(timeout=-1.0)])
def test_non_positive_bounds_are_config_errors(kw):
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(aiv=(loops_on_instructions, None), **kw)
    assert next(iter(kw)) in ei.value.what


def test_none_means_the_default_bounds():
    cl = Cluster("a2a3", max_instructions=None, timeout=None)
    assert cl.max_instructions == 50_000_000 and cl.timeout == 60.0 and cl.until_cycle is None
    with pytest.raises(BudgetError):                 # a budget is always there
        ptopipe.run(aiv=(loops_on_tsync, None), max_instructions=None, timeout=math.inf,
                    until_cycle=3000)


def test_a_timeout_longer_than_any_wait_is_no_bound_as_inf_is(monkeypatch):
    """timeout=1e10 s is past what a wait can take (threading.TIMEOUT_MAX): the watchdog's
    thread raised OverflowError (a traceback on stderr) and died; it is no bound, as inf."""
    died = []
    monkeypatch.setattr(threading, "excepthook", died.append)
    ptopipe.run(aiv=(adds_and_waits, None), timeout=1e10)
    assert not died, died[0].exc_value


def test_check_explore_stops_a_hanging_kernel():
    sc = ptopipe.Scenario("spin", None, (loops_in_python, None), lambda rng: {}, lambda a: {})
    res = explore(sc, schedules=3, timeout=0.1)
    assert not res.ok and res.runs == 1
    seed, err = res.first
    assert isinstance(err, BudgetError)
    assert_at(err, loops_in_python, "LOOP")


# -- the watchdog and Ctrl-C --------------------------------------------------------------------
def test_watchdog_never_fires_after_the_run_ended():
    def k():
        t = Tile(TileType.Vec, float32, 8, 8, addr=0x0)
        TADDS(t, t, 1.0)
    before = signal.getsignal(signal.SIGINT)
    for _ in range(20):
        ptopipe.run(aiv=(k, None), timeout=0.05)
    time.sleep(0.3)                                  # would raise here if one were pending
    assert signal.getsignal(signal.SIGINT) is before


def test_a_real_ctrl_c_is_still_a_keyboard_interrupt():
    before = signal.getsignal(signal.SIGINT)
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            ptopipe.run(aiv=(loops_in_python, None), timeout=30)
    finally:
        timer.cancel()
    assert signal.getsignal(signal.SIGINT) is before


# -- the command line ---------------------------------------------------------------------------
# the loops outside the kernels (make_args, golden) wait in time.sleep: the command's watch
# stops a waiting loop as it stops a spinning one, at its line, without the suite's CPU spent
# spinning (a spinning loop outside the kernels: LOOPS_AT_IMPORT, and the stubborn files)
KERNEL = textwrap.dedent('''\
    import time

    import numpy as np
    import ptopipe
    from ptopipe.isa import *


    def vector(out, mode):
        t = Tile(TileType.Vec, float32, 8, 8, addr=0x0)
        TADDS(t, t, 1.0)
        e = TADDS(t, t, 1.0)
        n = 0
        while mode == "spin":  # SPIN
            n += 1
        while mode == "tsync":
            TSYNC(e)  # TSYNC
        while mode == "instr":
            TADDS(t, t, 1.0)  # INSTR
        TSTORE(out, t)


    def make_args(rng, mode="ok"):
        while mode == "args": time.sleep(0.001)  # ARGS
        return dict(out=np.zeros((8, 8), np.float32), mode=mode)


    def golden(args, **_):
        while args["mode"] == "gold": time.sleep(0.001)  # GOLD
        return {"out": np.full((8, 8), 2.0, np.float32)}


    VARIANTS = {"default": dict(mode="ok"), "spin": dict(mode="spin"), "tsync": dict(mode="tsync"),
                "instr": dict(mode="instr"), "args": dict(mode="args"), "gold": dict(mode="gold")}
    SCENARIO = ptopipe.Scenario("hang", None, (vector, None), make_args, golden, VARIANTS)
''')


@pytest.fixture(scope="module")
def kernel_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("bounds") / "hang_kernel.py"
    p.write_text(KERNEL)
    return p


def _marker_line(marker: str) -> int:
    return next(i for i, ln in enumerate(KERNEL.splitlines(), 1) if ln.rstrip().endswith("# " + marker))


#: a kernel file that spins at import, line 2 (outside any run: the command's watch stops it)
LOOPS_AT_IMPORT = "import ptopipe\nwhile True: pass\n"
#: one that waits at import, line 2 (for the commands that treat such a file as a row: the
#: watch stops it as it does LOOPS_AT_IMPORT, without the CPU of a spin)
WAITS_AT_IMPORT = "import time, ptopipe\nwhile True: time.sleep(0.001)\n"


def _cli(*argv, timeout=30):
    env = dict(os.environ, PYTHONPATH=ROOT, NO_COLOR="1")
    # a hang would end in subprocess's TimeoutExpired: the command's own bound ends it first
    return subprocess.run([sys.executable, "-m", "ptopipe.cli", *map(str, argv)], capture_output=True,
                          text=True, env=env, timeout=timeout)


def _cli_here(capsys, monkeypatch, *argv):
    """The command run by ``ptopipe.cli.main`` in this process: what :func:`_cli` runs, less
    the start-up of a Python process (the suite's CPU budget)."""
    from ptopipe.cli import main
    monkeypatch.setenv("NO_COLOR", "1")
    code = main([*map(str, argv)])
    out = capsys.readouterr()
    return subprocess.CompletedProcess(argv, code, out.out, out.err)


# (one in a process of its own: the command's own bound ends the process)
@pytest.mark.parametrize("cmd,variant,marker,bounds,own_process", [
    ("run", "spin", "SPIN", ("--timeout", "0.1"), True),
    ("run", "tsync", "TSYNC", ("--until-cycle", "5000"), False),
    ("trace", "spin", "SPIN", ("--timeout", "0.1"), False),
    ("check", "spin", "SPIN", ("--timeout", "0.1", "--schedules", "2"), False),
    ("trace", "instr", "INSTR", ("--until-cycle", "5000"), False),
])
def test_cli_stops_a_hanging_kernel(kernel_file, tmp_path, capsys, monkeypatch, no_hang, cmd, variant,
                                    marker, bounds, own_process):
    extra = ("-o", tmp_path / "t.json") if cmd == "trace" else ()
    argv = (cmd, kernel_file, "--variant", variant, *bounds, *extra)
    p = _cli(*argv) if own_process else _cli_here(capsys, monkeypatch, *argv)
    assert p.returncode == 1, p.stderr
    assert "BudgetError" in p.stderr and "Traceback" not in p.stderr
    assert f"hang_kernel.py:{_marker_line(marker)}" in p.stderr, p.stderr


def test_cli_sweep_reports_a_hanging_row_and_finishes(kernel_file, capsys, monkeypatch, no_hang):
    p = _cli_here(capsys, monkeypatch, "sweep", kernel_file, "--param", "mode=ok,spin", "--timeout", "0.25",
                  "--workers", "2")
    assert p.returncode == 1, p.stderr
    rows = [ln for ln in p.stdout.splitlines() if "mode" not in ln and ("ok" in ln or "spin" in ln)]
    spin = next(ln for ln in rows if " spin " in f" {ln} ")
    assert "FAILED [1]" in spin
    note = next(ln for ln in p.stdout.splitlines() if ln.strip().startswith("[1]"))
    assert "BudgetError" in note and f"hang_kernel.py:{_marker_line('SPIN')}" in note, p.stdout
    ok = next(ln for ln in rows if " ok " in f" {ln} ")
    assert "FAILED" not in ok


@pytest.mark.parametrize("variant,marker", [("args", "ARGS"), ("gold", "GOLD"), (None, "IMPORT")])
def test_cli_timeout_bounds_the_kernel_files_own_code(kernel_file, tmp_path, capsys, monkeypatch, no_hang, variant,
                                                      marker):
    """--timeout bounds the whole command: a loop outside the kernels - in make_args, in
    golden, at the file's import - is a BudgetError at its line, not a hang."""
    if variant is None:
        f = tmp_path / "loops_at_import.py"
        f.write_text(LOOPS_AT_IMPORT)
        argv, at = ("run", f), "loops_at_import.py:2"
    else:
        argv, at = ("run", kernel_file, "--variant", variant), f"hang_kernel.py:{_marker_line(marker)}"
    p = _cli_here(capsys, monkeypatch, *argv, "--timeout", "0.1")
    assert p.returncode == 1 and "BudgetError" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert f"at {at}" in p.stderr or at in p.stderr.split("\n")[1], p.stderr


def test_a_library_file_looping_outside_its_kernels_is_a_row_and_the_command_ends(kernel_file, tmp_path, capsys,
                                                                                 monkeypatch, no_hang):
    f = tmp_path / "loops_at_import.py"
    f.write_text(WAITS_AT_IMPORT)
    p = _cli_here(capsys, monkeypatch, "check", f, kernel_file, "--timeout", "0.5", "--workers", "1", "--json")
    rows = {os.path.basename(r["file"]): r for r in json.loads(p.stdout)}
    assert rows["loops_at_import.py"]["failure"]["error"] == "BudgetError"
    assert rows["loops_at_import.py"]["failure"]["where"].endswith("loops_at_import.py:2")
    later = rows["hang_kernel.py"]["failure"]          # (the file after it: the command's time is spent)
    assert later is None or "it passed before" in later["what"]


@pytest.mark.parametrize("body", [
    "while True:\n    try:\n        while True: pass\n    except BaseException:\n        pass\n",
    "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass\n"],
    ids=["swallows-the-error", "ignores-sigint"])
def test_cli_timeout_ends_a_kernel_file_that_will_not_be_stopped(tmp_path, body):
    """A kernel file whose own code catches every interrupt (or ignores SIGINT) in a loop still
    ends the command at --timeout: an interrupt that lands outside its try ends it, else the
    watch ends the process after a few refused ones - a BudgetError at the loop's line either
    way (in a process of its own: it may end the process)."""
    f = tmp_path / "stubborn.py"
    # the watch's refused interrupts come 0.05 s apart, not _REFIRE's 0.5 s (the CPU of the
    # spin until the watch gives up: the same number of them, each sooner)
    f.write_text("import ptopipe\nimport ptopipe.sim.bounds\nptopipe.sim.bounds._REFIRE = 0.05\n" + body)
    p = _cli("run", f, "--timeout", "0.1")
    assert p.returncode == 1 and "BudgetError" in p.stderr and "stubborn.py:" in p.stderr, p.stderr


def test_check_of_a_golden_that_loops_says_where_the_time_went(kernel_file, capsys, monkeypatch, no_hang):
    p = _cli_here(capsys, monkeypatch, "check", kernel_file, "--variant", "gold", "--timeout", "0.5")
    assert p.returncode == 1
    assert "ran out in the kernel file's own code, outside any run" in p.stdout + p.stderr
    assert f"hang_kernel.py:{_marker_line('GOLD')}" in p.stdout + p.stderr, p.stdout + p.stderr


def test_cli_sweep_of_a_file_looping_at_import_is_bounded_by_its_timeout(tmp_path, capsys, monkeypatch, no_hang):
    f = tmp_path / "loops_at_import.py"
    f.write_text(WAITS_AT_IMPORT)
    p = _cli_here(capsys, monkeypatch, "sweep", f, "--param", "n=1", "--timeout", "0.25")
    assert p.returncode == 1 and "BudgetError" in p.stderr and "loops_at_import.py:2" in p.stderr, p.stderr


def test_cli_sweep_row_looping_in_make_args_is_a_failed_row(kernel_file, capsys, monkeypatch, no_hang):
    p = _cli_here(capsys, monkeypatch, "sweep", kernel_file, "--param", "mode=args", "--timeout", "0.25",
                  "--workers", "1")
    note = next(ln for ln in p.stdout.splitlines() if ln.strip().startswith("[1]"))
    assert p.returncode == 1 and "BudgetError" in note and f"hang_kernel.py:{_marker_line('ARGS')}" in note, p.stdout
    assert "): 1 configuration\n" in p.stdout, p.stdout       # (not "1 configurations")


def test_cli_rejects_a_non_positive_timeout(kernel_file, capsys, monkeypatch):
    p = _cli_here(capsys, monkeypatch, "run", kernel_file, "--timeout", "0")
    assert p.returncode == 1 and "ConfigError" in p.stderr and "timeout" in p.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_has_a_working_watchdog():
    """Sweep workers are forked: even if the parent's watchdog thread held its lock at the
    fork, a run in the child is bounded."""
    from ptopipe.sim.bounds import _WATCHER

    def k():
        t = Tile(TileType.Vec, float32, 8, 8, addr=0x0)
        TADDS(t, t, 1.0)
    ptopipe.run(aiv=(k, None))                      # the parent's watchdog thread exists
    with _WATCHER._cond:                             # and holds its lock at the fork
        pid = os.fork()
        if pid == 0:                                 # the child
            code = 1
            try:
                ptopipe.run(aiv=(loops_in_python, None), timeout=0.2)
            except BudgetError:
                code = 0
            finally:
                os._exit(code)
    deadline = time.monotonic() + 10
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's run hung")
        time.sleep(0.02)
    assert os.waitstatus_to_exitcode(status) == 0
