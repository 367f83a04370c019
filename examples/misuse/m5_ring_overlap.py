"""M5: a tile of the Vector kernel lies inside the consumer-side ring (SLOT_NUM * SLOT_SIZE
at RING_UB in UB; on A2A3 the local staging ring of popped tiles) and holds a value the loop
reads: the ring writes its bytes (on A5 the Cube's push of tile 1 lands there, on A2A3 pop 1
is staged there) and the read after that is a memory conflict at the read, naming the ring's
write.  (A tile that shares a ring's bytes is no error by itself: on the device the ring may
use bytes whose tile is dead.)

Run:  ptopipe check examples/misuse/m5_ring_overlap.py [--platform a5]
"""
from ptopipe.isa import *
from _common import DEPTH, RING_UB, SLOT, T, scenario


def cube(fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for i in range(tiles):
        TPUSH(pipe, acc)


def vector(fifo, x, out, tiles):
    b = Tile(TileType.Vec, float32, T, T, addr=RING_UB + SLOT)     # M5: inside the ring
    TLOAD(b, x)                           # a bias, loaded once
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH, peers=(0,))(fifo, RING_UB, 0)
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0x0)
    for i in range(tiles):
        TPOP(pipe, t)
        TADD(o, t, b)                     # M5: reads the bias after the ring wrote its bytes  <- where
        TFREE(pipe)
        TSTORE(out, o)


SCENARIO = scenario("m5_ring_overlap", cube, (vector, None), __doc__)
