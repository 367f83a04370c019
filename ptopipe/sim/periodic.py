"""Periodic fast-forward: a run's steady state recorded, not simulated (``engine="periodic"``).

A streaming kernel repeats itself: every ring period each core issues the same instructions
on the same tiles, its GM windows moved by a constant.  The exact engine simulates each one
(timing, scoreboard, flags, the instruction's own checks, its numpy work).  This engine
learns the period, proves that the machine repeats with it, and from then on only records:

1. LEARN - every hooked ISA call (the hot instructions hand their calls to
   :meth:`FastForward.call` first) is made exactly and logged with what it did: the
   cross-core flags it waited for and set and what it returned; the data work the cores
   queue is logged in the order they queue it.  Once every core's calls repeat, the
   machine state (cores, flags, rings and the tiles the calls use: :class:`_Walk`) is taken
   at four block boundaries.  A block is a whole number of every core's periods and of
   every ring's ``cycle`` (its slots, its SyncPeriod, its staging slots).  The state must
   move by the same amount each block - clocks and counters by a constant, memory views by
   a constant offset, everything else equal - and so must the calls and the data work
   between the boundaries: the engine's step then commutes with that move, so every later
   block moves by it too.
2. RECORD - a hooked call that is the learned call at its place (the same function, the
   same tiles, its GM windows where the block puts them and inside their tensors) counts
   the flags it waits for and sets (a core still blocks while a count is zero, so the
   cores keep in step) and returns the learned result moved.  Nothing else: neither the
   machine state nor memory is touched.
3. MATERIALIZE - at the first call that does not match, any other use of the machine (an
   ISA call that is not hooked, ``Tile.array``), a deadlock, the instruction budget in
   sight or the end of the run: the data work of every block all cores completed is applied
   (the learned blocks' work, moved, in the order it was queued), the state is set to the
   last boundary moved by those blocks, and the calls the cores recorded after that cut are
   made exactly, in an order the flags allow.  The run goes on exactly.

The timing model depends only on each core's instruction sequence and on which SET each
WAIT takes (flags are FIFO), not on the order the cores ran in; the data work runs in an
order the exact engine ran it.  So outputs, cycles, per-core counts and stalls, errors and
their lines are the exact engine's (tests/sim/test_periodic.py runs both).  The engine
applies to runs with the checkers, the trace, exploration and the cycle bound off,
automatic synchronisation and timing on (:func:`applies`); every other run, and every
kernel that never settles, runs exactly.
"""
from __future__ import annotations

import copy
import enum
import math
from collections import deque
from dataclasses import dataclass
from functools import lru_cache, partial
from sys import _getframe

import greenlet
import numpy as np

from ..errors import KernelError
from .dataplane import batch_out

WARMUP, LEARN, RECORD, OFF = "warmup", "learn", "record", "off"

#: hooked calls a core makes exactly, at no cost, before learning begins (a short run is not
#: worth learning)
WARMUP_CALLS = 256
#: hooked calls a core may make while learning before the run is left exact
LEARN_LIMIT = 20000
#: the longest per-core period (in calls) looked for
MAX_PERIOD = 256
#: times a run learns again after its recording stopped at a call that differed
RELEARNS = 8
#: snapshots that must move by one constant (three equal moves)
SNAPSHOTS = 4
#: later snapshots tried, one block apart, before longer blocks are
SLIDES = 4
#: a block is the reference core's periods until every ring is back in the phase it was in (a
#: whole number of its cycles: its slots, its SyncPeriod, two staging slots), at most this many
MAX_BLOCK_PERIODS = 64
#: times a longer block is tried when one does not prove
LONGER = 4
#: queued data operations between applications while materializing (Cluster.sync's)
_SYNC_EVERY = 4096
#: the bytes a batch's copies of the buffers its blocks write may take (and the most blocks
#: in one batch)
BATCH_BYTES = 16 << 20
BATCH_BLOCKS = 1 << 16
#: operations on more bytes than this (on average) run one block after another: batching
#: saves numpy's cost per call, which such operations hardly pay (and a batched matmul may
#: leave BLAS)
BATCH_OP_BYTES = 16 << 10

# fields of the machine state that are the scheduler's (who runs, who waits): neither
# compared nor written back (materialize reconciles them)
_SCHEDULER_FIELDS = frozenset({"state", "waiting", "waiter", "glet", "limit"})
# fields that are not machine state: never walked
_SKIP_FIELDS = frozenset({"pending", "marks", "main", "steps", "_next", "deadline", "ff", "trace", "waits",
                          "signals", "context", "pool", "kernel", "explainers", "annotators", "hinters",
                          "finishers", "carried_hooks", "warnings", "policy", "costs", "event_words", "op_word",
                          "loc_override", "cluster", "platform", "memories", "gm", "model"})
_SCALARS = (int, float, str, bool)
# an operand's scoreboard (sim.core's issue): the fields a recorded call leaves as they were
# at the last snapshot (no Python reads them; materialize sets them)
_SCOREBOARD = frozenset({"ready_at", "read_end"})
_tuple_new = tuple.__new__      # a tuple or tuple subclass (an Event, a SourceLoc) from its items


@dataclass(frozen=True)
class FastForwardReport:
    """What the fast-forward engine did in one run of the kernels on a cluster."""
    #: whole blocks (of every core's calls) recorded instead of simulated
    blocks: int = 0
    #: hooked calls recorded instead of simulated
    calls: int = 0
    #: why the run was not fast-forwarded, or stopped being (None: it ran to its end recorded,
    #: or had nothing to record)
    reason: str | None = None
    #: why the recorded blocks' data work did not run in batches (None: it did, or there was none)
    unbatched: str | None = None


class _Restart(Exception):
    """A core suspended in the first WAIT of an exactly made call, resumed after recording
    began: the call has done nothing yet, so it is made again as a recorded one."""


class _Unsettled(Exception):
    """The machine does not move by one constant per block (why)."""


def applies(cluster) -> bool:
    """Whether a run on ``cluster`` can be fast-forwarded (see the module docstring)."""
    return (cluster.checker is None and cluster.trace is None and cluster.policy is None
            and not cluster.manual_sync and cluster.timing and cluster.until_cycle is None)


# -- values: a form, and the numbers that move ------------------------------------------
class _Buffers:
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


def _form(v, bufs: _Buffers, nums: list, place, keep: dict):
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
        return ("t", t, tuple(_form(x, bufs, nums, place, keep) for x in v))
    if t is partial:
        return ("p", _form(v.func, bufs, nums, place, keep), _form(v.args, bufs, nums, place, keep),
                _form(tuple(sorted(v.keywords.items())), bufs, nums, place, keep))
    if isinstance(v, (np.generic, np.dtype, enum.Enum, frozenset)):
        return ("k", t, v)
    r = place(v)
    if r is not None:
        return ("r", r)
    keep[id(v)] = v
    return ("o", id(v))


