"""Affine reasoning over a kernel's integer scalars for :mod:`.verify_pipes`: what a
symbolic value of :mod:`.pipe_paths` is as an affine expression of the unknowns
(:func:`affine`), a path's facts as linear constraints (:func:`constraints`), counts that
depend on loops of unknown trip count (:class:`Count`, polynomials over trip counts
``max(0, hi - lo)``), and the decision of a conjunction of constraints (:func:`decide`):
a small integer witness when there is one (a box search, smallest values first), "none"
when Fourier-Motzkin elimination, each inequality tightened to the integers, shows no
integer solution, else undecided.  Unknowns are the kernel's scalar parameters (at least
0: the values a launch passes), loop variables of loops of unknown trip count (within
their loop's bounds), other unknowns (free: data read at run time) and *derived* unknowns:
a floor division, remainder, ``min``, ``max`` or product of affine operands (``(n + 15) // 16``,
``pl.min(16, n - 16*i)``; a division toward zero, ``truncdiv`` / ``truncrem`` (MLIR's ``divsi`` / ``remsi``), by a constant is
written with them, by an unknown it is one), one unknown per distinct affine form, tied to its operands by
the linear facts that hold of it (:func:`bounds`: ``16*q <= n + 15 <= 16*q + 15``; ``m <=
a``, ``m <= b``) and, for ``min`` / ``max``, by the case split :func:`decide` makes (``m ==
a`` where ``a <= b``, else ``m == b``; ``x != 0`` it splits into ``x >= 1`` and ``x <= -1``
alike).  A witness gives each derived unknown its operation's value at the witness's other
unknowns, so a witness is a real run's values; a refutation holds for the real values,
which satisfy every fact used."""
from __future__ import annotations

from functools import lru_cache
from itertools import product
from math import gcd

from ..ir.first_step import div_toward_zero, rem_toward_zero

#: the largest box :func:`decide` searches for a witness (points)
MAX_POINTS = 40_000
#: the most inequalities Fourier-Motzkin elimination may hold before it gives up
MAX_ROWS = 400

_CMP = {"lt", "le", "gt", "ge", "eq", "ne"}
_IDENTITY = {"index_cast", "cast"}
#: the integer operations read as derived unknowns (the IR's semantics, as :mod:`.pipe_paths`
#: folds them: ``//`` floors, ``%`` takes the divisor's sign, ``truncdiv`` / ``truncrem`` (MLIR's
#: ``divsi`` / ``remsi``) truncate toward zero; ``mul`` of two unknowns)
_DERIVED = {"floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b, "min": min, "max": max,
            "mul": lambda a, b: a * b, "truncdiv": div_toward_zero, "truncrem": rem_toward_zero}
#: the divisions among them (no value for a divisor of 0)
_DIVISIONS = ("floordiv", "mod", "truncdiv", "truncrem")
#: the most ``min`` / ``max`` unknowns and ``!=`` constraints whose cases :func:`decide`
#: splits (2 ** this cases)
MAX_SPLIT = 6


class Affine:
    """``const + sum(coef * var)`` with integer coefficients; ``vars``: a sorted tuple of
    ``(var, coef)`` with every coef non-zero (hashable: equal expressions are equal)."""
    __slots__ = ("vars", "const")

    def __init__(self, coefs: dict | None = None, const: int = 0):
        self.vars = tuple(sorted(((k, v) for k, v in (coefs or {}).items() if v), key=lambda kv: repr(kv[0])))
        self.const = const

    def coefs(self) -> dict:
        return dict(self.vars)

    def __add__(self, o: "Affine") -> "Affine":
        c = self.coefs()
        for k, v in o.vars:
            c[k] = c.get(k, 0) + v
        return Affine(c, self.const + o.const)

    def scale(self, k: int) -> "Affine":
        return Affine({v: c * k for v, c in self.vars}, self.const * k)

    def __sub__(self, o: "Affine") -> "Affine":
        return self + o.scale(-1)

    def is_const(self) -> bool:
        return not self.vars

    def at(self, values: dict) -> int:
        return self.const + sum(c * values[v] for v, c in self.vars)

    def __eq__(self, o) -> bool:
        return isinstance(o, Affine) and self.vars == o.vars and self.const == o.const

    def __hash__(self) -> int:
        return hash((self.vars, self.const))

    def __repr__(self) -> str:
        return show(self)


def const(k: int) -> Affine:
    return Affine(None, k)


