"""Intra-core event flags and the manual synchronisation mode of one core.

pto-isa's ``set_flag(src, dst, event_id)`` / ``wait_flag(src, dst, event_id)`` order the
pipes of one core: the set fires when every earlier instruction of ``src`` has completed,
the wait holds ``dst`` until a set of the same (src, dst, event_id) has fired and consumes
it.  :class:`PipeSync` is that state of one core (``core.psync``): per (src, dst, id) the
sets not yet consumed (a FIFO of tokens, each with the set's time, its line, in manual
mode the src pipe's vector clock and with the race checker its sim.porder vector), in both
modes:

* a wait with no pending set is a hang: nothing later in program order can run before it
  on that pipe, so it is reported at once (:class:`DeadlockError` at the wait's line);
* a set still pending when the kernels end is an event leak (:func:`event_leaks`).

In the default ``auto`` mode the scoreboard still orders every same-core dependency by
itself (the events only add timing).  In ``manual`` mode (``Cluster(sync="manual")``) the
core's ``issue*`` methods are replaced by :meth:`PipeSync.issue` and friends: an instruction
starts when its pipe is free (and past the waits queued on it), never because a tile it
reads was written by another pipe.  Same-pipe instructions stay in order; different pipes
are ordered only by events and barriers, tracked with one vector clock per pipe.  Every
tile-buffer access (UB / L1 / L0A / L0B / L0C / BIAS bytes) is checked against the last
write and the last read of every other pipe of the core: two pipes touching the same bytes
(at least one writing) with no set->wait chain between them is a :class:`DataRaceError`
naming both instructions.  The ring instructions are checked as every other instruction:
pto-isa orders nothing inside them but their cross-core flags (``ProtocolModel.ring_data``
says on which pipe each moves its tile): a TPUSH reads its tile on PIPE_FIX (Acc) or
PIPE_MTE3 (Vec), a TPOP from a GM ring writes its tile on PIPE_MTE2, so the tile's other
users need events as around a TSTORE / TLOAD; a zero-copy TPOP (A5 consumer-local ring)
touches no byte on its core (:meth:`PipeSync.bind`).  With the checkers on, the GM bytes of
TLOAD / TSTORE are checked the same way (:func:`watch_gm`).
"""
from __future__ import annotations

import operator

from ..arch import PipeUnit
from ..arch.vocab import SyncPipe, TileLayout
from ..errors import DataRaceError, DeadlockError, KernelError
from .race import gm_region, overlap

_N = len(PipeUnit)
_PAGE = 12                       # GM records are found by 4 KiB page
_NAMES = {p.unit: p.name for p in SyncPipe if p.unit is not None}   # PipeUnit -> "PIPE_V"


def event_name(src, dst, eid) -> str:
    return f"({_NAMES[src]}, {_NAMES[dst]}, EVENT_ID{eid})"


class EventWords:
    """How a front end spells the intra-core event calls in a message: ``set`` / ``wait`` /
    ``barrier`` (the call names), :meth:`call` one call with its arguments."""

    def __init__(self, set_: str, wait: str, barrier: str, args: str):
        self.set, self.wait, self.barrier, self._args = set_, wait, barrier, args

    def event(self, src, dst, eid) -> str:
        """The arguments of an event call: ``(PIPE_V, PIPE_MTE3, EVENT_ID2)`` in C++ / ISA."""
        return self._args.format(src=_NAMES[src] if src in _NAMES else src,
                                 dst=_NAMES[dst] if dst in _NAMES else dst, eid=eid)

    def call(self, name: str, src, dst, eid) -> str:
        """``name`` (``self.set`` / ``self.wait``) called on event (src, dst, eid)."""
        return f"{name}{self.event(src, dst, eid)}"


