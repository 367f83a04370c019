"""IR -> DSL source.  The output is valid ``pl`` source: parsing it back (``pl.parse``)
gives a structurally equal IR.  Loop-carried values and branch results are printed in
the explicit form ``for i, (x,) in pl.range(..., init_values=(x0,)): ... x1 = pl.yield_(v)``.
"""
from __future__ import annotations

from .nodes import (Assign, BinOp, BufferAttr, Call, Const, Expr, ExprList, ExprStmt, For, Function, If,
                    ImportPeerBuffer, Program, ReserveBuffer, Return, UnaryOp, Var)
from .core import Operation
from .vocab import AUTO, FunctionKind
from .ops import DIRS, REQUIRED as _REQ, SPLITS, lookup
from ..arch.vocab import TileLayout
from .types import MemorySpace, Type

_IND = "    "
_DECOR = {FunctionKind.AIC: "@pl.aic", FunctionKind.AIV: "@pl.aiv", FunctionKind.InCore: "@pl.incore",
          FunctionKind.Group: '@pl.incore(core="group")'}


def print_expr(e: Expr, kind: FunctionKind = FunctionKind.InCore) -> str:
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Const):
        return repr(e.value)
    if isinstance(e, BinOp):
        return f"{_sub(e.lhs, kind)} {e.op} {_sub(e.rhs, kind)}"
    if isinstance(e, UnaryOp):
        sep = " " if e.op == "not" else ""
        return f"{e.op}{sep}{_sub(e.operand, kind)}"
    if isinstance(e, BufferAttr):
        return f"{e.buffer.name}.{e.attr}"
    if isinstance(e, ExprList):
        return "[" + ", ".join(print_expr(x, kind) for x in e.items) + "]"
    if isinstance(e, Call):
        return _call(e, kind)
    raise TypeError(f"cannot print {type(e).__name__}")


def _sub(e: Expr, kind) -> str:
    s = print_expr(e, kind)
    return f"({s})" if isinstance(e, (BinOp, UnaryOp)) else s


def print_attr(kind_: str, v) -> str:
    if kind_ == "shape":
        return "[" + ", ".join(str(x) for x in v) + "]"
    if kind_ == "dtype":
        return f"pl.{v}"
    if kind_ == "space":
        return f"pl.{v.value}" if isinstance(v, MemorySpace) else repr(v)
    if kind_ == "split":
        return f"pl.{SPLITS[v]}"
    if kind_ == "dir":
        return f"pl.{DIRS[v]}"
    if kind_ == "pipe":
        return f"pl.{v.name}"
    if kind_ == "type":
        return str(v) if isinstance(v, Type) else repr(v)
    if kind_ == "layout":
        return f"pl.{v.name}" if isinstance(v, TileLayout) else repr(v)
    return repr(v)


def _call(c: Call, kind) -> str:
    spec = lookup(c.op)
    if spec is None:
        raise TypeError(f"unknown op {c.op!r}")
    args = dict(zip((p.name for p in spec.operands), c.args))
    attrs = dict(c.attrs)
    parts = []
    for p in spec.params:
        if p.name == "direction" and kind in (FunctionKind.AIC, FunctionKind.AIV):
            continue   # inferred from the core
        if p.operand:
            v = args.get(p.name)
            if v is None:
                continue
            if p.default is not _REQ and isinstance(v, Const) and v.value == p.default \
                    and type(v.value) is type(p.default):
                continue
            s = print_expr(v, kind)
        else:
            v = attrs.get(p.name)
            if p.default is not _REQ and v == p.default:
                continue
            s = print_attr(p.kind, v)
        parts.append(s if p.default is _REQ else f"{p.name}={s}")
    return f"pl.{spec.dsl}({', '.join(parts)})"


def _targets(vs) -> str:
    return ", ".join(v.name for v in vs) if len(vs) != 1 else vs[0].name


