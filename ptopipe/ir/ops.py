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
from functools import cached_property
from typing import Callable

from ..arch.catalogue import (CONVERTS_FROM, LOAD_DST, MOVES, STORE_SRC, matmul_dtype_fix,
                              op_scalar_error)
from ..arch.catalogue import OPS as CATALOGUE
from ..arch.vocab import Direction, TileLayout, TileSplitAxis
from .vocab import FunctionKind
from .types import (BOOL, FLOAT_DTYPES, INDEX, NONE, TILE_SPACES, BufferType, MemorySpace,
                    ScalarType, TensorType, TileValueType, Type, accum_dtype, describe, np_dtype)

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
    initialises each direction once (seed 003: one init per direction per function)."""
    return tuple(w for w in (C2V, V2C) if int(dir_mask) & 3 & w)


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


@dataclass(frozen=True)
class OpSpec:
    name: str                 # IR op name
    dsl: str                  # spelling in DSL source: pl.<dsl>
    params: tuple
    infer: Callable           # (kind, args: dict, attrs: dict) -> Type
    doc: str = ""
    aliases: tuple = field(default=())
    role: str | None = None   # a cross-core op's end of the ring: "producer" / "consumer"

    @cached_property        # a spec is immutable; the parser, verifier and writers ask per op
    def operands(self) -> tuple:
        return tuple(p for p in self.params if p.operand)

    @cached_property
    def attr_params(self) -> tuple:
        return tuple(p for p in self.params if not p.operand)


#: every op's OpSpec by name: written once, at import, by this module's definitions (_op)
OPS: dict = {}


def _op(name, params, infer, dsl=None, doc="", aliases=()):
    return register(OpSpec(name, dsl or name, tuple(Param(*p) for p in params), infer, doc,
                           tuple(aliases)))


def register(spec: OpSpec) -> OpSpec:
    """Add ``spec`` to the table (an op's name is defined once)."""
    if spec.name in OPS:
        raise ValueError(f"op {spec.name!r} is defined twice")
    OPS[spec.name] = spec
    return spec


# -- typing helpers -------------------------------------------------------------------------
def _t(x):
    return getattr(x, "type", None)


def _tile(args, p, spaces=None) -> TileValueType:
    t = _t(args[p])
    if not isinstance(t, TileValueType):
        raise OpError(f"'{p}' must be a tile, got {describe(t) if t else 'nothing'}",
                      "pass a tile value (from pl.load, pl.move, an op, or TPOP)", p)
    if spaces and t.space not in spaces:
        raise OpError(f"'{p}' is a {describe(t)}; this op needs a "
                      f"{' or '.join(s.value for s in spaces)} tile",
                      f"move it first, e.g. pl.move(x, space=pl.{spaces[0].value})", p)
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
                      "operands of element-wise ops must have the same shape", p)
    if a.dtype != b.dtype:
        raise OpError(f"{what}: dtypes differ ({a.dtype} vs {b.dtype})",
                      "convert one operand with pl.cast(x, dtype) first", p)


VEC = (MemorySpace.Vec,)


