"""Operation.walk (an explicit stack, for speed) is the pre-order of the op tree, and keeps
what a caller mutating the IR during the walk relies on: an op's successor is read before
the op is yielded, its regions after."""
from __future__ import annotations

import pytest

from ptopipe.ir import INDEX, Block, Operation, Region

from ir_programs import generate


def _preorder(op) -> list:
    """The definition: the op, then each region's blocks' ops, each with its own subtree."""
    out = [op]
    for r in op.regions:
        for b in r.blocks:
            for o in list(b):
                out.extend(_preorder(o))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_walk_is_the_preorder(seed):
    top = generate(400, seed)
    assert [id(o) for o in top.walk()] == [id(o) for o in _preorder(top)]


def _const(v):
    return Operation("pl.const", (), [INDEX], {"value": v})


def _nest():
    """A program-shaped tree: an outer op holding an empty block and a block of three ops,
    the middle one holding a region of its own (two blocks: one empty, one with one op)."""
    inner = Block()
    inner.append(_const(10))
    holder = Operation("pl.holder", regions=(Region([Block(), inner]),))
    body = Block()
    for op in (_const(1), holder, _const(3)):
        body.append(op)
    return Operation("pl.outer", regions=(Region([Block()]), Region([body]))), body, holder


def _names(ops) -> list:
    return [o.attributes.get("value", o.name) for o in ops]


def test_walk_through_empty_blocks_and_regions():
    top, _body, _holder = _nest()
    assert _names(top.walk()) == ["pl.outer", 1, "pl.holder", 10, 3]


def test_erasing_the_yielded_op_continues_with_its_successor():
    top, body, _holder = _nest()
    seen = []
    for op in top.walk():
        seen.append(op)
        if op.attributes.get("value") == 1:
            op.erase()
    assert _names(seen) == ["pl.outer", 1, "pl.holder", 10, 3]
    assert _names(body) == ["pl.holder", 3]


def test_an_op_inserted_after_the_yielded_op_is_not_visited():
    top, _body, _holder = _nest()
    seen = []
    for op in top.walk():
        seen.append(op)
        if op.attributes.get("value") == 1:
            op.insert_after(_const(2))
    assert _names(seen) == ["pl.outer", 1, "pl.holder", 10, 3]


def test_ops_added_to_the_yielded_ops_regions_are_visited():
    top, _body, holder = _nest()
    seen = []
    for op in top.walk():
        seen.append(op)
        if op is holder:
            op.regions[0].blocks[0].append(_const(9))
            op.regions.append(Region([Block()]))
            op.regions[-1].blocks[0].append(_const(11))
    assert _names(seen) == ["pl.outer", 1, "pl.holder", 9, 10, 11, 3]
