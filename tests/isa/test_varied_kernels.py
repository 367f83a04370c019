"""Hand-written kernels unlike the examples (odd shapes, dtypes, depths, splits, one peer,
address flow, TMPipe, the seed-003 init API, pure-vector/cube kernels, events ...).

Correct kernels must match numpy on both platforms and both protocols; each broken kernel
has one mistake and must raise the right PtoPipeError whose ``where`` is the offending line
(``# <marker>`` comments, found with ``line_of``)."""
import os

import numpy as np
import pytest

import ptopipe
from ptopipe import (BudgetError, ConfigError, DataRaceError, DeadlockError, KernelError,
                     MemoryConflictError, ProtocolError)
from ptopipe.errors import LeakError, PtoPipeError
from ptopipe.isa import *  # noqa: F403
from markers import line_of

HERE = __file__
COMBOS = [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec"), ("a5", "pto-isa")]
RING_UB = 0x10000            # A5 C2V ring in each AIV's UB (A2A3: the local staging ring)
RING_L1 = 0x40000            # A5 V2C ring in the Cube's L1 (A2A3: the local staging ring)


def rint(rng, shape, lo=-4, hi=5, dt=np.float32):
    return rng.integers(lo, hi, shape).astype(dt)


def gt(t, off, shape, stride=None):
    """A GlobalTensor view ``off`` elements into ``t``."""
    return GlobalTensor(t.data() + off, shape, stride) if stride else GlobalTensor(t.data() + off, shape)


# ============================================================================ correct kernels
# Each entry: name -> (aic, aiv, args(rng), golden(args)).  Golden is numpy only.

# K1: C2V f16 inputs, f32 acc, N=64 split LEFT_RIGHT (32 columns per AIV: A5's dual-mode TMOV
#     of an Acc into UB takes a multiple of 32 columns), SlotNum 3, 5 tiles (not a multiple of 3).
K1_T, K1_K, K1_N, K1_D = 16, 32, 64, 3


def k1_cube(a, b, fifo, n):
    pipe = TPipe(0, DIR_C2V, K1_T * K1_N * 4, K1_D)(fifo, RING_UB)
    a1 = Tile(TileType.Mat, float16, K1_T, K1_K, addr=0)
    b1 = Tile(TileType.Mat, float16, K1_K, K1_N, addr=0x1000)
    a0 = Tile(TileType.Left, float16, K1_T, K1_K, addr=0)
    b0 = Tile(TileType.Right, float16, K1_K, K1_N, addr=0)
    acc = Tile(TileType.Acc, float32, K1_T, K1_N, addr=0)
    TLOAD(b1, b)
    TMOV(b0, b1)
    for i in range(n):
        TLOAD(a1, gt(a, i * K1_T * K1_K, (K1_T, K1_K)))
        TMOV(a0, a1)
        TMATMUL(acc, a0, b0)
        TPUSH(pipe, acc, TILE_LEFT_RIGHT)


def k1_vec(out, fifo, n):
    pipe = TPipe(0, DIR_C2V, K1_T * K1_N * 4, K1_D)(fifo, RING_UB)
    h = K1_N // 2
    sub = get_subblockid()
    t = Tile(TileType.Vec, float32, K1_T, h)
    o = Tile(TileType.Vec, float16, K1_T, h, addr=0)
    for i in range(n):
        TPOP(pipe, t, TILE_LEFT_RIGHT)
        TCVT(o, t)
        TFREE(pipe, TILE_LEFT_RIGHT)
        TSTORE(gt(out, i * K1_T * K1_N + sub * h, (K1_T, h), (K1_N, 1)), o)


def k1_args(rng, n=5):
    return dict(a=rint(rng, (n * K1_T, K1_K), dt=np.float16), b=rint(rng, (K1_K, K1_N), dt=np.float16),
                out=np.zeros((n * K1_T, K1_N), np.float16), fifo=gm_buffer(8 * K1_T * K1_N * 4), n=n)


def k1_golden(a):
    return {"out": (a["a"].astype(np.float32) @ a["b"].astype(np.float32)).astype(np.float16)}


# K2: V2C int8 UP_DOWN: each AIV pushes 8 rows of an int8 16x32 tile; the Cube pops the
#     whole tile and multiplies it with an int8 32x16 matrix into an int32 accumulator.
K2_M, K2_K, K2_N, K2_D = 16, 32, 16, 2


def k2_cube(w, out, fifo, n):
    pipe = TPipe(0, DIR_V2C, K2_M * K2_K, K2_D)(fifo, 0, RING_L1)
    x = Tile(TileType.Mat, int8, K2_M, K2_K)
    x0 = Tile(TileType.Left, int8, K2_M, K2_K, addr=0)
    w1 = Tile(TileType.Mat, int8, K2_K, K2_N, addr=0)
    w0 = Tile(TileType.Right, int8, K2_K, K2_N, addr=0)
    acc = Tile(TileType.Acc, int32, K2_M, K2_N, addr=0)
    TLOAD(w1, w)
    TMOV(w0, w1)
    for i in range(n):
        TPOP(pipe, x, TILE_UP_DOWN)
        TMOV(x0, x)
        TFREE(pipe, TILE_UP_DOWN)
        TMATMUL(acc, x0, w0)
        TSTORE(gt(out, i * K2_M * K2_N, (K2_M, K2_N)), acc)


def k2_vec(x, fifo, n):
    pipe = TPipe(0, DIR_V2C, K2_M * K2_K, K2_D)(fifo, 0, RING_L1)
    h = K2_M // 2
    sub = get_subblockid()
    t = Tile(TileType.Vec, int8, h, K2_K, addr=0)
    for i in range(n):
        TLOAD(t, gt(x, (i * K2_M + sub * h) * K2_K, (h, K2_K)))
        TPUSH(pipe, t, TILE_UP_DOWN)


def k2_args(rng, n=3):
    return dict(x=rng.integers(-128, 128, (n * K2_M, K2_K)).astype(np.int8),
                w=rng.integers(-128, 128, (K2_K, K2_N)).astype(np.int8),
                out=np.zeros((n * K2_M, K2_N), np.int32), fifo=gm_buffer(8 * K2_M * K2_K), n=n)


def k2_golden(a):
    n = a["n"]
    x = a["x"].astype(np.int32).reshape(n, K2_M, K2_K)
    return {"out": (x @ a["w"].astype(np.int32)).reshape(n * K2_M, K2_N)}


# K3: one AIV peer only, NO_SPLIT, SlotNum 1, 7 tiles of 8x8 f32 (the Cube pushes an
#     identity product, AIV0 doubles it).  AIV1 runs nothing.
K3_T = 8


def k3_cube(x, fifo, n):
    pipe = TPipe(3, DIR_C2V, K3_T * K3_T * 4, 1, peers=(0,))(fifo, RING_UB)
    x1 = Tile(TileType.Mat, float32, K3_T, K3_T, addr=0)
    x0 = Tile(TileType.Left, float32, K3_T, K3_T, addr=0)
    e1 = Tile(TileType.Mat, float32, K3_T, K3_T, addr=0x400)
    e0 = Tile(TileType.Right, float32, K3_T, K3_T, addr=0)
    acc = Tile(TileType.Acc, float32, K3_T, K3_T, addr=0)
    TLOAD(e1, gt(x, n * K3_T * K3_T, (K3_T, K3_T)))       # the identity, after the data
    TMOV(e0, e1)
    for i in range(n):
        TLOAD(x1, gt(x, i * K3_T * K3_T, (K3_T, K3_T)))
        TMOV(x0, x1)
        TMATMUL(acc, x0, e0)
        TPUSH(pipe, acc)


def k3_vec(out, fifo, n):
    pipe = TPipe(3, DIR_C2V, K3_T * K3_T * 4, 1, peers=(0,))(fifo, RING_UB)
    t = Tile(TileType.Vec, float32, K3_T, K3_T)
    o = Tile(TileType.Vec, float32, K3_T, K3_T, addr=0)
    for i in range(n):
        TPOP(pipe, t)
        TADD(o, t, t)
        TFREE(pipe)
        TSTORE(gt(out, i * K3_T * K3_T, (K3_T, K3_T)), o)


def k3_args(rng, n=7):
    x = np.concatenate([rint(rng, (n * K3_T, K3_T)), np.eye(K3_T, dtype=np.float32)])
    return dict(x=x, out=np.zeros((n * K3_T, K3_T), np.float32), fifo=gm_buffer(K3_T * K3_T * 4), n=n)


def k3_golden(a):
    return {"out": 2 * a["x"][:-K3_T]}


# K4: seed-003 init API, DIR_BOTH (SLOT_NUM 4 per direction), both directions busy: the
#     AIVs push x+1 (V2C, UP_DOWN) two tiles ahead; the Cube pops, scales via matmul with
#     w and pushes back (C2V); the AIVs pop and subtract y.  6 tiles.
K4_T, K4_K = 16, 16
K4_SLOT = K4_T * K4_K * 4


def k4_cube(w, fifo, n):
    pipe = aic_initialize_pipe(DIR_C2V | DIR_V2C, K4_SLOT, fifo, RING_UB, RING_L1)
    x = Tile(TileType.Mat, float32, K4_T, K4_K)
    x0 = Tile(TileType.Left, float32, K4_T, K4_K, addr=0)
    w1 = Tile(TileType.Mat, float32, K4_K, K4_K, addr=0)
    w0 = Tile(TileType.Right, float32, K4_K, K4_K, addr=0)
    acc = Tile(TileType.Acc, float32, K4_T, K4_K, addr=0)
    TLOAD(w1, w)
    TMOV(w0, w1)
    for i in range(n):
        TPOP(pipe, x, TILE_UP_DOWN)
        TMOV(x0, x)
        TFREE(pipe, TILE_UP_DOWN)
        TMATMUL(acc, x0, w0)
        TPUSH(pipe, acc, TILE_UP_DOWN)


def k4_vec(x, y, out, fifo, n):
    pipe = aiv_initialize_pipe(DIR_C2V | DIR_V2C, K4_SLOT, fifo, RING_UB, RING_L1)
    h = K4_T // 2
    sub = get_subblockid()
    a = Tile(TileType.Vec, float32, h, K4_K, addr=0)
    b = Tile(TileType.Vec, float32, h, K4_K, addr=0x1000)
    yt = Tile(TileType.Vec, float32, h, K4_K, addr=0x2000)
    r = Tile(TileType.Vec, float32, h, K4_K)
    lag = 2
    for i in range(n + lag):
        if i < n:
            TLOAD(a, gt(x, (i * K4_T + sub * h) * K4_K, (h, K4_K)))
            TADDS(b, a, 1.0)
            TPUSH(pipe, b, TILE_UP_DOWN)
        j = i - lag
        if j >= 0:
            off = (j * K4_T + sub * h) * K4_K
            TLOAD(yt, gt(y, off, (h, K4_K)))
            TPOP(pipe, r, TILE_UP_DOWN)
            TSUB(a, r, yt)
            TFREE(pipe, TILE_UP_DOWN)
            TSTORE(gt(out, off, (h, K4_K)), a)


def k4_args(rng, n=6):
    return dict(x=rint(rng, (n * K4_T, K4_K)), y=rint(rng, (n * K4_T, K4_K)), w=rint(rng, (K4_K, K4_K)),
                out=np.zeros((n * K4_T, K4_K), np.float32), fifo=gm_buffer(8 * K4_SLOT), n=n)


def k4_golden(a):
    return {"out": (a["x"] + 1) @ a["w"] - a["y"]}


# K5: the consumer holds three popped tiles at once (LocalSlotNum 3, SlotNum 4) and sums
#     them before freeing all three; 9 tiles of 4x32 f32 in NO_SPLIT to AIV1 only.
K5_R, K5_C, K5_D, K5_H = 4, 32, 4, 3
K5_SLOT = K5_R * K5_C * 4


def _k5_pipe(fifo):
    return TPipe(0, DIR_C2V, K5_SLOT, K5_D, K5_H, peers=(1,))(fifo, RING_UB)


def k5_cube(x, fifo, n):
    pipe = _k5_pipe(fifo)
    x1 = Tile(TileType.Mat, float32, K5_R, K5_C, addr=0)
    x0 = Tile(TileType.Left, float32, K5_R, K5_C, addr=0)
    e1 = Tile(TileType.Mat, float32, K5_C, K5_C, addr=0x1000)
    e0 = Tile(TileType.Right, float32, K5_C, K5_C, addr=0)
    acc = Tile(TileType.Acc, float32, K5_R, K5_C, addr=0)
    e1.array[...] = np.eye(K5_C, dtype=np.float32)
    TMOV(e0, e1)
    for i in range(n):
        TLOAD(x1, gt(x, i * K5_R * K5_C, (K5_R, K5_C)))
        TMOV(x0, x1)
        TMATMUL(acc, x0, e0)
        TPUSH(pipe, acc)  # k5 push


def k5_vec(out, fifo, n):
    pipe = _k5_pipe(fifo)
    ts = [Tile(TileType.Vec, float32, K5_R, K5_C) for _ in range(K5_H)]
    s = Tile(TileType.Vec, float32, K5_R, K5_C, addr=0)
    for g in range(n // K5_H):
        for t in ts:
            TPOP(pipe, t)
        TADD(s, ts[0], ts[1])
        TADD(s, s, ts[2])
        for _ in ts:
            TFREE(pipe)
        TSTORE(gt(out, g * K5_R * K5_C, (K5_R, K5_C)), s)


def k5_args(rng, n=9):
    return dict(x=rint(rng, (n * K5_R, K5_C)), out=np.zeros((n // K5_H * K5_R, K5_C), np.float32),
                fifo=gm_buffer(K5_D * K5_SLOT), n=n)


def k5_golden(a):
    x = a["x"].reshape(a["n"] // K5_H, K5_H, K5_R, K5_C)
    return {"out": x.sum(axis=1).reshape(-1, K5_C)}


# K6: address flow: the Cube TALLOCs a GM slot (GlobalTensor), TSTOREs two column blocks
#     of its accumulator into it and TPUSHes it; each AIV TPOPs its UP_DOWN half as a
#     GlobalTensor and TLOADs from it.  GM rings on both platforms (DIR_C2V_GM on A5).
K6_M, K6_N, K6_D = 16, 16, 2
K6_W = 2 * K6_N
K6_SLOT = K6_M * K6_W * 4


def _k6_pipe(fifo):
    d = DIR_C2V_GM if platform_id() == PLATFORM_A5 else DIR_C2V
    return TPipe(0, d, K6_SLOT, K6_D)(fifo)


def k6_cube(x, fifo, n):
    pipe = _k6_pipe(fifo)
    x1 = Tile(TileType.Mat, float32, K6_M, K6_N, addr=0)
    x0 = Tile(TileType.Left, float32, K6_M, K6_N, addr=0)
    e1 = Tile(TileType.Mat, float32, K6_N, K6_N, addr=0x1000)
    e0 = Tile(TileType.Right, float32, K6_N, K6_N, addr=0)
    acc = Tile(TileType.Acc, float32, K6_M, K6_N, addr=0)
    e1.array[...] = np.eye(K6_N, dtype=np.float32) * 3
    TMOV(e0, e1)
    slot = GlobalTensor(float32, (K6_M, K6_W))
    for i in range(n):
        TLOAD(x1, gt(x, i * K6_M * K6_N, (K6_M, K6_N)))
        TMOV(x0, x1)
        TMATMUL(acc, x0, e0)
        TALLOC(pipe, slot, TILE_UP_DOWN)
        for c in range(2):
            TSTORE(GlobalTensor(slot.data() + c * K6_N, (K6_M, K6_N), (K6_W, 1)), acc)
        TPUSH(pipe, slot, TILE_UP_DOWN)


def k6_vec(out, fifo, n):
    pipe = _k6_pipe(fifo)
    h = K6_M // 2
    sub = get_subblockid()
    half = GlobalTensor(float32, (h, K6_W))
    v = Tile(TileType.Vec, float32, h, K6_W, addr=0)
    for i in range(n):
        TPOP(pipe, half, TILE_UP_DOWN)
        TLOAD(v, half)
        TFREE(pipe, half, TILE_UP_DOWN)
        TADDS(v, v, 0.5)
        TSTORE(gt(out, (i * K6_M + sub * h) * K6_W, (h, K6_W)), v)


def k6_args(rng, n=3):
    return dict(x=rint(rng, (n * K6_M, K6_N)), out=np.zeros((n * K6_M, K6_W), np.float32),
                fifo=gm_buffer(K6_D * K6_SLOT), n=n)


def k6_golden(a):
    return {"out": np.tile(3 * a["x"], (1, 2)) + np.float32(0.5)}


# K7: TMPipe (FiFoDepth 3, FiFoSyncT 1), GM_FIFO on A2A3 and VEC_FIFO on A5; both Vector
#     lanes (V2C1_VECS: pto-isa's Cube waits for both lanes' flags of a TMPipe whatever its
#     ratio), 5 tiles of 16x8 negated by the Cube, TABS on each lane's 8 rows.
K7_R, K7_C = 16, 8
K7_H = K7_R // 2


def _k7_pipe(fifo, t):
    ft = FIFOType.VEC_FIFO if platform_id() == PLATFORM_A5 else FIFOType.GM_FIFO
    return TMPipe(1, ft, 3, 1, Tile(TileType.Acc, float32, K7_R, K7_C), t)(fifo, RING_UB, 0)


def k7_cube(x, fifo, n):
    acc = Tile(TileType.Acc, float32, K7_R, K7_C, addr=0)
    x1 = Tile(TileType.Mat, float32, K7_R, K7_C, addr=0)
    x0 = Tile(TileType.Left, float32, K7_R, K7_C, addr=0)
    e1 = Tile(TileType.Mat, float32, K7_C, K7_C, addr=0x1000)
    e0 = Tile(TileType.Right, float32, K7_C, K7_C, addr=0)
    e1.array[...] = -np.eye(K7_C, dtype=np.float32)
    TMOV(e0, e1)
    pipe = _k7_pipe(fifo, Tile(TileType.Vec, float32, K7_H, K7_C))
    for i in range(n):
        TLOAD(x1, gt(x, i * K7_R * K7_C, (K7_R, K7_C)))
        TMOV(x0, x1)
        TMATMUL(acc, x0, e0)
        TPUSH(pipe, acc, TILE_UP_DOWN)


def k7_vec(out, fifo, n):
    t = Tile(TileType.Vec, float32, K7_H, K7_C)
    pipe = _k7_pipe(fifo, t)
    o = Tile(TileType.Vec, float32, K7_H, K7_C, addr=0)
    for i in range(n):
        TPOP(pipe, t, TILE_UP_DOWN)
        TABS(o, t)
        TFREE(pipe, TILE_UP_DOWN)
        TSTORE(gt(out, i * K7_R * K7_C + get_subblockid() * K7_H * K7_C, (K7_H, K7_C)), o)


def k7_args(rng, n=5):
    return dict(x=rint(rng, (n * K7_R, K7_C)), out=np.zeros((n * K7_R, K7_C), np.float32),
                fifo=gm_buffer(3 * K7_R * K7_C * 4), n=n)


def k7_golden(a):
    return {"out": np.abs(a["x"])}


# K8: pure vector kernel with event tokens and TSYNC: bf16 in, TCVT to f32, row sums,
#     TROWEXPANDSUB (x - rowsum), store f32.  Sub-block s handles rows [s*8, s*8+8).
K8_R, K8_C = 8, 64


def k8_vec(x, out):
    sub = get_subblockid()
    xb = Tile(TileType.Vec, bfloat16, K8_R, K8_C, addr=0)
    xf = Tile(TileType.Vec, float32, K8_R, K8_C, addr=0x1000)
    rs = Tile(TileType.Vec, float32, K8_R, 1, addr=0x3000)
    tmp = Tile(TileType.Vec, float32, K8_R, K8_C, addr=0x4000)
    e = TLOAD(xb, gt(x, sub * K8_R * K8_C, (K8_R, K8_C)))
    TSYNC(e)
    e = TCVT(xf, xb, e)
    TROWSUM(rs, xf, tmp, e)
    TSYNC(Op.TLOAD)                    # an op barrier both platforms take (A5: MTE2 / MTE3 only)
    TROWEXPANDSUB(tmp, xf, rs)
    TSTORE(gt(out, sub * K8_R * K8_C, (K8_R, K8_C)), tmp)


def k8_args(rng):
    import ml_dtypes  # noqa: F401  (numpy bfloat16)
    return dict(x=rint(rng, (2 * K8_R, K8_C)).astype(ml_dtypes.bfloat16),
                out=np.zeros((2 * K8_R, K8_C), np.float32))


def k8_golden(a):
    x = a["x"].astype(np.float32)
    return {"out": x - x.sum(axis=1, keepdims=True)}


# K9: pure cube kernel: K=96 accumulated in three 32-wide steps with TMATMUL_ACC from f16
#     inputs, acc tile reused across two output blocks.
K9_M, K9_K, K9_N, K9_KS = 16, 96, 32, 32


def k9_cube(a, b, out):
    a1 = Tile(TileType.Mat, float16, K9_M, K9_KS, addr=0)
    b1 = Tile(TileType.Mat, float16, K9_KS, K9_N, addr=0x2000)
    a0 = Tile(TileType.Left, float16, K9_M, K9_KS, addr=0)
    b0 = Tile(TileType.Right, float16, K9_KS, K9_N, addr=0)
    acc = Tile(TileType.Acc, float32, K9_M, K9_N, addr=0)
    for blk in range(2):
        for k in range(K9_K // K9_KS):
            TLOAD(a1, gt(a, blk * K9_M * K9_K + k * K9_KS, (K9_M, K9_KS), (K9_K, 1)))
            TLOAD(b1, gt(b, k * K9_KS * K9_N, (K9_KS, K9_N)))
            TMOV(a0, a1)
            TMOV(b0, b1)
            if k == 0:
                TMATMUL(acc, a0, b0)
            else:
                TMATMUL_ACC(acc, acc, a0, b0)
        TSTORE(gt(out, blk * K9_M * K9_N, (K9_M, K9_N)), acc)


def k9_args(rng):
    return dict(a=rint(rng, (2 * K9_M, K9_K), dt=np.float16), b=rint(rng, (K9_K, K9_N), dt=np.float16),
                out=np.zeros((2 * K9_M, K9_N), np.float32))


def k9_golden(a):
    return {"out": a["a"].astype(np.float32) @ a["b"].astype(np.float32)}


# K10: V2C LEFT_RIGHT dequant: each AIV dequantises its column half of an int16 K x N tile
#      ((q - 3) * 0.5 -> f32) and pushes it; the Cube pops the whole K x N tile as Mat,
#      moves it to Right and accumulates A @ W over 3 K-tiles (SlotNum 2).
K10_M, K10_KT, K10_N, K10_NK = 16, 16, 32, 3


def k10_cube(a, out, fifo):
    pipe = TPipe(2, DIR_V2C, K10_KT * K10_N * 4, 2)(fifo, 0, RING_L1)
    a1 = Tile(TileType.Mat, float32, K10_M, K10_KT, addr=0)
    a0 = Tile(TileType.Left, float32, K10_M, K10_KT, addr=0)
    w = Tile(TileType.Mat, float32, K10_KT, K10_N)
    w0 = Tile(TileType.Right, float32, K10_KT, K10_N, addr=0)
    acc = Tile(TileType.Acc, float32, K10_M, K10_N, addr=0)
    for k in range(K10_NK):
        TLOAD(a1, gt(a, k * K10_KT, (K10_M, K10_KT), (K10_NK * K10_KT, 1)))
        TMOV(a0, a1)
        TPOP(pipe, w, TILE_LEFT_RIGHT)
        TMOV(w0, w)
        TFREE(pipe, TILE_LEFT_RIGHT)
        if k == 0:
            TMATMUL(acc, a0, w0)
        else:
            TMATMUL_ACC(acc, acc, a0, w0)
    TSTORE(out, acc)


def k10_vec(q, fifo):
    pipe = TPipe(2, DIR_V2C, K10_KT * K10_N * 4, 2)(fifo, 0, RING_L1)
    h = K10_N // 2
    sub = get_subblockid()
    qt = Tile(TileType.Vec, int16, K10_KT, h, addr=0)
    f = Tile(TileType.Vec, float32, K10_KT, h, addr=0x1000)
    for k in range(K10_NK):
        TLOAD(qt, gt(q, k * K10_KT * K10_N + sub * h, (K10_KT, h), (K10_N, 1)))
        TCVT(f, qt)
        TSUBS(f, f, 3.0)
        TMULS(f, f, 0.5)
        TPUSH(pipe, f, TILE_LEFT_RIGHT)


def k10_args(rng):
    return dict(a=rint(rng, (K10_M, K10_NK * K10_KT)),
                q=rng.integers(-100, 100, (K10_NK * K10_KT, K10_N)).astype(np.int16),
                out=np.zeros((K10_M, K10_N), np.float32), fifo=gm_buffer(8 * K10_KT * K10_N * 4))


def k10_golden(a):
    return {"out": a["a"] @ ((a["q"].astype(np.float32) - 3) * 0.5)}


# K11: SlotNum 8 stream of 19 tiles of 8x16 f32, UP_DOWN, the Vector side converts each
#      4x16 half to f16 and back with a ReLU (TRELU) and a TMAXS in between.
K11_R, K11_C, K11_D = 8, 16, 8


def k11_cube(x, fifo, n):
    pipe = TPipe(0, DIR_C2V, K11_R * K11_C * 4, K11_D)(fifo, RING_UB)
    x1 = Tile(TileType.Mat, float32, K11_R, K11_C, addr=0)
    x0 = Tile(TileType.Left, float32, K11_R, K11_C, addr=0)
    e1 = Tile(TileType.Mat, float32, K11_C, K11_C, addr=0x1000)
    e0 = Tile(TileType.Right, float32, K11_C, K11_C, addr=0)
    acc = Tile(TileType.Acc, float32, K11_R, K11_C, addr=0)
    e1.array[...] = np.eye(K11_C, dtype=np.float32)
    TMOV(e0, e1)
    for i in range(n):
        TLOAD(x1, gt(x, i * K11_R * K11_C, (K11_R, K11_C)))
        TMOV(x0, x1)
        TMATMUL(acc, x0, e0)
        TPUSH(pipe, acc, TILE_UP_DOWN)


def k11_vec(out, fifo, n):
    pipe = TPipe(0, DIR_C2V, K11_R * K11_C * 4, K11_D)(fifo, RING_UB)
    h = K11_R // 2
    sub = get_subblockid()
    t = Tile(TileType.Vec, float32, h, K11_C)
    r = Tile(TileType.Vec, float32, h, K11_C, addr=0)
    m = Tile(TileType.Vec, float16, h, K11_C, addr=0x1000)
    for i in range(n):
        TPOP(pipe, t, TILE_UP_DOWN)
        TRELU(r, t)
        TFREE(pipe, TILE_UP_DOWN)
        TCVT(m, r)
        TMAXS(m, m, 1.0)
        TCVT(r, m)
        TSTORE(gt(out, (i * K11_R + sub * h) * K11_C, (h, K11_C)), r)


def k11_args(rng, n=19):
    return dict(x=rint(rng, (n * K11_R, K11_C)), out=np.zeros((n * K11_R, K11_C), np.float32),
                fifo=gm_buffer(K11_D * K11_R * K11_C * 4), n=n)


def k11_golden(a):
    return {"out": np.maximum(np.maximum(a["x"], 0), 1)}


# K12: DIR_BOTH TPipe with SlotNum 2 and a V2C tile smaller than SlotSize (8x16 in a slot
#      sized for the 8x32 C2V tile); the Cube pops V2C (NO_SPLIT from AIV0 only),
#      multiplies by a 16x32 matrix and pushes the 8x32 result back to AIV0.
K12_R, K12_K, K12_N = 8, 16, 32
K12_SLOT = K12_R * K12_N * 4


def _k12_pipe(fifo):
    return TPipe(4, DIR_BOTH, K12_SLOT, 2, peers=(0,))(fifo, RING_UB, RING_L1)


def k12_cube(w, fifo, n):
    pipe = _k12_pipe(fifo)
    x = Tile(TileType.Mat, float32, K12_R, K12_K)
    x0 = Tile(TileType.Left, float32, K12_R, K12_K, addr=0)
    w1 = Tile(TileType.Mat, float32, K12_K, K12_N, addr=0)
    w0 = Tile(TileType.Right, float32, K12_K, K12_N, addr=0)
    acc = Tile(TileType.Acc, float32, K12_R, K12_N, addr=0)
    TLOAD(w1, w)
    TMOV(w0, w1)
    for i in range(n):
        TPOP(pipe, x)
        TMOV(x0, x)
        TFREE(pipe)
        TMATMUL(acc, x0, w0)
        TPUSH(pipe, acc)


def k12_vec(x, out, fifo, n):
    pipe = _k12_pipe(fifo)
    a = Tile(TileType.Vec, float32, K12_R, K12_K, addr=0)
    r = Tile(TileType.Vec, float32, K12_R, K12_N)
    o = Tile(TileType.Vec, float32, K12_R, K12_N, addr=0x1000)
    for i in range(n):
        TLOAD(a, gt(x, i * K12_R * K12_K, (K12_R, K12_K)))
        TPUSH(pipe, a)
        TPOP(pipe, r)
        TMULS(o, r, 2.0)
        TFREE(pipe)
        TSTORE(gt(out, i * K12_R * K12_N, (K12_R, K12_N)), o)


def k12_args(rng, n=5):
    return dict(x=rint(rng, (n * K12_R, K12_K)), w=rint(rng, (K12_K, K12_N)),
                out=np.zeros((n * K12_R, K12_N), np.float32), fifo=gm_buffer(4 * K12_SLOT), n=n)


def k12_golden(a):
    return {"out": 2 * (a["x"] @ a["w"])}


# K13: SetValid: each pushed 16x16 tile carries a 16x16 product, the Vector core sets
#      valid 16x10 on a local tile and row-sums only the valid columns (NO_SPLIT, AIV0).
K13_T, K13_V = 16, 10


def k13_cube(x, fifo):
    pipe = TPipe(0, DIR_C2V, K13_T * K13_T * 4, 2, peers=(0,))(fifo, RING_UB)
    x1 = Tile(TileType.Mat, float32, K13_T, K13_T, addr=0)
    x0 = Tile(TileType.Left, float32, K13_T, K13_T, addr=0)
    e1 = Tile(TileType.Mat, float32, K13_T, K13_T, addr=0x1000)
    e0 = Tile(TileType.Right, float32, K13_T, K13_T, addr=0)
    acc = Tile(TileType.Acc, float32, K13_T, K13_T, addr=0)
    e1.array[...] = np.eye(K13_T, dtype=np.float32)
    TMOV(e0, e1)
    TLOAD(x1, x)
    TMOV(x0, x1)
    TMATMUL(acc, x0, e0)
    TPUSH(pipe, acc)


def k13_vec(out, fifo):
    pipe = TPipe(0, DIR_C2V, K13_T * K13_T * 4, 2, peers=(0,))(fifo, RING_UB)
    t = Tile(TileType.Vec, float32, K13_T, K13_T)
    c = Tile(TileType.Vec, float32, K13_T, K13_T, addr=0)
    tmp = Tile(TileType.Vec, float32, K13_T, K13_T, addr=0x1000)
    rs = Tile(TileType.Vec, float32, K13_T, 1, addr=0x2000)
    TPOP(pipe, t)
    TMOV(c, t)
    TFREE(pipe)
    c.SetValid(K13_T, K13_V)
    tmp.SetValid(K13_T, K13_V)
    TROWSUM(rs, c, tmp)
    TSTORE(out, rs)


def k13_args(rng):
    return dict(x=rint(rng, (K13_T, K13_T)), out=np.zeros((K13_T, 1), np.float32),
                fifo=gm_buffer(2 * K13_T * K13_T * 4))


def k13_golden(a):
    return {"out": a["x"][:, :K13_V].sum(axis=1, keepdims=True)}


# K14: two pipes on the same peers with disjoint flags: FlagID 0 (C2V, SlotNum 2) carries
#      x, FlagID 4 (C2V, SlotNum 3) carries y; the Vector core pops one from each and
#      multiplies them.  Two GM rings side by side.
K14_T = 8
K14_SLOT = 2 * K14_T * K14_T * 4      # the whole pushed tile (both halves)


def _k14_pipes(fifo):
    p = TPipe(0, DIR_C2V, K14_SLOT, 2)(fifo, RING_UB)
    q = TPipe(4, DIR_C2V, K14_SLOT, 3)(fifo.data() + 2 * K14_SLOT, RING_UB + 0x1000)   # bytes
    return p, q


def k14_cube(x, y, fifo, n):
    p, q = _k14_pipes(fifo)
    x1 = Tile(TileType.Mat, float32, 2 * K14_T, K14_T, addr=0)
    x0 = Tile(TileType.Left, float32, 2 * K14_T, K14_T, addr=0)
    e1 = Tile(TileType.Mat, float32, K14_T, K14_T, addr=0x1000)
    e0 = Tile(TileType.Right, float32, K14_T, K14_T, addr=0)
    acc = Tile(TileType.Acc, float32, 2 * K14_T, K14_T, addr=0)
    e1.array[...] = np.eye(K14_T, dtype=np.float32)
    TMOV(e0, e1)
    for i in range(n):
        for src, pipe in ((x, p), (y, q)):
            TLOAD(x1, gt(src, i * 2 * K14_T * K14_T, (2 * K14_T, K14_T)))
            TMOV(x0, x1)
            TMATMUL(acc, x0, e0)
            TPUSH(pipe, acc, TILE_UP_DOWN)


def k14_vec(out, fifo, n):
    p, q = _k14_pipes(fifo)
    sub = get_subblockid()
    a = Tile(TileType.Vec, float32, K14_T, K14_T)
    b = Tile(TileType.Vec, float32, K14_T, K14_T)
    o = Tile(TileType.Vec, float32, K14_T, K14_T, addr=0)
    for i in range(n):
        TPOP(p, a, TILE_UP_DOWN)
        TPOP(q, b, TILE_UP_DOWN)
        TMUL(o, a, b)
        TFREE(q, TILE_UP_DOWN)
        TFREE(p, TILE_UP_DOWN)
        TSTORE(gt(out, (i * 2 + sub) * K14_T * K14_T, (K14_T, K14_T)), o)


def k14_args(rng, n=4):
    return dict(x=rint(rng, (n * 2 * K14_T, K14_T)), y=rint(rng, (n * 2 * K14_T, K14_T)),
                out=np.zeros((n * 2 * K14_T, K14_T), np.float32), fifo=gm_buffer(5 * K14_SLOT), n=n)


def k14_golden(a):
    return {"out": a["x"] * a["y"]}


# K15: seed-003 init API, DIR_V2C only (SLOT_NUM 8): only AIV1 produces (peers=(1,)),
#      11 tiles of 8x8 bf16->f32 (TCVT) summed by the Cube through TMATMUL_ACC with I.
K15_T = 8
K15_SLOT = K15_T * K15_T * 4


def k15_cube(out, fifo, n):
    pipe = aic_initialize_pipe(DIR_V2C, K15_SLOT, fifo, 0, RING_L1, peers=(1,))
    x = Tile(TileType.Mat, float32, K15_T, K15_T)
    x0 = Tile(TileType.Left, float32, K15_T, K15_T, addr=0)
    e1 = Tile(TileType.Mat, float32, K15_T, K15_T, addr=0)
    e0 = Tile(TileType.Right, float32, K15_T, K15_T, addr=0)
    acc = Tile(TileType.Acc, float32, K15_T, K15_T, addr=0)
    e1.array[...] = np.eye(K15_T, dtype=np.float32)
    TMOV(e0, e1)
    for i in range(n):
        TPOP(pipe, x)
        TMOV(x0, x)
        TFREE(pipe)
        if i == 0:
            TMATMUL(acc, x0, e0)
        else:
            TMATMUL_ACC(acc, acc, x0, e0)
    TSTORE(out, acc)


def k15_vec(x, fifo, n):
    pipe = aiv_initialize_pipe(DIR_V2C, K15_SLOT, fifo, 0, RING_L1, peers=(1,))
    b = Tile(TileType.Vec, bfloat16, K15_T, K15_T, addr=0)
    f = Tile(TileType.Vec, float32, K15_T, K15_T, addr=0x400)
    for i in range(n):
        TLOAD(b, gt(x, i * K15_T * K15_T, (K15_T, K15_T)))
        TCVT(f, b)
        TPUSH(pipe, f)  # k15 push


def k15_args(rng, n=11):
    import ml_dtypes
    return dict(x=rint(rng, (n * K15_T, K15_T)).astype(ml_dtypes.bfloat16),
                out=np.zeros((K15_T, K15_T), np.float32), fifo=gm_buffer(8 * K15_SLOT), n=n)


def k15_golden(a):
    return {"out": a["x"].astype(np.float32).reshape(a["n"], K15_T, K15_T).sum(axis=0)}


CORRECT = {
    "k1_f16_lr_depth3": (k1_cube, k1_vec, k1_args, k1_golden),
    "k2_int8_v2c_i32acc": (k2_cube, k2_vec, k2_args, k2_golden),
    "k3_one_peer_depth1": (k3_cube, (k3_vec, None), k3_args, k3_golden),
    "k4_init_api_both_busy": (k4_cube, k4_vec, k4_args, k4_golden),
    "k5_hold_three": (k5_cube, (None, k5_vec), k5_args, k5_golden),
    "k6_talloc_address_flow": (k6_cube, k6_vec, k6_args, k6_golden),
    "k7_tmpipe": (k7_cube, k7_vec, k7_args, k7_golden),
    "k8_pure_vector_events": (None, k8_vec, k8_args, k8_golden),
    "k9_pure_cube_kacc": (k9_cube, None, k9_args, k9_golden),
    "k10_v2c_lr_dequant": (k10_cube, k10_vec, k10_args, k10_golden),
    "k11_depth8_odd_stream": (k11_cube, k11_vec, k11_args, k11_golden),
    "k12_both_small_v2c_tile": (k12_cube, (k12_vec, None), k12_args, k12_golden),
    "k13_setvalid": (k13_cube, (k13_vec, None), k13_args, k13_golden),
    "k14_two_pipes": (k14_cube, k14_vec, k14_args, k14_golden),
    "k15_init_api_v2c_one_peer": (k15_cube, (None, k15_vec), k15_args, k15_golden),
}


def _check_correct(name, platform, protocol):
    aic, aiv, make, golden = CORRECT[name]
    args = make(np.random.default_rng(7))
    want = golden(args)
    res = ptopipe.run(aic, aiv, args, platform=platform, protocol=protocol, timeout=20)
    for k, v in want.items():
        np.testing.assert_array_equal(res.outputs[k], v, err_msg=f"{name}:{k}")
    return res


# NO_SPLIT pipes whose only Vector peer is AIV1: on A5 a NO_SPLIT transfer has one lane, AIV0,
# under spec and pto-isa (docs/protocols.md), so there they are reported at their first transfer
AIV1_ONLY = {"k5_hold_three": (k5_cube, "k5 push"), "k15_init_api_v2c_one_peer": (k15_vec, "k15 push")}


@pytest.mark.parametrize("platform,protocol", COMBOS)
@pytest.mark.parametrize("name", sorted(CORRECT))
def test_correct_kernel_matches_numpy(name, platform, protocol, no_hang):
    if name in AIV1_ONLY and platform == "a5":
        fn, marker = AIV1_ONLY[name]
        with pytest.raises(ProtocolError) as ei:
            _check_correct(name, platform, protocol)
        assert "one lane" in ei.value.what
        assert ei.value.where.endswith(f"{os.path.basename(HERE)}:{line_of(fn, marker)}"), ei.value.where
        return
    _check_correct(name, platform, protocol)


# K16: kernel objects made once (tiles created outside the kernel functions) and run twice
#      in one process: each run binds its tiles again and gives the same result.
def _k16_factory():
    T = 8
    slot = T * T * 4
    acc = Tile(TileType.Acc, float32, T, T)
    x1 = Tile(TileType.Mat, float32, T, T)
    x0 = Tile(TileType.Left, float32, T, T)
    e1 = Tile(TileType.Mat, float32, T, T)
    e0 = Tile(TileType.Right, float32, T, T)
    popped = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T)

    def cube(x, eye, fifo, n):
        pipe = TPipe(0, DIR_C2V, slot, 2, peers=(0,))(fifo, RING_UB)
        for t, a in ((acc, 0), (x1, 0), (x0, 0), (e1, 0x400), (e0, 0)):
            TASSIGN(t, a)             # addresses are bound per run (a Tile(addr=) needs a core)
        TLOAD(e1, eye)
        TMOV(e0, e1)
        for i in range(n):
            TLOAD(x1, gt(x, i * T * T, (T, T)))
            TMOV(x0, x1)
            TMATMUL(acc, x0, e0)
            TPUSH(pipe, acc)

    def vec(out, fifo, n):
        pipe = TPipe(0, DIR_C2V, slot, 2, peers=(0,))(fifo, RING_UB)
        TASSIGN(o, 0)
        for i in range(n):
            TPOP(pipe, popped)
            TSUBS(o, popped, 1.0)
            TFREE(pipe)
            TSTORE(gt(out, i * T * T, (T, T)), o)

    def args(rng, n=3):
        return dict(x=rint(rng, (n * T, T)), eye=np.eye(T, dtype=np.float32),
                    out=np.zeros((n * T, T), np.float32), fifo=gm_buffer(2 * slot), n=n)
    return cube, (vec, None), args


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_kernel_objects_run_twice_in_one_process(platform, protocol, no_hang):
    cube, vec, make = _k16_factory()
    for seed in (1, 1, 2):
        args = make(np.random.default_rng(seed))
        res = ptopipe.run(cube, vec, args, platform=platform, protocol=protocol, timeout=20)
        np.testing.assert_array_equal(res.outputs["out"], args["x"] - 1)


# ============================================================================ broken kernels
# One mistake each.  A shared Cube producer: n tiles of T x T f32 (x times 1) into a C2V
# pipe; the broken part is in the kernel named by the test.
T = 16
SLOT = T * T * 4


def _c2v(fifo, peers=(0,), depth=2, flag=0, slot=SLOT):
    return TPipe(flag, DIR_C2V, slot, depth, peers=peers)(fifo, RING_UB)


def _producer(n, split=TILE_NO_SPLIT, peers=(0,), depth=2):
    def cube(x, fifo):
        pipe = _c2v(fifo, peers, depth)
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        x1 = Tile(TileType.Mat, float32, T, T, addr=0)
        x0 = Tile(TileType.Left, float32, T, T, addr=0)
        e0 = Tile(TileType.Right, float32, T, T, addr=0)
        e0.array[...] = np.eye(T, dtype=np.float32)
        TLOAD(x1, x)
        TMOV(x0, x1)
        TMATMUL(acc, x0, e0)
        for i in range(n):
            TPUSH(pipe, acc, split)  # push
    return cube


def _args(rng=None, **extra):
    rng = rng or np.random.default_rng(3)
    d = dict(x=rint(rng, (T, T)), out=np.zeros((T, T), np.float32), fifo=gm_buffer(16 * SLOT))
    d.update(extra)
    return d


def _raises(cls, fn, marker, aic, aiv, args=None, platform="a2a3", protocol="spec", **kw):
    """Run; the error is exactly ``cls`` and its ``where`` names ``fn``'s ``# marker`` line."""
    kw.setdefault("timeout", 20)
    with pytest.raises(PtoPipeError) as ei:
        ptopipe.run(aic, aiv, args if args is not None else _args(), platform=platform,
                    protocol=protocol, **kw)
    err = ei.value
    assert type(err) is cls, f"{type(err).__name__}: {err}"
    path, _, line = (err.where or "").rpartition(":")
    assert path.endswith("test_varied_kernels.py") and line == str(line_of(fn, marker)), str(err)
    return err


# B1: the consumer never TFREEs: the Cube blocks in its third TPUSH (SlotNum 2).
def b1_vec(fifo, out):
    pipe = _c2v(fifo)
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(3):
        TPOP(pipe, t)  # pop-no-free


# B2: address flow: the second TLOAD from the popped GM slot comes after its TFREE.
def _gm_pipe(fifo):
    d = DIR_C2V_GM if platform_id() == PLATFORM_A5 else DIR_C2V
    return TPipe(0, d, SLOT, 2, peers=(0,))(fifo)


def b2_cube(x, fifo):
    pipe = _gm_pipe(fifo)
    v = Tile(TileType.Mat, float32, T, T, addr=0)
    slot = GlobalTensor(float32, (T, T))
    TLOAD(v, x)
    for i in range(2):
        TALLOC(pipe, slot)
        TSTORE(slot, v)
        TPUSH(pipe, slot)


def b2_vec(fifo, out):
    pipe = _gm_pipe(fifo)
    slot = GlobalTensor(float32, (T, T))
    top = Tile(TileType.Vec, float32, T // 2, T, addr=0)
    for i in range(2):
        TPOP(pipe, slot)
        TLOAD(top, GlobalTensor(slot.data(), (T // 2, T)))
        TFREE(pipe, slot)
        TLOAD(top, GlobalTensor(slot.data() + T * T // 2, (T // 2, T)))  # read-after-free


# B3: the consumer TPOPs one tile more than the Cube pushes.
def b3_vec(fifo, out):
    pipe = _c2v(fifo)
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(3):
        TPOP(pipe, t)  # pop-extra
        TFREE(pipe)


# B4: the Cube pushes UP_DOWN, the AIVs pop LEFT_RIGHT.
def b4_vec(fifo, out):
    pipe = _c2v(fifo, peers=(0, 1))
    t = Tile(TileType.Vec, float32, T, T // 2)
    TPOP(pipe, t, TILE_LEFT_RIGHT)  # wrong-split
    TFREE(pipe, TILE_LEFT_RIGHT)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_b4_split_mismatch_says_where_the_device_tolerates_it(platform, no_hang):
    """A2A3's GM ring holds the Cube's whole tile whatever its split (pto-isa's pushAcc2GMFiFo
    takes none): the fix says an unsplit push may be popped in parts there, a split one with
    its split; on A5 (UB rings) the Cube's split decides."""
    err = _raises(ProtocolError, b4_vec, "wrong-split", _producer(1, TILE_UP_DOWN, (0, 1)), b4_vec,
                  platform=platform)
    assert ("a TILE_NO_SPLIT push may be popped in parts" in err.fix) is (platform == "a2a3"), err.fix


# B5: V2C: each AIV pushes an int16 tile bigger than SlotSize.
def b5_cube(fifo):
    pipe = TPipe(0, DIR_V2C, 256, 2, peers=(0,))(fifo, 0, RING_L1)
    t = Tile(TileType.Mat, int16, 8, 16)
    TPOP(pipe, t)
    TFREE(pipe)


def b5_vec(fifo):
    pipe = TPipe(0, DIR_V2C, 256, 2, peers=(0,))(fifo, 0, RING_L1)
    t = Tile(TileType.Vec, int16, 16, 16, addr=0)
    TEXPANDS(t, 1)
    TPUSH(pipe, t)  # too-big


# B6: FlagID 0 (SlotNum 4) and FlagID 1 (SlotNum 2) on the same peer share flags.
def b6_cube(fifo):
    a = TPipe(0, DIR_C2V, SLOT, 4, peers=(0,))(fifo, RING_UB)
    b = TPipe(1, DIR_C2V, SLOT, 2, peers=(0,))(fifo.data() + 4 * SLOT, RING_UB + 4 * SLOT)  # shared-flag


def b6_vec(fifo):
    a = TPipe(0, DIR_C2V, SLOT, 4, peers=(0,))(fifo, RING_UB)
    b = TPipe(1, DIR_C2V, SLOT, 2, peers=(0,))(fifo.data() + 4 * SLOT, RING_UB + 4 * SLOT)


# B7: the second pipe's GM ring starts SLOT // 4 bytes in (an element count used as a
#     byte offset): the two GM rings overlap.
def b7_cube(fifo):
    a = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, RING_UB)
    b = TPipe(4, DIR_C2V, SLOT, 2, peers=(0,))(fifo.data() + 2 * SLOT // 4, RING_UB + 2 * SLOT)  # overlap


def b7_vec(fifo):
    a = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, RING_UB)
    b = TPipe(4, DIR_C2V, SLOT, 2, peers=(0,))(fifo.data() + 2 * SLOT // 4, RING_UB + 2 * SLOT)


# B8: a popped tile (A2A3: the staging copy; A5: the slot itself) read after TFREE.
def b8_vec(fifo, out):
    pipe = _c2v(fifo)
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0)
    for i in range(2):
        TPOP(pipe, t)
        TFREE(pipe)
        TADDS(o, t, 1.0)  # staged-after-free
    TSTORE(out, o)


# B9: the Cube stores `out`; AIV1, which is not on the pipe (peers=(0,)), reads it: the
#     flags order the Cube with AIV0 only.
def b9_cube(x, out, fifo):
    pipe = _c2v(fifo)
    v = Tile(TileType.Mat, float32, T, T, addr=0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    TLOAD(v, x)
    TSTORE(out, v)
    TPUSH(pipe, acc)


def b9_v0(fifo):
    pipe = _c2v(fifo)
    t = Tile(TileType.Vec, float32, T, T)
    TPOP(pipe, t)
    TFREE(pipe)


def b9_v1(out):
    v = Tile(TileType.Vec, float32, T, T, addr=0)
    TLOAD(v, out)  # unordered-read


# B10: a Vector core TPUSHes on a C2V pipe (it is the consumer there).
def b10_vec(fifo, out):
    pipe = _c2v(fifo)
    t = Tile(TileType.Vec, float32, T, T, addr=0)
    TPUSH(pipe, t)  # wrong-core


# B11: a loop that never ends (the exit test reads a tile the loop never changes).
def b11_vec(x):
    t = Tile(TileType.Vec, float32, T, T, addr=0)
    TLOAD(t, x)
    i = 0
    while i >= 0:
        TADDS(t, t, 0.0)  # spin
        i += 1


# B12: an int32 tile through a float-only op (TEXP).
def b12_vec(x):
    t = Tile(TileType.Vec, int32, T, T, addr=0)
    f = Tile(TileType.Vec, int32, T, T, addr=0x1000)
    TEXPANDS(t, 2)
    TEXP(f, t)  # int-exp


# B13: SetValid with more columns than the tile has.
def b13_vec(x):
    t = Tile(TileType.Vec, float32, T, T, addr=0)
    TLOAD(t, x)
    t.SetValid(T, T + 1)  # setvalid


# B14: int8 matmul into an f32 accumulator.
def b14_cube(x):
    a = Tile(TileType.Left, int8, T, 32, addr=0)
    b = Tile(TileType.Right, int8, 32, T, addr=0)
    c = Tile(TileType.Acc, float32, T, T, addr=0)
    TMATMUL(c, a, b)  # int8-f32acc


# B15: TFREE twice for one TPOP.
def b15_vec(fifo, out):
    pipe = _c2v(fifo)
    t = Tile(TileType.Vec, float32, T, T)
    TPOP(pipe, t)
    TFREE(pipe)
    TFREE(pipe)  # double-free


# B16: the Cube TALLOCs a GM slot and never pushes it.
def b16_cube(x, fifo):
    pipe = _gm_pipe(fifo)
    slot = GlobalTensor(float32, (T, T))
    TALLOC(pipe, slot)  # talloc-leak


def b16_vec(fifo):
    pipe = _gm_pipe(fifo)


# B17: V2C, each AIV pushes its UP_DOWN half; the Cube pops UP_DOWN and frees TILE_NO_SPLIT:
#      pto-isa's Cube free of a no-split tile credits AIV0 alone (A5 setIntraBlockBySplit).
def b17_cube(fifo):
    pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, RING_L1)
    t = Tile(TileType.Mat, float32, T, T)
    TPOP(pipe, t, TILE_UP_DOWN)
    TFREE(pipe, TILE_NO_SPLIT)  # free-split


def b17_vec(x, fifo):
    pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, RING_L1)
    h = Tile(TileType.Vec, float32, T // 2, T, addr=0)
    TLOAD(h, gt(x, get_subblockid() * (T // 2) * T, (T // 2, T)))
    TPUSH(pipe, h, TILE_UP_DOWN)


def other_split_free_vec(fifo, out):
    """TPOP UP_DOWN, TFREE LEFT_RIGHT: pto-isa's free tells no split from split only, and a
    Vector core's free is one set of its own flag whatever the split - correct everywhere (a
    16-column Acc splits UP_DOWN on every platform: A5's LEFT_RIGHT push of an Acc takes a
    multiple of 32 columns)."""
    pipe = _c2v(fifo, peers=(0, 1))
    t = Tile(TileType.Vec, float32, T // 2, T)
    o = Tile(TileType.Vec, float32, T // 2, T, addr=0)
    TPOP(pipe, t, TILE_UP_DOWN)
    TADDS(o, t, 0.0)
    TFREE(pipe, TILE_LEFT_RIGHT)
    TSTORE(gt(out, get_subblockid() * (T // 2) * T, (T // 2, T)), o)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_tfree_of_another_split_than_its_tpop_runs(platform, protocol, no_hang):
    a = _args()
    res = ptopipe.run(_producer(1, TILE_UP_DOWN, (0, 1)), other_split_free_vec, a, platform=platform,
                      protocol=protocol, timeout=20)
    np.testing.assert_array_equal(res.outputs["out"], a["x"])


# B18: a scalar an int8 tile cannot hold.
def b18_vec(x):
    t = Tile(TileType.Vec, int8, T, 32, addr=0)
    TEXPANDS(t, 1)
    TADDS(t, t, 300)  # int8-scalar


# B19: A2A3 staging with LocalSlotNum 1: a second TPOP while the first is held lands on
#      the same local buffer.
def b19_vec(fifo, out):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, 1, peers=(0,))(fifo, RING_UB)
    a = Tile(TileType.Vec, float32, T, T)
    b = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0)
    TPOP(pipe, a)
    TPOP(pipe, b)  # second-hold
    TSUB(o, b, a)  # read-first
    TFREE(pipe)
    TFREE(pipe)
    TSTORE(out, o)


def b19_cube(x, fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, 1, peers=(0,))(fifo, RING_UB)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    TPUSH(pipe, acc)
    TPUSH(pipe, acc)


# B20: the Cube pushes f32 tiles; the consumer pops them as f16 tiles of the same shape.
def b20_vec(fifo, out):
    pipe = _c2v(fifo)
    t = Tile(TileType.Vec, float16, T, T)
    TPOP(pipe, t)  # wrong-dtype
    TFREE(pipe)


# B21: a loop with only TSYNC barriers in it never ends.
def b21_vec(x):
    while True:
        TSYNC(Op.TLOAD)  # tsync-spin


# B22: AIV1 also binds (and would pop from) a pipe whose peers are AIV0 only.
def b22_v1(fifo, out):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, RING_UB)  # not-a-peer
    t = Tile(TileType.Vec, float32, T, T)
    TPOP(pipe, t)
    TFREE(pipe)


def _ok_v0(fifo, out):
    pipe = _c2v(fifo)
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(2):
        TPOP(pipe, t)
        TFREE(pipe)


BROKEN = {
    # name: (error class, fn holding the marker, marker, aic, aiv, run kwargs)
    "b1_no_tfree": (DeadlockError, _producer, "push", _producer(3), (b1_vec, None), {}),
    "b2_read_after_free": (ProtocolError, b2_vec, "read-after-free", b2_cube, (b2_vec, None), {}),
    "b3_pop_more_than_pushed": (DeadlockError, b3_vec, "pop-extra", _producer(2), (b3_vec, None), {}),
    "b4_split_mismatch": (ProtocolError, b4_vec, "wrong-split", _producer(1, TILE_UP_DOWN, (0, 1)),
                          b4_vec, {}),
    "b5_tile_too_big_v2c": (ProtocolError, b5_vec, "too-big", b5_cube, (b5_vec, None), {}),
    "b6_shared_flags": (ConfigError, b6_cube, "shared-flag", b6_cube, (b6_vec, None), {}),
    "b7_gm_rings_overlap": (MemoryConflictError, b7_cube, "overlap", b7_cube, (b7_vec, None), {}),
    "b8_staged_after_free": (ProtocolError, b8_vec, "staged-after-free", _producer(2), (b8_vec, None), {}),
    "b9_race_off_pipe": (DataRaceError, b9_v1, "unordered-read", b9_cube, (b9_v0, b9_v1), {}),
    "b10_tpush_wrong_core": (ProtocolError, b10_vec, "wrong-core", _producer(0), (b10_vec, None), {}),
    "b11_endless_loop": (BudgetError, b11_vec, "spin", None, (b11_vec, None), dict(max_instructions=5000)),
    "b12_int_exp": (KernelError, b12_vec, "int-exp", None, (b12_vec, None), {}),
    "b13_setvalid_range": (KernelError, b13_vec, "setvalid", None, (b13_vec, None), {}),
    "b14_int8_f32_acc": (KernelError, b14_cube, "int8-f32acc", b14_cube, None, {}),
    "b15_double_tfree": (ProtocolError, b15_vec, "double-free", _producer(1), (b15_vec, None), {}),
    "b16_talloc_never_pushed": (LeakError, b16_cube, "talloc-leak", b16_cube, (b16_vec, None), {}),
    "b17_free_split": (ProtocolError, b17_cube, "free-split", b17_cube, b17_vec, {}),
    "b18_int8_scalar": (KernelError, b18_vec, "int8-scalar", None, (b18_vec, None), {}),
    "b20_pop_dtype": (ProtocolError, b20_vec, "wrong-dtype", _producer(1), (b20_vec, None), {}),
    "b21_tsync_spin": (BudgetError, b21_vec, "tsync-spin", None, (b21_vec, None), dict(max_instructions=5000)),
    "b22_pop_not_a_peer": (ConfigError, b22_v1, "not-a-peer", _producer(2), (_ok_v0, b22_v1), {}),
}


# Where a "broken" kernel is in fact correct for one platform/protocol (why, next to each):
# it must run clean there - a report would be a false positive.
CLEAN_ON = {
    # pto-isa's A2A3 tile TPOP frees the GM slot inside TPOP and its TFREE is a no-op, so
    # neither a missing TFREE nor a second TFREE changes anything on that target.  (A TFREE
    # freeing a split tile as TILE_NO_SPLIT is reported everywhere, b17: the kernel hangs on A5.)
    "b1_no_tfree": {("a2a3", "pto-isa")},
    "b15_double_tfree": {("a2a3", "pto-isa")},
    # pto-isa flags are FlagID (ready, AIC->AIV) and FlagID+1 (free, AIV->AIC): FlagIDs 0 and
    # 1 give ready 0/1 and free 1/2, each received by a different core - no flag is shared.
    "b6_shared_flags": {("a2a3", "pto-isa"), ("a5", "pto-isa")},
    # on A5 the C2V rings live in the AIV's UB (disjoint bases); the GM pointer is unused
    "b7_gm_rings_overlap": {("a5", "spec"), ("a5", "pto-isa")},
}


@pytest.mark.parametrize("platform,protocol", COMBOS)
@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_kernel_reported_at_its_line(name, platform, protocol, no_hang):
    cls, fn, marker, aic, aiv, kw = BROKEN[name]
    if (platform, protocol) in CLEAN_ON.get(name, ()):
        ptopipe.run(aic, aiv, _args(), platform=platform, protocol=protocol, timeout=20, **kw)
        return
    _raises(cls, fn, marker, aic, aiv, platform=platform, protocol=protocol, **kw)


@pytest.mark.parametrize("protocol,marker", [("spec", "second-hold"), ("pto-isa", "read-first")])
def test_b19_second_pop_into_held_staging_buffer(protocol, marker, no_hang):
    """A2A3 only (A5 pops zero-copy: the two held tiles are distinct ring slots).  spec holds
    the first staged tile until TFREE, so the second TPOP onto it is the error; pto-isa's
    GM-ring TPOP frees at once, so the second TPOP may land there and reading the first
    tile afterwards is the error."""
    err = _raises(ProtocolError, b19_vec, marker, b19_cube, (b19_vec, None), platform="a2a3",
                  protocol=protocol)
    assert "LocalSlotNum" in err.fix, err.fix       # the cause: one staging place for two tiles


# B23: the Cube TSTOREs `out` after its TPUSH; AIV0 TLOADs `out` after its TPOP: the push
#      orders nothing written after it, so the read races with the store.
def b23_cube(x, out, fifo):
    pipe = _c2v(fifo)
    v = Tile(TileType.Mat, float32, T, T, addr=0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    TLOAD(v, x)
    TPUSH(pipe, acc)
    TSTORE(out, v)


def b23_vec(fifo, out):
    pipe = _c2v(fifo)
    t = Tile(TileType.Vec, float32, T, T)
    v = Tile(TileType.Vec, float32, T, T, addr=0)
    TPOP(pipe, t)
    TFREE(pipe)
    TLOAD(v, out)  # read-after-pop


# B24: V2C, AIV1 pushes three tiles, the Cube pops two: data left in the ring at the end.
def b24_cube(fifo):
    pipe = TPipe(2, DIR_V2C, SLOT, 4, peers=(1,))(fifo, 0, RING_L1)
    t = Tile(TileType.Mat, float32, T, T)
    for i in range(2):
        TPOP(pipe, t)
        TFREE(pipe)


def b24_vec(fifo):
    pipe = TPipe(2, DIR_V2C, SLOT, 4, peers=(1,))(fifo, 0, RING_L1)
    t = Tile(TileType.Vec, float32, T, T, addr=0)
    for i in range(3):
        TPUSH(pipe, t)  # unpopped


# B25: a pure-Python loop that never issues an instruction (only the wall clock stops it).
def b25_vec(x):
    t = Tile(TileType.Vec, float32, T, T, addr=0)
    TLOAD(t, x)
    n = 0
    # one line, so the wall-clock interrupt always lands on the marked line
    while n >= 0: n = (n + 1) % 7  # noqa: E701  # python-spin



BROKEN.update({
    "b23_store_after_push_race": (DataRaceError, b23_vec, "read-after-pop", b23_cube, (b23_vec, None), {}),
    "b24_v2c_pushed_never_popped": (LeakError, b24_vec, "unpopped", b24_cube, (None, b24_vec), {}),
})


@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a5", "pto-isa")])
def test_b25_pure_python_loop_stopped_by_wall_clock(platform, protocol, no_hang):
    _raises(BudgetError, b25_vec, "python-spin", None, (b25_vec, None), platform=platform,
            protocol=protocol, timeout=0.1)


@pytest.mark.parametrize("platform,protocol", [c for c in COMBOS if c != ("a2a3", "pto-isa")])
def test_b1_deadlock_names_the_tpop_lacking_tfree(platform, protocol, no_hang):
    err = _raises(DeadlockError, _producer, "push", _producer(3), (b1_vec, None),
                  platform=platform, protocol=protocol)
    pop = f"test_varied_kernels.py:{line_of(b1_vec, 'pop-no-free')}"
    assert f"TPOP at tests/isa/{pop}, no TFREE" in str(err) or f"{pop}, no TFREE" in str(err), str(err)
    assert "AIV0 holds slots 0,1" in str(err)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_b3_deadlock_says_more_pops_than_pushes(platform, protocol, no_hang):
    err = _raises(DeadlockError, b3_vec, "pop-extra", _producer(2), (b3_vec, None),
                  platform=platform, protocol=protocol)
    assert "pushed 2" in str(err) and "popped 2" in str(err)
    assert "will never SET it" in str(err) and "number of TPOPs matches" in err.fix


# K17: the consumer holds every slot of the ring (LocalSlotNum = SlotNum) before freeing
#      them all; the Cube writes tile i's value into its accumulator from the host side.
def _k17(depth):
    S = 8
    slot = S * S * 4

    def cube(fifo, n):
        pipe = TPipe(0, DIR_C2V, slot, depth, depth, peers=(0,))(fifo, RING_UB)
        acc = Tile(TileType.Acc, float32, S, S, addr=0)
        for i in range(n):
            acc.array[...] = i                   # the Cube has no vector unit: set it directly
            TPUSH(pipe, acc)  # k17-push

    def vec(fifo, out, n):
        pipe = TPipe(0, DIR_C2V, slot, depth, depth, peers=(0,))(fifo, RING_UB)
        ts = [Tile(TileType.Vec, float32, S, S) for _ in range(depth)]
        o = Tile(TileType.Vec, float32, S, S, addr=0)
        TEXPANDS(o, 0.0)
        for g in range(n // depth):
            for t in ts:
                TPOP(pipe, t)
            for t in ts:
                TADD(o, o, t)
            for _ in ts:
                TFREE(pipe)  # k17-free
        TSTORE(out, o)
    return cube, (vec, None), S, slot


@pytest.mark.parametrize("platform,protocol", COMBOS)
@pytest.mark.parametrize("depth", [4, 6])
def test_k17_consumer_holds_every_slot(depth, platform, protocol, no_hang):
    """Clean where every release sends its free (spec) or the TPOP frees its slot (pto-isa on
    A2A3, a GM ring).  Under pto-isa on A5 (a ring in UB, SyncPeriod depth / 2) every TFREE of
    a group comes after the group's last TPOP and tests its index (``shouldNotifyFree(
    cons.tileIndex - 1)``), which ends a SyncPeriod: each sends a credit, depth where the
    producer counts on two, so push #depth + 1 overwrites a slot still held - reported at the
    TPUSH, the fix naming the first TFREE and pto-isa's rule."""
    cube, vec, S, slot = _k17(depth)
    n = 2 * depth
    args = dict(fifo=gm_buffer(depth * slot), out=np.zeros((S, S), np.float32), n=n)
    if (platform, protocol) == ("a5", "pto-isa"):
        err = _raises(ProtocolError, cube, "k17-push", cube, vec, args, platform=platform, protocol=protocol)
        assert f":{line_of(vec[0], 'k17-free')} released tile #0 after the TPOP of tile #{depth - 1}" in err.fix, \
            err.fix
        return
    res = ptopipe.run(cube, vec, args, platform=platform, protocol=protocol, timeout=20)
    np.testing.assert_array_equal(res.outputs["out"], np.full((S, S), sum(range(n)), np.float32))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_k17_odd_slotnum_is_protocol_specific(platform, no_hang):
    """SlotNum 7: fine under spec (per-tag frees); under pto-isa (SyncPeriod 2, sparse free
    notifications) the producer reuses slot 0 before the consumer freed it - reported at the
    TPUSH, with the SlotNum rule in the fix."""
    cube, vec, S, slot = _k17(7)
    args = dict(fifo=gm_buffer(7 * slot), out=np.zeros((S, S), np.float32), n=14)
    res = ptopipe.run(cube, vec, dict(args), platform=platform, protocol="spec", timeout=20)
    np.testing.assert_array_equal(res.outputs["out"], np.full((S, S), sum(range(14)), np.float32))
    err = _raises(ProtocolError, cube, "k17-push", cube, vec, dict(args), platform=platform,
                  protocol="pto-isa")
    assert "SlotNum % SyncPeriod" in err.fix
