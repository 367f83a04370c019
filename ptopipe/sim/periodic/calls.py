"""The hooked ISA calls as the fast-forward engine learns and records them: a call's
identity (its line, function, operands), what it did (:class:`Call`), and a place of a
learned block with how its operands and results move (:class:`Learned`).

An operand may be an object the kernel makes anew for each call of a place (the ``pl`` DSL
interpreter's TPOP makes a Tile per pop): such a *fresh* object is known by
where it first appeared, not by its identity (:class:`Fresh`), and a recorded call must hold
at that place a new object alike and, where the learned call used an earlier call's fresh
object, the object that call was given (:class:`Made`)."""
from __future__ import annotations

import enum
import math
from operator import attrgetter

import numpy as np

from .values import Unsettled, as_moving, is_fixed

#: calls back within which an operand object first seen in the learning log is fresh: known
#: by where it first appeared; older objects are known by their identity
FRESH_CALLS = 64
#: calls after which an operand object not used since is forgotten (a later use is new)
FORGET_CALLS = 1024
_NEW, _REF = object(), object()     # (the markers of a fresh operand's signature)

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


def signature(fn, args, kw, obj_key=None):
    """What two calls share when they are the same call: the function, the objects (by
    identity, or as ``obj_key(object, position)`` gives them; a GlobalTensor's pointer apart)
    and the other values."""
    out = [fn]
    for i, a in enumerate(args):
        t = a.__class__
        out.append((t, a, math.copysign(1.0, a)) if t is float else (t, a) if a is None or t in SCALARS
                   else tensor_key(a) if is_tensor(a) else tuple_key(a) if isinstance(a, tuple)
                   else id(a) if obj_key is None else obj_key(a, i))
    if kw:
        out.append(tuple(sorted((k, v if v is None or v.__class__ in SCALARS else id(v)) for k, v in kw.items())))
    return tuple(out)


class Fresh:
    """The operand objects of one core's calls as the learning signatures name them.  An
    object first seen within the last :data:`FRESH_CALLS` calls is ``(new, class)`` where it
    first appeared and ``(ref, calls back to there, its position there)`` at a later use; an
    older one, one given again where it first appeared (the same function called from the
    same line, at the same position: the next iteration's call) or one the core's calls
    used before learning began (:meth:`saw`) is its identity.  The objects are held while
    they are known (an id is reused once its object dies); one not used for
    :data:`FORGET_CALLS` calls is forgotten."""
    __slots__ = ("first", "old", "n", "site", "sweep")

    def __init__(self):
        self.first: dict = {}        # id -> (object, call number, position, site) of a fresh object
        self.old: dict = {}          # id -> [object, call number it was last used in]: known by identity
        self.n = 0                   # the call being signed
        self.site = None             # and where (its kernel line and function)
        self.sweep = FORGET_CALLS    # the call number of the next sweep of the forgotten

    def saw(self, args, n) -> None:
        """Call number ``n`` (made before learning) used ``args``: its objects are the core's
        own."""
        old = self.old
        for a in args:
            t = a.__class__
            if not (a is None or t in SCALARS or t is float or isinstance(a, tuple) or is_tensor(a)):
                old[id(a)] = [a, n]

    def recorded(self, n) -> None:
        """The core's calls up to number ``n`` were recorded (not signed): the objects it
        knows are as recently used as then."""
        for o in self.old.values():
            o[1] = n

    def key(self, a, i):
        k = id(a)
        n = self.n
        o = self.old.get(k)
        if o is not None:
            o[1] = n
            return k
        f = self.first.get(k)
        if f is not None:
            d = n - f[1]
            if d <= FRESH_CALLS and not (i == f[2] and self.site == f[3]):
                return (_REF, d, f[2])
            # (given again where it first appeared - a later call of the same function from
            # the same line holds it at the same position, as the next iteration's does: it
            # is not made per call but the core's own, known by identity from here on, so the
            # signatures repeat from the next period)
            del self.first[k]
            self.old[k] = [a, n]
            return k
        if n >= self.sweep:                 # (ages the fresh ones not seen again, forgets the unused)
            self.sweep = n + FORGET_CALLS
            for k2 in [k2 for k2, f in self.first.items() if n - f[1] > FRESH_CALLS]:
                self.old[k2] = [self.first.pop(k2)[0], n]
            for k2 in [k2 for k2, o in self.old.items() if n - o[1] > FORGET_CALLS]:
                del self.old[k2]
        self.first[k] = (a, n, i, self.site)
        return (_NEW, a.__class__)

    def sign(self, fn, args, kw, n, site=None):
        """The signature of call number ``n`` (made from ``site``), the positions of the objects
        new in it and how many calls back the earliest fresh object it uses was new."""
        self.n, self.site = n, (site, fn)
        sig = signature(fn, args, kw, self.key)
        news, back = [], 0
        for i, e in enumerate(sig[1:len(args) + 1]):
            if e.__class__ is tuple and e:
                if e[0] is _NEW:
                    news.append(i)
                elif e[0] is _REF and e[1] > back:
                    back = e[1]
        return sig, tuple(news), back


