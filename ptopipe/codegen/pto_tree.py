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

import difflib
import functools
import re
from dataclasses import dataclass, field

from ..errors import ParseError
from .pto_lexer import BOM, Token, tokenize, without_locations

#: ops whose trailing ``{`` opens a region (not an attribute dictionary)
REGION_OPS = frozenset({"module", "builtin.module", "func.func", "scf.for", "scf.if", "scf.while",
                        "scf.execute_region", "scf.parallel", "scf.forall", "pto.section.cube",
                        "pto.section.vector", "pto.section"})
#: the short and long spellings MLIR prints of the func dialect's ops (``call @f(...)`` in a
#: ``func.func`` body, ``func.return``), as the one name each reader knows the op by
OP_ALIASES = {"call": "func.call", "func.return": "return"}
_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSE = {v: k for k, v in _OPEN.items()}


@dataclass
class Block:
    """The statements of one block; ``label`` / ``args`` for a ``^bb`` block."""
    stmts: list = field(default_factory=list)
    label: str | None = None
    args: list = field(default_factory=list)     # (name, type text)


class Stmt:
    """One operation: ``%r0, %r1 = name <toks> { region } ...``.  Its own tokens (after its
    name, regions excluded, a ``{}`` token marking each region's place) are made from its
    source pieces on first use: a reader that only needs op names, results and value uses
    never tokenizes the types."""
    __slots__ = ("name", "results", "regions", "tok", "result_group", "result_cols", "col", "_pieces", "_toks",
                 "filename", "_memo", "_text", "_used", "_names", "_rtt")

    def __init__(self, name: str, results: list, pieces: list, regions: list, tok: Token,
                 result_group: str | None = None, filename: str = "<pto>", result_cols: list | None = None):
        # (tuples, and one empty tuple for a statement without regions: the reader makes tens of
        # thousands of statements, and every list made is one more object the GC walks)
        self.name, self.results, self.regions, self.tok = name, tuple(results), regions or (), tok
        self.result_group = result_group
        self.result_cols = tuple(result_cols or [tok.col] * len(results))   # each result's column (on tok's line)
        # where the operation starts (its first result, else its name): MLIR's and the value
        # IR's location of an op, on tok's line
        self.col = self.result_cols[0] if results else tok.col
        self._pieces = tuple(pieces)       # ((line, col, text) | (line, col, None): a region, ...)
        self._toks = None
        self._text = self._used = self._names = None     # text(), used(), used_names(): made on first use
        self._rtt = _UNSEEN                                # result_type_text(), made on first use
        self.filename = filename
        # the lookups below by their arguments (an attribute by its key; 0: values(), 1:
        # types(), 2: arrow_type(), ("group", keyword)): a statement's tokens never change, and an executor
        # looks the same things up every time it runs the statement (the results are
        # shared: callers read them, never change them)
        self._memo = None                  # (a dict once a lookup is made: most statements never need one)

    @property
    def memo(self) -> dict:
        if self._memo is None:
            self._memo = {}
        return self._memo

    @property
    def toks(self) -> list:
        if self._toks is None:
            out = []
            for line, col, text in self._pieces:
                if text is None:
                    out.append(Token("punct", "{}", line, col))
                    continue
                out.extend(tokenize(text, self.filename, line, col)[:-1])
            self._toks = out
        return self._toks

    def text(self) -> str:
        """The op's own source text (regions left out): what :meth:`values` scans."""
        if self._text is None:
            self._text = " ".join(p[2] for p in self._pieces if p[2] is not None)
        return self._text

    def position(self, offset: int) -> tuple:
        """``(line, col)`` of the character at ``offset`` of :meth:`text`."""
        for line, col, text in self._pieces:
            if text is None:
                continue
            if offset <= len(text):
                return line, col + offset
            offset -= len(text) + 1
        return self.tok.line, self.col

    def offset(self, tok) -> int:
        """The offset in :meth:`text` of one of the op's own tokens (:meth:`position`'s inverse)."""
        at = 0
        for line, col, text in self._pieces:
            if text is None:
                continue
            if line == tok.line and col <= tok.col <= col + len(text):
                return at + tok.col - col
            at += len(text) + 1
        raise ValueError(f"{tok.text!r} at {tok.line}:{tok.col} is not a token of {self.name}")

    def span(self, first, last) -> str:
        """The source text from the op's token ``first`` to its token ``last``, both included."""
        return self.text()[self.offset(first):self.offset(last) + len(last.text)]

    def used(self) -> tuple:
        """The SSA names the op's own text mentions (cheap: no tokens; made once)."""
        if self._used is None:
            self._used = tuple(_VALUE.findall(self.text()))
        return self._used

    def used_names(self) -> tuple:
        """:meth:`used` with each result number dropped (``%r#1`` -> ``%r``; made once)."""
        if self._names is None:
            used = self.used()
            # (a text without '#' names no result by number: the names are the values)
            self._names = tuple(v.split("#")[0] for v in used) if "#" in self.text() else used
        return self._names

    def has_key(self, key: str) -> bool:
        """Does the op's text say ``key = ...`` (cheap: no tokens)?"""
        text = self.text()
        # (a text without ``key`` has no match: most ops are asked for keys they lack)
        return key in text and _key_pattern(key).search(text) is not None

    def symbol(self) -> str | None:
        """The first ``@name`` of the op's text (a callee, a peer function)."""
        m = _SYMBOL.search(self.text())
        return m.group(1) if m else None

    def result_type_text(self) -> str | None:
        """The type after the op's last ``: `` or ``-> `` that starts a tile or memref type
        (``pto.alloc_tile ... : !pto.tile_buf<...>``, ``memref.alloc() : memref<...>``; made once)."""
        got = self._rtt
        if got is _UNSEEN:
            t = self.text()
            k = max(t.rfind(": !"), t.rfind(": memref<"), t.rfind("-> !"), t.rfind("-> memref<"))
            got = self._rtt = t[k + 2:].strip() if k >= 0 else None
        return got

    # -- lookups over the op's tokens -------------------------------------------------------
    def values(self, toks=None) -> list:
        """The SSA value tokens, in order (of ``toks``, default all the op's own tokens)."""
        if toks is None:
            got = self.memo.get(0)
            if got is None:
                got = self._memo[0] = [t for t in self.toks if t.kind == "value"]
            return got
        return [t for t in toks if t.kind == "value"]

    def group(self, keyword: str) -> list | None:
        """The tokens inside ``keyword(...)`` (``ins``, ``outs``, ``iter_args``), else None."""
        key = ("group", keyword)
        try:
            return self.memo[key]
        except KeyError:
            pass
        toks, got = self.toks, None
        for i, t in enumerate(toks[:-1]):
            if t.text == keyword and t.kind == "word" and toks[i + 1].text == "(":
                got = _balanced(toks, i + 1)[1:-1]
                break
        self._memo[key] = got
        return got

    def attr(self, key: str, default=None):
        """The tokens of ``key = <value>`` (at any depth: an attribute dictionary, a custom
        ``key = [...]`` list, a named operand), else ``default``."""
        got = self.memo.get(key, _UNSEEN)
        if got is _UNSEEN:
            got = self._memo[key] = self._attr(key)
        return default if got is None else got

    def _attr(self, key: str):
        toks = self.toks
        for i, t in enumerate(toks[:-2]):
            if t.text == key and t.kind in ("word", "string") and toks[i + 1].text == "=" and \
                    (i == 0 or toks[i - 1].text in ("{", ",", "(", "<") or toks[i - 1].kind == "value"
                     or toks[i - 1].kind == "word" or toks[i - 1].text in ("}", ")", "]", ">")):
                return _one_value(toks, i + 2)
        return None

    def has_word(self, word: str) -> bool:
        return any(t.text == word for t in self.toks)

    def types(self) -> list:
        """The type token lists after the op's top-level ``:`` (split at top-level commas
        and ``->``)."""
        got = self.memo.get(1)
        if got is None:
            got = self._memo[1] = self._types()
        return got

    def arrow_type(self) -> list:
        """[the type tokens after the op's last top-level ``->``], or [] with none."""
        got = self.memo.get(2)
        if got is None:
            parts = split_top(self.toks, ("->",))
            got = self._memo[2] = [parts[-1]] if len(parts) > 1 else []
        return got

    def _types(self) -> list:
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
        return f"{filename}:{self.tok.line}:{self.col}"

    def unknown_key(self, allowed: frozenset) -> tuple | None:
        """``(key, given twice)`` of the first ``key =`` of the op's own text (outside its types'
        ``<...>``) that is not in ``allowed`` nor a discardable ``dialect.name``, or is given a
        second time, else None: an inherent attribute the readers look up by name, misspelled,
        would be ignored (and of two, one would)."""
        text = self.text()
        while "<" in text:
            stripped = _ANGLE.sub("", text)
            if stripped == text:
                break
            text = stripped
        seen = set()
        for key in _KEY.findall(text):
            if key in seen:
                return key, True
            seen.add(key)
            if key not in allowed and "." not in key:
                return key, False
        return None

    def lines(self) -> set:
        """The source lines the op's own text is on."""
        return {p[0] for p in self._pieces}

    def malformed(self) -> tuple | None:
        """``(what, token)`` of a piece of the op's own text that no MLIR spelling has (ptoas
        refuses it where the readers, which look tokens up by key, would read past it), else
        None: a type missing after the op's ``:``, a ``key = [...]`` list followed by the next
        ``key =`` without a comma."""
        toks, depth = self.toks, 0
        for i, t in enumerate(toks):
            if t.kind != "punct":
                continue
            if t.text in _OPEN:
                depth += 1
            elif t.text in _CLOSE:
                depth -= 1
                if t.text == "]" and i + 2 < len(toks) and toks[i + 1].kind == "word" and toks[i + 2].text == "=":
                    return f"expected ',' before '{toks[i + 1].text} ='", toks[i + 1]
            elif t.text == ":" and depth == 0 and (i + 1 == len(toks) or toks[i + 1].text in ("{}", ",", "->")):
                return "expected a type after ':'", t
        return None


    def trailing(self) -> tuple | None:
        """``(what, token)`` of a token after the end of the op (ptoas reads it as the start
        of the next operation and refuses it: "expected '=' after SSA name"), else None: a
        type after ``:`` / ``->`` followed by more than a type (``: index %c0``, ``-> i32
        foo``; ``A to B`` of a cast is one), or, in an op without types, anything but a
        ``, ...`` after its last bracket group (``outs(...) %c0``, ``{split = 0} x``).
        ``return`` / ``scf.yield`` values without their types are named too.  An op holding
        regions ends at its first region (its header is the op's own check)."""
        atoms = _atoms(self.toks)
        if any(a[0] == "{}" for a in atoms):
            atoms = atoms[:next(k for k, a in enumerate(atoms) if a[0] == "{}")]
        colon = max((k for k, a in enumerate(atoms) if a[0] == ":"), default=None)
        arrow = next((k for k, a in enumerate(atoms) if a[0] == "->"), None)
        start = colon if colon is not None else arrow
        if start is not None:
            for group in _split_atoms(atoms[start + 1:]):
                k = _type_end(group, 0)
                if k == 0:
                    break                          # (not a type: a form this check does not know)
                while k < len(group) and group[k][0] == "to" and _type_end(group, k + 1) > k + 1:
                    k = _type_end(group, k + 1)
                if k < len(group):
                    tok = group[k][1]
                    return (f"unexpected {tok.text!r} after the type {_atom_text(group[:k])}: an operation "
                            "ends with its types"), tok
            return None
        last = max((k for k, a in enumerate(atoms) if a[0] in _OPEN), default=None)
        if last is not None:
            rest = atoms[last + 1:]
            if rest and rest[0][0] != ",":
                tok = rest[0][1]
                named = last > 0 and atoms[last - 1][0] == "word" and atoms[last][0] == "("
                return f"unexpected {tok.text!r} after the op's {_atom_text(atoms[last - named:last + 1])}", tok
        elif atoms and self.name in ("return", "scf.yield"):
            tok = atoms[-1][1]
            return f"expected ':' and the types of the values after {tok.text}", tok
        return None


