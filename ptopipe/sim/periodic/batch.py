"""The data work of consecutive recorded blocks, run as one numpy operation per place in
the block (:class:`Batch`)."""
from __future__ import annotations

import math

import numpy as np

from ..dataplane import batch_copy, batch_out
from .values import Buffers

#: the bytes a batch's copies of the buffers its blocks write may take (and the most blocks
#: made at a time: a batch of more runs in parts, its copies reused while in the cache)
BATCH_BYTES = 1 << 20
BATCH_BLOCKS = 1 << 16
#: the cost model of :func:`batch_cost` and :meth:`Batch.cost`, in bytes moved: a numpy
#: call (or making a block's queued entry, ~0.5 us) costs about as much as moving CALL_BYTES
#: through the cache, and checking one block's work for a batch about SETUP_BYTES per
#: array operand (~5 us)
CALL_BYTES = 64 << 10
SETUP_BYTES = 512 << 10


class Unbatchable(Exception):
    """The blocks' data work cannot run as one batch (why)."""


def _op_bytes(entry) -> int:
    return sum(a.nbytes for a in entry[1:] if a.__class__ is np.ndarray)


def batch_cost(entries, blocks: int):
    """What making ``blocks`` blocks of work one by one costs, and what checking them for a
    batch costs, in bytes moved (``entries``: one block's queued work).  The one place the
    batching decision is modelled; the run of a checked batch is :meth:`Batch.cost`.

    One by one, each block makes every entry and runs it on the buffers themselves: its
    bytes and two calls.  A batch runs each place once per part of :attr:`Batch.size`
    blocks, over its copies (which fit the cache), and not at all where it is a copy the
    batch aliases (:func:`_shortcuts`); checking the block's work costs about SETUP_BYTES
    per array operand (finding it in the memories, its windows' overlaps, the owners of its
    bytes).  Large operations with few blocks are then better made one by one: their calls
    are little next to their bytes, and the check is not paid back."""
    ops = sum(_op_bytes(x) for x in entries)
    operands = sum(1 for x in entries for a in x[1:] if a.__class__ is np.ndarray)
    return blocks * (ops + 2 * CALL_BYTES * len(entries)), SETUP_BYTES * operands


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


