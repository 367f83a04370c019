"""A simulated core: its memories, pipes, clock and the greenlet its kernel runs in.

Kernels are plain Python functions.  Each runs in its own greenlet; a WAIT on a flag
that is not set switches back to the scheduler (:mod:`ptopipe.sim.cluster`), so the
kernel simply blocks inside ``TPOP`` / ``TPUSH`` as on hardware.

Timing: every instruction is issued in order (one cycle of issue) onto one pipe of the
core; it starts when the pipe is free and the tiles it reads are ready (scoreboard), and
occupies the pipe for its cost.  WAITs hold the issue clock until the SET arrives.
"""
from __future__ import annotations

import os
from enum import Enum
from sys import _getframe

import greenlet

from ..arch import MemSpace, PipeUnit
from ..arch.costs import NO_COSTS
from ..errors import ConfigError, KernelError
from .bounds import over_budget, past_until
from .location import SourceLoc, suspended_at, user_loc
from .schedule import WAIT
from .trace import Hold, Instr


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
# instructions per core between applications of the queued data operations (1: apply each
# instruction's work as it is issued, so that an error doing so names its exact line)
def sync_every_error() -> ConfigError | None:
    """The error of a ``PTOPIPE_SYNC_EVERY`` that is no positive integer (None: fine), raised
    where a cluster is made and by the command line before anything runs - not at import,
    where no error handler is there yet to report it."""
    v = os.environ.get("PTOPIPE_SYNC_EVERY") or "4096"
    if not v.isdigit() or int(v) < 1:
        return ConfigError(f"PTOPIPE_SYNC_EVERY={v!r} is not a positive integer", where="environment",
                           fix="unset it, or set it to 1 to apply each instruction's work at once")
    return None


