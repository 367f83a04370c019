"""A write into a ring slot that does not go through the pipe - a TSTORE through a raw view of
the ring's GM buffer - is ordered by none of the pipe's flags: its race with the consumer's TPOP
says so, and its fix is to keep such data out of the ring; a TSTORE into a TALLOCed slot whose
producer skipped its free-slot wait (setAllocateStatus(false)) is told to keep that wait.  A
control-word ring's slot is checked alike: a TSTORE into it or a TLOAD of it that nothing orders
with the word's push and pop is a race at that line."""
import numpy as np
import pytest

import ptopipe
from ptopipe import ProtocolError
from ptopipe.isa import *  # noqa: F403
from cube_parts import square_acc
from markers import line_of

T = 16
SLOT = T * T * 4


def raw_cube(fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    for i in range(3):
        TPUSH(pipe, acc, TILE_UP_DOWN)
        TSTORE(GlobalTensor(fifo.data().cast(float32) + (i % 2) * T * T, (T, T)), acc)      # RAW


def alloc_cube(fifo, go):
    """Address flow with the free-slot wait off: after the Vector core's go-ahead the third
    TALLOC takes slot 0 again without waiting for its free, and its TSTORE writes it."""
    pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo)
    ahead = TPipe(2, DIR_V2C, SLOT, 2)(go, 0, 0x40000)
    pipe.prod.setAllocateStatus(False)
    v = Tile(TileType.Mat, float32, T, T, addr=0)
    m = Tile(TileType.Mat, float32, T, T)
    slot = GlobalTensor(float32, (T, T))
    for i in range(3):
        if i == 2:
            TPOP(ahead, m, TILE_UP_DOWN)
            TFREE(ahead, m, TILE_UP_DOWN)
        TALLOC(pipe, slot, TILE_UP_DOWN)
        TSTORE(slot, v)                                                       # ALLOC
        TPUSH(pipe, slot, TILE_UP_DOWN)


