"""Chrome trace-event JSON of a traced run (opens in Perfetto / chrome://tracing).

One process per core, one thread per pipe (plus an ``issue`` thread showing when the
core's instruction issue was held by a flag or an event), a complete ("X") event per
instruction with its args (tile shape, dtype, ring, slot, tag, push/pop index), flow
arrows from every TPUSH to the TPOP(s) that consume it and from every TFREE to the TPUSH
whose free-slot wait it satisfies, and a counter track per ring with its slot occupancy.

Time unit: 1 ``ts`` unit (shown as 1 us by the viewers) = 1 simulated cycle.
"""
from __future__ import annotations

import json

from ..arch import PipeUnit
from ._io import write_atomic
from .timeline import Timeline, timeline

ISSUE_TID = 100          # the thread showing issue-clock holds
RING_PID = 100           # the process holding the ring occupancy counters
_ROLE = {"AIC": "Cube", "AIV0": "Vector 0", "AIV1": "Vector 1"}


def _pid(core: int) -> int:
    return core + 1


def _tid(pipe: int) -> int:
    return pipe + 1


def _mid(ins) -> float:
    return ins.start + (ins.end - ins.start) / 2


def chrome_trace(run_or_cluster, tl: Timeline | None = None) -> dict:
    """The trace as a dict ``{"traceEvents": [...], ...}`` (json-serialisable)."""
    cluster = getattr(run_or_cluster, "cluster", run_or_cluster)
    tl = tl or timeline(cluster)
    ev = []
    used = {}
    for ins in tl.instrs:
        used.setdefault(ins.core, set()).add(ins.pipe)
    for c, _k, _s, _e, _w in tl.holds:
        used.setdefault(c, set())
    for c in sorted(used):
        name = tl.core_names[c]
        ev.append({"ph": "M", "name": "process_name", "pid": _pid(c), "tid": 0,
                   "args": {"name": f"{name} ({_ROLE.get(name, 'core')})"}})
        ev.append({"ph": "M", "name": "process_sort_index", "pid": _pid(c), "tid": 0,
                   "args": {"sort_index": c}})
        for p in sorted(used[c]):
            ev.append({"ph": "M", "name": "thread_name", "pid": _pid(c), "tid": _tid(p),
                       "args": {"name": PipeUnit(p).name}})
            ev.append({"ph": "M", "name": "thread_sort_index", "pid": _pid(c), "tid": _tid(p),
                       "args": {"sort_index": p}})
        ev.append({"ph": "M", "name": "thread_name", "pid": _pid(c), "tid": ISSUE_TID,
                   "args": {"name": "issue (waits)"}})
        ev.append({"ph": "M", "name": "thread_sort_index", "pid": _pid(c), "tid": ISSUE_TID,
                   "args": {"sort_index": -1}})
    # ordinal of each ring instruction (push / pop index) for the args
    index = {}
    for r in tl.rings:
        for group in (r.pushes, r.pops, r.frees, r.allocs):
            for lst in group.values():
                for k, ins in enumerate(lst):
                    index[ins.id] = k
    for ins in tl.instrs:
        args = dict(ins.args)
        if ins.id in index:
            args["index"] = index[ins.id]
        ev.append({"ph": "X", "name": ins.name, "cat": ins.pipe_name, "ts": ins.start,
                   "dur": ins.end - ins.start, "pid": _pid(ins.core), "tid": _tid(ins.pipe),
                   "args": args})
    for c, kind, s, e, what in tl.holds:
        args = {"kind": kind}
        if what is not None:
            args["on"] = getattr(what, "name", None) or repr(what)
            owner = getattr(what, "owner", None)
            if owner is not None:
                args["channel"] = owner.name
        ev.append({"ph": "X", "name": f"wait {kind}", "cat": "wait", "ts": s, "dur": e - s,
                   "pid": _pid(c), "tid": ISSUE_TID, "args": args})
    fid = 0
    for kind, pairs in (("ready", tl.push_pop), ("free", tl.free_push)):
        for a, b in pairs:
            fid += 1
            name = "TPUSH->TPOP" if kind == "ready" else "TFREE->TPUSH"
            # anchored mid-slice: back-to-back slices share their boundary timestamps, and a
            # flow event binds to the slice that encloses its ts
            ev.append({"ph": "s", "id": fid, "name": name, "cat": f"ring.{kind}", "ts": _mid(a),
                       "pid": _pid(a.core), "tid": _tid(a.pipe)})
            ev.append({"ph": "f", "bp": "e", "id": fid, "name": name, "cat": f"ring.{kind}",
                       "ts": _mid(b), "pid": _pid(b.core), "tid": _tid(b.pipe)})
    if tl.rings:
        ev.append({"ph": "M", "name": "process_name", "pid": RING_PID, "tid": 0,
                   "args": {"name": "Rings (slots in use)"}})
        ev.append({"ph": "M", "name": "process_sort_index", "pid": RING_PID, "tid": 0,
                   "args": {"sort_index": 99}})
    for r in tl.rings:
        for t, n in r.occupancy:
            ev.append({"ph": "C", "name": f"{r.name} occupancy", "ts": t, "pid": RING_PID,
                       "tid": 0, "args": {"slots": n}})
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"generator": "ptopipe", "platform": cluster.platform.name,
                          "cycles": tl.cycles, "time_unit": "1 ts = 1 cycle"}}


def write_chrome_trace(run_or_cluster, path: str) -> str:
    """Write the Chrome trace JSON of a traced run to ``path`` (atomically)."""
    return write_atomic(path, json.dumps(chrome_trace(run_or_cluster), separators=(",", ":")))
