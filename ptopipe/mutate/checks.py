"""Checker coverage of a kernel: run the user's own checks - the default schedule with every
checker, then ``schedules`` explored schedules (as ``ptopipe check`` does) - on each mutant
of the kernel, and say which were caught, where and by what.  A survivor is a protocol
mistake this kernel's checks would not notice.

The kernel itself must pass the same checks first (else every mutant would look caught).
The mutants run on the driver's engine (a local process pool, or a Ray cluster): a mutant
that crashes its worker twice is reported as caught by that, and the others go on.  Results
come back in the mutants' order whatever the engine does, so a report is the same every time.

A command's ``--timeout`` (:attr:`Job.deadline`) bounds the whole of it, as ``check``'s does:
the kernel's own check and every mutant's runs share one wall-clock moment; a mutant it stops
is ``not checked`` - neither caught nor survived, and not counted.
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass, field

from ..driver.check import command_timeout
from ..driver.loader import load_scenarios
from ..driver.engine import in_process, run_units
from ..errors import ConfigError, PtoPipeError, user_frame
from ..isa.explore import explore
from ..sim.bounds import Deadline, expired_before
from .operators import HOOK, Mutant, MutantHooks, mutants

CAUGHT, SURVIVED, INVALID, NOT_CHECKED = "caught", "survived", "invalid", "not checked"
#: seconds between the progress calls of a long mutant (a pool's mutants: the engine's tick)
TICK = 1.0
#: a kernel's own exceptions that say its Python broke (a name used before it is bound, a
#: syntax error), not that a check found its protocol mistake: such a mutant is no kernel at
#: all (e.g. a TPOP moved above the Tile(...) it pops into), and coverage does not count it
_BROKEN_PYTHON = (NameError, SyntaxError)


@dataclass(frozen=True)
class Verdict:
    """What the checks made of one mutant."""
    mutant: Mutant
    status: str                  # CAUGHT, SURVIVED, INVALID (its Python broke) or NOT_CHECKED
                                 # (the command's --timeout stopped it): the last two not counted
    by: str | None = None        # "the default schedule", "schedule pct:3:2:40", "loading the file"
    error: str | None = None     # the error's class
    where: str | None = None     # the error's file:line
    what: str | None = None      # its first line
    variant: str | None = None   # the variant whose checks caught it

    def to_dict(self) -> dict:
        return {"line": self.mutant.line, "mutation": self.mutant.name,
                "description": self.mutant.kind.value, "change": self.mutant.change,
                "status": self.status, "by": self.by, "variant": self.variant, "error": self.error,
                "where": self.where, "what": self.what}


@dataclass
class Coverage:
    """The verdicts for one kernel file and configuration."""
    path: str
    variant: str
    platform: str
    protocol: str
    schedules: int
    verdicts: list = field(default_factory=list)

    @property
    def caught(self) -> int:
        return sum(v.status == CAUGHT for v in self.verdicts)

    @property
    def counted(self) -> int:
        """The mutants coverage counts: every one but the INVALID (no kernel at all) and those
        the command's --timeout left NOT_CHECKED."""
        return sum(v.status not in (INVALID, NOT_CHECKED) for v in self.verdicts)

    @property
    def not_checked(self) -> int:
        return sum(v.status == NOT_CHECKED for v in self.verdicts)

    @property
    def ratio(self) -> float:
        return self.caught / self.counted if self.counted else 1.0

    def to_dict(self) -> dict:
        return {"file": self.path, "variant": self.variant, "platform": self.platform,
                "protocol": self.protocol, "schedules": self.schedules,
                "mutants": len(self.verdicts), "caught": self.caught,
                "invalid": sum(v.status == INVALID for v in self.verdicts), "not_checked": self.not_checked,
                "verdicts": [v.to_dict() for v in self.verdicts]}


@dataclass(frozen=True)
class Job:
    """The checks to run on a kernel file: ``variant`` None: every variant the kernel declares; the
    rest as ``ptopipe check`` takes them; ``timeout`` bounds each run (seconds of wall clock, as
    ``ptopipe.run``'s; None: its default); ``deadline``: a command's --timeout over everything the
    coverage runs (:meth:`~ptopipe.sim.bounds.Deadline.portable` form, for every worker), which
    then bounds the runs instead; ``run_engine`` is the runs' engine (None: $PTOPIPE_ENGINE)."""
    path: str
    variant: "str | None" = None
    platform: "str | None" = None
    protocol: "str | None" = None
    schedules: int = 20
    seed: int = 0
    mode: str = "mix"
    timeout: "float | None" = 60.0
    run_engine: "str | None" = None
    deadline: "tuple | None" = None

    def bound(self):
        """What bounds each run: the command's Deadline, else the seconds of ``timeout``."""
        return Deadline.from_portable(self.deadline) if self.deadline is not None else self.timeout


def _is_dsl(source: str) -> bool:
    return "@pl." in source


