"""Split geometry of a ring slot, in one place: how a tile divided between the two Vector
sub-blocks (``TileSplitAxis``) is laid out in a slot.

UP_DOWN parts are row blocks (sub-block ``s`` owns rows ``s*rows .. (s+1)*rows`` of a
``2*rows x cols`` tile); LEFT_RIGHT parts are column blocks of a ``rows x 2*cols`` tile;
NO_SPLIT is the whole tile.  The two ODD modes split an odd extent ``n``: AIV0 owns the first
``n//2 + 1`` rows (columns), AIV1 the other ``n//2`` (pto-isa fifo.hpp), and each lane finds its
band from its *own* popped extent ``e``: it starts at ``sub * (e + sub)`` and, LEFT_RIGHT_ODD,
its rows are ``2*e + 2*sub - 1`` columns apart (``popVecTileFromGMFiFo``, a2a3 and A5 alike) -
so the whole odd extent of a lane's ``e`` is ``2*e - 1`` (AIV0) or ``2*e + 1`` (AIV1).
``rows x cols`` is always the *part* (one sub-block's tile), except in :func:`part_shape` /
:func:`part_of`, which cut a whole tile, and :func:`slot_shape`, what one slot holds of a
whole tile (SlotSize).  The pipe ops, the ring-slot race checker, the address flow,
VerifyPipes and the DSL compiler's ring sizing all use these functions.
"""
from __future__ import annotations

import math

import numpy as np

from ..arch.vocab import C2V, V2C, TileLayout, TileSplitAxis

_UP_DOWN = TileSplitAxis.TILE_UP_DOWN
_LEFT_RIGHT = TileSplitAxis.TILE_LEFT_RIGHT
_UP_DOWN_ODD = TileSplitAxis.TILE_UP_DOWN_ODD
_LEFT_RIGHT_ODD = TileSplitAxis.TILE_LEFT_RIGHT_ODD

#: the axis of the whole tile a split divides: 0 rows, 1 columns (NO_SPLIT divides none)
SPLIT_AXIS = {_UP_DOWN: 0, _LEFT_RIGHT: 1, _UP_DOWN_ODD: 0, _LEFT_RIGHT_ODD: 1}
#: the splits of an odd extent, where AIV0 takes the extra row / column
ODD_SPLITS = frozenset((_UP_DOWN_ODD, _LEFT_RIGHT_ODD))
#: an odd split -> the even split of the same axis
EVEN_SPLIT = {_UP_DOWN_ODD: _UP_DOWN, _LEFT_RIGHT_ODD: _LEFT_RIGHT}


def free_split_problem(way: str, pop_split, free_split) -> str | None:
    """Why a TFREE given ``free_split`` does not release, on the device, the slot of a ``way``
    ring its TPOP popped with ``pop_split`` (None: it does).  pto-isa's ``Consumer::free<Split>``
    tells only TILE_NO_SPLIT from a split, and only in the Cube's free of a V2C ring: A5's
    ``setIntraBlockBySplit`` sets AIV0's flag and, for any split, AIV1's (id + 16) too; a Vector
    core's free is one set of its own flag whatever the split (A2A3: every free is a
    ``CV_CORES_SYNC``).  So which split a TFREE names (UP_DOWN, LEFT_RIGHT, an _ODD one) never
    matters, and NO_SPLIT against a split only in the Cube's TFREE - reported on every platform
    and protocol, as the same kernel hangs or leaves a credit on A5."""
    if way != V2C or (free_split == 0) == (pop_split == 0):
        return None
    if free_split == 0:
        return ("the Cube's TILE_NO_SPLIT free credits AIV0's flag alone (pto-isa's setIntraBlockBySplit), so "
                "AIV1, which pushed its part of the split tile, never gets the slot back")
    return ("the Cube's split free credits AIV1's flag too (pto-isa's setIntraBlockBySplit: id + 16), a lane "
            "the TILE_NO_SPLIT transfer leaves out: a credit no push of AIV1 waits for")


