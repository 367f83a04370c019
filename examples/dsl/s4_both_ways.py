"""S4 both_ways as a manual DSL kernel pair: one bidirectional pipe (DIR_C2V | DIR_V2C,
SLOT_NUM 4 per direction, as seed 003 sets it).  Each function reserves the ring it
consumes and imports the one it produces into.  Per 16-row tile the Vector cores compute
their half of (A + B) and TPUSH it (V2C); the Cube TPOPs the 16x64 tile, multiplies it
with D and TPUSHes the 16x128 accumulator back (C2V); each Vector core TPOPs its half,
subtracts F and stores it.  The Vector cores run LAG tiles ahead on the V2C ring.
out = (A + B) @ D - F.

Run:  ptopipe run examples/dsl/s4_both_ways.py [--platform a5] [--variant lr]
"""
import numpy as np

import ptopipe
import ptopipe.language as pl
from ptopipe.runtime import KernelSet

M, K, N = 128, 64, 128
TM = 16                               # rows per ring tile: 8 tiles through 4-slot rings
SLOT = TM * max(K, N) * 4             # 8 KiB: one 16x128 f32 tile (the 16x64 one fits too)
DEPTH = 4                             # seed 003: SLOT_NUM = 4 per direction when bidirectional
LAG = 2
TILES = M // TM


def build(split):
    UD = split == pl.TILE_UP_DOWN
    XR, XC = (TM // 2, K) if UD else (TM, K // 2)     # this core's part of an (A+B) tile
    YR, YC = (TM // 2, N) if UD else (TM, N // 2)     # this core's part of a result tile

    @pl.aiv
    def vector(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[M, K], pl.f32],
               f: pl.Tensor[[M, N], pl.f32], out: pl.Tensor[[M, N], pl.f32],
               fifo: pl.Tensor[[2 * DEPTH * SLOT], pl.u8]):
        c2v_buf = pl.reserve_buffer(name="c2v_slot_buffer", size=DEPTH * SLOT, base=pl.AUTO)
        v2c_buf = pl.import_peer_buffer(name="v2c_slot_buffer", peer_func=cube)
        pl.aiv_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, SLOT, fifo,
                               c2v_consumer_buf=c2v_buf.base, v2c_consumer_buf=v2c_buf.base)
        sub = pl.get_subblockid()
        for i in pl.range(TILES + LAG):
            if i < TILES:
                if UD:
                    r0 = i * TM + sub * XR
                    c0 = 0
                else:
                    r0 = i * TM
                    c0 = sub * XC
                x = pl.load(a, [r0, c0], [XR, XC])
                y = pl.load(b, [r0, c0], [XR, XC])
                s = x + y
                pl.TPUSH(s, v2c_buf, split=split)
            j = i - LAG
            if j >= 0:
                if UD:
                    r1 = j * TM + sub * YR
                    c1 = 0
                else:
                    r1 = j * TM
                    c1 = sub * YC
                res = pl.TPOP(c2v_buf, pl.Tile[[YR, YC], pl.f32, pl.Vec], split=split)
                fv = pl.load(f, [r1, c1], [YR, YC])
                o = pl.sub(res, fv)
                pl.TFREE(c2v_buf)
                pl.store(o, [r1, c1], out)

    @pl.aic
    def cube(d: pl.Tensor[[K, N], pl.f32], fifo: pl.Tensor[[2 * DEPTH * SLOT], pl.u8]):
        v2c_buf = pl.reserve_buffer(name="v2c_slot_buffer", size=DEPTH * SLOT, base=pl.AUTO)
        c2v_buf = pl.import_peer_buffer(name="c2v_slot_buffer", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, SLOT, fifo,
                               c2v_consumer_buf=c2v_buf.base, v2c_consumer_buf=v2c_buf.base)
        d_l1 = pl.load(d, [0, 0], [K, N], space=pl.Mat)
        d_l0 = pl.move(d_l1, space=pl.Right)
        for i in pl.range(TILES):
            x = pl.TPOP(v2c_buf, pl.Tile[[TM, K], pl.f32, pl.Mat], split=split)
            x_l0 = pl.move(x, space=pl.Left)
            pl.TFREE(v2c_buf)
            acc = pl.matmul(x_l0, d_l0)
            pl.TPUSH(acc, c2v_buf, split=split)

    return pl.program(cube, vector, name="s4_both_ways")


KERNELS = KernelSet(build)


def make_args(rng, split=pl.TILE_UP_DOWN):
    return dict(a=rng.integers(-4, 5, (M, K)).astype(np.float32),
                b=rng.integers(-4, 5, (M, K)).astype(np.float32),
                d=rng.integers(-3, 4, (K, N)).astype(np.float32),
                f=rng.integers(-50, 51, (M, N)).astype(np.float32),
                out=np.zeros((M, N), np.float32), fifo=ptopipe.gm_buffer(2 * DEPTH * SLOT),
                split=split)


def golden(args, **_):
    return {"out": (args["a"] + args["b"]) @ args["d"] - args["f"]}


SCENARIO = ptopipe.Scenario("dsl_s4_both_ways", KERNELS.aic, KERNELS.aiv, make_args, golden,
                            {"default": dict(split=pl.TILE_UP_DOWN), "ud": dict(split=pl.TILE_UP_DOWN),
                             "lr": dict(split=pl.TILE_LEFT_RIGHT)}, doc=__doc__)
