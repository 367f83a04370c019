"""The machine state the fast-forward engine snapshots: every mutable object reachable from
the cluster, its cores and the objects the kernels' calls use, in a fixed order, with the
values of its fields."""
from __future__ import annotations

import enum
from collections import deque
from functools import lru_cache, partial
from operator import attrgetter

import greenlet
import numpy as np

# fields of the machine state that are the scheduler's (who runs, who waits): neither
# compared nor written back (materialize reconciles them)
SCHEDULER_FIELDS = frozenset({"state", "waiting", "waiter", "glet", "limit"})
# fields that are not machine state: never walked (``_views``: a tile's or ring's cache of
# memory views by address, rebuilt on demand - a kernel's new Tile per pop has its own)
SKIP_FIELDS = frozenset({"pending", "marks", "main", "steps", "_next", "deadline", "ff", "trace", "waits",
                          "signals", "context", "pool", "kernel", "explainers", "annotators", "hinters",
                          "finishers", "carried_hooks", "warnings", "policy", "costs", "event_words", "op_word",
                          "loc_override", "cluster", "checker", "platform", "memories", "gm", "model", "_views"})


class _All:
    """Every field (of a list or dict held in a counting or a time field)."""

    def __contains__(self, key) -> bool:
        return True


ALL = _All()


class Walk:
    """Every mutable object of the machine state reachable from ``roots``, in a fixed order,
    with its fields' values."""

    def __init__(self, roots):
        self.objs: list = []
        self._place: dict = {}
        self.fields: list = []        # per object: [(key, value)]
        # per object: the names of its fields that count events and those that are simulated
        # times (its class's ``counter_fields`` / ``time_fields``; ALL: a list or dict held in
        # such a field)
        self.counters: list = []
        self.times: list = []
        todo = deque((o, (), ()) for o in roots)
        while todo:
            o, counting, timing = todo.popleft()
            if id(o) in self._place or not walkable(o):
                continue
            self._place[id(o)] = len(self.objs)
            self.objs.append(o)
            items = fields_of(o)
            self.fields.append(items)
            counting = counting or getattr(o.__class__, "counter_fields", ())
            timing = timing or getattr(o.__class__, "time_fields", ())
            self.counters.append(counting)
            self.times.append(timing)
            for k, v in items:
                if k not in SCHEDULER_FIELDS:
                    children_of(v, todo, ALL if counting is ALL or k in counting else (),
                                ALL if timing is ALL or k in timing else ())

    def place(self, o):
        return self._place.get(id(o))


def walkable(o) -> bool:
    """An object of the machine state to walk (a mutable one with fields, a list, dict or set)."""
    return _walkable(o.__class__)


@lru_cache(maxsize=None)
def _walkable(t) -> bool:
    """(By class: whether an object is walked depends on its class alone - an instance of a
    class with a ``__dict__`` has one.)"""
    if t is list or t is dict or t is set:
        return True
    if issubclass(t, (type, greenlet.greenlet, np.ndarray, tuple, partial, enum.Enum)):
        return False
    if t.__module__.startswith(("numpy", "builtins", "enum", "functools")):
        return False
    return t.__dictoffset__ != 0 or hasattr(t, "__slots__")


def fields_of(o) -> list:
    t = o.__class__
    if t is list:
        return list(enumerate(o))
    if t is dict:
        return [(k, v) for k, v in o.items() if not (k.__class__ is str and k in SKIP_FIELDS)]
    if t is set:
        return [("set", frozenset(id(x) if walkable(x) else x for x in o))]
    d = getattr(o, "__dict__", None)
    out = [(k, v) for k, v in d.items() if k not in SKIP_FIELDS] if d else []
    names, get = _slot_getter(t)
    if get is not None:
        try:
            out.extend(zip(names, get(o)))          # (every slot set: one call)
            return out
        except AttributeError:
            pass
    for k in names:
        try:
            out.append((k, getattr(o, k)))
        except AttributeError:              # (an unset slot)
            pass
    return out


def fields_now(o):
    """``o``'s fields as they are now, for :func:`fields_changed` after a call changed some:
    a slotted object's slot values at once (a tuple; one getter call), else its fields by
    name (a dict)."""
    t = o.__class__
    if t is not list and t is not dict and t is not set and getattr(o, "__dict__", None) is None:
        get = _slot_getter(t)[1]
        if get is not None:
            try:
                return get(o)
            except AttributeError:          # (an unset slot)
                pass
    return dict(fields_of(o))


def fields_by_name(o, was) -> dict:
    """What :func:`fields_now` gave for ``o`` as a dict by field name."""
    return dict(zip(_slot_getter(o.__class__)[0], was)) if was.__class__ is tuple else was


def fields_changed(o, was) -> list:
    """The ``(field, value)`` of ``o`` whose value is not the very object it was when
    :func:`fields_now` gave ``was`` (a field set since included)."""
    if was.__class__ is tuple:
        names, get = _slot_getter(o.__class__)
        try:
            return [(k, v) for k, v, w in zip(names, get(o), was) if v is not w]
        except AttributeError:              # (a slot unset since)
            was = fields_by_name(o, was)
    return [(k, v) for k, v in fields_of(o) if k not in was or was[k] is not v]


@lru_cache(maxsize=None)
def _slot_getter(t) -> tuple:
    """The machine-state slots of class ``t`` and one getter of all of them (None: fewer
    than two, got one by one)."""
    names = _slots(t)
    return names, attrgetter(*names) if len(names) > 1 else None


@lru_cache(maxsize=None)
def _slots(t) -> tuple:
    """The slots of class ``t`` that hold machine state (every class of its MRO's)."""
    return tuple(k for c in t.__mro__ for k in c.__dict__.get("__slots__", ())
                 if k not in ("__dict__", "__weakref__") and k not in SKIP_FIELDS)


def children_of(v, todo, counting, timing) -> None:
    if isinstance(v, tuple):
        for x in v:
            children_of(x, todo, counting, timing)
    elif walkable(v):
        todo.append((v, counting, timing))
