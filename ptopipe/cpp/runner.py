"""Running a C++ kernel file on the simulated cluster: :func:`run_cpp`, and :func:`in_child`,
which runs any work on compiled kernels in a child process.

The kernel's native code runs in a forked child process (the build, which raises compile
errors, runs in the caller first): the child loads the libraries, runs the kernels through
:mod:`ptopipe.isa` (:class:`~ptopipe.cpp.abi.Dispatcher`) and sends back a picklable result -
the outputs and the run summary - or the error the run raised.  A kernel that crashes (a bad
pointer, an abort, a write through a GM pointer) kills only the child: the parent reports a
KernelError with the signal at the C++ line of the code that faulted (by the kernel
libraries' line tables: :func:`ptopipe.cpp.callers.fault_lines`) or, where that is not
kernel code (an abort), of the last instruction the kernel called, and goes on (a sweep or
an exploration survives it).  A kernel that never returns (a C++ loop with no instruction in
it, which the simulator's instruction budget does not see) is stopped by the wall-clock
bound.
"""
from __future__ import annotations

import ctypes
import gc
import os
import pickle
import select
import signal
import sys
import time

from ..errors import BudgetError, ConfigError, KernelError, shown_path
from ..sim.bounds import NEVER, Deadline
from .build import Kernels, arch_macro, build, build_warnings, expected_side, find_kernels

#: seconds a child may run past the run's own timeout before it is killed
GRACE = 30.0
#: the signal that stops a child past its bound (its kernel libraries' handler reports the code
#: it interrupted, ptopipe_entry.hpp on_crash), and how long it may take before SIGKILL
STOP_SIGNAL, STOP_GRACE = signal.SIGUSR1, 2.0
DEFAULT_TIMEOUT = 60.0
#: the crash descriptor's lines: a kernel library's place in the child (``start end path``),
#: the signal handler's report (``signal line pc address si_code file``: ptopipe_entry.hpp)
LIBRARY_MARK, CRASH_MARK = "PTOPIPE-LIB", "PTOPIPE-CRASH"
#: what the line of the crash descriptor's call site is (the kernel library keeps it, and the
#: kernel wrapper before the kernel starts): ``n > 0`` the last instruction's, which had
#: returned; ``-n`` an instruction's whose operands were being read (``pto-inst.hpp inst``);
#: ``-(KERNEL_SITE + n)`` the kernel function's that had issued no instruction yet
SITE_AFTER, SITE_READING, SITE_KERNEL = "after", "reading", "kernel"
KERNEL_SITE = 1 << 32


def site_state(line: int) -> tuple:
    """(SITE_*, the source line) of the crash descriptor's ``line`` word."""
    if line >= 0:
        return SITE_AFTER, line
    if -line >= KERNEL_SITE:
        return SITE_KERNEL, -line - KERNEL_SITE
    return SITE_READING, -line
#: si_code of a SIGSEGV at a mapped page the access is not allowed on (a write to read-only GM)
SEGV_ACCERR = 2
#: fault addresses below this are small integers used as pointers (a tile's data(): a byte
#: address in a core's local memory, or null)
SMALL_ADDRESS = 1 << 32


class Loaded:
    """The kernels of a built file, loaded in this process: ``aic`` / ``aiv`` are Python
    kernel functions for :func:`ptopipe.isa.run` (None for a side the file has no kernel for;
    ``aiv`` is ``(kernel, None)`` for a lone Vector kernel that runs on AIV0 only)."""

    def __init__(self, kernels: Kernels, libs: dict, crash_fd: int = -1, bridge_lib: str | None = None):
        from .abi import Dispatcher
        from .bridge import callback_address
        self.dispatcher = d = Dispatcher()
        # the instruction callback: the C-API bridge when it was built, else ctypes'
        self.callback = callback_address(bridge_lib) or ctypes.cast(d.c_callback, ctypes.c_void_p).value
        self.libs = {}
        fns = {}
        for role, path in libs.items():
            lib = self.libs.get(path)
            if lib is None:
                lib = self.libs[path] = ctypes.PyDLL(path)
                lib.ptopipe_init.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
                lib.ptopipe_init(self.callback, d.shared_address, crash_fd)
            run_fn = getattr(lib, f"ptopipe_run_{role}")
            run_fn.argtypes = [ctypes.c_void_p]
            run_fn.restype = ctypes.c_int
            sig_fn = getattr(lib, f"ptopipe_sig_{role}")
            sig_fn.restype = ctypes.c_char_p
            f = kernels.roles[role]
            label = f"{os.path.basename(f.file or kernels.path)}:{f.line} {f.name}"
            frames = getattr(lib, "ptopipe_abort_frames", None)
            if frames is not None:
                frames.argtypes = [ctypes.c_void_p, ctypes.c_int]
                frames.restype = ctypes.c_int
            fns[role] = d.kernel(run_fn, sig_fn().decode(), f.params, label, f.elements,
                                 expected_side(kernels, role), frames, tuple(libs.values()),
                                 start=(f.file or kernels.path, -(KERNEL_SITE + f.line)),
                                 stop_at=None if crash_fd >= 0 else _stop_at(lib, kernels.path))
        self.aic, self.aiv = fns.get("aic"), fns.get("aiv")
        if kernels.mixed:               # (build.Kernels.mixed: both kinds of tiles on the AIC)
            self.aic = _given_ub(self.aic)
        if kernels.one_lane:            # AIV0 only (build._one_lane)
            self.aiv = (self.aiv, None)
        if crash_fd >= 0:               # where the libraries are: a crash's report names its line
            from .callers import library_ranges
            for lo, hi, path in library_ranges(self.libs):
                os.write(crash_fd, f"{LIBRARY_MARK} {lo} {hi} {path}\n".encode())


