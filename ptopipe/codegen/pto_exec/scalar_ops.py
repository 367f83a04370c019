"""Scalar ``arith`` ops with MLIR semantics: ``iN`` wraps at N bits, ``index`` is 64-bit,
``divsi`` / ``remsi`` truncate toward zero, ``u``-predicates and ``*ui`` ops read unsigned;
division by zero and over-wide shifts are errors at their line."""
from __future__ import annotations

import numpy as np

from ..pto_tree import Stmt, split_top
from ...ir.first_step import div_toward_zero, rem_toward_zero
from .types import ELEMENT, ScalarT, wrap
from .values import Elements
from ...errors import with_article


def h_constant(ex, fr, s):
    toks = s.toks
    if not toks:
        raise ex.perr(s.tok, "arith.constant without a value")
    v = toks[0].text
    if len(toks) >= 3 and toks[1].text == ":":
        ty = ScalarT(toks[2].text)
    else:                   # MLIR's default types: a bool i1, an integer i64, a float f64
        ty = ScalarT("i1" if v in ("true", "false") else
                     "f64" if "x" not in v and any(ch in v for ch in ".eE") else "i64")
    if v in ("true", "false"):
        return 1 if v == "true" else 0
    if v == "dense":
        return _dense(ex, s, toks)
    try:
        if ty.is_float:
            return float(v) if not v.startswith("0x") else float(np.frombuffer(
                int(v, 16).to_bytes(ELEMENT[ty.name].itemsize, "little"), ELEMENT[ty.name])[0])
        return wrap(int(v, 0) if v.startswith("0x") else int(float(v)) if "." in v or "e" in v else int(v), ty)
    except (ValueError, KeyError):
        raise ex.perr(toks[0], f"arith.constant value {v!r} is not {with_article(ty.name)}") from None


def _dense(ex, s, toks):
    """``arith.constant dense<[1, 2, ...]> : vector<4xi16>`` (or a splat ``dense<0>``, a
    ``tensor<...>``): an :class:`~.values.Elements` of the type's shape; integers wrap at the
    element's width as MLIR's do."""
    colon = next((i for i, t in enumerate(toks) if t.text == ":"), None)
    ty = ex.prog.types.parse(toks[colon + 1:]) if colon is not None else None
    if not (isinstance(ty, tuple) and ty[0] in ("vector", "tensor")):
        raise ex.perr(toks[0], "arith.constant dense<...> needs a vector<...> or tensor<...> type",
                      "write dense<[...]> : vector<4xi16> (or tensor<NxT>)")
    _, d, shape = ty
    words = [t.text for t in toks[1:colon] if t.kind == "word"]
    n = int(np.prod(shape))
    if len(words) not in (1, n):
        raise ex.perr(toks[0], f"dense<...> gives {len(words)} values for a {'x'.join(map(str, shape))} "
                               f"{ty[0]}", f"give {n} values, or one (a splat)")
    elem = ScalarT(next(k for k, v in ELEMENT.items() if v == d))
    try:
        if d.kind == "b":
            vals = [w == "true" or (w not in ("false",) and int(w) != 0) for w in words]
        elif elem.is_float:
            vals = [float(w) for w in words]
        else:
            vals = [wrap(int(w, 0), elem) for w in words]
    except ValueError:
        raise ex.perr(toks[0], f"dense<...> value {words!r} is not {with_article(elem.name)}") from None
    return Elements(np.resize(np.array(vals, d), shape))


INT_OPS = {
    "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b, "arith.muli": lambda a, b: a * b,
    "arith.andi": lambda a, b: a & b, "arith.ori": lambda a, b: a | b, "arith.xori": lambda a, b: a ^ b,
    "arith.maxsi": max, "arith.minsi": min, "arith.maxui": max, "arith.minui": min,
}


