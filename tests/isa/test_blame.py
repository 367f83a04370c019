"""Diagnoses that blame the right party: each broken kernel is reported with its class, at
the line of the party that broke the protocol, and the headline names that party.

- a consumer that pops with its ready wait switched off (not "the producer must wait");
- a TFREE skipped in one iteration under pto-isa's sparse notifications (not SyncPeriod;
  a deliberate lag is explained by pto-isa's free index, the latest TPOP's);
- an extra set_flag that a later wait_flag consumes in place of its pair (the fix names the
  extra set, not the pair that already exists; the leak names it too);
- a consumer that returns early while the producer (in an imported module) still pushes;
- TSYNC(None)."""
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import DataRaceError, DeadlockError, KernelError, LeakError, ProtocolError
from ptopipe.isa import *  # noqa: F403
from ptopipe.isa.explore import explore
from blame_producers import SLOT, T, identity_cube
from markers import line_of

BOTH = [(p, q) for p in ("a2a3", "a5") for q in ("spec", "pto-isa")]


def _args(tiles, depth=2):
    a = np.arange(tiles * T * T, dtype=np.float32).reshape(tiles * T, T) / 11
    return dict(a=a, eye=np.eye(T, dtype=np.float32), out=np.zeros((tiles * T, T), np.float32),
                fifo=ptopipe.gm_buffer(depth * SLOT), tiles=tiles)


# -- the consumer skips its ready wait ---------------------------------------------------
def no_ready_wait(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    pipe.cons.setWaitStatus(False)                              # OFF
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0)
    for i in range(tiles):
        TPOP(pipe, t)                                           # POP
        TMULS(o, t, 2.0)
        TFREE(pipe)
        TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), o)


def waits(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0)
    for i in range(tiles):
        TPOP(pipe, t)
        TMULS(o, t, 2.0)
        TFREE(pipe)
        TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), o)


@pytest.mark.parametrize("platform,protocol", BOTH)
def test_a_consumer_that_skips_its_ready_wait_is_blamed(platform, protocol):
    ex = explore((identity_cube, (no_ready_wait, None)), schedules=2, platform=platform, protocol=protocol,
                 args=_args(4))
    (_, e), = ex.failures
    assert type(e) is ProtocolError, e
    assert e.where.endswith(f":{line_of(no_ready_wait, 'POP')}"), e.where
    assert e.what.startswith("AIV0 pops slot") and "without waiting for its ready signal" in e.what, e.what
    assert "setWaitStatus(false) at " in e.what and f":{line_of(no_ready_wait, 'OFF')}" in e.what
    assert "the producer must wait" not in e.fix and "keep AIV0's ready wait on" in e.fix


@pytest.mark.parametrize("platform,protocol", BOTH)
def test_the_consumer_that_waits_is_clean(platform, protocol):
    args = _args(4)
    ex = explore((identity_cube, (waits, None)), schedules=2, platform=platform, protocol=protocol, args=args)
    assert ex.ok, ex.first
    res = ptopipe.run(identity_cube, (waits, None), _args(4), platform=platform, protocol=protocol)
    np.testing.assert_allclose(res.outputs["out"], 2 * args["a"], rtol=1e-6)


# -- a TFREE skipped in one iteration (pto-isa, SlotNum 2: SyncPeriod 2) ------------------
def skips_one_free(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0)
    for i in range(tiles):
        TPOP(pipe, t)                                           # POP
        TMULS(o, t, 2.0)
        if i != 1:                                              # the TFREE of tile 1 is missing
            TFREE(pipe)
        TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), o)


def lags_one(out, fifo, tiles):
    """Frees each tile after popping the next: the TFREE tests the next tile's index."""
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(tiles):
        TPOP(pipe, t)                                           # LAG
        if i:
            TFREE(pipe)                                         # FREE
    TFREE(pipe)


def test_a5_pto_isa_skipped_tfree_is_blamed_on_the_consumer_not_sync_period():
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(identity_cube, (skips_one_free, None), _args(6), platform="a5", protocol="pto-isa")
    e = ei.value
    assert e.where.endswith(f":{line_of(skips_one_free, 'POP')}"), e.where
    assert e.what.startswith("deadlock: AIV0 skipped a TFREE"), e.what
    assert "SyncPeriod 2 is not the cause" in e.fix and "withheld" not in e.what


