"""Closure compilation of an IR function's statement tree, once per run of it on a core.

Each statement becomes a ``(SourceLoc, step)`` pair and each expression a zero-argument
callable, built once before the kernel starts; the run then calls them in straight lines
instead of walking the tree (no dispatch on node classes, no attribute dictionaries, no
GM-view construction per executed statement).  The semantics are the tree walk's:

- before each statement the core's ``loc_override`` is set to the statement's DSL line
  (after an ``if``'s branch, to the ``if``'s line again for its yields); an op nested in a
  statement's expression, and the op reading its result, run at their own lines;
- values live in one ``env`` dict by name; a call evaluates its operands left to right
  before it creates its destination tile or does its work;
- a destination tile is made at its first execution (an error making it - the tile does
  not fit - is raised where the interpreter met it, never for a branch not taken), and
  one tile per name (``dest_tile``), per rotation turn or per unnamed call (``_tmp``);
- every error is raised when the statement executes, never while compiling.

The only state a closure keeps between executions beyond the interpreter's is a GM view
per load / store site: the site's GlobalTensor is re-pointed (``assign``) instead of
rebuilt while its tensor operand is the same object (its shape, strides and dtype depend
only on the site's static type and window, so a view at another address is the same
tensor moved; the race checker records the pointer of every access, not the object).
"""
from __future__ import annotations

from functools import partial
from itertools import repeat

from .. import isa
from ..arch.vocab import row_major_strides
from ..errors import KernelError
from ..ir.nodes import (Assign, BinOp, BufferAttr, Call, Const, ExprList, ExprStmt, For, If,
                        ImportPeerBuffer, ReserveBuffer, Return, UnaryOp, Var)
from ..ir.types import TensorType, TileValueType, np_dtype
from ..ir import ops as irops
from ..ir.opdefs import (INITIALIZE_PIPE, Barrier, GetSubblockIdOp, LoadOp, RecordEvent, StoreOp,
                         TAlloc, TFree, TPop, TPush, WaitEvent, call_names)

_PY = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
       "//": lambda a, b: a // b, "%": lambda a, b: a % b, "/": lambda a, b: a / b,
       "|": lambda a, b: a | b, "&": lambda a, b: a & b, "==": lambda a, b: a == b,
       "!=": lambda a, b: a != b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
       ">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "and": lambda a, b: a and b,
       "or": lambda a, b: a or b}
_INIT, _EVENTS = call_names(INITIALIZE_PIPE), call_names((RecordEvent, WaitEvent))
# the catalogue's ops whose result is a tile the interpreter allocates: isa.<OP>(out, *operands)
# (operands in IR order are the ISA's after the destination); load and store build GM views
_TILE_RESULT = {dsl: getattr(isa, name) for dsl, name in irops.ISA_NAMES.items()
                if dsl not in (LoadOp.call_name, StoreOp.call_name)}
# a load / store site re-points its GlobalTensor, and the tiles a TPOP site makes share
# their views of memory, while these are True; tests turn them off to compare with views
# built per execution (tests/runtime/test_dsl_closures.py)
REUSE_VIEWS = SHARE_VIEWS = True


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


