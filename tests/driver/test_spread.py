"""A check's explored schedules spread over workers (``ptopipe.driver.spread``) give the
result and the printed report of running them one after the other (``explore``): the same
runs, first failure and its schedule, distinct interleavings, ``complete``, warnings, on a
passing kernel, kernels failing only under an explored schedule (pct, random, exhaustive),
an exhaustive search that runs out early in ``mix``, pct guesses of k that miss, a kernel's
own exception that does not pickle, the runs' warnings, the command's --timeout, and the
command's printed report for .py and .pto kernels; errors survive pickling."""
import contextlib
import io
import os
import pickle
import time

import pytest

from ptopipe import Scenario, errors
from ptopipe.cli import main as cli_main
from ptopipe.cli.errors import report_exception
from ptopipe.driver import spread
from ptopipe.driver.check import explore_variant
from ptopipe.driver.loader import load_scenarios, scenario_at
from ptopipe.errors import BudgetError, DeadlockError, PtoPipeError
from ptopipe.isa import explore as explore_module
from ptopipe.isa.explore import ScheduleSpec, explore
from ptopipe.sim.bounds import Deadline

pytestmark = pytest.mark.usefixtures("every_schedule")   # (the explorer's machinery: every schedule run)

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
S1 = os.path.abspath(os.path.join(ROOT, "examples", "scenarios", "s1_cv_split.py"))


def _misuse(name):
    return os.path.abspath(os.path.join(ROOT, "examples", "misuse", name))


def _fields(res):
    first = res.first
    return (res.runs, res.passed, sorted(res.digests), res.complete, res.events, res.warnings,
            res.one_core, res.mode,
            None if first is None else (first[0], type(first[1]).__name__, str(first[1]),
                                        getattr(first[1], "findings", None)))


CASES = {   # path, explore() keywords; what the serial run gives
    "passes": (S1, dict(schedules=12)),
    "pct:1 fails": (_misuse("m31_lane_init_overwrite.py"), dict(schedules=8, mode="pct", checks=False)),
    "random:2 fails": (_misuse("m10_schedule_dependent.py"),
                       dict(schedules=8, mode="random", platform="a5", protocol="pto-isa")),
    "a deviation fails": (_misuse("m29_prefetch_before_wait.py"), dict(schedules=20, mode="exhaustive", checks=False)),
    "exhaustive runs out in mix": (S1, dict(schedules=80, depth=1, variant="f32_ud_d1_m16")),
    "exhaustive completes": (S1, dict(schedules=40, mode="exhaustive", depth=1, variant="f32_lr_d1_m16")),
}
EXPECT = {"passes": (13, None), "pct:1 fails": (3, ScheduleSpec("pct", 1, 3, 77)), "random:2 fails": (4, 2),
          "a deviation fails": (14, ScheduleSpec("exhaustive", deviations=((11, 1),))),
          "exhaustive runs out in mix": (81, None), "exhaustive completes": (22, None)}


@pytest.mark.parametrize("case", list(CASES))
def test_spread_schedules_give_the_serial_result(case):
    path, kw = CASES[case]
    sc = load_scenarios(path)[0]
    steps = []
    # one worker: the units run here, in turn - the plan, its waves and the rebuilt serial
    # order are what is checked (a real pool: the command-line test below)
    got = spread.explore_spread(sc, (scenario_at, path, 0), workers=1, min_seconds=0,
                                progress=lambda done, total: steps.append((done, total)), **kw)
    want = explore(sc, **kw)
    assert _fields(got) == _fields(want)
    assert (want.runs, want.first and want.first[0]) == EXPECT[case]
    if case == "exhaustive runs out in mix":
        assert want.distinct < want.runs and not want.complete
    if case == "exhaustive completes":
        assert want.complete
    done = [d for d, _ in steps]
    assert done == sorted(done) and done[-1] >= want.runs - 1


@pytest.mark.parametrize("case", ["passes", "pct:1 fails", "a deviation fails", "exhaustive runs out in mix"])
def test_a_plan_made_a_few_schedules_at_a_time_gives_the_serial_result(case, monkeypatch):
    """The plan rebuilds the serial order only as far as its window, doubled each time the
    runs fill it: with a window of 3 schedules, every case above in many waves, the same."""
    monkeypatch.setattr(spread, "WINDOW", 3)
    waves = []
    run_units = spread.run_units
    monkeypatch.setattr(spread, "run_units", lambda fn, units, *a: waves.append(units) or run_units(fn, units, *a))
    path, kw = CASES[case]
    sc = load_scenarios(path)[0]
    got = spread.explore_spread(sc, (scenario_at, path, 0), workers=1, min_seconds=0, **kw)
    assert _fields(got) == _fields(explore(sc, **kw))
    assert sum(len(u.specs) for u in waves[0]) <= 3
    assert len(waves) > 1 or got.failures


