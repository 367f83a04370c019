"""PipelineCrossCoreLoops: software-pipeline (cut into two stages, the first run ahead) a
loop that the AIC and the AIV kernel of a Group both run, so that neither core idles through a round trip - as the
hand-written flash-attention pair does (the Cube pushes S(t+1) before it waits for P(t);
the Vector pushes P(t+1) before it waits for P(t) V).

It runs after InsertTfree (TFREEs move with their pops; properties: ``REQUIRED`` /
``PRODUCED`` / ``INVALIDATED``, docs/passes/README.md).

Loops pair up by source location (ExpandMixedKernel replicates a mixed loop into both
kernels; its ancestors' locations must agree too; a loop without one is not paired) and
must have the same trip count (start, stop as equal expressions of constants / parameters /
enclosing loop variables; step 1).  Each body is cut by :mod:`.loop_stages` (before its
first round-trip pop; a side with none is left as it is) into stage 0 and stage 1, and
becomes (D: how many iterations stage 0 runs ahead, :func:`_distance`)::

    stage 0 (iterations start .. start + D - 1)                 # prologue
    for t in range(start, stop - D) iter_args(stage-0 carried, stage-1 carried, handed over x D):
        stage 0 (iteration t + D); stage 1 (iteration t)        # steady state
    stage 1 (iterations stop - D .. stop - 1)                   # epilogue

A loop-carried value yielded by stage 1 stays carried; one yielded by stage 0 is carried D
iterations ahead; a stage-0 value (or the stage-0 view of a carried value) that stage 1
uses is *handed over* as extra loop-carried values (one per iteration ahead), scalar index
arithmetic is recomputed.  With a trip count that is not a constant D is 1 and the whole is
guarded by ``if start < stop`` (else the loop's results are its inits).  The loop's rings
may be used before and after it in its block (a peeled first iteration: ``pl.matmul``
before a loop of ``pl.matmul_acc``): those events enter the proofs, and the prologue moves
up above the ops before the loop it does not depend on (:meth:`_Plan.plan_hoist`), so the
peeled round trip overlaps too.  Both kernels are rewritten, or neither.

A loop pair is left untouched (never a wrong result) when: no side waits for a round trip;
a constant trip count below 2; the step is not 1; a body holds a pipe op or GM store in a
nested region, an event / call op or a TALLOC; the new push order of a direction is not the
pop order of its consumer (FIFO); the new orders (with the events around the loop) could
deadlock on SLOT_NUM slots (checked for trip counts 1 .. 2 SLOT_NUM + 2, also two
executions back to back); the function uses the loop's pipes outside the loop other than in
its block, or pushes a different number of tiles before it than the peer pops; a TFREE
would land in another stage than its TPOP, or a popped tile (or a copy / move of it) would
be handed over; stage 0 uses a value stage 1 carries; a GM tensor is stored in one stage
and read or written in the other, or stored in the loop and accessed by the peer kernel.
When the allocator can no longer place the tiles of both kernels (a handed-over tile lives
longer) both kernels are restored and a smaller D tried.  It reports no errors; each pair
left untouched is a missed remark with the reason, each rewrite an applied one
(:mod:`.remarks`).
See docs/passes/pipeline-cross-core-loops.md.
"""
from __future__ import annotations

from ..arch import MemSpace
from ..errors import CompileError
from ..ir.core import Block, Operation, Region
from ..ir.layout import plan_function
from ..ir.vocab import FunctionKind
from ..ir.opdefs import (ARITH_OP, EVENT_OPS, INITIALIZE_PIPE, CallOp, ConstOp, CopyOp, ForOp,
                         FuncOp, IfOp, LoadOp, MoveOp, ReserveBufferOp, StoreOp, TAlloc, TFree,
                         TPop, YieldOp)
from ..ir.types import BOOL, INDEX
from . import loop_stages as ls
from ._rewrite import PURE, const, fresh
from .util import platform_of, top_ops
from .properties import IRProperty
from .remarks import remarks_of

NAME = "pipeline-cross-core-loops"
REQUIRED = frozenset({IRProperty.MIXED_KERNELS_EXPANDED, IRProperty.TFREES_INSERTED})
PRODUCED = frozenset()
INVALIDATED = frozenset({IRProperty.PIPES_VERIFIED, IRProperty.MEMORY_ALLOCATED})

