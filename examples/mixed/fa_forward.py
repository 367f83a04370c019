"""Flash-attention forward as ONE mixed @pl.incore function (FlashAttention-2, single head):
per block of TQ query rows and per block of TK keys, the Cube computes S = Q K^T (C2V),
the Vector side runs the online softmax (running row max m, row sum l, rescaled output O:
loop-carried Vec tiles), P = exp(S - m) crosses back to the Cube (V2C) for P V, and P V
crosses to the Vector side again (C2V), which accumulates O.  Both directions: DIR_MASK 3.
The keys are passed transposed (kt = K^T, D x S) so that K^T loads straight into Right.
out = softmax(Q K^T / sqrt(D)) V.  The compiler's PipelineCrossCoreLoops runs both sides of
the key loop one block ahead, as the hand-written pair examples/dsl/fa_forward.py does.

Run:  ptopipe run examples/mixed/fa_forward.py [--platform a5] [--variant s128]
"""
import numpy as np

import ptopipe
import ptopipe.language as pl
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import KernelSet

D, TQ, TK = 32, 16, 32


def build(SQ, SK):
    SCALE = 1.0 / float(np.sqrt(D))

    @pl.incore(split=pl.TILE_UP_DOWN)
    def fa(q: pl.Tensor[[SQ, D], pl.f32], kt: pl.Tensor[[D, SK], pl.f32],
           v: pl.Tensor[[SK, D], pl.f32], out: pl.Tensor[[SQ, D], pl.f32]):
        for qi in pl.range(SQ // TQ):
            q_l0 = pl.move(pl.load(q, [qi * TQ, 0], [TQ, D], space=pl.Mat), space=pl.Left)
            m0 = pl.full([TQ, 1], pl.f32, -1e30)
            l0 = pl.full([TQ, 1], pl.f32, 0.0)
            o0 = pl.full([TQ, D], pl.f32, 0.0)
            for j, (m, l, o) in pl.range(SK // TK, init_values=(m0, l0, o0)):
                k_l0 = pl.move(pl.load(kt, [0, j * TK], [D, TK], space=pl.Mat), space=pl.Right)
                s_acc = pl.matmul(q_l0, k_l0)
                s = pl.muls(pl.move(s_acc, space=pl.Vec), SCALE)      # C2V boundary
                m_new = pl.maximum(m, pl.row_max(s))
                p = pl.exp(pl.row_expand_sub(s, m_new))
                alpha = pl.exp(pl.sub(m, m_new))
                l_new = pl.add(pl.mul(l, alpha), pl.row_sum(p))
                p_l0 = pl.move(p, space=pl.Left)                      # V2C boundary
                v_l0 = pl.move(pl.load(v, [j * TK, 0], [TK, D], space=pl.Mat), space=pl.Right)
                pv = pl.move(pl.matmul(p_l0, v_l0), space=pl.Vec)     # C2V boundary
                o_new = pl.add(pl.row_expand_mul(o, alpha), pv)
                m1, l1, o1 = pl.yield_(m_new, l_new, o_new)
            pl.store(pl.row_expand_div(o1, l1), [qi * TQ, 0], out)

    return pl.program(fa, name=f"fa_forward_q{SQ}_k{SK}")


KERNELS = KernelSet(build)


def make_args(rng, SQ=32, SK=64):
    k = rng.standard_normal((SK, D)).astype(np.float32)
    args = dict(q=rng.standard_normal((SQ, D)).astype(np.float32), kt=np.ascontiguousarray(k.T),
                v=rng.standard_normal((SK, D)).astype(np.float32),
                out=np.zeros((SQ, D), np.float32), SQ=SQ, SK=SK)
    return with_slot_buffer(KERNELS.source(**args), args)


def golden(args, **_):
    s = args["q"].astype(np.float64) @ args["kt"].astype(np.float64) / np.sqrt(D)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return {"out": (p / p.sum(axis=1, keepdims=True)) @ args["v"].astype(np.float64)}


VARIANTS = {"default": dict(SQ=32, SK=64), "s128": dict(SQ=64, SK=128)}

SCENARIO = ptopipe.Scenario("mixed_fa_forward", KERNELS.aic, KERNELS.aiv, make_args, golden,
                            VARIANTS, doc=__doc__, rtol=1e-4, atol=1e-5)
