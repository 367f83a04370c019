"""VerifyPipes: the static cross-core protocol verifier finds, without
running, each protocol bug in hand-written DSL kernels - at the exact DSL line:col, naming
the path - and reports nothing on the DSL examples and the correct DSL kernels of the
tests.  Kernels that the dynamic checkers reject are rejected statically too."""
import importlib.util
import os
import types

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.errors import CompileError, ProtocolError, PtoPipeError
from ptopipe.passes import verify_pipes
from ptopipe.passes.properties import IRProperty
from ptopipe.runtime import run as dsl_run
from markers import line_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TM, K, N = 16, 32, 32
SLOT = TM * N * 4
HR = TM // 2
VEC = pl.Tile[[HR, N], pl.f32, pl.Vec]            # one Vector lane's UP_DOWN half of a slot


def program(cube, vector, name="t", peer=None):
    """pl.program(cube, vector); a :func:`c2v_cube` imports its ring from a function named
    "vec", so the vector kernel is renamed to it (or to ``peer``)."""
    peer = peer or ("vec" if getattr(cube, "peer_is_vec", False) else None)
    if peer:
        vector = vector.ir.clone()
        vector.sym_name = peer
    return pl.program(cube, vector, name=name)


def findings(cube, vector, platform="a2a3", warnings=None, peer=None):
    return verify_pipes.verify(program(cube, vector, peer=peer).clone(), platform, warnings)


def only(cube, vector, **kw) -> CompileError:
    found = findings(cube, vector, **kw)
    assert len(found) == 1, [str(e) for e in found]
    return found[0]


def where(fn, marker, col=None) -> str:
    """``file:line:`` (``file:line:col`` with col) of the marked line of a DSL function."""
    path = fn.pyfunc.__code__.co_filename
    s = f"{path}:{line_of(fn.pyfunc, marker)}:"
    return s if col is None else f"{s}{col}"


def col_of(fn, marker) -> int:
    """The 1-based column where the statement on the marked line starts (DSL ops are
    located at their statement)."""
    import inspect
    lines, first = inspect.getsourcelines(fn.pyfunc)
    ln = lines[line_of(fn.pyfunc, marker) - first]
    return len(ln) - len(ln.lstrip()) + 1


def assert_at(err, fn, marker, text):
    """The error is at the marked line and column, on the op ``text``."""
    assert err.where == where(fn, marker, col_of(fn, marker)), (err.where, str(err))
    import inspect
    lines, first = inspect.getsourcelines(fn.pyfunc)
    assert text in lines[line_of(fn.pyfunc, marker) - first]


# -- a C2V cube producer shared by the consumer bugs -----------------------------------------
def c2v_cube(peer_of, n=4, depth=4, split=pl.TILE_UP_DOWN):
    """Pushes ``n`` 16x32 accumulators to the ring of the vector kernel (renamed "vec" by
    :func:`program`; ``peer_of`` documents which one)."""
    @pl.aic
    def cube(a: pl.Tensor[[TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
             fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="ring", peer_func="vec")
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base,
                               v2c_consumer_buf=0, slot_num=depth)
        a0 = pl.move(pl.load(a, [0, 0], [TM, K], space=pl.Mat), space=pl.Left)
        b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(n):
            acc = pl.matmul(a0, b0)
            pl.TPUSH(acc, peer, split=split)                                   # CUBE-PUSH
    cube.peer_is_vec = True
    return cube


# -- missing TFREE ------------------------------------------------------------------------------
@pl.aiv
def leak_on_else(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8],
                 flag: pl.Scalar[pl.index]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4, local_slot_num=4)      # a2a3: up to 4 held on the else path
    sub = pl.get_subblockid()
    for i in pl.range(4):
        part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)                           # POP
        o = pl.adds(part, 1.0)
        if flag > 0:                                                               # IF
            pl.TFREE(buf)
        pl.store(o, [i * TM + sub * HR, 0], out)


def test_a_tfree_missing_on_one_branch_is_found_at_the_tpop_naming_the_else_branch():
    err = only(c2v_cube(leak_on_else), leak_on_else)
    assert isinstance(err, CompileError)
    assert_at(err, leak_on_else, "POP", "pl.TPOP")
    assert "is never freed" in err.what
    assert f"the else branch of the if at line {line_of(leak_on_else.pyfunc, 'IF')}" in err.what
    assert "iteration" in err.what and "TFREE every popped slot" in err.fix


def test_the_leaking_kernel_of_the_runtime_tests_is_found_statically():
    """test_runtime_dsl's leaky_vec (the dynamic leak checker's kernel): same TPOP line."""
    import test_runtime_dsl as t
    err = only(t.short_cube2, t.leaky_vec)
    assert "never freed" in err.what
    assert err.where.startswith(f"{t.leaky_vec.pyfunc.__code__.co_filename}:"
                                f"{line_of(t.leaky_vec.pyfunc, 'LEAK-LINE')}:")
    assert "iteration 1 (i=0) of the loop" in err.what


