"""Periodic fast-forward: a run's steady state recorded, not simulated (``engine="periodic"``).

A streaming kernel repeats itself: every ring period each core issues the same instructions
on the same tiles, its GM windows moved by a constant.  The exact engine simulates each one
(timing, scoreboard, flags, the instruction's own checks).  This engine learns the period,
proves the machine repeats with it, and from then on only records:

1. LEARN - every hooked ISA call (the hot instructions call :meth:`FastForward.call` first)
   runs exactly and is logged with what it did: the data work it queued, the cross-core
   flags it waited for and set, what it returned.  Once every core's calls repeat, the
   machine state (cores, flags, rings, and the tiles the calls use: :class:`_Snapshot`) is
   taken at four block boundaries.  A block is a whole number of every core's periods and
   of every ring's cycle (the ``cycle`` of each object of the state that has one: a ring's
   slots, its SyncPeriod, its staging slots).  The state must move by the same amount each
   block - clocks and counters by a constant, memory views by a constant offset,
   everything else equal - and so must every call's work: the engine's step then commutes
   with that move, so every later block moves by it too.
2. RECORD - a hooked call that matches the learned call at its position (the same
   function, the same tiles, its GM window at the predicted offset and inside its tensor)
   queues the learned data work with its GM views moved, counts the flags it waits for and
   sets (a core still blocks while a count is zero) and returns the learned result moved.
   The machine state is not touched.
3. MATERIALIZE - at the first call that does not match, any other use of the machine (an
   ISA call that is not hooked, ``Tile.array``), a deadlock, the instruction budget in
   sight or the end of the run, the exact state is rebuilt: the last snapshot moved by the
   number of whole blocks every core has completed since, then the calls recorded after
   that cut re-run exactly, in the order they were recorded (their data work, queued when
   they were recorded, is not queued again).  The run goes on exactly.

The data work is queued in the order the cores issue it, as the exact engine does, and the
timing model depends only on each core's instruction sequence and on which SET each WAIT
takes (flags are FIFO), not on the order the cores ran in: outputs, cycles, per-core counts
and stalls, errors and their lines are the exact engine's (tests/sim/test_periodic.py runs
both).  The engine applies to runs with the checkers, the trace, exploration and the cycle
bound off, automatic synchronisation and timing on (:func:`applies`); every other run, and
every kernel that never settles, runs exactly.
"""
from __future__ import annotations

import enum
import math
from collections import deque
from functools import partial

import greenlet
import numpy as np

from ..errors import KernelError

LEARN, RECORD, OFF = "learn", "record", "off"

#: calls a core may run while learning before the engine gives up on the run (exact from then)
LEARN_LIMIT = 20000
#: the longest per-core period (in calls) looked for
MAX_PERIOD = 256
#: blocks between snapshots: at least this many ring cycles (a multiple of every cycle)
MIN_BLOCK_CYCLES = 2
#: snapshots that must move by one constant (three equal moves)
SNAPSHOTS = 4

# fields of the machine state that are the scheduler's (who runs, who waits) or caches the
# engine keeps for itself: compared, never written back (materialize reconciles them)
_SCHEDULER_FIELDS = frozenset({"state", "waiting", "waiter", "glet", "limit"})
# fields that are not machine state at all: never walked
_SKIP_FIELDS = frozenset({"pending", "marks", "main", "steps", "_next", "deadline", "ff", "trace", "waits",
                          "signals", "context", "pool", "kernel", "explainers", "annotators", "hinters",
                          "finishers", "carried_hooks", "warnings", "policy", "costs", "event_words", "op_word",
                          "loc_override", "cluster", "platform", "memories", "gm", "model", "_sites"})


_BLOCKED = _READY = None     # CoreState members (set below: sim.core imports nothing from here)


class _Restart(Exception):
    """A core suspended in its first WAIT of a call run exactly, woken after RECORD began:
    the call did nothing yet, so it is made again as a recorded one."""


class _Unsettled(Exception):
    """The machine does not move by one constant per block (the check's reason)."""


def applies(cluster) -> bool:
    """Whether a run on ``cluster`` can be fast-forwarded (see the module docstring)."""
    return (cluster.checker is None and cluster.trace is None and cluster.policy is None
            and not cluster.manual_sync and cluster.timing and cluster.until_cycle is None)


