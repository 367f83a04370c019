"""S7 long_stream: the Cube streams 16x16 f32 tiles to one Vector core (NO_SPLIT) through
the seed-003 ring (aic/aiv_initialize_pipe): SLOT_NUM 8 when unidirectional, 4 when the
pipe is initialised bidirectional.  The Vector core doubles each tile.  Thousands of
tiles exercise wrap-around and back-pressure.  out[i] = (x[i] @ I) * 2.

Run:  ptopipe run examples/scenarios/s7_long_stream.py [--platform a5] [--variant bi]
"""
import numpy as np

from ptopipe import Scenario
from ptopipe.isa import *

T = 16
SLOT = T * T * 4
RING_UB = 0x8000       # A5: C2V ring in AIV0's UB (A2A3: local staging for the popped tile)
RING_L1 = 0x40000      # A5: V2C ring in the AIC's L1 (bidirectional variant)


def cube(x, eye, fifo, tiles, dir_mask):
    pipe = aic_initialize_pipe(dir_mask, SLOT, fifo, RING_UB, RING_L1, peers=(0,))
    x_l1 = Tile(TileType.Mat, float32, T, T, addr=0x0)
    e_l1 = Tile(TileType.Mat, float32, T, T, addr=0x400)
    x_l0 = Tile(TileType.Left, float32, T, T, addr=0x0)
    e_l0 = Tile(TileType.Right, float32, T, T, addr=0x0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    TLOAD(e_l1, eye)
    TMOV(e_l0, e_l1)
    src = GlobalTensor(x.data(), (T, T))
    for i in range(tiles):
        src.assign(x.data() + i * T * T)
        TLOAD(x_l1, src)
        TMOV(x_l0, x_l1)
        TMATMUL(acc, x_l0, e_l0)
        TPUSH(pipe, acc)


def vector(out, fifo, tiles, dir_mask):
    pipe = aiv_initialize_pipe(dir_mask, SLOT, fifo, RING_UB, RING_L1, peers=(0,))
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0x0)
    dst = GlobalTensor(out.data(), (T, T))
    for i in range(tiles):
        TPOP(pipe, t)
        TMULS(o, t, 2.0)
        TFREE(pipe)
        dst.assign(out.data() + i * T * T)
        TSTORE(dst, o)


def make_args(rng, tiles=1000, dir_mask=DIR_C2V):
    return dict(x=rng.integers(-100, 100, (tiles * T, T)).astype(np.float32),
                eye=np.eye(T, dtype=np.float32), out=np.zeros((tiles * T, T), np.float32),
                fifo=gm_buffer(2 * 8 * SLOT), tiles=tiles, dir_mask=dir_mask)


def golden(args, **_):
    return {"out": args["x"] * 2}


SCENARIO = Scenario("s7_long_stream", cube, (vector, None), make_args, golden,
                    {"default": dict(tiles=1000, dir_mask=DIR_C2V),
                     "bi": dict(tiles=1000, dir_mask=DIR_BOTH),
                     "long": dict(tiles=20000, dir_mask=DIR_C2V)}, doc=__doc__)
