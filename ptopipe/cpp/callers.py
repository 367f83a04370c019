"""The kernel lines that called the function holding a failing C++ call.

An instruction's call site is ``__builtin_FILE()`` / ``__builtin_LINE()`` at the call (the
headers' ``PTOPIPE_HERE``): a call inside a kernel's own helper function names the helper's
line only.  When the simulator raises an error, the headers keep the native return addresses
of the failing call (``ptopipe::call`` walks them out to the kernel's entry frame,
``ptopipe::run_kernel``, never into the core's greenlet beyond it; read through the library's
``ptopipe_abort_frames``); here they become source lines with the line tables the build keeps
(``-g1``, ``build.FLAGS``) - ``addr2line -i`` also names the lines of inlined calls - and the
error's place reads ``helper.cpp:9 (called from kernel.cpp:22)``, as the Python front end's
does.  Only on an error: one ``addr2line`` run, nothing per instruction.  Without addr2line,
or for frames without line tables, the error keeps the call site alone.

A kernel that crashes names the code it crashed in the same way (:func:`fault_lines`): its
process, gone by then, wrote where each kernel library was loaded (:func:`library_ranges`)
and the signal handler the address of the faulting code.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess

from ..sim.location import SourceLoc
from .build import include_dir

_MAX = 32


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _dladdr():
    try:
        fn = ctypes.CDLL(None).dladdr
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
    fn.restype = ctypes.c_int
    return fn


def abort_frames(frames_fn) -> list:
    """The return addresses the library kept of its last failing call (innermost first)."""
    buf = (ctypes.c_void_p * _MAX)()
    n = frames_fn(buf, _MAX)
    return [a for a in buf[:n] if a]


def kernel_lines(addresses, libs) -> list:
    """The source lines of ``addresses`` inside the kernel libraries ``libs`` (paths), innermost
    first, inlined calls included, ptopipe's headers left out: the failing call's line, then the
    lines that called the function holding it."""
    dladdr = _dladdr()
    if dladdr is None:
        return []
    real = {os.path.realpath(p) for p in libs}
    order = []
    for k, a in enumerate(addresses):
        info = _DlInfo()
        if not dladdr(a, ctypes.byref(info)) or not info.dli_fname:
            continue
        path = os.path.realpath(info.dli_fname.decode(errors="replace"))
        if path not in real:
            continue
        # a return address points after its call: the call's line is the byte before (not for
        # frame 0, the walk's own caller: ptopipe::call)
        order.append((path, a - info.dli_fbase - (1 if k else 0)))
    return _lines(order)


def library_ranges(paths) -> list:
    """``[(start, end, path)]``: where each of the libraries ``paths`` is loaded in this process
    (start: its load base), from ``/proc/self/maps`` (empty where there is none)."""
    real = {os.path.realpath(p): p for p in paths}
    found: dict = {}
    try:
        with open("/proc/self/maps") as f:
            rows = f.read().splitlines()
    except OSError:
        return []
    for row in rows:
        parts = row.split(None, 5)
        if len(parts) < 6 or parts[5] not in real:
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        base = lo - int(parts[2], 16)
        cur = found.get(parts[5])
        found[parts[5]] = (min(base, cur[0]), max(hi, cur[1])) if cur else (base, hi)
    return [(lo, hi, path) for path, (lo, hi) in found.items()]


def fault_lines(pc: int, ranges) -> list:
    """The kernel source lines of the faulting code at ``pc`` in a process whose kernel
    libraries were loaded at ``ranges`` (:func:`library_ranges`): the line, then the lines of
    the calls inlined into the function holding it (empty: not in a kernel library)."""
    for lo, hi, path in ranges:
        if lo <= pc < hi:
            return _lines([(path, pc - lo)])
    return []


def _lines(order) -> list:
    """The kernel source lines of ``order`` ([(library path, offset in it)]) by ``addr2line``."""
    tool = shutil.which("addr2line")
    if tool is None or not order:
        return []
    by_lib: dict = {}
    for path, off in order:
        by_lib.setdefault(path, []).append(off)
    lines = {}
    for path, offs in by_lib.items():
        try:
            r = subprocess.run([tool, "-e", path, "-i", "-a", *(hex(o) for o in offs)], capture_output=True,
                               text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return []
        cur = None
        for ln in r.stdout.splitlines():
            if ln.startswith("0x"):
                cur = lines.setdefault((path, int(ln, 16)), [])
            elif cur is not None:
                cur.append(ln)
    inc = os.path.join(os.path.realpath(include_dir()), "")
    out = []
    for key in order:
        for text in lines.get(key, ()):
            file, _, rest = text.rpartition(":")
            line = rest.split(" ")[0]
            if not file or file.startswith("??") or not line.isdigit() or int(line) == 0:
                continue
            if os.path.realpath(file).startswith(inc) or not os.path.exists(file):
                continue
            loc = SourceLoc(file, int(line), None, None)
            if not out or out[-1] != loc:
                out.append(loc)
    return out


def with_callers(err, addresses, libs) -> None:
    """Give error ``err`` - reported at a call site - the kernel lines that called it, when its
    place is the innermost line of ``addresses``."""
    where = getattr(err, "where", None)
    if not where or not addresses:
        return
    chain = kernel_lines(addresses, libs)
    for k, loc in enumerate(chain):
        if str(loc) == where:
            via = tuple(chain[k + 1:])
            if via:
                err.where = str(SourceLoc(loc.file, loc.line, None, None, via))
                err.args = (err.render(),)
            return
