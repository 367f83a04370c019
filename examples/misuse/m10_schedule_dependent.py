"""M10: a bug that only some interleavings expose.  pto-isa on A5 allows a 16-deep FIFO,
but a cross-core flag counter saturates at 15.  The Cube forwards every control message
it pops from AIV1 (V2C, depth 8) as a tile to AIV0 (C2V, depth 16).  When AIV0 keeps up -
the default schedule - at most ~8 ready signals are pending; when the scheduler lets the
Cube and AIV1 run ahead of AIV0 for two rounds, the Cube sets ready a 16th time before AIV0
waits once: flag counter overflow.  `ptopipe check --schedules 50` finds such a schedule.

Run:  ptopipe check examples/misuse/m10_schedule_dependent.py --schedules 50
"""
from ptopipe.isa import *
from _common import SLOT, T, scenario

RING_UB = 0x8000      # C2V ring (16 slots) in AIV0's UB
RING_L1 = 0x40000     # V2C ring (8 slots) in the AIC's L1


def cube(fifo, tiles):
    to_aiv0 = TPipe(0, DIR_C2V, SLOT, 16, peers=(0,))(fifo, RING_UB, 0)
    from_aiv1 = TPipe(2, DIR_V2C, SLOT, 8, peers=(1,))(fifo, 0, RING_L1)
    msg = Tile(TileType.Mat, float32, T, T)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for i in range(tiles):
        TPOP(from_aiv1, msg)
        TFREE(from_aiv1)
        TPUSH(to_aiv0, acc)               # M10: 16 ready signals pending overflow the counter  <- where


def vector(fifo, tiles):
    if get_subblockid() == 0:
        pipe = TPipe(0, DIR_C2V, SLOT, 16, peers=(0,))(fifo, RING_UB, 0)
        t = Tile(TileType.Vec, float32, T, T)
        for i in range(tiles):
            TPOP(pipe, t)
            TFREE(pipe)
    else:
        pipe = TPipe(2, DIR_V2C, SLOT, 8, peers=(1,))(fifo, 0, RING_L1)
        m = Tile(TileType.Vec, float32, T, T, addr=0x0)
        for i in range(tiles):
            TPUSH(pipe, m)


SCENARIO = scenario("m10_schedule_dependent", cube, vector, __doc__, platform="a5", protocol="pto-isa")