def free_split_fix(pop_split, unsplit_frees: bool, cpp: bool = False, pto: bool = False) -> str:
    """The fix of a TFREE whose split :func:`free_split_problem` refuses, in the spelling of the
    kernel's front end (``cpp`` / ``pto``: ``sim.location.is_cpp`` / ``is_pto`` of its line): the
    TPOP's split - and a TFREE without one where that frees the TPOP's lanes too
    (``unsplit_frees``): a Python TFREE without a split takes its TPOP's; a C++ ``TFREE(pipe)``
    is pto-isa's own, freeing with the library's default split (``ProtocolModel.unsplit_free_error``
    says where that fails); ptoas refuses a ``pto.tfree_from_aiv`` without its split."""
    pop = TileSplitAxis(pop_split)
    if pto:
        return f"give pto.tfree_from_aiv the split of its TPOP: {{split = {pop.value}}}"
    if cpp:
        return (f"give TFREE the split of its TPOP: TFREE<Pipe, TileSplitAxis::{pop.name}>(pipe)"
                + (", or none: TFREE(pipe)" if unsplit_frees else ""))
    return f"give TFREE the split of its TPOP ({pop.name})" + (", or none" if unsplit_frees else "")


def lane_extent(split, sub: int, n: int) -> int:
    """Lane ``sub``'s share of a whole extent ``n`` on the split axis: half (even splits),
    ``n//2 + 1`` for AIV0 and ``n//2`` for AIV1 (odd splits), all of it (NO_SPLIT)."""
    if split in ODD_SPLITS:
        return n // 2 + (sub == 0)
    return n // 2 if split in SPLIT_AXIS else n


def _whole(split, e: int, sub) -> int:
    """The whole extent on the split axis of which a lane's part is ``e``: twice it, and for an
    odd split with a lane given ``2*e - 1`` (AIV0) / ``2*e + 1`` (AIV1); an odd split without a
    lane is the box of the two lanes' tiles (both AIV0's static shape): twice it too."""
    if sub is None or split not in ODD_SPLITS:
        return 2 * e
    return 2 * e + 2 * sub - 1


def full_shape(split, rows: int, cols: int, sub: int | None = None) -> tuple:
    """Shape of the whole slot tile whose ``split`` part is ``rows x cols`` (lane ``sub``'s,
    which decides it for an odd split: :func:`_whole`)."""
    axis = SPLIT_AXIS.get(split)
    if axis == 0:
        return _whole(split, rows, sub), cols
    if axis == 1:
        return rows, _whole(split, cols, sub)
    return rows, cols


def slot_shape(way: str, in_gm: bool, split, rows: int, cols: int) -> tuple:
    """The tile one slot of a ``way`` ("C2V" / "V2C") ring holds when the Cube-side tile of
    the transfer (the Cube's pushed Acc, or the Mat tile it pops) is ``rows x cols``: what
    SlotSize must hold.  A C2V ring local to the consumers (A5: a ring in each Vector core's
    UB) holds one Vector core's ``split`` part in each core's slot - pto-isa A5
    ``pushAcc2VecFiFo`` TMOVs each ``ConsM x ConsN`` part to ``C2V_CONSUMER_BUF + tag *
    SLOT_SIZE`` of its core.  A ring in GM (A2A3, A5 ``*_GM``) holds the whole tile, each
    Vector core's part at its offset in the slot; a V2C ring in the Cube's L1 holds the whole
    tile too (both parts TINSERTed side by side).  The run's TPUSH, VerifyPipes and the DSL
    compiler's ring sizing all ask this."""
    if way == C2V and not in_gm:
        return part_shape(split, rows, cols)
    return rows, cols


