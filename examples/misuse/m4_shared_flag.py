"""M4: two pipes on the same peer share flags (FlagID 0 and 2 with SlotNum 4 both use
flags 2 and 3): a configuration error when the second pipe is initialised.

Run:  ptopipe check examples/misuse/m4_shared_flag.py [--platform a5]
"""
from ptopipe.isa import *
from _common import RING_UB, SLOT, T, scenario


def cube(fifo, tiles):
    a = TPipe(0, DIR_C2V, SLOT, 4, peers=(0,))(fifo, RING_UB, 0)
    b = TPipe(2, DIR_C2V, SLOT, 4, peers=(0,))(fifo.data() + 4 * SLOT, RING_UB + 4 * SLOT, 0)   # M4  <- where (the Cube binds first)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    TPUSH(a, acc)
    TPUSH(b, acc)


def vector(fifo, tiles):
    a = TPipe(0, DIR_C2V, SLOT, 4, peers=(0,))(fifo, RING_UB, 0)
    b = TPipe(2, DIR_C2V, SLOT, 4, peers=(0,))(fifo.data() + 4 * SLOT, RING_UB + 4 * SLOT, 0)   # M4
    t = Tile(TileType.Vec, float32, T, T)
    for p in (a, b):
        TPOP(p, t)
        TFREE(p)


SCENARIO = scenario("m4_shared_flag", cube, (vector, None), __doc__)
