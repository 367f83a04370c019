"""The op catalogue: one definition per tile instruction - its operand form, the pipe it
occupies, its cost entry, the dtypes it takes, its typing rule and its numpy kernel.

Everything else is derived from it: the ISA instructions and their operand checks
(``isa/ops.py``), the vector cost table (``costs.py``), the ``TSYNC<Op>`` vocabulary
(``isa/events.py``), the IR op specs and DSL stubs (``ir/ops.py``, ``language/surface.py``)
and the interpreter's dispatch (``runtime/interp.py``).  Pure data and small numpy
functions; no simulator state.

Forms (the operands, in ISA order): ``binary`` (dst, src0, src1), ``scalar`` (dst, src,
scalar), ``unary`` (dst, src), ``row_reduce`` / ``col_reduce`` (dst, src), ``row_expand``
(dst, src0, per-row src1), ``row_bcast`` (dst, per-row src), ``fill`` (dst, scalar),
``convert`` (dst, src), ``matmul`` / ``matmul_acc`` / ``matmul_bias`` (Cube), and the
data movements ``load``, ``store``, ``move``, ``extract``.
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from . import dtypes as dt
from .vocab import PipeUnit, TileType

ANY, FLOAT, INT = "any", "float", "int"      # dtype rules
_INT_KINDS = "iub"                           # numpy kinds of integer (and bool) dtypes


@dataclass(frozen=True)
class OpDef:
    """One tile instruction."""
    name: str                    # the ISA / pto-isa name, e.g. "TADD"; also its cost key
    form: str                    # operand form (see the module docstring)
    pipe: PipeUnit | None        # the pipe it occupies; None: routed by operand locations
    kernel: object = None        # the numpy function the op applies (per form)
    dtypes: str = ANY            # ANY, FLOAT (float tiles only) or INT (integer tiles only)
    cost: tuple | None = None    # vector ops: (cycles per 256-B repeat, head, tail)
    dsl: str | None = None       # its ``pl.<dsl>`` spelling, if the DSL has it
    doc: str = ""
    scratch: bool = False        # pto-isa takes a scratch tile the size of the source
                                 # (``TROWSUM(dst, src, tmp)``); the allocator places it

    def dtype_error(self, dtype: np.dtype) -> "tuple[str, str] | None":
        """(what, fix) if this op does not take ``dtype`` tiles, else None."""
        is_int = np.dtype(dtype).kind in _INT_KINDS
        if self.dtypes == FLOAT and is_int:
            return (f"{self.name} works on float tiles, not {np.dtype(dtype).name}",
                    f"convert with TCVT (pl.cast) to f16/f32 first, then {self.name}")
        if self.dtypes == INT and not is_int:
            return (f"{self.name} works on integer tiles, not {np.dtype(dtype).name}",
                    "convert with TCVT (pl.cast) to an integer dtype first")
        return None


# -- typing rules --------------------------------------------------------------------------
#: Cube input dtype -> accumulator dtype (TMATMUL*): integers accumulate in int32, floats in
#: float32.  Inputs not listed (e.g. int16, int32) are not Cube inputs.
MATMUL_ACCUM = {dt.float16: dt.float32, dt.bfloat16: dt.float32, dt.float32: dt.float32,
                dt.float8_e4m3: dt.float32, dt.float8_e5m2: dt.float32, dt.int8: dt.int32,
                dt.uint8: dt.int32}


def accum_dtype(d) -> np.dtype | None:
    """The accumulator dtype of a matmul with ``d`` inputs, or None if the Cube does not
    take ``d`` (the one rule of the IR's typing and the ISA's check)."""
    return MATMUL_ACCUM.get(np.dtype(d))


def matmul_dtype_fix() -> str:
    names = ", ".join(sorted({d.name for d in MATMUL_ACCUM}))
    return f"Cube inputs are {names}; convert with TCVT (pl.cast) first"


def _range(d: np.dtype) -> tuple:
    if d.kind in _INT_KINDS:
        info = np.iinfo(d)
        return int(info.min), int(info.max), True
    big = float(ml_dtypes.finfo(d).max)
    return -big, big, False


#: tile dtype -> (lowest, highest, integral) of the scalars its ops take
SCALAR_RANGE = {d: _range(d) for d in {dt.float16, dt.float32, dt.bfloat16, dt.float8_e4m3,
                                       dt.float8_e5m2, dt.int8, dt.uint8, dt.int16, dt.int32,
                                       dt.uint32, dt.int64}}


def scalar_error(dtype: np.dtype, scalar) -> str | None:
    """Why ``scalar`` is not a value of a ``dtype`` tile (None if it is one): integers must
    be integral and in range (numpy would raise, or truncate 2.5 to 2); floats must not
    overflow to infinity (1e6 in f16).  NaN and infinities are float values."""
    if isinstance(scalar, (bool, np.bool_)) or not isinstance(scalar, (int, float, np.number)):
        return f"the scalar {scalar!r} is not a number"
    d = np.dtype(dtype)
    lo, hi, integral = SCALAR_RANGE.get(d) or _range(d)
    if integral:
        if isinstance(scalar, (float, np.floating)) and not float(scalar).is_integer():
            return f"the scalar {scalar!r} is not an integer (the tile is {d.name})"
        if not lo <= int(scalar) <= hi:
            return f"the scalar {scalar!r} is out of range for {d.name} ({lo}..{hi})"
    elif np.isfinite(scalar) and not lo <= float(scalar) <= hi:
        return f"the scalar {scalar!r} overflows {d.name} (largest {hi:.6g})"
    return None


# -- numpy kernels (names show in error messages) ---------------------------------------------
def adds(a, s, d):
    np.add(a, s, out=d)


def subs(a, s, d):
    np.subtract(a, s, out=d)


def muls(a, s, d):
    np.multiply(a, s, out=d)


def divs(a, s, d):
    np.divide(a, s, out=d)


def maxs(a, s, d):
    np.maximum(a, s, out=d)


def mins(a, s, d):
    np.minimum(a, s, out=d)


def exp(a, d):
    np.exp(a, out=d)


def log(a, d):
    np.log(a, out=d)


def sqrt(a, d):
    np.sqrt(a, out=d)


def rsqrt(a, d):
    np.divide(1, np.sqrt(a), out=d, casting="unsafe")


def abs_(a, d):
    np.abs(a, out=d)


def neg(a, d):
    np.negative(a, out=d)


def relu(a, d):
    np.maximum(a, 0, out=d, casting="unsafe")


def recip(a, d):
    np.divide(1, a, out=d, casting="unsafe")


# -- the instructions ---------------------------------------------------------------------------
_V, _M = PipeUnit.V, PipeUnit.M
_S1, _S2, _S4, _E2 = (1, 12, 14), (2, 14, 18), (4, 14, 18), (2, 14, 17)
# vector costs calibrated on PLATFORMS.md's measured single ops (see costs.py): slope 1 for
# scalar-operand and copy-like ops, 2 binary / transcendental / convert, 4 divide, 7 reductions
_DEFS = (
    OpDef("TLOAD", "load", PipeUnit.MTE2, dsl="load", doc="GM -> tile (TLOAD)"),
    OpDef("TSTORE", "store", None, dsl="store", doc="tile -> GM (TSTORE)"),
    OpDef("TMOV", "move", None, cost=_S1, dsl="move", doc="local move (TMOV)"),
    OpDef("TEXTRACT", "extract", PipeUnit.MTE1, dsl="extract",
          doc="block of a Mat tile (TEXTRACT)"),
    OpDef("TMATMUL", "matmul", _M, dsl="matmul", doc="a @ b (TMATMUL)"),
    OpDef("TMATMUL_ACC", "matmul_acc", _M, dsl="matmul_acc", doc="acc + a @ b (TMATMUL_ACC)"),
    OpDef("TMATMUL_BIAS", "matmul_bias", _M, doc="a @ b + bias (TMATMUL_BIAS)"),
    OpDef("TADD", "binary", _V, np.add, cost=_S2, dsl="add"),
    OpDef("TSUB", "binary", _V, np.subtract, cost=_S2, dsl="sub"),
    OpDef("TMUL", "binary", _V, np.multiply, cost=_S2, dsl="mul"),
    OpDef("TDIV", "binary", _V, np.divide, FLOAT, _S4, dsl="div"),
    OpDef("TMAX", "binary", _V, np.maximum, cost=_S2, dsl="maximum"),
    OpDef("TMIN", "binary", _V, np.minimum, cost=_S2, dsl="minimum"),
    OpDef("TADDS", "scalar", _V, adds, cost=_S1, dsl="adds"),
    OpDef("TSUBS", "scalar", _V, subs, cost=_S1, dsl="subs"),
    OpDef("TMULS", "scalar", _V, muls, cost=_S1, dsl="muls"),
    OpDef("TDIVS", "scalar", _V, divs, FLOAT, _S1, dsl="divs"),
    OpDef("TMAXS", "scalar", _V, maxs, cost=_S1, dsl="maxs"),
    OpDef("TMINS", "scalar", _V, mins, cost=_S1, dsl="mins"),
    OpDef("TEXP", "unary", _V, exp, FLOAT, _E2, dsl="exp"),
    OpDef("TLOG", "unary", _V, log, FLOAT, _E2, dsl="log"),
    OpDef("TSQRT", "unary", _V, sqrt, FLOAT, _E2, dsl="sqrt"),
    OpDef("TRSQRT", "unary", _V, rsqrt, FLOAT, _S1, dsl="rsqrt"),
    OpDef("TABS", "unary", _V, abs_, cost=_S1, dsl="abs"),
    OpDef("TNEG", "unary", _V, neg, cost=_S1, dsl="neg"),
    OpDef("TRELU", "unary", _V, relu, cost=_S1, dsl="relu"),
    OpDef("TRECIP", "unary", _V, recip, FLOAT, _S2, dsl="recip"),
    OpDef("TROWSUM", "row_reduce", _V, np.sum, cost=(7, 26, 18), dsl="row_sum", scratch=True),
    OpDef("TROWMAX", "row_reduce", _V, np.max, cost=(7, 14, 18), dsl="row_max", scratch=True),
    OpDef("TROWMIN", "row_reduce", _V, np.min, cost=(7, 14, 18), dsl="row_min", scratch=True),
    OpDef("TCOLSUM", "col_reduce", _V, np.sum, cost=(7, 26, 18), dsl="col_sum"),
    OpDef("TCOLMAX", "col_reduce", _V, np.max, cost=(7, 14, 18), dsl="col_max"),
    OpDef("TROWEXPANDADD", "row_expand", _V, np.add, cost=_S2, dsl="row_expand_add"),
    OpDef("TROWEXPANDSUB", "row_expand", _V, np.subtract, cost=_S2, dsl="row_expand_sub"),
    OpDef("TROWEXPANDMUL", "row_expand", _V, np.multiply, cost=_S2, dsl="row_expand_mul"),
    OpDef("TROWEXPANDDIV", "row_expand", _V, np.divide, FLOAT, _S4, dsl="row_expand_div"),
    OpDef("TROWEXPAND", "row_bcast", _V, cost=_S1, doc="dst[i, :] = src[i, 0]"),
    OpDef("TEXPANDS", "fill", _V, cost=_S1, dsl="full",
          doc="a Vec tile filled with a scalar (TEXPANDS)"),
    OpDef("TCVT", "convert", _V, cost=_S2, dsl="cast", doc="dtype conversion (TCVT)"),
)
OPS: dict = {op.name: op for op in _DEFS}


def by_form(*forms: str) -> tuple:
    """The ops of the given forms, in catalogue order."""
    return tuple(op for op in _DEFS if op.form in forms)


#: the local data paths of TMOV: (source, destination) -> pipe.  Only an Acc source converts
#: dtypes (FIX); every other path copies.
MOVES = {(TileType.Mat, TileType.Left): PipeUnit.MTE1, (TileType.Mat, TileType.Right): PipeUnit.MTE1,
         (TileType.Mat, TileType.Bias): PipeUnit.MTE1, (TileType.Acc, TileType.Mat): PipeUnit.FIX,
         (TileType.Vec, TileType.Vec): PipeUnit.V}
MOVE_PATHS = ", ".join(f"{s.value}->{d.value}" for s, d in MOVES)
CONVERTS_FROM = TileType.Acc             # the tile type whose moves and stores convert (FIX)
LOAD_DST = (TileType.Vec, TileType.Mat)  # TLOAD destinations
STORE_SRC = (TileType.Vec, TileType.Acc, TileType.Mat)   # TSTORE sources


#: the pipe of a TSTORE by source tile type: from L0C on FIX (converting), else on MTE3
STORE_PIPE = {t: PipeUnit.FIX if t is TileType.Acc else PipeUnit.MTE3 for t in STORE_SRC}


def kernel_op(fn) -> OpDef | None:
    """The op whose numpy kernel is ``fn`` (to name an op in an error raised inside it)."""
    return _BY_KERNEL.get(fn)


_BY_KERNEL = {}
for _op in _DEFS:
    if _op.kernel is not None and _op.form in ("scalar", "unary"):
        _BY_KERNEL[_op.kernel] = _op
