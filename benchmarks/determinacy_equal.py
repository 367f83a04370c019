"""The periodic engine's check against the reference explorer, on many kernels.

Where the periodic engine's default schedule judges a kernel determinate (every schedule gives
its result: :mod:`ptopipe.sim.determinacy`), ``check`` explores no schedule; the reference
(the exact engine) explores them all.  This script checks the judgement where it matters:

1. every scenario of examples/scenarios, examples/misuse, examples/mixed and examples/dsl,
   each variant (up to three), on a2a3/spec, a5/pto-isa and a2a3/pto-isa;
2. ``--fuzz N`` random kernels of the fuzz generator (tests/fuzz_spec.py), clean and mutated.

For each: the periodic engine's check, then - where it judged the kernel determinate - the
reference check with ``--schedules S`` explored schedules (``mix``), which must pass; where the
periodic engine's default schedule failed, the reference's must fail alike (class and line).
It prints the counts and why the other kernels were explored, and exits 1 on a counterexample.

Usage:  python benchmarks/determinacy_equal.py [--schedules 20] [--fuzz 200] [--seed 0]
"""
from __future__ import annotations

import argparse
import collections
import glob
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

import numpy as np  # noqa: E402
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402

import fuzz_kernels as fk  # noqa: E402
from ptopipe.driver.loader import load_scenarios  # noqa: E402
from ptopipe.isa.explore import explore  # noqa: E402

TARGETS = (("a2a3", "spec"), ("a5", "pto-isa"), ("a2a3", "pto-isa"))


class Tally:
    def __init__(self):
        self.kernels = self.determinate = 0
        self.why = collections.Counter()
        self.bad: list = []

    def judge(self, name: str, target, schedules: int, **kw) -> None:
        """The periodic engine's check of ``target`` against the reference's."""
        self.kernels += 1
        try:
            judged = explore(target, schedules=schedules, engine="periodic", **kw)
        except Exception as e:  # noqa: BLE001 - a kernel's own exception: not this script's subject
            self.why[f"raised {type(e).__name__}"] += 1
            return
        if judged.determinate:
            self.determinate += 1
            ref = explore(target, schedules=schedules, engine="exact", **kw)
            if not ref.ok:
                self.bad.append(f"{name}: judged determinate, the reference fails under {ref.first[0]}: "
                                f"{type(ref.first[1]).__name__}: {ref.first[1]}")
        elif not judged.ok and judged.first[0] is None:
            self.why["the default schedule failed"] += 1
            ref = explore(target, schedules=0, engine="exact", **kw)
            a, b = judged.first[1], ref.first and ref.first[1]
            if b is None or type(a) is not type(b) or getattr(a, "where", None) != getattr(b, "where", None):
                self.bad.append(f"{name}: the default schedule failed with {type(a).__name__} at "
                                f"{getattr(a, 'where', None)}, the reference's with {b!r}")
        elif judged.one_core:
            self.why["one core ran: nothing to interleave"] += 1
        else:
            self.why[judged.why_explored[:70]] += 1


def scenarios(tally: Tally, schedules: int) -> None:
    files = sorted(glob.glob(os.path.join(ROOT, "examples", d, "*.py"))
                   for d in ("scenarios", "misuse", "mixed", "dsl"))
    for path in (p for group in files for p in group):
        try:
            scs = load_scenarios(path)
        except Exception:  # noqa: BLE001 - a helper module, not a kernel file
            continue
        for sc in scs:
            for variant in list(sc.variants)[:3]:
                for platform, protocol in TARGETS:
                    tally.judge(f"{os.path.relpath(path, ROOT)}[{variant}] {platform}/{protocol}", sc,
                                schedules, variant=variant, platform=platform, protocol=protocol)


def fuzz(tally: Tally, n: int, schedules: int, first: int) -> None:
    where = tempfile.mkdtemp(prefix="ptopipe-determinacy-")

    @seed(first)
    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(spec=fk.kernel_specs())
    def one(spec):
        mod = fk.load(fk.write_kernel(spec, where))
        tally.judge(f"fuzz {spec!r}", (mod.cube, mod.vector), schedules,
                    args=mod.make_args(np.random.default_rng(spec.data_seed)), platform=spec.platform,
                    protocol=spec.protocol, max_instructions=fk.MAX_INSTRUCTIONS)
    one()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schedules", type=int, default=20)
    ap.add_argument("--fuzz", type=int, default=200, help="random kernels (default 200)")
    ap.add_argument("--seed", type=int, default=0, help="the fuzz generator's seed")
    ns = ap.parse_args()
    tally = Tally()
    scenarios(tally, ns.schedules)
    print(f"examples: {tally.kernels} checks, {tally.determinate} judged determinate")
    before = tally.kernels, tally.determinate
    fuzz(tally, ns.fuzz, ns.schedules, ns.seed)
    print(f"random kernels: {tally.kernels - before[0]} checks, {tally.determinate - before[1]} judged determinate")
    print("explored, and why:")
    for why, k in tally.why.most_common():
        print(f"  {k:5d}  {why}")
    for b in tally.bad:
        print(f"COUNTEREXAMPLE {b}")
    print(f"{len(tally.bad)} counterexample(s) in {tally.kernels} checks")
    return 1 if tally.bad else 0


if __name__ == "__main__":
    sys.exit(main())