def coverage(job: Job, workers: int = 1, progress=None, engine: str = "local",
             address: str | None = None) -> Coverage:
    """Every mutant of ``job.path`` checked on ``engine`` (:func:`ptopipe.driver.engine.run_units`:
    ``workers`` local processes, or a Ray cluster at ``address``).  ``progress(done, total,
    note)`` as the work goes, at least every :data:`TICK` seconds while a run or a pool's
    mutant is under way: ``done`` of the ``total`` mutants checked, ``note`` what is under way
    (the kernel's own check first, with its run; the mutants in the pool; here, the mutant and
    its run)."""
    with open(job.path, encoding="utf-8") as f:
        source = f.read()
    try:
        found = mutants(source, dsl=_is_dsl(source))
    except SyntaxError:
        found = None                    # (the kernel's own check below says what is wrong)
    total = len(found or ())

    def own(variant, done, runs):
        progress(0, total, f"the kernel's own check first: {_run_note(variant, done, runs)}")
    base, platform, protocol, cause = _checks(job, source, own if progress is not None else None)
    if base is not None:
        status, by, error, where, what, variant = base
        if status == NOT_CHECKED:
            raise cause                 # (the command's --timeout, in the kernel's own check)
        # the error's own fix (fix the syntax, the variants there are, ...) comes first
        own = getattr(cause, "fix", None)
        raise ConfigError(f"{job.path} fails its own checks before any mutation: {error} under "
                          f"{by}{f' of variant {variant}' if variant else ''}: {what}", where=where,
                          fix=(f"{own} (mutation needs a kernel that passes `ptopipe check` with the "
                               "same options)") if own else
                              "mutate a kernel that passes `ptopipe check` with the same options")
    found = mutants(source, dsl=_is_dsl(source)) if found is None else found
    cov = Coverage(job.path, job.variant or "all", platform, protocol, job.schedules)
    if in_process(engine, workers, total):
        for k, m in enumerate(found):
            def runs(variant, done, n, k=k, m=m):
                progress(k, total, f"{_short(m)}: {_run_note(variant, done, n)}")
            cov.verdicts.append(check_mutant(job, m, runs if progress is not None else None))
        if progress is not None:
            progress(total, total, "")
        return cov

    def pooled(done, n, under_way=()):
        labels = [_short(found[k]) for k in under_way]
        progress(done, n, f"under way: {', '.join(labels)}" if labels else "")
    cov.verdicts = run_units(_check_unit, [(job, m) for m in found], _lost, engine, address,
                             workers, pooled if progress is not None else None, tick=TICK)
    return cov


def _short(m: Mutant) -> str:
    """A mutant as a progress line names it: its line and mutation."""
    return f"line {m.line} {m.name}"


def _run_note(variant, done: int, runs: int) -> str:
    return f"variant {variant}, run {done + 1} of {runs}"


def _check_unit(unit: tuple) -> Verdict:
    return check_mutant(*unit)


def _lost(unit: tuple, error: BaseException) -> Verdict:
    """A mutant whose worker died, and again when retried: a crash is a finding too."""
    return Verdict(unit[1], CAUGHT, "its worker process dying", type(error).__name__, None,
                   str(error).splitlines()[0] if str(error) else "")


def check_mutant(job: Job, m: Mutant, progress=None) -> Verdict:
    """The checks of ``job`` on mutant ``m``: CAUGHT with the first finding, SURVIVED, or
    NOT_CHECKED when the command's --timeout stopped them; ``progress(variant, done, runs)``
    before each run."""
    found = _checks(job, m.source, progress)[0]
    return Verdict(m, SURVIVED) if found is None else Verdict(m, *found)


def _checks(job: Job, source: str, progress=None) -> tuple:
    """``(finding, platform, protocol, exception)`` of the checks on the kernel text ``source``:
    the finding ``(status, by, error, where, what, variant)`` and the exception it is of, or
    None and None when every check passed; ``progress(variant, done, runs)`` before each run.
    Past the command's deadline nothing runs, not even the file's import: NOT_CHECKED."""
    bound = job.bound()
    if isinstance(bound, Deadline) and bound.passed():
        e = expired_before(bound, "these checks")
        return _finding("the command's --timeout", None, e), job.platform, job.protocol, e
    path = job.path                     # (the file name its code objects carry)
    old = linecache.cache.get(path)
    # the DSL front end reads a function's source through linecache: it must see this text
    linecache.cache[path] = (len(source), None, source.splitlines(keepends=True), path)
    platform = protocol = None
    try:
        try:
            scenarios = load_scenarios(job.path, source, {HOOK: MutantHooks})
        except Exception as e:          # noqa: BLE001 - a mutant that does not even load is caught
            return _finding("loading the file", None, e), platform, protocol, e
        for sc in scenarios:
            platform = job.platform or sc.platform or "a2a3"
            protocol = job.protocol or sc.protocol or "spec"
            for v in ([job.variant] if job.variant else list(sc.variants)):
                step = None if progress is None else (lambda done, runs, v=v: progress(v, done, runs))
                try:
                    res = explore(sc, schedules=job.schedules, seed=job.seed, variant=v,
                                  platform=platform, protocol=protocol, mode=job.mode,
                                  timeout=bound, engine=job.run_engine, progress=step)
                except Exception as e:      # noqa: BLE001 - a kernel's own exception is a finding too
                    return _finding("the default schedule", v, e), platform, protocol, e
                if not res.ok:
                    seed, err = res.first
                    by = "the default schedule" if seed is None else f"schedule {seed}"
                    return _finding(by, v, err), platform, protocol, err
        return None, platform, protocol, None
    finally:
        if old is None:
            linecache.cache.pop(path, None)
        else:
            linecache.cache[path] = old


def _finding(by: str, variant, e: BaseException) -> tuple:
    if isinstance(e, PtoPipeError):
        where, what = e.where, e.what
    else:
        f = user_frame(e)
        where, what = (f"{f.filename}:{f.lineno}" if f else None), str(e)
    status = NOT_CHECKED if command_timeout(e) is not None else INVALID if isinstance(e, _BROKEN_PYTHON) \
        else CAUGHT
    return (status, by, type(e).__name__, str(where) if where else None,
            str(what).splitlines()[0] if what else "", variant)
