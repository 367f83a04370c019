"""M31: an overwrite that depends on lane skew.  The Cube pushes each 16x16 result tile to
both AIVs (UP_DOWN: AIV0 the top rows, AIV1 the bottom rows), and each lane stores its
half of `out`.  AIV0 also zero-fills the whole of `out` when it starts - nothing orders
that with AIV1's stores.  Under the default schedule the lanes start together and the
fill lands first; when AIV0 starts late (lane skew) or is scheduled late, its fill
overwrites rows AIV1 already stored: wrong numbers.  The race checker reports the
unordered pair of TSTOREs under every schedule.

Run:  ptopipe check examples/misuse/m31_lane_init_overwrite.py [--platform a5]
"""
import numpy as np

from ptopipe import Scenario
from ptopipe.isa import *
from _common import DEPTH, RING_UB, SLOT, T

H = T // 2


def cube(x, b, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH)(fifo, RING_UB, 0)
    a_l1 = Tile(TileType.Mat, float32, T, T, addr=0x0)
    b_l1 = Tile(TileType.Mat, float32, T, T, addr=0x1000)
    a_l0 = Tile(TileType.Left, float32, T, T, addr=0x0)
    b_l0 = Tile(TileType.Right, float32, T, T, addr=0x0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    TLOAD(b_l1, b)
    TMOV(b_l0, b_l1)
    for i in range(tiles):
        TLOAD(a_l1, GlobalTensor(x.data() + i * T * T, (T, T)))
        TMOV(a_l0, a_l1)
        TMATMUL(acc, a_l0, b_l0)
        TPUSH(pipe, acc, TILE_UP_DOWN)


def vector(out, fifo, tiles):
    sub = get_subblockid()
    pipe = TPipe(0, DIR_C2V, SLOT, DEPTH)(fifo, RING_UB, 0)
    if sub == 0:                          # lane 0 "initialises" the output: all of it
        zero = Tile(TileType.Vec, float32, T, T, addr=0x2000)
        TEXPANDS(zero, 0.0)
        for i in range(tiles):
            TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), zero)   # M31: AIV1's rows too
    part = Tile(TileType.Vec, float32, H, T)
    o = Tile(TileType.Vec, float32, H, T, addr=0x0)
    for i in range(tiles):
        TPOP(pipe, part, TILE_UP_DOWN)
        TADDS(o, part, 1.0)
        TFREE(pipe)
        TSTORE(GlobalTensor(out.data() + (i * T + sub * H) * T, (H, T)), o)   # M31  <- where


def make_args(rng, tiles=4):
    return dict(x=rng.integers(-3, 4, (tiles * T, T)).astype(np.float32),
                b=rng.integers(-3, 4, (T, T)).astype(np.float32),
                out=np.zeros((tiles * T, T), np.float32), fifo=gm_buffer(DEPTH * SLOT), tiles=tiles)


def golden(args, **_):
    return {"out": args["x"] @ args["b"] + 1.0}


SCENARIO = Scenario("m31_lane_init_overwrite", cube, vector, make_args, golden, doc=__doc__)
