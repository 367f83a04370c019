"""S4 both_ways: one bidirectional pipe (DIR_BOTH, SlotNum 4 per direction).  Per row tile
of 16 rows, the Vector cores compute their half of (A + B) and TPUSH it (V2C); the Cube
TPOPs the whole 16x64 tile, multiplies it with D and TPUSHes the 16x128 accumulator back
(C2V); each Vector core TPOPs its half, subtracts F and stores it.  The Vector cores run
LAG tiles ahead on the V2C ring so that both rings hold data at once.
M=128, K=64, N=128, f32; split UP_DOWN (row halves) or LEFT_RIGHT (column halves).
out = (A + B) @ D - F.

Run:  ptopipe run examples/scenarios/s4_both_ways.py [--platform a5] [--variant lr]
"""
import numpy as np

from ptopipe import Scenario
from ptopipe.isa import *

M, K, N = 128, 64, 128
TM = 16                               # rows per ring tile: 8 tiles through 4-slot rings
SLOT = TM * max(K, N) * 4             # 8 KiB: one 16x128 f32 tile (the 16x64 one fits too)
DEPTH = 4
LAG = 2                               # V2C tiles the Vector cores push before the first TPOP
RING_UB = 0x20000                     # A5: C2V ring in each AIV's UB; A2A3: local staging
RING_L1 = 0x40000                     # A5: V2C ring in the Cube's L1; A2A3: local staging


def _pipe(fifo):
    return TPipe(0, DIR_BOTH, SLOT, DEPTH)(fifo, RING_UB, RING_L1)


def cube(d, fifo, split):
    pipe = _pipe(fifo)
    d_l1 = Tile(TileType.Mat, float32, K, N, addr=0x0)
    d_l0 = Tile(TileType.Right, float32, K, N, addr=0x0)
    x_l0 = Tile(TileType.Left, float32, TM, K, addr=0x0)
    acc = Tile(TileType.Acc, float32, TM, N, addr=0x0)
    x = Tile(TileType.Mat, float32, TM, K)            # bound to the V2C slot by TPOP
    TLOAD(d_l1, d)
    TMOV(d_l0, d_l1)
    for i in range(M // TM):
        TPOP(pipe, x, split)
        TMOV(x_l0, x)
        TFREE(pipe)
        TMATMUL(acc, x_l0, d_l0)
        TPUSH(pipe, acc, split)


def vector(a, b, f, out, fifo, split):
    pipe = _pipe(fifo)
    sub = get_subblockid()
    ud = split == TILE_UP_DOWN
    xr, xc = (TM // 2, K) if ud else (TM, K // 2)     # this core's part of an (A+B) tile
    yr, yc = (TM // 2, N) if ud else (TM, N // 2)     # this core's part of a result tile
    a_ub = Tile(TileType.Vec, float32, xr, xc, addr=0x0)
    b_ub = Tile(TileType.Vec, float32, xr, xc, addr=0x2000)
    s_ub = Tile(TileType.Vec, float32, xr, xc, addr=0x4000)
    f_ub = Tile(TileType.Vec, float32, yr, yc, addr=0x8000)
    o_ub = Tile(TileType.Vec, float32, yr, yc, addr=0xC000)
    y = Tile(TileType.Vec, float32, yr, yc)            # bound to the C2V slot by TPOP
    tiles = M // TM
    for i in range(tiles + LAG):
        if i < tiles:
            r0, c0 = i * TM + (sub * xr if ud else 0), (0 if ud else sub * xc)
            TLOAD(a_ub, GlobalTensor(a.data() + r0 * K + c0, (xr, xc), (K, 1)))
            TLOAD(b_ub, GlobalTensor(b.data() + r0 * K + c0, (xr, xc), (K, 1)))
            TADD(s_ub, a_ub, b_ub)
            TPUSH(pipe, s_ub, split)
        j = i - LAG
        if j >= 0:
            r0, c0 = j * TM + (sub * yr if ud else 0), (0 if ud else sub * yc)
            TPOP(pipe, y, split)
            TLOAD(f_ub, GlobalTensor(f.data() + r0 * N + c0, (yr, yc), (N, 1)))
            TSUB(o_ub, y, f_ub)
            TFREE(pipe)
            TSTORE(GlobalTensor(out.data() + r0 * N + c0, (yr, yc), (N, 1)), o_ub)


def make_args(rng, split=TILE_UP_DOWN):
    return dict(a=rng.integers(-4, 5, (M, K)).astype(np.float32),
                b=rng.integers(-4, 5, (M, K)).astype(np.float32),
                d=rng.integers(-3, 4, (K, N)).astype(np.float32),
                f=rng.integers(-50, 51, (M, N)).astype(np.float32),
                out=np.zeros((M, N), np.float32), fifo=gm_buffer(2 * DEPTH * SLOT), split=split)


def golden(args, **_):
    return {"out": (args["a"] + args["b"]) @ args["d"] - args["f"]}


SCENARIO = Scenario("s4_both_ways", cube, vector, make_args, golden,
                    {"default": dict(split=TILE_UP_DOWN), "ud": dict(split=TILE_UP_DOWN),
                     "lr": dict(split=TILE_LEFT_RIGHT)}, doc=__doc__)
