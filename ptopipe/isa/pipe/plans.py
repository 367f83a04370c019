"""Push/pop plans: what a TPUSH or TPOP of one tile geometry on one channel does - the
slot views it writes or reads for every tag, the pipe unit and the cost - worked out and
checked once, then cached per channel (and on the tile for the inline fast path), and the
consumer-side check that a popped tile matches what its producer pushed (dtype, shape,
split and tile layout: ND / NZ ...).  A push of an empty tile (0 valid rows or cols: the
no-split lane-1 replay) writes nothing and records no layout; it keeps the handshake only.
"""
from __future__ import annotations

import numpy as np

from ...arch import MemSpace
from ...arch.vocab import C2V, V2C, TileLayout, TileSplitAxis
from ...errors import ProtocolError
from ..tile import Tile, TileType, spell_tile
from ...protocol.geometry import (ODD_SPLITS, a_layout, full_shape, layout_fix, odd_pop_problem, pop_split_fits,
                                 odd_split_problem, part_rows, part_shape, pop_converts, share_problem, slot_layout,
                                 slot_shape, split_push_problem)
from ...protocol.slots import SIM_ONLY_FIX, pop_band, problem_text, push_band, read_problem, whole_pop_problem
from ..ops import check_move_layout
from .steps import check_nosplit_lanes, check_split


def _loc(core) -> str:
    return str(core.where())


class PushPlan:
    """What a TPUSH of one tile geometry does, worked out (and checked) once per channel."""
    __slots__ = ("dsts", "unit", "cost", "layout")

    def __init__(self, dsts, unit, cost, layout):
        self.dsts, self.unit, self.cost, self.layout = dsts, unit, cost, layout


class PopPlan:
    """What a TPOP of one tile geometry does, worked out (and checked) once per channel."""
    __slots__ = ("srcs", "cost", "ok_layout", "whole")

    def __init__(self, srcs, cost, whole=None):
        # ``whole``: the ProtocolError of a pop the protocol cannot take whole (slots.whole_pop_problem)
        self.srcs, self.cost, self.ok_layout, self.whole = srcs, cost, None, whole


def plan(core, ch, tile: Tile, split, make):
    """The checked push/pop plan of ``tile`` on ``ch``: made once per tile geometry, then
    cached on the tile as ``(ch, split, core, plan)`` (TPUSH/TPOP check that cache inline)."""
    key = (core.index, tile.loc, tile.dtype, tile.rows, tile.cols, tile.valid_rows, tile.valid_cols,
           int(split), ch.way, tile.layout)
    p = ch.plans.get(key)
    if p is None:
        op = "TPUSH" if make is push_plan else "TPOP"
        check_nosplit_lanes(core, ch, split, op)
        bad = odd_split_problem(split, ch.way, ch.in_gm)
        if bad is not None:
            raise ProtocolError(f"{op} {split.name} of {tile.describe()} on {ch.name}: {bad[0]}", where=_loc(core),
                                fix=bad[1])
        p = ch.plans[key] = make(core, ch, tile, split)
    tile._plan = (ch, split, core, p)
    return p


def _halves(core, ch, tile: Tile, split, op: str) -> None:
    """The Cube's whole tile of a split transfer must divide between the two Vector cores, and a
    Vector core's part must fit the slot's layout
    (:func:`~ptopipe.protocol.geometry.split_push_problem`)."""
    bad = split_push_problem(split, (tile.rows, tile.cols), (tile.valid_rows, tile.valid_cols),
                             tile.dtype.itemsize, acc_to_ub=tile.loc is TileType.Acc and not ch.in_gm,
                             vec_to_l1=op == "TPUSH" and ch.way == V2C and not ch.in_gm)
    if bad is not None:
        raise ProtocolError(f"{op} {split.name} of {tile.describe()} on {ch.name}: {bad[0]}", where=_loc(core),
                            fix=bad[1])


