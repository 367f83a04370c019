"""Tiles: typed 2-D views into a core's local memory, as pto-isa's ``Tile<...>``.

A tile has a location (``TileType``: Vec in UB, Mat in L1, Left in L0A, Right in L0B,
Acc in L0C), a dtype, a static shape (rows x cols), a valid region and layout metadata.
``TASSIGN`` binds it to a byte address of the memory of the core that executes it.
Data are stored row-major whatever the declared layout (the layout is metadata only).

A binding belongs to one run: the tile's address, its cached memory views, push/pop plan
and scoreboard times are those of the cluster it was bound on.  Once that run has ended the
tile reads as unbound (``addr`` None; ``.array`` still shows its final data), and binding it
in another run (TASSIGN / TPOP) drops everything of the earlier cluster first, so a Tile
object made once and reused by later runs (kernel factories, notebooks, sweeps) never sees
another run's memory or clock.
"""
from __future__ import annotations

from enum import Enum

import greenlet
import numpy as np

from ..arch.vocab import TILE_SPACE, TileType  # noqa: F401  (re-exported: isa.TileType)
from ..errors import KernelError
from .context import current_core, here
from .regions import register_tile
from .tensor import GlobalTensor, GMPtr, element_type


class BLayout(Enum):
    RowMajor = "RowMajor"
    ColMajor = "ColMajor"


class SLayout(Enum):
    NoneBox = "NoneBox"
    RowMajor = "RowMajor"
    ColMajor = "ColMajor"


class Tile:
    """A tile.  ``Tile(TileType.Vec, float32, 16, 32, addr=0x0)``; ``.array`` is its valid data."""

    __slots__ = ("loc", "dtype", "rows", "cols", "valid_rows", "valid_cols", "blayout",
                 "slayout", "_addr", "core", "mem", "_full", "_valid", "ready_at", "read_end",
                 "binding", "name", "space", "sname", "_views", "_plan", "sig")

    def __init__(self, loc: TileType, dtype, rows: int, cols: int,
                 blayout: BLayout = BLayout.RowMajor, valid_rows: int | None = None,
                 valid_cols: int | None = None, slayout: SLayout = SLayout.NoneBox,
                 addr: int | None = None, name: str | None = None):
        if not isinstance(loc, TileType):
            raise KernelError(f"Tile location must be a TileType, got {loc!r}",
                              fix="use TileType.Vec / Mat / Left / Right / Acc")
        self.loc = loc
        self.dtype = element_type(dtype)
        self.rows, self.cols = int(rows), int(cols)
        if self.rows <= 0 or self.cols <= 0:
            raise KernelError(f"tile shape must be positive, got {rows}x{cols}")
        self.valid_rows = self.rows if valid_rows is None else int(valid_rows)
        self.valid_cols = self.cols if valid_cols is None else int(valid_cols)
        if not (0 < self.valid_rows <= self.rows and 0 < self.valid_cols <= self.cols):
            raise KernelError(f"valid region {self.valid_rows}x{self.valid_cols} does not fit "
                              f"tile {self.rows}x{self.cols}")
        self.sig = (self.valid_rows, self.valid_cols, self.dtype)   # what element-wise ops compare
        self.blayout = blayout
        self.slayout = slayout
        self.name = name
        self._addr = None
        self.core = None
        self.mem = None
        self._full = None
        self._valid = None
        self.ready_at = 0
        self.read_end = 0
        self.binding = None     # (slot, generation) while bound zero-copy to a ring slot
        self.space = TILE_SPACE[loc]
        self.sname = self.space.value   # plain string: cost-table key on the hot path
        self._views = None      # (core index, addr) -> (full, valid): re-binding to ring slots is hot
        self._plan = None       # the isa layer's cached TPUSH/TPOP plan for this tile
        if addr is not None:
            TASSIGN(self, addr)

    @property
    def addr(self) -> int | None:
        """The local address it is bound to in the current run, else None (a binding
        ends with its run: see the module docstring)."""
        a = self._addr
        if a is not None and self.core.cluster.ended:
            return None
        return a

    @addr.setter
    def addr(self, addr: int | None) -> None:
        self._addr = addr

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.dtype.itemsize

    @property
    def shape(self) -> tuple:
        return (self.rows, self.cols)

    def data(self) -> int:
        """The tile's local address (pto-isa ``tile.data()``)."""
        self._need()
        return self.addr

    def GetValidRow(self) -> int:
        return self.valid_rows

    def GetValidCol(self) -> int:
        return self.valid_cols

    def SetValid(self, rows: int, cols: int) -> None:
        # (exact ints first: the common case skips the isinstance checks)
        if not ((rows.__class__ is int or _is_int(rows)) and (cols.__class__ is int or _is_int(cols))
                and 0 < rows <= self.rows and 0 < cols <= self.cols):
            raise KernelError(f"SetValid({rows!r}, {cols!r}) on {self.describe()}: the valid region "
                              f"must be 1..{self.rows} rows and 1..{self.cols} cols", where=here(),
                              fix="give integer valid rows/cols within the tile's static shape")
        self.valid_rows, self.valid_cols = int(rows), int(cols)
        self.sig = (self.valid_rows, self.valid_cols, self.dtype)
        self._plan = None
        if self._full is not None:
            self._valid = self._full[:self.valid_rows, :self.valid_cols]

    def _need(self) -> None:
        if self.addr is None:
            earlier = " in this run (it was bound in an earlier run)" if self.core is not None else ""
            raise KernelError(
                f"{self.describe()} has no address{earlier}",
                where=str(current_core().where()),
                fix="bind it with TASSIGN(tile, addr) (or Tile(..., addr=...)) before use")

    @property
    def full(self) -> np.ndarray:
        """The whole rows x cols view (bound to the current core's memory)."""
        if self._full is None or self.addr is None:
            self._stale()
        self.core.cluster.sync()
        return self._full

    @property
    def array(self) -> np.ndarray:
        """The valid region as a numpy view (read it in tests or while debugging).

        Instructions queue their data work and the simulator applies it in order when
        something reads memory: this property does, so take ``.array`` afresh after
        issuing instructions rather than keeping an older view."""
        if self._valid is None or self.addr is None:
            self._stale()
        self.core.cluster.sync()
        return self._valid

    def _stale(self) -> None:
        """Unbound, or bound only in an earlier run: an error inside a kernel of another run
        (after its own run, a released tile still shows its final data)."""
        if self._valid is None:
            self._need()
        me = getattr(greenlet.getcurrent(), "core", None)
        if me is not None and me.cluster is not self.core.cluster:
            raise KernelError(
                f"{self.describe()} has no address in this run (it was bound in an earlier run)",
                where=str(me.where()),
                fix="bind it with TASSIGN(tile, addr) (or TPOP) in this run's kernel before use")

    def describe(self) -> str:
        nm = f" '{self.name}'" if self.name else ""
        at = f" @{self.mem.label}[{self.addr:#x}]" if self.addr is not None and self.mem else ""
        return f"{self.loc.value} tile{nm} {self.dtype.name} {self.rows}x{self.cols}{at}"

    def __repr__(self) -> str:
        return f"<{self.describe()}>"


