"""cpp: pto-isa C++ kernels on the simulated cluster.

ptopipe's own pto-isa-compatible headers (``include/``, :func:`include_dir`; the instruction
declarations generated from the op catalogue by :mod:`.headergen`), the C ABI every
instruction crosses into :mod:`ptopipe.isa` with its C++ file:line (:mod:`.abi`; crossed through
the C-API bridge of :mod:`.bridge` where it builds, else a ctypes callback), the build of
a kernel file into a cached shared library (:mod:`.build`), :func:`run_cpp`, which runs
it on a cluster in a child process, and :func:`kernels`, its kernels as Python kernel
functions for a Scenario (:mod:`.runner`).
"""
from __future__ import annotations

import os


def include_dir() -> str:
    """The directory to put on the include path: ``#include <pto/pto-inst.hpp>``."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")


def run_cpp(*args, **kwargs):
    """See :func:`ptopipe.cpp.runner.run_cpp`."""
    from .runner import run_cpp as _run
    return _run(*args, **kwargs)


def kernels(*args, **kwargs):
    """See :func:`ptopipe.cpp.runner.kernels`."""
    from .runner import kernels as _kernels
    return _kernels(*args, **kwargs)


__all__ = ["include_dir", "kernels", "run_cpp"]
