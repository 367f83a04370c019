"""``.cpp`` files on the command line: ``ptopipe run kernel.cpp --input a=a.npy ... [--output
out=out.npy] [--aic NAME --aiv NAME] [--report r.html]``, ``ptopipe trace kernel.cpp --input ...
-o trace.json`` - a pto-isa C++ kernel built against ptopipe's headers
and run on the simulated cluster in a child process (:func:`ptopipe.cpp.run_cpp`; every error
at the C++ file:line) - and ``ptopipe check kernel.cpp --input ...``: the same kernels as a
Scenario with no golden (the checkers judge), explored like any kernel's, the whole check in
one child process (a crash in any schedule is a KernelError, not a dead ptopipe).  This module
parses the options, calls :mod:`ptopipe.driver.cpp` and prints."""
from __future__ import annotations

import os

from ..driver import cpp
from ..errors import DeadlockError, LeakError, ProtocolError, PtoPipeError
from . import bounds
from .common import (block_note, blocks_ran, command_inputs, launch_kwargs, output_files, run_platform,
                     summary_warnings, sync_kwargs, werror_note, werror_verdict, write_outputs)


def add_arguments(p) -> None:
    p.add_argument("--aic", default=None, metavar="NAME",
                   help="(.cpp files) the Cube kernel function (default: the __global__ entry's "
                        "__DAV_CUBE__ call, else the one function named *aic* / *cube*)")
    p.add_argument("--aiv", default=None, metavar="NAME",
                   help="(.cpp files) the Vector kernel function (default: as --aic, *aiv* / *vec*)")


def _written_for(args) -> None:
    """The platform and protocol not given, from a C++ file ptopipe wrote
    (:func:`ptopipe.driver.cpp.run_target`), with its note."""
    args.platform, args.protocol, note = cpp.run_target(args.file, args.platform, args.protocol)
    if note:
        print(f"note: {note}")


def _notes(args) -> None:
    named = {p.split("=", 1)[0] for p in getattr(args, "input", None) or ()}     # (the files are read later)
    for n in cpp.notes(args.file, getattr(args, "aic", None), getattr(args, "aiv", None), getattr(args, "sync", None),
                       args.platform or "a2a3", named):
        print(f"note: {n}")


def _run(args, after=None, **extra):
    """The C++ file of ``args`` run (:func:`ptopipe.driver.cpp.run_file`) with the command's
    options, its notes printed first.  Returns (outputs, summary)."""
    _notes(args)
    return cpp.run_file(args.file, getattr(args, "aic", None), getattr(args, "aiv", None),
                        command_inputs(args), run_platform(args, args.platform or "a2a3"), after,
                        protocol=args.protocol or "spec", **bounds.run_kwargs(args), **sync_kwargs(args),
                        **extra)


def _protocol_hint(args, e) -> None:
    """A pipe error of a run under the default spec protocol: when the same run is clean under
    pto-isa's protocol (its TPipe: an A2A3 TPOP frees the GM slot, no TFREE needed), say so -
    pto-isa's own kernels are written for it."""
    if args.protocol is not None:
        return
    try:
        cpp.run_file(args.file, getattr(args, "aic", None), getattr(args, "aiv", None),
                     command_inputs(args), args.platform or "a2a3", protocol="pto-isa",
                     **bounds.run_kwargs(args), **sync_kwargs(args))
    except PtoPipeError:
        return
    e.add_detail("note: this run is clean under --protocol pto-isa (pto-isa's TPipe, which pto-isa's "
                 "own kernels are written for); the default, spec, is the portable reference protocol "
                 "(docs/protocols.md)")


def _pto_isa_note(args, summary) -> str | None:
    """The note of a clean run (``summary``; None: a clean check) under the default protocol
    when the kernel fails under pto-isa's (:func:`ptopipe.driver.cpp.pto_isa_note`)."""
    return cpp.pto_isa_note(args.file, getattr(args, "aic", None), getattr(args, "aiv", None),
                            command_inputs(args), args.platform or "a2a3",
                            protocol=args.protocol, checks=not getattr(args, "no_checks", False),
                            pipes=summary is None or bool(summary.pipes),
                            causal_clean=summary is None or getattr(args, "causal", False),
                            run_kwargs={**bounds.run_kwargs(args), **sync_kwargs(args), **launch_kwargs(args)})


