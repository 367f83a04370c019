"""Named pto-isa versions (``protocol="pto-isa@<commit>"``, ``ptopipe.protocol.versions``) and
pto-isa's CPU simulator (``protocol="pto-isa-cpusim"``): for each library bug a kernel that is
clean under the fixed library and fails under the release that has the bug - the error class,
the kernel line and the sentence naming the bug and its fix; and the simulator's own stalls,
blamed on the simulator.
"""
import os

import numpy as np
import pytest

import ptopipe
from ptopipe import DeadlockError
from ptopipe.errors import ConfigError, MemoryConflictError, ProtocolError
from ptopipe.isa import *
from ptopipe.protocol import versions
from ptopipe.protocol.model import model_for

from markers import line_of

T = 16
SLOT = T * T * 4
RING_UB = 0x8000
ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def stream(direction, S, n, peers=(0,)):
    """The Cube pushes ``n`` tiles into a TPipe of SlotNum ``S``; AIV0 pops and frees each (the
    Cube runs first and pushes until a push waits)."""
    def cube(fifo):
        pipe = TPipe(0, direction, SLOT, S, peers=peers)(fifo, RING_UB, 0)
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        for i in range(n):
            TPUSH(pipe, acc, TILE_NO_SPLIT)  # push
        return  # teardown

    def vec(fifo):
        pipe = TPipe(0, direction, SLOT, S, peers=peers)(fifo, RING_UB, 0)
        t = Tile(TileType.Vec, float32, T, T)
        for i in range(n):
            TPOP(pipe, t, TILE_NO_SPLIT)
            TFREE(pipe, TILE_NO_SPLIT)
    return cube, (vec, None)


def _args():
    return dict(fifo=gm_buffer(8 * SLOT))


def test_a_commit_resolves_to_the_release_and_its_bugs():
    assert versions.parse("pto-isa@8d74") == (Protocol.PTO_ISA, versions.RELEASES[1].commit)
    assert versions.name("pto-isa@8d74fb3808e9") == "pto-isa@8d74fb38"
    assert versions.parse("pto-isa-cpusim") == (Protocol.PTO_ISA_CPUSIM, None)
    m = model_for("pto-isa", "a2a3", versions.release("8d74fb38").commit)
    assert {b.key for b in m.bugs} == {"a2a3-ctor-credits", "a2a3-fixed-drain", "a2a3-both-alias",
                                       "a2a3-stage-stride"}
    assert m.name == "pto-isa@8d74fb38" and m.fixed_drain and m.ctor_credit_pipes and m.both_rings_alias
    m = model_for("pto-isa", "a2a3", versions.release("0a15e15c").commit)
    assert m.bugs == () and m.name == "pto-isa@0a15e15c"
    assert [b.key for b in model_for("pto-isa", "a5", versions.release("1d87").commit).bugs] == \
        ["a5-gm-stage-stride"]
    assert {b.key for b in model_for("pto-isa", "a5", versions.release("3186").commit).bugs} == \
        {"a5-ctor-credits-local", "a5-ctor-credits", "a5-gm-stage-stride"}
    assert {b.key for b in model_for("pto-isa", "a5", versions.release("0956").commit).bugs} == \
        {"a5-ctor-credits", "a5-gm-stage-stride"}


@pytest.mark.parametrize("text", ["pto-isa@deadbeef", "pto-isa@8", "spec@8d74fb38", "pto-isa-old"])
def test_an_unknown_version_lists_the_known_ones(text):
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(*stream(DIR_C2V, 2, 1), _args(), protocol=text)
    msg = str(ei.value)
    assert text.partition("@")[0] in msg
    if text.startswith("pto-isa@"):
        assert all(r.short in msg for r in versions.RELEASES)


def test_fixed_syncperiod_drain_hangs_in_the_destructor(no_hang):
    """pto-isa on A2A3 from 8d74fb38 until 0a15e15c: ~TPipe waits SyncPeriod times.  SlotNum 4
    (SyncPeriod 2), one tile: no release notification is pending, the fixed drain waits for 2 -
    the destructor hangs (pto-isa #248).  Clean under the fixed library and at 0a15e15c."""
    cube, aiv = stream(DIR_C2V, 4, 1)
    for ok in ("pto-isa", "pto-isa@0a15e15c"):
        ptopipe.run(cube, aiv, _args(), protocol=ok)
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(cube, aiv, _args(), protocol="pto-isa@d2b30a84")
    assert int(ei.value.where.rpartition(":")[2]) == line_of(cube, "teardown")
    msg = str(ei.value)
    assert "a fixed SyncPeriod = 2 waits" in ei.value.what
    assert ("pto-isa before 0a15e15c drains a fixed SyncPeriod in ~TPipe instead of the pending credits" in msg
            and "fixed by 0a15e15c (fix(a2a3): harden pending-credit drain across dispatches)" in msg)
    assert ei.value.fix.startswith("upgrade pto-isa to 0a15e15c or later")


