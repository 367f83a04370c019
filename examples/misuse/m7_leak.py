"""M7: the kernel ends holding a slot (the last TPOP has no TFREE) and with data pushed
but never popped (the Cube pushes one tile more than AIV0 pops): a leak report at
kernel end.

Run:  ptopipe check examples/misuse/m7_leak.py [--platform a5]
"""
from ptopipe.isa import *
from _common import DEPTH, RING_UB, SLOT, T, scenario


def cube(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for i in range(tiles + 1):
        TPUSH(pipe, acc)                  # one more push than pops


def vector(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(tiles):
        TPOP(pipe, t)                     # M7: the last pop is never freed  <- where
        if i < tiles - 1:
            TFREE(pipe)


SCENARIO = scenario("m7_leak", cube, (vector, None), __doc__)
