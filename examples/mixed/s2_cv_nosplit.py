"""S2 cv_nosplit as ONE mixed @pl.incore(split=pl.TILE_NO_SPLIT) function: the Cube
computes A@B tile by tile, the whole accumulator crosses to the Vector side (no split),
which adds the bias and stores.  ExpandMixedKernel makes an AIV function working on whole
tiles: on A2A3 AIV1 takes part in every handshake on empty valid shapes (the lane-1
replay: no byte moved, nothing computed or stored); on A5 the pipe has one lane, AIV0
(``lanes=1``: AIV1 runs nothing; spec and pto-isa alike), like the hand-written
examples/scenarios/s2_cv_nosplit.py.  out = A @ B + bias.

Run:  ptopipe run examples/mixed/s2_cv_nosplit.py [--platform a5] [--variant m16_n64]
"""
import numpy as np

import ptopipe
import ptopipe.language as pl
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import KernelSet

TM, K = 16, 32


def build(M, N, slot_num):
    @pl.incore(split=pl.TILE_NO_SPLIT, slot_num=slot_num)
    def s2(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
           bias: pl.Tensor[[M, N], pl.f32], out: pl.Tensor[[M, N], pl.f32]):
        b_l0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(M // TM):
            a_l0 = pl.move(pl.load(a, [i * TM, 0], [TM, K], space=pl.Mat), space=pl.Left)
            part = pl.move(pl.matmul(a_l0, b_l0), space=pl.Vec)     # C2V boundary, whole tile
            o = pl.add(part, pl.load(bias, [i * TM, 0], [TM, N]))
            pl.store(o, [i * TM, 0], out)

    return pl.program(s2, name=f"s2_mixed_m{M}_n{N}")


KERNELS = KernelSet(build)


def make_args(rng, M=64, N=32, slot_num=4):
    args = dict(a=rng.integers(-3, 4, (M, K)).astype(np.float32),
                b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                bias=rng.integers(-8, 9, (M, N)).astype(np.float32),
                out=np.zeros((M, N), np.float32), M=M, N=N, slot_num=slot_num)
    return with_slot_buffer(KERNELS.source(**args), args)


def golden(args, **_):
    return {"out": args["a"] @ args["b"] + args["bias"]}


VARIANTS = {"default": dict(M=64, N=32, slot_num=4),
            "m16_n64": dict(M=16, N=64, slot_num=4),
            "m160_default_slots": dict(M=160, N=32, slot_num=None)}

SCENARIO = ptopipe.Scenario("mixed_s2_cv_nosplit", KERNELS.aic, KERNELS.aiv, make_args, golden,
                            VARIANTS, doc=__doc__)
