"""Small op-IR rewriting helpers shared by the passes of this package: sides of values and
ops (Cube / Vector, by tile memory space), creating the few ops the passes emit, dropping
loop-carried / branch values of a ``pl.for`` / ``pl.if``, dead-code elimination of pure
scalar ops and of empty loops / branches, and fresh value names.
"""
from __future__ import annotations

from ..errors import CompileError
from ..ir.core import Operation, Use
from ..ir.opdefs import BufferAttrOp, ConstOp, CopyOp, ForOp, GetSubblockIdOp, IfOp, MoveOp, YieldOp
from ..ir.ops import BOUNDARY_MOVES
from ..ir.types import INDEX, NONE, MemorySpace, TileValueType

CUBE, VECTOR = "Cube", "Vector"

#: ops without side effects: erased when their results are unused
PURE = (ConstOp, CopyOp, BufferAttrOp, GetSubblockIdOp)


def side_of_type(t) -> str | None:
    """The core a value of type ``t`` lives on (tiles only; scalars / tensors / buffers are
    shared, None)."""
    if t.__class__ is TileValueType:
        return VECTOR if t.space is MemorySpace.Vec else CUBE
    return None


def is_boundary(op: Operation) -> bool:
    """A ``pl.move`` whose source and target tiles are on different cores."""
    if not op.is_a(MoveOp):
        return False
    src, dst = op.tile.type, op.result.type
    return (getattr(src, "space", None), getattr(dst, "space", None)) in BOUNDARY_MOVES


def boundary_direction(op: Operation):
    return BOUNDARY_MOVES[(op.tile.type.space, op.result.type.space)]


def op_sides(op: Operation) -> set:
    """The cores whose tiles ``op`` reads or writes (its own operands and results only)."""
    out = set()
    for v in op.operands:
        s = side_of_type(v.type)
        if s:
            out.add(s)
    for v in op.results:
        s = side_of_type(v.type)
        if s:
            out.add(s)
    return out


def err(msg: str, op, fix: str | None = None) -> CompileError:
    loc = getattr(op, "loc", None)
    return CompileError(msg, where=str(loc) if loc else None, fix=fix)


def const(value, loc=None, type_=None) -> Operation:
    t = type_ if type_ is not None else (NONE if value is None else INDEX)
    return ConstOp.build(value=value, result_types=[t], loc=loc)


def set_operands(op: Operation, values) -> None:
    """Replace ``op``'s whole operand list (keeping the use lists right)."""
    op.drop_operand_uses()
    op.operands = list(values)
    for i, v in enumerate(op.operands):
        v.uses.append(Use(op, i))


def strip_yields(op: Operation, drop: set) -> None:
    """First half of dropping the loop-carried values / branch results at indices ``drop``
    of a ``pl.for`` / ``pl.if``: its yields stop yielding them and a loop stops taking their
    inits (so the values' defining ops can be erased)."""
    keep = [i for i in range(len(op.results)) if i not in drop]
    if op.is_a(ForOp):
        inits = op.inits
        set_operands(op, [op.start, op.stop, op.step] + [inits[i] for i in keep])
    for r in op.regions:
        for b in r.blocks:
            y = b.last
            set_operands(y, [y.operands[i] for i in keep])


def remove_carried(op: Operation, drop: set) -> None:
    """Second half: remove the results (and, for a loop, the block arguments) at ``drop``;
    they must be unused by now."""
    keep = [i for i in range(len(op.results)) if i not in drop]
    if op.is_a(ForOp):
        body = op.body
        for i in drop:
            if body.args[1 + i].uses:
                raise err(f"loop-carried value %{body.args[1 + i].name or i} is still used", op)
        body.args = [body.args[0]] + [body.args[1 + i] for i in keep]
        for k, a in enumerate(body.args):
            a.index = k
    for i in drop:
        if op.results[i].uses:
            raise err(f"result %{op.results[i].name or i} of {op.name} is still used", op)
    op.results = [op.results[i] for i in keep]
    for k, r in enumerate(op.results):
        r.index = k


def drop_unused_args(block, keep=()) -> list:
    """Remove the unused arguments of ``block`` (not those in ``keep``); returns the
    remaining arguments' original indices."""
    kept = [i for i, a in enumerate(block.args) if a.uses or a in keep]
    block.args = [block.args[i] for i in kept]
    for k, a in enumerate(block.args):
        a.index = k
    return kept


def _region_is_empty(op: Operation) -> bool:
    return all(b.first is b.last and b.last is not None and b.last.is_a(YieldOp)
               and not b.last.operands for r in op.regions for b in r.blocks)


def dce(root: Operation) -> None:
    """Erase pure ops whose results are unused and ``pl.for`` / ``pl.if`` ops without
    results whose bodies are empty, until nothing changes."""
    changed = True
    while changed:
        changed = False
        for op in reversed(list(root.walk())):
            if op is root or op.parent is None:
                continue
            if any(r.uses for r in op.results):
                continue
            if op.is_a(*PURE) or op.name.startswith("arith.") or (
                    op.is_a(ForOp, IfOp) and not op.results and _region_is_empty(op)):
                op.erase()
                changed = True


def names_in(root: Operation) -> set:
    out = set()
    for o in root.walk():
        out.update(r.name for r in o.results if r.name)
        for r in o.regions:
            for b in r.blocks:
                out.update(a.name for a in b.args if a.name)
    return out


def fresh(names: set, base: str) -> str:
    name, k = base, 1
    while name in names:
        name = f"{base}_{k}"
        k += 1
    names.add(name)
    return name
