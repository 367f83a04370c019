"""Happens-before data-race checker: vector clocks over flag SET->WAIT edges.

Each core carries a vector clock (``core.vclock``, one entry per core).  Program order
advances a core's own entry at every SET (the snapshot taken just before is what travels
with the SET); a WAIT that consumes a SET joins the sender's snapshot into the receiver.
An access by core ``k`` at epoch ``e`` happens-before the current point of core ``c``
iff ``e <= c.vclock[k]`` - so races are judged by the order the protocol guarantees,
not by the order the simulator happened to run the cores.

An atomic-add store's access is a write of kind :data:`ATOMIC_ADD`: two of them commute (no
race whatever their order), one and a plain access of the same bytes race unless ordered; so
do atomic maxima and minima (:data:`ATOMIC_MAX`, :data:`ATOMIC_MIN`), each with its own kind.

Accesses are recorded per memory (GM, or one core's local memory for rings that live in
a consumer's UB/L1) in 4 KiB pages.  A record covers exact bytes: a contiguous range, or
rows of ``rowlen`` bytes every ``stride`` bytes (LEFT_RIGHT halves of two AIVs interleave
without overlapping), or an explicit list of ranges.  Records that happen-before every
live core can never race again and are dropped, so the working set stays small: a page's
bucket when it grows, and every page (empty ones go) each time the pages made since the last
sweep outnumber twice those it kept - a stream writing each tile to new GM pages keeps a
bounded set, not one record per tile.
"""
from __future__ import annotations

import sys

from ..errors import DataRaceError, ordinal
from .core import CoreState
from .flags import SYNCALL_FLAG
from .location import SourceLoc, is_cpp, is_internal, user_loc
from .porder import GM_PIPES, SLOT, PipeOrder

_SHIFT = 12                     # 4 KiB pages
_PRUNE_AT = 16                  # regions per page bucket before dead ones are dropped
_INFLIGHT_AT = 256              # in-flight GM accesses of a core before the done ones are dropped
_SWEEP_AT = 256                 # pages made before every page's dead records are swept
_LIVE = (CoreState.READY, CoreState.RUNNING, CoreState.BLOCKED)
#: the key mark of a record kept for an access still in flight at a SET after a later access of
#: the same core to the same bytes replaced it (HappensBefore.on_set)
_IN_FLIGHT = "in flight"


class _AtomicAdd(int):
    """The kind of an atomic store's access (``write`` of :meth:`HappensBefore.access`): a
    write - equal to True, so it indexes the write buckets and is truthy wherever a write is -
    told apart by identity (``is ATOMIC_ADD``) only where two accesses overlap.  ``op`` names
    what it does to the bytes (its subclasses: the other atomic ops)."""
    __slots__ = ()
    op = "add"

    def __repr__(self) -> str:
        return f"ATOMIC_{self.op.upper()}"


class _AtomicMax(_AtomicAdd):
    __slots__ = ()
    op = "max"


class _AtomicMin(_AtomicAdd):
    __slots__ = ()
    op = "min"


#: an atomic add of a tile into GM (pto-isa's ``TSTORE<..., AtomicType::AtomicAdd>``, an
#: ``MSCATTER<..., ScatterAtomicOp::Add>``): adds of several cores to the same bytes commute,
#: so two are no race; an add and a plain read or write of the bytes that happens-before does
#: not order are one (the read may see a partial sum, the write lose the adds or be added to)
ATOMIC_ADD = _AtomicAdd(1)
#: an atomic maximum / minimum into GM (A5's ``MSCATTER<..., ScatterAtomicOp::Max / Min>``):
#: two of one kind commute as two adds do; a max and a min, or either and an add, do not
ATOMIC_MAX = _AtomicMax(1)
ATOMIC_MIN = _AtomicMin(1)
#: the classes of the atomic kinds (``write.__class__ in ATOMIC_KINDS``: an atomic access)
ATOMIC_KINDS = (_AtomicAdd, _AtomicMax, _AtomicMin)
ATOMIC_WHY = ("atomic adds commute only with each other: a plain read of the bytes not ordered with an add "
              "may see a partial sum, a plain write may drop the adds or be added to")


def atomic_why(op: str) -> str:
    """Why an atomic ``op`` ('add', 'max', 'min') and an access of another kind race."""
    if op == "add":
        return ATOMIC_WHY
    return (f"atomic {op}s commute only with each other: a plain read of the bytes not ordered with one may "
            f"see a partial result, a plain write or another atomic op may be overtaken by it or undo it")


def atomic_fix(plain: str, blocks: bool = False, op: str = "add") -> str:
    """The fix of a race between atomic ``op``s and a plain access (``plain``: who makes it; ``blocks``:
    of different blocks of a launch, which nothing inside the launch orders)."""
    how = (f"move {plain} to a later launch (the blocks of one launch run at the same time)" if blocks else
           f"order {plain} after every atomic {op} (the cores making them SET a flag after them, or all "
           "reach a SYNCALL, and the other side WAITs for it)")
    return f"{how}, or make it an atomic {op} too"


