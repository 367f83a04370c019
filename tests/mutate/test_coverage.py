"""Checker coverage (``ptopipe mutate``): each mutant of a kernel run through the kernel's own
checks - caught with the error class and line of the first finding, or reported as a
survivor - in the same order and with the same verdicts in one process or a pool."""
import json
import os

import pytest

from ptopipe.cli import main as cli_main
from ptopipe.errors import ConfigError
from ptopipe.mutate import CAUGHT, SURVIVED, Job, check_mutant, coverage, mutants

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
S1 = os.path.join("examples", "scenarios", "s1_cv_split.py")


def _line(path, needle):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        (k,) = [k for k, text in enumerate(f, 1) if needle in text]
    return k


#: what coverage's progress said while s1_coverage ran: (done, total, note)
NOTES = []


@pytest.fixture(scope="module")
def s1_coverage():
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return coverage(Job(S1, variant="default", schedules=2),
                        progress=lambda done, total, note="": NOTES.append((done, total, note)))
    finally:
        os.chdir(cwd)


def test_progress_names_the_run_under_way_of_the_kernels_own_check_then_of_each_mutant(s1_coverage):
    # it said only how many mutants had ended: nothing during the kernel's own check, nor
    # during a long mutant
    n = len(s1_coverage.verdicts)
    assert NOTES[:3] == [(0, n, f"the kernel's own check first: variant default, run {k} of 3") for k in (1, 2, 3)]
    first = s1_coverage.verdicts[0].mutant
    assert NOTES[3] == (0, n, f"line {first.line} {first.name}: variant default, run 1 of 3")
    assert NOTES[-1] == (n, n, "")
    assert [d for d, _, _ in NOTES] == sorted(d for d, _, _ in NOTES)


def test_past_the_commands_timeout_a_mutant_is_not_checked_and_not_counted():
    from ptopipe.mutate import NOT_CHECKED, Coverage
    from ptopipe.sim.bounds import Deadline
    limit = Deadline(1.0, scope="command").portable()
    late = Job(os.path.join(ROOT, S1), variant="default", schedules=0, deadline=limit[:2] + (limit[2] - 2,))
    m = mutants(open(late.path, encoding="utf-8").read())[0]
    v = check_mutant(late, m)
    assert (v.status, v.error) == (NOT_CHECKED, "BudgetError") and "--timeout 1 s" in v.what
    cov = Coverage(S1, "default", "a2a3", "spec", 0, [v, check_mutant(Job(late.path, variant="default",
                                                                          schedules=0), m)])
    assert (cov.caught, cov.counted, cov.not_checked, cov.to_dict()["not_checked"]) == (1, 1, 1, 1)


