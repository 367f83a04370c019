"""How many of pto-isa's own CPU-simulator test cases ptopipe runs to their golden - the C++
kernels users most likely try first (pto-isa's ``tests/cpu/st/testcase/<op>/``: ``<op>_kernel.cpp``
with templated ``runTX<...>`` kernels and ``LaunchTX`` wrappers, ``main.cpp`` with the gtest
cases, ``gen_data.py`` writing each case's ``input*.bin`` and ``golden.bin``).  pto-isa's files
are read from ``--pto-isa ROOT`` at run time; none is copied.

For each test directory ``gen_data.py`` runs in a temporary directory (``PYTHONPATH`` its
``utils.py``'s, as pto-isa's run_cpu.py sets it); each gtest case of ``main.cpp`` is mapped to
the kernel instantiation it launches and the data it gives it, by reading - not compiling - the
test: the helper the ``TEST_F`` calls (template arguments and parameters bound), which file
fills which host buffer (``ReadFile``), which host buffer goes to which device buffer
(``aclrtMemcpy``), the ``LaunchTX<...>(...)`` call, the ``if constexpr`` branch of ``LaunchTX`` that
the arguments pick, the one kernel it calls and how each of its parameters is passed, the
device buffer copied back and written to the output file, and the ``ResultCmp`` /
``ResultCmpExact`` that compares it with the golden (its type, its ``eps``: an element is wrong
when it is off by more than ``eps`` both absolutely and relatively, and the case fails past
``eps`` x the compared vector's size wrong elements or more zeroed ones than its zero-count
threshold, 1000 unless given, as pto-isa's tests/common/test_common.h counts).  A device buffer
no file fills (or that is zeroed) starts zeroed.  A launch whose kernel the script cannot name -
it passes a lambda, picks it from a function-pointer table or a ``switch`` - runs as the launch
function itself (on pto-isa's CPU simulator it calls its kernel as a plain call, as it does on
ptopipe's cluster), its stream parameter a nullptr.  A test without ``<op>_kernel.cpp`` has its
kernels in ``main.cpp`` beside the cases (ptopipe builds them without the gtest host code): the
case's helper calls them directly, a Cube and a Vector kernel started on threads run as a pair.
The kernel runs with :func:`ptopipe.cpp.run_cpp` (AIC when what it reaches uses Cube tiles or
matmuls, else AIV) and each case is sorted into:

* ``match``    - ran clean, every compared output within the test's tolerance;
* ``mismatch`` - ran clean, an output off the golden;
* ``refused``  - a ptopipe error (``PtoPipeError``: its class and first line are the reason);
* ``crash``    - any other exception (a raw traceback: always a ptopipe bug; exit 1);
* ``unmapped`` - the script could not read what the case runs (a launch it cannot follow, a
  buffer filled by code it does not read, two kernels, ...): the reason says what;
* ``skipped``  - no ``gen_data.py`` (the case makes and checks its data in C++), ``gen_data.py``
  needs a module besides numpy / ml_dtypes (en_dtypes where it is not installed: a stand-in made
  of ml_dtypes serves its other cases, its float4 cases are skipped), or wrote no data for the
  case (a bf16 case without ``PTO_CPU_SIM_ENABLE_BF16``).

Target (exit 1 when missed): ``match`` at least ``--target`` % of the cases that are not
skipped, and no crash.

Usage:  python benchmarks/pto_isa_st.py --pto-isa PTO_ISA_ROOT [OP ...] [-j 2] [-v]
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import dataclasses
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [ROOT]

from ptopipe.cpp.build import _functions, visible_code  # noqa: E402
from ptopipe.errors import PtoPipeError  # noqa: E402

TESTCASES = os.path.join("tests", "cpu", "st", "testcase")
#: what the tests' ``#if``s test that no build here defines (pto-isa's bf16 coverage is opt-in)
NOT_DEFINED = {m: False for m in ("PTO_CPU_SIM_ENABLE_BF16", "CPU_SIM_BFLOAT_ENABLED", "__PTO_AUTO__",
                                  "DEBUGLOG", "_DEBUG")}
#: modules a gen_data.py may import (besides the standard library; en_dtypes: :data:`EN_DTYPES_SHIM`)
ALLOWED_MODULES = {"numpy", "ml_dtypes", "utils", "tests"}
#: what stands for en_dtypes (float4 and HiFloat8 numpy types, not on PyPI's usual mirrors) where it is not
#: installed: gen_data.py imports it for its float4 cases only (tstore, tmatmul_mx's fp8 cases beside
#: them), whose data it cannot make - ml_dtypes' float4_e2m1fn packs differently and it has no e1m2 -
#: so those cases are skipped (:data:`SHIMMED`) and the others run
EN_DTYPES_SHIM = ('"""en_dtypes stand-in of ptopipe\'s pto_isa_st benchmark: its float4 cases are skipped."""\n'
                  "import ml_dtypes\nfloat4_e2m1 = float4_e1m2 = ml_dtypes.float4_e2m1fn\n")
#: the element types of the cases whose data the en_dtypes stand-in makes wrong
SHIMMED = re.compile(r"\bfloat4_e\dm\dx2_t\b")


# -- element types ---------------------------------------------------------------------------
def _np_types() -> dict:
    out = {"float": np.float32, "float32_t": np.float32, "double": np.float64, "half": np.float16,
           "aclFloat16": np.float16, "float16_t": np.float16, "_Float16": np.float16,
           "int8_t": np.int8, "uint8_t": np.uint8, "int16_t": np.int16, "uint16_t": np.uint16,
           "int32_t": np.int32, "uint32_t": np.uint32, "int64_t": np.int64, "uint64_t": np.uint64,
           "int": np.int32, "unsigned": np.uint32, "char": np.int8, "bool": np.uint8, "size_t": np.uint64,
           "short": np.int16, "long": np.int64}
    try:
        import ml_dtypes
        out.update(bfloat16_t=ml_dtypes.bfloat16, float8_e4m3_t=ml_dtypes.float8_e4m3fn,
                   float8_e5m2_t=ml_dtypes.float8_e5m2, float8_e8m0_t=ml_dtypes.float8_e8m0fnu)
    except ImportError:
        pass
    return {k: np.dtype(v) for k, v in out.items()}


NP_TYPES = _np_types()


def _bare(t: str) -> str:
    return re.sub(r"\b(?:std|pto)::", "", " ".join(t.replace("const", " ").split()))


def np_type(t: str):
    return NP_TYPES.get(_bare(t))


class Unmapped(Exception):
    """The test does something the script cannot follow: the case is ``unmapped``."""


class Unknown(Exception):
    """An expression whose value the script cannot know."""


# -- C expressions --------------------------------------------------------------------------
@dataclass(frozen=True)
class Type:
    """A C++ type, by its spelling (template type arguments are bound to these)."""
    name: str

    def __str__(self) -> str:
        return self.name


_TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+[uUlL]*|(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[fFuUlL]*)"
                    r"|((?:::)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)"
                    r"|(<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%<>!~&|^?:(),.\[\]{}]))")
_CASTS = ("static_cast", "reinterpret_cast", "const_cast", "dynamic_cast")


def tokens(text: str) -> list:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise Unknown(f"cannot read {text[pos:pos + 20]!r}")
        num, name, op = m.groups()
        if num is not None:
            out.append(("num", num))
        elif name is not None:
            out.append(("name", re.sub(r"\s+", "", name).lstrip(":")))
        else:
            out.append(("op", op))
        pos = m.end()
    return out


def _number(text: str):
    t = text.rstrip("uUlL")
    if t.lower().startswith("0x"):
        return int(t, 16)
    if re.fullmatch(r"\d+", t):
        return int(t)
    return float(t.rstrip("fF"))


_BINARY = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="), ("<<", ">>"),
           ("+", "-"), ("*", "/", "%")]


