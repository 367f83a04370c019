"""The periodic engine with the checkers on: the learned blocks are checked exactly, recorded
and skipped blocks are not checked (their verdicts are the learned ones moved), and at a cut
the last blocks are made again with the checker (ptopipe.sim.periodic.checker).  Every run is
made on both engines with ``checks=True`` and must give the same outputs, cycles, summary
(warnings included) and errors - class, text, details, line - as the exact run, misuse
made late (after blocks were taken whole) included."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ptopipe
from ptopipe.errors import DataRaceError, PtoPipeError
from ptopipe.isa import *  # noqa: F403
from markers import line_of
from test_periodic import SLOT, T, rint, same  # noqa: F401
from test_periodic import engines  # noqa: F401  (the fixture)
from test_periodic_python_skip import cube, lane
from test_periodic_skip import whole


def vector(out, fifo, pops, split, bad, at):
    """Pops, adds 1, stores its lane's rows; from iteration ``at`` on, misuse ``bad``: 1 - lane 1
    stores into lane 0's rows (a race), 2 - it skips that iteration's TFREE, 3 - it
    stores the rows of the iteration 16 before (written by the Cube's earlier tile: no race,
    the other data), 4 - it adds the other lane's rows of the iteration before (a race whose
    two accesses come in either order)."""
    pipe, rows, part, o = lane(fifo, split)
    sub = get_subblockid()
    y = Tile(TileType.Vec, float32, rows, T, addr=0x4000)
    for i in range(pops):
        TPOP(pipe, part, split)
        TADDS(o, part, 1.0)
        if i >= at:
            if bad == 4:
                TLOAD(y, GlobalTensor(out.data() + ((i - 1) * T + (1 - sub) * rows) * T, (rows, T)))
                TADD(o, o, y)
        row = i * T + sub * rows
        if i >= at:
            if bad == 1:
                row = i * T
            if bad == 3:
                row = (i - 16) * T + sub * rows
        if i != at:
            TFREE(pipe, split)
        elif bad != 2:
            TFREE(pipe, split)
        TSTORE(GlobalTensor(out.data() + row * T, (rows, T)), o)  # checked store


def run_checked(made, plat, n, split=TILE_UP_DOWN, bad=0, at=None, pops=None, engaged=True):
    rng = np.random.default_rng(n)
    args = dict(x=rint(rng, (n * T, T), -3, 4), w=rint(rng, (T, T), -3, 4), out=np.zeros((n * T, T), np.float32),
                fifo=ptopipe.gm_buffer(4 * SLOT), n=n, pops=n if pops is None else pops, split=split, bad=bad,
                at=n if at is None else at, depth=4, sync=None)
    lanes = (vector, vector) if split == TILE_UP_DOWN else (vector, None)
    res = same(cube, lanes, args, made, engaged=engaged, platform=plat, checks=True)
    return res, (args["x"].reshape(-1, T, T) @ args["w"]).reshape(-1, T) + 1


@pytest.mark.parametrize("plat,split", [("a2a3", TILE_UP_DOWN), ("a5", TILE_NO_SPLIT)])
def test_checked_stream_taken_whole(engines, plat, split):
    res, want = run_checked(engines, plat, 500, split)
    assert np.array_equal(res.outputs["out"], want)
    assert whole(engines) > 0


def test_late_race(engines):
    """From iteration 450 on lane 1 stores into lane 0's rows: the exact run's race
    report (its occurrence of the store, the other access) after blocks were taken whole."""
    err, _ = run_checked(engines, "a2a3", 500, bad=1, at=450)
    assert isinstance(err, DataRaceError)
    assert err.where.endswith(f"test_periodic_checks.py:{line_of(vector, 'checked store')}")
    assert whole(engines) > 0


def test_late_race_named_in_the_exact_order(engines):
    """Each lane reads the other lane's rows of the iteration before: which of the two racing
    accesses comes first depends on the order the cores run in, which a cut after recorded
    blocks does not keep - the failing run is made again exactly, so the report is the exact
    run's in every word."""
    err, _ = run_checked(engines, "a2a3", 600, bad=4, at=461)
    assert isinstance(err, DataRaceError)
    assert any(f.blocks_skipped for f in engines)


