"""Schedule quality of the MLP chain (benchmarks/mlp_chain_kernel.py): how many times its
busiest pipe the compiled kernel runs (simulated cycles / the busy cycles of the busiest
pipe of any core: 1.0 would keep that pipe busy all the time), per platform and protocol,
for the K-loop carried in Acc with a peeled first block (the target: within 1.6x), the
same chain accumulated on the Vector side, and the Acc form compiled without
pipeline-cross-core-loops.  Exits 1 when the Acc form misses the target.

Usage:  python benchmarks/mlp_chain.py [--variant m128_h1024]
"""
from __future__ import annotations

import argparse
import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: the Acc form's target: cycles within this many times the busiest pipe's busy cycles
TARGET = 1.6


def load(rel: str):
    spec = importlib.util.spec_from_file_location(rel.replace("/", "_")[:-3], ROOT / rel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def busiest(result) -> tuple:
    """(core name, pipe name, busy cycles) of the busiest pipe of a run."""
    from ptopipe.arch import PipeUnit
    best = ("-", "-", 0)
    for core in result.cluster.cores:
        for pipe in PipeUnit:
            if core.busy[pipe] > best[2]:
                best = (core.name, pipe.name, core.busy[pipe])
    return best


def scenario(mod, passes=None):
    """The example's Scenario, its kernels compiled by ``passes`` (None: the default)."""
    import ptopipe
    from ptopipe.passes import compile_program
    from ptopipe.runtime import KernelSet
    if passes is None:
        return mod.SCENARIO
    ks = KernelSet(mod.build, compiler=lambda prog, platform, protocol: compile_program(
        prog, platform, passes, protocol=protocol))
    s = mod.SCENARIO
    return ptopipe.Scenario(s.name + "_unpipelined", ks.aic, ks.aiv, s.make_args, s.golden,
                            s.variants, rtol=s.rtol, atol=s.atol)


def rows(variant: str):
    """(form, platform, protocol, cycles, core, pipe, busy) for each form of the chain."""
    from ptopipe.passes import default_pipeline
    mod = load("benchmarks/mlp_chain_kernel.py")
    without = [p for p in default_pipeline() if p != "pipeline-cross-core-loops"]
    vec = variant + "_vec_acc" if variant != "default" else "vec_acc"
    forms = [("acc (target)", scenario(mod), variant), ("vec_acc", scenario(mod), vec),
             ("acc, not pipelined", scenario(mod, without), variant)]
    for form, sc, v in forms:
        for platform in ("a2a3", "a5"):
            for protocol in ("spec", "pto-isa"):
                r = sc.check(v, platform, protocol)         # numpy-matched, checkers on
                yield (form, platform, protocol, r.summary.cycles) + busiest(r)


def verdict(table) -> int:
    """Print the table; 0 when every row of the target form is within TARGET, else 1."""
    worst = 0.0
    print(f"{'form':20} {'platform':8} {'protocol':8} {'cycles':>7} {'busiest pipe':>14} "
          f"{'busy':>6} {'ratio':>6}")
    for form, platform, protocol, cycles, core, pipe, busy in table:
        ratio = cycles / busy
        if form.endswith("(target)"):
            worst = max(worst, ratio)
        print(f"{form:20} {platform:8} {protocol:8} {cycles:7d} {core + ' ' + pipe:>14} "
              f"{busy:6d} {ratio:6.2f}")
    print(f"acc form: worst {worst:.2f}x its busiest pipe (target: within {TARGET}x)")
    return 0 if worst <= TARGET else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variant", default="m128_h1024",
                    help="the benchmarks/mlp_chain_kernel.py variant (its _vec_acc twin is the "
                         "Vector-accumulated form)")
    args = ap.parse_args(argv)
    return verdict(list(rows(args.variant)))


if __name__ == "__main__":
    sys.exit(main())
