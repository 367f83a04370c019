"""An MLP chain as ONE mixed @pl.incore function: out = relu(relu(X W1) W2).  The hidden
layer is cut into blocks of TH columns; per block j the Cube computes H_j = X W1[:, j]
(C2V), the Vector side applies the activation and sends A_j = relu(H_j) back (V2C) as
the Left operand of the second matmul, whose K-loop runs over the blocks: the Cube
accumulates A_j W2[j, :] in Acc (pl.matmul on the peeled first block, then pl.matmul_acc
on the loop-carried accumulator).  The result crosses to the Vector side once more for the
final activation and the store.  Both directions: DIR_MASK 3.

Variant ``vec_acc``: the same chain accumulated on the Vector side instead (each A_j W2[j, :]
crosses and is added to a Vec tile): no peeled block.  PipelineCrossCoreLoops runs both
forms one block ahead (the Cube computes H_{j+1} before it waits for A_j).

Run:  ptopipe run benchmarks/mlp_chain_kernel.py [--platform a5] [--variant vec_acc]
(benchmarks/mlp_chain.py measures it against its busiest pipe.)
"""
import numpy as np

import ptopipe
import ptopipe.language as pl
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import KernelSet



def build(M, D, H, TH, N, acc_on):
    NB = H // TH

    @pl.incore(split=pl.TILE_UP_DOWN)
    def mlp(x: pl.Tensor[[M, D], pl.f32], w1: pl.Tensor[[D, H], pl.f32],
            w2: pl.Tensor[[H, N], pl.f32], out: pl.Tensor[[M, N], pl.f32]):
        x_l0 = pl.move(pl.load(x, [0, 0], [M, D], space=pl.Mat), space=pl.Left)
        w1_0 = pl.move(pl.load(w1, [0, 0], [D, TH], space=pl.Mat), space=pl.Right)
        h0 = pl.move(pl.matmul(x_l0, w1_0), space=pl.Vec)               # C2V boundary
        a0 = pl.move(pl.mul(h0, pl.recip(pl.adds(pl.exp(pl.neg(h0)), 1.0))), space=pl.Left)                        # V2C boundary
        w2_0 = pl.move(pl.load(w2, [0, 0], [TH, N], space=pl.Mat), space=pl.Right)
        acc0 = pl.matmul(a0, w2_0)
        for j, (acc,) in pl.range(1, NB, init_values=(acc0,)):
            w1_j = pl.move(pl.load(w1, [0, j * TH], [D, TH], space=pl.Mat), space=pl.Right)
            hj = pl.move(pl.matmul(x_l0, w1_j), space=pl.Vec)           # C2V boundary
            aj = pl.move(pl.mul(hj, pl.recip(pl.adds(pl.exp(pl.neg(hj)), 1.0))), space=pl.Left)                    # V2C boundary
            w2_j = pl.move(pl.load(w2, [j * TH, 0], [TH, N], space=pl.Mat), space=pl.Right)
            acc_next = pl.matmul_acc(acc, aj, w2_j)
            total = pl.yield_(acc_next)
        y = pl.move(total, space=pl.Vec)                                # C2V boundary
        pl.store(pl.relu(y), [0, 0], out)

    @pl.incore(split=pl.TILE_UP_DOWN)
    def mlp_vec(x: pl.Tensor[[M, D], pl.f32], w1: pl.Tensor[[D, H], pl.f32],
                w2: pl.Tensor[[H, N], pl.f32], out: pl.Tensor[[M, N], pl.f32]):
        x_l0 = pl.move(pl.load(x, [0, 0], [M, D], space=pl.Mat), space=pl.Left)
        o0 = pl.full([M, N], pl.f32, 0.0)
        for j, (o,) in pl.range(NB, init_values=(o0,)):
            w1_j = pl.move(pl.load(w1, [0, j * TH], [D, TH], space=pl.Mat), space=pl.Right)
            hj = pl.move(pl.matmul(x_l0, w1_j), space=pl.Vec)           # C2V boundary
            aj = pl.move(pl.mul(hj, pl.recip(pl.adds(pl.exp(pl.neg(hj)), 1.0))), space=pl.Left)                    # V2C boundary
            w2_j = pl.move(pl.load(w2, [j * TH, 0], [TH, N], space=pl.Mat), space=pl.Right)
            pj = pl.move(pl.matmul(aj, w2_j), space=pl.Vec)             # C2V boundary
            o_next = pl.add(o, pj)
            total = pl.yield_(o_next)
        pl.store(pl.relu(total), [0, 0], out)

    return pl.program(mlp if acc_on == "acc" else mlp_vec, name=f"mlp_chain_{acc_on}_m{M}_d{D}_h{H}_n{N}")


KERNELS = KernelSet(build)


def make_args(rng, M=16, D=16, H=64, TH=16, N=16, acc_on="acc"):
    args = dict(x=rng.integers(-3, 4, (M, D)).astype(np.float32),
                w1=rng.integers(-2, 3, (D, H)).astype(np.float32),
                w2=rng.integers(-2, 3, (H, N)).astype(np.float32),
                out=np.zeros((M, N), np.float32), M=M, D=D, H=H, TH=TH, N=N, acc_on=acc_on)
    return with_slot_buffer(KERNELS.source(**args), args)


def golden(args, **_):
    h = args["x"].astype(np.float64) @ args["w1"]
    a = h / (1.0 + np.exp(-h))
    return {"out": np.maximum(a @ args["w2"], 0.0)}


VARIANTS = {"default": dict(M=16, D=16, H=64, TH=16, N=16, acc_on="acc"),
            "vec_acc": dict(M=16, D=16, H=64, TH=16, N=16, acc_on="vec"),
            "m128_h1024": dict(M=128, D=64, H=1024, TH=64, N=64, acc_on="acc"),
            "m128_h1024_vec_acc": dict(M=128, D=64, H=1024, TH=64, N=64, acc_on="vec")}

SCENARIO = ptopipe.Scenario("mixed_mlp_chain", KERNELS.aic, KERNELS.aiv, make_args, golden,
                            VARIANTS, doc=__doc__, rtol=1e-4, atol=1e-3)
