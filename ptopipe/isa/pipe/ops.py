"""The tile-flow instructions TPUSH / TPOP / TFREE and the protocol steps they share
(producer wait and record, slot state, consumer release, the local staging ring).

These are the hottest instructions of the simulator: TPUSH and TPOP carry an inline copy of
the common prologue, and read the protocol model's decisions from plain attributes the
channel copied at bind time (``ch.wait_every``, ``ch.hold_limit``, ``ch.pop_frees``,
``ch.always_stage``).  The address and control flows live in :mod:`.flows`.
"""
from __future__ import annotations

from operator import setitem

from ...arch import MemSpace, PipeUnit
from ...arch.vocab import C2V, TileSplitAxis
from ...errors import ProtocolError
from ...protocol.geometry import free_split_fix, free_split_problem, ragged_pop_problem
from ...sim import schedule as _sched
from ...sim.location import call_site, is_cpp, is_pto
from ...sim.trace import RingArgs
from ..context import _getcurrent, current_core
from ..events import Event, TSYNC, new_event
from ..ops import arr, queue_checked_write
from ..regions import forget_tile, popped_into, reserve, ring_wrote
from ..tensor import GlobalTensor
from ..tile import Tile, _describe, bind
from .channel import Channel, PipeHandle, Side, StageSlot
from .flows import SlotPtr, pop_address, pop_ctrl, push_commit, push_ctrl
from .flows import parse_split
from .plans import check_layout, plan, pop_plan, push_plan
from .steps import (_args, _here, _loc, check_nosplit_lanes, mark_written, not_a_pipe_fix, producer_record,
                    producer_wait, release, wait)


_LANE0 = (0,)
_UP_DOWN = TileSplitAxis.TILE_UP_DOWN
#: the tiles of a ring whose first lane's pop is remembered for the other's (a lane that never
#: pops leaves its partner's entries: bounded)
_LANE_ROWS_KEPT = 4096


def _check_lane_rows(core, ch: Channel, i: int, rows: int, loc) -> None:
    """The two Vector lanes' TPOPs of tile ``i`` of a TILE_UP_DOWN ring in GM must pop the
    same valid rows (or one of them none): pto-isa places each band from the lane's own
    extent (:func:`~ptopipe.protocol.geometry.ragged_pop_problem`).  A ProtocolError at the
    second lane's TPOP, naming the first's."""
    first = ch.lane_rows.pop(i, None)
    if first is None or first[0] == core.subblock:
        if len(ch.lane_rows) < _LANE_ROWS_KEPT:
            ch.lane_rows[i] = (core.subblock, rows, loc)
        return
    bad = ragged_pop_problem(_UP_DOWN, {first[0]: first[1], core.subblock: rows})
    if bad is not None:
        raise ProtocolError(f"TPOP on {core.name}: {bad[0]} (tile {i} of {ch.name}; AIV{first[0]}'s TPOP at {first[2]})",
                            where=str(loc or core.where()), fix=bad[1])