class Expr:
    """A recursive-descent reading of one C++ expression in an environment (``lookup(name)``:
    an int / float / bool / :class:`Type`, or :class:`Unknown`)."""

    def __init__(self, text: str, lookup):
        self.t = tokens(text)
        self.i = 0
        self.lookup = lookup

    def peek(self, k: int = 0):
        return self.t[self.i + k] if self.i + k < len(self.t) else ("end", "")

    def take(self, want: str | None = None):
        tok = self.peek()
        if want is not None and tok[1] != want:
            raise Unknown(f"expected {want!r}, got {tok[1]!r}")
        self.i += 1
        return tok

    def value(self):
        v = self.ternary()
        if self.peek()[0] != "end":
            raise Unknown(f"trailing {self.peek()[1]!r}")
        return v

    def ternary(self):
        c = self.binary(0)
        if self.peek()[1] == "?":
            self.take()
            a = self.ternary()
            self.take(":")
            b = self.ternary()
            return a if c else b
        return c

    def binary(self, level: int):
        if level == len(_BINARY):
            return self.unary()
        v = self.binary(level + 1)
        while self.peek()[0] == "op" and self.peek()[1] in _BINARY[level]:
            op = self.take()[1]
            w = self.binary(level + 1)
            v = _apply(op, v, w)
        return v

    def unary(self):
        kind, text = self.peek()
        if text in ("!", "-", "+", "~"):
            self.take()
            v = self.unary()
            _plain(v)
            return {"!": lambda: not v, "-": lambda: -v, "+": lambda: v, "~": lambda: ~int(v)}[text]()
        if text == "(" and self._cast_ahead():
            self.take()
            ty = self.type_until(")")
            self.take(")")
            return _cast(ty, self.unary())
        return self.postfix()

    def _cast_ahead(self) -> bool:
        """``(TYPE)`` followed by an operand: a C-style cast."""
        kind, text = self.peek(1)
        if kind != "name" or self.peek(2)[1] not in (")", "*"):
            return False
        try:
            v = self.lookup(text)
        except Unknown:
            return _bare(text) in NP_TYPES
        return isinstance(v, Type)

    def type_until(self, *ends) -> Type:
        depth, parts = 0, []
        while True:
            kind, text = self.peek()
            if kind == "end" or (depth == 0 and text in ends):
                break
            if text == "<":
                depth += 1
            elif text == ">":
                depth -= 1
            elif text == ">>":
                if depth == 1 and ">" in ends:      # (the inner and the outer template's close)
                    self.t[self.i] = ("op", ">")
                    self.t.insert(self.i + 1, ("op", ">"))
                    depth -= 1
                    parts.append(">")
                    self.i += 1
                    continue
                depth -= 2
            if kind == "name":
                try:
                    v = self.lookup(text)
                    text = v.name if isinstance(v, Type) else _c_text(v)
                except Unknown:
                    pass
            parts.append(text)
            self.i += 1
        name = " ".join(parts).replace(" :: ", "::").replace("< ", "<").replace(" >", ">").replace(" ,", ",")
        name = re.sub(r"\s*\*", "*", name)
        return Type(name)

    def template_args(self) -> list:
        self.take("<")
        args = []
        if self.peek()[1] == ">":
            self.take()
            return args
        while True:
            args.append(self.type_until(",", ">"))
            sep = self.take()[1]
            if sep == ">":
                return args
            if sep != ",":
                raise Unknown("template arguments")

    def postfix(self):
        kind, text = self.take()
        if kind == "num":
            return _number(text)
        if text == "(":
            v = self.ternary()
            self.take(")")
            return v
        if kind != "name":
            raise Unknown(f"unexpected {text!r}")
        base = text.split("::")[-1]
        if text in ("true", "false"):
            return text == "true"
        if text == "nullptr":
            return None
        if base == "sizeof":
            self.take("(")
            ty = self.type_until(")")
            self.take(")")
            try:
                v = self.lookup(ty.name)
                if isinstance(v, Type):
                    ty = v
            except Unknown:
                pass
            dt = np_type(ty.name)
            if dt is None:
                raise Unknown(f"sizeof({ty.name})")
            return dt.itemsize
        if base in _CASTS:
            ty = self.template_args()[0]
            self.take("(")
            v = self.ternary()
            self.take(")")
            return _cast(ty, v)
        if base in ("is_same_v", "is_same"):
            a, b = self.template_args()
            if base == "is_same":
                self.take("::value") if self.peek()[1] == "::value" else None
                if self.peek()[1] == "::":
                    self.take()
                    self.take()
            return _same(a, b)
        v = self.lookup(text)
        if self.peek()[1] == "(" and isinstance(v, Type):      # a functional cast: T(x)
            self.take()
            w = self.ternary()
            self.take(")")
            return _cast(v, w)
        return v


def _plain(v) -> None:
    if not isinstance(v, (int, float, bool)):
        raise Unknown(f"not a number: {v!r}")


def _apply(op: str, a, b):
    if op in ("==", "!=") and isinstance(a, Type) and isinstance(b, Type):
        return (a == b) == (op == "==")
    _plain(a)
    _plain(b)
    both_int = isinstance(a, int) and isinstance(b, int)
    if op == "/":
        if b == 0:
            raise Unknown("division by zero")
        return int(a / b) if both_int else a / b
    if op == "%":
        if b == 0:
            raise Unknown("modulo by zero")
        return int(a - b * int(a / b))
    return {"||": lambda: bool(a) or bool(b), "&&": lambda: bool(a) and bool(b), "|": lambda: int(a) | int(b),
            "^": lambda: int(a) ^ int(b), "&": lambda: int(a) & int(b), "==": lambda: a == b,
            "!=": lambda: a != b, "<": lambda: a < b, ">": lambda: a > b, "<=": lambda: a <= b,
            ">=": lambda: a >= b, "<<": lambda: int(a) << int(b), ">>": lambda: int(a) >> int(b),
            "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b}[op]()


def _cast(ty: Type, v):
    _plain(v)
    dt = np_type(ty.name)
    if dt is None and "*" not in ty.name:       # (an enum: kept as the cast, for a template argument)
        return _Text(f"static_cast<{ty.name}>({_c_text(v)})")
    if dt is not None and dt.kind in "iub":
        return int(v)
    if dt is not None and dt.kind == "f":
        return float(v)
    return v


def _same(a: Type, b: Type) -> bool:
    return _bare(a.name) == _bare(b.name)


def _c_text(v) -> str:
    if isinstance(v, (_Text, _Enum)):
        return v.text
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, Type):
        return v.name
    return str(v)


# -- reading the C++ -------------------------------------------------------------------------
_STRING_OR_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)


def readable(text: str) -> str:
    """The code as built here: comments and dead ``#if`` branches blanked (ptopipe's
    :func:`visible_code`), string literals kept."""
    code = list(visible_code(text, known=NOT_DEFINED))
    for m in _STRING_OR_COMMENT.finditer(text):
        if m.group(0)[0] in "\"'" and code[m.start()] == m.group(0)[0]:
            code[m.start():m.end()] = m.group(0)
    bare = _STRING_OR_COMMENT.sub(lambda m: m.group(0) if m.group(0)[0] in "\"'" else re.sub(r"[^\n]", " ", m.group(0)),
                                  text)
    for m in _DEFINE_LINE.finditer(bare):          # (visible_code blanks a #define's body: a constant's is kept)
        if code[m.start():m.end()] and "".join(code[m.start():m.end()]).lstrip().startswith("#"):
            code[m.start():m.end()] = m.group(0)
    return "".join(code)


#: an object-like one-line ``#define NAME VALUE`` (a constant: file_scope reads it)
_DEFINE_LINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+\w+[ \t]+[^\n\\]*$", re.M)


def file_scope(code: str) -> dict:
    """The constants a file's code can name: object-like ``#define NAME VALUE``, file-scope
    ``constexpr`` / ``const`` integers, enumerators (as their text, evaluated when used)."""
    out = {}
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+([^\n]+)$", code, re.M):
        out[m.group(1)] = m.group(2).strip()
    for m in re.finditer(r"^(?:static\s+)?(?:inline\s+)?(?:constexpr|const)\s+[\w:]+\s+(\w+)\s*=\s*([^;{}]+);", code,
                         re.M):
        out.setdefault(m.group(1), m.group(2).strip())
    for m in re.finditer(r"^[ \t]*using\s+(\w+)\s*=\s*([\w:]+)\s*;", code, re.M):     # (an element type's alias)
        if _bare(m.group(2)) in NP_TYPES:
            out.setdefault(m.group(1), _bare(m.group(2)))
    for m in re.finditer(r"\benum\s+(?:class\s+)?(\w+)?\s*(?::\s*[\w:]+\s*)?\{([^{}]*)\}", code):
        k = 0
        for part in m.group(2).split(","):
            name, _, val = part.partition("=")
            name = name.strip()
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                continue
            if val.strip():
                try:
                    k = Expr(val, lambda n: out_lookup(out, n)).value()
                except Unknown:
                    continue
            out.setdefault(name, str(k))
            if m.group(1):
                out.setdefault(f"{m.group(1)}::{name}", str(k))
            k = k + 1 if isinstance(k, int) else k
    return out


#: pto-isa's own enumerators (``pto::CmpMode::EQ``), read from its headers by :func:`main`
HEADER_CONSTS: dict = {}


class _Enum(int):
    """An enumerator's value that a template argument spells by its name (``pto::CmpMode::EQ``)."""

    def __new__(cls, value: int, text: str):
        e = super().__new__(cls, value)
        e.text = text
        return e

    def __reduce__(self):
        return _Enum, (int(self), self.text)


def out_lookup(consts: dict, name: str, seen=()):
    spelled = name
    if name not in consts and name.startswith("pto::"):
        name = name[5:]
    if name not in consts and name in HEADER_CONSTS:
        consts = HEADER_CONSTS
    if name in consts and name not in seen:
        v = Expr(consts[name], lambda n: out_lookup(consts, n, seen + (name,))).value()
        if "::" in name and isinstance(v, int) and not isinstance(v, bool):
            return _Enum(v, spelled if "::" in spelled and spelled.startswith("pto::") else spelled)
        return v
    if _bare(name) in NP_TYPES:
        return Type(_bare(name))
    raise Unknown(name)


def balanced(code: str, i: int, open_: str = "(", close: str = ")") -> int:
    """The index just past the bracket closing the one at ``code[i]``."""
    depth = 0
    while i < len(code):
        ch = code[i]
        if ch in "\"'":
            j = i + 1
            while j < len(code) and code[j] != ch:
                j += 2 if code[j] == "\\" else 1
            i = j
        elif ch == open_:
            depth += 1
        elif ch == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise Unmapped(f"an unclosed {open_!r}")


def split_top(text: str, sep: str = ",") -> list:
    """``text`` split at ``sep`` outside brackets (``<>`` counted where they pair)."""
    parts, depth, cur, i = [], 0, "", 0
    while i < len(text):
        ch = text[i]
        if ch in "\"'":
            j = balanced_quote(text, i)
            cur += text[i:j]
            i = j
            continue
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
        i += 1
    if cur.strip():
        parts.append(cur.strip())
    return parts


def balanced_quote(text: str, i: int) -> int:
    q, j = text[i], i + 1
    while j < len(text) and text[j] != q:
        j += 2 if text[j] == "\\" else 1
    return j + 1


