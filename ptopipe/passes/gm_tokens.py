"""ExpandMixedKernel, GM synchronisation tokens (issue 11, pass 1): a GM tensor written by
one side of a mixed function and read (or written again) by the other is ordered through
the pipe.

After each such ``pl.store`` (for two writes: after the earlier one) the pass inserts a *token*: a boundary ``pl.move`` of the
stored tile to the other side (Acc -> Vec: C2V, Vec -> Mat: V2C).  ExpandMixedKernel turns
it into a TPUSH on the writer, right after the store, and a TPOP on the reader at the same
point of the shared program order, before the read; the popped tile is not used, so
InsertTfree frees it at once.  The simulator orders the writer's TSTORE before its TPUSH
(both on the writer core, the push after the store in program order) and the TPOP before
the reader's TLOAD, so the race checker sees the write happen-before the read.  The token
moves the stored tile through a ring slot (SLOT_SIZE covers it): the data itself still goes
through GM.

Errors (CompileError at the DSL line): a read that comes before the other side's write in
program order (in a loop body: the read of one iteration would race with the write of the
same iteration, no push can order a read before a later write); a write whose stored tile
cannot cross (the Cube stores from Acc only can be pushed; the Vector from Vec).
"""
from __future__ import annotations

from ..ir.core import Operation
from ..ir.types import MemorySpace, TileValueType
from ._rewrite import err, fresh, names_in, side_of_type

#: the stored tile's space -> the space its token moves to (a boundary move)
TOKEN_TARGET = {MemorySpace.Acc: MemorySpace.Vec, MemorySpace.Vec: MemorySpace.Mat}


def _accesses(fn: Operation):
    writes, reads = {}, []
    order = {}
    for i, op in enumerate(fn.walk()):
        order[op] = i
        if op.name == "pl.store":
            writes.setdefault(op.operands[-1], []).append((side_of_type(op.operands[0].type), op))
        elif op.name == "pl.load":
            reads.append((op.operands[0], side_of_type(op.results[0].type), op))
    return writes, reads, order


def insert_gm_tokens(fn: Operation) -> list:
    """Insert a token move after every store whose tensor the other side reads later;
    returns the token moves (in program order)."""
    writes, reads, order = _accesses(fn)
    need = []
    for t, side, rd in reads:
        for wside, w in writes.get(t, ()):
            if wside == side:
                continue
            if order[w] > order[rd]:
                raise err(f"GM tensor '{t.name}' is read by the {side} here before the {wside} "
                          f"writes it (pl.store at {w.loc}): a synchronisation token pushed after "
                          "the write cannot order a read that comes first in program order (in a "
                          "loop, the read would race with the same iteration's write)", rd,
                          "read the tensor after the other side's pl.store, or pass the tile "
                          "across with pl.move (Acc -> Vec, Vec -> Mat) instead of a GM round trip")
            if w not in need:
                need.append(w)
    for ws in writes.values():              # both sides write it: the earlier write first
        for wside, w in ws:
            if w not in need and any(s != wside and order[o] > order[w] for s, o in ws):
                need.append(w)
    names = names_in(fn) if need else set()
    tokens = []
    for w in sorted(need, key=order.__getitem__):
        src = w.operands[0].type
        target = TOKEN_TARGET.get(src.space)
        if target is None:
            raise err(f"GM tensor '{w.operands[-1].name}' is written here from a {src.space.name} "
                      "tile and read by the other side: only an Acc tile (Cube) or a Vec tile "
                      "(Vector) can carry the synchronisation token across", w,
                      "store from an Acc tile on the Cube side")
        ttype = TileValueType(src.shape, src.dtype, target)
        tok = Operation("pl.move", (w.operands[0],), [ttype],
                        {"space": target, "dtype": None, "layout": None}, (), w.loc,
                        [fresh(names, f"{w.operands[-1].name or 'gm'}_token")])
        w.insert_after(tok)
        tokens.append(tok)
    return tokens

