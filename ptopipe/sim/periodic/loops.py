"""A loop the fast-forward engine may take whole iterations of (:meth:`.engine.FastForward.head`),
as an interpreter that owns it - the ``pl`` closures, the PTO-AS executor - describes it: its
GM windows that move with the loop variable, the coefficients of their offsets (affine
forms over loop-invariant values) and how far they stay inside their tensors.  Which loops
qualify is the interpreter's to say (``ptopipe.runtime.skip``, ``ptopipe.codegen.pto_exec.skip``)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Site:
    """A GM window of the loop body whose offsets move with the loop variable."""
    op: object                  # the statement or op that makes the window
    coefs: tuple                # per dimension: the offset's coefficient (an affine form)
    limits: tuple | None        # per dimension: the largest offset inside the tensor (None:
                                # known at run time, kept with the offsets)


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
        v = value(form[2])
        if v.__class__ is bool or not hasattr(v, "__index__"):
            return None
        return a * int(v)
    b = coefficient(form[2], value)
    if b is None:
        return None
    return a + b if k == "+" else a - b


@dataclass(frozen=True)
class SkipPlan:
    """A skippable loop as its interpreter runs it: its moving GM windows, each with what its
    last execution had (``seen[k]``: ``[offsets, limits or None]``), and how to read the
    invariant values of the coefficients."""
    key: object                 # the loop (an IR op, a statement): the same object at every run of it
    sites: tuple                # Site per moving window
    seen: tuple                 # per site: [its offsets, its limits (Site.limits None)] at its last execution
    value: object               # invariant value -> what it is now

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
                if c is None or o.__class__ is bool or not hasattr(o, "__index__"):
                    return -1
                s = c * step            # (its move per iteration)
                o = int(o)
                if s > 0:
                    t = (hi - o) // s - 1
                elif s < 0:
                    t = o // -s - 1
                else:
                    continue
                room = t if room is None else min(room, t)
        return (1 << 62) if room is None else room
