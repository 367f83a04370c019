"""Several launches on one cluster (``run(..., launches=K)``) and the producer's teardown
(pto-isa's ``~TPipe()`` drain of pending free credits), on both platforms and protocols.

One kernel family drives most tests: the Cube pushes ``n`` tiles into a C2V ring of
SlotNum ``S`` (AIV0 the only consumer), AIV0 pops and frees them.  Its modes:

``correct``        nothing wrong;
``free_off_last``  AIV0 turns its free notification off before the last pop
                   (``setFreeStatus(False)``): one free SET fewer than the protocol counts;
``skip_wait``      the Cube skips the free-slot wait of its last push
                   (``setAllocateStatus(False)``), ordered instead by an acknowledgement
                   AIV0 sends on a second (V2C) pipe after freeing tile n-2 - race-free,
                   but the free credit that wait would have taken stays on the flag;
``short``          AIV0 pops one tile fewer than pushed.
"""
import dataclasses

import numpy as np
import pytest

import ptopipe
from ptopipe import ConfigError, DeadlockError, MismatchError, ProtocolError
from ptopipe.errors import LeakError
from ptopipe.isa import *
from ptopipe.protocol.model import PTO_ISA, SPEC, pto_isa_drain
from ptopipe.isa.launch import compare_launches
from ptopipe.driver.loader import load_scenarios

from markers import line_of

T = 16
SLOT = T * T * 4
RING_UB = 0x8000          # A5: the C2V ring in AIV0's UB; A2A3: AIV0's staging of popped tiles
ACK_L1 = 0x40000          # A5: the acknowledgement ring in the Cube's L1
PLATFORMS = ["a2a3", "a5"]
PROTOCOLS = ["spec", "pto-isa"]


def family(S, n, mode, protocol):
    ack_id = 2 if protocol == "pto-isa" else S      # spec: after the C2V way's S per-tag flags

    def pipes(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, S, peers=(0,))(fifo, RING_UB, 0)
        ack = (TPipe(ack_id, DIR_V2C, SLOT, 1, peers=(0,))(fifo.data() + 8 * SLOT, 0, ACK_L1)
               if mode == "skip_wait" else None)
        return pipe, ack

    def cube(fifo):
        pipe, ack = pipes(fifo)
        acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
        acc.array[...] = 0                          # (what is pushed: set by the test, not computed)
        got = Tile(TileType.Mat, float32, T, T)
        for i in range(n):
            if ack is not None and i == n - 1:
                TPOP(ack, got)                       # AIV0 has freed tile n-2
                TFREE(ack)
                pipe.prod.setAllocateStatus(False)   # so the last push skips its wait
            TPUSH(pipe, acc)  # push
        return  # teardown

    def vector(fifo):
        pipe, ack = pipes(fifo)
        t = Tile(TileType.Vec, float32, T, T)
        note = Tile(TileType.Vec, float32, T, T, addr=0x0)
        for i in range(n - 1 if mode == "short" else n):
            if mode == "free_off_last" and i == n - 1:
                pipe.cons.setFreeStatus(False)
            TPOP(pipe, t)  # pop
            TFREE(pipe)
            if ack is not None and i == n - 2:
                TPUSH(ack, note)
    return cube, vector


def _args():
    return dict(fifo=gm_buffer(16 * SLOT))


def _where_line(err):
    return int(err.where.rpartition(":")[2])


def _sync_period(protocol, S):
    return (SPEC if protocol == "spec" else PTO_ISA).sync_period(TPipe(0, DIR_C2V, SLOT, S))


def expected(protocol, S, n, mode):
    """The outcome of a family run, from the protocol model's notify/wait rules (not from
    the drain under test).  spec: every release sends a free and every push waits.
    pto-isa: release k notifies iff (k + 1) % SyncPeriod == 0 (SlotNum 1: always), push i
    waits iff i >= SlotNum and i % SyncPeriod == 0 (SlotNum 1: i > 0).  The teardown
    awaits exactly what those rules leave pending after n pushes, so:
    - a withheld last free hangs the drain iff release n-1 would have notified;
    - a skipped last wait leaves its credit (a leak) iff push n-1 would have waited;
    - whatever the mode, if push #SlotNum does not wait (SlotNum 5, 7 under SyncPeriod
      SlotNum // 2) it overwrites slot 0 before the consumer (not yet run) popped it (M8)."""
    import types
    model = SPEC if protocol == "spec" else PTO_ISA
    ch = types.SimpleNamespace(slot_num=S, sync_period=_sync_period(protocol, S),
                               wait_every=model.wait_every)
    notifies = lambda k: ch.wait_every or model.consumer_frees(ch, k)      # noqa: E731
    waits = lambda i: ch.wait_every or model.producer_waits(ch, i)         # noqa: E731
    if n > S and not waits(S):
        return "overrun"
    if mode == "free_off_last":
        return "hang" if notifies(n - 1) else "clean"
    if mode == "skip_wait":
        return "leak" if waits(n - 1) else "clean"
    return "clean"


