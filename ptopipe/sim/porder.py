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
carries ``hbw``, the vector of its last write (that write included), and ``hbu``, that
joined with its readers' since (what a write of it waits for; None: nothing known).
``last`` is the vector of the instruction issued last.  An access on GM pipe ``g`` ending at cycle ``E`` is ordered before a SET carrying
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
    return _join(a, b)


def _join(a, b):
    """``join`` of two vectors that are not None."""
    a0, a1, a2 = a
    b0, b1, b2 = b
    if a0 >= b0 and a1 >= b1 and a2 >= b2:
        return a
    if b0 >= a0 and b1 >= a1 and b2 >= a2:
        return b
    return (a0 if a0 > b0 else b0, a1 if a1 > b1 else b1, a2 if a2 > b2 else b2)


def _stamp(h, g, end):
    """``h`` with entry ``g`` set to ``end`` (the instruction's own end on its GM pipe)."""
    return (end, h[1], h[2]) if g == 0 else (h[0], end, h[2]) if g == 1 else (h[0], h[1], end)


class PipeOrder:
    """The per-pipe happens-before vectors of one core (see the module docstring)."""

    def __init__(self, core):
        self.hb = [ZERO] * len(PipeUnit)
        self.last = ZERO
        # ``slot_read(tile, g, end, name)``: a tile bound to a ring slot (``tile.binding``) is
        # read on GM pipe ``g`` until ``end`` (set by the isa checker: a free SET that follows
        # only its own pipe's work must be told what still reads the slot)
        self.slot_read = None
        # the issue methods in place (the scoreboard's, manual mode's, ...), wrapped
        self._issue, self._w, self._r = core.issue, core.issue_w, core.issue_r
        self._rw, self._rrw, self._s = core.issue_rw, core.issue_rrw, core.issue_s
        core.issue, core.issue_w, core.issue_r = self.issue, self.issue_w, self.issue_r
        core.issue_rw, core.issue_rrw, core.issue_s = self.issue_rw, self.issue_rrw, self.issue_s
        core.porder = self

    # The wrappers below: an instruction's vector is its pipe's joined with the vectors of
    # what the scoreboard makes it wait for - a tile it reads: its last write (``hbw``); a
    # tile it writes: its last write and the reads since (``hbu``) - stamped with its own
    # end on a GM pipe; it becomes the pipe's and the written tile's, and joins the read
    # tiles' ``hbu``.  (Joins are skipped inline where nothing can be new: the hot path.)
    def issue_w(self, pipe, cost, d, name, args=None) -> int:
        end = self._w(pipe, cost, d, name, args)
        hb = self.hb
        h = hb[pipe]
        x = d.hbu
        if x is not h and x is not None:
            h = _join(h, x)
        g = SLOT[pipe]
        if g is not None and h[g] < end:
            h = (end, h[1], h[2]) if g == 0 else (h[0], end, h[2]) if g == 1 else (h[0], h[1], end)
        hb[pipe] = self.last = d.hbw = d.hbu = h
        return end

    def issue_r(self, pipe, cost, s, name, args=None) -> int:
        end = self._r(pipe, cost, s, name, args)
        hb = self.hb
        h = hb[pipe]
        w = s.hbw
        if w is not h and w is not None:
            h = _join(h, w)
        g = SLOT[pipe]
        if g is not None and h[g] < end:
            h = (end, h[1], h[2]) if g == 0 else (h[0], end, h[2]) if g == 1 else (h[0], h[1], end)
        hb[pipe] = self.last = h
        x = s.hbu
        s.hbu = h if x is w or x is None else _join(x, h)     # (h includes w)
        if g is not None and s.binding is not None and self.slot_read is not None:
            self.slot_read(s, g, end, name)
        return end

    def issue_rw(self, pipe, cost, s, d, name, args=None) -> int:
        end = self._rw(pipe, cost, s, d, name, args)
        hb = self.hb
        h = hb[pipe]
        w = s.hbw
        if w is not h and w is not None:
            h = _join(h, w)
        x = d.hbu
        if x is not h and x is not None:
            h = _join(h, x)
        g = SLOT[pipe]
        if g is not None and h[g] < end:
            h = (end, h[1], h[2]) if g == 0 else (h[0], end, h[2]) if g == 1 else (h[0], h[1], end)
        hb[pipe] = self.last = d.hbw = d.hbu = h
        x = s.hbu
        s.hbu = h if x is w or x is None else _join(x, h)
        if g is not None and s.binding is not None and self.slot_read is not None:
            self.slot_read(s, g, end, name)
        return end

    def issue_rrw(self, pipe, cost, s0, s1, d, name, args=None) -> int:
        end = self._rrw(pipe, cost, s0, s1, d, name, args)
        hb = self.hb
        h = hb[pipe]
        w0 = s0.hbw
        if w0 is not h and w0 is not None:
            h = _join(h, w0)
        w1 = s1.hbw
        if w1 is not h and w1 is not None:
            h = _join(h, w1)
        x = d.hbu
        if x is not h and x is not None:
            h = _join(h, x)
        g = SLOT[pipe]
        if g is not None and h[g] < end:
            h = (end, h[1], h[2]) if g == 0 else (h[0], end, h[2]) if g == 1 else (h[0], h[1], end)
        hb[pipe] = self.last = d.hbw = d.hbu = h
        x = s0.hbu
        s0.hbu = h if x is w0 or x is None else _join(x, h)
        x = s1.hbu
        s1.hbu = h if x is w1 or x is None else _join(x, h)
        if g is not None and self.slot_read is not None:
            for s in (s0, s1):
                if s.binding is not None:
                    self.slot_read(s, g, end, name)
        return end

    def issue_s(self, pipe, cost, name, args=None) -> int:
        end = self._s(pipe, cost, name, args)
        h = self.hb[pipe]
        g = SLOT[pipe]
        if g is not None and h[g] < end:
            h = self.hb[pipe] = _stamp(h, g, end)
        self.last = h
        return end

    def issue(self, pipe, cost, srcs=(), dsts=(), name="", args=None):
        start, end = self._issue(pipe, cost, srcs, dsts, name, args)
        return start, self._after(pipe, end, srcs, dsts, name)

    def _after(self, pipe, end, srcs, dsts, name="") -> int:
        """The general form of the wrappers: an instruction on ``pipe`` reading ``srcs``,
        writing ``dsts``, ending at ``end`` (returned)."""
        h = self.hb[pipe]
        for s in srcs:
            h = join(h, s.hbw)
        for d in dsts:
            h = join(h, d.hbu)
        g = SLOT[pipe]
        if g is not None and h[g] < end:
            h = _stamp(h, g, end)
        self.hb[pipe] = self.last = h
        for s in srcs:
            s.hbu = join(s.hbu, h)
            if g is not None and getattr(s, "binding", None) is not None and self.slot_read is not None:
                self.slot_read(s, g, end, name)
        for d in dsts:
            d.hbw = d.hbu = h
        return end

    # -- intra-core synchronisation --------------------------------------------------------
    def fence(self, pipe=None) -> None:
        """Everything issued so far on ``pipe`` (None: on every pipe) happens before every
        later instruction of the core (pipe_barrier(PIPE_ALL), TSYNC)."""
        hb = self.hb
        if pipe is None:
            if hb.count(hb[0]) != len(hb):      # (else: nothing new since the last fence)
                hb[:] = [tuple(map(max, *hb))] * len(hb)
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