def _maker(form, base, step, objs, bufs_by_id, keep):
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
            if len(f[2]) == 3 and f[2][2] == 0 and _fixed(f[2][0]) and _fixed(f[2][1]):   # (an Event: its end)
                h0, h1 = mk(f[2][0])(0), mk(f[2][1])(0)
                i = next(pos)
                b, d = base[i], step[i]
                return lambda q: _tuple_new(t, (h0, h1, b + q * d))
            ms = [mk(x) for x in f[2]]
            moving = [i for i, x in enumerate(f[2]) if not _fixed(x)]
            if len(moving) == 1:                 # (a queued copy: its GM view)
                i, m = moving[0], ms[moving[0]]
                head, tail = tuple(x(0) for x in ms[:i]), tuple(x(0) for x in ms[i + 1:])
                return lambda q: _tuple_new(t, head + (m(q),) + tail)
            return lambda q: _tuple_new(t, [m(q) for m in ms])
        if k == "p":
            fm, am, km = mk(f[1]), mk(f[2]), mk(f[3])
            return lambda q: partial(fm(q), *am(q), **dict(km(q)))
        v = f[2] if k == "k" else objs[f[1]] if k == "r" else keep[f[1]]
        return lambda q: v
    return mk(form)


def _fixed(form) -> bool:
    """``form`` has no number: its value is the same in every block."""
    if form == 0:
        return False
    k = form[0]
    if k == "a":
        return False
    if k == "t":
        return all(_fixed(x) for x in form[2])
    if k == "p":
        return _fixed(form[1]) and _fixed(form[2]) and _fixed(form[3])
    return True


class _Moving:
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
        return _maker(self.form, self.base, self.step, objs, bufs_by_id, self.keep)


def _moving(samples, walk, bufs) -> _Moving:
    """The _Moving of a value sampled in consecutive blocks (_Unsettled if it is not one)."""
    keep, forms = {}, []
    for v in samples:
        nums = []
        forms.append((_form(v, bufs, nums, walk.place, keep), nums))
    f0, n0 = forms[0]
    if any(f != f0 for f, _ in forms[1:]):
        raise _Unsettled(f"{type(samples[0]).__name__} values of different forms")
    step = None
    for (_, a), (_, b) in zip(forms, forms[1:]):
        d = [y - x for x, y in zip(a, b)]
        if step is None:
            step = d
        elif d != step:
            raise _Unsettled(f"it moved by {step}, then by {d}")
    return _Moving(f0, n0, step or [0] * len(n0), samples[0], keep)


# -- the machine state ----------------------------------------------------------------------
class _Walk:
    """Every mutable object of the machine state reachable from ``roots``, in a fixed order,
    with its fields' values."""

    def __init__(self, roots):
        self.objs: list = []
        self._place: dict = {}
        self.fields: list = []        # per object: [(key, value)]
        todo = deque(roots)
        while todo:
            o = todo.popleft()
            if id(o) in self._place or not _walkable(o):
                continue
            self._place[id(o)] = len(self.objs)
            self.objs.append(o)
            items = _fields(o)
            self.fields.append(items)
            for k, v in items:
                if k not in _SCHEDULER_FIELDS:
                    _children(v, todo)

    def place(self, o):
        return self._place.get(id(o))


def _walkable(o) -> bool:
    t = o.__class__
    if t is list or t is dict or t is set:
        return True
    if isinstance(o, (type, greenlet.greenlet, np.ndarray, tuple, partial, enum.Enum)):
        return False
    if t.__module__.startswith(("numpy", "builtins", "enum", "functools")):
        return False
    return hasattr(o, "__dict__") or hasattr(t, "__slots__")


def _fields(o) -> list:
    t = o.__class__
    if t is list:
        return list(enumerate(o))
    if t is dict:
        return [(k, v) for k, v in o.items() if not (k.__class__ is str and k in _SKIP_FIELDS)]
    if t is set:
        return [("set", frozenset(id(x) if _walkable(x) else x for x in o))]
    d = getattr(o, "__dict__", None)
    out = [(k, v) for k, v in d.items() if k not in _SKIP_FIELDS] if d else []
    for k in _slots(t):
        try:
            out.append((k, getattr(o, k)))
        except AttributeError:              # (an unset slot)
            pass
    return out


@lru_cache(maxsize=None)
def _slots(t) -> tuple:
    """The slots of class ``t`` that hold machine state (every class of its MRO's)."""
    return tuple(k for c in t.__mro__ for k in c.__dict__.get("__slots__", ())
                 if k not in ("__dict__", "__weakref__") and k not in _SKIP_FIELDS)


def _children(v, todo) -> None:
    if isinstance(v, tuple):
        for x in v:
            _children(x, todo)
    elif _walkable(v):
        todo.append(v)


# -- calls ------------------------------------------------------------------------------------
def _is_gt(a) -> bool:
    return a.__class__.__name__ == "GlobalTensor"


def _gt_key(a) -> tuple:
    """A GlobalTensor as a call sees it, its pointer apart (a kernel may make a new one per
    call: pypto's and ptoas's C++ do)."""
    return ("G", a.shape, a.stride, a.dtype, a.layout)


def _tuple_key(a) -> tuple:
    """A tuple argument (an Event: an earlier instruction's completion) as a call sees it,
    its numbers apart (they move with the block)."""
    return ("T", a.__class__, tuple("i" if x.__class__ is int else id(x) for x in a))


def _sig(fn, args, kw):
    """What two calls share when they are the same call: the function, the objects (by
    identity; a GlobalTensor's pointer apart) and the other values."""
    out = [fn]
    for a in args:
        t = a.__class__
        out.append((t, a, math.copysign(1.0, a)) if t is float else (t, a) if a is None or t in _SCALARS
                   else _gt_key(a) if _is_gt(a) else _tuple_key(a) if isinstance(a, tuple) else id(a))
    if kw:
        out.append(tuple(sorted((k, v if v is None or v.__class__ in _SCALARS else id(v)) for k, v in kw.items())))
    return tuple(out)


class _Call:
    """One hooked call made exactly while learning."""
    __slots__ = ("fn", "args", "kw", "sig", "loc", "site", "flags", "result", "ptrs", "nwork", "post")

    def __init__(self, fn, args, kw, loc, site):
        self.fn, self.args, self.kw, self.loc, self.site = fn, args, kw or None, loc, site
        self.sig = (site, _sig(fn, args, kw))
        # the GlobalTensor arguments' pointers at the call (the kernel moves them on)
        self.ptrs = tuple(a.ptr for a in args if _is_gt(a))
        self.flags: list = []        # (flag, -1 for a WAIT / +1 for a SET), in order
        self.result = None
        self.nwork = 0               # data operations it queued
        self.post = None             # [(argument, field, value)]: what it changed on its operands


