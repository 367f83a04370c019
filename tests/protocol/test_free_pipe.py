"""The pipe a consumer's TFREE signals from (``ProtocolModel.free_pipe``): pto-isa's
``Consumer::free`` sets the flag from PIPE_V for a C2V ring in UB, PIPE_MTE1 for a V2C ring
in L1 and PIPE_MTE2 for a ring in GM.  A pipe is an in-order queue, so a free that follows
vector work on a loaded GM workspace is ordered after that load: the producer may then
overwrite the workspace.  ptopipe signalled an A5 local ring's free from the scalar pipe
and reported a false race.  Without the vector work between the load and
the free, the race is real and still reported."""
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import DataRaceError
from ptopipe.isa import *  # noqa: F403
from ptopipe.isa.explore import explore
from markers import line_of

T = 16
TOK = T * T * 4
TILES = 4


def _go(f1):
    return TPipe(0, DIR_C2V, TOK, 1, peers=(0,))(f1, 0x20000, 0)


def cube(a, ws, f1, tiles):
    go = _go(f1)
    m = Tile(TileType.Mat, float32, T, T, addr=0)
    tok = Tile(TileType.Acc, float32, T, T, addr=0x8000)
    for i in range(tiles):
        TLOAD(m, GlobalTensor(a.data() + i * T * T, (T, T)))
        TSTORE(GlobalTensor(ws.data() + (i % 2) * T * T, (T, T)), m)    # CSTORE
        pipe_barrier(PIPE_ALL)
        TPUSH(go, tok, TILE_NO_SPLIT)


def vector_kernel(use_before_free):
    def vector(out, ws, f1, tiles):
        go = _go(f1)
        t = Tile(TileType.Vec, float32, T, T)
        w = Tile(TileType.Vec, float32, T, T, addr=0)
        o = Tile(TileType.Vec, float32, T, T, addr=0x4000)
        for i in range(tiles):
            TPOP(go, t, TILE_NO_SPLIT)
            TLOAD(w, GlobalTensor(ws.data() + (i % 2) * T * T, (T, T)))      # VLOAD
            if use_before_free:
                TADDS(o, w, 1.0)                # V reads the loaded tile; the free follows on V
            TFREE(go)
            if not use_before_free:
                TADDS(o, w, 1.0)
            TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), o)
    return vector


def _args():
    rng = np.random.default_rng(2)
    return dict(a=rng.integers(-3, 4, (TILES * T, T)).astype(np.float32),
                ws=np.zeros((2 * T, T), np.float32), out=np.zeros((TILES * T, T), np.float32),
                f1=ptopipe.gm_buffer(TOK), tiles=TILES)


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a5_free_after_vector_work_on_the_load_orders_the_load(protocol):
    args = _args()
    res = ptopipe.run(cube, (vector_kernel(True), None), args, platform="a5", protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], args["a"] + 1)
    ex = explore((cube, (vector_kernel(True), None)), schedules=3, platform="a5", protocol=protocol,
                 args=_args())                          # check's causal order too
    assert ex.ok, ex.first


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a5_free_before_any_use_of_the_load_races_the_producers_store(protocol):
    vector = vector_kernel(False)
    ex = explore((cube, (vector, None)), schedules=1, platform="a5", protocol=protocol, args=_args())
    (_, e), = ex.failures
    assert isinstance(e, DataRaceError), e
    assert e.where.endswith(f":{line_of(cube, 'CSTORE')}") and f":{line_of(vector, 'VLOAD')}" in e.details


def test_the_free_pipe_per_ring():
    from ptopipe.arch import PipeUnit
    from ptopipe.protocol.model import PTO_ISA_A5, SPEC

    class Ch:
        def __init__(self, way, in_gm):
            self.way, self.in_gm = way, in_gm
    for model in (SPEC, PTO_ISA_A5):
        assert model.free_pipe(Ch("C2V", False)) is PipeUnit.V
        assert model.free_pipe(Ch("V2C", False)) is PipeUnit.MTE1
        assert model.free_pipe(Ch("C2V", True)) is PipeUnit.MTE2


def test_a2a3_pto_isa_no_op_tfree_orders_nothing_and_the_race_says_so():
    """pto-isa on A2A3 frees a GM slot inside the TPOP: the TFREE after the load signals
    nothing, so the producer's next store races the load (a fix that only says
    'TPUSH / SET after its access' does not help: the kernel seems to do that).  Under the spec protocol
    the free is set from MTE2 after the load: clean."""
    args = _args()
    res = ptopipe.run(cube, (vector_kernel(True), None), args, platform="a2a3", protocol="spec")
    np.testing.assert_array_equal(res.outputs["out"], args["a"] + 1)
    ex = explore((cube, (vector_kernel(True), None)), schedules=1, platform="a2a3", protocol="pto-isa",
                 args=_args())
    (_, e), = ex.failures
    assert isinstance(e, DataRaceError) and e.where.endswith(f":{line_of(cube, 'CSTORE')}"), e
    assert "AIV0's TFREE of C2V pipe FlagID 0 (peers AIV0) signals nothing here (pto-isa on a2a3" in e.fix
    assert "send a separate 'done' token" in e.fix
