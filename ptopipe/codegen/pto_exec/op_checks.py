"""What ptoas's parser and verifier refuse in one op's own pieces that the reader sees before
anything runs - each a ParseError at the op (or the piece), saying what ptoas says:

* a constant whose literal is not of its type (``arith.constant 4.5 : index``, ``1 : f32``), or
  of a signed / unsigned integer type (``2 : ui32``: arith.constant is signless);
* a tile type's long form without every key in order, an ``pto.alloc_tile``'s valid-shape
  operands where its type's ``v_row`` / ``v_col`` is static (or none where it is ``?``);
* a ``pto.partition_view`` whose constant sizes are not its result type's shape, or whose
  constant offsets are negative or, with its sizes, leave its source's static shape;
* a pipe init's ``dir_mask`` naming no direction;
* a ``pto.tstore`` of a tile whose static valid shape holds another number of elements than its
  static partition view (:func:`check_store_count`, after the uses' types: ptoas's parser refuses
  a use of another type before its verifier sees the store).

What only a newer ptoas reads - the ops and the ``pto.set_ffts`` pointer pypto writes for 0.54 -
is a warning at the op instead (:func:`newer_ptoas_refusals`): ptopipe runs it as that ptoas does.
"""
from __future__ import annotations

import re
from collections import Counter

from ...arch.vocab import PLAIN_DIRECTION
from ...errors import CompileError, ParseError, with_article
from ..pto_syntax import NEWER_PTOAS_OPS
from ..pto_tree import split_top
from .program import Func, int_constants
from .types import TileSpec, TypeReader

#: the ops whose result type is a tile they make
_TILE_MAKERS = frozenset(("pto.alloc_tile", "pto.declare_tile", "pto.tpop_from_aic", "pto.tpop_from_aiv"))
#: a ``!pto.tile_buf`` long form with every key, in ptoas's order (what needs no closer look)
_FULL_LONG_FORM = re.compile(r"!pto\.tile_buf<loc=[^,<>]+, dtype=[^,<>]+, rows=[^,<>]+, cols=[^,<>]+, "
                             r"v_row=[^,<>]+, v_col=[^,<>]+, blayout=[^,<>]+, slayout=[^,<>]+, fractal=[^,<>]+, "
                             r"pad=[^,<>]+(?:, compact=[^,<>]+)?>$")


def check_tile_result(s, types: TypeReader, seen: dict | None = None) -> None:
    """The tile type an op makes is spelled as ptoas reads it: a long form names every key in
    order (else a ParseError at the key, before anything runs); an ``pto.alloc_tile`` gives
    ``valid_row`` / ``valid_col`` exactly where its type's ``v_row`` / ``v_col`` is ``?``
    (ptoas: "valid_row operand is required because result type v_row is ?", "... must be
    absent because result type v_row is 16"; ``-1`` is its other spelling of ``?``)."""
    ty = s.result_type_text()
    if ty is None:
        return
    seen = {} if seen is None else seen          # (type texts read before: read once)
    if ty not in seen:
        if ty.startswith("!pto.tile_buf<loc=") and not _FULL_LONG_FORM.match(ty):
            tys = s.types() or s.arrow_type()
            if tys:
                types.parse(tys[-1])             # (the ParseError at the key)
        seen[ty] = True
    if s.name == "pto.alloc_tile":
        spec = types.spec_of(s)             # (v_row=? and v_row=-1 alike read as dynamic)
        if spec is None or not hasattr(spec, "v_rows"):
            return
        for key, dim, given in (("valid_row", "v_row", spec.v_rows), ("valid_col", "v_col", spec.v_cols)):
            has = s.has_key(key)
            if has and given is not None:
                raise types.err(f"pto.alloc_tile gives {key}, but its type's {dim} is {given}: the valid shape is "
                                f"the type's (ptoas: {key} operand must be absent because result type {dim} is "
                                f"{given})", s.tok, fix=f"drop {key} = ..., or write {dim}=? in the type")
            if not has and given is None:
                raise types.err(f"pto.alloc_tile of a type with {dim}=? needs {key} = %n (ptoas: {key} operand "
                                f"is required because result type {dim} is ?)", s.tok,
                                fix=f"give {key} = %n (an index value), or a static {dim} in the type")