#: the ISA / pto-isa C++ spelling (a kernel that calls the ISA) and a ``.pto`` file's, as the
#: ``.pto`` writer spells it (the ``pl`` DSL's is the runtime's, from its op definitions)
ISA_EVENTS = EventWords("set_flag", "wait_flag", "pipe_barrier(PIPE_ALL)", "({src}, {dst}, EVENT_ID{eid})")
PTO_EVENTS = EventWords("pto.set_flag", "pto.wait_flag", "pto.barrier #pto.pipe<PIPE_ALL>",
                        "[#pto.pipe<{src}>, #pto.pipe<{dst}>, #pto.event<EVENT_ID{eid}>]")


def event_words(core) -> EventWords:
    """The spelling of the front end ``core`` runs: what the IR interpreter set for a ``pl``
    DSL kernel or a ``.pto`` file (``core.event_words``), else the ISA's (Python or C++)."""
    return getattr(core, "event_words", None) or ISA_EVENTS


class _Buf:
    """The accesses of one tile buffer (exact byte range of one memory) or GM region (``rows``
    refines its bytes, see sim.race): the last write and the last read per pipe, as
    ``(pipe, epoch, loc, op)``; ``near``: the tile buffers of the same memory whose bytes
    overlap it (itself included)."""
    __slots__ = ("lo", "hi", "rows", "write", "reads", "near", "ring_until")

    def __init__(self, lo, hi, rows=None):
        self.lo, self.hi, self.rows = lo, hi, rows
        self.ring_until = 0         # the end of the last zero-copy TPOP binding it (PipeSync.bind)
        self.write = None
        self.reads = {}
        self.near = [self]


