"""Liveness of tile storage in one function of the op IR (a ``pl.func`` op): for every op
that writes its tile result into storage of its own (a tile op; a TPOP binds to a ring
slot instead) and for the scratch tile of an op that takes one (``pl.row_sum``), the span
of program positions during which that storage may still be read, and how many copies of
it a loop needs.

Positions number the ops in program order (pre-order: a ``pl.for`` / ``pl.if``, then its
regions, each ending with its ``pl.yield``).  Every op reads its operands at its own
position, so whether a value is named (a DSL variable) or not (a nested expression's
temporary) plays no part in the spans.  A storage is live from its defining op to the last
read of any value that may refer to it.  Values refer to storage through SSA aliases: a
loop's iter_arg and result refer to what its init and its yield refer to; a branch result
to what either branch yields; a ``pl.copy`` result to its source.  A read inside a loop of
storage defined before the loop keeps it live to the loop's end (the next iteration reads
it again); storage defined in a loop and carried to the next iteration is live through the
whole loop.

How many buffers an op needs (a kept tile read after its op ran again) comes from the
abstract run over tile instances in :mod:`.instances`.
"""
from __future__ import annotations

from dataclasses import dataclass

from .instances import Instances, owns_storage, storage_op
from .opdefs import CopyOp, ForOp, IfOp
from .ops import SCRATCH_OPS, scratch_type
from .types import TileValueType


@dataclass(eq=False)
class Storage:
    """The storage one op writes its tile result (or its scratch tile) into."""
    key: object                # the op, or ("scratch", op) for its scratch tile
    type: TileValueType
    start: int                 # position of the defining op
    end: int                   # last position it may be read (>= start)
    loop: object = None        # the innermost pl.for around the definition
    loops: tuple = ()          # every pl.for around the definition, outermost first
    copies: int = 1
    loc: object = None


def has_scratch(op) -> bool:
    """Does ``op`` take a scratch tile (pto-isa's ``tmp`` operand, the size of its source)?"""
    spec = getattr(op, "spec", None)
    return (spec is not None and spec.name in SCRATCH_OPS and bool(op.operands)
            and isinstance(op.operands[0].type, TileValueType))


class _Liveness:
    def __init__(self):
        self.pos = 0
        self.storages: dict = {}      # key -> Storage
        self.refs: dict = {}          # Value -> frozenset of storage keys
        self.flows: list = []         # (alias value, the values flowing into it)
        self.loops: list = []         # enclosing pl.for ops (innermost last)
        self.span: dict = {}          # pl.for op -> (first, last) position
        self.uses: list = []          # (value, position, loops enclosing the read)
        self.defined_at: dict = {}    # Value -> position of its definition
        self.top_pos: dict = {}       # top-level op -> its last position

    def block(self, block, top: bool = False) -> None:
        for op in block:
            self.op(op)
            if top:
                self.top_pos[op] = self.pos - 1

    def op(self, op) -> None:
        p = self.pos
        self.pos += 1
        loops = tuple(self.loops)
        for v in op.operands:
            self.uses.append((v, p, loops))
        cls = op.__class__
        if cls is ForOp:
            body = op.body
            self.span[op] = None                # (pre-order: an outer loop before its inner ones)
            for a in body.args:
                self.defined_at[a] = p
            self.loops.append(op)
            self.block(body)
            last = self.pos - 1
            self.loops.pop()
            self.span[op] = (p, max(p, last))
            ys = body.last.operands
            for a, init, y, r in zip(body.args[1:], op.inits, ys, op.results):
                self.flows.append((a, (init, y)))
                self.flows.append((r, (init, y)))
                self.defined_at[r] = last
            return
        if cls is IfOp:
            self.block(op.then_block)
            self.block(op.else_block)
            for r, a, b in zip(op.results, op.then_block.last.operands, op.else_block.last.operands):
                self.flows.append((r, (a, b)))
                self.defined_at[r] = self.pos - 1
            return
        for r in op.results:
            self.defined_at[r] = p
        if cls is CopyOp:
            self.flows.append((op.results[0], (op.operands[0],)))
            return
        if owns_storage(op):
            loop = loops[-1] if loops else None
            self.storages[op] = Storage(op, op.results[0].type, p, p, loop, loops, loc=op.loc)
            self.refs[op.results[0]] = frozenset((op,))
            if has_scratch(op):
                key = ("scratch", op)
                self.storages[key] = Storage(key, scratch_type(op.spec.name, op.operands[0].type), p, p, loop,
                                             loops, loc=op.loc)


def _aliases(refs: dict, flows: list) -> None:
    """Loop iter_args / results, branch results and copies refer to what flows into them
    (to a fixpoint: a yield may refer back to its own iter_arg)."""
    changed = True
    while changed:
        changed = False
        for target, srcs in flows:
            old = refs.get(target, frozenset())
            new = old
            for v in srcs:
                new = new | refs.get(v, frozenset())
            if new != old:
                refs[target] = new
                changed = True


def analyse(func) -> dict:
    """``{storage key: Storage}`` with live spans and copies for one ``pl.func`` op."""
    lv = _Liveness()
    lv.block(func.body, top=True)
    refs, storages, span = lv.refs, lv.storages, lv.span
    _aliases(refs, lv.flows)

    def read_end(pos: int, defined: int, enclosing) -> int:
        """A read at ``pos`` of something defined at ``defined``: read in a loop, defined
        before it, it is read again until the loop's end."""
        for loop in enclosing:
            first, last = span[loop]
            if defined < first:
                pos = max(pos, last)
        return pos

    ends = {}                                   # value -> last position it may be read
    defined_at = lv.defined_at
    for v, pos, enclosing in lv.uses:
        e = read_end(pos, defined_at.get(v, -1), enclosing) if enclosing else pos
        if e > ends.get(v, -1):
            ends[v] = e
    inst = Instances(storages, ends)
    inst.top(func.body, lv.top_pos)
    for d, n in inst.need.items():
        storages[d].copies = n + 1
    for v, pos, enclosing in lv.uses:
        for key in refs.get(v, ()):
            st = storages.get(key)
            if st is not None:
                st.end = max(st.end, read_end(pos, st.start, enclosing))
    for loop, (first, last) in span.items():    # carried: live through the loop (and after it)
        for v in tuple(loop.body.last.operands) + tuple(loop.inits):
            for key in refs.get(v, ()):
                st = storages.get(key)
                if st is not None and first <= st.start <= last:
                    st.start, st.end = first, max(st.end, last)
                elif st is not None:            # an init: read by the loop's iter_arg
                    st.end = max(st.end, last)
    return storages


__all__ = ["Storage", "analyse", "has_scratch", "owns_storage", "storage_op"]
