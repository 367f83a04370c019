"""The cross-core side of PipelineCrossCoreLoops: where to cut a loop body of an AIC / AIV
pair into two stages, and the proofs that running stage 0 one iteration ahead on both cores
keeps the pipes right - FIFO order and no deadlock.

A loop body is seen as its sequence of *pipe events* (``pl.tpush`` / ``pl.tpop`` /
``pl.tfree`` with their direction).  Within one iteration the k-th push of a direction on
the producer matches the k-th pop on the consumer.

* :func:`round_trip_cut`: a pop of side X whose matching push, on the peer, comes after a
  pop of something X pushed earlier in the same iteration waits for a *round trip* - the
  core idles while its own data crosses, is worked on and comes back.  X's cut is before its
  first such pop: stage 0 is what comes before (it does not wait for the peer's answer).
* :func:`fifo_consistent`: with the cuts, the pushes of every direction in the producer's
  new order equal the pops in the consumer's new order, (iteration, k) for (iteration, k).
* :func:`runs_to_completion`: both cores' new event orders (with the events of the block
  around the loop before and after it) run on rings of SLOT_NUM slots (a push waits for a
  free slot, a pop for a pushed tile, a TFREE frees the oldest popped one) for trip counts
  1 .. 2 SLOT_NUM + 2, and two executions back to back, without a deadlock.
* :func:`balanced_before`: the events before the loop push as many tiles of each of the
  loop's directions as the peer's pop, so the k-th push of an iteration still meets the
  k-th pop of the same iteration.
"""
from __future__ import annotations

from ..ir.opdefs import TFree, TPop, TPush

PIPE_EVENTS = {TPush: "push", TPop: "pop", TFree: "free"}


def events(ops) -> list:
    """``[(position, kind, direction)]`` of the pipe ops among ``ops`` (top level)."""
    return [(k, PIPE_EVENTS[o.__class__], o.direction)
            for k, o in enumerate(ops) if o.__class__ in PIPE_EVENTS]


def _numbered(evs) -> list:
    """``(position, kind, direction, k)``: k counts the events of that kind and direction."""
    seen, out = {}, []
    for pos, kind, d in evs:
        k = seen.get((kind, d), 0)
        seen[(kind, d)] = k + 1
        out.append((pos, kind, d, k))
    return out


def matched(a_evs, b_evs):
    """Per direction, the producer side (0 = a, 1 = b); None when a direction is pushed on
    both sides or the pushes and pops of one iteration differ in number."""
    prod = {}
    for side, evs in ((0, a_evs), (1, b_evs)):
        for _, kind, d in evs:
            if kind == "push":
                if prod.get(d, side) != side:
                    return None
                prod[d] = side
    for d, side in prod.items():
        pushes = sum(1 for _, k, x in (a_evs, b_evs)[side] if k == "push" and x == d)
        pops = sum(1 for _, k, x in (a_evs, b_evs)[1 - side] if k == "pop" and x == d)
        if pushes != pops:
            return None
    for side, evs in ((0, a_evs), (1, b_evs)):
        if any(k == "pop" and prod.get(d) != 1 - side for _, k, d in evs):
            return None
    return prod


def round_trip_cut(side: int, evs_pair, prod: dict):
    """The position of side ``side``'s first round-trip pop (see the module doc), or None."""
    mine, peer = (_numbered(e) for e in (evs_pair[side], evs_pair[1 - side]))
    pushes_mine = {(d, k): pos for pos, kind, d, k in mine if kind == "push"}
    pushes_peer = {(d, k): pos for pos, kind, d, k in peer if kind == "push"}
    for pos, kind, d, k in mine:
        if kind != "pop":
            continue
        answer = pushes_peer[(d, k)]
        for ppos, pkind, pd, pk in peer:
            if ppos < answer and pkind == "pop" and prod.get(pd) == side \
                    and pushes_mine[(pd, pk)] < pos:
                return pos
    return None


