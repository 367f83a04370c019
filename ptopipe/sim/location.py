"""Source locations of kernel instructions.

A hand-written kernel's location is the first stack frame outside the ptopipe package
(looked up per code object once, so recording a location is cheap).  An instruction a
kernel issues from a function of its own can carry the kernel lines that called it
(:func:`call_site`; ``SourceLoc.via``, shown as ``h.py:9 (called from k.py:20)``).
Interpreters (the DSL runtime) set an explicit location on the core instead.
"""
from __future__ import annotations

import functools
import os
import sys
import sysconfig

from ..errors import shown_path

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__))) + os.sep
# id(code object) -> True if it belongs to ptopipe.  Keyed by id: hashing a code object
# hashes its constants, names and bytecode on every lookup.  Every classified code object
# is kept alive (_codes), so that an id is never reused for another one.
_internal: dict = {}
_codes: list = []


_new = tuple.__new__

#: the file names ``run`` / ``check`` take as pto-isa C++ kernels
CPP_SUFFIXES = (".cpp", ".cc", ".cxx")
#: ... and the headers a C++ kernel's instructions may be written in
_CPP_SOURCES = CPP_SUFFIXES + (".hpp", ".hh", ".hxx", ".h")


def is_cpp(loc) -> bool:
    """Is ``loc`` (a :class:`SourceLoc`, a "file:line" text or None) a line of a C++ kernel?
    Fix texts at such a line give the C++ spelling (``protocol.geometry.one_lane``)."""
    if loc is None:
        return False
    file = loc.file if isinstance(loc, SourceLoc) else str(loc).split(":", 1)[0]
    return file.endswith(_CPP_SOURCES)


def is_pto(loc) -> bool:
    """Is ``loc`` (a :class:`SourceLoc`, a "file:line" text or None) a line of a ``.pto`` file
    (or of one given as text, ``<pto>``)?  Fix texts there give the PTO-AS spelling."""
    if loc is None:
        return False
    file = loc.file if isinstance(loc, SourceLoc) else str(loc).split(":", 1)[0]
    return file.endswith(".pto") or file == "<pto>"


class SourceLoc(tuple):
    """file:line[:col] of a kernel or DSL source position (a tuple: cheap to record);
    ``via``: the lines that called the function holding it, innermost first (none: the
    kernel's own line)."""
    __slots__ = ()

    def __new__(cls, file: str, line: int, col: int | None = None, func: str | None = None,
                via: tuple = ()):
        return _new(cls, (file, line, col, func, via) if via else (file, line, col, func))

    def __getnewargs__(self):          # pickle (a C++ run's child process returns warnings)
        return tuple(self)

    file = property(lambda self: self[0])
    line = property(lambda self: self[1])
    col = property(lambda self: self[2])
    func = property(lambda self: self[3])
    via = property(lambda self: self[4] if len(self) > 4 else ())

    def __str__(self) -> str:
        s = f"{shown_path(self[0])}:{self[1]}"
        if self[2] is not None:
            s += f":{self[2]}"
        if len(self) > 4:
            s += " (called from " + ", from ".join(map(str, self[4])) + ")"
        return s

    def __repr__(self) -> str:
        return f"SourceLoc({str(self)!r})"


def is_internal(code) -> bool:
    """Does the code object belong to ptopipe (not to a kernel)?  Classified once per code."""
    r = _internal.get(id(code))
    if r is None:
        fn = code.co_filename
        # a package imported through a path like "benchmarks/.." has unnormalised file names
        r = _internal[id(code)] = fn.startswith("<frozen") or \
            os.path.realpath(fn).startswith(_PKG_DIR)
        _codes.append(code)
    return r


#: where Python's libraries live (the standard library, site-packages): code a kernel file calls
_LIBRARY_DIRS = tuple(sorted({os.path.realpath(sysconfig.get_paths()[k]) + os.sep
                              for k in ("stdlib", "platstdlib", "purelib", "platlib")}))


def running_user_code(frame) -> SourceLoc | None:
    """The kernel file's line a thread whose innermost frame is ``frame`` runs, when its
    innermost frame that is no library's (the standard library, site-packages, or code a
    library made from text: ``<string>``, a namedtuple's ``__new__``) is the kernel file's
    own; None while ptopipe's code runs (it finishes what it does)."""
    f = frame
    while f is not None:
        code = f.f_code
        if is_internal(code):
            return None
        name = code.co_filename
        if not name.startswith("<") and not os.path.realpath(name).startswith(_LIBRARY_DIRS):
            return _locate(f)
        f = f.f_back
    return None


def user_loc(frame=None) -> SourceLoc | None:
    """The first frame (from ``frame``, default the caller) outside ptopipe."""
    f = frame if frame is not None else sys._getframe(1)
    known = _internal
    while f is not None:
        code = f.f_code
        # is_internal(code), inline: this walk runs for every instruction of a traced run
        r = known.get(id(code))
        if r is None:
            r = is_internal(code)
        if not r:
            sites = _sites.get(id(code))      # the call site's location, made once (caller_loc)
            if sites is not None:
                loc = sites.get(f.f_lasti)
                if loc is not None:
                    return loc
            return _locate(f)
        f = f.f_back
    return None


def own_code_loc(frame) -> SourceLoc | None:
    """The innermost frame from ``frame`` outward that is neither ptopipe's nor a library's
    (the standard library, site-packages, code made from text): the line of the user's own
    code that led to the call (None: none, e.g. a thread whose target is a ptopipe function)."""
    f = frame
    while f is not None:
        code = f.f_code
        name = code.co_filename
        if not is_internal(code) and not name.startswith("<") \
                and not os.path.realpath(name).startswith(_LIBRARY_DIRS):
            return _locate(f)
        f = f.f_back
    return None


