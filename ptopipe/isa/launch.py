"""Launching kernels: ``run(aic=..., aiv=..., args=...)`` and the :class:`Scenario` bundle.

``run`` plays the orchestration role: it lays the numpy arguments out in GM, passes each
kernel a :class:`GlobalTensor` per array (scalars as they are), runs the Cube kernel and
the Vector kernel (on both sub-blocks) on a simulated :class:`~ptopipe.sim.Cluster`, and
returns the GM contents of every array argument plus a run summary.
"""
from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..arch import PipeUnit, Platform, get_platform
from ..arch.dtypes import is_element_type
from ..errors import ConfigError, LeakError, MismatchError, PtoPipeError
from ..sim import Cluster, CoreState, gm_layout
from .checks import KernelChecks, flag_leaks
from .pipe import Protocol, leaks
from .tensor import GlobalTensor, GMPtr


def gm_buffer(nbytes: int) -> np.ndarray:
    """A zeroed GM buffer argument of ``nbytes`` bytes (e.g. a GM_SLOT_BUFFER)."""
    return np.zeros(int(nbytes), dtype=np.uint8)


def _protocol(p) -> Protocol:
    try:
        return p if isinstance(p, Protocol) else Protocol(str(p))
    except ValueError:
        raise ConfigError(f"unknown protocol {p!r}", fix="use 'spec' or 'pto-isa'") from None


def _select_kwargs(fn, args: dict) -> dict:
    sig = inspect.signature(fn)
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return dict(args)
    out = {}
    for name, p in sig.parameters.items():
        if name in args:
            out[name] = args[name]
        elif p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            raise ConfigError(f"kernel {fn.__name__} needs argument {name!r} but args has "
                              f"{', '.join(args) or 'nothing'}",
                              where=f"{inspect.getsourcefile(fn)}:{fn.__code__.co_firstlineno}",
                              fix=f"add {name!r} to args=")
    return out


@dataclass
class RunSummary:
    platform: str
    protocol: str
    cycles: int
    cores: dict            # name -> {instructions, busy{pipe}, stall{}, state}
    pipes: list            # [{name, tiles, pushes, pops, frees, lanes, slot_num, slot_size}]
    wall_seconds: float
    leaks: list = field(default_factory=list)

    def format(self) -> str:
        lines = [f"platform {self.platform}, protocol {self.protocol}: {self.cycles} cycles "
                 f"(simulated in {self.wall_seconds * 1e3:.1f} ms)"]
        for name, c in self.cores.items():
            if c["state"] == "idle":
                continue
            busy = ", ".join(f"{p} {v}" for p, v in c["busy"].items() if v)
            lines.append(f"  {name:5s} {c['instructions']:7d} instr  busy: {busy or '-'}")
        for p in self.pipes:
            # tiles are slot fills; TPUSH/TPOP/TFREE count instructions over all cores (a C2V
            # tile is popped once per lane, a V2C tile pushed once per lane)
            lanes = p["lanes"]
            lines.append(f"  {p['name']}: {p['tiles']} tiles pushed ({p['pushes']} TPUSH), {p['pops']} TPOP, "
                         f"{p['frees']} TFREE, {lanes} lane{'s' if lanes != 1 else ''} "
                         f"(SlotNum {p['slot_num']} x {p['slot_size']} B)")
        for what, loc in self.leaks:
            lines.append(f"  warning: {what}" + (f" ({loc})" if loc else ""))
        return "\n".join(lines)


@dataclass
class RunResult:
    outputs: dict
    summary: RunSummary
    cluster: Cluster

    def __getitem__(self, name: str) -> np.ndarray:
        return self.outputs[name]


