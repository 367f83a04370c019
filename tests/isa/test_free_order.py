"""What a consumer's free SET waits for (``ProtocolModel.free_after_readers``).

pto-isa's ``Consumer::free`` is one flag instruction on one pipe: on A5 ``set_intra_block(PIPE_V)``
for a C2V ring in UB, ``setIntraBlockBySplit<PIPE_MTE1>`` for a V2C ring in L1; on A2A3
``ffts_cross_core_sync(PIPE_MTE2)``.  It follows that pipe's earlier work and nothing else, so
a TSTORE reading a popped UB slot on MTE3 right before TFREE is still running when the
producer is told the slot is free: a race on A5 unless a set_flag / wait_flag orders the
store before the free.  Seed 003's TFREE releases the slot once the consumer has finished
reading it: the spec protocol's SET follows every read.  On A2A3 the ring is in GM and a
tile TPOP loads a staged copy: the store reads the copy, not the slot."""
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import DataRaceError, PtoPipeError
from ptopipe.isa import *  # noqa: F403
from ptopipe.isa.explore import explore
from markers import line_of

T = 16
SLOT = T * T * 4
TILES = 6


def cube(a, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    m = Tile(TileType.Mat, float32, T, T, addr=0)
    left, right = Tile(TileType.Left, float32, T, T, addr=0), Tile(TileType.Right, float32, T, T, addr=0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    for i in range(tiles):
        TLOAD(m, GlobalTensor(a.data() + i * T * T, (T, T)))
        TMOV(left, m)
        TMOV(right, m)
        TMATMUL(acc, left, right)
        TPUSH(pipe, acc)                                        # PUSH


def vector_store_then_free(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(tiles):
        TPOP(pipe, t)
        TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), t)   # STORE
        TFREE(pipe)                                              # FREE


def vector_store_synced(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(tiles):
        TPOP(pipe, t)
        TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), t)
        set_flag(PIPE_MTE3, PIPE_V, EVENT_ID0)      # the free (PIPE_V) waits for the store
        wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID0)
        TFREE(pipe)


def vector_barrier(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(tiles):
        TPOP(pipe, t)
        TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), t)
        pipe_barrier(PIPE_ALL)
        TFREE(pipe)


def vector_compute_then_free(out, fifo, tiles):
    """Reads the slot on V only (the free's own pipe), stores a tile of its own."""
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0)
    for i in range(tiles):
        TPOP(pipe, t)
        TMULS(o, t, 1.0)
        TFREE(pipe)
        TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), o)


def _args():
    a = np.random.default_rng(1).integers(-2, 3, (TILES * T, T)).astype(np.float32)
    return dict(a=a, out=np.zeros((TILES * T, T), np.float32), fifo=ptopipe.gm_buffer(2 * SLOT),
                tiles=TILES)


def _golden(a):
    return np.concatenate([a[i * T:(i + 1) * T] @ a[i * T:(i + 1) * T] for i in range(TILES)])


def test_a5_pto_isa_free_does_not_wait_for_a_store_of_the_slot():
    ex = explore((cube, (vector_store_then_free, None)), schedules=2, platform="a5", protocol="pto-isa",
                 args=_args())
    (_, e), = ex.failures
    assert isinstance(e, DataRaceError), e
    free, store = line_of(vector_store_then_free, "FREE"), line_of(vector_store_then_free, "STORE")
    assert e.where.endswith(f":{free}"), e.where
    assert "AIV0's TSTORE reads the popped tile on PIPE_MTE3" in e.what
    assert "signals the free from PIPE_V without waiting for PIPE_MTE3" in e.what
    assert f":{store} (on PIPE_MTE3" in e.details and f":{line_of(cube, 'PUSH')}" in e.details
    assert "set_flag(PIPE_MTE3, PIPE_V, EVENT_ID0)" in e.fix


