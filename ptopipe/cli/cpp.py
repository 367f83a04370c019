"""``.cpp`` files on the command line: ``ptopipe run kernel.cpp --input a=a.npy ... [--output
out=out.npy] [--aic NAME --aiv NAME] [--report r.html]``, ``ptopipe trace kernel.cpp --input ...
-o trace.json`` - a pto-isa C++ kernel built against ptopipe's headers
and run on the simulated cluster in a child process (:func:`ptopipe.cpp.run_cpp`; every error
at the C++ file:line) - and ``ptopipe check kernel.cpp --input ...``: the same kernels as a
Scenario with no golden (the checkers judge), explored like any kernel's, the whole check in
one child process (a crash in any schedule is a KernelError, not a dead ptopipe).  Every ``__gm__`` pointer parameter takes an array (its shape and
dtype come from the array: a pointer does not say them), every scalar a number.  This module
parses the options and prints."""
from __future__ import annotations

import os
import sys

import numpy as np

from . import bounds
from .common import launch_kwargs, sync_kwargs, write_outputs
from .errors import color
from ..driver.pto import load_inputs


def add_arguments(p) -> None:
    p.add_argument("--aic", default=None, metavar="NAME",
                   help="(.cpp files) the Cube kernel function (default: the __global__ entry's "
                        "__DAV_CUBE__ call, else the one function named *aic* / *cube*)")
    p.add_argument("--aiv", default=None, metavar="NAME",
                   help="(.cpp files) the Vector kernel function (default: as --aic, *aiv* / *vec*)")


def _inputs(args) -> dict:
    given = load_inputs(getattr(args, "input", None))
    return {k: (v.item() if v.ndim == 0 else np.ascontiguousarray(v)) for k, v in given.items()}


def _run(args, after=None, **extra):
    """The C++ file of ``args`` run in a child process; ``after(result)`` runs there too (it
    writes what needs the whole run: traces, reports).  Returns (outputs, summary)."""
    from ..cpp.build import build, find_kernels
    from ..cpp.runner import DEFAULT_TIMEOUT, Loaded, in_child
    from ..isa.launch import run
    kernels = find_kernels(args.file, getattr(args, "aic", None), getattr(args, "aiv", None))
    platform = args.platform or "a2a3"
    libs = build(kernels, platform)
    kargs = _inputs(args)
    kw = dict(platform=platform, protocol=args.protocol or "spec", **bounds.run_kwargs(args), **sync_kwargs(args),
              **extra)

    def work(crash_fd):
        k = Loaded(kernels, libs, crash_fd)
        res = run(aic=k.aic, aiv=k.aiv, args=kargs, **kw)
        if after is not None:
            after(res)
        return {n: a.copy() for n, a in res.outputs.items()}, res.summary
    return in_child(work, kw.get("timeout") or DEFAULT_TIMEOUT, f"the C++ kernel {os.path.basename(args.file)}")


def run_cpp_file(args) -> int:
    platform = args.platform or "a2a3"
    protocol = args.protocol or "spec"
    reports = getattr(args, "report", None) or getattr(args, "png", None)

    def after(res):
        if reports:
            from .trace import write_reports
            write_reports(res, args, os.path.basename(args.file), "default")
    outputs, summary = _run(args, after, **({"trace": True} if reports else {}), **launch_kwargs(args),
                            causal=getattr(args, "causal", False))
    outs = write_outputs(outputs, getattr(args, "output", None), "an array parameter given with --input",
                         ", ".join(sorted(outputs)) or "none (give --input arrays)")
    print(f"{color('PASS', '1;32', sys.stdout)} {os.path.basename(args.file)} on {platform} ({protocol}): ran"
          + (f", wrote {', '.join(outs)}" if outs else ""))
    if not getattr(args, "quiet", False):
        print("  " + summary.format().replace("\n", "\n  "))
    return 0


def check_cpp_file(args, reports: list, check_scenarios) -> int:
    """``check`` of a C++ kernel file: built here (a compile error is reported before anything
    runs), explored in a child process by ``check_scenarios`` (cli/check.py)."""
    from ..cpp.build import build, find_kernels
    from ..cpp.runner import DEFAULT_TIMEOUT, Loaded, in_child
    from ..isa.scenario import Scenario
    kernels = find_kernels(args.file, getattr(args, "aic", None), getattr(args, "aiv", None))
    libs = build(kernels, args.platform or "a2a3")
    kargs = _inputs(args)

    def work(crash_fd):
        k = Loaded(kernels, libs, crash_fd)

        def make_args(rng):
            return {n: v.copy() if isinstance(v, np.ndarray) else v for n, v in kargs.items()}
        sc = Scenario(os.path.basename(args.file), k.aic, k.aiv, make_args, lambda a: {})
        mine = []
        return check_scenarios(args, mine, [(sc, [])]), mine
    per_run = getattr(args, "timeout", None) or DEFAULT_TIMEOUT
    status, mine = in_child(work, per_run * (getattr(args, "schedules", 0) + 2),
                            f"the C++ kernel {os.path.basename(args.file)}")
    reports.extend(mine)
    return status


def trace_cpp_file(args) -> int:
    """``trace kernel.cpp -o trace.json``: the run's Chrome trace (and ``--report``), written in
    the child process that ran it, and its profile."""
    from ..report import profile, write_chrome_trace, write_html
    lines = []

    def after(res):
        path = write_chrome_trace(res, args.output)
        lines.append(f"wrote {path} ({os.path.basename(args.file)}, {res.summary.cycles} cycles) - open it in "
                     "https://ui.perfetto.dev")
        if args.report:
            lines.append(f"wrote {write_html(res, args.report, f'ptopipe {os.path.basename(args.file)}')}")
        lines.append("  " + profile(res).format().replace("\n", "\n  "))
        print("\n".join(lines), flush=True)
    _run(args, after, trace=True)
    return 0
