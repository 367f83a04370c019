"""S5 subtile_gm as a manual DSL kernel pair: the address flow on a GM ring (depth 2,
slot 128x512 f32).  The Cube TALLOCs a slot as a GM tensor view, stores A@B into its 4
column blocks and TPUSHes it; each Vector core TPOPs its 64x512 half (UP_DOWN) as a GM
view, loads it in 4 slices of 16 rows, adds 3.14, stores them and TFREEs the slot.
On A5 the ring is asked for in GM explicitly (DIR_C2V_GM); on A2A3 rings are in GM
anyway.  The consumer's reserve_buffer is the local staging area of a GM ring (the
address flow does not use it; it keeps the seed's consumer-reserves contract).
out[t*128:(t+1)*128] = [A@B | A@B | A@B | A@B] + 3.14 for each of NT pushes.

Run:  ptopipe run examples/dsl/s5_subtile_gm.py [--platform a5]
"""
import numpy as np

import ptopipe
import ptopipe.language as pl
from ptopipe.runtime import kernels

R, C = 128, 512                       # one slot: 128x512 f32 = 256 KiB
SLOT = R * C * 4
DEPTH = 2
NT = 3                                # slots pushed (wraps the 2-slot ring)
BLK = 128                             # A@B is 128x128: 4 column blocks per slot
HR = R // 2                           # each Vector core's half (UP_DOWN)
SL = 16                               # rows per Vector slice
STAGE = 4096


@pl.aiv
def vector(out: pl.Tensor[[NT * R, C], pl.f32], fifo: pl.Tensor[[DEPTH * SLOT], pl.u8]):
    pipe_buf = pl.reserve_buffer(name="c2v_slot_buffer", size=STAGE, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V_GM, SLOT, fifo, c2v_consumer_buf=pipe_buf.base,
                           v2c_consumer_buf=0, slot_num=DEPTH)
    sub = pl.get_subblockid()
    for t in pl.range(NT):
        half = pl.TPOP(pipe_buf, pl.Tensor[[HR, C], pl.f32], split=pl.TILE_UP_DOWN)
        for j in pl.range(HR // SL):
            x = pl.load(half, [j * SL, 0], [SL, C])
            y = pl.adds(x, 3.14)
            pl.store(y, [t * R + sub * HR + j * SL, 0], out)
        pl.TFREE(pipe_buf, half)


@pl.aic
def cube(a: pl.Tensor[[BLK, BLK], pl.f16], b: pl.Tensor[[BLK, BLK], pl.f16],
         fifo: pl.Tensor[[DEPTH * SLOT], pl.u8]):
    peer_buf = pl.import_peer_buffer(name="c2v_slot_buffer", peer_func=vector)
    pl.aic_initialize_pipe(pl.DIR_C2V_GM, SLOT, fifo, c2v_consumer_buf=peer_buf.base,
                           v2c_consumer_buf=0, slot_num=DEPTH)
    a_l0 = pl.move(pl.load(a, [0, 0], [BLK, BLK], space=pl.Mat), space=pl.Left)
    b_l0 = pl.move(pl.load(b, [0, 0], [BLK, BLK], space=pl.Mat), space=pl.Right)
    acc = pl.matmul(a_l0, b_l0)
    for t in pl.range(NT):
        slot = pl.TALLOC(peer_buf, pl.Tensor[[R, C], pl.f32], split=pl.TILE_UP_DOWN)
        for j in pl.range(C // BLK):
            pl.store(acc, [0, j * BLK], slot)
        pl.TPUSH(slot, peer_buf)


PROGRAM = pl.program(cube, vector, name="s5_subtile_gm")
AIC, AIV = kernels(PROGRAM)


def make_args(rng):
    return dict(a=rng.integers(-3, 4, (BLK, BLK)).astype(np.float16),
                b=rng.integers(-3, 4, (BLK, BLK)).astype(np.float16),
                out=np.zeros((NT * R, C), np.float32), fifo=ptopipe.gm_buffer(DEPTH * SLOT))


def golden(args, **_):
    ab = args["a"].astype(np.float32) @ args["b"].astype(np.float32)
    return {"out": np.tile(np.tile(ab, (1, C // BLK)) + np.float32(3.14), (NT, 1))}


SCENARIO = ptopipe.Scenario("dsl_s5_subtile_gm", AIC, AIV, make_args, golden, doc=__doc__)