def fresh_refs(sig, nargs: int) -> tuple:
    """``(position, calls back, position there)`` of the operands that are an earlier call's
    fresh object, from a signature of :meth:`Fresh.sign`."""
    return tuple((i, e[1], e[2]) for i, e in enumerate(sig[1:nargs + 1])
                 if e.__class__ is tuple and e and e[0] is _REF)


def _by_value(v) -> bool:
    """A field value that a new object alike holds equal (not the same object).  (Not a
    float: -0.0 == 0.0.)"""
    t = v.__class__
    if v is None or t in (int, str, bool, bytes):
        return True
    if isinstance(v, (enum.Enum, np.dtype, np.integer, np.bool_)):
        return True
    return t is tuple and all(_by_value(x) for x in v)


class Made:
    """Recording: the fresh objects one core's recorded calls were given, by call number (a
    later call referring to one must hold it; materializing sets their state), for the
    last ``keep`` calls."""
    __slots__ = ("st", "made", "ids", "persist", "keep")

    def __init__(self, st, keep: int, persist: set):
        self.st = st                 # the core's engine state: its call number
        self.made: dict = {}         # call number -> the call's arguments
        self.ids: set = set()        # ids of the fresh objects in ``made``
        self.persist = persist       # ids of the objects of the machine state and the learned calls
        self.keep = keep

    def add(self, n, args, news) -> None:
        self.made[n] = args
        ids = self.ids
        for i in news:
            ids.add(id(args[i]))
        old = self.made.pop(n - self.keep, None)
        if old is not None:
            for i in news:
                ids.discard(id(old[i]))


class Call:
    """One hooked call made exactly while learning."""
    __slots__ = ("fn", "args", "kw", "sig", "loc", "site", "flags", "result", "ptrs", "nwork", "post", "news",
                 "pre", "back")

    def __init__(self, fn, args, kw, loc, site, fresh: Fresh | None = None, n: int = 0):
        self.fn, self.args, self.kw, self.loc, self.site = fn, args, kw or None, loc, site
        if fresh is None:
            sig, self.news, self.back = signature(fn, args, kw), (), 0
        else:
            sig, self.news, self.back = fresh.sign(fn, args, kw, n, site)
        self.sig = (site, sig)
        self.pre = None              # {position: its fields before the call} of the new objects
        # the GlobalTensor arguments' pointers at the call (the kernel moves them on)
        self.ptrs = tuple(a.ptr for a in args if is_tensor(a))
        self.flags: list = []        # (flag, -1 for a WAIT / +1 for a SET), in order
        self.result = None
        self.nwork = 0               # data operations it queued
        self.post = None             # [(argument, field, value)]: what it changed on its operands


class Learned:
    """One place of a core's block: the call there and how it moves per block."""
    __slots__ = ("fn", "args", "kw", "loc", "site", "flags", "waits", "sets", "addrs", "scalars", "floats", "checks",
                 "result", "event", "post", "gtkeys", "tuples", "news", "refs", "fresh", "made")

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
        # fresh operands: (position, class, its fields' getter, their values before the call,
        # the fields holding an object it must share) where one is new; (position, calls
        # back, position there) where it is an earlier call's
        self.news = tuple(_new_operand(calls, i) for i in c0.news)
        self.refs = fresh_refs(c0.sig[1], len(c0.args))
        self.fresh = frozenset(c0.news) | frozenset(i for i, _, _ in self.refs)
        self.made = None             # the core's Made (set when recording begins)
        self.checks = bool(self.addrs or self.scalars or self.tuples or self.fresh)
        m = as_moving([c.result for c in calls], walk, bufs)
        self.result = m.maker(walk.objs, bufs.by_id)
        f = m.form
        self.event = None       # a result of three, its last an int that moves: (type, a, b, base, move)
        if not m.still and f != 0 and f[0] == "t" and len(f[2]) == 3 and f[2][2] == 0 and is_fixed(f[2][0]) \
                and is_fixed(f[2][1]):
            self.event = (f[1], m.obj[0], m.obj[1], m.base[0], m.step[0])


