"""Where the units of a long command run (``check`` over a kernel library, or over one
kernel's explored schedules): ``local`` - this process for one worker, else a process pool
sized to the machine - or ``ray``, a Ray cluster (``pip install "ptopipe[ray]"``;
``--address host:port`` of a running cluster, else a Ray instance started for the command
on this machine; :func:`session` keeps one for several calls).

A unit is a picklable call ``fn(unit)`` of a module-level function whose result is plain
data; results come back in the units' order whatever finishes first, so a report is the
same on every engine.  A unit whose worker dies (a crash in native code, an OOM kill) is
retried once; if it dies again its result is ``on_lost(unit, error)``.

Ctrl-C is the command's (a terminal sends SIGINT to the whole process group): a local
pool's workers ignore it, and the command, on its KeyboardInterrupt, terminates them and
leaves at once - no wait for units under way, no join of a queue no worker will drain.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from ..errors import ConfigError

ENGINES = ("local", "ray")
RETRIES = 1            # a unit whose worker died runs once more before it is reported lost


def run_units(fn, units: list, on_lost, engine: str = "local", address: str | None = None,
              workers: int | None = None, progress=None, tick: float | None = None) -> list:
    """``[fn(u) for u in units]`` on ``engine`` (``address``: the Ray cluster's; ``workers``:
    the local pool's size, default the machine's cores); ``progress(done, total)`` as units
    end.  With ``tick`` (seconds), a local pool also calls it every ``tick`` seconds while
    units run, as ``progress(done, total, under_way)`` - the indices of the units its
    workers run - so that a long unit is followed, not silent."""
    engine = engine or "local"
    check_address(engine, address)
    if engine == "ray":
        return _ray(fn, units, on_lost, address, progress)
    workers = workers or os.cpu_count() or 1
    if workers < 1:
        raise ConfigError(f"--workers {workers} must be at least 1", where="option --workers",
                          fix="e.g. --workers 2")
    if in_process(engine, workers, len(units)):
        out = []
        for k, u in enumerate(units):
            out.append(fn(u))
            if progress is not None:
                progress(k + 1, len(units))
        return out
    return _pool(fn, units, on_lost, min(workers, len(units)), progress, tick)


def in_process(engine: str | None, workers: int | None, count: int) -> bool:
    """Whether :func:`run_units` runs ``count`` units in this process, one after the other:
    on the local engine with one worker (``workers``; None: the machine's cores), or for a
    single unit."""
    return (engine or "local") != "ray" and ((workers or os.cpu_count() or 1) == 1 or count <= 1)


def check_address(engine: str | None, address: str | None) -> None:
    """A ConfigError for a Ray cluster's ``address`` given without ``engine`` ray (the command
    checks it before any work: a check too short for workers would never reach the engine)."""
    if address and (engine or "local") != "ray":
        raise ConfigError("--address names a Ray cluster: it needs --engine ray",
                          where="option --address", fix="add --engine ray, or drop --address")


def _pool(fn, units, on_lost, workers, progress, tick=None) -> list:
    results: dict = {}
    broken = []
    pool, futures = _started(fn, units, workers)
    index = {fut: k for k, fut in enumerate(futures)}
    try:
        pending = set(futures)
        while pending:              # (results as units end, whichever ends first)
            done, pending = wait(pending, timeout=tick, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=index.get):
                try:
                    results[index[fut]] = fut.result()
                except BrokenProcessPool:
                    # a worker died, and every unit still in the pool with it: each is tried
                    # again alone, so that only the one that kills its worker is reported lost
                    broken.append(index[fut])
            if progress is None or not (done or tick):
                continue
            if tick is None:
                progress(len(results), len(units))
            else:
                # (the pool marks queued units running too: the earliest are the workers')
                progress(len(results), len(units), sorted(index[f] for f in pending if f.running())[:workers])
        broken.sort()
        pool.shutdown()
        for k in broken:
            for attempt in range(RETRIES + 1):
                pool, (fut,) = _started(fn, [units[k]], 1)
                try:
                    results[k] = fut.result()
                    break
                except BrokenProcessPool as e:
                    if attempt == RETRIES:
                        results[k] = on_lost(units[k], e)
                finally:
                    pool.shutdown()
            if progress is not None:
                progress(len(results), len(units))
    except BaseException:               # Ctrl-C (or any error here): the workers end now
        _stop(pool)
        raise
    return [results[k] for k in range(len(units))]


def _ignore_sigint() -> None:
    """A pool worker's start: Ctrl-C is the command's to handle (it terminates the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _mask(signal.SIG_UNBLOCK)


def _mask(how) -> None:
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(how, {signal.SIGINT})


def _started(fn, units, workers) -> tuple:
    """A pool of ``workers`` that ignore SIGINT and the futures of ``fn(u)`` for ``units``.
    SIGINT stays blocked while the workers start (they inherit the mask until their
    initializer ignores it), so that a Ctrl-C then reaches only this process, after."""
    _mask(signal.SIG_BLOCK)
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_ignore_sigint)
    try:
        try:
            futures = [pool.submit(fn, u) for u in units]
        finally:
            _mask(signal.SIG_UNBLOCK)   # (a Ctrl-C held back is raised here)
    except BaseException:
        _stop(pool)
        raise
    return pool, futures


