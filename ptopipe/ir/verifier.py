"""The IR verifier: SSA and defined-before-use, types (every op call re-typed from the op
table), memory spaces per core, and cross-core op placement (initialize_pipe on the
right core and before any TPUSH/TPOP, reserve_buffer only in a consumer, import_peer_buffer
only in a producer and naming an existing peer buffer).

``verify(program)`` raises :class:`~ptopipe.errors.CompileError` at the first problem,
pointing at the node's source location.
"""
from __future__ import annotations

from ..arch.vocab import ALIGNMENT
from ..errors import CompileError
from .nodes import (Assign, BinOp, BufferAttr, Call, Const, ExprList, ExprStmt, For, Function, If,
                    ImportPeerBuffer, Program, ReserveBuffer, Return, UnaryOp, Var, calls, stmt_exprs, walk)
from .vocab import AUTO, FunctionKind
from .opdefs import (CONSUMER_OPS, CROSS_CORE_OPS, INITIALIZE_PIPE, PRODUCER_OPS,
                     ImportPeerBufferOp, ReserveBufferOp, call_names)
from .ops import C2V, V2C, OpError, infer, init_ways, lookup
from .types import BufferType, MemorySpace, ScalarType, TensorType, TileValueType, describe

# the tree's Call names of the pipe ops
_CROSS, _INIT = call_names(CROSS_CORE_OPS), call_names(INITIALIZE_PIPE)
_PRODUCER, _CONSUMER = call_names(PRODUCER_OPS), call_names(CONSUMER_OPS)
SPACE_OF_KIND = {FunctionKind.AIV: "UB", FunctionKind.AIC: "L1"}


def _err(msg: str, node, fix: str | None = None, details: str | None = None) -> CompileError:
    loc = getattr(node, "loc", None)
    return CompileError(msg, where=str(loc) if loc else None, fix=fix, details=details)