def _stop_at(lib, path: str):
    """``stop_at(deadline)``: gives the kernel library ``lib`` (of C++ file ``path``, run in this
    process) the wall-clock bound of the run about to call one of its kernels - past it, C++
    that makes no instruction ends the process with the located BudgetError (the library's
    own thread: ptopipe_entry.hpp ptopipe_stop_at), as nothing else can stop native code here.
    None for a library built without it."""
    fn = getattr(lib, "ptopipe_stop_at", None)
    if fn is None:
        return None
    fn.argtypes = [ctypes.c_double, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                   ctypes.c_int64]
    fn.restype = None
    name = os.path.basename(path)
    texts = {}
    paths = (os.path.abspath(path).encode(), shown_path(path).encode())     # (as build.wrapper includes it)

    def stop_at(deadline) -> None:
        due = deadline.at if deadline is not None and deadline.at != float("inf") else 0.0
        got = texts.get(deadline.name if due else None)
        if got is None:
            got = texts[deadline.name if due else None] = (
                (f"error: BudgetError: the C++ kernel {name} did not finish within {deadline.name} of wall-clock "
                 "time (stopped a little later): C++ that calls no PTO instruction runs after the kernel's last "
                 "instruction, at this line").encode(),
                (f"  fix: look for a loop after this line that calls no PTO instruction; {deadline.fix} (ptopipe "
                 f"ended the process: C++ run in this process cannot be stopped otherwise - `ptopipe run {name}` "
                 "runs it in a child process)").encode()) if due else (b"", b"")
        fn(due, got[0], got[1], *paths, KERNEL_SITE)
    return stop_at


def _given_ub(kernel):
    """``kernel`` run on a core given a UB as well (:meth:`ptopipe.sim.core.Core.add_memory`)."""
    from ..arch.vocab import MemSpace
    from ..isa import current_core

    def mixed(**kw):
        current_core().add_memory(MemSpace.UB)
        return kernel(**kw)
    mixed.__name__ = getattr(kernel, "__name__", "kernel")
    return mixed


def load(path: str, aic: str | None = None, aiv: str | None = None, crash_fd: int = -1,
         platform="a2a3") -> Loaded:
    """Build (or take from the cache) and load the kernels of C++ file ``path`` in THIS process
    (no crash isolation: :func:`run_cpp` and :func:`in_child` run them in a child)."""
    kernels = find_kernels(path, aic, aiv, platform)
    return Loaded(kernels, build(kernels, platform), crash_fd, bridge())


