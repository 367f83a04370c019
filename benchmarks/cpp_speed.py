"""Per-tile cost of the stream kernel of stream_speed.py written in C++ (cpp_stream.cpp, run
through ptopipe's headers and C ABI as ptopipe.cpp.run_cpp runs it: built, then loaded and run
in a forked child) against the same kernel written in Python (stream_speed.py's cube / vector),
TILE_UP_DOWN, checkers off and on, measured in one run.

Each run is timed around the simulation only (no build, no process start): its CPU time
(time.process_time: what the run costs, steady on a shared machine) and its wall time
(RunSummary.wall_seconds), each the best of --repeat, the kernels alternating.  The per-tile
cost is the marginal one - (run of --tiles) - (run of --tiles / 4), per extra tile - so that
what a run pays once (a fresh child's first touch of the memory it shares with its parent,
loading, the cluster) is not counted per tile.

Prints per-tile microseconds (CPU / wall) and the ratios C++ / Python, and exits 1 when a CPU
ratio is above --target (default 1.2).  --ctypes also times the C++ kernel through the ctypes
callback (the path taken where Python.h is missing), for information.

Usage:  python benchmarks/cpp_speed.py [--tiles 8000] [--repeat 5] [--platform a2a3|a5] [--ctypes]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # this checkout
sys.path.insert(0, HERE)

import ptopipe  # noqa: E402
from ptopipe.cpp import bridge  # noqa: E402
from ptopipe.cpp.build import build, find_kernels  # noqa: E402
from ptopipe.cpp.runner import Loaded, in_child  # noqa: E402
from ptopipe.isa import TILE_UP_DOWN  # noqa: E402
import stream_speed as py  # noqa: E402


def timed_run(**kw):
    """(the run, its CPU seconds)."""
    t = time.process_time()
    r = ptopipe.run(**kw)
    return r, time.process_time() - t


def cpp_run(kernels, libs, bridge_lib, args, **kw):
    """The C++ kernels run as run_cpp runs them (in a forked child): (out, wall s, CPU s)."""
    def work(crash_fd):
        k = Loaded(kernels, libs, crash_fd, bridge_lib)
        r, cpu = timed_run(aic=k.aic, aiv=k.aiv, args=args, **kw)
        return r.outputs["out"], r.summary.wall_seconds, cpu
    return in_child(work, 600)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiles", type=int, default=8000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--platform", default="a2a3", choices=("a2a3", "a5"))
    ap.add_argument("--target", type=float, default=1.2)
    ap.add_argument("--ctypes", action="store_true", help="also time the ctypes callback path")
    ns = ap.parse_args()
    T = py.T
    sizes = (ns.tiles // 4, ns.tiles)
    rng = np.random.default_rng(0)
    x = rng.integers(-100, 100, (ns.tiles * T, T)).astype(np.float32)
    eye = np.eye(T, dtype=np.float32)
    kernels = find_kernels(os.path.join(HERE, "cpp_stream.cpp"))
    libs = build(kernels, ns.platform)
    paths = {"c++": bridge.library()}
    if paths["c++"] is None:
        print("note: the C-API bridge is not available here (no Python.h?): C++ runs through ctypes")
    if ns.ctypes:
        paths["ctypes"] = None
    missed = []
    print(f"stream of 16x16 f32 tiles on {ns.platform}, TILE_UP_DOWN: per extra tile from {sizes[0]} to {sizes[1]} "
          f"tiles, best of {ns.repeat}, us/tile CPU / wall")
    for checks in (False, True):
        cpu = {(k, n): float("inf") for k in ["python", *paths] for n in sizes}
        wall = dict(cpu)
        for _ in range(ns.repeat):
            for n in sizes:
                xs = x[:n * T]
                args = dict(x=xs, eye=eye, out=np.zeros_like(xs), fifo=ptopipe.gm_buffer(py.DEPTH * py.SLOT), tiles=n,
                            split=TILE_UP_DOWN)
                r, c = timed_run(aic=py.cube, aiv=(py.vector, py.vector), args=args, platform=ns.platform,
                                 checks=checks, timeout=600)
                assert np.array_equal(r.outputs["out"], xs * 3)
                k = ("python", n)
                cpu[k], wall[k] = min(cpu[k], c), min(wall[k], r.summary.wall_seconds)
                for name, lib in paths.items():
                    args = dict(x=xs, eye=eye, out=np.zeros_like(xs), fifo=ptopipe.gm_buffer(py.DEPTH * py.SLOT),
                                tiles=n)
                    out, w, c = cpp_run(kernels, libs, lib, args, platform=ns.platform, checks=checks, timeout=600)
                    assert np.array_equal(out, xs * 3)
                    k = (name, n)
                    cpu[k], wall[k] = min(cpu[k], c), min(wall[k], w)
        per = {k: ((cpu[(k, sizes[1])] - cpu[(k, sizes[0])]) / (sizes[1] - sizes[0]) * 1e6,
                   (wall[(k, sizes[1])] - wall[(k, sizes[0])]) / (sizes[1] - sizes[0]) * 1e6)
               for k in ["python", *paths]}
        label = "checkers on " if checks else "checkers off"
        cols = [f"python {per['python'][0]:5.1f} / {per['python'][1]:5.1f}"]
        for name in paths:
            cols.append(f"{name} {per[name][0]:5.1f} / {per[name][1]:5.1f} "
                        f"ratio {per[name][0] / per['python'][0]:.2f} / {per[name][1] / per['python'][1]:.2f}")
        print(f"  {label}: " + "   ".join(cols) + f"   (target CPU ratio <= {ns.target})")
        if per["c++"][0] / per["python"][0] > ns.target:
            missed.append(label)
    if missed:
        print(f"MISSED: {', '.join(missed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
