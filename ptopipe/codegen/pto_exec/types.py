"""The types of PTO-AS as the executor reads them: element types, ``!pto.tile_buf<...>`` (long
and short forms) as a :class:`TileSpec`, scalar types with MLIR's integer widths
(:class:`ScalarT`, :func:`wrap`), pointers, tensor / partition views, ``memref``; parsed once
per distinct spelling (:meth:`TypeReader.spec_of`)."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import numpy as np

from ...arch import dtypes as dt
from ...arch.vocab import BLayout, PadValue, RoundMode, SLayout, TileLayout, TileType
from ...errors import INPUT, CompileError, ConfigError, Given, ParseError
from ..pto_lexer import tokenize
from ..pto_syntax import SHORT_FORM_LAYOUT, TILE_KEYS, tile_shape_refusal, unprefixed_tile_refusal
from ..pto_tree import Stmt, split_top


#: MLIR element type -> numpy dtype
ELEMENT = {"f32": dt.float32, "f16": dt.float16, "bf16": dt.bfloat16, "f64": np.dtype(np.float64),
           "i8": dt.int8, "i16": dt.int16, "i32": dt.int32, "i64": dt.int64,
           "ui8": dt.uint8, "ui16": np.dtype(np.uint16), "ui32": dt.uint32, "ui64": np.dtype(np.uint64),
           "si8": dt.int8, "si16": dt.int16, "si32": dt.int32, "si64": dt.int64,
           "f8E4M3FN": dt.float8_e4m3, "f8E5M2": dt.float8_e5m2, "i1": np.dtype(np.bool_),
           "f8E4M3": dt.float8_e4m3}          # ptoas writes every e4m3 as pto-isa's float8_e4m3_t


LOC = {"vec": TileType.Vec, "ub": TileType.Vec, "mat": TileType.Mat, "l1": TileType.Mat,
       "left": TileType.Left, "right": TileType.Right, "acc": TileType.Acc, "bias": TileType.Bias,
       "scaling": TileType.Scaling}


CUBE_LOCS = (TileType.Mat, TileType.Left, TileType.Right, TileType.Acc, TileType.Bias, TileType.Scaling,
             TileType.ScaleLeft, TileType.ScaleRight)


BLAYOUT = {"row_major": BLayout.RowMajor, "col_major": BLayout.ColMajor}


SLAYOUT = {"none_box": SLayout.NoneBox, "row_major": SLayout.RowMajor, "col_major": SLayout.ColMajor}


#: ``#pto<round_mode W>``: the words of ptoas's RoundMode (PTOAttrs.td; any other is its parse
#: error "expected ::mlir::pto::RoundMode to be one of: ...") -> the pto-isa RoundMode its C++
#: names (PTOToEmitC ``roundModeTok``: RINT and CAST_RINT are both CAST_RINT)
ROUND = {"NONE": RoundMode.CAST_NONE, "RINT": RoundMode.CAST_RINT, "ROUND": RoundMode.CAST_ROUND,
         "FLOOR": RoundMode.CAST_FLOOR, "CEIL": RoundMode.CAST_CEIL, "TRUNC": RoundMode.CAST_TRUNC,
         "ODD": RoundMode.CAST_ODD, "CAST_RINT": RoundMode.CAST_RINT}


#: tile_buf ``pad=`` (PTOAS PadValue: 0 null, 1 zero, 2 max, 3 min) -> what TFILLPAD fills with
PAD = {"1": PadValue.Zero, "2": PadValue.Max, "3": PadValue.Min, "zero": PadValue.Zero,
       "max": PadValue.Max, "min": PadValue.Min}


#: a tile's valid dim as ptoas spells dynamic: ``?``, or ``-1`` (its parser reads the two alike)
_DYNAMIC = {"-1": "?"}


_INT_BITS = re.compile(r"^(u|ui|si|i)(\d+)$")


def dtype_name(d) -> str:
    return next(k for k, v in ELEMENT.items() if v == d)


def tokens_text(toks) -> str:
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
    fractal: int | None = None        # ``fractal=`` (None: not written - ptoas's 512)

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.dtype.itemsize


@dataclass(frozen=True)
class MultiSpec:
    """``!pto.multi_tile_buf<!pto.tile_buf<...>, count=N>``: a region of N slots of one tile
    type (pypto's ``memory_planner=PTOAS`` multi-slot allocation), the slots side by side,
    each starting on a 32-byte boundary as every placed tile does."""
    slot: TileSpec
    count: int

    @property
    def loc(self) -> TileType:
        return self.slot.loc

    @property
    def stride(self) -> int:
        """Bytes from one slot's start to the next's."""
        return (self.slot.nbytes + 31) // 32 * 32

    @property
    def nbytes(self) -> int:
        return self.stride * self.count


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


def int_range(t: ScalarT) -> tuple:
    b = t.bits
    if b == 1:
        return 0, 1                 # i1: false / true
    return (-(1 << (b - 1)), (1 << (b - 1)) - 1) if t.signed else (0, (1 << b) - 1)


def check_input_fits(key: str, v: int, type_name: str, lo: int, hi: int, given: Given = INPUT) -> None:
    """An integer input (``given``) for a parameter of type ``type_name`` holds ``lo..hi``: else a
    ConfigError saying so (the run, ``check`` and ``check --static`` all refuse it so)."""
    if not lo <= v <= hi:
        raise ConfigError(f"{given.of(key)}: {v} does not fit the {type_name} parameter {key!r} ({lo}..{hi})",
                          where=given.where, fix=f"give a value in {lo}..{hi}")


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


#: token lists whose parsed types a TypeReader keeps at most
_PARSED_MAX = 4096


@functools.lru_cache(maxsize=4096)
def _type_of_text(text: str):
    """What :meth:`TypeReader.spec_of` reads a type text as, before picking its tile (the type,
    or None where it does not read: the op reports that where it stands, when it runs).  Kept
    per text for every file - the reading does not depend on the file, and files repeat the same
    tile types; a text that does not tokenize raises and is not kept."""
    toks = tokenize(text, "<type>")[:-1]
    try:
        return TypeReader("<type>")._parse(toks) if toks else None
    except (ParseError, CompileError):
        return None


class TypeReader:
    """Parse type token lists of one file (errors at the token)."""

    def __init__(self, f: str):
        self.f = f
        self._parsed = {}               # id(token list) -> (the list, its type)

    def spec_of(self, s: Stmt):
        """The tile buffer type an allocating / popping op gives (a TileSpec, or the memref
        tuple whose [1] is one), from its type text, parsed once per distinct text (:data:`_SPECS`);
        None if it names none."""
        text = s.result_type_text()
        if text is None:
            return None
        try:
            spec = _type_of_text(text)
        except ParseError:
            s.toks          # (the text does not tokenize: the statement's tokens raise it at its place)
            raise
        spec = spec[1] if isinstance(spec, tuple) and spec[0] == "memref" else spec
        return spec if isinstance(spec, (TileSpec, MultiSpec)) else None

    def err(self, msg, tok, fix="check the type's spelling against ptoas's") -> ParseError:
        return ParseError(msg, where=f"{self.f}:{tok.line}:{tok.col}", fix=fix)

    def element(self, text: str, tok) -> np.dtype:
        d = ELEMENT.get(text)
        if d is None and re.fullmatch(r"u\d+", text):
            # pto-isa's / ptopipe's short word for an unsigned type is no MLIR type
            raise self.err(f"element type {text!r} is not an MLIR type: ptoas refuses the file (\"expected "
                           "non-function type\")", tok, fix=f"write ui{text[1:]} (MLIR's unsigned {text[1:]}-bit integer)")
        if d is None:
            raise self.err(f"element type {text!r} is not supported", tok,
                           fix=f"use one of {', '.join(sorted(ELEMENT))}")
        return d

    def parse(self, toks):
        """A type: TileSpec, ScalarT, ('ptr', dtype), ('view', dtype, rank), ('part', dtype, shape),
        ('memref', TileSpec | dtype, shape, space), ('vector' | 'tensor', dtype, shape), ('pipe',),
        ('event',)."""
        # (parsed once per token list: an executor parses a statement's types - the lists its
        # Stmt keeps - every time it runs it; the results are immutable, and a list made anew
        # per call only churns the bounded memo)
        hit = self._parsed.get(id(toks))
        if hit is not None and hit[0] is toks:
            return hit[1]
        r = self._parse(toks)
        if len(self._parsed) >= _PARSED_MAX:
            self._parsed.clear()
        self._parsed[id(toks)] = (toks, r)
        return r

    def _parse(self, toks):
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
        if name == "!pto.multi_tile_buf":
            return self.multi_tile_buf(inner, t0)
        if name == "!pto.ptr":
            return ("ptr", self.element(tokens_text(inner[:1]), t0))
        if name in ("!pto.tensor_view", "!pto.partition_tensor_view"):
            shape, d = self.shaped(inner, t0)
            return ("view" if name == "!pto.tensor_view" else "part", d, shape)
        if name == "memref":
            return self.memref(inner, t0)
        if name in ("vector", "tensor"):
            shape, d = self.shaped(inner, t0)
            if not shape or None in shape:
                raise self.err(f"{tokens_text(toks)!r}: a {name} value needs a static shape", t0)
            return (name, d, shape)
        if name in ("!pto.pipe",):
            return ("pipe",)
        if name.startswith("!pto."):
            return ("opaque", name)
        if name in ("<", "tile_buf", "pto.tile_buf", "!tile_buf"):
            what, fix = unprefixed_tile_refusal(tokens_text(toks))
            raise self.err(what, t0, fix=fix)
        raise self.err(f"type {tokens_text(toks)!r} is not supported", t0)

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
        # ptoas's Tile of a local memref: its first two dims (a rank-1 one: one row) - a rank-3
        # memref<2x8x16> is a 2x8 tile, its last dim dropped, as ptoas's C++ declares it
        rows, cols = (shape[0], shape[1]) if len(shape) > 1 else (1, shape[-1])
        # ptoas declares the Tile of a local memref row-major, NoneBox, in every memory (a Left,
        # Right or Acc one too, which the Cube then refuses as pto-isa's TMATMUL does)
        bad = tile_shape_refusal(loc, TileLayout.of(BLayout.RowMajor, SLayout.NoneBox), rows, cols, d.itemsize)
        if bad is not None:
            raise CompileError(bad[0], where=f"{self.f}:{tok.line}:{tok.col}",
                               fix=bad[1] + " in a !pto.tile_buf (a memref has no valid shape)")
        spec = TileSpec(loc, d, rows, cols, rows, cols, BLayout.RowMajor, SLayout.NoneBox)
        return ("memref", spec, shape, space)

    def multi_tile_buf(self, inner, tok):
        """``<!pto.tile_buf<...>, count=N>`` -> MultiSpec (ptoas takes 2..16 slots)."""
        groups = split_top(inner)
        slot = self._parse(groups[0]) if groups and groups[0] else None
        count = None
        for g in groups[1:]:
            if len(g) == 3 and g[0].text == "count" and g[1].text == "=" and g[2].text.isdigit():
                count = int(g[2].text)
        if not isinstance(slot, TileSpec) or count is None:
            raise self.err(f"!pto.multi_tile_buf<{tokens_text(inner)}> is not <!pto.tile_buf<...>, count=N>", tok,
                           fix="write !pto.multi_tile_buf<!pto.tile_buf<...>, count=N>")
        if not 2 <= count <= 16:
            raise self.err(f"!pto.multi_tile_buf count={count}: ptoas takes 2..16 slots", tok,
                           fix="give count = 2..16")
        return MultiSpec(slot, count)

    def _long_form_keys(self, groups, tok) -> None:
        """The long form names every key of :data:`~ptopipe.codegen.pto_syntax.TILE_KEYS`, in
        that order, then optionally ``compact=N`` (ptoas: "expected 'v_row'", "expected ','"):
        else a ParseError at the first key that is not the one expected, or at the type when
        keys are missing at its end."""
        for i, key in enumerate(TILE_KEYS):
            if i >= len(groups):
                raise self.err(f"!pto.tile_buf: its long form ends before {key!r} (it names "
                               f"{', '.join(TILE_KEYS)}, in that order)", tok,
                               fix=f"give {', '.join(TILE_KEYS[i:])} too, or write the short form "
                                   "<loc, RxCxdtype[, key=value...]>")
            g = groups[i]
            if not g or g[0].text != key or len(g) < 2 or g[1].text != "=":
                got = g[0] if g else tok
                said = f"{got.text!r} out of order" if got.text in TILE_KEYS else f"{got.text!r}"
                raise self.err(f"!pto.tile_buf: expected the key {key!r}, got {said} (the long form names "
                               f"{', '.join(TILE_KEYS)}, in that order)", got,
                               fix=f"write {key}=... here")
        for g in groups[len(TILE_KEYS):]:
            if g and not (g[0].text == "compact" and len(g) > 2 and g[1].text == "=" and g is groups[len(TILE_KEYS)]):
                raise self.err(f"!pto.tile_buf: {g[0].text!r} after pad (the long form ends with pad, or with "
                               "compact=N after it)", g[0], fix="remove it")

    def tile_buf(self, inner, tok):
        """The long form ``<loc=vec, dtype=f32, rows=16, ...>`` or the short one
        ``<vec, 16x32xf32[, key=value...]>`` (``valid=RxC`` included)."""
        kv = {}
        groups = split_top(inner)
        if groups and len(groups[0]) >= 2 and groups[0][1].text == "=":
            self._long_form_keys(groups, tok)
        for i, g in enumerate(groups):
            if len(g) >= 3 and g[1].text == "=":          # (ptoas reads `loc="vec"` as `loc=vec`)
                kv[g[0].text] = "".join(t.text for t in g[2:]).strip('"')
            elif i == 0 and len(g) == 1:
                kv["loc"] = g[0].text
            elif i == 1 and g:
                shape, d = self.shaped(g, g[0])
                if len(shape) != 2 or None in shape:
                    raise self.err(f"a tile is 2-D and static, got {tokens_text(g)!r}", g[0])
                kv["rows"], kv["cols"], kv["dtype"] = str(shape[0]), str(shape[1]), dtype_name(d)
            elif g:
                raise self.err(f"!pto.tile_buf part {tokens_text(g)!r} is not supported", g[0],
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
        vr, vc = (_DYNAMIC.get(v, v) for v in (kv.get("v_row", str(rows)), kv.get("v_col", str(cols))))
        for key, words in (("blayout", BLAYOUT), ("slayout", SLAYOUT)):
            if key in kv and kv[key] not in words:
                raise self.err(f"!pto.tile_buf {key}={kv[key]}: ptoas refuses the file (\"unknown {key}: {kv[key]}\")",
                               tok, fix=f"write {key}={' or '.join(words)}")
        # a key the short form leaves out is ptoas's default, in every location and shape
        b = BLAYOUT[kv["blayout"]] if "blayout" in kv else SHORT_FORM_LAYOUT.blayout
        s = SLAYOUT[kv["slayout"]] if "slayout" in kv else SHORT_FORM_LAYOUT.slayout
        pad = PAD.get(kv.get("pad", "0"))
        if loc is TileType.Vec and (b, s) != (BLayout.ColMajor, SLayout.ColMajor):   # (that pair: the Tile's error)
            bad = tile_shape_refusal(loc, TileLayout.of(b, s), rows, cols, d.itemsize,
                                     None if "?" in (vr, vc) else (int(vr), int(vc)))
            if bad is not None:
                raise CompileError(bad[0], where=f"{self.f}:{tok.line}:{tok.col}", fix=bad[1])
        fractal = kv.get("fractal")
        return TileSpec(loc, d, rows, cols, None if vr == "?" else int(vr), None if vc == "?" else int(vc), b, s,
                        pad, int(fractal) if fractal is not None and fractal.isdigit() else None)
