"""Tiles: typed 2-D views into a core's local memory, as pto-isa's ``Tile<...>``.

A tile has a location (``TileType``: Vec in UB, Mat in L1, Left in L0A, Right in L0B,
Acc in L0C), a dtype, a static shape (rows x cols), a valid region and a layout
(``BLayout`` / ``SLayout``, named by ``.layout``: ND, DN, NZ, ZN, ZZ; the default per
TileType and shape is ``arch.vocab.default_layout``: a one-column Vec tile is DN).
``TASSIGN`` binds it to a byte address of the memory of the core that executes it.  Data are held as the logical matrix (row-major views)
whatever the layout: the layout is what the ring checks compare (a tile pushed in one layout
must be popped in the same one) and what TMOV converts, keeping the logical matrix.

A valid region may be empty (0 valid rows or columns, e.g. the A2A3 no-split lane-1
replay): every instruction on such a tile moves no data and costs next to nothing, but
a TPUSH / TPOP / TFREE keeps its flags and handshake.

A binding belongs to one run: the tile's address, its cached memory views, push/pop plan
and scoreboard times are those of the cluster it was bound on.  Once that run has ended the
tile reads as unbound (``addr`` None; ``.array`` still shows its final data), and binding it
in another run (TASSIGN / TPOP) drops everything of the earlier cluster first, so a Tile
object made once and reused by later runs (kernel factories, notebooks, sweeps) never sees
another run's memory or clock.
"""
from __future__ import annotations

import sys

import greenlet
import numpy as np

from ..arch import MemSpace
from ..arch.vocab import TILE_SPACE, BLayout, PadValue, SLayout, TileLayout, TileType, default_layout  # noqa: F401
from ..errors import KernelError
from .context import current_core, here, site
from .regions import register_tile
from ..sim.determinacy import unseen
from ..sim.location import is_cpp, is_internal
from .tensor import GlobalTensor, GMPtr, element_type
from ..errors import with_article


def _from_python(core, what: str) -> None:
    """A kernel's own Python reads or writes a tile's bytes through ``what`` (not an
    instruction of a front end: those are ptopipe's): a judged run notes memory the race
    checker does not see (sim.determinacy)."""
    if greenlet.getcurrent() is core.glet and not is_internal(sys._getframe(2).f_code):
        unseen(core, f"a kernel reads or writes tile bytes from Python ({what})")


