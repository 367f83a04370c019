"""The protocol steps every flow shares: argument order, the producer's wait for a free
slot and its ready signal, slot state on a write, and the consumer's release (free signal
per the protocol model).  Used by the tile flow (:mod:`.ops`) and the address / control
flows (:mod:`.flows`)."""
from __future__ import annotations

from ...arch import PipeUnit
from ...sim import CoreKind
from ...arch.vocab import C2V, TileSplitAxis
from ...errors import ProtocolError
from ...sim.location import caller_loc, is_cpp
from ...protocol.geometry import one_lane
from ...sim.porder import join
from ..context import current_core
from ..indexed import gm_end_off_gm_pipes
from ..tile import Tile
from .channel import Channel, PipeHandle, Side, link_side
from .diagnostics import overwrite_error


def _loc(core) -> str:
    return str(core.where())


def _here(core):
    """The kernel line of the ISA call being executed (cheap: a fixed frame depth)."""
    o = core.loc_override
    return o if o is not None else caller_loc(3)


def _args(a, b):
    """Accept ``(pipe, x)`` and ``(x, pipe)`` argument orders, as the seeds use both."""
    if isinstance(a, PipeHandle):
        return a, b
    if isinstance(b, PipeHandle):
        return b, a
    raise ProtocolError(f"expected a pipe (from TPipe(...)(...) or *_initialize_pipe), got "
                        f"{type(a).__name__} and {type(b).__name__}", where=_loc(current_core()),
                        fix=not_a_pipe_fix(a, b))


def not_a_pipe_fix(*given) -> str:
    """How to pass a pipe where a ring instruction got ``given``: a TPipe not yet called with
    its buffers is the pipe's type, not a pipe of this core."""
    from .config import TPipe
    if any(isinstance(x, TPipe) for x in given):
        return ("call the TPipe with its ring buffer to bind it on this core and pass what the call returns: "
                "pipe = TPipe(flag_id, direction, slot_size, slot_num)(gm_buffer, c2v_consumer_buf, "
                "v2c_consumer_buf)")
    return ("pass the pipe handle that TPipe(...)(...) or aic_/aiv_initialize_pipe returned, e.g. "
            "TPOP(pipe, tile, TILE_UP_DOWN) (not the GM ring buffer or a tile)")


def wait(core, ch: Channel, flag, op: str, signal: str, tag: int, index: int) -> int:
    """WAIT for a ready/free flag of ``ch``; the description is built only if it blocks
    (callers WAIT directly when ``flag.count`` shows it will not)."""

    def what() -> str:
        other = flag.sender.name
        if ch.model.per_tag_flags:
            return f"{op} (wait {signal}[{tag}] from {other})"
        return f"{op} (wait {signal} from {other}, {'push' if signal == 'free' else 'pop'} #{index})"
    return core.wait_flag(flag, what, {"channel": ch, "signal": signal, "tag": tag})


def producer_wait(core, ch: Channel, side: Side, op: str) -> int:
    """Wait until the slot for push ``side.index`` is free; returns its tag."""
    i = side.index
    tag = i % ch.slot_num
    if side.allocate and (ch.wait_every or ch.model.producer_waits(ch, i)):
        for f in side.free_flags[tag]:
            if f.count:
                core.wait_flag(f, None)
            else:
                wait(core, ch, f, op, "free", tag, i)
    return tag


def producer_record(core, side: Side, tag: int, at: int, order=None) -> None:
    """Signal ready for slot ``tag`` at cycle ``at``; ``order``: what happens before the
    SET (sim.porder; None: the instruction issued last)."""
    if side.record:
        set_flag = core.cluster.set_flag
        for f in side.ready_flags[tag]:
            set_flag(core, f, at, order)


