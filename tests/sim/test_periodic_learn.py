"""The fast-forward engine's learning shortcuts are the plain definitions: the period found in
a core's log (:func:`~ptopipe.sim.periodic.engine.period_of`) is the shortest in which its
last calls repeat three times, and the fields the snapshot walk reads off an object in one
call (:func:`~ptopipe.sim.periodic.walk.fields_of`) are its fields read one by one, and what
it enters, asked of the class (:func:`~ptopipe.sim.periodic.walk.walkable`), is what the
object itself answers."""
from __future__ import annotations

import enum
from functools import partial
from types import SimpleNamespace

import greenlet
import numpy as np
from hypothesis import given, settings, strategies as st

from ptopipe.sim.periodic.engine import MAX_PERIOD, PERIOD_WINDOW, period_of
from ptopipe.sim.periodic.calls import Fresh
from ptopipe.sim.periodic.walk import SKIP_FIELDS, fields_by_name, fields_changed, fields_now, fields_of


def _brute_period(sigs):
    sigs = sigs[-3 * MAX_PERIOD:]
    n = len(sigs)
    for p in range(1, n // 3 + 1):
        # three repeats, and every call of at least the last PERIOD_WINDOW (as far back as
        # the log goes) is the one p calls before it
        w = max(2 * p, min(n - p, PERIOD_WINDOW))
        if all(sigs[n - k] == sigs[n - k - p] for k in range(1, w + 1)):
            return p
    return None


# a log: a prefix of calls, then a motif repeated (often whole, sometimes cut short), then noise
logs = st.builds(lambda pre, motif, times, cut, tail: pre + motif * times + motif[:cut] + tail,
                 st.lists(st.integers(0, 3), max_size=12), st.lists(st.integers(0, 3), min_size=1, max_size=9),
                 st.integers(0, 5), st.integers(0, 8), st.lists(st.integers(0, 3), max_size=2))


@settings(max_examples=150, deadline=None)
@given(logs)
def test_the_period_is_the_shortest_that_repeats_three_times_and_over_the_window(sigs):
    log = [SimpleNamespace(sig=s) for s in sigs]
    assert period_of(log) == _brute_period(sigs)


def test_three_calls_alike_in_a_row_are_not_a_period_of_one():
    """Three pops at one line end a loop of period 9 (3 pops, 2 adds, 3 frees, a store)."""
    loop = ["pop", "pop", "pop", "add", "add", "free", "free", "free", "store"]
    assert period_of([SimpleNamespace(sig=s) for s in loop * 5 + loop[:3]]) == 9
    assert period_of([SimpleNamespace(sig="pop")] * 40) == 1


def test_a_period_longer_than_the_longest_looked_for_is_none():
    motif = list(range(MAX_PERIOD + 1))
    log = [SimpleNamespace(sig=s) for s in motif * 3]
    assert period_of(log) is None and _brute_period(motif * 3) is None
    assert period_of([SimpleNamespace(sig=s) for s in list(range(MAX_PERIOD)) * 3]) == MAX_PERIOD


class _Slots:
    __slots__ = ("a", "b", "c", "ff")


class _Derived(_Slots):
    __slots__ = ("d",)


class _One:
    __slots__ = ("x",)


class _Both:
    __slots__ = ("s", "t", "__dict__")


def _one_by_one(o):
    out = [(k, v) for k, v in o.__dict__.items() if k not in SKIP_FIELDS] if hasattr(o, "__dict__") else []
    for c in type(o).__mro__:
        for k in c.__dict__.get("__slots__", ()):
            if k not in ("__dict__", "__weakref__") and k not in SKIP_FIELDS and hasattr(o, k):
                out.append((k, getattr(o, k)))
    return out


def _made(cls, values: dict):
    o = cls()
    for k, v in values.items():
        setattr(o, k, v)
    return o


@given(st.sampled_from([(_Slots, "abc"), (_Derived, "abcd"), (_One, "x"), (_Both, "stuv")]),
       st.data())
def test_fields_read_at_once_are_the_fields_read_one_by_one(kind, data):
    cls, names = kind
    # any slots left unset, some values shared objects; "ff" is no machine state
    chosen = data.draw(st.lists(st.sampled_from(tuple(names) + ("ff",) * (cls in (_Slots, _Derived))), unique=True))
    o = _made(cls, {k: data.draw(st.one_of(st.integers(), st.none(), st.just([1]))) for k in chosen})
    assert fields_of(o) == _one_by_one(o)


@given(st.sampled_from([(_Slots, "abc"), (_Derived, "abcd"), (_One, "x"), (_Both, "stuv")]), st.data())
def test_the_fields_a_call_changed_are_those_whose_value_is_another_object(kind, data):
    """What a learned call changed on an operand (read at once before and after it) is what
    comparing its fields one by one finds: every field present after the call whose value
    is not the very object it held before (a field set or unset meanwhile included)."""
    cls, names = kind
    values = st.one_of(st.integers(), st.none(), st.just([1]))
    o = _made(cls, {k: data.draw(values) for k in data.draw(st.lists(st.sampled_from(names), unique=True))})
    was = fields_now(o)
    before = dict(_one_by_one(o))
    assert fields_by_name(o, was) == before
    for k in data.draw(st.lists(st.sampled_from(names), unique=True)):
        if data.draw(st.booleans()) and hasattr(o, k):
            delattr(o, k)
        else:
            setattr(o, k, data.draw(st.one_of(values, st.just(getattr(o, k, None)))))
    assert fields_changed(o, was) == [(k, v) for k, v in _one_by_one(o) if k not in before or before[k] is not v]


def test_an_operand_given_again_where_it_first_appeared_is_known_by_identity():
    """An object first met while learning is fresh (known by where it appeared: the ``pl``
    interpreter makes a Tile per TPOP) until the same function called from the same line
    gives it at the same position again - the next iteration's call: then it is the core's
    own, and the signatures of the calls using it repeat from that iteration on.  A new
    object per call stays fresh, and an object only used by later calls of its iteration
    (another function, or another position) is an earlier call's."""
    def TPOP(*a): pass
    def TMOV(*a): pass
    fresh = Fresh()
    pipe, kept = object(), object()
    sigs = []
    for it in range(4):
        made = object()                                    # (a new tile per pop)
        sigs.append((fresh.sign(TPOP, (pipe, kept, made), None, 2 * it, site="k.py:5")[0],
                     fresh.sign(TMOV, (kept, made), None, 2 * it + 1, site="k.py:5")[0]))
    assert sigs[0] != sigs[1]                              # (first met in the first iteration)
    assert sigs[1] == sigs[2] == sigs[3]
    assert sigs[3][0][1:] == (id(pipe), id(kept), sigs[0][0][3])      # ((new, Tile) each time)
    assert sigs[3][1][2] == sigs[0][1][2]                  # (the pop's tile, one call back)


def _walkable_per_object(o) -> bool:
    """The plain definition: what the walk enters, asked of the object itself."""
    t = o.__class__
    if t is list or t is dict or t is set:
        return True
    if isinstance(o, (type, greenlet.greenlet, np.ndarray, tuple, partial, enum.Enum)):
        return False
    if t.__module__.startswith(("numpy", "builtins", "enum", "functools")):
        return False
    return hasattr(o, "__dict__") or hasattr(t, "__slots__")


def test_walkable_by_class_is_walkable_per_object():
    """The walk asks its class whether to enter an object (cached per class): the same answer
    as asking the object, for every object a finished run's machine holds and for the kinds
    of values its fields hold."""
    import ptopipe
    from ptopipe.isa import DIR_C2V, TILE_UP_DOWN, Tile, TileType, float32
    from ptopipe.sim.periodic.walk import walkable

    class Slotted:
        __slots__ = ("a",)

    class Both(Slotted):
        pass

    res = ptopipe.run(None, (lambda: None, None), {}, checks=False)
    roots = [res.cluster, *res.cluster.cores, Tile(TileType.Vec, float32, 8, 16), Slotted(), Both(),
             SimpleNamespace(x=1), [1], {1: 2}, {3}, (4,), np.zeros(2), np.float32(1), partial(print),
             TILE_UP_DOWN, DIR_C2V, int, 5, 2.5, "s", None, greenlet.getcurrent()]
    seen, todo = set(), list(roots)
    while todo and len(seen) < 5000:
        o = todo.pop()
        if id(o) in seen:
            continue
        seen.add(id(o))
        assert walkable(o) == _walkable_per_object(o), type(o)
        if _walkable_per_object(o):
            todo.extend(v for _, v in fields_of(o))
