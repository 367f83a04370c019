"""Regions of the ``.pto`` reader: ``scf.for`` (with ``iter_args``), ``scf.if`` / ``else``,
``scf.yield``, and the buffers a loop carries.

A buffer (``pto.alloc_tile``) of an outer scope that a loop body reads on some path before
it writes it (the two branches of an scf.if are separate paths) holds a value carried from one iteration to the next (an accumulator: ``pto.tmatmul.acc
ins(%acc, ...) outs(%acc)``).  The IR carries loop values explicitly, so such a buffer
becomes an extra iter_arg of the ``pl.for`` (found by a look-ahead over the body's tokens
before the body is read): initial value its value before the loop, yielded its value at the
end of the body, and after the loop it holds the loop's result.  An outer buffer an scf.if
writes becomes a result of the ``pl.if``.  Several buffers one op carries are its iter_args /
results in the order they are declared (ptopipe's writer spells a tile iter_arg / if result
so, :mod:`.pto_buffers`).  Other writes of an outer
buffer inside a region are region-local; reading such a buffer after the region is a
ParseError (:mod:`.pto_ops` ``read``).
"""
from __future__ import annotations

from ..ir.core import Block, Operation, Region
from ..ir.types import INDEX, MemorySpace, ScalarType, TileValueType, describe
from ..ir.opdefs import CreateOp, ForOp, IfOp, YieldOp
from .pto_ops import (DataLane, RowView, Scope, Unwritten, _check_results, _check_type, _depth, _hint, emit,
                      lookup, read, write)
from ..errors import with_article


def _region_end(r, fs, scope, n_results, opt):
    """After a region's body: its yield (appended if absent and nothing is yielded)."""
    last = scope.block.last
    if last is None or not last.is_a(YieldOp):
        if n_results:
            raise r.c.error(f"this {opt.text} region must end with scf.yield of {n_results} value(s)", opt)
        scope.block.append(Operation(YieldOp.name, (), (), {}, (), None))
        scope.block.last.loc = r.loc(opt)
    elif len(last.operands) != n_results:
        raise r.c.error(f"scf.yield gives {len(last.operands)} value(s); the {opt.text} has "
                        f"{n_results} result(s)", opt)


def _pop(fs, scope):
    fs.scopes.pop()
    for name in scope.defined:              # out of sight: a sibling region may reuse the name
        del fs.defined[name]
    outer = fs.scopes[-1]
    top = len(fs.scopes) - 1
    for name, tok in scope.outer_writes.items():
        outer.stale[name] = tok
        d = _depth(fs, name)
        if d is not None and d < top:
            outer.outer_writes.setdefault(name, tok)


