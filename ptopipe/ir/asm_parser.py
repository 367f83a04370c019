"""The parser of the op IR's generic textual form (what :mod:`.asm_printer` writes)::

    op      := [%r (, %r)* =] NAME ( [%v (, %v)*] ) [{ key = attr, ... }]
               [( region (, region)* )] : ( [type, ...] ) -> (type | ( [type, ...] )) [loc(...)]
    region  := { [^label [( %a : type, ... )] :] op* (^label ... op*)* }

A value must be defined before it is used (and is visible in nested regions, not outside
its own); a signature's operand types must be the operands' types.  An op's location
is its ``loc("file":line:col)`` suffix, or else its own position in the parsed text
(``loc(unknown)``: none), so that verifying parsed IR points into the text.  Every error is a
:class:`~ptopipe.errors.ParseError` at ``file:line:col`` saying what was expected.  The
result is not verified: call :func:`~.op_verifier.verify_ops` on it.
"""
from __future__ import annotations

import json
import re
from bisect import bisect_right

from ..errors import ParseError
from .core import Block, Operation, Region, gc_paused
from .vocab import Loc
from .text import enum_value, parse_type

_TOKEN = re.compile(r"""
 (?P<ws>(?:\s+|//[^\n]*)+)
|(?P<val>%[A-Za-z0-9_.$]+)
|(?P<type>(?:tile|tensor|buffer)<[^<>\n]*>)
|(?P<loc>loc\((?:"(?:[^"\\\n]|\\.)*":\d+:\d+|unknown)\))
|(?P<hash>\#[A-Za-z_]\w*\.[A-Za-z_]\w*)
|(?P<blk>\^[A-Za-z0-9_]*)
|(?P<str>"(?:[^"\\\n]|\\.)*")
|(?P<num>-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|-?inf\b|nan\b)
|(?P<id>[A-Za-z_][\w.]*)
|(?P<arrow>->)
|(?P<p>[(){}\[\],=:])
|(?P<bad>.)
""", re.VERBOSE)
_LOC = re.compile(r'loc\(("(?:[^"\\\n]|\\.)*"):(\d+):(\d+)\)')