def statements(code: str):
    """Yield (kind, parts) for each statement of a function body: ``("if", (cond, then, else))``,
    ``("loop", (header, body))``, ``("block", body)``, ``("stmt", text)``."""
    i, n = 0, len(code)
    while i < n:
        while i < n and code[i] in " \t\n;":
            i += 1
        if i >= n:
            return
        sw = re.match(r"switch\s*\(", code[i:])
        if sw:
            j = balanced(code, i + sw.end() - 1)
            body, k = _branch(code, j)
            yield "switch", (code[i + sw.end():j - 1], body)
            i = k
            continue
        m = re.match(r"(if\s*(?:constexpr\s*)?)\(|(for|while|switch)\s*\(|do\b|else\b", code[i:])
        if m and m.group(1) is not None:
            j = balanced(code, i + m.end() - 1)
            cond = code[i + m.end():j - 1]
            then, i = _branch(code, j)
            k = i
            while k < n and code[k] in " \t\n":
                k += 1
            other = ""
            if code.startswith("else", k) and not re.match(r"\w", code[k + 4:k + 5]):
                other, i = _branch(code, k + 4)
            yield "if", (cond, then, other)
            continue
        if m and m.group(2) is not None:
            j = balanced(code, i + m.end() - 1)
            body, i = _branch(code, j)
            yield "loop", (code[i:j], body)
            continue
        if m and code.startswith("do", i):
            body, i = _branch(code, i + 2)
            k = code.index(";", i) if ";" in code[i:] else n
            yield "loop", ("do", body)
            i = k + 1
            continue
        if code[i] == "{":
            j = balanced(code, i, "{", "}")
            yield "block", code[i + 1:j - 1]
            i = j
            continue
        j = statement_end(code, i)
        yield "stmt", " ".join(code[i:j].split())
        i = j + 1


def switch_case(body: str, value, scope: "Scope") -> str:
    """The statements of ``switch`` body ``body`` that ``value`` runs (to its ``break``)."""
    labels, depth = [], 0
    for m in re.finditer(r"[{}]|\bcase\s+([^:]+?)\s*:(?!:)|\bdefault\s*:", body):
        if m.group(0) == "{":
            depth += 1
        elif m.group(0) == "}":
            depth -= 1
        elif depth == 0:
            labels.append((m.start(), m.end(), m.group(1)))
    start = None
    for k, (lo, hi, expr) in enumerate(labels):
        if expr is not None and scope.try_eval(expr) == value:
            start = k
    if start is None:
        start = next((k for k, (_, _, e) in enumerate(labels) if e is None), None)
    if start is None:
        return ""
    # (to the next label: a case that falls through to the next one is read as ending there)
    end = labels[start + 1][0] if start + 1 < len(labels) else len(body)
    return re.sub(r"(?<!\w)break\s*;", ";", body[labels[start][1]:end])


def _branch(code: str, i: int) -> tuple:
    """(the statement or block at ``code[i:]``, the index past it)."""
    while i < len(code) and code[i] in " \t\n":
        i += 1
    if i < len(code) and code[i] == "{":
        j = balanced(code, i, "{", "}")
        return code[i + 1:j - 1], j
    if re.match(r"if\s*(?:constexpr\s*)?\(|(?:for|while|switch)\s*\(", code[i:]):
        # a nested if / loop without braces: up to the end of its own branches
        m = re.match(r"(?:if\s*(?:constexpr\s*)?|for|while|switch)\s*\(", code[i:])
        j = balanced(code, i + m.end() - 1)
        _, k = _branch(code, j)
        rest = code[k:].lstrip()
        if rest.startswith("else"):
            _, k = _branch(code, k + (len(code[k:]) - len(rest)) + 4)
        return code[i:k], k
    j = statement_end(code, i)
    return code[i:j + 1], j + 1


def statement_end(code: str, i: int) -> int:
    """The index of the ``;`` ending the statement at ``code[i:]`` (outside brackets and
    string / character literals; ``len(code)`` when there is none)."""
    j, depth = i, 0
    while j < len(code):
        ch = code[j]
        if ch in "\"'":
            j = balanced_quote(code, j)
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ";" and depth == 0:
            break
        j += 1
    return j


def template_params(spec: str | None) -> list:
    """[(kind 'type' | 'value', name, default text or None)] of a ``template <...>`` list."""
    out = []
    for p in split_top(spec or ""):
        head, eq, default = p.partition("=")
        words = re.findall(r"[A-Za-z_]\w*(?:::\w+)*|\.\.\.", head)
        if not words:
            continue
        kind = "type" if words[0] in ("typename", "class") else "value"
        out.append((kind, words[-1], default.strip() if eq else None))
    return out


_CALL = re.compile(r"(?<![\w.>:])((?:[A-Za-z_]\w*::)*[A-Za-z_]\w*)\s*(?=[<(])")


def calls(stmt: str) -> list:
    """[(name, template args text or None, [argument texts], start)] of the calls in a statement."""
    out, i = [], 0
    lambdas = [(m.start(), balanced(stmt, stmt.index("{", m.end() - 1), "{", "}"))
               for m in re.finditer(r"\[[^\]]*\]\s*\([^)]*\)\s*(?:mutable\s*)?(?:->\s*[\w:]+\s*)?\{", stmt)]
    while True:
        m = _CALL.search(stmt, i)
        if m is None:
            return out
        inside = next((e for s0, e in lambdas if s0 < m.start() < e), None)
        if inside is not None:
            i = inside
            continue
        j = m.end()
        targs = None
        if stmt[j] == "<":
            k = _template_close(stmt, j)
            if k is None or k >= len(stmt) or stmt[k:].lstrip()[:1] != "(":
                i = m.end()
                continue
            targs = stmt[j + 1:k - 1]
            j = k + (len(stmt[k:]) - len(stmt[k:].lstrip()))
        end = balanced(stmt, j)
        out.append((m.group(1), targs, split_top(stmt[j + 1:end - 1]), m.start()))
        i = j + 1


def _template_close(s: str, i: int) -> int | None:
    depth, j = 0, i
    while j < len(s):
        ch = s[j]
        if ch == "(":
            j = balanced(s, j)
            continue
        if ch == "{":                   # (an aggregate argument: TilesSize{64, 128, ...})
            j = balanced(s, j, "{", "}")
            continue
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
            if depth == 0:
                return j + 1
        elif ch in ";{}":
            return None
        j += 1
    return None


@dataclass
class Fn:
    """A function main.cpp defines (any return type): what :class:`Harness` inlines."""
    name: str
    params: list
    decls: list
    template: str | None
    body: str
    overloads: list = field(default_factory=list)


_KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "catch", "decltype", "static_assert", "alignof"}


def cpp_functions(code: str) -> dict:
    """name -> :class:`Fn` of the functions ``code`` defines at file or namespace scope."""
    out, stack, start, i = {}, [], 0, 0
    while i < len(code):
        ch = code[i]
        if ch in "\"'":
            i = balanced_quote(code, i)
            continue
        if ch == "{":
            head = code[start:i]
            if all(stack) and re.match(r"\s*(?:namespace\b|extern\s+\"C\")", head):
                stack.append(True)
                start = i + 1
                i += 1
                continue
            end = balanced(code, i, "{", "}")
            m = re.search(r"([A-Za-z_]\w*)\s*\(((?:[^()]|\([^()]*\))*)\)\s*(?:const\s*|noexcept\s*)*$", head)
            tm = re.match(r"\s*template\s*<", head)
            k = _template_close(head, tm.end() - 1) if tm else 0
            if all(stack) and m and m.group(1) not in _KEYWORDS and k is not None and \
                    not re.match(r"\s*(?:class|struct|enum|union)\b", head[k:]) and "=" not in head[k:m.start()]:
                spec = " ".join(head[tm.end():k - 1].split()) if tm else None
                parts = [p.strip() for p in split_top(m.group(2)) if p.strip() and p.strip() != "void"]
                f = Fn(m.group(1), _param_names(m.group(2)), [p.split("=")[0].strip() for p in parts], spec,
                       code[i:end])
                f.defaults = [p.partition("=")[2].strip() or None for p in parts]
                if f.name in out:
                    out[f.name].overloads.append(f)
                else:
                    out[f.name] = f
            i = end
            start = i
            continue
        if ch == "}":
            if stack:
                stack.pop()
            start = i + 1
        elif ch == ";":
            start = i + 1
        elif ch == "#":                  # a directive line
            j = code.find("\n", i)
            i = len(code) if j < 0 else j
            start = i
            continue
        i += 1
    return out


#: name -> (template parameter list, {member: ("value" | "type", its text)}) of the struct
#: templates of the test (main.cpp and its local headers: :class:`Harness`): pto-isa's quant tests
#: pass their case as ``Params<int32_t, int8_t, 128, ...>`` and read ``Conf::isVQuant``
STRUCTS: dict = {}


def struct_templates(code: str) -> dict:
    """:data:`STRUCTS` of ``code``: each ``template <...> struct NAME { ... }``'s ``static constexpr``
    members and ``using`` aliases."""
    out = {}
    for m in re.finditer(r"\btemplate\s*<", code):
        k = _template_close(code, m.end() - 1)
        sm = re.match(r"\s*struct\s+(\w+)\s*\{", code[k:]) if k is not None else None
        if sm is None:
            continue
        body = code[k + sm.end():balanced(code, k + sm.end() - 1, "{", "}") - 1]
        members = {mm.group(1): ("value", mm.group(2).strip())
                   for mm in re.finditer(r"static\s+constexpr\s+[\w:]+\s+(\w+)\s*=\s*([^;]+);", body)}
        members.update({mm.group(1): ("type", mm.group(2).strip())
                        for mm in re.finditer(r"\busing\s+(\w+)\s*=\s*([^;]+);", body)})
        out[sm.group(1)] = (code[m.end():k - 1], members)
    return out


def struct_member(owner, member: str, consts: dict):
    """Member ``member`` of ``owner``, a :class:`Type` naming an instantiation of a struct template
    of :data:`STRUCTS` (its template arguments bound to its parameters, defaults included)."""
    m = re.fullmatch(r"(\w+)\s*<(.*)>", owner.name.strip(), re.S) if isinstance(owner, Type) else None
    if m is None or m.group(1) not in STRUCTS or member not in STRUCTS[m.group(1)][1]:
        raise Unknown(f"{owner}::{member}")
    spec, members = STRUCTS[m.group(1)]
    inner = Scope(consts)
    bind_template(inner, Scope(consts), spec, m.group(2), m.group(1))
    kind, text = members[member]
    return Type(_type_in(inner, text)) if kind == "type" else inner.eval(text)


# -- the test's data flow --------------------------------------------------------------------
@dataclass(eq=False)
class Buffer:
    """A host or device buffer of the test (``name``: its first name)."""
    name: str
    device: bool
    size: int | None = None          # bytes allocated
    ctype: str | None = None         # its element type where declared
    file: str | None = None          # the file read into it (host) / copied into it (device)
    filled: int | None = None        # bytes of that file it holds
    source: "Buffer | None" = None   # host: the device buffer copied back into it
    touched: str | None = None       # a statement the script does not read that names it


