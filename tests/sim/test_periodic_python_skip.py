"""The periodic engine takes blocks of a Python kernel's loops whole: a ``for i in range(n)``
whose body is instructions and integer arithmetic affine in ``i`` (ptopipe.isa.skip) is
rewritten to offer the engine its heads, the cores park there and skip whole blocks of
iterations without running them.  Every run here is made on both engines and must give the
same outputs, cycles, summary and errors at the same lines (``same``)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ptopipe
from ptopipe.errors import PtoPipeError
from ptopipe.isa import *  # noqa: F403
from markers import line_of
from test_periodic import SLOT, T, _c2v_pipe, c2v_cube as cube, rint, same  # noqa: F401
from test_periodic import engines  # noqa: F401  (the fixture)
from test_periodic_skip import whole


def lane(fifo, split, peers=None):
    """A Vector lane's C2V ring (depth 4), its rows of a tile, the tile it pops into and its
    result tile."""
    rows = T // 2 if split == TILE_UP_DOWN else T
    return (_c2v_pipe(fifo, 4, split, None, peers), rows, Tile(TileType.Vec, float32, rows, T),
            Tile(TileType.Vec, float32, rows, T, addr=0))


def vector(out, fifo, pops, split, pitch, flip, step):
    """Pops ``pops`` tiles, adds 1, stores lane rows ``pitch`` apart (``step`` rows a tile: a
    Python int, or a numpy one); from iteration ``flip`` on, adds 1 more."""
    pipe, rows, part, o = lane(fifo, split)
    sub = get_subblockid()
    for i in range(pops):
        TPOP(pipe, part, split)
        TADDS(o, part, 1.0)
        TFREE(pipe, split)
        if i >= flip:
            TADDS(o, o, 1.0)
        row = i * step + sub * rows
        TSTORE(GlobalTensor(out.data() + row * T, (rows, T)), o)  # py store


def run_both(made, plat, n, split=TILE_UP_DOWN, seed=3, engaged=True, out_rows=None, pops=None, pitch=T,
             flip=None, step=None):
    rng = np.random.default_rng(seed)
    pops = n if pops is None else pops
    rows = n * T if out_rows is None else out_rows
    args = dict(x=rint(rng, (n * T, T), -3, 4), w=rint(rng, (T, T), -3, 4), out=np.zeros((rows, T), np.float32),
                fifo=ptopipe.gm_buffer(4 * SLOT), n=n, pops=pops, split=split, pitch=pitch, depth=4, sync=None,
                flip=pops if flip is None else flip, step=pitch if step is None else step)
    lanes_fn = (vector, vector) if split == TILE_UP_DOWN else (vector, None)
    res = same(cube, lanes_fn, args, made, engaged=engaged, platform=plat)
    return res, (args["x"].reshape(-1, T, T) @ args["w"]).reshape(-1, T) + 1


@pytest.mark.parametrize("plat,split", [("a2a3", TILE_UP_DOWN), ("a5", TILE_NO_SPLIT)])
def test_python_stream_taken_whole(engines, plat, split):
    """The blocks but the first few and the last few are taken whole, with the exact run's
    outputs and cycles."""
    res, want = run_both(engines, plat, 500, split)
    assert np.array_equal(res.outputs["out"], want)
    ff = engines[-1]
    assert ff.whole > 0.8 * ff.blocks_skipped


@pytest.mark.parametrize("short", [40, 115])
def test_window_leaves_its_tensor_late(engines, short):
    """``out`` has ``short`` tiles fewer than the loop stores: recording stops 64 iterations
    before the first store past its end, which raises at its line, on the lane, as in the
    exact run (115: the lane the exact run names is not the one recording would reach
    first)."""
    n = 600
    err, _ = run_both(engines, "a5", n, out_rows=(n - short) * T)
    assert isinstance(err, PtoPipeError) and "out of bounds" in str(err)
    assert err.where.endswith(f"test_periodic_python_skip.py:{line_of(vector, 'py store')}")
    assert whole(engines) > 0 and "leaves its tensor within 64 iterations" in engines[0].reason


def aliased(out, fifo, pops, split):
    """Stores through ``alias``, the tensor ``dst.assign`` moves after the store: each store
    uses the window the iteration before set."""
    pipe, rows, part, o = lane(fifo, split)
    dst = GlobalTensor(out.data(), (rows, T))
    alias = dst
    for i in range(pops):
        TPOP(pipe, part, split)
        TADDS(o, part, 1.0)
        TFREE(pipe, split)
        TSTORE(alias, o)
        dst.assign(out.data() + (i + 1) * T * T)


OP = TADDS


def through_a_global(out, fifo, pops, split):
    pipe, rows, part, o = lane(fifo, split)
    for i in range(pops):
        TPOP(pipe, part, split)
        OP(o, part, 1.0)
        TFREE(pipe, split)
        TSTORE(GlobalTensor(out.data() + i * T * T, (rows, T)), o)


def _stream_args(n, seed=4):
    rng = np.random.default_rng(seed)
    return dict(x=rint(rng, (n * T, T), -3, 4), w=rint(rng, (T, T), -3, 4), out=np.zeros(((n + 1) * T, T), np.float32),
                fifo=ptopipe.gm_buffer(4 * SLOT), n=n, pops=n, split=TILE_NO_SPLIT, depth=4, sync=None)


def test_a_tensor_the_body_sets_read_through_an_alias(engines):
    """The loop reads ``alias``, the object ``dst.assign`` sets: what an earlier iteration
    set, which a skip would not move - such a loop is recorded, not taken whole."""
    same(cube, (aliased, None), _stream_args(500), engines, platform="a5")
    assert engines[-1].blocks_skipped > 0 and whole(engines) == 0


def test_a_global_rebound_between_runs(engines, monkeypatch):
    """What the loop calls is looked up again when a name it read names something else: a
    helper of the kernel's own (it logs) is not an instruction, and runs every iteration."""
    same(cube, (through_a_global, None), _stream_args(500), engines, platform="a5")
    assert whole(engines) > 0
    calls = []

    def logged(*a):
        calls.append(1)
        return TADDS(*a)
    monkeypatch.setitem(globals(), "OP", logged)
    engines.clear()
    ptopipe.run(cube, (through_a_global, None), _stream_args(500), checks=False, engine="periodic", platform="a5")
    assert len(calls) == 500 and whole(engines) == 0


