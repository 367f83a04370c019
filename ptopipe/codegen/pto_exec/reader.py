"""``.pto`` text -> :class:`~.program.Program`: the syntax tree, the functions, and every op
checked to be one the executor runs (else a ParseError naming it at its line:col, before
anything runs)."""
from __future__ import annotations

import re

from ...errors import ParseError, PtoPipeError
from ..pto_tree import parse_tree, split_top
from .executor import HANDLERS
from .program import Func, Program, SYNTAX_SLIPS, catalogue_name, malformed, read_func, walk
from .types import TypeReader


def read_program(text: str, path: str = "<pto>") -> Program:
    """``text`` as a :class:`Program` (syntax, functions, every op known: ParseError else)."""
    try:
        return _read_program(text, path)
    except RecursionError:
        raise ParseError("regions nest deeper than the reader follows", where=path,
                         fix="nest fewer scf.for / scf.if levels (a few hundred are fine)") from None
    except SYNTAX_SLIPS as e:
        if isinstance(e, PtoPipeError):
            raise
        raise malformed(e, path) from None


def _read_program(text: str, path: str) -> Program:
    types = TypeReader(path)
    top = parse_tree(text, path)
    funcs, arch = {}, None
    stmts = []
    for s in top:
        if s.name in ("module", "builtin.module"):
            m = re.search(r'target_arch"?\s*=\s*"(\w+)"', " ".join(t.text for t in s.toks))
            arch = m.group(1) if m else arch
            for r in s.regions:
                for b in r:
                    stmts.extend(b.stmts)
        else:
            stmts.append(s)
    for s in stmts:
        if s.name == "func.func":
            f = read_func(s, types)
            if f.name in funcs:
                raise types.err(f"function @{f.name} defined twice", s.tok)
            funcs[f.name] = f
        elif s.name.startswith("pto.") and not s.results:
            continue                       # module-level markers (e.g. pto.tile_buf_config)
        else:
            raise types.err(f"{s.name} at module level is not supported", s.tok,
                            fix="put operations inside a func.func")
    if not funcs:
        raise ParseError("the file defines no func.func", where=path,
                         fix="a .pto file holds a module of func.func kernels")
    sites = {}
    for f in funcs.values():
        sites[f.name] = _check_ops(f, funcs, types)
    _check_no_recursion(funcs, sites, types)
    return Program(path, funcs, arch, types)


def _check_ops(f: Func, funcs: dict, types: TypeReader) -> list:
    """Every op of ``f`` known and in a form the executor runs; its ``func.call`` statements
    (in order, their callees also appended to ``f.calls``)."""
    sites = []
    for s in walk(f.body):
        if s.name not in HANDLERS and catalogue_name(s.name) is None:
            raise types.err(f"unknown operation {s.name!r}: ptopipe does not support it", s.tok,
                            fix="rewrite it with supported ops, or report it so it can be added "
                                "(docs/pto.md lists what is read)")
        form = _unsupported_form(s)
        if form is not None:
            raise types.err(f"{s.name}'s {form} is not supported", s.tok,
                            fix="rewrite it with supported ops, or report it so it can be added "
                                "(docs/pto.md lists what is read)")
        if s.name == "func.call":
            sym = s.symbol()
            if sym is None or sym not in funcs:
                raise types.err(f"func.call of @{sym or '?'}, which the file does not define",
                                s.tok, fix="define the callee in the same module")
            f.calls.append(sym)
            sites.append(s)
    return sites


def _unsupported_form(s) -> str | None:
    """The name of the form of a known op that the executor does not run, else None:
    ``pto.tgather``'s compare form (a scalar operand, two destinations)."""
    if s.name != "pto.tgather":
        return None
    ins, outs = s.group("ins") or [], s.group("outs") or []
    colon = [i for i, t in enumerate(ins) if t.text == ":"]
    in_types = split_top(ins[colon[0] + 1:]) if colon else []
    scalar = any(g and g[0].kind == "word" for g in in_types)       # f16, i32, index: not a tile
    if scalar or len(s.values(outs)) > 1:
        return "compare form (ins(%src, %scalar, %tmp) outs(%dst, %cdst))"
    return None


def _check_no_recursion(funcs: dict, sites: dict, types: TypeReader) -> None:
    """No function calls itself, directly or through others (ptoas: "recursive function calls
    are not supported"): a ParseError at the call that closes the cycle."""
    done, on_path = set(), []

    def visit(name):
        on_path.append(name)
        for s in sites[name]:
            callee = s.symbol()
            if callee in on_path:
                cycle = on_path[on_path.index(callee):] + [callee]
                raise types.err(f"recursive function calls are not supported: @{name} calls @{callee}"
                                + (f" ({' -> '.join('@' + c for c in cycle)})" if len(cycle) > 2 else ""),
                                s.tok, fix="write the repetition as an scf.for / scf.while loop")
            if callee not in done:
                visit(callee)
        on_path.pop()
        done.add(name)

    for name in funcs:
        if name not in done:
            visit(name)