@dataclass
class Compare:
    golden: str
    actual: Buffer
    ctype: str
    eps: float
    count: int | None
    exact: bool = False
    threshold: int | None = None
    zeros: int = 1000               # zeroed elements allowed (ResultCmp's zeroCountThreshold)


@dataclass
class Case:
    """What one gtest case runs: the kernel instantiation, its arguments, what it compares."""
    name: str
    kernel: str | None = None
    args: dict = field(default_factory=dict)        # param -> Buffer | number | None (nullptr)
    compares: list = field(default_factory=list)
    data: str = ""


_IGNORED_CALLS = {"aclInit", "aclrtSetDevice", "aclrtCreateStream", "aclrtSynchronizeStream", "aclrtFree",
                  "aclrtFreeHost", "aclrtDestroyStream", "aclrtResetDevice", "aclFinalize", "EXPECT_TRUE",
                  "ASSERT_TRUE", "CHECK_RESULT_GTEST", "EXPECT_EQ", "ASSERT_EQ", "GetGoldenDir", "free", "delete",
                  "printf", "data", "size", "std::cout", "cout", "endl", "EXPECT_FALSE", "sizeof"}


class Scope:
    """Names of one function activation: values, types, buffers and lambdas."""

    def __init__(self, consts: dict, parent: "Scope | None" = None):
        self.vars, self.consts, self.parent = {}, consts, parent
        self.types = {}                 # declared scalar types, by name

    def get(self, name: str):
        s = self
        while s is not None:
            if name in s.vars:
                return s.vars[name]
            s = s.parent
        try:
            return out_lookup(self.consts, name)
        except Unknown:
            head, _, member = name.rpartition("::")
            if not head:
                raise
            return struct_member(self.get(head), member, self.consts)

    def lookup(self, name: str):
        v = self.get(name)
        if isinstance(v, (Buffer, Lambda, _Text, str, FnRef)) or v is _UNKNOWN:
            raise Unknown(name)
        return v

    def eval(self, text: str):
        return Expr(text, self.lookup).value()

    def try_eval(self, text: str):
        try:
            return self.eval(text)
        except (Unknown, IndexError, KeyError, TypeError, ValueError, OverflowError):
            return _UNKNOWN

    def buffer(self, text: str) -> Buffer | None:
        """The one buffer an argument expression names (casts, ``.data()``, ``&x[0]`` aside)."""
        found = []
        for n in re.findall(r"(?<![\w.:>])[A-Za-z_]\w*", text):
            try:
                v = self.get(n)
            except Unknown:
                continue
            if isinstance(v, Buffer) and v not in found:
                found.append(v)
        if len(found) > 1:
            raise Unmapped(f"an argument naming two buffers: {text}")
        return found[0] if found else None


_UNKNOWN = object()


@dataclass(frozen=True)
class _Stream:
    """An ``std::ifstream`` of a test file."""
    path: str


@dataclass(frozen=True)
class FileScalar:
    """A scalar the test reads from a file (``ReadFile(..., &scalar, sizeof(scalar))``);
    ``by_address``: passed as ``&scalar`` (a one-element array, which the launch reads)."""
    file: str
    ctype: str
    by_address: bool = False


@dataclass(frozen=True)
class FnRef:
    """A kernel-file function passed by name (``runTest(..., launchTGATHER1D_demo_float)``)."""
    name: str


@dataclass
class Lambda:
    params: list
    body: str
    scope: Scope


