"""``ptopipe check PATH...`` over a kernel library: files and directories (every ``.pto``
and every ``.py`` that defines a ``SCENARIO``, not ``_``-prefixed), each checked as
``ptopipe check FILE`` would - the files in parallel on ``--engine local|ray``
(:mod:`.engine`), each file's output printed in file order - one summary table at the end,
``--junit OUT.xml`` for CI systems, exit status 1 if anything failed.  A file that cannot be
read is a failed row, and the library goes on."""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from typing import NamedTuple
from xml.sax.saxutils import escape, quoteattr

from ..errors import ConfigError, PtoPipeError
from ..report._io import write_atomic
from . import bounds
from .engine import run_units
from .errors import color, describe_exception, report_exception
from .loader import check_kernel_file
from .progress import Progress


def kernel_files(paths) -> list:
    """The kernel files ``paths`` name, in order: a file as given, a directory's kernels
    (sorted, recursively); a path that is neither is a ConfigError."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            found = []
            for root, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
                for f in sorted(files):
                    path = os.path.join(root, f)
                    if f.startswith("_"):
                        continue
                    if f.endswith(".pto") or (f.endswith(".py") and _defines_scenario(path)):
                        found.append(path)
            if not found:
                raise ConfigError(f"{p} holds no kernel file (.pto, or .py defining SCENARIO)",
                                  where="argument PATH", fix="give a kernel library directory or files")
            out.extend(found)
        else:
            check_kernel_file(p)
            out.append(p)
    return out


def _defines_scenario(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return "SCENARIO" in f.read()
    except (OSError, UnicodeDecodeError):
        return False


def check_library(args, check_one) -> int:
    """``check_one(file_args, reports)`` for each kernel file - on ``args.engine``, each
    file's output captured and printed in file order - then a summary table, JUnit XML."""
    files = kernel_files(args.paths)
    bounds.run_kwargs(args)             # the command's --timeout deadline, shared by every file
    bar = Progress("kernel files", len(files))
    units = [FileUnit(f, _file_args(args, f), check_one) for f in files]
    try:
        done = run_units(check_file_unit, units, _lost, args, lambda k, n: bar.step(k))
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


def _file_args(args, path: str) -> dict:
    kept = {k: v for k, v in vars(args).items() if k not in ("func", "json_stream")}
    return dict(kept, file=path, library=True)


def check_file_unit(unit: FileUnit) -> tuple:
    """``(report rows, stdout text, stderr text)`` of checking one file (an engine's unit:
    its output captured, so that the files' outputs come out in order)."""
    fargs = argparse.Namespace(**unit.args)
    rows: list = []
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            unit.check_one(fargs, rows)
        except PtoPipeError as e:
            if not fargs.json:
                print(f"{color('FAIL', '1;31', sys.stdout)} {unit.path}: {type(e).__name__}", flush=True)
                report_exception(e)
            rows.append({"scenario": os.path.basename(unit.path), "variant": "-",
                         "platform": fargs.platform, "protocol": fargs.protocol, "runs": 0,
                         "passed": 0, "failure": describe_exception(e)})
    for r in rows:
        r["file"] = unit.path
    return rows, out.getvalue(), err.getvalue()


def _lost(unit: FileUnit, error: BaseException) -> tuple:
    """The row of a file whose worker died, and died again when retried."""
    what = f"the worker process checking this file died, and again when retried ({type(error).__name__})"
    row = {"scenario": os.path.basename(unit.path), "variant": "-", "platform": unit.args.get("platform"),
           "protocol": unit.args.get("protocol"), "runs": 0, "passed": 0, "file": unit.path,
           "failure": {"error": "WorkerLost", "what": what, "where": unit.path, "fix": None,
                       "details": str(error).splitlines()[0] if str(error) else None, "findings": []}}
    return [row], "", f"{color('FAIL', '1;31', sys.stderr)} {unit.path}: {what}\n"


def summary(reports: list) -> str:
    """The table: one row per file x scenario variant x platform / protocol."""
    rows = [("file", "kernel", "platform", "result", "schedules")]
    for r in reports:
        fail = r["failure"]
        rows.append((r.get("file", ""), f"{r['scenario']}[{r['variant']}]",
                     f"{r.get('platform') or '-'}/{r.get('protocol') or '-'}",
                     f"FAIL {fail['error']}" if fail else _passed(r), str(r.get("runs", 0))))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    failed = sum(1 for r in reports if r["failure"])
    warned = sum(1 for r in reports if not r["failure"] and r.get("warnings"))
    lines.append((f"{failed} of {len(reports)} failed" if failed else f"all {len(reports)} passed")
                 + (f"; {warned} passed with warnings (see above)" if warned else ""))
    return "\n".join(lines)


def _passed(r: dict) -> str:
    n = len(r.get("warnings") or ())
    return f"PASS, {n} warning{'s' if n != 1 else ''}" if n else "PASS"


def junit(reports: list) -> str:
    """JUnit XML: a test case per row (class: the file), a failure with the error's first line."""
    cases = []
    for r in reports:
        name = quoteattr(f"{r['scenario']}[{r['variant']}] {r.get('platform') or '-'}/{r.get('protocol') or '-'}")
        head = f'    <testcase classname={quoteattr(r.get("file", ""))} name={name}>'
        fail = r["failure"]
        if fail:
            msg = f"{fail['error']}: {fail['what']}" + (f" at {fail['where']}" if fail.get("where") else "")
            cases.append(f"{head}\n      <failure message={quoteattr(msg)} type={quoteattr(fail['error'])}/>\n"
                         "    </testcase>")
        elif r.get("warnings"):                 # a pass the run warned about: shown, not failed
            text = "\n".join("warning: " + w["what"] + (f" ({w['where']})" if w.get("where") else "")
                             for w in r["warnings"])
            cases.append(f"{head}\n      <system-err>{escape(text)}</system-err>\n    </testcase>")
        else:
            cases.append(head + "</testcase>")
    failures = sum(1 for r in reports if r["failure"])
    return ('<?xml version="1.0" encoding="utf-8"?>\n'
            f'<testsuites>\n  <testsuite name="ptopipe check" tests="{len(reports)}" failures="{failures}">\n'
            + "\n".join(cases) + "\n  </testsuite>\n</testsuites>\n")
