"""The hooked ISA calls as the fast-forward engine learns and records them: a call's
identity (its line, function, operands), what it did (:class:`Call`), and a place of a
learned block with how its operands and results move (:class:`Learned`)."""
from __future__ import annotations

import math

import numpy as np

from .values import Unsettled, as_moving, is_fixed

SCALARS = (int, float, str, bool)
# an operand's scoreboard (sim.core's issue): the fields a recorded call leaves as they were
# at the last snapshot (no Python reads them; materialize sets them)
SCOREBOARD = frozenset({"ready_at", "read_end"})


def is_tensor(a) -> bool:
    return a.__class__.__name__ == "GlobalTensor"


def tensor_key(a) -> tuple:
    """A GlobalTensor as a call sees it, its pointer apart (a kernel may make a new one per
    call: pypto's and ptoas's C++ do)."""
    return ("G", a.shape, a.stride, a.dtype, a.layout)


def tuple_key(a) -> tuple:
    """A tuple argument (an Event: an earlier instruction's completion) as a call sees it,
    its numbers apart (they move with the block)."""
    return ("T", a.__class__, tuple("i" if x.__class__ is int else id(x) for x in a))


def signature(fn, args, kw):
    """What two calls share when they are the same call: the function, the objects (by
    identity; a GlobalTensor's pointer apart) and the other values."""
    out = [fn]
    for a in args:
        t = a.__class__
        out.append((t, a, math.copysign(1.0, a)) if t is float else (t, a) if a is None or t in SCALARS
                   else tensor_key(a) if is_tensor(a) else tuple_key(a) if isinstance(a, tuple) else id(a))
    if kw:
        out.append(tuple(sorted((k, v if v is None or v.__class__ in SCALARS else id(v)) for k, v in kw.items())))
    return tuple(out)


class Call:
    """One hooked call made exactly while learning."""
    __slots__ = ("fn", "args", "kw", "sig", "loc", "site", "flags", "result", "ptrs", "nwork", "post")

    def __init__(self, fn, args, kw, loc, site):
        self.fn, self.args, self.kw, self.loc, self.site = fn, args, kw or None, loc, site
        self.sig = (site, signature(fn, args, kw))
        # the GlobalTensor arguments' pointers at the call (the kernel moves them on)
        self.ptrs = tuple(a.ptr for a in args if is_tensor(a))
        self.flags: list = []        # (flag, -1 for a WAIT / +1 for a SET), in order
        self.result = None
        self.nwork = 0               # data operations it queued
        self.post = None             # [(argument, field, value)]: what it changed on its operands


