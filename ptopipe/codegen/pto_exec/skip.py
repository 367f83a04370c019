"""Which ``scf.for`` loops of a PTO-AS function the fast-forward engine may take whole
iterations of (:meth:`ptopipe.sim.periodic.engine.FastForward.head`), and their moving GM
windows (:class:`~ptopipe.sim.periodic.loops.Site`: one per ``pto.partition_view`` whose
offsets move with the loop variable).

The criterion is the ``pl`` interpreter's (``ptopipe.runtime.skip``): the body must be
shift-equivariant - its control flow and values depend on the induction variable only
through ``arith.addi`` / ``arith.subi`` / ``arith.muli`` by a loop-invariant value (and the
casts that keep a value: ``arith.index_cast``, ``arith.extsi``), its ``iter_args`` are passed
through unchanged, and a window that moves is made once per iteration (not in a nested
loop).  Integer arithmetic wraps at its type's width: a form is affine while it does not,
and the offsets it gives stay inside their tensor (the engine checks that), far from it.
Any other use of a value that moves - a comparison, a division, a branch or a nested loop's
bound, a tile operation's scalar - and the statements that read state into a scalar
(``pto.tgetval``, ``pto.load_scalar``, event-id arrays, buffer tokens), a ``func.call`` or an
``scf.while`` in the body make the loop unskippable: it runs statement by statement."""
from __future__ import annotations

from ...sim.periodic.loops import Site
from ..pto_tree import split_top

_AFFINE = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*"}
_SAME = ("arith.index_cast", "arith.extsi")
_OPAQUE = frozenset({"pto.tgetval", "pto.load_scalar", "pto.eventid_array_get", "pto.eventid_array_set",
                     "pto.get_buf", "pto.rls_buf", "func.call", "scf.while", "scf.condition", "func.return",
                     "return"})


class _NotSkippable(Exception):
    pass


def pto_forms(loop) -> tuple[Site, ...] | None:
    """The moving windows of the ``scf.for`` statement ``loop``, or None when it is not
    shift-equivariant (module docstring).  A form's invariant values are tokens (their value
    is the frame's)."""
    body = loop.regions[0][0].stmts
    grp = loop.group("iter_args")
    carried = [g[0].text for g in split_top(grp)] if grp else []
    if carried:
        last = body[-1] if body else None
        if last is None or last.name != "scf.yield" or [t.text for t in last.values()] != carried:
            return None                 # (a carried value that changes)
    forms = {loop.toks[0].text: 1}
    sites = []
    try:
        _stmts(body, forms, sites, nested=False)
    except _NotSkippable:
        return None
    return tuple(sites)


def _stmts(stmts, forms: dict, sites: list, nested: bool) -> None:
    for t in stmts:
        name = t.name
        if name == "scf.yield":
            continue
        if name in _OPAQUE:
            raise _NotSkippable
        moving = any(u in forms for u in t.used())
        if name == "arith.constant" or not moving and name not in ("scf.for", "scf.if"):
            continue
        if name in _AFFINE:
            a, b = t.values()[:2]
            forms[t.results[0]] = _binary(_AFFINE[name], a, b, forms)
        elif name in _SAME:
            forms[t.results[0]] = forms[t.values()[0].text]
        elif name == "pto.partition_view":
            _window(t, forms, sites, nested)
        elif name == "scf.for":
            if moving:
                raise _NotSkippable     # (its bounds or carried values move)
            inner = t.regions[0][0].stmts
            _stmts(inner, forms, sites, True)
            _still_yields(inner, forms)
        elif name == "scf.if":
            if t.values()[0].text in forms:
                raise _NotSkippable
            for region in t.regions:
                _stmts(region[0].stmts, forms, sites, nested)
                _still_yields(region[0].stmts, forms)
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


def _still_yields(stmts, forms: dict) -> None:
    last = stmts[-1] if stmts else None
    if last is not None and last.name == "scf.yield" and any(v.text in forms for v in last.values()):
        raise _NotSkippable
