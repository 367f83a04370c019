"""The bounds of a run, so that no kernel can hang it.

* the instruction budget, ``max_instructions`` per core: every instruction, every TSYNC
  and every satisfied flag WAIT counts (``Core._retire``, ``TSYNC`` + ``Core.check_step``,
  ``Core.wait_flag``);
* the simulated time, ``until_cycle``: no instruction may end after that cycle, nor a
  TSYNC take the issue clock past it (off unless asked for; then every instruction is
  checked, which costs a little);
* the wall-clock time, a :class:`Deadline` (``timeout`` seconds) for a whole ``run`` call
  (all its launches) or a whole command (every run it makes): a watchdog thread stops the
  thread running the kernels when it passes, even in a kernel that loops in pure Python
  without any instruction, or (on the main thread) waits in a call such as ``time.sleep``.

Passing a bound raises :class:`~ptopipe.errors.BudgetError` naming every core and the
kernel line it was at.  A core blocked forever is not a bound: that is a DeadlockError,
found as soon as no core can run.
"""
from __future__ import annotations

import _thread
import math
import os
import signal
import sys
try:                    # signal.signal without its enum wrapping: ~10 us less on every run
    from _signal import signal as _set_handler
except ImportError:     # pragma: no cover
    _set_handler = signal.signal
import threading
import time

import greenlet

from ..errors import BudgetError, ConfigError, shown_where
from .location import raised_at, running_user_code, stopped_at

DEFAULT_MAX_INSTRUCTIONS = 50_000_000
DEFAULT_TIMEOUT = 60.0          # seconds of wall-clock time per run
_REFIRE = 0.5                   # seconds between interrupts once the timeout has passed
#: seconds from which a wall-clock bound is no bound, as ``math.inf`` is: longer than the waits
#: that enforce one can take (``threading.TIMEOUT_MAX``, ~292 years; a wait for ``--timeout
#: 1e10`` raised OverflowError in the watchdog's thread, which then watched nothing)
NEVER = threading.TIMEOUT_MAX


class Deadline:
    """A wall-clock bound: ``seconds`` from when it was made, shared by everything it
    bounds.  ``run`` makes one per call, so that all its launches share it; the command
    line makes one per command (``scope="command"``), so that every run of it does."""
    __slots__ = ("seconds", "at", "scope")

    def __init__(self, seconds: float, scope: str = "run"):
        self.seconds = float(seconds)
        self.at = time.monotonic() + self.seconds if self.seconds < NEVER else math.inf     # inf: never
        self.scope = scope

    @property
    def name(self) -> str:
        """The bound as the user gave it: ``timeout=10 s`` (a run) or ``--timeout 10 s``."""
        return f"--timeout {self.seconds:g} s" if self.scope == "command" else f"timeout={self.seconds:g} s"

    def passed(self) -> bool:
        return time.monotonic() >= self.at

    def left(self) -> float:
        """Seconds until it passes (0 once it has; inf: no bound)."""
        return max(0.0, self.at - time.monotonic())

    def portable(self) -> tuple:
        """The deadline as another process - on another machine too (a Ray worker) - makes it
        again (:meth:`from_portable`): its seconds, scope and wall-clock moment
        (``time.time()``; the monotonic clock is this machine's)."""
        return (self.seconds, self.scope, time.time() + self.left())

    @classmethod
    def from_portable(cls, form: tuple) -> "Deadline":
        """The Deadline :meth:`portable` gave ``form`` of, at the same wall-clock moment."""
        seconds, scope, wall = form
        limit = cls(seconds, scope=scope)
        limit.at = time.monotonic() + (wall - time.time())
        return limit

    @property
    def fix(self) -> str:
        if self.scope == "command":
            return ("raise --timeout SECONDS if the command is just long: it bounds the whole command "
                    "(every variant, schedule and launch it runs)")
        return "raise timeout= (or --timeout SECONDS) if the run is just long"


def deadline(timeout) -> Deadline:
    """The Deadline of ``timeout`` seconds from now (None: the default; ``math.inf``: no
    wall-clock bound); a Deadline is kept as it is (it runs already)."""
    if isinstance(timeout, Deadline):
        return timeout
    if timeout is None:
        timeout = DEFAULT_TIMEOUT
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ConfigError(f"timeout={timeout!r} is not a positive number of seconds",
                          fix=f"give seconds > 0 (None: the default {DEFAULT_TIMEOUT:g} s; "
                              "math.inf: no wall-clock bound)")
    return Deadline(timeout)