# -- values as a form and the numbers that move ----------------------------------------
class _Buffers:
    """The memories' byte arrays, by address: a view into one is a (memory, offset) form."""

    def __init__(self, cluster):
        bufs = [cluster.gm.buf] + [m.buf for c in cluster.cores for m in c.memories.values()]
        self.spans = sorted((b.__array_interface__["data"][0], b.nbytes, b) for b in bufs)

    def find(self, a: np.ndarray):
        p = a.__array_interface__["data"][0]
        for lo, n, b in self.spans:
            if lo <= p < lo + n or (n == 0 and p == lo):
                return b, p - lo
        return None, None


def _form(v, bufs: _Buffers, nums: list, refs, keep: dict):
    """The form of value ``v`` (hashable; equal forms differ only in ``nums``) - appending the
    numbers that may move (ints, memory offsets) to ``nums``.  ``refs(obj)`` gives a mutable
    object's place in the walk (None: the object itself, kept in ``keep`` by id)."""
    t = v.__class__
    if t is int:
        nums.append(v)
        return 0
    if v is None or t is bool or t is str or t is float or t is bytes:
        return ("k", t, v)
    if t is np.ndarray:
        b, off = bufs.find(v)
        if b is None:
            keep[id(v)] = v
            return ("o", id(v))
        nums.append(off)
        return ("a", id(b), v.shape, v.strides, v.dtype.str)
    if isinstance(v, tuple):
        return ("t", t, tuple(_form(x, bufs, nums, refs, keep) for x in v))
    if t is partial:
        return ("p", _form(v.func, bufs, nums, refs, keep), _form(v.args, bufs, nums, refs, keep),
                _form(tuple(sorted(v.keywords.items())), bufs, nums, refs, keep))
    if isinstance(v, (np.generic, np.dtype, enum.Enum, frozenset)):
        return ("k", t, v)
    r = refs(v)
    if r is not None:
        return ("r", r)
    keep[id(v)] = v
    return ("o", id(v))


def _build(form, nums, objs, bufs_by_id, keep):
    """The value of ``form`` with the numbers ``nums`` (an iterator); ``objs``: the walk's
    objects by place."""
    if form == 0:
        return next(nums)
    k = form[0]
    if k == "k":
        return form[2]
    if k == "a":
        _, bid, shape, strides, dt = form
        return np.ndarray(shape, np.dtype(dt), buffer=bufs_by_id[bid], offset=next(nums), strides=strides)
    if k == "t":
        items = [_build(f, nums, objs, bufs_by_id, keep) for f in form[2]]
        t = form[1]
        return tuple(items) if t is tuple else t(*items)
    if k == "p":
        fn = _build(form[1], nums, objs, bufs_by_id, keep)
        args = _build(form[2], nums, objs, bufs_by_id, keep)
        kw = dict(_build(form[3], nums, objs, bufs_by_id, keep))
        return partial(fn, *args, **kw)
    if k == "r":
        return objs[form[1]]
    return keep[form[1]]                    # ("o", id): the object itself


def _maker(form, base, step, objs, bufs_by_id, keep):
    """A function of the block ``q`` that builds the value of ``form`` whose numbers are
    ``base + q * step`` (the numbers taken in order; :func:`_build` made once)."""
    pos = [0]

    def mk(f):
        if f == 0:
            b, d = base[pos[0]], step[pos[0]]
            pos[0] += 1
            return lambda q: b + q * d
        k = f[0]
        if k == "a":
            _, bid, shape, strides, dt = f
            b, d = base[pos[0]], step[pos[0]]
            pos[0] += 1
            buf, dt = bufs_by_id[bid], np.dtype(dt)
            nd = np.ndarray
            return lambda q: nd(shape, dt, buffer=buf, offset=b + q * d, strides=strides)
        if k == "t":
            ms = [mk(x) for x in f[2]]
            t = f[1]
            if len(ms) == 3:                     # (an Event, a queued operation of three)
                m0, m1, m2 = ms
                return lambda q: _tuple_new(t, (m0(q), m1(q), m2(q)))
            return lambda q: _tuple_new(t, [m(q) for m in ms])
        if k == "p":
            fm, am, km = mk(f[1]), mk(f[2]), mk(f[3])
            return lambda q: partial(fm(q), *am(q), **dict(km(q)))
        v = f[2] if k == "k" else objs[f[1]] if k == "r" else keep[f[1]]
        return lambda q: v
    return mk(form)