def _outcome(cube, vector, platform, protocol, **kw):
    try:
        ptopipe.run(cube, (vector, None), _args(), platform=platform, protocol=protocol, **kw)
    except (DeadlockError, LeakError) as e:
        return ("hang" if isinstance(e, DeadlockError) else "leak"), e
    except ProtocolError as e:
        return "overrun", e
    return "clean", None


# -- the teardown: both parities of the push count, SlotNum 1..8 ---------------------------
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("mode", ["correct", "free_off_last", "skip_wait"])
def test_teardown_outcome_per_slotnum_and_parity(platform, protocol, mode, no_hang):
    seen = {}
    for S in range(1, 9):
        if mode == "skip_wait" and protocol == "spec" and S == 8:
            continue        # spec: 8 per-tag flags per direction leave no id for the ack pipe
        for n in (2 * S, 2 * S + 1):                       # an even and an odd push count
            cube, vector = family(S, n, mode, protocol)
            got, err = _outcome(cube, vector, platform, protocol)
            want = expected(protocol, S, n, mode)
            seen[(S, n)] = got
            assert got == want, (S, n, got, want, str(err))
            if got == "overrun":
                assert _where_line(err) == line_of(cube, "push") and "overwrites slot 0" in str(err)
            elif err is not None:
                # reported at the line where the Cube's pipe goes out of scope (kernel end)
                assert _where_line(err) == line_of(cube, "teardown"), str(err)
                assert err.where.rpartition(":")[0].endswith("test_launches.py")
                if got == "hang":
                    awaited = err.findings[0]["awaited"]
                    assert f"awaited {awaited}" in str(err) and "sent " in str(err) and "consumed " in str(err)
                    assert err.findings[0]["sent"] - err.findings[0]["consumed"] == awaited - 1
                else:
                    assert "keeps 1 credit after the teardown drain" in str(err)
    outcomes = set(seen.values()) - {"overrun"}
    if mode == "correct":
        assert outcomes == {"clean"}
    elif protocol == "pto-isa":
        # both outcomes occur, and which one depends on the parity for SyncPeriod 2
        assert outcomes == {"clean", "hang" if mode == "free_off_last" else "leak"}
        sp4 = _sync_period(protocol, 4)
        if sp4 == 2:
            assert seen[(4, 8)] != seen[(4, 9)]
    else:
        assert outcomes == {"hang" if mode == "free_off_last" else "leak"}


@pytest.mark.parametrize("platform", PLATFORMS)
def test_pto_isa_parity_table_spelled_out(platform, no_hang):
    """SlotNum 4 (SyncPeriod 2 under the pto-isa rule): an even push count n means release
    n-1 notifies (n % 2 == 0), so withholding it hangs the drain; an odd n means push n-1
    is SyncPeriod-aligned and waits, so skipping it leaks that credit."""
    if _sync_period("pto-isa", 4) != 2:
        pytest.skip("this platform's pto-isa SyncPeriod for SlotNum 4 is not 2")
    table = {}
    for n in (8, 9):
        for mode in ("free_off_last", "skip_wait"):
            cube, vector = family(4, n, mode, "pto-isa")
            table[(n, mode)] = _outcome(cube, vector, platform, "pto-isa")[0]
    assert table == {(8, "free_off_last"): "hang", (8, "skip_wait"): "clean",
                     (9, "free_off_last"): "clean", (9, "skip_wait"): "leak"}