@functools.lru_cache(maxsize=None)
def _key_pattern(key: str) -> re.Pattern:
    """``key = ...`` as :meth:`Stmt.has_key` looks for it (compiled once per key: the keys
    asked are a few fixed names)."""
    return re.compile(r"\b" + re.escape(key) + r"\s*=")


def odd_end(text: str) -> bool:
    """Might an op whose own text is ``text`` have a token after its end (:meth:`Stmt.trailing`)?
    A cheap look at the text's last word: one that is no closing bracket, after a word or a
    closing bracket (``: index`` and ``-> i32`` end an op; ``index %c0``, ``) %c0`` may not)."""
    k = text.rfind(" ")
    if k <= 0 or text[-1] in ")]}>":
        return False
    return text[k - 1] not in ":,=(<[{" and not text.endswith("->", 0, k)


def _atoms(toks) -> list:
    """The top-level pieces of a token list: ``(text, first token)`` - a bracket group as its
    opening bracket's text (``(``, ``[``, ``{``, ``<``; a region's place as ``{}``)."""
    out, depth = [], 0
    for t in toks:
        if t.kind == "punct" and t.text in _OPEN:
            if depth == 0:
                out.append((t.text, t))
            depth += 1
        elif t.kind == "punct" and t.text in _CLOSE:
            depth -= 1
        elif depth == 0:
            out.append((t.text if t.kind == "punct" or t.text == "to" else t.kind, t))
    return out