def check_bounds(max_instructions, until_cycle, timeout) -> tuple:
    """Validated ``(max_instructions, until_cycle, Deadline)``; None means the default
    (until_cycle: no simulated-time bound; timeout ``math.inf``: no watchdog)."""
    if max_instructions is None:
        max_instructions = DEFAULT_MAX_INSTRUCTIONS
    if isinstance(max_instructions, bool) or not isinstance(max_instructions, int) or max_instructions <= 0:
        raise ConfigError(f"max_instructions={max_instructions!r} is not a positive number of instructions",
                          fix=f"give a positive int (None: the default {DEFAULT_MAX_INSTRUCTIONS:,}); "
                              "there is no unlimited budget - raise it for a long run")
    if until_cycle is not None and (isinstance(until_cycle, bool) or not isinstance(until_cycle, int)
                                    or until_cycle <= 0):
        raise ConfigError(f"until_cycle={until_cycle!r} is not a positive cycle count",
                          fix="give a positive int, or None for no simulated-time bound")
    return max_instructions, until_cycle, deadline(timeout)


def core_states(cluster, at: dict | None = None) -> str:
    """One line per core: its state, kernel line, instructions and issue clock.  ``at``:
    where the kernels whose greenlet an interrupt unwound stopped (they have no frame left)."""
    from .core import CoreState
    lines = []
    for c in cluster.cores:
        if c.state is CoreState.IDLE:
            lines.append(f"{c.name:5s} runs no kernel")
            continue
        if c.state is CoreState.DONE:
            lines.append(f"{c.name:5s} finished (its kernel returned)")
            continue
        what = c.state.value
        if c.state is CoreState.BLOCKED and c.waiting is not None:
            what = f"blocked in {c.waiting.what or 'a WAIT'} on {c.waiting.flag.name}"
        n = c.instructions
        g = c.glet
        if c not in (at or {}) and c.loc_override is None and g is not None and not g and not g.dead:
            # its greenlet has not started: no line of its kernel yet (where() would name the
            # line of the core that is running)
            lines.append(f"{c.name:5s} {what}, its kernel not started yet ({n} instruction{'s' * (n != 1)}, "
                         f"issue clock {c.clock})")
            continue
        where = (at or {}).get(c) or c.where()
        place = f"at {where}" if where is not None else "outside its kernel's lines (ptopipe's own code)"
        lines.append(f"{c.name:5s} {what} {place} ({n} instruction{'s' * (n != 1)}, "
                     f"issue clock {c.clock})")
    return "\n".join(lines)


def _bound_error(core, what: str, bound: str, limit: int, fix: str) -> BudgetError:
    """The BudgetError of ``core`` passing ``bound`` (a per-core bound: the budget, until_cycle)."""
    where = str(core.where())
    return BudgetError(what, where=where, details=core_states(core.cluster), fix=fix,
                       findings=[{"kind": "budget", "bound": bound, "limit": limit,
                                  "core": core.name, "where": where}])


def over_budget(core) -> BudgetError:
    lim = core.cluster.max_instructions
    return _bound_error(core, f"{core.name} exceeded the instruction budget of {lim:,} "
                              "(instructions, TSYNCs and flag waits)", "max_instructions", lim,
                        "the kernel may loop forever; raise max_instructions= if it is just long")


def past_until(core, cycle: int) -> BudgetError:
    lim = core.cluster.until_cycle
    return _bound_error(core, f"{core.name} passed until_cycle={lim:,} (at cycle {cycle:,})", "until_cycle", lim,
                        "the kernel may loop forever; raise until_cycle= (or --until-cycle) if it is just long")


def timed_out(cluster, limit: Deadline, at: dict | None = None) -> BudgetError:
    """The error of a run stopped by the watchdog (built in the run's thread; ``at`` as
    for :func:`core_states`)."""
    from .core import CoreState
    cores = [c for c in cluster.cores if c.state not in (CoreState.IDLE, CoreState.DONE)]
    running = [c for c in cores if c.state is CoreState.RUNNING] or cores
    where = None
    if running:      # (no line of its kernel when the bound passed in ptopipe's own code: no place)
        loc = (at or {}).get(running[0]) or running[0].where()
        where = str(loc) if loc is not None else None
    return BudgetError(
        f"the {limit.scope} did not finish within {limit.name} of wall-clock time",
        where=where, details=core_states(cluster, at),
        fix="a kernel may loop forever (e.g. a Python loop that issues no instruction) or wait "
            f"(e.g. time.sleep); {limit.fix}",
        findings=[{"kind": "budget", "bound": "timeout", "scope": limit.scope, "limit": limit.seconds,
                   "core": running[0].name if running else None, "where": where}])


