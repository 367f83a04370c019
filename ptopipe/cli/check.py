"""``ptopipe check FILE``: run a kernel with every checker on, under the default schedule
and ``--schedules N`` perturbed interleavings/latencies (seeds ``--seed`` ...); report the
first failure (error class, kernel file:line, the seed that replays it) and exit 1."""
from __future__ import annotations

import json
import sys

from ..isa.explore import explore
from . import bounds
from .errors import color, report_exception
from .loader import load_scenarios, pick_variants


def add_parser(sub) -> None:
    p = sub.add_parser("check", help="check a kernel for deadlocks, protocol misuse, races and leaks "
                                     "under many schedules")
    p.add_argument("file", help="kernel file (.py defining SCENARIO)")
    p.add_argument("--platform", default=None, choices=["a2a3", "a5"],
                   help="platform model (default: the scenario's, else a2a3)")
    p.add_argument("--protocol", default=None, choices=["spec", "pto-isa"],
                   help="ring protocol model (default: the scenario's, else spec)")
    p.add_argument("--variant", default=None, help="variant name, or 'all' (default: 'default')")
    p.add_argument("--schedules", type=int, default=20, help="perturbed schedules to explore (default 20)")
    p.add_argument("--seed", type=int, default=0, help="first schedule seed (default 0)")
    p.add_argument("--data-seed", type=int, default=0, help="input data seed (default 0)")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    bounds.add_arguments(p)
    p.set_defaults(func=main)


def _progress(label: str):
    """A one-line 'schedule k/N' display on an interactive terminal (nothing in logs)."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        sys.stderr.write(f"\r  {label}: schedule {done + 1}/{total}\033[K")
        sys.stderr.flush()
    return show


def _progress_done() -> None:
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
        sys.stderr.flush()


def main(args) -> int:
    reports, status = [], 0
    for sc in load_scenarios(args.file):
        platform = args.platform or getattr(sc, "platform", None) or "a2a3"
        protocol = args.protocol or getattr(sc, "protocol", None) or "spec"
        for v in pick_variants(sc, args.variant):
            label = f"{sc.name}[{v}] on {platform}/{protocol}"
            res = explore(sc, schedules=args.schedules, seed=args.seed, variant=v, platform=platform,
                          protocol=protocol, data_seed=args.data_seed, progress=_progress(label),
                          **bounds.run_kwargs(args))
            _progress_done()
            rep = {"scenario": sc.name, "variant": v, "platform": platform, "protocol": protocol,
                   "runs": res.runs, "passed": res.passed, "failure": None}
            if res.ok:
                if not args.json:
                    print(f"{color('PASS', '1;32', sys.stdout)} {label}: default schedule + "
                          f"{args.schedules} explored schedules, no checker report")
            else:
                status = 1
                seed, err = res.first
                rep["failure"] = dict(err.to_dict(), seed=seed)
                if not args.json:
                    sched = "the default schedule" if seed is None else f"schedule seed {seed}"
                    print(f"{color('FAIL', '1;31', sys.stdout)} {label}: {type(err).__name__} under {sched} "
                          f"(after {res.passed} passing schedule(s))")
                    report_exception(err)
                    replay = (f"ptopipe check {args.file} --platform {platform} --protocol {protocol} "
                              f"--variant {v} --seed {seed} --schedules 1")
                    print(f"  replay: {replay}" if seed is not None else
                          "  (fails under the default schedule: every run reproduces it)", file=sys.stderr)
            reports.append(rep)
    if args.json:
        print(json.dumps(reports, indent=2, default=str))
    return status
