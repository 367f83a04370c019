"""Flash attention on one cluster: O = softmax(Q K^T / sqrt(d)) V, S0=64 queries, HEAD=64,
S1=512 keys in Cube tiles of 64x64 (8 KV tiles), online (tiled) softmax on the Vector cores.

Cube (AIC), per KV tile j:    S_j = Q @ K_j^T      -> TPUSH  S ring  (C2V, UP_DOWN)
                              TPOP P_j (V2C)  ->  O_j = P_j @ V_j -> TPUSH O ring (C2V, UP_DOWN)
Vector (each AIV, 32 rows):   TPOP S_j -> m_j = max(m, rowmax(S_j / sqrt d)), P_j = exp(S_j/sqrt d - m_j),
                              l = l * exp(m - m_j) + rowsum(P_j) -> P_j as f16 -> TPUSH P ring (V2C)
                              TPOP O_j -> acc = acc * exp(m_prev - m_j) + O_j;   at the end O = acc / l
The Cube runs PRELOAD score tiles ahead (QK^T of tile j+PRELOAD overlaps softmax of tile j), as
in pto-isa's runTFA (cube tile 64x64, preload 4).  K is passed transposed (HEAD x S1, the "DN"
layout) so a K^T tile is a strided GM view.

Protocols: runs under both.  The O and P rings have SlotNum 2 and set sync_period=1 (pto-isa's
FiFoSyncT = 1: a free notification per TFREE).  With TPipe's default pto-isa SyncPeriod (2 for
SlotNum 2) a free is notified only every second TFREE, and preload 4 deadlocks under
--protocol pto-isa: the Cube's push of O_2 waits until both O_0 and O_1 are freed, but each
Vector core frees O_1 only after it has pushed P_4, which waits until the Cube has freed P_2
and P_3 - and the Cube frees P_3 only after that O_2 push.  The seed-003 ('spec') protocol
frees per slot, so sync_period does not change it.

Run:      ptopipe run examples/flash_attention.py [--report fa.html]
Profile:  python examples/flash_attention.py          (prints the profile; see docs/performance.md)
Sweep:    ptopipe sweep examples/flash_attention.py --param preload=1,2,4 --param s_depth=2,4
"""
import math

import numpy as np

from ptopipe import Scenario
from ptopipe.isa import *

S0, D, TS = 64, 64, 64            # queries, head dim, KV tile (Cube tiles are 64x64)
H = S0 // 2                       # rows per Vector core (UP_DOWN split)
S_SLOT = S0 * TS * 4              # a 64x64 f32 score / output tile
P_SLOT = S0 * TS * 2              # a 64x64 f16 probability tile
O_FLAG, P_FLAG = 4, 6             # flag ranges: S ring 0..s_depth-1, O ring 4..5, P ring 6..7
O_DEPTH, P_DEPTH = 2, 2
# A5 rings live in the consumer's memory: S and O rings in each AIV's UB, P ring in L1
UB_S_RING, UB_O_RING, L1_P_RING = 0x10000, 0x20000, 0x20000


def pipes(fifo_s, fifo_o, fifo_p, s_depth):
    s = TPipe(0, DIR_C2V, S_SLOT, s_depth)(fifo_s, UB_S_RING, 0)
    # sync_period=1: under pto-isa a 2-slot ring would otherwise notify a free only every
    # second TFREE, and the preload pipeline deadlocks (see the module docstring)
    o = TPipe(O_FLAG, DIR_C2V, S_SLOT, O_DEPTH, sync_period=1)(fifo_o, UB_O_RING, 0)
    p = TPipe(P_FLAG, DIR_V2C, P_SLOT, P_DEPTH, sync_period=1)(fifo_p, 0, L1_P_RING)
    return s, o, p


def cube(q, kt, v, fifo_s, fifo_o, fifo_p, s1, preload, s_depth):
    s_pipe, o_pipe, p_pipe = pipes(fifo_s, fifo_o, fifo_p, s_depth)
    q1 = Tile(TileType.Mat, float16, S0, D, addr=0x0)
    k1 = Tile(TileType.Mat, float16, D, TS, addr=0x2000)
    v1 = Tile(TileType.Mat, float16, TS, D, addr=0x4000)
    p1 = Tile(TileType.Mat, float16, S0, TS, addr=0x6000)
    q0 = Tile(TileType.Left, float16, S0, D, addr=0x0)
    p0 = Tile(TileType.Left, float16, S0, TS, addr=0x2000)
    k0 = Tile(TileType.Right, float16, D, TS, addr=0x0)
    v0 = Tile(TileType.Right, float16, TS, D, addr=0x2000)
    acc_s = Tile(TileType.Acc, float32, S0, TS, addr=0x0)
    acc_o = Tile(TileType.Acc, float32, S0, D, addr=0x4000)
    n = s1 // TS
    TLOAD(q1, q)
    TMOV(q0, q1)

    def scores(j):
        TLOAD(k1, GlobalTensor(kt.data() + j * TS, (D, TS), (s1, 1)))
        TMOV(k0, k1)
        TMATMUL(acc_s, q0, k0)
        TPUSH(s_pipe, acc_s, TILE_UP_DOWN)

    for j in range(min(preload, n)):
        scores(j)
    for j in range(n):
        TLOAD(v1, GlobalTensor(v.data() + j * TS * D, (TS, D)))
        TMOV(v0, v1)
        TPOP(p_pipe, p1, TILE_UP_DOWN)
        TMOV(p0, p1)
        TFREE(p_pipe)
        TMATMUL(acc_o, p0, v0)
        TPUSH(o_pipe, acc_o, TILE_UP_DOWN)
        if j + preload < n:
            scores(j + preload)


