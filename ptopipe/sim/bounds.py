"""The bounds of a run, so that no kernel can hang it.

* the instruction budget, ``max_instructions`` per core: every instruction, every TSYNC
  and every satisfied flag WAIT counts (``Core._retire``, ``TSYNC`` + ``Core.check_step``,
  ``Core.wait_flag``);
* the simulated time, ``until_cycle``: no instruction may end after that cycle, nor a
  TSYNC take the issue clock past it (off unless asked for; then every instruction is
  checked, which costs a little);
* the wall-clock time, ``timeout`` seconds: a watchdog thread interrupts the main thread,
  which stops even a kernel looping in pure Python without any instruction.

Passing a bound raises :class:`~ptopipe.errors.BudgetError` naming every core and the
kernel line it was at.  A core blocked forever is not a bound: that is a DeadlockError,
found as soon as no core can run.
"""
from __future__ import annotations

import _thread
import math
import os
import signal
try:                    # signal.signal without its enum wrapping: ~10 us less on every run
    from _signal import signal as _set_handler
except ImportError:     # pragma: no cover
    _set_handler = signal.signal
import threading
import time

from ..errors import BudgetError, ConfigError

DEFAULT_MAX_INSTRUCTIONS = 50_000_000
DEFAULT_TIMEOUT = 60.0          # seconds of wall-clock time per run
_REFIRE = 0.5                   # seconds between interrupts once the timeout has passed


def check_bounds(max_instructions, until_cycle, timeout) -> tuple:
    """Validated ``(max_instructions, until_cycle, timeout)``; None means the default
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
    if timeout is None:
        timeout = DEFAULT_TIMEOUT
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ConfigError(f"timeout={timeout!r} is not a positive number of seconds",
                          fix=f"give seconds > 0 (None: the default {DEFAULT_TIMEOUT:g} s; "
                              "math.inf: no wall-clock bound)")
    return max_instructions, until_cycle, float(timeout)


def core_states(cluster) -> str:
    """One line per core: its state, kernel line, instructions and issue clock."""
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
        lines.append(f"{c.name:5s} {what} at {c.where()} ({n} instruction{'s' * (n != 1)}, "
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


def timed_out(cluster, timeout: float) -> BudgetError:
    """The error of a run stopped by the watchdog (built in the main thread)."""
    from .core import CoreState
    cores = [c for c in cluster.cores if c.state not in (CoreState.IDLE, CoreState.DONE)]
    running = [c for c in cores if c.state is CoreState.RUNNING] or cores
    where = str(running[0].where()) if running else None
    return BudgetError(
        f"the run did not finish within timeout={timeout:g} s of wall-clock time",
        where=where, details=core_states(cluster),
        fix="a kernel may loop forever, e.g. a Python loop that issues no instruction; "
            "raise timeout= (or --timeout SECONDS) if the run is just long",
        findings=[{"kind": "budget", "bound": "timeout", "limit": timeout,
                   "core": running[0].name if running else None, "where": where}])


class Abort(BaseException):
    """The watchdog's second and later interrupts: not an Exception, so that a kernel that
    swallowed the BudgetError (``except Exception``) is stopped all the same; the cluster
    turns it back into the BudgetError it carries."""

    def __init__(self, error: BudgetError):
        super().__init__(error.what)
        self.error = error


class Watchdog:
    """Interrupts the main thread when a run takes longer than ``timeout`` seconds.

    One daemon thread per process (:class:`_Watcher`) waits for the deadline of the run
    being watched and then simulates a SIGINT (``_thread.interrupt_main``); the run's own
    SIGINT handler turns it into a located BudgetError, raised wherever the main thread is
    (inside a kernel's greenlet, in the scheduler).  A real Ctrl-C goes to the previous
    handler (KeyboardInterrupt, as without ptopipe).  ``stop()`` ends the watch under the
    watcher's lock, so no interrupt is asked for after it; one asked for just before is
    consumed by the still-installed handler (``signal.signal`` runs pending handlers
    before it replaces one) and ignored.

    Only the main thread can receive signals: a run started from another thread has the
    instruction and time bounds but no watchdog."""

    def __init__(self, cluster, timeout: float):
        self.cluster = cluster
        self.timeout = timeout
        self.deadline = 0.0
        self.fired = 0                  # interrupts asked for
        self.armed = False
        self.outer = None               # the watch of an enclosing run (nested runs)
        self._prev = None
        self._active = False

    def start(self) -> None:
        if math.isinf(self.timeout) or threading.current_thread() is not threading.main_thread():
            return
        try:
            self._prev = _set_handler(signal.SIGINT, self._handler)
        except (ValueError, OSError):       # e.g. an embedded interpreter without signals
            return
        self.armed = self._active = True
        self.deadline = time.monotonic() + self.timeout
        _WATCHER.arm(self)

    def _handler(self, signum, frame) -> None:
        if self.fired:
            if self.armed:
                err = timed_out(self.cluster, self.timeout)
                raise err if self.fired == 1 else Abort(err)
            return                    # the run is ending anyway
        prev = self._prev             # a real Ctrl-C
        if callable(prev):
            prev(signum, frame)
        elif prev != signal.SIG_IGN:
            raise KeyboardInterrupt

    def stop(self) -> None:
        if not self._active:
            return
        self._active = self.armed = False
        _WATCHER.disarm(self)
        prev = self._prev if self._prev is not None else signal.SIG_DFL   # None: not set from Python
        _set_handler(signal.SIGINT, prev)           # runs a pending interrupt first (ignored)


class _Watcher:
    """The watchdog thread: started once, it sleeps until the deadline of the watched run
    (re-armed per run without starting a thread, which can take milliseconds on a loaded
    machine) and interrupts the main thread when it passes, then every _REFIRE seconds
    (should a kernel swallow the error) until the run stops the watch."""

    def __init__(self):
        self._cond = threading.Condition()
        self._dog = None
        self._thread = None
        self._wake_at = math.inf        # when the thread wakes next (inf: when notified)

    def arm(self, dog: Watchdog) -> None:
        with self._cond:
            dog.outer, self._dog = self._dog, dog
            if self._thread is None or not self._thread.is_alive():    # first run, or after fork
                self._thread = threading.Thread(target=self._loop, name="ptopipe-watchdog", daemon=True)
                self._thread.start()
            if dog.deadline < self._wake_at:
                # wake it to wait for this deadline; else it wakes earlier anyway and sees this
                # run (runs in a row cost no thread switch)
                self._cond.notify()

    def disarm(self, dog: Watchdog) -> None:
        with self._cond:
            if self._dog is dog:
                self._dog = dog.outer

    def _loop(self) -> None:
        with self._cond:
            while True:
                dog = self._dog
                if dog is None:
                    self._wake_at = math.inf
                    self._cond.wait()
                    continue
                now = time.monotonic()
                if now < dog.deadline:
                    self._wake_at = dog.deadline
                    self._cond.wait(dog.deadline - now)
                    continue
                dog.fired += 1
                _thread.interrupt_main()
                dog.deadline = now + _REFIRE


_WATCHER = _Watcher()
if hasattr(os, "register_at_fork"):
    # a forked child (e.g. a sweep worker) has no watchdog thread, and the parent's may have
    # held the lock at the fork: start afresh
    os.register_at_fork(after_in_child=_WATCHER.__init__)