def var(name) -> Affine:
    return Affine({name: 1})


def show(a: Affine) -> str:
    """``a`` in the source's words: ``n + 1``, ``2*m - n``."""
    parts = []
    for v, c in a.vars:
        name = var_name(v)
        if c != 1 and v[0] == "derived" and v[1] in ("floordiv", "mod"):
            name = f"({name})"          # -((-n) // 16), 16*(n // 16): as Python reads them
        term = name if abs(c) == 1 else f"{abs(c)}*{name}"
        parts.append(("- " if c < 0 else "+ ") + term)
    if a.const or not parts:
        parts.append(("- " if a.const < 0 else "+ ") + str(abs(a.const)))
    text = " ".join(parts)
    return text[2:] if text.startswith("+ ") else "-" + text[2:]


def var_name(v) -> str:
    """The name an unknown is shown by: a parameter's name, a loop variable's source name
    (and its loop's line), else where the value comes from."""
    if v[0] == "param":
        return v[1]
    if v[0] == "iv":
        return v[3] if len(v) > 3 else f"the loop variable at {v[1]}"
    if v[0] == "derived":
        _, op, a, b = v
        if op in ("min", "max", "truncdiv", "truncrem"):
            return f"{op}({show(a)}, {show(b)})"
        if op == "mul":
            return f"{_operand(a)}*{_operand(b)}"
        return f"{_operand(a)} {'//' if op == 'floordiv' else '%'} {_operand(b)}"
    return "a value read at run time"


def _operand(a: Affine) -> str:
    text = show(a)
    return text if a.is_const() or (len(a.vars) == 1 and a.vars[0][1] == 1 and not a.const) else f"({text})"


def derived(op: str, a: Affine, b: Affine):
    """The Affine of ``a op b`` (an operation of :data:`_DERIVED`): folded when both are
    constants, the operation is the identity or (min / max) one operand is at least the
    other by its form (:func:`_nonnegative`: max(n, 0) is n), else a derived unknown (one
    per distinct ``(op, a, b)``; None for a division by a constant zero)."""
    if a.is_const() and b.is_const():
        try:
            return const(_DERIVED[op](a.const, b.const))
        except ZeroDivisionError:
            return None
    if op in ("truncdiv", "truncrem") and b.is_const():
        return _toward_zero(op, a, b.const)
    if op == "mul" and (a.is_const() or b.is_const()):
        return b.scale(a.const) if a.is_const() else a.scale(b.const)
    if op in ("min", "max", "mul"):
        if a == b and op != "mul":
            return a
        for x, y in ((a, b), (b, a)):
            if op != "mul" and _nonnegative(x - y):     # x >= y by its form (max(n, 0) is n)
                return x if op == "max" else y
        a, b = sorted((a, b), key=repr)         # commutative: one unknown for both orders
    elif b.is_const():
        if b.const == 0:
            return None
        if b.const == 1:
            return a if op == "floordiv" else const(0)
        if op == "floordiv" and b.const < 0:    # a // -c == (-a) // c
            return derived(op, a.scale(-1), b.scale(-1))
        if op == "floordiv" and a.vars[0][1] < 0:
            # (-x) // c == -((x + c - 1) // c): -(-n // 16) is the unknown of (n + 15) // 16
            return derived(op, a.scale(-1) + const(b.const - 1), b).scale(-1)
        if op == "mod":                         # a % c == a - c * (a // c), floor division
            return a - derived("floordiv", a, b).scale(b.const)
    return var(("derived", op, a, b))


def _toward_zero(op: str, a: Affine, c: int):
    """``a truncdiv c`` / ``a truncrem c`` (toward zero) by a constant ``c`` in floor
    divisions of the same value: ``max(a, 0) // |c| - max(-a, 0) // |c|`` (negated for ``c <
    0``), which :func:`decide` splits by ``a``'s sign; the remainder ``a - c * (a truncdiv c)``
    (None for ``c == 0``)."""
    if c == 0:
        return None
    m = const(abs(c))
    zero = const(0)
    q = derived("floordiv", derived("max", a, zero), m) - derived("floordiv", derived("max", a.scale(-1), zero), m)
    q = q if c > 0 else q.scale(-1)
    return q if op == "truncdiv" else a - q.scale(c)


def _nonnegative(a: Affine) -> bool:
    """Is ``a`` at least 0 by its form (parameters, which are, with coefficients and a
    constant at least 0)?"""
    return a.const >= 0 and all(v[0] == "param" and c > 0 for v, c in a.vars)


