"""Cross-core flags: counters with SET (increment) and WAIT (block until > 0, decrement).

A flag lives on its receiving core and is set by one sending core (seed 003: 8 flags per
direction per Vector-Cube peer; the hardware has 16 ids).  Every SET records the
simulated time at which it reaches the receiver, so a WAIT resumes at that time.
Overflowing the counter is an error, never silent.  SET is ``Cluster.set_flag``, WAIT is
``Core.wait_flag``; this module owns the flag's state.
"""
from __future__ import annotations

from ..errors import ProtocolError


class Flag:
    __slots__ = ("sender", "receiver", "id", "count", "arrivals", "waiter", "owner",
                 "set_clocks", "signal", "sets", "drained", "carried", "origin")

    def __init__(self, sender, receiver, fid: int):
        self.sender = sender
        self.receiver = receiver
        self.id = fid
        self.count = 0
        # per pending SET: its simulated arrival time, and (checkers) the sender's vector
        # clock; short lists, not deques: a flag rarely has more than a few SETs pending
        self.arrivals: list = []
        self.set_clocks: list = []
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

    @property
    def name(self) -> str:
        return f"flag {self.id} ({self.sender.name}->{self.receiver.name})"

    def __repr__(self) -> str:
        return f"<{self.name} count={self.count}>"


def overflow_error(flag: Flag, limit: int) -> ProtocolError:
    return ProtocolError(
        f"{flag.name} overflows: counter already at its maximum {limit} "
        f"(the receiver {flag.receiver.name} has not consumed earlier SETs)",
        where=str(flag.sender.where()),
        fix="the producer/consumer signal more often than they wait; pair every SET with a WAIT")
