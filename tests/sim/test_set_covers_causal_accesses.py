"""A SET covers an earlier GM access of its core only if the access is causally ordered
before it on the core - not because it happened to finish earlier.

AIV0 TLOADs a GM workspace (MTE2) and then TPUSHes a "done" token: with nothing ordering
the load before the token's signal, the Cube's next TSTORE to the workspace races the load
(write after read), however much unrelated vector work (TEXP, TROWMAX) delays the signal
past the load's end in the simulated timing.  Ordering the load before the signal - a
pipe_barrier(PIPE_ALL), a token computed from the loaded tile (a dependency chain), or in
manual sync mode a set_flag / wait_flag from MTE2 to V before the token is written - is
clean and equal to numpy.  The causal order is ``run(causal=True)``, what ``ptopipe check``
uses; a plain run keeps the (cheaper) completion-time rule and passes b01c's shape.
"""
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import DataRaceError
from ptopipe.isa import *  # noqa: F403
from cube_parts import square_acc
from markers import line_of

T, K = 16, 32
TOK = 16 * 16 * 4
TILES = 4


def _pipes(f1, f2):
    go = TPipe(0, DIR_C2V, TOK, 2, peers=(0,))(f1, 0x20000, 0)
    done = TPipe(2, DIR_V2C, TOK, 2, peers=(0,))(f2, 0, 0x40000)
    return go, done


def cube(a, b, ws, f1, f2, tiles):
    go, done = _pipes(f1, f2)
    a1 = Tile(TileType.Mat, float32, T, K, addr=0)
    b1 = Tile(TileType.Mat, float32, K, T, addr=0x4000)
    a0 = Tile(TileType.Left, float32, T, K, addr=0)
    b0 = Tile(TileType.Right, float32, K, T, addr=0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    tok = Tile(TileType.Acc, float32, 16, 16, addr=0x8000)
    got = Tile(TileType.Mat, float32, 16, 16)
    TLOAD(b1, b)
    TMOV(b0, b1)
    for i in range(tiles):
        TLOAD(a1, GlobalTensor(a.data() + i * T * K, (T, K)))
        TMOV(a0, a1)
        TMATMUL(acc, a0, b0)
        TSTORE(ws, acc)                                                   # STORE
        TPUSH(go, tok, TILE_NO_SPLIT)
        TPOP(done, got, TILE_NO_SPLIT)
        TFREE(done)


def vector_kernel(order):
    """``order``: None (the race: b01c), "barrier", or "chain" (the token is computed from
    the loaded tile)."""
    def vector(out, ws, f1, f2, tiles):
        go, done = _pipes(f1, f2)
        t = Tile(TileType.Vec, float32, 16, 16)
        d = Tile(TileType.Vec, float32, 16, 16, addr=0x10000)
        w = Tile(TileType.Vec, float32, T, T, addr=0)
        o = Tile(TileType.Vec, float32, T, T, addr=0x4000)
        big = Tile(TileType.Vec, float32, 16, 64, addr=0x8000)
        TEXPANDS(d, 1.0)
        TEXPANDS(big, 0.5)
        for i in range(tiles):
            TPOP(go, t, TILE_NO_SPLIT)
            TFREE(go)
            TLOAD(w, ws)                                                  # LOAD
            if order == "barrier":
                pipe_barrier(PIPE_ALL)
            TEXP(big, big)                      # unrelated work: the signal goes out after
            TEXP(big, big)                      # the load has ended in the simulated timing
            TROWMAX(d, big)
            if order == "chain":
                TMULS(d, w, 0.0)
                TADDS(d, d, 1.0)
            else:
                TEXPANDS(d, 1.0)
            TPUSH(done, d, TILE_NO_SPLIT)
            TADDS(o, w, 1.0)
            TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), o)
    return vector


