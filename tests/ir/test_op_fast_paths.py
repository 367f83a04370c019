"""The op IR's hot paths agree with the plain Python they stand for:

* ``op.name`` on an instance is :class:`~ptopipe.ir.core.Operation`'s slot (no op class keeps
  ``name`` in its own dict), while ``TPush.name`` on the class is its op name;
* ``op.is_a(*classes)`` (a lookup in the class's ancestor set) is ``isinstance(op, classes)``
  for every op class and every combination of classes;
* the op verifier's per-class roles (opens a function / pipe initialisation / cross-core op)
  are the isinstance tests of its rules, for every class, looked up or computed;
* ``pl.const``'s verifier accepts exactly what ``const_type_ok`` accepts and words a
  misshapen constant as ``_shape`` does;
* every accessor reads what its field declares (operand position, attribute key and
  default, result index);
* a loop's or branch's carried / yielded types compared identity-first: an equal copy of
  a type still verifies, an unequal one still does not.
"""
from __future__ import annotations

import enum

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptopipe.errors import CompileError
from ptopipe.ir import Block, Operation, Region, op_verifier, verify_ops
from ptopipe.ir.opdefs import (CROSS_CORE_OPS, INITIALIZE_PIPE, OP_CLASSES, ConstOp, ForOp,
                               FuncOp, IfOp, InitializePipe, OpClass, TPush, const_type_ok)
from ptopipe.ir.ops import REQUIRED
from ptopipe.ir.types import (BOOL, INDEX, NONE, MemorySpace, ScalarType, TensorType,
                              TileValueType)

from ir_programs import generate

#: every op class, the field-sharing bases and the plain Operation (arith ops)
_CLASSES = sorted(set(OP_CLASSES.values()) | {InitializePipe, OpClass, Operation},
                  key=lambda c: c.__name__)


def _instance(cls):
    return Operation(cls.name) if isinstance(cls.name, str) else Operation.__new__(cls)


@pytest.mark.parametrize("cls", sorted(OP_CLASSES.values(), key=lambda c: c.__name__),
                         ids=lambda c: c.__name__)
def test_an_op_name_is_the_instance_slot_and_the_class_name(cls):
    assert "name" not in vars(cls)                 # else instance reads go through it
    assert type(cls).__dict__.get("name") is not None
    op = Operation(cls.name)
    assert type(op) is cls and op.name == cls.name and isinstance(cls.name, str)
    assert Operation.__dict__["name"].__get__(op) is op.name


def test_the_name_slot_stays_writable_and_the_class_name_is_not_shadowed():
    op = Operation(TPush.name)
    op.name = "pl.renamed"
    assert op.name == "pl.renamed" and TPush.name == "pl.tpush"
    assert InitializePipe.name is None             # (shares fields; defines no op)
    assert OpClass.name is None


@settings(max_examples=200, deadline=None)
@given(who=st.sampled_from(_CLASSES), defs=st.lists(st.sampled_from(_CLASSES), max_size=5))
def test_is_a_is_isinstance(who, defs):
    op = _instance(who)
    assert op.is_a(*defs) == isinstance(op, tuple(defs))


@pytest.mark.parametrize("cls", _CLASSES, ids=lambda c: c.__name__)
def test_the_verifier_roles_are_the_isinstance_tests_of_its_rules(cls):
    op = _instance(cls)
    want = ((op_verifier._FUNC if isinstance(op, FuncOp) else 0)
            | (op_verifier._INIT if isinstance(op, INITIALIZE_PIPE) else
               op_verifier._CROSS if isinstance(op, CROSS_CORE_OPS) else 0))
    assert op_verifier._role(cls) == want          # computed
    assert op_verifier._ROLES[cls] == want         # and what the walk looks up (made at import)


# -- pl.const's verifier: its inline accept against const_type_ok ------------------------------
class _Scalar(ScalarType):
    """A ScalarType subclass (the inline accept takes exact classes only)."""


class _Level(enum.IntEnum):
    LOW = 1


# (a str is never a constant, whatever its characters: drawn from a few, not from all of unicode,
# whose table hypothesis would build for them - a second of CPU)
_CONST_VALUES = st.one_of(st.integers(), st.floats(), st.booleans(), st.none(),
                          st.text("a\u00e9\U0001f600", max_size=2),
                          st.sampled_from([_Level.LOW, np.float32(1.5), np.int64(3), 1j, (1,)]))
