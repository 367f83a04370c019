"""Memories as real byte arrays, with bounds-checked typed views.

A :class:`Memory` is a numpy ``uint8`` buffer.  Tiles and global tensors are typed views
at byte addresses, so aliasing behaves as on hardware: writing through one view is seen
through every other view of the same bytes.  A *shareable* memory's bytes are the pages of a
shared-memory file (:meth:`Memory.file`), so that code outside numpy can map the same pages
too (a C++ kernel's read-only view of GM: :mod:`ptopipe.cpp.gmview`).
"""
from __future__ import annotations

import mmap
import os
import weakref

import numpy as np

from ..arch import MemSpace
from ..errors import MemoryConflictError
from .location import running_loc


_PAGE = 4096
_HUGE = 2 << 20      # a transparent huge page


def _aligned_zeros(size: int, touch: bool = True) -> np.ndarray:
    """A zeroed byte buffer whose address 0 is page-aligned, like a hardware memory.

    Alignment matters for speed too: BLAS runs ~1.5x faster on 64-byte-aligned operands.
    With ``touch`` the pages are written here, at set-up, not inside the kernel (local
    memories); GM is left to the OS's zero pages, as laying out the arguments writes it."""
    if size >= _HUGE:
        # anonymous mmap: page-aligned zero pages; ask for huge pages where the OS has them
        # (writing 50 MB of arguments into 4 KiB pages costs ~0.1 s in page faults on a VM)
        mm = mmap.mmap(-1, size)
        if hasattr(mm, "madvise") and hasattr(mmap, "MADV_HUGEPAGE"):
            mm.madvise(mmap.MADV_HUGEPAGE)
        buf = np.frombuffer(mm, dtype=np.uint8)
    else:
        # zeroed once: by calloc's zero pages (untouched), or by the fill that touches them
        raw = (np.empty if touch else np.zeros)(size + _PAGE, dtype=np.uint8)
        off = (-raw.ctypes.data) % _PAGE
        buf = raw[off:off + size]
    if touch:
        buf.fill(0)
    return buf


class _SharedPages(mmap.mmap):
    """A mapping of a shared-memory file that keeps the file's descriptor (from which another
    mapping of the same pages is made); the descriptor is closed with the mapping."""
    fd = -1


