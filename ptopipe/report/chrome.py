"""Chrome trace-event JSON of a traced run (opens in Perfetto / chrome://tracing).

One process per core, one thread per pipe (plus an ``issue`` thread showing when the
core's instruction issue was held by a flag or an event), a complete ("X") event per
instruction with its args (tile shape, dtype, ring, slot, tag, push/pop index, and ``loc``:
the kernel's ``file:line`` that issued it - also on each wait), flow
arrows from every TPUSH to the TPOP(s) that consume it and from every TFREE to the TPUSH
whose free-slot wait it satisfies, and a counter track per ring with its slot occupancy.

Time unit: 1 ``ts`` unit (shown as 1 us by the viewers) = 1 simulated cycle.
"""
from __future__ import annotations

import io
import json
from enum import Enum

from ..arch import PipeUnit
from ..errors import PtoPipeError, shown_path, user_frame
from ..sim.flags import Flag
from ..sim.trace import RingArgs
from ._io import atomic_open
from .timeline import Timeline, arg_dict, pipe_name, timeline

ISSUE_TID = 100          # the thread showing issue-clock holds
RING_PID = 100           # the process holding the ring occupancy counters
_ROLE = {"AIC": "Cube", "AIV0": "Vector 0", "AIV1": "Vector 1"}
_RING_OPS = ("TPUSH", "TPOP", "TALLOC", "TFREE")
_CHUNK = 8192            # events per write: bounded memory whatever the run length
# json.dumps(..., separators=(",", ":")), the exact encoding of the events
_dumps = json.JSONEncoder(separators=(",", ":")).encode


def _pid(core: int) -> int:
    return core + 1


def _tid(pipe: int) -> int:
    return int(pipe) + 1


def _mid(ins) -> float:
    return ins.start + (ins.end - ins.start) / 2


def chrome_trace(run_or_cluster, tl: Timeline | None = None) -> dict:
    """The trace as a dict ``{"traceEvents": [...], ...}`` (json-serialisable).  Holds the
    whole trace in memory: for a long run write it with :func:`write_chrome_trace`."""
    buf = io.StringIO()
    _write(buf, run_or_cluster, tl)
    return json.loads(buf.getvalue())


def write_chrome_trace(run_or_cluster, path: str, tl: Timeline | None = None) -> str:
    """Write the Chrome trace JSON of a traced run to ``path`` (atomically), streamed: the
    events are encoded and written a chunk at a time, never held all at once."""
    with atomic_open(path) as f:
        _write(f, run_or_cluster, tl)
    return path


def _write(f, run_or_cluster, tl: Timeline | None) -> None:
    cluster = getattr(run_or_cluster, "cluster", run_or_cluster)
    tl = tl or timeline(cluster)
    f.write('{"traceEvents":[')
    buf, first = [], True
    for ev in _events(tl):
        buf.append(ev)
        if len(buf) >= _CHUNK:
            f.write(("" if first else ",") + ",".join(buf))
            buf.clear()
            first = False
    err = getattr(cluster, "stopped_by", None)
    if err is not None:                 # a failed run: where it stopped, as a global instant
        buf.append(_dumps({"ph": "i", "s": "g", "name": f"stopped: {type(err).__name__}", "ts": tl.cycles,
                           "pid": 0, "tid": 0, "args": _stopped(err)}))
    if buf:
        f.write(("" if first else ",") + ",".join(buf))
    other = {"generator": "ptopipe", "platform": cluster.platform.name, "cycles": tl.cycles,
             "time_unit": "1 ts = 1 cycle"}
    blocks = cluster.context.blocks if getattr(cluster, "context", None) is not None else 1
    if blocks > 1:                      # (the trace is one block's cluster: which one)
        other["block"], other["blocks"] = cluster.block, blocks
    if err is not None:
        other["stopped_by"] = {"error": type(err).__name__, **_stopped(err)}
    f.write('],"displayTimeUnit":"ns","otherData":' + _dumps(other) + "}")


def _stopped(err) -> dict:
    """What the error that ended a traced run says and where: a PtoPipeError's own, a kernel's
    own exception's message and the kernel line that raised it."""
    if isinstance(err, PtoPipeError):
        return {"what": err.what, "where": err.where}
    f = user_frame(err)
    return {"what": str(err), "where": f"{shown_path(f.filename)}:{f.lineno}" if f else None}


