"""M14: a two-slot prefetch (ping-pong) loop whose outcome depends on the trip count.

The loop is right: slot ``s = i % 2`` has its own "slot free" event (PIPE_V -> PIPE_MTE2,
EVENT_ID<s>), both primed before the loop and drained after it.  The tail after the loop
reuses slot 1 for one more tile, but waits for the release of *slot 0* (EVENT_ID0) - right
only when the last iteration used slot 0:

* even trip counts (>= 2): slot 1 was used last; the EVENT_ID0 set the tail consumes is older
  than slot 1's last read, so the tail's TLOAD races with the loop's TADD (DataRaceError at
  the tail's TLOAD naming the TADD; on the device: a wrong sum, sometimes);
* odd trip counts (and 0): no race, but the tail consumed EVENT_ID0, so the drain's
  wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID0) has no set left (DeadlockError at that wait; on the
  device: an AICore timeout).

The fix: the tail waits for the event of the slot it reuses (EVENT_ID1); ``fixed=True``.

Run:  ptopipe check examples/misuse/m14_pingpong_tail.py --variant all
"""
from ptopipe.isa import *
from _events import T, scenario, tile


def pingpong(x, y, tiles, fixed=False):
    slot = [Tile(TileType.Vec, float32, T, T, addr=a) for a in (0x0, 0x400)]
    acc = Tile(TileType.Vec, float32, T, T, addr=0x800)
    TEXPANDS(acc, 0.0)
    set_flag(PIPE_V, PIPE_MTE2, EVENT_ID0)              # prime: both slots free
    set_flag(PIPE_V, PIPE_MTE2, EVENT_ID1)
    for i in range(tiles):
        s = i % 2
        wait_flag(PIPE_V, PIPE_MTE2, s)
        TLOAD(slot[s], tile(x, i))
        set_flag(PIPE_MTE2, PIPE_V, s)
        wait_flag(PIPE_MTE2, PIPE_V, s)
        TADD(acc, acc, slot[s])                         # M14: reads slot s
        set_flag(PIPE_V, PIPE_MTE2, s)                  # slot s free again
    # the tail: one more tile, into slot 1
    wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID1 if fixed else EVENT_ID0)   # M14: the wrong slot's event
    TLOAD(slot[1], tile(x, tiles))                      # M14: the tail (even trip counts)  <- where
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID1)
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID1)
    TADD(acc, acc, slot[1])
    set_flag(PIPE_V, PIPE_MTE2, EVENT_ID1)
    wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID0)             # M14: drain (odd trip counts)  <- hang
    wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID1)
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0)
    TSTORE(tile(y, 0), acc)


def vector(x, y, tiles):
    pingpong(x, y, tiles)


def vector_fixed(x, y, tiles):
    pingpong(x, y, tiles, fixed=True)


def golden(args, tiles=4):
    y = args["y"].copy()
    y[0] = args["x"].sum(axis=0)
    return {"y": y}


VARIANTS = {"default": {"tiles": 4}, **{f"tiles{n}": {"tiles": n} for n in range(9)}}
SCENARIO = scenario("m14_pingpong_tail", vector, __doc__, VARIANTS)
FIXED = scenario("m14_pingpong_tail_fixed", vector_fixed, __doc__, VARIANTS, golden)
