"""``.pto`` text -> :class:`~.program.Program`: the syntax tree, the functions, and every op
checked to be one the executor runs (else a ParseError naming it at its line:col, before
anything runs)."""
from __future__ import annotations

import difflib
import re

from ...errors import ParseError, PtoPipeError
from ...ir.core import gc_paused
from ..pto_tree import Block, odd_end, parse_tree, split_top, suspect_lines
from .attributes import ATTRIBUTE_KEYS, check_misspelled, misspelled, written_keys
from .executor import HANDLERS
from .headers import check_header
from .op_checks import Constants, check_op, check_store_count
from .pipe_pairs import check_pipe_pairs
from .pipe_ops import (check_frontend_kernel, check_frontend_rings, check_nosplit_splits, check_pipe_directions,
                       check_split_kinds)
from .program import Func, Program, SYNTAX_SLIPS, catalogue_name, known_ops, malformed, read_func
from .types import TypeReader
from .use_types import UseTypes, introduced as introduced_types, results as result_types


def read_program(text: str, path: str = "<pto>") -> Program:
    """``text`` as a :class:`Program` (syntax, functions, every op known: ParseError else)."""
    try:
        with gc_paused():      # (every statement made stays alive: collections would only rescan them)
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
            _check_module_end(s, types)
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
                raise types.err(f"function @{f.name} defined twice", s.tok,
                                fix="give each func.func a name of its own")
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
    suspects = suspect_lines(text)
    near = misspelled(written_keys(text))
    for f in funcs.values():
        sites[f.name] = _check_ops(f, funcs, types, suspects, near)
        _check_scopes(f, types)
        for s in f.statements():
            if s.name == "pto.tstore":
                check_store_count(s, types)
        _check_returns(f, types)
        _check_yields(f, types)
        check_frontend_kernel(f, path)
        check_nosplit_splits(f, path)
        check_split_kinds(f, path)
    check_pipe_pairs(funcs, path)
    _check_no_recursion(funcs, sites, types)
    _check_entry_results(funcs, types)
    prog = Program(path, funcs, arch, types)
    check_pipe_directions(prog, funcs)     # (every function, as ptoas: run, check and --static alike)
    for f in funcs.values():
        check_frontend_rings(f, path)
    return prog


def _check_module_end(s, types: TypeReader) -> None:
    """A ParseError at the first token after the module's closing ``}`` (the syntax tree
    reads words after a region as the op's own, as in ``} else {``): ptoas refuses the
    file there ("custom op 'x' is unknown"), and a run must not leave it unread."""
    toks = s.toks
    end = max((k for k, t in enumerate(toks) if t.text == "{}"), default=None)
    if end is not None and end + 1 < len(toks):
        t = toks[end + 1]
        raise types.err(f"unexpected {t.text!r} after the module's closing '}}': ptoas refuses the file here", t,
                        fix="remove it (an operation belongs in a func.func inside the module)")


#: ptoas ops ptopipe knows but does not model, and why (the refusal says so)
NOT_MODELLED = dict.fromkeys(
    ("pto.build_async_session", "pto.tput_async", "pto.tget_async", "pto.wait_async_event",
     "pto.test_async_event"),
    ("pto-comm's asynchronous DMA transfers (BuildAsyncSession / TPUT_ASYNC / TGET_ASYNC / "
     "WaitAsyncEvent) copy GM to another device's GM on the SDMA engine; ptopipe simulates the cores of "
     "one cluster and has no DMA engine or other device to run them on",
     "check the kernel without its transfers (move the data with TLOAD / TSTORE or run the transfer "
     "on the host), or report it so it can be added"))


