"""ExpandMixedKernel, GM synchronisation tokens: a GM tensor one side of
a mixed function writes and the other side reads or writes is ordered through the pipe.

A *token* is a boundary ``pl.move`` of a tile to the other side (Acc -> Vec: C2V; Vec ->
Mat: V2C), inserted right after a GM access.  ExpandMixedKernel turns it into a TPUSH on the
accessing core, after the access, and a TPOP on the other core at the same point of the
shared program order; the popped tile is not used, so InsertTfree frees it at once.  The
token moves a tile through a ring slot (SLOT_SIZE covers it): the data itself still goes
through GM.  Because both cores meet at the token's point of the program, every access of
the other core that comes later in program order is ordered after the access.

A token follows an access when the other side makes a conflicting access (not read/read)
to the same tensor *later*: later in program order, or in a later iteration of a loop
around both.  So a write is followed by one when the other side reads or writes the
tensor later (read-after-write, write-after-write) and a read by one when the other side
writes it later (write-after-read: a GM scratch tensor reused every iteration).  A store's
token carries the stored tile; a load's carries the loaded tile, which the push reads, so
the push comes after the load has finished.  The Cube's TPUSH takes an Acc tile only: a
Cube load (into Mat) is followed instead by a token after the first op of the same block
that makes an Acc tile from the loaded one (its ``pl.matmul``), which has read the load's
data by then.

Errors (CompileError at the DSL line): an access no token can follow - its tile cannot
cross, and no Acc tile is made from it before the other side's access.
"""
from __future__ import annotations

from ..ir.core import Operation
from ..ir.types import MemorySpace, TileValueType
from ..ir.opdefs import ForOp, LoadOp, MoveOp, StoreOp
from ._rewrite import err, fresh, names_in, side_of_type

#: the carried tile's space -> the space its token moves to (a boundary move)
TOKEN_TARGET = {MemorySpace.Acc: MemorySpace.Vec, MemorySpace.Vec: MemorySpace.Mat}


def _loops(op: Operation) -> set:
    out, p = set(), op.parent_op
    while p is not None:
        if p.is_a(ForOp):
            out.add(p)
        p = p.parent_op
    return out


def _accesses(fn: Operation) -> list:
    """(tensor, side, op, is_write, carried tile) per GM access, in program order."""
    out = []
    for op in fn.walk():
        if op.is_a(StoreOp):
            out.append((op.tensor, side_of_type(op.tile.type), op, True, op.tile))
        elif op.is_a(LoadOp):
            out.append((op.tensor, side_of_type(op.result.type), op, False, op.result))
    return out


def _later_conflicts(a, same_tensor, order, loops) -> list:
    """The accesses of the other side (among ``same_tensor``'s) that conflict with ``a`` and
    may run after it."""
    t, side, op, write, _ = a
    return [(op2, write2) for _t, side2, op2, write2, _ in same_tensor
            if side2 != side and (write or write2)
            and (order[op2] > order[op] or loops[op] & loops[op2])]


def _carrier(op: Operation, tile, before):
    """The op after which a token can follow the access ``op`` of ``tile``, and the tile it
    carries: ``op`` itself when ``tile`` can cross, else the first later op of the same
    block that makes a crossing tile from ``tile`` (data flow), and comes before the op
    ``before`` (None: anywhere in the block)."""
    if TOKEN_TARGET.get(tile.type.space) is not None:
        return op, tile
    made, nxt = {tile}, op.next
    while nxt is not None and not (before is not None and nxt.is_ancestor_of(before)):
        if any(v in made for v in nxt.operands):
            made.update(nxt.results)
            for r in nxt.results:
                if TOKEN_TARGET.get(getattr(r.type, "space", None)) is not None:
                    return nxt, r
        nxt = nxt.next
    return None


def insert_gm_tokens(fn: Operation) -> list:
    """Insert a token move after every GM access the other side's later conflicting access
    must wait for; returns the token moves (in program order)."""
    accesses = _accesses(fn)
    order = {a[2]: i for i, a in enumerate(accesses)}
    loops = {a[2]: _loops(a[2]) for a in accesses}
    by_tensor = {}
    for a in accesses:
        by_tensor.setdefault(a[0], []).append(a)
    need = {}
    for a in accesses:
        later = _later_conflicts(a, by_tensor[a[0]], order, loops)
        if not later:
            continue
        t, side, op, write, tile = a
        after = [c for c in later if order[c[0]] > order[op]]    # the token must come first
        other, other_writes = after[0] if after else later[0]
        at = _carrier(op, tile, other if after else None)
        if at is None:
            what = "written" if write else "read"
            raise err(f"GM tensor '{t.name}' is {what} here by the {side} from a "
                      f"{tile.type.space.name} tile and {'written' if other_writes else 'read'} "
                      f"later by the other side (pl.{'store' if other_writes else 'load'} at "
                      f"{other.loc}): only an Acc tile (Cube) or a Vec tile (Vector) can carry the "
                      "synchronisation token that orders the two, and none is made from this "
                      "one before that access", op,
                      "let the other side use a separate GM tensor, or pass the tile across "
                      "with pl.move (Acc -> Vec, Vec -> Mat) instead of a GM round trip")
        need.setdefault(at[0], (t, at[1]))       # one token per point is enough
    names = names_in(fn) if need else set()
    tokens = []
    for op, (t, tile) in need.items():
        ttype = TileValueType(tile.type.shape, tile.type.dtype, TOKEN_TARGET[tile.type.space])
        tok = MoveOp.build(tile=tile, space=ttype.space, dtype=None, layout=None,
                           result_types=[ttype], loc=op.loc,
                           result_names=[fresh(names, f"{t.name or 'gm'}_token")])
        op.insert_after(tok)
        tokens.append(tok)
    return tokens
