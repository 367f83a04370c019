"""S6 stream_both as ONE mixed @pl.incore function: for every 64-column tile j of B the
Vector side computes A + 1 and sends it to the Cube (pl.move Vec -> Left: V2C), which
multiplies it with B[:, j] and sends the accumulator back (pl.move Acc -> Vec: C2V); the
Vector side adds c_prev and stores.  TILE_LEFT_RIGHT: each Vector core works on its column
half.  Both directions: DIR_MASK 3, SLOT_NUM 4 per direction, SLOT_SIZE 8 KiB (a 32x64 f32
tile either way), as in examples/scenarios/s6_stream_both.py.  out = c_prev + (A + 1) @ B.

Run:  ptopipe run examples/mixed/s6_stream_both.py [--platform a5] [--variant ud]
"""
import numpy as np

import ptopipe
import ptopipe.language as pl
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import KernelSet

M, K, N = 32, 64, 512
TN = 64


def build(split):
    @pl.incore(split=split)
    def s6(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
           c_prev: pl.Tensor[[M, N], pl.f32], out: pl.Tensor[[M, N], pl.f32]):
        for j in pl.range(N // TN):
            x = pl.adds(pl.load(a, [0, 0], [M, K]), 1.0)
            x_l0 = pl.move(x, space=pl.Left)                          # V2C boundary
            b_l0 = pl.move(pl.load(b, [0, j * TN], [K, TN], space=pl.Mat), space=pl.Right)
            r = pl.move(pl.matmul(x_l0, b_l0), space=pl.Vec)          # C2V boundary
            c = pl.load(c_prev, [0, j * TN], [M, TN])
            pl.store(pl.add(r, c), [0, j * TN], out)

    return pl.program(s6, name="s6_mixed")


KERNELS = KernelSet(build)


def make_args(rng, split=pl.TILE_LEFT_RIGHT):
    args = dict(a=rng.integers(-3, 4, (M, K)).astype(np.float32),
                b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                c_prev=rng.integers(-9, 10, (M, N)).astype(np.float32),
                out=np.zeros((M, N), np.float32), split=split)
    return with_slot_buffer(KERNELS.source(**args), args)


def golden(args, **_):
    return {"out": args["c_prev"] + (args["a"] + 1) @ args["b"]}


SCENARIO = ptopipe.Scenario("mixed_s6_stream_both", KERNELS.aic, KERNELS.aiv, make_args, golden,
                            {"default": dict(split=pl.TILE_LEFT_RIGHT),
                             "ud": dict(split=pl.TILE_UP_DOWN)}, doc=__doc__)
