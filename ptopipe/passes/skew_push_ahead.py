"""SkewPushAhead: let a kernel that pushes into one ring and pops the answer from the other
in the same loop iteration run LAG iterations ahead with its pushes, as the hand-written
S4 / S6 kernels do.  Without it each iteration waits for the peer's round trip (push i,
then pop i), so the two cores never overlap.

It runs after InsertTfree (the TFREEs move with their pops; properties:
``REQUIRED`` / ``PRODUCED`` / ``INVALIDATED`` (docs/passes/README.md)).

A ``pl.for`` of an AIC / AIV function is skewed when its body (no loop-carried values,
start 0, step 1) is a *push part* followed by a *pop part*: the push part is every op up to
the last ``pl.tpush`` and holds no ``pl.tpop`` and no GM store, and loads no GM tensor the
pop part or another kernel of the program stores (a read-after-write across iterations,
ordered by a GM token the pop part pops); the pop part holds no
``pl.tpush`` and uses, of the push part's values, only scalars (recomputed for its own
iteration).  The loop becomes::

    for i in pl.range(n + LAG):
        if i < n:          push part (iteration i)
        j = i - LAG
        if j >= 0:         pop part (iteration j)

LAG = min(2, SLOT_NUM - 1) of the pipe (SLOT_NUM per direction): the kernel is never more
than LAG tiles ahead, so neither ring can fill up while the peer waits for the other one
(no deadlock).  Loops of any other shape are left alone.
"""
from __future__ import annotations

from ..ir.core import Block, Operation, Region
from ..ir.vocab import FunctionKind
from ..ir.opdefs import (ARITH_OP, INITIALIZE_PIPE, ConstOp, ForOp, IfOp, LoadOp, StoreOp, TPop,
                         TPush, YieldOp)
from ..ir.types import BOOL, INDEX
from ._rewrite import const
from .properties import IRProperty
from .remarks import remarks_of

NAME = "skew-push-ahead"
REQUIRED = frozenset({IRProperty.MIXED_KERNELS_EXPANDED, IRProperty.TFREES_INSERTED})
PRODUCED = frozenset()
INVALIDATED = frozenset({IRProperty.PIPES_VERIFIED, IRProperty.MEMORY_ALLOCATED})
MAX_LAG = 2


def _const_value(v):
    op = getattr(v, "op", None)
    return op.value if op is not None and op.is_a(ConstOp) else None


def _at(op) -> str:
    loc = getattr(op, "loc", None)
    return f" at line {loc.line}" if loc is not None else ""


def _split(body: Block, peer_stores=frozenset()):
    """(push part, pop part) of a loop body, or the sentence saying why it has another
    shape.  ``peer_stores``: names of the GM tensors another kernel of the program stores."""
    ops = [o for o in body if not o.is_a(YieldOp)]
    last_push = max((k for k, o in enumerate(ops) if o.is_a(TPush)), default=None)
    if last_push is None:
        return "its body pushes nothing (directly)"
    push, pop = ops[:last_push + 1], ops[last_push + 1:]

    def first(part, cls):
        return next((x for o in part for x in o.walk() if x.is_a(cls)), None)
    for part, cls, what in ((push, TPop, "a pl.tpop before its last pl.tpush"),
                            (push, StoreOp, "a GM store before its last pl.tpush"),
                            (pop, TPush, "a pl.tpush nested in an op after its last pl.tpush")):
        bad = first(part, cls)
        if bad is not None:
            return f"it has {what}{_at(bad)}"
    if first(pop, TPop) is None:
        return "nothing is popped after its last pl.tpush (no round trip to overlap)"
    # a GM tensor the pop part stores and the push part loads: skewed, iteration i's load
    # would run before iteration i - LAG's store (a read-after-write across iterations)
    loaded = {x.tensor for o in push for x in o.walk() if x.is_a(LoadOp)}
    for o in pop:
        for x in o.walk():
            if x.is_a(StoreOp) and x.tensor in loaded:
                return (f"GM tensor {x.tensor.name} is stored after the pushes{_at(x)} and "
                        "loaded before them (a read-after-write across iterations)")
    # ... or the peer stores (ordered by a GM token popped in the pop part: skewed, the load
    # of iteration i would run before the token of iteration i - 1 arrives)
    for t in sorted(loaded, key=lambda t: t.name or ""):
        if t.name in peer_stores:
            return f"it loads GM tensor {t.name}, which the peer kernel stores"
    inside = {x for o in push for x in o.walk()}
    for o in pop:
        for x in o.walk():
            for v in x.operands:
                d = getattr(v, "op", None)
                if d in inside and not (d.is_a(ConstOp) or d.name.startswith("arith.")):
                    return (f"the ops after its pushes use {v.name or 'a tile'}, computed "
                            f"before them{_at(x)}")
    return push, pop


