"""``ptopipe check FILE``: run a kernel with every checker on, under the default schedule
and ``--schedules N`` explored ones (``--explore mix|random|pct|exhaustive``, ``--depth d``,
seeds ``--seed`` ...; a long check's on the ``--engine``'s workers); report the first failure
(error class, kernel file:line, the schedule that replays it: ``--replay SPEC``), the
distinct interleavings covered, and exit 1."""
from __future__ import annotations

import json
import os
import sys
import shlex

from ..errors import CompileError, ConfigError
from ..driver.check import TIMEOUT, error_report as _error_row, explore_variant, variant_report
from ..isa.explore import MODES, ExploreResult
from .common import (add_platform, CPP_SUFFIXES, PROTOCOL_HELP, add_launches, add_pto_func, add_ranges, add_sync,
                     add_werror, launch_kwargs, protocol_option, refuse_pto_options, sync_kwargs, target)
from .errors import color, report_exception
from .progress import Progress
from . import bounds
from ..driver.loader import KERNEL_FILES, load_scenarios, pick_variants, scenario_at


def add_parser(sub) -> None:
    p = sub.add_parser("check", help="check a kernel for deadlocks, protocol misuse, races and leaks "
                                     "under many schedules")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="kernel file (.py defining SCENARIO, .pto or pto-isa .cpp), or several files and directories "
                        "(a kernel library: every .pto and SCENARIO .py in them, one summary table)")
    p.add_argument("--junit", default=None, metavar="OUT.xml",
                   help="write the results as JUnit XML (one test case per kernel variant)")
    add_platform(p, "platform model (default: the scenario's, else a2a3)")
    p.add_argument("--protocol", default=None, type=protocol_option, metavar="PROTOCOL",
                   help=PROTOCOL_HELP + " (default: the scenario's, else spec)")
    p.add_argument("--variant", default=None, help="variant name, or 'all' (default: the one named 'default', else the first)")
    p.add_argument("--schedules", type=int, default=None,
                   help=f"schedules to explore (default {RUN_DEFAULTS['schedules']})")
    p.add_argument("--explore", default=None, choices=MODES,
                   help="how: random choices + latency/lane-skew jitter, pct (probabilistic concurrency "
                        "testing), exhaustive (every schedule within --depth deviations), mix (pct, random "
                        "and exhaustive schedules in turn) (default mix)")
    p.add_argument("--depth", type=int, default=None,
                   help="pct: bug depth (default 3); exhaustive: deviations from the default schedule (default 2)")
    p.add_argument("--seed", type=int, default=None, help="first schedule seed (default 0)")
    p.add_argument("--replay", default=None, metavar="SPEC",
                   help="run the default schedule and this one (as printed by a failure, e.g. pct:7:3:120)")
    p.add_argument("--data-seed", type=int, default=None, help="input data seed (default 0)")
    p.add_argument("--no-checks", action="store_true",
                   help="run without the race, slot-reuse and leak checkers: an unordered access then "
                        "shows as the wrong result the explored schedules give (docs/schedules.md)")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    p.add_argument("--input", action="append", metavar="NAME=FILE.npy|NAME=NUMBER",
                   help="(.pto / .cpp files) a parameter's array (a .npy file) or a scalar parameter's value "
                        "(a .npy file or a number: n=5, x=-1.5); a .pto file's others get seeded random data, "
                        "scalars 0 (a .cpp file's pointer parameters have no shape: give each); repeatable")
    add_pto_func(p)
    add_ranges(p)
    from .cpp import add_arguments as add_cpp_arguments
    add_cpp_arguments(p)
    p.add_argument("--static", action="store_true",
                   help="do not run: verify the DSL programs' TPUSH/TPOP/TFREE protocol statically "
                        "on every path (VerifyPipes, docs/passes/verify-pipes.md); the options of a "
                        "run (--schedules, --seed, --data-seed, --launches ...) are refused with it")
    add_sync(p)
    add_werror(p)
    bounds.add_arguments(p)
    add_launches(p)
    from .common import add_engine_arguments, add_run_engine
    add_engine_arguments(p, "a library's files in parallel, each file's schedules in turn; one file's "
                            "explored schedules in parallel when they would take more than about "
                            "1.5 s, with the same report")
    add_run_engine(p, "the default schedule shows that every schedule gives its result")
    p.set_defaults(func=main)