def check_split(core, ch: Channel, slot, psplit, split, op: str, loc, address: bool = False) -> None:
    """The consumer's split must be the producer's: ``psplit``, that of ``slot``'s push
    (``address``: a GlobalTensor TPOP's, whose split places the lane's view in the slot)."""
    if psplit != split:
        where = str(loc or core.where())
        producer = "the Cube" if ch.way == C2V else "a Vector core"
        raise ProtocolError(
            f"{op} on {core.name} at {where}: split {TileSplitAxis(split).name} does not match the pushed tile's "
            f"split {TileSplitAxis(psplit).name} ({producer}'s TPUSH at {slot.push_loc}, slot {slot.tag} of "
            f"{ch.name})",
            where=where, details=f"TPUSH at {slot.push_loc}\n{op} at {where}",
            fix="the producer's TPUSH and the consumer's TPOP must use the same TileSplitAxis"
                + (" (a GlobalTensor TPOP's split gives the lane's offset in the slot, pto-isa's "
                   "getPopSubAIVOffset: with another split a lane's view is not its part of the pushed tile)"
                   if address else
                   " (a C2V ring in GM, as on A2A3, holds the Cube's whole tile: a TILE_NO_SPLIT push may be "
                   "popped in parts, each Vector core its own; a split push is popped with its split; on A5 the "
                   "Cube's split decides which Vector core receives which part)" if ch.way == C2V and ch.in_gm
                   else ""))


def mark_written(core, ch: Channel, side: Side, tag: int, layout, op: str, loc, split=None) -> None:
    """A producer wrote slot ``tag``: it must not be unconsumed or held by a consumer (each
    consumer's copy of the slot for C2V; the producing AIV's part for V2C).  ``layout``: a
    tile push's; ``split``: an address-flow push's."""
    slots = side.slots[tag]
    for s in slots:
        if s.state != "free":
            raise overwrite_error(core, ch, s, op, loc)
    for s in slots:
        s.state = "written"
        s.layout = layout
        s.push_split = split
        s.push_loc = loc


def release(core, ch: Channel, side: Side, tag: int, read_end, obj, issued: int = 0, every: bool = False) -> None:
    """Mark slot ``tag`` free for this consumer and signal the producer per the protocol
    (``issued``: the end of the TFREE instruction on its pipe, a floor of the SET's time;
    ``every``: signal whatever the protocol's notification rule - pto-isa A5's TFREE without a
    split, ``ProtocolModel.unsplit_free_every``)."""
    for s in side.slots[tag]:
        s.state = "free"
        s.gen += 1
    at = core.clock if core.clock > issued else issued
    po = core.porder          # (the race checker: what happens before the free SET)
    order = po.last if po is not None else None
    # (the SET is an instruction on the free's pipe: its simulated time waits for the slot's
    # readers on other pipes only where the model's free does - pto-isa's sends it from that
    # pipe, with a TSTORE of the popped tile still running: KernelChecks.free_unordered)
    after = ch.free_after_readers
    if obj.__class__ is Tile:
        if after and obj.read_end > at:
            at = obj.read_end
        if po is not None and after:    # after the popped tile's readers
            order = join(order, obj.hbu)
    elif obj is not None and after:     # the address flow: the slot was read / written through
        pf = core.pipe_free               # GM views by TLOADs / TSTOREs, MGATHER / MSCATTERs: signal
        at = max(at, pf[PipeUnit.MTE2], pf[PipeUnit.MTE3], gm_end_off_gm_pipes(core))  # after they end
        if po is not None:
            order = join(join(order, po.hb[PipeUnit.MTE2]), po.hb[PipeUnit.MTE3])
    # (else the SET follows its own pipe's work only - ``issued`` - as pto-isa's Consumer::free: a
    # TSTORE into a popped GM slot still running on MTE3 is not covered by it, in run and check)
    if read_end is not None and read_end > at:
        at = read_end
    k = side.freed
    side.freed = k + 1
    if side.free and not ch.lost_lanes and (every or ch.wait_every or _notifies(core, ch, k, side.index)):
        set_flag = core.cluster.set_flag
        for f in side.free_flags[tag]:
            set_flag(core, f, at, order)


#: the TFREE lines a channel keeps of those that sent no free where the producer counted on one
_SILENT_KEPT = 3