def check_op(s, types: TypeReader, consts: "Constants") -> None:
    """The checks of this module that apply to ``s``."""
    name = s.name
    if name in _TILE_MAKERS:
        if s.results:
            check_tile_result(s, types, consts.seen)
    elif name == "arith.constant":
        check_constant(s, types)
    elif name == "pto.partition_view":
        check_partition_sizes(s, types, consts)
    elif "initialize" in name and "pipe" in name:
        check_dir_mask(s, types)


class Constants:
    """The integer ``arith.constant`` values of a function by name, made on first use (a name
    defined twice - in two sibling regions - is left out: which one a use sees is not read here)."""

    def __init__(self, f: Func):
        self.f, self._values = f, None
        self.seen = {}                    # the partition sizes / tile type texts checked already

    @property
    def values(self) -> dict:
        if self._values is None:
            names = Counter(r for s in self.f.statements() if s.name == "arith.constant" for r in s.results)
            self._values = {k: v for k, v in int_constants(self.f).items() if names[k] == 1}
        return self._values


_INT_TYPE = re.compile(r"^(?:index|[su]?i\d+)$")
#: an integer type with a signedness: MLIR's arith.constant makes signless integers only
_SIGNED_INT_TYPE = re.compile(r"^[su]i\d+$")
_FLOAT_TYPE = frozenset(("f16", "bf16", "f32", "f64", "f8E4M3FN", "f8E5M2"))
_CONSTANT = re.compile(r"^\s*(\S+)\s*:\s*(\S+)\s*$")
_DECIMAL_INT = re.compile(r"^[-+]?\d+$")
_HEX = re.compile(r"^0x[0-9A-Fa-f]+$")
_FLOAT = re.compile(r"^[-+]?\d+\.\d*(?:[eE][-+]?\d+)?$")


def check_constant(s, types: TypeReader) -> None:
    """``arith.constant V : T``: an integer or index ``T`` takes an integer literal (``i1`` 0,
    1, true, false), a float ``T`` a literal with a ``.`` (MLIR reads ``1e3`` as no number)."""
    m = _CONSTANT.match(s.text())
    if m is None:
        return
    lit, ty = m.groups()
    if lit.startswith("dense"):
        return                              # (a dense literal: its handler reads it)
    bad = None
    if _SIGNED_INT_TYPE.match(ty):
        raise types.err(f"arith.constant of type {ty}: an arith.constant integer is signless (ptoas: 'arith.constant' "
                        "op integer return type must be signless)", s.tok,
                        fix=f"write the constant as i{ty.lstrip('su')[1:]} (a tile's element type may be unsigned; "
                            "its scalar operand is the signless integer of that width)")
    if _INT_TYPE.match(ty):
        if lit in ("true", "false"):
            bad = None if ty == "i1" else f"{lit} is an i1 literal, not one of {ty}"
        elif _FLOAT.match(lit) or (not _DECIMAL_INT.match(lit) and not _HEX.match(lit)):
            bad = f"{lit} is not an integer literal, which {with_article(ty)} constant takes (ptoas: floating " \
                  "point value not valid for specified type)"
        elif ty == "i1" and _DECIMAL_INT.match(lit) and int(lit) not in (0, 1, -1):
            bad = f"{lit} does not fit an i1 (ptoas: integer constant out of range for attribute)"
    elif ty in _FLOAT_TYPE:
        if _DECIMAL_INT.match(lit):
            bad = f"{lit} is an integer literal; {with_article(ty)} constant takes one with a '.' (ptoas: " \
                  "unexpected decimal integer literal for a floating point value)"
        elif not _FLOAT.match(lit) and not _HEX.match(lit) and lit not in ("inf", "nan", "-inf"):
            bad = f"{lit} is not a float literal as MLIR reads one (digits, a '.', then an optional exponent)"
    if bad is not None:
        example = "4" if _INT_TYPE.match(ty) else "4.0"
        raise types.err(f"arith.constant: {bad}", s.tok,
                        fix=f"write the value as {with_article(ty)} literal (e.g. {example}), or give the constant the "
                            "type of its literal")