class Tile:
    """A tile.  ``Tile(TileType.Vec, float32, 16, 32, addr=0x0)``; ``.array`` is its valid data.

    The layout is ``blayout`` / ``slayout`` (pto-isa's template parameters) or ``layout=``
    a :class:`TileLayout` (``Tile(TileType.Mat, float32, 16, 16, layout=TileLayout.NZ)``);
    none given: the default of its TileType and shape (ND for Vec/Mat, DN for a one-column
    Vec tile, ZZ Left, ZN Right, NZ Acc)."""

    __slots__ = ("loc", "dtype", "rows", "cols", "valid_rows", "valid_cols", "blayout",
                 "slayout", "layout", "_addr", "core", "mem", "_full", "_valid", "ready_at", "read_end",
                 "binding", "name", "space", "sname", "_views", "_plan", "sig", "item", "_push",
                 "hbw", "hbu", "pad", "pop_rec", "known_written", "__weakref__")
    #: fields that count events, not cycles (a binding names its pop: sim.periodic's moves)
    counter_fields = ("binding", "pop_rec")
    #: fields that are simulated times (cycles): the scoreboard's (sim.core's issue)
    time_fields = ("ready_at", "read_end")

    def __init__(self, loc: TileType, dtype, rows: int, cols: int,
                 blayout: BLayout | None = None, valid_rows: int | None = None,
                 valid_cols: int | None = None, slayout: SLayout | None = None,
                 addr: int | None = None, name: str | None = None, layout: TileLayout | None = None,
                 pad: PadValue = PadValue.Zero):
        if not isinstance(loc, TileType):
            raise KernelError(f"Tile location must be a TileType, got {loc!r}", where=site(),
                              fix="use TileType.Vec / Mat / Left / Right / Acc")
        self.loc = loc
        self.dtype = element_type(dtype)
        self.item = self.dtype.itemsize     # a plain int: hot paths read it (a numpy attribute is slow)
        if not (_is_int(rows) and _is_int(cols) and rows > 0 and cols > 0):
            raise KernelError(f"Tile shape {rows!r}x{cols!r}: a tile's rows and cols are positive integers",
                              where=site(),
                              fix="give the static shape as whole numbers > 0, e.g. Tile(TileType.Vec, "
                                  "float32, 16, 32) (use // for a computed size)")
        self.rows, self.cols = int(rows), int(cols)
        vr = self.rows if valid_rows is None else valid_rows
        vc = self.cols if valid_cols is None else valid_cols
        if not (_is_int(vr) and _is_int(vc) and 0 <= vr <= self.rows and 0 <= vc <= self.cols):
            raise KernelError(f"valid region {vr!r}x{vc!r} does not fit tile {self.rows}x{self.cols}",
                              where=site(),
                              fix=f"give integer valid_rows 0..{self.rows} and valid_cols 0..{self.cols}")
        self.valid_rows, self.valid_cols = int(vr), int(vc)
        self.sig = (self.valid_rows, self.valid_cols, self.dtype)   # what element-wise ops compare
        self.layout = _layout(loc, blayout, slayout, layout, self.rows, self.cols)
        self.blayout, self.slayout = self.layout.value
        self.name = name
        # pto-isa's PadVal template parameter (pto_tile.hpp): what TFILLPAD fills this tile
        # with outside the source's valid region when it is the destination
        self.pad = pad
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
        self._push = None       # TPUSH's queued copies from this tile: (plan, source array, per tag)
        self.hbw = self.hbu = None   # sim.porder: what happens before its last write / its uses
        self.pop_rec = None     # its latest tile TPOP: (channel, consumer side, pop index, line)
        # the checker (isa.unwritten) of the core that knows its bytes, where they are now, written
        self.known_written = None
        if addr is not None:
            _assign(self, addr, "")       # (a Tile(addr=), a .pto alloc_tile, a DSL tile: no TASSIGN)

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
        self.known_written = None

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

    def GetValue(self, offset: int):
        """pto-isa's ``Tile::GetValue``: element ``offset`` of this Vec tile, read on the scalar
        pipe (:mod:`.scalar_access`)."""
        from .scalar_access import get_value       # (it imports this module)
        return get_value(self, offset)

    def SetValue(self, offset: int, value) -> None:
        """pto-isa's ``Tile::SetValue``: write element ``offset`` of this Vec tile on the scalar
        pipe (:mod:`.scalar_access`)."""
        from .scalar_access import set_value
        set_value(self, offset, value)

    def SetMadTF32Mode(self, round_mode=None) -> None:
        """pto-isa's ``Tile::SetMadTF32Mode``: the Cube core's float32 matmuls read their
        operands rounded to TF32 from here on (``round_mode``: RoundMode.CAST_ROUND, the
        default, or CAST_RINT) - :mod:`.mad_mode`."""
        from .mad_mode import set_tf32
        set_tf32(*(() if round_mode is None else (round_mode,)))

    def ResetMadMode(self) -> None:
        """pto-isa's ``Tile::ResetMadMode``: float32 matmuls read whole float32 operands again."""
        from .mad_mode import reset
        reset()

    def SetValid(self, rows: int, cols: int) -> None:
        if rows == self.valid_rows and cols == self.valid_cols and rows.__class__ is int and cols.__class__ is int:
            return              # the same region (a loop's every block): nothing changes
        core = self.core
        if core is not None and core.ff is not None:      # another region: the exact state first
            core.ff.unhooked(core, "Tile.SetValid")       # (sim.periodic)
        # (exact ints first: the common case skips the isinstance checks)
        if not ((rows.__class__ is int or _is_int(rows)) and (cols.__class__ is int or _is_int(cols))
                and 0 <= rows <= self.rows and 0 <= cols <= self.cols):
            raise KernelError(f"SetValid({rows!r}, {cols!r}) on {self.describe()}: the valid region "
                              f"must be 0..{self.rows} rows and 0..{self.cols} cols", where=here(),
                              fix="give integer valid rows/cols within the tile's static shape")
        self.valid_rows, self.valid_cols = int(rows), int(cols)
        self.sig = (self.valid_rows, self.valid_cols, self.dtype)
        self._plan = None
        self.known_written = None           # other bytes: not known written
        if self._full is not None:
            self._valid = self._full[:self.valid_rows, :self.valid_cols]

    @property
    def empty(self) -> bool:
        """True when the valid region is empty (0 valid rows or cols): moves no data."""
        return self.valid_rows == 0 or self.valid_cols == 0

    def _need(self) -> None:
        if self.addr is None:
            earlier = " in this run (it was bound in an earlier run)" if self.core is not None else ""
            where = str(current_core().where())
            raise KernelError(
                f"{self.describe()} has no address{earlier}", where=where,
                fix=f"bind it with TASSIGN(tile, addr){'' if is_cpp(where) else ' (or Tile(..., addr=...))'} "
                    "before use - ptopipe does not place tiles itself, as pto-isa's auto mode (__PTO_AUTO__) and "
                    "its CPU simulator do")

    @property
    def full(self) -> np.ndarray:
        """The whole rows x cols view (bound to the current core's memory)."""
        if self._full is None or self.addr is None:
            self._stale()
        core = self.core
        if core.ff is not None:           # the kernel reads memory: the exact state first
            core.ff.unhooked(core, "Tile.full")
        core.cluster.sync()
        if core.cluster.determinacy is not None:
            _from_python(core, "Tile.full")
        return self._full

    @property
    def array(self) -> np.ndarray:
        """The valid region as a numpy view (read it in tests or while debugging).

        Instructions queue their data work and the simulator applies it in order when
        something reads memory: this property does, so take ``.array`` afresh after
        issuing instructions rather than keeping an older view."""
        if self._valid is None or self.addr is None:
            self._stale()
        core = self.core
        if core.ff is not None:           # the kernel reads memory: the exact state first
            core.ff.unhooked(core, "Tile.array")
        core.cluster.sync()
        if core.cluster.determinacy is not None:
            _from_python(core, "Tile.array")
        if core.unwritten is not None and greenlet.getcurrent() is core.glet:
            # the kernel itself may set the bytes through this view (a Python test's shortcut):
            # taken as written (isa.unwritten)
            core.unwritten.wrote(self)
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
        return _describe(self.loc, self.name, self.dtype, self.rows, self.cols, self.layout, self.addr, self.mem)

    def placement(self) -> "Placement":
        """:meth:`describe` of the tile as it is now, rendered when it is printed."""
        return Placement((self.loc, self.name, self.dtype, self.rows, self.cols, self.layout, self._addr,
                          self.mem))

    def __repr__(self) -> str:
        return f"<{self.describe()}>"


