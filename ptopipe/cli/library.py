"""``ptopipe check PATH...`` over a kernel library (:mod:`ptopipe.driver.library`): each file
checked as ``ptopipe check FILE`` would, the files in parallel on ``--engine local|ray``
(:mod:`ptopipe.driver.engine`), each file's output printed in file order, one summary table
at the end, ``--junit OUT.xml`` written, exit status 1 if anything failed.  A file that
cannot be read, or raises at import, is a failed row (at its line), and the library goes on."""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from typing import NamedTuple

from ..driver.check import error_report
from ..driver.engine import run_units
from ..driver.library import junit, kernel_files, lost_row, summary
from ..report._io import write_atomic
from . import bounds
from .exits import no_process_exit
from .errors import color, report_exception
from .progress import Progress


def check_library(args, check_one) -> int:
    """``check_one(file_args, reports)`` for each kernel file - on ``args.engine``, each
    file's output captured and printed in file order - then a summary table, JUnit XML."""
    files = kernel_files(args.paths)
    bounds.run_kwargs(args)             # the command's --timeout deadline, shared by every file
    bar = Progress("kernel files", len(files))
    finished = [0]
    # files on workers: each file's schedules in turn (no pool inside a pool's worker)
    units = [FileUnit(f, _file_args(args, f, files_in_parallel=len(files) > 1), check_one) for f in files]
    try:
        done = run_units(check_file_unit, units, _lost, getattr(args, "engine", "local"),
                         getattr(args, "address", None), getattr(args, "workers", None),
                         lambda k, n: finished.__setitem__(0, k) or bar.step(k))
    except KeyboardInterrupt as e:
        e.ptopipe_done = f"{finished[0]} of {len(files)} kernel files had finished"
        raise
    finally:
        bar.close()
    reports = []
    for unit, (rows, out, err) in zip(units, done):
        if not args.json:               # the file the notes / warnings below belong to
            print(f"-- {unit.path}", file=sys.stderr, flush=True)
        sys.stdout.write(out)
        sys.stdout.flush()
        sys.stderr.write(err)
        sys.stderr.flush()
        reports.extend(rows)
    if args.json:
        from .check import print_json
        print_json(args, reports)
    else:
        print(summary(reports))
    if getattr(args, "junit", None):
        write_atomic(args.junit, junit(reports).encode())
    return 1 if any(r["failure"] for r in reports) else 0


class FileUnit(NamedTuple):
    """One kernel file of a library: its path, its options, the check to run on it."""
    path: str
    args: dict
    check_one: object


def _file_args(args, path: str, files_in_parallel: bool) -> dict:
    kept = {k: v for k, v in vars(args).items() if k not in ("func", "json_stream")}
    return dict(kept, file=path, library=True, files_in_parallel=files_in_parallel)


def check_file_unit(unit: FileUnit) -> tuple:
    """``(report rows, stdout text, stderr text)`` of checking one file (an engine's unit:
    its output captured, so that the files' outputs come out in order)."""
    fargs = argparse.Namespace(**unit.args)
    rows: list = []
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            # (its import, make_args, golden, in this worker: bounded, and os._exit its error)
            with bounds.watched(fargs), no_process_exit():
                unit.check_one(fargs, rows)
        except Exception as e:  # noqa: BLE001 - a file that raises at import: its row, the rest go on
            if not fargs.json:
                print(f"{color('FAIL', '1;31', sys.stdout)} {unit.path}: {type(e).__name__}", flush=True)
                report_exception(e)     # (here, where the traceback still names the file's line)
            platform = fargs.platform
            if platform is None and unit.path.endswith(".pto"):     # (a .pto says its target)
                from ..driver.pto import platform_of
                platform = platform_of(unit.path)
            rows.append(error_report(e, os.path.basename(unit.path), "-", platform,
                                     fargs.protocol or ("spec" if platform else None)))
    for r in rows:
        r["file"] = unit.path
    return rows, out.getvalue(), err.getvalue()


def _lost(unit: FileUnit, error: BaseException) -> tuple:
    """What a file whose worker died, and died again when retried, shows."""
    row = lost_row(unit.path, unit.args.get("platform"), unit.args.get("protocol"), error)
    return [row], "", f"{color('FAIL', '1;31', sys.stderr)} {unit.path}: {row['failure']['what']}\n"
