"""M32: protocol="pto-isa" on A5, a split C2V ring of SlotNum 16 (A5's deepest FIFO).  The
Cube paces its pushes by a token AIV0 sends each iteration; AIV1 pops on its own.  pto-isa's
producer waits for a free slot only from push #SlotNum on, so a lane that falls 16 tiles
behind (AIV1, starved by the schedule) gets a 16th ready SET on a counter flag that holds
at most 15: the flag overflows.  The default schedule and most random ones keep the lanes
in step; a pct schedule (random core priorities: AIV1 last) starves AIV1 at once - which
is why `ptopipe check` mixes pct, random and exhaustive schedules by default.  A ring of
SlotNum 15 or less cannot overflow (variant depth14: 14, as pto-isa also needs an even
SlotNum).

Run:  ptopipe check examples/misuse/m32_lane_starvation.py --platform a5
"""
import numpy as np

from ptopipe import Scenario
from ptopipe.isa import *

T = 16
SLOT = T * T * 4
TOK = 8 * 16 * 4
DEPTH = 16
TILES = 24


def cube(a, fifo, tfifo, tiles, depth):
    pipe = TPipe(0, DIR_C2V, SLOT, depth)(fifo, 0x8000)
    go = TPipe(2, DIR_V2C, TOK, 2, peers=(0,))(tfifo, 0, 0x20000)
    m = Tile(TileType.Mat, float32, T, T, addr=0)
    left = Tile(TileType.Left, float32, T, T, addr=0)
    right = Tile(TileType.Right, float32, T, T, addr=0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    tok = Tile(TileType.Mat, float32, 8, 16)
    TLOAD(m, a)
    TMOV(left, m)
    TMOV(right, m)
    TMATMUL(acc, left, right)
    for i in range(tiles):
        TPOP(go, tok)                     # AIV0's token paces the Cube
        TFREE(go)
        TPUSH(pipe, acc, TILE_UP_DOWN)    # M32: the 16th push AIV1 has not popped  <- where


def vector(out, fifo, tfifo, tiles, depth):
    pipe = TPipe(0, DIR_C2V, SLOT, depth)(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, T // 2, T)
    o = Tile(TileType.Vec, float32, T // 2, T, addr=0)
    lane = get_subblockid()
    if lane == 0:
        go = TPipe(2, DIR_V2C, TOK, 2, peers=(0,))(tfifo, 0, 0x20000)
        tok = Tile(TileType.Vec, float32, 8, 16, addr=0x1000)
        TEXPANDS(tok, 1.0)
    for i in range(tiles):
        if lane == 0:
            TPUSH(go, tok)
        TPOP(pipe, t, TILE_UP_DOWN)
        TADDS(o, t, 1.0)
        TFREE(pipe)
    TSTORE(GlobalTensor(out.data() + lane * (T // 2) * T, (T // 2, T)), o)


def make_args(rng, depth=DEPTH):
    a = rng.integers(-2, 3, (T, T)).astype(np.float32)
    return dict(a=a, out=np.zeros((T, T), np.float32), fifo=gm_buffer(depth * SLOT),
                tfifo=gm_buffer(2 * TOK), tiles=TILES, depth=depth)


def golden(args, **_):
    return {"out": args["a"] @ args["a"] + 1}


SCENARIO = Scenario("m32_lane_starvation", cube, vector, make_args, golden,
                    {"default": {}, "depth14": {"depth": 14}}, doc=__doc__, protocol="pto-isa")