_SIZES = re.compile(r"\bsizes\s*=\s*\[([^\[\]]*)\]")
_OFFSETS = re.compile(r"\boffsets\s*=\s*\[([^\[\]]*)\]")
_PART_SHAPE = re.compile(r"->\s*!pto\.partition_tensor_view<([\d?x]+)x[A-Za-z]\w*>\s*$")
_SOURCE_SHAPE = re.compile(r":\s*!pto\.tensor_view<([\d?x]+)x[A-Za-z]\w*>\s*(?:->|$)")


def check_partition_sizes(s, types: TypeReader, consts: Constants) -> None:
    """A ``pto.partition_view``'s constants as ptoas's verifier judges them: each size is its
    result type's static dim ("size/result mismatch at dim 1"), no offset is negative ("offset
    at dim 0 must be non-negative"), and offset + size stays within a static dim of the source
    view's type ("offset+size at dim 0 (32) exceeds static source dim (16)"; a ``?`` dim is
    not checked, by ptoas either)."""
    text = s.text()
    m, r, o = _SIZES.search(text), _PART_SHAPE.search(text), _OFFSETS.search(text)
    src = _SOURCE_SHAPE.search(text)
    key = (m and m.group(1), r and r.group(1), o and o.group(1), src and src.group(1))
    if m is None or key in consts.seen:
        return
    consts.seen[key] = True
    sizes = [v.strip() for v in m.group(1).split(",")]
    offs = [v.strip() for v in o.group(1).split(",")] if o is not None else [None] * len(sizes)
    dims = r.group(1).split("x") if r is not None else ["?"] * len(sizes)
    src_dims = src.group(1).split("x") if src is not None else ["?"] * len(sizes)
    if not len(dims) == len(sizes) == len(offs) == len(src_dims):
        return

    def value(v):
        if v is None:
            return None
        return consts.values.get(v) if v.startswith("%") else (int(v) if v.lstrip("-").isdigit() else None)

    for k, (sv, d, ov, sd) in enumerate(zip(sizes, dims, offs, src_dims)):
        n, off = value(sv), value(ov)
        problem = None
        if n is not None and d != "?" and n != int(d):
            problem = (f"pto.partition_view: size {k} is {sv} = {n}, but its result type's dim {k} is {d} (ptoas: "
                       f"size/result mismatch at dim {k})", f"make size {k} {d}, or the result type's dim {k} {n}")
        elif off is not None and off < 0:
            problem = (f"pto.partition_view: offset {k} is {ov} = {off}, a negative offset (ptoas: offset at "
                       f"dim {k} must be non-negative)", f"give offset {k} a value >= 0")
        elif off is not None and n is not None and sd != "?" and off + n > int(sd):
            problem = (f"pto.partition_view: offset {k} + size {k} = {off} + {n} = {off + n} leaves the source "
                       f"view's dim {k} of {sd} (ptoas: offset+size at dim {k} exceeds static source dim)",
                       f"keep offset {k} + size {k} <= {sd}")
        if problem is not None:
            del consts.seen[key]
            raise types.err(problem[0], s.tok, fix=problem[1])


#: the dir_mask values of a pipe init: 1 C2V, 2 V2C, 3 both; 5 / 6 / 7 the same with the ring in GM
DIR_MASKS = frozenset((1, 2, 3)) | frozenset(int(d) for d in PLAIN_DIRECTION)


