"""M6: the pushed tile (32x16 f32, 2 KiB) is larger than SLOT_SIZE (1 KiB): a protocol
error at the TPUSH.

Run:  ptopipe check examples/misuse/m6_tile_too_large.py [--platform a5]
"""
from ptopipe.isa import *
from _common import DEPTH, RING_UB, SLOT, T, scenario


def cube(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    acc = Tile(TileType.Acc, float32, 2 * T, T, addr=0x0)
    for i in range(tiles):
        TPUSH(pipe, acc)                  # M6: 2 KiB tile into 1 KiB slots  <- where


def vector(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    t = Tile(TileType.Vec, float32, 2 * T, T)
    for i in range(tiles):
        TPOP(pipe, t)
        TFREE(pipe)


SCENARIO = scenario("m6_tile_too_large", cube, (vector, None), __doc__)
