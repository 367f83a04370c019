"""Structural equality of IR nodes: equal structure, names, types and attributes;
source locations are ignored (they are excluded from node comparison)."""
from __future__ import annotations

import dataclasses


def structural_equal(a, b) -> bool:
    return a == b


def first_difference(a, b, path: str = "") -> str | None:
    """A readable path to the first place where ``a`` and ``b`` differ (None if equal)."""
    if a == b:
        return None
    if type(a) is not type(b):
        return f"{path or '<root>'}: {type(a).__name__} != {type(b).__name__}"
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            if not f.compare:
                continue
            d = first_difference(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
            if d:
                return d
    if isinstance(a, (tuple, list)):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
    return f"{path or '<root>'}: {a!r} != {b!r}"
