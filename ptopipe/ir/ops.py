"""The op registry: every op's DSL signature (operands and compile-time attributes) and
its typing rule.  The tile ops are those of the arch op catalogue (one spec per catalogue
op with a DSL name, typed by its operand form and checked by its dtype / scalar rules),
defined here with ``pl.call`` and ``pl.get_subblockid``; the pipe and sync ops are the op
classes of :mod:`.opdefs`, each registering the spec derived from its fields
(:func:`register`).

One table serves the DSL parser (binding call arguments, inferring result types), the
printer (printing calls back as DSL source) and the verifier (re-checking types).  A
typing rule raises :class:`OpError` naming the offending parameter, so that errors
point at the argument in the source.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Callable

from ..arch.catalogue import (ATOMIC_ADD_DTYPES, CONVERTS_FROM, LOAD_DST, MOVES, RELU_CONV, STORE_SRC,
                              matmul_dtype_fix, op_scalar_error, tcvt_pair_error)
from ..arch.catalogue import MASK_DTYPES as _MASK_NP
from ..arch.catalogue import MATMUL_ACCUM, SCRATCH_BEFORE_SCALAR, SCRATCH_COLS, SCRATCH_DTYPE
from ..arch.catalogue import OPS as CATALOGUE
from ..arch.dtypes import short_name
from ..arch.vocab import AtomicType, CmpMode, Direction, TileLayout, TileSplitAxis, gm_matrix
from .vocab import FunctionKind
from .types import (BOOL, FLOAT_DTYPES, INDEX, NONE, TILE_SPACES, BufferType, MemorySpace,
                    ScalarType, TensorType, TileValueType, Type, accum_dtype, describe, np_dtype)
from ..errors import with_article

REQUIRED = object()


@dataclass(frozen=True)
class ConstArg:
    """A constant operand as the typing rules see it (they check its value, e.g. a scalar
    the dtype cannot hold); any other operand reaches them as itself (they read ``.type``)."""
    value: object
    type: Type

# attribute kinds: "shape" (tuple of ints), "dtype" (str), "space" (MemorySpace),
# "split" (int), "dir" (int), "int" (int or None), "type" (a Tensor/Tile Type),
# "layout" (a TileLayout or None: the space's default), "pipe" (a SyncPipe: pl.PIPE_MTE2 ...),
# "symbol" (a function's name: a str, or the @pl kernel itself in DSL source).
# operand kinds: "value" (an expression), "values" (a list of expressions).
OPERAND_KINDS = ("value", "values")

# split and direction attributes hold the arch enums (IntEnums: the printer spells them
# by member name, the parser accepts the pl constants, which are the same members)
SPLITS = {s: s.name for s in TileSplitAxis}
DIRS = {d: d.name for d in Direction}
C2V, V2C = Direction.DIR_C2V, Direction.DIR_V2C
INIT_DIRS = (Direction.DIR_C2V, Direction.DIR_V2C, Direction.DIR_BOTH, Direction.DIR_C2V_GM,
             Direction.DIR_V2C_GM, Direction.DIR_BOTH_GM)


def init_ways(dir_mask) -> tuple:
    """The one-way directions (DIR_C2V, DIR_V2C) a pipe initialisation with ``dir_mask`` of
    :data:`INIT_DIRS` sets up, in flag order (a *_GM form as its plain mask).  A function
    initialises each (direction, pipe id) once: :class:`Ring`."""
    return tuple(w for w in (C2V, V2C) if int(dir_mask) & 3 & w)


class Ring(tuple):
    """One ring of a kernel: its one-way direction (DIR_C2V / DIR_V2C) and its pipe id - the
    ``id=`` of the ``*_initialize_pipe`` that sets it up (pypto's frontend pipe id; 0 when
    not given).  A function may set up several rings of one direction with different ids;
    each TPUSH / TPOP / TFREE / TALLOC names its ring by ``id=`` or by the buffer it passes
    (:func:`ptopipe.ir.pipe_config.ring_of`).  A key of the passes' and the runtime's
    per-ring state; spelled "C2V" for id 0 and "C2V id=1" otherwise ("the C2V id=1 ring")."""
    __slots__ = ()

    def __new__(cls, direction, pipe_id=None):
        return tuple.__new__(cls, (Direction(direction), int(pipe_id or 0)))

    def __getnewargs__(self):          # pickle: the fields, as __new__ takes them
        return tuple(self)

    @property
    def direction(self) -> Direction:
        return self[0]

    @property
    def id(self) -> int:
        return self[1]

    @property
    def way(self) -> str:
        """"C2V" or "V2C"."""
        return self[0].name[4:]

    @property
    def label(self) -> str:
        return self.way if not self[1] else f"{self.way} id={self[1]}"

    def __repr__(self) -> str:
        return f"Ring({self.label})"


class OpError(Exception):
    def __init__(self, msg: str, fix: str | None = None, param: str | None = None):
        super().__init__(msg)
        self.msg, self.fix, self.param = msg, fix, param

    def about(self, dsl: str, name: str | None = None) -> str:
        """``name: msg`` for op ``dsl`` (``name`` defaults to it), the message's own leading
        ``dsl: `` dropped so the op is named once."""
        msg = self.msg[len(dsl) + 2:] if self.msg.startswith(dsl + ": ") else self.msg
        return f"{name or dsl}: {msg}"


@dataclass(frozen=True)
class Param:
    name: str
    kind: str
    default: object = REQUIRED

    @property
    def operand(self) -> bool:
        return self.kind in OPERAND_KINDS


class Along(Enum):
    """How a tile op's result depends on its tile operands along one axis (rows or columns):
    what decides whether the op still computes its part of the result when each Vector core
    holds only half of its tiles along that axis (a split mixed function)."""
    SAME = "element-wise"     # result index i reads operand index i (an operand of extent 1
                              # there is broadcast)
    MIXES = "mixes"           # result index i reads other indices too: a reduction, an
                              # arg-reduction, pair sums, a concatenation, a sort
    SWAPS = "swaps"           # result index i along this axis is operand index i along the
                              # other axis (a transpose)
    MAKES = "makes"           # made from the op's shape attribute, the same at every index
    COUNTS = "counts"         # made from the shape attribute, a value that grows with the
                              # index (a sequence, a triangle): see Axes.start


#: what an op does to tile data, for the ops that do not compute a Vec tile element by
#: element from Vec tiles (``Axes.kind``; "tile" for those that do)
AXES_KINDS = {
    "tile": "computes a tile from tiles: Axes.rows / Axes.cols say how",
    "none": "touches no tile data (scalars, sync, ring set-up, buffers, calls)",
    "carry": "passes its values through unchanged (copy, loops, branches, yields)",
    "window": "moves a window of a GM tensor (load, store): a split moves the window",
    "ring": "moves a tile across cores (TPUSH, TPOP): the ring carries the split",
    "cube": "a Cube tile op (matmul, extract, an accumulator): never on a Vector core",
}


@dataclass(frozen=True)
class Axes:
    """The declared data dependence of an op along each tile axis: for a ``"tile"`` op how
    its result depends on its operands along rows (``rows``) and columns (``cols``); else
    only ``kind`` (:data:`AXES_KINDS`).  ``start``: for a COUNTS axis, the scalar operand the
    values start at and, per axis, what one index along it adds to that start (a core that
    holds indices from k on starts at start + k * step); ``per_row`` / ``per_col``: tile
    operands read at one column / one row for every column / row (a row_expand_* row,
    dequant's scale): they must be held whole along that axis; ``mask``: a packed predicate
    mask operand of the result's shape (select), split with it; ``packs``: the result is the
    packed predicate mask of its operands (a bit per column: cmp), whose columns are not
    theirs."""
    kind: str = "tile"
    rows: Along | None = None
    cols: Along | None = None
    start: str | None = None
    step: tuple = (0, 0)
    per_row: tuple = ()
    per_col: tuple = ()
    mask: tuple = ()
    packs: bool = False

    def __post_init__(self):
        if self.kind not in AXES_KINDS:
            raise ValueError(f"Axes kind {self.kind!r} is not one of {', '.join(AXES_KINDS)}")
        if (self.kind == "tile") != (self.rows is not None and self.cols is not None):
            raise ValueError("a tile op's Axes gives rows and cols (only a tile op's does)")
        if (Along.COUNTS in (self.rows, self.cols)) != (self.start is not None):
            raise ValueError("Axes: a COUNTS axis names the start operand (and only then)")

    def along(self, axis: int) -> Along:
        return self.rows if axis == 0 else self.cols


def _axes(rows: Along, cols: Along, **kw) -> Axes:
    return Axes("tile", rows, cols, **kw)


#: the Axes of the common kinds
ELEMENTWISE = _axes(Along.SAME, Along.SAME)
NO_TILE, CARRIES, WINDOW, RING, CUBE = (Axes(k) for k in ("none", "carry", "window", "ring",
                                                          "cube"))


@dataclass(frozen=True)
class OpSpec:
    name: str                 # IR op name
    dsl: str                  # spelling in DSL source: pl.<dsl>
    params: tuple
    infer: Callable           # (kind, args: dict, attrs: dict) -> Type
    doc: str = ""
    aliases: tuple = field(default=())
    role: str | None = None   # a cross-core op's end of the ring: "producer" / "consumer"
    axes: Axes | None = None  # its data dependence along rows / columns (every op has one)

    @cached_property        # a spec is immutable; the parser, verifier and writers ask per op
    def operands(self) -> tuple:
        return tuple(p for p in self.params if p.operand)

    @cached_property
    def attr_params(self) -> tuple:
        return tuple(p for p in self.params if not p.operand)


#: every op's OpSpec by name: written once, at import, by this module's definitions (_op)
OPS: dict = {}


def _op(name, params, infer, axes, dsl=None, doc="", aliases=()):
    return register(OpSpec(name, dsl or name, tuple(Param(*p) for p in params), infer, doc,
                           tuple(aliases), axes=axes))


def register(spec: OpSpec) -> OpSpec:
    """Add ``spec`` to the table (an op's name is defined once, with its :class:`Axes`)."""
    if spec.name in OPS:
        raise ValueError(f"op {spec.name!r} is defined twice")
    if not isinstance(spec.axes, Axes):
        raise ValueError(f"op {spec.name!r} declares no Axes (how its result depends on its "
                         "operands along rows and columns: what a split mixed function needs)")
    OPS[spec.name] = spec
    return spec


# -- typing helpers -------------------------------------------------------------------------
def _t(x):
    return getattr(x, "type", None)


#: where an Acc tile comes from (no move writes Acc: pto-isa has no Vec/Mat -> L0C path)
_ACC_FROM = ("an Acc tile is made by pl.matmul, or by pl.create(shape, dtype, space=pl.Acc) "
             "overwritten on the first step by pl.matmul_acc(acc, a, b, init_cond=(k == 0)): a "
             "zero-initialised accumulator")


def _tile(args, p, spaces=None) -> TileValueType:
    t = _t(args[p])
    if not isinstance(t, TileValueType):
        raise OpError(f"'{p}' must be a tile, got {describe(t) if t else 'nothing'}",
                      "pass a tile value (from pl.load, pl.move, an op, or TPOP)", p)
    if spaces and t.space not in spaces:
        fix = (_ACC_FROM if spaces == (MemorySpace.Acc,) else
               f"move it first, e.g. pl.move(x, space=pl.{spaces[0].value})")
        want = " or ".join(s.value for s in spaces)
        raise OpError(f"'{p}' is {with_article(describe(t))}; this op needs "
                      f"{with_article(want)} tile", fix, p)
    return t


def _scalar(args, p) -> ScalarType:
    t = _t(args[p])
    if not isinstance(t, ScalarType):
        raise OpError(f"'{p}' must be a scalar, got {describe(t) if t else 'nothing'}",
                      "pass a number or a scalar expression", p)
    return t


def _tensor(args, p) -> TensorType:
    t = _t(args[p])
    if not isinstance(t, TensorType):
        raise OpError(f"'{p}' must be a GM tensor, got {describe(t) if t else 'nothing'}",
                      "pass a tensor parameter (typed pl.Tensor[[...], dtype])", p)
    return t


def _same(a: TileValueType, b: TileValueType, what: str, p: str):
    if a.shape != b.shape:
        raise OpError(f"{what}: shapes differ ({a.shape[0]}x{a.shape[1]} vs {b.shape[0]}x{b.shape[1]})",
                      "operands of element-wise ops must have the same shape (or one of them "
                      "one column [rows, 1] or one row [1, cols] of the other: it is broadcast)", p)
    if a.dtype != b.dtype:
        raise OpError(f"{what}: dtypes differ ({a.dtype} vs {b.dtype})",
                      "convert one operand with pl.cast(x, dtype) first", p)


VEC = (MemorySpace.Vec,)


def _buffer(args, p, kind) -> None:
    t = _t(args[p])
    if not isinstance(t, BufferType) or t.kind != kind:
        want = ("the consumer's pl.reserve_buffer(...)" if kind == "reserve"
                else "the producer's pl.import_peer_buffer(...)")
        fix = "TPUSH/TALLOC take the imported peer buffer, TPOP/TFREE the reserved buffer"
        if isinstance(t, BufferType) and kind == "import":       # a push into a ring it consumes
            fix = ("this function reserved the buffer, so it is the consumer of that ring (TPOP / "
                   "TFREE): push from the peer function that imports it, or, to send data the other "
                   "way, reserve a ring in the peer and pl.import_peer_buffer it here")
        elif isinstance(t, BufferType):                          # a pop from a ring it produces into
            fix = ("this function imported the buffer, so it is the producer into that ring (TPUSH / "
                   "TALLOC): pop in the peer function that reserves it, or, to receive data from "
                   "the peer, pl.reserve_buffer a ring here and import it in the peer")
        name = getattr(args[p], "name", None)      # (the kernel's own name for it, where it has one)
        got = describe(t) if t else "nothing"
        raise OpError(f"'{p}' must be {want}, got {f'%{name}, {got}' if name else got}", fix, p)


def _infer_dir(kind: FunctionKind, attrs, role: str) -> int:
    d = attrs.get("direction")
    inferred = None
    if kind is FunctionKind.AIC:
        inferred = C2V if role == "producer" else V2C
    elif kind is FunctionKind.AIV:
        inferred = V2C if role == "producer" else C2V
    if d is None:
        if inferred is None:
            raise OpError("the direction of a cross-core op in a mixed function cannot be "
                          "inferred", "pass direction=pl.DIR_C2V or pl.DIR_V2C", "direction")
        return inferred
    if d not in (C2V, V2C):
        raise OpError(f"direction must be DIR_C2V or DIR_V2C, got {DIRS.get(d, d)}",
                      param="direction")
    if inferred is not None and d != inferred:
        raise OpError(f"{with_article(kind.value.upper())} function is the {role} only of "
                      f"{DIRS[inferred]}, not {DIRS[d]}", f"use direction=pl.{DIRS[inferred]} "
                      "or move the op to the other core's function", "direction")
    return d


# -- data movement ----------------------------------------------------------------------------
def _offsets(op: str, offs) -> None:
    """GM offsets are element indices: integer scalars (a float one - ``/`` where ``//`` was
    meant - would be truncated silently at run time)."""
    for k, o in enumerate(offs):
        t = _t(o)
        if not isinstance(t, ScalarType):
            raise OpError(f"{op} offsets must be scalars", param="offsets")
        if t.dtype in FLOAT_DTYPES:
            raise OpError(f"{op}: offset {k} is {with_article(t.dtype)} scalar, but GM offsets are element "
                          "indices", "use // (floor division) for index arithmetic, not /", "offsets")


def _load(kind, a, at):
    t = _tensor(a, "tensor")
    offs, shape, space = a["offsets"].items, at["shape"], at["space"]
    if len(offs) != len(t.shape):
        raise OpError(f"load: {len(offs)} offsets for a {len(t.shape)}-D tensor",
                      "give one offset per tensor dimension", "offsets")
    if len(shape) != len(t.shape):
        raise OpError(f"load: shape has {len(shape)} dims for a {len(t.shape)}-D tensor",
                      "give one extent per tensor dimension", "shape")
    _offsets("load", offs)
    for s, ts in zip(shape, t.shape):
        if s <= 0 or s > ts:
            raise OpError(f"load: extent {s} does not fit tensor dimension {ts}",
                          f"load a window within the {'x'.join(map(str, t.shape))} tensor: each extent "
                          "from 1 up to its dimension (several loads for a larger tile)", "shape")
    if space not in LOAD_DST:
        raise OpError(f"load into {with_article(space.value)} tile: GM loads go to Vec (UB) or Mat (L1)",
                      "load into pl.Mat, then pl.move(x, space=pl.Left)", "space")
    lay = at.get("gm_layout")
    if lay is not None:                 # a .pto view's DN / NZ window (see gm_window)
        return TileValueType(gm_matrix(shape, lay), t.dtype, space)
    rows = 1
    for s in shape[:-1]:
        rows *= s
    return TileValueType((rows, shape[-1]), t.dtype, space)


def gm_window(op) -> tuple:
    """The GM window of a load / store op, in its tensor's dims: a load's ``shape``; a store's
    ``window`` when it has one (a ``.pto`` store into a ``pto.partition_view``: the view's sizes,
    set by the value-IR reader), else the tile's :func:`store_window`.  Either may carry a
    ``gm_layout`` (a ``.pto`` view's DN / NZ layout, :func:`gm_layout_of`): a tile move then
    sees the window as pto-isa's TLOAD / TSTORE do (:func:`~ptopipe.arch.vocab.gm_matrix`)."""
    at = op.attributes
    w = at.get("window") or at.get("shape")
    if w is not None:
        return tuple(w)
    return store_window(op.tensor.type.shape, op.tile.type.shape)


def gm_layout_of(op) -> TileLayout | None:
    """The GM layout of a load / store's window: DN or NZ for a ``.pto`` view of that layout
    (the value-IR reader's ``gm_layout``), else None (ND: the IR's tensors are dense row-major)."""
    return op.attributes.get("gm_layout")


def store_window(tensor_shape, tile_shape) -> tuple:
    """The GM window, in the tensor's rank, a ``pl.store`` of a tile of ``tile_shape`` writes
    into a tensor of ``tensor_shape``: the tile's columns along the last dimension, its rows
    along the one before and 1 along the others; a 1-D tensor takes the tile's one row (the
    store's typing rule allows no more) - how a load's window became its 2-D tile, reversed."""
    r, c = tile_shape
    rank = len(tensor_shape)
    return (c,) if rank == 1 else (1,) * (rank - 2) + (r, c)


def _store(kind, a, at):
    tile = _tile(a, "tile", STORE_SRC)
    t = _tensor(a, "tensor")
    offs = a["offsets"].items
    if len(offs) != len(t.shape):
        raise OpError(f"store: {len(offs)} offsets for a {len(t.shape)}-D tensor",
                      "give one offset per tensor dimension", "offsets")
    _offsets("store", offs)
    if tile.dtype != t.dtype and tile.space is not CONVERTS_FROM:
        raise OpError(f"store: tile is {tile.dtype} but the tensor is {t.dtype}",
                      "only Acc tiles convert on store; pl.cast(x, dtype) first", "tile")
    window = at.get("window")
    if window is not None:              # a .pto partition view's sizes (see gm_window)
        _store_window_fits(tile, t, tuple(window), at.get("gm_layout"))
    else:
        _store_fits(tile, t)
    atomic = at.get("atomic")
    if atomic is not None and atomic not in set(AtomicType):
        raise OpError(f"store: atomic is {atomic!r}; 0 stores, 1 adds the tile into the tensor",
                      "pass atomic=pl.ATOMIC_ADD (or leave it out: a plain store)", "atomic")
    if atomic == AtomicType.AtomicAdd and np_dtype(t.dtype) not in ATOMIC_ADD_DTYPES:
        raise OpError(f"store: an atomic add into a {t.dtype} tensor; the atomic unit adds "
                      f"{', '.join(short_name(d) for d in ATOMIC_ADD_DTYPES)} in GM",
                      "add in one of those dtypes, or store the reduced result from one core", "atomic")
    return NONE


def _store_window_fits(tile, t, window: tuple, layout) -> None:
    """A store into the GM ``window`` of tensor ``t`` (in ``layout``): one extent per dimension,
    each within it, moving the tile's shape (pto-isa's TSTORE asserts the GM shape is the
    tile's)."""
    if len(window) != len(t.shape):
        raise OpError(f"store: a window of {len(window)} dims into a {len(t.shape)}-D tensor",
                      "give one extent per tensor dimension", "window")
    for w, n in zip(window, t.shape):
        if w <= 0 or w > n:
            raise OpError(f"store: extent {w} does not fit tensor dimension {n}",
                          f"store a window within the {'x'.join(map(str, t.shape))} tensor", "window")
    moved = gm_matrix(window, layout)
    if moved != tuple(tile.shape):
        how = f" ({layout.name})" if layout is not None else ""
        raise OpError(f"store: a {tile.shape[0]}x{tile.shape[1]} tile into the window {list(window)}{how}, "
                      f"which a store moves as {moved[0]}x{moved[1]}",
                      "store a tile of the window's shape", "tile")


def _store_fits(tile, t) -> None:
    """A ``pl.store`` of ``tile`` into tensor ``t``: its window (:func:`store_window`) fits."""
    inner = t.shape[-1]
    outer = 1
    for s in t.shape[:-1]:
        outer *= s
    if tile.shape[1] > inner or tile.shape[0] > outer:
        raise OpError(f"store: a {tile.shape[0]}x{tile.shape[1]} tile does not fit tensor "
                      f"{'x'.join(map(str, t.shape))}",
                      "check that the store names the tensor meant; else store the tile in parts no larger "
                      "than the tensor", "tile")
    if len(t.shape) > 2 and tile.shape[0] > t.shape[-2]:
        # (a load's window [2, 8, 16] made a 16x16 tile; its store is not that window reversed)
        window = store_window(t.shape, tile.shape)
        raise OpError(f"store: a {tile.shape[0]}x{tile.shape[1]} tile into the {len(t.shape)}-D tensor "
                      f"{'x'.join(map(str, t.shape))} writes the window {list(window)} - its rows along "
                      f"the next-to-last dimension ({t.shape[-2]}), 1 along the others - which does not fit",
                      f"store it in parts of at most {t.shape[-2]} rows, one per index of the leading "
                      "dimensions (a load of a window with several of them gives their rows one after "
                      "another)", "tile")


#: the moves that cross from one core to the other in a mixed (InCore) function: each is a
#: boundary ExpandMixedKernel turns into TPUSH / TPOP (Acc -> Vec: C2V, Vec -> Mat/Left/Right: V2C)
BOUNDARY_MOVES = {(MemorySpace.Acc, MemorySpace.Vec): Direction.DIR_C2V,
                  (MemorySpace.Vec, MemorySpace.Mat): Direction.DIR_V2C,
                  (MemorySpace.Vec, MemorySpace.Left): Direction.DIR_V2C,
                  (MemorySpace.Vec, MemorySpace.Right): Direction.DIR_V2C}


#: the local moves of the IR: the catalogue's TMOV paths between IR tile spaces - the one
#: table that decides a ``pl.move``'s legality, and the one its error lists
LOCAL_MOVES = {(s, d): pipe for (s, d), pipe in MOVES.items()
               if s in TILE_SPACES and d in TILE_SPACES}
LOCAL_MOVE_PATHS = ", ".join(f"{s.value}->{d.value}" for s, d in LOCAL_MOVES)
BOUNDARY_PATHS = ", ".join(f"{s.value}->{d.value} ({w.name[4:]})"
                          for (s, d), w in BOUNDARY_MOVES.items())


def _move(kind, a, at):
    t = _tile(a, "tile")
    space, dtype = at["space"], at["dtype"] or t.dtype
    crossing = kind is FunctionKind.InCore and (t.space, space) in BOUNDARY_MOVES
    if (t.space, space) not in LOCAL_MOVES and not crossing:
        cross = (f"; across cores (in a mixed @pl.incore function): {BOUNDARY_PATHS}"
                 if kind is FunctionKind.InCore else "; across cores use TPUSH/TPOP")
        acc = f"; {_ACC_FROM}" if space is MemorySpace.Acc else ""
        raise OpError(f"move from {t.space.value} to {space.value} is not a local path",
                      f"valid: {LOCAL_MOVE_PATHS}{cross}{acc}", "space")
    if dtype != t.dtype and t.space is not CONVERTS_FROM:
        raise OpError("move converts dtypes only from Acc tiles", "use pl.cast on Vec tiles",
                      "dtype")
    return TileValueType(t.shape, dtype, space, at.get("layout"))


def _extract(kind, a, at):
    t = _tile(a, "tile", (MemorySpace.Mat,))
    _scalar(a, "row")
    _scalar(a, "col")
    shape, space = at["shape"], at["space"]
    if space not in (MemorySpace.Left, MemorySpace.Right):
        raise OpError("extract goes to a Left or Right tile", param="space")
    if len(shape) != 2 or shape[0] > t.shape[0] or shape[1] > t.shape[1]:
        raise OpError(f"extract: block {shape} does not fit the {t.shape} source", param="shape")
    return TileValueType(tuple(shape), t.dtype, space)


def _mm_check(a_t, b_t):
    if a_t.shape[1] != b_t.shape[0]:
        raise OpError(f"matmul: shapes do not chain ({a_t.shape[0]}x{a_t.shape[1]} @ "
                      f"{b_t.shape[0]}x{b_t.shape[1]})", "a is MxK, b is KxN", "b")
    if a_t.dtype != b_t.dtype:
        raise OpError(f"matmul: a is {a_t.dtype} but b is {b_t.dtype}",
                      f"give a and b one dtype: load both as {a_t.dtype} (or both as {b_t.dtype}), or "
                      "convert one on the Vector core with pl.cast before it crosses to the Cube", "b")


def _matmul(kind, a, at):
    x = _tile(a, "a", (MemorySpace.Left,))
    y = _tile(a, "b", (MemorySpace.Right,))
    _mm_check(x, y)
    acc = accum_dtype(x.dtype)
    if acc is None:
        raise OpError(f"matmul: the Cube does not take {x.dtype} inputs", matmul_dtype_fix(), "a")
    return TileValueType((x.shape[0], y.shape[1]), acc, MemorySpace.Acc)


def _matmul_acc(kind, a, at):
    c = _tile(a, "acc", (MemorySpace.Acc,))
    out = _matmul(kind, a, at)
    if c.shape != out.shape or c.dtype != out.dtype:
        raise OpError(f"matmul_acc: accumulator is {describe(c)} but a @ b is {describe(out)}",
                      param="acc")
    return out


def _binary(kind, a, at):
    x = _tile(a, "a", VEC)
    y = _tile(a, "b", VEC)
    _same(x, y, "element-wise op", "b")
    return x


def _scalar_op(kind, a, at):
    x = _tile(a, "a", VEC)
    _scalar(a, "scalar")
    return x


def _unary(kind, a, at):
    x = _tile(a, "a", VEC)
    return x


def _row_reduce(kind, a, at):
    x = _tile(a, "a", VEC)
    return TileValueType((x.shape[0], 1), x.dtype, MemorySpace.Vec)


def _col_reduce(kind, a, at):
    x = _tile(a, "a", VEC)
    return TileValueType((1, x.shape[1]), x.dtype, MemorySpace.Vec)


def _row_expand(kind, a, at):
    x = _tile(a, "a", VEC)
    r = _tile(a, "row", VEC)
    if r.shape[0] != x.shape[0] or r.dtype != x.dtype:
        raise OpError(f"row-expand: per-row operand {describe(r)} does not match {describe(x)}",
                      "the second operand needs one row per row of the first (e.g. pl.row_sum)",
                      "row")
    if r.shape[1] != 1 or r.effective_layout is not TileLayout.DN:
        # pto-isa's TROWEXPAND* take the per-row operand as a ColMajor column with one valid
        # column (mode 1; the CPU model asserts "invalid src1 shape" otherwise); its RowMajor
        # mode 2 repeats a 32-byte block along each row, which is not what pl.row_expand_* means
        raise OpError(f"row-expand: per-row operand {describe(r)} is not a one-column DN tile, the "
                      "per-row operand pto-isa's TROWEXPAND* take",
                      "pass a [rows, 1] Vec tile in the default layout (DN), e.g. the result of "
                      "pl.row_sum / pl.row_max", "row")
    return x


def _ternary(kind, a, at):
    x = _tile(a, "a", VEC)
    _same(x, _tile(a, "b", VEC), "element-wise op", "b")
    _same(x, _tile(a, "c", VEC), "element-wise op", "c")
    return x


def _scalar_ternary(kind, a, at):
    x = _tile(a, "a", VEC)
    _scalar(a, "scalar")
    _same(x, _tile(a, "b", VEC), "element-wise op", "b")
    return x


def _col_expand(kind, a, at):
    x = _tile(a, "a", VEC)
    c = _tile(a, "col", VEC)
    if c.shape[1] != x.shape[1] or c.dtype != x.dtype:
        raise OpError(f"column-expand: per-column operand {describe(c)} does not match {describe(x)}",
                      "the second operand needs one column per column of the first (e.g. pl.col_sum)",
                      "col")
    return x


def _full(kind, a, at):
    _scalar(a, "value")
    shape = at["shape"]
    if len(shape) != 2:
        raise OpError("full: tiles are 2-D", param="shape")
    return TileValueType(tuple(shape), at["dtype"], MemorySpace.Vec)


def _cast(kind, a, at):
    x = _tile(a, "a", VEC)
    bad = tcvt_pair_error(np_dtype(x.dtype), np_dtype(at["dtype"]))     # on either platform
    if bad is not None:
        raise OpError(f"cast: {bad[0]}", bad[1], "a")
    return TileValueType(x.shape, at["dtype"], MemorySpace.Vec)


def _part(kind, a, at):
    """The part ops (TPARTADD ...) work over the union of two valid regions: one source
    covers the result, the other fits inside it (a DSL tile is valid over its whole shape)."""
    x = _tile(a, "a", VEC)
    y = _tile(a, "b", VEC)
    if x.dtype != y.dtype:
        raise OpError(f"part op: dtypes differ ({x.dtype} vs {y.dtype})",
                      "convert one operand with pl.cast(x, dtype) first", "b")
    big, small, p = (x, y, "b") if x.shape[0] >= y.shape[0] and x.shape[1] >= y.shape[1] else (y, x, "a")
    if small.shape[0] > big.shape[0] or small.shape[1] > big.shape[1]:
        raise OpError(f"part op: neither {describe(x)} nor {describe(y)} covers the other",
                      "one operand's shape must contain the other's (the result has its shape)", p)
    return TileValueType(big.shape, x.dtype, MemorySpace.Vec)


def _bcast_shape(at, x: TileValueType, axis: int, what: str, p: str) -> tuple:
    shape = tuple(at["shape"])
    if len(shape) != 2:
        raise OpError(f"{what}: tiles are 2-D", param="shape")
    if shape[axis] != x.shape[axis]:
        side = "rows" if axis == 0 else "columns"
        raise OpError(f"{what}: the {shape[0]}x{shape[1]} result and the {describe(x)} source "
                      f"have different {side}", f"give shape the source's {side}", p)
    return shape


def _row_bcast(kind, a, at):
    x = _tile(a, "a", VEC)
    if x.shape[1] != 1:
        raise OpError(f"row_expand: the per-row source {describe(x)} has more than one column",
                      "pass a [rows, 1] tile (e.g. pl.row_sum's result); column 0 is broadcast", "a")
    return TileValueType(_bcast_shape(at, x, 0, "row_expand", "shape"), x.dtype, MemorySpace.Vec)


def _col_bcast(kind, a, at):
    x = _tile(a, "a", VEC)
    if x.shape[0] != 1:
        raise OpError(f"col_expand: the per-column source {describe(x)} has more than one row",
                      "pass a [1, cols] tile (e.g. pl.col_sum's result); row 0 is broadcast", "a")
    return TileValueType(_bcast_shape(at, x, 1, "col_expand", "shape"), x.dtype, MemorySpace.Vec)


#: the dtype of an arg-reduction's index result (pto-isa's TROWARGMAX / TCOLARGMAX take
#: int32 or uint32 index tiles; the DSL gives int32)
ARG_INDEX_DTYPE = "i32"


def _row_arg(kind, a, at):
    x = _tile(a, "a", VEC)
    return TileValueType((x.shape[0], 1), ARG_INDEX_DTYPE, MemorySpace.Vec)


def _col_arg(kind, a, at):
    x = _tile(a, "a", VEC)
    return TileValueType((1, x.shape[1]), ARG_INDEX_DTYPE, MemorySpace.Vec)


def _concat(kind, a, at):
    x = _tile(a, "a", VEC)
    y = _tile(a, "b", VEC)
    if x.shape[0] != y.shape[0] or x.dtype != y.dtype:
        raise OpError(f"concat: {describe(x)} and {describe(y)} do not join along columns",
                      "the operands need the same rows and dtype", "b")
    return TileValueType((x.shape[0], x.shape[1] + y.shape[1]), x.dtype, MemorySpace.Vec)


def _transpose(kind, a, at):
    x = _tile(a, "a", VEC)
    return TileValueType((x.shape[1], x.shape[0]), x.dtype, MemorySpace.Vec)


def _relu_conv(kind, a, at):
    x = _binary(kind, a, at)
    out = RELU_CONV.get(np_dtype(x.dtype))
    if out is None:
        return x            # the catalogue's dtype rule names the dtypes it takes
    return TileValueType(x.shape, short_name(out), MemorySpace.Vec)


#: TADDDEQRELU's result dtype (f16 of int32 sources)
ADD_DEQ_RELU_DTYPE = "f16"


def _add_deq_relu(kind, a, at):
    x = _binary(kind, a, at)
    t = _scalar(a, "scale")
    if t.dtype not in FLOAT_DTYPES and not isinstance(a["scale"], ConstArg):
        raise OpError(f"add_deq_relu: the scale is {with_article(t.dtype)} scalar; pto-isa takes a float",
                      "pass a float scale", "scale")
    return TileValueType(x.shape, ADD_DEQ_RELU_DTYPE, MemorySpace.Vec)


def _dequant(kind, a, at):
    x = _tile(a, "a", VEC)
    for p in ("scale", "offset"):
        t = _tile(a, p, VEC)
        if t.shape[0] != x.shape[0] or t.dtype != "f32":
            raise OpError(f"dequant: the {p} tile {describe(t)} is not per-row f32 parameters of "
                          f"{describe(x)}", f"pass a [{x.shape[0]}, k] f32 Vec tile (column 0 is "
                          "row i's parameter)", p)
    return TileValueType(x.shape, "f32", MemorySpace.Vec)


#: TSORT32: the dtype of its index operand, the columns of one sorted block and the bytes of
#: one (value, index) tuple of its result
SORT_INDEX_DTYPE, SORT_BLOCK, SORT_TUPLE_BYTES = "u32", 32, 8


def _sort32(kind, a, at):
    x = _tile(a, "a", VEC)
    i = _tile(a, "idx", VEC)
    if i.shape != x.shape or i.dtype != SORT_INDEX_DTYPE:
        raise OpError(f"sort32: the index tile {describe(i)} is not one {SORT_INDEX_DTYPE} per value of "
                      f"{describe(x)}", f"pass a {x.shape[0]}x{x.shape[1]} {SORT_INDEX_DTYPE} Vec tile", "idx")
    if x.shape[1] % SORT_BLOCK:
        raise OpError(f"sort32: {x.shape[1]} columns are not whole blocks of {SORT_BLOCK}",
                      f"sort a tile of a multiple of {SORT_BLOCK} columns", "a")
    cols = x.shape[1] * SORT_TUPLE_BYTES // np_dtype(x.dtype).itemsize
    return TileValueType((x.shape[0], cols), x.dtype, MemorySpace.Vec)


def _generated(what: str, p: str, one_row: bool):
    def infer(kind, a, at):
        t = _scalar(a, p)
        if t.dtype in FLOAT_DTYPES:
            raise OpError(f"{what}: '{p}' is {with_article(t.dtype)} scalar; pto-isa takes an integer",
                          "pass an integer (use // for index arithmetic)", p)
        shape = tuple(at["shape"])
        if len(shape) != 2:
            raise OpError(f"{what}: tiles are 2-D", param="shape")
        if at.get("upper", 0) not in (0, 1):
            raise OpError(f"{what}: upper is {at['upper']!r}; 0 is the lower triangle, 1 the upper",
                          "pass upper=0 or upper=1", "upper")
        if at.get("descending", 0) not in (0, 1):
            raise OpError(f"{what}: descending is {at['descending']!r}; 0 counts up, 1 down",
                          "pass descending=0 or descending=1", "descending")
        if one_row and shape[0] != 1:
            raise OpError(f"{what}: a {shape[0]}x{shape[1]} result; pto-isa generates the sequence "
                          "along one row", f"give shape [1, {shape[1]}]", "shape")
        return TileValueType(shape, at["dtype"], MemorySpace.Vec)
    return infer


#: the element type of the packed predicate mask pl.cmp / pl.cmps make and pl.select reads
#: (one of the catalogue's MASK_DTYPES; ptoas's TCMP verifier wants an 8-bit dst, pto-isa's
#: CPU model an unsigned one): row i of the sources in row i, bit j in byte j // 8
MASK_DTYPE = "u8"


def mask_shape(shape: tuple, dtype: str = MASK_DTYPE) -> tuple:
    """The packed mask of tiles of ``shape`` in ``dtype`` words: one bit per element, ceil(cols
    / bits) words per row - exactly: the device reads each row's bits from its own mask row
    (catalogue's mask layout), and pto-isa's CPU simulator, which reads the mask as one bit
    stream over its valid words, agrees with it on such a mask when the columns are a
    multiple of the word's bits."""
    bits = 8 * np_dtype(dtype).itemsize
    return (shape[0], -(-shape[1] // bits))
MASK_DTYPES = tuple(short_name(d) for d in _MASK_NP)


def _mode(at) -> None:
    m = at["mode"]
    if m not in set(CmpMode):
        raise OpError(f"mode {m!r} is not a compare mode",
                      f"pass one of {', '.join('pl.CMP_' + c.name for c in CmpMode)}", "mode")


def _compare(kind, a, at):
    x = _tile(a, "a", VEC)
    _same(x, _tile(a, "b", VEC), "cmp", "b")
    _mode(at)
    return TileValueType(mask_shape(x.shape), MASK_DTYPE, MemorySpace.Vec)


def _compare_scalar(kind, a, at):
    x = _tile(a, "a", VEC)
    _scalar(a, "scalar")
    _mode(at)
    return TileValueType(mask_shape(x.shape), MASK_DTYPE, MemorySpace.Vec)


def _select(kind, a, at):
    m = _tile(a, "mask", VEC)
    x = _tile(a, "a", VEC)
    _same(x, _tile(a, "b", VEC), "select", "b")
    _mask_of(m, x, "select")
    return x


def _mask_of(m: TileValueType, x: TileValueType, what: str) -> None:
    if m.dtype not in MASK_DTYPES or m.shape != mask_shape(x.shape, m.dtype):
        raise OpError(f"{what}: {describe(m)} is not a packed mask of {describe(x)}",
                      "pass the mask pl.cmp / pl.cmps made of tiles of this shape", "mask")


def _select_scalar(kind, a, at):
    m = _tile(a, "mask", VEC)
    x = _tile(a, "a", VEC)
    _scalar(a, "scalar")
    _mask_of(m, x, "selects")
    return x


def _subblock(kind, a, at):
    return INDEX


# -- the catalogue's ops: DSL signature and typing rule per operand form ---------------------------
_FORMS = {
    "load": ([("tensor", "value"), ("offsets", "values"), ("shape", "shape"),
              ("space", "space", MemorySpace.Vec)], _load, ""),
    "store": ([("tile", "value"), ("offsets", "values"), ("tensor", "value"), ("atomic", "int", None)], _store, ""),
    "move": ([("tile", "value"), ("space", "space"), ("dtype", "dtype", None), ("layout", "layout", None)],
             _move, ""),
    "extract": ([("tile", "value"), ("row", "value"), ("col", "value"), ("shape", "shape"),
                 ("space", "space")], _extract, ""),
    "matmul": ([("a", "value"), ("b", "value")], _matmul, ""),
    "matmul_acc": ([("acc", "value"), ("a", "value"), ("b", "value")], _matmul_acc, ""),
    "binary": ([("a", "value"), ("b", "value")], _binary, "element-wise"),
    "scalar": ([("a", "value"), ("scalar", "value")], _scalar_op, "with a scalar"),
    "unary": ([("a", "value")], _unary, "unary"),
    "row_reduce": ([("a", "value")], _row_reduce, "per-row reduction"),
    "col_reduce": ([("a", "value")], _col_reduce, "per-column reduction"),
    "row_expand": ([("a", "value"), ("row", "value")], _row_expand, "row broadcast"),
    "col_expand": ([("a", "value"), ("col", "value")], _col_expand, "column broadcast"),
    "ternary": ([("a", "value"), ("b", "value"), ("c", "value")], _ternary, "three-operand"),
    "scalar_ternary": ([("a", "value"), ("scalar", "value"), ("b", "value")], _scalar_ternary,
                       "with a scalar and a second tile"),
    "fill": ([("shape", "shape"), ("dtype", "dtype"), ("value", "value")], _full, ""),
    "convert": ([("a", "value"), ("dtype", "dtype")], _cast, ""),
    "pow": ([("a", "value"), ("b", "value")], _binary, "element-wise power"),
    "pows": ([("a", "value"), ("scalar", "value")], _scalar_op, "power by a scalar"),
    "part": ([("a", "value"), ("b", "value")], _part, "over the union of two shapes"),
    "row_bcast": ([("a", "value"), ("shape", "shape")], _row_bcast, "per-row broadcast"),
    "col_bcast": ([("a", "value"), ("shape", "shape")], _col_bcast, "per-column broadcast"),
    "row_arg": ([("a", "value")], _row_arg, "per-row index"),
    "col_arg": ([("a", "value")], _col_arg, "per-column index"),
    "TCONCAT": ([("a", "value"), ("b", "value")], _concat, ""),
    "TTRANS": ([("a", "value")], _transpose, ""),
    "relu_conv": ([("a", "value"), ("b", "value")], _relu_conv, ""),
    "TCI": ([("shape", "shape"), ("dtype", "dtype"), ("start", "value"), ("descending", "int", 0)],
            _generated("arange", "start", True),
            "start, start + 1, ... along one row (descending=1: start, start - 1, ...)"),
    "TTRI": ([("shape", "shape"), ("dtype", "dtype"), ("diagonal", "value"), ("upper", "int", 0)],
             _generated("tri", "diagonal", False),
             "lower (upper=0): 1 where column <= row + diagonal; upper (1): column >= row + diagonal"),
    "compare": ([("a", "value"), ("b", "value"), ("mode", "int", CmpMode.EQ)], _compare,
                "packed predicate mask of a <mode> b"),
    "compare_scalar": ([("a", "value"), ("scalar", "value"), ("mode", "int", CmpMode.EQ)],
                       _compare_scalar, "packed predicate mask of a <mode> scalar"),
    "select": ([("mask", "value"), ("a", "value"), ("b", "value")], _select, "mask ? a : b"),
    "select_scalar": ([("mask", "value"), ("a", "value"), ("scalar", "value")], _select_scalar,
                      "mask ? a : scalar"),
    "TSORT32": ([("a", "value"), ("idx", "value")], _sort32, ""),
    "TADDDEQRELU": ([("a", "value"), ("b", "value"), ("scale", "value")], _add_deq_relu, ""),
    "TDEQUANT": ([("a", "value"), ("scale", "value"), ("offset", "value")], _dequant, ""),
}


_S, _MIX, _MAKE = Along.SAME, Along.MIXES, Along.MAKES
#: operand form -> the Axes of its ops (the dependence of the result on the operands along
#: rows and columns, as the form's numpy kernel computes it)
_FORM_AXES = {
    "load": WINDOW, "store": WINDOW, "move": ELEMENTWISE, "extract": CUBE, "matmul": CUBE,
    "matmul_acc": CUBE, "binary": ELEMENTWISE, "scalar": ELEMENTWISE, "unary": ELEMENTWISE,
    "row_reduce": _axes(_S, _MIX), "col_reduce": _axes(_MIX, _S),
    "row_expand": _axes(_S, _S, per_row=("row",)), "col_expand": _axes(_S, _S, per_col=("col",)),
    "ternary": ELEMENTWISE, "scalar_ternary": ELEMENTWISE, "fill": _axes(_MAKE, _MAKE),
    "convert": ELEMENTWISE, "pow": ELEMENTWISE, "pows": ELEMENTWISE,
    # the part ops line their operands up at index 0: element-wise where the extents agree
    "part": ELEMENTWISE,
    "row_bcast": _axes(_S, _MAKE), "col_bcast": _axes(_MAKE, _S),
    "row_arg": _axes(_S, _MIX), "col_arg": _axes(_MIX, _S),
    "TCONCAT": _axes(_S, _MIX), "TTRANS": _axes(Along.SWAPS, Along.SWAPS),
    "relu_conv": ELEMENTWISE,
    # start, start + 1, ... along the one row; the triangle j <= i + d (or >=): one row more
    # is one more diagonal, one column more one less
    "TCI": _axes(_MAKE, Along.COUNTS, start="start", step=(0, 1)),
    "TTRI": _axes(Along.COUNTS, Along.COUNTS, start="diagonal", step=(1, -1)),
    "compare": _axes(_S, _S, packs=True), "compare_scalar": _axes(_S, _S, packs=True),
    "select": _axes(_S, _S, mask=("mask",)), "select_scalar": _axes(_S, _S, mask=("mask",)),
    "TSORT32": _axes(_S, _MIX), "TADDDEQRELU": ELEMENTWISE,
    "TDEQUANT": _axes(_S, _S, per_row=("scale", "offset")),
}
#: the ops whose data dependence is not their form's (ISA name -> Axes): TPAIRREDUCESUM is
#: a unary form that adds neighbouring columns
_OP_AXES = {"TPAIRREDUCESUM": _axes(_S, _MIX)}


#: the operand forms whose catalogue op has no element-type rule of its own (moves, matmuls
#: and conversions have their own checks)
RULE_FREE_FORMS = ("load", "store", "move", "extract", "matmul", "matmul_acc", "convert")


def rule_dtype(source, result):
    """The dtype a catalogue op's element-type rule judges: its source's (operand ``a``,
    ``source``'s type), else its result's (a fill) - the result's but for an index or
    converted result."""
    src = _t(source)
    return np_dtype(src.dtype if isinstance(src, TileValueType) else result.dtype)


#: DSL name of a tile op -> the DSL name of its form that takes a scalar for operand ``b``
#: (the catalogue's TMUL -> TMULS, TMAX -> TMAXS, TSEL -> TSELS): what a fix names when ``b``
#: is given a scalar
SCALAR_FORM = {d.dsl: CATALOGUE[n + "S"].dsl for n, d in CATALOGUE.items()
               if d.dsl is not None and n + "S" in CATALOGUE and CATALOGUE[n + "S"].dsl is not None}


def _with_rules(op, infer_fn):
    """``infer_fn`` plus the catalogue's dtype rule of ``op`` (on either platform: the IR
    knows none - Validate applies the compile's platform's) and, for a constant scalar
    operand, its value rule: the same checks the instruction makes when it is issued.  A
    scalar given for a tile operand ``b`` of an op with a scalar form is told that form."""
    if op.form in RULE_FREE_FORMS:
        return infer_fn

    def infer_checked(kind, a, at):
        try:
            t = infer_fn(kind, a, at)
        except OpError as e:
            if e.param == "b" and op.dsl in SCALAR_FORM and isinstance(_t(a.get("b")), ScalarType):
                s = SCALAR_FORM[op.dsl]
                call = f"pl.{s}({', '.join(p.name for p in OPS[s].params if p.operand)})"
                raise OpError(e.msg, f"for a scalar operand write {call} (pl.{op.dsl} takes tiles only)",
                              "b") from None
            raise
        d = rule_dtype(a.get("a"), t)
        bad = op.dtype_error(d)
        if bad is not None:
            raise OpError(f"{op.dsl}: {bad[0]}", bad[1], "a")
        p = "value" if op.form == "fill" else "scalar"
        if p in a and isinstance(a[p], ConstArg):
            why = op_scalar_error(op, d, a[p].value)
            if why is not None:
                raise OpError(f"{op.dsl}: {why}", f"pass a scalar that {t.dtype} can hold", p)
        return t
    return infer_checked


#: the attributes of an operand form the instruction takes after its operands (the
#: interpreter passes them, the writers spell them): TCMP(dst, a, b, mode)
_ISA_ATTRS_OF_FORM = {"compare": ("mode",), "compare_scalar": ("mode",), "TTRI": ("upper",),
                      "TCI": ("descending",)}
#: DSL name -> ISA name of the ops built from the catalogue (what the runtime issues)
ISA_NAMES: dict = {}
for _d in CATALOGUE.values():
    if _d.dsl is not None:
        _params, _infer, _what = _FORMS[_d.form]
        _op(_d.dsl, _params, _with_rules(_d, _infer), _OP_AXES.get(_d.name, _FORM_AXES[_d.form]),
            doc=_d.doc or f"{_what} ({_d.name})")
        ISA_NAMES[_d.dsl] = _d.name
#: DSL name -> the attributes its instruction takes after its operands (see _ISA_ATTRS_OF_FORM)
ISA_ATTRS = {d.dsl: _ISA_ATTRS_OF_FORM[d.form] for d in CATALOGUE.values()
             if d.dsl is not None and d.form in _ISA_ATTRS_OF_FORM}
#: DSL names of the ops whose pto-isa form takes a scratch tile the size of their source
#: (operand 0); the allocator gives it storage live while the op runs
SCRATCH_OPS = frozenset(d.dsl for d in CATALOGUE.values() if d.dsl is not None and d.scratch)


def scratch_type(dsl: str, source: TileValueType) -> TileValueType:
    """The type of the scratch tile of op ``dsl`` (one of SCRATCH_OPS) whose source (operand
    0) is ``source``: the source's shape, in the catalogue's SCRATCH_DTYPE where it has one."""
    name = ISA_NAMES[dsl]
    d, cols = SCRATCH_DTYPE.get(name), SCRATCH_COLS.get(name)
    if d is None and cols is None:
        return source
    dtype = source.dtype if d is None else short_name(d)
    shape = source.shape
    if cols is not None:
        per_block = max(1, 32 // np_dtype(dtype).itemsize)        # whole 32-byte rows
        shape = (shape[0], -(-cols(shape[1]) // per_block) * per_block)
    return TileValueType(shape, dtype, source.space)


def scratch_index(dsl: str, operand_types) -> int:
    """Where the scratch tile of op ``dsl`` goes among its operands (``operand_types``, IR
    order): last, or before the first scalar for the catalogue's SCRATCH_BEFORE_SCALAR."""
    n = len(operand_types)
    if ISA_NAMES.get(dsl) in SCRATCH_BEFORE_SCALAR:
        return next((k for k, t in enumerate(operand_types) if not isinstance(t, TileValueType)), n)
    return n


_by = {}
for _d in CATALOGUE.values():
    if _d.dsl is not None:
        _by.setdefault(_d.form, {})[_d.dsl] = _d.name
BINARY, SCALAR, UNARY = _by["binary"], _by["scalar"], _by["unary"]
#: why a catalogue instruction has no ``pl`` form (every catalogue op has a DSL name or a
#: reason here): what of the instruction the DSL's value semantics cannot say, or what the
#: op table would need first
_IN_PLACE = "reads and writes its destination in place; a DSL op makes a new tile"
_TWO = "writes two result tiles; a DSL op has one result"
_ATTR = ("takes a compile-time mode ({}) that no operand form of the op table carries to the "
         "instruction yet (see _ISA_ATTRS_OF_FORM)")
_NO_SPACE = "reads a {} tile, a memory the IR has no tile space for"
_NO_RESULT = "has no result value; the op table's tile ops each make one"
NO_DSL_FORM = {
    "TMOV_FP": _NO_SPACE.format("Scaling (fixpipe quant words)"),
    "TEXTRACT_FP": _NO_SPACE.format("Scaling (fixpipe quant words)"),
    "TINSERT_FP": _NO_SPACE.format("Scaling (fixpipe quant words)"),
    "TSTORE_FP": _NO_SPACE.format("Scaling (fixpipe quant words)"),
    "TMATMUL_BIAS": _NO_SPACE.format("Bias"),
    "TGEMV_BIAS": _NO_SPACE.format("Bias"),
    "TMATMUL_MX": _NO_SPACE.format("ScaleLeft / ScaleRight"),
    "TGEMV_MX": _NO_SPACE.format("ScaleLeft / ScaleRight"),
    "TGET_SCALE_ADDR": _NO_SPACE.format("ScaleLeft / ScaleRight"),
    "TGEMV": "one-row TMATMUL with its own pto-isa checks; pl.matmul is TMATMUL (not yet a form)",
    "TGEMV_ACC": "one-row TMATMUL_ACC; pl.matmul_acc is TMATMUL_ACC (not yet a form)",
    "TAXPY": _IN_PLACE, "TMULADDDST": _IN_PLACE, "TFUSEDMULADD": _IN_PLACE,
    "TFUSEDMULADDRELU": _IN_PLACE, "TINSERT": _IN_PLACE,
    "TSCATTER": "clears its destination and writes where an index tile or a MaskPattern says: the op "
                "table has no scatter form yet",
    "TINTERLEAVE": _TWO, "TDEINTERLEAVE": _TWO, "TPARTARGMAX": _TWO + " (value and index)",
    "TPARTARGMIN": _TWO + " (value and index)",
    "TMRGSORT": _TWO + " (the merged list and the per-list counts)",
    "TQUANT": _ATTR.format("QuantType, with an offset tile in its asymmetric form"),
    "THISTOGRAM": _ATTR.format("the byte counted"),
    "TRANDOM": _ATTR.format("Philox key, counter and rounds"),
    "TGATHER": "its pattern and compare forms take a MaskPattern / CmpMode plus a count result; its "
               "index form's scratch tile has the index tile's type (ptoas on A2A3), not the source's "
               "the allocator sizes scratch by (not yet a form)",
    "TGATHERB": "reads 32-byte blocks at byte offsets of the source's storage; a DSL tile has "
                "values, not an address",
    "TFILLPAD": "pads outside the source's valid region; a DSL tile is valid over its whole shape",
    "TFILLPAD_EXPAND": "pads outside the source's valid region; a DSL tile is valid over its whole "
                       "shape",
    "TFILLPAD_INPLACE": _IN_PLACE,
    "TPACK": "ptoas's narrowing static_cast, which pto-isa's C++ has no function for; pl.cast is TCVT",
    "TRESHAPE": "a view of another tile's storage; a DSL value owns its storage (the writers "
                "emit TRESHAPE for row views themselves)",
    "TSUBVIEW": "a view of another tile's storage; a DSL value owns its storage",
    "TPRINT": _NO_RESULT, "TTRAP": _NO_RESULT, "TPREFETCH": _NO_RESULT,
    "MGATHER": "reads GM at the rows / elements an index tile's values pick: a DSL tensor is read by a window "
               "(pl.load), and its Coalesce / GatherOOB modes are compile-time attributes no operand form of "
               "the op table carries (see _ISA_ATTRS_OF_FORM)",
    "MSCATTER": _NO_RESULT + "; it writes GM at the rows / elements an index tile's values pick (a DSL tensor is "
                "written by a window, pl.store)",
    "TIMG2COL": "reads a ConvTile (an NC1HWC0 feature map with its img2col fields) and the Cube's img2col "
                "registers: the IR has no ConvTile type and no register state",
    "SETFMATRIX": _NO_RESULT + "; it writes a Cube register from a ConvTile, a type the IR has not",
    "SET_IMG2COL_RPT": _NO_RESULT + "; it writes a Cube register from a ConvTile, a type the IR has not",
    "SET_IMG2COL_PADDING": _NO_RESULT + "; it writes a Cube register from a ConvTile, a type the IR has not",
    "TPREFETCH_ASYNC": _NO_RESULT + " (an AsyncEvent of the SDMA engine, which the IR has no type for)",
}
_op("get_subblockid", [], _subblock, NO_TILE, doc="this Vector core's sub-block (0/1)")


def _create(kind, a, at):
    shape, space = at["shape"], at["space"]
    if len(shape) != 2:
        raise OpError("create: tiles are 2-D", param="shape")
    if space is not MemorySpace.Acc:
        raise OpError(f"create makes an Acc accumulator, not {with_article(space.value)} tile: nothing but "
                      "pl.matmul_acc(..., init_cond=...) writes a tile in place",
                      "a Vec tile of one value is pl.full(shape, dtype, value); a Mat / Left / "
                      "Right tile comes from pl.load / pl.move", "space")
    accs = sorted({short_name(d) for d in MATMUL_ACCUM.values()})
    if at["dtype"] not in accs:
        raise OpError(f"create: an Acc tile holds the Cube's accumulators ({', '.join(accs)}), "
                      f"not {at['dtype']}", param="dtype")
    return TileValueType(tuple(shape), at["dtype"], space)


#: pypto's tile.create(target_memory=Acc): an accumulator no instruction has written yet -
#: the storage ``pl.matmul_acc(acc, a, b, init_cond=(k == 0))`` overwrites on its first step
#: (TMATMUL) and accumulates into after (TMATMUL_ACC)
_op("create", [("shape", "shape"), ("dtype", "dtype"), ("space", "space", MemorySpace.Acc)],
    _create, CUBE, doc="an uninitialised Acc accumulator for pl.matmul_acc(..., init_cond=...)")
# -- a Group function's calls of its AIC and AIV kernels (what ExpandMixedKernel emits)
def _call(kind, a, at):
    if kind is not FunctionKind.Group:
        raise OpError(f"pl.call in a{'n' if kind in (FunctionKind.AIC, FunctionKind.AIV, FunctionKind.InCore) else ''}"
                      f" {kind.value.upper()} function: only a Group function calls kernels",
                      'write the call in a @pl.incore(core="group") function', "callee")
    if not isinstance(at["callee"], str) or not at["callee"]:
        raise OpError("pl.call needs the callee's name", param="callee")
    for x in a["args"].items:
        if not isinstance(_t(x), (TensorType, ScalarType)):
            raise OpError("pl.call passes GM tensors and scalars", param="args")
    return NONE


_op("call", [("callee", "symbol"), ("args", "values")], _call, NO_TILE,
    doc="a Group function's call of one of its kernels (callee = the function's name)")

#: the GM slot-buffer parameter ExpandMixedKernel gives a compiled mixed function's kernels
GM_SLOT_PARAM = "gm_slot_buffer"


def lookup(name: str) -> OpSpec | None:
    return OPS.get(name)


def infer(spec: OpSpec, kind: FunctionKind, args: dict, attrs: dict) -> Type:
    """Result type of ``spec`` applied to ``args`` (name -> Expr) and ``attrs``."""
    return spec.infer(kind, args, attrs)


#: element-wise DSL op -> its per-row / per-column broadcast form (TROWEXPAND* / TCOLEXPAND*)
_BROADCAST = {dsl: (f"row_expand_{k}", f"col_expand_{k}") for dsl, k in
              (("add", "add"), ("sub", "sub"), ("mul", "mul"), ("div", "div"),
               ("maximum", "max"), ("minimum", "min"))}
_COMMUTES = frozenset({"add", "mul", "maximum", "minimum"})


def broadcast_form(dsl: str, a, b):
    """``(op, swapped)`` when element-wise ``dsl`` of tiles of types ``a`` and ``b`` broadcasts
    one operand (pypto's tile.add of a [M, N] and a [M, 1] tile): a [M, 1] operand is
    per-row (``row_expand_<op>``), a [1, N] one per-column (``col_expand_<op>``), the wide
    operand first (``swapped``: it was ``b``); None when the shapes are equal or neither
    broadcasts.  Raises OpError for a narrow first operand of an op that does not commute:
    the expand instructions compute ``wide op narrow`` only."""
    forms = _BROADCAST.get(dsl)
    if forms is None or a.shape == b.shape or len(a.shape) != 2 or len(b.shape) != 2:
        return None
    for wide, narrow, swapped in ((a, b, False), (b, a, True)):
        (m, n), (r, c) = wide.shape, narrow.shape
        k = 0 if (r, c) == (m, 1) and n > 1 else 1 if (r, c) == (1, n) and m > 1 else None
        if k is None:
            continue
        if swapped and dsl not in _COMMUTES:
            per, full = ("row", f"pl.row_expand(x, shape=[{m}, {n}])") if k == 0 else \
                ("column", f"pl.col_expand(x, shape=[{m}, {n}])")
            raise OpError(f"{dsl}: the first operand {describe(narrow)} is per-{per} and the second "
                          f"{describe(wide)} is not: {forms[k]} computes (tile {dsl} per-{per} "
                          "operand) only",
                          f"expand the first operand to the full shape first: "
                          f"pl.{dsl}({full}, y)", "a")
        return forms[k], swapped
    return None


def canonical_direction(spec: OpSpec, kind: FunctionKind, attrs: dict) -> int | None:
    """The direction a cross-core op gets in the IR (given, or inferred from the core)."""
    if spec.role is None:
        return None
    return _infer_dir(kind, attrs, spec.role)


__all__ = ["Along", "Axes", "BINARY", "DIRS", "OPS", "OpError", "OpSpec",
           "Param", "REQUIRED", "SCALAR", "SPLITS", "UNARY",
           "broadcast_form", "canonical_direction", "infer", "lookup", "BOOL", "FLOAT_DTYPES"]
