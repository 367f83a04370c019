"""Intra-core event flags (set_flag / wait_flag / pipe_barrier; PTO-AS record_event /
wait_event / barrier in the pl DSL) and the manual synchronisation mode.

Correct kernels with proper events run clean in manual mode on both platforms and both
protocols and match numpy; a missing event pair is a DataRaceError naming both lines (and
runs clean in auto mode, where the scoreboard orders the pipes); a wait with no set is a
DeadlockError at the wait; a set never consumed is a LeakError at the set."""
import os
import pathlib
import sys

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe import CompileError, ConfigError, DataRaceError, DeadlockError, KernelError
from ptopipe.cli import main as cli_main
from ptopipe.driver.loader import load_scenarios
from ptopipe.errors import LeakError, shown_path
from ptopipe.isa import *  # noqa: F403
from ptopipe.runtime import KernelSet
from ptopipe.sim.core import Core
from markers import line_of

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MISUSE = os.path.join(ROOT, "examples", "misuse")
COMBOS = [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec"), ("a5", "pto-isa")]
RING_L1 = 0x40000
M, K, N, D = 16, 32, 16, 2


def gt(t, off, shape):
    return GlobalTensor(t.data() + off, shape)


def _line(err_where: str) -> int:
    """The line of an error's location (a helper's, without the kernel lines that called it)."""
    return int(err_where.split(" (called from ")[0].rsplit(":", 1)[1])


# ============================================================ a V2C kernel pair with events
# Each AIV loads its 8 rows of x_i, doubles them and pushes them; the Cube pops the 16x32
# tile, moves it to L0A, multiplies it with w and stores the f32 result.  ``drop`` removes
# one set/wait pair (the "missing sync" bug): "mte2_v", "mte1_m", "m_fix" or "fix_m".
def v2c_cube(w, out, fifo, n, drop=None):
    pipe = TPipe(0, DIR_V2C, M * K * 4, D)(fifo, 0, RING_L1)
    x = Tile(TileType.Mat, float32, M, K)
    x0 = Tile(TileType.Left, float32, M, K, addr=0)
    w1 = Tile(TileType.Mat, float32, K, N, addr=0)
    w0 = Tile(TileType.Right, float32, K, N, addr=0)
    acc = Tile(TileType.Acc, float32, M, N, addr=0)
    TLOAD(w1, w)
    set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0)
    wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID0)
    TMOV(w0, w1)
    set_flag(PIPE_M, PIPE_MTE1, EVENT_ID0)                # prime: L0A free
    set_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID1)             # prime: x's staging slot free
    if drop != "fix_m":
        set_flag(PIPE_FIX, PIPE_M, EVENT_ID0)             # prime: L0C free
    for i in range(n):
        wait_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID1)
        TPOP(pipe, x, TILE_UP_DOWN)                       # A2A3: a TLOAD into L1 on MTE2
        set_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID1)
        wait_flag(PIPE_MTE2, PIPE_MTE1, EVENT_ID1)
        wait_flag(PIPE_M, PIPE_MTE1, EVENT_ID0)
        TMOV(x0, x)                                       # cube-tmov
        set_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID1)
        if drop != "mte1_m":
            set_flag(PIPE_MTE1, PIPE_M, EVENT_ID1)
            wait_flag(PIPE_MTE1, PIPE_M, EVENT_ID1)
        if drop != "fix_m":
            wait_flag(PIPE_FIX, PIPE_M, EVENT_ID0)
        TMATMUL(acc, x0, w0)                              # cube-matmul
        set_flag(PIPE_M, PIPE_MTE1, EVENT_ID0)
        if drop != "m_fix":
            set_flag(PIPE_M, PIPE_FIX, EVENT_ID0)
            wait_flag(PIPE_M, PIPE_FIX, EVENT_ID0)
        TSTORE(gt(out, i * M * N, (M, N)), acc)           # cube-store
        if drop != "fix_m":
            set_flag(PIPE_FIX, PIPE_M, EVENT_ID0)
        TFREE(pipe, TILE_UP_DOWN)
    wait_flag(PIPE_M, PIPE_MTE1, EVENT_ID0)               # drain
    wait_flag(PIPE_MTE1, PIPE_MTE2, EVENT_ID1)
    if drop != "fix_m":
        wait_flag(PIPE_FIX, PIPE_M, EVENT_ID0)