#: how large (in magnitude) :func:`magnitude` takes an unknown the kernel does not bound: a
#: parameter without a declared range, a value read at run time (the int32 range: trip counts
#: and sizes)
ASSUMED_MAGNITUDE = 2 ** 31


def magnitude(a: Affine, ranges: dict, depth: int = 0) -> int:
    """A bound on ``|a|`` over the values the verifier proves for: a loop variable of constant
    bounds within them, a parameter within its declared range, a derived unknown by its
    operands' (``|a // b| <= |a|``, ``|a % b| < |b|``, ``|a * b|``), anything else below
    :data:`ASSUMED_MAGNITUDE` (a loop variable of other bounds: by its bounds').  An expression whose bound reaches past 64 bits may wrap on the
    device (MLIR's ``index`` / ``i64``), where its exact value is not the run's."""
    total = abs(a.const)
    for v, c in a.vars:
        total += abs(c) * _var_magnitude(v, ranges, depth)
    return total


def _var_magnitude(v, ranges: dict, depth: int) -> int:
    if depth > 16:
        return ASSUMED_MAGNITUDE
    if v[0] == "derived":
        _, op, a, b = v
        ma, mb = magnitude(a, ranges, depth + 1), magnitude(b, ranges, depth + 1)
        if op in ("floordiv", "truncdiv"):
            return ma
        if op in ("mod", "truncrem"):
            return mb
        return ma * mb if op == "mul" else max(ma, mb)
    lo, hi = ranges.get(v, (None, None))
    if v[0] == "iv":
        lo, hi = (affine(x) for x in (lo, hi))
        if lo is None or hi is None:
            return ASSUMED_MAGNITUDE
        return max(magnitude(lo, ranges, depth + 1), magnitude(hi, ranges, depth + 1))
    if v[0] == "param":
        return max(abs(lo if lo is not None else 0), abs(hi) if hi is not None else ASSUMED_MAGNITUDE)
    return ASSUMED_MAGNITUDE


def is_param(v) -> bool:
    return v[0] == "param"


# -- symbols of pipe_paths as affine expressions -------------------------------------------
def affine(v):
    """The Affine of explorer value ``v`` (an int or a symbol tuple), or None when it is not
    an affine expression of unknowns (a product of unknowns, a division, a float ...)."""
    if v.__class__ is bool or v is None:
        return None
    if isinstance(v, int):
        return const(int(v))
    if v.__class__ is not tuple or not v:
        return None
    head = v[0]
    if head in ("param", "iv"):
        return var(v)
    if head in ("opaque", "join", "result", "carried", "buffer_attr", "subblock"):
        return var(v) if head != "buffer_attr" else None
    if head in _IDENTITY and len(v) == 2:
        return affine(v[1])
    if head == "neg" and len(v) == 2:
        a = affine(v[1])
        return None if a is None else a.scale(-1)
    if head in ("add", "sub", "mul") and len(v) == 3:
        a, b = affine(v[1]), affine(v[2])
        if a is None or b is None:
            return None
        if head == "add":
            return a + b
        if head == "sub":
            return a - b
        if a.is_const():
            return b.scale(a.const)
        if b.is_const():
            return a.scale(b.const)
    if head in _DERIVED and len(v) == 3:
        a, b = affine(v[1]), affine(v[2])
        return None if a is None or b is None else derived(head, a, b)
    return None


def unknowns(v, out: set) -> set:
    """The unknowns (leaf symbols) in value ``v``."""
    if v.__class__ is tuple and v:
        if v[0] in ("param", "iv", "opaque", "join", "result", "carried", "subblock"):
            out.add(v)
        else:
            for x in v[1:]:
                unknowns(x, out)
    return out


def invariant(v) -> bool:
    """Is ``v`` the same in every iteration of every loop (built of parameters and
    constants only)?"""
    return all(u[0] == "param" for u in unknowns(v, set()))


# -- constraints ----------------------------------------------------------------------------
#: a constraint: (Affine e, rel) meaning ``e >= 0`` (rel ">="), ``e == 0`` ("==") or ``e != 0`` ("!=")
def ge(a: Affine, b: Affine) -> tuple:
    return (a - b, ">=")


