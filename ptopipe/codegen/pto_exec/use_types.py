"""The type each use of an SSA value is written with, against the type its definition gives it
(MLIR's rule, which ptoas enforces: "use of value expects different type than prior uses").
The executor runs a value as its definition made it, so a use that says another type - a tile
read as ``valid=8x64`` that was made ``16x64``, an ``i32`` bound of an ``index`` loop - would
run as something the file does not say; it is a ParseError at the use.

Read from an op's own text, where its spelling pairs values with types - ``ins(%a, %b : A, B)``
/ ``outs(...)`` / ``pto.tpush_to_aiv(%t : T)`` groups, ``scf.yield`` / ``return %v : T``,
``func.call @f(%v) : (T) -> ...``, the one type of an ``arith`` op, the source of a view op, the
``index`` operands of the view and allocation ops and of ``scf.for`` headers - and from the
definitions whose type the text says: parameters, block arguments, loop variables and
``iter_args``, results after ``:`` / ``->``.  A use or a definition of another form is not
compared (never refused for a form not read here).

Two spellings of one type (a tile's long and short forms) are the same type: texts that differ
are parsed (:class:`~.types.TypeReader`) and compared as ptoas holds them - a key the short form
leaves out is ptoas's default for it (blayout row_major, slayout none_box, fractal 512, pad 0)."""
from __future__ import annotations

import re

from ...errors import CompileError, ParseError
from ..pto_lexer import tokenize
from ..pto_syntax import (BARE_TILE, IMPLICIT_RESULT_TYPE, bare_tile_refusal, type_word_refusal,
                          unprefixed_tile_refusal)
from ..pto_tree import VALUE_NAME as _V
from .headers import for_header
from ...arch.vocab import BLayout, PadValue, SLayout
from .types import BLAYOUT, SLAYOUT, MultiSpec, TileSpec, TypeReader, dtype_name

#: a type: a name with its ``<...>`` (nested three deep: ``memref<..., strided<[...]>, ...>``),
#: or a ``(...)`` list
_ANGLED = r"<[^<>]*(?:<[^<>]*(?:<[^<>]*>[^<>]*)*>[^<>]*)*>"
_T = rf"(?:!?[A-Za-z_][\w.]*(?:{_ANGLED})?|\([^()]*\))"
_VALUE = re.compile(_V)
#: the values of a group and their ``:`` (after the group's ``(``)
_GROUP_VALUES = re.compile(rf"\s*({_V}(?:\s*,\s*{_V})*)\s*:")
#: the same with an attribute dictionary after the values (``ins(%x {rmode = ...} : T)``,
#: ``ins(%x, %s {cmpMode = ...} : T, f32)``, ``ins(%src, {maskPattern = ...} : T)``)
_GROUP_VALUES_ATTRS = re.compile(rf"\s*({_V}(?:\s*,\s*{_V})*)\s*,?\s*\{{[^{{}}]*\}}\s*:")
#: one type of a list, and what follows it
_NEXT_TYPE = re.compile(rf"\s*({_T})\s*(,|\)|$)")
#: a type ending the text
_LAST_TYPE = re.compile(rf"\s*({_T})\s*$")
_CAST = re.compile(rf"^\s*({_V})\s*:\s*({_T})\s+to\s+({_T})\s*$")
_CALL = re.compile(r"@[\w$.]+\s*\(([^()]*)\)\s*:\s*\(")
_BARE_TILE_TYPE = re.compile(re.escape(BARE_TILE[:-1]) + _ANGLED)
#: a tile type of a type list with no name before its ``<...>`` (``ins(%a : <loc=vec, ...>)``)
_UNNAMED_TILE_TYPE = re.compile(r"[:,]\s*(<\s*loc\s*=[^<>]*>)")
#: ``%x = ...`` inside an op's own text: a name its regions define
_INTRODUCED = re.compile(r"(%[A-Za-z0-9_$.-]+)\s*=(?!=)")
_SOURCE = re.compile(rf"\s*({_V})[^:]*:\s*({_T})\s*->")
_CONDITION = re.compile(rf"\s*\(\s*({_V})\s*\)\s*({_V}(?:\s*,\s*{_V})*)?\s*(:)?")
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
_KEYED_INDEX = re.compile(rf"\b(?:valid_row|valid_col)\s*=\s*({_V})")

