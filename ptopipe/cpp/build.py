"""Building a C++ kernel file into shared libraries ptopipe can load.

* :func:`find_compiler`: ``$CXX`` (split as a shell splits it: its first word the compiler, the
  rest :func:`compiler_args`), else ``g++``, else ``clang++``; none is a ConfigError saying
  what to install.  :func:`standard`: kernels are C++20 where the compiler has it, else C++17.
* :func:`find_kernels`: the kernel functions of a file - ``aic=`` / ``aiv=`` by name, else the
  ``__global__`` entry that calls its Cube kernel under ``__DAV_CUBE__`` and its Vector kernel
  under ``__DAV_VEC__`` (what ``ptopipe compile --emit cpp`` writes: it is built twice, once
  per side), else the one function named like ``*aic*`` / ``*cube*`` and the one named like
  ``*aiv*`` / ``*vec*`` (what ptoas writes, each body under ``#if defined(__DAV_CUBE__)`` /
  ``__DAV_VEC__``) - unless the file has one ``__global__`` function, which ptoas writes to call
  them: that one, built per side; with each function's parameter names.
* the macros of a device compile (:func:`device_macros`, :func:`side_macros`): every build
  defines the platform's ``__CCE_AICORE__``, ``__NPU_ARCH__`` and pto-isa's arch macro; a file
  whose kernels test a side's macro (``__DAV_CUBE__``, ``__DAV_C220_VEC__`` ...) is built once
  per side, each side with its own - the Cube kernel with the Cube's, the Vector kernel with
  the Vector's, as the device compiler builds them - into one library per side.
* :func:`build`: a wrapper translation unit that includes the kernel file by its absolute
  path (so the compiler's diagnostics name the user's file:line) and exports the entry points
  of ``pto/ptopipe_entry.hpp``, compiled with the include directory of ptopipe's headers into a
  shared library cached by the hash of everything that goes into it (source, headers,
  compiler, flags) under :func:`cache_dir` - never inside the package.  A compile error is a
  CompileError carrying the compiler's diagnostics.  A build that succeeds keeps the
  compiler's deprecation warnings at the kernel's lines (a ptopipe-only name such as
  ``TileVec``, which pto-isa does not have) with the library, for every run of it:
  :func:`build_warnings`.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field, replace

from ..errors import CompileError, ConfigError, shown_path
from . import include_dir
from ..codegen.cpp_origin import PREFIX as ORIGIN_PREFIX
from .brackets import closing
from .gtest_host import without_host_code

#: the C++ standard a kernel is built with (:func:`standard`): C++20, as pto-isa's CPU tests are
#: built (a struct as a non-type template parameter: its tconcat), where the compiler has it;
#: else C++17, which ptopipe's headers need
STD20, STD = "-std=c++20", "-std=c++17"
# -g1: line tables only, for the lines that called a failing instruction's function (callers.py);
# in DWARF 4, which binutils' addr2line reads from every compiler (clang's DWARF 5 line-tables-only
# output at -O0 gave it no lines); no sibling calls: a kernel entry whose last statement calls its
# templated body keeps its frame, so that an error there names the entry's line too
FLAGS = ("-O1", "-gdwarf-4", "-g1", "-fno-optimize-sibling-calls", "-fPIC", "-shared", "-fvisibility=hidden",
         "-fvisibility-inlines-hidden", "-Wno-unused-variable", "-Wno-unused-but-set-variable")
#: what a compiler says of a C++20 feature in an older standard (g++: "only available with
#: '-std=c++20'", clang: "before C++20", "a C++20 extension")
_NEEDS_CXX20 = re.compile(r"c\+\+2a|c\+\+20|C\+\+20")
SIDES = {"aic": "__DAV_CUBE__", "aiv": "__DAV_VEC__"}
#: each side's word in the device compiler's per-architecture macro (``__DAV_C220_CUBE__``)
SIDE_WORDS = {"aic": "CUBE", "aiv": "VEC"}
SIDE_NAMES = {"aic": "AIC (Cube)", "aiv": "AIV (Vector)"}
# a test of a side's macro: the kernels reached from it are built once per side
_SIDE_TEST = re.compile(r"\b__DAV_\w+__\b")
# a test of one side's macro: ``__DAV_CUBE__`` / ``__DAV_C220_CUBE__`` ...
_SIDE_SECTION = {r: re.compile(r"\b__DAV_(?:\w+_)?" + w + r"__\b") for r, w in SIDE_WORDS.items()}
INSTALL_FIX = ("install a C++17 compiler (Debian/Ubuntu: apt-get install g++; Fedora: dnf install gcc-c++; "
               "macOS: xcode-select --install), or point CXX at one")


def cache_dir() -> str:
    """The directory C++ builds are cached in: ``$PTOPIPE_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/ptopipe/cpp``, else ``~/.cache/ptopipe/cpp``; when that one cannot be
    written (a read-only home in a container, the variable naming a file), the user's private
    directory under the system's temporary directory, said once in a note on stderr; when
    neither can be written, a ConfigError naming the directory."""
    d = os.environ.get("PTOPIPE_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "ptopipe", "cpp")
    why = _unwritable(d)                # (asked every time: a directory may go away)
    return d if why is None else _fallback(d, why)


@functools.lru_cache(maxsize=8)
def _fallback(d: str, why: str) -> str:
    """The directory builds go to instead of the unwritable ``d`` (``why``: what is wrong with
    it), said once per process in a note on stderr; a ConfigError when it cannot be written
    either (not memoised: asked again next time)."""
    tmp = os.path.join(tempfile.gettempdir(), f"ptopipe-cpp-{_user_id()}")
    why_tmp = _unwritable(tmp, private=True)
    if why_tmp is not None:
        raise ConfigError(f"cannot write the C++ build cache {d} ({why}), nor {tmp} ({why_tmp})",
                          where="ptopipe C++ kernels",
                          fix="point PTOPIPE_CACHE_DIR at a directory you can write (e.g. "
                              "PTOPIPE_CACHE_DIR=$PWD/.ptopipe-cache)")
    print(f"note: cannot write the C++ build cache {d} ({why}): building in {tmp} (set PTOPIPE_CACHE_DIR "
          "to a directory you can write to keep builds there)", file=sys.stderr)
    return tmp


def _unwritable(d: str, private: bool = False) -> str | None:
    """Why directory ``d`` (made if missing) cannot hold builds, or None when it can; with
    ``private``, made readable by its owner only and refused unless this user owns it (a
    directory under /tmp that anyone could have made first)."""
    try:
        if private:
            os.makedirs(d, mode=0o700, exist_ok=True)
            st = os.lstat(d)
            if not stat.S_ISDIR(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
                return "not a directory of this user"
        else:
            os.makedirs(d, exist_ok=True)
        fd, probe = tempfile.mkstemp(suffix=".probe", dir=d)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        return e.strerror or type(e).__name__
    return None


def _user_id() -> str:
    return str(os.getuid()) if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")


_versions: dict = {}


def env_words(name: str) -> list:
    """The words of environment variable ``name`` (``CXX``, ``CXXFLAGS``) split as a shell splits
    them (make and ccache users set ``CXX="ccache g++"``, ``CXX="clang++ -stdlib=libc++"``);
    a value no shell could split is a ConfigError naming it."""
    text = os.environ.get(name, "")
    try:
        return shlex.split(text)
    except ValueError as e:
        raise ConfigError(f"{name}={text}: cannot split it into words as a shell would ({e})",
                          where=f"${name}", fix="close its quote, or quote none of it") from None


def find_compiler() -> tuple:
    """(path, version text) of the C++ compiler to use: the first word of ``$CXX`` (the rest:
    :func:`compiler_args`), else ``g++``, else ``clang++``."""
    want = env_words("CXX")[:1]
    names = want or ["g++", "clang++"]
    for name in names:
        path = shutil.which(name) if name else None
        if path:
            if path not in _versions:
                try:
                    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
                    _versions[path] = out.stdout.strip()
                except (OSError, subprocess.SubprocessError):
                    _versions[path] = None
            if _versions[path] is not None:
                return path, _versions[path]
    cxx = os.environ.get("CXX", "")
    looked = (f"CXX={cxx}: {want[0]} is not on PATH" if want and want[0] != cxx.strip() else
              f"CXX={cxx} is not on PATH" if want else "looked for g++ and clang++ on PATH")
    raise ConfigError(f"no C++ compiler found ({looked})", where="ptopipe C++ kernels", fix=INSTALL_FIX)


def compiler_args() -> list:
    """The words of ``$CXX`` after the compiler (:func:`find_compiler`): its flags, or the compiler
    a wrapper such as ccache runs; they come first in every compile."""
    return env_words("CXX")[1:]


@functools.lru_cache(maxsize=8)
def standard(cxx: str, *args: str) -> str:
    """The ``-std=`` flag kernels are built with by compiler ``cxx`` run with ``args`` first
    (:func:`compiler_args`): :data:`STD20` if it takes it (asked once per compiler), else :data:`STD`."""
    try:
        r = subprocess.run([cxx, *args, STD20, "-fsyntax-only", "-x", "c++", "-"], input="", capture_output=True,
                           text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return STD
    return STD20 if r.returncode == 0 else STD


# -- finding the kernel functions -----------------------------------------------------------------
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
_FUNC = re.compile(r"((?:extern\s+\"C\"\s+|__global__\s+|AICORE\s+|__aicore__\s+|inline\s+|static\s+|PTO_INTERNAL\s+"
                   r"|PTO_INST\s+)*)"
                   r"void\s+(\w+)\s*\(([^()]*)\)\s*\{")


def _blank(m) -> str:
    """A comment or literal replaced by spaces (newlines kept: line numbers stay right)."""
    t = m.group(0)
    if t.startswith('"') or t.startswith("'"):
        return t[0] + " " * (len(t) - 2) + t[-1]
    return re.sub(r"[^\n]", " ", t)


_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elifdef|elifndef|elif|else|endif)\b(.*)$")
_DEFINE = re.compile(r"^[ \t]*#[ \t]*(?:define|undef)[ \t]+(\w+)", re.M)
_DEFINED = re.compile(r"^!?\s*defined\s*\(?\s*(\w+)\s*\)?$")


#: a ``#define NAME(...)`` and its body, continued over ``\\``-ended lines
_MACRO_BODY = re.compile(r"^([ \t]*#[ \t]*define[ \t]+\w+(?:\([^)\n]*\))?)((?:[^\n]*\\\n)*[^\n]*)", re.M)


def _blank_body(m) -> str:
    """A ``#define``'s body blanked (its name kept, newlines kept)."""
    return m.group(1) + re.sub(r"[^\n]", " ", m.group(2))