def expired_before(limit: Deadline, what: str) -> BudgetError:
    """The error of a run whose wall-clock bound passed before ``what`` started (a launch,
    a run of a command): no kernel was running."""
    return BudgetError(f"the {limit.scope} did not finish within {limit.name} of wall-clock time: "
                       f"it passed before {what} started", fix=limit.fix,
                       findings=[{"kind": "budget", "bound": "timeout", "scope": limit.scope, "limit": limit.seconds,
                                  "core": None, "where": None}])


class Abort(BaseException):
    """The watchdog's second and later interrupts of the main thread: not an Exception,
    so that a kernel that swallowed the BudgetError (``except Exception``) is stopped all
    the same; the cluster turns it back into the BudgetError it carries."""

    def __init__(self, error: BudgetError):
        super().__init__(error.what)
        self.error = error


class Expired(BaseException):
    """The watchdog's interrupt of a run off the main thread, raised by the interpreter in
    the run's thread (``PyThreadState_SetAsyncExc``) at its next bytecode boundary; the
    cluster turns it into the located BudgetError (:meth:`Watchdog.error`)."""


def _load_async_exc():
    """``PyThreadState_SetAsyncExc(thread_id, exception_class_or_None)``, or None where the
    interpreter has none (then a run off the main thread has no wall-clock bound)."""
    try:
        import ctypes
        # its own prototype (not ctypes.pythonapi's shared attribute, whose argtypes other
        # code may set): the class by address (None: NULL, no exception) - the interpreter
        # takes its own reference, and Expired lives as long as this module
        proto = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)
        return proto(("PyThreadState_SetAsyncExc", ctypes.pythonapi))
    except (ImportError, AttributeError):     # pragma: no cover - not CPython
        return None


#: the interpreter's PyThreadState_SetAsyncExc, loaded once at import
_ASYNC_EXC = _load_async_exc()


_pthread_kill = getattr(signal, "pthread_kill", None)


class Watchdog:
    """Stops the thread of a run whose Deadline has passed.

    One daemon thread per process (:class:`_Watcher`) waits for the deadline of the run
    being watched, then interrupts the run's thread, and again every _REFIRE seconds
    until the run stops the watch (should a kernel swallow the error):

    * on the main thread, with a SIGINT sent to it (``signal.pthread_kill``): the run's own
      SIGINT handler turns it into a located BudgetError, raised wherever the thread is
      (inside a kernel's greenlet, in the scheduler), and the signal also ends a call
      blocked in the kernel (``time.sleep``, a read: EINTR).  A real Ctrl-C goes to the
      previous handler (KeyboardInterrupt, as without ptopipe);
    * on any other thread (or where no SIGINT handler can be set), with an :class:`Expired`
      exception the interpreter raises in that thread at its next bytecode: a Python loop
      stops at once, a call blocked outside Python when it returns (only the main thread
      receives signals).

    Neither costs the running kernels anything: the watcher thread sleeps until the
    deadline.  ``stop()`` ends the watch under the watcher's lock, so that no interrupt is
    asked for after it, and drops one asked for just before (a pending signal is consumed
    by the still-installed handler, which ignores it; a pending Expired is cleared)."""

    def __init__(self, cluster, limit: Deadline):
        self.cluster = cluster
        self.deadline = limit
        self.due = 0.0                  # when the next interrupt is asked for
        self.fired = 0                  # interrupts asked for
        self.armed = False
        self.thread = None              # the run's thread id
        self.kick = None                # asks for one interrupt (the watcher thread calls it)
        self._prev = None
        self._active = False
        self._signal = False            # interrupts by SIGINT (else by Expired)

    def start(self) -> None:
        if math.isinf(self.deadline.at):
            return
        self.thread = threading.get_ident()
        if threading.current_thread() is threading.main_thread():
            try:
                self._prev = _set_handler(signal.SIGINT, self._handler)
                self._signal = self._active = True      # (stop() restores the handler from here on)
            except (ValueError, OSError):   # e.g. an embedded interpreter without signals
                pass
        if self._signal:
            self.kick = self._interrupt_main
        else:
            set_exc = _ASYNC_EXC
            if set_exc is None:             # pragma: no cover - not CPython
                return
            self.kick = lambda: set_exc(self.thread, id(Expired))
        self.armed = self._active = True
        self.due = self.deadline.at
        _WATCHER.arm(self)

    def _interrupt_main(self) -> None:
        if _pthread_kill is not None:
            _pthread_kill(self.thread, signal.SIGINT)
        else:                               # pragma: no cover - no pthreads (Windows)
            _thread.interrupt_main()

    def _handler(self, signum, frame) -> None:
        if self.fired:
            if self.armed:
                err = timed_out(self.cluster, self.deadline, self._at(stopped_at(frame), greenlet.getcurrent()))
                raise err if self.fired == 1 else Abort(err)
            return                    # the run is ending anyway
        prev = self._prev             # a real Ctrl-C
        if callable(prev):
            prev(signum, frame)
        elif prev != signal.SIG_IGN:
            raise KeyboardInterrupt

    def error(self, e: BaseException) -> BudgetError | None:
        """The BudgetError of the run stopped by ``e`` if ``e`` is one of the watchdog's
        interrupts (else None).  An Expired unwound the running core's greenlet: the kernel
        line it stopped at is the innermost frame of its traceback outside ptopipe."""
        if isinstance(e, Abort):
            return e.error
        if not isinstance(e, Expired):
            return None
        return timed_out(self.cluster, self.deadline, self._at(raised_at(e.__traceback__), None))

    def _at(self, loc, glet) -> dict:
        """For :func:`core_states`: ``loc`` is where the running core's kernel stopped, if it
        ran in greenlet ``glet`` (None: its greenlet was unwound) - not a frame of a library
        ptopipe called (a kernel of the DSL: its statement's line)."""
        from .core import CoreState
        return {c: c.loc_override or loc for c in self.cluster.cores
                if c.state is CoreState.RUNNING and c.glet is not None
                and (c.glet is glet if glet is not None else c.glet.dead)}

    def stop(self) -> None:
        if not self._active:
            return
        self.armed = False
        if self._signal:
            self._active = False
            _WATCHER.disarm(self)
            prev = self._prev if self._prev is not None else signal.SIG_DFL   # None: not set from Python
            _set_handler(signal.SIGINT, prev)       # runs a pending interrupt first (ignored)
            return
        while self._active:
            try:
                _WATCHER.disarm(self)   # under the watcher's lock: no interrupt asked for after it
                if self.fired:
                    # one asked for before the lock was taken is normally raised by now (the
                    # interpreter checks after each C call); drop one still pending all the same
                    _ASYNC_EXC(self.thread, None)
                self._active = False
            except Expired:             # raised before it was dropped: dropped all the same
                pass


