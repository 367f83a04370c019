"""Intra-core synchronisation: ``record_event`` / ``wait_event`` / ``set_flag[_dyn]`` /
``wait_flag[_dyn]`` / ``barrier`` / ``barrier_sync`` / ``tsync`` (pipes named directly or as ptoas's sync op
types), event-id arrays, ``pto.section.cube`` / ``.vector``, and the ops that add no order the
simulator lacks (``set_ffts``, ``get_buf`` / ``rls_buf``)."""
from __future__ import annotations

import re

from ... import isa
from ...arch.vocab import SyncPipe
from ..pto_syntax import SYNC_OP_PIPE
from .program import arrow_type, kind_runs_here


def h_eventid_array(ex, fr, s):
    """``pto.declare_eventid_array -> !pto.eventid_array<N>``: N event ids, 0 until set."""
    ty = arrow_type(s) or s.types()
    n = int(re.search(r"<(\d+)>", "".join(t.text for t in ty[-1])).group(1)) if ty else 8
    return [[0] * n]                       # one result: the array


def _array_index(ex, fr, s):
    vs = s.values()
    arr, idx = ex.val(fr, vs[0]), ex.ival(fr, vs[1])
    if not 0 <= idx < len(arr):
        raise ex.err(s, f"{s.name}: index {idx} of an event-id array of {len(arr)}")
    return arr, idx, vs


def h_eventid_get(ex, fr, s):
    arr, idx, _ = _array_index(ex, fr, s)
    return arr[idx]


def h_eventid_set(ex, fr, s):
    arr, idx, vs = _array_index(ex, fr, s)
    arr[idx] = ex.ival(fr, vs[2])


def h_section(ex, fr, s):
    """``pto.section.cube { ... }`` / ``pto.section.vector { ... }``: the region runs on that
    kind of core only (ptoas's ``#if defined(__DAV_CUBE__)`` / ``__DAV_VEC__``)."""
    if kind_runs_here("cube" if s.name.endswith("cube") else "vector", ex.core_name):
        ex.block(fr, s.regions[0][0].stmts)


def h_set_ffts(ex, fr, s):
    """``pto.set_ffts %base``: A2A3's FFTS base address for cross-core flags.  The simulated
    cluster's flags need no address; the operand is read (it must be defined)."""
    for v in s.values():
        ex.val(fr, v)


def h_buffer_token(ex, fr, s):
    """``pto.get_buf`` / ``pto.rls_buf [op type, id]``: A5's buffer tokens between two pipes
    of a core.  The scoreboard already orders every same-core dependency (``sync=auto``), so
    the tokens add no order the run lacks; their operands are checked."""
    text = "".join(t.text for t in s.toks)
    if not _OP_TYPE_RE.search(text) and not _PIPE_RE.search(text):
        raise ex.perr(s.tok, f"{s.name} needs a pipe or sync op type, e.g. [#pto.pipe_event_type<TLOAD>, 0]")


_PIPE_RE = re.compile(r"PIPE_[A-Z0-9]+")


_EVENT_RE = re.compile(r"EVENT_ID(\d+)")


_OP_TYPE_RE = re.compile(r"(?:pipe_event_type|sync_op_type)<(\w+)>")


def h_event(ex, fr, s):
    text = " ".join(t.text for t in s.toks)
    text = _OP_TYPE_RE.sub(lambda m: SYNC_OP_PIPE.get(m.group(1), m.group(0)), text.replace(" ", ""))
    pipes = _PIPE_RE.findall(text)
    src = s.attr("src")
    dst = s.attr("dst")
    if src and dst:
        ends = [_OP_TYPE_RE.sub(lambda m: SYNC_OP_PIPE.get(m.group(1), m.group(0)), "".join(t.text for t in x))
                for x in (src, dst)]
        pipes = [m.group(0) for m in (_PIPE_RE.search(e) for e in ends) if m]
    if s.name == "pto.tsync":       # TSYNC(operands...): waits for their pending work; a
        isa.pipe_barrier(SyncPipe("PIPE_ALL"))   # barrier on every pipe is at least that strong
        return None
    if s.name in ("pto.barrier", "pto.pipe_barrier", "pto.barrier_sync"):
        if not pipes:               # ``pto.barrier_sync[<TVEC>]``: a sync op type
            m = re.search(r"<(\w+)>", text)
            pipes = [SYNC_OP_PIPE.get(m.group(1), "PIPE_ALL")] if m else []
        isa.pipe_barrier(SyncPipe(pipes[0] if pipes else "PIPE_ALL"))
        return None
    if len(pipes) < 2:
        raise ex.perr(s.tok, f"{s.name} needs a source and a destination pipe")
    m = _EVENT_RE.search(text)
    vals = s.values()
    if m:
        eid = int(m.group(1))
    elif vals:
        eid = ex.ival(fr, vals[-1])
        if not 0 <= eid < 8:
            raise ex.err(s, f"{s.name}: event id {eid} ({vals[-1].text}) is not EVENT_ID0..7",
                         "use an event id from 0 to 7")
    else:
        raise ex.perr(s.tok, f"{s.name} needs an event id")
    fn = isa.set_flag if s.name in ("pto.record_event", "pto.set_flag", "pto.set_flag_dyn") else isa.wait_flag
    fn(SyncPipe(pipes[0]), SyncPipe(pipes[1]), eid)
    return None