def TPUSH(pipe, tile, split=TileSplitAxis.TILE_NO_SPLIT, *events) -> Event:
    """Producer: wait for a free slot, write ``tile`` into it, signal ready, advance.

    With a GlobalTensor instead of a tile (address flow), commit the oldest TALLOCed slot."""
    # the common prologue, inline: it is a good part of the cost of the hottest instructions
    try:
        core = _getcurrent().core        # current_core(), inline (the prologue, see TPUSH)
    except AttributeError:
        core = current_core()            # raises: not inside a running kernel
    if core.ff is not None:                           # fast-forward (sim.periodic)
        return core.ff.call(core, TPUSH, (pipe, tile, split, *events), None)
    if core.policy is not None:                       # an exploring run: a choice point
        core.cluster.visible(core, _sched.TPUSH)
    loc = core.loc_override or call_site(2)           # call_site <- TPUSH <- kernel (<- its callers)
    if pipe.__class__ is not PipeHandle:
        pipe, tile = _args(pipe, tile)
    if events:
        TSYNC(*events)
    if split.__class__ is not TileSplitAxis:
        split = parse_split(split)
    e = pipe.producer_end
    ch, side = e if e is not None and core is pipe.core else pipe.end("producer", core, "TPUSH")
    if tile.__class__ is not Tile or ch.ctrl:
        if isinstance(tile, GlobalTensor):
            return push_commit(core, ch, side, split)
        if ch.ctrl:
            return push_ctrl(core, ch, side, tile)
        raise ProtocolError(f"TPUSH expects a Tile or GlobalTensor, got {type(tile).__name__}", where=_loc(core),
                            fix="TPUSH(pipe, tile, split): push a Tile (or the GlobalTensor a TALLOC gave)")
    src = tile._valid if tile.core is core and tile.binding is None else arr(tile, core, "TPUSH tile")
    c = tile._plan
    p = c[3] if c is not None and c[0] is ch and c[1] is split and c[2] is core else \
        plan(core, ch, tile, split, push_plan)
    tag = producer_wait(core, ch, side, "TPUSH")
    # the queued copies of every tag, made once per tile and source array: a slot view and
    # the part of ``src`` that goes to it depend only on the plan (channel, geometry, split:
    # ``p``) and on the array object ``src`` (a view always shows the same bytes) - the guard
    w = tile._push
    if w is None or w[0] is not p or w[1] is not src or not ch.replay:
        w = tile._push = (p, src, [[(setitem, dst, Ellipsis, src if part is None else src[part])
                                    for dst, _peer, part in d] for d in p.dsts])
    work = w[2][tag]
    mark_written(core, ch, side, tag, p.layout, "TPUSH", loc)
    if not ch.in_gm:
        _landed(core, ch, p.dsts[tag], loc)
    chk = core.cluster.checker
    if chk is None:
        core.pending.extend(work)
    else:       # queued after the slot's race check, which may apply it (identical bytes)
        queue_checked_write(core, chk.ring_access(core, ch, tag, True, "TPUSH", loc, tile.rows, tile.cols,
                                                  tile.item, split, work=work,
                                                  valid=(tile.valid_rows, tile.valid_cols)), *work)
    end = core.issue_r(p.unit, p.cost, tile, "TPUSH",
                       RingArgs(ch.name, tag, src.shape) if core.trace is not None else None)
    side.index += 1
    producer_record(core, side, tag, end)
    if ch.sim_ring is not None:
        ch.sim_ring.record(core, "push", ch.way, split, loc)
    return new_event(("TPUSH", core, end))


def _landed(core, ch: Channel, dsts, loc) -> None:
    """A TPUSH's tile lands in a consumer-local ring (the consumer's UB or L1): the consumer's
    tiles that share those bytes no longer hold their values (:mod:`..regions`)."""
    cl = core.cluster
    for view, peer, _part in dsts:
        owner = cl.aic if peer is None else cl.aiv(peer)
        if owner.isa.get("ring_tiles") is None:
            continue
        space = MemSpace.L1 if peer is None else MemSpace.UB
        if not view.size:
            continue
        lo = view.__array_interface__["data"][0] - owner.memory(space).buf.__array_interface__["data"][0]
        hi = lo + sum((n - 1) * st for n, st in zip(view.shape, view.strides)) + view.itemsize
        ring_wrote(owner, space, lo, hi, f"{ch.name} ring", "TPUSH", loc, note=ch.unused_buf_note())