def test_the_plan_of_a_huge_check_holds_a_window_not_every_schedule():
    """--schedules 10**6 (or 10**20): the first waves are planned from the first schedules of
    the serial order - every one of them was made, run after run, before anything ran."""
    plan = spread._Plan("mix", 10 ** 6, 0, 3)
    first = plan.wave()
    plan.add([spread.Record(s, 0, 40, () if s.mode == "exhaustive" else None, None, None, "", "") for s in first])
    t0 = time.monotonic()
    todo = plan.wave()
    assert 0 < len(todo) <= spread.WINDOW and time.monotonic() - t0 < 5


def test_pct_schedules_whose_event_count_grows_are_run_again_with_the_serial_k(monkeypatch):
    run = explore_module.run_schedule

    def more_events_each_seed(target, spec, *a, policy=None, **kw):
        res = run(target, spec, *a, policy=policy, **kw)
        if policy is not None and spec.mode == "pct":
            policy.events += 5 * spec.seed          # (as if later runs saw more visible events)
        return res
    monkeypatch.setattr(explore_module, "run_schedule", more_events_each_seed)
    ran = []
    run_one = spread._run_one
    monkeypatch.setattr(spread, "_run_one", lambda sc, job, spec, kw: ran.append(spec) or run_one(sc, job, spec, kw))
    sc = load_scenarios(S1)[0]
    kw = dict(schedules=8, mode="pct", variant="f32_ud_d1_m16")
    got = spread.explore_spread(sc, (scenario_at, S1, 0), workers=1, min_seconds=0, **kw)
    assert _fields(got) == _fields(explore(sc, **kw))
    # pct:1 and on ran first with pct:0's event count as k; once that guess missed, the rest
    # ran again as a chain, each k from the runs before it: no schedule more than twice
    times = [sum(s.seed == seed for s in ran) for seed in range(8)]
    assert times[0] == 1 and max(times) == 2
    assert [s.k for s in ran if s.seed == 7][-1] == [s.k for s in ran if s.seed == 1][-1] + 6 * 5


#: the run warnings of SKEWED (what a .pto kernel's executor adds its warnings to)
WARNED: list = []


_S1 = load_scenarios(S1)[0]


def _skewed_cube(a, b, fifo, M, depth, split):
    from ptopipe.isa.context import current_core
    WARNED.append(f"k.py:1:1: the cube started at cycle {current_core().clock}")   # (random: skewed)
    _S1.aic(a, b, fifo, M, depth, split)


_SKEWED = Scenario("skewed", _skewed_cube, _S1.aiv, _S1.make_args, _S1.golden, {"default": {"M": 16}})


def skewed_at() -> tuple:
    """A Scenario whose runs add a warning naming the cycle the cube starts at (random
    schedules start the cores at random offsets), with its warnings list."""
    return _SKEWED, WARNED


def test_the_explored_runs_warnings_come_in_the_serial_order():
    serial = explore(_SKEWED, schedules=10, mode="random")
    want = list(dict.fromkeys(WARNED))
    WARNED.clear()
    got = spread.explore_spread(_SKEWED, (skewed_at,), schedules=10, mode="random", workers=1,
                                min_seconds=0, run_warnings=WARNED)
    assert _fields(got) == _fields(serial)
    assert list(dict.fromkeys(WARNED)) == want and len(want) > 3


def test_a_small_check_stays_in_this_process(monkeypatch):
    monkeypatch.setattr(spread, "run_units", lambda *a, **k: pytest.fail("a pool for a short check"))
    sc = load_scenarios(S1)[0]
    got = spread.explore_spread(sc, (scenario_at, S1, 0), schedules=20, workers=2)
    assert _fields(got) == _fields(explore(sc, schedules=20))


class Unpicklable(Exception):
    """A kernel's own exception that cannot be sent from a worker (it holds a lambda)."""

    def __init__(self, what):
        super().__init__(what)
        self.hook = lambda: None


def test_a_kernel_exception_in_an_explored_schedule_reads_as_in_the_serial_run(monkeypatch):
    run = explore_module.run_schedule
    bad = ScheduleSpec("random", 1)

    def kernel_raises(target, spec, *a, **kw):
        if spec == bad:
            raise Unpicklable("the kernel's own error")         # (this line is the report's)
        return run(target, spec, *a, **kw)
    monkeypatch.setattr(explore_module, "run_schedule", kernel_raises)
    monkeypatch.setattr(spread, "MIN_SECONDS", 0)
    sc = load_scenarios(S1)[0]
    kw = dict(schedules=9, mode="random")
    got = explore_variant(sc, "default", "a2a3", "spec", source=(scenario_at, S1, 0), workers=2, **kw)
    want = explore_variant(sc, "default", "a2a3", "spec", workers=1, **kw)
    assert (got.runs, got.passed, got.first[0]) == (want.runs, want.passed, want.first[0]) == (3, 2, 1)
    sent = got.first[1]                 # (from a worker: a stand-in, as it does not pickle)
    assert isinstance(sent, spread.KernelRaised) and type(sent).__name__ == "Unpicklable"
    assert errors.user_frame(sent).lineno == errors.user_frame(want.first[1]).lineno
    assert _printed(sent) == _printed(want.first[1])
    assert "the kernel's own error" in _printed(sent) and "raise Unpicklable" in _printed(sent)