def test_deadlock_after_blocks_taken_whole(engines):
    err, _ = run_both(engines, "a2a3", 600, pops=601)
    assert isinstance(err, ptopipe.DeadlockError)
    assert whole(engines) > 0


def test_guard_flipping_late(engines):
    """``if i >= flip``: taken whole up to the flip, the blocks after it learned again."""
    n = 800
    res, want = run_both(engines, "a2a3", n, flip=n - 150)
    want[(n - 150) * T:] += 1
    assert np.array_equal(res.outputs["out"], want) and whole(engines) > 0


@pytest.mark.parametrize("step", [np.int64(T), float(T)], ids=["numpy-int", "float"])
def test_values_that_are_not_python_ints(engines, step):
    """A numpy integer wraps, a float rounds: a loop whose moving value is multiplied by one
    is recorded call by call, never taken whole (``x.data() + row * T`` takes either)."""
    res, want = run_both(engines, "a5", 500, step=step)
    assert np.array_equal(res.outputs["out"], want)
    assert engines[-1].blocks_skipped > 0 and whole(engines) == 0


def test_racing_windows_are_run_exactly(engines):
    """Rows 6 apart, 8 tall: each lane's window meets the other's (a race the checkers
    report): the run is left exact."""
    run_both(engines, "a2a3", 500, pitch=6, out_rows=500 * 6 + T, engaged=False)
    assert engines[-1].blocks_skipped == 0 and "windows meet" in engines[-1].reason


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(300, 520), plat=st.sampled_from(["a2a3", "a5"]),
       split=st.sampled_from([TILE_UP_DOWN, TILE_NO_SPLIT]), short=st.one_of(st.none(), st.integers(1, 60)),
       extra=st.sampled_from([0, 0, 1]), flip=st.integers(100, 530))
def test_python_streams_equal_on_both_engines(engines, n, plat, split, short, extra, flip):
    """Random lengths, platforms, splits, outputs short by a few tiles, one pop more than
    pushed, a guard flipping anywhere: the periodic run (taking blocks whole) is the exact run."""
    engines.clear()
    run_both(engines, plat, n, split, seed=n, engaged=False, pops=n + extra, flip=flip,
             out_rows=None if short is None else (n - short) * T)