class Harness:
    """Walks a gtest case's code (main.cpp), recording its buffers, its launch and its compares."""

    def __init__(self, main_code: str, kernel_code: str, kernel_fns: dict, headers: str = ""):
        self.fns = {n: f for n, f in cpp_functions(main_code).items() if n not in kernel_fns}
        self.consts = file_scope(headers + "\n" + main_code)        # (``headers``: the local ones it includes)
        STRUCTS.clear()
        STRUCTS.update(struct_templates(headers + "\n" + main_code))
        self.kernel_fns = kernel_fns
        self.kernel_consts = file_scope(kernel_code)
        self.buffers: list = []
        self.files: dict = {}                       # output file -> device buffer written to it
        self.launch = None                          # (name, targs, args, scope)
        self.partner = None                         # (another kernel launched beside it: the other side's)
        self.both = False                           # (main.cpp's kernels: a case may launch both sides)
        self.compares: list = []
        self.depth = 0

    def run(self, body: str) -> None:
        self.walk(body, Scope(self.consts))

    def walk(self, code: str, scope: Scope, loop: bool = False) -> None:
        for kind, parts in statements(code):
            if kind == "if":
                cond, then, other = parts
                c = scope.try_eval(cond)
                if c is _UNKNOWN:
                    if self._relevant(then) or self._relevant(other):
                        raise Unmapped(f"a branch on {' '.join(cond.split())!r} the script cannot decide")
                    continue
                self.walk(then if c else other, Scope(self.consts, scope), loop)
            elif kind == "loop":
                self.walk(parts[1], Scope(self.consts, scope), True)
            elif kind == "block":
                self.walk(parts, Scope(self.consts, scope), loop)
            elif kind == "switch":
                v = scope.try_eval(parts[0])
                if v is _UNKNOWN:
                    if self._relevant(parts[1]):
                        raise Unmapped(f"a switch on {' '.join(parts[0].split())!r} the script cannot decide")
                    continue
                self.walk(switch_case(parts[1], v, scope), Scope(self.consts, scope), loop)
            else:
                self.statement(parts, scope, loop)

    def _relevant(self, code: str) -> bool:
        return bool(re.search(r"\b(ReadFile|WriteFile|aclrtMemcpy|aclrtMalloc|ResultCmp\w*)\s*\(", code)) or any(
            c[0] in self.kernel_fns or c[0] in self.fns for c in calls(" ".join(code.split())))

    # one statement -------------------------------------------------------------------------
    def statement(self, s: str, scope: Scope, loop: bool) -> None:
        alias = re.match(r"using\s+(\w+)\s*=\s*(?:typename\s+)?([^;]+)$", s)
        if alias:                               # (a type: Conf::DT of a struct template's instantiation)
            try:
                v = scope.get(alias.group(2).strip())
            except Unknown:
                v = Type(_type_in(scope, alias.group(2).strip()))
            scope.vars[alias.group(1)] = v if isinstance(v, Type) else _UNKNOWN
            return
        if s in ("break", "continue") or s.startswith(("using ", "typedef ")):
            return
        if re.match(r"return\b", s):
            for name, targs, args, _ in calls(s):
                self.call(name, targs, args, scope, s, loop)
            return
        lam = re.match(r"(?:const\s+)?auto\s+(\w+)\s*=\s*\[[^\]]*\]\s*\(([^)]*)\)\s*(?:->\s*[\w:]+\s*)?\{(.*)\}$", s,
                       re.S)
        if lam:
            scope.vars[lam.group(1)] = Lambda(_param_names(lam.group(2)), lam.group(3), scope)
            return
        th = re.match(r"std::thread\s+\w+\s*[({]\s*([A-Za-z_]\w*)\s*(?:,(.*))?[)}]$", s, re.S)
        if th and isinstance(_get_or_none(scope, th.group(1)), Lambda):     # (the lambda runs, joined)
            self.call(th.group(1), None, split_top(th.group(2) or ""), scope, s, loop)
            return
        fin = re.match(r"std::ifstream\s+(\w+)\s*\((.*)\)$", s, re.S)
        if fin:
            path = _file_name((split_top(fin.group(2)) or [""])[0], scope)
            scope.vars[fin.group(1)] = _Stream(path) if path else _UNKNOWN
            return
        rd = re.match(r"(\w+)\.read\(\s*reinterpret_cast<char\s*\*>\(\s*&\s*(\w+)\s*\)", s)
        if rd and isinstance(_get_or_none(scope, rd.group(1)), _Stream):
            self.call("ReadFile", None, [f'"{_get_or_none(scope, rd.group(1)).path}"', "0", "&" + rd.group(2)],
                      scope, s, loop)
            return
        handled = self.declaration(s, scope)
        for name, targs, args, _ in calls(s):
            self.call(name, targs, args, scope, s, loop)
        if not handled and not any(True for _ in calls(s)):
            m = re.match(r"([A-Za-z_]\w*)\s*([-+*/]?=)\s*(.+)$", s)
            if m and "=" not in m.group(3)[:1]:
                try:
                    old = scope.get(m.group(1))
                except Unknown:
                    old = _UNKNOWN
                if isinstance(old, Buffer):
                    old.touched = old.touched or s
                    return
                v = scope.try_eval(m.group(3))
                if m.group(2) != "=" and v is not _UNKNOWN and old is not _UNKNOWN:
                    v = _apply(m.group(2)[0], old, v)
                elif m.group(2) != "=":
                    v = _UNKNOWN
                _assign(scope, m.group(1), v)
                return
            self.touch(s, scope)

    def touch(self, s: str, scope: Scope) -> None:
        """A statement the script does not read: the buffers it names are marked (a zeroing
        assignment excepted: they start zeroed here)."""
        if re.fullmatch(r"[\w\[\]+* ]+\s*=\s*(?:\w+\s*\{\s*0?\s*\}|\w+\(0\)|0(?:\.0*)?f?)", s):
            return
        for n in re.findall(r"(?<![\w.:>])[A-Za-z_]\w*", s):
            try:
                v = scope.get(n)
            except Unknown:
                continue
            if isinstance(v, Buffer) and v.touched is None:
                v.touched = s

    def declaration(self, s: str, scope: Scope) -> bool:
        multi = re.fullmatch(r"(?:(?:const|static)\s+)*[\w:]+(?:\s*<[^;=(){}]*>)?\s*[*&]*\s*[A-Za-z_]\w*"
                             r"(?:\s*,\s*[*&]*\s*[A-Za-z_]\w*)+", s)
        if multi:                                   # T *a, *b;  (pointers named before allocation)
            for n in re.findall(r"([A-Za-z_]\w*)\s*(?:,|$)", s):
                scope.vars[n] = _UNKNOWN
            return True
        m = re.match(r"(?:(?:static|const|constexpr|volatile|inline)\s+)*"
                     r"((?:[\w:]+)(?:\s*<[^;=(){}]*>)?)((?:\s*[*&])+\s*|\s+)([A-Za-z_]\w*)\s*"
                     r"(?:=\s*(.+)|\((.*)\)|\{(.*)\}|\[(.+)\])?$", s, re.S)
        if m is None or m.group(1) in ("return", "delete", "else", "goto", "case") or "(" in m.group(1):
            return False
        ty, ptr, name, init, paren, brace, array = m.groups()
        ty = ty.strip()
        scope.types[name] = _type_in(scope, ty)
        if ty in ("bool",) and init and re.search(r"\bResultCmp", init):
            return False
        vec = re.match(r"(?:std::)?vector\s*<(.+)>$", ty)
        if ty in ("return", "delete", "else", "goto", "case", "throw", "new", "using", "typedef"):
            return False
        is_ptr = "*" in ptr
        if vec:
            elt = _type_in(scope, vec.group(1))
            count = scope.try_eval(paren or brace or "0")
            dt = np_type(elt)
            b = Buffer(name, False, count * dt.itemsize if dt is not None and isinstance(count, int) else None, elt)
            b.count = count if isinstance(count, int) else None
            scope.vars[name] = b
            self.buffers.append(b)
            return True
        if array is not None:
            elt = _type_in(scope, ty)
            count = scope.try_eval(array)
            dt = np_type(elt)
            b = Buffer(name, False, count * dt.itemsize if dt is not None and isinstance(count, int) else None, elt)
            scope.vars[name] = b
            self.buffers.append(b)
            return True
        if is_ptr:
            if init and (re.match(r"new\b|\(?\w*\)?\s*malloc\(", init)):
                b = Buffer(name, False, None, _type_in(scope, ty.rstrip("*& ")))
                scope.vars[name] = b
                self.buffers.append(b)
                return True
            src = scope.buffer(init) if init else None
            scope.vars[name] = src if src is not None else _UNKNOWN
            return True
        if ty in ("std::string", "string", "auto", "const char", "char") and init is not None and \
                re.search(r"\"[^\"]*\"", init):
            scope.vars[name] = init.strip()[1:-1] if re.fullmatch(r"\"[^\"]*\"", init.strip()) else \
                _file_name(init, scope)
            return True
        if ty in ("aclrtStream", "std::string", "string", "auto") and init and "GetGoldenDir" in init:
            scope.vars[name] = _UNKNOWN
            return True
        if init is not None or paren is not None or brace is not None:
            text = init if init is not None else (paren if paren is not None else brace)
            if re.search(r"\bResultCmp\w*\s*\(", text or ""):
                return False
            if text and re.match(r"\[[^\]]*\]\s*\(", text):          # a lambda
                lam = re.match(r"\[[^\]]*\]\s*\(([^)]*)\)\s*(?:->\s*[\w:]+\s*)?\{(.*)\}$", text, re.S)
                scope.vars[name] = Lambda(_param_names(lam.group(1)), lam.group(2), scope) if lam else _UNKNOWN
                return True
            v = scope.try_eval(text) if text else _UNKNOWN
            if ty in ("aclrtStream",):
                v = _UNKNOWN
            scope.vars[name] = v
            return not any(c[0] in ("ReadFile", "aclrtMalloc", "aclrtMallocHost") or c[0] in self.fns
                           or c[0] in self.kernel_fns for c in calls(text or ""))
        scope.vars[name] = _UNKNOWN
        return True

    def call(self, name: str, targs, args: list, scope: Scope, stmt: str, loop: bool) -> None:
        base = name.split("::")[-1]
        if base in ("aclrtMalloc", "aclrtMallocHost"):
            n = re.sub(r"[()&*\s]|void", "", args[0]).strip()
            size = scope.try_eval(args[1])
            b = Buffer(n, base == "aclrtMalloc", size if isinstance(size, int) else None)
            try:
                old = scope.get(n)
            except Unknown:
                old = None
            _assign(scope, n, b)
            if old is _UNKNOWN or old is None:
                pass
            self.buffers.append(b)
            return
        if base == "ReadFile":
            path = _file_name(args[0], scope)
            dst = scope.buffer(args[2])
            by_address = re.fullmatch(r"&\s*([A-Za-z_]\w*)", args[2].strip())
            if dst is None and by_address and path:
                n = by_address.group(1)
                s0 = scope
                while s0 is not None and n not in s0.types:
                    s0 = s0.parent
                if s0 is not None and np_type(s0.types[n]) is not None:
                    _assign(scope, n, FileScalar(path, s0.types[n]))
                    return
            if dst is None:
                raise Unmapped(f"ReadFile into {args[2]!r}, which the script does not know")
            if path is None:
                raise Unmapped(f"ReadFile of {args[0]!r}")
            dst.file = path
            size = scope.try_eval(args[1]) if len(args) > 1 else _UNKNOWN
            dst.filled = size if isinstance(size, int) else None
            if path in self.files:
                dst.source = self.files[path]
            return
        if base == "aclrtMemcpy":
            dst, src = scope.buffer(args[0]), scope.buffer(args[2])
            kind = args[4] if len(args) > 4 else ""
            size = scope.try_eval(args[3])
            if dst is None or src is None:
                raise Unmapped(f"aclrtMemcpy between buffers the script does not know: {stmt}")
            if "HOST_TO_DEVICE" in kind:
                if src.touched:
                    raise Unmapped(f"{src.name} is filled by code the script does not read: {src.touched}")
                dst.file, dst.filled, dst.source = src.file, size if isinstance(size, int) else None, src
            elif "DEVICE_TO_HOST" in kind:
                dst.source = src
                dst.filled = size if isinstance(size, int) else None
            else:
                raise Unmapped(f"aclrtMemcpy of kind {kind!r}")
            return
        if base == "WriteFile":
            path = _file_name(args[0], scope)
            src = scope.buffer(args[1])
            if path and src is not None and src.device:         # (written from the device buffer itself)
                self.files[path] = src
            elif path and src is not None and src.source is not None:
                self.files[path] = src.source
            return
        if base in ("ResultCmp", "ResultCmpExact"):
            self.compare(base, targs, args, scope)
            return
        ref = _get_or_none(scope, base)
        if isinstance(ref, FnRef):              # (the launch function the case was given)
            name = base = ref.name
        if name in self.kernel_fns and name not in self.fns:
            if loop:
                raise Unmapped(f"{name} is launched in a loop")
            if self.launch is not None and (name, targs, args) == self.launch[:3]:
                return                              # (the same kernel again: a second Vector core's thread)
            if self.launch is not None and self.partner is None and self.both:
                self.partner = (name, targs, args, scope)       # (the other side's kernel, on its thread)
                return
            if self.launch is not None:
                raise Unmapped(f"more than one launch ({self.launch[0]}, {name})")
            self.launch = (name, targs, args, scope)
            return
        lam = _get_or_none(scope, base)
        if isinstance(lam, Lambda):
            inner = Scope(self.consts, lam.scope)
            if len(args) != len(lam.params):
                raise Unmapped(f"a call of lambda {base} with {len(args)} arguments")
            for p, a in zip(lam.params, args):
                _bind(inner, scope, p, a)
            self.walk(lam.body, inner, loop)
            return
        f = self.fns.get(base)
        if f is not None and f.body.strip("{} \n"):
            self.depth += 1
            if self.depth > 8:
                raise Unmapped(f"calls nested too deep at {name}")
            inner = Scope(self.consts)
            bind_template(inner, scope, f.template, targs, base)
            for k, p in enumerate(f.params):
                if k < len(args) and args[k].strip() in self.kernel_fns and _get_or_none(scope, args[k].strip()) is None:
                    inner.vars[p] = FnRef(args[k].strip())
                elif k < len(args):
                    _bind(inner, scope, p, args[k])
                else:
                    default = f.defaults[k] if k < len(f.defaults) else None
                    inner.vars[p] = inner.try_eval(default) if default else _UNKNOWN
            self.walk(f.body[1:-1], inner, loop)
            self.depth -= 1
            return
        if base == "copy" and len(args) == 3 and name.startswith("std::"):     # (a host buffer copied whole)
            src, dst = scope.buffer(args[0]), scope.buffer(args[2])
            if src is not None and dst is not None and src is not dst:
                dst.source = src
                return
        if base in ("memset", "fill", "fill_n") and len(args) == 3:
            if scope.try_eval(args[1 if base == "memset" else 2]) != 0:
                self.touch(stmt, scope)             # (a buffer filled with a value: not what starts it here)
            return
        if base in _IGNORED_CALLS or base.startswith(("acl", "std::")) or name.startswith("std::"):
            return
        self.touch(stmt, scope)

    def compare(self, base: str, targs, args: list, scope: Scope) -> None:
        exp, act = scope.buffer(args[0]), scope.buffer(args[1])
        if exp is None or act is None:
            raise Unmapped(f"{base} of {args[0]!r}, {args[1]!r}: buffers the script does not know")
        if exp.file is None:
            raise Unmapped(f"{base}'s expected {exp.name} comes from no file")
        dev = act.source
        while dev is not None and not dev.device:
            dev = dev.source
        if dev is None:
            raise Unmapped(f"{base}'s actual {act.name} is copied from no device buffer")
        ctype = _type_in(scope, targs) if targs else (exp.ctype or act.ctype)
        if ctype is None:
            raise Unmapped(f"{base} of buffers of no known element type")
        eps, threshold, zero_threshold = 0.0, None, 1000
        if base == "ResultCmp":
            if len(args) < 3:
                raise Unmapped("ResultCmp without eps")
            eps = scope.try_eval(args[2])
            if eps is _UNKNOWN:
                raise Unmapped(f"ResultCmp's eps {args[2]!r}")
            if len(args) > 3:
                threshold = scope.try_eval(args[3])
                if not isinstance(threshold, int):
                    raise Unmapped(f"ResultCmp's threshold {args[3]!r}")
            if len(args) > 4:
                zeros = scope.try_eval(args[4])
                if not isinstance(zeros, (int, bool)):
                    raise Unmapped(f"ResultCmp's zero-count threshold {args[4]!r}")
                zero_threshold = int(zeros)
        count = getattr(exp, "count", None)
        self.compares.append(Compare(exp.file, dev, ctype, float(eps), count, base == "ResultCmpExact",
                                     threshold, zero_threshold))