def manual_vector_kernel(event_before_token):
    """Manual sync mode: the MTE2 -> V event that lets V read the loaded tile is waited for
    before the token is written (clean) or only after the token is pushed (the race)."""
    def vector(out, ws, f1, f2, tiles):
        go, done = _pipes(f1, f2)
        t = Tile(TileType.Vec, float32, 16, 16)
        d = Tile(TileType.Vec, float32, 16, 16, addr=0x10000)
        w = Tile(TileType.Vec, float32, T, T, addr=0)
        o = Tile(TileType.Vec, float32, T, T, addr=0x4000)
        for i in range(tiles):
            TPOP(go, t, TILE_NO_SPLIT)
            TFREE(go)
            TLOAD(w, ws)                                                  # MLOAD
            if event_before_token:
                set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
                wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
            TEXPANDS(d, 1.0)
            set_flag(PIPE_V, PIPE_MTE3, EVENT_ID2)      # the TPUSH reads d on MTE3
            wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID2)
            TPUSH(done, d, TILE_NO_SPLIT)
            if not event_before_token:
                set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
                wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
            TADDS(o, w, 1.0)
            set_flag(PIPE_V, PIPE_MTE3, EVENT_ID1)
            wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID1)
            TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), o)
            pipe_barrier(PIPE_ALL)              # the loop-carried edges
    return vector


def manual_cube(a, ws, f1, f2, tiles):
    """The Cube's side in manual mode: the block goes GM -> L1 -> GM workspace."""
    go, done = _pipes(f1, f2)
    m = Tile(TileType.Mat, float32, T, T, addr=0)
    tok = Tile(TileType.Acc, float32, 16, 16, addr=0)
    got = Tile(TileType.Mat, float32, 16, 16)
    for i in range(tiles):
        TLOAD(m, GlobalTensor(a.data() + i * T * T, (T, T)))
        pipe_barrier(PIPE_ALL)
        TSTORE(ws, m)                                                     # MSTORE
        pipe_barrier(PIPE_ALL)
        TPUSH(go, tok, TILE_NO_SPLIT)
        TPOP(done, got, TILE_NO_SPLIT)
        TFREE(done)


def _args(k=K):
    rng = np.random.default_rng(5)
    return dict(a=rng.integers(-3, 4, (TILES * T, k)).astype(np.float32),
                b=rng.integers(-3, 4, (K, T)).astype(np.float32),
                ws=np.zeros((T, T), np.float32), out=np.zeros((TILES * T, T), np.float32),
                f1=gm_buffer(2 * TOK), f2=gm_buffer(2 * TOK), tiles=TILES)


COMBOS = [(p, q) for p in ("a2a3", "a5") for q in ("spec", "pto-isa")]


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_load_not_ordered_before_the_token_races_whatever_its_timing(platform, protocol):
    vector = vector_kernel(None)
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(cube, (vector, None), _args(), platform=platform, protocol=protocol, causal=True)
    e = ei.value
    assert e.where.endswith(f":{line_of(cube, 'STORE')}"), e.where
    assert f":{line_of(vector, 'LOAD')}" in e.details
    assert "AIV0's TLOAD runs on PIPE_MTE2" in e.details
    assert "a SET orders only the accesses of its own pipe" in e.details        # the causal rule
    assert "pipe_barrier(PIPE_ALL)" in e.fix and "computed from the loaded one" in e.fix


@pytest.mark.parametrize("platform,protocol", COMBOS)
@pytest.mark.parametrize("order", ["barrier", "chain"])
def test_a_load_ordered_before_the_token_is_clean(platform, protocol, order):
    args = _args()
    res = ptopipe.run(cube, (vector_kernel(order), None), args, platform=platform, protocol=protocol,
                      causal=True)
    a, b = args["a"], args["b"]
    want = np.concatenate([a[i * T:(i + 1) * T] @ b + 1 for i in range(TILES)])
    np.testing.assert_array_equal(res.outputs["out"], want)
    np.testing.assert_array_equal(res.outputs["ws"], a[-T:] @ b)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_manual_sync_an_event_before_the_token_orders_the_load(platform, protocol):
    args = _args(T)
    del args["b"]
    res = ptopipe.run(manual_cube, (manual_vector_kernel(True), None), args, platform=platform,
                      protocol=protocol, sync="manual", causal=True)
    np.testing.assert_array_equal(res.outputs["out"], args["a"] + 1)
    args = _args(T)
    del args["b"]
    vector = manual_vector_kernel(False)
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(manual_cube, (vector, None), args, platform=platform, protocol=protocol, sync="manual",
                    causal=True)
    assert ei.value.where.endswith(f":{line_of(manual_cube, 'MSTORE')}"), ei.value.where
    assert f":{line_of(vector, 'MLOAD')}" in ei.value.details


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_plain_run_keeps_the_completion_time_rule_and_check_finds_the_race(platform, tmp_path, capsys):
    """run() without causal=True: the load finished before the signal in the simulated
    timing, so it is covered (the cheaper rule of a plain run); `ptopipe check` (explore)
    turns the causal order on and reports the race at the Cube's store."""
    from ptopipe.isa.explore import explore
    vector = vector_kernel(None)
    ptopipe.run(cube, (vector, None), _args(), platform=platform)
    res = explore((cube, (vector, None)), schedules=1, platform=platform, args=_args())
    (_, e), = res.failures
    assert isinstance(e, DataRaceError) and e.where.endswith(f":{line_of(cube, 'STORE')}"), e


