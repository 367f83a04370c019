"""Conversion between the statement-tree IR (:mod:`.nodes`, what the DSL parser builds and
the interpreter runs) and the op/region IR (:mod:`.core`).

``to_ops(program)`` flattens every expression into ops placed right before the statement
that evaluates it (post-order, so evaluation order is kept): a named tree value (an
:class:`Assign` target, a loop / if result, a parameter) becomes a value whose ``name`` is
the variable's, a nested expression an unnamed value.  Every op gets the node's location.

``to_tree(op)`` reverses it: an unnamed value with exactly one use in the same block is
inlined back into its user's expression when that keeps the evaluation order (the
inlined values are the latest pending ones, in operand order); any other value becomes an
``Assign`` (named after its hint, or ``_tN`` when it has none).  For a program built by ``to_ops`` this
gives back a tree ``==`` to the original.
"""
from __future__ import annotations

from ..errors import CompileError
from .core import Block, Operation, Region, gc_paused
from .nodes import (Assign, BinOp, BufferAttr, Call, Const, ExprList, ExprStmt, For, Function, If,
                    ImportPeerBuffer, Program, ReserveBuffer, Return, UnaryOp, Var)
from .opdefs import (MAY_BE_ABSENT, ARITH_BINARY, ARITH_UNARY, CALL_OPS, SCALAR_BINOPS, SCALAR_UNOPS, BufferAttrOp,
                     ConstOp, CopyOp, ForOp, FuncOp, IfOp, ImportPeerBufferOp, ProgramOp,
                     ReserveBufferOp, ReturnOp, YieldOp, operand_groups)
from .types import NONE


# -- tree -> ops -----------------------------------------------------------------------------
class _ToOps:
    def __init__(self):
        self.env = {}            # Var name -> Value (SSA: unique per function)

    def value(self, e, block: Block, loc):
        """Emit the ops computing ``e`` at the end of ``block``; returns its Value."""
        cls = e.__class__
        if cls is Var:
            v = self.env.get(e.name)
            if v is None:
                raise CompileError(f"'{e.name}' is used before it is defined", where=str(loc) if loc else None)
            return v
        return self.op_for(e, block, loc, None).results[0]

    def op_for(self, e, block: Block, loc, name):
        """Emit the op(s) of expression ``e`` and return the root op (its single result,
        if any, gets ``name``)."""
        cls = e.__class__
        here = e.loc if getattr(e, "loc", None) is not None else loc
        names = [name]
        if cls is Const:
            op = Operation(ConstOp.name, (), [e.type], {"value": e.value}, (), here, names)
        elif cls is BinOp:
            a = self.value(e.lhs, block, here)
            b = self.value(e.rhs, block, here)
            op = Operation(f"arith.{SCALAR_BINOPS[e.op]}", (a, b), [e.type], {}, (), here, names)
        elif cls is UnaryOp:
            a = self.value(e.operand, block, here)
            op = Operation(f"arith.{SCALAR_UNOPS[e.op]}", (a,), [e.type], {}, (), here, names)
        elif cls is BufferAttr:
            a = self.value(e.buffer, block, here)
            op = Operation(BufferAttrOp.name, (a,), [e.type], {"attr": e.attr}, (), here, names)
        elif cls is Var:
            op = Operation(CopyOp.name, (self.value(e, block, here),), [e.type], {}, (), here, names)
        elif cls is Call:
            operands = []
            for a in e.args:
                if a.__class__ is ExprList:
                    operands.extend(self.value(x, block, here) for x in a.items)
                else:
                    operands.append(self.value(a, block, here))
            rtypes = [] if e.type is NONE else [e.type]
            op = Operation(f"pl.{e.op}", operands, rtypes,
                           {k: v for k, v in e.attrs if v is not None or k not in MAY_BE_ABSENT}, (), here,
                           names if rtypes else [])
        else:
            raise CompileError(f"cannot convert expression {cls.__name__}",
                               where=str(here) if here else None)
        block.append(op)
        return op

    def body(self, stmts, block: Block) -> None:
        for s in stmts:
            cls = s.__class__
            if cls is Assign:
                op = self.op_for(s.value, block, s.loc, s.var.name)
                op.loc = s.loc if s.loc is not None else op.loc
                self.env[s.var.name] = op.results[0]
            elif cls is ExprStmt:
                op = self.op_for(s.value, block, s.loc, None)
                op.loc = s.loc if s.loc is not None else op.loc
            elif cls is For:
                self.loop(s, block)
            elif cls is If:
                self.branch(s, block)
            elif cls is Return:
                vals = [self.value(v, block, s.loc) for v in s.values]
                block.append(Operation(ReturnOp.name, vals, (), {}, (), s.loc))
            elif cls is ReserveBuffer:
                op = block.append(ReserveBufferOp.build(
                    buffer_name=s.name, size=s.size, base=s.base, memory_space=s.memory_space,
                    result_types=[s.var.type], loc=s.loc, result_names=[s.var.name]))
                self.env[s.var.name] = op.buf
            elif cls is ImportPeerBuffer:
                op = block.append(ImportPeerBufferOp.build(
                    buffer_name=s.name, peer_func=s.peer_func, result_types=[s.var.type],
                    loc=s.loc, result_names=[s.var.name]))
                self.env[s.var.name] = op.buf
            else:
                raise CompileError(f"cannot convert statement {cls.__name__}",
                                   where=str(s.loc) if s.loc else None)

    def yield_(self, values, block: Block, loc) -> None:
        vals = [self.value(v, block, loc) for v in values]
        block.append(Operation(YieldOp.name, vals, (), {}, (), loc))

    def loop(self, s: For, block: Block) -> None:
        bounds = [self.value(x, block, s.loc) for x in (s.start, s.stop, s.step)]
        inits = [self.value(x, block, s.loc) for x in s.inits]
        body = Block([s.var.type] + [v.type for v in s.iter_args],
                     [s.var.name] + [v.name for v in s.iter_args])
        for v, a in zip((s.var,) + tuple(s.iter_args), body.args):
            self.env[v.name] = a
        self.body(s.body, body)
        self.yield_(s.yields, body, s.loc)
        op = block.append(Operation(ForOp.name, bounds + inits, [r.type for r in s.results], {},
                                    (Region([body]),), s.loc, [r.name for r in s.results]))
        for r, res in zip(s.results, op.results):
            self.env[r.name] = res

    def branch(self, s: If, block: Block) -> None:
        cond = self.value(s.cond, block, s.loc)
        regions = []
        for stmts, ys in ((s.then_body, s.then_yields), (s.else_body, s.else_yields)):
            b = Block()
            self.body(stmts, b)
            self.yield_(ys, b, s.loc)
            regions.append(Region([b]))
        op = block.append(Operation(IfOp.name, (cond,), [r.type for r in s.results], {}, regions,
                                    s.loc, [r.name for r in s.results]))
        for r, res in zip(s.results, op.results):
            self.env[r.name] = res


