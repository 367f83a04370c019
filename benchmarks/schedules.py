"""Schedule exploration: no false positives, and how many schedules each mode needs.

Part 1 runs every example (examples/scenarios, examples/dsl, examples/mixed,
examples/flash_attention.py; their default variants, or all with --variants all), every
correct kernel of tests/isa/test_varied_kernels.py and the correct kernels of the
CLEAN_KERNELS registries of tests/corpus.py (event flags in their manual sync mode,
relaunched kernels with their launches=K, layouts, the pto-isa model per platform,
diagnoses) and, with --kernels fuzz, --fuzz N clean random kernels of tests/fuzz_spec.py,
on both platforms and both protocols, under --schedules N schedules of each
exploration mode, with every checker on and the numpy golden compared.  A registered
kernel (and an AIV1-only NO_SPLIT unseen kernel on a5/pto-isa) is run only on the combos
where it is valid ("excl": excluded by design, the reason printed); an example whose default
schedule already fails on a combination is not valid there ("n/a").  Any failure of an explored schedule of a valid
one is a FALSE POSITIVE (exit 1).

Part 2 runs the schedule-dependent misuse examples: M10 (flag counter overflow, with the
checkers on) and M29-M31 (unordered GM accesses; with the checkers off, since the race
checker reports them under every schedule) and prints how many explored schedules each
mode needs until the bug shows (">N": not within N).

``mix`` takes its N schedules from the other three modes' first N/3 each (same seed), so
with the same N and seed its runs are a subset of theirs: --modes random,pct,exhaustive
covers it at three quarters of the cost.

Run:  python benchmarks/schedules.py [--schedules 200] [--modes random,pct,exhaustive]
                                     [--only NAME] [--exclude A,B] [--variants all] [--part 1|2]
                                     [--kernels all|examples|mixed|unseen|new|fuzz]
                                     [--fuzz 40] [--fuzz-seed 0]
"""
from __future__ import annotations

import argparse
import glob
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import layers  # noqa: E402,F401  (the test suite's layer directories: the kernels it imports)
import numpy as np  # noqa: E402

from ptopipe import Scenario  # noqa: E402
from ptopipe.driver.loader import load_scenarios  # noqa: E402
from ptopipe.isa.explore import MODES, explore, run_schedule  # noqa: E402