#: arith ops whose operands and result all have the op's one type
_SAME = frozenset(f"arith.{n}" for n in (
    "addi", "subi", "muli", "divsi", "divui", "ceildivsi", "ceildivui", "floordivsi", "remsi", "remui", "andi",
    "ori", "xori", "shli", "shrsi", "shrui", "maxsi", "maxui", "minsi", "minui", "addf", "subf", "mulf", "divf",
    "remf", "maximumf", "minimumf", "maxnumf", "minnumf", "negf"))
_CASTS = frozenset(f"arith.{n}" for n in (
    "index_cast", "index_castui", "extsi", "extui", "trunci", "sitofp", "uitofp", "fptosi", "fptoui", "extf",
    "truncf", "bitcast"))
#: ops whose ``[...]`` lists hold ``index`` values (shape / strides, offsets / sizes)
_INDEX_LISTS = frozenset(("pto.make_tensor_view", "pto.partition_view", "pto.subview"))
#: ops whose first value is read with the type before their ``->`` (``%src, ... : A -> B``)
_SOURCE_ARROW = frozenset(("pto.partition_view", "pto.subview", "pto.treshape", "pto.tassign", "pto.addptr",
                           "pto.bind_tile", "pto.get_tensor_view_dim"))
#: ops whose result is the type after their ``:``
_COLON_RESULT = frozenset(("arith.constant", "arith.select", "pto.make_tensor_view", "pto.alloc_tile",
                           "memref.alloc")) | _SAME


def _after(text: str, mark: str, checked: bool = False):
    """The type ending ``text`` after its last ``mark`` (``:`` or ``->``) - ``(type, offset of
    the mark)`` - else None.  ``checked``: the text is known to end with one type (the rest of
    the text after the mark is it, when it starts as a type does)."""
    k = text.rfind(mark)
    if checked and k >= 0:
        rest = text[k + len(mark):].strip()
        if rest[:1].isalpha() or rest[:1] == "!":
            return rest, k
    while k >= 0:
        m = _LAST_TYPE.match(text, k + len(mark))
        if m is not None:
            return m.group(1), k
        k = text.rfind(mark, 0, k)          # (a ':' inside the type: memref's `offset: ?`)
    return None


def _groups(text: str) -> list:
    """``(values start, values end, types start, types end)`` of each ``ins(`` / ``outs(`` /
    leading ``(`` group of values with their types (found with ``str.find``: this runs on
    every tile op)."""
    out = []
    for kw in ("ins(", "outs("):
        k = text.find(kw)
        while k >= 0:
            if k == 0 or text[k - 1] in " \t)":
                k += len(kw)
                c, e = text.find(":", k), text.find(")", k)
                if 0 <= c < e:
                    out.append((k, c, c + 1, e))
            k = text.find(kw, k + 1)
    if text[:1] == "(" or text[:2] == " (":
        k = text.index("(") + 1
        c, e = text.find(":", k), text.find(")", k)
        if 0 <= c < e:
            out.append((k, c, c + 1, e))
    return out


def _as_defined(text: str, v0: int, v1: int, t0: int, t1: int, defs: dict) -> bool:
    """Does the group whose values are ``text[v0:v1]`` and types ``text[t0:t1]`` spell exactly
    its values' definitions' types, ``, ``-separated (the common case, found without reading
    a type)?"""
    want = []
    for v in text[v0:v1].split(","):
        d = defs.get(v.strip())
        if d is None:
            return False
        want.append(d[0])
    return text[t0:t1].strip() == ", ".join(want)


def _groups_as_defined(text: str, defs: dict) -> bool:
    """Does ``text`` hold an ``ins(`` / ``outs(`` group, and does each spell exactly its
    values' definitions' types (the common case of a tile op, decided with ``str.find``)?"""
    find = text.find
    k = find("s(")
    if k < 0:
        return False
    while k >= 0:
        c, e = find(":", k), find(")", k)
        if c < 0 or e < c:
            return False
        values = text[k + 2:c].split(",")
        if len(values) == 1:              # (one value: its type alone, no list to join)
            d = defs.get(values[0].strip())
            if d is None or text[c + 1:e].strip() != d[0]:
                return False
        else:
            want = []
            for v in values:
                d = defs.get(v.strip())
                if d is None:
                    return False
                want.append(d[0])
            if text[c + 1:e].strip() != ", ".join(want):
                return False
        k = find("s(", e)
    return True


