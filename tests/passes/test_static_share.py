"""``check --static`` of a split TPOP into a tile too small for its share of the push (the
Cube's V2C pop of fewer rows than the two Vector cores pushed): found at that TPOP, worded as
the run's ProtocolError (``protocol.geometry.share_problem``, one rule for both), and
reported before the Vector's later TPOP of the result the Cube pushes back - the run stops
at the Cube's pop and never makes that push."""
import pathlib

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.errors import ProtocolError
from ptopipe.passes.static_check import verify_program
from ptopipe.runtime import run as dsl_run

from markers import line_of

ROOT = pathlib.Path(__file__).resolve().parents[2]
PTO = ROOT / "tests" / "pto_broken" / "v2c_pop_too_small_a3.pto"
R, K, N = 16, 16, 32                   # the whole V2C tile is 2R x K; each lane pushes R x K
SLOT = 2 * R * N * 4
COMBOS = [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec"), ("a5", "pto-isa")]


def build(pop_rows: int, free: bool = True, pops: int = 1, vec_rows: int = R):
    @pl.aiv
    def vector(x: pl.Tensor[[2 * R, K], pl.f32], out: pl.Tensor[[2 * R, N], pl.f32],
               fifo: pl.Tensor[[4 * SLOT], pl.u8]):
        c2v = pl.reserve_buffer(name="c2v", size=2 * SLOT, base=pl.AUTO)
        v2c = pl.import_peer_buffer(name="v2c", peer_func=cube)
        pl.aiv_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=c2v.base,
                               v2c_consumer_buf=v2c.base, slot_num=2)
        sub = pl.get_subblockid()
        h = pl.load(x, [sub * R, 0], [R, K])
        pl.TPUSH(h, v2c, split=pl.TILE_UP_DOWN)
        for i in pl.range(pops):
            y = pl.TPOP(c2v, pl.Tile[[vec_rows, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)  # VEC-POP
            pl.store(y, [sub * R, 0], out)
            if free:
                pl.TFREE(c2v)

    @pl.aic
    def cube(w: pl.Tensor[[K, N], pl.f32], fifo: pl.Tensor[[4 * SLOT], pl.u8]):
        v2c = pl.reserve_buffer(name="v2c", size=2 * SLOT, base=pl.AUTO)
        c2v = pl.import_peer_buffer(name="c2v", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=c2v.base,
                               v2c_consumer_buf=v2c.base, slot_num=2)
        w0 = pl.move(pl.load(w, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        a = pl.TPOP(v2c, pl.Tile[[pop_rows, K], pl.f32, pl.Mat], split=pl.TILE_UP_DOWN)  # CUBE-POP
        a0 = pl.move(a, space=pl.Left)
        pl.TFREE(v2c)
        pl.TPUSH(pl.matmul(a0, w0), c2v, split=pl.TILE_UP_DOWN)

    return pl.program(cube, vector, name="share"), cube


def _args():
    rng = np.random.default_rng(0)
    return dict(x=rng.integers(-3, 4, (2 * R, K)).astype(np.float32),
                w=rng.integers(-3, 4, (K, N)).astype(np.float32),
                out=np.zeros((2 * R, N), np.float32), fifo=ptopipe.gm_buffer(4 * SLOT))


def _run_and_static(prog, cube, platform, protocol) -> tuple:
    """(the run's ProtocolError, which must be at the Cube's TPOP; the static findings; that
    TPOP's ``:line:``)."""
    at = f":{line_of(cube.pyfunc, 'CUBE-POP')}:"
    with pytest.raises(ProtocolError) as run:
        dsl_run(prog, _args(), platform=platform, protocol=protocol)
    assert at in run.value.where
    return run.value, verify_program(prog, platform, protocol), at


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_cube_pop_too_small_for_both_parts_is_found_at_its_line_as_the_run_finds_it(platform, protocol):
    run, found, at = _run_and_static(*build(R), platform, protocol)
    assert "cannot hold the tile the two Vector cores pushed" in run.what
    e = found[0]
    assert e.kind == "share" and at in e.where, [str(f) for f in found]
    assert ("cannot hold the tile the two Vector cores pushed: 32x16 f32 (16x16 from each)" in e.what
            and "its 16 rows would take one lane's part only" in e.what), e.what
    assert e.fix == run.fix


@pytest.mark.parametrize("platform,protocol", [c for c in COMBOS if c != ("a2a3", "pto-isa")])
def test_the_too_small_pop_goes_before_a_slot_the_kernel_never_frees(platform, protocol):
    """The Vector kernel also never frees its C2V slot - a leak the run finds only at the
    kernel's end, after the Cube's TPOP has failed: that TPOP is the first finding."""
    _run, found, at = _run_and_static(*build(R, free=False), platform, protocol)
    kinds = [e.kind for e in found]
    assert kinds[0] == "share" and "missing_tfree" in kinds and at in found[0].where, [str(e) for e in found]


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_the_too_small_pop_goes_before_the_other_cores_pop_waiting_for_a_push_never_made(platform, protocol):
    """The Vector kernel pops (its half of the Cube's 16-row result, so that tile matches) a
    second tile the Cube never pushes: the Cube, which runs to its end, fails at its TPOP
    first - the run never gets to the hang."""
    _run, found, at = _run_and_static(*build(R, pops=2, vec_rows=R // 2), platform, protocol)
    kinds = [e.kind for e in found]
    assert kinds[0] == "share" and "count" in kinds and at in found[0].where, [str(e) for e in found]


def test_the_same_kernel_popping_both_parts_is_proven_and_runs():
    prog, _ = build(2 * R)
    assert verify_program(prog, "a2a3") == []
    args = _args()
    res = dsl_run(prog, dict(args), platform="a2a3")
    np.testing.assert_array_equal(res.outputs["out"], args["x"] @ args["w"])


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_the_pto_kernel_is_refused_at_the_cube_pop_statically_and_when_run(platform, protocol, tmp_path):
    from ptopipe.codegen.pto_load import PTO_PASSES
    from ptopipe.codegen.pto_reader import read_pto
    from ptopipe.driver.pto import make_inputs, static_verdict
    from ptopipe.passes import PassContext, PassManager
    text = PTO.read_text()
    pop = next(i for i, ln in enumerate(text.splitlines(), 1) if "pto.tpop_from_aiv" in ln)
    v = static_verdict(str(PTO), platform, protocol)
    assert v["status"] == "failed", v
    e = v["found"][0]
    at = f"{PTO.name}:{pop}:"
    assert at in e.where and "cannot hold the tile the two Vector cores pushed" in e.what, \
        [str(f) for f in v["found"]]
    # the run without the static gate in front of it: the same line
    op = read_pto(text, str(PTO), platform=platform)
    op = PassManager([n for n in PTO_PASSES if n != "verify-pipes"]).run(
        op, PassContext(platform=platform, protocol=protocol))
    with pytest.raises(ProtocolError) as run:
        dsl_run(op, make_inputs(op, [], zero_fill=True), platform=platform, protocol=protocol)
    assert at in run.value.where and "cannot hold" in run.value.what, str(run.value)
