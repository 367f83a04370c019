"""Start-up credits, when the producer waits and the teardown drain, per pipe kind, under
pto-isa on both platforms (``docs/protocols.md``).

pto-isa's TMPipe (a2a3/ and a5/ ``TPush.hpp``) is its own protocol: the constructor posts one
free (``cons.free()``), every ``TPUSH_IMPL(tile, pipe)`` waits (``allocate()``), every release
frees, the destructor waits once (``prod.allocate()``); FiFoSyncT is never read.  A TPipe has
no constructor credit (ptopipe models the ``shouldWaitFree`` window on both platforms; on A5
that is pto-isa's protocol of local no-split FIFOs - the constructor credits of A5 GM and split
FIFOs are not modelled, see ``docs/protocols.md``).
"""
import os

import numpy as np
import pytest

import ptopipe
from ptopipe import DeadlockError
from ptopipe.errors import LeakError
from ptopipe.isa import *
from ptopipe.protocol.model import PTO_ISA, PTO_ISA_A5, pto_isa_drain
from ptopipe.protocol import model as _protocol

from markers import line_of

T = 16
SLOT = T * T * 4
RING_UB = 0x8000
TMPIPE_KINDS = [("a2a3", FIFOType.GM_FIFO), ("a5", FIFOType.GM_FIFO), ("a5", FIFOType.VEC_FIFO)]


