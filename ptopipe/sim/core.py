"""A simulated core: its memories, pipes, clock and the greenlet its kernel runs in.

Kernels are plain Python functions.  Each runs in its own greenlet; a WAIT on a flag
that is not set switches back to the scheduler (:mod:`ptopipe.sim.cluster`), so the
kernel simply blocks inside ``TPOP`` / ``TPUSH`` as on hardware.

Timing: every instruction is issued in order (one cycle of issue) onto one pipe of the
core; it starts when the pipe is free and the tiles it reads are ready (scoreboard), and
occupies the pipe for its cost.  WAITs hold the issue clock until the SET arrives.
"""
from __future__ import annotations

from enum import Enum

import greenlet

from ..arch import MemSpace, PipeUnit
from ..errors import KernelError, PtoPipeError
from .location import SourceLoc, user_loc


class CoreKind(Enum):
    AIC = "AIC"
    AIV = "AIV"


class CoreState(Enum):
    READY = "ready"
    RUNNING = "running"
    BLOCKED = "blocked"
    DONE = "done"
    IDLE = "idle"      # no kernel on this core


_PIPES = tuple(PipeUnit)


class Wait:
    """What a blocked core waits for (for deadlock reports).

    ``what`` may be given as a callable; it is only rendered when a report needs it."""
    __slots__ = ("flag", "_what", "loc", "info")

    def __init__(self, flag, what, loc, info: dict | None = None):
        self.flag = flag
        self._what = what
        self.loc = loc
        self.info = info or {}

    @property
    def what(self) -> str:
        if callable(self._what):
            self._what = self._what()
        return self._what


class _CoreLet(greenlet.greenlet):
    core: "Core"


class Core:
    def __init__(self, cluster, name: str, kind: CoreKind, index: int, subblock: int,
                 memories: dict):
        self.cluster = cluster
        self.name = name
        self.kind = kind
        self.index = index
        self.subblock = subblock
        self.memories = memories
        self.state = CoreState.IDLE
        self.glet: _CoreLet | None = None
        self.waiting: Wait | None = None
        self.loc_override: SourceLoc | None = None
        self.clock = 0
        self.pipe_free = [0] * len(_PIPES)   # indexed by PipeUnit
        self.busy = [0] * len(_PIPES)
        self.stall = {"ready": 0, "free": 0, "flag": 0}
        self.instructions = 0
        self.isa = {}       # per-core state owned by the isa layer (bound pipes, cursors)
        self.costs = cluster.platform.costs
        self.vclock = None  # happens-before vector clock (checkers)

    def __repr__(self) -> str:
        return f"<Core {self.name} {self.state.value}>"

    # -- memories ---------------------------------------------------------------------
    def memory(self, space: MemSpace, what: str = "tile"):
        if space is MemSpace.GM:
            return self.cluster.gm
        m = self.memories.get(space)
        if m is None:
            raise KernelError(
                f"{self.name} has no {space.value}: a {what} in {space.value} cannot be used on "
                f"{'the Cube core' if self.kind is CoreKind.AIC else 'a Vector core'}",
                where=str(self.where()),
                fix="Vec tiles live in an AIV's UB; Mat/Left/Right/Acc tiles in the AIC's L1/L0A/L0B/L0C")
        return m

    # -- source location ----------------------------------------------------------------
    def where(self) -> SourceLoc | None:
        if self.loc_override is not None:
            return self.loc_override
        if self.glet is not None and greenlet.getcurrent() is not self.glet and self.glet.gr_frame:
            return user_loc(self.glet.gr_frame)
        return user_loc()

    # -- timing -----------------------------------------------------------------------
    def issue(self, pipe: PipeUnit, cost: int, srcs=(), dsts=(), name: str = "", args=None):
        """Issue one instruction; returns its (start, end) in cycles."""
        self.instructions += 1
        start = self.clock
        pf = self.pipe_free[pipe]
        if pf > start:
            start = pf
        for s in srcs:
            r = s.ready_at
            if r > start:
                start = r
        for d in dsts:
            r = d.read_end
            if r > start:
                start = r
            r = d.ready_at
            if r > start:
                start = r
        end = start + cost
        self.pipe_free[pipe] = end
        self.busy[pipe] += cost
        for s in srcs:
            if end > s.read_end:
                s.read_end = end
        for d in dsts:
            d.ready_at = end
        self.clock += 1
        tr = self.cluster.trace
        if tr is not None:
            tr.append((self.index, pipe, name, start, end, args))
        budget = self.cluster.max_instructions
        if budget and self.instructions > budget:
            raise PtoPipeError(
                f"{self.name} exceeded the instruction budget of {budget}",
                where=str(self.where()),
                fix="the kernel may loop forever; raise max_instructions= if it is just long")
        return start, end

    def end_time(self) -> int:
        return max(self.clock, max(self.pipe_free))

    # -- blocking -----------------------------------------------------------------------
    def wait_flag(self, flag, what, info: dict | None = None) -> int:
        """WAIT: block until the flag's counter is > 0, then decrement it.

        Returns the simulated time the consumed SET arrived."""
        while flag.count == 0:
            self.waiting = Wait(flag, what, None, info)
            flag.waiter = self
            self.state = CoreState.BLOCKED
            self.cluster.main.switch()
            self.waiting = None
        flag.count -= 1
        flag.waits += 1
        arrival = flag.arrivals.popleft()
        if flag.set_clocks:
            vc = flag.set_clocks.popleft()
            if self.vclock is not None:
                self.cluster.checker.join(self, vc)
        t = self.clock
        if arrival > t:
            self.stall["flag"] += arrival - t
            self.clock = arrival
        self.clock += 1
        return arrival

    def wake(self) -> None:
        if self.state is CoreState.BLOCKED:
            self.state = CoreState.READY
            self.cluster.on_wake(self)