def TPOP(pipe, tile=None, split=TileSplitAxis.TILE_NO_SPLIT, *events):
    """Consumer: wait for data, load (GM ring) or bind zero-copy (local ring) and hold the slot.

    With a GlobalTensor (address flow) assign the slot address to it instead.  On a
    DIR_V2C_CTRL pipe, returns the control value."""
    try:
        core = _getcurrent().core        # current_core(), inline (the prologue, see TPUSH)
    except AttributeError:
        core = current_core()            # raises: not inside a running kernel
    if core.ff is not None:                           # fast-forward (sim.periodic)
        return core.ff.call(core, TPOP, (pipe, tile, split, *events), None)
    if core.policy is not None:                       # an exploring run: a choice point
        core.cluster.visible(core, _sched.TPOP)
    loc = core.loc_override or call_site(2)
    if pipe.__class__ is not PipeHandle:
        pipe, tile = _args(pipe, tile)
    if events:
        TSYNC(*events)
    if split.__class__ is not TileSplitAxis:
        split = parse_split(split)
    e = pipe.consumer_end
    ch, side = e if e is not None and core is pipe.core else pipe.end("consumer", core, "TPOP")
    i = side.index
    tag = i % ch.slot_num
    if not split and side.links != _LANE0 and 0 in ch.peers:
        # a NO_SPLIT pop of the Cube may make the pipe's transfers AIV0's, one of AIV1 is
        # refused where that is so (check_nosplit_lanes): before the ready wait
        check_nosplit_lanes(core, ch, split, "TPOP")
    if side.wait:
        for f in side.ready_flags[tag]:
            if f.count:
                core.wait_flag(f, None)
            else:
                wait(core, ch, f, "TPOP", "ready", tag, i)
    if len(side.held) >= ch.hold_limit:
        # checked after the wait: holding every slot, the WAIT above deadlocks first (and the
        # deadlock report names the TPOPs lacking a TFREE); here the producer skipped a wait
        first = side.held[0]
        raise ProtocolError(
            f"TPOP on {core.name} would hold more than SlotNum={ch.slot_num} slots of {ch.name}",
            where=_loc(core), details=f"oldest held slot {first[0]} popped at {first[2]}",
            fix="call TFREE after you finish with each popped tile")
    if tile.__class__ is not Tile or ch.ctrl:
        if ch.ctrl:
            return pop_ctrl(core, ch, side, tag)
        if isinstance(tile, GlobalTensor):
            return pop_address(core, ch, side, tag, tile, split, loc)
        raise ProtocolError(f"TPOP expects a Tile or GlobalTensor, got {type(tile).__name__}", where=_loc(core),
                            fix="TPOP(pipe, tile, split): pop into a Tile (or a GlobalTensor, the address flow)")
    if core.cluster.checker is not None:      # (the re-pop warning is the checkers')
        prev = tile.pop_rec
        # _check_repop's own early returns, inline: the common loop popped, freed, pops again
        if prev is not None and (prev[1].tfrees <= prev[2] if prev[0].pop_frees else prev[1].held):
            _check_repop(core, tile, prev, loc)
        tile.pop_rec = (ch, side, i, loc)
    c = tile._plan
    p = c[3] if c is not None and c[0] is ch and c[1] is split and c[2] is core else \
        plan(core, ch, tile, split, pop_plan)
    slots = side.slots[tag]
    ok = p.ok_layout
    if len(slots) == 1:
        lay = slots[0].layout
        if lay is not ok and lay is not None and lay != ok:
            check_layout(core, ch, slots, side.links, tile.dtype, tile.rows, tile.cols, split, "TPOP", loc,
                         tile.layout, (tile.valid_rows, tile.valid_cols))
            p.ok_layout = lay
    else:       # the Cube reads the parts of both Vector lanes: judged together
        lay = tuple(s.layout for s in slots)
        if lay != ok:
            check_layout(core, ch, slots, side.links, tile.dtype, tile.rows, tile.cols, split, "TPOP", loc,
                         tile.layout, (tile.valid_rows, tile.valid_cols))
            p.ok_layout = lay
    if p.whole is not None:
        raise p.whole
    if split is _UP_DOWN and ch.in_gm and ch.way == C2V and core.cluster.checker is not None:
        _check_lane_rows(core, ch, i, tile.valid_rows, loc)
    if p.srcs is not None:                         # GM ring: load into the tile
        # a tile that got its address from a ring (this consumer's staging, or another
        # pipe's slot or staging: TASSIGN clears the binding) is staged anew by every TPOP
        # (it is not the user's to place); checked first: it is the common case
        if (tile.binding is not None or ch.always_stage or tile.addr is None) and side.stage_num:
            st = side.stage_slots
            v = None
            if st is not None and tile.core is core and ch.replay and not ch.stage_by_tile:
                # _bind_staging + tile.bind for a tile bound here before, inline: the views of
                # its next staging slot are in the tile's view cache (same key as bind's)
                s = st[i % len(st)]
                v = tile._views.get((core.index, s.addr, tile.valid_rows, tile.valid_cols))
            if v is None:
                _bind_staging(core, ch, side, tile, i)
            else:
                tile._addr = s.addr
                tile.mem, tile._full, tile._valid = v
                tile.known_written = None          # (bind's, inline)
                s.gen += 1
                tile.binding = (s, s.gen)
            stage = tile.binding
            if core.isa.get("tiles"):          # (a kernel that TASSIGNs tiles: they may share the bytes)
                popped_into(core, tile, f"{ch.name} local staging", loc, ch.unused_buf_note())
        else:
            stage = None
            if tile.core is not core:
                arr(tile, core)
        dst = tile.addr
        if side.held:
            _check_destination(core, ch, side, tile, loc)
        core.pending.append((setitem, tile._valid, Ellipsis, p.srcs[tag]))
        chk = core.cluster.checker
        if chk is not None:
            # what the pop moves (isa.pipe.plans.pop_plan): an empty tile reads nothing of its split
            chk.ring_access(core, ch, tag, False, "TPOP", loc, tile.rows, tile.cols, tile.item,
                            TileSplitAxis.TILE_NO_SPLIT if tile.empty else split,
                            valid=(tile.rows, tile.cols) if tile.empty else (tile.valid_rows, tile.valid_cols))
            if stage is not None:          # for a use-after-free report of the staged copy
                stage[0].pop_loc, stage[0].pop_gen = loc, stage[1]
        end = core.issue_w(ch.pop_pipe, p.cost, tile, "TPOP",
                           RingArgs(ch.name, tag, tile.shape) if core.trace is not None else None)
        read_end = end
    else:                                          # consumer-local ring: zero-copy binding
        if not ch.free_after_readers:
            chk = core.cluster.checker
            if chk is not None:                    # (what its TFREE's SET may not wait for)
                chk.watch_slot_reads(core)
        bind(tile, core, ch.local_base + tag * ch.slot_size)
        slot = slots[0]
        tile.binding = (slot, slot.gen)
        if core.isa.get("tiles"):
            forget_tile(core, tile)                # the tile is the slot now, not a placement
        ps = core.psync
        if ps is not None and ps.manual:
            # no byte moves on this core (ProtocolModel.ring_data): the tile is the slot's bytes,
            # written by the producer core; none of this core's pipes touches them here
            end = core.issue_s(PipeUnit.S, p.cost, "TPOP",
                               RingArgs(ch.name, tag, tile.shape) if core.trace is not None else None)
            ps.bind(tile, end, ch.wait_pipe, loc)
            if core.unwritten is not None:         # (issued with no tile: the binding writes it)
                core.unwritten.wrote(tile)
        else:
            end = core.issue_w(PipeUnit.S, p.cost, tile, "TPOP",
                               RingArgs(ch.name, tag, tile.shape) if core.trace is not None else None)
        read_end = None
        dst = None                                 # distinct slots never overlap
        stage = None
    if ch.zero_pops and ch.model.pop_zeroes(ch, split, tile.loc, core.subblock):
        _zero_fill(core, side, tile, loc)
    for s in slots:                                # hold the slot
        s.state = "held"
        s.pop_loc = loc
    side.index = i + 1
    if ch.pop_frees:
        release(core, ch, side, tag, read_end, tile)      # pto-isa A2A3: TPOP frees inside
        popped = side.popped
        popped.append((i, split, loc, stage))             # for its (no-op) TFREE
        side.self_freed += 1
        if len(popped) > _POPPED_MAX:
            del popped[0]
    else:
        held = side.held
        if not ch.wait_every:          # sparse notifications: the holds per TPOP line
            ph = side.pop_holds.get(loc)
            if ph is None:
                side.pop_holds[loc] = [len(held), None]
            else:
                if ph[0] == len(held):
                    ph[1] = ph[0]
                ph[0] = len(held)
        held.append((tag, tile, loc, read_end, dst, split, stage))
    if ch.sim_ring is not None:
        ch.sim_ring.record(core, "pop", ch.way, split, loc)
    return new_event(("TPOP", core, end))


