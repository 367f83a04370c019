"""``check --static`` where the TPOP frees its slot itself (``ProtocolModel.pop_frees``:
pto-isa, a ring in GM - A2A3): such a TPOP holds nothing, so pops never freed (a tail the
kernel leaves) are no hold-limit finding - the run passes them with a warning - while on the
other platform / protocol combinations both refuse them.  Its tile is staged in one of
LocalSlotNum staging slots: reading it after that many more TPOPs is a use after free, at the
read, in the static proof as in the run."""
import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.errors import DeadlockError, PtoPipeError
from ptopipe.passes.static_check import verify_program
from ptopipe.runtime import run as dsl_run

from markers import line_of

TM, K, N = 16, 32, 32
SLOT = TM * N * 4
HR = TM // 2
VEC = pl.Tile[[HR, N], pl.f32, pl.Vec]
TILES = 4
COMBOS = [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec"), ("a5", "pto-isa")]


def build(variant: str):
    """The Cube pushes TILES tiles; the Vector kernel pops them: ``unfreed`` in a loop with no
    TFREE, ``held3`` three at once (LocalSlotNum 2) before reading the first."""
    unfreed = variant == "unfreed"

    @pl.aiv
    def vec(out: pl.Tensor[[TILES * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=4)
        sub = pl.get_subblockid()
        if unfreed:
            for i in pl.range(TILES):
                part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)                         # UNFREED
                pl.store(part, [i * TM + sub * HR, 0], out)
        else:
            p0 = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
            p1 = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
            p2 = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)                               # THIRD
            o = pl.add(pl.add(p0, p1), p2)                                              # READ
            pl.store(o, [sub * HR, 0], out)
            pl.TFREE(buf)
            pl.TFREE(buf)
            pl.TFREE(buf)
            p3 = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
            pl.store(p3, [TM + sub * HR, 0], out)
            pl.TFREE(buf)

    @pl.aic
    def cube(a: pl.Tensor[[TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="ring", peer_func=vec)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                               slot_num=4)
        a0 = pl.move(pl.load(a, [0, 0], [TM, K], space=pl.Mat), space=pl.Left)
        b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(TILES):
            pl.TPUSH(pl.matmul(a0, b0), peer, split=pl.TILE_UP_DOWN)
    return pl.program(cube, vec, name=variant), vec


def _args():
    rng = np.random.default_rng(0)
    return dict(a=rng.integers(-3, 4, (TM, K)).astype(np.float32), b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                out=np.zeros((TILES * TM, N), np.float32), fifo=ptopipe.gm_buffer(8 * SLOT))


def _run(prog, platform, protocol):
    """The run's error (None: it passed)."""
    try:
        dsl_run(prog, _args(), platform=platform, protocol=protocol)
    except PtoPipeError as e:
        return e
    return None


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_pops_never_freed_pass_where_the_pop_frees_itself_and_fail_elsewhere_as_the_run(platform, protocol):
    prog, vec = build("unfreed")
    warnings = []
    found = verify_program(prog, platform, protocol, warnings=warnings)
    ran = _run(prog, platform, protocol)
    if (platform, protocol) == ("a2a3", "pto-isa"):
        assert found == [] and ran is None, ([str(e) for e in found], ran)
        pop = f":{line_of(vec.pyfunc, 'UNFREED')}:"
        assert any(pop in w and "the TPOP frees its slot itself" in w for w in warnings), warnings
    else:
        assert found and ran is not None, ([str(e) for e in found], ran)
        assert f":{line_of(vec.pyfunc, 'UNFREED')}:" in found[0].where


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_tile_read_after_its_staging_slot_is_reused_is_found_at_the_read(platform, protocol):
    """On A5 (consumer-local rings) three held of SLOT_NUM 4 fit - under spec.  Under pto-isa
    (SyncPeriod 2) the three TFREEs after the third TPOP all test that TPOP's index
    (``shouldNotifyFree(cons.tileIndex - 1)``), which sends no credit, so the consumer sends one
    credit for four tiles where the destructor drains two: the run hangs at the teardown,
    naming the TFREE, and the static proof finds it at the third TPOP."""
    prog, vec = build("held3")
    found = verify_program(prog, platform, protocol)
    ran = _run(prog, platform, protocol)
    if (platform, protocol) == ("a5", "spec"):
        assert found == [] and ran is None, ([str(e) for e in found], ran)
        return
    if platform == "a5":
        third = f":{line_of(vec.pyfunc, 'THIRD')}:"
        assert found[0].kind == "free_index" and third in found[0].where, str(found[0])
        assert isinstance(ran, DeadlockError) and "teardown" in ran.what, str(ran)
        assert "latest TPOP" in ran.fix and "tile #1 after the TPOP of tile #2" in ran.fix, ran.fix
        return
    assert found and ran is not None, ([str(e) for e in found], ran)
    if protocol == "pto-isa":           # nothing held: the staged copy is overwritten
        read = f":{line_of(vec.pyfunc, 'READ')}:"
        assert found[0].kind == "use_after_free" and read in found[0].where, str(found[0])
        assert "after its staged copy, overwritten in its staging slot by the TPOP at line " \
            f"{line_of(vec.pyfunc, 'THIRD')}" in found[0].what
        assert read in ran.where and "use after free" in ran.what, str(ran)
    else:                               # the third TPOP holds more than LocalSlotNum 2
        third = f":{line_of(vec.pyfunc, 'THIRD')}:"
        assert found[0].kind == "too_many_pops" and third in found[0].where, str(found[0])
        assert third in ran.where, str(ran)
