"""The cluster: 1 AIC + 2 AIV cores, GM, cross-core flags, and the scheduler.

The scheduler is deterministic: it always resumes the ready core with the smallest
simulated clock (ties by core index), and a core runs until it blocks in a WAIT or
finishes.  With a schedule policy (``schedule=``, :mod:`ptopipe.sim.schedule`; a
``schedule_seed`` is a :class:`RandomPolicy`) every cross-core visible event (SET, WAIT,
GM and ring accesses: :meth:`Cluster.visible`) is a choice point instead, which explores
other interleavings; the same policy parameters replay the same run.  When no core is
ready but some are blocked, the run stops at once with a :class:`DeadlockError` that
names every blocked core, what it waits for, and the wait-for chain.
"""
from __future__ import annotations

import gc
import os
import threading
from collections import deque
from functools import partial
from itertools import starmap
from types import AsyncGeneratorType, CoroutineType, GeneratorType
try:
    from operator import call
except ImportError:                   # Python 3.10
    def call(fn, /, *args):
        return fn(*args)

import greenlet
from numpy import errstate as _errstate

from ..arch import MemSpace, Platform, get_platform
from ..arch.vocab import SyncMode
from ..errors import ConfigError, DeadlockError, KernelError, PtoPipeError, ending_call
from .bounds import Abort, Expired, Watchdog, check_bounds
from .context import RunContext, RunState
from .dataplane import data_error
from .core import Core, CoreKind, CoreState, _CoreLet, sync_every_error
from .flags import Flag, overflow_error
from .location import raised_at, suspension_point
from .memory import Memory, MemoryPool
from .periodic import FastForward, applies
from .schedule import SET, RandomPolicy, SchedulePolicy
from .trace import Signal

_drain = partial(deque, maxlen=0)     # consume an iterator without keeping anything

# With the checkers on, a run builds many long-lived containers (happens-before records per
# page, slot state) that never form reference cycles; the collector's older generations would
# rescan all of them again and again (a quarter of a long checked stream).  So does a traced
# run (its records: an instruction, its arguments and kernel line are three tuples; a third
# of a long traced stream).  Such a run keeps the youngest generation's threshold (young
# cycles are still collected) and raises the older ones' to at least this; the caller's
# thresholds come back when the run ends.  Otherwise the defaults are kept: there they cost
# less than raising them (S7: ~10% fewer interpreter instructions per tile).
# tests/isa/test_fast_paths.py checks all of them.
_GC_OLDER = 1000
_GC_CATCH_UP = 30     # young collections held back before a run end catches up (see run)


