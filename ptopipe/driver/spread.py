"""One check's explored schedules spread over workers (:func:`.engine.run_units`), with the
report of running them one after the other in this process (:func:`ptopipe.isa.explore.explore`).

The default schedule runs here, as in ``explore`` (its warnings; a failure there, or only
one core running, ends the check).  Then the first schedule of each stream of the mode
(``mix``: pct, random, exhaustive; otherwise the mode's one stream) runs here too, timed: a
check whose other schedules would take less than :data:`MIN_SECONDS` goes on here, exactly
as ``explore`` does (a pool of workers costs more than it saves).  Otherwise the schedules
run in waves of units, each unit a short list of schedules of one stream:

- random schedules depend on nothing: all of them are known at once;
- a pct schedule's event count ``k`` is the largest of the earlier pct runs': a wave takes
  the largest known so far (kernels whose runs all see the same events, the usual case,
  need no other); once such a guess turns out wrong, the pct schedules from there on run
  again in one unit, one after the other, each ``k`` from the runs before it;
- an exhaustive schedule is a child of an earlier one (its choice points): a wave runs
  the schedules the runs so far determine, fewest deviations first (one wave holds every
  single deviation from the default schedule).

After each wave the serial order is rebuilt from the runs - the streams' own generators
replayed with the runs' event counts and choice points, and interleaved as ``mix``
interleaves them (:func:`ptopipe.isa.explore.interleave`) - up to the first failure in that
order; what that order still needs (schedules after an exhaustive stream ran out, re-run pct
schedules, deeper exhaustive ones) is the next wave.  The result - runs, the first failure
and its schedule, the distinct interleavings up to it, ``complete`` - is the serial one;
only what the workers spend beyond it differs.  The runs' own output (a kernel's prints) and
warnings (a ``.pto`` kernel's) come in the serial order too, up to the failure.

A worker gets the Scenario and the list its runs add warnings to from a ``source`` - a
picklable ``(function, *args)`` that loads them, once per worker process - and the
command's ``--timeout`` as the same wall-clock moment.  Errors come back pickled (:func:`portable`); a kernel's own
exception that does not pickle comes back as a stand-in with its class name, message and
line (:class:`KernelRaised`).
"""
from __future__ import annotations

import contextlib
import functools
import io
import math
import os
import pickle
import sys
import time
from typing import NamedTuple

from ..errors import PtoPipeError, user_frame
from .check import as_run, command_timeout
from ..isa.explore import (MIX, CheckScope, ExploreResult, ScheduleSpec, checked_depth, explore_default,
                           explore_rest, failure_key, interleave, run_explored, stream, stream_depth)
from ..sim.bounds import Deadline
from .engine import run_units, session

#: explored schedules expected to take less than this many seconds in all run in this
#: process: starting workers (about 0.3 s for a local pool) would not pay off
MIN_SECONDS = 1.5
#: units per worker in a wave: small units balance the load and move the progress bar
UNITS_PER_WORKER = 8
#: the schedules of the serial order the first waves are planned from (:meth:`_Plan._order`)
WINDOW = 4096