_CONST_TYPES = st.sampled_from([INDEX, BOOL, ScalarType("f32"), _Scalar("index"), NONE,
                                TileValueType((16, 32), "f32", MemorySpace.Vec),
                                TensorType((16, 32), "f32")])


@settings(max_examples=300, deadline=None)
@given(value=_CONST_VALUES, t=_CONST_TYPES)
def test_a_constant_verifies_exactly_when_const_type_ok_accepts_it(value, t):
    op = Operation(ConstOp.name, (), [t], {"value": value})
    if const_type_ok(value, t):
        verify_ops(op)
    else:
        with pytest.raises(CompileError, match="cannot have type"):
            verify_ops(op)


@pytest.mark.parametrize("operands, types, attrs, regions, message", [
    ((1,), [INDEX], {"value": 1}, 0, "takes 0 operand"),
    ((), [], {"value": 1}, 0, "has 1 result"),
    ((), [INDEX, INDEX], {"value": 1}, 0, "has 1 result"),
    ((), [INDEX], {}, 0, "needs attribute 'value'"),
    ((), [INDEX], {"value": 1}, 1, "has 0 region"),
])
def test_a_misshapen_constant_is_worded_as_before(operands, types, attrs, regions, message):
    vals = Block([INDEX] * len(operands)).args
    op = Operation(ConstOp.name, vals, types, attrs, [Region([Block()]) for _ in range(regions)])
    with pytest.raises(CompileError, match=message):
        verify_ops(op)


# -- the accessors: one call each, as the fields declare -------------------------------------------
_FIELDED = sorted((c for c in OP_CLASSES.values() if c.fields), key=lambda c: c.__name__)


@settings(max_examples=200, deadline=None)
@given(cls=st.sampled_from(_FIELDED), data=st.data())
def test_an_accessor_reads_what_its_field_declares(cls, data):
    ops = cls.operands_def()
    n = len(ops) + data.draw(st.integers(0, 2)) * any(f.kind == "values" for f in ops)
    operands = Block([INDEX] * n).args
    attrs = {f.key: data.draw(st.integers()) for f in cls.attributes_def() if data.draw(st.booleans())}
    op = Operation(cls.name, operands, [INDEX] * len(cls.results_def()), dict(attrs))
    for f in cls.attributes_def():
        assert f.key == (f._key or f.attr)
        if f.key in attrs:
            assert getattr(op, f.attr) == attrs[f.key]
        elif f.default is REQUIRED:
            with pytest.raises(CompileError, match=f"has no attribute '{f.key}'"):
                getattr(op, f.attr)
        else:
            assert getattr(op, f.attr) is f.default
    for k, f in enumerate(ops):
        # (the fixed operands after a variadic one count from the end)
        nvar = n - (len(ops) - 1)
        var = [j for j, g in enumerate(ops) if g.kind == "values"]
        start = k if not var or k <= var[0] else k + nvar - 1
        want = operands[start:start + nvar] if f.kind == "values" else operands[start]
        assert getattr(op, f.attr) == want
    for k, f in enumerate(cls.results_def()):
        assert getattr(op, f.attr) is op.results[k]


# -- loops and branches: carried and yielded types compared by identity first ---------------------
def _carried(op):
    """The Values whose types must agree for ``op`` (a pl.for / pl.if): per result, the
    result, (for) its init and block argument, and the value each region yields."""
    groups = []
    for k, res in enumerate(op.results):
        vals = [res] + [b.last.operands[k] for r in op.regions for b in r.blocks]
        if op.is_a(ForOp):
            vals += [op.operands[3 + k], op.regions[0].blocks[0].args[1 + k]]
        groups.append(vals)
    return groups


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), pick=st.integers(0, 10 ** 6), equal=st.booleans())
def test_a_carried_type_equal_but_not_identical_verifies_and_an_unequal_one_does_not(seed, pick, equal):
    prog = generate(160, seed)
    groups = [g for op in prog.walk() if op.is_a(ForOp, IfOp) for g in _carried(op)]
    if not groups:
        return
    group = groups[pick % len(groups)]
    v = group[(pick // len(groups)) % len(group)]
    t = v.type
    v.type = (TileValueType(tuple(t.shape), t.dtype, t.space) if equal
              else TileValueType(tuple(t.shape), "f16", t.space))
    assert v.type is not t and (v.type == t) is equal
    if equal:
        verify_ops(prog)
        verify_ops(prog, memo=False)
    else:
        with pytest.raises(CompileError):
            verify_ops(prog)