def _new_operand(calls, i) -> tuple:
    """What a fresh object new at position ``i`` of the learned calls must be alike in: its
    class and its fields before the call - equal values, or the very objects the learned
    ones shared (a TPOP site's cache of memory views)."""
    c0 = calls[0]
    if any(c.pre is None or i not in c.pre for c in calls):
        raise Unsettled(f"a new {type(c0.args[i]).__name__} of {getattr(c0.fn, '__name__', c0.fn)} has no fields")
    pres = [c.pre[i] for c in calls]
    keys = tuple(pres[0])
    if c0.args[i].__class__ in (list, dict, set) or any(k.__class__ is not str for k in keys):
        raise Unsettled(f"a new {type(c0.args[i]).__name__} of {getattr(c0.fn, '__name__', c0.fn)} has no named fields")
    if any(tuple(p) != keys for p in pres[1:]) or not keys:
        raise Unsettled(f"the new {type(c0.args[i]).__name__}s of {getattr(c0.fn, '__name__', c0.fn)} differ")
    ident = []
    for k, key in enumerate(keys):
        v0 = pres[0][key]
        if _by_value(v0):
            if any(p[key].__class__ is not v0.__class__ or p[key] != v0 for p in pres[1:]):
                raise Unsettled(f"the new {type(c0.args[i]).__name__}s' {key} differ")
        elif any(p[key] is not v0 for p in pres[1:]):
            raise Unsettled(f"the new {type(c0.args[i]).__name__}s' {key} are not one object")
        else:
            ident.append(k)
    return (i, c0.args[i].__class__, attrgetter(*keys) if len(keys) > 1 else (lambda o, g=attrgetter(keys[0]): (g(o),)),
            tuple(pres[0][k] for k in keys), tuple(ident), keys)


def fresh_args(ln: Learned, args) -> bool:
    """The fresh operands of a recorded call: at a new position an object of the learned
    class, none the machine state or the learned calls hold nor one given to a call
    recorded lately, its fields as the learned one's were; at a later use, the object the
    call it first appeared in was given.  Accepted, its fresh objects are kept (:class:`Made`)."""
    m = ln.made
    n = m.st.n
    if ln.news:
        ids, persist = m.ids, m.persist
        for i, cls, get, ref, ident, _ in ln.news:
            a = args[i]
            k = id(a)
            if a.__class__ is not cls or k in ids or k in persist:
                return False
            try:
                t = get(a)
                if t != ref:
                    return False
            except Exception:                   # (a field that does not compare: not alike)
                return False
            for j in ident:
                if t[j] is not ref[j]:
                    return False
        if len(ln.news) > 1 and len({id(args[x[0]]) for x in ln.news}) < len(ln.news):
            return False
        m.add(n, args, [x[0] for x in ln.news])
    if ln.refs:
        made = m.made
        for i, d, j in ln.refs:
            e = made.get(n - d)
            if e is None or e[j] is not args[i]:
                return False
    return True


def alike(ln: Learned, args) -> bool:
    """``args`` are the learned call's but for GlobalTensors made anew alike (same shape,
    strides, dtype and layout; :func:`same_args` checks their pointers) and fresh objects
    (:func:`fresh_args` checks them)."""
    la = ln.args
    if not (ln.gtkeys or ln.tuples or ln.fresh) or len(args) != len(la):
        return False
    gts, fresh = ln.gtkeys, ln.fresh
    for i, (a, b) in enumerate(zip(args, la)):
        if i in fresh:
            continue                            # (fresh_args checks it)
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
    if ln.fresh:
        return fresh_args(ln, args)
    return True