@functools.lru_cache(maxsize=4)
def scenario_of(source: tuple) -> tuple:
    """The ``(Scenario, run warnings)`` pair ``source`` - ``(function, *args)`` - loads,
    once per worker process (what a load prints, e.g. a .pto file's notes, was printed by
    the command already); the list is the one the Scenario's runs add their warnings to."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return source[0](*source[1:])


def explore_spread(sc, source: tuple, schedules: int = 20, seed: int = 0, variant="default",
                   platform="a2a3", protocol="spec", data_seed: int = 0, progress=None,
                   mode: str = "mix", depth: int | None = None, engine: str = "local",
                   address: str | None = None, workers: int | None = None,
                   min_seconds: float | None = None, run_warnings: list | None = None,
                   **run_kwargs) -> ExploreResult:
    """:func:`ptopipe.isa.explore.explore` of the Scenario ``sc`` (which ``source``
    loads in a worker) with its explored schedules on ``engine``'s workers when they take
    long enough (``min_seconds``, default :data:`MIN_SECONDS`), with the same result.  A
    kernel's own exception is the result's failure (as
    :func:`ptopipe.driver.check.explore_variant` makes it) when it happens in an explored
    schedule; under the default schedule it is raised.  ``run_warnings``: the list the
    Scenario's runs add their warnings to (a ``.pto`` kernel's): the explored runs' are
    added to it in the serial order, up to the first failure."""
    depth = checked_depth(mode, depth)
    min_seconds = MIN_SECONDS if min_seconds is None else min_seconds
    run_kwargs = as_run(run_kwargs)
    run_kwargs.setdefault("causal", True)
    scope = CheckScope()                # the runs in this process; a worker's unit makes its own
    total = schedules + 1
    out = ExploreResult(mode=mode)
    t0 = time.perf_counter()
    explore_default(out, sc, variant, platform, protocol, data_seed, None, progress, total, scope=scope,
                    **run_kwargs)
    took = time.perf_counter() - t0
    if out.one_core or out.determinate or out.failures or schedules == 0:
        out.complete = out.one_core or out.determinate
        return out
    rest = dict(schedules=schedules, seed=seed, variant=variant, platform=platform, protocol=protocol,
                data_seed=data_seed, progress=progress, mode=mode, depth=depth, total=total)
    if schedules * took * 4 < min_seconds:      # (explored runs take up to a few times the default's)
        return explore_rest(out, sc, **rest, scope=scope, **run_kwargs)
    plan = _Plan(mode, schedules, seed, depth)
    job = _Job(source, variant, platform, protocol, data_seed, run_kwargs)
    run_warnings = [] if run_warnings is None else run_warnings
    first = plan.wave()                         # the first schedule of each stream, timed
    t0 = time.perf_counter()
    for spec in first:
        if progress is not None:
            progress(out.runs + len(plan.ran), total)
        plan.add([_run_one((sc, run_warnings), job, spec, {**run_kwargs, "scope": scope})])
    each = (time.perf_counter() - t0) / max(len(first), 1)
    todo = plan.wave()
    if todo and each * len(todo) < min_seconds:
        return explore_rest(out, sc, **rest, scope=scope, **run_kwargs)   # (those few runs again, here)
    spread = bool(todo)
    with session(engine, address) if todo else contextlib.nullcontext():
        while todo:
            units = _units(job, todo, workers, seed if plan.chained else None)
            ends = _prefix_ends(units)

            def step(k: int, n: int, base=out.runs + len(plan.ran)) -> None:
                if progress is not None:
                    progress(min(base + ends[k - 1], total - 1), total)
            for got in run_units(run_unit, units, _lost, engine, address, workers, step):
                plan.add(got)
            todo = plan.wave()
    res = plan.result(out, run_warnings)
    res.on_workers = spread
    return res


# -- the plan: what ran, the serial order rebuilt from it, what the next wave runs ----------------
class Record(NamedTuple):
    """One explored schedule's run: its spec, the digest and event count of its policy, the
    choice points (exhaustive), its failure (a PtoPipeError) or a kernel's own exception,
    what it printed and the warnings it found (``file:line:col: what``)."""
    spec: ScheduleSpec
    digest: int
    events: int
    options: tuple | None
    error: BaseException | None
    raised: BaseException | None
    stdout: str
    stderr: str
    warnings: tuple = ()

    @property
    def stops(self) -> bool:
        return self.error is not None or self.raised is not None


class _Seen:
    """A policy as its stream's generator reads it after the run: its event count and
    choice points (``options``: :class:`_NotYet` for a run whose choices are not known)."""
    __slots__ = ("events", "options")

    def __init__(self, events: int = 0, options=None):
        self.events, self.options = events, options


class _Unknown(Exception):
    """An exhaustive schedule needs the choice points of a run not made yet."""


class _NotYet:
    """The choice points of a run not made yet: reading them ends the replay."""

    def __len__(self):
        raise _Unknown


class _Plan:
    """The runs of one exploration, by stream and spec, and what they determine."""

    def __init__(self, mode: str, n: int, seed: int, depth: int):
        self.mode, self.n, self.seed, self.depth = mode, n, seed, depth
        self.limit = min(n, WINDOW)             # the serial order's first schedules considered
        self.streams = MIX if mode == "mix" else (mode,)
        self.ran: dict = {}                     # ScheduleSpec -> Record (specs name their stream)
        self.asked: set = set()                 # specs handed to a wave
        self.chained = False                    # a pct guess of k missed: the rest run in a chain

    def add(self, records) -> None:
        for r in records:
            self.ran[r.spec] = r if r.raised is None else r._replace(raised=received(r.raised))

    def _walk(self, mode: str) -> tuple:
        """The ``mode`` stream's schedules as far as the runs so far tell them:
        ``([(spec, record or None, certain)], ended, complete)`` - ``certain``: the spec is
        the one the serial run makes (a pct spec after a run not made yet takes the largest
        event count known); ``ended``: the stream has no more schedules."""
        depth = self.depth if self.mode != "mix" else stream_depth(mode, self.depth)
        last = {"complete": False}
        items, certain = [], True
        try:
            for spec, _pol in stream(mode, self.limit, self.seed, depth, last):
                rec = self.ran.get(spec)
                items.append((spec, rec, certain))
                if rec is not None and certain and rec.stops:
                    return items, True, False   # (nothing after it in the stream is run)
                if rec is not None:
                    last["policy"] = _Seen(rec.events, rec.options)
                else:
                    certain = False
                    last["policy"] = _Seen(0, _NotYet())
        except _Unknown:
            return items, False, False
        return items, True, bool(last["complete"])

    def _order(self) -> tuple:
        """``(serial, todo, complete)``: the serial order's runs up to its end or first
        failure, or None while one is missing; the specs the order still needs run (up to
        its N schedules or the first failure met); the exhaustive bound exhausted.  The order
        is rebuilt as far as :attr:`limit`, which doubles (up to N) each time the runs make it
        whole that far: a wave never holds more than the schedules run so far, and a check of
        10**9 schedules starts as soon as one of 10**3 does."""
        while True:
            serial, todo, complete = self._order_to_limit()
            if serial is None or self.limit >= self.n or len(serial) < self.limit or \
                    (serial and serial[-1].stops):
                return serial, todo, complete
            self.limit = min(self.n, 2 * self.limit)

    def _order_to_limit(self) -> tuple:
        walks = {m: self._walk(m) for m in self.streams}

        def items(m):
            got, ended, _ = walks[m]
            yield from ((s, r, c) for s, r, c in got)
            while not ended:                    # schedules the runs so far do not determine
                yield (None, None, False)
        if self.mode == "mix":
            order = (x for x in interleave([({}, ((x, None) for x in items(m))) for m in MIX], self.limit))
            order = (x for x, _ in order)
        else:
            order = (x for _, x in zip(range(self.limit), items(self.mode)))
        serial, todo, whole = [], [], True
        for spec, rec, certain in order:
            if whole and rec is not None and certain:
                serial.append(rec)
                if rec.stops:
                    break
                continue
            whole = False
            if rec is not None and rec.stops:
                break                           # (likely the first failure: wait for its order)
            if spec is not None and rec is None:
                todo.append(spec)
        complete = self.mode == "exhaustive" and walks["exhaustive"][2]
        return (serial if whole else None), todo, complete

    def wave(self) -> list:
        """The specs the next wave runs (in serial order): for the first wave, the first
        schedule of each stream; nothing once the serial order is whole."""
        serial, todo, _ = self._order()
        if serial is not None:
            return []
        if not self.ran:
            first, seen = [], set()
            for spec in todo:
                if spec.mode not in seen:
                    seen.add(spec.mode)
                    first.append(spec)
            todo = first
        todo = [s for s in todo if s not in self.asked]
        guessed = {s.seed for s in self.asked if s.mode == "pct"}
        self.chained = self.chained or any(s.mode == "pct" and s.seed in guessed for s in todo)
        self.asked.update(todo)
        if not todo:
            raise RuntimeError("the exploration's plan needs no run, yet its order is not whole")
        return todo

    def result(self, out: ExploreResult, run_warnings: list) -> ExploreResult:
        """``out`` (the default schedule's) with the explored schedules of the serial order,
        their output printed and their warnings added to ``run_warnings`` in that order."""
        serial, _, complete = self._order()
        for rec in serial:
            run_warnings.extend(rec.warnings)
            if rec.stdout:
                sys.stdout.write(rec.stdout)
            if rec.stderr:
                sys.stderr.write(rec.stderr)
            if rec.raised is not None:          # (explore raises it; the check reports it so)
                res = ExploreResult(runs=out.runs + 1, passed=out.runs, mode=out.mode)
                res.failures.append((getattr(rec.raised, "ptopipe_schedule", None), rec.raised))
                return res
            out.runs += 1
            out.digests.add(rec.digest)
            out.events = rec.events
            if rec.error is None:
                out.passed += 1
            else:
                out.failures.append((failure_key(rec.spec), rec.error))
        out.complete = complete and not out.failures
        if out.failures and command_timeout(out.first[1]) is not None:
            return self._past_the_timeout(out, {r.spec for r in serial}, run_warnings)
        return out

    def _past_the_timeout(self, out: ExploreResult, serial: set, run_warnings: list) -> ExploreResult:
        """``out``, whose serial order the command's --timeout cut at a schedule that did not
        finish, with the runs the workers finished beyond that cut (``serial``: the specs
        counted already): each that passed is a schedule checked, and the first that failed
        is the check's failure - found, though the serial run would have met it later, if at all."""
        later = [r for r in self.ran.values() if r.spec not in serial
                 and not (r.error is not None and command_timeout(r.error) is not None)]
        for rec in later:
            if rec.stops:
                continue
            run_warnings.extend(rec.warnings)
            out.runs += 1
            out.passed += 1
            out.digests.add(rec.digest)
        failed = next((r for r in later if r.stops), None)
        if failed is None:
            return out
        out.runs += 1
        if failed.raised is not None:           # (a kernel's own exception: reported as the serial order does)
            res = ExploreResult(runs=out.runs, passed=out.passed, mode=out.mode, digests=out.digests)
            res.failures.append((getattr(failed.raised, "ptopipe_schedule", None), failed.raised))
            return res
        out.failures = [(failure_key(failed.spec), failed.error)]
        return out


# -- units: what a worker runs ---------------------------------------------------------------------
class _Job(NamedTuple):
    """What every unit of one exploration shares."""
    source: tuple
    variant: str
    platform: object
    protocol: str
    data_seed: int
    run_kwargs: dict


class Unit(NamedTuple):
    """Schedules of one stream for a worker, in order, and how to run them; the command's
    ``--timeout`` as a wall-clock moment (``time.time()``) with its Deadline's seconds and
    scope.  ``chain``: the first seed of a pct stream whose schedules from ``specs[0]`` on
    the worker makes itself, each ``k`` from the runs before it (``specs`` then says where
    the chain starts and how long it is)."""
    job: _Job
    specs: tuple
    deadline: tuple | None
    chain: int | None = None


def _units(job: _Job, specs: list, workers: int | None, chain: int | None = None) -> list:
    """``specs`` as units: each a run of consecutive specs of one stream, about
    :data:`UNITS_PER_WORKER` per worker, in serial order of their first spec; with ``chain``
    (the first seed), the pct specs are one chain unit."""
    size = max(1, math.ceil(len(specs) / (UNITS_PER_WORKER * (workers or os.cpu_count() or 1))))
    lines: dict = {}
    for k, s in enumerate(specs):
        lines.setdefault(s.mode, []).append((k, s))
    chunks = []
    for m, line in lines.items():
        step = len(line) if m == "pct" and chain is not None else size
        chunks += [line[i:i + step] for i in range(0, len(line), step)]
    chunks.sort(key=lambda c: c[0][0])
    limit = _deadline(job.run_kwargs.get("timeout"))
    if limit is not None:                       # (each worker makes its own Deadline of it)
        job = job._replace(run_kwargs={k: v for k, v in job.run_kwargs.items() if k != "timeout"})
    return [Unit(job, tuple(s for _, s in c), limit, chain if c[0][1].mode == "pct" else None)
            for c in chunks]


def _prefix_ends(units: list) -> list:
    ends, n = [], 0
    for u in units:
        n += len(u.specs)
        ends.append(n)
    return ends


def _deadline(timeout) -> tuple | None:
    return timeout.portable() if isinstance(timeout, Deadline) else None


def run_unit(unit: Unit) -> list:
    """The records of a unit's schedules, run one after the other in this process, up to
    the first that fails (the later ones come after it in the serial order too)."""
    job = unit.job
    kw = dict(job.run_kwargs)
    if unit.deadline is not None:
        kw["timeout"] = Deadline.from_portable(unit.deadline)
    kw["scope"] = CheckScope()          # what this unit's runs share
    loaded = scenario_of(job.source)
    records = []
    for spec in (unit.specs if unit.chain is None else _chain(unit, records)):
        rec = _run_one(loaded, job, spec, kw)
        records.append(rec)
        if rec.stops:
            break
    return records


def _chain(unit: Unit, records: list):
    """The pct specs of a chain unit as the serial run makes them: its first spec's ``k``,
    raised by each run's event count as it ends (``records``: the runs so far)."""
    head = unit.specs[0]
    start = head.seed - unit.chain
    last = {"complete": False}
    for i, (spec, _pol) in enumerate(stream("pct", start + len(unit.specs), unit.chain, head.depth, last)):
        if i < start:
            last["policy"] = _Seen(head.k)      # (k: the largest event count before the chain)
            continue
        yield spec
        last["policy"] = _Seen(records[-1].events)


def _run_one(loaded: tuple, job: _Job, spec: ScheduleSpec, kw: dict) -> Record:
    """One schedule's record.  Its warnings are all the run finds (the list it adds to is
    emptied for it, then put back): what it adds in the serial run is what of them is not
    there yet, which the report's first-seen order makes the same.  ``kw["scope"]``: what
    the runs of this process's part of the check share (:class:`CheckScope`)."""
    sc, warnings = loaded
    pol = spec.policy()
    err = raised = None
    out, errs = io.StringIO(), io.StringIO()
    before = warnings[:]
    del warnings[:]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(errs):
        try:
            err = run_explored(sc, spec, pol, job.variant, job.platform, job.protocol, job.data_seed, **kw)
        except Exception as e:  # noqa: BLE001 - a kernel's own error: the record's, sent back
            raised = e
        finally:
            found = tuple(warnings)
            warnings[:] = before
    return Record(spec, pol.digest, pol.events, tuple(pol.options) if spec.mode == "exhaustive" else None,
                  portable(err) if err is not None else None,
                  portable_raised(raised) if raised is not None else None,
                  out.getvalue(), errs.getvalue(), found)


def _lost(unit: Unit, error: BaseException) -> list:
    """A unit whose worker died, and again when retried: its first schedule's failure."""
    spec = unit.specs[0]
    key = failure_key(spec)
    e = PtoPipeError(f"the worker process running schedule {spec} died, and again when retried "
                     f"({type(error).__name__})", fix="check it in this process (--workers 1) to see "
                     "why: a crash in native code, or too little memory",
                     findings=[{"kind": "schedule", "seed": key if isinstance(key, int) else str(key)}])
    return [Record(spec, 0, 0, None, e, None, "", "")]


# -- errors across processes -----------------------------------------------------------------------
def portable(e: PtoPipeError) -> PtoPipeError:
    """``e``, pickled as it is if it can be, else without the attributes that cannot
    (e.g. a traced run's cluster): what a worker sends back."""
    try:
        pickle.dumps(e)
        return e
    except Exception:  # noqa: BLE001 - whatever an attribute's pickling raises
        pass
    for name, value in list(vars(e).items()):
        try:
            pickle.dumps(value)
        except Exception:  # noqa: BLE001
            delattr(e, name)
    return e


class KernelRaised(Exception):
    """A kernel's own exception that could not be sent from a worker, as the report needs
    it: its class name (:func:`raised_in_worker` makes a class of that name), message, the
    kernel line it was raised at (``ptopipe_frame``) and the core it was raised on."""


class _Raised(NamedTuple):
    """What a worker sends of an exception that does not pickle."""
    name: str
    module: str
    message: str
    frame: object
    raised_by: str | None
    schedule: object


def portable_raised(e: BaseException):
    """A kernel's own exception as a worker sends it: ``e`` itself, its kernel line kept
    (``ptopipe_frame``: a received exception has no traceback), when it pickles; else a
    :class:`_Raised` that :func:`received` turns into a stand-in."""
    f = user_frame(e)
    if f is not None:
        f.line                              # (read now: the worker has the file)
    try:
        e.ptopipe_frame = f
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:  # noqa: BLE001 - anything an exception's pickling raises
        return _Raised(type(e).__name__, type(e).__module__, str(e), f,
                       getattr(e, "ptopipe_raised_by", None), getattr(e, "ptopipe_schedule", None))


def received(r) -> BaseException:
    """The exception a worker sent (:func:`portable_raised`): itself, or a stand-in of a
    class named as the kernel's, with its message, line and core."""
    if not isinstance(r, _Raised):
        return r
    e = type(r.name, (KernelRaised,), {"__module__": r.module})(r.message)
    e.ptopipe_frame, e.ptopipe_schedule = r.frame, r.schedule
    if r.raised_by:
        e.ptopipe_raised_by = r.raised_by
    return e
