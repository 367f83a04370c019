"""Intra-core event flags: pto-isa's ``set_flag`` / ``wait_flag`` / ``pipe_barrier``.

``set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)`` fires once every earlier MTE2 instruction of the
core has completed; ``wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)`` holds the V pipe until such
a set has fired, and consumes it; ``pipe_barrier(PIPE_ALL)`` orders every later instruction
after every earlier one.  A wait with no pending set is reported as a hang at the wait, a
set never consumed as a leak at kernel end; a set or wait in a function the kernel calls is
located with the kernel lines that called it (``h.py:9 (called from k.py:20)``).  In ``run(..., sync="manual")`` these are the
only order between the pipes of a core (see :mod:`ptopipe.sim.pipesync`, docs/events.md).
"""
from __future__ import annotations

from ..arch.vocab import (EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5,
                          EVENT_ID6, EVENT_ID7, PIPE_ALL, PIPE_FIX, PIPE_M, PIPE_MTE1, PIPE_MTE2,
                          PIPE_MTE3, PIPE_S, PIPE_V, EventID, SyncMode, SyncPipe)
from ..sim.location import call_site
from ..sim.pipesync import check_event, check_pipe, psync
from .context import kernel_core


def set_flag(src: SyncPipe, dst: SyncPipe, event_id: int) -> None:
    """SET_FLAG(src, dst, event_id): signal ``dst`` once ``src`` finished what it has so far."""
    core = kernel_core()
    loc = core.loc_override or call_site(2)
    if core.ff is not None:                     # fast-forward (sim.periodic)
        return core.ff.call(core, _set, (src, dst, event_id, loc), None)
    _set(src, dst, event_id, loc)


def wait_flag(src: SyncPipe, dst: SyncPipe, event_id: int) -> None:
    """WAIT_FLAG(src, dst, event_id): hold ``dst`` until the matching set has fired."""
    core = kernel_core()
    loc = core.loc_override or call_site(2)
    if core.ff is not None:                     # fast-forward (sim.periodic)
        return core.ff.call(core, _wait, (src, dst, event_id, loc), None)
    _wait(src, dst, event_id, loc)


def pipe_barrier(pipe: SyncPipe) -> None:
    """PIPE_BARRIER(pipe): PIPE_ALL orders everything after everything issued before."""
    core = kernel_core()
    if core.ff is not None:                     # fast-forward (sim.periodic)
        return core.ff.call(core, _barrier, (pipe,), None)
    _barrier(pipe)


# the calls made (``loc``: the kernel's line, found before a fast-forward engine makes them)
def _set(src, dst, event_id, loc) -> None:
    core = kernel_core()
    s, d = check_pipe(core, src, "set_flag src"), check_pipe(core, dst, "set_flag dst")
    psync(core).set(s, d, check_event(core, event_id), loc)


def _wait(src, dst, event_id, loc) -> None:
    core = kernel_core()
    s, d = check_pipe(core, src, "wait_flag src"), check_pipe(core, dst, "wait_flag dst")
    psync(core).wait(s, d, check_event(core, event_id), loc)


def _barrier(pipe) -> None:
    core = kernel_core()
    psync(core).barrier(check_pipe(core, pipe, "pipe_barrier pipe", allow_all=True))


__all__ = ["EVENT_ID0", "EVENT_ID1", "EVENT_ID2", "EVENT_ID3", "EVENT_ID4", "EVENT_ID5",
           "EVENT_ID6", "EVENT_ID7", "EventID", "PIPE_ALL", "PIPE_FIX", "PIPE_M", "PIPE_MTE1",
           "PIPE_MTE2", "PIPE_MTE3", "PIPE_S", "PIPE_V", "SyncMode", "SyncPipe", "pipe_barrier",
           "set_flag", "wait_flag"]
