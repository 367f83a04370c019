"""The fast-forward engine of one run: its hooks, learning, proof, recording, blocks taken
whole and materialization (the package docstring says how)."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import partial
from sys import _getframe

import greenlet
import numpy as np

from ...errors import KernelError
from ..location import call_site
from ..race import gm_region, overlap
from .batch import Batch, Unbatchable, batch_cost
from .calls import FRESH_CALLS, SCOREBOARD, Call, Fresh, Learned, Made, alike, is_tensor, same_args
from . import checker
from .loops import INFINITE
from .values import Buffers, Moving, Unsettled, as_moving, interned, maker_of, tuple_new
from .walk import SCHEDULER_FIELDS, Walk, fields_by_name, fields_changed, fields_now, walkable

WARMUP, LEARN, RECORD, OFF = "warmup", "learn", "record", "off"

#: hooked calls a core makes exactly, at no cost, before learning begins (a short run is not
#: worth learning)
WARMUP_CALLS = 32
#: hooked calls a core may make while learning before the run is left exact (learning costs
#: a few times an exact call)
LEARN_LIMIT = 4096
#: calls of one place (its line) among a core's last 2 * MAX_PERIOD that, all different (a scalar
#: moving with the loop), show that no period of equal calls ends there (never_same): learning
#: rests - the calls are made exactly at no extra cost - for REST_CALLS calls, twice as many each
#: time, then starts again (a later loop may repeat)
NEVER_SAME = 6
REST_CALLS = 4096
#: the longest per-core period (in calls) looked for
MAX_PERIOD = 256
#: the fewest calls back a period must explain besides its three repeats (a loop that makes
#: one call three times in a row is not a loop of period 1)
PERIOD_WINDOW = 24
#: times a run learns again after its recording stopped at a call that differed
RELEARNS = 8
#: times learning may start over (an instruction it does not record in the loop) before the
#: run is left exact
RESTARTS = 64
#: snapshots that must move by one constant (three equal moves)
SNAPSHOTS = 4
#: later snapshots tried, one block apart, before longer blocks are
SLIDES = 4
#: a block is the reference core's periods until every ring is back in the phase it was in (a
#: whole number of its cycles: its slots, its SyncPeriod, two staging slots), at most this many
MAX_BLOCK_PERIODS = 64
#: times a longer block is tried when one does not prove
LONGER = 4
#: times learning rests while the machine is still settling (:meth:`FastForward._settle`)
SETTLES = 3
#: queued data operations between applications while materializing (Cluster.sync's)
_SYNC_EVERY = 4096
#: blocks a loop taken whole leaves to run recorded (a cut then falls after the skipped calls:
#: a core may be a block ahead of another, and the ring it waits on another block)
MARGIN = 3
#: iterations before a loop's moving GM window leaves its tensor at which recording stops: the
#: last ones run exactly, so the error is raised by the core, and where, the exact run raises it
#: (the order the cores run in while recording is not the exact run's)
WINDOW_GUARD = 64
#: times parked cores are let go (another core needs them to go on) before a recording
#: takes no more blocks whole
RELEASES = 8
#: blocks a recording core keeps the fresh objects of (materializing sets the state of those
#: of the blocks before the cut, every core's: a core may be this many blocks ahead)
FRESH_BLOCKS = 64


@dataclass(frozen=True)
class FastForwardReport:
    """What the fast-forward engine did in one run of the kernels on a cluster."""
    #: whole blocks (of every core's calls) recorded instead of simulated
    blocks: int = 0
    #: hooked calls recorded instead of simulated
    calls: int = 0
    #: why the run was not fast-forwarded, or stopped being (None: it ran to its end recorded,
    #: or had nothing to record); a use of the machine no recorded call makes is named with its
    #: kernel line ("TGATHER at k.py:31 is not recorded: ...")
    reason: str | None = None
    #: why the recorded blocks' data work did not run in batches (None: it did, or there was none)
    unbatched: str | None = None
    #: of ``blocks``, those taken whole: the interpreters (``pl``) skipped their iterations
    whole: int = 0


class _Settling(Unsettled):
    """The machine does not move by one constant per block yet, but may later: times the
    pipeline filling up left apart are still coming together."""


class _Restart(Exception):
    """A core suspended in the first WAIT of an exactly made call, resumed after recording
    began: the call has done nothing yet, so it is made again as a recorded one."""


def applies(cluster) -> bool:
    """Whether a run on ``cluster`` can be fast-forwarded (see the module docstring)."""
    return ((cluster.checker is None or cluster.checker.recordable) and cluster.trace is None and cluster.policy is None
            and not cluster.manual_sync and cluster.timing and cluster.until_cycle is None
            and cluster.determinacy is None)


class _CoreState:
    """What the engine keeps for one core; while recording, the core's ``ff``."""
    __slots__ = ("core", "ff", "log", "n", "period", "cur", "waits_done", "block", "base", "cap", "j", "q", "lns",
                 "heads", "pk", "park", "moved", "gm_last")

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
        self.heads: dict = {}        # recording: a skippable loop -> [place in the block, block, iteration, move]
        self.pk = None               # recording: the loop whose head the core parks at
        self.park = None             # parked: (plan, iteration, step, stop, move per block)
        self.gm_last = None          # recording: the last block all its calls' GM windows are inside their tensors in
        self.moved = 0               # parked: the blocks the run skipped meanwhile

    recording = True          # (the core's ff only while the run records)

    def unhooked(self, core, what) -> None:
        self.ff.unhooked(core, what)

    def head(self, core, plan, i, step, stop):
        """A loop of the core its interpreter may skip iterations of at the head of iteration
        ``i``: the iteration it goes on from (:meth:`FastForward.head`)."""
        return self.ff.head(core, plan, i, step, stop)

    def call(self, core, fn, args, kw, depth=2):
        """Record a hooked call of the core (the module docstring's RECORD): it must be the
        learned call at its place, from its line (the kernel's frame ``depth`` frames up);
        its WAITs and SETs go on the counts; it returns the learned result moved to its
        block."""
        ln = self.lns[self.j]
        q = self.q
        if ln.fn is not fn or (kw or None) != ln.kw or args != ln.args and not alike(ln, args) \
                or ln.checks and not same_args(ln, args, q):
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
            return self.ff._stop(fn, args, kw, "the instruction budget or a crossing of two times in sight")
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
        if ln.post:
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
            return tuple_new(ev[0], (ev[1], ev[2], ev[3] + q * ev[4]))
        return ln.result(q)


