"""M30: a ready signal sent before the data are in the slot.  In the address flow the Cube
TALLOCs a GM slot, stores a tile into it in two halves and commits it with TPUSH - but
commits after the first half: the ready SET goes out before the second TSTORE.  Under the
default schedule the Cube goes on to store the second half before AIV0 runs, and the
result is right; a schedule that lets AIV0 load the slot between the commit and the
second store reads a stale half: wrong numbers.  The checker reports the store into the
committed slot at that store under every schedule (a write into a pushed slot).

Run:  ptopipe check examples/misuse/m30_commit_before_store.py [--platform a5]
"""
import numpy as np

from ptopipe import Scenario
from ptopipe.isa import *
from _common import DEPTH, RING_UB, SLOT, T

H = T // 2


def _dir():
    return DIR_C2V_GM if platform_id() == PLATFORM_A5 else DIR_C2V


def cube(x, fifo, tiles):
    pipe = TPipe(0, _dir(), SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    top = Tile(TileType.Mat, float32, H, T, addr=0x0)
    bot = Tile(TileType.Mat, float32, H, T, addr=0x1000)
    slot = GlobalTensor(float32, (T, T))
    for i in range(tiles):
        TLOAD(top, GlobalTensor(x.data() + i * T * T, (H, T)))
        TLOAD(bot, GlobalTensor(x.data() + i * T * T + H * T, (H, T)))
        TALLOC(pipe, slot)
        TSTORE(GlobalTensor(slot.data(), (H, T)), top)
        TPUSH(pipe, slot)                                             # M30: committed here ...
        TSTORE(GlobalTensor(slot.data() + H * T, (H, T)), bot)       # M30: ... before this store  <- where


def vector(out, fifo, tiles):
    pipe = TPipe(0, _dir(), SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    slot = GlobalTensor(float32, (T, T))
    t = Tile(TileType.Vec, float32, T, T, addr=0x0)
    for i in range(tiles):
        TPOP(pipe, slot)
        TLOAD(t, slot)                                                # M30
        TFREE(pipe, slot)
        TADDS(t, t, 1.0)
        TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), t)


def make_args(rng, tiles=8):
    return dict(x=rng.integers(1, 9, (tiles * T, T)).astype(np.float32),
                out=np.zeros((tiles * T, T), np.float32), fifo=gm_buffer(DEPTH * SLOT), tiles=tiles)


def golden(args, **_):
    return {"out": args["x"] + 1.0}


SCENARIO = Scenario("m30_commit_before_store", cube, (vector, None), make_args, golden, doc=__doc__)
