"""Which core is executing: the explicit context every ISA call runs in.

ISA functions are called from kernels running in a core's greenlet; the running core is
found from the greenlet, so kernels stay plain functions without a ``ctx`` argument.
A run is started from host code only: :func:`refuse_nested_run` is what ``run`` checks.
"""
from __future__ import annotations

import sys
import threading

import greenlet

from ..errors import ConfigError, KernelError
from ..sim import Core, CoreKind
from ..sim.location import own_code_loc, user_loc

_getcurrent = greenlet.getcurrent


def kernel_core() -> Core:
    """The core whose kernel is running (a query of it changes nothing)."""
    try:
        return _getcurrent().core     # only a core's greenlet has .core
    except AttributeError:
        raise outside_kernel() from None


def outside_kernel() -> KernelError:
    """The KernelError of an ISA call no core's kernel made - at a kernel file's top level (a
    ``Tile(..., addr=...)`` places the tile on the running core), or on a thread a kernel
    started - at the line of the user's code that made it."""
    loc = own_code_loc(sys._getframe(1))
    th = threading.current_thread()
    on = "" if th is threading.main_thread() else f" (on thread {th.name!r})"
    return KernelError(f"an ISA instruction was called outside a running kernel{on}",
                       where=str(loc) if loc is not None else None,
                       fix="call ISA functions, and make tiles placed with addr=, only inside the kernel "
                           "functions ptopipe.run(...) starts, on their own thread: a kernel file's top "
                           "level runs before any core, and a thread a kernel starts is no core")


def current_core() -> Core:
    """The core whose kernel is running, for an instruction on it: the fast-forward engine
    (sim.periodic) does not record the instructions that ask for it this way, so it gives
    them the exact machine first (told which instruction: :func:`instruction_called`)."""
    core = kernel_core()
    if core.ff is not None:
        core.ff.unhooked(core, instruction_called)
    return core


def instruction_called() -> str:
    """The ISA instruction the running kernel called, e.g. ``"TGATHER"``: the outermost of the
    ``ptopipe.isa`` frames this call is made in (the instructions a factory makes are named so,
    code and all: :func:`named`)."""
    f = sys._getframe(1)
    name = None
    while f is not None:
        if f.f_globals.get("__name__", "").startswith("ptopipe.isa"):
            name = f.f_code.co_name
        elif name is not None:
            break
        f = f.f_back
    return name or "an ISA call"


def named(fn, name: str):
    """``fn``, an instruction a factory made, named ``name`` - its code object too, so that
    a frame of it (a traceback, :func:`instruction_called`) names the instruction."""
    fn.__name__ = fn.__qualname__ = name
    code = fn.__code__
    fn.__code__ = code.replace(co_name=name, **({"co_qualname": name} if hasattr(code, "co_qualname") else {}))
    return fn


def here() -> str | None:
    """The running kernel's current source line, or None outside a kernel."""
    try:
        return str(_getcurrent().core.where())
    except AttributeError:
        return None


def site() -> str | None:
    """The line of the call being made: the running kernel's (:func:`here`), else - an object
    built outside a run, e.g. at a kernel module's top level - the first line outside ptopipe."""
    w = here()
    if w is None:
        loc = user_loc()
        w = str(loc) if loc is not None else None
    return w


def get_subblockid() -> int:
    """The Vector core's sub-block id (0 or 1); 0 on the Cube core."""
    return kernel_core().subblock


def get_block_idx() -> int:
    """The index of the block (cluster) running the kernel, 0 .. get_block_num() - 1
    (``ptopipe.run(blocks=N)``: each block on a cluster of its own)."""
    cluster = kernel_core().cluster
    cluster.state.asked_block = True
    return cluster.block


def get_block_num() -> int:
    """The number of blocks (clusters) of the launch: ``ptopipe.run(blocks=N)``'s N (pto-isa's
    cpu_stub.hpp ``get_block_num``: the configured core count)."""
    cluster = kernel_core().cluster
    cluster.state.asked_block = True
    return cluster.context.blocks


def get_subblockdim() -> int:
    """The number of Vector sub-blocks of the cluster (pto-isa's cpu_stub.hpp
    ``get_subblockdim``): its AIV cores, 2."""
    return sum(1 for c in kernel_core().cluster.cores if c.kind is CoreKind.AIV)


def platform_id():
    """``PLATFORM_ID`` of seed 003 for the running kernel (PLATFORM_A2A3 or PLATFORM_A5)."""
    return current_core().cluster.platform.id


def is_cube() -> bool:
    return current_core().kind is CoreKind.AIC


def refuse_nested_run() -> None:
    """A ConfigError at the calling line if a kernel is running here: a run started inside
    a kernel would run a second cluster inside one core's turn of the first (its clock,
    flags and checkers stopped mid-instruction), which no device does."""
    core = getattr(_getcurrent(), "core", None)
    if core is not None:
        loc = user_loc()
        raise ConfigError(f"ptopipe.run was called inside a running kernel (on {core.name})",
                          where=str(loc) if loc is not None else None,
                          fix="start runs from host code, one after another (a kernel calls ISA "
                              "instructions; to share work, call a plain Python function)")
