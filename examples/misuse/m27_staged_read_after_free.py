"""M27: AIV0 pops each tile into a tile without an address of its own and reads it after
its TFREE.  On A5 the tile is the ring slot (zero-copy); on A2A3 it is a copy in AIV0's
local staging ring, which the TFREE hands back as well: a use after free on both, at the
read, naming the TFREE.

Run:  ptopipe check examples/misuse/m27_staged_read_after_free.py [--platform a5]
"""
from ptopipe.isa import *
from _common import DEPTH, RING_UB, SLOT, T, scenario


def cube(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for i in range(tiles):
        TPUSH(pipe, acc)


def vector(fifo, out, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0x0)
    TEXPANDS(o, 0.0)
    for i in range(tiles):
        TPOP(pipe, t)
        TFREE(pipe)                       # M27: the tile's life ends here
        TADD(o, o, t)                     # M27: read after its TFREE  <- where
    TSTORE(out, o)


SCENARIO = scenario("m27_staged_read_after_free", cube, (vector, None), __doc__)