def spell_tile(where, loc: TileType, py_args: str, cpp_args: str) -> str:
    """A tile of ``loc`` as a fix text at ``where`` declares it: pto-isa's ``Tile<TileType::Mat,
    cpp_args>`` at a line of a C++ kernel, the Python ISA's ``Tile(TileType.Mat, py_args)``
    elsewhere (the element type spelt in each: ``float`` / ``float32``)."""
    if is_cpp(where):
        return f"Tile<TileType::{loc.value}, {cpp_args}>"
    return f"Tile(TileType.{loc.value}, {py_args})"


def _describe(loc, name, dtype, rows, cols, layout, addr, mem) -> str:
    nm = f" '{name}'" if name else ""
    at = f" @{mem.label}[{addr:#x}]" if addr is not None and mem else ""
    lay = "" if layout is default_layout(loc, rows, cols) else f" {layout.name}"
    return f"{loc.value} tile{nm} {dtype.name} {rows}x{cols}{lay}{at}"


class Placement(tuple):
    """A tile's description where TASSIGN put it (its name, address and memory then), for
    a later report of a ring overlapping it (:mod:`.regions`): rendered only when printed -
    rendering it at every TASSIGN was half the cost of a TASSIGN."""
    __slots__ = ()

    def __str__(self) -> str:
        return _describe(*self)


def _layout(loc: TileType, blayout, slayout, layout, rows: int, cols: int) -> TileLayout:
    """The tile's named layout from ``layout=`` or its (BLayout, SLayout) parameters (one of
    them not given takes pto-isa's template default: RowMajor / NoneBox); neither given:
    the default of its TileType and shape (``arch.vocab.default_layout``)."""
    if layout is not None:
        if not isinstance(layout, TileLayout):
            raise KernelError(f"Tile layout must be a TileLayout, got {layout!r}", where=site(),
                              fix="use TileLayout.ND / DN / NZ / ZN / ZZ")
        if (blayout is not None and blayout is not layout.blayout) or \
                (slayout is not None and slayout is not layout.slayout):
            raise KernelError(f"Tile layout={layout.name} contradicts blayout={blayout} / slayout={slayout}",
                              where=site(), fix="give either layout= or blayout/slayout")
        return layout
    if blayout is None and slayout is None:
        return default_layout(loc, rows, cols)
    b = BLayout.RowMajor if blayout is None else blayout
    s = SLayout.NoneBox if slayout is None else slayout
    if not isinstance(b, BLayout) or not isinstance(s, SLayout):
        raise KernelError(f"Tile blayout/slayout must be BLayout/SLayout members, got {blayout!r}, {slayout!r}",
                          where=site(), fix="e.g. blayout=BLayout.ColMajor, slayout=SLayout.RowMajor (NZ)")
    try:
        return TileLayout.of(b, s)
    except KeyError:
        raise KernelError(f"BLayout.{b.value} with SLayout.{s.value} is not a tile layout", where=site(),
                          fix="use ND (RowMajor/NoneBox), DN (ColMajor/NoneBox), NZ (ColMajor/RowMajor), "
                              "ZN (RowMajor/ColMajor) or ZZ (RowMajor/RowMajor)") from None


