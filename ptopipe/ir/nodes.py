"""IR nodes: Program, Function, statements and expressions, as frozen dataclasses.

Every node carries its source location ``loc`` (file, line, col; col is 1-based).  The
location does not take part in equality, so ``==`` on nodes *is* structural equality.
Values are in SSA form: every :class:`Var` is defined once (assignment, loop variable,
loop-carried value, loop / if result, parameter, buffer declaration).  Loop-carried
values are explicit: a :class:`For` has ``iter_args`` (initialised from ``inits``),
``yields`` (their next values, at the end of the body) and ``results`` (their values
after the loop); an :class:`If` yields ``results`` from both branches.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .types import Type
from .vocab import AUTO, FunctionKind, Loc  # noqa: F401  (the tree IR's vocabulary)


def _loc():
    return field(default=None, compare=False, repr=False)


# -- expressions --------------------------------------------------------------------------
class Expr:
    """Base class of expressions; ``type`` is the value's IR type."""


@dataclass(frozen=True)
class Var(Expr):
    name: str
    type: Type
    loc: Loc = _loc()


@dataclass(frozen=True)
class Const(Expr):
    value: Any           # int, float, bool or None (a null GM pointer)
    type: Type
    loc: Loc = _loc()


@dataclass(frozen=True)
class BinOp(Expr):
    """Scalar arithmetic / comparison: + - * // % == != < <= > >= and or."""
    op: str
    lhs: Expr
    rhs: Expr
    type: Type
    loc: Loc = _loc()


@dataclass(frozen=True)
class UnaryOp(Expr):
    op: str              # "-" | "not"
    operand: Expr
    type: Type
    loc: Loc = _loc()


@dataclass(frozen=True)
class BufferAttr(Expr):
    """``buf.base`` / ``buf.size`` of a reserved or imported ring buffer."""
    buffer: Var
    attr: str
    type: Type
    loc: Loc = _loc()


@dataclass(frozen=True)
class ExprList(Expr):
    """A list operand, e.g. the offsets of ``pl.load``."""
    items: tuple
    type: Type = None
    loc: Loc = _loc()


@dataclass(frozen=True)
class Call(Expr):
    """An op call: ``args`` are operand expressions, ``attrs`` compile-time attributes
    as ``((name, value), ...)`` in the op's parameter order (defaults filled in)."""
    op: str
    args: tuple
    attrs: tuple
    type: Type
    loc: Loc = _loc()

    def attr(self, name: str, default=None):
        for k, v in self.attrs:
            if k == name:
                return v
        return default


# -- statements ---------------------------------------------------------------------------
class Stmt:
    """Base class of statements."""


@dataclass(frozen=True)
class Assign(Stmt):
    var: Var
    value: Expr
    loc: Loc = _loc()


@dataclass(frozen=True)
class ExprStmt(Stmt):
    value: Expr
    loc: Loc = _loc()


@dataclass(frozen=True)
class For(Stmt):
    var: Var
    start: Expr
    stop: Expr
    step: Expr
    iter_args: tuple      # Vars bound to inits, then to yields of the previous iteration
    inits: tuple
    body: tuple
    yields: tuple
    results: tuple        # Vars holding the final values after the loop
    loc: Loc = _loc()


@dataclass(frozen=True)
class If(Stmt):
    cond: Expr
    then_body: tuple
    else_body: tuple
    then_yields: tuple
    else_yields: tuple
    results: tuple
    loc: Loc = _loc()


@dataclass(frozen=True)
class Return(Stmt):
    values: tuple = ()
    loc: Loc = _loc()


@dataclass(frozen=True)
class ReserveBuffer(Stmt):
    """``var = pl.reserve_buffer(name=, size=, base=AUTO | int)``; ``memory_space`` is
    inferred from the function's core: "UB" (Vector) or "L1" (Cube)."""
    var: Var
    name: str
    size: int
    base: Any             # AUTO or int
    memory_space: str | None
    loc: Loc = _loc()


@dataclass(frozen=True)
class ImportPeerBuffer(Stmt):
    """``var = pl.import_peer_buffer(name=, peer_func=)``: the base of the ReserveBuffer
    called ``name`` in function ``peer_func``."""
    var: Var
    name: str
    peer_func: str
    loc: Loc = _loc()


# -- functions ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Function:
    """A kernel.  ``split`` / ``slot_num`` are the ``@pl.incore(split=..., slot_num=...)``
    options of a mixed function (None: not given; ExpandMixedKernel picks the defaults)."""
    name: str
    kind: FunctionKind
    params: tuple         # Vars (TensorType or ScalarType)
    body: tuple
    loc: Loc = _loc()
    split: Any = None     # a TileSplitAxis or None
    slot_num: Any = None  # an int or None


@dataclass(frozen=True)
class Program:
    name: str
    functions: tuple

    def function(self, name: str) -> Function | None:
        for f in self.functions:
            if f.name == name:
                return f
        return None

    def by_kind(self, kind: FunctionKind) -> list:
        return [f for f in self.functions if f.kind is kind]


def walk(body):
    """Yield every statement of ``body`` (pre-order, into loops and branches)."""
    for s in body:
        yield s
        if isinstance(s, For):
            yield from walk(s.body)
        elif isinstance(s, If):
            yield from walk(s.then_body)
            yield from walk(s.else_body)


def calls(expr):
    """Yield every Call inside ``expr`` (post-order)."""
    if isinstance(expr, Call):
        for a in expr.args:
            if isinstance(a, _NESTING):     # (a leaf holds no call: no generator for it)
                yield from calls(a)
        yield expr
    elif isinstance(expr, (BinOp,)):
        yield from calls(expr.lhs)
        yield from calls(expr.rhs)
    elif isinstance(expr, UnaryOp):
        yield from calls(expr.operand)
    elif isinstance(expr, ExprList):
        for a in expr.items:
            if isinstance(a, _NESTING):
                yield from calls(a)


#: the expressions that may hold a Call (what :func:`calls` descends into)
_NESTING = (Call, BinOp, UnaryOp, ExprList)


def stmt_exprs(s) -> tuple:
    """The expressions a statement evaluates directly (not those of nested bodies)."""
    if isinstance(s, (Assign, ExprStmt)):
        return (s.value,)
    if isinstance(s, For):
        return (s.start, s.stop, s.step) + tuple(s.inits)
    if isinstance(s, If):
        return (s.cond,)
    if isinstance(s, Return):
        return tuple(s.values)
    return ()