def v2c_vec(x, fifo, n, drop=None):
    pipe = TPipe(0, DIR_V2C, M * K * 4, D)(fifo, 0, RING_L1)
    h = M // 2
    sub = get_subblockid()
    t = Tile(TileType.Vec, float32, h, K, addr=0)
    u = Tile(TileType.Vec, float32, h, K, addr=0x1000)
    set_flag(PIPE_V, PIPE_MTE2, EVENT_ID3)                # prime: t free
    set_flag(PIPE_MTE3, PIPE_V, EVENT_ID0)                # prime: u free
    for i in range(n):
        wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID3)
        TLOAD(t, gt(x, (i * M + sub * h) * K, (h, K)))    # vec-load
        if drop != "mte2_v":
            set_flag(PIPE_MTE2, PIPE_V, EVENT_ID3)
            wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID3)
        wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID0)
        TMULS(u, t, 2.0)                                  # vec-muls
        set_flag(PIPE_V, PIPE_MTE2, EVENT_ID3)
        if drop != "v_mte3":
            set_flag(PIPE_V, PIPE_MTE3, EVENT_ID1)
            wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID1)
        TPUSH(pipe, u, TILE_UP_DOWN)                      # vec-push
        set_flag(PIPE_MTE3, PIPE_V, EVENT_ID0)
    wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID3)
    wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID0)


def v2c_args(n=3, drop=None):
    rng = np.random.default_rng(1)
    return dict(x=rng.integers(-4, 5, (n * M, K)).astype(np.float32),
                w=rng.integers(-4, 5, (K, N)).astype(np.float32),
                out=np.zeros((n * M, N), np.float32), fifo=gm_buffer(8 * M * K * 4), n=n, drop=drop)


def v2c_golden(a):
    n = a["n"]
    x = a["x"].reshape(n, M, K) * 2
    return (x @ a["w"]).reshape(n * M, N)


@pytest.mark.parametrize("platform,protocol", COMBOS)
@pytest.mark.parametrize("sync", ["manual", "auto"])
def test_v2c_kernel_with_events_is_clean_and_matches_numpy(platform, protocol, sync, no_hang):
    a = v2c_args()
    res = ptopipe.run(v2c_cube, v2c_vec, a, platform=platform, protocol=protocol, sync=sync)
    np.testing.assert_array_equal(res["out"], v2c_golden(a))


# which pair is missing -> (kernel, line of the later access = where, line of the earlier one)
DROPS = {"mte2_v": (v2c_vec, "vec-muls", "vec-load"),
         "mte1_m": (v2c_cube, "cube-matmul", "cube-tmov"),
         "m_fix": (v2c_cube, "cube-store", "cube-matmul"),
         "fix_m": (v2c_cube, "cube-matmul", "cube-store"),   # loop-carried: iteration 1
         "v_mte3": (v2c_vec, "vec-push", "vec-muls")}         # TPUSH reads u on MTE3, unordered


@pytest.mark.parametrize("platform,protocol", COMBOS)
@pytest.mark.parametrize("drop", sorted(DROPS))
def test_a_missing_event_pair_is_a_race_naming_both_instructions(drop, platform, protocol, no_hang):
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(v2c_cube, v2c_vec, v2c_args(drop=drop), platform=platform, protocol=protocol,
                    sync="manual")
    fn, later, earlier = DROPS[drop]
    e = ei.value
    assert e.where.endswith(f"test_events.py:{line_of(fn, later)}"), str(e)
    assert f"test_events.py:{line_of(fn, earlier)}" in str(e), str(e)
    assert e.findings[0]["kind"] == "pipe_race"


@pytest.mark.parametrize("drop", sorted(DROPS))
def test_the_same_missing_pair_is_ordered_by_the_scoreboard_in_auto_mode(drop):
    a = v2c_args(drop=drop)
    res = ptopipe.run(v2c_cube, v2c_vec, a, platform="a5", protocol="spec")
    np.testing.assert_array_equal(res["out"], v2c_golden(a))


# ============================================================ hangs, leaks, barriers
def _vec_only(fn, sync="manual", **kw):
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    return ptopipe.run(aiv=(fn, None), args=dict(x=x, y=np.zeros_like(x)), sync=sync, **kw)


def wait_without_set(x, y):
    t = Tile(TileType.Vec, float32, 16, 16, addr=0)
    TLOAD(t, x)
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID1)
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID2)               # hang-here
    TSTORE(y, t)