def _check_repop(core, tile: Tile, prev, loc) -> None:
    """A TPOP into the Tile object whose earlier pop is still held (no TFREE for it yet): the
    device rebinds the tile to the new slot and the kernel has no handle to the first pop's
    data any more.  A kernel may mean it (drop a tile it does not need and free it later in
    order), so it is a warning here naming the first TPOP, not an error: it is what ptoas
    makes of two popped tiles of one type held at once when it folds their identical
    ``pto.declare_tile`` ops into one C++ Tile, and the epilogue then reads the second tile
    where it meant the first."""
    pch, pside, pi, ploc = prev
    if pside.core is None or pside.core.cluster is not core.cluster:
        return                      # a pop of an earlier run: its cursors are gone
    if pch.pop_frees:               # the TPOP freed its slot itself: the kernel's TFREE ends the hold
        if pside.tfrees > pi:
            return
    elif not any(h[1] is tile for h in pside.held):
        return
    # no address in the text: the staging slot it names moves on with every pop of a loop
    desc = _describe(tile.loc, tile.name, tile.dtype, tile.rows, tile.cols, tile.layout, None, None)
    what = (f"TPOP on {core.name} into {desc}, which still holds the tile "
            f"popped at {ploc} from {pch.name} (not yet freed): this pop rebinds the tile, so nothing reads "
            "that pop's data any more and every later read of the tile sees this one's - pop each tile "
            "the kernel reads into a Tile of its own (ptoas folds identical pto.declare_tile ops of a "
            ".pto into one C++ Tile: pop a tile held at the same time as another of its type into a "
            "pto.alloc_tile), or TFREE the first before popping again")
    here = str(loc)
    if pch.pop_frees:
        # said at the exit only if that TFREE comes (diagnostics.held_repops): a kernel with no
        # TFREE at all holds nothing here, and its missing TFREEs are the warning then
        if not any(r[1] == what and r[2] == here for r in pside.repops):
            pside.repops.append((pi, what, here))
    else:
        core.cluster.warn_once(what, here)


