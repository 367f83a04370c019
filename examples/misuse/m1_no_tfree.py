"""M1: the consumer never calls TFREE.  The Cube fills all SLOT_NUM slots and blocks in
TPUSH waiting free[0]; AIV0 holds every slot and blocks in TPOP waiting ready[0]:
a deadlock whose report names the TPOP lacking a TFREE.

Run:  ptopipe check examples/misuse/m1_no_tfree.py [--platform a5]
"""
from ptopipe.isa import *
from _common import DEPTH, RING_UB, SLOT, T, scenario


def cube(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for i in range(tiles):
        TPUSH(pipe, acc)                  # M1: blocks waiting free[0]  <- where


def vector(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(tiles):
        TPOP(pipe, t)                     # M1: TPOP without TFREE
        # missing: TFREE(pipe)


SCENARIO = scenario("m1_no_tfree", cube, (vector, None), __doc__)
