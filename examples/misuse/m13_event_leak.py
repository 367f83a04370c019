"""M13: an event leak.  Each iteration records (PIPE_MTE3, PIPE_MTE2) after its TSTORE "for
the next load", and the next iteration waits for it - but the last iteration records it too
and nothing consumes that set (PTOAS's missing tail drain).  Reported as a LeakError at
kernel end naming the set_flag.

Run:  ptopipe check examples/misuse/m13_event_leak.py [--platform a5]
"""
from ptopipe.isa import *
from _events import T, scenario, tile


def vector(x, y, tiles):
    buf = Tile(TileType.Vec, float32, T, T, addr=0x0)
    for i in range(tiles):
        if i > 0:
            wait_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID2)
        TLOAD(buf, tile(x, i))
        set_flag(PIPE_MTE2, PIPE_V, EVENT_ID2)
        wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID2)
        TMULS(buf, buf, 2.0)
        set_flag(PIPE_V, PIPE_MTE3, EVENT_ID2)
        wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID2)
        TSTORE(tile(y, i), buf)
        set_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID2)   # M13: the last one is never waited for  <- where


SCENARIO = scenario("m13_event_leak", vector, __doc__)
