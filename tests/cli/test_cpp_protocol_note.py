"""The note a clean default-protocol C++ run or check gets when the kernel fails under
pto-isa's protocol (ptopipe.driver.cpp.pto_isa_note): which reruns it makes and what it says,
with the runs stubbed (tests/cpp/test_cpp_kernels.py runs a real kernel through the command)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from ptopipe.driver import cpp
from ptopipe.errors import BudgetError, DataRaceError, DeadlockError


def _note(summary, protocol=None, no_checks=False, causal=False):
    """The note for a run (``summary``) or check (None) of the command's options."""
    return cpp.pto_isa_note("k.cpp", None, None, None, "a5", protocol=protocol, checks=not no_checks,
                            pipes=summary is None or bool(summary.pipes),
                            causal_clean=summary is None or causal, run_kwargs={})


def _stub(monkeypatch, fails: dict):
    """cpp.run_file raising ``fails[protocol]`` (when given) and recording each call."""
    calls = []

    def run_file(path, aic, aiv, pairs, platform, protocol, causal, **kw):
        calls.append((protocol, causal))
        if protocol in fails:
            raise fails[protocol]
        return {}, None
    monkeypatch.setattr(cpp, "run_file", run_file)
    return calls


PIPES = SimpleNamespace(pipes=[{"name": "C2V pipe FlagID 0"}])
RACE = DataRaceError("slot 0 raced", where="k.cpp:12")


def test_a_race_only_under_pto_isa_is_named_with_its_line(monkeypatch):
    calls = _stub(monkeypatch, {"pto-isa": RACE})
    note = _note(PIPES)
    assert note.startswith("under --protocol pto-isa (what pto-isa's TPipe does on a5) this kernel races: "
                           "DataRaceError: slot 0 raced (at k.cpp:12)"), note
    assert calls == [("pto-isa", True), ("spec", True)]


def test_a_failure_of_the_causal_order_under_spec_too_is_not_blamed_on_pto_isa(monkeypatch):
    _stub(monkeypatch, {"pto-isa": RACE, "spec": DeadlockError("stuck", where="k.cpp:30")})
    note = _note(PIPES)
    assert note.startswith("in the causal order `check` uses this kernel fails: DeadlockError: stuck (at k.cpp:30)")


@pytest.mark.parametrize("kw, summary", [(dict(causal=True), PIPES), ({}, None)], ids=["run --causal", "check"])
def test_a_run_already_clean_in_the_causal_order_is_rerun_under_pto_isa_only(monkeypatch, kw, summary):
    calls = _stub(monkeypatch, {"pto-isa": RACE})
    assert "this kernel races" in _note(summary, **kw)
    assert calls == [("pto-isa", True)]


@pytest.mark.parametrize("kw, summary, fails", [
    (dict(protocol="spec"), PIPES, {"pto-isa": RACE}),                       # asked for a protocol
    (dict(no_checks=True), PIPES, {"pto-isa": RACE}),                        # checkers off
    ({}, SimpleNamespace(pipes=[]), {"pto-isa": RACE}),                      # no pipe: nothing differs
    ({}, PIPES, {}),                                                         # clean under pto-isa
    ({}, PIPES, {"pto-isa": BudgetError("out of time", where="k.cpp")}),    # no finding
], ids=["protocol", "no-checks", "no-pipe", "clean", "budget"])
def test_no_note(monkeypatch, kw, summary, fails):
    _stub(monkeypatch, fails)
    assert _note(summary, **kw) is None
