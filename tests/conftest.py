"""Shared fixtures of the test suite."""
import compileall
import gc
import os
import pathlib
import signal

import pytest

# numpy's BLAS with one thread, as the ptopipe command runs it (ptopipe._startup; the tests run
# ptopipe as a library, which leaves BLAS alone): the kernels' tile-sized matrices gain nothing
# from a second thread, whose idle spinning on the other core adds about a tenth to the suite's
# CPU time.  Set before numpy loads.
for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# ptopipe compiled to bytecode before anything imports it: this process and the ``python -m
# ptopipe ...`` processes the tests start read it, rather than each compiling every module it
# imports (under PYTHONDONTWRITEBYTECODE, as CI sets it, none would keep what it compiled)
compileall.compile_dir(str(pathlib.Path(__file__).resolve().parents[1] / "ptopipe"), quiet=1)

# the collector runs less often than Python's default (700, 10, 10): the tests' runs make many
# short-lived objects (a run's cluster, its tiles, the compiler's IR), so the default runs the
# older generations' collections often, each scanning what the tests keep alive; measured on
# tests/sim, passes and codegen, twice, against the default back to back: 12-13 % less CPU for
# 60-130 MB more peak memory
gc.set_threshold(5000, 20, 20)

import layers  # noqa: E402,F401  (the layer directories on sys.path)
from ptopipe.ir.core import gc_paused  # noqa: E402


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    """The collected tests (thousands of items, their parameters and the modules they come
    from) live to the end of the session: they are collected with the garbage collector
    paused (its collections would only rescan them as they grow) and then moved to its
    permanent generation, so that the full collections the tests' runs trigger do not
    rescan them every time."""
    with gc_paused():
        yield
    gc.collect()
    gc.freeze()
    _FROZEN_AT[0] = gc.get_stats()[2]["collections"]


#: the number of full collections when the collector's survivors were last frozen
_FROZEN_AT = [0]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Between two test modules, once two full collections have run since the last freeze,
    one more is made and what survives it frozen too: what the modules so far left alive
    (their globals and parameters, the package's caches) is then not rescanned by every later
    full collection, and with a smaller older generation those come more often, freeing the
    runs' cyclic garbage sooner (tests/passes, sim, isa and codegen: the collector's time from
    8.7 to 5.4 s, the peak memory from 480 to 280 MB)."""
    yield
    _verify_variable_back()
    if nextitem is not None and nextitem.path != item.path and \
            gc.get_stats()[2]["collections"] >= _FROZEN_AT[0] + 2:
        gc.collect()
        gc.freeze()
        _FROZEN_AT[0] = gc.get_stats()[2]["collections"]


@pytest.fixture
def no_hang():
    """A hang fails the test instead of stalling the suite (deadlocks must be reported)."""
    def boom(*_):
        raise AssertionError("test did not finish within 30 s: the simulator hung")
    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.fixture
def every_schedule(monkeypatch):
    """Runs on the exact engine, whose check explores every schedule it is asked for: for
    tests of the explorer itself, whose clean kernels the periodic engine (PTOPIPE_ENGINE=
    periodic) would show determinate after the default schedule, exploring none
    (ptopipe.sim.determinacy).  Worker processes inherit it."""
    monkeypatch.setenv("PTOPIPE_ENGINE", "exact")


#: the compiler's test directories: every pipeline their tests run checks, after every pass,
#: each IR property the IR should have (as ``ptopipe compile --verify-each``); elsewhere the
#: pipeline runs as a user's does (the checks cost about as much as the compile itself)
COMPILER_TESTS = ("ir", "language", "passes")
#: the verify-each variable as it was before a compiler test set it (given back after the test)
_VERIFY_BEFORE = []


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """A test of a compiler directory runs with the verify-each variable set, from before its
    fixtures until after their teardown (a test's monkeypatch may drop it, as outside the
    tests).  A hook, not an autouse fixture: a fixture in the closure of each of the suite's
    7,000 tests cost ~0.06 ms apiece (0.4 s of its CPU) for the fifth where it sets something."""
    if item.path.parent.name in COMPILER_TESTS:
        from ptopipe.passes.manager import VERIFY_EACH_ENV
        _VERIFY_BEFORE.append((VERIFY_EACH_ENV, os.environ.get(VERIFY_EACH_ENV)))
        os.environ[VERIFY_EACH_ENV] = "1"


def _verify_variable_back() -> None:
    """The verify-each variable as it was before the test that set it."""
    while _VERIFY_BEFORE:
        name, before = _VERIFY_BEFORE.pop()
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """Hypothesis's own modules are imported as installed, not assertion-rewritten: pytest marks
    every module of a distribution that registers a plugin (hypothesis does) for rewriting,
    so each of the ~80 that the tests import was parsed, rewritten and compiled again on every
    run (under PYTHONDONTWRITEBYTECODE none is kept) - half a second of the suite's CPU for
    better messages from asserts inside hypothesis.  The tests' own modules are still
    rewritten.  (Done before hypothesis's plugin imports hypothesis, in its own configure;
    nothing happens if a pytest keeps its marks elsewhere.)"""
    _ctrl_c_as_from_a_terminal()
    hook = getattr(config.pluginmanager, "rewrite_hook", None)
    marked = getattr(hook, "_must_rewrite", None)
    if isinstance(marked, set):
        marked.discard("hypothesis")
        getattr(hook, "_marked_for_rewrite_cache", {}).clear()


def _ctrl_c_as_from_a_terminal() -> None:
    """Ctrl-C reaches the suite as it reaches a command typed at a terminal: a harness that
    starts the suite with SIGINT ignored (a shell's background job) would leave it ignored in
    this process and in every process the tests start - Python then installs no
    KeyboardInterrupt for it - and the tests of what a Ctrl-C does would test nothing.  (A
    caught signal is reset to its default by exec, so the tests' commands get Python's own.)"""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
