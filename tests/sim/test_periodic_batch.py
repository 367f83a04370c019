"""The fast-forward engine's batches (``sim.periodic._Batch``): the data work of consecutive
repeated blocks run as one operation per place in the block leaves exactly the bytes that
running the blocks one after another does - for random blocks of copies and element-wise ops
over local buffers (written in place, read before or after the block writes them, or only
read) and GM windows that move with the block - or is refused."""
from __future__ import annotations

from operator import setitem

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from ptopipe.arch.catalogue import muls
from ptopipe.sim.periodic.batch import Batch as _Batch, Unbatchable as _Unbatchable, meet as _meet
from ptopipe.sim.periodic.values import Buffers as _Buffers

TILE = (4, 4)                  # float32: 64 bytes
NB = 64
LOCAL_SLOTS = 6
GM_IN, GM_OUT, GM_RING = 0, 64 * NB * 8, 64 * NB * 16      # byte offsets of the GM regions
GM_WIDE = GM_RING + 256                                      # two-tile output windows
GM_SIZE = GM_WIDE + 256 * NB


def _ufunc_into(ufunc, a, b, d):
    ufunc(a, b, out=d)


_ufunc_into.batch_out = -1


def _view(buf, off):
    return np.ndarray(TILE, np.float32, buffer=buf, offset=off)


# an operand: ("L", slot) a local slot, ("R", slot) a fixed GM ring slot, ("I", k) the k-th
# GM input window of the block (moves with it), ("O", k) an output window (moves)
operand = st.one_of(st.tuples(st.just("L"), st.integers(0, LOCAL_SLOTS - 1)),
                    st.tuples(st.just("R"), st.integers(0, 1)),
                    st.tuples(st.just("I"), st.integers(0, 3)))
target = st.one_of(st.tuples(st.just("L"), st.integers(0, LOCAL_SLOTS - 1)),
                   st.tuples(st.just("R"), st.integers(0, 1)),
                   st.tuples(st.just("O"), st.integers(0, 3)))
op = st.one_of(st.tuples(st.sampled_from(["copy", "muls", "add"]), target, operand, operand),
               # a store of two neighbouring local slots at once (they may be two writes')
               st.tuples(st.just("wide"), st.integers(0, 1), st.integers(0, LOCAL_SLOTS - 2), st.none()))


def _place(mem, which, q):
    kind, k = which
    gm, local = mem
    if kind == "L":
        return _view(local, 64 * k)
    if kind == "R":
        return _view(gm, GM_RING + 64 * k)
    base = GM_IN if kind == "I" else GM_OUT
    return _view(gm, base + 64 * (4 * q + k))        # four windows per block, moving by 256 bytes


def _item(mem, o, q):
    kind, dst, a, b = o
    if kind == "wide":
        gm, local = mem
        return (setitem, np.ndarray((8, 4), np.float32, buffer=gm, offset=GM_WIDE + 128 * (2 * q + dst)),
                Ellipsis, np.ndarray((8, 4), np.float32, buffer=local, offset=64 * a))
    d, x, y = _place(mem, dst, q), _place(mem, a, q), _place(mem, b, q)
    if kind == "copy":
        return (setitem, d, Ellipsis, x)
    if kind == "muls":
        return (muls, x, np.float32(1.5), d)
    return (_ufunc_into, np.add, x, y, d)


# a block storing tiles it computed one by one: local writes, then two-slot stores, then more
local_write = st.tuples(st.sampled_from(["copy", "muls", "add"]), st.tuples(st.just("L"), st.integers(0, 3)),
                        operand, operand)
wide_store = st.tuples(st.just("wide"), st.integers(0, 1), st.integers(0, 2), st.none())
block_stores = st.builds(lambda a, b, c: a + b + c, st.lists(local_write, min_size=2, max_size=6),
                         st.lists(wide_store, min_size=1, max_size=2), st.lists(op, max_size=3))


def _one_by_one(makers, mems, b: int, nq: int) -> tuple:
    """The reference: blocks ``b`` .. ``b + nq - 1`` made one after another; the memories'
    bytes then (returned), the memories put back as they were."""
    start = tuple(m.copy() for m in mems)
    for q in range(b, b + nq):
        for m in makers:
            it = m(q)
            it[0](*it[1:])
    want = tuple(m.copy() for m in mems)
    for m, s0 in zip(mems, start):
        m[:] = s0
    return want


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(block=st.one_of(st.lists(op, min_size=1, max_size=8), block_stores), nq=st.integers(2, 9),
       seed=st.integers(0, 2 ** 16), cut=st.integers(0, 4))
