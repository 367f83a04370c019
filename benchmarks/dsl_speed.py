"""DSL kernels against the same kernels hand-written at the ISA level, side by side.

S1 (out = A @ B + bias, 16x32 f32 accumulator tiles, UP_DOWN to both Vector cores) as the
DSL pair of examples/dsl/s1_cv_split.py and as the ISA kernels of
examples/scenarios/s1_cv_split.py, on the same arguments: the two make the same instructions
per tile, so the ratio DSL / ISA is what running a DSL function costs over calling the ISA
from Python (the statements are compiled to closures once per run: runtime/closures.py).
The runs alternate, so both see the same machine state; each keeps its best of --repeat.

Prints per-tile microseconds and the ratio, checkers off and on, and exits 1 when a ratio
misses its target (<= 1.25).

Usage:  python benchmarks/dsl_speed.py [--tiles 3000] [--repeat 3] [--platform a2a3|a5]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)                                          # this checkout
sys.path.insert(0, os.path.join(ROOT, "examples", "dsl"))

import ptopipe  # noqa: E402
from ptopipe.runtime import run as dsl_run  # noqa: E402
import s1_cv_split as dsl_s1  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "examples", "scenarios"))
sys.modules.pop("s1_cv_split")
import s1_cv_split as isa_s1  # noqa: E402

TARGET = 1.25


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--platform", default="a2a3", choices=("a2a3", "a5"))
    ns = ap.parse_args()
    n = ns.tiles
    base = isa_s1.make_args(np.random.default_rng(0), M=16 * n)
    want = base["a"] @ base["b"] + base["bias"]
    best = {}
    for _ in range(ns.repeat):
        for checks in (False, True):
            for kind in ("isa", "dsl"):
                args = dict(base, out=np.zeros_like(base["out"]), fifo=ptopipe.gm_buffer(base["fifo"].size))
                if kind == "isa":
                    res = ptopipe.run(isa_s1.cube, isa_s1.vector, args, checks=checks, platform=ns.platform)
                else:
                    args.pop("dtype", None)
                    res = dsl_run(dsl_s1.build, dict(args, dtype="f32"), checks=checks, platform=ns.platform)
                if not np.array_equal(res.outputs["out"], want):
                    print(f"{kind}: simulated result differs from numpy")
                    return 1
                key = (kind, checks)
                best[key] = min(best.get(key, float("inf")), res.summary.wall_seconds)
    print(f"S1 stream of {n} tiles of 16x32 f32, UP_DOWN, platform {ns.platform} (best of {ns.repeat})")
    print(f"{'checkers':8} {'ISA us/tile':>11} {'DSL us/tile':>11} {'ratio':>6}  target")
    missed = []
    for checks in (False, True):
        isa_t, dsl_t = best[("isa", checks)], best[("dsl", checks)]
        ratio = dsl_t / isa_t
        ok = ratio <= TARGET
        print(f"{'on' if checks else 'off':8} {isa_t / n * 1e6:11.1f} {dsl_t / n * 1e6:11.1f} {ratio:6.2f}  "
              f"<= {TARGET} {'OK' if ok else 'MISSED'}")
        if not ok:
            missed.append(f"checkers {'on' if checks else 'off'}: ratio {ratio:.2f} > {TARGET}")
    if missed:
        print("MISSED TARGET: " + "; ".join(missed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
