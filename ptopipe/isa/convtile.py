"""pto-isa's ``ConvTile``: an NC1HWC0 feature map in L1 and the img2col configuration it carries.

``ConvTile(TileType.Mat, float16, (N, C1, H, W, C0))`` (pto-isa's ``ConvTile<TileType::Mat, half,
BufferSize, Layout::NC1HWC0, ConvTileShape<N, C1, H, W, C0>>``) holds its elements in the
NC1HWC0 order, ``C0`` the elements of one 32-byte block.  Its storage is a Mat tile of ``N * C1
* H * W`` rows of ``C0`` columns (:attr:`ConvTile.tile`): TASSIGN binds it, ``TLOAD(conv,
gm)`` fills it from a GM tensor of its 5-D shape (pto-isa's ``Layout::NC1HWC0`` GlobalTensor:
rows and columns as a TLOAD of that Mat tile sees them), and the checkers see its bytes as that
tile's.  Other instructions do not take it (pto-isa's take it to TLOAD, TIMG2COL and the img2col
register writes; its other layouts - FRACTAL_Z weights, the 3-D NDC1HWC0 - are not modelled).

The configuration fields - fmap size, pads, filter, dilation, stride, pad value, channel size,
repeat fields, transpose (pto_tile.hpp's members, with its defaults) - are set and read as in
pto-isa (``SetFmapH(16)``, ``GetStrideW()``) and read by the instructions of
:mod:`ptopipe.isa.img2col` when they are issued.  A C++ kernel's ConvTile carries them with each
instruction that takes it (:data:`CONFIG_FIELDS`, in that order: :meth:`ConvTile.set_words`).
"""
from __future__ import annotations

import numpy as np

from ..arch.vocab import TileLayout, TileType
from ..errors import KernelError
from .context import site
from .tensor import element_type
from .tile import Tile

#: the configuration fields, in the order a C++ ConvTile sends them (ptopipe's pto-inst.hpp),
#: with pto_tile.hpp's defaults; ``pad_value`` crosses as the value's bits
CONFIG_FIELDS = (("fmap_h", 0), ("fmap_w", 0), ("pad_left", 0), ("pad_right", 0), ("pad_top", 0),
                 ("pad_bottom", 0), ("filter_h", 1), ("filter_w", 1), ("dilation_h", 1), ("dilation_w", 1),
                 ("stride_h", 1), ("stride_w", 1), ("pad_value", 0), ("channel_size", 0), ("repeat_stride", 0),
                 ("repeat_time", 1), ("repeat_mode", 0), ("transpose", 0), ("dst_stride", 0), ("dst_mposition", 0))
_NAMES = tuple(n for n, _ in CONFIG_FIELDS)
#: the layouts of pto-isa's ConvTile ptopipe models
LAYOUTS = ("NC1HWC0",)
_UNMODELLED = ("NDC1HWC0", "FRACTAL_Z", "FRACTAL_Z_3D")
_C0_BYTES = 32


def _int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


