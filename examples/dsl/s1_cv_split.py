"""S1 cv_split as a manual DSL kernel pair (seed 003 constructs): the Cube computes A@B
tile by tile and TPUSHes each 16x32 f32 accumulator (C2V) into the ring the Vector
function reserved (pl.reserve_buffer / pl.import_peer_buffer, base=pl.AUTO); each Vector
core TPOPs its half (UP_DOWN: rows, LEFT_RIGHT: columns), adds the bias half, TFREEs the
slot and stores.  out = A @ B + bias.

Run:  ptopipe run examples/dsl/s1_cv_split.py [--platform a5] [--variant f16_lr_d1_m32]
"""
import numpy as np

import ptopipe
import ptopipe.language as pl
from ptopipe.runtime import KernelSet

TM, K, N = 16, 32, 32                 # one ring slot = one 16x32 f32 accumulator tile
SLOT_SIZE = TM * N * 4


def build(M, depth, split, dtype):
    """The S1 program for one shape / ring depth / split / input dtype."""
    DT = pl.f16 if dtype == "f16" else pl.f32
    UD = split == pl.TILE_UP_DOWN
    HR, HC = (TM // 2, N) if UD else (TM, N // 2)         # one Vector core's half
    SLOTS = depth

    @pl.aiv
    def vector(bias: pl.Tensor[[M, N], pl.f32], out: pl.Tensor[[M, N], pl.f32],
               fifo: pl.Tensor[[SLOTS * SLOT_SIZE], pl.u8]):
        pipe_buf = pl.reserve_buffer(name="c2v_slot_buffer", size=SLOTS * SLOT_SIZE, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT_SIZE, fifo, c2v_consumer_buf=pipe_buf.base,
                               v2c_consumer_buf=0, slot_num=SLOTS)
        sub = pl.get_subblockid()
        for i in pl.range(M // TM):
            if UD:
                row0 = i * TM + sub * HR
                col0 = 0
            else:
                row0 = i * TM
                col0 = sub * HC
            part = pl.TPOP(pipe_buf, pl.Tile[[HR, HC], pl.f32, pl.Vec], split=split)
            b = pl.load(bias, [row0, col0], [HR, HC])
            o = pl.add(part, b)
            pl.TFREE(pipe_buf)
            pl.store(o, [row0, col0], out)

    @pl.aic
    def cube(a: pl.Tensor[[M, K], DT], b: pl.Tensor[[K, N], DT],
             fifo: pl.Tensor[[SLOTS * SLOT_SIZE], pl.u8]):
        peer_buf = pl.import_peer_buffer(name="c2v_slot_buffer", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT_SIZE, fifo, c2v_consumer_buf=peer_buf.base,
                               v2c_consumer_buf=0, slot_num=SLOTS)
        b_l1 = pl.load(b, [0, 0], [K, N], space=pl.Mat)
        b_l0 = pl.move(b_l1, space=pl.Right)
        for i in pl.range(M // TM):
            a_l1 = pl.load(a, [i * TM, 0], [TM, K], space=pl.Mat)
            a_l0 = pl.move(a_l1, space=pl.Left)
            acc = pl.matmul(a_l0, b_l0)
            pl.TPUSH(acc, peer_buf, split=split)

    return pl.program(cube, vector, name=f"s1_cv_split_{dtype}_m{M}_d{depth}")


KERNELS = KernelSet(build)


def make_args(rng, M=64, depth=4, split=pl.TILE_UP_DOWN, dtype="f32"):
    dt = np.float16 if dtype == "f16" else np.float32
    return dict(a=rng.integers(-3, 4, (M, K)).astype(dt), b=rng.integers(-3, 4, (K, N)).astype(dt),
                bias=rng.integers(-8, 9, (M, N)).astype(np.float32), out=np.zeros((M, N), np.float32),
                fifo=ptopipe.gm_buffer(depth * SLOT_SIZE), M=M, depth=depth, split=split, dtype=dtype)


def golden(args, **_):
    return {"out": args["a"].astype(np.float32) @ args["b"].astype(np.float32) + args["bias"]}


VARIANTS = {f"{dt}_{'ud' if sp == pl.TILE_UP_DOWN else 'lr'}_d{d}_m{m}": dict(M=m, depth=d, split=sp, dtype=dt)
            for dt in ("f32", "f16") for sp in (pl.TILE_UP_DOWN, pl.TILE_LEFT_RIGHT) for d in (1, 4)
            for m in (16, 32, 64)}
VARIANTS = {"default": dict(M=64, depth=4, split=pl.TILE_UP_DOWN, dtype="f32"), **VARIANTS}

SCENARIO = ptopipe.Scenario("dsl_s1_cv_split", KERNELS.aic, KERNELS.aiv, make_args, golden, VARIANTS,
                            doc=__doc__)