@pytest.mark.parametrize("sync", ["manual", "auto"])
def test_a_wait_with_no_earlier_set_is_a_hang_at_the_wait(sync, no_hang):
    with pytest.raises(DeadlockError) as ei:
        _vec_only(wait_without_set, sync)
    e = ei.value
    assert _line(e.where) == line_of(wait_without_set, "hang-here"), str(e)
    assert "wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID2)" in e.what
    assert "(PIPE_MTE2, PIPE_V, EVENT_ID1) x1" in str(e)       # what is pending instead


def set_never_waited(x, y):
    t = Tile(TileType.Vec, float32, 16, 16, addr=0)
    TLOAD(t, x)
    set_flag(PIPE_MTE2, PIPE_MTE3, EVENT_ID4)
    wait_flag(PIPE_MTE2, PIPE_MTE3, EVENT_ID4)
    TSTORE(y, t)
    set_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID5)             # leaked


@pytest.mark.parametrize("sync", ["manual", "auto"])
def test_a_set_never_consumed_is_an_event_leak_at_the_set(sync):
    with pytest.raises(LeakError) as ei:
        _vec_only(set_never_waited, sync)
    assert _line(ei.value.where) == line_of(set_never_waited, "leaked")
    assert "set_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID5)" in ei.value.what
    res = _vec_only(set_never_waited, sync, leak_check=False)       # a warning instead
    assert any("EVENT_ID5" in w for w, _ in res.summary.leaks)


def _release(pipe_from):
    set_flag(pipe_from, PIPE_MTE2, EVENT_ID5)              # helper-set


def _acquire():
    wait_flag(PIPE_V, PIPE_MTE2, EVENT_ID3)                # helper-wait


def _stage(x, t):
    TLOAD(t, x)
    _acquire()                                             # stage-calls


def events_in_helpers(x, y):
    t = Tile(TileType.Vec, float32, 16, 16, addr=0)
    TLOAD(t, x)
    set_flag(PIPE_MTE2, PIPE_MTE3, EVENT_ID4)
    wait_flag(PIPE_MTE2, PIPE_MTE3, EVENT_ID4)
    TSTORE(y, t)
    _stage(x, Tile(TileType.Vec, float32, 16, 16, addr=0x400))     # kernel-calls-stage


def test_events_in_a_kernels_helpers_are_located_with_the_kernel_lines_that_called_them(no_hang):
    """A set never consumed / a wait with no set made in a function the kernel calls: at the
    helper's line, called from the kernel's (through every function of the kernel's own)."""
    me = shown_path(__file__)

    def at(fn, marker):
        return f"{me}:{line_of(fn, marker)}"
    with pytest.raises(DeadlockError) as ei:
        _vec_only(events_in_helpers)
    assert ei.value.where == (f"{at(_acquire, 'helper-wait')} (called from {at(_stage, 'stage-calls')}, "
                              f"from {at(events_in_helpers, 'kernel-calls-stage')})")

    def leak_only(x, y):
        t = Tile(TileType.Vec, float32, 16, 16, addr=0)
        TLOAD(t, x)
        _release(PIPE_MTE2)                                # leak-calls
    with pytest.raises(LeakError) as ei:
        _vec_only(leak_only)
    assert ei.value.where == f"{at(_release, 'helper-set')} (called from {at(leak_only, 'leak-calls')})"
    assert "set_flag(PIPE_MTE2, PIPE_MTE2, EVENT_ID5)" in ei.value.what


def barrier_kernel(pipe):
    def vector(x, y):
        t = Tile(TileType.Vec, float32, 16, 16, addr=0)
        u = Tile(TileType.Vec, float32, 16, 16, addr=0x400)
        TLOAD(t, x)
        pipe_barrier(pipe)
        TADDS(u, t, 1.0)                                  # barrier-reader
        pipe_barrier(pipe)
        TSTORE(y, u)
    return vector


def test_pipe_barrier_all_orders_every_pipe():
    res = _vec_only(barrier_kernel(PIPE_ALL))
    np.testing.assert_array_equal(res["y"], np.arange(256, dtype=np.float32).reshape(16, 16) + 1)


def test_a_one_pipe_barrier_does_not_order_other_pipes():
    fn = barrier_kernel(PIPE_V)
    with pytest.raises(DataRaceError) as ei:
        _vec_only(fn)
    assert "TADDS on PIPE_V" in ei.value.what and "TLOAD on PIPE_MTE2" in ei.value.what