def _split_atoms(atoms) -> list:
    out, cur = [], []
    for a in atoms:
        if a[0] in (",", "->"):
            out.append(cur)
            cur = []
        else:
            cur.append(a)
    out.append(cur)
    return out


def _type_end(group, k) -> int:
    """The index after the type starting at ``group[k]`` (a name - ``index``, ``!pto.x``,
    ``memref`` - with its ``<...>``, or a ``(...)`` list), else ``k``."""
    if k >= len(group):
        return k
    if group[k][0] == "(":
        return k + 1
    if group[k][0] in ("word", "bang", "hash"):
        return k + 2 if k + 1 < len(group) and group[k + 1][0] == "<" else k + 1
    return k


def _atom_text(atoms) -> str:
    """``outs(...)``, ``{...}``, ``!pto.tile_buf<...>``: the atoms as a message names them."""
    out = ""
    for a in atoms:
        close = _OPEN.get(a[0]) if a[0] in _OPEN else None
        piece = a[1].text + ("..." + close if close else "")
        out += piece if not out or close else " " + piece
    return out


_UNSEEN = object()
#: what :meth:`Stmt.malformed` looks for, in a file's text: a ``]`` followed by a ``key =``, or a
#: ``:`` ending a line or followed by ``,`` / ``->``
#: (two patterns that each start with a literal, which the regex engine searches for fast)
_MAYBE_MALFORMED = (re.compile(r"\][ \t\n]*[A-Za-z_][\w.]*[ \t]*=(?!=)"), re.compile(r":[ \t]*(?:\n|,|->|$)"))


