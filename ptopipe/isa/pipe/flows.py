"""The address flow (TALLOC -> TSTORE... -> TPUSH(GlobalTensor); TPOP(GlobalTensor) ->
TLOAD... -> TFREE) and the control flow of a DIR_V2C_CTRL pipe (one 32-bit value per
slot), plus :class:`SlotPtr`, the GM pointer a popped slot hands out so that an access
after TFREE is reported as a use-after-free, and :class:`SlotBounds`: a TALLOCed or popped
slot's pointer is bounded by its slot (or its lane's split part), so that a view past it -
into the next slot, past the ring into the next argument - is a MemoryConflictError at the
access (the check is :meth:`GlobalTensor.matrix`'s, as for a run argument's pointer).
A TALLOCed or popped view is also registered with the checker by address
(``KernelChecks.slot_view``), so that a use after TFREE or a write after TPUSH through a
pointer that lost its slot (a C++ kernel's) is reported too; a popped view must fit its slot
at the TPOP, as a TALLOCed one must; and the V2C way of a two-way pipe is refused where the
library addresses it at the C2V way's slots (``ProtocolModel.both_address_error``).
"""
from __future__ import annotations

from dataclasses import dataclass
from operator import setitem

import numpy as np

from ...arch import PipeUnit
from ...arch.vocab import V2C, C2V, Direction, TileSplitAxis
from ...errors import ConfigError, ProtocolError
from ...sim import schedule as _sched
from ...sim.location import call_site
from ...sim.porder import join
from ...sim.race import region_of_rows
from ...sim.trace import RingArgs
from ..context import _getcurrent, current_core, here
from ..events import Event, TSYNC, new_event
from ..indexed import gm_end_off_gm_pipes
from ..ops import arr
from ..tensor import GlobalTensor, GMPtr
from ..tile import Tile
from .channel import Channel, PipeHandle, Side
from ...protocol.model import platform_kind
from ...protocol.geometry import ODD_SPLITS, full_shape, odd_split_problem, part_offset, part_rows, part_shape
from .steps import (_args, _loc, check_lanes_split, check_nosplit_lanes, check_split, mark_written, producer_record,
                    producer_wait, release)


class SlotPtr(GMPtr):
    """A GM pointer into a ring slot popped in the address flow; remembers the slot's
    generation so that an access after TFREE is a use-after-free.  ``+``/``-``/``cast``
    keep it (and its bounds)."""
    __slots__ = ("slot", "gen", "pipe")

    def __init__(self, addr: int, dtype, slot, gen: int, pipe: str, bounds: tuple | None = None):
        super().__init__(addr, dtype, bounds)
        self.slot, self.gen, self.pipe = slot, gen, pipe

    def __add__(self, n: int) -> "SlotPtr":
        return SlotPtr(self.addr + int(n) * self.dtype.itemsize, self.dtype, self.slot, self.gen, self.pipe,
                       self.bounds)

    def __sub__(self, n: int) -> "SlotPtr":
        return self + (-int(n))

    def cast(self, dtype) -> "SlotPtr":
        p = GMPtr.cast(self, dtype)
        return SlotPtr(p.addr, p.dtype, self.slot, self.gen, self.pipe, self.bounds)