def _output_names(arrays: list) -> tuple:
    """What ``--output`` of a C++ kernel may name (``arrays``: the array parameters given):
    ``(what, fix_names)`` of :func:`~.common.output_files`."""
    return "an array parameter given with --input", ", ".join(arrays) or "none (give --input arrays)"


def run_cpp_file(args) -> int:
    _written_for(args)
    platform = args.platform or "a2a3"
    protocol = args.protocol or "spec"
    reports = getattr(args, "report", None) or getattr(args, "png", None)
    name = os.path.basename(args.file)
    arrays = sorted(k for k, v in command_inputs(args).arrays.items() if v.ndim)
    output_files(getattr(args, "output", None), arrays, *_output_names(arrays))     # (before the run)
    callbacks = {}
    if reports:
        from .trace import child_reports, write_reports
        after, failed = child_reports(lambda run, stopped: write_reports(run, args, name, "default", stopped))
        callbacks = {"after": after, "trace": True, "failed": failed}
    try:
        outputs, summary = _run(args, **callbacks, **launch_kwargs(args), causal=getattr(args, "causal", False))
    except (DeadlockError, LeakError, ProtocolError) as e:
        _protocol_hint(args, e)
        raise
    outs = write_outputs(outputs, getattr(args, "output", None), *_output_names(sorted(outputs)))
    quiet = getattr(args, "quiet", False)
    warned = summary_warnings(summary)              # (the summary below shows them, unless --quiet)
    failed, verdict = werror_verdict(args, warned if quiet else (), () if quiet else warned)
    print(f"{verdict} {name} on {platform} ({protocol}){blocks_ran(summary)}: ran"
          + (f", wrote {', '.join(outs)}" if outs else "") + werror_note(failed, warned))
    note = block_note(summary)
    if note:
        print(note)
    if not quiet:
        print("  " + summary.format().replace("\n", "\n  "))
    note = _pto_isa_note(args, summary)
    if note is not None:
        print(f"note: {note}")
    return int(failed)


def check_cpp_file(args, reports: list, check_scenarios) -> int:
    """``check`` of a C++ kernel file: ``check_scenarios`` (cli/check.py) of its kernels, in
    the child process that runs them (:func:`ptopipe.driver.cpp.check_file`)."""
    def check(sc, warned):
        mine = []
        return check_scenarios(args, mine, [(sc, warned)]), mine
    _written_for(args)
    _notes(args)
    status, mine = cpp.check_file(args.file, getattr(args, "aic", None), getattr(args, "aiv", None),
                                  command_inputs(args), args.platform or "a2a3", check,
                                  getattr(args, "schedules", 0) + 2, bounds.run_kwargs(args)["timeout"])
    reports.extend(mine)
    if status == 0 and not args.json:
        note = _pto_isa_note(args, None)
        if note is not None:
            print(f"note: {note}")
    return status


def trace_cpp_file(args) -> int:
    """``trace kernel.cpp -o trace.json``: the run's Chrome trace (and ``--report``), written in
    the child process that ran it - up to the error when the run fails (the timeline of a
    failing kernel is the one that matters) - and its profile."""
    from ..report import profile
    from .trace import child_reports, print_block_note, write_trace
    name = os.path.basename(args.file)

    def write(run, stopped):
        write_trace(run, args, name, "default", False, stopped)
        if not stopped:
            print("  " + profile(run).format().replace("\n", "\n  "), flush=True)
    after, failed = child_reports(write)
    _written_for(args)
    _, summary = _run(args, after, trace=True, failed=failed, **launch_kwargs(args))
    warned = summary_warnings(summary)
    failed_w, verdict = werror_verdict(args, warned)
    if failed_w:
        print(f"{verdict} {name}{blocks_ran(summary)}: ran" + werror_note(failed_w, warned))
    print_block_note(summary)
    return int(failed_w)
