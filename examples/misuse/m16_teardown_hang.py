"""M16: protocol="pto-isa".  AIV0 keeps its last tile for an epilogue and turns its free
notification off before the last TPOP (setFreeStatus(False)).  64 pushes on SlotNum 4
(SyncPeriod 2): release #63 is one that notifies ((63 + 1) % 2 == 0), and the Cube's TPipe
destructor drains numPopFree - numPushWait = 32 - 30 = 2 free credits at kernel end - but
only 1 was sent: the teardown hangs (on the device an AICPU timeout after the kernel's last
instruction).  With an odd push count the withheld release would not have notified and the
same kernel is clean.

Run:  ptopipe check examples/misuse/m16_teardown_hang.py [--platform a5]
"""
from ptopipe.isa import *
from _common import DEPTH, RING_UB, SLOT, T, scenario


def cube(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for i in range(tiles):
        TPUSH(pipe, acc)
    return    # M16: the pipe goes out of scope: ~TPipe() waits for a free never sent  <- where


def vector(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(tiles):
        if i == tiles - 1:
            pipe.cons.setFreeStatus(False)        # M16: the last release sends no free
        TPOP(pipe, t)
        TFREE(pipe)


SCENARIO = scenario("m16_teardown_hang", cube, (vector, None), __doc__, protocol="pto-isa")