@dataclass(frozen=True)
class SlotBounds:
    """What a pointer handed out by ``op`` (TALLOC / TPOP) may touch: slot ``tag`` of
    ``pipe`` (``[lo, hi)``: the slot, or the lane's ``part`` of it), in its ring
    ``[ring_lo, ring_hi)``.  The ``name`` of such a pointer's :attr:`GMPtr.bounds`; it
    words the report when a view through the pointer leaves ``[lo, hi)``."""
    op: str
    pipe: str
    tag: int
    slot_lo: int
    slot_size: int
    ring_lo: int
    ring_hi: int
    lo: int
    hi: int
    part: str = ""          # e.g. "AIV1's TILE_UP_DOWN part"; "" for the whole slot
    pitch: int = 0          # the part's row stride in bytes (0: the whole slot)

    def explain(self, view: str, addr: int, extent: int, pitch: int | None = None) -> tuple:
        """(what, fix) of a MemoryConflictError for ``view`` covering ``[addr, addr+extent)``
        (``pitch``: the view's row stride in bytes, where it has rows)."""
        end = addr + extent
        slot = f"slot {self.tag} [{self.slot_lo:#x}, {self.slot_lo + self.slot_size:#x}) of {self.pipe}"
        home = f"{self.part} [{self.lo:#x}, {self.hi:#x}) of {slot}" if self.part else slot
        what = (f"access out of bounds: {view} covers GM [{addr:#x}, {end:#x}), outside {home}, "
                f"which its pointer comes from ({self.op}): bytes {addr - self.lo} to {end - self.lo - 1} "
                f"of its {self.hi - self.lo}")
        reach = self._reach(addr, end)
        if reach:
            what += f"; it reaches {reach}"
        if self.part:
            fix = (f"keep the view within this lane's part: {self.part} is [{self.lo:#x}, {self.hi:#x}) "
                   f"({self.hi - self.lo} bytes) of the slot; the other lane's part is its own")
            if pitch is not None and self.pitch and pitch != self.pitch:
                fix += (f" - its rows are {self.pitch} bytes apart (the slot tile's row stride), the view's "
                        f"{pitch}: give the view that row stride")
        else:
            fix = (f"keep the view within the slot's SlotSize {self.slot_size} bytes: offsets added to the "
                   f"{self.op}'s tensor .data() stay below it, and the next tile goes through the next "
                   f"{self.op} (the ring, not the pointer, moves to the next slot)")
        return what, fix

    def _reach(self, lo: int, hi: int) -> str:
        """The other slots of the ring, the other GM rings and the run arguments ``[lo, hi)``
        overlaps."""
        out = []
        n = (self.ring_hi - self.ring_lo) // self.slot_size
        slots = [t for t in range(n) if t != self.tag and lo < self.ring_lo + (t + 1) * self.slot_size
                 and self.ring_lo + t * self.slot_size < hi]
        if slots:
            out.append(f"into slot{'s' if len(slots) > 1 else ''} {', '.join(map(str, slots))} of the ring")
        elif self.part and self.slot_lo < hi and lo < self.slot_lo + self.slot_size:
            out.append("into the other lane's part of the slot")
        if lo < self.ring_lo or hi > self.ring_hi:
            c = getattr(_getcurrent(), "core", None)
            cl = c.cluster if c is not None else None
            hit = [f"the GM ring of {o.name} [{o.gm_base:#x}, {o.gm_base + o.slot_num * o.slot_size:#x})"
                   for o in (cl.state.channels.values() if cl is not None else ())
                   if o.in_gm and o.gm_base is not None and o.name != self.pipe
                   and lo < o.gm_base + o.slot_num * o.slot_size and o.gm_base < hi]
            hit += [f"argument {name!r} [{alo:#x}, {ahi:#x})" for name, alo, ahi in (cl.context.gm_args if cl is not None else ())
                    if lo < ahi and alo < hi and not (alo <= self.ring_lo and self.ring_hi <= ahi)]
            past = f"past the ring [{self.ring_lo:#x}, {self.ring_hi:#x})"
            out.append(f"{past} into {', '.join(hit)}" if hit else past)
        return " and ".join(out)


_NO_SPLIT = TileSplitAxis.TILE_NO_SPLIT


def slot_bounds(ch: Channel, tag: int, op: str, split, sub: int, gt: GlobalTensor) -> tuple:
    """The :attr:`GMPtr.bounds` of the pointer ``op`` hands out for slot ``tag`` of ``ch``:
    the slot, or (``split`` not NO_SPLIT) the hull of lane ``sub``'s part of it - the rows of
    ``gt``'s shape at the part's row stride (:func:`part_rows`), clipped to the slot.  Made
    once per slot, lane and geometry (``ch.bounds``)."""
    key = (op, tag) if split is _NO_SPLIT else (op, tag, split, sub, gt.shape, gt.stride, gt.item)
    b = ch.bounds.get(key)
    if b is None:
        b = ch.bounds[key] = _slot_bounds(ch, tag, op, split, sub, gt)
    return b


def _slot_bounds(ch: Channel, tag: int, op: str, split, sub: int, gt: GlobalTensor) -> tuple:
    slot_lo = ch.gm_base + tag * ch.slot_size
    slot_hi = slot_lo + ch.slot_size
    if split is _NO_SPLIT:
        lo, hi, part = slot_lo, slot_hi, ""
    else:
        rows, cols, item = gt.shape[3], gt.shape[4], gt.item
        off, rstride = part_rows(split, sub, rows, cols, item)
        lo = slot_lo + off
        hi = min(slot_hi, lo + max((rows - 1) * rstride + cols * item, gt._extent))
        part = f"AIV{sub}'s {split.name} part"
    return (lo, hi, SlotBounds(op, ch.name, tag, slot_lo, ch.slot_size, ch.gm_base,
                               ch.gm_base + ch.slot_num * ch.slot_size, lo, hi, part,
                               rstride if split is not _NO_SPLIT and rows > 1 else 0))


