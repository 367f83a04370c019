"""The op catalogue: one definition per tile instruction - its operand form, the pipe it
occupies, its cost entry, the dtypes it takes, its typing rule and its numpy kernel.

Everything else is derived from it: the ISA instructions and their operand checks
(``isa/ops.py``, ``isa/vector.py``, ``isa/layout_ops.py``, ``isa/debug.py``), the vector
cost table (``costs.py``), the ``TSYNC<Op>`` vocabulary (``isa/events.py``), the IR op
specs and DSL stubs (``ir/ops.py``, ``language/surface.py``) and the interpreter's
dispatch (``runtime/interp.py``).  Pure data and small numpy functions; no simulator state.

Forms (the operands, in ISA order = pto-isa's C++ order = PTO-AS ``outs(...)`` then
``ins(...)``): ``binary`` (dst, src0, src1[, tmp]), ``scalar`` (dst, src, scalar[, tmp]),
``unary`` (dst, src), ``ternary`` (dst, src0, src1, src2), ``scalar_ternary`` (dst, src0,
scalar, src1), ``axpy`` (dst, src, scalar: dst += scalar * src), ``row_reduce`` (dst,
src[, tmp]) / ``col_reduce`` (dst, src), ``row_arg`` / ``col_arg`` ([dst_val,] dst_idx,
src[, tmp]), ``row_expand`` (dst, src0, per-row src1), ``col_expand`` (dst, src0,
per-column src1), ``row_bcast`` / ``col_bcast`` (dst, per-row / per-column src),
``compare`` (dst mask, src0, src1, mode), ``compare_scalar`` (dst mask, src, scalar or
tile, mode), ``select`` (dst, mask, src0, src1[, tmp]), ``select_scalar`` (dst, mask, src[,
tmp], scalar), ``part`` (dst, src0, src1 over the union of their valid regions),
``part_arg`` (dst_val, src0_val, src1_val, dst_idx, src0_idx, src1_idx: ``part`` with
indices), ``dst_binary`` (dst, src0, src1: dst is read too, TFUSEDMULADD), ``pow`` (dst,
base, exp[, tmp]) / ``pows`` (dst, base, scalar[, tmp]), ``fill``
(dst, scalar), ``fillpad`` (dst, src, pad), ``convert`` (dst, src), ``matmul`` /
``matmul_acc`` / ``matmul_bias`` (Cube: TMATMUL*, TGEMV*), ``matmul_mx`` (TMATMUL_MX /
TGEMV_MX: block-scaled fp8 / fp4, A5), the data movements ``load``, ``store``, ``move``,
``extract``, the fixpipe's quantising ``move_fp`` / ``extract_fp`` / ``insert_fp`` /
``store_fp`` (an Acc source and a Scaling tile of per-column quant words), and the forms one
instruction has alone (``TCONCAT``, ``TTRANS``, ``TGATHER``, ``TPRINT`` ...: form = its own name).

A predicate mask (``TCMP`` / ``TCMPS`` output, ``TSEL`` / ``TSELS`` input) is laid out as
pto-isa's NPU code writes and reads it: row ``i`` of the source in row ``i`` of the mask
(the mask tile's row stride; a2a3 TCmp.hpp:93, TSel.hpp:50, a5 TSel.hpp:45, TSels.hpp:48),
bit ``j`` of the row in word ``j // w`` at bit ``j % w`` (least significant first), ``w``
the bit width of the mask tile's dtype (u8 or u32).  pto-isa's CPU simulator reads a TSEL
mask as one bit stream over the mask's valid bytes instead (cpu/TSel.hpp:27): the two agree
when a mask row's valid bytes are exactly the row's bits (``cols`` a multiple of 8, the
mask's valid columns ``cols / 8`` u8 words), or when there is one row.
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from . import dtypes as dt
from .vocab import (TCVT_PAIRS, CmpMode, CustomPad, MaskPattern, PadValue, PipeUnit, PlatformID, ScatterAtomicOp,
                    TileLayout, TileType)
from ..errors import with_article

ANY, FLOAT, INT = "any", "float", "int"      # dtype rules (or a Types: per platform)
_INT_KINDS = "iub"                           # numpy kinds of integer (and bool) dtypes
_A2A3, _A5 = PlatformID.PLATFORM_A2A3, PlatformID.PLATFORM_A5


def platform_label(platform) -> str:
    """``"A2A3"`` / ``"A5"``: how a message names a platform id."""
    return PlatformID(platform).name[len("PLATFORM_"):]


@dataclass(frozen=True)
class Types:
    """The element types an op takes on each platform (pto-isa's ``static_assert``s, which
    differ between A2A3 and A5 for many ops).  The IR, which knows no platform, takes what
    either platform takes; an instruction takes what its run's platform takes.  uint16 and
    uint64 have no short dtype name (``types`` takes them spelled out)."""
    a2a3: frozenset
    a5: frozenset

    def on(self, platform=None) -> frozenset:
        """The dtypes of ``platform`` (a PlatformID), or of either platform (None)."""
        if platform is None:
            return self.a2a3 | self.a5
        return self.a5 if platform == _A5 else self.a2a3


def types(a2a3: str, a5: str | None = None) -> Types:
    """``types("f16 f32", a5="+ bf16")``: short dtype names per platform; ``a5`` defaults to
    the A2A3 set, and ``"+ ..."`` extends it."""
    base = frozenset(dt.as_dtype(n) for n in a2a3.split())
    if a5 is None:
        return Types(base, base)
    names = a5.split()
    if names and names[0] == "+":
        return Types(base, base | frozenset(dt.as_dtype(n) for n in names[1:]))
    return Types(base, frozenset(dt.as_dtype(n) for n in names))


def _names(ds) -> str:
    return ", ".join(sorted(dt.short_name(d) for d in ds))


@dataclass(frozen=True)
class OpDef:
    """One tile instruction."""
    name: str                    # the ISA / pto-isa name, e.g. "TADD"; also its cost key
    form: str                    # operand form (see the module docstring)
    pipe: PipeUnit | None        # the pipe it occupies; None: routed by operand locations
    kernel: object = None        # the numpy function the op applies (per form)
    dtypes: object = ANY         # ANY, FLOAT (float tiles only), INT (integer tiles only) or
                                 # a Types (the dtypes of each platform)
    cost: tuple | None = None    # vector ops: (cycles per 256-B repeat, head, tail)
    dsl: str | None = None       # its ``pl.<dsl>`` spelling, if the DSL has it
    doc: str = ""
    scratch: bool = False        # pto-isa's C++ form requires a scratch tile the size of the
                                 # source (``TROWSUM(dst, src, tmp)``, ``TREM(dst, a, b, tmp)``);
                                 # the allocator places it, the C++ writer passes it
    tmp: bool = False            # pto-isa takes a scratch ``tmp`` tile of its own shape
                                 # (used on A2A3 only; pto_instr.hpp's tmp overloads, e.g.
                                 # TRSQRT(dst, src, tmp), TROWEXPANDADD(dst, a, b, tmp),
                                 # TCOLSUM(dst, src, tmp, isBinary)); the ISA takes it, optionally
    nonneg_scalar: bool = False  # the scalar operand must be >= 0 (shift counts)

    def dtype_error(self, dtype: np.dtype, platform=None) -> "tuple[str, str] | None":
        """(what, fix) if this op does not take ``dtype`` tiles on ``platform`` (a
        PlatformID; None: on either platform), else None."""
        d = np.dtype(dtype)
        if self.takes(d, platform):
            return None
        is_int = d.kind in _INT_KINDS
        if self.dtypes == FLOAT and is_int:
            return (f"{self.name} works on float tiles, not {d.name}",
                    f"convert with TCVT (pl.cast) to f16/f32 first, then {self.name}")
        if self.dtypes == INT and not is_int:
            return (f"{self.name} works on integer tiles, not {d.name}",
                    "convert with TCVT (pl.cast) to an integer dtype first")
        if isinstance(self.dtypes, Types):
            ok = self.dtypes.on(platform)
            on = "" if platform is None else f" on {platform_label(platform)}"
            if not ok:
                other = platform_label(_A5 if platform == _A2A3 else _A2A3)
                return (f"{self.name} is not implemented{on} (pto-isa has it on {other} only)",
                        f"run the kernel on {other}, or leave {self.name} out on this platform")
            fix = f"convert with TCVT (pl.cast) to one of {_names(ok)} first"
            other = _A5 if platform == _A2A3 else _A2A3
            if platform is not None and d in self.dtypes.on(other):
                fix += f" ({platform_label(other)} takes {d.name})"
            return f"{self.name} takes {_names(ok)} tiles{on}, not {d.name}", fix
        return None

    def takes(self, d: np.dtype, platform=None) -> bool:
        """This op takes ``d`` tiles on ``platform`` (None: on either): what
        :meth:`dtype_error` judges, without making its message."""
        if self.dtypes == FLOAT:
            return d.kind not in _INT_KINDS
        if self.dtypes == INT:
            return d.kind in _INT_KINDS
        return not isinstance(self.dtypes, Types) or d in self.dtypes.on(platform)

    @property
    def float_only(self) -> bool:
        """The op takes float tiles only, on every platform (and takes some)."""
        if self.dtypes == FLOAT:
            return True
        ds = self.dtypes.on(None) if isinstance(self.dtypes, Types) else ()
        return bool(ds) and all(d.kind not in _INT_KINDS for d in ds)

    def allowed(self) -> "tuple | None":
        """Per PlatformID, the set of the catalogue's tile dtypes this op takes (None: any) -
        the ISA's fast check; a dtype outside it is judged by :meth:`dtype_error`."""
        if self.dtypes == ANY:
            return None
        return tuple(frozenset(d for d in KNOWN_DTYPES if self.takes(np.dtype(d), p))
                     for p in PlatformID)


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


#: the forms whose pto-isa NPU implementations and ptoas verifiers take RowMajor Vec tiles only
#: (TADD / TMAX / TMULS / TEXP ... ``static_assert`` isRowMajor; ptoas: "expects src0, src1, and
#: dst to use row-major layout", TEXPANDS "expects vec dst to use row-major layout on A2/A3"):
#: on DN [R, 1] columns the writers run them on the columns' ND [1, R] row views (TRESHAPE,
#: as PyPTO's kernels do)
ROW_MAJOR_FORMS = ("binary", "scalar", "unary", "fill")
#: the instructions whose pto-isa NPU code ``static_assert``s RowMajor tiles on both platforms
#: (npu/a2a3 and npu/a5: TAdd.hpp ... TSubRelu.hpp for every binary form, TUnaryOp.hpp's check for
#: these unary ones, TRsqrt.hpp, TPairReduceSum.hpp), which ptopipe's C++ headers refuse on any
#: other layout (the ISA takes them: the DSL's runtime runs column math on DN operands; a .pto's
#: ops follow ptoas's verifier, ``codegen.pto_syntax.PTOAS_ROW_MAJOR``); TNEG and TRECIP are
#: TMULS / TDIVS there, and the scalar forms assert no layout
ROW_MAJOR_ONLY = frozenset(["TADD", "TSUB", "TMUL", "TDIV", "TMAX", "TMIN", "TAND", "TOR", "TXOR", "TSHL", "TSHR",
                            "TREM", "TFMOD", "TPRELU", "TSUBRELU", "TEXP", "TLOG", "TSQRT", "TRSQRT", "TABS",
                            "TRELU", "TNOT", "TPAIRREDUCESUM"])


def matmul_dtype_fix() -> str:
    names = ", ".join(sorted({d.name for d in MATMUL_ACCUM}))
    return f"Cube inputs are {names}; convert with TCVT (pl.cast) first"


_MM_PAIRS = {(dt.int8, dt.int8): dt.int32, (dt.float16, dt.float16): dt.float32,
             (dt.bfloat16, dt.bfloat16): dt.float32, (dt.float32, dt.float32): dt.float32}
_FP8 = (dt.float8_e4m3, dt.float8_e5m2)
#: the operand dtypes the Cube multiplies, per platform: (Left, Right) -> accumulator dtype
#: (pto-isa's TMATMUL / TGEMV static_asserts: a2a3 TMatmul.hpp - int8, half, bfloat16_t and float
#: pairs; a5 TMatmul.hpp also float8 e4m3 / e5m2 in any pairing; uint8 on neither).  The IR,
#: which knows no platform, types by :data:`MATMUL_ACCUM`
MATMUL_PAIRS = {_A2A3: _MM_PAIRS, _A5: {**_MM_PAIRS, **{(a, b): dt.float32 for a in _FP8 for b in _FP8}}}


def matmul_pair_error(op: str, a, b, platform) -> "tuple[str, str]":
    """(what, fix) of a matmul whose operands have dtypes ``a`` and ``b``, which the Cube of
    ``platform`` does not multiply (:data:`MATMUL_PAIRS`)."""
    a, b, plat = np.dtype(a), np.dtype(b), PlatformID(platform)
    pairs = MATMUL_PAIRS[plat]
    other = next((p for p in PlatformID if p != plat and (a, b) in MATMUL_PAIRS[p]), None)
    have = ", ".join(f"{dt.short_name(x)} x {dt.short_name(y)}" for x, y in pairs)
    what = (f"{op}: a is {a.name} but b is {b.name}" if a != b else f"{op}: the Cube does not take {a.name} inputs")
    what += (f" on {platform_label(plat)}" + (f" ({platform_label(other)}'s does)" if other is not None else "")
             + " (pto-isa's static_assert: the kernel does not compile)")
    return what, f"the Cube of {platform_label(plat)} multiplies {have}; convert with TCVT first"


def tcvt_pair_error(src, dst, platform=None) -> "tuple[str, str] | None":
    """(what, fix) if TCVT has no ``src`` -> ``dst`` conversion on ``platform`` (a PlatformID;
    None: on neither platform, the IR's rule), else None.  The fix names the destinations the
    platform has for ``src`` and a two-step route through one of them where there is one."""
    s, d = np.dtype(src), np.dtype(dst)
    plats = list(PlatformID) if platform is None else [PlatformID(platform)]
    if any((s.name, d.name) in TCVT_PAIRS[p] for p in plats):
        return None
    on = "" if platform is None else f" on {platform_label(platform)}"
    pairs = frozenset().union(*(TCVT_PAIRS[p] for p in plats))
    outs = sorted(dt.short_name(np.dtype(b)) for a, b in pairs if a == s.name)
    def via(ps):        # the widest intermediate first (a float before an integer its size): it loses least
        return sorted((np.dtype(m) for a, m in ps if a == s.name and (m, d.name) in ps and m != s.name),
                      key=lambda m: (-m.itemsize, m.kind != "f", m.name))
    # the IR's rule (no platform) suggests a route every platform has, where there is one
    mids = via(frozenset.intersection(*(TCVT_PAIRS[p] for p in plats))) or via(pairs)
    routes = [f"{dt.short_name(s)} -> {dt.short_name(m)} -> {dt.short_name(d)}" for m in mids]
    what = f"TCVT has no {dt.short_name(s)} -> {dt.short_name(d)} conversion{on}"
    fix = (f"{dt.short_name(s)} converts to {', '.join(outs)}{on}" if outs
           else f"TCVT converts no {dt.short_name(s)} tile{on}")
    if routes:
        fix += f"; convert in two TCVTs: {routes[0]}"
    else:
        fix += f"; no two-step TCVT route reaches {dt.short_name(d)}"
    if platform is not None:
        other = _A5 if PlatformID(platform) == _A2A3 else _A2A3
        if (s.name, d.name) in TCVT_PAIRS[other]:
            fix += f" ({platform_label(other)} converts it directly)"
    return what, fix


def _range(d: np.dtype) -> tuple:
    if d.kind in _INT_KINDS:
        info = np.iinfo(d)
        return int(info.min), int(info.max), True
    big = float(ml_dtypes.finfo(d).max)
    return -big, big, False


#: tile dtype -> (lowest, highest, integral) of the scalars its ops take
SCALAR_RANGE = {d: _range(d) for d in {dt.float16, dt.float32, dt.bfloat16, dt.float8_e4m3,
                                       dt.float8_e5m2, dt.int8, dt.uint8, dt.int16, dt.int32,
                                       dt.uint32, dt.int64, np.dtype(np.uint16), np.dtype(np.uint64)}}