def _check_ops(f: Func, funcs: dict, types: TypeReader, suspects: frozenset = frozenset(),
               near: frozenset = frozenset()) -> list:
    """Every op of ``f`` known and in a form the executor runs (``suspects``: the file's lines
    whose ops :meth:`~ptopipe.codegen.pto_tree.Stmt.malformed` checks; ``near``: the attribute
    keys the file writes that may misspell an op's, :func:`~.attributes.misspelled`); its ``func.call``
    statements (in order, their callees also appended to ``f.calls``)."""
    sites = []
    consts = Constants(f)
    for s in f.statements():
        bad = s.malformed() if suspects and not suspects.isdisjoint(s.lines()) else None
        if s.name in ("scf.for", "scf.if"):
            check_header(s, types.f)
        elif bad is None and not s.regions and odd_end(s.text()):
            bad = s.trailing()
            if bad is not None:
                raise types.err(f"{s.name}: {bad[0]}", bad[1],
                                fix=f"remove {bad[1].text!r}, or give the next operation a line of its own"
                                if "unexpected" in bad[0] else "write `return %v : type` / `scf.yield %v : type`")
        if bad is not None:
            raise types.err(f"{s.name}: {bad[0]}", bad[1], fix="write the op as ptoas spells it (docs/pto.md; "
                                                            "ptoas's test/ has an example of each op)")
        keys = ATTRIBUTE_KEYS.get(s.name)
        if near and keys is None:
            check_misspelled(s, near, types.f)
        if keys is not None:
            bad = s.unknown_key(keys)
            if bad is not None and bad[1]:
                raise types.err(f"{s.name} gives attribute {bad[0]!r} twice", s.tok, fix="give it once")
            if bad is not None:
                near = difflib.get_close_matches(bad[0], sorted(keys), n=1)
                raise types.err(f"{s.name} has no attribute {bad[0]!r} (it takes {', '.join(sorted(keys))})", s.tok,
                                fix=f"write {near[0]!r}" if near else "remove it, or spell it as ptoas does")
        check_op(s, types, consts)
        if s.name in NOT_MODELLED:
            why, fix = NOT_MODELLED[s.name]
            raise types.err(f"{s.name} is not supported: {why}", s.tok, fix=fix)
        if s.name not in HANDLERS and catalogue_name(s.name) is None:
            near = difflib.get_close_matches(s.name, known_ops(), n=1, cutoff=0.8)
            raise types.err(f"unknown operation {s.name!r}: ptopipe does not support it", s.tok,
                            fix=f"did you mean {near[0]!r}?" if near else
                                "rewrite it with supported ops, or report it so it can be added "
                                "(docs/pto.md lists what is read)")
        if "initialize" in s.name and "pipe" in s.name:
            _check_ring_sizes(s, types)
        if s.name == "func.call":
            sym = s.symbol()
            if sym is None or sym not in funcs:
                raise types.err(f"func.call of @{sym or '?'}, which the file does not define",
                                s.tok, fix="define the callee in the same module")
            _check_call_types(s, f, funcs[sym], types)
            f.calls.append(sym)
            sites.append(s)
    return sites


def _check_call_types(s, f: Func, callee: Func, types: TypeReader) -> None:
    """A ``func.call``'s type list ``(T0, T1, ...) -> ()`` has one type per argument, each the
    type of the argument where ``f`` declares it (a parameter of ``f``) and of the callee's
    parameter (ptoas: "use of value expects different type than prior uses", "operand type
    mismatch"): else a ParseError - at the list's type, or at the call for the callee's."""
    args = s.values()
    listed = _call_type_list(s)
    where = s.where(types.f)
    if len(args) != len(callee.params):
        raise ParseError(f"func.call @{callee.name} passes {len(args)} argument(s); @{callee.name} takes "
                         f"{len(callee.params)}", where=where,
                         fix=f"pass one value per parameter of @{callee.name} (line {callee.stmt.tok.line})")
    if listed is None:
        return                      # (no type list: the op's spelling is read where it runs)
    if len(listed) != len(args):
        raise ParseError(f"func.call @{callee.name} with {len(args)} argument(s) but {len(listed)} type(s)",
                         where=where, fix="give the type list one type per argument")
    same = UseTypes(types).same
    own = {name for name, _, _ in f.params}
    for k, (a, lt, (pname, _, _)) in enumerate(zip(args, listed, callee.params)):
        said = _type_text(lt)
        have = _type_text(_param_type_toks(f, a.text)) if a.text in own else None
        if have and not same(have, said):
            raise types.err(f"func.call: argument {a.text} is declared {have} but the call's type list says "
                            f"{said}", lt[0], fix=f"write {have} for {a.text} in the type list")
        want = _type_text(_param_type_toks(callee, pname))
        if want and not same(said, want):
            raise ParseError(f"func.call @{callee.name}: argument {k} ({a.text}) is passed as {said} "
                             f"but @{callee.name}'s parameter {pname} is {want} (ptoas: operand type mismatch)",
                             where=where,
                             fix=f"pass @{callee.name} a {want} value and say so in the type list, or declare "
                                 f"{pname} with the type the call passes")