def test_a5_pto_isa_deliberate_lag_is_explained_by_the_free_index():
    """Freeing each tile after popping the next is no skipped TFREE, and no credit withheld
    either: pto-isa's TFREE tests the index of the latest TPOP (``shouldNotifyFree(
    cons.tileIndex - 1)``), so the TFREE of tile 0, made after the TPOP of tile 1, sends the
    credit of tile 1's position - one free too early, and push #3 overwrites slot 1 while
    tile 1 is still held.  Reported at that TPUSH, the fix naming the TFREE and the rule."""
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(identity_cube, (lags_one, None), _args(6), platform="a5", protocol="pto-isa")
    e = ei.value
    assert e.what.startswith("TPUSH overwrites slot 1") and "skipped a TFREE" not in str(e), e.what
    assert e.fix.startswith(f"the TFREE at tests/isa/test_blame.py:{line_of(lags_one, 'FREE')} released tile #0 "
                            "after the TPOP of tile #1"), e.fix
    assert "latest TPOP" in e.fix, e.fix


@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a5", "spec")])
def test_a_skipped_tfree_under_spec_is_a_leak_at_the_pop(platform, protocol):
    with pytest.raises(LeakError) as ei:
        ptopipe.run(identity_cube, (skips_one_free, None), _args(6), platform=platform, protocol=protocol)
    assert ei.value.where.endswith(f":{line_of(skips_one_free, 'POP')}"), ei.value


# -- an extra set_flag -------------------------------------------------------------------
def extra_set(x, out, n):
    t = Tile(TileType.Vec, float32, T, T, addr=0)
    o = Tile(TileType.Vec, float32, T, T, addr=0x1000)
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)                      # EXTRA
    for i in range(n):
        TLOAD(t, GlobalTensor(x.data() + i * T * T, (T, T)))
        set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)                  # SET
        wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)                 # WAIT
        TADDS(o, t, 1.0)
        set_flag(PIPE_V, PIPE_MTE3, EVENT_ID1)
        wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID1)
        TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), o)
        set_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID2)
        wait_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID2)
        set_flag(PIPE_MTE3, PIPE_V, EVENT_ID3)
        wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID3)


def _event_args():
    return dict(x=np.arange(3 * T * T, dtype=np.float32).reshape(3 * T, T), out=np.zeros((3 * T, T), np.float32),
                n=3)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_an_extra_set_that_a_later_wait_consumes_is_named_in_manual_mode(platform):
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(None, (extra_set, None), _event_args(), platform=platform, sync="manual")
    e = ei.value
    extra, pair_set, pair_wait = (line_of(extra_set, m) for m in ("EXTRA", "SET", "WAIT"))
    assert e.where.endswith(f":{extra}"), e.where
    assert "an extra set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0) at " in e.what and f":{extra} was consumed" in e.what
    assert e.fix.startswith("remove the extra set_flag") and f":{pair_set} and the wait_flag at " in e.fix
    assert f":{pair_wait} already pair up" in e.fix


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_the_leak_of_an_extra_set_names_the_extra_set(platform):
    with pytest.raises(LeakError) as ei:
        ptopipe.run(None, (extra_set, None), _event_args(), platform=platform)     # auto sync: no race
    e = ei.value
    assert e.where.endswith(f":{line_of(extra_set, 'EXTRA')}"), e.where
    assert "one set too many (4 sets, 3 waits) - the extra set is at " in e.what


def two_extra_sets(x, out, n):
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)                      # FIRST EXTRA
    extra_set(x, out, n)


def test_the_leak_of_two_extra_sets_counts_them():
    with pytest.raises(LeakError) as ei:
        ptopipe.run(None, (two_extra_sets, None), _event_args())
    e = ei.value
    assert e.where.endswith(f":{line_of(two_extra_sets, 'FIRST EXTRA')}"), e.where
    assert "2 sets too many (5 sets, 3 waits) - the first extra set is at " in e.what, e.what
    assert "one set" not in e.what


# -- the consumer stops early; the blocked producer lives in another module ---------------
def stops_early(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0)
    for i in range(tiles - 3):                                  # three tiles short
        TPOP(pipe, t)                                           # LAST
        TMULS(o, t, 2.0)
        TFREE(pipe)
        TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), o)


def one_short(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0)
    for i in range(tiles - 1):                                  # one tile short: it stays in the ring
        TPOP(pipe, t)                                           # SHORT
        TMULS(o, t, 2.0)
        TFREE(pipe)
        TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), o)


def never_pops(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)    # BOUND
    if tiles > 0:
        return                                                  # (an early return: no TPOP at all)
    TPOP(pipe, Tile(TileType.Vec, float32, T, T))


def returns_holding(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, T, T)
    for i in range(tiles):
        TPOP(pipe, t)                                           # HELD
        if i == 1:
            return
        TFREE(pipe)


