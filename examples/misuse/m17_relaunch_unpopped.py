"""M17: protocol="pto-isa", two launches.  The Cube pushes 65 tiles, AIV0 pops 64 (its loop
bound is one short).  The missing pop would not have sent a free (SyncPeriod 2, 65 is odd),
so launch 1's teardown passes and its exit leaves 1 ready credit on flag 0 - the device
keeps it.  Launch 2 reuses FlagID 0: AIV0's first TPOP takes launch 1's credit and pops a
slot this launch's Cube has not written.  Reported there, naming launch 1, the flag and the
leftover count (with one launch the same kernel is a leak at exit).

Run:  ptopipe check examples/misuse/m17_relaunch_unpopped.py [--platform a5]
"""
from ptopipe.isa import *
from _common import DEPTH, RING_UB, SLOT, T, scenario


def cube(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for i in range(tiles + 1):
        TPUSH(pipe, acc)                  # M17: 65 pushes


def vector(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(tiles):
        TPOP(pipe, t)                     # M17: launch 2 pops launch 1's leftover  <- where
        TFREE(pipe)


SCENARIO = scenario("m17_relaunch_unpopped", cube, (vector, None), __doc__, protocol="pto-isa",
                    launches=2)
