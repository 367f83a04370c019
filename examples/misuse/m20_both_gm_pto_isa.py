"""M20: protocol="pto-isa" with a DIR_BOTH_GM pipe.  On A5, pto-isa's TALLOC / TPOP add no
V2C offset to GM_SLOT_BUFFER for is_both_gm (both ways share one GM ring) and its Vector
consumer waits for C2V data on flag FlagID+1 while the Cube records FlagID, so the first C2V
TPOP on a Vector core never returns.  On A2A3 there are no *_GM directions at all.  Both are
a ConfigError at the binding.

Run:  ptopipe check examples/misuse/m20_both_gm_pto_isa.py --protocol pto-isa --platform a5
"""
from ptopipe.isa import *
from _common import SLOT, T, scenario


def _pipe(fifo):
    return TPipe(0, DIR_BOTH_GM, SLOT, 2)(fifo)   # M20: one GM ring for both ways  <- where


def cube(fifo, tiles):
    pipe = _pipe(fifo)
    g = GlobalTensor(fifo, (T, T))
    for i in range(tiles):
        TPOP(pipe, g, TILE_UP_DOWN)
        TFREE(pipe, g)
        TALLOC(pipe, g, TILE_UP_DOWN)     # (both lanes pop their halves: a split push)
        TPUSH(pipe, g, TILE_UP_DOWN)


def vector(fifo, tiles):
    pipe = _pipe(fifo)
    g = GlobalTensor(fifo, (T // 2, T))
    for i in range(tiles):
        TALLOC(pipe, g, TILE_UP_DOWN)
        TPUSH(pipe, g, TILE_UP_DOWN)
        TPOP(pipe, g, TILE_UP_DOWN)
        TFREE(pipe, g)


SCENARIO = scenario("m20_both_gm_pto_isa", cube, vector, __doc__, protocol="pto-isa")