class _Collector:
    """The process's garbage-collector thresholds while runs raise them.  The collector is
    one per process, and so is this: runs in several threads at once raise the older
    thresholds when the first of them starts and give the caller's back when the last ends
    (each run saving and restoring them on its own, two overlapping runs left them raised)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._runs = 0
        self._saved = None

    def raise_older(self) -> None:
        with self._lock:
            if self._runs == 0:
                self._saved = t = gc.get_threshold()
                gc.set_threshold(t[0], *(max(x, _GC_OLDER) for x in t[1:]))
            self._runs += 1

    def restore(self) -> tuple:
        """A raising run ends: the caller's thresholds back once no run raises them (they
        are returned)."""
        with self._lock:
            self._runs -= 1
            saved = self._saved
            if self._runs == 0:
                gc.set_threshold(*saved)
            return saved


_COLLECTOR = _Collector()

_LOCAL = {CoreKind.AIC: (MemSpace.L1, MemSpace.L0A, MemSpace.L0B, MemSpace.L0C, MemSpace.BIAS, MemSpace.FB,
                         MemSpace.L0A_SCALE, MemSpace.L0B_SCALE),
          CoreKind.AIV: (MemSpace.UB,)}


# what leaves a kernel as it is: errors, a Ctrl-C, the unwinding of a suspended kernel, the
# watchdog's interrupts; any other BaseException is the kernel's mistake (kernel_exit)
_PASS_THROUGH = (Exception, KeyboardInterrupt, greenlet.GreenletExit, Abort, Expired)


def kernel_exit(core: Core, fn, e: BaseException) -> KernelError:
    """The KernelError of a kernel that raised a BaseException which is not an error, e.g.
    SystemExit from ``sys.exit()``: it would end the program, silently and with its exit
    status, in the middle of the run; located at the kernel line that raised it."""
    where = raised_at(e.__traceback__) or core.loc_override
    return KernelError(f"the kernel {getattr(fn, '__name__', fn)} on {core.name} raised {ending_call(e)}: a kernel "
                       "cannot end the program or the run", where=str(where) if where else None,
                       fix="return from the kernel function to end it early; raise an exception "
                           "(e.g. ValueError) to report a failure")


#: what calling a generator / coroutine function returns: an object, none of its body run
_SUSPENDED = (GeneratorType, CoroutineType, AsyncGeneratorType)


def suspended_kernel(core: Core, fn, r) -> KernelError:
    """The KernelError of a kernel function that is a generator (a ``yield`` in it) or a
    coroutine (``async def``): calling it ran none of its body, so the core issued nothing
    and the other cores would wait for it - a deadlock that would not name the cause."""
    code = getattr(r, "gi_code", None) or getattr(r, "cr_code", None) or r.ag_code
    r.close()                       # (an unawaited coroutine would warn at its collection)
    kind = ("a coroutine function (async def)" if r.__class__ is CoroutineType
            else "a generator function (a yield in its body)")
    return KernelError(f"the kernel {getattr(fn, '__name__', fn)} on {core.name} is {kind}: calling it "
                       "ran none of its body, so the core issued no instruction",
                       where=str(suspension_point(code)),
                       fix="make the kernel a plain function that runs to its end: remove the yield "
                           "(or async); a generator the kernel loops over belongs in a helper it calls")


def masked_error(e: PtoPipeError) -> PtoPipeError | None:
    """The error of an instruction that a kernel's own cleanup error ``e`` was raised while
    handling - a ``finally`` / ``with`` exit whose TFREE frees the slot of the TPOP that just
    failed - with ``e`` in its details; None when ``e`` is no such error.  The first error is
    the kernel's mistake; the second only follows from it (Python would report the second)."""
    first = e.__context__
    if (not isinstance(first, PtoPipeError) or e.__suppress_context__ or e.__cause__ is not None
            or raised_at(first.__traceback__) is None):     # (not through the kernel's code)
        return None
    first.add_detail(f"(then the kernel's cleanup, run as this error propagated, raised "
                     f"{type(e).__name__} at {e.where}: {e.what})")
    return first


def locate(e: PtoPipeError, loc) -> None:
    """Give error ``e``, raised with no location inside a kernel, the kernel line it left from
    (``loc``: the instruction or call that raised it; every error names where)."""
    if loc is not None:
        e.where = str(loc)
        e.args = (e.render(),)


ENGINES = ("exact", "periodic")


def engine_name(e) -> str:
    """The name of an execution engine (``"exact"``, ``"periodic"``: :mod:`.periodic`); None:
    the environment's ``PTOPIPE_ENGINE``, else ``"exact"``."""
    where = "engine"
    if e is None:
        e, where = os.environ.get("PTOPIPE_ENGINE") or "exact", "PTOPIPE_ENGINE"
    if e not in ENGINES:
        raise ConfigError(f"unknown engine {e!r}", where=where,
                          fix="use engine='exact' (every instruction simulated) or engine='periodic' "
                              "(a kernel's steady state fast-forwarded: the same results)")
    return e


def sync_mode(s) -> SyncMode:
    """``"auto"`` / ``"manual"`` (or a SyncMode; None: auto) as a SyncMode."""
    if s is None:
        return SyncMode.AUTO
    try:
        return s if isinstance(s, SyncMode) else SyncMode(str(s))
    except ValueError:
        raise ConfigError(f"unknown synchronisation mode {s!r}",
                          fix="use sync='auto' (the scoreboard orders the pipes of a core) or "
                              "sync='manual' (only set_flag / wait_flag / pipe_barrier do)") from None


