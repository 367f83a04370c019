"""The data work of consecutive recorded blocks, run as one numpy operation per place in
the block (:class:`Batch`)."""
from __future__ import annotations

import math

import numpy as np

from ..dataplane import batch_out
from .values import Buffers

#: the bytes a batch's copies of the buffers its blocks write may take (and the most blocks
#: in one batch)
BATCH_BYTES = 16 << 20
BATCH_BLOCKS = 1 << 16
#: operations on more bytes than this (on average) run one block after another: batching
#: saves numpy's cost per call, which such operations hardly pay (and a batched matmul may
#: leave BLAS)
BATCH_OP_BYTES = 16 << 10


class Unbatchable(Exception):
    """The blocks' data work cannot run as one batch (why)."""


def span_of(a: np.ndarray, off: int):
    """The bytes ``[lo, hi)`` of array ``a`` whose first element is at byte ``off``."""
    lo = hi = off
    for n, st in zip(a.shape, a.strides):
        if n == 0:
            return off, off
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return lo, hi + a.itemsize


def meet(a, la, da, b, lb, db, nq) -> bool:
    """Whether windows ``[a + q*da, +la)`` and ``[b + r*db, +lb)`` meet for some blocks q, r
    below ``nq`` (exactly when they move alike, else by their hulls)."""
    if da != db:
        ha = (a + min(0, (nq - 1) * da), a + la + max(0, (nq - 1) * da))
        hb = (b + min(0, (nq - 1) * db), b + lb + max(0, (nq - 1) * db))
        return ha[0] < hb[1] and hb[0] < ha[1]
    # x = (a - b) + k*d meets when -la < x < lb, for some k = q - r in -(nq-1) .. nq-1
    # (a range symmetric in k, so the move's sign does not matter)
    c, d = a - b, abs(da)
    lo = math.floor((-la - c) / d) + 1
    hi = math.ceil((lb - c) / d) - 1
    return max(lo, -(nq - 1)) <= min(hi, nq - 1)


def byte_map(per_byte: np.ndarray, a: np.ndarray, off: int) -> np.ndarray:
    """The entries of ``per_byte`` (an int64 per byte of a buffer's span) for the bytes of
    array ``a`` whose first byte is ``off`` bytes into the span: shaped as ``a`` plus one
    axis over each element's bytes."""
    return np.ndarray(a.shape + (a.itemsize,), np.int64, buffer=per_byte, offset=off * 8,
                      strides=tuple(s * 8 for s in a.strides) + (8,))


def _share(x, y, first: int, nq: int) -> bool:
    """Whether moving accesses ``x`` and ``y`` (``Batch``'s tuples) share a byte in blocks
    ``first`` .. ``first + nq - 1`` - exactly, where :func:`meet` compares hulls: two lanes storing the column halves
    of the same rows have meeting hulls but no common byte.  (A problem numpy finds too hard
    to solve counts as shared.)"""
    try:
        return bool(np.shares_memory(_stacked(x, first, nq), _stacked(y, first, nq), max_work=_SHARE_WORK))
    except (_TOO_HARD, ValueError, TypeError):     # (or a window past its buffer)
        return True


#: the most work np.shares_memory may spend on one pair of windows before they count as shared
_SHARE_WORK = 1 << 20
_TOO_HARD = getattr(np, "exceptions", np).TooHardError


def _stacked(x, first: int, nq: int) -> np.ndarray:
    """Access ``x``'s window in each of blocks ``first`` .. ``first + nq - 1`` as one view (the
    order of the blocks left out: a negative move is taken from the last block up)."""
    a, off, d = x[8], x[4] + first * x[5], x[5]
    if d < 0:
        off, d = off + (nq - 1) * d, -d
    return np.ndarray((nq,) + a.shape, a.dtype, buffer=x[3], offset=off, strides=(d,) + a.strides)


class _Moved:
    """A batch's GM window that moves with the block: one strided view over every block's."""
    __slots__ = ("buf", "off", "d", "shape", "strides", "dtype")

    def __init__(self, buf, off, d, a):
        self.buf, self.off, self.d, self.shape, self.strides, self.dtype = buf, off, d, a.shape, a.strides, a.dtype

    def view(self, b, nq, temps):
        return np.ndarray((nq,) + self.shape, self.dtype, buffer=self.buf, offset=self.off + b * self.d,
                          strides=(self.d,) + self.strides)