#: the tile dtypes the catalogue's rules are stated over
KNOWN_DTYPES = frozenset(SCALAR_RANGE)


#: the tile-scalar ops whose implementation on a platform asserts only that src and dst have
#: the same valid columns and runs over dst's valid region (its rows may be fewer or more than
#: src's): a5 TMulS.hpp:84, TMaxs.hpp:81, TMins.hpp:86.  The rest of the family asserts rows
#: too - a5 TAddS.hpp:84, TSubS.hpp:77, TDivS.hpp:164 / :194, TShlS.hpp:83, TShrS.hpp:76,
#: TAndS / TOrS / TXorS.hpp:67, TRemS.hpp:116, TFModS.hpp:112, TLRelu.hpp:66, TSels.hpp:141 -
#: and so does every A2A3 header (a2a3 TMulS.hpp:61, TMins.hpp:61, TMaxS.hpp:69).
ROWS_FROM_DST = {_A5: frozenset({"TMULS", "TMAXS", "TMINS"})}
#: platform -> the tile-scalar ops pto-isa builds by expanding the scalar into dst first
#: (a2a3/TBitwiseSOp.hpp: TANDS / TORS = TEXPANDS(dst, s) then TAND(dst, src, dst); TXORS goes
#: through TANDS): a dst on the source's bytes overwrites the source before it is read (the
#: debug build asserts "Setting the source Tile and destination Tile to the same memory is
#: unsupported"; ptoas refuses src == dst: "expects src and dst to use different storage")
SCALAR_INTO_DST_FIRST = {_A2A3: frozenset({"TANDS", "TORS", "TXORS"})}


def rows_from_dst(name: str, platform) -> bool:
    """Does ``name`` on ``platform`` (a PlatformID) take src and dst of different valid rows,
    computing dst's (:data:`ROWS_FROM_DST`)?"""
    return name in ROWS_FROM_DST.get(platform, ())


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


def op_scalar_error(op: OpDef, dtype: np.dtype, scalar) -> str | None:
    """:func:`scalar_error`, plus the op's own scalar rule (a shift count is not negative)."""
    bad = scalar_error(dtype, scalar)
    if bad is None and op.nonneg_scalar and scalar < 0:
        return f"the scalar {scalar!r} is negative; {op.name} shifts by 0 or more bits"
    return bad


#: CmpMode -> the numpy comparison it makes
COMPARE = {CmpMode.EQ: np.equal, CmpMode.NE: np.not_equal, CmpMode.LT: np.less,
           CmpMode.LE: np.less_equal, CmpMode.GT: np.greater, CmpMode.GE: np.greater_equal}
#: TCMPS source dtypes A2A3 compares as half: pto-isa's a2a3/TCmps.hpp GenCmpCall reinterprets a
#: 2-byte source and its scalar as ``half`` (``*reinterpret_cast<half*>(&src1)``), so the device
#: orders int16 bit patterns as f16 values (a negative one is a negative float or a NaN) - the
#: simulator compares so too
CMPS_BITS_AS_HALF_A2A3 = frozenset({dt.int16, np.dtype(np.uint16)})
#: the dtypes of a predicate mask tile (TCMP / TCMPS output, TSEL / TSELS input): words of
#: bits, so a signed word type holds the same bits (ptoas reads an i8 mask as well)
MASK_DTYPES = (dt.uint8, dt.uint32, dt.int8, dt.int32)


# -- numpy kernels (names show in error messages) ---------------------------------------------
def adds(a, s, d):
    np.add(a, s, out=d)


def subs(a, s, d):
    np.subtract(a, s, out=d)


def muls(a, s, d):
    np.multiply(a, s, out=d)


def divs(a, s, d):
    div_trunc(a, s, d)


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
    """``1 / a`` (TRECIP: pto-isa's TDIVS(dst, 1, src); integers toward zero)."""
    if d.dtype.kind in "iu":
        div_trunc(1, a, d)
    else:
        np.divide(1, a, out=d, casting="unsafe")


def not_(a, d):
    np.invert(a, out=d)


def ands(a, s, d):
    np.bitwise_and(a, s, out=d)


def ors(a, s, d):
    np.bitwise_or(a, s, out=d)


def xors(a, s, d):
    np.bitwise_xor(a, s, out=d)


def shls(a, s, d):
    np.left_shift(a, s, out=d)


def shrs(a, s, d):
    np.right_shift(a, s, out=d)


def _no_int_zero(b) -> None:
    """Integer division by zero: pto-isa's CPU model asserts, the device is target-defined -
    an error here, never a silent 0 (a float divisor of 0 gives NaN / inf, as IEEE says)."""
    if np.asarray(b).dtype.kind in "iu" and not np.all(b):
        raise DataFault("integer division by zero (a divisor element is 0)",
                        "keep integer divisors non-zero (the device's result is undefined), or "
                        "divide in float (TCVT) where 0 gives inf / NaN")


def _wide(x):
    """``x`` in float64: pto-isa computes the float remainders in double, then rounds once."""
    return np.asarray(x, dtype=np.float64)


def rem(a, b, out):
    """Remainder with the sign of the divisor: ``a - floor(a / b) * b`` (TREM / TREMS)."""
    _no_int_zero(b)
    if out.dtype.kind in "iu":
        np.remainder(a, b, out=out)
    else:
        np.copyto(out, np.remainder(_wide(a), _wide(b)), casting="unsafe")


def fmod(a, b, out):
    """Remainder with the sign of the dividend: C's ``fmod`` / ``%`` (TFMOD / TFMODS)."""
    _no_int_zero(b)
    if out.dtype.kind in "iu":
        np.fmod(a, b, out=out)
    else:
        np.copyto(out, np.fmod(_wide(a), _wide(b)), casting="unsafe")


def div_trunc(a, b, out):
    """Division as the device divides: floats by IEEE, integers toward zero (C's ``/``, as
    pto-isa's integer TDIVS loops on the scalar unit and A5's integer ``vdiv`` / Int64Div
    divide), exactly in the integer type (a float quotient rounds int64s); INT_MIN / -1
    wraps, as two's complement does."""
    if out.dtype.kind not in "iu":
        np.divide(a, b, out=out)
        return
    _no_int_zero(b)
    a, b = np.asarray(a, dtype=out.dtype), np.asarray(b, dtype=out.dtype)
    with np.errstate(all="ignore"):
        q = np.floor_divide(a, b)
        if out.dtype.kind == "i":        # floor -> toward zero where the signs differ
            q = q + ((q * b != a) & ((a < 0) != (b < 0))).astype(out.dtype)
    np.copyto(out, q, casting="unsafe")


def prelu(a, b, out):
    """``a > 0 ? a : a * b`` (TPRELU: a per-element slope)."""
    np.copyto(out, np.where(a > 0, a, a * b), casting="unsafe")


def lrelu(a, s, d):
    """``a > 0 ? a : a * slope`` (TLRELU: a scalar slope)."""
    np.copyto(d, np.where(a > 0, a, a * s), casting="unsafe")


def addc(a, b, c, d):
    np.add(np.add(a, b), c, out=d)


def subc(a, b, c, d):
    np.add(np.subtract(a, b), c, out=d)


def addsc(a, s, b, d):
    np.add(np.add(a, s), b, out=d)


def subsc(a, s, b, d):
    np.add(np.subtract(a, s), b, out=d)


#: the kernels above that run unchanged on operands with extra leading axes (each writes its
#: last argument, element by element, from the others): a batch of blocks that repeat
#: (sim.periodic) runs such a kernel once for all of them (``batch_out``: the argument it writes)
for _k in (adds, subs, muls, maxs, mins, exp, log, sqrt, rsqrt, abs_, neg, relu, addc, subc, addsc, subsc):
    _k.batch_out = -1
del _k


def axpy(a, s, d):
    """``d = s * a + d``; an f16 ``a`` into an f32 ``d`` is widened first (TAXPY)."""
    np.add(np.multiply(a.astype(d.dtype), d.dtype.type(s)), d, out=d)


