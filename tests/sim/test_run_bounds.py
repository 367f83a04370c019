"""The wall-clock bound holds wherever a run is and whatever its kernel does: a kernel
blocked in ``time.sleep``, a run started from a thread other than the main one (a Python
loop, an instruction loop), many launches (one bound for all of them, and for the whole
command on the command line); a kernel calling ``sys.exit`` is a KernelError at its line,
not the end of the program.  After the error no thread, greenlet or interrupt is left."""
from __future__ import annotations

import os
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe import BudgetError, KernelError
from ptopipe.isa import (DIR_V2C, TADDS, TFREE, TPipe, TPOP, TILE_NO_SPLIT, Tile, TileType, current_core,
                         float32, pipe_barrier, PIPE_ALL)
from ptopipe.isa.tensor import GlobalTensor, GMPtr
from ptopipe.runtime import kernels
from ptopipe.sim import Cluster
from ptopipe.sim import bounds
from markers import line_of
from test_bounds import _cli_here      # the command run in this process (no interpreter start-up)

HERE = os.path.basename(__file__)


def assert_at(err, fn, marker):
    assert err.where is not None and err.where.endswith(f"{HERE}:{line_of(fn, marker)}"), (err.where, str(err))


def one_add():
    t = Tile(TileType.Vec, float32, 8, 8, addr=0x0)
    TADDS(t, t, 1.0)


def sleeps():
    one_add()
    time.sleep(5)  # SLEEP


def loops_in_python():
    one_add()
    n = 0
    while True:  # LOOP
        n += 1


def loops_on_instructions():
    t = Tile(TileType.Vec, float32, 8, 8, addr=0x0)
    # one line: a wall-clock bound may land on the loop's test or on the call
    while True: TADDS(t, t, 1.0)  # noqa: E701  # LOOP


def cube_waits(fifo):
    pipe = TPipe(0, DIR_V2C, 256, 2, peers=(0,))(fifo, 0x0, 0)
    t = Tile(TileType.Mat, float32, 8, 8)
    TPOP(pipe, t, TILE_NO_SPLIT)  # POP
    TFREE(pipe)


def _watcher_started():
    ptopipe.run(aiv=(one_add, None))        # the process's one watchdog thread exists from here on


def _no_core_left(cl):
    return all(c.glet is None or c.glet.dead for c in cl.cores)


# -- a kernel blocked in a call ---------------------------------------------------------------
def test_a_sleeping_kernel_is_stopped_by_the_timeout():
    _watcher_started()
    threads = threading.active_count()
    cl = Cluster("a2a3", gm_size=4096, timeout=0.5)
    fifo = GlobalTensor(GMPtr(0, np.uint8, (0, 512, "fifo")), (512,), name="fifo")
    with pytest.raises(BudgetError) as ei:
        cl.run({cl.aic: (cube_waits, {"fifo": fifo}), cl.aiv0: (sleeps, {})})
    err = ei.value
    assert "timeout=0.5 s" in err.what
    assert_at(err, sleeps, "SLEEP")
    lines = err.details.splitlines()
    assert any(ln.startswith("AIV0  running at") and ln.split(" at ")[1].startswith(err.where) for ln in lines)
    aic = next(ln for ln in lines if ln.startswith("AIC"))
    assert aic.startswith("AIC   blocked in TPOP") and f"{HERE}:{line_of(cube_waits, 'POP')}" in aic
    assert _no_core_left(cl) and threading.active_count() == threads


def spins():
    while True:  # SPIN
        pass


def never_starts():
    pass


def test_a_core_whose_kernel_has_not_started_names_no_line_of_another():
    """The Cube spins before the Vector core is scheduled: the Vector's line in the report is
    not the Cube's (it has none yet)."""
    cl = Cluster("a2a3", gm_size=4096, timeout=0.1)
    with pytest.raises(BudgetError) as ei:
        cl.run({cl.aic: (spins, {}), cl.aiv0: (never_starts, {})})
    lines = ei.value.details.splitlines()
    aic = next(ln for ln in lines if ln.startswith("AIC"))
    aiv0 = next(ln for ln in lines if ln.startswith("AIV0"))
    assert aic.startswith("AIC   running at") and f"{HERE}:{line_of(spins, 'SPIN')}" in aic, aic
    assert aiv0.startswith("AIV0  ready, its kernel not started yet"), aiv0
    assert _no_core_left(cl)


def issues_forever():
    while True:  # ISSUE
        pipe_barrier(PIPE_ALL)


