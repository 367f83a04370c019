"""``ptopipe trace FILE -o trace.json``: run a kernel with the timing model and the trace
recorder on, write a Chrome trace-event JSON (open it in https://ui.perfetto.dev or
chrome://tracing), and print the run profile."""
from __future__ import annotations

import os
import sys

from ..errors import ConfigError
from ..isa.launch import compare_launches
from ..report import profile, write_chrome_trace, write_html
from .common import (CPP_SUFFIXES, add_launches, add_pto_func, add_ranges, block_note, blocks_ran,
                     launch_kwargs, refuse_pto_options, run_each, summary_warnings, sync_kwargs, target, werror_note,
                     werror_verdict)
from . import bounds
from ..driver.loader import KERNEL_FILES, load_scenarios, pick_variants
from .run import add_common


def add_parser(sub) -> None:
    p = sub.add_parser("trace", help="run a kernel and write a Chrome/Perfetto trace of its timeline")
    add_common(p, "kernel file: a .py defining SCENARIO, a .pto file or a pto-isa C++ kernel (.cpp)")
    p.add_argument("-o", "--output", default="trace.json",
                   help="trace file to write (default trace.json); with --variant all, or for a file of "
                        "several Scenarios, one per run: OUTPUT.<scenario>.<variant>.json (as run's --report "
                        "names its files; OUTPUT.<function>.json for each function of a .pto run)")
    p.add_argument("--latency", type=int, default=None,
                   help="cross-core flag latency in cycles (default: the platform's)")
    p.add_argument("--report", default=None, metavar="OUT.html",
                   help="also write the HTML report (summary + swimlane)")
    p.add_argument("--input", action="append", metavar="NAME=FILE.npy|NAME=NUMBER",
                   help="(.pto / .cpp files) a kernel parameter's array or scalar value (.pto: the "
                        "others get seeded random data); repeatable")
    add_pto_func(p)
    add_ranges(p)
    from .cpp import add_arguments as add_cpp_arguments
    add_cpp_arguments(p)
    add_launches(p)
    p.set_defaults(func=main)


def run_tag(args, jobs: list, sc, variant: str) -> str | None:
    """The name of the run of ``sc``'s ``variant`` in the files ``run`` and ``trace`` write per
    run (``OUT.<scenario>.<variant>.ext``): when the command makes several runs (``jobs``: its
    (scenario, variant) pairs) or was asked for ``--variant all``; None: the file as given."""
    return f"{sc.name}.{variant}" if len(jobs) > 1 or getattr(args, "variant", None) == "all" else None


def _out(path: str, tag: str, many: bool) -> str:
    if not many:
        return path
    stem, ext = os.path.splitext(path)
    return f"{stem}.{tag}{ext or '.json'}"


def check_output(args) -> None:
    """``-o`` names the Chrome trace-event JSON; an HTML path there would get JSON in an
    ``.html`` file (a browser shows it as text), so it is refused for ``--report``."""
    stem, ext = os.path.splitext(args.output)
    if ext.lower() in (".html", ".htm"):
        raise ConfigError(f"-o {args.output}: trace writes a Chrome trace-event JSON there (for "
                          "https://ui.perfetto.dev), not an HTML page", where="option -o",
                          fix=f"give -o a .json path and ask for the HTML report with --report: "
                              f"-o {stem}.json --report {args.output}")


def main(args) -> int:
    check_output(args)
    refuse_pto_options(args, "input", "func", "range", "aic", "aiv")    # (its --output is the trace's)
    if args.file.endswith(".pto"):
        from .pto import trace_pto
        return trace_pto(args)
    if args.file.endswith(CPP_SUFFIXES):
        from .cpp import trace_cpp_file
        return trace_cpp_file(args)
    jobs = [(sc, v) for sc in load_scenarios(args.file, kinds=KERNEL_FILES) for v in pick_variants(sc, args.variant)]

    def one(sc, v):
        label = f"{sc.name}[{v}]"
        plat, protocol = target(args, sc)
        tag = run_tag(args, jobs, sc, v)
        res, expected = traced(lambda: sc.run(v, plat, protocol, args.seed, trace=True,
                                              **bounds.run_kwargs(args), **sync_kwargs(args),
                                              **launch_kwargs(args)),
                               args, label, tag, tag is not None, result=lambda r: r[0])
        print("  " + profile(res).format().replace("\n", "\n  "))
        compare_launches(res, expected, sc.rtol, sc.atol, label,   # MismatchError -> exit 1
                         rerun=lambda: sc.run(v, plat, protocol, args.seed, record_writes=True,
                                              **bounds.run_kwargs(args), **sync_kwargs(args),
                                              **launch_kwargs(args))[0])
        warned = summary_warnings(res.summary)
        failed, verdict = werror_verdict(args, warned)
        matched = "matches numpy golden" if expected else "ran (its golden names no output: nothing was compared)"
        print(f"{verdict} {label}{blocks_ran(res.summary)}: {matched}" + werror_note(failed, warned))
        print_block_note(res.summary)
        return failed

    return run_each(jobs, one)