@pytest.mark.parametrize("platform,version,bug", [("a2a3", "8d74fb38", "fixed by d2b30a84"),
                                                  ("a5", "3186c381", "fixed by 0956aa8c")])
def test_constructor_credits_counted_twice_overrun_the_ring(platform, version, bug, no_hang):
    """The TPipe constructor's SyncPeriod credits on top of the shouldWaitFree window (A2A3 from
    8d74fb38 until d2b30a84; A5 local no-split pipes from 8d74fb38 until PR #274): SlotNum 2,
    the Cube pushes 3 tiles before AIV0 pops - push #2 passes its wait on a constructor credit
    and overwrites slot 0.  Clean under the fixed library."""
    cube, aiv = stream(DIR_C2V, 2, 3)
    ptopipe.run(cube, aiv, _args(), platform=platform, protocol="pto-isa")
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, aiv, _args(), platform=platform, protocol=f"pto-isa@{version}")
    assert int(ei.value.where.rpartition(":")[2]) == line_of(cube, "push")
    assert "slot 0" in ei.value.what
    assert "credits counted twice" in ei.value.fix and bug in ei.value.fix


def test_a5_local_nosplit_credits_are_fixed_by_pr_274(no_hang):
    cube, aiv = stream(DIR_C2V, 2, 3)
    ptopipe.run(cube, aiv, _args(), platform="a5", protocol="pto-isa@0956aa8c")