# -- a store still in flight, then the same core's store of the same bytes on the SET's pipe --------
def _two_stores_cube(x, buf, again):
    acc = square_acc(x, T)
    m = Tile(TileType.Mat, float32, T, T, addr=0)                       # (x, as square_acc loaded it)
    TSTORE(GlobalTensor(buf.data(), (T, T)), acc)                      # FIX STORE
    TSTORE(GlobalTensor(buf.data() + (0 if again else T * T), (T, T)), m)
    set_intra_block(PIPE_MTE3, 0)


def _reader(x, buf, again):
    if get_subblockid() == 0:
        wait_intra_block(PIPE_MTE2, 0)
        t = Tile(TileType.Vec, float32, T, T, addr=0)
        TLOAD(t, GlobalTensor(buf.data(), (T, T)))                       # READ


@pytest.mark.parametrize("again", [False, True])
def test_a_store_in_flight_stays_unordered_when_a_later_store_rewrites_its_bytes(again):
    """The Cube's SET from MTE3 orders its MTE3 store, not the FIX store before it: AIV0's load
    after the WAIT races the FIX store - also when the MTE3 store writes the same bytes again
    (its record takes the FIX store's place in the checker, which must keep the FIX store's)."""
    args = dict(x=np.ones((T, T), np.float32), buf=np.zeros((2 * T, T), np.float32), again=again)
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(_two_stores_cube, _reader, args, platform="a5", causal=True)
    e = ei.value
    assert e.where.endswith(f"test_set_covers_causal_accesses.py:{line_of(_reader, 'READ')}"), e.where
    store = f"AIC   write TSTORE  at {e.where.rsplit(':', 1)[0]}:{line_of(_two_stores_cube, 'FIX STORE')} (1st)"
    assert store in str(e) and "AIC's TSTORE runs on PIPE_FIX" in str(e), str(e)


def _paged_stores_cube(x, buf):
    """The same two stores over a view of 160 rows, each row on a page of its own: 320 accesses
    in flight at the SET (past the checker's bound on in-flight accesses before it prunes them)."""
    m = Tile(TileType.Mat, float32, 160, T, addr=0)
    right_m = Tile(TileType.Mat, float32, T, T, addr=0x10000)
    left, right = Tile(TileType.Left, float32, 160, T, addr=0), Tile(TileType.Right, float32, T, T, addr=0)
    acc = Tile(TileType.Acc, float32, 160, T, addr=0)
    TLOAD(m, x)
    TLOAD(right_m, GlobalTensor(x.data(), (T, T)))
    TMOV(left, m)
    TMOV(right, right_m)
    TMATMUL(acc, left, right)
    view = GlobalTensor(buf.data(), (160, T), (1024, 1))
    TSTORE(view, acc)                                                    # PAGED FIX STORE
    TSTORE(view, m)
    set_intra_block(PIPE_MTE3, 0)


def _paged_reader(x, buf):
    if get_subblockid() == 0:
        wait_intra_block(PIPE_MTE2, 0)
        t = Tile(TileType.Vec, float32, 1, T, addr=0)
        TLOAD(t, GlobalTensor(buf.data(), (1, T)))                       # READ ROW 0


def test_a_store_in_flight_stays_unordered_past_the_bound_on_accesses_in_flight():
    args = dict(x=np.ones((160, T), np.float32), buf=np.zeros(160 * 1024, np.float32))
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(_paged_stores_cube, _paged_reader, args, platform="a5", causal=True)
    e = ei.value
    assert e.where.endswith(f"test_set_covers_causal_accesses.py:{line_of(_paged_reader, 'READ ROW 0')}")
    assert f":{line_of(_paged_stores_cube, 'PAGED FIX STORE')} (1st)" in str(e), str(e)