def _tmpipe(fifo_type, fifo, depth=4, sync_t=2):
    """A TMPipe both Vector lanes serve (VecCubeRatio V2C1_VECS, the default): each pops its half
    of the Cube's rows.  (pto-isa's Cube waits for both lanes' flags whatever the ratio, so a
    one-lane TMPipe hangs on the device: test_a_one_lane_tmpipe_hangs_at_the_cubes_wait.)"""
    acc = Tile(TileType.Acc, float32, T, T)
    vec = Tile(TileType.Vec, float32, T // 2, T)
    return TMPipe(0, fifo_type, depth, sync_t, acc, vec)(fifo, RING_UB, 0)


def tmpipe_stream(fifo_type, n, hold=1, short=False, tfree=True):
    """The Cube pushes ``n`` tiles; each Vector lane pops its half of them ``hold`` at a time
    before freeing them (``short``: it pops one tile fewer than pushed; ``tfree=False``: no
    TFREE - on A5 a tile TPOP from a GM FIFO already freed the slot and a TFREE would free it
    again, M21)."""
    def cube(x, fifo):
        pipe = _tmpipe(fifo_type, fifo)
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        xl1 = Tile(TileType.Mat, float32, T, T, addr=0)
        xl0 = Tile(TileType.Left, float32, T, T, addr=0)
        eye = Tile(TileType.Right, float32, T, T, addr=0)
        eye.array[...] = np.eye(T, dtype=np.float32)
        for i in range(n):
            TLOAD(xl1, GlobalTensor(x.data() + i * T * T, (T, T)))
            TMOV(xl0, xl1)
            TMATMUL(acc, xl0, eye)
            TPUSH(pipe, acc, TILE_UP_DOWN)  # push
        return  # teardown

    def vec(out, fifo):
        pipe = _tmpipe(fifo_type, fifo)
        pops = n - 1 if short else n
        half = get_subblockid() * (T // 2) * T
        for i0 in range(0, pops, hold):
            held = []
            for i in range(i0, min(i0 + hold, pops)):
                t = Tile(TileType.Vec, float32, T // 2, T)
                TPOP(pipe, t, TILE_UP_DOWN)  # pop
                held.append((i, t))
            for i, t in held:
                TSTORE(GlobalTensor(out.data() + i * T * T + half, (T // 2, T)), t)
                if tfree:
                    TFREE(pipe, TILE_UP_DOWN)
    return cube, vec


def _tfree(platform, fifo_type):
    return not (platform == "a5" and fifo_type is FIFOType.GM_FIFO)


def _args(n):
    x = np.arange(max(n, 1) * T * T, dtype=np.float32).reshape(max(n, 1) * T, T)
    return dict(x=x, out=np.zeros_like(x), fifo=gm_buffer(4 * SLOT))


def _rows(res, pipe_name=None):
    return {(r["pipe"], r["signal"]): r for r in res.summary.ledger if r["pipe"] is not None}


# --- TMPipe: one constructor credit, a wait before every push, one teardown wait ----------------
@pytest.mark.parametrize("platform,fifo_type", TMPIPE_KINDS)
@pytest.mark.parametrize("n", range(0, 6))
def test_tmpipe_credit_wait_every_push_and_drain_balance(platform, fifo_type, n, no_hang):
    cube, vec = tmpipe_stream(fifo_type, n, tfree=_tfree(platform, fifo_type))
    args = _args(n)
    res = ptopipe.run(cube, vec, args, platform=platform, protocol="pto-isa", launches=2)
    np.testing.assert_array_equal(res["out"][:n * T], args["x"][:n * T])
    (ch,) = res.cluster.state.channels.values()
    assert (ch.startup_credits, ch.wait_every, ch.sync_period) == (1, True, 1)   # FiFoSyncT 2 unused
    rows = [r for r in res.summary.ledger if r["launch"] == 2 and r["pipe"] is not None]
    free = next(r for r in rows if r["signal"] == "free")
    ready = next((r for r in rows if r["signal"] == "ready"),
                 dict(sent=0, consumed=0, drained=0, left=0))    # n = 0: the ready flag was never SET
    # sent: the constructor's credit + one free per release; consumed: one wait per push;
    # drained: the destructor's one wait; the flags are empty at every exit
    assert (free["sent"], free["consumed"], free["drained"], free["left"]) == (1 + n, n, 1, 0)
    assert (ready["sent"], ready["consumed"], ready["drained"], ready["left"]) == (n, n, 0, 0)
    assert free["inherited"] == 0


@pytest.mark.parametrize("platform,fifo_type", TMPIPE_KINDS)
def test_tmpipe_consumer_one_pop_short_hangs_the_teardown(platform, fifo_type, no_hang):
    """The tile nobody popped keeps launch 1's teardown waiting for its free: reported as the
    leak one launch reports (at the push, in launch 1 of 2), the hang it causes after it."""
    n = 4
    cube, vec = tmpipe_stream(fifo_type, n, short=True, tfree=_tfree(platform, fifo_type))
    with pytest.raises(LeakError) as ei:
        ptopipe.run(cube, vec, _args(n), platform=platform, protocol="pto-isa", launches=2)
    e = ei.value
    assert int(e.where.rpartition(":")[2]) == line_of(cube, "push") and "in launch 1 of 2" in str(e)
    assert "never popped it" in e.what
    assert f"so the teardown hangs ({e.where.rpartition(':')[0]}:{line_of(cube, 'teardown')})" in e.details
    # n - 1 releases + the constructor's credit = n frees, all taken by the n pushes' waits
    assert f"sent {n} / consumed {n} / awaited 1" in str(e)


# --- the window (TPipe) against a wait before every push (TMPipe) --------------------------------
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_holding_two_tiles_of_a_local_tmpipe(protocol, no_hang):
    """Each Vector lane pops two tiles before freeing either.  pto-isa's A5 TMPipe on a local
    VEC_FIFO: push #1 waits for the free of tile 0, which the lanes send only after their second
    TPOP - a hang at that TPOP.  Under spec (FiFoDepth 4 pre-signalled slots) the run is clean."""
    n = 4
    cube, vec = tmpipe_stream(FIFOType.VEC_FIFO, n, hold=2)
    args = _args(n)
    if protocol == "spec":
        res = ptopipe.run(cube, vec, args, platform="a5", protocol=protocol)
        np.testing.assert_array_equal(res["out"], args["x"])
        return
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(cube, vec, args, platform="a5", protocol=protocol)
    e = ei.value
    # reported at the Cube's push #1, naming the TPOP whose tile AIV0 still holds
    assert int(e.where.rpartition(":")[2]) == line_of(cube, "push")
    (aiv0,) = [f for f in e.findings if f.get("kind") == "blocked" and f["core"] == "AIV0"]
    assert int(aiv0["where"].rpartition(":")[2]) == line_of(vec, "pop")
    assert [int(h["where"].rpartition(":")[2]) for h in aiv0["holds"]] == [line_of(vec, "pop")]
    assert "push #1 waits for AIV0's TFREE #1" in str(e)
    assert "TMPipe has one start-up credit and its producer waits for a free before every push" in e.fix


def one_lane_tmpipe(way, fifo_type, n, lane, other):
    """A TMPipe of one Vector lane, ``lane`` (VecCubeRatio V1C1_VEC0 / V1C1_VEC1), that pops
    (C2V) or pushes (V2C) every tile whole, and what the other lane does: "none" (runs no
    kernel), "returns" (returns before constructing the pipe) or "constructs" (constructs it,
    then moves no tile: ``if (get_subblockid() == lane) { ... }``)."""
    ratio = VecCubeRatio.V1C1_VEC0 if lane == 0 else VecCubeRatio.V1C1_VEC1
    acc, vec, mat = (Tile(TileType.Acc, float32, T, T), Tile(TileType.Vec, float32, T, T),
                     Tile(TileType.Mat, float32, T, T))

    def make(fifo):
        if way == "C2V":
            return TMPipe(0, fifo_type, 2, 1, acc, vec, vc_ratio=ratio)(fifo, RING_UB, 0)
        return TMPipe(0, fifo_type, 2, 1, vec, mat, local_depth=0, vc_ratio=ratio)(fifo, 0, 0x10000)

    def cube(fifo):
        pipe = make(fifo)
        for i in range(n):
            if way == "C2V":
                TPUSH(pipe, Tile(TileType.Acc, float32, T, T, addr=0))  # cube push
            else:
                TPOP(pipe, Tile(TileType.Mat, float32, T, T, addr=0))  # cube pop
                TFREE(pipe)
        return  # teardown

    def aiv(fifo):
        if other == "returns" and get_subblockid() != lane:
            return
        pipe = make(fifo)
        if get_subblockid() == lane:
            for i in range(n):
                if way == "C2V":
                    TPOP(pipe, Tile(TileType.Vec, float32, T, T))
                    TFREE(pipe)
                else:
                    TPUSH(pipe, Tile(TileType.Vec, float32, T, T, addr=0))
    return cube, ((aiv, None) if other == "none" and lane == 0 else (None, aiv) if other == "none" else aiv)


ONE_LANE = [("a2a3", "C2V", FIFOType.GM_FIFO, 0, "none", 2), ("a5", "C2V", FIFOType.GM_FIFO, 0, "returns", 2),
            ("a5", "C2V", FIFOType.VEC_FIFO, 0, "constructs", 2), ("a2a3", "C2V", FIFOType.GM_FIFO, 0, "constructs", 1),
            ("a2a3", "V2C", FIFOType.GM_FIFO, 1, "returns", 2), ("a5", "V2C", FIFOType.GM_FIFO, 1, "returns", 2),
            ("a5", "V2C", FIFOType.MAT_FIFO, 0, "constructs", 2)]


@pytest.mark.parametrize("platform,way,fifo_type,lane,other,n", ONE_LANE)
def test_a_one_lane_tmpipe_hangs_at_the_cubes_wait(platform, way, fifo_type, lane, other, n, no_hang):
    """pto-isa's TMPipe has the Cube wait for both Vector lanes' flags whatever its VecCubeRatio
    (a5 TPush.hpp: ``allocate`` waits FlagID + 1 and FlagID + 1 + 16, ``Consumer::wait`` FlagID and
    FlagID + 16; a2a3: ``wait_flag_dev`` of a CV_CORES_SYNC flag counts both Vector cores), so a
    TMPipe one lane serves hangs on the device: a DeadlockError at the Cube's TPUSH (C2V: the
    other lane's free never comes - after the first push when that lane constructed the pipe,
    its constructor's credit; with one push, at the destructor's wait) or TPOP (V2C: its ready
    never comes), naming the flag and the lane, with the fix.  Under spec (seed 001's one-Vector
    TMPipe) the same kernel runs (but where a lane no peer constructs the pipe, and AIV1 as an
    A5 no-split lane: refused there as before)."""
    cube, aiv = one_lane_tmpipe(way, fifo_type, n, lane, other)
    args = dict(fifo=gm_buffer(4 * SLOT))
    if other != "constructs" and (platform, lane) != ("a5", 1):
        ptopipe.run(cube, aiv, args, platform=platform, protocol="spec")
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(cube, aiv, args, platform=platform, protocol="pto-isa")
    e = ei.value
    at = "teardown" if (way, other, n) == ("C2V", "constructs", 1) else f"cube {'push' if way == 'C2V' else 'pop'}"
    assert e.where.endswith(f"test_pto_isa_credits.py:{line_of(cube, at)}")
    silent, signal = f"AIV{1 - lane}", "free" if way == "C2V" else "ready"
    assert f"waits for {silent}'s {signal} signal on {way} pipe FlagID 0" in e.what
    assert "whatever its VecCubeRatio" in e.what
    if platform == "a5":
        flag = {("C2V", 1): "17 (FlagIDPlusOne + 16", ("V2C", 0): "0 (FlagID)", ("V2C", 1): "16 (FlagID + 16"}
        assert f"the Cube's flag id {flag[way, 1 - lane]}" in e.what
        assert "TPipe(..., peers=(0,)) with TILE_NO_SPLIT transfers" in e.fix
    else:
        assert "CV_CORES_SYNC" in e.what and "A2A3 has no one-lane pipe" in e.fix
    state = {"none": "runs no kernel", "returns": "returned without constructing the pipe",
             "constructs": "constructed the pipe at"}[other]
    assert f"and {silent} {state}" in e.what
    assert "VecCubeRatio.V2C1_VECS" in e.fix
    assert any(f.get("kind") == "tmpipe_one_lane" and f["core"] == silent for f in e.findings)


def test_the_lane_a_tmpipe_leaves_out_may_construct_it_but_not_use_it():
    """Constructing a one-lane TMPipe on the other lane is what the device does too (its flags
    take part); a TPOP there is refused, with the fix that serves the pipe from both lanes."""
    def cube(fifo):
        TMPipe(0, FIFOType.GM_FIFO, 2, 1, Tile(TileType.Acc, float32, T, T), Tile(TileType.Vec, float32, T, T),
               vc_ratio=VecCubeRatio.V1C1_VEC0)(fifo, RING_UB, 0)

    def aiv(fifo):
        pipe = TMPipe(0, FIFOType.GM_FIFO, 2, 1, Tile(TileType.Acc, float32, T, T),
                      Tile(TileType.Vec, float32, T, T), vc_ratio=VecCubeRatio.V1C1_VEC0)(fifo, RING_UB, 0)
        if get_subblockid() == 1:
            TPOP(pipe, Tile(TileType.Vec, float32, T, T))  # lane 1
    with pytest.raises(ptopipe.ConfigError) as ei:
        ptopipe.run(cube, aiv, dict(fifo=gm_buffer(4 * SLOT)), platform="a5", protocol="pto-isa")
    assert ei.value.where.endswith(f"test_pto_isa_credits.py:{line_of(aiv, 'lane 1')}")
    assert "whose VecCubeRatio V1C1_VEC0 gives its data to AIV0 alone" in ei.value.what
    assert "VecCubeRatio.V2C1_VECS" in ei.value.fix


@pytest.mark.parametrize("platform,fifo_type", [("a2a3", FIFOType.GM_FIFO), ("a5", FIFOType.GM_FIFO)])
def test_holding_two_tiles_of_a_gm_tmpipe_is_clean(platform, fifo_type, no_hang):
    """A GM-FIFO TMPipe frees inside TPOP (the tile is loaded into the staging first), so
    holding popped tiles does not hold slots: clean on both platforms."""
    n = 4
    cube, vec = tmpipe_stream(fifo_type, n, hold=2, tfree=_tfree(platform, fifo_type))
    args = _args(n)
    res = ptopipe.run(cube, vec, args, platform=platform, protocol="pto-isa")
    np.testing.assert_array_equal(res["out"], args["x"])


def tpipe_hold_all(direction, S, peers, tfree=True, sync_period=None):
    """The Cube pushes S tiles into a TPipe, its consumers pop all S before freeing any
    (``tfree=False``: no TFREE, for A5 GM rings whose TPOP already freed the slot)."""
    def cube(fifo):
        pipe = TPipe(0, direction, SLOT, S, peers=peers, sync_period=sync_period)(fifo, RING_UB, 0)
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        for i in range(S):
            TPUSH(pipe, acc, TileSplitAxis.TILE_NO_SPLIT if peers == (0,) else TileSplitAxis.TILE_UP_DOWN)
        return  # teardown

    def vec(fifo, out):
        pipe = TPipe(0, direction, SLOT, S, peers=peers, sync_period=sync_period)(fifo, RING_UB, 0)
        split = TileSplitAxis.TILE_NO_SPLIT if peers == (0,) else TileSplitAxis.TILE_UP_DOWN
        rows = T if peers == (0,) else T // 2
        held = []
        for i in range(S):
            t = Tile(TileType.Vec, float32, rows, T)
            TPOP(pipe, t, split)
            held.append(t)
        for t in held:
            if tfree:
                TFREE(pipe, split)
    return cube, vec


@pytest.mark.parametrize("platform,direction", [("a2a3", DIR_C2V), ("a5", DIR_C2V), ("a5", DIR_C2V_GM)])
@pytest.mark.parametrize("peers", [(0,), (0, 1)])
@pytest.mark.parametrize("S", [1, 2, 4, 8])
def test_tpipe_has_no_constructor_credit_and_fills_slotnum_slots(platform, direction, peers, S, no_hang):
    """A TPipe's start-up capacity is the shouldWaitFree window: SlotNum pushes without a wait
    and no constructor SET (a constructor credit would show as one more free sent than the
    releases notify, and would be waited for by the teardown).  (On A5's ring in UB the TFREEs
    all come after the last TPOP and test its index - pto-isa's free index - which ends a
    SyncPeriod, so with the default one each would send a credit: the pipe there takes
    sync_period=1, where every release sends one and the count is the releases'.)"""
    local = (platform, direction) == ("a5", DIR_C2V)
    cube, vec = tpipe_hold_all(direction, S, peers, tfree=not (platform == "a5" and direction is DIR_C2V_GM),
                               sync_period=1 if local else None)
    aiv = (vec, vec) if peers == (0, 1) else (vec, None)
    res = ptopipe.run(cube, aiv, dict(fifo=gm_buffer(8 * SLOT), out=np.zeros(4, np.float32)),
                      platform=platform, protocol="pto-isa")
    (ch,) = res.cluster.state.channels.values()
    assert ch.model is (PTO_ISA_A5 if platform == "a5" else PTO_ISA)
    assert (ch.startup_credits, ch.wait_every) == (0, False)
    sp = ch.sync_period
    for r in (r for r in res.summary.ledger if r["signal"] == "free"):
        assert r["sent"] == S // sp                       # release notifications only
        assert r["consumed"] == 0                         # no push waited (the window)
        assert r["drained"] == pto_isa_drain(S, sp, S) == S // sp and r["left"] == 0


# --- pto-isa A5 at its newest stored version: constructor credits of GM / split TPipes ----------
# Not the default model (docs/protocols.md): protocol="pto-isa-head" runs PTO_ISA_A5_HEAD on
# A5, what the newest A5 TPush.hpp does with correct kernels.
def tpipe_stream(direction, S, n, peers):
    """The Cube pushes ``n`` tiles into a TPipe of SlotNum ``S``; each consumer pops and frees
    every tile as it comes (no TFREE on an A5 GM ring, whose TPOP frees)."""
    split = TileSplitAxis.TILE_NO_SPLIT if peers == (0,) else TileSplitAxis.TILE_UP_DOWN
    rows = T if peers == (0,) else T // 2
    in_gm = direction is DIR_C2V_GM

    def cube(fifo):
        pipe = TPipe(0, direction, SLOT, S, peers=peers)(fifo, RING_UB, 0)
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        for i in range(n):
            TPUSH(pipe, acc, split)  # push
        return  # teardown

    def vec(fifo):
        pipe = TPipe(0, direction, SLOT, S, peers=peers)(fifo, RING_UB, 0)
        t = Tile(TileType.Vec, float32, rows, T)
        for i in range(n):
            TPOP(pipe, t, split)
            if not in_gm:
                TFREE(pipe, split)
    return cube, ((vec, vec) if len(peers) == 2 else (vec, None))


KINDS = [(DIR_C2V, (0,), "local no-split"), (DIR_C2V, (0, 1), "local split"),
         (DIR_C2V_GM, (0,), "GM no-split"), (DIR_C2V_GM, (0, 1), "GM split")]


@pytest.mark.parametrize("direction,peers,kind", KINDS)
@pytest.mark.parametrize("S", [2, 4])
def test_a5_head_constructor_credit_per_pipe_kind(direction, peers, kind, S, no_hang):
    """HEAD: a local no-split TPipe has the window only (clean, balanced); a GM-backed or split
    TPipe gets SyncPeriod constructor credits on top of the window, so its producer passes the
    wait of push #SlotNum before any free - an overwrite of slot 0 at that TPUSH.  The same
    correct kernel is clean under the default A5 model."""
    cube, aiv = tpipe_stream(direction, S, 2 * S, peers)
    args = dict(fifo=gm_buffer(8 * SLOT))
    res = ptopipe.run(cube, aiv, args, platform="a5", protocol="pto-isa")     # the default: clean
    (ch,) = res.cluster.state.channels.values()
    assert ch.startup_credits == 0 and ch.model is _protocol.PTO_ISA_A5
    head = _protocol.PTO_ISA_A5_HEAD
    if kind == "local no-split":
        res = ptopipe.run(cube, aiv, args, platform="a5", protocol="pto-isa-head")
        (ch,) = res.cluster.state.channels.values()
        assert ch.model is head and ch.startup_credits == 0
        (free,) = [r for r in res.summary.ledger if r["signal"] == "free"]
        assert free["left"] == 0 and free["sent"] == 2 * S // ch.sync_period
        return
    with pytest.raises(ptopipe.ProtocolError) as ei:
        ptopipe.run(cube, aiv, args, platform="a5", protocol="pto-isa-head")
    assert int(ei.value.where.rpartition(":")[2]) == line_of(cube, "push")
    assert "slot 0" in ei.value.what and "constructor posts SyncPeriod" in ei.value.fix


@pytest.mark.parametrize("direction,peers", [(DIR_C2V, (0, 1)), (DIR_C2V_GM, (0,))])
def test_a5_head_fixed_drain_leaves_the_notifications(direction, peers, no_hang):
    """HEAD's GM/split destructor waits SyncPeriod times - the constructor's credits - and
    leaves the consumer's release notifications on the flag: SlotNum 4 (SyncPeriod 2), 4
    pushes that never wait, 2 notifications left at exit (a stale credit for the next launch)."""
    S = 4
    cube, aiv = tpipe_stream(direction, S, S, peers)
    with pytest.raises(LeakError) as ei:
        ptopipe.run(cube, aiv, dict(fifo=gm_buffer(8 * SLOT)), platform="a5", protocol="pto-isa-head")
    assert int(ei.value.where.rpartition(":")[2]) == line_of(cube, "teardown")
    assert "keeps 2 credits after the teardown drain (sent 4 / consumed 0 / drained 2)" in str(ei.value)


@pytest.mark.parametrize("depth", [1, 2, 4])
@pytest.mark.parametrize("split", ["ud", "lr"])
def test_a5_dir_both_run_ahead_needs_no_constructor_credit(depth, split, no_hang):
    """s4 with the Vector cores pushing SlotNum tiles before their first pop: clean under the
    default A5 model (the window lets SlotNum pushes pass); with HEAD's constructor credits of
    split pipes the V2C producer passes its wait at push #SlotNum and overwrites slot 0."""
    import linecache
    from test_ptoisa_platforms import _s4
    sc = _s4(depth).SCENARIO
    args = sc.make_args(np.random.default_rng(1), **sc.params(split))
    res = ptopipe.run(sc.aic, sc.aiv, args, platform="a5", protocol="pto-isa")
    np.testing.assert_array_equal(res["out"], sc.golden(args)["out"])
    args = sc.make_args(np.random.default_rng(1), **sc.params(split))
    with pytest.raises(ptopipe.ProtocolError) as ei:
        ptopipe.run(sc.aic, sc.aiv, args, platform="a5", protocol="pto-isa-head")
    path, _, line = ei.value.where.rpartition(":")
    assert path.endswith("s4_both_ways.py") and "TPUSH(" in linecache.getline(path, int(line))
    assert "slot 0 of DIR_BOTH pipe FlagID 0 (V2C way" in ei.value.what and "constructor posts SyncPeriod" in ei.value.fix


def test_pto_isa_head_from_the_cli(capsys):
    """``--protocol pto-isa-head`` selects the newest A5 credits: s4's default variant, clean
    under pto-isa on A5, ends with the constructor credits' surplus on its flags there, and
    is the same as pto-isa on A2A3."""
    from ptopipe.cli import main
    s4 = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "scenarios", "s4_both_ways.py")
    assert main(["check", s4, "--platform", "a5", "--protocol", "pto-isa", "--schedules", "1"]) == 0
    assert main(["check", s4, "--platform", "a2a3", "--protocol", "pto-isa-head", "--schedules", "1"]) == 0
    capsys.readouterr()
    assert main(["check", s4, "--platform", "a5", "--protocol", "pto-isa-head", "--schedules", "1"]) == 1
    out = capsys.readouterr()
    assert "LeakError" in out.out and "start-up window both count" in out.err, out