class _Learned:
    """One place of a core's block: the call there and how it moves per block."""
    __slots__ = ("fn", "args", "kw", "loc", "site", "flags", "waits", "sets", "addrs", "scalars", "floats", "checks",
                 "result", "event", "post", "gtkeys", "tuples")

    def __init__(self, calls, walk, bufs):
        c0 = calls[0]
        self.fn, self.args, self.kw, self.loc, self.flags = c0.fn, c0.args, c0.kw, c0.loc, c0.flags
        self.site = c0.site
        keys = [(i, k) for i, k, _ in c0.post]
        if any([(i, k) for i, k, _ in c.post] != keys for c in calls[1:]):
            raise _Unsettled(f"{getattr(c0.fn, '__name__', c0.fn)} changed other fields of its operands")
        self.post = tuple((i, k, _moving([c.post[n][2] for c in calls], walk, bufs).maker(walk.objs, bufs.by_id))
                          for n, (i, k) in enumerate(keys))
        if any(c.flags != c0.flags for c in calls[1:]):
            raise _Unsettled(f"{getattr(c0.fn, '__name__', c0.fn)} waited for or set other flags")
        if any(d < 0 and any(e > 0 for _, e in c0.flags[:k]) for k, (_, d) in enumerate(c0.flags)):
            # (recorded, its WAITs are taken first: a SET before one could be what lets
            # another core give it)
            raise _Unsettled(f"{getattr(c0.fn, '__name__', c0.fn)} sets a flag before it waits for one")
        # a GlobalTensor argument: (position, address in block 0, its move, dtype, bounds, extent)
        self.addrs = []
        for k, i in enumerate(i for i, a in enumerate(c0.args) if _is_gt(a)):
            p0 = c0.ptrs[k]
            if p0 is None or any(c.ptrs[k] is None or c.ptrs[k].dtype != p0.dtype or c.ptrs[k].bounds != p0.bounds
                                 for c in calls):
                raise _Unsettled("a GlobalTensor argument changed")
            mv = _moving([c.ptrs[k].addr for c in calls], walk, bufs)
            self.addrs.append((i, mv.base[0], mv.step[0], p0.dtype, p0.bounds, c0.args[i]._extent))
        self.addrs = tuple(self.addrs)
        self.scalars = tuple(i for i, a in enumerate(c0.args) if not _walkable(a) and not _is_gt(a))
        self.gtkeys = tuple((i, _gt_key(a)) for i, a in enumerate(c0.args) if _is_gt(a))
        # a tuple argument (an Event): (position, its value in a block)
        self.tuples = tuple((i, _moving([c.args[i] for c in calls], walk, bufs).maker(walk.objs, bufs.by_id))
                            for i, a in enumerate(c0.args) if isinstance(a, tuple))
        self.floats = tuple(i for i in self.scalars if c0.args[i].__class__ is float)
        self.checks = bool(self.addrs or self.scalars or self.tuples)
        m = _moving([c.result for c in calls], walk, bufs)
        self.result = m.maker(walk.objs, bufs.by_id)
        f = m.form
        self.event = None       # a result of three, its last an int that moves: (type, a, b, base, move)
        if not m.still and f != 0 and f[0] == "t" and len(f[2]) == 3 and f[2][2] == 0 and _fixed(f[2][0]) \
                and _fixed(f[2][1]):
            self.event = (f[1], m.obj[0], m.obj[1], m.base[0], m.step[0])


def _alike(ln: _Learned, args) -> bool:
    """``args`` are the learned call's but for GlobalTensors made anew alike (same shape,
    strides, dtype and layout; :func:`_same_args` checks their pointers)."""
    la = ln.args
    if not (ln.gtkeys or ln.tuples) or len(args) != len(la):
        return False
    gts = dict(ln.gtkeys)
    moving = {i for i, _ in ln.tuples}
    for i, (a, b) in enumerate(zip(args, la)):
        if i in gts:
            if not _is_gt(a) or _gt_key(a) != gts[i]:
                return False
        elif i in moving:
            if a.__class__ is not b.__class__:
                return False
        elif a is not b and not (a.__class__ in _SCALARS and a == b):
            return False
    return True


def _same_args(ln: _Learned, args, q) -> bool:
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


class _Unbatchable(Exception):
    """The blocks' data work cannot run as one batch (why)."""


def _span(a: np.ndarray, off: int):
    """The bytes ``[lo, hi)`` of array ``a`` whose first element is at byte ``off``."""
    lo = hi = off
    for n, st in zip(a.shape, a.strides):
        if n == 0:
            return off, off
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return lo, hi + a.itemsize


def _meet(a, la, da, b, lb, db, nq) -> bool:
    """Whether windows ``[a + q*da, +la)`` and ``[b + r*db, +lb)`` meet for some blocks q, r
    below ``nq`` (exactly when they move alike, else by their hulls)."""
    if da != db:
        ha = (a + min(0, (nq - 1) * da), a + la + max(0, (nq - 1) * da))
        hb = (b + min(0, (nq - 1) * db), b + lb + max(0, (nq - 1) * db))
        return ha[0] < hb[1] and hb[0] < ha[1]
    # x = (a - b) + k*d meets when -la < x < lb, for some k = q - r in -(nq-1) .. nq-1
    # (a range symmetric in k, so the move's sign does not matter)
    c, d = a - b, abs(da)
    lo = math.floor((-la - c) / d) + 1
    hi = math.ceil((lb - c) / d) - 1
    return max(lo, -(nq - 1)) <= min(hi, nq - 1)


class _Moved:
    """A batch's GM window that moves with the block: one strided view over every block's."""
    __slots__ = ("buf", "off", "d", "shape", "strides", "dtype")

    def __init__(self, buf, off, d, a):
        self.buf, self.off, self.d, self.shape, self.strides, self.dtype = buf, off, d, a.shape, a.strides, a.dtype

    def view(self, b, nq, temps):
        return np.ndarray((nq,) + self.shape, self.dtype, buffer=self.buf, offset=self.off + b * self.d,
                          strides=(self.d,) + self.strides)


class _Version:
    """A batch's view of what one write of the block put in a buffer it writes in place:
    every write has its own copies, one per block (row q + 1 is block q's; row 0 holds the
    buffer as it was before the batch).  ``row`` 1: the view reads its own block's copy,
    0: the block before's."""
    __slots__ = ("w", "off", "shape", "strides", "dtype", "row")

    def __init__(self, w, off, a, row):
        self.w, self.off, self.shape, self.strides, self.dtype, self.row = w, off, a.shape, a.strides, a.dtype, row

    def view(self, b, nq, temps):
        t = temps[self.w]
        return np.ndarray((nq,) + self.shape, self.dtype, buffer=t, offset=self.off + self.row * t.shape[1],
                          strides=(t.shape[1],) + self.strides)