class Cluster:
    """One cluster of the chip, with real byte-array memories."""

    def __init__(self, platform: "Platform | str" = "a2a3", gm_size: int = 1 << 20,
                 schedule_seed: int | None = None, trace: bool = False,
                 max_instructions: int | None = None, timing: bool = True,
                 until_cycle: int | None = None, timeout: float | None = None,
                 sync: "SyncMode | str" = SyncMode.AUTO,
                 schedule: SchedulePolicy | None = None, context: RunContext | None = None,
                 pool: MemoryPool | None = None, shared_gm: bool = False, block: int = 0,
                 gm: Memory | None = None, engine: str | None = None):
        bad = sync_every_error()
        if bad is not None:
            raise bad
        if schedule is None and schedule_seed is not None:
            schedule = RandomPolicy(schedule_seed)
        # the schedule policy of an exploring run (None: the default scheduler); read by
        # the cores (set before them) at every visible event
        self.policy = schedule
        # "periodic": fast-forward the kernels' steady state where it applies (sim.periodic)
        self.engine = engine_name(engine)
        self.ff = None               # its FastForward while the run learns or records
        self.fast_forward = None     # what it did (periodic.FastForwardReport; None: not used)
        self.again_of = None         # the failed run this one makes again exactly (its findings void)
        self._next = None            # the core a visible event handed over to
        self.platform = get_platform(platform)
        # manual synchronisation (sim.pipesync): read by the cores, set before them
        self.manual_sync = sync_mode(sync) is SyncMode.MANUAL
        # the bounds of the run (sim.bounds): None means the default; ``timeout`` may be a
        # Deadline shared with other runs (the launches of one run, the runs of a command)
        self.max_instructions, self.until_cycle, self.deadline = check_bounds(
            max_instructions, until_cycle, timeout)
        self.timeout = self.deadline.seconds
        self._latency = self.platform.cross_core_latency     # read on every SET
        self._counter_max = self.platform.flag_counter_max
        self.timing = bool(timing)   # False: functional run only (no costs, no scoreboard)
        self.causal = False          # the race checker orders GM accesses causally (isa.launch.run)
        self.trace = [] if trace else None          # read by the cores: set before them
        # data operations on the memories, queued in issue order and applied by sync();
        # marks: (queue position, core) where each core's run of queued operations starts
        self.pending: list = []
        self.marks: list = []
        # the memories of an earlier run of the same check, zeroed (None: fresh ones)
        self.pool = pool
        # ``shared_gm``: GM's bytes are a shared-memory file's pages, which kernels that read
        # GM through their own mapping of it map (Memory.file)
        # ``gm``: the GM of the launch's other blocks (the device's one GM); None: a new one
        self.gm = self.new_memory(MemSpace.GM, gm_size, shareable=shared_gm) if gm is None else gm
        # which block of its launch this cluster runs (get_block_idx(): one cluster per block)
        self.block = block
        self.cores: list[Core] = []
        for idx, (name, kind, sub) in enumerate((("AIC", CoreKind.AIC, 0),
                                                 ("AIV0", CoreKind.AIV, 0),
                                                 ("AIV1", CoreKind.AIV, 1))):
            mems = {sp: self.new_memory(sp, self.platform.mem_size(sp), name) for sp in _LOCAL[kind]}
            self.cores.append(Core(self, name, kind, idx, sub, mems))
        self.aic, self.aiv0, self.aiv1 = self.cores
        self._flags: dict = {}
        self.main = None
        self.schedule_seed = schedule_seed
        # with trace: every hold of a core's issue clock (trace.Hold)
        self.waits = [] if trace else None
        # with trace: every cross-core SET (trace.Signal)
        self.signals = [] if trace else None
        self.checker = None          # happens-before checker, attached by the checkers
        # whether every schedule gives this run's result (sim.determinacy; None: not judged)
        self.determinacy = None
        self.explainers = []         # callables(cluster) -> str, extra deadlock context
        self.annotators = []         # callables(cluster, core) -> [{text, where}]: what it holds
        # callables(cluster, blocked) -> None | {cause, fix[, where, finding]}: a deadlock's
        # culprit that an upper layer can name (sim/deadlock.py)
        self.hinters = []
        self.finishers = []          # callables(cluster) run when all kernels returned
        # (what, where) warnings a layer above found about the kernels (a finisher's), reported
        # with the run's other warnings at kernel exit
        self.warnings = []
        self._warned = set()         # their (text or kind, site) keys (warn_once)
        # callables(cluster, core, flag): a WAIT consumed a credit an earlier launch left
        # on the flag (``Flag.carried``; :meth:`carry_flags` puts them there)
        self.carried_hooks = []
        # the run this cluster belongs to (protocol, arguments) and what the layers above
        # keep for it (pipes, prints): read by those layers, never by the machine
        self.context = context if context is not None else RunContext()
        self.state = RunState()
        self.steps = 0
        self.ended = False           # the run is over: bindings to this cluster are void
        self.raising = None          # the error the run ends with (set as it propagates)
        self.stopped_by = None       # the error that ended a traced run (its reports show it)

    def aiv(self, subblock: int) -> Core:
        return self.cores[1 + subblock]

    def new_memory(self, space: MemSpace, size: int, owner: str = "cluster", shareable: bool = False) -> Memory:
        """A zeroed memory for this cluster (from its pool, if it has one)."""
        if self.pool is not None:
            return self.pool.take(space, size, owner, shareable)
        return Memory(space, size, owner, shareable=shareable)

    # -- flags --------------------------------------------------------------------------
    def flag(self, sender: Core, receiver: Core, fid: int) -> Flag:
        key = (sender.index, receiver.index, fid)
        f = self._flags.get(key)
        if f is None:
            f = self._flags[key] = Flag(sender, receiver, fid)
        return f

    def set_flag(self, sender: Core, flag: Flag, at: int, order=None) -> None:
        """SET: increment the counter; the signal reaches the receiver at ``at + latency``.
        ``order``: what happens before the SET on the sender (sim.porder vector; None: the
        instruction issued last, which the SET follows)."""
        if flag.count >= self._counter_max:
            raise overflow_error(flag, self._counter_max)
        flag.count += 1
        flag.sets += 1
        pol = self.policy
        if pol is None:
            flag.arrivals.append(at + self._latency)
        else:                    # exploring: jittered latency (arrivals stay in SET order)
            t = at + (self._latency if pol.jitter is None else pol.latency(self._latency))
            if flag.arrivals and flag.arrivals[-1] > t:
                t = flag.arrivals[-1]
            flag.arrivals.append(t)
        if self.checker is not None:
            carried = self.checker.on_set(sender, at, order)
            flag.set_clocks.append(carried)
            if self.determinacy is not None:
                self.determinacy.on_set(sender, flag, carried)
        if self.manual_sync:
            flag.pipe_orders.append(sender.psync.cross_set())
        if self.signals is not None:
            self.signals.append(Signal(sender.index, flag, at))
        w = flag.waiter
        if w is not None:
            flag.waiter = None
            w.wake()
        if pol is not None:
            self.visible(sender, SET)

    def flags(self):
        return list(self._flags.values())

    def carry_flags(self, previous: "Cluster", origin=None) -> None:
        """Start this launch with the flag counters ``previous`` ended with (the device
        keeps them across launches).  Carried credits arrive at time 0; ``origin(flag)``
        (if given) describes where each flag's leftover came from, for reports."""
        for f in previous.flags():
            if f.count <= 0:
                continue
            g = self.flag(self.cores[f.sender.index], self.cores[f.receiver.index], f.id)
            g.count = g.carried = f.count
            g.arrivals = [0] * f.count
            if self.manual_sync:            # (nothing of an earlier launch's pipe order)
                g.pipe_orders = [None] * f.count
            g.origin = origin(f) if origin is not None else None
            if self.checker is not None:     # a launch boundary orders everything before it
                g.set_clocks = [tuple([0] * len(self.cores))] * f.count

    def on_carried(self, core: Core, flag: Flag) -> None:
        """``core``'s WAIT took one of the credits an earlier launch left on ``flag``."""
        flag.carried -= 1
        for hook in self.carried_hooks:
            hook(self, core, flag)

    # -- running ------------------------------------------------------------------------
    def run(self, kernels: dict) -> None:
        """Run ``{core: (fn, kwargs)}`` to completion (or raise).  The run is bounded
        (:mod:`ptopipe.sim.bounds`): a BudgetError stops it past ``max_instructions``,
        ``until_cycle`` or ``timeout``."""
        self.main = greenlet.getcurrent()
        for core, (fn, kwargs) in kernels.items():
            core.glet = _CoreLet(self._body(core, fn, kwargs), parent=self.main)
            core.glet.core = core
            core.kernel = fn             # named by data-plane errors after it finished
            core.state = CoreState.READY
        pol = self.policy
        if pol is not None and pol.skew is not None:
            for core in kernels:                     # lane skew: per-core start offsets
                core.clock += pol.skew[core.index]
        if self.engine == "periodic" and applies(self):
            FastForward(self, [c for c in kernels])
        dog = Watchdog(self, self.deadline)
        raised = self.checker is not None or self.trace is not None
        if raised:
            _COLLECTOR.raise_older()
        try:
            dog.start()              # (in the try: its interrupt may come at once)
            cores, ready_state = self.cores, CoreState.READY
            while True:
                if pol is None:        # the ready core with the smallest clock (ties: index)
                    core = None
                    for c in cores:
                        if c.state is ready_state and (core is None or c.clock < core.clock):
                            core = c
                    if core is None:
                        if self.ff is not None and any(c.state is CoreState.BLOCKED for c in cores) \
                                and self.ff.deadlock():
                            continue          # (recording: the cores now wait exactly)
                        break
                else:
                    core, self._next = self._next, None
                    if core is None or core.state is not ready_state:
                        ready = [c for c in cores if c.state is ready_state]
                        if not ready:
                            break
                        core = ready[0] if len(ready) == 1 else pol.choose(ready, None)
                core.state = CoreState.RUNNING
                self.steps += 1
                n, marks = len(self.pending), self.marks
                if marks and marks[-1][0] == n:   # nothing queued since: at most one mark per
                    marks[-1] = (n, core)          # queued operation (bounded memory)
                else:
                    marks.append((n, core))
                core.glet.switch()
            if self.ff is not None:
                self.ff.finish()
            blocked = [c for c in self.cores if c.state is CoreState.BLOCKED]
            if blocked:
                raise self.deadlock(blocked)
            for fin in self.finishers:
                fin(self)
        except BaseException as e:
            dog.stop()               # no interrupt from here on
            self.ended = True
            if self.ff is not None:
                self.ff.drop()
            # the watchdog's interrupt: raise its located BudgetError
            err = dog.error(e) or e
            self.raising = err       # (the unwinding of suspended kernels below may locate it better)
            # apply what was queued (reports read the memories), but an error doing so must
            # not replace the one propagating (e.g. a DeadlockError): it is added to its details
            # (shown by str() and the CLI; a note where the error is not ours, Python >= 3.11)
            try:
                self.sync()
            except PtoPipeError as late:
                also = f"(also, applying the queued data work failed: {late})"
                if isinstance(err, PtoPipeError):
                    err.add_detail(also)
                elif hasattr(err, "add_note"):
                    err.add_note(also)
            if err is e:
                raise
            raise err from None
        else:
            dog.stop()
            self.ended = True
            self.sync()        # a data-plane error of a clean run: raised here, located
        finally:
            gc_thresholds = _COLLECTOR.restore() if raised else gc.get_threshold()
            counts = gc.get_count()
            if counts[1] > _GC_CATCH_UP:
                # the collections the raised thresholds held back: without them an earlier
                # run's cyclic garbage (its whole cluster) waits for a collection that a loop
                # of runs never triggers (exploring S7 grew by 4 MB a run, 500 MB for 200
                # schedules); made every few runs, not after each (a collection costs ~10 %
                # of a short run)
                gc.collect(2 if counts[2] >= gc_thresholds[2] else 1)
            for c in self.cores:
                if c.glet is not None and not c.glet.dead:
                    try:
                        c.glet.throw()   # GreenletExit: unwind the suspended kernel quietly
                    except Exception:
                        # its own cleanup failed on the ended run (a `finally` / `with` exit that
                        # TFREEs what a TPOP blocked at never took): the run's error stands
                        pass

    @staticmethod
    def _body(core: Core, fn, kwargs):
        def body():
            try:
                r = fn(**kwargs)
                if r is not None and r.__class__ in _SUSPENDED:
                    raise suspended_kernel(core, fn, r)
            except _PASS_THROUGH as e:
                if isinstance(e, Exception) and not isinstance(e, (PtoPipeError, Abort, Expired)) \
                        and not hasattr(e, "ptopipe_raised_by"):   # the kernel's own exception
                    e.ptopipe_raised_by = f"the kernel {getattr(fn, '__name__', fn)} on {core.name}"
                    if hasattr(e, "add_note"):          # (Python >= 3.11: its traceback says so too)
                        e.add_note(f"(raised by {e.ptopipe_raised_by} in a ptopipe run)")
                elif isinstance(e, PtoPipeError):
                    if e.where is None:
                        locate(e, raised_at(e.__traceback__) or core.loc_override)
                    first = masked_error(e)
                    if first is not None:
                        raise first from None
                raise
            except BaseException as e:          # e.g. sys.exit(): it must not end the program
                raise kernel_exit(core, fn, e) from e
            core.state = CoreState.DONE
            core.waiting = None
        return body

    def visible(self, core: Core, kind: int) -> None:
        """``core`` is at a cross-core visible event (exploring runs only): the policy notes
        it and picks who goes on; another core's pick suspends this one (still READY)."""
        pol = self.policy
        pol.note(core, kind)
        if core.state is not CoreState.RUNNING or greenlet.getcurrent() is not core.glet:
            return
        ready = [c for c in self.cores if c.state is CoreState.READY]
        if ready:
            nxt = pol.choose(ready, core)
            if nxt is not core:
                core.state = CoreState.READY
                self._next = nxt
                self.main.switch()

    def warn_once(self, what: str, where, kind: str | None = None) -> None:
        """Run warning ``what`` at ``where`` (:attr:`warnings`), once however often the run
        meets it there (``kind``: once there for every text of that kind - a warning whose
        text tells one occurrence's numbers)."""
        key = (kind or what, str(where))
        if key not in self._warned:
            self._warned.add(key)
            self.warnings.append((what, where))

    # -- the data plane -------------------------------------------------------------------
    def sync(self) -> None:
        """Apply the queued data operations to the memories, in the order they were issued.

        Instructions queue their numpy work, ``(fn, *args)``, instead of doing it at once: the
        bookkeeping of many instructions then runs back to back, and so does the numpy work
        (far fewer cache misses than alternating them).  The order is the issue order
        across all cores, so the bytes are exactly those of doing each at once.  Anything
        that reads the memories from Python (``Tile.array``, control words, results) syncs
        first; the cores sync every SYNC_EVERY instructions and the run at its end.  The
        work runs under one fixed numpy error state, and an operation that fails raises a
        KernelError naming the core that queued it (:mod:`ptopipe.sim.dataplane`)."""
        q = self.pending
        if q:
            ops = q[:]
            q.clear()
            marks = self.marks
            cur = getattr(greenlet.getcurrent(), "core", None)
            self.marks = [(0, cur)] if cur is not None else []
            it = iter(ops)
            try:
                with _errstate(all="ignore"):     # see sim/dataplane.py
                    _drain(starmap(call, it))      # fn(*args) for each, in a C loop
            except PtoPipeError:                   # a bound (the watchdog) stopped the run here
                raise
            except Exception as e:                 # the failing operation: the one before `it`
                raise data_error(ops, len(ops) - 1 - sum(1 for _ in it), marks, e) from e

    @property
    def cycles(self) -> int:
        return max(c.end_time() for c in self.cores)

    # -- deadlock report ---------------------------------------------------------------
    def deadlock(self, blocked) -> DeadlockError:
        """The DeadlockError for ``blocked`` cores: waits, holdings, wait-for chain, rings."""
        from .deadlock import explain
        return explain(self, blocked)
