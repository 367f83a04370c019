"""The two ends of a pipe disagreeing, reported as the cause: two
FlagIDs for one pipe - not "two pipes share a flag" or "rings overlap" - on every platform
and protocol; a lane returning early, and a TALLOC never pushed, named in the deadlock's
fix rather than "the blocked cores wait on different pipes"."""
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import ConfigError, DeadlockError
from ptopipe.isa import *  # noqa: F403
from markers import line_of

SLOT = 16 * 32 * 4


def kernels(aic_id, aiv_id):
    def cube(x, fifo):
        pipe = TPipe(aic_id, DIR_C2V, SLOT, 4)(fifo, 0x10000, 0)        # AIC
        m = Tile(TileType.Mat, float32, 16, 32, addr=0)
        a = Tile(TileType.Left, float32, 16, 32, addr=0)
        b = Tile(TileType.Right, float32, 32, 32, addr=0)
        acc = Tile(TileType.Acc, float32, 16, 32, addr=0)
        TLOAD(m, x)
        TMOV(a, m)
        TMATMUL(acc, a, b)
        TPUSH(pipe, acc, TILE_UP_DOWN)

    def vector(out, fifo):
        pipe = TPipe(aiv_id, DIR_C2V, SLOT, 4)(fifo, 0x10000, 0)        # AIV
        t = Tile(TileType.Vec, float32, 8, 32)
        TPOP(pipe, t, TILE_UP_DOWN)
        TSTORE(GlobalTensor(out.data() + get_subblockid() * 8 * 32, (8, 32)), t)
        TFREE(pipe)
    return cube, vector


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("ids", [(2, 3), (0, 4)])
def test_two_flag_ids_for_one_pipe(platform, protocol, ids, no_hang):
    cube, vector = kernels(*ids)
    args = dict(x=np.ones((16, 32), np.float32), out=np.zeros((16, 32), np.float32),
                fifo=ptopipe.gm_buffer(8 * SLOT))
    with pytest.raises((ConfigError, DeadlockError)) as ei:
        ptopipe.run(cube, vector, args, platform=platform, protocol=protocol)
    e = ei.value
    text = str(e)
    assert "use different FlagIDs" in text, text
    assert "disjoint FlagID ranges" not in text and "overlaps" not in e.what
    if isinstance(e, ConfigError):
        assert e.where.endswith(f":{line_of(kernels, 'AIV')}") and "same FlagID" in e.fix


def lane_skips():
    def cube(fifo):
        pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, 0x20000)
        m = Tile(TileType.Mat, float32, 16, 32)
        for _ in range(3):
            TPOP(pipe, m, TILE_UP_DOWN)                                 # WAIT
            TFREE(pipe)

    def vector(fifo):
        pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, 0x20000)
        h = Tile(TileType.Vec, float32, 8, 32, addr=0)
        TEXPANDS(h, 1.0)
        for _ in range(3 - get_subblockid()):                          # AIV1 pushes one fewer
            TPUSH(pipe, h, TILE_UP_DOWN)
    return cube, vector


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_lane_that_returns_early_is_named_in_the_fix(platform, no_hang):
    """AIV1 skipping its last push: the fix said the blocked cores wait on different pipes
    and asked about FlagIDs."""
    cube, vector = lane_skips()
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(cube, vector, dict(fifo=ptopipe.gm_buffer(4 * SLOT)), platform=platform)
    fix = ei.value.fix
    assert "from AIV1, whose kernel returned" in fix and "both Vector lanes" in fix, fix
    assert "different pipes" not in fix


def talloc_not_pushed():
    def cube(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x10000, 0)
        g = GlobalTensor(float32, (16, 32))
        TALLOC(pipe, g)                                                  # TALLOC
        TSTORE(g, Tile(TileType.Mat, float32, 16, 32, addr=0))

    def vector(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x10000, 0)
        g = GlobalTensor(float32, (16, 32))
        TPOP(pipe, g)
        TFREE(pipe, g)
    return cube, (vector, None)


def test_a_talloc_never_pushed_is_named_in_the_deadlock(no_hang):
    """The ring state said "pushed 1" for a TALLOC with no TPUSH, and the fix did not name the
    TALLOC."""
    cube, aiv = talloc_not_pushed()
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(cube, aiv, dict(fifo=ptopipe.gm_buffer(2 * SLOT)))
    e = ei.value
    assert "producer: pushed 0, next tag 1, TALLOCed [0]" in e.details
    assert f":{line_of(talloc_not_pushed, 'TALLOC')} and returned without its TPUSH" in e.fix, e.fix


def test_a_golden_mismatch_under_the_default_schedule_says_default():
    """The headline read "(schedule None)"."""
    from ptopipe.errors import MismatchError
    from ptopipe.isa.explore import run_schedule
    cube, vector = kernels(0, 0)

    def make_args(_rng):
        return dict(x=np.ones((16, 32), np.float32), out=np.zeros((16, 32), np.float32),
                    fifo=ptopipe.gm_buffer(8 * SLOT))
    scen = ptopipe.Scenario("wrong", cube, vector, make_args, lambda a, **_: {"out": np.full((16, 32), 7.0, np.float32)})
    with pytest.raises(MismatchError) as ei:
        run_schedule(scen)
    assert "(schedule default)" in str(ei.value) and "None" not in ei.value.what
