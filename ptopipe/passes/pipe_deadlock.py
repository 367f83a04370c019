"""VerifyPipes, the two kernels together: can their cross-core op orders complete?

Each core's pipe ops on one explored path (one combination of paths whose facts agree) -
TPUSH, TPOP, TFREE per direction, in program order -
are run against each other with the protocol's ring rules: a TPUSH needs a free slot of its
ring (seed 003: pushed - freed < SLOT_NUM, per Vector lane; under pto-isa the frees its
sparse notifications have announced, ``rules``: ring -> :class:`~ptopipe.protocol.model.StaticRing`),
a TPOP a pushed tile (pushed > popped);
a Cube op on a two-lane ring takes part for both lanes.  When no core can go on and some
have not finished, the kernels wait for each other forever (a hang on the device, the
simulator's DeadlockError): one finding at the op each stuck core waits in.  A loop of
unknown (or long) trip count is one trace entry: :func:`stuck_for_all` finds the rings'
period and runs each trip count up to one period past where it starts, which decides every
trip count."""
from __future__ import annotations

from ..arch.vocab import Direction

C2V, V2C = Direction.DIR_C2V, Direction.DIR_V2C
_PRODUCER = {C2V: None, V2C: "aiv"}      # who pushes: None = the Cube, "aiv" = each lane


class _Rings:
    """The counters of the rings: per (ring, Vector lane) tiles pushed, popped, freed, and the
    free SETs those frees sent where a free's notification may test another index than its
    release's (``StaticRing.notice_moves``, pto-isa: the latest TPOP's) - there the producer
    goes on by the SETs, SyncPeriod frees each, not by the frees."""

    def __init__(self, lanes: tuple, slot_num: dict, rules: dict | None = None):
        self.lanes, self.slot_num, self.rules = lanes, slot_num, rules or {}
        self.n = {k: {(d, ln): 0 for d in slot_num for ln in lanes} for k in ("push", "pop", "free", "sent")}
        self.moves = {d for d, r in self.rules.items() if r.notice_moves}

    def needed(self, d, i: int) -> int:
        """TFREEs of a lane before push ``i`` of ring ``d`` may write its slot."""
        rule = self.rules.get(d)
        return rule.frees_needed(i) if rule is not None else i - self.slot_num[d] + 1

    def ready(self, core, kind, d) -> bool:
        pushed = self.n["push"]
        mine = self.lanes if core is None else (core,)
        if kind == "push":
            if d in self.moves:                     # the frees the SETs announce
                sp, sent = self.rules[d].sync_period, self.n["sent"]
                return all(sent[d, ln] * sp >= self.needed(d, pushed[d, ln]) for ln in mine)
            freed = self.n["free"]
            return all(freed[d, ln] >= self.needed(d, pushed[d, ln]) for ln in mine)
        if kind == "pop":
            popped = self.n["pop"]
            return all(pushed[d, ln] > popped[d, ln] for ln in mine)
        return True

    def step(self, core, kind, d) -> None:
        rule = self.rules.get(d)
        if rule is not None and rule.pop_frees:     # the TPOP frees, its TFREE releases nothing
            kind = {"pop": ("pop", "free"), "free": ()}.get(kind, (kind,))
        else:
            kind = (kind,)
        for ln in (self.lanes if core is None else (core,)):
            for k in kind:
                if k == "free" and d in self.moves and rule.sends(self.n["free"][d, ln], self.n["pop"][d, ln]):
                    self.n["sent"][d, ln] += 1
                self.n[k][d, ln] += 1

    def state(self) -> tuple:
        """What decides the cores' progress: pushed - popped and pushed - freed per ring, and
        where the pushes are in a sparse notification period."""
        p, o, f, s = self.n["push"], self.n["pop"], self.n["free"], self.n["sent"]
        sp = {d: getattr(r, "sync_period", 1) for d, r in self.rules.items()}
        return tuple((p[k] - o[k], p[k] - f[k], p[k] >= self.slot_num[k[0]], p[k] % sp.get(k[0], 1),
                      p[k] - s[k] * sp.get(k[0], 1) if k[0] in self.moves else 0) for k in sorted(p, key=repr))


def stuck_cores(traces: dict, lanes: tuple, slot_num: dict, rules: dict | None = None,
                counts: dict | None = None) -> dict:
    """``traces``: core -> [(kind, ring, op)] (core None = the AIC, 0 / 1 = AIV lanes);
    ``slot_num``: ring -> SLOT_NUM (every ring of the traces); ``rules``: ring -> the
    protocol's StaticRing (default seed 003's rule).  Returns {core: (kind, ring, op)} of the cores
    stuck when no core can go on, or {} when every trace completes; ``counts`` receives the
    rings' counters then ("push" / "pop" / "free" -> (ring, lane) -> count)."""
    rings = _Rings(lanes, slot_num, rules)
    pos = {core: 0 for core in traces}
    moved = True
    while moved:
        moved = False
        for core, trace in traces.items():
            while pos[core] < len(trace) and rings.ready(core, *trace[pos[core]][:2]):
                rings.step(core, *trace[pos[core]][:2])
                pos[core] += 1
                moved = True
    if counts is not None:
        counts.update(rings.n)
    return {core: traces[core][pos[core]] for core in traces if pos[core] < len(traces[core])}