def push_plan(core, ch, tile: Tile, split) -> PushPlan:
    shape = (tile.valid_rows, tile.valid_cols)
    want = TileType.Acc if ch.way == C2V else TileType.Vec
    if tile.loc is not want:
        raise ProtocolError(f"TPUSH on {ch.way}: the producer tile must be {want.value}, got {tile.describe()}",
                            where=_loc(core),
                            fix="TMATMUL into an Acc tile" if want is TileType.Acc else "push a Vec tile")
    item = tile.dtype.itemsize
    rows, cols = shape
    if ch.way == C2V or not ch.in_gm:
        _halves(core, ch, tile, split, "TPUSH")
    nbytes = rows * cols * item
    full = full_shape(split, rows, cols) if ch.way == V2C else (rows, cols)
    held = slot_shape(ch.way, ch.in_gm, split, *full)
    if held[0] * held[1] * item > ch.slot_size:
        raise ProtocolError(
            f"TPUSH of {tile.describe()} ({nbytes} bytes"
            + (f"; the slot holds the {full[0]}x{full[1]} tile both Vector cores' {split.name} parts make, "
               f"{full[0] * full[1] * item} bytes" if full != (rows, cols) else "")
            + (f", {held[0]}x{held[1]} = {held[0] * held[1] * item} bytes in each Vector core's slot"
               if held != full else "")
            + f") does not fit SlotSize {ch.slot_size} of {ch.name}",
            where=_loc(core),
            fix=f"declare SlotSize {held[0] * held[1] * item} (or more) on the pipe, or push smaller tiles"
                + (f" (the ring is in the Vector cores' UB: each core's slot holds its {split.name} part of "
                   "the Cube's tile)" if held != full else ""))
    if ch.way == V2C and ch.in_gm:          # pto-isa TSTOREs the Vec tile into an ND GlobalTensor
        check_move_layout(core, "TSTORE", TileLayout.ND, tile, f"the GM slot of {ch.name}", "TPUSH")
    # where the protocol puts the tile in a slot (protocol.slots): per consumer lane's UB slot
    # for a C2V ring local to the Vector cores, else the one slot (this lane's part for V2C)
    kind, static = ch.model.slot_placement, (tile.rows, tile.cols)
    if ch.way == C2V and not ch.in_gm:
        bands = [(push_band(kind, C2V, False, split, static, shape, p), p) for p in ch.lanes]
    else:
        bands = [(push_band(kind, ch.way, ch.in_gm, split, static, shape, core.subblock), None)]
    for b, _p in bands:
        if b.span() * item > ch.slot_size:
            raise ProtocolError(
                f"TPUSH of {tile.describe()} does not fit SlotSize {ch.slot_size} of {ch.name}: the slot holds its "
                f"{b.rows}x{b.cols} {'part' if split else 'valid region'} with rows {b.pitch} elements apart "
                f"(the protocol's slot tile), {b.span() * item} bytes",
                where=_loc(core), fix=f"declare SlotSize {b.span() * item} (or more) on the pipe")
    cluster = core.cluster
    dsts = []
    for tag in range(ch.slot_num):
        per_peer = []
        for b, p in bands:
            if p is not None:
                mem, base = cluster.aiv(p).memory(MemSpace.UB), ch.local_base
            elif ch.in_gm:
                mem, base = cluster.gm, ch.gm_base
            else:
                mem, base = cluster.aic.memory(MemSpace.L1), ch.local_base
            view = ch.view(mem, base + tag * ch.slot_size + b.offset * item, tile.dtype, (b.rows, b.cols),
                           (b.pitch, 1))
            # the block of the pushed valid region the band holds (a V2C push: the whole part)
            part = None if ch.way != C2V else (slice(b.row0, b.row0 + b.rows), slice(b.col0, b.col0 + b.cols))
            per_peer.append((view, p, part))
        dsts.append(tuple(per_peer))
    unit = ch.push_pipe
    dst_space = "GM" if ch.in_gm else "UB" if ch.way == C2V else "L1"
    # what the slot holds: an empty tile writes nothing (no layout to match); the static
    # shape last (the valid shape is what was written)
    layout = None if nbytes == 0 else \
        (tile.dtype, rows, cols, split, slot_layout(ch.way, tile.layout), tile.rows, tile.cols)
    return PushPlan(dsts, unit, core.costs.move(tile.sname, dst_space, nbytes), layout)