def _view_as_defined(text: str, defs: dict) -> bool:
    """Does a ``pto.partition_view``'s text give its source the source's definition's type
    and only ``index`` values (or values of no known type) in its ``[...]`` lists?"""
    arrow = text.rfind("->")
    colon = text.rfind(":", 0, arrow)
    d = defs.get(text[:text.find(",")].strip())
    if arrow < 0 or colon < 0 or d is None or d[0] != text[colon + 1:arrow].strip():
        return False
    k = text.find("[")
    while k >= 0:
        e = text.find("]", k)
        for v in text[k + 1:e].split(","):
            d = defs.get(v.strip())
            if d is not None and d[0] != "index":
                return False
        k = text.find("[", e)
    return True


def _types_at(text: str, pos: int) -> list:
    """The types of the comma-separated list at ``text[pos:]`` (up to a ``)`` or the end; a
    piece that is no type ends it)."""
    out = []
    while True:
        m = _NEXT_TYPE.match(text, pos)
        if m is None:
            return out
        out.append(m.group(1))
        if m.group(2) != ",":
            return out
        pos = m.end()


def _type_list(t: str) -> list:
    """``(A, B)`` -> [A, B]; ``A`` -> [A]; ``()`` -> []."""
    t = t.strip()
    if t.startswith("("):
        return _types_at(t, 1) if t[1:-1].strip() else []
    return [t]


def group_count_slip(text: str) -> tuple | None:
    """``(offset of the types, values, types)`` of the first ``ins(`` / ``outs(`` / leading
    ``(`` group of ``text`` whose type list - read whole, up to the group's ``)`` - names
    another number of types than the group has values (MLIR pairs them one to one; ptoas:
    "expected ','" / "expected ':'"), else None.  A list not read whole here (a type this
    module does not spell, an operand with a type of its own) is left alone."""
    for v0, v1, t0, t1 in _groups(text):
        m = _GROUP_VALUES.match(text, v0)
        if m is None or m.end() != v1 + 1:
            continue
        n, pos = 0, t0
        while True:
            t = _NEXT_TYPE.match(text, pos)
            if t is None:
                break
            n += 1
            if t.group(2) != ",":
                nvals = len(_values(text, v0, v1))
                if t.group(2) == ")" and t.end() - 1 == t1 and n != nvals:
                    return t0, nvals, n
                break
            pos = t.end()
    return None


def _values(text: str, start: int, end: int) -> list:
    return [(m.group(), m.start()) for m in _VALUE.finditer(text, start, end)]


def uses(s, defs: dict | None = None) -> list:
    """``(name, type text, offset in the op's text)`` of the uses of ``s`` whose type its text
    says (``defs``: name -> (type text, ...) of the definitions: a group or a source that
    spells exactly its values' definitions' types is left out, unread)."""
    name, text = s.name, s.text()
    out = []
    if name in _SAME or name in ("arith.cmpi", "arith.cmpf"):
        got = _after(text, ":")
        return [(v, got[0], k) for v, k in _values(text, 0, got[1])] if got else out
    if name.startswith("pto.") or name == "memref.dealloc":
        for v0, v1, t0, t1 in _groups(text):
            if defs is not None and _as_defined(text, v0, v1, t0, t1, defs):
                continue
            m = _GROUP_VALUES.match(text, v0)          # (values, and an attribute dictionary
            if m is None or m.end() != v1 + 1:          # after them: nothing else is read)
                m = _GROUP_VALUES_ATTRS.match(text, v0)
                if m is None or m.end() != v1 + 1:
                    continue
            vals, tys = _values(text, m.start(1), m.end(1)), _types_at(text, t0)
            if len(tys) == len(vals):
                out.extend((v, t, k) for (v, k), t in zip(vals, tys))
        if name in _SOURCE_ARROW:
            m = _SOURCE.match(text)
            if m is not None:
                d = defs.get(m.group(1)) if defs is not None else None
                if d is None or d[0] != m.group(2):
                    out.append((m.group(1), m.group(2), m.start(1)))
        if name in _INDEX_LISTS:
            for b in _BRACKETS.finditer(text):
                out.extend((v, "index", k) for v, k in _values(text, b.start(), b.end()))
        elif name in ("pto.alloc_tile", "pto.declare_tile") and "valid_" in text:
            out.extend((m.group(1), "index", m.start(1)) for m in _KEYED_INDEX.finditer(text))
        return out
    if name in ("scf.yield", "return"):
        m = _GROUP_VALUES.match(text)
        if m is not None:
            vals, tys = _values(text, m.start(1), m.end(1)), _types_at(text, m.end())
            if len(vals) == len(tys):
                out.extend((v, t, k) for (v, k), t in zip(vals, tys))
        return out
    if name == "scf.condition":
        m = _CONDITION.match(text)
        if m is not None:
            out.append((m.group(1), "i1", m.start(1)))
            if m.group(2) is not None and m.group(3) is not None:
                vals, tys = _values(text, m.start(2), m.end(2)), _types_at(text, m.end())
                if len(vals) == len(tys):
                    out.extend((v, t, k) for (v, k), t in zip(vals, tys))
        return out
    if name == "func.call":
        m = _CALL.search(text)
        if m is not None:
            vals, tys = _values(text, m.start(1), m.end(1)), _types_at(text, m.end())
            if len(vals) == len(tys):
                out.extend((v, t, k) for (v, k), t in zip(vals, tys))
        return out
    if name in _CASTS:
        m = _CAST.match(text)
        return [(m.group(1), m.group(2), m.start(1))] if m else out
    if name == "arith.select":
        got = _after(text, ":")
        vals = _values(text, 0, got[1]) if got else []
        if len(vals) == 3:
            out = [(vals[0][0], "i1", vals[0][1])] + [(v, got[0], k) for v, k in vals[1:]]
        return out
    if name == "scf.for":
        return [(v.text, t, s.offset(v)) for v, t in for_header(s, s.filename).uses()]
    if name == "scf.if":
        v = _VALUE.match(text.lstrip())
        if v is not None:
            out.append((v.group(), "i1", text.index(v.group())))
        return out
    return out