def slot_layout(way: str, layout: TileLayout) -> TileLayout:
    """The layout of the data a TPUSH of a tile in ``layout`` leaves in a ``way`` ("C2V" /
    "V2C") slot: C2V
    goes through the FIX pipe, which writes the Acc's fractal (NZ) data out row-major (ND);
    V2C copies the Vec tile as it is.  A TPOP must pop this layout."""
    return TileLayout.ND if way == C2V else layout


def pop_converts(way: str, in_gm: bool) -> bool:
    """Does a TPOP of a ``way`` ring read the slot in any tile layout?  A V2C ring in GM:
    the Vector core's TPUSH stores its tile to the slot as ND rows and the Cube's TPOP TLOADs
    them into its Mat tile, converting to the tile's layout (pto-isa a2a3
    ``pushVec2GMFiFo`` / ``popMatTileFromGMFiFo``).  A local ring (A5 UB / L1) copies the
    bytes as they are, and a C2V pop of a Vec tile takes the slot's ND rows, so there the
    layouts must agree (:func:`slot_layout`)."""
    return in_gm and way == V2C


def pop_split_fits(way: str, in_gm: bool, push_split, pop_split) -> bool:
    """Does a TPOP with ``pop_split`` read the slot a TPUSH with ``push_split`` filled as the
    producer meant it?  With the same split; and a C2V ring in GM holding the Cube's whole
    tile (pto-isa a2a3 ``pushAcc2GMFiFo``), pushed TILE_NO_SPLIT, with any split: each Vector
    core pops its part of the whole (pto-isa's TPUSH / TPOP pages pair these forms).  Which
    elements the pop then reads is judged apart (:mod:`.slots`)."""
    return push_split == pop_split or (way == C2V and in_gm and push_split == TileSplitAxis.TILE_NO_SPLIT)


#: pto-isa A5 ``pushAcc2VecFiFo``: a split TPUSH of an Acc into the Vector cores' UB is one
#: dual-mode TMOV of the FIX pipe (``AccToVecMode::DualModeSplitM`` / ``DualModeSplitN``, "due to
#: hardware requirement"), which takes a 4-byte element and, on the split axis, a multiple of
#: this many rows / columns: ``static_assert`` on the tile's static shape (the kernel does not
#: compile), ``PTO_ASSERT`` on its valid shape (it stops on the device)
ACC_DUAL_SPLIT_MULTIPLE = {_UP_DOWN: 2, _LEFT_RIGHT: 32}


#: pto-isa A5 ``pushVec2MatFiFo``: a Vector core's TILE_LEFT_RIGHT part TINSERTed into the Cube's
#: L1 slot must have valid columns of a multiple of this many bytes ("due to hardware
#: requirement", a ``PTO_ASSERT``: it stops on the device).  A V2C ring in GM (A2A3, A5 *_GM)
#: TSTOREs the part and has no such rule.
V2C_L1_PART_ROW_BYTES = 32


