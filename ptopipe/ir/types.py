"""IR types: element dtypes, and the value types (Scalar, Tensor in GM, Tile in a local
memory space, reserved/imported ring Buffer).  Where a tile lives is the arch vocabulary's
``TileType`` (``MemorySpace`` here, ``pl.Vec`` / ``pl.Mat`` ... in the DSL).

Types are frozen dataclasses compared structurally.  Dtypes are short names ("f16",
"f32", ...) so the IR stays independent of numpy; :func:`np_dtype` converts.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..arch import catalogue
from ..arch.dtypes import as_dtype, short_name
from ..arch.vocab import TileLayout, default_layout, static_shape
from ..arch.vocab import TileType as MemorySpace

#: the spaces an IR (DSL) tile lives in: ``pl.Vec``, ``pl.Mat``, ``pl.Left``, ``pl.Right``,
#: ``pl.Acc`` - no Bias tile (no IR op reads one; the ISA's TMOV Mat->Bias stays ISA-only)
TILE_SPACES = (MemorySpace.Vec, MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right,
               MemorySpace.Acc)

#: element dtypes of the IR, in DSL spelling (``pl.f16`` ...)
DTYPES = ("f16", "f32", "bf16", "i8", "u8", "i16", "i32", "u32", "i64", "index", "bool")
FLOAT_DTYPES = ("f16", "f32", "bf16")


def np_dtype(name: str) -> np.dtype:
    if name == "index":
        return np.dtype(np.int64)
    if name == "bool":
        return np.dtype(np.bool_)
    return as_dtype(name)


def int_range(name: str) -> tuple | None:
    """``(lo, hi)``, the least and greatest value of integer dtype ``name`` (``index``: a
    64-bit signed integer's, as MLIR's on the device); None for floats and bool.  Past them the
    IR's exact integers and the device's wrapping ones differ."""
    if name in FLOAT_DTYPES or name == "bool" or name not in DTYPES:
        return None
    info = np.iinfo(np_dtype(name))
    return int(info.min), int(info.max)


def itemsize(name: str) -> int:
    return np_dtype(name).itemsize


def accum_dtype(name: str) -> str | None:
    """The accumulator dtype of a matmul with ``name`` inputs, or None if the Cube does not
    take them: the op catalogue's rule (the one the ISA checks)."""
    if name in ("index", "bool"):
        return None
    acc = catalogue.accum_dtype(as_dtype(name))
    return None if acc is None else short_name(acc)


class Type:
    """Base class of IR types."""


@dataclass(frozen=True)
class ScalarType(Type):
    dtype: str = "index"

    def __str__(self) -> str:
        return f"pl.Scalar[pl.{self.dtype}]"


@dataclass(frozen=True)
class TensorType(Type):
    """A tensor in GM (kernel argument, or a ring slot in the address flow)."""
    shape: tuple
    dtype: str

    @property
    def nbytes(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n * itemsize(self.dtype)

    def __str__(self) -> str:
        return f"pl.Tensor[[{', '.join(map(str, self.shape))}], pl.{self.dtype}]"


@dataclass(frozen=True)
class TileValueType(Type):
    """A 2-D tile in a core-local memory space; ``layout`` None is the default layout of its
    space and shape (``arch.vocab.default_layout``: ND for Vec / Mat, DN for a one-column
    Vec tile).  ``shape`` is the data's (pto-isa's valid shape); ``box`` None declares the
    tile in the static shape pto-isa's ``Tile`` rounds it up to (:attr:`static_shape`), a
    ``(rows, cols)`` box in that larger static shape - what the compiler gives a tile whose
    row pitch a ring slot fixes, or a Mat tile TMOVed into a Left / Right tile of a larger
    static shape (:mod:`ptopipe.passes.tile_boxes`); a typing rule that gives its result an
    operand's type gives its box too (ptoas wants many ops' tiles in one static shape).  Two
    tiles of one data shape and different boxes are different types (pto-isa's C++ types
    differ)."""
    shape: tuple
    dtype: str
    space: MemorySpace
    layout: TileLayout | None = None
    box: tuple | None = None

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self.shape[1] * itemsize(self.dtype)

    @property
    def effective_layout(self) -> TileLayout:
        """The layout the tile has: ``layout``, else its space's and shape's default."""
        return self.written_layout()

    def written_layout(self, platform: str | None = None) -> TileLayout:
        """The layout the tile is declared with on ``platform`` (C++, PTO-AS): ``layout``, else
        the default of its space and shape there (``arch.vocab.default_layout``: a Left tile
        is ZZ on A2A3 and NZ on A5)."""
        return self.layout if self.layout is not None else default_layout(self.space, *self.shape[:2], platform)

    @property
    def static_shape(self) -> tuple:
        """(Rows, Cols) as pto-isa declares the tile: its box, else its shape rounded up
        (:func:`ptopipe.arch.vocab.static_shape`)."""
        if self.box is not None:
            return self.box
        return static_shape(self.space, self.effective_layout, self.shape[0], self.shape[1], itemsize(self.dtype))

    @property
    def unboxed(self) -> "TileValueType":
        """This type declared in its own static shape (no box): what typing rules give."""
        return self if self.box is None else replace(self, box=None)

    @property
    def is_column(self) -> bool:
        """A one-column DN tile: the per-row operand of the row reductions and expansions."""
        return self.shape[1] == 1 and self.effective_layout is TileLayout.DN

    def row_view(self) -> "TileValueType":
        """The ND ``[1, R]`` row that views the bytes of this DN ``[R, 1]`` column (TRESHAPE):
        the same static size, the column's rows as its columns."""
        row = TileValueType((1, self.shape[0]), self.dtype, self.space)
        return row if row.effective_layout is TileLayout.ND else TileValueType(row.shape, self.dtype, self.space,
                                                                                TileLayout.ND)

    @property
    def footprint(self) -> int:
        """The bytes the tile occupies in its memory: its static shape's."""
        r, c = self.static_shape
        return r * c * itemsize(self.dtype)

    def __str__(self) -> str:
        lay = f", pl.{self.layout.name}" if self.layout is not None else ""
        return (f"pl.Tile[[{', '.join(map(str, self.shape))}], pl.{self.dtype}, "
                f"pl.{self.space.value}{lay}]")


@dataclass(frozen=True)
class BufferType(Type):
    """The value of ``pl.reserve_buffer`` (kind "reserve") or ``pl.import_peer_buffer``
    (kind "import"): a ring buffer region with compile-time ``.base`` and ``.size``."""
    kind: str

    def __str__(self) -> str:
        return f"<{self.kind} buffer>"


@dataclass(frozen=True)
class NoneType(Type):
    """The type of an op with no result (store, TPUSH, TFREE, initialize_pipe)."""

    def __str__(self) -> str:
        return "None"


INDEX = ScalarType("index")
BOOL = ScalarType("bool")
NONE = NoneType()


def describe(t: Type) -> str:
    if isinstance(t, TileValueType):
        lay = f" {t.layout.name}" if t.layout is not None else ""
        return f"{t.space.value} tile {t.shape[0]}x{t.shape[1]} {t.dtype}{lay}"
    if isinstance(t, TensorType):
        return f"GM tensor {'x'.join(map(str, t.shape))} {t.dtype}"
    if isinstance(t, ScalarType):
        return f"{t.dtype} scalar"
    return str(t)
