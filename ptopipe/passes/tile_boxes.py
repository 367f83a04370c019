"""The static shape (box) a compiled kernel declares a tile in where something other than the
tile's own data fixes it, and the ring slot that follows - in one place.

pto-isa's ``Tile`` rounds a tile's static shape up to whole fractals or 32-byte rows
(:func:`ptopipe.arch.vocab.static_shape`): an Acc to 16x16 fractals, a Right tile to 16
columns, a Vec / Mat (ND) row to 32 bytes.  Where two tiles of different rules meet, one is
declared in a larger box (``TileValueType.box``):

* a Mat tile TMOVed into a Left / Right tile takes the destination's static shape - pto-isa's
  ``TMOV_TILE_IMPL`` ``static_assert``s "The shape of destination and source tile must be the
  same" (npu/a5 and npu/a2a3 TMov.hpp), ptoas's verifier "mat-source tmov ... matching src/dst
  shapes";
* across a ring the consumer reads the producer's rows at a pitch its declaration gives
  (:mod:`ptopipe.protocol.slots`): the Vec tile a Vector core pops from the Cube's Acc, or the
  Vec tile it pushes into a slot the Cube pops as a Mat tile, is declared with the columns
  the slot's rows are apart, so that the device's code reads what was written
  (``slots.transfer_problems`` under the placement "npu": ptopipe models the device), and
  pto-isa's CPU simulator too where a declaration makes both read right (:data:`PLACEMENTS`).
  An A5 Vector core pops a 16x24 Acc's 8x24 part into an 8x32 tile (the Acc is 16x32: its
  rows are 32 elements apart in the slot), which ExpandMixedKernel copies into the part's own
  8x24 tile for the ops that read it.  Where the two lay the slot out differently for every
  declaration - an A5 TILE_UP_DOWN push of an Acc whose valid rows do not fill its static rows
  (the device's ``pushAcc2VecFiFo`` halves the valid rows, the CPU simulator's ``TPush_c2v``
  the static ones), an A5 TILE_NO_SPLIT push whose valid columns do not fill the Acc's static
  columns (the device writes the rows the static columns apart, the CPU simulator packs them),
  an A2A3 split push of such an Acc (the CPU simulator writes the GM slot at the static pitch
  and TLOADs each part whole: ``slots.whole_pop_problem``), any pop of a GM slot or of the
  Cube's L1 slot into a tile its data does not fill (the same whole pop) - the device's
  declaration is emitted, and a run under ``pto-isa-cpusim`` is a ProtocolError at the pop
  (``isa.pipe.plans``).  Only a transfer the device reads right in no declaration is a
  CompileError at its DSL line saying why and which split or shape crosses.

A slot holds the static shape of the Cube's side of the transfer (the Acc; the Mat tile the
Cube pops), or on an A5 Cube->Vector ring one Vector core's part of it
(:func:`~ptopipe.protocol.geometry.slot_shape`): what the consumer binds or reads.

A box is a type's declaration: the values that are one C++ tile variable - a loop-carried
value with its initial and yielded values and the loop's result, a branch result with what its
branches yield, a copy with its source - share one box (:func:`box_kernel`).  ExpandMixedKernel
asks :func:`plan_crossing` for each boundary move and :func:`box_kernel` for each kernel.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..arch.vocab import C2V, TileLayout, TileSplitAxis
from ..errors import CompileError
from ..ir.opdefs import CopyOp, ForOp, IfOp, MoveOp, TPop, YieldOp
from ..ir.types import MemorySpace, TileValueType, itemsize
from ..protocol.geometry import SPLIT_AXIS, part_shape, slot_shape, split_push_problem
from ..protocol.slots import push_band, transfer_problems
from ._rewrite import boundary_direction, err

#: the slot layouts a compiled kernel must read right: the device's code and pto-isa's CPU
#: simulator (``protocol.slots``)
PLACEMENTS = ("npu", "cpusim")
#: the placement a declaration must read right (the other is preferred, not required)
DEVICE = "npu"
_WHERE = {"npu": "on the device", "cpusim": "in pto-isa's CPU simulator"}
_SPLITS = (TileSplitAxis.TILE_NO_SPLIT, TileSplitAxis.TILE_UP_DOWN, TileSplitAxis.TILE_LEFT_RIGHT)
_TMOV_TARGETS = (MemorySpace.Left, MemorySpace.Right)


@dataclass(frozen=True)
class Crossing:
    """What a boundary move needs: ``slot`` the (rows, cols) one slot holds, ``cube`` the static
    shape of the Cube's tile (the pushed Acc, the popped Mat), ``part`` the box of one Vector
    core's part (the popped or pushed Vec tile; None: its own static shape)."""
    slot: tuple
    cube: tuple
    part: tuple | None
    divides: bool = True        # False: no split rule divides the transfer (others report it)