FLOAT_OPS = {
    "arith.addf": lambda a, b: a + b, "arith.subf": lambda a, b: a - b, "arith.mulf": lambda a, b: a * b,
    "arith.divf": lambda a, b: a / b if b != 0 else (np.inf if a > 0 else -np.inf if a < 0 else np.nan),
    "arith.maximumf": max, "arith.minimumf": min, "arith.maxnumf": max, "arith.minnumf": min,
    "arith.remf": lambda a, b: float(np.fmod(a, b)),
}


_CMPI = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "slt": lambda a, b: a < b,
         "sle": lambda a, b: a <= b, "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
         "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b, "ugt": lambda a, b: a > b,
         "uge": lambda a, b: a >= b}


_CMPF = {"oeq": "eq", "one": "ne", "olt": "slt", "ole": "sle", "ogt": "sgt", "oge": "sge",
         "ueq": "eq", "une": "ne", "ult": "slt", "ule": "sle", "ugt": "sgt", "uge": "sge"}


def _scalar_type(ex, s: Stmt) -> ScalarT:
    """The scalar type of arithmetic statement ``s`` (read once: ``ex.decoded``)."""
    t = ex.decoded.get(id(s))
    if t is not None:
        return t
    tys = s.types()
    if not tys:
        raise ex.perr(s.tok, f"{s.name} needs its type after ':'")
    t = ex.prog.types.parse(tys[-1])
    if not isinstance(t, ScalarT):
        raise ex.perr(s.tok, f"{s.name} on a {t} value is not supported (scalars only)")
    ex.decoded[id(s)] = t
    return t


def _unsigned(v: int, t: ScalarT) -> int:
    b = t.bits or 64
    return int(v) & ((1 << b) - 1)


def h_arith(ex, fr, s):
    name = s.name
    ops = s.values()
    t = _scalar_type(ex, s)
    if name in ("arith.cmpi", "arith.cmpf"):
        pred = s.toks[0].text
        a, b = ex.val(fr, ops[0]), ex.val(fr, ops[1])
        compared = ex.seen.get(id(s))
        if compared is not None:            # (a guard of a loop the engine may take whole: .skip)
            compared[0], compared[1] = a, b
        if name == "arith.cmpf":
            if pred in ("false", "true"):
                return int(pred == "true")
            if (a != a or b != b):
                return int(pred.startswith("u") or pred == "une")
            pred = _CMPF.get(pred)
            if pred is None:
                raise ex.perr(s.toks[0], f"arith.cmpf predicate {s.toks[0].text} is not supported")
            f = _CMPI.get(pred)
            return int(f(a, b))
        v = cmp_int(pred, a, b, t)
        if v is None:
            raise ex.perr(s.toks[0], f"arith.cmpi predicate {pred} is not supported")
        return v
    if name in ("arith.negf",):
        return -ex.val(fr, ops[0])
    if name == "arith.select":
        c, a, b = (ex.val(fr, o) for o in ops[:3])
        return a if c else b
    if name in FLOAT_OPS:
        return float(FLOAT_OPS[name](float(ex.val(fr, ops[0])), float(ex.val(fr, ops[1]))))
    a, b = ex.ival(fr, ops[0]), ex.ival(fr, ops[1])
    try:
        v = int_op(name, a, b, t)
    except ZeroDivisionError:
        raise ex.err(s, f"{name}: division by zero ({ops[1].text} is 0)",
                     "guard the division; the device result is undefined") from None
    except OverflowError:
        bits = t.bits or 64
        raise ex.err(s, f"{name}: shift by {b} of a {bits}-bit value",
                     f"shift by 0..{bits - 1}; a larger shift is poison in MLIR") from None
    if v is None:
        raise ex.perr(s.tok, f"{name} is not supported")
    return _held(ex, s, v, t) if name in INT_OPS else v


#: the integer divisions of :func:`int_op`
DIVISIONS = ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi",
             "arith.ceildivsi", "arith.ceildivui")