def run(aic: Callable | None = None, aiv=None, args: dict | None = None,
        platform: "str | Platform" = "a2a3", protocol: str = "spec",
        schedule_seed: int | None = None, trace: bool = False, leak_check: bool = True,
        max_instructions: int | None = None, gm_extra: int = 0, timing: bool = True,
        checks: bool = True, until_cycle: int | None = None,
        timeout: float | None = None, schedule=None) -> RunResult:
    """Run a Cube kernel and a Vector kernel together on one simulated cluster.

    ``aiv`` is one function (run on both sub-blocks; use ``get_subblockid()``) or a pair
    ``(fn_for_aiv0, fn_for_aiv1)`` (``None`` leaves that core idle).  Each kernel receives,
    by parameter name, the entries of ``args``: numpy arrays as GlobalTensors in GM, other
    values unchanged.  Returns a :class:`RunResult` whose ``outputs`` hold the final GM
    contents of every array argument.  ``trace=True`` records every instruction for the
    profile / swimlane / Chrome trace (:mod:`ptopipe.report`); ``timing=False`` skips the
    cost model (a functional run: cycles then only count issued instructions).  Raises a :class:`~ptopipe.PtoPipeError` subclass
    (e.g. DeadlockError, ProtocolError, ConfigError) on any problem; never hangs: a
    BudgetError naming each core's kernel line stops a run past ``max_instructions`` per
    core (instructions, TSYNCs and flag waits; None: 50,000,000), past ``until_cycle``
    simulated cycles (None: no such bound) or after ``timeout`` seconds of wall-clock time
    (None: 60 s; ``math.inf``: none; only when run from the main thread).
    ``checks=True`` (default) turns on the happens-before race checker, slot-reuse and
    use-after-free checks of the address flow, and leak checks at kernel end
    (:mod:`ptopipe.isa.checks`); ``leak_check=False`` reports leaks as summary warnings.
    ``schedule`` (a :mod:`ptopipe.sim.schedule` policy; ``schedule_seed``: a random one)
    makes every cross-core visible event a choice point (:mod:`ptopipe.isa.explore`).
    """
    args = dict(args or {})
    plat = get_platform(platform)
    proto = _protocol(protocol)
    if aic is None and aiv is None:
        raise ConfigError("run() needs at least one kernel", fix="pass aic=... and/or aiv=...")
    arrays = {k: np.ascontiguousarray(v) for k, v in args.items() if isinstance(v, np.ndarray)}
    for k, a in arrays.items():
        if not is_element_type(a.dtype):
            raise ConfigError(f"argument {k!r} is a numpy array of dtype {a.dtype}, which GM cannot hold",
                              where=f"args[{k!r}]",
                              fix="pass a numeric array, e.g. np.asarray(x, dtype=np.float32)")
        if a.ndim > 5 or a.ndim == 0:
            raise ConfigError(f"argument {k!r} has {a.ndim} dimensions; GM tensors have 1 to 5",
                              fix="reshape it")
    addrs, end = gm_layout([a.nbytes for a in arrays.values()])
    cluster = Cluster(plat, gm_size=end + int(gm_extra), schedule_seed=schedule_seed, trace=trace,
                      max_instructions=max_instructions, timing=timing, until_cycle=until_cycle,
                      timeout=timeout, schedule=schedule)
    cluster.shared["protocol"] = proto
    if checks:
        cluster.checker = KernelChecks(cluster)
    kargs = dict(args)
    for (name, a), addr in zip(arrays.items(), addrs):
        cluster.gm.buf[addr:addr + a.nbytes] = a.reshape(-1).view(np.uint8)
        kargs[name] = GlobalTensor(GMPtr(addr, a.dtype), a.shape, name=name)
    kernels = {}
    if aic is not None:
        kernels[cluster.aic] = (aic, _select_kwargs(aic, kargs))
    fns = aiv if isinstance(aiv, (tuple, list)) else (aiv, aiv)
    for sub, fn in enumerate(fns):
        if fn is not None:
            kernels[cluster.aiv(sub)] = (fn, _select_kwargs(fn, kargs))
    t0 = time.perf_counter()
    cluster.run(kernels)
    wall = time.perf_counter() - t0
    found = leaks(cluster)
    flag_errors, flag_warnings = flag_leaks(cluster) if checks else ((), ())
    if (found or flag_errors) and leak_check:
        allf = list(found) + list(flag_errors)
        what, loc = allf[0]
        raise LeakError(f"leak at kernel end: {what}", where=str(loc) if loc else None,
                        details="\n".join(w + (f" ({l})" if l else "") for w, l in allf[1:]) or None,
                        fix="pair every TPOP with TFREE and every TALLOC with TPUSH; pop everything pushed",
                        findings=[{"kind": "leak", "what": w, "where": str(l) if l else None} for w, l in allf])
    found = list(found) + list(flag_errors) + list(flag_warnings)
    outputs = {}
    for (name, a), addr in zip(arrays.items(), addrs):
        # views of the final GM contents (no copy: the result owns the cluster's GM)
        outputs[name] = cluster.gm.buf[addr:addr + a.nbytes].view(a.dtype).reshape(a.shape)
    return RunResult(outputs, summarize(cluster, proto, wall, found), cluster)


def summarize(cluster: Cluster, proto: Protocol, wall: float, found=()) -> RunSummary:
    cores = {c.name: {"instructions": c.instructions, "state": c.state.value,
                      "busy": {p.name: c.busy[p] for p in PipeUnit}, "stall": dict(c.stall),
                      "end": c.end_time()}
             for c in cluster.cores}
    pipes = [{"name": ch.name, "tiles": ch.tiles, "pushes": ch.pushes, "pops": ch.pops, "frees": ch.frees,
              "lanes": len(ch.peers), "slot_num": ch.slot_num, "slot_size": ch.slot_size}
             for ch in cluster.shared.get("channels", {}).values()]
    return RunSummary(cluster.platform.name, proto.value, cluster.cycles, cores, pipes, wall, list(found))


