"""M18: protocol="pto-isa".  The Cube orders its last push by an acknowledgement AIV0 sends
on a second pipe (V2C, FlagID 4) after freeing tile 63, and turns its free-slot wait off
for that push (setAllocateStatus(False)).  Race-free - but push #64 is one that waits
(64 >= SlotNum 4 and 64 % SyncPeriod 2 == 0), so the free credit it would have taken stays
on flag 1: the destructor drains what the protocol leaves for 65 pushes (32 - 31 = 1) and 1
credit is left at exit.  The next launch on FlagID 0 would start with it and overrun the
ring (run it with --launches 2: reported at that launch's TPUSH).

Run:  ptopipe check examples/misuse/m18_drain_leak.py [--platform a5]
"""
from ptopipe.isa import *
from _common import DEPTH, RING_UB, SLOT, T, scenario

ACK_L1 = 0x40000      # A5: the acknowledgement ring in the Cube's L1


def cube(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    ack = TPipe(4, DIR_V2C, SLOT, 1, peers=(0,))(fifo.data() + 8 * SLOT, 0, ACK_L1)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    got = Tile(TileType.Mat, float32, T, T)
    for i in range(tiles + 1):
        if i == tiles:
            TPOP(ack, got)                # AIV0 has freed tile 63
            TFREE(ack)
            pipe.prod.setAllocateStatus(False)    # M18: the last push skips its free wait
        TPUSH(pipe, acc)
    return    # M18: ~TPipe() drains 1 credit, 1 more is left on flag 1  <- where


def vector(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    ack = TPipe(4, DIR_V2C, SLOT, 1, peers=(0,))(fifo.data() + 8 * SLOT, 0, ACK_L1)
    t = Tile(TileType.Vec, float32, T, T)
    note = Tile(TileType.Vec, float32, T, T, addr=0x0)
    for i in range(tiles + 1):
        TPOP(pipe, t)
        TFREE(pipe)
        if i == tiles - 1:
            TPUSH(ack, note)


SCENARIO = scenario("m18_drain_leak", cube, (vector, None), __doc__, protocol="pto-isa")
