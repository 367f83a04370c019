"""``.pto`` files on the command line: ``ptopipe run kernel.pto --input a=a.npy ...
[--output out=out.npy]``, ``ptopipe check kernel.pto [--schedules N ...]`` and
``ptopipe check --static kernel.pto``: the options handed to :mod:`ptopipe.driver.pto`, the
results printed.  ``run`` simulates the program with the given inputs and writes
``--output`` arrays atomically; ``check`` explores the program's schedules like ``check`` of
a ``.py`` file; ``--static`` stops after the passes."""
from __future__ import annotations

import os
import sys

from ..driver import pto
from ..errors import ConfigError, PtoPipeError
from . import bounds
from .common import (block_note, blocks_ran, command_inputs, engine_note, launch_kwargs, run_platform,
                     scalar_ranges, output_files, summary_warnings, werror_note, werror_verdict,
                     write_outputs)


def _launch_options(args) -> tuple:
    """``(inputs, func, platform, protocol, data seed, ranges)``: the options of ``args``
    that :func:`ptopipe.driver.pto.launches` takes."""
    seed = getattr(args, "data_seed", None)
    return (command_inputs(args), getattr(args, "pto_func", None), getattr(args, "platform", None),
            getattr(args, "protocol", None) or "spec", seed if seed is not None else getattr(args, "seed", None),
            scalar_ranges(args))


def _launches(args, tensor_outputs: bool = True, echo: bool = True) -> tuple:
    """``(launches, protocol, warnings)`` of ``args.file`` (:func:`ptopipe.driver.pto.launches`):
    ``warnings``, the static verifier's (printed before anything runs, unless not ``echo``:
    ``check`` prints them with its verdict), are what the run's verdict counts with its own.  ``tensor_outputs``: ``args.output`` is ``--output
    NAME=FILE.npy`` (a file of several functions then needs ``--func``), not trace's ``-o``."""
    inputs, func, platform, protocol, seed, ranges = _launch_options(args)
    out, warnings = pto.launches(args.file, inputs, func, platform, protocol, seed,
                                 one=tensor_outputs and bool(getattr(args, "output", None)), ranges=ranges)
    for w in warnings if echo else ():
        print(f"warning: {w}", file=sys.stderr)
    return out, protocol, list(warnings)


def _platform_notes(launched) -> list:
    """The note of a file run on another platform than its own (:func:`ptopipe.codegen.pto_exec.
    launch.platform_note`), once: printed before the runs, whose errors it may explain."""
    return list(dict.fromkeys(pl.platform_note for pl in launched if pl.platform_note))


def _run_warnings(static: list, pl) -> list:
    """The warnings of a launch's run besides the static verifier's (printed already): the
    loader's and the run's."""
    return [w for w in dict.fromkeys(list(pl.warnings) + list(pl.run_warnings)) if w not in static]


def pto_scenarios(args) -> list:
    """The .pto file of ``args`` as ``(Scenario, run warnings)`` pairs for ``check`` (the
    static verifier's warnings first among the run warnings: the check's verdict counts
    them, printed with its verdict), the notes of its launches printed."""
    launched, protocol, static = _launches(args, echo=False)
    note = _file_sync(args)[1]
    for n in ([note] if note else []) + _platform_notes(launched) + [n for pl in launched for n in pl.notes]:
        print(f"note: {n}", file=sys.stderr)
    pairs = pto.scenarios(args.file, launched, protocol)
    for _, warned in pairs:
        warned[:0] = [w for w in static if w not in warned]
    return pairs


def pto_sources(args, count: int) -> list:
    """How a worker process loads each of the ``count`` pairs :func:`pto_scenarios` gave
    (:func:`ptopipe.driver.pto.scenario_at`): the file by absolute path, the input arrays
    as this process read them."""
    inputs, func, platform, protocol, seed, ranges = _launch_options(args)
    return [(pto.scenario_at, os.path.abspath(args.file), inputs, func, platform, protocol, seed,
             tuple(sorted(ranges.items())), k) for k in range(count)]


_VERDICT = {"verified": ("PASS", "1;32", 0), "nothing to verify": ("PASS", "1;32", 0),
            "not verified": ("NOT VERIFIED", "1;33", 1), "not proven": ("NOT PROVEN", "1;33", 1),
            "failed": ("FAIL", "1;31", 1)}


def static_pto(args) -> int:
    """``check --static kernel.pto``: print the verdict (a line, or ``--json``'s report)."""
    from .check import print_json
    from .errors import color, report_exception
    from ..passes.verify_pipes import NOT_PROVEN, not_proven
    from ..driver.check import fails_under_werror
    v = pto.static_verdict(args.file, getattr(args, "platform", None), getattr(args, "protocol", None) or "spec",
                           command_inputs(args), scalar_ranges(args))
    word, paint, rc = _VERDICT[v["status"]]
    warnings = v["warnings"]
    if getattr(args, "json", False):
        print_json(args, [{"program": v["program"], "platform": v["platform"], "protocol": v["protocol"],
                           "status": v["status"], "findings": [e.to_dict() for e in v["found"]],
                           "warnings": warnings, "not_proven": not_proven(warnings), "detail": v["detail"]}])
        return rc or int(fails_under_werror(warnings, getattr(args, "werror", False)))
    for w in warnings:
        if v["status"] != "not proven" or not w.startswith(NOT_PROVEN):
            print(f"warning: {w}", file=sys.stderr)
    failed = rc == 0 and fails_under_werror(warnings, getattr(args, "werror", False))
    if failed:
        word, paint, rc = "FAIL", "1;31", 1
    print(f"{color(word, paint, sys.stdout)} {v['program']} on {v['platform']} ({v['protocol']}): {v['detail']}"
          + werror_note(failed, warnings), flush=True)
    for e in v["found"]:
        report_exception(e)
    return rc


