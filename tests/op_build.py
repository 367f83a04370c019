"""Op-IR programs built op by op in tests (programs the DSL parser would not build: a
value defined twice, a result of the wrong type, a lone kernel of a pair), and equality
with value names.

``program(*funcs, name=)``: a ``pl.program`` op of the given ``pl.func`` ops, NOT verified
(what :func:`ptopipe.language.program` would refuse is what these tests hand the verifier).

``Function(name, kind, x=type, ...)``: a ``pl.func`` under construction; ``f["x"]`` is a
parameter, ``f.op(OpClass, ..., result_types=[t], name="a", loc=...)`` appends one op built
from its fields (:meth:`ptopipe.ir.opdefs.OpClass.build`) and returns it, ``f.const(v)`` an
index constant's value, ``f.func`` the ``pl.func`` op.

``dsl_form(op)``: a copy of ``op`` without the attributes passes add that DSL source does
not spell (tile addresses, resolved peer bases, ring annotations, the platform compiled
for; a ``pl.func``'s split and slot_num stay: its decorator spells them) - what a program
printed as DSL and parsed back can equal.

``same(a, b)``: None when ``a`` and ``b`` are structurally equal up to renaming AND name
their values alike (their op-IR text, which prints every name hint and no locations, is the
same), else where they first differ.
"""
from __future__ import annotations

from ptopipe.ir import INDEX, Block, Operation, Region, first_difference, print_ir
from ptopipe.ir.opdefs import OP_CLASSES, ConstOp, FuncOp, ProgramOp


def program(*funcs: Operation, name: str = "p") -> Operation:
    top = Block()
    for f in funcs:
        top.append(f)
    return Operation(ProgramOp.name, (), (), {"sym_name": name}, (Region([top]),))


class Function:
    def __init__(self, name: str, kind, loc=None, **params):
        self.block = Block(list(params.values()), list(params))
        self.func = Operation(FuncOp.name, (), (), {"sym_name": name, "kind": kind},
                              (Region([self.block]),), loc)

    def __getitem__(self, param: str):
        return next(a for a in self.block.args if a.name == param)

    def op(self, cls, *, result_types=(), name=None, loc=None, **fields) -> Operation:
        names = [name] * len(result_types) if name is not None else None
        return self.block.append(cls.build(result_types=result_types, loc=loc, result_names=names,
                                           **fields))

    def const(self, value, type_=INDEX):
        return self.op(ConstOp, result_types=[type_], value=value).results[0]


def same(a: Operation, b: Operation) -> str | None:
    d = first_difference(a, b)
    if d is not None:
        return d
    ta, tb = print_ir(a).splitlines(), print_ir(b).splitlines()
    for k, (x, y) in enumerate(zip(ta, tb)):
        if x != y:
            return f"value names differ at op-IR line {k + 1}: {x.strip()!r} != {y.strip()!r}"
    return None


def dsl_form(op: Operation) -> Operation:
    out = op.clone()
    for o in out.walk():
        cls = OP_CLASSES.get(o.name)
        if cls is None or o.is_a(FuncOp):
            continue
        for f in cls.attributes_def():
            if not f.param:
                o.attributes.pop(f.key, None)
    return out