def _enter(pipe, obj, split, events, role: str, op: str):
    """The prologue of TALLOC: accept both argument orders, wait for the events, and find
    the core, the kernel line, the channel and this core's side.  (TPUSH and TPOP, the
    hottest instructions, carry an inline copy.)"""
    core = current_core()
    loc = core.loc_override or call_site(3)          # call_site <- _enter <- TALLOC <- kernel
    if pipe.__class__ is not PipeHandle:
        pipe, obj = _args(pipe, obj)
    if events:
        TSYNC(*events)
    if split.__class__ is not TileSplitAxis:
        split = parse_split(split)
    ch, side = pipe.end(role, core, op)
    return core, loc, obj, split, ch, side


def _word_unrecorded(core, op: str) -> None:
    """A control word is a value of memory that Python reads (its TPUSH: from the tile; its
    TPOP: from the slot) and writes to GM itself: no recorded call can give it, so the
    fast-forward engine making this call exactly (:mod:`ptopipe.sim.periodic`: the cluster's
    engine, the core's is off for the call) learns again."""
    ff = core.cluster.ff
    if ff is not None:
        ff.unhooked(core, f"{op} of a control pipe")


def push_ctrl(core, ch: Channel, side: Side, tile) -> Event:
    _word_unrecorded(core, "TPUSH")
    core.cluster.sync()                                # a value read from memory by Python
    val = int(np.asarray(arr(tile, core, "TPUSH control tile")).flat[0]) if isinstance(tile, Tile) else int(tile)
    tag = producer_wait(core, ch, side, "TPUSH")
    where = core.where()
    word = (setitem, core.cluster.gm.view(ch.gm_base + tag * ch.slot_size, np.uint32, (1,)), 0,
            np.uint32(val & 0xFFFFFFFF))
    # (the race check applies the write itself where it lets two lanes' identical words pass:
    # both lanes of a pto-isa control TMPipe push every word)
    if not _ctrl_access(core, ch, tag, True, "TPUSH", where, [word]):
        setitem(*word[1:])
    mark_written(core, ch, side, tag, (np.dtype(np.uint32), 1, 1, TileSplitAxis.TILE_NO_SPLIT), "TPUSH", where)
    # the control word is read by the scalar unit (ProtocolModel.ring_data): after an event of
    # the library's own from the pipe it names (A2A3: PIPE_V), else only as the kernel orders it;
    # the load blocks the scalar unit (its value is stored next), so whatever the core issues
    # later follows it
    pipe, after = ch.model.ring_data("TPUSH", ch.way, ch.in_gm, True, platform_kind(core.cluster.platform))
    ps = core.psync
    manual = ps is not None and ps.manual
    if manual and after is not None:
        ps.order(after, pipe)
    _, end = core.issue(pipe, 1, (tile,) if isinstance(tile, Tile) else (), (), "TPUSH",
                        RingArgs(ch.name, tag, None, "ctrl") if core.trace is not None else None)
    if manual:
        for p in PipeUnit:
            if p is not pipe:
                ps.order(pipe, p)
    side.index += 1
    producer_record(core, side, tag, end)
    return new_event(("TPUSH", core, end))


def push_commit(core, ch: Channel, side: Side, split) -> Event:
    if not side.pending_alloc:
        raise ProtocolError(f"TPUSH(GlobalTensor) on {ch.name} without a preceding TALLOC", where=_loc(core),
                            fix="address flow: TALLOC -> TSTORE... -> TPUSH")
    tag, _gt, _loc0 = side.pending_alloc.pop(0)
    here = core.where()
    mark_written(core, ch, side, tag, None, "TPUSH", here, split)
    chk = core.cluster.checker
    if chk is not None:                 # a write through the TALLOCed view is now too late
        chk.slot_pushed(core, ch.name, tag, here)
    _, end = core.issue(PipeUnit.S, core.cluster.platform.costs.flag_op, (), (), "TPUSH",
                        RingArgs(ch.name, tag, None, "commit") if core.trace is not None else None)
    # the data were written by TSTOREs: signal after they complete (where the protocol's signals
    # follow every access of the slot, also after an MSCATTER into it on another pipe - A5's V)
    t = max(end, max(core.pipe_free[PipeUnit.FIX], core.pipe_free[PipeUnit.MTE3]))
    if ch.free_after_readers:
        t = max(t, gm_end_off_gm_pipes(core))
    po = core.porder
    producer_record(core, side, tag, t, None if po is None else
                    join(join(po.last, po.hb[PipeUnit.FIX]), po.hb[PipeUnit.MTE3]))
    return new_event(("TPUSH", core, t))