def test_a_plain_run_finds_the_free_that_does_not_wait_for_a_store():
    """``run`` without the causal order agrees with ``check``: the free SET is sent from PIPE_V
    when the V pipe reaches it, with the TSTORE still running on MTE3 (its simulated time does
    not wait for the store, as on the device), so the store has not completed by the SET."""
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(cube, (vector_store_then_free, None), _args(), platform="a5", protocol="pto-isa")
    e = ei.value
    assert e.where.endswith(f":{line_of(vector_store_then_free, 'FREE')}"), e.where
    assert "signals the free from PIPE_V without waiting for PIPE_MTE3" in e.what
    assert f":{line_of(vector_store_then_free, 'STORE')} (on PIPE_MTE3" in e.details


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("vector", [vector_store_then_free, vector_store_synced])
def test_a_free_under_a_store_warns_when_no_push_comes_back_to_its_slot(vector, causal):
    """As many tiles as slots: no push reuses a slot, so nothing races in this run - the
    kernel is still wrong for a longer one, and the run says so at its TFREE (a plain run
    too)."""
    args = dict(_args(), tiles=2)
    res = ptopipe.run(cube, (vector, None), args, platform="a5", protocol="pto-isa", causal=causal)
    warned = [(w, where) for w, where in res.summary.leaks if "no push came back to the slot" in w]
    if vector is vector_store_synced:
        assert not warned
        return
    (w, where), = warned
    assert str(where).endswith(f":{line_of(vector, 'FREE')}"), where
    assert f":{line_of(vector, 'STORE')} still reads the popped tile on PIPE_MTE3" in w
    assert "set_flag(PIPE_MTE3, PIPE_V, EVENT_ID0)" in w
    assert not [w for w, _ in ptopipe.run(cube, (vector, None), dict(_args(), tiles=2), platform="a5",
                                          protocol="spec", causal=True).summary.leaks if "no push came back" in w]


@pytest.mark.parametrize("platform,protocol", [("a5", "spec"), ("a2a3", "spec"), ("a2a3", "pto-isa")])
def test_the_same_kernel_is_clean_where_the_free_follows_the_store(platform, protocol):
    """spec: the free follows every read; A2A3: the store reads the staged copy, not the slot."""
    ex = explore((cube, (vector_store_then_free, None)), schedules=3, platform=platform,
                 protocol=protocol, args=_args())
    assert ex.ok, ex.first


@pytest.mark.parametrize("vector", [vector_store_synced, vector_barrier, vector_compute_then_free])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a_store_ordered_before_the_free_is_clean(vector, platform, protocol):
    args = _args()
    ex = explore((cube, (vector, None)), schedules=3, platform=platform, protocol=protocol, args=args)
    assert ex.ok, ex.first
    res = ptopipe.run(cube, (vector, None), _args(), platform=platform, protocol=protocol)
    np.testing.assert_allclose(res.outputs["out"], _golden(args["a"]), rtol=1e-6)


# -- V2C: the Cube consumer's free is set from MTE1 (A5 L1 ring) ----------------------------
def v_producer(a, fifo, tiles):
    pipe = TPipe(0, DIR_V2C, SLOT, 2, peers=(0,))(fifo, 0x10000)
    t = Tile(TileType.Vec, float32, T, T, addr=0)
    for i in range(tiles):
        TLOAD(t, GlobalTensor(a.data() + i * T * T, (T, T)))
        TPUSH(pipe, t)                                          # VPUSH


def c_consumer(sync):
    def cube_consumer(out, fifo, tiles):
        pipe = TPipe(0, DIR_V2C, SLOT, 2, peers=(0,))(fifo, 0x10000)
        m = Tile(TileType.Mat, float32, T, T)
        for i in range(tiles):
            TPOP(pipe, m)
            TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), m)   # MSTORE
            if sync:
                set_flag(PIPE_MTE3, PIPE_MTE1, EVENT_ID0)
                wait_flag(PIPE_MTE3, PIPE_MTE1, EVENT_ID0)
            TFREE(pipe)                                          # MFREE
    return cube_consumer


def _v2c_args():
    a = np.random.default_rng(2).integers(-3, 4, (TILES * T, T)).astype(np.float32)
    return dict(a=a, out=np.zeros((TILES * T, T), np.float32), fifo=ptopipe.gm_buffer(2 * SLOT),
                tiles=TILES)