_UNSAFE = (CallOp, TAlloc) + EVENT_OPS
_ALIASING = (CopyOp, MoveOp)
_PIPE_EVENTS = tuple(ls.PIPE_EVENTS)
PIPE_KIND = ls.PIPE_EVENTS


def _aliased(op):
    """The value an aliasing op (a copy, a move) passes on."""
    return op.source if op.is_a(CopyOp) else op.tile


def _key(v, fn):
    """A comparable form of a trip-count operand, or None."""
    op = getattr(v, "op", None)
    if op is None:
        blk = v.block
        if blk is fn.regions[0].blocks[0]:
            return ("arg", v.name)
        p = blk.parent.parent if blk.parent is not None else None
        is_iv = p is not None and p.is_a(ForOp) and v.index == 0
        return ("iv", _loc_path(p)) if is_iv else None
    if op.is_a(ConstOp):
        return ("const", op.value)
    if op.name.startswith("arith."):
        ks = tuple(_key(x, fn) for x in op.operands)
        return None if None in ks else (op.name,) + ks
    return None


def _loc_path(op) -> tuple:
    out = []
    while op is not None and not op.is_a(FuncOp):
        out.append((op.name, op.loc))
        op = op.parent_op
    return tuple(out)


def _candidates(fn) -> dict:
    """loc path -> the pl.for ops of ``fn`` with pipe ops directly in their body."""
    out = {}
    for op in fn.walk():
        if op.is_a(ForOp) and op.loc is not None and \
                any(o.is_a(*_PIPE_EVENTS) for o in op.body):
            out.setdefault(_loc_path(op), []).append(op)
    return {k: v[0] for k, v in out.items() if len(v) == 1}


def _nested(op):
    return (x for x in op.walk() if x is not op)


def _body(loop) -> list:
    return [o for o in loop.body if not o.is_a(YieldOp)]


def _gm(ops, access) -> set:
    """The GM tensors the ``access`` ops (LoadOp / StoreOp) among ``ops`` touch."""
    return {x.tensor for o in ops for x in o.walk() if x.is_a(access)}