def skewed(evs, cut, n: int, distance: int = 1) -> list:
    """The events of ``n`` iterations in the new order, each as (iteration, kind, direction):
    stage 0 runs ``distance`` iterations ahead of stage 1; with ``cut`` None the loop is
    left as it is."""
    def stage(t, s):
        return [(t, kind, d) for pos, kind, d in evs if cut is None or (pos < cut) == (s == 0)]
    if cut is None:
        return [e for t in range(n) for e in stage(t, 0)]
    ahead = min(distance, n)
    out = [e for t in range(ahead) for e in stage(t, 0)]
    for t in range(n - ahead):
        out += stage(t + ahead, 0) + stage(t, 1)
    return out + [e for t in range(n - ahead, n) for e in stage(t, 1)]


def fifo_consistent(evs_pair, cuts, prod: dict, distance: int = 1) -> bool:
    for n in range(distance, distance + 4):
        orders = [skewed(evs_pair[s], cuts[s], n, distance) for s in (0, 1)]
        for d, p in prod.items():
            pushes = [t for t, kind, x in orders[p] if kind == "push" and x == d]
            pops = [t for t, kind, x in orders[1 - p] if kind == "pop" and x == d]
            if pushes != pops:
                return False
    return True


def runs_to_completion(evs_pair, cuts, slot_num: int, around=None, hoist=(0, 0),
                       distance: int = 1, trips=None) -> bool:
    """Both cores' new orders run to the end on rings of ``slot_num`` slots for every trip
    count 1 .. 2 ``slot_num`` + 2, and for two executions of the loop back to back with
    any two of those trip counts (an enclosing loop runs it again while the peer may still
    be finishing the previous execution).  ``around``: per side, the ``(before, after)``
    pipe events of the block that holds the loop (:func:`events` of the ops before and
    after it), run around every execution - a peeled first iteration pushes and pops the
    loop's rings before it.  ``hoist``: per side, how many of the last ``before`` events
    the prologue (stage 0 of the first ``distance`` iterations) moves above.  ``trips``:
    the trip counts to check (default 1 .. 2 ``slot_num`` + 2)."""
    trips = list(trips or range(1, 2 * slot_num + 3))
    around = around or (([], []), ([], []))
    wrap = [([(-1, k, d) for _, k, d in pre], [(-1, k, d) for _, k, d in post])
            for pre, post in around]

    def order(s, n):
        pre, post = wrap[s]
        loop = skewed(evs_pair[s], cuts[s], n, distance)
        h = hoist[s] if cuts[s] is not None else 0
        if not h:
            return pre + loop + post
        first = min(distance, n) * sum(1 for pos, _k, _d in evs_pair[s] if pos < cuts[s])
        return pre[:len(pre) - h] + loop[:first] + pre[len(pre) - h:] + loop[first:] + post

    orders = {n: [order(s, n) for s in (0, 1)] for n in trips}
    for n1 in trips:
        for n2 in trips:
            a, b = orders[n1], orders[n2]
            if not _simulate([a[0] + b[0], a[1] + b[1]], slot_num):
                return False
    return all(_simulate(orders[n], slot_num) for n in orders)


def _simulate(progs, slot_num: int) -> bool:
    pc = [0, 0]
    pushed, popped, freed = {}, {}, {}
    while pc[0] < len(progs[0]) or pc[1] < len(progs[1]):
        moved = False
        for s in (0, 1):
            while pc[s] < len(progs[s]):
                _, kind, d = progs[s][pc[s]]
                if kind == "push":
                    if pushed.get(d, 0) - freed.get(d, 0) >= slot_num:
                        break
                    pushed[d] = pushed.get(d, 0) + 1
                elif kind == "pop":
                    if popped.get(d, 0) >= pushed.get(d, 0):
                        break
                    popped[d] = popped.get(d, 0) + 1
                else:
                    if freed.get(d, 0) >= popped.get(d, 0):
                        return False
                    freed[d] = freed.get(d, 0) + 1
                pc[s] += 1
                moved = True
        if not moved:
            return False
    return True


def balanced_before(before_pair, prod: dict) -> bool:
    """Per direction of ``prod``, the producer's pushes among its ``before`` events number
    the consumer's pops among its own."""
    for d, p in prod.items():
        pushes = sum(1 for _, k, x in before_pair[p] if k == "push" and x == d)
        pops = sum(1 for _, k, x in before_pair[1 - p] if k == "pop" and x == d)
        if pushes != pops:
            return False
    return True