class PipeSync:
    """The event flags of one core and, in manual mode, its per-pipe happens-before order."""
    # (the fast-forward engine's walk, sim.periodic: what counts events, what holds simulated
    # times - a pending set's time comes first in its entry)
    counter_fields = ("counts", "vc")
    time_fields = ("pending",)

    def __init__(self, core, manual: bool):
        self.core = core
        self.manual = manual
        self.pending: dict = {}      # (src, dst, id) -> FIFO list of (at, vc snapshot, set loc, porder)
        self.counts: dict = {}       # (src, dst, id) -> [sets, waits] so far
        self.last_wait: dict = {}    # (src, dst, id) -> loc of the last wait that consumed a set
        # (src, dst, id) -> (wait loc, the set it consumed, the newer set still pending): the
        # first wait that took a set while a newer one was pending - one set too many, made
        # where the consumed one was (for the race and leak reports)
        self.extra: dict = {}
        self.vc = [[0] * _N for _ in range(_N)]
        # manual mode, across cores: the pipe issued last (a cross-core SET after it fires
        # from its queue), and core index -> the latest of that core's pipe orders this core
        # has learnt of through cross-core flags - see cross_set / cross_wait
        self.last_pipe = PipeUnit.S
        self.known: dict = {}
        self.bufs: dict = {}         # id(memory) -> {(lo, hi, rows): _Buf}
        self.gm_bufs: dict = {}      # GM region key -> _Buf (manual mode, checkers on)
        self.gm_pages: dict = {}     # 4 KiB page -> [_Buf]
        self.gm_next = None          # the GM bytes of the TLOAD / TSTORE being issued
        self.gm_watch = False        # TLOAD / TSTORE note their GM bytes (watch_gm)
        if manual:
            core.issue = self.issue
            core.issue_w = self.issue_w
            core.issue_r = self.issue_r
            core.issue_rw = self.issue_rw
            core.issue_rrw = self.issue_rrw
            core.issue_s = self.issue_s

    # -- the events ---------------------------------------------------------------------------
    def set(self, src: PipeUnit, dst: PipeUnit, eid: int, loc) -> None:
        """SET_FLAG: fires when ``src`` has completed everything issued on it so far."""
        core = self.core
        at = core.issue_s(src, 0, "set_flag")
        key = (src, dst, eid)
        q = self.pending.get(key)
        if q is None:
            q = self.pending[key] = []
            self.counts[key] = [0, 0]
        po = core.porder          # (the race checker: src's happens-before vector)
        q.append((at, tuple(self.vc[src]) if self.manual else None, loc,
                  po.hb[src] if po is not None else None))
        self.counts[key][0] += 1

    def wait(self, src: PipeUnit, dst: PipeUnit, eid: int, loc) -> None:
        """WAIT_FLAG: holds ``dst`` until the oldest pending set has fired; consumes it."""
        core = self.core
        key = (src, dst, eid)
        q = self.pending.get(key)
        if not q:
            raise self.hang(key, loc)
        at, snap, set_loc, order = q.pop(0)     # (a few pending at most)
        if q and key not in self.extra and q[0][2] != set_loc:
            self.extra[key] = (loc, set_loc, q[0][2])
        self.counts[key][1] += 1
        self.last_wait[key] = loc
        if dst is PipeUnit.S:
            # the scalar unit issues every instruction of the core: while it waits nothing
            # issues, so everything after the wait, on every pipe, follows the set
            core.hold(at, "event", event_name(*key))
            held = tuple(PipeUnit)
        else:
            held = (dst,)
        pf = core.pipe_free
        if at > pf[dst]:
            pf[dst] = at
        for p in held:
            if snap is not None:
                m = self.vc[p]
                for i in range(_N):
                    if snap[i] > m[i]:
                        m[i] = snap[i]
            if order is not None:
                core.porder.wait(p, order)
        core.issue_s(dst, 0, "wait_flag")

    def order(self, src: PipeUnit, dst: PipeUnit) -> None:
        """An event pair inside a library instruction (``set_flag(src, dst)`` then
        ``wait_flag(src, dst)`` with nothing between): ``dst`` follows everything issued on
        ``src`` so far."""
        core = self.core
        pf = core.pipe_free
        if pf[src] > pf[dst]:
            pf[dst] = pf[src]
        if self.manual:
            snap, m = self.vc[src], self.vc[dst]
            for i in range(_N):
                if snap[i] > m[i]:
                    m[i] = snap[i]
        if core.porder is not None:
            core.porder.wait(dst, core.porder.hb[src])

    def barrier(self, unit: "PipeUnit | None") -> None:
        """PIPE_BARRIER: ``None`` (PIPE_ALL) orders every pipe after everything issued so far
        (and holds the issue until all pipes drain); one pipe is in order already."""
        core = self.core
        if unit is None:
            self.drain("pipe_barrier(PIPE_ALL)")
            core.issue_s(PipeUnit.S, 0, "pipe_barrier")
        else:
            core.issue_s(unit, 0, "pipe_barrier")

    def drain(self, what: str) -> None:
        """Hold the issue until every pipe has drained and order every pipe after everything
        issued so far (``what``: the cause, for the stall record): pipe_barrier(PIPE_ALL)'s
        order, and the scalar unit's after code of its own it runs to the end before it issues
        anything else (TPRINT's prints)."""
        core = self.core
        core.hold(max(core.pipe_free), "event", what)
        if self.manual:
            self.fence()
        if core.porder is not None:
            core.porder.fence()

    def fence(self) -> None:
        """Order every pipe after everything issued on any pipe so far."""
        vc = self.vc
        m = [max(col) for col in zip(*vc)]
        for p in range(_N):
            row = vc[p]
            row[:] = m

    def hang(self, key, loc) -> DeadlockError:
        src, dst, eid = key
        sets, waits = self.counts.get(key, (0, 0))
        name = event_name(*key)
        core = self.core
        w = event_words(core)
        set_, wait = w.call(w.set, *key), w.call(w.wait, *key)
        details = [f"{core.name}: {sets} {set_} so far, all consumed by {waits} {w.wait}"
                   + ("" if waits == 1 else "s")]
        if key in self.last_wait:
            details.append(f"the last set was consumed by the wait at {self.last_wait[key]}")
        others = [w.event(*k) + f" x{len(q)}" for k, q in self.pending.items()
                  if q and k[0] == src and k[1] == dst]
        if others:
            details.append("pending on the same pipes: " + ", ".join(others))
        return DeadlockError(
            f"hang: {wait} on {core.name} waits for an event no earlier {w.set} raised; "
            f"{_NAMES[dst]} blocks here forever (on the device: an AICPU timeout)",
            where=str(loc) if loc else None, details="\n".join(details),
            fix=f"every {wait} needs a {set_} before it on every path: prime "
                f"loop-carried events for every ID the loop waits on ({w.set} before the loop), "
                f"or remove the extra wait",
            findings=[{"kind": "event_hang", "core": core.name, "event": name, "sets": sets,
                       "waits": waits, "where": str(loc) if loc else None}])

    # -- manual mode across cores -------------------------------------------------------------
    def cross_set(self) -> dict:
        """A cross-core SET of this core: what it carries - this core's knowledge of every
        core's pipe order, its own entry the order of the pipe the SET fires from (the one
        issued last: a ring's SET follows the data move it signals) - for :meth:`cross_wait`."""
        k = dict(self.known)
        k[self.core.index] = tuple(self.vc[self.last_pipe])
        return k

    def cross_wait(self, carried) -> None:
        """A cross-core WAIT of this core consumed a SET that carried ``carried``.  The
        knowledge is passed on; where the platform's cross-core wait holds the core's whole
        issue (A2A3's wait_flag_dev), this core's own pipe order that comes back around (its
        SET, through another core's WAIT and SET, to this WAIT) orders every later
        instruction of every pipe after what happened before that SET on this core: e.g. a
        Vector read before its TPUSH (by a V -> MTE3 event) and the TPOP that reloads the
        same staging slot after the Cube's next push."""
        if carried is None:
            return
        known = self.known
        for i, k in carried.items():
            m = known.get(i)
            known[i] = k if m is None else tuple(map(max, m, k))
        own = carried.get(self.core.index)
        if own is not None and self.core.cluster.platform.cross_core_wait_holds_issue:
            for row in self.vc:
                for i in range(_N):
                    if own[i] > row[i]:
                        row[i] = own[i]

    # -- manual mode: issue without the cross-pipe scoreboard ------------------------------------
    def _loc(self):
        core = self.core
        o = core.loc_override
        return o if o is not None else core.where()

    def access(self, t, pipe, write: bool, op: str, loc) -> None:
        """Check and record pipe ``pipe``'s access of tile ``t``'s bytes; it starts after a
        zero-copy TPOP binding them has completed (its ready wait)."""
        b = self._buf(t)
        if b is not None:
            self._check(b, b.near, pipe, write, op, loc, t.mem.label, t.describe)
            pf = self.core.pipe_free
            if b.ring_until > pf[pipe]:
                pf[pipe] = b.ring_until

    def _check(self, b, near, pipe, write: bool, op: str, loc, label, what) -> None:
        """Check pipe ``pipe``'s access of buffer ``b`` against the records ``near`` that may
        overlap it (exact bytes compared for strided GM regions), then record it."""
        vc = self.vc[pipe]
        for o in near:
            w = o.write
            hit = w is not None and w[0] != pipe and w[1] > vc[w[0]]
            if not hit and write:
                for q, r in o.reads.items():
                    if q != pipe and r[1] > vc[q]:
                        hit, w = True, r
                        break
            if hit and (o is b or (b.rows is None and o.rows is None)
                        or overlap(b.lo, b.hi, b.rows, o.lo, o.hi, o.rows)):
                raise self.race(b, o, label, what, pipe, write, op, loc, w, w is o.write)
        rec = (pipe, vc[pipe], loc, op)
        if write:
            b.write = rec
            b.reads = {}
        else:
            b.reads[pipe] = rec

    def gm_note(self, gt, write: bool, op: str, region=None) -> None:
        """A TLOAD / TSTORE of this core is about to issue (with the checkers on): its GM
        bytes (``region``: those of ``gt`` an MGATHER / MSCATTER's indices pick, else all of
        them) are checked against the other pipes' GM accesses when it does."""
        reg = gm_region(gt) if region is None else region
        if reg is not None:
            self.gm_next = (reg, write, op, gt.describe)

    def _gm_access(self, note, pipe, loc) -> None:
        (lo, hi, rows), write, op, what = note
        key = (lo, hi, rows if rows.__class__ is not list else tuple(rows))
        pages = self.gm_pages
        b = self.gm_bufs.get(key)
        if b is None:
            b = self.gm_bufs[key] = _Buf(lo, hi, rows)
            for pg in range(lo >> _PAGE, ((hi - 1) >> _PAGE) + 1):
                pages.setdefault(pg, []).append(b)
        near = {id(o): o for pg in range(lo >> _PAGE, ((hi - 1) >> _PAGE) + 1)
                for o in pages.get(pg, ()) if o.lo < hi and lo < o.hi}
        self._check(b, near.values(), pipe, write, op, loc, "GM", what)

    def _buf(self, t) -> "_Buf | None":
        """The access record of tile ``t``'s bytes (None: not bound to a local memory)."""
        mem = t.mem
        addr = t._addr
        if mem is None or addr is None:
            return None
        item, cols, vr, vc = t.dtype.itemsize, t.cols, t.valid_rows, t.valid_cols
        rows = None
        if (vr < t.rows or vc < cols) and vr and vc and t.layout is TileLayout.ND:
            # a narrower valid region: its rows at the row pitch are the bytes the tile's
            # instructions touch (a DMA writes those rows only; a neighbour past them is apart)
            lo, hi = addr, addr + ((vr - 1) * cols + vc) * item
            if vc < cols:
                rows = (addr, vr, vc * item, cols * item)
        else:
            lo, hi = addr, addr + t.rows * cols * item
        bufs = self.bufs.get(id(mem))
        if bufs is None:
            bufs = self.bufs[id(mem)] = {}
        key = (lo, hi, rows)
        b = bufs.get(key)
        if b is None:
            b = bufs[key] = _Buf(lo, hi, rows)
            for o in bufs.values():
                if o is not b and o.lo < hi and lo < o.hi:
                    o.near.append(b)
                    b.near.append(o)
        return b

    def race(self, b, o, label, what, pipe, write, op, loc, prev, prev_write) -> DataRaceError:
        core = self.core
        q, _epoch, ploc, pop = prev
        kind = "write/write" if write and prev_write else "read/write"
        lo, hi = max(b.lo, o.lo), min(b.hi, o.hi)
        a = f"{op} on {_NAMES[pipe]} ({'writes' if write else 'reads'})"
        b = f"{pop} on {_NAMES[q]} ({'writes' if prev_write else 'reads'})"
        extra = next(((k, v) for k, v in self.extra.items() if k[0] == q and k[1] == pipe), None)
        if extra is not None:
            # the pair exists; a wait took an extra set made earlier, so it passed too soon
            key, (wloc, sloc, nloc) = extra
            name = event_name(*key)
            w = event_words(core)
            set_, wait = w.call(w.set, *key), w.call(w.wait, *key)
            return DataRaceError(
                f"data race ({kind}) inside {core.name}: {a} is not ordered after the earlier {b}: "
                f"an extra {set_} at {sloc} was consumed by the {w.wait} at {wloc} in place of "
                f"the set at {nloc}, so every later {wait} passes one set early",
                where=str(sloc),
                details="\n".join([f"{_NAMES[pipe]:9s} {op:10s} at {loc}: {what()}",
                                   f"{_NAMES[q]:9s} {pop:10s} at {ploc}",
                                   f"the extra {set_} at {sloc}; its {w.wait} at {wloc} "
                                   f"consumed it while the set at {nloc} was pending (event flags "
                                   "count sets: each wait takes the oldest)"]),
                fix=f"remove the extra {set_} at {sloc} (or wait for it before the set at {nloc}): "
                    f"the {w.set} at {nloc} and the {w.wait} at {wloc} already pair up",
                findings=[{"kind": "extra_event_set", "core": core.name, "event": name,
                           "set": str(sloc), "wait": str(wloc), "pair_set": str(nloc),
                           "access": {"pipe": _NAMES[pipe], "op": op, "where": str(loc)},
                           "other": {"pipe": _NAMES[q], "op": pop, "where": str(ploc)}}])
        w = event_words(core)
        return DataRaceError(
            f"data race ({kind}) inside {core.name}: {a} and the earlier {b} touch the same "
            f"{label} bytes with no event between the two pipes (manual sync)",
            where=str(loc) if loc else None,
            details="\n".join([f"{_NAMES[pipe]:9s} {op:10s} at {loc}: {what()}",
                               f"{_NAMES[q]:9s} {pop:10s} at {ploc}",
                               f"overlap {label}[{lo:#x}, {hi:#x}); no {w.set}{w.event(q, pipe, 'n')} "
                               f"-> {w.wait} chain orders the {pop} before the {op}"]),
            fix=f"after the {pop}: {w.call(w.set, q, pipe, 'n')}; before the {op}: "
                f"{w.call(w.wait, q, pipe, 'n')} (or {w.barrier}), or use another buffer",
            findings=[{"kind": "pipe_race", "core": core.name, "type": kind,
                       "access": {"pipe": _NAMES[pipe], "op": op, "where": str(loc)},
                       "other": {"pipe": _NAMES[q], "op": pop, "where": str(ploc)}}])

    def _finish(self, pipe, cost, name, args):
        core = self.core
        pf = core.pipe_free
        start = core.clock
        if pf[pipe] > start:
            start = pf[pipe]
        end = start + cost
        pf[pipe] = end
        core.busy[pipe] += cost
        core.clock += 1
        n = core.instructions = core.instructions + 1
        if n > core.limit:
            core._retire(n, pipe, name, start, end, args)
        return start, end

    def issue(self, pipe, cost, srcs=(), dsts=(), name="", args=None):
        uw = self.core.unwritten            # (Core.issue's check of reads of unwritten bytes)
        if uw is not None:
            uw.operands(srcs, dsts, name)
        self.vc[pipe][pipe] += 1
        self.last_pipe = pipe
        g = self.gm_next
        if srcs or dsts or g is not None:
            loc = self._loc()
            if g is not None:
                self.gm_next = None
                self._gm_access(g, pipe, loc)
            for s in srcs:
                self.access(s, pipe, False, name, loc)
            for d in dsts:
                self.access(d, pipe, True, name, loc)
        start, end = self._finish(pipe, cost, name, args)
        for s in srcs:
            if end > s.read_end:
                s.read_end = end
        for d in dsts:
            d.ready_at = end
        return start, end

    def bind(self, t, end: int, wait_pipe=None, loc=None) -> None:
        """A zero-copy TPOP (issued at ``end``) gave tile ``t`` the bytes of a consumer-local ring
        slot: the producer core wrote them (the ring's flags order that, checked with the
        protocol) and no pipe of this core touches them, so the earlier accesses of these bytes
        on this core are no longer the ones a later access must follow; the tile's users start
        after the TPOP (its ready wait).  That wait holds ``wait_pipe`` only
        (``ProtocolModel.ready_wait_pipe``): the producer's write counts as that pipe's, so a
        reader on another pipe needs an event from it, as on the device."""
        b = self._buf(t)
        if b is not None:
            for o in b.near:            # (itself, and the records of tiles inside these bytes)
                if b.lo <= o.lo and o.hi <= b.hi:
                    o.write = None
                    o.reads = {}
            if wait_pipe is not None:
                vc = self.vc[wait_pipe]
                vc[wait_pipe] += 1
                b.write = (wait_pipe, vc[wait_pipe], loc, "TPOP")
            if end > b.ring_until:
                b.ring_until = end

    def issue_w(self, pipe, cost, d, name, args=None) -> int:
        return self.issue(pipe, cost, (), (d,), name, args)[1]

    def issue_r(self, pipe, cost, s, name, args=None) -> int:
        return self.issue(pipe, cost, (s,), (), name, args)[1]

    def issue_rw(self, pipe, cost, s, d, name, args=None) -> int:
        return self.issue(pipe, cost, (s,), (d,), name, args)[1]

    def issue_rrw(self, pipe, cost, s0, s1, d, name, args=None) -> int:
        return self.issue(pipe, cost, (s0, s1), (d,), name, args)[1]

    def issue_s(self, pipe, cost, name, args=None) -> int:
        return self.issue(pipe, cost, (), (), name, args)[1]


