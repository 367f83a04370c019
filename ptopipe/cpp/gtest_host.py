"""The host code of a C++ file that holds gtest cases beside its kernels, which a kernel's build
leaves out.

pto-isa's CPU-simulator tests (``tests/cpu/st/testcase/<op>/main.cpp``) often define their
kernels in the file that holds the gtest cases launching them: the cases (``TEST_F(Suite, case)
{...}``), their fixture (``class S : public testing::Test``), host helpers that allocate with the
ACL runtime, read the case's files and compare (``test_common.h``, found through the test build's
include path), and gtest itself.  A run of such a file builds the kernels it names; the host code
is never run, and much of it cannot compile against ptopipe's headers (the CPU simulator's
runtime, ``pto::cpu_sim``, gtest).  :func:`without_host_code` gives the file as the run builds
it, every line and - but for a using-directive of a namespace a left-out header declared - every
column where it was:

* ``#include <gtest/...>`` / ``<gmock/...>`` and each quoted include that is not beside the file
  (the test suite's shared host headers) are left out; a namespace-scope ``using namespace X;`` of
  a namespace the file does not declare is preceded by ``namespace X {}`` (``X`` may have been
  one of theirs);
* the classes deriving from ``testing::`` (the fixtures) are left out;
* of the functions the file defines at namespace scope (the gtest cases are such definitions to
  the reader: ``TEST_F(S, c) {...}``), those the run's kernels do not reach - by name, from the
  kernels and from every other line the build keeps, transitively - are left out: the cases, the
  helpers that launch the kernels, ``main``.

A file that does not include gtest is built as it is.
"""
from __future__ import annotations

import os
import re

from .brackets import closing

#: an include of gtest's or gmock's headers, and of a header in quotes
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(<(?:gtest|gmock)/[^>\n]*>|"([^"\n]+)")', re.M)
#: what precedes the ``{`` of a namespace or linkage block (string literals are blanked: ``extern " "``)
_BLOCK = re.compile(r'(?:\bnamespace(?:\s+[A-Za-z_][\w:]*)?|\bextern\s*"[^"\n]*"|\binline\s+namespace\s+\w+)\s*$')
#: a function definition's head: its (unqualified) name and parameter list, then qualifiers
_FUNCTION_HEAD = re.compile(r"(?<![\w:~])([A-Za-z_]\w*)\s*\(((?:[^()]|\([^()]*\))*)\)\s*"
                            r"(?:const\s*|noexcept\s*|override\s*|final\s*|->\s*[\w:<>,\s*&]+)*$")
#: a class whose bases name gtest's namespace: a fixture
_FIXTURE = re.compile(r"^\s*(?:class|struct)\s+\w+\s*(?:final\s*)?:[^{;]*\btesting\s*::")
_USING = re.compile(r"\busing\s+namespace\s+([A-Za-z_]\w*)\s*;")
_KEYWORDS = frozenset(("if", "for", "while", "switch", "return", "sizeof", "catch", "decltype", "static_assert",
                       "alignof", "alignas", "noexcept", "requires"))
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
#: gtest's macros that define a case (to the reader, a function of that name)
_CASES = frozenset(("TEST", "TEST_F", "TEST_P", "TYPED_TEST", "TYPED_TEST_P"))


def is_gtest_file(text: str, code: str) -> bool:
    """Does C++ ``text`` (``code``: its :func:`~ptopipe.cpp.build.visible_code`) include gtest in
    code the build compiles?"""
    return any(m.group(1).startswith("<") and code[m.start():m.end()].lstrip().startswith("#")
               for m in _INCLUDE.finditer(text))