def _call_type_list(s) -> list | None:
    """The type token lists of a call's ``: (T0, T1) -> (...)``, or None without one."""
    toks = s.toks
    colon = next((i for i, t in enumerate(toks) if t.text == ":" and t.kind == "punct"), None)
    if colon is None or colon + 1 >= len(toks) or toks[colon + 1].text != "(":
        return None
    depth = 0
    for j in range(colon + 1, len(toks)):
        depth += (toks[j].text in ("(", "[", "<", "{")) - (toks[j].text in (")", "]", ">", "}"))
        if depth == 0:
            return [g for g in split_top(toks[colon + 2:j]) if g]
    return None


def _param_type_toks(f: Func, name: str) -> list:
    """The type tokens of ``f``'s parameter ``name`` as the header writes them."""
    toks = f.stmt.toks
    for i, t in enumerate(toks[:-2]):
        if t.kind == "value" and t.text == name and toks[i + 1].text == ":":
            depth, out = 0, []
            for u in toks[i + 2:]:
                if depth == 0 and u.text in (",", ")", "{"):
                    break
                depth += (u.text in ("(", "[", "<")) - (u.text in (")", "]", ">"))
                out.append(u)
            return out
    return []


def _check_ring_sizes(s, types: TypeReader) -> None:
    """A pipe init's slot_size / slot_num / local_slot_num, where given, are positive integers
    (a ring holds at least one slot of at least one byte)."""
    for key in ("slot_size", "slot_num", "local_slot_num"):
        v = s.attr(key)
        if not v:
            continue
        text = "-" + v[1].text if v[0].text == "-" and len(v) > 1 else v[0].text   # (a type may follow: ": i32")
        try:
            n = int(text)
        except ValueError:
            raise types.err(f"{s.name}: {key} = {text} is not an integer", v[0],
                            fix=f"give {key} a positive integer") from None
        if n < 1:
            raise types.err(f"{s.name}: {key} = {n} is not a positive number of "
                            f"{'bytes' if key == 'slot_size' else 'slots'}", v[0],
                            fix=f"give {key} a positive integer (a ring holds at least one slot of one byte)")


def _check_yields(f: Func, types: TypeReader) -> None:
    """The ``scf.yield`` ending each region of an ``scf.for`` / ``scf.if`` with results gives
    values of the op's result types, in number and type (ptoas: "region iter_arg and yielded
    value have different type"): else a ParseError at the yield - run as written, the value
    of the wrong type would flow on in its place."""
    same = UseTypes(types).same
    for s in f.statements():
        if s.name not in ("scf.for", "scf.if") or not s.results:
            continue
        want = result_types(s)
        if not want:
            continue                                    # (result types not read here: not compared)
        if s.name == "scf.if" and len(s.regions) < 2:
            raise types.err(f"scf.if with {len(want)} result(s) has no else region to give them when the condition "
                            "is false (ptoas: must have an else block if defining values)", s.tok,
                            fix="add `} else { ... scf.yield %v : T }`")
        for region in s.regions:
            y = region[-1].stmts[-1] if region and region[-1].stmts else None
            if y is None or y.name != "scf.yield":
                last = f" (after line {region[-1].stmts[-1].tok.line})" if region and region[-1].stmts else ""
                raise types.err(f"{s.name}: a region of it ends without the scf.yield of its {len(want)} result(s)"
                                f"{last} (ptoas: region control flow edge ... has 0 source operands, but target "
                                f"successor needs {len(want)})", s.tok,
                                fix=f"end the region with scf.yield of {len(want)} value(s) of the result types")
            got = [_type_text(t) for t in y.types() if t]
            if len(got) != len(want):
                raise types.err(f"scf.yield gives {len(got)} value(s); the {s.name} at {s.tok.line}:{s.col} "
                                f"has {len(want)} result(s)", y.tok,
                                fix="yield one value per result, of the result's type")
            for k, (g, w) in enumerate(zip(got, want)):
                if not same(g, w):
                    raise types.err(f"scf.yield gives {g} as value {k}, but result {k} of the {s.name} at "
                                    f"{s.tok.line}:{s.col} is {w} (ptoas: the yielded value and the "
                                    "iter_arg have different types)", y.tok,
                                    fix="yield a value of the result's type (a loop-carried value keeps its type)")


