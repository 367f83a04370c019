"""What the timing model costs: wall time of the same runs with timing on and off
(``ptopipe.run(..., timing=False)`` skips cost tables and the scoreboard), measured side
by side in one process, interleaved, best of --repeat.  Target: ratio <= 1.3 (exits 1 if missed).

1. S7 long stream (examples/scenarios/s7_long_stream.py), 5,000 tiles of 16x16 f32:
   protocol-heavy, tiny tiles - the worst case for per-instruction overhead.
2. Flash attention (examples/flash_attention.py), S1 = 2048: realistic tile sizes.

Usage:  python benchmarks/timing_overhead.py [--tiles 5000] [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "scenarios"))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import ptopipe  # noqa: E402
import flash_attention as fa  # noqa: E402
import s7_long_stream as s7  # noqa: E402


def _case(sc, params):
    args = sc.make_args(np.random.default_rng(0), **params)
    expected = sc.golden(args, **params)

    def go(timing: bool) -> float:
        t0 = time.perf_counter()
        res = ptopipe.run(sc.aic, sc.aiv, dict(args), timing=timing)
        dt = time.perf_counter() - t0
        ptopipe.compare(res.outputs, expected, sc.rtol, sc.atol, sc.name)
        return dt
    return go


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tiles", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    cases = [(f"S7 long stream, {a.tiles} tiles", _case(s7.SCENARIO, dict(tiles=a.tiles, dir_mask=s7.DIR_C2V))),
             ("flash attention S1=2048", _case(fa.SCENARIO, dict(s1=2048, preload=4, s_depth=4)))]
    worst = 0.0
    print(f"{'case':32s} {'timing off':>11s} {'timing on':>11s} {'ratio':>7s}")
    for name, go in cases:
        go(True), go(False)                       # warm-up (imports, caches)
        on, off = [], []
        for _ in range(a.repeat):                 # interleaved: drift hits both sides alike
            off.append(go(False))
            on.append(go(True))
        ratio = min(on) / min(off)
        worst = max(worst, ratio)
        print(f"{name:32s} {min(off) * 1e3:9.1f}ms {min(on) * 1e3:9.1f}ms {ratio:6.2f}x")
    print(f"worst ratio {worst:.2f}x (target <= 1.30): {'OK' if worst <= 1.3 else 'OVER'}")
    return 0 if worst <= 1.3 else 1


if __name__ == "__main__":
    sys.exit(main())