def scalar_wait_kernel(src):
    """A V read of t, then a wait into PIPE_S for a set on ``src``, then a TLOAD over t: the
    scalar unit issues every instruction, so a wait it holds orders every later one - as
    ptoas orders a TPOP's staging reload after the Vector reads (V -> S before the TPOP)."""
    def vector(x, y):
        t = Tile(TileType.Vec, float32, 16, 16, addr=0)
        u = Tile(TileType.Vec, float32, 16, 16, addr=0x400)
        TLOAD(t, x)
        set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
        wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)
        TADDS(u, t, 1.0)                                  # s-reader
        set_flag(src, PIPE_S, EVENT_ID1)
        wait_flag(src, PIPE_S, EVENT_ID1)
        TLOAD(t, x)                                       # s-reload
        set_flag(PIPE_V, PIPE_MTE3, EVENT_ID2)
        wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID2)
        TSTORE(y, u)
    return vector


def test_a_wait_into_the_scalar_pipe_orders_every_later_instruction():
    res = _vec_only(scalar_wait_kernel(PIPE_V))
    np.testing.assert_array_equal(res["y"], np.arange(256, dtype=np.float32).reshape(16, 16) + 1)
    fn = scalar_wait_kernel(PIPE_MTE3)                    # waits for the wrong pipe: no order
    with pytest.raises(DataRaceError) as ei:
        _vec_only(fn)
    assert _line(ei.value.where) == line_of(fn, "s-reload")
    assert f":{line_of(fn, 's-reader')}" in ei.value.details


def gm_roundtrip(order):
    """TSTORE a tile to y, then TLOAD it back (RAW through GM), or TLOAD x again, then TSTORE
    over x (WAR): MTE3 and MTE2 of one core need an event for GM bytes too."""
    def vector(x, y):
        t = Tile(TileType.Vec, float32, 16, 16, addr=0)
        u = Tile(TileType.Vec, float32, 16, 16, addr=0x400)
        TLOAD(t, x)
        set_flag(PIPE_MTE2, PIPE_MTE3, EVENT_ID0)
        wait_flag(PIPE_MTE2, PIPE_MTE3, EVENT_ID0)
        TSTORE(y, t)                                      # gm-store
        if order == "ordered":
            set_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID0)
            wait_flag(PIPE_MTE3, PIPE_MTE2, EVENT_ID0)
        if order == "war":
            TLOAD(u, x)                                   # gm-war-load
            TSTORE(x, t)                                  # gm-war-store
        else:
            TLOAD(u, y)                                   # gm-reload
    return vector


@pytest.mark.parametrize("order,later,earlier", [("raw", "gm-reload", "gm-store"),
                                                 ("war", "gm-war-store", "gm-war-load")])
def test_gm_bytes_stored_and_reloaded_by_two_pipes_need_an_event(order, later, earlier):
    fn = gm_roundtrip(order)
    with pytest.raises(DataRaceError) as ei:
        _vec_only(fn)
    e = ei.value
    assert _line(e.where) == line_of(fn, later), str(e)
    assert f"test_events.py:{line_of(fn, earlier)}" in str(e) and "GM" in e.what
    _vec_only(fn, sync="auto")                            # the scoreboard: no report
    res = _vec_only(gm_roundtrip("ordered"))              # with the event: clean
    np.testing.assert_array_equal(res["y"], np.arange(256, dtype=np.float32).reshape(16, 16))


def gm_columns(load_col):
    """Store columns 0..7 of y (rows 64 B apart), then load 8 columns from ``load_col``: the
    byte ranges interleave; only the exact bytes decide whether the two pipes race."""
    def vector(x, y):
        t = Tile(TileType.Vec, float32, 16, 8, addr=0)
        u = Tile(TileType.Vec, float32, 16, 8, addr=0x400)
        TLOAD(t, GlobalTensor(x.data(), (16, 8), (16, 1)))
        set_flag(PIPE_MTE2, PIPE_MTE3, EVENT_ID0)
        wait_flag(PIPE_MTE2, PIPE_MTE3, EVENT_ID0)
        TSTORE(GlobalTensor(y.data(), (16, 8), (16, 1)), t)
        TLOAD(u, GlobalTensor(y.data() + load_col, (16, 8), (16, 1)))   # cols-load
    return vector