def _printed(e) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        report_exception(e)
    return buf.getvalue()


@pytest.mark.parametrize("cls", [c for c in vars(errors).values()
                                 if isinstance(c, type) and issubclass(c, PtoPipeError)])
def test_errors_survive_pickling(cls):
    e = cls("what went wrong", where="k.py:3", fix="do this", details="more", findings=[{"kind": "x"}])
    e.values = {"n": 3}
    e.run_cluster = lambda: None                    # (a traced run's cluster: not sent)
    back = pickle.loads(pickle.dumps(spread.portable(e)))
    assert type(back) is cls and back.to_dict() == e.to_dict() and str(back) == str(e)
    assert not hasattr(back, "run_cluster")


def test_a_worker_keeps_the_commands_deadline():
    limit = Deadline(0.05, scope="command")
    job = spread._Job((scenario_at, S1, 0), "default", "a2a3", "spec", 0, {"timeout": limit, "causal": True})
    unit, = spread._units(job, [ScheduleSpec("random", 0)], 1)
    assert "timeout" not in unit.job.run_kwargs and unit.deadline[:2] == (0.05, "command")
    time.sleep(0.06)
    rec, = spread.run_unit(pickle.loads(pickle.dumps(unit)))
    assert isinstance(rec.error, BudgetError)
    bound = next(f for f in rec.error.findings if f.get("bound") == "timeout")
    assert bound["scope"] == "command" and bound["limit"] == 0.05


def test_a_unit_whose_worker_died_twice_is_its_first_schedules_failure():
    job = spread._Job((scenario_at, S1, 0), "default", "a2a3", "spec", 0, {})
    unit = spread.Unit(job, (ScheduleSpec("random", 3), ScheduleSpec("random", 4)), None)
    rec, = spread._lost(unit, RuntimeError("worker died"))
    assert rec.spec == ScheduleSpec("random", 3) and rec.stops
    assert "the worker process running schedule random:3 died" in rec.error.what
    assert {"kind": "schedule", "seed": 3} in rec.error.findings


@pytest.mark.parametrize("argv", [
    ["check", _misuse("m31_lane_init_overwrite.py"), "--no-checks", "--schedules", "6"],
    ["check", _misuse("m10_schedule_dependent.py"), "--platform", "a5", "--protocol", "pto-isa",
     "--explore", "random", "--schedules", "6", "--json"],
    ["check", os.path.join(ROOT, "tests", "pto_corpus", "x_both_split1_a3.pto"), "--schedules", "6"],
])
def test_the_command_prints_the_serial_report_on_two_workers(argv, monkeypatch):
    monkeypatch.setattr(spread, "MIN_SECONDS", 0)
    calls = []
    monkeypatch.setattr(spread, "run_units", lambda *a, **k: calls.append(1) or run_units(*a, **k))
    serial, two = _cli([*argv, "--workers", "1"]), _cli([*argv, "--workers", "2"])
    assert calls and serial == two and serial[0] == (0 if argv[1].endswith(".pto") else 1)


def _cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main(argv)
    return code, out.getvalue(), err.getvalue()


from ptopipe.driver.engine import run_units  # noqa: E402  (the pool the test above counts)


def test_the_command_runs_blas_with_one_thread_unless_told(monkeypatch):
    # (idle BLAS threads spin on the cores a pool's other workers run on)
    from ptopipe import _startup
    monkeypatch.setattr(_startup, "_is_command", lambda: True)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "4")
    try:
        _startup.guard()
    finally:
        _startup.release()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1" and os.environ["MKL_NUM_THREADS"] == "4"


def test_a_one_file_library_spreads_its_schedules_a_library_of_several_does_not(tmp_path, monkeypatch):
    monkeypatch.setattr(spread, "MIN_SECONDS", 0)
    parent, calls = os.getpid(), []

    def not_in_a_worker(*a, **k):
        assert os.getpid() == parent, "a pool inside a library's worker process"
        calls.append(1)
        return run_units(*a, **k)
    monkeypatch.setattr(spread, "run_units", not_in_a_worker)
    m31 = _misuse("m31_lane_init_overwrite.py")
    opts = ["--no-checks", "--schedules", "6", "--junit", str(tmp_path / "j.xml")]
    serial, two = _cli(["check", m31, *opts, "--workers", "1"]), _cli(["check", m31, *opts, "--workers", "2"])
    assert calls and serial == two and "1 of 1 failed" in two[1]
    # two files on two workers: each file's schedules one after the other, in its worker
    serial = _cli(["check", m31, S1, *opts, "--workers", "1"])
    assert _cli(["check", m31, S1, *opts, "--workers", "2"]) == serial and "1 of 2 failed" in serial[1]