def suspect_lines(text: str) -> frozenset:
    """The lines of ``text`` :meth:`Stmt.malformed` need look at (one scan of the whole file:
    tokenizing every statement would cost more than reading the file)."""
    starts = sorted(m.start() for r in _MAYBE_MALFORMED for m in r.finditer(text))
    lines, line, at = set(), 1, 0
    for k in starts:                        # (counted on from the previous one: linear in the file)
        line += text.count("\n", at, k)
        at = k
        lines.add(line)
    return frozenset(lines)


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


#: an SSA value's spelling (``%arg0``, ``%7#1``)
VALUE_NAME = r"%[A-Za-z0-9_$.#-]+"
_VALUE = re.compile(VALUE_NAME)
_SYMBOL = re.compile(r"@([A-Za-z0-9_$.]+)")
#: the start of an operation: ``%a, %b:2 = name``, ``name``, ``"generic.name"(``
_STMT = re.compile(r'\s*(?P<res>(?:%[A-Za-z0-9_$.#-]+(?:\s*:\s*\d+)?\s*,\s*)*%[A-Za-z0-9_$.#-]+(?:\s*:\s*\d+)?)'
                   r'\s*=\s*|\s*')
_NAME = re.compile(r'(?P<q>"?)(?P<name>[A-Za-z_][A-Za-z0-9_$.]*)(?P=q)')
_STARTS = re.compile(r'\s*(?:%[A-Za-z0-9_$.#-]+(?:\s*:\s*\d+)?\s*[,=]|"[A-Za-z_][\w.$]*"\s*\(|[a-z_][a-z0-9_]*'
                     r'(?:\.[a-z0-9_]+)+\b|return\b|call\s+@|module\b|\}|\^)')
