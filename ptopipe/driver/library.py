"""A kernel library: the kernel files of files and directories (every ``.pto`` and every
``.py`` that defines a ``SCENARIO``, not ``_``-prefixed, in order), and what is reported
of the rows of checking them - the summary table, JUnit XML for CI systems, the row of a
file whose worker died."""
from __future__ import annotations

import os
from xml.sax.saxutils import escape, quoteattr

from ..errors import ConfigError
from .check import TIMEOUT
from .loader import check_kernel_file, looks_like_kernel


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
                    if f.endswith((".pto", ".py")) and looks_like_kernel(path):
                        found.append(path)
            if not found:
                raise ConfigError(f"{p} holds no kernel file (.pto, or .py defining SCENARIO)",
                                  where="argument PATH", fix="give a kernel library directory or files")
            out.extend(found)
        else:
            check_kernel_file(p)
            out.append(p)
    seen = set()                        # a file named twice (or inside a directory given) runs once
    return [p for p in out if not (os.path.realpath(p) in seen or seen.add(os.path.realpath(p)))]


def lost_row(path: str, platform, protocol, error: BaseException) -> dict:
    """The row of the file ``path`` whose worker died, and died again when retried."""
    what = f"the worker process checking this file died, and again when retried ({type(error).__name__})"
    return {"scenario": os.path.basename(path), "variant": "-", "platform": platform,
            "protocol": protocol, "runs": 0, "passed": 0, "file": path,
            "failure": {"error": "WorkerLost", "what": what, "where": path, "fix": None,
                        "details": str(error).splitlines()[0] if str(error) else None, "findings": []}}


def summary(reports: list) -> str:
    """The table: one row per file x scenario variant x platform / protocol; its schedules are
    those run, "(all alike)" when the default one showed every schedule gives its result."""
    rows = [("file", "kernel", "platform", "result", "schedules")]
    for r in reports:
        rows.append((r.get("file", ""), f"{r['scenario']}[{r['variant']}]",
                     f"{r.get('platform') or '-'}/{r.get('protocol') or '-'}",
                     _result(r), str(r.get("runs", 0)) + (" (all alike)" if r.get("determinate") else "")))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    late = sum(1 for r in reports if r["failure"] and r["failure"]["error"] == TIMEOUT)
    failed = sum(1 for r in reports if r["failure"]) - late
    warned = sum(1 for r in reports if not r["failure"] and r.get("warnings"))
    lines.append((f"{failed} of {len(reports)} failed" if failed else
                  f"none of {len(reports)} failed" if late else f"all {len(reports)} passed")
                 + (f"; {late} not finished within --timeout" if late else "")
                 + (f"; {warned} passed with warnings (see above)" if warned else ""))
    return "\n".join(lines)


def _result(r: dict) -> str:
    fail = r["failure"]
    if fail is None:
        return _passed(r)
    return "TIMEOUT" if fail["error"] == TIMEOUT else f"FAIL {fail['error']}"


def _passed(r: dict) -> str:
    n = len(r.get("warnings") or ())
    return f"PASS, {n} warning{'s' if n != 1 else ''}" if n else "PASS"


def _failure_text(fail: dict) -> str:
    """The body of a JUnit failure: the error as the CLI prints it (what, where, details,
    fix) and the schedule that replays it."""
    lines = [f"{fail['error']}: {fail['what']}"]
    if fail.get("where"):
        lines.append(f"  at {fail['where']}")
    lines += [f"  {d}" for d in (fail.get("details") or "").splitlines()]
    if fail.get("fix"):
        lines.append(f"  fix: {fail['fix']}")
    seed = fail.get("seed")
    if seed is not None:                    # (an int: a random schedule's seed)
        lines.append(f"  schedule: {seed if isinstance(seed, str) else f'random:{seed}'}")
    return "\n".join(lines)


def junit(reports: list) -> str:
    """JUnit XML: a test case per row (class: the file), a failure with the error's first line
    as its message and the whole error as its text."""
    cases = []
    for r in reports:
        name = quoteattr(f"{r['scenario']}[{r['variant']}] {r.get('platform') or '-'}/{r.get('protocol') or '-'}")
        head = f'    <testcase classname={quoteattr(r.get("file", ""))} name={name}>'
        fail = r["failure"]
        if fail:
            msg = f"{fail['error']}: {fail['what']}" + (f" at {fail['where']}" if fail.get("where") else "")
            tag = "error" if fail["error"] == TIMEOUT else "failure"    # the command's limit, not the kernel
            cases.append(f"{head}\n      <{tag} message={quoteattr(msg)} type={quoteattr(fail['error'])}>"
                         f"{escape(_failure_text(fail))}</{tag}>\n    </testcase>")
        elif r.get("warnings"):                 # a pass the run warned about: shown, not failed
            text = "\n".join("warning: " + w["what"] + (f" ({w['where']})" if w.get("where") else "")
                             for w in r["warnings"])
            cases.append(f"{head}\n      <system-err>{escape(text)}</system-err>\n    </testcase>")
        else:
            cases.append(head + "</testcase>")
    errors = sum(1 for r in reports if r["failure"] and r["failure"]["error"] == TIMEOUT)
    failures = sum(1 for r in reports if r["failure"]) - errors
    return ('<?xml version="1.0" encoding="utf-8"?>\n'
            f'<testsuites>\n  <testsuite name="ptopipe check" tests="{len(reports)}" failures="{failures}" '
            f'errors="{errors}">\n'
            + "\n".join(cases) + "\n  </testsuite>\n</testsuites>\n")
