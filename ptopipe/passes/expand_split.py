"""ExpandMixedKernel, split modes: make the AIV function of an expanded mixed function work
on its half of every Vector tile (seed 003 split consumer: TILE_UP_DOWN halves the rows,
TILE_LEFT_RIGHT the columns; each of the two Vector cores of a cluster runs the same
function, and ``pl.get_subblockid()`` says which half is its own).

Every Vec tile value is retyped to its half; GM loads into Vec and stores from Vec get
their offset on the split axis moved by ``sub * half`` and their shape halved;
``pl.full`` and ``pl.tpop`` get the halved shape.  A Vec tile of extent 1 on the split
axis - the [M, 1] per-row operand of a ``row_expand_*`` under TILE_LEFT_RIGHT (a [1, N]
one under TILE_UP_DOWN) - is *kept whole*: each Vector core holds all its rows (columns),
next to half the columns (rows) of the [M, N] operand, and loads all of it.  Errors: a
Vec tile whose extent on the split axis does not halve (odd, above 1), a kept tile that
crosses to the Cube or is stored (both Vector cores hold it: both would push / write the
same data), an op that mixes data across the split axis - by its declared data dependence
(:class:`ptopipe.ir.ops.Axes`): a reduction, arg-reduction, pair sum, concatenation or
sort along it (a per-row reduction under TILE_LEFT_RIGHT, a per-column one under
TILE_UP_DOWN: each core would see half a row / column), a Vec load / store of a tensor
that is not 2-D.
"""
from __future__ import annotations

from dataclasses import replace

from ..arch.vocab import TileSplitAxis
from ..ir.core import Operation
from ..ir.opdefs import (ARITH_OP, OPDEFS, ConstOp, FullOp, GetSubblockIdOp, LoadOp, StoreOp, TPop,
                         TPush)
from ..ir.ops import Along
from ..ir.types import INDEX, MemorySpace, TileValueType
from ._rewrite import const, dce, err, set_operands

AXIS = {TileSplitAxis.TILE_UP_DOWN: 0, TileSplitAxis.TILE_LEFT_RIGHT: 1}
_AXIS_WORD = ("rows", "columns")


