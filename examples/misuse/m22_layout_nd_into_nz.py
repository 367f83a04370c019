"""M22 (A5): a Vector core pushes an ND (row-major) Vec tile into a V2C ring whose consumer,
the Cube, pops it as an NZ (fractal) Mat tile.  A5's ring is in the Cube's L1 and holds the
bytes as pushed: the Cube reads the row-major bytes as 16x8 fractal blocks, silently wrong
numbers.  Reported at the TPOP, naming the TPUSH; the fix is a TMOV of the Vec tile into an
NZ Vec tile before the TPUSH (TMOV converts layouts, keeping the matrix).  On A2A3 the same
kernel is correct: the ring is in GM and the Cube's TPOP TLOADs the ND rows into its NZ
tile, converting (pto-isa a2a3 ``popMatTileFromGMFiFo``).

Run:  ptopipe check examples/misuse/m22_layout_nd_into_nz.py --platform a5
"""
from ptopipe.isa import *
from _common import DEPTH, SLOT, T, scenario

RING_L1 = 0x40000    # A5: the V2C ring in the Cube's L1 (A2A3: local staging of popped tiles)


def cube(fifo, tiles):
    pipe = TPipe(0, DIR_V2C, SLOT, DEPTH, peers=(0,))(fifo, 0, RING_L1)
    b = Tile(TileType.Mat, float32, T, T, layout=TileLayout.NZ)     # the Cube wants NZ
    for i in range(2):
        TPOP(pipe, b)                     # M22: pops NZ  <- where
        TFREE(pipe)


def vector(x, fifo, tiles):
    pipe = TPipe(0, DIR_V2C, SLOT, DEPTH, peers=(0,))(fifo, 0, RING_L1)
    v = Tile(TileType.Vec, float32, T, T, addr=0x0)                 # ND (the Vec default)
    TLOAD(v, x)
    for i in range(2):
        TPUSH(pipe, v)                    # M22: pushes ND


SCENARIO = scenario("m22_layout_nd_into_nz", cube, (vector, None), __doc__)