def test_gm_regions_that_interleave_without_sharing_bytes_do_not_race():
    _vec_only(gm_columns(8))                              # columns 8..15: disjoint bytes
    fn = gm_columns(4)                                    # columns 4..11: 4 shared per row
    with pytest.raises(DataRaceError) as ei:
        _vec_only(fn)
    assert _line(ei.value.where) == line_of(fn, "cols-load")


def narrow_tile(neighbour_at):
    """A 16x16 tile whose valid region is 16x8 (its rows 64 B apart, 32 B each) loaded on MTE2,
    and a 1x8 tile at ``neighbour_at`` written on V with no event between the two pipes."""
    def vector(x, y):
        t = Tile(TileType.Vec, float32, 16, 16, addr=0x0, valid_cols=8)
        s = Tile(TileType.Vec, float32, 1, 8, addr=neighbour_at)
        TEXPANDS(s, 3.0)
        TLOAD(t, GlobalTensor(x.data(), (16, 8), (16, 1)))      # narrow-load
    return vector


def test_a_tile_narrower_than_its_rows_touches_its_valid_bytes_only():
    """Manual sync judges a tile's access by the bytes of its valid region, its rows at the row
    pitch: a neighbour in the gap between two rows (0x20) or past the last row (0x3e0) is apart;
    one over a row's valid bytes (0x40) races."""
    _vec_only(narrow_tile(0x20))
    _vec_only(narrow_tile(0x3e0))
    fn = narrow_tile(0x40)
    with pytest.raises(DataRaceError) as ei:
        _vec_only(fn)
    assert _line(ei.value.where) == line_of(fn, "narrow-load")


def tsync_kernel(x, y):
    t = Tile(TileType.Vec, float32, 16, 16, addr=0)
    e = TLOAD(t, x)
    e2 = TMULS(t, t, 3.0, e)          # a trailing event: TSYNC(e) first
    TSTORE(y, t, e2)


def test_tsync_on_an_event_orders_the_pipes_in_manual_mode():
    res = _vec_only(tsync_kernel)
    np.testing.assert_array_equal(res["y"], np.arange(256, dtype=np.float32).reshape(16, 16) * 3)


def bad_args(which):
    def vector(x, y):
        if which == "pipe":
            set_flag("MTE2", PIPE_V, EVENT_ID0)           # bad-pipe
        elif which == "all":
            wait_flag(PIPE_ALL, PIPE_V, EVENT_ID0)        # bad-all
        else:
            set_flag(PIPE_MTE2, PIPE_V, 8)                # bad-event
    return vector


@pytest.mark.parametrize("which", ["pipe", "all", "event"])
def test_bad_event_arguments_are_kernel_errors_at_the_line(which):
    fn = bad_args(which)
    with pytest.raises(KernelError) as ei:
        _vec_only(fn)
    assert _line(ei.value.where) == line_of(fn, f"bad-{which}")


def test_an_unknown_sync_mode_is_a_config_error():
    with pytest.raises(ConfigError, match="synchronisation mode"):
        _vec_only(barrier_kernel(PIPE_ALL), sync="fast")


def test_the_default_mode_keeps_the_scoreboard_issue_path():
    res = _vec_only(barrier_kernel(PIPE_ALL), sync=None, checks=False)
    core = res.cluster.aiv0
    assert "issue_w" not in vars(core) and core.psync is not None and not core.psync.manual
    assert core.porder is None
    res = _vec_only(barrier_kernel(PIPE_ALL), sync=None)        # checkers on, completion-time rule
    assert "issue_w" not in vars(res.cluster.aiv0) and res.cluster.aiv0.porder is None
    # the causal race order wraps the issue methods in place (sim.porder: the pipes' order)
    res = _vec_only(barrier_kernel(PIPE_ALL), sync=None, causal=True)
    core = res.cluster.aiv0
    assert vars(core)["issue_w"] == core.porder.issue_w and core.porder._w.__func__ is Core.issue_w
    res = _vec_only(barrier_kernel(PIPE_ALL), sync="manual", causal=True)
    core = res.cluster.aiv0
    assert vars(core)["issue_w"] == core.porder.issue_w and core.porder._w == core.psync.issue_w
    res = _vec_only(barrier_kernel(PIPE_ALL), sync="manual", checks=False)
    assert vars(res.cluster.aiv0)["issue_w"] == res.cluster.aiv0.psync.issue_w