def function_to_op(fn: Function) -> Operation:
    conv = _ToOps()
    entry = Block([p.type for p in fn.params], [p.name for p in fn.params])
    for p, a in zip(fn.params, entry.args):
        conv.env[p.name] = a
    conv.body(fn.body, entry)
    attrs = {"sym_name": fn.name, "kind": fn.kind}
    if fn.split is not None:
        attrs["split"] = fn.split
    if fn.slot_num is not None:
        attrs["slot_num"] = fn.slot_num
    return Operation(FuncOp.name, (), (), attrs, (Region([entry]),), fn.loc)


def to_ops(program) -> Operation:
    """The op IR (a ``pl.program`` op) of a tree-IR Program; of a ``pl.program`` op (what
    the DSL builds), a copy of it (passes rewrite the program they are given)."""
    if isinstance(program, Operation):
        return program.clone()
    top = Block()
    with gc_paused():
        for fn in program.functions:
            top.append(function_to_op(fn))
    return Operation(ProgramOp.name, (), (), {"sym_name": program.name}, (Region([top]),))


# -- ops -> tree -----------------------------------------------------------------------------
class _ToTree:
    def __init__(self, names: set, record: dict | None = None):
        self.names = names       # every name hint of the function (for fresh names)
        self.var = {}            # Value -> Var
        self.n = 0
        self.record = record     # if given: Value -> its tree node (the Var, else the Call)

    def fresh(self, v) -> Var:
        while True:
            name = f"_t{self.n}"
            self.n += 1
            if name not in self.names:
                self.names.add(name)
                return Var(name, v.type)

    def ref(self, v, pending: dict):
        e = pending.pop(v, None)
        if e is not None:
            return e
        var = self.var.get(v)
        if var is None:
            raise CompileError(f"value %{v.name or '?'} is used but never defined")
        return var

    def expr(self, op, pending: dict):
        name, cls = op.name, op.__class__
        if cls is ConstOp:
            return Const(op.value, op.out.type, op.loc)
        if name in ARITH_BINARY:
            x, y = (self.ref(v, pending) for v in op.operands)
            return BinOp(ARITH_BINARY[name], x, y, op.results[0].type, op.loc)
        if name in ARITH_UNARY:
            x, = op.operands
            return UnaryOp(ARITH_UNARY[name], self.ref(x, pending), op.results[0].type, op.loc)
        if cls is BufferAttrOp:
            return BufferAttr(self.ref(op.buffer, pending), op.attr, op.value.type, op.loc)
        if cls is CopyOp:
            return self.ref(op.source, pending)
        spec = CALL_OPS.get(name)
        if spec is None:
            raise CompileError(f"{name} has no tree form", where=str(op.loc) if op.loc else None)
        args = []
        for p, g in zip(spec.operands, operand_groups(spec, op.operands).values()):
            if isinstance(g, list):
                args.append(ExprList(tuple(self.ref(v, pending) for v in g), None))
            else:
                args.append(self.ref(g, pending))
        at = op.attributes
        attrs = tuple((p.name, at.get(p.name) if p.name in MAY_BE_ABSENT else at[p.name])
                      for p in spec.attr_params)
        rtype = op.results[0].type if op.results else NONE
        return Call(spec.name, tuple(args), attrs, rtype, op.loc)

    def define(self, v, var: Var | None = None) -> Var:
        var = var or (Var(v.name, v.type) if v.name else self.fresh(v))
        self.var[v] = var
        if self.record is not None:
            self.record[v] = var
        return var

    def block(self, block) -> tuple:
        """(statements, yielded / returned values) of ``block``."""
        out, pending, term = [], {}, ()
        for op in block:
            cls = op.__class__
            if pending and op.operands:
                self.settle(op, pending, out)
            mark = len(out)
            if cls is YieldOp:
                term = tuple(self.ref(v, pending) for v in op.operands)
            elif cls is ReturnOp:
                out.append(Return(tuple(self.ref(v, pending) for v in op.operands), op.loc))
            elif cls is ForOp:
                out.append(self.loop(op, pending))
            elif cls is IfOp:
                out.append(self.branch(op, pending))
            elif cls is ReserveBufferOp:
                out.append(ReserveBuffer(self.define(op.buf), op.buffer_name, op.size,
                                         op.base, op.memory_space, op.loc))
            elif cls is ImportPeerBufferOp:
                out.append(ImportPeerBuffer(self.define(op.buf), op.buffer_name,
                                            op.peer_func, op.loc))
            else:
                e = self.expr(op, pending)
                r = op.results[0] if op.results else None
                if r is not None and self.record is not None:
                    self.record[r] = e
                if r is None or (r.name is None and not r.uses):
                    out.append(ExprStmt(e, op.loc))
                elif r.name is None and len(r.uses) == 1 and r.uses[0].owner.parent is block:
                    pending[r] = e
                    continue
                else:
                    out.append(Assign(self.define(r), e, op.loc))
            # values left pending were not consumed by this statement: materialise them
            # before it, in definition order (keeps the evaluation order)
            if pending:
                early = [Assign(self.define(v), e, e.loc) for v, e in pending.items()]
                out[mark:mark] = early
                pending.clear()
        return tuple(out), term

    def settle(self, op, pending: dict, out: list) -> None:
        """Inlining ``op``'s pending operands keeps the evaluation order only when they
        are the most recent pending values, in operand order; else materialise them all."""
        mine = [v for v in op.operands if v in pending]
        if not mine:
            return
        keys = list(pending)
        if keys[len(keys) - len(mine):] != mine:
            for v, e in pending.items():
                out.append(Assign(self.define(v), e, e.loc))
            pending.clear()

    def loop(self, op, pending):
        start, stop, step, *inits = (self.ref(v, pending) for v in op.operands)
        body = op.body
        iv = self.define(body.args[0])
        iters = tuple(self.define(a) for a in body.args[1:])
        stmts, ys = self.block(body)
        results = tuple(self.define(r) for r in op.results)
        return For(iv, start, stop, step, iters, tuple(inits), stmts, ys, results, op.loc)

    def branch(self, op, pending):
        cond = self.ref(op.cond, pending)
        then, tys = self.block(op.then_block)
        els, eys = self.block(op.else_block)
        results = tuple(self.define(r) for r in op.results)
        return If(cond, then, els, tys, eys, results, op.loc)


