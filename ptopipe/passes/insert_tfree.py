"""InsertTfree (seed 003 point 2, last item): each consumer TFREE right
after the last use of the tile its TPOP popped, never earlier.

It runs on AIC / AIV kernels (ExpandMixedKernel's output, or hand-written ones; properties:
``REQUIRED`` / ``PRODUCED`` / ``INVALIDATED`` (docs/passes/README.md)).

For every ``pl.tpop`` of a ring on which the function has no ``pl.tfree`` yet (a
hand-written kernel that frees its slots is left alone) the popped value's *aliases* are
followed: ``pl.copy`` results, a loop's block argument and result when it is a loop init,
the result of a ``pl.if`` that yields it.  The TFREE goes into the TPOP's block, right after
the last op of that block that uses an alias (itself or inside its regions); when that op
is the block's terminator (the alias is yielded) the TFREE goes right before it.  TFREEs of
one ring in one block keep the TPOPs' order (a TFREE releases the oldest held slot).  A
popped tile still used after a later TPOP of the same ring inside a loop / branch (whose
TFREE runs there, first) is copied right after its TPOP (a Vec -> Vec ``pl.move``), so its
own slot is freed at once and the copy is held instead.  So is one held across more later
TPOPs of its ring in its block than the ring lets a kernel hold (the platform's and
protocol's hold limit, :func:`.pipe_state.hold_limit`: SLOT_NUM, a GM ring's LocalSlotNum;
under pto-isa with SyncPeriod > 1 one - its TFREE tests the index of the latest TPOP, so a
tile freed after a later TPOP of its ring would send that TPOP's credit, not its own).

Each TFREE placed notes the pipes that read the slot before it (``read_on``); LowerPlatform
orders the reads the protocol's free signal does not wait for (a TSTORE on MTE3 before a
pto-isa A5 free sent from PIPE_V).

A *carried* slot - a tile popped before a loop, passed in as the loop's init, and in the
body used, then replaced by a tile popped from the same ring that the body yields (pop
before the loop; in the loop: use the previous tile, pop the next, carry it) - is freed
once per TPOP too: in the body after the last use of the carried iter_arg (the slot the
previous iteration, or the pop before the loop, popped), and after the loop after the last
use of the loop's result (the last slot popped; the first one if the loop runs no
iteration).  The carried pop must be the body's last pop of that ring (a TFREE releases the
oldest held slot), and the tile popped before the loop may not be read after the loop
(its slot is freed in the first iteration).

A tile popped in a branch of an ``if`` that yields it lives on after the join: its TFREE
goes into the ``if``'s block after the last use of the ``if``'s result (pypto frees it before
the yield, while it is still read) - one TFREE when the other branch yields a tile popped
from the same ring as that result (a pop on either path), else under an ``if`` on the same
condition, so it runs on the path that popped.  When another TPOP of the ring comes first
(later in the branch, or in a loop / branch before that last use) the tile is copied after
its TPOP, as above, and its slot freed in the branch.

Errors: a popped tile that is not in Vec and is held across a later TPOP of its ring inside
a loop / branch (it cannot be copied in its space); a popped tile that outlives its block
otherwise (yielded out of two nested branches, out of a loop without being a carried slot
as above, or used outside the block that popped it): one TFREE per TPOP on every path
cannot be placed; the message says how to rewrite it.
"""
from __future__ import annotations

from ..arch.catalogue import A5_MOVES, EXTRACT_PATHS, MOVES, OPS as CATALOGUE, PUSH_PIPE, STORE_PIPE
from ..arch.vocab import Direction
from ..ir.core import Block, Operation, OpResult, Region
from ..ir.ops import ISA_NAMES
from ..ir.vocab import FunctionKind
from ..ir.opdefs import CopyOp, ForOp, FuncOp, IfOp, MoveOp, ReturnOp, TFree, TPop, TPush, YieldOp
from ..ir.types import MemorySpace, TileValueType
from ..language.parser import source_name
from ._rewrite import const, err
from .pipe_state import hold_limit
from .util import compiler_made, init_ops, platform_of, protocol_model, protocol_of
from .properties import IRProperty
from .remarks import remarks_of