def test_pto_isa_destructor_arithmetic_matches_the_model():
    """pto-isa's closed form (numPopFree - numPushWait from tileIndex) equals counting the
    model's own notify/wait rules, for SlotNum 1..8 and 0..40 pushes."""
    import types
    for S in range(1, 9):
        sp = PTO_ISA.sync_period(TPipe(0, DIR_C2V, SLOT, S))
        ch = types.SimpleNamespace(slot_num=S, sync_period=sp, wait_every=False)
        for n in range(41):
            sent = sum(1 for k in range(n) if PTO_ISA.consumer_frees(ch, k))
            waited = sum(1 for i in range(n) if PTO_ISA.producer_waits(ch, i))
            assert pto_isa_drain(S, sp, n) == sent - waited, (S, n)
    assert pto_isa_drain(4, 2, 9) == 4 - 3        # 9 pushes: frees at 2,4,6,8; waits at 4,6,8
    assert pto_isa_drain(1, 1, 5) == 5 - 4        # SlotNum 1: every push but the first waits


# -- several launches ------------------------------------------------------------------
SCENARIOS = ["s1_cv_split.py", "s2_cv_nosplit.py", "s3_vc_dequant.py", "s4_both_ways.py",
             "s5_subtile_gm.py", "s6_stream_both.py"]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("fname", SCENARIOS)
def test_correct_scenarios_run_three_times_clean(fname, platform, protocol, no_hang):
    import os
    sc = load_scenarios(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "scenarios", fname))[0]
    res = sc.check(sc.default_variant, platform=platform, protocol=protocol, launches=3)
    assert len(res.launches) == 3 and res.summary.launches == 3
    rows = res.summary.ledger
    assert {r["launch"] for r in rows} == {1, 2, 3}
    assert all(r["left"] == 0 and r["inherited"] == 0 for r in rows)
    # the ledger balances on every flag: sent = consumed + drained (+ left, here 0)
    assert all(r["sent"] == r["consumed"] + r["drained"] for r in rows)
    # every launch equals the numpy golden (launch 3 too, not only the last GM contents)
    params = sc.params(sc.default_variant)
    exp = sc.golden(sc.args(sc.default_variant), **params)
    for outs in res.launches:
        for k, v in exp.items():
            np.testing.assert_allclose(outs[k], v, rtol=sc.rtol, atol=sc.atol)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_family_correct_relaunched_leaves_every_flag_empty(platform, protocol, no_hang):
    for S in (1, 2, 3, 4, 6, 8):        # (5 and 7 overrun under pto-isa: M8)
        cube, vector = family(S, 2 * S + 1, "correct", protocol)
        res = ptopipe.run(cube, (vector, None), _args(), platform=platform, protocol=protocol, launches=3)
        rows = res.summary.ledger
        assert len({r["launch"] for r in rows}) == 3
        assert all(r["left"] == 0 for r in rows)
        free = [r for r in rows if r["signal"] == "free"]
        # pto-isa's drain takes what the sparse rule left (spec: each tag's pre-signal)
        assert all(r["drained"] == (1 if protocol == "spec" else pto_isa_drain(S, _sync_period(protocol, S), 2 * S + 1))
                   for r in free)
        assert "launch 3 exit: every cross-core flag at 0" in res.summary.format()


def test_each_launch_is_compared_with_the_golden():
    """A kernel that accumulates into its output is right after launch 1 only."""
    def vector(x, out):
        if get_subblockid():
            return
        a = Tile(TileType.Vec, float32, T, T, addr=0x0)
        b = Tile(TileType.Vec, float32, T, T, addr=0x1000)
        TLOAD(a, x)
        TLOAD(b, out)
        TADD(b, b, a)
        TSTORE(out, b)
    x = np.arange(T * T, dtype=np.float32).reshape(T, T)
    res = ptopipe.run(None, vector, dict(x=x, out=np.zeros_like(x)), launches=2)
    np.testing.assert_array_equal(res.launches[0]["out"], x)
    np.testing.assert_array_equal(res.launches[1]["out"], 2 * x)        # GM carries over
    with pytest.raises(MismatchError, match=r"launch 2 of 2"):
        compare_launches(res, {"out": x}, 0, 0, "acc")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_unpopped_tile_of_launch_1_is_reported_where_launch_2_pops_it(platform, no_hang):
    """pto-isa, SlotNum 4, 5 pushes, 4 pops: the missing pop would not have notified (5 % 2),
    so launch 1's teardown passes and its ready credit carries over; launch 2's first TPOP
    takes it.  With one launch the same kernel is a leak at exit."""
    cube, vector = family(4, 5, "short", "pto-isa")
    with pytest.raises(LeakError, match="pushed but AIV0 never popped"):
        ptopipe.run(cube, (vector, None), _args(), platform=platform, protocol="pto-isa")
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, (vector, None), _args(), platform=platform, protocol="pto-isa", launches=2)
    err = ei.value
    assert _where_line(err) == line_of(vector, "pop")
    msg = str(err)
    assert "launch 1" in msg and "flag 0 (AIC->AIV0)" in msg and "(1 left)" in msg
    assert "in launch 2 of 2" in msg
    (f,) = [f for f in err.findings if f["kind"] == "carried_credit"]
    assert f["launch"] == 1 and f["flag"] == 0 and f["left"] == 1
    assert "sent 5 / consumed 4 / drained 0 / left 1" in msg