def check_dir_mask(s, types: TypeReader) -> None:
    v = s.attr("dir_mask")
    if not v or not v[0].text.lstrip("-").isdigit():
        return
    if int(v[0].text) not in DIR_MASKS:
        accepted = ", ".join(str(d) for d in sorted(DIR_MASKS))
        raise types.err(f"{s.name}: dir_mask = {v[0].text} names no direction (it takes one of {accepted})", v[0],
                        fix="give 1 (C2V), 2 (V2C) or 3 (both); 5 / 6 / 7: the same with the ring in GM")


def _group_types(s, key: str) -> list:
    """The type token lists of ``s``'s ``key(... : T, ...)`` group ([] without one)."""
    parts = split_top(s.group(key) or [], (":",))
    return split_top(parts[-1]) if len(parts) > 1 else []


def check_store_count(s, types: TypeReader) -> None:
    """ptoas's TSTORE verifier: a ``!pto.tile_buf`` stored into a ``!pto.partition_tensor_view``,
    both of a static shape (the tile's valid shape), moves as many elements as the view holds
    ("expects dst static element count (256) to match src valid_shape static element count
    (128)"; pto-isa's NPU TSTORE asserts the valid region is the view's shape) - a ParseError at
    the op, where the run would store the valid region and warn."""
    src, dst = _group_types(s, "ins"), _group_types(s, "outs")
    if not src or len(dst) != 1:
        return
    try:
        tile, part = types.parse(src[0]), types.parse(dst[0])
    except (ParseError, CompileError):
        return                                  # (the op, or the tile's declaration, reports a bad type where it runs)
    if not isinstance(tile, TileSpec) or not (isinstance(part, tuple) and part[0] == "part"):
        return
    shape = part[2]
    if tile.v_rows is None or tile.v_cols is None or not shape or None in shape:
        return
    have, want = tile.v_rows * tile.v_cols, 1
    for d in shape:
        want *= d
    if have != want:
        raise types.err(f"pto.tstore of a tile of valid shape {tile.v_rows}x{tile.v_cols} ({have} elements) into a "
                        f"partition view of {'x'.join(map(str, shape))} ({want}): ptoas refuses it (\"expects dst "
                        f"static element count ({want}) to match src valid_shape static element count ({have})\")",
                        s.tok, fix="store into a partition view of the tile's valid shape (its sizes = [v_row, "
                                   "v_col]), or give the tile the view's valid shape")



def newer_ptoas_refusals(prog) -> list:
    """Warnings, at their line:col, for what ``prog`` writes as a newer ptoas reads it (pypto
    writes for 0.54) and the bundled ptoas 0.27 refuses: an op of :data:`NEWER_PTOAS_OPS`
    ("custom op '...' is unknown"), and a ``pto.set_ffts`` of a ``!pto.ptr`` (0.27 takes a
    memref: "invalid kind of type specified")."""
    out = []
    for f in prog.funcs.values():
        for s in f.statements():
            what = NEWER_PTOAS_OPS.get(s.name)
            if what is not None:
                out.append(f"{prog.path}:{s.tok.line}:{s.tok.col}: ptoas 0.27, the bundled one, does not know "
                           f"{s.name} (\"custom op '{s.name}' is unknown\"); a newer ptoas (pypto writes it for "
                           f"0.54: {what}) does, and ptopipe runs it as that ptoas lowers it")
            elif s.name == "pto.set_ffts":
                t = next((t for t in s.toks if t.text.startswith("!pto.ptr")), None)
                if t is not None:
                    out.append(f"{prog.path}:{t.line}:{t.col}: ptoas 0.27, the bundled one, takes a memref in "
                               "pto.set_ffts (\"invalid kind of type specified\" at this !pto.ptr); a newer ptoas "
                               "(pypto writes for 0.54) takes the pointer - ptopipe runs it either way (the "
                               "simulated cluster's flags need no FFTS address)")
    return out