def without_host_code(text: str, code: str, path: str, kernels, macros: str = "", include_dirs=()) -> tuple:
    """``(text as the build compiles it, or None when it is the file's own; [(line, what was left
    out)])`` of C++ ``text`` at ``path`` (``code``: its visible code, of its length) when the run
    builds the functions ``kernels`` (their base names: ``runTAdd``; none: no function is left
    out); ``macros``: the bodies of the file's ``#define``s the build compiles (the functions they
    name are kept); ``include_dirs``: where else than beside the file a quoted include is found
    and kept (ptopipe's headers: ``#include "pto/pto-inst.hpp"``)."""
    if not is_gtest_file(text, code):
        return None, []
    spans, notes = [], []
    dirs = [os.path.dirname(os.path.abspath(path)), *include_dirs]
    for m in _INCLUDE.finditer(text):
        if not code[m.start():m.end()].lstrip().startswith("#"):
            continue                                    # (in a comment or a branch not compiled)
        if m.group(2) is None or not any(os.path.isfile(os.path.join(d, m.group(2))) for d in dirs):
            spans.append((m.start(), m.end()))
            notes.append((_line(text, m.start()), f"#include {m.group(1)}"))
    includes_left = bool(spans)
    definitions, fixtures, usings = _namespace_scope(code)
    for lo, hi, name in fixtures:
        spans.append((lo, hi))
        notes.append((_line(text, lo), f"the fixture {name}"))
    if kernels:
        kept = list(code)
        for lo, hi, _ in definitions:
            kept[lo:hi] = " " * (hi - lo)
        for lo, hi, _ in fixtures:
            kept[lo:hi] = " " * (hi - lo)
        by_name = {}
        for lo, hi, name in definitions:
            by_name.setdefault(name, []).append((lo, hi))
        todo = list(kernels) + [n for n in _IDENT.findall("".join(kept) + " " + macros) if n in by_name]
        reached = set()
        while todo:
            n = todo.pop()
            if n in reached or n not in by_name:
                continue
            reached.add(n)
            for lo, hi in by_name[n]:
                todo += [w for w in _IDENT.findall(code[lo:hi]) if w in by_name and w not in reached]
        cases = [lo for lo, hi, name in definitions if name not in reached and name in _CASES]
        for lo, hi, name in definitions:
            if name not in reached:
                spans.append((lo, hi))
                if name not in _CASES:
                    notes.append((_line(text, lo), f"{name}()"))
        if cases:
            notes.append((_line(text, cases[0]), f"{len(cases)} gtest case(s)"))
    if not spans:
        return None, []
    out = list(text)
    for lo, hi in spans:
        out[lo:hi] = re.sub(r"[^\n]", " ", text[lo:hi])
    declared = set(re.findall(r"\bnamespace\s+([A-Za-z_]\w*)\s*\{", code))
    for at, name in sorted(usings, reverse=True) if includes_left else ():
        if name != "std" and name not in declared:
            out[at:at] = f"namespace {name} {{}} "
    return "".join(out), sorted(notes)


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def _namespace_scope(code: str) -> tuple:
    """Of C++ ``code`` (comments and literals blanked): ``([(start, end, name)] of its function
    definitions at namespace scope - unqualified names, each from its head (its ``template <...>``
    included) to its closing brace -, [(start, end, name)] of its gtest fixture classes (to the
    ``;`` after them), [(start, name)] of its namespace-scope using-directives)``."""
    defs, fixtures, usings = [], [], []
    start, i, n = 0, 0, len(code)
    while i < n:
        ch = code[i]
        if ch == "#" and not code[code.rfind("\n", 0, i) + 1:i].strip():        # a directive line
            while True:
                j = code.find("\n", i)
                if j < 0 or code[j - 1] != "\\":
                    break
                i = j + 1
            i = n if j < 0 else j
            start = i
            continue
        if ch == "{":
            head = code[start:i]
            if _BLOCK.search(head):
                start = i + 1
                i += 1
                continue
            end = _close(code, i)
            lo = start + len(head) - len(head.lstrip())
            fixture = _FIXTURE.match(head)
            if fixture:
                semi = code.find(";", end)
                hi = semi + 1 if semi >= 0 and not code[end:semi].strip() else end
                fixtures.append((lo, hi, head.split(":")[0].split()[-1]))
                i = start = hi
                continue
            name = _function_name(head)
            if name is not None:
                defs.append((lo, end, name))
            i = start = end
            continue
        if ch == "}":                       # the end of a namespace or linkage block
            start = i + 1
        elif ch == ";":
            m = _USING.search(code, start, i + 1)
            if m is not None and m.end() == i + 1 and not code[start:m.start()].strip():
                usings.append((m.start(), m.group(1)))
            start = i + 1
        i += 1
    return defs, fixtures, usings


def _function_name(head: str) -> str | None:
    """The name of the function a ``{`` after ``head`` (the text since the last statement at
    namespace scope) defines, or None: a class, an initializer, a qualified member definition."""
    h = head.strip()
    t = re.match(r"template\s*<", h)
    if t:
        h = h[closing(h, t.end() - 1, "<>") + 1:].strip()
        if h.startswith("template"):
            return _function_name(h)
    if re.match(r"(?:class|struct|union|enum)\b", h) or re.search(r"\b(?:class|struct|union|enum)\s+\w*\s*[:{]?$", h):
        return None
    m = _FUNCTION_HEAD.search(h)
    if m is None or m.group(1) in _KEYWORDS or "=" in h[:m.start()]:
        return None
    return m.group(1)


def _close(code: str, i: int) -> int:
    """The index just past the brace closing the one at ``code[i]`` (the end of ``code`` if none)."""
    return min(closing(code, i) + 1, len(code))
