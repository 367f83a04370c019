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

from collections import defaultdict
from dataclasses import dataclass, field

from ..arch import PipeUnit
from ..errors import ConfigError

_PIPE_NAMES = {int(p): p.name for p in PipeUnit}
_RING_OPS = ("TPUSH", "TPOP", "TFREE", "TALLOC")


@dataclass
class Instr:
    """One traced instruction."""
    id: int
    core: int
    pipe: int
    name: str
    start: int
    end: int
    args: dict

    @property
    def pipe_name(self) -> str:
        return _PIPE_NAMES.get(self.pipe, str(self.pipe))


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
    instrs: list                      # [Instr]
    holds: list                       # [(core, kind, start, end, what)]
    rings: list                       # [Ring]
    push_pop: list                    # [(push Instr, pop Instr)]
    free_push: list                   # [(free Instr, push Instr)]


def _args(name: str, raw) -> dict:
    """Readable args of a trace record (the isa layer stores compact tuples)."""
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return dict(raw)
    if not isinstance(raw, tuple):
        return {"args": repr(raw)}
    if name in _RING_OPS and raw and isinstance(raw[0], str):
        out = {"channel": raw[0]}
        if len(raw) > 1 and raw[1] is not None:
            out["slot"] = raw[1]
            out["tag"] = raw[1]
        for extra in raw[2:]:
            if isinstance(extra, tuple):
                out["shape"] = "x".join(str(d) for d in extra)
            elif isinstance(extra, str):
                out["kind"] = extra
            elif extra is not None:
                out["dtype"] = getattr(extra, "name", str(extra))
        return out
    if name.startswith("TMATMUL") and len(raw) == 3 and all(isinstance(v, int) for v in raw):
        m, k, n = raw
        return {"M": m, "K": k, "N": n, "shape": f"{m}x{k} @ {k}x{n}"}
    out = {}
    for v in raw:
        if isinstance(v, tuple):
            out["shape"] = "x".join(str(d) for d in v)
        elif hasattr(v, "itemsize"):
            out["dtype"] = getattr(v, "name", str(v))
        else:
            out.setdefault("args", []).append(repr(v))
    return out


def timeline(cluster) -> Timeline:
    """Build the timeline of a finished traced run (a :class:`~ptopipe.sim.Cluster`)."""
    if cluster.trace is None:
        raise ConfigError("this run was not traced, so it has no timeline",
                          fix="run with trace=True (ptopipe.run(..., trace=True))")
    instrs = [Instr(i, c, int(p), name, s, e, _args(name, a))
              for i, (c, p, name, s, e, a) in enumerate(cluster.trace)]
    names = [c.name for c in cluster.cores]
    rings = {}
    for ch in cluster.shared.get("channels", {}).values():
        aic = cluster.aic.index
        aivs = [cluster.aiv(p).index for p in ch.peers]
        prod, cons = ([aic], aivs) if ch.way == "C2V" else (aivs, [aic])
        m = ch.model
        rings[ch.name] = Ring(ch.name, ch.way, ch.slot_num, prod, cons,
                              startup_credits=m.startup_credits(ch.slot_num),
                              slots_per_free=m.slots_per_free(ch), paired_frees=m.wait_every,
                              lanes=len(ch.peers))
    for ins in instrs:
        r = rings.get(ins.args.get("channel"))
        if r is None:
            continue
        if ins.name == "TPUSH":
            r.pushes.setdefault(ins.core, []).append(ins)
        elif ins.name == "TPOP":
            r.pops.setdefault(ins.core, []).append(ins)
        elif ins.name == "TALLOC":
            r.allocs.setdefault(ins.core, []).append(ins)
        elif ins.name == "TFREE" and "slot" in ins.args:
            r.frees.setdefault(ins.core, []).append(ins)
    # free signals (SETs on a ring's free flags), per (consumer, producer) link, in order
    by_flag_owner = {id(ch): ch.name for ch in cluster.shared.get("channels", {}).values()}
    for sender, flag, at in cluster.signals or ():
        if flag.signal != "free" or flag.owner is None:
            continue
        r = rings.get(by_flag_owner.get(id(flag.owner)))
        if r is not None:
            r.releases.setdefault((sender, flag.receiver.index), []).append(at)
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
    holds = list(cluster.waits or ())
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


def overlap(a: tuple, union: list) -> int:
    """Cycles of interval ``a`` covered by the sorted disjoint intervals ``union``."""
    s, e = a
    tot = 0
    for us, ue in union:
        if ue <= s:
            continue
        if us >= e:
            break
        tot += min(e, ue) - max(s, us)
    return tot