def split_push_problem(split, shape, valid, item: int, acc_to_ub: bool = False,
                       vec_to_l1: bool = False) -> tuple | None:
    """``(why, fix)`` when a split TPUSH of a tile of static ``shape`` and ``valid`` shape
    (``(rows, cols)`` each, ``item`` bytes an element) cannot be laid out in its slot, else None.

    A C2V TPUSH pushes the Cube's whole tile, divided between the two Vector cores: an odd valid
    extent on the split axis is refused (the parts would match no consumer tile); then, for an
    Acc TPUSH into the consumers' UB (``acc_to_ub``: a C2V ring in the Vector cores' UB, A5)
    pto-isa's dual-mode TMOV rule, :data:`ACC_DUAL_SPLIT_MULTIPLE`.  A V2C TPUSH into the Cube's
    L1 (``vec_to_l1``: a V2C ring local to the Cube, A5) pushes one Vector core's part: a
    TILE_LEFT_RIGHT part needs valid rows of :data:`V2C_L1_PART_ROW_BYTES` bytes.  Every front
    end's check of a pushed tile asks this: the run's TPUSH and VerifyPipes."""
    axis = {_UP_DOWN: 0, _LEFT_RIGHT: 1}.get(split)
    if axis is None:
        return None
    if vec_to_l1:
        return _v2c_l1_part_problem(split, valid, item)
    word = ("rows", "columns")[axis]
    other = "TILE_LEFT_RIGHT" if axis == 0 else "TILE_UP_DOWN"
    n = valid[axis]
    if n % 2:
        return (f"its {n} valid {word} do not halve between the two Vector cores",
                f"give the tile an even number of valid {word} (pad the tail tile), or use {other} / "
                f"TILE_NO_SPLIT, or {split.name}_ODD (AIV0 takes the extra {word[:-1]}; a Cube->Vector "
                "ring in GM)")
    if acc_to_ub:
        k = ACC_DUAL_SPLIT_MULTIPLE[split]
        mode = "DualModeSplitM" if axis == 0 else "DualModeSplitN"
        got = [(f"{m} {how}{word}", bad) for m, how, bad in
               ((shape[axis], "", shape[axis] % k), (valid[axis], "valid ", valid[axis] % k))]
        bad = [g for g, b in got if b]
        if bad or item != 4:
            why = (f"pto-isa's A5 pushAcc2VecFiFo moves it into the Vector cores' UB with one {mode} TMOV "
                   f"of the FIX pipe, which takes a 4-byte element and a multiple of {k} {word} "
                   f"(\"only support {'up-down' if axis == 0 else 'left-right'} split with "
                   f"Prod{'M' if axis == 0 else 'N'} being multiple of {k} due to hardware requirement\"): "
                   + ("this tile has " + " and ".join(bad) if bad else f"this tile's element has {item} bytes")
                   + (" - a static_assert, the kernel does not compile for the device" if got[0][1] or item != 4
                      else " - a PTO_ASSERT, the kernel stops on the device"))
            fix = (f"give the Acc tile a multiple of {k} {word} (static and valid; pad the tail tile), or "
                   f"split it {other}"
                   + (" (an even number of rows)" if axis == 1 else " (a multiple of 32 columns)")
                   + " or TILE_NO_SPLIT")
            return why, fix
    return None


def odd_split_problem(split, way: str, in_gm: bool, address: bool = False) -> tuple | None:
    """``(why, fix)`` where pto-isa has no odd split for a transfer, else None: it places the
    two lanes of an odd extent only where a Vector core TLOADs its band of a Cube->Vector slot
    in GM (``popVecTileFromGMFiFo``: a2a3, A5 ``DIR_C2V_GM``).  Its A5 ``pushAcc2VecFiFo``
    (a ring in the Vector cores' UB) has no odd case and moves nothing; its Vector-side pushes
    (``pushVec2GMFiFo``, A5 ``pushVec2MatFiFo``) put AIV1 at the TILE_LEFT_RIGHT offset or
    nowhere; and the address flow's ``getPopSubAIVOffset`` / TALLOC offset does the same.  The
    run's TPUSH / TPOP / TALLOC and VerifyPipes ask this."""
    if split not in ODD_SPLITS:
        return None
    even = EVEN_SPLIT[split].name
    if way == V2C:
        return (f"pto-isa implements {split.name} for Cube->Vector transfers only: its Vector-side push "
                "(pushVec2GMFiFo, A5 pushVec2MatFiFo) has no odd case - AIV1's part lands at the "
                "TILE_LEFT_RIGHT offset in GM, or nowhere in the Cube's L1",
                f"split the tile {even} with an even extent (pad the tail tile), or TILE_NO_SPLIT")
    if not in_gm:
        return (f"pto-isa's A5 pushAcc2VecFiFo has no {split.name} case: the TPUSH moves nothing into the "
                "Vector cores' UB (only TILE_NO_SPLIT / TILE_UP_DOWN / TILE_LEFT_RIGHT have a TMOV), and "
                "each lane's TPOP binds the slot's stale bytes",
                "put the ring in GM (DIR_C2V_GM; in a .pto, pto.initialize_l2g2l_pipe over a GM buffer), where "
                "each Vector core TLOADs its band of the Cube's tile, or give the tile an even extent (pad the "
                f"tail tile) and split it {even}")
    if address:
        return (f"pto-isa's address flow has no {split.name} case: its lane offset (getPopSubAIVOffset) "
                "puts AIV1's view at the TILE_LEFT_RIGHT offset of the slot, whatever the odd split",
                "pop the part into a Vec tile (TPOP of a tile places each lane's band), or give the tile an "
                f"even extent and split it {even}")
    return None