def _result_types(f: Func) -> list:
    """The type texts of ``f``'s results (``-> T`` / ``-> (T, U)`` after its parameters)."""
    toks, depth, k = f.stmt.toks, 0, None
    for i, t in enumerate(toks):
        if t.kind == "punct" and t.text in "([<{":
            depth += 1
        elif t.kind == "punct" and t.text in ")]>}":
            depth -= 1
        elif t.text == "->" and depth == 0:
            k = i + 1
            break
    if k is None:
        return []
    end = next((j for j in range(k, len(toks)) if toks[j].text in ("attributes", "{}")), len(toks))
    tys = toks[k:end]
    if tys and tys[0].text == "(" and tys[-1].text == ")":
        tys = tys[1:-1]
    return [_type_text(g) for g in split_top(tys) if g]


def _check_returns(f: Func, types: TypeReader) -> None:
    """Each ``return`` of ``f`` gives one value per result of ``f``, of its type (ptoas:
    "'func.return' op has 1 operands, but enclosing function returns 0"): else a ParseError
    at the return.  A body of one block ends with its ``return`` (ptoas: "block with no
    terminator"): else a ParseError at its last op - the run would otherwise run the body
    as if it were complete."""
    _check_terminator(f, types)
    want = None
    for s in f.body:
        if s.name != "return":
            continue
        if want is None:
            want = _result_types(f)
        got = [_type_text(t) for t in s.types() if t] if s.used() else []
        if len(got) != len(want) or len(s.used()) != len(want):
            raise types.err(f"return gives {len(s.used())} value(s), but @{f.name} returns {len(want)}"
                            + (f" ({', '.join(want)})" if want else ""), s.tok,
                            fix=f"return one value per result of @{f.name}, of its type" if want else
                                f"return nothing, or declare @{f.name}'s results: func.func @{f.name}(...) -> T")
        for k, (g, w) in enumerate(zip(got, want)):
            if not UseTypes(types).same(g, w):
                raise types.err(f"return gives {g} as value {k}, but result {k} of @{f.name} is {w}", s.tok,
                                fix="return a value of the result's type")


def _check_terminator(f: Func, types: TypeReader) -> None:
    """The ParseError of a function whose one-block body does not end with ``return``, at
    its last op (where ptoas reports it) or, for an empty body, at the function."""
    regions = f.stmt.regions
    if not regions or len(regions[0]) != 1 or (f.body and f.body[-1].name == "return"):
        return                        # (a declaration, or a body of several blocks: not judged here)
    last = f.body[-1] if f.body else None
    what = (f"its last operation, {last.name} at line {last.tok.line}, is no terminator" if last is not None
            else "its body is empty")
    raise ParseError(f"function @{f.name} does not end with 'return': {what} (ptoas: \"block with no "
                     "terminator\")", where=(last or f.stmt).where(types.f),
                     fix=f"add 'return' as the last operation of @{f.name}")


def _check_entry_results(funcs: dict, types: TypeReader) -> None:
    """A PTO entry function - one marked ``pto.entry``, or the file's only function - returns
    nothing (ptoas: "PTO entry functions must return void"): else a ParseError at it."""
    for f in funcs.values():
        if (f.entry or len(funcs) == 1) and _result_types(f):
            raise types.err(f"@{f.name} is the file's entry function and returns {', '.join(_result_types(f))}: "
                            "ptoas refuses it (PTO entry functions must return void)", f.stmt.tok,
                            fix=f"return nothing from @{f.name}: write results to a GM pointer parameter")


def _type_text(toks) -> str:
    return "".join(t.text for t in toks)


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


