"""Schedule exploration: rerun a kernel under perturbed interleavings and latencies.

``explore(scenario, schedules=N, seed=S)`` runs the default schedule, then N schedules
with schedule seeds S, S+1, ...: each seed randomises the scheduler's choice among ready
cores (and preemption on wake-up) and the cross-core flag latency.  The first failure -
any PtoPipeError, including a result that differs from the golden - is reported with the
seed that replays it (``run_schedule(scenario, seed)`` / ``ptopipe check --seed S
--schedules 1``).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..arch import get_platform
from ..errors import PtoPipeError
from .launch import Scenario, compare_launches, data_rng, run


@dataclass
class ExploreResult:
    runs: int = 0                       # schedules run (default schedule included)
    passed: int = 0
    failures: list = field(default_factory=list)   # [(seed or None, error)]

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def first(self):
        return self.failures[0] if self.failures else None


def _platform_for(platform, seed):
    plat = get_platform(platform)
    if seed is None:
        return plat
    rng = random.Random(seed * 7919 + 1)
    return plat.replace(cross_core_latency=max(1, int(plat.cross_core_latency * rng.uniform(0.25, 4.0))))


def run_schedule(target, seed=None, variant="default", platform="a2a3", protocol="spec",
                 data_seed: int = 0, args: dict | None = None, **run_kwargs):
    """Run ``target`` (a Scenario, or ``(aic, aiv)`` with ``args``) under schedule ``seed``
    (None: the default deterministic schedule); checks a Scenario against its golden."""
    plat = _platform_for(platform, seed)
    if isinstance(target, Scenario):
        params = target.params(variant)
        a = target.make_args(data_rng(data_seed), **params)
        expected = target.golden(a, **params)
        if run_kwargs.get("sync") is None:
            run_kwargs["sync"] = target.sync
        if target.launches is not None:
            run_kwargs.setdefault("launches", target.launches)
        res = run(target.aic, target.aiv, a, platform=plat, protocol=protocol, schedule_seed=seed, **run_kwargs)
        compare_launches(res, expected, target.rtol, target.atol,
                         f"{target.name}[{variant}] (schedule seed {seed})",
                         rerun=lambda: run(target.aic, target.aiv, target.make_args(data_rng(data_seed), **params),
                                           platform=plat, protocol=protocol, schedule_seed=seed,
                                           **{**run_kwargs, "record_writes": True}))
        return res
    aic, aiv = target
    return run(aic, aiv, dict(args or {}), platform=plat, protocol=protocol, schedule_seed=seed, **run_kwargs)


def explore(target, schedules: int = 50, seed: int = 0, variant="default", platform="a2a3",
            protocol="spec", data_seed: int = 0, args: dict | None = None, stop_on_first: bool = True,
            include_default: bool = True, progress=None, **run_kwargs) -> ExploreResult:
    """Run the default schedule and ``schedules`` perturbed ones (seeds ``seed`` ...).

    ``progress(done, total)``, if given, is called before each run."""
    out = ExploreResult()
    seeds = ([None] if include_default else []) + [seed + i for i in range(schedules)]
    for s in seeds:
        if progress is not None:
            progress(out.runs, len(seeds))
        out.runs += 1
        try:
            run_schedule(target, s, variant, platform, protocol, data_seed, args, **run_kwargs)
            out.passed += 1
        except PtoPipeError as e:
            e.findings.append({"kind": "schedule", "seed": s})
            out.failures.append((s, e))
            if stop_on_first:
                break
    return out