class Compiler:
    """Compiles the statements of ``interp.fn`` against ``interp``'s run state (``env``,
    tiles, pipes, layout): ``block(body)`` -> ``[(loc, step)]``."""

    def __init__(self, interp):
        self.it = interp
        self.core = interp.core
        self.env = interp.env
        self.stmt_loc = None        # the location of the statement being compiled

    # -- statements -------------------------------------------------------------------------
    def block(self, body) -> list:
        out = []
        for s in body:
            loc = self.it.where(s)
            saved, self.stmt_loc = self.stmt_loc, loc
            out.append((loc, self.stmt(s)))
            self.stmt_loc = saved
        return out

    def stmt(self, s):
        env, cls = self.env, s.__class__
        if cls is Assign:
            name, f = s.var.name, self.expr(s.value, s.var.name)
            return lambda: env.__setitem__(name, f())
        if cls is ExprStmt:
            return self.expr(s.value, None)
        if cls is For:
            return self.loop(s)
        if cls is If:
            return self.branch(s)
        if cls is ReserveBuffer or cls is ImportPeerBuffer:
            name, buffers = s.var.name, self.it.layout.buffers
            return lambda: env.__setitem__(name, buffers[name])
        if cls is Return:
            return _raiser(FunctionReturn)
        where = str(self.it.where(s))
        return _raiser(lambda: KernelError(f"cannot execute {cls.__name__}", where=where))

    def loop(self, s: For):
        env, core, it = self.env, self.core, self.it
        bounds = [self.expr(e, None) for e in (s.start, s.stop, s.step)]
        inits = [self.expr(e, None) for e in s.inits]
        yields = [self.expr(y, None) for y in s.yields]
        body = self.block(s.body)
        var, names, results = s.var.name, [v.name for v in s.iter_args], [r.name for r in s.results]

        def loop():
            start, stop, step = (int(f()) for f in bounds)
            if step == 0:
                raise KernelError(f"pl.range({start}, {stop}, 0): a loop with step 0 never ends",
                                  where=str(it.where(s)), fix="give the loop a non-zero step")
            vals = [f() for f in inits]
            for i in range(start, stop, step):
                env[var] = i
                for n, v in zip(names, vals):
                    env[n] = v
                for loc, step_ in body:                  # run_steps, inline
                    core.loc_override = loc
                    step_()
                vals = [f() for f in yields]
            for r, v in zip(results, vals):
                env[r] = v
        return loop

    def branch(self, s: If):
        env, core = self.env, self.core
        cond = self.expr(s.cond, None)
        then = (self.block(s.then_body), [self.expr(y, None) for y in s.then_yields])
        els = (self.block(s.else_body), [self.expr(y, None) for y in s.else_yields])
        loc, results = self.it.where(s), [r.name for r in s.results]

        def branch():
            steps, ys = then if cond() else els
            run_steps(core, steps)
            core.loc_override = loc
            vals = [f() for f in ys]
            for r, v in zip(results, vals):
                env[r] = v
        return branch

    # -- expressions ------------------------------------------------------------------------
    def expr(self, e, dest):
        env, cls = self.env, e.__class__
        if cls is Var:
            return partial(env.__getitem__, e.name)
        if cls is Const:
            return repeat(e.value).__next__
        if cls is Call:
            return self.call(e, dest)
        if cls is BinOp:
            return self.binop(e)
        if cls is UnaryOp:
            v = self.expr(e.operand, None)
            return (lambda: -v()) if e.op == "-" else (lambda: not v())
        if cls is BufferAttr:
            name, i = e.buffer.name, 0 if e.attr == "base" else 1
            return lambda: env[name][i]
        if cls is ExprList:
            items = [self.expr(x, None) for x in e.items]
            return lambda: [f() for f in items]
        return _raiser(lambda: KernelError(f"cannot evaluate {cls.__name__}"))

    def binop(self, e: BinOp):
        lhs, rhs, op, core = self.expr(e.lhs, None), self.expr(e.rhs, None), e.op, self.core

        def binop():
            a, b = lhs(), rhs()
            try:
                return _PY[op](a, b)
            except ZeroDivisionError:
                raise KernelError(f"division by zero: {a} {op} {b}", where=str(core.where()),
                                  fix="guard the divisor (it is 0 for this run's arguments)") from None
        return binop

    def pipe(self, producer: bool):
        """A callable giving the pipe a TPUSH / TALLOC (producer) or TPOP / TFREE site uses:
        its direction is static, the pipe is the one initialised last for it (``pipe_of``
        raises when there is none)."""
        it = self.it
        get, way = it.pipes.get, it.way_of(producer)
        return lambda: get(way) or it.pipe_of(producer)

    def out_tile(self, c: Call, dest):
        """A callable giving the call's destination tile (made at its first execution)."""
        it = self.it
        if not dest:
            return partial(it._tmp, c)
        return partial(it.dest_tile, dest, c.type)

    def call(self, c: Call, dest):
        op = c.op
        args = [self.expr(x, None) for x in c.args]
        own = self.it.where(c)
        stmt = self.stmt_loc
        other_line = own is not None and stmt is not None and (own.line, own.file) != (stmt.line, stmt.file)
        if args and stmt is not None and (other_line or any(x.__class__ is Call for x in c.args)):
            # an op nested in a statement on another line (a TPOP read by a move: one statement
            # of the tree made from two .pto ops) runs at its own line, and its parent at its
            # own again: the loc is set once the operands - nested ops included - are evaluated
            last, core, here = args[-1], self.core, own if other_line else stmt

            def located():
                v = last()
                core.loc_override = here
                return v
            args[-1] = located
        at = dict(c.attrs)
        fn = _TILE_RESULT.get(op)
        if fn is not None and op in irops.ISA_ATTRS:      # TCMP(dst, a, b, mode): attributes last
            args = args + [repeat(at[k]).__next__ for k in irops.ISA_ATTRS[op]]
        if fn is not None:
            out = self.out_tile(c, dest)
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
        if op == LoadOp.call_name:
            return self.load(c, args, at, dest)
        if op == StoreOp.call_name:
            return self.store(c, args)
        if op == TPush.call_name:
            producer = self.pipe(True)

            tile, split = TPush.tile, TPush.split.of(at)

            def tpush():
                a = [f() for f in args]
                isa.TPUSH(producer(), tile.of(a), split)
            return tpush
        if op == TPop.call_name:
            return self.tpop(args, at, dest)
        if op == TFree.call_name:
            consumer = self.pipe(False)

            obj, split = TFree.obj, TFree.split.of(at)

            def tfree():
                a = [f() for f in args]
                isa.TFREE(consumer(), obj.of(a), split)
            return tfree
        return self.rare(c, op, args, at, dest)

    def rare(self, c: Call, op: str, args: list, at: dict, dest):
        """The ops a kernel executes a few times (pipe set-up, events, sub-block id)."""
        it = self.it

        def call():
            a = [f() for f in args]
            if op == GetSubblockIdOp.call_name:
                return isa.get_subblockid()
            if op in _INIT:
                return it.init_pipe(op, a, at, c)
            if op in _EVENTS:           # record_event / wait_event: set_flag / wait_flag
                flag = isa.set_flag if op == RecordEvent.call_name else isa.wait_flag
                flag(RecordEvent.src.of(at), RecordEvent.dst.of(at), RecordEvent.event_id.of(a))
                return None
            if op == Barrier.call_name:
                isa.pipe_barrier(Barrier.pipe.of(at))
                return None
            if op == TAlloc.call_name:
                t = TAlloc.result_type.of(at)
                gt = isa.GlobalTensor(np_dtype(t.dtype), t.shape, name=dest)
                isa.TALLOC(it.pipe_of(True), gt, TAlloc.split.of(at))
                return gt
            raise KernelError(f"the runtime cannot execute op {op!r}", where=str(it.core.where()))
        return call

    def tpop(self, args: list, at: dict, dest):
        """A TPOP makes a new tile (or tensor) every execution: each popped value is its own
        (a tile popped earlier may still be held, or read after its TFREE and reported).
        The tiles of one site share their views of memory (``Tile._views``: per core,
        address and valid shape; the site's tiles have one dtype and shape), so a pop into
        a staging slot used before binds without building views."""
        it, consumer = self.it, self.pipe(False)
        t, split = TPop.result_type.of(at), TPop.split.of(at)
        if isinstance(t, TileValueType):
            space, dtype, (rows, cols), layout = t.space, np_dtype(t.dtype), t.shape[:2], t.layout
            views = {}

            def tpop():
                for f in args:
                    f()
                obj = isa.Tile(space, dtype, rows, cols, name=dest, layout=layout, **it.empty)
                if SHARE_VIEWS:
                    obj._views = views
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
    def view(self, ttype: TensorType, window, c: Call):
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
                    return it.gm_view(gt, ttype, offs, window, c)      # raises: the offsets' rank
                o0, o1 = offs
                if o0 < 0 or o0 + w0 > n0 or o1 < 0 or o1 + w1 > n1:
                    return it.gm_view(gt, ttype, offs, window, c)      # raises: out of bounds
                return _site_view(site, gt, int(o0) * s0 + int(o1) * s1, window, strides)
            return view

        def view(gt, offs):
            if len(offs) != rank or len(window) != rank:
                return it.gm_view(gt, ttype, offs, window, c)      # raises: the offsets' rank
            off = 0
            for o, (w, n, st) in zip(offs, dims):
                if o < 0 or o + w > n:
                    return it.gm_view(gt, ttype, offs, window, c)  # raises: out of bounds
                off += int(o) * st
            return _site_view(site, gt, off, window, strides)
        return view

    def load(self, c: Call, args: list, at: dict, dest):
        out, view = self.out_tile(c, dest), self.view(c.args[0].type, at["shape"], c)
        src, offs = args[0], args[1]

        def load():
            gt, o = src(), offs()
            for f in args[2:]:
                f()
            t = out()
            isa.TLOAD(t, view(gt, o))
            return t
        return load

    def store(self, c: Call, args: list):
        ttype = c.args[2].type
        r, col = c.args[0].type.shape
        window = (col,) if len(ttype.shape) == 1 else (1,) * (len(ttype.shape) - 2) + (r, col)
        view = self.view(ttype, window, c)
        tile_f, offs_f, gt_f = args

        def store():
            tile, offs, gt = tile_f(), offs_f(), gt_f()
            isa.TSTORE(view(gt, offs), tile)
        return store