_tuple_new = tuple.__new__      # a tuple or tuple subclass (an Event, a SourceLoc) from its items


class _Moving:
    """A value that moves by a constant per block: its form, numbers at block 0 and moves."""
    __slots__ = ("form", "base", "step", "obj", "still", "keep")

    def __init__(self, form, base, step, obj, keep):
        self.form, self.base, self.step, self.obj, self.keep = form, base, step, obj, keep
        self.still = not any(step)          # the same value every block: ``obj`` itself

    def at(self, q, objs, bufs_by_id):
        if self.still:
            return self.obj
        return _build(self.form, iter([b + q * s for b, s in zip(self.base, self.step)]), objs, bufs_by_id,
                      self.keep)

    def maker(self, objs, bufs_by_id):
        """``at`` as a function of ``q`` alone (for the calls recorded again and again)."""
        if self.still:
            obj = self.obj
            return lambda q: obj
        return _maker(self.form, self.base, self.step, objs, bufs_by_id, self.keep)


def _moving(samples, objs, bufs) -> _Moving:
    """The _Moving of a value sampled at consecutive blocks (raises _Unsettled if it is not)."""
    forms = []
    keep = {}
    for v in samples:
        nums = []
        forms.append((_form(v, bufs, nums, objs.place, keep), nums))
    f0, n0 = forms[0]
    step = None
    for f, n in forms[1:]:
        if f != f0:
            raise _Unsettled(f"its form changed: {f0!r} -> {f!r}")
    for (_, a), (_, b) in zip(forms, forms[1:]):
        d = [y - x for x, y in zip(a, b)]
        if step is None:
            step = d
        elif d != step:
            raise _Unsettled(f"it moved by {step} then by {d}")
    return _Moving(f0, n0, step or [0] * len(n0), samples[0], keep)


# -- the machine state ----------------------------------------------------------------------
class _Walk:
    """Every mutable object of the machine state reachable from ``roots``, in a fixed order,
    with its fields' values (the scheduler's and the non-state fields: see the sets above)."""

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
    if t in (list, dict, set):
        return True
    if isinstance(o, (type, greenlet.greenlet, np.ndarray, tuple, partial)) or callable(o) and not hasattr(o, "__dict__"):
        return False
    if t.__module__.startswith(("numpy", "builtins", "enum", "functools")):
        return False
    return hasattr(o, "__dict__") or hasattr(t, "__slots__")


def _fields(o) -> list:
    t = o.__class__
    if t is list:
        return list(enumerate(o))
    if t is dict:
        return [(k, v) for k, v in o.items() if not (isinstance(k, str) and k in _SKIP_FIELDS)]
    if t is set:
        return [("set", frozenset(id(x) if _walkable(x) else x for x in o))]
    if callable(o) and not hasattr(t, "__slots__") and isinstance(getattr(o, "__dict__", None), dict) \
            and t.__module__ == "builtins":
        return []
    names = []
    for k in getattr(o, "__dict__", {}):
        names.append(k)
    for c in t.__mro__:
        for k in c.__dict__.get("__slots__", ()):
            if k not in ("__dict__", "__weakref__"):
                names.append(k)
    out = []
    for k in names:
        if k in _SKIP_FIELDS:
            continue
        try:
            out.append((k, getattr(o, k)))
        except AttributeError:
            continue
    return out


def _children(v, todo) -> None:
    if isinstance(v, tuple):
        for x in v:
            _children(x, todo)
    elif _walkable(v):
        todo.append(v)


class _Snapshot:
    """The machine state at one block boundary: the walk and every core's call count."""

    def __init__(self, roots, counts):
        self.walk = _Walk(roots)
        self.counts = counts


# -- learned and recorded calls -----------------------------------------------------------
class _Call:
    """One hooked call: made exactly (learning) or recorded."""
    __slots__ = ("fn", "args", "kw", "sig", "loc", "work", "flags", "result", "ptrs")

    def __init__(self, fn, args, kw, sig, loc):
        self.fn, self.args, self.kw, self.sig, self.loc = fn, args, kw, sig, loc
        # the GlobalTensor arguments' pointers at the call (the kernel moves them later)
        self.ptrs = tuple(a.ptr for a in args if _is_gt(a))
        self.work: list = []
        self.flags: list = []
        self.result = None