def _yield(results, values, kind, ind: str) -> list:
    if not results:
        return []
    vals = ", ".join(print_expr(v, kind) for v in values)
    return [f"{ind}{_targets(results)} = pl.yield_({vals})"]


def print_body(body, kind, depth: int) -> list:
    ind = _IND * depth
    out = []
    for s in body:
        if isinstance(s, Assign):
            out.append(f"{ind}{s.var.name} = {print_expr(s.value, kind)}")
        elif isinstance(s, ExprStmt):
            out.append(f"{ind}{print_expr(s.value, kind)}")
        elif isinstance(s, ReserveBuffer):
            base = "pl.AUTO" if s.base is AUTO else hex(s.base)
            out.append(f'{ind}{s.var.name} = pl.reserve_buffer(name={s.name!r}, size={s.size}, '
                       f'base={base})')
        elif isinstance(s, ImportPeerBuffer):
            out.append(f"{ind}{s.var.name} = pl.import_peer_buffer(name={s.name!r}, "
                       f"peer_func={s.peer_func})")
        elif isinstance(s, For):
            rng = ", ".join(print_expr(x, kind) for x in (s.start, s.stop, s.step))
            if s.iter_args:
                inits = ", ".join(print_expr(x, kind) for x in s.inits)
                its = ", ".join(v.name for v in s.iter_args)
                out.append(f"{ind}for {s.var.name}, ({its},) in pl.range({rng}, "
                           f"init_values=({inits},)):")
            else:
                out.append(f"{ind}for {s.var.name} in pl.range({rng}):")
            inner = print_body(s.body, kind, depth + 1) + _yield(s.results, s.yields, kind,
                                                                 _IND * (depth + 1))
            out.extend(inner or [f"{ind}{_IND}pass"])
        elif isinstance(s, If):
            out.append(f"{ind}if {print_expr(s.cond, kind)}:")
            then = print_body(s.then_body, kind, depth + 1) + _yield(
                s.results, s.then_yields, kind, _IND * (depth + 1))
            out.extend(then or [f"{ind}{_IND}pass"])
            els = print_body(s.else_body, kind, depth + 1) + _yield(
                s.results, s.else_yields, kind, _IND * (depth + 1))
            if els:
                out.append(f"{ind}else:")
                out.extend(els)
        elif isinstance(s, Return):
            vals = ", ".join(print_expr(v, kind) for v in s.values)
            out.append(f"{ind}return {vals}".rstrip())
        else:
            raise TypeError(f"cannot print {type(s).__name__}")
    return out


def print_function(f: Function) -> str:
    if isinstance(f, Operation):         # a pl.func op: printed through its tree form
        from .convert import op_to_function
        f = op_to_function(f)
    params = ", ".join(f"{p.name}: {p.type}" for p in f.params)
    deco = _DECOR[f.kind]
    opts = ([f"split=pl.{SPLITS[f.split]}"] if f.split is not None else []) + \
        ([f"slot_num={f.slot_num}"] if f.slot_num is not None else [])
    if opts:
        deco += f"({', '.join(opts)})"
    lines = [deco, f"def {f.name}({params}):"]
    lines += print_body(f.body, f.kind, 1) or [f"{_IND}pass"]
    return "\n".join(lines) + "\n"


def print_program(p: Program) -> str:
    """The whole program as a DSL module (``pl.parse`` reads it back)."""
    if isinstance(p, Operation):         # a pl.program op: printed through its tree form
        from .convert import to_tree
        p = to_tree(p)
    parts = ["import ptopipe.language as pl\n"]
    for f in p.functions:
        parts.append("\n" + print_function(f))
    names = ", ".join(f.name for f in p.functions)
    parts.append(f"\nprogram = pl.program({names}, name={p.name!r})\n")
    return "".join(parts)


def to_source(node) -> str:
    if isinstance(node, Operation):      # a pl.program op: printed through its tree form
        from .convert import to_tree
        node = to_tree(node)
    if isinstance(node, Program):
        return print_program(node)
    if isinstance(node, Function):
        return print_function(node)
    return print_expr(node)