def kernels(path: str, aic: str | None = None, aiv: str | None = None) -> tuple:
    """(aic, aiv): Python kernel functions running the C++ kernels of file ``path`` in THIS
    process, for :func:`ptopipe.run` or a :class:`~ptopipe.Scenario` (so ``ptopipe run|check
    file.py`` runs a C++ kernel with a numpy golden).  The file is built for a run's platform
    when a run first needs it (cached), and runs the kernels it defines for that platform (a
    kernel defined once per platform under ``#if defined(PTO_NPU_ARCH_A5)``: that platform's
    definition; one the file defines for one platform only is an error on the other's run); a
    kernel crash ends this process, and so does C++ that calls no instruction past the run's
    timeout (:func:`_stop_at`) - :func:`run_cpp` and ``ptopipe run file.cpp`` run it in a child
    process instead.  Either is None when the file has no kernel for that side; a lone
    Vector kernel that runs on AIV0 only (a Vector-only launch:
    :func:`ptopipe.isa.launch.lone_vector_lanes`) is ``(kernel, None)``."""
    found, refused = per_platform(path, aic, aiv)
    loaded = {}
    some = next(iter(found.values()))

    def side(role):
        def kernel(**kw):
            from ..isa.context import current_core
            from ..sim.location import SourceLoc
            core = current_core()
            plat = core.cluster.platform.name
            k = loaded.get(plat)
            if k is None:
                if plat in refused:
                    raise refused[plat]
                # (a bound passing while the compiler runs names the kernel, not the wait for it)
                was, f = core.loc_override, found[plat].roles[role]
                core.loc_override = SourceLoc(f.file or path, f.line, None, f.name)
                try:
                    k = loaded[plat] = Loaded(found[plat], build(found[plat], plat), bridge_lib=bridge())
                finally:
                    core.loc_override = was
            fn = getattr(k, role)
            # (a lone Vector kernel's is Loaded's (kernel, None): this side is its AIV0's)
            return (fn[0] if isinstance(fn, tuple) else fn)(**kw)
        kernel.__name__ = f"{os.path.basename(path)}:{some.roles[role].name}"
        kernel.maps_gm = True           # (its run's GM shareable: Dispatcher.kernel's)
        return kernel
    aic, aiv = (side(r) if r in some.roles else None for r in ("aic", "aiv"))
    return aic, ((aiv, None) if some.one_lane else aiv)


def per_platform(path: str, aic: str | None = None, aiv: str | None = None) -> tuple:
    """({platform: :class:`Kernels`}, {platform: the ConfigError finding them raised}) of C++
    file ``path`` for each platform, named through the API (:func:`kernels`: the platform is
    the run's).  Every platform refusing it raises the first one's error; platforms that find
    different sides (or lanes) of kernels are a ConfigError, as one (aic, aiv) pair runs on all."""
    from ..arch import PLATFORMS
    found, refused = {}, {}
    for plat in dict.fromkeys(p.name for p in PLATFORMS.values()):
        try:
            found[plat] = find_kernels(path, aic, aiv, plat, api=True)
        except ConfigError as e:
            refused[plat] = e
    if not found:
        raise next(iter(refused.values()))
    for plat, e in refused.items():     # (what the other platforms' builds define, this one's leaves out)
        refused[plat] = ConfigError(f"on {plat}: {e.what}", where=e.where,
                                    fix=f"the file's kernels are found for {' and '.join(found)}: run it there, or "
                                        f"define them for {plat} too (an #if on defined({arch_macro(plat)}) or "
                                        f"its #else); {e.fix}")
    shapes = {plat: (tuple(sorted(k.roles)), k.one_lane) for plat, k in found.items()}
    if len(set(shapes.values())) > 1:
        said = "; ".join(f"{plat}: {' and '.join(f'{r} {found[plat].roles[r].name}' for r in roles)}"
                         + (" (AIV0 only)" if lone else "") for plat, (roles, lone) in shapes.items())
        raise ConfigError(f"{shown_path(path)} has different kernels per platform ({said}): ptopipe.cpp.kernels "
                          "returns one (aic, aiv) pair for every platform's runs", where=shown_path(path),
                          fix="name the kernels both platforms run (aic='NAME', aiv='NAME'), or run each platform's "
                              "with ptopipe.cpp.run_cpp(path, platform=...)")
    return found, refused


def bridge() -> str | None:
    """The C-API bridge library to call instructions through (built here, in the caller, so a
    child only loads it), or None: the ctypes callback (:mod:`.bridge`)."""
    from . import bridge as b
    return b.library() if b.enabled() else None


# -- the child process ------------------------------------------------------------------------------
def _pack_error(e: BaseException) -> tuple:
    state = {}
    for k, v in getattr(e, "__dict__", {}).items():
        try:
            pickle.dumps(v)
            state[k] = v
        except Exception:  # noqa: BLE001 - what does not pickle stays behind
            pass
    args = []
    for a in e.args:
        try:
            pickle.dumps(a)
            args.append(a)
        except Exception:  # noqa: BLE001
            args.append(str(a))
    return type(e), tuple(args), state