def condition(sym, value: bool):
    """The constraints saying fact ``sym`` (a condition) has truth ``value``: a list, or
    None when the condition is not affine (a product, a division, ``and`` of unknowns ...)."""
    head = sym[0] if sym.__class__ is tuple and sym else None
    if head == "not" and len(sym) == 2:
        return condition(sym[1], not value)
    if head in ("and", "or") and len(sym) == 3:
        if (head == "and") == value:           # a conjunction: both sides hold (fail)
            a, b = condition(sym[1], value), condition(sym[2], value)
            return None if a is None or b is None else a + b
        return None                            # a disjunction: not one convex region
    if head in _CMP and len(sym) == 3:
        a, b = affine(sym[1]), affine(sym[2])
        if a is None or b is None:
            return None
        op = head if value else {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne",
                                 "ne": "eq"}[head]
        one = const(1)
        return [{"lt": ge(b, a + one), "le": ge(b, a), "gt": ge(a, b + one), "ge": ge(a, b),
                 "eq": (a - b, "=="), "ne": (a - b, "!=")}[op]]
    a = affine(sym)
    if a is None:
        return None
    return [(a, "!=" if value else "==")]


def constraints(facts: dict, ranges: dict) -> tuple:
    """``(constraints, unhandled)`` of a path's ``facts`` (symbol -> truth): the affine
    ones, the loop-variable ranges (``ranges``: iv symbol -> (lo, hi) values) of the loop
    variables they name, every parameter >= 0; ``unhandled``: the facts that are not affine
    (a witness may then not satisfy them)."""
    out, unhandled, names = [], [], set()
    for sym, val in facts.items():
        c = condition(sym, val)
        if c is None:
            unknowns(sym, names)
            unhandled.append(sym)
            continue
        out.extend(c)
        for e, _ in c:
            names.update(v for v, _ in e.vars)
    return out + bounds(names, ranges), unhandled


def bounds(names, ranges: dict) -> list:
    """``>= 0`` for each parameter among ``names``; ``lo <= iv < hi`` for each loop
    variable among them (and the unknowns those bounds name, in turn)."""
    out, seen, todo = [], set(), list(names)
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        if v[0] == "param":
            out.append((var(v), ">="))
            lo, hi = ranges.get(v, (None, None))       # a declared range
            if lo is not None:
                out.append(ge(var(v), const(lo)))
            if hi is not None:
                out.append(ge(const(hi), var(v) + const(1)))
        elif v[0] == "derived":
            _, _, a, b = v
            out.extend(_derived_facts(v))
            todo.extend(u for e in (a, b) for u, _ in e.vars)
        elif v in ranges:
            lo, hi = (affine(x) for x in ranges[v])
            if lo is not None:
                out.append(ge(var(v), lo))
                todo.extend(u for u, _ in lo.vars)
            if hi is not None:
                out.append(ge(hi, var(v) + const(1)))
                todo.extend(u for u, _ in hi.vars)
    return out


def _derived_facts(v) -> list:
    """The linear facts that hold of derived unknown ``v``: a floor division by a constant
    ``c`` pinned exactly (``c*q <= a <= c*q + c - 1`` for ``c > 0``), ``min(a, b)`` at most
    each operand, ``max(a, b)`` at least each; none for a division by an unknown."""
    _, op, a, b = v
    q = var(v)
    if op == "floordiv" and b.is_const():
        c = b.const
        if c > 0:
            return [ge(a, q.scale(c)), ge(q.scale(c) + const(c - 1), a)]
        return [ge(q.scale(c), a), ge(a, q.scale(c) + const(c + 1))]
    if op == "min":
        return [ge(a, q), ge(b, q)]
    if op == "max":
        return [ge(q, a), ge(q, b)]
    if op == "mod" and b.is_const():            # |a % c| < |c|
        c = abs(b.const)
        return [ge(q, const(1 - c)), ge(const(c - 1), q)]
    return []


def _cases(cons, names) -> list:
    """The cases :func:`decide` refutes one by one: which operand each ``min`` / ``max``
    unknown among ``names`` equals (``min(a, b) == a`` where ``a <= b``) and which side of 0
    each ``!=`` constraint of ``cons`` is on; ``[[]]`` without any, or with more than
    :data:`MAX_SPLIT` (then their :func:`bounds` facts alone, the ``!=`` left out)."""
    picks = [[[(var(v) - this, "=="), ge(other, this) if v[1] == "min" else ge(this, other)]
              for this, other in ((v[2], v[3]), (v[3], v[2]))]
             for v in names if v[0] == "derived" and v[1] in ("min", "max")]
    picks += [[[(e - const(1), ">=")], [(e.scale(-1) - const(1), ">=")]] for e, rel in cons if rel == "!="]
    if not picks or len(picks) > MAX_SPLIT:
        return [[]]
    return [[c for part in combo for c in part] for combo in product(*picks)]