def op_to_function(op: Operation, record: dict | None = None) -> Function:
    """The tree-IR Function of a ``pl.func`` op.  ``record``, if given, is filled with
    every op result's tree node: its :class:`Var` when it became a variable, else the
    nested :class:`Call` it was inlined as (what :func:`.layout.plan_function` keys tile
    addresses by: ``tiles[var.name]`` / ``temps[id(call)]``)."""
    names = set()
    for o in op.walk():                 # one walk: a 20k-op function is walked per conversion
        names.update([v.name for v in o.results])
        if o.regions:
            for r in o.regions:
                for b in r.blocks:
                    names.update([a.name for a in b.args])
    names.discard(None)
    names.discard("")
    conv = _ToTree(names, record)
    entry = op.body
    params = tuple(conv.define(a) for a in entry.args)
    body, _ = conv.block(entry)
    return Function(op.sym_name, op.kind, params, body, op.loc, op.split, op.slot_num)


def to_tree(top: Operation) -> Program:
    """The tree-IR Program of a ``pl.program`` op."""
    if not top.is_a(ProgramOp):
        raise CompileError(f"to_tree takes a pl.program op, got {top.name}",
                           where=str(top.loc) if top.loc else None)
    fns = tuple(op_to_function(f) for f in top.body)
    return Program(top.sym_name, fns)
