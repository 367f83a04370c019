"""S2 cv_nosplit: like S1, but one Vector core (AIV0) consumes whole accumulator tiles
(TILE_NO_SPLIT, pipe peers=(0,)).  Cube: TLOAD A,B -> TMATMUL -> TPUSH acc; AIV0: TPOP the
whole 16xN tile -> TADD bias -> TSTORE.  Depth 2 and 8; M 16/32 (and 640 = 40 tiles at
depth 8), K=32, N 32/64.  out = A @ B + bias.

Run:  ptopipe run examples/scenarios/s2_cv_nosplit.py [--platform a5] [--variant all]
"""
import numpy as np

from ptopipe import Scenario
from ptopipe.isa import *

TM, K = 16, 32                        # one ring slot = one 16xN f32 accumulator tile
RING_UB = 0x10000                     # A5: C2V ring in AIV0's UB; A2A3: local staging


def slot_size(N):
    return TM * N * 4


def cube(a, b, fifo, M, N, depth):
    dt = a.dtype
    pipe = TPipe(0, DIR_C2V, slot_size(N), depth, peers=(0,))(fifo, RING_UB, 0)
    a_l1 = Tile(TileType.Mat, dt, TM, K, addr=0x0)
    b_l1 = Tile(TileType.Mat, dt, K, N, addr=0x4000)
    a_l0 = Tile(TileType.Left, dt, TM, K, addr=0x0)
    b_l0 = Tile(TileType.Right, dt, K, N, addr=0x0)
    acc = Tile(TileType.Acc, float32, TM, N, addr=0x0)
    TLOAD(b_l1, b)
    TMOV(b_l0, b_l1)
    src = GlobalTensor(a.data(), (TM, K))
    for i in range(M // TM):
        src.assign(a.data() + i * TM * K)
        TLOAD(a_l1, src)
        TMOV(a_l0, a_l1)
        TMATMUL(acc, a_l0, b_l0)
        TPUSH(pipe, acc, TILE_NO_SPLIT)


def vector(bias, out, fifo, M, N, depth):
    pipe = TPipe(0, DIR_C2V, slot_size(N), depth, peers=(0,))(fifo, RING_UB, 0)
    t = Tile(TileType.Vec, float32, TM, N)            # bound to the slot by TPOP
    b_ub = Tile(TileType.Vec, float32, TM, N, addr=0x0)
    o_ub = Tile(TileType.Vec, float32, TM, N, addr=0x4000)
    for i in range(M // TM):
        TPOP(pipe, t, TILE_NO_SPLIT)
        TLOAD(b_ub, GlobalTensor(bias.data() + i * TM * N, (TM, N)))
        TADD(o_ub, t, b_ub)
        TFREE(pipe)
        TSTORE(GlobalTensor(out.data() + i * TM * N, (TM, N)), o_ub)


def make_args(rng, M=640, N=64, depth=8, dtype="f32"):
    dt = np.float16 if dtype == "f16" else np.float32
    return dict(a=rng.integers(-3, 4, (M, K)).astype(dt), b=rng.integers(-3, 4, (K, N)).astype(dt),
                bias=rng.integers(-8, 9, (M, N)).astype(np.float32), out=np.zeros((M, N), np.float32),
                fifo=gm_buffer(depth * slot_size(N)), M=M, N=N, depth=depth)


def golden(args, **_):
    return {"out": args["a"].astype(np.float32) @ args["b"].astype(np.float32) + args["bias"]}


VARIANTS = {"default": dict(M=640, N=64, depth=8, dtype="f32")}
for _dt in ("f32", "f16"):
    for _d, _ms in ((2, (16, 32)), (8, (16, 32, 640))):
        for _m in _ms:
            for _n in (32, 64):
                VARIANTS[f"{_dt}_d{_d}_m{_m}_n{_n}"] = dict(M=_m, N=_n, depth=_d, dtype=_dt)

SCENARIO = Scenario("s2_cv_nosplit", cube, (vector, None), make_args, golden, VARIANTS, doc=__doc__)