def _get_or_none(scope: Scope, name: str):
    try:
        return scope.get(name)
    except Unknown:
        return None


def _assign(scope: Scope, name: str, v) -> None:
    s = scope
    while s is not None:
        if name in s.vars:
            s.vars[name] = v
            return
        s = s.parent
    scope.vars[name] = v


def _param_names(params: str) -> list:
    out = []
    for p in split_top(params):
        p = p.split("=")[0].strip()
        ids = re.findall(r"[A-Za-z_]\w*", p)
        if ids and p != "void":
            out.append(ids[-1])
    return out


def _file_name(expr: str, scope: Scope) -> str | None:
    m = re.findall(r"\"([^\"]*)\"", expr)
    if not m:
        m = [v for v in (_get_or_none(scope, n) for n in re.findall(r"[A-Za-z_]\w*", expr)) if isinstance(v, str)]
    if not m:
        return None
    return m[-1].lstrip("/").split("/")[-1]


def _type_in(scope: Scope, text: str | None) -> str | None:
    if text is None:
        return None
    text = text.strip()
    try:
        v = scope.get(text)
        if isinstance(v, Type):
            return v.name
    except Unknown:
        pass
    return re.sub(r"[A-Za-z_]\w*", lambda m: _type_word(scope, m.group(0)), text)


def _type_word(scope: Scope, w: str) -> str:
    try:
        v = scope.get(w)
        return v.name if isinstance(v, Type) else w
    except Unknown:
        return w


def _bind(inner: Scope, outer: Scope, param: str, arg: str) -> None:
    """Bind function parameter ``param`` to the argument text ``arg`` of the caller ``outer``."""
    a = arg.strip()
    lam = re.match(r"\[[^\]]*\]\s*\(([^)]*)\)\s*(?:->\s*[\w:]+\s*)?(?:mutable\s*)?\{(.*)\}$", a, re.S)
    if lam:
        inner.vars[param] = Lambda(_param_names(lam.group(1)), lam.group(2), outer)
        return
    if re.fullmatch(r"\"[^\"]*\"", a):
        inner.vars[param] = a[1:-1]
        return
    if re.fullmatch(r"[A-Za-z_]\w*", a):
        v = _get_or_none(outer, a)
        if isinstance(v, (Buffer, Lambda, str, FileScalar)):
            inner.vars[param] = v
            return
    b = outer.buffer(a) if not re.fullmatch(r"[\d.xXa-fA-FuUlL+-]+", a) else None
    inner.vars[param] = b if b is not None else outer.try_eval(a)


def bind_template(inner: Scope, outer: Scope, spec: str | None, targs: str | None, name: str) -> None:
    params = template_params(spec)
    given = split_top(targs) if targs else []
    if len(given) > len(params) and not any(p[1] == "..." for p in params):
        raise Unmapped(f"{name} given {len(given)} template arguments for {len(params)}")
    for k, (kind, pname, default) in enumerate(params):
        if k < len(given):
            text, where = given[k], outer
        elif default is not None:
            text, where = default, inner
        else:
            inner.vars[pname] = _UNKNOWN       # (deduced from an argument: a lambda's type, ...)
            continue
        if kind == "type":
            inner.vars[pname] = Type(_type_in(where, text))
        else:
            v = where.try_eval(text)
            inner.vars[pname] = v if v is not _UNKNOWN else _Text(_substitute(where, text))


@dataclass(frozen=True)
class _Text:
    """A template value argument the script cannot evaluate (an enumerator): kept as written."""
    text: str


def _substitute(scope: Scope, text: str) -> str:
    def word(m):
        try:
            v = scope.get(m.group(0))
        except Unknown:
            return m.group(0)
        if isinstance(v, Type):
            return v.name
        if isinstance(v, _Text):
            return v.text
        if isinstance(v, (bool, int, float)):
            return _c_text(v)
        return m.group(0)
    return re.sub(r"(?<![\w:])[A-Za-z_]\w*(?!\s*::)", word, text)


# -- the kernel a launch runs -----------------------------------------------------------------
class Launcher:
    """Walks ``LaunchTX``'s body (kernel file) with its template arguments and parameters bound:
    the one kernel function it calls, with what."""

    def __init__(self, kernel_fns: dict, consts: dict):
        self.fns, self.consts = kernel_fns, consts
        self.found = []

    def run(self, name: str, targs, args: list, outer: Scope):
        f = self.fns[name]
        chosen = _overload(f, targs, args)
        inner = Scope(self.consts)
        bind_template(inner, outer, chosen.template, targs, name)
        for k, p in enumerate(chosen.params):
            if k < len(args):
                _bind(inner, outer, p, args[k])
        self.walk(chosen.body[1:-1], inner, name)
        if not self.found:
            raise Unmapped(f"{name} calls no kernel function of the file")
        if len({(n, t) for n, t, _, _ in self.found}) > 1:
            raise Unmapped(f"{name} runs {len(self.found)} kernels ({', '.join(n for n, *_ in self.found)})")
        return self.found[0]

    def walk(self, code: str, scope: Scope, launch: str) -> None:
        for kind, parts in statements(code):
            if kind == "if":
                cond, then, other = parts
                c = scope.try_eval(cond)
                if c is _UNKNOWN:
                    if any(n in self.fns for n, *_ in calls(" ".join((then + other).split()))):
                        raise Unmapped(f"{launch}: a branch on {' '.join(cond.split())!r} the script cannot decide")
                    continue
                self.walk(then if c else other, Scope(self.consts, scope), launch)
            elif kind == "switch":
                v = scope.try_eval(parts[0])
                if v is _UNKNOWN:
                    raise Unmapped(f"{launch}: a switch on {' '.join(parts[0].split())!r} the script cannot decide")
                self.walk(switch_case(parts[1], v, scope), Scope(self.consts, scope), launch)
            elif kind in ("loop", "block"):
                body = parts[1] if kind == "loop" else parts
                if kind == "loop" and any(n in self.fns for n, *_ in calls(" ".join(body.split()))):
                    raise Unmapped(f"{launch} calls its kernel in a loop")
                self.walk(body, Scope(self.consts, scope), launch)
            else:
                s = parts
                found = [c for c in calls(s) if c[0] in self.fns and c[0] != launch]
                if not found:
                    m = re.match(r"(?:(?:static|const|constexpr)\s+)*[\w:]+\s+([A-Za-z_]\w*)\s*=\s*(.+)$", s)
                    if m:
                        scope.vars[m.group(1)] = scope.try_eval(m.group(2))
                    elif re.match(r"using\s+(\w+)\s*=\s*(.+)$", s):
                        u = re.match(r"using\s+(\w+)\s*=\s*(.+)$", s)
                        scope.vars[u.group(1)] = Type(_type_in(scope, u.group(2)))
                    continue
                for name, targs, args, _ in found:
                    self.found.append((name, targs and _instantiation_args(scope, targs),
                                       [_kernel_arg(scope, a) for a in args], s))


def _overload(f, targs, args):
    """The overload of ``f`` (a build.Function) a call with these arguments picks: by the
    number of parameters, then of template parameters."""
    cands = [f] + list(f.overloads)
    by_args = [c for c in cands if len(c.params) == len(args)]
    if len(by_args) == 1:
        return by_args[0]
    n = len(split_top(targs)) if targs else 0
    by_t = [c for c in (by_args or cands) if len(template_params(c.template)) >= n]
    if not by_t:
        raise Unmapped(f"no overload of {f.name} takes these arguments")
    return by_t[0]


def _instantiation_args(scope: Scope, targs: str) -> str:
    out = []
    for a in split_top(targs):
        v = scope.try_eval(a)
        if v is _UNKNOWN or v is None:
            t = _type_in(scope, a) if re.fullmatch(r"[\w:<>, *]+", a) else _substitute(scope, a)
            out.append(_substitute(scope, t))
        elif isinstance(v, float):
            raise Unmapped(f"a float template argument {a!r}")
        else:
            out.append(_c_text(v))
    return ", ".join(out)


def _kernel_arg(scope: Scope, a: str):
    a = a.strip()
    if re.match(r"\[[^\]]*\]\s*\(", a):
        raise Unmapped("the launch passes its kernel a lambda (a template parameter deduced from it: no "
                       "instantiation to name)")
    if a in ("nullptr", "NULL"):
        return None
    inner = _uncast(a)
    if re.fullmatch(r"[A-Za-z_]\w*", inner) and isinstance(_get_or_none(scope, inner), FileScalar):
        return _get_or_none(scope, inner)
    addr = re.fullmatch(r"&\s*([A-Za-z_]\w*)", inner)
    if addr and isinstance(_get_or_none(scope, addr.group(1)), FileScalar):
        return dataclasses.replace(_get_or_none(scope, addr.group(1)), by_address=True)
    b = scope.buffer(inner)
    if b is not None:
        if not re.fullmatch(r"[A-Za-z_]\w*", inner):
            raise Unmapped(f"a kernel argument {a!r} that offsets a buffer")
        return b
    v = scope.try_eval(a)
    if v is _UNKNOWN or isinstance(v, (Type, _Text)):
        raise Unmapped(f"a kernel argument {a!r} the script cannot evaluate")
    return v


def _launch_arg(scope: Scope, a: str, decl: str):
    """An argument of a launch function run as the kernel: a stream it takes (``void *stream``,
    ``aclrtStream``) whose value the script does not know is a nullptr (it is never used)."""
    try:
        return _kernel_arg(scope, a)
    except Unmapped:
        if re.search(r"\baclrtStream\b|\bstream\s*$", decl):
            return None
        raise


