"""The deferred data plane's semantics: how queued numpy work is applied, and the error
raised when applying it fails.

Instructions check their operands (locations, shapes, dtype rules, scalar values) when
they are issued and queue their numpy work; :meth:`Cluster.sync` applies the queue.  The
work is applied under one fixed floating-point error state, ``np.errstate(all="ignore")``,
whichever greenlet applies it (numpy's error state is per greenlet context, so a run must
not depend on it): float overflow gives inf and invalid operations NaN, silently, as on
the device.  Anything that
still fails while applying becomes a :class:`KernelError` naming the work, the core that
queued it and that core's source line (at or after the instruction: the location is only
looked up on error, so the hot path records nothing per operation; with
``PTOPIPE_SYNC_EVERY=1`` each instruction's work is applied as it is issued, and the line is
exact).
"""
from __future__ import annotations

from operator import setitem

import numpy as np

from ..arch.catalogue import kernel_op
from ..errors import KernelError
from .location import SourceLoc, user_loc

def batch_out(entry: tuple) -> int | None:
    """Which argument of a queued ``(fn, *args)`` it writes, when it runs unchanged on
    operands with one more, leading axis (a batch of repeated blocks: :mod:`.periodic`);
    None when it may not.  Kernels say so with a ``batch_out`` attribute (an index of their
    arguments); ``d[...] = v`` and ``np.copyto(d, v)`` write their first."""
    fn = entry[0]
    if fn is setitem:
        return 0 if entry[2] is Ellipsis else None
    if fn is np.copyto:
        return 0
    k = getattr(fn, "batch_out", None)
    return None if k is None else k % (len(entry) - 1)


def batch_copy(entry: tuple) -> tuple[int, int] | None:
    """Which arguments of a queued ``(fn, *args)`` are its destination and its source, when
    it is a plain copy: ``d[...] = s`` or ``np.copyto(d, s)`` (any casting; a kernel says so
    with a ``batch_copy`` attribute) between arrays of one dtype and one shape - the bytes of
    ``d`` are then those of ``s``.  None for anything else (a cast, a broadcast, a mask)."""
    fn = entry[0]
    if fn is setitem:
        at = (0, 2) if len(entry) == 4 and entry[2] is Ellipsis else None
    elif fn is np.copyto:
        at = (0, 1) if len(entry) == 3 or (len(entry) == 4 and entry[3].__class__ is str) else None
    else:
        at = getattr(fn, "batch_copy", None)
    if at is None:
        return None
    d, s = entry[1 + at[0]], entry[1 + at[1]]
    if d.__class__ is not np.ndarray or s.__class__ is not np.ndarray or d.dtype != s.dtype or d.shape != s.shape:
        return None
    return at


def describe_work(entry: tuple) -> str:
    """What a queued ``(fn, *args)`` does, for an error message."""
    fn = entry[0]
    for a in entry:                  # the queued function, or the op kernel it applies
        ops = kernel_op(a)
        if ops is not None:
            return f"the numpy work of {ops}"
    for a in entry[1:]:
        if isinstance(a, np.ufunc):
            return f"the numpy work of an element-wise op (np.{a.__name__})"
    name = getattr(fn, "__name__", repr(fn))
    return f"the numpy work {name}(...)"


def issuer_where(core) -> str | None:
    """Where ``core`` is now - the failed instruction is this one or one before it - or,
    for a finished hand-written kernel, where its function is defined."""
    if core is None:
        return None
    if core.loc_override is not None:            # the DSL interpreter's current statement
        return str(core.loc_override)
    g = core.glet
    if g is not None and g.dead:
        code = getattr(getattr(core, "kernel", None), "__code__", None)
        return f"{SourceLoc(code.co_filename, code.co_firstlineno)}" if code else None
    if g is not None and g.gr_frame is not None:  # suspended in a WAIT
        loc = user_loc(g.gr_frame)
    else:                                        # the running core: exactly the instruction
        loc = core.where()
    return str(loc) if loc is not None else None


def data_error(ops: list, k: int, marks: list, exc: BaseException) -> KernelError:
    """The located error for queued operation ``ops[k]`` raising ``exc``; ``marks`` are the
    (queue position, core) starts of each core's run of operations in ``ops``."""
    core = None
    for pos, c in marks:
        if pos > k:
            break
        core = c
    what = describe_work(ops[k])
    who = f"queued by {core.name} " if core is not None else ""
    return KernelError(
        f"{what} {who}failed when the simulator applied it: {type(exc).__name__}: {exc}",
        where=issuer_where(core),
        details="instructions queue their numpy work and the simulator applies it in batches, "
                "so the failing instruction is at or before this line of that core (set "
                "PTOPIPE_SYNC_EVERY=1 to apply each instruction's work when it is issued: the "
                "error then names its exact line)",
        fix=getattr(exc, "fix", None) or (
            "check the operands' dtypes and values of the instruction; this should have been "
            "caught when it was issued - please report it"))