NAME = "insert-tfree"
REQUIRED = frozenset({IRProperty.MIXED_KERNELS_EXPANDED})
PRODUCED = frozenset({IRProperty.TFREES_INSERTED})
INVALIDATED = frozenset({IRProperty.PIPES_VERIFIED, IRProperty.MEMORY_ALLOCATED})


def aliases(v) -> set:
    """``v`` and every value that may hold the same tile (see the module doc)."""
    seen, work = {v}, [v]
    while work:
        x = work.pop()
        for u in x.uses:
            o = u.owner
            new = []
            if o.is_a(CopyOp):
                new = [o.out]
            elif o.is_a(ForOp) and o.carried_index(u.index) is not None:
                k = o.carried_index(u.index)
                new = [o.iter_arg(k), o.results[k]]
            elif o.is_a(YieldOp):
                p = o.parent_op
                if p is not None and p.is_a(IfOp):
                    new = [p.results[u.index]]
                elif p is not None and p.is_a(ForOp):
                    new = [p.iter_arg(u.index), p.results[u.index]]
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


_CARRY_FIX = ("to carry a popped tile into the next iteration, pop the first tile before the "
              "loop and pass it as the loop's init; in the body use it, pop the next tile from "
              "the same ring (the body's last pop of it) and yield that one - or copy the tile "
              "with an op (e.g. pl.adds(t, 0.0)) and carry the copy")


def _name(pop: Operation) -> str:
    return f"%{pop.tile.name or '?'}"


def _escape_what(pop: Operation, values) -> str:
    """The finding that ``pop``'s tile (``values``: its aliases) leaves the loop body or
    branch that popped it, in the source's terms: the variable the ``pl.range`` loop / ``if``
    assigns it to and reads after it (the IR's yield is the DSL's reassignment)."""
    for a in values:
        for u in a.uses:
            y = u.owner
            if not y.is_a(YieldOp) or y.parent_op is None or u.index >= len(y.parent_op.results):
                continue
            outer = y.parent_op
            var = outer.results[u.index].name
            var = source_name(var) if var else None
            kind = "loop" if outer.is_a(ForOp) else "branch"
            at = f" at {_line(outer)}" if getattr(outer, "loc", None) is not None else ""
            held = ("the ring slot it arrived in would be held past the iteration" if kind == "loop"
                    else "the ring slot it arrived in would be held past the if")
            return (f"the tile received from the other core here is assigned to "
                    f"{repr(var) if var else 'a variable'} in the {kind}{at} and read after it: "
                    f"{held}, so its TFREE cannot be placed once per TPOP")
    return (f"the tile received from the other core here ({_name(pop)}) outlives the loop / branch "
            "that received it: its TFREE cannot be placed once per TPOP")


def _escape_fix(pop: Operation) -> str:
    """How to rewrite it: a kernel's own TPOP pops again or carries a slot; a mixed
    function's cross-core move (ExpandMixedKernel's TPOP) reads its tile in the loop or
    carries a copy."""
    fn = pop
    while fn is not None and not fn.is_a(FuncOp):
        fn = fn.parent_op
    if fn is not None and fn.parent_op is not None and fn.sym_name in compiler_made(fn.parent_op):
        return ("use the moved tile inside the loop / branch that moves it (e.g. store it there); to "
                "carry one into the next iteration, move the first tile before the loop and pass it as "
                "the loop's init, and in the body use it, move the next one (the body's last move "
                "across that way) and yield that - or carry a copy made with an op (e.g. "
                "pl.adds(t, 0.0))")
    return "pop it again in each iteration; " + _CARRY_FIX