#: a function a macro's body defines: ``void NAME(`` or a pasted name, ``void run_##NAME(``
_MACRO_FUNCTION = re.compile(r"\bvoid\s+\w+(?:\s*##\s*\w+)*\s*\(")


def _macro_kernel_hint(code_text: str, fns: dict | None = None, named: tuple | None = None) -> str:
    """The fix sentence for a file whose kernels a macro defines (``#define K(NAME, T) ...
    void NAME(...) {...}``, or ``void run_##NAME(...)``): ptopipe reads functions as written,
    before the preprocessor.  A function template of the file (``fns``) that such a macro's
    kernel calls (pto-isa's mgather tests: ``runRow<OOB, T, ...>(out, table, indices)``) runs
    named as its instantiation: the sentence names those - and, for the kernel the user named
    (``named``: (role, name, api)) that an invocation of the macro makes, the instantiation to
    name (:func:`_macro_instance`)."""
    code = _COMMENT.sub(_blank, code_text)
    makers = [m for m in _MACRO_BODY.finditer(code) if _MACRO_FUNCTION.search(m.group(2))]
    for m in makers if named is not None else ():
        exact = _macro_instance(code, m, named[1], fns or {})
        if exact is not None:
            made, line, inst = exact
            return (f"; {made} at line {line} defines it with a macro, which ptopipe does not expand (it "
                    f"finds the kernels in the source as written): name the function template it calls, "
                    f"{naming(named[0], inst, named[2], quoted=True)}")
    if not makers:
        return ""
    m = makers[0]
    called = [n for n in dict.fromkeys(re.findall(r"\b([A-Za-z_]\w*)\s*<", m.group(2)))
              if fns and n in fns and fns[n].template]
    also = (f", or name the function template a kernel of it calls with the macro's arguments, as C++ "
            f"spells its instantiation ({', '.join(f'{n}<...>' for n in called)})" if called else "")
    return (f"; {m.group(1).strip()} defines functions, which ptopipe does not expand (it finds the "
            "kernels in the source as written): write each kernel's signature as a function - a macro "
            "may still give its body" + also)


def _macro_instance(code: str, m, name: str, fns: dict) -> tuple | None:
    """(the macro invocation, its line, the instantiation to name) when an invocation in
    ``code`` of the function-defining macro ``m`` (a :data:`_MACRO_BODY` match) makes the kernel
    ``name`` and that kernel calls one function template of ``fns``: the call's template
    arguments with the invocation's arguments put in (``DEFINE_ROW(row_f32, float, 8)`` making
    ``run_##NAME`` that calls ``runRow<T, R>(...)`` gives ``runRow<float, 8>``); else None."""
    head = re.match(r"[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)", m.group(1))
    f = _MACRO_FUNCTION.search(m.group(2))
    if head is None or f is None:
        return None
    params = [p.strip() for p in head.group(2).split(",")]
    pieces = [t.strip() for t in f.group(0)[4:-1].split("##")]
    pattern = "".join(f"(?P<p{params.index(t)}>\\w+)" if t in params else re.escape(t) for t in pieces)
    hit = re.fullmatch(pattern, base_name(name))
    calls = [(c.group(1), c.group(2)) for c in re.finditer(r"\b([A-Za-z_]\w*)\s*<([^;{}()]*?)>\s*\(", m.group(2))
             if c.group(1) in fns and fns[c.group(1)].template]
    if hit is None or len(calls) != 1:
        return None
    for inv in re.finditer(r"^[ \t]*" + head.group(1) + r"\s*\(([^()]*)\)", code, re.M):
        args = [a.strip() for a in _split(inv.group(1))]
        if len(args) == len(params) and all(args[int(k[1:])] == v for k, v in hit.groupdict().items()):
            given = dict(zip(params, args))
            targs = re.sub(r"\b[A-Za-z_]\w*\b", lambda w: given.get(w.group(0), w.group(0)), calls[0][1])
            return (" ".join(inv.group(0).split()), code.count("\n", 0, inv.start()) + 1,
                    f"{calls[0][0]}<{' '.join(targs.split())}>")
    return None


def _condition(kind: str, expr: str, flags: set, touched: set, known: dict | None = None) -> bool | None:
    """The truth of a conditional directive when it is certain from the file alone, else None:
    ``#if 0`` / ``1`` / ``false`` / ``true``, and whether a macro is defined when only
    $CXXFLAGS' ``-D`` (``flags``) can define it: not one the file defines or undefines
    (``touched``) nor one of the compiler's, pto-isa's or ptopipe's build's own (``__...``,
    ``_[A-Z]...``, ``PTO_...``: ``PTO_NPU_ARCH_A5`` is defined for every A5 build) - unless
    ``known`` says whether the build defines it (:func:`arch_known`: the build's platform)."""
    expr = expr.strip()
    if kind == "if":
        if expr in ("0", "false"):
            return False
        if expr in ("1", "true"):
            return True
        m = _DEFINED.match(expr)
        if m is None:
            return None
        name, negated = m.group(1), expr.startswith("!")
    else:
        name, negated = expr.split()[0] if expr else "", kind.endswith("ifndef")
    if known and name in known and name not in touched:
        return known[name] != negated
    if not name or name.startswith(("_", "PTO_")) or not re.match(r"\w+$", name) or name in touched:
        return None
    return (name in flags) != negated


def cxxflags_undefines() -> set:
    """The macros $CXXFLAGS undefines (``-UNAME``, ``-U NAME``): after ptopipe's ``-D``, they win."""
    words = env_words("CXXFLAGS")
    return {words[k + 1] for k, w in enumerate(words) if w == "-U" and k + 1 < len(words)} | \
        {w[2:] for w in words if w.startswith("-U") and len(w) > 2}


def cxxflags_defines() -> set:
    """The macros $CXXFLAGS defines (``-DNAME``, ``-DNAME=V``, ``-D NAME``)."""
    words = env_words("CXXFLAGS")
    got = set()
    for k, w in enumerate(words):
        if w == "-D" and k + 1 < len(words):
            got.add(words[k + 1].split("=")[0])
        elif w.startswith("-D") and len(w) > 2:
            got.add(w[2:].split("=")[0])
    return got


def visible_code(text: str, defined_elsewhere: frozenset = frozenset(), known: dict | None = None) -> str:
    """C++ ``text`` as the compiler sees its code: comments and literals blanked, and the lines
    of a conditional branch that is certainly not compiled (``#if 0``, ``#ifdef NAME`` of a
    macro nothing defines) blanked too - newlines kept, so line numbers stay right.  A
    condition it cannot judge keeps every branch (what the file says is taken as code).
    ``defined_elsewhere``: the macros the local headers it includes define or undefine;
    ``known``: macros the build does or does not define (:func:`arch_known`)."""
    code = _COMMENT.sub(_blank, text)
    if "#" not in code:
        return code
    code = _MACRO_BODY.sub(_blank_body, code)     # (a function in a #define is no function yet)
    flags = cxxflags_defines()
    touched = set(_DEFINE.findall(code)) | defined_elsewhere
    lines = code.split("\n")
    stack = []                      # per open conditional: [this branch's truth, the truths of the branches before]
    for i, line in enumerate(lines):
        m = _DIRECTIVE.match(line)
        if m is not None:
            kind, rest = m.groups()
            if kind in ("if", "ifdef", "ifndef"):
                stack.append([_condition(kind, rest, flags, touched, known), []])
            elif stack and kind in ("elif", "elifdef", "elifndef", "else"):
                f = stack[-1]
                f[1].append(f[0])
                if True in f[1]:
                    f[0] = False                # a branch before is certainly taken
                elif None in f[1]:
                    f[0] = None                 # one before may be
                else:
                    f[0] = True if kind == "else" else _condition(
                        "if" if kind == "elif" else kind[2:], rest, flags, touched, known)
            elif stack and kind == "endif":
                stack.pop()
            continue
        if any(f[0] is False for f in stack):
            lines[i] = " " * len(line)
    return "\n".join(lines)


@dataclass
class Function:
    name: str
    params: list          # parameter names, in order
    line: int
    is_global: bool
    body: str
    # per parameter: the element type (numpy dtype) of a pointer to one of pto-isa's element
    # types (``__gm__ float *x``), else None (a scalar, a byte / void pointer, a template type)
    elements: list = None
    # a function template's parameter list (``typename T, int Rows``), None for a function;
    # ``decls``: each parameter's declaration, as written (an instantiation's types come from it)
    template: str | None = None
    decls: list = None
    # the other functions of the same name (C++ overloads: a template of another parameter list)
    overloads: list = field(default_factory=list)
    # the local header it is defined in (``#include "k.hpp"``), None: the kernel file itself
    file: str | None = None
    # how the wrapper names it when C++ must pick it among overloads (:func:`_typed`), else None
    export: str | None = None

    def at(self, path: str) -> str:
        """``file:line`` of the definition, for messages: in the kernel file ``path``, or in the
        local header it was read from."""
        return f"{shown_path(self.file or path)}:{self.line}"