_LABEL = re.compile(r"\s*(\^[A-Za-z0-9_$.]+)\s*(\(([^)]*)\))?\s*:\s*$")
#: a line that defines a result without its ``=`` or its ``%``: ``%c64 arith.constant``, ``c64 = arith.constant``
_LOST_RESULT = re.compile(r"\s*(%[\w$.#-]+|[A-Za-z_]\w*\s*=)\s*([a-z_][a-z0-9_]*\.[a-z0-9_.]+)")
_ANGLE = re.compile(r"<[^<>]*>")
#: ``[%r = ] name`` at a line's start, the name unquoted (:meth:`_Reader.stmt`'s common case: a
#: line :data:`_STMT` and :data:`_NAME` read as one result, or none, and that name)
_ONE_LINE_OP = re.compile(r"(\s*)(?:(%[A-Za-z0-9_$.#-]+)\s*=\s*)?([A-Za-z_][A-Za-z0-9_$.]*)")
#: the characters a .pto file may not hold (controls other than tab, newline and return)
_BAD_CHAR = re.compile(r"[^\x09\x0a\x0d\x20-\x7e\x80-\U0010ffff]")
_BAD_CHARS = tuple(chr(c) for c in (*range(0x09), 0x0b, 0x0c, *range(0x0e, 0x20), 0x7f))
_new = tuple.__new__
#: the ops :meth:`_Reader.one_line_stmt` leaves to the general reading: those holding regions,
#: those spelled two ways, and ``return`` (refused inside an scf region)
_NOT_ONE_LINE = REGION_OPS | frozenset(OP_ALIASES) | {"return"}
_KEY = re.compile(r"(?<![\w.%$])([A-Za-z_][\w.]*)\s*=(?!=)")
#: a continuation line that starts with a word followed by neither ``(`` nor ``=`` (nor ``<``: a type)
_BARE_WORD = re.compile(r"\s*([A-Za-z_][\w.$]*)(?!\s*[(=<\w.$])")
#: the words MLIR's and ptoas's syntaxes continue an operation's line with
_CONTINUING_WORDS = frozenset({"else", "do", "attributes", "to", "step", "iter_args", "ins", "outs", "offsets",
                               "sizes", "shape", "strides", "valid", "async", "layout"})


#: a line that can only start an operation: ``[%r[, %s] = ] dialect.op`` (not ``key = value``
#: of a multi-line attribute dictionary) or ``return``
_OP_LINE = re.compile(r'\s*(?:%[A-Za-z0-9_$.#-]+(?:\s*:\s*\d+)?(?:\s*,\s*%[A-Za-z0-9_$.#-]+(?:\s*:\s*\d+)?)*'
                      r'\s*=\s*)?(?:[a-z_][a-z0-9_]*(?:\.[a-z0-9_]+)+\b(?!\s*=)|return\b|call\s+@)')


def _unclosed(pieces: list, filename: str) -> tuple:
    """``(line, col, bracket)`` of the bracket ``pieces`` - ``(line, col, text)`` of one
    statement - leave open (``->`` is no bracket): the first one a bracket of another kind
    closes (``<...)``: the ``<`` lacks its ``>``), else the innermost one still open."""
    stack = []
    for line, col, text in pieces:
        if text is None:
            continue
        toks = tokenize(text, filename, line, col)[:-1] if '"' in text or "/" in text else None
        spans = ([(t.col - col, t.text) for t in toks] if toks is not None else enumerate(text))
        spans = [(k, c) for k, c in spans if c in _OPEN or c in _CLOSE]
        for k, c in spans:
            if c == ">" and k > 0 and text[k - 1] == "-":
                continue
            if c in _OPEN:
                stack.append((line, col + k, c))
            elif stack:
                if stack[-1][2] != _CLOSE[c]:
                    return stack[-1]
                stack.pop()
    return stack[-1] if stack else (pieces[0][0], pieces[0][1], "(")


def _depth(text: str, filename: str, line: int, col: int) -> int:
    """Brackets opened minus closed in ``text``, at ``line``:``col`` of ``filename`` (``->`` is
    no bracket); exact through the tokenizer when the text holds a string or a comment."""
    if '"' in text or "/" in text:
        d = 0
        for t in tokenize(text, filename, line, col)[:-1]:
            if t.kind == "punct":
                d += (t.text in _OPEN) - (t.text in _CLOSE)
        return d
    return _balance(text)