class SlotReads:
    """Without the causal order (a plain ``run``: ``core.porder`` None), the one part of
    :class:`PipeOrder` a free SET that follows only its own pipe needs: ``slot_read(tile, g,
    end, name)`` is called for every read on GM pipe ``g`` of a tile bound to a ring slot
    (``tile.binding``), so that the TFREE can tell which of them are still running when its
    SET is sent (judged there by completion times).  Installed by the race checker on a core's
    first TPOP from such a ring (``KernelChecks.watch_slot_reads``): it wraps the core's reading
    ``issue*`` methods, as PipeOrder does."""

    def __init__(self, core, slot_read):
        self.slot_read = slot_read
        self._issue, self._r = core.issue, core.issue_r
        self._rw, self._rrw = core.issue_rw, core.issue_rrw
        core.issue, core.issue_r = self.issue, self.issue_r
        core.issue_rw, core.issue_rrw = self.issue_rw, self.issue_rrw

    def issue_r(self, pipe, cost, s, name, args=None) -> int:
        end = self._r(pipe, cost, s, name, args)
        g = SLOT[pipe]
        if g is not None and s.binding is not None:
            self.slot_read(s, g, end, name)
        return end

    def issue_rw(self, pipe, cost, s, d, name, args=None) -> int:
        end = self._rw(pipe, cost, s, d, name, args)
        g = SLOT[pipe]
        if g is not None and s.binding is not None:
            self.slot_read(s, g, end, name)
        return end

    def issue_rrw(self, pipe, cost, s0, s1, d, name, args=None) -> int:
        end = self._rrw(pipe, cost, s0, s1, d, name, args)
        g = SLOT[pipe]
        if g is not None:
            for s in (s0, s1):
                if s.binding is not None:
                    self.slot_read(s, g, end, name)
        return end

    def issue(self, pipe, cost, srcs=(), dsts=(), name="", args=None):
        start, end = self._issue(pipe, cost, srcs, dsts, name, args)
        g = SLOT[pipe]
        if g is not None:
            for s in srcs:
                if getattr(s, "binding", None) is not None:
                    self.slot_read(s, g, end, name)
        return start, end