#: the shifts of :func:`int_op`
SHIFTS = ("arith.shli", "arith.shrsi", "arith.shrui")


def int_op(name: str, a: int, b: int, t: ScalarT) -> int | None:
    """MLIR's value of the binary integer op ``name`` (``arith.addi``, ``arith.divsi``, ...)
    on ``a``, ``b`` of type ``t``, wrapped at ``t``'s width (None: not an integer op of
    :data:`INT_OPS` / :data:`DIVISIONS` / :data:`SHIFTS`).  Raises ZeroDivisionError for a
    division by 0 and OverflowError for a shift by more than the width (both undefined in
    MLIR).  The run and the reader's constant folding both take their values from here."""
    if name in INT_OPS:
        if name in ("arith.maxui", "arith.minui"):
            a, b = _unsigned(a, t), _unsigned(b, t)
        return wrap(INT_OPS[name](a, b), t)
    if name in DIVISIONS:
        if b == 0:
            raise ZeroDivisionError(name)
        if name.endswith("ui"):
            a, b = _unsigned(a, t), _unsigned(b, t)
        if name in ("arith.divsi", "arith.divui"):
            return wrap(div_toward_zero(a, b), t)
        if name in ("arith.remsi", "arith.remui"):
            return wrap(rem_toward_zero(a, b), t)
        if name == "arith.floordivsi":
            return wrap(a // b, t)
        return wrap(-((-a) // b), t)
    if name in SHIFTS:
        bits = t.bits or 64
        if not 0 <= b < bits:
            raise OverflowError(name)
        if name == "arith.shli":
            return wrap(a << b, t)
        if name == "arith.shrsi":
            return wrap(a >> b, t)
        return wrap(_unsigned(a, t) >> b, t)
    return None


def cmp_int(pred: str, a: int, b: int, t: ScalarT) -> int | None:
    """MLIR's ``arith.cmpi <pred>`` of ``a``, ``b`` of type ``t`` (1 / 0; None: an unknown
    predicate): ``u`` predicates read both unsigned."""
    if pred.startswith("u"):
        a, b = _unsigned(a, t), _unsigned(b, t)
    f = _CMPI.get(pred)
    return None if f is None else int(f(a, b))


def h_cast(ex, fr, s):
    """index_cast / extsi / extui / trunci / sitofp / uitofp / fptosi / fptoui / extf / truncf /
    bitcast-free conversions: ``op %v : T1 to T2``."""
    v = ex.val(fr, s.values()[0])
    toks = s.toks
    k = max(i for i, t in enumerate(toks) if t.text == "to")
    src = ex.prog.types.parse(split_top(toks[toks.index(next(t for t in toks if t.text == ":")) + 1:k])[0])
    dst = ex.prog.types.parse(toks[k + 1:])
    n = s.name
    if n in ("arith.extui", "arith.index_castui", "arith.uitofp"):
        v = _unsigned(v, src)
    if isinstance(dst, ScalarT) and dst.is_float:
        d = ELEMENT.get(dst.name, np.dtype(np.float64))
        return float(np.asarray(v, dtype=np.float64).astype(d))
    if n in ("arith.fptosi", "arith.fptoui"):
        if not np.isfinite(v):
            raise ex.err(s, f"{n} of {v}: not a finite value")
        v = int(np.trunc(v))
    return _held(ex, s, wrap(int(v), dst), dst)


def _held(ex, s, v: int, t: ScalarT) -> int:
    """``v``, the value statement ``s`` gives - kept with its type's range where it is a term
    of a loop the engine may take whole (:mod:`.skip`: a term that wraps is not affine)."""
    held = ex.seen.get(id(s))
    if held is not None:
        b = t.bits or 64
        hi = (1 << (b - 1)) - 1 if t.signed and b > 1 else (1 << b) - 1
        held[0], held[1], held[2] = v, hi, -hi - 1 if t.signed and b > 1 else 0
    return v
