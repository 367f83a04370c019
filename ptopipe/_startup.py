"""What the ``ptopipe`` command sets up before it imports anything: Ctrl-C while it starts
up, and one BLAS thread.

The command spends its first half second importing (numpy, the catalogue, the subcommand
modules) before :func:`ptopipe.cli.main` can catch a KeyboardInterrupt, and an interrupt
there would end in a Python traceback.  So when this process *is* the command (its console
script, or ``python -m ptopipe`` / ``python -m ptopipe.cli``), importing the package first
makes SIGINT end the start-up the way the command ends any interrupt: one line,
"interrupted", and exit status 130 (128 + SIGINT).  ``cli.main`` hands SIGINT back to
Python (a KeyboardInterrupt it handles itself) as soon as it runs.

numpy's BLAS (OpenBLAS, MKL) runs with one thread in the command unless the environment
says otherwise: the simulator's matrices are tiles, too small for threads to pay, whose
idle threads spin on the other cores - twice the CPU time for nothing, and in a pool of
workers (a long ``check``, a kernel library, a sweep) the other workers' cores.  The
variables must be set before numpy loads, so here.  Importing ptopipe as a library changes
nothing.
"""
from __future__ import annotations

import os
import signal
import sys

#: the exit status of an interrupted command, as a shell reports a SIGINT
EXIT_INTERRUPTED = 128 + signal.SIGINT
_COMMAND_MODULES = ("ptopipe", "ptopipe.__main__", "ptopipe.cli", "ptopipe.cli.__main__")
#: the BLAS libraries' thread counts the command sets to one (unless set already)
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def interrupted(done: str | None = None) -> int:
    """Say that the command was interrupted (one line on stderr, with ``done``: how far it
    got); returns the exit status."""
    print("interrupted" + (f": {done}" if done else ""), file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED


def _is_command() -> bool:
    """Whether this process runs the ptopipe command (not a program importing ptopipe)."""
    if not sys.argv:
        return False
    if os.path.basename(sys.argv[0]) in ("ptopipe", "ptopipe.exe", "ptopipe-script.py"):
        return True
    if sys.argv[0] != "-m":             # python -m: "-m" while the module's package imports
        return False
    argv = getattr(sys, "orig_argv", [])
    for i, a in enumerate(argv[1:], 1):
        if a == "-m":
            return i + 1 < len(argv) and argv[i + 1] in _COMMAND_MODULES
        if a.startswith("-m") and not a.startswith("--"):
            return a[2:] in _COMMAND_MODULES
    return False


def _on_sigint(signum, frame):
    raise SystemExit(interrupted())


def release() -> None:
    """SIGINT back to Python's KeyboardInterrupt, if start-up had taken it (``cli.main``)."""
    if signal.getsignal(signal.SIGINT) is _on_sigint:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def one_blas_thread() -> None:
    """BLAS with one thread in this process and the processes it starts, unless the
    environment says otherwise (effective only before numpy loads)."""
    for var in BLAS_THREADS:
        os.environ.setdefault(var, "1")


def guard() -> None:
    """Take SIGINT for the start-up and make BLAS single-threaded, if this process is the
    command (package import)."""
    if not _is_command():
        return
    one_blas_thread()
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        try:
            signal.signal(signal.SIGINT, _on_sigint)
        except ValueError:              # not the main thread: signals are not ours to take
            pass
