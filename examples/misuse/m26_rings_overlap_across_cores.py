"""M26: two one-lane pipes, FlagID 0 to AIV0 and FlagID 4 to AIV1, whose GM rings overlap
(the second ring starts one slot into the first).  Each Vector core binds only its own
pipe, so the two pipes are created by different cores; the Cube binds both, and its
second binding is a MemoryConflictError naming both rings.  Without it, the rings would
silently overwrite each other's slots: a wrong result as the only symptom.

Run:  ptopipe check examples/misuse/m26_rings_overlap_across_cores.py [--platform a5]
"""
from ptopipe.isa import *
from _common import SLOT, T, scenario


def _dir():
    return DIR_C2V_GM if platform_id() == PLATFORM_A5 else DIR_C2V     # rings in GM on A5 too


def cube(fifo, tiles):
    a = TPipe(0, _dir(), SLOT, 2, peers=(0,))(fifo)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for i in range(3):                    # fills ring A and blocks until AIV0 frees a slot
        TPUSH(a, acc)
    b = TPipe(4, _dir(), SLOT, 2, peers=(1,))(fifo.data() + SLOT)   # M26: one slot into ring A  <- where
    for i in range(3):
        TPUSH(b, acc)


def vector(fifo):
    if get_subblockid() == 0:
        pipe = TPipe(0, _dir(), SLOT, 2, peers=(0,))(fifo)
    else:
        pipe = TPipe(4, _dir(), SLOT, 2, peers=(1,))(fifo.data() + SLOT)   # M26: AIV1 creates it
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(3):
        TPOP(pipe, t)
        TFREE(pipe)


SCENARIO = scenario("m26_rings_overlap_across_cores", cube, vector, __doc__)