class _Plan:
    """One side's stages and what crosses between them."""

    def __init__(self, loop, cut, distance: int = 1):
        self.hoist, self.distance = None, distance
        self.loop, self.body = loop, loop.body
        ops = _body(loop)
        self.s0, self.s1 = ops[:cut], ops[cut:]
        self.yields = list(self.body.last.operands)
        self.iv, self.carried = self.body.args[0], self.body.args[1:]

    def check(self) -> str | None:
        """Why the stages cannot be rewritten (None: they can); fills what the rewrite needs."""
        s0set = {x for o in self.s0 for x in o.walk()}
        s1set = {x for o in self.s1 for x in o.walk()}
        # yields: by stage; a carried value passed on as another one is not handled
        self.stage_of = []
        for k, y in enumerate(self.yields):
            d = getattr(y, "op", None)
            if d is None:
                if y in self.body.args and y is not self.carried[k]:
                    return (f"carried value {k + 1} is passed on as another carried value "
                            f"({y.name or 'an argument'})")
                self.stage_of.append(0)
            else:
                self.stage_of.append(1 if d in s1set else 0)
        late = {self.carried[k] for k, s in enumerate(self.stage_of) if s == 1}
        for x in s0set:
            for v in x.operands:
                if v in late:
                    return (f"stage 0 (before the round-trip pop) reads {v.name or 'a value'}, "
                            f"which stage 1 carries{_at(x)}")
        # TFREEs in the stage of their TPOPs; no GM dependence between the stages
        held = {}
        for o in self.s0:
            if o.is_a(TPop, TFree):
                d = o.direction
                held[d] = held.get(d, 0) + (1 if o.is_a(TPop) else -1)
        for d, n in held.items():
            if n:
                return (f"a {_dir(d)} slot popped before the round-trip pop is freed after it "
                        "(a TFREE would land in another stage than its TPOP)")
        st0, st1 = _gm(self.s0, StoreOp), _gm(self.s1, StoreOp)
        both = st0 & (st1 | _gm(self.s1, LoadOp)) | st1 & (st0 | _gm(self.s0, LoadOp))
        if both:
            return (f"GM tensor {sorted(v.name or '?' for v in both)[0]} is stored in one stage "
                    "and accessed in the other")
        # what stage 1 takes from stage 0: recomputed scalars or handed-over values
        popped = set()
        for o in self.s0:
            for x in o.walk():
                if x.is_a(TPop) or (x.is_a(*_ALIASING) and _aliased(x) in popped):
                    popped.update(x.results)
        early = {self.carried[k] for k, s in enumerate(self.stage_of) if s == 0}
        self.recompute, self.handed = [], []
        need = [v for o in self.s1 for x in o.walk() for v in x.operands]
        need += [y for y, s in zip(self.yields, self.stage_of) if s == 1]
        seen = set()
        while need:
            v = need.pop(0)
            if v in seen:
                continue
            seen.add(v)
            d = getattr(v, "op", None)
            if v in popped:
                return (f"popped tile {v.name or '(unnamed)'} would be handed over to the next "
                        f"iteration{_at(d) if d is not None else ''}")
            if v in early:
                self.handed.append(v)
            elif d is None or d not in s0set:
                continue
            elif d.is_a(ConstOp) or (d.name.startswith("arith.") and
                                          all(x not in early for x in d.operands)):
                if d not in self.recompute:
                    self.recompute.append(d)
                need.extend(d.operands)
            else:
                self.handed.append(v)
        order = {o: k for k, o in enumerate(self.s0)}
        self.recompute.sort(key=order.get)
        return None

    def plan_hoist(self, dirs) -> int:
        """How far up the prologue (stage 0 of the first iteration) can go among the ops
        before the loop in its block: above every op it does not read (pure scalar ops it
        reads go up with it) until one it cannot pass (a region, an event / call / TALLOC,
        a pipe init, a pipe op of a direction and kind stage 0 also pushes / pops / frees,
        a GM access that depends on stage 0's).  A peeled first iteration ends with a
        round-trip pop: the prologue's pushes go before it, so that round trip overlaps
        too.  Returns the pipe events of ``dirs`` it passes (0: it stays in place)."""
        self.hoist = None
        inner = {x for o in self.s0 for x in o.walk()}
        inits = dict(zip(self.carried, self.loop.inits))
        need = set()
        for x in inner:
            for v in x.operands:
                if v is self.iv:
                    need.add(self.loop.start)
                elif v in inits:
                    need.add(inits[v])
                elif getattr(v, "op", None) not in inner:
                    need.add(v)
        mine = {(PIPE_KIND[o.__class__], o.direction) for o in self.s0 if o.is_a(*_PIPE_EVENTS)}
        loads0, stores0 = _gm(self.s0, LoadOp), _gm(self.s0, StoreOp)
        ops = list(self.loop.parent)
        pulled, crossed, passed = [], [], 0
        for o in reversed(ops[:ops.index(self.loop)]):
            if any(r in need for r in o.results):
                if (o.is_a(ConstOp) or o.name.startswith("arith.")) and not o.regions:
                    pulled.append(o)
                    need.update(o.operands)
                    continue
                break
            if o.regions or o.is_a(*_UNSAFE, *INITIALIZE_PIPE):
                break
            if o.is_a(*_PIPE_EVENTS):
                kind, d = PIPE_KIND[o.__class__], o.direction
                if any(d == d0 and (kind == k0 or {kind, k0} <= {"pop", "free"})
                       for k0, d0 in mine):
                    break
                passed += d in dirs
            st, ld = _gm([o], StoreOp), _gm([o], LoadOp)
            if st & (loads0 | stores0) or ld & stores0:
                break
            crossed.append(o)
        if passed:
            self.hoist = (crossed[-1], pulled[::-1])
        return passed

    # -- rewriting ---------------------------------------------------------------------------
    def _stage0(self, block, iv, carried0) -> tuple:
        vm = {self.iv: iv}
        for k, s in enumerate(self.stage_of):
            if s == 0:
                vm[self.carried[k]] = carried0[k]
        for o in self.s0:
            block.append(o.clone(vm))
        ys = [vm.get(self.yields[k], self.yields[k]) for k, s in enumerate(self.stage_of) if s == 0]
        return ys, [vm.get(v, v) for v in self.handed]

    def _stage1(self, block, iv, carried1, handed) -> list:
        vm = {self.iv: iv}
        late = [k for k, s in enumerate(self.stage_of) if s == 1]
        vm.update({self.carried[k]: c for k, c in zip(late, carried1)})
        vm.update(dict(zip(self.handed, handed)))
        for o in self.recompute + self.s1:
            block.append(o.clone(vm))
        return [vm.get(self.yields[k], self.yields[k]) for k in late]

    def rewrite(self, static: bool) -> None:
        loop, loc = self.loop, self.loop.loc
        lo, hi, inits = loop.start, loop.stop, loop.inits
        if static:
            outer, guard = loop.parent, None
            add = loop.insert_before
        else:
            lt = Operation(ARITH_OP["<"], (lo, hi), [BOOL], {}, (), loc)
            cond = loop.insert_before(lt).results[0]
            outer = Block()
            guard = Operation(IfOp.name, (cond,), [r.type for r in loop.results], {},
                              (Region([outer]), Region([Block()])), loc,
                              [r.name for r in loop.results])
            loop.insert_before(guard)
            guard.else_block.append(YieldOp.build(values=inits, loc=loc))
            add = outer.append
        early = [k for k, s in enumerate(self.stage_of) if s == 0]
        late = [k for k, s in enumerate(self.stage_of) if s == 1]
        d = self.distance

        def iv_at(block, base, i):
            if i == 0:
                return base
            c = block.append(const(i, loc)).results[0]
            return block.append(Operation(ARITH_OP["+"], (base, c), [INDEX], {}, (), loc)).results[0]

        pro, a0, hands = Block(), [inits[k] for k in early], []
        for i in range(d):                 # stage 0 of the first d iterations
            a0, hand = self._stage0(pro, iv_at(pro, lo, i), dict(zip(early, a0)))
            hands.append(hand)
        pro_ops = list(pro)
        for o in pro_ops:
            add(o.detach())
        dist = add(const(d, loc)).results[0]
        last = add(Operation(ARITH_OP["-"], (hi, dist), [INDEX], {}, (), loc)).results[0]
        a1 = [inits[k] for k in late]
        ca = a0 + a1 + [v for hand in hands for v in hand]
        n0, n1, nh = len(a0), len(a1), len(self.handed)
        body = Block([INDEX] + [v.type for v in ca],
                     [self.iv.name] + [self.carried[k].name for k in early + late] +
                     [f"{v.name or 'v'}_ahead" + (str(i + 1) if i else "")
                      for i in range(d) for v in self.handed])
        t = body.args[0]
        slots = [body.args[1 + n0 + n1 + i * nh:1 + n0 + n1 + (i + 1) * nh] for i in range(d)]
        y0, h0 = self._stage0(body, iv_at(body, t, d), dict(zip(early, body.args[1:1 + n0])))
        y1 = self._stage1(body, t, body.args[1 + n0:1 + n0 + n1], slots[0])
        body.append(YieldOp.build(values=y0 + y1 + [v for sl in slots[1:] for v in sl] + h0,
                                  loc=loc))
        new = add(Operation(ForOp.name, [lo, last, loop.step] + ca, [v.type for v in ca], {},
                            (Region([body]),), loc))
        epi, f1 = Block(), list(new.results[n0:n0 + n1])
        for i in range(d):                 # stage 1 of the last d iterations
            got = new.results[n0 + n1 + i * nh:n0 + n1 + (i + 1) * nh]
            f1 = self._stage1(epi, iv_at(epi, last, i), f1, got)
        epi_ops = list(epi)
        for o in epi_ops:
            add(o.detach())
        finals = [None] * len(self.stage_of)
        for k, r in zip(early, new.results[:n0]):
            finals[k] = r
        for k, r in zip(late, f1):
            finals[k] = r
        if guard is not None:
            add(YieldOp.build(values=finals, loc=loc))
            finals = guard.results
        for old, f in zip(loop.results, finals):
            old.replace_all_uses_with(f)
        made = [guard] if guard is not None else list(pro_ops) + [dist.op, last.op, new] + \
            [o for o in epi_ops]
        if static and self.hoist is not None:      # the prologue goes above the peeled block
            first, pulled = self.hoist
            for o in pulled + pro_ops:
                o.move_before(first)
        loop.erase()
        _rename(made)
        _dce(made)


