"""A read PTO-AS program: its functions (parameters, ``pto.kernel_kind``, ``pto.entry``, calls),
the kind a function without one has (:func:`implied_kind`), which functions run
(:func:`top_functions`, :func:`choose_top`), statement-level helpers every op handler uses
(attributes, result types), and how a malformed operand becomes a ParseError at its op."""
from __future__ import annotations

import functools
import os
import re
from itertools import chain
from dataclasses import dataclass, field

from ... import isa
from ...arch.catalogue import OPS as CATALOGUE
from ...arch.vocab import TileType
from ...errors import ConfigError, ParseError
from ..pto_syntax import isa_name_of, pto_op_name
from ..pto_tree import Stmt, split_top
from .types import CUBE_LOCS, LOC, TypeReader, tokens_text


@dataclass
class Func:
    """A ``func.func``: name, parameters (name, type), kind ('cube' / 'vector' / None),
    entry flag, body statements."""
    name: str
    params: list
    kind: str | None
    entry: bool
    body: list
    stmt: Stmt
    calls: list = field(default_factory=list)          # callee names, in order
    _statements: tuple | None = field(default=None, repr=False, compare=False)

    def statements(self) -> tuple:
        """Every statement of the body and of its regions, in text order (:func:`walk`), made
        once: the reader and the layout pass over them a dozen times, and a read function's
        statements do not change."""
        if self._statements is None:
            self._statements = tuple(walk(self.body))
        return self._statements


@dataclass
class Program:
    """A read ``.pto`` file."""
    path: str
    funcs: dict
    arch: str | None
    types: TypeReader


def read_func(s: Stmt, types: TypeReader) -> Func:
    toks = s.toks
    i = 0
    while i < len(toks) and toks[i].kind != "symbol":
        i += 1
    if i == len(toks):
        raise types.err("func.func without a @name", s.tok)
    name = toks[i].text[1:]
    params = []
    if i + 1 < len(toks) and toks[i + 1].text == "(":
        depth, j = 0, i + 1
        for j in range(i + 1, len(toks)):
            if toks[j].text in ("(", "[", "<", "{"):
                depth += 1
            elif toks[j].text in (")", "]", ">", "}"):
                depth -= 1
                if depth == 0:
                    break
        for g in split_top(toks[i + 2:j]):
            if not g:
                continue
            if g[0].kind != "value" or len(g) < 3 or g[1].text != ":":
                raise types.err(f"function parameter {tokens_text(g)!r} is not '%name: type'", g[0])
            ty = g[2:]
            if ty and ty[-1].text == "}":                 # parameter attributes {..}
                k = max(idx for idx, t in enumerate(ty) if t.text == "{")
                ty = ty[:k]
            params.append((g[0].text, types.parse(ty), g[0]))
    text = " ".join(t.text for t in toks)
    m = re.search(r"kernel_kind\s*=\s*#pto\.kernel_kind\s*<\s*(\w+)\s*>", text)
    kind = m.group(1) if m else None
    if kind not in (None, "cube", "vector"):
        raise types.err(f"kernel kind {kind!r} is not supported", s.tok, fix="use cube or vector")
    entry = bool(re.search(r"\bpto\.entry\b", text))
    body = s.regions[0][0].stmts if s.regions else []
    return Func(name, params, kind, entry, body, s)


def walk(stmts):
    """Every statement of ``stmts`` and of their regions, in text order (pre-order).  One
    generator with a stack of the enclosing statements' iterators: a statement at depth d is
    not handed up through d generators."""
    stack, it = [], iter(stmts)
    while True:
        for s in it:
            yield s
            if s.regions:                      # (its regions next, then on after it)
                stack.append(it)
                it = chain.from_iterable(b.stmts for r in s.regions for b in r)
                break
        else:
            if not stack:
                return
            it = stack.pop()


def int_constants(f: Func) -> dict:
    """The integer ``arith.constant`` values of a function, by result name."""
    out = {}
    for s in f.statements():
        if s.name == "arith.constant" and s.results:
            try:
                out[s.results[0]] = int(s.text().split(":")[0])
            except ValueError:
                pass
    return out