def event_leaks(cluster) -> list:
    """``[(what, where)]``: the sets still pending on each core when the kernels ended."""
    out = []
    for core in cluster.cores:
        ps = getattr(core, "psync", None)
        if ps is None:
            continue
        w = event_words(core)
        for key, q in ps.pending.items():
            if q:
                sets, waits = ps.counts[key]
                extra = ps.extra.get(key)
                if extra is not None:
                    # a wait consumed an older set while a newer one was pending: the set left
                    # over is the pair's, the extra one is where the consumed set was made
                    # (the sets left are the ones too many: every wait consumed one)
                    wloc, sloc, nloc = extra
                    n = len(q)
                    out.append((f"{w.call(w.set, *key)} on {core.name}: "
                                f"{'one set' if n == 1 else f'{n} sets'} too many ({sets} sets, {waits} waits) - "
                                f"the {'' if n == 1 else 'first '}extra set is at {sloc} (the wait at {wloc} "
                                f"consumed it in place of the set at {nloc})", sloc))
                    continue
                out.append((f"{w.call(w.set, *key)} on {core.name} never consumed by a "
                            f"{w.wait} ({len(q)} of {sets} set{'s' if sets != 1 else ''} left)",
                            q[0][2]))
    return out


def watch_gm(cluster) -> None:
    """Manual mode with the checkers on: every TLOAD / TSTORE is also checked against the
    other pipes of its core (GM bytes written by a TSTORE and read back by a TLOAD need an
    event too): the instruction notes its GM bytes (``gm_note``) before it issues."""
    for core in cluster.cores:
        if core.psync is not None:
            core.psync.gm_watch = True


