"""ExpandMixedKernel, split modes: make the AIV function of an expanded mixed function work
on its half of every Vector tile (seed 003 split consumer: TILE_UP_DOWN halves the rows,
TILE_LEFT_RIGHT the columns; each of the two Vector cores of a cluster runs the same
function, and ``pl.get_subblockid()`` says which half is its own).

Each Vec value is either *split* along one axis (each core holds its half: the rows or the
columns it owns) or *whole* (each core holds all of it).  Where a value comes from decides:
a popped tile is split as its ring is; a GM load, a tile an op makes from its shape
(``pl.full``, ``pl.tri``, ``pl.arange``, a broadcast to a shape) and a loop-carried or
branch value are split along the split axis unless their extent there is 1 - the [M, 1]
per-row operand of a ``row_expand_*`` under TILE_LEFT_RIGHT (a [1, N] one under
TILE_UP_DOWN) is kept whole, each core holding all its rows (columns) next to half the
columns (rows) of the [M, N] operand.  Every other tile op follows its declared data
dependence (:class:`ptopipe.ir.ops.Axes`, one per op): element-wise along an axis, it
computes its half from its operands' halves; a transpose swaps the axis its result is
split along; an op that mixes data along the split axis (a reduction, arg-reduction, pair
sum, concatenation or sort across it) is refused at its DSL line, as each core would
compute from half of the data.  A split op's shape attribute is halved (and the start of a
sequence or the diagonal of a triangle moved to the core's first index), and its result
type is what the op's own typing rule gives for its split operands.  GM loads and stores
get their offset on the split axis moved by ``sub * half``.  Errors also: a Vec tile whose
extent on the split axis does not halve (odd, above 1), a whole tile that crosses to the
Cube or is stored (both Vector cores hold it: both would push / write the same data), a
loop-carried value split one way on entry and another way on the back edge, a Vec load /
store of a tensor that is not 2-D.
"""
from __future__ import annotations

from dataclasses import replace

from ..arch.vocab import TileSplitAxis
from ..ir.core import Operation
from ..ir.opdefs import (ARITH_OP, OPDEFS, ConstOp, CopyOp, ForOp, GetSubblockIdOp, LoadOp,
                         StoreOp, TPop, TPush, YieldOp, infer_type, operand_groups,
                         scalar_result_type)
from ..ir.ops import Along, OpError
from ..ir.types import INDEX, MemorySpace, TileValueType
from ..ir.vocab import FunctionKind
from ..language.parser import source_name
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


def _vname(v) -> str:
    return f"'{source_name(v.name)}'" if v.name else "a Vector tile"     # ('v', not its SSA hint 'v_1')


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


_MODE = ("TILE_UP_DOWN", "TILE_LEFT_RIGHT")
_ONE = ("row", "column")


def _other_split(axis: int) -> str:
    """The splits under which no core holds half of the ``axis`` of a tile."""
    return (f"@pl.incore(split=pl.{_MODE[1 - axis]}) (each Vector core then holds whole "
            f"{_AXIS_WORD[1 - axis]}), or split=pl.TILE_NO_SPLIT")


def _kept_error(op, t: TileValueType, axis: int, doing: str):
    """Storing / pushing a tile both Vector cores hold whole (``axis``: the split axis)."""
    verb = "push" if op.is_a(TPush) else "write"
    if t.shape[axis] == 1:
        word = _ONE[1 - axis]
        return err(f"{doing} a per-{word} tile ({t.shape[0]}x{t.shape[1]} {t.dtype}) under split "
                   f"{_MODE[axis]}: both Vector cores hold all of it (it is not split), so both "
                   f"would {verb} the same data", op,
                   f"use @pl.incore(split=pl.{_MODE[1 - axis]}) (a per-{word} tile is split there: "
                   f"each core {verb}s its half), or split=pl.TILE_NO_SPLIT")
    return err(f"{doing} a tile ({t.shape[0]}x{t.shape[1]} {t.dtype}) that both Vector cores hold "
               f"whole under split {_MODE[axis]} (it is made from whole tiles), so both would "
               f"{verb} the same data", op, "use @pl.incore(split=pl.TILE_NO_SPLIT)")