def TALLOC(pipe, gm_tensor: GlobalTensor, split=TileSplitAxis.TILE_NO_SPLIT, *events) -> Event:
    """Address flow, producer: wait for a free slot and assign its GM address to ``gm_tensor``."""
    core, _loc0, gm_tensor, split, ch, side = _enter(pipe, gm_tensor, split, events, "producer", "TALLOC")
    if core.policy is not None:                       # an exploring run: a choice point
        core.cluster.visible(core, _sched.TALLOC)
    if not ch.in_gm:
        raise ProtocolError(f"TALLOC on {ch.name}: the address flow needs a ring in GM",
                            where=_loc(core), fix="on A5 use a *_GM direction (e.g. DIR_C2V_GM)")
    if not isinstance(gm_tensor, GlobalTensor):
        raise ProtocolError(f"TALLOC expects a GlobalTensor, got {type(gm_tensor).__name__}", where=_loc(core),
                            fix="pass a GlobalTensor(dtype, shape) for the slot's address: TALLOC(pipe, gt, split)")
    _check_odd_address(core, ch, split, "TALLOC", gm_tensor)
    if gm_tensor.nbytes > ch.slot_size:
        raise ProtocolError(f"TALLOC of {gm_tensor.describe()} ({gm_tensor.nbytes} bytes) does not fit "
                            f"SlotSize {ch.slot_size}", where=_loc(core),
                            fix=f"declare SlotSize {gm_tensor.nbytes} (or more) on the pipe, or TALLOC a smaller tensor")
    if ch.way == V2C:
        _check_both_address(core, ch, "TALLOC")
        check_lanes_split(core, ch, split, "TALLOC")
        rows, cols = gm_tensor.shape[3], gm_tensor.shape[4]
        full = full_shape(parse_split(split), rows, cols)
        if full != (rows, cols) and full[0] * full[1] * gm_tensor.dtype.itemsize > ch.slot_size:
            part = part_shape(parse_split(split), rows, cols)
            raise ProtocolError(
                f"TALLOC {parse_split(split).name} of {gm_tensor.describe()}: a split TALLOC hands each "
                f"lane its part of the slot, and two {rows}x{cols} parts make a {full[0]}x{full[1]} slot "
                f"({full[0] * full[1] * gm_tensor.dtype.itemsize} bytes) but SlotSize is {ch.slot_size}",
                where=_loc(core), fix=f"give TALLOC the lane's part ({part[0]}x{part[1]}, half the slot "
                                      "tile), or TILE_NO_SPLIT for the whole slot")
    tag = producer_wait(core, ch, side, "TALLOC")
    check_nosplit_lanes(core, ch, split, "TALLOC")
    off = 0
    if ch.way == V2C:
        off = part_offset(split, core.subblock, gm_tensor.shape[3], gm_tensor.shape[4], gm_tensor.dtype.itemsize)
    bounds = slot_bounds(ch, tag, "TALLOC", split if ch.way == V2C else TileSplitAxis.TILE_NO_SPLIT,
                         core.subblock, gm_tensor)
    gm_tensor.assign(GMPtr(ch.gm_base + tag * ch.slot_size + off, gm_tensor.dtype, bounds))
    chk = core.cluster.checker
    if chk is not None:
        chk.slot_view(core, gm_tensor, "TALLOC", ch.name, tag, _loc0, bounds=bounds[2],
                      others=_other_parts(core, ch, tag, split, gm_tensor) if ch.way == V2C else ())
    side.pending_alloc.append((tag, gm_tensor, core.where()))
    side.index += 1
    _, end = core.issue(PipeUnit.S, core.cluster.platform.costs.flag_op, (), (), "TALLOC",
                        RingArgs(ch.name, tag) if core.trace is not None else None)
    return new_event(("TALLOC", core, end))


