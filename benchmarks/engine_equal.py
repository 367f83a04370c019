"""The fast-forward engine gives the exact engine's results: every example, and random kernels.

Part 1 runs every example - examples/scenarios, examples/misuse, examples/mixed,
examples/dsl, examples/flash_attention.py and examples/cpp (their Python scenarios; every
variant with --variants all) on both platforms and both protocols, and the .pto files of
tests/pto on their own platform with both protocols, loaded as ``ptopipe run`` loads them -
once with ``engine="exact"`` and once with ``engine="periodic"``, checkers off (``--checks``: on).

Part 2 draws twice --fuzz random kernels of the fuzz generator (tests/fuzz_kernels.py: C2V / V2C
/ DIR_BOTH pipes, SlotNum 1..8, the three splits, tile and address flow, op chains, clean
and mutated) with every pipe's trip count raised to --tiles (the generator draws 1..6, too
few for the engine to engage) and a mutation moved to one of the last iterations (misuse that
shows only after the engine engaged; --mutate-at 0.6: in the middle of the steady state), and
runs each on both engines.  The generated kernels
make a GlobalTensor per GM access, which the engine takes as a new object each time (it
never engages); so each kernel runs a second time with ``GlobalTensor(ptr, ...)`` giving
the tensor made at that place of the source before, moved with ``assign`` - when the exact
engine gives that form the plain form's results (else the kernel is reported as not
transformable and that form is skipped).  The second --fuzz kernels ("hooked") use only the
instructions the engine records (tile flow, no K split, no TCVT / TROWSUM, no events), in
the reused form only: the ones it can fast-forward.

Equal means: the outputs bit for bit (and each launch's), every field of the summary but
``wall_seconds``, the prints; for a failing run the error's class, text and ``to_dict()``.
Any difference is printed with what differs; exits 1 if there is one.  The "ff" column
counts the runs in which the periodic engine recorded at least one whole block (the others
ran exactly: the engine did not apply or did not engage).

Usage:  python benchmarks/engine_equal.py [--part 1|2|all] [--variants default|all]
                                          [--only NAME] [--fuzz 40] [--fuzz-seed 0] [--tiles 200]
                                          [--mutate-at 1.0] [--checks]
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import glob
import os
import sys
import tempfile
import time
import traceback
from dataclasses import replace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)                                 # this checkout
sys.path.insert(0, os.path.join(ROOT, "tests"))

import numpy as np  # noqa: E402

import ptopipe  # noqa: E402
from ptopipe.driver.loader import load_scenarios  # noqa: E402
from ptopipe.errors import PtoPipeError  # noqa: E402
from ptopipe.sim import periodic  # noqa: E402

COMBOS = [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec"), ("a5", "pto-isa")]
PROTOCOLS = ("spec", "pto-isa")

# the FastForward engines each periodic run made (how many recorded whole blocks)
_MADE: list = []
_init = periodic.FastForward.__init__


def _spy(self, *a, **k):
    _init(self, *a, **k)
    _MADE.append(self)


periodic.FastForward.__init__ = _spy


# -- one kernel on both engines ----------------------------------------------------------------
def _copy(args: dict) -> dict:
    return {k: v.copy() if isinstance(v, np.ndarray) else [] if isinstance(v, list) else v
            for k, v in args.items()}


#: why periodic runs did not fast-forward (the engine's reason, its first clause), counted
WHY_NOT = collections.Counter()


def _outcome(run):
    """(result, PtoPipeError, other exception as text) of ``run()``."""
    try:
        return run(), None, None
    except PtoPipeError as e:
        return None, e, None
    except Exception as e:  # noqa: BLE001 - reported as a difference when the engines disagree
        return None, None, f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-4)}"


def differences(a, b) -> list:
    """What differs between the exact outcome ``a`` and the periodic outcome ``b``."""
    (ra, ea, xa), (rb, eb, xb) = a, b
    if xa or xb:
        if (xa and xa.splitlines()[0]) == (xb and xb.splitlines()[0]):
            return []
        return [f"exact: {xa.splitlines()[0] if xa else 'no crash'} / periodic: {xb or 'no crash'}"]
    if ea is not None or eb is not None:
        if ea is None or eb is None:
            return [f"exact: {_err(ea)} / periodic: {_err(eb)}"]
        if type(ea) is not type(eb) or str(ea) != str(eb) or ea.to_dict() != eb.to_dict():
            return [f"error differs:\n  exact:    {_err(ea)}\n  periodic: {_err(eb)}"]
        return []
    out = []
    for k in ra.outputs:
        x, y = ra.outputs[k], rb.outputs[k]
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            out.append(f"output {k} differs")
    sa, sb = _fields(ra.summary), _fields(rb.summary)
    out += [f"summary.{k} differs: exact {str(sa[k])[:200]} / periodic {str(sb[k])[:200]}"
            for k in sa if sa[k] != sb[k]]
    if len(ra.launches) != len(rb.launches) or any(
            {k: v.tobytes() for k, v in la.items()} != {k: v.tobytes() for k, v in lb.items()}
            for la, lb in zip(ra.launches, rb.launches)):
        out.append("the per-launch outputs differ")
    if ra.prints != rb.prints:
        out.append("the prints differ")
    return out


def _fields(summary) -> dict:
    """The summary's fields but wall_seconds (shallow: a leak's location is a tuple subclass)."""
    return {f.name: getattr(summary, f.name) for f in dataclasses.fields(summary) if f.name != "wall_seconds"}


def _err(e) -> str:
    if e is None:
        return "no error"
    return f"{type(e).__name__}: {str(e).splitlines()[0]} (where {e.where})"


def both(make_run) -> tuple:
    """``make_run(engine)`` -> a callable running the kernel on that engine: the differences
    and whether the periodic run recorded a block."""
    exact = _outcome(make_run("exact"))
    _MADE.clear()
    fast = _outcome(make_run("periodic"))
    engaged = any(f.blocks_skipped > 0 for f in _MADE)
    if not engaged:
        why = "the engine did not apply" if not _MADE else (
            "; ".join(dict.fromkeys(str(f.reason) for f in _MADE if f.reason)) or "it recorded no whole block")
        WHY_NOT[why.split(":")[0][:90]] += 1
    return differences(exact, fast), engaged, exact


# -- part 1: the examples ----------------------------------------------------------------------
def example_files() -> list:
    ex = os.path.join(ROOT, "examples")
    files = []
    for sub in ("scenarios", "misuse", "mixed", "dsl", "cpp"):
        files += sorted(f for f in glob.glob(os.path.join(ex, sub, "*.py"))
                        if not os.path.basename(f).startswith("_"))
    files.append(os.path.join(ex, "flash_attention.py"))
    return files


def _scenario_run(sc, variant, plat, proto, checks=False):
    def make(engine):
        return lambda: sc.run(variant, plat, proto, 0, checks=checks, engine=engine)[0]
    return make


def part1(ns) -> tuple:
    bad = runs = engaged = 0
    rows = []
    for f in example_files():
        label = os.path.relpath(f, ROOT)
        try:
            scs = load_scenarios(f)
        except Exception as e:  # noqa: BLE001 - a file that does not load here (no compiler ...)
            print(f"  skipped {label}: {type(e).__name__}: {str(e).splitlines()[0]}", file=sys.stderr)
            continue
        for sc in scs:
            for v in (sc.variants if ns.variants == "all" else [sc.default_variant]):
                name = f"{label}:{sc.name}[{v}]"
                if ns.only and ns.only not in name:
                    continue
                for plat, proto in COMBOS:
                    d, e, ex = both(_scenario_run(sc, v, plat, proto, ns.checks))
                    runs += 1
                    engaged += e
                    bad += bool(d)
                    rows.append((name, f"{plat}/{proto}", d, e, ex))
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "pto", "*.pto"))):
        label = os.path.relpath(path, ROOT)
        if ns.only and ns.only not in label:
            continue
        for proto in PROTOCOLS:
            try:
                from ptopipe.driver import pto
                launched, _ = pto.launches(path, None, None, None, proto)
                pairs = pto.scenarios(path, launched, proto)
            except PtoPipeError as e:
                print(f"  skipped {label} {proto}: {type(e).__name__}: {str(e).splitlines()[0]}", file=sys.stderr)
                continue
            for sc, _ in pairs:
                d, e, ex = both(_scenario_run(sc, sc.default_variant, sc.platform, proto, ns.checks))
                runs += 1
                engaged += e
                bad += bool(d)
                rows.append((f"{label}:{sc.name}", f"{sc.platform}/{proto}", d, e, ex))
    print(f"{'kernel':70s} {'combo':13s} {'ff':3s} result")
    for name, combo, d, e, ex in rows:
        verdict = "DIFFERS" if d else ("same error " + type(ex[1]).__name__ if ex[1] is not None else "same")
        print(f"{name[:70]:70s} {combo:13s} {'yes' if e else '-':3s} {verdict}")
        for line in d:
            print(f"    {line}")
    return bad, runs, engaged


# -- part 2: the fuzz generator's kernels, longer ----------------------------------------------
def fuzz_specs(n: int, first_seed: int, tiles: int, hooked: bool = False, at: float = 1.0) -> list:
    """``n`` kernels of the fuzz generator, every pipe running ``tiles`` iterations, a mutation
    in one of the iterations before ``at * tiles`` (1: the last ones); ``hooked``: only the instructions the engine records (tile flow,
    no TALLOC; no K split, TEXTRACT / TMATMUL_ACC; no TCVT / TROWSUM op; no events)."""
    from hypothesis import HealthCheck, given, seed, settings

    import fuzz_kernels as fk
    from fuzz_spec import WIDE_ONLY
    specs = []

    @seed(first_seed)
    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(spec=fk.kernel_specs(flows=("tile",)) if hooked else fk.kernel_specs())
    def draw(spec):
        specs.append(spec)

    draw()
    out = []
    for spec in specs[:n]:
        pipes = tuple(replace(p, tiles=tiles) for p in spec.pipes)
        if hooked:
            pipes = tuple(replace(p, ksplit=False, events=False,
                                  pre=tuple(o for o in p.pre if o[0] not in WIDE_ONLY),
                                  post=tuple(o for o in p.post if o[0] not in WIDE_ONLY)) for p in pipes)
        mutation = spec.mutation
        if mutation is not None:           # the same misuse, late (after the engine engaged)
            name, p, it = mutation
            mutation = (name, p, max(0, min(tiles - 1, int(at * tiles)) - 1 - it))
        out.append(replace(spec, pipes=pipes, mutation=mutation))
    return out


def reusing_tensors(make_tensor):
    """``GlobalTensor`` that gives, for a GM pointer, the tensor made at the same place of the
    source (and core, shape, stride, tensor) before, moved there with ``assign``."""
    import greenlet

    from ptopipe.isa.tensor import GMPtr
    made = {}

    def tensor(ptr, shape, stride=None, *rest, **kw):
        if ptr.__class__ is not GMPtr or rest or kw:
            return make_tensor(ptr, shape, stride, *rest, **kw)
        f = sys._getframe(1)
        core = getattr(greenlet.getcurrent(), "core", None)
        key = (f.f_code, f.f_lasti, core and core.index, tuple(shape), stride and tuple(stride), ptr.dtype,
               ptr.bounds)
        t = made.get(key)
        if t is None:
            t = made[key] = make_tensor(ptr, shape, stride)
        else:
            t.assign(ptr)
        return t
    return tensor


def part2(ns) -> tuple:
    import fuzz_kernels as fk
    from fuzz_spec import MAX_INSTRUCTIONS
    work = tempfile.mkdtemp(prefix="ptopipe-engine-equal-")
    bad = runs = engaged = 0
    budget = MAX_INSTRUCTIONS * max(1, ns.tiles)
    print(f"\n{'fuzz kernel':40s} {'combo':13s} {'ff':3s} result")
    kernels = [(spec, (False, True), "") for spec in fuzz_specs(ns.fuzz, ns.fuzz_seed, ns.tiles, at=ns.mutate_at)]
    kernels += [(spec, (True,), " hooked")
                for spec in fuzz_specs(ns.fuzz, ns.fuzz_seed, ns.tiles, hooked=True, at=ns.mutate_at)]
    for k, (spec, forms, kind) in enumerate(kernels):
        d_k = os.path.join(work, f"k{k}")
        os.makedirs(d_k)
        path = fk.write_kernel(spec, d_k)
        mod = fk.load(path)
        plain = mod.GlobalTensor
        args = mod.make_args(np.random.default_rng(spec.data_seed))

        def make(engine, reuse, mod=mod, spec=spec, args=args, plain=plain):
            def go():
                mod.GlobalTensor = reusing_tensors(plain) if reuse else plain
                try:
                    return ptopipe.run(mod.cube, mod.vector, _copy(args), platform=spec.platform,
                                       protocol=spec.protocol, max_instructions=budget, checks=ns.checks,
                                       engine=engine)
                finally:
                    mod.GlobalTensor = plain
            return go
        what = ("clean" if spec.mutation is None else f"{spec.mutation[0]}@{spec.mutation[2]}") + kind
        for reuse in forms:
            d, e, ex = both(lambda engine: make(engine, reuse))
            label = f"k{k} {what}" + (" (tensors reused)" if reuse else "")
            if reuse and differences(_outcome(make("exact", False)), ex):
                print(f"{label:40s} {spec.platform + '/' + spec.protocol:13s} {'':3s} not transformable")
                continue
            runs += 1
            engaged += e
            bad += bool(d)
            verdict = "DIFFERS" if d else ("same error " + type(ex[1]).__name__ if ex[1] is not None else "same")
            print(f"{label:40s} {spec.platform + '/' + spec.protocol:13s} {'yes' if e else '-':3s} {verdict}")
            for line in d:
                print(f"    {line}\n    kernel: {path}\n    spec: {spec!r}")
    return bad, runs, engaged


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="all", choices=("1", "2", "all"))
    ap.add_argument("--variants", default="default", choices=("default", "all"))
    ap.add_argument("--only", default=None, help="only the examples whose label contains this")
    ap.add_argument("--fuzz", type=int, default=40, help="random kernels in part 2")
    ap.add_argument("--fuzz-seed", type=int, default=0)
    ap.add_argument("--tiles", type=int, default=200, help="trip count of every pipe of a random kernel")
    ap.add_argument("--checks", action="store_true", help="both engines with the checkers on (default: off)")
    ap.add_argument("--mutate-at", type=float, default=1.0,
                    help="a mutation goes just before this fraction of the trip count (1: the last iterations)")
    ns = ap.parse_args()
    t0 = time.perf_counter()
    bad = runs = engaged = 0
    for part, fn in (("1", part1), ("2", part2)):
        if ns.part in (part, "all"):
            b, r, e = fn(ns)
            bad, runs, engaged = bad + b, runs + r, engaged + e
    print(f"\n{runs} kernel runs on both engines, {engaged} fast-forwarded, {bad} with a difference, "
          f"{time.perf_counter() - t0:.0f} s")
    print("why the others were not fast-forwarded (periodic runs, the transform checks included):")
    for why, n in WHY_NOT.most_common():
        print(f"  {n:5d}  {why}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
