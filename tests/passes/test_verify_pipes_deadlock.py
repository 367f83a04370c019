"""VerifyPipes runs the two kernels' pipe op orders against each other (passes/pipe_deadlock):
a Cube that pops the Vector's answer before it pushes the question, while the Vector pops
the question first, waits forever - found without running, at both TPOPs; the simulator
agrees (DeadlockError).  The same pair pushing first is clean and runs."""
import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.errors import CompileError, DeadlockError
from ptopipe.passes import verify_pipes
from ptopipe.passes.pipe_deadlock import C2V, V2C, stuck_cores
from ptopipe.runtime import run as dsl_run

from markers import line_of

SLOT = 16 * 16 * 4


def pair(cube_pops_first: bool, trips: int = 2):
    @pl.aic
    def cube(fifo: pl.Tensor[[4 * SLOT], pl.u8], out: pl.Tensor[[16, 16], pl.f32]):
        v2c_buf = pl.reserve_buffer(name="v2c", size=2 * SLOT, base=pl.AUTO)
        c2v = pl.import_peer_buffer(name="c2v", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=c2v.base,
                               v2c_consumer_buf=v2c_buf.base, slot_num=2)
        for i in pl.range(trips):
            if cube_pops_first:
                x = pl.TPOP(v2c_buf, pl.Tile[[16, 16], pl.f32, pl.Mat], split=pl.TILE_UP_DOWN)  # CPOP
                acc = pl.matmul(pl.move(x, space=pl.Left), pl.move(x, space=pl.Right))
                pl.TFREE(v2c_buf)
                pl.TPUSH(acc, c2v, split=pl.TILE_UP_DOWN)
            else:
                x = pl.TPOP(v2c_buf, pl.Tile[[16, 16], pl.f32, pl.Mat], split=pl.TILE_UP_DOWN)
                acc = pl.matmul(pl.move(x, space=pl.Left), pl.move(x, space=pl.Right))
                pl.TFREE(v2c_buf)
                pl.TPUSH(acc, c2v, split=pl.TILE_UP_DOWN)

    @pl.aiv
    def vector(a: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32],
               fifo: pl.Tensor[[4 * SLOT], pl.u8]):
        c2v_buf = pl.reserve_buffer(name="c2v", size=2 * SLOT, base=pl.AUTO)
        v2c = pl.import_peer_buffer(name="v2c", peer_func=cube)
        pl.aiv_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=c2v_buf.base,
                               v2c_consumer_buf=v2c.base, slot_num=2)
        sub = pl.get_subblockid()
        for i in pl.range(trips):
            if cube_pops_first:
                r = pl.TPOP(c2v_buf, pl.Tile[[8, 16], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)  # VPOP
                pl.store(pl.adds(r, 1.0), [sub * 8, 0], out)
                pl.TFREE(c2v_buf)
                pl.TPUSH(pl.load(a, [sub * 8, 0], [8, 16]), v2c, split=pl.TILE_UP_DOWN)
            else:
                pl.TPUSH(pl.load(a, [sub * 8, 0], [8, 16]), v2c, split=pl.TILE_UP_DOWN)
                r = pl.TPOP(c2v_buf, pl.Tile[[8, 16], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
                pl.store(pl.adds(r, 1.0), [sub * 8, 0], out)
                pl.TFREE(c2v_buf)
    return pl.program(cube, vector, name="pingpong"), cube, vector


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_both_cores_popping_first_is_one_finding_naming_both_tpops(platform):
    """One wait-for cycle is one finding (at the Cube's TPOP), naming each core's stuck op."""
    prog, cube, vector = pair(cube_pops_first=True)
    found = verify_pipes.verify(prog.clone(), platform)
    assert len(found) == 1 and isinstance(found[0], CompileError)
    (e,) = found
    assert e.what.startswith("the cores wait for each other forever")
    assert int(e.where.split(":")[-2]) == line_of(cube.pyfunc, "CPOP")
    assert f"waits in the TPOP of the V2C ring at line {line_of(cube.pyfunc, 'CPOP')}" in e.what
    assert f"waits in the TPOP of the C2V ring at line {line_of(vector.pyfunc, 'VPOP')}" in e.what


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_what_the_finding_prevents_is_a_deadlock(platform, no_hang):
    prog, _c, _v = pair(cube_pops_first=True)
    args = dict(a=np.ones((16, 16), np.float32), out=np.zeros((16, 16), np.float32),
                fifo=ptopipe.gm_buffer(4 * SLOT))
    with pytest.raises(DeadlockError):
        dsl_run(prog, args, platform=platform)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("trips", [1, 3])
def test_the_vector_pushing_first_is_clean_and_runs(platform, trips, no_hang):
    prog, _c, _v = pair(cube_pops_first=False, trips=trips)
    assert verify_pipes.verify(prog.clone(), platform) == []
    a = np.random.default_rng(1).integers(-2, 3, (16, 16)).astype(np.float32)
    res = dsl_run(prog, dict(a=a, out=np.zeros((16, 16), np.float32),
                             fifo=ptopipe.gm_buffer(4 * SLOT)), platform=platform)
    np.testing.assert_array_equal(res.outputs["out"], a @ a + 1.0)


def test_stuck_cores_follows_the_ring_rules():
    """Three tiles through two slots: fine when the consumer frees as it goes; stuck when
    the Cube waits for an answer the Vector sends only after a third tile the Cube pushes
    after that answer."""
    push, pop, free = "push", "pop", "free"
    aic = [(push, C2V, "p1"), (push, C2V, "p2"), (push, C2V, "p3"), (pop, V2C, "q")]
    aiv = [(pop, C2V, "a"), (free, C2V, "f"), (pop, C2V, "b"), (free, C2V, "f"),
           (pop, C2V, "c"), (free, C2V, "f"), (push, V2C, "r")]
    assert stuck_cores({None: aic, 0: aiv}, (0,), {C2V: 2, V2C: 2}) == {}
    aic_bad = [(push, C2V, "p1"), (push, C2V, "p2"), (pop, V2C, "q"), (push, C2V, "p3")]
    assert stuck_cores({None: aic_bad, 0: aiv}, (0,), {C2V: 2, V2C: 2}) == {
        None: (pop, V2C, "q"), 0: (pop, C2V, "c")}
    full = [(push, C2V, "p1"), (push, C2V, "p2"), (push, C2V, "p3")]       # never freed: no slot
    assert stuck_cores({None: full, 0: [(pop, C2V, "a"), (pop, C2V, "b")]}, (0,),
                       {C2V: 2, V2C: 2}) == {None: (push, C2V, "p3")}