@pytest.mark.parametrize("platform", PLATFORMS)
def test_spec_short_consumer_is_the_same_leak_in_one_launch_and_in_two(platform, no_hang):
    """spec: the unpopped tile's tag never gets its free back, so launch 1's teardown would
    wait for it forever; the cause is the push nobody popped - the LeakError one launch
    reports at the push, and with two launches the same one, in launch 1 of 2."""
    cube, vector = family(4, 5, "short", "spec")
    errs = []
    for k in (1, 2):
        with pytest.raises(LeakError) as ei:
            ptopipe.run(cube, (vector, None), _args(), platform=platform, protocol="spec", launches=k)
        errs.append(ei.value)
    one, two = errs
    assert _where_line(one) == _where_line(two) == line_of(cube, "push")
    assert one.what == two.what and "pushed but AIV0 never popped it" in one.what
    assert "(in launch 1 of 2)" in str(two) and "(in launch" not in str(one)
    assert f"so the teardown hangs ({two.where.rpartition(':')[0]}:{line_of(cube, 'teardown')})" in two.details


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_leaked_free_credit_overruns_the_next_launch(platform, protocol, no_hang):
    """The skipped wait's credit survives launch 1 (not the last launch: carried, not a
    leak); launch 2's producer takes it at its first waiting push - reported there."""
    S = 4
    n = 2 * S + 1 if protocol == "pto-isa" else 2 * S      # a waiting last push
    cube, vector = family(S, n, "skip_wait", protocol)
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, (vector, None), _args(), platform=platform, protocol=protocol, launches=2)
    err = ei.value
    assert _where_line(err) == line_of(cube, "push")
    msg = str(err)
    assert "takes a free credit launch 1 left" in msg and "overruns" in msg and "in launch 2 of 2" in msg
    (f,) = [f for f in err.findings if f["kind"] == "carried_credit"]
    assert f["launch"] == 1 and f["left"] == 1


# -- binding a FlagID twice -------------------------------------------------------------
def test_same_pipe_bound_twice_in_one_launch_names_the_fix():
    def cube(fifo):
        for i in range(2):
            pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo)  # bind
            del pipe
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(cube, None, _args())
    err = ei.value
    assert _where_line(err) == line_of(cube, "bind")
    assert "a second time in one launch" in str(err)
    assert "bind the pipe once per kernel, before the loop" in err.fix and "launches" in err.fix


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_two_pipes_alike_on_one_flag_id_are_two_pipes_not_a_rebinding(protocol):
    """Two constructions of the same configuration on one FlagID at different lines are two
    pipes sharing flags (not the one pipe bound again): both constructions are named, and the
    fix gives the next FlagID of the protocol's flag layout."""
    def cube(fifo):
        TPipe(0, DIR_C2V, SLOT, 2)(fifo)  # first
        TPipe(0, DIR_C2V, SLOT, 2)(fifo.data() + 2 * SLOT)  # second
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(cube, None, _args(), protocol=protocol)
    err = ei.value
    assert _where_line(err) == line_of(cube, "second")
    first = f":{line_of(cube, 'first')}"
    assert err.what.startswith("two pipes use the same flag ids on AIC: C2V pipe FlagID 0 (peers AIV0,AIV1) "
                               "constructed at "), err.what
    assert first in err.what and f"DIR_C2V pipe FlagID 0 constructed at {err.where}" in err.what
    assert "a second time" not in err.what and "once per kernel" not in err.fix
    # the next free FlagID: spec FlagID + SlotNum (a flag per slot), pto-isa FlagID + 2 (ready, free)
    assert f"e.g. FlagID 2 (the {protocol} flag layout: " in err.fix, err.fix


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_second_pipe_on_a_flag_id_names_its_range(protocol):
    def cube(fifo):
        TPipe(0, DIR_C2V, SLOT, 4)(fifo)
        TPipe(0, DIR_C2V, 2 * SLOT, 2)(fifo.data() + 8 * SLOT)  # second
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(cube, None, _args(), protocol=protocol)
    err = ei.value
    assert _where_line(err) == line_of(cube, "second")
    top = 3 if protocol == "spec" else 1
    assert f"own FlagID outside 0..{top}" in err.fix
    assert "other side" not in str(err) + err.fix       # not a producer/consumer mismatch