def _zero_fill(core, side: Side, tile: Tile, loc) -> None:
    """The library hands the kernel zeros for this popped tile (``ProtocolModel.pop_zeroes``):
    its valid region is filled after the tile's load or binding; the TPOPs that had data to
    lose are counted for the exit's warning (``diagnostics.zeroed_pops``)."""
    v = tile._valid
    core.pending.append((setitem, v, Ellipsis, 0))
    if v.size:
        z = side.zeroed
        if z is None:
            side.zeroed = [1, loc]
        else:
            z[0] += 1


def _bind_staging(core, ch: Channel, side: Side, tile: Tile, i: int) -> None:
    """Assign the popped tile to the consumer's local staging ring (pto-isa LocalSlotNum):
    staging slot ``k`` is ``SlotSize`` bytes at ``base + k * SlotSize``, whatever the size of
    the tiles popped into it (a ring may carry tiles of different sizes)."""
    stage = side.stage_slots
    if stage is None:
        n, base = side.stage_num, side.staging or 0
        stage = side.stage_slots = [StageSlot(k, side, base + k * ch.slot_size) for k in range(n)]
        # (reported at the binding that gave the base, as a consumer-local ring is)
        reserve(core, tile.space, base, n * ch.slot_size, f"{ch.name} local staging",
                None if side.bound_at is None else str(side.bound_at), ring=("stage", ch, side))
    s = stage[i % len(stage)]
    if side.held:
        _check_stage_free(core, ch, side, tile, s, len(stage))
    if ch.stage_by_tile:
        _stage_by_tile(core, ch, side, tile, s, i)
    bind(tile, core, s.addr)
    s.gen += 1
    s.bound = s.gen
    tile.binding = (s, s.gen)


def _stage_by_tile(core, ch: Channel, side: Side, tile: Tile, s, i: int) -> None:
    """A library that strides the staging ring by the popped tile's size (the model's
    ``stage_stride_tile``) stages pop ``i`` at ``base + (i % LocalSlotNum) * tile bytes``: a
    staged copy still in use that those bytes overlap is overwritten - reading it afterwards is
    reported as a use after free naming the library bug."""
    s.addr = lo = (side.staging or 0) + (i % len(side.stage_slots)) * tile.nbytes
    hi = lo + tile.nbytes
    for o in side.stage_slots:
        # o's copy is in use while its generation is the one its TPOP bound (no TFREE since)
        if o is not s and o.nbytes and o.gen == o.bound and o.addr < hi and lo < o.addr + o.nbytes:
            o.clobber = (o.gen, core.where(), ch.model.bug("stage_stride_tile"))
            o.gen += 1
    s.nbytes = tile.nbytes


def _check_stage_free(core, ch: Channel, side: Side, tile: Tile, s, n: int) -> None:
    """Staging slot ``s`` must not hold a tile popped earlier and not yet freed: with every
    one of the ``n`` (LocalSlotNum) staging slots held, this TPOP would overwrite one.  (A
    tile popped again since holds nothing any more: nothing can read its old copy.)  Where
    the TPOP frees its slot itself (pto-isa, GM ring) nothing is held: reading an
    overwritten staged tile is reported at the read, as a use after free."""
    held = [h[2] for h in side.held if h[6] is not None and h[6][0] is s and h[6][1] == s.gen
            and h[1] is not tile and h[1].binding is h[6]]
    if held:
        raise ProtocolError(
            f"TPOP on {core.name} holds more popped tiles of {ch.name} than its LocalSlotNum {n}: "
            f"the tile is staged in staging slot {s.tag}, which still holds the tile popped at "
            f"{held[0]} (not yet freed)", where=_loc(core),
            details=f"LocalSlotNum {n} staging slots of SlotSize {ch.slot_size} in the consumer's "
                    f"{tile.space.value} (the ring is in GM)",
            fix=f"TFREE a tile before popping another (at most {n} held), or declare LocalSlotNum = "
                f"the tiles held at once - at most SlotNum {ch.slot_num}, the most a consumer holds (more "
                "staging slots are never needed; the reserve_buffer holds the staging slots): "
                "pl.*_initialize_pipe(local_slot_num=...), local_slot_num = N on a .pto "
                "pto.initialize_l2g2l_pipe (ptoas stages SlotNum slots for a pto.aic_/aiv_initialize_pipe), "
                "the 5th TPipe parameter in C++")