class ConvTile:
    """An NC1HWC0 ConvTile (see the module docstring): ``ConvTile(TileType.Mat, dtype, (N, C1, H,
    W, C0), addr=None, name=None)``."""

    __slots__ = ("tile", "shape", "layout", "dtype") + _NAMES

    def __init__(self, loc: TileType, dtype, shape, layout: str = "NC1HWC0", addr: int | None = None,
                 name: str | None = None):
        dt = element_type(dtype)
        if loc is not TileType.Mat:
            raise KernelError(f"ConvTile in {getattr(loc, 'value', loc)}: pto-isa's TLOAD and TIMG2COL take a "
                              "ConvTile in L1 only (\"Dst TileType must be Mat\")", where=site(),
                              fix="declare it ConvTile(TileType.Mat, ...)")
        if layout not in LAYOUTS:
            what = ("ptopipe models the NC1HWC0 feature map only (FRACTAL_Z weights, the 3-D NDC1HWC0 map are not "
                    "modelled)" if layout in _UNMODELLED else "pto-isa's ConvTile layouts are NC1HWC0, NDC1HWC0, "
                    "FRACTAL_Z, FRACTAL_Z_3D")
            raise KernelError(f"ConvTile layout {layout!r}: {what}", where=site(),
                              fix="load the weights as a Mat tile (TLOAD of an ND GlobalTensor) and TMOV / TEXTRACT "
                                  "them into the Right tile; the feature map as an NC1HWC0 ConvTile")
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        c0 = _C0_BYTES // dt.itemsize
        if len(shape) != 5 or not all(_int(n) and n > 0 for n in shape) or shape[4] != c0:
            raise KernelError(f"ConvTile shape {shape!r}: an NC1HWC0 ConvTile is (N, C1, H, W, C0), positive, "
                              f"C0 = 32 bytes = {c0} {dt.name} elements", where=site(),
                              fix=f"give ConvTileShape<N, C1, H, W, {c0}> / shape=(N, C1, H, W, {c0})")
        self.shape = tuple(int(n) for n in shape)
        self.layout = layout
        self.dtype = dt
        n, c1, h, w, _ = self.shape
        for field, default in CONFIG_FIELDS:
            setattr(self, field, default)
        self.tile = Tile(TileType.Mat, dt, n * c1 * h * w, c0, addr=addr,
                         name=name or f"{layout} {'x'.join(map(str, self.shape))}")

    # -- the C++ ABI --------------------------------------------------------------------------
    def set_words(self, words) -> "ConvTile":
        """Take a C++ ConvTile's configuration as it crossed the ABI (:data:`CONFIG_FIELDS`'
        order, the pad value as its bits); returns the tile."""
        for field, v in zip(_NAMES, words):
            setattr(self, field, v)
        item = self.dtype.itemsize
        self.pad_value = np.array(self.pad_value & ((1 << 8 * item) - 1), f"u{item}").view(self.dtype)[()]
        return self

    def pad_bits(self) -> int:
        """The pad value's bits, as pto-isa's SET_IMG2COL_PADDING writes them (a 1-byte value
        twice: ``b << 8 | b``)."""
        item = self.dtype.itemsize
        b = int(np.array(self.pad_value, self.dtype).view(f"u{item}"))
        return b << 8 | b if item == 1 else b

    # -- pto-isa's members ----------------------------------------------------------------------
    def data(self) -> int:
        return self.tile.data()

    def GetShape(self, dim: int) -> int:
        return self.shape[dim] if 0 <= dim < 5 else -1

    def GetFmapH(self) -> int:
        return self.fmap_h

    def SetFmapH(self, v: int) -> None:
        self.fmap_h = v

    def GetFmapW(self) -> int:
        return self.fmap_w

    def SetFmapW(self, v: int) -> None:
        self.fmap_w = v

    def GetPadList(self, index: int) -> int:
        return getattr(self, _NAMES[2 + index])

    def SetPadList(self, index: int, v: int) -> None:
        setattr(self, _NAMES[2 + index], v)

    def GetPadListArray(self) -> tuple:
        return (self.pad_left, self.pad_right, self.pad_top, self.pad_bottom)

    def SetPadListArray(self, values) -> None:
        """(left, right, top, bottom), pto-isa's padList order."""
        self.pad_left, self.pad_right, self.pad_top, self.pad_bottom = values

    def GetFilterH(self) -> int:
        return self.filter_h

    def SetFilterH(self, v: int) -> None:
        self.filter_h = v

    def GetFilterW(self) -> int:
        return self.filter_w

    def SetFilterW(self, v: int) -> None:
        self.filter_w = v

    def GetDilationH(self) -> int:
        return self.dilation_h

    def SetDilationH(self, v: int) -> None:
        self.dilation_h = v

    def GetDilationW(self) -> int:
        return self.dilation_w

    def SetDilationW(self, v: int) -> None:
        self.dilation_w = v

    def GetStrideH(self) -> int:
        return self.stride_h

    def SetStrideH(self, v: int) -> None:
        self.stride_h = v

    def GetStrideW(self) -> int:
        return self.stride_w

    def SetStrideW(self, v: int) -> None:
        self.stride_w = v

    def GetPadValue(self):
        return self.pad_value

    def SetPadValue(self, v) -> None:
        self.pad_value = np.array(v).astype(self.dtype)[()]

    def GetChannelSize(self) -> int:
        return self.channel_size

    def SetChannelSize(self, v: int) -> None:
        self.channel_size = v

    def GetRepeatStride(self) -> int:
        return self.repeat_stride

    def SetRepeatStride(self, v: int) -> None:
        self.repeat_stride = v

    def GetRepeatTime(self) -> int:
        return self.repeat_time

    def SetRepeatTime(self, v: int) -> None:
        self.repeat_time = v

    def GetRepeatMode(self) -> int:
        return self.repeat_mode

    def SetRepeatMode(self, v: int) -> None:
        self.repeat_mode = v

    def GetTranspose(self) -> bool:
        return bool(self.transpose)

    def SetTranspose(self, v: bool) -> None:
        self.transpose = v

    def GetDstStride(self) -> int:
        return self.dst_stride

    def SetDstStride(self, v: int) -> None:
        self.dst_stride = v

    def GetDstMposition(self) -> int:
        return self.dst_mposition

    def SetDstMposition(self, v: int) -> None:
        self.dst_mposition = v

    def describe(self) -> str:
        at = self.tile.describe().split(" @", 1)
        return (f"ConvTile {self.layout} {'x'.join(map(str, self.shape))} {self.dtype.name}"
                + (f" @{at[1]}" if len(at) > 1 else ""))

    def __repr__(self) -> str:
        return f"<{self.describe()}>"


def load(dst: ConvTile, src, events):
    """``TLOAD(conv_tile, gm)``: the GM tensor of the ConvTile's own (N, C1, H, W, C0) shape (pto-isa
    asserts the two shapes are one; any strides) into its storage - a TLOAD of the storage tile,
    whose rows and columns the tensor's ND matrix is."""
    from .context import current_core
    from .ops import TLOAD, _err, _not_a_tensor
    from .tensor import GlobalTensor
    core = current_core()
    core.unrecorded("TLOAD of a ConvTile")
    if src.__class__ is not GlobalTensor:
        raise _not_a_tensor(core, src, "TLOAD source")
    if tuple(src.shape) != dst.shape:
        raise _err(core, f"TLOAD of {dst.describe()} from {src.describe()} of shape {list(src.shape)}: pto-isa loads "
                         f"a ConvTile from an NC1HWC0 GlobalTensor of its own shape {list(dst.shape)} (\"srcShape "
                         "dstShape should be same\")",
                   "make the GlobalTensor's Shape the ConvTile's (N, C1, H, W, C0); a window of a larger map is the "
                   "tensor's pointer and strides")
    if src.layout not in (None, TileLayout.ND):
        raise _err(core, f"TLOAD of {dst.describe()} from {src.describe()}, a {src.layout.name} tensor: a ConvTile "
                         "loads from an NC1HWC0 GlobalTensor", "give the tensor the ConvTile's 5-D shape, no layout")
    return TLOAD(dst.tile, src, *events)