def _stop(pool: ProcessPoolExecutor) -> None:
    """End ``pool`` at once: its workers terminated (killed if they linger), its queued
    units cancelled, and nothing left for the interpreter's exit to wait on - nor its
    manager thread, which would otherwise outlive the command's report and read as a
    thread the kernel file left running (:func:`ptopipe.cli.exits.end_process`)."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    for p in procs:
        p.terminate()
    queue = getattr(pool, "_call_queue", None)
    if queue is not None:
        queue.cancel_join_thread()      # (its feeder may be blocked on a pipe no worker reads)
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.join(0.5)
        if p.is_alive():
            p.kill()
            p.join(0.5)
    if manager is not None:
        manager.join(1.0)               # (it ends once it has seen its workers gone)


def _reachable(address: str, timeout: float = 5.0) -> None:
    """A ConfigError unless something listens at ``address`` (Ray itself would retry for
    minutes before it gives up on a wrong address)."""
    host, _, port = address.rpartition(":")
    if address.startswith(("ray://", "auto")) or not port.isdigit():
        return                          # a Ray client URL or "auto": Ray's own resolution
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout).close()
    except OSError as e:
        raise ConfigError(f"cannot reach the Ray cluster at {address}: {e.strerror or e}",
                          where="option --address",
                          fix="start one (ray start --head --port=PORT) and give HOST:PORT, or "
                              "drop --address to start a local one") from None


@contextlib.contextmanager
def session(engine: str = "local", address: str | None = None):
    """Several :func:`run_units` calls on one engine: for ``ray``, one Ray instance (or
    connection) for all of them rather than one per call; nothing for ``local``."""
    if (engine or "local") != "ray":
        yield
        return
    ray = _ray_module()
    started = not ray.is_initialized()
    if started:
        _ray_init(ray, address)
    try:
        yield
    finally:
        if started:
            ray.shutdown()


def require_ray() -> None:
    """The ConfigError of ``--engine ray`` without Ray installed, raised before any work
    (whether or not the command then has units enough to use it), without importing Ray."""
    import importlib.util
    if importlib.util.find_spec("ray") is None:
        raise _no_ray()


def _no_ray() -> ConfigError:
    return ConfigError("--engine ray needs Ray, which is not installed", where="option --engine",
                       fix='install the extra: pip install "ptopipe[ray]"')


def _ray_module():
    try:
        import ray
    except ImportError:
        raise _no_ray() from None
    return ray


def _ray_init(ray, address) -> None:
    if address:
        _reachable(address)
    try:
        ray.init(address=address, log_to_driver=False, configure_logging=False,
                 **({} if address else {"include_dashboard": False}))
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise ConfigError(f"cannot reach the Ray cluster{f' at {address}' if address else ''}: "
                          f"{str(e).splitlines()[0] if str(e) else type(e).__name__}",
                          where="option --address",
                          fix="start one (ray start --head) and give its address, or drop "
                              "--address to start a local one") from None


def _ray(fn, units, on_lost, address, progress) -> list:
    ray = _ray_module()
    started = not ray.is_initialized()
    if started:
        _ray_init(ray, address)
    try:
        task = ray.remote(max_retries=RETRIES)(fn)
        refs = [task.remote(u) for u in units]
        out = []
        for k, ref in enumerate(refs):
            try:
                out.append(ray.get(ref))
            except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
                    ray.exceptions.TaskUnschedulableError) as e:
                out.append(on_lost(units[k], e))
            if progress is not None:
                progress(k + 1, len(units))
        return out
    finally:
        if started:
            ray.shutdown()
