"""Compile time as programs grow: generated hand-written-style AIC + AIV programs of about
1k, 5k and 20k statements (ops) through the whole pass pipeline of this checkout
(``ptopipe.passes.default_pipeline()``) with verification on (the input and the IR after
every pass), for A2A3 and A5; prints the time per statement.

The program: the C2V pair of tests/pass_kernels.py (a reserve / import, the two pipe
inits, TPUSH / TPOP / TFREE) whose Vector function also holds a generated body
(tests/ir_programs.py: loads, element-wise and scalar ops, stores, loops carrying tiles,
ifs with results, nested).  Building it is not timed.

Targets (exit 1 when missed): the largest size in at most 1.0 s on each platform, and the
per-statement cost flat - at every size within 1.2x of that at the smallest.  CPU time
(``time.process_time``, so a machine busy with other work slows it little), best of
``--repeat`` runs.  Runs in a few seconds.

Usage:  python benchmarks/compile_scaling.py [--sizes 1000 5000 20000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]     # this checkout's ptopipe, the generators

from ir_programs import TENSOR, count_ops, generate  # noqa: E402
from pass_kernels import c2v_pair  # noqa: E402

from ptopipe.ir import gc_paused  # noqa: E402
from ptopipe.language import program as pl_program  # noqa: E402
from ptopipe.passes import PassContext, PassManager, default_pipeline  # noqa: E402

PLATFORMS = ("a2a3", "a5")
MAX_SECONDS = 1.0           # the largest size, per platform
MAX_GROWTH = 1.2            # per-statement cost at any size / at the smallest


def build(n: int):
    """The C2V pair with a generated body of about ``n`` ops spliced into its Vector
    function (the generated function's tensor parameters become parameters of it)."""
    cube, vector = c2v_pair()
    top = pl_program(cube, vector, name=f"compile{n}")        # a program of its own copies
    gen = generate(max(n - count_ops(top), 10), seed=n)
    gvec = next(f for f in gen.regions[0].blocks[0] if f.attributes["kind"].value == "aiv")
    vec = next(f for f in top.regions[0].blocks[0] if f.attributes["sym_name"] == "vector")
    entry = vec.regions[0].blocks[0]
    vm = {old: entry.add_arg(TENSOR, f"g_{old.name}") for old in gvec.regions[0].blocks[0].args}
    with gc_paused():
        for op in gvec.regions[0].blocks[0]:
            entry.append(op.clone(vm))
    return top


def measure(n: int, platform: str, repeat: int) -> tuple:
    best, ops = None, 0
    for _ in range(repeat):
        prog = build(n)
        ops = count_ops(prog)
        pm = PassManager(verify=True)
        t0 = time.process_time()
        pm.run(prog, PassContext(platform))
        t = time.process_time() - t0
        best = t if best is None else min(best, t)
    return ops, best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    print("pipeline: " + ",".join(default_pipeline()) + " (verify_ops on the input and after each)")
    print(f"{'platform':>8} {'stmts':>7} {'us/stmt':>9} {'total s':>9}")
    ok = True
    for plat in PLATFORMS:
        rows = []
        for n in a.sizes:
            ops, t = measure(n, plat, a.repeat)
            rows.append((ops, t))
            print(f"{plat:>8} {ops:>7} {t / ops * 1e6:>9.2f} {t:>9.3f}")
        (ops0, t0), (ops1, t1) = rows[0], rows[-1]
        ratio = max((t / ops) / max(t0 / ops0, 1e-9) for ops, t in rows)
        hit = t1 <= MAX_SECONDS and ratio <= MAX_GROWTH
        print(f"{plat:>8}: {ops1} statements in {t1:.3f} s (target <= {MAX_SECONDS} s); per-statement "
              f"cost at most {ratio:.2f}x that at {ops0} (target <= {MAX_GROWTH}x) "
              f"{'ok' if hit else 'MISS'}")
        ok = ok and hit
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