def bind(tile: Tile, core, addr: int, how: str = "") -> None:
    """Bind ``tile`` to ``addr`` of its memory on ``core`` (views cached per address);
    ``how``: what placed it there, for the error of a tile outside the memory ("TASSIGN of")."""
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
                        what=lambda: f"{how}{tile.describe()}")
        v = views[key] = (mem, full, full[:tile.valid_rows, :tile.valid_cols])
    tile._addr = addr
    tile.core = core
    tile.mem, tile._full, tile._valid = v
    tile.known_written = None               # other bytes: not known written


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _adopt(tile: Tile, core) -> None:
    """First binding of ``tile`` on ``core``: if it was bound in another run, drop all that
    belongs to that run's cluster (views of its memories, push/pop plan, slot binding,
    scoreboard times); views of another core of the same run stay (keyed per core).  The
    happens-before vectors (sim.porder) belong to one core's pipes: dropped on any move."""
    tile.hbw = tile.hbu = None
    old = tile.core
    if old is not None and old.cluster is not core.cluster:
        tile._views = None
        tile._plan = None
        tile._push = None
        tile.binding = None
        tile.ready_at = tile.read_end = 0


def TASSIGN(tile: Tile, addr: int) -> None:
    """Bind ``tile`` (or a ConvTile's storage) to byte address ``addr`` of its memory on the
    executing core; or, as in pto-isa, a GlobalTensor to a GM pointer of its element type."""
    _assign(tile, addr, "TASSIGN of ")


def _assign(tile: Tile, addr: int, how: str) -> None:
    """TASSIGN, its errors naming ``how`` the kernel placed the tile (TASSIGN, Tile(addr=))."""
    core = current_core()
    if not isinstance(tile, Tile):
        from .convtile import ConvTile           # (it imports this module)
        if tile.__class__ is not ConvTile:
            _assign_global(tile, addr, core)
            return
        tile = tile.tile                        # a ConvTile: its storage
    if not _is_int(addr) or addr < 0:
        raise KernelError(f"TASSIGN address {addr!r} of {tile.describe()} is not a byte address",
                          where=str(core.where()),
                          fix=f"give a non-negative integer offset into {tile.space.value}, e.g. 0x1000")
    platform = core.cluster.platform
    if not platform.mem_sizes.get(tile.space):
        raise KernelError(f"{platform.name} has no {tile.space.value}: {tile.describe()} is {with_article(tile.loc.value)} "
                          "tile, which pto-isa has on A5 only (the MX matmuls' scale buffers)",
                          where=str(core.where()), fix="run the kernel on A5, or leave the MX matmuls out")
    align = platform.alignment
    if addr % align:
        raise KernelError(f"TASSIGN address {addr:#x} of {tile.describe()} is not {align}-byte aligned",
                          where=str(core.where()), fix=f"use an address that is a multiple of {align}")
    if how and tile.space is not MemSpace.GM and core.memories.get(tile.space) is None:
        # pto-isa's TASSIGN only sets the address: a kernel may place every tile on every core
        # (its Vec tiles on the Cube too) and use each where it lives; a use here is the error
        # (ops._check_bound: this core has no such memory), its address is what data() gives.
        # (A tile made placed - Tile(addr=), a .pto alloc_tile - is the error at once.)
        tile._addr, tile.core, tile.binding = int(addr), Elsewhere(core), None
        tile.mem = tile._full = tile._valid = None
        return
    bind(tile, core, int(addr), how)
    tile.binding = None
    register_tile(tile, core)


class Elsewhere:
    """The ``core`` of a tile TASSIGNed on a core without its memory: no core holds it (a use is
    the error of that core having no such memory: ``ops._check_bound``), and its address lasts
    as long as the run of that core (``Tile.addr``)."""
    __slots__ = ("core", "cluster", "name")

    def __init__(self, core):
        self.core, self.cluster, self.name = core, core.cluster, core.name


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
        raise KernelError(f"TASSIGN of {gt.describe()} to {with_article(ptr.dtype.name)} pointer: the element types "
                          "differ", where=where,
                          fix=f"use ptr.cast({gt.dtype.name}) if the bytes are meant to be reinterpreted")
    gt.assign(ptr)
