"""The token-level grammar pieces of the ``.pto`` reader: a cursor over
:mod:`.pto_lexer` tokens, attribute dictionaries, and PTO-AS types (``!pto.tile_buf``
long and short forms, ``!pto.ptr``, tensor / partition views, ``!pto.pipe``, scalars).
Every malformed piece is a ParseError at its token's line:col saying what was expected.
"""
from __future__ import annotations

import re

from dataclasses import dataclass

from ..arch.vocab import TileType
from ..errors import CompileError, ParseError
from ..ir.types import MemorySpace, np_dtype
from .pto_syntax import (BLAYOUT_OF, IR_DTYPE, SHORT_FORM_LAYOUT, SLAYOUT_OF, SPACE_OF_LOC, TILE_KEYS,
                         tile_shape_refusal, tile_type)


@dataclass(frozen=True)
class PType:
    """A parsed type: ``kind`` tile / ptr / view / part / pipe / scalar, the IR type and the
    declared static shape of a tile or the dtype / shape of the others."""
    kind: str
    ir: object = None
    dtype: str | None = None
    shape: tuple | None = None


class Cursor:
    def __init__(self, toks, filename: str):
        self.toks, self.i, self.file = toks, 0, filename
        self.platform = None        # the module's target (a Left tile's blayout follows it)

    def peek(self, k: int = 0):
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self):
        t = self.toks[self.i]
        if t.kind != "eof":
            self.i += 1
        return t

    def where(self, t) -> str:
        return f"{self.file}:{t.line}:{t.col}"

    def error(self, msg: str, t=None, fix: str | None = None) -> ParseError:
        t = t or self.peek()
        return ParseError(msg, where=self.where(t), fix=fix)

    def at(self, text: str) -> bool:
        t = self.peek()
        return t.text == text and t.kind in ("punct", "word")

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.next()
            return True
        return False

    def expect(self, text: str, what: str | None = None):
        t = self.peek()
        if not self.at(text):
            got = "the end of the file" if t.kind == "eof" else repr(t.text)
            raise self.error(f"expected '{text}'{' ' + what if what else ''}, got {got}", self._missing(t))
        return self.next()

    def kind(self, kind: str, what: str):
        t = self.peek()
        if t.kind != kind:
            got = "the end of the file" if t.kind == "eof" else repr(t.text)
            raise self.error(f"expected {what}, got {got}", self._missing(t))
        return self.next()

    def _missing(self, t):
        """Where a token missing before ``t`` is reported: just after the previous token
        when ``t`` starts a later line (the op that lacks it ends there)."""
        if self.i == 0 or t.kind == "eof":
            return t
        p = self.toks[self.i - 1]
        return t if p.line == t.line else p._replace(col=p.col + len(p.text))

    def integer(self, what: str) -> int:
        t = self.peek()
        try:
            v = int(t.text)
        except ValueError:
            got = "the end of the file" if t.kind == "eof" else repr(t.text)
            raise self.error(f"expected an integer {what}, got {got}", t) from None
        self.next()
        return v

    # -- attributes ------------------------------------------------------------------------
    def attr_value(self):
        """An attribute value: (python value, token).  ``#pto.x<v>`` and ``<v>`` give
        ``("#pto.x", "v")`` / ``("", "v")``; a list gives a list."""
        t = self.peek()
        if t.kind == "string":
            self.next()
            return t.text[1:-1], t
        if t.kind == "symbol":
            self.next()
            return ("@", t.text[1:]), t
        if t.kind == "hash" or self.at("<"):
            name = self.next().text if t.kind == "hash" else ""
            self.expect("<", f"after {name or 'the attribute'}")
            parts = []
            while not self.at(">"):
                x = self.next()
                if x.kind == "eof":
                    raise self.error(f"unterminated {name or 'attribute'}<...>", t)
                parts.append(x.text)
            self.next()
            return (name, "".join(parts)), t
        if self.accept("["):
            items = []
            while not self.accept("]"):
                items.append(self.attr_value()[0])
                if not self.at("]"):
                    self.expect(",", "between list items")
            return items, t
        if t.kind == "word":
            self.next()
            if t.text in ("true", "false"):
                return t.text == "true", t
            try:
                return self._typed(int(t.text), t), t
            except ValueError:
                pass
            try:
                return self._typed(float(t.text), t), t
            except ValueError:
                raise self.error(f"bad attribute value {t.text!r}", t,
                                 "attribute values are integers, strings, true/false or #pto.<kind><...>") from None
        raise self.error(f"expected an attribute value, got {t.text or 'the end of the file'!r}", t)

    def _typed(self, v, t):
        """A number attribute's optional MLIR type, ``3 : i32`` / ``0.5 : f32`` (read and
        checked: an integer takes an integer type or ``index``, a float a float type)."""
        if not (self.at(":") and self.peek(1).kind == "word"):
            return v
        self.next()
        tt = self.next()
        ok = (re.fullmatch(r"(?:[su]?i\d+|index)", tt.text) if isinstance(v, int)
              else re.fullmatch(r"(?:f\d+|bf16)", tt.text))
        if not ok:
            raise self.error(f"bad attribute type {tt.text!r} for {t.text}", tt,
                             "an integer takes : i32 / i64 / index, a float : f16 / f32")
        return v

    def attr_dict(self) -> dict:
        """``{k = v, flag, ...}`` -> {key: (value, key token)}; a duplicate key is an error."""
        out = {}
        self.expect("{")
        while not self.accept("}"):
            k = self.peek()
            if k.kind not in ("word", "string"):
                raise self.error(f"expected an attribute name, got {k.text or 'the end of the file'!r}", k)
            self.next()
            key = k.text.strip('"')
            if key in out:
                raise self.error(f"attribute {key!r} given twice", k)
            if self.accept("="):
                v, _ = self.attr_value()
            else:
                v = True
            out[key] = (v, k)
            if not self.at("}"):
                self.expect(",", "between attributes")
        return out

    def enum_attr(self, attrs: dict, key: str, family: str, default=None):
        """``key = #family<v>`` (or ``<v>``) of an attribute dict -> (v, token)."""
        if key not in attrs:
            return default
        v, t = attrs[key]
        if not (isinstance(v, tuple) and v[0] in (family, "")):
            raise self.error(f"bad attribute {key}: expected {family}<...>", t)
        return v[1], t

    # -- types ------------------------------------------------------------------------------
    def dtype(self, text: str, t) -> str:
        d = IR_DTYPE.get(text)
        if d is None:
            raise self.error(f"unknown element type {text!r}", t,
                             f"use one of {', '.join(sorted(IR_DTYPE))}")
        return d

    def dims(self, t, allow_dyn: bool = False):
        """``16x32xf32`` (a word, or words and '?' for dynamic dims) -> (shape, dtype)."""
        text, prev = "", None
        while True:
            x = self.peek()
            if not (x.kind == "word" or (x.text == "?" and allow_dyn)):
                break
            if prev is not None and (x.line != prev.line or x.col != prev.col + len(prev.text)):
                break
            text += self.next().text
            prev = x
        parts = text.split("x")
        if len(parts) < 2:
            raise self.error(f"expected a shape like 16x32xf32, got {text or t.text!r}", t)
        shape = []
        for p in parts[:-1]:
            if p == "?" and allow_dyn:
                shape.append(None)
            elif p.isdigit():
                shape.append(int(p))
            else:
                raise self.error(f"bad dimension {p!r} in {text!r}", t)
        return tuple(shape), self.dtype(parts[-1], t)

    def type_(self) -> PType:
        t = self.peek()
        if t.kind == "word":
            self.next()
            if t.text == "index":
                return PType("scalar", dtype="index")
            return PType("scalar", dtype=self.dtype(t.text, t))
        if t.kind != "bang":
            raise self.error(f"expected a type, got {t.text or 'the end of the file'!r}", t)
        self.next()
        name = t.text
        if name == "!pto.tile_buf":
            return self.tile_buf(t)
        if name == "!pto.pipe":
            if self.at("<"):
                depth = 0
                while True:
                    x = self.next()
                    if x.kind == "eof":
                        raise self.error("unterminated !pto.pipe<...>", t)
                    depth += (x.text == "<") - (x.text == ">")
                    if depth == 0:
                        break
            return PType("pipe")
        if name == "!pto.ptr":
            self.expect("<", "after !pto.ptr")
            d = self.next()
            dt = self.dtype(d.text, d)
            if self.accept(","):
                self.next()
            self.expect(">", "closing !pto.ptr<...>")
            return PType("ptr", dtype=dt)
        if name in ("!pto.tensor_view", "!pto.partition_tensor_view"):
            self.expect("<", f"after {name}")
            shape, dt = self.dims(self.peek(), allow_dyn=True)
            self.expect(">", f"closing {name}<...>")
            return PType("view" if name == "!pto.tensor_view" else "part", dtype=dt, shape=shape)
        raise self.error(f"unknown type {name}", t, "PTO-AS types ptopipe reads: !pto.tile_buf, "
                         "!pto.ptr, !pto.tensor_view, !pto.partition_tensor_view, !pto.pipe, scalars")

    def tile_buf(self, t) -> PType:
        self.expect("<", "after !pto.tile_buf")
        f = self.peek(1)
        vals = {}
        if f.text == "=":                       # long form: key=value in TILE_KEYS order
            for i, key in enumerate(TILE_KEYS):
                k = self.peek()
                if k.text != key:
                    if k.text in TILE_KEYS:
                        raise self.error(f"tile_buf key {k.text!r} out of order: expected {key!r} "
                                         f"(the keys go {', '.join(TILE_KEYS)})", k)
                    raise self.error(f"expected tile_buf key {key!r}, got {k.text!r}", k,
                                     f"the keys go {', '.join(TILE_KEYS)}")
                self.next()
                self.expect("=", f"after {key}")
                v = self.next()
                vals[key] = (v.text, v)
                if i < len(TILE_KEYS) - 1:
                    self.expect(",", "between tile_buf keys")
        else:                                   # short form: <loc, RxCxdtype[, key=value...]>
            loc = self.next()
            vals["loc"] = (loc.text, loc)
            self.expect(",", "after the tile_buf location")
            d = self.peek()
            shape, dt = self.dims(d)
            if len(shape) != 2:
                raise self.error(f"a tile is 2-D, got {len(shape)} dims", d)
            vals["rows"], vals["cols"] = (str(shape[0]), d), (str(shape[1]), d)
            vals["dtype"] = ("", d)
            vals["_dtype"] = dt
            while self.accept(","):
                k = self.next()
                if k.text not in TILE_KEYS[4:] and k.text != "valid":
                    raise self.error(f"unknown tile_buf key {k.text!r}", k)
                self.expect("=", f"after {k.text}")
                v = self.next()
                if k.text == "valid":
                    while self.at("x") or self.peek().kind == "word" or self.at("?"):
                        self.next()
                vals[k.text] = (v.text, v)
        self.expect(">", "closing !pto.tile_buf<...>")
        loc_text, lt = vals["loc"]
        space = SPACE_OF_LOC.get(loc_text)
        if space is None:
            raise self.error(f"unknown tile address space {loc_text!r}", lt,
                             f"use one of {', '.join(SPACE_OF_LOC)}")
        dt = vals.get("_dtype") or self.dtype(*vals["dtype"])
        r, c = (self._int(vals[k]) for k in ("rows", "cols"))
        valid = []
        for k, lim in (("v_row", r), ("v_col", c)):
            if k in vals and vals[k][0] != "?":
                v = self._int(vals[k])
                if not 0 <= v <= lim:
                    raise self.error(f"{k}={v} is outside the tile's {lim}", vals[k][1])
                valid.append(v)
        for k in ("fractal", "pad"):
            if k in vals:
                self._int(vals[k])
        lay = []
        for k, table, default in (("blayout", BLAYOUT_OF, SHORT_FORM_LAYOUT.blayout),
                                  ("slayout", SLAYOUT_OF, SHORT_FORM_LAYOUT.slayout)):
            if k in vals:
                v = table.get(vals[k][0])
                if v is None:
                    raise self.error(f"unknown {k} {vals[k][0]!r}", vals[k][1],
                                     f"use one of {', '.join(table)}")
                lay.append(v)
            else:                               # (a short form's: ptoas's, not the space's default)
                lay.append(default)
        try:
            ir = tile_type((r, c), dt, space, *lay, platform=self.platform)
        except KeyError:                        # (col_major blocks of col_major fractals)
            if space is MemorySpace.Left and self.platform:
                raise self.error("a Left tile with slayout=col_major is blayout=col_major on A5 (ptoas gives every A5 "
                                 "Left tile col_major blocks, whatever its type says): col_major blocks of col_major "
                                 "fractals are no tile layout", vals["slayout"][1],
                                 "declare the Left tile slayout=row_major (NZ, pto-isa's TileLeft on A5)") from None
            raise self.error("blayout=col_major with slayout=col_major is no tile layout", vals["blayout"][1],
                             "use blayout=col_major, slayout=row_major (NZ) or blayout=row_major, slayout=col_major "
                             "(ZN)") from None
        if space is MemorySpace.Vec:
            bad = tile_shape_refusal(TileType.Vec, ir.written_layout(self.platform), r, c, np_dtype(dt).itemsize,
                                     tuple(valid) if len(valid) == 2 else None)
            if bad is not None:
                raise CompileError(bad[0], where=self.where(t), fix=bad[1])
        if len(valid) == 2 and tuple(valid) != (r, c) and 0 not in valid:
            # the data's shape in pto-isa's padded static shape (how ptopipe's writer declares a
            # tile, arch.vocab.static_shape) is an IR tile of the data's shape
            data = tile_type(tuple(valid), dt, space, *lay, platform=self.platform)
            if data.static_shape == (r, c):
                ir = data
        return PType("tile", ir=ir, shape=(r, c))

    def _int(self, kv) -> int:
        text, t = kv
        try:
            v = int(text)
        except ValueError:
            raise self.error(f"expected an integer, got {text!r}", t) from None
        if v <= 0 and t.text != "0":
            raise self.error(f"expected a positive integer, got {text!r}", t)
        return v