@functools.lru_cache(maxsize=1024)
def catalogue_name(name: str) -> str | None:
    """``pto.tadd`` -> ``TADD``; ``pto.tmatmul.acc`` -> ``TMATMUL_ACC``; ``pto.mgather`` ->
    ``MGATHER``; ``pto.setfmatrix`` -> ``SETFMATRIX`` if the catalogue (and so :mod:`ptopipe.isa`)
    has it (kept per name: the catalogue and the ISA are fixed, and a file names a few ops over
    and over)."""
    if not name.startswith(("pto.t", "pto.m", "pto.set")):
        return None
    isa_name = isa_name_of(name)
    return isa_name if isa_name in CATALOGUE and hasattr(isa, isa_name) else None


@functools.lru_cache(maxsize=None)
def known_ops() -> tuple:
    """Every op name a .pto file may use: the executor's own ops and each catalogue
    instruction's PTO-AS name (what an unknown op's nearest spelling is drawn from)."""
    from .executor import HANDLERS
    tiles = (pto_op_name(n) for n in CATALOGUE)
    return tuple(sorted(set(HANDLERS) | {t for t in tiles if catalogue_name(t) is not None}))


def _tile_locs(f: Func, funcs: dict, types: "TypeReader", seen=None) -> dict:
    """TileType -> the first statement making a tile of it (in f and its callees)."""
    seen = set() if seen is None else seen
    if f.name in seen:
        return {}
    seen.add(f.name)
    out = {}
    for s in f.statements():
        if s.name in ("pto.alloc_tile", "pto.declare_tile", "memref.alloc", "pto.tpop_from_aic",
                      "pto.tpop_from_aiv"):
            spec = types.spec_of(s)
            if spec is not None:
                out.setdefault(spec.loc, s)
        elif s.name == "func.call":
            callee = funcs[s.symbol()]
            if callee.kind is None:
                for k, v in _tile_locs(callee, funcs, types, seen).items():
                    out.setdefault(k, v)
    return out


MIXED = "mixed"      # the kind of a function that uses Cube and Vector tiles
#: how such a function runs (a .pto function, and a C++ kernel ptoas writes from one)
MIXED_ON_ONE_CORE = ("no core of the device holds both, so it runs on one core given both kinds of memory, as "
                     "pto-isa's CPU simulator runs it")


def implied_kind(f: Func, funcs: dict, path: str, types: "TypeReader") -> tuple:
    """``(kind, warning)`` of a function without ``pto.kernel_kind``: 'cube' or 'vector' by
    its tiles; :data:`MIXED` with a warning when it uses both (no core of the device holds
    both: it runs on one core given both kinds of memory, as pto-isa's CPU simulator runs it)."""
    locs = _tile_locs(f, funcs, types)
    cube = [s for k, s in locs.items() if k in CUBE_LOCS]
    vec = locs.get(TileType.Vec)
    if cube and vec:
        c = cube[0]
        return MIXED, (
            f"{path}:{f.stmt.tok.line}:{f.stmt.tok.col}: @{f.name} uses Cube tiles ({c.name} at line "
            f"{c.tok.line}) and Vector tiles ({vec.name} at line {vec.tok.line}); {MIXED_ON_ONE_CORE}. "
            "On the device, split it into a cube and a vector function joined by a pipe "
            "(or write it as a mixed @pl.incore function and let `ptopipe compile` split it)")
    return ("cube" if cube else "vector"), None


def str_attr(s: Stmt, key: str, prog: Program) -> str:
    v = s.attr(key)
    if not v or v[0].kind != "string":
        raise ParseError(f"{s.name} needs {key} = \"...\"", where=s.where(prog.path))
    return v[0].text[1:-1]


def int_attr(s: Stmt, key: str, prog: Program, default=None) -> int:
    v = s.attr(key)
    if not v:
        if default is not None:
            return default
        raise ParseError(f"{s.name} needs the attribute {key}", where=s.where(prog.path))
    try:
        return int(v[0].text)
    except ValueError:
        raise ParseError(f"{s.name}: {key} = {v[0].text} is not an integer",
                         where=f"{prog.path}:{v[0].line}:{v[0].col}") from None


def space_attr(s: Stmt, key: str):
    v = s.attr(key)
    if not v:
        return None
    m = re.search(r"<(\w+)>", "".join(t.text for t in v))
    return LOC.get(m.group(1)) if m else None


