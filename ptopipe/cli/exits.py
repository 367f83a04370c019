"""The command's guard against a kernel file ending its process: ``os._exit`` called by its
code (at import, in ``make_args`` / ``golden``, in a kernel) would end ``ptopipe`` at once,
with no report and the status it asked for - ``os._exit(0)``: a silent exit 0.  While a
command runs, ``os._exit`` in the command's own process is a KernelError at the line that
called it; a forked child (a C++ kernel's runner, a worker of a pool) exits as it asks."""
from __future__ import annotations

import contextlib
import os
import sys

from ..errors import KernelError
from ..sim.location import user_loc


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
