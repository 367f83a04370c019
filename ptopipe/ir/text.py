"""The spelling of types and attribute values in the op IR's textual form (shared by
:mod:`.asm_printer` and :mod:`.asm_parser`; the op syntax itself is documented there and
in docs/ir.md).

Types::

    index  f32  bool  i32 ...          ScalarType(dtype)
    tensor<64x32xf16>                  TensorType((64, 32), "f16")
    tile<16x32xf32,Vec>                TileValueType((16, 32), "f32", Vec)
    tile<16x16xf32,Mat,NZ>             ... with a layout
    tile<8x24xf32,Vec,box=8x32>        ... declared in a larger static shape (``box``)
    buffer<reserve>  buffer<import>    BufferType(kind)
    none                               NoneType (a null GM pointer constant)

Attribute values: ``none``, ``true`` / ``false``, integers, floats (``1.0``, ``1e-05``,
``inf``), strings (``"c2v"``, JSON escapes), lists ``[16, 32]`` (tuples), enum members
``#space.Vec`` / ``#split.TILE_UP_DOWN`` / ``#dir.DIR_C2V`` / ``#pipe.PIPE_MTE2`` /
``#layout.NZ`` / ``#kind.AIC``, ``#pl.AUTO``, and types (``tile<...>``, ``tensor<...>``).
"""
from __future__ import annotations

import functools
import json
import math
import re
from enum import Enum

from ..arch.vocab import Direction, SyncPipe, TileLayout, TileSplitAxis
from .vocab import AUTO, FunctionKind
from .types import (DTYPES, NONE, BufferType, MemorySpace, NoneType, ScalarType, TensorType,
                    TileValueType)

#: enum family name in ``#family.Member`` -> enum class
ENUMS = {"space": MemorySpace, "split": TileSplitAxis, "dir": Direction, "pipe": SyncPipe,
         "layout": TileLayout, "kind": FunctionKind}
_FAMILY = {cls: fam for fam, cls in ENUMS.items()}

# type -> its text and text -> its type: bounded memos of pure functions of immutable values
# (types are frozen), so the printer and the parser spell each type once
@functools.lru_cache(maxsize=4096)
def type_str(t) -> str:
    c = t.__class__
    if c is ScalarType:
        s = t.dtype
    elif c is TensorType:
        s = f"tensor<{''.join(f'{d}x' for d in t.shape)}{t.dtype}>"
    elif c is TileValueType:
        lay = f",{t.layout.name}" if t.layout is not None else ""
        box = f",box={t.box[0]}x{t.box[1]}" if t.box is not None else ""
        s = f"tile<{t.shape[0]}x{t.shape[1]}x{t.dtype},{t.space.name}{lay}{box}>"
    elif c is BufferType:
        s = f"buffer<{t.kind}>"
    elif c is NoneType:
        s = "none"
    else:
        raise TypeError(f"no textual form for type {t!r}")
    return s


_SHAPED = re.compile(r"((?:\d+x)*)(\w+)$")
_BOX = re.compile(r"(\d+)x(\d+)")
@functools.lru_cache(maxsize=4096)
def parse_type(text: str):
    """The Type spelled ``text``; raises ValueError with the reason."""
    return _parse_type(text)


def _parse_type(text: str):
    if text == "none":
        return NONE
    if text in DTYPES:
        return ScalarType(text)
    head, _, rest = text.partition("<")
    if not rest.endswith(">"):
        raise ValueError(f"unknown type {text!r}")
    parts = rest[:-1].split(",")
    if head == "buffer":
        if parts[0] not in ("reserve", "import") or len(parts) != 1:
            raise ValueError(f"buffer kind must be reserve or import, got {rest[:-1]!r}")
        return BufferType(parts[0])
    m = _SHAPED.match(parts[0])
    if m is None or m.group(2) not in DTYPES:
        raise ValueError(f"bad shape/dtype {parts[0]!r} in {text!r} (e.g. 16x32xf32)")
    shape = tuple(int(d) for d in m.group(1).split("x")[:-1])
    dtype = m.group(2)
    if head == "tensor":
        if len(parts) != 1:
            raise ValueError(f"a tensor type has no space: {text!r}")
        return TensorType(shape, dtype)
    if head == "tile":
        box = None
        if len(parts) > 2 and parts[-1].startswith("box="):
            m = _BOX.fullmatch(parts.pop()[4:])
            if m is None:
                raise ValueError(f"a tile's box is box=RxC (its static rows and columns), in {text!r}")
            box = (int(m.group(1)), int(m.group(2)))
        if len(shape) != 2 or len(parts) not in (2, 3):
            raise ValueError(f"a tile type is tile<RxCxdtype,Space[,Layout][,box=RxC]>, got {text!r}")
        try:
            space = MemorySpace[parts[1]]
            layout = TileLayout[parts[2]] if len(parts) == 3 else None
        except KeyError as e:
            raise ValueError(f"unknown memory space or layout {e.args[0]!r} in {text!r}") from None
        if box is not None and (box[0] < shape[0] or box[1] < shape[1]):
            raise ValueError(f"a tile's box {box[0]}x{box[1]} is smaller than its shape "
                             f"{shape[0]}x{shape[1]} in {text!r}")
        return TileValueType(shape, dtype, space, layout, box)
    raise ValueError(f"unknown type {text!r}")


def attr_str(v) -> str:
    if v is None:
        return "none"
    if v is True:
        return "true"
    if v is False:
        return "false"
    c = v.__class__
    if c is int:
        return str(v)
    if c is str:
        return json.dumps(v)
    if c is float:
        if math.isfinite(v):
            return repr(v)
        return "nan" if v != v else ("inf" if v > 0 else "-inf")
    if isinstance(v, Enum):
        fam = _FAMILY.get(c)
        if fam is None:
            raise TypeError(f"no textual form for enum {v!r}")
        return f"#{fam}.{v.name}"
    if v is AUTO:
        return "#pl.AUTO"
    if c is tuple or c is list:
        return "[" + ", ".join(attr_str(x) for x in v) + "]"
    if isinstance(v, (TensorType, TileValueType, BufferType)):
        return type_str(v)
    raise TypeError(f"no textual form for attribute value {v!r}")


def enum_value(text: str):
    """The value of ``#family.Member`` (or ``#pl.AUTO``); raises ValueError."""
    fam, _, member = text[1:].partition(".")
    if fam == "pl" and member == "AUTO":
        return AUTO
    cls = ENUMS.get(fam)
    if cls is None:
        raise ValueError(f"unknown attribute family '#{fam}' (known: "
                         f"{', '.join('#' + f for f in ENUMS)}, #pl.AUTO)")
    try:
        return cls[member]
    except KeyError:
        raise ValueError(f"'{member}' is not a member of #{fam} "
                         f"({', '.join(m.name for m in cls)})") from None
