"""Schedule exploration: rerun a kernel under other interleavings of its visible events.

``explore(scenario, schedules=N, seed=S, mode=M)`` runs the default schedule, then N
explored schedules, in which every cross-core visible event (SET, WAIT, TLOAD/TSTORE,
TPUSH/TPOP/TFREE/TALLOC) is a choice point (:mod:`ptopipe.sim.schedule`):

- ``mix`` (default): the three policies below in turn - a pct schedule, a random one, an
  exhaustive one, a pct one, ... (N in all; ``depth``, if given, is pct's and exhaustive's):
  each finds bugs the others miss (pct starves a core at once - a lane that falls
  SlotNum tiles behind -, random covers latency and skew, exhaustive the small deviations
  from the default schedule);
- ``random``: schedule seeds S, S+1, ...; random choices at the events, jittered
  cross-core latencies and per-core start offsets (lane skew);
- ``pct``: probabilistic concurrency testing with bug depth ``depth`` (default 3): random
  core priorities and ``depth - 1`` priority change points over the k visible events of a run;
- ``exhaustive``: every schedule that deviates from the default scheduler's choices at
  most ``depth`` times (default 2; delay bounding), fewest deviations first, until the
  bound is exhausted (``ExploreResult.complete``) or N schedules ran.

The first failure - any PtoPipeError, including a result that differs from the golden -
is reported with the :class:`ScheduleSpec` that replays it (``run_schedule(scenario, spec)``,
``ptopipe check --replay SPEC``; a random seed also as ``--seed S --schedules 1``).
``ExploreResult.distinct`` counts the distinct interleavings covered (a hash of the
sequence of (core, visible event) of each run).

``explore`` is :func:`explore_default` then :func:`explore_rest`, the schedules of
:func:`stream` in the order :func:`interleave` gives them, each run by :func:`run_explored`:
the parts :mod:`ptopipe.driver.spread` uses to run the explored schedules on workers and
rebuild the same order.  The runs of one exploration share a :class:`CheckScope`: the
scenario's inputs and golden, made once, and the memories of the runs that passed.
"""
from __future__ import annotations

import contextlib
import inspect
import io
import random
import sys
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..arch import get_platform
from ..errors import ConfigError, PtoPipeError, user_line, with_article
from ..sim.cluster import engine_name
from ..sim.memory import MemoryPool
from ..sim.schedule import BoundedPolicy, PCTPolicy, RandomPolicy, bounded_children
from .launch import compare_launches, run
from .scenario import Scenario, on_platform, reusable_args

MODES = ("mix", "random", "pct", "exhaustive")
DEFAULT_DEPTH = {"mix": 0, "random": 0, "pct": 3, "exhaustive": 2}
#: the order ``mix`` takes its schedules from the other modes
MIX = ("pct", "random", "exhaustive")