def _balance(text: str) -> int:
    """Bracket characters opened minus closed in ``text`` (``->`` is no bracket): :func:`_depth`
    of a text without a string or a comment."""
    # (a pair neither of whose brackets occurs adds nothing - nor does "->" without a ">" -
    # and "in" finds that faster than count scans: most lines lack two or three of the pairs)
    count, d = text.count, 0
    if "(" in text or ")" in text:
        d += count("(") - count(")")
    if "<" in text or ">" in text:
        d += count("<") - count(">") + count("->")
    if "[" in text or "]" in text:
        d += count("[") - count("]")
    if "{" in text or "}" in text:
        d += count("{") - count("}")
    return d


def _code(text: str) -> str:
    """``text`` without a trailing ``//`` comment (outside strings)."""
    if "//" not in text:
        return text
    if '"' not in text:
        return text[:text.index("//")]
    quoted = False
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif not quoted and text.startswith("//", i):
            return text[:i]
    return text


class _Reader:
    """PTO-AS as ptoas prints it, a line at a time: an operation starts a line, and goes on
    while a bracket is open or the next line does not start an operation; a region-holding
    op's line ending in ``{`` opens a region, a line starting with ``}`` closes it."""

    def __init__(self, text: str, filename: str):
        self.f = filename
        text = text.removeprefix(BOM)    # (an editor's byte order mark: no character of the file)
        # (the regex only where one of its characters occurs: a substring search per character
        # is a tenth of the regex's scan, and a file has none)
        bad = _BAD_CHAR.finditer(text) if any(c in text for c in _BAD_CHARS) else ()
        for m in bad:
            line = text.count("\n", 0, m.start()) + 1
            col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
            raise ParseError(f"unexpected character {m.group()!r}", where=f"{filename}:{line}:{col}",
                             fix="PTO-AS is MLIR text: check for a stray character")
        text = without_locations(text)
        # (_code leaves a line without "//" as it is)
        self.lines = ([_code(l).rstrip() for l in text.split("\n")] if "//" in text else
                      [l.rstrip() for l in text.split("\n")])
        self.i = 0                       # the current line (0-based)
        self.col = 0                     # where on it reading goes on
        self.owners = []                 # (name, line) of the ops whose regions are being read

    def err(self, msg: str, line: int, col: int, fix: str = "check the nesting of { } in the file") -> ParseError:
        return ParseError(msg, where=f"{self.f}:{line}:{col}", fix=fix)

    def rest(self) -> str:
        return self.lines[self.i][self.col:] if self.i < len(self.lines) else ""

    def skip_blank(self) -> None:
        lines = self.lines
        while self.i < len(lines):
            r = lines[self.i][self.col:] if self.col else lines[self.i]
            if r and not r.isspace():
                return
            self.i, self.col = self.i + 1, 0

    def starts_stmt(self, text: str) -> bool:
        return bool(_STARTS.match(text))

    def check_continuation(self, name: str, text: str, line: int, col: int) -> None:
        """A line that continues operation ``name`` outside its brackets goes on with a
        punctuation mark, a ``key =``, a ``word(...)`` group or a keyword of MLIR's syntax
        (``else``, ``do``, ``attributes``, ...); a bare word there is no part of it (an
        operation misspelled: ``retrun``), which the reader would otherwise skip."""
        m = _LOST_RESULT.match(text)
        if m is not None:               # `%c64 arith.constant ...`, `c64 = arith.constant ...`
            res, op = m.group(1).rstrip("= \t"), m.group(2)
            what = (f"expected '=' after the result {res}" if res.startswith("%") else
                    f"the result {res} of {op} needs its '%'")
            raise self.err(what, line, col + m.start(1),
                           fix=f"write %{res.lstrip('%')} = {op} ...")
        m = _BARE_WORD.match(text)
        if m is None or m.group(1) in _CONTINUING_WORDS:
            return
        word = m.group(1)
        raise self.err(f"expected an operation, got {word!r} (not a part of the {name} above)", line,
                       col + m.start(1), fix="each line holds one MLIR operation: [%r = ] dialect.op ...")

    def block_items(self, top: bool) -> list:
        """Blocks up to the region's ``}`` (not consumed) or the end of the text."""
        blocks = [Block()]
        while True:
            self.skip_blank()
            if self.i >= len(self.lines):
                if not top:
                    n = len(self.lines)
                    raise self.err("the region is not closed: '}' missing at the end of the file", n,
                                   len(self.lines[-1]) + 1 if self.lines else 1)
                return blocks
            r = self.rest()
            code = r.lstrip()
            lead = len(r) - len(code)
            if code.startswith("}"):
                if top:
                    raise self.err("'}' closes no region", self.i + 1, self.col + lead + 1)
                self.col += lead
                return blocks
            if code.startswith("^"):
                blocks.append(self.label())
                continue
            blocks[-1].stmts.append(self.one_line_stmt(r, self.i + 1) or self.stmt())

    def label(self) -> Block:
        r = self.rest()
        m = _LABEL.match(r)
        line, col = self.i + 1, self.col + len(r) - len(r.lstrip()) + 1
        if m is None:
            raise self.err(f"expected ':' after the block label {r.strip().split('(')[0]}", line, col,
                           fix="a block label reads ^bb0(%arg: type):")
        b = Block(label=m.group(1))
        for part in (m.group(3) or "").split(","):
            if ":" in part:
                name, ty = part.split(":", 1)
                b.args.append((name.strip(), ty.strip()))
        self.i, self.col = self.i + 1, 0
        return b

    def next_line(self, i: int) -> int:
        """The index of the first non-empty line from line index ``i`` on (the lines are
        right-stripped; past the last: their count)."""
        lines = self.lines
        while i < len(lines) and not lines[i]:
            i += 1
        return i

    def one_line_stmt(self, r: str, line: int) -> Stmt | None:
        """The common statement, read directly (else None: :meth:`stmt` reads it in general):
        ``[%r = ] dialect.op ...`` on a line of its own - no region, string or comment, its
        brackets balanced, the next non-empty line starting an operation - is one piece, the
        text after the name, as the general reading makes it (``r``: the rest of line
        ``line``, where the statement starts)."""
        fm = _ONE_LINE_OP.match(r)
        if fm is None:
            return None
        name = fm.group(3)
        text = r[fm.end():]
        if name in _NOT_ONE_LINE or '"' in text or "/" in text or _balance(text) != 0:
            return None
        lines, nxt = self.lines, self.next_line(self.i + 1)
        if nxt < len(lines) and not _STARTS.match(lines[nxt]):
            return None
        col = self.col
        ntok = _new(Token, ("word", name, line, col + fm.start(3) + 1))
        res = fm.group(2)
        results, cols = ((res,), (col + fm.start(2) + 1,)) if res else ((), ())
        self.i, self.col = self.i + 1, 0
        # (text is a suffix of a right-stripped line: blank only when empty)
        pieces = ((line, col + fm.end() + 1, text),) if text else ()
        s = Stmt(name, results, pieces, (), ntok, None, self.f, cols)
        s._text = text                      # (text() of one piece, or of none: "")
        return s

    def stmt(self) -> Stmt:
        r = self.rest()
        line = self.i + 1
        m = _STMT.match(r)
        results, group, cols = [], None, []
        if m.group("res"):
            at = m.start("res")
            for part in m.group("res").split(","):
                name, _, n = part.strip().partition(":")
                name = name.strip()
                col = self.col + at + part.index(name) + 1
                at += len(part) + 1
                if n.strip():
                    group = name
                    results.extend(f"{name}#{k}" for k in range(int(n)))
                    cols.extend([col] * int(n))
                else:
                    results.append(name)
                    cols.append(col)
        at = m.end()
        nm = _NAME.match(r, at)
        if nm is None:
            what = r[at:].split()[0] if r[at:].strip() else ""
            if not what and m.group("res"):
                self.i, self.col = self.i + 1, 0        # `%r =` then the name on the next line?
                self.skip_blank()
                if self.i >= len(self.lines):
                    raise self.err("expected an operation name, got the end of the file", line, len(r) + 1,
                                   fix="each line holds one MLIR operation: [%r = ] dialect.op ...")
                raise self.err(f"expected an operation name, got {self.rest().strip()[:20]!r}", self.i + 1,
                               len(self.rest()) - len(self.rest().lstrip()) + 1,
                               fix="each line holds one MLIR operation: [%r = ] dialect.op ...")
            raise self.err(f"expected an operation name, got {what[:20]!r}", line, self.col + at + 1,
                           fix="each line holds one MLIR operation: [%r = ] dialect.op ...")
        name = OP_ALIASES.get(nm.group("name"), nm.group("name"))
        ntok = Token("string" if nm.group("q") else "word", nm.group(0), line, self.col + nm.start() + 1)
        if name == "return" and self.owners and self.owners[-1][0].startswith("scf."):
            owner, at = self.owners[-1]
            raise self.err(f"return inside the {owner} at line {at}: a return ends a func.func's body (ptoas: "
                           "'func.return' op expects parent op 'func.func')", line, ntok.col,
                           fix=f"close the {owner}'s region with '}}' before it (is one missing?); a region of "
                               f"{owner} ends with scf.yield")
        holds = name in REGION_OPS
        pieces, regions, depth = [], [], 0
        self.col += nm.end()
        while True:
            text = self.rest()
            line, col = self.i + 1, self.col + 1
            opened = False
            empty = re.search(r"\{\s*\}\s*$", text) if holds else None
            if empty and depth + _depth(text[:empty.start()], self.f, line, col) == 0:
                body = text[:empty.start()]            # ``} else { }``: an empty region
                if body.strip():
                    pieces.append((line, col, body))
                pieces.append((line, col + empty.start(), None))
                regions.append([Block()])
                self.i, self.col, depth = self.i + 1, 0, 0
                nxt = self.next_line(self.i)
                if nxt >= len(self.lines) or self.starts_stmt(self.lines[nxt]):
                    break
                continue
            if holds and text.rstrip().endswith("{"):
                body = text.rstrip()[:-1]
                if depth + _depth(body, self.f, line, col) == 0:
                    if body.strip():
                        pieces.append((line, col, body))
                    pieces.append((line, col + len(body), None))
                    self.i, self.col, depth = self.i + 1, 0, 0
                    self.owners.append((name, ntok.line))
                    regions.append(self.block_items(top=False))
                    self.owners.pop()
                    self.col += 1                        # the region's '}'
                    opened = True
            if opened:
                continue
            if text and not text.isspace():
                if pieces and depth == 0 and line != ntok.line:
                    self.check_continuation(name, text, line, col)
                pieces.append((line, col, text))
                depth += _depth(text, self.f, line, col)
                if depth < 0:
                    raise self.err(f"{name}: a bracket closes that no bracket opened", line, col)
            self.i, self.col = self.i + 1, 0
            if depth > 0:
                if self.i >= len(self.lines):
                    raise self.err(f"{name}: a bracket opened here is never closed", ntok.line, ntok.col)
                nxt = self.next_line(self.i)
                if nxt < len(self.lines) and _OP_LINE.match(self.lines[nxt]):
                    # an operation cannot continue into the next one: the bracket left open is
                    # a typo on this statement's lines (else the error would be at the file's end)
                    bl, bc, ch = _unclosed(pieces, self.f)
                    if ch == "{" and bc == len(self.lines[bl - 1].rstrip()):
                        raise _no_region_op(self, name, ntok, nxt)
                    raise self.err(f"{name}: the '{ch}' here is never closed (line {nxt + 1} starts the next "
                                   "operation)", bl, bc, fix=f"close it with '{_OPEN[ch]}'")
                continue
            nxt = self.next_line(self.i)
            if nxt >= len(self.lines) or self.starts_stmt(self.lines[nxt]):
                break
        return Stmt(name, results, pieces, regions, ntok, group, self.f, cols)


def _no_region_op(reader, name: str, ntok, nxt: int) -> ParseError:
    """The error of an op ``name`` (at ``ntok``) that is no region op (:data:`REGION_OPS`) yet
    ends a line with ``{`` before the next operation (line ``nxt``, 0-based): a misspelled
    region op (``modul @m {``, ``scf.fro``) - not a '{' left open, which its text would say."""
    close = difflib.get_close_matches(name, sorted(REGION_OPS), n=1, cutoff=0.6)
    return reader.err(f"{name} is no operation that holds a region, yet the '{{' ending its line opens one "
                      f"(line {nxt + 1} starts an operation in it)", ntok.line, ntok.col,
                      fix=f"did you mean {close[0]!r}?" if close else
                      f"a region belongs to {', '.join(sorted(REGION_OPS))}; an attribute dictionary "
                      "closes its '{' with '}'")


def parse_tree(text: str, filename: str = "<pto>") -> list:
    """The top-level statements of PTO-AS ``text`` (usually one ``module``)."""
    r = _Reader(text, filename)
    blocks = r.block_items(top=True)
    return [s for b in blocks for s in b.stmts]
