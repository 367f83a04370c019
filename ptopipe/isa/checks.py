"""The checkers' isa-level half: ring-slot accesses for the happens-before checker,
the address flow's slot views (a read or write of a popped slot after its TFREE, a write of
a TALLOCed slot after its TPUSH - by the pointer's slot generation, or by address for a
pointer that lost it, as a C++ kernel's does), flags left over at kernel end (what may
be left is the protocol model's call), and reads of tile bytes nothing wrote (each core's
:class:`~ptopipe.isa.unwritten.UnwrittenReads`: a warning, and an error for an accumulating
matmul onto such an Acc tile).

:class:`KernelChecks` extends the sim-level :class:`~ptopipe.sim.race.HappensBefore`
checker: a race on a ring slot is a protocol violation (the slot was reused before the
consumer's TFREE reached the producer), reported as a :class:`ProtocolError`.
"""
from __future__ import annotations

from ..arch import MemSpace
from ..arch.vocab import C2V, V2C, PlatformID
from ..errors import DataRaceError, KernelError, MemoryConflictError, ProtocolError
import sys

from ..sim.location import is_cpp, is_internal, is_pto
from ..sim.pipesync import event_words
from ..sim.porder import GM_PIPES, SlotReads
from ..sim.race import HappensBefore, changes_shared, clipped_ranges, loc_text, gm_region, overlap, region_of_rows
from .pipe import SlotPtr
from .pipe.diagnostics import released_by
from .regions import placed_at
from .unwritten import UnwrittenReads
from ..protocol.geometry import ONE_LANE, ONE_LANE_CPP, two_lanes_fix_pto
from ..protocol.slots import pop_band, push_band


def two_lanes_fix(cluster, ch, where) -> str:
    """How to stop both Vector lanes of V2C pipe ``ch`` pushing the whole slot (a fix text at
    line ``where``; a ``.pto`` line: :func:`~ptopipe.protocol.geometry.two_lanes_fix_pto`).  A C++ TPipe's IsNoSplit gives the pipe one lane only where the device
    does (A5, :func:`~ptopipe.protocol.model.nosplit_one_lane`); elsewhere (A2A3: the Cube's ready wait counts both lanes,
    CV_CORES_SYNC) both lanes must push, whatever IsNoSplit says."""
    if is_pto(where):
        return two_lanes_fix_pto(cluster.platform.id is PlatformID.PLATFORM_A5)   # (ptoas: one lane there)
    fix = ("split the tile between the lanes (TILE_UP_DOWN / TILE_LEFT_RIGHT: each lane pushes its part), "
           "or let one lane replay the handshake with an empty valid shape (SetValid(0, 0))")
    if not is_cpp(where):
        return f"{fix}, or give the pipe one lane ({ONE_LANE})"
    if ch.model.nosplit_lane0:
        return f"{fix}, or give the pipe one lane ({ONE_LANE_CPP})"
    return (f"{fix}: with {ch_protocol(cluster)} the Cube waits for the ready signal of both lanes on every pipe "
            "(TPipe's IsNoSplit changes no flag there), so both lanes push each tile")


def ch_protocol(cluster) -> str:
    """'pto-isa on a2a3': the run's protocol and platform, for messages."""
    return f"{cluster.context.protocol_name} on {cluster.platform.name}"


class _StateCell:
    """A ring slot's per-bucket records seen as the page bucket dict that
    ``HappensBefore.inflight`` entries update (``get`` / item assignment by bucket)."""
    __slots__ = ("state",)

    def __init__(self, state: list):
        self.state = state

    def get(self, key):
        return self.state[key]

    def __setitem__(self, key, rec) -> None:
        self.state[key] = rec


