"""The names a ``pl`` kernel refers to: dtypes, memory spaces, type annotations
(``pl.Tensor[[M, N], pl.f16]``, ``pl.Tile[[r, c], pl.f32, pl.Vec]``, ``pl.Scalar[pl.i32]``),
the seed-003 constants, and one stub object per op.

Stubs are markers for the parser: calling one from plain Python raises a CompileError,
because ``pl`` kernels are compiled from their source, never executed directly.
"""
from __future__ import annotations

import numbers
import sys

import numpy as np

from ..errors import CompileError
from ..ir.vocab import AUTO  # noqa: F401  (re-exported as pl.AUTO)
from ..ir.ops import OPS
from ..ir.opdefs import SCALAR_CALLS
from ..ir.types import DTYPES, MemorySpace, ScalarType, TensorType, TileValueType
from ..arch.vocab import AtomicType, CmpMode, Direction, EventID, SyncPipe, TileLayout, TileSplitAxis


class DType:
    """An element dtype: ``pl.f16``, ``pl.f32`` ..."""
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"pl.{self.name}"


_DT = {n: DType(n) for n in DTYPES}
f16, f32, bf16, i8, u8, i16 = (_DT[n] for n in ("f16", "f32", "bf16", "i8", "u8", "i16"))
i32, u32, i64, index = (_DT[n] for n in ("i32", "u32", "i64", "index"))
bool_ = _DT["bool"]
FP16, FP32, BF16, INT8, INT32 = f16, f32, bf16, i8, i32

Vec, Mat, Left, Right, Acc = (MemorySpace.Vec, MemorySpace.Mat, MemorySpace.Left,
                              MemorySpace.Right, MemorySpace.Acc)
ND, DN, NZ, ZN, ZZ = (TileLayout.ND, TileLayout.DN, TileLayout.NZ, TileLayout.ZN, TileLayout.ZZ)


def _dtype_name(d, what: str) -> str:
    if isinstance(d, DType):
        return d.name
    raise TypeError(f"{what} needs a pl dtype (pl.f16, pl.f32, ...), got {d!r}")


def _shape(s, what: str) -> tuple:
    # (a numpy integer, np.prod(...) or an array's element, is an integer dimension too)
    if not isinstance(s, (list, tuple)) or not s or not all(
            isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_)) and x > 0 for x in s):
        raise TypeError(f"{what} needs a list of positive integers as shape, got {s!r}")
    return tuple(int(x) for x in s)


def _annotation_error(e: TypeError) -> CompileError:
    """Annotations are evaluated by Python at ``def`` time: report them at the caller."""
    f = sys._getframe(2)
    return CompileError(f"bad type annotation: {e}", where=f"{f.f_code.co_filename}:{f.f_lineno}",
                        fix="write pl.Tensor[[d0, d1], pl.f32], pl.Tile[[r, c], pl.f32, pl.Vec] "
                            "or pl.Scalar[pl.i32]")


class Tensor:
    """``pl.Tensor[[d0, d1, ...], dtype]``: a tensor in GM."""

    def __class_getitem__(cls, params):
        try:
            if not isinstance(params, tuple) or len(params) != 2:
                raise TypeError("write pl.Tensor[[d0, d1, ...], dtype]")
            return TensorType(_shape(params[0], "pl.Tensor"), _dtype_name(params[1], "pl.Tensor"))
        except TypeError as e:
            raise _annotation_error(e) from None