def complete(values: dict, names) -> dict | None:
    """``values`` (of the other unknowns) with each derived unknown among ``names`` given
    its operation's value there; None where an operation has no value (a division by 0)."""
    out = dict(values)
    todo = [v for v in names if v[0] == "derived"]
    while todo:
        rest = []
        for v in todo:
            _, op, a, b = v
            if all(u in out for e in (a, b) for u, _ in e.vars):
                x, y = a.at(out), b.at(out)
                if y == 0 and op in _DIVISIONS:
                    return None             # no value
                out[v] = _DERIVED[op](x, y)
            else:
                rest.append(v)
        if len(rest) == len(todo):
            return None
        todo = rest
    return out


def holds(cons, values: dict) -> bool:
    for e, rel in cons:
        x = e.at(values)
        if (rel == ">=" and x < 0) or (rel == "==" and x != 0) or (rel == "!=" and x == 0):
            return False
    return True


def decide(cons: list, ranges: dict | None = None, witness: bool = True):
    """``("sat", witness)`` (a dict unknown -> int, small values first), ``("unsat",
    None)`` (no integer solution: :func:`_infeasible`) or ``("unknown", None)`` of the
    constraints ``cons`` and the :func:`bounds` of the unknowns they name.  Without
    ``witness`` no point is searched for (a caller asking only whether ``cons`` is
    unsatisfiable): "unsat" or "unknown"."""
    ranges = ranges or {}
    cons = cons + bounds({v for e, _ in cons for v, _ in e.vars}, ranges)
    names = sorted(_operands({v for e, _ in cons for v, _ in e.vars}), key=repr)
    if not names:
        return ("sat", {}) if holds(cons, {}) else ("unsat", None)
    rows = [(e, r) for e, r in cons if r != "!="]
    if all(_infeasible(rows + case) for case in _cases(cons, names)):
        return "unsat", None
    if not witness:
        return "unknown", None
    w = _search(cons, names)
    if w is None:
        w = _corners(cons, names, ranges)
    if w is not None and any(v in ranges and any(affine(x) is None for x in ranges[v] if x is not None)
                             for v in names if v[0] == "iv"):
        return "unknown", None          # a loop bound left out: the witness may not be real
    return ("sat", w) if w is not None else ("unknown", None)


def _operands(names: set) -> set:
    """``names`` and the unknowns in the operands of its derived unknowns, in turn."""
    todo, out = list(names), set()
    while todo:
        v = todo.pop()
        if v not in out:
            out.add(v)
            if v[0] == "derived":
                todo.extend(u for e in v[2:] for u, _ in e.vars)
    return out