def _kernel_part(frames) -> SourceLoc | None:
    """Of ``frames`` - ``(code, line)`` from the outermost inward, starting inside ptopipe
    (a run, a kernel's greenlet) - the innermost of the first ones outside ptopipe: the
    kernel and the functions of its own it called, not a library ptopipe called in turn
    (e.g. numpy while applying queued data work)."""
    loc = None
    for code, line in frames:
        if is_internal(code):
            if loc is not None:
                break
        else:
            loc = SourceLoc(code.co_filename, line, None, code.co_name)
    return loc


def raised_at(tb) -> SourceLoc | None:
    """The kernel line an exception propagating through a run left from: traceback ``tb``
    starts in ptopipe (None: no kernel frame in it, e.g. a DSL kernel's)."""
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code, tb.tb_lineno))
        tb = tb.tb_next
    return _kernel_part(frames)


def suspension_point(code) -> SourceLoc:
    """The first ``yield`` / ``await`` of a generator or coroutine function's ``code``
    (its ``def`` line where it has none, as an ``async def`` that awaits nothing)."""
    import dis
    line = code.co_firstlineno
    for ins in dis.get_instructions(code):
        pos = getattr(ins, "positions", None)           # Python >= 3.11
        if pos is not None:
            line = pos.lineno or line
        elif isinstance(ins.starts_line, int):          # Python 3.10
            line = ins.starts_line
        if ins.opname == "YIELD_VALUE":
            return SourceLoc(code.co_filename, line, None, code.co_name)
    return SourceLoc(code.co_filename, code.co_firstlineno, None, code.co_name)


def stopped_at(frame) -> SourceLoc | None:
    """The kernel line of a kernel's greenlet whose innermost frame is ``frame`` (e.g. the
    frame a signal interrupted)."""
    frames = []
    while frame is not None:
        frames.append((frame.f_code, frame.f_lineno))
        frame = frame.f_back
    frames.reverse()
    return _kernel_part(frames)


def running_loc() -> SourceLoc | None:
    """Where the running kernel is: its core's location (an interpreter's explicit one, else
    the kernel's frame), else - outside a kernel - the first frame outside ptopipe."""
    import greenlet
    core = getattr(greenlet.getcurrent(), "core", None)
    if core is not None:
        loc = core.where()
        if loc is not None:
            return loc
    return user_loc(sys._getframe(1))


def caller_loc(depth: int = 2) -> SourceLoc | None:
    """Location of the kernel line that called an ISA function (``depth`` frames up).

    Each call site's location is made once and then found by its instruction offset (no
    line-table walk, no allocation on the hot path)."""
    f = sys._getframe(depth)
    sites = _sites.get(id(f.f_code))
    if sites is not None:
        loc = sites.get(f.f_lasti)
        if loc is not None:
            return loc
    return _locate(f)


def call_site(depth: int = 2) -> SourceLoc | None:
    """:func:`caller_loc`, with the kernel lines that called the function it is in as its
    ``via`` when that function is the kernel's own (a helper the kernel calls): the user
    frames outside it, up to ptopipe's frame that runs the kernel."""
    f = sys._getframe(depth)
    sites = _sites.get(id(f.f_code))            # caller_loc(depth + 1), inline
    loc = sites.get(f.f_lasti) if sites is not None else None
    if loc is None:
        loc = _locate(f)
    known = _internal           # (is_internal, inline: this runs for every ring instruction)
    while f is not None:
        r = known.get(id(f.f_code))
        if not (is_internal(f.f_code) if r is None else r):
            break
        f = f.f_back
    if loc is None or f is None:
        return loc
    b = f.f_back
    if b is None:
        return loc
    r = known.get(id(b.f_code))
    if is_internal(b.f_code) if r is None else r:
        return loc              # a kernel called straight from ptopipe's runner: no user callers
    return _with_callers(loc, f)


def suspended_at(frame) -> SourceLoc | None:
    """:func:`user_loc` of a suspended kernel's innermost ``frame`` (e.g. a core blocked in
    a TPOP), with the kernel lines that called it as its ``via``, as :func:`call_site` gives
    an instruction's."""
    f = frame
    while f is not None and is_internal(f.f_code):
        f = f.f_back
    if f is None:
        return None
    return _with_callers(_locate(f), f)


def _with_callers(loc: SourceLoc, f) -> SourceLoc:
    """``loc``, the line of user frame ``f``, with the user frames that called ``f``'s
    function (up to ptopipe's frame that runs the kernel) as its ``via`` - not a library's
    frame between them (``contextlib``'s of a ``with`` helper): no line of the kernel's."""
    via = []
    f = f.f_back
    while f is not None and not is_internal(f.f_code):
        if not _library_file(f.f_code.co_filename):
            via.append(_locate(f))
        f = f.f_back
    return SourceLoc(*loc[:4], via=tuple(via)) if via else loc


@functools.lru_cache(maxsize=4096)
def _library_file(name: str) -> bool:
    """Is the source file a library's (the standard library, site-packages)?"""
    return os.path.realpath(name).startswith(_LIBRARY_DIRS)


_sites: dict = {}        # id(code object of user code) -> {instruction offset: SourceLoc}


def _locate(f) -> SourceLoc | None:
    code = f.f_code
    if is_internal(code):
        return user_loc(f)
    loc = _new(SourceLoc, (code.co_filename, f.f_lineno, None, code.co_name))
    _sites.setdefault(id(code), {})[f.f_lasti] = loc      # is_internal keeps code alive
    return loc
