"""Split modes keep a per-row operand whole: under TILE_LEFT_RIGHT the [M, 1] operand of a
``row_expand_*`` is not column-sliced (each Vector core holds all M rows next to half the
columns of the [M, N] operand) - a softmax normalisation by given row max / row sum runs and
matches numpy on both platforms and protocols; storing or pushing such a tile is an error
at its DSL line."""
import numpy as np
import pytest

import ptopipe.language as pl
from ptopipe.errors import CompileError
from ptopipe.passes import compile_program
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import run
from markers import line_of

TM, D, N, TILES = 16, 32, 64, 2
M = TM * TILES


def softmax_norm(split=pl.TILE_LEFT_RIGHT, bad=None):
    """out = exp(Q K^T - rowmax) / rowsum, the row statistics given as [M, 1] tensors;
    ``bad``: "store" stores the per-row tile, "push" sends it to the Cube."""
    store_row, push_row = bad == "store", bad == "push"

    @pl.incore(split=split)
    def norm(q: pl.Tensor[[M, D], pl.f32], kt: pl.Tensor[[D, N], pl.f32],
             mx: pl.Tensor[[M, 1], pl.f32], sm: pl.Tensor[[M, 1], pl.f32],
             out: pl.Tensor[[M, N], pl.f32], rows: pl.Tensor[[M, 1], pl.f32]):
        ka = pl.move(pl.load(kt, [0, 0], [D, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(TILES):
            qa = pl.move(pl.load(q, [i * TM, 0], [TM, D], space=pl.Mat), space=pl.Left)
            s = pl.move(pl.matmul(qa, ka), space=pl.Vec)
            m = pl.load(mx, [i * TM, 0], [TM, 1])                          # ROW-LOAD
            l = pl.load(sm, [i * TM, 0], [TM, 1])
            inv = pl.recip(l)
            p = pl.row_expand_mul(pl.exp(pl.row_expand_sub(s, m)), inv)
            pl.store(p, [i * TM, 0], out)
            if store_row:
                pl.store(inv, [i * TM, 0], rows)                            # STORE-ROW
            if push_row:
                back = pl.move(inv, space=pl.Mat)                           # PUSH-ROW
    return norm


def _args(rng):
    q = rng.standard_normal((M, D)).astype(np.float32)
    kt = rng.standard_normal((D, N)).astype(np.float32)
    s = q @ kt
    mx = s.max(axis=1, keepdims=True).astype(np.float32)
    sm = np.exp(s - mx).sum(axis=1, keepdims=True).astype(np.float32)
    return dict(q=q, kt=kt, mx=mx, sm=sm, out=np.zeros((M, N), np.float32),
                rows=np.zeros((M, 1), np.float32))


@pytest.mark.parametrize("split", [pl.TILE_LEFT_RIGHT, pl.TILE_UP_DOWN])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_softmax_normalisation_matches_numpy(platform, protocol, split):
    prog = pl.program(softmax_norm(split), name="softmax_norm")
    args = _args(np.random.default_rng(7))
    res = run(prog, with_slot_buffer(prog, args), platform=platform, protocol=protocol)
    s = args["q"] @ args["kt"]
    want = np.exp(s - s.max(axis=1, keepdims=True))
    want /= want.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(res.outputs["out"], want, rtol=1e-5, atol=1e-6)


def test_left_right_keeps_the_row_operand_whole():
    op = compile_program(pl.program(softmax_norm(), name="softmax_norm"), "a5")
    from ptopipe.ir.asm_printer import print_ir
    aiv = print_ir(op).split("kind = #kind.AIV")[1]
    assert "-> tile<16x1xf32,Vec>" in aiv and "-> tile<16x32xf32,Vec>" in aiv
    assert "{shape = [16, 1], space = #space.Vec" in aiv       # each core loads all rows


@pytest.mark.parametrize("bad, marker, text", [
    ("store", "STORE-ROW", "storing a per-row tile (16x1 f32) under split TILE_LEFT_RIGHT: both "
                           "Vector cores hold all of it (it is not split), so both would write "
                           "the same data"),
    ("push", "PUSH-ROW", "passing to the Cube a per-row tile (16x1 f32) under split "
                         "TILE_LEFT_RIGHT"),
])
def test_a_whole_row_tile_cannot_be_stored_or_pushed(bad, marker, text):
    fn = softmax_norm(bad=bad)
    with pytest.raises(CompileError) as ei:
        compile_program(pl.program(fn, name="softmax_norm"), "a2a3")
    assert ei.value.what.startswith(text), ei.value.what
    assert ei.value.where.split(":")[-2] == str(line_of(softmax_norm, marker))