def loc_text(where) -> str:
    """The text of a recorded location: a SourceLoc, a ``(code, line)`` token of the hot
    path, or None (``?``)."""
    if where is None:
        return "?"
    if where.__class__ is tuple:          # (code, line) token recorded on the hot path
        code, line = where
        return str(SourceLoc(code.co_filename, line, None, code.co_name))
    return str(where)


def line_of(where: str) -> str:
    """``:26`` (``:26:13`` for a DSL statement) of a ``file:line[:col]`` location text, for a
    message that names two lines of one kernel (its details show them in full)."""
    head = where.split(" (called from", 1)[0]
    _, sep, pos = head.partition(":")
    return f":{pos}" if sep and pos[:1].isdigit() else where


def one_lane_store(where) -> str:
    """How a kernel at location token ``where`` lets one Vector lane alone store a tile both
    hold, in its front end's words."""
    if is_cpp(where):
        return "e.g. under if (get_subblockid() == 0) { ... }"
    if isinstance(where, SourceLoc) and where.col is not None and not where.file.endswith(".pto"):
        return ("e.g. under `if pl.get_subblockid() == 0:` in an @pl.aiv function; in a mixed @pl.incore "
                "function, give it a split (split=pl.TILE_UP_DOWN or pl.TILE_LEFT_RIGHT): each lane then "
                "stores its part")
    return ("e.g. under get_subblockid() == 0; or, for a Vector kernel whose work is not split between "
            "the lanes, run it on AIV0 alone: aiv=(kernel, None)")


def lane_branch(where: str) -> str:
    """A core- or lane-dependent branch in the words of the front end of location text ``where``."""
    if is_cpp(where):
        return "if (get_subblockid() == 0)"
    if where.split(":", 1)[0].endswith((".pto", "<pto>")):
        return "an scf.if on pto.get_subblock_idx"
    return "if get_subblockid() == 0:"