def _rename(made: list) -> None:
    """Fresh names for the copies: the DSL names variables, and a stage copied into the
    prologue must not share its name (hence its storage) with the same stage in the loop."""
    mine = {x for o in made for x in o.walk()}
    fn = made[0]
    while not fn.is_a(FuncOp):
        fn = fn.parent_op
    used = set()
    for o in fn.walk():
        if o not in mine:
            used.update(r.name for r in o.results if r.name)
            used.update(a.name for r in o.regions for b in r.blocks for a in b.args if a.name)
    for o in made:
        for x in o.walk():
            vals = list(x.results) + [a for r in x.regions for b in r.blocks for a in b.args]
            for v in vals:
                if v.name:
                    v.name = fresh(used, v.name)


def _dce(made: list) -> None:
    """Erase the pure scalar ops among the copies whose results nobody uses (a stage that
    does not read the loop variable leaves its ``t + 1`` unused)."""
    changed = True
    while changed:
        changed = False
        for o in reversed([x for m in made for x in m.walk()]):
            if o.parent is not None and (o.is_a(*PURE) or o.name.startswith("arith.")) \
                    and not any(r.uses for r in o.results):
                o.erase()
                changed = True


def _dir(d) -> str:
    return getattr(d, "name", str(d))


def _at(op) -> str:
    """`` at line N`` of an op with a location, else nothing."""
    loc = getattr(op, "loc", None)
    return f" at line {loc.line}" if loc is not None else ""


