"""The op definitions of the op/region IR: every op name, once, with its verifier.

* the tile, cross-core and event ops are DERIVED from the op table :data:`.ops.OPS` (itself
  built from the arch op catalogue): op ``pl.<spec.name>``, operands = the spec's operand
  parameters in order (a ``values`` parameter, e.g. load offsets, takes the variadic rest),
  attributes = its attribute parameters, result = the spec's typing rule (none if the rule
  gives ``NONE``); the verifier re-runs that rule;
* the structural ops: ``pl.program``, ``pl.func``, ``pl.for`` (iter_args / ``pl.yield``),
  ``pl.if`` (with results), ``pl.yield``, ``pl.return``, ``pl.reserve_buffer``,
  ``pl.import_peer_buffer``, ``pl.buffer_attr`` (``buf.base`` / ``buf.size``),
  ``pl.const``, ``pl.copy`` (a named copy ``a = b``);
* scalar arithmetic ``arith.<name>``, one per operator of :data:`SCALAR_BINOPS` /
  :data:`SCALAR_UNOPS`, typed by :func:`scalar_result_type` (the DSL parser uses it too).

A verifier is ``verify(op, ctx)``; it raises ``ctx.error(...)`` (a CompileError at the op's
location).  Structure common to all ops (dominance, terminators) is checked by
:mod:`.op_verifier`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..arch.vocab import ALIGNMENT
from .nodes import AUTO, Const, FunctionKind
from .ops import OPS, OpError
from .types import (BOOL, INDEX, NONE, BufferType, NoneType, ScalarType, TensorType,
                    describe)

#: scalar operator (DSL / tree spelling) -> arith op name suffix
SCALAR_BINOPS = {"+": "add", "-": "sub", "*": "mul", "//": "floordiv", "%": "mod", "/": "div",
                 "|": "bitor", "&": "bitand", "==": "eq", "!=": "ne", "<": "lt", "<=": "le",
                 ">": "gt", ">=": "ge", "and": "and", "or": "or"}
SCALAR_UNOPS = {"-": "neg", "not": "not"}
_BOOL_RESULT = ("==", "!=", "<", "<=", ">", ">=", "and", "or")


def scalar_result_type(op: str, lhs: ScalarType, rhs: ScalarType) -> ScalarType:
    """The type of scalar ``lhs op rhs``: bool for comparisons and and/or, f32 for ``/``,
    else the common type (f32 if either side is f32, else index)."""
    if op in _BOOL_RESULT:
        return BOOL
    if op == "/":
        return ScalarType("f32")
    if lhs == rhs:
        return lhs
    return ScalarType("f32") if "f32" in (lhs.dtype, rhs.dtype) else INDEX


def unary_result_type(op: str, t: ScalarType) -> ScalarType:
    return BOOL if op == "not" else t


@dataclass(frozen=True)
class OpDef:
    """What an op name means: its verifier, whether it ends a block, and (for ops derived
    from the op table) the :class:`~.ops.OpSpec`."""
    name: str
    verify: Callable
    terminator: bool = False
    spec: object = None
    doc: str = ""


OPDEFS: dict = {}


def _def(name, verify, terminator=False, spec=None, doc=""):
    OPDEFS[name] = OpDef(name, verify, terminator, spec, doc)


def lookup_op(name: str) -> OpDef | None:
    return OPDEFS.get(name)


def _shape(op, ctx, operands=None, results=None, regions=0, attrs=()):
    if operands is not None and len(op.operands) != operands:
        raise ctx.error(f"{op.name} takes {operands} operand(s), got {len(op.operands)}", op)
    if results is not None and len(op.results) != results:
        raise ctx.error(f"{op.name} has {results} result(s), got {len(op.results)}", op)
    if len(op.regions) != regions:
        raise ctx.error(f"{op.name} has {regions} region(s), got {len(op.regions)}", op)
    for a in attrs:
        if a not in op.attributes:
            raise ctx.error(f"{op.name} needs attribute '{a}'", op)


def _single_block(op, ctx, r: int):
    blocks = op.regions[r].blocks
    if len(blocks) != 1:
        raise ctx.error(f"{op.name} region {r} must hold exactly one block, has {len(blocks)}", op)
    return blocks[0]


def _check_yield(op, ctx, block, what: str):
    y = block.last
    if y is None or y.name != "pl.yield":
        raise ctx.error(f"the {what} of {op.name} must end with pl.yield", y or op,
                        "terminate the region with pl.yield(values...)")
    got = [v.type for v in y.operands]
    want = [r.type for r in op.results]
    if len(got) != len(want):
        raise ctx.error(f"the {what} of {op.name} yields {len(got)} value(s) but the op has "
                        f"{len(want)} result(s)", y)
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            raise ctx.error(f"the {what} of {op.name} yields {describe(g)} as value {i}, but "
                            f"result {i} is {describe(w)}", y, "a yielded value must keep its type")


# -- structural ops ----------------------------------------------------------------------------
def _v_program(op, ctx):
    _shape(op, ctx, 0, 0, 1, ("sym_name",))
    if op.parent is not None:
        raise ctx.error("pl.program must be the top-level op", op)
    for f in _single_block(op, ctx, 0):
        if f.name != "pl.func":
            raise ctx.error(f"a pl.program holds pl.func ops, not {f.name}", f)


def _v_func(op, ctx):
    _shape(op, ctx, 0, 0, 1, ("sym_name", "kind"))
    if op.parent_op is None or op.parent_op.name != "pl.program":
        raise ctx.error("pl.func must be directly inside a pl.program", op)
    if not isinstance(op.attributes["kind"], FunctionKind):
        raise ctx.error(f"pl.func kind must be a function kind, got {op.attributes['kind']!r}", op)
    for a in _single_block(op, ctx, 0).args:
        if not isinstance(a.type, (TensorType, ScalarType)):
            raise ctx.error(f"parameter %{a.name or a.index} is a {describe(a.type)}", op,
                            "kernel parameters are GM tensors or scalars")


def _v_return(op, ctx):
    _shape(op, ctx, None, 0, 0)
    p = op.parent_op
    if p is None or p.name != "pl.func" or op.next is not None:
        raise ctx.error("pl.return must be the last op of a function body", op,
                        "remove the statements after it (or move the return to the end)")
    if op.operands and p.attributes["kind"] in (FunctionKind.AIC, FunctionKind.AIV):
        raise ctx.error("AIC/AIV kernels return no values", op,
                        "write results to an output tensor with pl.store")


def _v_yield(op, ctx):
    _shape(op, ctx, None, 0, 0)
    p = op.parent_op
    if p is None or p.name not in ("pl.for", "pl.if") or op.next is not None:
        raise ctx.error("pl.yield must be the last op of a pl.for / pl.if region", op)


def _v_for(op, ctx):
    _shape(op, ctx, None, None, 1)
    n = len(op.results)
    if len(op.operands) != 3 + n:
        raise ctx.error(f"pl.for takes start, stop, step and one init per result: "
                        f"{3 + n} operand(s), got {len(op.operands)}", op)
    for what, v in zip(("start", "stop", "step"), op.operands):
        if not isinstance(v.type, ScalarType):
            raise ctx.error(f"loop {what} is a {describe(v.type)}", op, "loop bounds are scalars")
    body = _single_block(op, ctx, 0)
    if len(body.args) != 1 + n:
        raise ctx.error(f"the body of pl.for takes the loop variable and {n} loop-carried "
                        f"value(s): {1 + n} block argument(s), got {len(body.args)}", op)
    if not isinstance(body.args[0].type, ScalarType):
        raise ctx.error(f"the loop variable is a {describe(body.args[0].type)}", op)
    for i, (init, arg, res) in enumerate(zip(op.operands[3:], body.args[1:], op.results)):
        if not (init.type == arg.type == res.type):
            raise ctx.error(f"loop-carried value {i}: init is {describe(init.type)}, block "
                            f"argument {describe(arg.type)}, result {describe(res.type)}", op,
                            "a loop-carried value keeps one type")
    _check_yield(op, ctx, body, "body")


def _v_if(op, ctx):
    _shape(op, ctx, 1, None, 2)
    if not isinstance(op.operands[0].type, ScalarType):
        raise ctx.error(f"if condition is a {describe(op.operands[0].type)}", op)
    for r, what in ((0, "then region"), (1, "else region")):
        b = _single_block(op, ctx, r)
        if b.args:
            raise ctx.error(f"the {what} of pl.if takes no block arguments", op)
        _check_yield(op, ctx, b, what)


def _top_level(op, ctx, what):
    p = op.parent_op
    if p is None or p.name != "pl.func":
        raise ctx.error(f"{what} inside a loop or branch", op,
                        "declare ring buffers at the top of the kernel")


def _v_reserve(op, ctx):
    _shape(op, ctx, 0, 1, 0, ("name", "size", "base", "memory_space"))
    _top_level(op, ctx, "reserve_buffer")
    if op.results[0].type != BufferType("reserve"):
        raise ctx.error(f"reserve_buffer result has type {op.results[0].type}", op)
    size, base = op.attributes["size"], op.attributes["base"]
    if not isinstance(size, int) or size <= 0:
        raise ctx.error(f"reserve_buffer size must be a positive number of bytes, got {size!r}",
                        op, "size=SLOT_NUM * SLOT_SIZE")
    if base is not AUTO and (not isinstance(base, int) or base < 0 or base % ALIGNMENT):
        raise ctx.error(f"reserve_buffer base {base!r} is not a {ALIGNMENT}-byte aligned address",
                        op, f"use base=pl.AUTO or a multiple of {ALIGNMENT}")


def _v_import(op, ctx):
    _shape(op, ctx, 0, 1, 0, ("name", "peer_func"))
    _top_level(op, ctx, "import_peer_buffer")
    if op.results[0].type != BufferType("import"):
        raise ctx.error(f"import_peer_buffer result has type {op.results[0].type}", op)


def _v_buffer_attr(op, ctx):
    _shape(op, ctx, 1, 1, 0, ("attr",))
    if not isinstance(op.operands[0].type, BufferType) or op.attributes["attr"] not in ("base", "size"):
        raise ctx.error(f"'.{op.attributes['attr']}' of {describe(op.operands[0].type)}", op,
                        "only reserved / imported buffers have .base and .size")
    if op.results[0].type != INDEX:
        raise ctx.error(f"buffer .{op.attributes['attr']} is an index, not "
                        f"{describe(op.results[0].type)}", op)


def const_type_ok(value, t) -> bool:
    if value is None:
        return isinstance(t, NoneType)
    if isinstance(value, bool):
        return isinstance(t, ScalarType)
    return isinstance(t, ScalarType) and isinstance(value, (int, float))


def _v_const(op, ctx):
    _shape(op, ctx, 0, 1, 0, ("value",))
    v, t = op.attributes["value"], op.results[0].type
    if not const_type_ok(v, t):
        raise ctx.error(f"constant {v!r} cannot have type {describe(t)}", op)


def _v_copy(op, ctx):
    _shape(op, ctx, 1, 1, 0)
    if op.operands[0].type != op.results[0].type:
        raise ctx.error(f"pl.copy of a {describe(op.operands[0].type)} yields "
                        f"{describe(op.results[0].type)}", op)


def _arith(sym, unary):
    def verify(op, ctx):
        _shape(op, ctx, 1 if unary else 2, 1, 0)
        for v in op.operands:
            if not isinstance(v.type, ScalarType):
                raise ctx.error(f"operator {sym} on a {describe(v.type)}", op,
                                "use pl ops (pl.add, pl.adds, ...) on tiles")
        ts = [v.type for v in op.operands]
        want = unary_result_type(sym, ts[0]) if unary else scalar_result_type(sym, *ts)
        if op.results[0].type != want:
            raise ctx.error(f"{op.name} produces {describe(want)} but the IR says "
                            f"{describe(op.results[0].type)}", op)
    return verify


_def("pl.program", _v_program, doc="the whole program: one region of pl.func ops")
_def("pl.func", _v_func, doc="a kernel: parameters are the entry block's arguments")
_def("pl.return", _v_return, terminator=True, doc="return from a function")
_def("pl.yield", _v_yield, terminator=True, doc="end of a for body / if branch")
_def("pl.for", _v_for, doc="for iv in range(start, stop, step) with loop-carried iter_args")
_def("pl.if", _v_if, doc="if cond: then region else: else region, with results")
_def("pl.reserve_buffer", _v_reserve, doc="seed 003 consumer ring buffer")
_def("pl.import_peer_buffer", _v_import, doc="seed 003 producer view of the peer's ring")
_def("pl.buffer_attr", _v_buffer_attr, doc="buf.base / buf.size")
_def("pl.const", _v_const, doc="a compile-time scalar (or None: a null GM pointer)")
_def("pl.copy", _v_copy, doc="a named copy of a value (DSL `a = b`)")
ARITH_BINARY = {f"arith.{n}": sym for sym, n in SCALAR_BINOPS.items()}
ARITH_UNARY = {f"arith.{n}": sym for sym, n in SCALAR_UNOPS.items()}
for _name, _sym in ARITH_BINARY.items():
    _def(_name, _arith(_sym, False), doc=f"scalar {_sym}")
for _name, _sym in ARITH_UNARY.items():
    _def(_name, _arith(_sym, True), doc=f"scalar unary {_sym}")


# -- ops derived from the op table ------------------------------------------------------------
class OperandView:
    """What the op table's typing rules read for a ``values`` parameter (``.items``)."""
    __slots__ = ("items",)

    def __init__(self, items):
        self.items = items


