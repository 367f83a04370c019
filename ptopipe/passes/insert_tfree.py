"""InsertTfree (issue 11, pass 2; seed 003 point 2, last item): each consumer TFREE right
after the last use of the tile its TPOP popped, never earlier.

Requires: ``"pipes-declared"`` (ExpandMixedKernel's output, or hand-written kernels).
Produces: ``"tfree-inserted"``.

For every ``pl.tpop`` of a ring on which the function has no ``pl.tfree`` yet (a
hand-written kernel that frees its slots is left alone) the popped value's *aliases* are
followed: ``pl.copy`` results, a loop's block argument and result when it is a loop init,
the result of a ``pl.if`` that yields it.  The TFREE goes into the TPOP's block, right after
the last op of that block that uses an alias (itself or inside its regions); when that op
is the block's terminator (the alias is yielded) the TFREE goes right before it.  TFREEs of
one ring in one block keep the TPOPs' order (a TFREE releases the oldest held slot).  A
popped tile still used after a later TPOP of the same ring inside a loop / branch (whose
TFREE runs there, first) is copied right after its TPOP (a Vec -> Vec ``pl.move``), so its
own slot is freed at once and the copy is held instead.

Errors: a popped tile that is not in Vec and is held across a later TPOP of its ring inside
a loop / branch (it cannot be copied in its space); a popped tile that outlives its block (yielded to the next loop iteration or out of
the loop / branch that popped it): one TFREE per TPOP on every path cannot be placed.
"""
from __future__ import annotations

from ..ir.core import Operation
from ..ir.nodes import FunctionKind
from ..ir.types import MemorySpace
from ._rewrite import const, err

NAME = "insert-tfree"
REQUIRES = ("pipes-declared",)
PRODUCES = ("tfree-inserted",)


def aliases(v) -> set:
    """``v`` and every value that may hold the same tile (see the module doc)."""
    seen, work = {v}, [v]
    while work:
        x = work.pop()
        for u in x.uses:
            o = u.owner
            new = []
            if o.name == "pl.copy":
                new = [o.results[0]]
            elif o.name == "pl.for" and u.index >= 3:
                k = u.index - 3
                new = [o.regions[0].blocks[0].args[1 + k], o.results[k]]
            elif o.name == "pl.yield":
                p = o.parent_op
                if p is not None and p.name == "pl.if":
                    new = [p.results[u.index]]
                elif p is not None and p.name == "pl.for":
                    new = [p.regions[0].blocks[0].args[1 + u.index], p.results[u.index]]
            for n in new:
                if n not in seen:
                    seen.add(n)
                    work.append(n)
    return seen


def _ancestor_in(op: Operation, block):
    """The op of ``block`` that is ``op`` or contains it, or None."""
    while op is not None and op.parent is not block:
        op = op.parent_op
    return op


def _position(block) -> dict:
    return {o: i for i, o in enumerate(block)}


def _pop_inside(pop: Operation, last: Operation, ring):
    """A TPOP of ``ring`` inside a region of an op between ``pop`` and ``last`` (its last
    use): that TPOP's TFREE runs inside the region, while ``pop``'s tile is still held."""
    op = pop.next
    while op is not None:
        if op.regions:
            for o in op.walk():
                if o is not op and o.name == "pl.tpop" and o.operands[0] is ring:
                    return o
        if op is last:
            return None
        op = op.next
    return None


def _copy_out(pop: Operation, inner: Operation) -> Operation:
    """A ring frees its slots oldest first: the TFREE of ``inner`` (popped later, freed in
    its region) would release ``pop``'s slot while its tile is still used.  A popped Vec
    tile is copied right after the TPOP (a Vec -> Vec TMOV) and every use reads the copy,
    so ``pop``'s TFREE follows the copy; returns the copy.  Any other tile is an error."""
    v = pop.results[0]
    name = (v.name or "?").split("_")[0] if v.name and v.name[-1].isdigit() else (v.name or "?")
    if v.type.space is not MemorySpace.Vec:
        raise err(f"the tile popped here ('{name}') is still used after a later TPOP of the same "
                  f"ring (at {inner.loc}) is freed inside its loop / branch, and a ring frees its "
                  "slots oldest first: that TFREE would release this tile's slot", pop,
                  f"move '{name}' to another tile right after it crosses (e.g. pl.move(..., "
                  "space=pl.Left)) and use that, or pop the inner tiles after its last use")
    uses = list(v.uses)
    copy = Operation("pl.move", (v,), [v.type], {"space": MemorySpace.Vec, "dtype": None,
                                                "layout": None}, (), pop.loc,
                     [f"{v.name or 'popped'}_held"])
    for u in uses:
        u.owner.set_operand(u.index, copy.results[0])
    pop.insert_after(copy)
    return copy


def place_tfree(pop: Operation, after: dict) -> Operation:
    """Insert the TFREE of ``pop``; ``after`` maps (block, ring) to the last TFREE placed there."""
    block = pop.parent
    pos = _position(block)
    last = pop
    for a in aliases(pop.results[0]):
        for u in a.uses:
            anc = _ancestor_in(u.owner, block)
            if anc is None:
                raise err(f"the tile popped here (%{pop.results[0].name or '?'}) is used outside "
                          "the block that popped it: its TFREE cannot be placed once per TPOP",
                          pop, "use the popped tile (or a copy made with an op) inside the loop / "
                               "branch that pops it")
            if anc.name == "pl.yield":
                raise err(f"the tile popped here (%{pop.results[0].name or '?'}) is yielded out "
                          "of its loop body / branch: its TFREE cannot be placed once per TPOP",
                          pop, "pop it again in each iteration, or carry a copy made by an op that "
                               "writes a new tile (e.g. pl.muls(tile, 1.0))")
            if pos[anc] > pos[last]:
                last = anc
    ring = pop.operands[0]
    inner = _pop_inside(pop, last, ring)
    if inner is not None:
        last = _copy_out(pop, inner)
    prev = after.get((block, ring))
    if prev is not None and pos.get(prev, -1) > pos[last]:
        last = prev
    z = const(None, pop.loc)
    free = Operation("pl.tfree", (ring, z.results[0]), [],
                     {"direction": pop.attributes.get("direction"), "split": None}, (), pop.loc)
    if last is block.last and last.name in ("pl.yield", "pl.return"):
        last.insert_before(z)
        last.insert_before(free)
    else:
        last.insert_after(z)
        z.insert_after(free)
    after[(block, ring)] = free
    return free


def run(program: Operation, ctx=None) -> Operation:
    for fn in program.regions[0].blocks[0]:
        if fn.attributes.get("kind") not in (FunctionKind.AIC, FunctionKind.AIV):
            continue
        ops = list(fn.walk())
        freed = {o.operands[0] for o in ops if o.name == "pl.tfree"}
        after = {}
        for op in ops:
            if op.name == "pl.tpop" and op.operands[0] not in freed:
                place_tfree(op, after)
    return program
