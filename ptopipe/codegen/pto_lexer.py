"""Tokens of PTO-AS text (MLIR syntax): SSA names ``%x`` (``%r#0``), symbols ``@f``,
block labels ``^bb0``, attribute / type aliases ``#pto.x`` / ``!pto.x``, strings, bare words (identifiers,
numbers, shapes such as ``16x32xf32``) and punctuation, each with its line:col.  ``//``
comments are skipped.  A character no token starts with is a ParseError at its position.
MLIR's source locations (``loc("k.py":3:4)`` after an op, ``#loc1 = loc(...)`` aliases) carry
nothing ptopipe reads: :func:`without_locations` blanks them before either reader sees the text.
"""
from __future__ import annotations

import re
from typing import NamedTuple

from ..errors import ParseError


class Token(NamedTuple):
    kind: str        # "value" "symbol" "label" "hash" "bang" "string" "word" "punct" "eof"
    text: str
    line: int
    col: int


_SPEC = [
    ("nl", r"\n"),
    ("comment", r"//[^\n]*"),
    ("value", r"%[A-Za-z0-9_$.#-]+"),
    ("symbol", r"@[A-Za-z0-9_$.]+"),
    ("label", r"\^[A-Za-z0-9_$.]+"),
    ("hash", r"#[A-Za-z_][A-Za-z0-9_.]*"),
    ("bang", r"![A-Za-z_][A-Za-z0-9_.]*"),
    ("string", r'"(?:[^"\\\n]|\\.)*"'),
    ("badstring", r'"[^\n]*'),
    ("arrow", r"->"),
    ("word", r"-?\d+\.\d+(?:[eE][-+]?\d+)?|-?\d+[eE][-+]?\d+|-?\d[A-Za-z0-9_]*|[A-Za-z_][A-Za-z0-9_.$]*"),
    ("punct", r"[(){}\[\]<>=,:?*+]"),
]
#: one token and the blanks before it (a token is its named group; blanks end no token)
_RE = re.compile(r"[ \t\r]*(?:" + "|".join(f"(?P<{n}>{p})" for n, p in _SPEC) + ")")
_BLANKS = re.compile(r"[ \t\r]*")


_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
#: a string, a comment (skipped whole: a location inside one is no location) or a location
_LOC_SCAN = re.compile(_STRING.pattern + r'|//[^\n]*|(?<![\w.$%#@!])loc\(')
_LOC_ALIAS = re.compile(r"^[ \t]*#loc[\w.$]*[ \t]*=[ \t]*$", re.M)


def without_locations(text: str) -> str:
    """``text`` with every MLIR location - ``loc(...)`` outside strings and comments, and the
    ``#loc = loc(...)`` alias lines - turned into blanks (newlines kept), so that every other
    token keeps its line:col."""
    if "loc(" not in text:
        return text
    out, pos = [], 0
    for m in _LOC_SCAN.finditer(text):
        if m.start() < pos or not m.group().startswith("loc("):
            continue
        depth, i = 0, m.end() - 1
        while i < len(text):
            ch = text[i]
            if ch == '"':
                s = _STRING.match(text, i)
                i = s.end() if s else i + 1
                continue
            depth += (ch == "(") - (ch == ")")
            i += 1
            if depth == 0:
                break
        out.append(text[pos:m.start()])
        out.append(re.sub(r"[^\n]", " ", text[m.start():i]))
        pos = i
    out.append(text[pos:])
    return _LOC_ALIAS.sub(lambda a: " " * len(a.group()), "".join(out))


#: a UTF-8 byte order mark some editors write first: the readers skip it
BOM = "\ufeff"


def tokenize(text: str, filename: str, line: int = 1, col: int = 1) -> list:
    """The tokens of ``text``, which starts at ``line``:``col`` of ``filename`` (a piece of a
    statement: its tokens, and an error in it, at their place in the file)."""
    # the scanner matches each token where the last one ended (its blanks first): one match
    # per token, not one for the token and one for the blanks before it; tuple.__new__ makes
    # the Token without the NamedTuple constructor's argument handling (a fifth of the time)
    # (``start``: where the current line starts, so that ``at - start + 1`` is a column; before
    # the first newline, ``col - 1`` characters before the text)
    out, start = [], 1 - col
    append, new = out.append, tuple.__new__
    end = 0
    for m in iter(_RE.scanner(text).match, None):
        kind = m.lastgroup
        end = m.end()
        if kind == "nl":
            line, start = line + 1, end
        elif kind == "comment":
            continue
        else:
            at = m.start(kind)
            if kind == "badstring":
                raise ParseError("unterminated string", where=f"{filename}:{line}:{at - start + 1}",
                                 fix='close the string with " on the same line')
            append(new(Token, ("punct" if kind == "arrow" else kind, text[at:end], line, at - start + 1)))
    pos = _BLANKS.match(text, end).end()
    if pos < len(text):
        raise ParseError(f"unexpected character {text[pos]!r}", where=f"{filename}:{line}:{pos - start + 1}",
                         fix="PTO-AS is MLIR text: check for a stray character")
    out.append(Token("eof", "", line, pos - start + 1))
    return out
