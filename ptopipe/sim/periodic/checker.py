"""The race checker across recorded blocks (a run with the checkers on).

Recorded and skipped calls do not run the checker.  Its verdicts on them are the learned
blocks' moved: the learned blocks were checked exactly and found nothing (no error, no new
warning), the state the checker judges by - the cores' vector clocks, the clocks the
pending SETs carry, a popped tile's pop record - is part of the proven machine state and
moves with the block, and a later access meets an earlier one the same way a block later
(GM windows of one tensor moving at different rates, which meet at some block, leave the
run exact: :func:`~.engine._cross_core_gm`).  Happens-before is monotone along a core, so
an access ordered after another a block later stays ordered after it.

What the checker holds at a cut is rebuilt, not moved (its records are keyed by moving
addresses): the cut is made :data:`REPLAY` blocks early and those blocks are made again
exactly, with the checker, so every record that can still race at the cut is made again.
That holds when no record lives longer than that: at the last snapshot every access some
live core is not ordered after must have been made after the first SET that followed the
first snapshot (:func:`prove`).  Older records the checker still holds are real ones, of
accesses before recording began; the cores' clocks, set to the cut's, judge them as the
exact run does.  The count of each instruction's accesses (a report names "the 3rd
TSTORE") moves with the block."""
from __future__ import annotations

from dataclasses import dataclass

from .values import Unsettled

#: blocks made again exactly, with the checker, before the state at a cut (the longest a
#: record may live, in blocks: the snapshots after the first one)
REPLAY = 3


@dataclass(frozen=True)
class Mark:
    """What a snapshot keeps of the checker."""
    occurrences: dict       # (core, instruction, line) -> its accesses so far
    warnings: int           # the run's warnings so far
    epochs: tuple           # each core's own entry of its vector clock


def mark(cluster) -> Mark | None:
    """The checker's part of a snapshot (None: no checker)."""
    ch = cluster.checker
    if ch is None:
        return None
    return Mark(dict(ch.occurrences), len(cluster.warnings), tuple(c.vclock[c.index] for c in cluster.cores))


def prove(cluster, marks: list) -> dict:
    """The checker's part of the proof (raises Unsettled): no warning during the learned
    blocks, each instruction's access count moving by a constant per block, no record live
    longer than :data:`REPLAY` blocks.  Returns the counts' moves per block."""
    if marks[0] is None:
        return {}
    if len({m.warnings for m in marks}) != 1:
        raise Unsettled("the checkers warned during the learned blocks")
    first, last = marks[-2].occurrences, marks[-1].occurrences
    per = {k: n - first.get(k, 0) for k, n in last.items()}
    for a, b in zip(marks, marks[1:]):
        if a.occurrences.keys() != b.occurrences.keys() or any(
                n - a.occurrences[k] != per[k] for k, n in b.occurrences.items()):
            raise Unsettled("an instruction's accesses do not move by one count per block")
    old = marks[-1 - REPLAY].epochs
    for k, epoch in cluster.checker.live_records():
        if epoch <= old[k]:
            raise Unsettled(f"the race checker keeps an access live longer than {REPLAY} blocks")
    return per


def at_cut(cluster, last: Mark | None, per: dict, q: int) -> None:
    """The checker's state ``q`` blocks after the last snapshot, before the calls after the
    cut are made again (they make its records)."""
    if last is None:
        return
    ch = cluster.checker
    ch.occurrences = {k: n + q * per.get(k, 0) for k, n in last.occurrences.items()}
    ch.dirty = True
    ch._applied = None