class _Version:
    """A batch's view of what a write of the block put in a buffer it writes in place: every
    write (or group of writes one read reads together) has its own copies, one per block (row
    q + 1 is block q's; row 0 holds the buffer as it was before the batch).  ``row`` 1: the
    view reads its own block's copy, 0: the block before's."""
    __slots__ = ("w", "off", "shape", "strides", "dtype", "row")

    def __init__(self, w, off, a, row):
        self.w, self.off, self.shape, self.strides, self.dtype, self.row = w, off, a.shape, a.strides, a.dtype, row

    def view(self, b, nq, temps):
        t = temps[self.w]
        return np.ndarray((nq,) + self.shape, self.dtype, buffer=t, offset=self.off + self.row * t.shape[1],
                          strides=(t.shape[1],) + self.strides)


class Batch:
    """The data work of consecutive blocks run as one operation per place in the block.

    The block's work is renamed as a compiler would: every write to a buffer used in place
    (a local tile, a ring slot) gets copies of its own, one per block, and every read
    reads the copy of the writes that put its bytes there - earlier in its block, or, for
    bytes the block writes only later, the last writes of the block before (a pipeline's
    skew: the consumer reads what the producer pushed a block earlier).  Writes one read
    reads together (a block store of tiles computed one by one) share their copies, so they
    must not overlap.  A buffer the block only reads is shared, and a GM window that moves
    with the block is one strided view over all the blocks (no window a block writes meets
    another's).  The places then run in an order in which every read comes after the writes
    it reads.  Raises Unbatchable when the work is not such (a read of bytes partly written
    by its block, of overlapping writes, a cycle, an operation that does not run on a
    batch).  The checks hold for blocks ``first`` .. ``first + nq - 1``, the only ones
    :meth:`run` takes: windows that move by different amounts meet in some blocks and not in
    others."""

    def __init__(self, makers, bufs: Buffers, nq: int, first: int = 0):
        self.first, self.end = first, first + nq
        it0, it1 = [m(0) for m in makers], [m(1) for m in makers]
        acc = []                 # (place, arg, writes, buffer, offset in block 0, move, lo, hi, array)
        for k, (x0, x1) in enumerate(zip(it0, it1)):
            out = batch_out(x0)
            if out is None:
                raise Unbatchable(f"{getattr(x0[0], '__name__', x0[0])} does not run on a batch")
            reads = []
            for i, (a, a1) in enumerate(zip(x0[1:], x1[1:])):
                if a.__class__ is not np.ndarray:
                    if i == out:
                        raise Unbatchable("an operation writes no array")
                    continue
                b, off = bufs.find(a)
                if b is None:
                    if i == out or a1 is not a:
                        raise Unbatchable("an operation uses an array outside the memories")
                    continue
                b1, off1 = bufs.find(a1)
                if b1 is not b:
                    raise Unbatchable("an array moved to another memory")
                x = (k, i, i == out, b, off, off1 - off, *span_of(a, off), a)
                if i == out:
                    write = x
                else:
                    reads.append(x)
            acc.extend(reads)                # (an operation reads its operands, then writes)
            acc.append(write)
        fixed = [x for x in acc if x[5] == 0]
        moving = [x for x in acc if x[5] != 0]
        written = {}                         # buffer written in place -> [lo, hi) of its accesses
        for x in fixed:
            if x[2]:
                written[id(x[3])] = (x[6], x[7])
        for x in fixed:
            if id(x[3]) in written:
                lo, hi = written[id(x[3])]
                written[id(x[3])] = (min(lo, x[6]), max(hi, x[7]))
        for x in moving:
            a, la, d = x[6] + first * x[5], x[7] - x[6], x[5]      # (its window in block `first`)
            if x[2] and abs(d) < la:
                raise Unbatchable("a GM window a block writes meets the next block's")
            for y in fixed:
                if y[3] is x[3] and meet(a, la, d, y[6], y[7] - y[6], 0, nq):
                    raise Unbatchable("a GM window meets a buffer used in place")
            for y in moving:
                if y is not x and y[3] is x[3] and (x[2] or y[2]) and \
                        meet(a, la, d, y[6] + first * y[5], y[7] - y[6], y[5], nq) and _share(x, y, first, nq):
                    raise Unbatchable("GM windows of the blocks meet")
        # who wrote each byte: per written buffer, the writing access (-1: none), in the
        # order of the work; first the block's last writes (what the next block reads early)
        own = {k: np.full(hi - lo, -1, np.int64) for k, (lo, hi) in written.items()}

        def owners(x, maps=own):
            return byte_map(maps[id(x[3])], x[8], x[4] - written[id(x[3])][0])
        writes = [n for n, x in enumerate(acc) if x[2] and x[5] == 0]
        for n in writes:
            owners(acc[n])[...] = n
        last = {k: v.copy() for k, v in own.items()}
        for v in own.values():
            v[...] = -1
        src, edges = {}, {k: set() for k in range(len(it0))}
        group = {n: n for n in writes}       # the writes a read reads together share copies

        def root(n):
            while group[n] != n:
                n = group[n]
            return n
        for n, x in enumerate(acc):
            if x[5] or id(x[3]) not in written or not x[8].size:
                continue                         # (an empty region: no byte read or written)
            o = owners(x)
            if x[2]:
                o[...] = n
                continue
            ws, row = np.unique(o), 1
            if ws[0] < 0:                        # written later in the block, or never
                if len(ws) > 1:
                    raise Unbatchable("a read of bytes its block wrote and bytes it did not")
                ws, row = np.unique(owners(x, last)), 0
                if ws[0] < 0:
                    if len(ws) > 1:
                        raise Unbatchable("a read of bytes the block before wrote and bytes it did not")
                    continue                     # never written: the buffer itself
            ws = [int(w) for w in ws]
            src[n] = (ws[0], row)
            for w in ws:
                if acc[w][0] == x[0]:
                    if row == 0:                 # (reads what it wrote the block before: a recurrence)
                        raise Unbatchable("an operation reads what it wrote the block before")
                else:
                    edges[acc[w][0]].add(x[0])
                group[root(w)] = root(ws[0])
        # an order of the places in which every read comes after the write it reads
        indeg = {k: 0 for k in edges}
        for k, vs in edges.items():
            for v in vs:
                indeg[v] += 1
        ready = [k for k in sorted(indeg) if indeg[k] == 0]
        order = []
        while ready:
            k = ready.pop(0)
            order.append(k)
            for v in sorted(edges[k]):
                indeg[v] -= 1
                if indeg[v] == 0:
                    ready.append(v)
            ready.sort()
        if len(order) != len(it0):
            raise Unbatchable("the block's work depends on itself across blocks")
        # the copies: one per in-place write or group of writes read together (their hull;
        # such writes must not overlap), and every access as a view
        members = {}
        for n in writes:
            members.setdefault(root(n), []).append(n)
        copy_of, self.hulls = {}, []         # (buffer, lo, hi) per copy
        for ws in members.values():
            lo, hi = min(acc[n][6] for n in ws), max(acc[n][7] for n in ws)
            if len(ws) > 1:
                count = np.zeros(hi - lo, np.int64)
                for n in ws:
                    byte_map(count, acc[n][8], acc[n][4] - lo)[...] += 1
                if count.max() > 1:
                    raise Unbatchable("a read of bytes two writes put there, one over the other")
            for n in ws:
                copy_of[n] = len(self.hulls)
            self.hulls.append((acc[ws[0]][3], lo, hi))
        # what the last block left: every write's bytes from its copy, in the block's order
        self.backs = [(copy_of[n], acc[n][3], acc[n][8], acc[n][4]) for n in writes]
        self.bytes = sum(hi - lo for _, lo, hi in self.hulls)      # the copies of one block
        self.temps, self.room = [], 0      # the copies of every block of a batch, and how many
        rows = [list(x) for x in it0]
        for n, x in enumerate(acc):
            k, i, w, b, off, d, lo, hi, a = x
            if d:
                rows[k][1 + i] = _Moved(b, off, d, a)
            elif w:
                c = copy_of[n]
                rows[k][1 + i] = _Version(c, off - self.hulls[c][1], a, 1)
            elif n in src:
                wn, row = src[n]
                c = copy_of[wn]
                rows[k][1 + i] = _Version(c, off - self.hulls[c][1], a, row)
        self.args = [(rows[k][0], tuple(rows[k][1:]),
                      tuple(i for i, a in enumerate(rows[k][1:]) if a.__class__ in (_Moved, _Version)))
                     for k in order]

    def run(self, b: int, nq: int) -> None:
        """The work of blocks ``b`` .. ``b + nq - 1``, which must be blocks the batch was checked
        for."""
        if b < self.first or b + nq > self.end:
            raise ValueError(f"blocks {b}..{b + nq - 1} are outside the checked {self.first}..{self.end - 1}")
        # (the copies are made once, for the largest batch, and reused: fresh memory is
        # paid for page by page)
        if self.room < nq + 1:
            self.temps = [np.empty((nq + 1, hi - lo), np.uint8) for _, lo, hi in self.hulls]
            self.room = nq + 1
        temps = [t[:nq + 1] for t in self.temps]
        for (buf, lo, hi), t in zip(self.hulls, temps):
            t[0] = buf[lo:hi]
        for fn, args, views in self.args:
            args = list(args)
            for i in views:
                args[i] = args[i].view(b, nq, temps)
            fn(*args)
        for c, buf, a, off in self.backs:
            t, lo = temps[c], self.hulls[c][1]
            real = np.ndarray(a.shape, a.dtype, buffer=buf, offset=off, strides=a.strides)
            real[...] = np.ndarray(a.shape, a.dtype, buffer=t, offset=nq * t.shape[1] + off - lo,
                                   strides=a.strides)
