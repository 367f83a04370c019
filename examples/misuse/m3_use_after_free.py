"""M3: the consumer reads a popped slot after TFREE.  On A5 the popped tile is bound
zero-copy to the slot in UB; on A2A3 the GM slot is popped as a GlobalTensor (address
flow).  Either way the read after TFREE is a use-after-free of slot[tag].

Run:  ptopipe check examples/misuse/m3_use_after_free.py [--platform a5]
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
    o = Tile(TileType.Vec, float32, T, T, addr=0x0)
    for i in range(tiles):
        if platform_id() == PLATFORM_A5:
            t = Tile(TileType.Vec, float32, T, T)
            TPOP(pipe, t)                 # zero-copy: t is the slot
            TFREE(pipe)
            TMULS(o, t, 2.0)              # M3: reads the slot after TFREE  <- where on a5
        else:
            slot = GlobalTensor(float32, (T, T))
            TPOP(pipe, slot)              # address flow: slot points into the GM ring
            TFREE(pipe)
            TLOAD(o, slot)                # M3: reads the slot after TFREE  <- where on a2a3
        TSTORE(out, o)


SCENARIO = scenario("m3_use_after_free", cube, (vector, None), __doc__)