def test_mutates_timeout_bounds_the_whole_command_as_checks_does(capsys):
    # it bounded each run: a kernel whose runs it cut was refused as failing its own checks
    from ptopipe.cli import build_parser
    assert cli_main(["mutate", os.path.join(ROOT, S1), "--variant", "default", "--schedules", "0",
                     "--timeout", "0.001", "--workers", "1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: BudgetError: the command did not finish within --timeout 0.001 s of "
                          "wall-clock time"), err
    with pytest.raises(SystemExit):
        build_parser().parse_args(["mutate", "--help"])
    assert "wall-clock bound of the whole command, as run's and check's" in " ".join(capsys.readouterr().out.split())


def test_every_mutant_of_s1_is_caught_at_the_line_of_its_finding(s1_coverage):
    got = {(v.mutant.line, v.mutant.name): (v.status, v.error, v.where) for v in s1_coverage.verdicts}
    pop, free, push = _line(S1, "TPOP(pipe"), _line(S1, "TFREE(pipe"), _line(S1, "TPUSH(pipe")
    vec_pipe = _line(S1, "sub = get_subblockid()") + 2          # the Vector kernel's TPipe
    assert got[free, "drop-tfree"] == (CAUGHT, "LeakError", f"{S1}:{pop}")
    assert got[free, "tfree-before-use"] == (CAUGHT, "ProtocolError", f"{S1}:{free}")
    assert got[pop, "swap-split"] == (CAUGHT, "ProtocolError", f"{S1}:{pop}")
    assert got[push, "swap-split"] == (CAUGHT, "ProtocolError", f"{S1}:{pop}")
    assert got[vec_pipe, "flag-id"][:2] == (CAUGHT, "ConfigError")
    assert all(v.status == CAUGHT for v in s1_coverage.verdicts) and len(s1_coverage.verdicts) == 11


def test_a_mutant_the_checks_cannot_see_survives(tmp_path, capsys):
    # a TFREE in a branch no variant takes: dropping it changes nothing the checks can see
    with open(os.path.join(ROOT, S1), encoding="utf-8") as f:
        src = f.read()
    src = src.replace("        TFREE(pipe)\n", "        TFREE(pipe)\n        if M < 0: TFREE(pipe)\n")
    path = tmp_path / "s1_dead_free.py"
    path.write_text(src, encoding="utf-8")
    cov = coverage(Job(str(path), variant="default", schedules=0))
    dead = _line(S1, "TFREE(pipe)") + 1
    (v,) = [v for v in cov.verdicts if (v.mutant.line, v.mutant.name) == (dead, "drop-tfree")]
    assert v.status == SURVIVED and v.error is None
    assert cov.caught == len(cov.verdicts) - 1
    # the command's report points at the section of docs/mutate.md that explains survivors
    cli_main(["mutate", str(path), "--variant", "default", "--schedules", "0"])
    report = capsys.readouterr().out
    assert f"survived: line {dead}: " in report
    assert '(docs/mutate.md, "Survivors, explained": ' in report
    with open(os.path.join(ROOT, "docs", "mutate.md"), encoding="utf-8") as f:
        assert "\n## Survivors, explained\n" in f.read()


def test_a_mutant_that_breaks_the_kernels_python_is_invalid_and_not_counted(monkeypatch):
    """Python, not a check, stops a kernel that uses a name before binding it: such a mutant
    is listed as invalid and left out of the coverage ratio."""
    from ptopipe.mutate import INVALID, Mutant, Mutation, checks
    with open(os.path.join(ROOT, S1), encoding="utf-8") as f:
        src = f.read()
    pop = _line(S1, "TPOP(pipe")
    lines = src.splitlines(keepends=True)
    broken = "".join(lines[:pop - 1] + [lines[pop - 1].replace("part", "part_unbound")] + lines[pop:])
    fake = [Mutant(Mutation.REORDER, pop, "TPOP(...) above its tile", broken)]
    monkeypatch.setattr(checks, "mutants", lambda source, dsl=False: fake)
    monkeypatch.chdir(ROOT)
    cov = coverage(Job(S1, variant="default", schedules=0))
    (v,) = cov.verdicts
    assert (v.status, v.error) == (INVALID, "NameError") and v.where == f"{S1}:{pop}"
    assert (cov.caught, cov.counted, cov.ratio) == (0, 0, 1.0)
    assert cov.to_dict()["invalid"] == 1


def test_a_pool_gives_the_same_report_as_one_process(s1_coverage):
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        pooled = coverage(Job(S1, variant="default", schedules=2), workers=2)
    finally:
        os.chdir(cwd)
    assert pooled.to_dict() == s1_coverage.to_dict()


def test_a_kernel_failing_its_own_checks_is_refused_with_the_errors_own_fix(tmp_path):
    with pytest.raises(ConfigError, match="fails its own checks before any mutation") as e:
        coverage(Job(os.path.join(ROOT, "examples", "misuse", "m1_no_tfree.py"), schedules=0))
    assert e.value.where.endswith("m1_no_tfree.py:15")
    assert e.value.fix.startswith("call TFREE after the TPOP at ")
    assert e.value.fix.endswith(" (mutation needs a kernel that passes `ptopipe check` with the same options)")
    with pytest.raises(ConfigError) as e:             # the fix of a set-up mistake: its own
        coverage(Job(S1, variant="nope", schedules=0))
    assert e.value.fix.startswith("choose one of: default, ")
    bad = tmp_path / "syn.py"
    bad.write_text("def f(:\n")
    with pytest.raises(ConfigError) as e:
        coverage(Job(str(bad), schedules=0))
    assert e.value.fix.startswith("fix the Python syntax (mutation needs") and e.value.where == f"{bad}:1"


def test_cli_json_and_fail_under(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert cli_main(["mutate", S1, "--variant", "default", "--schedules", "1", "--workers", "1",
                     "--json", "--fail-under", "100"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["mutants"] == rep["caught"] == 11 and rep["variant"] == "default"
    assert {v["mutation"] for v in rep["verdicts"]} >= {"drop-tfree", "swap-split", "flag-id"}
    # a .pto is refused with a clear error, not mutated
    assert cli_main(["mutate", os.path.join("tests", "pto", "c2v_split_a3.pto")]) == 1
    assert "takes a Python kernel file" in capsys.readouterr().err


def test_the_event_and_split_mutants_of_a_dsl_kernel_are_caught():
    """A hand-written DSL pair ordering its pipes by hand: a dropped pl.wait_event, a doubled
    pl.record_event and a TPUSH given the other split are each caught, at the line the
    checks name."""
    path = os.path.join(ROOT, "examples", "dsl", "s8_manual_sync.py")
    with open(path, encoding="utf-8") as f:
        found = mutants(f.read(), dsl=True)
    kinds = {m.name for m in found}
    assert {"drop-wait", "dup-wait", "drop-set", "dup-set", "swap-split"} <= kinds
    job = Job(path, variant="default", schedules=0)
    for name in ("drop-wait", "dup-set", "swap-split"):
        m = next(m for m in found if m.name == name)
        v = check_mutant(job, m)
        assert v.status == CAUGHT and v.error in ("DataRaceError", "DeadlockError", "ProtocolError"), (name, v)


def test_the_periodic_engine_catches_the_mutants_exploration_catches(monkeypatch):
    """S5 on both engines: the same verdicts, every one at the same line and by the same schedule
    (the TPUSH split swap of its address flow is caught at the lanes' TPOP, whose views the pop's
    split places)."""
    from ptopipe.mutate import checks
    judged = []

    def explore(*a, **kw):
        res = real(*a, **kw)
        judged.append((kw["engine"], res.determinate))
        return res
    real = checks.explore
    monkeypatch.setattr(checks, "explore", explore)
    s5 = os.path.join(ROOT, "examples", "scenarios", "s5_subtile_gm.py")
    exact, periodic = (coverage(Job(s5, schedules=8, run_engine=e)).to_dict()["verdicts"]
                       for e in ("exact", "periodic"))
    assert exact == periodic
    assert [v["status"] for v in exact].count(SURVIVED) == 0
    assert ("periodic", True) in judged and ("exact", True) not in judged