def test_a_ctrl_c_ends_the_pool_at_once_and_its_workers_leave_sigint_to_the_command():
    """Workers ignore SIGINT (a terminal sends it to the whole process group); the command's
    KeyboardInterrupt terminates them without waiting for the units under way (which sleep
    8 s here: a regression fails on the time taken, it cannot hang)."""
    import multiprocessing
    import signal
    assert run_units(signal.getsignal, [signal.SIGINT] * 2, None, workers=2) == [signal.SIG_IGN] * 2

    def ctrl_c(done, total):
        raise KeyboardInterrupt
    before = set(multiprocessing.active_children())     # (other tests' pools are not this one's)
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_units(time.sleep, [0, 8, 8], None, workers=2, progress=ctrl_c)
    assert time.monotonic() - t0 < 4
    # (the pool's manager thread may be reaping a terminated worker this instant: a child
    # that thread waited for can still look alive here for a moment)
    left = set(multiprocessing.active_children()) - before
    while left and time.monotonic() - t0 < 4:
        time.sleep(0.05)
        left = set(multiprocessing.active_children()) - before
    assert not left


def test_a_ctrl_c_while_the_pool_works_leaves_no_thread_of_it_behind():
    """A Ctrl-C while the command waits for its workers ends the pool's manager thread too:
    left alive, the command's exit would name it as a thread the kernel file left running."""
    import signal
    import threading
    before = set(threading.enumerate())
    main = threading.main_thread().ident
    timer = threading.Timer(0.3, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        run_units(time.sleep, [8, 8, 8], None, workers=2)
    timer.join()
    left = [t for t in threading.enumerate() if t not in before and not t.daemon and t.is_alive()]
    assert not left


def test_an_interrupted_check_says_how_many_schedules_had_finished(monkeypatch):
    run, calls = explore_module.run_schedule, []

    def ctrl_c_in_the_fourth_run(*a, **kw):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return run(*a, **kw)
    monkeypatch.setattr(explore_module, "run_schedule", ctrl_c_in_the_fourth_run)
    code, _, err = _cli(["check", S1, "--schedules", "5", "--workers", "1"])
    assert code == 130
    assert err.splitlines()[-1] == "interrupted: 3 of 6 schedules of default had finished"


def _timed_out():
    return BudgetError("the command did not finish within --timeout 3 s of wall-clock time",
                       findings=[{"bound": "timeout", "scope": "command", "limit": 3.0, "core": "AIC"}])


@pytest.mark.parametrize("failing", [None, 6])
def test_a_timeout_cut_counts_every_schedule_the_workers_finished(failing):
    # a parallel check stopped by --timeout reported only the unbroken prefix of passes in the
    # serial order (here 1 + 2), though the workers had finished most schedules after the cut
    from ptopipe.driver.check import variant_report
    from ptopipe.isa.explore import ExploreResult
    plan = spread._Plan("random", 10, 0, 1)
    found = DeadlockError("deadlock", where="k.py:3")

    def record(seed):
        error = _timed_out() if seed in (2, 9) else found if seed == failing else None
        return spread.Record(ScheduleSpec("random", seed), 100 + seed, 5, None, error, None, "", "")
    plan.add([record(s) for s in range(10)])
    res = plan.result(ExploreResult(runs=1, passed=1, mode="random"), [])
    if failing is None:
        assert (res.runs, res.passed, res.distinct) == (10, 9, 9)       # (the default + 8; random:2 stopped)
        rep = variant_report("k", "default", "a2a3", "spec", res)
        assert rep["failure"]["what"] == ("not finished: --timeout 3 s ran out after 9 passing schedule(s), no "
                                          "failure found in them; the schedule under way then did not finish")
    else:                                   # a failure the workers found after the cut is the check's
        assert (res.passed, res.first) == (8, (failing, found))


def test_a_pool_with_a_tick_reports_the_units_under_way_while_they_run():
    # a pool reported only units that had ended, in their order: a long first unit hid the rest
    calls = []
    got = run_units(time.sleep, [0.6, 0.05, 0.05], None, workers=2, tick=0.1,
                    progress=lambda done, total, under_way=None: calls.append((done, total, under_way)))
    assert got == [None] * 3
    assert any(c[2] == [0] and c[0] == 2 for c in calls), calls     # (the short ones ended first)
    assert calls[-1][:2] == (3, 3)