def _half(t: TileValueType, axis: int, op, what: str) -> TileValueType:
    n = t.shape[axis]
    if n % 2:
        mode = "TILE_UP_DOWN" if axis == 0 else "TILE_LEFT_RIGHT"
        raise err(f"{what} ({t.shape[0]}x{t.shape[1]} {t.dtype}) cannot be split {mode}: its "
                  f"{n} {_AXIS_WORD[axis]} do not halve between the two Vector cores", op,
                  "use an even extent on the split axis, or the other split mode "
                  "(@pl.incore(split=...))")
    shape = (n // 2, t.shape[1]) if axis == 0 else (t.shape[0], n // 2)
    half = TileValueType(shape, t.dtype, t.space, t.layout)
    if t.layout is None and half.effective_layout is not t.effective_layout:
        # a half keeps the whole's layout: the one-column half of a [M, 2] ND tile (its popped
        # C2V slot rows, say) is ND, not the DN a one-column Vec tile defaults to
        half = replace(half, layout=t.effective_layout)
    return half


def _is_vec(t) -> bool:
    return t.__class__ is TileValueType and t.space is MemorySpace.Vec


def _split_value(v, axis: int, op, kept: set) -> None:
    """Give Vec value ``v`` its type on one Vector core: halved on ``axis``, or whole - and
    recorded in ``kept`` - when its extent there is 1 as written (a half of extent 1, e.g.
    of a 2-row tile under TILE_UP_DOWN, is a split tile like any other)."""
    t = v.type
    if t.shape[axis] == 1 and not op.is_a(TPop):
        kept.add(id(v))
    else:
        v.type = _half(t, axis, op, _vname(v))


_MODE = ("TILE_UP_DOWN", "TILE_LEFT_RIGHT")


def _other_split(axis: int) -> str:
    """The splits under which no core holds half of the ``axis`` of a tile."""
    return (f"@pl.incore(split=pl.{_MODE[1 - axis]}) (each Vector core then holds whole "
            f"{_AXIS_WORD[1 - axis]}), or split=pl.TILE_NO_SPLIT")


def _mixes(op, axis: int, kept: set) -> None:
    """Refuse ``op`` if it combines values along ``axis`` of a tile split along it."""
    axes = OPDEFS[op.name].axes
    if axes.kind != "tile" or axes.along(axis) is not Along.MIXES:
        return
    v = next((v for v in op.operands if _is_vec(v.type) and id(v) not in kept), None)
    if v is not None:
        raise err(f"pl.{op.spec.dsl} mixes data across the split axis: its result combines "
                  f"values from different {_AXIS_WORD[axis]} of {_vname(v)}, but each Vector "
                  f"core holds only half of the {_AXIS_WORD[axis]} (split {_MODE[axis]}), so "
                  "each would compute it from its half", op, f"use {_other_split(axis)}")


def _kept_error(op, t: TileValueType, axis: int, doing: str):
    mode, word = ("TILE_LEFT_RIGHT", "row") if axis else ("TILE_UP_DOWN", "column")
    other = "TILE_UP_DOWN" if axis else "TILE_LEFT_RIGHT"
    return err(f"{doing} a per-{word} tile ({t.shape[0]}x{t.shape[1]} {t.dtype}) under split "
               f"{mode}: both Vector cores hold all of it (it is not split), so both would "
               f"{'push' if op.is_a(TPush) else 'write'} the same data", op,
               f"expand it over the {word}s first (pl.row_expand_* with a tile of the full "
               f"shape) or use @pl.incore(split=pl.{other})")


def _vname(v) -> str:
    return f"'{v.name}'" if v.name else "a Vector tile"


def _lane_offset(v, mine) -> bool:
    """Does value ``v`` (an offset) depend on a ``pl.get_subblockid()`` the user wrote (not
    ``mine``, the one this pass inserts)?"""
    seen, todo = set(), [v]
    while todo:
        d = getattr(todo.pop(), "op", None)
        if d is None or id(d) in seen:
            continue
        seen.add(id(d))
        if d.is_a(GetSubblockIdOp) and d is not mine:
            return True
        todo.extend(d.operands)
    return False


def _shift(op: Operation, axis: int, sub, half: int) -> None:
    """Offset ``axis`` of ``op`` (a load / store) += sub * half, with new ops before ``op``."""
    index = type(op).offsets.index_of(op, axis)
    off = op.operands[index]
    if _lane_offset(off, sub.op):
        raise err(f"{op.name}: its offset uses pl.get_subblockid(), but a split mixed function is "
                  "written for the whole tile - the compiler moves every Vector load / store to "
                  "its core's half itself, so this offset would be shifted twice", op,
                  "drop the pl.get_subblockid() term: give the offsets of the whole tile (or "
                  "hand-write the AIV kernel with @pl.aiv)")
    c = op.insert_before(const(half, op.loc))
    new = op.insert_before(Operation(ARITH_OP["*"], (sub, c.results[0]), [INDEX], {}, (), op.loc))
    d = getattr(off, "op", None)
    if not (d is not None and d.is_a(ConstOp) and d.value == 0):
        new = op.insert_before(Operation(ARITH_OP["+"], (off, new.results[0]), [INDEX], {}, (),
                                         op.loc))
    ops = list(op.operands)
    ops[index] = new.results[0]
    set_operands(op, ops)


def _mark(op: Operation, split, half: int) -> None:
    """Record on ``op``'s location that it now moves one Vector core's ``half`` (runtime
    errors then quote the offsets and window as written, and the lane)."""
    if op.loc is not None:
        op.loc = replace(op.loc, lane_split=(split, half))


def split_vector_function(fn: Operation, split, sub_anchor: Operation, sub_name: str) -> None:
    """Slice the AIV function ``fn`` for ``split``; ``pl.get_subblockid()`` is inserted
    after ``sub_anchor`` (the pipe initialisation), or first when it is None."""
    axis = AXIS[split]
    sub_op = GetSubblockIdOp.build(result_types=[INDEX], loc=fn.loc, result_names=[sub_name])
    if sub_anchor is not None:
        sub_anchor.insert_after(sub_op)
    else:
        fn.body.prepend(sub_op)
    sub = sub_op.results[0]
    kept = set()                # ids of the Vec values every Vector core holds whole
    for op in list(fn.walk()):
        if op is fn:
            continue
        _mixes(op, axis, kept)
        for r in op.regions:
            for b in r.blocks:
                for a in b.args:
                    if _is_vec(a.type):
                        _split_value(a, axis, op, kept)
        for r in op.results:
            if _is_vec(r.type):
                _split_value(r, axis, op, kept)
        cls = op.__class__
        if cls is TPop and _is_vec(op.result_type):
            op.result_type = op.tile.type
        elif cls is FullOp:
            op.shape = op.result.type.shape
        elif cls in (StoreOp, TPush) and id(op.tile) in kept:
            raise _kept_error(op, op.tile.type, axis,
                              "storing" if cls is StoreOp else "passing to the Cube")
        elif cls is LoadOp and id(op.result) in kept:
            pass                                # every Vector core loads all of it
        elif cls is LoadOp and _is_vec(op.result.type):
            if len(op.offsets) != 2:
                raise err("a Vector load of a tensor that is not 2-D cannot be split between the "
                          "Vector cores", op, "load from a 2-D tensor")
            shape = list(op.shape)
            shape[axis] = op.result.type.shape[axis]
            op.shape = tuple(shape)
            _shift(op, axis, sub, shape[axis])
            _mark(op, split, shape[axis])
        elif cls is StoreOp and _is_vec(op.tile.type):
            if len(op.offsets) != 2:
                raise err("a Vector store to a tensor that is not 2-D cannot be split between the "
                          "Vector cores", op, "store to a 2-D tensor")
            _shift(op, axis, sub, op.tile.type.shape[axis])
            _mark(op, split, op.tile.type.shape[axis])
    dce(fn)                    # the offsets a shift replaced
