"""Whether every schedule of a checked run gives that run's result (partial-order reduction).

A run is *determinate* when, in every interleaving of its cores, each core makes the same
instructions on the same bytes.  ``check`` explores schedules to find the runs where this
fails; when one checked run shows that it cannot fail, the explored schedules would only
repeat it, and the periodic engine's ``check`` stops after that run (:mod:`ptopipe.isa.explore`).

Why one run can show it.  Cores meet only through the machine:

- *flags*: a flag has one sending and one receiving core and is first in, first out
  (:mod:`.flags`), so the ``k``-th WAIT takes the ``k``-th SET in every schedule, and the
  happens-before order of the race checker (:mod:`.race`: vector clocks over SET->WAIT
  edges, the causal order of a core's pipes) is the same in every schedule;
- *memory* (GM, a ring in a consumer's local memory): the race checker sees every TLOAD,
  TSTORE and ring access, and reports two accesses of the same bytes that order does not
  order.  With none reported, every read takes the bytes of the one write ordered last
  before it, in every schedule - so each core reads the same values, takes the same
  branches and makes the same instructions (by induction over the order).  The first race
  of any schedule would be one between accesses every schedule makes, which this run's
  checker would have reported.

Then the outputs, the checkers' verdicts and the deadlocks (a determinate network blocks
alike in every schedule) are those of this run.  What a schedule can still change, and
what this module watches for, each a reason the run is not judged determinate:

- a flag's counter holds at most ``flag_counter_max`` pending SETs.  In another schedule
  the receiver may fall further behind: the ``s``-th SET overflows there unless the
  ``(s - max)``-th WAIT happens-before it.  :meth:`Determinacy.on_set` checks exactly that
  (the receiver's epoch at each WAIT against the sender's clock at the SET);
- two unordered atomic adds of the same bytes (floating-point sums depend on their order)
  and two unordered stores of identical bytes (let pass by the race checker) - either
  order is accepted in this run, so this run does not show the order cannot matter;
- memory the race checker does not see: a kernel reading tile bytes from Python
  (``Tile.array`` in its own code), the scalar unit's GM loads and stores of a PTO-AS
  kernel, a kernel that maps GM through its own pointers (C++);
- a run configured outside the argument: the checkers or their causal order off, no timing,
  ``until_cycle`` (another schedule's latencies move the cycles), several launches or blocks.

A kernel's cores must also not share Python state of their own (a list one core appends to
and another reads): the simulator cannot see it, so it is the one assumption made.

:class:`Determinacy(cluster)` attaches itself to the cluster as ``cluster.determinacy`` (None:
not judged; the periodic engine then does not apply, as its recorded blocks pass no hook)
and keeps the first reason it found (``why_not``; None: none).
"""
from __future__ import annotations

from collections import deque


class Determinacy:
    """What a checked run on ``cluster`` showed of its other schedules: ``why_not`` is the
    first reason found that another schedule may differ (None: every schedule gives this
    run's result, once the run passed)."""

    __slots__ = ("why_not", "_waits", "_max")

    def __init__(self, cluster, why_not: str | None = None):
        cluster.determinacy = self
        self.why_not = why_not
        self._waits: dict = {}          # flag -> the receiver's epochs at its last max WAITs
        self._max = cluster.platform.flag_counter_max

    def refuse(self, why: str) -> None:
        """Another schedule may differ because of ``why`` (the first reason is kept)."""
        if self.why_not is None:
            self.why_not = why

    # -- flags (called with the race checker's clocks up to date) ----------------------
    def on_wait(self, receiver, flag) -> None:
        """``receiver``'s WAIT took a SET of ``flag``: keep its epoch (its own clock entry,
        which a later SET of the receiver carries to the cores that wait for it)."""
        q = self._waits.get(flag)
        if q is None:
            q = self._waits[flag] = deque(maxlen=self._max)
        q.append(receiver.vclock[receiver.index])

    def on_set(self, sender, flag, carried) -> None:
        """``flag`` was just SET (its counter counts it) by ``sender``, whose clock before the
        SET was ``carried``: in every schedule the counter stays within its maximum at this
        SET iff the WAIT ``max`` places before it happens-before it."""
        m = self._max
        s, pending = flag.sets, flag.count
        if s <= m or self.why_not is not None:
            return
        # WAITs made so far: s - pending; the one needed is number s - m, that is
        # m - pending places before the last (this run passed the counter check: it was made)
        q = self._waits.get(flag)
        back = m - pending
        if q is None or back >= len(q):       # (not kept: a credit from before the run)
            self.refuse(f"{flag.name} has SETs no WAIT orders")
            return
        if carried[flag.receiver.index] < q[-1 - back]:
            self.refuse(f"{flag.name} may hold more than its {m} pending SETs under another "
                        f"schedule: its SET number {s} (at {sender.where()}) is not ordered after the "
                        f"WAIT number {s - m}")


def outside(checks: bool, causal: bool, timing: bool, until_cycle, launches: int, blocks: int,
            maps_gm: bool) -> str | None:
    """Why a run so configured cannot show that its other schedules give its result, or None:
    the checkers and their causal order on (which needs the timing model: the pipes' order),
    no cycle bound, one launch of one block, no kernel reading GM through pointers of its own
    (``maps_gm``)."""
    if not checks:
        return "the checkers are off: nothing orders the cores' accesses"
    if not timing:
        return "without the timing model (timing=False) the race checker has no pipe order to judge by"
    if not causal:
        return "the race checker orders accesses by their completion times (causal=False), not causally"
    if until_cycle is not None:
        return "until_cycle bounds the run's cycles, which other schedules' latencies move"
    if launches > 1 or blocks > 1:
        return "several launches or blocks: the judgement covers one cluster's one launch"
    if maps_gm:
        return "a kernel reads GM through pointers of its own, which the race checker does not see"
    return None


def unseen(core, what: str) -> None:
    """``core`` touches memory the race checker does not see (``what``, with its line):
    another schedule may order it otherwise."""
    d = core.cluster.determinacy
    if d is not None:
        d.refuse(f"{what} ({core.name}, at {core.where()}): the race checker does not see it")