# ============================================================ M14: outcome by trip count
def _where_marker(fname, tag):
    """The one line of the example carrying ``<- tag`` (or, tag containing "(", that text)."""
    with open(os.path.join(MISUSE, fname)) as f:
        hits = [i for i, ln in enumerate(f, 1) if (tag if "(" in tag else f"<- {tag}") in ln]
    assert len(hits) == 1
    return hits[0]


@pytest.fixture(scope="module")
def m14():
    sys.path.insert(0, MISUSE)
    try:
        return {sc.name: sc for sc in load_scenarios(os.path.join(MISUSE, "m14_pingpong_tail.py"))}
    finally:
        sys.path.remove(MISUSE)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("tiles", range(9))
def test_pingpong_tail_races_for_even_trip_counts_and_hangs_for_odd(m14, tiles, platform, no_hang):
    sc = m14["m14_pingpong_tail"]
    with pytest.raises((DataRaceError, DeadlockError)) as ei:
        sc.run(f"tiles{tiles}", platform)
    e = ei.value
    fname = "m14_pingpong_tail.py"
    if tiles % 2 == 0 and tiles > 0:
        assert type(e) is DataRaceError, str(e)
        assert _line(e.where) == _where_marker(fname, "where")
        tadd = _where_marker(fname, "TADD(acc, acc, slot[s])")    # the loop's read of the slot
        assert f"{fname}:{tadd}" in str(e)
    else:
        assert type(e) is DeadlockError, str(e)
        assert _line(e.where) == _where_marker(fname, "hang")
        assert e.where.endswith(f"(called from {shown_path(os.path.normpath(os.path.join(MISUSE, fname)))}:{_where_marker(fname, 'pingpong(x, y, tiles)')})")
        assert "EVENT_ID0" in e.what


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_pingpong_tail_fixed_is_clean_for_every_trip_count(m14, platform, protocol):
    sc = m14["m14_pingpong_tail_fixed"]
    for tiles in range(9):
        sc.check(f"tiles{tiles}", platform, protocol)      # numerics vs numpy


# ============================================================ the pl DSL
@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_dsl_manual_sync_example_is_clean_and_matches_numpy(platform, protocol, no_hang):
    (sc,) = load_scenarios(os.path.join(ROOT, "examples", "dsl", "s8_manual_sync.py"))
    assert sc.sync == "manual"
    for v in ("default", "m16_d1"):
        sc.check(v, platform, protocol)


def _dsl_program(variant):
    """A pl kernel with events; ``variant`` leaves one thing out (or nothing: "ok")."""
    PRIME, SYNC_LOAD, DRAIN = variant != "noprime", variant != "race", variant != "leak"

    @pl.aiv
    def vector(x: pl.Tensor[[32, 16], pl.f32], y: pl.Tensor[[32, 16], pl.f32]):
        if PRIME:
            pl.record_event(pl.PIPE_MTE3, pl.PIPE_MTE2, pl.EVENT_ID0)
        for i in pl.range(2):
            pl.wait_event(pl.PIPE_MTE3, pl.PIPE_MTE2, pl.EVENT_ID0)       # dsl-wait
            t = pl.load(x, [i * 16, 0], [16, 16])                           # dsl-load
            if SYNC_LOAD:
                pl.record_event(pl.PIPE_MTE2, pl.PIPE_V, i % 2)
                pl.wait_event(pl.PIPE_MTE2, pl.PIPE_V, i % 2)
            u = pl.adds(t, 1.0)                                           # dsl-adds
            pl.record_event(pl.PIPE_V, pl.PIPE_MTE3, pl.EVENT_ID1)
            pl.wait_event(pl.PIPE_V, pl.PIPE_MTE3, pl.EVENT_ID1)
            pl.store(u, [i * 16, 0], y)
            pl.record_event(pl.PIPE_MTE3, pl.PIPE_MTE2, pl.EVENT_ID0)     # dsl-record
        if DRAIN:
            pl.wait_event(pl.PIPE_MTE3, pl.PIPE_MTE2, pl.EVENT_ID0)
        pl.barrier(pl.PIPE_ALL)

    @pl.aic
    def cube(x: pl.Tensor[[32, 16], pl.f32]):
        pl.barrier()
    return pl.program(cube, vector, name=f"dsl_events_{variant}")


def _run_dsl(variant, platform="a2a3"):
    ks = KernelSet(_dsl_program(variant))
    x = np.arange(512, dtype=np.float32).reshape(32, 16)
    return ptopipe.run(ks.aic, (ks.aiv, None), dict(x=x, y=np.zeros_like(x)), platform=platform,
                       sync="manual")


