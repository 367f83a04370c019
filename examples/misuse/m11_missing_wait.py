"""M11: a missing wait_flag in the manual synchronisation mode.  The loop records
(PIPE_V, PIPE_MTE2) after the vector op has read the input buffer, but never waits for it:
the next iteration's TLOAD (MTE2) overwrites the buffer the previous TADDS (V) may still be
reading.  Reported as a DataRaceError at the TLOAD naming the TADDS (on the device: silently
wrong numbers, depending on timing).

Run:  ptopipe check examples/misuse/m11_missing_wait.py [--platform a5]
"""
from ptopipe.isa import *
from _events import T, scenario, tile


def vector(x, y, tiles):
    src = Tile(TileType.Vec, float32, T, T, addr=0x0)
    dst = Tile(TileType.Vec, float32, T, T, addr=0x400)
    set_flag(PIPE_MTE3, PIPE_V, EVENT_ID0)              # prime: dst free
    for i in range(tiles):
        TLOAD(src, tile(x, i))             # M11: overwrites src, no wait for V  <- where
        set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
        wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
        wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID0)
        TADDS(dst, src, 1.0)                # M11: still reading src
        set_flag(PIPE_V, PIPE_MTE2, EVENT_ID0)          # recorded, never waited for
        set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
        wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
        TSTORE(tile(y, i), dst)
        set_flag(PIPE_MTE3, PIPE_V, EVENT_ID0)
    wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID0)


SCENARIO = scenario("m11_missing_wait", vector, __doc__)
