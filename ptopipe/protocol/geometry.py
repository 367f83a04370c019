"""Split geometry of a ring slot, in one place: how a tile divided between the two Vector
sub-blocks (``TileSplitAxis``) is laid out in a slot.

UP_DOWN parts are row blocks (sub-block ``s`` owns rows ``s*rows .. (s+1)*rows`` of a
``2*rows x cols`` tile); LEFT_RIGHT parts are column blocks of a ``rows x 2*cols`` tile;
NO_SPLIT is the whole tile.  ``rows x cols`` is always the *part* (one sub-block's tile),
except in :func:`part_shape` / :func:`part_of`, which cut a whole tile, and
:func:`slot_shape`, what one slot holds of a whole tile (SlotSize).  The pipe ops, the
ring-slot race checker, the address flow, VerifyPipes and the DSL compiler's ring sizing all
use these functions.
"""
from __future__ import annotations

import math

import numpy as np

from ..arch.vocab import C2V, V2C, TileLayout, TileSplitAxis

_UP_DOWN = TileSplitAxis.TILE_UP_DOWN
_LEFT_RIGHT = TileSplitAxis.TILE_LEFT_RIGHT


def full_shape(split, rows: int, cols: int) -> tuple:
    """Shape of the whole slot tile whose ``split`` part is ``rows x cols``."""
    if split == _UP_DOWN:
        return rows * 2, cols
    if split == _LEFT_RIGHT:
        return rows, cols * 2
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
                "TILE_NO_SPLIT")
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


def part_shape(split, rows: int, cols: int) -> tuple:
    """Shape of one sub-block's part of a whole ``rows x cols`` tile."""
    if split == _UP_DOWN:
        return rows // 2, cols
    if split == _LEFT_RIGHT:
        return rows, cols // 2
    return rows, cols


def part_offset(split, sub: int, rows: int, cols: int, item: int) -> int:
    """Byte offset in the slot of sub-block ``sub``'s ``rows x cols`` part."""
    if split == _UP_DOWN:
        return sub * rows * cols * item
    if split == _LEFT_RIGHT:
        return sub * cols * item
    return 0


def part_of(arr: np.ndarray, split, sub: int) -> np.ndarray:
    """Sub-block ``sub``'s part of a whole tile ``arr`` (a view)."""
    r, c = arr.shape
    if split == _UP_DOWN:
        return arr[sub * (r // 2):(sub + 1) * (r // 2)]
    if split == _LEFT_RIGHT:
        return arr[:, sub * (c // 2):(sub + 1) * (c // 2)]
    return arr


def part_rows(split, sub: int, rows: int, cols: int, item: int) -> tuple:
    """(byte offset, row stride in bytes) of sub-block ``sub``'s ``rows x cols`` part."""
    return part_offset(split, sub, rows, cols, item), full_shape(split, rows, cols)[1] * item


#: how to give a pipe one Vector lane, AIV0, as each front end spells it (fix texts;
#: :func:`one_lane` gives a C++ kernel's line its own spelling only)
ONE_LANE = ("peers=(0,) on an ISA TPipe, lanes=1 on a DSL initialize_pipe; in a .pto, nosplit = true "
            "on both initialize_pipe ops, in C++ TPipe<..., IsNoSplit = true>: AIV1 then replays each "
            "handshake with an empty tile, or takes no part where pto-isa gives a NO_SPLIT pipe one lane (A5)")
#: ... in a pto-isa C++ kernel
ONE_LANE_CPP = ("TPipe<..., IsNoSplit = true>: AIV1 then replays each handshake with an empty tile, or, "
                "where pto-isa gives a NO_SPLIT pipe one lane (A5), takes no part - the Vector kernel's "
                "body, the pipe's construction included, under `if (get_subblockid() == 0) { ... }`")
#: how to keep a Vector core off a pipe that does not have it as a peer, per front end
NOT_A_PEER = ("add this sub-block to peers= or do not bind the pipe on this core (a DSL function with "
              "lanes=1: mark it @pl.aiv(split=pl.TILE_NO_SPLIT), so that AIV1 runs nothing)")
#: ... in a pto-isa C++ kernel
NOT_A_PEER_CPP = ("AIV0 is the pipe's one Vector lane (a TPipe<..., IsNoSplit = true> where pto-isa gives a "
                  "NO_SPLIT pipe one lane, A5; a TMPipe with VecCubeRatio::V1C1_VEC0), so AIV1 must not "
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