@pytest.mark.parametrize("how", ["check", "run"])
def test_a5_pto_isa_v2c_free_from_mte1_does_not_wait_for_a_store_of_the_l1_slot(how):
    broken = c_consumer(False)
    if how == "check":
        ex = explore((broken, (v_producer, None)), schedules=2, platform="a5", protocol="pto-isa",
                     args=_v2c_args())
        (_, e), = ex.failures
    else:
        with pytest.raises(PtoPipeError) as ei:
            ptopipe.run(broken, (v_producer, None), _v2c_args(), platform="a5", protocol="pto-isa")
        e = ei.value
    assert isinstance(e, DataRaceError), e
    assert e.where.endswith(f":{line_of(broken, 'MFREE')}"), e.where
    assert "from PIPE_MTE1 without waiting for PIPE_MTE3" in e.what
    assert f":{line_of(broken, 'MSTORE')} (on PIPE_MTE3" in e.details
    assert f":{line_of(v_producer, 'VPUSH')}" in e.details


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_v2c_store_ordered_before_the_free_is_clean(platform, protocol):
    args = _v2c_args()
    ex = explore((c_consumer(True), (v_producer, None)), schedules=3, platform=platform,
                 protocol=protocol, args=args)
    assert ex.ok, ex.first
    res = ptopipe.run(c_consumer(True), (v_producer, None), _v2c_args(), platform=platform,
                      protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], args["a"])


def test_the_models_say_what_their_free_waits_for():
    from ptopipe.protocol.model import PTO_ISA, PTO_ISA_A5, PTO_ISA_A5_HEAD, SPEC
    assert SPEC.free_after_readers
    assert not any(m.free_after_readers for m in (PTO_ISA, PTO_ISA_A5, PTO_ISA_A5_HEAD))


def both_cube(x, back, fifo):
    """A DIR_BOTH pipe on A5: the Cube pushes x_i @ x_i (C2V), pops AIV0's answer from its L1 ring
    (V2C) and stores the popped tile itself before its TFREE (a set on PIPE_MTE1)."""
    pipe = TPipe(0, DIR_BOTH, SLOT, 2, peers=(0,))(fifo, 0x8000, 0x40000)
    m = Tile(TileType.Mat, float32, T, T, addr=0)
    left, right = Tile(TileType.Left, float32, T, T, addr=0), Tile(TileType.Right, float32, T, T, addr=0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    r = Tile(TileType.Mat, float32, T, T)
    for i in range(4):
        TLOAD(m, GlobalTensor(x.data() + i * T * T, (T, T)))
        TMOV(left, m)
        TMOV(right, m)
        TMATMUL(acc, left, right)
        TPUSH(pipe, acc)
        TPOP(pipe, r)
        TSTORE(GlobalTensor(back.data() + i * T * T, (T, T)), r)       # BOTH-STORE
        TFREE(pipe)                                                      # BOTH-FREE


def both_vector(fifo):
    pipe = TPipe(0, DIR_BOTH, SLOT, 2, peers=(0,))(fifo, 0x8000, 0x40000)
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0)
    for i in range(4):
        TPOP(pipe, t)
        TADDS(o, t, 1.0)
        TFREE(pipe)
        TPUSH(pipe, o)


def test_a_push_that_came_back_after_an_unordered_free_by_timing_alone_is_said_to_have():
    """The Cube's free does not wait for its store of the popped tile; AIV0's push back into that
    slot waits for the Cube's next C2V push too, which a plain run sends after the store has ended
    (so no race shows), though nothing orders the store before it on the device: the run's
    warning says a push came back, and check's causal order reports the race at the TFREE."""
    x = np.random.default_rng(2).integers(-2, 3, (4 * T, T)).astype(np.float32)

    def args():
        return dict(x=x, back=np.zeros_like(x), fifo=ptopipe.gm_buffer(4 * SLOT))
    res = ptopipe.run(both_cube, (both_vector, None), args(), platform="a5", protocol="pto-isa")
    np.testing.assert_array_equal(res.outputs["back"], np.concatenate(
        [x[i * T:(i + 1) * T] @ x[i * T:(i + 1) * T] + 1 for i in range(4)]))
    (w, where), = [(w, at) for w, at in res.summary.leaks if "TFREE of" in w]
    assert str(where).endswith(f":{line_of(both_cube, 'BOTH-FREE')}"), where
    assert f":{line_of(both_cube, 'BOTH-STORE')} still reads the popped tile on PIPE_MTE3" in w
    assert "a push came back to the slot in this run" in w and "no push came back" not in w, w
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(both_cube, (both_vector, None), args(), platform="a5", protocol="pto-isa", causal=True)
    assert ei.value.where.endswith(f":{line_of(both_cube, 'BOTH-FREE')}"), ei.value