def vector(o, fifo_s, fifo_o, fifo_p, s1, preload, s_depth):
    sub = get_subblockid()
    s_pipe, o_pipe, p_pipe = pipes(fifo_s, fifo_o, fifo_p, s_depth)
    n = s1 // TS
    s = Tile(TileType.Vec, float32, H, TS, addr=0x0)         # popped scores (8 KiB)
    p16 = Tile(TileType.Vec, float16, H, TS, addr=0x2000)    # probabilities to push (4 KiB)
    oj = Tile(TileType.Vec, float32, H, D, addr=0x3000)      # popped P_j @ V_j
    acc = Tile(TileType.Vec, float32, H, D, addr=0x5000)     # running output
    # a per-row value: a DN column (the row reductions' dst, the TROWEXPAND* operand) and its
    # [1, H] row view on the same bytes, which the element-wise ops take (pto-isa runs them on
    # RowMajor tiles only)
    stat = lambda k: (Tile(TileType.Vec, float32, H, 1, addr=0x7000 + k * 0x400),
                      Tile(TileType.Vec, float32, 1, H, addr=0x7000 + k * 0x400))
    (m, m_r), (l, l_r), (mj, mj_r), (rs, rs_r), (tmp, tmp_r) = [stat(k) for k in range(5)]
    alphas = [stat(5 + k) for k in range(preload + 1)]       # rescale factor per tile in flight
    TEXPANDS(m_r, -np.inf)
    TEXPANDS(l_r, 0.0)
    TEXPANDS(acc, 0.0)
    scale = 1.0 / math.sqrt(D)

    def softmax(j):
        alpha_r = alphas[j % len(alphas)][1]
        TPOP(s_pipe, s, TILE_UP_DOWN)
        TMULS(s, s, scale)
        TROWMAX(mj, s)
        TMAX(mj_r, mj_r, m_r)               # new running max
        TSUB(tmp_r, m_r, mj_r)
        TEXP(alpha_r, tmp_r)                # alpha = exp(m_old - m_new)
        TMOV(m_r, mj_r)                     # m = m_new
        TROWEXPANDSUB(s, s, mj)
        TEXP(s, s)                          # P_j = exp(S_j - m_new)
        TROWSUM(rs, s)
        TMUL(l_r, l_r, alpha_r)
        TADD(l_r, l_r, rs_r)                # l = l * alpha + rowsum(P_j)
        TCVT(p16, s)
        TFREE(s_pipe)
        TPUSH(p_pipe, p16, TILE_UP_DOWN)

    for j in range(min(preload, n)):
        softmax(j)
    for j in range(n):
        TPOP(o_pipe, oj, TILE_UP_DOWN)
        TROWEXPANDMUL(acc, acc, alphas[j % len(alphas)][0])
        TADD(acc, acc, oj)                  # acc = acc * alpha_j + P_j @ V_j
        TFREE(o_pipe)
        if j + preload < n:
            softmax(j + preload)
    TROWEXPANDDIV(acc, acc, l)
    TSTORE(GlobalTensor(o.data() + sub * H * D, (H, D)), acc)


def make_args(rng, s1=512, preload=4, s_depth=4):
    q = rng.standard_normal((S0, D)).astype(np.float16)
    k = rng.standard_normal((s1, D)).astype(np.float16)
    v = rng.standard_normal((s1, D)).astype(np.float16)
    return dict(q=q, kt=np.ascontiguousarray(k.T), v=v, o=np.zeros((S0, D), np.float32),
                fifo_s=gm_buffer(s_depth * S_SLOT), fifo_o=gm_buffer(O_DEPTH * S_SLOT),
                fifo_p=gm_buffer(P_DEPTH * P_SLOT), s1=s1, preload=preload, s_depth=s_depth)


def golden(args, **_):
    q = args["q"].astype(np.float64)
    k = args["kt"].T.astype(np.float64)
    v = args["v"].astype(np.float64)
    s = q @ k.T / math.sqrt(D)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return {"o": (p / p.sum(axis=1, keepdims=True)) @ v}


SCENARIO = Scenario(
    "flash_attention", cube, vector, make_args, golden,
    {"default": dict(s1=512, preload=4, s_depth=4),
     "preload1": dict(s1=512, preload=1, s_depth=2),
     "s1_2048": dict(s1=2048, preload=4, s_depth=4)},
    rtol=2e-2, atol=5e-3, doc=__doc__)


if __name__ == "__main__":
    from ptopipe.report import profile
    res = SCENARIO.check("default", trace=True)
    print(profile(res).format())
    print("reference (PLATFORMS.md, pto-isa cost model): 12438 cycles")