def _check_destination(core, ch: Channel, side: Side, tile: Tile, loc) -> None:
    """A TPOP must not load into bytes of another tile popped earlier and not yet freed: the
    load would overwrite data the kernel still holds.  (Popping again into the *same* Tile
    object gives up its old contents - nothing can read them any more: a warning, see
    :func:`_check_repop`; a missing TFREE is then reported by the hold limit, the deadlock
    report or the leak check.)"""
    lo = tile.addr
    hi = lo + tile.nbytes
    for h in side.held:
        other, d = h[1], h[4]
        if d is not None and other is not tile and other.space is tile.space and d < hi and lo < d + other.nbytes:
            raise ProtocolError(
                f"TPOP on {core.name} loads {tile.describe()} into [{lo:#x}, {hi:#x}), which overlaps "
                f"{other.describe()} [{d:#x}, {d + other.nbytes:#x}) popped at {h[2]} and not yet freed",
                where=str(loc), details=f"this TPOP at {loc}; the held tile's TPOP at {h[2]}",
                fix="pop into a tile that does not overlap the held one, or TFREE the held tile first "
                    f"(a staging ring of {side.stage_num} LocalSlotNum holds that many popped tiles)")


def TFREE(pipe, obj=None, split=None, *events, unsplit: bool = False) -> Event:
    """Consumer: release the oldest held slot (signal free, advance).

    A ``split`` given must be the one its TPOP used; without one the TFREE takes its TPOP's,
    unless ``unsplit``: pto-isa's tile TFREE written without a split (``TFREE<Pipe>(pipe)``,
    ``TFREE(pipe)``), which frees as the run's library does (``ProtocolModel.unsplit_free``).
    Where the protocol frees inside the tile TPOP (pto-isa, GM ring), the tile-flow TFREE is a
    no-op."""
    try:
        core = _getcurrent().core        # current_core(), inline (the prologue, see TPUSH)
    except AttributeError:
        core = current_core()            # raises: not inside a running kernel
    if core.ff is not None:                           # fast-forward (sim.periodic)
        return core.ff.call(core, TFREE, (pipe, obj, split, *events), dict(unsplit=unsplit) if unsplit else None)
    if core.policy is not None:                       # an exploring run: a choice point
        core.cluster.visible(core, _sched.TFREE)
    if obj is not None or pipe.__class__ is not PipeHandle:
        if obj is None:
            raise ProtocolError(f"TFREE expects a pipe, got {type(pipe).__name__}", where=_loc(core),
                                fix=not_a_pipe_fix(pipe))
        if obj.__class__ is TileSplitAxis and split is None:
            obj, split = None, obj          # TFREE(pipe, split): a split is never the held object
        else:
            pipe, obj = _args(pipe, obj)
    if events:
        TSYNC(*events)
    e = pipe.consumer_end
    ch, side = e if e is not None and core is pipe.core else pipe.end("consumer", core, "TFREE")
    every = False
    if unsplit and split is None and ch.model.unsplit_free is not None and obj is None and ch.cfg.fifo is None:
        every = _unsplit_free(core, ch, side)
    if ch.pop_frees and not isinstance(obj, GlobalTensor) and not side.held:
        _free_popped(core, ch, side, split, obj)
        if ch.tfree_frees:                 # pto-isa A5: TFREE_IMPL(pipe) notifies again
            return _free_again(core, ch, side, every)
        end = core.issue_s(PipeUnit.S, 0, "TFREE",
                           RingArgs(ch.name, None, None, "no-op") if core.trace is not None else None)
        return new_event(("TFREE", core, end))
    if not side.held:
        raise ProtocolError(f"TFREE on {core.name} with no held slot of {ch.name}",
                            where=_loc(core),
                            details=f"{side.index} popped, {side.freed} freed",
                            fix="call TFREE exactly once after each TPOP")
    if split is not None and split != side.held[0][5]:
        _free_split_mismatch(core, ch, side, split)     # (raises where the device frees otherwise)
    tag, held_obj, _loc0, read_end, _dst, _split, stage = side.held.pop(0)
    chk = core.cluster.checker
    if chk is not None and not ch.in_gm and held_obj.__class__ is Tile:
        here = _here(core)
        chk.ring_access(core, ch, tag, False, "TFREE", here, held_obj.rows, held_obj.cols,
                        held_obj.item, 0)
    # release bumps the slot generation: a zero-copy tile bound to it is now stale
    end = core.issue_s(ch.free_pipe, core.costs.flag_op, "TFREE",
                       RingArgs(ch.name, tag) if core.trace is not None else None)
    if chk is not None and not ch.in_gm and held_obj.__class__ is Tile and not ch.free_after_readers:
        # the free SET follows its pipe's work only: a read of the slot on another pipe
        # (a TSTORE on MTE3) not ordered before it is still in flight when it is sent
        po = core.porder
        chk.free_unordered(core, ch, tag, held_obj, po.hb[ch.free_pipe] if po is not None else None, here,
                           core.clock if core.clock > end else end)
    release(core, ch, side, tag, read_end, held_obj, end, every)
    if chk is not None:
        # the generation this TFREE ended and its line, for a use-after-free report (only
        # with the checkers on: the hot path without them stays as it was)
        here = _here(core)
        names = None if obj is None or obj is held_obj else \
            _names_another(obj, [(h[0], h[2], h[1], h[6]) for h in side.held], side.slots)
        for sl in side.slots[tag]:
            sl.free_gen = sl.gen - 1
            sl.free_loc = here
            sl.free_names = names
        if stage is not None:
            _end_stage(stage, here, names)
    elif stage is not None:
        _end_stage(stage, None)
    if ch.sim_ring is not None:       # (C++'s TFREE(pipe) is TFREE<Pipe, TILE_NO_SPLIT>)
        ch.sim_ring.record(core, "free", ch.way, split if split is not None
                           else TileSplitAxis.TILE_NO_SPLIT if unsplit else _split, _here(core))
    return new_event(("TFREE", core, end))


