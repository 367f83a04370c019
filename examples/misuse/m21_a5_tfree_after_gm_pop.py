"""M21: protocol="pto-isa" on A5, a C2V_GM ring (SlotNum 2, SyncPeriod 2) whose consumer
TFREEs every tile it TPOPs.  On A5 a tile TPOP from a GM ring already frees the slot
(TPop.hpp: pop() returns reqFree for GM FIFOs) and the tile TFREE after it frees again
(TFree.hpp notifies whatever the ring): two credits per SyncPeriod.  The producer passes its
wait at push #4 on the spare credit and overwrites slot 0 before AIV0 popped tile #2.  On
A2A3 (a DIR_C2V ring, in GM) the tile TFREE is a no-op and the kernel is clean.

Run:  ptopipe check examples/misuse/m21_a5_tfree_after_gm_pop.py --protocol pto-isa --platform a5
"""
from ptopipe.isa import *
from _common import RING_UB, SLOT, T, scenario


def _pipe(fifo):
    gm = DIR_C2V if platform_id() == PLATFORM_A2A3 else DIR_C2V_GM
    return TPipe(0, gm, SLOT, 2, peers=(0,))(fifo, RING_UB, 0)


def cube(fifo, tiles):
    pipe = _pipe(fifo)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for i in range(6):
        TPUSH(pipe, acc)                  # M21: push #4 overwrites unpopped tile #2  <- where


def vector(fifo, tiles):
    pipe = _pipe(fifo)
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(6):
        TPOP(pipe, t)
        TFREE(pipe)                       # M21: frees the slot TPOP already freed


SCENARIO = scenario("m21_a5_tfree_after_gm_pop", cube, (vector, None), __doc__, protocol="pto-isa")