#: the options only a check that runs the kernel reads (``args`` attribute -> option), refused
#: with --static (:func:`refuse_run_options`), and the defaults of those that have one
RUN_ONLY = {"schedules": "--schedules", "explore": "--explore", "depth": "--depth", "seed": "--seed",
            "replay": "--replay", "data_seed": "--data-seed", "no_checks": "--no-checks", "sync": "--sync",
            "launches": "--launches", "blocks": "--blocks", "until_cycle": "--until-cycle",
            "run_engine": "--run-engine", "pto_func": "--func"}
RUN_DEFAULTS = {"schedules": 20, "explore": "mix", "seed": 0, "data_seed": 0}


def refuse_run_options(args) -> None:
    """``check --static`` with options only a run reads: a ConfigError naming them, not a
    proof that silently ignored them; without --static, their defaults filled in."""
    if args.static:
        given = [opt for dest, opt in RUN_ONLY.items() if getattr(args, dest, None) not in (None, False)]
        if given:
            raise ConfigError(f"{', '.join(given)}: check --static does not run the kernel, so no schedule, "
                              "input data or run option applies", where=f"option {given[0]}",
                              fix=f"drop {', '.join(given)}, or drop --static to run the kernel under explored "
                                  "schedules")
    for dest, default in RUN_DEFAULTS.items():
        if getattr(args, dest, None) is None:
            setattr(args, dest, default)


def main(args) -> int:
    refuse_run_options(args)
    if args.file is None or args.junit:   # several paths, or a directory: a kernel library
        from .library import check_library
        return check_library(args, _check_file)
    return _check_file(args, None)


def _check_file(args, reports) -> int:
    """``check`` of one kernel file; ``reports`` (a list) collects its rows (a library)."""
    if reports is not None:
        refuse_pto_options(args, "input", "func", "aic", "aiv", *(() if args.static else ("range",)))
        if args.static:
            rc = main_static(args)
            reports.append({"scenario": os.path.basename(args.file), "variant": "static",
                            "platform": args.platform, "protocol": args.protocol, "runs": 0,
                            "passed": 0, "failure": None if rc == 0 else
                            {"error": "NotVerified", "what": "not verified statically", "where": args.file}})
            return rc
        return _check(args, reports)
    refuse_pto_options(args, "input", "func", "aic", "aiv", *(() if args.static else ("range",)))
    if args.static:
        return main_static(args)
    if not args.json:
        return _check(args, [])
    reports = []
    try:
        status = _check(args, reports)
    except Exception as e:  # noqa: BLE001 - a tool reading --json gets the error as JSON too
        reports.append(error_report(e))
        status = 1
    print_json(args, reports)
    return status


def print_json(args, reports: list) -> None:
    """The ``--json`` report, on the stdout ``check`` was started with (the rest of its output
    goes to stderr meanwhile: :func:`ptopipe.cli.main`)."""
    from . import json_out
    file = getattr(args, "file", None)
    for r in reports if file else ():       # every entry names its file, as a library's do
        r.setdefault("file", file)
    print(json.dumps(reports, indent=2, default=str), file=json_out(args))


def main_static(args) -> int:
    """``check --static``: the static verifier only."""
    if args.file.endswith(CPP_SUFFIXES):
        from ..errors import ConfigError
        raise ConfigError(f"--static verifies DSL programs and .pto files; {args.file} is a C++ kernel",
                          where="option --static",
                          fix="check a C++ kernel by running it: ptopipe check FILE.cpp --input ... (without --static)")
    if args.file.endswith(".pto"):
        from .pto import static_pto
        return static_pto(args)
    from . import static
    return static.main(args)


def error_report(e: BaseException) -> dict:
    """The --json report entry of an error that is not one variant's (bad file, bad option)."""
    row = _error_row(e)
    row["failure"]["seed"] = None
    return row


def _explore(sc, v, args, platform, protocol, label, source=None, run_warnings=None):
    """The check of one variant (:func:`ptopipe.driver.check.explore_variant`) with the
    command's options, its schedules counted on a progress bar; with the ``source`` that
    loads ``sc`` elsewhere, a long one on the command's engine (unless a library's files
    are what runs in parallel), its runs' warnings added to ``run_warnings``."""
    bar = []

    def progress(done: int, total: int) -> None:
        if not bar:
            bar.append(Progress(f"{label}: schedules", total))
        bar[0].step(done)
    kw = {**bounds.run_kwargs(args), **sync_kwargs(args), **launch_kwargs(args), "causal": True}
    if getattr(args, "no_checks", False):
        kw["checks"] = False
    if getattr(args, "files_in_parallel", False):
        source = None
    try:
        return explore_variant(sc, v, platform, protocol, schedules=args.schedules, seed=args.seed,
                               mode=args.explore, depth=args.depth, replay=args.replay,
                               data_seed=args.data_seed, progress=progress, source=source,
                               engine=getattr(args, "engine", "local"), address=getattr(args, "address", None),
                               workers=getattr(args, "workers", None), run_warnings=run_warnings,
                               run_engine=getattr(args, "run_engine", None), **kw)
    finally:
        if bar:
            bar[0].close()


