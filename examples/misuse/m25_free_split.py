"""M25: each Vector core pushes its UP_DOWN half of a tile to the Cube (V2C); the Cube pops
the whole tile with TILE_UP_DOWN but releases it with TFREE(pipe, TILE_NO_SPLIT).  pto-isa's
Cube frees a V2C slot on AIV0's flag alone for TILE_NO_SPLIT and on both lanes' flags for a
split (A5 ``setIntraBlockBySplit``): AIV1 never gets its part of the slot back.  Reported at
the TFREE, naming the TPOP - also on A2A3, where the device's free signals both Vector cores
(the same kernel hangs on A5).  Which split a TFREE names is otherwise not checked: pto-isa
tells only no-split from split, and only in the Cube's free (docs/protocols.md).

Run:  ptopipe check examples/misuse/m25_free_split.py [--platform a5] [--protocol pto-isa]
"""
from ptopipe.isa import *
from _common import DEPTH, SLOT, T, scenario

RING_L1 = 0x40000


def cube(fifo, tiles):
    pipe = TPipe(0, DIR_V2C, SLOT, DEPTH)(fifo, 0, RING_L1)
    b = Tile(TileType.Mat, float32, T, T)
    for i in range(2):
        TPOP(pipe, b, TILE_UP_DOWN)       # M25: popped as UP_DOWN halves
        TFREE(pipe, TILE_NO_SPLIT)        # M25: released as TILE_NO_SPLIT  <- where


def vector(x, fifo, tiles):
    pipe = TPipe(0, DIR_V2C, SLOT, DEPTH)(fifo, 0, RING_L1)
    v = Tile(TileType.Vec, float32, T // 2, T, addr=0x0)
    TLOAD(v, GlobalTensor(x.data() + get_subblockid() * (T // 2) * T, (T // 2, T)))
    for i in range(2):
        TPUSH(pipe, v, TILE_UP_DOWN)


SCENARIO = scenario("m25_free_split", cube, vector, __doc__)
