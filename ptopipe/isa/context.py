"""Which core is executing: the explicit context every ISA call runs in.

ISA functions are called from kernels running in a core's greenlet; the running core is
found from the greenlet, so kernels stay plain functions without a ``ctx`` argument.
"""
from __future__ import annotations

import greenlet

from ..errors import KernelError
from ..sim import Core, CoreKind

_getcurrent = greenlet.getcurrent


def current_core() -> Core:
    try:
        return _getcurrent().core     # only a core's greenlet has .core
    except AttributeError:
        raise KernelError("an ISA instruction was called outside a running kernel",
                          fix="call ISA functions only inside kernel functions started by "
                              "ptopipe.run(...)") from None


def here() -> str | None:
    """The running kernel's current source line, or None outside a kernel."""
    try:
        return str(_getcurrent().core.where())
    except AttributeError:
        return None


def get_subblockid() -> int:
    """The Vector core's sub-block id (0 or 1); 0 on the Cube core."""
    return current_core().subblock


def get_block_idx() -> int:
    """The cluster index (ptopipe simulates one cluster: always 0)."""
    current_core()
    return 0


def platform_id():
    """``PLATFORM_ID`` of seed 003 for the running kernel (PLATFORM_A2A3 or PLATFORM_A5)."""
    return current_core().cluster.platform.id


def is_cube() -> bool:
    return current_core().kind is CoreKind.AIC