def odd_pop_problem(split, sub: int, valid, pushed) -> tuple | None:
    """``(why, fix)`` when lane ``sub``'s TPOP of a ``valid`` (rows, cols) part under an odd
    split does not read its band of the Cube's ``pushed`` valid region, else None.

    pto-isa places the band from the lane's own extent ``e`` (:func:`lane_start`), at the
    lane's row stride (:func:`full_shape` with the lane): the other axis must be the pushed
    one, and an odd pushed extent ``n`` gives AIV0 ``n//2 + 1`` and AIV1 ``n//2``.  An even
    pushed extent is a transport box wider than the data (pypto widens a ragged tail to the
    Acc's box): a band inside it reads pushed bytes, one past its end does not; a
    TILE_LEFT_RIGHT_ODD row stride is odd, so it never matches an even width."""
    axis = SPLIT_AXIS[split]
    word, oword = ("rows", "columns")[axis], ("columns", "rows")[axis]
    e, n = valid[axis], pushed[axis]
    lane = f"AIV{sub}"
    if valid[1 - axis] != pushed[1 - axis]:
        return (f"{lane} pops {valid[1 - axis]} valid {oword} under {split.name}, the Cube pushed "
                f"{pushed[1 - axis]}"
                + (": pto-isa's popVecTileFromGMFiFo reads the lane's rows at its own valid columns as the "
                   "row stride, so they would be misaligned" if axis == 0 else ""),
                f"pop all {pushed[1 - axis]} pushed {oword} on each lane (the split divides the {word})")
    start = lane_start(split, sub, e)
    share = lane_extent(split, sub, n)
    rule = (f"{split.name} gives AIV0 {word}/2 + 1 and AIV1 {word}/2 of an odd extent, and pto-isa "
            f"places {lane}'s band from its own extent (popVecTileFromGMFiFo)")
    if axis == 1:
        pitch = full_shape(split, 1, e, sub)[1]
        if pitch == n:
            return None
        why = (f"{lane} pops {e} valid columns, so pto-isa's popVecTileFromGMFiFo reads its rows {pitch} columns "
               f"apart (2 * {e} {'+' if sub else '-'} 1), but the Cube pushed rows of {n} columns")
        fix = (f"pop {share} valid columns on {lane} ({rule})" if n % 2 else
               f"an even width splits TILE_LEFT_RIGHT ({n // 2} columns a lane); {split.name} splits an "
               "odd one")
        return why, fix
    if n % 2 and e != share:
        return (f"{lane} pops {e} valid rows of the Cube's {n}: {rule}, so it reads rows {start}..{start + e - 1}"
                f" where its band is rows {lane_start(split, sub, share)}..{lane_start(split, sub, share) + share - 1}",
                f"pop {share} valid rows on {lane} (AIV0 {n // 2 + 1}, AIV1 {n // 2})")
    if start + e > n:
        return (f"{lane} pops {e} valid rows: {rule}, so it reads rows {start}..{start + e - 1}, past the {n} rows "
                "the Cube pushed",
                f"give AIV1 one row fewer than AIV0 within the {n} pushed rows (AIV0 e + 1, AIV1 e), or split "
                f"two equal halves {EVEN_SPLIT[split].name}")
    return None