def res_type(ex, s: Stmt):
    """The op's result type: after its top-level ``:`` (``: T`` / ``: (A) -> T``) or, with
    no ``:``, after its last top-level ``->``."""
    tys = s.types() or s.arrow_type()
    if not tys:
        raise ex.perr(s.tok, f"{s.name} needs its result type (': T' or '-> T')")
    return ex.prog.types.parse(tys[-1])


def kind_runs_here(kind: str, core_name: str) -> bool:
    return (kind in ("cube", MIXED)) == (core_name == "aic")


#: what reading an op's tokens raises when they are not spelled as the handler expects
SYNTAX_SLIPS = (IndexError, KeyError, ValueError, TypeError, AttributeError, StopIteration)


def malformed(e: Exception, path: str) -> ParseError:
    """A ParseError for an op whose operands did not read (``e`` raised while a handler or an
    analysis looked at a statement ``s``): located at the innermost such statement."""
    tb, stmt = e.__traceback__, None
    while tb is not None:
        cand = tb.tb_frame.f_locals.get("s")
        if isinstance(cand, Stmt):
            stmt = cand
        tb = tb.tb_next
    where = stmt.where(path) if stmt is not None else path
    what = stmt.name if stmt is not None else "the file"
    return ParseError(f"{what}: its operands, attributes or types do not read as ptoas writes them "
                      f"({_slip(e)})", where=where,
                      fix="check the op's spelling against ptoas's: operands, ins(...) / outs(...), "
                          "attribute names and values, the type after ':'")


def _slip(e: Exception) -> str:
    """What a handler's Python error says about the op's text, in the words of the op."""
    text = str(e)
    m = re.search(r"missing (\d+) required positional argument", text)
    if isinstance(e, TypeError) and m:
        return f"{m.group(1)} operand(s) missing"
    m = re.search(r"invalid literal for int\(\) with base \d+: '([^']*)'", text)
    if isinstance(e, ValueError) and m:
        return f"{m.group(1)!r} where a number or a %value goes"
    if isinstance(e, (IndexError, StopIteration)):
        return "an operand, bound or keyword it needs is missing"
    return f"{type(e).__name__}: {text}"


def has_pipes(prog: Program, names) -> bool:
    """Does any of the functions ``names`` initialise a cross-core pipe?"""
    for n in names:
        for s in prog.funcs[n].statements():
            if "initialize" in s.name and "pipe" in s.name:
                return True
    return False


def reachable(prog: Program, top: str) -> list:
    out, todo = [], [top]
    while todo:
        n = todo.pop()
        if n in out:
            continue
        out.append(n)
        todo.extend(prog.funcs[n].calls)
    return out


def top_functions(prog: Program) -> list:
    """What runs when no function is named: ``[the entry]``, else the functions nothing
    calls - a cube + vector pair without an entry as one ``"cube+vector"`` item."""
    entries = [f.name for f in prog.funcs.values() if f.entry]
    if len(entries) == 1:
        return entries
    called = {c for f in prog.funcs.values() for c in f.calls}
    roots = [f.name for f in prog.funcs.values() if f.name not in called]
    if len(roots) == 2 and {prog.funcs[r].kind for r in roots} == {"cube", "vector"}:
        return ["+".join(roots)]
    return roots


def choose_top(prog: Program, func: str | None) -> str:
    """The function ``func`` names, else the one :func:`top_functions` gives (a ConfigError
    listing them when there are several)."""
    if func is not None:
        f = func.lstrip("@")
        if all(p in prog.funcs for p in f.split("+")):       # a cube+vector pair (top_functions)
            return f
        if f not in prog.funcs:
            tops = [t for t in top_functions(prog) if t not in prog.funcs]     # a cube+vector pair
            raise ConfigError(f"--func {func}: {prog.path} defines no function {f!r}; it defines "
                              f"{', '.join('@' + n for n in prog.funcs)}", where="option --func",
                              fix="pick one with --func NAME (ptopipe.run_pto(..., func=NAME))"
                                  + (f", or the pair: --func {tops[0]}" if tops else ""))
        return f
    roots = top_functions(prog)
    if len(roots) == 1:
        return roots[0]
    raise ConfigError(f"{prog.path} has {len(roots)} top-level functions ({', '.join(roots)}) and no pto.entry",
                      where=prog.path, fix="choose one with --func NAME (ptopipe.run_pto(..., func=NAME))")