def pop_plan(core, ch, tile: Tile, split) -> PopPlan:
    want = TileType.Vec if ch.way == C2V else TileType.Mat
    if tile.loc is not want:
        where = _loc(core)
        raise ProtocolError(f"TPOP on {ch.way}: the consumer tile must be {want.value}, got {tile.describe()}",
                            where=where, fix=f"pop into a {spell_tile(where, want, '...', 'T, Rows, Cols')}: the "
                            f"{'Vector' if want is TileType.Vec else 'Cube'} core's side of the {ch.way} ring")
    rows, cols, item = tile.rows, tile.cols, tile.dtype.itemsize
    if ch.way == V2C:
        _halves(core, ch, tile, split, "TPOP")
    if rows * cols * item > ch.slot_size:        # also: a staging slot is SlotSize bytes
        raise ProtocolError(f"TPOP of {tile.describe()} does not fit SlotSize {ch.slot_size} of {ch.name}",
                            where=_loc(core), fix="pop tiles of the pushed shape")
    # a pop the protocol's code cannot take whole: raised by the TPOP after it judged what the
    # pop reads of the slot (check_layout), which says more when the bytes are misplaced too
    whole = None if tile.empty else \
        whole_pop_problem(ch.model.slot_placement, ch.way, ch.in_gm, (rows, cols), (tile.valid_rows, tile.valid_cols))
    if whole is not None:
        whole = ProtocolError(f"TPOP of {tile.describe()} on {ch.name}: {whole[0]}", where=_loc(core), fix=whole[1])
    if not ch.in_gm:
        return PopPlan(None, core.costs.flag_op, whole)
    # pto-isa TLOADs the tile from an ND GlobalTensor over the slot
    check_move_layout(core, "TLOAD", TileLayout.ND, tile, f"the GM slot of {ch.name}", "TPOP")
    gm = core.cluster.gm
    srcs = []
    # what the protocol's pop reads of the slot (protocol.slots), judged against the push by
    # check_layout; an empty tile (the no-split lane-1 replay, an odd split's empty share) reads
    # nothing: a view at the slot's start stands for it
    valid = (rows, cols) if tile.empty else (tile.valid_rows, tile.valid_cols)
    if split in ODD_SPLITS and ch.way == C2V and not tile.empty:
        _odd_band_in_slot(core, ch, tile, split, valid[0], valid[1], item)
    b = pop_band(ch.model.slot_placement, ch.way, True, TileSplitAxis.TILE_NO_SPLIT if tile.empty else split,
                 (rows, cols), valid, core.subblock if ch.way == C2V else 0)
    if b.span() * item > ch.slot_size:
        raise ProtocolError(
            f"TPOP of {tile.describe()} ({TileSplitAxis(split).name}) on {core.name} reads past its slot of {ch.name}: "
            f"its valid {valid[0]}x{valid[1]}, rows {b.pitch} elements apart from element {b.offset}, ends at byte "
            f"{b.span() * item} of a {ch.slot_size}-byte slot",
            where=_loc(core), fix="pop at most the pushed valid region (a split lane: its part of it)")
    for tag in range(ch.slot_num):
        v = ch.view(gm, ch.gm_base + tag * ch.slot_size + b.offset * item, tile.dtype, valid, (b.pitch, 1))
        srcs.append(v[:tile.valid_rows, :tile.valid_cols])
    return PopPlan(srcs, core.costs.move("GM", tile.sname, 0 if tile.empty else rows * cols * item), whole)