class _Batch:
    """The data work of consecutive blocks run as one operation per place in the block.

    The block's work is renamed as a compiler would: every write to a buffer used in place
    (a local tile, a ring slot) gets copies of its own, one per block, and every read
    reads the copy of the write that put its bytes there - earlier in its block, or, for
    bytes the block writes only later, the last write of the block before (a pipeline's
    skew: the consumer reads what the producer pushed a block earlier).  A buffer the block
    only reads is shared, and a GM window that moves with the block is one strided view
    over all the blocks (no window a block writes meets another's).  The places then run in
    an order in which every read comes after the write it reads.  Raises _Unbatchable when
    the work is not such (a read of bytes of two writes, a cycle, an operation that does
    not run on a batch)."""

    def __init__(self, makers, bufs: _Buffers, nq: int):
        it0, it1 = [m(0) for m in makers], [m(1) for m in makers]
        acc = []                 # (place, arg, writes, buffer, offset in block 0, move, lo, hi, array)
        for k, (x0, x1) in enumerate(zip(it0, it1)):
            out = batch_out(x0)
            if out is None:
                raise _Unbatchable(f"{getattr(x0[0], '__name__', x0[0])} does not run on a batch")
            reads = []
            for i, (a, a1) in enumerate(zip(x0[1:], x1[1:])):
                if a.__class__ is not np.ndarray:
                    if i == out:
                        raise _Unbatchable("an operation writes no array")
                    continue
                b, off = bufs.find(a)
                if b is None:
                    if i == out or a1 is not a:
                        raise _Unbatchable("an operation uses an array outside the memories")
                    continue
                b1, off1 = bufs.find(a1)
                if b1 is not b:
                    raise _Unbatchable("an array moved to another memory")
                x = (k, i, i == out, b, off, off1 - off, *_span(a, off), a)
                if i == out:
                    write = x
                else:
                    reads.append(x)
            acc.extend(reads)                # (an operation reads its operands, then writes)
            acc.append(write)
        fixed = [x for x in acc if x[5] == 0]
        moving = [x for x in acc if x[5] != 0]
        written = {}                         # buffer written in place -> [lo, hi) of its accesses
        for x in fixed:
            if x[2]:
                written[id(x[3])] = (x[6], x[7])
        for x in fixed:
            if id(x[3]) in written:
                lo, hi = written[id(x[3])]
                written[id(x[3])] = (min(lo, x[6]), max(hi, x[7]))
        for x in moving:
            a, la, d = x[6], x[7] - x[6], x[5]
            if x[2] and abs(d) < la:
                raise _Unbatchable("a GM window a block writes meets the next block's")
            for y in fixed:
                if y[3] is x[3] and _meet(a, la, d, y[6], y[7] - y[6], 0, nq):
                    raise _Unbatchable("a GM window meets a buffer used in place")
            for y in moving:
                if y is not x and y[3] is x[3] and (x[2] or y[2]) and _meet(a, la, d, y[6], y[7] - y[6], y[5], nq):
                    raise _Unbatchable("GM windows of the blocks meet")
        # who wrote each byte: per written buffer, the writing access (-1: none), in the
        # order of the work; first the block's last writes (what the next block reads early)
        own = {k: np.full(hi - lo, -1, np.int64) for k, (lo, hi) in written.items()}

        def owners(x):
            lo = written[id(x[3])][0]
            a = x[8]
            return np.ndarray(a.shape + (a.itemsize,), np.int64, buffer=own[id(x[3])],
                              offset=(x[4] - lo) * 8, strides=tuple(s * 8 for s in a.strides) + (8,))
        writes = [n for n, x in enumerate(acc) if x[2] and x[5] == 0]
        for n in writes:
            owners(acc[n])[...] = n
        last = {k: v.copy() for k, v in own.items()}
        for v in own.values():
            v[...] = -1
        src, edges = {}, {k: set() for k in range(len(it0))}
        for n, x in enumerate(acc):
            if x[5] or id(x[3]) not in written:
                continue
            o = owners(x)
            if x[2]:
                o[...] = n
                continue
            w, row = int(o.min()), 1
            if w != o.max():
                raise _Unbatchable("a read of bytes two writes put there")
            if w < 0:                            # written later in the block, or never
                lo = written[id(x[3])][0]
                a = x[8]
                prev = np.ndarray(a.shape + (a.itemsize,), np.int64, buffer=last[id(x[3])],
                                  offset=(x[4] - lo) * 8, strides=tuple(s * 8 for s in a.strides) + (8,))
                w, row = int(prev.min()), 0
                if w != prev.max():
                    raise _Unbatchable("a read of bytes two writes put there")
                if w < 0:
                    continue                     # never written: the buffer itself
            src[n] = (w, row)
            if acc[w][0] == x[0]:
                if row == 0:                     # (reads what it wrote the block before: a recurrence)
                    raise _Unbatchable("an operation reads what it wrote the block before")
            else:
                edges[acc[w][0]].add(x[0])
        # an order of the places in which every read comes after the write it reads
        indeg = {k: 0 for k in edges}
        for k, vs in edges.items():
            for v in vs:
                indeg[v] += 1
        ready = [k for k in sorted(indeg) if indeg[k] == 0]
        order = []
        while ready:
            k = ready.pop(0)
            order.append(k)
            for v in sorted(edges[k]):
                indeg[v] -= 1
                if indeg[v] == 0:
                    ready.append(v)
            ready.sort()
        if len(order) != len(it0):
            raise _Unbatchable("the block's work depends on itself across blocks")
        # the copies: one per in-place write (its hull), and every access as a view
        self.writes = {n: k for k, n in enumerate(writes)}
        self.hulls = [(acc[n][3], acc[n][6], acc[n][7], acc[n][8], acc[n][4]) for n in writes]
        self.bytes = sum(hi - lo for _, lo, hi, _, _ in self.hulls)      # the copies of one block
        rows = [list(x) for x in it0]
        for n, x in enumerate(acc):
            k, i, w, b, off, d, lo, hi, a = x
            if d:
                rows[k][1 + i] = _Moved(b, off, d, a)
            elif w:
                rows[k][1 + i] = _Version(self.writes[n], off - lo, a, 1)
            elif n in src:
                wn, row = src[n]
                rows[k][1 + i] = _Version(self.writes[wn], off - acc[wn][6], a, row)
        self.args = [(rows[k][0], tuple(rows[k][1:]),
                      tuple(i for i, a in enumerate(rows[k][1:]) if a.__class__ in (_Moved, _Version)))
                     for k in order]

    def run(self, b: int, nq: int) -> None:
        """The work of blocks ``b`` .. ``b + nq - 1`` (``nq`` at most the batch's size)."""
        temps = []
        for buf, lo, hi, _, _ in self.hulls:
            t = np.empty((nq + 1, hi - lo), np.uint8)
            t[0] = buf[lo:hi]
            temps.append(t)
        for fn, args, views in self.args:
            args = list(args)
            for i in views:
                args[i] = args[i].view(b, nq, temps)
            fn(*args)
        for (buf, lo, hi, a, off), t in zip(self.hulls, temps):      # the last block's, in the block's order
            real = np.ndarray(a.shape, a.dtype, buffer=buf, offset=off, strides=a.strides)
            real[...] = np.ndarray(a.shape, a.dtype, buffer=t, offset=nq * t.shape[1] + off - lo,
                                   strides=a.strides)