_NAMESPACE = re.compile(r"\bnamespace\s+([A-Za-z_][\w:]*)\s*\{")


def _namespaces(code: str) -> list:
    """(start, end, name) of each named ``namespace NAME { ... }`` block of ``code``."""
    out = []
    for m in _NAMESPACE.finditer(code):
        out.append((m.end(), closing(code, m.end() - 1), m.group(1)))
    return out


def functions(text: str, defined_elsewhere: frozenset = frozenset()) -> dict:
    """name -> :class:`Function` of every ``void`` function defined in C++ ``text`` (named as
    C++ calls it from outside its namespaces: ``NS::runTAdd``; overloads of one name are the
    first one's ``overloads``; ``defined_elsewhere``: :func:`visible_code`'s)."""
    return _functions(visible_code(text, defined_elsewhere))


def _functions(code: str) -> dict:
    """:func:`functions` of code :func:`visible_code` gave."""
    out = {}
    spaces = _namespaces(code)
    for m in _FUNC.finditer(code):
        start = m.end() - 1
        i = closing(code, start)
        names, elements, decls = [], [], []
        for part in _split(m.group(3)):
            part = part.split("=")[0].strip()
            if not part or part == "void":
                continue
            ids = re.findall(r"[A-Za-z_]\w*", part)
            names.append(ids[-1] if ids else part)
            elements.append(_pointee(part))
            decls.append(part)
        scope = "".join(f"{n}::" for lo, hi, n in spaces if lo <= m.start() < hi)
        f = Function(scope + m.group(2), names, code.count("\n", 0, m.start(2)) + 1,
                     "__global__" in m.group(1), code[start:i + 1], elements, _template_params(code, m.start()), decls)
        if m.group(2) in out:
            out[m.group(2)].overloads.append(f)
        else:
            out[m.group(2)] = f
    return out


def _template_params(code: str, start: int) -> str | None:
    """The parameter list of the ``template <...>`` that ends right before ``start`` in ``code``
    (a function template's head), else None."""
    end = len(code[:start].rstrip())
    if not end or code[end - 1] != ">":
        return None
    depth, i = 0, end - 1
    while i >= 0:
        if code[i] == ">":
            depth += 1
        elif code[i] == "<":
            depth -= 1
            if depth == 0:
                break
        i -= 1
    if i < 0 or not re.search(r"\btemplate\s*$", code[:i]):
        return None
    params = " ".join(code[i + 1:end - 1].split())
    return params or None           # (``template <>``: a specialisation, an ordinary function)


_QUALIFIERS = frozenset(("__gm__", "const", "volatile", "__restrict__", "__restrict", "restrict", "__in__",
                         "__out__"))


def _pointee(decl: str):
    """The numpy dtype a parameter declared ``decl`` points to, when it is one pointer to an
    element type of :data:`~ptopipe.codegen.cpp_types.CTYPES` other than ``uint8_t`` (bytes: any
    array may go there, as pto-isa's ``GM_ADDR``); else None."""
    from ..arch.dtypes import as_dtype
    from ..codegen.cpp_types import CTYPES
    if decl.count("*") != 1:
        return None
    words = [w for w in re.findall(r"[A-Za-z_]\w*", decl.split("*")[0]) if w not in _QUALIFIERS]
    names = {c: n for n, c in CTYPES.items() if n not in ("index", "bool", "u8")}
    return as_dtype(names[words[0]]) if len(words) == 1 and words[0] in names else None


def _split(params: str) -> list:
    """A parameter or template argument list split at its top-level commas: not those inside a
    template's ``<...>``, nor inside brackets - an aggregate template argument's
    ``TilesSize{64, 128}`` (C++20, pto-isa's tconcat test), a call's or a cast's parentheses
    (where a ``<`` or ``>`` is a comparison, not a template's)."""
    parts, depth, nested, cur = [], 0, 0, ""
    for ch in params:
        if ch in "({[":
            nested += 1
        elif ch in ")}]":
            nested -= 1
        elif ch == "<" and not nested:
            depth += 1
        elif ch == ">" and not nested:
            depth -= 1
        if ch == "," and depth == 0 and nested == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


@dataclass
class Kernels:
    """What runs where: ``entry`` (one function built per side: the Group entry) or ``aic`` /
    ``aiv`` (function names, either may be None); ``sided``: the file tests a side's macro
    where these kernels may reach it, so each side is built with its own; ``sections``: the
    sides an entry has code for (a test of their macro), which must do something;
    ``one_lane``: a lone Vector kernel that runs on AIV0 only, and ``lane_note`` the note
    saying which Vector cores a lone Vector kernel runs on (:func:`_lone_vector`);
    ``own_events``: hand-written C++ that orders its pipes with events, which runs in the
    manual synchronisation mode unless a run says otherwise (docs/events.md); ``buffer_tokens``:
    its kernels order pipes with A5's buffer tokens (get_buf / rls_buf), which ptopipe does not
    model, so it runs in the auto mode whatever events it sets (as a .pto file's pto.get_buf does);
    ``mixed``: ``aic`` is the file's lone kernel, which uses Cube and Vector tiles with no side
    sections (what ptoas writes for a .pto function using both): it runs on the AIC given a UB too,
    as the .pto function runs (:func:`build_warnings` says so)."""
    path: str
    entry: Function | None = None
    aic: Function | None = None
    aiv: Function | None = None
    sided: bool = False
    sections: frozenset = frozenset()
    one_lane: bool = False
    lane_note: str | None = None
    own_events: bool = False
    buffer_tokens: bool = False
    mixed: bool = False

    @property
    def roles(self) -> dict:
        """role -> the function that side runs: an entry on the sides it has a section for."""
        if self.entry is not None:
            return {r: self.entry for r in SIDES if r in self.sections}
        return {r: getattr(self, r) for r in SIDES if getattr(self, r) is not None}


def find_kernels(path: str, aic: str | None = None, aiv: str | None = None, platform=None,
                 api: bool = False, params=None) -> Kernels:
    """What runs where in C++ file ``path`` (``aic`` / ``aiv``: the functions a user named) when
    built for ``platform`` (its architecture macro decides ``#if defined(PTO_NPU_ARCH_A5)``
    branches: a kernel defined once per platform is that platform's definition; None: such a
    branch may be compiled).  ``api``: the user named them through the Python API
    (``aiv='NAME'``), which its errors then speak of, not the command's options (``--aiv NAME``);
    ``params``: the names of the arguments the run gives (of overloads a name leaves open, the
    one whose parameters they name runs)."""
    out, code, text, fns = _find_kernels(path, aic, aiv, None if platform is None else arch_known(platform), api,
                                         params)
    for role, f in out.roles.items():       # (a found kernel: a named template is refused there)
        if f.template:
            raise _template_error(role, f, f.at(path), code, api)
    _refuse_one_name_of_two_types(out)
    out.one_lane, out.lane_note = _lone_vector(out, code)
    # (C++ that `ptopipe compile --emit cpp` wrote runs as its program does: its events are
    # the program's, in either mode - every statement of it names its DSL line)
    out.buffer_tokens = _reaches(out, fns, lambda body: bool(_BUFFER_TOKENS.search(body)))
    out.own_events = _sets_events(out, fns) and ORIGIN_PREFIX not in text and not out.buffer_tokens
    return out


#: a parameter name ptoas's C++ gives (each function's parameters numbered v1, v2, ...)
_PTOAS_PARAM = re.compile(r"v\d+")


def _refuse_one_name_of_two_types(k: Kernels) -> None:
    """A ConfigError for a parameter name the Cube and the Vector kernel both have, declared
    with another type in each: a run passes one argument per name (``--input v2``, ``args=``), so
    the two cannot be different tensors.  ptoas numbers each function's parameters ``v1``,
    ``v2``, ...: a Cube and a Vector function of a .pto without an entry have the same names for
    different tensors - so names of one type shared by two kernels whose parameters are all
    numbered so are refused too (the numbers say nothing of which tensor each is), unless the two
    take the same parameter list (the halves pypto splits a mixed function into)."""
    if k.entry is not None or k.aic is None or k.aiv is None or not (k.aic.decls and k.aiv.decls):
        return
    def typ(decl: str, name: str) -> str:
        t = re.sub(rf"\b{re.escape(name)}\s*$", "", decl.split("=")[0].strip())
        return re.sub(r"\s+", "", re.sub(r"\b(const|volatile|__restrict__|__restrict|restrict)\b", "", t))
    theirs = {n: (typ(d, n), d) for n, d in zip(k.aiv.params, k.aiv.decls)}
    for n, d in zip(k.aic.params, k.aic.decls):
        if n in theirs and typ(d, n) != theirs[n][0]:
            raise ConfigError(
                f"parameter {n!r} is `{d.strip()}` in the Cube kernel {k.aic.name} but `{theirs[n][1].strip()}` "
                f"in the Vector kernel {k.aiv.name}: a run passes the one argument named {n} (--input {n}) "
                f"to both, which cannot be two tensors",
                where=k.aiv.at(k.path),
                fix="name the parameters that are different tensors differently; ptoas numbers each "
                    "function's parameters v1, v2, ...: give the .pto a pto.entry function that calls both "
                    "kernels (ptoas then writes one __global__ entry), or run the .pto itself")
    # names of one type: ptoas's numbers (every parameter v<N>) say nothing of which tensor each is -
    # the Cube's v2 may be its input `a` and the Vector's v2 its output - so binding them by name
    # would alias them silently.  Two halves of one function with the same parameter list (pypto
    # splits a mixed kernel so, and its caller passes both the same arguments: pto-isa's tpush_a3
    # test) bind alike.
    shared = [n for n in k.aic.params if n in theirs]
    same_list = k.aic.params == k.aiv.params and all(
        typ(d, n) == theirs[n][0] for n, d in zip(k.aic.params, k.aic.decls))
    if shared and not same_list and all(_PTOAS_PARAM.fullmatch(n) for n in k.aic.params + k.aiv.params):
        raise ConfigError(
            f"the Cube kernel {k.aic.name} and the Vector kernel {k.aiv.name} both number their parameters as "
            f"ptoas does (v1, v2, ... in each function), with no entry that calls them: a run passes one "
            f"argument per name to both ({', '.join(shared)}), whatever tensor each function's parameter of "
            "that number is", where=k.aiv.at(k.path),
            fix="give the .pto a pto.entry function that calls both kernels (ptoas then writes one __global__ "
                "entry, whose parameters the run binds), run the .pto itself, or rename the parameters of one "
                "tensor alike and of different tensors differently")