def _unpack_error(packed) -> BaseException:
    cls, args, state = packed
    e = cls.__new__(cls)
    BaseException.__init__(e, *args)
    e.__dict__.update(state)
    return e


def seconds_left(timeout) -> float | None:
    """The seconds a child may run: ``timeout`` seconds, or what a
    :class:`~ptopipe.sim.bounds.Deadline` (a command's ``--timeout``) has left; None: no bound."""
    if timeout is None:
        return None
    if isinstance(timeout, Deadline):
        return timeout.left()
    return float(timeout) if float(timeout) < NEVER else float("inf")


def flush_c_stdio() -> None:
    """Flush C stdio's buffers (``fflush(NULL)``): a kernel's printf text still held there (C
    buffers stdout that is not a terminal; a child ends with ``_exit``, which would drop it)."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


def in_child(work, timeout=DEFAULT_TIMEOUT, what: str = "the C++ kernel"):
    """``work(crash_fd)`` run in a forked child; its (picklable) return value, or the error it
    raised, re-raised here.  A child killed by a signal is a KernelError naming the signal and
    the last instruction's C++ line (which the library writes on ``crash_fd``).  ``timeout``
    (seconds, or a Deadline) bounds it: the child's own watchdog reports a run past it as a
    located BudgetError; a child still running a grace period later (C++ that calls no PTO
    instruction, which the watchdog cannot interrupt) is killed and reported as a
    BudgetError too.  An error at a line of C++ that ptopipe wrote from a DSL kernel also
    names that DSL line."""
    budget = seconds_left(timeout)
    # the limit before the fork: nothing can fail between the fork and the watch of the child
    limit = None if budget is None or budget == float("inf") else \
        time.monotonic() + budget + min(GRACE, max(1.0, budget / 2))
    res_r, res_w = os.pipe()
    crash_r, crash_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    flush_c_stdio()                                  # (else the child would write it again)
    pid = os.fork()
    if pid == 0:                                     # the child
        status = 0
        # what the parent made is not this run's garbage: the collector leaves it alone (walking
        # it would also copy every page of it, shared with the parent until written)
        gc.freeze()
        try:
            os.close(res_r)
            os.close(crash_r)
            try:
                payload = ("ok", work(crash_w))
            except BaseException as e:  # noqa: BLE001 - everything goes back to the parent
                payload = ("error", _pack_error(e))
            try:
                data = pickle.dumps(payload)
            except Exception as e:  # noqa: BLE001
                data = pickle.dumps(("error", _pack_error(KernelError(f"the result of {what} cannot be sent back: {e}"))))
            with os.fdopen(res_w, "wb") as f:
                f.write(data)
        except BaseException:  # noqa: BLE001
            status = 70
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            flush_c_stdio()
            os._exit(status)
    os.close(res_w)
    os.close(crash_w)
    chunks, crash = [], b""
    killed = False
    fds = [res_r, crash_r]
    try:
        while fds:
            wait = None if limit is None else max(0.0, limit - time.monotonic())
            ready, _, _ = select.select(fds, [], [], wait)
            if not ready:
                if not killed:          # the stop signal: the child reports where it is, then dies
                    os.kill(pid, STOP_SIGNAL)
                    killed, limit = True, time.monotonic() + STOP_GRACE
                    continue
                os.kill(pid, signal.SIGKILL)
                break
            for fd in ready:
                b = os.read(fd, 1 << 20)
                if not b:
                    fds.remove(fd)
                elif fd == res_r:
                    chunks.append(b)
                else:
                    crash += b
    except BaseException:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    finally:
        os.close(res_r)
        os.close(crash_r)
    _, status = os.waitpid(pid, 0)
    data = b"".join(chunks)
    if data and not killed:
        kind, value = pickle.loads(data)
        if kind == "error":
            raise _located(_unpack_error(value))
        return value
    raise _located(_crash_error(status, crash.decode(errors="replace"), killed,
                                getattr(timeout, "seconds", budget), what))


def _located(e: BaseException) -> BaseException:
    """``e`` with the DSL line of its C++ line, when the C++ was written by ``ptopipe compile
    --emit cpp`` (:mod:`ptopipe.codegen.cpp_origin`)."""
    if getattr(e, "where", None):
        from ..codegen.cpp_origin import annotate
        annotate(e)
    return e


def _crash_error(status: int, report: str, killed: bool, timeout, what: str) -> KernelError:
    from ..sim.location import SourceLoc
    where = sig = fault = None
    state = SITE_AFTER                  # what the crash descriptor's line is (SITE_*)
    ranges = []
    for line in report.splitlines():
        parts = line.split(" ", 6)
        try:
            if parts[0] == LIBRARY_MARK:
                _mark, lo, hi, path = line.split(" ", 3)
                ranges.append((int(lo), int(hi), path))
            elif parts[0] == CRASH_MARK:
                sig, last, *fault = (int(x) for x in parts[1:6])        # fault: pc, address, si_code
                state, last = site_state(last)
                if parts[6] != "?" and last > 0:
                    where = str(SourceLoc(parts[6], last))
        except (ValueError, IndexError):        # a line the dying process did not finish
            continue
    if killed:
        from .callers import fault_lines
        at = fault_lines(fault[0], ranges) if fault and fault[0] else []
        if at:                          # the code the stop interrupted: the loop's own line
            where = str(SourceLoc(at[0].file, at[0].line, None, None, tuple(at[1:])))
        return BudgetError(
            f"{what} did not finish within its wall-clock bound of {timeout:g} s (stopped a little later): "
            "a C++ loop that calls no PTO instruction is bounded only by it"
            + (" - it was running this line" if at else ""),
            where=where,
            fix=("look for the loop around this line: it calls no PTO instruction" if at else
                 "it issued no PTO instruction yet: look for a loop at the start of the kernel at this line"
                 if where and state == SITE_KERNEL else "look for a loop without a PTO instruction after this line"
                 if where else "it issued no PTO instruction at all: look for a loop at the kernel's start")
                + "; raise --timeout (timeout=) if it is just long",
            findings=[{"kind": "budget", "bound": "timeout", "limit": timeout, "core": None, "where": where}])
    if sig is None and os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
    if sig is not None:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        from .callers import fault_lines
        at = fault_lines(fault[0], ranges) if fault and fault[0] else []
        if at:                          # the faulting code's own line (and the calls inlined there)
            where = str(SourceLoc(at[0].file, at[0].line, None, None, tuple(at[1:])))
            head = f"{what} crashed with {name} at this line"
        elif where and state == SITE_READING:     # (the fault is in ptopipe's header, encoding the call)
            head = f"{what} crashed with {name} reading an operand of the instruction at this line"
        elif where and state == SITE_KERNEL:
            head = f"{what} crashed with {name} in the kernel at this line, before its first instruction"
        else:
            head = f"{what} crashed with {name}" + (" after the instruction at this line" if where else
                                                   " before its first instruction")
        cause, fix = _fault_cause(sig, fault)
        return KernelError(head + cause, where=where, fix=fix + ("" if at or state == SITE_READING else
                                                                 "; check array indices and asserts in the C++ "
                                                                 "after that line"))
    return KernelError(f"{what} ended its process (exit status {os.WEXITSTATUS(status) if os.WIFEXITED(status) else status})",
                       where=where, fix="a kernel must not call exit(); return from it")


#: a crash that is no bad memory access: what it was, for its message, and the fix.  pto-isa's
#: DEBUG_CHECK traps with __builtin_trap(): SIGILL on x86-64, SIGTRAP on AArch64
_TRAPPED = (": a trap - a failed DEBUG_CHECK (PTO_ASSERT in a _DEBUG build; the [PTO][ASSERT] lines printed "
            "above name its condition), a __builtin_trap(), or a trap the compiler put where the C++ is "
            "undefined (a function returning a value that reaches its end without one)",
            "the condition checked at that line does not hold for this run: fix the kernel or its arguments")
_SIGNAL_CAUSES = {
    signal.SIGFPE: (": an integer division or remainder by zero (or of its type's most negative value by -1)",
                    "check the divisor of the integer division at that line (C++ leaves the result undefined, "
                    "the host traps)"),
    signal.SIGILL: _TRAPPED,
    signal.SIGTRAP: _TRAPPED,
    signal.SIGABRT: (": an abort - a failed assert(), a C++ exception nothing caught, std::abort(), or the C "
                     "library finding its heap corrupted (a write past an array's end)",
                     "the process's own message, printed above the error, says which"),
}


def _fault_cause(sig: int, fault) -> tuple:
    """(what a crash's memory access was, for its message; the fix) from the signal and the
    handler's ``fault`` report (pc, the address the access faulted at, its si_code; None: none);
    a crash of another kind than a memory access (:data:`_SIGNAL_CAUSES`): what it was."""
    if sig in _SIGNAL_CAUSES:
        return _SIGNAL_CAUSES[sig]
    from .gmview import ARG_MASK, GM_BASE, GM_END
    addr, code = (fault[1], fault[2]) if fault and sig in (signal.SIGSEGV, signal.SIGBUS) else (-1, 0)
    if GM_BASE <= addr < GM_END:
        gm = (addr - GM_BASE) & ARG_MASK
        if code == SEGV_ACCERR:
            return (f": a write through a __gm__ pointer (to GM[{gm:#x}]) - C++ code may read GM through its "
                    "pointers, and writes it only with instructions",
                    "store a tile with TSTORE through a GlobalTensor at that pointer (the checkers and the timing "
                    "see it; a raw store they would not)")
        return (f": an access through a __gm__ pointer at GM[{gm:#x}], outside the GM pages ptopipe maps there "
                "(past its argument's end, or GM could not be mapped on this system)",
                "keep pointer arithmetic within the argument the pointer was derived from")
    if 0 <= addr < SMALL_ADDRESS:
        return (f": an access at address {addr:#x}, not host memory",
                "a tile's data() is the tile's byte address in its core's local memory (UB / L1 ...), not a host "
                "pointer, as it is in pto-isa's CPU simulator: read and fill tiles with instructions (TLOAD / "
                "TSTORE, TEXPANDS), never through data(); check for a null pointer")
    return ("", "__gm__ pointers and tile.data() are simulator addresses, not host memory as in pto-isa's CPU "
                "simulator: a __gm__ pointer may be read (ptr[i]) but GM is written with TSTORE through a "
                "GlobalTensor, and a tile is read and filled with instructions (TLOAD / TSTORE, TEXPANDS)")


# -- run_cpp ----------------------------------------------------------------------------------------
class CppRunResult:
    """What :func:`run_cpp` returns: ``outputs`` (name -> final GM array), ``summary`` (a
    RunSummary), ``launches`` (outputs after each launch) and ``prints`` (TPRINT texts)."""

    def __init__(self, outputs, summary, launches, prints):
        self.outputs, self.summary, self.launches, self.prints = outputs, summary, launches, prints

    def __getitem__(self, name):
        return self.outputs[name]


def run_cpp(path: str, args: dict | None = None, aic: str | None = None, aiv: str | None = None,
            platform="a2a3", protocol: str = "spec", isolate: bool = True, **run_kwargs):
    """Run the C++ kernels of file ``path`` on a simulated cluster, as :func:`ptopipe.run`
    runs Python kernels (same ``args`` - numpy arrays for ``__gm__`` pointer parameters (None:
    a nullptr, for a pointer the kernel leaves alone, as pto-isa's matmul tests pass an absent
    bias), numbers for scalars, by C++ parameter name -, same options and errors, every error at the
    C++ file:line).  The kernels are found by :func:`~ptopipe.cpp.build.find_kernels`
    (``aic=`` / ``aiv=`` function names, or the file's ``__global__`` entry), compiled with
    the system C++ compiler into a cached library and run in a child process
    (``isolate=False``: in this one, returning ptopipe.run's RunResult with its cluster - a
    crash then ends this process).  Hand-written C++ that sets its own events runs in the manual
    synchronisation mode unless ``sync=`` says otherwise (``Kernels.own_events``)."""
    from ..isa.launch import run
    kernels = find_kernels(path, aic, aiv, platform, params=set(args or ()))
    if kernels.own_events:
        run_kwargs.setdefault("sync", "manual")
    libs = build(kernels, platform)
    bridge_lib = bridge()
    warned = build_warnings(libs, kernels)      # the summary's first warnings
    if not isolate:
        k = Loaded(kernels, libs, bridge_lib=bridge_lib)
        res = run(aic=k.aic, aiv=k.aiv, args=args, platform=platform, protocol=protocol, **run_kwargs)
        res.summary.leaks[:0] = warned
        return res

    def work(crash_fd):
        k = Loaded(kernels, libs, crash_fd, bridge_lib)
        res = run(aic=k.aic, aiv=k.aiv, args=args, platform=platform, protocol=protocol, **run_kwargs)
        return CppRunResult({n: a.copy() for n, a in res.outputs.items()}, res.summary, res.launches,
                            res.prints)
    timeout = run_kwargs.get("timeout")
    res = in_child(work, DEFAULT_TIMEOUT if timeout is None else timeout,
                   f"the C++ kernel {os.path.basename(path)}")
    res.summary.leaks[:0] = warned
    return res


__all__ = ["CppRunResult", "Loaded", "flush_c_stdio", "in_child", "kernels", "load", "per_platform", "run_cpp"]
