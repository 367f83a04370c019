"""Element-wise ops with a per-row [M, 1] or per-column [1, N] operand broadcast it, as
pypto's tile.add does: the parser lowers them to pto-isa's expand instructions
(TROWEXPAND* / TCOLEXPAND*), the wide operand first; a GEMM + bias + per-row scale matches
numpy on both platforms and protocols under every split; a narrow first operand of an op
that does not commute, and shapes that do not broadcast, are errors at the operand."""
import numpy as np
import pytest

import ptopipe.language as pl
from ptopipe import CompileError
from ptopipe.codegen import write_cpp
from ptopipe.ir.asm_printer import print_ir
from ptopipe.passes import compile_program
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import run

M, K, N = 32, 16, 32


def gemm_bias(split):
    """out = max((A @ B + bias) * scale - scale, bias): bias [1, N], scale [M, 1]."""
    @pl.incore(split=split)
    def gb(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
           bias: pl.Tensor[[1, N], pl.f32], scale: pl.Tensor[[M, 1], pl.f32],
           out: pl.Tensor[[M, N], pl.f32]):
        al = pl.move(pl.load(a, [0, 0], [M, K], space=pl.Mat), space=pl.Left)
        br = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        y = pl.move(pl.matmul(al, br), space=pl.Vec)
        bv = pl.load(bias, [0, 0], [1, N])
        s = pl.load(scale, [0, 0], [M, 1])
        z = s * pl.add(y, bv)                   # narrow first: the op commutes, swapped
        pl.store(pl.maximum(z - s, bv), [0, 0], out)
    return pl.program(gb, name="gemm_bias")


def _args(rng):
    return dict(a=rng.integers(-3, 4, (M, K)).astype(np.float32),
                b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                bias=rng.integers(-9, 10, (1, N)).astype(np.float32),
                scale=rng.integers(-3, 4, (M, 1)).astype(np.float32),
                out=np.zeros((M, N), np.float32))


@pytest.mark.parametrize("split", [pl.TILE_UP_DOWN, pl.TILE_LEFT_RIGHT, pl.TILE_NO_SPLIT])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_bias_row_and_scale_column_broadcast_match_numpy(platform, protocol, split):
    prog = gemm_bias(split)
    args = _args(np.random.default_rng(3))
    res = run(prog, with_slot_buffer(prog, args), platform=platform, protocol=protocol)
    x = args["a"] @ args["b"]
    want = np.maximum((x + args["bias"]) * args["scale"] - args["scale"], args["bias"])
    np.testing.assert_array_equal(res.outputs["out"], want)


def test_broadcasts_lower_to_the_expand_instructions():
    ir = print_ir(gemm_bias(pl.TILE_NO_SPLIT))
    ops = [ln.split("= pl.")[1].split("(")[0] for ln in ir.splitlines()
           if "_expand_" in ln]
    assert ops == ["col_expand_add", "row_expand_mul", "row_expand_sub", "col_expand_max"]
    cpp = write_cpp(compile_program(gemm_bias(pl.TILE_NO_SPLIT), "a5"), "a5")
    assert "TCOLEXPANDADD(" in cpp and "TROWEXPANDMUL(" in cpp and "TADD(" not in cpp


NARROW_FIRST = """
import ptopipe.language as pl

@pl.aiv(split=pl.TILE_NO_SPLIT)
def narrow_first(y: pl.Tensor[[16, 32], pl.f32], r: pl.Tensor[[16, 1], pl.f32]):
    t = pl.load(y, [0, 0], [16, 32])
    c = pl.load(r, [0, 0], [16, 1])
    pl.store(pl.sub(c, t), [0, 0], y)
"""

NO_BROADCAST = """
import ptopipe.language as pl

@pl.aiv(split=pl.TILE_NO_SPLIT)
def no_broadcast(y: pl.Tensor[[16, 32], pl.f32], r: pl.Tensor[[8, 32], pl.f32]):
    t = pl.load(y, [0, 0], [16, 32])
    c = pl.load(r, [0, 0], [8, 32])
    pl.store(t + c, [0, 0], y)
"""


def test_a_narrow_first_operand_of_sub_names_the_expand_to_write():
    with pytest.raises(CompileError) as ei:
        pl.parse(NARROW_FIRST)
    e = ei.value
    assert e.what.startswith("pl.sub: the first operand Vec tile 16x1 f32") and "row_expand_sub" in e.what
    assert "pl.sub(pl.row_expand(x, shape=[16, 32]), y)" in e.fix
    assert e.where.endswith(":8:21")                 # the narrow operand


def test_shapes_that_do_not_broadcast_still_differ():
    with pytest.raises(CompileError) as ei:
        pl.parse(NO_BROADCAST)
    e = ei.value
    assert "shapes differ (16x32 vs 8x32)" in e.what and "broadcast" in e.fix
    assert e.where.endswith(":8:14")