def introduced(s) -> dict:
    """name -> type text (None: not read here) of the values a region-holding op's header gives
    its regions: an ``scf.for``'s loop variable and ``iter_args``, an ``scf.while``'s ``%x =``
    arguments."""
    if s.name == "scf.for":
        return for_header(s, s.filename).introduced()
    return dict.fromkeys(_INTRODUCED.findall(s.text())) if s.regions else {}


#: ``%src[%r, %c] sizes [R, C] : <source type>`` (a ``pto.subset``'s text)
_SUBSET = re.compile(rf"^\s*({_V})\s*\[\s*([^\],\s]+)\s*,\s*([^\]\s]+)\s*\]\s*sizes\s*\[\s*(\d+)\s*,\s*(\d+)\s*\]"
                     rf"\s*:\s*({_T})\s*$")
_DIM = re.compile(r"\b(rows|cols|v_row|v_col)=([^,>]+)")


def subset_result(text: str, consts: dict) -> str | None:
    """The type ptoas gives ``%v = pto.subset`` of ``text`` (PTOAS ``SubsetOp::inferReturnTypes``):
    its source's long-form type with ``rows`` / ``cols`` the sizes and each valid dimension
    ``min(size, pv - off mod pv)`` for a static source valid dimension ``pv`` and a constant
    offset (``consts``: the function's integer constants by name), else ``?``; None for a
    source type of another form (not compared)."""
    m = _SUBSET.match(text)
    if m is None or not m.group(6).startswith("!pto.tile_buf<loc="):
        return None
    src = dict(_DIM.findall(m.group(6)))
    if len(src) != 4:
        return None
    new = {"rows": m.group(4), "cols": m.group(5)}
    for key, off_text, size in (("v_row", m.group(2), int(m.group(4))), ("v_col", m.group(3), int(m.group(5)))):
        pv = src[key].strip()
        off = consts.get(off_text, int(off_text) if off_text.lstrip("-").isdigit() else None)
        if not pv.isdigit() or off is None:
            new[key] = "?"
        else:
            pv = int(pv)
            new[key] = str(min(size, pv - off % pv if pv > 0 else 0))
    return _DIM.sub(lambda d: f"{d.group(1)}={new[d.group(1)]}", m.group(6))


def results(s, consts: dict | None = None) -> list:
    """The type texts of ``s``'s results, in order, where its text says them (else [];
    ``consts``: the function's integer constants, for the type a ``pto.subset`` infers - without
    them it is not read)."""
    n, name = len(s.results), s.name
    if not n:
        return []
    text = s.text()
    if name == "pto.subset":
        got = subset_result(text, consts) if consts is not None and n == 1 else None
        return [got] if got else []
    if name == "scf.for":
        tys = list(for_header(s, s.filename).result_types)
        return tys if len(tys) == n else []
    if name in ("scf.if", "scf.while", "func.call", "scf.execute_region"):
        if name == "scf.if" and text.rstrip().endswith(" else"):
            text = text.rstrip()[:-5]         # (the `else` between an scf.if's regions)
        got = _after(text, "->")
        tys = _type_list(got[0]) if got else []
        return tys if len(tys) == n else []
    if n != 1 or s.regions:
        return []
    if name in IMPLICIT_RESULT_TYPE:
        return [IMPLICIT_RESULT_TYPE[name]]
    if name in _CASTS:
        m = _CAST.match(text)
        return [m.group(3)] if m else []
    if name in ("arith.cmpi", "arith.cmpf"):
        return ["i1"]
    if name in _COLON_RESULT:
        got = _after(text, ":", checked=True)
        return [got[0]] if got else []
    got = _after(text, "->", checked=True)  # `-> T`: the result's type
    return [got[0]] if got else []