# -- use after TFREE --------------------------------------------------------------------------
@pl.aiv
def use_after_free(bias: pl.Tensor[[4 * TM, N], pl.f32], out: pl.Tensor[[4 * TM, N], pl.f32],
                   fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range(4):
        part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        b = pl.load(bias, [i * TM + sub * HR, 0], [HR, N])
        pl.TFREE(buf)                                                              # FREE
        o = pl.add(part, b)                                                        # USE
        pl.store(o, [i * TM + sub * HR, 0], out)


@pl.aiv
def use_after_free_alias(bias: pl.Tensor[[4 * TM, N], pl.f32], out: pl.Tensor[[4 * TM, N], pl.f32],
                         fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range(4):
        part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        b = pl.load(bias, [i * TM + sub * HR, 0], [HR, N])
        if sub == 0:
            keep = part
        else:
            keep = b
        pl.TFREE(buf)
        o = pl.sub(keep, b)                                                        # ALIAS-USE
        pl.store(o, [i * TM + sub * HR, 0], out)


def test_a_use_after_tfree_is_found_at_the_use():
    err = only(c2v_cube(use_after_free), use_after_free)
    assert_at(err, use_after_free, "USE", "pl.add")
    assert "uses %part" in err.what
    assert f"after its TFREE at line {line_of(use_after_free.pyfunc, 'FREE')}" in err.what
    assert "iteration 1 (i=0) of the loop" in err.what
    assert "move the TFREE after the last use of %part" in err.fix


def test_a_use_after_tfree_through_an_if_result_is_found_on_the_lane_that_aliases_the_tile():
    err = only(c2v_cube(use_after_free_alias), use_after_free_alias)
    assert_at(err, use_after_free_alias, "ALIAS-USE", "pl.sub")
    assert "uses %keep" in err.what and "lane" not in err.what and "after its TFREE" in err.what


# -- more outstanding pops than slots --------------------------------------------------------
@pl.aiv
def three_held(out: pl.Tensor[[TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=2 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=2)
    sub = pl.get_subblockid()
    for i in pl.range(2):
        x = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        y = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        z = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)                               # THIRD
        s = pl.add(pl.add(x, y), z)
        pl.TFREE(buf)
        pl.TFREE(buf)
        pl.TFREE(buf)
        pl.store(s, [sub * HR, 0], out)


def test_more_outstanding_pops_than_slots_is_found_at_the_pop_that_overflows():
    err = only(c2v_cube(three_held, n=6, depth=2), three_held)
    assert_at(err, three_held, "THIRD", "pl.TPOP")
    assert "holds 3 slots of the C2V ring at once, more than its SLOT_NUM 2" in err.what
    assert "iteration 1 (i=0)" in err.what
    assert "raise SLOT_NUM" in err.fix


def test_the_same_kernel_with_three_slots_is_clean():
    """With SLOT_NUM 3 (and LocalSlotNum 3: a2a3 stages the popped tiles) the three pops
    held at once fit."""
    @pl.aiv
    def three_ok(out: pl.Tensor[[TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=3 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base,
                               v2c_consumer_buf=0, slot_num=3, local_slot_num=3)
        sub = pl.get_subblockid()
        for i in pl.range(2):
            x = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
            y = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
            z = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
            s = pl.add(pl.add(x, y), z)
            pl.TFREE(buf)
            pl.TFREE(buf)
            pl.TFREE(buf)
            pl.store(s, [sub * HR, 0], out)
    assert findings(c2v_cube(three_ok, n=6, depth=3), three_ok) == []


# -- TFREE / TPOP split mismatch --------------------------------------------------------------
@pl.aiv
def split_free(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range(4):
        part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        o = pl.muls(part, 2.0)
        if i == 3:
            pl.TFREE(buf, split=pl.TILE_LEFT_RIGHT)            # another split: released alike
        else:
            pl.TFREE(buf, split=pl.TILE_UP_DOWN)
        pl.store(o, [i * TM + sub * HR, 0], out)


def _c2v_args(n=4, depth=4):
    rng = np.random.default_rng(0)
    return dict(a=rng.integers(-3, 4, (TM, K)).astype(np.float32),
                b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                out=np.zeros((n * TM, N), np.float32), fifo=ptopipe.gm_buffer(8 * SLOT))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_tfree_naming_another_split_than_its_tpop_is_clean(platform):
    """pto-isa's free tells no split from split only, and only in the Cube's free: a Vector
    TFREE naming LEFT_RIGHT for an UP_DOWN pop releases the slot as its TPOP's would - the
    verifier and the run let it through."""
    assert findings(c2v_cube(split_free), split_free, platform=platform) == []
    dsl_run(program(c2v_cube(split_free), split_free, name="sm"), _c2v_args(), platform=platform)


def test_a_cube_tfree_without_split_of_a_split_pop_is_found_in_the_iteration_it_happens():
    cub, vec = both_ways(4, 4, cube_free_split=pl.TILE_NO_SPLIT)
    err = only(cub, vec)
    assert_at(err, cub, "CUBE-FREE", "pl.TFREE")
    assert f"TFREE gives split TILE_NO_SPLIT but the TPOP at line {line_of(cub.pyfunc, 'CUBE-POP')}" in err.what
    assert "used TILE_UP_DOWN" in err.what and "iteration 1 (i=0)" in err.what
    assert "credits AIV0's flag alone" in err.what
    assert "split=TILE_UP_DOWN" in err.fix


def _both_args():
    rng = np.random.default_rng(0)
    return dict(x=rng.integers(-3, 4, (8 * TM, N)).astype(np.float32), out=np.zeros((8 * TM, N), np.float32),
                w=rng.integers(-3, 4, (N, N)).astype(np.float32), w2=rng.integers(-3, 4, (N, N)).astype(np.float32),
                fifo=ptopipe.gm_buffer(8 * SLOT))


@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec"), ("a5", "pto-isa")])
def test_the_split_mismatch_the_verifier_finds_is_also_a_runtime_protocol_error(platform, protocol):
    cub, vec = both_ways(4, 4, cube_free_split=pl.TILE_NO_SPLIT)
    with pytest.raises(PtoPipeError, match="TFREE .* gives split TILE_NO_SPLIT"):
        dsl_run(pl.program(cub, vec, name="sm"), _both_args(), platform=platform, protocol=protocol)


# -- push / pop count mismatch ----------------------------------------------------------------
def test_the_deadlocking_kernel_of_the_runtime_tests_is_found_at_the_third_tpop():
    """test_runtime_dsl: the Vector pops 3 tiles, the Cube pushes 2 (a DeadlockError when run)."""
    import test_runtime_dsl as t
    found = findings(t.short_cube, t.greedy_vec)
    assert len(found) == 1, [str(e) for e in found]
    err = found[0]
    assert err.where.startswith(f"{t.greedy_vec.pyfunc.__code__.co_filename}:"
                                f"{line_of(t.greedy_vec.pyfunc, 'POP-LINE')}:")
    assert "the 3rd of the C2V ring, in iteration 3 (i=2)" in err.what
    assert "has no matching TPUSH" in err.what and "pushes 2 tile(s) but greedy_vec (lane AIV0) pops 3" in err.what


@pl.aiv
def pops_three(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range(3):
        part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        o = pl.muls(part, 2.0)
        pl.TFREE(buf)
        pl.store(o, [i * TM + sub * HR, 0], out)


def test_a_push_never_popped_is_found_at_the_extra_tpush():
    cube = c2v_cube(pops_three, n=4)
    err = only(cube, pops_three)
    assert_at(err, cube, "CUBE-PUSH", "pl.TPUSH")
    assert "this TPUSH (the 4th to the C2V ring, in iteration 4 (i=3)" in err.what
    assert "cube pushes 4 tile(s) but vec (lane AIV0) pops 3" in err.what


# -- V2C both ways: FIFO order of types, a push/pop count on the Cube side ---------------------
def both_ways(pushes, cube_pops, second_dtype=pl.f32, back_split=pl.TILE_UP_DOWN, pop_rows=TM,
              cube_free_split=pl.TILE_UP_DOWN):
    """Vector pushes ``pushes`` halves (V2C, UP_DOWN), the Cube pops ``cube_pops`` 16x32
    (``pop_rows`` x 32 the first of each pair) Mat tiles (every second one of dtype ``second_dtype``) and sends each back (C2V, pushed
    with ``back_split``; the Vector cores pop UP_DOWN halves); the Cube frees the first of each
    pair with ``cube_free_split``."""
    @pl.aiv
    def vec(x: pl.Tensor[[8 * TM, N], pl.f32], out: pl.Tensor[[8 * TM, N], pl.f32],
            fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        c2v = pl.reserve_buffer(name="c2v", size=4 * SLOT, base=pl.AUTO)
        v2c = pl.import_peer_buffer(name="v2c", peer_func=cub)
        pl.aiv_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=c2v.base,
                               v2c_consumer_buf=v2c.base)
        sub = pl.get_subblockid()
        for i in pl.range(pushes):
            h = pl.load(x, [i * TM + sub * HR, 0], [HR, N])
            pl.TPUSH(h, v2c, split=pl.TILE_UP_DOWN)                               # VEC-PUSH
        for i in pl.range(cube_pops):
            r = pl.TPOP(c2v, VEC, split=pl.TILE_UP_DOWN)
            o = pl.adds(r, 1.0)
            pl.TFREE(c2v)
            pl.store(o, [i * TM + sub * HR, 0], out)

    @pl.aic
    def cub(w: pl.Tensor[[N, N], pl.f32], w2: pl.Tensor[[N, N], second_dtype],
            fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        v2c = pl.reserve_buffer(name="v2c", size=4 * SLOT, base=pl.AUTO)
        c2v = pl.import_peer_buffer(name="c2v", peer_func=vec)
        pl.aic_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=c2v.base,
                               v2c_consumer_buf=v2c.base)
        w0 = pl.move(pl.load(w, [0, 0], [N, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(cube_pops // 2):
            t0 = pl.TPOP(v2c, pl.Tile[[pop_rows, N], pl.f32, pl.Mat], split=pl.TILE_UP_DOWN)  # CUBE-POP
            l0 = pl.move(t0, space=pl.Left)
            pl.TFREE(v2c, split=cube_free_split)                                  # CUBE-FREE
            pl.TPUSH(pl.matmul(l0, w0), c2v, split=back_split)                    # BACK-PUSH
            t1 = pl.TPOP(v2c, pl.Tile[[TM, N], second_dtype, pl.Mat], split=pl.TILE_UP_DOWN)  # POP-2
            l1 = pl.move(t1, space=pl.Left)
            pl.TFREE(v2c)
            pl.TPUSH(pl.matmul(l1, pl.move(pl.load(w2, [0, 0], [N, N], space=pl.Mat),
                                           space=pl.Right)), c2v, split=back_split)
    return cub, vec


def test_both_ways_with_matching_counts_and_types_is_clean():
    assert findings(*both_ways(4, 4)) == []


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_an_unsplit_c2v_push_popped_in_halves_is_clean_where_the_ring_is_in_gm(platform):
    """A2A3's C2V ring in GM holds the Cube's whole tile: a TILE_NO_SPLIT push popped UP_DOWN
    gives each Vector core its half, as the simulator runs it (protocol.geometry.pop_split_fits).
    On A5 the NO_SPLIT push reaches AIV0 alone (one lane): found at the push."""
    cub, vec = both_ways(4, 4, back_split=pl.TILE_NO_SPLIT)
    found = findings(cub, vec, platform=platform)
    if platform == "a2a3":
        assert found == [], [str(e) for e in found]
    else:
        assert found and "a NO_SPLIT transfer has one lane, AIV0" in found[0].what, [str(e) for e in found]
        assert_at(found[0], cub, "BACK-PUSH", "pl.TPUSH")


def test_a_fifo_type_mismatch_is_found_at_the_kth_pop_naming_the_kth_push():
    cub, vec = both_ways(4, 4, second_dtype=pl.f16)
    found = findings(cub, vec)
    err = found[0]
    assert_at(err, cub, "POP-2", "pl.TPOP")
    assert "the 2nd TPOP of the V2C ring in cub" in err.what
    assert f"the 2nd TPUSH in vec (lane AIV0), at line {line_of(vec.pyfunc, 'VEC-PUSH')}" in err.what
    assert "16x32 f16" in err.what and "8x32 f32" in err.what
    assert "a ring delivers tiles in push order" in err.what


def test_a_pop_of_the_wrong_shape_says_which_shape_to_pop():
    """Dtype and split agree, the shape does not (the Cube pops one Vector core's half): the fix
    names the shape the TPOP must take, the whole slot both lanes pushed (the share rule the
    run applies at that TPOP, protocol.geometry.share_problem)."""
    cub, vec = both_ways(4, 4, pop_rows=HR)
    found = findings(cub, vec)
    err = next(e for e in found if "V2C ring" in e.what)
    assert_at(err, cub, "CUBE-POP", "pl.TPOP")
    assert f"its {HR} rows would take one lane's part only" in err.what
    assert err.fix.startswith(f"pop a {TM}x{N} tile (both lanes' parts)"), err.fix
    # the Vector side of the Cube's 8x32 results: each core pops its 4-row half of the slot
    err = next(e for e in found if "C2V ring" in e.what)
    assert err.fix.startswith(f"pop a {HR // 2}x{N} tile (the whole slot is {HR}x{N}; "), err.fix


def test_a_cube_pop_beyond_the_vector_pushes_is_found_at_that_pop():
    cub, vec = both_ways(3, 4)
    err = findings(cub, vec)[0]
    assert_at(err, cub, "POP-2", "pl.TPOP")
    assert "this TPOP (the 4th of the V2C ring, in iteration 2 (i=1) of the loop" in err.what
    assert "has no matching TPUSH and waits forever" in err.what
    assert "vec (lane AIV0) pushes 3 tile(s) but cub pops 4" in err.what


# -- a no-split pipe with one lane missing ------------------------------------------------------
@pl.aiv
def lane0_only(x: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.import_peer_buffer(name="ring", peer_func=nosplit_cube)
    pl.aiv_initialize_pipe(pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=0, v2c_consumer_buf=buf.base,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range(4):
        t = pl.load(x, [i * TM, 0], [TM, N])
        if sub == 0:
            pl.TPUSH(t, buf)                                                       # LANE0-PUSH


@pl.aic
def nosplit_cube(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aic_initialize_pipe(pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=0, v2c_consumer_buf=buf.base,
                           slot_num=4)
    for i in pl.range(4):
        t = pl.TPOP(buf, pl.Tile[[TM, N], pl.f32, pl.Mat])
        pl.store(t, [i * TM, 0], out)
        pl.TFREE(buf)


def test_a_no_split_pipe_with_lane_1_missing_is_found_at_the_push_lane_1_skips():
    err = only(nosplit_cube, lane0_only)
    assert_at(err, lane0_only, "LANE0-PUSH", "pl.TPUSH")
    assert "lane AIV1 does not take part in this TPUSH of the no-split V2C pipe" in err.what
    assert "4 tile(s) on lane AIV0 but 0 on lane AIV1" in err.what
    assert "both lanes" in err.fix


def _both_lanes(no_split: bool):
    deco = pl.aiv(split=pl.TILE_NO_SPLIT) if no_split else pl.aiv

    @deco
    def both_lanes(x: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        buf = pl.import_peer_buffer(name="ring", peer_func=nosplit_cube)
        pl.aiv_initialize_pipe(pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=0, v2c_consumer_buf=buf.base,
                               slot_num=4)
        for i in pl.range(4):
            t = pl.load(x, [i * TM, 0], [TM, N])
            pl.TPUSH(t, buf)                                                       # BOTH-PUSH
    return both_lanes


@pl.aiv
def skewed_lanes(x: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.import_peer_buffer(name="ring", peer_func=nosplit_cube)
    pl.aiv_initialize_pipe(pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=0, v2c_consumer_buf=buf.base,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range(4):
        t = pl.load(x, [(i * (1 - sub) + (3 - i) * sub) * TM, 0], [TM, N])     # lane 1: tile 3 - i
        pl.TPUSH(t, buf)                                                       # SKEWED-PUSH


@pytest.mark.parametrize("platform", ["a2a3"])      # (A5: one lane - the next test)
def test_both_lanes_pushing_a_no_split_tile_is_found_at_the_push_as_the_run_finds_it(platform):
    vec = _both_lanes(False)
    err = only(nosplit_cube, vec, platform=platform)
    assert_at(err, vec, "BOTH-PUSH", "pl.TPUSH")
    assert "both Vector lanes write the whole slot in this TPUSH of the no-split V2C pipe" in err.what
    assert "pl.TILE_NO_SPLIT" in err.fix and ".pto" not in err.fix     # (a .pto's: test_pto_no_split)
    x = np.arange(4 * TM * N, dtype=np.float32).reshape(4 * TM, N)
    args = dict(x=x, out=np.zeros_like(x), fifo=ptopipe.gm_buffer(8 * SLOT))
    # the run: the same tile from both lanes lands right (the work done twice: a warning) ...
    res = dsl_run(pl.program(nosplit_cube, vec, name="both"), dict(args), platform=platform)
    np.testing.assert_array_equal(res.outputs["out"], x)
    assert any("both push a TILE_NO_SPLIT tile" in w and f":{line_of(vec.pyfunc, 'BOTH-PUSH')}" in at
               for w, at in res.summary.leaks), res.summary.leaks
    # ... different tiles are the error, at the push
    with pytest.raises(PtoPipeError) as ei:
        dsl_run(pl.program(nosplit_cube, skewed_lanes, name="skewed"), dict(args), platform=platform)
    assert "written by both producer lanes" in str(ei.value)
    assert f":{line_of(skewed_lanes.pyfunc, 'SKEWED-PUSH')}:" in ei.value.where
    # marked no-split, lane 1 replays on empty tiles: clean, and the data arrive once
    ok = _both_lanes(True)
    assert findings(nosplit_cube, ok, platform=platform) == []
    res = dsl_run(pl.program(nosplit_cube, ok, name="both_ok"), dict(args), platform=platform)
    np.testing.assert_array_equal(res.outputs["out"], x)


def test_both_lanes_on_a_no_split_pipe_are_found_at_the_push_on_a5():
    """A5 gives a no-split pipe one lane, AIV0: a two-lane one is found at its first NO_SPLIT
    push, whether AIV1 pushes the tile too or replays it empty."""
    for vec in (_both_lanes(False), _both_lanes(True)):
        err = only(nosplit_cube, vec, platform="a5")
        assert_at(err, vec, "BOTH-PUSH", "pl.TPUSH")
        assert "a NO_SPLIT transfer has one lane, AIV0" in err.what and "lanes=1" in err.fix


# -- what is not a finding ----------------------------------------------------------------------
@pl.aiv
def correlated_vec(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8],
                   flag: pl.Scalar[pl.index]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range(3):
        if flag > 0:
            part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
            o = pl.muls(part, 2.0)
            pl.TFREE(buf)
            pl.store(o, [i * TM + sub * HR, 0], out)
    if flag > 0:
        last = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        pl.store(last, [3 * TM + sub * HR, 0], out)
    if flag > 0:
        pl.TFREE(buf)


@pl.aic
def correlated_cube(a: pl.Tensor[[TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
                    fifo: pl.Tensor[[8 * SLOT], pl.u8], flag: pl.Scalar[pl.index]):
    peer = pl.import_peer_buffer(name="ring", peer_func=correlated_vec)
    pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                           slot_num=4)
    a0 = pl.move(pl.load(a, [0, 0], [TM, K], space=pl.Mat), space=pl.Left)
    b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
    if flag > 0:
        for i in pl.range(4):
            pl.TPUSH(pl.matmul(a0, b0), peer, split=pl.TILE_UP_DOWN)


def test_branches_on_the_same_kernel_parameter_are_paired_across_the_kernels():
    """Both kernels test ``flag > 0``: the paths agree on it, so nothing is reported (the
    pop and the free under two separate ifs on the same condition are paired too)."""
    assert findings(correlated_cube, correlated_vec) == []


@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec"),
                                               ("a5", "pto-isa")])
def test_the_correlated_kernel_runs_clean_both_ways(platform, protocol):
    for flag in (0, 1):
        args = dict(_c2v_args(), flag=flag)
        res = dsl_run(pl.program(correlated_cube, correlated_vec, name="corr"), args,
                      platform=platform, protocol=protocol)
        a, b = args["a"], args["b"]
        want = np.tile(2 * (a @ b), (4, 1)) if flag else np.zeros((4 * TM, N), np.float32)
        if flag:
            want[3 * TM:] = a @ b
        assert np.array_equal(res.outputs["out"], want)


@pl.aiv
def n_vec(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8],
          n: pl.Scalar[pl.index]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range(n):                                                          # N-LOOP
        part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        o = pl.muls(part, 2.0)
        pl.TFREE(buf)
        pl.store(o, [i * TM + sub * HR, 0], out)                                   # N-STORE


@pl.aic
def n_cube(a: pl.Tensor[[TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
           fifo: pl.Tensor[[8 * SLOT], pl.u8], n: pl.Scalar[pl.index]):
    peer = pl.import_peer_buffer(name="ring", peer_func=n_vec)
    pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                           slot_num=4)
    a0 = pl.move(pl.load(a, [0, 0], [TM, K], space=pl.Mat), space=pl.Left)
    b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
    for i in pl.range(n):
        pl.TPUSH(pl.matmul(a0, b0), peer, split=pl.TILE_UP_DOWN)


def test_a_trip_count_from_a_kernel_parameter_is_proven_within_what_the_tensors_hold():
    """``pl.range(n)`` on both sides: the counts are equal for every n (the count check is no
    longer skipped); ``out`` holds 4 tiles of rows, so the store is proven in bounds for
    n <= 4 and not proven beyond, with the value that runs out."""
    warnings = []
    assert verify_pipes.verify(program(n_cube, n_vec).clone(), "a2a3", warnings,
                               ranges={"n": (0, 4)}) == [] and warnings == []
    assert findings(n_cube, n_vec, warnings=warnings) == []
    assert verify_pipes.not_proven(warnings) == [
        f"the pl.store at line {line_of(n_vec.pyfunc, 'N-STORE')} accesses GM out of bounds when n=5, "
        f"i=4 (in the loop at line {line_of(n_vec.pyfunc, 'N-LOOP')}) (offsets [16*i, 0] + window "
        "[8, 32] exceed 'out' of shape [64, 32]); declare the values the kernel takes (--range NAME=LO..HI)"]


@pl.aiv
def n_leak(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8],
           n: pl.Scalar[pl.index]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range(n):
        part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)                           # N-POP
        pl.store(part, [i * TM + sub * HR, 0], out)


def test_pops_that_pile_up_in_a_loop_of_unknown_trip_count_are_found():
    found = findings(n_cube, n_leak, peer="n_vec")
    err = found[0]
    assert_at(err, n_leak, "N-POP", "pl.TPOP")
    assert "leaves 1 more slot(s) of the C2V ring held" in err.what
    assert "trip count is not known statically" in err.what


# -- the pass interface ------------------------------------------------------------------------
def test_run_raises_the_first_finding_with_the_others_as_details_and_returns_a_clean_program():
    ctx = types.SimpleNamespace(platform="a5", warnings=[])
    prog = program(c2v_cube(use_after_free), use_after_free).clone()
    with pytest.raises(CompileError) as ei:
        verify_pipes.run(prog, ctx)
    assert "uses %part" in ei.value.what and ei.value.findings
    clean = program(c2v_cube(pops_three, n=3), pops_three).clone()
    assert verify_pipes.run(clean, ctx) is clean
    assert verify_pipes.NAME == "verify-pipes" and IRProperty.PIPES_VERIFIED in verify_pipes.PRODUCED


def test_slot_num_defaults_to_the_platforms_seed_003_depth():
    """No slot_num: 8 slots one way (seed 003) - nine pops held at once overflow."""
    @pl.aiv
    def nine(out: pl.Tensor[[TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=8 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               local_slot_num=8)
        for i in pl.range(9):
            t = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)                          # NINTH
        for i in pl.range(9):
            pl.TFREE(buf)
    for plat in ("a2a3", "a5"):
        err = findings(c2v_cube(nine, n=9, depth=None), nine, platform=plat)[0]
        assert "holds 9 slots" in err.what and "SLOT_NUM 8" in err.what
        assert "iteration 9 (i=8)" in err.what


# -- no finding on any correct DSL kernel --------------------------------------------------------
def _load(path):
    spec = importlib.util.spec_from_file_location("vp_" + os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _example_programs():
    out = []
    d = os.path.join(ROOT, "examples", "dsl")
    for f in sorted(os.listdir(d)):
        if not f.endswith(".py"):
            continue
        mod = _load(os.path.join(d, f))
        sc = mod.SCENARIO
        for v in sc.variants:
            if hasattr(mod, "KERNELS"):
                out.append((f"{f}[{v}]", mod.KERNELS.program(**sc.args(v))))
            elif v == sc.default_variant:
                out.append((f"{f}", mod.PROGRAM))
    return out


def test_every_dsl_example_variant_is_clean_on_both_platforms():
    progs = _example_programs()
    assert len(progs) >= 30 and {p.split("[")[0] for p, _ in progs} >= {
        "s1_cv_split.py", "s4_both_ways.py", "s5_subtile_gm.py", "s8_manual_sync.py"}
    for name, prog in progs:
        for plat in ("a2a3", "a5"):
            warnings = []
            assert verify_pipes.verify(prog.clone(), plat, warnings) == [], name
            assert warnings == [], (name, warnings)


def _test_programs():
    import test_bad_input
    import test_events
    import test_layouts
    import test_runtime_dsl as rt
    return [("runtime_dsl acc", pl.program(rt.acc_cube, rt.acc_vec, name="kacc")),
            ("layouts convert", test_layouts._dsl_program(True)[0]),
            ("events ok", test_events._dsl_program("ok")),
            ("bad_input ring", test_bad_input._ring_program(8 * SLOT)[0]),
            ("both ways", pl.program(*both_ways(4, 4), name="bw")),
            ("correlated", pl.program(correlated_cube, correlated_vec, name="c")),
            ("pops_three", program(c2v_cube(pops_three, n=3), pops_three, name="p3"))]


def test_the_correct_dsl_kernels_of_the_tests_are_clean():
    for name, prog in _test_programs():
        assert verify_pipes.verify(prog.clone(), "a2a3") == [], name


# -- the layout a TPUSH leaves in the slot is the layout the TPOP reads ----------------------------
@pl.aiv
def nz_popper(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range(4):
        t = pl.TPOP(buf, pl.Tile[[HR, N], pl.f32, pl.Vec, pl.NZ], split=pl.TILE_UP_DOWN)  # NZ-POP
        pl.store(t, [i * TM + sub * HR, 0], out)
        pl.TFREE(buf, split=pl.TILE_UP_DOWN)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_pop_in_another_layout_than_the_slot_holds_is_found_at_the_tpop(platform):
    import test_layouts
    # C2V: the FIX pipe writes the Acc's NZ data out as ND; popping it as NZ is wrong
    err = only(c2v_cube(nz_popper), nz_popper, platform=platform)
    assert where(nz_popper, "NZ-POP") in err.where
    assert "pops an NZ tile, but the slot holds ND data" in err.what
    assert "its NZ Acc tile, which the FIX pipe writes out as ND" in err.what
    assert "pop into an ND Vec tile" in err.fix
    # V2C: a Vec ND tile pushed, popped into an NZ Mat tile; the same error the run gives on
    # A5 (a local L1 ring holds the bytes as pushed).  In A2A3's GM ring the pop TLOADs the ND
    # rows into the NZ tile (pto-isa popMatTileFromGMFiFo), which converts: no finding.
    prog, cube, vec = test_layouts._dsl_program(False)
    if platform == "a2a3":
        assert verify_pipes.verify(prog.clone(), platform) == []
        return
    (err,) = verify_pipes.verify(prog.clone(), platform)
    assert f"test_layouts.py:{line_of(cube.pyfunc, 'DSL-POP')}:" in err.where
    assert f"at line {line_of(vec.pyfunc, 'DSL-PUSH')}" in err.what and "an ND Vec tile" in err.what
    assert "TMOV the Vec tile into an NZ Vec tile" in err.fix
    assert verify_pipes.verify(test_layouts._dsl_program(True)[0].clone(), platform) == []


# -- ptopipe check --static ------------------------------------------------------------------
BUGGY_FILE = '''
import ptopipe.language as pl

SLOT = 16 * 32 * 4


@pl.aiv
def vector(out: pl.Tensor[[32, 32], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=2 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=2)
    sub = pl.get_subblockid()
    for i in pl.range(2):
        t = pl.TPOP(buf, pl.Tile[[8, 32], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
        pl.TFREE(buf)
        pl.store(t, [i * 16 + sub * 8, 0], out)


@pl.aic
def cube(a: pl.Tensor[[16, 32], pl.f32], b: pl.Tensor[[32, 32], pl.f32],
         fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    peer = pl.import_peer_buffer(name="ring", peer_func=vector)
    pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                           slot_num=2)
    a0 = pl.move(pl.load(a, [0, 0], [16, 32], space=pl.Mat), space=pl.Left)
    b0 = pl.move(pl.load(b, [0, 0], [32, 32], space=pl.Mat), space=pl.Right)
    for i in pl.range(2):
        pl.TPUSH(pl.matmul(a0, b0), peer, split=pl.TILE_UP_DOWN)


PROGRAM = pl.program(cube, vector, name="buggy")
'''


def test_check_static_prints_each_finding_at_the_dsl_line_and_exits_1(tmp_path, capsys):
    from ptopipe.cli import main
    f = tmp_path / "buggy.py"
    f.write_text(BUGGY_FILE)
    assert main(["check", "--static", str(f)]) == 1
    out, err = capsys.readouterr()
    assert "FAIL buggy on a2a3/spec: the static checks found 1 error(s) without running" in out
    store = BUGGY_FILE.splitlines().index("        pl.store(t, [i * 16 + sub * 8, 0], out)") + 1
    assert "error: CompileError: pl.store uses %t" in err and f"at {f}:{store}:9" in err
    assert "fix: move the TFREE after the last use of %t" in err


def test_check_static_names_a_file_below_the_working_directory_as_given(tmp_path, capsys, monkeypatch):
    """The static checks locate findings from the DSL's absolute file names; shown, the path is
    relative to the working directory, as a run's errors show it."""
    from ptopipe.cli import main
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "buggy.py").write_text(BUGGY_FILE)
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--static", "k/buggy.py"]) == 1
    store = BUGGY_FILE.splitlines().index("        pl.store(t, [i * 16 + sub * 8, 0], out)") + 1
    err = capsys.readouterr().err
    assert f"\n  at {os.path.join('k', 'buggy.py')}:{store}:9\n" in err, err


def test_check_static_passes_a_clean_file_and_every_example_variant(tmp_path, capsys):
    from ptopipe.cli import main
    f = tmp_path / "fixed.py"
    f.write_text(BUGGY_FILE.replace(
        "        pl.TFREE(buf)\n        pl.store(t, [i * 16 + sub * 8, 0], out)",
        "        pl.store(t, [i * 16 + sub * 8, 0], out)\n        pl.TFREE(buf)"))
    assert main(["check", "--static", str(f), "--platform", "a5"]) == 0
    assert "PASS buggy on a5/spec: VerifyPipes (static, every path) found no cross-core protocol error" \
        in capsys.readouterr().out
    assert main(["check", "--static", os.path.join(ROOT, "examples", "dsl", "s1_cv_split.py"),
                 "--variant", "all"]) == 0
    # 25 variants, 24 distinct programs ("default" is f32_ud_d4_m64): each verified once
    assert capsys.readouterr().out.count("PASS dsl_s1_cv_split[") == 24


SCALAR_FILE = '''
import numpy as np
import ptopipe
import ptopipe.language as pl
from ptopipe.runtime import KernelSet

SLOT = 16 * 32 * 4


def build(n, twice):
    @pl.aiv
    def vector(out: pl.Tensor[[32, 32], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8],
               n: pl.Scalar[pl.index]):
        buf = pl.reserve_buffer(name="ring", size=2 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=2)
        sub = pl.get_subblockid()
        for i in pl.range(n):
            t = pl.TPOP(buf, pl.Tile[[8, 32], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
            pl.store(t, [sub * 8, 0], out)
            pl.TFREE(buf)
            if twice:
                u = pl.TPOP(buf, pl.Tile[[8, 32], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)  # SECOND
                pl.store(u, [16 + sub * 8, 0], out)
                pl.TFREE(buf)

    @pl.aic
    def cube(a: pl.Tensor[[16, 32], pl.f32], b: pl.Tensor[[32, 32], pl.f32],
             fifo: pl.Tensor[[8 * SLOT], pl.u8], n: pl.Scalar[pl.index]):
        peer = pl.import_peer_buffer(name="ring", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                               slot_num=2)
        a0 = pl.move(pl.load(a, [0, 0], [16, 32], space=pl.Mat), space=pl.Left)
        b0 = pl.move(pl.load(b, [0, 0], [32, 32], space=pl.Mat), space=pl.Right)
        for i in pl.range(n):
            pl.TPUSH(pl.matmul(a0, b0), peer, split=pl.TILE_UP_DOWN)
    return pl.program(cube, vector, name="scalar_n")


KERNELS = KernelSet(build)


def make_args(rng, n=3, twice=True):
    return dict(a=np.ones((16, 32), np.float32), b=np.ones((32, 32), np.float32),
                out=np.zeros((32, 32), np.float32), fifo=ptopipe.gm_buffer(8 * SLOT), n=n, twice=twice)


SCENARIO = ptopipe.Scenario("scalar_n", KERNELS.aic, KERNELS.aiv, make_args, lambda a, **_: {},
                            {"default": {}, "none": dict(n=0), "once": dict(twice=False),
                             "npint": dict(n=np.int64(3))})
'''


def test_check_static_verifies_a_variant_with_its_scalar_arguments(tmp_path, capsys):
    """A trip count given at run time (`pl.range(n)`, n a scalar parameter) made --static skip
    its count and FIFO checks and PASS kernels every run rejects: a
    scenario variant's scalar arguments are verified exactly, then every value of n."""
    from ptopipe.cli import main
    f = tmp_path / "scalar.py"
    f.write_text(SCALAR_FILE)
    assert main(["check", "--static", str(f)]) == 1
    out, err = capsys.readouterr()
    assert "FAIL scalar_n[default] on a2a3/spec: the static checks found 1 error(s)" in out
    second = next(i + 1 for i, ln in enumerate(SCALAR_FILE.splitlines()) if "# SECOND" in ln)
    assert f"at {f}:{second}:" in err and "cube pushes 3 tile(s) but vector (lane AIV0) pops 6" in err
    assert main(["check", "--static", str(f), "--variant", "npint"]) == 1      # a numpy integer too
    assert "cube pushes 3 tile(s) but vector (lane AIV0) pops 6" in capsys.readouterr().err
    # n=0 runs clean, but the kernel is proven for every n: two pops per push fail from n=1
    assert main(["check", "--static", str(f), "--variant", "none"]) == 1
    err = capsys.readouterr().err
    assert "cube pushes 1 tile(s) but vector (lane AIV0) pops 2 (fails when n=1)" in err
    assert "for every value: cube pushes n tile(s) to the C2V ring, vector (lane AIV0) pops 2*n" in err
    assert main(["check", "--static", str(f), "--variant", "once"]) == 0
    assert ("PASS scalar_n[once] on a2a3/spec: VerifyPipes (static, for every value of n (and exactly "
            "with n=3, the variant's)) found no cross-core protocol error or GM access out of "
            "bounds, and the compiler's checks passed; data races between cores, intra-core events and "
            "the numbers are the run's to check (`ptopipe check`)") in capsys.readouterr().out


def test_check_static_on_a_file_without_dsl_programs_says_so(capsys):
    from ptopipe.cli import main
    assert main(["check", "--static", os.path.join(ROOT, "examples", "scenarios", "s1_cv_split.py")]) == 1
    assert "defines no DSL program" in capsys.readouterr().err


# -- the other per-kernel findings: a TFREE with nothing held, a TFREE naming a younger tile,
# -- a TALLOCed GM slot written after its TPUSH (the address flow of S5) -----------------------
@pl.aiv
def extra_free(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range(4):
        part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        pl.store(part, [i * TM + sub * HR, 0], out)
        pl.TFREE(buf)
    pl.TFREE(buf)                                                                  # EXTRA


@pl.aiv
def free_order(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range(2):
        x = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        y = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        s = pl.add(x, y)
        pl.TFREE(buf, y)                                                           # ORDER
        pl.TFREE(buf, x)
        pl.store(s, [i * TM + sub * HR, 0], out)


@pl.aiv
def free_order_then_read(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range(2):
        x = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        y = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)                               # POP-Y
        s = pl.muls(y, 2.0)
        pl.TFREE(buf, y)                                                           # FREE-Y
        s = pl.add(s, x)                                                           # READ-X
        pl.TFREE(buf, x)
        pl.store(s, [i * TM + sub * HR, 0], out)


def test_a_tfree_with_no_held_slot_is_found_after_the_loop():
    err = only(c2v_cube(extra_free), extra_free)
    assert_at(err, extra_free, "EXTRA", "pl.TFREE")
    assert err.what == "TFREE of the C2V ring with no popped slot held"


def test_a_tfree_naming_a_younger_tile_is_clean_when_both_are_read_before_it():
    """A TFREE frees the oldest held slot whatever it names (pto-isa's TFREE does not read its
    operand): freeing %y then %x once both are read is what the device and the run do - clean."""
    assert findings(c2v_cube(free_order), free_order) == []
    dsl_run(program(c2v_cube(free_order), free_order, name="fo"), _c2v_args())


def test_a_read_of_the_older_tile_after_a_tfree_naming_the_younger_is_the_use_after_free():
    """The first access in conflict is the later read of %x, whose slot that TFREE released: the
    finding is there, as the run reports it, saying which tile the TFREE named."""
    k = free_order_then_read
    err = only(c2v_cube(k), k)
    assert_at(err, k, "READ-X", "pl.add")
    assert f"uses %x (popped by the TPOP at line {line_of(k.pyfunc, 'POP-Y') - 1}" in err.what, err.what
    assert f"after its TFREE at line {line_of(k.pyfunc, 'FREE-Y')}" in err.what, err.what
    assert f"that TFREE names %y (TPOP at line {line_of(k.pyfunc, 'POP-Y')}" in err.what, err.what
    assert err.fix.startswith("TFREE the popped slots in the order they were popped"), err.fix
    with pytest.raises(PtoPipeError, match="use after free"):
        dsl_run(program(c2v_cube(k), k, name="for"), _c2v_args())


@pl.aiv
def gm_vec(out: pl.Tensor[[2 * TM, N], pl.f32], fifo: pl.Tensor[[4 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4096, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V_GM, SLOT, fifo, c2v_consumer_buf=buf.base,
                           v2c_consumer_buf=0, slot_num=2)
    sub = pl.get_subblockid()
    for t in pl.range(2):
        half = pl.TPOP(buf, pl.Tensor[[HR, N], pl.f32], split=pl.TILE_UP_DOWN)
        x = pl.load(half, [0, 0], [HR, N])
        pl.store(x, [t * TM + sub * HR, 0], out)
        pl.TFREE(buf, half)


def gm_cube(late_store):
    @pl.aic
    def cube(a: pl.Tensor[[TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
             fifo: pl.Tensor[[4 * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="ring", peer_func="vec")
        pl.aic_initialize_pipe(pl.DIR_C2V_GM, SLOT, fifo, c2v_consumer_buf=peer.base,
                               v2c_consumer_buf=0, slot_num=2)
        a0 = pl.move(pl.load(a, [0, 0], [TM, K], space=pl.Mat), space=pl.Left)
        b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        acc = pl.matmul(a0, b0)
        for t in pl.range(2):
            slot = pl.TALLOC(peer, pl.Tensor[[TM, N], pl.f32], split=pl.TILE_UP_DOWN)
            if late_store:
                pl.TPUSH(slot, peer)
                pl.store(acc, [0, 0], slot)                                        # LATE
            else:
                pl.store(acc, [0, 0], slot)
                pl.TPUSH(slot, peer)
    cube.peer_is_vec = True
    return cube


def test_the_address_flow_is_clean_and_a_slot_written_after_its_tpush_is_found():
    assert findings(gm_cube(False), gm_vec) == []
    cube = gm_cube(True)
    err = only(cube, gm_vec)
    assert_at(err, cube, "LATE", "pl.store")
    assert "pl.store uses %slot (TALLOCed by the TALLOC at line" in err.what
    assert "after its TPUSH at line" in err.what
    assert "write the slot before its TPUSH" in err.fix


@pl.aiv
def many_branches(out: pl.Tensor[[12 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8],
                  flag: pl.Scalar[pl.index]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range(12):
        part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        if flag > i:
            o = pl.muls(part, 2.0)
        else:
            o = pl.adds(part, 1.0)
        pl.TFREE(buf)
        pl.store(o, [i * TM + sub * HR, 0], out)


def test_branches_that_leave_the_pipes_alike_merge_so_paths_do_not_multiply():
    """12 unknown conditions in a row: 4096 paths unless the two sides of each if merge."""
    warnings = []
    assert findings(c2v_cube(many_branches, n=12), many_branches, warnings=warnings) == []
    assert warnings == []


def _kernel_set(fn):
    """The KernelSet behind a DSL kernel callable (``KernelSet.aic`` / ``.aiv``), or None."""
    from ptopipe.runtime import KernelSet
    for cell in getattr(fn, "__closure__", None) or ():
        if isinstance(cell.cell_contents, KernelSet):
            return cell.cell_contents
    return None


def test_every_dsl_kernel_of_the_clean_corpus_is_clean():
    """tests/corpus.py's CLEAN_KERNELS (correct by their own dynamic runs): the DSL ones."""
    import corpus
    checked = []
    for _m, k in corpus.all_clean_kernels():
        ks = _kernel_set(k.scenario.aic)
        if ks is None:
            continue
        prog = ks.program(**k.scenario.args(k.variant))
        for plat in {p for p, _ in k.combos}:
            assert verify_pipes.verify(prog.clone(), plat) == [], (k.name, plat)
        checked.append(k.name)
    assert len(checked) >= 3, checked


@pl.aiv
def pop_in_both_branches(out: pl.Tensor[[12 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8],
                         flag: pl.Scalar[pl.index]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range(12):
        if flag > i:
            x = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
            o = pl.muls(x, 2.0)
            pl.TFREE(buf)
        else:
            y = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
            o = pl.adds(y, 1.0)
            pl.TFREE(buf)
        pl.store(o, [i * TM + sub * HR, 0], out)


def test_branches_that_pop_and_free_alike_merge_too():
    warnings = []
    assert findings(c2v_cube(pop_in_both_branches, n=12), pop_in_both_branches,
                    warnings=warnings) == []
    assert warnings == []


@pl.aiv
def unknown_alias(bias: pl.Tensor[[4 * TM, N], pl.f32], out: pl.Tensor[[4 * TM, N], pl.f32],
                  fifo: pl.Tensor[[8 * SLOT], pl.u8], flag: pl.Scalar[pl.index]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range(4):
        part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        b = pl.load(bias, [i * TM + sub * HR, 0], [HR, N])
        if flag > 0:                                                               # ALIAS-IF
            keep = part
        else:
            keep = b
        pl.TFREE(buf)
        o = pl.sub(keep, b)                                                        # UNKNOWN-USE
        pl.store(o, [i * TM + sub * HR, 0], out)


def test_an_if_result_that_may_be_the_popped_tile_is_not_merged_away():
    err = only(c2v_cube(unknown_alias), unknown_alias)
    assert_at(err, unknown_alias, "UNKNOWN-USE", "pl.sub")
    assert "uses %keep" in err.what
    assert f"the then branch of the if at line {line_of(unknown_alias.pyfunc, 'ALIAS-IF')}" in err.what


def test_check_static_json_lists_the_findings_per_program(tmp_path, capsys):
    import json
    from ptopipe.cli import main
    f = tmp_path / "buggy.py"
    f.write_text(BUGGY_FILE)
    assert main(["check", "--static", "--json", str(f)]) == 1
    (rep,) = json.loads(capsys.readouterr().out)
    assert rep["program"] == "buggy" and rep["platform"] == "a2a3" and rep["warnings"] == []
    (fd,) = rep["findings"]
    assert fd["error"] == "CompileError" and fd["what"].startswith("pl.store uses %t")


# -- a loop's inits are passed on, not read ---------------------------------------------------
@pl.aiv
def peeled(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)             # the first iteration, peeled
    o = pl.adds(part, 1.0)
    pl.TFREE(buf)
    pl.store(o, [sub * HR, 0], out)
    for i in pl.range(1, 4):                                    # part / o are rebound: carried
        part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        o = pl.adds(part, 1.0)
        pl.TFREE(buf)
        pl.store(o, [i * TM + sub * HR, 0], out)


@pl.aiv
def freed_into_loop(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
    pl.TFREE(buf)
    for i, (q,) in pl.range(4, init_values=(part,)):
        pl.store(q, [i * TM + sub * HR, 0], out)                            # READ-FREED
        nq = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        o = pl.adds(nq, 1.0)
        pl.TFREE(buf)
        q2 = pl.yield_(o)


def test_a_freed_tile_among_loop_inits_is_only_a_finding_where_the_loop_reads_it():
    """Peeling the first iteration rebinds the popped tile's name, which makes the freed tile
    an init of the loop: passing it on is not a use.  Reading it through the iter_arg is."""
    assert findings(c2v_cube("vec", n=4), peeled) == []
    err = only(c2v_cube("vec", n=5), freed_into_loop)
    assert_at(err, freed_into_loop, "READ-FREED", "pl.store")
    assert "after its TFREE" in err.what


DEEP_FILE = '''
import ptopipe.language as pl


@pl.incore(split=pl.TILE_UP_DOWN, slot_num=SLOTS)
def deep(a: pl.Tensor[[16, 32], pl.f32], b: pl.Tensor[[32, 32], pl.f32],
         out: pl.Tensor[[16, 32], pl.f32]):
    al = pl.move(pl.load(a, [0, 0], [16, 32], space=pl.Mat), space=pl.Left)
    bl = pl.move(pl.load(b, [0, 0], [32, 32], space=pl.Mat), space=pl.Right)
    pl.store(pl.adds(pl.move(pl.matmul(al, bl), space=pl.Vec), 1.0), [0, 0], out)


PROGRAM = pl.program(deep, name="deep")
'''

SMALL_RESERVE_FILE = '''
import ptopipe.language as pl

SLOT = 16 * 32 * 4


@pl.aiv
def vector(out: pl.Tensor[[16, 32], pl.f32], fifo: pl.Tensor[[2 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=2)
    t = pl.TPOP(buf, pl.Tile[[8, 32], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
    pl.store(t, [pl.get_subblockid() * 8, 0], out)
    pl.TFREE(buf)


@pl.aic
def cube(a: pl.Tensor[[16, 32], pl.f32], b: pl.Tensor[[32, 32], pl.f32],
         fifo: pl.Tensor[[2 * SLOT], pl.u8]):
    peer = pl.import_peer_buffer(name="ring", peer_func=vector)
    pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                           slot_num=2)
    al = pl.move(pl.load(a, [0, 0], [16, 32], space=pl.Mat), space=pl.Left)
    bl = pl.move(pl.load(b, [0, 0], [32, 32], space=pl.Mat), space=pl.Right)
    pl.TPUSH(pl.matmul(al, bl), peer, split=pl.TILE_UP_DOWN)


PROGRAM = pl.program(cube, vector, name="small")
'''


@pytest.mark.parametrize("text,protocol,what,line", [
    (DEEP_FILE.replace("SLOTS", "15"), "pto-isa", "SLOT_NUM 15 exceeds the FIFO depth limit 8 of a2a3 under "
     "pto-isa", "@pl.incore"),
    (SMALL_RESERVE_FILE, "spec", "reserve_buffer 'ring' has 2048 bytes but the pipe that uses it needs "
     "SLOT_NUM * SLOT_SIZE = 2 * 2048 = 4096", "pl.reserve_buffer")])
def test_check_static_runs_the_compilers_checks_after_verify_pipes(tmp_path, capsys, text, protocol, what, line):
    """--static found no cross-core error in these, then a run failed: a SlotNum beyond
    pto-isa's FIFO depth and a reserve_buffer smaller than SLOT_NUM * SLOT_SIZE.  The compiler's
    own checks run after VerifyPipes and report them."""
    from ptopipe.cli import main
    f = tmp_path / "k.py"
    f.write_text(text)
    assert main(["check", "--static", str(f), "--protocol", protocol]) == 1
    out, err = capsys.readouterr()
    assert "error(s) without running" in out and what in err, (out, err)
    want = next(i for i, ln in enumerate(text.splitlines(), 1) if line in ln)
    assert f"at {f}:{want}:" in err or f"at {f}:{want + 1}:" in err, err


def test_compile_keeps_slot_num_within_ptoisa_fifo_depth(tmp_path):
    """pto-isa's FIFO holds at most 8 slots on A2A3: 8 compiles, 9 is a CompileError."""
    from ptopipe.passes import compile_program

    def program(n):
        f = tmp_path / f"deep{n}.py"
        f.write_text(DEEP_FILE.replace("SLOTS", str(n)))
        spec = importlib.util.spec_from_file_location(f"deep{n}", f)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod.PROGRAM
    compile_program(program(8), "a2a3", protocol="pto-isa")
    with pytest.raises(CompileError, match="SLOT_NUM 9 exceeds the FIFO depth limit 8"):
        compile_program(program(9), "a2a3", protocol="pto-isa")


# -- SLOT_SIZE too small for the tiles a ring moves (found only by the run) ---------------------
def _small_slot_pair(slot):
    @pl.aic
    def cube(out: pl.Tensor[[TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=2 * slot, base=pl.AUTO)
        pl.aic_initialize_pipe(pl.DIR_V2C, slot, fifo, c2v_consumer_buf=0, v2c_consumer_buf=buf.base,
                               slot_num=2)
        t = pl.TPOP(buf, pl.Tile[[TM, N], pl.f32, pl.Mat], split=pl.TILE_UP_DOWN)   # SMALL-POP
        pl.store(t, [0, 0], out)
        pl.TFREE(buf, split=pl.TILE_UP_DOWN)

    @pl.aiv
    def vec(x: pl.Tensor[[TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="ring", peer_func=cube)
        pl.aiv_initialize_pipe(pl.DIR_V2C, slot, fifo, c2v_consumer_buf=0, v2c_consumer_buf=peer.base,
                               slot_num=2)
        sub = pl.get_subblockid()
        pl.TPUSH(pl.load(x, [sub * HR, 0], [HR, N]), peer, split=pl.TILE_UP_DOWN)      # SMALL-PUSH
    return cube, vec


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_slot_size_smaller_than_the_whole_slot_tile_is_found_at_each_transfer(platform):
    cube, vec = _small_slot_pair(HR * N * 4)           # one lane's half: the slot holds both
    found = verify_pipes.verify(pl.program(cube, vec, name="small").clone(), platform)
    assert [e.where.split(":")[-2] for e in found] == \
        [str(line_of(vec.pyfunc, "SMALL-PUSH")), str(line_of(cube.pyfunc, "SMALL-POP"))]   # the push first
    assert "this TPOP moves Mat tile 16x32 f32 (2048 bytes) but the V2C ring's SLOT_SIZE is 1024" \
        in found[1].what
    assert ("this TPUSH moves Vec tile 8x32 f32 (1024 bytes), its part of a 16x32 slot tile of 2048 bytes "
            "(split TILE_UP_DOWN) but the V2C ring's SLOT_SIZE is 1024") in found[0].what
    assert "declare SLOT_SIZE 2048" in found[0].fix
    x = np.arange(TM * N, dtype=np.float32).reshape(TM, N)
    args = dict(x=x, out=np.zeros_like(x), fifo=ptopipe.gm_buffer(8 * SLOT))
    with pytest.raises(PtoPipeError, match="does not fit SlotSize 1024"):     # the run agrees
        dsl_run(pl.program(cube, vec, name="small"), dict(args), platform=platform)
    cube, vec = _small_slot_pair(TM * N * 4)
    assert verify_pipes.verify(pl.program(cube, vec, name="fits").clone(), platform) == []
    res = dsl_run(pl.program(cube, vec, name="fits"), dict(args, out=np.zeros_like(x)), platform=platform)
    np.testing.assert_array_equal(res.outputs["out"], x)


def _c2v_slot_pair(slot):
    @pl.aic
    def cube(a: pl.Tensor[[TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="ring", peer_func="vec")
        pl.aic_initialize_pipe(pl.DIR_C2V, slot, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                               slot_num=2)
        a0 = pl.move(pl.load(a, [0, 0], [TM, K], space=pl.Mat), space=pl.Left)
        b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        pl.TPUSH(pl.matmul(a0, b0), peer, split=pl.TILE_UP_DOWN)                  # C2V-PUSH

    @pl.aiv
    def vec(out: pl.Tensor[[TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=2 * slot, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, slot, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=2)
        part = pl.TPOP(buf, pl.Tile[[HR, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)   # C2V-POP
        pl.store(part, [pl.get_subblockid() * HR, 0], out)
        pl.TFREE(buf, split=pl.TILE_UP_DOWN)
    return cube, vec


def test_a_c2v_slot_holds_one_vector_cores_part_on_a5_and_the_whole_tile_in_gm():
    """A5's C2V ring is in each Vector core's UB, whose slot receives that core's part: SLOT_SIZE
    of one part is clean there (VerifyPipes and the run agree) and half of it is found at both ends;
    A2A3's GM slot holds the whole tile, so there the part-sized slot is found at both ends."""
    part = HR * N * 4
    rng = np.random.default_rng(3)
    a, b = rng.integers(-3, 4, (TM, K)).astype(np.float32), rng.integers(-3, 4, (K, N)).astype(np.float32)
    args = dict(a=a, b=b, out=np.zeros((TM, N), np.float32), fifo=ptopipe.gm_buffer(8 * SLOT))
    cube, vec = _c2v_slot_pair(part)
    assert findings(cube, vec, "a5") == []
    res = dsl_run(program(cube, vec, name="part"), dict(args), platform="a5")
    np.testing.assert_array_equal(res.outputs["out"], a @ b)
    found = findings(cube, vec, "a2a3")
    assert [e.where.split(":")[-2] for e in found] == \
        [str(line_of(cube.pyfunc, "C2V-PUSH")), str(line_of(vec.pyfunc, "C2V-POP"))], found
    assert (f"this TPUSH moves Acc tile 16x32 f32 ({TM * N * 4} bytes) but the C2V ring's SLOT_SIZE is "
            f"{part}") in found[0].what
    cube, vec = _c2v_slot_pair(part // 2)
    found = findings(cube, vec, "a5")
    assert [e.where.split(":")[-2] for e in found] == \
        [str(line_of(cube.pyfunc, "C2V-PUSH")), str(line_of(vec.pyfunc, "C2V-POP"))], found
    assert (f"this TPUSH moves Acc tile 16x32 f32 ({TM * N * 4} bytes), whose TILE_UP_DOWN part each Vector "
            f"core's slot in its UB holds: 8x32, {part} bytes but the C2V ring's SLOT_SIZE is {part // 2}") \
        in found[0].what
    assert f"declare SLOT_SIZE {part}" in found[0].fix


def test_lanes_1_on_a_function_not_marked_no_split_is_found_at_the_init():
    """AIV1 runs a plain @pl.aiv function too and binds its lanes=1 pipe: every run failed
    with 'AIV1 binds a pipe whose peers are (0,)' while --static passed."""
    from ptopipe.passes.manager import compile_program

    @pl.aic
    def one_lane_cube(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
        pl.aic_initialize_pipe(pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=0, v2c_consumer_buf=buf.base,
                               slot_num=4, lanes=1)
        for i in pl.range(4):
            t = pl.TPOP(buf, pl.Tile[[TM, N], pl.f32, pl.Mat])
            pl.store(t, [i * TM, 0], out)
            pl.TFREE(buf)

    def vec_kernel(deco):
        @deco
        def lane0(x: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
            buf = pl.import_peer_buffer(name="ring", peer_func=one_lane_cube)
            pl.aiv_initialize_pipe(pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=0,      # ONE-LANE
                                   v2c_consumer_buf=buf.base, slot_num=4, lanes=1)
            for i in pl.range(4):
                pl.TPUSH(pl.load(x, [i * TM, 0], [TM, N]), buf)
        return lane0
    bad = vec_kernel(pl.aiv)
    with pytest.raises(CompileError) as ei:
        compile_program(pl.program(one_lane_cube, bad, name="l1"), "a2a3")
    assert "lanes=1 makes AIV0 the only Vector lane of this pipe, but 'lane0' runs on AIV1 too" in ei.value.what
    assert f":{line_of(bad.pyfunc, 'ONE-LANE')}:" in ei.value.where
    assert "@pl.aiv(split=pl.TILE_NO_SPLIT)" in ei.value.fix
    good = vec_kernel(pl.aiv(split=pl.TILE_NO_SPLIT))
    compile_program(pl.program(one_lane_cube, good, name="l1"), "a2a3")
    x = np.arange(4 * TM * N, dtype=np.float32).reshape(4 * TM, N)
    res = dsl_run(pl.program(one_lane_cube, good, name="l1"),
                  dict(x=x, out=np.zeros_like(x), fifo=ptopipe.gm_buffer(8 * SLOT)))
    np.testing.assert_array_equal(res.outputs["out"], x)


def test_a_split_push_on_a_lanes_1_ring_is_found_at_the_push_as_the_run_finds_it():
    """lanes=1 makes AIV0 the ring's one Vector lane: a TILE_UP_DOWN push there hands AIV1's
    half to no one (on A5 the Cube's split handshake waits for AIV1's flags) - found at the
    push statically, and reported there by the run (it gave only a mismatch, or nothing)."""
    @pl.aic
    def half_cube(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
        pl.aic_initialize_pipe(pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=0, v2c_consumer_buf=buf.base,
                               slot_num=4, lanes=1)
        for i in pl.range(4):
            t = pl.TPOP(buf, pl.Tile[[TM, N], pl.f32, pl.Mat], split=pl.TILE_UP_DOWN)
            pl.store(t, [i * TM, 0], out)
            pl.TFREE(buf)

    @pl.aiv(split=pl.TILE_NO_SPLIT)
    def half_lane0(x: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        buf = pl.import_peer_buffer(name="ring", peer_func=half_cube)
        pl.aiv_initialize_pipe(pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=0, v2c_consumer_buf=buf.base,
                               slot_num=4, lanes=1)
        for i in pl.range(4):
            pl.TPUSH(pl.load(x, [i * TM, 0], [TM // 2, N]), buf, split=pl.TILE_UP_DOWN)  # HALF-PUSH
    for platform in ("a2a3", "a5"):
        err = only(half_cube, half_lane0, platform=platform)
        assert_at(err, half_lane0, "HALF-PUSH", "pl.TPUSH")
        assert "whose Vector side is one lane (lanes=1: AIV0), but TILE_UP_DOWN divides each tile" in err.what
        assert "split=pl.TILE_NO_SPLIT at both ends" in err.fix
        x = np.arange(4 * TM * N, dtype=np.float32).reshape(4 * TM, N)
        with pytest.raises(ProtocolError) as ei:
            dsl_run(pl.program(half_cube, half_lane0, name="half"),
                    dict(x=x, out=np.zeros_like(x), fifo=ptopipe.gm_buffer(8 * SLOT)), platform=platform)
        assert f":{line_of(half_lane0.pyfunc, 'HALF-PUSH')}:" in ei.value.where