def carried_pop(loop: Operation, k: int, ring):
    """The TPOP of ``ring`` in ``loop``'s body whose tile the body yields as iter_arg ``k``
    (a carried slot), or None."""
    body = loop.body
    v = body.last.values[k]
    while isinstance(v, OpResult) and v.op.is_a(CopyOp) and v.op.parent is body:
        v = v.op.source
    if isinstance(v, OpResult) and v.op.is_a(TPop) and v.op.parent is body and \
            v.op.buf is ring:
        return v.op
    return None


def _last_use(pop: Operation, values, block):
    """The last op of ``block`` using one of ``values`` (aliases of ``pop``'s tile), or None;
    errors for a use that escapes ``block``."""
    pos = _position(block)
    ancs = [_ancestor_in(u.owner, block) for a in values for u in a.uses]
    if any(anc is not None and anc.is_a(YieldOp) for anc in ancs):
        raise err(_escape_what(pop, values), pop, _escape_fix(pop))
    if None in ancs:
        raise err(f"the tile popped here ({_name(pop)}) is used outside the block that popped "
                  "it: its TFREE cannot be placed once per TPOP", pop,
                  "use the popped tile (or a copy made with an op) inside the loop / branch "
                  "that pops it; " + _CARRY_FIX)
    return max(ancs, key=pos.__getitem__, default=None)


def _insert_free(pop: Operation, block, last, after: dict) -> Operation:
    ring = pop.buf
    pos = _position(block)
    prev = after.get((block, ring))
    if last is None or (prev is not None and pos.get(prev, -1) > pos[last]):
        last = prev
    z = const(None, pop.loc)
    free = TFree.build(buf=ring, obj=z.out, direction=pop.direction, split=None, loc=pop.loc)
    if pop.pipe_id is not None:
        free.pipe_id = pop.pipe_id          # the TPOP's ring
    if last is None:
        block.prepend(free)
        block.prepend(z)
    elif last is block.last and last.is_a(YieldOp, ReturnOp):
        last.insert_before(z)
        last.insert_before(free)
    else:
        last.insert_after(z)
        z.insert_after(free)
    after[(block, ring)] = free
    free.read_on = read_pipes(pop, free)
    return free


_C2V = (Direction.DIR_C2V, Direction.DIR_C2V_GM)


def read_pipe(op: Operation, tile):
    """The pipe on which ``op`` reads ``tile`` (the catalogue's pipe of its instruction, or
    of its data path for a TSTORE / TMOV / TEXTRACT; a TPUSH's copy out of the core), None
    for an op that reads it on no pipe of its own (a loop, a branch, a yield, a copy)."""
    if op.is_a(TPush):
        return PUSH_PIPE["C2V" if op.direction in _C2V else "V2C"]
    isa = ISA_NAMES.get(op.name[3:]) if op.name.startswith("pl.") else None
    if isa is None:
        return None
    src = tile.type.space
    res = op.results[0].type if op.results else None
    dst = res.space if isinstance(res, TileValueType) else None
    if isa == "TSTORE":
        return STORE_PIPE.get(src)
    if isa == "TMOV":
        return MOVES.get((src, dst)) or A5_MOVES.get((src, dst))
    if isa == "TEXTRACT":
        path = EXTRACT_PATHS.get((src, dst))
        return path[0] if path is not None else CATALOGUE[isa].pipe
    return CATALOGUE[isa].pipe


def _chain(op: Operation) -> list:
    """``[(block, op of that block holding op)]`` from ``op``'s own block outwards."""
    out = []
    while op is not None and op.parent is not None:
        out.append((op.parent, op))
        op = op.parent_op
    return out


def _runs_before(a: Operation, b: Operation) -> bool:
    """Does ``a`` run before ``b`` in program order (``a`` in the innermost block holding
    both comes first; ops in two branches of one ``if`` do not)?"""
    outer = dict(_chain(b))
    for block, x in _chain(a):
        y = outer.get(block)
        if y is not None:
            if x is y:
                return False
            x = x.next                  # forward: the last use is next to the free
            while x is not None and x is not y:
                x = x.next
            return x is y
    return False