def _as_ptoas_reads(t: TileSpec) -> tuple:
    """A tile type's fields as ptoas's type holds them: a key the text leaves out is its value in
    ptoas's short form (blayout row_major, slayout none_box, fractal 512, pad Null)."""
    return (t.loc, t.dtype, t.rows, t.cols, t.v_rows, t.v_cols, t.blayout or BLayout.RowMajor,
            t.slayout or SLayout.NoneBox, t.fractal or 512, t.pad)


#: the parse of a tile type whose static shape pto-isa's Tile refuses (a CompileError where the
#: type is declared): no type a tile is made with - a use spelling it names another type than a
#: definition that parsed
_REFUSED_SHAPE = object()


def _same(a, b) -> bool | None:
    """Are the parsed types ``a`` and ``b`` one type, as ptoas compares them (a tile's keys
    written or not: :func:`_as_ptoas_reads`); None when either did not parse."""
    if a is None or b is None:
        return None
    if (a is _REFUSED_SHAPE) != (b is _REFUSED_SHAPE):
        return False
    if a is _REFUSED_SHAPE:
        return None
    if isinstance(a, MultiSpec) and isinstance(b, MultiSpec):
        return a.count == b.count and _same(a.slot, b.slot)
    if isinstance(a, TileSpec) and isinstance(b, TileSpec):
        return _as_ptoas_reads(a) == _as_ptoas_reads(b)
    if isinstance(a, tuple) and isinstance(b, tuple) and a[:1] == b[:1] == ("memref",):
        same = _same(a[1], b[1]) if isinstance(a[1], TileSpec) and isinstance(b[1], TileSpec) else a[1] == b[1]
        return same and a[2:] == b[2:]
    if isinstance(a, tuple) and a[:1] in (("opaque",), ("pipe",)):
        return None                                  # (not spelled out: the texts decide)
    return a == b


#: a tile layout as the type spells it
_SPELLING = {v: k for d in (BLAYOUT, SLAYOUT) for k, v in d.items()}
#: a tile's pad value as the long form spells it (None: Null)
_PAD_SPELLING = {None: 0, PadValue.Null: 0, PadValue.Zero: 1, PadValue.Max: 2, PadValue.Min: 3}


_INT_TYPE = re.compile(r"(index|i\d+)$")


def _cast_fix(name: str, defined: str, used: str) -> str | None:
    """The fix of an integer value used as another integer type: ``arith.index_cast`` to or
    from ``index``, ``arith.extsi`` / ``arith.trunci`` between ``iN`` (None: not two integer
    types)."""
    if not (_INT_TYPE.match(defined) and _INT_TYPE.match(used)):
        return None
    if "index" in (defined, used):
        op = "arith.index_cast"
    else:
        op = "arith.extsi" if int(defined[1:]) < int(used[1:]) else "arith.trunci"
    cast = f"{name}_{used}" if used != "index" else f"{name}_idx"
    return f"cast it first: `{cast} = {op} {name} : {defined} to {used}`, and use {cast} here"