class _Learned:
    """One position of a core's block: the call and how its parts move per block."""
    __slots__ = ("fn", "args", "kw", "gts", "work", "flags", "result", "loc", "ptr", "waits", "sets",
                 "still_work", "makers", "result_at", "addrs", "scalars")

    def __init__(self, calls, objs, bufs):
        c0 = calls[0]
        self.fn, self.kw, self.loc, self.flags = c0.fn, c0.kw, c0.loc, c0.flags
        for c in calls[1:]:
            if c.flags != c0.flags or c.kw != c0.kw or len(c.work) != len(c0.work):
                raise _Unsettled(f"the call {getattr(c0.fn, '__name__', c0.fn)} did other work")
        self.args = c0.args
        # a GlobalTensor argument's pointer: (position, moving address)
        where = [i for i, a in enumerate(c0.args) if _is_gt(a)]
        self.gts = []
        for k, i in enumerate(where):
            p0 = c0.ptrs[k]
            if p0 is None or any(c.ptrs[k] is None or c.ptrs[k].dtype != p0.dtype or c.ptrs[k].bounds != p0.bounds
                                 for c in calls):
                raise _Unsettled("a GlobalTensor argument changed")
            self.gts.append((i, _moving([c.ptrs[k].addr for c in calls], objs, bufs), p0.dtype, p0.bounds,
                             c0.args[i]._extent))
        self.work = [_moving([c.work[j] for c in calls], objs, bufs) for j in range(len(c0.work))]
        self.result = _moving([c.result for c in calls], objs, bufs)

    def compile(self, objs, bufs_by_id) -> None:
        """What recording this call does, made ready: the WAITs it needs (flag, count), the
        flags it sets, its work (all of it the same each block, or a maker per item), its
        result, its GlobalTensors' addresses."""
        need = {}
        for f, d in self.flags:
            if d < 0:
                need[f] = need.get(f, 0) + 1
        self.waits = tuple(need.items())
        self.sets = tuple(f for f, d in self.flags if d > 0)
        self.still_work = all(w.still for w in self.work)
        self.makers = (tuple(w.obj for w in self.work) if self.still_work
                       else tuple(w.maker(objs, bufs_by_id) for w in self.work))
        self.result_at = self.result.maker(objs, bufs_by_id)
        self.addrs = tuple((i, mv.base[0], mv.step[0], dt, bounds, ext) for i, mv, dt, bounds, ext in self.gts)
        self.scalars = tuple(i for i, a in enumerate(self.args) if not _walkable(a))


def _is_gt(a) -> bool:
    return a.__class__.__name__ == "GlobalTensor"


def _sig(fn, args, kw):
    """What must be the same for two calls to be the same call: the function, the objects
    (GlobalTensors by identity, their pointers apart) and the other values."""
    out = [fn]
    for a in args:
        t = a.__class__
        if t is int or t is float or t is str or t is bool or a is None:
            out.append((t, a))
        else:
            out.append(id(a))
    if kw:
        out.append(tuple(sorted((k, v if isinstance(v, (int, float, str)) or v is None else id(v))
                                for k, v in kw.items())))
    return tuple(out)


class _CoreState:
    __slots__ = ("core", "log", "n", "period", "cur", "waits_done", "block", "base", "rec", "shadow_wait",
                 "cap")

    def __init__(self, core):
        self.core = core
        self.log: list = []          # learning: the calls made, in order
        self.n = 0                   # hooked calls completed
        self.period = None           # calls per period (learning)
        self.cur = None              # the call running exactly (learning)
        self.waits_done = 0          # WAITs the running call has passed
        self.block = None            # calls per block (recording)
        self.base = None             # the call count at the last snapshot
        self.rec: list = []          # recording: (global sequence, call number, actual call)
        self.shadow_wait = None      # the flag a recording core is blocked on
        self.cap = None              # call count at which the budget comes in sight


