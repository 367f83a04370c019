"""M2: producer and consumer use different FlagIDs (0 on the Cube, 4 on the Vector core):
each side waits on flags the other never sets - a deadlock naming both flags.

Run:  ptopipe check examples/misuse/m2_flag_mismatch.py [--platform a5]
"""
from ptopipe.isa import *
from _common import DEPTH, RING_UB, SLOT, T, scenario


def cube(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)     # FlagID 0
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for i in range(tiles):
        TPUSH(pipe, acc)                  # M2: waits free[0] on flag 0  <- where


def vector(fifo, tiles):
    pipe = TPipe(4, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB + DEPTH * SLOT, 0)  # FlagID 4: wrong
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(tiles):
        TPOP(pipe, t)                     # M2: waits ready[0] on flag 4
        TFREE(pipe)


SCENARIO = scenario("m2_flag_mismatch", cube, (vector, None), __doc__)
