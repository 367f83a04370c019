"""Checker overhead, measured side by side in one run.

Runs S7 (examples/scenarios/s7_long_stream.py) with the checkers on (happens-before race
checker, slot-reuse / use-after-free checks, leak checks: ``ptopipe.run(checks=True)``,
the default) and off (``checks=False``), alternating, and prints the ratio of the best
wall times of the simulated runs.  Target: ratio <= 1.5; exits 1 when it is missed.

Usage:  python benchmarks/checker_overhead.py [--tiles 5000] [--repeat 7] [--platform a2a3]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples", "scenarios"))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout

import ptopipe  # noqa: E402
import s7_long_stream as s7  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--platform", default="a2a3", choices=["a2a3", "a5"])
    ns = ap.parse_args()
    args = s7.make_args(np.random.default_rng(0), tiles=ns.tiles)
    best = {True: float("inf"), False: float("inf")}
    for _ in range(ns.repeat):
        for checks in (False, True):
            res = ptopipe.run(s7.SCENARIO.aic, s7.SCENARIO.aiv, args, platform=ns.platform, checks=checks)
            assert np.array_equal(res.outputs["out"], args["x"] * 2), "S7 result mismatch"
            best[checks] = min(best[checks], res.summary.wall_seconds)
    ratio = best[True] / best[False]
    print(f"S7 {ns.tiles} tiles on {ns.platform}: checks off {best[False] * 1e3:.1f} ms, checks on "
          f"{best[True] * 1e3:.1f} ms (best of {ns.repeat}) -> ratio {ratio:.2f} (target <= 1.5)  "
          f"{'OK' if ratio <= 1.5 else 'ABOVE TARGET'}")
    return 0 if ratio <= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
