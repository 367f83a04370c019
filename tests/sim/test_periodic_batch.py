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
op = st.tuples(st.sampled_from(["copy", "muls", "add"]), target, operand, operand)


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
    d, x, y = _place(mem, dst, q), _place(mem, a, q), _place(mem, b, q)
    if kind == "copy":
        return (setitem, d, Ellipsis, x)
    if kind == "muls":
        return (muls, x, np.float32(1.5), d)
    return (_ufunc_into, np.add, x, y, d)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(block=st.lists(op, min_size=1, max_size=8), nq=st.integers(2, 9), seed=st.integers(0, 2 ** 16),
       cut=st.integers(0, 4))
def test_a_batch_leaves_the_bytes_of_the_blocks_one_by_one(block, nq, seed, cut):
    """... also run as two batches, the last ``cut`` blocks apart (a batch reuses its copies)."""
    rng = np.random.default_rng(seed)
    gm = np.zeros(GM_RING + 256, np.uint8)
    local = np.zeros(64 * LOCAL_SLOTS, np.uint8)
    gm.view(np.float32)[:] = rng.integers(-8, 8, gm.size // 4)
    local.view(np.float32)[:] = rng.integers(-8, 8, local.size // 4)
    mem = (gm, local)
    makers = [lambda q, o=o: _item(mem, o, q) for o in block]
    start = (gm.copy(), local.copy())
    b = 3
    for q in range(b, b + nq):                       # the reference: block after block
        for m in makers:
            it = m(q)
            it[0](*it[1:])
    want = (gm.copy(), local.copy())
    gm[:], local[:] = start
    try:
        batch = _Batch(makers, _Buffers([gm, local]), nq)
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
    gm = np.zeros(GM_RING + 256, np.uint8)
    local = np.zeros(64 * LOCAL_SLOTS, np.uint8)
    gm.view(np.float32)[:GM_OUT // 4] = np.arange(GM_OUT // 4)
    mem = (gm, local)
    block = [("copy", ("O", 0), ("R", 0), ("R", 0)),      # read the ring slot (the block before's)
             ("copy", ("R", 0), ("I", 0), ("I", 0))]      # then write it
    makers = [lambda q, o=o: _item(mem, o, q) for o in block]
    ref = gm.copy()
    for q in range(3, 8):
        for m in makers:
            it = m(q)
            it[0](*it[1:])
    want, gm[:] = gm.copy(), ref
    _Batch(makers, _Buffers([gm, local]), 5).run(3, 5)
    assert np.array_equal(gm, want)


def test_a_read_of_two_writes_is_refused():
    gm = np.zeros(GM_RING + 256, np.uint8)
    local = np.zeros(64 * LOCAL_SLOTS, np.uint8)
    mem = (gm, local)
    wide = lambda q: (setitem, np.ndarray((8, 4), np.float32, buffer=gm, offset=GM_OUT + 128 * q), Ellipsis,
                      np.ndarray((8, 4), np.float32, buffer=local, offset=0))
    makers = [lambda q: _item(mem, ("copy", ("L", 0), ("I", 0), ("I", 0)), q),
              lambda q: _item(mem, ("copy", ("L", 1), ("I", 1), ("I", 1)), q), wide]
    with pytest.raises(_Unbatchable, match="two writes"):
        _Batch(makers, _Buffers([gm, local]), 4)


@given(a=st.integers(-300, 300), la=st.integers(1, 80), b=st.integers(-300, 300), lb=st.integers(1, 80),
       d=st.integers(-120, 120).filter(bool), nq=st.integers(1, 12))
def test_meet_is_whether_some_blocks_windows_overlap(a, la, b, lb, d, nq):
    brute = any(a + q * d < b + r * d + lb and b + r * d < a + q * d + la for q in range(nq) for r in range(nq))
    assert _meet(a, la, d, b, lb, d, nq) == brute