def read_pipes(pop: Operation, free: Operation) -> tuple:
    """The pipes (PipeUnit names, sorted) on which the ops before ``free`` read the tile
    ``pop`` popped (any alias of it): the work the slot's free must follow."""
    pipes = set()
    for a in aliases(pop.tile):
        for u in a.uses:
            p = read_pipe(u.owner, a) if _runs_before(u.owner, free) else None
            if p is not None:
                pipes.add(p.name)
    return tuple(sorted(pipes))


def _carried_loop(pop: Operation):
    """(loop, k, carried TPOP) when ``pop``'s tile is the init ``k`` of a loop of its block
    whose body carries a slot of the same ring, else None."""
    ring = pop.buf
    for a in aliases(pop.tile):
        for u in a.uses:
            o = u.owner
            k = o.carried_index(u.index) if o.is_a(ForOp) else None
            if k is not None and o.parent is pop.parent:
                inner = carried_pop(o, k, ring)
                if inner is not None:
                    return o, k, inner
    return None


def _place_carried(pop: Operation, loop: Operation, k: int, inner: Operation, after: dict,
                   handled: set) -> None:
    """The TFREEs of a carried slot (see the module doc)."""
    block, body = pop.parent, loop.body
    ring = pop.buf
    later = [o for top in body for o in top.walk() if o.is_a(TPop) and o.buf is ring][-1]
    if later is not inner:
        raise err(f"the tile popped here ({_name(inner)}) is carried to the next iteration but "
                  f"the body pops the same ring again after it (at {later.loc}): a TFREE releases "
                  "the oldest held slot, so the carried slot would be freed in its place", inner,
                  "make the carried TPOP the body's last TPOP of its ring")
    pos = _position(block)
    for a in aliases(pop.tile) - aliases(loop.results[k]) - {loop.iter_arg(k)}:
        for u in a.uses:
            anc = _ancestor_in(u.owner, block)
            if anc is not None and pos[anc] > pos[loop]:
                raise err(f"the tile popped here ({_name(pop)}) is carried into the loop at "
                          f"{loop.loc}, which frees its slot in the first iteration, but it is "
                          f"read after the loop (at {u.owner.loc})", pop,
                          "read the loop's result after the loop (the last tile carried), or "
                          "copy the tile with an op before the loop")
    _insert_free(pop, body, _last_use(pop, aliases(loop.iter_arg(k)), body), after)
    _insert_free(pop, block, _last_use(pop, aliases(loop.results[k]), block) or loop, after)
    handled.add(inner)


def _pop_inside(pop: Operation, last: Operation, ring):
    """A TPOP of ``ring`` inside a region of an op between ``pop`` and ``last`` (its last
    use): that TPOP's TFREE runs inside the region, while ``pop``'s tile is still held."""
    op = pop.next
    while op is not None:
        if op.regions:
            for o in op.walk():
                if o is not op and o.is_a(TPop) and o.buf is ring:
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
    v = pop.tile
    name = (v.name or "?").split("_")[0] if v.name and v.name[-1].isdigit() else (v.name or "?")
    if v.type.space is not MemorySpace.Vec:
        raise err(f"the tile popped here ('{name}') is still used after a later TPOP of the same "
                  f"ring (at {inner.loc}) is freed inside its loop / branch, and a ring frees its "
                  "slots oldest first: that TFREE would release this tile's slot", pop,
                  f"move '{name}' to another tile right after it crosses (e.g. pl.move(..., "
                  "space=pl.Left)) and use that, or pop the inner tiles after its last use")
    uses = list(v.uses)
    copy = MoveOp.build(tile=v, space=MemorySpace.Vec, dtype=None, layout=None,
                        result_types=[v.type], loc=pop.loc,
                        result_names=[f"{v.name or 'popped'}_held"])
    for u in uses:
        u.owner.set_operand(u.index, copy.result)
    pop.insert_after(copy)
    return copy


