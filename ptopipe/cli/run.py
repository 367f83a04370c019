"""``ptopipe run FILE``: run a kernel on the simulated cluster, compare it with its numpy
golden, print the result and a summary; exit 1 on a mismatch or any error."""
from __future__ import annotations


import numpy as np

from ..isa.launch import compare_launches
from .common import (add_platform, CPP_SUFFIXES, PROTOCOL_HELP, protocol_option, add_launches, add_pto_func, add_ranges, add_sync, add_werror, block_note, blocks_ran, engine_note, launch_kwargs,
                     refuse_pto_options, run_each, summary_warnings, sync_kwargs, target, werror_note,
                     werror_verdict)
from ..sim.cluster import ENGINES
from . import bounds
from ..driver.loader import KERNEL_FILES, load_scenarios, pick_variants


def add_common(p, file_help: str = "kernel file (.py defining SCENARIO)") -> None:
    p.add_argument("file", help=file_help)
    add_platform(p, "platform model (default: the scenario's, else a2a3)")
    p.add_argument("--protocol", default=None, type=protocol_option, metavar="PROTOCOL",
                   help=PROTOCOL_HELP + " (default: the scenario's, else spec)")
    p.add_argument("--variant", default=None, help="variant name, or 'all' (default: the one named 'default', else the first)")
    p.add_argument("--seed", type=int, default=0,
                   help="input data seed (default 0; the same as --data-seed - check's --seed is its "
                        "first schedule seed)")
    p.add_argument("--data-seed", dest="seed", type=int, metavar="SEED", help="the same as --seed")
    add_sync(p)
    add_werror(p)
    bounds.add_arguments(p)


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run a kernel (a .py: checked against its numpy golden; a .pto or "
                                   "pto-isa .cpp: with the given (.pto: or seeded) inputs)")
    add_common(p, "kernel file: a .py defining SCENARIO (run and checked against its numpy golden), "
                  "a .pto PTO-AS file or a pto-isa .cpp file (run with --input / --output arrays)")
    p.add_argument("--quiet", action="store_true", help="print only the summary line")
    p.add_argument("--no-checks", action="store_true",
                   help="(.py and .pto kernels) run without the checkers (the happens-before race, slot-reuse "
                        "and address checks): faster; a misuse then shows only as a wrong result, a hang or a leak")
    p.add_argument("--engine", choices=ENGINES, default=None,
                   help="(.py and .pto kernels) exact: simulate every instruction; periodic: fast-forward a "
                        "streaming kernel's steady state, the checkers on or off, the same results "
                        "(docs/engine.md) (default: $PTOPIPE_ENGINE, else exact)")
    p.add_argument("--causal", action="store_true",
                   help="order each core's GM accesses before its cross-core signals by causality, "
                        "not by the simulated timing, as `check` does (stricter race check, 25-30%% slower)")
    p.add_argument("--input", action="append", metavar="NAME=FILE.npy|NAME=NUMBER",
                   help="(.pto / .cpp files) the array of a kernel parameter (a .npy file), or a scalar "
                        "parameter's value (a .npy file or a number: n=5, x=-1.5); a bf16 / float8 "
                        "parameter takes np.save of an ml_dtypes array or of its bits (x.view(np.uint16)); "
                        "FILE - is the standard input; repeatable")
    p.add_argument("--output", action="append", metavar="NAME=FILE.npy",
                   help="(.pto / .cpp files) write a tensor parameter's final contents (a bf16 / float8 "
                        "tensor as its bits: np.load(f).view(ml_dtypes.bfloat16); the file is a valid "
                        "--input as it is); repeatable")
    add_pto_func(p)
    add_ranges(p)
    from .cpp import add_arguments as add_cpp_arguments
    add_cpp_arguments(p)
    add_launches(p)
    p.add_argument("--report", default=None, metavar="OUT.html",
                   help="write a self-contained HTML report (profile + swimlane SVG); with --variant all, "
                        "one per variant: OUT.<scenario>.<variant>.html (so for a file of several Scenarios, and "
                        "OUT.<function>.html for each function of a .pto run)")
    p.add_argument("--png", default=None, metavar="OUT.png",
                   help="write the swimlane as a PNG (needs matplotlib: pip install 'ptopipe[plot]'); with "
                        "--variant all, one per variant: OUT.<scenario>.<variant>.png")
    p.set_defaults(func=main)


def _preview(a: np.ndarray) -> str:
    with np.printoptions(precision=4, suppress=True, threshold=12, edgeitems=2, linewidth=100):
        return np.array2string(a)


def main(args) -> int:
    refuse_pto_options(args, "input", "output", "func", "range", "aic", "aiv", "no-checks", "engine")
    if args.file.endswith(".pto"):
        from .pto import run_pto
        return run_pto(args)
    if args.file.endswith(CPP_SUFFIXES):
        from .cpp import run_cpp_file
        return run_cpp_file(args)
    reports = getattr(args, "report", None) or getattr(args, "png", None)

    def tag(sc, v):         # (several runs: a report each, named as trace names its files)
        from .trace import run_tag
        return run_tag(args, jobs, sc, v)

    def one(sc, v):
        platform, protocol = target(args, sc)
        try:
            res, expected = sc.run(v, platform, protocol, args.seed,
                                   **({"trace": True} if reports else {}), **bounds.run_kwargs(args),
                                   **sync_kwargs(args), **launch_kwargs(args), causal=args.causal,
                                   checks=not args.no_checks, engine=args.engine)
        except Exception as e:          # (a kernel's own exception too: its reports up to it)
            if reports:
                from .trace import reports_of_failed_run, write_reports
                stopped = type(e).__name__
                reports_of_failed_run(e, lambda cl: write_reports(cl, args, sc.name, v, stopped, tag(sc, v)))
            raise
        label = f"{sc.name}[{v}]" + (" (manual sync)" if res.cluster.manual_sync else "")
        if reports:             # written before the golden check: useful on a mismatch too
            from .trace import write_reports as write_run_reports
            write_run_reports(res, args, sc.name, v, tag=tag(sc, v))
        compare_launches(res, expected, sc.rtol, sc.atol, label,   # MismatchError -> exit 1
                         rerun=lambda: sc.run(v, platform, protocol, args.seed, record_writes=True,
                                              **bounds.run_kwargs(args), **sync_kwargs(args),
                                              **launch_kwargs(args))[0])
        warned = summary_warnings(res.summary)      # (the summary below shows them, unless --quiet)
        failed, verdict = werror_verdict(args, warned if args.quiet else (), () if args.quiet else warned)
        matched = (f"matches numpy golden ({', '.join(expected)})" if expected else
                   "ran (its golden names no output: nothing was compared)")
        print(f"{verdict} {label}{blocks_ran(res.summary)}: {matched}"
              + (f" after each of {len(res.launches)} launches" if len(res.launches) > 1 else "")
              + werror_note(failed, warned))
        note = block_note(res.summary)
        if note:
            print(note)
        ff = engine_note(res)
        if ff is not None and not args.quiet:
            print(ff)
        if not args.quiet:
            for k in expected:
                out = res.outputs[k]
                print(f"  {k} {out.dtype} {out.shape}:")
                print("    " + _preview(out).replace("\n", "\n    "))
            print("  " + res.summary.format().replace("\n", "\n  "))
        return failed

    jobs = [(sc, v) for sc in load_scenarios(args.file, kinds=KERNEL_FILES) for v in pick_variants(sc, args.variant)]
    return run_each(jobs, one)
