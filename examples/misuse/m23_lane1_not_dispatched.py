"""M23: a C2V pipe with two consumer lanes (peers AIV0, AIV1; TILE_NO_SPLIT: each lane
gets the whole tile), but the group dispatches the Vector kernel only on lane 0.  On
A2A3 both AIV lanes must take part in every handshake of such a pipe (lane 1 replays the
TPOP / TFREE sequence with an empty valid shape); without lane 1 the Cube's TPUSH waits
forever for AIV1's free signal (an AICPU timeout on the device).  Reported as a deadlock
at the TPUSH that names AIV1 as the lane that never takes part.  On A5 a NO_SPLIT pipe has
one lane, AIV0 (the Cube's NO_SPLIT push reaches AIV0 only, docs/protocols.md): there this
kernel is correct and runs clean.

Run:  ptopipe check examples/misuse/m23_lane1_not_dispatched.py
"""
from ptopipe.isa import *
from _common import RING_UB, SLOT, T, scenario

DEPTH = 2


def cube(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH)(fifo, RING_UB, 0)         # lanes AIV0 and AIV1
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for i in range(8):
        TPUSH(pipe, acc, TILE_NO_SPLIT)   # M23: waits for AIV1's free  <- where


def vector(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH)(fifo, RING_UB, 0)
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0x0)
    for i in range(8):
        TPOP(pipe, t, TILE_NO_SPLIT)
        TMULS(o, t, 2.0)
        TFREE(pipe)
    TSTORE(out, o)


SCENARIO = scenario("m23_lane1_not_dispatched", cube, (vector, None), __doc__)   # lane 1: no kernel
