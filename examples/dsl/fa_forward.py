"""Flash-attention forward (FlashAttention-2, single head) as a hand-written DSL kernel pair,
the same computation, shapes and variants as examples/mixed/fa_forward.py: one bidirectional
pipe (DIR_BOTH, SLOT_NUM 4 per direction, one 16x32 f32 tile per slot), split UP_DOWN.
Per block of TQ query rows and per block of TK keys the Cube computes S = Q K^T and TPUSHes
it (C2V); each Vector core TPOPs its TQ/2 rows, runs the online softmax (running row max m,
row sum l, rescaled output O) and TPUSHes P = exp(S - m) back (V2C); the Cube TPOPs the whole
P, computes P V and TPUSHes it (C2V); each Vector core TPOPs its half and accumulates O.

Overlap: both sides run one key block ahead.  In step t the Cube pushes S(t) before it waits
for P(t-1); the Vector side pops S(t) and pushes P(t) before it waits for P(t-1) V, so the
Cube computes the next S while the Vector works, and P V overlaps the next softmax.  The
Vector keeps the rescale factor alpha(t-1) for the P V it receives one step late.
The keys are passed transposed (kt = K^T, D x S) so that K^T loads straight into Right.
out = softmax(Q K^T / sqrt(D)) V.

Run:  ptopipe run examples/dsl/fa_forward.py [--platform a5] [--variant s128]
"""
import numpy as np

import ptopipe
import ptopipe.language as pl
from ptopipe.runtime import KernelSet

D, TQ, TK = 32, 16, 32
HQ = TQ // 2                          # query rows per Vector core (UP_DOWN)
SLOT = TQ * max(TK, D) * 4            # one 16x32 f32 tile: S, P and P V all fit
DEPTH = 4                             # seed 003: SLOT_NUM = 4 per direction when bidirectional
SPLIT = pl.TILE_UP_DOWN


def build(SQ, SK):
    SCALE = 1.0 / float(np.sqrt(D))
    NK = SK // TK

    @pl.aiv
    def vector(out: pl.Tensor[[SQ, D], pl.f32], fifo: pl.Tensor[[2 * DEPTH * SLOT], pl.u8]):
        c2v_buf = pl.reserve_buffer(name="c2v_slot_buffer", size=DEPTH * SLOT, base=pl.AUTO)
        v2c_buf = pl.import_peer_buffer(name="v2c_slot_buffer", peer_func=cube)
        pl.aiv_initialize_pipe(pl.DIR_BOTH, SLOT, fifo,
                               c2v_consumer_buf=c2v_buf.base, v2c_consumer_buf=v2c_buf.base)
        sub = pl.get_subblockid()
        for qi in pl.range(SQ // TQ):
            m = pl.full([HQ, 1], pl.f32, -1e30)
            l = pl.full([HQ, 1], pl.f32, 0.0)
            o = pl.full([HQ, D], pl.f32, 0.0)
            alpha = pl.full([HQ, 1], pl.f32, 1.0)
            for t in pl.range(NK + 1):
                alpha_prev = alpha                    # the factor for P(t-1) V, popped below
                if t < NK:
                    s_raw = pl.TPOP(c2v_buf, pl.Tile[[HQ, TK], pl.f32, pl.Vec], split=SPLIT)
                    s = pl.muls(s_raw, SCALE)
                    pl.TFREE(c2v_buf)
                    m_new = pl.maximum(m, pl.row_max(s))
                    p = pl.exp(pl.row_expand_sub(s, m_new))
                    pl.TPUSH(p, v2c_buf, split=SPLIT)
                    alpha = pl.exp(pl.sub(m, m_new))
                    l = pl.add(pl.mul(l, alpha), pl.row_sum(p))
                    m = m_new
                if t >= 1:
                    pv = pl.TPOP(c2v_buf, pl.Tile[[HQ, D], pl.f32, pl.Vec], split=SPLIT)
                    o = pl.add(pl.row_expand_mul(o, alpha_prev), pv)
                    pl.TFREE(c2v_buf)
            pl.store(pl.row_expand_div(o, l), [qi * TQ + sub * HQ, 0], out)

    @pl.aic
    def cube(q: pl.Tensor[[SQ, D], pl.f32], kt: pl.Tensor[[D, SK], pl.f32],
             v: pl.Tensor[[SK, D], pl.f32], fifo: pl.Tensor[[2 * DEPTH * SLOT], pl.u8]):
        v2c_buf = pl.reserve_buffer(name="v2c_slot_buffer", size=DEPTH * SLOT, base=pl.AUTO)
        c2v_buf = pl.import_peer_buffer(name="c2v_slot_buffer", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_BOTH, SLOT, fifo,
                               c2v_consumer_buf=c2v_buf.base, v2c_consumer_buf=v2c_buf.base)
        for qi in pl.range(SQ // TQ):
            q_l0 = pl.move(pl.load(q, [qi * TQ, 0], [TQ, D], space=pl.Mat), space=pl.Left)
            for t in pl.range(NK + 1):
                if t < NK:                            # S(t) = Q K^T for key block t
                    k_l0 = pl.move(pl.load(kt, [0, t * TK], [D, TK], space=pl.Mat), space=pl.Right)
                    s_acc = pl.matmul(q_l0, k_l0)
                    pl.TPUSH(s_acc, c2v_buf, split=SPLIT)
                if t >= 1:                            # P(t-1) V for the block before
                    j = t - 1
                    v_l0 = pl.move(pl.load(v, [j * TK, 0], [TK, D], space=pl.Mat), space=pl.Right)
                    p = pl.TPOP(v2c_buf, pl.Tile[[TQ, TK], pl.f32, pl.Mat], split=SPLIT)
                    p_l0 = pl.move(p, space=pl.Left)
                    pl.TFREE(v2c_buf)
                    pv = pl.matmul(p_l0, v_l0)
                    pl.TPUSH(pv, c2v_buf, split=SPLIT)

    return pl.program(cube, vector, name=f"fa_forward_dsl_q{SQ}_k{SK}")


KERNELS = KernelSet(build)


def make_args(rng, SQ=32, SK=64):
    k = rng.standard_normal((SK, D)).astype(np.float32)
    return dict(q=rng.standard_normal((SQ, D)).astype(np.float32), kt=np.ascontiguousarray(k.T),
                v=rng.standard_normal((SK, D)).astype(np.float32),
                out=np.zeros((SQ, D), np.float32), fifo=ptopipe.gm_buffer(2 * DEPTH * SLOT),
                SQ=SQ, SK=SK)


def golden(args, **_):
    s = args["q"].astype(np.float64) @ args["kt"].astype(np.float64) / np.sqrt(D)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return {"out": (p / p.sum(axis=1, keepdims=True)) @ args["v"].astype(np.float64)}


VARIANTS = {"default": dict(SQ=32, SK=64), "s128": dict(SQ=64, SK=128)}

SCENARIO = ptopipe.Scenario("dsl_fa_forward", KERNELS.aic, KERNELS.aiv, make_args, golden,
                            VARIANTS, doc=__doc__, rtol=1e-4, atol=1e-5)