def _check_scopes(f: Func, types: TypeReader) -> None:
    """Every value an op uses is one its region can see: a parameter, or defined in the same
    region or an enclosing one (MLIR's visibility, which ptoas enforces: "use of undeclared
    SSA value name").  The blocks of one region see each other's values (their order in a
    CFG is the runtime's check); a value of a sibling region - an earlier loop's body - is a
    ParseError at the use, before anything runs.  A name is defined once among the values it
    could see (MLIR's rule, ptoas: "redefinition of SSA value"): a second definition while
    the first is visible is a ParseError at the second, in text order (a sibling region may
    reuse a name; an op's results are defined after its regions)."""
    visible = {p[0] for p in f.params}       # grows on entering a region, shrinks on leaving
    defined = {p[0]: (p[2].line, p[2].col) for p in f.params}  # name -> its definition (line, col), in text order
    typed = UseTypes(types)                  # and the type it gives the value, where it says one
    consts = Constants(f).values             # (the offsets of a pto.subset, for the type it infers)
    for name, _, tok in f.params:
        typed.define(name, _type_text(_param_type_toks(f, name)), tok.line, tok.col)

    def define(name, line, col):
        first = defined.get(name)
        if first is not None:
            raise ParseError(f"redefinition of SSA value {name} (first defined at {first[0]}:{first[1]})",
                             where=f"{types.f}:{line}:{col}",
                             fix="give the value a name of its own: a name is defined once in its region "
                                 "and the regions nested in it")
        defined[name] = (line, col)

    def region(blocks, introduced, owner):
        added = [n for n in introduced if n not in visible]
        for n, ty in introduced.items():
            at = _use_where(types.f, owner, n).rsplit(":", 2)
            define(n, int(at[1]), int(at[2]))
            typed.define(n, ty, int(at[1]), int(at[2]))
        for b in blocks:
            added.extend(a[0] for a in b.args if a[0] not in visible)
            for s in b.stmts:
                if s.results:
                    added.extend([r for r in s.results if r not in visible])
        visible.update(added)
        mine = list(introduced)
        for b in blocks:
            for a in b.args:
                define(a[0], owner.tok.line, owner.col)
                typed.define(a[0], a[1], owner.tok.line, owner.col)
                mine.append(a[0])
            for s in b.stmts:
                # (introduced_types gives an op without regions other than scf.for none)
                own = introduced_types(s) if s.regions or s.name == "scf.for" else ()
                names = s.used_names()
                if not visible.issuperset(names):      # (each one visible: none to look at)
                    for name in names:
                        if name not in visible and name not in own:
                            _out_of_scope(f, types, s, name)
                typed.check(s)
                for r in s.regions:
                    region(r, own, s)
                if s.results:
                    line = s.tok.line
                    for r, col in zip(s.results, s.result_cols):
                        if r in defined:
                            define(r, line, col)          # (the redefinition's error)
                        defined[r] = (line, col)
                    for r, col, ty in zip(s.results, s.result_cols, result_types(s, consts)):
                        typed.define(r, ty, line, col)
                    mine.extend(s.results)
        visible.difference_update(added)
        for n in mine:
            defined.pop(n, None)
            typed.forget(n)

    region([Block(stmts=f.body)], {}, f.stmt)


def _out_of_scope(f: Func, types: TypeReader, s, name: str) -> None:
    """The ParseError for ``name`` used in ``s`` where it is not visible: outside the region of
    the function that defines it, or defined nowhere in the function (ptoas: "use of
    undeclared SSA value name") - refused before anything runs, so that nothing the run does
    first (sizing a parameter from a shape the name was to give) reports it as another error."""
    for d, around in _with_parent(f.body, f.stmt):
        if name in d.results or name in introduced_types(d) or \
                any(name == a[0] for r in d.regions for b in r for a in b.args):
            around = d if name not in d.results else around
            raise ParseError(
                f"{name} is used outside the region that defines it (at {d.tok.line}:{d.col}, "
                f"inside the {around.name} at {around.tok.line}:{around.col}): a value is "
                f"visible only in its own region and the regions nested in it",
                where=_use_where(types.f, s, name),
                fix="use a value defined in this region or an enclosing one (ptoas refuses this "
                    "use too: use of undeclared SSA value name)")
    if any(name == r.split("#")[0] for d, _ in _with_parent(f.body, f.stmt) for r in d.results):
        return                      # (``%w:2 = scf.while``: its results %w#0, %w#1, used as %w#k)
    tok = next((t for t in s.values() if t.text.split("#")[0] == name), None)
    if tok is None:                 # (the name is in a string: ``pto.print ins("n = %d", ...)``)
        return
    raise ParseError(f"use of undefined value {name}: no op or region of @{f.name} defines it",
                     where=f"{types.f}:{tok.line}:{tok.col}",
                     fix="define it before this use, or name the value meant (ptoas refuses the file: use "
                         "of undeclared SSA value name)")


def _with_parent(stmts, parent):
    for s in stmts:
        yield s, parent
        for r in s.regions:
            for b in r:
                yield from _with_parent(b.stmts, s)


def _use_where(path: str, s, name: str) -> str:
    """line:col of ``name``'s first use in ``s``'s own text (the op's, if not found)."""
    pat = re.compile(re.escape(name) + r"(?![A-Za-z0-9_$.-])")
    for line, col, text in s._pieces:
        m = pat.search(text) if text is not None else None
        if m:
            return f"{path}:{line}:{col + m.start()}"
    return f"{path}:{s.tok.line}:{s.col}"
