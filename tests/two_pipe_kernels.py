"""A hand-written AIC/AIV pair with TWO pipes per function - a C2V one and a V2C one, each
with its own rings and GM slot buffer - so AllocateFlags gives the second pipe a non-zero
FlagID (seed 003: the V2C pipe after the C2V pipe's SlotNum flags).  The Vector function
initialises its pipes in the other order than the Cube (unless ``vector_c2v_first``), so the two ends agree on the flags
only through AllocateFlags (which numbers the pipes in the Cube's order).
out = 2 ((A + B) @ D)."""
import numpy as np

import ptopipe
import ptopipe.language as pl

M, K, N = 64, 32, 32
TM = 16
SLOT = TM * max(K, N) * 4
DEPTH = 4


def build(split=pl.TILE_UP_DOWN, vector_c2v_first=False):
    XR, XC = TM // 2, K
    YR, YC = TM // 2, N

    @pl.aiv
    def vector(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[M, K], pl.f32],
               out: pl.Tensor[[M, N], pl.f32], fifo_c: pl.Tensor[[DEPTH * SLOT], pl.u8],
               fifo_v: pl.Tensor[[DEPTH * SLOT], pl.u8]):
        c2v_buf = pl.reserve_buffer(name="c2v_ring", size=DEPTH * SLOT, base=pl.AUTO)
        v2c_buf = pl.import_peer_buffer(name="v2c_ring", peer_func=cube)
        if vector_c2v_first:
            pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo_c, c2v_consumer_buf=c2v_buf.base,
                                   v2c_consumer_buf=0, slot_num=DEPTH)
        pl.aiv_initialize_pipe(pl.DIR_V2C, SLOT, fifo_v, c2v_consumer_buf=0,  # vinit
                               v2c_consumer_buf=v2c_buf.base, slot_num=DEPTH)
        if not vector_c2v_first:
            pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo_c, c2v_consumer_buf=c2v_buf.base,
                                   v2c_consumer_buf=0, slot_num=DEPTH)
        sub = pl.get_subblockid()
        for i in pl.range(M // TM):
            x = pl.load(a, [i * TM + sub * XR, 0], [XR, XC])
            y = pl.load(b, [i * TM + sub * XR, 0], [XR, XC])
            s = x + y
            pl.TPUSH(s, v2c_buf, split=split)
            res = pl.TPOP(c2v_buf, pl.Tile[[YR, YC], pl.f32, pl.Vec], split=split)
            o = pl.add(res, res)
            pl.TFREE(c2v_buf)
            pl.store(o, [i * TM + sub * YR, 0], out)

    @pl.aic
    def cube(d: pl.Tensor[[K, N], pl.f32], fifo_c: pl.Tensor[[DEPTH * SLOT], pl.u8],
             fifo_v: pl.Tensor[[DEPTH * SLOT], pl.u8]):
        v2c_buf = pl.reserve_buffer(name="v2c_ring", size=DEPTH * SLOT, base=pl.AUTO)
        c2v_buf = pl.import_peer_buffer(name="c2v_ring", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo_c, c2v_consumer_buf=c2v_buf.base,
                               v2c_consumer_buf=0, slot_num=DEPTH)
        pl.aic_initialize_pipe(pl.DIR_V2C, SLOT, fifo_v, c2v_consumer_buf=0,
                               v2c_consumer_buf=v2c_buf.base, slot_num=DEPTH)
        d_l1 = pl.load(d, [0, 0], [K, N], space=pl.Mat)
        d_l0 = pl.move(d_l1, space=pl.Right)
        for i in pl.range(M // TM):
            x = pl.TPOP(v2c_buf, pl.Tile[[TM, K], pl.f32, pl.Mat], split=split)
            x_l0 = pl.move(x, space=pl.Left)
            pl.TFREE(v2c_buf)
            acc = pl.matmul(x_l0, d_l0)
            pl.TPUSH(acc, c2v_buf, split=split)

    return pl.program(cube, vector, name="two_pipes")


def make_args(rng):
    return dict(a=rng.integers(-3, 4, (M, K)).astype(np.float32),
                b=rng.integers(-3, 4, (M, K)).astype(np.float32),
                d=rng.integers(-3, 4, (K, N)).astype(np.float32),
                out=np.zeros((M, N), np.float32),
                fifo_c=ptopipe.gm_buffer(DEPTH * SLOT), fifo_v=ptopipe.gm_buffer(DEPTH * SLOT))


def golden(args):
    return 2 * ((args["a"] + args["b"]) @ args["d"])