class KernelChecks(HappensBefore):
    """Happens-before checker plus the protocol-level checks that need ISA objects."""

    recordable = True

    def __init__(self, cluster):
        super().__init__(cluster)
        self._ring_regions: dict = {}
        self._slot_state: dict = {}     # (memory, pipe, tag) -> latest record per core and kind
        self._rings: dict = {}          # id(memory) -> [(lo, hi, id(channel), slot state, memory)]
        self._shared_rings: set = set() # channels whose ring bytes user GlobalTensors touched
        self._ring_span: dict = {}      # id(memory) -> [lowest, highest) byte of its rings' slots
        # gm_access computes the region and location inline (the run's fast paths; off, it is
        # HappensBefore.gm_access, which tests/isa/test_fast_paths.py compares with)
        self._inline_gm = cluster.context.fast_paths
        # (channel name, tag, core index) -> the TFREE whose SET did not wait for a read of
        # the slot (free_unordered), for the race report
        self._unordered_free: dict = {}
        # (channel name, TFREE location) -> (core, channel, read op, read location, read pipe):
        # frees sent under a read no pushed tile has yet raced (warned at a clean end)
        self._latent_frees: dict = {}
        # core index -> [SlotView] of the address flow's slots it TALLOCed / popped (slot_view)
        self._views: dict = {}
        for c in cluster.cores:
            if c.porder is not None:
                c.porder.slot_read = self._slot_reader(c)
        for c in cluster.cores:         # each core's reads of tile bytes nothing wrote (core.unwritten)
            UnwrittenReads(c)

    @staticmethod
    def _slot_reader(core):
        """``PipeOrder.slot_read`` of ``core``: remember, on the slot, the latest read per GM
        pipe of a tile bound to a ring slot (zero-copy, or a view into it)."""
        def slot_read(tile, g, end, name):
            slot, gen = tile.binding
            if slot.gen != gen:
                return                      # a use after free: reported by the operand check
            r = slot.reads
            if r is None or r[0] != gen:
                r = slot.reads = [gen, {}]
            r[1][g] = (end, name, core.where())
        return slot_read

    def watch_slot_reads(self, core) -> None:
        """``core`` pops from a ring whose free SET follows only its own pipe: without the
        causal order (which records them itself) record the reads of its popped tiles on GM
        pipes from now on (:class:`~ptopipe.sim.porder.SlotReads`), for :meth:`free_unordered`."""
        if core.porder is None and "slot_reads" not in core.isa:
            core.isa["slot_reads"] = SlotReads(core, self._slot_reader(core))

    def free_unordered(self, core, ch, tag: int, tile, order, free_loc, at: int) -> None:
        """A TFREE of ``tile`` (bound to slot ``tag`` of local ring ``ch``) whose free SET
        carries ``order`` (its pipe's vector, sim.porder) and follows nothing else
        (``ch.free_after_readers`` False): a read of the slot on a GM pipe not ordered
        before that pipe is recorded as still in flight, so the SET does not order it and a
        producer write after the SET races it.  Without the causal order (``order`` None: a
        plain run) a read is ordered when it has completed by the SET's cycle ``at``, as the
        race checker judges every SET there (HappensBefore.on_set)."""
        b = tile.binding
        if b is None:
            return
        slot, gen = b
        r = slot.reads
        if r is None or r[0] != gen or slot.gen != gen:
            return
        late = [(end, g, name, where) for g, (end, name, where) in r[1].items()
                if (order[g] if order is not None else at) < end]
        if not late:
            return
        end, g, name, where = max(late, key=lambda x: x[0])
        self._unordered_free[(ch.name, tag, core.index)] = free_loc
        if not self._latent_frees:
            self.cluster.finishers.append(self._warn_latent_frees)
        self._latent_frees.setdefault((ch.name, loc_text(free_loc)), (core, ch, name, loc_text(where), g, slot, gen))
        self.ring_access(core, ch, tag, False, name, where, tile.rows, tile.cols, tile.item, 0,
                         inflight=(end, g))

    def gm_access(self, core, gt, write: bool, op: str, where=None, end=None, pipe=None, work=None) -> bool:
        p = gt.ptr
        if p.__class__ is SlotPtr or self._views:      # (the hot path's common case skips the call)
            self._through_slot(core, gt, p, write, op)
        # HappensBefore.gm_access (where, gm_region, region_of_rows), inline: the hot path of
        # every checked TLOAD / TSTORE.  The same region and location token as those give:
        # a row-major tensor's region is rows of cols*itemsize bytes every row-stride bytes
        # (contiguous when the stride is at most the row); tests/isa/test_fast_paths.py compares both.
        if not self._inline_gm:
            return super().gm_access(core, gt, write, op, where if where is not None else self.where(core, 2),
                                     end, pipe, work)
        g = gt._geom2
        if g is not None and g[2] and g[1][1] == gt.dtype.itemsize:
            (rows, cols), (rs, cs), _ = g
            lo = p.addr
            rowlen = cols * cs
            if rows == 1 or 0 <= rs <= rowlen:
                hi, strided = lo + (rows - 1) * (rs if rs > 0 else 0) + rowlen, None
            else:
                hi, strided = lo + (rows - 1) * rs + rowlen, (lo, rows, rowlen, rs)
        else:
            reg = gm_region(gt)
            if reg is None:
                return False
            lo, hi, strided = reg
        if where is None:
            where = core.loc_override
            if where is None:
                f = sys._getframe(2)          # gm_access <- TLOAD / TSTORE <- the kernel line
                code = f.f_code
                where = (code, f.f_lineno) if not is_internal(code) else self.where(core, 2)
        # described only if a race is reported (gt's address may change after this access)
        return self.access(core, self.cluster.gm, lo, hi, strided, write, op, where, self.gm_label(core, gt, p, op, where),
                           None, end, pipe, work)

    def gm_indexed(self, core, gt, region, write: bool, op: str, end=None, pipe=None, work=None) -> bool:
        self._through_slot(core, gt, gt.ptr, write, op, region)
        return super().gm_indexed(core, gt, region, write, op, end, pipe, work)

    def _through_slot(self, core, gt, p, write: bool, op: str, region=None) -> None:
        """A GM access through ``gt`` (pointer ``p``; ``region``: the bytes of an indexed one)
        of a slot freed since it was popped is a use after free; one of a popped GM view is
        checked against the core's views (:meth:`_view_access`)."""
        if p.__class__ is SlotPtr and p.slot.gen != p.gen:
            raise _use_after_free(core, gt, op, p.slot, p.gen, p.pipe)
        if self._views:
            vs = self._views.get(core.index)
            if vs:
                self._view_access(core, gt, vs, write, op, region)

    def acc_read(self, core, op: str, c_in) -> None:
        """Matmul ``op`` of ``core`` accumulates onto Acc tile ``c_in``, which some instruction of
        this launch must have written (isa.unwritten): L0C is not cleared at a launch, so on the
        device it holds what the last kernel left (the simulator's zeros, or a relaunch's carried
        memory, would hide a K loop that forgot its first TMATMUL).  An error, not the warning of
        another read of unwritten bytes: the result is wrong wherever the kernel runs."""
        if core.unwritten.covered(c_in):
            return
        first = op.replace("_ACC", "")
        start = (f"{first} (or {first}_BIAS)" if not op.endswith("_MX") else
                 f"{op}(c, a, a_scale, b, b_scale) without c_in")
        raise KernelError(
            f"{op} accumulates onto {c_in.describe()}, whose bytes no instruction of this launch wrote: L0C "
            "is not cleared when a kernel starts, so on the device it holds what the last kernel left "
            "(here it holds zeros, or a relaunch's leftovers, and the result looks right)",
            where=str(core.where()),
            fix=f"start the accumulation with {start} into the Acc tile - the first step of the K loop - "
                f"and {op} for the steps after it")

    def slot_view(self, core, gt, op: str, pipe: str, tag: int, loc, slot=None, others=(), bounds=None) -> None:
        """``op`` (TALLOC, or a GlobalTensor TPOP: then ``slot`` is the popped Slot) handed
        ``core`` the view ``gt`` of slot ``tag`` of ``pipe``: its later accesses to those bytes
        are judged by the slot's life (:meth:`_view_access`) whatever pointer they go through.
        ``others``: the other lanes' parts of the slot a split TALLOC leaves them ((lo, hi,
        rows, lane), ...), which the core must not touch while the view lives; ``bounds``: the
        :class:`~ptopipe.isa.pipe.flows.SlotBounds` of the view's pointer, which words that report.
        Views of the core's older TALLOCs / pops that these bytes overlap end here."""
        reg = gm_region(gt)
        if reg is None:
            return
        v = SlotView(*reg, op, pipe, tag, loc, slot)
        v.others, v.bounds = others, bounds
        vs = self._views.setdefault(core.index, [])
        vs[:] = [o for o in vs if not overlap(v.lo, v.hi, v.rows, o.lo, o.hi, o.rows)] + [v]

    def slot_pushed(self, core, pipe: str, tag: int, loc) -> None:
        """``core``'s TPUSH at ``loc`` committed its TALLOCed slot ``tag`` of ``pipe``."""
        for v in self._views.get(core.index, ()):
            if v.slot is None and v.pushed is None and v.pipe == pipe and v.tag == tag:
                v.pushed = loc
                return

    def _view_access(self, core, gt, views: list, write: bool, op: str, reg=None) -> None:
        """An access of ``core`` through ``gt`` (``reg``: of the bytes of it an indexed op picks,
        else all of them) to the bytes of a slot view it had: a popped slot's after its TFREE is
        a use after free, a TALLOCed slot's write after its TPUSH a write into a slot the
        consumer may be reading."""
        for v in views:
            if v.others:                    # a split TALLOC's: the other lanes' parts of the slot
                if reg is None:
                    reg = gm_region(gt)
                    if reg is None:
                        return
                for lo, hi, rows, lane in v.others:
                    if overlap(reg[0], reg[1], reg[2], lo, hi, rows):
                        raise _other_lanes_part(core, gt, write, op, v, reg, lane)
            sl = v.slot
            if sl is not None:
                if sl.gen == v.gen:
                    continue
            elif v.pushed is None or not write:
                continue
            if reg is None:
                reg = gm_region(gt)
                if reg is None:
                    return
            if not overlap(reg[0], reg[1], reg[2], v.lo, v.hi, v.rows):
                continue
            if sl is not None:
                raise _use_after_free(core, gt, op, sl, v.gen, v.pipe)
            here = str(core.where())
            raise ProtocolError(
                f"write into a pushed slot: {op} through {gt.describe()} writes slot {v.tag} of {v.pipe}, which "
                f"{core.name} committed by the TPUSH at {v.pushed} (TALLOC at {v.loc}): the consumer may "
                "already be reading it",
                where=here, details=f"TALLOC at {v.loc}\nTPUSH at {v.pushed}\n{op} at {here}",
                fix=f"move the {op} before the TPUSH at {v.pushed}: every TSTORE into a TALLOCed slot comes "
                    "before its TPUSH (the next tile goes into the next TALLOC)",
                findings=[{"kind": "write_after_push", "slot": v.tag, "pipe": v.pipe, "op": op, "where": here,
                           "pushed_at": str(v.pushed)}])

    def ring_access(self, core, ch, tag: int, write: bool, op: str, loc, rows: int, cols: int,
                    item: int, split, inflight=None, work=None, valid=None) -> bool:
        """A TPUSH (write) / TPOP or TFREE (read) of ring slot ``tag`` of channel ``ch`` with a tile
        of static shape ``rows x cols`` whose ``valid`` shape moves (None: the static one).

        Ring accesses are checked per slot (the latest read and write of each core), which
        is O(1); a GM access through a GlobalTensor that overlaps a ring also checks the
        slots it touches, and from then on that ring's accesses are recorded in the pages.
        ``inflight``: (end cycle, GM pipe entry) of a read that the core's next SETs order
        only if it happens before them (HappensBefore.on_set).  ``work``: a TPUSH's numpy
        work, not queued yet: two producer lanes pushing identical bytes into one slot
        unordered pass with a warning, as two such TSTOREs do (:meth:`HappensBefore.access`);
        True is returned when the work was applied here (the caller queues nothing)."""
        key = (ch.name, tag, write, core.index, rows, cols, item, split, valid)
        regs = self._ring_regions.get(key)
        if regs is None:
            regs = self._ring_regions[key] = self._ring_plan(core, ch, tag, write, rows, cols, item, split, valid)
        c = core.index
        vc = core.vclock
        mine = 2 * c + write
        applied = False
        try:
            for mem, lo, hi, rws, ring, state, checks, chid in regs:
                rec = (lo, hi, rws, c, vc[c], write, op, loc, None, ring)
                for b, k in checks:
                    r = state[b]
                    if r is not None and r[4] > vc[k] and overlap(lo, hi, rws, r[0], r[1], r[2]):
                        if work is None or not r[5]:
                            raise self.race(core, mem, rec, r)
                        changed = self._apply_work(mem, lo, hi, work)
                        applied = True
                        if changes_shared(changed, lo, rec, r):
                            raise self.race(core, mem, rec, r)
                        self._twice(core, mem, rec, r)
                old = state[mine]
                if old is not None and (old[0] != lo or old[1] != hi or old[2] is not rws and old[2] != rws) \
                        and chid not in self._shared_rings \
                        and not (old[2] is None and rws is None and lo <= old[0] and old[1] <= hi):
                    # a slot keeps its latest access per core and kind, which stands for the
                    # earlier ones only when it covers their bytes: a smaller tile after a
                    # larger one moves the ring's accesses to the pages
                    self._share(chid)
                state[mine] = rec
                if inflight is not None:
                    self.inflight[c].append((inflight[0], inflight[1], _StateCell(state), mine, [0], rec))
                if chid in self._shared_rings:
                    applied = self.access(core, mem, lo, hi, rws, write, op, loc, None, ring, work=work) or applied
        finally:
            self._applied = None
        return applied

    def _share(self, chid) -> None:
        """From now on ring ``chid``'s accesses are recorded in the pages as well (a user access
        met its bytes, or a slot's latest record no longer stands for the earlier ones): its
        slots' records so far go there first, so that a later record replacing one in a slot
        does not take the bytes the earlier one moved out of the checks."""
        if chid in self._shared_rings:
            return
        self._shared_rings.add(chid)
        for rings in self._rings.values():
            for _lo, _hi, cid, state, mem in rings:
                if cid == chid:
                    for rec in state:
                        if rec is not None:
                            self.keep(mem, rec)

    def _ring_plan(self, core, ch, tag, write, rows, cols, item, split, valid) -> list:
        # only the channel's cores ever record ring accesses of its slots, and only as
        # producer writes / consumer reads: check just those buckets
        aivs = {1 + p for p in ch.peers}
        producers, consumers = ({0}, aivs) if ch.way == C2V else (aivs, {0})
        checks = [(b, k) for b, k in self.others[2 * core.index + write]
                  if k in (producers if b & 1 else consumers)]
        out = []
        for mem, reg in self._slot_regions(core, ch, tag, write, rows, cols, item, split, valid):
            skey = (id(mem), ch.name, tag)
            state = self._slot_state.get(skey)
            if state is None:
                state = self._slot_state[skey] = [None] * self.nbuckets
                base = ch.gm_base if ch.in_gm else ch.local_base
                lo, hi = base + tag * ch.slot_size, base + (tag + 1) * ch.slot_size
                self._rings.setdefault(id(mem), []).append((lo, hi, id(ch), state, mem))
                span = self._ring_span.setdefault(id(mem), [lo, hi])
                span[0], span[1] = min(span[0], lo), max(span[1], hi)
                pages = self.mems.get(id(mem), ())
                if any(pg in pages for pg in range(lo >> 12, ((hi - 1) >> 12) + 1)):
                    self._share(id(ch))                 # user accesses came first
            out.append((mem, reg[0], reg[1], reg[2], (ch.name, tag), state, checks, id(ch)))
        return out

    def access(self, core, mem, lo, hi, rows, write, op, where, label=None, ring=None, end=None,
               pipe=None, work=None) -> bool:
        rings = self._rings.get(id(mem)) if ring is None else None
        # an access outside the span of every ring slot of the memory touches none of them
        if rings and lo < self._ring_span[id(mem)][1] and self._ring_span[id(mem)][0] < hi:
            c = core.index
            vc = core.vclock
            rec = (lo, hi, rows, c, vc[c], write, op, where, label, ring)
            for rlo, rhi, chid, state, _m in rings:
                if rlo < hi and lo < rhi:
                    self._share(chid)
                    for b, k in self.others[2 * c + write]:
                        r = state[b]
                        if r is not None and r[4] > vc[k] and overlap(lo, hi, rows, r[0], r[1], r[2]):
                            raise self.race(core, mem, rec, r)
        return super().access(core, mem, lo, hi, rows, write, op, where, label, ring, end, pipe, work)

    def _slot_regions(self, core, ch, tag, write, rows, cols, item, split, valid=None) -> list:
        """``(memory, region)`` of the bytes a TPUSH (``write``) or TPOP / TFREE of ``core`` moves
        of slot ``tag``: where the protocol puts the tile (protocol.slots: the bands the data
        plan moves, isa.pipe.plans), a local ring's pop its tile in the core's own slot."""
        cl = self.cluster
        kind, static = ch.model.slot_placement, (rows, cols)
        valid = static if valid is None else valid
        off = tag * ch.slot_size
        if write:
            if ch.way == C2V and not ch.in_gm:      # each consumer lane's slot in its UB
                bands = [(cl.aiv(p).memory(MemSpace.UB), ch.local_base,
                          push_band(kind, C2V, False, split, static, valid, p)) for p in ch.lanes]
            else:
                mem, base = (cl.gm, ch.gm_base) if ch.in_gm else (cl.aic.memory(MemSpace.L1), ch.local_base)
                bands = [(mem, base, push_band(kind, ch.way, ch.in_gm, split, static, valid, core.subblock))]
        elif ch.in_gm:
            bands = [(cl.gm, ch.gm_base, pop_band(kind, ch.way, True, split, static, valid,
                                                  core.subblock if ch.way == C2V else 0))]
        else:                                       # popped in place: the tile over its slot
            mem = core.memory(MemSpace.UB) if ch.way == C2V else cl.aic.memory(MemSpace.L1)
            return [(mem, r) for r in (region_of_rows(ch.local_base + off, 1, rows * cols * item, 0),)
                    if r is not None]
        out = [(mem, region_of_rows(base + off + b.offset * item, b.rows, b.cols * item, b.pitch * item))
               for mem, base, b in bands]
        return [(m, r) for m, r in out if r is not None]

    def race_error(self, core, mem, a, b, cur, prev):
        ring = cur[9] or prev[9]
        if ring is None:
            e = super().race_error(core, mem, a, b, cur, prev)
            # a consumer whose TFREE is a no-op (pto-isa, GM ring: its tile TPOPs freed the
            # slot; a GlobalTensor TPOP does not, its TFREE signals): a TFREE after its access
            # signals nothing, so it orders nothing
            noop = sorted({ch.name for ch in self.cluster.state.channels.values()
                           if ch.pop_frees and not ch.tfree_frees
                           and any(sd.core.name == b["core"] and sd.role == "consumer" and sd.self_freed
                                   for sd in ch.sides.values())})
            if noop:
                e.fix = (f"{e.fix}.  Note: {b['core']}'s TFREE of {', '.join(noop)} signals nothing here "
                         f"({ch_protocol(self.cluster)} frees a GM slot inside its TPOP), so it cannot "
                         "order the access: send a separate 'done' token (a TPUSH the peer pops) after it")
                e.args = (e.render(),)
            return e
        pipe, tag = ring
        if mem is not self.cluster.gm and (cur[9] is None or prev[9] is None):
            return self._tile_in_ring_error(mem, pipe, tag, a if cur[9] is None else b, b if cur[9] is None else a)
        w, r = (a, b) if a["access"] == "write" else (b, a)
        ch = next((c for c in self.cluster.state.channels.values() if c.name == pipe), None)
        rr = prev if r is b else cur
        if len(rr) > 10 and ch is not None and not ch.free_after_readers and r["access"] == "read":
            return self._unordered_free_error(ch, tag, w, r, rr)
        side = next((sd for sd in ch.sides.values() if sd.core.name == w["core"]), None) if ch is not None else None
        skipped = next((sd for sd in ch.sides.values() if sd.role == "consumer" and not sd.wait
                        and sd.core.name in (a["core"], b["core"])), None) if ch is not None else None
        if skipped is not None:
            return self._skipped_wait_error(ch, tag, skipped, w, r)
        wrec = cur if w is a else prev
        raw = w["ring"] is None and not self._through_pipe(wrec)
        ordered_by = "no TFREE -> free-flag WAIT chain orders the consumer's use of the slot before the " \
                     "producer's next write to it"
        if raw:
            # the pipe's flags order only the pipe's own writes (TPUSH, TSTOREs into a TALLOCed
            # slot): a write through any other pointer into the ring's bytes is ordered by none
            ordered_by = (f"{w['core']}'s {w['op']} writes the ring's buffer through a view no TALLOC or TPOP "
                          "handed out: no flag of the pipe orders it")
            fix = (f"do not write the ring's buffer directly: {w['core']}'s {w['op']} at {w['where']} writes "
                   f"slot {tag} through a raw view of it, which the pipe's ready / free flags do not order with "
                   f"{r['core']}'s {r['op']} - keep other data in a buffer of its own, and write a slot only by "
                   "TPUSH (or by TSTOREs into a TALLOCed slot before its TPUSH)")
        else:
            fix = ("the producer must wait for the consumer's free signal of this slot before reusing it"
                   + (f" ({ch.model.overwrite_fix(ch, getattr(side, 'allocate', True))})" if ch is not None
                      else ""))
        if a["access"] == b["access"] == "write" and a["core"] != b["core"] and ch is not None and ch.way == V2C:
            # two producer lanes on the same bytes of a V2C slot: only a NO_SPLIT tile does that
            what = (f"slot {tag} of {pipe} written by both producer lanes: {a['core']} {a['op']} and "
                    f"{b['core']} {b['op']} push different TILE_NO_SPLIT tiles, each the whole slot (the same "
                    "bytes), so what the consumer reads depends on which lands last")
            fix = two_lanes_fix(self.cluster, ch, a["where"])
        elif a["access"] == b["access"] == "write":
            what = (f"slot {tag} of {pipe} written twice with no order between the writes: {a['core']} "
                    f"{a['op']} and {b['core']} {b['op']} write the same bytes")
        elif r["op"] == "TFREE":        # a local-ring tile is in use until its TFREE
            what = (f"slot {tag} of {pipe} reused before freed: {w['core']} {w['op']} writes it while "
                    f"{r['core']}'s TFREE of the previous tile is not ordered before the write")
        elif w is a:
            what = (f"slot {tag} of {pipe} written before it was read: {w['core']} {w['op']} writes it while "
                    f"{r['core']}'s {r['op']} of the previous tile is not ordered before the write")
        else:
            what = (f"slot {tag} of {pipe} read before it was written: {r['core']} {r['op']} reads it while "
                    f"{w['core']}'s {w['op']} is not ordered before the read (no ready signal between them)")
        return ProtocolError(
            what,
            where=a["where"],
            details="\n".join([f"{a['core']:5s} {a['access']:5s} {a['op']:6s} at {a['where']}",
                               f"{b['core']:5s} {b['access']:5s} {b['op']:6s} at {b['where']}", ordered_by]),
            fix=fix,
            findings=[{"kind": "slot_reuse", "pipe": pipe, "slot": tag, "access": a, "other": b,
                       "raw_write": raw}])

    def _tile_in_ring_error(self, mem, pipe: str, tag: int, t: dict, ring: dict) -> MemoryConflictError:
        """A kernel tile that shares bytes with slot ``tag`` of a consumer-local ring (isa.regions)
        is used with no order between its use (``t``) and a ring transfer of the slot (``ring``):
        reported at the tile's use, whichever of the two the run met second (the ring's side is
        correct code), naming the TASSIGN that placed the tile there."""
        placed = next((placed_at(c, sp, t["lo"], t["hi"]) for c in self.cluster.cores if c.name == t["core"]
                       for sp, m in c.memories.items() if m is mem), None)
        return MemoryConflictError(
            f"{t['core']}'s {t['op']} {t['access']}s a tile that shares bytes with slot {tag} of {pipe} "
            f"({mem.label}[{max(t['lo'], ring['lo']):#x}, {min(t['hi'], ring['hi']):#x})), and no flag of the pipe "
            f"orders it with {ring['core']}'s {ring['op']} of that slot: on the device the {ring['op']} may land "
            f"{'between the tile being written and read' if ring['access'] == 'write' else 'while the tile is written'}",
            where=t["where"],
            details="\n".join(([f"the tile was assigned at {placed}"] if placed is not None else []) +
                              [f"{t['core']:5s} {t['access']:5s} {t['op']:6s} at {t['where']} (a tile placed in the ring)",
                               f"{ring['core']:5s} {ring['access']:5s} {ring['op']:6s} at {ring['where']}"]),
            fix=f"move the tile out of the ring of {pipe} (SlotNum x SlotSize from the consumer buffer): the "
                "pipe's flags order only its own transfers, not a tile placed in its bytes" + next(
                    (c.unused_buf_note() for c in self.cluster.state.channels.values() if c.name == pipe), ""),
            findings=[{"kind": "tile_in_ring", "pipe": pipe, "slot": tag, "access": t, "other": ring}])

    def twice_text(self, mem, a: dict, b: dict, cur, prev) -> str | None:
        ring = cur[9] or prev[9]
        if ring is None:
            return super().twice_text(mem, a, b, cur, prev)
        pipe, tag = ring
        ch = next((c for c in self.cluster.state.channels.values() if c.name == pipe), None)
        if ch is not None and ch.ctrl and ch.lanes_fixed:
            return None     # pto-isa's control TMPipe: the Cube waits for every lane's word
        return (f"{a['core']} and {b['core']} both push a TILE_NO_SPLIT tile into slot {tag} of {pipe} (the "
                "whole slot, the same bytes) with no order between them: the tiles are identical, so the "
                "consumer reads the right data, but the work is done twice - "
                + (two_lanes_fix(self.cluster, ch, a["where"]) if ch is not None else
                   "split the tile between the lanes"))

    def _through_pipe(self, rec) -> bool:
        """Was the GM access ``rec`` made through a view of a slot the pipe handed out - a
        TALLOCed or GlobalTensor-popped slot (its SlotPtr, or, for a pointer that lost it as a C++
        kernel's does, the bytes of one of the core's slot views)?"""
        label = rec[8]
        if isinstance(label, tuple) and label[1].__class__ is SlotPtr:
            return True
        lo, hi, rows = rec[0], rec[1], rec[2]
        return any(overlap(lo, hi, rows, v.lo, v.hi, v.rows) for v in self._views.get(rec[3], ()))

    @staticmethod
    def _skipped_wait_error(ch, tag, side, w: dict, r: dict) -> ProtocolError:
        """A race on a slot whose consumer pops with its ready wait switched off
        (``cons.setWaitStatus(false)``): the consumer, not the producer, broke the order."""
        cons = side.core.name
        off = side.switched_off.get("wait")
        at = f" (setWaitStatus(false) at {off})" if off is not None else ""
        sl = side.slots[tag][0] if side.slots else None
        pop = sl.pop_loc if sl is not None and sl.pop_loc is not None else r["where"]
        return ProtocolError(
            f"{cons} pops slot {tag} of {ch.name} without waiting for its ready signal: its ready wait is "
            f"switched off{at}, so its TPOP is not ordered after {w['core']}'s {w['op']} of the slot",
            where=str(pop),
            details="\n".join([f"{r['core']:5s} {r['access']:5s} {r['op']:6s} at {r['where']}",
                               f"{w['core']:5s} {w['access']:5s} {w['op']:6s} at {w['where']}",
                               f"{cons}'s TPOP at {pop} does not WAIT on the ready flag"]),
            fix=f"keep {cons}'s ready wait on for every TPOP ("
                + (f"remove the setWaitStatus(false) at {off}" if off is not None else "do not switch it off")
                + ", or setWaitStatus(true) before popping): a TPOP must wait for the producer's ready signal; "
                "the producer's side of the handshake is not at fault",
            findings=[{"kind": "skipped_ready_wait", "pipe": ch.name, "slot": tag, "consumer": cons,
                       "access": r, "other": w}])

    def _warn_latent_frees(self, cluster) -> None:
        """A clean run's TFREEs whose SET did not wait for a read of the slot: no later push
        overwrote the slot under the read in this run - too few pushes to come back to it, or
        the one that came back was ordered after the read by another signal only in this run's
        timing (a plain run judges a SET by completion times; ``check`` by the causal order) -
        but the producer may - the race :meth:`_unordered_free_error` reports."""
        for (chname, free), (core, ch, op, where, g, slot, gen) in self._latent_frees.items():
            rp, fp = f"PIPE_{GM_PIPES[g].name}", f"PIPE_{ch.free_pipe.name}"
            ew = event_words(core)
            if slot.gen > gen + 1 or slot.state != "free":      # the slot was pushed again
                run = (f"a push came back to the slot in this run, after the {op} only by this run's timing - "
                       f"nothing orders the two on the device, where it may overwrite the slot under the {op} "
                       "(`ptopipe check`, or `run --causal`, reports the race)")
            else:
                run = f"no push came back to the slot in this run, but one that does would overwrite it under the {op}"
            cluster.warnings.append((
                f"{core.name}'s TFREE of {chname} signals the free from {fp} while its {op} at {where} "
                f"still reads the popped tile on {rp} ({ch_protocol(cluster)}: Consumer::free is one set on "
                f"{fp}); {run}; fix: {ew.call(ew.set, rp, fp, 0)} and {ew.call(ew.wait, rp, fp, 0)} "
                f"(or {ew.barrier}) between the {op} and the TFREE", free))

    def _unordered_free_error(self, ch, tag, w: dict, r: dict, rr) -> DataRaceError:
        """The producer overwrote a slot whose consumer read it on a GM pipe that its TFREE's
        SET does not wait for (``ProtocolModel.free_after_readers`` False)."""
        end, at, g = rr[10][:3]
        rp, fp = f"PIPE_{GM_PIPES[g].name}", f"PIPE_{ch.free_pipe.name}"
        core = next(c for c in self.cores if c.name == r["core"])
        free_loc = self._unordered_free.get((ch.name, tag, core.index))
        free = loc_text(free_loc) if free_loc is not None else "?"
        ew = event_words(core)
        return DataRaceError(
            f"slot {tag} of {ch.name} overwritten while still read: {r['core']}'s {r['op']} reads the popped "
            f"tile on {rp}, and its TFREE signals the free from {fp} without waiting for {rp} "
            f"({ch_protocol(self.cluster)}: Consumer::free is one set on {fp}), so {w['core']}'s "
            f"{w['op']} may overwrite the slot under the {r['op']}",
            where=free,
            details="\n".join([f"{r['core']:5s} read  {r['op']:6s} at {r['where']} (on {rp}, ends at cycle {end})",
                               f"{r['core']:5s} TFREE         at {free} (the free SET is sent from {fp})",
                               f"{w['core']:5s} write {w['op']:6s} at {w['where']}"]),
            fix=f"make the free wait for the {r['op']}: {ew.call(ew.set, rp, fp, 0)} and "
                f"{ew.call(ew.wait, rp, fp, 0)} (or {ew.barrier}) between the {r['op']} at "
                f"{r['where']} and the TFREE",
            findings=[{"kind": "data_race", "type": "read/write", "access": r, "other": w,
                       "unordered_free": free}])