def clipped_ranges(lo: int, hi: int, rows, clip_lo: int, clip_hi: int) -> list:
    """The byte ranges of a record, clipped to [clip_lo, clip_hi)."""
    if rows is None:
        return [(max(lo, clip_lo), min(hi, clip_hi))]
    if isinstance(rows, list):
        return [(max(a, clip_lo), min(b, clip_hi)) for a, b in rows if a < clip_hi and b > clip_lo]
    base, n, rowlen, stride = rows
    first = max(0, (clip_lo - rowlen - base) // stride)
    out = []
    for i in range(first, n):
        a = base + i * stride
        if a >= clip_hi:
            break
        b = a + rowlen
        if b > clip_lo:
            out.append((max(a, clip_lo), min(b, clip_hi)))
    return out


def overlap(a_lo, a_hi, a_rows, b_lo, b_hi, b_rows) -> bool:
    """Do two exact byte sets intersect?"""
    lo, hi = max(a_lo, b_lo), min(a_hi, b_hi)
    if lo >= hi:
        return False
    if a_rows is None and b_rows is None:
        return True
    if (a_rows.__class__ is tuple and b_rows.__class__ is tuple and a_rows[3] == b_rows[3]
            and a_rows[2] <= a_rows[3] and b_rows[2] <= b_rows[3]):
        # same row stride: compare the row phases modulo the stride first (LEFT_RIGHT halves)
        s = a_rows[3]
        d = (b_rows[0] - a_rows[0]) % s
        if d >= a_rows[2] and d + b_rows[2] <= s:
            return False
    ra = clipped_ranges(a_lo, a_hi, a_rows, lo, hi)
    rb = clipped_ranges(b_lo, b_hi, b_rows, lo, hi)
    ra.sort()
    rb.sort()
    i = j = 0
    while i < len(ra) and j < len(rb):
        (x0, x1), (y0, y1) = ra[i], rb[j]
        if x0 < y1 and y0 < x1:
            return True
        if x1 <= y1:
            i += 1
        else:
            j += 1
    return False


def changes_shared(changed, lo: int, cur, prev) -> bool:
    """Does a write whose per-byte changes from ``lo`` on are ``changed`` change a byte that
    both records ``cur`` and ``prev`` cover?"""
    a, b = max(cur[0], prev[0]), min(cur[1], prev[1])
    ra = clipped_ranges(cur[0], cur[1], cur[2], a, b)
    rb = clipped_ranges(prev[0], prev[1], prev[2], a, b)
    for x0, x1 in ra:
        for y0, y1 in rb:
            s, e = max(x0, y0), min(x1, y1)
            if s < e and changed[s - lo:e - lo].any():
                return True
    return False


def region_of_rows(addr: int, rows: int, rowlen: int, stride: int):
    """(lo, hi, rows) for ``rows`` rows of ``rowlen`` bytes every ``stride`` bytes."""
    if rows <= 0 or rowlen <= 0:
        return None
    if rows == 1 or 0 <= stride <= rowlen:
        return addr, addr + (rows - 1) * max(stride, 0) + rowlen, None
    return addr, addr + (rows - 1) * stride + rowlen, (addr, rows, rowlen, stride)


def region_of_ranges(ranges):
    rs = sorted((int(a), int(b)) for a, b in ranges if b > a)
    if not rs:
        return None
    merged = [list(rs[0])]
    for a, b in rs[1:]:
        if a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    if len(merged) == 1:
        return merged[0][0], merged[0][1], None
    return merged[0][0], merged[-1][1], [tuple(m) for m in merged]


def gm_region(gt):
    """(lo, hi, rows) of the GM bytes GlobalTensor ``gt`` covers (None: no bytes)."""
    g = gt._geom2
    if g is not None:
        (rows, cols), (rs, cs), extent = g
        if extent == 0:
            return None
        if cs == gt.dtype.itemsize:
            return region_of_rows(gt.ptr.addr, rows, cols * cs, rs)
    return region_of_ranges(gt.byte_ranges())


def _reusing(bucket, key, rec) -> tuple:
    """``rec``, a GM write through a GlobalTensor, marked as reusing its buffer when the same
    core wrote the same region before (``bucket``: its writes' page bucket, or None): its
    label gains that write's epoch and occurrence - a reader ordered after that write but not
    this one read the old data (a write-after-read of a reused buffer)."""
    label = rec[8]
    if bucket is None or label.__class__ is not tuple or len(label) > 3:
        return rec
    old = bucket[1].get(key)
    if old is None:
        return rec
    ol = old[8]
    return rec[:8] + (label[:3] + (old[4], ol[2] if ol.__class__ is tuple and len(ol) > 2 else None),) + rec[9:]


class HappensBefore:
    """The race checker attached to a :class:`~ptopipe.sim.Cluster` as ``cluster.checker``."""

    #: whether the fast-forward engine may record a run checked by this class
    #: (:mod:`ptopipe.sim.periodic.checker`): its verdicts repeat with a proven block, and its
    #: state at a cut is rebuilt by making the last blocks again.  A checker that keeps every
    #: access (a write log, a launch's blocks' regions) needs every one made.
    recordable = False

    def __init__(self, cluster):
        self.cluster = cluster
        n = len(cluster.cores)
        for c in cluster.cores:
            c.vclock = [0] * n
            c.vclock[c.index] = 1
        self.cores = cluster.cores
        self.mems: dict = {}            # id(memory) -> {page: [record]}
        self.floor = [0] * n            # per core k: min over other live cores of vclock[k]
        self.nbuckets = 2 * n           # per page: [core k reads, core k writes] buckets
        # per (core, kind) bucket: the other cores' buckets an access must be checked against
        self.others = [[(b, b >> 1) for b in range(2 * n)
                        if b >> 1 != mine >> 1 and (mine & 1 or b & 1)] for mine in range(2 * n)]
        self.dirty = True
        if n == 3:
            self.join = self._join3
        # per core: its GM accesses not yet ordered before one of its SETs - (end cycle,
        # GM pipe entry, page bucket dict, key, bucket, record) (see on_set)
        self.inflight = [[] for _ in range(n)]
        self.inflight_at = [_INFLIGHT_AT] * n
        self.pages_made, self.sweep_at = 0, _SWEEP_AT
        self._twice_seen: set = set()   # (core, line, core, line) of identical writes warned of
        # (core, op, line) -> how many GM accesses that instruction has made: a report names
        # which occurrence of it raced ("the 3rd TSTORE") - the iteration, for a loop
        self.occurrences: dict = {}
        self._applied = None            # (work, memory, lo, hi, changed) of the write applied last
        if cluster.causal:              # the causal order of each core's pipes (sim.porder)
            for c in cluster.cores:
                if c.porder is None:
                    PipeOrder(c)

    # -- vector clocks (hooks called by the cluster and the cores) -------------------
    def on_set(self, sender, at=None, order=None):
        """``sender`` SETs a flag at cycle ``at``: returns the vector clock the SET carries.

        A SET orders an earlier GM access of its core only if the access happens before it
        *on that core* (``order``: the SET's :mod:`~ptopipe.sim.porder` vector, by default
        that of the instruction issued last): the same pipe, or a tile dependency, event or
        barrier chain to the SET's pipe - not merely an earlier end cycle.  A TLOAD still
        running on MTE2 when MTE3 signals "done" (or a TSTORE on MTE3 when the ring's SET
        comes from FIX) is moved to the epoch after this SET, so a core that waits for it
        is not ordered after that access: on the device it may read stale data or
        overwrite bytes being loaded.  A later SET it happens before covers it.  (Without
        timing - a functional run, in program order - a SET covers what ended by ``at``.)"""
        vc = sender.vclock
        snap = tuple(vc)
        c = sender.index
        new = vc[c] = vc[c] + 1
        fl = self.inflight[c]
        if fl and at is not None:
            if order is None and sender.porder is not None:
                order = sender.porder.last
            keep = []
            for x in fl:
                end, g, d, key, bucket, rec = x
                cur = d.get(key)
                if cur is None:                           # pruned: ordered before every live core
                    continue
                if order[g] >= end if order is not None and g is not None else end <= at:   # ordered before
                    continue
                if cur is not rec:
                    if key.__class__ is not tuple:        # a ring slot's summary (isa.checks):
                        continue                          # its next access races this one first
                    # a later access of the core to the same bytes took the record's place: this
                    # one, not ordered, keeps a record of its own (else the bytes it is still
                    # moving would look ordered by this SET)
                    key = key + (_IN_FLIGHT, id(rec))
                # + why: not ordered (and the epoch a SET waiting for it would have kept)
                rec = rec[:4] + (new,) + rec[5:10] + ((end, at, g, rec[4]),)
                d[key] = rec
                if bucket[0] < new:
                    bucket[0] = new
                keep.append((end, g, d, key, bucket, rec))
            self.inflight[c] = keep
        return snap

    def join(self, core, vc) -> None:
        m = core.vclock
        for i, v in enumerate(vc):
            if v > m[i]:
                m[i] = v
        self.dirty = True

    def _join3(self, core, vc) -> None:
        """``join`` for the cluster's 1 AIC + 2 AIV, unrolled (every WAIT runs it)."""
        m = core.vclock
        a, b, c = vc
        if a > m[0]:
            m[0] = a
        if b > m[1]:
            m[1] = b
        if c > m[2]:
            m[2] = c
        self.dirty = True

    def live_records(self):
        """``(core index, epoch)`` of each access record that some live core is not ordered
        after (one that can still race)."""
        if self.dirty:
            self._refloor()
        fl = self.floor
        for pages in self.mems.values():
            for page in pages.values():
                for b, bucket in enumerate(page):
                    if bucket is not None and bucket[0] > fl[b >> 1]:
                        f = fl[b >> 1]
                        for r in bucket[1].values():
                            if r[4] > f:
                                yield b >> 1, r[4]

    def _refloor(self) -> None:
        live = [c for c in self.cores if c.state in _LIVE]
        fl = self.floor
        for k in range(len(fl)):
            m = None
            for c in live:
                if c.index != k:
                    v = c.vclock[k]
                    if m is None or v < m:
                        m = v
            fl[k] = 1 << 62 if m is None else m
        self.dirty = False

    # -- accesses ------------------------------------------------------------------------
    def where(self, core, depth: int):
        """A cheap location token of the kernel line ``depth`` frames above the caller."""
        o = core.loc_override
        if o is not None:
            return o
        f = sys._getframe(depth + 1)
        code = f.f_code
        if is_internal(code):
            return user_loc(f)
        return (code, f.f_lineno)

    def gm_access(self, core, gt, write: bool, op: str, where=None, end=None, pipe=None, work=None) -> bool:
        """A TLOAD (read) / TSTORE (write) through GlobalTensor ``gt`` (exact bytes) on GM
        pipe ``pipe`` that completes at cycle ``end``; ``work``: a write's numpy work, not
        queued yet (see :meth:`access`)."""
        reg = gm_region(gt)
        if reg is None:
            return False
        if where is None:
            where = self.where(core, 2)
        # described only if a race is reported (gt's address may change after this access)
        label = self.gm_label(core, gt, gt.ptr, op, where)
        return self.access(core, self.cluster.gm, reg[0], reg[1], reg[2], write, op, where, label, None, end,
                           pipe, work)

    def gm_indexed(self, core, gt, region, write: bool, op: str, end=None, pipe=None, work=None) -> bool:
        """An MGATHER (read) / MSCATTER (write) through table ``gt`` of the exact bytes its
        indices pick (``region``: ``(lo, hi, rows)``, :func:`region_of_ranges`) on ``pipe``,
        complete at cycle ``end``; as :meth:`gm_access`."""
        where = self.where(core, 2)
        label = self.gm_label(core, gt, gt.ptr, op, where)
        return self.access(core, self.cluster.gm, region[0], region[1], region[2], write, op, where, label, None,
                           end, pipe, work)

    def gm_label(self, core, gt, ptr, op: str, where) -> tuple:
        """The label of a GM access through ``gt`` at ``ptr``: ``(gt, ptr, n)``, the ``n``-th
        access of instruction ``op`` at ``where`` on ``core``.  The count is per source
        position (file, line, column), whichever way ``where`` spells it: a location token
        ``(code, line)`` of the hot path or the SourceLoc of a call made through a ptopipe
        frame (the fast-forward engine's) name one line alike.  (A token is keyed by its
        code's file name: hashing a code object hashes all of it.)"""
        k = (core.index, op, where[0].co_filename, where[1], None) if where.__class__ is tuple else \
            (core.index, op, where[0], where[1], where[2])
        occ = self.occurrences
        n = occ[k] = occ.get(k, 0) + 1
        return (gt, ptr, n)

    def access(self, core, mem, lo: int, hi: int, rows, write: bool, op: str, where,
               label=None, ring=None, end=None, pipe=None, work=None) -> bool:
        """Record an access of bytes [lo, hi) (``rows`` refines them) of memory ``mem``,
        complete at cycle ``end`` on GM pipe ``pipe`` (``end`` None: ordered by the protocol
        that made it).

        A page holds, per core and kind (read/write), the latest record per exact region
        and the newest epoch among them: if that epoch is ordered before this core, every
        record of the bucket is, and the bucket is skipped without a scan.

        ``work`` - the ``(fn, *args)`` entries of a write's numpy work, issued but not queued
        yet - lets an unordered write/write pair that stores identical bytes pass: their
        order cannot change memory (pto-isa's a2a3 no-split TPOP hands both Vector cores the
        whole tile, and its own test stores the result from both).  Then the work is applied
        here (True is returned, the caller queues nothing) and the pair is a run warning."""
        changed = None                  # per byte of [lo, hi): does this write change it
        c = core.index
        vc = core.vclock
        epoch = vc[c]
        rec = (lo, hi, rows, c, epoch, write, op, where, label, ring)
        key = (lo, hi, rows if rows.__class__ is not list else tuple(rows))   # ranges: a list
        if write.__class__ in ATOMIC_KINDS:     # kept beside a plain write of the region, not replacing it
            key += (write,)
        pages = self.mems.get(id(mem))
        if pages is None:
            pages = self.mems[id(mem)] = {}
        mine = 2 * c + write
        others = self.others[mine]
        for pg in range(lo >> _SHIFT, ((hi - 1) >> _SHIFT) + 1):
            page = pages.get(pg)
            if page is None:
                page = pages[pg] = [None] * self.nbuckets
                self.pages_made += 1
                if self.pages_made > self.sweep_at:
                    self._sweep()
            else:
                for b, k in others:
                    bucket = page[b]
                    if bucket is None or bucket[0] <= vc[k]:
                        continue
                    for r in bucket[1].values():
                        if r[4] > vc[k] and r[0] < hi and lo < r[1] and overlap(lo, hi, rows, r[0], r[1], r[2]):
                            if r[5].__class__ in ATOMIC_KINDS or write.__class__ in ATOMIC_KINDS:
                                if r[5] is write:           # two atomic adds (maxes, mins): they commute
                                    self._either_order(core, r, f"atomic-{write.op} into")
                                    continue
                                raise self.race(core, mem, rec, r)
                            if work is None or not r[5]:
                                raise self.race(core, mem, _reusing(page[mine], key, rec), r)
                            if changed is None:
                                changed = self._apply_work(mem, lo, hi, work)
                            if changes_shared(changed, lo, rec, r):
                                raise self.race(core, mem, _reusing(page[mine], key, rec), r)
                            self._either_order(core, r, "store identical data into")
                            self._twice(core, mem, rec, r)
            bucket = page[mine]
            if bucket is None:
                bucket = page[mine] = [epoch, {key: rec}]
                d = bucket[1]
            else:
                if bucket[0] < epoch:
                    bucket[0] = epoch
                d = bucket[1]
                if write and key in d:
                    rec = _reusing(bucket, key, rec)
                d[key] = rec
                if len(d) > _PRUNE_AT:
                    self._prune(c, d)
            if end is not None:
                fl = self.inflight[c]
                fl.append((end, SLOT[pipe] if pipe is not None else None, d, key, bucket, rec))
                if len(fl) > self.inflight_at[c]:
                    self._prune_inflight(core, fl)
        return changed is not None

    def keep(self, mem, rec) -> None:
        """Keep the access record ``rec`` of memory ``mem`` in the pages, checked already (a
        ring slot's record the slot's own summary no longer stands for); a newer record of
        the same core, kind and bytes stays."""
        lo, hi, rows, c, epoch, write = rec[:6]
        key = (lo, hi, rows if rows.__class__ is not list else tuple(rows))
        pages = self.mems.setdefault(id(mem), {})
        mine = 2 * c + write
        for pg in range(lo >> _SHIFT, ((hi - 1) >> _SHIFT) + 1):
            page = pages.get(pg)
            if page is None:
                page = pages[pg] = [None] * self.nbuckets
                self.pages_made += 1
            bucket = page[mine]
            if bucket is None:
                page[mine] = [epoch, {key: rec}]
            else:
                bucket[0] = max(bucket[0], epoch)
                bucket[1].setdefault(key, rec)

    def _apply_work(self, mem, lo: int, hi: int, work):
        """Apply a write's numpy ``work`` after everything queued before it; returns, per byte
        of ``mem`` in [lo, hi), whether the write changed it.  The same ``work`` on the same
        bytes again (a ring slot's record found again in the pages) is not applied twice: its
        answer is kept until the access that applied it ends (``_applied``)."""
        done = self._applied
        if done is not None and done[0] is work and done[1] is mem and done[2] == lo and done[3] == hi:
            return done[4]
        cl = self.cluster
        cl.sync()
        before = mem.buf[lo:hi].copy()
        cl.pending.extend(work)
        cl.sync()                       # (the data plane's error handling, if the work fails)
        changed = mem.buf[lo:hi] != before
        self._applied = (work, mem, lo, hi, changed)
        return changed

    def _either_order(self, core, prev, what: str) -> None:
        """An access of ``core`` meets ``prev`` unordered and is let pass (``what`` both do to
        the bytes): this run took one order of the two, another schedule may take the other
        (:mod:`.determinacy`)."""
        d = self.cluster.determinacy
        if d is not None:
            d.refuse(f"{core.name} and {self.cores[prev[3]].name} {what} the same bytes with no order between "
                     f"them (at {loc_text(prev[7])}): this run took one order of the two")

    def _twice(self, core, mem, cur, prev) -> None:
        """Note an unordered write/write pair that stored identical bytes: a run warning, once
        per pair of cores and lines (the first pair's bytes named)."""
        a, b = self.describe(mem, cur), self.describe(mem, prev)
        if a["where"] == b["where"] and a["nth"] and b["nth"] and a["nth"] != b["nth"]:
            # the same store of different iterations: overlapping windows (a tail window
            # clamped into the tensor, pl.min(i * TM, M - TM), split between the lanes) - as
            # harmless as one lane storing them, and nothing to change: no warning
            return
        key = (a["core"], a["where"], b["core"], b["where"])
        if key in self._twice_seen:
            return
        self._twice_seen.add(key)
        text = self.twice_text(mem, a, b, cur, prev)
        if text is not None:
            self.cluster.warnings.append((text, a["where"]))

    def twice_text(self, mem, a: dict, b: dict, cur, prev) -> str | None:
        """The warning of an unordered write/write pair of identical bytes (``a``, ``b``:
        :meth:`describe` of the records ``cur``, ``prev``); None where the pair is what the
        protocol asks for (no warning)."""
        who = (f"{a['core']} and {b['core']} both run this {a['op']}" if a["where"] == b["where"] else
               f"{a['core']} {a['op']} and {b['core']} {b['op']} (at {b['where']})")
        return (f"{who} on the same bytes of {mem.label} (first [{max(a['lo'], b['lo']):#x}, "
                f"{min(a['hi'], b['hi']):#x})) with no happens-before order: they store identical data, so "
                "the result does not depend on their order, but the work is done twice - let one core "
                f"store it ({one_lane_store(cur[7])})")

    def _prune_inflight(self, core, fl: list) -> None:
        """Drop what every later SET of ``core`` would drop (:meth:`on_set`): pruned records, a
        ring slot's replaced ones, and accesses ordered before the next instruction of every
        pipe (without timing: ended by the issue clock).  A GM record a later access of the
        core replaced stays: its access may still be in flight.  What stays is still live and
        unordered: the bound grows with it."""
        po = core.porder
        floor = po.floor() if po is not None else None
        clock = core.clock
        fl[:] = [x for x in fl if (x[2].get(x[3]) is x[5] or x[3].__class__ is tuple and x[2].get(x[3]) is not None)
                 and not (floor[x[1]] >= x[0] if floor is not None and x[1] is not None else x[0] <= clock)]
        self.inflight_at[core.index] = max(_INFLIGHT_AT, 2 * len(fl))

    def _sweep(self) -> None:
        """Prune every page's buckets; drop the pages left empty.  (An in-flight entry of a
        dropped record lets go of it: its ``d.get(key) is rec`` test fails.)"""
        if self.dirty:
            self._refloor()
        fl = self.floor
        kept = 0
        for pages in self.mems.values():
            for pg in list(pages):
                empty = True
                for b, bucket in enumerate(pages[pg]):
                    if bucket is not None:
                        d, f = bucket[1], fl[b >> 1]
                        for key in [key for key, r in d.items() if r[4] <= f]:
                            del d[key]
                        empty = empty and not d
                if empty:
                    del pages[pg]
                else:
                    kept += 1
        self.pages_made, self.sweep_at = 0, max(_SWEEP_AT, 2 * kept)

    def _prune(self, k: int, d: dict) -> None:
        """Drop records of core ``k`` ordered before every live core's current point."""
        if self.dirty:
            self._refloor()
        fl = self.floor[k]
        for key in [key for key, r in d.items() if r[4] <= fl]:
            del d[key]

    # -- reporting -----------------------------------------------------------------------
    def describe(self, mem, rec) -> dict:
        lo, hi, rows, c, epoch, write, op, where, label, ring = rec[:10]
        nth = reused = None
        if isinstance(label, tuple):
            gt, ptr = label[:2]
            if len(label) > 2:
                nth = label[2]
            if len(label) > 4:
                reused = label[3:5]         # (epoch, occurrence) of the write it replaced
            label = gt.describe(ptr)
        nbytes = sum(b - a for a, b in clipped_ranges(lo, hi, rows, lo, hi))
        atomic = write.__class__ in ATOMIC_KINDS
        if atomic:
            op += f" (atomic {write.op})"
        return {"core": self.cores[c].name, "op": op, "access": "write" if write else "read",
                "atomic": write.op if atomic else False,
                "where": loc_text(where), "memory": mem.label, "lo": lo, "hi": hi, "bytes": nbytes,
                "strided": rows is not None, "epoch": epoch, "ring": ring, "nth": nth, "reused": reused,
                "object": label if label or ring is None else f"slot {ring[1]} of {ring[0]}"}

    def race(self, core, mem, cur, prev) -> Exception:
        a, b = self.describe(mem, cur), self.describe(mem, prev)
        return self.race_error(core, mem, a, b, cur, prev)

    def race_error(self, core, mem, a: dict, b: dict, cur, prev) -> Exception:
        kind = "write/write" if a["access"] == b["access"] == "write" else "read/write"

        def line(d):
            rng = f"{d['memory']}[{d['lo']:#x}, {d['hi']:#x})" + (" (strided)" if d["strided"] else "")
            obj = f" via {d['object']}" if d["object"] else ""
            nth = f" ({ordinal(d['nth'])})" if d.get("nth") else ""
            return f"{d['core']:5s} {d['access']:5s} {d['op']:7s} at {d['where']}{nth}: {rng}{obj}"

        lo, hi = max(a["lo"], b["lo"]), min(a["hi"], b["hi"])
        other = b["core"]
        why = [f"overlap within [{lo:#x}, {hi:#x}); no flag SET->WAIT chain orders "
               f"{other}'s access before {a['core']}'s"]
        fix = (f"order the two accesses with the protocol: e.g. {other} TPUSH / SET after its "
               f"access and {a['core']} TPOP / WAIT before its own, or use disjoint buffers")
        what = (f"data race ({kind}) on {mem.label}: {a['core']} {a['op']} and {other} {b['op']} touch the "
                "same bytes with no happens-before order")
        atomic = a["atomic"] or b["atomic"]
        war = None if atomic else self._write_after_read(core, a, b, prev)
        if war is not None:
            what, why, fix = war(mem.label, lo, hi)
        if atomic:
            plain = b if a["atomic"] else a
            if a["atomic"] and b["atomic"]:             # two atomic ops of different kinds: b's is the one
                plain, atomic = a, b["atomic"]
            why.append(atomic_why(atomic))
            fix = atomic_fix(f"{plain['core']}'s {plain['op']} at {line_of(plain['where'])}", op=atomic)
        if a["where"] == b["where"] and a["access"] == "write" and a["core"].startswith("AIV") \
                and b["core"].startswith("AIV"):
            if a["lo"] != b["lo"]:          # offset per lane already, but the windows still overlap
                fix = (f"the two Vector cores' windows of this {a['op']} start {abs(a['lo'] - b['lo'])} bytes "
                       f"apart but each spans {a['hi'] - a['lo']}: the per-lane offset is there, the windows "
                       "are not disjoint - check the offset's unit (a row offset times the tensor's row length) "
                       "and the window's shape and row stride (a column half needs the tensor's row stride, "
                       "not its own width), or let one core write it")
            else:
                fix = (f"both Vector cores run this {a['op']} on the same bytes: give each its own part "
                       "(e.g. offset the rows or columns by get_subblockid(), as the split halves the tile), "
                       "or let one core write it")
        # the other access was not ordered before a SET that does reach this core (had the SET
        # waited for it, its epoch would be one this core's accesses are ordered after): the
        # fix is to make that SET wait; else no signal orders the two at all (the fix above)
        if len(prev) > 10 and core.vclock is not None and core.vclock[prev[3]] >= prev[10][3]:
            end, at, g = prev[10][:3]
            pipe = f"PIPE_{GM_PIPES[g].name}" if g is not None else "its pipe"
            rule = ("a SET orders only the accesses of its own pipe and those a tile dependency, "
                    "set_flag / wait_flag or pipe_barrier orders before it, whatever their timing"
                    if self.cluster.causal else
                    "it was still running when the SET was sent (`ptopipe check` also finds such a "
                    "signal when the access happens to finish first)")
            why.append(f"{other}'s {b['op']} runs on {pipe} and completes at cycle {end}; the SET at "
                       f"cycle {at} that follows it in {other}'s program does not wait for it: {rule} "
                       f"- on the device the signal may overtake the {b['op']}")
            fix = (f"make {other}'s signal wait for its {b['op']}: pipe_barrier(PIPE_ALL) (or a "
                   f"set_flag / wait_flag from {pipe} to the signalling pipe) between them"
                   + (", or push a tile computed from the loaded one" if b["access"] == "read" else ""))
        barrier = self._barrier_waiting(a, b)
        if barrier is not None:
            waiter, late, at = barrier
            what += (f"; {waiter} waits at its SYNCALL ({at}) for {late}, which made its {a['op'] if late == a['core'] else b['op']} "
                     "without having reached a SYNCALL")
            why.append(f"a SYNCALL orders what each participant does before it against what every participant "
                       f"does after it; {late} has not reached one, so the barrier orders nothing here - and "
                       f"should {late} never reach it, {waiter} waits at it for ever (a deadlock on the device)")
            fix = (f"put a SYNCALL that every core of its core_type reaches between {b['core']}'s {b['op']} and "
                   f"{a['core']}'s {a['op']}: not under a core- or lane-dependent branch (e.g. "
                   f"{lane_branch(a['where'])}) nor after an early return, and as many times on every core")
        return DataRaceError(
            what, where=a["where"], details="\n".join([line(a), line(b)] + why), fix=fix,
            findings=[{"kind": "data_race", "type": kind, "access": a, "other": b,
                       "order": "write-after-read" if war is not None else None,
                       "barrier": None if barrier is None else {"waiter": barrier[0], "for": barrier[1],
                                                                "where": barrier[2]}}])

    def _barrier_waiting(self, a: dict, b: dict):
        """(waiting core, awaited core, SYNCALL location) of a core blocked at a SYNCALL for one
        of the two racing cores (which went on to the racing access without reaching it); None
        when no barrier waits for either."""
        names = (a["core"], b["core"])
        found = [(c.name, c.waiting.flag.sender.name, str(c.where())) for c in self.cluster.cores
                 if c.state is CoreState.BLOCKED and c.waiting is not None and c.waiting.flag.id == SYNCALL_FLAG
                 and c.waiting.flag.sender.name in names and c.waiting.flag.sender.waiting is None]
        # (a racing core's own barrier first: the message then names both ends of the race)
        found.sort(key=lambda f: f[0] not in names)
        return found[0] if found else None

    def _write_after_read(self, core, a: dict, b: dict, prev):
        """A race of a read and a later write of another core - the write is later in the
        simulated order (``a``, the access being made, is the write), or the write replaced
        an earlier one of the same bytes that the reader is ordered after (a reused buffer,
        rewritten before its reader was done: ``a`` is the read, made after the write only
        in the simulated order) - as a function of (memory, lo, hi) giving (what, why, fix);
        None for any other race."""
        if a["access"] == b["access"]:
            return None
        w, r = (a, b) if a["access"] == "write" else (b, a)
        reused = w.get("reused")
        if reused is None:
            # a first write of the bytes, unordered with a read: nothing says which was meant
            # first (a hand-off missing its signal reads as a write after the read too)
            return None
        if w is b and reused[0] > core.vclock[prev[3]]:
            # the reader (this core) must be ordered after the write's predecessor
            return None

        def nth(d):
            return f"{ordinal(d['nth'])} " if d.get("nth") else ""

        def text(mem, lo, hi):
            wn, rn = nth(w), nth(r)
            what = (f"data race (write-after-read) on {mem}: {w['core']}'s {wn}{w['op']} at {line_of(w['where'])} "
                    f"writes bytes that {r['core']}'s {rn}{r['op']} at {line_of(r['where'])} reads, and nothing "
                    "orders the write after the read")
            why = [f"overlap within [{lo:#x}, {hi:#x})"]
            if reused is not None:
                before = f"the {ordinal(reused[1])} {w['op']}" if reused[1] else f"an earlier {w['op']}"
                what += " - a reused buffer"
                why.append(f"{r['core']}'s {r['op']} reads what {before} wrote there (ordered before it); "
                           f"{w['core']}'s {wn}{w['op']} rewrites the buffer before any signal tells {w['core']} that "
                           f"{r['core']} is done with it: a write-after-read of a reused buffer")
            else:
                why.append(f"no flag SET->WAIT chain orders {r['core']}'s {r['op']} before {w['core']}'s {w['op']}")
            fix = (f"make {w['core']}'s {w['op']} wait for a signal {r['core']} sends after its {r['op']} (its "
                   "TFREE): take the buffer from the ring (TALLOC a GlobalTensor slot, TSTORE into it, TPUSH it; the "
                   "consumer TPOPs it, TLOADs and TFREEs: the next TALLOC of the slot waits for that TFREE), or "
                   "give the buffer more copies than the ring has slots (SlotNum + 1): a copy is then rewritten "
                   "only after a TPUSH that waited for its reader's TFREE")
            return what, why, fix
        return text
