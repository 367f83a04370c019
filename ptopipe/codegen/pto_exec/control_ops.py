"""Control flow: ``scf.for`` (iter_args), ``scf.if`` (results), ``scf.while`` / ``scf.condition``,
``scf.yield``, ``func.call`` (a kernel's call runs on that kernel's cores only; a helper's
statements are located with the calls that led to them) and ``return``.

An ``scf.for`` the fast-forward engine may take whole iterations of (:mod:`.skip`) offers
it each head but the first while it records: the engine answers with the iteration to go on
from (:meth:`~ptopipe.sim.periodic.engine.FastForward.head`)."""
from __future__ import annotations

from ...sim.location import SourceLoc
from ..pto_tree import split_top
from .program import kind_runs_here
from .values import Return


def h_for(ex, fr, s):
    toks = s.toks
    iv = toks[0]
    k = [i for i, t in enumerate(toks) if t.text in ("=", "to", "step")]
    lo = ex.ival(fr, toks[k[0] + 1])
    hi = ex.ival(fr, toks[k[1] + 1])
    st = ex.ival(fr, toks[k[2] + 1])
    if st <= 0:
        raise ex.err(s, f"scf.for step {st} is not positive", "give a step >= 1")
    inits = []
    grp = s.group("iter_args")
    names = []
    if grp:
        for g in split_top(grp):
            names.append(g[0].text)
            inits.append(ex.val(fr, g[2]))
    body = s.regions[0][0]
    vals = inits
    core = ex.core
    # the fast-forward engine may take whole iterations of it (control_ops' docstring)
    plan = ex.skip_plan(s, fr) if core.ff is not None else None
    i = lo
    while i < hi:
        if plan is not None and i != lo:
            ff = core.ff
            if ff is not None and ff.recording:
                i = ff.head(core, plan, i, st, hi)
        fr.env[iv.text] = i
        for n, v in zip(names, vals):
            fr.env[n] = v
        out = ex.block(fr, body.stmts)
        vals = out if out is not None else vals
        i += st
    return list(vals) if names else None


def h_if(ex, fr, s):
    c = ex.val(fr, s.values()[0])
    branch = s.regions[0] if c else (s.regions[1] if len(s.regions) > 1 else None)
    if branch is None:
        return None if not s.results else []
    out = ex.block(fr, branch[0].stmts)
    return out


def h_while(ex, fr, s):
    toks = s.toks
    grp = toks[1:next(i for i, t in enumerate(toks) if t.text == ")")] if toks and toks[0].text == "(" else []
    names, vals = [], []
    for g in split_top(grp):
        names.append(g[0].text)
        vals.append(ex.val(fr, g[2]))
    before, after = s.regions[0], s.regions[1]
    guard = 0
    while True:
        for n, v in zip(names, vals):
            fr.env[n] = v
        bb = before[0]
        for (n, _t), v in zip(bb.args, vals):
            fr.env[n] = v
        cond, passed = ex.block(fr, bb.stmts)
        if not cond:
            return passed
        ab = after[-1]
        for (n, _t), v in zip(ab.args, passed):
            fr.env[n] = v
        vals = ex.block(fr, ab.stmts) or []
        guard += 1


def h_condition(ex, fr, s):
    vs = s.values()
    return ex.val(fr, vs[0]), [ex.val(fr, v) for v in vs[1:]]


def h_yield(ex, fr, s):
    return [ex.val(fr, v) for v in s.values()]


def h_return(ex, fr, s):
    raise Return([ex.val(fr, v) for v in s.values()])


def h_call(ex, fr, s):
    sym = next(t for t in s.toks if t.kind == "symbol")
    callee = ex.prog.funcs[sym.text[1:]]
    args = [ex.val(fr, v) for v in s.values()]      # (as many as it takes: the reader's check)
    if callee.kind is not None and not kind_runs_here(callee.kind, ex.core_name):
        return [None] * len(s.results)
    if callee.kind is not None and fr.f.kind is None:
        return ex.call(callee, args, fr.via)     # the entry launching a kernel: no caller line
    here = SourceLoc(ex.prog.path, s.tok.line, s.col, fr.f.name)
    return ex.call(callee, args, (here,) + fr.via)     # a helper: its lines name the call