@dataclass(frozen=True)
class ScheduleSpec:
    """One explored schedule: ``random:SEED``, ``pct:SEED:DEPTH:K`` or
    ``exhaustive:P=J,...`` (choice point P takes option J; nothing listed: the default)."""
    mode: str
    seed: int = 0
    depth: int = 0
    k: int = 0
    deviations: tuple = ()          # ((point, option), ...) for exhaustive

    def __str__(self) -> str:
        if self.mode == "random":
            return f"random:{self.seed}"
        if self.mode == "pct":
            return f"pct:{self.seed}:{self.depth}:{self.k}"
        return "exhaustive:" + ",".join(f"{p}={j}" for p, j in self.deviations)

    @classmethod
    def parse(cls, text: str) -> "ScheduleSpec":
        """The schedule ``text`` names (as a failure prints it); a ConfigError for anything
        else, a negative seed included, as ``--seed`` refuses one."""
        mode, _, rest = str(text).partition(":")
        spec = None
        try:
            if mode == "random":
                spec = cls("random", int(rest))
            elif mode == "pct":
                seed, depth, k = (int(x) for x in rest.split(":"))
                spec = cls("pct", seed, depth, k)
            elif mode == "exhaustive":
                devs = tuple(tuple(int(x) for x in item.split("=")) for item in rest.split(",") if item)
                if all(len(d) == 2 for d in devs):
                    spec = cls("exhaustive", deviations=tuple(sorted(devs)))
        except ValueError:
            pass
        why = "" if spec is None else spec._out_of_range()
        if spec is None or why:
            raise ConfigError(f"bad schedule {text!r}" + (f": {why}" if why else ""), where="option --replay",
                              fix="use what a failure printed: random:SEED, pct:SEED:DEPTH:K or "
                                  "exhaustive:P=J,... (SEED, K, P >= 0; DEPTH, J >= 1)")
        return spec

    def _out_of_range(self) -> str:
        """What is out of range in a parsed spec ('' if nothing)."""
        if self.seed < 0:
            return f"the seed {self.seed} is negative"
        if self.mode == "pct" and self.depth < 1:
            return f"the depth {self.depth} is not >= 1"
        if self.k < 0:
            return f"the event count {self.k} is negative"
        bad = next((d for d in self.deviations if d[0] < 0 or d[1] < 1), None)
        return f"deviation {bad[0]}={bad[1]} is not a choice point >= 0 taking an option >= 1" if bad else ""

    def policy(self):
        if self.mode == "random":
            return RandomPolicy(self.seed, perturb=True)
        if self.mode == "pct":
            return PCTPolicy(self.seed, self.depth, self.k)
        return BoundedPolicy(dict(self.deviations))


@dataclass
class ExploreResult:
    runs: int = 0                       # schedules run (default schedule included)
    passed: int = 0
    failures: list = field(default_factory=list)   # [(seed / ScheduleSpec / None, error)]
    mode: str = "random"
    digests: set = field(default_factory=set)      # one per distinct explored interleaving
    complete: bool = False              # exhaustive: every schedule within the bound ran
    events: int = 0                     # visible events of the last explored run
    warnings: list = field(default_factory=list)   # the default schedule's [(what, loc)]
    one_core: bool = False              # only one core ran under the default schedule: every
                                        # schedule is the same interleaving, none was explored
    # (the periodic engine) the default schedule showed that every schedule gives its result
    # (sim.determinacy): none was explored; else why not, when it was judged
    determinate: bool = False
    why_explored: str | None = None
    #: its explored schedules ran on the check's engine (worker processes, a Ray cluster), not
    #: in this process (a check too short to be worth a pool's start-up runs here)
    on_workers: bool = False

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def first(self):
        return self.failures[0] if self.failures else None

    @property
    def distinct(self) -> int:
        return len(self.digests)


class CheckScope:
    """What the runs of one check share, for as long as the check (an :func:`explore`, a
    unit of a spread one) and no longer: every schedule runs the same variant on the same
    data seed, so the scenario's inputs and golden are made once (:meth:`prepared`), and
    the memories of a run that passed go, zeroed, to the next run's cluster (``pool``).

    The inputs are shared only where a run cannot change them (:func:`reusable_args`) and
    making them printed nothing (a print per run stays a print per run).  A run under a
    scope is the run without one: tests/isa/test_check_scope.py."""

    def __init__(self):
        self.pool = MemoryPool()
        self._prepared: dict = {}          # (variant, data seed) -> (scenario, (args, expected))

    def prepared(self, scenario: Scenario, variant: str, seed: int) -> "tuple[dict, dict]":
        """``scenario.prepare(variant, seed)``, made once per scope where it can be shared."""
        got = self._prepared.get((variant, seed))
        if got is not None and got[0] is scenario:
            return got[1]
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                made = scenario.prepare(variant, seed)
        finally:                            # (also what it printed before it raised)
            printed = out.getvalue(), err.getvalue()
            sys.stdout.write(printed[0])
            sys.stderr.write(printed[1])
        if reusable_args(made[0]) and not any(printed):
            self._prepared[(variant, seed)] = (scenario, made)
        return made

    def passed(self, res) -> None:
        """The run ``res`` passed and nothing keeps it: its memories (every block's) serve the
        next run."""
        for cluster in res.clusters or [res.cluster]:
            self.pool.reclaim(cluster)