def _pops_until(pop: Operation, last: Operation, ring) -> list:
    """The TPOPs of ``ring`` after ``pop`` up to ``last`` in ``pop``'s block (none nested)."""
    out, op = [], pop.next
    while op is not None:
        if op.is_a(TPop) and op.buf is ring:
            out.append(op)
        if op is last:
            break
        op = op.next
    return out


def _yielded_pop(block, j: int, ring):
    """The TPOP of ``ring`` in branch ``block`` whose tile (or a named copy of it) the branch
    yields as result ``j``, else None."""
    v = block.last.operands[j]
    while isinstance(v, OpResult) and v.op.is_a(CopyOp) and v.op.parent is block:
        v = v.op.source
    if isinstance(v, OpResult) and v.op.is_a(TPop) and v.op.parent is block and v.op.buf is ring:
        return v.op
    return None


def _joined(pop: Operation):
    """``(if, j)`` when ``pop``'s block is a branch of an ``if`` that yields ``pop``'s tile as
    its result ``j`` (the tile lives on after the join), else None."""
    block = pop.parent
    iff = pop.parent_op
    if iff is None or not iff.is_a(IfOp) or not block.last.is_a(YieldOp):
        return None
    for j in range(len(iff.results)):
        if _yielded_pop(block, j, pop.buf) is pop:
            return iff, j
    return None


def _popped_after(pop: Operation):
    """A TPOP of ``pop``'s ring after it in its block (or nested there): its TFREE runs
    in the block, before the join, and would release ``pop``'s older slot."""
    block = pop.parent
    return _pop_inside(pop, block.last, pop.buf) or next(iter(_pops_until(pop, block.last, pop.buf)), None)


def _free_after_join(pop: Operation, iff: Operation, j: int, after: dict, limit, handled: set):
    """The TFREE of a tile yielded out of a branch: after the join, after the last use of the
    ``if``'s result, in the ``if``'s block - once when the other branch yields a tile popped
    from the same ring as that result (one pop on each path), else under an ``if`` on the
    same condition (the path that popped).  A ring frees its slots oldest first, so when
    another TPOP of the ring comes between the pop and that point (later in the branch, or
    in a loop / branch before the last use) the tile is copied after its TPOP instead and
    its slot freed there."""
    block, outer, ring = pop.parent, iff.parent, pop.buf
    last = _last_use(pop, aliases(pop.tile), outer) or iff
    inner = _popped_after(pop) or _pop_inside(iff, last, ring)
    later = _pops_until(iff, last, ring)
    if inner is None and limit is not None and len(later) + 1 > limit:
        inner = later[0]
    if inner is not None:
        return _insert_free(pop, block, _copy_out(pop, inner), after)
    then, els = iff.regions[0].blocks[0], iff.regions[1].blocks[0]
    other = _yielded_pop(els if block is then else then, j, ring)
    if other is not None and _popped_after(other) is None:
        handled.add(other)              # one TFREE frees the slot popped on either path
        return _insert_free(pop, outer, last, after)
    free = _insert_free(pop, outer, last, after)
    z = free.prev                       # its null object, placed right before it
    here = pop.loc
    mine, rest = Block(), Block()
    guard = z.insert_before(Operation(
        IfOp.name, (iff.operands[0],), [], {},
        (Region([mine if block is then else rest]), Region([rest if block is then else mine])),
        here))
    for op in (z, free):
        op.detach()
        mine.append(op)
    for b in (mine, rest):
        b.append(Operation(YieldOp.name, (), (), {}, (), here))
    after[(outer, ring)] = guard
    return free


def _line(op) -> str:
    return f"line {op.loc.line}" if getattr(op, "loc", None) is not None else "an unknown line"


