"""What a C++ kernel's ``__gm__`` pointers are: the addresses they hold, and the read-only
pages of GM behind them.

A C++ kernel gets no host pointers into the simulator: a ``__gm__`` pointer holds a GM address
in a space of its own for each array argument (:data:`GM_BASE`, :data:`ARG_BITS`: GM address
``a`` of the k-th argument at ``GM_BASE + ((k + 1) << ARG_BITS) + a``; one in no argument at
``GM_BASE + a``), so a pointer keeps the argument it was derived from however far it moves
(:meth:`ptopipe.cpp.abi.Dispatcher.pointer` / ``fake`` convert, one subtraction and a mask).

Behind those addresses :class:`GmView` maps the cluster's GM - a shared-memory file
(``Cluster(shared_gm=True)``, which :func:`ptopipe.isa.run` makes for a kernel whose
``maps_gm`` is true) - read-only, once for the whole GM at ``GM_BASE`` and once per argument in
its space (the pages holding it): ``p[0]`` reads GM's bytes, as pto-isa's kernels read a scalar operand (``TMAXS(dst,
src, scalar[0])``); ``p[0] = x`` faults (a write that neither the checkers nor the timing
would see) and the runner reports it at its line (:mod:`ptopipe.cpp.runner`).  Where the
mapping cannot be made (no shared-memory files, or the address range is taken), a read faults
too and is reported the same way.

When the bytes are current: the arguments are in GM before any kernel starts (a next launch's
GM holds what the last one left, all of it applied).  Instructions queue their numpy work and
the cluster applies it in batches (:meth:`ptopipe.sim.cluster.Cluster.sync`); a raw read
cannot be intercepted, so the dispatcher applies the queue where the device's scalar unit sees
completed stores: at ``pipe_barrier(PIPE_ALL)`` and at a ``wait_flag`` into ``PIPE_S``
(:data:`SCALAR_SYNC`).  A scalar read after one of them sees every store the core issued before
it (and what the other cores issued before it in the simulated order); without one it may see
older bytes, as the device's scalar unit may.  The race checker does not see raw reads.
"""
from __future__ import annotations

import ctypes
import mmap
import sys

from ..arch.vocab import SyncPipe

#: where GM is in a C++ kernel's address space; each array argument has a space of its own of
#: 2**ARG_BITS bytes, the k-th at GM_BASE + ((k + 1) << ARG_BITS), GM address a at its byte a
GM_BASE = 1 << 44
ARG_BITS = 36
ARG_MASK = (1 << ARG_BITS) - 1
#: the end of the address range GM pointers live in (the fault report's test of a GM address)
GM_END = GM_BASE + (1 << 46)

#: the intra-core synchronisation after which a scalar read sees this core's stores: a barrier
#: on every pipe, a wait of the scalar pipe
SCALAR_SYNC = (SyncPipe.PIPE_ALL, SyncPipe.PIPE_S)

_PAGE = mmap.PAGESIZE


def _libc_mmap():
    if not sys.platform.startswith("linux"):
        return None, None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        mm, unmap = libc.mmap, libc.munmap
    except (OSError, AttributeError):
        return None, None
    mm.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    mm.restype = ctypes.c_void_p
    unmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    unmap.restype = ctypes.c_int
    return mm, unmap


_mmap, _munmap = _libc_mmap()


def _map_at(addr: int, length: int, fd: int, offset: int) -> bool:
    """Map ``length`` bytes of file ``fd`` from ``offset`` (page-aligned) read-only at ``addr``:
    at that address, or not at all (the address is a hint: a range already in use is left
    alone, the mapping the kernel put elsewhere undone)."""
    got = _mmap(addr, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, offset)
    if got is None or got == ctypes.c_void_p(-1).value:
        return False
    if got != addr:
        _munmap(got, length)
        return False
    return True


class GmView:
    """The read-only mappings of one cluster's GM at the kernel's GM addresses (one per process:
    every kernel library of a run hands out the same addresses)."""

    def __init__(self):
        self.memory = None
        self.regions = ()
        self.maps = []              # [(address, length)]

    def show(self, memory, regions) -> None:
        """Map GM ``memory`` (a :class:`~ptopipe.sim.memory.Memory`) with array arguments at
        ``regions`` ([(lo, hi)] GM byte ranges, in argument order), unless it is so already."""
        regions = tuple(regions)
        if memory is self.memory and regions == self.regions:
            return
        self.close()
        fd = memory.file()
        if fd is None or _mmap is None:
            return
        self.memory, self.regions = memory, regions
        spaces = [(GM_BASE, 0, memory.size)]
        spaces += [(GM_BASE + ((k + 1) << ARG_BITS), lo, hi) for k, (lo, hi) in enumerate(regions)]
        for base, lo, hi in spaces:
            first = lo - lo % _PAGE
            length = -(-(hi - first) // _PAGE) * _PAGE
            if length and _map_at(base + first, length, fd, first):
                self.maps.append((base + first, length))

    def close(self) -> None:
        for addr, length in self.maps:
            _munmap(addr, length)
        self.maps = []
        self.memory, self.regions = None, ()


#: the process's view (the kernels of a run may come from several libraries and dispatchers)
VIEW = GmView()
