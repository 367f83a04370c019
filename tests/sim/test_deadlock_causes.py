"""Deadlock causes for three common real deadlocks:
the error and its line were right, the cause and fix were not.

* a cycle of TPOPs (each side pops before it pushes what the other needs, or a branch skips
  a TPUSH on one side and a TPOP on the other): was "the blocked cores wait on different
  pipes: check FlagID";
* a TPOP on a pipe that never had a TPUSH while the producer is stuck pushing another pipe
  (the push went to the wrong pipe): was "call TFREE after the TPOP" / "SyncPeriod";
* both producers blocked on full rings of the two ways of one DIR_BOTH pipe: was "different
  pipes: check FlagID" / "SyncPeriod, use sync_period=1" (which would still deadlock).

Every kernel runs on both platforms and both protocols; the error class, line, cause and
fix are asserted."""
import pytest

import ptopipe
from ptopipe.errors import DeadlockError
from ptopipe.isa import *  # noqa: F403
from markers import line_of

COMBOS = [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec"), ("a5", "pto-isa")]
T = 16
SLOT = T * T * 4
UB, UB2, L1 = 0x10000, 0x18000, 0x40000


def _deadlock(cube, vec, args, platform, protocol, fn, marker) -> tuple:
    """Run; the error is a DeadlockError at ``fn``'s ``# marker`` line: (error, cause text)."""
    with pytest.raises(ptopipe.PtoPipeError) as ei:
        ptopipe.run(cube, vec, args, platform=platform, protocol=protocol, timeout=20)
    err = ei.value
    assert type(err) is DeadlockError, f"{type(err).__name__}: {err}"
    assert err.where.endswith(f"test_deadlock_causes.py:{line_of(fn, marker)}"), err.where
    causes = [f["text"] for f in err.findings if f["kind"] == "cause"]
    assert len(causes) == 1 and f"cause: {causes[0]}" in err.details, err.details
    return err, causes[0]


def _at(fn, marker) -> str:
    return f"test_deadlock_causes.py:{line_of(fn, marker)}"


def _no_old_advice(err):
    assert "different pipes" not in err.fix and "same FlagID" not in err.fix, err.fix
    assert "call TFREE" not in err.fix, err.fix


# ================================================= 1a. both sides pop first (two pipes)
def pop_first_cube(fifo):
    s = TPipe(0, DIR_C2V, SLOT, 2)(fifo, UB, 0)
    p = TPipe(2, DIR_V2C, SLOT, 2)(fifo.data() + 2 * SLOT, 0, L1)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    m = Tile(TileType.Mat, float32, T, T)
    for i in range(3):
        TPOP(p, m, TILE_UP_DOWN)  # pf-cube-pop
        TPUSH(s, acc, TILE_UP_DOWN)
        TFREE(p)


def pop_first_vec(fifo, pop_first=True):
    s = TPipe(0, DIR_C2V, SLOT, 2)(fifo, UB, 0)
    p = TPipe(2, DIR_V2C, SLOT, 2)(fifo.data() + 2 * SLOT, 0, L1)
    h = Tile(TileType.Vec, float32, T // 2, T, addr=0)
    y = Tile(TileType.Vec, float32, T // 2, T)
    TEXPANDS(h, 1.0)
    for i in range(3):
        if not pop_first:
            TPUSH(p, h, TILE_UP_DOWN)
        TPOP(s, y, TILE_UP_DOWN)  # pf-vec-pop
        TFREE(s)
        if pop_first:
            TPUSH(p, h, TILE_UP_DOWN)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_both_sides_popping_first_is_a_cycle_of_tpops(platform, protocol, no_hang):
    args = dict(fifo=ptopipe.gm_buffer(4 * SLOT))
    ptopipe.run(pop_first_cube, lambda fifo: pop_first_vec(fifo, False), args,   # push first: clean
                platform=platform, protocol=protocol, timeout=20)
    err, cause = _deadlock(pop_first_cube, pop_first_vec, dict(fifo=ptopipe.gm_buffer(4 * SLOT)),
                           platform, protocol, pop_first_cube, "pf-cube-pop")
    assert cause.startswith("a cycle of TPOPs: each blocked core is a consumer waiting for data its blocked "
                            "peer would push only after its own TPOP returns, if at all"), cause
    assert f"AIC's TPOP at tests/sim/{_at(pop_first_cube, 'pf-cube-pop')} waits for data on V2C pipe FlagID 2" in cause
    assert f"AIV0's TPOP at tests/sim/{_at(pop_first_vec, 'pf-vec-pop')} waits for data on C2V pipe FlagID 0" in cause
    # per-core counts: nothing moved on either pipe; AIV1 is in the same place as AIV0
    assert ("so far AIC popped 0 from V2C pipe FlagID 2 (peers AIV0,AIV1) and pushed 0 to C2V pipe FlagID 0 "
            "(peers AIV0,AIV1); AIV0 pushed 0 to V2C pipe FlagID 2 (peers AIV0,AIV1) and popped 0 from C2V "
            "pipe FlagID 0 (peers AIV0,AIV1) (likewise AIV1)") in cause, cause
    assert err.fix.startswith("push before popping what the other side needs"), err.fix
    _no_old_advice(err)


# ============================== 1b. branch mismatch on one DIR_BOTH pipe
def branch_cube(fifo):
    pipe = TPipe(0, DIR_BOTH, SLOT, 2)(fifo, UB, L1)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    m = Tile(TileType.Mat, float32, T, T)
    for i in range(4):
        TPOP(pipe, m, TILE_UP_DOWN)  # br-cube-pop
        TFREE(pipe)
        if i != 1:                           # skips its push at i == 1 ...
            TPUSH(pipe, acc, TILE_UP_DOWN)


def branch_vec(fifo, skip=2):
    pipe = TPipe(0, DIR_BOTH, SLOT, 2)(fifo, UB, L1)
    h = Tile(TileType.Vec, float32, T // 2, T, addr=0)
    y = Tile(TileType.Vec, float32, T // 2, T)
    TEXPANDS(h, 1.0)
    for i in range(4):
        TPUSH(pipe, h, TILE_UP_DOWN)
        if i != skip:                        # ... the Vector its pop at i == 2
            TPOP(pipe, y, TILE_UP_DOWN)  # br-vec-pop
            TFREE(pipe)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_branch_skipping_push_and_pop_on_different_iterations_is_a_cycle_of_tpops(platform, protocol,
                                                                                    no_hang):
    ptopipe.run(branch_cube, lambda fifo: branch_vec(fifo, skip=1), dict(fifo=ptopipe.gm_buffer(4 * SLOT)),
                platform=platform, protocol=protocol, timeout=20)              # matching branches: clean
    err, cause = _deadlock(branch_cube, branch_vec, dict(fifo=ptopipe.gm_buffer(4 * SLOT)), platform, protocol,
                           branch_cube, "br-cube-pop")
    assert cause.startswith("a cycle of TPOPs"), cause
    assert f"AIC's TPOP at tests/sim/{_at(branch_cube, 'br-cube-pop')} waits for data on DIR_BOTH pipe FlagID 0 (V2C way" in cause, cause
    assert f"AIV0's TPOP at tests/sim/{_at(branch_vec, 'br-vec-pop')} waits for data on DIR_BOTH pipe FlagID 0 (C2V way" in cause
    # the counts show the mismatch: AIC popped 2 tiles but pushed 1 back, the Vector lanes pushed 2, popped 1
    for part in ("AIC popped 2 from DIR_BOTH pipe FlagID 0 (V2C way", "and pushed 1 to DIR_BOTH pipe FlagID 0 (C2V way",
                 "AIV0 pushed 2 to DIR_BOTH pipe FlagID 0 (V2C way",
                 "and popped 1 from DIR_BOTH pipe FlagID 0 (C2V way, peers AIV0,AIV1) (likewise AIV1)"):
        assert part in cause, cause
    assert "make both sides' conditions and counts agree" in err.fix, err.fix
    _no_old_advice(err)


# ================================ 2. the push goes to the wrong pipe
def wrong_pipe_cube(fifo, wrong=True):
    pa = TPipe(0, DIR_C2V, SLOT, 2)(fifo, UB, 0)
    pb = TPipe(4, DIR_C2V, SLOT, 2)(fifo.data() + 2 * SLOT, UB2, 0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    for i in range(2):
        TPUSH(pa, acc, TILE_UP_DOWN)  # wp-push
        TPUSH(pa if wrong else pb, acc, TILE_UP_DOWN)  # wp-wrong


def wrong_pipe_vec(fifo):
    pa = TPipe(0, DIR_C2V, SLOT, 2)(fifo, UB, 0)
    pb = TPipe(4, DIR_C2V, SLOT, 2)(fifo.data() + 2 * SLOT, UB2, 0)
    x = Tile(TileType.Vec, float32, T // 2, T)
    y = Tile(TileType.Vec, float32, T // 2, T)
    for i in range(2):
        TPOP(pa, x, TILE_UP_DOWN)  # wp-pop-a
        TPOP(pb, y, TILE_UP_DOWN)  # wp-pop-b
        TFREE(pa)
        TFREE(pb)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_tpop_on_a_pipe_never_pushed_names_both_pipes(platform, protocol, no_hang):
    ptopipe.run(lambda fifo: wrong_pipe_cube(fifo, False), wrong_pipe_vec, dict(fifo=ptopipe.gm_buffer(4 * SLOT)),
                platform=platform, protocol=protocol, timeout=20)              # the right pipe: clean
    err, cause = _deadlock(wrong_pipe_cube, wrong_pipe_vec, dict(fifo=ptopipe.gm_buffer(4 * SLOT)), platform,
                           protocol, wrong_pipe_cube, "wp-push")
    assert cause.startswith(f"AIV0's TPOP at tests/sim/{_at(wrong_pipe_vec, 'wp-pop-b')} waits on C2V pipe FlagID 4 "
                            "(peers AIV0,AIV1), which has had no TPUSH at all (AIC pushed 0 to it), and AIC is "
                            f"blocked in its TPUSH at tests/sim/{_at(wrong_pipe_cube, 'wp-push')} on C2V pipe "
                            "FlagID 0"), cause
    wrong = f"tests/sim/{_at(wrong_pipe_cube, 'wp-wrong')}"        # the TPUSH of the tile nobody pops
    assert (f"C2V pipe FlagID 0 (peers AIV0,AIV1) holds 1 tile(s) AIC pushed (TPUSH at {wrong}) that AIV0 has "
            "not popped (AIC pushed 2, AIV0 popped 1)") in cause, cause
    held = platform == "a5" or protocol == "spec"          # A2A3 pto-isa: the GM-ring TPOP frees itself
    assert (f"AIV0 holds slot 0 of it (TPOP at tests/sim/{_at(wrong_pipe_vec, 'wp-pop-a')}" in cause) == held, cause
    assert (f"check that the TPUSH at {wrong} and AIV0's TPOP at tests/sim/{_at(wrong_pipe_vec, 'wp-pop-b')} use the "
            "pipe they mean") in err.fix, err.fix
    assert "a wrong pipe handle, FlagID or id" in err.fix
    if not held:        # the GM-ring TPOP freed slot 0: the push waits only for SyncPeriod's notification
        assert "the free credit is withheld by pto-isa's SyncPeriod" in cause, cause
        assert "sync_period=1" in err.fix and "unless one side names the wrong pipe" in err.fix, err.fix
        return
    assert "withheld" not in cause and "SyncPeriod" not in err.fix, str(err)
    assert err.fix.startswith("AIC never pushes to C2V pipe FlagID 4 (peers AIV0,AIV1) before it needs AIV0 to "
                              "make room in C2V pipe FlagID 0"), err.fix
    assert "pop the pipes in the order AIC pushes" in err.fix
    assert "call TFREE" not in err.fix


def credit_cube(fa, fb, n=5):
    pa = TPipe(0, DIR_C2V, SLOT, 4)(fa, UB, 0)
    pb = TPipe(4, DIR_C2V, SLOT, 2)(fb, UB2, 0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    for i in range(n):
        TPUSH(pa, acc, TILE_UP_DOWN)  # cr-push
    TPUSH(pb, acc, TILE_UP_DOWN)


def credit_vec(fa, fb, n=5):
    pa = TPipe(0, DIR_C2V, SLOT, 4)(fa, UB, 0)
    pb = TPipe(4, DIR_C2V, SLOT, 2)(fb, UB2, 0)
    x = Tile(TileType.Vec, float32, T // 2, T)
    TPOP(pa, x, TILE_UP_DOWN)
    TFREE(pa)
    TPOP(pb, x, TILE_UP_DOWN)  # cr-pop-b
    TFREE(pb)
    for i in range(1, n):
        TPOP(pa, x, TILE_UP_DOWN)
        TFREE(pa)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_credit_the_sync_period_withholds_is_the_cause_not_the_pipe_order(platform, no_hang):
    """The Vector frees pipe A's first tile, then waits on pipe B, which the Cube pushes after
    its 5th push to A: a slot of A is free, but pto-isa's SyncPeriod 2 announces only every
    second TFREE, so the push waits.  Clean under spec; under pto-isa the cause is the withheld
    credit with its arithmetic and the fix the SyncPeriod remedies, not a wrong pipe order."""
    args = dict(fa=ptopipe.gm_buffer(4 * SLOT), fb=ptopipe.gm_buffer(2 * SLOT))
    ptopipe.run(credit_cube, credit_vec, args, platform=platform, protocol="spec", timeout=20)
    err, cause = _deadlock(credit_cube, credit_vec, args, platform, "pto-isa", credit_cube, "cr-push")
    assert cause.startswith(f"AIV0's TPOP at tests/sim/{_at(credit_vec, 'cr-pop-b')} waits on C2V pipe FlagID 4"), cause
    assert "the free credit is withheld by pto-isa's SyncPeriod" in cause and "SyncPeriod = 2 TFREEs" in cause, cause
    assert "likely one side names the wrong pipe" not in err.fix, err.fix
    assert "sync_period=1" in err.fix and "or push to C2V pipe FlagID 4 (peers AIV0,AIV1) before AIC needs" in err.fix


# =============== 2b. the consumer drains one ring while the other fills
def drain_vec(fifo):
    pa = TPipe(0, DIR_C2V, SLOT, 2)(fifo, UB, 0)
    pb = TPipe(4, DIR_C2V, SLOT, 2)(fifo.data() + 2 * SLOT, UB2, 0)
    x = Tile(TileType.Vec, float32, T // 2, T)
    y = Tile(TileType.Vec, float32, T // 2, T)
    for p, t in ((pb, y), (pa, x)):          # ring B first: AIC pushes A, B, A, B, ...
        for i in range(3):
            TPOP(p, t, TILE_UP_DOWN)  # dr-pop
            TFREE(p)


def drain_cube(fifo):
    pa = TPipe(0, DIR_C2V, SLOT, 2)(fifo, UB, 0)
    pb = TPipe(4, DIR_C2V, SLOT, 2)(fifo.data() + 2 * SLOT, UB2, 0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    for i in range(3):
        TPUSH(pa, acc, TILE_UP_DOWN)  # dr-push-a
        TPUSH(pb, acc, TILE_UP_DOWN)


@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a5", "pto-isa")])
def test_a_consumer_draining_one_ring_while_the_other_is_full_is_told_the_pop_order(platform, protocol,
                                                                                     no_hang):
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(drain_cube, drain_vec, dict(fifo=ptopipe.gm_buffer(4 * SLOT)), platform=platform,
                    protocol=protocol, timeout=20)
    fix = ei.value.fix
    assert fix.startswith(f"AIV0 drains C2V pipe FlagID 4 (peers AIV0,AIV1) (its TPOP at tests/sim/"
                          f"{_at(drain_vec, 'dr-pop')}) while C2V pipe FlagID 0 (peers AIV0,AIV1) is full (AIC "
                          "pushed 2, AIV0 popped 0, SlotNum 2)"), fix
    assert f"AIC's TPUSH at tests/sim/{_at(drain_cube, 'dr-push-a')} waits for a slot of C2V pipe FlagID 0" in fix
    assert "Pop the rings in the order AIC pushes them" in fix and "SlotNum of at least" in fix
    assert "same FlagID" not in fix, fix


# ======================= 3. both ways of one DIR_BOTH pipe full
# SlotNum 4 per way; the Vector lanes push LAG tiles ahead of their first TPOP.  spec:
# clean up to LAG 8, both rings full from LAG 9.  pto-isa (SyncPeriod 2): the withheld
# credit is the cause at LAG 7 (spec runs it, and so does sync_period=1); at LAG 9 the C2V
# ring is full with nothing popped, so a smaller period does not help.
TILES = 12


def lag_cube(fifo, lag, sp=None):
    pipe = TPipe(0, DIR_BOTH, SLOT, 4, sync_period=sp)(fifo, UB, L1)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    m = Tile(TileType.Mat, float32, T, T)
    for i in range(TILES):
        TPOP(pipe, m, TILE_UP_DOWN)
        TFREE(pipe)
        TPUSH(pipe, acc, TILE_UP_DOWN)  # lag-cube-push


def lag_vec(fifo, lag, sp=None):
    pipe = TPipe(0, DIR_BOTH, SLOT, 4, sync_period=sp)(fifo, UB, L1)
    h = Tile(TileType.Vec, float32, T // 2, T, addr=0)
    y = Tile(TileType.Vec, float32, T // 2, T)
    TEXPANDS(h, 1.0)
    for i in range(TILES + lag):
        if i < TILES:
            TPUSH(pipe, h, TILE_UP_DOWN)  # lag-vec-push
        if i >= lag:
            TPOP(pipe, y, TILE_UP_DOWN)
            TFREE(pipe)


def _lag_args(lag, sp=None):
    return dict(fifo=ptopipe.gm_buffer(8 * SLOT), lag=lag, sp=sp)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_both_ways_of_one_dir_both_pipe_full(platform, protocol, no_hang):
    ptopipe.run(lag_cube, lag_vec, _lag_args(6), platform=platform, protocol=protocol, timeout=20)
    err, cause = _deadlock(lag_cube, lag_vec, _lag_args(9), platform, protocol, lag_cube, "lag-cube-push")
    assert cause.startswith("both producers are blocked on full rings of the two ways (C2V and V2C) of one "
                            "DIR_BOTH pipe, each consumer would pop only after its own blocked TPUSH"), cause
    assert (f"AIC's TPUSH at tests/sim/{_at(lag_cube, 'lag-cube-push')} waits for a free slot of DIR_BOTH pipe "
            "FlagID 0 (C2V way, peers AIV0,AIV1) (SlotNum 4 full: AIC pushed 4, AIV0 popped 0)") in cause, cause
    v2c = f"AIV0's TPUSH at tests/sim/{_at(lag_vec, 'lag-vec-push')} waits for a free slot of DIR_BOTH pipe FlagID "
    if protocol == "spec":     # (named by the FlagID declared; its V2C flags are 4.. under spec, 2/3 under pto-isa)
        assert v2c + "0 (V2C way, peers AIV0,AIV1) (SlotNum 4 full: AIV0 pushed 9, AIC popped 5) (likewise AIV1)" in cause
    else:   # AIC has freed 5 V2C slots, SyncPeriod 2 has announced 4: not the cause, C2V is full
        assert (v2c + "0 (V2C way, peers AIV0,AIV1) (AIV0 pushed 8, AIC popped and freed 5, 3 of SlotNum 4 slots in use; "
                "SyncPeriod 2 has not announced 1 of those TFREEs) (likewise AIV1)") in cause, cause
        assert "withheld" not in cause
        assert ("sync_period=1 would let AIV0 push 1 more tile(s) into DIR_BOTH pipe FlagID 0 (V2C way, peers AIV0,AIV1), which "
                "breaks the cycle only if AIV0 then pops before it pushes again") in err.fix, err.fix
        with pytest.raises(DeadlockError):                    # ... and here it does not
            ptopipe.run(lag_cube, lag_vec, _lag_args(9, 1), platform=platform, protocol=protocol, timeout=20)
    assert err.fix.startswith("deepen the rings (a larger SlotNum) or pop before pushing more (reduce the lag)")
    _no_old_advice(err)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_credit_withheld_on_both_ways_is_still_the_sync_period(platform, no_hang):
    """LAG 7: no ring is full; every blocked push waits for a free the consumer made but
    SyncPeriod has not announced - the SyncPeriod cause, and sync_period=1 runs it."""
    ptopipe.run(lag_cube, lag_vec, _lag_args(7), platform=platform, protocol="spec", timeout=20)
    ptopipe.run(lag_cube, lag_vec, _lag_args(7, 1), platform=platform, protocol="pto-isa", timeout=20)
    err, cause = _deadlock(lag_cube, lag_vec, _lag_args(7), platform, "pto-isa", lag_cube, "lag-cube-push")
    assert cause.startswith("the free credit is withheld by pto-isa's SyncPeriod"), cause
    assert "sync_period=1" in err.fix, err.fix


def test_the_fallback_fix_does_not_call_two_ways_of_one_pipe_different_pipes():
    """Blocked cores waiting on both rings of one pipe with no culprit named: not "check the
    FlagID" (the two ways of a DIR_BOTH pipe are one pipe)."""
    from ptopipe.sim.deadlock import _hint
    entries = [dict(core=c, signal="ready", pipe=p, holds=[], pending_frees=0, sender_done=False)
               for c, p in (("AIC", "V2C pipe FlagID 4"), ("AIV0", "C2V pipe FlagID 0"))]
    assert "different pipes" in _hint(entries, 2)
    assert "different pipes" not in _hint(entries, 1)
    assert "the number of TPOPs matches the number of TPUSHes" in _hint(entries, 1)


# ============ 2c. a TPOP too many on one pipe while a slot of the other is held
def extra_pop_cube(fa, fb):
    pa = TPipe(0, DIR_C2V, SLOT, 2)(fa, UB, 0)
    pb = TPipe(4, DIR_C2V, SLOT, 2)(fb, UB2, 0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    for i in range(4):
        TPUSH(pa, acc, TILE_UP_DOWN)
        TPUSH(pb, acc, TILE_UP_DOWN)


def extra_pop_vec(fa, fb, extra=True):
    pa = TPipe(0, DIR_C2V, SLOT, 2)(fa, UB, 0)
    pb = TPipe(4, DIR_C2V, SLOT, 2)(fb, UB2, 0)
    x = Tile(TileType.Vec, float32, T // 2, T)
    y = Tile(TileType.Vec, float32, T // 2, T)
    for i in range(4 if not extra else 2):
        TPOP(pa, x, TILE_UP_DOWN)  # xp-pop-a
        TPOP(pb, y, TILE_UP_DOWN)
        if extra:
            TFREE(pb)
            TPOP(pb, y, TILE_UP_DOWN)  # xp-extra
        TFREE(pb)
        TFREE(pa)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_tpop_too_many_on_one_pipe_holding_the_other_is_told_at_that_tpop(platform, no_hang):
    """The Vector core pops pipe B twice per iteration while holding a slot of pipe A; the
    Cube pushes A and B in turn, so its third push to A waits for a TFREE the Vector core
    would make only after its TPOP of B returns, which waits for the Cube's next push to B.
    The kernel has its TFREE: the report is at the extra TPOP, naming the held slot's TPOP
    and the blocked push - not "call TFREE after the TPOP"."""
    args = lambda: dict(fa=ptopipe.gm_buffer(2 * SLOT), fb=ptopipe.gm_buffer(2 * SLOT))  # noqa: E731
    ptopipe.run(extra_pop_cube, lambda fa, fb: extra_pop_vec(fa, fb, False), args(), platform=platform,
                timeout=20)                                                  # one pop per push: clean
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(extra_pop_cube, extra_pop_vec, args(), platform=platform, timeout=20)
    err = ei.value
    extra, pop_a = (f"tests/sim/{_at(extra_pop_vec, m)}" for m in ("xp-extra", "xp-pop-a"))
    assert err.where.endswith(extra), err.where
    assert err.what.startswith(f"deadlock: AIV0 holds slot 1 of C2V pipe FlagID 0 (peers AIV0,AIV1) (TPOP at "
                               f"{pop_a}) and is blocked in its TPOP at {extra} of C2V pipe FlagID 4"), err.what
    assert "a cycle through the two pipes" in err.what
    assert err.fix.startswith(f"AIV0 pops C2V pipe FlagID 4 (peers AIV0,AIV1) more often than AIC pushes it"), err.fix
    assert f"TFREE the slot of C2V pipe FlagID 0 (peers AIV0,AIV1) popped at {pop_a} before the TPOP at {extra}" \
        in err.fix
    assert "call TFREE after" not in err.fix, err.fix
