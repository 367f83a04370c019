"""How the command's process ends, whatever the kernel file does.

``os._exit`` called by the file's code (at import, in ``make_args`` / ``golden``, in a kernel)
would end ``ptopipe`` at once, with no report and the status it asked for - ``os._exit(0)``: a
silent exit 0.  While a command runs, ``os._exit`` in the command's own process is a
KernelError at the line that called it (:func:`no_process_exit`); a forked child (a C++
kernel's runner, a worker of a pool) exits as it asks.  A thread the file started and left
running would keep the process alive after the report, for ever: :func:`end_process` ends it."""
from __future__ import annotations

import contextlib
import os
import sys
import threading

from ..errors import KernelError
from ..sim.location import user_loc

_exit = os._exit                # (the process's own, taken before any kernel file is imported)


@contextlib.contextmanager
def no_process_exit():
    """``os._exit`` of this process a KernelError at its caller's line, for the ``with`` block."""
    real, pid = os._exit, os.getpid()

    def _exit(status=0):
        if os.getpid() != pid:              # (a forked child ends as it asks)
            real(status)
        loc = user_loc(sys._getframe(1))
        raise KernelError(f"the kernel file called os._exit({status!r}): it would end ptopipe at once, with no "
                          "report and that exit status", where=str(loc) if loc is not None else None,
                          fix="return from the kernel function (raise an exception to report a failure); "
                              "os._exit ends the whole process")
    os._exit = _exit
    try:
        yield
    finally:
        os._exit = real


def end_process(code: int):
    """End the command's process with status ``code`` (the ``ptopipe`` entry point): as
    ``sys.exit`` does - unless a thread that is no daemon, which the kernel file started, still
    runs: the interpreter would wait for it for ever after the report, so the process ends at
    once, saying so on stderr."""
    left = [t.name for t in threading.enumerate()
            if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if left:
        sys.stdout.flush()
        sys.stderr.write(f"note: the kernel file left {len(left)} thread{'s' if len(left) != 1 else ''} running "
                         f"({', '.join(left)}): ptopipe ends without waiting for "
                         f"{'them' if len(left) != 1 else 'it'}\n")
        sys.stderr.flush()
        _exit(code)
    sys.exit(code)
