"""Closure compilation of an IR function (a ``pl.func`` op), once per run of it on a core.

Each op that does work becomes a ``(SourceLoc, step)`` pair and each operand a
zero-argument callable, built once before the kernel starts; the run then calls them in
straight lines instead of walking the ops (no dispatch on op classes, no attribute
dictionaries, no GM-view construction per executed op).  The semantics:

- before each step the core's ``loc_override`` is set to the line of the DSL statement the
  op belongs to (:func:`~ptopipe.ir.instances.statement_loc`: a nested expression's op runs
  at its statement's line, one on a line of its own - a TPOP read by a move, two ``.pto``
  ops - at its own); after an ``if``'s branch, to the ``if``'s line again for its yields;
- values live in one ``env`` dict keyed by IR value; a constant is a callable giving it,
  and a scalar op whose unnamed result only its next user reads is folded into that user's
  operand (pure: it runs when the user evaluates its operands, at the user's line);
- an op evaluates its operands left to right before it creates its destination tile or
  does its work;
- a destination tile is made at its first execution (an error making it - the tile does
  not fit - is raised where the interpreter met it, never for a branch not taken), at the
  address AllocateMemoryAddr gave the op (``addr``, or its ``rotation`` in turn);
- every error is raised when the op executes, never while compiling.

The only state a closure keeps between executions beyond the interpreter's is a GM view
per load / store site: the site's GlobalTensor is re-pointed (``assign``) instead of
rebuilt while its tensor operand is the same object (its shape, strides and dtype depend
only on the site's static type and window, so a view at another address is the same
tensor moved; the race checker records the pointer of every access, not the object) - and
per TPOP site, its tiles' shared views of memory and a copy of its first tile as made, which
its later tiles are made from (the same dtype, shape, layout and name) - and per GM window a
loop the fast-forward engine may take whole iterations of moves (:mod:`.skip`), the offsets
it had last.
"""
from __future__ import annotations

from functools import partial
from itertools import repeat

from .. import isa
from ..arch.vocab import row_major_strides
from ..errors import KernelError
from ..ir.types import TensorType, TileValueType, np_dtype
from ..ir import ops as irops
from ..ir.instances import statement_loc
from ..ir.opdefs import (ARITH_BINARY, ARITH_UNARY, INITIALIZE_PIPE, Barrier, BufferAttrOp, ConstOp,
                         CopyOp, CreateOp, ForOp, GetSubblockIdOp, IfOp, ImportPeerBufferOp, LoadOp, RecordEvent,
                         ReserveBufferOp, ReturnOp, StoreOp, TAlloc, TFree, TPop, TPush, WaitEvent,
                         YieldOp)
from ..ir.first_step import SCALAR_FNS
from ..language.parser import source_name
from ..sim.periodic.loops import SkipPlan
from .skip import affine_forms

#: the scalar operators' values (the IR's: ``//`` / ``%`` floor, ``truncdiv`` / ``truncrem`` toward zero)
_PY = SCALAR_FNS
# the catalogue's ops whose result is a tile the interpreter allocates: isa.<OP>(out, *operands)
# (operands in IR order are the ISA's after the destination); load and store build GM views
_TILE_RESULT = {dsl: getattr(isa, name) for dsl, name in irops.ISA_NAMES.items()
                if dsl not in (LoadOp.call_name, StoreOp.call_name)}
# a load / store site re-points its GlobalTensor, and the tiles a TPOP site makes share
# their views of memory, while these are True; tests turn them off to compare with views
# built per execution (tests/runtime/test_dsl_closures.py)
REUSE_VIEWS = SHARE_VIEWS = True


def shown_name(op) -> str | None:
    """The name a run's messages give ``op``'s result: the kernel's source variable (``p``,
    not the SSA hint ``p_1`` of its second assignment: :func:`~ptopipe.language.parser.source_name`)."""
    hint = op.results[0].name if op.results else None
    return source_name(hint) if hint else None


def _scalar_op(op) -> bool:
    """An op computing a scalar from its operands alone (no state, no ISA call)."""
    return op.name in ARITH_BINARY or op.name in ARITH_UNARY or op.__class__ is BufferAttrOp


