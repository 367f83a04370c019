"""``check --static`` of loops of unknown trip count, explored as a first and a later
iteration: the first iteration's loop variable is the loop's start (a branch on it is
decided: a TFREE ``if i > 0`` of a slot popped in the iteration before), a later one's is
past it, and a finding's failing values run the loops it happens in (often enough to hold
more slots than the ring has) - so what is found is what a run with those values meets, and
a count finding after a loop names the pop a run waits in."""
import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.errors import PtoPipeError
from ptopipe.passes.static_check import FAILED, NOT_PROVEN, verdict, verify_program
from ptopipe.runtime import run as dsl_run

from markers import line_of
from test_verify_pipes import program

TM, K, N = 16, 32, 32
SLOT = TM * N * 4
HR = TM // 2
VEC = pl.Tile[[HR, N], pl.f32, pl.Vec]
COMBOS = [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec"), ("a5", "pto-isa")]


def cube_of(nested: bool = False, two: bool = False):
    """The Cube pushes n tiles (``nested``: m x n; ``two``: 2) to the ring of the Vector
    kernel (named "vec" in the program)."""
    @pl.aic
    def cube(a: pl.Tensor[[TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8],
             n: pl.Scalar[pl.index], m: pl.Scalar[pl.index]):
        c2v = pl.import_peer_buffer(name="c2v", peer_func="vec")
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=c2v.base, v2c_consumer_buf=0, slot_num=2)
        a0 = pl.move(pl.load(a, [0, 0], [TM, K], space=pl.Mat), space=pl.Left)
        b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        if two:
            for i in pl.range(2):
                pl.TPUSH(pl.matmul(a0, b0), c2v, split=pl.TILE_UP_DOWN)
        elif nested:
            for i in pl.range(m):
                for j in pl.range(n):
                    pl.TPUSH(pl.matmul(a0, b0), c2v, split=pl.TILE_UP_DOWN)
        else:
            for i in pl.range(n):
                pl.TPUSH(pl.matmul(a0, b0), c2v, split=pl.TILE_UP_DOWN)
    return cube


@pl.aiv
def late_free(out: pl.Tensor[[TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8],
              n: pl.Scalar[pl.index], m: pl.Scalar[pl.index]):
    """Each iteration frees the slot the one before popped; the last after the loop."""
    c2v = pl.reserve_buffer(name="c2v", size=2 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=c2v.base, v2c_consumer_buf=0, slot_num=2)
    sub = pl.get_subblockid()
    for i in pl.range(n):
        if i > 0:
            pl.TFREE(c2v)
        t = pl.TPOP(c2v, VEC, split=pl.TILE_UP_DOWN)
        pl.store(t, [sub * HR, 0], out)
        pl.barrier()
    if n > 0:
        pl.TFREE(c2v)


@pl.aiv
def free_below(out: pl.Tensor[[TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8],
               n: pl.Scalar[pl.index], m: pl.Scalar[pl.index]):
    """m x n pops, freed only while the outer i < n - 1: the rest leak (and, with enough of
    them, exceed the ring's 2 slots)."""
    c2v = pl.reserve_buffer(name="c2v", size=2 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=c2v.base, v2c_consumer_buf=0, slot_num=2)
    sub = pl.get_subblockid()
    for i in pl.range(m):
        for j in pl.range(n):
            t = pl.TPOP(c2v, VEC, split=pl.TILE_UP_DOWN)                                # BELOW-POP
            pl.store(t, [sub * HR, 0], out)
            pl.barrier()
            if i < n - 1:
                pl.TFREE(c2v)


@pl.aiv
def tail_even(out: pl.Tensor[[TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8],
              n: pl.Scalar[pl.index], m: pl.Scalar[pl.index]):
    """Two pops per n // 2 iterations, and one more when n is even (odd was meant)."""
    c2v = pl.reserve_buffer(name="c2v", size=2 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=c2v.base, v2c_consumer_buf=0, slot_num=2)
    sub = pl.get_subblockid()
    for i in pl.range(n // 2):
        t = pl.TPOP(c2v, VEC, split=pl.TILE_UP_DOWN)
        pl.store(t, [sub * HR, 0], out)
        pl.barrier()
        pl.TFREE(c2v)
        t = pl.TPOP(c2v, VEC, split=pl.TILE_UP_DOWN)
        pl.store(t, [sub * HR, 0], out)
        pl.barrier()
        pl.TFREE(c2v)
    if n % 2 == 0:
        t = pl.TPOP(c2v, VEC, split=pl.TILE_UP_DOWN)                                    # TAIL-POP
        pl.store(t, [sub * HR, 0], out)
        pl.barrier()
        pl.TFREE(c2v)


def _args(n, m=1):
    rng = np.random.default_rng(0)
    return dict(a=rng.integers(-3, 4, (TM, K)).astype(np.float32), b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                out=np.zeros((TM, N), np.float32), fifo=ptopipe.gm_buffer(8 * SLOT), n=n, m=m)


def _verdict(prog, platform, protocol, ranges):
    def verify_with(values):
        warnings = []
        return verify_program(prog, platform, protocol, values, warnings, ranges), warnings
    return verdict(verify_with, None)


def _values(e) -> dict:
    """The scalar parameters' failing values of finding ``e`` (``n=2, m=3, j=1 (in the loop
    ...)``: the loop variables' left out)."""
    import re
    return {k: int(v) for k, v in re.findall(r"\b([nm])=(\d+)", e.values)}


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_free_of_the_slot_the_iteration_before_popped_is_no_finding_and_runs(platform, protocol):
    """The first iteration frees nothing (``i > 0`` is false there): no TFREE without a held
    slot, no slot piling up - not proven (its iterations differ), never a FAIL; it runs."""
    prog = program(cube_of(), late_free, "late", peer="vec")
    status, found, warnings = _verdict(prog, platform, protocol, {"n": (0, 8)})
    assert status == NOT_PROVEN and found == [], ([str(e) for e in found], warnings)
    assert any("do not all push / pop / free alike" in w for w in warnings), warnings
    for n in (0, 1, 3):
        dsl_run(prog, _args(n), platform=platform, protocol=protocol)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_tfree_under_a_condition_on_the_loop_variable_leaves_the_pop_count_known(platform, protocol):
    """Against 2 pushes the n pops (``if i > 0: TFREE`` moves from iteration to iteration
    but holds no TPUSH / TPOP, so the count is n) fail where n is not 2 - as the run."""
    prog = program(cube_of(two=True), late_free, "late2", peer="vec")
    status, found, _ = _verdict(prog, platform, protocol, {"n": (0, 8)})
    assert status == FAILED and found[0].kind == "count", [str(e) for e in found]
    n = _values(found[0])["n"]
    assert n != 2
    with pytest.raises(PtoPipeError):
        dsl_run(prog, _args(n), platform=platform, protocol=protocol)
    dsl_run(prog, _args(2), platform=platform, protocol=protocol)


@pytest.mark.parametrize("platform,protocol", [c for c in COMBOS if c != ("a2a3", "pto-isa")])
def test_the_failing_values_of_a_leak_in_nested_loops_run_them(platform, protocol):
    """(On A2A3 under pto-isa the TPOP frees its slot itself: test_static_self_freeing_pop.)"""
    prog = program(cube_of(nested=True), free_below, "below", peer="vec")
    status, found, _ = _verdict(prog, platform, protocol, {"n": (0, 3), "m": (0, 3)})
    assert status == FAILED
    e = found[0]
    assert f":{line_of(free_below.pyfunc, 'BELOW-POP')}:" in e.where, str(e)
    v = _values(e)
    assert v["n"] >= 1 and v["m"] >= 1, e.values          # the loops that pop run
    with pytest.raises(PtoPipeError):
        dsl_run(prog, _args(v["n"], v["m"]), platform=platform, protocol=protocol)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_pop_after_the_loop_without_a_push_is_named_where_the_run_waits(platform, protocol):
    prog = program(cube_of(), tail_even, "tail", peer="vec")
    (e,) = verify_program(prog, platform, protocol, {"n": 2, "m": 1})
    tail = f":{line_of(tail_even.pyfunc, 'TAIL-POP')}:"
    assert e.kind == "count" and tail in e.where and "the 3rd of the C2V ring" in e.what, str(e)
    with pytest.raises(PtoPipeError) as ran:
        dsl_run(prog, _args(2), platform=platform, protocol=protocol)
    assert tail in ran.value.where, str(ran.value)


@pl.aiv
def ack_after(x: pl.Tensor[[TM, N], pl.f32], out: pl.Tensor[[TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    """Pops one tile, then pushes the acknowledgement the Cube waits for before pushing."""
    c2v = pl.reserve_buffer(name="c2v", size=2 * SLOT, base=pl.AUTO)
    v2c = pl.import_peer_buffer(name="v2c", peer_func="ack_cube")
    pl.aiv_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=c2v.base,
                           v2c_consumer_buf=v2c.base, slot_num=2)
    sub = pl.get_subblockid()
    t = pl.TPOP(c2v, VEC, split=pl.TILE_UP_DOWN)
    pl.store(t, [sub * HR, 0], out)
    pl.barrier()
    pl.TFREE(c2v)
    pl.TPUSH(pl.load(x, [sub * HR, 0], [HR, N]), v2c, split=pl.TILE_UP_DOWN)


@pl.aic
def ack_cube(a: pl.Tensor[[TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    """Waits for the acknowledgement, then pushes two tiles (one more than the Vector pops)."""
    v2c = pl.reserve_buffer(name="v2c", size=2 * SLOT, base=pl.AUTO)
    c2v = pl.import_peer_buffer(name="c2v", peer_func=ack_after)
    pl.aic_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=c2v.base,
                           v2c_consumer_buf=v2c.base, slot_num=2)
    a0 = pl.move(pl.load(a, [0, 0], [TM, K], space=pl.Mat), space=pl.Left)
    b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
    g = pl.TPOP(v2c, pl.Tile[[TM, N], pl.f32, pl.Mat], split=pl.TILE_UP_DOWN)          # ACK-POP
    pl.TFREE(v2c)
    for i in pl.range(2):
        pl.TPUSH(pl.matmul(a0, b0), c2v, split=pl.TILE_UP_DOWN)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_hang_before_a_push_never_popped_is_the_first_finding_as_the_run_meets_it(platform, protocol):
    """The Cube's second push is never popped - found only at the kernel's end - but the
    cores hang long before: each waits for the other's first tile.  The hang is the first
    finding, at the Cube's TPOP where the run reports it."""
    prog = pl.program(ack_cube, ack_after, name="ack")
    found = verify_program(prog, platform, protocol)
    assert [e.kind for e in found][:2] == ["deadlock", "count"], [str(e) for e in found]
    at = f":{line_of(ack_cube.pyfunc, 'ACK-POP')}:"
    assert at in found[0].where, str(found[0])
    rng = np.random.default_rng(0)
    args = dict(x=rng.integers(-3, 4, (TM, N)).astype(np.float32), a=rng.integers(-3, 4, (TM, K)).astype(np.float32),
                b=rng.integers(-3, 4, (K, N)).astype(np.float32), out=np.zeros((TM, N), np.float32),
                fifo=ptopipe.gm_buffer(8 * SLOT))
    with pytest.raises(PtoPipeError) as ran:
        dsl_run(prog, args, platform=platform, protocol=protocol)
    assert at in ran.value.where, str(ran.value)