def _dsl_line(where: str) -> int:
    """The line of a DSL location file:line:col."""
    return int(where.rsplit(":", 2)[1])


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_dsl_events_run_clean_through_the_interpreter(platform):
    res = _run_dsl("ok", platform)
    np.testing.assert_array_equal(res["y"], np.arange(512, dtype=np.float32).reshape(32, 16) + 1)


@pytest.mark.parametrize("variant,cls,marker,other,spelled", [
    ("race", DataRaceError, "dsl-adds", "dsl-load",
     "pl.record_event(pl.PIPE_MTE2, pl.PIPE_V, n); before the TADDS: pl.wait_event(pl.PIPE_MTE2, pl.PIPE_V, n) "
     "(or pl.barrier())"),
    ("noprime", DeadlockError, "dsl-wait", None,
     "every pl.wait_event(pl.PIPE_MTE3, pl.PIPE_MTE2, 0) needs a pl.record_event(pl.PIPE_MTE3, pl.PIPE_MTE2, 0)"),
    ("leak", LeakError, "dsl-record", None, "consume every pl.record_event with a pl.wait_event")])
def test_dsl_event_misuse_is_reported_at_the_dsl_line(variant, cls, marker, other, spelled, no_hang):
    """... at the DSL line, and its fix in the DSL's words (pl.record_event / pl.wait_event /
    pl.barrier, not the ISA's set_flag / wait_flag / pipe_barrier)."""
    with pytest.raises(cls) as ei:
        _run_dsl(variant)
    e = ei.value
    assert "test_events.py:" in e.where, str(e)
    assert _dsl_line(e.where) == line_of(_dsl_program, marker), str(e)
    if other:
        assert f"test_events.py:{line_of(_dsl_program, other)}:" in str(e), str(e)
    assert spelled in e.fix, e.fix
    assert not any(w in e.what + e.fix for w in ("set_flag", "wait_flag", "pipe_barrier")), str(e)


@pytest.mark.parametrize("call,bad", [
    ("pl.record_event(pl.PIPE_ALL, pl.PIPE_V, pl.EVENT_ID0)", "pl.PIPE_ALL"),
    ("pl.wait_event(pl.PIPE_MTE2, pl.PIPE_V, 9)", "9"),
    ("pl.record_event(pl.PIPE_MTE2, 3, pl.EVENT_ID0)", "3")])
def test_dsl_bad_event_arguments_are_compile_errors_at_the_argument(call, bad):
    text = ("import ptopipe.language as pl\n\n\n@pl.aiv\n"
            "def vector(x: pl.Tensor[[16, 16], pl.f32]):\n"
            f"    {call}\n")
    with pytest.raises(CompileError) as ei:
        pl.parse(text, "k.py")
    assert ei.value.where == f"k.py:6:{4 + call.index(bad) + 1}", str(ei.value)   # 1-based column


def test_dsl_events_print_as_pto_as_spellings_and_parse_back():
    from ptopipe.ir.equality import first_difference
    from ptopipe.ir.printer import print_program
    prog = _dsl_program("ok")
    text = print_program(prog)
    assert "pl.record_event(pl.PIPE_MTE2, pl.PIPE_V, i % 2)" in text
    assert "pl.wait_event(pl.PIPE_MTE3, pl.PIPE_MTE2, 0)" in text and "pl.barrier()" in text
    assert first_difference(prog, pl.parse(text)) is None


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_manual_mode_timing_an_op_reading_a_popped_tile_starts_after_the_tpop(platform, protocol):
    """The TMOV reading the popped tile starts after the TPOP has filled it (the scoreboard is
    gone in manual mode): on A2A3 by the kernel's MTE2 -> MTE1 event after the TPOP's load, on
    A5 (a zero-copy TPOP of the L1 ring) by the TPOP's ready wait."""
    res = ptopipe.run(v2c_cube, v2c_vec, v2c_args(n=4), platform=platform, protocol=protocol,
                      sync="manual", trace=True)
    instrs = [i for i in res.cluster.trace if i.core == 0]
    pops = [k for k, i in enumerate(instrs) if i.name == "TPOP"]
    assert len(pops) == 4
    for k in pops:
        mov = next(j for j in instrs[k + 1:] if j.name == "TMOV")
        assert mov.start >= instrs[k].end, (instrs[k], mov)


