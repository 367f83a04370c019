"""The op verifier's memo (``verify_ops``: a table-derived op whose key - name, core kind,
operand types and constant values, attributes, result types - was verified earlier in the
same walk is not checked again) is proven equal to checking every op from scratch
(``memo=False``): on generated programs with one op mutated (a result type, a constant, an
attribute), both report the same error at the same op, or both pass."""
from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ptopipe.errors import CompileError
from ptopipe.ir import MemorySpace, TileValueType, verify_ops
from ptopipe.ir.opdefs import CALL_OPS

from ir_programs import generate

_TYPES = [TileValueType((16, 32), "f32", MemorySpace.Vec), TileValueType((16, 32), "f16", MemorySpace.Vec),
          TileValueType((8, 32), "f32", MemorySpace.Vec), TileValueType((16, 32), "f32", MemorySpace.Mat)]


def _outcome(prog, memo):
    try:
        verify_ops(prog, memo=memo)
    except CompileError as e:
        return e.what, e.where
    return None


def _mutate(prog, rng):
    ops = [o for o in prog.walk() if o.name[3:] in CALL_OPS or o.name == "pl.const"]
    op = rng.choice(ops)
    what = rng.random()
    if op.name == "pl.const":
        op.attributes["value"] = rng.choice([-1, 0, 7, 2.5, None])
    elif what < 0.5 and op.results:
        op.results[0].type = rng.choice(_TYPES)
    elif op.attributes:
        k = rng.choice(sorted(op.attributes))
        op.attributes[k] = rng.choice([None, 3, (8, 32), MemorySpace.Mat])
    return op


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(20, 200), seed=st.integers(0, 2 ** 32 - 1), mutations=st.integers(0, 3))
def test_the_memo_reports_what_checking_every_op_reports(n, seed, mutations):
    prog = generate(n, seed)
    rng = random.Random(seed)
    for _ in range(mutations):
        _mutate(prog, rng)
    assert _outcome(prog, True) == _outcome(prog, False)


def test_a_mutated_duplicate_of_a_verified_op_is_still_caught():
    """The memo's key covers the result type: two identical ops, the second given a wrong
    result type after the first was verified, is an error at the second."""
    for seed in range(50):
        prog = generate(120, seed)
        seen = {}
        for op in prog.walk():
            if op.name in ("pl.add", "pl.exp", "pl.adds") and op.results:
                key = (op.name, tuple(v.type for v in op.operands))
                if key in seen:
                    op.results[0].type = _TYPES[1]
                    e = _outcome(prog, True)
                    assert e is not None and e[1] == str(op.loc), e
                    assert e == _outcome(prog, False)
                    return
                seen[key] = op
    raise AssertionError("no duplicate op in the generated programs")


def test_a_duplicate_op_differing_only_in_a_constant_operand_is_still_caught():
    """The memo's key covers constant operand values (typing rules read them): the second
    of two pl.adds on the same f16 tile, given a scalar f16 cannot hold, is an error at it."""
    import ptopipe.language as pl

    @pl.aiv
    def k(x: pl.Tensor[[16, 16], pl.f16], out: pl.Tensor[[16, 16], pl.f16]):
        t = pl.load(x, [0, 0], [16, 16])
        a = pl.adds(t, 1.0)
        b = pl.adds(a, 2.0)
        pl.store(b, [0, 0], out)

    prog = pl.program(k).clone()
    verify_ops(prog)
    second = [o for o in prog.walk() if o.name == "pl.adds"][1]
    second.operands[1].op.attributes["value"] = 1.0e6          # beyond f16's range
    e = _outcome(prog, True)
    assert e is not None and "1000000.0" in e[0] and e[1] == str(second.loc), e
    assert e == _outcome(prog, False)


def _two_waits(second_event):
    """An AIV kernel of two pl.wait_event on the same pipes, the first on event 1 and the
    second on ``second_event`` (a constant of index type)."""
    from ptopipe.arch.vocab import SyncPipe
    from ptopipe.ir import Block, Operation, Region
    from ptopipe.ir.opdefs import ConstOp, FuncOp, ProgramOp, ReturnOp, WaitEvent
    from ptopipe.ir.types import INDEX
    from ptopipe.ir.vocab import FunctionKind

    body = Block()
    for event in (1, second_event):
        c = body.append(Operation(ConstOp.name, (), [INDEX], {"value": event}))
        body.append(Operation(WaitEvent.name, (c.results[0],), (),
                              {"src": SyncPipe.PIPE_V, "dst": SyncPipe.PIPE_MTE2}))
    body.append(Operation(ReturnOp.name))
    top = Block()
    top.append(Operation(FuncOp.name, (), (), {"sym_name": "k", "kind": FunctionKind.AIV},
                         (Region([body]),)))
    return Operation(ProgramOp.name, (), (), {"sym_name": "p"}, (Region([top]),))


def test_a_constant_equal_to_a_verified_one_but_of_another_class_is_checked_again():
    """The memo keys a constant operand by its value's class too: 1.0 == 1 (and True == 1)
    as keys, but the event-id rule takes an int, so the second wait is an error."""
    assert _outcome(_two_waits(1), True) is None
    e = _outcome(_two_waits(1.0), True)
    assert e is not None and "event id 1.0 is not EVENT_ID0" in e[0], e
    assert e == _outcome(_two_waits(1.0), False)
    assert _outcome(_two_waits(True), True) == _outcome(_two_waits(True), False)