def _platform_for(platform, seed):
    plat = get_platform(platform)
    if seed is None:
        return plat
    rng = random.Random(seed * 7919 + 1)
    return plat.replace(cross_core_latency=max(1, int(plat.cross_core_latency * rng.uniform(0.25, 4.0))))


def _spec(s) -> "ScheduleSpec | None":
    if s is None or isinstance(s, ScheduleSpec):
        return s
    if isinstance(s, str):
        return ScheduleSpec.parse(s)
    return ScheduleSpec("random", int(s))


def run_schedule(target, seed=None, variant="default", platform=None, protocol=None,
                 data_seed: int = 0, args: dict | None = None, policy=None,
                 scope: CheckScope | None = None, **run_kwargs):
    """Run ``target`` (a Scenario, or ``(aic, aiv)`` with ``args``) under one schedule:
    ``seed`` is None (the default schedule), a random-mode seed, a :class:`ScheduleSpec`
    or its text; checks a Scenario against its golden.  ``platform`` / ``protocol``: a
    Scenario's own when not given, else a2a3 / spec.  ``policy`` (optional) is the
    schedule policy object to use (it keeps the run's digest and choice points);
    ``scope``: the check's :class:`CheckScope` (None: nothing shared)."""
    platform, protocol = on_platform(target, platform, protocol)
    spec = _spec(seed)
    if spec is not None and policy is None:
        policy = spec.policy()
    plat = _platform_for(platform, spec.seed if spec is not None and spec.mode == "random" else None)
    pool = scope.pool if scope is not None else None
    if isinstance(target, Scenario):
        prepared = scope.prepared(target, variant, data_seed) if scope is not None else None
        res, expected = target.run(variant, plat, protocol, data_seed, prepared=prepared, schedule=policy,
                                   pool=pool, **run_kwargs)
        compare_launches(res, expected, target.rtol, target.atol,
                         f"{target.name}[{variant}] (schedule {spec if spec is not None else 'default'})",
                         rerun=lambda: target.run(variant, plat, protocol, data_seed, prepared=prepared,
                                                  schedule=spec.policy() if spec is not None else None,
                                                  **{**run_kwargs, "record_writes": True})[0])
        return res
    aic, aiv = target
    return run(aic, aiv, dict(args or {}), platform=plat, protocol=protocol, schedule=policy, pool=pool,
               **run_kwargs)


def _mixed(n: int, seed: int, depth: int):
    """``mix``: the schedules of :data:`MIX` in turn, N in all; each mode's generator sees
    the policy of its own previous schedule (after that schedule ran)."""
    subs = []
    for m in MIX:
        mine: dict = {"complete": False}
        subs.append((mine, stream(m, n, seed, stream_depth(m, depth), mine)))
    yield from interleave(subs, n)


def interleave(subs: list, n: int):
    """The items of the ``(mine, iterator)`` pairs ``subs`` in turn, N in all, an iterator
    that ends dropping out (exhaustive running out of schedules within its bound); each
    item's second element is put in its pair's ``mine["policy"]`` when it is taken.  The
    order of ``mix``, also for rebuilding it from schedules run elsewhere."""
    subs = list(subs)
    done = 0
    while subs and done < n:
        for sub in list(subs):
            if done >= n:
                break
            mine, gen = sub
            item = next(gen, None)
            if item is None:               # exhaustive ran out of schedules within its bound
                subs.remove(sub)
                continue
            mine["policy"] = item[1]
            done += 1
            yield item


def stream_depth(mode: str, depth: int) -> int:
    """The depth the ``mode`` stream of a ``mix`` exploration of ``depth`` uses."""
    return depth or DEFAULT_DEPTH[mode]