def _notifies(core, ch: Channel, k: int, popped: int) -> bool:
    """Does release ``k`` of a consumer that has made ``popped`` TPOPs send its free under the
    sparse rule (:meth:`~ptopipe.protocol.model.ProtocolModel.notice_index`)?  One whose answer
    is not the producer's count (a tile freed after a later TPOP of its ring, pto-isa) is noted
    on the channel for the diagnoses (``moved_extra`` / ``moved_silent``)."""
    m = ch.model
    j = m.notice_index(k, popped)
    send = m.consumer_frees(ch, j)
    if j != k and send != m.consumer_frees(ch, k):
        note = (str(core.where()), k, j)
        if send:
            if ch.moved_extra is None:
                ch.moved_extra = note
        elif len(ch.moved_silent) < _SILENT_KEPT and all(n[0] != note[0] for n in ch.moved_silent):
            ch.moved_silent.append(note)
    return send


def check_nosplit_lanes(core, ch: Channel, split, op: str) -> None:
    """A5 (spec and pto-isa, :func:`~ptopipe.protocol.model.nosplit_one_lane`): a TILE_NO_SPLIT
    transfer has one lane.  The Cube's NO_SPLIT record, wait,
    free and allocate use flag id FlagID only (``setIntraBlockBySplit`` /
    ``waitIntraBlockBySplit`` add AIV1's id + 16 only for a split), so on a pipe with AIV1 as a
    peer the first NO_SPLIT transfer makes the pipe's transfers AIV0's (``Channel.lane0_at``:
    the Cube's side links AIV0 alone) - AIV1 keeps its construction and teardown, as on the
    device, where a kernel that leaves AIV1 out of the transfers runs clean.  A NO_SPLIT
    transfer of AIV1, one after any transfer of the pipe, and a split transfer once the pipe's
    transfers are AIV0's are reported (they hang or race on the device).  Not on a pto-isa TMPipe:
    its Cube waits for and signals both lanes whatever the split (``Channel.lanes_fixed``), so a
    lane its VecCubeRatio leaves out hangs the Cube first.  On either platform a split push on a
    pipe declared with one lane is refused (:func:`_one_lane_split`; a split pop there lands on
    a push that was refused, or is the split mismatch naming its push)."""
    if split and len(ch.peers) == 1 and op != "TPOP":
        _one_lane_split(core, ch, split, op)
    if not ch.model.nosplit_lane0 or 1 not in ch.peers or ch.lanes_fixed:
        return
    if split:
        if ch.lane0_at is None:
            return
        raise ProtocolError(
            f"{op}({TileSplitAxis(split).name}) on {core.name}, {ch.name}: the TILE_NO_SPLIT transfer at "
            f"{ch.lane0_at} made this pipe's transfers AIV0's alone (on A5 the Cube's NO_SPLIT "
            f"SET/WAIT use flag id {ch.ready_id}/{ch.free_id} only), so AIV1's flags count none of them and "
            "a split transfer's handshake with AIV1 is out of step",
            where=_loc(core),
            fix="use one split for every transfer of a pipe: TILE_NO_SPLIT with AIV0 alone, or a split "
                "(TILE_UP_DOWN / TILE_LEFT_RIGHT) with both Vector cores")
    aiv1 = core.kind is CoreKind.AIV and core.subblock == 1
    if 0 not in ch.peers:
        why = "the pipe's one lane is AIV1"
    elif ch.lane0_at is None and any(sd.index or sd.held or sd.pending_alloc for sd in ch.sides.values()):
        if op == "TPOP":
            return      # it pops a split push (a NO_SPLIT one was refused where it was pushed):
                        # the split mismatch its landing reports, naming the push, is the mistake
                        # (on either lane: which lane pops first is the schedule's)
        why = "the pipe's earlier transfers were split, with AIV1 in their handshakes"
    elif aiv1:
        why = f"{core.name} is not that lane"
    else:
        if ch.lane0_at is None:
            ch.lane0_at = _loc(core)
            for sd in ch.sides.values():
                if sd.core.kind is CoreKind.AIC:
                    link_side(ch, sd, ch.lanes)
        return
    alloc = (" (and its TALLOC hands AIV1 the slot + a LEFT_RIGHT offset: getSubAIVOffset tests "
             "NO_SPLIT after the split cases)") if op == "TALLOC" and aiv1 else ""
    raise ProtocolError(
        f"{op}(TILE_NO_SPLIT) on {core.name}, {ch.name}: on A5 a NO_SPLIT transfer has one lane, "
        f"AIV0 - the Cube's NO_SPLIT SET/WAIT use flag id {ch.ready_id}/{ch.free_id} only, never AIV1's "
        f"id + 16 (setIntraBlockBySplit / waitIntraBlockBySplit), and {why}, so AIV1's side of the handshake "
        f"is lost (a wait that never returns, or a slot reused before AIV1 freed it){alloc}",
        where=_loc(core),
        fix=f"give a NO_SPLIT pipe one lane on A5 ({one_lane(is_cpp(core.where()))}; or keep AIV1 out of its "
            "transfers), or split the tile between both Vector cores (TILE_UP_DOWN / TILE_LEFT_RIGHT)")