def test_cli_sync_option_overrides_the_scenarios_mode(capsys):
    s8 = os.path.join(ROOT, "examples", "dsl", "s8_manual_sync.py")
    assert cli_main(["check", s8, "--schedules", "1"]) == 0
    assert "(manual sync)" in capsys.readouterr().out
    assert cli_main(["check", s8, "--schedules", "1", "--sync", "auto"]) == 0
    assert "(manual sync)" not in capsys.readouterr().out
    assert cli_main(["run", s8, "--quiet"]) == 0            # run says which mode ran, too
    assert "(manual sync): matches numpy golden" in capsys.readouterr().out
    assert cli_main(["run", s8, "--quiet", "--sync", "auto"]) == 0
    assert "(manual sync)" not in capsys.readouterr().out
    # M11 without its events checked: in auto mode only the leaked set remains to report
    m11 = os.path.join(MISUSE, "m11_missing_wait.py")
    assert cli_main(["run", m11, "--sync", "auto"]) == 1
    assert "LeakError" in capsys.readouterr().err
    assert cli_main(["run", m11]) == 1
    assert "DataRaceError" in capsys.readouterr().err


# ============================================================ the registry of correct kernels
# (tests/corpus.py): run by test_clean_corpus.py and benchmarks/schedules.py --kernels new,
# in their own sync mode, on every combo (each is valid on all four).
def _clean_registry():
    from corpus import kernel, of_scenario
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    vec_args = lambda rng: dict(x=x.copy(), y=np.zeros_like(x))      # noqa: E731
    cols = np.zeros_like(x)
    cols[:, :8] = x[:, :8]
    ks = KernelSet(_dsl_program("ok"))
    x32 = np.arange(512, dtype=np.float32).reshape(32, 16)
    sys.path.insert(0, MISUSE)
    try:
        m14 = {sc.name: sc for sc in load_scenarios(os.path.join(MISUSE, "m14_pingpong_tail.py"))}
    finally:
        sys.path.remove(MISUSE)
    fixed = m14["m14_pingpong_tail_fixed"]
    (s8,) = load_scenarios(os.path.join(ROOT, "examples", "dsl", "s8_manual_sync.py"))
    return ([kernel("events_v2c", v2c_cube, v2c_vec, lambda rng: v2c_args(), lambda a: {"out": v2c_golden(a)},
                    sync="manual"),
             kernel("events_barrier_all", None, (barrier_kernel(PIPE_ALL), None), vec_args,
                    lambda a: {"y": x + 1}, sync="manual"),
             kernel("events_gm_ordered", None, (gm_roundtrip("ordered"), None), vec_args,
                    lambda a: {"y": x}, sync="manual"),
             kernel("events_gm_columns", None, (gm_columns(8), None), vec_args,
                    lambda a: {"y": cols}, sync="manual"),
             kernel("events_tsync", None, (tsync_kernel, None), vec_args, lambda a: {"y": x * 3}, sync="manual"),
             kernel("events_dsl", ks.aic, (ks.aiv, None), lambda rng: dict(x=x32.copy(), y=np.zeros_like(x32)),
                    lambda a: {"y": x32 + 1}, sync="manual"),
             of_scenario("s8_manual_sync[m16_d1]", s8, "m16_d1")]
            + [of_scenario(f"m14_fixed[tiles{t}]", fixed, f"tiles{t}") for t in range(9)])


CLEAN_KERNELS = _clean_registry()


def test_a_pto_files_event_misuse_is_told_in_its_spelling(tmp_path, capsys):
    """A .pto kernel's event leak names pto.set_flag / pto.wait_flag, not the C++ calls."""
    from ptopipe.cli import main
    src = (pathlib.Path(ROOT) / "tests" / "pto_corpus" / "v_record_wait_event_a5.pto").read_text()
    drop = "    pto.wait_event [#pto.pipe_event_type<TLOAD>, #pto.pipe_event_type<TVEC>, #pto.event<EVENT_ID0>]\n"
    assert drop in src
    f = tmp_path / "leak.pto"
    f.write_text(src.replace(drop, ""))
    assert main(["check", str(f), "--schedules", "0"]) == 1
    err = capsys.readouterr().err
    assert "pto.set_flag[#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, #pto.event<EVENT_ID0>]" in err, err
    assert "fix: consume every pto.set_flag with a pto.wait_flag" in err and "set_flag(" not in err