class _Watcher:
    """The watchdog thread: started once, it sleeps until the earliest deadline of the
    watched runs (re-armed per run without starting a thread, which can take milliseconds
    on a loaded machine; several threads may run at once) and interrupts a run's thread
    when its deadline passes, then every _REFIRE seconds (should a kernel swallow the
    error) until the run stops its watch."""

    def __init__(self):
        self._cond = threading.Condition()
        self._dogs = []                 # the armed watches
        self._thread = None
        self._wake_at = math.inf        # when the thread wakes next (inf: when notified)

    # arm and disarm run in the run's thread, where the watchdog's Expired may be raised at
    # any bytecode boundary, e.g. just after the lock was taken: the lock is released in a
    # finally clause whatever happened (a ``with`` block would keep it, and the watcher and
    # every later run would wait for it forever)
    def arm(self, dog: Watchdog) -> None:
        cond = self._cond
        try:
            cond.acquire()
            self._dogs.append(dog)
            if self._thread is None or not self._thread.is_alive():    # first run, or after fork
                self._thread = threading.Thread(target=self._loop, name="ptopipe-watchdog", daemon=True)
                self._thread.start()
            if dog.due < self._wake_at:
                # wake it to wait for this deadline; else it wakes earlier anyway and sees this
                # run (runs in a row cost no thread switch)
                cond.notify()
        finally:
            if cond._is_owned():
                cond.release()

    def disarm(self, dog: Watchdog) -> None:
        cond = self._cond
        try:
            cond.acquire()
            if dog in self._dogs:
                self._dogs.remove(dog)
        finally:
            if cond._is_owned():
                cond.release()

    def _loop(self) -> None:
        with self._cond:
            while True:
                dogs = self._dogs
                if not dogs:
                    self._wake_at = math.inf
                    self._cond.wait()
                    continue
                now = time.monotonic()
                due = min(d.due for d in dogs)
                if now < due:
                    self._wake_at = due
                    self._cond.wait(due - now)
                    continue
                for dog in dogs:
                    if dog.due <= now:
                        dog.fired += 1
                        dog.kick()
                        dog.due = now + _REFIRE