TPOPDONE = TFREE
_POPPED_MAX = 64            # tile TPOPs remembered for their no-op TFREEs (beyond: unpaired)


def _names_another(obj, held, slots=None) -> tuple | None:
    """``(tag, TPOP line)`` of the pop still held (``held``: ``(tag, TPOP line, popped object,
    staging binding)`` of each, oldest first; ``slots``: the side's slots by tag) that the view
    or tile ``obj`` a TFREE names belongs to, when that TFREE released an older one (its pop is
    no longer in ``held``): a TFREE releases the oldest held slot whatever it names (pto-isa's
    ``TFREE(pipe, gmTensor)`` reads only its type), so a kernel that frees a newer view first
    has released an older one it may still read
    (:func:`~ptopipe.isa.pipe.diagnostics.released_by`)."""
    p = getattr(obj, "ptr", None)
    in_slot = p.slot if p.__class__ is SlotPtr else None
    bound = obj.binding[0] if obj.__class__ is Tile and obj.binding is not None else None
    for tag, loc, x, stage in held:
        if x is obj or (in_slot is not None and slots is not None and in_slot in slots[tag]) or \
                (bound is not None and ((stage is not None and stage[0] is bound)
                                        or (slots is not None and bound in slots[tag]))):
            return tag, loc
    return None


def _end_stage(stage, loc, names=None) -> None:
    """TFREE ends the life of a popped tile's staging copy (A2A3 GM rings): reading it
    afterwards is a use after free, as reading a zero-copy tile is on A5 (``names``: the
    other pop that TFREE named, :func:`_names_another`)."""
    s, gen = stage
    if s.gen == gen:
        s.gen = gen + 1
        if loc is not None:
            s.free_gen, s.free_loc, s.free_names = gen, loc, names


def _free_popped(core, ch: Channel, side: Side, split, obj=None) -> None:
    """The TFREE of a tile TPOP that already freed its slot (pto-isa, GM ring): the device
    does nothing, but the TFREE still pairs with its TPOP - its split must be the TPOP's,
    and the staged copy of the tile ends here."""
    j = side.tfrees
    side.tfrees = j + 1
    if j >= side.self_freed and side.extra_free is None:    # no TPOP to pair (a portability warning)
        # <- _free_popped <- TFREE <- kernel; which TFREE it is, after how many TPOPs
        side.extra_free = (core.loc_override or call_site(3), j + 1, side.self_freed)
    popped = side.popped
    while popped and popped[0][0] < j:
        del popped[0]
    if not popped or popped[0][0] != j:
        return
    _i, pop_split, pop_loc, stage = popped.pop(0)
    if split is not None and parse_split(split) != pop_split:
        _split_error(core, ch, parse_split(split), pop_split, pop_loc, None)
    if stage is not None:      # the kernel line: call_site <- _free_popped <- TFREE <- kernel
        checked = core.cluster.checker is not None
        names = _names_another(obj, [(None, p[2], None, p[3]) for p in popped]) \
            if checked and obj is not None else None
        _end_stage(stage, (core.loc_override or call_site(3)) if checked else None, names)