def h_for(r, fs, opt, results, loc):
    c = r.c
    ivt = c.kind("value", "the loop variable")
    c.expect("=")
    lb = read(r, fs, c.kind("value", "the lower bound"))
    c.expect("to")
    ub = read(r, fs, c.kind("value", "the upper bound"))
    c.expect("step")
    st_t = c.kind("value", "the step")
    st = read(r, fs, st_t)
    k = fs.const_values.get(st)
    if k is not None and not isinstance(k, bool) and k <= 0:
        raise c.error(f"scf.for step {st_t.text} = {k}: the loop never ends" if k == 0 else
                      f"scf.for step {st_t.text} = {k}: scf.for needs a positive step", st_t,
                      "give the loop a positive step")
    iters, types = [], []
    if c.accept("iter_args"):
        c.expect("(")
        while not c.accept(")"):
            a = c.kind("value", "an iter_arg")
            c.expect("=")
            iters.append((a, read(r, fs, c.kind("value", "an initial value"))))
            if not c.at(")"):
                c.expect(",")
        c.expect("->", "before the loop's result types")
        c.expect("(")
        while not c.accept(")"):
            types.append(c.type_())
            if not c.at(")"):
                c.expect(",")
        if len(types) != len(iters):
            raise c.error(f"{len(iters)} iter_args but {len(types)} result types", opt)
    _check_results(r, opt, results, len(iters))
    irt = []
    for (a, x), pt in zip(iters, types):
        _check_type(r, a, x, pt)
        irt.append(x.type)
    carried = [(t, read(r, fs, t)) for t in carried_buffers(r, fs)]
    ctypes = [v.type for _, v in carried]
    body = Block([INDEX] + irt + ctypes, [_hint(ivt.text)] + [_hint(a.text) for a, _ in iters]
                 + [f"{t.text[1:]}_iter" for t, _ in carried])
    op = emit(r, fs, ForOp.name, [lb, ub, st] + [x for _, x in iters] + [v for _, v in carried],
              irt + ctypes, {}, loc, [_hint(n) for _, n in results] + [f"{t.text[1:]}_out" for t, _ in carried],
              [Region([body])])
    scope = Scope(body, loop=True)
    fs.scopes.append(scope)
    r.define(fs, ivt, ivt.text, body.args[0])
    for (a, _), arg in zip(iters, body.args[1:]):
        r.define(fs, a, a.text, arg)
    for (t, _), arg in zip(carried, body.args[1 + len(iters):]):
        scope.vars[t.text] = arg                # the buffer's value in this iteration
    c.expect("{", "opening the loop body")
    r.body(fs, scope)
    _region_end(r, fs, scope, len(iters), opt)
    if carried:
        y = body.last
        ends = [read(r, fs, t) for t, _ in carried]
        new = Operation(YieldOp.name, list(y.operands) + ends, (), {}, (), y.loc)
        y.replace_with(new)
    _pop(fs, scope)
    for (rt, name), v in zip(results, op.results):
        r.define(fs, rt, name, v)
    for (t, _), v in zip(carried, op.results[len(iters):]):
        write(r, fs, t, v)


def h_if(r, fs, opt, results, loc):
    c = r.c
    ct = c.kind("value", "the condition")
    if isinstance(lookup(r, fs, ct)[1], DataLane):
        if results or c.at("->"):
            raise c.error("an scf.if on the data lane has no results", opt)
        c.expect("{", "opening the region")
        r.body(fs, fs.scopes[-1])
        if c.at("else"):
            raise c.error("an scf.if on the data lane has no else region", c.peek())
        return
    cond = read(r, fs, ct)
    types = []
    if c.accept("->"):
        c.expect("(")
        while not c.accept(")"):
            types.append(c.type_())
            if not c.at(")"):
                c.expect(",")
    _check_results(r, opt, results, len(types))
    carried = if_buffers(r, fs)
    blocks = [Block(), Block()]
    irt = [pt.ir if pt.kind == "tile" else ScalarType(pt.dtype) for pt in types]
    op = emit(r, fs, IfOp.name, [cond], irt + [t for _, t, _ in carried], {}, loc,
              [_hint(n) for _, n in results] + [f"{t.text[1:]}_sel" for t, _, _ in carried],
              [Region([b]) for b in blocks])
    outer = fs.scopes[-1]
    before, stale = dict(outer.stale), {}
    for i, b in enumerate(blocks):
        stale.update(outer.stale)
        outer.stale = dict(before)           # the then-branch's writes are not seen by the else
        if i == 1 and not c.accept("else"):
            if types:
                raise c.error("scf.if with results needs an else region", opt)
            b.append(Operation(YieldOp.name, [v for _, _, v in carried], (), {}, (), loc))
            break
        scope = Scope(b)
        fs.scopes.append(scope)
        c.expect("{", "opening the region")
        r.body(fs, scope)
        _region_end(r, fs, scope, len(types), opt)
        if carried:
            y = b.last
            y.replace_with(Operation(YieldOp.name, list(y.operands) + [read(r, fs, t) for t, _, _ in carried],
                                     (), {}, (), y.loc))
        _pop(fs, scope)
    stale.update(outer.stale)
    outer.stale = stale
    for b in blocks:
        for t, y in zip(irt, b.last.operands):
            if t != y.type:
                raise c.error(f"type mismatch: scf.yield gives {with_article(describe(y.type))} for a "
                              f"{describe(t)} result of scf.if", opt)
    for (rt, name), v in zip(results, op.results):
        r.define(fs, rt, name, v)
    for (t, _, _), v in zip(carried, op.results[len(types):]):
        write(r, fs, t, v)


