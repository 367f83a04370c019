"""The timeline of a traced run, in one place for the profile, the Chrome trace and the
swimlane: instructions per core and pipe, issue-clock holds, cross-core signals, the
TPUSH -> TPOP and TFREE -> TPUSH pairings and each ring's slot occupancy over time.

Needs a run with ``trace=True`` (``ptopipe.run(..., trace=True)``).  Pairing is by order:
the k-th TPUSH of a producer on a ring is popped by the k-th TPOP of each consumer, and
(where every push waits for its own free, seed 003) the k-th TFREE of a consumer releases
the slot the (k + SlotNum)-th TPUSH waits for.  Instruction order per core is program
order, so this is exact.  What a free signal means (start-up credits, slots released per
SET) is read from the channel's protocol model, never re-derived here.
"""
from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass, field

from ..arch import PipeUnit
from ..arch.vocab import C2V
from ..errors import ConfigError
from ..sim.trace import Instr, MatmulArgs, RingArgs, TileArgs  # noqa: F401 (Instr: re-exported)

_PIPE_NAMES = {int(p): p.name for p in PipeUnit}


@dataclass
class Ring:
    """One ring (channel) with its pairings and slot occupancy."""
    name: str
    way: str
    slot_num: int
    producers: list                   # core indices
    consumers: list
    # from the channel's protocol model (ch.model):
    startup_credits: int = 0          # free SETs per link posted at bind (not releases)
    slots_per_free: int = 1           # slots one free SET releases (SyncPeriod, FiFoSyncT)
    paired_frees: bool = False        # TFREE k releases the slot push k + SlotNum waits for
    lanes: int = 1                    # AIV peers: each holds its own copy / part of a slot
    pushes: dict = field(default_factory=dict)    # producer -> [Instr] (TPUSH, in order)
    pops: dict = field(default_factory=dict)      # consumer -> [Instr]
    frees: dict = field(default_factory=dict)     # consumer -> [Instr] (real TFREEs)
    allocs: dict = field(default_factory=dict)    # producer -> [Instr] (TALLOC)
    releases: dict = field(default_factory=dict)  # (consumer, producer) -> [set time]
    occupancy: list = field(default_factory=list)  # [(cycle, slots in use)], step function
    peak: int = 0


@dataclass
class Timeline:
    cycles: int
    core_names: list                  # index -> name
    instrs: list                      # [sim.trace.Instr], the cluster's trace itself
    holds: list                       # [sim.trace.Hold]
    rings: list                       # [Ring]
    push_pop: list                    # [(push Instr, pop Instr)]
    free_push: list                   # [(free Instr, push Instr)]


def _ring_args(a: RingArgs) -> dict:
    out = {"channel": a.channel}
    if a.tag is not None:
        out["slot"] = a.tag
        out["tag"] = a.tag
    if a.shape is not None:
        out["shape"] = _shape(a.shape)
    if a.kind is not None:
        out["kind"] = a.kind
    return out


def _shape(shape) -> str:
    return "x".join(str(d) for d in shape)


_ARGS = {
    type(None): lambda a: {},
    RingArgs: _ring_args,
    TileArgs: lambda a: {"shape": _shape(a.shape), "dtype": getattr(a.dtype, "name", str(a.dtype))},
    MatmulArgs: lambda a: {"M": a.m, "K": a.k, "N": a.n, "shape": f"{a.m}x{a.k} @ {a.k}x{a.n}"},
}


def arg_dict(args) -> dict:
    """The readable args of a traced instruction (its ``Instr.args`` record) as a dict."""
    fn = _ARGS.get(type(args))
    return fn(args) if fn is not None else {"args": repr(args)}


def pipe_name(pipe: int) -> str:
    return _PIPE_NAMES.get(pipe, str(pipe))


def timeline(cluster) -> Timeline:
    """The timeline of a finished traced run (a :class:`~ptopipe.sim.Cluster`).  Built once
    per run and shared by the trace, the report and the profile of that run (rebuilt if
    the run recorded more since); kept in the cluster's ``state``, so it lives as long as the run."""
    if cluster.trace is None:
        return _build(cluster)              # raises the ConfigError
    sizes = (len(cluster.trace), len(cluster.waits or ()), len(cluster.signals or ()))
    hit = cluster.state.timeline
    if hit is None or hit[0] != sizes:
        hit = cluster.state.timeline = (sizes, _build(cluster))
    return hit[1]