def test_a_batch_leaves_the_bytes_of_the_blocks_one_by_one(block, nq, seed, cut):
    """... also run as two batches, the last ``cut`` blocks apart (a batch reuses its copies)."""
    rng = np.random.default_rng(seed)
    gm = np.zeros(GM_SIZE, np.uint8)
    local = np.zeros(64 * LOCAL_SLOTS, np.uint8)
    gm.view(np.float32)[:] = rng.integers(-8, 8, gm.size // 4)
    local.view(np.float32)[:] = rng.integers(-8, 8, local.size // 4)
    mem = (gm, local)
    makers = [lambda q, o=o: _item(mem, o, q) for o in block]
    b = 3
    want = _one_by_one(makers, (gm, local), b, nq)
    try:
        batch = _Batch(makers, _Buffers([gm, local]), nq, first=b)
    except _Unbatchable:
        assume(False)
    if 0 < cut < nq:
        batch.run(b, nq - cut)
        batch.run(b + nq - cut, cut)
    else:
        batch.run(b, nq)
    assert np.array_equal(gm, want[0]) and np.array_equal(local, want[1])


def test_a_block_reading_what_the_block_before_left_runs_as_a_batch():
    """The pipeline's skew: the consumer's first read of a block is of what the producer's
    last write of the block before put there - renamed, not refused."""
    gm = np.zeros(GM_SIZE, np.uint8)
    local = np.zeros(64 * LOCAL_SLOTS, np.uint8)
    gm.view(np.float32)[:GM_OUT // 4] = np.arange(GM_OUT // 4)
    mem = (gm, local)
    block = [("copy", ("O", 0), ("R", 0), ("R", 0)),      # read the ring slot (the block before's)
             ("copy", ("R", 0), ("I", 0), ("I", 0))]      # then write it
    makers = [lambda q, o=o: _item(mem, o, q) for o in block]
    want = _one_by_one(makers, (gm, local), 3, 5)
    _Batch(makers, _Buffers([gm, local]), 5, first=3).run(3, 5)
    assert np.array_equal(gm, want[0])


def _wide_store_after(writes):
    """Makers: the local ``writes`` (a copy of input window k into local bytes [lo, hi)), then
    a store of local bytes [0, 128) into a wide window."""
    gm = np.zeros(GM_SIZE, np.uint8)
    local = np.zeros(64 * LOCAL_SLOTS, np.uint8)
    gm.view(np.float32)[:GM_OUT // 4] = np.arange(GM_OUT // 4)
    mem = (gm, local)
    makers = [lambda q, k=k, lo=lo, hi=hi: (setitem, local[lo:hi].view(np.float32), Ellipsis,
                                            gm[GM_IN + 256 * q + 64 * k:][:hi - lo].view(np.float32))
              for k, (lo, hi) in enumerate(writes)]
    makers.append(lambda q: _item(mem, ("wide", 0, 0, None), q))
    return gm, local, makers


def test_a_read_of_two_writes_of_its_block_runs_as_a_batch():
    """A block store of tiles computed one by one: its writes share their copies."""
    gm, local, makers = _wide_store_after([(0, 64), (64, 128)])
    want = _one_by_one(makers, (gm, local), 3, 5)
    _Batch(makers, _Buffers([gm, local]), 5, first=3).run(3, 5)
    assert np.array_equal(gm, want[0])


@pytest.mark.parametrize("writes,why", [([(0, 64), (32, 128)], "one over the other"),
                                        ([(0, 64)], "its block wrote and bytes it did not")])
def test_a_read_of_overlapping_or_partly_written_bytes_is_refused(writes, why):
    gm, local, makers = _wide_store_after(writes)
    with pytest.raises(_Unbatchable, match=why):
        _Batch(makers, _Buffers([gm, local]), 4)


@given(a=st.integers(-300, 300), la=st.integers(1, 80), b=st.integers(-300, 300), lb=st.integers(1, 80),
       d=st.integers(-120, 120).filter(bool), nq=st.integers(1, 12))
def test_meet_is_whether_some_blocks_windows_overlap(a, la, b, lb, d, nq):
    brute = any(a + q * d < b + r * d + lb and b + r * d < a + q * d + la for q in range(nq) for r in range(nq))
    assert _meet(a, la, d, b, lb, d, nq) == brute


def _column_half_stores(cols: tuple) -> tuple:
    """Makers of a block storing two local 4x4 tiles into 4-row windows of an 8-column output
    that move by 4 rows a block - the first at column ``cols[0]``, the second at ``cols[1]``
    (a LEFT_RIGHT split's two lanes storing their halves of the same rows)."""
    gm = np.zeros(GM_SIZE, np.uint8)
    local = np.zeros(64 * LOCAL_SLOTS, np.uint8)
    local.view(np.float32)[:32] = np.arange(32)

    def store(q, k):
        out = np.ndarray((4, 4), np.float32, buffer=gm, offset=GM_OUT + 128 * q + 4 * cols[k], strides=(32, 4))
        return (setitem, out, Ellipsis, _view(local, 64 * k))
    return gm, local, [lambda q, k=k: store(q, k) for k in (0, 1)]


def test_stores_of_the_column_halves_of_the_same_rows_run_as_a_batch():
    """Their windows' hulls meet but no byte is both's: the block's work runs as one batch."""
    gm, local, makers = _column_half_stores((0, 4))
    want = _one_by_one(makers, (gm, local), 2, 6)
    _Batch(makers, _Buffers([gm, local]), 6, first=2).run(2, 6)
    assert np.array_equal(gm, want[0])


def test_strided_stores_that_share_a_column_are_refused():
    gm, local, makers = _column_half_stores((0, 3))
    with pytest.raises(_Unbatchable, match="GM windows of the blocks meet"):
        _Batch(makers, _Buffers([gm, local]), 6)


# a GM window: (first byte in block 0, move a block in 4-byte steps, rows, cols, row pitch in
# elements, sign of the row step) - a 1..3-column window of a strided tensor, maybe walked backwards
window = st.tuples(st.integers(600, 1400), st.sampled_from([-24, -16, -8, -4, -2, 2, 4, 8, 16, 24]),
                   st.integers(0, 3), st.integers(1, 3), st.integers(0, 5), st.sampled_from([1, -1]))


def _window(gm, w, q):
    off, move, rows, cols, pad, sign = w
    return np.ndarray((rows, cols), np.float32, buffer=gm, offset=4 * (off + q * move),
                      strides=(sign * 4 * (cols + pad), 4))


@settings(max_examples=200, deadline=None)
@given(copies=st.lists(st.tuples(window, window), min_size=1, max_size=3), first=st.integers(0, 6),
       nq=st.integers(2, 6), seed=st.integers(0, 2 ** 16))
def test_a_batch_of_windows_moving_at_different_rates_leaves_the_bytes_of_its_blocks(copies, first, nq, seed):
    """Copies between GM windows that move by different amounts a block: windows that meet in
    some blocks and not in others.  A batch checked for blocks ``first`` .. ``first + nq - 1``
    runs them as one by one does, or is refused."""
    gm = np.zeros(1 << 14, np.uint8)
    gm.view(np.float32)[:] = np.random.default_rng(seed).integers(-100, 100, gm.size // 4)
    makers = []
    for dst, src in copies:
        src = src[:2] + dst[2:4] + src[4:]          # (the source window has the destination's shape)
        makers.append(lambda q, d=dst, s=src: (setitem, _window(gm, d, q), Ellipsis, _window(gm, s, q)))
    want = _one_by_one(makers, (gm,), first, nq)
    try:
        batch = _Batch(makers, _Buffers([gm]), nq, first=first)
    except _Unbatchable:
        assume(False)
    batch.run(first, nq)
    assert np.array_equal(gm, want[0])


def test_a_batch_runs_only_the_blocks_it_was_checked_for():
    gm, local, makers = _column_half_stores((0, 4))
    batch = _Batch(makers, _Buffers([gm, local]), 4, first=2)
    with pytest.raises(ValueError, match="outside the checked 2..5"):
        batch.run(3, 4)


# -- copies a batch need not make (aliases) and results stored straight into GM ----------
# A second machine: 4x4 float32 tiles in local slots (laid 16 bytes a row), fixed GM ring
# slots, and GM windows that move with the block, laid as the tiles ("I" in, "O" out) or
# with a row pitch of 8 floats ("P" in, "Q" out: the destination and source of a copy then
# differ in strides).  An operand is (kind, index, half): half None is the whole tile, 0 or 1
# its first or second two rows (a reader of part of a copy's destination), 2 or 3 its first
# or second two columns, transposed (bytes that do not fill their span).
ALIAS_SLOTS = 5
A_IN, A_PITCHED, A_OUT, A_QOUT, A_RING = 0, 4096, 8192, 12288, 16384
A_GM = A_RING + 128


def _tile(mem, spec, q):
    kind, k, half = spec
    gm, local = mem
    if kind == "L":
        a = np.ndarray((4, 4), np.float32, buffer=local, offset=64 * k)
    elif kind == "R":
        a = np.ndarray((4, 4), np.float32, buffer=gm, offset=A_RING + 64 * k)
    elif kind in "IO":                       # two windows a block, moving by 128 bytes
        a = np.ndarray((4, 4), np.float32, buffer=gm, offset=(A_IN if kind == "I" else A_OUT) + 64 * (2 * q + k))
    else:                                    # "P", "Q": columns 4k..4k+3 of 4-row, 8-column blocks
        a = np.ndarray((4, 4), np.float32, buffer=gm, offset=(A_PITCHED if kind == "P" else A_QOUT) + 128 * q + 16 * k,
                       strides=(32, 4))
    if half is None:
        return a
    return a[2 * half:2 * half + 2] if half < 2 else a[:, 2 * half - 4:2 * half - 2].T


def _alias_item(mem, o, q):
    from ptopipe.isa.ops import _product
    kind, d, a, b = o
    d, a, b = _tile(mem, d, q), _tile(mem, a, q), _tile(mem, b, q)
    if kind == "copy":
        return (setitem, d, Ellipsis, a)
    if kind == "copyto":
        return (np.copyto, d, a)
    if kind == "matmul":
        return (_product, a, b, np.dtype(np.float32), d)
    return (_ufunc_into, np.add, a, b, d)


_src_kind = st.sampled_from("LLLRIP")
_dst_kind = st.sampled_from("LLLRRQO")


@st.composite
def _alias_op(draw):
    kind = draw(st.sampled_from(["copy", "copy", "copyto", "matmul", "add"]))
    half = None if kind == "matmul" or draw(st.booleans()) else "half"

    def spec(kinds, n_for):
        k = draw(kinds)
        return (k, draw(st.integers(0, n_for(k) - 1)), None if half is None else draw(st.integers(0, 3)))
    dst = spec(_dst_kind, lambda k: ALIAS_SLOTS if k == "L" else 2)
    return (kind, dst, spec(_src_kind, lambda k: ALIAS_SLOTS if k == "L" else 2),
            spec(_src_kind, lambda k: ALIAS_SLOTS if k == "L" else 2))


# a chain: a load, copies of it from slot to slot, an operation on the last, a store
@st.composite
def _alias_chain(draw):
    slots = draw(st.permutations(range(ALIAS_SLOTS)))[:draw(st.integers(2, 4))]
    src = draw(st.sampled_from(["I", "P", "R"]))
    ops = [("copy", ("L", slots[0], None), (src, 0, None), (src, 0, None))]
    for a, b in zip(slots, slots[1:]):
        ops.append(("copy", ("L", b, None), ("L", a, None), ("L", a, None)))
    last = ("L", slots[-1], None)
    ops.append((draw(st.sampled_from(["matmul", "add"])), ("L", slots[0], None), last, ("I", 1, None)))
    ops.append(("copy", (draw(st.sampled_from("OQR")), 0, None), ("L", slots[0], None), ("L", slots[0], None)))
    return ops + draw(st.lists(_alias_op(), max_size=3))


def _alias_memories(seed):
    rng = np.random.default_rng(seed)
    gm = np.zeros(A_GM + 64 * 64, np.uint8)
    local = np.zeros(64 * ALIAS_SLOTS, np.uint8)
    gm.view(np.float32)[:] = rng.standard_normal(gm.size // 4)
    local.view(np.float32)[:] = rng.standard_normal(local.size // 4)
    return gm, local


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(block=st.one_of(st.lists(_alias_op(), min_size=1, max_size=6), _alias_chain()), nq=st.integers(2, 6),
       seed=st.integers(0, 2 ** 16), size=st.integers(1, 3))
def test_a_batch_with_aliases_leaves_the_bytes_of_the_blocks_one_by_one(block, nq, seed, size):
    """Copy chains, matmuls and adds over moving and fixed windows, whole and half tiles, with
    reads of the block before's writes: the batch (its plain copies aliased where they may
    be, run in parts of ``size`` blocks) leaves the bytes one by one does - random floats, so
    an operand laid otherwise (a matmul leaving BLAS) would show."""
    gm, local = _alias_memories(seed)
    mem = (gm, local)
    makers = [lambda q, o=o: _alias_item(mem, o, q) for o in block]
    want = _one_by_one(makers, mem, 1, nq)
    try:
        batch = _Batch(makers, _Buffers([gm, local]), nq, first=1)
    except _Unbatchable:
        assume(False)
    batch.run(1, nq, size)
    assert np.array_equal(gm, want[0]) and np.array_equal(local, want[1])


def _check_alias(block, nq=4):
    gm, local = _alias_memories(7)
    mem = (gm, local)
    makers = [lambda q, o=o: _alias_item(mem, o, q) for o in block]
    want = _one_by_one(makers, mem, 1, nq)
    batch = _Batch(makers, _Buffers([gm, local]), nq, first=1)
    batch.run(1, nq, 2)                          # (in two parts)
    assert np.array_equal(gm, want[0]) and np.array_equal(local, want[1])
    return batch


def _ld(dst, src, half=None):
    return ("copy", ("L", dst, half), (src[0], src[1], half), (src[0], src[1], half))


def test_a_load_moved_twice_into_a_matmul_reads_gm_and_its_result_is_stored_from_its_copies():
    """The S1 chain: a load (GM -> L1), a move (L1 -> L0), a matmul, a push into a ring slot,
    each lane popping its half, adding, storing.  The load and move are aliases (the matmul
    reads the GM window), the push and pops too (the adds read the matmul's copies), the adds
    write the output windows: the only copies left are the matmul's."""
    block = [_ld(0, ("I", 0)), _ld(1, ("L", 0)),
             ("matmul", ("L", 2, None), ("L", 1, None), ("R", 1, None)),
             ("copy", ("R", 0, None), ("L", 2, None), ("L", 2, None)),
             _ld(3, ("R", 0), 0), ("add", ("L", 4, 0), ("L", 3, 0), ("I", 1, 0)),
             ("copy", ("O", 0, 0), ("L", 4, 0), ("L", 4, 0)),
             _ld(3, ("R", 0), 1), ("add", ("L", 4, 1), ("L", 3, 1), ("I", 1, 1)),
             ("copy", ("O", 0, 1), ("L", 4, 1), ("L", 4, 1))]
    batch = _check_alias(block)
    assert (batch.aliases, batch.forwarded, batch.bytes) == (5, 2, 64)
    assert len(batch.args) == 3                  # the matmul and the two adds


@pytest.mark.parametrize("block,aliases", [
    # the copy's reader reads what the block before put there: the copy stays
    ([("add", ("O", 0, None), ("L", 1, None), ("I", 1, None)), _ld(1, ("I", 0))], 0),
    # its source is written again later in the block: the reader reads the first write's
    # source (each load and the move are aliases)
    ([_ld(0, ("I", 0)), _ld(1, ("L", 0)), _ld(0, ("I", 1)),
      ("add", ("O", 0, None), ("L", 1, None), ("L", 0, None))], 3),
    # ... by a write that is not a copy: the move reads the first load's window, the add the
    # matmul's copies
    ([_ld(0, ("I", 0)), _ld(1, ("L", 0)), ("matmul", ("L", 0, None), ("I", 1, None), ("I", 1, None)),
      ("add", ("O", 0, None), ("L", 1, None), ("L", 0, None))], 2),
    # a pitched GM window moved into a tile read in halves: laid otherwise, the copy stays
    ([_ld(0, ("P", 0)), ("add", ("O", 0, 0), ("L", 0, 0), ("I", 1, 0)),
      ("add", ("O", 0, 1), ("L", 0, 1), ("I", 1, 1))], 0),
    # ... read whole by a matmul: the copy stays too (a matmul's bits may depend on the layout)
    ([_ld(0, ("P", 0)), ("matmul", ("O", 0, None), ("L", 0, None), ("I", 1, None))], 0),
    # ... read whole by another copy: that copy reads the window (a copy's bytes do not)
    ([_ld(0, ("P", 0)), _ld(1, ("L", 0)), ("matmul", ("O", 0, None), ("L", 1, None), ("I", 1, None))], 1),
    # a result stored to a pitched window: the store stays (the add writes its own layout)
    ([_ld(0, ("I", 0)), ("add", ("L", 1, None), ("L", 0, None), ("I", 1, None)),
      ("copy", ("Q", 0, None), ("L", 1, None), ("L", 1, None))], 1),
])
def test_copies_that_must_stay_do_and_the_bytes_are_the_blocks_one_by_one(block, aliases):
    assert _check_alias(block).aliases == aliases


def test_interleaved_column_writes_are_owned_byte_by_byte():
    """Columns 1 and 2 of a tile, then columns 0 and 3 (whose span covers the first's), stored
    whole: the owner of each byte is found per byte, not by the accesses' spans, so the tile
    the last block leaves holds both writes' columns."""
    gm, local = _alias_memories(5)
    mem = (gm, local)

    def cols(kind, q, which):
        return _tile(mem, (kind, 0, None), q)[:, which]
    makers = [lambda q: (setitem, cols("L", q, slice(1, 3)), Ellipsis, cols("I", q, slice(1, 3))),
              lambda q: (setitem, cols("L", q, slice(0, 4, 3)), Ellipsis, cols("P", q, slice(0, 4, 3))),
              lambda q: _alias_item(mem, ("copy", ("O", 0, None), ("L", 0, None), ("L", 0, None)), q)]
    want = _one_by_one(makers, mem, 1, 4)
    _Batch(makers, _Buffers([gm, local]), 4, first=1).run(1, 4)
    assert np.array_equal(gm, want[0]) and np.array_equal(local, want[1])


def test_a_gm_window_read_by_an_alias_and_written_later_is_refused():
    """An alias reads its source when its readers run, which is exact only because no
    source is written later in the batch: a GM window the block also writes is refused."""
    gm, local = _alias_memories(7)
    mem = (gm, local)
    block = [_ld(0, ("I", 0)), ("copy", ("I", 0, None), ("I", 1, None), ("I", 1, None)),
             ("copy", ("O", 0, None), ("L", 0, None), ("L", 0, None))]
    makers = [lambda q, o=o: _alias_item(mem, o, q) for o in block]
    with pytest.raises(_Unbatchable, match="GM windows of the blocks meet"):
        _Batch(makers, _Buffers([gm, local]), 4, first=1)


def test_a_batch_failing_part_way_leaves_the_buffers_it_writes_in_place_as_they_were():
    """Made again one by one from its first block, it gives the bytes of one by one."""
    gm, local = _alias_memories(3)
    mem = (gm, local)
    calls = []

    def add_then_fail(a, b, d):
        calls.append(1)
        if len(calls) == 2:
            raise FloatingPointError("the second part")
        np.add(a, b, out=d)
    add_then_fail.batch_out = -1
    block = [_ld(0, ("I", 0)), (add_then_fail, ("L", 1, None), ("L", 0, None), ("R", 0, None)),
             ("copy", ("R", 1, None), ("L", 1, None), ("L", 1, None)),
             ("copy", ("O", 0, None), ("L", 1, None), ("L", 1, None))]

    def item(o, q):
        if o[0] is add_then_fail:
            return (add_then_fail, _tile(mem, o[2], q), _tile(mem, o[3], q), _tile(mem, o[1], q))
        return _alias_item(mem, o, q)
    makers = [lambda q, o=o: item(o, q) for o in block]
    before = local.copy(), gm[A_RING:A_GM].copy()
    batch = _Batch(makers, _Buffers([gm, local]), 4, first=1)
    with pytest.raises(FloatingPointError):
        batch.run(1, 4, 2)
    assert np.array_equal(local, before[0]) and np.array_equal(gm[A_RING:A_GM], before[1])
    calls.append(1)
    want = _one_by_one(makers, mem, 1, 4)
    for q in range(1, 5):
        for m in makers:
            it = m(q)
            it[0](*it[1:])
    assert np.array_equal(gm, want[0]) and np.array_equal(local, want[1])


@pytest.mark.parametrize("side,blocks,batched", [(128, 2, False), (128, 40, True), (4, 2, False), (4, 40, True)])
def test_the_cost_model_batches_enough_blocks_to_pay_for_checking_them(side, blocks, batched):
    from ptopipe.sim.periodic.batch import batch_cost
    a = np.zeros((side, side), np.float32)
    one_by_one, setup = batch_cost([(setitem, a, Ellipsis, a), (_ufunc_into, np.add, a, a, a)] * 4, blocks)
    assert (setup < one_by_one) == batched