def _row_views(fs) -> dict:
    """{row view name: its column's name} of the views made so far (:class:`RowView`)."""
    return {n: b.tok.text for sc in fs.scopes for n, b in sc.vars.items() if isinstance(b, RowView)}


def _writes(toks, i, views) -> tuple:
    """(names written in the region whose '{' is toks[i], index after its '}'); writing a
    row view (``views``, updated with those made in the region) writes its column."""
    depth, parens, outs_at, out = 0, 0, None, {}
    while True:
        t = toks[i]
        if t.kind == "eof":
            return out, None
        if t.kind == "value" and toks[i + 1].text == "=" and toks[i + 2].text == "pto.treshape":
            views[t.text] = toks[i + 3].text
            i += 4
            continue
        if t.text in ("{", "}"):
            depth += 1 if t.text == "{" else -1
            if depth == 0:
                return out, i + 1
        elif t.text in ("(", ")"):
            parens += 1 if t.text == "(" else -1
            if outs_at is not None and parens == outs_at:
                outs_at = None
        elif t.kind == "word" and t.text == "outs" and toks[i + 1].text == "(":
            outs_at = parens
        elif t.kind == "value" and (outs_at is not None or
                                    (toks[i - 1].text == "(" and toks[i - 2].text == "pto.tpop")):
            name = views.get(t.text, t.text)
            out.setdefault(name, t._replace(text=name))
        i += 1


def if_buffers(r, fs) -> list:
    """``(token, type, value before)`` of the outer tile buffers an scf.if (from the cursor's
    '{') writes: they become results of the pl.if, each branch yielding its last value (the
    value before, in a branch that does not write it).  A buffer with no value before the if
    is carried only when both branches write it."""
    toks = r.c.toks
    if toks[r.c.i].text != "{":
        return []
    views = _row_views(fs)
    then_w, nxt = _writes(toks, r.c.i, views)
    else_w = {}
    if nxt is not None and toks[nxt].text == "else" and toks[nxt + 1].text == "{":
        else_w, _ = _writes(toks, nxt + 1, views)
    out = []
    for name, t in {**then_w, **else_w}.items():
        d = _depth(fs, name)
        if d is None:
            continue
        b = fs.scopes[d].vars[name]
        typ = getattr(b, "type", None)
        if not isinstance(typ, TileValueType):
            continue
        if isinstance(b, Unwritten):
            if name in then_w and name in else_w:
                out.append((t, typ, None))
            continue
        out.append((t, typ, b))
    return sorted(out, key=lambda x: _declared(fs, x[0].text))


def _declared(fs, name) -> tuple:
    """Where buffer ``name`` is declared: buffers carried by one op are its iter_args /
    results in this order (ptopipe's writer declares them in the op's order)."""
    t = fs.defined[name]
    return t.line, t.col


def h_yield(r, fs, opt, results, loc):
    c = r.c
    _check_results(r, opt, results, 0)
    xs = []
    if c.peek().kind == "value":
        toks = [c.kind("value", "a value")]
        while c.accept(","):
            toks.append(c.kind("value", "a value"))
        c.expect(":", "before the yielded types")
        types = [c.type_()]
        while c.accept(","):
            types.append(c.type_())
        if len(types) != len(toks):
            raise c.error(f"scf.yield of {len(toks)} values with {len(types)} types", opt)
        for t, pt in zip(toks, types):
            v = read(r, fs, t)
            _check_type(r, t, v, pt)
            xs.append(v)
    emit(r, fs, YieldOp.name, xs, [], {}, loc)
    if not c.at("}"):
        raise c.error("scf.yield must be the last op of its region", c.peek())