def ragged_pop_problem(split, extents: dict) -> tuple | None:
    """``(why, fix)`` when the two Vector lanes pop one TILE_UP_DOWN Cube->Vector slot in GM
    with different valid rows (``extents``: lane -> rows), both non-empty, else None.

    pto-isa places each lane's band from its **own** extent (``popVecTileFromGMFiFo``: AIV1's
    starts at ``1 x`` its valid rows), so the bands of a 12-row tail popped 8 / 4 are rows 0..7
    and 4..7: AIV1 reads AIV0's rows again and rows 8..11 are read by no lane - the device's
    numbers are wrong and nothing fails (pypto: "the even codes require e0 == e1")."""
    e0, e1 = extents[0], extents[1]
    if split != _UP_DOWN or not e0 or not e1 or e0 == e1:
        return None
    why = (f"AIV0 pops {e0} valid rows and AIV1 {e1}: pto-isa places each lane's band from its own extent "
           f"(popVecTileFromGMFiFo), so AIV0 reads rows 0..{e0 - 1} and AIV1 rows {e1}..{2 * e1 - 1} of the slot"
           + (" - rows AIV0 reads too" if e1 < e0 else f" - rows {e0}..{e1 - 1} no lane reads"))
    fix = ("pop the same number of rows on both lanes (half the pushed valid rows each), 0 on AIV1 when AIV0's "
           "band holds them all, or split an odd extent TILE_UP_DOWN_ODD (split = 3: AIV0 one row more)")
    return why, fix


def _v2c_l1_part_problem(split, valid, item: int) -> tuple | None:
    """pto-isa's A5 ``pushVec2MatFiFo`` rule for one Vector core's part of a V2C slot in L1."""
    k = V2C_L1_PART_ROW_BYTES
    if split != _LEFT_RIGHT or valid[1] * item % k == 0:
        return None
    per = k // math.gcd(k, item)
    return (f"pto-isa's A5 pushVec2MatFiFo TINSERTs each Vector core's TILE_LEFT_RIGHT part into the Cube's "
            f"L1 slot, which takes valid rows of a multiple of {k} bytes (\"tile's valid column must be "
            f"multiple of {k} bytes due to hardware requirement\"): this part's {valid[1]} valid columns of "
            f"{item}-byte elements are {valid[1] * item} bytes a row - a PTO_ASSERT, the kernel stops on "
            "the device",
            f"give each Vector core's part a multiple of {per} columns ({k} bytes a row; pad the tail tile), "
            "or split the tile TILE_UP_DOWN, or use a V2C ring in GM (DIR_V2C_GM)")


def part_shape(split, rows: int, cols: int, sub: int = 0) -> tuple:
    """Shape of sub-block ``sub``'s part of a whole ``rows x cols`` tile (the two parts differ
    only under an odd split, where AIV0's is the larger: the static tile both lanes share)."""
    axis = SPLIT_AXIS.get(split)
    if axis == 0:
        return lane_extent(split, sub, rows), cols
    if axis == 1:
        return rows, lane_extent(split, sub, cols)
    return rows, cols


