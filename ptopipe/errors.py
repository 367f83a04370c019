"""The one exception hierarchy of ptopipe.

Every error carries *what* went wrong, *where* (kernel file:line, DSL line:col, or a
config field) and *how to fix it*; ``str(err)`` renders all three so that the CLI can
print it without a traceback.  This module sits below every layer: all of them raise
these classes (and find the user's line: :func:`user_frame` of an exception, :func:`user_line`
of a call).
"""
from __future__ import annotations

import difflib
import os
import re
import sys
import traceback
from dataclasses import dataclass


def shown_path(path: str) -> str:
    """``path`` as messages show it: relative to the working directory when it lies below
    it (as the user typed it, usually), else absolute with its ``..`` and ``.`` resolved
    (``/a/ptopipe/../k/f.py`` is ``/a/k/f.py``)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:              # another drive (Windows)
        return path
    return os.path.normpath(path) if rel.startswith("..") else rel


def shown_where(where):
    """An error's ``where`` as its text shows it: an absolute ``path:line[:col]`` below the
    working directory becomes relative (:func:`shown_path`), whichever layer located it (a
    kernel line, a DSL statement, a .pto or C++ line); anything else is kept.  (``where``
    itself keeps the path as located, for tools.)"""
    if where.__class__ is str and where.startswith(os.sep):
        path, sep, rest = where.partition(":")
        return shown_path(path) + sep + rest
    return where


#: an absolute file path followed by ``:LINE`` inside a message's text (a second location it names)
_ABS_LOC = re.compile(r"(?<![^\s(\['\"])(/[^\s:'\"(),]+\.\w+)(?=:\d)")   # (after a space, a quote or an opening bracket)


def shown_locations(text: str) -> str:
    """``text`` with every ``/abs/path.ext:LINE`` in it shown as :func:`shown_path` shows a
    path: the other locations a message names read like its ``at`` line."""
    return _ABS_LOC.sub(lambda m: shown_path(m.group(1)), text) if os.sep in text else text


class PtoPipeError(Exception):
    """Base class: ``what`` (one sentence), ``where`` (location) and ``fix`` (hint)."""

    kind = "error"

    def __init__(self, what: str, where: str | None = None, fix: str | None = None,
                 details: str | None = None, findings: list | None = None):
        self.what = what
        self.where = where
        self.fix = fix
        self.details = details
        self.findings = list(findings or [])   # structured report entries (dicts) for tools
        super().__init__(self.render())

    def add_detail(self, text: str) -> None:
        """Append a line to ``details`` (and so to ``str(err)``, the CLI and ``--json``),
        e.g. a second error found while this one propagated."""
        self.details = f"{self.details.rstrip()}\n{text}" if self.details else text
        self.args = (self.render(),)

    def to_dict(self) -> dict:
        """The error as structured data: class, what, where, fix, details and findings."""
        d = {"error": type(self).__name__, "what": self.what, "where": self.where,
             "fix": self.fix, "details": self.details, "findings": self.findings}
        if getattr(self, "values", None):       # the values of the scalars it happens with
            d["values"] = self.values
        return d

    def render(self) -> str:
        lines = [shown_locations(self.what)]
        if self.where:
            lines.append(f"  at {shown_where(self.where)}")
        if self.details:
            lines.extend("  " + ln for ln in shown_locations(self.details.rstrip()).splitlines())
        if self.fix:
            lines.append(f"  fix: {shown_locations(self.fix)}")
        return "\n".join(lines)


class ConfigError(PtoPipeError):
    """A pipe, platform or run configuration that cannot work (found at initialisation)."""


@dataclass(frozen=True)
class Given:
    """How the user gave a kernel's parameter values, in the words of the messages about them:
    a command-line option (``--input k=FILE.npy``, ``--range k=LO..HI``) or, with no
    ``option``, the Python keyword (``inputs={'k': array}``)."""
    option: str = "--input"
    keyword: str = "inputs"

    @property
    def where(self) -> str:
        return f"option {self.option}" if self.option else f"argument {self.keyword}="

    def of(self, k: str) -> str:
        """The value given for parameter ``k``, as the user wrote it."""
        return f"{self.option} {k}" if self.option else f"{self.keyword}[{k!r}]"

    def give(self, k: str, value: str = "FILE.npy") -> str:
        """How to give parameter ``k`` a ``value`` (``FILE.npy``: an array; else a literal)."""
        if self.option:
            return f"{self.option} {k}={value}"
        return f"{self.keyword}={{{k!r}: {'array' if value == 'FILE.npy' else value}}}"

    def drop(self, k: str) -> str:
        return f"drop {self.option} {k}" if self.option else f"drop {k!r} from {self.keyword}="


INPUT = Given()                         # the CLI's --input
RANGE = Given("--range", "ranges")      # the CLI's --range
API_INPUTS = Given("")                  # the Python API's inputs=


def refuse_unknown_parameters(names, known, given: Given = INPUT) -> None:
    """A ConfigError for the first of ``names`` (``given``: ``--input``, ``--range``,
    ``inputs=``) that is not one of the kernel's parameters ``known`` - a typo is refused,
    not silently unused."""
    for k in names:
        if k not in known:
            raise ConfigError(f"{given.of(k)}: the kernel has no parameter {k!r}", where=given.where,
                              fix=f"parameters: {', '.join(sorted(known)) or 'none'}")


class ProtocolError(PtoPipeError):
    """A TPUSH/TPOP/TFREE/TALLOC used against the protocol."""


class LeakError(ProtocolError):
    """The kernels ended with protocol state left over (held slots, unconsumed data, ...)."""


class DeadlockError(PtoPipeError):
    """No core can make progress: every live core waits for something nobody will send."""


class BudgetError(PtoPipeError):
    """A run passed one of its bounds - the instruction budget (``max_instructions``:
    instructions, TSYNCs and flag waits of one core), the simulated time (``until_cycle``)
    or the wall-clock time (``timeout``) - e.g. a kernel that loops forever.  The message
    names each core and the kernel line it was at."""


class DataRaceError(PtoPipeError):
    """Two cores touch the same bytes with no happens-before order between them."""


class MemoryConflictError(PtoPipeError):
    """An access out of a memory's range, or regions that must not overlap do."""