def folded_values(func) -> set:
    """The results the closures fold into their user's operand: a scalar op's unnamed
    result read once, by an op of the same block."""
    out = set()
    for op in func.walk():
        if len(op.results) == 1 and _scalar_op(op):
            r = op.results[0]
            if r.name is None and len(r.uses) == 1 and r.uses[0].owner.parent is op.parent:
                out.add(r)
    return out


class FunctionReturn(Exception):
    """A ``return`` statement: ends the function's run."""


def _raiser(make):
    """A step / expression raising ``make()`` when it executes."""
    def fail():
        raise make()
    return fail


def _site_view(site: list, gt, off: int, window: tuple, strides: tuple):
    """The GlobalTensor of a load / store site ``site`` (``[tensor, view]``) at element
    offset ``off`` of tensor ``gt``: the site's view re-pointed while ``gt`` is the tensor it
    was made for, else a new one."""
    if site[0] is gt and REUSE_VIEWS:
        v = site[1]
        v.assign(gt.data() + off)
        return v
    v = isa.GlobalTensor(gt.data() + off, window, strides)
    site[0], site[1] = gt, v
    return v


def run_steps(core, steps) -> None:
    """Execute compiled statements in order, each at its DSL line."""
    for loc, step in steps:
        core.loc_override = loc
        step()


def valid_of(t: TileValueType) -> dict:
    """The valid shape (``isa.Tile`` keywords) of a tile of type ``t``: its data's shape (the
    tile itself is made in the static shape the compiled program declares)."""
    return {"valid_rows": t.shape[0], "valid_cols": t.shape[1]}


