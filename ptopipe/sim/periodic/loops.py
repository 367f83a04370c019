"""A loop the fast-forward engine may take whole iterations of (:meth:`.engine.FastForward.head`),
as an interpreter that owns it - the ``pl`` closures, the PTO-AS executor - describes it: its
GM windows that move with the loop variable, the coefficients of their offsets (affine
forms over loop-invariant values) and how far they stay inside their tensors; and its
*guards*, comparisons of a value that moves (a branch on the loop variable, ``if i < n - 1``),
and how far each keeps its truth.  Which loops qualify is the interpreter's to say
(``ptopipe.runtime.skip``, ``ptopipe.codegen.pto_exec.skip``)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Site:
    """A GM window of the loop body whose offsets move with the loop variable."""
    op: object                  # the statement or op that makes the window
    coefs: tuple                # per dimension: the offset's coefficient (an affine form)
    limits: tuple | None        # per dimension: the largest offset inside the tensor (None:
                                # known at run time, kept with the offsets)


@dataclass(frozen=True)
class Guard:
    """A comparison of the loop body whose operands' difference moves with the loop variable:
    ``lhs - rhs`` (an affine form) compared with 0 by ``pred`` (``<``, ``<=``, ``>``, ``>=``,
    ``==``, ``!=``).  It decides a branch: the body is shift-equivariant while it keeps its
    truth."""
    op: object                  # the comparison (an IR op, a statement)
    form: object                # the coefficient of lhs - rhs (an affine form)
    pred: str


INFINITE = 1 << 62


def keeps(d: int, s: int, pred: str) -> int:
    """For how many iterations from the next one on ``x pred 0`` keeps the truth it had for
    ``x = d`` (the last iteration's), ``x`` moving by ``s`` an iteration: the largest ``T``
    such that iterations ``0 .. T`` keep it (-1: the next one flips it; INFINITE: none does)."""
    if s == 0:
        return INFINITE
    if pred == "==" or pred == "!=":            # (x == 0 at one iteration at most)
        if d == 0:
            return -1
        q, r = divmod(-d, s)
        return q - 2 if r == 0 and q >= 1 else INFINITE
    t = 0 if pred == "<" or pred == ">=" else 1  # (the truth is x < t, or its negation)
    if d < t and s > 0:
        return -(-(t - d) // s) - 2
    if d >= t and s < 0:
        return (d - t) // -s - 1
    return INFINITE


def coefficient(form, value) -> int | None:
    """The value of an affine *form*: ``1`` (the loop variable), ``("+", a, b)``, ``("-", a,
    b)``, ``("neg", a)`` or ``("*", a, v)`` with ``v`` a loop-invariant value, ``value(v)``
    giving it; None unless it is an integer (an offset the interpreter truncates is not
    affine)."""
    if form.__class__ is int:
        return form
    k = form[0]
    if k == "neg":
        c = coefficient(form[1], value)
        return None if c is None else -c
    a = coefficient(form[1], value)
    if a is None:
        return None
    if k == "*":
        try:
            v = value(form[2])
        except Exception:               # (not defined in this run of the loop: cannot be told)
            return None
        if not _integer(v):
            return None
        return a * int(v)
    b = coefficient(form[2], value)
    if b is None:
        return None
    return a + b if k == "+" else a - b


@dataclass(frozen=True)
class SkipPlan:
    """A skippable loop as its interpreter runs it: its moving GM windows, each with what its
    last execution had (``seen[k]``: ``[offsets, limits or None]``), its guards with the
    operands each compared last (``compared[k]``: ``[lhs, rhs]``), and how to read the
    invariant values of the coefficients."""
    key: object                 # the loop (an IR op, a statement): the same object at every run of it
    sites: tuple                # Site per moving window
    seen: tuple                 # per site: [its offsets, its limits (Site.limits None)] at its last execution
    value: object               # invariant value -> what it is now
    guards: tuple = ()          # Guard per comparison of a value that moves
    compared: tuple = ()        # per guard: [lhs, rhs] at its last execution (every iteration's)
    terms: tuple = ()           # Site (one dimension) per value that moves in a type that wraps
    held: tuple = ()            # per term: [its value, its type's largest, its type's smallest]

    def steady(self, step: int) -> int:
        """How many iterations from the next one on keep every guard's truth and every term
        inside its type (a term that wraps is no longer affine; the last values were the
        iteration before it's); -1 when that cannot be told (a value that is not an int)."""
        out = INFINITE
        for g, (lhs, rhs) in zip(self.guards, self.compared):
            c = coefficient(g.form, self.value)
            if c is None or not _integer(lhs) or not _integer(rhs):
                return -1
            out = min(out, keeps(lhs - rhs, c * step, g.pred))
        for term, (v, hi, lo) in zip(self.terms, self.held):
            if v is None:
                continue                # (not executed: a branch the loop does not take)
            c = coefficient(term.coefs[0], self.value)
            if c is None or not _integer(v):
                return -1
            out = min(out, _inside(v, c * step, lo, hi))
        return out

    def room(self, step: int) -> int:
        """How many iterations from the next one on keep every moving window inside its
        tensor (the windows last had the offsets of the iteration before it); -1 when that
        cannot be told (a coefficient that is not an integer)."""
        room = None
        for site, seen in zip(self.sites, self.seen):
            offs = seen[0]
            if offs is None:
                continue                # (not executed: a branch the loop never takes)
            for form, o, hi in zip(site.coefs, offs, site.limits or seen[1]):
                c = coefficient(form, self.value)
                if c is None or not _integer(o):
                    return -1
                t = _inside(o, c * step, 0, hi)
                room = t if room is None else min(room, t)
        return INFINITE if room is None else room


def _inside(v: int, s: int, lo: int, hi: int) -> int:
    """For how many iterations from the next one on a value that was ``v`` and moves by ``s``
    an iteration stays in ``[lo, hi]``: the largest ``T`` such that iterations ``0 .. T`` do."""
    if s > 0:
        return (hi - v) // s - 1
    if s < 0:
        return (v - lo) // -s - 1
    return INFINITE


def _integer(v) -> bool:
    """A Python int: arithmetic on one does not wrap (a numpy integer's does)."""
    return v.__class__ is int
