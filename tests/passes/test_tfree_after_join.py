"""InsertTfree frees a popped tile yielded out of an ``if`` after the join, after the last use
of the ``if``'s result (pypto frees it before the yield, while the tile is still read): once
when both branches yield a tile popped from the ring, under an ``if`` on the same condition
when one does; a TPOP of the same ring before that last use makes it copy the tile instead.
Each runs on both platforms and protocols, on both branches, and matches numpy; a tile
yielded out of two nested branches is an error at its TPOP."""
import numpy as np
import pytest

import ptopipe.language as pl
from ptopipe import CompileError
from ptopipe.ir import print_program
from ptopipe.passes import compile_program
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import run
from markers import line_of

M, N = 16, 32


def kernel(variant):
    """out = (flag > 0 ? A @ B : <else>) + 1; the else branch per ``variant``: "load" X,
    "pop" A @ C (popped too); "again": the then branch pops A @ C after A @ B and stores it
    to ``side`` before the yield."""
    pop_else, again = variant == "pop", variant == "again"

    @pl.incore(split=pl.TILE_UP_DOWN)
    def k(a: pl.Tensor[[M, N], pl.f32], b: pl.Tensor[[N, N], pl.f32], c: pl.Tensor[[N, N], pl.f32],
          x: pl.Tensor[[M, N], pl.f32], out: pl.Tensor[[M, N], pl.f32],
          side: pl.Tensor[[M, N], pl.f32], flag: pl.Scalar[pl.index]):
        al = pl.move(pl.load(a, [0, 0], [M, N], space=pl.Mat), space=pl.Left)
        br = pl.move(pl.load(b, [0, 0], [N, N], space=pl.Mat), space=pl.Right)
        cr = pl.move(pl.load(c, [0, 0], [N, N], space=pl.Mat), space=pl.Right)
        if flag > 0:
            t = pl.move(pl.matmul(al, br), space=pl.Vec)                   # POP
            if again:
                pl.store(pl.move(pl.matmul(al, cr), space=pl.Vec), [0, 0], side)
        else:
            if pop_else:
                t = pl.move(pl.matmul(al, cr), space=pl.Vec)
            else:
                t = pl.load(x, [0, 0], [M, N])
        y = t + 1.0                                                       # LAST-USE
        pl.store(y, [0, 0], out)
    return k


def _args(rng, flag):
    r = lambda *s: rng.integers(-3, 4, s).astype(np.float32)         # noqa: E731
    return dict(a=r(M, N), b=r(N, N), c=r(N, N), x=r(M, N), out=np.zeros((M, N), np.float32),
                side=np.zeros((M, N), np.float32), flag=flag)


@pytest.mark.parametrize("variant", ["load", "pop", "again"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_tile_yielded_out_of_a_branch_matches_numpy_on_both_branches(platform, protocol, variant):
    prog = pl.program(kernel(variant), name=f"join_{variant}")
    for flag in (1, 0):
        args = _args(np.random.default_rng(flag), flag)
        res = run(prog, with_slot_buffer(prog, args), platform=platform, protocol=protocol)
        a, b, c, x = args["a"], args["b"], args["c"], args["x"]
        other = a @ c if variant == "pop" else x
        np.testing.assert_array_equal(res.outputs["out"], (a @ b if flag else other) + 1.0)
        if variant == "again":
            np.testing.assert_array_equal(res.outputs["side"], a @ c if flag else 0.0)


def _vector(variant) -> list:
    text = print_program(compile_program(pl.program(kernel(variant), name="j"), "a2a3"))
    body = text.split("def k_aiv")[1].split("\n\n")[0]
    return [ln.strip() for ln in body.splitlines()[1:]]


def test_the_free_comes_after_the_last_use_of_the_joined_tile():
    lines = _vector("load")                     # one branch pops: freed on that path only
    use = next(k for k, ln in enumerate(lines) if ln.startswith("y = pl.adds("))
    pop = next(k for k, ln in enumerate(lines) if ln.startswith("t = pl.TPOP("))
    assert lines[pop - 1].startswith("if ")                 # the branch that pops
    assert lines[use + 1:use + 3] == [lines[pop - 1], "pl.TFREE(c2v_buf)"]   # same condition
    assert sum("TFREE" in ln for ln in lines) == 1
    lines = _vector("pop")                      # both pop: one TFREE, unguarded
    use = next(k for k, ln in enumerate(lines) if ln.startswith("y = pl.adds("))
    assert lines[use + 1] == "pl.TFREE(c2v_buf)" and sum("TFREE" in ln for ln in lines) == 1


def test_a_later_pop_before_the_join_copies_the_tile():
    lines = _vector("again")
    pop = next(k for k, ln in enumerate(lines) if ln.startswith("t = pl.TPOP("))
    assert lines[pop + 1] == "t_held = pl.move(t, pl.Vec)" and lines[pop + 2] == "pl.TFREE(c2v_buf)"


def test_a_tile_yielded_out_of_two_nested_branches_is_an_error():
    @pl.incore(split=pl.TILE_UP_DOWN)
    def nested(a: pl.Tensor[[M, N], pl.f32], b: pl.Tensor[[N, N], pl.f32],
               x: pl.Tensor[[M, N], pl.f32], out: pl.Tensor[[M, N], pl.f32],
               flag: pl.Scalar[pl.index]):
        al = pl.move(pl.load(a, [0, 0], [M, N], space=pl.Mat), space=pl.Left)
        br = pl.move(pl.load(b, [0, 0], [N, N], space=pl.Mat), space=pl.Right)
        t = pl.load(x, [0, 0], [M, N])
        if flag > 0:
            if flag > 1:
                t = pl.move(pl.matmul(al, br), space=pl.Vec)               # NESTED
        pl.store(t, [0, 0], out)

    with pytest.raises(CompileError) as ei:
        compile_program(pl.program(nested, name="nested"), "a2a3")
    e = ei.value
    assert "the tile received from the other core here is assigned to 't' in the branch at line " in e.what
    assert "and read after it: the ring slot it arrived in would be held past the if" in e.what
    assert e.where.split(":")[-2] == str(line_of(nested.pyfunc, "NESTED"))
