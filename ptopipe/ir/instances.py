"""How many buffers the tile storage of an op needs: an abstract run of a ``pl.func`` op over
tile *instances*.  Every alias (a ``pl.copy`` result, a loop iter_arg or result, a branch
result) that may hold a tile made by op ``D`` counts how many times ``D`` may have run again
since that tile was made; loops run to a fixpoint of their head state, branches are joined.
A read of an alias whose count may be ``n`` needs ``D`` to have ``n + 1`` buffers, used in
turn by its successive executions; a count without bound is a CompileError at the read.
:mod:`.liveness` owns the live spans and calls this for the counts.
"""
from __future__ import annotations

from ..errors import CompileError
from .opdefs import CopyOp, ForOp, IfOp, TPop, YieldOp
from .types import TileValueType


def owns_storage(op) -> bool:
    """Does ``op`` write a tile result into storage of its own?  A tile op of the op table
    does; a TPOP binds to a ring slot, and a copy, a loop or a branch result aliases the
    storage of the value it carries."""
    return (getattr(op, "spec", None) is not None and len(op.results) == 1
            and isinstance(op.results[0].type, TileValueType) and not op.is_a(TPop))


def storage_op(v):
    """The op whose storage value ``v`` is the direct result of, else None."""
    op = getattr(v, "op", None)
    return op if op is not None and owns_storage(op) else None


_UNBOUNDED = 8                                   # a count this high has no bound


def statement_loc(op):
    """The location of the DSL statement ``op`` belongs to: an unnamed result read once,
    by an op of the same block on the same line, is a nested expression of that op's
    statement (followed to its root)."""
    loc = op.loc
    while len(op.results) == 1:
        r = op.results[0]
        if r.name or len(r.uses) != 1:
            break
        user = r.uses[0].owner
        if user.parent is not op.parent or user.loc is None or loc is None \
                or (user.loc.file, user.loc.line) != (loc.file, loc.line):
            break
        op, loc = user, user.loc
    return loc


def _dsl_name(name) -> str:
    """The DSL variable of an SSA name (``keep_2`` -> ``keep``)."""
    if not name:
        return "the value"
    return name.rstrip("0123456789").rstrip("_") or name


class Instances:
    """The abstract run behind ``copies``: ``state[v] = {D: n}`` when the alias ``v`` (a copy,
    an iter_arg, a loop or branch result) may hold a tile made by storage op ``D`` which may
    have run ``n`` times since (saturating at _UNBOUNDED); an op's own result holds its
    newest tile (``{D: 0}``, not stored).  Defining an alias replaces what it held (SSA); a
    loop runs to a fixpoint of its head state, the join of the entry and the back edge;
    ``need[D]`` is the largest count a read sees.  Aliases past their last read are dropped
    between top-level ops (``ends``), so the state stays as small as what is live."""

    def __init__(self, storages: dict, ends: dict):
        self.storages = storages
        self.ends = ends
        self.need: dict = {}
        self.inner: dict = {}          # pl.for op -> the values defined in its body
        self.op_at = None              # the op being run (for errors)

    def top(self, block, positions: dict) -> None:
        state = {}
        ends = self.ends
        for op in block:
            state = self.op(op, state)
            p = positions.get(op)
            if p is not None and state:
                for v in [v for v in state if ends.get(v, -1) <= p]:
                    del state[v]

    def body(self, block, state: dict) -> dict:
        for op in block:
            if op.__class__ is not YieldOp:
                state = self.op(op, state)
        return state

    def held(self, state: dict, v) -> dict:
        h = state.get(v)
        if h is not None:
            return h
        d = storage_op(v)
        return {d: 0} if d is not None and d in self.storages else {}

    def define(self, dst: dict, target, src: dict, value) -> None:
        """SSA definition of the alias ``target``: it holds what ``value`` holds in ``src``."""
        h = self.held(src, value) if value is not None else {}
        if h:
            dst[target] = dict(h)
        else:
            dst.pop(target, None)

    def op(self, op, state: dict) -> dict:
        self.op_at = op
        cls = op.__class__
        if cls is ForOp:
            for v in (op.start, op.stop, op.step):
                self.read(v, state)
            body = op.body
            iters = body.args[1:]
            entry = _copy(state)
            for a, src in zip(iters, op.inits):
                self.define(entry, a, state, src)
            inner = self.inner.get(op)
            if inner is None:
                inner = self.inner[op] = _defined_in(body)
            head = entry
            while True:
                end = self.body(body, _copy(head))
                ys = body.last.operands
                self.op_at = op
                back = _copy(end)
                for a, y in zip(iters, ys):
                    self.define(back, a, end, y)
                for v in inner:             # the body's own values end with the iteration
                    back.pop(v, None)
                nxt = _join(entry, back)
                if nxt == head:
                    break
                head = nxt
            out = _copy(head)
            for r, a in zip(op.results, iters):
                self.define(out, r, head, a)
            for a in iters:
                out.pop(a, None)
            return out
        if cls is IfOp:
            self.read(op.cond, state)
            outs = []
            for block in (op.then_block, op.else_block):
                out = self.body(block, _copy(state))
                for r, v in zip(op.results, block.last.operands):
                    self.define(out, r, out, v)
                outs.append(out)
            return _join(outs[0], outs[1])
        if cls is CopyOp:
            self.define(state, op.results[0], state, op.operands[0])
            return state
        for v in op.operands:
            self.read(v, state)
        if op in self.storages:
            _run(state, op)
        return state

    def read(self, v, state: dict) -> None:
        h = state.get(v)
        if not h:
            return
        for d, n in h.items():
            if n:
                if n >= _UNBOUNDED:
                    st = self.storages[d]
                    raise CompileError(
                        f"'{_dsl_name(v.name)}' may hold the tile made at {st.loc} any number of "
                        "executions ago, and that statement has run again since: its buffer is "
                        "reused, so the value read here may be gone",
                        where=str(statement_loc(self.op_at)) if self.op_at.loc else None,
                        fix="copy the tile you keep into a tile of its own when you keep it (for a Vec "
                            "tile: kept = pl.move(t, space=pl.Vec)), or read it before the statement "
                            "runs again")
                if n > self.need.get(d, 0):
                    self.need[d] = n


def _run(state: dict, key) -> None:
    """Storage ``key``'s statement runs: every alias holding a tile it made before now holds
    one that is one run older (its own result holds the new one)."""
    for h in state.values():
        n = h.get(key)
        if n is not None and n < _UNBOUNDED:
            h[key] = n + 1


def _defined_in(block) -> set:
    """The values a loop body defines (op results and the block arguments of nested
    regions): they end with the iteration."""
    out = set()
    for op in block:
        for o in op.walk():
            out.update(o.results)
            for r in o.regions:
                for b in r.blocks:
                    out.update(b.args)
    return out


def _copy(state: dict) -> dict:
    return {v: dict(h) for v, h in state.items()}


def _join(a: dict, b: dict) -> dict:
    out = _copy(a)
    for v, h in b.items():
        o = out.setdefault(v, {})
        for d, n in h.items():
            if n > o.get(d, -1):
                o[d] = n
    return out
