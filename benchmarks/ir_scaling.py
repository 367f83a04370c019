"""Op-IR cost as programs grow: build, verify, print and parse generated programs
(tests/ir_programs.py: loads, element-wise ops, scalar arithmetic, stores, loops carrying
tiles and ifs with results, nested) of 1k, 5k and 20k ops, and print the time per op
of each stage.  The parsed program is checked structurally equal to the built one.

Targets (exit 1 when missed): the four stages at the largest size under 2 s in total,
and each stage's per-op cost at the largest size within 1.5x of that at the smallest.
CPU time (``time.process_time``), best of ``--repeat`` runs, so a busy machine counts
less.  The build stage runs under ``ptopipe.ir.gc_paused()``, as the parser and the
tree -> ops conversion do (see docs/ir.md).  Runs in a few seconds.

Usage:  python benchmarks/ir_scaling.py [--sizes 1000 5000 20000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]     # this checkout's ptopipe, the generator

from ir_programs import count_ops, generate  # noqa: E402

from ptopipe.ir import first_difference, gc_paused, parse_ir, print_ir, verify_ops  # noqa: E402

STAGES = ("build", "verify", "print", "parse")


def measure(n: int, repeat: int) -> tuple:
    best, ops = None, 0
    for _ in range(repeat):
        t0 = time.process_time()
        with gc_paused():
            prog = generate(n, seed=n)
        t1 = time.process_time()
        verify_ops(prog)
        t2 = time.process_time()
        text = print_ir(prog)
        t3 = time.process_time()
        again = parse_ir(text, f"<gen{n}>")
        t4 = time.process_time()
        diff = first_difference(prog, again)
        if diff:
            raise SystemExit(f"round trip of {n} ops differs: {diff}")
        ops = count_ops(prog)
        got = (t1 - t0, t2 - t1, t3 - t2, t4 - t3)
        best = got if best is None else tuple(min(a, b) for a, b in zip(best, got))
    return ops, best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    rows = []
    print(f"{'ops':>7} " + " ".join(f"{s + ' us/op':>14}" for s in STAGES) + f" {'total s':>9}")
    for n in a.sizes:
        ops, ts = measure(n, a.repeat)
        rows.append((ops, ts))
        print(f"{ops:>7} " + " ".join(f"{t / ops * 1e6:>14.2f}" for t in ts) + f" {sum(ts):>9.3f}")
    ok = True
    (ops0, t0), (ops1, t1) = rows[0], rows[-1]
    if sum(t1) >= 2.0:
        print(f"MISS: {ops1} ops take {sum(t1):.3f} s in all four stages (target < 2 s)")
        ok = False
    for s, a0, a1 in zip(STAGES, t0, t1):
        ratio = (a1 / ops1) / max(a0 / ops0, 1e-9)
        flag = "ok" if ratio <= 1.5 else "MISS"
        print(f"{s:>7}: per-op cost at {ops1} ops is {ratio:.2f}x that at {ops0} (target <= 1.5x) {flag}")
        ok = ok and ratio <= 1.5
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