def _shared_zeros(size: int) -> np.ndarray | None:
    """A zeroed byte buffer that is a shared-memory file's pages (page-aligned; None where
    the system has no anonymous shared-memory files).  Not the default: a fresh file's pages
    fault in one by one (~7 us a page on a VM), where a private buffer reuses the heap's."""
    if not hasattr(os, "memfd_create"):
        return None
    try:
        fd = os.memfd_create("ptopipe-memory", os.MFD_CLOEXEC)
    except OSError:
        return None
    try:
        # whole pages: a mapping of the last page must not reach past the file's end
        os.ftruncate(fd, -(-size // _PAGE) * _PAGE)
        mm = _SharedPages(fd, size)
    except BaseException:
        os.close(fd)
        raise
    mm.fd = fd
    weakref.finalize(mm, os.close, fd)
    if size >= _HUGE and hasattr(mm, "madvise") and hasattr(mmap, "MADV_HUGEPAGE"):
        mm.madvise(mmap.MADV_HUGEPAGE)
    return np.frombuffer(mm, dtype=np.uint8)


class Memory:
    __slots__ = ("space", "owner", "size", "buf")

    def __init__(self, space: MemSpace, size: int, owner: str = "cluster", buf: np.ndarray | None = None,
                 shareable: bool = False):
        self.space = space
        self.owner = owner
        self.size = int(size)
        # ``buf``: a zeroed page-aligned buffer of ``size`` bytes to use (MemoryPool)
        if buf is None and shareable:
            buf = _shared_zeros(self.size)
        self.buf = _aligned_zeros(self.size, touch=space is not MemSpace.GM) if buf is None else buf

    def file(self) -> int | None:
        """The descriptor of the shared-memory file whose pages are this memory's bytes (from
        offset 0), or None: a private buffer (not shareable, or the system has no such files)."""
        base = self.buf.base if self.buf is not None else None
        pages = getattr(base, "obj", base)          # np.frombuffer's base: a memoryview of the mapping
        return pages.fd if isinstance(pages, _SharedPages) else None

    @property
    def label(self) -> str:
        return self.space.value if self.space is MemSpace.GM else f"{self.owner}.{self.space.value}"

    def check(self, addr: int, nbytes: int, what="access") -> None:
        """Bounds check; ``what`` is a string or a callable giving one (built only on error)."""
        if addr < 0 or addr + nbytes > self.size:
            if callable(what):
                what = what()
            loc = running_loc()   # the kernel line (only computed on error)
            raise MemoryConflictError(
                f"{what} of {nbytes} bytes at {self.label}[{addr:#x}] is outside "
                f"{self.label} (size {self.size:#x} = {self.size} bytes)",
                where=str(loc) if loc is not None else None,
                fix=f"keep {what} within [0, {self.size:#x}); check the address and the tile size")

    def view(self, addr: int, dtype, shape, strides=None, what="access") -> np.ndarray:
        """A typed view at byte ``addr``; ``strides`` are in elements (default row-major)."""
        dtype = np.dtype(dtype)
        shape = tuple(int(s) for s in shape)
        item = dtype.itemsize
        if strides is None:
            nbytes = item
            for s in shape:
                nbytes *= s
            self.check(addr, nbytes, what)
            return np.ndarray(shape, dtype, self.buf, addr)
        extent = item
        for s, st in zip(shape, strides):
            if s == 0:
                extent = 0
                break
            extent += (s - 1) * st * item
        self.check(addr, extent, what)
        return np.ndarray(shape, dtype, self.buf, addr, tuple(st * item for st in strides))


class MemoryPool:
    """The memory buffers of finished runs, handed to the next cluster zeroed: what one
    check's runs (the same kernel and arguments under other schedules) share instead of
    each allocating and first touching about a megabyte of fresh pages (a quarter of a
    short explored run).  A pool lives as long as the check that made it.

    :meth:`take` gives a new :class:`Memory` exactly as a fresh one is - same space, owner
    and size, all zero, address 0 page-aligned - on a buffer of an earlier run (caches
    keyed by a Memory object, e.g. a GlobalTensor's view, still see a new memory per
    run).  :meth:`reclaim` takes back the buffers of a cluster whose run is over and whose
    result nobody keeps (an explored schedule that passed) and detaches them from it: a
    late read of that cluster's memories fails instead of showing another run's bytes."""

    def __init__(self):
        self._free: dict = {}          # (space, size, shareable) -> [buffer]

    def take(self, space: MemSpace, size: int, owner: str = "cluster", shareable: bool = False) -> Memory:
        free = self._free.get((space, int(size), shareable))
        if not free:
            return Memory(space, size, owner, shareable=shareable)
        buf = free.pop()
        buf.fill(0)
        return Memory(space, size, owner, buf)

    def reclaim(self, cluster) -> None:
        """Take back the buffers of ``cluster`` (a cluster whose run has not ended keeps
        them)."""
        if not cluster.ended:
            return
        mems = [cluster.gm] if cluster.gm is not None else []
        for core in cluster.cores:
            mems.extend(core.memories.values())
            core.memories = {}
        cluster.gm = None
        for m in mems:
            if m.buf is not None:
                # (by what the buffer is: one asked to be shareable where the system has no
                # shared files is private)
                self._free.setdefault((m.space, m.size, m.file() is not None), []).append(m.buf)
                m.buf = None

    def __len__(self) -> int:
        return sum(len(v) for v in self._free.values())


def gm_layout(sizes, alignment: int = 512, base: int = 0x1000):
    """Addresses for a list of byte sizes packed into GM (aligned; a guard page at 0)."""
    addrs, cur = [], base
    for n in sizes:
        addrs.append(cur)
        cur += -(-max(int(n), 1) // alignment) * alignment
    return addrs, cur