class _CoreState:
    """What the engine keeps for one core; while recording, the core's ``ff``."""
    __slots__ = ("core", "ff", "log", "n", "period", "cur", "waits_done", "block", "base", "cap", "j", "q", "lns")

    def __init__(self, core, ff):
        self.core, self.ff = core, ff
        self.log: list = []          # learning: the calls made, in order
        self.n = 0                   # hooked calls completed (made or recorded)
        self.period = None           # learning: calls per period
        self.cur = None              # learning: the call being made exactly
        self.waits_done = 0          # learning: WAITs the call being made has passed
        self.block = None            # calls per block
        self.base = None             # the call count at the last snapshot
        self.cap = None              # the call count at which the budget comes in sight
        self.j = self.q = 0          # recording: the place in the block, the block
        self.lns = None              # recording: the learned calls of a block

    recording = True          # (the core's ff only while the run records)

    def unhooked(self, core) -> None:
        self.ff.unhooked(core)

    def call(self, core, fn, args, kw, depth=2):
        """Record a hooked call of the core (the module docstring's RECORD): it must be the
        learned call at its place, from its line (the kernel's frame ``depth`` frames up);
        its WAITs and SETs go on the counts; it returns the learned result moved to its
        block."""
        ln = self.lns[self.j]
        q = self.q
        if ln.fn is not fn or (kw or None) != ln.kw or args != ln.args and not _alike(ln, args) \
                or ln.checks and not _same_args(ln, args, q):
            return self.ff._stop(fn, args, kw)
        site = core.loc_override
        if site is None:
            f = _getframe(depth)                # (<- the op <- the kernel)
            if f.f_lasti != ln.site[1] or f.f_code is not ln.site[0]:
                return self.ff._stop(fn, args, kw, "the call came from another line")
        elif site != ln.site:
            return self.ff._stop(fn, args, kw, "the call came from another line")
        n = self.n
        if n == self.cap:
            return self.ff._stop(fn, args, kw, "the instruction budget in sight", False)
        if ln.waits:
            sh = self.ff.shadow
            for i, k in ln.waits:
                if sh[i] < k:
                    if not self.ff._wait(self, core, ln):
                        return fn(*args, **kw) if kw else fn(*args)     # (materialized meanwhile)
                    break
            else:
                for i, k in ln.waits:
                    sh[i] -= k
        if ln.sets:
            self.ff._set(ln)
        for i, k, mk in ln.post:
            setattr(args[i], k, mk(q))
        self.n = n + 1
        j = self.j + 1
        if j == self.block:
            self.j, self.q = 0, q + 1
        else:
            self.j = j
        ev = ln.event
        if ev is not None:                      # (an Event: its end moves)
            return _tuple_new(ev[0], (ev[1], ev[2], ev[3] + q * ev[4]))
        return ln.result(q)