def _odd_band_in_slot(core, ch, tile: Tile, split, vrows: int, vcols: int, item: int) -> None:
    """An odd split's lane band, placed from the lane's own extent, must end inside the slot: a
    band past it is a per-lane extent that does not match the pushed tile (said against the slot's
    pushed tile when it has one, :func:`check_layout`), else against SlotSize."""
    off, stride = part_rows(split, core.subblock, vrows, vcols, item)
    end = off + (vrows - 1) * stride + vcols * item
    if end <= ch.slot_size:
        return
    side = ch.sides[core.index]
    for s in side.slots[side.index % ch.slot_num]:
        if s.layout is not None:
            check_layout(core, ch, [s], [core.subblock], tile.dtype, tile.rows, tile.cols, split, "TPOP", None,
                         tile.layout, (vrows, vcols))
    raise ProtocolError(
        f"TPOP {split.name} of {tile.describe()} on {core.name}: pto-isa places AIV{core.subblock}'s band from its own "
        f"{vrows}x{vcols} extent at byte {off} of the slot, {stride} bytes a row, so it reads up to byte {end}, past "
        f"SlotSize {ch.slot_size} of {ch.name}", where=_loc(core),
        fix=f"{split.name} gives AIV0 n/2 + 1 and AIV1 n/2 of the pushed odd extent n: pop AIV{core.subblock}'s share")


