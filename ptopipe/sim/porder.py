"""Causal order between the pipes of one core, for the race checker's cross-core SETs.

A cross-core SET (a TPUSH's ready, a TFREE's free) orders an earlier GM access of its core
only if that access happens before the SET *on the core*: on the device a TLOAD still
running on MTE2 is not waited for by a signal that MTE3 sends, however early the load
happens to finish in the simulated timing.  :class:`PipeOrder` tracks that order for one
core while the race checker is on (``core.porder``; None otherwise, so the checker-off hot
path is untouched); it wraps the core's ``issue*`` methods.

Invariant: for every pipe ``p``, ``hb[p][g]`` is the latest end cycle of an instruction on
the GM pipe ``GM_PIPES[g]`` (MTE2, MTE3, FIX: the pipes of TLOAD / TSTORE) that happens
before the next instruction issued on ``p``.  "Happens before" is the order the simulator
models, transitively: program order on one pipe (pipes are in-order queues), the
scoreboard's waits on a tile's last writer (read / write after write) and on its readers
(write after read), set_flag -> wait_flag, pipe_barrier(PIPE_ALL), TSYNC (a TSYNC on an
event is taken as a barrier of all pipes, as in manual mode).  A GM pipe runs in order, so
every instruction of pipe ``g`` ending at or before ``hb[p][g]`` happens before too.  A tile
carries ``hbw``, the vector of its last write (that write included), and ``hbr``, the join
of its readers' (None: nothing known).  ``last`` is the vector of the instruction issued
last.  An access on GM pipe ``g`` ending at cycle ``E`` is ordered before a SET carrying
vector ``v`` iff ``v[g] >= E`` (see :meth:`~ptopipe.sim.race.HappensBefore.on_set`).
"""
from __future__ import annotations

from ..arch import PipeUnit

GM_PIPES = (PipeUnit.MTE2, PipeUnit.MTE3, PipeUnit.FIX)
#: PipeUnit -> its entry in a vector (None: not a GM pipe)
SLOT = [None] * len(PipeUnit)
for _g, _p in enumerate(GM_PIPES):
    SLOT[_p] = _g
ZERO = (0, 0, 0)


def join(a, b):
    """The element-wise max of two vectors (None: nothing known); shares an argument when
    it is already the max (the common case), so tiles and pipes share tuples."""
    if b is None or a is b:
        return a
    if a is None:
        return b
    a0, a1, a2 = a
    b0, b1, b2 = b
    if a0 >= b0 and a1 >= b1 and a2 >= b2:
        return a
    if b0 >= a0 and b1 >= a1 and b2 >= a2:
        return b
    return (a0 if a0 > b0 else b0, a1 if a1 > b1 else b1, a2 if a2 > b2 else b2)


class PipeOrder:
    """The per-pipe happens-before vectors of one core (see the module docstring)."""

    def __init__(self, core):
        self.hb = [ZERO] * len(PipeUnit)
        self.last = ZERO
        # the issue methods in place (the scoreboard's, manual mode's, ...), wrapped
        self._issue, self._w, self._r = core.issue, core.issue_w, core.issue_r
        self._rw, self._rrw, self._s = core.issue_rw, core.issue_rrw, core.issue_s
        core.issue, core.issue_w, core.issue_r = self.issue, self.issue_w, self.issue_r
        core.issue_rw, core.issue_rrw, core.issue_s = self.issue_rw, self.issue_rrw, self.issue_s
        core.porder = self

    def _done(self, pipe, end, h):
        """The instruction on ``pipe`` ending at ``end`` had ``h`` before it: its own vector."""
        g = SLOT[pipe]
        if g is not None and h[g] < end:
            h = (end, h[1], h[2]) if g == 0 else (h[0], end, h[2]) if g == 1 else (h[0], h[1], end)
        self.hb[pipe] = self.last = h
        return h

    def issue_w(self, pipe, cost, d, name, args=None) -> int:
        end = self._w(pipe, cost, d, name, args)
        d.hbw = self._done(pipe, end, join(join(self.hb[pipe], d.hbr), d.hbw))
        return end

    def issue_r(self, pipe, cost, s, name, args=None) -> int:
        end = self._r(pipe, cost, s, name, args)
        h = self._done(pipe, end, join(self.hb[pipe], s.hbw))
        s.hbr = join(s.hbr, h)
        return end

    def issue_rw(self, pipe, cost, s, d, name, args=None) -> int:
        end = self._rw(pipe, cost, s, d, name, args)
        h = self._done(pipe, end, join(join(join(self.hb[pipe], s.hbw), d.hbr), d.hbw))
        s.hbr = join(s.hbr, h)
        d.hbw = h
        return end

    def issue_rrw(self, pipe, cost, s0, s1, d, name, args=None) -> int:
        end = self._rrw(pipe, cost, s0, s1, d, name, args)
        h = join(join(self.hb[pipe], s0.hbw), s1.hbw)
        h = self._done(pipe, end, join(join(h, d.hbr), d.hbw))
        s0.hbr = join(s0.hbr, h)
        s1.hbr = join(s1.hbr, h)
        d.hbw = h
        return end

    def issue_s(self, pipe, cost, name, args=None) -> int:
        end = self._s(pipe, cost, name, args)
        self._done(pipe, end, self.hb[pipe])
        return end

    def issue(self, pipe, cost, srcs=(), dsts=(), name="", args=None):
        start, end = self._issue(pipe, cost, srcs, dsts, name, args)
        h = self.hb[pipe]
        for s in srcs:
            h = join(h, s.hbw)
        for d in dsts:
            h = join(join(h, d.hbr), d.hbw)
        h = self._done(pipe, end, h)
        for s in srcs:
            s.hbr = join(s.hbr, h)
        for d in dsts:
            d.hbw = h
        return start, end

    # -- intra-core synchronisation --------------------------------------------------------
    def fence(self, pipe=None) -> None:
        """Everything issued so far on ``pipe`` (None: on every pipe) happens before every
        later instruction of the core (pipe_barrier(PIPE_ALL), TSYNC)."""
        hb = self.hb
        if pipe is None:
            m = ZERO
            for h in hb:
                m = join(m, h)
            hb[:] = [m] * len(hb)
        else:
            v = hb[pipe]
            hb[:] = [join(h, v) for h in hb]

    def wait(self, pipe, v) -> None:
        """A wait_flag on ``pipe`` consumed a set_flag that carried ``v`` (its src pipe's)."""
        self.hb[pipe] = join(self.hb[pipe], v)

    def floor(self):
        """What happens before the next instruction of every pipe: before every later SET."""
        m = None
        for h in self.hb:
            m = h if m is None else (min(m[0], h[0]), min(m[1], h[1]), min(m[2], h[2]))
        return m