class _Splitter:
    """The split of one AIV function: which Vec values are split along which axis, and the
    rewrite of each op (see the module docstring)."""

    def __init__(self, fn: Operation, split, sub):
        self.fn, self.split, self.axis, self.sub = fn, split, AXIS[split], sub
        self.on = {}            # id(Vec value) -> the axis its cores split it along, None: whole
        self.whole = {}         # id(Vec value) -> its type as written (the whole tile)

    # -- values -----------------------------------------------------------------------------
    def set(self, v, axis, whole: TileValueType, t: TileValueType = None) -> None:
        self.on[id(v)], self.whole[id(v)] = axis, whole
        if t is not None:
            v.type = t

    def source(self, v, op) -> None:
        """``v`` made whole-shaped by ``op`` (a load, a loop-carried value ...): split along the
        split axis unless its extent there is 1 (then every core holds all of it)."""
        t, axis = v.type, self.axis
        if t.shape[axis] == 1:
            self.set(v, None, t)
        else:
            self.set(v, axis, t, _half(t, axis, op, _vname(v)))

    def tracked(self, v) -> bool:
        return id(v) in self.on

    # -- the ops ----------------------------------------------------------------------------
    def run(self) -> None:
        for op in list(self.fn.walk()):
            if op is self.fn:
                continue
            kind = OPDEFS[op.name].axes.kind
            if kind == "tile":
                self.tile_op(op)
            elif kind == "window":
                self.window(op)
            elif kind == "ring":
                self.ring(op)
            elif kind == "carry":
                self.carry(op)

    def carry(self, op) -> None:
        if op.is_a(YieldOp):
            parent = op.parent_op
            for v, r in zip(op.operands, parent.results):
                if self.tracked(r) and self.on.get(id(v), None) != self.on[id(r)]:
                    raise self._carried_error(op, v, r)
            return
        for r in op.regions:
            for b in r.blocks:
                for a in b.args:
                    if _is_vec(a.type):
                        self.source(a, op)
        if op.is_a(ForOp):
            for init, arg in zip(op.inits, op.body.args[1:]):
                if self.tracked(arg) and self.on.get(id(init), None) != self.on[id(arg)]:
                    raise self._carried_error(op, init, arg)
        for r in op.results:
            if not _is_vec(r.type):
                continue
            if op.is_a(CopyOp):
                v = op.operands[0]
                self.set(r, self.on.get(id(v)), self.whole.get(id(v), r.type), v.type)
            else:
                self.source(r, op)

    def _carried_error(self, op, v, r):
        def how(x):
            k = self.on.get(id(x))
            return "whole" if k is None else f"split by {_AXIS_WORD[k]}"
        return err(f"{_vname(r)} is carried {how(r)} between the Vector cores, but the value "
                   f"given for it ({_vname(v)}) is {how(v)}: a loop-carried or branch value keeps "
                   "one split", op,
                   "give it values split the same way (e.g. transpose after the loop, not in "
                   "it), or use @pl.incore(split=pl.TILE_NO_SPLIT)")

    def ring(self, op) -> None:
        if op.is_a(TPop) and _is_vec(op.result_type):
            v = op.tile
            self.set(v, self.axis, v.type, _half(v.type, self.axis, op, _vname(v)))
            op.result_type = v.type
        elif op.is_a(TPush) and self.tracked(op.tile):
            k = self.on[id(op.tile)]
            if k is None:
                raise _kept_error(op, self.whole[id(op.tile)], self.axis, "passing to the Cube")
            if k != self.axis:
                raise err(f"passing to the Cube {_vname(op.tile)}, which is split by "
                          f"{_AXIS_WORD[k]} between the Vector cores (it is a transpose), but the "
                          f"ring's split {_MODE[self.axis]} gives each core half of the "
                          f"{_AXIS_WORD[self.axis]}", op,
                          "use @pl.incore(split=pl.TILE_NO_SPLIT) (the Vector side then holds "
                          "whole tiles)")

    def window(self, op) -> None:
        if op.is_a(LoadOp) and _is_vec(op.result.type):
            self.source(op.result, op)
            k = self.on[id(op.result)]
            if k is None:
                return                           # every Vector core loads all of it
            if len(op.offsets) != 2:
                raise err("a Vector load of a tensor that is not 2-D cannot be split between the "
                          "Vector cores", op, "load from a 2-D tensor")
            shape = list(op.shape)
            shape[k] = op.result.type.shape[k]
            op.shape = tuple(shape)
            self.shift(op, k, shape[k])
        elif op.is_a(StoreOp) and self.tracked(op.tile):
            k, whole = self.on[id(op.tile)], self.whole[id(op.tile)]
            if k is None:
                raise _kept_error(op, whole, self.axis, "storing")
            if len(op.offsets) != 2:
                raise err("a Vector store to a tensor that is not 2-D cannot be split between the "
                          "Vector cores", op, "store to a 2-D tensor")
            half = op.tile.type.shape[k]
            if 2 * half != whole.shape[k]:
                raise err(f"storing {_vname(op.tile)} ({whole.shape[0]}x{whole.shape[1]} "
                          f"{whole.dtype}) split by {_AXIS_WORD[k]}: each Vector core holds "
                          f"{half} of its {whole.shape[k]} {_AXIS_WORD[k]} (a packed mask of "
                          "split columns), not half", op,
                          "store it from a function with split=pl.TILE_NO_SPLIT")
            self.shift(op, k, half)

    def shift(self, op, axis: int, half: int) -> None:
        _shift(op, axis, self.sub, half)
        _mark(op, self.split, half)

    def tile_op(self, op) -> None:
        res = op.results[0] if op.results else None
        if res is None or not _is_vec(res.type):
            return
        axes, dsl = OPDEFS[op.name].axes, op.spec.dsl
        groups = operand_groups(op.spec, op.operands)
        tiles = [(n, v) for n, v in groups.items() if not isinstance(v, list) and self.tracked(v)]
        whole = res.type
        # the axis the result is split along: where its split operands' data goes
        to = None
        for name, v in tiles:
            k = self.on[id(v)]
            if k is None:
                continue
            if name in (axes.per_row if k == 1 else axes.per_col):
                raise err(f"pl.{dsl} reads one {_ONE[k]} of its '{name}' operand ({_vname(v)}) "
                          f"for every {_ONE[k]} of its result, but that operand is split by "
                          f"{_AXIS_WORD[k]} between the Vector cores: the second core would "
                          f"read another {_ONE[k]}", op,
                          f"pass a one-{_ONE[k]} '{name}' (each core then holds all of it), or "
                          f"use {_other_split(k)}")
            along = axes.along(k)
            if along is Along.SAME:
                rk = k
            elif along is Along.SWAPS:
                rk = 1 - k
            else:
                raise err(f"pl.{dsl} mixes data across the split axis: its result combines "
                          f"values from different {_AXIS_WORD[k]} of {_vname(v)}, but each Vector "
                          f"core holds only half of the {_AXIS_WORD[k]} (split {_MODE[k]}), so "
                          "each would compute it from its half", op,
                          f"use {_other_split(k)}")
            if to is not None and rk != to:
                raise err(f"pl.{dsl} combines a tile split by {_AXIS_WORD[to]} with one split by "
                          f"{_AXIS_WORD[rk]} between the Vector cores (a transpose of one): no "
                          "core holds matching parts of both", op,
                          "use @pl.incore(split=pl.TILE_NO_SPLIT) (the Vector side then holds "
                          "whole tiles)")
            to = rk
        if to is None and axes.along(self.axis) in (Along.MAKES, Along.COUNTS) \
                and whole.shape[self.axis] > 1:
            to = self.axis                     # made from its shape: each core makes its half
        if to is None:                         # made from whole tiles: whole
            self.set(res, None, whole, self.infer(op))
            return
        self.aligned(op, axes, tiles, to, whole)
        shape = op.attributes.get("shape")
        if shape is not None:
            half = _half(TileValueType(tuple(shape), whole.dtype, whole.space), to, op,
                         _vname(res)).shape
            op.attributes["shape"] = half
            step = axes.step[to]
            if axes.along(to) is Along.COUNTS and step:
                self.move_start(op, axes.start, step * half[to])
        self.set(res, to, whole, self.infer(op))

    def aligned(self, op, axes, tiles, to: int, whole: TileValueType) -> None:
        """Each tile operand of ``op``, whose result is split along ``to``, holds the part of
        its data the core's half of the result reads."""
        dsl = op.spec.dsl
        for name, v in tiles:
            k = self.on[id(v)]
            src = to if axes.along(to) is not Along.SWAPS else 1 - to
            n, want = self.whole[id(v)].shape[src], whole.shape[to]
            if name in (axes.per_row if to == 1 else axes.per_col):
                continue                       # read at one row / column: whole (checked)
            if k is None:
                if n == 1 or name in axes.mask:
                    continue                   # broadcast along it
                raise err(f"pl.{dsl} reads {_vname(v)} element by element with tiles split "
                          f"by {_AXIS_WORD[to]} between the Vector cores, but each core holds "
                          f"all of {_vname(v)} (it is made from whole tiles)", op,
                          "use @pl.incore(split=pl.TILE_NO_SPLIT)")
            if name not in axes.mask and n != want and not (axes.packs and to == 1):
                raise err(f"pl.{dsl}: '{name}' ({_vname(v)}) has {n} {_AXIS_WORD[src]} and the "
                          f"result {want}: split by {_AXIS_WORD[to]} between the Vector cores, "
                          f"each core's half of '{name}' would not line up with its half of the "
                          "result", op,
                          f"give the operands the result's {want} {_AXIS_WORD[src]}, or use "
                          f"{_other_split(to)}")

    def move_start(self, op, start: str, per_core: int) -> None:
        """Start ``op``'s sequence / diagonal (operand ``start``) ``sub * per_core`` on."""
        index = next(i for i, p in enumerate(op.spec.operands) if p.name == start)
        v = op.operands[index]
        c = op.insert_before(const(abs(per_core), op.loc))
        d = op.insert_before(Operation(ARITH_OP["*"], (self.sub, c.results[0]), [INDEX], {}, (),
                                       op.loc))
        sym = "+" if per_core > 0 else "-"
        t = scalar_result_type(sym, v.type, INDEX)
        new = op.insert_before(Operation(ARITH_OP[sym], (v, d.results[0]), [t], {}, (), op.loc))
        ops = list(op.operands)
        ops[index] = new.results[0]
        set_operands(op, ops)

    def infer(self, op) -> TileValueType:
        """``op``'s result type for its operands and attributes as they now are: its own
        typing rule (what its verifier checks)."""
        try:
            return infer_type(op, FunctionKind.AIV)
        except OpError as e:
            raise err(f"split {_MODE[self.axis]}: {e.about(op.spec.dsl, 'pl.' + op.spec.dsl)}", op,
                      e.fix or "use @pl.incore(split=pl.TILE_NO_SPLIT)") from None


def split_vector_function(fn: Operation, split, sub_anchor: Operation, sub_name: str) -> None:
    """Slice the AIV function ``fn`` for ``split``; ``pl.get_subblockid()`` is inserted
    after ``sub_anchor`` (the pipe initialisation), or first when it is None."""
    sub_op = GetSubblockIdOp.build(result_types=[INDEX], loc=fn.loc, result_names=[sub_name])
    if sub_anchor is not None:
        sub_anchor.insert_after(sub_op)
    else:
        fn.body.prepend(sub_op)
    _Splitter(fn, split, sub_op.results[0]).run()
    dce(fn)                    # the offsets a shift replaced