def _explored(res: ExploreResult, args) -> str:
    """'200 explored schedules (pct, 187 distinct interleavings)' for the summary line."""
    if res.one_core:
        return "no explored schedules (one core ran: nothing to interleave)"
    if res.determinate:
        return ("0 explored schedules: none needed, every schedule gives this result (no race under "
                "happens-before, no flag past its counter in any order: docs/schedules.md)")
    n = res.runs - 1
    what = f"{n} explored schedule{'s' if n != 1 else ''}"
    extra = f", bound {args.depth or 2} exhausted" if res.complete else ""
    if res.why_explored:
        extra += f"; explored as {res.why_explored}"
    return f"{what} ({res.mode}, {res.distinct} distinct interleaving{'s' if res.distinct != 1 else ''}{extra})"


def _replay_line(args, platform, protocol, v, seed) -> str:
    """The command that runs the default schedule and schedule ``seed`` of variant ``v`` again:
    every option the runs depend on (the data seed, a .pto / C++ kernel's inputs ...), quoted
    as a shell reads it (a path with a space is one word)."""
    words = ["ptopipe", "check", args.file, "--platform", platform, "--protocol", protocol, "--variant", v]
    if getattr(args, "no_checks", False):
        words.append("--no-checks")
    for option, dest in (("--sync", "sync"), ("--launches", "launches"), ("--blocks", "blocks"),
                         ("--until-cycle", "until_cycle"), ("--func", "pto_func"), ("--aic", "aic"),
                         ("--aiv", "aiv")):
        if getattr(args, dest, None):
            words += [option, str(getattr(args, dest))]
    if getattr(args, "data_seed", 0):
        words += ["--data-seed", str(args.data_seed)]
    for option, dest in (("--input", "input"), ("--range", "ranges")):
        for item in getattr(args, dest, None) or ():
            words += [option, item]
    words += ["--seed", str(seed), "--schedules", "1"] if isinstance(seed, int) else ["--replay", str(seed)]
    return shlex.join(words)


def _check(args, reports: list) -> int:
    if args.file.endswith(".pto"):
        from .pto import pto_scenarios, pto_sources
        try:
            scenarios = pto_scenarios(args)
        except CompileError:              # the static checks in front of the run refuse it
            if not args.json and not getattr(args, "library", False):
                print(f"{color('FAIL', '1;31', sys.stdout)} {os.path.basename(args.file)}: CompileError "
                      "before it ran: the static checks refuse it", flush=True)
            raise
        return check_scenarios(args, reports, scenarios, pto_sources(args, len(scenarios)))
    if args.file.endswith(CPP_SUFFIXES):
        from .cpp import check_cpp_file
        return check_cpp_file(args, reports, check_scenarios)
    scenarios = [(sc, []) for sc in load_scenarios(args.file, kinds=KERNEL_FILES)]
    path = os.path.abspath(args.file)
    return check_scenarios(args, reports, scenarios, [(scenario_at, path, i) for i in range(len(scenarios))])


