"""Where a TPUSH puts a tile's elements in a ring slot and where a TPOP reads them, per
protocol, and the judgement of a pop against the push it reads.

A slot's contents are described as :class:`Band` s: a rectangle of elements at an element
offset from the slot's start, its rows ``pitch`` elements apart, holding a block of the whole
(Cube-side) tile.  Two placements (``ProtocolModel.slot_placement``), each for a GM ring
and a ring local to the consumer:

``"npu"`` - pto-isa's device code (``include/pto/npu/a2a3|a5/TPush.hpp``; the spec protocol
  follows it, seed 003 leaving the bytes of a slot to the library):

  - GM ring (A2A3, A5 ``*_GM``): ``pushAcc2GMFiFo`` stores the Acc's valid region at a row
    stride of its valid columns, whatever the split; ``pushVec2GMFiFo`` stores a Vector core's
    part at a row stride of its valid columns (twice that for TILE_LEFT_RIGHT), lane 1 from
    ``subBlockId * ValidRow * ValidCol`` (UP_DOWN) or ``subBlockId * ValidCol`` (LEFT_RIGHT)
    elements; ``popVecTileFromGMFiFo`` reads the consumer's valid rows at a row stride of its
    valid columns (twice for LEFT_RIGHT) from the same lane offsets computed with the
    consumer's valid shape; ``popMatTileFromGMFiFo`` reads the Cube's valid shape at a row
    stride of its valid columns from the slot's start.
  - local ring (A5: the Vector cores' UB, the Cube's L1): ``pushAcc2VecFiFo`` TMOVs each
    lane's part (``DualModeSplitM`` / ``N``: half the Acc's valid rows / columns) into a
    ``ConsM x ConsN`` slot tile whose row pitch is the Acc's *static* columns (halved for
    LEFT_RIGHT); ``pushVec2MatFiFo`` TINSERTs a Vector core's part into a slot tile of the
    Vec tile's static columns (doubled for LEFT_RIGHT) at row ``ValidRow * subBlockId`` /
    column ``ValidCol * subBlockId``; ``popTileFromVecFiFo`` / ``popTileFromMatFiFo`` TASSIGN
    the consumer tile at the slot: its own static columns are its row pitch.

``"cpusim"`` - pto-isa's CPU simulator (``include/pto/cpu/TPush.hpp``): a TILE_NO_SPLIT
  transfer is copied packed at its valid columns (``CopyTileWindowToLinear``), a split one
  laid out by the *static* box (``TPush_gm`` stores at the Acc's static columns; ``TPush_c2v``
  copies each lane's static half; ``TPush_v2c`` inserts lane 1 at the static half); every
  pop reads at the consumer's static columns (``popTileFromGMFiFo`` from lane 1's static
  half: ``subOffset = subblockid * consRows * prodCols``; ``CopyLinearToTile``).

A pop is well defined when every element it reads was pushed, at the position pto-isa's split
convention gives it: lane ``s`` of a split pop with ``n`` valid rows (columns) reads rows
(columns) ``s*n ..`` of the whole tile - the lane offsets of ``popVecTileFromGMFiFo`` - and a
pop without a split reads from the top left.  A consumer with a smaller valid region than
the push reads the top-left block of its part (a dynamic tail); :func:`read_problem` says
why any other read goes wrong.  The run's TPUSH / TPOP (``ptopipe.isa.pipe.plans``) and the
race checker's slot regions ask these functions.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..arch.vocab import C2V, TileSplitAxis
from .geometry import ODD_SPLITS, SPLIT_AXIS, full_shape, lane_start

_UD = TileSplitAxis.TILE_UP_DOWN
_LR = TileSplitAxis.TILE_LEFT_RIGHT
_NO = TileSplitAxis.TILE_NO_SPLIT


class Band(NamedTuple):
    """``rows x cols`` elements of a slot from element ``offset``, rows ``pitch`` elements
    apart, holding rows ``row0 ..`` and columns ``col0 ..`` of the whole tile."""
    offset: int
    pitch: int
    rows: int
    cols: int
    row0: int
    col0: int

    def span(self) -> int:
        """Elements from the slot's start to one past the band's last element (0: empty)."""
        if self.rows <= 0 or self.cols <= 0:
            return 0
        return self.offset + (self.rows - 1) * self.pitch + self.cols


def push_band(kind: str, way: str, in_gm: bool, split, shape, valid, lane: int) -> Band:
    """What a TPUSH of a tile of static ``shape`` and ``valid`` shape (``(rows, cols)``) with
    ``split`` writes into the slot lane ``lane`` reads: for C2V the slot of consumer lane
    ``lane`` (the one GM slot if ``in_gm``), for V2C the part of pushing lane ``lane``."""
    (R, C), (vr, vc) = shape, valid
    split = TileSplitAxis(split)
    if way == C2V:
        if in_gm:
            if kind == "cpusim" and split != _NO and split not in ODD_SPLITS:   # TPush_gm: the static columns
                return Band(0, C, vr, vc, 0, 0)
            return Band(0, vc, vr, vc, 0, 0)                 # pushAcc2GMFiFo / CopyTileWindowToLinear
        if split == _NO:
            return Band(0, vc if kind == "cpusim" else C, vr, vc, 0, 0)
        if kind == "cpusim":                                 # TPush_c2v: the lane's static half
            if split == _UD:
                h = R // 2
                return Band(0, C, max(0, min(h, vr - lane * h)), vc, lane * h, 0)
            h = C // 2
            return Band(0, h, vr, max(0, min(h, vc - lane * h)), 0, lane * h)
        if split == _UD:                                     # pushAcc2VecFiFo, DualModeSplitM
            return Band(0, C, vr // 2, vc, lane * (vr // 2), 0)
        return Band(0, C // 2, vr, vc // 2, 0, lane * (vc // 2))
    # V2C: lane ``lane``'s part, at its place in the Cube's tile
    if split == _NO:                 # GM: stored packed; L1: inserted into a slot tile of the static columns
        return Band(0, vc if in_gm else C, vr, vc, 0, 0)
    if kind == "cpusim":                                     # the static box; lane 1 at the static half
        if split == _UD:
            return Band(lane * R * C, C, vr, vc, lane * vr, 0)
        return Band(lane * C, 2 * C, vr, vc, 0, lane * vc)
    if in_gm:                                                # pushVec2GMFiFo
        if split == _UD:
            return Band(lane * vr * vc, vc, vr, vc, lane * vr, 0)
        return Band(lane * vc, 2 * vc, vr, vc, 0, lane * vc)
    if split == _UD:                                         # pushVec2MatFiFo, TINSERT at ValidRow * lane
        return Band(lane * vr * C, C, vr, vc, lane * vr, 0)
    return Band(lane * vc, 2 * C, vr, vc, 0, lane * vc)


def pop_band(kind: str, way: str, in_gm: bool, split, shape, valid, lane: int) -> Band:
    """What a TPOP into a tile of static ``shape`` and ``valid`` shape with ``split`` reads on
    lane ``lane`` (the Cube for V2C: 0), and where pto-isa's split convention puts it in the
    whole tile (``row0`` / ``col0``)."""
    (R, C), (vr, vc) = shape, valid
    split = TileSplitAxis(split)
    if way == C2V and split in ODD_SPLITS:
        # a GM ring only (geometry.odd_split_problem refuses the others), the device's geometry
        # under every placement (cpu/TPush.hpp has no odd case): popVecTileFromGMFiFo places
        # the lane's band from its own extent e, at sub * (e + sub), rows 2e + 2sub - 1 apart
        # under TILE_LEFT_RIGHT_ODD
        if SPLIT_AXIS[split] == 0:
            start = lane_start(split, lane, vr)
            return Band(start * vc, vc, vr, vc, start, 0)
        start = lane_start(split, lane, vc)
        return Band(start, full_shape(split, 1, vc, lane)[1], vr, vc, 0, start)
    if way == C2V:
        row0, col0 = (lane * vr, 0) if split == _UD else (0, lane * vc) if split == _LR else (0, 0)
        if not in_gm:                                        # TASSIGN at the lane's slot
            return Band(0, C, vr, vc, row0, col0)
        if kind == "cpusim":                                 # popTileFromGMFiFo: the static box
            pitch = 2 * C if split == _LR else C
            off = lane * R * pitch if split == _UD else lane * C if split == _LR else 0
            return Band(off, pitch, vr, vc, row0, col0)
        pitch = 2 * vc if split == _LR else vc               # popVecTileFromGMFiFo
        off = lane * vr * vc if split == _UD else lane * vc if split == _LR else 0
        return Band(off, pitch, vr, vc, row0, col0)
    if not in_gm or kind == "cpusim":                        # TASSIGN / the static box
        return Band(0, C, vr, vc, 0, 0)
    return Band(0, vc, vr, vc, 0, 0)                         # popMatTileFromGMFiFo


def whole_pop_problem(kind: str, way: str, in_gm: bool, shape, valid) -> tuple | None:
    """``(why, fix)`` when placement ``kind`` cannot pop into a tile of static ``shape`` (rows,
    cols) a ``valid`` region smaller than it, else None.  pto-isa's CPU simulator moves a slot
    into the consumer's whole static box: from GM by a TLOAD of a GlobalTensor of the tile's
    static shape (``popTileFromGMFiFo``), into the Cube's Mat tile by a TMOV from a slot tile
    whose valid shape is that static one (``popTileFromMatFiFo``) - and its TLOAD / TMOV
    ``assert`` the tile's valid shape is the tensor's / the source tile's (cpu/TLoad.hpp
    ``CheckTileData``, cpu/TMov.hpp ``TMOV_IMPL``): the kernel aborts there.  A Vector core's
    pop from its UB slot copies the valid region; the device binds or TLOADs the valid region
    everywhere."""
    if kind != "cpusim" or tuple(shape) == tuple(valid) or 0 in valid or (way == C2V and not in_gm):
        return None
    how = ("a TLOAD from the GM slot (popTileFromGMFiFo)" if in_gm else
           "a TMOV from a slot tile of the Mat tile's static shape (popTileFromMatFiFo)")
    return (f"pto-isa's CPU simulator pops into the consumer's whole static {shape[0]}x{shape[1]} tile by {how}, "
            f"which asserts the tile's valid shape is that static shape: a valid {valid[0]}x{valid[1]} region stops "
            "the simulated kernel (the device pops the valid region)",
            f"pop into a tile whose static shape is its {valid[0]}x{valid[1]} valid shape (data that fills the tile "
            "pto-isa declares; pad the data where pto-isa rounds the tile up), or run on the device's protocol "
            "(--protocol pto-isa), which pops the valid region")


class ReadProblem(NamedTuple):
    """Why a pop reads what it should not: ``kind`` is "pitch" (its rows are a different
    number of elements apart than the pushed rows), "unpushed" (it reads elements the push
    did not write), "shifted" (it reads pushed rows / columns, but not the ones pto-isa's
    split convention gives it); ``got`` / ``want``: the rows (UP_DOWN / no split) or columns
    (LEFT_RIGHT) of the whole tile it reads and should read, as ``(first, last)``;
    ``pitches``: (read, pushed) row pitch in elements; ``missing``: elements not pushed;
    ``held``: the rows (columns) of the whole tile the slot holds, ``(first, last)``."""
    kind: str
    got: tuple
    want: tuple
    pitches: tuple
    missing: int
    held: tuple


def read_problem(pushed, read: Band, split) -> ReadProblem | None:
    """Judge a pop reading ``read`` from a slot that holds the bands ``pushed`` (a list of
    :class:`Band`): None when it reads exactly its block of the pushed tile."""
    if read.rows <= 0 or read.cols <= 0:
        return None
    bands = [b for b in pushed if b.rows > 0 and b.cols > 0]
    if _reads_block_of(bands, read):
        return None
    return _judge(bands, read, split)


def _reads_block_of(bands, read: Band) -> bool:
    """The common case, decided without labelling every element: ``read`` lies inside one
    band of its own row pitch, at the band's position of the block it wants, and no later
    band (a later push overwrites an earlier one's elements) comes near it.  False means
    "judge element by element" (:func:`_judge`), never a problem by itself."""
    p, lo, hi = read.pitch, read.offset, read.span()
    for k, b in enumerate(bands):
        dr, dc = read.row0 - b.row0, read.col0 - b.col0
        if b.pitch == p and p >= b.cols and 0 <= dr and dr + read.rows <= b.rows \
                and 0 <= dc and dc + read.cols <= b.cols and read.offset - b.offset == dr * p + dc:
            return all(later.span() <= lo or later.offset >= hi for later in bands[k + 1:])
    return False


def _judge(bands, read: Band, split) -> ReadProblem | None:
    """:func:`read_problem` element by element: each slot element labelled with the position
    in the whole tile of the last band that wrote it, compared with what ``read`` wants."""
    n = max([b.span() for b in bands] + [read.span()])
    lab_r = np.full(n, -1, np.int64)
    lab_c = np.full(n, -1, np.int64)
    for b in bands:
        r = np.arange(b.rows)[:, None]
        c = np.arange(b.cols)[None, :]
        idx = b.offset + r * b.pitch + c
        lab_r[idx] = b.row0 + r
        lab_c[idx] = b.col0 + c
    r = np.arange(read.rows)[:, None]
    c = np.arange(read.cols)[None, :]
    idx = read.offset + r * read.pitch + c
    got_r, got_c = lab_r[idx], lab_c[idx]
    want_r, want_c = read.row0 + r + 0 * c, read.col0 + c + 0 * r
    if (got_r == want_r).all() and (got_c == want_c).all():
        return None
    cols = TileSplitAxis(split) == _LR
    want = (read.col0, read.col0 + read.cols - 1) if cols else (read.row0, read.row0 + read.rows - 1)
    got_axis = got_c if cols else got_r
    first = got_axis[0, 0]
    got = (int(first), int(first) + (read.cols if cols else read.rows) - 1)
    # the band the pop starts in decides the pitch the pushed rows have there
    start = next((b for b in bands if b.offset <= read.offset < b.span()), bands[0] if bands else None)
    pitches = (read.pitch, start.pitch if start is not None else read.pitch)
    missing = int((got_r < 0).sum())
    lo = [b.col0 if cols else b.row0 for b in bands]
    hi = [(b.col0 + b.cols if cols else b.row0 + b.rows) - 1 for b in bands]
    held = (min(lo), max(hi)) if bands else (0, -1)
    if read.rows > 1 and pitches[0] != pitches[1]:
        return ReadProblem("pitch", got, want, pitches, missing, held)
    shifted = first >= 0 and (got_r - r == got_r[0, 0]).all() and (got_c - c == got_c[0, 0]).all()
    if shifted and not missing:
        return ReadProblem("shifted", got, want, pitches, 0, held)
    return ReadProblem("unpushed", got, want, pitches, max(missing, 1), held)


def _writer(kind: str, way: str, in_gm: bool, split) -> tuple:
    """(who writes the slot, what its row pitch is) in the words of ``kind``'s code."""
    no = TileSplitAxis(split) == _NO
    if kind == "cpusim":
        who = "pto-isa's CPU simulator (" + ("TPush_gm" if in_gm else "TPush_c2v" if way == C2V else "TPush_v2c") + ")"
        if no and (in_gm or way == C2V):
            return who, "the pushed tile's valid columns: a TILE_NO_SPLIT push is copied packed"
        return who, "the pushed tile's static columns" + (" (both parts side by side)" if split == _LR else "")
    if way == C2V:
        if in_gm:
            return "pto-isa's pushAcc2GMFiFo", "the Acc's valid columns"
        return ("pto-isa's A5 pushAcc2VecFiFo", "the Acc's static columns"
                + (", halved (ConsN)" if split == _LR else " (ConsN)"))
    if in_gm:
        return "pto-isa's pushVec2GMFiFo", "the Vec tile's valid columns" + (", doubled" if split == _LR else "")
    return "pto-isa's A5 pushVec2MatFiFo", "the Vec tile's static columns" + (", doubled" if split == _LR else "")


def _reader(kind: str, way: str, in_gm: bool, split) -> tuple:
    """(who reads the slot, what its row pitch is) in the words of ``kind``'s code."""
    lr = " (doubled: both parts side by side)" if split == _LR else ""
    if not in_gm:
        fn = "popTileFromVecFiFo" if way == C2V else "popTileFromMatFiFo"
        who = "pto-isa's CPU simulator (CopyLinearToTile)" if kind == "cpusim" else f"pto-isa's A5 {fn} (a TASSIGN at the slot)"
        return who, "the consumer tile's static columns"
    if kind == "cpusim":
        return "pto-isa's CPU simulator (popTileFromGMFiFo)", "the consumer tile's static columns" + lr
    if way == C2V:
        return "pto-isa's popVecTileFromGMFiFo", "the consumer's valid columns" + lr
    return "pto-isa's popMatTileFromGMFiFo", "the Cube tile's valid columns"


#: the fix of a pop only pto-isa's CPU simulator misreads (tiles declared larger than their data,
#: as ``passes.tile_boxes`` emits what the device reads right): the run's TPOP under the
#: CPU simulator's placement says it
SIM_ONLY_FIX = ("to run it on pto-isa's CPU simulator too, give the crossing data the static shape pto-isa "
                "declares its tiles in (whole 16x16 fractals for an Acc, 32-byte rows; pad the tensor or the "
                "tail tile)")


def transfer_problems(kind: str, way: str, in_gm: bool, split, cube, cube_valid, part, part_valid) -> list:
    """``[(lane, why, fix)]`` of a transfer under placement ``kind`` whose Cube tile (the pushed
    Acc, the popped Mat) has static shape ``cube`` and valid shape ``cube_valid`` and whose
    Vector cores' part (each popped / pushed Vec tile) has ``part`` / ``part_valid``: every pop
    that reads other elements than its own (:func:`read_problem`, said by :func:`problem_text`)
    or cannot take the slot (:func:`whole_pop_problem`), in that order.  A TILE_NO_SPLIT transfer has lane 0;
    a split one both lanes (each C2V lane judged against its own slot, a V2C pop against the
    two lanes' parts).  Empty for any other split (the odd splits are judged at run time)."""
    split = TileSplitAxis(split)
    if split not in (_NO, _UD, _LR):
        return []
    lanes = (0,) if split == _NO else (0, 1)
    out = []
    if way == C2V:
        for lane in lanes:
            prob = read_problem([push_band(kind, C2V, in_gm, split, cube, cube_valid, lane)],
                                pop_band(kind, C2V, in_gm, split, part, part_valid, lane), split)
            if prob is not None:
                out.append((lane, *problem_text(kind, way, in_gm, split, prob, lane, part_valid)))
        whole = whole_pop_problem(kind, way, in_gm, part, part_valid)
    else:
        bands = [push_band(kind, way, in_gm, split, part, part_valid, lane) for lane in lanes]
        prob = read_problem(bands, pop_band(kind, way, in_gm, split, cube, cube_valid, 0), split)
        if prob is not None:
            out.append((0, *problem_text(kind, way, in_gm, split, prob, 0, cube_valid)))
        whole = whole_pop_problem(kind, way, in_gm, cube, cube_valid)
    return out + ([(0, *whole)] if whole is not None else [])


def problem_text(kind: str, way: str, in_gm: bool, split, prob: ReadProblem, lane: int, valid: tuple,
                 partner: bool = False) -> tuple:
    """``(why, fix)`` of ``prob``, a pop of a ``valid`` region by lane ``lane`` (the Cube: any)
    that reads what it should not, in the words of the code of placement ``kind``; ``partner``:
    ``lane`` is the other lane of a split, popping the same valid shape (the parts of a split
    are equal in pto-isa's lane offsets)."""
    lr = TileSplitAxis(split) == _LR
    word = "columns" if lr else "rows"
    who = f"lane {lane}" if way == C2V and TileSplitAxis(split) != _NO else "the pop"
    wname, wpitch = _writer(kind, way, in_gm, split)
    rname, rpitch = _reader(kind, way, in_gm, split)

    def span(a: tuple) -> str:
        return f"{word} {a[0]}..{a[1]}" if a[1] >= a[0] else f"no {word}"
    if prob.kind == "pitch":
        why = (f"{rname} reads the consumer's rows {prob.pitches[0]} elements apart ({rpitch}), but {wname} wrote "
               f"the pushed rows {prob.pitches[1]} elements apart ({wpitch}): every row after the first is read "
               "misaligned")
        if in_gm and kind == "npu":
            fix = ("a GM ring's pop reads the slot with the consumer's valid columns as its row stride (pto-isa "
                   f"{'popVecTileFromGMFiFo' if way == C2V else 'popMatTileFromGMFiFo'}), so pop with the pushed "
                   "tile's valid columns" + (" (half of them on each lane)" if lr else ""))
        elif not in_gm and kind == "npu":
            fix = (f"give the consumer tile {prob.pitches[1]} static columns, the pitch of the slot's rows (the TPOP "
                   "binds the tile at the slot, so its static columns are its row pitch), or push from a tile whose "
                   "static columns match the consumer's")
        else:
            fix = (f"make the consumer's row pitch ({rpitch}) the pushed rows' ({wpitch}): {prob.pitches[1]} elements; "
                   "the device (--protocol pto-isa) lays the slot out differently")
        return why, fix
    if prob.kind == "shifted":
        n = valid[1] if lr else valid[0]
        if in_gm:           # the reader places the lane's part (the CPU simulator: by the static box)
            cause = (f"{rname} starts lane {lane}'s part at {lane} x the consumer tile's static {word}, while "
                     f"pto-isa's device code starts it at {lane} x its {n} valid {word}")
            fix = (f"give the consumer tile {n} static {word}, the valid {word} it pops (the device, --protocol "
                   "pto-isa, places the part by the valid shape)")
        else:               # the writer hands each lane its half of the pushed tile
            cause = (f"{wname} hands each Vector core half of the pushed {word} (lane {lane}'s slot holds "
                     f"{span(prob.held)}), while pto-isa's split convention starts lane {lane}'s part at {lane} x its "
                     f"{n} valid {word}")
            fix = (f"push the Cube's tile with exactly the {word} the two lanes pop (2 x {n}; do not widen it for "
                   f"the split), or pop {prob.held[1] - prob.held[0] + 1} valid {word} on each lane")
        return f"{who} would read {span(prob.got)} of the pushed tile, not {span(prob.want)}: {cause}", fix
    held = f"the slot holds {span(prob.held)} of the pushed tile" + \
        (f" for lane {lane}" if who != "the pop" and not in_gm else "")
    if partner:
        rname = f"{rname} on lane {lane}, popping the same valid shape (the two parts of a split are equal),"
    n = prob.missing
    read = f"{span(prob.got)} of the pushed tile, {n} element{'s' if n != 1 else ''} of which" \
        if prob.got[0] >= 0 else f"{n} element{'s' if n != 1 else ''}"
    why = f"{rname} would read {read} {wname} did not write ({held}): the pop reads past the pushed valid region"
    fix = "pop at most the pushed valid region (the consumer's valid shape is what the device reads)"
    return why, fix