class _Parser:
    def __init__(self, text: str, filename: str):
        self.text, self.file = text, filename
        kinds, vals, poss = [], [], []
        for m in _TOKEN.finditer(text):
            k = m.lastgroup
            if k == "ws":
                continue
            kinds.append(k)
            vals.append(m.group())
            poss.append(m.start())
        kinds.append("eof")
        vals.append("end of input")
        poss.append(len(text))
        self.kinds, self.vals, self.poss = kinds, vals, poss
        self.i = 0
        self.scope = {}
        self.line_starts = None

    def text_loc(self, i: int) -> Loc:
        """The location of token ``i`` in the text (an op's loc when it has no loc(...))."""
        if self.line_starts is None:
            self.line_starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        pos = self.poss[i]
        line = bisect_right(self.line_starts, pos)
        return Loc(self.file, line, pos - self.line_starts[line - 1] + 1)

    # -- errors and tokens --------------------------------------------------------------------
    def where(self, i: int) -> str:
        pos = self.poss[min(i, len(self.poss) - 1)]
        line = self.text.count("\n", 0, pos) + 1
        col = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return f"{self.file}:{line}:{col}"

    def error(self, msg: str, i: int | None = None, fix: str | None = None) -> ParseError:
        return ParseError(msg, where=self.where(self.i if i is None else i), fix=fix)

    def expect(self, tok: str, what: str | None = None) -> None:
        if self.vals[self.i] != tok or self.kinds[self.i] not in ("p", "arrow"):
            raise self.error(f"expected '{tok}'{' ' + what if what else ''}, found "
                             f"'{self.vals[self.i]}'")
        self.i += 1

    def accept(self, tok: str) -> bool:
        if self.vals[self.i] == tok and self.kinds[self.i] == "p":
            self.i += 1
            return True
        return False

    # -- values --------------------------------------------------------------------------------
    def use(self):
        i = self.i
        if self.kinds[i] != "val":
            raise self.error(f"expected a value (%name), found '{self.vals[i]}'")
        v = self.scope.get(self.vals[i])
        if v is None:
            raise self.error(f"use of undefined value {self.vals[i]}", i,
                             "define it before its use (in this block or an enclosing one)")
        self.i += 1
        return v

    def define(self, v, tok: int, added: list) -> None:
        name = self.vals[tok]
        if name in self.scope:
            raise self.error(f"redefinition of {name}", tok, "every value has its own name")
        self.scope[name] = v
        added.append(name)
        hint = name[1:]
        v.name = None if hint.isdigit() else hint

    def type(self):
        i = self.i
        k = self.kinds[i]
        if k not in ("type", "id"):
            raise self.error(f"expected a type, found '{self.vals[i]}'")
        try:
            t = parse_type(self.vals[i])
        except ValueError as e:
            raise self.error(str(e), i, "types: index, f32, tensor<64x32xf16>, "
                                        "tile<16x32xf32,Vec>, buffer<reserve>, none") from None
        self.i += 1
        return t

    def type_list(self) -> list:
        self.expect("(")
        ts = []
        if not self.accept(")"):
            ts.append(self.type())
            while self.accept(","):
                ts.append(self.type())
            self.expect(")", "closing the type list")
        return ts

    # -- attributes ----------------------------------------------------------------------------
    def attr(self):
        i = self.i
        k, s = self.kinds[i], self.vals[i]
        self.i += 1
        if k == "num":
            if s.lstrip("-").isdigit():
                return int(s)
            return float(s)
        if k == "str":
            return json.loads(s)
        if k == "id":
            if s == "none":
                return None
            if s == "true":
                return True
            if s == "false":
                return False
        if k == "hash":
            try:
                return enum_value(s)
            except ValueError as e:
                raise self.error(str(e), i) from None
        if k == "type":
            self.i = i
            return self.type()
        if s == "[" and k == "p":
            items = []
            if not self.accept("]"):
                items.append(self.attr())
                while self.accept(","):
                    items.append(self.attr())
                self.expect("]", "closing the list")
            return tuple(items)
        raise self.error(f"expected an attribute value, found '{s}'", i,
                         "attribute values: none, true, false, 1, 2.5, \"text\", [1, 2], "
                         "#space.Vec, #pl.AUTO, tile<...>")

    def attr_dict(self) -> dict:
        d = {}
        if self.accept("}"):
            return d
        while True:
            i = self.i
            if self.kinds[i] != "id":
                raise self.error(f"expected an attribute name, found '{self.vals[i]}'")
            self.i += 1
            key = self.vals[i]
            if key in d:
                raise self.error(f"attribute '{key}' is given twice", i)
            self.expect("=", f"after attribute name '{key}'")
            d[key] = self.attr()
            if self.accept("}"):
                return d
            self.expect(",", "or '}' in the attribute dictionary")

    # -- ops and regions -----------------------------------------------------------------------
    def op(self, added: list) -> Operation:
        first = self.i
        res_toks = []
        if self.kinds[self.i] == "val":
            res_toks.append(self.i)
            self.i += 1
            while self.accept(","):
                if self.kinds[self.i] != "val":
                    raise self.error(f"expected a result name, found '{self.vals[self.i]}'")
                res_toks.append(self.i)
                self.i += 1
            self.expect("=", "after the result names")
        if self.kinds[self.i] != "id":
            raise self.error(f"expected an op name (e.g. pl.matmul), found '{self.vals[self.i]}'")
        name = self.vals[self.i]
        self.i += 1
        self.expect("(", f"after op name {name}")
        operands = []
        op_toks = []
        if not self.accept(")"):
            op_toks.append(self.i)
            operands.append(self.use())
            while self.accept(","):
                op_toks.append(self.i)
                operands.append(self.use())
            self.expect(")", "closing the operand list")
        attrs = self.attr_dict() if self.accept("{") else {}
        regions = []
        if self.accept("("):
            while True:
                self.expect("{", "opening a region")
                regions.append(self.region())
                if self.accept(")"):
                    break
                self.expect(",", "or ')' after a region")
        self.expect(":", f"before the type signature of {name}")
        sig_tok = self.i
        in_types = self.type_list()
        self.expect("->", "in the type signature")
        out_types = self.type_list() if self.vals[self.i] == "(" else [self.type()]
        if len(in_types) != len(operands):
            raise self.error(f"{name} has {len(operands)} operand(s) but its signature lists "
                             f"{len(in_types)} type(s)", sig_tok)
        for tok, v, t in zip(op_toks, operands, in_types):
            if v.type != t:
                raise self.error(f"{self.vals[tok]} has type {_ts(v.type)} but the signature of "
                                 f"{name} says {_ts(t)}", tok)
        if len(out_types) != len(res_toks):
            raise self.error(f"{name} defines {len(res_toks)} result name(s) but its signature "
                             f"has {len(out_types)} result type(s)", sig_tok)
        if self.kinds[self.i] == "loc":
            m = _LOC.fullmatch(self.vals[self.i])
            loc = None if m is None else Loc(json.loads(m.group(1)), int(m.group(2)),
                                             int(m.group(3)))
            self.i += 1
        else:
            loc = self.text_loc(first)
        op = Operation(name, operands, out_types, attrs, regions, loc)
        for tok, r in zip(res_toks, op.results):
            self.define(r, tok, added)
        return op

    def block_head(self, block: Block, added: list) -> None:
        self.i += 1                              # the ^label
        if self.accept("("):
            if not self.accept(")"):
                while True:
                    tok = self.i
                    if self.kinds[tok] != "val":
                        raise self.error(f"expected a block argument (%name), found "
                                         f"'{self.vals[tok]}'")
                    self.i += 1
                    self.expect(":", "after the block argument name")
                    self.define(block.add_arg(self.type()), tok, added)
                    if self.accept(")"):
                        break
                    self.expect(",", "or ')' in the block arguments")
        self.expect(":", "after the block label")

    def region(self) -> Region:
        region = Region()
        added = []
        block = region.add_block(Block())
        if self.kinds[self.i] == "blk":
            self.block_head(block, added)
        while not self.accept("}"):
            k = self.kinds[self.i]
            if k == "eof":
                raise self.error("unclosed region: expected '}'", fix="close every '({' with '})'")
            if k == "blk":
                block = region.add_block(Block())
                self.block_head(block, added)
                continue
            block.append(self.op(added))
        for n in added:
            del self.scope[n]
        return region

    def top(self) -> list:
        ops, added = [], []
        while self.kinds[self.i] != "eof":
            ops.append(self.op(added))
        return ops


def _ts(t) -> str:
    from .text import type_str
    return type_str(t)


def parse_ops(text: str, filename: str = "<ir>") -> list:
    """All top-level ops of ``text``."""
    with gc_paused():
        return _Parser(text, filename).top()


def parse_ir(text: str, filename: str = "<ir>") -> Operation:
    """The one top-level op of ``text`` (usually a ``pl.program``)."""
    ops = parse_ops(text, filename)
    if len(ops) != 1:
        raise ParseError(f"expected exactly one top-level op, found {len(ops)}",
                         where=f"{filename}:1:1", fix="wrap the functions in one pl.program op")
    return ops[0]