def _one_lane_split(core, ch: Channel, split, op: str) -> None:
    """A split transfer on a pipe of one Vector lane (ISA ``peers=(0,)``, DSL ``lanes=1``, C++
    ``IsNoSplit = true``): a split divides each tile between two Vector cores, so the part of
    the lane that is not on the pipe is pushed to no one (C2V) or never pushed (V2C); on A5 the
    Cube's split SET / WAIT also count on that lane's flags (id + 16), which no one answers."""
    lane = f"AIV{ch.peers[0]}"
    other = f"AIV{1 - ch.peers[0]}"
    name = TileSplitAxis(split).name
    lost = (f"the Cube pushes {other}'s part where no lane pops it" if ch.way == C2V else
            f"{other}'s part of the slot is never pushed")
    raise ProtocolError(
        f"{op}({name}) on {core.name}, {ch.name}: the pipe has one Vector lane, {lane}, but {name} divides "
        f"each tile between two Vector cores: {lost} (on A5 the Cube's split handshake also waits for "
        f"{other}'s flags, a hang)",
        where=_loc(core),
        fix=f"move whole tiles through a one-lane pipe (TILE_NO_SPLIT at both ends: {lane} handles each tile), "
            "or give the pipe both Vector cores (ISA TPipe peers=(0, 1), the default; no lanes=1 on a DSL "
            "initialize_pipe; C++ TPipe<..., IsNoSplit = false>) and let each take its part")


def check_lanes_split(core, ch, split, op: str) -> None:
    """A V2C TALLOC on a ring written by two Vector lanes: each lane owns its part of the
    slot, so a NO_SPLIT address (the whole slot at offset 0) gives both lanes the same bytes.
    (A tile TPUSH is judged when it lands: a lane with an empty valid shape replays the
    handshake of a NO_SPLIT pipe, two lanes with data race on the slot - isa/checks.py.)"""
    if len(ch.peers) > 1 and split == TileSplitAxis.TILE_NO_SPLIT:
        lanes = " and ".join(f"AIV{p}" for p in ch.peers)
        raise ProtocolError(
            f"{op} TILE_NO_SPLIT on {ch.name}: the pipe has two producer lanes ({lanes}), and a "
            "NO_SPLIT tile is the whole slot, so both lanes would write the same bytes",
            where=_loc(core),
            fix="split the tile between the lanes (TILE_UP_DOWN: each lane pushes its half of the rows, "
                "TILE_LEFT_RIGHT: its half of the columns; the Cube pops the whole tile with the same "
                f"split), or give the pipe one lane ({one_lane(is_cpp(core.where()))}"
                # (pto-isa's TMPipe waits for both lanes whatever its ratio: no one-lane form there)
                + ("" if ch.model.tmpipe_rendezvous else "; TMPipe V1C1_VEC0") + ")")
