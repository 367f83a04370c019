"""Global tensors: 5-D shape/stride views of GM, as pto-isa's ``GlobalTensor``.

``GlobalTensor(ptr, shape, stride)`` views GM at ``ptr`` (a :class:`GMPtr`, i.e. an
address with an element type).  ``gt.data()`` returns the pointer and ``ptr + n`` moves
it by ``n`` elements, so sub-views are built exactly as in C++::

    view = GlobalTensor(slot.data() + row * 512, shape=(1, 1, 4, 16, 128), stride=(1, 1, 128, 512, 1))

``GlobalTensor(dtype, shape, stride)`` without a pointer is a descriptor whose address is
assigned later by ``TALLOC`` / ``TPOP`` (the address-based FIFO flow).  For tile moves a
5-D tensor is seen as a 2-D matrix by its ``layout`` (``arch.vocab.GM_LAYOUTS``, pto-isa's
GlobalTensor ``Layout``): ND (the default) ``shape[0]*shape[1]*shape[2]*shape[3]`` rows and
``shape[4]`` columns; DN ``shape[3]`` rows and ``shape[0]*shape[1]*shape[2]*shape[4]``
columns; NZ (fractals) ``shape[2]*shape[3]`` rows and ``shape[0]*shape[1]*shape[4]`` columns.

A tensor's GM layout (pto-isa's ``Layout``: ND, DN or NZ) is ``layout=`` when given, else
read from its last two dimensions' strides as ptoas infers a view's (:meth:`GlobalTensor.layout_for`;
its 2-D matrix is then the ND one): TLOAD / TSTORE move a tile only between the layouts pto-isa
pairs (``arch.catalogue.MOVE_LAYOUTS``).
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from ..errors import ConfigError, KernelError, MemoryConflictError
from ..arch.dtypes import as_dtype
from ..arch.vocab import GM_LAYOUTS, GM_SPLITS, TileLayout, gm_layout, row_major_strides
from ..sim.location import is_cpp, user_loc
from .context import here, site


def element_type(d) -> np.dtype:
    """``as_dtype(d)``; an unknown name is a KernelError at the kernel line."""
    try:
        return as_dtype(d)
    except ConfigError as e:
        raise KernelError(e.what, where=here(), fix=e.fix) from None


_new_ptr = object.__new__


class PointerArg(str):
    """The name of a run argument as a C++ kernel's ``__gm__`` pointer parameter (the ABI's
    :meth:`~ptopipe.cpp.abi.Dispatcher.pointer` puts it in ``GMPtr.bounds``): a view past it
    is fixed by the pointer arithmetic ``name + offset``, not a Python ``name.data()``."""
    __slots__ = ()


class GMPtr:
    """A typed GM address (``__gm__ T*``).  ``+``/``-`` move by elements.

    ``bounds`` is ``(lo, hi, name)``: the GM bytes of the run argument the pointer was
    derived from (``x.data() + n`` keeps them), so that a tile move through it past the
    argument - an off-by-one loop walking into the next tensor, which GM itself holds - is
    reported (:meth:`GlobalTensor.matrix`); None for an address made from an integer.  For
    a pointer handed out by TALLOC / TPOP(GlobalTensor) ``lo, hi`` are its ring slot (or
    the lane's split part of it) and ``name`` is not a string but an object whose
    ``explain(view, addr, extent)`` words the report (:class:`~ptopipe.isa.pipe.flows.SlotBounds`)."""
    __slots__ = ("addr", "dtype", "bounds")

    def __init__(self, addr: int, dtype, bounds: tuple | None = None):
        self.addr = int(addr)
        self.dtype = as_dtype(dtype)
        self.bounds = bounds

    def __add__(self, n: int) -> "GMPtr":
        p = _new_ptr(GMPtr)
        p.addr = self.addr + (n if type(n) is int else _elements(n, "+")) * self.dtype.itemsize
        p.dtype = self.dtype
        p.bounds = self.bounds
        return p

    def __sub__(self, n: int) -> "GMPtr":
        return GMPtr(self.addr - (n if type(n) is int else _elements(n, "-")) * self.dtype.itemsize,
                     self.dtype, self.bounds)

    def cast(self, dtype) -> "GMPtr":
        return GMPtr(self.addr, element_type(dtype), self.bounds)

    def __repr__(self) -> str:
        return f"GMPtr({self.addr:#x}, {self.dtype.name})"

    def __eq__(self, other) -> bool:
        return isinstance(other, GMPtr) and other.addr == self.addr and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash((self.addr, self.dtype))


def whole(n) -> "int | None":
    """``n`` as an int if it is a whole number - an integer (numpy's too) or a float holding
    one (``M * K / 2``) - else None: the one rule for the counts and offsets a kernel computes
    (a pointer offset, a GlobalTensor dimension, a TEXTRACT index), which int() would
    silently truncate (0.5 -> 0) or parse ("8" -> 8)."""
    try:
        return operator.index(n)
    except TypeError:
        pass
    if isinstance(n, (float, np.floating)) and np.isfinite(n) and float(n).is_integer():
        return int(n)
    return None


def _elements(n, op: str) -> int:
    """A GM pointer offset ``ptr + n`` as a whole number of elements; another value is a
    KernelError at the kernel line, not an address truncated to the element before it."""
    k = whole(n)
    if k is None:
        raise KernelError(f"GM pointer {op} {n!r}: a pointer moves by a whole number of elements, "
                          f"not by {type(n).__name__} {n!r}", where=site(),
                          fix="compute the offset with integers (// instead of /), e.g. "
                              "x.data() + (i * TM) // 2 * K")
    return k


def _pad5(t, fill, what: str) -> tuple:
    t = tuple(x if type(x) is int else _dim(x, t, what) for x in t)
    if len(t) > 5:
        raise KernelError(f"GlobalTensor has at most 5 dimensions, got {len(t)}: {t}", where=site(),
                          fix="merge the outer dimensions into one (pto-isa's GlobalTensor is 5-D: "
                              "its Shape and Stride take five values)")
    return (fill,) * (5 - len(t)) + t


def _dim(x, t, what: str) -> int:
    k = whole(x)
    if k is None:
        raise KernelError(f"GlobalTensor {what} {tuple(t)}: {x!r} is not a whole number of elements",
                          where=site(), fix=f"give the {what} as integers (// instead of /)")
    return k


def _geom2(shape, stride, item):
    """(shape, byte strides, byte extent) of the 2-D rows x cols view, or None if the four
    outer dimensions cannot be merged into one row dimension."""
    if 0 in shape:
        # no elements (a lane's [0, N] share of a split tail tile): the view touches no
        # memory, whatever its offset - an extent of 0 bytes
        return (shape[0] * shape[1] * shape[2] * shape[3], shape[4]), (stride[3] * item, stride[4] * item), 0
    dims = [(n, st) for n, st in zip(shape[:4], stride[:4]) if n > 1]
    rows = 1
    for n, _ in dims:
        rows *= n
    for (n0, s0), (n1, s1) in zip(dims, dims[1:]):
        if s0 != s1 * n1:
            return None
    rstride = dims[-1][1] if dims else shape[4] * stride[4]
    cols = shape[4]
    if rows == 0 or cols == 0:
        return (rows, cols), (rstride * item, stride[4] * item), 0
    extent = ((rows - 1) * rstride + (cols - 1) * stride[4] + 1) * item
    return (rows, cols), (rstride * item, stride[4] * item), extent


def _derive(shape, stride, item: int, layout=TileLayout.ND) -> tuple:
    """What a GlobalTensor derives from its shape, stride (None: row-major) and element
    size: the padded 5-D shape and stride, rows, cols, ``(rows, cols)`` (the matrix tile
    moves see), the 2-D geometry (:func:`_geom2`), whether ``matrix()`` gives a 2-D view
    (else the 5-D one), the bytes a view spans (0: none) and the row stride in bytes of the
    row grid that views at whole-row steps are slices of (0: no grid; see ``matrix()``)."""
    s = _pad5(shape, 1, "shape")
    st = row_major_strides(s) if stride is None else _pad5(stride, 0, "stride")
    if any(n < 0 for n in s):
        raise KernelError(f"GlobalTensor shape {tuple(shape)} has a negative dimension", where=site(),
                          fix="give every dimension as a count of elements, 0 or more")
    bad = next(((k, x) for k, (n, x) in enumerate(zip(s, st)) if x < 0 and n > 1), None)
    if bad is not None:
        raise KernelError(f"GlobalTensor of shape {tuple(shape)} with stride {tuple(stride)}: the stride of "
                          f"dimension {bad[0] - (5 - len(tuple(stride)))} is {bad[1]}, negative", where=site(),
                          fix="give every dimension of more than one element a stride >= 0: pto-isa's TLOAD / "
                              "TSTORE move rows with unsigned DMA gaps, so a view that walks GM backwards is none "
                              "they can move - reverse the data in a tile instead")
    split = GM_SPLITS.get(layout)
    if split is not None and any(s[k] != 1 for k in split[1][:-1]):
        # a DN / NZ tensor whose column dims other than d4 are not all 1: not a 2-D view (as
        # an ND one whose outer dims do not merge, the tile side is split instead: tile5)
        extent = 0 if 0 in s else item + sum((n - 1) * x * item for n, x in zip(s, st))
        rows = cols = 1
        for k in split[0]:
            rows *= s[k]
        for k in split[1]:
            cols *= s[k]
        return s, st, rows, cols, (rows, cols), None, False, extent, 0
    g = _geom2(s, st, item)
    extent = g[2] if g is not None else 0 if 0 in s else item + sum((n - 1) * x * item for n, x in zip(s, st))
    rows = s[0] * s[1] * s[2] * s[3]
    return (s, st, rows, s[4], (rows, s[4]), g, g is not None and g[2] != 0, extent,
            g[1][0] if g is not None and g[2] and g[1][0] > 0 else 0)


@functools.lru_cache(maxsize=4096)
def _geometry(shape: tuple, stride: "tuple | None", item: int, layout=TileLayout.ND) -> tuple:
    """:func:`_derive`, kept for a shape and stride given as tuples: a pure function of its
    arguments (equal ones - 16 and np.int64(16) - give equal results: _pad5 takes int() of
    each); an error is raised, never kept."""
    return _derive(shape, stride, item, layout)


class GlobalTensor:
    __slots__ = ("dtype", "shape", "stride", "ptr", "name", "layout", "_view", "_cache_key", "_cache_gm", "rows", "cols",
                 "shape2", "_geom2", "_rb", "_grid", "_grid_buf", "_grid_ph", "_grid_n", "item", "_mat2",
                 "_extent", "_lay")

    def __init__(self, ptr_or_dtype, shape, stride=None, name: str | None = None,
                 layout: TileLayout | None = None):
        if isinstance(ptr_or_dtype, GMPtr):
            self.ptr = ptr_or_dtype
            self.dtype = ptr_or_dtype.dtype
        elif isinstance(ptr_or_dtype, GlobalTensor):
            self.ptr = ptr_or_dtype.ptr
            self.dtype = ptr_or_dtype.dtype
        else:
            self.ptr = None
            self.dtype = element_type(ptr_or_dtype)
        self.name = name
        if layout is not None and layout not in GM_LAYOUTS:
            raise KernelError(f"a GlobalTensor's layout is one of {', '.join(l.name for l in GM_LAYOUTS)}, "
                              f"got {layout!r}", where=here(),
                              fix="pass layout=TileLayout.ND, TileLayout.DN or TileLayout.NZ (ptopipe.arch.vocab), "
                                  "or leave it out to have it read from the strides")
        self.layout = layout        # pto-isa's Layout; None: read from the strides (layout_for)
        self._view = None           # the matrix() view of GM ``_cache_gm`` at ``_cache_key``
        self._cache_key = None
        self._cache_gm = None       # a tensor reused by a later run sees another GM
        self.item = item = self.dtype.itemsize     # plain ints / bools for the hot paths (see Tile.item)
        # a kernel builds its views in its loops, each time from the same shape and stride
        d = None
        if type(shape) is tuple and (stride is None or type(stride) is tuple):
            try:
                d = _geometry(shape, stride, item, layout)
            except TypeError:                       # an unhashable element: made below
                pass
        if d is None:                               # (a list, an array, an iterator)
            d = _derive(shape, stride, item, layout)
        (self.shape, self.stride, self.rows, self.cols, self.shape2, self._geom2, self._mat2, self._extent,
         self._rb) = d
        self._grid = self._grid_buf = None
        self._grid_ph = self._grid_n = 0
        self._lay = None            # (a tile's layout, the GM layout a move with it sees): layout_for

    # -- pto-isa API --------------------------------------------------------------------
    def data(self) -> GMPtr:
        if self.ptr is None:
            raise self.unassigned("GlobalTensor.data()")
        return self.ptr

    def unassigned(self, use: str) -> KernelError:
        """The error of ``use`` (an instruction, or ``data()``) meeting this tensor before a
        TALLOC / TPOP gave it a GM address (on the device: an access through a null pointer)."""
        where = site()
        build = ("construct it from a __gm__ pointer, GlobalTensor<T, Shape<...>, Stride<...>> g(ptr + offset) "
                 "(a GlobalTensor constructed without one points nowhere)" if is_cpp(where) else
                 "build the tensor from a pointer (GlobalTensor(x.data() + n, shape))")
        return KernelError(f"{use}: {self.describe()} has no GM address yet - no TALLOC (producer) "
                           "or TPOP (consumer) has assigned it a ring slot", where=where,
                           fix="move the TALLOC (producer) / TPOP (consumer) that assigns the slot above "
                               f"this use; or {build}")

    def _as_number(self, *_):
        """A GlobalTensor used as a number (``M // 16``, ``range(M)``): an argument the run
        made a GM tensor because it was given as a numpy array."""
        if self.name:
            raise ConfigError(f"argument {self.name!r} is a GM tensor (run() was given a numpy array for it), "
                              "used here as a number", where=site(),
                              fix=f"pass {self.name!r} as a Python number (e.g. int(a[0]) of a 1-element "
                                  "array); only arrays become GM tensors")
        raise KernelError(f"{self.describe()} is used as a number", where=site(),
                          fix="a GlobalTensor is a view of GM: use its shape (GetShape) or a scalar argument")

    __int__ = __float__ = __index__ = __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = \
        __floordiv__ = __rfloordiv__ = __truediv__ = __rtruediv__ = __mod__ = __rmod__ = \
        __lt__ = __le__ = __gt__ = __ge__ = _as_number

    def GetShape(self, dim: int) -> int:
        return self.shape[dim]

    def GetStride(self, dim: int) -> int:
        return self.stride[dim]

    def assign(self, ptr: GMPtr) -> None:
        if ptr.dtype != self.dtype:
            ptr = GMPtr(ptr.addr, self.dtype)
        self.ptr = ptr

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.dtype.itemsize

    def view5(self, gm) -> np.ndarray:
        """The numpy 5-D view of GM (bounds-checked)."""
        return gm.view(self.ptr.addr, self.dtype, self.shape, self.stride,
                       what=lambda: f"access through {self.describe()}")

    def tile5(self, m: np.ndarray) -> np.ndarray:
        """The tile side of a move whose GM side is the 5-D view (``matrix()`` of a tensor that
        is not a 2-D view): the rows x cols matrix ``m`` as a view in this tensor's dim order
        (its layout says which dims the rows and the columns are made of)."""
        split = GM_SPLITS.get(self.layout)
        if split is None:
            return m.reshape(self.shape)
        s = self.shape
        dims = split[0] + split[1]
        return m.reshape(tuple(s[k] for k in dims)).transpose(tuple(dims.index(k) for k in range(5)))

    def matrix(self, gm) -> np.ndarray:
        """The rows x cols view of GM used by tile moves (bounds-checked; cached per GM
        memory and address).

        A pointer moved by whole rows (the usual tile loop) gets its view as a slice of a
        row grid of GM, which is cheaper than building a view.  When the outer dimensions
        cannot be merged into rows without a copy, the 5-D view is returned instead
        (callers then reshape the tile side)."""
        p = self.ptr
        addr = p.addr
        if self._cache_key == addr and self._cache_gm is gm:
            return self._view
        b = p.bounds
        if b is not None and (addr < b[0] or addr + self._extent > b[1]) and self._extent:
            self._out_of_bounds(p)
        rb = self._rb
        if rb:
            row, ph = divmod(addr, rb)
            if ph != self._grid_ph or self._grid_buf is not gm.buf:
                self._set_grid(gm, ph)
            end = row + self.rows
            if row < 0 or end > self._grid_n:
                gm.check(addr, self._geom2[2], lambda: f"access through {self.describe()}")   # raises
            v = self._grid[row:end]
        else:
            g = self._geom2
            if g is None or g[2] == 0:
                v = self.view5(gm)
            else:                               # rows that do not advance: build the view
                if not 0 <= addr <= gm.size - g[2]:
                    gm.check(addr, g[2], lambda: f"access through {self.describe()}")   # raises
                v = np.ndarray(g[0], self.dtype, gm.buf, addr, g[1])
        self._view = v
        self._cache_key = addr
        self._cache_gm = gm
        return v

    def _out_of_bounds(self, p: GMPtr):
        """The bytes of this view at ``p`` leave the run argument (or the ring slot) ``p``
        points into."""
        lo, hi, name = p.bounds
        extent = self._extent
        loc = user_loc()
        item = self.dtype.itemsize
        if not isinstance(name, str):           # a TALLOCed / popped slot: it words the report
            what, fix = name.explain(self.describe(), p.addr, extent,
                                     self.stride[3] * item if self.shape[3] > 1 else None)
            raise MemoryConflictError(what, where=here() or (str(loc) if loc is not None else None), fix=fix)
        n = (hi - lo) // item
        if isinstance(name, PointerArg):
            fix = (f"keep the view within '{name}': check the loop bound and the offset added to the "
                   f"pointer ({name} + offset): the view's {extent // item} elements from there must end "
                   f"within {name}[0 .. {n})")
        elif (here() or "").split(":", 1)[0].endswith((".pto", "<pto>")):          # a .pto's op
            fix = (f"keep the view within '{name}': check the loop bound and the offsets of its "
                   f"pto.partition_view (and a pto.addptr on the pointer): the view's {extent // item} elements "
                   f"from there must end within {name}[0 .. {n})")
        else:
            fix = f"keep the view within '{name}': check the loop bound and the offset added to {name}.data()"
        e = MemoryConflictError(
            f"access out of bounds: {self.describe()} covers GM [{p.addr:#x}, {p.addr + extent:#x}), "
            f"outside argument '{name}' [{lo:#x}, {hi:#x}) that its pointer comes from "
            f"(elements {(p.addr - lo) // item} to {(p.addr + extent - lo) // item - 1} of "
            f"{n})", where=here() or (str(loc) if loc is not None else None), fix=fix)
        e.argument = str(name)          # the run argument left (a launcher may say how it was made)
        raise e

    def _set_grid(self, gm, phase: int) -> None:
        """GM seen as consecutive ``cols``-wide rows from byte ``phase``: any view at
        ``phase`` plus whole rows is a slice of it."""
        (_, cols), (rbytes, cbytes), _ = self._geom2
        row_extent = (cols - 1) * cbytes + self.dtype.itemsize
        n = max(0, (gm.size - phase - row_extent) // rbytes + 1)
        self._grid = np.ndarray((n, cols), self.dtype, gm.buf, phase, (rbytes, cbytes))
        self._grid_buf, self._grid_ph, self._grid_n = gm.buf, phase, n

    def byte_ranges(self):
        """The half-open byte ranges this view covers (for race and overlap checks)."""
        item = self.dtype.itemsize
        base = self.ptr.addr
        s, st = self.shape, self.stride
        rows = []
        if st[4] == 1:
            run = s[4] * item
            for i0 in range(s[0]):
                for i1 in range(s[1]):
                    for i2 in range(s[2]):
                        for i3 in range(s[3]):
                            a = base + (i0 * st[0] + i1 * st[1] + i2 * st[2] + i3 * st[3]) * item
                            rows.append((a, a + run))
        else:
            v = np.indices(s).reshape(5, -1).T @ np.array(st) * item + base
            rows = [(int(a), int(a) + item) for a in v]
        return rows

    def layout_for(self, tile) -> TileLayout:
        """The GM layout a move with ``tile`` sees: ``layout`` when given, else ptoas's reading
        of the last two dimensions (:func:`ptopipe.arch.vocab.gm_layout`)."""
        if self.layout is not None:
            return self.layout
        # the last answer, for the tile layout it was for: a tensor's shape and strides are
        # fixed when it is made (assign moves its pointer only), so it stays right
        tl = tile.layout
        c = self._lay
        if c is not None and c[0] is tl:
            return c[1]
        lay = gm_layout(self.shape[3], self.shape[4], self.stride[3], self.stride[4], tl)
        self._lay = (tl, lay)
        return lay

    def describe(self, ptr: "GMPtr | None" = None) -> str:
        """Readable description; ``ptr`` overrides the current address (for past accesses)."""
        nm = f" '{self.name}'" if self.name else ""
        ptr = ptr if ptr is not None else self.ptr
        at = f" @GM[{ptr.addr:#x}]" if ptr is not None else ""
        lay = f" layout={self.layout.name}" if self.layout is not None else ""
        return f"GlobalTensor{nm} {self.dtype.name} shape={self.shape} stride={self.stride}{lay}{at}"

    def __repr__(self) -> str:
        return f"<{self.describe()}>"
