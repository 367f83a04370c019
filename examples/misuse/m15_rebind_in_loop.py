"""M15: AIV0 constructs its TPipe inside the tile loop, so the second iteration binds
FlagID 0 again in the same launch.  Each binding would be a new TPipe whose tile index
restarts at slot 0 while the flag counters keep the first one's credits: a configuration
error at the second binding, whose fix is to bind once before the loop (a new launch -
``run(..., launches=K)`` / ``--launches K`` - binds it anew legally).

Run:  ptopipe check examples/misuse/m15_rebind_in_loop.py [--platform a5]
"""
from ptopipe.isa import *
from _common import DEPTH, RING_UB, SLOT, T, scenario


def cube(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for i in range(tiles):
        TPUSH(pipe, acc)


def vector(fifo, tiles):
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(tiles):
        pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)   # M15: bound again each iteration  <- where
        TPOP(pipe, t)
        TFREE(pipe)


SCENARIO = scenario("m15_rebind_in_loop", cube, (vector, None), __doc__)
