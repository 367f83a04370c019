"""Which ``scf.for`` loops of a PTO-AS function the fast-forward engine may take whole
iterations of (:meth:`ptopipe.sim.periodic.engine.FastForward.head`), and their moving GM
windows (:class:`~ptopipe.sim.periodic.loops.Site`: one per ``pto.partition_view`` whose
offsets move with the loop variable).

The criterion is the ``pl`` interpreter's (``ptopipe.runtime.skip``): the body must be
shift-equivariant - its control flow and values depend on the induction variable only
through ``arith.addi`` / ``arith.subi`` / ``arith.muli`` by a loop-invariant value (and the
casts that keep a value: ``arith.index_cast``, ``arith.extsi``), its ``iter_args`` are passed
through unchanged, and a window that moves is made once per iteration (not in a nested
loop).  A signed or equality ``arith.cmpi`` of a value that moves is a *guard*
(:class:`~ptopipe.sim.periodic.loops.Guard`) when it decides an ``scf.if`` of the body's own
(not in another branch or a nested loop) that gives no results.  Integer arithmetic wraps
at its type's width: a form is affine while it does not, so each value that moves (a
*term*, outside nested loops) is kept with its type's range at every execution, and a skip
stays where none leaves it (:meth:`~ptopipe.sim.periodic.loops.SkipPlan.steady`).
Any other use of a value that moves - another comparison, a division, a nested loop's
bound, a tile operation's scalar - and the statements that read state into a scalar
(``pto.tgetval``, ``pto.load_scalar``, event-id arrays, buffer tokens), a ``func.call`` or an
``scf.while`` in the body make the loop unskippable: it runs statement by statement."""
from __future__ import annotations

from ...sim.periodic.loops import Guard, Site
from ..pto_tree import split_top

_AFFINE = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*"}
#: ``arith.cmpi`` predicates a guard may have (signed: monotone in a value that moves)
_PREDICATES = {"slt": "<", "sle": "<=", "sgt": ">", "sge": ">=", "eq": "==", "ne": "!="}
_SAME = ("arith.index_cast", "arith.extsi")
_OPAQUE = frozenset({"pto.tgetval", "pto.load_scalar", "pto.eventid_array_get", "pto.eventid_array_set",
                     "pto.get_buf", "pto.rls_buf", "func.call", "scf.while", "scf.condition", "func.return",
                     "return"})


class _NotSkippable(Exception):
    pass


def pto_forms(loop) -> tuple[tuple[Site, ...], tuple[Guard, ...], tuple[Site, ...]] | None:
    """The moving windows, the guards and the terms (the values that move, each made in a
    type that wraps: one-dimensional Sites) of the ``scf.for`` statement ``loop``, or None
    when it is not shift-equivariant (module docstring).  A form's invariant values are
    tokens (their value is the frame's)."""
    body = loop.regions[0][0].stmts
    grp = loop.group("iter_args")
    carried = [g[0].text for g in split_top(grp)] if grp else []
    if carried:
        last = body[-1] if body else None
        if last is None or last.name != "scf.yield" or [t.text for t in last.values()] != carried:
            return None                 # (a carried value that changes)
    forms = {loop.toks[0].text: 1}
    sites, guards, terms = [], {}, []
    try:
        _stmts(body, forms, guards, sites, terms, nested=False, top=True)
    except _NotSkippable:
        return None
    return tuple(sites), tuple(guards.values()), tuple(terms)


def _stmts(stmts, forms: dict, guards: dict, sites: list, terms: list, nested: bool, top: bool) -> None:
    for t in stmts:
        name = t.name
        if name == "scf.yield":
            continue
        if name in _OPAQUE:
            raise _NotSkippable
        used = t.used()
        if guards and any(u in guards for u in used):
            if name != "scf.if" or not top or t.results or t.values()[0].text not in guards:
                raise _NotSkippable     # (a guard decides only a branch of the body's own)
        moving = any(u in forms for u in used)
        if name == "arith.constant" or not moving and name not in ("scf.for", "scf.if"):
            continue
        if name == "arith.cmpi":
            pred = _PREDICATES.get(t.toks[0].text)
            if pred is None:
                raise _NotSkippable
            a, b = t.values()[:2]
            guards[t.results[0]] = Guard(t, _binary("-", a, b, forms), pred)
        elif name in _AFFINE or name in _SAME:
            if name in _AFFINE:
                a, b = t.values()[:2]
                form = forms[t.results[0]] = _binary(_AFFINE[name], a, b, forms)
            else:
                form = forms[t.results[0]] = forms[t.values()[0].text]
            if not nested:              # (one that wraps in a nested loop moves no window, decides no guard)
                terms.append(Site(t, (form,), None))
        elif name == "pto.partition_view":
            _window(t, forms, sites, nested)
        elif name == "scf.for":
            if moving:
                raise _NotSkippable     # (its bounds or carried values move)
            inner = t.regions[0][0].stmts
            _stmts(inner, forms, guards, sites, terms, True, False)
            _still_yields(inner, forms, guards)
        elif name == "scf.if":
            if t.values()[0].text in forms:
                raise _NotSkippable
            for region in t.regions:
                _stmts(region[0].stmts, forms, guards, sites, terms, nested, False)
                _still_yields(region[0].stmts, forms, guards)
        else:
            raise _NotSkippable         # (a moving value anywhere else)


def _binary(sym: str, a, b, forms: dict):
    fa, fb = forms.get(a.text), forms.get(b.text)
    if sym == "+":
        return fa if fb is None else fb if fa is None else ("+", fa, fb)
    if sym == "-":
        return fa if fb is None else ("neg", fb) if fa is None else ("-", fa, fb)
    if (fa is None) != (fb is None):
        return ("*", fa, b) if fb is None else ("*", fb, a)
    raise _NotSkippable


def _window(t, forms: dict, sites: list, nested: bool) -> None:
    src = t.values()[0].text
    offs = [x for x in (t.attr("offsets") or [])[1:-1] if x.kind in ("value", "word")]
    sizes = [x for x in (t.attr("sizes") or [])[1:-1] if x.kind in ("value", "word")]
    if src in forms or nested or any(x.text in forms for x in sizes):
        raise _NotSkippable
    sites.append(Site(t, tuple(forms.get(x.text, 0) if x.kind == "value" else 0 for x in offs), None))


def _still_yields(stmts, forms: dict, guards: dict) -> None:
    last = stmts[-1] if stmts else None
    if last is not None and last.name == "scf.yield" and any(v.text in forms or v.text in guards
                                                           for v in last.values()):
        raise _NotSkippable
