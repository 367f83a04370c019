"""The op IR -> DSL source.  The output is valid ``pl`` source: parsing it back
(``pl.parse``) gives a structurally equal program with the same value names.
Loop-carried values and branch results are printed in the explicit form
``for i, (x,) in pl.range(..., init_values=(x0,)): ... x1 = pl.yield_(v)``.

A value with a name hint is printed as an assignment to that name.  An unnamed value with
one use in its own block is inlined into its user's expression when that keeps the order in
which the DSL evaluates them (it is among the most recent pending values, in operand order);
any other unnamed value is assigned to a fresh ``_tN``.  That is the form the DSL parser
reads back into the same ops.
"""
from __future__ import annotations

from ..arch.vocab import TileLayout
from .core import Operation
from .opdefs import (ARITH_BINARY, ARITH_UNARY, CALL_OPS, SCALAR_CALLS, BufferAttrOp, ConstOp, CopyOp, ForOp,
                     FuncOp, IfOp, ImportPeerBufferOp, ProgramOp, ReserveBufferOp, ReturnOp,
                     YieldOp, operand_groups)
from .ops import DIRS, REQUIRED as _REQ, SPLITS
from .types import MemorySpace, Type
from .vocab import AUTO, FunctionKind

_IND = "    "
_DECOR = {FunctionKind.AIC: "@pl.aic", FunctionKind.AIV: "@pl.aiv", FunctionKind.InCore: "@pl.incore",
          FunctionKind.Group: '@pl.incore(core="group")'}


class _Expr:
    """A printed expression: its ``text``, whether it needs parentheses as an operand of an
    operator (``compound``), and the ConstOp it is when it is an inlined constant."""
    __slots__ = ("text", "compound", "const")

    def __init__(self, text: str, compound: bool = False, const=None):
        self.text, self.compound, self.const = text, compound, const

    def sub(self) -> str:
        return f"({self.text})" if self.compound else self.text


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