def _unsplit_free(core, ch: Channel, side: Side) -> bool:
    """A tile TFREE without a split under a model whose library frees with a split of its own
    (``ProtocolModel.unsplit_free``): an error where that split cannot release the TPOP's
    tile; returns whether the free notifies on every call (``unsplit_free_every``)."""
    if side.held:
        pop_split, pop_loc, tag = side.held[0][5], side.held[0][2], side.held[0][0]
    else:
        j = side.tfrees
        nxt = next((p for p in side.popped if p[0] >= j), None)
        if nxt is None or nxt[0] != j:
            return ch.model.unsplit_free_every
        pop_split, pop_loc, tag = nxt[1], nxt[2], None
    bad = ch.model.unsplit_free_error(ch, pop_split)
    if bad is not None:
        here = _loc(core)
        slot = f"slot {tag} of {ch.name}" if tag is not None else f"the tile of {ch.name}"
        raise ProtocolError(
            f"TFREE without a split on {core.name} at {here} cannot release {slot}, popped "
            f"{TileSplitAxis(pop_split).name} at {pop_loc}: {bad[0]}",
            where=here, details=f"TPOP at {pop_loc}\nTFREE at {here}", fix=bad[1])
    every = ch.model.unsplit_free_every
    if every and ch.unsplit_free_at is None and not ch.wait_every \
            and not ch.model.consumer_frees(ch, ch.model.notice_index(side.freed if side.held else side.tfrees,
                                                                      side.index)):
        ch.unsplit_free_at = _loc(core)      # a credit the sparse rule would not send
    return every


def _free_again(core, ch: Channel, side: Side, every: bool = False) -> Event:
    """pto-isa A5: a tile TFREE after a TPOP that freed its GM slot already sends a free
    again when ``shouldNotifyFree(cons.tileIndex - 1)`` (a5/TFree.hpp; ``every``: on every
    call, the TFREE without a split): a second credit for one slot, which lets the producer
    overwrite a slot the consumer has not popped yet."""
    if ch.free_again_at is None:
        ch.free_again_at = _loc(core)
    end = core.issue_s(PipeUnit.MTE2, core.costs.flag_op, "TFREE",
                       RingArgs(ch.name, None, None, "free again") if core.trace is not None else None)
    if side.index and side.free and (every or ch.wait_every or ch.model.consumer_frees(ch, side.index - 1)):
        set_flag = core.cluster.set_flag
        for f in side.free_flags[(side.index - 1) % ch.slot_num]:
            set_flag(core, f, end)
    return new_event(("TFREE", core, end))


def _free_split_mismatch(core, ch: Channel, side: Side, split) -> None:
    tag, _obj, pop_loc, _r, _d, pop_split, _s = side.held[0]
    _split_error(core, ch, parse_split(split), pop_split, pop_loc, tag)


def _split_error(core, ch: Channel, split, pop_split, pop_loc, tag) -> None:
    """A TFREE given ``split`` of a slot its TPOP popped with ``pop_split``: an error where the
    device's free then releases another lane set than the TPOP took
    (:func:`~ptopipe.protocol.geometry.free_split_problem`), else nothing."""
    why = free_split_problem(ch.way, pop_split, split)
    if why is None:
        return
    here = _loc(core)
    slot = f"slot {tag} of {ch.name}" if tag is not None else f"the tile of {ch.name}"
    cpp = is_cpp(here)           # (a C++ TFREE(pipe) frees with the library's split, not the TPOP's)
    unsplit_frees = not cpp or ch.model.unsplit_free_error(ch, pop_split) is None
    raise ProtocolError(
        f"TFREE on {core.name} at {here} gives split {split.name} but the TPOP of {slot} "
        f"used {TileSplitAxis(pop_split).name} (TPOP at {pop_loc}): {why}",
        where=here, details=f"TPOP at {pop_loc}\nTFREE at {here}",
        fix=free_split_fix(pop_split, unsplit_frees, cpp, is_pto(here)))