def _sets_events(k: Kernels, fns: dict) -> bool:
    """Does code a run of ``k`` executes order its own pipes - set_flag / wait_flag, or a
    pipe_barrier that other instructions follow or that a loop repeats (a lone trailing
    pipe_barrier(PIPE_ALL) ends auto-synchronised kernels too: ptoas writes one; so does a
    set_flag / wait_flag pair right before a TFREE - the order of the free signal after the
    slot's reads, which ptopipe's compiler gives pto-isa's A5 free in auto-synchronised
    kernels and ptoas keeps as it is): the bodies of the kernels it runs and of the file's
    functions they call, transitively by name (pto-isa's entries call ``__global__``
    templates) - not another kernel of the file?"""
    return _reaches(k, fns, lambda body: bool(_OWN_EVENTS.search(_FREE_ORDER.sub("", body)))
                    or _orders_with_barriers(body))


def _reaches(k: Kernels, fns: dict, test) -> bool:
    """Does ``test`` hold for the body of a kernel of ``k`` or of a function of the file they
    call, transitively by name?"""
    todo, seen = [f.name for f in k.roles.values()], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        body = fns[base_name(name)].body
        if test(body):
            return True
        todo += [n for n in _IDENT.findall(body) if n in fns and n not in seen]
    return False


def _orders_with_barriers(body: str) -> bool:
    """Does a pipe_barrier in ``body`` (comments blanked) order instructions: a tile or ring
    instruction after it, or a loop around
    it (it then runs between two iterations' instructions)?"""
    for m in _BARRIER.finditer(body):
        if _INSTRUCTION.search(body, m.end()):
            return True
        before = body[:m.start()]
        for loop in _LOOP.finditer(before):
            inside = before[loop.start():]
            if inside.count("{") > inside.count("}"):
                return True
    return False


_SUBBLOCK = re.compile(r"\bget_subblock(id|dim)\b")
_OWN_EVENTS = re.compile(r"\b(set_flag|wait_flag)\s*\(")
_BUFFER_TOKENS = re.compile(r"\b(get_buf|rls_buf)\s*\(")
_BARRIER = re.compile(r"\bpipe_barrier\s*\([^)]*\)\s*;")
_INSTRUCTION = re.compile(r"\bT[A-Z][A-Z0-9_]*\s*[<(]")
_LOOP = re.compile(r"\b(for|while|do)\b")
#: one event set and waited for right before a TFREE (comments between them allowed)
_FREE_ORDER = re.compile(r"\bset_flag\s*\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)\s*;\s*(?://[^\n]*\s*)*"
                         r"wait_flag\s*\(\s*\1\s*,\s*\2\s*,\s*\3\s*\)\s*;(?=\s*(?://[^\n]*\s*)*TFREE\b)")
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
#: the note of a run in the manual synchronisation mode by default (``Kernels.own_events``)
OWN_EVENTS_NOTE = ("the kernel sets its own events (set_flag / wait_flag, or pipe_barrier between its "
                   "instructions): run in the manual "
                   "synchronisation mode, where only they order its pipes, as on the device (--sync auto: the "
                   "simulator's scoreboard orders them)")
#: the note of a run of a kernel ordering its pipes with buffer tokens (``Kernels.buffer_tokens``)
BUFFER_TOKENS_NOTE = ("the kernel orders its pipes with A5 buffer tokens (get_buf / rls_buf), which ptopipe "
                      "does not model: run in the auto synchronisation mode, where the simulator's scoreboard "
                      "orders them (its races are not checked)")


def _lone_vector(k: Kernels, code: str) -> tuple:
    """(runs on AIV0 only, the note saying which Vector cores run it) of the kernels ``k``: a
    Vector kernel with no Cube kernel beside it runs as :func:`ptopipe.isa.launch.lone_vector_lanes`
    says, on both Vector cores when the file (``code``, comments blanked) asks for its sub-block;
    other kernels run as their launch says, with no note."""
    from ..isa.launch import lone_vector_lanes
    roles = k.roles
    if "aiv" not in roles or "aic" in roles:
        return False, None
    lanes, note = lone_vector_lanes(bool(_SUBBLOCK.search(code)), "get_subblockid()")
    return lanes == 1, note


