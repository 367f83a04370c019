"""The address flow (TALLOC -> TSTORE... -> TPUSH(GlobalTensor); TPOP(GlobalTensor) ->
TLOAD... -> TFREE) and the control flow of a DIR_V2C_CTRL pipe (one 32-bit value per
slot), plus :class:`SlotPtr`, the GM pointer a popped slot hands out so that an access
after TFREE is reported as a use-after-free.
"""
from __future__ import annotations

import numpy as np

from ...arch import PipeUnit
from ...arch.vocab import V2C, C2V, TileSplitAxis
from ...errors import ProtocolError
from ...sim import schedule as _sched
from ...sim.location import caller_loc
from ...sim.porder import join
from ...sim.trace import RingArgs
from ..context import current_core
from ..events import Event, TSYNC, new_event
from ..ops import arr
from ..tensor import GlobalTensor, GMPtr
from ..tile import Tile
from .channel import Channel, PipeHandle, Side
from .geometry import parse_split, part_offset
from .steps import _args, _loc, check_lanes_split, check_nosplit_lanes, mark_written, producer_record, producer_wait, release


class SlotPtr(GMPtr):
    """A GM pointer into a ring slot popped in the address flow; remembers the slot's
    generation so that an access after TFREE is a use-after-free.  ``+``/``-`` keep it."""
    __slots__ = ("slot", "gen", "pipe")

    def __init__(self, addr: int, dtype, slot, gen: int, pipe: str):
        super().__init__(addr, dtype)
        self.slot, self.gen, self.pipe = slot, gen, pipe

    def __add__(self, n: int) -> "SlotPtr":
        return SlotPtr(self.addr + int(n) * self.dtype.itemsize, self.dtype, self.slot, self.gen, self.pipe)

    def __sub__(self, n: int) -> "SlotPtr":
        return self + (-int(n))


def _enter(pipe, obj, split, events, role: str, op: str):
    """The prologue of TALLOC: accept both argument orders, wait for the events, and find
    the core, the kernel line, the channel and this core's side.  (TPUSH and TPOP, the
    hottest instructions, carry an inline copy.)"""
    core = current_core()
    loc = core.loc_override or caller_loc(3)         # caller_loc <- _enter <- TALLOC <- kernel
    if pipe.__class__ is not PipeHandle:
        pipe, obj = _args(pipe, obj)
    if events:
        TSYNC(*events)
    if split.__class__ is not TileSplitAxis:
        split = parse_split(split)
    ch, side = pipe.end(role, core, op)
    return core, loc, obj, split, ch, side


def push_ctrl(core, ch: Channel, side: Side, tile) -> Event:
    core.cluster.sync()                                # a value read from memory by Python
    val = int(np.asarray(arr(tile, core, "TPUSH control tile")).flat[0]) if isinstance(tile, Tile) else int(tile)
    tag = producer_wait(core, ch, side, "TPUSH")
    core.cluster.gm.view(ch.gm_base + tag * ch.slot_size, np.uint32, (1,))[0] = val & 0xFFFFFFFF
    mark_written(core, ch, side, tag, (np.dtype(np.uint32), 1, 1, TileSplitAxis.TILE_NO_SPLIT), "TPUSH",
                 core.where())
    _, end = core.issue(PipeUnit.S, 1, (), (), "TPUSH",
                        RingArgs(ch.name, tag, None, "ctrl") if core.trace is not None else None)
    side.index += 1
    producer_record(core, side, tag, end)
    return new_event(("TPUSH", core, end))


def push_commit(core, ch: Channel, side: Side) -> Event:
    if not side.pending_alloc:
        raise ProtocolError(f"TPUSH(GlobalTensor) on {ch.name} without a preceding TALLOC", where=_loc(core),
                            fix="address flow: TALLOC -> TSTORE... -> TPUSH")
    tag, _gt, _loc0 = side.pending_alloc.pop(0)
    mark_written(core, ch, side, tag, None, "TPUSH", core.where())
    _, end = core.issue(PipeUnit.S, core.cluster.platform.costs.flag_op, (), (), "TPUSH",
                        RingArgs(ch.name, tag, None, "commit") if core.trace is not None else None)
    # the data were written by TSTOREs: signal after they complete
    t = max(end, max(core.pipe_free[PipeUnit.FIX], core.pipe_free[PipeUnit.MTE3]))
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
        raise ProtocolError(f"TALLOC expects a GlobalTensor, got {type(gm_tensor).__name__}", where=_loc(core))
    if gm_tensor.nbytes > ch.slot_size:
        raise ProtocolError(f"TALLOC of {gm_tensor.describe()} ({gm_tensor.nbytes} bytes) does not fit "
                            f"SlotSize {ch.slot_size}", where=_loc(core))
    if ch.way == V2C:
        check_lanes_split(core, ch, split, "TALLOC")
    tag = producer_wait(core, ch, side, "TALLOC")
    check_nosplit_lanes(core, ch, split, "TALLOC")
    off = 0
    if ch.way == V2C:
        off = part_offset(split, core.subblock, gm_tensor.shape[3], gm_tensor.shape[4], gm_tensor.dtype.itemsize)
    gm_tensor.assign(GMPtr(ch.gm_base + tag * ch.slot_size + off, gm_tensor.dtype))
    side.pending_alloc.append((tag, gm_tensor, core.where()))
    side.index += 1
    _, end = core.issue(PipeUnit.S, core.cluster.platform.costs.flag_op, (), (), "TALLOC",
                        RingArgs(ch.name, tag) if core.trace is not None else None)
    return new_event(("TALLOC", core, end))


def pop_address(core, ch: Channel, side: Side, tag: int, gt: GlobalTensor, split, loc) -> Event:
    check_nosplit_lanes(core, ch, split, "TPOP")
    if not ch.in_gm:
        raise ProtocolError(f"TPOP(GlobalTensor) on {ch.name}: the address flow needs a ring in GM",
                            where=_loc(core), fix="on A5 use a *_GM direction (e.g. DIR_C2V_GM)")
    off = 0
    if ch.way == C2V:
        off = part_offset(split, core.subblock, gt.shape[3], gt.shape[4], gt.dtype.itemsize)
    slots = side.slots[tag]
    slot = slots[0]
    gt.assign(SlotPtr(ch.gm_base + tag * ch.slot_size + off, gt.dtype, slot, slot.gen, ch.name))
    for s in slots:
        s.state = "held"
        s.pop_loc = loc
    side.index += 1
    side.held.append((tag, gt, loc, None, None, split, None))
    _, end = core.issue(PipeUnit.S, core.cluster.platform.costs.flag_op, (), (), "TPOP",
                        RingArgs(ch.name, tag, None, "addr") if core.trace is not None else None)
    return new_event(("TPOP", core, end))


def pop_ctrl(core, ch: Channel, side: Side, tag: int) -> int:
    core.cluster.sync()
    val = int(core.cluster.gm.view(ch.gm_base + tag * ch.slot_size, np.uint32, (1,))[0])
    side.index += 1
    core.issue(PipeUnit.S, 1, (), (), "TPOP",
               RingArgs(ch.name, tag, None, "ctrl") if core.trace is not None else None)
    for s in side.slots[tag]:
        s.state = "held"
    release(core, ch, side, tag, None, None)
    return val