class Learned:
    """One place of a core's block: the call there and how it moves per block."""
    __slots__ = ("fn", "args", "kw", "loc", "site", "flags", "waits", "sets", "addrs", "scalars", "floats", "checks",
                 "result", "event", "post", "gtkeys", "tuples")

    def __init__(self, calls, walk, bufs):
        c0 = calls[0]
        self.fn, self.args, self.kw, self.loc, self.flags = c0.fn, c0.args, c0.kw, c0.loc, c0.flags
        self.site = c0.site
        keys = [(i, k) for i, k, _ in c0.post]
        if any([(i, k) for i, k, _ in c.post] != keys for c in calls[1:]):
            raise Unsettled(f"{getattr(c0.fn, '__name__', c0.fn)} changed other fields of its operands")
        self.post = tuple((i, k, as_moving([c.post[n][2] for c in calls], walk, bufs).maker(walk.objs, bufs.by_id))
                          for n, (i, k) in enumerate(keys))
        if any(c.flags != c0.flags for c in calls[1:]):
            raise Unsettled(f"{getattr(c0.fn, '__name__', c0.fn)} waited for or set other flags")
        if any(d < 0 and any(e > 0 for _, e in c0.flags[:k]) for k, (_, d) in enumerate(c0.flags)):
            # (recorded, its WAITs are taken first: a SET before one could be what lets
            # another core give it)
            raise Unsettled(f"{getattr(c0.fn, '__name__', c0.fn)} sets a flag before it waits for one")
        # a GlobalTensor argument: (position, address in block 0, its move, dtype, bounds, extent)
        self.addrs = []
        for k, i in enumerate(i for i, a in enumerate(c0.args) if is_tensor(a)):
            p0 = c0.ptrs[k]
            if p0 is None or any(c.ptrs[k] is None or c.ptrs[k].dtype != p0.dtype or c.ptrs[k].bounds != p0.bounds
                                 for c in calls):
                raise Unsettled("a GlobalTensor argument changed")
            mv = as_moving([c.ptrs[k].addr for c in calls], walk, bufs)
            self.addrs.append((i, mv.base[0], mv.step[0], p0.dtype, p0.bounds, c0.args[i]._extent))
        self.addrs = tuple(self.addrs)
        # numbers: equal ones may still differ in type (3 == 3.0 == True); other values that are
        # equal (None, enum members) are the same
        self.scalars = tuple(i for i, a in enumerate(c0.args) if a.__class__ in (int, float, bool)
                             or isinstance(a, np.generic))
        # a GlobalTensor argument: its position -> what a new one there must be alike in
        self.gtkeys = {i: tensor_key(a) for i, a in enumerate(c0.args) if is_tensor(a)}
        # a tuple argument (an Event): (position, its value in a block)
        self.tuples = tuple((i, as_moving([c.args[i] for c in calls], walk, bufs).maker(walk.objs, bufs.by_id))
                            for i, a in enumerate(c0.args) if isinstance(a, tuple))
        self.floats = tuple(i for i in self.scalars if c0.args[i].__class__ is float)
        self.checks = bool(self.addrs or self.scalars or self.tuples)
        m = as_moving([c.result for c in calls], walk, bufs)
        self.result = m.maker(walk.objs, bufs.by_id)
        f = m.form
        self.event = None       # a result of three, its last an int that moves: (type, a, b, base, move)
        if not m.still and f != 0 and f[0] == "t" and len(f[2]) == 3 and f[2][2] == 0 and is_fixed(f[2][0]) \
                and is_fixed(f[2][1]):
            self.event = (f[1], m.obj[0], m.obj[1], m.base[0], m.step[0])


def alike(ln: Learned, args) -> bool:
    """``args`` are the learned call's but for GlobalTensors made anew alike (same shape,
    strides, dtype and layout; :func:`same_args` checks their pointers)."""
    la = ln.args
    if not (ln.gtkeys or ln.tuples) or len(args) != len(la):
        return False
    gts = ln.gtkeys
    for i, (a, b) in enumerate(zip(args, la)):
        if i in gts:
            if not is_tensor(a) or tensor_key(a) != gts[i]:
                return False
        elif b.__class__ is not a.__class__:
            return False
        elif isinstance(b, tuple):
            continue                            # (an Event: same_args checks where it moved)
        elif a is not b and not (a.__class__ in SCALARS and a == b):
            return False
    return True


def same_args(ln: Learned, args, q) -> bool:
    """Beyond ``args == ln.args`` (the same tiles and pipe - they compare by identity - and
    equal scalars): scalars of the same type, and the GlobalTensors' pointers where block
    ``q`` puts them and inside their tensors."""
    la = ln.args
    for i in ln.scalars:
        if args[i].__class__ is not la[i].__class__:
            return False
    for i in ln.floats:                          # (-0.0 == 0.0, but is another scalar)
        if math.copysign(1.0, args[i]) != math.copysign(1.0, la[i]):
            return False
    for i, mk in ln.tuples:                      # (an Event: where the block puts it)
        if args[i] != mk(q):
            return False
    for i, b, d, dt, bounds, ext in ln.addrs:
        p = args[i].ptr
        addr = b + q * d
        if p is None or p.addr != addr or p.dtype != dt or p.bounds != bounds:
            return False
        if bounds is not None and not (bounds[0] <= addr and addr + ext <= bounds[1]):
            return False
    return True
