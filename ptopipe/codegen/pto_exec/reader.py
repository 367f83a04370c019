"""``.pto`` text -> :class:`~.program.Program`: the syntax tree, the functions, and every op
checked to be one the executor runs (else a ParseError naming it at its line:col, before
anything runs)."""
from __future__ import annotations

import re

from ...errors import ParseError, PtoPipeError
from ..pto_tree import parse_tree
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
    for f in funcs.values():
        _check_ops(f, funcs, types)
    return Program(path, funcs, arch, types)


def _check_ops(f: Func, funcs: dict, types: TypeReader) -> None:
    for s in walk(f.body):
        if s.name not in HANDLERS and catalogue_name(s.name) is None:
            raise types.err(f"unknown operation {s.name!r}: ptopipe does not support it", s.tok,
                            fix="rewrite it with supported ops, or report it so it can be added "
                                "(docs/pto.md lists what is read)")
        if s.name == "func.call":
            sym = s.symbol()
            if sym is None or sym not in funcs:
                raise types.err(f"func.call of @{sym or '?'}, which the file does not define",
                                s.tok, fix="define the callee in the same module")
            f.calls.append(sym)