class SlotView:
    """A view the address flow handed a core: ``[lo, hi)`` (``rows``: its strided rows, as
    :func:`~ptopipe.sim.race.gm_region` gives them) of slot ``tag`` of ``pipe``, by ``op`` at
    ``loc``; a popped view ends when ``slot``'s generation moves past ``gen`` (TFREE), a
    TALLOCed one (``slot`` None) at its TPUSH (``pushed``: that line)."""
    __slots__ = ("lo", "hi", "rows", "op", "pipe", "tag", "loc", "slot", "gen", "pushed", "others", "bounds")

    def __init__(self, lo, hi, rows, op, pipe, tag, loc, slot):
        self.lo, self.hi, self.rows, self.op, self.pipe, self.tag, self.loc = lo, hi, rows, op, pipe, tag, loc
        self.slot = slot
        self.gen = slot.gen if slot is not None else 0
        self.pushed = None
        self.others = ()        # a split TALLOC's: the other lanes' parts of the slot (slot_view)
        self.bounds = None      # its pointer's SlotBounds


def _other_lanes_part(core, gt, write: bool, op: str, v: SlotView, reg, lane: str) -> MemoryConflictError:
    """``op`` through ``gt`` (covering ``reg``) touches ``lane``'s part of the slot ``core``'s split
    TALLOC (V2C) or TPOP (C2V) ``v`` handed it only its own part of: the report a view through
    that pointer gets (:meth:`~ptopipe.isa.pipe.flows.SlotBounds.explain`), for a view made from
    any pointer."""
    lo, hi = reg[0], reg[1]
    view = f"{op} through {gt.describe()}"
    if v.bounds is not None:
        what, fix = v.bounds.explain(view, lo, hi - lo, gt.stride[3] * gt.item if gt.shape[3] > 1 else None)
    else:
        what = f"access out of bounds: {view} covers GM [{lo:#x}, {hi:#x}), in {lane}'s part of slot {v.tag} of {v.pipe}"
        fix = f"keep {core.name}'s accesses within its own part of the slot; {lane}'s part is {lane}'s"
    if v.op == "TPOP":          # a C2V slot the Cube filled: each lane's part is the lane's to read
        what += f" - {lane}'s part, which the Cube pushed for {lane}"
    elif write:
        what += (f" - {lane}'s part, which {lane} fills itself: the two lanes write the same bytes, and the Cube "
                 f"reads what this lane wrote as {lane}'s")
    else:
        what += f" - {lane}'s part, which {lane} fills"
    here = str(core.where())
    return MemoryConflictError(
        what, where=here, details=f"{v.op} at {v.loc} handed {core.name} its part of slot {v.tag}\n{op} at {here}",
        fix=fix, findings=[{"kind": "other_lanes_part", "slot": v.tag, "pipe": v.pipe, "lane": lane, "op": op,
                            "where": here, "talloc": str(v.loc)}])


