"""M9: the Cube stores a tile to GM and AIV0 loads the same GM region with no flag
between them: a data race naming both accesses (the order the simulator happens to
run them in does not matter: nothing orders them on the hardware).

Run:  ptopipe check examples/misuse/m9_gm_race.py [--platform a5]
"""
from ptopipe.isa import *
from _common import T, scenario


def cube(x, out):
    a = Tile(TileType.Mat, float32, T, T, addr=0x0)
    TLOAD(a, x)
    TSTORE(out, a)                        # M9: write out
    # missing: a TPUSH / flag SET that AIV0 waits for


def vector(out):
    v = Tile(TileType.Vec, float32, T, T, addr=0x0)
    TLOAD(v, out)                         # M9: read out, unordered with the Cube's TSTORE  <- where
    TMULS(v, v, 2.0)


SCENARIO = scenario("m9_gm_race", cube, (vector, None), __doc__)