@pytest.mark.parametrize("platform,protocol", BOTH)
@pytest.mark.parametrize("tiles", [7, 8])     # 8: 5 TFREEs, an odd count pto-isa's SyncPeriod 2 withholds
def test_a_consumer_that_stops_early_heads_the_deadlock(platform, protocol, tiles):
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(identity_cube, (stops_early, None), _args(tiles), platform=platform, protocol=protocol)
    e = ei.value
    assert e.where.endswith(f"test_blame.py:{line_of(stops_early, 'LAST')}"), e.where
    assert e.what.startswith(f"deadlock: AIV0 returned after popping {tiles - 3} tile(s)"), e.what
    assert "SyncPeriod" not in e.fix, e.fix       # no notification rule lets a returned consumer pop more
    assert "blame_producers.py" in e.what            # the blocked push is named, after the consumer


def one_over(out, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0)
    for i in range(tiles + 1):                                  # one TPOP more than the Cube pushes
        TPOP(pipe, t)                                           # OVER
        TMULS(o, t, 2.0)
        TFREE(pipe)
        TSTORE(GlobalTensor(out.data() + min(i, tiles - 1) * T * T, (T, T)), o)


@pytest.mark.parametrize("platform,protocol", BOTH)
def test_a_producer_that_stopped_is_named_with_its_count_and_last_push(platform, protocol):
    """The deadlock is at the TPOP that waits; its cause names the producer that returned, how
    many tiles it pushed and its last TPUSH (the other trip count to compare)."""
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(identity_cube, (one_over, None), _args(4), platform=platform, protocol=protocol)
    e = ei.value
    assert e.where.endswith(f"test_blame.py:{line_of(one_over, 'OVER')}"), e.where
    assert e.what.startswith("deadlock: AIC returned after pushing 4 tile(s) to C2V pipe FlagID 0 (peers AIV0) (last "
                             f"TPUSH at tests/isa/blame_producers.py:{line_of(identity_cube, 'PUSH')}), but AIV0 pops "
                             f"more: its pop #4 at tests/isa/test_blame.py:{line_of(one_over, 'OVER')}"), e.what
    assert "AIC pushed 4 to C2V pipe FlagID 0 (peers AIV0), AIV0 popped 4" in e.fix, e.fix


@pytest.mark.parametrize("platform,protocol", BOTH)
def test_a_tile_left_unpopped_names_the_consumers_count_and_last_pop(platform, protocol):
    """The leak is at the push nobody popped, and says how far the consumer got and where: the
    consumer's trip count may be the line to fix (a lane-dependent bound, an early break)."""
    with pytest.raises(LeakError) as ei:
        ptopipe.run(identity_cube, (one_short, None), _args(4), platform=platform, protocol=protocol)
    e = ei.value
    assert e.where.endswith(f"blame_producers.py:{line_of(identity_cube, 'PUSH')}"), e.where
    assert ("was pushed but AIV0 never popped it (AIV0 popped 3 of the 4 AIC pushed; last TPOP at "
            f"tests/isa/test_blame.py:{line_of(one_short, 'SHORT')})") in e.what, e.what


def test_a_consumer_that_pops_nothing_is_said_to_have_bound_the_pipe_only():
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(identity_cube, (never_pops, None), _args(7))
    e = ei.value
    bound = f"test_blame.py:{line_of(never_pops, 'BOUND')}"
    assert e.what.startswith("deadlock: AIV0 returned after popping 0 tile(s)"), e.what
    assert f"it bound the pipe at " in e.what and f"{bound} and popped none" in e.what and "last TPOP" not in e.what
    assert e.where.endswith(bound), e.where


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_consumer_that_returns_holding_a_slot_heads_the_deadlock(platform):
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(identity_cube, (returns_holding, None), _args(5), platform=platform, protocol="spec")
    e = ei.value
    assert e.where.endswith(f":{line_of(returns_holding, 'HELD')}"), e.where
    assert e.what.startswith("deadlock: AIV0 returned holding slot 1"), e.what


# -- TSYNC(None) -------------------------------------------------------------------------
def tsync_none(x, out):
    t = Tile(TileType.Vec, float32, T, T, addr=0)
    prev = None
    for i in range(2):
        TSYNC(prev)                                             # NONE
        prev = TLOAD(t, x)
    TSTORE(out, t)


def test_tsync_none_is_an_error_at_its_line():
    with pytest.raises(KernelError) as ei:
        ptopipe.run(None, (tsync_none, None), dict(x=np.ones((T, T), np.float32),
                                                   out=np.zeros((T, T), np.float32)))
    assert ei.value.where.endswith(f":{line_of(tsync_none, 'NONE')}")
    assert "TSYNC(None)" in ei.value.what
