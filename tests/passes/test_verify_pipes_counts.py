"""VerifyPipes count mismatches point at the statement that makes the counts differ: the
unmatched push / pop of the first loop iteration whose counts differ,
not the first event past the other side's total."""
import pytest

import ptopipe.language as pl
from ptopipe.errors import PtoPipeError
from ptopipe.runtime import run as dsl_run

from test_verify_pipes import SLOT, TM, K, N, VEC, _c2v_args, assert_at, only, program


@pl.aiv
def pops_two(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    for i in pl.range(3):
        x = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)                              # POP-1
        y = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        o = pl.add(x, y)
        pl.TFREE(buf)
        pl.TFREE(buf)
        pl.store(o, [0, 0], out)


THIRD, ELSE = 1, 2


def _cube(extra: int):
    """Pushes two tiles per iteration of a 3-trip loop, plus ``extra``: THIRD a third push
    each iteration, ELSE one more in the else branch of iteration 0."""
    @pl.aic
    def cube(a: pl.Tensor[[TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
             fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="ring", peer_func="vec")
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base,
                               v2c_consumer_buf=0, slot_num=4)
        a0 = pl.move(pl.load(a, [0, 0], [TM, K], space=pl.Mat), space=pl.Left)
        b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(3):
            pl.TPUSH(pl.matmul(a0, b0), peer, split=pl.TILE_UP_DOWN)              # PUSH-1
            if extra == 1:
                pl.TPUSH(pl.matmul(a0, b0), peer, split=pl.TILE_UP_DOWN)          # PUSH-2
                pl.TPUSH(pl.matmul(a0, b0), peer, split=pl.TILE_UP_DOWN)          # PUSH-3
            else:
                if i > 0:
                    pl.TPUSH(pl.matmul(a0, b0), peer, split=pl.TILE_UP_DOWN)      # THEN-PUSH
                else:
                    pl.TPUSH(pl.matmul(a0, b0), peer, split=pl.TILE_UP_DOWN)      # ELSE-PUSH-1
                    pl.TPUSH(pl.matmul(a0, b0), peer, split=pl.TILE_UP_DOWN)      # ELSE-PUSH-2
    cube.peer_is_vec = True
    return cube


def test_an_extra_push_in_every_iteration_is_found_at_that_push():
    cube = _cube(THIRD)
    err = only(cube, pops_two)
    assert_at(err, cube, "PUSH-3", "pl.TPUSH")
    assert "this TPUSH (the 3rd to the C2V ring, in iteration 1 (i=0) of the loop at line" in err.what
    assert "cube pushes 9 tile(s) but vec (lane AIV0) pops 6" in err.what


def test_an_extra_push_in_one_branch_is_found_in_that_branch():
    cube = _cube(ELSE)
    err = only(cube, pops_two)
    assert_at(err, cube, "ELSE-PUSH-2", "pl.TPUSH")
    assert "this TPUSH (the 3rd to the C2V ring, in iteration 1 (i=0)" in err.what
    assert "cube pushes 7 tile(s) but vec (lane AIV0) pops 6" in err.what


@pl.aiv
def pops_three_per_iteration(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    for i in pl.range(2):
        for j in pl.range(2):
            x = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
            pl.store(x, [0, 0], out)
            pl.TFREE(buf)
        z = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)                              # EXTRA-POP
        pl.store(z, [0, 0], out)
        pl.TFREE(buf)


def test_an_extra_pop_after_an_inner_loop_is_found_at_that_pop():
    """2 x (2 pops + 1) against 2 x 2 pushes: the 3rd pop of the first outer iteration."""
    @pl.aic
    def cube(a: pl.Tensor[[TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
             fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="ring", peer_func="vec")
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base,
                               v2c_consumer_buf=0, slot_num=4)
        a0 = pl.move(pl.load(a, [0, 0], [TM, K], space=pl.Mat), space=pl.Left)
        b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(2):
            for j in pl.range(2):
                pl.TPUSH(pl.matmul(a0, b0), peer, split=pl.TILE_UP_DOWN)
    cube.peer_is_vec = True
    err = only(cube, pops_three_per_iteration)
    assert_at(err, pops_three_per_iteration, "EXTRA-POP", "pl.TPOP")
    assert "this TPOP (the 3rd of the C2V ring, in iteration 1 (i=0) of the loop at line" in err.what
    assert "has no matching TPUSH" in err.what and "pops 6" in err.what


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_the_kernel_the_finding_points_at_fails_when_run(platform):
    """The static finding is about a real bug: the run leaves pushed tiles never popped."""
    with pytest.raises(PtoPipeError):
        dsl_run(program(_cube(THIRD), pops_two, name="c3"), _c2v_args(), platform=platform)