@dataclass(frozen=True)
class Scenario:
    """A runnable kernel with its inputs and numpy golden - what ``ptopipe run FILE`` runs.

    ``make_args(rng, **params)`` builds the ``args`` dict; ``golden(args, **params)`` returns
    the expected outputs ``{name: array}``.  ``variants`` name parameter sets (None: one
    ``"default"`` run with make_args' own defaults)."""
    name: str
    aic: Callable | None
    aiv: object
    make_args: Callable
    golden: Callable
    variants: dict | None = None
    rtol: float = 1e-5
    atol: float = 1e-5
    doc: str = ""
    platform: str | None = None   # the scenario's platform / protocol: what `ptopipe run/check/
    protocol: str | None = None   # trace/sweep` use unless an option overrides them (None: defaults)

    def __post_init__(self):
        v = self.variants
        if v is None:       # no parameter sets: one run with make_args' own defaults
            object.__setattr__(self, "variants", {"default": {}})
        elif (not isinstance(v, dict) or not v
              or not all(isinstance(k, str) and k and isinstance(p, dict) for k, p in v.items())):
            raise ConfigError(f"scenario {self.name!r}: variants must be a non-empty dict "
                              f"{{name: {{make_args parameter: value}}}}, got {v!r}", where=_caller(),
                              fix="leave variants out for one 'default' run with make_args' defaults, "
                                  "or write variants={'default': {}}")

    @property
    def default_variant(self) -> str:
        """``'default'`` if there is one, else the first variant."""
        return "default" if "default" in self.variants else next(iter(self.variants))

    def args(self, variant: str, seed: int = 0) -> dict:
        return self.make_args(data_rng(seed), **self.params(variant))

    def params(self, variant: str) -> dict:
        if variant not in self.variants:
            raise ConfigError(f"scenario {self.name} has no variant {variant!r}",
                              fix=f"choose one of: {', '.join(self.variants)}")
        return dict(self.variants[variant])

    def run(self, variant: str = "default", platform="a2a3", protocol="spec", seed: int = 0,
            **run_kwargs) -> "tuple[RunResult, dict]":
        """Run one variant; returns (result, expected)."""
        params = self.params(variant)
        args = self.make_args(data_rng(seed), **params)
        expected = self.golden(args, **params)
        res = run(self.aic, self.aiv, args, platform=platform, protocol=protocol, **run_kwargs)
        return res, expected

    def check(self, variant: str = "default", platform="a2a3", protocol="spec", seed: int = 0,
              **run_kwargs) -> RunResult:
        """Run one variant and raise :class:`MismatchError` if it differs from the golden."""
        res, expected = self.run(variant, platform, protocol, seed, **run_kwargs)
        compare(res.outputs, expected, self.rtol, self.atol, f"{self.name}[{variant}]")
        return res


def data_rng(seed) -> np.random.Generator:
    """The input-data generator of a Scenario run (``seed``: a non-negative integer)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"data seed {seed!r} is not a non-negative integer", where="seed",
                          fix="use a seed >= 0 (e.g. --seed 0)")
    return np.random.default_rng(int(seed))


def _caller() -> str | None:
    """file:line of the first frame outside this module (the user's ``Scenario(...)``)."""
    f = inspect.currentframe()
    while f is not None and (f.f_code.co_filename in (__file__, "<string>")):
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else None


def compare(outputs: dict, expected: dict, rtol: float, atol: float, label: str = "") -> None:
    bad = []
    for k, exp in expected.items():
        got = outputs.get(k)
        if got is None:
            bad.append(f"{k}: no such output")
            continue
        exp = np.asarray(exp)
        if got.shape != exp.shape:
            bad.append(f"{k}: shape {got.shape} != expected {exp.shape}")
            continue
        g, e = got.astype(np.float64), exp.astype(np.float64)
        ok = np.isclose(g, e, rtol=rtol, atol=atol)
        if not ok.all():
            idx = np.argwhere(~ok)
            first = tuple(int(i) for i in idx[0])
            bad.append(f"{k}: {len(idx)} of {ok.size} elements differ (max abs err "
                       f"{np.max(np.abs(g - e)):.4g}); first at {first}: got {g[first]:.6g}, "
                       f"expected {e[first]:.6g}")
    if bad:
        raise MismatchError(f"{label} does not match the numpy golden", details="\n".join(bad),
                            fix="compare the kernel's tiling, offsets and split mode with the golden")


__all__ = ["RunResult", "RunSummary", "Scenario", "compare", "gm_buffer", "run", "summarize",
           "PtoPipeError", "CoreState"]