def operand_groups(spec, operands) -> dict:
    """Bind ``operands`` (flat) to the spec's operand parameters: name -> Value, or
    name -> list of Values for the one ``values`` parameter (which takes the rest)."""
    ops = spec.operands
    nvar = len(operands) - sum(1 for p in ops if p.kind == "value")
    out, i = {}, 0
    for p in ops:
        if p.kind == "values":
            out[p.name] = operands[i:i + nvar]
            i += nvar
        else:
            out[p.name] = operands[i]
            i += 1
    return out


def _typing_arg(v):
    """A Value as the typing rules see it: a constant as the tree's Const (rules read
    constant values), anything else as is (rules read ``.type``)."""
    d = getattr(v, "op", None)
    if d is not None and d.name == "pl.const":
        return Const(d.attributes["value"], v.type)
    return v


def _operand_key(v):
    d = getattr(v, "op", None)
    if d is not None and d.name == "pl.const":
        return v.type, d.attributes["value"]
    return v.type


def _derived(spec):
    fixed = sum(1 for p in spec.operands if p.kind == "value")
    variadic = any(p.kind == "values" for p in spec.operands)
    attr_names = tuple(p.name for p in spec.attr_params)

    def verify(op, ctx):
        # Memo (one verify_ops walk, ctx.memo): the typing rule reads only the op's name,
        # the core kind, its operands' types and constant values, its attributes and result
        # types, so an op whose key was verified in this walk verifies again.  Unhashable
        # attributes (lists) skip the memo.  The key is built for every table-derived op of
        # every walk: list comprehensions, which cost less than generators here.
        memo = getattr(ctx, "memo", None)
        key = None
        if memo is not None:
            try:
                key = (op.name, ctx.kind, tuple([_operand_key(v) for v in op.operands]),
                       tuple(op.attributes.items()), tuple([r.type for r in op.results]))
                if key in memo:
                    return
            except TypeError:
                key = None
        _verify(op, ctx)
        if key is not None:
            memo.add(key)

    def _verify(op, ctx):
        n = len(op.operands)
        if n < fixed or (n != fixed and not variadic):
            raise ctx.error(f"{op.name} takes {fixed}{'+' if variadic else ''} operand(s), got {n}",
                            op)
        _shape(op, ctx, None, None, 0, attr_names)
        args = {}
        for k, v in operand_groups(spec, op.operands).items():
            args[k] = OperandView(v) if isinstance(v, list) else _typing_arg(v)
        try:
            t = spec.infer(ctx.kind, args, op.attributes)
        except OpError as e:
            raise ctx.error(e.about(spec.dsl), op, e.fix) from None
        got = [r.type for r in op.results]
        want = [] if t is NONE else [t]
        if got != want:
            raise ctx.error(f"{spec.dsl} produces {describe(t) if want else 'no result'} but the "
                            f"IR says {', '.join(describe(g) for g in got) or 'no result'}", op)
    return verify


for _spec in OPS.values():
    _def(f"pl.{_spec.name}", _derived(_spec), spec=_spec, doc=_spec.doc)

#: op name -> OpSpec of the ops derived from the op table
CALL_OPS = {name: d.spec for name, d in OPDEFS.items() if d.spec is not None}
