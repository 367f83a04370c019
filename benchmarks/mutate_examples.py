"""Checker coverage of every example kernel: ``ptopipe mutate`` on each (every variant, the
default schedule + --schedules explored schedules per mutant), one line per file, the
survivors listed, and the caught share over the reference scenarios S1-S7.  Exits 1 when
that share is below --target (default 90 %) or a survivor is not explained in docs/mutate.md
(by its file and line).

Usage:  python benchmarks/mutate_examples.py [--schedules 20] [--workers 2] [--target 90]
"""
from __future__ import annotations

import argparse
import glob
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from ptopipe.errors import PtoPipeError  # noqa: E402
from ptopipe.mutate import SURVIVED, Job, coverage  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schedules", type=int, default=20)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--target", type=float, default=90.0)
    ns = ap.parse_args()
    os.chdir(ROOT)
    with open(os.path.join("docs", "mutate.md"), encoding="utf-8") as f:
        explained = set(re.findall(r"`(examples/[\w/.]+\.py):(\d+)`", f.read()))
    files = sorted(glob.glob("examples/scenarios/s*.py")) + sorted(glob.glob("examples/dsl/*.py")) \
        + ["examples/flash_attention.py"]
    ref_total = ref_caught = 0
    unexplained = []
    for path in files:
        t = time.perf_counter()
        try:
            cov = coverage(Job(path, schedules=ns.schedules), ns.workers)
        except PtoPipeError as e:
            print(f"{path}: refused: {type(e).__name__}: {e.what}")
            continue
        n = cov.counted                 # (invalid mutants - the kernel's Python broke - not counted)
        invalid = len(cov.verdicts) - n
        print(f"{path}: caught {cov.caught} of {n} mutants"
              + (f" ({100 * cov.ratio:.0f} %)" if n else "") + (f", {invalid} invalid" if invalid else "")
              + f"  [{time.perf_counter() - t:.1f} s]")
        for v in cov.verdicts:
            if v.status == SURVIVED:
                ok = (path, str(v.mutant.line)) in explained
                print(f"    survived: {v.mutant.label}" + ("" if ok else "   <- not in docs/mutate.md"))
                if not ok:
                    unexplained.append(f"{path}:{v.mutant.line}")
        if path.startswith("examples/scenarios/"):
            ref_total += n
            ref_caught += cov.caught
    share = 100 * ref_caught / max(ref_total, 1)
    print(f"S1-S7: caught {ref_caught} of {ref_total} mutants ({share:.1f} %, target >= {ns.target:.0f} %)")
    if unexplained:
        print(f"survivors not explained in docs/mutate.md: {', '.join(unexplained)}")
    return 0 if share >= ns.target and not unexplained else 1


if __name__ == "__main__":
    sys.exit(main())