def ahead_vector(fifo, go):
    pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo)
    ahead = TPipe(2, DIR_V2C, SLOT, 2)(go, 0, 0x40000)
    t = Tile(TileType.Vec, float32, T // 2, T, addr=0x8000)
    TPUSH(ahead, t, TILE_UP_DOWN)
    y = Tile(TileType.Vec, float32, T // 2, T)
    for i in range(3):
        TPOP(pipe, y, TILE_UP_DOWN)
        TFREE(pipe, y, TILE_UP_DOWN)


def vector(fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo)
    y = Tile(TileType.Vec, float32, T // 2, T)
    for i in range(3):
        TPOP(pipe, y, TILE_UP_DOWN)                                           # POP
        TFREE(pipe, y, TILE_UP_DOWN)


def _error(cube, vec, protocol, **args):
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, vec, dict(fifo=ptopipe.gm_buffer(2 * SLOT), **args), platform="a2a3",
                    protocol=protocol, timeout=20)
    return ei.value


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a_raw_view_write_into_a_slot_is_told_to_keep_out_of_the_ring(protocol):
    err = _error(raw_cube, vector, protocol)
    here = f"test_raw_ring_write.py:{line_of(raw_cube, 'RAW')}"
    assert here in err.details and f"test_raw_ring_write.py:{line_of(vector, 'POP')}" in err.details, str(err)
    assert "do not write the ring's buffer directly" in err.fix and here in err.fix, err.fix
    assert "raw view" in err.fix and "setAllocateStatus" not in err.fix, err.fix
    assert err.findings[0]["raw_write"] is True


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a_talloced_slot_written_without_the_free_slot_wait_is_told_to_keep_it(protocol):
    err = _error(alloc_cube, ahead_vector, protocol, go=ptopipe.gm_buffer(2 * SLOT))
    assert f"test_raw_ring_write.py:{line_of(alloc_cube, 'ALLOC')}" in err.details, str(err)
    assert "setAllocateStatus" in err.fix and "raw view" not in err.fix, err.fix
    assert err.findings[0]["raw_write"] is False


# -- a control-word ring's slot: the word's four bytes are checked as a data slot's tile is ------
def _ctrl_cube(fifo, out):
    ctrl = TPipe(0, DIR_V2C_CTRL, 32, 4, peers=(0,))(fifo)
    TPOP(ctrl)                                                                # CTRL POP


def _ctrl_producer(fifo, out):
    ctrl = TPipe(0, DIR_V2C_CTRL, 32, 4, peers=(0,))(fifo)
    w = Tile(TileType.Vec, int32, 1, 8, addr=0)
    for _ in range(40):                 # long work first: AIV1 runs before the push
        TEXPANDS(w, 1)
    TEXPANDS(w, 7)
    TPUSH(ctrl, w)                                                            # CTRL PUSH


def _ctrl_store(fifo, out):
    w = Tile(TileType.Vec, int32, 1, 8, addr=0)
    TEXPANDS(w, 99)
    TSTORE(GlobalTensor(fifo.data().cast(int32), (1, 8)), w)                  # STORE INTO CTRL


def _ctrl_load(fifo, out):
    w = Tile(TileType.Vec, int32, 1, 8, addr=0)
    TLOAD(w, GlobalTensor(fifo.data().cast(int32), (1, 8)))                   # LOAD OF CTRL
    TSTORE(GlobalTensor(out.data(), (1, 8)), w)


@pytest.mark.parametrize("third,marker,what", [
    (_ctrl_store, "STORE INTO CTRL", "written before it was read: AIV1 TSTORE writes it while AIC's TPOP "
                                     "of the previous tile is not ordered before the write"),
    (_ctrl_load, "LOAD OF CTRL", "read before it was written: AIV1 TLOAD reads it while AIV0's TPUSH is "
                                 "not ordered before the read (no ready signal between them)"),
])
def test_a_control_words_slot_touched_by_another_core_is_a_race_in_every_schedule(third, marker, what):
    """A TSTORE into / TLOAD of the GM bytes of a DIR_V2C_CTRL ring's slot that nothing orders with
    the control word's push and pop: the default schedule reports it at that line (which word the
    Cube pops, which bytes AIV1 loads, depends on the schedule otherwise)."""
    args = dict(fifo=gm_buffer(4 * 32), out=np.zeros((1, 8), np.int32))
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(_ctrl_cube, (_ctrl_producer, third), args, causal=True)
    e = ei.value
    assert e.what == f"slot 0 of V2C pipe FlagID 0 (peers AIV0) {what}", e.what
    assert e.where.endswith(f"test_raw_ring_write.py:{line_of(third, marker)}"), e.where


# -- a slot's later, smaller tile does not hide the bytes of its earlier, larger one -------------
def _big_then_small_cube(x, pad, fifo, peek, peek_not_poke):
    pipe = TPipe(0, DIR_C2V, SLOT, 1, peers=(0,))(fifo, 0x8000, 0)
    wait_flag_dev(5)                    # both lanes have started: AIV1 is blocked at its WAIT by now
    if peek_not_poke:                   # AIV1 goes on before the big push: nothing orders it after
        ffts_cross_core_sync(PIPE_S, getFFTSMsg(FFTS_MODE_VAL, 7))
    acc = square_acc(x, T)
    TPUSH(pipe, acc, TILE_NO_SPLIT)
    if not peek_not_poke:               # after the big push (FIX orders it), not after AIV0's pop of it
        ffts_cross_core_sync(PIPE_FIX, getFFTSMsg(FFTS_MODE_VAL, 7))
    acc.SetValid(4, T)
    TPUSH(pipe, acc, TILE_NO_SPLIT)


def _big_then_small_vector(x, pad, fifo, peek, peek_not_poke):
    ffts_cross_core_sync(PIPE_S, getFFTSMsg(FFTS_MODE_VAL, 5))
    if get_subblockid() == 0:
        pipe = TPipe(0, DIR_C2V, SLOT, 1, peers=(0,))(fifo, 0x8000, 0)
        wait_flag_dev(7)
        t = Tile(TileType.Vec, float32, T, T, addr=0x8000)
        TPOP(pipe, t, TILE_NO_SPLIT)
        TFREE(pipe)
        small = Tile(TileType.Vec, float32, 4, T, addr=0x8000)
        TPOP(pipe, small, TILE_NO_SPLIT)
        TFREE(pipe)
    else:
        w = Tile(TileType.Vec, float32, 8, 8, addr=0)
        for _ in range(2000):               # far ahead in cycles: the default schedule runs it last
            TEXPANDS(w, 7.0)
        wait_flag_dev(7)
        row8 = GlobalTensor(fifo.data().cast(float32) + 8 * T, (1, 8))       # only the big tile's bytes
        p = Tile(TileType.Vec, float32, 1, 8, addr=0x4000)
        if peek_not_poke:
            TLOAD(p, row8)                                                   # PEEK
        else:
            TLOAD(p, GlobalTensor(peek.data(), (1, 8)))
            TSTORE(row8, p)                                                  # POKE


@pytest.mark.parametrize("peek_not_poke,marker,what", [
    (True, "PEEK", "read before it was written: AIV1 TLOAD reads it while AIC's TPUSH is not ordered "
                   "before the read (no ready signal between them)"),
    (False, "POKE", "written before it was read: AIV1 TSTORE writes it while AIV0's TPOP of the previous "
                    "tile is not ordered before the write"),
])
def test_a_raw_access_of_bytes_only_an_earlier_larger_tile_moved_is_a_race(peek_not_poke, marker, what):
    """The ring sits on a GM page no other access touches, and the raw access comes after a
    4-row tile went through the slot behind a 16-row one: the slot's later records cover only
    4 rows, yet the raw access still races the 16-row push (a read) or AIV0's pop of it (a
    write) that nothing orders it after."""
    args = dict(x=np.ones((T, T), np.float32), pad=np.zeros(1024, np.float32), fifo=gm_buffer(SLOT),
                peek=np.zeros((1, 8), np.float32), peek_not_poke=peek_not_poke)
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(_big_then_small_cube, _big_then_small_vector, args, causal=True)
    e = ei.value
    assert e.what == f"slot 0 of C2V pipe FlagID 0 (peers AIV0) {what}", e.what
    assert e.where.endswith(f"test_raw_ring_write.py:{line_of(_big_then_small_vector, marker)}"), e.where