def run_pto(args) -> int:
    """``run kernel.pto``: simulate with the given inputs (seeded random data for the others,
    said in a note), write the ``--output`` arrays atomically."""
    variant = getattr(args, "variant", None)
    if variant not in (None, "default", "all"):
        raise ConfigError(f"--variant {variant!r}: a .pto file has one variant, 'default'",
                          where="option --variant", fix="drop --variant")
    launched, protocol, static = _launches(args)
    for n in [] if getattr(args, "quiet", False) else _platform_notes(launched):
        print(f"note: {n}")
    return max([_run_one(args, pl, protocol, static, len(launched) > 1) for pl in launched], default=0)


def _file_sync(args) -> tuple:
    """``({"sync": mode} or {}, note)`` of a run of the file (:func:`ptopipe.driver.pto.file_sync`)."""
    sync, note = pto.file_sync(args.file, getattr(args, "sync", None))
    return ({"sync": sync} if sync else {}), note


def _run_one(args, pl, protocol, static, many: bool = False) -> int:
    """One launch of the file (``many``: one of its several top-level functions, each run in
    turn: its reports are named by the function)."""
    from ..isa import run as run_kernels
    output_files(getattr(args, "output", None), [k for k, v in pl.args.items() if hasattr(v, "shape")])
    reports = getattr(args, "report", None) or getattr(args, "png", None)
    sync, note = _file_sync(args)
    if note and not getattr(args, "quiet", False):
        print(f"note: {note}")
    from .trace import reports_of_failed_run, write_reports
    name = os.path.basename(args.file)
    tag = pl.func if many else None
    try:
        res = run_kernels(aic=pl.aic, aiv=pl.aiv, args=pl.args, platform=pl.platform, protocol=protocol,
                          **({"trace": True} if reports else {}), **bounds.run_kwargs(args),
                          **sync, **launch_kwargs(args), causal=getattr(args, "causal", False),
                          checks=not getattr(args, "no_checks", False), engine=getattr(args, "engine", None))
    except PtoPipeError as e:
        if reports:                 # the run up to its error, as a .py kernel's (cli/run.py)
            stopped = type(e).__name__
            reports_of_failed_run(e, lambda cl: write_reports(cl, args, name, "default", stopped, tag))
        raise
    if reports:
        write_reports(res, args, name, "default", tag=tag)
    outs = write_outputs(res.outputs, getattr(args, "output", None))
    quiet = getattr(args, "quiet", False)          # as for a .py kernel: the PASS line only
    warned, summary = _run_warnings(static, pl), summary_warnings(res.summary)
    if quiet:                                      # (else the summary below shows them)
        warned, summary = list(dict.fromkeys(warned + summary)), []
    failed, verdict = werror_verdict(args, warned, static + summary)
    for n in [] if quiet else pl.notes:
        print(f"note: {n}")
    print(f"{verdict} {os.path.basename(args.file)} @{pl.func} on {pl.platform} "
          f"({protocol}){blocks_ran(res.summary)}: ran" + (f", wrote {', '.join(outs)}" if outs else "")
          + werror_note(failed, static + warned + summary))
    note = block_note(res.summary)
    if note:
        print(note)
    ff = engine_note(res)
    if ff is not None and not quiet:
        print(ff)
    if not quiet:
        print("  " + res.summary.format().replace("\n", "\n  "))
    return int(failed)


def trace_pto(args) -> int:
    """``trace kernel.pto``: each function run (as ``run`` would) with the trace recorder on,
    its Chrome trace (and ``--report``) written - up to the error when the run fails."""
    from ..isa import run as run_kernels
    from ..report import profile
    from .trace import print_block_note, traced
    launched, protocol, static = _launches(args, tensor_outputs=False)     # (-o: the trace's file)
    for n in _platform_notes(launched):
        print(f"note: {n}")
    many, status = len(launched) > 1, 0
    for pl in launched:
        label = f"{os.path.basename(args.file)} @{pl.func}"
        tag = pl.func if many else "default"
        res = traced(lambda: run_kernels(aic=pl.aic, aiv=pl.aiv, args=pl.args,
                                         platform=run_platform(args, pl.platform), protocol=protocol, trace=True, **bounds.run_kwargs(args),
                                         **_file_sync(args)[0], **launch_kwargs(args)), args, label, tag, many)
        warned = _run_warnings(static, pl) + summary_warnings(res.summary)
        failed, verdict = werror_verdict(args, warned, static)
        if failed:
            print(f"{verdict} {label}{blocks_ran(res.summary)}: ran" + werror_note(failed, static + warned))
        print_block_note(res.summary)
        status |= failed
        print("  " + profile(res).format().replace("\n", "\n  "))
    return int(status)