def _find_kernels(path: str, aic: str | None, aiv: str | None, known: dict | None = None,
                  api: bool = False, params=None) -> tuple:
    """(:class:`Kernels`, the code of the file and its local includes with comments blanked, the
    file's text, its functions by name); ``known``: as :func:`visible_code`'s; ``api``,
    ``params``: as :func:`find_kernels`'."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:     # (the compiler judges its bytes)
            text = f.read()
    except OSError as e:
        raise ConfigError(f"cannot read the C++ kernel {path}: {e.strerror}", where=path,
                          fix="give the path of a .cpp kernel file") from None
    fns, codes, incs, inc_paths = {}, [], [], []
    for inc in re.findall(r'#\s*include\s*"([^"]+)"', text):     # kernels defined in local headers
        inc_path = os.path.join(os.path.dirname(os.path.abspath(path)), inc)
        try:
            with open(inc_path, encoding="utf-8", errors="replace") as f:
                incs.append(f.read())
            inc_paths.append(inc_path)
        except OSError:
            continue
    # (a macro one of them defines may be what an #ifdef of another file tests)
    defined = frozenset(n for t in incs + [text] for n in _DEFINE.findall(_COMMENT.sub(_blank, t)))
    for inc_path, inc_text in zip(inc_paths, incs):
        codes.append(visible_code(inc_text, defined, known))
        found = _functions(codes[-1])
        for g in (h for f in found.values() for h in (f, *f.overloads)):
            g.file = inc_path               # (its lines are the header's)
        fns.update(found)
    own = visible_code(text, defined, known)
    fns.update(_functions(own))
    code = "\n".join(codes + [own])
    sided = bool(_SIDE_TEST.search(code))
    where = shown_path(path)
    if aic or aiv:
        out = Kernels(path, sided=sided)
        for role, name in (("aic", aic), ("aiv", aiv)):
            if name is not None:
                setattr(out, role, _named(path, role, name, fns, code, text, api, known is not None, params))
        # a Cube kernel named alone that uses Vector tiles too (ptoas's C++ of one of a file's
        # .pto functions using both): it runs as the lone such kernel does
        out.mixed = aiv is None and not sided and _uses_both(_reached_code(out, fns))
        return out, code, text, fns
    entries = [f for f in fns.values() if f.is_global and any(g in f.body for g in SIDES.values())]
    if len(entries) == 1:
        direct = _direct(path, entries[0], fns)
        if direct is not None:      # sided only if the macros are tested outside the entry's sections
            direct.sided = bool(_SIDE_TEST.search(code.replace(entries[0].body, "", 1)))
            return direct, code, text, fns
        return Kernels(path, entry=entries[0], sided=True, sections=_sections(entries[0].body)), code, text, fns
    globals_ = [f for f in fns.values() if f.is_global]
    # (a file launching a __global__ with <<<...>>>: pto-isa's NPU tests, one template running
    # both sides - which instantiation is the user's choice, never a guess)
    launch = _launch_hint(text, fns, api)
    if sided and len(globals_) == 1 and _sections(code) and not launch:
        # the one __global__ of a file that tests the side macros elsewhere: ptoas's entry
        # calling its Cube and Vector kernels, whose bodies are under their sections
        return Kernels(path, entry=globals_[0], sided=True, sections=_sections(code)), code, text, fns
    pick = {}
    for role, words in (("aic", ("aic", "cube")), ("aiv", ("aiv", "vec"))):
        hits = [f for f in fns.values() if any(w in f.name.lower() for w in words)]
        if len(hits) > 1:       # helpers named for their side too (CubeTask): the side's __global__ kernel
            hits = [f for f in hits if f.is_global]
        if len(hits) == 1:
            pick[role] = hits[0]
    lone = _lone_kernel(fns, own) if not entries and len(pick) < 2 and not launch else None
    if lone is not None and lone[0] not in SIDES:       # (a kernel using both kinds of tiles)
        return Kernels(path, aic=lone[1], mixed=True), code, text, fns
    if lone is not None:
        return Kernels(path, **{lone[0]: lone[1]}), code, text, fns
    if entries or len(pick) < 2:
        what = (f"{len(entries)} __global__ entries with __DAV_CUBE__ / __DAV_VEC__ sections"
                if entries else "no __global__ entry with __DAV_CUBE__ / __DAV_VEC__ sections")
        # (the kernels are its __global__ functions; a file with none: every function - by their
        # keys in fns: a function of a namespace is keyed by its own name, its .name spells both)
        named = sorted(n for n, f in fns.items() if f.is_global) or sorted(fns)
        raise ConfigError(f"cannot tell the AIC and AIV kernels of {where} ({what})", where=where,
                          fix=f"name them: {naming('aic', 'NAME', api)} {naming('aiv', 'NAME', api)} "
                              f"({'__global__ ' if globals_ else ''}functions: "
                              f"{_listed(fns, named)})" + launch + _macro_kernel_hint(text, fns))
    return Kernels(path, aic=pick["aic"], aiv=pick["aiv"], sided=sided), code, text, fns


def _launch_hint(text: str, fns: dict, api: bool) -> str:
    """What a file that launches its kernels with ``<<<...>>>`` (pto-isa's NPU tests) can name:
    the kernels it launches, a __global__ that runs both sides named as both."""
    launched = [k for k in launched_kernels(text) if base_name(k) in fns and fns[base_name(k)].is_global]
    if not launched:
        return ""
    k = launched[0]
    more = f" and {len(launched) - 1} more" if len(launched) > 1 else ""
    return (f"; the file launches {k}{more}: a __global__ kernel whose body runs both sides (it tests "
            f"the side it is compiled for) is named as both, {naming('aic', k, api, quoted=True)} "
            f"{naming('aiv', k, api, quoted=True)}")


def _listed(fns: dict, names) -> str:
    """Function ``names`` of ``fns`` for a message: a template as ``name<...>``."""
    return ", ".join(fns[n].name + ("<...>" if fns[n].template else "") for n in names) or "none"


_INSTANCE = re.compile(r"^\s*((?:[A-Za-z_]\w*\s*::\s*)*[A-Za-z_]\w*)\s*<(.*)>\s*$", re.S)


def base_name(name: str) -> str:
    """The function of a kernel's name: ``runTAdd`` of the instantiation ``runTAdd<float, 64>``
    (and of ``NS::runTAdd<float, 64>``)."""
    m = _INSTANCE.match(name)
    return (m.group(1) if m else name).split("::")[-1].strip()


def _scope(name: str) -> str:
    """The namespaces a kernel's name spells (``NS::`` of ``NS::runTAdd<float>``), else ''."""
    m = _INSTANCE.match(name)
    head = "".join((m.group(1) if m else name).split())
    return head[:head.rfind("::") + 2] if "::" in head else ""


def naming(role: str, name: str, api: bool = False, quoted: bool = False) -> str:
    """How a user names ``role``'s kernel ``name``: the command's option (``--aiv NAME``;
    ``quoted``: in shell quotes, as a template's instantiation needs), or the Python API's keyword
    (``aiv='NAME'``)."""
    if api:
        return f"{role}={name!r}"
    return f"--{role} '{name}'" if quoted else f"--{role} {name}"


def _named(path: str, role: str, name: str, fns: dict, code: str, text: str, api: bool = False,
           platform_known: bool = False, params=None) -> Function:
    """The function a user named for ``role`` (``--aic`` / ``--aiv``, ``aic=`` / ``aiv=``: as
    ``api`` says): a function of the file, or an instantiation of a function template spelled
    as in C++ (``runTAdd<float, 64, 64>``), which is the function the library exports.
    ``platform_known``: the file was read for a platform (its #if on the architecture decided);
    ``params``: the run's argument names (:func:`find_kernels`).  One of overloads of different
    parameters is exported as C++ picks it, by its function type (``Function.export``)."""
    named = naming(role, name, api)
    where = shown_path(path)
    m = _INSTANCE.match(name)
    base = base_name(name)
    scope = _scope(name)
    f = fns.get(base)
    if f is not None and scope:             # NS::name: the one in that namespace
        f = next((g for g in [f, *f.overloads] if g.name == scope + base), None)
    if f is None:
        raise ConfigError(f"{named}: {where} defines no function {scope + base!r}", where=where,
                          fix=f"functions defined there: {_listed(fns, sorted(fns))}"
                              + _macro_kernel_hint(text, fns, (role, name, api)))
    overloaded = any(g.decls != f.decls for g in f.overloads)
    if f.overloads:                         # overloads: the one the name's template arguments fit
        f = _overload(f, None if m is None else [a for a in _split(m.group(2)) if a.strip()], scope, named,
                      where, api, platform_known, params)
    at = f.at(path)
    if m is None:
        if f.template:
            raise _template_error(role, f, at, code, api)
        return replace(f, export=_typed(f.name, f.decls)) if overloaded else f
    if not f.template:
        raise ConfigError(f"{named}: {base} ({at}) is a function, not a function template: it takes "
                          "no template arguments", where=at, fix=f"name it alone: {naming(role, f.name, api)}")
    params, args = _split(f.template), [a.strip() for a in _split(m.group(2)) if a.strip()]
    required = sum("=" not in p and "..." not in p for p in params)
    if not any("..." in p for p in params) and not required <= len(args) <= len(params):
        count = f"{required} to {len(params)}" if required < len(params) else f"{len(params)}"
        spelled = f"{base}<{', '.join(_template_names(f.template))}>"
        raise ConfigError(f"{named}: {base} ({at}) takes {count} template argument(s) "
                          f"(template <{f.template}>), not {len(args)}", where=at,
                          fix=f"spell one C++ template argument per parameter: {naming(role, spelled, api, True)} "
                              "with each one's type or value")
    # the element types of its pointer parameters, with the instantiation's types put in
    given = dict(zip(_template_names(f.template), args))
    decls = [re.sub(r"[A-Za-z_]\w*", lambda w: given.get(w.group(0), w.group(0)), d) for d in f.decls]
    spelled = f"{f.name}<{', '.join(args)}>"
    return Function(spelled, f.params, f.line, f.is_global, f.body, [_pointee(d) for d in decls], None, f.decls,
                    file=f.file, export=_typed(spelled, decls) if overloaded else None)


def _typed(name: str, decls: list) -> str:
    """How the wrapper names function ``name`` that has overloads: by its function type, its
    parameters declared ``decls`` (the instantiation's types put in), as C++ picks one."""
    return f"*static_cast<void (*)({', '.join(decls)})>(&{name})"


def _overload(f: Function, args: list | None, scope: str, named: str, where: str, api: bool = False,
              platform_known: bool = False, named_args=None) -> Function:
    """Of ``f`` and its overloads (in ``scope``, when the name spells one), the one C++ would
    instantiate with template arguments ``args`` (None: a plain function): the one whose
    template takes that many (none: ``f``, whose error then says why; several: a ConfigError,
    as the library could not name one).  ``named``: how the user named it (:func:`naming`);
    ``api``, ``platform_known``: as :func:`_named`'s; ``named_args``: its ``params`` (of several that
    fit, the one whose parameters the run's arguments name - all of them; of two such, the one
    taking more)."""
    fits = []
    for g in [f, *f.overloads]:
        if scope and not g.name.startswith(scope):
            continue
        if args is None:
            if g.template is None:
                fits.append(g)
            continue
        if g.template is not None:
            params = _split(g.template)
            required = sum("=" not in p and "..." not in p for p in params)
            if any("..." in p for p in params) or required <= len(args) <= len(params):
                fits.append(g)
    if len(fits) > 1 and all(g.decls == fits[0].decls and g.template == fits[0].template for g in fits):
        # one signature defined more than once: C++ compiles one of them (the others are in
        # branches of an #if the build leaves out, e.g. one definition per platform) - whichever
        # it is, it takes these parameters
        return fits[0]
    given = [g for g in fits if named_args is not None and set(g.params) <= set(named_args)]
    if len(fits) > 1 and given:
        most = max(len(g.params) for g in given)
        given = [g for g in given if len(g.params) == most]
        if len(given) == 1:
            return given[0]
    if len(fits) > 1 and args is None:
        lines = ", ".join(g.at(where) for g in fits)
        if platform_known:          # (an #if on a macro the compiler or $CXXFLAGS may define)
            raise ConfigError(f"{named}: {f.name} is defined {len(fits)} times with different parameters ({lines}), "
                              "in branches of an #if ptopipe cannot decide from the file", where=fits[0].at(where),
                              fix="give each definition a name of its own (an #if on defined(PTO_NPU_ARCH_A2A3) / "
                                  "defined(PTO_NPU_ARCH_A5) is decided by the platform the kernel runs on)")
        given = "pass platform='a2a3' or 'a5'" if api else "run it with --platform a2a3 or a5"
        raise ConfigError(f"{named}: {f.name} is defined {len(fits)} times with different parameters ({lines}), in "
                          "branches of an #if ptopipe does not judge without the platform", where=fits[0].at(where),
                          fix=f"{given} (a branch on defined(PTO_NPU_ARCH_A2A3) / (PTO_NPU_ARCH_A5) is then "
                              "decided), or give each definition a name of its own")
    if len(fits) > 1:
        raise ConfigError(f"{named}: {len(fits)} overloads of {f.name} take these template arguments "
                          f"({', '.join(g.at(where) for g in fits)}): ptopipe runs a kernel by its name "
                          "and the run's arguments name the parameters of "
                          f"{'none' if not given else 'more than one'} of them", where=fits[0].at(where),
                          fix="give the arguments of the one to run, by its parameter names ("
                              + "; ".join(f"line {g.line}: {', '.join(g.params)}" for g in fits)
                              + "), or give it a name of its own")
    return fits[0] if fits else f


def _template_names(params: str) -> list:
    """The names of a template's parameters (``typename T, int N = 4`` -> ``[T, N]``)."""
    out = []
    for p in _split(params):
        ids = re.findall(r"[A-Za-z_]\w*", p.split("=")[0])
        out.append(ids[-1] if ids else p.strip())
    return out


def _template_error(role: str, f: Function, at: str, code: str, api: bool = False) -> ConfigError:
    """A function template named (or found) as a kernel: a library exports a function, one
    instantiation of it; the fix spells one, taken from the file where it spells one (as the
    command's option, and the API's keyword too - only the API's when ``api``)."""
    names = set(_template_names(f.template))
    spelled = [" ".join(s.split()) for s in re.findall(r"\b" + re.escape(base_name(f.name)) + r"\s*(<[^;{}()]*?>)\s*\(",
                                                        without_launch_syntax(code) or code)]
    concrete = [s for s in spelled if not names & set(re.findall(r"[A-Za-z_]\w*", s))]
    example = f.name + (concrete[0] if concrete else f"<{', '.join(_template_names(f.template))}>")
    return ConfigError(f"{f.name} ({at}) is a function template (template <{f.template}>): ptopipe runs a "
                       "function, one instantiation of it, whose template arguments it cannot guess",
                       where=at, fix=f"spell its template arguments as in C++: {naming(role, example, api, True)}"
                                     + ("" if concrete else " with each parameter's type or value")
                                     + ("" if api else f" (the API: {naming(role, example, True)})")
                                     + ", or call it from an extern \"C\" __global__ kernel")


def _sections(code: str) -> frozenset:
    return frozenset(r for r, test in _SIDE_SECTION.items() if test.search(code))


def side_body_kept(path: str, name: str, role: str, platform) -> bool | None:
    """Does the build of ``role``'s side on ``platform`` keep code of a section for that side - an
    ``#if`` testing its macro (``__DAV_CUBE__``, ``__DAV_C220_CUBE__`` ...) with code in the branch
    taken - in function ``name`` of C++ file ``path`` or a function of the file it calls?  False:
    every such section is left out (by the build's macros and $CXXFLAGS' ``-U``: the body compiled
    away); None: none can be told (no such section, or a condition :func:`visible_code` cannot
    judge, which it keeps)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    known = arch_known(platform)
    for r in SIDES:
        known.update({m: r == role for m in side_macros(platform, r)})
    known.update({m: False for m in cxxflags_undefines()})
    code = visible_code(text, known=known)
    fns = _functions(code)
    found, kept = False, False
    todo, seen = [name], set()
    while todo:
        fn = fns.get(base_name(todo.pop()))
        if fn is None or fn.name in seen:
            continue
        seen.add(fn.name)
        stack = []                  # per open conditional: [a section of this side's branch, it holds code]
        for line in fn.body.split("\n"):
            m = _DIRECTIVE.match(line)
            if m is None:
                if line.strip() and line.strip() not in ("{", "}"):
                    for f in stack:
                        f[1] = f[1] or f[0]
                continue
            kind = m.group(1)
            if kind in ("if", "ifdef", "ifndef"):
                stack.append([bool(_SIDE_SECTION[role].search(m.group(2))) and "!" not in m.group(2)
                              and kind != "ifndef", False])
            elif stack and kind != "endif":         # (an #else / #elif branch is not the section's)
                found, kept = found or stack[-1][0], kept or stack[-1][1]
                stack[-1] = [False, False]
            elif stack:
                f = stack.pop()
                found, kept = found or f[0], kept or f[1]
        todo += [n for n in _IDENT.findall(fn.body) if n in fns and n not in seen]
    return kept if found else None


def expected_side(kernels: Kernels, role: str):
    """The :class:`~ptopipe.cpp.abi.KernelSide` check of ``role``'s kernel: a function named for
    that side, or an entry with a section for it (``#if defined(__DAV_CUBE__)``, or the
    architecture's ``__DAV_C220_CUBE__`` ...), must do something; None for a side that runs nothing."""
    from .abi import KernelSide
    f = kernels.roles.get(role)
    if f is None:
        return None
    common = device_macros
    return KernelSide(role, f.name, f.at(kernels.path),
                     (lambda p: common(p) + side_macros(p, role)) if kernels.sided else common, kernels.sided,
                     (lambda p: side_body_kept(kernels.path, f.name, role, p)) if kernels.sided else None)


#: what only a Cube kernel writes, and what only a Vector kernel does (``_lone_kernel``)
_CUBE_ONLY = re.compile(r"\b(TMATMUL\w*|TileLeft|TileRight|TileAcc|TileType::(Left|Right|Acc))\b")
_VECTOR_ONLY = re.compile(r"\b(get_subblockid|TileType::Vec)\b")
_VEC_TILE = re.compile(r"\bTileType::Vec\b")
_CUBE_TILE = re.compile(r"\b(TMATMUL\w*|TileLeft|TileRight|TileAcc|TileType::(Mat|Left|Right|Acc|Bias|Scaling))\b")


def _lone_kernel(fns: dict, code: str):
    """``(role, function)`` of a file whose one ``__global__`` function is its only kernel (a
    Cube-only or Vector-only test kernel), else None.  Its side, deterministically: :data:`MIXED`
    when the file's code uses Cube-only and Vector-only tiles and tests no side macro (ptoas's C++
    of a .pto function using both: it runs as that function does, :class:`Kernels`), else the
    file's code - Cube-only tiles or TMATMUL make it the AIC's; ``get_subblockid()`` or Vec
    tiles, with neither of those, the AIV's -, else the name's word (aic / cube, aiv / vec) when
    it has one (a name such as ``matmul_vector_mix`` says less than the code); neither: not
    decided (the caller asks for --aic / --aiv).  ``code``: the file's, as
    :func:`visible_code` shows it."""
    from ..codegen.pto_exec.program import MIXED
    kernels = [f for f in fns.values() if f.is_global]
    if len(kernels) != 1:
        return None
    fn = kernels[0]
    cube, vector = bool(_CUBE_ONLY.search(code)), bool(_VECTOR_ONLY.search(code))
    if not _SIDE_TEST.search(code) and _uses_both(_reached_code(Kernels("", aic=fn), fns)):
        return MIXED, fn
    if cube != vector:
        return ("aic" if cube else "aiv"), fn
    name = fn.name.lower()
    by_name = [role for role, words in (("aic", ("aic", "cube")), ("aiv", ("aiv", "vec")))
               if any(w in name for w in words)]
    if len(by_name) == 1:
        return by_name[0], fn
    return None


def _uses_both(code: str) -> bool:
    """Does C++ ``code`` (function bodies) declare tiles of the Cube's memories (or TMATMUL) and
    Vec tiles?"""
    return bool(_CUBE_TILE.search(code) and _VEC_TILE.search(code))


def _reached_code(k: Kernels, fns: dict) -> str:
    """The bodies of the kernels of ``k`` and of the functions of the file they call."""
    bodies = []
    _reaches(k, fns, lambda body: bodies.append(body))
    return "\n".join(bodies)


def _direct(path: str, entry: Function, fns: dict) -> Kernels | None:
    """An entry whose ``__DAV_CUBE__`` / ``__DAV_VEC__`` sections each only call a kernel of the
    file with the entry's own parameters (what ``ptopipe compile --emit cpp`` writes) as those two
    kernels, called directly (one build instead of one per side); None for any other entry."""
    out = Kernels(path)
    for role, macro in SIDES.items():
        m = re.search(r"#\s*if\s+defined\s*\(\s*" + macro + r"\s*\)\s*(\w+)\s*\(([^()]*)\)\s*;\s*#\s*endif",
                      entry.body)
        if m is None or m.group(1) not in fns:
            return None
        args = [a.strip() for a in m.group(2).split(",") if a.strip()]
        callee = fns[m.group(1)]
        if len(args) != len(callee.params) or any(a not in entry.params for a in args):
            return None
        # (the kernel takes the entry's arguments by their names there, its pointers' element types its own)
        setattr(out, role, Function(callee.name, args, callee.line, callee.is_global, callee.body, callee.elements,
                                    file=callee.file))
    return out


# -- building -------------------------------------------------------------------------------------------
def _headers_digest() -> str:
    h = hashlib.sha256()
    root = include_dir()                    # (pto/ and the acl/ stub)
    for d, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for name in sorted(files):
            with open(os.path.join(d, name), "rb") as f:
                h.update(os.path.relpath(os.path.join(d, name), root).encode() + b"\0" + f.read())
    return h.hexdigest()


def wrapper(path: str, roles: dict, source: str | None = None, exports: dict | None = None) -> str:
    """The translation unit around kernel file ``path`` (its text read from ``source`` when
    given: :func:`without_launch_syntax`): ``roles`` maps ``aic`` / ``aiv`` to function names,
    ``exports`` a role to the expression naming its function among overloads (``Function.export``)."""
    lines = [f'#include "{source or os.path.abspath(path)}"', "#include <pto/ptopipe_entry.hpp>"]
    lines += [f"PTOPIPE_EXPORT_KERNEL({role}, {(exports or {}).get(role) or name})" for role, name in roles.items()]
    return "\n".join(lines) + "\n"


#: the launch configuration of a kernel launch in the device compiler's syntax,
#: ``kernel<<<blocks, l2ctrl, stream>>>(args)`` (pto-isa's NPU tests launch their kernels so from a
#: host function), which is not C++
_LAUNCH = re.compile(r"<<<[^;{}]*?>>>(?=\s*\()")


def without_launch_syntax(text: str) -> str | None:
    """``text`` with every ``<<<...>>>`` launch configuration blanked (spaces; its newlines
    kept, so every line and column stays where it was), making ``kernel<<<...>>>(args)`` a
    plain call a C++ compiler takes; None when the text has none.  The launching host function
    is compiled, never run: a run calls the kernels it names itself, one block per launch
    (``--blocks`` says how many)."""
    if "<<<" not in text:
        return None
    out = _LAUNCH.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    return out if out != text else None


#: an include of one of pto-isa's per-architecture implementation headers
#: (``#include <pto/npu/a2a3/TSort32.hpp>``, which its pto-inst.hpp includes for the build's
#: architecture and some of its NPU tests include again)
_ARCH_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]pto/npu/[^>"\n]*[>"]', re.M)


def without_arch_includes(text: str) -> str | None:
    """``text`` with each include of a pto-isa implementation header (:data:`_ARCH_INCLUDE`)
    blanked (lines kept), None when it has none: ptopipe's <pto/pto-inst.hpp> declares every
    instruction those headers implement, and has no such headers."""
    out = _ARCH_INCLUDE.sub(lambda m: " " * len(m.group(0)), text)
    return out if out != text else None


#: an explicit instantiation definition of a function template, ``template void
#: LaunchTAdd<float, 64>(float *out, void *stream);`` (``template`` not followed by ``<``, no body):
#: pto-isa's CPU tests make one per case of their host launch functions
_EXPLICIT_INSTANCE = re.compile(r"^[ \t]*template(?![ \t\n]*<)[ \t\n]+(?:[^;{}()]*?)\b\w+[ \t\n]*<[^;{}]*?>"
                                r"[ \t\n]*\([^;{}]*\)[ \t\n]*;", re.M)


def without_explicit_instances(text: str) -> str | None:
    """``text`` with each explicit instantiation definition of a function template
    (:data:`_EXPLICIT_INSTANCE`) blanked (spaces, newlines kept), None when it has none.  A run
    instantiates the kernel it names; the file's other instantiations - a case of another element
    type, one ptopipe has no form for (pto-isa's tcvt test instantiates its ``int4b_t`` cases
    beside its float ones) - are not compiled, so they cannot stop the build of the one run."""
    code = _COMMENT.sub(_blank, text)
    spans = [m.span() for m in _EXPLICIT_INSTANCE.finditer(code)]
    if not spans:
        return None
    out, at = [], 0
    for lo, hi in spans:
        out += [text[at:lo], re.sub(r"[^\n]", " ", text[lo:hi])]
        at = hi
    return "".join(out + [text[at:]])


def device_source(text: str, path: str | None = None, kernels=()) -> str | None:
    """``text`` as ptopipe compiles it when it differs from the file: its launch syntax
    (:func:`without_launch_syntax`), implementation-header includes
    (:func:`without_arch_includes`) and explicit instantiations (:func:`without_explicit_instances`)
    blanked; in a file holding gtest cases, the host code a run of the functions ``kernels``
    (names) does not need left out too (:func:`host_code`: ``path`` is the file's, whose
    quoted includes beside it are kept); None when none is there."""
    out = text
    for rewrite in (without_launch_syntax, without_arch_includes, without_explicit_instances):
        out = rewrite(out) or out
    if path is not None:
        out = host_code(out, path, kernels)[0] or out
    return None if out is text else out


def host_code(text: str, path: str, kernels=()) -> tuple:
    """:func:`ptopipe.cpp.gtest_host.without_host_code` of C++ ``text`` at ``path`` built for the
    functions ``kernels`` (names, an instantiation's too: ``runTAdd<float, 64>``)."""
    code = visible_code(text)
    macros = " ".join(m.group(2) for m in _MACRO_BODY.finditer(_COMMENT.sub(_blank, text))
                      if code[m.start():m.end()].lstrip().startswith("#"))
    return without_host_code(text, code, path, [base_name(k) for k in kernels], macros, [include_dir()])


def launched_kernels(text: str) -> list:
    """The kernels ``text`` launches with ``<<<...>>>``, as spelled there (a template's
    instantiation with its arguments), in order, each once."""
    names = re.findall(r"([A-Za-z_][\w:]*\s*(?:<[^;{}()]*?>)?)\s*<<<", _COMMENT.sub(_blank, text))
    return list(dict.fromkeys(" ".join(n.split()) for n in names))


def compile_library(path: str, roles: dict, defines=(), exports: dict | None = None) -> str:
    """The shared library (built or from the cache) exporting ``roles`` of kernel file ``path``
    (``exports``: as :func:`wrapper`'s)."""
    cxx, version = find_compiler()
    with open(path, "rb") as f:
        src = f.read()
    unit = wrapper(path, roles, None, exports)
    plain = device_source(src.decode("utf-8", errors="surrogateescape"), path, roles.values())
    # $CXX's own words first, as make runs `$(CXX) ...`; $CXXFLAGS last, so that the user's flags
    # win (e.g. -O0 for quicker builds, -g to debug)
    first = compiler_args()
    # (a file rewritten without its launch syntax or implementation-header includes is compiled
    # from a copy: its quoted includes are still found beside the file)
    here = ["-iquote", os.path.dirname(os.path.abspath(path))] if plain is not None else []
    flags = [*first, standard(cxx, *first), *FLAGS] + [f"-D{d}" for d in defines] + ["-I", include_dir()] + \
        here + env_words("CXXFLAGS")
    key = hashlib.sha256(b"\0".join([src, unit.encode(), _headers_digest().encode(), cxx.encode(),
                                     (version or "").encode(), " ".join(flags).encode(),
                                     _local_includes(path, src)])).hexdigest()[:32]
    out_dir = cache_dir()
    lib = os.path.join(out_dir, f"k{key}.so")
    if os.path.exists(lib):
        return lib
    fd, tmp_src = tempfile.mkstemp(suffix=".cpp", dir=out_dir)
    tmp_lib = tmp_src[:-4] + ".so"
    tmp_warn = tmp_src[:-4] + ".warn"
    tmp_copy = tmp_src[:-4] + "_kernel.cpp"
    if plain is not None:       # the diagnostics name the file and its lines (#line)
        with open(tmp_copy, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(f'#line 1 "{os.path.abspath(path)}"\n' + plain)
        unit = wrapper(path, roles, tmp_copy, exports)
    with os.fdopen(fd, "w") as f:
        f.write(unit)
    try:
        r = subprocess.run([cxx, *flags, tmp_src, "-o", tmp_lib], capture_output=True, text=True)
        if r.returncode != 0:
            diag = r.stderr or r.stdout
            missing = [n for n in roles.values() if re.search(
                # g++: "'NAME' was not declared in this scope", clang: "use of undeclared identifier 'NAME'"
                "^" + re.escape(tmp_src) + r":\d+:\d+: error: (?=.*\b" + re.escape(base_name(n)) + r"\b)(?=.*(?:not declared|undeclared))",
                diag, re.M)]
            if missing:     # the wrapper names a kernel function these macros leave out
                raise _undefined_error(path, roles, missing[0], defines, src.decode(errors="replace"), diag)
            by_value = _BY_VALUE.search(diag) if _NOT_A_PARAMETER in diag else None
            if by_value:    # the entry cannot pass a kernel parameter of this type
                raise _parameter_error(path, roles, by_value.group(1), src.decode(errors="replace"), diag)
            err = _compile_error(path, diag, cxx, flags)
            left = host_code(src.decode("utf-8", errors="surrogateescape"), path, roles.values())[1]
            if left:                    # (a kernel may need what a left-out header declared)
                err.add_detail("the build leaves out the file's gtest host code: " + ", ".join(
                    f"{what} (line {line})" for line, what in left[:6]) + (
                    f" and {len(left) - 6} more" if len(left) > 6 else "") +
                    "; a kernel needing one of them: define what it needs in the file, or include it from beside it")
            raise err
        warned = _deprecations(r.stderr)
        if warned:                      # kept before the library appears: a cached build has them too
            with open(tmp_warn, "w") as f:
                f.write("\n".join(warned) + "\n")
            os.replace(tmp_warn, _warnings_file(lib))
        os.replace(tmp_lib, lib)        # atomic: a concurrent build of the same key is harmless
    finally:
        for p in (tmp_src, tmp_lib, tmp_warn, tmp_copy):
            if os.path.exists(p):
                os.unlink(p)
    return lib


_DEPRECATED = re.compile(r"^(.+?):(\d+):(\d+): warning: (.*?) \[-Wdeprecated-declarations\]$", re.M)
# g++: "'using TileVec = struct pto::Tile<...>' is deprecated: ...", clang: "'TileVec' is deprecated: ..."
_DEPRECATED_NAME = re.compile(r"^\W(?:using )?(\w+).*?\W is deprecated(: .*)?$", re.S)
# g++ names a function by its declaration: "'pto::RecordEvent pto::TPUSH(ptopipe::At<Pipe>, ...) [with
# ...]' is deprecated: ..." (clang: "'TPUSH<...>' is deprecated: ...", the form above)
_DEPRECATED_FUNCTION = re.compile(r"^\W[\w:]+ (?:\w+::)*(\w+)\(.*?\W is deprecated(: .*)?$", re.S)


def _deprecations(diag: str) -> list:
    """The compiler's deprecation warnings at lines outside ptopipe's headers (the kernel's),
    one per line, as ``"file:line:col: NAME is deprecated: message"``."""
    inc = os.path.join(os.path.realpath(include_dir()), "")
    out = {}
    for m in _DEPRECATED.finditer(diag):
        file, line, col, what = m.groups()
        if os.path.realpath(file).startswith(inc) or (file, line) in out:
            continue                    # (g++ reports a use in a type alias twice)
        n = _DEPRECATED_FUNCTION.match(what) or _DEPRECATED_NAME.match(what)
        if n is not None:
            what = f"{n.group(1)} is deprecated{n.group(2) or ''}"
        out[(file, line)] = f"{shown_path(file)}:{line}:{col}: {what}"
    return list(out.values())


def _warnings_file(lib: str) -> str:
    return lib[:-3] + ".warn"


def build_warnings(libs: dict, kernels: Kernels | None = None) -> list:
    """The compiler's deprecation warnings of the libraries of :func:`build` (role -> path), each
    once, as a run summary's warnings are: ``(what, "file:line:col")``; then, for ``kernels``
    whose lone kernel is :data:`MIXED` (``Kernels.mixed``), how it runs."""
    out = {}
    for lib in dict.fromkeys(libs.values()):
        try:
            with open(_warnings_file(lib)) as f:
                out.update(dict.fromkeys(f.read().splitlines()))
        except OSError:
            pass                        # built without a warning
    warned = [(m.group(2), m.group(1)) for m in map(_LOCATED.match, out) if m is not None]
    if kernels is not None and kernels.mixed:
        from ..codegen.pto_exec.program import MIXED_ON_ONE_CORE
        warned.append((f"the kernel {kernels.aic.name} uses Cube tiles and Vector tiles (TileType::Vec) with no "
                       f"__DAV_CUBE__ / __DAV_VEC__ sections; {MIXED_ON_ONE_CORE} (the AIC, given a UB). On the "
                       "device, split it into a Cube and a Vector kernel joined by a pipe",
                       kernels.aic.at(kernels.path)))
    return warned


_LOCATED = re.compile(r"(.*?:\d+:\d+): (.*)", re.S)


def _local_includes(path: str, src: bytes) -> bytes:
    """The bytes of the files ``path`` includes with quotes (they are part of the build)."""
    out = []
    for name in re.findall(rb'#\s*include\s*"([^"]+)"', src):
        p = os.path.join(os.path.dirname(os.path.abspath(path)), name.decode(errors="replace"))
        try:
            with open(p, "rb") as f:
                out.append(f.read())
        except OSError:
            out.append(name)
    return b"\0".join(out)


def _compile_error(path: str, diag: str, cxx: str, flags=()) -> CompileError:
    """The compiler's diagnostics as a CompileError at the user's line (built with ``flags``:
    an error a C++20 build would not have says so)."""
    full = os.path.abspath(path)
    text = diag.replace(full, shown_path(path)).strip()
    lines = text.splitlines()
    # the first line:col of the kernel file: an error there, or (an error inside ptopipe's
    # headers) where it was instantiated from - g++'s "required from here", clang's "in
    # instantiation ... requested here" (an "In file included from" names no column)
    m = re.search(re.escape(shown_path(path)) + r":(\d+):(\d+):", text)
    where = f"{shown_path(path)}:{m.group(1)}:{m.group(2)}" if m else None
    first = next((ln for ln in lines if "error:" in ln), lines[0] if lines else "")
    if len(lines) > 60:
        lines = lines[:60] + [f"... ({len(lines) - 60} more lines)"]
    fix = ("fix the C++ at the line the compiler names (ptopipe's pto-isa API: the headers in `ptopipe "
           "--include`, README's C++ section)")
    blamed = _blamed_variable(first)
    if blamed is not None:              # the compiler refuses a flag the user's environment gives it
        fix = (f"the compiler ({os.path.basename(cxx)}) refuses {blamed[1]}, which ${blamed[0]} gives it: "
               f"correct or remove it in ${blamed[0]} (now {blamed[0]}={os.environ.get(blamed[0], '')})")
        where = where or f"${blamed[0]}"
    no_form = _NO_FORM.search(text) if _NO_FORM_SAYS in first else None
    if no_form is not None:             # (the static_assert cannot name its type: the instantiation does)
        first = first.replace(_NO_FORM_SAYS, f"the element type {no_form.group(1)} has no ptopipe form", 1)
        fix = ("use one of those element types; the file is compiled whole, so a kernel the run does not name "
               "but the file instantiates (an explicit `template void Launch<...>(...)`) must build too: "
               "leave such instantiations out to run the others")
    std = next((f for f in reversed(list(flags)) if f.startswith("-std=")), None)
    if std is not None and std != STD20 and _NEEDS_CXX20.search(first):
        fix = (f"the kernel needs C++20 (pto-isa's CPU tests are C++20) and this build is {std}: point CXX at a "
               f"compiler with C++20 (g++ 10+, clang++ 10+), or set CXXFLAGS={STD20}")
    return CompileError(f"the C++ kernel does not compile ({os.path.basename(cxx)}): "
                        f"{first.split('error:', 1)[-1].strip()}", where=where,
                        details="\n".join(lines), fix=fix)


#: the static_assert of an element type ptopipe's headers have no form for
#: (ptopipe_generated.hpp's ``dtype_code``), and the type it is instantiated with: g++'s "In
#: instantiation of 'struct ptopipe::dtype_code<pto::int4b_t>'", clang's "in instantiation of
#: template class 'ptopipe::dtype_code<float8_e4m3_t>'"
_NO_FORM_SAYS = "this element type has no ptopipe form (the type is dtype_code's T in this error's instantiation)"
_NO_FORM = re.compile(r"ptopipe::dtype_code<(.+?)>['’]")


def _blamed_variable(diag: str) -> tuple | None:
    """``(variable, word)`` when compiler diagnostic line ``diag`` quotes a word that ``$CXXFLAGS``
    or ``$CXX`` (after the compiler) gives the build - g++'s "unrecognized command-line option
    ‘-fbogus’", clang's "unknown argument: '-fbogus'" - else None."""
    for name, words in (("CXXFLAGS", env_words("CXXFLAGS")), ("CXX", compiler_args())):
        for w in words:
            if re.search("[‘'\"`]" + re.escape(w) + "[’'\"]", diag):
                return name, w
    return None


def _undefined_error(path: str, roles: dict, name: str, defines, text: str, diag: str) -> CompileError:
    """The wrapper does not compile: kernel function ``name`` is left out by the file's ``#if``
    under the build's macros (a body guarded by another side's or platform's macro)."""
    fns = functions(text)
    side = " / ".join(SIDE_NAMES[r] for r, n in roles.items() if n == name)
    where = fns[base_name(name)].at(path) if base_name(name) in fns else shown_path(path)
    macros = " ".join("-D" + d for d in defines)
    return CompileError(f"the {side} kernel {name} is not defined when ptopipe compiles it ({macros}): "
                        "a preprocessor #if around it leaves it out", where=where,
                        details="\n".join(diag.strip().splitlines()[:20]),
                        fix="ptopipe defines what the device compiler defines for each side and platform "
                            "(docs/cpp.md, \"Device macros\"): run it on the platform its #if names "
                            "(--platform), or name only the kernels of the side it is for (--aic / --aiv)")


#: ptopipe_entry.hpp's from_word<P> refusing a kernel parameter type P: its static_assert's
#: message, and P as g++ (``[with P = X;``) or clang (``from_word<X>``) names it
_NOT_A_PARAMETER = "a kernel parameter is a pointer, an integer or a float"
_BY_VALUE = re.compile(r"from_word(?:\(int64_t\) \[with P = |<)([^;\]>]+?)(?:;|\]|>)")


def _parameter_error(path: str, roles: dict, ptype: str, text: str, diag: str) -> CompileError:
    """A kernel takes a parameter of type ``ptype`` that is no pointer, integer or float (a struct
    by value other than ``pto::MrgSortExecutedNumList``, which ptoas makes of a .pto
    ``vector<4xi16>`` parameter and the run passes an array's four counts to): the error at the
    kernel, naming the parameter."""
    fns = functions(text)
    word = re.findall(r"\w+", ptype)[-1] if re.findall(r"\w+", ptype) else ptype
    passes = ("ptopipe passes a kernel arrays (to its pointer parameters and to a pto::MrgSortExecutedNumList "
              "taken by value), integers and floats")
    for role, name in roles.items():
        f = fns.get(base_name(name))
        if f is None:
            continue
        for pname, decl in zip(f.params, f.decls or ()):
            if re.search(r"\b" + re.escape(word) + r"\b", decl) and "*" not in decl and "&" not in decl:
                return CompileError(f"the {SIDE_NAMES[role]} kernel {name} takes its parameter {pname} as a {ptype} "
                                    f"by value: {passes}", where=f.at(path),
                                    details="\n".join(diag.strip().splitlines()[:12]),
                                    fix=f"take {pname} by pointer (__gm__ {word} *) or as an integer / float")
    return CompileError(f"a kernel of {shown_path(path)} takes a {ptype} by value: {passes}", where=shown_path(path),
                        details="\n".join(diag.strip().splitlines()[:12]),
                        fix="take it by pointer or as an integer / float")


def device_macros(platform) -> tuple:
    """The macros every build of a kernel for ``platform`` defines, as the device compiler does
    for either side: pto-isa's :func:`arch_macro`, ``__CCE_AICORE__`` (220 for dav-c220) and
    ``__NPU_ARCH__`` (pto-isa's arch_macro.hpp reads it)."""
    from ..arch import get_platform
    plat = get_platform(platform)
    return (arch_macro(plat), f"__CCE_AICORE__={plat.dav_arch.lstrip('c')}", f"__NPU_ARCH__={plat.npu_arch}")


def side_macros(platform, role: str) -> tuple:
    """The macros of one side (``aic`` / ``aiv``) on ``platform``: ``__DAV_CUBE__`` /
    ``__DAV_VEC__`` and the architecture's own (``__DAV_C220_CUBE__``, ``__DAV_C310_VEC__``)."""
    from ..arch import get_platform
    return (SIDES[role], f"__DAV_{get_platform(platform).dav_arch.upper()}_{SIDE_WORDS[role]}__")


def arch_known(platform) -> dict:
    """Whether a build for ``platform`` defines each platform's :func:`arch_macro`: its own,
    and none of the others'."""
    from ..arch import PLATFORMS
    mine = arch_macro(platform)
    return {arch_macro(p): arch_macro(p) == mine for p in PLATFORMS}


def arch_macro(platform) -> str:
    """pto-isa's architecture macro for a platform (``PTO_NPU_ARCH_A2A3`` / ``PTO_NPU_ARCH_A5``):
    a kernel may test it, e.g. for the A5-only ``*_GM`` directions."""
    from ..arch import get_platform
    return f"PTO_NPU_ARCH_{get_platform(platform).name.upper()}"


def build(kernels: Kernels, platform="a2a3") -> dict:
    """role -> shared library path for a :class:`Kernels` on ``platform`` (compiled with its
    :func:`device_macros`): one library per side, each built with its :func:`side_macros`,
    when the file tests them (``kernels.sided``: the entry, ptoas's in-function sections), else
    one library with both roles."""
    common = device_macros(platform)
    roles = {r: f.name for r, f in kernels.roles.items()}
    exports = {r: f.export for r, f in kernels.roles.items() if f.export}
    if kernels.sided:
        return {role: compile_library(kernels.path, {role: name}, common + side_macros(platform, role),
                                      {role: exports[role]} if role in exports else None)
                for role, name in roles.items()}
    lib = compile_library(kernels.path, roles, common, exports or None)
    return {r: lib for r in roles}