def share_problem(way: str, push_split, pushed_valid: tuple, pop_split, static: tuple,
                  dtype: str) -> tuple | None:
    """A split TPOP takes a share of the split push: a Vector core its part of the Cube's tile
    (``way`` C2V), the Cube the parts both Vector cores pushed (V2C).  A consumer tile whose
    ``static`` extent on the split axis is smaller than that share cannot hold it: it would
    read another lane's rows or columns, or one lane's part only (a 4-row tile for an 8-row
    part).  ``pushed_valid``: the valid shape of the pushed tile (the Cube's whole tile, or
    one Vector core's part); ``dtype``: its element type's name.  None when the tile holds
    the share (a smaller valid region in it is a dynamic tail, not this), else ``(held,
    tail, fix)``: what it cannot hold, why, and the fix - the run's TPOP and VerifyPipes
    both word their finding from them."""
    axis = SPLIT_AXIS.get(push_split)
    if axis is None or push_split in ODD_SPLITS or push_split != pop_split:
        return None
    c2v = way == C2V
    pvrow, pvcol = pushed_valid
    share = part_shape(push_split, pvrow, pvcol) if c2v else full_shape(push_split, pvrow, pvcol)
    if static[axis] >= share[axis]:
        return None
    word = ("rows", "columns")[axis]
    held = (f"its {share[0]}x{share[1]} part of the Cube's {pvrow}x{pvcol} {dtype} tile" if c2v else
            f"the tile the two Vector cores pushed: {share[0]}x{share[1]} {dtype} ({pvrow}x{pvcol} from each)")
    tail = f"its {static[axis]} {word} would take " + ("part of it" if c2v else "one lane's part only")
    fix = (f"pop a {share[0]}x{share[1]} tile" + (" (this lane's part)" if c2v else " (both lanes' parts)")
           + f", or push a tile whose {TileSplitAxis(push_split).name} share is {static[axis]} {word}")
    return held, tail, fix


def lane_start(split, sub: int, e: int) -> int:
    """Where, on the split axis of the whole tile, lane ``sub``'s band of ``e`` rows (columns)
    starts: ``sub * e`` (even splits), ``sub * (e + sub)`` (odd: pto-isa places AIV1 one past
    its own extent, so AIV0 must hold one more), 0 (NO_SPLIT)."""
    if split in ODD_SPLITS:
        return sub * (e + sub)
    return sub * e if split in SPLIT_AXIS else 0


def part_offset(split, sub: int, rows: int, cols: int, item: int) -> int:
    """Byte offset in the slot of sub-block ``sub``'s ``rows x cols`` part."""
    axis = SPLIT_AXIS.get(split)
    if axis == 0:
        return lane_start(split, sub, rows) * cols * item
    if axis == 1:
        return lane_start(split, sub, cols) * item
    return 0


def part_of(arr: np.ndarray, split, sub: int) -> np.ndarray:
    """Sub-block ``sub``'s part of a whole tile ``arr`` (a view)."""
    axis = SPLIT_AXIS.get(split)
    if axis is None:
        return arr
    n = arr.shape[axis]
    e = lane_extent(split, sub, n)
    lo = lane_start(split, sub, e)
    return arr[lo:lo + e] if axis == 0 else arr[:, lo:lo + e]


def part_rows(split, sub: int, rows: int, cols: int, item: int) -> tuple:
    """(byte offset, row stride in bytes) of sub-block ``sub``'s ``rows x cols`` part."""
    return part_offset(split, sub, rows, cols, item), full_shape(split, rows, cols, sub)[1] * item


#: how to give a pipe one Vector lane, AIV0, as each front end spells it (fix texts;
#: :func:`one_lane` gives a C++ kernel's line its own spelling only)
ONE_LANE = ("peers=(0,) on an ISA TPipe, lanes=1 on a DSL initialize_pipe; in a .pto, nosplit = true "
            "on both initialize_pipe ops, in C++ TPipe<..., IsNoSplit = true>: AIV1 then replays each "
            "handshake with an empty tile (A2A3), or takes no part (A5, where a NO_SPLIT pipe has one lane)")
#: ... in a pto-isa C++ kernel
ONE_LANE_CPP = ("TPipe<..., IsNoSplit = true>: AIV1 then replays each handshake with an empty tile (A2A3), "
                "or, where a NO_SPLIT pipe has one lane (A5), takes no part - the Vector kernel's "
                "body, the pipe's construction included, under `if (get_subblockid() == 0) { ... }`")
#: how a ``.pto`` file splits a no-split tile between the Vector lanes (fix texts)
SPLIT_PTO = ("split the tile between the lanes (split = 1 or 2 on the push, its pop and its free: each lane "
             "pushes its part)")
