"""Shared fixtures of the test suite."""
import signal

import pytest

import layers  # noqa: F401  (the layer directories on sys.path)


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


@pytest.fixture(autouse=True)
def verify_every_property(monkeypatch):
    """Every pipeline a test runs checks, after every pass, each IR property the IR should
    have (``PassManager(verify_properties=True)``, as ``ptopipe compile --verify-each``)."""
    from ptopipe.passes.manager import VERIFY_EACH_ENV
    monkeypatch.setenv(VERIFY_EACH_ENV, "1")
