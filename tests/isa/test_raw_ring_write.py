"""A write into a ring slot that does not go through the pipe - a TSTORE through a raw view of
the ring's GM buffer - is ordered by none of the pipe's flags: its race with the consumer's TPOP
says so, and its fix is to keep such data out of the ring; a TSTORE into a TALLOCed slot whose
producer skipped its free-slot wait (setAllocateStatus(false)) is told to keep that wait."""
import numpy as np
import pytest

import ptopipe
from ptopipe import ProtocolError
from ptopipe.isa import *  # noqa: F403
from markers import line_of

T = 16
SLOT = T * T * 4


def raw_cube(fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    for i in range(3):
        TPUSH(pipe, acc, TILE_UP_DOWN)
        TSTORE(GlobalTensor(fifo.data() + (i % 2) * T * T, (T, T)), acc)      # RAW


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