def _use(core, what) -> str:
    """A use of the machine by ``core``'s kernel that no recorded call makes, and its line:
    ``"TGATHER at k.py:31"`` (``what``: the use, or a function that names it)."""
    where = core.where()
    what = what() if callable(what) else what
    return what if where is None else f"{what} at {where}"


def never_same(log):
    """A call of a place (a line) that made NEVER_SAME or more of the last 2 * MAX_PERIOD calls
    of ``log``, one of the last 64, no two of them the same call (a scalar moving with the loop:
    ``TADDS(o, t, i)``), else None.  Then no period the engine looks for (at most MAX_PERIOD
    calls) ends the log: its calls at that place would repeat within the window."""
    if len(log) < 2 * MAX_PERIOD:
        return None
    by_site: dict = {}
    for c in log[-2 * MAX_PERIOD:]:
        by_site.setdefault(c.site, []).append(c)
    recent = {c.site for c in log[-64:]}
    for site, calls in by_site.items():
        if len(calls) >= NEVER_SAME and site in recent:
            try:
                if len({c.sig for c in calls}) == len(calls):
                    return calls[-1]
            except TypeError:           # (an unhashable operand: not judged here)
                pass
    return None


def period_of(log) -> int | None:
    """The shortest period ``p`` (at most MAX_PERIOD) in which the last ``3p`` calls of
    ``log`` repeat (by ``sig``), and at least the last PERIOD_WINDOW, or None."""
    n = min(len(log), 3 * MAX_PERIOD)
    if n == 0:
        return None
    last = log[-1].sig
    for p in range(1, n // 3 + 1):
        # (the last call is made again p and 2p calls back: only then the whole periods,
        # back from the end - a miss comes early)
        if log[-1 - p].sig == last and log[-1 - 2 * p].sig == last:
            for k in range(-2, -p - 1, -1):
                a = log[k].sig
                if log[k - p].sig != a or log[k - 2 * p].sig != a:
                    break
            else:
                if all(log[-k].sig == log[-k - p].sig for k in range(2 * p + 1, min(len(log) - p, PERIOD_WINDOW) + 1)):
                    return p
    return None


class FastForward:
    """The fast-forward engine of one run on a cluster (the cluster's and its cores' ``ff``)."""

    def __init__(self, cluster, cores):
        self.cluster = cluster
        self.mode = WARMUP
        self.st = {c.index: _CoreState(c, self) for c in cores}
        self.snaps: list = []         # (walk, call counts, data operations queued, checker.Mark) per snapshot
        self.checked = {}             # recording: the race checker's counts' moves per block (checker.prove)
        self.gwork: list = []         # learning: the data operations queued, in order
        self.gcores: list = []        # learning: the core that queued each
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
        self.settles = 0              # times learning rested while the machine settled
        self.restarts = 0
        self.warm_until = WARMUP_CALLS    # a core's hooked calls made exactly before learning (re)starts
        self.rest = REST_CALLS            # the calls of the next rest (never_same)
        self.rested = None                # why learning last rested
        self.unrecorded: dict = {}    # a use no recorded call makes ("TGATHER at k.py:31") -> the restarts at it
        self.unbatched = None         # why their data work did not run in batches
        self.whole = 0                # blocks taken whole (their iterations skipped)
        self.skip_off = False         # recording: no more blocks are taken whole
        self.releases = 0             # recording: times parked cores were let go
        # fresh operands (calls.Fresh): learning, per core; recording, the objects given (Made)
        self.fresh = {c.index: Fresh() for c in cores}
        self.made: dict = {}
        self.fresh_places: dict = {}  # a place of the last snapshot holding a fresh object -> (core, call, position)
        self.fresh_fields: list = []  # (place, field, value or Moving) of those objects
        self.fresh_links: list = []   # (object, field, Moving): other state referring to them
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
        return FastForwardReport(self.blocks_skipped, self.calls_skipped, self.reason, self.unbatched, self.whole)

    # -- the hooks ---------------------------------------------------------------------------
    def call(self, core, fn, args, kw, depth=2):
        """A hooked ISA call of ``core``: made exactly (and learned, after the warm-up) - or,
        for a core with no block to record, the exact state first."""
        mode = self.mode
        if mode == WARMUP:
            st = self.st[core.index]
            self.fresh[core.index].saw(args, st.n)    # (the objects it uses are its own)
            core.ff = None
            try:
                r = fn(*args, **kw) if kw else fn(*args)
            finally:
                if self.mode != OFF:
                    core.ff = self
            st.n += 1
            if st.n >= self.warm_until and self.mode == WARMUP:
                self.mode = LEARN               # (from the next call on)
                self._taps(True)
            return r
        if mode == RECORD:
            return self._record(core, fn, args, kw)
        return self._learn(core, fn, args, kw)

    @property
    def recording(self) -> bool:
        return self.mode == RECORD

    def unhooked(self, core, what) -> None:
        """The kernel uses the machine other than through a hooked call - ``what`` names the
        use (``"Tile.array"``), or is a function that names it (the instruction called):
        learning starts over; recording stops (the exact state first)."""
        if self.mode == RECORD:
            self.materialize(f"{_use(core, what)} on {core.name} is not recorded: the recording stopped there",
                             True)
        elif self.mode == LEARN:        # (warming up: nothing to start over)
            use = _use(core, what)
            self.unrecorded[use] = self.unrecorded.get(use, 0) + 1
            self._relearn()

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
        """Every core waits.  Recording: the cores parked at a loop's head go on (no block
        is taken whole); if none was, the exact state, and the cores make their calls
        exactly (they block again where the exact engine reports them)."""
        if self.mode == RECORD:
            if self._release():
                self.releases += 1
                if self.releases > RELEASES:
                    self.skip_off = True
                return True
            self.materialize("every core waits")
            return True
        return False

    def finish(self) -> None:
        """The kernels all returned: the exact state, and no more hooks."""
        learning = self.mode == LEARN
        if self.mode == RECORD:
            self.materialize()
        self._off("the run ended while learning" if learning else
                  (self.rested or "the run ended before learning began (a short run)") if self.mode == WARMUP
                  else None)

    def drop(self) -> None:
        """The run stops with an error (a bound, an interrupt): the exact state first, as far
        as it can be made (the error's report reads it), then no more hooks."""
        if self.mode == RECORD:
            try:
                self.materialize("the run stopped")
            except Exception:                   # (the error propagating is the run's)
                pass
        self._off("the run stopped")

    # -- learning ----------------------------------------------------------------------------
    def _learn(self, core, fn, args, kw):
        st = self.st[core.index]
        if st is self.ref and st.n == self.next_snap:
            self._snapshot(st)
            if self.mode == RECORD:
                return core.ff.call(core, fn, args, kw, 4)     # (<- _learn <- call <- the op <- kernel)
        site = core.loc_override
        if site is None:                        # the kernel's line: its frame and instruction
            f = _getframe(3)                    # (<- _learn <- call <- the op <- the kernel)
            site = (f.f_code, f.f_lasti)
        c = Call(fn, args, kw, core.loc_override or call_site(4), site, self.fresh[core.index], st.n)
        # what the call changes on its operands, and the fields of those new to it: only calls
        # of a core that repeats (its snapshot blocks') need them
        ops = [(i, a, fields_now(a)) for i, a in enumerate(args) if walkable(a) and not is_tensor(a)] \
            if st.period is not None else ()
        if c.news and ops:
            c.pre = {i: fields_by_name(a, was) for i, a, was in ops if i in c.news}
        gts = [(a, a.ptr) for a in args if is_tensor(a)]
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
        c.post = [(i, k, v) for i, a, was in ops for k, v in fields_changed(a, was) if k not in SCOREBOARD]
        st.n += 1
        st.log.append(c)
        if len(st.log) > LEARN_LIMIT:
            self._off(f"{core.name}'s calls did not settle into a period within {LEARN_LIMIT} calls")
        elif st.period is None and len(st.log) % 8 == 0:
            self._detect(st)
            if st.period is None and len(st.log) % 64 == 0:
                odd = never_same(st.log)
                if odd is not None:
                    self._rest(odd)
        return r

    def _rest(self, odd) -> None:
        """The place of call ``odd`` never makes the same call twice: learning rests (the
        calls are made exactly, as while warming up) for ``self.rest`` calls of the core that
        made most, then starts afresh; each rest is twice as long as the one before."""
        self._rest_for(lambda n: self.rest, f"{getattr(odd.fn, '__name__', 'a call')} at {odd.loc} never makes "
                       "the same call twice (an operand moves with the loop): learning rested")
        self.rest *= 2

    def _rest_for(self, calls, why: str) -> None:
        """Learning starts over after a rest of ``calls(n)`` calls of the core that made most
        (``n``), made exactly as while warming up; ``why`` is the report's reason should the
        run end resting."""
        self._relearn()
        if self.mode != LEARN:                 # (learning gave up: restarted too often)
            return
        self._taps(False)
        self.mode = WARMUP
        n = max(s.n for s in self.st.values())
        self.warm_until = n + calls(n)
        self.rested = why

    def _relearn(self) -> None:
        """Learning starts over (the kernel used the machine other than by a hooked call)."""
        self.restarts += 1
        if self.restarts > RESTARTS and self.mode == LEARN:
            self._off(self._restarts_reason())
            return
        self.slides = 0
        self.sizing = False
        for s in self.st.values():
            s.log.clear()
            s.period = None
        self.snaps.clear()
        self.gwork.clear()
        self.gcores.clear()
        self.ref = self.next_snap = None

    def _restarts_reason(self) -> str:
        """Why learning gave up starting over: the use of the machine no recorded call makes
        that made it start over most often (of those, the first met), and where."""
        if not self.unrecorded:
            return "the kernel keeps using the machine other than by the instructions it records"
        use = max(self.unrecorded, key=self.unrecorded.get)
        return f"{use} is not recorded: learning started over more than {RESTARTS} times"

    def _detect(self, st) -> None:
        """``st``'s core has made its last calls three times over: its period."""
        st.period = period_of(st.log)
        # (a core that made no call yet - a lane that returns at once - does not hold it up:
        # a call of it while recording ends the recording)
        if st.period is not None and all(s.period is not None or s.n == 0 or s.core.state is _DONE
                                         for s in self.st.values()):
            self._plan()

    def _roots(self) -> list:
        """Where the machine state is: the cluster, its cores, the objects the calls use (and
        the fresh ones a later call may still use: as far back as its period's calls use one)."""
        roots = [self.cluster] + [s.core for s in self.st.values()]
        for s in self.st.values():
            p = s.period or 1
            back = max((c.back for c in s.log[-p:]), default=0)
            for c in s.log[-max(p * 3, back + 1):]:
                roots.extend(a for a in c.args if not is_tensor(a))
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
            self.gcores.clear()
        walk = Walk(self._roots())
        self.snaps.append((walk, {i: s.n for i, s in self.st.items()}, len(self.gwork), checker.mark(self.cluster)))
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
        except Unsettled as e:
            if isinstance(e, _Settling) and self.settles < SETTLES:
                self._settle(e)
                return
            # not yet (a pipeline filling up settles a few blocks later): the next block's
            # snapshot, a few times; then longer blocks
            self.slides += 1
            if self.slides <= SLIDES:
                self.snaps.pop(0)
                return
            self._longer(f"the machine did not repeat: {e}")
            return
        self._start_recording()

    def _settle(self, why) -> None:
        """The machine is still settling (a time left behind by the pipeline filling up is
        caught up within the next blocks): learning rests - the calls are made exactly, at no
        extra cost - for as many calls as the run made so far, then starts again."""
        self.settles += 1
        self._rest_for(lambda n: max(n, WARMUP_CALLS), f"the machine was still settling ({why}): learning rested")

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
        work between them (raises Unsettled): the moves, the learned blocks."""
        if any(f.carried for f in self.cluster.flags()):
            raise Unsettled("a WAIT may still take a credit an earlier launch left (the ledger names it)")
        self.checked = checker.prove(self.cluster, [m for *_, m in self.snaps])
        walks = [w for w, *_ in self.snaps]
        if len({len(w.objs) for w in walks}) != 1:
            raise Unsettled("the machine state grew")
        last = walks[-1]
        cl = self.cluster
        bufs = self.bufs = Buffers([cl.gm.buf] + [m.buf for c in cl.cores for m in c.memories.values()])
        # the places holding a fresh object (another one each snapshot): a value referring to
        # one refers to its place in every snapshot; at the cut, to the object made for it then
        fresh = self._fresh_places(walks)
        places = [_Places(last, {id(w.objs[p]): p for p in fresh}).place for w in walks] if fresh else None
        state, times, fresh_fields, fresh_links = [], [], [], []
        for k, obj in enumerate(last.objs):
            fields = [w.fields[k] for w in walks]
            keys = [x[0] for x in fields[-1]]
            if any(len(f) != len(keys) or [x[0] for x in f] != keys for f in fields[:-1]):
                raise Unsettled(f"the fields of {type(obj).__name__} changed")
            made_fresh = k in fresh
            for key, *items in zip(keys, *fields):
                if key in SCHEDULER_FIELDS:
                    continue
                v0 = items[0][1]
                for it in items:
                    if it[1] is not v0:
                        break
                else:
                    if made_fresh:               # (every field of the object made at the cut)
                        fresh_fields.append((k, key, v0))
                    continue                     # (the same object throughout: still)
                vals = [it[1] for it in items]
                try:
                    m = as_moving(vals, last, bufs, places)
                except Unsettled as e:
                    raise Unsettled(f"{type(obj).__name__}.{key}: {e}") from None
                linked = fresh and _refers(m.form, fresh)
                if made_fresh:
                    fresh_fields.append((k, key, m if linked or not m.still else m.obj))
                elif linked:
                    fresh_links.append((obj, key, m))
                elif not m.still:
                    state.append((obj, key, m.maker(last.objs, bufs.by_id)))
                if not m.still:
                    if key in last.times[k]:
                        times.append((obj, key, m))
                    elif key not in last.counters[k]:
                        raise Unsettled(f"{type(obj).__name__}.{key} moves but is neither a time nor a count")
        self.time_cap = _crossing(last, times)
        if self.time_cap is not None and self.time_cap < 2:
            raise _Settling("two simulated times would cross within two blocks")
        # the calls: every core's blocks are the same calls
        learned, logs = {}, {}
        for i, s in self.st.items():
            counts = [c[i] for _, c, *_ in self.snaps]
            steps = {b - a for a, b in zip(counts, counts[1:])}
            blk = steps.pop()
            if steps:
                raise Unsettled(f"{s.core.name} made different numbers of calls per block")
            if blk == 0:
                continue                       # (a core whose kernel returned)
            if s.period is None or blk % s.period:
                raise Unsettled(f"{s.core.name}'s block is not a whole number of its periods")
            first = len(s.log) - (s.n - counts[0])
            blocks = [s.log[first + b * blk:first + (b + 1) * blk] for b in range(SNAPSHOTS - 1)]
            if first < 0 or len({tuple(c.sig for c in b) for b in blocks}) != 1:
                raise Unsettled(f"{s.core.name}'s blocks differ")
            s.block = blk
            learned[i] = [Learned([b[j] for b in blocks], last, bufs) for j in range(blk)]
            logs[i] = (s, blk)
        # the data work: the same operations each block, in the same order
        ends = [o for _, _, o, _ in self.snaps]
        slices = [self.gwork[a:b] for a, b in zip(ends, ends[1:])]
        if len({len(w) for w in slices}) != 1:
            raise Unsettled("the blocks queued different numbers of data operations")
        self.work = [as_moving([w[k] for w in slices], last, bufs).maker(last.objs, bufs.by_id)
                     for k in range(len(slices[0]))]
        # who queued each place's work: a failure applying it names that core (Cluster.sync)
        self.marks = [(k, c) for k, c in enumerate(self.gcores[ends[0]:ends[1]]) if k == 0 or
                      c is not self.gcores[ends[0] + k - 1]]
        self.gwork, self.gcores = [], []
        self.state, self.learned, self.walk = state, learned, last
        self.fresh_places, self.fresh_fields, self.fresh_links = fresh, fresh_fields, fresh_links
        self._made(logs, learned, last, fresh)
        # the operands' fields recorded calls set (post): at the cut they are the state's again
        # (a fresh operand's: another object each block, set at the cut as the snapshot's was)
        touched = {(id(ln.args[i]), k): (ln.args[i], k) for lns in learned.values() for ln in lns
                   for i, k, _ in ln.post if i not in ln.fresh}
        self.touched = []
        for o, k in touched.values():
            place = last.place(o)
            if place is None:       # (the cut could not set it: the roots missed a call's operand)
                raise Unsettled(f"a {type(o).__name__} whose {k} a recorded call sets is not in the machine state")
            self.touched.extend((o, key, v) for key, v in last.fields[place] if key == k)

    def _fresh_places(self, walks) -> dict:
        """The places of the snapshots holding a fresh object (:class:`~.calls.Fresh`) ->
        (its core, the call it was new in counted from the snapshot, its position there): the
        same in every snapshot (Unsettled)."""
        made = {}
        for i, s in self.st.items():
            log, p = s.log, s.period
            if not p or len(log) <= p:
                continue
            # the calls of its period, back from the last (an object new in an earlier call -
            # the kernel's own tiles, first used as learning began - is not made anew)
            k = len(log) - 1
            while k >= 0 and log[k].sig == log[k + p if k + p < len(log) else k - p].sig:
                k -= 1
            n0 = s.n - len(log)
            for k in range(k + 1, len(log)):
                c = log[k]
                for pos in c.news:
                    made[id(c.args[pos])] = (i, n0 + k, pos)
        if not made:
            return {}
        out = None
        for w, (_, counts, *_) in zip(walks, self.snaps):
            here = {}
            for p, o in enumerate(w.objs):
                f = made.get(id(o))
                if f is not None:
                    here[p] = (f[0], f[1] - counts[f[0]], f[2])
            if out is None:
                out = here
            elif here != out:
                raise Unsettled("the objects the calls made anew are not in the machine state alike")
        return out

    def _made(self, logs, learned, last, fresh) -> None:
        """Recording a core's fresh operands (:class:`~.calls.Made`): from the learned calls'
        (the last of the log), kept as far back as a call refers or the state holds one, and
        as many blocks ahead as a core may be of the cut."""
        persist = {id(o) for o in last.objs}
        persist.update(id(a) for lns in learned.values() for ln in lns for a in ln.args)
        self.made = {}
        for i, (s, blk) in logs.items():
            back = max([FRESH_CALLS] + [-r for (c, r, _) in fresh.values() if c == i])
            keep = blk * (-(-back // blk) + FRESH_BLOCKS)
            m = self.made[i] = Made(s, keep, persist)
            n0 = s.n - len(s.log)
            for k in range(max(0, len(s.log) - keep), len(s.log)):
                c = s.log[k]
                if c.news:
                    m.add(n0 + k, c.args, c.news)
            for ln in learned[i]:
                if ln.fresh:
                    ln.made = m
            s.log.clear()

    def _fresh_state(self, q: int, at: int, tuples: dict) -> None:
        """At the cut, after ``q`` recorded blocks: the objects made for the fresh places of
        the last snapshot get its objects' state moved by ``q`` blocks, and the state
        referring to those refers to them."""
        objs = list(self.walk.objs)
        for p, (i, r, pos) in self.fresh_places.items():
            s = self.st[i]
            objs[p] = self._made_at(s, s.base + q * s.block + r)[pos]
        by_id = self.bufs.by_id

        def put(o, key, v):
            if v.__class__ is Moving:
                v = maker_of(v.form, v.base, v.step, objs, by_id, v.keep)(at)
            v = interned(v, tuples)
            if o.__class__ is list or o.__class__ is dict:
                o[key] = v
            else:
                setattr(o, key, v)
        for p, key, v in self.fresh_fields:
            put(objs[p], key, v)
        for o, key, v in self.fresh_links:
            put(o, key, v)

    def _start_recording(self) -> None:
        """The proof holds: from here on the hooked calls are recorded - unless two cores'
        GM windows meet (:func:`_cross_core_gm`): the run is left exact."""
        learned = list(self.learned.items())
        checked = self.cluster.checker is not None      # (its verdict on two writes of one window reads the bytes)
        if _cross_core_gm(learned, same_window=checked, same_core=checked):
            self._off("two cores' GM windows meet, one of them written: which lands last is the exact "
                      "run's only in its order (a race the checkers report)" if self.cluster.checker is None else
                      "two GM windows meet, one of them written (two cores', or one core's moving at "
                      "different rates): the checkers' verdict on them is not the learned blocks'")
            return
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
        self.skip_off, self.releases = False, 0
        for s in self.st.values():
            s.heads, s.pk, s.park, s.moved = {}, None, None, 0
            s.base = s.n
            s.j, s.q = 0, SNAPSHOTS - 1        # (block 0 of the learned moves starts at the first snapshot)
            s.lns = self.learned.get(s.core.index)
            s.cap = self._cap(s)
            s.gm_last = _gm_last(s.lns) if s.lns is not None else None
            if s.lns is not None:
                s.core.ff = s                   # (its calls go straight to its record)
        # (parking alone changes the order the cores run in: not even tried where it matters)
        self.skip_off = _cross_core_gm(learned)

    def _cap(self, s):
        """The call count at which recording stops: before the core's instruction budget
        could be met within a block (the exact engine meets it where it does), and before two
        simulated times could cross (:func:`_crossing`)."""
        if s.block is None:
            return None
        c = s.core
        per = None
        for obj, key, mk in self.state:
            if obj is c and key in ("instructions", "budget"):
                d = mk(1) - mk(0)
                per = (per or 0) + (d if key == "instructions" else -d)
        caps = [] if self.time_cap is None else [s.base + (self.time_cap - 1) * s.block]
        if per and per > 0:
            caps.append(s.base + max(0, (c.budget - c.instructions) // per - 2) * s.block)
        return min(caps, default=None)

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
        """The SETs of a recorded call, on the counts: wakes a core blocked on one.  (No count
        can pass a flag's maximum: a flag's count is no counter field, so the proof saw it
        the same at every snapshot.)"""
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

    # -- blocks taken whole -------------------------------------------------------------------
    def head(self, core, plan, i, step, stop):
        """A loop of ``core`` its interpreter may skip iterations of (a shift-equivariant
        ``pl.range`` or ``scf.for``: every iteration makes the learned calls moved by the
        block) at the head of iteration ``i``, ``plan`` its moving GM windows
        (:class:`~.loops.SkipPlan`): the iteration the loop goes on from.

        Each recording core finds its *park place*: the head of a loop that it reaches at
        the same place of every block, its counter moved by the same whole number of
        iterations per block.  Once every core knows its place, a core reaching it parks
        (it blocks), and when the last one does, every core is at a fixed number of calls
        from a block boundary: the machine's state is the one all cores had a whole number
        of blocks before, moved (the proof's move commutes with the calls between), and its
        flag counts are the same.  So all of them skip ``K`` blocks at once: their call
        counts move by ``K`` blocks (the data work, as every recorded block's, is applied
        when the run is materialized; the objects skipped calls would have been given are
        made then if needed: :meth:`_made_at`) and their loops by ``K`` blocks'
        iterations.  ``K`` leaves every loop a few blocks to run recorded, keeps every guard's
        truth (:meth:`~.loops.SkipPlan.steady`: the branches the blocks took), the moving
        GM windows inside their tensors (:meth:`~.loops.SkipPlan.room`; recording stops
        :data:`WINDOW_GUARD` iterations before one leaves) and
        the budget and time-crossing caps out of reach.  Parked cores that another core
        needs to go on (every core waits) are let go to park again a block later, a few
        times."""
        if self.skip_off or self.mode != RECORD:
            return i
        s = self.st[core.index]
        if s.lns is None:
            return i
        key, j, q = plan.key, s.j, s.q
        h = s.heads.get(key)
        if h is None:
            h = s.heads[key] = _sighting(plan, j, q, i, step, stop)
        if h[4] is not None and (h[4] - i) // step < WINDOW_GUARD:
            self.materialize(f"a GM window of the loop on {core.name} leaves its tensor within "
                             f"{WINDOW_GUARD} iterations", False)
            return i
        if h[0] != j or q <= h[1]:
            return i                            # (another place in the block)
        per = h[3]
        if per is None:
            d, dq = i - h[2], q - h[1]
            if d % dq or d // dq == 0 or (d // dq) % step:
                s.heads[key] = _sighting(plan, j, q, i, step, stop)
                return i
            per = h[3] = d // dq
        elif i != h[2] + (q - h[1]) * per:      # (another run of the loop)
            s.heads[key] = _sighting(plan, j, q, i, step, stop)
            if s.pk is not None and s.pk is key:
                self.skip_off = True
            return i
        if s.gm_last is not None and (s.gm_last - q) * (per // step) < WINDOW_GUARD \
                and (s.gm_last - q + 2) * (per // step) < len(range(i, stop, step)):
            # (a window of the recorded calls leaves its tensor before the loop ends: the last
            # iterations run exactly, so the error is raised where and on the core the exact
            # run raises it - the recording's core order is not the exact run's)
            self.materialize(f"a GM window of {core.name}'s calls leaves its tensor within "
                             f"{WINDOW_GUARD} iterations", False)
            return i
        if s.pk is None:
            s.pk = key
        elif s.pk is not key:
            return i
        active = [t for t in self.st.values() if t.block or t.core.state is not _DONE]
        if any(t.pk is None for t in active):
            return i
        s.park = (plan, i, step, stop, per)
        if all(t.park is not None for t in active):
            self._skip(active)
        else:
            s.core.state = _BLOCKED
            self.cluster.main.switch()
        k, s.moved, s.park = s.moved, 0, None
        return i + k * per

    def _skip(self, parked) -> None:
        """Every core is parked: ``K`` blocks skipped (see :meth:`head`), the parked cores
        woken."""
        k = self._blocks_to_skip(parked)
        if k < 1:
            self.skip_off = True
        else:
            self.whole += k
            for t in parked:
                m = self.made.get(t.core.index)
                if m is not None:               # (the interpreter holds none of them any more)
                    for n in [n for n in m.made if n < t.n]:
                        for a in m.made.pop(n):
                            m.ids.discard(id(a))
                t.n += k * t.block
                t.q += k
                t.moved = k
        self._release()

    def _blocks_to_skip(self, parked) -> int:
        """The blocks every parked core may skip at once (:meth:`head` says what bounds them)."""
        k = INFINITE
        for t in parked:
            plan, i, step, stop, per = t.park
            m = per // step                     # (iterations per block)
            back = max([-r for c, r, _ in self.fresh_places.values() if c == t.core.index]
                       + [d for ln in t.lns for _, d, _ in ln.refs] + [0])
            margin = MARGIN + -(-back // t.block)    # (blocks left to run recorded)
            k = min(k, len(range(i, stop, step)) // m - margin)
            room = plan.room(step)
            if room < 0:
                return 0
            bad = _leaves(room, i, step, stop)
            if bad is not None:
                k = min(k, ((bad - i) // step - WINDOW_GUARD) // m)
            k = min(k, (plan.steady(step) + 1) // m)     # (every guard as it is: the branches the blocks took)
            if t.cap is not None:
                k = min(k, (t.cap - t.n) // t.block - margin)
            if t.gm_last is not None:           # (the GM windows of the skipped calls, as recorded ones check)
                left = t.gm_last - t.q
                if (left + 2) * m < len(range(i, stop, step)):   # (one leaves before the loop ends: head)
                    left = (left * m - WINDOW_GUARD) // m
                k = min(k, left)
        return k

    def _release(self) -> bool:
        """Wake the parked cores (False: none was)."""
        woke = False
        for t in self.st.values():
            if t.park is not None:
                t.park = None
                woke = True
                if t.core.state is _BLOCKED:
                    t.core.state = _READY
        return woke

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
        self._release()
        sts = [s for s in self.st.values() if s.block]
        q = min(((s.n - s.base) // s.block for s in sts), default=0)
        if self.cluster.checker is not None:     # (the checker's records made again: checker.REPLAY)
            q = max(0, q - checker.REPLAY)
        self.blocks_skipped += q
        self.calls_skipped += sum(q * s.block for s in sts)
        if why is None and not self.blocks_skipped:
            # proved and recording, but the kernels ended before every core completed a block
            # beyond the ones made again: nothing was skipped, and the report says why
            self.reason = "the run ended before a whole block was recorded (too few iterations after learning)"
        cl = self.cluster
        # the data work of the blocks every core completed, after what was queued before
        self._apply(SNAPSHOTS - 1, SNAPSHOTS - 1 + q)
        # the state at the cut (the operands' fields recorded calls set: the last snapshot's,
        # then what moves)
        for obj, key, v in self.touched:
            setattr(obj, key, v)
        at = SNAPSHOTS - 1 + q
        tuples = {}                             # (the tuples the values share: values.interned)
        for obj, key, mk in self.state:
            if obj.__class__ is list or obj.__class__ is dict:
                obj[key] = interned(mk(at), tuples)
            else:
                setattr(obj, key, interned(mk(at), tuples))
        if self.fresh_places or self.fresh_links:
            self._fresh_state(q, at, tuples)
        # the fresh operands of the calls after the cut: as they were before those calls (they
        # are made again exactly)
        for s in sts:
            for k in range(s.base + q * s.block, s.n):
                ln = s.lns[(k - s.base) % s.block]
                for i, _, _, pre, _, keys in ln.news:
                    o = self._made_at(s, k)[i]
                    for key, v in zip(keys, pre):
                        setattr(o, key, v)
        checker.at_cut(cl, self.snaps[-1][3], self.checked, q)
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
        self.made, self.fresh_places, self.fresh_fields, self.fresh_links = {}, {}, [], []
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
            self.fresh[s.core.index].recorded(s.n)
            if s.core.state is not _DONE:
                s.core.ff = self
        self.cluster.ff = self

    def _apply(self, b: int, end: int) -> None:
        """The data work of blocks ``b`` .. ``end - 1``: in batches where it can be, else block
        after block, after the work queued before them."""
        cl = self.cluster
        cl.sync()
        if b >= end:
            return
        batch = None
        if end - b > 1:
            blocks, setup = batch_cost([m(b) for m in self.work], end - b)
            if setup >= blocks:
                self.unbatched = "too few blocks to pay for checking them for a batch"
            else:
                try:
                    batch = Batch(self.work, self.bufs, end - b, first=b)
                except Unbatchable as e:
                    self.unbatched = str(e)
                else:
                    if batch.cost(end - b) >= blocks:
                        self.unbatched = "its copies would cost more than the blocks one by one"
                        batch = None
        if batch is not None:
            try:
                with np.errstate(all="ignore"):
                    batch.run(b, end - b)
                b = end
            except Exception:                   # (made again one block at a time: located)
                pass
        while b < end:
            pend = cl.pending
            cl.marks.extend((len(pend) + k, c) for k, c in self.marks)
            pend.extend([m(b) for m in self.work])
            if len(pend) >= _SYNC_EVERY:
                cl.sync()
            b += 1
        cl.sync()

    def _made_at(self, s, k) -> tuple:
        """The arguments recorded call ``k`` of core ``s`` was given - for a call taken whole
        (:meth:`head`), its fresh objects made now: alike the learned ones (a copy, its fields
        as before the call), and the earlier call's where it used one."""
        m = self.made[s.core.index]
        e = m.made.get(k)
        if e is None:
            ln = s.lns[(k - s.base) % s.block]
            e = list(ln.args)
            for i, _, _, pre, _, keys in ln.news:
                e[i] = o = copy.copy(ln.args[i])
                for key, v in zip(keys, pre):
                    setattr(o, key, v)
            for i, d, j in ln.refs:
                e[i] = self._made_at(s, k - d)[j]
            e = m.made[k] = tuple(e)
        return e

    def _remake(self, s, k, ln) -> None:
        """Make the recorded call number ``k`` of core ``s`` exactly: its GM tensors at the
        addresses it had, at its kernel line."""
        core = s.core
        q = (k - s.base) // s.block + SNAPSHOTS - 1
        args, kw, fn = ln.args, ln.kw, ln.fn
        if ln.tuples or ln.fresh:
            args = list(args)
            for i, mk in ln.tuples:
                args[i] = mk(q)
            if ln.fresh:                        # (the objects the kernel gave the call)
                for i, *_ in ln.news:
                    args[i] = self._made_at(s, k)[i]
                for i, d, j in ln.refs:
                    args[i] = self._made_at(s, k - d)[j]
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


#: blocks apart two cores' calls may be when a cut re-makes them (a ring's lead, the cores'
#: park places) - the reach of :func:`_cross_core_gm`
CORES_APART = 3


def _cross_core_gm(learned, same_window: bool = True, same_core: bool = False) -> bool:
    """Do two cores' GM windows of the learned blocks (``[(core index, its learned calls)]``;
    an ISA call's destination is its first operand: a window there is written) meet, one of
    them written, within :data:`CORES_APART` blocks of each other?  Then the order the two
    were made in decides the bytes (a race, which the checkers would report), and recording
    - the cores running in another order, the calls after a cut re-made in an order the
    flags allow - need not keep the exact run's.  With ``same_window`` False, two cores
    writing the very same window are not counted (a NO_SPLIT lane storing the tile the other
    lane stores: the same bytes, in either order).  With ``same_core``, one core's two windows
    moving at different rates count too (the race checker's verdict on them changes where
    they meet: :mod:`.checker`).  (Windows of one tensor moving at different rates meet some
    time: they count as meeting; windows of different tensors never do.)"""
    acc = []
    for core, lns in learned:
        for ln in lns:
            for i, b, d, _, bounds, _ext in ln.addrs:
                p = ln.args[i].ptr
                r = gm_region(ln.args[i]) if p is not None else None
                if r is not None:
                    acc.append((core, i == 0, _moved(r, b - p.addr), d, bounds))
    for x, (ca, wa, ra, da, ba) in enumerate(acc):
        for cb, wb, rb, db, bb in acc[x + 1:]:
            if not (wa or wb) or ba != bb or ba is None:
                continue
            if ca == cb:
                if same_core and da != db:
                    return True
                continue
            if da != db:
                return True
            for k in range(-CORES_APART, CORES_APART + 1):
                rk = _moved(rb, k * db)
                if overlap(*ra, *rk) and (same_window or not (wa and wb and rk == ra)):
                    return True
    return False


def _moved(region, by: int) -> tuple:
    """A GM region (:func:`~ptopipe.sim.race.gm_region`) ``by`` bytes further."""
    lo, hi, rows = region
    if rows.__class__ is tuple:
        rows = (rows[0] + by, *rows[1:])
    elif rows is not None:
        rows = [(a + by, z + by) for a, z in rows]
    return lo + by, hi + by, rows


def _gm_last(lns) -> int | None:
    """The last block (counted as a recorded call's ``q``) in which every GM window of the
    learned calls ``lns`` that moves is inside the bounds of the tensor it was made from
    (None: none moves)."""
    last = None
    for ln in lns:
        for _, b, d, _, bounds, ext in ln.addrs:
            if bounds is not None and d:
                t = (bounds[1] - ext - b) // d if d > 0 else (b - bounds[0]) // -d
                last = t if last is None else min(last, t)
    return last


def _sighting(plan, j: int, q: int, i: int, step: int, stop: int) -> list:
    """A loop's head first seen at place ``j`` of block ``q``, iteration ``i``: ``[j, q, i,
    its counter's move per block (not known yet), the first iteration a moving window of it
    leaves its tensor]`` (:meth:`FastForward.head`)."""
    return [j, q, i, None, _leaves(plan.room(step), i, step, stop)]


def _leaves(room: int, i: int, step: int, stop: int) -> int | None:
    """The first iteration of the loop from ``i`` on (before ``stop``) at which a moving GM
    window leaves its tensor, ``room`` iterations from ``i`` on keeping them all inside
    (:meth:`~.loops.SkipPlan.room`; None: none leaves, or that cannot be told)."""
    bad = None if room < 0 else i + (room + 1) * step
    return bad if bad is not None and (bad < stop if step > 0 else bad > stop) else None


def _crossing(walk, moving) -> int | None:
    """The blocks after the last snapshot for which no two simulated times can change order
    (None: for ever; 0: not even one block).  The timing model compares times (maxima, a
    pipe drained before an issue), so two that move at different rates - two streams of
    different periods on the cores, a time left behind that another catches up - would give
    a later block other choices than the learned ones (the comparisons are of stored times:
    a cost or a latency is added before a time is stored).  A faster time more than a
    block's largest move (how far a time strays from its line within a block) ahead of a
    slower one stays ahead; one behind it may record until it comes within that of it."""
    rate = {}
    for obj, key, m in moving:
        rate[id(obj), key] = m.step
    pts = []                                  # (time at the last snapshot, cycles a block)
    for k, obj in enumerate(walk.objs):
        names = walk.times[k]
        for key, v in walk.fields[k]:
            if key in names:
                if v.__class__ is not int:       # (an entry holding its time first: a pending event set)
                    v = v[0] if v.__class__ is tuple and v and v[0].__class__ is int else None
                if v is not None:
                    pts.append((v, rate.get((id(obj), key), (0,))[0]))
    margin = max((abs(r) for _, r in pts), default=0)
    cap = None
    for ti, ri in pts:
        for tj, rj in pts:
            # i moves faster than j: safe while it stays more than a block's move ahead (for
            # ever) or behind (until it comes within one of j)
            if ri > rj and ti <= tj + margin:
                q = 0 if ti >= tj - margin else (tj - margin - ti - 1) // (ri - rj)
                cap = q if cap is None else min(cap, q)
    return cap


class _Places:
    """The places of the last snapshot's walk, but for the fresh objects of one snapshot:
    their places in its own walk."""
    __slots__ = ("walk", "fresh")

    def __init__(self, walk, fresh: dict):
        self.walk, self.fresh = walk, fresh

    def place(self, o):
        p = self.fresh.get(id(o))
        return self.walk.place(o) if p is None else p


def _refers(form, places) -> bool:
    """A value of ``form`` refers to an object at one of ``places``."""
    if form.__class__ is not tuple:
        return False
    k = form[0]
    if k == "r":
        return form[1] in places
    if k == "t":
        return any(_refers(x, places) for x in form[2])
    if k == "p":
        return any(_refers(x, places) for x in form[1:])
    return False


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
        self.gcores.extend([core] * len(items))


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
    from ..core import CoreState
    return CoreState.BLOCKED, CoreState.READY, CoreState.DONE


_BLOCKED, _READY, _DONE = _core_states()
