"""Speed-up of ``ptopipe check`` over a 40-kernel library on a local Ray cluster of N workers
against one process (``--workers 1``), and Ray's per-task overhead, measured side by side in
one run (wall clock: the work is spread over processes).

The library: copies of the reference scenarios and the DSL examples under new names in a
temporary directory (the same files over and over, so that every task costs about as much
as a real kernel's check).  A Ray head with N CPUs is started for the run (``ray start
--head``) and stopped after; the per-task overhead is the time of N x 50 no-op tasks.
Prints both tables' equality, the times and the speed-up; exits 1 when the reports differ or
the speed-up is below --target.

The default 150 schedules per file make each task a few hundred milliseconds of work, as a
real library check's are; at 10 schedules per file the fixed costs (connecting to the cluster,
loading each file in a worker) are a third of the run.

Usage:  python benchmarks/scale_out.py [--kernels 40] [--workers 2] [--schedules 150] [--target 1.8]
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import io
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from ptopipe.cli import main as cli_main  # noqa: E402


def _library(dst: str, n: int) -> list:
    src = sorted(glob.glob(os.path.join(ROOT, "examples", "scenarios", "s*.py"))) + \
        sorted(glob.glob(os.path.join(ROOT, "examples", "dsl", "*.py")))
    src = [p for p in src if "s7_long_stream" not in p]      # 1000 tiles: one task would dominate
    out = []
    for k in range(n):
        p = src[k % len(src)]
        q = os.path.join(dst, f"k{k:02d}_{os.path.basename(p)}")
        shutil.copy(p, q)
        out.append(q)
    return out


def _check(argv: list) -> "tuple[float, str]":
    out = io.StringIO()
    t = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        cli_main(["check", *argv])
    text = out.getvalue()
    return time.perf_counter() - t, text[text.index("file "):]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _noop(x):
    return x


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=40)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--schedules", type=int, default=150)
    ap.add_argument("--target", type=float, default=1.8)
    ns = ap.parse_args()
    import ray
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    exe = shutil.which("ray") or os.path.join(os.path.dirname(sys.executable), "ray")
    port = _free_port()
    address = f"127.0.0.1:{port}"
    # a lean cluster: no dashboard, no usage stats, no metrics export (their agents would take
    # CPU from the workers on a small machine)
    env = dict(os.environ, RAY_enable_metrics_collection="0", RAY_USAGE_STATS_ENABLED="0")
    subprocess.run([exe, "start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1",
                    f"--num-cpus={ns.workers}", "--include-dashboard=false", "--disable-usage-stats"],
                   check=True, capture_output=True, env=env)
    try:
        with tempfile.TemporaryDirectory() as d:
            files = _library(d, ns.kernels)
            common = [*files, "--schedules", str(ns.schedules)]
            _check([*files[:ns.workers], "--schedules", "0", "--engine", "ray", "--address", address])  # warm the workers
            one, ref = _check([*common, "--workers", "1"])
            many, got = _check([*common, "--engine", "ray", "--address", address])
        ray.init(address=address, log_to_driver=False)
        task = ray.remote(_noop)
        ray.get([task.remote(k) for k in range(ns.workers)])
        t = time.perf_counter()
        ray.get([task.remote(k) for k in range(50 * ns.workers)])
        overhead = (time.perf_counter() - t) / (50 * ns.workers)
        ray.shutdown()
    finally:
        subprocess.run([exe, "stop", "--force"], capture_output=True)
    same = ref == got
    speedup = one / many
    print(f"{ns.kernels} kernels, {ns.schedules} explored schedules each: one process {one:.1f} s, "
          f"Ray with {ns.workers} workers {many:.1f} s -> speed-up {speedup:.2f}x (target >= {ns.target}x)")
    print(f"per-task overhead of Ray (no-op tasks, {ns.workers} workers): {1e3 * overhead:.2f} ms")
    print("reports identical" if same else "REPORTS DIFFER")
    return 0 if same and speedup >= ns.target else 1


if __name__ == "__main__":
    sys.exit(main())