def _use_after_free(core, gt, op: str, sl, gen: int, pipe: str) -> ProtocolError:
    """A ``op`` through ``gt`` of slot ``sl`` of ``pipe`` popped at generation ``gen`` and
    released since."""
    here = str(core.where())
    by = sl.free_loc if sl.free_gen == gen and sl.free_loc else None
    cause, why, order_fix = released_by(sl, gen, op)
    return ProtocolError(
        f"use after free: {op} through {gt.describe()} touches slot {sl.tag} of {pipe}, "
        f"which was {cause or 'released (TFREE)'} since it was popped{why}", where=here,
        details=f"popped at {sl.pop_loc}" if sl.pop_loc else None,
        fix=(order_fix or (f"move the {op} before the TFREE at {by}" if by else f"move the {op} before the TFREE"))
            + ": finish every TLOAD/TSTORE on the popped slot before TFREE (the producer may refill it after)",
        findings=[{"kind": "use_after_free", "slot": sl.tag, "pipe": pipe, "op": op,
                   "where": here, "popped_at": str(sl.pop_loc)}])


class WriteRecorder(KernelChecks):
    """:class:`KernelChecks` that also logs every write to GM (TSTORE, TPUSH into a GM ring)
    with its core, instruction and line - opt in (``run(record_writes=True)``): a golden
    mismatch re-runs the kernel with it to name the last writer of the first wrong element,
    so the default run pays nothing."""

    recordable = False

    def __init__(self, cluster):
        super().__init__(cluster)
        self.writes: list = []          # (lo, hi, rows, core, op, where, ring), oldest first

    def access(self, core, mem, lo, hi, rows, write, op, where, label=None, ring=None, end=None,
               pipe=None, work=None) -> bool:
        applied = super().access(core, mem, lo, hi, rows, write, op, where, label, ring, end, pipe, work)
        if write and ring is None and mem is self.cluster.gm:
            self.writes.append((lo, hi, rows, core.name, op, where, None))
        return applied

    def ring_access(self, core, ch, tag, write, op, loc, rows, cols, item, split, inflight=None,
                    work=None, valid=None) -> bool:
        applied = super().ring_access(core, ch, tag, write, op, loc, rows, cols, item, split, inflight, work,
                                      valid)
        if write and ch.in_gm:
            for mem, reg in self._slot_regions(core, ch, tag, write, rows, cols, item, split, valid):
                self.writes.append((reg[0], reg[1], reg[2], core.name, op, loc, (ch.name, tag)))
        return applied

    def last_writer(self, addr: int) -> dict | None:
        """The latest recorded write covering GM byte ``addr``: core, op, where, ring slot."""
        for lo, hi, rows, core, op, where, ring in reversed(self.writes):
            if lo <= addr < hi and \
                    any(a <= addr < b for a, b in clipped_ranges(lo, hi, rows, addr, addr + 1)):
                return {"core": core, "op": op, "where": loc_text(where), "ring": ring}
        return None


# ---------------------------------------------------------------------------------------
# kernel end
# ---------------------------------------------------------------------------------------
def flag_leaks(cluster) -> tuple:
    """(errors, warnings) about flags left non-zero at kernel end.

    Normal (not reported): seed-003 free pre-signals left over, pto-isa's sparse free
    credits.  Errors: ready signals never consumed (data pushed but never popped).
    Warnings: flags SET outside any pipe and never waited for."""
    errors, warnings = [], []
    for f in cluster.flags():
        if f.count <= 0:
            continue
        ch = f.owner
        if ch is None:
            warnings.append((f"{f.name} left at count {f.count}: SETs never consumed by a WAIT", f.set_at or f.sync_at))
            continue
        if any(f in fl for p, fl in ch.ready_flags.items() if p not in ch.cfg.sim_lanes):
            errors.append((f"{f.name} (ready of {ch.name}) left at count {f.count}: data pushed but never popped",
                           None))
        elif ch.model.free_left_max is not None and f.count > ch.model.free_left_max:
            warnings.append((f"{f.name} (free of {ch.name}) left at count {f.count} "
                             f"(expected at most {ch.model.free_left_max})", None))
    return errors, warnings

