"""The DSL source line each line of written pto-isa C++ comes from.

The C++ writer ends every statement it writes for an op with ``// dsl: FILE:LINE:COL``, the
op's DSL location with the file's absolute path (:func:`mark`); a run of that C++ reports
errors at the C++ line, and :func:`annotate` adds the DSL line the C++ line was written from
(read back by :func:`origin_of`, the path shown as every location is:
:class:`ptopipe.sim.location.SourceLoc`), so one error names both.  A comment, not ``#line``: the C++ line stays
the one the compiler, the debugger and the simulator's reports name.
"""
from __future__ import annotations

import linecache
import os
import re

from ..sim.location import SourceLoc

PREFIX = "// dsl: "
_ORIGIN = re.compile(r"//\s*dsl:\s*(.+?):(\d+):(\d+)\s*$")
_ORIGIN_TAIL = re.compile(r"  //\s*dsl:\s*.+?:\d+:\d+[ \t]*$", re.M)
_CPP = r"\.(?:cpp|cc|cxx|hpp|h)"
_WHERE = re.compile(rf"^(.*{_CPP}):(\d+)$")
_CPP_LOC = re.compile(rf"(\S+{_CPP}):(\d+)\b")


def mark(lines: list, loc) -> list:
    """``lines`` with the DSL location ``loc`` as a trailing comment on each statement (not
    on braces, comments or lines already marked); unchanged when ``loc`` is None."""
    if not loc:
        return lines
    tail = f"  {PREFIX}{os.path.abspath(loc.file)}:{loc.line}:{loc.col}"
    out = []
    for ln in lines:
        s = ln.strip()
        if not s or s in ("{", "}") or s.startswith(("//", "} else")) or PREFIX in ln:
            out.append(ln)
        else:
            out.append(ln + tail)
    return out


def origin_of(path: str, line: int) -> str | None:
    """The DSL location recorded on line ``line`` of C++ file ``path``, or None."""
    m = _ORIGIN.search(linecache.getline(path, line))
    return str(SourceLoc(m.group(1), int(m.group(2)), int(m.group(3)))) if m else None


def where_origin(where: str | None) -> str | None:
    """The DSL location of an error's ``where`` when it is ``FILE.cpp:LINE`` of written C++."""
    m = _WHERE.match(where or "")
    if m is None:
        return None
    linecache.checkcache(m.group(1))
    return origin_of(m.group(1), int(m.group(2)))


def annotate(err) -> None:
    """Add to a ptopipe error's details the DSL line of its ``where``, when that is a line of
    written C++ (also as ``err.dsl_where``), and the DSL lines of the other lines of written
    C++ its text names (the other access of a race, a TPOP a TFREE does not match ...); an
    error naming no such line is left as it is.  Once per error."""
    if getattr(err, "dsl_annotated", False) or not hasattr(err, "add_detail"):
        return
    err.dsl_annotated = True
    where = getattr(err, "where", None)
    dsl = where_origin(where)
    others = {}
    for m in _CPP_LOC.finditer(str(err)):
        at = f"{m.group(1)}:{m.group(2)}"
        if at != where and at not in others:
            origin = where_origin(at)
            if origin is not None:
                others[at] = origin
    if dsl is not None:
        err.dsl_where = dsl
        err.add_detail(f"written from the DSL line {dsl}")
    if others:
        err.add_detail("the other C++ lines named, written from: "
                       + ", ".join(f"{at} <- {origin}" for at, origin in others.items()))


def strip_origins(text: str) -> str:
    """``text`` (written C++) without its DSL-line comments: the C++ alone, e.g. to compare
    the C++ of one program written from two source files."""
    return _ORIGIN_TAIL.sub("", text)
