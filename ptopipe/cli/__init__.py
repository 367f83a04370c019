"""cli: the ``ptopipe`` command.  One module per subcommand (``run``, ``check``, ...);
each defines ``add_parser(subparsers)`` and ``main(args) -> int``: it parses its arguments,
calls the library (what a command does is :mod:`ptopipe.driver`'s) and prints.

Every error reaches the user as one readable message (what, where, fix) on stderr and a
non-zero exit code - never a Python traceback.
"""
from __future__ import annotations

import argparse
import contextlib
import difflib
import functools
import importlib
import os
import sys

from .. import __version__
from .._startup import interrupted, release
from .bounds import WORKERS_GRACE, watched
from .exits import end_process, no_process_exit
from .common import validate
from .errors import report_exception

SUBCOMMANDS = ["run", "check", "trace", "sweep", "compile", "mutate"]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ptopipe",
        description="Write, run and check Ascend PTO cross-core (TPUSH/TPOP) kernels on a "
                    "simulated Cube/Vector cluster.")
    p.add_argument("--version", action="version", version=f"ptopipe {__version__}")
    p.add_argument("--include", action="store_true",
                   help="print the include directory of ptopipe's pto-isa C++ headers (g++ -I$(ptopipe --include))")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"{__name__}.{name}").add_parser(sub)
    return p


@functools.lru_cache(maxsize=1)
def _parser() -> argparse.ArgumentParser:
    """The parser :func:`main` parses with, built once per process: building it is most of an
    in-process command's start (a tool or test calling ``main`` again and again), and parsing
    leaves it as it was (each parse fills its own namespace)."""
    return build_parser()


def json_out(args):
    """Where a ``--json`` command prints its report: the stdout the command was started with."""
    return getattr(args, "json_stream", None) or sys.stdout


@contextlib.contextmanager
def report_only_on_stdout(args):
    """Within it, file descriptor 1 is stderr's: what native code writes to its stdout (a C++
    kernel's printf / cce::printf, in this process or in the children a run forks) goes to
    stderr, and ``args.json_stream`` (:func:`json_out`) writes to the stdout the command was
    started with.  With no descriptor 1 or 2 to redirect, nothing is."""
    args.json_stream = sys.stdout
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:
        yield
        return
    try:
        os.dup2(2, 1)
    except OSError:
        os.close(saved)
        yield
        return
    try:
        own = sys.stdout.fileno() == 1
    except (AttributeError, OSError, ValueError):      # (stdout replaced in-process: it stays the report's)
        own = False
    stream = os.fdopen(os.dup(saved), "w", encoding=sys.stdout.encoding or "utf-8") if own else None
    if stream is not None:
        args.json_stream = stream
    from ..cpp.runner import flush_c_stdio
    try:
        yield
    finally:
        flush_c_stdio()                 # (what C stdio still holds was written while fd 1 was stderr)
        if stream is not None:
            stream.flush()
        os.dup2(saved, 1)
        os.close(saved)
        args.json_stream = sys.stdout   # (an error report after it: the restored stdout)
        if stream is not None:
            stream.close()


def parse(parser: argparse.ArgumentParser, argv) -> argparse.Namespace:
    """``parser.parse_args(argv)``, except that arguments no option takes are refused by the
    subcommand's parser (its usage, not the top level's) with the options they resemble (or,
    for another command's option, the commands that take it); a command's option given before
    the command word is said to go after it (with a value, ``--platform a5 run``, the top level
    would read the value as the command)."""
    words = list(sys.argv[1:] if argv is None else argv)
    subs = next((a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})
    at = next((k for k, w in enumerate(words) if w in subs), None)
    if at:
        top = {o for a in parser._actions for o in a.option_strings}
        known = {o for a in subs[words[at]]._actions for o in a.option_strings}
        moved = [w.split("=", 1)[0] for w in words[:at] if w.startswith("-") and w not in top
                 and w.split("=", 1)[0] in known]
        if moved:
            parser.error(f"{' '.join(moved)} is {words[at]}'s: put it after '{words[at]}' "
                         f"(ptopipe {words[at]} ... {' '.join(words[:at])})")
    args, extras = parser.parse_known_args(argv)
    if not extras:
        return args
    command = getattr(args, "command", None)
    sub = subs.get(command) if command else None
    before = words[:words.index(command)] if command in words else []
    if sub is None or any(x in before for x in extras):    # (given before the command word)
        known = [o for a in (sub._actions if sub else ()) for o in a.option_strings]
        moved = [x for x in extras if x.split("=", 1)[0] in known]
        parser.error("unrecognized arguments: " + " ".join(extras)
                     + (f"; {' '.join(moved)} is {command}'s: put it after '{command}'" if moved else ""))
    known = [o for a in sub._actions for o in a.option_strings]
    hints = []
    for x in dict.fromkeys(extras):         # (a repeated option: one hint)
        name = x.split("=", 1)[0]
        if not x.startswith("-"):
            continue
        others = [c for c, s in subs.items() if c != command
                  and any(name in a.option_strings for a in s._actions)]
        if others:                          # not a slip of the pen: another command's option
            hint = f"{name} is an option of {_listed(others)}, not of {command}"
        else:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f"{name}: did you mean {close[0]}?" if close and close[0] != name else None
        if hint and hint not in hints:
            hints.append(hint)
    sub.error("unrecognized arguments: " + " ".join(extras) + ("; " + "; ".join(hints) if hints else ""))


def _listed(words: list) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def main(argv=None) -> int:
    release()                               # Ctrl-C from here on: the KeyboardInterrupt below
    args = None
    try:
        parser = _parser()                  # (imports every subcommand)
        args = parse(parser, argv)
        if args.include:
            from ..cpp import include_dir
            print(include_dir())
            return 0
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        validate(args)
        paths = getattr(args, "paths", None) or ()
        library = len(paths) > 1 or any(os.path.isdir(p) for p in paths)      # (files checked in workers)
        with watched(args, WORKERS_GRACE if library else 0.25), no_process_exit():
            if getattr(args, "json", False):
                # stdout carries the JSON report only (json_out): what the kernels print (TPRINT,
                # print, C++'s printf) and any other text go to stderr, so a tool can parse stdout as it is
                with report_only_on_stdout(args), contextlib.redirect_stdout(sys.stderr):
                    return int(args.func(args) or 0)
            return int(args.func(args) or 0)
    except KeyboardInterrupt as e:
        return interrupted(getattr(e, "ptopipe_done", None))
    except BrokenPipeError:               # the reader went away (`ptopipe run k.py | head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # no error at exit flush
        return 0
    except BaseException as e:  # noqa: BLE001 - the CLI must never show a traceback
        if isinstance(e, SystemExit):
            raise
        if getattr(args, "json", False):          # e.g. a bad option value of `check --json`
            from .check import error_report, print_json
            print_json(args, [error_report(e)])
        return report_exception(e)


def entry() -> None:
    """The ``ptopipe`` command: :func:`main` with ``sys.argv``, its status the process's
    (:func:`~.exits.end_process`)."""
    end_process(main())


if __name__ == "__main__":
    entry()