class Tile:
    """``pl.Tile[[rows, cols], dtype, space]`` or ``pl.Tile[[rows, cols], dtype, space, layout]``
    (``pl.ND`` / ``pl.NZ`` ...): a tile in a core-local memory space."""

    def __class_getitem__(cls, params):
        try:
            return cls._make(params)
        except TypeError as e:
            raise _annotation_error(e) from None

    @staticmethod
    def _make(params):
        if not isinstance(params, tuple) or len(params) not in (2, 3, 4):
            raise TypeError("write pl.Tile[[rows, cols], dtype, space] or pl.Tile[[rows, cols], dtype, "
                            "space, layout]")
        shape = _shape(params[0], "pl.Tile")
        if len(shape) != 2:
            raise TypeError("pl.Tile shapes are [rows, cols]")
        space = params[2] if len(params) >= 3 else MemorySpace.Vec
        if not isinstance(space, MemorySpace):
            raise TypeError(f"pl.Tile space must be pl.Vec/Mat/Left/Right/Acc, got {space!r}")
        layout = params[3] if len(params) == 4 else None
        if layout is not None and not isinstance(layout, TileLayout):
            raise TypeError(f"pl.Tile layout must be pl.ND/DN/NZ/ZN/ZZ, got {layout!r}")
        return TileValueType(shape, _dtype_name(params[1], "pl.Tile"), space, layout)


class Scalar:
    """``pl.Scalar[dtype]``: a scalar kernel argument."""

    def __class_getitem__(cls, params):
        try:
            return ScalarType(_dtype_name(params, "pl.Scalar"))
        except TypeError as e:
            raise _annotation_error(e) from None


# seed-003 constants (the isa's values, so DIR_C2V | DIR_V2C == DIR_BOTH)
DIR_C2V, DIR_V2C, DIR_BOTH = Direction.DIR_C2V, Direction.DIR_V2C, Direction.DIR_BOTH
DIR_C2V_GM, DIR_V2C_GM, DIR_BOTH_GM = (Direction.DIR_C2V_GM, Direction.DIR_V2C_GM,
                                       Direction.DIR_BOTH_GM)
TILE_NO_SPLIT, TILE_UP_DOWN, TILE_LEFT_RIGHT = (TileSplitAxis.TILE_NO_SPLIT,
                                                TileSplitAxis.TILE_UP_DOWN,
                                                TileSplitAxis.TILE_LEFT_RIGHT)
NO_SPLIT, UP_DOWN, LEFT_RIGHT = TILE_NO_SPLIT, TILE_UP_DOWN, TILE_LEFT_RIGHT
# the pipes and event ids of pl.record_event / pl.wait_event / pl.barrier (pto-isa's names)
PIPES = {p.name: p for p in SyncPipe}
EVENT_IDS = {e.name: e for e in EventID}
# the compare modes of pl.cmp / pl.cmps (pto-isa's CmpMode): pl.CMP_EQ ... pl.CMP_GE
CMP_MODES = {f"CMP_{m.name}": m for m in CmpMode}
# pl.store(..., atomic=pl.ATOMIC_ADD): add the tile into the tensor (pto-isa's AtomicType::AtomicAdd)
ATOMIC_ADD = AtomicType.AtomicAdd


class DSLOp:
    """A ``pl`` op as the parser sees it (``op`` is the IR op name, or a parser keyword
    such as "range", "yield_", "reserve_buffer")."""
    __slots__ = ("op", "dsl")

    def __init__(self, op: str, dsl: str):
        self.op = op
        self.dsl = dsl

    def __call__(self, *args, **kwargs):
        raise CompileError(f"pl.{self.dsl} was called from plain Python",
                           fix="pl ops only appear inside @pl.aic / @pl.aiv / @pl.incore kernels, "
                               "which ptopipe compiles from source; run them with ptopipe.runtime")

    def __repr__(self) -> str:
        return f"<pl.{self.dsl}>"


SPECIAL = ("range", "yield_", "reserve_buffer", "import_peer_buffer") + SCALAR_CALLS
STUBS = {name: DSLOp(name, name) for name in SPECIAL}
for _name, _spec in OPS.items():
    STUBS[_spec.dsl] = DSLOp(_name, _spec.dsl)
    if _spec.dsl != _name:
        STUBS[_name] = STUBS[_spec.dsl]     # pl.tpush == pl.TPUSH