_CAST_HEAD = re.compile(r"(?:reinterpret|static|const)_cast\s*<[^>]*>\s*(?=\()")


def _uncast(a: str) -> str:
    """An argument without its casts and parentheses: ``(half *)(src0)`` -> ``src0``."""
    while True:
        a = a.strip()
        m = _CAST_HEAD.match(a)
        if m:
            a = a[m.end():]
            continue
        if a.startswith("("):
            end = balanced(a, 0)
            inside = a[1:end - 1].strip()
            if end == len(a):
                a = inside
                continue
            if inside.endswith("*") or _bare(inside) in NP_TYPES:       # a C-style cast
                a = a[end:]
                continue
        return a


# -- one test directory -----------------------------------------------------------------------
_TEST = re.compile(r"\bTEST(?:_F)?\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)\s*\{")
_CUBE = re.compile(r"\b(?:TMATMUL\w*|TGEMV\w*|TileLeft\w*|TileRight\w*|TileAcc\w*"
                   r"|TileType::(?:Mat|Left|Right|Acc|Bias|Scaling|ScaleLeft|ScaleRight))\b")


#: what a kernel's body does (an instruction, a tile, a view) and what only host code does
_DEVICE = re.compile(r"\b(?:TASSIGN|TLOAD|TSTORE|TPUSH|TPOP|TMATMUL\w*)\s*[<(]|\b(?:Tile|GlobalTensor)\s*<")
_HOST = re.compile(r"\b(?:aclrt\w+|ReadFile|WriteFile|ResultCmp\w*)\s*\(|\bstd::thread\b")


def gtest_cases(main_code: str) -> list:
    """[(Suite.case, body)] of main.cpp."""
    out = []
    for m in _TEST.finditer(main_code):
        end = balanced(main_code, m.end() - 1, "{", "}")
        out.append((f"{m.group(1)}.{m.group(2)}", main_code[m.end():end - 1]))
    return out


def reached(fns: dict, name: str) -> str:
    """The bodies of ``name`` and of the file's functions it calls, transitively."""
    seen, todo, text = set(), [name], []
    while todo:
        n = todo.pop()
        f = fns.get(n)
        if f is None or n in seen:
            continue
        seen.add(n)
        for c in [f] + list(f.overloads):
            text.append(c.body)
            todo.extend(re.findall(r"\b([A-Za-z_]\w*)\s*[<(]", c.body))
    return "\n".join(text)


def map_case(name: str, body: str, main_code: str, kernel_code: str, kernel_fns: dict,
             in_main: bool = False, headers: str = "") -> Case:
    """What gtest case ``name`` (``body``) of ``main_code`` runs; ``in_main``: the kernels
    (``kernel_fns``) are main.cpp's own (``kernel_code`` is then main.cpp's); ``headers``: the code
    of the headers beside it that it includes (their constants)."""
    h = Harness(main_code, kernel_code, kernel_fns, headers)
    h.both = in_main
    h.run(body)
    if h.launch is None:
        raise Unmapped("launches no kernel of the kernel file")
    if not h.compares:
        raise Unmapped("compares no output with ResultCmp / ResultCmpExact")
    lname, targs, args, scope = h.launch
    if in_main:                 # (main.cpp's own kernel, called by the case's host code)
        kname, kt, kargs, stmt = lname, targs and _instantiation_args(scope, targs), \
            [_kernel_arg(scope, a) for a in args], lname
    else:
        try:
            kname, kt, kargs, stmt = Launcher(kernel_fns, h.kernel_consts).run(lname, targs, args, scope)
        except Unmapped:
            # the launch function itself: it calls its kernel on the CPU simulator as a plain call
            # (through a function-pointer table, with a lambda, ...), which a run of it does too
            chosen = _overload(kernel_fns[lname], targs, args)
            kname, kt, stmt = lname, targs and _instantiation_args(scope, targs), lname
            kargs = [_launch_arg(scope, a, d) for a, d in zip(args, chosen.decls or [""] * len(args))]
    kf = kernel_fns[kname]
    chosen = _overload(kf, kt, kargs)
    if chosen.template and kt is None:
        raise Unmapped(f"{kname} is a template called without template arguments: {stmt}")
    case = Case(name, f"{kname}<{kt}>" if chosen.template else kname)
    case.role = "aic" if _CUBE.search(reached(kernel_fns, kname)) else "aiv"
    case.roles = {case.role: case.kernel}
    if h.partner is not None:           # (a Cube and a Vector kernel, each on its threads)
        pname, pt, pargs, _ = h.partner
        other = "aiv" if case.role == "aic" else "aic"
        pf = _overload(kernel_fns[pname], pt, pargs)
        if (other == "aic") != bool(_CUBE.search(reached(kernel_fns, pname))) or pt is not None or targs is not None:
            raise Unmapped(f"two kernels launched ({kname}, {pname}) that are not a Cube and a Vector kernel")
        if pf.params != chosen.params or [_kernel_arg(scope, a) for a in pargs] != kargs:
            raise Unmapped(f"{kname} and {pname} launched with other arguments")
        case.roles[other] = pname
    if len(kargs) != len(chosen.params):
        raise Unmapped(f"{kname} called with {len(kargs)} arguments for {len(chosen.params)} parameters")
    seen = {}
    for p, a in zip(chosen.params, kargs):
        if isinstance(a, Buffer):
            if id(a) in seen:
                raise Unmapped(f"{a.name} passed as both {seen[id(a)]} and {p}")
            seen[id(a)] = p
            if a.touched:
                raise Unmapped(f"{a.name} is filled by code the script does not read: {a.touched}")
        case.args[p] = a
    for c in h.compares:
        if id(c.actual) not in seen:
            raise Unmapped(f"the compared {c.actual.name} is not an argument of {kname}")
    case.compares = h.compares
    return case


@dataclass
class Outcome:
    test: str
    case: str
    kind: str
    msg: str = ""
    secs: float = 0.0
    kernel: str = ""