def stream(mode: str, n: int, seed: int, depth: int, last: dict):
    """The explored schedules of ``mode``, lazily: each is ``(spec, policy)``;
    ``last["policy"]`` must hold the policy of the previous schedule once it ran (pct reads
    its event count, exhaustive its choice points); an exhaustive stream sets
    ``last["complete"]`` when it has no schedule left within its bound."""
    if mode == "mix":
        yield from _mixed(n, seed, depth)
    elif mode == "random":
        for i in range(n):
            spec = ScheduleSpec("random", seed + i)
            yield spec, spec.policy()
    elif mode == "pct":
        k = 0                            # the first run measures k (no change points)
        for i in range(n):
            spec = ScheduleSpec("pct", seed + i, depth, k)
            yield spec, spec.policy()
            k = max(k, last["policy"].events)
    else:
        pending = deque([iter([{}])])    # iterators of deviation sets, fewest deviations first

        def following():
            while pending:
                d = next(pending[0], None)
                if d is not None:
                    return d
                pending.popleft()
            return None
        d, done = following(), 0
        while d is not None and done < n:
            spec = ScheduleSpec("exhaustive", deviations=tuple(sorted(d.items())))
            yield spec, spec.policy()
            done += 1
            pending.append(bounded_children(d, last["policy"].options, depth))
            d = following()
        last["complete"] = d is None


def checked_target(target, schedules, caller: str = "explore") -> None:
    """A ConfigError at the caller's line for an :func:`explore` target that is neither a
    Scenario nor an ``(aic, aiv)`` pair, or a number of schedules that is not one (``caller``:
    the function the user called, for the message)."""
    if not isinstance(target, Scenario) and not (isinstance(target, (tuple, list)) and len(target) == 2):
        what = (f"a kernel function ({getattr(target, '__name__', target)!r})" if callable(target)
                else with_article(type(target).__name__))
        raise ConfigError(f"{caller}() takes a Scenario or an (aic, aiv) pair of kernels, got {what}",
                          where=user_line(),
                          fix=f"{caller}(SCENARIO, schedules=N), or {caller}((cube, vector), args={{...}}, "
                              "schedules=N) (aiv: one kernel for both Vector cores, or a pair)")
    if isinstance(schedules, bool) or not isinstance(schedules, (int, np.integer)) or schedules < 0:
        raise ConfigError(f"{caller}(): schedules={schedules!r} is not a number of schedules", where=user_line(),
                          fix="give schedules >= 0: the explored schedules run after the default one "
                              "(0: the default schedule only)")


#: what a run of each schedule gets from explore itself, not from its keywords
_SET_PER_RUN = ("aic", "aiv", "args", "platform", "protocol", "schedule", "schedule_seed", "pool")


def checked_call(target, variant, platform, protocol, args, run_kwargs: dict, caller: str = "explore") -> None:
    """A ConfigError at the caller's line for what is wrong with an :func:`explore` call itself
    rather than with a kernel - a keyword that neither it nor ``run()`` takes, a variant the
    Scenario does not have, an unknown platform or protocol, an ``(aic, aiv)`` pair's kernels or
    missing arguments - which would otherwise fail every schedule alike (or be a raw TypeError
    from ``run()``): raised, not returned as a schedule's failure, as ``run()`` raises it."""
    from .launch import _select_kwargs, kernels_problem, parse_protocol
    where = user_line()
    takes = [n for n in inspect.signature(run).parameters if n not in _SET_PER_RUN]
    unknown = [k for k in run_kwargs if k not in takes and k != "scope"]     # (scope: the check's own)
    if unknown:
        own = [n for n, p in inspect.signature(explore).parameters.items()
               if n != "target" and p.kind is not p.VAR_KEYWORD]
        raise ConfigError(f"{caller}() got unknown keyword{'s' if len(unknown) > 1 else ''} "
                          f"{', '.join(map(repr, unknown))}", where=where,
                          fix=f"use {caller}'s keywords ({', '.join(own)}) or run()'s, which it passes on "
                              f"({', '.join(takes)})")
    try:
        get_platform(platform)
        parse_protocol(protocol)
        if isinstance(target, Scenario):
            target.params(variant)
            return
        aic, aiv = target
        bad = kernels_problem(aic, aiv)
        if bad is not None:
            raise ConfigError(f"{caller}(): {bad[0]}", fix=bad[1])
        if args is not None and not isinstance(args, dict):
            raise ConfigError(f"{caller}(): args is {with_article(type(args).__name__)}, not a dict of the "
                              "kernels' arguments", fix="pass args={parameter name: value}")
        for fn in [aic, *(aiv if isinstance(aiv, (tuple, list)) else [aiv])]:
            if fn is not None:
                try:
                    _select_kwargs(fn, dict(args or {}))      # (a missing argument: a ConfigError)
                except (TypeError, ValueError):               # (no signature to read: the run says)
                    pass
    except ConfigError as e:
        if e.where is None:
            e.where = where
            e.args = (e.render(),)
        raise


