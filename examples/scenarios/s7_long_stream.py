"""S7 long_stream: the Cube streams 16x16 f32 tiles to one Vector core (NO_SPLIT) through
the seed-003 ring (aic/aiv_initialize_pipe): SLOT_NUM 8 when unidirectional, 4 when the
pipe is initialised bidirectional.  The Vector core doubles each tile.  Thousands of
tiles exercise wrap-around and back-pressure.  out[i] = (x[i] @ I) * 2.

As a real kernel would, both sides work in blocks of BLOCK tiles: the Cube loads a block
with one TLOAD, computes it with one TMATMUL and pushes the block's 16x16 sub-tiles one
by one (Acc tiles aliasing the block accumulator, so each TPUSH waits for the TMATMUL's
event); the Vector core pops every tile individually, doubles it into its slice of a
block tile and stores the block with one TSTORE (after the last TMULS's event).

Run:  ptopipe run examples/scenarios/s7_long_stream.py [--platform a5] [--variant bi]
"""
import numpy as np

from ptopipe import Scenario
from ptopipe.isa import *

T = 16
BLOCK = 8
SLOT = T * T * 4
RING_UB = 0x8000       # A5: C2V ring in AIV0's UB (A2A3: local staging for the popped tile)
RING_L1 = 0x40000      # A5: V2C ring in the AIC's L1 (bidirectional variant)


def cube(x, eye, fifo, tiles, dir_mask):
    pipe = aic_initialize_pipe(dir_mask, SLOT, fifo, RING_UB, RING_L1, peers=(0,))
    x_l1 = Tile(TileType.Mat, float32, BLOCK * T, T, addr=0x0)
    e_l1 = Tile(TileType.Mat, float32, T, T, addr=0x2000)
    x_l0 = Tile(TileType.Left, float32, BLOCK * T, T, addr=0x0)
    e_l0 = Tile(TileType.Right, float32, T, T, addr=0x0)
    acc = Tile(TileType.Acc, float32, BLOCK * T, T, addr=0x0)
    acc_k = [Tile(TileType.Acc, float32, T, T, addr=k * SLOT) for k in range(BLOCK)]
    TLOAD(e_l1, eye)
    TMOV(e_l0, e_l1)
    for b in range(0, tiles, BLOCK):
        n = min(BLOCK, tiles - b)
        for t in (x_l1, x_l0, acc):
            t.SetValid(n * T, T)
        TLOAD(x_l1, GlobalTensor(x.data() + b * T * T, (n * T, T)))
        TMOV(x_l0, x_l1)
        done = TMATMUL(acc, x_l0, e_l0)
        for k in range(n):
            TPUSH(pipe, acc_k[k], TILE_NO_SPLIT, done)


def vector(out, fifo, tiles, dir_mask):
    pipe = aiv_initialize_pipe(dir_mask, SLOT, fifo, RING_UB, RING_L1, peers=(0,))
    t = Tile(TileType.Vec, float32, T, T)
    o_blk = Tile(TileType.Vec, float32, BLOCK * T, T, addr=0x0)
    o = [Tile(TileType.Vec, float32, T, T, addr=k * SLOT) for k in range(BLOCK)]
    for b in range(0, tiles, BLOCK):
        n = min(BLOCK, tiles - b)
        for k in range(n):
            TPOP(pipe, t)
            done = TMULS(o[k], t, 2.0)
            TFREE(pipe)
        o_blk.SetValid(n * T, T)
        TSTORE(GlobalTensor(out.data() + b * T * T, (n * T, T)), o_blk, done)


def make_args(rng, tiles=1000, dir_mask=DIR_C2V):
    return dict(x=rng.integers(-100, 100, (tiles * T, T)).astype(np.float32),
                eye=np.eye(T, dtype=np.float32), out=np.zeros((tiles * T, T), np.float32),
                fifo=gm_buffer(2 * 8 * SLOT), tiles=tiles, dir_mask=dir_mask)


def golden(args, **_):
    return {"out": args["x"] * 2}


SCENARIO = Scenario("s7_long_stream", cube, (vector, None), make_args, golden,
                    {"default": dict(tiles=1000, dir_mask=DIR_C2V),
                     "bi": dict(tiles=1000, dir_mask=DIR_BOTH),
                     "odd": dict(tiles=1003, dir_mask=DIR_C2V),
                     "long": dict(tiles=20000, dir_mask=DIR_C2V)}, doc=__doc__)