def _buffer(args, p, kind) -> None:
    t = _t(args[p])
    if not isinstance(t, BufferType) or t.kind != kind:
        want = ("the consumer's pl.reserve_buffer(...)" if kind == "reserve"
                else "the producer's pl.import_peer_buffer(...)")
        raise OpError(f"'{p}' must be {want}, got {describe(t) if t else 'nothing'}",
                      "TPUSH/TALLOC take the imported peer buffer, TPOP/TFREE the reserved buffer",
                      p)


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
        raise OpError(f"a {kind.value.upper()} function is the {role} only of "
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
            raise OpError(f"{op}: offset {k} is a {t.dtype} scalar, but GM offsets are element "
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
            raise OpError(f"load: extent {s} does not fit tensor dimension {ts}", param="shape")
    if space not in LOAD_DST:
        raise OpError(f"load into a {space.value} tile: GM loads go to Vec (UB) or Mat (L1)",
                      "load into pl.Mat, then pl.move(x, space=pl.Left)", "space")
    rows = 1
    for s in shape[:-1]:
        rows *= s
    return TileValueType((rows, shape[-1]), t.dtype, space)


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
    inner = t.shape[-1]
    outer = 1
    for s in t.shape[:-1]:
        outer *= s
    if tile.shape[1] > inner or tile.shape[0] > outer:
        raise OpError(f"store: a {tile.shape[0]}x{tile.shape[1]} tile does not fit tensor "
                      f"{'x'.join(map(str, t.shape))}", param="tile")
    return NONE


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
        raise OpError(f"move from {t.space.value} to {space.value} is not a local path",
                      f"valid: {LOCAL_MOVE_PATHS}{cross}", "space")
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
        raise OpError(f"matmul: a is {a_t.dtype} but b is {b_t.dtype}", param="b")


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
    return TileValueType(x.shape, at["dtype"], MemorySpace.Vec)


def _subblock(kind, a, at):
    return INDEX


# -- the catalogue's ops: DSL signature and typing rule per operand form ---------------------------
_FORMS = {
    "load": ([("tensor", "value"), ("offsets", "values"), ("shape", "shape"),
              ("space", "space", MemorySpace.Vec)], _load, ""),
    "store": ([("tile", "value"), ("offsets", "values"), ("tensor", "value")], _store, ""),
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
}


def _with_rules(op, infer_fn):
    """``infer_fn`` plus the catalogue's dtype rule of ``op`` (on the result's dtype, which
    is the operands' for every vector form) and, for a constant scalar operand, its value
    rule: the same checks the instruction makes when it is issued."""
    if op.form not in ("binary", "scalar", "unary", "row_expand", "col_expand", "ternary",
                       "scalar_ternary", "row_reduce", "col_reduce", "fill"):
        return infer_fn

    def infer_checked(kind, a, at):
        t = infer_fn(kind, a, at)
        d = np_dtype(t.dtype)
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


#: DSL name -> ISA name of the ops built from the catalogue (what the runtime issues)
ISA_NAMES: dict = {}
for _d in CATALOGUE.values():
    if _d.dsl is not None:
        _params, _infer, _what = _FORMS[_d.form]
        _op(_d.dsl, _params, _with_rules(_d, _infer),
            doc=_d.doc or f"{_what} ({_d.name})")
        ISA_NAMES[_d.dsl] = _d.name
#: DSL names of the ops whose pto-isa form takes a scratch tile the size of their source
#: (operand 0); the allocator gives it storage live while the op runs
SCRATCH_OPS = frozenset(d.dsl for d in CATALOGUE.values() if d.dsl is not None and d.scratch)
_by = {}
for _d in CATALOGUE.values():
    if _d.dsl is not None:
        _by.setdefault(_d.form, {})[_d.dsl] = _d.name
BINARY, SCALAR, UNARY = _by["binary"], _by["scalar"], _by["unary"]
ROW_REDUCE, COL_REDUCE, ROW_EXPAND = _by["row_reduce"], _by["col_reduce"], _by["row_expand"]
_op("get_subblockid", [], _subblock, doc="this Vector core's sub-block (0/1)")
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


_op("call", [("callee", "symbol"), ("args", "values")], _call,
    doc="a Group function's call of one of its kernels (callee = the function's name)")

#: the GM slot-buffer parameter ExpandMixedKernel gives a compiled mixed function's kernels
GM_SLOT_PARAM = "gm_slot_buffer"


def lookup(name: str) -> OpSpec | None:
    return OPS.get(name)


def infer(spec: OpSpec, kind: FunctionKind, args: dict, attrs: dict) -> Type:
    """Result type of ``spec`` applied to ``args`` (name -> Expr) and ``attrs``."""
    return spec.infer(kind, args, attrs)


def canonical_direction(spec: OpSpec, kind: FunctionKind, attrs: dict) -> int | None:
    """The direction a cross-core op gets in the IR (given, or inferred from the core)."""
    if spec.role is None:
        return None
    return _infer_dir(kind, attrs, spec.role)


__all__ = ["BINARY", "COL_REDUCE", "DIRS", "OPS", "OpError", "OpSpec",
           "Param", "REQUIRED", "ROW_EXPAND", "ROW_REDUCE", "SCALAR", "SPLITS", "UNARY",
           "canonical_direction", "infer", "lookup", "BOOL", "FLOAT_DTYPES"]