@pytest.mark.parametrize("bound", [{"max_instructions": 50}, {"until_cycle": 50}])
def test_a_core_not_started_names_no_line_under_the_instruction_and_cycle_bounds(bound):
    """The Cube issues instructions past a bound before the Vector cores are scheduled: their
    lines in the report are not the Cube's."""
    cl = Cluster("a2a3", gm_size=4096, **bound)
    with pytest.raises(BudgetError) as ei:
        cl.run({cl.aic: (issues_forever, {}), cl.aiv0: (never_starts, {}), cl.aiv1: (never_starts, {})})
    lines = ei.value.details.splitlines()
    assert f"{HERE}:{line_of(issues_forever, 'ISSUE') + 1}" in next(ln for ln in lines if ln.startswith("AIC"))
    for name in ("AIV0", "AIV1"):
        line = next(ln for ln in lines if ln.startswith(name))
        assert line.startswith(f"{name}  ready, its kernel not started yet"), line
    assert _no_core_left(cl)


# -- a run off the main thread ----------------------------------------------------------------
def _in_thread(fn):
    out = {}

    def body():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            out["error"] = e
    th = threading.Thread(target=body, daemon=True)     # (daemon: a regression fails, not hangs)
    th.start()
    th.join(10)
    assert not th.is_alive(), "the run off the main thread was not stopped"
    return out


# (an interrupt that lands in a gc callback and is dropped: see the two-thread test below; the
# watchdog's next one comes 0.05 s later instead of _REFIRE's 0.5 s)
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("kernel", [loops_in_python, loops_on_instructions])
def test_a_run_off_the_main_thread_is_bounded(kernel, monkeypatch):
    monkeypatch.setattr(bounds, "_REFIRE", 0.05)
    _watcher_started()
    threads = threading.active_count()
    clusters = []

    def go():
        cl = Cluster("a2a3", timeout=0.1)
        clusters.append(cl)
        t0 = time.perf_counter()
        try:
            cl.run({cl.aiv0: (kernel, {})})
        finally:
            took = time.perf_counter() - t0
        return took

    out = _in_thread(go)
    err = out.get("error")
    assert isinstance(err, BudgetError), repr(err)
    assert "timeout=0.1 s" in err.what
    assert_at(err, kernel, "LOOP")
    aiv0 = next(ln for ln in err.details.splitlines() if ln.startswith("AIV0"))
    assert aiv0.startswith("AIV0  running at") and f"{HERE}:{line_of(kernel, 'LOOP')}" in aiv0
    assert _no_core_left(clusters[0]) and threading.active_count() == threads


def test_the_thread_of_a_stopped_run_goes_on_undisturbed():
    """After the error, nothing of the interrupt is left in the thread: it runs Python and
    more runs (with and without the watchdog) as before."""
    def go():
        with pytest.raises(BudgetError):
            ptopipe.run(aiv=(loops_in_python, None), timeout=0.1)
        # past the watchdog's re-fire interval (an interrupt asked for meanwhile is raised at
        # the next bytecode after the sleep), then Python
        time.sleep(0.7)
        n = 0
        while n < 100_000:
            n += 1
        res = ptopipe.run(aiv=(one_add, None), timeout=30)
        return n, res.summary.cores["AIV0"]["instructions"]

    out = _in_thread(go)
    assert "error" not in out, repr(out.get("error"))
    assert out["value"][1] == 1


def test_an_interrupt_asked_for_as_the_watch_stops_never_escapes(monkeypatch):
    """The watchdog fires just as the run ends (here: while stop() takes the watcher's
    lock): the run still returns, and the thread never sees the interrupt."""
    real = bounds._WATCHER.disarm

    def late(dog):
        real(dog)
        if not dog.fired:
            dog.fired += 1
            dog.kick()                 # asked for after the run's last instruction
    monkeypatch.setattr(bounds._WATCHER, "disarm", late)

    def go():
        res = ptopipe.run(aiv=(one_add, None), timeout=30)
        n = 0
        for _ in range(200_000):       # would raise the interrupt here if it were left pending
            n += 1
        return res.summary.cores["AIV0"]["instructions"]

    out = _in_thread(go)
    assert "error" not in out, repr(out.get("error"))
    assert out["value"] == 1


