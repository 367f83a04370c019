"""M25: the Cube pushes UP_DOWN halves to both Vector cores; each pops its half with
TILE_UP_DOWN but releases it with TFREE(pipe, TILE_LEFT_RIGHT): the TFREE's split does not
match the TPOP it releases.  Reported at the TFREE, naming the TPOP - also on A2A3 under
pto-isa, where the device's TFREE is a no-op (the same kernel is wrong on A5).

Run:  ptopipe check examples/misuse/m25_free_split.py [--platform a5] [--protocol pto-isa]
"""
from ptopipe.isa import *
from _common import DEPTH, RING_UB, SLOT, T, scenario


def cube(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH)(fifo, RING_UB, 0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for i in range(tiles):
        TPUSH(pipe, acc, TILE_UP_DOWN)


def vector(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH)(fifo, RING_UB, 0)
    t = Tile(TileType.Vec, float32, T // 2, T)
    for i in range(tiles):
        TPOP(pipe, t, TILE_UP_DOWN)       # M25: popped as UP_DOWN halves
        TFREE(pipe, TILE_LEFT_RIGHT)      # M25: released as LEFT_RIGHT  <- where


SCENARIO = scenario("m25_free_split", cube, vector, __doc__)