def _build(cluster) -> Timeline:
    if cluster.trace is None:
        raise ConfigError("this run was not traced, so it has no timeline",
                          fix="run with trace=True (ptopipe.run(..., trace=True))")
    instrs = cluster.trace
    names = [c.name for c in cluster.cores]
    rings = {}
    for ch in cluster.state.channels.values():
        aic = cluster.aic.index
        aivs = [cluster.aiv(p).index for p in ch.peers]
        prod, cons = ([aic], aivs) if ch.way == C2V else (aivs, [aic])
        m = ch.model
        rings[ch.name] = Ring(ch.name, ch.way, ch.slot_num, prod, cons,
                              startup_credits=ch.startup_credits,
                              slots_per_free=m.slots_per_free(ch), paired_frees=ch.wait_every,
                              lanes=len(ch.peers))
    for ins in instrs:
        a = ins.args
        if type(a) is not RingArgs:
            continue
        r = rings.get(a.channel)
        if r is None:
            continue
        if ins.name == "TPUSH":
            r.pushes.setdefault(ins.core, []).append(ins)
        elif ins.name == "TPOP":
            r.pops.setdefault(ins.core, []).append(ins)
        elif ins.name == "TALLOC":
            r.allocs.setdefault(ins.core, []).append(ins)
        elif ins.name == "TFREE" and a.tag is not None:     # not a no-op TFREE
            r.frees.setdefault(ins.core, []).append(ins)
    # free signals (SETs on a ring's free flags), per (consumer, producer) link, in order
    by_flag_owner = {id(ch): ch.name for ch in cluster.state.channels.values()}
    for sig in cluster.signals or ():
        flag = sig.flag
        if flag.signal != "free" or flag.owner is None:
            continue
        r = rings.get(by_flag_owner.get(id(flag.owner)))
        if r is not None:
            r.releases.setdefault((sig.sender, flag.receiver.index), []).append(sig.at)
    cycles = cluster.cycles
    push_pop, free_push = [], []
    for r in rings.values():
        for p, pushes in r.pushes.items():
            for c in r.consumers:
                pops = r.pops.get(c, [])
                push_pop.extend(zip(pushes, pops))
            if r.paired_frees:      # the slot freed by TFREE k is the one push k + SlotNum waits for
                acq = r.allocs.get(p) or pushes
                for c in r.consumers:
                    free_push.extend(zip(r.frees.get(c, []), acq[r.slot_num:]))
        _occupancy(r, cycles)
    holds = cluster.waits or []
    return Timeline(cycles, names, instrs, holds, list(rings.values()), push_pop, free_push)


def _release_times(r: Ring, producer: int, consumer: int) -> list:
    """Cycle at which the consumer released each of the producer's pushes (in order)."""
    sets = r.releases.get((consumer, producer), [])[r.startup_credits:]   # not releases
    sp = r.slots_per_free
    if sp == 1:
        return sets
    out = []                    # sparse notifications: one SET releases SyncPeriod slots
    for t in sets:
        out.extend([t] * sp)
    return out


def _occupancy(r: Ring, cycles: int) -> None:
    """Slots in use: from the start of the write of push k (TALLOC or TPUSH) until every
    consumer has released it (its free SET; the end of the run if it never did)."""
    starts: dict = {}
    ends: dict = {}
    for p in r.producers:
        acq = r.allocs.get(p) or r.pushes.get(p, [])
        for k, ins in enumerate(acq):
            starts[k] = min(starts.get(k, ins.start), ins.start)
        for c in r.consumers:
            rel = _release_times(r, p, c)
            for k in range(len(acq)):
                t = rel[k] if k < len(rel) else cycles
                ends[k] = max(ends.get(k, t), t)
    delta = defaultdict(int)
    for k, s in starts.items():
        e = max(ends.get(k, cycles), s)
        delta[s] += 1
        delta[e] -= 1
    level, steps, peak = 0, [(0, 0)], 0
    for t in sorted(delta):
        level += delta[t]
        peak = max(peak, level)
        if steps and steps[-1][0] == t:
            steps[-1] = (t, level)
        else:
            steps.append((t, level))
    r.occupancy = steps
    r.peak = peak


def merge_intervals(iv) -> list:
    """Union of (start, end) intervals, sorted and disjoint."""
    out = []
    for s, e in sorted(iv):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def covered(intervals, union: list) -> list:
    """For each ``(start, end)`` of ``intervals``, the cycles covered by ``union`` (sorted,
    disjoint, as from :func:`merge_intervals`).  Bisects into the union, so a long run costs
    O(n log n), not a scan of the union per interval."""
    ends = [e for _s, e in union]
    n = len(union)
    out = []
    for s, e in intervals:
        tot = 0
        j = bisect_right(ends, s)           # the first union interval ending after s
        while j < n:
            us, ue = union[j]
            if us >= e:
                break
            tot += min(e, ue) - max(s, us)
            j += 1
        out.append(tot)
    return out
