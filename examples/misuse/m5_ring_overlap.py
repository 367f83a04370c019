"""M5: a tile of the Vector kernel lies inside the consumer-side ring (SLOT_NUM * SLOT_SIZE
at RING_UB in UB; on A2A3 the local staging ring of popped tiles): a memory overlap
error naming both regions.

Run:  ptopipe check examples/misuse/m5_ring_overlap.py [--platform a5]
"""
from ptopipe.isa import *
from _common import DEPTH, RING_UB, SLOT, T, scenario


def cube(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for i in range(tiles):
        TPUSH(pipe, acc)


def vector(fifo, out, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=RING_UB + SLOT)     # M5: inside the ring  <- where on a5
    for i in range(tiles):
        TPOP(pipe, t)                     # M5: A2A3 reserves its staging ring here  <- where on a2a3
        TMULS(o, t, 2.0)
        TFREE(pipe)
        TSTORE(out, o)


SCENARIO = scenario("m5_ring_overlap", cube, (vector, None), __doc__)
