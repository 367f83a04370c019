"""S3 vc_dequant as ONE mixed @pl.incore function: the Vector side dequantises the int8 /
int16 weight B one K-tile of 64 rows at a time, dequant(q) = (q - offset) * scale in f32
(int8 converts through f16);
the tile crosses to the Cube (pl.move Vec -> Right: V2C), which accumulates
A[:, k-tile] @ B_k (pl.matmul, then pl.matmul_acc on the loop-carried accumulator) and
stores the result.  One direction (V2C): DIR_MASK 2, SLOT_NUM 8 unless slot_num= is given.
out = A @ dequant(B).

Run:  ptopipe run examples/mixed/s3_vc_dequant.py [--platform a5] [--variant i16_lr_k256]
"""
import numpy as np

import ptopipe
import ptopipe.language as pl
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import KernelSet

M, TK = 16, 64
OFFSET, SCALE = 3.0, 0.5


def build(K, N, qtype, split):
    QT = pl.i8 if qtype == "i8" else pl.i16
    VIA_F16 = qtype == "i8"           # TCVT has no int8 -> f32: through f16, which holds every int8

    @pl.incore(split=split, slot_num=4)
    def s3(a: pl.Tensor[[M, K], pl.f32], q: pl.Tensor[[K, N], QT],
           out: pl.Tensor[[M, N], pl.f32]):
        q0 = pl.load(q, [0, 0], [TK, N])
        if VIA_F16:
            q0 = pl.cast(q0, pl.f16)
        w0 = pl.muls(pl.subs(pl.cast(q0, pl.f32), OFFSET), SCALE)
        w0_l0 = pl.move(w0, space=pl.Right)                   # V2C boundary
        a0 = pl.move(pl.load(a, [0, 0], [M, TK], space=pl.Mat), space=pl.Left)
        acc0 = pl.matmul(a0, w0_l0)
        for k, (acc,) in pl.range(1, K // TK, init_values=(acc0,)):
            qk = pl.load(q, [k * TK, 0], [TK, N])
            if VIA_F16:
                qk = pl.cast(qk, pl.f16)
            wk = pl.muls(pl.subs(pl.cast(qk, pl.f32), OFFSET), SCALE)
            wk_l0 = pl.move(wk, space=pl.Right)               # V2C boundary
            ak = pl.move(pl.load(a, [0, k * TK], [M, TK], space=pl.Mat), space=pl.Left)
            acc_next = pl.matmul_acc(acc, ak, wk_l0)
            total = pl.yield_(acc_next)
        pl.store(total, [0, 0], out)

    return pl.program(s3, name=f"s3_mixed_{qtype}_k{K}_n{N}")


KERNELS = KernelSet(build)


def make_args(rng, K=128, N=32, qtype="i8", split=pl.TILE_UP_DOWN):
    qt = np.int8 if qtype == "i8" else np.int16
    args = dict(a=rng.integers(-3, 4, (M, K)).astype(np.float32),
                q=rng.integers(-8, 9, (K, N)).astype(qt),
                out=np.zeros((M, N), np.float32), K=K, N=N, qtype=qtype, split=split)
    return with_slot_buffer(KERNELS.source(**args), args)


def golden(args, **_):
    w = (args["q"].astype(np.float32) - OFFSET) * SCALE
    return {"out": args["a"] @ w}


VARIANTS = {"default": dict(K=128, N=32, qtype="i8", split=pl.TILE_UP_DOWN),
            "i16_lr_k256": dict(K=256, N=64, qtype="i16", split=pl.TILE_LEFT_RIGHT),
            "i8_ud_k64": dict(K=64, N=64, qtype="i8", split=pl.TILE_UP_DOWN)}

SCENARIO = ptopipe.Scenario("mixed_s3_vc_dequant", KERNELS.aic, KERNELS.aiv, make_args, golden,
                            VARIANTS, doc=__doc__)