class UseTypes:
    """The definitions' types of one function as the reader meets them, and the check of each
    use against them (``defs``: name -> (type text, line, col))."""

    def __init__(self, types: TypeReader):
        self.types = types
        self.defs = {}
        self._parsed = {}            # type text -> its parse (None: not read here)
        self._verdicts = {}          # (text, text) -> same type?

    def define(self, name: str, ty: str | None, line: int, col: int) -> None:
        if ty:
            bad = type_word_refusal(ty)
            if bad is not None:
                raise ParseError(f"{name}'s type: {bad[0]}", where=f"{self.types.f}:{line}:{col}", fix=bad[1])
            self.defs[name] = (ty, line, col)

    def forget(self, name: str) -> None:
        self.defs.pop(name, None)

    def _parse(self, text: str):
        if text not in self._parsed:
            try:
                toks = tokenize(text, self.types.f)[:-1]
                self._parsed[text] = self.types._parse(toks) if toks else None
            except CompileError:
                self._parsed[text] = _REFUSED_SHAPE
            except ParseError:
                self._parsed[text] = None
        return self._parsed[text]

    def same(self, a: str, b: str) -> bool:
        if a == b:
            return True
        key = (a, b)
        got = self._verdicts.get(key)
        if got is None:
            if " ".join(a.split()) == " ".join(b.split()):
                got = True
            else:                # (a form not parsed here is never refused)
                got = _same(self._parse(a), self._parse(b)) is not False
            self._verdicts[key] = got
        return got

    def check(self, s) -> None:
        """Each use of ``s`` whose type the text says has its definition's type: else a
        ParseError at the use."""
        name, text = s.name, s.text()
        if name.startswith("pto.") and BARE_TILE in text:
            m = _BARE_TILE_TYPE.search(text)
            at = m.start() if m else text.index(BARE_TILE)
            what, fix = bare_tile_refusal(name, m.group() if m else BARE_TILE + "...>")
            line, col = s.position(at)
            raise ParseError(what, where=f"{self.types.f}:{line}:{col}", fix=fix)
        m = _UNNAMED_TILE_TYPE.search(text) if name.startswith("pto.") else None
        if m is not None:
            what, fix = unprefixed_tile_refusal(m.group(1))
            line, col = s.position(m.start(1))
            raise ParseError(what, where=f"{self.types.f}:{line}:{col}", fix=fix)
        if name.startswith("pto.t") and _groups_as_defined(text, self.defs) or \
                name == "pto.partition_view" and _view_as_defined(text, self.defs):
            return                    # (the common cases, decided without reading a type)
        slip = group_count_slip(text) if name.startswith("pto.") else None
        if slip is not None:
            at, nvals, ntys = slip
            line, col = s.position(at + len(text[at:]) - len(text[at:].lstrip()))
            raise ParseError(f"{name}: {nvals} operand(s) but {ntys} type(s) after their ':' (MLIR gives each "
                             "operand one type; ptoas refuses the op)", where=f"{self.types.f}:{line}:{col}",
                             fix="write one type per operand, in the operands' order")
        for name, ty, at in uses(s, self.defs):
            bad = type_word_refusal(ty)
            if bad is not None:
                k = s.text().find(ty, at)
                line, col = s.position(k if k >= 0 else at)
                raise ParseError(f"{name}'s type here: {bad[0]}", where=f"{self.types.f}:{line}:{col}", fix=bad[1])
            d = self.defs.get(name)
            if d is None or self.same(d[0], ty):
                continue
            line, col = s.position(at)
            raise ParseError(
                f"{name} is used here as {self._differs(ty, d[0])} its definition (line {d[1]}) makes it (ptoas: "
                "use of value expects different type than prior uses)", where=f"{self.types.f}:{line}:{col}",
                fix=_cast_fix(name, d[0], ty) or f"write {name}'s type as its definition says it, or use a value "
                    "of the type this operand needs")

    def _differs(self, used: str, defined: str) -> str:
        """``A, but B`` of a use's type and its definition's: the fields two tiles differ in,
        else the two types."""
        a, b = self._parse(used), self._parse(defined)
        if isinstance(a, TileSpec) and isinstance(b, TileSpec):
            fields = [(k, x, y) for k, x, y in (
                ("loc", a.loc.name.lower(), b.loc.name.lower()), ("dtype", dtype_name(a.dtype), dtype_name(b.dtype)),
                ("rows", a.rows, b.rows), ("cols", a.cols, b.cols), ("v_row", a.v_rows, b.v_rows),
                ("v_col", a.v_cols, b.v_cols),
                ("blayout", _SPELLING[a.blayout or BLayout.RowMajor], _SPELLING[b.blayout or BLayout.RowMajor]),
                ("slayout", _SPELLING[a.slayout or SLayout.NoneBox], _SPELLING[b.slayout or SLayout.NoneBox]),
                ("fractal", a.fractal or 512, b.fractal or 512),
                ("pad", _PAD_SPELLING[a.pad], _PAD_SPELLING[b.pad])) if x != y]
            if fields:
                show = lambda v: "?" if v is None else v      # noqa: E731
                return (f"a tile with {', '.join(f'{k}={show(x)}' for k, x, _ in fields)}, but "
                        f"{', '.join(f'{k}={show(y)}' for k, _, y in fields)} is what")
        return f"{' '.join(used.split())}, but {' '.join(defined.split())} is what"