def read_text(path: str) -> str:
    """The UTF-8 text of a ``.pto`` file (a ConfigError / ParseError naming it otherwise)."""
    if os.path.isdir(path):
        raise ConfigError(f"{path} is a directory, not a .pto file", fix="give the path of a .pto file")
    if not os.path.isfile(path):
        raise ConfigError(f"no such file: {path}", fix="give the path of a .pto file")
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise ParseError(f"byte {raw[e.start]:#04x} is not UTF-8 text", where=f"{path}:{line}:{col}",
                         fix="a .pto file is UTF-8 MLIR text") from None


#: the ops that read the core's sub-block: a Vector scope that holds one controls its lanes
#: itself (ptoas's "explicit sub-block control", PTOAS PTOToEmitC ``hasExplicitSubblockControl``)
SUBBLOCK_OPS = ("pto.get_subblockid", "pto.get_subblock_idx", "pto.get_subblock_num")


def _whole_tile_op(s) -> bool:
    """Does ``s`` move whole tiles: a push / pop / TALLOC of ``split = 0`` or none, a free of
    ``split = 0`` (a free without one frees with its TPOP's split)?  The push of a TALLOCed
    slot (a ``!pto.tensor_view``: the address flow) commits the slot the ``pto.talloc_*``
    split, and is left out."""
    if not s.name.startswith(("pto.tpush", "pto.tpop", "pto.tfree", "pto.talloc")):
        return False
    if s.name.startswith("pto.tpush") and "!pto.tensor_view" in s.text():
        return False
    sp = s.attr("split")
    return bool(sp and sp[0].text == "0") or (not sp and not s.name.startswith("pto.tfree"))


def whole_tile_lanes(prog: Program, names) -> bool:
    """A5: pipes whose ops say ``split = 0`` (:func:`_whole_tile_op`; or an init says
    ``nosplit = true``) in the functions ``names`` move whole tiles through AIV0 only - the
    pipes of such a function are one-lane (ptoas infers ``nosplit`` from the ops, and its
    ``TPipe<..., IsNoSplit>`` has one lane on A5)."""
    for n in names:
        for s in prog.funcs[n].statements():
            if "initialize" in s.name and "pipe" in s.name:
                ns = s.attr("nosplit")
                if ns and ns[0].text == "true":
                    return True
            if _whole_tile_op(s):
                return True
    return False


def lane0_scope(stmts) -> bool:
    """Does ptoas run the Vector scope ``stmts`` (a ``kernel_kind = vector`` function's body,
    a ``pto.section.vector`` region) on AIV0 only on A5: ``if (get_subblockid() == 0) { body }``
    - when it moves whole tiles through a pipe (:func:`_whole_tile_op`) and reads no sub-block
    (:data:`SUBBLOCK_OPS`: then the scope controls its lanes itself, and both run it)?  PTOAS
    PTOToEmitC ``needsA5NoSplitVectorGuard``, decided per scope, nested ops included and
    callees not."""
    whole, reads = False, False
    for s in walk(stmts):
        reads = reads or s.name in SUBBLOCK_OPS
        whole = whole or _whole_tile_op(s)
    return whole and not (reads and _live_subblock_read(stmts))


def _live_subblock_read(stmts) -> bool:
    """Does a sub-block read (:data:`SUBBLOCK_OPS`) of the scope ``stmts`` reach an op that is
    not pure integer arithmetic?  ptoas decides its guard after MLIR's dead-code elimination:
    ``%sb = pto.get_subblock_idx`` whose value nothing uses (or only ``arith`` ops nothing uses
    do) is gone by then, and the scope is guarded as if it read none."""
    stmts = list(walk(stmts))
    uses = {}
    for s in stmts:
        for t in s.values():
            uses[t.text] = uses.get(t.text, 0) + 1
    pure = [s for s in stmts if s.results and (s.name in SUBBLOCK_OPS or s.name.startswith("arith."))]
    dead, changed = set(), True
    while changed:
        changed = False
        for s in pure:
            if id(s) not in dead and not any(uses.get(r) for r in s.results):
                dead.add(id(s))
                changed = True
                for t in s.values():
                    uses[t.text] -= 1
    return any(s.name in SUBBLOCK_OPS and id(s) not in dead for s in stmts)