def traced(run, args, label: str, tag: str, many: bool, result=lambda r: r):
    """``run()``, a traced run (``result`` picks the RunResult from what it returns), with its
    Chrome trace and ``--report`` written - after it, or up to the error it raises."""
    try:
        out = run()
    except Exception as e:              # (a kernel's own exception too: its trace up to it)
        stopped = type(e).__name__
        reports_of_failed_run(e, lambda cluster: write_trace(cluster, args, label, tag, many, stopped))
        raise
    write_trace(result(out), args, label, tag, many)
    return out


def print_block_note(summary) -> None:
    """The note of a run of one block whose kernel asked for its block index, if it is one."""
    note = block_note(summary)
    if note:
        print(note)


def write_trace(run, args, label: str, tag: str, many: bool, stopped: str = "") -> None:
    """Write the Chrome trace (``-o``) and the ``--report`` of ``run`` (a RunResult, or the
    cluster of a run that ``stopped`` with that error: up to it).  A run of several blocks
    traces one block's cluster - block 0's, or the block that stopped - and says which."""
    cluster = getattr(run, "cluster", run)
    nblocks = cluster.context.blocks if getattr(cluster, "context", None) is not None else 1
    if nblocks > 1:
        label = f"{label}, block {cluster.block} of {nblocks}"
    path = write_chrome_trace(run, _out(args.output, tag, many))
    print(f"wrote {path} ({label}, up to the {stopped})" if stopped else
          f"wrote {path} ({label}, {run.summary.cycles} cycles) - open it in https://ui.perfetto.dev")
    if args.report:
        title = f"ptopipe {label}" + (f" - stopped by {stopped}" if stopped else "")
        print(f"wrote {write_html(run, _out(args.report, tag, many), title)}")


def write_reports(res, args, name: str, variant, stopped: str = "", tag: str | None = None) -> None:
    """``run --report/--png``: write the HTML report and/or the PNG swimlane of one run of
    scenario (or file) ``name`` (``stopped``: why a run ended early, for its title).  A run of
    several blocks: the reports show one block's cluster (block 0's, or the block that
    stopped), said in the title.  ``tag``: the run's name in the file names when the command
    makes several runs (several Scenarios of a file, functions of a .pto), as ``--variant all``
    names them - one report each, not each over the last."""
    from ..report import write_png
    many = tag is not None or args.variant == "all"
    tag = tag or (f"{name}.{variant}" if many else variant)
    cluster = getattr(res, "cluster", res)
    nblocks = cluster.context.blocks if hasattr(cluster, "context") else 1
    title = (f"ptopipe {name}[{variant}]" + (f" - block {cluster.block} of {nblocks}" if nblocks > 1 else "")
             + (f" - stopped by {stopped}" if stopped else ""))
    if args.report:
        print(f"wrote {write_html(res, _out(args.report, tag, many), title)}")
    if args.png:
        print(f"wrote {write_png(res, _out(args.png, tag, many), title)}")


def child_reports(write) -> tuple:
    """``(after, failed)`` callbacks of a run made in a child process (a C++ kernel's):
    ``write(run, stopped)`` its reports after it, or up to the error it stopped with (``stopped``:
    that error's name) - what :func:`traced` does for a run in this process."""
    def after(res):
        write(res, "")

    def failed(e):
        reports_of_failed_run(e, lambda cluster: write(cluster, type(e).__name__))
        sys.stdout.flush()
    return after, failed


def reports_of_failed_run(e, write) -> None:
    """A traced run that raised ``e``: ``write(cluster)`` its reports up to the error (what a
    deadlock's timeline shows is what led to it), or say that none were written."""
    cluster = getattr(e, "run_cluster", None)
    if cluster is None:
        print(f"note: no report written: {type(e).__name__} before the run started",
              file=sys.stderr)
        return
    print(f"note: the run stopped with {type(e).__name__}; its reports show it up to there",
          file=sys.stderr)
    write(cluster)