def checked_depth(mode: str, depth: int | None) -> int:
    """``depth`` (None: the mode's default) after checking ``mode`` and ``depth`` (a
    ConfigError naming the option for a bad one)."""
    if mode not in MODES:
        raise ConfigError(f"unknown exploration mode {mode!r}", where="option --explore",
                          fix=f"use one of: {', '.join(MODES)}")
    depth = DEFAULT_DEPTH[mode] if depth is None else int(depth)
    if mode not in ("random", "mix") and depth < 1:
        raise ConfigError(f"--depth {depth}: {mode} needs a depth >= 1", where="option --depth",
                          fix=f"e.g. --depth {DEFAULT_DEPTH[mode]}")
    return depth


def run_explored(target, spec: ScheduleSpec, policy, variant="default", platform="a2a3",
                 protocol="spec", data_seed: int = 0, args: dict | None = None,
                 scope: CheckScope | None = None, **run_kwargs):
    """Run one explored schedule: None if it passes, else the PtoPipeError it fails with
    (the schedule in its findings); a kernel's own exception is raised, its schedule in
    ``ptopipe_schedule``.  ``scope``: the check's :class:`CheckScope` (None: nothing shared)."""
    key = failure_key(spec)
    try:
        res = run_schedule(target, spec, variant, platform, protocol, data_seed, args, policy=policy,
                           scope=scope, **{"echo_prints": False, **run_kwargs})   # prints: the default's
        if scope is not None:
            scope.passed(res)
        return None                     # (its cluster is garbage before the next run, not after it)
    except PtoPipeError as e:
        e.findings.append({"kind": "schedule", "seed": key if isinstance(key, int) else str(key)})
        return e
    except Exception as e:  # noqa: BLE001 - a kernel's own error: passed on, with its schedule
        _tag_schedule(e, key)
        raise


def _tag_schedule(e: Exception, key) -> None:
    """A kernel's own exception leaves a run with the schedule it ran under
    (``ptopipe_schedule``; None: the default), where the exception takes attributes."""
    try:
        e.ptopipe_schedule = key
    except AttributeError:
        pass


def failure_key(spec: "ScheduleSpec | None"):
    """How a failure names its schedule: None (the default), a random seed, else the spec."""
    return spec.seed if spec is not None and spec.mode == "random" else spec


