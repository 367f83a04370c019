"""S1 cv_split as ONE mixed @pl.incore function: the Cube computes A@B tile by tile, the
accumulator crosses to the Vector side (pl.move Acc -> Vec: a C2V boundary), which adds the
bias and stores.  ExpandMixedKernel turns it into the AIC + AIV pair of
examples/dsl/s1_cv_split.py (TPUSH / TPOP, reserve / import, pipe init); InsertTfree frees
each slot after the add.  out = A @ B + bias.

Run:  ptopipe run examples/mixed/s1_cv_split.py [--platform a5] [--variant lr_m32]
"""
import numpy as np

import ptopipe
import ptopipe.language as pl
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import KernelSet

TM, K, N = 16, 32, 32


def build(M, split, slot_num):
    @pl.incore(split=split, slot_num=slot_num)
    def s1(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
           bias: pl.Tensor[[M, N], pl.f32], out: pl.Tensor[[M, N], pl.f32]):
        b_l1 = pl.load(b, [0, 0], [K, N], space=pl.Mat)
        b_l0 = pl.move(b_l1, space=pl.Right)
        for i in pl.range(M // TM):
            a_l1 = pl.load(a, [i * TM, 0], [TM, K], space=pl.Mat)
            a_l0 = pl.move(a_l1, space=pl.Left)
            acc = pl.matmul(a_l0, b_l0)
            part = pl.move(acc, space=pl.Vec)                 # C2V boundary
            bv = pl.load(bias, [i * TM, 0], [TM, N])
            o = pl.add(part, bv)
            pl.store(o, [i * TM, 0], out)

    return pl.program(s1, name=f"s1_mixed_m{M}")


KERNELS = KernelSet(build)


def make_args(rng, M=64, split=pl.TILE_UP_DOWN, slot_num=4):
    args = dict(a=rng.integers(-3, 4, (M, K)).astype(np.float32),
                b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                bias=rng.integers(-8, 9, (M, N)).astype(np.float32),
                out=np.zeros((M, N), np.float32), M=M, split=split, slot_num=slot_num)
    return with_slot_buffer(KERNELS.source(**args), args)


def golden(args, **_):
    return {"out": args["a"] @ args["b"] + args["bias"]}


VARIANTS = {"default": dict(M=64, split=pl.TILE_UP_DOWN, slot_num=4),
            "lr_m32": dict(M=32, split=pl.TILE_LEFT_RIGHT, slot_num=4),
            "ud_default_slots": dict(M=64, split=pl.TILE_UP_DOWN, slot_num=None)}

SCENARIO = ptopipe.Scenario("mixed_s1_cv_split", KERNELS.aic, KERNELS.aiv, make_args, golden,
                            VARIANTS, doc=__doc__)