def _search(cons, names):
    """The first point satisfying ``cons`` in a box around the constraints' constants, small
    values first (by the sum of each unknown's rank in its own order); the derived unknowns
    are not searched but computed from the others (:func:`complete`)."""
    every, names = names, [v for v in names if v[0] != "derived"]
    if not names:
        values = complete({}, every)
        return values if values is not None and holds(cons, values) else None
    span = max([abs(e.const) for e, _ in cons] + [1]) + 2
    # a division by c reaches a constant's value only c times as far out (n // 16 >= 3: n = 48)
    span *= max([abs(v[3].const) for v in every if v[0] == "derived" and v[3].is_const()] + [1])
    per = max(2, int(MAX_POINTS ** (1 / len(names))))
    span = min(span, per // 2)
    low = {}                            # the lower bounds a constraint on one unknown sets
    for e, rel in cons:
        if rel == ">=" and len(e.vars) == 1 and e.vars[0][1] == 1:
            v = e.vars[0][0]
            low[v] = max(low.get(v, -e.const), -e.const)
    orders = []
    for v in names:
        if v[0] == "param" or v in low:
            start = max(0, low.get(v, 0)) if v[0] == "param" else low[v]
            orders.append([start + k for k in range(2 * span + 1)])
        else:                           # no lower bound: 0, -1, 1, -2, 2 ...
            orders.append([k // 2 if k % 2 == 0 else -(k // 2 + 1) for k in range(2 * span + 1)])
    for total in range(sum(len(o) - 1 for o in orders) + 1):
        for idx in _compositions(total, [len(o) for o in orders]):
            values = complete({v: o[i] for v, o, i in zip(names, orders, idx)}, every)
            if values is not None and holds(cons, values):
                return values
    return None


#: the most unknowns whose range corners :func:`_corners` tries (2 ** this points)
MAX_CORNERS = 8


def _corners(cons, names, ranges: dict):
    """The first point satisfying ``cons`` among the corners of the unknowns' ranges - each
    at its least or its greatest value, a loop variable's bounds evaluated at the values of
    the unknowns they name - else None: a point past the small-values search of
    :func:`_search` (a trip count ``n`` declared up to 600 over a tensor of 512 rows fails
    at ``n = 600``, ``i = 599``)."""
    free = [v for v in names if v[0] != "derived"]
    if not free or len(free) > MAX_CORNERS:
        return None

    def ends(v, values):
        """(least, greatest or None) of ``v`` at ``values``; None while a bound names an
        unknown not yet given a value."""
        if v[0] == "param":
            lo, hi = ranges.get(v, (None, None))
            return max(lo or 0, 0), (hi - 1 if hi is not None else None)
        lo, hi = (affine(x) for x in ranges.get(v, (None, None)))
        if any(u not in values for a in (lo, hi) if a is not None for u, _ in a.vars):
            return None
        return (lo.at(values) if lo is not None else 0), (hi.at(values) - 1 if hi is not None else None)

    for corner in product((1, 0), repeat=len(free)):
        values, todo = {}, list(zip(free, corner))
        while todo:                     # parameters first, then the loops whose bounds they set
            rest = []
            for v, top in todo:
                e = ends(v, values)
                if e is None:
                    rest.append((v, top))
                else:
                    values[v] = e[1] if top and e[1] is not None else e[0]
            if len(rest) == len(todo):
                return None
            todo = rest
        values = complete(values, names)
        if values is not None and holds(cons, values):
            return values
    return None


def _compositions(total: int, sizes: list):
    """Index tuples ``idx`` with ``sum(idx) == total`` and ``idx[k] < sizes[k]``."""
    if len(sizes) == 1:
        if total < sizes[0]:
            yield (total,)
        return
    for i in range(min(total, sizes[0] - 1) + 1):
        for rest in _compositions(total - i, sizes[1:]):
            yield (i,) + rest


def _tighten(c: dict, k: int) -> tuple:
    """Inequality ``sum(c[v] * v) + k >= 0`` over integers divided by the gcd ``g`` of its
    coefficients: ``sum(c[v] / g * v) + floor(k / g) >= 0`` holds of the same integer points
    (``16*j >= 49`` is ``j >= 4``), and cuts rational points between them."""
    g = 0
    for x in c.values():
        g = gcd(g, x)
    return ({v: x // g for v, x in c.items()}, k // g) if g > 1 else (c, k)


def _cost(rows, v) -> tuple:
    """The order :func:`_infeasible` eliminates unknowns in: first those whose coefficients
    are all 1 on one side (the integer points of the projection are then exactly those of
    the rows, no bound lost to the tightening), then the fewest rows made."""
    pos = [r[0][v] for r in rows if r[0].get(v, 0) > 0]
    neg = [-r[0][v] for r in rows if r[0].get(v, 0) < 0]
    return (not (all(x == 1 for x in pos) or all(x == 1 for x in neg)), len(pos) * len(neg))


def _infeasible(cons) -> bool:
    """Fourier-Motzkin with each inequality tightened to the integers (:func:`_tighten`): no
    integer point satisfies the inequalities / equalities ``cons``."""
    return _refuted(frozenset(cons))


@lru_cache(maxsize=4096)
def _refuted(cons: frozenset) -> bool:
    """:func:`_infeasible` of a set of constraints (their order and repeats change nothing):
    a proof asks the same few sets again and again (each case of :func:`_cases`, each bound
    a path checks), about three times each."""
    rows = []
    for e, rel in cons:
        rows.append(_tighten(e.coefs(), e.const))
        if rel == "==":
            rows.append(_tighten({k: -v for k, v in e.coefs().items()}, -e.const))
    names = sorted({v for c, _ in rows for v in c}, key=repr)
    while names:
        v = min(names, key=lambda u: _cost(rows, u))
        names.remove(v)
        pos = [r for r in rows if r[0].get(v, 0) > 0]
        neg = [r for r in rows if r[0].get(v, 0) < 0]
        rest = [r for r in rows if not r[0].get(v, 0)]
        for (cp, kp) in pos:
            for (cn, kn) in neg:
                a, b = cp[v], -cn[v]
                m = a * b // gcd(a, b)
                fa, fb = m // a, m // b
                c = {k: cp.get(k, 0) * fa + cn.get(k, 0) * fb for k in set(cp) | set(cn)}
                c = {k: x for k, x in c.items() if x}
                rest.append(_tighten(c, kp * fa + kn * fb))
        rows = [r for r in rest if r[0] or r[1] < 0]
        if any(not c and k < 0 for c, k in rows):
            return True
        if len(rows) > MAX_ROWS:
            return False
    return any(not c and k < 0 for c, k in rows)


def witness_text(w: dict) -> str:
    """A witness in words: ``flag=2`` (parameters first, then loop variables)."""
    items = sorted(w.items(), key=lambda kv: (not is_param(kv[0]), var_name(kv[0])))
    return ", ".join(f"{var_name(k)}={v}" + (f" (in the loop at {k[1]})" if k[0] == "iv" else "")
                     for k, v in items if k[0] in ("param", "iv"))


# -- counts over loops of unknown trip count ------------------------------------------------
class Count:
    """A number of pushes or pops: a polynomial over trip counts of loops of unknown trip
    count, ``terms``: monomial (a sorted tuple of trips ``(lo, hi)`` Affines: ``max(0, hi -
    lo)``) -> integer coefficient."""
    __slots__ = ("terms",)

    def __init__(self, terms: dict | None = None):
        self.terms = {k: v for k, v in (terms or {}).items() if v}

    @staticmethod
    def of(k: int) -> "Count":
        return Count({(): k})

    @staticmethod
    def trips(lo: Affine, hi: Affine) -> "Count":
        return Count({((lo, hi),): 1})

    def __add__(self, o: "Count") -> "Count":
        t = dict(self.terms)
        for k, v in o.terms.items():
            t[k] = t.get(k, 0) + v
        return Count(t)

    def __sub__(self, o: "Count") -> "Count":
        return self + Count({k: -v for k, v in o.terms.items()})

    def __mul__(self, o: "Count") -> "Count":
        t = {}
        for ka, va in self.terms.items():
            for kb, vb in o.terms.items():
                k = tuple(sorted(ka + kb, key=repr))
                t[k] = t.get(k, 0) + va * vb
        return Count(t)

    def __eq__(self, o) -> bool:
        return isinstance(o, Count) and self.terms == o.terms

    def is_zero(self) -> bool:
        return not self.terms

    def trip_set(self) -> list:
        return sorted({t for k in self.terms for t in k}, key=repr)

    def cases(self):
        """``(constraints, Affine)`` per case of the trips' signs (each trip is ``hi - lo``
        when that is >= 0, else 0): the count as an Affine in that case, a product of two
        unknown trip counts a derived unknown (no facts bound it, so it proves only what
        cancels; a witness computes it, so a count it makes differ is a real run's)."""
        trips = self.trip_set()
        for signs in product((True, False), repeat=len(trips)):
            cons, value = [], {}
            for (lo, hi), runs in zip(trips, signs):
                cons.append(ge(hi, lo) if runs else ge(lo, hi))
                value[(lo, hi)] = (hi - lo) if runs else const(0)
            total = const(0)
            for mono, c in self.terms.items():
                term = const(c)
                for t in mono:
                    f = value[t]
                    if term.is_const() or f.is_const():
                        term = f.scale(term.const) if term.is_const() else term.scale(f.const)
                    else:
                        term = derived("mul", term, f)
                total = total + term
            yield cons, total

    def __repr__(self) -> str:
        parts = []
        for mono, c in sorted(self.terms.items(), key=repr):
            factors = [f"max(0, {show(hi - lo)})" for lo, hi in mono]
            parts.append("*".join(([str(c)] if c != 1 or not factors else []) + factors))
        return " + ".join(parts) or "0"

    def text(self) -> str:
        """The count in the source's words (``n + 1``; trip counts as ``hi - lo``)."""
        total = const(0)
        for mono, c in self.terms.items():
            if len(mono) > 1:
                return repr(self)
            total = total + ((mono[0][1] - mono[0][0]).scale(c) if mono else const(c))
        return show(total)
