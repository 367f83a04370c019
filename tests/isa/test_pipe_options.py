"""Pipe features beyond plain TPUSH/TPOP: the V2C control FIFO, the producer's
setAllocateStatus / setRecordStatus switches, and the TPipe[...] template spelling."""
import numpy as np
import pytest

import ptopipe
from ptopipe.isa import *  # noqa: F403

T = 16
SLOT = T * T * 4


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_v2c_ctrl_fifo_delivers_control_words_in_order(platform, protocol):
    """A control pipe: TPipe(DIR_V2C_CTRL) under the spec; under pto-isa, where that TPipe
    does not compile, the TMPipe with a CTRL_FIFO, which both Vector lanes push (its Cube waits
    for both lanes' flags: tests/protocol/test_ptoisa_platforms.py)."""
    got = []

    def ctrl_pipe(ctrl):
        if protocol == "spec":
            return TPipe(0, DIR_V2C_CTRL, 32, 4, peers=(0,))(ctrl)
        w = Tile(TileType.Vec, int32, 1, 8)
        return TMPipe(0, FIFOType.CTRL_FIFO, 4, 1, w, w)(ctrl)

    def cube(ctrl):
        pipe = ctrl_pipe(ctrl)
        for _ in range(6):
            got.append(TPOP(pipe))

    def vec(ctrl):
        pipe = ctrl_pipe(ctrl)
        word = Tile(TileType.Vec, int32, 1, 8, addr=0)
        for i in range(6):
            TEXPANDS(word, 100 + i)
            TPUSH(pipe, word)

    ptopipe.run(cube, (vec, None) if protocol == "spec" else vec, dict(ctrl=ptopipe.gm_buffer(4 * 32)),
                platform=platform, protocol=protocol)
    assert got == [100, 101, 102, 103, 104, 105]


def _stream(protocol, allocate_from=None, record=True):
    """C2V stream of 12 tiles through a 4-slot ring; the producer may switch off its
    free-slot wait (from push ``allocate_from`` on) or its ready signal."""
    def cube(x, fifo):
        pipe = TPipe[0, DIR_C2V, SLOT, 4, 2, (0,)](fifo, 0x8000, 0)
        assert pipe.prod.getAllocateStatus() and pipe.prod.isRecord()
        pipe.prod.setRecordStatus(record)
        assert pipe.prod.isRecord() == record
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        xl1 = Tile(TileType.Mat, float32, T, T, addr=0)
        xl0 = Tile(TileType.Left, float32, T, T, addr=0)
        eye = Tile(TileType.Right, float32, T, T, addr=0)
        eye.array[...] = np.eye(T, dtype=np.float32)
        for i in range(12):
            if allocate_from is not None and i >= allocate_from:
                pipe.prod.setAllocateStatus(False)
            TLOAD(xl1, GlobalTensor(x.data() + i * T * T, (T, T)))
            TMOV(xl0, xl1)
            TMATMUL(acc, xl0, eye)
            TPUSH(pipe, acc)

    def vec(out, fifo):
        pipe = TPipe[0, DIR_C2V, SLOT, 4, 2, (0,)](fifo, 0x8000, 0)
        t = Tile(TileType.Vec, float32, T, T)
        for i in range(12):
            TPOP(pipe, t)
            TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), t)
            TFREE(pipe)

    x = np.arange(12 * T * T, dtype=np.float32).reshape(12 * T, T)
    args = dict(x=x, out=np.zeros_like(x), fifo=ptopipe.gm_buffer(4 * SLOT))
    return ptopipe.run(cube, (vec, None), args, protocol=protocol), x


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_template_spelling_streams_correctly(protocol):
    res, x = _stream(protocol)
    np.testing.assert_array_equal(res.outputs["out"], x)


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_skipping_the_free_slot_wait_is_reported_as_an_overwrite(protocol):
    # the producer runs ahead of the consumer into slots it has not freed yet
    with pytest.raises(ptopipe.ProtocolError, match="overwrites slot"):
        _stream(protocol, allocate_from=4)


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_without_ready_signals_the_consumer_deadlocks(protocol):
    with pytest.raises(ptopipe.DeadlockError, match="TPOP"):
        _stream(protocol, record=False)