def _around(fn, loop, dirs):
    """The pipe events of ``dirs`` in the block that holds ``loop``, before it and after it
    (``(before, after)``, as :func:`.loop_stages.events`); or the first op of ``fn`` that
    pushes / pops / frees one of ``dirs`` elsewhere outside the loop (a nested region: its
    count per execution is not known here)."""
    block, inside = loop.parent, set(loop.walk())
    for o in fn.walk():
        if o.is_a(*_PIPE_EVENTS) and o.direction in dirs and o not in inside and o.parent is not block:
            return o
    ops = list(block)
    i = ops.index(loop)
    return tuple([e for e in ls.events(part) if e[2] in dirs] for part in (ops[:i], ops[i + 1:]))


def plan_pair(aic, aiv, lc, lv, slot_num: int):
    """The rewrite of the paired loops ``lc`` (of ``aic``) and ``lv`` (of ``aiv``): a
    ``(plans, static)`` to :func:`apply`, or None when it is not provably safe or gains
    nothing (:func:`plan_or_reason` says why)."""
    plan = plan_or_reason(aic, aiv, lc, lv, slot_num)
    return None if isinstance(plan, str) else plan


def plan_or_reason(aic, aiv, lc, lv, slot_num: int, most: int = 8):
    """:func:`plan_pair`'s plan, or the sentence saying why the loops stay as they are;
    ``most``: the furthest stage 0 may run ahead (:func:`_distance`)."""
    fns, loops = (aic, aiv), (lc, lv)
    if len(lc.operands) < 3 or len(lv.operands) < 3:
        return "the loop has no start / stop / step operands"
    keys = [tuple(_key(v, f) for v in (lp.start, lp.stop, lp.step)) for f, lp in zip(fns, loops)]
    if None in keys[0] or None in keys[1]:
        return ("its bounds are not expressions of constants, parameters and enclosing loop "
                "variables")
    if keys[0] != keys[1]:
        return "the AIC and the AIV loop have different trip counts"
    if keys[0][2] != ("const", 1):
        return "its step is not 1"
    static = keys[0][0][0] == "const" and keys[0][1][0] == "const"
    if static and keys[0][1][1] - keys[0][0][1] < 2:
        n = max(0, keys[0][1][1] - keys[0][0][1])
        return f"it runs {n} iteration{'' if n == 1 else 's'}, fewer than 2"
    bodies = [_body(lp) for lp in loops]
    for f, ops in zip(fns, bodies):
        for o in ops:
            if o.is_a(*_UNSAFE):
                return f"the {f.kind.name} body holds {o.name}{_at(o)}"
            bad = next((x for x in _nested(o) if x.is_a(*_UNSAFE, *_PIPE_EVENTS, StoreOp)), None)
            if bad is not None:
                return f"the {f.kind.name} body holds {bad.name} in a nested region{_at(bad)}"
    evs = [ls.events(ops) for ops in bodies]
    prod = ls.matched(*evs)
    if prod is None:
        return ("its pushes and pops do not match per iteration (a direction pushed on both "
                "cores, or an iteration pushes a different number of tiles than the peer pops)")
    around = []
    for f, lp in zip(fns, loops):
        got = _around(f, lp, set(prod))
        if not isinstance(got, tuple):
            return (f"the {f.kind.name} kernel uses ring {_dir(got.direction)} outside the loop "
                    f"in a nested region{_at(got)}")
        around.append(got)
    if not ls.balanced_before([a[0] for a in around], prod):
        return ("before the loop, the producer pushes a different number of tiles of one of "
                "its rings than the consumer pops")
    for s, f in enumerate(fns):                # stored here, touched by the peer: a GM token
        stored = {v.name for v in _gm(bodies[s], StoreOp)}
        other = fns[1 - s]
        both = stored & {v.name for v in _gm([other], StoreOp) | _gm([other], LoadOp)}
        if both:
            return (f"GM tensor {sorted(both)[0]} is stored in the {f.kind.name} loop and "
                    "accessed by the peer kernel")
    cuts = [ls.round_trip_cut(s, evs, prod) for s in (0, 1)]
    if cuts == [None, None]:
        return "no core waits for a round trip in an iteration (nothing to overlap)"
    if not ls.fifo_consistent(evs, cuts, prod):
        return "running stage 0 one iteration ahead would break the FIFO order of a ring"
    if not ls.runs_to_completion(evs, cuts, slot_num, around):
        return f"running stage 0 one iteration ahead could deadlock on {slot_num} slot(s)"
    plans = [_Plan(lp, c) if c is not None else None for lp, c in zip(loops, cuts)]
    for p in plans:
        why = p.check() if p is not None else None
        if why is not None:
            return why
    live = [p for p in plans if p is not None]
    if static:
        trips = keys[0][1][1] - keys[0][0][1]
        hoist = [p.plan_hoist(set(prod)) if p is not None else 0 for p in plans]
        d = _distance(evs, cuts, prod, slot_num, around, hoist, trips, most)
        for p in live:
            p.distance = d
        if any(hoist) and not ls.runs_to_completion(evs, cuts, slot_num, around, hoist, d,
                                                     [trips]):
            for p in live:      # the prologue above a peeled block, when that runs too
                p.hoist = None
    return (live, static)


