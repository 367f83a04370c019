"""Sweeps: run one scenario over a grid of parameters (its ``make_args`` keyword
parameters, e.g. ``depth`` or ``M``), in parallel processes, and tabulate cycles and
utilisation with the best configuration marked.

Each configuration runs in a worker process that loads the kernel file itself
(:func:`ptopipe.driver.loader.load_scenarios`), so this works with any multiprocessing
start method.
"""
from __future__ import annotations

import enum
import inspect
import itertools
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

from ..driver.loader import load_scenarios
from ..errors import ConfigError, PtoPipeError, user_frame
from ..isa.launch import compare, run
from ..sim.bounds import CommandWatch, deadline
from ..isa.scenario import Scenario
from ._io import save_png
from ..errors import with_article


@dataclass
class SweepRow:
    params: dict
    cycles: int | None = None
    utilisation: dict = field(default_factory=dict)   # core -> busiest pipe's utilisation
    busiest: dict = field(default_factory=dict)       # core -> pipe name
    ok: bool = True
    error: str | None = None
    best: bool = False


def parse_value(text: str):
    """``"4"`` -> 4, ``"0.5"`` -> 0.5, ``"TILE_UP_DOWN"`` -> that isa constant, else the string."""
    t = text.strip()
    for conv in (int, float):
        try:
            return conv(t)
        except ValueError:
            pass
    if t.isidentifier() and t.isupper():
        from .. import isa
        if hasattr(isa, t):
            return getattr(isa, t)
    if t in ("True", "False"):
        return t == "True"
    return t


def parse_params(specs) -> dict:
    """``["depth=1,2,4", "M=64"]`` -> ``{"depth": [1, 2, 4], "M": [64]}`` (a name given twice: a
    ConfigError)."""
    out = {}
    for spec in specs or ():
        name, eq, values = spec.partition("=")
        name = name.strip()
        vals = [parse_value(v) for v in values.split(",") if v.strip()]
        if not eq or not name.isidentifier() or not vals:
            raise ConfigError(f"bad --param {spec!r}", where="option --param",
                              fix="write --param name=v1,v2,... (e.g. depth=1,2,4,8)")
        if name in out:             # (the last one would win, silently)
            raise ConfigError(f"--param {name} is given twice", where="option --param",
                              fix=f"give all its values in one: --param {name}=v1,v2,...")
        out[name] = vals
    return out


def grid(params: dict) -> list:
    names = list(params)
    return [dict(zip(names, combo)) for combo in itertools.product(*(params[n] for n in names))]


def pick_scenario(scenarios, name):
    """The scenario named ``name`` (None: the first)."""
    if name is None:
        return scenarios[0]
    for sc in scenarios:
        if sc.name == name:
            return sc
    raise ConfigError(f"no scenario named {name!r}", where="option --scenario",
                      fix="choose one of: " + ", ".join(s.name for s in scenarios))


def check_params(sc: Scenario, variant: str, params: dict) -> dict:
    """``params`` with every value checked against (and converted to) the type of the
    parameter's value in ``variant``, else of its make_args default; raises a ConfigError
    naming ``--param`` if a swept name is not a make_args parameter or a value has the
    wrong type (``depth=abc``)."""
    base = sc.params(variant)
    sig = inspect.signature(sc.make_args)
    takes_any = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    known = [n for n in sig.parameters if n != "rng"]
    out = {}
    for n, values in params.items():
        if not takes_any and n not in sig.parameters:
            raise ConfigError(f"scenario {sc.name} has no parameter {n!r}", where="option --param",
                              fix=f"its make_args parameters are: {', '.join(known)}" if known else
                              "its make_args takes no parameter besides rng: nothing to sweep; give "
                              "make_args keyword parameters with defaults (def make_args(rng, depth=4)) "
                              "to sweep them")
        p = sig.parameters.get(n)
        ref = base.get(n, p.default if p is not None and p.default is not p.empty else None)
        out[n] = [_coerce(n, v, ref) for v in values]
    return out


