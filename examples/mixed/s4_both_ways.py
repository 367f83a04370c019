"""S4 both_ways as ONE mixed @pl.incore function: per 16-row tile the Vector side computes
A + B, the sum crosses to the Cube (pl.move Vec -> Left: V2C), which multiplies it with D;
the accumulator crosses back (pl.move Acc -> Vec: C2V) and the Vector side subtracts F and
stores.  Both directions at once: DIR_MASK 3, SLOT_NUM 4 per direction (seed 003).
The hand-written pair is examples/dsl/s4_both_ways.py.  out = (A + B) @ D - F.

Run:  ptopipe run examples/mixed/s4_both_ways.py [--platform a5] [--variant lr]
"""
import numpy as np

import ptopipe
import ptopipe.language as pl
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import KernelSet

M, K, N = 128, 64, 128
TM = 16


def build(split):
    @pl.incore(split=split)
    def s4(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[M, K], pl.f32],
           d: pl.Tensor[[K, N], pl.f32], f: pl.Tensor[[M, N], pl.f32],
           out: pl.Tensor[[M, N], pl.f32]):
        d_l1 = pl.load(d, [0, 0], [K, N], space=pl.Mat)
        d_l0 = pl.move(d_l1, space=pl.Right)
        for i in pl.range(M // TM):
            x = pl.load(a, [i * TM, 0], [TM, K])
            y = pl.load(b, [i * TM, 0], [TM, K])
            s = pl.add(x, y)
            s_l0 = pl.move(s, space=pl.Left)                  # V2C boundary
            acc = pl.matmul(s_l0, d_l0)
            res = pl.move(acc, space=pl.Vec)                  # C2V boundary
            fv = pl.load(f, [i * TM, 0], [TM, N])
            o = pl.sub(res, fv)
            pl.store(o, [i * TM, 0], out)

    return pl.program(s4, name="s4_mixed")


KERNELS = KernelSet(build)


def make_args(rng, split=pl.TILE_UP_DOWN):
    args = dict(a=rng.integers(-4, 5, (M, K)).astype(np.float32),
                b=rng.integers(-4, 5, (M, K)).astype(np.float32),
                d=rng.integers(-3, 4, (K, N)).astype(np.float32),
                f=rng.integers(-50, 51, (M, N)).astype(np.float32),
                out=np.zeros((M, N), np.float32), split=split)
    return with_slot_buffer(KERNELS.source(**args), args)


def golden(args, **_):
    return {"out": (args["a"] + args["b"]) @ args["d"] - args["f"]}


SCENARIO = ptopipe.Scenario("mixed_s4_both_ways", KERNELS.aic, KERNELS.aiv, make_args, golden,
                            {"default": dict(split=pl.TILE_UP_DOWN), "ud": dict(split=pl.TILE_UP_DOWN),
                             "lr": dict(split=pl.TILE_LEFT_RIGHT)}, doc=__doc__)