class Compiler:
    """Compiles the ops of ``interp.fn`` against ``interp``'s run state (``env``, tiles,
    pipes, layout): ``block(block)`` -> ``[(loc, step)]``."""

    def __init__(self, interp):
        self.it = interp
        self.core = interp.core
        self.env = interp.env
        self.folded = folded_values(interp.fn)
        # a moving GM window's op -> [its offsets at its last execution, None]; a guard's
        # comparison -> [its operands at its last execution] (.skip)
        self.seen: dict = {}

    # -- steps ------------------------------------------------------------------------------
    def block(self, block) -> list:
        out, folded = [], self.folded
        for op in block:
            cls = op.__class__
            if cls is YieldOp or cls is ConstOp or (op.results and op.results[0] in folded):
                continue            # yields: the parent's; constants and folded ops: operands
            step = self.step(op)
            if step is not None:
                out.append((self.it.at(statement_loc(op)), step))
        return out

    def step(self, op):
        env, cls = self.env, op.__class__
        if cls is ForOp:
            return self.loop(op)
        if cls is IfOp:
            return self.branch(op)
        if cls is ReserveBufferOp or cls is ImportPeerBufferOp:
            env[op.buf] = self.it.layout.buffers[op.buf]
            return None
        if cls is ReturnOp:
            return _raiser(FunctionReturn)
        if cls is CopyOp:
            f = self.get(op.source)
        elif _scalar_op(op):
            f = self.scalar(op)
        elif op.spec is not None:
            f = self.call(op)
        else:
            where = str(self.it.where(op))
            return _raiser(lambda: KernelError(f"cannot execute {op.name}", where=where))
        if not op.results:
            return f
        return partial(_store, env, op.results[0], f)

    def loop(self, op):
        """A ``pl.range`` loop.  One the fast-forward engine may take whole iterations of
        (:mod:`.skip`) offers it each head but the first while it records
        (:meth:`~ptopipe.sim.periodic.engine.FastForward.head`: the iteration to go on from)."""
        env, core, it = self.env, self.core, self.it
        bounds = [self.get(v) for v in (op.start, op.stop, op.step)]
        inits = [self.get(v) for v in op.inits]
        body = op.body
        yields = [self.get(v) for v in body.last.operands]
        forms = affine_forms(op, _TILE_RESULT)
        plan = None
        if forms is not None:
            sites, guards, _ = forms
            seen = tuple(self.seen.setdefault(s.op, [None, None]) for s in sites)
            compared = tuple(self.seen.setdefault(g.op, [None, None]) for g in guards)
            plan = SkipPlan(op, sites, seen, lambda v: self.get(v)(), guards, compared)
        steps = self.block(body)
        var, names, results = body.args[0], body.args[1:], op.results

        def loop():
            start, stop, step = (int(f()) for f in bounds)
            if step == 0:
                raise KernelError(f"pl.range({start}, {stop}, 0): a loop with step 0 never ends",
                                  where=str(it.where(op)), fix="give the loop a non-zero step")
            vals = [f() for f in inits]
            i, up = start, step > 0
            while i < stop if up else i > stop:
                if plan is not None and i != start:
                    ff = core.ff
                    if ff is not None and ff.recording:
                        i = ff.head(core, plan, i, step, stop)
                env[var] = i
                for n, v in zip(names, vals):
                    env[n] = v
                for loc, step_ in steps:                 # run_steps, inline
                    core.loc_override = loc
                    step_()
                vals = [f() for f in yields]
                i += step
            for r, v in zip(results, vals):
                env[r] = v
        return loop

    def branch(self, op):
        env, core = self.env, self.core
        cond = self.get(op.cond)
        then = (self.block(op.then_block), [self.get(v) for v in op.then_block.last.operands])
        els = (self.block(op.else_block), [self.get(v) for v in op.else_block.last.operands])
        loc, results = self.it.at(statement_loc(op)), op.results

        def branch():
            steps, ys = then if cond() else els
            run_steps(core, steps)
            core.loc_override = loc
            vals = [f() for f in ys]
            for r, v in zip(results, vals):
                env[r] = v
        return branch

    # -- operands ---------------------------------------------------------------------------
    def get(self, v):
        """A callable giving value ``v`` when an op reads it."""
        d = getattr(v, "op", None)
        if d is not None:
            if d.__class__ is ConstOp:
                return repeat(d.value).__next__
            if v in self.folded:
                return self.scalar(d)
        return partial(self.env.__getitem__, v)

    def scalar(self, op):
        name = op.name
        if op.__class__ is BufferAttrOp:
            env, buf, i = self.env, op.buffer, 0 if op.attr == "base" else 1
            return lambda: env[buf][i]
        if name in ARITH_UNARY:
            v = self.get(op.operands[0])
            return (lambda: -v()) if ARITH_UNARY[name] == "-" else (lambda: not v())
        sym = ARITH_BINARY[name]
        lhs, rhs, fn, core = self.get(op.operands[0]), self.get(op.operands[1]), _PY[sym], self.core
        compared = self.seen.get(op)
        if compared is not None:        # (a guard of a loop the engine may take whole: .skip)
            def guard():
                a = compared[0] = lhs()
                b = compared[1] = rhs()
                return fn(a, b)
            return guard

        def binop():
            a, b = lhs(), rhs()
            try:
                return fn(a, b)
            except ZeroDivisionError:
                raise KernelError(f"division by zero: {a} {sym} {b}", where=str(core.where()),
                                  fix="guard the divisor (it is 0 for this run's arguments)") from None
        return binop

    def pipe(self, producer: bool, op=None):
        """A callable giving the pipe a TPUSH / TALLOC (producer) or TPOP / TFREE site ``op``
        uses: its ring (direction and ``id=``) is static, the pipe is the one initialised
        for it (``pipe_of`` raises when there is none)."""
        it = self.it
        pid = (op.pipe_id or 0) if op is not None else 0
        get, key = it.pipes.get, (it.way_of(producer), pid)
        return lambda: get(key) or it.pipe_of(producer, pid)

    def call(self, op):
        cls = op.__class__
        args = [self.get(v) for v in op.operands]
        at = op.attributes
        fn = _TILE_RESULT.get(op.spec.name)
        if cls is CreateOp:              # storage no instruction writes (pl.create)
            return partial(self.it.dest_tile, op)
        if fn is not None and op.spec.name in irops.ISA_ATTRS:    # TCMP(dst, a, b, mode): attributes last
            args = args + [repeat(at[k]).__next__ for k in irops.ISA_ATTRS[op.spec.name]]
        if fn is not None:
            out = partial(self.it.dest_tile, op)
            if len(args) == 1:
                a0, = args

                def tile_op1():
                    x = a0()
                    t = out()
                    fn(t, x)
                    return t
                return tile_op1
            if len(args) == 2:
                a0, a1 = args

                def tile_op2():
                    x, y = a0(), a1()
                    t = out()
                    fn(t, x, y)
                    return t
                return tile_op2

            def tile_op():
                a = [f() for f in args]
                t = out()
                fn(t, *a)
                return t
            return tile_op
        if cls is LoadOp:
            return self.load(op)
        if cls is StoreOp:
            return self.store(op)
        if cls is TPush:
            producer = self.pipe(True, op)
            tile, split = TPush.tile, TPush.split.of(at)

            def tpush():
                a = [f() for f in args]
                isa.TPUSH(producer(), tile.of(a), split)
            return tpush
        if cls is TPop:
            return self.tpop(op, args)
        if cls is TFree:
            consumer = self.pipe(False, op)
            obj, split = TFree.obj, TFree.split.of(at)

            def tfree():
                a = [f() for f in args]
                isa.TFREE(consumer(), obj.of(a), split)
            return tfree
        return self.rare(op, args)

    def rare(self, op, args: list):
        """The ops a kernel executes a few times (pipe set-up, events, sub-block id)."""
        it, cls, at = self.it, op.__class__, op.attributes
        name = shown_name(op)

        def call():
            a = [f() for f in args]
            if cls is GetSubblockIdOp:
                return isa.get_subblockid()
            if cls in INITIALIZE_PIPE:
                return it.init_pipe(a, at, op)
            if cls is RecordEvent or cls is WaitEvent:      # set_flag / wait_flag
                flag = isa.set_flag if cls is RecordEvent else isa.wait_flag
                flag(RecordEvent.src.of(at), RecordEvent.dst.of(at), RecordEvent.event_id.of(a))
                return None
            if cls is Barrier:
                isa.pipe_barrier(Barrier.pipe.of(at))
                return None
            if cls is TAlloc:
                t = TAlloc.result_type.of(at)
                gt = isa.GlobalTensor(np_dtype(t.dtype), t.shape, name=name)
                isa.TALLOC(it.pipe_of(True, op.pipe_id or 0), gt, TAlloc.split.of(at))
                return gt
            raise KernelError(f"the runtime cannot execute op {op.name!r}", where=str(it.core.where()))
        return call

    def tpop(self, op, args: list):
        """A TPOP makes a new tile (or tensor) every execution: each popped value is its own
        (a tile popped earlier may still be held, or read after its TFREE and reported).
        The tiles of one site share their views of memory (``Tile._views``: per core,
        address and valid shape; the site's tiles have one dtype and shape), so a pop into
        a staging slot used before binds without building views; and they are made as
        copies of the site's first one as it was made (:func:`_copier`)."""
        it, consumer, at = self.it, self.pipe(False, op), op.attributes
        t, split = TPop.result_type.of(at), TPop.split.of(at)
        dest = shown_name(op)
        if isinstance(t, TileValueType):
            # the static shape the compiled program declares, the data's shape valid (Interpreter._tile)
            space, dtype, (rows, cols), layout = t.space, np_dtype(t.dtype), t.static_shape, t.layout
            valid = it.empty or valid_of(t)
            views = {}
            made = []               # the site's copier, once its first tile is made

            def tpop():
                for f in args:
                    f()
                if made:
                    obj = made[0]()
                else:
                    obj = isa.Tile(space, dtype, rows, cols, name=dest, layout=layout, **valid)
                    if SHARE_VIEWS:
                        obj._views = views
                        made.append(_copier(obj))
                isa.TPOP(consumer(), obj, split)
                return obj
            return tpop

        def tpop_address():
            for f in args:
                f()
            obj = isa.GlobalTensor(np_dtype(t.dtype), t.shape, name=dest)
            isa.TPOP(consumer(), obj, split)
            return obj
        return tpop_address

    # -- GM views -----------------------------------------------------------------------------
    def view(self, ttype: TensorType, window, op):
        """``gm_view`` of one load / store site: the site's GlobalTensor, re-pointed while
        the tensor operand is the same object (see the module docstring)."""
        it, shape, site = self.it, tuple(ttype.shape), [None, None]
        strides = row_major_strides(shape)
        window = tuple(window)
        rank = len(shape)
        dims = tuple(zip(window, shape, strides))

        if rank == 2 and len(window) == 2:
            (w0, n0, s0), (w1, n1, s1) = dims

            def view(gt, offs):
                if len(offs) != 2:
                    return it.gm_view(gt, ttype, offs, window, op)     # raises: the offsets' rank
                o0, o1 = offs
                if o0 < 0 or o0 + w0 > n0 or o1 < 0 or o1 + w1 > n1:
                    return it.gm_view(gt, ttype, offs, window, op)     # raises: out of bounds
                return _site_view(site, gt, int(o0) * s0 + int(o1) * s1, window, strides)
            return view

        def view(gt, offs):
            if len(offs) != rank or len(window) != rank:
                return it.gm_view(gt, ttype, offs, window, op)     # raises: the offsets' rank
            off = 0
            for o, (w, n, st) in zip(offs, dims):
                if o < 0 or o + w > n:
                    return it.gm_view(gt, ttype, offs, window, op)  # raises: out of bounds
                off += int(o) * st
            return _site_view(site, gt, off, window, strides)
        return view

    def offsets(self, values, seen=None):
        """The offsets of a GM window; kept in ``seen`` (a moving window of a skippable loop)."""
        fs = [self.get(v) for v in values]
        if seen is None:
            return lambda: [f() for f in fs]

        def offs():
            o = seen[0] = [f() for f in fs]
            return o
        return offs

    def _unrunnable_window(self, op):
        """A load / store of a ``.pto`` DN / NZ view (``irops.gm_layout_of``): the value IR's
        tensors are dense row-major (no strides), so it runs no such window - a KernelError at
        the op when it executes (``ptopipe run`` of the .pto runs it with the view's strides)."""
        lay = irops.gm_layout_of(op)
        if lay is None:
            return None
        where = str(self.it.where(op))
        return _raiser(lambda: KernelError(
            f"{op.name} of a {lay.name} GM window: the value IR keeps a tensor's shape, not its strides, and "
            "runs only row-major (ND) tensors", where=where,
            fix="run the .pto file itself (ptopipe run FILE.pto / run_pto), which moves the view with its "
                "layout and strides; the value IR verifies it statically"))

    def load(self, op):
        bad = self._unrunnable_window(op)
        if bad is not None:
            return bad
        out = partial(self.it.dest_tile, op)
        view = self.view(op.tensor.type, op.attributes["shape"], op)
        src, offs = self.get(op.tensor), self.offsets(op.offsets, self.seen.get(op))

        def load():
            gt, o = src(), offs()
            t = out()
            isa.TLOAD(t, view(gt, o))
            return t
        return load

    def store(self, op):
        bad = self._unrunnable_window(op)
        if bad is not None:
            return bad
        ttype = op.tensor.type
        view = self.view(ttype, irops.gm_window(op), op)
        tile_f, offs_f = self.get(op.tile), self.offsets(op.offsets, self.seen.get(op))
        gt_f = self.get(op.tensor)
        atomic = op.attributes.get("atomic", 0)
        if atomic:
            def store_add():
                tile, offs, gt = tile_f(), offs_f(), gt_f()
                isa.TSTORE(view(gt, offs), tile, atomic_type=atomic)
            return store_add

        def store():
            tile, offs, gt = tile_f(), offs_f(), gt_f()
            isa.TSTORE(view(gt, offs), tile)
        return store


def _copier(tile):
    """A function making a new Tile whose every field is ``tile``'s now (a tile just made:
    its static fields, immutable, and its site's shared views) - as the constructor would,
    several times faster (the constructor checks and converts its arguments)."""
    cls = tile.__class__
    names = [k for c in cls.__mro__ for k in c.__dict__.get("__slots__", ())
             if k not in ("__dict__", "__weakref__") and hasattr(tile, k)]
    env = {"new": object.__new__, "cls": cls}
    lines = ["def make():", "    o = new(cls)"]
    for i, k in enumerate(names):
        env[f"v{i}"] = getattr(tile, k)
        lines.append(f"    o.{k} = v{i}")
    lines.append("    return o")
    exec("\n".join(lines), env)        # (straight-line assignments: no loop per field)
    return env["make"]


def _store(env: dict, key, f) -> None:
    """A step defining value ``key``: ``env[key] = f()``."""
    env[key] = f()
