"""S1 cv_split: Cube computes A@B tile by tile and pushes each accumulator tile (C2V);
each Vector core pops its half (UP_DOWN: rows, LEFT_RIGHT: columns), adds the bias
half and stores it.  out = A @ B + bias.

Run:  ptopipe run examples/scenarios/s1_cv_split.py [--platform a5] [--variant f16_lr_d1_m32 | all]
"""
import numpy as np

from ptopipe import Scenario
from ptopipe.isa import *

TM, K, N = 16, 32, 32                 # one ring slot = one 16x32 f32 accumulator tile
SLOT = TM * N * 4
RING_UB = 0x10000                     # consumer-side ring / staging region in each AIV's UB


def cube(a, b, fifo, M, depth, split):
    dt = a.dtype
    pipe = TPipe(0, DIR_C2V, SLOT, depth)(fifo, RING_UB, 0)
    a_l1 = Tile(TileType.Mat, dt, TM, K, addr=0x0)
    b_l1 = Tile(TileType.Mat, dt, K, N, addr=0x4000)
    a_l0 = Tile(TileType.Left, dt, TM, K, addr=0x0)
    b_l0 = Tile(TileType.Right, dt, K, N, addr=0x0)
    acc = Tile(TileType.Acc, float32, TM, N, addr=0x0)
    TLOAD(b_l1, b)
    TMOV(b_l0, b_l1)
    for i in range(M // TM):
        TLOAD(a_l1, GlobalTensor(a.data() + i * TM * K, (TM, K)))
        TMOV(a_l0, a_l1)
        TMATMUL(acc, a_l0, b_l0)
        TPUSH(pipe, acc, split)


def vector(bias, out, fifo, M, depth, split):
    sub = get_subblockid()
    r, c = (TM // 2, N) if split == TILE_UP_DOWN else (TM, N // 2)
    pipe = TPipe(0, DIR_C2V, SLOT, depth)(fifo, RING_UB, 0)
    part = Tile(TileType.Vec, float32, r, c)          # bound to the slot by TPOP
    b_ub = Tile(TileType.Vec, float32, r, c, addr=0x0)
    o_ub = Tile(TileType.Vec, float32, r, c, addr=0x1000)
    for i in range(M // TM):
        row0 = i * TM + (sub * r if split == TILE_UP_DOWN else 0)
        col0 = sub * c if split == TILE_LEFT_RIGHT else 0
        TPOP(pipe, part, split)
        TLOAD(b_ub, GlobalTensor(bias.data() + row0 * N + col0, (r, c), (N, 1)))
        TADD(o_ub, part, b_ub)
        TFREE(pipe)
        TSTORE(GlobalTensor(out.data() + row0 * N + col0, (r, c), (N, 1)), o_ub)


def make_args(rng, M=64, depth=4, split=TILE_UP_DOWN, dtype="f32"):
    dt = np.float16 if dtype == "f16" else np.float32
    return dict(a=rng.integers(-3, 4, (M, K)).astype(dt), b=rng.integers(-3, 4, (K, N)).astype(dt),
                bias=rng.integers(-8, 9, (M, N)).astype(np.float32), out=np.zeros((M, N), np.float32),
                fifo=gm_buffer(depth * SLOT), M=M, depth=depth, split=split)


def golden(args, **_):
    return {"out": args["a"].astype(np.float32) @ args["b"].astype(np.float32) + args["bias"]}


VARIANTS = {f"{dt}_{'ud' if sp == TILE_UP_DOWN else 'lr'}_d{d}_m{m}": dict(M=m, depth=d, split=sp, dtype=dt)
            for dt in ("f32", "f16") for sp in (TILE_UP_DOWN, TILE_LEFT_RIGHT) for d in (1, 4)
            for m in (16, 32, 64)}
VARIANTS = {"default": dict(M=64, depth=4, split=TILE_UP_DOWN, dtype="f32"), **VARIANTS}

SCENARIO = Scenario("s1_cv_split", cube, vector, make_args, golden, VARIANTS, doc=__doc__)
