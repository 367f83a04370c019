"""Cross-core flags: counters with SET (increment) and WAIT (block until > 0, decrement).

A flag lives on its receiving core and is set by one sending core (seed 003: 8 flags per
direction per Vector-Cube peer; the hardware has 16 ids).  Every SET records the
simulated time at which it reaches the receiver, so a WAIT resumes at that time.
Overflowing the counter is an error, never silent.  SET is ``Cluster.set_flag``, WAIT is
``Core.wait_flag``; this module owns the flag's state.
"""
from __future__ import annotations

from ..errors import ProtocolError

#: the id of the flags the all-core SYNCALL barrier counts on: outside every platform's
#: hardware ids (isa.crosscore.SYNCALL), so no ring or kernel SET can take one
SYNCALL_FLAG = 64


class Flag:
    __slots__ = ("sender", "receiver", "id", "count", "arrivals", "waiter", "owner",
                 "set_clocks", "pipe_orders", "signal", "sets", "drained", "carried", "origin", "sync_at",
                 "set_at")
    #: fields that count events, not cycles (the fast-forward engine's moves: sim.periodic)
    counter_fields = ("sets", "drained", "set_clocks")
    #: fields that are simulated times (cycles): the pending SETs' arrivals
    time_fields = ("arrivals",)

    def __init__(self, sender, receiver, fid: int):
        self.sender = sender
        self.receiver = receiver
        self.id = fid
        self.count = 0
        # per pending SET: its simulated arrival time, and (checkers) the sender's vector
        # clock; short lists, not deques: a flag rarely has more than a few SETs pending
        self.arrivals: list = []
        self.set_clocks: list = []
        # per pending SET (manual synchronisation only): what the sender's pipes knew of every
        # core's pipe order (sim.pipesync.PipeSync.cross_set)
        self.pipe_orders: list = []
        self.waiter = None               # the core blocked in WAIT on this flag
        self.owner = None                # the channel that claimed this flag id
        self.signal = "flag"             # "ready" | "free" once a channel claims it (stall kinds)
        # the ledger (several launches, teardown): SETs ever made, credits taken by a
        # teardown drain, credits this launch inherited from an earlier one and not yet
        # consumed, and where they came from (the earlier launch's ledger row)
        self.sets = 0
        self.drained = 0
        self.carried = 0
        self.origin = None
        # where the kernel first set / waited on this flag itself (a cross-core sync, not a
        # ring's): a pipe may not claim it afterwards
        self.sync_at = None
        # where the kernel last SET it itself: WAITs take the oldest SETs, so a SET left over
        # at the end is the latest one (the flag-leak warning's place)
        self.set_at = None

    @property
    def name(self) -> str:
        if self.id == SYNCALL_FLAG:
            return f"the SYNCALL barrier ({self.sender.name}->{self.receiver.name})"
        return f"flag {self.id} ({self.sender.name}->{self.receiver.name})"

    def __repr__(self) -> str:
        return f"<{self.name} count={self.count}>"


def overflow_error(flag: Flag, limit: int) -> ProtocolError:
    """A SET on a counter already at ``limit``.  A ring's ready flag overflows when its
    producer runs ``limit`` + 1 tiles ahead of a consumer lane: the depth of a ring on a counter
    flag (pto-isa's, whose producer waits for a free slot only from push #SlotNum on) must
    not exceed what the counter holds."""
    ch = flag.owner
    depth = getattr(ch, "slot_num", None)
    counter = depth is not None and not getattr(getattr(ch, "model", None), "per_tag_flags", True)
    if counter and flag.signal == "ready":
        ahead = (f"{ch.name} is a ring of depth {depth} on a counter flag that holds at most {limit}: "
                 f"{flag.sender.name} has pushed {limit} tiles {flag.receiver.name} has not popped yet and "
                 f"pushes another")
        if depth > limit:
            why = (f"the producer waits for a free slot only from push #{depth} on, so it may run {depth} "
                   f"tiles ahead of a consumer lane that falls behind - more SETs than the flag holds")
            fix = (f"use SlotNum <= {limit} for {ch.name} (a counter flag holds at most {limit} SETs); a "
                   f"ring of depth {depth} overflows whenever one lane lags {limit + 1} tiles behind")
        else:
            why = f"the ring has only {depth} slots, so the producer skipped its free-slot waits"
            fix = "do not skip the producer's free-slot wait (setAllocateStatus) while slots are in use"
        return ProtocolError(f"{flag.name} overflows: {ahead}", where=str(flag.sender.where()),
                             details=why, fix=fix)
    if counter:
        again = ch.free_again_note() if hasattr(ch, "free_again_note") else ""
        return ProtocolError(
            f"{flag.name} overflows: {ch.name}'s free credits pile up on a counter flag that holds at most "
            f"{limit} ({flag.receiver.name} has not consumed {limit} of {flag.sender.name}'s frees){again}",
            where=str(flag.sender.where()),
            fix=("do not TFREE tiles popped from a GM ring under pto-isa on A5 (the TPOP freed the slot), or "
                 "give the ring the consumer's memory (DIR_C2V / DIR_V2C, a VEC_FIFO / MAT_FIFO TMPipe)"
                 if again else
                 "send one free per popped tile (none where the TPOP already freed the slot) and let every "
                 "push wait where the protocol waits"))
    return ProtocolError(
        f"{flag.name} overflows: counter already at its maximum {limit} "
        f"(the receiver {flag.receiver.name} has not consumed earlier SETs)",
        where=str(flag.sender.where()),
        fix="the producer/consumer signal more often than they wait; pair every SET with a WAIT")