def test_an_interrupt_as_the_run_takes_the_watchers_lock_leaves_the_watcher_working():
    """The watchdog fires at a run's deadline while that run, just finished, waits for the
    watcher's lock to stop its watch: the interrupt comes as soon as the run's thread has
    the lock.  The lock is released all the same, so later runs are still bounded."""
    w = bounds._WATCHER
    grab, held, box = threading.Event(), threading.Event(), {}

    def fires_late():
        grab.wait(5)
        dog = box["dog"]
        with w._cond:                # as the watcher thread does when it fires
            held.set()
            time.sleep(0.2)          # the run's thread now waits for the lock, in stop()
            dog.fired += 1
            dog.kick()

    def kernel():
        one_add()
        box["dog"] = w._dogs[-1]
        grab.set()
        held.wait(5)

    def go():
        threading.Thread(target=fires_late, daemon=True).start()
        try:
            ptopipe.run(aiv=(kernel, None), timeout=30)
        except BudgetError:          # (the run may report the late interrupt or not)
            pass
        with pytest.raises(BudgetError) as ei:
            ptopipe.run(aiv=(loops_in_python, None), timeout=0.1)
        return ei.value

    out = _in_thread(go)
    assert "error" not in out, repr(out.get("error"))
    assert_at(out["value"], loops_in_python, "LOOP")


# the watchdog's asynchronous Expired can land in a gc callback running on the thread
# (hypothesis installs one), where Python prints it as unraisable and drops it; the watchdog
# fires again until the run stops - what this test asserts
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_runs_in_two_threads_at_once_each_have_their_bound(monkeypatch):
    monkeypatch.setattr(bounds, "_REFIRE", 0.05)        # (such a dropped interrupt comes again sooner)
    def bounded(timeout, kernel):
        def go():
            t0 = time.perf_counter()
            try:
                ptopipe.run(aiv=(kernel, None), timeout=timeout)
            except BudgetError as e:
                return time.perf_counter() - t0, e
            return time.perf_counter() - t0, None
        return go

    results = {}

    def worker(name, fn):
        results[name] = _in_thread(fn)
    ths = [threading.Thread(target=worker, args=("short", bounded(0.1, loops_in_python)), daemon=True),
           threading.Thread(target=worker, args=("long", bounded(0.25, loops_on_instructions)), daemon=True)]
    for th in ths:
        th.start()
    for th in ths:
        th.join(30)
    assert not any(th.is_alive() for th in ths)          # both runs ended: each had a bound
    short, long_ = results["short"]["value"], results["long"]["value"]
    # each run was stopped by its own bound (the message names it), at its kernel's line
    assert "timeout=0.1 s" in short[1].what and "timeout=0.25 s" in long_[1].what
    assert_at(short[1], loops_in_python, "LOOP")
    assert_at(long_[1], loops_on_instructions, "LOOP")


# -- the kernel line, not a library's -------------------------------------------------------
def spins_forever():
    while True:
        pass


def waits_in_a_library():
    """Calls into ptopipe, which calls code outside ptopipe (here: queued data work; in
    real runs numpy's) that never returns: the kernel's line is the one reported."""
    one_add()
    cl = current_core().cluster
    cl.pending.append((spins_forever,))
    cl.sync()  # SYNC


@pytest.mark.parametrize("where", ["main", "thread"])
def test_an_interrupt_inside_a_library_ptopipe_called_names_the_kernel_line(where):
    def go():
        return ptopipe.run(aiv=(waits_in_a_library, None), timeout=0.1)
    if where == "main":
        with pytest.raises(BudgetError) as ei:
            go()
        err = ei.value
    else:
        err = _in_thread(go).get("error")
        assert isinstance(err, BudgetError), repr(err)
    assert_at(err, waits_in_a_library, "SYNC")
    aiv0 = next(ln for ln in err.details.splitlines() if ln.startswith("AIV0"))
    assert f"{HERE}:{line_of(waits_in_a_library, 'SYNC')}" in aiv0


# -- launches ---------------------------------------------------------------------------------
def spins_a_while():
    one_add()
    end = time.perf_counter() + 0.1
    while time.perf_counter() < end:  # SPIN
        pass


def test_the_timeout_covers_all_launches_together():
    """Each launch takes 0.1 s: a bound per launch (0.25 s) would stop none of the 40.  The
    bound falls inside a launch's spin but for the instants between launches (ptopipe's own
    code, which no kernel line names): on a loaded machine it may fall there, so up to three
    runs are made for the one that names the line - each of them stops at the bound."""
    for _ in range(3):
        with pytest.raises(BudgetError) as ei:
            ptopipe.run(aiv=(spins_a_while, None), launches=40, timeout=0.25)
        err = ei.value
        assert "timeout=0.25 s" in err.what
        if err.where is not None:
            break
    assert_at(err, spins_a_while, "SPIN")
    assert "of 40)" in err.details