def _events(tl: Timeline):
    """Every event of the trace as its JSON text, in a fixed order: metadata, instructions,
    issue holds, flows, ring counters.  The frequent events are formatted from cached
    pieces (the constant prefix per core/pipe/mnemonic, the args JSON per args record)
    and give exactly the text ``json.dumps`` gives for the same dict."""
    used = {}
    for c, p in {(i.core, int(i.pipe)) for i in tl.instrs}:
        used.setdefault(c, set()).add(p)
    for h in tl.holds:
        used.setdefault(h.core, set())
    for c in sorted(used):
        yield from map(_dumps, _core_meta(tl.core_names[c], c, sorted(used[c])))
    # the k-th TPUSH / TPOP / TALLOC / (real) TFREE of a core on a ring: "index" k
    rings = {r.name for r in tl.rings}
    ordinal = {}
    head, argj, locj = {}, {}, {}
    for ins in tl.instrs:
        core, pipe, name, start, end, args, loc = ins
        key = (core, pipe, name)
        pre = head.get(key)
        if pre is None:
            pre = head[key] = (f'{{"ph":"X","name":{_dumps(name)},"cat":{_dumps(pipe_name(pipe))},"ts":',
                               f',"pid":{_pid(core)},"tid":{_tid(pipe)},"args":')
        akey = (type(args), args)     # by type too: records of equal values are equal tuples
        try:
            aj = argj.get(akey)
        except TypeError:             # an unhashable value inside: not cached
            aj = akey = None
        if aj is None:
            aj = _dumps(arg_dict(args))
            if akey is not None:
                argj[akey] = aj
        if type(args) is RingArgs and name in _RING_OPS and args.channel in rings \
                and (name != "TFREE" or args.tag is not None):
            okey = (args.channel, core, name)
            k = ordinal.get(okey, 0)
            ordinal[okey] = k + 1
            aj = f'{aj[:-1]},"index":{k}}}'
        if loc is not None:
            aj = _with_loc(aj, loc, locj)
        yield f"{pre[0]}{start},\"dur\":{end - start}{pre[1]}{aj}}}"
    hargs = {}
    for h in tl.holds:
        key = (h.kind, id(h.what))
        aj = hargs.get(key)
        if aj is None:
            aj = hargs[key] = _dumps(_hold_args(h.kind, h.what))
        if h.loc is not None:
            aj = _with_loc(aj, h.loc, locj)
        yield (f'{{"ph":"X","name":{_dumps("wait " + h.kind)},"cat":"wait","ts":{h.start},'
               f'"dur":{h.end - h.start},"pid":{_pid(h.core)},"tid":{ISSUE_TID},"args":{aj}}}')
    fid = 0
    for kind, pairs in (("ready", tl.push_pop), ("free", tl.free_push)):
        name = "TPUSH->TPOP" if kind == "ready" else "TFREE->TPUSH"
        tail = f'"name":"{name}","cat":"ring.{kind}","ts":'
        for a, b in pairs:
            fid += 1
            # anchored mid-slice: back-to-back slices share their boundary timestamps, and a
            # flow event binds to the slice that encloses its ts
            yield f'{{"ph":"s","id":{fid},{tail}{_mid(a)!r},"pid":{_pid(a.core)},"tid":{_tid(a.pipe)}}}'
            yield (f'{{"ph":"f","bp":"e","id":{fid},{tail}{_mid(b)!r},"pid":{_pid(b.core)},'
                   f'"tid":{_tid(b.pipe)}}}')
    if tl.rings:
        yield _dumps({"ph": "M", "name": "process_name", "pid": RING_PID, "tid": 0,
                      "args": {"name": "Rings (slots in use)"}})
        yield _dumps({"ph": "M", "name": "process_sort_index", "pid": RING_PID, "tid": 0,
                      "args": {"sort_index": 99}})
    for r in tl.rings:
        pre = f'{{"ph":"C","name":{_dumps(r.name + " occupancy")},"ts":'
        for t, n in r.occupancy:
            yield f'{pre}{t},"pid":{RING_PID},"tid":0,"args":{{"slots":{n}}}}}'


def _with_loc(aj: str, loc, cache: dict) -> str:
    """Args JSON ``aj`` (an object) with the kernel line ``"loc": "file:line"`` added (each
    location encoded once)."""
    lj = cache.get(loc)
    if lj is None:
        lj = cache[loc] = ',"loc":' + _dumps(str(loc)) + "}"
    return aj[:-1] + lj if aj != "{}" else "{" + lj[1:]


def _core_meta(name: str, c: int, pipes: list) -> list:
    ev = [{"ph": "M", "name": "process_name", "pid": _pid(c), "tid": 0,
           "args": {"name": f"{name} ({_ROLE.get(name, 'core')})"}},
          {"ph": "M", "name": "process_sort_index", "pid": _pid(c), "tid": 0,
           "args": {"sort_index": c}}]
    for p in pipes:
        ev.append({"ph": "M", "name": "thread_name", "pid": _pid(c), "tid": _tid(p),
                   "args": {"name": PipeUnit(p).name}})
        ev.append({"ph": "M", "name": "thread_sort_index", "pid": _pid(c), "tid": _tid(p),
                   "args": {"sort_index": p}})
    ev.append({"ph": "M", "name": "thread_name", "pid": _pid(c), "tid": ISSUE_TID,
               "args": {"name": "issue (waits)"}})
    ev.append({"ph": "M", "name": "thread_sort_index", "pid": _pid(c), "tid": ISSUE_TID,
               "args": {"sort_index": -1}})
    return ev


def _hold_args(kind: str, what) -> dict:
    """Args of a hold: what it waited on - a flag (and the ring owning it), the vector-pipe
    barrier of a ``TSYNC(Op.X)`` (the op's name), or an event token (its repr)."""
    args = {"kind": kind}
    if type(what) is Flag:
        args["on"] = what.name
        if what.owner is not None:
            args["channel"] = what.owner.name
    elif isinstance(what, Enum):
        args["on"] = what.name
    elif what is not None:
        args["on"] = repr(what)
    return args