def pack_mask(p, d) -> None:
    """The predicate ``p`` (bool, rows x cols) packed into mask ``d`` (see the module
    docstring); the rest of ``d``'s valid region is zeroed."""
    rows, cols = p.shape
    bits = 8 * d.dtype.itemsize
    words = -(-cols // bits)
    packed = np.packbits(p, axis=1, bitorder="little")          # rows x ceil(cols / 8) bytes
    pad = words * d.dtype.itemsize - packed.shape[1]
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    d[...] = 0
    d[:rows, :words] = packed.view(d.dtype.newbyteorder("<"))


def unpack_mask(m, rows: int, cols: int):
    """The rows x cols predicate a mask ``m`` holds (the inverse of :func:`pack_mask`)."""
    words = -(-cols // (8 * m.dtype.itemsize))
    raw = np.ascontiguousarray(m[:rows, :words]).astype(m.dtype.newbyteorder("<")).view(np.uint8)
    return np.unpackbits(raw, axis=1, bitorder="little")[:, :cols].astype(bool)


def compare(a, b, mode, d):
    """``d`` = the packed predicate ``a <mode> b`` (TCMP; TCMPS with ``b`` a scalar)."""
    pack_mask(COMPARE[mode](a, b), d)


def select(m, a, b, d):
    """``d = mask ? a : b`` per element (TSEL; TSELS with ``b`` a scalar)."""
    np.copyto(d, np.where(unpack_mask(m, *d.shape), a, b), casting="unsafe")


def concat(a, b, d):
    """``d[:, :ca] = a``, ``d[:, ca:ca + cb] = b`` (TCONCAT, along columns)."""
    ca, cb = a.shape[1], b.shape[1]
    left, right = a.copy(), b.copy()           # d may alias a source
    d[:, :ca] = left
    d[:, ca:ca + cb] = right


def trans(a, d):
    """``d[j, i] = a[i, j]`` over ``a``'s valid region (TTRANS)."""
    d[:a.shape[1], :a.shape[0]] = a.T.copy()


def pad_value(pad, dtype: np.dtype):
    """The fill of a ``pad`` (a PadValue, or a number or CustomPad: pto-isa's custom pad) in ``dtype``."""
    d = np.dtype(dtype)
    if isinstance(pad, CustomPad):      # its bits, the low ones of a narrower type
        raw = np.dtype(f"u{d.itemsize}")
        return np.array(pad.bits & ((1 << (8 * min(d.itemsize, 4))) - 1), raw).view(d)[()]
    if pad is PadValue.Zero:
        return d.type(0)
    if d.kind in _INT_KINDS:
        info = np.iinfo(d)
        return d.type(info.max if pad is PadValue.Max else info.min) if isinstance(pad, PadValue) \
            else d.type(pad)
    if isinstance(pad, PadValue):
        return d.type(np.inf if pad is PadValue.Max else -np.inf)
    return d.type(pad)


def fill_pad(a, fill, d):
    """``d`` (a whole tile) = ``a`` where ``a`` is valid, ``fill`` elsewhere (TFILLPAD)."""
    out = np.full(d.shape, fill, d.dtype)
    out[:a.shape[0], :a.shape[1]] = a
    d[...] = out


def ci(start: int, descending: bool, d):
    """``d[0, k] = start + k`` (``start - k`` descending) over the valid columns (TCI)."""
    k = np.arange(d.shape[1], dtype=np.int64)
    v = start - k if descending else start + k
    np.copyto(d[:1], v[None, :] if d.dtype.kind in "iu" else v[None, :].astype(np.float64),
              casting="unsafe")


def tri(diagonal: int, upper: bool, d):
    """A triangular 0/1 mask: lower ``j <= i + diagonal``, upper ``j >= i + diagonal`` (TTRI)."""
    i = np.arange(d.shape[0])[:, None]
    j = np.arange(d.shape[1])[None, :]
    np.copyto(d, (j >= i + diagonal) if upper else (j <= i + diagonal), casting="unsafe")


_PHILOX_M = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_PHILOX_W = (np.uint64(0x9E3779B9), np.uint64(0xBB67AE85))
_U32 = np.uint64(0xFFFFFFFF)


def philox(counters, key, rounds: int):
    """Philox-4x32 (Salmon et al. 2011) of each counter column: ``counters`` is 4 x n words
    (uint64 arrays holding 32-bit values), ``key`` two words; returns the 4 x n outputs."""
    c0, c1, c2, c3 = counters
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    for _ in range(rounds):
        p0, p1 = c0 * _PHILOX_M[0], c2 * _PHILOX_M[1]        # 32 x 32 -> 64 bits: exact
        c0, c1, c2, c3 = (p1 >> np.uint64(32)) ^ c1 ^ k0, p1 & _U32, (p0 >> np.uint64(32)) ^ c3 ^ k1, p0 & _U32
        k0, k1 = (k0 + _PHILOX_W[0]) & _U32, (k1 + _PHILOX_W[1]) & _U32
    return c0, c1, c2, c3


def random_words(key, counter, rounds: int, row_stride: int, d):
    """TRANDOM as pto-isa's CPU model lays Philox out: per 4 x 256-byte repeat block of a row,
    lane ``l`` of the 64 lanes takes counter ``base + l`` and writes its 4 outputs to columns
    ``block + r * 64 + l``; ``base`` (128 bits) advances by ``row_stride / 4`` per block."""
    rows, cols = d.shape
    lanes = 256 // d.dtype.itemsize
    per = 4 * lanes
    blocks = -(-cols // per)
    step = np.arange(rows * blocks, dtype=np.uint64)[:, None] * np.uint64(row_stride // 4)
    off = (step + np.arange(lanes, dtype=np.uint64)[None, :]).reshape(-1)
    words, carry = [], off
    for w in counter:                                # the 128-bit add, word by word
        t = np.uint64(w) + carry
        words.append(t & _U32)
        carry = t >> np.uint64(32)
    out = np.stack(philox(words, key, rounds))      # 4 x (rows * blocks * lanes)
    out = out.reshape(4, rows, blocks, lanes).transpose(1, 2, 0, 3).reshape(rows, blocks * per)
    d[...] = out[:, :cols].astype(np.uint32).view(d.dtype)      # int32: the same bits


def pattern_takes(pattern: MaskPattern, n: int):
    """The bool mask of the ``n`` positions a MaskPattern takes (of each 2 or 4, counting
    from the right of its bit string: P0101 takes positions 0, 2, 4 ...)."""
    k = np.arange(n)
    if pattern is MaskPattern.P1111:
        return np.ones(n, bool)
    if pattern <= MaskPattern.P1010:
        return k % 2 == int(pattern) - int(MaskPattern.P0101)
    return k % 4 == int(pattern) - int(MaskPattern.P0001)


def gather_index(a_full, idx, d):
    """``d[r, c] = a_full.flat[idx[r, c]]`` (row-major over the whole source tile; TGATHER's
    index form).  An index outside the source is an error: pto-isa's NPU code reads the UB
    at ``src + index`` unchecked (npu/a2a3/TGather.hpp), whatever lies past the tile (its CPU
    model writes 0: the ISA page leaves it implementation-defined)."""
    bad = gather_index_error(a_full.shape, idx)
    if bad is not None:
        raise DataFault(*bad)
    d[...] = a_full.reshape(-1)[idx.astype(np.int64)]


def gather_index_error(shape, idx) -> "tuple[str, str] | None":
    """(what, fix) for the first index of ``idx`` outside a source tile of ``shape`` (TGATHER's
    index form), else None."""
    n = int(shape[0]) * int(shape[1])
    i = idx.astype(np.int64)
    bad = (i < 0) | (i >= n)
    if not bad.any():
        return None
    r, c = (int(x) for x in np.argwhere(bad)[0])
    return (f"TGATHER index {int(i[r, c])} (for dst element [{r}, {c}]) is outside the {shape[0]}x{shape[1]} "
            f"source tile ({n} elements)",
            f"keep every index in 0 .. {n - 1}: the device reads whatever lies past the source tile")


def gather_compare(a, k, mode, offset: int, d_full, counts) -> None:
    """Per row ``i``: the column numbers ``offset + j`` of the ``a[i, j]`` that compare
    ``<mode>`` to the threshold ``k[i]`` (in order) into ``d_full[i, :n]``, and ``n`` into
    ``counts[i]`` (TGATHER's compare form; the rest of each dst row is left as it was)."""
    hit = COMPARE[mode](a, np.asarray(k, a.dtype).reshape(-1, 1))
    for i, row in enumerate(hit):
        cols = np.flatnonzero(row)
        d_full[i, :cols.size] = offset + cols
    np.copyto(counts, hit.sum(axis=1), casting="unsafe")


def concat_counted(a_full, b_full, n0, n1, unit: int, d, dst_idx) -> None:
    """TCONCAT's indexed forms, as pto-isa's NPU implementations take them: per row ``i``,
    ``src0Idx[i, 0]`` and ``src1Idx[i, 0]`` are byte counts in units of the index dtype's
    size (``unit``); ``c0 = min(n0 / unit, dst cols)`` columns of src0 then ``c1 = min(n1 /
    unit, dst cols - c0)`` of src1 go to the row's start; ``dst_idx`` (when given) gets
    ``min(c0' + c1', dst cols) * unit`` of the uncut counts.  Counts reaching past a source
    tile's static columns are an error (the device reads whatever follows the tile)."""
    cols = d.shape[1]
    for i in range(d.shape[0]):
        w0, w1 = int(n0[i]) // unit, int(n1[i]) // unit
        c0 = min(w0, cols)
        c1 = min(w1, cols - c0)
        for what, c, src in (("src0", c0, a_full), ("src1", c1, b_full)):
            if c > src.shape[1] or int((n0, n1)[what == "src1"][i]) < 0:
                raise DataFault(f"TCONCAT row {i}: {what}Idx asks for {c} columns of a {src.shape[1]}-"
                                "column source tile", f"keep {what}Idx[i, 0] in 0 .. {src.shape[1] * unit} "
                                f"(bytes in units of {unit})")
        row0, row1 = a_full[i, :c0].copy(), b_full[i, :c1].copy()      # d may alias a source
        d[i, :c0] = row0
        d[i, c0:c0 + c1] = row1
        if dst_idx is not None:
            dst_idx[i] = min(w0 + w1, cols) * unit


def scatter_index(s, idx, d_full):
    """The whole destination tile zeroed, then ``d_full.flat[idx[r, c]] = s[r, c]`` in row-major
    order (the last write of an index wins); an index outside the destination tile is an error
    (TSCATTER's index form).  pto-isa's a2a3 and a5 TScatter.hpp clear dst (InitUBBuffer, all
    Rows x Cols elements) before scattering, so nothing dst held survives; its CPU simulator
    leaves the elements no index names as they were."""
    i = idx.astype(np.int64).reshape(-1)
    if i.size and (i.min() < 0 or i.max() >= d_full.size):
        bad = int(i[(i < 0) | (i >= d_full.size)][0])
        raise DataFault(f"TSCATTER index {bad} is outside the {d_full.shape[0]}x{d_full.shape[1]} "
                        "destination tile", "keep every index in 0 .. rows * cols - 1 of dst")
    d_full[...] = 0
    d_full.reshape(-1)[i] = s.reshape(-1)


def sort32(s, idx, d):
    """Per row, each block of 32 (value, index) pairs sorted by value descending, ties by the
    smaller index, written as 8-byte tuples [value, index] (a 2-byte value zero-padded to 4
    bytes) - TSORT32 as pto-isa's CPU model sorts."""
    rows, cols = s.shape
    out = np.zeros((rows, cols, 8), np.uint8)
    for b in range(0, cols, 32):
        v, i = s[:, b:b + 32], idx[:, b:b + 32].astype(np.uint32)
        order = np.lexsort((i, -v.astype(np.float64)), axis=1)
        vs = np.take_along_axis(v, order, axis=1)
        out[:, b:b + 32, :s.itemsize] = vs.view(np.uint8).reshape(rows, -1, s.itemsize)
        out[:, b:b + 32, 4:] = np.take_along_axis(i, order, axis=1).view(np.uint8).reshape(rows, -1, 4)
    d[:, :cols * 8 // d.itemsize] = out.reshape(rows, cols * 8).view(d.dtype)


def _pairs(a) -> tuple:
    """(values, 8-byte tuples) of a one-row tile of [value, index] tuples (TSORT32's output)."""
    per = 8 // a.itemsize
    n = a.shape[1] // per
    row = np.ascontiguousarray(a[0, :n * per])
    return row.reshape(n, per)[:, 0].tolist(), row.view(np.uint8).reshape(n, 8)


def _merge(lists: list, limit: int, exhausted: bool) -> tuple:
    """pto-isa's ``vmrgsort4`` merge: repeatedly take the head with the largest value (ties:
    the lowest list), at most ``limit`` tuples; with ``exhausted``, stop once a list runs out.
    Returns (the tuples taken, how many of each list)."""
    taken, heads = [], [0] * len(lists)
    while len(taken) < limit:
        pick, best = -1, None
        for k, (vals, _) in enumerate(lists):
            h = heads[k]
            if h < len(vals) and (pick < 0 or vals[h] > best):
                pick, best = k, vals[h]
        if pick < 0:
            break
        taken.append(lists[pick][1][heads[pick]])
        heads[pick] += 1
        if exhausted and any(h == len(vals) for h, (vals, _) in zip(heads, lists)):
            break
    return taken, heads


def _put_pairs(d, taken: list) -> None:
    if taken:
        n = len(taken) * 8 // d.itemsize
        d[0, :n] = np.stack(taken).reshape(-1).view(d.dtype)


def mrgsort_blocks(s, block_len: int, d) -> None:
    """TMRGSORT(dst, src, blockLen): each group of 4 blocks of ``block_len`` elements of the
    one-row ``s`` merged into the same columns of ``d`` (its valid columns bound the groups)."""
    group = 4 * block_len
    for base in range(0, d.shape[1] - group + 1, group):
        lists = [_pairs(s[:, base + b * block_len:base + (b + 1) * block_len]) for b in range(4)]
        taken, _ = _merge(lists, sum(len(v) for v, _ in lists), False)
        _put_pairs(d[:, base:base + group], taken)


def mrgsort_lists(srcs: list, exhausted: bool, executed, d) -> None:
    """TMRGSORT(dst, executed, tmp, src0, src1[, src2, src3]): 2 to 4 sorted lists merged
    into ``d`` (up to its valid tuples); ``executed`` gets how many of each list were taken."""
    lists = [_pairs(a) for a in srcs]
    taken, heads = _merge(lists, d.shape[1] * d.itemsize // 8, exhausted)
    _put_pairs(d, taken)
    heads += [0] * (4 - len(heads))
    (executed.mrgSortList0, executed.mrgSortList1, executed.mrgSortList2,
     executed.mrgSortList3) = heads


def quant_int8(x, scale, offset, d):
    """``d = clip(rint(x * scale[i] (+ offset[i])))`` per row ``i`` into int8 (symmetric) or
    uint8 (with the offset): TQUANT's INT8 forms, the scale tile holding 1 / scale as in
    pto-isa's CPU model."""
    y = x.astype(np.float32) * scale[:, :1].astype(np.float32)
    if offset is not None:
        y = y + offset[:, :1].astype(np.float32)
    info = np.iinfo(d.dtype)
    d[...] = np.clip(np.rint(y), info.min, info.max).astype(d.dtype)


#: the MX formats' group: 32 elements share one e8m0 exponent (along a row: ND, grp_axis 1;
#: along a column: DN, grp_axis 0)
MX_GROUP = 32
#: MXFP8 (e4m3) TQUANT's sources (a5 TQuant.hpp CheckTQuantMxTypes) and its largest magnitude
MX_QUANT_SRC = (dt.float32, dt.float16, dt.bfloat16)
_E4M3_MAX, _E4M3_EMAX = 448.0, 8


def mx_exponents(gmax, nv: bool) -> tuple:
    """``(e8m0, scaling)`` of float32 group maxima ``gmax`` for MXFP8 (e4m3), as pto-isa's A5
    TQuant (ComputeF32OcpExpAndScaling; the NV path's RoundUpNvSharedExponent) and its CPU
    simulator take them: OCP ``e = max's exponent bits - 8`` (0 at or below 8, 0xFF for a NaN
    maximum), NV ``e`` = the exponent of ``max / 448`` rounded up where bits are left (0xFE for an
    infinite one, 0xFF for a NaN, 0 for a zero maximum); ``scaling = 2 ** (127 - e)`` (2 ** -127
    at e = 0xFE, NaN at 0xFF)."""
    g = np.asarray(gmax, np.float32)
    if nv:
        g = g * np.float32(1.0 / _E4M3_MAX)
    bits = g.view(np.uint32)
    exp = ((bits >> np.uint32(23)) & np.uint32(0xFF)).astype(np.int64)
    man = bits & np.uint32(0x7FFFFF)
    if nv:
        up = (man != 0) & (exp != 0xFE) & ~((exp == 0) & (man <= 0x400000))
        e = np.where(exp == 0xFF, np.where(man == 0, 0xFE, 0xFF), exp + up)
        e = np.where(g == 0, 0, e)
    else:
        e = np.where((exp == 0xFF) & (man != 0), 0xFF, np.where(exp <= _E4M3_EMAX, 0, exp - _E4M3_EMAX))
    scale_bits = (np.clip(254 - e, 0, 255).astype(np.uint32) << np.uint32(23))
    scaling = scale_bits.view(np.float32).copy()
    scaling[scaling == 0] = np.float32(2.0 ** -127)
    scaling[e == 0xFF] = np.float32(np.nan)
    return e.astype(np.uint8), scaling


def mx_quant_fp8(x, axis: int, nv: bool, interleave: bool, d, e, m, s) -> None:
    """MXFP8 TQUANT of the valid region ``x`` (rows x cols, float32 / float16 / bfloat16): per
    group of 32 along a row (``axis`` 1, ND) or a column (``axis`` 0, DN) the e8m0 exponent and
    scaling of its largest magnitude (:func:`mx_exponents`), the elements times the scaling to
    e4m3 (pto-isa's A5 vcvt: round to nearest even, saturating at +-448, the sign kept on a zero;
    a NaN 0x7F) as bytes into ``d``; the exponents into ``e`` (ND: rows x cols/32, DN: rows/32 x
    cols; DN ``interleave``: rows/64 x 2*cols, ``e[p, 2c + k] = exponent[2p + k, c]``), the maxima
    and scalings into the flat ``m`` / ``s`` (group order: ND row-major over (row, group), DN over
    (group, column)), as pto-isa's CPU simulator writes its max / scaling scratch."""
    import ml_dtypes
    v = np.asarray(x, np.float32)
    rows, cols = v.shape
    if axis == 1:
        grouped = v.reshape(rows, cols // MX_GROUP, MX_GROUP)
        gmax = np.abs(grouped).max(axis=2)
    else:
        grouped = v.reshape(rows // MX_GROUP, MX_GROUP, cols)
        gmax = np.abs(grouped).max(axis=1)
    exps, scaling = mx_exponents(gmax, nv)
    per = scaling[:, :, None] if axis == 1 else scaling[:, None, :]
    scaled = (grouped * per).reshape(rows, cols)
    code = np.clip(scaled, -_E4M3_MAX, _E4M3_MAX).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    code = np.where(np.isnan(scaled), np.uint8(0x7F), code)
    d[...] = code.view(d.dtype)
    if interleave:
        exps = exps.reshape(exps.shape[0] // 2, 2, exps.shape[1]).transpose(0, 2, 1).reshape(exps.shape[0] // 2, -1)
    e[...] = exps
    m[:gmax.size] = gmax.reshape(-1)
    s[:scaling.size] = scaling.reshape(-1)


def dequant(q, scale, offset, d):
    """``d[i, j] = (q[i, j] - offset[i, p]) * scale[i, p]``, ``p = min(j, params' cols - 1)``
    (per-row parameters: TDEQUANT)."""
    p = np.minimum(np.arange(q.shape[1]), scale.shape[1] - 1)
    np.multiply(q.astype(np.float32) - offset[:, p], scale[:, p], out=d)


def fp_params(q) -> tuple:
    """The fixpipe's vector quantisation parameters of uint64 words ``q`` (one per column of
    an fp / Scaling tile), as pto-isa's CPU model reads them: the scale M1 (bits 13..31: sign,
    8-bit exponent, 10-bit mantissa, i.e. the float32 in the low word with its last 13
    mantissa bits dropped; exponent and mantissa 0 give 0), the offset (bits 37..45), the
    signed-result bit (46) and the int32 -> int16 shift (bits 32..35, plus 1)."""
    q = np.asarray(q, dtype=np.uint64)
    m1 = (q >> np.uint64(13)) & np.uint64(0x7FFFF)
    sign = ((m1 >> np.uint64(18)) & np.uint64(1)).astype(np.float64)
    exp = ((m1 >> np.uint64(10)) & np.uint64(0xFF)).astype(np.int64)
    man = (m1 & np.uint64(0x3FF)).astype(np.float64)
    scale = np.where((exp == 0) & (man == 0), 0.0,
                     (1 - 2 * sign) * np.ldexp(1 + man / 1024, exp - 127)).astype(np.float32)
    offset = ((q >> np.uint64(37)) & np.uint64(0x1FF)).astype(np.float32)
    signed = ((q >> np.uint64(46)) & np.uint64(1)).astype(bool)
    shift = ((q >> np.uint64(32)) & np.uint64(0xF)).astype(np.int64) + 1
    return scale, offset, signed, shift


def quantize_fp(s, q, d, relu: bool = False) -> None:
    """``d = convert(s; q[c])`` per column ``c`` (TMOV_FP / TEXTRACT_FP / TINSERT_FP / TSTORE_FP,
    pto-isa's vector pre-quant modes): f32 / i32 -> i8 / u8 ``clip(rint(s * scale + offset))``
    into the signed (bit 46) or unsigned byte range; f32 / i32 -> f16 / bf16 ``s * scale``
    clipped to the destination's largest finite value; i32 -> i16 ``s >> shift`` kept to 16
    bits.  The product and sum are float32; ``relu`` (ReluPreMode.NormalRelu) takes
    max(result, 0) last."""
    scale, offset, signed, shift = fp_params(q)
    dt_out = np.dtype(d.dtype)
    if s.dtype == dt.int32 and dt_out == dt.int16:
        r = (s.astype(np.int64) >> shift[None, :]).astype(np.int16)
    elif dt_out in (dt.float16, dt.bfloat16):
        big = float(ml_dtypes.finfo(dt_out).max)
        r = np.clip(s.astype(np.float32) * scale[None, :], -big, big)
    else:
        r = np.rint(s.astype(np.float32) * scale[None, :] + offset[None, :])
        r = np.clip(r, np.where(signed, -128.0, 0.0)[None, :], np.where(signed, 127.0, 255.0)[None, :])
        r = r.astype(np.int64)                             # 128..255 into int8: the low byte
    if relu:
        r = np.maximum(r, 0)
    np.copyto(d, r, casting="unsafe")


#: TMATMUL_MX / TGEMV_MX (A5): the inputs (any pair of them: pto-isa's FP8 and FP4 triples
#: with float32 results; its e1m2 fp4 has no numpy dtype), the block-scale dtype and the
#: number of K elements one scale covers
MX_INPUTS = (dt.float8_e4m3, dt.float8_e5m2, dt.float4_e2m1)
MX_SCALE = dt.float8_e8m0
MX_GROUP = 32
MX_BASE_K = 64          # a's static columns are a multiple of it (pto-isa's CheckMadMxValid)
_MX = Types(frozenset(), frozenset(MX_INPUTS))
#: TGET_SCALE_ADDR: a Left / Right tile's scales sit at its L0A / L0B address shifted right by
#: this (pto-isa's SHIFT_MX_ADDR: 64 KiB of L0A -> 4 KiB of scales)
MX_SCALE_ADDR_SHIFT = 4
#: the scale tile type of each MX operand tile type
MX_SCALE_OF = {TileType.Left: TileType.ScaleLeft, TileType.Right: TileType.ScaleRight}


def matmul_mx(a, sa, b, sb, c_in, bias, c) -> None:
    """``c = (c_in +) sum_k a[i, k] * b[k, j] * 2^sa[i, k // 32] * 2^sb[k // 32, j] (+ bias)``
    as pto-isa's CPU model computes it: each term in double (the decoded fp8 / fp4 values and
    e8m0 scales are exact there), summed in k order into a float32, then ``c_in`` or the bias
    added in float32."""
    m, k = a.shape
    n = b.shape[1]
    A, B = a.astype(np.float64), b.astype(np.float64)
    SA, SB = sa.astype(np.float64), sb.astype(np.float64)
    acc = np.zeros((m, n), np.float32)
    for kk in range(k):
        g = kk // MX_GROUP
        term = A[:, kk:kk + 1] * B[kk:kk + 1, :] * (SA[:, g:g + 1] * SB[g:g + 1, :])
        acc = (acc.astype(np.float64) + term).astype(np.float32)
    if c_in is not None:
        acc = c_in.astype(np.float32) + acc
    if bias is not None:
        acc = acc + bias[:1].astype(np.float32)
    c[...] = acc


def _prod(a, axis):
    """A product in the tile's dtype (integers wrap, as the vector unit's multiply does)."""
    return np.multiply.reduce(a, axis=axis, dtype=a.dtype)


def subrelu(a, b, out):
    """``max(src0 - src1, 0)``, the difference rounded in the tile's dtype (TSUBRELU)."""
    np.maximum(np.subtract(a, b), 0, out=out, casting="unsafe")


# the fused forms round the product to the tile's dtype, then the sum (pto-isa's CPU model)
def mul_add_dst(a, b, d):
    """``dst = src0 * src1 + dst`` (TMULADDDST)."""
    np.add(np.multiply(a, b), d, out=d)


def _fused(a, b, d):
    """``src0 * dst + src1`` rounded once to dst's dtype, as the device's ``vmadd`` computes it
    (pto-isa's tfusemuladd test: the product and sum in float, cast back at the very end); the
    product of two f16 / f32 values is exact in float64."""
    return np.add(np.multiply(a, d, dtype=np.float64), b, dtype=np.float64)


def fused_mul_add(a, b, d):
    """``dst = src0 * dst + src1``, one rounding (TFUSEDMULADD)."""
    d[...] = _fused(a, b, d)


def fused_mul_add_relu(a, b, d):
    """``dst = max(src0 * dst + src1, 0)``, one rounding (TFUSEDMULADDRELU)."""
    d[...] = np.maximum(_fused(a, b, d), 0)


def _int_power(base, e, dtype) -> np.ndarray:
    """``base ** e`` in ``dtype``'s wrapping arithmetic (pto-isa's ``integer_pow``): ``e == 0``
    or ``base == 1`` give 1; a negative ``e`` gives 0, except for ``base == -1`` (+/-1 by the
    parity of ``e``); otherwise square-and-multiply modulo 2**64, of which ``dtype`` keeps the
    low bits (those of a product in any narrower word)."""
    b = np.asarray(base).astype(np.int64)
    e = np.broadcast_to(np.asarray(e).astype(np.int64), b.shape)
    result = np.ones(b.shape, np.uint64)
    sq = b.view(np.uint64).copy()
    k = np.where(e > 0, e, 0).view(np.uint64).copy()
    with np.errstate(over="ignore"):
        while k.any():
            odd = (k & np.uint64(1)).astype(bool)
            result = np.where(odd, result * sq, result)
            sq = sq * sq
            k >>= np.uint64(1)
    out = result.view(np.int64)
    out = np.where(e < 0, np.where(b == -1, np.where(e % 2 == 0, 1, -1), 0), out)
    out = np.where((e == 0) | (b == 1), 1, out)
    return out.astype(np.uint64).astype(dtype)     # the low bits, as the word wraps


def power(a, b, out):
    """``out = a ** b`` per element (TPOW; TPOWS with a scalar ``b``): integers as pto-isa's
    ``integer_pow``; floats as ``pow`` in double rounded to the dtype (f16 through float32,
    as pto-isa's CPU model rounds it; bf16 likewise), NaN for a negative base with a
    non-integer exponent."""
    if out.dtype.kind in _INT_KINDS:
        np.copyto(out, _int_power(a, b, out.dtype))
        return
    with np.errstate(all="ignore"):
        r = np.power(_wide(a), _wide(b))
    if out.dtype.itemsize < 4:
        r = r.astype(np.float32)
    np.copyto(out, r, casting="unsafe")


def exp_dif(a, b, out):
    """``exp(src0 - src1)``: the difference in the tile's dtype, its exponential rounded once
    (TROWEXPANDEXPDIF / TCOLEXPANDEXPDIF, with ``b`` one value per row / column)."""
    with np.errstate(over="ignore"):
        np.copyto(out, np.exp(_wide(np.subtract(a, b))), casting="unsafe")


def pair_sum(a, d):
    """``d[i, k] = a[i, 2k] + a[i, 2k + 1]`` for ``k < ceil(cols / 2)`` (an odd last element
    adds 0), the rest of ``d``'s valid columns 0 (TPAIRREDUCESUM, as its ISA page and
    pto-isa's CPU model define it)."""
    rows, cols = a.shape
    half = -(-cols // 2)
    pairs = np.zeros((rows, 2 * half), a.dtype)
    pairs[:, :cols] = a
    out = np.zeros(d.shape, d.dtype)
    out[:, :half] = pairs[:, 0::2] + pairs[:, 1::2]
    d[...] = out


def interleave(s0, s1, d0, d1):
    """The row streams ``s0[0], s1[0], s0[1], s1[1], ...`` split in halves: the first into
    ``d0``, the second into ``d1`` (TINTERLEAVE)."""
    rows, cols = s0.shape
    stream = np.empty((rows, 2 * cols), s0.dtype)
    stream[:, 0::2], stream[:, 1::2] = s0, s1
    d0[...], d1[...] = stream[:, :cols], stream[:, cols:]


def deinterleave(s0, s1, d0, d1):
    """The even elements of each row stream into ``d0``, the odd into ``d1``; the stream is
    ``s0`` followed by ``s1`` (or ``s0`` alone: the single-source form) (TDEINTERLEAVE)."""
    stream = s0 if s1 is None else np.concatenate([s0, s1], axis=1)
    even, odd = stream[:, 0::2].copy(), stream[:, 1::2].copy()
    d0[...], d1[...] = even, odd


def _saturate(x, dtype: np.dtype):
    """Float64 ``x`` into ``dtype`` as the vector unit's saturating conversions: to nearest
    (ties to even), clamped to the dtype's finite range (integers: NaN as 0)."""
    d = np.dtype(dtype)
    if d.kind in _INT_KINDS:
        info = np.iinfo(d)
        return np.clip(np.nan_to_num(np.rint(x)), info.min, info.max).astype(d)
    big = float(ml_dtypes.finfo(d).max)
    return np.clip(x, -big, big).astype(d)


#: TADDRELUCONV's and TSUBRELUCONV's source dtype -> their destination dtype
RELU_CONV = {dt.float32: dt.float16, dt.float16: dt.int8, dt.int16: dt.int8}


def add_relu_conv(a, b, d):
    """``d = convert(max(a + b, 0))``: the sum in the sources' dtype, then a saturating
    conversion to nearest (TADDRELUCONV)."""
    d[...] = _saturate(_wide(np.maximum(np.add(a, b), 0)), d.dtype)


def sub_relu_conv(a, b, d):
    """``d = convert(max(a - b, 0))``: the difference in the sources' dtype, then a saturating
    conversion to nearest (TSUBRELUCONV)."""
    d[...] = _saturate(_wide(np.maximum(np.subtract(a, b), 0)), d.dtype)


def add_deq_relu(a, b, scale, d):
    """``d = f16(max((a + b) * scale, 0))``: the int32 sum (wrapping) as float32 times the
    float32 scale, saturated to f16's range (TADDDEQRELU)."""
    y = np.maximum(np.add(a, b).astype(np.float32) * np.float32(scale), np.float32(0))
    d[...] = _saturate(y.astype(np.float64), d.dtype)


def histogram(src, idx, byte: int, d):
    """Per row, the cumulative histogram of ``byte`` (0: bits 7-0) of the elements that pass
    the filter: ``d[i, b]`` = how many of row ``i`` have that byte <= ``b``.  A uint16 source:
    byte 1 unfiltered, byte 0 of the elements whose byte 1 is ``idx[i, 0]`` (one filter per
    row); a uint32 source: the elements whose upper bytes equal ``idx[0, 0]`` (byte 3),
    ``idx[1, 0]`` (byte 2), ``idx[2, 0]`` (byte 1), as many as there are bytes above
    ``byte`` (shared by all rows).  THISTOGRAM as pto-isa's CPU model and its A5 kernel
    (``chistv2``, a cumulative histogram) count it."""
    rows, cols = src.shape
    v = src.astype(np.uint32)
    keep = np.ones(v.shape, bool)
    if src.dtype.itemsize == 2:
        if byte == 0:
            keep = (v >> np.uint32(8)) == idx[:rows, :1].astype(np.uint32)
    else:
        for k, f in zip(range(3, byte, -1), idx[:3 - byte, 0]):
            keep &= ((v >> np.uint32(8 * k)) & np.uint32(0xFF)) == f
    key = ((v >> np.uint32(8 * byte)) & np.uint32(0xFF)).astype(np.int64) + \
        256 * np.arange(rows, dtype=np.int64)[:, None]
    counts = np.bincount(key[keep], minlength=rows * 256).reshape(rows, 256)
    d[:, :256] = np.cumsum(counts, axis=1).astype(d.dtype)


def gather_blocks(src_bytes, offsets, d):
    """``d``'s row ``i``, 32-byte block ``c``: the 32 bytes of the source tile at byte offset
    ``offsets[i, c]`` (TGATHERB, as pto-isa's CPU model gathers); an offset whose block is not
    inside the source tile is an error."""
    rows = d.shape[0]
    blocks = d.shape[1] * d.itemsize // 32
    off = offsets[:rows, :blocks].astype(np.int64)
    bad = (off < 0) | (off + 32 > src_bytes.size)
    if bad.any():
        o = int(off[bad][0])
        raise DataFault(f"TGATHERB offset {o} reads a 32-byte block outside the {src_bytes.size}-byte "
                        "source tile", f"keep every offset in 0 .. {src_bytes.size - 32}")
    picked = src_bytes[off[..., None] + np.arange(32)]            # rows x blocks x 32
    d[...] = picked.reshape(rows, blocks * 32).view(d.dtype)



# -- MGATHER / MSCATTER: GM rows or elements at the addresses an index tile holds ---------------
def remap_indices(raw: np.ndarray, cap: int, oob: str) -> "tuple[np.ndarray, np.ndarray]":
    """``(safe, kept)`` of the indices ``raw`` (uint32: the device reads an index as one, so a
    negative int32 is past any table) into a table of ``cap`` rows (Row) or elements (Elem)
    under the out-of-bounds mode named ``oob`` (a ``GatherOOB`` / ``ScatterOOB`` member's name),
    as pto-isa's mgather_remap / mscatter_remap: Clamp ``min(i, cap - 1)``, Wrap ``i % cap``,
    Zero / Skip keep only ``i < cap`` (the rest read zeros / write nothing), Undefined keeps
    every index as it is (the ISA refuses one past the table before)."""
    i = raw.astype(np.int64)
    if oob == "Clamp":
        return np.minimum(i, cap - 1), np.ones(i.shape, bool)
    if oob == "Wrap":
        return i % cap, np.ones(i.shape, bool)
    if oob in ("Zero", "Skip"):
        kept = i < cap
        return np.where(kept, i, 0), kept
    return i, np.ones(i.shape, bool)


def gather_at(flat, offs, kept, d) -> None:
    """``d[r, c] = flat[offs[r, c]]`` where ``kept``, else 0 (MGATHER: ``flat`` is GM seen as the
    table's element type, ``offs`` the element each destination element reads)."""
    v = flat[np.where(kept, offs, 0)]
    v[~kept] = 0
    d[...] = v


def scatter_at(flat, offs, kept, s, atomic) -> None:
    """``flat[offs[r, c]] (op)= s[r, c]`` where ``kept``, in row-major order (MSCATTER): a plain
    store keeps the last write to an element (A2A3's in-order walk, A5's Conflict::Last), an
    atomic op (``ScatterAtomicOp``) combines every write in the table's dtype."""
    o, v = offs[kept], s[kept]
    if atomic == ScatterAtomicOp.Add:
        np.add.at(flat, o, v)
    elif atomic == ScatterAtomicOp.Max:
        np.maximum.at(flat, o, v)
    elif atomic == ScatterAtomicOp.Min:
        np.minimum.at(flat, o, v)
    else:
        _, last = np.unique(o[::-1], return_index=True)    # each element's last write
        pick = o.size - 1 - last
        flat[o[pick]] = v[pick]


#: MGATHER / MSCATTER's data dtypes: a2a3 MGather.hpp IsValidMGatherDType, MScatter.hpp
#: IsValidMScatterDType (the 1-, 2- and 4-byte types); a5 MGather.hpp IsValidGatherDType,
#: MScatter.hpp IsValidScatterDType (also the 8-bit floats)
_INDEXED = types("i8 u8 i16 uint16 i32 u32 f16 bf16 f32", a5="+ fp8_e4m3 fp8_e5m2")
#: their index dtypes (every platform's MGatherCheck / MScatterCheck)
INDEXED_INDEX = (dt.int32, dt.uint32)
#: MSCATTER's atomic ops: the table dtypes each combines in (a2a3 IsValidMScatterAtomic: Add of
#: signed types only, no Max / Min; a5 IsValidScatterAtomic)
SCATTER_ATOMIC = {ScatterAtomicOp.Add: types("i8 i16 i32 f16 bf16 f32", a5="i32 u32 f16 bf16 f32"),
                  ScatterAtomicOp.Max: types("", a5="i32 u32 f32"),
                  ScatterAtomicOp.Min: types("", a5="i32 u32 f32")}
#: the pipes each platform's MGATHER / MSCATTER of a Vec tile runs on, by (op, Coalesce name):
#: (the pipe reading the index tile and running the walk, the pipe moving the data, the event
#: pairs the library makes before the walk, those it makes after the move).  A2A3: the scalar
#: unit walks the indices, Row moves each row by DMA (MTE2 / MTE3), Elem moves each element
#: itself, each with its PtoSetWaitFlag chains (a2a3 MGather.hpp MGatherRowImpl /
#: MGatherElemImpl, MScatter.hpp MScatterRowImpl / MScatterElemImpl); A5: a SIMT launch on the
#: vector pipe, no event of its own (a5 MGather.hpp / MScatter.hpp; pto-isa's event.hpp maps
#: MGATHER_VEC and MSCATTER to PIPE_V)
_S, _VP, _MTE2, _MTE3 = PipeUnit.S, PipeUnit.V, PipeUnit.MTE2, PipeUnit.MTE3
INDEXED_PIPES = {
    _A2A3: {("MGATHER", "Row"): (_S, _MTE2, ((_VP, _S), (_MTE3, _S)),
                                 ((_S, _MTE2), (_MTE2, _VP), (_MTE2, _MTE3), (_S, _VP), (_S, _MTE3))),
            ("MGATHER", "Elem"): (_S, _S, ((_VP, _S), (_MTE3, _S), (_MTE2, _S)), ((_S, _VP), (_S, _MTE2), (_S, _MTE3))),
            ("MSCATTER", "Row"): (_S, _MTE3, ((_VP, _S), (_MTE2, _S)),
                                  ((_MTE3, _S), (_S, _VP), (_S, _MTE2), (_MTE3, _VP), (_MTE3, _MTE2))),
            ("MSCATTER", "Elem"): (_S, _S, ((_VP, _S), (_MTE2, _S), (_MTE3, _S)),
                                   ((_S, _VP), (_S, _MTE2), (_S, _MTE3)))},
    _A5: {k: (_VP, _VP, (), ()) for k in (("MGATHER", "Row"), ("MGATHER", "Elem"), ("MSCATTER", "Row"),
                                        ("MSCATTER", "Elem"))},
}
#: the GM -> L1 row gather into a Mat tile, on either platform: the Cube's scalar unit reads
#: each index from GM and issues the row's MTE2 move, then an S -> MTE2 event (a2a3 / a5
#: MGather.hpp MGatherGm2L1RowImpl; the element gather's steps are isa.indexed's)
for _p in INDEXED_PIPES:
    INDEXED_PIPES[_p][("MGATHER", "L1")] = (_S, _MTE2, (), ((_S, _MTE2),))


# -- TIMG2COL: the Cube's load3d of an NC1HWC0 feature map in L1 into an im2col Left tile --------
@dataclass(frozen=True)
class Img2colGeometry:
    """What one TIMG2COL reads its feature map by: the FMATRIX register's ``fmap_h`` x ``fmap_w``
    and ``pads`` (left, right, top, bottom), the instruction's ``stride`` / ``dilation`` /
    ``filt`` (h, w) and ``c0`` (elements per 32-byte channel block)."""
    fmap_h: int
    fmap_w: int
    pads: tuple
    stride: tuple
    dilation: tuple
    filt: tuple
    c0: int

    @property
    def out_h(self) -> int:
        """The output rows of the convolution (pto-isa's img2col formula)."""
        return (self.fmap_h + self.pads[2] + self.pads[3] - self.dilation[0] * (self.filt[0] - 1) - 1) \
            // self.stride[0] + 1

    @property
    def out_w(self) -> int:
        return (self.fmap_w + self.pads[0] + self.pads[1] - self.dilation[1] * (self.filt[1] - 1) - 1) \
            // self.stride[1] + 1

    @property
    def k_per_c1(self) -> int:
        """Columns of the im2col matrix per channel block: filter h x w x c0."""
        return self.filt[0] * self.filt[1] * self.c0


def img2col_indices(g: Img2colGeometry, pos_m: int, pos_k: int, rows: int, cols: int) -> tuple:
    """``(c1, h, w, c0, inside)`` of the im2col elements ``[pos_m, pos_m + rows) x [pos_k, pos_k +
    cols)``: row ``m`` is output position ``(m // out_w, m % out_w)``, column ``k`` is
    ``(c1, kh, kw, c0)`` with c0 fastest (the load3d order, pto-isa's TIMG2COL_IMPL on its CPU
    simulator); ``inside`` says which read the feature map (the others are padding)."""
    m = pos_m + np.arange(rows)
    k = pos_k + np.arange(cols)
    ho, wo = np.divmod(m, g.out_w)
    c1, rest = np.divmod(k, g.k_per_c1)
    kk, c0 = np.divmod(rest, g.c0)
    kh, kw = np.divmod(kk, g.filt[1])
    h = ho[:, None] * g.stride[0] + kh[None, :] * g.dilation[0] - g.pads[2]
    w = wo[:, None] * g.stride[1] + kw[None, :] * g.dilation[1] - g.pads[0]
    inside = (h >= 0) & (h < g.fmap_h) & (w >= 0) & (w < g.fmap_w)
    return c1, h, w, c0, inside


def img2col(fmap, g: Img2colGeometry, pos_m: int, pos_k: int, pad, d) -> None:
    """``d`` (rows x cols) = the im2col block at (``pos_m``, ``pos_k``) of ``fmap`` (C1 x fmap_h x
    fmap_w x c0, the channel planes as the device reads them), ``pad`` where the window lies in
    the padding."""
    c1, h, w, c0, inside = img2col_indices(g, pos_m, pos_k, *d.shape)
    v = fmap[c1[None, :], np.where(inside, h, 0), np.where(inside, w, 0), c0[None, :]]
    v[~inside] = pad
    d[...] = v


#: TPREFETCH_ASYNC: the scalar writes of the SQE a submitted prefetch builds in GM before its
#: pipe_barrier(PIPE_ALL) (sdma_cmo_intrin.hpp AddOneCmoSqe: the fields it sets per platform)
PREFETCH_ASYNC_SQE_WRITES = {_A2A3: 21, _A5: 16}
#: ... and the bytes of its context's UB scratch tile at 0x0 (async_types.hpp kUbAlignSize)
PREFETCH_ASYNC_SCRATCH = 256

#: TIMG2COL's element types (a2a3 TImg2col.hpp: "Invalid data type"; a5 TImg2col.hpp
#: Timg2colConvTileCheck); the ConvTile's and the Left tile's are one
IMG2COL_DTYPES = types("i8 f16 bf16 f32", a5="i8 u8 i16 uint16 i32 u32 f16 bf16 f32")
#: the img2col registers with a B bank of their own per platform (SetFmatrixMode's FMATRIX_B_*):
#: a2a3 writes FMATRIX_B only (its SET_IMG2COL_PADDING / _RPT and TIMG2COL's auto writes set the
#: one padding and repeat register whatever the mode: a2a3 SetImg2colPadding.hpp,
#: SetImg2colRpt.hpp, TImg2col.hpp); a5 has B banks of all three (set_padding_b, set_l3d_rpt_b)
IMG2COL_BANKED = {_A2A3: ("FMATRIX",), _A5: ("FMATRIX", "PADDING", "RPT")}

# -- the instructions ---------------------------------------------------------------------------
_V, _M = PipeUnit.V, PipeUnit.M
_S1, _S2, _S4, _E2 = (1, 12, 14), (2, 14, 18), (4, 14, 18), (2, 14, 17)
# vector costs calibrated on PLATFORMS.md's measured single ops (see costs.py): slope 1 for
# scalar-operand and copy-like ops, 2 binary / transcendental / convert, 4 divide and two-op
# forms, 7 reductions (ops PLATFORMS.md does not measure take the class of their shape)
#: TAND/TOR/TXOR/TNOT and scalar forms: a5 TAnd.hpp, TOr.hpp, TAndS.hpp (any 1-, 2- or 4-byte
#: element), TXor.hpp (the 8-, 16- and 32-bit integers)
_BITS = types("i8 u8 i16 uint16 i32 u32")
#: TSHL/TSHR: a2a3 TShl.hpp, TShr.hpp; a5 TShl.hpp, TShr.hpp (also 64-bit)
_SHIFT = types("i8 u8 i16 uint16 i32 u32", a5="+ i64 uint64")
_SHIFTS = types("i16 i32 u32", a5="i8 u8 i16 uint16 i32 u32 i64 uint64")   # TSHLS/TSHRS: a5 TShlS.hpp
#: TREM/TREMS: a2a3 TRem.hpp (f32, i32); a5 TRem.hpp
_REM = types("f32 i32", a5="f16 f32 i16 uint16 i32 u32 i64 uint64")
_B32 = types("i8 u8 i16 uint16 i32 u32 f16 bf16 f32", a5="+ i64 uint64")   # b8/b16/b32 (A5: b64) copies
#: TCOLEXPAND*/TROWEXPANDADD/SUB/MUL/MAX/MIN: a5 TRowExpandAdd.hpp:55, TColExpandBinOp.hpp:197
_COLX = types("f16 f32 i16 i32", a5="+ uint16 u32 bf16 i8 u8")
# The element-wise, unary and reduction families, from pto-isa's static_asserts (include/pto/npu/
# <platform>/<header>:<line>).  Integer division truncates toward zero (div_trunc).
#: TADD/TSUB/TMAX/TMIN and their scalar forms: a2a3 TAdd.hpp:62, TSub.hpp:61, TMax.hpp:61,
#: TMin.hpp:62, TAddS.hpp:52, TSubS.hpp:52, TMaxS.hpp:53, TMins.hpp:52 (no bf16 on A2A3);
#: a5 TAdd.hpp:60, TSub.hpp:59, TMax.hpp:59, TMin.hpp:59, TAddS.hpp:57, TSubS.hpp:57,
#: TMaxs.hpp:57, TMins.hpp:57
_ARITH = types("f16 f32 i16 i32", a5="+ i8 u8 uint16 u32 i64 uint64 bf16")
#: TMUL/TMULS and TNEG (TMULS by -1): a2a3 TMul.hpp:61, TMulS.hpp:52; a5 TMul.hpp:59,
#: TMulS.hpp:57 (no 8-bit integers)
_MULT = types("f16 f32 i16 i32", a5="+ uint16 u32 i64 uint64 bf16")
#: TDIV: a2a3 TDiv.hpp:58 (floats only); a5 TDiv.hpp:67 (no bf16, no 8-bit integers)
_DIV = types("f16 f32", a5="+ i16 uint16 i32 u32 i64 uint64")
#: TDIVS and TRECIP (pto_instr.hpp: TDIVS(dst, 1, src)): a2a3 TDivS.hpp:220 (integers through
#: TDivs_naive / TSDiv_naive, C's ``/`` per element); a5 TDivS.hpp:138 (no bf16 on either)
_DIVS = types("f16 f32 i16 i32", a5="+ uint16 u32 i64 uint64")
#: TEXP/TLOG/TSQRT/TRSQRT (A2A3 also TABS): a2a3 TUnaryOp.hpp:265; a5 TUnaryOp.hpp:149, TRsqrt.hpp:194
_UNARY_F = types("f16 f32")
#: TROWMAX/TROWMIN: a2a3 TRowReduceOps.hpp:197; a5 TRowReduce.hpp:365, :420 (TROWSUM, a5
#: TRowReduce.hpp:393, takes no 8-bit integers)
_ROWMM = types("f16 f32 i16 i32", a5="+ i8 u8")
#: TCOLSUM/TCOLMAX/TCOLMIN: a2a3 TColSum.hpp:102, TColReduceOps.hpp:87; a5 TColReduceOps.hpp:31
_COLRED = _ARITH
_ROWARG = types("f16 f32 i16 i32", a5="f16 bf16 f32 i16 i32 u32")   # TROWARGMAX/MIN sources
_PART = types("i16 i32 f16 f32", a5="i8 u8 i16 uint16 i32 u32 i64 uint64 f16 bf16 f32")   # TPARTADD/MAX/MIN (a5 TPartAdd.hpp)
_CAT = types("i8 u8 i16 uint16 i32 u32 f16 bf16 f32")   # TCONCAT/TTRANS/TFILLPAD: b8/b16/b32
#: TCOLARGMAX/MIN sources: a2a3 TColReduceIdx.hpp:26; a5 TColReduceIdx.hpp:65 (any 1-, 2- or
#: 4-byte element; not 1-byte with the value output, :86)
_COLARG = types("f16 f32 uint16 u32", a5="i8 u8 i16 uint16 i32 u32 f16 bf16 f32")
_U16 = np.dtype(np.uint16)     # no short name, but a tile dtype (a .pto file's ui16)
# TPOW / TPOWS (DEFAULT): a2a3/TPow.hpp:266 and a5/TPow.hpp:632 (both take uint16)
_POW = types("i8 u8 i16 uint16 i32 u32 f32", a5="i8 u8 i16 uint16 i32 u32 f16 f32")
#: TPOW / TPOWS with PowAlgorithm.HIGH_PRECISION (A5: floats only, bf16 too; A2A3 ignores it)
POW_HIGH_PRECISION = types("i8 u8 i16 i32 u32 f32", a5="f16 bf16 f32")
_A5_B32 = types("", a5="i8 u8 i16 i32 u32 f16 bf16 f32")     # TINTERLEAVE/TDEINTERLEAVE (A5 only)
#: TGATHER's compare form (``TGATHER<..., CmpMode>(dst, src, kValue, cdst, tmp, offset)``):
#: the source dtypes (A2A3 takes int32 with CmpMode.EQ only), the dst / cdst index dtypes,
#: and the dtypes of a per-row threshold tile (held as an integer, converted to the source's)
GATHER_COMPARE = types("i32 f16 f32", a5="i16 i32 u32 f16 f32")
GATHER_COMPARE_A2A3_EQ_ONLY = (dt.int32,)
GATHER_COMPARE_MODES = (CmpMode.EQ, CmpMode.GT)
GATHER_COMPARE_INDEX = (dt.int32, dt.uint32)
GATHER_COMPARE_K = Types(frozenset({dt.int32, dt.uint32}), frozenset({_U16, dt.uint32}))
#: TCONCAT's indexed forms: the dtypes of the per-row count tiles (src0Idx, src1Idx, dstIdx)
CONCAT_INDEX = frozenset({dt.int8, dt.uint8, dt.int16, _U16, dt.int32, dt.uint32})
#: the fixpipe's quantisation (TMOV_FP / TEXTRACT_FP / TINSERT_FP / TSTORE_FP, and a TMOV / TSTORE
#: with a pre-quant scalar): per platform, accumulator dtype -> the destination dtypes one uint64
#: parameter per column converts it to (pto-isa's VQF322B8_PRE, VREQ8, VDEQF16 and, on A2A3,
#: VSHIFTS322S16; on A5 also (V)QF322F16_PRE, (V)QF322BF16_PRE and (V)QS322BF16_PRE: a5/common.hpp
#: GetScalarPreQuantMode / GetVectorPreQuantMode)
FP_CONVERTS = {_A2A3: {dt.float32: (dt.int8, dt.uint8), dt.int32: (dt.int8, dt.uint8, dt.float16, dt.int16)},
               _A5: {dt.float32: (dt.int8, dt.uint8, dt.float16, dt.bfloat16),
                     dt.int32: (dt.int8, dt.uint8, dt.float16, dt.bfloat16)}}
#: the dtype of an fp (TileType.Scaling) tile: one quantisation word per column
FP_PARAM = np.dtype(np.uint64)
#: the data paths of the *_FP moves: op -> (source, destination) -> (pipe, platform ids)
FP_PATHS = {"TMOV_FP": {(TileType.Acc, TileType.Mat): (PipeUnit.FIX, (_A2A3, _A5)),
                        (TileType.Acc, TileType.Vec): (PipeUnit.FIX, (_A5,))},
            "TEXTRACT_FP": {(TileType.Acc, TileType.Mat): (PipeUnit.FIX, (_A2A3, _A5)),
                            (TileType.Acc, TileType.Vec): (PipeUnit.FIX, (_A5,))},
            "TINSERT_FP": {(TileType.Acc, TileType.Mat): (PipeUnit.FIX, (_A2A3, _A5))}}
#: the element type of an op's scratch tile where it is not its source's (pto-isa's and
#: ptoas's TPRELU take a uint8 ``tmp`` of the source's shape on A2A3; A5 takes any)
SCRATCH_DTYPE = {"TPRELU": dt.uint8}
#: the columns of an op's scratch tile where it is wider than its source (a function of the
#: source's static columns; the writers round it up to whole 32-byte rows): A2A3's TREM puts
#: its compare mask after a row (TMP_MINIMUM)
SCRATCH_COLS = {"TREM": lambda cols: cols + _cdiv(cols, 64) * 2}
#: the ops whose ``tmp`` tile pto-isa's A5 code computes through (a5/TSort32.hpp:84,
#: TMrgSort.hpp:47, TColSum.hpp:49); A2A3 computes through every op's tmp, A5 takes the
#: others' for parity and leaves them alone (a5/TRowExpandExpdif.hpp:120, TAddDeqRelu.hpp:24)
TMP_COMPUTED_ON_A5 = frozenset({"TSORT32", "TMRGSORT", "TCOLSUM"})


def tmp_written(name: str, platform, src=None) -> bool:
    """Does the device write op ``name``'s ``tmp`` tile on ``platform`` (a PlatformID)?  Then the
    tmp is the op's own scratch: it writes it while it still reads its sources (A2A3's TPOW
    writes ``|base| ** exp`` to tmp, then computes dst from base, a2a3/TPow.hpp:166-169) and
    reads it back after writing dst (TPow.hpp:171), so a tmp that shares bytes with a source
    or the destination gives the device wrong results (pto-isa's TPRELU / TXOR / TXORS pages:
    tmp must not overlap dst or the sources).  Where A2A3 takes another path for a source
    (``src``) that leaves tmp alone, it does not: a float row reduction whose valid row fits one
    256-byte repeat (a2a3/TRowReduceOps.hpp OneRepeatProc), a TSORT32 of whole 32-element
    blocks (a2a3/TSort32.hpp: the form without tmp)."""
    if platform != _A2A3:
        return name in TMP_COMPUTED_ON_A5
    if src is not None:
        if name in _ROW_REDUCES and src.dtype.kind == "f" and src.valid_cols * src.item <= 256:
            return False
        if name == "TSORT32" and src.valid_cols % 32 == 0:
            return False
    return True


_ROW_REDUCES = frozenset({"TROWSUM", "TROWMAX", "TROWMIN"})


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _row_reduce_tmp(dst, src, tmp, sat=None) -> "str | None":
    """A2A3's TROWSUM / TROWMAX / TROWMIN (npu/a2a3/TRowReduceOps.hpp): a float row longer than
    one 256-byte repeat is folded into tmp, one repeat per valid row at tmp's row stride
    (FillTmp / TmpProc), so tmp needs the source's valid rows of 256 bytes each (narrower rows
    overlap, and a row stride under 8 blocks skips the fold); an integer row accumulates in
    one 32-byte block of tmp (docs/isa/TROWSUM.md, Temporary Space)."""
    row = tmp.cols * tmp.item
    if src.dtype.kind in _INT_KINDS:
        return None if row >= 32 else f"an integer row reduction accumulates in one 32-byte block of tmp; " \
                                      f"its rows hold {row} bytes"
    if src.valid_cols * src.item <= 256:
        return None
    if tmp.rows >= src.valid_rows and row >= 256:
        return None
    return (f"a {src.valid_rows}x{src.valid_cols} {src.dtype.name} source folds one 256-byte repeat per row into "
            f"tmp: {src.valid_rows} rows of at least {256 // tmp.item} {tmp.dtype.name}, not {tmp.rows}x{tmp.cols}")


def _rem_tmp(dst, src, tmp, sat=None) -> "str | None":
    """A2A3's TREM (npu/a2a3/TRem.hpp TRemCheck): row 0 of tmp takes a quotient row, the
    compare mask goes at ``tmp + dst's row stride``: tmp's valid columns must be at least
    ``Cols + ceil(Cols / 64) * 2`` of dst."""
    need = SCRATCH_COLS["TREM"](dst.cols)
    if tmp.valid_cols >= need:
        return None
    return f"pto-isa's TREM needs {need} valid tmp columns for a {dst.cols}-column dst (a row and its " \
           f"compare mask), not {tmp.valid_cols}"


def _rems_tmp(dst, src, tmp, sat=None) -> "str | None":
    """A2A3's TREMS (npu/a2a3/TRemS.hpp: PTO_ASSERT tmp.GetValidCol() >= dst.GetValidCol())."""
    if tmp.valid_cols >= dst.valid_cols:
        return None
    return f"pto-isa's TREMS needs {dst.valid_cols} valid tmp columns (dst's), not {tmp.valid_cols}"


def _cvt_tmp(dst, src, tmp, sat=None) -> "str | None":
    """A2A3's non-saturating TCVT narrowings through int32 (docs/isa/TCVT.md, Temporary tile,
    its minimum sizes of npu/a2a3/TCvt.hpp's NonSatTorch paths): f32 -> i16, f16 -> i16 and
    f16 -> i8 with SaturationMode::OFF; other conversions leave tmp alone."""
    pair = (src.dtype.name, dst.dtype.name)
    r, c = dst.valid_rows, dst.valid_cols
    if sat != "OFF" or c == 0 or pair not in (("float32", "int16"), ("float16", "int16"), ("float16", "int8")):
        return None
    h = min(c, 64)
    if pair == ("float32", "int16"):
        head = 4 * 64 * min(c // 64, 255)
        tail = 32 * ((min(r, 255) - 1) * src.cols // 8 + _cdiv(c % 64, 8)) if c % 64 else 0
        need = max(head, tail)
    elif pair == ("float16", "int16"):
        need = 32 * _cdiv(h, 8)
    else:
        need = max(32 * _cdiv(h, 8), 128 + 32 * _cdiv(h, 16))
    have = tmp.rows * tmp.cols * tmp.item
    if have >= need:
        return None
    return f"the non-saturating {src.dtype.name} -> {dst.dtype.name} of a {r}x{c} tile writes {need} bytes of " \
           f"int32 steps into tmp, which has {have}"


#: op -> its tmp's minimum size where pto-isa's NPU code writes the tmp and its docs or code state
#: the size (A2A3; A5 leaves these tmps alone): rule(dst, src, tmp, sat) -> what is short, or None.
#: The tiles are read for rows / cols / valid_rows / valid_cols / item / dtype; ``sat`` is TCVT's
#: effective SaturationMode name.
TMP_MINIMUM = {"TROWSUM": _row_reduce_tmp, "TROWMAX": _row_reduce_tmp, "TROWMIN": _row_reduce_tmp,
               "TREM": _rem_tmp, "TREMS": _rems_tmp, "TCVT": _cvt_tmp}


def tmp_too_small(name: str, platform, dst, src, tmp, sat=None) -> "str | None":
    """Why op ``name``'s ``tmp`` is smaller than pto-isa's ``platform`` writes (TMP_MINIMUM),
    or None."""
    rule = TMP_MINIMUM.get(name)
    if rule is None or platform != _A2A3:
        return None
    return rule(dst, src, tmp, sat)


#: the ops whose pto-isa (and ptoas) form takes the scratch tile before its scalar operand,
#: not last: TSELS(dst, mask, src, tmp, scalar) (TREMS(dst, src, scalar, tmp) takes it last)
SCRATCH_BEFORE_SCALAR = frozenset({"TSELS"})
#: TPARTARGMAX / TPARTARGMIN: value dtype -> the index dtypes it pairs with
PART_ARG_INDEX = {dt.float16: (dt.int16, dt.int32, dt.uint32), dt.float32: (dt.int32, dt.uint32)}
_DEFS = (
    OpDef("TLOAD", "load", PipeUnit.MTE2, dsl="load", doc="GM -> tile (TLOAD)"),
    OpDef("TSTORE", "store", None, dsl="store", doc="tile -> GM (TSTORE); AtomicAdd: GM += tile"),
    OpDef("TMOV", "move", None, cost=_S1, dsl="move", doc="local move (TMOV)"),
    OpDef("TEXTRACT", "extract", PipeUnit.MTE1, dsl="extract",
          doc="block of a tile (TEXTRACT): Mat -> Left / Right, Vec -> Vec, Acc -> Mat; A5 also Mat -> ScaleLeft / "
              "ScaleRight, Acc -> Vec, Vec -> Mat (EXTRACT_PATHS)"),
    OpDef("TMOV_FP", "move_fp", PipeUnit.FIX, quantize_fp,
          doc="Acc -> Mat (A5 also Vec) converting per column with a Scaling tile's uint64 quant words "
              "(TMOV_FP); a word's bits: 13..31 the scale (the float32's sign, exponent and top 10 mantissa "
              "bits), 37..45 the offset, 46 a signed result, 32..35 + 1 the i32 -> i16 shift (fp_params)"),
    OpDef("TEXTRACT_FP", "extract_fp", PipeUnit.FIX, quantize_fp,
          doc="TEXTRACT of an Acc block, converting with a Scaling tile (TEXTRACT_FP): to Mat, A5 also Vec"),
    OpDef("TINSERT_FP", "insert_fp", PipeUnit.FIX, quantize_fp,
          doc="TINSERT of an Acc tile into Mat at (row, col), converting with a Scaling tile (TINSERT_FP)"),
    OpDef("TSTORE_FP", "store_fp", PipeUnit.FIX, quantize_fp,
          doc="Acc -> GM converting per column with a Scaling tile (TSTORE_FP)"),
    OpDef("TMATMUL", "matmul", _M, dsl="matmul", doc="a @ b (TMATMUL)"),
    OpDef("TMATMUL_ACC", "matmul_acc", _M, dsl="matmul_acc", doc="acc + a @ b (TMATMUL_ACC)"),
    OpDef("TMATMUL_BIAS", "matmul_bias", _M, doc="a @ b + bias (TMATMUL_BIAS)"),
    OpDef("TMATMUL_MX", "matmul_mx", _M, matmul_mx, _MX,
          doc="a @ b with e8m0 block scales per 32 of K, f32 result (TMATMUL_MX: c, a, a_scale, b, b_scale; "
              "acc form c_out, c_in, ...; bias form ..., bias; .pto pto.tmatmul.mx / .mx.acc / .mx.bias)"),
    OpDef("TGET_SCALE_ADDR", "TGET_SCALE_ADDR", PipeUnit.S,
          doc="bind a ScaleLeft / ScaleRight tile at its Left / Right tile's address >> 4 (TGET_SCALE_ADDR, A5)"),
    OpDef("TGEMV", "matmul", _M, doc="one row a @ b (TGEMV)"),
    OpDef("TGEMV_ACC", "matmul_acc", _M, doc="acc + one row a @ b (TGEMV_ACC)"),
    OpDef("TGEMV_BIAS", "matmul_bias", _M, doc="one row a @ b + bias (TGEMV_BIAS)"),
    OpDef("TGEMV_MX", "matmul_mx", _M, matmul_mx, _MX,
          doc="TMATMUL_MX with one row (TGEMV_MX, its acc and bias forms; .pto pto.tgemv.mx*)"),
    OpDef("TADD", "binary", _V, np.add, _ARITH, _S2, dsl="add"),
    OpDef("TSUB", "binary", _V, np.subtract, _ARITH, _S2, dsl="sub"),
    OpDef("TMUL", "binary", _V, np.multiply, _MULT, _S2, dsl="mul"),
    OpDef("TDIV", "binary", _V, div_trunc, _DIV, _S4, dsl="div"),
    OpDef("TMAX", "binary", _V, np.maximum, _ARITH, _S2, dsl="maximum"),
    OpDef("TMIN", "binary", _V, np.minimum, _ARITH, _S2, dsl="minimum"),
    OpDef("TADDS", "scalar", _V, adds, _ARITH, _S1, dsl="adds"),
    OpDef("TSUBS", "scalar", _V, subs, _ARITH, _S1, dsl="subs"),
    OpDef("TMULS", "scalar", _V, muls, _MULT, _S1, dsl="muls"),
    OpDef("TDIVS", "scalar", _V, divs, _DIVS, _S1, dsl="divs"),
    OpDef("TMAXS", "scalar", _V, maxs, _ARITH, _S1, dsl="maxs"),
    OpDef("TMINS", "scalar", _V, mins, _ARITH, _S1, dsl="mins"),
    OpDef("TEXP", "unary", _V, exp, _UNARY_F, _E2, dsl="exp"),
    OpDef("TLOG", "unary", _V, log, _UNARY_F, _E2, dsl="log"),
    OpDef("TSQRT", "unary", _V, sqrt, _UNARY_F, _E2, dsl="sqrt"),
    OpDef("TRSQRT", "unary", _V, rsqrt, _UNARY_F, _S1, dsl="rsqrt", tmp=True),
    OpDef("TABS", "unary", _V, abs_, types("f16 f32", a5="+ i8 i16 i32"), _S1, dsl="abs"),
    OpDef("TNEG", "unary", _V, neg, _MULT, _S1, dsl="neg"),
    OpDef("TRELU", "unary", _V, relu, types("f16 f32 i32"), _S1, dsl="relu"),
    OpDef("TRECIP", "unary", _V, recip, _DIVS, _S2, dsl="recip"),
    OpDef("TROWSUM", "row_reduce", _V, np.sum, types("f16 f32 i16 i32"), (7, 26, 18), dsl="row_sum", scratch=True),
    OpDef("TROWMAX", "row_reduce", _V, np.max, _ROWMM, (7, 14, 18), dsl="row_max", scratch=True),
    OpDef("TROWMIN", "row_reduce", _V, np.min, _ROWMM, (7, 14, 18), dsl="row_min", scratch=True),
    OpDef("TCOLSUM", "col_reduce", _V, np.sum, _COLRED, (7, 26, 18), dsl="col_sum", tmp=True),
    OpDef("TCOLMAX", "col_reduce", _V, np.max, _COLRED, (7, 14, 18), dsl="col_max"),
    OpDef("TROWEXPANDADD", "row_expand", _V, np.add, _COLX, _S2, dsl="row_expand_add", tmp=True),
    OpDef("TROWEXPANDSUB", "row_expand", _V, np.subtract, _COLX, _S2, dsl="row_expand_sub", tmp=True),
    OpDef("TROWEXPANDMUL", "row_expand", _V, np.multiply, _COLX, _S2, dsl="row_expand_mul", tmp=True),
    # a2a3 TRowExpandDiv.hpp:55 (floats); a5 TRowExpandDiv.hpp:84
    OpDef("TROWEXPANDDIV", "row_expand", _V, div_trunc, types("f16 f32", a5="+ i8 u8 i16 uint16 i32 u32 bf16"),
          _S4, dsl="row_expand_div", tmp=True),
    OpDef("TROWEXPAND", "row_bcast", _V, cost=_S1, dsl="row_expand", doc="dst[i, :] = src[i, 0] (TROWEXPAND)"),
    OpDef("TEXPANDS", "fill", _V, dtypes=_B32, cost=_S1, dsl="full",
          doc="a Vec tile filled with a scalar (TEXPANDS)"),
    OpDef("TCVT", "convert", _V, cost=_S2, dsl="cast", doc="dtype conversion (TCVT)"),
    OpDef("TPACK", "convert", _V, cost=_S2, doc="element-wise static_cast into a narrower type"),
    # -- integer / bitwise (pto-isa: 1-, 2- and 4-byte integers; A5 shifts also 8-byte)
    OpDef("TAND", "binary", _V, np.bitwise_and, _BITS, _S2, dsl="and_"),
    OpDef("TOR", "binary", _V, np.bitwise_or, _BITS, _S2, dsl="or_"),
    OpDef("TXOR", "binary", _V, np.bitwise_xor, _BITS, _S2, dsl="xor", scratch=True),
    OpDef("TSHL", "binary", _V, np.left_shift, _SHIFT, _S2, dsl="shl"),
    OpDef("TSHR", "binary", _V, np.right_shift, _SHIFT, _S2, dsl="shr"),
    OpDef("TNOT", "unary", _V, not_, _BITS, _S1, dsl="not_"),
    OpDef("TANDS", "scalar", _V, ands, _BITS, _S1, dsl="ands"),
    OpDef("TORS", "scalar", _V, ors, _BITS, _S1, dsl="ors"),
    OpDef("TXORS", "scalar", _V, xors, _BITS, _S1, dsl="xors", scratch=True),
    OpDef("TSHLS", "scalar", _V, shls, _SHIFTS, _S1, dsl="shls", nonneg_scalar=True),
    OpDef("TSHRS", "scalar", _V, shrs, _SHIFTS, _S1, dsl="shrs", nonneg_scalar=True),
    OpDef("TREM", "binary", _V, rem, _REM, _S4, dsl="rem", tmp=True, scratch=True,
          doc="remainder with the divisor's sign (TREM)"),
    OpDef("TREMS", "scalar", _V, rem, _REM, _S4, dsl="rems", scratch=True,
          doc="remainder by a scalar, with the divisor's sign (TREMS)"),
    OpDef("TFMOD", "binary", _V, fmod, types("f32", a5="f16 f32 i16 i32 u32"), _S4, dsl="fmod",
          doc="remainder with the dividend's sign (TFMOD)"),
    OpDef("TFMODS", "scalar", _V, fmod, types("f32", a5="f16 f32 i16 i32 u32"), _S4, dsl="fmods",
          doc="remainder by a scalar, with the dividend's sign (TFMODS)"),
    # -- activations, three-operand and fused forms
    OpDef("TPRELU", "binary", _V, prelu, types("f16 f32"), _S2, dsl="prelu", tmp=True, scratch=True,
          doc="src0 > 0 ? src0 : src0 * src1 (TPRELU)"),
    OpDef("TLRELU", "scalar", _V, lrelu, types("f16 f32"), _S1, dsl="lrelu",
          doc="src > 0 ? src : src * slope (TLRELU)"),
    OpDef("TADDC", "ternary", _V, addc, cost=_S4, dsl="addc", doc="src0 + src1 + src2 (TADDC)"),
    OpDef("TSUBC", "ternary", _V, subc, cost=_S4, dsl="subc", doc="src0 - src1 + src2 (TSUBC)"),
    OpDef("TADDSC", "scalar_ternary", _V, addsc, types("i16 i32 f16 f32"), _S2, dsl="addsc",
          doc="src0 + scalar + src1 (TADDSC)"),
    OpDef("TSUBSC", "scalar_ternary", _V, subsc, types("i16 i32 f16 f32"), _S2, dsl="subsc",
          doc="src0 - scalar + src1 (TSUBSC)"),
    OpDef("TAXPY", "axpy", _V, axpy, types("f16 f32"), _S2,
          doc="dst = scalar * src + dst, in place (TAXPY)"),
    # -- compare and select (packed predicate masks)
    # (A5: a5/TCmp.hpp:138 and a5/TCmps.hpp:231 take every integer width, uint16 and uint64 too)
    OpDef("TCMP", "compare", _V, compare,
          types("i32 f16 f32", a5="i8 u8 i16 uint16 i32 u32 i64 uint64 f16 bf16 f32"),
          _S2, dsl="cmp", doc="packed mask of src0 <mode> src1 (TCMP)"),
    OpDef("TCMPS", "compare_scalar", _V, compare,
          types("i16 uint16 i32 f16 f32", a5="i8 u8 i16 uint16 i32 u32 i64 uint64 f16 bf16 f32"), _S1,
          dsl="cmps", doc="packed mask of src <mode> scalar (TCMPS)"),
    OpDef("TSEL", "select", _V, select, types("i16 uint16 i32 u32 f16 bf16 f32", a5="+ i8 u8 i64 uint64"), _S2,
          tmp=True, scratch=True, dsl="select", doc="mask ? src0 : src1 (TSEL)"),
    OpDef("TSELS", "select_scalar", _V, select,
          types("i16 i32 u32 f16 bf16 f32", a5="i8 u8 i16 uint16 i32 u32 i64 uint64 f16 f32"), _S1, tmp=True,
          scratch=True, dsl="selects", doc="mask ? src : scalar (TSELS)"),
    # -- broadcasts along columns, and the rest of the row / column families
    OpDef("TCOLEXPAND", "col_bcast", _V, dtypes=_B32, cost=_S1, dsl="col_expand", doc="dst[:, j] = src[0, j] (TCOLEXPAND)"),
    OpDef("TCOLEXPANDADD", "col_expand", _V, np.add, _COLX, _S2, dsl="col_expand_add"),
    OpDef("TCOLEXPANDSUB", "col_expand", _V, np.subtract, _COLX, _S2, dsl="col_expand_sub"),
    OpDef("TCOLEXPANDMUL", "col_expand", _V, np.multiply, _COLX, _S2, dsl="col_expand_mul"),
    OpDef("TCOLEXPANDDIV", "col_expand", _V, div_trunc, types("f16 f32", a5="+ i8 u8 i16 uint16 i32 u32 bf16"),
          _S4, dsl="col_expand_div"),
    OpDef("TCOLEXPANDMAX", "col_expand", _V, np.maximum, _COLX, _S2, dsl="col_expand_max"),
    OpDef("TCOLEXPANDMIN", "col_expand", _V, np.minimum, _COLX, _S2, dsl="col_expand_min"),
    OpDef("TROWEXPANDMAX", "row_expand", _V, np.maximum, _COLX, _S2, dsl="row_expand_max", tmp=True),
    OpDef("TROWEXPANDMIN", "row_expand", _V, np.minimum, _COLX, _S2, dsl="row_expand_min", tmp=True),
    OpDef("TCOLMIN", "col_reduce", _V, np.min, _COLRED,
          (7, 14, 18), dsl="col_min"),
    OpDef("TROWPROD", "row_reduce", _V, _prod, types("f16 f32 i16 i32"), (7, 14, 18),
          dsl="row_prod", scratch=True),
    OpDef("TCOLPROD", "col_reduce", _V, _prod, types("f16 f32 i16 i32", a5="+ u32 bf16"),
          (7, 14, 18), dsl="col_prod"),
    OpDef("TROWARGMAX", "row_arg", _V, np.argmax, _ROWARG, (7, 14, 18), dsl="row_argmax", tmp=True,
          scratch=True,
          doc="column index (and value) of each row's maximum (TROWARGMAX)"),
    OpDef("TROWARGMIN", "row_arg", _V, np.argmin, _ROWARG, (7, 14, 18), dsl="row_argmin", tmp=True,
          scratch=True,
          doc="column index (and value) of each row's minimum (TROWARGMIN)"),
    OpDef("TCOLARGMAX", "col_arg", _V, np.argmax, _COLARG, (7, 14, 18), dsl="col_argmax", tmp=True,
          scratch=True,
          doc="row index (and value) of each column's maximum (TCOLARGMAX)"),
    OpDef("TCOLARGMIN", "col_arg", _V, np.argmin, _COLARG, (7, 14, 18), dsl="col_argmin", tmp=True,
          scratch=True,
          doc="row index (and value) of each column's minimum (TCOLARGMIN)"),
    # -- part ops: over the union of two valid regions (one of them dst's)
    OpDef("TPARTADD", "part", _V, np.add, _PART, _S2, dsl="part_add", doc="src0 + src1 where both are valid (TPARTADD)"),
    OpDef("TPARTMUL", "part", _V, np.multiply, types("i16 i32 f16 f32", a5="i8 u8 i16 i32 u32 f16 bf16 f32"),
          _S2, dsl="part_mul", doc="src0 * src1 where both are valid (TPARTMUL)"),
    OpDef("TPARTMAX", "part", _V, np.maximum, _PART, _S2, dsl="part_max", doc="max where both are valid (TPARTMAX)"),
    OpDef("TPARTMIN", "part", _V, np.minimum, _PART, _S2, dsl="part_min", doc="min where both are valid (TPARTMIN)"),
    OpDef("TPARTARGMAX", "part_arg", _V, np.greater, types("f16 f32"), _S4,
          doc="max and its index where both are valid, src0 on ties (TPARTARGMAX)"),
    OpDef("TPARTARGMIN", "part_arg", _V, np.less, types("f16 f32"), _S4,
          doc="min and its index where both are valid, src0 on ties (TPARTARGMIN)"),
    # -- fused arithmetic, power, exp-differences, pair sums
    OpDef("TSUBRELU", "binary", _V, subrelu, types("f16 f32"), _S2, dsl="subrelu", doc="max(src0 - src1, 0) (TSUBRELU)"),
    OpDef("TMULADDDST", "dst_binary", _V, mul_add_dst, types("f16 f32"), _S4,
          doc="dst = src0 * src1 + dst (TMULADDDST)"),
    OpDef("TFUSEDMULADD", "dst_binary", _V, fused_mul_add, types("f16 f32"), _S4,
          doc="dst = src0 * dst + src1 (TFUSEDMULADD)"),
    OpDef("TFUSEDMULADDRELU", "dst_binary", _V, fused_mul_add_relu, types("f16 f32"), _S4,
          doc="dst = max(src0 * dst + src1, 0) (TFUSEDMULADDRELU)"),
    OpDef("TPOW", "pow", _V, power, _POW, _S4, dsl="pow", tmp=True, scratch=True, doc="base ** exp per element (TPOW)"),
    OpDef("TPOWS", "pows", _V, power, _POW, _S4, dsl="pows", tmp=True, scratch=True, doc="base ** scalar per element (TPOWS)"),
    OpDef("TROWEXPANDEXPDIF", "row_expand", _V, exp_dif, types("f16 f32"), _S4, dsl="row_expand_expdif", tmp=True,
          doc="exp(src0 - src1[i, j mod n]) per row, n: 1 or a 32-byte block (TROWEXPANDEXPDIF)"),
    OpDef("TCOLEXPANDEXPDIF", "col_expand", _V, exp_dif, types("f16 f32"), _S4, dsl="col_expand_expdif",
          doc="exp(src0 - src1[0, j]) per column (TCOLEXPANDEXPDIF)"),
    OpDef("TPAIRREDUCESUM", "unary", _V, pair_sum, types("f16 f32"), _S2, dsl="pair_sum",
          doc="sums of adjacent pairs into the lower half of each row (TPAIRREDUCESUM)"),
    OpDef("TADDRELUCONV", "relu_conv", _V, add_relu_conv, types("f16 f32 i16"), _S2, dsl="add_relu_conv",
          doc="convert(max(src0 + src1, 0)): f32 -> f16, f16 / i16 -> i8 (TADDRELUCONV)"),
    OpDef("TSUBRELUCONV", "relu_conv", _V, sub_relu_conv, types("f16 f32 i16"), _S2, dsl="sub_relu_conv",
          doc="convert(max(src0 - src1, 0)): f32 -> f16, f16 / i16 -> i8 (TSUBRELUCONV)"),
    OpDef("TADDDEQRELU", "TADDDEQRELU", _V, add_deq_relu, types("i32"), _S4, tmp=True, scratch=True,
          dsl="add_deq_relu",
          doc="f16(max((src0 + src1) * deqScale, 0)) of int32 sources (TADDDEQRELU)"),
    OpDef("THISTOGRAM", "THISTOGRAM", _V, histogram, Types(frozenset(), frozenset({dt.uint32, _U16})), (7, 14, 18),
          doc="cumulative per-row counts of one byte of each element (THISTOGRAM)"),
    # -- layout and generation
    OpDef("TCONCAT", "TCONCAT", _V, concat, _CAT, _S1, dsl="concat",
          doc="src0 | src1 along columns (TCONCAT); indexed forms (dst, src0, src1[, dstIdx], src0Idx, "
              "src1Idx): per-row counts from index tiles (ISA only: ptoas spells the plain form)"),
    OpDef("TTRANS", "TTRANS", _V, trans, _CAT, _S2, dsl="transpose", tmp=True, scratch=True, doc="dst = src transposed (TTRANS)"),
    OpDef("TRESHAPE", "TRESHAPE", None, doc="the same bytes as another tile shape / dtype (TRESHAPE)"),
    OpDef("TFILLPAD", "fillpad", _V, fill_pad, _CAT, _S1,
          doc="src in its valid region, the pad value in the rest of dst (TFILLPAD)"),
    OpDef("TFILLPAD_EXPAND", "fillpad", _V, fill_pad, _CAT, _S1,
          doc="TFILLPAD into a larger destination tile (TFILLPAD_EXPAND)"),
    OpDef("TFILLPAD_INPLACE", "fillpad", _V, fill_pad, _CAT, _S1,
          doc="TFILLPAD of a tile onto itself (TFILLPAD_INPLACE)"),
    OpDef("TCI", "TCI", _V, ci, types("i16 uint16 i32 u32 f16 bf16 f32", a5="i16 uint16 i32 u32"), _S1, tmp=True,
          dsl="arange",
          doc="dst[0, k] = start +/- k (TCI)"),
    OpDef("TTRI", "TTRI", _V, tri, types("i16 i32 u32 f16 f32", a5="+ i8 u8 i64 bf16"), _S1, dsl="tri",
          doc="a lower / upper triangular 0/1 mask (TTRI)"),
    OpDef("TINSERT", "TINSERT", None, doc="src into dst at (row, col): TEXTRACT's inverse (TINSERT)"),
    OpDef("TGATHER", "TGATHER", _V, gather_index, _B32, _S2, tmp=True,
          doc="dst = src elements by index, or the elements a MaskPattern takes (TGATHER); compare form "
              "(dst, src, kValue, cdst, tmp, offset, CmpMode EQ / GT): per row the column numbers + offset "
              "of the elements matching kValue, their count in cdst (sources A2A3: f16, f32, i32 (EQ); "
              "A5: f16, f32, i16, i32, u32)"),
    OpDef("TSCATTER", "TSCATTER", _V, scatter_index, _B32, _S2,
          doc="src elements to dst positions by index, or where a MaskPattern takes (TSCATTER)"),
    OpDef("TINTERLEAVE", "TINTERLEAVE", _V, interleave, _A5_B32, _S2,
          doc="two tiles' elements alternated, split into two tiles (TINTERLEAVE)"),
    OpDef("TDEINTERLEAVE", "TDEINTERLEAVE", _V, deinterleave, _A5_B32, _S2,
          doc="the even and the odd elements of a stream into two tiles (TDEINTERLEAVE)"),
    OpDef("TGATHERB", "TGATHERB", _V, gather_blocks, _CAT, _S2,
          doc="32-byte blocks of src at byte offsets (TGATHERB)"),
    OpDef("TSUBVIEW", "TSUBVIEW", None, doc="a tile over a sub-block of another tile's storage (TSUBVIEW)"),
    OpDef("TSORT32", "TSORT32", _V, sort32, types("f16 f32"), (7, 14, 18), tmp=True, dsl="sort32",
          doc="(value, index) pairs sorted per block of 32, descending (TSORT32)"),
    OpDef("TMRGSORT", "TMRGSORT", _V, mrgsort_lists, types("f16 f32"), (7, 14, 18), tmp=True,
          doc="merge sorted (value, index) lists, descending (TMRGSORT)"),
    OpDef("TQUANT", "TQUANT", _V, quant_int8, types("f32"), _S4, tmp=True,
          doc="f32 -> int8 / uint8 with per-row scale (and offset) (TQUANT, INT8 forms); A5's MXFP8 forms: f32 / "
              "f16 / bf16 -> e4m3 bytes with an e8m0 exponent per group of 32 along a row (ND, grp_axis 1) or a "
              "column (DN, grp_axis 0), OCP or NV scale (TQUANT<grp_axis, MxQuantAlg>(dst, src, &exp, &max, "
              "&scaling)); MXFP4 writes a packed 4-bit type and HiFloat4 is A6's: not modelled"),
    OpDef("TDEQUANT", "TDEQUANT", _V, dequant, types("i8 i16"), _S4, dsl="dequant",
          doc="int8 / int16 -> f32: (src - offset) * scale per row (TDEQUANT)"),
    # -- indexed GM gather / scatter
    OpDef("MGATHER", "MGATHER", None, gather_at, _INDEXED,
          doc="GM rows (Coalesce::Row: dst[r, :] = table[idx[r], :]) or elements (Coalesce::Elem: dst[r, c] = "
              "table.flat[idx[r, c]]) into a Vec tile at the indices of a Vec int32 / uint32 tile, an index past the "
              "table as GatherOOB says (Undefined: an error; Clamp, Wrap, Zero); A2A3: the scalar unit and MTE2, A5: "
              "the vector pipe (MGATHER)"),
    OpDef("MSCATTER", "MSCATTER", None, scatter_at, _INDEXED,
          doc="a Vec tile's rows (Coalesce::Row: table[idx[r], :] = src[r, :]) or elements (Coalesce::Elem: "
              "table.flat[idx[r, c]] = src[r, c]) into GM at the indices of a Vec int32 / uint32 tile, combined by "
              "ScatterAtomicOp (None: the last write stays; Add; A5: Max, Min), an index past the table as ScatterOOB "
              "says (Undefined: an error; Skip, Clamp, Wrap); A2A3: the scalar unit and MTE3, A5: the vector pipe "
              "(MSCATTER)"),
    # -- convolution: the Cube's img2col and its registers
    OpDef("TIMG2COL", "TIMG2COL", PipeUnit.MTE1, img2col, IMG2COL_DTYPES,
          doc="the im2col block at (posM, posK) of an NC1HWC0 ConvTile in L1 into a Left tile: row m the output "
              "position (m // outW, m % outW), column k (c1, kh, kw, c0) c0 fastest, the pad value where the "
              "window lies in the padding; fmapH / fmapW / pads from the FMATRIX register, the pad value from the "
              "padding register (MANUAL modes: what SETFMATRIX / SET_IMG2COL_PADDING wrote; AUTO: the ConvTile's, "
              "written by the TIMG2COL), stride / dilation / filter / channelSize from the ConvTile (TIMG2COL; no ptoas 0.27 "
              "op)"),
    OpDef("SETFMATRIX", "SETFMATRIX", PipeUnit.S,
          doc="write a ConvTile's fmapH, fmapW and pads into the Cube's FMATRIX register, bank A or B (SETFMATRIX, "
              "MANUAL modes; nothing in the AUTO ones; no ptoas 0.27 op)"),
    OpDef("SET_IMG2COL_RPT", "SET_IMG2COL_RPT", PipeUnit.S,
          doc="write a ConvTile's repeat fields into the Cube's img2col repeat register (SET_IMG2COL_RPT, MANUAL "
              "modes; no ptoas 0.27 op); ptopipe runs one repeat"),
    OpDef("SET_IMG2COL_PADDING", "SET_IMG2COL_PADDING", PipeUnit.S,
          doc="write a ConvTile's pad value into the Cube's img2col padding register (SET_IMG2COL_PADDING, MANUAL "
              "modes; no ptoas 0.27 op)"),
    # -- memory hints and debugging
    OpDef("TPREFETCH", "TPREFETCH", PipeUnit.MTE2, doc="a GM prefetch hint: no data changes (TPREFETCH)"),
    OpDef("TPREFETCH_ASYNC", "TPREFETCH_ASYNC", PipeUnit.S,
          doc="an L2 prefetch of a flat GM tensor through the SDMA engine: no data changes; a submitted one writes "
              "its SQE on the scalar unit and drains the core's pipes (pipe_barrier(PIPE_ALL)); its context's SDMA "
              "scratch is UB 0x0..0xff; Vector cores only (TPREFETCH_ASYNC; no ptoas 0.27 op)"),
    OpDef("TRANDOM", "TRANDOM", _V, random_words, types("", a5="i32 u32"), _S2,
          doc="Philox-4x32 random words from a key and a counter (TRANDOM)"),
    OpDef("TPRINT", "TPRINT", PipeUnit.S, doc="print a tile or GM tensor, in simulated time (TPRINT)"),
    OpDef("TTRAP", "TTRAP", PipeUnit.S, doc="stop the kernel with an error (pto.trap)"),
)
OPS: dict = {op.name: op for op in _DEFS}


def by_form(*forms: str) -> tuple:
    """The ops of the given forms, in catalogue order."""
    return tuple(op for op in _DEFS if op.form in forms)


#: the local data paths of TMOV: (source, destination) -> pipe.  Only an Acc source converts
#: dtypes (FIX); every other path copies.
MOVES = {(TileType.Mat, TileType.Left): PipeUnit.MTE1, (TileType.Mat, TileType.Right): PipeUnit.MTE1,
         (TileType.Mat, TileType.Bias): PipeUnit.MTE1, (TileType.Acc, TileType.Mat): PipeUnit.FIX,
         (TileType.Mat, TileType.Scaling): PipeUnit.FIX,
         (TileType.Vec, TileType.Vec): PipeUnit.V}
MOVE_PATHS = ", ".join(f"{s.value}->{d.value}" for s, d in MOVES)
#: A5 only: the Cube's FIX pipe writes L0C into a Vector core's UB (pto-isa ``TMOV`` Acc -> Vec,
#: ``AccToVecMode``).  A tile in UB is on the Cube only in a program that uses both kinds
#: of tiles on one core (pto-isa's CPU simulator runs such a program; the device cannot).
#: Also A5 only: L1 -> the MX scale buffers (TMOV Mat -> ScaleLeft / ScaleRight, MTE1).
A5_MOVES = {(TileType.Acc, TileType.Vec): PipeUnit.FIX, (TileType.Mat, TileType.ScaleLeft): PipeUnit.MTE1,
            (TileType.Mat, TileType.ScaleRight): PipeUnit.MTE1}
CONVERTS_FROM = TileType.Acc             # the tile type whose moves and stores convert (FIX)
LOAD_DST = (TileType.Vec, TileType.Mat)  # TLOAD destinations
STORE_SRC = (TileType.Vec, TileType.Acc, TileType.Mat)   # TSTORE sources
#: the GM element types a TSTORE with ``AtomicType::AtomicAdd`` adds in (pto-isa's
#: ``SetAtomicAdd``, the same on A2A3 and A5: the atomic unit's f32 / f16 / bf16 / s32 / s16 /
#: s8 modes; a static_assert refuses any other).  Every store source takes it (the mode is
#: set around the Vec / Mat MTE3 copy and the Acc fixpipe write alike); the fixpipe
#: converts an Acc tile to the GM dtype first and the sum is rounded (wrapped) in that dtype.
ATOMIC_ADD_DTYPES = (dt.float32, dt.float16, dt.bfloat16, dt.int32, dt.int16, dt.int8)

_ND, _DN, _NZ, _ZN = TileLayout.ND, TileLayout.DN, TileLayout.NZ, TileLayout.ZN
_SAME_LAYOUT = ((_ND, _ND), (_DN, _DN), (_NZ, _NZ))
#: the (GM layout, tile layout) pairs a TLOAD / TSTORE of a tile type moves, per platform: a
#: pair between two layouts is pto-isa's conversion (ND -> NZ into L1); a pair not listed is a
#: static_assert there ("Src and dst layout must be same" ...).  A2A3:
#: common/arch/memory/tload_common.hpp TLOAD_TILE_IMPL, tstore_common.hpp CheckStaticForVecAndMat;
#: A5: common/arch/register/tload_common.hpp StaticCheck / TLoadCubeCheck, a5/TStore.hpp
#: CheckStaticVec.  An Acc store converts the accumulator's NZ to an ND or NZ GM tensor, never
#: a DN one, whatever the tile's declared layout (a2a3/TStore.hpp CheckAcc2gm, a5/TStore.hpp
#: CheckStaticAcc).  Mat stores are not listed: pto-isa stores a Mat tile only to a GM tensor of its own
#: layout, and a tensor in the NZ byte order of ptopipe's default Mat tile is rarely what a
#: kernel declares (it moves the logical matrix), so the check would refuse most Mat stores
#: it can run.  (A5 has no Mat store at all - "Source TileType only support Vec/Acc" - yet
#: ptopipe runs one: kernels use it to observe L1.)
_ACC_TO_GM = tuple((gm, t) for gm in (_ND, _NZ) for t in TileLayout)
MOVE_LAYOUTS = {
    ("TLOAD", TileType.Vec, _A2A3): _SAME_LAYOUT,
    ("TLOAD", TileType.Vec, _A5): _SAME_LAYOUT,
    ("TLOAD", TileType.Mat, _A2A3): _SAME_LAYOUT + ((_ND, _NZ), (_DN, _ZN)),
    ("TLOAD", TileType.Mat, _A5): _SAME_LAYOUT + ((_ND, _NZ), (_DN, _NZ), (_DN, _ZN)),
    ("TSTORE", TileType.Vec, _A2A3): _SAME_LAYOUT,
    ("TSTORE", TileType.Vec, _A5): _SAME_LAYOUT,
    ("TSTORE", TileType.Acc, _A2A3): _ACC_TO_GM,
    ("TSTORE", TileType.Acc, _A5): _ACC_TO_GM,
}
#: A2A3 moves 64-bit elements only ND <-> ND and DN <-> DN ("only support ND2ND/DN2DN for b64")
MOVE_LAYOUTS_B64 = ((_ND, _ND), (_DN, _DN))
#: the (GM layout, tile layout) conversions of a Mat TLOAD that take a two-dimensional GlobalTensor
#: only - its dims 0..2 static 1: A2A3's ND2NZ and DN2ZN (common/arch/memory/tload_common.hpp
#: TLoadGm2L1Nd2nz / Dn2zn: "GlobalTensor only support 2 dim when ND2NZ!"), A5's ND2NZ and DN2NZ
#: (common/arch/register/tload_common.hpp TLoadCubeCheck: "GlobalTensor input shape now only
#: support 2 dim"); the same-layout moves loop over the outer dims
TWO_DIM_LOADS = {_A2A3: ((_ND, _NZ), (_DN, _ZN)), _A5: ((_ND, _NZ), (_DN, _NZ))}


def two_dim_load_error(platform: PlatformID, gm: TileLayout, tile: TileLayout, shape) -> str | None:
    """Why pto-isa refuses a Mat TLOAD converting a GM tensor of 5-D ``shape`` in layout ``gm``
    into a tile in layout ``tile`` (None: it moves it): a conversion of :data:`TWO_DIM_LOADS`
    from a tensor whose dims 0..2 are not all 1."""
    if (gm, tile) not in TWO_DIM_LOADS.get(platform, ()) or all(d == 1 for d in shape[:3]):
        return None
    plat = "A2A3" if platform is _A2A3 else "A5"
    return (f"pto-isa's {gm.name} -> {tile.name} TLOAD into a Mat tile on {plat} takes a two-dimensional "
            f"GlobalTensor (Shape<1, 1, 1, rows, cols>), this one has dims {tuple(shape)} (its static_assert "
            f"\"GlobalTensor only support 2 dim\": the kernel does not compile for the device)")


def move_layout_error(op: str, loc: TileType, platform: PlatformID, gm: TileLayout, tile: TileLayout,
                      rows: int, cols: int, itemsize: int) -> str | None:
    """Why pto-isa refuses a ``op`` (TLOAD / TSTORE) between a GM tensor in layout ``gm`` and a
    ``loc`` tile of static shape ``rows x cols`` in layout ``tile`` (None: it moves it).  A
    TSTORE of a one-row or one-column Vec tile is layout-free (the same bytes either
    way), except of 64-bit elements on A2A3."""
    pairs = MOVE_LAYOUTS.get((op, loc, platform))
    if pairs is None:
        return None
    plat = "A2A3" if platform is _A2A3 else "A5"
    if loc is TileType.Acc:
        return None if (gm, tile) in pairs else (f"pto-isa's {op} of an Acc tile converts it only to an ND or NZ GM tensor "
                "(it refuses the file at compile time)")
    b64 = itemsize == 8 and platform is _A2A3
    if b64:
        pairs = MOVE_LAYOUTS_B64
    elif op == "TSTORE" and (rows == 1 or cols == 1):
        return None
    if (gm, tile) in pairs:
        return None
    ways = ", ".join(f"{t.name}{'<-' if op == 'TLOAD' else '->'}{g.name}" for g, t in pairs)
    return (f"pto-isa's {op} of {with_article(loc.value)} tile{' of 64-bit elements' if b64 else ''} on "
            f"{plat} moves only {ways} (tile{'<-' if op == 'TLOAD' else '->'}GM; "
            "it refuses the file at compile time)")


#: the data paths of TINSERT: (source, destination) -> (pipe, platform ids that have it); Acc
#: -> Mat converts on FIX as TMOV does, Vec -> Vec copies on V (the ISA page marks it A5, but
#: pto-isa's a2a3/TInsert.hpp TINSERT_IMPL has it too).  pto-isa's A5 Acc -> Vec
#: and Vec -> Mat insertions join memories of two cores: they run on a core holding both
#: (see A5_MOVES), else the tile that is not on the core is reported.
INSERT_PATHS = {(TileType.Acc, TileType.Vec): (PipeUnit.FIX, (_A5,)),
                (TileType.Vec, TileType.Mat): (PipeUnit.MTE3, (_A5,)),
                (TileType.Acc, TileType.Mat): (PipeUnit.FIX, (_A2A3, _A5)),
                (TileType.Vec, TileType.Vec): (PipeUnit.V, (_A2A3, _A5))}
#: the dtypes A2A3's TINSERT Vec -> Vec copies (common/arch/memory/tinsert_common.hpp
#: CheckTInsertVecToVecCommon: "Unsupported data type for A3")
INSERT_VEC_A2A3 = frozenset({dt.int8, dt.uint8, dt.int16, np.dtype(np.uint16), dt.float16, dt.bfloat16,
                             dt.float32, dt.int32, dt.uint32})
#: what an Acc tile converts to when it moves into L1 (A5 also UB) without a quantisation word -
#: TMOV (its ReLU form too), TEXTRACT and TINSERT (accumulator dtype -> destination dtypes), per
#: platform: pto-isa's a2a3 CheckTMovAccToMat<..., isCastQuant> ("float -> half / bfloat16_t") and
#: a5 CheckTMovAccValid without quant (float -> half / bfloat16_t / float, int32_t -> int32_t)
ACC_MOVE_CONVERTS = {_A2A3: {dt.float32: (dt.float16, dt.bfloat16)},
                     _A5: {dt.float32: (dt.float16, dt.bfloat16, dt.float32), dt.int32: (dt.int32,)}}
#: the GM dtypes a TSTORE of an Acc tile writes without a quantisation word, whatever the
#: accumulator's (pto-isa's a2a3 CheckAcc2gm / a5 CheckStaticAcc: "int32_t/float/half/bfloat16_t")
ACC_STORE_DTYPES = (dt.int32, dt.float32, dt.float16, dt.bfloat16)


def acc_convert_error(op: str, src, dst, platform, store: bool = False) -> "tuple[str, str] | None":
    """(what, fix) if ``op`` cannot convert an accumulator of dtype ``src`` to ``dst`` without a
    quantisation word on ``platform`` - into a local tile (:data:`ACC_MOVE_CONVERTS`) or, with
    ``store``, into GM (:data:`ACC_STORE_DTYPES`) - else None: pto-isa's ``static_assert``, the
    kernel does not compile."""
    s, d = np.dtype(src), np.dtype(dst)
    outs = ACC_STORE_DTYPES if store else ACC_MOVE_CONVERTS[PlatformID(platform)].get(s, ())
    if d in outs:
        return None
    into = "GM" if store else "a local tile"
    names = ", ".join(dt.short_name(o) for o in outs) or "none"
    quant = FP_CONVERTS[PlatformID(platform)].get(s, ())
    fix = f"{op} writes {into} of {names} from {with_article(dt.short_name(s))} accumulator"
    if d in quant:
        fix += (f"; {dt.short_name(d)} needs the fixpipe's quantisation: pass a pre-quant scalar "
                f"({op}<..., ReluPreMode>(dst, src, preQuantScalar)) or a Scaling tile ({op}_FP)")
    how = f"move as {dt.short_name(d)}" if s == d else f"convert to {dt.short_name(d)}"
    return (f"{op}: {with_article(dt.short_name(s))} accumulator does not {how} "
            f"without a quantisation word on {platform_label(platform)} (pto-isa's static_assert: the kernel "
            "does not compile)", fix)
#: the data paths of TEXTRACT (pto-isa's ISA page and its TEXTRACT_TILE_IMPL per platform - the
#: A2A3 one also takes Acc -> Mat, through the fixpipe, which its page does not list):
#: (source, destination) -> (pipe, platform ids)
EXTRACT_PATHS = {(TileType.Mat, TileType.Left): (PipeUnit.MTE1, (_A2A3, _A5)),
                 (TileType.Mat, TileType.Right): (PipeUnit.MTE1, (_A2A3, _A5)),
                 (TileType.Vec, TileType.Vec): (PipeUnit.V, (_A2A3, _A5)),
                 (TileType.Acc, TileType.Mat): (PipeUnit.FIX, (_A2A3, _A5)),
                 (TileType.Acc, TileType.Vec): (PipeUnit.FIX, (_A5,)),
                 (TileType.Vec, TileType.Mat): (PipeUnit.MTE3, (_A5,)),
                 (TileType.Mat, TileType.ScaleLeft): (PipeUnit.MTE1, (_A5,)),
                 (TileType.Mat, TileType.ScaleRight): (PipeUnit.MTE1, (_A5,))}


#: the pipe of a TSTORE by source tile type: from L0C on FIX (converting), else on MTE3
STORE_PIPE = {t: PipeUnit.FIX if t is TileType.Acc else PipeUnit.MTE3 for t in STORE_SRC}
#: the pipe a TPUSH copies its tile out on, by ring way: the Cube's L0C through FIX (C2V),
#: the Vector's UB through MTE3 (V2C)
PUSH_PIPE = {"C2V": PipeUnit.FIX, "V2C": PipeUnit.MTE3}


def kernel_op(fn) -> str | None:
    """The name(s) of the op(s) whose numpy kernel is the function ``fn`` ("TREM / TREMS"),
    to name an op in an error raised inside it; None for a numpy ufunc (shared by many)
    and anything else."""
    try:
        return _BY_KERNEL.get(fn)
    except TypeError:                         # unhashable: an array operand
        return None


_BY_KERNEL: dict = {}
for _op in _DEFS:
    if _op.kernel is not None and not isinstance(_op.kernel, np.ufunc):
        _BY_KERNEL[_op.kernel] = (_BY_KERNEL[_op.kernel] + " / " if _op.kernel in _BY_KERNEL
                                  else "") + _op.name
del _op


class DataFault(ArithmeticError):
    """A value an op's result is undefined for, met when its numpy work runs (an integer
    divisor of 0: pto-isa's CPU model asserts, the device is target-defined).  ``fix``
    replaces the data plane's generic advice (the operands were fine when issued)."""

    def __init__(self, msg: str, fix: str):
        super().__init__(msg)
        self.fix = fix
