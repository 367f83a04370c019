"""S3 vc_dequant: Vector -> Cube (V2C, depth 2).  The Vector cores dequantise the
quantised weight B (int8 or int16) one K-tile of 64 rows at a time,
dequant(q) = (q - offset) * scale in f32 (int8 converts through f16: TCVT has no
int8 -> f32), and TPUSH the Vec tiles; the Cube TPOPs each
K-tile as a Mat tile, moves it to L0B and accumulates A[:, k-tile] @ B_k with TMATMUL
(first K-tile) / TMATMUL_ACC.  M=16, K 64/128/256, N 32/64.
Split: UP_DOWN (each AIV dequantises half the rows of a K-tile), LEFT_RIGHT (half the
columns) or NO_SPLIT (AIV0 alone produces whole K-tiles, pipe peers=(0,)).
out = A @ dequant(B).

Run:  ptopipe run examples/scenarios/s3_vc_dequant.py [--platform a5] [--variant all]
"""
import numpy as np

from ptopipe import Scenario
from ptopipe.isa import *

M, TK = 16, 64                        # rows of A; one ring slot = one 64xN f32 K-tile of B
DEPTH = 2
RING_L1 = 0x40000                     # A5: V2C ring in the Cube's L1; A2A3: local staging
SPLITS = {"ud": TILE_UP_DOWN, "lr": TILE_LEFT_RIGHT, "ns": TILE_NO_SPLIT}


def _pipe(N, split, fifo):
    peers = (0,) if split == TILE_NO_SPLIT else (0, 1)
    return TPipe(0, DIR_V2C, TK * N * 4, DEPTH, peers=peers)(fifo, 0, RING_L1)


def cube(a, out, fifo, K, N, split):
    pipe = _pipe(N, split, fifo)
    a_l1 = Tile(TileType.Mat, float32, M, K, addr=0x0)
    a_l0 = Tile(TileType.Left, float32, M, TK, addr=0x0)
    b_l0 = Tile(TileType.Right, float32, TK, N, addr=0x0)
    acc = Tile(TileType.Acc, float32, M, N, addr=0x0)
    b_k = Tile(TileType.Mat, float32, TK, N)          # bound to the slot by TPOP
    TLOAD(a_l1, a)
    for kt in range(K // TK):
        TPOP(pipe, b_k, split)
        TMOV(b_l0, b_k)
        TFREE(pipe)
        TEXTRACT(a_l0, a_l1, 0, kt * TK)
        if kt == 0:
            TMATMUL(acc, a_l0, b_l0)
        else:
            TMATMUL_ACC(acc, acc, a_l0, b_l0)
    TSTORE(out, acc)


def vector(q, fifo, K, N, split, offset, scale):
    sub = get_subblockid()
    if split == TILE_NO_SPLIT and sub != 0:
        return                        # NO_SPLIT: AIV0 alone produces whole K-tiles
    pipe = _pipe(N, split, fifo)
    r, c = {TILE_UP_DOWN: (TK // 2, N), TILE_LEFT_RIGHT: (TK, N // 2)}.get(split, (TK, N))
    q_ub = Tile(TileType.Vec, q.dtype, r, c, addr=0x0)
    f_ub = Tile(TileType.Vec, float32, r, c, addr=0x4000)
    d_ub = Tile(TileType.Vec, float32, r, c, addr=0x8000)
    h_ub = Tile(TileType.Vec, float16, r, c, addr=0xC000)
    for kt in range(K // TK):
        row0 = kt * TK + (sub * r if split == TILE_UP_DOWN else 0)
        col0 = sub * c if split == TILE_LEFT_RIGHT else 0
        TLOAD(q_ub, GlobalTensor(q.data() + row0 * N + col0, (r, c), (N, 1)))
        if q.dtype.itemsize == 1:     # TCVT has no int8 -> f32: through f16, which holds every int8
            TCVT(h_ub, q_ub)
            TCVT(f_ub, h_ub)
        else:
            TCVT(f_ub, q_ub)
        TSUBS(f_ub, f_ub, offset)
        TMULS(d_ub, f_ub, scale)
        TPUSH(pipe, d_ub, split)


def make_args(rng, K=256, N=64, split=TILE_UP_DOWN, qtype="int8"):
    qt = np.int8 if qtype == "int8" else np.int16
    lo, hi = (-128, 128) if qt is np.int8 else (-2000, 2000)
    return dict(a=rng.integers(-4, 5, (M, K)).astype(np.float32),
                q=rng.integers(lo, hi, (K, N)).astype(qt),
                out=np.zeros((M, N), np.float32), fifo=gm_buffer(DEPTH * TK * N * 4),
                K=K, N=N, split=split, offset=float(rng.integers(-8, 9)), scale=0.5)


def golden(args, **_):
    deq = (args["q"].astype(np.float32) - np.float32(args["offset"])) * np.float32(args["scale"])
    return {"out": args["a"] @ deq}


VARIANTS = {"default": dict(K=256, N=64, split=TILE_UP_DOWN, qtype="int8")}
for _q in ("int8", "int16"):
    for _s, _sp in SPLITS.items():
        for _k in (64, 128, 256):
            for _n in (32, 64):
                VARIANTS[f"{_q}_{_s}_k{_k}_n{_n}"] = dict(K=_k, N=_n, split=_sp, qtype=_q)


SCENARIO = Scenario("s3_vc_dequant", cube, vector, make_args, golden, VARIANTS, doc=__doc__)
