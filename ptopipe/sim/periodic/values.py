"""Values of the machine state as the fast-forward engine compares them: a *form* (what
must be equal from one block to the next) and the numbers that may move (ints, the offsets
of views of the memories); a value whose numbers move by one constant per block is a
:class:`Moving`, and :func:`maker_of` builds it for any block."""
from __future__ import annotations

import enum
import math
from functools import partial

import numpy as np

tuple_new = tuple.__new__      # a tuple or tuple subclass (an Event, a SourceLoc) from its items


class Unsettled(Exception):
    """The machine does not move by one constant per block (why)."""



# -- values: a form, and the numbers that move ------------------------------------------
class Buffers:
    """The memories' byte arrays by address: a view into one has a (memory, offset) form."""

    def __init__(self, bufs):
        self.spans = sorted((b.__array_interface__["data"][0], b.nbytes, b) for b in bufs)
        self.by_id = {id(b): b for b in bufs}

    def find(self, a: np.ndarray):
        p = a.__array_interface__["data"][0]
        for lo, n, b in self.spans:
            if lo <= p < lo + n:
                return b, p - lo
        return None, None


def form_of(v, bufs: Buffers, nums: list, place, keep: dict):
    """The form of value ``v`` - hashable; two values of one form differ only in the numbers
    it appends to ``nums`` (ints, offsets of memory views).  ``place(obj)``: a mutable
    object's place in the walk (None: the object itself, kept in ``keep`` by id)."""
    t = v.__class__
    if t is int:
        nums.append(v)
        return 0
    if t is float or isinstance(v, np.floating):
        return ("k", t, v, math.copysign(1.0, v))          # (-0.0 is not 0.0)
    if v is None or t is bool or t is str or t is bytes:
        return ("k", t, v)
    if t is np.ndarray:
        b, off = bufs.find(v)
        if b is None:
            keep[id(v)] = v
            return ("o", id(v))
        nums.append(off)
        return ("a", id(b), v.shape, v.strides, v.dtype.str)
    if isinstance(v, tuple):
        return ("t", t, tuple(form_of(x, bufs, nums, place, keep) for x in v))
    if t is partial:
        return ("p", form_of(v.func, bufs, nums, place, keep), form_of(v.args, bufs, nums, place, keep),
                form_of(tuple(sorted(v.keywords.items())), bufs, nums, place, keep))
    if isinstance(v, (np.generic, np.dtype, enum.Enum, frozenset)):
        return ("k", t, v)
    r = place(v)
    if r is not None:
        return ("r", r)
    keep[id(v)] = v
    return ("o", id(v))


def maker_of(form, base, step, objs, bufs_by_id, keep):
    """A function of the block ``q`` building the value of ``form`` whose numbers are
    ``base + q * step`` (taken in order)."""
    pos = iter(range(len(base)))

    def mk(f):
        if f == 0:
            i = next(pos)
            b, d = base[i], step[i]
            return lambda q: b + q * d
        k = f[0]
        if k == "a":
            _, bid, shape, strides, dt = f
            i = next(pos)
            b, d, buf, dt, nd = base[i], step[i], bufs_by_id[bid], np.dtype(dt), np.ndarray
            return lambda q: nd(shape, dt, buffer=buf, offset=b + q * d, strides=strides)
        if k == "t":
            t = f[1]
            if len(f[2]) == 3 and f[2][2] == 0 and is_fixed(f[2][0]) and is_fixed(f[2][1]):   # (an Event: its end)
                h0, h1 = mk(f[2][0])(0), mk(f[2][1])(0)
                i = next(pos)
                b, d = base[i], step[i]
                return lambda q: tuple_new(t, (h0, h1, b + q * d))
            ms = [mk(x) for x in f[2]]
            moving = [i for i, x in enumerate(f[2]) if not is_fixed(x)]
            if len(moving) == 1:                 # (a queued copy: its GM view)
                i, m = moving[0], ms[moving[0]]
                head, tail = tuple(x(0) for x in ms[:i]), tuple(x(0) for x in ms[i + 1:])
                return lambda q: tuple_new(t, head + (m(q),) + tail)
            return lambda q: tuple_new(t, [m(q) for m in ms])
        if k == "p":
            fm, am, km = mk(f[1]), mk(f[2]), mk(f[3])
            return lambda q: partial(fm(q), *am(q), **dict(km(q)))
        v = f[2] if k == "k" else objs[f[1]] if k == "r" else keep[f[1]]
        return lambda q: v
    return mk(form)


def interned(v, cache: dict):
    """``v`` with every tuple in it (itself, its items) the one tuple ``cache`` holds of its
    class and items (objects by identity): values built apart for one state share a tuple
    where the exact run shares one (a popped tile's binding is its ring entry's)."""
    if not isinstance(v, tuple):
        return v
    items = tuple(interned(x, cache) for x in v)
    key = (v.__class__,) + tuple((x.__class__, x) if x is None or x.__class__ in (int, str, bool) else id(x)
                                 for x in items)
    got = cache.get(key)
    if got is None:
        got = cache[key] = v if all(a is b for a, b in zip(items, v)) else tuple_new(v.__class__, items)
    return got


def is_fixed(form) -> bool:
    """``form`` has no number: its value is the same in every block."""
    if form == 0:
        return False
    k = form[0]
    if k == "a":
        return False
    if k == "t":
        return all(is_fixed(x) for x in form[2])
    if k == "p":
        return is_fixed(form[1]) and is_fixed(form[2]) and is_fixed(form[3])
    return True


class Moving:
    """A value that moves by one constant per block: its form, its numbers in block 0 and
    their move per block."""
    __slots__ = ("form", "base", "step", "obj", "still", "keep")

    def __init__(self, form, base, step, obj, keep):
        self.form, self.base, self.step, self.obj, self.keep = form, base, step, obj, keep
        self.still = not any(step)          # the same value every block (``obj``)

    def maker(self, objs, bufs_by_id):
        """The value in block ``q``, as a function of ``q``."""
        if self.still:
            obj = self.obj
            return lambda q: obj
        return maker_of(self.form, self.base, self.step, objs, bufs_by_id, self.keep)


def as_moving(samples, walk, bufs, places=None) -> Moving:
    """The Moving of a value sampled in consecutive blocks (Unsettled if it is not one);
    ``places``: per sample, the place function its objects are known by (default: the
    walk's)."""
    keep, forms = {}, []
    for k, v in enumerate(samples):
        nums = []
        forms.append((form_of(v, bufs, nums, walk.place if places is None else places[k], keep), nums))
    f0, n0 = forms[0]
    if any(f != f0 for f, _ in forms[1:]):
        raise Unsettled(f"{type(samples[0]).__name__} values of different forms")
    step = None
    for (_, a), (_, b) in zip(forms, forms[1:]):
        d = [y - x for x, y in zip(a, b)]
        if step is None:
            step = d
        elif d != step:
            raise Unsettled(f"it moved by {step}, then by {d}")
    return Moving(f0, n0, step or [0] * len(n0), samples[0], keep)