def _other_parts(core, ch: Channel, tag: int, split, gt: GlobalTensor) -> tuple:
    """The other Vector lanes' parts of slot ``tag`` of ``ch`` that a lane's split view ``gt``
    leaves to them - the view ``core``'s TALLOC hands it on the V2C ring, or its TPOP on the C2V
    ring: ((lo, hi, rows, lane), ...), each part as :func:`~ptopipe.sim.race.region_of_rows`
    gives it (its rows of the tile's bytes at the part's row stride, :func:`part_rows`).  An
    access there through any pointer - a C++ kernel's ``slot.data()`` arithmetic keeps no
    bounds, and a view with another row stride than the part's (a contiguous view of a
    LEFT_RIGHT half) stays within the part's hull - is the checker's (``KernelChecks.slot_view``)."""
    if split is _NO_SPLIT or len(ch.peers) < 2:
        return ()
    rows, cols, item = gt.shape[3], gt.shape[4], gt.item
    slot_lo = ch.gm_base + tag * ch.slot_size
    out = []
    for lane in ch.peers:
        if lane != core.subblock:
            off, rstride = part_rows(split, lane, rows, cols, item)
            reg = region_of_rows(slot_lo + off, rows, cols * item, rstride)
            if reg is not None:
                out.append((*reg, f"AIV{lane}"))
    return tuple(out)


#: the splits that give each Vector core its part of a C2V tile (an address-flow pop must name
#: the push's: its view is placed by it)
_SPLITS = (TileSplitAxis.TILE_UP_DOWN, TileSplitAxis.TILE_LEFT_RIGHT)


def pop_address(core, ch: Channel, side: Side, tag: int, gt: GlobalTensor, split, loc) -> Event:
    check_nosplit_lanes(core, ch, split, "TPOP")
    if not ch.in_gm:
        raise ProtocolError(f"TPOP(GlobalTensor) on {ch.name}: the address flow needs a ring in GM",
                            where=_loc(core), fix="on A5 use a *_GM direction (e.g. DIR_C2V_GM)")
    _check_odd_address(core, ch, split, "TPOP", gt)
    off = 0
    if ch.way == C2V:
        off = part_offset(split, core.subblock, gt.shape[3], gt.shape[4], gt.dtype.itemsize)
    else:
        _check_both_address(core, ch, "TPOP(GlobalTensor)")
    if off + gt._extent > ch.slot_size:
        _pop_misfit(core, ch, gt, split, off)
    slots = side.slots[tag]
    slot = slots[0]
    if ch.way == C2V and slot.push_split in _SPLITS:      # (the lane's view is its part of the tile)
        check_split(core, ch, slot, slot.push_split, split, "TPOP", loc, address=True)
    bounds = slot_bounds(ch, tag, "TPOP", split if ch.way == C2V else TileSplitAxis.TILE_NO_SPLIT,
                         core.subblock, gt)
    gt.assign(SlotPtr(ch.gm_base + tag * ch.slot_size + off, gt.dtype, slot, slot.gen, ch.name, bounds))
    for s in slots:
        s.state = "held"
        s.pop_loc = loc
    chk = core.cluster.checker
    if chk is not None:     # its accesses by address too: a pointer copied from it is not a SlotPtr
        chk.slot_view(core, gt, "TPOP", ch.name, tag, loc, slot, bounds=bounds[2],
                      others=_other_parts(core, ch, tag, split, gt) if ch.way == C2V else ())
    side.index += 1
    side.held.append((tag, gt, loc, None, None, split, None))
    _, end = core.issue(PipeUnit.S, core.cluster.platform.costs.flag_op, (), (), "TPOP",
                        RingArgs(ch.name, tag, None, "addr") if core.trace is not None else None)
    return new_event(("TPOP", core, end))


def _check_odd_address(core, ch: Channel, split, op: str, gt: GlobalTensor) -> None:
    """An odd split in the address flow, which pto-isa does not place
    (:func:`~ptopipe.protocol.geometry.odd_split_problem`)."""
    bad = odd_split_problem(split, ch.way, ch.in_gm, address=True)
    if bad is not None:
        raise ProtocolError(f"{op} {split.name} of {gt.describe()} on {ch.name}: {bad[0]}", where=_loc(core),
                            fix=bad[1])


