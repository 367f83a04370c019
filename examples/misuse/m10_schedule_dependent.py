"""M10: a bug that only some interleavings expose.  pto-isa on A5 allows a 16-deep FIFO,
but a cross-core flag counter saturates at 15.  The Cube forwards every control message
it pops from AIV0 (V2C, depth 8) as a tile split between AIV0 and AIV1 (C2V UP_DOWN, depth
16).  When AIV1 keeps up - the default schedule - at most ~8 ready signals are pending; when
the scheduler lets the Cube and AIV0 run ahead of AIV1 for two rounds, the Cube sets AIV1's
ready flag a 16th time before AIV1 waits once: flag counter overflow.  `ptopipe check
--schedules 50` finds such a schedule.  (Both single-lane pipes are on AIV0: on A5 a
NO_SPLIT pipe has one lane, AIV0 - docs/protocols.md.)

Run:  ptopipe check examples/misuse/m10_schedule_dependent.py --schedules 50
"""
from ptopipe.isa import *
from _common import SLOT, T, scenario

RING_UB = 0x8000      # C2V ring (16 slots of half tiles) in each AIV's UB
RING_L1 = 0x40000     # V2C ring (8 slots) in the AIC's L1


def cube(fifo, tiles):
    to_aivs = TPipe(0, DIR_C2V, SLOT, 16)(fifo, RING_UB, 0)
    from_aiv0 = TPipe(2, DIR_V2C, SLOT, 8, peers=(0,))(fifo, 0, RING_L1)
    msg = Tile(TileType.Mat, float32, T, T)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for i in range(tiles):
        TPOP(from_aiv0, msg)
        TFREE(from_aiv0)
        TPUSH(to_aivs, acc, TILE_UP_DOWN)  # M10: 16 ready signals pending overflow the counter  <- where


def vector(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 16)(fifo, RING_UB, 0)
    t = Tile(TileType.Vec, float32, T // 2, T)
    if get_subblockid() == 0:
        ctrl = TPipe(2, DIR_V2C, SLOT, 8, peers=(0,))(fifo, 0, RING_L1)
        m = Tile(TileType.Vec, float32, T, T, addr=0x0)
        for i in range(tiles):
            TPUSH(ctrl, m)
            if i >= 8:                        # AIV0 pops its halves 8 messages behind
                TPOP(pipe, t, TILE_UP_DOWN)
                TFREE(pipe)
        for i in range(min(8, tiles)):
            TPOP(pipe, t, TILE_UP_DOWN)
            TFREE(pipe)
    else:
        for i in range(tiles):
            TPOP(pipe, t, TILE_UP_DOWN)
            TFREE(pipe)


SCENARIO = scenario("m10_schedule_dependent", cube, vector, __doc__, platform="a5", protocol="pto-isa")
