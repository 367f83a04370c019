"""M12: a loop-carried event primed for one ID but not the other.  A double-buffered loop
selects its buffer and its event ID by ``i % 2``; before the loop only EVENT_ID0 of
(PIPE_V, PIPE_MTE2) is set, so the wait of iteration 1 (EVENT_ID1) has no earlier set: the
MTE2 pipe hangs there (on the device: an AICore timeout).  Reported as a DeadlockError at
that wait.

Run:  ptopipe check examples/misuse/m12_misprimed_event.py [--platform a5]
"""
from ptopipe.isa import *
from _events import T, scenario, tile


def vector(x, y, tiles):
    bufs = [Tile(TileType.Vec, float32, T, T, addr=a) for a in (0x0, 0x400)]
    dst = Tile(TileType.Vec, float32, T, T, addr=0x800)
    set_flag(PIPE_V, PIPE_MTE2, EVENT_ID0)      # M12: primes EVENT_ID0 only (EVENT_ID1 missing)
    for i in range(tiles):
        e = i % 2
        wait_flag(PIPE_V, PIPE_MTE2, e)         # M12: EVENT_ID1 never set before i = 1  <- where
        TLOAD(bufs[e], tile(x, i))
        set_flag(PIPE_MTE2, PIPE_V, e)
        wait_flag(PIPE_MTE2, PIPE_V, e)
        TADDS(dst, bufs[e], 1.0)
        set_flag(PIPE_V, PIPE_MTE2, e)
        set_flag(PIPE_V, PIPE_MTE3, e)
        wait_flag(PIPE_V, PIPE_MTE3, e)
        TSTORE(tile(y, i), dst)
        pipe_barrier(PIPE_ALL)
    wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID0)
    wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID1)


SCENARIO = scenario("m12_misprimed_event", vector, __doc__)