def _check_both_address(core, ch: Channel, op: str) -> None:
    """The address flow on the V2C way of a two-way pipe, where the protocol's library
    addresses it at the C2V way's slots (``ProtocolModel.both_address_error``): refused at
    the first such TALLOC / TPOP, as A5 refuses DIR_BOTH_GM at binding."""
    d = Direction(ch.cfg.direction)
    if d is not Direction.DIR_BOTH and d is not Direction.DIR_BOTH_GM:
        return
    bad = ch.model.both_address_error(d)
    if bad is not None:
        why, fix = bad
        raise ConfigError(
            f"{op} on the V2C way of {ch.name} ({d.name}): the address flow of a two-way pipe does not work "
            f"in {ch.model.name} on {core.cluster.platform.name}: {why}", where=_loc(core),
            fix=f"{fix}, or move this way's data with the tile flow (TPUSH / TPOP of a tile: its V2C ring "
                "starts after the C2V ring)")


def _pop_misfit(core, ch: Channel, gt: GlobalTensor, split, off: int) -> None:
    """A GlobalTensor TPOP whose view, at the lane's offset in the slot (pto-isa
    ``getPopSubAIVOffset``: from the view's own shape), reaches past the slot's SlotSize bytes
    - as TALLOC refuses a view that does not fit: the reads would go into the next slot."""
    ext = gt._extent
    rows, cols, item = gt.shape[3], gt.shape[4], gt.dtype.itemsize
    at = f" at {core.name}'s offset {off}" if off else ""
    # (a lane's view of a two-lane ring is a split part: NO_SPLIT would give both the same bytes)
    # (the address flow has no odd split: _check_odd_address)
    fits = [s.name for s in TileSplitAxis if s != split and s not in ODD_SPLITS
            and (ch.way == C2V or s is _NO_SPLIT)
            and (s is not _NO_SPLIT or len(ch.peers) == 1 or ch.way != C2V)
            and part_offset(s, core.subblock, rows, cols, item) + ext <= ch.slot_size]
    raise ProtocolError(
        f"TPOP {split.name} of {gt.describe()}{at} does not fit SlotSize {ch.slot_size} of {ch.name}: "
        f"the view covers bytes {off} to {off + ext - 1} of the slot, past its end",
        where=_loc(core),
        fix=(f"give the TPOP the split its producer used (this view fits with {' or '.join(fits)}), and a "
             "view of the lane's part: TILE_UP_DOWN parts are rows x cols at sub * rows * cols elements, "
             "TILE_LEFT_RIGHT parts cols wide at sub * cols with the slot's row stride" if fits else
             f"pop a view of the slot: at most SlotSize {ch.slot_size} bytes from the lane's offset "
             "(its rows times its row stride), as the producer's TALLOC view is"))


def _ctrl_access(core, ch: Channel, tag: int, write: bool, op: str, where, work=None) -> bool:
    """The race checker's record of a control word's push (``write``, whose numpy ``work``
    stores the word) or pop: its four bytes of the slot, as a data ring's TPUSH / TPOP records
    its tile - a kernel access of those bytes that nothing orders with it is a race.  True when
    the check applied ``work`` (an unordered write of the identical word)."""
    chk = core.cluster.checker
    if chk is None:
        return False
    return chk.ring_access(core, ch, tag, write, op, where, 1, 1, 4, TileSplitAxis.TILE_NO_SPLIT, work=work)


def pop_ctrl(core, ch: Channel, side: Side, tag: int) -> int:
    _word_unrecorded(core, "TPOP")
    core.cluster.sync()
    _ctrl_access(core, ch, tag, False, "TPOP", core.where())
    val = int(core.cluster.gm.view(ch.gm_base + tag * ch.slot_size, np.uint32, (1,))[0])
    side.index += 1
    core.issue(PipeUnit.S, 1, (), (), "TPOP",
               RingArgs(ch.name, tag, None, "ctrl") if core.trace is not None else None)
    for s in side.slots[tag]:
        s.state = "held"
    release(core, ch, side, tag, None, None)
    return val


def parse_split(split) -> TileSplitAxis:
    if split.__class__ is TileSplitAxis:
        return split
    try:
        return TileSplitAxis(split)
    except ValueError:
        raise ProtocolError(f"invalid TileSplitAxis {split!r}", where=here(),
                            fix="use TILE_NO_SPLIT, TILE_UP_DOWN, TILE_LEFT_RIGHT, TILE_UP_DOWN_ODD or "
                                "TILE_LEFT_RIGHT_ODD") from None