def explore(target, schedules: int = 50, seed: int = 0, variant="default", platform=None,
            protocol=None, data_seed: int = 0, args: dict | None = None, stop_on_first: bool = True,
            include_default: bool = True, progress=None, mode: str = "mix", depth: int | None = None,
            **run_kwargs) -> ExploreResult:
    """Run the default schedule and up to ``schedules`` explored ones of ``mode``, with the
    race checker's causal order on (``causal=False`` in ``run_kwargs``: completion times).
    When only one core runs, the default schedule is the only interleaving: nothing more is
    run (``one_core``, ``complete``).  With the periodic engine (``engine="periodic"`` in
    ``run_kwargs``, or ``PTOPIPE_ENGINE``), nothing more is run either when the default
    schedule shows that every schedule gives its result (``determinate``, ``complete``;
    :mod:`ptopipe.sim.determinacy`); ``why_explored`` says why it did not.

    ``platform`` / ``protocol``: a Scenario's own when not given, else a2a3 / spec.
    ``progress(done, total)``, if given, is called before each run."""
    checked_target(target, schedules)
    platform, protocol = on_platform(target, platform, protocol)
    checked_call(target, variant, platform, protocol, args, run_kwargs)
    depth = checked_depth(mode, depth)
    run_kwargs.setdefault("causal", True)      # the stricter race order (isa.launch.run)
    run_kwargs.setdefault("scope", CheckScope())
    total = schedules + (1 if include_default else 0)
    out = ExploreResult(mode=mode)
    if include_default:
        explore_default(out, target, variant, platform, protocol, data_seed, args, progress, total,
                        **run_kwargs)
        if out.one_core or out.determinate or (out.failures and stop_on_first):
            return out
    return explore_rest(out, target, schedules, seed, variant, platform, protocol, data_seed, args,
                        stop_on_first, progress, mode, depth, total, **run_kwargs)


def explore_default(out: ExploreResult, target, variant="default", platform="a2a3", protocol="spec",
                    data_seed: int = 0, args: dict | None = None, progress=None, total: int = 1,
                    scope: CheckScope | None = None, **run_kwargs) -> ExploreResult:
    """The first part of :func:`explore`: the default schedule, counted in ``out``, its
    warnings kept (``one_core`` and ``complete`` when only one core ran; ``determinate`` and
    ``complete`` when, judged under the periodic engine, every schedule gives its result); a
    failure is ``out``'s first, a kernel's own exception raised.  ``scope``: the check's
    :class:`CheckScope` (None: nothing shared)."""
    if progress is not None:
        progress(out.runs, total)
    out.runs += 1
    judge = engine_name(run_kwargs.get("engine")) == "periodic"
    try:
        res = run_schedule(target, None, variant, platform, protocol, data_seed, args, scope=scope,
                           **{"echo_prints": True, **run_kwargs, **({"determinacy": True} if judge else {})})
        out.passed += 1
        out.warnings = list(res.summary.leaks)
        if sum(c["state"] != "idle" for c in res.summary.cores.values()) <= 1:
            out.one_core = out.complete = True         # nothing to interleave
        elif judge:
            why = res.cluster.determinacy.why_not or (out.warnings and "the run warned")
            out.determinate = out.complete = not why
            out.why_explored = why or None
        if scope is not None:
            scope.passed(res)
    except PtoPipeError as e:
        e.findings.append({"kind": "schedule", "seed": None})
        out.failures.append((None, e))
    except Exception as e:  # noqa: BLE001 - a kernel's own error: passed on, with its schedule
        _tag_schedule(e, None)
        raise
    return out


def explore_rest(out: ExploreResult, target, schedules: int, seed: int = 0, variant="default",
                 platform="a2a3", protocol="spec", data_seed: int = 0, args: dict | None = None,
                 stop_on_first: bool = True, progress=None, mode: str = "mix", depth: int = 0,
                 total: int | None = None, **run_kwargs) -> ExploreResult:
    """The second part of :func:`explore`: the ``schedules`` explored schedules of ``mode``
    (``depth`` checked already), in this process, one after the other, counted in ``out``
    (``scope`` in ``run_kwargs``: the check's :class:`CheckScope`; none: one for these runs)."""
    run_kwargs.setdefault("scope", CheckScope())
    total = schedules + out.runs if total is None else total
    last: dict = {"complete": False}
    for s, pol in stream(mode, schedules, seed, depth, last):
        if progress is not None:
            progress(out.runs, total)
        out.runs += 1
        last["policy"] = pol
        try:
            err = run_explored(target, s, pol, variant, platform, protocol, data_seed, args, **run_kwargs)
        finally:
            out.digests.add(pol.digest)
            out.events = pol.events
        if err is None:
            out.passed += 1
            continue
        out.failures.append((failure_key(s), err))
        if stop_on_first:
            break
    out.complete = bool(last["complete"]) and not (stop_on_first and out.failures)
    return out
