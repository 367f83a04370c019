"""The buffers the ``.pto`` writer gives the tile values a loop carries or a branch yields.

ptoas takes no tile-typed ``scf.for`` iter_args or ``scf.if`` results (its bufferization
rejects them): a tile carried from one iteration to the next, or out of a branch, lives in
one ``pto.alloc_tile`` buffer that each iteration / branch writes in place, and the op after
the loop reads it.  :func:`plan_buffers` decides this for one kernel function:

* each tile iter_arg of a ``pl.for`` gets a buffer: its block argument and the loop's result
  live there; the initial value is written there by its own op when nothing reads it
  after the loop starts, and the yielded value when nothing reads the block argument after
  the yielded value's op; else the writer moves the value in (``pto.tmov ... {ptopipe.carry}``
  before the loop / the ``scf.yield``);
* each tile result of a ``pl.if`` gets a buffer (the loop's, when the if makes a value the
  loop yields), written the same way by each branch.

The reader (:mod:`.pto_regions`) takes such a buffer back as an iter_arg / if result and a
``{ptopipe.carry}`` move as the value it moves, in the order the buffers are declared -
so the writer declares the buffers of one loop or one if together, in the op's order.
"""
from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

from ..ir.types import TileValueType
from ..ir.opdefs import CopyOp, CreateOp, ForOp, IfOp, LoadOp, StoreOp

_seq = itertools.count()


class Buf:
    """A tile buffer the plan introduces (the writer names it when it declares it)."""
    __slots__ = ("type", "hint", "seq")

    def __init__(self, type, hint):
        self.type, self.hint, self.seq = type, hint, next(_seq)


@dataclass
class BufferPlan:
    """``home``: value -> the Buf it lives in (a carried block argument or region result, or a
    value its op writes there); ``declare``: op -> Bufs declared right before it, in order;
    ``copies``: op -> ``(source, Buf)`` carry moves right before it (a source is a Value or a
    staging Buf)."""
    home: dict = field(default_factory=dict)
    declare: dict = field(default_factory=dict)
    copies: dict = field(default_factory=dict)
    planned: set = field(default_factory=set)


def _tile(v) -> bool:
    return isinstance(v.type, TileValueType)


def writes_result(op) -> bool:
    """Does the writer spell ``op`` as an op writing its tile result into an ``outs`` buffer
    it may be told (a tile op, a load, a named copy)?"""
    from .pto_syntax import PTO_OP
    if len(op.results) != 1 or not _tile(op.results[0]) or op.regions:
        return False
    return (op.is_a(LoadOp, CopyOp, CreateOp)        # create: the buffer alone
            or (op.name[3:] in PTO_OP and not op.is_a(StoreOp)))


def _top(op, block):
    """The op of ``block`` that is ``op`` or holds it (None: ``op`` is not inside ``block``)."""
    while op is not None and op.parent is not block:
        op = op.parent_op
    return op


def _used_after(v, block, pos, i) -> bool:
    """Does an op after position ``i`` of ``block`` (or nested in one) use ``v``?"""
    for u in v.uses:
        t = _top(u.owner, block)
        if t is not None and pos[t] > i:
            return True
    return False


def plan_buffers(func) -> BufferPlan:
    """The :class:`BufferPlan` of one ``pl.func`` op."""
    p = BufferPlan()
    _walk(func.regions[0].blocks[0], p)
    return p


def _walk(block, p) -> None:
    for op in block:
        if op.is_a(ForOp):
            _plan_for(op, block, p)
        elif op.is_a(IfOp) and op not in p.planned:
            _plan_if(op, {}, p)
        for r in op.regions:
            for b in r.blocks:
                _walk(b, p)


def _plan_for(loop, block, p) -> None:
    body = loop.regions[0].blocks[0]
    args, inits = body.args[1:], loop.operands[3:]
    ks = [k for k, a in enumerate(args) if _tile(a)]
    if not ks:
        return
    bufs = {k: Buf(args[k].type, args[k].name or "carried") for k in ks}
    for k in ks:
        p.home[args[k]] = p.home[loop.results[k]] = bufs[k]
    pos = {op: i for i, op in enumerate(block)}
    count = Counter(inits[k] for k in ks)
    first = loop
    for k in ks:
        x = inits[k]
        d = getattr(x, "op", None)
        if (d is not None and d.parent is block and writes_result(d) and x not in p.home
                and count[x] == 1 and _only_before(x, loop, block, pos)):
            p.home[x] = bufs[k]
            first = d if pos[d] < pos[first] else first
        else:
            p.copies.setdefault(loop, []).append((x, bufs[k]))
    p.declare.setdefault(first, []).extend(bufs[k] for k in ks)
    _stage(loop, p, block)
    _adopt(body, [(body.last.operands[k], bufs[k], args[k]) for k in ks], p)


def _only_before(x, loop, block, pos) -> bool:
    """``x`` is read only before ``loop`` and as its initial value (its buffer is the loop's)."""
    for u in x.uses:
        if u.owner is loop:
            continue
        t = _top(u.owner, block)
        if t is None or pos[t] >= pos[loop]:
            return False
    return True


