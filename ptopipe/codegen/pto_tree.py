"""The statement structure of PTO-AS text as ptoas reads it: a tree of :class:`Stmt` - one
MLIR operation each, with its result names, op name, its own tokens and its regions.

This is the syntax-level view the buffer-semantics executor (:mod:`ptopipe.codegen.pto_exec`)
walks.  It knows no op: the operand order, ``ins(...)`` / ``outs(...)`` groups, attribute
dictionaries, ``key = value`` pairs and types are found in a statement's tokens wherever
MLIR's custom and generic syntaxes put them (:class:`Stmt` has the lookups), so spelling
variations of one op need no parser change.

Statements are split as ptoas prints them: one operation per line, continued while a
bracket is open or the next line does not start an operation (``: (index) -> ...`` of an
``scf.while`` header, ``attributes {...}`` of a function, the pipe operands of an init).  A
``{`` ending the line of a region-holding op (``module``, ``func.func``, ``scf.for`` /
``if`` / ``while``, ``pto.section.*``) opens a region; ``} else {`` and ``} do {`` open the
next one.  ``^bb`` block labels start blocks inside a region (their arguments are kept).
Malformed nesting is a :class:`~ptopipe.errors.ParseError` at line:col.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ParseError
from .pto_lexer import Token, tokenize

#: ops whose trailing ``{`` opens a region (not an attribute dictionary)
REGION_OPS = frozenset({"module", "builtin.module", "func.func", "scf.for", "scf.if", "scf.while",
                        "scf.execute_region", "scf.parallel", "scf.forall", "pto.section.cube",
                        "pto.section.vector", "pto.section"})
_OP_NAME = re.compile(r"^[a-z_][a-z0-9_]*(\.[a-z0-9_]+)+$")
_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSE = {v: k for k, v in _OPEN.items()}


@dataclass
class Block:
    """The statements of one block; ``label`` / ``args`` for a ``^bb`` block."""
    stmts: list = field(default_factory=list)
    label: str | None = None
    args: list = field(default_factory=list)     # (name, type text)


@dataclass
class Stmt:
    """One operation: ``%r0, %r1 = name <toks> { region } ...``."""
    name: str
    results: list            # result names (``%x``; ``%x:2`` gives ``%x#0``, ``%x#1``)
    toks: list               # the op's own tokens after its name (regions excluded)
    regions: list            # list of lists of Blocks
    tok: Token               # the op name's token (its line:col)
    result_group: str | None = None     # ``%x`` of ``%x:2 = ...``

    # -- lookups over the op's tokens -------------------------------------------------------
    def values(self, toks=None) -> list:
        """The SSA value tokens, in order (of ``toks``, default all the op's own tokens)."""
        return [t for t in (self.toks if toks is None else toks) if t.kind == "value"]

    def group(self, keyword: str) -> list | None:
        """The tokens inside ``keyword(...)`` (``ins``, ``outs``, ``iter_args``), else None."""
        toks = self.toks
        for i, t in enumerate(toks[:-1]):
            if t.text == keyword and t.kind == "word" and toks[i + 1].text == "(":
                return _balanced(toks, i + 1)[1:-1]
        return None

    def attr(self, key: str, default=None):
        """The tokens of ``key = <value>`` (at any depth: an attribute dictionary, a custom
        ``key = [...]`` list, a named operand), else ``default``."""
        toks = self.toks
        for i, t in enumerate(toks[:-2]):
            if t.text == key and t.kind in ("word", "string") and toks[i + 1].text == "=" and \
                    (i == 0 or toks[i - 1].text in ("{", ",", "(", "<") or toks[i - 1].kind == "value"
                     or toks[i - 1].kind == "word" or toks[i - 1].text in ("}", ")", "]", ">")):
                return _one_value(toks, i + 2)
        return default

    def has_word(self, word: str) -> bool:
        return any(t.text == word for t in self.toks)

    def types(self) -> list:
        """The type token lists after the op's top-level ``:`` (split at top-level commas
        and ``->``)."""
        toks, depth, start = self.toks, 0, None
        for i, t in enumerate(toks):
            if t.text in _OPEN and t.kind == "punct":
                depth += 1
            elif t.text in _CLOSE and t.kind == "punct":
                depth -= 1
            elif t.text == ":" and depth == 0:
                start = i + 1
        if start is None:
            return []
        return split_top(toks[start:], (",", "->"))

    def where(self, filename: str) -> str:
        return f"{filename}:{self.tok.line}:{self.tok.col}"


def _balanced(toks, i) -> list:
    """``toks[i]`` is an opening bracket: the tokens up to and including its closer."""
    depth = 0
    for j in range(i, len(toks)):
        t = toks[j]
        if t.kind == "punct":
            if t.text in _OPEN:
                depth += 1
            elif t.text in _CLOSE:
                depth -= 1
                if depth == 0:
                    return toks[i:j + 1]
    return toks[i:]


def _one_value(toks, i) -> list:
    """The tokens of one attribute value starting at ``toks[i]`` (up to a top-level ``,``
    or the closing bracket of the enclosing list)."""
    out, depth = [], 0
    for t in toks[i:]:
        if t.kind == "punct":
            if t.text in _OPEN:
                depth += 1
            elif t.text in _CLOSE:
                if depth == 0:
                    break
                depth -= 1
            elif t.text == "," and depth == 0:
                break
        out.append(t)
        if depth == 0 and out and t.kind == "punct" and t.text in _CLOSE and out[0].text in _OPEN:
            break
    return out


def split_top(toks, seps=(",",)) -> list:
    """``toks`` split at the top-level separators ``seps``."""
    out, cur, depth = [], [], 0
    for t in toks:
        if t.kind == "punct":
            if t.text in _OPEN:
                depth += 1
            elif t.text in _CLOSE:
                depth -= 1
            elif t.text in seps and depth == 0:
                out.append(cur)
                cur = []
                continue
        cur.append(t)
    if cur:
        out.append(cur)
    return out


class _Reader:
    def __init__(self, text: str, filename: str):
        self.f = filename
        self.toks = tokenize(text, filename)
        self.i = 0

    def err(self, msg: str, tok: Token, fix: str = "check the nesting of { } in the file") -> ParseError:
        return ParseError(msg, where=f"{self.f}:{tok.line}:{tok.col}", fix=fix)

    def peek(self, k: int = 0) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def starts_stmt(self, j: int) -> bool:
        """Does token ``j`` start an operation (or a block label / a region's end)?"""
        t = self.toks[j]
        if t.kind == "eof" or t.text in ("}", "^") or t.kind == "label":
            return True
        if t.kind == "value":
            n = self.toks[j + 1] if j + 1 < len(self.toks) else t
            return n.text in ("=", ",") or (n.text == ":" and self.toks[j + 2].kind == "word"
                                            and self.toks[j + 2].text.isdigit()
                                            and self.toks[j + 3].text in ("=", ","))
        if t.kind == "word":
            return t.text in ("return", "module") or bool(_OP_NAME.match(t.text))
        return t.kind == "string" and self.toks[j + 1].text == "("

    def block_items(self, top: bool) -> list:
        """Blocks up to the region's ``}`` (not consumed) or the end of the text."""
        blocks = [Block()]
        while True:
            t = self.peek()
            if t.kind == "eof":
                if not top:
                    raise self.err("the region is not closed: '}' missing at the end of the file", t)
                return blocks
            if t.text == "}":
                if top:
                    raise self.err("'}' closes no region", t)
                return blocks
            if t.kind == "label":
                blocks.append(self.label())
                continue
            blocks[-1].stmts.append(self.stmt())

    def label(self) -> Block:
        t = self.toks[self.i]
        self.i += 1
        b = Block(label=t.text)
        if self.peek().text == "(":
            toks = _balanced(self.toks, self.i)
            self.i += len(toks)
            for part in split_top(toks[1:-1]):
                if part and part[0].kind == "value":
                    b.args.append((part[0].text, " ".join(x.text for x in part[2:])))
        if self.peek().text != ":":
            raise self.err(f"expected ':' after the block label {t.text}", self.peek(),
                           fix="a block label reads ^bb0(%arg: type):")
        self.i += 1
        return b

    def stmt(self) -> Stmt:
        results, group = [], None
        t = self.peek()
        if t.kind == "value":
            while True:
                v = self.toks[self.i]
                if v.kind != "value":
                    raise self.err(f"expected a result name, got {v.text!r}", v,
                                   fix="results read %a, %b = op ...")
                self.i += 1
                if self.peek().text == ":" and self.peek(1).text.isdigit():
                    n = int(self.peek(1).text)
                    group = v.text
                    results.extend(f"{v.text}#{k}" for k in range(n))
                    self.i += 2
                else:
                    results.append(v.text)
                if self.peek().text == ",":
                    self.i += 1
                    continue
                break
            if self.peek().text != "=":
                raise self.err(f"expected '=' after the results, got {self.peek().text!r}", self.peek(),
                               fix="an operation with results reads %r = op ...")
            self.i += 1
        nt = self.toks[self.i]
        if nt.kind == "string":
            name = nt.text[1:-1]
        elif nt.kind == "word":
            name = nt.text
        else:
            raise self.err(f"expected an operation name, got {nt.text or 'the end of the file'!r}", nt,
                           fix="each line holds one MLIR operation: [%r = ] dialect.op ...")
        self.i += 1
        own, regions, depth = [], [], 0
        holds_regions = name in REGION_OPS
        while True:
            t = self.toks[self.i]
            if t.kind == "eof":
                if depth:
                    raise self.err(f"{name}: a bracket opened here is never closed", nt)
                break
            if depth == 0 and own and t.line != own[-1].line and self.starts_stmt(self.i):
                break
            if depth == 0 and not own and t.line != nt.line and self.starts_stmt(self.i):
                break
            if depth == 0 and t.text == "}":
                break
            if t.kind == "punct" and t.text == "{" and depth == 0 and holds_regions and \
                    self._region_brace(self.i):
                self.i += 1
                blocks = self.block_items(top=False)
                self.i += 1                      # the region's '}'
                regions.append(blocks)
                own.append(Token("punct", "{}", t.line, t.col))    # marks the region's place
                continue
            if t.kind == "punct":
                if t.text in _OPEN:
                    depth += 1
                elif t.text in _CLOSE:
                    depth -= 1
                    if depth < 0:
                        raise self.err(f"unbalanced {t.text!r}", t)
            own.append(t)
            self.i += 1
        return Stmt(name, results, own, regions, nt, group)

    def _region_brace(self, i: int) -> bool:
        """A ``{`` of a region op opens a region when it ends its line, or is an empty
        region ``{ }`` ending its line or followed by ``else`` / ``do`` (an attribute
        dictionary such as ``attributes {pto.entry}`` stays on its line)."""
        t, n = self.toks[i], self.toks[i + 1]
        if n.line != t.line:
            return True
        if n.text != "}":
            return False
        after = self.toks[i + 2]
        return after.line != n.line or after.text in ("else", "do") or after.kind == "eof"


def parse_tree(text: str, filename: str = "<pto>") -> list:
    """The top-level statements of PTO-AS ``text`` (usually one ``module``)."""
    r = _Reader(text, filename)
    blocks = r.block_items(top=True)
    return [s for b in blocks for s in b.stmts]
