"""Mixed programs whose tiles pto-isa declares larger than their data (``passes.tile_boxes``):
an accumulator of 24 columns crossing TILE_UP_DOWN (pto-isa declares it 16x32; on A5 each Vector
core's popped part is declared at the slot's 32-column pitch), a Right tile of 24 columns (its
Mat tile is declared 32x32 too), a 24-row accumulator crossing TILE_LEFT_RIGHT (declared 32
rows; its Left tile's Mat tile too).  Each with its numpy golden: ``(program, args, golden)``."""
from __future__ import annotations

import numpy as np

import ptopipe.language as pl
from ptopipe.passes.slot_buffer import with_slot_buffer

TM, K, N = 16, 32, 24          # UP_DOWN: a 16x24 accumulator per tile, two tiles
RM, RN = 24, 32                # LEFT_RIGHT: a 24x32 accumulator per tile, two tiles


def up_down_cols():
    """out = (A @ B) * bias, B 32x24 (a padded Right), each 16x24 product crossing UP_DOWN."""
    @pl.incore(split=pl.TILE_UP_DOWN, slot_num=4)
    def ud24(a: pl.Tensor[[2 * TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32], bias: pl.Tensor[[1, N], pl.f32],
             out: pl.Tensor[[2 * TM, N], pl.f32]):
        br = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        bv = pl.load(bias, [0, 0], [1, N])
        for i in pl.range(2):
            al = pl.move(pl.load(a, [i * TM, 0], [TM, K], space=pl.Mat), space=pl.Left)
            y = pl.move(pl.matmul(al, br), space=pl.Vec)
            pl.store(pl.col_expand_mul(y, bv), [i * TM, 0], out)
    return pl.program(ud24, name="ud24")


def left_right_rows():
    """out = A @ B - C, each 24x32 product (a padded Acc and Left) crossing LEFT_RIGHT."""
    @pl.incore(split=pl.TILE_LEFT_RIGHT, slot_num=4)
    def lr24(a: pl.Tensor[[2 * RM, K], pl.f32], b: pl.Tensor[[K, RN], pl.f32], c: pl.Tensor[[2 * RM, RN], pl.f32],
             out: pl.Tensor[[2 * RM, RN], pl.f32]):
        br = pl.move(pl.load(b, [0, 0], [K, RN], space=pl.Mat), space=pl.Right)
        for i in pl.range(2):
            al = pl.move(pl.load(a, [i * RM, 0], [RM, K], space=pl.Mat), space=pl.Left)
            y = pl.move(pl.matmul(al, br), space=pl.Vec)
            pl.store(pl.sub(y, pl.load(c, [i * RM, 0], [RM, RN])), [i * RM, 0], out)
    return pl.program(lr24, name="lr24")


def case(name: str, seed: int = 0):
    """``(program, args, golden outputs)`` of ``name`` ("up_down_cols" / "left_right_rows")."""
    rng = np.random.default_rng(seed)
    if name == "up_down_cols":
        prog = up_down_cols()
        args = dict(a=rng.integers(-3, 4, (2 * TM, K)).astype(np.float32),
                    b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                    bias=rng.integers(-3, 4, (1, N)).astype(np.float32), out=np.zeros((2 * TM, N), np.float32))
        want = {"out": (args["a"] @ args["b"]) * args["bias"]}
    else:
        prog = left_right_rows()
        args = dict(a=rng.integers(-3, 4, (2 * RM, K)).astype(np.float32),
                    b=rng.integers(-3, 4, (K, RN)).astype(np.float32),
                    c=rng.integers(-9, 9, (2 * RM, RN)).astype(np.float32), out=np.zeros((2 * RM, RN), np.float32))
        want = {"out": args["a"] @ args["b"] - args["c"]}
    return prog, with_slot_buffer(prog, args), want