class FastForward:
    """The fast-forward engine of one run on a cluster (the cluster's and its cores' ``ff``)."""

    def __init__(self, cluster, cores):
        self.cluster = cluster
        self.mode = WARMUP
        self.st = {c.index: _CoreState(c, self) for c in cores}
        self.snaps: list = []         # (walk, call counts, data operations queued) per snapshot
        self.gwork: list = []         # learning: the data operations queued, in order
        self.ref = None               # the core whose calls time the snapshots
        self.next_snap = None         # its call count at the next one
        self.slides = 0
        self.longer = 0               # times the block was made longer
        self.grow = 0                 # the block must be longer than this (in calls)
        self.sizing = False           # finding the block's length (the rings' phases)
        self.phased, self.phase0 = [], []
        self.learned: dict = {}
        self.reason = None            # why the run was not (or no longer) fast-forwarded
        self.blocks_skipped = 0       # blocks recorded instead of simulated
        self.calls_skipped = 0        # hooked calls recorded instead of simulated
        self.relearns = 0
        self.unbatched = None         # why their data work did not run in batches
        for c in cores:
            c.ff = self
        cluster.ff = self

    # -- the taps of learning: what each exactly made call waited for, set and queued -----
    def _taps(self, on: bool) -> None:
        cl = self.cluster
        if on:
            tap = _Tap(self)
            list.extend(tap, cl.pending)
            cl.pending = tap
            for c in cl.cores:
                c.pending = tap
                c.wait_flag = partial(_learn_wait, self, c, c.__class__.wait_flag.__get__(c))
            cl.set_flag = partial(_learn_set, self, cl.__class__.set_flag.__get__(cl))
        else:
            plain = list(cl.pending)
            cl.pending = plain
            for c in cl.cores:
                c.pending = plain
                c.__dict__.pop("wait_flag", None)
            cl.__dict__.pop("set_flag", None)

    def _off(self, why: str | None = None) -> None:
        """No more hooks: every call is made exactly from here on."""
        if self.mode == LEARN:
            self._taps(False)
        self.mode = OFF
        if why:
            self.reason = why
        for s in self.st.values():
            s.core.ff = None
        self.cluster.ff = None
        self.cluster.fast_forward = self.report()

    def report(self) -> FastForwardReport:
        return FastForwardReport(self.blocks_skipped, self.calls_skipped, self.reason, self.unbatched)

    # -- the hooks ---------------------------------------------------------------------------
    def call(self, core, fn, args, kw, depth=2):
        """A hooked ISA call of ``core``: made exactly (and learned, after the warm-up) - or,
        for a core with no block to record, the exact state first."""
        mode = self.mode
        if mode == WARMUP:
            st = self.st[core.index]
            core.ff = None
            try:
                r = fn(*args, **kw) if kw else fn(*args)
            finally:
                if self.mode != OFF:
                    core.ff = self
            st.n += 1
            if st.n >= WARMUP_CALLS and self.mode == WARMUP:
                self.mode = LEARN               # (from the next call on)
                self._taps(True)
            return r
        if mode == RECORD:
            return self._record(core, fn, args, kw)
        return self._learn(core, fn, args, kw)

    @property
    def recording(self) -> bool:
        return self.mode == RECORD

    def unhooked(self, core) -> None:
        """The kernel uses the machine other than through a hooked call: learning starts
        over; recording stops (the exact state first)."""
        if self.mode == RECORD:
            self.materialize(f"the kernel on {core.name} used the machine other than by a recorded instruction",
                             True)
        elif self.mode == LEARN:
            self._relearn()             # (warming up: nothing to start over)

    def blocking(self, core) -> None:
        """``core`` is about to block in a WAIT made exactly."""
        if isinstance(greenlet.getcurrent(), _Remake):
            raise KernelError(f"internal error: {core.name} blocked while the fast-forward engine re-made "
                              "its recorded calls", fix="run with engine='exact' and report this kernel")

    def resumed(self, core, flag) -> None:
        """``core`` resumed in a WAIT made exactly: after recording began, its call starts over."""
        if self.mode == RECORD:
            core.waiting = None
            if flag.waiter is core:
                flag.waiter = None
            raise _Restart()

    def deadlock(self) -> bool:
        """Every core waits.  Recording: the exact state, and the cores make their calls
        exactly (they block again where the exact engine reports them)."""
        if self.mode == RECORD:
            self.materialize("every core waits")
            return True
        return False

    def finish(self) -> None:
        """The kernels all returned: the exact state, and no more hooks."""
        learning = self.mode == LEARN
        if self.mode == RECORD:
            self.materialize()
        self._off("the run ended while learning" if learning else
                  "the run ended before learning began (a short run)" if self.mode == WARMUP else None)

    def drop(self) -> None:
        """The run stops with an error: no more hooks (the state stays as it is)."""
        self._off("the run stopped")

    # -- learning ----------------------------------------------------------------------------
    def _learn(self, core, fn, args, kw):
        st = self.st[core.index]
        if st is self.ref and st.n == self.next_snap:
            self._snapshot(st)
            if self.mode == RECORD:
                return core.ff.call(core, fn, args, kw, 4)     # (<- _learn <- call <- the op <- kernel)
        from .location import call_site
        site = core.loc_override
        if site is None:                        # the kernel's line: its frame and instruction
            f = _getframe(3)                    # (<- _learn <- call <- the op <- the kernel)
            site = (f.f_code, f.f_lasti)
        # (what a call did is kept once the snapshots are being taken: the blocks they prove)
        proving = self.ref is not None
        c = _Call(fn, args, kw, (core.loc_override or call_site(4)) if proving else None, site)
        ops = [(i, a, dict(_fields(a))) for i, a in enumerate(args) if _walkable(a) and not _is_gt(a)] \
            if proving else ()
        gts = [(a, a.ptr) for a in args if _is_gt(a)]
        st.cur, st.waits_done = c, 0
        core.ff = None
        try:
            r = fn(*args, **kw) if kw else fn(*args)
        except _Restart:
            st.cur = None
            core.ff = st if st.lns is not None else self
            return core.ff.call(core, fn, args, kw, 4)
        finally:
            if core.ff is None and self.mode != OFF:
                core.ff = st if self.mode == RECORD and st.lns is not None else self
        st.cur = None
        if self.mode != LEARN:
            return r
        if any(a.ptr is not p for a, p in gts):
            self._off(f"{getattr(fn, '__name__', fn)} assigned a GlobalTensor its address (the address flow)")
            return r
        c.result = r
        # what the call changed on its operands (a TPOP binds its tile to a slot: its address,
        # its views) but their scoreboard: a recorded call changes it too, as the kernel may
        # read it
        c.post = [(i, k, v) for i, a, was in ops for k, v in _fields(a)
                  if k not in _SCOREBOARD and (k not in was or was[k] is not v)]
        st.n += 1
        st.log.append(c)
        if len(st.log) > LEARN_LIMIT:
            self._off(f"{core.name}'s calls did not settle into a period within {LEARN_LIMIT} calls")
        elif st.period is None and len(st.log) % 8 == 0:
            self._detect(st)
        return r

    def _relearn(self) -> None:
        self.slides = 0
        self.sizing = False
        for s in self.st.values():
            s.log.clear()
            s.period = None
        self.snaps.clear()
        self.gwork.clear()
        self.ref = self.next_snap = None

    def _detect(self, st) -> None:
        """``st``'s core has made its last calls three times over: its period."""
        sigs = [c.sig for c in st.log[-3 * MAX_PERIOD:]]
        n = len(sigs)
        for p in range(1, n // 3 + 1):
            if sigs[n - p:] == sigs[n - 2 * p:n - p] == sigs[n - 3 * p:n - 2 * p]:
                st.period = p
                break
        if st.period is not None and all(s.period is not None or s.core.state.value == "done"
                                         for s in self.st.values()):
            self._plan()

    def _roots(self) -> list:
        """Where the machine state is: the cluster, its cores, the objects the calls use."""
        roots = [self.cluster] + [s.core for s in self.st.values()]
        for s in self.st.values():
            for c in s.log[-(s.period or 1) * 3:]:
                roots.extend(a for a in c.args if not _is_gt(a))
        return roots

    def _plan(self) -> None:
        """Every core repeats: the reference core, whose calls time the snapshots (the block
        is sized at the first one)."""
        ref = next((s for s in self.st.values() if s.period is not None), None)
        if ref is not None:
            ref.block = None
            self.ref, self.next_snap, self.sizing, self.longer, self.grow = ref, ref.n + 1, False, 0, 0
            self.snaps.clear()

    def _clean(self) -> bool:
        """No core is inside an exactly made call past its first WAIT: the state is one
        between calls (the suspended calls have done nothing yet)."""
        for s in self.st.values():
            c = s.cur
            if c is not None and (s.waits_done or c.nwork or any(d > 0 for _, d in c.flags)):
                return False
        return True

    def _snapshot(self, ref) -> None:
        if self.sizing:
            # the first snapshot's rings were in some phase: the block ends the first time
            # (a whole number of the reference core's periods later, longer than ``grow``)
            # every ring is in it again and every core has made whole periods
            n0 = self.snaps[0][1]
            if ref.n - n0[ref.core.index] <= self.grow or [o.phase() for o in self.phased] != self.phase0 \
                    or any(s.period and (s.n - n0[i]) % s.period for i, s in self.st.items()):
                self.next_snap = ref.n + ref.period
                if ref.n - n0[ref.core.index] > ref.period * MAX_BLOCK_PERIODS:
                    self._off("the rings and the cores' periods never came back to one phase")
                return
            ref.block = ref.n - n0[ref.core.index]
            self.sizing = False
        if not self._clean():
            self.next_snap += 1                 # the reference core's next call
            self.snaps.clear()
            return
        if not self.snaps:
            self.gwork.clear()
        walk = _Walk(self._roots())
        self.snaps.append((walk, {i: s.n for i, s in self.st.items()}, len(self.gwork)))
        if len(self.snaps) == 1 and ref.block is None:
            self.phased = [o for o in walk.objs if o.__class__ not in (list, dict, set)
                           and getattr(o, "cycle", None).__class__ is int and hasattr(o, "phase")]
            self.phase0 = [o.phase() for o in self.phased]
            self.sizing = True
            self.next_snap = ref.n + ref.period
            return
        self.next_snap = ref.n + ref.block
        if len(self.snaps) < SNAPSHOTS:
            return
        try:
            self._prove()
        except _Unsettled as e:
            # not yet (a pipeline filling up settles a few blocks later): the next block's
            # snapshot, a few times; then longer blocks
            self.slides += 1
            if self.slides <= SLIDES:
                self.snaps.pop(0)
                return
            self._longer(f"the machine did not repeat: {e}")
            return
        self._start_recording()

    def _longer(self, why: str) -> None:
        """Blocks longer than this one, a few times; then the run is left exact."""
        self.longer += 1
        self.slides = 0
        if self.longer > LONGER:
            self._off(why)
        else:
            ref = self.ref
            self.grow, ref.block = ref.block, None
            self.snaps.clear()
            self.next_snap = ref.n + 1

    def _prove(self) -> None:
        """The snapshots move by one constant per block, and so do the calls and the data
        work between them (raises _Unsettled): the moves, the learned blocks."""
        if any(f.carried for f in self.cluster.flags()):
            raise _Unsettled("a WAIT may still take a credit an earlier launch left (the ledger names it)")
        walks = [w for w, _, _ in self.snaps]
        if len({len(w.objs) for w in walks}) != 1:
            raise _Unsettled("the machine state grew")
        last = walks[-1]
        cl = self.cluster
        bufs = self.bufs = _Buffers([cl.gm.buf] + [m.buf for c in cl.cores for m in c.memories.values()])
        state = []
        for k, obj in enumerate(last.objs):
            fields = [w.fields[k] for w in walks]
            if len({tuple(x[0] for x in f) for f in fields}) != 1:
                raise _Unsettled(f"the fields of {type(obj).__name__} changed")
            for j, (key, _) in enumerate(fields[-1]):
                if key in _SCHEDULER_FIELDS:
                    continue
                vals = [f[j][1] for f in fields]
                v0 = vals[0]
                if all(v is v0 for v in vals):
                    continue                     # (the same object throughout: still)
                try:
                    m = _moving(vals, last, bufs)
                except _Unsettled as e:
                    raise _Unsettled(f"{type(obj).__name__}.{key}: {e}") from None
                if not m.still:
                    state.append((obj, key, m.maker(last.objs, bufs.by_id)))
        # the calls: every core's blocks are the same calls
        learned = {}
        for i, s in self.st.items():
            counts = [c[i] for _, c, _ in self.snaps]
            steps = {b - a for a, b in zip(counts, counts[1:])}
            blk = steps.pop()
            if steps:
                raise _Unsettled(f"{s.core.name} made different numbers of calls per block")
            if blk == 0:
                continue                       # (a core whose kernel returned)
            if s.period is None or blk % s.period:
                raise _Unsettled(f"{s.core.name}'s block is not a whole number of its periods")
            first = len(s.log) - (s.n - counts[0])
            blocks = [s.log[first + b * blk:first + (b + 1) * blk] for b in range(SNAPSHOTS - 1)]
            if first < 0 or len({tuple(c.sig for c in b) for b in blocks}) != 1:
                raise _Unsettled(f"{s.core.name}'s blocks differ")
            s.block = blk
            learned[i] = [_Learned([b[j] for b in blocks], last, bufs) for j in range(blk)]
            s.log.clear()
        # the data work: the same operations each block, in the same order
        ends = [o for _, _, o in self.snaps]
        slices = [self.gwork[a:b] for a, b in zip(ends, ends[1:])]
        if len({len(w) for w in slices}) != 1:
            raise _Unsettled("the blocks queued different numbers of data operations")
        self.work = [_moving([w[k] for w in slices], last, bufs).maker(last.objs, bufs.by_id)
                     for k in range(len(slices[0]))]
        self.gwork = []
        self.state, self.learned, self.walk = state, learned, last
        # the operands' fields recorded calls set (post): at the cut they are the state's again
        touched = {(id(ln.args[i]), k): (ln.args[i], k) for lns in learned.values() for ln in lns
                   for i, k, _ in ln.post}
        self.touched = []
        for o, k in touched.values():
            place = last.place(o)
            if place is not None:
                self.touched.extend((o, key, v) for key, v in last.fields[place] if key == k)

    def _start_recording(self) -> None:
        """The proof holds: from here on the hooked calls are recorded."""
        self._taps(False)
        self.mode = RECORD
        flags = {}
        for lns in self.learned.values():
            for ln in lns:
                for f, _ in ln.flags:
                    flags.setdefault(f, len(flags))
        self.flag_list = list(flags)
        self.shadow = [f.count for f in self.flag_list]   # the flags' counts as recorded calls see them
        self.shadow_waiter = [None] * len(flags)          # the recording core blocked on each
        for lns in self.learned.values():
            for ln in lns:
                need = {}
                for f, d in ln.flags:
                    if d < 0:
                        need[flags[f]] = need.get(flags[f], 0) + 1
                ln.waits = tuple(need.items())
                ln.sets = tuple(flags[f] for f, d in ln.flags if d > 0)
        for s in self.st.values():
            s.base = s.n
            s.j, s.q = 0, SNAPSHOTS - 1        # (block 0 of the learned moves starts at the first snapshot)
            s.lns = self.learned.get(s.core.index)
            s.cap = self._cap(s)
            if s.lns is not None:
                s.core.ff = s                   # (its calls go straight to its record)

    def _cap(self, s):
        """The call count from which the core's instruction budget could be met within a
        block: recording stops there, and the exact engine meets it where it does."""
        if s.block is None:
            return None
        c = s.core
        per = None
        for obj, key, mk in self.state:
            if obj is c and key in ("instructions", "budget"):
                d = mk(1) - mk(0)
                per = (per or 0) + (d if key == "instructions" else -d)
        if not per or per <= 0:
            return None
        return s.base + max(0, (c.budget - c.instructions) // per - 2) * s.block

    # -- recording ---------------------------------------------------------------------------
    def _record(self, core, fn, args, kw):
        """A call of a core that records nothing (no block of its own): the exact state."""
        return self._stop(fn, args, kw, "a core with no block made a call")

    def _wait(self, st, core, ln) -> bool:
        """The WAITs of a recorded call, on the counts: blocks the core until every one can be
        taken, then takes them (False: the run was materialized meanwhile)."""
        sh = self.shadow
        while True:
            for i, k in ln.waits:
                if sh[i] < k:
                    self.shadow_waiter[i] = st
                    core.state = _BLOCKED
                    self.cluster.main.switch()
                    break
            else:
                break
            if self.mode != RECORD:
                return False
        for i, k in ln.waits:
            sh[i] -= k
        return True

    def _set(self, ln) -> None:
        """The SETs of a recorded call, on the counts: wakes a core blocked on one."""
        sh, waiter = self.shadow, self.shadow_waiter
        for i in ln.sets:
            sh[i] += 1
            w = waiter[i]
            if w is not None:
                waiter[i] = None
                w.core.state = _READY
            f = self.flag_list[i]
            if f.waiter is not None:            # a core still in the WAIT of a call made exactly:
                w, f.waiter = f.waiter, None    # it makes that call again, recorded (resumed())
                w.wake()

    def _stop(self, fn, args, kw, why: str = "a call differed from the learned one", relearn: bool = True):
        """A call recording cannot take: the exact state, then the call made exactly."""
        self.materialize(f"{why}: {getattr(fn, '__name__', fn)} on {greenlet.getcurrent().core.name}", relearn)
        return fn(*args, **kw) if kw else fn(*args)

    # -- materialize -------------------------------------------------------------------------
    def materialize(self, why: str | None = None, relearn: bool = False) -> None:
        """The exact state; the run goes on exactly (see the module docstring) - learning
        again if ``relearn``.  ``why``: what ended the recording (None: the run's end)."""
        if self.mode != RECORD:
            return
        self._off(why)
        sts = [s for s in self.st.values() if s.block]
        q = min(((s.n - s.base) // s.block for s in sts), default=0)
        self.blocks_skipped += q
        self.calls_skipped += sum(q * s.block for s in sts)
        cl = self.cluster
        # the data work of the blocks every core completed, after what was queued before
        self._apply(SNAPSHOTS - 1, SNAPSHOTS - 1 + q)
        # the state at the cut (the operands' fields recorded calls set: the last snapshot's,
        # then what moves)
        for obj, key, v in self.touched:
            setattr(obj, key, v)
        at = SNAPSHOTS - 1 + q
        for obj, key, mk in self.state:
            if obj.__class__ is list or obj.__class__ is dict:
                obj[key] = mk(at)
            else:
                setattr(obj, key, mk(at))
        # the calls after the cut, made exactly in an order the flags allow (the recorded
        # order was one; the timing depends on none: see the module docstring)
        todo = [[s, s.base + q * s.block] for s in sts if s.base + q * s.block < s.n]
        cl.ff = self                            # (a re-made call must not block: blocking())
        while todo:
            for t in todo:
                s, k = t
                ln = s.lns[(k - s.base) % s.block]
                if all(self.flag_list[i].count >= n for i, n in ln.waits):
                    self._remake(s, k, ln)
                    t[1] = k + 1
                    break
            else:
                raise KernelError("internal error: the fast-forward engine cannot re-make its recorded calls",
                                  fix="run with engine='exact' and report this kernel")
            todo = [t for t in todo if t[1] < t[0].n]
        cl.ff = None
        for s in self.st.values():
            if s in self.shadow_waiter:         # blocked recording: makes its call exactly
                s.core.state = _READY
            c = s.core
            c.limit = -1 if c.trace is not None else min(c.budget, c.instructions + _SYNC_EVERY)
        self.shadow_waiter = [None] * len(self.shadow_waiter)
        cl.fast_forward = self.report()
        if relearn and self.relearns < RELEARNS:
            self._learn_again()

    def _learn_again(self) -> None:
        """After recording stopped at a call that differed (a loop's next phase, a kernel
        reading a tile): learn the run's next steady state."""
        self.relearns += 1
        self.mode = LEARN
        self._taps(True)
        self._relearn()
        for s in self.st.values():
            s.period = s.block = s.cur = s.lns = s.cap = None
            if s.core.state is not _DONE:
                s.core.ff = self
        self.cluster.ff = self

    def _apply(self, b: int, end: int) -> None:
        """The data work of blocks ``b`` .. ``end - 1``: in batches where it can be, else block
        after block, after the work queued before them."""
        cl = self.cluster
        cl.sync()
        batch, size = None, 1
        first = [m(b) for m in self.work]
        big = sum(a.nbytes for x in first for a in x[1:] if a.__class__ is np.ndarray) > BATCH_OP_BYTES * len(first)
        if big:
            self.unbatched = "its operations are large (batching would save little)"
        elif end - b > 1:
            try:
                batch = _Batch(self.work, self.bufs, min(BATCH_BLOCKS, end - b))
                size = max(2, min(BATCH_BLOCKS, BATCH_BYTES // max(1, batch.bytes)))
            except _Unbatchable as e:
                self.unbatched = str(e)
        while b < end:
            nq = min(size, end - b)
            if batch is not None and nq > 1:
                try:
                    with np.errstate(all="ignore"):
                        batch.run(b, nq)
                    b += nq
                    continue
                except Exception:               # (made again one block at a time: located)
                    batch = None
            pend = cl.pending
            pend.extend([m(b) for m in self.work])
            if len(pend) >= _SYNC_EVERY:
                cl.sync()
            b += 1
        cl.sync()

    def _remake(self, s, k, ln) -> None:
        """Make the recorded call number ``k`` of core ``s`` exactly: its GM tensors at the
        addresses it had, at its kernel line."""
        core = s.core
        q = (k - s.base) // s.block + SNAPSHOTS - 1
        args, kw, fn = ln.args, ln.kw, ln.fn
        if ln.tuples:
            args = list(args)
            for i, mk in ln.tuples:
                args[i] = mk(q)
            args = tuple(args)
        saved = [(args[i], args[i].ptr) for i, *_ in ln.addrs]
        for (_, b, d, dt, bounds, _e), (gt, ptr) in zip(ln.addrs, saved):
            gt.ptr = moved = copy.copy(ptr)
            moved.addr = b + q * d
        loc = core.loc_override
        core.loc_override = ln.loc
        g = _Remake(lambda: fn(*args, **kw) if kw else fn(*args), parent=greenlet.getcurrent())
        g.core = core
        try:
            g.switch()
        finally:
            core.loc_override = loc
            for gt, ptr in saved:
                gt.ptr = ptr


class _Remake(greenlet.greenlet):
    """Where a recorded call is made again (ISA calls find their core on the greenlet)."""
    core = None


class _Tap(list):
    """The queue of data work while learning: each operation is also logged, in order, and
    counted on the call that queued it."""

    def __init__(self, ff):
        super().__init__()
        self.ff = ff

    def append(self, item):
        list.append(self, item)
        self.ff._tapped((item,))

    def extend(self, items):
        items = list(items)
        list.extend(self, items)
        self.ff._tapped(items)


def _tapped(self: FastForward, items) -> None:
    core = getattr(greenlet.getcurrent(), "core", None)
    s = self.st.get(core.index) if core is not None else None
    if s is None or s.cur is None:
        self._relearn()                         # queued outside a hooked call
    else:
        s.cur.nwork += len(items)
        self.gwork.extend(items)


FastForward._tapped = _tapped


def _learn_wait(ff, core, wait, flag, what, info=None):
    s = ff.st.get(core.index)
    if s is not None and s.cur is not None:
        s.cur.flags.append((flag, -1))
    elif ff.mode == LEARN:
        ff._relearn()
    r = wait(flag, what, info)
    if s is not None:
        s.waits_done += 1
    return r


def _learn_set(ff, set_flag, sender, flag, at, order=None):
    s = ff.st.get(sender.index)
    if s is not None and s.cur is not None:
        s.cur.flags.append((flag, 1))
    elif ff.mode == LEARN:
        ff._relearn()
    return set_flag(sender, flag, at, order)


def _core_states():
    from .core import CoreState
    return CoreState.BLOCKED, CoreState.READY, CoreState.DONE


_BLOCKED, _READY, _DONE = _core_states()