#: the most rounds :func:`period_bound` simulates looking for the rings' period
MAX_ROUNDS = 4096


def expand(trace: list, trips: int) -> list:
    """``trace`` with each loop entry (``("loop", trips, body, op, why)``) repeated ``trips``
    times."""
    out = []
    for e in trace:
        if e[0] == "loop":
            out.extend(e[2] * trips)
        else:
            out.append(e)
    return out


def stuck_for_all(traces: dict, lanes: tuple, slot_num: dict, stats: dict | None = None,
                  rules: dict | None = None, counts: dict | None = None) -> tuple:
    """:func:`stuck_cores` for every trip count of the loops of unknown trip count in
    ``traces`` (one loop entry per core at most, all of the same trip count T): the rings'
    period (:func:`period_bound`) shows the outcome for T + delta is that for T past some
    T1, so checking each T <= T1 + delta decides every T.  Returns ``("ok",)``, ``("stuck",
    T or None, {core: entry})`` or ``("unproven", why)``; ``stats["runs"]`` counts the
    trip counts run (each one period of the rings at most); ``rules``, ``counts``: as
    :func:`stuck_cores`."""
    loops = [e for t in traces.values() for e in t if e[0] == "loop"]
    if not loops:
        stuck = stuck_cores(traces, lanes, slot_num, rules, counts)
        return ("stuck", None, stuck) if stuck else ("ok",)
    why = next((e[4] for e in loops if e[1] is None), None)
    if why:
        return "unproven", why
    if len({e[1] for e in loops}) > 1 or any(sum(e[0] == "loop" for e in t) > 1 for t in traces.values()):
        return "unproven", "the cores run loops of different unknown trip counts"
    period = period_bound(traces, lanes, slot_num, rules)
    bound = None if period is None else sum(period)
    lo, hi = loops[0][1]
    if lo.is_const() and hi.is_const():            # a known trip count: its run, one period
        trips = max(0, hi.const - lo.const)
        if period is not None and trips > bound:
            trips = period[0] + 1 + (trips - period[0] - 1) % period[1]
        if stats is not None:
            stats["runs"] = stats.get("runs", 0) + 1
        stuck = stuck_cores({c: expand(t, trips) for c, t in traces.items()}, lanes, slot_num, rules, counts)
        return ("stuck", trips, stuck) if stuck else ("ok",)
    for trips in range(MAX_ROUNDS if bound is None else bound + 1):
        if stats is not None:
            stats["runs"] = stats.get("runs", 0) + 1
        stuck = stuck_cores({c: expand(t, trips) for c, t in traces.items()}, lanes, slot_num, rules, counts)
        if stuck:
            return "stuck", trips, stuck
        if bound is None and trips >= 2 * max(slot_num.values()) + 4:
            break
    if bound is None:
        return "unproven", ("the cores' pushes and pops over the loop of unknown trip count do not "
                            "settle into a period")
    return ("ok",)


def period_bound(traces: dict, lanes: tuple, slot_num: dict, rules: dict | None = None):
    """``(T1, delta)``: the outcome for T + delta is that for T when T > T1, so checking
    T = 0 .. T1 + delta decides every T; or None.  The loops run
    forever in round-robin rounds, each core going on until it blocks or ends an
    iteration; once the state (positions, iterations done relative to the slowest core,
    ring counters) repeats, the run is periodic: delta more iterations from round r1 on, so a
    run of T + delta iterations ends as one of T does for T past the iterations done by r1."""
    rings = _Rings(lanes, slot_num, rules)
    pos = {core: [0, 0, 0] for core in traces}        # entry index, offset in a loop body, iterations
    seen = {}
    for _ in range(MAX_ROUNDS):
        moved = False
        for core, trace in traces.items():
            at = pos[core]
            while at[0] < len(trace):
                e = trace[at[0]]
                cur = e[2][at[1]] if e[0] == "loop" else e
                if not rings.ready(core, *cur[:2]):
                    break
                rings.step(core, *cur[:2])
                moved = True
                if e[0] != "loop":
                    at[0] += 1
                    continue
                at[1] += 1
                if at[1] == len(e[2]):
                    at[1], at[2] = 0, at[2] + 1
                    break                      # one iteration a round
        if not moved:                          # stuck forever: each T past this fails alike
            return max(at[2] for at in pos.values()), 1
        looping = [at[2] for c, at in pos.items() if at[0] < len(traces[c]) and traces[c][at[0]][0] == "loop"]
        low = min(looping, default=0)
        key = (tuple((c, at[0], at[1], at[2] - low if at[2] else 0) for c, at in sorted(pos.items(), key=repr)),
               rings.state())
        done = max(at[2] for at in pos.values())
        if key in seen:
            return seen[key], done - seen[key]
        seen[key] = done
    return None