COMBOS = [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec"), ("a5", "pto-isa")]
MISUSE = os.path.join(ROOT, "examples", "misuse")
# (file, platform, protocol, run kwargs): the schedule-dependent misuse examples
BUGS = [("m10_schedule_dependent.py", "a5", "pto-isa", {}),
        ("m29_prefetch_before_wait.py", "a2a3", "spec", {"checks": False}),
        ("m29_prefetch_before_wait.py", "a5", "pto-isa", {"checks": False}),
        ("m30_commit_before_store.py", "a2a3", "spec", {"checks": False}),
        ("m30_commit_before_store.py", "a5", "pto-isa", {"checks": False}),
        ("m31_lane_init_overwrite.py", "a2a3", "spec", {"checks": False}),
        ("m31_lane_init_overwrite.py", "a5", "pto-isa", {"checks": False})]


def corpus(all_variants: bool = False, which: str = "all", fuzz: int = 40, fuzz_seed: int = 0):
    """[(label, Scenario, variant, excluded)]: the examples, the unseen correct kernels,
    the clean-kernel registries and/or clean fuzz kernels (``excluded``: {combo: reason},
    None: decided by a default run)."""
    out = []
    if which == "unseen":
        return _unseen(out)
    if which == "new":
        return _new(out)
    if which == "fuzz":
        return _fuzz(out, fuzz, fuzz_seed)
    mixed = sorted(glob.glob(os.path.join(ROOT, "examples", "mixed", "*.py")))
    files = mixed
    if which != "mixed":
        files = sorted(glob.glob(os.path.join(ROOT, "examples", "scenarios", "*.py")))
        files += sorted(glob.glob(os.path.join(ROOT, "examples", "dsl", "*.py"))) + mixed
        files.append(os.path.join(ROOT, "examples", "flash_attention.py"))
    for f in files:
        for sc in load_scenarios(f):
            for v in (sc.variants if all_variants else [sc.default_variant]):
                out.append((f"{sc.name}[{v}]", sc, v, None))
    return out if which in ("examples", "mixed") else _new(_unseen(out))


def _unseen(out: list) -> list:
    import test_varied_kernels as unseen
    for name, (aic, aiv, make, golden) in sorted(unseen.CORRECT.items()):
        sc = Scenario(name, aic, aiv, lambda rng, make=make: make(np.random.default_rng(7)),
                      lambda args, golden=golden: golden(args), rtol=0, atol=0)
        why = ({("a5", q): "A5: a NO_SPLIT transfer has one lane (AIV0); an AIV1-only NO_SPLIT pipe is "
                           "reported (test_varied_kernels.AIV1_ONLY)" for q in ("spec", "pto-isa")}
               if name in unseen.AIV1_ONLY else None)
        out.append((name, sc, "default", why))
    return out


def _new(out: list) -> list:
    from corpus import all_clean_kernels
    for _, k in all_clean_kernels():
        out.append((k.name, k.scenario, k.variant, k.excluded))
    return out


def _fuzz(out: list, n: int, first_seed: int) -> list:
    """``n`` clean random kernels of the fuzz generator (hypothesis seed ``first_seed``), each
    written to a file and loaded as its Scenario, so a report names a kernel line."""
    import tempfile

    from hypothesis import HealthCheck, given, seed, settings

    import fuzz_kernels as fk
    specs = []

    @seed(first_seed)
    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(spec=fk.kernel_specs(mutate=False))
    def draw(spec):
        specs.append(spec)

    draw()
    work = tempfile.mkdtemp(prefix="ptopipe-schedules-fuzz-")
    for k, spec in enumerate(specs[:n]):
        d = os.path.join(work, f"k{k}")
        os.makedirs(d)
        sc = load_scenarios(fk.write_kernel(spec, d))[0]
        out.append((f"fuzz{k}_{spec.platform}_{spec.protocol}", sc, sc.default_variant, None))
    return out


def _valid(sc, variant, platform, protocol) -> bool:
    try:
        run_schedule(sc, None, variant, platform, protocol)
        return True
    except Exception:  # noqa: BLE001 - not valid on this combination
        return False


def part1(args) -> int:
    modes = args.modes
    print(f"Part 1: no false positives, {args.schedules} schedules per mode "
          f"(cells: runs/distinct interleavings, or FAIL / n/a)")
    head = f"{'kernel':40s} {'combo':13s}" + "".join(f" {m:>14s}" for m in modes)
    print(head)
    print("-" * len(head))
    bad = total = runs = distinct = 0
    t0 = time.perf_counter()
    for label, sc, v, excluded in corpus(args.variants == "all", args.kernels, args.fuzz, args.fuzz_seed):
        if args.only and args.only not in label:
            continue
        if any(x and x in label for x in args.exclude.split(",")):
            continue
        for plat, proto in COMBOS:
            cells = []
            if excluded is not None and (plat, proto) in excluded:
                cells = ["excl"] * len(modes)
                print(f"  excluded {label} {plat}/{proto}: {excluded[(plat, proto)]}", file=sys.stderr)
            elif excluded is None and not _valid(sc, v, plat, proto):
                cells = ["n/a"] * len(modes)
            else:
                for m in modes:
                    total += 1
                    r = explore(sc, schedules=args.schedules, seed=0, variant=v, platform=plat,
                                protocol=proto, mode=m, include_default=False)
                    runs += r.runs
                    distinct += r.distinct
                    if r.ok:
                        cells.append(f"{r.runs}/{r.distinct}" + ("*" if r.complete else ""))
                    else:
                        bad += 1
                        spec, err = r.first
                        cells.append("FAIL")
                        print(f"  FALSE POSITIVE {label} {plat}/{proto} {m} schedule {spec}: "
                              f"{type(err).__name__}: {str(err).splitlines()[0]}", file=sys.stderr)
            print(f"{label:40s} {plat + '/' + proto:13s}" + "".join(f" {c:>14s}" for c in cells), flush=True)
    print(f"{total} kernel x combination x mode cells, {runs} explored runs, {distinct} distinct "
          f"interleavings (summed over cells), {bad} false positive(s), "
          f"{time.perf_counter() - t0:.0f} s  (*: the exhaustive bound was exhausted)")
    return 1 if bad else 0


def schedules_to_find(sc, platform, protocol, mode, n, **kw):
    """(explored schedules until the first failure or None, the error, distinct interleavings)."""
    r = explore(sc, schedules=n, seed=0, platform=platform, protocol=protocol, mode=mode,
                include_default=False, **kw)
    return (r.runs if not r.ok else None), (r.first[1] if not r.ok else None), r.distinct


def part2(args) -> int:
    modes = args.modes
    print(f"\nPart 2: explored schedules until the bug shows (seed 0; >{args.schedules}: not found)")
    head = f"{'misuse':30s} {'combo':13s} {'checks':6s} {'default':>8s}" + "".join(f" {m:>11s}" for m in modes)
    print(head)
    print("-" * len(head))
    for fname, plat, proto, kw in BUGS:
        if args.only and args.only not in fname:
            continue
        sc = load_scenarios(os.path.join(MISUSE, fname))[0]
        try:
            run_schedule(sc, None, platform=plat, protocol=proto, **kw)
            default = "clean"
        except Exception as e:  # noqa: BLE001
            default = type(e).__name__
        cells = []
        for m in modes:
            found, err, _ = schedules_to_find(sc, plat, proto, m, args.schedules, **kw)
            cells.append(f">{args.schedules}" if found is None else f"{found} {type(err).__name__[:4]}")
        print(f"{fname[:-3]:30s} {plat + '/' + proto:13s} {'on' if kw.get('checks', True) else 'off':6s} "
              f"{default:>8s}" + "".join(f" {c:>11s}" for c in cells), flush=True)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--schedules", type=int, default=200)
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--only", default=None, help="only kernels whose label contains this")
    p.add_argument("--exclude", default="", help="part 1: skip kernels whose label contains one "
                                                  "of these (comma-separated)")
    p.add_argument("--variants", default="default", choices=["default", "all"])
    p.add_argument("--part", default=None, choices=["1", "2"])
    p.add_argument("--kernels", default="all", choices=["all", "examples", "mixed", "unseen", "new", "fuzz"],
                   help="part 1: the examples (or only the mixed ones), the unseen correct kernels, "
                        "the clean-kernel registries (tests/corpus.py), all of these (default), "
                        "or clean fuzz kernels")
    p.add_argument("--fuzz", type=int, default=40, help="--kernels fuzz: how many kernels")
    p.add_argument("--fuzz-seed", type=int, default=0, help="--kernels fuzz: the hypothesis seed")
    args = p.parse_args(argv)
    args.modes = [m for m in args.modes.split(",") if m]
    status = 0
    if args.part in (None, "1"):
        status |= part1(args)
    if args.part in (None, "2"):
        status |= part2(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