def byte_map(per_byte: np.ndarray, a: np.ndarray, off: int, unit: int = 1) -> np.ndarray:
    """The entries of ``per_byte`` (one per ``unit`` bytes of a buffer's span) for the bytes
    of array ``a`` whose first byte is ``off`` bytes into the span: shaped as ``a`` plus one
    axis over each element's units (``unit`` divides ``off``, ``a``'s strides and itemsize)."""
    e = per_byte.itemsize
    return np.ndarray(a.shape + (a.itemsize // unit,), per_byte.dtype, buffer=per_byte, offset=off // unit * e,
                      strides=tuple(s // unit * e for s in a.strides) + (e,))


def _owner_maps(fixed, written) -> dict:
    """Per buffer written in place (``written``: id -> the ``[lo, hi)`` of its accesses), a
    map of which access last wrote each of its bytes, all -1 (none): as intervals where
    every access of it (``fixed``: ``Batch``'s tuples) fills its span (a contiguous tile),
    else one entry per unit of bytes."""
    unit, dense = {}, {}
    for x in fixed:
        k = id(x[3])
        if k in written and x[8].size:
            a = x[8]
            unit[k] = math.gcd(unit.get(k, 0), a.itemsize, x[4] - written[k][0], *a.strides)
            dense[k] = dense.get(k, True) and (a.flags.c_contiguous or a.flags.f_contiguous)
    return {k: _Painted() if dense.get(k, True) else _PerUnit(lo, hi, unit[k]) for k, (lo, hi) in written.items()}


class _Painted:
    """Which access last wrote each byte of a buffer, as disjoint intervals ``(lo, hi, n)``,
    for accesses whose bytes fill their span (``Batch``'s tuples: ``x[6]``, ``x[7]``)."""
    __slots__ = ("iv",)

    def __init__(self, iv=()):
        self.iv = list(iv)

    def copy(self):
        return _Painted(self.iv)

    def paint(self, x, n) -> None:
        lo, hi = x[6], x[7]
        iv = []
        for a, b, m in self.iv:
            if b <= lo or a >= hi:
                iv.append((a, b, m))
            else:
                if a < lo:
                    iv.append((a, lo, m))
                if b > hi:
                    iv.append((hi, b, m))
        iv.append((lo, hi, n))
        iv.sort()
        self.iv = iv

    def writers(self, x) -> list:
        """The accesses that last wrote the bytes of access ``x``, in increasing order; -1 first
        when some byte has none."""
        lo, hi = x[6], x[7]
        ws, covered = set(), 0
        for a, b, m in self.iv:
            if b > lo and a < hi:
                ws.add(m)
                covered += min(b, hi) - max(a, lo)
        if covered < hi - lo:
            ws.add(-1)
        return sorted(ws)


class _PerUnit:
    """Which access last wrote each byte of a buffer's ``[lo, hi)``, one int32 per ``unit``
    bytes (a unit that divides every access's offset, strides and itemsize)."""
    __slots__ = ("lo", "unit", "m")

    def __init__(self, lo, hi, unit, m=None):
        self.lo, self.unit = lo, unit
        self.m = np.full((hi - lo) // unit, -1, np.int32) if m is None else m

    def copy(self):
        return _PerUnit(self.lo, None, self.unit, self.m.copy())

    def paint(self, x, n) -> None:
        byte_map(self.m, x[8], x[4] - self.lo, self.unit)[...] = n

    def writers(self, x) -> list:
        o = byte_map(self.m, x[8], x[4] - self.lo, self.unit)
        lo, hi = int(o.min()), int(o.max())
        return [lo] if lo == hi else [int(w) for w in np.unique(o)]


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
    q + 1 is block q's of the part of the batch being made; row 0 holds the buffer as it was
    before the part).  ``row`` 1: the view reads its own block's copy, 0: the block before's."""
    __slots__ = ("w", "off", "shape", "strides", "dtype", "row")

    def __init__(self, w, off, a, row):
        self.w, self.off, self.shape, self.strides, self.dtype, self.row = w, off, a.shape, a.strides, a.dtype, row

    def view(self, b, nq, temps):
        t = temps[self.w]
        return np.ndarray((nq,) + self.shape, self.dtype, buffer=t, offset=self.off + self.row * t.shape[1],
                          strides=(t.shape[1],) + self.strides)


def _same_view(a: np.ndarray, off_a: int, b: np.ndarray, off_b: int) -> bool:
    """Arrays ``a`` and ``b`` (of one buffer, at those offsets) are the same bytes, laid alike."""
    return off_a == off_b and a.shape == b.shape and a.strides == b.strides and a.dtype == b.dtype


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
    others.

    A plain copy whose destination only its own block reads gets no copies and does not
    run: its readers read its source (an *alias*), and an operation whose result a copy
    only stores to a GM window writes that window itself (*forwarded*): :func:`_shortcuts`.
    What the last block leaves in the buffers written in place is copied back at the end.
    The blocks run :attr:`size` at a time, so that their copies stay in the cache."""

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
        own = _owner_maps(fixed, written)

        def owners(x, maps=own):
            return maps[id(x[3])].writers(x)
        writes = [n for n, x in enumerate(acc) if x[2] and x[5] == 0]
        for n in writes:
            own[id(acc[n][3])].paint(acc[n], n)
        last = {k: v.copy() for k, v in own.items()}
        own.update(_owner_maps(fixed, written))
        src, edges = {}, {k: set() for k in range(len(it0))}
        group = {n: n for n in writes}       # the writes a read reads together share copies

        def root(n):
            while group[n] != n:
                n = group[n]
            return n
        for n, x in enumerate(acc):
            if x[5] or id(x[3]) not in written or not x[8].size:
                continue                         # (an empty region: no byte read or written)
            if x[2]:
                own[id(x[3])].paint(x, n)
                continue
            ws, row = owners(x), 1
            if ws[0] < 0:                        # written later in the block, or never
                if len(ws) > 1:
                    raise Unbatchable("a read of bytes its block wrote and bytes it did not")
                ws, row = owners(x, last), 0
                if ws[0] < 0:
                    if len(ws) > 1:
                        raise Unbatchable("a read of bytes the block before wrote and bytes it did not")
                    continue                     # never written: the buffer itself
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
        # plain copies the batch need not make, and writes made straight into GM (_shortcuts)
        alias, forward, where, dropped = _shortcuts(acc, it0, writes, src, root)
        # the copies: one per in-place write or group of writes read together (their hull;
        # such writes must not overlap) that is neither an alias nor forwarded, and every
        # access as a view
        members = {}
        for n in writes:
            if n not in alias and n not in forward:
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
        self.zero = set()                    # the copies whose row 0 a view reads

        def view_of(at):
            kind, ref, off, step, a = at
            if kind == "M":
                return _Moved(ref, off, step, a)
            if kind == "V":
                c = copy_of[ref]
                if step == 0:
                    self.zero.add(c)
                return _Version(c, off - self.hulls[c][1], a, step)
            return np.ndarray(a.shape, a.dtype, buffer=ref, offset=off, strides=a.strides)
        rows = [list(x) for x in it0]
        for n, x in enumerate(acc):
            k, i, w, b, off, d, lo, hi, a = x
            if k in dropped:
                continue
            if d:
                rows[k][1 + i] = _Moved(b, off, d, a)
            elif w:
                rows[k][1 + i] = view_of(forward[n] if n in forward else ("V", n, off, 1, a))
            elif n in where:
                rows[k][1 + i] = view_of(where[n])
            elif n in src:
                rows[k][1 + i] = view_of(("V", src[n][0], off, src[n][1], a))
        self.args = [(rows[k][0], tuple(rows[k][1:]),
                      tuple(i for i, a in enumerate(rows[k][1:]) if a.__class__ in (_Moved, _Version)))
                     for k in order if k not in dropped]
        # what the last block left: the bytes of every write a later one does not cover, in
        # the block's order, from its copy (an alias: its source; forwarded: its GM window)
        self.backs = []
        for n in writes:
            x = acc[n]
            if x[8].size and n in owners(x, last):
                at = alias.get(n) or forward.get(n) or ("V", n, x[4], 1, x[8])
                self.backs.append((view_of(at), x[3], x[8], x[4]))
        self.bytes = sum(hi - lo for _, lo, hi in self.hulls)      # the copies of one block
        #: the blocks made at a time: their copies fit BATCH_BYTES
        self.size = max(1, min(BATCH_BLOCKS, BATCH_BYTES // max(1, self.bytes)))
        self.temps, self.room = [], 0      # the copies of every block of a batch, and how many
        self.aliases, self.forwarded = len(alias), len(forward)
        self._run_bytes = sum(_op_bytes(it0[k]) for k in order if k not in dropped)
        self._zero_bytes = sum(self.hulls[c][2] - self.hulls[c][1] for c in self.zero)

    def cost(self, blocks: int) -> int:
        """What running ``blocks`` blocks as this batch costs, in bytes moved (the model of
        :func:`batch_cost`): the places it runs, once per part, and the bytes the last block
        left copied back."""
        parts = -(-blocks // self.size)
        return blocks * self._run_bytes + parts * (len(self.args) * CALL_BYTES + self._zero_bytes) + \
            sum(a.nbytes for _, _, a, _ in self.backs)

    def run(self, b: int, nq: int, size: int | None = None) -> None:
        """The work of blocks ``b`` .. ``b + nq - 1``, which must be blocks the batch was checked
        for, ``size`` blocks at a time (default :attr:`size`).  The buffers written in place
        are set at the end: one that fails part way leaves them as they were, so the blocks
        can be made again one by one from ``b`` (the GM windows they wrote no block reads)."""
        if b < self.first or b + nq > self.end:
            raise ValueError(f"blocks {b}..{b + nq - 1} are outside the checked {self.first}..{self.end - 1}")
        size = min(nq, size or self.size)
        # (the copies are made once, for the largest batch, and reused: fresh memory is
        # paid for page by page)
        if self.room < size + 1:
            self.temps = [np.empty((size + 1, hi - lo), np.uint8) for _, lo, hi in self.hulls]
            self.room = size + 1
        temps = self.temps
        for c in self.zero:
            buf, lo, hi = self.hulls[c]
            temps[c][0] = buf[lo:hi]
        # every view made once: a GM window's over all the blocks, a copy's over a part's
        plan = [(fn, args, [(i, args[i].view(b, nq, temps) if args[i].__class__ is _Moved
                             else args[i].view(b, size, temps), args[i].__class__ is _Moved) for i in views])
                for fn, args, views in self.args]
        q, last = b, 0
        while q < b + nq:
            n = min(size, b + nq - q)
            if q > b:                        # (row 0: the last block's copies of the part before)
                for c in self.zero:
                    temps[c][0] = temps[c][last]
            for fn, args, views in plan:
                args = list(args)
                for i, v, moved in views:
                    args[i] = v[q - b:q - b + n] if moved else v[:n]
                fn(*args)
            q, last = q + n, n
        for v, buf, a, off in self.backs:
            real = np.ndarray(a.shape, a.dtype, buffer=buf, offset=off, strides=a.strides)
            real[...] = v if v.__class__ is np.ndarray else v.view(q - last, last, temps)[last - 1]


def _shortcuts(acc, it0, writes, src, root):
    """The copies of a block a batch need not make, and the writes it makes straight into GM.

    An *alias*: a write in place that is a plain copy (:func:`batch_copy`), the only write
    of its copy group, read only by views of its own block (row 1).  It gets no copies and
    its place does not run: its readers read its source instead - a GM window that moves,
    another write's copies (maybe another alias's source: chains compose) or bytes of a
    buffer no write of the block touches - at the same byte offset when the copy's
    destination and source are laid alike (equal strides: every reader keeps its own
    layout, so an operation sees operands laid as block by block), or the source as it is
    where the reader is itself a plain copy of the whole destination (a copy's bytes do not
    depend on the layout).  The last block's bytes are then copied from the source.

    This reads the source later than the copy did, which is exact because no source is
    written later in the batch: a write's copies are written once (row q + 1 by block q
    alone, row 0 before the first), no window of the block's GM reads shares a byte with
    any write of the batch's blocks (checked in :class:`Batch`), and bytes no write of the
    block touches are written by none of the batch's blocks.

    A *forwarded* write: one not an alias, alone in its group, whose only reader (of its own
    block) is a plain copy of all of it into a GM window that moves, laid alike: the
    operation writes that window itself and the store does not run (no other access of the
    batch shares the window's bytes, so when they are written does not matter).

    Returns (aliases: write -> where its source is; forwarded: write -> its GM window; where
    the readers of aliases read; the places that do not run), a place being
    ``(kind, ref, offset, move or row, array of its shape, strides and dtype)``: kind "M" a
    GM window moving by ``move`` (ref the buffer), "V" the copies of write ``ref`` (offset
    in its buffer), "R" bytes of buffer ``ref`` no write touches."""
    at = {(x[0], x[1]): n for n, x in enumerate(acc)}       # (place, argument) -> access
    readers = {}                                             # write -> its readers, rows
    for r, (w, row) in src.items():
        readers.setdefault(w, []).append((r, row))
    groups = {}
    for n in writes:
        groups[root(n)] = groups.get(root(n), 0) + 1
    copies = [batch_copy(x) for x in it0]
    alias, forward, where, dropped = {}, {}, {}, set()

    def source(s):
        x = acc[s]
        if s in where:
            return where[s]
        if x[5]:
            return ("M", x[3], x[4], x[5], x[8])
        if s in src:
            return ("V", src[s][0], x[4], src[s][1], x[8])
        return ("R", x[3], x[4], 0, x[8])
    for n in writes:                          # (in the block's order: a chain's source first)
        x = acc[n]
        cp = copies[x[0]]
        rs = readers.get(n, ())
        if cp is None or cp[0] != x[1] or (x[0], cp[1]) not in at or groups[root(n)] > 1 or \
                any(row != 1 for _, row in rs):
            continue
        base, d = source(at[(x[0], cp[1])]), x[8]
        mapped = {}
        for r, _ in rs:
            y = acc[r]
            if base[4].strides == d.strides:
                mapped[r] = base[:2] + (base[2] + y[4] - x[4], base[3], y[8])
            elif _same_view(y[8], y[4], d, x[4]) and copies[y[0]] is not None and copies[y[0]][1] == y[1]:
                mapped[r] = base
            else:
                break
        else:
            alias[n] = base
            where.update(mapped)
            dropped.add(x[0])
    for n in writes:
        x = acc[n]
        rs = readers.get(n, ())
        if n in alias or groups[root(n)] > 1 or len(rs) != 1 or rs[0][1] != 1:
            continue
        y = acc[rs[0][0]]
        cp = copies[y[0]]
        if cp is None or cp[1] != y[1] or y[0] in dropped:
            continue
        g = acc[at[(y[0], cp[0])]]
        if g[5] and _same_view(y[8], y[4], x[8], x[4]) and g[8].strides == x[8].strides:
            forward[n] = ("M", g[3], g[4], g[5], x[8])
            dropped.add(y[0])
    return alias, forward, where, dropped