def test_rebinding_in_the_next_launch_is_legal(no_hang):
    cube, vector = family(2, 4, "correct", "spec")
    res = ptopipe.run(cube, (vector, None), _args(), launches=2)
    assert [r["inherited"] for r in res.summary.ledger] == [0] * len(res.summary.ledger)


def test_launches_must_be_a_positive_count():
    cube, vector = family(2, 4, "correct", "spec")
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match="launches"):
            ptopipe.run(cube, (vector, None), _args(), launches=bad)


# -- the CLI and the deadlock report ----------------------------------------------------
def test_cli_launches_option(capsys):
    import os
    from ptopipe.cli import main as cli_main
    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "scenarios", "s1_cv_split.py")
    assert cli_main(["run", path, "--launches", "2", "--protocol", "pto-isa"]) == 0
    out = capsys.readouterr().out
    assert "after each of 2 launches" in out and "launch 2 exit: every cross-core flag at 0" in out
    assert "drained 2 / left 0" in out                   # pto-isa: 4 pushes, SlotNum 4
    assert cli_main(["check", path, "--launches", "2", "--schedules", "2"]) == 0
    assert "PASS s1_cv_split[default] on a2a3/spec (2 launches each): default schedule + 2 explored" \
        in capsys.readouterr().out
    assert cli_main(["check", path, "--launches", "0"]) == 1
    assert "--launches 0 is not a number of launches" in capsys.readouterr().err


def test_a_deadlock_lists_the_credits_a_launch_inherited():
    from ptopipe.isa.pipe.teardown import explain_carried
    from ptopipe.sim import Cluster
    first, second = Cluster("a2a3"), Cluster("a2a3")
    f = first.flag(first.aiv0, first.aic, 1)
    first.set_flag(first.aiv0, f, 0)
    second.carry_flags(first, origin=lambda fl: {"launch": 1, "left": fl.count})
    g = second.flag(second.aiv0, second.aic, 1)
    assert g.count == g.carried == 1 and g.arrivals == [0]
    assert "flag 1 (AIV0->AIC): 1 left by launch 1, 1 not yet consumed" in explain_carried(second)


# -- the registry of correct kernels (tests/corpus.py): run by test_clean_corpus.py and
# benchmarks/schedules.py --kernels new with their launches=3.  The family has no output to
# compare (its checks are the ledger's: nothing left at any exit).
def _clean_registry():
    from corpus import kernel
    out = []
    for S in range(1, 9):
        why = {(p, "pto-isa"): f"SlotNum {S}: push #{S} does not wait under SyncPeriod {S // 2}, it "
                               "overwrites slot 0 before the consumer popped it (M8)"
               for p in PLATFORMS} if S in (5, 7) else None
        cube, vector = family(S, 2 * S + 1, "correct", "spec")    # "correct": no ack pipe
        out.append(kernel(f"launches_family_S{S}", cube, (vector, None), lambda rng: _args(),
                          excluded=why, launches=3))
    import os
    from corpus import of_scenario
    for fname in ("s1_cv_split.py", "s3_vc_dequant.py"):     # examples relaunched (cf. SCENARIOS)
        sc = load_scenarios(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "scenarios", fname))[0]
        sc = dataclasses.replace(sc, launches=3)
        out.append(of_scenario(f"launches_{fname[:-3]}_x3", sc))
    return out


CLEAN_KERNELS = _clean_registry()
