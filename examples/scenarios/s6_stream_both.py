"""S6 stream_both: a bidirectional stream over the 8 N-tiles of B (DIR_BOTH, SlotNum 4 per
direction, SlotSize 8 KiB, TILE_LEFT_RIGHT).  For every N-tile j each Vector core pushes
its column half of (A + 1) (V2C, 32x32 f32); the Cube TPOPs the whole 32x64 tile,
multiplies it with the 64x64 tile B[:, j] and pushes the 32x64 accumulator (C2V); each
Vector core TPOPs its 32x32 column half, adds c_prev and stores it.  The Vector cores
run LAG tiles ahead on the V2C ring.
A 32x64, B 64x512, c_prev 32x512, f32.  out = c_prev + (A + 1) @ B.

The default variant sets the rings up with the seed-003 API (aic/aiv_initialize_pipe with
DIR_C2V | DIR_V2C, which gives SLOT_NUM 4 per direction); "tpipe" declares the same pipe
as TPipe<0, DIR_BOTH, 8192, 4>.

Run:  ptopipe run examples/scenarios/s6_stream_both.py [--platform a5] [--variant tpipe]
"""
import numpy as np

from ptopipe import Scenario
from ptopipe.isa import *

M, K, N = 32, 64, 512
TN = 64
N_TILES = N // TN                     # 8 tiles through 4-slot rings
SLOT = 8 * 1024                       # a 32x64 f32 tile, either way
LAG = 2
RING_UB = 0x20000                     # A5: C2V ring in each AIV's UB; A2A3: local staging
RING_L1 = 0x40000                     # A5: V2C ring in the Cube's L1; A2A3: local staging


def _pipe(fifo, api, cube_side):
    if api == "init":
        init = aic_initialize_pipe if cube_side else aiv_initialize_pipe
        return init(DIR_C2V | DIR_V2C, SLOT, fifo, RING_UB, RING_L1)
    return TPipe(0, DIR_BOTH, SLOT, 4)(fifo, RING_UB, RING_L1)


def cube(b, fifo, api):
    pipe = _pipe(fifo, api, True)
    x = Tile(TileType.Mat, float32, M, K)               # bound to the V2C slot by TPOP
    x_l0 = Tile(TileType.Left, float32, M, K, addr=0x0)
    b_l1 = Tile(TileType.Mat, float32, K, TN, addr=0x0)
    b_l0 = Tile(TileType.Right, float32, K, TN, addr=0x0)
    acc = Tile(TileType.Acc, float32, M, TN, addr=0x0)
    for j in range(N_TILES):
        TPOP(pipe, x, TILE_LEFT_RIGHT)
        TMOV(x_l0, x)
        TFREE(pipe)
        TLOAD(b_l1, GlobalTensor(b.data() + j * TN, (K, TN), (N, 1)))
        TMOV(b_l0, b_l1)
        TMATMUL(acc, x_l0, b_l0)
        TPUSH(pipe, acc, TILE_LEFT_RIGHT)


def vector(a, c_prev, out, fifo, api):
    pipe = _pipe(fifo, api, False)
    sub = get_subblockid()
    hk, hn = K // 2, TN // 2
    a_ub = Tile(TileType.Vec, float32, M, hk, addr=0x0)
    a1_ub = Tile(TileType.Vec, float32, M, hk, addr=0x1000)
    c_ub = Tile(TileType.Vec, float32, M, hn, addr=0x2000)
    o_ub = Tile(TileType.Vec, float32, M, hn, addr=0x3000)
    y = Tile(TileType.Vec, float32, M, hn)              # bound to the C2V slot by TPOP
    TLOAD(a_ub, GlobalTensor(a.data() + sub * hk, (M, hk), (K, 1)))
    TADDS(a1_ub, a_ub, 1.0)
    for i in range(N_TILES + LAG):
        if i < N_TILES:
            TPUSH(pipe, a1_ub, TILE_LEFT_RIGHT)
        j = i - LAG
        if j >= 0:
            col = j * TN + sub * hn
            TPOP(pipe, y, TILE_LEFT_RIGHT)
            TLOAD(c_ub, GlobalTensor(c_prev.data() + col, (M, hn), (N, 1)))
            TADD(o_ub, y, c_ub)
            TFREE(pipe)
            TSTORE(GlobalTensor(out.data() + col, (M, hn), (N, 1)), o_ub)


def make_args(rng, api="init"):
    return dict(a=rng.integers(-4, 5, (M, K)).astype(np.float32),
                b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                c_prev=rng.integers(-100, 101, (M, N)).astype(np.float32),
                out=np.zeros((M, N), np.float32), fifo=gm_buffer(2 * 4 * SLOT), api=api)


def golden(args, **_):
    return {"out": args["c_prev"] + (args["a"] + 1) @ args["b"]}


SCENARIO = Scenario("s6_stream_both", cube, vector, make_args, golden,
                    {"default": dict(api="init"), "tpipe": dict(api="tpipe")}, doc=__doc__)