class KernelError(PtoPipeError):
    """Misuse of the ISA inside a kernel (wrong tile type, shape, dtype, memory...)."""


class CompileError(PtoPipeError):
    """The DSL compiler rejected a program."""


class ParseError(PtoPipeError):
    """A textual input (IR, .pto) could not be parsed."""


class MismatchError(PtoPipeError):
    """A kernel's results differ from its numpy golden."""


_PKG = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_frame(e: BaseException):
    """The innermost traceback frame of ``e`` outside the ptopipe package (and Python's
    frozen import machinery) - the kernel or scenario line that raised an exception
    ptopipe did not make - or None (or, for an exception a worker process sent, the frame
    it kept as ``ptopipe_frame``)."""
    user = [f for f in traceback.extract_tb(e.__traceback__)
            if not f.filename.startswith((_PKG, "<frozen"))]
    # an exception received from a worker process has no traceback: the line it kept
    return user[-1] if user else getattr(e, "ptopipe_frame", None)


def near_name(e: BaseException) -> str:
    """``. Did you mean: 'TRELU'?`` for a NameError / AttributeError of user code whose name is
    close to one it could have meant (the frame's names, the object's attributes), else "":
    Python prints it with the traceback, which the command line does not show (``str(e)`` never
    holds it)."""
    name = getattr(e, "name", None)
    if not isinstance(name, str) or not isinstance(e, (NameError, AttributeError)):
        return ""
    if isinstance(e, NameError):
        tb = e.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is None:
            return ""
        f = tb.tb_frame
        names = [*f.f_locals, *f.f_globals, *f.f_builtins]
    else:
        try:
            names = dir(e.obj)
        except Exception:       # noqa: BLE001 - no attribute obj (a hand-made error) or a failing __dir__
            return ""
    names = [n for n in names if isinstance(n, str) and n != name
             and (name.startswith("_") or not n.startswith("_"))]
    near = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f". Did you mean: {near[0]!r}?" if near else ""


def ending_call(e: BaseException) -> str:
    """How messages name a BaseException that is no error (``SystemExit(3) (sys.exit)``):
    user code that raised it would end the program, silently and with its exit status,
    instead of reporting a failure."""
    call = f"{type(e).__name__}({', '.join(map(repr, e.args))})"
    return call + (" (sys.exit)" if isinstance(e, SystemExit) else "")


def user_line() -> str | None:
    """``file:line`` of the innermost frame of the running stack outside ptopipe: the user's
    line that called into it (e.g. a decorator with a bad option), or None."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith((_PKG, "<frozen")):
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else None


#: the letters whose names start with a vowel sound (ef, el, em, ...): an abbreviation
#: beginning with one takes "an" ("an L1", "an f16", "an MTE2"); U ("you") does not ("a UB")
_VOWEL_LETTER_NAMES = "aefhilmnorsx"


def ordinal(k: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st: which occurrence, for messages."""
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def with_article(word: str) -> str:
    """``word`` with its indefinite article, for messages: "an Acc", "a Vec", "an AIC", "an
    L1", "an i32", "a u8" - the one place messages choose it."""
    w = str(word)
    abbreviation = w[:2] == "fp" or (w[1:2].isdigit() or w[1:2].isupper() or w.isupper())
    vowel = w[:1].lower() in (_VOWEL_LETTER_NAMES if abbreviation else "aeio")
    return f"{'an' if vowel else 'a'} {word}"