def test_many_short_launches_stop_at_the_timeout():
    with pytest.raises(BudgetError) as ei:
        ptopipe.run(aiv=(one_add, None), launches=100_000, timeout=0.1)
    assert "timeout=0.1 s" in ei.value.what and "of 100000" in str(ei.value)


def test_a_run_whose_shared_deadline_passed_does_not_start():
    limit = bounds.Deadline(0.2, scope="command")
    ptopipe.run(aiv=(one_add, None), timeout=limit)
    time.sleep(0.25)
    with pytest.raises(BudgetError) as ei:
        ptopipe.run(aiv=(one_add, None), timeout=limit)
    assert ei.value.what == ("the command did not finish within --timeout 0.2 s of wall-clock time: "
                             "it passed before this run started")


# -- a kernel that would end the program ------------------------------------------------------
def exits_0():
    one_add()
    sys.exit(0)  # EXIT


def raises_exit_3():
    one_add()
    raise SystemExit(3)  # EXIT


class Halt(BaseException):
    """Not an Exception, not a KeyboardInterrupt."""


def raises_halt():
    one_add()
    raise Halt("stop")  # EXIT


@pytest.mark.parametrize("kernel,shown", [(exits_0, "SystemExit(0) (sys.exit)"),
                                          (raises_exit_3, "SystemExit(3) (sys.exit)"),
                                          (raises_halt, "Halt('stop')")])
@pytest.mark.parametrize("where", ["main", "thread"])
def test_a_kernel_ending_the_program_is_a_kernel_error(kernel, shown, where):
    def go():
        return ptopipe.run(cube_waits, (kernel, None), dict(fifo=ptopipe.gm_buffer(512)))
    if where == "main":
        with pytest.raises(KernelError) as ei:
            go()
        err = ei.value
    else:
        err = _in_thread(go).get("error")
        assert isinstance(err, KernelError), repr(err)
    assert err.what == f"the kernel {kernel.__name__} on AIV0 raised {shown}: a kernel cannot end the program or the run"
    assert_at(err, kernel, "EXIT")


def halts():
    raise Halt("from a library")


def exits_in_a_library():
    one_add()
    cl = current_core().cluster
    cl.pending.append((halts,))
    cl.sync()  # EXIT


def test_an_exit_inside_a_library_ptopipe_called_names_the_kernel_line():
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aiv=(exits_in_a_library, None))
    assert "raised Halt('from a library')" in ei.value.what
    assert_at(ei.value, exits_in_a_library, "EXIT")


# -- a kernel whose call runs none of its body -------------------------------------------------
def yields_a_tile():
    one_add()
    yield 1  # SUSPEND


async def awaits_nothing():  # SUSPEND
    one_add()


@pytest.mark.parametrize("kernel,kind", [(yields_a_tile, "a generator function (a yield in its body)"),
                                         (awaits_nothing, "a coroutine function (async def)")])
def test_a_generator_or_coroutine_kernel_is_a_kernel_error_at_its_yield(kernel, kind):
    # not a deadlock of the Cube waiting for a Vector core that "returned" at once
    with pytest.raises(KernelError) as ei:
        ptopipe.run(cube_waits, (kernel, None), dict(fifo=ptopipe.gm_buffer(512)))
    assert ei.value.what == (f"the kernel {kernel.__name__} on AIV0 is {kind}: calling it ran none of its "
                             "body, so the core issued no instruction")
    assert_at(ei.value, kernel, "SUSPEND")


def test_a_keyboard_interrupt_in_a_kernel_is_still_one():
    def k():
        one_add()
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        ptopipe.run(aiv=(k, None))


@pl.aic
def idle():
    return


@pl.aiv
def copy(x: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32]):
    t = pl.load(x, [0, 0], [16, 16])
    pl.store(t, [0, 0], out)


def build(mode):
    if mode == "exit":
        raise SystemExit(3)  # BUILD
    return pl.program(idle, copy, name="copy")


def test_system_exit_from_a_dsl_kernel_is_a_kernel_error():
    aic, aiv = kernels(build)
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    res = ptopipe.run(aic, (aiv, None), dict(x=x, out=np.zeros_like(x), mode="ok"))
    assert np.array_equal(res.outputs["out"], x)
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aic, (aiv, None), dict(x=x, out=np.zeros_like(x), mode="exit"))
    assert "raised SystemExit(3)" in ei.value.what
    assert_at(ei.value, build, "BUILD")