def both_ping_pong(n=2):
    """A DIR_BOTH pipe: each Vector core pushes its half of a tile (V2C), the Cube pops it and
    pushes it back (C2V)."""
    def cube(fifo):
        pipe = TPipe(0, DIR_BOTH, SLOT, 2)(fifo, RING_UB, 0x10000)  # bind
        x = Tile(TileType.Mat, float32, T, T)
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        for i in range(n):
            TPOP(pipe, x, TILE_UP_DOWN)
            TFREE(pipe, TILE_UP_DOWN)
            TPUSH(pipe, acc, TILE_UP_DOWN)

    def vec(fifo):
        pipe = TPipe(0, DIR_BOTH, SLOT, 2)(fifo, RING_UB, 0x10000)
        v = Tile(TileType.Vec, float32, T // 2, T, addr=0)
        y = Tile(TileType.Vec, float32, T // 2, T)
        for i in range(n):
            TPUSH(pipe, v, TILE_UP_DOWN)
            TPOP(pipe, y, TILE_UP_DOWN)
            TFREE(pipe, TILE_UP_DOWN)
    return cube, (vec, vec)


def test_dir_both_rings_alias_before_d2b30a84(no_hang):
    """pto-isa on A2A3 before d2b30a84 puts both rings of a DIR_BOTH TPipe at GM_SLOT_BUFFER: a
    MemoryConflictError at the binding, naming the bug and the fix."""
    cube, aiv = both_ping_pong()
    for ok in ("pto-isa", "pto-isa@0a15e15c"):
        ptopipe.run(cube, aiv, _args(), protocol=ok)
    with pytest.raises(MemoryConflictError) as ei:
        ptopipe.run(cube, aiv, _args(), protocol="pto-isa@1d873362")
    assert int(ei.value.where.rpartition(":")[2]) == line_of(cube, "bind")
    msg = str(ei.value)
    assert "places both rings of this DIR_BOTH pipe at GM_SLOT_BUFFER" in ei.value.what
    assert ("pto-isa before d2b30a84 places both rings of a DIR_BOTH TPipe at GM_SLOT_BUFFER" in msg
            and "fixed by d2b30a84 (fix(a2a3): give the V2C ring its own base in a bidirectional TPipe)" in msg)


def test_version_from_the_cli(capsys):
    """``--protocol pto-isa@<commit>``: the canonical name in the summary; an unknown commit is a
    usage error listing the known versions."""
    from ptopipe.cli import main
    s2 = os.path.join(ROOT, "examples", "scenarios", "s2_cv_nosplit.py")
    assert main(["run", s2, "--protocol", "pto-isa@0a15e15c627", "--variant", "f32_d2_m16_n32"]) == 0
    assert "protocol pto-isa@0a15e15c" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["run", s2, "--protocol", "pto-isa@0123abcd"])
    err = capsys.readouterr().err
    assert "unknown pto-isa version '0123abcd'" in err and "8d74fb38" in err


# --- pto-isa's CPU simulator ------------------------------------------------------------------

def _s2_args(M, depth):
    from ptopipe.driver.loader import load_module
    sc = load_module(os.path.join(ROOT, "examples", "scenarios", "s2_cv_nosplit.py")).SCENARIO
    return sc, sc.make_args(np.random.default_rng(0), M=M, N=32, depth=depth)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_cpusim_nosplit_c2v_waits_for_the_second_lane(platform, no_hang):
    """S2 (a one-lane TILE_NO_SPLIT C2V pipe, AIV1 runs nothing): clean under pto-isa; under
    pto-isa's CPU simulator the slot needs AIV1's free too, so push #SlotNum stalls - blamed on
    the simulator."""
    sc, args = _s2_args(48, 2)
    res = ptopipe.run(sc.aic, sc.aiv, args, platform=platform, protocol="pto-isa")
    np.testing.assert_allclose(res["out"], sc.golden(args)["out"])
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(sc.aic, sc.aiv, _s2_args(48, 2)[1], platform=platform, protocol="pto-isa-cpusim")
    import linecache
    path, _, line = ei.value.where.rpartition(":")
    assert path.endswith("s2_cv_nosplit.py") and "TPUSH(pipe, acc" in linecache.getline(path, int(line))
    assert ei.value.what.startswith("deadlock: pto-isa's CPU simulator causes this stall, not the kernel")
    assert "AIC's push #2" in ei.value.what and "sub-block dim of 1" in ei.value.fix


def test_cpusim_slots_start_free_and_every_tfree_releases(no_hang):
    """The simulator's protocol: no SyncPeriod, every slot free at the start, every push waits
    for its slot, every TFREE releases it; a tile TPOP from a GM ring frees nothing."""
    cube, aiv = stream(DIR_C2V, 4, 6, peers=(0, 1))
    aiv = (aiv[0], aiv[0])
    res = ptopipe.run(cube, aiv, _args(), protocol="pto-isa-cpusim")
    (ch,) = res.cluster.state.channels.values()
    assert (ch.sync_period, ch.startup_credits, ch.wait_every, ch.pop_frees, ch.lost_lanes) == (1, 4, True, False, ())
    assert res.summary.protocol == "pto-isa-cpusim"
    for r in (r for r in res.summary.ledger if r["signal"] == "free"):
        assert (r["sent"], r["consumed"], r["drained"], r["left"]) == (10, 6, 4, 0)


def _s6():
    from ptopipe.driver.loader import load_module
    return load_module(os.path.join(ROOT, "examples", "scenarios", "s6_stream_both.py")).SCENARIO


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_cpusim_dir_both_shares_one_ring(platform, no_hang):
    """S6 (DIR_BOTH, LEFT_RIGHT, lag 2): clean under pto-isa; pto-isa's CPU simulator keeps one
    ring of SlotNum slots for both ways and a split V2C lane writes its cursor slot without
    waiting for it to be free - in the run's order, over a V2C tile the Cube has not consumed
    yet (its TFREE moved the C2V consumer cursor, as the simulator's does), which is lost: the
    cores' TPOPs wait forever (the real simulator at 3186c381 hangs there: 5 of 5 runs on
    A2A3, 4 of 5 on A5).  Blamed on the simulator, at the stuck TPOP."""
    import linecache
    sc = _s6()
    res, want = sc.run("tpipe", platform, "pto-isa")
    np.testing.assert_allclose(res["out"], want["out"])
    with pytest.raises(DeadlockError) as ei:
        sc.run("tpipe", platform, "pto-isa-cpusim")
    path, _, line = ei.value.where.rpartition(":")
    assert path.endswith("s6_stream_both.py") and "TPOP(pipe, y" in linecache.getline(path, int(line))
    what = ei.value.what
    assert what.startswith("pto-isa's CPU simulator hangs on DIR_BOTH pipe FlagID 0, a stall the device does not have")
    assert "AIV0's split V2C TPUSH at " in what and "which still holds V2C tile #3" in what
    assert ei.value.fix.startswith("the simulator, not the kernel, causes this")


def test_cpusim_dir_both_replay_lets_a_ping_pong_through(no_hang):
    """One tile in flight at a time: the simulator's shared ring never holds a tile of the
    other way where a producer writes - the replay runs to the end, the run is clean."""
    cube, aiv = both_ping_pong(6)
    res = ptopipe.run(cube, aiv, _args(), platform="a5", protocol="pto-isa-cpusim")
    ring = next(iter(res.cluster.state.channels.values())).sim_ring
    assert ring is not None and not any(ring.queues.values()) and ring.pushed == {"C2V": 6, "V2C": 6}


def held_pairs(n: int, hold: int):
    """The Cube pushes ``n`` acc tiles split TILE_UP_DOWN through 4 slots; each Vector lane pops
    ``hold`` tiles, holds them all, then frees them (``hold`` 1: one at a time)."""
    def cube(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB, 0)
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        for i in range(n):
            TPUSH(pipe, acc, TILE_UP_DOWN)

    def vec(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB, 0)
        tiles = [Tile(TileType.Vec, float32, T // 2, T) for _ in range(hold)]
        for i in range(n // hold):
            for t in tiles:
                TPOP(pipe, t, TILE_UP_DOWN)  # pop
            for t in tiles:
                TFREE(pipe, TILE_UP_DOWN)  # free
    return cube, vec


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_cpusim_frees_the_latest_pop_so_two_held_tiles_leak_a_slot(platform, no_hang):
    """pto-isa's CPU simulator's TFREE releases the slot of the core's latest TPOP
    (``Consumer::free`` frees ``tileIndex``): a lane that holds two popped tiles releases the
    second slot twice and the first never, and the Cube's push waits for that slot forever (the
    real simulator hangs in every run).  The device frees in pop order: on A2A3 (a GM ring, the
    TPOP frees) clean under pto-isa; on A5 (a ring in UB, SyncPeriod 2) the device's TFREE tests
    the latest TPOP's index (``shouldNotifyFree(cons.tileIndex - 1)``), so both TFREEs of a pair
    send a credit and a push overwrites a held slot there too - the simulator's diagnosis says
    so.  One tile held at a time is clean in the simulator too."""
    cube, vec = held_pairs(8, 2)
    if platform == "a2a3":
        ptopipe.run(cube, vec, _args(), platform=platform, protocol="pto-isa")
    else:
        with pytest.raises(ProtocolError, match="reused before freed"):
            ptopipe.run(cube, vec, _args(), platform=platform, protocol="pto-isa")
    ptopipe.run(*held_pairs(8, 1), _args(), platform=platform, protocol="pto-isa-cpusim")
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(cube, vec, _args(), platform=platform, protocol="pto-isa-cpusim")
    what = ei.value.what
    assert what.startswith("pto-isa's CPU simulator hangs on pipe FlagID 0, a stall the device does not have: "
                           f"AIV0's TFREE at ")
    assert f":{line_of(vec, 'free')} releases slot 1 again" in what and "never releases slot 0" in what
    assert ei.value.where.endswith(f":{line_of(vec, 'pop')}")     # a lane waits for the next tile
    assert "TFREE each popped tile before the next TPOP" in ei.value.fix
    assert ("the kernel is wrong on the device too" in what) == (platform == "a5"), what
    assert ("the kernel needs no change for the device" in ei.value.fix) == (platform == "a2a3"), ei.value.fix


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_cpusim_a_lane_one_pop_ahead_never_frees_its_first_slot(platform, no_hang):
    """A lane that pops one tile ahead (pop, then pop / free each step, then free): every
    simulator TFREE releases the latest pop, so the first slot is never released - no slot is
    freed twice, and the stall still names the slot it keeps.  (On A5 the device is wrong too:
    each TFREE tests the next tile's index, pto-isa's free index, and sends its credit a release
    early - an overwrite under pto-isa.)"""
    def cube(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB, 0)
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        for i in range(8):
            TPUSH(pipe, acc, TILE_UP_DOWN)

    def vec(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, RING_UB, 0)
        t = [Tile(TileType.Vec, float32, T // 2, T) for _ in range(2)]
        TPOP(pipe, t[0], TILE_UP_DOWN)
        for i in range(7):
            TPOP(pipe, t[(i + 1) % 2], TILE_UP_DOWN)
            TFREE(pipe, TILE_UP_DOWN)
        TFREE(pipe, TILE_UP_DOWN)
    if platform == "a2a3":
        ptopipe.run(cube, vec, _args(), platform=platform, protocol="pto-isa")
    else:
        with pytest.raises(ProtocolError, match="reused before freed"):
            ptopipe.run(cube, vec, _args(), platform=platform, protocol="pto-isa")
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(cube, vec, _args(), platform=platform, protocol="pto-isa-cpusim")
    assert ("a stall the device does not have: the simulator's TFREE releases the slot of the core's latest TPOP"
            in ei.value.what and "never releases slot 0 " in ei.value.what)


def test_cpusim_runs_what_is_compiled_for_the_device(no_hang):
    """A DSL kernel run under pto-isa-cpusim is compiled for pto-isa's device headers (on A5 a
    TILE_NO_SPLIT function has one lane, AIV0 - what ``compile --emit cpp`` gives the
    simulator), so S2's 10 tiles through 8 slots stall there as on the real simulator."""
    from ptopipe.driver.loader import load_module
    sc = load_module(os.path.join(ROOT, "examples", "mixed", "s2_cv_nosplit.py")).SCENARIO
    with pytest.raises(DeadlockError) as ei:
        sc.run("m160_default_slots", "a5", "pto-isa-cpusim")
    assert "pto-isa's CPU simulator causes this stall" in ei.value.what and "push #8" in ei.value.what


def test_static_check_takes_a_version(capsys):
    """``check --static`` with a named version or the simulator verifies against the pto-isa
    model the kernels are compiled for."""
    from ptopipe.cli import main
    s4 = os.path.join(ROOT, "examples", "dsl", "s4_both_ways.py")
    for proto in ("pto-isa@8d74", "pto-isa-cpusim"):
        assert main(["check", s4, "--static", "--protocol", proto]) == 0
    assert "found no cross-core protocol error" in capsys.readouterr().out


def mixed_sizes(direction, tfree=True):
    """The Cube pushes a 16x16 tile, then an 8x16 one, through one ring; AIV0 pops both into
    tiles without an address (the staging ring places them), then reads the first (``tfree``:
    and frees both - not on an A5 GM ring, whose TPOP frees)."""
    def cube(fifo):
        pipe = TPipe(0, direction, SLOT, 4, peers=(0,))(fifo, RING_UB, 0)
        TPUSH(pipe, Tile(TileType.Acc, float32, T, T, addr=0), TILE_NO_SPLIT)
        TPUSH(pipe, Tile(TileType.Acc, float32, T // 2, T, addr=0x1000), TILE_NO_SPLIT)

    def vec(fifo, out):
        pipe = TPipe(0, direction, SLOT, 4, peers=(0,))(fifo, RING_UB, 0)
        big, small = Tile(TileType.Vec, float32, T, T), Tile(TileType.Vec, float32, T // 2, T)
        TPOP(pipe, big, TILE_NO_SPLIT)
        TPOP(pipe, small, TILE_NO_SPLIT)
        TSTORE(GlobalTensor(out.data(), (T, T)), big)  # read
        if tfree:
            TFREE(pipe, TILE_NO_SPLIT)
            TFREE(pipe, TILE_NO_SPLIT)
    return cube, (vec, None)


@pytest.mark.parametrize("platform,direction,old,ok,fixed", [
    ("a2a3", DIR_C2V, "d2b30a84", "0a15e15c", "ab903c91"), ("a5", DIR_C2V_GM, "3186c381", None, None)])
def test_staging_stride_by_tile_size(platform, direction, old, ok, fixed, no_hang):
    """pto-isa A2A3 before ab903c91 (and A5 *_GM pipes) stage a popped tile at base + (i %
    LocalSlotNum) * its own size: the 8x16 tile popped second lands inside the 16x16 one's
    copy, so reading that is a use after free naming the bug.  Clean under the fixed library."""
    cube, aiv = mixed_sizes(direction, tfree=platform == "a2a3")
    args = dict(fifo=gm_buffer(4 * SLOT), out=np.zeros((T, T), np.float32))
    for clean in ("pto-isa",) + ((f"pto-isa@{ok}",) if ok else ()):
        ptopipe.run(cube, aiv, dict(args), platform=platform, protocol=clean)
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, aiv, dict(args), platform=platform, protocol=f"pto-isa@{old}")
    assert int(ei.value.where.rpartition(":")[2]) == line_of(aiv[0], "read")
    assert "overwritten by the TPOP at" in ei.value.what
    assert "strides the consumer's local staging ring" in str(ei.value)
    assert (f"fixed by {fixed}" if fixed else "no pto-isa release ptopipe knows fixes it") in str(ei.value)


def split_store_then_free():
    """Both Vector lanes pop their half of a C2V tile from the UB ring and TSTORE it right before
    the TFREE (no set_flag / wait_flag between them)."""
    def cube(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, RING_UB, 0)
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        for i in range(4):
            TPUSH(pipe, acc, TILE_UP_DOWN)

    def vec(fifo, out):
        pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, RING_UB, 0)
        t = Tile(TileType.Vec, float32, T // 2, T)
        for i in range(4):
            TPOP(pipe, t, TILE_UP_DOWN)
            TSTORE(GlobalTensor(out.data() + (2 * i + get_subblockid()) * T * T // 2, (T // 2, T)), t)
            TFREE(pipe, TILE_UP_DOWN)
    return cube, (vec, vec)


def test_cpusim_free_follows_every_read(no_hang):
    """The simulator runs each instruction to completion: a TFREE right after a TSTORE of the
    popped UB slot is clean there, where the device's free (a flag SET on PIPE_V) races the
    store (pto-isa on A5)."""
    from ptopipe.errors import DataRaceError
    from ptopipe.isa.explore import explore
    args = dict(fifo=gm_buffer(4 * SLOT), out=np.zeros((4 * T, T), np.float32))
    ex = explore(split_store_then_free(), schedules=2, platform="a5", protocol="pto-isa", args=args)
    assert isinstance(ex.first[1], DataRaceError), ex.first
    ex = explore(split_store_then_free(), schedules=2, platform="a5", protocol="pto-isa-cpusim", args=args)
    assert ex.ok, ex.first


def test_a_commit_between_releases_takes_the_older_release():
    """A commit that is not a release resolves to the newest release it contains (in a pto-isa
    repository: ``versions.release``'s ``ancestors``); one that contains none is older than
    every modelled release."""
    rels = versions.RELEASES
    history = {"c0ffee12": rels[:4], "abad1dea": []}     # after 0a15e15c / before 1d873362
    assert versions.release("c0ffee12", history.get) is rels[3]
    with pytest.raises(ConfigError) as ei:
        versions.release("abad1dea", history.get)
    assert "older than every release" in ei.value.what
    with pytest.raises(ConfigError) as ei:
        versions.release("deadbeef", history.get)
    assert "not one of them" in ei.value.what and "PTO_ISA_GIT" in ei.value.fix


@pytest.mark.skipif(not os.path.isdir(os.environ.get("PTO_ISA_GIT", "/nonexistent")),
                    reason="PTO_ISA_GIT (a pto-isa git repository) is not set")
def test_a_commit_of_a_pto_isa_repository():
    """92492c9d (2026-07-27, between 8d74fb38 and d2b30a84 on pto-isa's main line) has
    8d74fb38's bugs."""
    assert versions.release("92492c9d").short == "8d74fb38"
    assert versions.name("pto-isa@92492c9d") == "pto-isa@8d74fb38"


def test_cpusim_replay_stops_at_a_nosplit_c2v_tile_for_two_lanes(no_hang):
    """A TILE_NO_SPLIT C2V tile popped by both Vector lanes of a DIR_BOTH pipe: what the
    simulator does depends on the pipe's IsNoSplit, unknown to the run - no stall is claimed."""
    def cube(fifo):
        pipe = TPipe(0, DIR_BOTH, SLOT, 2)(fifo, RING_UB, 0x10000)
        x = Tile(TileType.Mat, float32, T, T)
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        for i in range(4):
            TPUSH(pipe, acc, TILE_NO_SPLIT)
            TPOP(pipe, x, TILE_UP_DOWN)
            TFREE(pipe, TILE_UP_DOWN)

    def vec(fifo):
        pipe = TPipe(0, DIR_BOTH, SLOT, 2)(fifo, RING_UB, 0x10000)
        v = Tile(TileType.Vec, float32, T // 2, T, addr=0)
        y = Tile(TileType.Vec, float32, T, T)
        for i in range(4):
            TPOP(pipe, y, TILE_NO_SPLIT)
            TFREE(pipe, TILE_NO_SPLIT)
            TPUSH(pipe, v, TILE_UP_DOWN)
    res = ptopipe.run(cube, (vec, vec), _args(), protocol="pto-isa-cpusim")
    assert next(iter(res.cluster.state.channels.values())).sim_ring.off