def _scalar_deps(pop, push) -> list:
    """The scalar ops of the push part whose values the pop part uses (in order)."""
    inside = {x: k for k, x in enumerate(push)}
    need, work = set(), [v for o in pop for x in o.walk() for v in x.operands]
    while work:
        d = getattr(work.pop(), "op", None)
        if d in inside and d not in need:
            need.add(d)
            work.extend(d.operands)
    return sorted(need, key=inside.get)


def _guarded(block: Block, cond, ops, vm: dict, loc) -> None:
    then = Block()
    for o in ops:
        then.append(o.clone(vm))
    then.append(YieldOp.build(values=[], loc=loc))
    els = Block()
    els.append(YieldOp.build(values=[], loc=loc))
    block.append(Operation(IfOp.name, (cond,), (), {}, (Region([then]), Region([els])), loc))


def skew(loop: Operation, lag: int, peer_stores=frozenset()) -> bool:
    """Skew ``loop`` by ``lag`` iterations; False (nothing changed) when it has another
    shape (:func:`skew_or_reason` says why)."""
    return skew_or_reason(loop, lag, peer_stores) is None


def skew_or_reason(loop: Operation, lag: int, peer_stores=frozenset()):
    """Skew ``loop``; None when done, else the sentence saying why it is left alone."""
    if loop.results or loop.inits:
        return "it has loop-carried values"
    if _const_value(loop.start) != 0:
        return "it does not start at 0"
    if _const_value(loop.step) != 1:
        return "its step is not 1"
    old = loop.body
    parts = _split(old, peer_stores)
    if isinstance(parts, str):
        return parts
    push, pop = parts
    loc, n = loop.loc, loop.stop
    lag_c = loop.insert_before(const(lag, loc)).results[0]
    stop = loop.insert_before(Operation(ARITH_OP["+"], (n, lag_c), [INDEX], {}, (), loc)).results[0]
    body = Block([INDEX], [old.args[0].name])
    i = body.args[0]
    lt = body.append(Operation(ARITH_OP["<"], (i, n), [BOOL], {}, (), loc)).results[0]
    _guarded(body, lt, push, {old.args[0]: i}, loc)
    lag_b = body.append(const(lag, loc)).results[0]
    j = body.append(Operation(ARITH_OP["-"], (i, lag_b), [INDEX], {}, (), loc,
                              [f"{old.args[0].name or 'i'}_lag"])).results[0]
    zero = body.append(const(0, loc)).results[0]
    ge = body.append(Operation(ARITH_OP[">="], (j, zero), [BOOL], {}, (), loc)).results[0]
    _guarded(body, ge, _scalar_deps(pop, push) + pop, {old.args[0]: j}, loc)
    body.append(YieldOp.build(values=[], loc=loc))
    new = Operation(ForOp.name, (loop.start, stop, loop.step), (), {}, (Region([body]),), loc)
    loop.insert_before(new)
    loop.erase()
    return None


def _lag(fn: Operation) -> int:
    for op in fn.body:
        if op.is_a(*INITIALIZE_PIPE):
            return min(MAX_LAG, (op.slot_num or 1) - 1)
    return 0


def _stores(fn: Operation) -> set:
    return {x.tensor.name for x in fn.walk() if x.is_a(StoreOp)}


def _crosses(loop) -> bool:
    """A candidate: a loop with pipe ops directly in its body."""
    return any(o.is_a(TPush, TPop) for o in loop.body)


def run(program: Operation, ctx=None) -> Operation:
    remarks = remarks_of(ctx)
    kernels = [fn for fn in program.body if fn.kind in (FunctionKind.AIC, FunctionKind.AIV)]
    for fn in kernels:
        peer_stores = set().union(*(_stores(g) for g in kernels if g is not fn))
        lag = _lag(fn)
        side = fn.kind.name
        if lag < 1:
            for op in fn.walk():
                if op.is_a(ForOp) and _crosses(op):
                    remarks.missed(NAME, op, f"{side} loop not skewed: its pipe has one slot, "
                                             "no room to push ahead")
            continue
        seen, changed = set(), True
        while changed:                 # a skewed loop is replaced: walk the new tree again
            changed = False
            for op in fn.walk():
                if op.is_a(ForOp) and op not in seen:
                    seen.add(op)
                    crosses, loc = _crosses(op), op.loc
                    why = skew_or_reason(op, lag, peer_stores)
                    if why is None:
                        remarks.applied(NAME, loc, f"{side} loop skewed: its pushes run {lag} "
                                                   "iteration(s) ahead of its pops")
                        changed = True
                        break
                    if crosses:
                        remarks.missed(NAME, loc, f"{side} loop not skewed: {why}")
    return program