def test_late_missing_free(engines):
    err, _ = run_checked(engines, "a5", 500, TILE_NO_SPLIT, bad=2, at=470)
    assert isinstance(err, PtoPipeError)
    assert whole(engines) > 0


def test_late_store_of_an_older_iteration(engines):
    """Rows an earlier iteration stored, stored again: what the checker says of it (ordered
    or not) is the exact run's."""
    run_checked(engines, "a2a3", 500, bad=3, at=460)
    assert whole(engines) > 0


def test_late_extra_pop(engines):
    err, _ = run_checked(engines, "a5", 500, pops=501)
    assert isinstance(err, ptopipe.DeadlockError)
    assert whole(engines) > 0


def test_windows_moving_apart_keep_the_run_exact(engines):
    """One core reads rows 2i and stores rows i of one tensor: the windows meet at some later
    block, where the checker's verdict on the pair is not the learned blocks' - the run is
    left exact."""
    def strider(x, n):
        t = Tile(TileType.Vec, float32, 1, T, addr=0)
        for i in range(n):
            TLOAD(t, GlobalTensor(x.data() + 2 * i * T, (1, T)))
            TSTORE(GlobalTensor(x.data() + i * T, (1, T)), t)

    rng = np.random.default_rng(0)
    n = 600
    same(None, (strider, None), dict(x=rint(rng, (2 * n * T, T)), n=n), engines, engaged=False, platform="a5",
         checks=True)
    assert engines[-1].blocks_skipped == 0 and "moving at different rates" in engines[-1].reason


def twin(out, fifo, n, at):
    """Both lanes pop the whole tile (a2a3 NO_SPLIT) and store it to the same rows: the same
    bytes (a warning, once) until iteration ``at``, where lane 1 adds 1 more (a race)."""
    pipe, _, part, o = lane(fifo, TILE_NO_SPLIT, (0, 1))
    sub = get_subblockid()
    for i in range(n):
        TPOP(pipe, part, TILE_NO_SPLIT)
        TADDS(o, part, 1.0)
        if i >= at:
            if sub == 1:
                TADDS(o, o, 1.0)
        TFREE(pipe, TILE_NO_SPLIT)
        TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), o)


@pytest.mark.parametrize("at", [350, 10**6], ids=["late", "never"])
def test_two_lanes_storing_one_window(engines, at):
    """Two cores' writes of one window, unordered: the checker calls them a warning while their
    bytes are the same and a race where they differ - a verdict on data, which recorded blocks
    do not see: with the checkers on, such a run is left exact."""
    rng = np.random.default_rng(7)
    n = 400
    args = dict(x=rint(rng, (n * T, T)), w=rint(rng, (T, T)), out=np.zeros((n * T, T), np.float32),
                fifo=ptopipe.gm_buffer(4 * SLOT), n=n, at=at, depth=4, split=TILE_NO_SPLIT, sync=None, peers=(0, 1))
    out = same(cube, (twin, twin), args, engines, engaged=False, platform="a2a3", checks=True)
    assert isinstance(out, DataRaceError) == (at < n)
    assert engines[0].blocks_skipped == 0 and "two GM windows meet" in engines[0].reason


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(300, 520), plat=st.sampled_from(["a2a3", "a5"]),
       split=st.sampled_from([TILE_UP_DOWN, TILE_NO_SPLIT]), bad=st.sampled_from([0, 1, 2, 3, 4]),
       at=st.integers(100, 530), extra=st.sampled_from([0, 0, 1]))
def test_checked_streams_equal_on_both_engines(engines, n, plat, split, bad, at, extra):
    engines.clear()
    run_checked(engines, plat, n, split, bad=bad if split == TILE_UP_DOWN or bad not in (1, 4) else 0, at=at,
                pops=n + extra, engaged=False)
