"""Run PTO-AS (``.pto``) as ptoas reads it: buffer semantics, on the simulated cluster.

A ``pto.alloc_tile`` (``declare_tile``, ``memref.alloc``) is a buffer at an address - the
one it names (``addr = %c``) or one this executor places - and every op reads and writes
buffers through :mod:`ptopipe.isa`, exactly as the pto-isa C++ that ptoas emits does.  So
tiles that overlap alias as on the device, an accumulator read before anything wrote it
holds what its memory holds, and every checker of the ISA layer (deadlocks, protocol
misuse, slot use-after-free, races, leaks) runs on the file, reported at its line:col.

The file is read by :mod:`ptopipe.codegen.pto_tree` (syntax only) and checked here before
anything runs: every op must be one this executor knows (else a ParseError naming it at
its line), every value defined before use.  What runs where:

- a function with ``pto.kernel_kind`` runs on its core (vector: AIV0, and AIV1 too when the
  program has a cross-core pipe that is not one-lane); an entry (``pto.entry``, or a
  function calling kernels) runs on every core, each ``func.call`` of a kernel on that
  kernel's cores only, as ptoas's ``#if defined(__DAV_CUBE__)`` guards do;
- a function without a kind runs on the core its tiles imply (Vec -> a Vector core, Mat /
  Left / Right / Acc / Bias -> the Cube); one that needs both is refused, naming a tile of
  each (the device has no core that holds both).

Ops of the op catalogue run generically: ``pto.tX ins(a, b, s) outs(d) {attrs}`` is
``isa.TX(d, a, b, s)``.  Scalars follow MLIR: ``iN`` arithmetic wraps at N bits, ``index``
is 64-bit, comparisons and divisions are signed unless the op says ``u``.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import numpy as np

from .. import isa
from ..arch import dtypes as dt
from ..arch.catalogue import OPS as CATALOGUE
from ..arch.vocab import (BLayout, Direction, HistByte, MaskPattern, MemSpace, PadValue, RoundMode, SLayout, SyncPipe,
                          TileSplitAxis, TileType)
from ..errors import ConfigError, KernelError, ParseError, PtoPipeError
from .pto_lexer import Token, tokenize
from .pto_tree import Stmt, parse_tree, split_top
from ..sim.location import SourceLoc

# -- types ----------------------------------------------------------------------------------
#: MLIR element type -> numpy dtype
ELEMENT = {"f32": dt.float32, "f16": dt.float16, "bf16": dt.bfloat16, "f64": np.dtype(np.float64),
           "i8": dt.int8, "i16": dt.int16, "i32": dt.int32, "i64": dt.int64,
           "ui8": dt.uint8, "ui16": np.dtype(np.uint16), "ui32": dt.uint32, "ui64": np.dtype(np.uint64),
           "u8": dt.uint8, "u16": np.dtype(np.uint16), "u32": dt.uint32, "u64": np.dtype(np.uint64),
           "si8": dt.int8, "si16": dt.int16, "si32": dt.int32, "si64": dt.int64,
           "f8E4M3FN": dt.float8_e4m3, "f8E5M2": dt.float8_e5m2, "i1": np.dtype(np.bool_)}
LOC = {"vec": TileType.Vec, "ub": TileType.Vec, "mat": TileType.Mat, "l1": TileType.Mat,
       "left": TileType.Left, "right": TileType.Right, "acc": TileType.Acc, "bias": TileType.Bias}
CUBE_LOCS = (TileType.Mat, TileType.Left, TileType.Right, TileType.Acc, TileType.Bias)
BLAYOUT = {"row_major": BLayout.RowMajor, "col_major": BLayout.ColMajor}
SLAYOUT = {"none_box": SLayout.NoneBox, "row_major": SLayout.RowMajor, "col_major": SLayout.ColMajor}
ROUND = {"ROUND": RoundMode.CAST_ROUND, "RINT": RoundMode.CAST_RINT, "FLOOR": RoundMode.CAST_FLOOR,
         "CEIL": RoundMode.CAST_CEIL, "TRUNC": RoundMode.CAST_TRUNC, "NONE": RoundMode.CAST_NONE,
         "ODD": RoundMode.CAST_ODD, "CAST_ROUND": RoundMode.CAST_ROUND, "CAST_RINT": RoundMode.CAST_RINT}
#: tile_buf ``pad=`` (PTOAS PadValue: 0 null, 1 zero, 2 max, 3 min) -> what TFILLPAD fills with
PAD = {"1": PadValue.Zero, "2": PadValue.Max, "3": PadValue.Min, "zero": PadValue.Zero,
       "max": PadValue.Max, "min": PadValue.Min}
_INT_BITS = re.compile(r"^(u|ui|si|i)(\d+)$")
_SHAPE = re.compile(r"^((?:\d+|\?)x)+")
TILE_ALIGN = 32          # bytes: placed tiles start on a 32-byte boundary (UB / L1 block)


def _dtype_name(d) -> str:
    return next(k for k, v in ELEMENT.items() if v == d)


def _text(toks) -> str:
    return "".join(t.text if t.kind != "punct" or t.text not in (",",) else ", " for t in toks)


@dataclass(frozen=True)
class TileSpec:
    """A tile buffer's static type: location, dtype, shape, valid shape (None: dynamic),
    block / scalar layouts."""
    loc: TileType
    dtype: np.dtype
    rows: int
    cols: int
    v_rows: int | None
    v_cols: int | None
    blayout: BLayout | None = None
    slayout: SLayout | None = None
    pad: PadValue | None = None       # ``pad=`` (TFILLPAD fills with it); None: Null

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.dtype.itemsize


@dataclass(frozen=True)
class ScalarT:
    """A scalar type: ``index``, ``iN`` / ``uiN``, a float."""
    name: str

    @property
    def bits(self) -> int | None:
        if self.name == "index":
            return 64
        m = _INT_BITS.match(self.name)
        return int(m.group(2)) if m else None

    @property
    def signed(self) -> bool:
        return not self.name.startswith("u")

    @property
    def is_float(self) -> bool:
        return self.bits is None


def _int_range(t: ScalarT) -> tuple:
    b = t.bits
    if b == 1:
        return 0, 1                 # i1: false / true
    return (-(1 << (b - 1)), (1 << (b - 1)) - 1) if t.signed else (0, (1 << b) - 1)


def wrap(v: int, t: ScalarT) -> int:
    """``v`` wrapped to ``t``'s width (two's complement for signed types; i1 is 0/1)."""
    b = t.bits
    if b is None:
        return v
    if b == 1:
        return int(v) & 1
    v = int(v) & ((1 << b) - 1)
    if t.signed and v >= 1 << (b - 1):
        v -= 1 << b
    return v


class _Types:
    """Parse type token lists of one file (errors at the token)."""

    def __init__(self, f: str):
        self.f = f
        self._specs = {}                # type text -> TileSpec / memref tuple / None

    def spec_of(self, s: Stmt):
        """The tile buffer type an allocating / popping op gives (a TileSpec, or the memref
        tuple whose [1] is one), from its type text, parsed once per distinct text; None if
        it names none."""
        text = s.result_type_text()
        if text is None:
            return None
        if text not in self._specs:
            toks = tokenize(text, self.f)[:-1]
            try:
                self._specs[text] = self.parse(toks) if toks else None
            except ParseError:
                self._specs[text] = None
        spec = self._specs[text]
        spec = spec[1] if isinstance(spec, tuple) and spec[0] == "memref" else spec
        return spec if isinstance(spec, TileSpec) else None

    def err(self, msg, tok, fix="check the type's spelling against ptoas's") -> ParseError:
        return ParseError(msg, where=f"{self.f}:{tok.line}:{tok.col}", fix=fix)

    def element(self, text: str, tok) -> np.dtype:
        d = ELEMENT.get(text)
        if d is None:
            raise self.err(f"element type {text!r} is not supported", tok,
                           fix=f"use one of {', '.join(sorted(ELEMENT))}")
        return d

    def parse(self, toks):
        """A type: TileSpec, ScalarT, ('ptr', dtype), ('view', dtype, rank), ('part', dtype, shape),
        ('memref', TileSpec | dtype, shape, space), ('pipe',), ('event',)."""
        if not toks:
            raise ParseError("a type is missing", where=self.f)
        t0 = toks[0]
        if t0.kind == "word" and t0.text in ("index", "f16", "f32", "bf16", "f64") or \
                (t0.kind == "word" and _INT_BITS.match(t0.text)):
            return ScalarT(t0.text)
        name = t0.text
        inner = toks[2:-1] if len(toks) > 2 and toks[1].text == "<" else []
        if name == "!pto.tile_buf":
            return self.tile_buf(inner, t0)
        if name == "!pto.ptr":
            return ("ptr", self.element(_text(inner[:1]), t0))
        if name in ("!pto.tensor_view", "!pto.partition_tensor_view"):
            shape, d = self.shaped(inner, t0)
            return ("view" if name == "!pto.tensor_view" else "part", d, shape)
        if name == "memref":
            return self.memref(inner, t0)
        if name in ("!pto.pipe",):
            return ("pipe",)
        if name.startswith("!pto."):
            return ("opaque", name)
        raise self.err(f"type {_text(toks)!r} is not supported", t0)

    def shaped(self, inner, tok):
        """``16x512xbf16`` / ``?x?xf32`` -> (shape with None for ?, dtype)."""
        text = "".join(t.text for t in inner).split(",")[0]
        parts = text.split("x")
        if len(parts) < 1:
            raise self.err(f"bad shaped type {text!r}", tok)
        d = self.element(parts[-1], tok)
        shape = tuple(None if p == "?" else int(p) for p in parts[:-1] if p != "")
        return shape, d

    def memref(self, inner, tok):
        groups = split_top(inner)
        shape, d = self.shaped(groups[0], tok)
        space = "gm"
        for g in groups[1:]:
            s = "".join(t.text for t in g)
            m = re.search(r"address_space<(\w+)>", s)
            if m:
                space = m.group(1)
        if space == "gm":
            return ("memref", d, shape, "gm")
        loc = LOC.get(space)
        if loc is None:
            raise self.err(f"memref address space {space!r} is not supported", tok,
                           fix="use gm, vec, mat, left, right, acc or bias")
        rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        spec = TileSpec(loc, d, rows, shape[-1], rows, shape[-1])
        return ("memref", spec, shape, space)

    def tile_buf(self, inner, tok):
        """The long form ``<loc=vec, dtype=f32, rows=16, ...>`` or the short one
        ``<vec, 16x32xf32[, key=value...]>`` (``valid=RxC`` included)."""
        kv = {}
        for i, g in enumerate(split_top(inner)):
            if len(g) >= 3 and g[1].text == "=":
                kv[g[0].text] = "".join(t.text for t in g[2:])
            elif i == 0 and len(g) == 1:
                kv["loc"] = g[0].text
            elif i == 1 and g:
                shape, d = self.shaped(g, g[0])
                if len(shape) != 2 or None in shape:
                    raise self.err(f"a tile is 2-D and static, got {_text(g)!r}", g[0])
                kv["rows"], kv["cols"], kv["dtype"] = str(shape[0]), str(shape[1]), _dtype_name(d)
            elif g:
                raise self.err(f"!pto.tile_buf part {_text(g)!r} is not supported", g[0],
                               fix="write <loc=vec, dtype=f32, rows=16, cols=16, ...> or <vec, 16x16xf32>")
        if "valid" in kv:
            v = kv.pop("valid").split("x")
            kv["v_row"], kv["v_col"] = v[0], v[1] if len(v) > 1 else kv.get("cols", "?")
        try:
            loc = LOC[kv["loc"]]
            d = self.element(kv["dtype"], tok)
            rows, cols = int(kv["rows"]), int(kv["cols"])
        except KeyError as e:
            raise self.err(f"!pto.tile_buf without {e.args[0]!s}", tok,
                           fix="give loc, dtype, rows and cols") from None
        except ValueError:
            raise self.err("!pto.tile_buf rows / cols must be integers", tok) from None
        vr, vc = kv.get("v_row", str(rows)), kv.get("v_col", str(cols))
        b = BLAYOUT.get(kv.get("blayout", ""), None)
        s = SLAYOUT.get(kv.get("slayout", ""), None)
        pad = PAD.get(kv.get("pad", "0"))
        return TileSpec(loc, d, rows, cols, None if vr == "?" else int(vr), None if vc == "?" else int(vc), b, s,
                        pad)


# -- the program ------------------------------------------------------------------------------
@dataclass
class Func:
    """A ``func.func``: name, parameters (name, type), kind ('cube' / 'vector' / None),
    entry flag, body statements."""
    name: str
    params: list
    kind: str | None
    entry: bool
    body: list
    stmt: Stmt
    calls: list = field(default_factory=list)          # callee names, in order


@dataclass
class Program:
    """A read ``.pto`` file."""
    path: str
    funcs: dict
    arch: str | None
    types: _Types


def _func(s: Stmt, types: _Types) -> Func:
    toks = s.toks
    i = 0
    while i < len(toks) and toks[i].kind != "symbol":
        i += 1
    if i == len(toks):
        raise types.err("func.func without a @name", s.tok)
    name = toks[i].text[1:]
    params = []
    if i + 1 < len(toks) and toks[i + 1].text == "(":
        depth, j = 0, i + 1
        for j in range(i + 1, len(toks)):
            if toks[j].text in ("(", "[", "<", "{"):
                depth += 1
            elif toks[j].text in (")", "]", ">", "}"):
                depth -= 1
                if depth == 0:
                    break
        for g in split_top(toks[i + 2:j]):
            if not g:
                continue
            if g[0].kind != "value" or len(g) < 3 or g[1].text != ":":
                raise types.err(f"function parameter {_text(g)!r} is not '%name: type'", g[0])
            ty = g[2:]
            if ty and ty[-1].text == "}":                 # parameter attributes {..}
                k = max(idx for idx, t in enumerate(ty) if t.text == "{")
                ty = ty[:k]
            params.append((g[0].text, types.parse(ty), g[0]))
    text = " ".join(t.text for t in toks)
    m = re.search(r"kernel_kind\s*=\s*#pto\.kernel_kind\s*<\s*(\w+)\s*>", text)
    kind = m.group(1) if m else None
    if kind not in (None, "cube", "vector"):
        raise types.err(f"kernel kind {kind!r} is not supported", s.tok, fix="use cube or vector")
    entry = bool(re.search(r"\bpto\.entry\b", text))
    body = s.regions[0][0].stmts if s.regions else []
    return Func(name, params, kind, entry, body, s)


def read_program(text: str, path: str = "<pto>") -> Program:
    """``text`` as a :class:`Program` (syntax, functions, every op known: ParseError else)."""
    try:
        return _read_program(text, path)
    except RecursionError:
        raise ParseError("regions nest deeper than the reader follows", where=path,
                         fix="nest fewer scf.for / scf.if levels (a few hundred are fine)") from None
    except SYNTAX_SLIPS as e:
        if isinstance(e, PtoPipeError):
            raise
        raise malformed(e, path) from None


def _read_program(text: str, path: str) -> Program:
    types = _Types(path)
    top = parse_tree(text, path)
    funcs, arch = {}, None
    stmts = []
    for s in top:
        if s.name in ("module", "builtin.module"):
            m = re.search(r'target_arch"?\s*=\s*"(\w+)"', " ".join(t.text for t in s.toks))
            arch = m.group(1) if m else arch
            for r in s.regions:
                for b in r:
                    stmts.extend(b.stmts)
        else:
            stmts.append(s)
    for s in stmts:
        if s.name == "func.func":
            f = _func(s, types)
            if f.name in funcs:
                raise types.err(f"function @{f.name} defined twice", s.tok)
            funcs[f.name] = f
        elif s.name.startswith("pto.") and not s.results:
            continue                       # module-level markers (e.g. pto.tile_buf_config)
        else:
            raise types.err(f"{s.name} at module level is not supported", s.tok,
                            fix="put operations inside a func.func")
    if not funcs:
        raise ParseError("the file defines no func.func", where=path,
                         fix="a .pto file holds a module of func.func kernels")
    for f in funcs.values():
        _check_ops(f, funcs, types)
    return Program(path, funcs, arch, types)


def _walk(stmts):
    for s in stmts:
        yield s
        for r in s.regions:
            for b in r:
                yield from _walk(b.stmts)


def _check_ops(f: Func, funcs: dict, types: _Types) -> None:
    for s in _walk(f.body):
        if s.name not in HANDLERS and _catalogue_name(s.name) is None:
            raise types.err(f"unknown operation {s.name!r}: ptopipe does not support it", s.tok,
                            fix="rewrite it with supported ops, or report it so it can be added "
                                "(docs/pto.md lists what is read)")
        if s.name == "func.call":
            sym = s.symbol()
            if sym is None or sym not in funcs:
                raise types.err(f"func.call of @{sym or '?'}, which the file does not define",
                                s.tok, fix="define the callee in the same module")
            f.calls.append(sym)


def _catalogue_name(name: str) -> str | None:
    """``pto.tadd`` -> ``TADD``; ``pto.tmatmul.acc`` -> ``TMATMUL_ACC`` if the catalogue
    (and so :mod:`ptopipe.isa`) has it."""
    if not name.startswith("pto.t"):
        return None
    isa_name = name[4:].replace(".", "_").upper()
    return isa_name if isa_name in CATALOGUE and hasattr(isa, isa_name) else None


# -- kinds and cores -----------------------------------------------------------------------------
def _tile_locs(f: Func, funcs: dict, types: "_Types", seen=None) -> dict:
    """TileType -> the first statement making a tile of it (in f and its callees)."""
    seen = set() if seen is None else seen
    if f.name in seen:
        return {}
    seen.add(f.name)
    out = {}
    for s in _walk(f.body):
        if s.name in ("pto.alloc_tile", "pto.declare_tile", "memref.alloc", "pto.tpop_from_aic",
                      "pto.tpop_from_aiv"):
            spec = types.spec_of(s)
            if spec is not None:
                out.setdefault(spec.loc, s)
        elif s.name == "func.call":
            callee = funcs[s.symbol()]
            if callee.kind is None:
                for k, v in _tile_locs(callee, funcs, types, seen).items():
                    out.setdefault(k, v)
    return out


MIXED = "mixed"      # the kind of a function that uses Cube and Vector tiles


def implied_kind(f: Func, funcs: dict, path: str, types: "_Types") -> tuple:
    """``(kind, warning)`` of a function without ``pto.kernel_kind``: 'cube' or 'vector' by
    its tiles; :data:`MIXED` with a warning when it uses both (no core of the device holds
    both: it runs on one core given both kinds of memory, as pto-isa's CPU simulator runs it)."""
    locs = _tile_locs(f, funcs, types)
    cube = [s for k, s in locs.items() if k in CUBE_LOCS]
    vec = locs.get(TileType.Vec)
    if cube and vec:
        c = cube[0]
        return MIXED, (
            f"{path}:{f.stmt.tok.line}:{f.stmt.tok.col}: @{f.name} uses Cube tiles ({c.name} at line "
            f"{c.tok.line}) and Vector tiles ({vec.name} at line {vec.tok.line}); no core of the device "
            "holds both, so it runs on one core given both kinds of memory, as pto-isa's CPU simulator "
            "runs it. On the device, split it into a cube and a vector function joined by a pipe "
            "(or write it as a mixed @pl.incore function and let `ptopipe compile` split it)")
    return ("cube" if cube else "vector"), None


# -- values ------------------------------------------------------------------------------------
class View:
    """A ``pto.make_tensor_view``: the GM tensor's base pointer, shape, strides (elements)."""
    __slots__ = ("ptr", "dtype", "shape", "strides", "name")

    def __init__(self, ptr, dtype, shape, strides, name):
        self.ptr, self.dtype, self.shape, self.strides, self.name = ptr, dtype, shape, strides, name


class Reserved:
    """A ``pto.reserve_buffer`` / ``import_reserved_buffer`` result: its local address."""
    __slots__ = ("addr", "name", "size")

    def __init__(self, addr, name, size):
        self.addr, self.name, self.size = addr, name, size

    def __int__(self):
        return self.addr


class PipeVal:
    """A pipe bound on this core (the init's result or the function's implicit pipe)."""
    __slots__ = ("handle", "dirs", "one_lane")

    def __init__(self, handle, dirs, one_lane):
        self.handle, self.dirs, self.one_lane = handle, dirs, one_lane


class _Return(Exception):
    def __init__(self, values):
        self.values = values


_ALL_SLOTS = 1 << 62


@dataclass
class RunPlan:
    """What runs on which core, decided once per program."""
    top: str
    cores: dict                         # 'aic' / 'aiv0' / 'aiv1' -> True
    notes: list


# -- the executor ------------------------------------------------------------------------------
class Frame:
    """One function's execution on one core."""

    def __init__(self, ex: "Executor", f: Func, args: list):
        self.ex, self.f = ex, f
        self.env = {}
        for (name, _ty, _tok), a in zip(f.params, args):
            self.env[name] = a


class Executor:
    """Executes a :class:`Program` on one core of a running cluster."""

    def __init__(self, prog: Program, core_name: str, plan: "Layout", one_lane: bool = False):
        self.prog, self.core_name, self.layout = prog, core_name, plan
        self.one_lane = one_lane        # every pipe moves whole tiles through AIV0 only (A5)
        self.core = None
        self.pipes = {}                 # Direction (C2V / V2C) -> PipeVal
        self.next_flag = 0
        self.printed = []
        self.pad_of = {}                # id(tile) -> its type's PadValue (what TFILLPAD fills with)

    # -- errors / locations
    def where(self, s: Stmt) -> str:
        return s.where(self.prog.path)

    def err(self, s: Stmt, msg: str, fix: str | None = None) -> KernelError:
        return KernelError(msg, where=self.where(s), fix=fix)

    def perr(self, tok, msg, fix=None) -> ParseError:
        return ParseError(msg, where=f"{self.prog.path}:{tok.line}:{tok.col}", fix=fix)

    # -- running
    def call(self, f: Func, args: list):
        fr = Frame(self, f, args)
        try:
            self.block(fr, f.body)
        except _Return as r:
            return r.values
        return []

    def block(self, fr: Frame, stmts, block_args=None):
        core = self.core
        path = self.prog.path
        for s in stmts:
            core.loc_override = SourceLoc(path, s.tok.line, s.tok.col, fr.f.name)
            h = HANDLERS.get(s.name)
            try:
                res = op_catalogue(self, fr, s) if h is None else h(self, fr, s)
            except SYNTAX_SLIPS as e:
                if isinstance(e, PtoPipeError):
                    raise
                raise malformed(e, path) from None
            if s.name == "scf.yield" or s.name == "scf.condition":
                return res
            if s.results:
                if res is None:
                    res = []
                elif not isinstance(res, list):
                    res = [res]
                if len(res) != len(s.results):
                    raise self.err(s, f"{s.name} gives {len(res)} values for {len(s.results)} results")
                for n, v in zip(s.results, res):
                    fr.env[n] = v
                if s.result_group is not None:
                    fr.env[s.result_group] = res[0]
        return None

    def val(self, fr: Frame, tok: Token):
        try:
            return fr.env[tok.text]
        except KeyError:
            raise self.perr(tok, f"{tok.text} is used before it is defined in @{fr.f.name}",
                            "define the value before this op (SSA values are visible after their "
                            "definition, in the same or an enclosing region)") from None

    def ival(self, fr: Frame, tok: Token) -> int:
        v = self.val(fr, tok)
        if isinstance(v, Reserved):
            return v.addr
        if isinstance(v, (bool, np.bool_)):
            return int(v)
        if isinstance(v, (int, np.integer)):
            return int(v)
        if isinstance(v, (float, np.floating)) and float(v).is_integer():
            return int(v)
        raise self.perr(tok, f"{tok.text} is not an integer here (it is {type(v).__name__})")


# -- tile placement ------------------------------------------------------------------------------
@dataclass
class Layout:
    """Addresses the executor gives: reserve buffers by (function, name) and tiles placed
    per allocation site (one address per ``alloc_tile`` statement without ``addr``)."""
    reserves: dict = field(default_factory=dict)       # (func, name) -> (addr, size, loc)
    sites: dict = field(default_factory=dict)          # id(stmt) -> addr
    tops: dict = field(default_factory=dict)           # (core kind, TileType) -> next free byte
    active: dict = field(default_factory=dict)         # (core kind, TileType) -> [(lo, hi, last use)]


def _align(n: int, a: int = TILE_ALIGN) -> int:
    return (n + a - 1) // a * a


def plan_layout(prog: Program, platform) -> Layout:
    """Place every reserve buffer (an explicit ``base`` kept, else packed from 0) and every
    alloc site without an address, first fit by liveness (PlanMemory's job in ptoas): a
    site's tile lives from its statement to its last use, to the end of every loop that
    uses it without defining it.  Each function's tiles get their own arena, above the
    reserves and the explicitly placed tiles of its memory, so a callee never lands on its
    caller's tiles."""
    lay = Layout()
    fixed = {}                                   # (kind, loc) -> [(lo, hi)] never reused
    for f in prog.funcs.values():
        kind = f.kind or "?"
        for s in _walk(f.body):
            if s.name == "pto.reserve_buffer":
                name = _str_attr(s, "name", prog)
                size = _int_attr(s, "size", prog)
                loc = _space_attr(s, "location") or (TileType.Vec if f.kind != "cube" else TileType.Mat)
                base = s.attr("base")
                auto = s.attr("auto")
                key = (kind, loc)
                if base is not None and not (auto and auto[0].text == "true"):
                    addr = int(base[0].text)
                else:
                    addr = lay.tops.get(key, 0)
                lay.reserves[(f.name, name)] = (addr, size, loc)
                fixed.setdefault(key, []).append((addr, addr + size))
                lay.tops[key] = max(lay.tops.get(key, 0), _align(addr + size))
    for f in prog.funcs.values():
        kind = f.kind or "?"
        order, ranges = _live_ranges(f, prog)
        arena = {}                                   # (kind, loc) -> the top of this function's tiles
        for s, (lo, hi) in sorted(ranges.items(), key=lambda kv: kv[1][0]):
            spec = order[s]
            key = (kind, spec.loc)
            base = lay.tops.get(key, 0)
            # sites come in order of their first statement: a tile dead before this one
            # starts is dead for every later one too, and leaves the list for good
            live = lay.active[key] = [x for x in lay.active.get(key, []) if x[2] >= lo]
            taken = [(a, b) for a, b, _ in live]
            addr = base
            for a, b in sorted(taken + fixed.get(key, [])):
                if addr + spec.nbytes <= a or addr >= b:
                    continue
                addr = max(addr, _align(b))
            lay.sites[s] = addr
            lay.active[key].append((addr, addr + spec.nbytes, hi))
            arena[key] = max(arena.get(key, 0), addr + spec.nbytes)
        for key, top in arena.items():               # the next function's arena starts above
            lay.tops[key] = max(lay.tops.get(key, 0), _align(top))
        lay.active.clear()
    return lay


def _live_ranges(f: Func, prog: Program, placed: bool = False) -> tuple:
    """Per alloc site without ``addr`` (with one, when ``placed``), by ``id(stmt)``: its
    TileSpec and its live range ``(first, last)`` in the function's pre-order statement
    numbering."""
    index, loops_of, span = {}, {}, {}
    uses = {}
    k = 0

    def visit(stmts, loops):
        nonlocal k
        for s in stmts:
            i = index[id(s)] = k
            k += 1
            loops_of[id(s)] = loops
            for v in s.used():
                uses.setdefault(v.split("#")[0], []).append(id(s))
            inner = loops + ((id(s),) if s.name in ("scf.for", "scf.while") else ())
            for r in s.regions:
                for b in r:
                    visit(b.stmts, inner)
            span[id(s)] = (i, k - 1)
    visit(f.body, ())
    specs, ranges = {}, {}
    for s in _walk(f.body):
        if s.name not in ("pto.alloc_tile", "memref.alloc") or s.has_key("addr") != placed \
                or not s.results:
            continue
        spec = prog.types.spec_of(s)
        if spec is None:
            continue
        lo = index[id(s)]
        hi = lo
        mine = set(loops_of[id(s)])
        for u in uses.get(s.results[0], []):
            hi = max(hi, span[u][1])
            for loop in loops_of[u]:
                if loop not in mine:
                    hi = max(hi, span[loop][1])
        specs[id(s)] = spec
        ranges[id(s)] = (lo, hi)
    return specs, ranges


def alias_notes(prog: Program) -> list:
    """Tiles placed at explicit addresses (``alloc_tile addr = %c``) that overlap while both
    are live: on the device the later one's writes clobber the earlier one, and so they do
    here.  The same range named twice (one buffer, two names: an in-place op) is not one."""
    notes = []
    for f in prog.funcs.values():
        consts = {}
        for s in _walk(f.body):
            if s.name == "arith.constant" and s.results:
                try:
                    consts[s.results[0]] = int(s.text().split(":")[0])
                except ValueError:
                    pass
        specs, ranges = _live_ranges(f, prog, placed=True)
        sites = {id(s): s for s in _walk(f.body)}
        placed = []
        for k, spec in specs.items():
            a = sites[k].attr("addr")[0].text
            if a in consts:
                placed.append((k, spec, consts[a]))
        for i, (k1, t1, a1) in enumerate(placed):
            for k2, t2, a2 in placed[i + 1:]:
                if t1.loc is not t2.loc or (a1, t1.nbytes) == (a2, t2.nbytes):
                    continue
                if a1 + t1.nbytes <= a2 or a2 + t2.nbytes <= a1:
                    continue
                (lo1, hi1), (lo2, hi2) = ranges[k1], ranges[k2]
                if hi1 < lo2 or hi2 < lo1:
                    continue
                s1, s2 = sites[k1], sites[k2]
                notes.append(f"{s2.where(prog.path)}: tile {s2.results[0]} [{a2}, {a2 + t2.nbytes}) of "
                             f"{t2.loc.value} overlaps {s1.results[0]} [{a1}, {a1 + t1.nbytes}) "
                             f"(line {s1.tok.line}) while both are live: writes to one change the other, "
                             "as on the device")
    return notes


def _str_attr(s: Stmt, key: str, prog: Program) -> str:
    v = s.attr(key)
    if not v or v[0].kind != "string":
        raise ParseError(f"{s.name} needs {key} = \"...\"", where=s.where(prog.path))
    return v[0].text[1:-1]


def _int_attr(s: Stmt, key: str, prog: Program, default=None) -> int:
    v = s.attr(key)
    if not v:
        if default is not None:
            return default
        raise ParseError(f"{s.name} needs the attribute {key}", where=s.where(prog.path))
    try:
        return int(v[0].text)
    except ValueError:
        raise ParseError(f"{s.name}: {key} = {v[0].text} is not an integer",
                         where=f"{prog.path}:{v[0].line}:{v[0].col}") from None


def _space_attr(s: Stmt, key: str):
    v = s.attr(key)
    if not v:
        return None
    m = re.search(r"<(\w+)>", "".join(t.text for t in v))
    return LOC.get(m.group(1)) if m else None


# -- op handlers ------------------------------------------------------------------------------------
def _res_type(ex, s: Stmt):
    """The op's result type: after its top-level ``:`` (``: T`` / ``: (A) -> T``) or, with
    no ``:``, after its last top-level ``->``."""
    tys = s.types() or _arrow_type(s)
    if not tys:
        raise ex.perr(s.tok, f"{s.name} needs its result type (': T' or '-> T')")
    return ex.prog.types.parse(tys[-1])


def _arrow_type(s: Stmt) -> list:
    parts = split_top(s.toks, ("->",))
    return [parts[-1]] if len(parts) > 1 else []


def h_constant(ex, fr, s):
    toks = s.toks
    if not toks:
        raise ex.perr(s.tok, "arith.constant without a value")
    v = toks[0].text
    ty = ScalarT(toks[2].text) if len(toks) >= 3 and toks[1].text == ":" else ScalarT("i1")
    if v in ("true", "false"):
        return 1 if v == "true" else 0
    if v.startswith("dense"):
        raise ex.perr(toks[0], "arith.constant dense<...> is not supported")
    try:
        if ty.is_float:
            return float(v) if not v.startswith("0x") else float(np.frombuffer(
                int(v, 16).to_bytes(ELEMENT[ty.name].itemsize, "little"), ELEMENT[ty.name])[0])
        return wrap(int(v, 0) if v.startswith("0x") else int(float(v)) if "." in v or "e" in v else int(v), ty)
    except (ValueError, KeyError):
        raise ex.perr(toks[0], f"arith.constant value {v!r} is not a {ty.name}") from None


_INT_OPS = {
    "arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b, "arith.muli": lambda a, b: a * b,
    "arith.andi": lambda a, b: a & b, "arith.ori": lambda a, b: a | b, "arith.xori": lambda a, b: a ^ b,
    "arith.maxsi": max, "arith.minsi": min, "arith.maxui": max, "arith.minui": min,
}
_FLOAT_OPS = {
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
    tys = s.types()
    if not tys:
        raise ex.perr(s.tok, f"{s.name} needs its type after ':'")
    t = ex.prog.types.parse(tys[-1])
    if not isinstance(t, ScalarT):
        raise ex.perr(s.tok, f"{s.name} on a {t} value is not supported (scalars only)")
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
        if name == "arith.cmpf":
            if pred in ("false", "true"):
                return int(pred == "true")
            if (a != a or b != b):
                return int(pred.startswith("u") or pred == "une")
            pred = _CMPF.get(pred)
            if pred is None:
                raise ex.perr(s.toks[0], f"arith.cmpf predicate {s.toks[0].text} is not supported")
        elif pred.startswith("u"):
            a, b = _unsigned(a, t), _unsigned(b, t)
        f = _CMPI.get(pred)
        if f is None:
            raise ex.perr(s.toks[0], f"arith.cmpi predicate {pred} is not supported")
        return int(f(a, b))
    if name in ("arith.negf",):
        return -ex.val(fr, ops[0])
    if name == "arith.select":
        c, a, b = (ex.val(fr, o) for o in ops[:3])
        return a if c else b
    if name in _FLOAT_OPS:
        return float(_FLOAT_OPS[name](float(ex.val(fr, ops[0])), float(ex.val(fr, ops[1]))))
    a, b = ex.ival(fr, ops[0]), ex.ival(fr, ops[1])
    if name in _INT_OPS:
        if name in ("arith.maxui", "arith.minui"):
            a, b = _unsigned(a, t), _unsigned(b, t)
        return wrap(_INT_OPS[name](a, b), t)
    if name in ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi",
                "arith.ceildivsi", "arith.ceildivui"):
        if b == 0:
            raise ex.err(s, f"{name}: division by zero ({ops[1].text} is 0)",
                         "guard the division; the device result is undefined")
        if name.endswith("ui"):
            a, b = _unsigned(a, t), _unsigned(b, t)
        if name in ("arith.divsi", "arith.divui"):
            q = abs(a) // abs(b)
            return wrap(q if (a >= 0) == (b >= 0) else -q, t)
        if name in ("arith.remsi", "arith.remui"):
            r = abs(a) % abs(b)
            return wrap(r if a >= 0 else -r, t)
        if name == "arith.floordivsi":
            return wrap(a // b, t)
        return wrap(-((-a) // b), t)
    if name in ("arith.shli", "arith.shrsi", "arith.shrui"):
        bits = t.bits or 64
        if not 0 <= b < bits:
            raise ex.err(s, f"{name}: shift by {b} of a {bits}-bit value",
                         f"shift by 0..{bits - 1}; a larger shift is poison in MLIR")
        if name == "arith.shli":
            return wrap(a << b, t)
        if name == "arith.shrsi":
            return wrap(a >> b, t)
        return wrap(_unsigned(a, t) >> b, t)
    raise ex.perr(s.tok, f"{name} is not supported")


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
    return wrap(int(v), dst)


def h_for(ex, fr, s):
    toks = s.toks
    iv = toks[0]
    k = [i for i, t in enumerate(toks) if t.text in ("=", "to", "step")]
    lo = ex.ival(fr, toks[k[0] + 1])
    hi = ex.ival(fr, toks[k[1] + 1])
    st = ex.ival(fr, toks[k[2] + 1])
    if st <= 0:
        raise ex.err(s, f"scf.for step {st} is not positive", "give a step >= 1")
    inits = []
    grp = s.group("iter_args")
    names = []
    if grp:
        for g in split_top(grp):
            names.append(g[0].text)
            inits.append(ex.val(fr, g[2]))
    body = s.regions[0][0]
    vals = inits
    for i in range(lo, hi, st):
        fr.env[iv.text] = i
        for n, v in zip(names, vals):
            fr.env[n] = v
        out = ex.block(fr, body.stmts)
        vals = out if out is not None else vals
    return list(vals) if names else None


def h_if(ex, fr, s):
    c = ex.val(fr, s.values()[0])
    branch = s.regions[0] if c else (s.regions[1] if len(s.regions) > 1 else None)
    if branch is None:
        return None if not s.results else []
    out = ex.block(fr, branch[0].stmts)
    return out


def h_while(ex, fr, s):
    toks = s.toks
    grp = toks[1:next(i for i, t in enumerate(toks) if t.text == ")")] if toks and toks[0].text == "(" else []
    names, vals = [], []
    for g in split_top(grp):
        names.append(g[0].text)
        vals.append(ex.val(fr, g[2]))
    before, after = s.regions[0], s.regions[1]
    guard = 0
    while True:
        for n, v in zip(names, vals):
            fr.env[n] = v
        bb = before[0]
        for (n, _t), v in zip(bb.args, vals):
            fr.env[n] = v
        cond, passed = ex.block(fr, bb.stmts)
        if not cond:
            return passed
        ab = after[-1]
        for (n, _t), v in zip(ab.args, passed):
            fr.env[n] = v
        vals = ex.block(fr, ab.stmts) or []
        guard += 1


def h_condition(ex, fr, s):
    vs = s.values()
    return ex.val(fr, vs[0]), [ex.val(fr, v) for v in vs[1:]]


def h_yield(ex, fr, s):
    return [ex.val(fr, v) for v in s.values()]


def h_return(ex, fr, s):
    raise _Return([ex.val(fr, v) for v in s.values()])


def h_call(ex, fr, s):
    sym = next(t for t in s.toks if t.kind == "symbol")
    callee = ex.prog.funcs[sym.text[1:]]
    args = [ex.val(fr, v) for v in s.values()]
    if len(args) != len(callee.params):
        raise ex.perr(sym, f"func.call {sym.text} passes {len(args)} arguments; @{callee.name} "
                           f"takes {len(callee.params)}")
    if callee.kind is not None and not _kind_runs_here(callee.kind, ex.core_name):
        return [None] * len(s.results)
    return ex.call(callee, args)


def _kind_runs_here(kind: str, core_name: str) -> bool:
    return (kind in ("cube", MIXED)) == (core_name == "aic")


def h_view(ex, fr, s):
    vs = s.values()
    base = ex.val(fr, vs[0])
    ty = _res_type(ex, s)
    shape = [ex.ival(fr, t) for t in (s.attr("shape") or [])[1:-1] if t.kind == "value"] or \
        [int(t.text) for t in (s.attr("shape") or [])[1:-1] if t.kind == "word"]
    strides_t = s.attr("strides")
    strides = [ex.ival(fr, t) if t.kind == "value" else int(t.text)
               for t in (strides_t or [])[1:-1] if t.kind in ("value", "word")]
    if not strides:
        strides = list(np.cumprod([1] + shape[::-1][:-1])[::-1])
    ptr = base.data() if isinstance(base, isa.GlobalTensor) else base
    return View(ptr, ty[1], tuple(shape), tuple(int(x) for x in strides), vs[0].text)


def h_partition(ex, fr, s):
    vs = s.values()
    v = ex.val(fr, vs[0])
    offs = [ex.ival(fr, t) if t.kind == "value" else int(t.text)
            for t in (s.attr("offsets") or [])[1:-1] if t.kind in ("value", "word")]
    sizes = [ex.ival(fr, t) if t.kind == "value" else int(t.text)
             for t in (s.attr("sizes") or [])[1:-1] if t.kind in ("value", "word")]
    if not isinstance(v, View):
        raise ex.perr(vs[0], f"pto.partition_view of {vs[0].text}, which is not a tensor view")
    if len(offs) != len(v.shape) or len(sizes) != len(v.shape):
        raise ex.perr(s.tok, f"pto.partition_view: {len(offs)} offsets and {len(sizes)} sizes for a "
                             f"rank-{len(v.shape)} view", "give one offset and one size per dimension")
    for o, z, n in zip(offs, sizes, v.shape):
        if o < 0 or z < 0 or o + z > n:
            raise ex.err(s, f"pto.partition_view of {v.name}: window offsets {offs} sizes {sizes} "
                            f"leave the view's shape {list(v.shape)}",
                         "keep offset + size within each dimension")
    off = sum(o * st for o, st in zip(offs, v.strides))
    return isa.GlobalTensor(v.ptr + off, tuple(sizes), tuple(v.strides), name=v.name)


def _tile_of(ex, s, spec: TileSpec, addr, fr):
    vr = spec.v_rows if spec.v_rows is not None else spec.rows
    vc = spec.v_cols if spec.v_cols is not None else spec.cols
    if spec.v_rows is None or spec.v_cols is None:
        vrt, vct = s.attr("valid_row"), s.attr("valid_col")
        if vrt:
            vr = ex.ival(fr, vrt[0])
        if vct:
            vc = ex.ival(fr, vct[0])
    name = s.results[0] if s.results else None
    t = isa.Tile(spec.loc, spec.dtype, spec.rows, spec.cols, blayout=spec.blayout, slayout=spec.slayout,
                 valid_rows=vr, valid_cols=vc, addr=addr, name=name)
    if spec.pad is not None:
        ex.pad_of[id(t)] = spec.pad
    return t


def h_alloc(ex, fr, s):
    spec = _res_type(ex, s)
    if isinstance(spec, tuple) and spec[0] == "memref":
        spec = spec[1]
        if not isinstance(spec, TileSpec):
            raise ex.perr(s.tok, "memref.alloc in GM is not supported", "pass GM memory as a parameter")
    if not isinstance(spec, TileSpec):
        raise ex.perr(s.tok, f"{s.name} needs a !pto.tile_buf type")
    a = s.attr("addr")
    addr = ex.ival(fr, a[0]) if a else ex.layout.sites.get(id(s))
    if s.name == "pto.declare_tile":
        addr = None
    return _tile_of(ex, s, spec, addr, fr)


def h_tassign(ex, fr, s):
    vs = s.values()
    t = ex.val(fr, vs[0])
    isa.TASSIGN(t, ex.ival(fr, vs[1]))
    return t


def h_set_validshape(ex, fr, s):
    vs = s.values()
    t = ex.val(fr, vs[0])
    t.SetValid(ex.ival(fr, vs[1]), ex.ival(fr, vs[2]))


def h_io(ex, fr, s):
    ins, outs = s.group("ins"), s.group("outs")
    if ins is None or outs is None:
        raise ex.perr(s.tok, f"{s.name} needs ins(...) outs(...)")
    src, dst = ex.val(fr, s.values(ins)[0]), ex.val(fr, s.values(outs)[0])
    if s.name == "pto.tload":
        return isa.TLOAD(dst, src)
    return isa.TSTORE(dst, src)


def _attr_kwargs(ex, s: Stmt) -> dict:
    """Op attributes a catalogue instruction takes as keywords (``maskPattern``, ``isMSB``)."""
    out = {}
    v = s.attr("isMSB")                       # THISTOGRAM: the source's upper byte, or byte 0
    if v and v[0].text == "false":
        out["byte"] = HistByte.BYTE_0
    v = s.attr("maskPattern")
    if v:
        m = re.search(r"<(\w+)>", "".join(t.text for t in v))
        try:
            out["mask_pattern"] = MaskPattern[m.group(1)]
        except (AttributeError, KeyError):
            raise ex.perr(v[0], f"maskPattern {''.join(t.text for t in v)} is not a mask pattern") from None
    return out


def _attr_args(ex, s: Stmt) -> list:
    """Op attributes a catalogue instruction takes after its operands (rounding mode)."""
    out = []
    for key in ("rmode", "round_mode", "mode"):
        v = s.attr(key)
        if v:
            m = re.search(r"(CAST_)?([A-Z]+)\s*>?$", "".join(t.text for t in v).rstrip(">"))
            rm = ROUND.get(m.group(2)) if m else None
            if rm is None:
                raise ex.perr(v[0], f"{key} {''.join(t.text for t in v)} is not supported")
            out.append(rm)
    return out


#: catalogue instructions whose pto-isa argument order is not outs(...) then ins(...): their
#: operands from (outs, ins) - two destinations each
CPP_ORDER = {
    "TINTERLEAVE": lambda o, i: [o[1], o[0], *reversed(i)],      # (dst1, dst0, src1, src0)
    "TDEINTERLEAVE": lambda o, i: [o[1], o[0], *reversed(i)],    # (dst1, dst0, src1, src0 | src)
    "TPARTARGMAX": lambda o, i: [o[0], *i[:2], o[1], *i[2:]],    # (dstVal, src0Val, src1Val,
    "TPARTARGMIN": lambda o, i: [o[0], *i[:2], o[1], *i[2:]],    #  dstIdx, src0Idx, src1Idx)
}


#: operands (destination included) the ISA instruction of a catalogue form takes; a .pto op
#: may add pto-isa scratch tiles after them (``pto.trsqrt ins(%src, %tmp)``), which the
#: simulator does not need
ARITY = {"binary": 3, "scalar": 3, "unary": 2, "col_reduce": 2, "row_expand": 3, "row_bcast": 2,
         "fill": 2, "convert": 2, "matmul": 3, "matmul_acc": 4, "matmul_bias": 4, "move": 2}


def op_catalogue(ex, fr, s):
    """``pto.tX ins(srcs...) outs(dsts...)`` -> ``isa.TX(*dsts, *srcs, *attrs)``."""
    name = _catalogue_name(s.name)
    ins, outs = s.group("ins"), s.group("outs")
    if outs is None:
        raise ex.perr(s.tok, f"{s.name} needs outs(...)", "write pto.tX ins(...) outs(%dst : type)")
    dsts = [ex.val(fr, t) for t in s.values(outs)]
    srcs = [ex.val(fr, t) for t in (s.values(ins) if ins else [])]
    order = CPP_ORDER.get(name)
    operands = dsts + srcs if order is None or len(dsts) != 2 else order(dsts, srcs)
    op = CATALOGUE[name]
    n = ARITY.get(op.form)
    if n is not None and len(operands) > n:
        extra = operands[n:]
        if all(isinstance(x, isa.Tile) for x in extra):
            operands = operands[:n]
    if op.form == "scalar" and len(operands) == 3 and not isinstance(operands[1], isa.Tile) \
            and isinstance(operands[2], isa.Tile):
        return _scalar_first(ex, s, name, *operands)
    if name.startswith("TFILLPAD") and id(operands[0]) in ex.pad_of:
        operands.append(ex.pad_of[id(operands[0])])     # pto-isa: the destination type's PadValue
    return getattr(isa, name)(*operands, *_attr_args(ex, s), **_attr_kwargs(ex, s))


#: scalar-first forms ``s op tile`` of the catalogue's scalar ops: the tile op that gives
#: them once the destination holds the scalar (``TDIVS(dst, s, src)``: dst = s / src)
_SCALAR_FIRST = {"TDIVS": "TDIV", "TSUBS": "TSUB", "TADDS": "TADD", "TMULS": "TMUL",
                 "TMAXS": "TMAX", "TMINS": "TMIN"}


def _scalar_first(ex, s, name, dst, scalar, src):
    """``pto.tdivs ins(%s, %tile)``: dst = scalar / tile, as the destination filled with the
    scalar, then the tile op (exact: the scalar is a value of the tile's dtype)."""
    if name not in _SCALAR_FIRST:
        raise ex.perr(s.tok, f"{s.name} with the scalar first is not supported",
                      f"write {s.name} ins(%tile, %scalar)")
    if dst is src:
        raise ex.err(s, f"{s.name} scalar-first in place (the destination is the source)",
                     "write the result to another tile")
    isa.TEXPANDS(dst, scalar)
    return getattr(isa, _SCALAR_FIRST[name])(dst, dst, src)


def h_eventid_array(ex, fr, s):
    """``pto.declare_eventid_array -> !pto.eventid_array<N>``: N event ids, 0 until set."""
    ty = _arrow_type(s) or s.types()
    n = int(re.search(r"<(\d+)>", "".join(t.text for t in ty[-1])).group(1)) if ty else 8
    return [[0] * n]                       # one result: the array


def _array_index(ex, fr, s):
    vs = s.values()
    arr, idx = ex.val(fr, vs[0]), ex.ival(fr, vs[1])
    if not 0 <= idx < len(arr):
        raise ex.err(s, f"{s.name}: index {idx} of an event-id array of {len(arr)}")
    return arr, idx, vs


def h_eventid_get(ex, fr, s):
    arr, idx, _ = _array_index(ex, fr, s)
    return arr[idx]


def h_eventid_set(ex, fr, s):
    arr, idx, vs = _array_index(ex, fr, s)
    arr[idx] = ex.ival(fr, vs[2])


def h_section(ex, fr, s):
    """``pto.section.cube { ... }`` / ``pto.section.vector { ... }``: the region runs on that
    kind of core only (ptoas's ``#if defined(__DAV_CUBE__)`` / ``__DAV_VEC__``)."""
    if _kind_runs_here("cube" if s.name.endswith("cube") else "vector", ex.core_name):
        ex.block(fr, s.regions[0][0].stmts)


def h_addptr(ex, fr, s):
    """``%q = pto.addptr %p, %n``: the GM pointer ``n`` elements on (bounded by its tensor)."""
    vs = s.values()
    base = ex.val(fr, vs[0])
    ptr = base.data() if isinstance(base, isa.GlobalTensor) else base
    return ptr + ex.ival(fr, vs[1])


def _colon_list(ex, fr, s, key):
    """``key: [%a, 4, ...]`` of ``memref.reinterpret_cast`` -> the integers."""
    toks = s.toks
    for i, t in enumerate(toks[:-2]):
        if t.text == key and toks[i + 1].text == ":" and toks[i + 2].text == "[":
            out, j = [], i + 3
            while toks[j].text != "]":
                if toks[j].kind == "value":
                    out.append(ex.ival(fr, toks[j]))
                elif toks[j].kind == "word":
                    out.append(int(toks[j].text))
                j += 1
            return out
    raise ex.perr(s.tok, f"{s.name} needs {key}: [...]")


def h_reinterpret(ex, fr, s):
    """``memref.reinterpret_cast %m to offset: [o], sizes: [...], strides: [...]``: a GM
    window of the memref's tensor (elements from its base), as a partition view is."""
    base = ex.val(fr, s.values()[0])
    if not isinstance(base, isa.GlobalTensor):
        raise ex.perr(s.tok, "memref.reinterpret_cast of a tile is not supported (GM memrefs only)")
    (off,), sizes, strides = (_colon_list(ex, fr, s, k) for k in ("offset", "sizes", "strides"))
    return isa.GlobalTensor(base.data() + off, tuple(sizes), tuple(strides), name=base.name)


def h_bind_tile(ex, fr, s):
    """``%v = pto.bind_tile %buf, %rows, %cols {config}``: the buffer as a tile whose valid
    region is rows x cols (the same bytes)."""
    vs = s.values()
    src = ex.val(fr, vs[0])
    t = isa.Tile(src.loc, src.dtype, src.rows, src.cols, layout=src.layout, addr=src.addr,
                 name=s.results[0] if s.results else None)
    if len(vs) >= 3:
        t.SetValid(ex.ival(fr, vs[1]), ex.ival(fr, vs[2]))
    return t


def h_reshape(ex, fr, s):
    """``pto.treshape ins(%src) outs(%dst)``, or the SSA form ``%r = pto.treshape %src : A -> B``:
    a tile of type B over the source's bytes (TRESHAPE reinterprets, it does not copy)."""
    if s.group("outs") is not None:
        return op_catalogue(ex, fr, s)
    src = ex.val(fr, s.values()[0])
    spec = _res_type(ex, s)
    if not isinstance(spec, TileSpec):
        raise ex.perr(s.tok, "pto.treshape gives a !pto.tile_buf")
    dst = _tile_of(ex, s, spec, src.addr, fr)
    isa.TRESHAPE(dst, src)
    return dst


def h_set_ffts(ex, fr, s):
    """``pto.set_ffts %base``: A2A3's FFTS base address for cross-core flags.  The simulated
    cluster's flags need no address; the operand is read (it must be defined)."""
    for v in s.values():
        ex.val(fr, v)


def h_buffer_token(ex, fr, s):
    """``pto.get_buf`` / ``pto.rls_buf [op type, id]``: A5's buffer tokens between two pipes
    of a core.  The scoreboard already orders every same-core dependency (``sync=auto``), so
    the tokens add no order the run lacks; their operands are checked."""
    text = "".join(t.text for t in s.toks)
    if not _OP_TYPE_RE.search(text) and not _PIPE_RE.search(text):
        raise ex.perr(s.tok, f"{s.name} needs a pipe or sync op type, e.g. [#pto.pipe_event_type<TLOAD>, 0]")


def h_subblock(ex, fr, s):
    return isa.get_subblockid()


def h_block_idx(ex, fr, s):
    return 0


def h_block_num(ex, fr, s):
    return 1


def h_tprint(ex, fr, s):
    vs = s.values(s.group("ins")) if s.group("ins") else s.values()
    for v in vs:
        x = ex.val(fr, v)
        core = ex.core
        if isinstance(x, isa.Tile):
            arr = x.array.copy()
            text = f"[{core.name} {ex.where(s)}] {v.text} = {np.array2string(arr, threshold=64)}"
        else:
            text = f"[{core.name} {ex.where(s)}] {v.text} = {x}"
        ex.printed.append((core.clock, core.name, text))


_PIPE_RE = re.compile(r"PIPE_[A-Z0-9]+")
_EVENT_RE = re.compile(r"EVENT_ID(\d+)")
#: ptoas's SyncOpType (``#pto.pipe_event_type<...>`` / ``#pto.sync_op_type<...>``) -> the pipe
#: it runs on (PTOAS ``mapSyncOpTypeToPipe``)
SYNC_OP_PIPE = {"TLOAD": "PIPE_MTE2", "TSTORE_VEC": "PIPE_MTE3", "TSTORE_ACC": "PIPE_FIX",
                "TMOV_M2L": "PIPE_MTE1", "TMOV_M2B": "PIPE_MTE1", "TMOV_M2S": "PIPE_FIX",
                "TMOV_M2V": "PIPE_V", "TMOV_V2M": "PIPE_FIX", "TMATMUL": "PIPE_M", "TVEC": "PIPE_V",
                "TVECWAIT_EVENT": "PIPE_V"}
_OP_TYPE_RE = re.compile(r"(?:pipe_event_type|sync_op_type)<(\w+)>")


def h_event(ex, fr, s):
    text = " ".join(t.text for t in s.toks)
    text = _OP_TYPE_RE.sub(lambda m: SYNC_OP_PIPE.get(m.group(1), m.group(0)), text.replace(" ", ""))
    pipes = _PIPE_RE.findall(text)
    src = s.attr("src")
    dst = s.attr("dst")
    if src and dst:
        ends = [_OP_TYPE_RE.sub(lambda m: SYNC_OP_PIPE.get(m.group(1), m.group(0)), "".join(t.text for t in x))
                for x in (src, dst)]
        pipes = [m.group(0) for m in (_PIPE_RE.search(e) for e in ends) if m]
    if s.name in ("pto.barrier", "pto.pipe_barrier", "pto.barrier_sync"):
        if not pipes:               # ``pto.barrier_sync[<TVEC>]``: a sync op type
            m = re.search(r"<(\w+)>", text)
            pipes = [SYNC_OP_PIPE.get(m.group(1), "PIPE_ALL")] if m else []
        isa.pipe_barrier(SyncPipe(pipes[0] if pipes else "PIPE_ALL"))
        return None
    if len(pipes) < 2:
        raise ex.perr(s.tok, f"{s.name} needs a source and a destination pipe")
    m = _EVENT_RE.search(text)
    vals = s.values()
    if m:
        eid = int(m.group(1))
    elif vals:
        eid = ex.ival(fr, vals[-1])
        if not 0 <= eid < 8:
            raise ex.err(s, f"{s.name}: event id {eid} ({vals[-1].text}) is not EVENT_ID0..7",
                         "use an event id from 0 to 7")
    else:
        raise ex.perr(s.tok, f"{s.name} needs an event id")
    fn = isa.set_flag if s.name in ("pto.record_event", "pto.set_flag", "pto.set_flag_dyn") else isa.wait_flag
    fn(SyncPipe(pipes[0]), SyncPipe(pipes[1]), eid)
    return None


# -- pipes ---------------------------------------------------------------------------------------
def h_reserve(ex, fr, s):
    name = _str_attr(s, "name", ex.prog)
    addr, size, _loc = ex.layout.reserves[(fr.f.name, name)]
    return Reserved(addr, name, size)


def h_import(ex, fr, s):
    name = _str_attr(s, "name", ex.prog)
    peer = s.attr("peer_func")
    if not peer or peer[0].kind != "symbol":
        raise ex.perr(s.tok, "pto.import_reserved_buffer needs peer_func = @function")
    key = (peer[0].text[1:], name)
    if key not in ex.layout.reserves:
        raise ex.perr(peer[0], f"@{key[0]} reserves no buffer named {name!r}",
                      "name a pto.reserve_buffer of the peer function")
    addr, size, _ = ex.layout.reserves[key]
    return Reserved(addr, name, size)


def _named_operand(ex, fr, s, key):
    v = s.attr(key)
    if not v:
        return None
    return ex.val(fr, v[0]) if v[0].kind == "value" else int(v[0].text)


def _init_pipe(ex, fr, s, dir_mask, slot_size, slot_num, local, flag, gm, c2v, v2c, nosplit):
    plat = ex.core.cluster.platform
    both = dir_mask in (3, 7)
    n = slot_num or plat.slot_num_for(both)
    one_lane = ex.one_lane or (bool(nosplit) and not both and plat.name == "a5")
    if flag is None:
        flag = ex.next_flag
    ways = [d for d in (Direction.DIR_C2V, Direction.DIR_V2C) if dir_mask & int(d)]
    from ..isa.pipe.protocol import cluster_model
    ex.next_flag = cluster_model(ex.core.cluster).next_flag_id(flag, len(ways), n)
    mask = dir_mask
    if not plat.ring_in_gm and gm is not None and s.name == "pto.initialize_l2g2l_pipe":
        mask = {1: 5, 2: 6, 3: 7}.get(dir_mask, dir_mask)      # A5: a ring asked for in GM
    buf = gm if (plat.ring_in_gm or mask in (5, 6, 7)) else None
    peers = (0,) if one_lane else (0, 1)
    cfg = isa.TPipe(flag, isa.Direction(mask), slot_size, n, local if local is not None else
                    isa.TPipe.__dataclass_fields__["local_slot_num"].default, peers=peers)
    handle = cfg(buf, int(c2v or 0), int(v2c or 0))
    pv = PipeVal(handle, ways, one_lane)
    for w in ways:
        ex.pipes[w] = pv
    return pv


def h_init(ex, fr, s):
    dir_mask = _int_attr(s, "dir_mask", ex.prog)
    slot_size = _int_attr(s, "slot_size", ex.prog)
    slot_num = _int_attr(s, "slot_num", ex.prog, 0) or None
    local = _int_attr(s, "local_slot_num", ex.prog, 0) or None
    fid = s.attr("id") or s.attr("flag_base")
    flag = int(fid[0].text) if fid else None
    ns = s.attr("nosplit")
    nosplit = bool(ns and ns[0].text == "true")
    if s.name in ("pto.initialize_l2g2l_pipe", "pto.initialize_l2l_pipe"):
        vs = [t for t in s.values()]
        vals = [ex.val(fr, v) for v in vs]
        gm = vals[0] if s.name == "pto.initialize_l2g2l_pipe" and vals else None
        locals_ = vals[1:] if gm is not None else vals
        c2v = locals_[0] if dir_mask & 1 and locals_ else 0
        v2c = locals_[-1] if dir_mask & 2 and locals_ else 0
    else:
        gm = _named_operand(ex, fr, s, "gm_slot_buffer")
        c2v = _named_operand(ex, fr, s, "c2v_consumer_buf")
        v2c = _named_operand(ex, fr, s, "v2c_consumer_buf")
    return _init_pipe(ex, fr, s, dir_mask, slot_size, slot_num, local, flag, gm, c2v, v2c, nosplit)


def _split(ex, s) -> TileSplitAxis:
    v = s.attr("split")
    try:
        return TileSplitAxis(int(v[0].text)) if v else TileSplitAxis.TILE_NO_SPLIT
    except ValueError:
        raise ex.perr(v[0], f"split = {v[0].text}: expected 0 (no split), 1 (up/down) or 2 (left/right)") from None


def _pipe(ex, fr, s, way: Direction, handle_tok=None) -> PipeVal:
    if handle_tok is not None:
        pv = ex.val(fr, handle_tok)
        if isinstance(pv, PipeVal):
            return pv
    pv = ex.pipes.get(way)
    if pv is None:
        raise ex.err(s, f"{s.name} on the {way.name[4:]} direction, which no pipe init of "
                        f"@{fr.f.name} has set up", "initialise the pipe first")
    return pv


def _way(ex, producer: bool) -> Direction:
    cube = ex.core_name == "aic"
    return Direction.DIR_C2V if producer == cube else Direction.DIR_V2C


def h_push(ex, fr, s):
    vs = s.values()
    tile = ex.val(fr, vs[0])
    pv = _pipe(ex, fr, s, _way(ex, True), vs[1] if len(vs) > 1 else None)
    return isa.TPUSH(pv.handle, tile, _split(ex, s))


def h_pop(ex, fr, s):
    pv = _pipe(ex, fr, s, _way(ex, False), next(iter(s.values()), None) if s.name == "pto.tpop" else None)
    if s.name == "pto.tpop" and not s.results:
        tile = ex.val(fr, s.values()[0])
        pv = _pipe(ex, fr, s, _way(ex, False), s.values()[1])
        isa.TPOP(pv.handle, tile, _split(ex, s))
        return None
    spec = _res_type(ex, s)
    if not isinstance(spec, TileSpec):
        raise ex.perr(s.tok, f"{s.name} gives a !pto.tile_buf")
    tile = _tile_of(ex, s, spec, None, fr)
    vs = s.values()
    if spec.v_rows is None and vs:
        tile.SetValid(ex.ival(fr, vs[-2]), ex.ival(fr, vs[-1]))
    isa.TPOP(pv.handle, tile, _split(ex, s))
    return tile


def h_free(ex, fr, s):
    vs = s.values()
    pv = _pipe(ex, fr, s, _way(ex, False), vs[0] if vs else None)
    return isa.TFREE(pv.handle, None, _split(ex, s))


HANDLERS = {
    "arith.constant": h_constant, "arith.select": h_arith, "arith.cmpi": h_arith, "arith.cmpf": h_arith,
    **{n: h_arith for n in list(_INT_OPS) + list(_FLOAT_OPS) + [
        "arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi",
        "arith.ceildivui", "arith.shli", "arith.shrsi", "arith.shrui", "arith.negf"]},
    **{n: h_cast for n in ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui",
                           "arith.trunci", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui",
                           "arith.extf", "arith.truncf")},
    "scf.for": h_for, "scf.if": h_if, "scf.while": h_while, "scf.condition": h_condition,
    "scf.yield": h_yield, "func.return": h_return, "return": h_return, "func.call": h_call,
    "pto.make_tensor_view": h_view, "pto.partition_view": h_partition,
    "pto.alloc_tile": h_alloc, "pto.declare_tile": h_alloc, "memref.alloc": h_alloc,
    "pto.tassign": h_tassign, "pto.set_validshape": h_set_validshape,
    "pto.tload": h_io, "pto.tstore": h_io, "pto.tprint": h_tprint,
    "pto.get_subblockid": h_subblock, "pto.get_subblock_idx": h_subblock,
    "pto.get_block_idx": h_block_idx, "pto.get_block_num": h_block_num,
    "pto.record_event": h_event, "pto.wait_event": h_event, "pto.barrier": h_event,
    "pto.pipe_barrier": h_event, "pto.barrier_sync": h_event, "pto.set_flag": h_event, "pto.wait_flag": h_event,
    "pto.set_flag_dyn": h_event, "pto.wait_flag_dyn": h_event,
    "pto.set_ffts": h_set_ffts, "pto.treshape": h_reshape, "pto.addptr": h_addptr, "memref.reinterpret_cast": h_reinterpret,
    "pto.bind_tile": h_bind_tile, "pto.get_buf": h_buffer_token, "pto.rls_buf": h_buffer_token,
    "pto.declare_eventid_array": h_eventid_array, "pto.eventid_array_get": h_eventid_get,
    "pto.eventid_array_set": h_eventid_set, "pto.section.cube": h_section, "pto.section.vector": h_section,
    "pto.reserve_buffer": h_reserve, "pto.import_reserved_buffer": h_import,
    "pto.aic_initialize_pipe": h_init, "pto.aiv_initialize_pipe": h_init,
    "pto.initialize_l2g2l_pipe": h_init, "pto.initialize_l2l_pipe": h_init,
    "pto.tpush_to_aiv": h_push, "pto.tpush_to_aic": h_push, "pto.tpush": h_push,
    "pto.tpop_from_aic": h_pop, "pto.tpop_from_aiv": h_pop, "pto.tpop": h_pop,
    "pto.tfree_from_aic": h_free, "pto.tfree_from_aiv": h_free, "pto.tfree": h_free,
}


# -- malformed operands -------------------------------------------------------------------------------
#: what reading an op's tokens raises when they are not spelled as the handler expects
SYNTAX_SLIPS = (IndexError, KeyError, ValueError, TypeError, AttributeError, StopIteration)


def malformed(e: Exception, path: str) -> ParseError:
    """A ParseError for an op whose operands did not read (``e`` raised while a handler or an
    analysis looked at a statement ``s``): located at the innermost such statement."""
    tb, stmt = e.__traceback__, None
    while tb is not None:
        cand = tb.tb_frame.f_locals.get("s")
        if isinstance(cand, Stmt):
            stmt = cand
        tb = tb.tb_next
    where = stmt.where(path) if stmt is not None else path
    what = stmt.name if stmt is not None else "the file"
    return ParseError(f"{what}: its operands, attributes or types do not read as ptoas writes them "
                      f"({type(e).__name__}: {e})", where=where,
                      fix="check the op's spelling against ptoas's: operands, ins(...) / outs(...), "
                          "attribute names and values, the type after ':'")


# -- running a file --------------------------------------------------------------------------------
@dataclass
class PtoRun:
    """What :func:`run_pto` returns: the run's result, the function run, the notes on what was
    decided (random inputs, cores), what ``pto.tprint`` printed in simulated order, and the
    warnings (tiles at explicit addresses that overlap while live)."""
    result: object
    func: str
    notes: list
    prints: list
    warnings: list

    @property
    def outputs(self) -> dict:
        return self.result.outputs

    @property
    def summary(self):
        return self.result.summary


def has_pipes(prog: Program, names) -> bool:
    """Does any of the functions ``names`` initialise a cross-core pipe?"""
    for n in names:
        for s in _walk(prog.funcs[n].body):
            if "initialize" in s.name and "pipe" in s.name:
                return True
    return False


def _reachable(prog: Program, top: str) -> list:
    out, todo = [], [top]
    while todo:
        n = todo.pop()
        if n in out:
            continue
        out.append(n)
        todo.extend(prog.funcs[n].calls)
    return out


def top_functions(prog: Program) -> list:
    """What runs when no function is named: ``[the entry]``, else the functions nothing
    calls - a cube + vector pair without an entry as one ``"cube+vector"`` item."""
    entries = [f.name for f in prog.funcs.values() if f.entry]
    if len(entries) == 1:
        return entries
    called = {c for f in prog.funcs.values() for c in f.calls}
    roots = [f.name for f in prog.funcs.values() if f.name not in called]
    if len(roots) == 2 and {prog.funcs[r].kind for r in roots} == {"cube", "vector"}:
        return ["+".join(roots)]
    return roots


def choose_top(prog: Program, func: str | None) -> str:
    """The function ``func`` names, else the one :func:`top_functions` gives (a ConfigError
    listing them when there are several)."""
    if func is not None:
        f = func.lstrip("@")
        if all(p in prog.funcs for p in f.split("+")):       # a cube+vector pair (top_functions)
            return f
        if f not in prog.funcs:
            raise ConfigError(f"--func {func}: the file defines no such function",
                              where=prog.path, fix=f"choose one of {', '.join(prog.funcs)}")
        return f
    roots = top_functions(prog)
    if len(roots) == 1:
        return roots[0]
    raise ConfigError(f"{prog.path} has {len(roots)} top-level functions ({', '.join(roots)}) and no pto.entry",
                      where=prog.path, fix="choose one with --func NAME (ptopipe.run_pto(..., func=NAME))")


def param_arrays(prog: Program, top_funcs, inputs: dict, rng, platform) -> tuple:
    """The kernel arguments by parameter name: the given inputs, else seeded random arrays
    (pointer parameters: sized by their largest static tensor view) and notes saying so."""
    args, notes = {}, []
    extents, natural = _param_extents(prog, inputs, platform)
    params = {}
    for n in top_funcs:
        for name, ty, tok in prog.funcs[n].params:
            params.setdefault(name[1:], (ty, tok, n))
    for key, (ty, tok, fname) in params.items():
        if key in inputs:
            v = inputs[key]
            if isinstance(ty, ScalarT):
                if isinstance(v, np.ndarray):
                    if v.size != 1:
                        raise ConfigError(f"--input {key}: a scalar parameter ({ty.name}) got an array "
                                          f"of shape {v.shape}", fix="give one value")
                    v = v.reshape(()).item()
                if not ty.is_float:
                    if isinstance(v, float) and not v.is_integer():
                        raise ConfigError(f"--input {key}: {v!r} for the {ty.name} parameter {key!r}",
                                          where="option --input", fix="save an integer: np.save(f, np.array(3))")
                    lo, hi = _int_range(ty)
                    if not lo <= int(v) <= hi:
                        raise ConfigError(f"--input {key}: {int(v)} does not fit the {ty.name} parameter "
                                          f"{key!r} ({lo}..{hi})", where="option --input",
                                          fix=f"give a value in {lo}..{hi}")
                args[key] = v if ty.is_float else int(v)
            else:
                want = ty[1] if isinstance(ty, tuple) else None
                want = want if isinstance(want, np.dtype) else (want.dtype if isinstance(want, TileSpec) else None)
                a = np.ascontiguousarray(v)
                if want is not None and want.kind == "V" and a.dtype.kind in "Vu" and \
                        a.dtype.itemsize == want.itemsize:
                    a = a.view(want)        # bf16 / float8 saved as raw bits (numpy has no such dtype)
                need = extents.get((fname, "%" + key), 0) if isinstance(ty, tuple) and ty[0] == "ptr" else \
                    int(np.prod(ty[2])) if isinstance(ty, tuple) and ty[0] == "memref" else 0
                if (want is not None and a.dtype != want) or a.size < need:
                    shape = natural.get((fname, "%" + key)) or (ty[2] if ty[0] == "memref" else (need,))
                    raise ConfigError(f"--input {key}: {a.dtype}{list(a.shape)} but the kernel takes "
                                      f"{_dtype_name(want) if want is not None else '?'}{list(shape)}",
                                      where="option --input",
                                      fix="save the array with that shape and dtype (a bf16 / float8 "
                                          "array as its bits: np.save(f, x.view(np.uint16 or np.uint8)))")
                args[key] = a
            continue
        if isinstance(ty, ScalarT):
            args[key] = 0.0 if ty.is_float else 0
            notes.append(f"scalar parameter {key} ({ty.name}) not given: 0 (give --input {key}=VALUE)")
            continue
        if not isinstance(ty, tuple) or ty[0] not in ("ptr", "memref"):
            raise ConfigError(f"parameter %{key} of @{fname} has a type ptopipe cannot make data for",
                              where=f"{prog.path}:{tok.line}:{tok.col}", fix=f"give --input {key}=FILE.npy")
        if ty[0] == "memref":
            d, shape = ty[1], ty[2]
            if any(x is None for x in shape):
                raise ConfigError(f"parameter %{key} has a dynamic memref shape",
                                  where=f"{prog.path}:{tok.line}:{tok.col}", fix=f"give --input {key}=FILE.npy")
            n = max(int(np.prod(shape)), extents.get((fname, "%" + key), 0))
            shape = shape if n == int(np.prod(shape)) else (n,)      # a slot buffer the ring needs
        else:
            d = ty[1]
            n = extents.get((fname, "%" + key), 0)
            shape = natural.get((fname, "%" + key)) or (n,)       # a dense view's shape, else flat
            if n == 0:
                if any("%" + key in st.used() for st in _walk(prog.funcs[fname].body)
                       if st.name != "func.call"):
                    raise ConfigError(f"the size of parameter %{key} is not known statically",
                                      where=f"{prog.path}:{tok.line}:{tok.col}",
                                      fix=f"give --input {key}=FILE.npy (or a static shape in its "
                                          "make_tensor_view)")
                shape = (1,)                 # a pointer nothing reads: one element stands for it
        args[key] = _random(rng, d, shape)
        notes.append(f"{key}: seeded random {d.name}{list(shape)} (give --input {key}=FILE.npy)")
    return args, notes


def _random(rng, d, shape):
    d = np.dtype(d)
    if d.kind == "b":
        return rng.integers(0, 2, size=shape).astype(d)
    if d.kind in "iu":
        info = np.iinfo(d)
        return rng.integers(max(info.min, -8), min(info.max, 8) + 1, size=shape).astype(d)
    return rng.uniform(-1.0, 1.0, size=shape).astype(d)


def _param_extents(prog: Program, inputs: dict, platform) -> tuple:
    """(function, parameter name) -> elements a pointer parameter needs: the largest extent
    of its static tensor views, the GM ring of a pipe init it is the slot buffer of (SLOT_NUM
    x SLOT_SIZE per direction), and what the functions it is passed to (func.call) need."""
    ext, shapes = {}, {}

    def need(key, n, shape=None):
        if n > ext.get(key, 0):
            ext[key] = n
            shapes[key] = shape

    for f in prog.funcs.values():
        consts = {}
        ptypes = {p[0]: p[1] for p in f.params}
        for s in _walk(f.body):
            if s.name == "arith.constant" and s.results:
                try:
                    consts[s.results[0]] = int(s.text().split(":")[0])
                except ValueError:
                    pass
                continue
            if s.name != "pto.make_tensor_view" and not ("initialize" in s.name and "pipe" in s.name):
                continue
            vs = s.values()
            if s.name == "pto.make_tensor_view" and vs and vs[0].text in ptypes:
                def nums(k):
                    out = []
                    for t in (s.attr(k) or [])[1:-1]:
                        if t.kind == "value":
                            v = consts.get(t.text)
                            if v is None and t.text[1:] in inputs:
                                v = int(np.asarray(inputs[t.text[1:]]).reshape(-1)[0])
                            out.append(v)
                        elif t.kind == "word":
                            out.append(int(t.text))
                    return out
                shape, strides = nums("shape"), nums("strides")
                if not shape or any(x is None for x in shape):
                    continue
                if not strides or any(x is None for x in strides):
                    strides = list(np.cumprod([1] + shape[::-1][:-1])[::-1])
                dense = list(strides) == list(np.cumprod([1] + shape[::-1][:-1])[::-1])
                need((f.name, vs[0].text), 1 + sum((n - 1) * st for n, st in zip(shape, strides)),
                     tuple(shape) if dense else None)
            elif "initialize" in s.name and "pipe" in s.name:
                gm = s.attr("gm_slot_buffer")
                gm = gm[0] if gm else (vs[0] if s.name == "pto.initialize_l2g2l_pipe" and vs else None)
                if gm is not None and gm.kind == "value" and gm.text in ptypes:
                    ty = ptypes[gm.text]
                    item = ty[1].itemsize if isinstance(ty, tuple) and isinstance(ty[1], np.dtype) else 1
                    d = _int_attr(s, "dir_mask", prog)
                    ways = 2 if d & 3 == 3 else 1
                    n = _int_attr(s, "slot_num", prog, 0) or platform.slot_num_for(ways == 2)
                    need((f.name, gm.text), -(-_int_attr(s, "slot_size", prog) * n * ways // item))
    changed = True
    while changed:                          # callers need what their callees need
        changed = False
        for f in prog.funcs.values():
            for s in _walk(f.body):
                if s.name != "func.call":
                    continue
                callee = prog.funcs[next(t for t in s.toks if t.kind == "symbol").text[1:]]
                for a, p in zip(s.values(), callee.params):
                    n = ext.get((callee.name, p[0]), 0)
                    if n > ext.get((f.name, a.text), 0):
                        ext[(f.name, a.text)] = n
                        shapes[(f.name, a.text)] = shapes.get((callee.name, p[0]))
                        changed = True
    return ext, shapes


@dataclass
class PtoLaunch:
    """A read ``.pto`` ready to run: the kernels per core, their arguments, the platform, the
    function run and the notes on what was decided.  ``prints`` collects what ``pto.tprint``
    prints (cycle, core, text) during the runs of these kernels."""
    aic: object
    aiv: object
    args: dict
    platform: str
    func: str
    notes: list
    prints: list
    program: Program
    warnings: list = field(default_factory=list)     # likely bugs the run itself does not stop at


def read_text(path: str) -> str:
    """The UTF-8 text of a ``.pto`` file (a ConfigError / ParseError naming it otherwise)."""
    if os.path.isdir(path):
        raise ConfigError(f"{path} is a directory, not a .pto file", fix="give the path of a .pto file")
    if not os.path.isfile(path):
        raise ConfigError(f"no such file: {path}", fix="give the path of a .pto file")
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise ParseError(f"byte {raw[e.start]:#04x} is not UTF-8 text", where=f"{path}:{line}:{col}",
                         fix="a .pto file is UTF-8 MLIR text") from None


def prepare(path: str | None = None, *, text: str | None = None, func: str | None = None,
            inputs: dict | None = None, platform: str | None = None, data_seed: int = 0) -> PtoLaunch:
    """Read a ``.pto`` file (or ``text``) and make its kernels and arguments (see
    :func:`run_pto`)."""
    from .pto_syntax import PLATFORM_OF_ARCH
    if text is None:
        if path is None:
            raise ConfigError("run_pto needs a path or text=")
        text = read_text(path)
    path = path or "<pto>"
    try:
        return _prepare(path, text, func, inputs, platform, data_seed)
    except SYNTAX_SLIPS as e:
        if isinstance(e, PtoPipeError):
            raise
        raise malformed(e, path) from None


def _prepare(path, text, func, inputs, platform, data_seed) -> PtoLaunch:
    from .pto_syntax import PLATFORM_OF_ARCH
    prog = read_program(text, path)
    plat = platform or PLATFORM_OF_ARCH.get(prog.arch or "", None) or "a2a3"
    top = choose_top(prog, func)
    tops = top.split("+")
    inputs = dict(inputs or {})
    known = {p[0][1:] for t in tops for p in prog.funcs[t].params}
    for k in inputs:
        if k not in known:
            raise ConfigError(f"--input {k}: the kernel has no parameter {k!r}", where="option --input",
                              fix=f"parameters: {', '.join(sorted(known)) or 'none'}")
    rng = np.random.default_rng(data_seed)
    from ..arch import get_platform
    args, notes = param_arrays(prog, tops, inputs, rng, get_platform(plat))
    warnings = []
    layout = plan_layout(prog, get_platform(plat))
    reach = [n for t in tops for n in _reachable(prog, t)]
    pipes = has_pipes(prog, reach)
    kinds = {}
    for t in tops:
        f = prog.funcs[t]
        if f.kind is not None:
            kinds[t] = {f.kind}
        else:
            callee_kinds = {prog.funcs[c].kind for c in _reachable(prog, t) if prog.funcs[c].kind}
            if callee_kinds:                # an entry: each callee runs on its kernels' cores
                kinds[t] = callee_kinds
                continue
            kind, warning = implied_kind(f, prog.funcs, path, prog.types)
            if warning:
                warnings.append(warning)
            kinds[t] = {kind}
            for c in _reachable(prog, t):   # its kind-less callees run where it runs
                prog.funcs[c].kind = prog.funcs[c].kind or kind
    prints: list = []
    one_lane = plat == "a5" and _one_lane(prog, reach)
    mixed = any(MIXED in k for k in kinds.values())
    if mixed and pipes:
        raise ConfigError(f"@{top} uses Cube and Vector tiles and cross-core pipes",
                          where=f"{path}:{prog.funcs[tops[0]].stmt.tok.line}",
                          fix="give each function of a pipe its pto.kernel_kind (cube / vector)")

    def kernel_for(core_name):
        def kernel(**kw):
            ex = Executor(prog, core_name, layout, one_lane)
            ex.core = isa.current_core()
            if mixed:
                ex.core.add_memory(MemSpace.UB)
            ex.printed = prints
            for t in tops:
                if core_name == "aic" and "cube" not in kinds[t] and MIXED not in kinds[t]:
                    continue
                if core_name != "aic" and "vector" not in kinds[t]:
                    continue
                f = prog.funcs[t]
                ex.call(f, [kw.get(p[0][1:]) for p in f.params])
        kernel.__name__ = f"{top}@{core_name}"
        return kernel

    all_kinds = set().union(*kinds.values())
    aic = kernel_for("aic") if "cube" in all_kinds or mixed else None
    aiv = None
    if "vector" in all_kinds:
        aiv = (kernel_for("aiv0"), kernel_for("aiv1") if pipes and not one_lane else None)
        if not pipes:
            notes.append("a Vector kernel without cross-core pipes: run on AIV0")
        elif one_lane:
            notes.append("A5 pipes that move whole tiles (split = 0 / nosplit): the Vector kernel runs "
                         "on AIV0, as ptoas guards them with get_subblockid() == 0")
    return PtoLaunch(aic, aiv, args, plat, top, notes, prints, prog, warnings + alias_notes(prog))


def run_pto(path: str | None = None, *, text: str | None = None, func: str | None = None,
            inputs: dict | None = None, platform: str | None = None, protocol: str = "spec",
            data_seed: int = 0, **run_kwargs) -> PtoRun:
    """Read a ``.pto`` file (or ``text``) and run it on the simulated cluster.

    ``func`` picks the function to run (default: the ``pto.entry``, else the one function
    nothing calls, else a cube + vector pair); ``inputs`` maps parameter names (without
    ``%``) to numpy arrays / scalars; parameters not given get seeded random data
    (``data_seed``) or 0 for scalars, each listed in the result's ``notes``.  The platform is
    ``platform``, else the module's ``pto.target_arch``, else A2A3.  Other keywords go to
    :func:`ptopipe.run` (``schedule_seed``, ``timeout``, ``checks``, ...).  Errors are
    :class:`~ptopipe.PtoPipeError` subclasses at the file's line:col."""
    pl = prepare(path, text=text, func=func, inputs=inputs, platform=platform, data_seed=data_seed)
    res = isa.run(aic=pl.aic, aiv=pl.aiv, args=pl.args, platform=pl.platform, protocol=protocol,
                  **run_kwargs)
    pl.prints.sort(key=lambda p: (p[0], p[1]))
    outputs = res.outputs
    for k, a in list(outputs.items()):
        if k in (inputs or {}) and isinstance(inputs[k], np.ndarray):
            outputs[k] = a.reshape(np.asarray(inputs[k]).shape)
    return PtoRun(res, pl.func, pl.notes, [p[2] for p in pl.prints], pl.warnings)


def _one_lane(prog: Program, names) -> bool:
    """A5: pipes whose ops say ``split = 0`` (or an init says ``nosplit = true``) move whole
    tiles through AIV0 only (ptoas guards them with ``get_subblockid() == 0``)."""
    split0 = nosplit = False
    for n in names:
        for s in _walk(prog.funcs[n].body):
            if "initialize" in s.name and "pipe" in s.name:
                ns = s.attr("nosplit")
                nosplit |= bool(ns and ns[0].text == "true")
            if s.name.startswith(("pto.tpush", "pto.tpop", "pto.tfree")):
                sp = s.attr("split")
                split0 |= bool(sp and sp[0].text == "0") or not sp
    return nosplit or split0