def _plan_if(iff, targets: dict, p) -> bool:
    """Plan ``iff``'s tile results into ``targets`` (result index -> (Buf, the value it holds
    until the if writes it)); False (and fresh buffers) when taking them would put the
    results out of declaration order."""
    p.planned.add(iff)
    js = [j for j, r in enumerate(iff.results) if _tile(r)]
    if not js:
        return True
    fresh = [j for j in js if j not in targets]
    taken = sorted((j for j in js if j in targets), key=lambda j: targets[j][0].seq)
    ok = taken + fresh == js
    if not ok:
        targets, fresh = {}, js
    where = {j: targets[j] if j in targets else (Buf(iff.results[j].type, iff.results[j].name or "sel"), None)
             for j in js}
    for j in js:
        p.home[iff.results[j]] = where[j][0]
    first = iff
    pos = {op: i for i, op in enumerate(iff.parent)}
    for j in fresh:             # a value a branch passes through lives in the result's buffer
        x = _passed_through(iff, j, p, pos)
        if x is not None:
            p.home[x] = where[j][0]
            where[j] = (where[j][0], x)
            first = x.op if pos[x.op] < pos[first] else first
    if fresh:
        p.declare.setdefault(first, []).extend(where[j][0] for j in fresh)
    for region in iff.regions:
        b = region.blocks[0]
        _adopt(b, [(b.last.operands[j], where[j][0], where[j][1]) for j in js], p)
    return ok


def _passed_through(iff, j, p, pos):
    """The tile that a branch of ``iff`` yields unchanged as result ``j`` (``if c: acc =
    pl.matmul_acc(acc, ...)``) when its own op, just before, may write it into the result's
    buffer - it is read nowhere after the ``if`` and yielded by no other result - else None.
    A move into the result's buffer would copy it: a ``pto.tmov`` from Acc to Acc, or Left to
    Left, is no instruction ptoas or pto-isa has."""
    block = iff.parent
    xs = {r.blocks[0].last.operands[j] for r in iff.regions}
    outer = [x for x in xs if getattr(x, "op", None) is not None and x.op.parent is block]
    if len(outer) != 1:
        return None
    x = outer[0]
    if x in p.home or not writes_result(x.op):
        return None
    yields = {r.blocks[0].last for r in iff.regions}
    for u in x.uses:
        t = _top(u.owner, block)
        if t is None or pos[t] > pos[iff]:
            return None
        if u.owner in yields and any(k != j for k, v in enumerate(u.owner.operands) if v is x):
            return None             # (yielded as another result too)
    return x


def _adopt(block, pairs, p) -> None:
    """Each ``(value, Buf, prev)`` of ``block``'s yield: ``value`` must be in ``Buf`` when the
    block ends, ``Buf`` holding ``prev`` (or nothing) until then.  The value's own op writes
    ``Buf`` when it is an op of ``block`` after which ``prev`` is not read; else a carry move
    before the yield."""
    y = block.last
    pos = {op: i for i, op in enumerate(block)}
    count = Counter(v for v, _, _ in pairs)
    ifs = {}
    for v, buf, prev in pairs:
        if p.home.get(v) is buf:
            continue
        d = getattr(v, "op", None)
        ok = (d is not None and d.parent is block and v not in p.home and count[v] == 1
              and (prev is None or not _used_after(prev, block, pos, pos[d])))
        if ok and d.is_a(IfOp):
            ifs.setdefault(d, {})[v.index] = (buf, prev)
        elif ok and writes_result(d) and not _refused_in_place(d, buf, p):
            p.home[v] = buf
        else:
            p.copies.setdefault(y, []).append((v, buf))
    for d, targets in ifs.items():
        if not _plan_if(d, targets, p):
            p.copies.setdefault(y, []).extend((d.results[j], b) for j, (b, _) in targets.items())
    _stage(y, p, block)


def _refused_in_place(d, buf, p) -> bool:
    """Would ``d``, writing ``buf``, read ``buf`` too where ptoas's verifier wants its operands
    apart (:data:`~.pto_syntax.PTOAS_DISTINCT_OPERANDS`, on any platform: "expects src and dst
    to use different storage")?  Its result is then moved in."""
    from .pto_syntax import PTO_OP, PTOAS_DISTINCT_OPERANDS
    rule = PTOAS_DISTINCT_OPERANDS.get(PTO_OP.get(d.name[3:]))
    return rule is not None and any(p.home.get(v) is buf for v in d.operands[:rule[1]])


def _stage(op, p, block) -> None:
    """Order the carry moves before ``op`` so that none overwrites a buffer a later move
    still reads (a parallel copy); a cycle of them (a swap) goes through a staging buffer."""
    pending = list(p.copies.get(op, ()))
    if len(pending) < 2:
        return

    def held(src):
        return src if isinstance(src, Buf) else p.home.get(src)

    out = []
    while pending:
        for m in pending:
            if not any(held(o[0]) is m[1] for o in pending if o is not m):
                out.append(m)
                pending.remove(m)
                break
        else:                               # every move's buffer is read by another: a cycle
            src, dst = pending[0]
            tmp = Buf(src.type, "staged")
            p.declare.setdefault(op, []).append(tmp)
            out.append((src, tmp))
            pending[0] = (tmp, dst)
    p.copies[op] = out