class _FunctionVerifier:
    def __init__(self, fn: Function):
        self.fn = fn
        self.kind = fn.kind
        self.defined: dict = {}       # name -> Var (SSA: each name defined once)
        self.inited = {}              # direction -> the init that sets it up

    def define(self, v: Var, node) -> None:
        if v.name in self.defined:
            raise _err(f"'{v.name}' is defined twice in {self.fn.name} (the IR is SSA)", node,
                       "give every definition its own name")
        self.check_space(v.type, node, v.name)
        self.defined[v.name] = v

    def check_space(self, t, node, what: str) -> None:
        if not isinstance(t, TileValueType):
            return
        if self.kind is FunctionKind.AIV and t.space is not MemorySpace.Vec:
            raise _err(f"'{what}' is a {describe(t)} in Vector function {self.fn.name}; a Vector "
                       "core has only UB (Vec tiles)", node,
                       "do Cube work (Mat/Left/Right/Acc tiles) in the AIC function")
        if self.kind is FunctionKind.AIC and t.space is MemorySpace.Vec:
            raise _err(f"'{what}' is a {describe(t)} in Cube function {self.fn.name}; the Cube core "
                       "has no UB", node, "do Vector work (Vec tiles) in the AIV function")

    # -- expressions --------------------------------------------------------------------
    def expr(self, e, scope: set, node) -> None:
        if isinstance(e, Var):
            if e.name not in scope:
                raise _err(f"'{e.name}' is used before it is defined", e if e.loc else node,
                           "define it earlier (values defined inside a loop or branch are not "
                           "visible outside it unless yielded)")
            d = self.defined[e.name]
            if d.type != e.type:
                raise _err(f"'{e.name}' is used as {describe(e.type)} but defined as "
                           f"{describe(d.type)}", e if e.loc else node)
        elif isinstance(e, Const):
            pass
        elif isinstance(e, BinOp):
            self.expr(e.lhs, scope, node)
            self.expr(e.rhs, scope, node)
            for x in (e.lhs, e.rhs):
                if not isinstance(x.type, ScalarType):
                    raise _err(f"operator {e.op} on a {describe(x.type)}", e if e.loc else node,
                               "use pl ops (pl.add, pl.adds, ...) on tiles")
        elif isinstance(e, UnaryOp):
            self.expr(e.operand, scope, node)
        elif isinstance(e, BufferAttr):
            self.expr(e.buffer, scope, node)
            if not isinstance(e.buffer.type, BufferType) or e.attr not in ("base", "size"):
                raise _err(f"'.{e.attr}' of {describe(e.buffer.type)}", e if e.loc else node,
                           "only reserved / imported buffers have .base and .size")
        elif isinstance(e, ExprList):
            for x in e.items:
                self.expr(x, scope, node)
        elif isinstance(e, Call):
            for a in e.args:
                self.expr(a, scope, node)
            self.call(e, node)
        else:
            raise _err(f"unexpected expression {type(e).__name__}", node)

    def call(self, c: Call, node) -> None:
        spec = lookup(c.op)
        where = c if c.loc else node
        if spec is None:
            raise _err(f"unknown op {c.op!r}", where)
        ops = spec.operands
        if len(c.args) != len(ops):
            raise _err(f"{c.op} takes {len(ops)} operands, got {len(c.args)}", where)
        args = dict(zip((p.name for p in ops), c.args))
        attrs = dict(c.attrs)
        try:
            t = infer(spec, self.kind, args, attrs)
        except OpError as e:
            raise _err(e.about(spec.dsl), where, e.fix) from None
        if t != c.type:
            raise _err(f"{spec.dsl} produces {describe(t)} but the IR says {describe(c.type)}", where)
        if c.op in _CROSS:
            if not self.inited:
                raise _err(f"{spec.dsl} before the pipe is initialised", where,
                           f"call {'aic' if self.kind is FunctionKind.AIC else 'aiv'}"
                           "_initialize_pipe(...) first")
            if self.kind in (FunctionKind.AIC, FunctionKind.AIV) and \
                    attrs.get("direction") is None:
                raise _err(f"{spec.dsl} without a direction", where)
            d = attrs.get("direction")
            if d is not None and d in (C2V, V2C) and d not in self.inited:
                raise _err(f"{spec.dsl} on the {d.name[4:]} direction, which no initialize_pipe "
                           f"of {self.fn.name} sets up", where,
                           f"initialise the pipe with DIR_{d.name[4:]} (or DIR_C2V | DIR_V2C)")

    # -- statements ---------------------------------------------------------------------
    def body(self, body, scope: set, top: bool) -> None:
        for s in body:
            for e in stmt_exprs(s):
                self.expr(e, scope, s)
            if isinstance(s, Assign):
                if s.var.type != s.value.type:
                    raise _err(f"'{s.var.name}' is declared {describe(s.var.type)} but assigned "
                               f"{describe(s.value.type)}", s)
                self.define(s.var, s)
                scope.add(s.var.name)
            elif isinstance(s, ExprStmt):
                if isinstance(s.value, Call) and s.value.op in _INIT:
                    if not top:
                        raise _err(f"{s.value.op} inside a loop or branch", s,
                                   "initialise the pipe once, at the top of the kernel")
                    for way in init_ways(dict(s.value.attrs)["dir_mask"]):
                        if way in self.inited:
                            raise _err(f"the {way.name[4:]} direction is initialised twice in "
                                       f"{self.fn.name}", s,
                                       "initialise each direction once per kernel (one init with "
                                       "DIR_C2V | DIR_V2C for both)",
                                       details=f"first initialised at {self.inited[way].loc}")
                        self.inited[way] = s
            elif isinstance(s, For):
                self.loop(s, scope)
            elif isinstance(s, If):
                self.branch(s, scope)
            elif isinstance(s, Return):
                if s.values and self.kind in (FunctionKind.AIC, FunctionKind.AIV):
                    raise _err("AIC/AIV kernels return no values", s,
                               "write results to an output tensor with pl.store")
            elif isinstance(s, (ReserveBuffer, ImportPeerBuffer)):
                self.buffer(s, top)
                self.define(s.var, s)
                scope.add(s.var.name)
            else:
                raise _err(f"unexpected statement {type(s).__name__}", s)

    def loop(self, s: For, scope: set) -> None:
        for e, what in ((s.start, "start"), (s.stop, "stop"), (s.step, "step")):
            if not isinstance(e.type, ScalarType):
                raise _err(f"loop {what} is a {describe(e.type)}", s, "loop bounds are scalars")
        if not (len(s.iter_args) == len(s.inits) == len(s.yields) == len(s.results)):
            raise _err("loop-carried values, inits, yields and results differ in number", s)
        inner = set(scope)
        self.define(s.var, s)
        inner.add(s.var.name)
        for v, init in zip(s.iter_args, s.inits):
            if v.type != init.type:
                raise _err(f"loop-carried '{v.name}' is {describe(v.type)} but starts as "
                           f"{describe(init.type)}", s)
            self.define(v, s)
            inner.add(v.name)
        self.body(s.body, inner, False)
        for v, y in zip(s.iter_args, s.yields):
            self.expr(y, inner, s)
            if y.type != v.type:
                raise _err(f"loop-carried '{v.name}' is {describe(v.type)} but the loop yields "
                           f"{describe(y.type)}", s, "a loop-carried value must keep its type")
        for r, v in zip(s.results, s.iter_args):
            if r.type != v.type:
                raise _err(f"loop result '{r.name}' has the wrong type", s)
            self.define(r, s)
            scope.add(r.name)

    def branch(self, s: If, scope: set) -> None:
        if not isinstance(s.cond.type, ScalarType):
            raise _err(f"if condition is a {describe(s.cond.type)}", s)
        for body, ys in ((s.then_body, s.then_yields), (s.else_body, s.else_yields)):
            inner = set(scope)
            self.body(body, inner, False)
            if len(ys) != len(s.results):
                raise _err("if branches yield a different number of values", s)
            for y, r in zip(ys, s.results):
                self.expr(y, inner, s)
                if y.type != r.type:
                    raise _err(f"'{r.name}' is {describe(r.type)} in one branch and "
                               f"{describe(y.type)} in the other", s)
        for r in s.results:
            self.define(r, s)
            scope.add(r.name)

    def buffer(self, s, top: bool) -> None:
        what = (ReserveBufferOp if isinstance(s, ReserveBuffer) else ImportPeerBufferOp).call_name
        if not top:
            raise _err(f"{what} inside a loop or branch", s,
                       "declare ring buffers at the top of the kernel")
        want = "reserve" if isinstance(s, ReserveBuffer) else "import"
        if s.var.type != BufferType(want):
            raise _err(f"{what} result has type {s.var.type}", s)
        if isinstance(s, ReserveBuffer):
            if not isinstance(s.size, int) or s.size <= 0:
                raise _err(f"reserve_buffer size must be a positive number of bytes, got {s.size!r}",
                           s, "size=SLOT_NUM * SLOT_SIZE")
            if s.base is not AUTO and (not isinstance(s.base, int) or s.base < 0
                                           or s.base % ALIGNMENT):
                raise _err(f"reserve_buffer base {s.base!r} is not a {ALIGNMENT}-byte aligned "
                           "address", s, f"use base=pl.AUTO or a multiple of {ALIGNMENT}")
            want_space = SPACE_OF_KIND.get(self.kind)
            if s.memory_space != want_space:
                raise _err(f"reserve_buffer in a {self.kind.value} function lives in "
                           f"{want_space}, not {s.memory_space}", s)
            others = [x for x in self.fn.body if isinstance(x, ReserveBuffer) and x.name == s.name]
            if others[0] is not s:
                raise _err(f"reserve_buffer name {s.name!r} is declared twice in {self.fn.name}", s)
        used = {c.op for st in walk(self.fn.body) for e in stmt_exprs(st) for c in calls(e)
                if any(isinstance(a, Var) and a.name == s.var.name for a in c.args[:2])}
        if isinstance(s, ReserveBuffer) and not used & _CONSUMER and \
                self.kind is not FunctionKind.InCore:
            raise _err(f"reserve_buffer {s.name!r} in {self.fn.name}, which never TPOPs from it: "
                       "only the consumer owns (reserves) the ring", s,
                       "in the producer use pl.import_peer_buffer(name=..., peer_func=consumer)")
        if isinstance(s, ImportPeerBuffer) and not used & _PRODUCER and \
                self.kind is not FunctionKind.InCore:
            raise _err(f"import_peer_buffer {s.name!r} in {self.fn.name}, which never TPUSHes to "
                       "it: only the producer imports the consumer's ring", s,
                       "in the consumer use pl.reserve_buffer(name=..., size=..., base=pl.AUTO)")

    def run(self) -> None:
        scope = set()
        for p in self.fn.params:
            if not isinstance(p.type, (TensorType, ScalarType)):
                raise _err(f"parameter '{p.name}' is a {describe(p.type)}", self.fn,
                           "kernel parameters are GM tensors or scalars")
            self.define(p, self.fn)
            scope.add(p.name)
        self.body(self.fn.body, scope, True)