def psync(core) -> PipeSync:
    """The core's event state (made on first use in auto mode; at start in manual mode)."""
    ps = core.psync
    if ps is None:
        ps = core.psync = PipeSync(core, False)
    return ps


def check_pipe(core, p, what: str, allow_all: bool = False):
    """The PipeUnit of a ``SyncPipe`` argument (None: PIPE_ALL, if allowed)."""
    if p.__class__ is not SyncPipe:
        raise KernelError(f"{what} must be a pipe (PIPE_MTE2, PIPE_V, ...), got {p!r}",
                          where=str(core.where()), fix="use the PIPE_* constants")
    if p is SyncPipe.PIPE_ALL and not allow_all:
        raise KernelError(f"{what} cannot be PIPE_ALL (only pipe_barrier takes it)",
                          where=str(core.where()), fix="name the one pipe that sets / waits")
    return p.unit


def check_event(core, eid) -> int:
    try:
        ok = not isinstance(eid, bool) and 0 <= operator.index(eid) < 8
    except TypeError:
        ok = False
    if not ok:
        raise KernelError(f"event id must be EVENT_ID0..EVENT_ID7 (0..7), got {eid!r}",
                          where=str(core.where()), fix="use EVENT_ID0 .. EVENT_ID7")
    return int(eid)