def _own(t: TileValueType) -> tuple:
    return t.unboxed.static_shape


def _part_type(whole: TileValueType, split) -> TileValueType:
    """One Vector core's part of the whole Vec tile ``whole`` (its layout kept, as the split does)."""
    return TileValueType(part_shape(split, *whole.shape), whole.dtype, whole.space, whole.effective_layout)


def _problems(way: str, in_gm: bool, split, cube: tuple, valid: tuple, part: tuple, pvalid: tuple) -> list:
    """``[(placement, why)]`` of a transfer whose Cube tile is ``cube`` (static) with ``valid``
    data and whose Vector cores' part is declared ``part`` holding ``pvalid``, under each of
    :data:`PLACEMENTS` (``slots.transfer_problems``)."""
    return [(kind, why) for kind in PLACEMENTS
            for _lane, why, _fix in transfer_problems(kind, way, in_gm, split, cube, valid, part, pvalid)[:1]]


def _candidates(way: str, in_gm: bool, split, cube: tuple, valid: tuple, own: tuple, pvalid: tuple,
                row_major: bool) -> list:
    """The Vector part's static columns to try, its own first: a row-major part may be
    declared as wide as the pitch a slot's rows have."""
    cols = {own[1]}
    if row_major:
        if way == C2V:
            cols |= {push_band(k, C2V, in_gm, split, cube, valid, 0).pitch for k in PLACEMENTS}
        else:
            cols.add(cube[1] // 2 if SPLIT_AXIS.get(split) == 1 else cube[1])
    return [own[1]] + sorted(c for c in cols if c > own[1] and c >= pvalid[1])


def _decide(way: str, in_gm: bool, split, cube: tuple, valid: tuple, part: TileValueType):
    """``(box or None, None)``: the declaration of the part to emit - the first both placements
    read right, else the first the device reads right (pto-isa's CPU simulator then misreads
    or stops at the pop: the run under ``pto-isa-cpusim`` reports it there); ``(None, [(placement,
    why)])`` when the device reads no declaration right (the part's own declaration's problems)."""
    own = _own(part)
    row_major = part.effective_layout is TileLayout.ND
    tried = []
    for c in _candidates(way, in_gm, split, cube, valid, own, part.shape, row_major):
        probs = _problems(way, in_gm, split, cube, valid, (own[0], c), part.shape)
        box = None if c == own[1] else (own[0], c)
        if not probs:
            return box, None
        tried.append((box, probs))
    device_right = [box for box, probs in tried if all(k != DEVICE for k, _why in probs)]
    if device_right:
        return device_right[0], None
    return None, [(k, why) for k, why in tried[0][1] if k == DEVICE]


def _divides(way: str, in_gm: bool, split, cube: tuple, valid: tuple, dtype: str) -> bool:
    """Does ``split`` divide this transfer at all (the rules the run's TPUSH and VerifyPipes
    check: ``geometry.split_push_problem`` on the Acc, or on a Vector core's pushed part)?"""
    axis = SPLIT_AXIS.get(split)
    if axis is not None and valid[axis] % 2:
        return False
    if way == C2V:
        return split_push_problem(split, cube, valid, itemsize(dtype), acc_to_ub=not in_gm) is None
    part = part_shape(split, *valid)
    return split_push_problem(split, part, part, itemsize(dtype), vec_to_l1=not in_gm) is None


def _sides(op, mat_box: tuple | None) -> tuple:
    """``(way, the whole Vec tile, the Cube tile's static shape)`` of the boundary move ``op``."""
    way = boundary_direction(op).name[4:]
    if way == C2V:
        acc = op.tile.type
        return way, TileValueType(acc.shape, acc.dtype, MemorySpace.Vec), _own(acc)
    whole = op.tile.type.unboxed
    dst = op.result.type
    mat = TileValueType(whole.shape, whole.dtype, MemorySpace.Mat)
    cube = mat_box if mat_box is not None else _own(dst if dst.space in _TMOV_TARGETS else mat)
    return way, whole, tuple(max(a, b) for a, b in zip(cube, _own(mat)))


def slot_of(op, split, in_gm: bool, mat_box: tuple | None = None) -> tuple:
    """The (rows, cols) one slot of a ring in GM (``in_gm``) or local to the consumer holds of
    the boundary move ``op``: the static shape of the Cube's tile, or on a Cube->Vector ring in
    the Vector cores' UB one core's ``split`` part of it (``geometry.slot_shape``)."""
    way, _whole, cube = _sides(op, mat_box)
    return slot_shape(way, in_gm, split, *cube)


def plan_crossing(op, split, in_gm: bool, mat_box: tuple | None = None, plat_name: str = "",
                  suggest: bool = True) -> Crossing:
    """The slot and the Vector part's box of the boundary move ``op`` (a ``pl.move`` between the
    cores, whole tiles) under ``split`` through a ring in GM (``in_gm``) or local to the
    consumer; ``mat_box``: the box the Cube's Mat tile needs (a V2C move whose Mat tile is
    later TMOVed into Left / Right: :func:`mat_requirements`).  A transfer no split rule
    divides is left to the checks that report it (its Vector part undeclared here); one the
    device reads right in no declaration is a CompileError at ``op`` (``suggest``: its fix names
    the splits that cross)."""
    way, whole, cube = _sides(op, mat_box)
    valid = tuple(whole.shape)
    slot = slot_shape(way, in_gm, split, *cube)
    if split not in _SPLITS or not _divides(way, in_gm, split, cube, valid, whole.dtype):
        return Crossing(slot, cube, None, False)
    part = _part_type(whole, split)
    box, probs = _decide(way, in_gm, split, cube, valid, part)
    if probs is not None:
        raise _refusal(op, way, in_gm, split, cube, valid, probs, plat_name, mat_box if suggest else False)
    return Crossing(slot, cube, box)


def _refusal(op, way, in_gm, split, cube, valid, probs, plat_name, mat_box) -> CompileError:
    """The CompileError of a transfer the device reads right in no declaration (``probs``: the
    device's problems; ``mat_box`` False: without the other splits in its fix)."""
    kind, why = probs[0]
    ring = ("a ring in GM" if in_gm else "a ring in the Vector cores' UB" if way == C2V else "a ring in the Cube's L1")
    on = f" on {plat_name}" if plat_name else ""
    dtype = op.tile.type.dtype
    if way == C2V:
        what = (f"the {valid[0]}x{valid[1]} {dtype} accumulator cannot cross to the Vector side ({split.name}, {ring}{on}): "
                f"pto-isa declares the Acc tile {cube[0]}x{cube[1]} (whole 16x16 fractals)")
        data = "accumulator"
    else:
        tmov = cube != _own(TileValueType(valid, dtype, MemorySpace.Mat))
        what = (f"the {valid[0]}x{valid[1]} {dtype} tile cannot cross to the Cube ({split.name}, {ring}{on}): the Cube pops "
                f"it as a {cube[0]}x{cube[1]} Mat tile"
                + (" (the static shape of the Left / Right tile it is TMOVed into: pto-isa's TMOV from a Mat tile "
                   "takes the destination's static shape)" if tmov else ""))
        data = "tile"
    what += (", and the device's code does not read its slot right for any declaration of the tiles")
    others = [] if mat_box is False else [s for s in _SPLITS if s != split and _works(op, s, in_gm, mat_box)]
    fixes = [f"@pl.incore(split=pl.{s.name})" for s in others]
    fixes.append(f"give the {data} {cube[0]}x{cube[1]} valid rows and columns, filling its static shape (pad the "
                 "tensor or the tail tile)")
    return CompileError(what, where=str(op.loc) if op.loc else None, fix="; or ".join(fixes),
                        details=why if why.startswith("pto-isa") else f"{_WHERE[kind]}: {why}")


def _works(op, split, in_gm, mat_box) -> bool:
    try:
        return plan_crossing(op, split, in_gm, mat_box, suggest=False).divides
    except CompileError:
        return False


# -- one box per C++ tile variable ---------------------------------------------------------------
class _Classes:
    """Union-find of the tile values of a kernel that are one C++ tile variable."""

    def __init__(self, fn):
        self.parent = {}
        for op in fn.walk():
            if op.is_a(ForOp):
                body = op.body
                term = list(body)[-1] if len(list(body)) else None
                yields = term.operands if term is not None and term.is_a(YieldOp) else ()
                for i, (init, arg, res) in enumerate(zip(op.inits, body.args[1:], op.results)):
                    self.union(init, arg, res, *(yields[i:i + 1]))
            elif op.is_a(IfOp):
                for blk in (op.then_block, op.else_block):
                    term = list(blk)[-1] if blk is not None and len(list(blk)) else None
                    if term is not None and term.is_a(YieldOp):
                        for r, y in zip(op.results, term.operands):
                            self.union(r, y)
            elif op.is_a(CopyOp):
                self.union(op.source, op.out)

    def find(self, v):
        p = self.parent.setdefault(v, v)
        if p is v:
            return v
        root = self.find(p)
        self.parent[v] = root
        return root

    def union(self, *vs) -> None:
        vs = [v for v in vs if v.type.__class__ is TileValueType]
        for v in vs[1:]:
            a, b = self.find(vs[0]), self.find(v)
            if a is not b:
                self.parent[b] = a

    def members(self, v) -> list:
        root = self.find(v)
        return [u for u in self.parent if self.find(u) is root] or [v]


def mat_requirements(fn) -> dict:
    """``{value: box}`` of the Mat tiles of ``fn`` TMOVed into a Left / Right tile of a larger
    static shape (the destination's; the largest of several), for each value of the C++ tile
    variable the moved one is (:class:`_Classes`)."""
    classes = _Classes(fn)
    need = {}
    for op in fn.walk():
        if op.is_a(MoveOp) and op.tile.type.__class__ is TileValueType \
                and op.tile.type.space is MemorySpace.Mat and op.result.type.space in _TMOV_TARGETS:
            src = op.tile
            box = tuple(max(a, b) for a, b in zip(_own(op.result.type), _own(src.type)))
            if box != _own(src.type):
                root = classes.find(src)
                old = need.get(root)
                need[root] = box if old is None else tuple(max(a, b) for a, b in zip(old, box))
    return {v: need[root] for v in list(classes.parent) if (root := classes.find(v)) in need}


def box_kernel(fn, popped: dict | None = None, pushed: dict | None = None) -> None:
    """Declare the tiles of kernel ``fn`` in their boxes: ``popped`` ``{TPOP op: box}`` (a
    popped part whose slot fixes its row pitch), ``pushed`` ``{TPUSH op: box}`` (a pushed part
    the Cube pops at that pitch), every Mat tile TMOVed into a wider Left / Right tile
    (:func:`mat_requirements`) - each value of one C++ tile variable (:class:`_Classes`) taking
    one box.  Two different boxes for one variable are a CompileError at the op that asks the
    second."""
    classes = _Classes(fn)
    boxes = {}                      # root -> (box, the op asking, what asks)

    def ask(v, box, op, what) -> None:
        if box is None or box == _own(v.type):
            return
        root = classes.find(v)
        got = boxes.get(root)
        if got is None:
            boxes[root] = (box, op, what)
        elif got[0] != box:
            raise err(f"{what} needs its tile declared {box[0]}x{box[1]}, but the same tile variable "
                      f"(a loop-carried / branch value or a copy) is declared {got[0][0]}x{got[0][1]} for "
                      f"{got[2]} at {got[1].loc if got[1] is not None else 'its definition'}", op,
                      "give each its own tile: copy the value (e.g. pl.adds(x, 0.0)) before it is pushed, "
                      "carried or moved")
    for op, box in (popped or {}).items():
        ask(op.tile, box, op, "this TPOP (the row pitch of its slot)")
    for op, box in (pushed or {}).items():
        ask(op.tile, box, op, "this TPUSH (the row pitch the Cube pops its slot at)")
    for v, box in mat_requirements(fn).items():
        op = next((u.owner for u in v.uses if u.owner.is_a(MoveOp)), None) or getattr(v, "op", None)
        ask(v, box, op, "a TMOV into a Left / Right tile (the destination's static shape)")
    _declare(classes, boxes)


def _declare(classes: _Classes, boxes: dict) -> None:
    """Give every value of each boxed class its box (a TPOP's declared type too)."""
    for root, (box, _op, _what) in boxes.items():
        for v in classes.members(root):
            if v.type.box == box:
                continue
            v.type = replace(v.type.unboxed, box=box)
            owner = getattr(v, "op", None)
            if owner is not None and owner.is_a(TPop) and owner.tile is v:
                owner.result_type = v.type
