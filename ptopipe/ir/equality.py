"""Structural equality of ops (:class:`~.core.Operation`): equal UP TO VALUE RENAMING -
same op names, attributes (equal and of the same Python type, so ``True`` is not ``1``),
result / block-argument types, region and block structure, and operands that correspond
under the value map built while walking both sides in step (a value defined outside both
compared ops must be the same object).  Name hints and source locations are ignored.
:func:`first_difference` says where they first differ (the op path, its location, and what
differs).
"""
from __future__ import annotations

from .core import Operation


class _Diff(Exception):
    pass


def _where(op, path) -> str:
    at = f" at {op.loc}" if op.loc is not None else ""
    return f"{'/'.join(path)}{at}"


def _vn(v) -> str:
    return f"%{v.name}" if v.name else f"<{type(v).__name__} {getattr(v, 'index', '?')}>"


def _ops_diff(a: Operation, b: Operation, vm: dict, path: list) -> None:
    label = a.name
    sym = a.attributes.get("sym_name")
    if sym is not None:
        label += f" @{sym}"
    path.append(label)
    if a.name != b.name:
        raise _Diff(f"{_where(a, path)}: op {a.name} != {b.name}")
    aa, ba = a.attributes, b.attributes
    if aa != ba or any(type(v) is not type(ba[k]) for k, v in aa.items()):
        for k in list(aa) + [k for k in ba if k not in aa]:
            x, y = aa.get(k, "<absent>"), ba.get(k, "<absent>")
            if x != y or type(x) is not type(y):
                raise _Diff(f"{_where(a, path)}: attribute {k} = {x!r} != {y!r}")
    if len(a.operands) != len(b.operands):
        raise _Diff(f"{_where(a, path)}: {len(a.operands)} operands != {len(b.operands)}")
    for i, (x, y) in enumerate(zip(a.operands, b.operands)):
        if vm.get(x, x) is not y:
            raise _Diff(f"{_where(a, path)}: operand {i} is {_vn(x)} on one side and {_vn(y)} "
                        f"on the other, which are not the same value up to renaming")
    if len(a.results) != len(b.results):
        raise _Diff(f"{_where(a, path)}: {len(a.results)} results != {len(b.results)}")
    for i, (x, y) in enumerate(zip(a.results, b.results)):
        if x.type != y.type:
            raise _Diff(f"{_where(a, path)}: result {i} type {x.type} != {y.type}")
        vm[x] = y
    if len(a.regions) != len(b.regions):
        raise _Diff(f"{_where(a, path)}: {len(a.regions)} regions != {len(b.regions)}")
    for ri, (ra, rb) in enumerate(zip(a.regions, b.regions)):
        if len(ra.blocks) != len(rb.blocks):
            raise _Diff(f"{_where(a, path)}: region {ri} has {len(ra.blocks)} blocks != "
                        f"{len(rb.blocks)}")
        for bi, (ba, bb) in enumerate(zip(ra.blocks, rb.blocks)):
            if len(ba.args) != len(bb.args):
                raise _Diff(f"{_where(a, path)}: region {ri} block {bi} has {len(ba.args)} "
                            f"arguments != {len(bb.args)}")
            for k, (x, y) in enumerate(zip(ba.args, bb.args)):
                if x.type != y.type:
                    raise _Diff(f"{_where(a, path)}: region {ri} block {bi} argument {k} type "
                                f"{x.type} != {y.type}")
                vm[x] = y
            oa, ob, n = ba.first, bb.first, 0
            while oa is not None and ob is not None:
                path.append(f"region {ri}/op {n}")
                _ops_diff(oa, ob, vm, path)
                path.pop()
                oa, ob, n = oa.next, ob.next, n + 1
            if oa is not None or ob is not None:
                extra = oa or ob
                side = "first" if oa is not None else "second"
                raise _Diff(f"{_where(a, path)}: region {ri} block {bi}: the {side} side has "
                            f"more ops from op {n} ({extra.name}{' at ' + str(extra.loc) if extra.loc else ''})")
    path.pop()


def structural_equal(a: Operation, b: Operation) -> bool:
    """Equal up to value renaming."""
    return first_difference(a, b) is None


def first_difference(a: Operation, b: Operation) -> str | None:
    """A readable place where ops ``a`` and ``b`` first differ (None if structurally equal)."""
    if not (isinstance(a, Operation) and isinstance(b, Operation)):
        return f"<root>: {type(a).__name__} != {type(b).__name__} (ops compare with ops)"
    try:
        _ops_diff(a, b, {}, [])
    except _Diff as d:
        return str(d)
    return None