def gen_data(tdir: str, out: str, timeout: float) -> str | None:
    """Run ``tdir``'s gen_data.py in ``out``; None, or why the cases are skipped."""
    for f in os.listdir(tdir):
        if f.endswith(".py") or f.endswith(".h") and False:
            shutil.copy(os.path.join(tdir, f), out)
    st = os.path.dirname(os.path.dirname(tdir))
    root = os.path.dirname(os.path.dirname(os.path.dirname(st)))
    text = open(os.path.join(tdir, "gen_data.py"), encoding="utf-8", errors="replace").read()
    # (the imports it cannot run without: an indented one may be guarded by a try, as ttrans's is)
    for m in re.finditer(r"^(?:import|from)\s+([\w.]+)", text, re.M):
        top = m.group(1).split(".")[0]
        if top == "en_dtypes" and importlib.util.find_spec("en_dtypes") is None:
            with open(os.path.join(out, "en_dtypes.py"), "w") as f:
                f.write(EN_DTYPES_SHIM)
            continue
        if top not in ALLOWED_MODULES and top not in sys.stdlib_module_names and \
                not os.path.exists(os.path.join(tdir, top + ".py")):
            return f"gen_data.py needs module {top!r}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([st, root]))
    env.pop("PTO_CPU_SIM_ENABLE_BF16", None)
    try:
        r = subprocess.run([sys.executable, "gen_data.py"], cwd=out, env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"gen_data.py ran past {timeout:.0f} s"
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        return f"gen_data.py failed: {last[:160]}"
    return None


def load_input(b: Buffer, dtype, data: str, golden: str | None = None) -> np.ndarray:
    """The array of buffer ``b`` as the kernel gets it (``golden``: the file it is compared
    with, whose size it has at least)."""
    nbytes = b.size or 0
    if golden is not None:
        nbytes = max(nbytes, os.path.getsize(os.path.join(data, golden)))
    raw = b""
    if b.file:
        path = os.path.join(data, b.file)
        if not os.path.exists(path):
            raise Unmapped(f"gen_data.py wrote no {b.file}")
        raw = open(path, "rb").read()
        if b.filled is not None:
            raw = raw[:b.filled]
        nbytes = max(nbytes, len(raw))
    if nbytes == 0:
        raise Unmapped(f"the size of {b.name}")
    dt = np.dtype(dtype) if dtype is not None else np.dtype(np.uint8)
    nbytes = -(-nbytes // dt.itemsize) * dt.itemsize
    buf = bytearray(nbytes)
    buf[:len(raw)] = raw
    return np.frombuffer(bytes(buf), dtype=dt).copy()


def check(cmp: Compare, out: np.ndarray, data: str) -> str | None:
    """None when ``out`` passes the test's compare, else what is wrong."""
    dt = np_type(cmp.ctype)
    gold_raw = open(os.path.join(data, cmp.golden), "rb").read()
    if dt is None:          # (4-bit types ...: their bytes, exactly)
        dt, cmp = np.dtype(np.uint8), Compare(cmp.golden, cmp.actual, cmp.ctype, 0.0, None, True)
    n = len(gold_raw) // dt.itemsize
    got_raw = out.tobytes()
    if len(got_raw) < n * dt.itemsize:
        return f"{cmp.golden}: the output has {len(got_raw)} bytes, the golden {len(gold_raw)}"
    exp = np.frombuffer(gold_raw[:n * dt.itemsize], dt).astype(np.float64)
    act = np.frombuffer(got_raw[:n * dt.itemsize], dt).astype(np.float64)
    if cmp.exact:
        bad = int((exp != act).sum())
        return None if bad == 0 else f"{cmp.golden}: {bad} of {n} elements differ ({_first(exp, act)})"
    # ResultCmp (tests/common/test_common.h), in float32 as it computes
    e, a = exp.astype(np.float32), act.astype(np.float32)
    with np.errstate(all="ignore"):
        diff = np.abs(e - a)
        rel = np.abs(diff / e)
        err = ((diff > cmp.eps) & (rel > cmp.eps)) | (np.isnan(e) != np.isnan(a))
        zeros = int(((np.abs(a) <= 1e-6) & (np.abs(e) > 1e-6)).sum())
    size = max(cmp.count or 0, n)
    threshold = cmp.threshold if cmp.threshold else int(size * cmp.eps)
    bad = int(err.sum())
    if bad > threshold or zeros > cmp.zeros:
        return (f"{cmp.golden}: {bad} of {n} elements off by more than {cmp.eps:g} (allowed {threshold}"
                + (f", {zeros} zeroed of {cmp.zeros} allowed" if zeros > cmp.zeros else "")
                + f"; {_first(exp, act, err)})")
    return None


def _first(exp, act, bad=None) -> str:
    idx = np.flatnonzero(exp != act if bad is None else bad)
    if not len(idx):
        return "none"
    i = int(idx[0])
    return f"first at {i}: golden {exp[i]:g}, got {act[i]:g}"


def run_case(kernel: str, case: Case, platform: str, timeout: float) -> tuple:
    """(kind, message) of one mapped case's run."""
    from ptopipe.cpp import run_cpp
    from ptopipe.cpp.build import find_kernels
    try:
        k = find_kernels(kernel, **case.roles, platform=platform, api=True, params=set(case.args))
        f = k.roles[case.role]
        dtypes = dict(zip(f.params, f.elements or [None] * len(f.params)))
        args = {}
        for p, a in case.args.items():
            if isinstance(a, Buffer):
                golden = next((c.golden for c in case.compares if c.actual is a), None)
                args[p] = load_input(a, dtypes.get(p), case.data, golden)
            elif isinstance(a, FileScalar):
                path = os.path.join(case.data, a.file)
                if not os.path.exists(path):
                    raise Unmapped(f"gen_data.py wrote no {a.file}")
                v = np.fromfile(path, np_type(a.ctype), count=1)[0]
                args[p] = np.array([v]) if a.by_address else v.item() if np_type(a.ctype).kind in "iub" else float(v)
            else:                       # (a number, or None: nullptr)
                args[p] = a
        res = run_cpp(kernel, args, platform=platform, timeout=timeout, **case.roles)
        wrong = []
        for c in case.compares:
            param = next(p for p, a in case.args.items() if a is c.actual)
            why = check(c, np.asarray(res[param]), case.data)
            if why:
                wrong.append(why)
        return ("mismatch", "; ".join(wrong)) if wrong else ("match", "")
    except Unmapped as e:
        return "unmapped", str(e)
    except PtoPipeError as e:
        return "refused", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    except Exception:  # noqa: BLE001 - a crash is what this script looks for
        return "crash", traceback.format_exc()


#: how good an outcome is, when a case runs on both platforms (a crash is always reported)
RANK = {"crash": 4, "match": 3, "mismatch": 2, "refused": 1, "unmapped": 0}


def _job(args) -> Outcome:
    test, kernel, case, platform, timeout = args
    t = time.monotonic()
    best = None
    for plat in (("a2a3", "a5") if platform == "auto" else (platform,)):
        kind, msg = run_case(kernel, case, plat, timeout)
        if best is None or RANK[kind] > RANK[best[0]]:
            best = (kind, msg, plat)
        if kind in ("match", "crash", "unmapped"):
            break
    kind, msg, plat = best
    return Outcome(test, case.name, kind, msg, time.monotonic() - t,
                   f"{plat} " + " ".join(f"{r} {k}" for r, k in case.roles.items()))


def plan(tdir: str, work: str, gen_timeout: float) -> tuple:
    """([(kernel path, Case)] to run, [Outcome] settled without a run) of one test directory."""
    test = os.path.basename(tdir)
    main = os.path.join(tdir, "main.cpp")
    if not os.path.exists(main):
        return [], [Outcome(test, "-", "skipped", "no main.cpp")]
    main_text = open(main, encoding="utf-8", errors="replace").read()
    main_code = readable(main_text)
    headers = "\n".join(readable(open(os.path.join(tdir, h), encoding="utf-8", errors="replace").read())
                        for h in re.findall(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', main_text, re.M)
                        if os.path.isfile(os.path.join(tdir, h)))
    try:
        cases = gtest_cases(main_code)
    except Unmapped as e:
        return [], [Outcome(test, "-", "unmapped", f"main.cpp: {e}")]
    kernel = os.path.join(tdir, f"{test}_kernel.cpp")
    in_main = not os.path.exists(kernel)
    why = None
    if in_main:                 # (its kernels are in main.cpp, beside the cases)
        kernel = main
    if not os.path.exists(os.path.join(tdir, "gen_data.py")):
        why = "no gen_data.py"
    if why:
        return [], [Outcome(test, c, "skipped", why) for c, _ in cases]
    why = gen_data(tdir, work, gen_timeout)
    if why:
        return [], [Outcome(test, c, "skipped", why) for c, _ in cases]
    kernel_code = readable(open(kernel, encoding="utf-8", errors="replace").read())
    kernel_fns = _functions(kernel_code)
    if in_main:                 # (its kernels: the functions that issue instructions, not the host's)
        kernel_fns = {n: f for n, f in kernel_fns.items() if _DEVICE.search(f.body) and not _HOST.search(f.body)}
    todo, done = [], []
    for cname, body in cases:
        data = os.path.join(work, cname)
        if not os.path.isdir(data):
            done.append(Outcome(test, cname, "skipped", "gen_data.py wrote no data for it"))
            continue
        try:
            c = map_case(cname, body, main_code, kernel_code, kernel_fns, in_main, headers)
        except Unmapped as e:
            done.append(Outcome(test, cname, "unmapped", str(e)))
            continue
        except RecursionError:
            done.append(Outcome(test, cname, "unmapped", "nested too deep"))
            continue
        if os.path.exists(os.path.join(work, "en_dtypes.py")) and any(SHIMMED.search(k) for k in c.roles.values()):
            done.append(Outcome(test, cname, "skipped", "its float4 data needs en_dtypes (not installed; ml_dtypes "
                                "has no float4_e1m2 and packs float4_e2m1 otherwise)"))
            continue
        c.data = data
        todo.append((kernel, c))
    return todo, done


def _shape(msg: str) -> str:
    """A message with its names and numbers blanked, to count causes."""
    msg = msg.splitlines()[0] if msg else ""
    msg = re.sub(r"\([^()]*@[^()]*\)|<[^<>]*>", "", msg)
    return re.sub(r"\b\d+\b|0x[0-9a-f]+", "N", msg.split(" at ")[0])[:110]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ops", nargs="*", help="test directories to run (default: all)")
    ap.add_argument("--pto-isa", required=True, metavar="ROOT", help="pto-isa's source tree")
    ap.add_argument("--platform", default="auto", choices=("auto", "a2a3", "a5"),
                    help="auto: A2A3, then A5 for a case that does not match there (pto-isa's CPU simulator "
                         "is of neither; the better outcome counts)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="cases run at once")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds a case's run may take")
    ap.add_argument("--gen-timeout", type=float, default=300.0, help="seconds a gen_data.py may take")
    ap.add_argument("--target", type=float, default=50.0, help="%% of the cases not skipped that must match "
                    "(ptopipe matches 53 %%: 528 of 1000; most of the rest are refused - kernels only pto-isa's CPU "
                    "simulator takes, or forms ptopipe does not model)")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per case")
    a = ap.parse_args()
    base = os.path.join(a.pto_isa, TESTCASES)
    for h in ("type.hpp", "constants.hpp"):
        path = os.path.join(a.pto_isa, "include", "pto", "common", h)
        if os.path.exists(path):
            HEADER_CONSTS.update({k: v for k, v in file_scope(readable(open(path).read())).items() if "::" in k})
    if not os.path.isdir(base):
        print(f"error: {base} is not a directory: --pto-isa names pto-isa's source tree", file=sys.stderr)
        return 2
    dirs = sorted(d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d)))
    if a.ops:
        missing = sorted(set(a.ops) - set(dirs))
        if missing:
            print(f"error: no test directory {', '.join(missing)} under {base}", file=sys.stderr)
            return 2
        dirs = [d for d in dirs if d in a.ops]
    counts, why, outcomes = Counter(), Counter(), []
    started = time.monotonic()

    def settle(o: Outcome) -> None:
        outcomes.append(o)
        counts[o.kind] += 1
        if o.kind != "match":
            why[f"{o.kind}: " + (_shape(o.msg) if o.kind != "crash" else o.msg.strip().splitlines()[-1][:110])] += 1
        if a.verbose or o.kind == "crash":
            msg = o.msg if o.kind == "crash" else o.msg[:200]
            print(f"{o.kind:9} {o.test}/{o.case} ({o.secs:.1f} s) [{o.kernel}]  {msg}", flush=True)

    with tempfile.TemporaryDirectory(prefix="pto_isa_st_") as tmp, \
            cf.ProcessPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for n, d in enumerate(dirs, 1):
            work = os.path.join(tmp, d)
            os.makedirs(work)
            todo, done = plan(os.path.join(base, d), work, a.gen_timeout)
            for o in done:
                settle(o)
            jobs = [(d, k, c, a.platform, a.timeout) for k, c in todo]
            for o in pool.map(_job, jobs):
                settle(o)
            if not a.verbose:
                print(f"  {n}/{len(dirs)} {d}: {len(todo)} run, {len(done)} settled "
                      f"({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
            shutil.rmtree(work, ignore_errors=True)
    for k, n in why.most_common():
        print(f"{n:4}  {k}")
    order = ("match", "mismatch", "refused", "crash", "unmapped", "skipped")
    print(", ".join(f"{k} {counts[k]}" for k in order))
    counted = sum(counts[k] for k in order if k != "skipped")
    share = 100.0 * counts["match"] / counted if counted else 0.0
    ok = share >= a.target and not counts["crash"]
    print(f"match: {counts['match']} of {counted} cases not skipped ({share:.1f} %, target >= {a.target:.0f} %), "
          f"{counts['crash']} crash(es): {'PASS' if ok else 'MISSED TARGET'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
