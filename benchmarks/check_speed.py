"""``check FILE --schedules N`` on the reference engine and on the periodic engine, measured side by side.

For S1, S4 and S7 (examples/scenarios: s1_cv_split, s4_both_ways, s7_long_stream) it runs the
check's driver function in this process (:func:`ptopipe.driver.check.explore_variant`, so
that process start-up is not measured):

- on the reference engine (``--run-engine exact``, every explored schedule run), serially
  (``--workers 1``) and as ``check`` does by default (the explored schedules of a long check on
  a local process pool sized to the machine, :mod:`ptopipe.driver.spread`), which must agree;
- on the periodic engine (``--run-engine periodic``), whose default schedule shows when every
  schedule gives its result and then explores none (:mod:`ptopipe.sim.determinacy`); its
  verdict must be the reference's.

It prints wall and CPU seconds (this process and its workers), the schedules run and the
speed-up of the periodic engine over the reference's default; then, for reference, the wall
time of the command itself (``python -m ptopipe.cli check``, both engines) and the peak RSS of
the S7 check's processes.

Targets: a speed-up >= 5x per kernel (--target X to change it), and <= 150 MiB peak RSS per
process of the S7 check.  Exits 1 on a miss.  Run it on a quiet machine (the load average
is printed).  BLAS runs with one thread, as in the command (``ptopipe._startup``).

Usage:  python benchmarks/check_speed.py [--schedules 200] [--target 5] [--no-cli]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)                                                    # this checkout

from ptopipe._startup import one_blas_thread  # noqa: E402  (loads no numpy)

one_blas_thread()                               # as the command does, before numpy loads

from ptopipe.driver.check import explore_variant  # noqa: E402
from ptopipe.driver.loader import load_scenarios, scenario_at  # noqa: E402

KERNELS = ("s1_cv_split", "s4_both_ways", "s7_long_stream")
RSS_MIB = 150

RSS_PROBE = """
import json, resource, sys
sys.path.insert(0, {root!r})
from ptopipe.cli import main
rc = main({argv!r})
me, kids = (resource.getrusage(w).ru_maxrss for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
print(json.dumps({{"rc": rc, "self": me, "workers": kids}}), file=sys.stderr)
"""


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _check(path: str, schedules: int, workers: int | None, engine: str) -> tuple:
    sc = load_scenarios(path)[0]
    wall, cpu = time.perf_counter(), _cpu()
    res = explore_variant(sc, "default", "a2a3", "spec", schedules=schedules, workers=workers,
                          source=(scenario_at, path, 0), causal=True, run_engine=engine)
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    first = res.first and (str(res.first[0]), str(res.first[1]))
    return wall, cpu, res.runs, (res.passed == res.runs, first)


def _cli(path: str, schedules: int, engine: str, workers: int | None = None) -> tuple:
    argv = ["check", path, "--schedules", str(schedules), "--run-engine", engine] + \
        (["--workers", str(workers)] if workers else [])
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RSS_PROBE.format(root=ROOT, argv=argv)],
                          capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t
    probe = json.loads(done.stderr.strip().splitlines()[-1])
    return wall, probe["self"] / 1024, probe["workers"] / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schedules", type=int, default=200)
    ap.add_argument("--target", type=float, default=5.0,
                    help="speed-up of the periodic engine over the reference to reach per kernel (default 5)")
    ap.add_argument("--no-cli", action="store_true", help="skip the command-line reference runs")
    ns = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; check --schedules {ns.schedules}")
    print(f"{'kernel':16} {'exact --workers 1':>17} {'exact default':>14} {'periodic':>9} {'runs':>9} "
          f"{'speed-up':>8}")
    missed = []
    for name in KERNELS:
        path = os.path.join(ROOT, "examples", "scenarios", f"{name}.py")
        w1, c1, n1, r1 = _check(path, ns.schedules, 1, "exact")
        wn, cn, nn, rn = _check(path, ns.schedules, None, "exact")
        wp, cp, npr, rp = _check(path, ns.schedules, None, "periodic")
        if not r1 == rn == rp or n1 != nn:
            print(f"{name}: the checks disagree: exact serial {r1} ({n1} runs), exact default {rn} ({nn} runs), "
                  f"periodic {rp}", file=sys.stderr)
            return 1
        ratio = wn / wp
        print(f"{name:16} {w1:8.2f}s {c1:6.2f}s {wn:6.2f}s {cn:5.2f}s {wp:8.3f}s {nn:4d}/{npr:<4d} {ratio:7.1f}x")
        if ratio < ns.target:
            missed.append(f"{name} speed-up {ratio:.2f}x < {ns.target:g}x")
    if not ns.no_cli:
        print(f"\ncommand line (python -m ptopipe.cli check FILE --schedules {ns.schedules}), wall seconds:")
        for name in KERNELS:
            path = os.path.join("examples", "scenarios", f"{name}.py")
            we, me, kids = _cli(path, ns.schedules, "exact")
            wp, mp, kp = _cli(path, ns.schedules, "periodic")
            print(f"  {name:16} --run-engine exact {we:6.2f}s   periodic {wp:6.2f}s   ({we / wp:.1f}x)"
                  + (f"; peak RSS exact {me:.0f} MiB (command), {kids:.0f} MiB (largest worker), "
                     f"periodic {mp:.0f} MiB" if name == "s7_long_stream" else ""))
            if name == "s7_long_stream" and max(me, kids, mp, kp) > RSS_MIB:
                missed.append(f"S7 peak RSS {max(me, kids, mp, kp):.0f} MiB > {RSS_MIB} MiB")
    for m in missed:
        print(f"MISSED: {m}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
