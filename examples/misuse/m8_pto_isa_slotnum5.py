"""M8: protocol="pto-isa" with SlotNum 5.  pto-isa's sparse free notifications use
SyncPeriod = 5 // 2 = 2 and the producer waits only when i >= SlotNum and
i % SyncPeriod == 0, so push #5 (odd) writes slot 0 without waiting: the slot is reused
before the consumer freed it.

Run:  ptopipe check examples/misuse/m8_pto_isa_slotnum5.py --protocol pto-isa [--platform a5]
"""
from ptopipe.isa import *
from _common import RING_UB, SLOT, T, scenario


def cube(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 5, peers=(0,))(fifo, RING_UB, 0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for i in range(tiles):
        TPUSH(pipe, acc)                  # M8: push #5 reuses slot 0 without a free  <- where


def vector(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 5, peers=(0,))(fifo, RING_UB, 0)
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(tiles):
        TPOP(pipe, t)
        TFREE(pipe)


SCENARIO = scenario("m8_pto_isa_slotnum5", cube, (vector, None), __doc__, protocol="pto-isa")