def verify_function(fn: Function) -> None:
    _FunctionVerifier(fn).run()


def check_peers(program: Program) -> None:
    """Every import_peer_buffer names an existing peer function and one of its buffers."""
    for fn in program.functions:
        for s in fn.body:
            if not isinstance(s, ImportPeerBuffer):
                continue
            peer = program.function(s.peer_func)
            if peer is None:
                have = ", ".join(f.name for f in program.functions if f is not fn) or "none"
                raise _err(f"import_peer_buffer names peer_func {s.peer_func!r}, which is not in "
                           f"program {program.name!r} (functions: {have})", s,
                           "pass the consumer function to pl.program(...) along with this one")
            if peer is fn:
                raise _err("import_peer_buffer names its own function as the peer", s,
                           "peer_func is the paired consumer function on the other core")
            names = [x.name for x in peer.body if isinstance(x, ReserveBuffer)]
            if s.name not in names:
                raise _err(f"import_peer_buffer: {peer.name} reserves no buffer named {s.name!r}"
                           + (f" (it reserves {', '.join(map(repr, names))})" if names else ""), s,
                           f"use the name given to pl.reserve_buffer in {peer.name}")
            if fn.kind in (FunctionKind.AIC, FunctionKind.AIV) and peer.kind is fn.kind:
                raise _err(f"import_peer_buffer: peer {peer.name} runs on the same core kind "
                           f"({fn.kind.value})", s, "pair an AIC function with an AIV function")


def verify(program: Program) -> Program:
    """Check ``program``; raises CompileError at the first problem, else returns it."""
    seen = set()
    for fn in program.functions:
        if fn.name in seen:
            raise _err(f"two functions are called {fn.name!r}", fn)
        seen.add(fn.name)
        verify_function(fn)
    check_peers(program)
    return program
