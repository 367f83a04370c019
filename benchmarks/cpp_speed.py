"""Per-tile cost of the stream kernel of stream_speed.py written in C++ (cpp_stream.cpp, run
through ptopipe's headers and C ABI by ptopipe.cpp.run_cpp) against the same kernel written in
Python (stream_speed.py's cube / vector), TILE_UP_DOWN, checkers off and on, measured in one
run.  Both are timed by the run's own simulation wall time (RunSummary.wall_seconds: no build,
no process start), each keeping its best of --repeat.

Prints per-tile microseconds and the ratio C++ / Python, and exits 1 when a ratio is above
--target (default 1.2).

Usage:  python benchmarks/cpp_speed.py [--tiles 5000] [--repeat 3] [--platform a2a3|a5]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # this checkout
sys.path.insert(0, HERE)

import ptopipe  # noqa: E402
from ptopipe.cpp import run_cpp  # noqa: E402
from ptopipe.isa import TILE_UP_DOWN  # noqa: E402
import stream_speed as py  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--platform", default="a2a3", choices=("a2a3", "a5"))
    ap.add_argument("--target", type=float, default=1.2)
    ns = ap.parse_args()
    n, T = ns.tiles, py.T
    rng = np.random.default_rng(0)
    x = rng.integers(-100, 100, (n * T, T)).astype(np.float32)
    eye = np.eye(T, dtype=np.float32)
    want = x * 3
    missed = []
    print(f"stream of {n} tiles of {T}x{T} f32 on {ns.platform}, TILE_UP_DOWN (best of {ns.repeat})")
    for checks in (False, True):
        best = {"python": float("inf"), "c++": float("inf")}
        for _ in range(ns.repeat):
            args = dict(x=x, eye=eye, out=np.zeros_like(x), fifo=ptopipe.gm_buffer(py.DEPTH * py.SLOT), tiles=n,
                        split=TILE_UP_DOWN)
            r = ptopipe.run(aic=py.cube, aiv=(py.vector, py.vector), args=args, platform=ns.platform,
                            checks=checks, timeout=600)
            assert np.array_equal(r.outputs["out"], want)
            best["python"] = min(best["python"], r.summary.wall_seconds)
            args = dict(x=x, eye=eye, out=np.zeros_like(x), fifo=ptopipe.gm_buffer(py.DEPTH * py.SLOT), tiles=n)
            c = run_cpp(os.path.join(HERE, "cpp_stream.cpp"), args, platform=ns.platform, checks=checks, timeout=600)
            assert np.array_equal(c.outputs["out"], want)
            best["c++"] = min(best["c++"], c.summary.wall_seconds)
        ratio = best["c++"] / best["python"]
        label = "checkers on " if checks else "checkers off"
        print(f"  {label}: python {best['python'] / n * 1e6:7.1f} us/tile   c++ {best['c++'] / n * 1e6:7.1f} us/tile"
              f"   ratio {ratio:.2f} (target <= {ns.target})")
        if ratio > ns.target:
            missed.append(label)
    if missed:
        print(f"MISSED: {', '.join(missed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