def check_layout(core, ch, slots, lanes, dtype, rows: int, cols: int, split, op: str, loc=None,
                 layout: TileLayout | None = None, valid: tuple | None = None) -> None:
    """The consumer's ``rows x cols`` ``dtype`` tile (its ``split`` part) in ``layout``, valid
    region ``valid`` (default: the whole tile), popped from ``slots`` (one per Vector lane of
    ``lanes`` the pop reads: the consumer's own for C2V, both producers' parts for V2C), must
    match what the producers pushed: dtype, split mode (either direction), tile layout, and the
    elements the protocol's pop reads (:mod:`~ptopipe.protocol.slots`) must be the pushed ones
    at their places - a smaller valid region than the push reads its top-left block (a
    dynamic tail), a read of unpushed elements, at another row pitch or of another lane's
    band is refused with the device's reason.  An empty consumer valid region is the no-split
    lane-1 replay and matches any.  The message gives both tiles' static and valid shapes."""
    pushed = [(lane if ch.way == V2C else core.subblock, s) for lane, s in zip(lanes, slots) if s.layout is not None]
    if not pushed:
        return
    vrow, vcol = valid if valid is not None else (rows, cols)
    for _lane, slot in pushed:
        if not pop_split_fits(ch.way, ch.in_gm, slot.layout[3], split):
            check_split(core, ch, slot, slot.layout[3], split, op, loc)
    kind = ch.model.slot_placement
    bands = [push_band(kind, ch.way, ch.in_gm, s.layout[3], s.layout[5:7], s.layout[1:3], lane) for lane, s in pushed]
    lane = core.subblock if ch.way == C2V else 0
    if split in ODD_SPLITS:
        # a C2V ring in GM (odd_split_problem refuses the rest): the lanes' bands differ, each
        # placed from the lane's own extent - judged against the pushed valid region
        _check_odd_pop(core, ch, pushed[0][1], split, (vrow, vcol), op, loc)
        prob = None
    else:
        prob = None if vrow * vcol == 0 else \
            read_problem(bands, pop_band(kind, ch.way, ch.in_gm, split, (rows, cols), (vrow, vcol), lane), split)
    partner = False
    if prob is None and vrow * vcol and ch.way == C2V and split not in (TileSplitAxis.TILE_NO_SPLIT, *ODD_SPLITS):
        # the parts of a split are equal (pto-isa's lane offsets are lane x the valid shape):
        # the other lane's TPOP of this valid shape must read pushed elements too
        other = 1 - lane
        obands = bands if ch.in_gm else \
            [push_band(kind, C2V, False, s.layout[3], s.layout[5:7], s.layout[1:3], other) for _l, s in pushed]
        oprob = read_problem(obands, pop_band(kind, C2V, ch.in_gm, split, (rows, cols), (vrow, vcol), other), split)
        if oprob is not None and oprob.kind == "unpushed":
            prob, lane, partner = oprob, other, True
    slot = pushed[0][1]
    lay = slot.layout
    pdtype, pvrow, pvcol, psplit = lay[:4]
    prow, pcol = lay[5:7]
    if prob is None and vrow * vcol and (ch.way == C2V or len(pushed) > 1):
        _check_holds_share(core, ch, slot, (rows, cols), (vrow, vcol), dtype, split, op, loc)
    if prob is not None or pdtype != dtype:
        where = str(loc or core.where())
        want = part_shape(split, pvrow, pvcol) if ch.way == C2V else full_shape(psplit, pvrow, pvcol)
        # a split tile is pushed whole and popped in parts (C2V), or pushed in parts and popped
        # whole (V2C): the pushed tile says what each side's share is, so the two differ in print
        share = "" if psplit == TileSplitAxis.TILE_NO_SPLIT else \
            f": {want[0]}x{want[1]} per Vector core" if ch.way == C2V else f": {want[0]}x{want[1]} from both Vector cores"
        cons = f"{rows}x{cols}{_valid(vrow, vcol, rows, cols)} {np.dtype(dtype).name} ({TileSplitAxis(split).name})"
        prod = f"{prow}x{pcol}{_valid(pvrow, pvcol, prow, pcol)} {pdtype.name} ({TileSplitAxis(psplit).name}{share})"
        pitch = prob is not None and prob.kind == "pitch"
        why = fix = None
        if prob is not None:
            why, fix = problem_text(kind, ch.way, ch.in_gm, split, prob, lane, (vrow, vcol), partner)
        details = "\n".join(t for t in (f"{'in the CPU simulator' if kind == 'cpusim' else 'on the device'}: {why}" if why else None,
                                          f"pushed at {slot.push_loc}" if slot.push_loc else None) if t)
        if prob is not None and not pitch and pdtype == dtype and (vrow, vcol) == want:
            # the consumer pops the part it should: what goes wrong is where the library reads
            # it from (a lane's part the placement does not put where that lane reads)
            place = "in pto-isa's CPU simulator" if kind == "cpusim" else "there"
            raise ProtocolError(
                f"{op} on {core.name}: the consumer tile {cons} pops its part of the pushed tile {prod} of slot "
                f"{slot.tag}, but {_reader_lane(ch, split, lane)} would read elements the push did not write "
                f"{place} (details)",
                where=where, details=details or None, fix=_placement_fix(kind, fix))
        differs = [w for w, d in (("dtype", pdtype != dtype), ("row pitch" if pitch else "valid shape", prob is not None))
                   if d]
        sim_only = prob is not None and pdtype == dtype and _device_reads_right(ch, pushed, split, (rows, cols), (vrow, vcol),
                                                                               lane)
        if sim_only:
            differs = ["slot layout"]
            fix = (f"the device (--protocol pto-isa) reads this slot right: {SIM_ONLY_FIX}")
        tail = ("pto-isa's CPU simulator lays the slot out differently from the device, whose pop reads the pushed "
                "elements here" if sim_only else
                f"the slot's rows are {prob.pitches[1]} elements apart, the pop reads them {prob.pitches[0]} apart"
                if pitch and pdtype == dtype else
                f"it should pop a valid {want[0]}x{want[1]} {pdtype.name}"
                + (" (its part of the pushed valid region)" if ch.way == C2V and want != (pvrow, pvcol) else ""))
        raise ProtocolError(
            f"{op} on {core.name}: the consumer tile {cons} does not match the pushed tile {prod} "
            f"of slot {slot.tag} - the {' and the '.join(differs)} differ{'s' if len(differs) == 1 else ''}: {tail}",
            where=where, details=details or None,
            fix=fix or "producer and consumer must agree on dtype, valid shape and split mode "
                       "(UP_DOWN halves rows, LEFT_RIGHT halves columns)")
    play = lay[4] if len(lay) > 4 else None
    if layout is not None and play is not None and play is not layout and not pop_converts(ch.way, ch.in_gm):
        raise layout_mismatch(core, ch, slot, play, layout, op, str(loc or core.where()))


def _check_holds_share(core, ch, slot, static: tuple, valid: tuple, dtype, split, op: str, loc) -> None:
    """A split TPOP's consumer tile must hold its share of the split push
    (:func:`~ptopipe.protocol.geometry.share_problem`, the rule VerifyPipes checks too):
    refused at the TPOP, on every platform - not the wrong numbers or the next transfer's
    shape later."""
    pdtype, pvrow, pvcol, psplit = slot.layout[:4]
    bad = share_problem(ch.way, psplit, (pvrow, pvcol), split, static, pdtype.name)
    if bad is None:
        return
    held, tail, fix = bad
    raise ProtocolError(
        f"{op} on {core.name}: the consumer tile {static[0]}x{static[1]}{_valid(*valid, *static)} "
        f"{np.dtype(dtype).name} ({TileSplitAxis(split).name}) cannot hold {held} in slot {slot.tag} of "
        f"{ch.name} - {tail}",
        where=str(loc or core.where()),
        details=f"pushed at {slot.push_loc}" if slot.push_loc else None, fix=fix)


