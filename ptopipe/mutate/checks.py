"""Checker coverage of a kernel: run the user's own checks - the default schedule with every
checker, then ``schedules`` explored schedules (as ``ptopipe check`` does) - on each mutant
of the kernel, and say which were caught, where and by what.  A survivor is a protocol
mistake this kernel's checks would not notice.

The kernel itself must pass the same checks first (else every mutant would look caught).
The mutants run on the driver's engine (a local process pool, or a Ray cluster): a mutant
that crashes its worker twice is reported as caught by that, and the others go on.  Results
come back in the mutants' order whatever the engine does, so a report is the same every time.
"""
from __future__ import annotations

import linecache
from dataclasses import dataclass, field

from ..driver.loader import load_scenarios
from ..driver.engine import run_units
from ..errors import ConfigError, PtoPipeError, user_frame
from ..isa.explore import explore
from .operators import HOOK, Mutant, MutantHooks, mutants

CAUGHT, SURVIVED, INVALID = "caught", "survived", "invalid"
#: a kernel's own exceptions that say its Python broke (a name used before it is bound, a
#: syntax error), not that a check found its protocol mistake: such a mutant is no kernel at
#: all (e.g. a TPOP moved above the Tile(...) it pops into), and coverage does not count it
_BROKEN_PYTHON = (NameError, SyntaxError)


@dataclass(frozen=True)
class Verdict:
    """What the checks made of one mutant."""
    mutant: Mutant
    status: str                  # CAUGHT, SURVIVED or INVALID (its Python broke: not counted)
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
        """The mutants coverage counts: every one but the INVALID (no kernel at all)."""
        return sum(v.status != INVALID for v in self.verdicts)

    @property
    def ratio(self) -> float:
        return self.caught / self.counted if self.counted else 1.0

    def to_dict(self) -> dict:
        return {"file": self.path, "variant": self.variant, "platform": self.platform,
                "protocol": self.protocol, "schedules": self.schedules,
                "mutants": len(self.verdicts), "caught": self.caught,
                "invalid": len(self.verdicts) - self.counted,
                "verdicts": [v.to_dict() for v in self.verdicts]}


@dataclass(frozen=True)
class Job:
    """The checks to run on a kernel file: ``variant`` None: every variant the kernel declares; the
    rest as ``ptopipe check`` takes them; ``timeout`` bounds each run (seconds of wall
    clock, None: no bound); ``run_engine`` is the runs' engine (None: $PTOPIPE_ENGINE)."""
    path: str
    variant: "str | None" = None
    platform: "str | None" = None
    protocol: "str | None" = None
    schedules: int = 20
    seed: int = 0
    mode: str = "mix"
    timeout: "float | None" = 60.0
    run_engine: "str | None" = None


def _is_dsl(source: str) -> bool:
    return "@pl." in source


def coverage(job: Job, workers: int = 1, progress=None, engine: str = "local",
             address: str | None = None) -> Coverage:
    """Every mutant of ``job.path`` checked on ``engine`` (:func:`ptopipe.driver.engine.run_units`:
    ``workers`` local processes, or a Ray cluster at ``address``); ``progress(done, total)``
    as mutants end."""
    with open(job.path, encoding="utf-8") as f:
        source = f.read()
    base, platform, protocol, cause = _checks(job, source)
    if base is not None:
        _status, by, error, where, what, variant = base
        # the error's own fix (fix the syntax, the variants there are, ...) comes first
        own = getattr(cause, "fix", None)
        raise ConfigError(f"{job.path} fails its own checks before any mutation: {error} under "
                          f"{by}{f' of variant {variant}' if variant else ''}: {what}", where=where,
                          fix=(f"{own} (mutation needs a kernel that passes `ptopipe check` with the "
                               "same options)") if own else
                              "mutate a kernel that passes `ptopipe check` with the same options")
    found = mutants(source, dsl=_is_dsl(source))
    cov = Coverage(job.path, job.variant or "all", platform, protocol, job.schedules)
    cov.verdicts = run_units(_check_unit, [(job, m) for m in found], _lost, engine, address,
                             workers, progress)
    return cov


def _check_unit(unit: tuple) -> Verdict:
    return check_mutant(*unit)


def _lost(unit: tuple, error: BaseException) -> Verdict:
    """A mutant whose worker died, and again when retried: a crash is a finding too."""
    return Verdict(unit[1], CAUGHT, "its worker process dying", type(error).__name__, None,
                   str(error).splitlines()[0] if str(error) else "")


def check_mutant(job: Job, m: Mutant) -> Verdict:
    """The checks of ``job`` on mutant ``m``: CAUGHT with the first finding, or SURVIVED."""
    found = _checks(job, m.source)[0]
    return Verdict(m, SURVIVED) if found is None else Verdict(m, *found)


def _checks(job: Job, source: str) -> tuple:
    """``(finding, platform, protocol, exception)`` of the checks on the kernel text ``source``:
    the finding ``(status, by, error, where, what, variant)`` and the exception it is of, or
    None and None when every check passed."""
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
                try:
                    res = explore(sc, schedules=job.schedules, seed=job.seed, variant=v,
                                  platform=platform, protocol=protocol, mode=job.mode,
                                  timeout=job.timeout, engine=job.run_engine)
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
    status = INVALID if isinstance(e, _BROKEN_PYTHON) else CAUGHT
    return (status, by, type(e).__name__, str(where) if where else None,
            str(what).splitlines()[0] if what else "", variant)
