"""The op IR's hot paths agree with the plain Python they stand for:

* ``op.name`` on an instance is :class:`~ptopipe.ir.core.Operation`'s slot (no op class keeps
  ``name`` in its own dict), while ``TPush.name`` on the class is its op name;
* ``op.is_a(*classes)`` (a lookup in the class's ancestor set) is ``isinstance(op, classes)``
  for every op class and every combination of classes;
* the op verifier's per-class roles (opens a function / pipe initialisation / cross-core op)
  are the isinstance tests of its rules, for every class, looked up or computed.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ptopipe.ir import Operation
from ptopipe.ir import op_verifier
from ptopipe.ir.opdefs import (CROSS_CORE_OPS, INITIALIZE_PIPE, OP_CLASSES, FuncOp,
                               InitializePipe, OpClass, TPush)

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
    op_verifier._ROLES.pop(cls, None)
    assert op_verifier._role(cls) == want          # computed
    assert op_verifier._ROLES[cls] == want         # and what the walk looks up after