SYNC_EVERY = 4096 if sync_every_error() else int(os.environ.get("PTOPIPE_SYNC_EVERY") or "4096")


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
    #: fields that count events, not cycles (the fast-forward engine's moves: sim.periodic)
    counter_fields = ("budget", "instructions", "busy", "stall", "vclock")
    #: fields that are simulated times (cycles): the issue clock, each pipe's free time
    time_fields = ("clock", "pipe_free")

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
        self.kernel = None                   # the kernel function it runs
        self.waiting: Wait | None = None
        self.loc_override: SourceLoc | None = None
        #: how messages spell the kernel's event calls (``sim.pipesync.EventWords``), set by
        #: the front end that runs it (None: the ISA's)
        self.event_words = None
        #: the front end's name of the statement running at ``loc_override`` (a ``.pto`` file's
        #: ``pto.tadd``), for messages naming it (None: the instruction's own name)
        self.op_word = None
        self.clock = 0
        self.pipe_free = [0] * len(_PIPES)   # indexed by PipeUnit
        self.busy = [0] * len(_PIPES)
        # cycles the issue clock was held: by a ready / free flag, another flag, TSYNC events
        self.stall = {"ready": 0, "free": 0, "flag": 0, "event": 0}
        self.instructions = 0
        self.isa = {}       # per-core state owned by the isa layer (bound pipes, cursors)
        self.costs = cluster.platform.costs
        self.trace = cluster.trace              # the cluster's trace list, or None
        # instructions this core may still issue: max_instructions less its TSYNCs and flag
        # waits so far (each lowers it by one and checks it, see check_step; ``limit`` is not
        # lowered with it: an issue then meets the budget at its next _retire, at most
        # SYNC_EVERY instructions later)
        self.budget = cluster.max_instructions
        self.until = cluster.until_cycle        # simulated-time bound, or None
        self.pending = cluster.pending          # the cluster's queued data operations
        # every issue compares its count with ``limit`` only: with a trace or a time bound
        # each one goes to _retire (which records / checks it); otherwise every SYNC_EVERY-th
        # (applies the queued data operations) and the one over the budget
        self.limit = -1 if self.trace is not None or self.until is not None else min(self.budget, SYNC_EVERY)
        self.vclock = None  # happens-before vector clock (checkers)
        self.porder = None  # causal order of its pipes (sim.porder; with the race checker)
        self.psync = None   # intra-core event flags (sim.pipesync), made on first use
        # the checkers' record of the bytes its instructions wrote (isa.unwritten; None: off):
        # an operand whose ``known_written`` is not it goes through its ``read`` / ``wrote``
        # (a tile's is None unless a checker set it, so with the checkers off nothing is called)
        self.unwritten = None
        # an exploring run's schedule policy (None by default): the ISA calls
        # ``cluster.visible(core, kind)`` at every GM / ring access when it is set
        self.policy = cluster.policy
        # the fast-forward engine while it learns or records this core's calls (sim.periodic;
        # None: every call is made exactly): the hot instructions hand their calls to it
        self.ff = None
        if not cluster.timing:
            # functional-only run: no cost tables, no scoreboard (see _issue_untimed)
            self.costs = NO_COSTS
            self.issue = self._issue_untimed
            self.issue_w, self.issue_r = self._untimed_w, self._untimed_r
            self.issue_rw, self.issue_rrw, self.issue_s = self._untimed_rw, self._untimed_rrw, self._untimed
            self.limit = -1 if self.until is not None else min(self.budget, SYNC_EVERY)
        if cluster.manual_sync:
            # manual synchronisation: pipes ordered only by events (replaces the issue methods)
            from .pipesync import PipeSync
            self.psync = PipeSync(self, True)

    def __repr__(self) -> str:
        return f"<Core {self.name} {self.state.value}>"

    # -- memories ---------------------------------------------------------------------
    def add_memory(self, space: MemSpace) -> None:
        """Give this core a memory of the platform it does not have on the device - the
        single core of a program that uses Cube and Vector tiles, as pto-isa's CPU simulator
        runs one (all memories in one address space per kind)."""
        if space not in self.memories:
            self.memories[space] = self.cluster.new_memory(space, self.cluster.platform.mem_size(space),
                                                           self.name)

    def memory(self, space: MemSpace, what: str = "tile"):
        if space is MemSpace.GM:
            return self.cluster.gm
        m = self.memories.get(space)
        if m is None:
            if callable(what):
                what = what()
            raise KernelError(
                f"{self.name} has no {space.value}: a {what} in {space.value} cannot be used on "
                f"{'the Cube core' if self.kind is CoreKind.AIC else 'a Vector core'}",
                where=str(self.where()),
                fix="Vec tiles live in an AIV's UB; Mat/Left/Right/Acc tiles in the AIC's L1/L0A/L0B/L0C")
        return m

    # -- source location ----------------------------------------------------------------
    def unrecorded(self, what) -> None:
        """The kernel uses the machine by ``what`` (a name, or a function giving it), which the
        fast-forward engine records no call of (:mod:`.periodic`): the exact state first - a
        recording stops, learning starts over.  Nothing while the engine is off.  (The hot
        paths - ``Tile.array``, ``current_core`` - test ``ff`` inline, sparing the call.)"""
        ff = self.ff
        if ff is not None:
            ff.unhooked(self, what)

    def where(self) -> SourceLoc | None:
        if self.loc_override is not None:
            return self.loc_override
        if self.glet is not None and greenlet.getcurrent() is not self.glet and self.glet.gr_frame:
            return suspended_at(self.glet.gr_frame)     # (a helper's line: with its callers)
        return user_loc()

    # -- timing -----------------------------------------------------------------------
    def issue(self, pipe: PipeUnit, cost: int, srcs=(), dsts=(), name: str = "", args=None):
        """Issue one instruction; returns its (start, end) in cycles."""
        uw = self.unwritten
        if uw is not None:
            uw.operands(srcs, dsts, name)
        pf = self.pipe_free
        start = self.clock
        t = pf[pipe]
        if t > start:
            start = t
        for s in srcs:
            t = s.ready_at
            if t > start:
                start = t
        for d in dsts:
            t = d.read_end
            if t > start:
                start = t
            t = d.ready_at
            if t > start:
                start = t
        end = start + cost
        pf[pipe] = end
        self.busy[pipe] += cost
        for s in srcs:
            if end > s.read_end:
                s.read_end = end
        for d in dsts:
            d.ready_at = end
        self.clock += 1
        n = self.instructions = self.instructions + 1
        if n > self.limit:
            self._retire(n, pipe, name, start, end, args)
        return start, end

    # The hot instructions issue through these fixed-arity forms of ``issue`` (no operand
    # tuples, no loops): w = writes one tile, r = reads one tile, rw / rrw = reads one or
    # two and writes one, s = touches no tile (flags, scalar).  They return the end cycle.
    def issue_w(self, pipe, cost, d, name, args=None) -> int:
        if d.known_written is not self.unwritten:
            self.unwritten.wrote(d)
        pf = self.pipe_free
        start = self.clock
        t = pf[pipe]
        if t > start:
            start = t
        t = d.read_end
        if t > start:
            start = t
        t = d.ready_at
        if t > start:
            start = t
        end = start + cost
        pf[pipe] = end
        self.busy[pipe] += cost
        d.ready_at = end
        self.clock += 1
        n = self.instructions = self.instructions + 1
        if n > self.limit:
            self._retire(n, pipe, name, start, end, args)
        return end

    def issue_r(self, pipe, cost, s, name, args=None) -> int:
        if s.known_written is not self.unwritten:
            self.unwritten.read(s, name)
        pf = self.pipe_free
        start = self.clock
        t = pf[pipe]
        if t > start:
            start = t
        t = s.ready_at
        if t > start:
            start = t
        end = start + cost
        pf[pipe] = end
        self.busy[pipe] += cost
        if end > s.read_end:
            s.read_end = end
        self.clock += 1
        n = self.instructions = self.instructions + 1
        if n > self.limit:
            self._retire(n, pipe, name, start, end, args)
        return end

    def issue_rw(self, pipe, cost, s, d, name, args=None) -> int:
        uw = self.unwritten
        if s.known_written is not uw:
            uw.read(s, name)
        if d.known_written is not uw:
            uw.wrote(d)
        pf = self.pipe_free
        start = self.clock
        t = pf[pipe]
        if t > start:
            start = t
        t = s.ready_at
        if t > start:
            start = t
        t = d.read_end
        if t > start:
            start = t
        t = d.ready_at
        if t > start:
            start = t
        end = start + cost
        pf[pipe] = end
        self.busy[pipe] += cost
        if end > s.read_end:
            s.read_end = end
        d.ready_at = end
        self.clock += 1
        n = self.instructions = self.instructions + 1
        if n > self.limit:
            self._retire(n, pipe, name, start, end, args)
        return end

    def issue_rrw(self, pipe, cost, s0, s1, d, name, args=None) -> int:
        uw = self.unwritten
        if s0.known_written is not uw:
            uw.read(s0, name)
        if s1.known_written is not uw:
            uw.read(s1, name)
        if d.known_written is not uw:
            uw.wrote(d)
        pf = self.pipe_free
        start = self.clock
        t = pf[pipe]
        if t > start:
            start = t
        t = s0.ready_at
        if t > start:
            start = t
        t = s1.ready_at
        if t > start:
            start = t
        t = d.read_end
        if t > start:
            start = t
        t = d.ready_at
        if t > start:
            start = t
        end = start + cost
        pf[pipe] = end
        self.busy[pipe] += cost
        if end > s0.read_end:
            s0.read_end = end
        if end > s1.read_end:
            s1.read_end = end
        d.ready_at = end
        self.clock += 1
        n = self.instructions = self.instructions + 1
        if n > self.limit:
            self._retire(n, pipe, name, start, end, args)
        return end

    def issue_s(self, pipe, cost, name, args=None) -> int:
        pf = self.pipe_free
        start = self.clock
        t = pf[pipe]
        if t > start:
            start = t
        end = start + cost
        pf[pipe] = end
        self.busy[pipe] += cost
        self.clock += 1
        n = self.instructions = self.instructions + 1
        if n > self.limit:
            self._retire(n, pipe, name, start, end, args)
        return end

    def _retire(self, n, pipe, name, start, end, args) -> None:
        """The rare tail of an issue: record the trace entry, enforce the bounds, and every
        SYNC_EVERY instructions apply the queued data operations (bounded memory)."""
        if self.trace is not None and pipe is not None:
            loc = self.loc_override
            if loc is None:
                # where(), from the kernel's side of the stack: frames 0-2 (this, issue_*, the
                # instruction that called it) are ptopipe's whenever the core issues its own
                loc = user_loc(_getframe(3)) if greenlet.getcurrent() is self.glet else self.where()
            self.trace.append(Instr(self.index, pipe, name, start, end, args, loc))
        elif self.until is None:            # (a functional run records no trace)
            self.limit = min(self.budget, n + SYNC_EVERY)
        if n > self.budget:
            raise over_budget(self)
        if self.until is not None and end > self.until:
            raise past_until(self, end)
        if len(self.pending) >= SYNC_EVERY:
            self.cluster.sync()

    def _issue_untimed(self, pipe, cost, srcs=(), dsts=(), name="", args=None):
        """``issue`` with timing off: one cycle of issue per instruction, no pipes."""
        uw = self.unwritten
        if uw is not None:
            uw.operands(srcs, dsts, name)
        t = self._untimed()
        return t, t

    # the fixed-arity forms with timing off: their operands' reads and writes, then _untimed
    def _untimed_w(self, pipe, cost, d, name, args=None) -> int:
        if d.known_written is not self.unwritten:
            self.unwritten.wrote(d)
        return self._untimed()

    def _untimed_r(self, pipe, cost, s, name, args=None) -> int:
        if s.known_written is not self.unwritten:
            self.unwritten.read(s, name)
        return self._untimed()

    def _untimed_rw(self, pipe, cost, s, d, name, args=None) -> int:
        self._issue_untimed(pipe, cost, (s,), (d,), name)
        return self.clock

    def _untimed_rrw(self, pipe, cost, s0, s1, d, name, args=None) -> int:
        self._issue_untimed(pipe, cost, (s0, s1), (d,), name)
        return self.clock

    def _untimed(self, *_operands) -> int:
        """``issue_s`` with timing off, and the count and clock of every untimed issue."""
        n = self.instructions = self.instructions + 1
        t = self.clock = self.clock + 1
        if n > self.limit:
            self._retire(n, None, "", t, t, None)
        return t

    def check_step(self) -> None:
        """After a TSYNC lowered ``budget`` (TSYNC is not an instruction, but counts toward
        the budget and the time bound, so that a loop of TSYNCs alone cannot run forever)."""
        if self.instructions > self.budget:
            raise over_budget(self)
        if self.until is not None and self.clock > self.until:
            raise past_until(self, self.clock)

    def hold(self, until: int, kind: str, what=None) -> None:
        """Hold the issue clock until ``until``: a stall of ``kind`` (ready/free/flag/event)."""
        t = self.clock
        if until > t:
            self.stall[kind] += until - t
            waits = self.cluster.waits
            if waits is not None:
                waits.append(Hold(self.index, kind, t, until, what, self.where()))
            self.clock = until

    def end_time(self) -> int:
        return max(self.clock, max(self.pipe_free))

    # -- blocking -----------------------------------------------------------------------
    def wait_flag(self, flag, what, info=None) -> int:
        """WAIT: block until the flag's counter is > 0, then decrement it.

        ``what`` (str or callable) and ``info`` (dict or callable returning one) describe
        the wait for reports; they are only evaluated if the core blocks.  Returns the
        simulated time the consumed SET arrived."""
        if self.policy is not None:
            self.cluster.visible(self, WAIT)
        while flag.count == 0:
            ff = self.cluster.ff
            if ff is not None:
                ff.blocking(self)
            self.waiting = Wait(flag, what, None, info() if callable(info) else info)
            flag.waiter = self
            self.state = CoreState.BLOCKED
            self.cluster.main.switch()
            self.waiting = None
            if ff is not None:
                ff.resumed(self, flag)
        flag.count -= 1
        if flag.carried:          # a credit an earlier launch left (several launches only)
            self.cluster.on_carried(self, flag)
        arrival = flag.arrivals.pop(0)
        if flag.pipe_orders:                      # (manual synchronisation)
            self.psync.cross_wait(flag.pipe_orders.pop(0))
        if flag.set_clocks:
            vc = flag.set_clocks.pop(0)
            if self.vclock is not None:
                self.cluster.checker.join(self, vc)
                if self.cluster.determinacy is not None:
                    self.cluster.determinacy.on_wait(self, flag)
        t = self.clock
        if arrival > t:           # hold the issue clock until the SET arrives (hold(), inline)
            self.stall[flag.signal] += arrival - t
            if self.cluster.waits is not None:
                self.cluster.waits.append(Hold(self.index, flag.signal, t, arrival, flag, self.where()))
            t = arrival
        self.clock = t + 1
        b = self.budget = self.budget - 1      # a wait counts toward the budget
        if self.instructions > b:
            raise over_budget(self)
        return arrival

    def wake(self) -> None:
        if self.state is CoreState.BLOCKED:
            self.state = CoreState.READY       # (an exploring run chooses at the SET after)