def bind(tile: Tile, core, addr: int) -> None:
    """Bind ``tile`` to ``addr`` of its memory on ``core`` (views cached per address)."""
    if tile.core is not core:
        _adopt(tile, core)
    views = tile._views
    if views is None:
        views = tile._views = {}
    key = (core.index, addr, tile.valid_rows, tile.valid_cols)
    v = views.get(key)
    if v is None:
        mem = core.memory(tile.space, tile.describe)
        full = mem.view(addr, tile.dtype, (tile.rows, tile.cols),
                        what=lambda: f"TASSIGN of {tile.describe()}")
        v = views[key] = (mem, full, full[:tile.valid_rows, :tile.valid_cols])
    tile._addr = addr
    tile.core = core
    tile.mem, tile._full, tile._valid = v


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _adopt(tile: Tile, core) -> None:
    """First binding of ``tile`` on ``core``: if it was bound in another run, drop all that
    belongs to that run's cluster (views of its memories, push/pop plan, slot binding,
    scoreboard times); views of another core of the same run stay (keyed per core)."""
    old = tile.core
    if old is not None and old.cluster is not core.cluster:
        tile._views = None
        tile._plan = None
        tile.binding = None
        tile.ready_at = tile.read_end = 0


def TASSIGN(tile: Tile, addr: int) -> None:
    """Bind ``tile`` to byte address ``addr`` of its memory on the executing core; or, as in
    pto-isa, a GlobalTensor to a GM pointer of its element type."""
    core = current_core()
    if not isinstance(tile, Tile):
        _assign_global(tile, addr, core)
        return
    if not _is_int(addr) or addr < 0:
        raise KernelError(f"TASSIGN address {addr!r} of {tile.describe()} is not a byte address",
                          where=str(core.where()),
                          fix=f"give a non-negative integer offset into {tile.space.value}, e.g. 0x1000")
    align = core.cluster.platform.alignment
    if addr % align:
        raise KernelError(f"TASSIGN address {addr:#x} of {tile.describe()} is not {align}-byte aligned",
                          where=str(core.where()), fix=f"use an address that is a multiple of {align}")
    bind(tile, core, int(addr))
    tile.binding = None
    register_tile(tile, core)


def _assign_global(gt, ptr, core) -> None:
    """``TASSIGN(global_tensor, ptr)``: pto-isa requires a pointer to the tensor's DType."""
    where = str(core.where())
    if not isinstance(gt, GlobalTensor):
        raise KernelError(f"TASSIGN binds a Tile or a GlobalTensor, not {type(gt).__name__}", where=where,
                          fix="TASSIGN(tile, local_addr) or TASSIGN(tensor, gm_ptr)")
    if not isinstance(ptr, GMPtr):
        raise KernelError(f"TASSIGN of {gt.describe()} needs a GM pointer, got {ptr!r}", where=where,
                          fix="pass a pointer such as other.data() + offset "
                              "(an integer is a tile's local address)")
    if ptr.dtype != gt.dtype:
        raise KernelError(f"TASSIGN of {gt.describe()} to a {ptr.dtype.name} pointer: the element types "
                          "differ", where=where,
                          fix=f"use ptr.cast({gt.dtype.name}) if the bytes are meant to be reinterpreted")
    gt.assign(ptr)
