"""M29: a missing wait whose effect needs the consumer to get ahead.  The Cube stages each
input tile in GM (`mid`) and then signals AIV0 through a C2V ring; AIV0 waits for tile i's
signal but prefetches tile i+1 from `mid` at once - before the signal that it is there.
Under the default schedule the Cube runs ahead (the ring holds 4 signals), so every
prefetch finds its data and the result is right; a schedule that lets AIV0 run right
after a signal reads a tile the Cube has not stored yet: wrong numbers.  The race checker
reports the unordered TSTORE/TLOAD pair under every schedule; with the checkers off,
`explore(..., checks=False)` shows the wrong result only under some schedules.

Run:  ptopipe check examples/misuse/m29_prefetch_before_wait.py [--platform a5]
"""
import numpy as np

from ptopipe import Scenario
from ptopipe.isa import *
from _common import DEPTH, RING_UB, SLOT, T


def cube(x, mid, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    a = Tile(TileType.Mat, float32, T, T, addr=0x0)
    note = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for i in range(tiles):
        TLOAD(a, GlobalTensor(x.data() + i * T * T, (T, T)))
        TSTORE(GlobalTensor(mid.data() + i * T * T, (T, T)), a)      # M29: mid[i] stored
        set_flag(PIPE_MTE3, PIPE_FIX, EVENT_ID0)                      # (the FIX signal waits
        wait_flag(PIPE_MTE3, PIPE_FIX, EVENT_ID0)                     #  for the MTE3 store)
        TPUSH(pipe, note)                                             # then signalled


def vector(mid, out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    note = Tile(TileType.Vec, float32, T, T)
    cur = Tile(TileType.Vec, float32, T, T, addr=0x0)
    nxt = Tile(TileType.Vec, float32, T, T, addr=0x1000)
    for i in range(tiles):
        TPOP(pipe, note)                  # waits for mid[i] ...
        TFREE(pipe)
        if i == 0:
            TLOAD(cur, GlobalTensor(mid.data(), (T, T)))
        else:
            TMOV(cur, nxt)
        if i + 1 < tiles:                 # ... but prefetches mid[i+1] before its signal
            TLOAD(nxt, GlobalTensor(mid.data() + (i + 1) * T * T, (T, T)))   # M29  <- where
        TADDS(cur, cur, 1.0)
        TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), cur)


def make_args(rng, tiles=8):
    return dict(x=rng.integers(1, 9, (tiles * T, T)).astype(np.float32),
                mid=np.zeros((tiles * T, T), np.float32), out=np.zeros((tiles * T, T), np.float32),
                fifo=gm_buffer(DEPTH * SLOT), tiles=tiles)


def golden(args, **_):
    return {"out": args["x"] + 1.0}


SCENARIO = Scenario("m29_prefetch_before_wait", cube, (vector, None), make_args, golden, doc=__doc__)