class _FunctionPrinter:
    def __init__(self, func: Operation):
        self.kind = func.kind
        names = set()
        for o in func.walk():
            names.update([v.name for v in o.results])
            for r in o.regions:
                for b in r.blocks:
                    names.update([a.name for a in b.args])
        names.discard(None)
        names.discard("")
        self.names = names          # every name hint of the function (for fresh names)
        self.var = {}               # Value -> the name it is printed as
        self.n = 0

    def define(self, v) -> str:
        name = v.name
        if not name:
            while True:
                name = f"_t{self.n}"
                self.n += 1
                if name not in self.names:
                    self.names.add(name)
                    break
        self.var[v] = name
        return name

    def ref(self, v, pending: dict) -> _Expr:
        e = pending.pop(v, None)
        if e is not None:
            return e
        name = self.var.get(v)
        if name is None:
            raise TypeError(f"value %{v.name or '?'} is used but never defined")
        return _Expr(name)

    # -- expressions ----------------------------------------------------------------------
    def expr(self, op, pending: dict) -> _Expr:
        name, cls = op.name, op.__class__
        if cls is ConstOp:
            return _Expr(repr(op.value), const=op)
        if name in ARITH_BINARY:
            x, y = (self.ref(v, pending) for v in op.operands)
            sym = ARITH_BINARY[name]
            if sym in SCALAR_CALLS:
                return _Expr(f"pl.{sym}({x.text}, {y.text})")
            return _Expr(f"{x.sub()} {sym} {y.sub()}", True)
        if name in ARITH_UNARY:
            sym = ARITH_UNARY[name]
            x = self.ref(op.operands[0], pending)
            return _Expr(f"{sym}{' ' if sym == 'not' else ''}{x.sub()}", True)
        if cls is BufferAttrOp:
            return _Expr(f"{self.ref(op.buffer, pending).text}.{op.attr}")
        if cls is CopyOp:
            return self.ref(op.source, pending)
        spec = CALL_OPS.get(name)
        if spec is None:
            raise TypeError(f"cannot print {name} as DSL source")
        args = {}
        for p, g in zip(spec.operands, operand_groups(spec, op.operands).values()):
            if isinstance(g, list):
                args[p.name] = _Expr("[" + ", ".join(self.ref(v, pending).text for v in g) + "]")
            else:
                args[p.name] = self.ref(g, pending)
        parts = []
        for p in spec.params:
            if p.name == "direction" and self.kind in (FunctionKind.AIC, FunctionKind.AIV):
                continue   # inferred from the core
            if p.operand:
                e = args.get(p.name)
                if e is None:
                    continue
                c = e.const
                if p.default is not _REQ and c is not None and c.value == p.default \
                        and type(c.value) is type(p.default):
                    continue
                s = e.text
            else:
                v = op.attributes.get(p.name)
                if p.default is not _REQ and v == p.default:
                    continue
                s = print_attr(p.kind, v)
            parts.append(s if p.default is _REQ else f"{p.name}={s}")
        return _Expr(f"pl.{spec.dsl}({', '.join(parts)})")

    # -- statements -----------------------------------------------------------------------
    def block(self, block, depth: int) -> tuple:
        """(lines, the yielded values' expressions) of ``block``."""
        ind = _IND * depth
        out, pending, term = [], {}, ()
        for op in block:
            cls = op.__class__
            if pending and op.operands:
                self.settle(op, pending, out, ind)
            mark = len(out)
            if cls is YieldOp:
                term = tuple(self.ref(v, pending) for v in op.operands)
            elif cls is ReturnOp:
                vals = ", ".join(self.ref(v, pending).text for v in op.operands)
                out.append(f"{ind}return {vals}".rstrip())
            elif cls is ForOp:
                out.extend(self.loop(op, pending, depth))
            elif cls is IfOp:
                out.extend(self.branch(op, pending, depth))
            elif cls is ReserveBufferOp:
                base = "pl.AUTO" if op.base is AUTO else hex(op.base)
                out.append(f"{ind}{self.define(op.buf)} = pl.reserve_buffer(name={op.buffer_name!r}, "
                           f"size={op.size}, base={base})")
            elif cls is ImportPeerBufferOp:
                out.append(f"{ind}{self.define(op.buf)} = pl.import_peer_buffer("
                           f"name={op.buffer_name!r}, peer_func={op.peer_func})")
            else:
                e = self.expr(op, pending)
                r = op.results[0] if op.results else None
                if r is None or (r.name is None and not r.uses):
                    out.append(f"{ind}{e.text}")
                elif r.name is None and len(r.uses) == 1 and r.uses[0].owner.parent is block:
                    pending[r] = e
                    continue
                else:
                    out.append(f"{ind}{self.define(r)} = {e.text}")
            # values left pending were not consumed by this statement: assign them before
            # it, in definition order (keeps the evaluation order)
            if pending:
                out[mark:mark] = [f"{ind}{self.define(v)} = {e.text}" for v, e in pending.items()]
                pending.clear()
        return out, term

    def settle(self, op, pending: dict, out: list, ind: str) -> None:
        """Inlining ``op``'s pending operands keeps the evaluation order only when they
        are the most recent pending values, in operand order; else assign them all."""
        mine = [v for v in op.operands if v in pending]
        if not mine:
            return
        keys = list(pending)
        if keys[len(keys) - len(mine):] != mine:
            out.extend(f"{ind}{self.define(v)} = {e.text}" for v, e in pending.items())
            pending.clear()

    def _yield(self, results, values, depth: int) -> list:
        if not results:
            return []
        targets = ", ".join(results)
        return [f"{_IND * depth}{targets} = pl.yield_({', '.join(v.text for v in values)})"]

    def loop(self, op, pending: dict, depth: int) -> list:
        ind = _IND * depth
        start, stop, step, *inits = (self.ref(v, pending) for v in op.operands)
        body = op.body
        iv = self.define(body.args[0])
        iters = [self.define(a) for a in body.args[1:]]
        lines, ys = self.block(body, depth + 1)
        results = [self.define(r) for r in op.results]
        rng = ", ".join(e.text for e in (start, stop, step))
        if iters:
            out = [f"{ind}for {iv}, ({', '.join(iters)},) in pl.range({rng}, "
                   f"init_values=({', '.join(e.text for e in inits)},)):"]
        else:
            out = [f"{ind}for {iv} in pl.range({rng}):"]
        inner = lines + self._yield(results, ys, depth + 1)
        return out + (inner or [f"{ind}{_IND}pass"])

    def branch(self, op, pending: dict, depth: int) -> list:
        ind = _IND * depth
        cond = self.ref(op.cond, pending)
        then, tys = self.block(op.then_block, depth + 1)
        els, eys = self.block(op.else_block, depth + 1)
        results = [self.define(r) for r in op.results]
        out = [f"{ind}if {cond.text}:"]
        then += self._yield(results, tys, depth + 1)
        out.extend(then or [f"{ind}{_IND}pass"])
        els += self._yield(results, eys, depth + 1)
        if els:
            out.append(f"{ind}else:")
            out.extend(els)
        return out

    def function(self, f) -> str:
        params = ", ".join(f"{self.define(p)}: {p.type}" for p in f.params)
        deco = _DECOR[f.kind]
        opts = ([f"split=pl.{SPLITS[f.split]}"] if f.split is not None else []) + \
            ([f"slot_num={f.slot_num}"] if f.slot_num is not None else [])
        if opts:
            deco += f"({', '.join(opts)})"
        lines = [deco, f"def {f.sym_name}({params}):"]
        lines += self.block(f.body, 1)[0] or [f"{_IND}pass"]
        return "\n".join(lines) + "\n"


def print_function(f) -> str:
    """A ``pl.func`` op as a decorated DSL function."""
    return _FunctionPrinter(f).function(f)


def print_program(p) -> str:
    """A ``pl.program`` op as a DSL module (``pl.parse`` reads it back)."""
    parts = ["import ptopipe.language as pl\n"]
    for f in p.functions:
        parts.append("\n" + print_function(f))
    names = ", ".join(f.sym_name for f in p.functions)
    parts.append(f"\nprogram = pl.program({names}, name={p.sym_name!r})\n")
    return "".join(parts)


def to_source(node) -> str:
    """A program or a function (a ``pl.program`` or ``pl.func`` op) as DSL source."""
    if isinstance(node, Operation) and node.is_a(FuncOp):
        return print_function(node)
    if isinstance(node, Operation) and node.is_a(ProgramOp):
        return print_program(node)
    raise TypeError(f"to_source prints a pl.program or a pl.func op, not {getattr(node, 'name', node)!r}")