def _exposed(toks, i, written, first, allw, views) -> int:
    """Scan the region whose '{' is toks[i] with the names ``written`` before it (updated in
    place to those written on every path through it); record in ``first`` (name -> token, in
    order) each name some path reads before writing it, in ``allw`` every name written.  A write is a name in ``outs(...)``
    or the destination of a DPS ``pto.tpop(%t, %pipe)``; a name followed by '=' is a
    definition.  A row view (``%v = pto.treshape %col``, recorded in ``views``) names its
    column: reading or writing %v reads or writes %col, and making it does neither.  An
    scf.if's branches are scanned apart (a name is written after the if when
    both branches write it); an scf.for body may run no iteration (its writes do not count
    after it).  Returns the index after the region's '}' (None at eof)."""
    depth, parens, outs_at, pending = 0, 0, None, None
    while True:
        t = toks[i]
        if t.kind == "eof":
            return None
        if t.kind == "value" and toks[i + 1].text == "=" and toks[i + 2].text == "pto.treshape":
            views[t.text] = toks[i + 3].text
            i += 4
            continue
        if t.text == "{" and pending is not None and depth == 1:
            kind, pending = pending, None
            w1 = set(written)
            nxt = _exposed(toks, i, w1, first, allw, views)
            if nxt is None:
                return None
            if kind == "scf.if":
                if toks[nxt].text == "else" and toks[nxt + 1].text == "{":
                    w2 = set(written)
                    nxt = _exposed(toks, nxt + 1, w2, first, allw, views)
                    if nxt is None:
                        return None
                    written |= w1 & w2
            i = nxt
            continue
        if t.text in ("{", "}"):
            depth += 1 if t.text == "{" else -1
            if depth == 0:
                return i + 1
        elif t.text in ("(", ")"):
            parens += 1 if t.text == "(" else -1
            if outs_at is not None and parens == outs_at:
                outs_at = None
        elif t.kind == "word" and t.text in ("scf.if", "scf.for"):
            pending = t.text
        elif t.kind == "word" and t.text == "outs" and toks[i + 1].text == "(":
            outs_at = parens                    # until the matching ')'
        elif t.kind == "value" and toks[i + 1].text != "=" and toks[i - 1].text != "pto.set_validshape":
            # (``pto.set_validshape %t, %r, %c`` sets the tile's valid shape, metadata: it
            # neither reads nor writes the buffer's data)
            name = views.get(t.text, t.text)
            if outs_at is not None or (toks[i - 1].text == "(" and toks[i - 2].text == "pto.tpop"):
                written.add(name)
                allw.add(name)
            elif name not in written:
                first.setdefault(name, t._replace(text=name))
        i += 1


def carried_buffers(r, fs) -> list:
    """Tokens of the outer tile buffers the loop body (from the cursor's '{') reads on some
    path before it writes them (:func:`_exposed`) and writes somewhere, in order of first use."""
    toks, i = r.c.toks, r.c.i
    if toks[i].text != "{":
        return []
    first, allw = {}, set()
    if _exposed(toks, i, set(), first, allw, _row_views(fs)) is None:
        return []                                # the body's own parse reports it
    out = []
    for name, t in first.items():
        d = _depth(fs, name)
        if d is None or name not in allw:
            continue
        b = fs.scopes[d].vars[name]
        if not isinstance(getattr(b, "type", None), TileValueType):
            continue
        if isinstance(b, Unwritten):
            if b.type.space is not MemorySpace.Acc:
                raise r.c.error(f"{name} is read in this scf.for body before it is written, and nothing "
                                "writes it before the loop", t, "write it before the loop")
            # an accumulator nothing has written, carried into the loop: pl.create's storage
            # (the writer's spelling of pl.create + pl.matmul_acc(..., init_cond=)); whether the
            # first step overwrites it is the verifier's to prove, as for the DSL's
            ty = b.type
            op = emit(r, fs, CreateOp.name, [], [ty], {"shape": ty.shape, "dtype": ty.dtype, "space": ty.space},
                      r.loc(b.tok), [_hint(name)])
            write(r, fs, b.tok, op.results[0])
        out.append(t)
    return sorted(out, key=lambda t: _declared(fs, t.text))