def _distance(evs, cuts, prod, slot_num, around, hoist, trips, most) -> int:
    """How many iterations ahead stage 0 runs: as far as the rings let a producer go
    without waiting for a free slot (a direction pushed c times an iteration: SLOT_NUM // c
    - 1 iterations ahead), at most ``most`` and fewer than the trip count, and only as far
    as FIFO order and the deadlock proof (for this trip count) hold; at least 1."""
    per_iter = {}
    for side in evs:
        for _, kind, d in side:
            if kind == "push":
                per_iter[d] = per_iter.get(d, 0) + 1
    cap = min([slot_num // c - 1 for c in per_iter.values()] + [trips - 1, most])
    for d in range(cap, 1, -1):
        if ls.fifo_consistent(evs, cuts, prod, d) and \
                ls.runs_to_completion(evs, cuts, slot_num, around, (0, 0), d, [trips]):
            return d
    return 1


def apply(plan) -> None:
    plans, static = plan
    for p in plans:
        p.rewrite(static)


def pipeline_pair(aic, aiv, lc, lv, slot_num: int) -> bool:
    """Plan and apply; False (nothing changed) when :func:`plan_pair` refuses."""
    plan = plan_pair(aic, aiv, lc, lv, slot_num)
    if plan is not None:
        apply(plan)
    return plan is not None


def _slot_num(fn) -> int:
    for op in fn.body:
        if op.is_a(*INITIALIZE_PIPE):
            return op.slot_num or 1
    return 0


def fits(fn, plat) -> bool:
    """The allocator still places every tile and AUTO ring of ``fn`` (a handed-over tile
    lives one iteration longer)."""
    try:
        lay = plan_function(fn)
    except CompileError:
        return False
    if any(peak > plat.tile_space(MemSpace(sp)) for sp, peak in lay.peak.items()):
        return False
    for r in top_ops(fn, ReserveBufferOp):
        base, size = lay.by_name.get(r.buffer_name, (None, None))
        if r.memory_space is not None and isinstance(base, int) \
                and base + size > plat.mem_size(MemSpace(r.memory_space)):
            return False
    return True


def _pair(program, group):
    fns = {f.sym_name: f for f in program.body}
    called = [fns.get(o.callee) for o in group.walk() if o.is_a(CallOp)]
    aic = [f for f in called if f is not None and f.kind is FunctionKind.AIC]
    aiv = [f for f in called if f is not None and f.kind is FunctionKind.AIV]
    return (aic[0], aiv[0]) if len(aic) == 1 and len(aiv) == 1 else None


def run(program: Operation, ctx=None) -> Operation:
    plat = platform_of(ctx)
    remarks = remarks_of(ctx)
    groups = [g for g in program.body if g.kind is FunctionKind.Group]
    for g in groups:
        tried, most = set(), {}
        while True:
            pair = _pair(program, g)
            if pair is None:
                break
            aic, aiv = pair
            slots = min(_slot_num(aic), _slot_num(aiv))
            cc, cv = _candidates(aic), _candidates(aiv)
            if not tried:
                _report_unpaired(remarks, cc, cv)
            todo = [(k, lc) for k, lc in cc.items() if k in cv and k not in tried]
            if not todo:
                break
            key, lc = todo[0]
            tried.add(key)
            if slots < 1:
                remarks.missed(NAME, lc, "loop not pipelined: a kernel initialises no pipe")
                continue
            plan = plan_or_reason(aic, aiv, lc, cv[key], slots, most.get(key, 8))
            if isinstance(plan, str):
                remarks.missed(NAME, lc, f"loop not pipelined: {plan}")
                continue
            keep = (aic.clone(), aiv.clone())
            d = plan[0][0].distance
            cut_at = ", ".join(f"{_side(p.loop)} before " + (f"line {p.s1[0].loc.line}"
                                                              if p.s1 and p.s1[0].loc else "its end")
                               for p in plan[0])
            hoisted = any(p.hoist is not None for p in plan[0])
            apply(plan)
            if fits(aic, plat) and fits(aiv, plat):
                ahead = "one iteration" if d == 1 else f"{d} iterations"
                remarks.applied(NAME, lc, f"loop pipelined: stage 0 runs {ahead} ahead (cut: "
                                          f"{cut_at})" + ("; its first stage 0 goes above the "
                                                          "round trip before the loop" if hoisted else ""))
                continue
            aic.replace_with(keep[0])              # a handed-over tile does not fit: undo
            aiv.replace_with(keep[1])
            if d > 1:                              # and try fewer iterations ahead
                most[key] = d - 1
                tried.discard(key)
            else:
                remarks.missed(NAME, lc, "loop not pipelined: the tiles of the pipelined loop "
                                         f"no longer fit the {plat.name} memories")
    return program


def _side(loop) -> str:
    fn = loop.parent_op
    while not fn.is_a(FuncOp):
        fn = fn.parent_op
    return fn.kind.name


def _report_unpaired(remarks, cc: dict, cv: dict) -> None:
    """A loop with pipe ops that only one kernel runs (no same-located loop in the peer)."""
    for mine, other, kind in ((cc, cv, "AIC"), (cv, cc, "AIV")):
        for k, lp in mine.items():
            if k not in other:
                remarks.missed(NAME, lp, f"loop not pipelined: only the {kind} kernel has a "
                                         "loop of this line with pipe ops directly in its body")