def place_tfree(pop: Operation, after: dict, limit: int | None = None,
                handled: set | None = None, remarks=None) -> Operation:
    """Insert the TFREE of ``pop``; ``after`` maps (block, ring) to the last TFREE placed there.
    ``limit``: the most slots of a ring the kernel may hold at a TPOP (``hold_limit``);
    ``handled``: TPOPs whose TFREE this one places too (a tile popped on either branch);
    ``remarks``: a :class:`~.remarks.Remarks` told when the TFREE cannot follow the last
    use itself."""
    joined = _joined(pop)
    if joined is not None:
        return _free_after_join(pop, *joined, after, limit, set() if handled is None else handled)
    block = pop.parent
    values = aliases(pop.tile)
    last = _last_use(pop, values, block) or pop
    ring = pop.buf
    inner = _pop_inside(pop, last, ring)
    name = _name(pop)
    if inner is not None:
        last = _copy_out(pop, inner)
        why = f"a later TPOP of its ring, at {_line(inner)}, is freed first inside a loop / branch"
    elif limit is not None and pop.tile.type.space is MemorySpace.Vec and \
            len(_pops_until(pop, last, ring)) + 1 > limit:   # held across more pops than allowed
        later = _pops_until(pop, last, ring)
        last = _copy_out(pop, later[0])
        why = f"it is held across {len(later)} later TPOP(s) of its ring, more than the {limit} it may hold"
    else:
        why = None
        if remarks is not None and last.regions and \
                not any(u.owner is last for a in values for u in a.uses):
            remarks.missed(NAME, pop, f"TFREE of {name} not right after its last use: that use "
                                      f"is inside the {last.name} at {_line(last)}, so the slot "
                                      "is held until it ends")
    if why is not None and remarks is not None:
        remarks.missed(NAME, pop, f"TFREE of {name} not right after its last use: {why}; the "
                                  "tile is copied (a Vec -> Vec pl.move) and its slot freed at once")
    return _insert_free(pop, block, last, after)


def _limit(fn: Operation, ctx) -> int | None:
    """The hold limit of ``fn``'s pipe for the compile's platform and protocol: 1 where a
    TFREE's free notification tests the latest TPOP (``HoldLimit.free_each``: pto-isa with
    SyncPeriod > 1 - every tile is freed before the next TPOP of its ring, so each TFREE
    sends the credit the producer counts on)."""
    if ctx is None:
        return None
    lim = hold_limit(next(iter(init_ops(fn)), None), fn.kind, platform_of(ctx),
                     protocol_model(ctx), protocol_of(ctx))
    return 1 if lim.free_each else lim.n


def run(program: Operation, ctx=None) -> Operation:
    remarks = remarks_of(ctx)
    made = compiler_made(program)
    for fn in program.body:
        if fn.kind not in (FunctionKind.AIC, FunctionKind.AIV):
            continue
        limit = _limit(fn, ctx)
        ops = list(fn.walk())
        freed = {o.buf for o in ops if o.is_a(TFree)}
        after, handled, told = {}, set(), set()
        for op in ops:
            if op.is_a(TPop) and op.buf in freed and op.buf not in told:
                told.add(op.buf)
                remarks.missed(NAME, op, f"no TFREE inserted for the {fn.kind.name} kernel's "
                                         f"{op.direction.name} ring: the kernel frees its slots itself")
            if op.is_a(TPop) and op.buf not in freed and op not in handled:
                if fn.sym_name not in made:     # (the compiler's own kernels free nothing)
                    way = op.direction.name.replace("DIR_", "")
                    remarks.applied(NAME, op, f"TFREE inserted after the last use of the tile popped "
                                              f"here: {fn.sym_name} frees none of its {way} ring's "
                                              "slots itself")
                carried = _carried_loop(op)
                if carried is None:
                    place_tfree(op, after, limit, handled, remarks)
                elif limit is not None and limit < 2:
                    # the carried slot is held while the body pops the next one: more than
                    # the ring allows (pto-isa's SyncPeriod on A5): carry copies instead
                    inner = carried[2]
                    for p in (op, inner):
                        _insert_free(p, p.parent, _copy_out(p, inner), after)
                    handled.add(inner)
                else:
                    _place_carried(op, *carried, after, handled)
    return program