def check_scenarios(args, reports: list, scenarios, sources=None) -> int:
    """``check`` of ``(Scenario, run warnings)`` pairs: every variant explored, printed and
    reported in ``reports``; the exit status.  ``sources``: for each Scenario, the
    ``(function, *args)`` that loads it in a worker process (its schedules may then run on
    the command's engine)."""
    status = 0
    for k, (sc, run_warnings) in enumerate(scenarios):
        plat, protocol = target(args, sc)
        platform = plat.name
        for v in pick_variants(sc, args.variant):
            manual = (getattr(args, "sync", None) or sc.sync) == "manual"
            launches = getattr(args, "launches", None) or sc.launches or 1
            blocks = getattr(args, "blocks", None) or sc.blocks or 1
            label = (f"{sc.name}[{v}] on {platform}/{protocol}" + (" (manual sync)" if manual else "")
                     + (f" ({blocks} blocks)" if blocks > 1 else "")
                     + (f" ({launches} launches each)" if launches > 1 else ""))
            res = _explore(sc, v, args, plat, protocol, label, sources[k] if sources else None,
                           run_warnings)
            rep = variant_report(sc.name, v, platform, protocol, res, run_warnings,
                                 getattr(args, "werror", False), library=getattr(args, "library", False))
            if rep["failure"] is not None:
                status = 1
            if not args.json:
                _print_variant(args, label, res, rep, v)
                if getattr(args, "engine", "local") == "ray" and not res.on_workers and res.runs > 1 \
                        and not getattr(args, "files_in_parallel", False):
                    print(f"note: {label}: its {res.runs - 1} explored schedules ran in this process: too few "
                          "to be worth the Ray cluster's start-up (--engine ray"
                          + (f" --address {args.address}" if getattr(args, "address", None) else "")
                          + " was not contacted; more --schedules spread them there)", file=sys.stderr)
            reports.append(rep)
    failed = [f"{r['scenario']}[{r['variant']}]" for r in reports if r["failure"]]
    if len(reports) > 1 and not args.json and not getattr(args, "library", False):
        print(f"{len(failed)} of {len(reports)} variants failed: {', '.join(failed)}" if failed else
              f"all {len(reports)} variants passed")
    return status


def _print_variant(args, label: str, res, rep: dict, v: str) -> None:
    """The verdict of one variant's check: PASS / FAIL with the warnings, or the error and
    the command that replays it."""
    if res.ok and rep["failure"] is not None:
        print(f"{color('FAIL', '1;31', sys.stdout)} {label}: {len(res.warnings)} warning(s), "
              "errors under --werror:")
        for what, loc in res.warnings:
            print(f"  warning: {what}" + (f" ({loc})" if loc else ""))
    elif res.ok:
        print(f"{color('PASS', '1;32', sys.stdout)} {label}: default schedule + "
              f"{_explored(res, args)}, "
              + ("right results (checkers off)" if args.no_checks else "no checker report")
              + (f", {len(res.warnings)} warning(s):" if res.warnings else ""))
        for what, loc in res.warnings:
            print(f"  warning: {what}" + (f" ({loc})" if loc else ""))
    elif rep["failure"]["error"] == TIMEOUT:
        seed, what = rep["failure"]["seed"], rep["failure"]["what"]
        print(f"{color('TIMEOUT', '1;33', sys.stdout)} {label}: {what}", flush=True)
        if seed is not None and "the schedule under way then did not finish" in what:
            print(f"  to see whether it hangs, run it alone: "
                  f"{_replay_line(args, rep['platform'], rep['protocol'], v, seed)}", file=sys.stderr)
        if rep["failure"].get("fix"):
            print(f"  fix: {rep['failure']['fix']}", file=sys.stderr)
    else:
        seed, err = res.first
        sched = ("the default schedule" if seed is None else
                 f"schedule random:{seed}" if isinstance(seed, int) else f"schedule {seed}")
        after = (f" (after {res.passed} passing schedule(s)"
                 + (f", {res.distinct} distinct interleaving(s) explored" if res.distinct else "")
                 + ")") if res.passed or res.distinct else ""
        # a CompileError (compiling) or ConfigError (setting the run up) is not a schedule's
        # finding: no instruction ran
        refused = None if seed is not None else \
            ("the compiler refuses it", "the kernel does not compile") if isinstance(err, CompileError) else \
            ("its set-up is refused", "fix the set-up above") if isinstance(err, ConfigError) else None
        print(f"{color('FAIL', '1;31', sys.stdout)} {label}: {type(err).__name__} "
              + (f"before it ran: {refused[0]}" if refused else f"under {sched}{after}")
              + (f", {len(res.warnings)} warning(s):" if res.warnings else ""))
        for what, loc in res.warnings:          # (a .pto file's static ones too: printed here only)
            print(f"  warning: {what}" + (f" ({loc})" if loc else ""))
        sys.stdout.flush()
        report_exception(err)
        replay = _replay_line(args, rep["platform"], rep["protocol"], v, seed)
        print(f"  replay: {replay}" if seed is not None else
              f"  (no schedule ran: {refused[1]})" if refused else
              "  (fails under the default schedule: every check, or run --causal, reproduces it)", file=sys.stderr)
