"""The run profile: total cycles, per core and per pipe busy cycles and utilisation, per core
the stall breakdown, per ring the slot occupancy over time and its peak, and a one-line
verdict on the bottleneck ("Vector-bound: AIV0 V pipe busy 91%").

Stall breakdown of a core (traced run; the parts add up to the total cycles):

``busy``   at least one of the core's pipes is working;
``ready``  nothing in flight and issue held by a TPOP waiting for data (a ready flag);
``free``   nothing in flight and issue held by a TPUSH/TALLOC waiting for a free slot;
``event``  nothing in flight and issue held by TSYNC (same-core events) or other flags;
``idle``   nothing in flight and nothing waited for (start-up, issue gaps, finished early).

A wait that overlaps work still in flight on another pipe costs nothing and is not counted
here; the raw issue-clock holds are in ``CoreProfile.issue_holds``.  Without a trace the
profile falls back to those raw holds (marked ``exact=False``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..arch import PipeUnit
from .timeline import Timeline, covered, merge_intervals, timeline

_STALLS = ("ready", "free", "event", "idle")
_BOUND = {"M": "Cube-bound", "V": "Vector-bound", "MTE2": "Load-bound (MTE2, GM->local)",
          "MTE3": "Store-bound (MTE3, UB->GM/L1)", "MTE1": "Move-bound (MTE1, L1->L0)",
          "FIX": "Fixpipe-bound (FIX, L0C out)", "S": "Scalar-bound"}
_CHAIN = 0.85              # a core active this much with no pipe >= 60%: dependency-bound
_WAITS = {"ready": "waits for data (ready)", "free": "waits for free slots",
          "event": "waits on events"}


@dataclass
class CoreProfile:
    name: str
    instructions: int
    busy: dict                # pipe name -> busy cycles
    utilisation: dict         # pipe name -> fraction of the total cycles
    active: int               # cycles with at least one pipe busy
    stalls: dict              # ready / free / event / idle -> cycles (sum + active = total)
    issue_holds: dict         # raw cycles the issue clock was held, per kind
    end: int                  # cycle this core finished


@dataclass
class RingProfile:
    """One ring.  Counts use the run summary's units: ``tiles`` pushed through the ring
    (slot fills), and TPUSH / TPOP instructions summed over the cores (a C2V tile is popped
    once per lane, a V2C tile is pushed once per lane)."""
    name: str
    slot_num: int
    pushes: int               # TPUSH instructions
    peak: int                 # most slots in use at once
    mean: float               # time-averaged slots in use
    occupancy: list = field(default_factory=list)   # [(cycle, slots in use)] steps
    tiles: int = 0            # tiles pushed (slot fills)
    pops: int = 0             # TPOP instructions
    lanes: int = 1            # AIV peers on the ring

    def counts(self) -> str:
        return (f"{self.tiles} tile{'s' if self.tiles != 1 else ''} pushed ({self.pushes} TPUSH), {self.pops} TPOP, "
                f"{self.lanes} lane{'s' if self.lanes != 1 else ''}")


@dataclass
class Profile:
    platform: str
    cycles: int
    cores: dict               # name -> CoreProfile (cores that ran a kernel)
    rings: list               # [RingProfile]
    bottleneck: str
    exact: bool = True        # False: no trace, stalls are raw issue holds

    def format(self) -> str:
        lines = [f"total {self.cycles} cycles on {self.platform}", f"bottleneck: {self.bottleneck}"]
        pipes = [p.name for p in PipeUnit if any(c.busy.get(p.name) for c in self.cores.values())]
        head = f"  {'core':5s} " + " ".join(f"{p:>12s}" for p in pipes)
        lines += ["pipe busy cycles (utilisation):", head]
        for c in self.cores.values():
            cells = [f"{c.busy[p]:6d} ({c.utilisation[p]:3.0%})" for p in pipes]
            lines.append(f"  {c.name:5s} " + " ".join(f"{x:>12s}" for x in cells))
        lines.append("stall breakdown (" + ("cycles with no pipe busy" if self.exact
                                            else "raw issue holds, no trace") + "):")
        lines.append(f"  {'core':5s} {'busy':>13s} " + " ".join(f"{k:>13s}" for k in _STALLS))
        for c in self.cores.values():
            t = max(self.cycles, 1)
            cells = [f"{c.active} ({c.active / t:3.0%})"] + \
                    [f"{c.stalls.get(k, 0)} ({c.stalls.get(k, 0) / t:3.0%})" for k in _STALLS]
            lines.append(f"  {c.name:5s} " + " ".join(f"{x:>13s}" for x in cells))
        for r in self.rings:
            lines.append(f"ring {r.name}: {r.counts()}; peak {r.peak}/{r.slot_num} slots in use, "
                         f"mean {r.mean:.2f}")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"platform": self.platform, "cycles": self.cycles, "bottleneck": self.bottleneck,
                "exact": self.exact,
                "cores": {n: {"instructions": c.instructions, "busy": c.busy,
                              "utilisation": c.utilisation, "active": c.active, "stalls": c.stalls,
                              "issue_holds": c.issue_holds, "end": c.end}
                          for n, c in self.cores.items()},
                "rings": [{"name": r.name, "slot_num": r.slot_num, "tiles": r.tiles, "pushes": r.pushes,
                           "pops": r.pops, "lanes": r.lanes, "peak": r.peak, "mean": r.mean}
                          for r in self.rings]}


def _cluster(obj):
    return getattr(obj, "cluster", obj)


def profile(run_or_cluster, tl: Timeline | None = None) -> Profile:
    """The profile of a finished run (a RunResult or a Cluster)."""
    cluster = _cluster(run_or_cluster)
    cycles = cluster.cycles
    exact = cluster.trace is not None
    if exact and tl is None:
        tl = timeline(cluster)
    cores = {}
    spans, holds_of = {}, {}
    if exact:                   # one pass over the trace, not one per core
        for i in tl.instrs:
            spans.setdefault(i.core, []).append((i.start, i.end))
        for h in tl.holds:
            holds_of.setdefault(h.core, []).append(h)
    for core in cluster.cores:
        if core.state.value == "idle":
            continue
        busy = {p.name: core.busy[p] for p in PipeUnit}
        util = {p: (v / cycles if cycles else 0.0) for p, v in busy.items()}
        holds = dict(core.stall)
        if exact:
            union = merge_intervals(spans.get(core.index, ()))
            active = sum(e - s for s, e in union)
            stalls = {k: 0 for k in _STALLS}
            mine = holds_of.get(core.index, [])
            for h, in_flight in zip(mine, covered(((h.start, h.end) for h in mine), union)):
                key = h.kind if h.kind in ("ready", "free") else "event"
                stalls[key] += (h.end - h.start) - in_flight
            stalls["idle"] = max(0, cycles - active - stalls["ready"] - stalls["free"] - stalls["event"])
        else:
            active = max(busy.values())     # a lower bound without the intervals
            stalls = {"ready": holds.get("ready", 0), "free": holds.get("free", 0),
                      "event": holds.get("event", 0) + holds.get("flag", 0)}
            stalls["idle"] = max(0, cycles - active - sum(stalls.values()))
        cores[core.name] = CoreProfile(core.name, core.instructions, busy, util, active, stalls,
                                       holds, core.end_time())
    rings = []
    if exact:
        for r in tl.rings:
            occ = r.occupancy
            area = sum((occ[i + 1][0] - occ[i][0]) * occ[i][1] for i in range(len(occ) - 1))
            tiles = max((len(v) for v in r.pushes.values()), default=0)
            rings.append(RingProfile(r.name, r.slot_num, sum(len(v) for v in r.pushes.values()), r.peak,
                                     area / cycles if cycles else 0.0, occ, tiles=tiles,
                                     pops=sum(len(v) for v in r.pops.values()), lanes=r.lanes))
    prof = Profile(cluster.platform.name, cycles, cores, rings, "", exact)
    prof.bottleneck = bottleneck(prof, cluster.platform.cross_core_latency)
    return prof


def bottleneck(prof: Profile, latency: int = 0) -> str:
    """One sentence naming what limits the run."""
    best = None
    for c in prof.cores.values():
        for p, u in c.utilisation.items():
            if best is None or u > best[2]:
                best = (c.name, p, u)
    if best is None or prof.cycles == 0:
        return "nothing ran"
    core, pipe, u = best
    if u >= 0.6:
        return f"{_BOUND.get(pipe, pipe + '-bound')}: {core} {pipe} pipe busy {u:.0%}"
    # no pipe saturated, but one core always has an instruction in flight: its pipes take
    # turns - a chain of dependent instructions (TMATMUL -> TPUSH on one Acc tile ...)
    if prof.exact:
        c = max(prof.cores.values(), key=lambda c: c.active)
        if c.active >= _CHAIN * prof.cycles:
            top = sorted(c.utilisation.items(), key=lambda kv: -kv[1])[:2]
            pipes = " and ".join(f"{p} {v:.0%}" for p, v in top)
            return (f"Dependency-bound: {c.name} is active {c.active / prof.cycles:.0%} of the time but "
                    f"no pipe is saturated ({pipes}): its instructions wait for each other in one "
                    "chain - double-buffer the tiles they share (e.g. two Acc tiles) so the pipes "
                    "overlap")
    worst = None
    for c in prof.cores.values():
        for k in ("ready", "free", "event"):
            v = c.stalls.get(k, 0)
            if worst is None or v > worst[2]:
                worst = (c.name, k, v)
    msg = f"Latency-bound (no pipe is saturated; busiest is {core} {pipe} at {u:.0%})"
    if worst and worst[2] > 0:
        wc, wk, wv = worst
        msg += f": {wc} {_WAITS[wk]} {wv / prof.cycles:.0%} of the time"
        if wk == "free":
            msg += " - a deeper ring or a faster consumer would help"
        elif wk == "ready" and latency:
            msg += f" (cross-core hand-off latency {latency} cycles)"
    return msg