#: ... and how it has AIV1 replay each handshake with an empty tile where ptoas builds a
#: no-split pipe with both lanes (A2A3): the file says so itself - ``nosplit = true`` leaves
#: AIV1 pushing what it holds, onto the slot's start where AIV0's tile lies
LANE1_EMPTY_PTO = ("give AIV1's pushed tile an empty valid shape, as ptopipe's writer does: `%r = arith.select "
                   "%is0, %cROWS, %c0 : index` (the same for the columns), `%t = pto.alloc_tile valid_row = %r "
                   "valid_col = %c : !pto.tile_buf<..., v_row=?, v_col=?, ...>`, with %is0 true on AIV0 "
                   "(`pto.get_subblock_idx` == 0) and the loads and ops that fill the tile under `scf.if %is0 "
                   "{ ... }`; AIV1 then replays each handshake with an empty tile (nosplit = true alone leaves "
                   "AIV1 pushing the tile it holds)")


def two_lanes_fix_pto(one_lane_ok: bool) -> str:
    """How a ``.pto`` file stops both Vector lanes pushing the whole slot of a no-split V2C
    pipe: split the tile; or, where ptoas gives the pipe one lane (``one_lane_ok``: A5, where
    ``nosplit = true`` / ``split = 0`` run on AIV0 only), ``nosplit = true`` on both inits;
    else AIV1 pushing an empty valid shape (:data:`LANE1_EMPTY_PTO`)."""
    if one_lane_ok:
        return f"{SPLIT_PTO}, or give the pipe one lane: nosplit = true on both initialize_pipe ops"
    return f"{SPLIT_PTO}, or {LANE1_EMPTY_PTO}"


#: how to keep a Vector core off a pipe that does not have it as a peer, per front end
NOT_A_PEER = ("add this sub-block to peers= or do not bind the pipe on this core (a DSL function with "
              "lanes=1: mark it @pl.aiv(split=pl.TILE_NO_SPLIT), so that AIV1 runs nothing)")
#: ... in a pto-isa C++ kernel
NOT_A_PEER_CPP = ("AIV0 is the pipe's one Vector lane (a TPipe<..., IsNoSplit = true> on A5, where a "
                  "NO_SPLIT pipe has one lane; a TMPipe with VecCubeRatio::V1C1_VEC0), so AIV1 must not "
                  "construct it: put the Vector kernel's body, the pipe's construction included, under "
                  "`if (get_subblockid() == 0) { ... }` (on the device the Vector kernel may instead be launched "
                  "with a sub-block dim of 1); or give the pipe both lanes (IsNoSplit = false) and split its tiles "
                  "between them (TILE_UP_DOWN / TILE_LEFT_RIGHT)")


def one_lane(cpp: bool) -> str:
    """How to give a pipe one Vector lane, in a fix text at a line of a C++ kernel (``cpp``:
    ``sim.location.is_cpp``) or of any other front end."""
    return ONE_LANE_CPP if cpp else ONE_LANE


def not_a_peer(cpp: bool) -> str:
    """How to keep a Vector core off a pipe whose peers it is not, at a C++ line or another."""
    return NOT_A_PEER_CPP if cpp else NOT_A_PEER


def layout_fix(way: str, pushed: TileLayout, popped: TileLayout) -> str:
    """How to pop a ``way`` ("C2V" / "V2C") slot holding ``pushed`` data into a ``popped``
    tile (the run's and VerifyPipes' fix)."""
    if way == V2C:
        return (f"TMOV the Vec tile into {a_layout(popped)} Vec tile (TMOV converts layouts) and TPUSH "
                f"that, or pop into {a_layout(pushed)} Mat tile")
    return (f"the Cube's TPUSH writes {pushed.name} (the FIX pipe converts the Acc's NZ): pop into "
            f"{a_layout(pushed)} Vec tile and TMOV it to {popped.name} if you need that layout")


def a_layout(layout: TileLayout) -> str:
    """'an NZ' / 'a ZN': the layout's name with its article."""
    return ("an " if layout.name[0] == "N" else "a ") + layout.name