def _reader_lane(ch, split, lane: int) -> str:
    """Who reads a part of a slot: a split C2V pop's lane, else the pop."""
    if ch.way == C2V and split != TileSplitAxis.TILE_NO_SPLIT:
        return f"lane {lane} (AIV{lane})"
    return "the pop"


def _placement_fix(kind: str, fix: str | None) -> str:
    """The fix of a pop of the right part that the placement ``kind`` reads from elsewhere."""
    if kind == "cpusim":
        return ("the device (--protocol pto-isa) reads this slot right: it places each part by the valid shape, "
                "while pto-isa's CPU simulator places each lane's part of a split by the static box (half the "
                "tile's static rows or columns), so with a push whose valid region is smaller than its box a "
                f"lane's part is not where that lane reads it there; {SIM_ONLY_FIX}")
    return fix or "pop at most the pushed valid region (a split lane: its part of it)"


def _device_reads_right(ch, pushed, split, static: tuple, valid: tuple, lane: int) -> bool:
    """Under the CPU simulator's placement: would the device's placement ("npu") of the same
    push read this pop (and, for a split C2V pop, the other lane's) right?"""
    if ch.model.slot_placement != "cpusim":
        return False
    lanes = [lane] if ch.way == V2C or split == TileSplitAxis.TILE_NO_SPLIT else [0, 1]
    for ln in lanes:            # a C2V push is placed per consumer lane, a V2C one per pushing lane
        nb = [push_band("npu", ch.way, ch.in_gm, s.layout[3], s.layout[5:7], s.layout[1:3],
                        ln if ch.way == C2V else pushing) for pushing, s in pushed]
        if read_problem(nb, pop_band("npu", ch.way, ch.in_gm, split, static, valid, ln), split) is not None:
            return False
    return True


def _check_odd_pop(core, ch, slot, split, valid: tuple, op: str, loc) -> None:
    """Lane ``core``'s TPOP of a ``valid`` part under an odd split must read its band of what
    the Cube pushed into ``slot`` (:func:`~ptopipe.protocol.geometry.odd_pop_problem`); an
    empty part (the other lane's share of a one-row push) reads nothing."""
    if valid[0] * valid[1] == 0:
        return
    bad = odd_pop_problem(split, core.subblock, valid, slot.layout[1:3])
    if bad is not None:
        raise ProtocolError(f"{op} on {core.name}: {bad[0]} (slot {slot.tag} of {ch.name})", where=str(loc or core.where()),
                            details=f"pushed at {slot.push_loc}" if slot.push_loc else None, fix=bad[1])


def layout_mismatch(core, ch, slot, pushed: TileLayout, popped: TileLayout, op: str, where: str):
    """A tile pushed in one layout and popped in another: the consumer would read the
    bytes of the logical matrix in the wrong order (silently wrong numbers on the device)."""
    pusher = "a Vector core" if ch.way == V2C else "the Cube"
    fix = layout_fix(ch.way, pushed, popped)
    return ProtocolError(
        f"{op} on {core.name} at {where} pops {a_layout(popped)} tile from slot {slot.tag} of {ch.name}, "
        f"but {pusher} pushed {pushed.name} data (TPUSH at {slot.push_loc})",
        where=where, details=f"TPUSH at {slot.push_loc} ({pushed.name})\n{op} at {where} ({popped.name})",
        fix=fix)


def _valid(vrow: int, vcol: int, rows: int, cols: int) -> str:
    """' valid 12x32' when a tile's valid region is not the whole tile, else ''."""
    return "" if (vrow, vcol) == (rows, cols) else f" valid {vrow}x{vcol}"