#: interrupts of a :class:`CommandWatch` before it ends the process itself (each _REFIRE apart)
HARD_STOP_AFTER = 2
_hard_exit = os._exit           # (the process's own: a command may guard os._exit from the kernel file)


class CommandWatch:
    """A Deadline's watch over a command's own work on the main thread - importing the kernel
    file, its ``make_args`` and ``golden``, the compiles - which no run's :class:`Watchdog`
    covers: when the deadline passes outside a run, the thread gets the same SIGINT, and a
    BudgetError at the user's line it interrupted stops the command.  It fires a little after
    the deadline, so that inside a run the run's own Watchdog (whose handler stands in
    for this one while the run lasts) stops it first, naming its cores.  A context manager;
    nothing off the main thread or without a bound.  ``grace``: seconds after the deadline
    it fires (a command whose files run in worker processes, each watched, waits longer for
    their reports); ``bounded``: the code objects of functions that enforce the deadline
    themselves (a C++ kernel's run in a child process), inside which it does not fire.  It
    interrupts the kernel file's own code only, not ptopipe's (a report after a run that timed
    out); code that goes on after HARD_STOP_AFTER interrupts (it catches the error, or ignores
    SIGINT) ends the process from the watcher's thread, with the error on stderr."""

    def __init__(self, limit: Deadline, grace: float = 0.25, bounded: frozenset = frozenset()):
        self.deadline = limit
        self.due = limit.at + grace
        self.bounded = bounded          # code of functions that bound their own work (a C++ child's wait)
        self.fired = 0
        self._prev = None
        self._thread = None

    def __enter__(self) -> "CommandWatch":
        if self.deadline.passed():          # (a worker's unit started late: a retried one)
            raise expired_before(self.deadline, "this part of it")
        if math.isinf(self.deadline.at) or threading.current_thread() is not threading.main_thread() \
                or _pthread_kill is None:
            return self
        try:
            self._prev = _set_handler(signal.SIGINT, self._handler)
        except (ValueError, OSError):       # pragma: no cover - an embedded interpreter
            return self
        self._thread = threading.get_ident()
        _WATCHER.arm(self)
        return self

    def kick(self) -> None:
        if self.fired > HARD_STOP_AFTER:
            # the code swallows the BudgetError (``except BaseException`` in a loop) or ignores
            # SIGINT: the command ends from this thread, saying so, rather than run forever
            frame = sys._current_frames().get(self._thread)
            loc = running_user_code(frame)
            if loc is None:
                return                  # (ptopipe's own code: it ends the command itself)
            sys.stderr.write(f"error: BudgetError: the {self.deadline.scope} did not finish within "
                             f"{self.deadline.name} of wall-clock time\n"
                             + f"  at {shown_where(str(loc))}\n"
                             + "  the kernel file's code went on after being stopped (it catches the error, or "
                               "ignores SIGINT): ptopipe ends here\n")
            sys.stderr.flush()
            _hard_exit(1)
        _pthread_kill(self._thread, signal.SIGINT)

    def _handler(self, signum, frame) -> None:
        if not self.fired:                  # a real Ctrl-C
            prev = self._prev
            if callable(prev):
                return prev(signum, frame)
            if prev != signal.SIG_IGN:
                raise KeyboardInterrupt
            return
        f = frame
        while f is not None:
            if f.f_code in self.bounded:    # its own bound reports it, as it should
                return
            f = f.f_back
        loc = running_user_code(frame)      # (the kernel file's line: the loop's)
        if loc is None:
            return                          # (ptopipe's code runs - a report after a run that
                                            # timed out: it ends the command itself)
        limit = self.deadline
        raise BudgetError(f"the {limit.scope} did not finish within {limit.name} of wall-clock time",
                          where=str(loc),
                          details="it was running this line of the kernel file outside any run (loading the "
                                  "file, its make_args or golden)",
                          fix=f"a loop that never ends, or a wait, outside the kernels; {limit.fix}",
                          findings=[{"kind": "budget", "bound": "timeout", "scope": limit.scope,
                                     "limit": limit.seconds, "core": None, "where": str(loc),
                                     "outside_runs": True}])

    def __exit__(self, *exc) -> None:
        if self._thread is None:
            return
        _WATCHER.disarm(self)
        self._thread = None
        _set_handler(signal.SIGINT, self._prev if self._prev is not None else signal.SIG_DFL)


_WATCHER = _Watcher()
if hasattr(os, "register_at_fork"):
    # a forked child (e.g. a sweep worker) has no watchdog thread, and the parent's may have
    # held the lock at the fork: start afresh
    os.register_at_fork(after_in_child=_WATCHER.__init__)