def _coerce(name: str, value, ref):
    """``value`` as the type of ``ref`` (a parameter's variant value or default)."""
    if ref is None:
        return value
    kind = type(ref)
    if isinstance(ref, enum.Enum):
        if isinstance(value, kind):
            return value
        for conv in (kind, kind.__getitem__):       # by value (split=1) or by name
            try:
                return conv(value)
            except (ValueError, KeyError, TypeError):
                pass
        expect = f"{with_article(kind.__name__)} ({', '.join(m.name for m in kind)})"
    elif isinstance(ref, bool):
        if isinstance(value, bool):
            return value
        expect = "True or False"
    elif isinstance(ref, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        expect = "an integer"
    elif isinstance(ref, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        expect = "a number"
    elif isinstance(ref, str):
        return value if isinstance(value, str) else str(value)
    elif isinstance(value, kind):
        return value
    else:
        expect = f"{with_article(kind.__name__)}"
    raise ConfigError(f"--param {name}={_fmt(value)}: {name} takes {expect}", where="option --param",
                      fix=f"give {name} values like its default ({name}={_fmt(ref)})")


def run_config(path: str, scenario: str | None, variant: str, params: dict,
               platform="a2a3", protocol="spec", seed: int = 0, bounds: dict | None = None) -> SweepRow:
    """Run one configuration (in a worker process); never raises for a kernel failure.

    ``bounds`` (``timeout`` / ``until_cycle`` / ``max_instructions`` of ``run``) bound the
    run in the worker itself: a configuration that hangs becomes a failed row (BudgetError)
    and the sweep goes on."""
    row = SweepRow(dict(params))
    try:
        bounds = dict(bounds or {})
        bounds["timeout"] = limit = deadline(bounds.get("timeout"))   # the row's, its make_args and golden too
        with CommandWatch(limit):
            _run_config(row, path, scenario, variant, params, platform, protocol, seed, bounds)
    except PtoPipeError as e:
        row.ok = False
        row.error = f"{type(e).__name__}: {str(e).splitlines()[0]}" + (f" at {e.where}" if e.where else "")
    except Exception as e:  # noqa: BLE001 - a user kernel may raise anything
        row.ok = False
        f = user_frame(e)
        row.error = f"{type(e).__name__}: {e}" + (f" at {f.filename}:{f.lineno}" if f else "")
    return row


def _run_config(row: SweepRow, path, scenario, variant, params, platform, protocol, seed, bounds) -> None:
    """:func:`run_config`'s work, into ``row``; raises what fails."""
    sc = pick_scenario(load_scenarios(path), scenario)
    p = dict(sc.params(variant))
    p.update(params)
    args = sc.inputs(p, seed, None if params else variant)   # a sweep axis: not the variant's
    expected = sc.expected(args, p)
    res = run(sc.aic, sc.aiv, args, platform=platform, protocol=protocol, sync=sc.sync,
              **(bounds or {}))
    compare(res.outputs, expected, sc.rtol, sc.atol, f"{sc.name}{params}")
    row.cycles = res.summary.cycles
    for name, c in res.summary.cores.items():
        if c["state"] == "idle":
            continue
        pipe, busy = max(c["busy"].items(), key=lambda kv: kv[1])
        row.utilisation[name] = busy / row.cycles if row.cycles else 0.0
        row.busiest[name] = pipe


def sweep(path: str, params: dict, variant: str = "default", scenario: str | None = None,
          platform="a2a3", protocol="spec", seed: int = 0, workers: int = 2,
          bounds: dict | None = None, progress=None) -> list:
    """Run every configuration of the grid ``params``; returns [SweepRow] with the best marked.
    ``progress(done, total)``, if given, is called as configurations finish."""
    sc = pick_scenario(load_scenarios(path), scenario)
    if not params:
        names = [n for n in inspect.signature(sc.make_args).parameters if n != "rng"]
        raise ConfigError("nothing to sweep: no --param given", where="option --param",
                          fix=(f"name a make_args parameter of {sc.name} and its values, e.g. --param "
                               f"{names[0]}=V1,V2 (its parameters: {', '.join(names)})" if names
                               else f"give {sc.name}'s make_args keyword parameters to vary")
                              + f"; `ptopipe run` runs the one configuration of variant {variant}")
    configs = grid(check_params(sc, variant, params))
    tell = progress or (lambda done, total: None)
    if workers <= 1 or len(configs) == 1:
        rows = []
        for c in configs:
            tell(len(rows), len(configs))
            rows.append(run_config(path, sc.name, variant, c, platform, protocol, seed, bounds))
    else:
        with ProcessPoolExecutor(max_workers=workers) as ex:
            futs = [ex.submit(run_config, path, sc.name, variant, c, platform, protocol, seed,
                              bounds) for c in configs]
            for k, _ in enumerate(as_completed(futs)):
                tell(k + 1, len(configs))
            rows = [_row(f, c) for f, c in zip(futs, configs)]
    good = [r for r in rows if r.ok]
    if good:
        min(good, key=lambda r: r.cycles).best = True
    return rows


def _row(fut, params: dict) -> SweepRow:
    """A configuration's row from its worker: a worker that died (the kernel ended its process:
    os._exit, a crash in native code) is a failed row, as a run that fails is."""
    try:
        return fut.result()
    except BrokenProcessPool:
        row = SweepRow(dict(params))
        row.ok = False
        row.error = ("WorkerLost: its worker process ended (the kernel or its make_args may end the process: "
                     "os._exit, a crash in native code)")
        return row


def format_table(rows: list) -> str:
    """The sweep as a text table; the best configuration is marked with ``*``.  A failed
    row reads ``FAILED [k]`` and its error is listed as note ``[k]`` under the table, so
    the table keeps its width whatever the error says."""
    if not rows:
        return "(no configurations)"
    pnames = list(rows[0].params)
    cores = []
    for r in rows:
        for c in r.utilisation:
            if c not in cores:
                cores.append(c)
    best = next((r for r in rows if r.best), None)
    head = ["", *pnames, "cycles", "vs best", *(f"{c} util" for c in cores)]
    table, notes = [head], []
    for r in rows:
        cells = ["*" if r.best else ""] + [_fmt(r.params[n]) for n in pnames]
        if r.ok:
            cells += [str(r.cycles), _ratio(r.cycles, best.cycles) if best else "-"]
            cells += [f"{r.utilisation[c]:.0%} {r.busiest[c]}" if c in r.utilisation else "-" for c in cores]
        else:
            notes.append(f"[{len(notes) + 1}] {', '.join(f'{k}={_fmt(v)}' for k, v in r.params.items())}: "
                         + _shorten(r.error or "failed"))
            cells += [f"FAILED [{len(notes)}]", "-"] + ["-"] * len(cores)
        table.append(cells)
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
             for row in table]
    if best:
        lines.append(f"* best: {', '.join(f'{k}={_fmt(v)}' for k, v in best.params.items())} "
                     f"({best.cycles} cycles)")
    return "\n".join(lines + notes)


def _ratio(cycles: int, best: int) -> str:
    """'1.25x': ``cycles`` against the best row's (a kernel that issues nothing takes 0)."""
    if best == 0:
        return "1.00x" if cycles == 0 else "-"
    return f"{cycles / best:.2f}x"


def _shorten(text: str, width: int = 160) -> str:
    """The first line of ``text`` in at most ``width`` characters; a trailing ``at file:line``
    is kept whole (the message before it is cut)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    if len(line) <= width:
        return line
    head, sep, where = line.rpartition(" at ")
    if sep and len(where) <= width // 2:
        return head[:width - 3 - len(sep) - len(where)] + "..." + sep + where
    return line[:width - 3] + "..."


def _fmt(v) -> str:
    name = getattr(v, "name", None)
    return name if isinstance(name, str) else str(v)


def write_plot(rows: list, path: str, title: str = "ptopipe sweep") -> str:
    """Bar chart of cycles per configuration (needs matplotlib)."""
    from .swimlane import _pyplot
    plt = _pyplot()
    ok = [r for r in rows if r.ok]
    labels = [", ".join(f"{k}={_fmt(v)}" for k, v in r.params.items()) for r in ok]
    fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(ok) + 2), 4))
    ax.bar(range(len(ok)), [r.cycles for r in ok],
           color=["#2ca02c" if r.best else "#1f77b4" for r in ok])
    ax.set_xticks(range(len(ok)), labels, rotation=45, ha="right")
    ax.set_ylabel("cycles")
    ax.set_title(title)
    fig.tight_layout()
    return save_png(fig, path)
