"""M24: a V2C pipe with two producer lanes (peers AIV0, AIV1; TILE_NO_SPLIT), where the
Vector kernel lets only lane 0 do the work (``if get_subblockid() != 0: return``): lane 1
never binds the pipe, so the Cube's TPOP waits forever for AIV1's ready signal.  The fix
is the no-split replay: lane 1 runs the same TPUSH sequence with an empty valid shape
(no data moves, the handshake does), or the pipe is declared with peers=(0,).  On A5 a
NO_SPLIT pipe has one lane, AIV0 (the Cube waits for AIV0's ready signal only,
docs/protocols.md): there this kernel is correct and runs clean.

Run:  ptopipe check examples/misuse/m24_v2c_lane1_returns.py
"""
from ptopipe.isa import *
from _common import DEPTH, SLOT, T, scenario

RING_L1 = 0x40000


def cube(fifo, tiles):
    pipe = TPipe(0, DIR_V2C, SLOT, DEPTH)(fifo, 0, RING_L1)         # lanes AIV0 and AIV1
    b = Tile(TileType.Mat, float32, T, T)
    for i in range(2):
        TPOP(pipe, b, TILE_NO_SPLIT)      # M24: waits for AIV1's ready  <- where
        TFREE(pipe)


def vector(x, fifo, tiles):
    if get_subblockid() != 0:
        return                            # M24: lane 1 never takes part
    pipe = TPipe(0, DIR_V2C, SLOT, DEPTH)(fifo, 0, RING_L1)
    v = Tile(TileType.Vec, float32, T, T, addr=0x0)
    TLOAD(v, x)
    for i in range(2):
        TPUSH(pipe, v, TILE_NO_SPLIT)


SCENARIO = scenario("m24_v2c_lane1_returns", cube, vector, __doc__)