# -- the command line -------------------------------------------------------------------------
KERNEL = textwrap.dedent('''\
    import sys
    import time

    import numpy as np
    import ptopipe
    from ptopipe.isa import *


    def vector(out, mode):
        t = Tile(TileType.Vec, float32, 8, 8, addr=0x0)
        TADDS(t, t, 1.0)
        TADDS(t, t, 1.0)
        if mode == "sleep":
            time.sleep(10000)  # SLEEP
        if mode == "exit":
            sys.exit(0)  # EXIT
        time.sleep(0.6 if mode == "slow" else 0)  # SLOW
        TSTORE(out, t)


    def make_args(rng, mode="ok"):
        return dict(out=np.zeros((8, 8), np.float32), mode=mode)


    def golden(args, **_):
        return {"out": np.full((8, 8), 2.0, np.float32)}


    def other_lane():  # a second core: check explores schedules of two
        pass


    VARIANTS = {"default": dict(mode="ok"), "sleep": dict(mode="sleep"), "exit": dict(mode="exit"),
                "slow": dict(mode="slow")}
    SCENARIO = ptopipe.Scenario("sleepy", None, (vector, other_lane), make_args, golden, VARIANTS)
''')


@pytest.fixture(scope="module")
def kernel_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("run_bounds") / "sleepy_kernel.py"
    p.write_text(KERNEL)
    return p


def _marker_line(marker: str) -> int:
    return next(i for i, ln in enumerate(KERNEL.splitlines(), 1) if ln.rstrip().endswith("# " + marker))


@pytest.mark.parametrize("argv,error,marker", [
    (("--variant", "sleep", "--timeout", "0.5"), "BudgetError", "SLEEP"),
    (("--variant", "exit"), "KernelError", "EXIT"),
])
def test_cli_run_reports_the_kernel_line(kernel_file, capsys, monkeypatch, no_hang, argv, error, marker):
    p = _cli_here(capsys, monkeypatch, "run", kernel_file, *argv)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert f"error: {error}" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert f"sleepy_kernel.py:{_marker_line(marker)}" in p.stderr, p.stderr


def test_cli_timeout_bounds_the_whole_command(kernel_file, capsys, monkeypatch, no_hang):
    """--launches 100000 with --timeout 0.3: the command ends after about 0.3 s."""
    p = _cli_here(capsys, monkeypatch, "run", kernel_file, "--launches", "100000", "--timeout", "0.3")
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "error: BudgetError: the command did not finish within --timeout 0.3 s" in p.stderr, p.stderr
    assert "of 100000" in p.stderr and "Traceback" not in p.stderr


def test_cli_timeout_bounds_every_run_of_the_command_together(kernel_file, capsys, monkeypatch, no_hang):
    """check runs the default schedule and 2 explored ones, 0.6 s each: with --timeout 1
    for the whole command, the second run is stopped - the check did not finish (exit 1),
    which is no failure of the kernel: TIMEOUT, with where the unfinished run was and how to
    run that schedule alone."""
    p = _cli_here(capsys, monkeypatch, "check", kernel_file, "--variant", "slow", "--schedules", "2", "--timeout", "1")
    assert p.returncode == 1, (p.stdout, p.stderr)
    out = p.stdout + p.stderr
    assert "TIMEOUT" in out and "--timeout 1 s ran out after 1 passing schedule(s)" in out, out
    assert "FAIL" not in out and "BudgetError" not in out, out
    assert f"sleepy_kernel.py:{_marker_line('SLOW')}" in out and "Traceback" not in out, out
    assert "run it alone: ptopipe check" in out and "--replay" in out, out


def test_a_timeout_that_stops_no_kernel_line_names_no_place():
    """The bound can pass while a running core is in ptopipe's own code (between launches, in a
    loaded machine): no kernel line then, and the error says so - not ``at None``."""
    from greenlet import greenlet
    from ptopipe.sim.core import CoreState
    cl = Cluster("a2a3")
    cl.aiv0.state = CoreState.RUNNING
    err = greenlet(bounds.timed_out).switch(cl, bounds.Deadline(0.25))   # (no kernel frame above it)
    assert err.where is None and "None" not in str(err), str(err)
    assert "AIV0  running outside its kernel's lines (ptopipe's own code) (0 instructions" in err.details