class FastForward:
    """The fast-forward engine of one cluster (attached to it and its cores as ``ff``)."""

    def __init__(self, cluster, kernels):
        self.cluster = cluster
        self.mode = LEARN
        self.st = {c.index: _CoreState(c) for c in kernels}
        self.snaps: list = []
        self.ref = None               # (core index, call number mod block) of the snapshots
        self.next_snap = None         # the reference core's call count at the next snapshot
        self.block_factor = 1
        self.learned: dict = {}
        self.shadow: dict = {}
        self.seq = 0
        self.reason = None            # why the run was not (or no longer) fast-forwarded
        self.blocks_skipped = 0
        self._taps(True)
        for c in kernels:
            c.ff = self
        cluster.ff = self

    # -- the taps of learning: what each exactly made call queued, waited for and set ----
    def _taps(self, on: bool) -> None:
        cl = self.cluster
        if on:
            tap = _Tap(self)
            tap.extend_plain(cl.pending)
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

    def _give_up(self, why: str) -> None:
        if self.mode == LEARN:
            self._taps(False)
        self.mode = OFF
        self.reason = self.reason or why
        for s in self.st.values():
            s.core.ff = None

    # -- the hook --------------------------------------------------------------------------
    def call(self, core, fn, args, kw):
        """A hooked ISA call of ``core``: made exactly and learned, or recorded."""
        if self.mode == RECORD:
            return self._record(core, fn, args, kw)
        return self._learn(core, fn, args, kw)

    def unhooked(self, core) -> None:
        """The kernel uses the machine other than through a hooked call: learning starts
        over; recording stops (the exact state is rebuilt first)."""
        if self.mode == RECORD:
            self.materialize()
        elif self.mode == LEARN:
            self._relearn(core)

    def _relearn(self, core) -> None:
        for s in self.st.values():
            s.log.clear()
            s.period = None
        self.snaps.clear()
        self.ref = self.next_snap = None

    # -- learning --------------------------------------------------------------------------
    def _learn(self, core, fn, args, kw):
        st = self.st[core.index]
        if self.next_snap is not None and self.ref[0] == core.index and st.n == self.next_snap:
            self._snapshot(st)
            if self.mode == RECORD:
                return self._record(core, fn, args, kw)
        from .location import call_site
        c = _Call(fn, args, kw, _sig(fn, args, kw), core.loc_override or call_site(4))
        st.cur, st.waits_done = c, 0
        core.ff = None
        try:
            r = fn(*args, **kw) if kw else fn(*args)
        except _Restart:
            st.cur = None
            core.ff = self
            return self._record(core, fn, args, kw)
        finally:
            if core.ff is None and self.mode != OFF:
                core.ff = self
        st.cur = None
        c.result = r
        if self.mode != LEARN:
            return r
        st.n += 1
        st.log.append(c)
        if len(st.log) > LEARN_LIMIT:
            self._give_up(f"{core.name}'s calls did not settle into a period within {LEARN_LIMIT} calls")
        elif st.period is None and len(st.log) % 8 == 0:
            self._detect(st)
        return r

    def _detect(self, st) -> None:
        sigs = [c.sig for c in st.log[-2 * MAX_PERIOD:]]
        n = len(sigs)
        for p in range(1, n // 3 + 1):
            if sigs[n - p:] == sigs[n - 2 * p:n - p] == sigs[n - 3 * p:n - 2 * p]:
                st.period = p
                break
        if st.period is not None and all(s.period is not None or s.core.state.value == "done"
                                         for s in self.st.values()):
            self._plan()

    def _plan(self) -> None:
        """Every core repeats: choose the block and the moments of the snapshots."""
        cycle = 1
        for o in _Walk(self._roots()).objs:
            c = getattr(o, "cycle", None) if not isinstance(o, (list, dict, set)) else None
            if isinstance(c, int) and c > 0:
                cycle = math.lcm(cycle, c)
        live = [s for s in self.st.values() if s.period is not None]
        if not live:
            return
        ref = live[0]
        ref.block = ref.period * cycle * MIN_BLOCK_CYCLES * self.block_factor
        self.ref = (ref.core.index, None)
        self.next_snap = ref.n + 1

    def _roots(self) -> list:
        """Where the machine state is: the cluster, its cores and the objects the calls use."""
        roots = [self.cluster] + [s.core for s in self.st.values()]
        for s in self.st.values():
            for c in s.log[-(s.period or 1) * 4:]:
                roots.extend(a for a in c.args if not _is_gt(a))
        return roots

    def _clean(self) -> bool:
        """No other core is inside an exactly made call past its first WAIT."""
        for s in self.st.values():
            c = s.cur
            if c is not None and (s.waits_done or c.work or len([f for f in c.flags if f[1] > 0])):
                return False
        return True

    def _snapshot(self, ref) -> None:
        if not self._clean():
            self.next_snap += 1                 # try the reference core's next call
            if self.snaps:
                self.snaps.clear()
            return
        counts = {i: s.n for i, s in self.st.items()}
        self.snaps.append(_Snapshot(self._roots(), counts))
        self.next_snap = ref.n + ref.block
        if len(self.snaps) == SNAPSHOTS:
            try:
                self._prove()
            except _Unsettled as e:
                self.snaps.clear()
                self.block_factor *= 2
                if self.block_factor > 4:
                    self._give_up(f"the machine did not repeat: {e}")
                    return
                self._plan()
                return
            self._taps(False)
            self.mode = RECORD
            self.shadow = {}
            self.waiting = list(self.st.values())
            for s in self.st.values():
                s.base = s.n
            self._budget_caps()

    def _prove(self) -> None:
        """The snapshots move by one constant per block, and so does every call: the
        learned blocks and the state's moves (raises _Unsettled)."""
        snaps = self.snaps
        walks = [s.walk for s in snaps]
        if len({len(w.objs) for w in walks}) != 1:
            raise _Unsettled("the machine state grew")
        bufs = _Buffers(self.cluster)
        last = walks[-1]
        self.bufs = bufs
        self.bufs_by_id = {id(b): b for _, _, b in bufs.spans}
        # the state: every field of every object, moving by one constant
        state = []
        for k, obj in enumerate(last.objs):
            fields = [w.fields[k] for w in walks]
            keys = [tuple(x[0] for x in f) for f in fields]
            if len(set(keys)) != 1:
                raise _Unsettled(f"the fields of {type(obj).__name__} changed")
            for j, (key, _) in enumerate(fields[-1]):
                if key in _SCHEDULER_FIELDS:
                    continue
                vals = [f[j][1] for f in fields]
                try:
                    m = _moving(vals, last, bufs)
                except _Unsettled as e:
                    raise _Unsettled(f"{type(obj).__name__}.{key}: {e}") from None
                if not m.still:
                    state.append((obj, key, m))
        self.state = state
        # the calls: every core's block, the same calls each block
        self.learned = {}
        for i, s in self.st.items():
            counts = [sn.counts[i] for sn in snaps]
            steps = {b - a for a, b in zip(counts, counts[1:])}
            if len(steps) != 1:
                raise _Unsettled(f"{s.core.name} made {sorted(steps)} calls per block")
            blk = steps.pop()
            if blk == 0:
                continue                       # (a core that finished)
            if s.period is None or blk % s.period:
                raise _Unsettled(f"{s.core.name}'s block is not a whole number of its periods")
            s.block = blk
            first = len(s.log) - (s.n - counts[0])
            blocks = [s.log[first + b * blk:first + (b + 1) * blk] for b in range(SNAPSHOTS - 1)]
            if any(len(b) != blk for b in blocks):
                raise _Unsettled("the log is shorter than the blocks")
            if len({tuple(c.sig for c in b) for b in blocks}) != 1:
                raise _Unsettled(f"{s.core.name}'s blocks differ")
            # the learned block starts at the last snapshot (block SNAPSHOTS - 1 is the next one)
            self.learned[i] = [_Learned([b[j] for b in blocks], last, bufs) for j in range(blk)]
            for ln in self.learned[i]:
                ln.compile(last.objs, self.bufs_by_id)
            s.log.clear()

    def _budget_caps(self) -> None:
        """The call count of each core from which the instruction budget could be met in a
        block: recording stops there (the exact engine then meets it where it does)."""
        moves = {(id(o), k): m for o, k, m in self.state}
        for s in self.st.values():
            if s.block is None:
                continue
            c = s.core
            mi, mb = moves.get((id(c), "instructions")), moves.get((id(c), "budget"))
            di = mi.step[0] if mi is not None else 0
            db = mb.step[0] if mb is not None else 0
            gap = c.budget - c.instructions
            per = di - db
            if per <= 0:
                s.cap = None
                continue
            blocks = gap // per - 2
            s.cap = s.base + max(0, blocks) * s.block

    # -- recording -------------------------------------------------------------------------
    def _record(self, core, fn, args, kw):
        st = self.st[core.index]
        blk = st.block
        n = st.n
        if blk is None or (st.cap is not None and n >= st.cap):
            self.materialize()
            return fn(*args, **kw) if kw else fn(*args)
        q, j = divmod(n - st.base, blk)
        q += SNAPSHOTS - 1                      # (the learned block 0 starts at the first snapshot)
        ln = self.learned[core.index][j]
        if ln.fn is not fn or not _same_args(ln, args, kw, q):
            self.materialize()
            return fn(*args, **kw) if kw else fn(*args)
        sh = self.shadow
        if ln.waits:
            # every WAIT's count first: a core blocks before it does anything
            while True:
                short = None
                for f, k in ln.waits:
                    if sh.get(f, f.count) < k:
                        short = f
                        break
                if short is None:
                    break
                st.shadow_wait = short
                core.state = _BLOCKED
                self.cluster.main.switch()
                st.shadow_wait = None
                if self.mode != RECORD:         # materialized meanwhile: made exactly
                    return fn(*args, **kw) if kw else fn(*args)
            for f, k in ln.waits:
                sh[f] = sh.get(f, f.count) - k
        for f in ln.sets:
            sh[f] = sh.get(f, f.count) + 1
            for s in self.waiting:
                if s.shadow_wait is f:
                    s.shadow_wait = None
                    s.core.state = _READY
        pend = self.cluster.pending
        if ln.still_work:
            pend.extend(ln.makers)
        else:
            for m in ln.makers:
                pend.append(m(q))
        self.seq += 1
        rec = st.rec
        rec.append((self.seq, n, fn, args, kw, q, j))
        st.n = n + 1
        if len(rec) > 4 * blk:
            self._prune()
        if len(pend) >= 4096:
            self.cluster.sync()
        return ln.result_at(q)

    def _cut(self) -> int:
        """Whole blocks every recording core has completed since the last snapshot."""
        return min(((s.n - s.base) // s.block for s in self.st.values() if s.block), default=0)

    def _prune(self) -> None:
        """Forget the recorded calls before the cut (only the later ones are made again)."""
        q = self._cut()
        for s in self.st.values():
            if s.block:
                cut = s.base + q * s.block
                k = 0
                while k < len(s.rec) and s.rec[k][1] < cut:
                    k += 1
                del s.rec[:k]

    @property
    def walk_objs(self):
        return self.snaps[-1].walk.objs

    # -- materialize -----------------------------------------------------------------------
    def materialize(self) -> None:
        """Rebuild the exact state and go on exactly (see the module docstring)."""
        if self.mode != RECORD:
            return
        self.mode = OFF
        sts = [s for s in self.st.values() if s.block]
        q = self._cut()
        self.blocks_skipped = q
        objs, bb = self.walk_objs, self.bufs_by_id
        for obj, key, m in self.state:
            v = m.at(q + SNAPSHOTS - 1, objs, bb)
            if isinstance(obj, (list, dict)):
                obj[key] = v
            else:
                setattr(obj, key, v)
        # the shadow counts were the flags' counts: the moved state has them (the
        # re-made calls below count them again)
        for s in self.st.values():
            s.core.ff = None
        cut = {s.core.index: s.base + q * s.block for s in sts}
        later = sorted((r for s in self.st.values() for r in s.rec if r[1] >= cut.get(s.core.index, 0)),
                       key=lambda r: r[0])
        owner = {id(r): s for s in self.st.values() for r in s.rec}
        for r in later:
            self._remake(owner[id(r)].core, r)
        for s in self.st.values():
            s.rec.clear()
            if s.shadow_wait is not None:
                s.shadow_wait = None
                s.core.state = s.core.state.__class__.READY
            c = s.core
            c.limit = -1 if c.trace is not None else min(c.budget, c.instructions + 4096)

    def _remake(self, core, r) -> None:
        """Make the recorded call ``r`` of ``core`` exactly, again: its GM tensors at the
        addresses it had, its data work not queued again (it was, when it was recorded)."""
        _, _, fn, args, kw, q, j = r
        ln = self.learned[core.index][j]
        saved = [(args[i], args[i].ptr) for i, *_ in ln.gts]
        for (i, mv, dt, bounds, _e), (gt, ptr) in zip(ln.gts, saved):
            gt.ptr = ptr.__class__(mv.at(q, None, None) if not mv.still else mv.obj, dt, bounds)
        loc, keep = core.loc_override, core.pending
        core.loc_override = ln.loc
        core.pending = []
        g = _Remake(lambda: fn(*args, **kw) if kw else fn(*args), parent=greenlet.getcurrent())
        g.core = core
        try:
            g.switch()
        finally:
            core.loc_override, core.pending = loc, keep
            for gt, ptr in saved:
                gt.ptr = ptr

    def blocking(self, core) -> None:
        """``core`` is about to block in a WAIT made exactly."""
        if isinstance(greenlet.getcurrent(), _Remake):
            raise KernelError(f"internal error: {core.name} blocked re-making a recorded call",
                              fix="run with engine='exact' and report this kernel")

    def resumed(self, core, flag) -> None:
        """``core`` resumed in a WAIT made exactly: after RECORD began, its call starts over."""
        if self.mode == RECORD:
            core.waiting = None
            if flag.waiter is core:
                flag.waiter = None
            raise _Restart()

    def finish(self) -> None:
        """The run's kernels all returned (or the run stops): the exact state, and no hooks."""
        if self.mode == RECORD:
            self.materialize()
        elif self.mode == LEARN:
            self._give_up("the run ended while learning")
        for s in self.st.values():
            s.core.ff = None
        self.cluster.ff = None

    def deadlock(self) -> bool:
        """Every core waits: when recording, rebuild the exact state and let the cores make
        their calls exactly (they block again where the exact engine reports them)."""
        if self.mode == RECORD:
            self.materialize()
            return True
        return False


class _Remake(greenlet.greenlet):
    core = None


_SCALARS = (int, float, str, bool)


def _same_args(ln: _Learned, args, kw, q) -> bool:
    """The call is the learned one: the same objects (the tiles, the pipe; by identity, as
    they compare) and scalars of the same type and value, its GlobalTensors' pointers where
    the block puts them and inside their tensors."""
    la = ln.args
    if args != la or (kw or None) != (ln.kw or None):
        return False
    for i in ln.scalars:
        if args[i].__class__ is not la[i].__class__:
            return False
    for i, b, d, dt, bounds, ext in ln.addrs:
        p = args[i].ptr
        addr = b + q * d
        if p is None or p.addr != addr or p.dtype != dt or p.bounds != bounds:
            return False
        if bounds is not None and not (bounds[0] <= addr and addr + ext <= bounds[1]):
            return False
    return True


class _Tap(list):
    """The queue of data work while learning: each item is also logged on the call that
    queued it."""

    def __init__(self, ff):
        super().__init__()
        self.ff = ff

    def extend_plain(self, items):
        list.extend(self, items)

    def append(self, item):
        list.append(self, item)
        self.ff._tapped(item)

    def extend(self, items):
        items = list(items)
        list.extend(self, items)
        for i in items:
            self.ff._tapped(i)


def _tapped(self, item) -> None:
    core = getattr(greenlet.getcurrent(), "core", None)
    s = self.st.get(core.index) if core is not None else None
    if s is None or s.cur is None:
        self._relearn(core)
    else:
        s.cur.work.append(item)


FastForward._tapped = _tapped


def _learn_wait(ff, core, wait, flag, what, info=None):
    s = ff.st.get(core.index)
    if s is not None and s.cur is not None:
        s.cur.flags.append((flag, -1))
    elif ff.mode == LEARN:
        ff._relearn(core)
    r = wait(flag, what, info)
    if s is not None:
        s.waits_done += 1
    return r


def _learn_set(ff, set_flag, sender, flag, at, order=None):
    s = ff.st.get(sender.index)
    if s is not None and s.cur is not None:
        s.cur.flags.append((flag, 1))
    elif ff.mode == LEARN:
        ff._relearn(sender)
    return set_flag(sender, flag, at, order)


def _drop(self) -> None:
    """The run stops with an error: no more hooks (its state stays as it is)."""
    if self.mode == LEARN:
        self._taps(False)
    self.mode = OFF
    for s in self.st.values():
        s.core.ff = None
    self.cluster.ff = None


FastForward.drop = _drop


def _states() -> None:
    global _BLOCKED, _READY
    from .core import CoreState
    _BLOCKED, _READY = CoreState.BLOCKED, CoreState.READY


_states()
