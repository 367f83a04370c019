"""Fuzz the simulator with random kernels for a few minutes (tests/fuzz_kernels.py).

Random pipes (C2V / V2C / DIR_BOTH, SlotNum 1..8, NO_SPLIT / UP_DOWN / LEFT_RIGHT, tile and
address flow), tiles, dtypes and element-wise op chains, clean and mutated, on both
platforms and both protocols.  Each kernel is written to a file and run with the checkers
on and off.  A finding is: an exception other than a PtoPipeError, a PtoPipeError that
does not name a line of the kernel file, a clean kernel that fails or differs from its
numpy golden, data that differ between checkers on and off, or a mutation that must be
reported and is not.  Hypothesis shrinks a finding to a small kernel before it is printed.

Target: no finding.  Exits 1 on the first finding, printing the hypothesis seed, the
generated kernel source and the command that re-runs it; 0 when the time is up.


Usage:  python benchmarks/fuzz.py [--minutes 3] [--seed 0] [--batch 200] [--keep DIR]
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout

from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

import fuzz_kernels as fk  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=3.0)
    ap.add_argument("--seed", type=int, default=0, help="first hypothesis seed (one per batch)")
    ap.add_argument("--batch", type=int, default=200, help="kernels per hypothesis run")
    ap.add_argument("--keep", default=None, help="directory for the kernel files (default: a temp dir)")
    ns = ap.parse_args()
    work = ns.keep or tempfile.mkdtemp(prefix="ptopipe-fuzz-")
    os.makedirs(work, exist_ok=True)
    outcomes = collections.Counter()
    deadline = time.monotonic() + 60 * ns.minutes
    s = ns.seed
    t0 = time.monotonic()
    while time.monotonic() < deadline:
        count = [0]

        @seed(s)
        @settings(max_examples=ns.batch, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(spec=fk.kernel_specs())
        def batch(spec):
            count[0] += 1
            outcomes[fk.check_kernel(spec, os.path.join(work, f"k{count[0] % 8}"))] += 1

        for k in range(8):
            os.makedirs(os.path.join(work, f"k{k}"), exist_ok=True)
        try:
            batch()
        except fk.Finding as e:
            print(f"FINDING (hypothesis seed {s}; re-run: python benchmarks/fuzz.py --seed {s} --minutes 0.01)")
            print(e)
            return 1
        except Exception as e:               # a failure of the harness itself is a finding too
            print(f"FINDING (hypothesis seed {s}): {type(e).__name__}: {e}")
            raise
        s += 1
    n = sum(outcomes.values())
    print(f"{n} kernels in {time.monotonic() - t0:.0f} s (seeds {ns.seed}..{s - 1}): "
          + ", ".join(f"{k} {v}" for k, v in outcomes.most_common()))
    print("target: no finding - OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
