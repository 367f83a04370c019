"""A SET orders only the accesses ordered before it on its core.

The Cube stores a GM workspace (MTE3) and signals "ready" with a TPUSH of another tile on
the FIX pipe; nothing makes the FIX pipe wait for MTE3, so the SET goes out before the
store lands and the Vector core's read races with it (read after write).  The reverse:
the Cube loads the workspace (MTE2) and signals "done", and the Vector core overwrites it
while the load runs (write after read).  Both were missed - the data came out right only
because the simulator applies the numpy work in issue order.  A pipe_barrier(PIPE_ALL)
or an event on the store / load orders them: clean, and equal to numpy.
"""
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import DataRaceError
from ptopipe.isa import *  # noqa: F403
from markers import line_of

R, C = 128, 128
SIG = 16 * 16 * 4


def kernels(order):
    """``order``: None (race), "barrier" or "event" between the access and the signal."""
    def cube(x, ws, fifo):
        pipe = TPipe(0, DIR_C2V, SIG, 2, peers=(0,))(fifo, 0x10000, 0)
        big = Tile(TileType.Mat, float32, R, C, addr=0)
        sig = Tile(TileType.Acc, float32, 16, 16, addr=0)
        TLOAD(big, x)
        e = TSTORE(ws, big)                                   # WRITE
        if order == "barrier":
            pipe_barrier(PIPE_ALL)
        TPUSH(pipe, sig, TILE_NO_SPLIT, *((e,) if order == "event" else ()))

    def vector(ws, out, fifo):
        pipe = TPipe(0, DIR_C2V, SIG, 2, peers=(0,))(fifo, 0x10000, 0)
        s = Tile(TileType.Vec, float32, 16, 16)
        t = Tile(TileType.Vec, float32, 16, C, addr=0)
        TPOP(pipe, s)
        TFREE(pipe)
        for r in range(R // 16):
            TLOAD(t, GlobalTensor(ws.data() + r * 16 * C, (16, C)))     # READ
            TSTORE(GlobalTensor(out.data() + r * 16 * C, (16, C)), t)
    return cube, (vector, None)


def war_kernels(order):
    """The Cube reads the workspace and signals it may be overwritten."""
    def cube(ws, fifo):
        pipe = TPipe(0, DIR_C2V, SIG, 2, peers=(0,))(fifo, 0x10000, 0)
        big = Tile(TileType.Mat, float32, R, C, addr=0)
        sig = Tile(TileType.Acc, float32, 16, 16, addr=0)
        e = TLOAD(big, ws)                                    # LOAD
        if order == "barrier":
            pipe_barrier(PIPE_ALL)
        TPUSH(pipe, sig, TILE_NO_SPLIT, *((e,) if order == "event" else ()))

    def vector(ws, fifo):
        pipe = TPipe(0, DIR_C2V, SIG, 2, peers=(0,))(fifo, 0x10000, 0)
        s = Tile(TileType.Vec, float32, 16, 16)
        t = Tile(TileType.Vec, float32, 16, C, addr=0)
        TEXPANDS(t, 0.0)
        TPOP(pipe, s)
        TFREE(pipe)
        TSTORE(GlobalTensor(ws.data(), (16, C)), t)           # OVERWRITE
    return cube, (vector, None)


def _args():
    x = np.random.default_rng(3).integers(-9, 9, (R, C)).astype(np.float32)
    return dict(x=x, ws=np.zeros((R, C), np.float32), out=np.zeros((R, C), np.float32),
                fifo=ptopipe.gm_buffer(2 * SIG))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a_store_still_in_flight_at_the_signal_races_with_the_reader(platform, protocol):
    cube, aiv = kernels(None)
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(cube, aiv, _args(), platform=platform, protocol=protocol)
    e = ei.value
    assert e.where.endswith(f":{line_of(kernels, 'READ')}"), e.where
    assert f":{line_of(kernels, 'WRITE')}" in e.details
    assert "AIC's TSTORE runs on PIPE_MTE3 and completes at cycle" in e.details
    assert "it was still running when the SET was sent" in e.details     # a plain run: completion time
    assert "pipe_barrier(PIPE_ALL)" in e.fix


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_load_still_in_flight_at_the_signal_races_with_the_overwrite(platform):
    cube, aiv = war_kernels(None)
    args = _args()
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(cube, aiv, dict(ws=args["ws"], fifo=args["fifo"]), platform=platform)
    assert ei.value.where.endswith(f":{line_of(war_kernels, 'OVERWRITE')}")
    assert f":{line_of(war_kernels, 'LOAD')}" in ei.value.details


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("order", ["barrier", "event"])
def test_ordering_the_access_before_the_signal_is_clean(platform, order):
    cube, aiv = kernels(order)
    args = _args()
    res = ptopipe.run(cube, aiv, args, platform=platform)
    np.testing.assert_array_equal(res.outputs["out"], args["x"])
    cube, aiv = war_kernels(order)
    ptopipe.run(cube, aiv, dict(ws=args["x"].copy(), fifo=args["fifo"]), platform=platform)
