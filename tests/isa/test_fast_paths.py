"""The simulator's replayed fast paths give exactly what the slow paths give.

The run's ``fast_paths`` switch turns them off together (TPUSH's queued copies per source
array, TPOP's re-binding to its next staging slot, the checked GM access's region and
location computed inline).  The same random per-tile
stream kernels run with the switches on and off must give the same outputs, cycles, full
traces and the same errors (class, message, line) - also for a misuse that appears only at
the Nth execution of an instruction site.  A checked run raises the collector's older
thresholds and gives the caller's back, whether it ends normally or with an error.
"""
import gc
import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ptopipe
import ptopipe.isa.pipe.ops as pipe_ops
from ptopipe.errors import DataRaceError, MemoryConflictError, PtoPipeError
from ptopipe.isa import *  # noqa: F403
from ptopipe.sim import cluster as cluster_mod
from ptopipe.sim.race import HappensBefore
from markers import line_of

ROOT = pathlib.Path(__file__).resolve().parents[2]

T = 16
DEPTH = 4


def _kernels(rows, cols, vrows, vcols, split, n, stride, bad_at):
    """A per-tile C2V stream: the Cube pushes from two Acc tiles in turn (one push/pop plan,
    two source arrays; one tile moves to another address half-way), each lane pops, scales and stores its part into rows of ``stride`` elements.
    The lanes store side by side (strided GM regions that interleave without overlapping);
    ``bad_at``: at that tile lane 1 stores where lane 0 does (a race, checkers on)."""
    slot = rows * cols * 4
    peers = (0, 1) if split != TILE_NO_SPLIT else (0,)
    lanes = len(peers)
    prow, pcol = (rows // 2, cols) if split == TILE_UP_DOWN else \
        (rows, cols // 2) if split == TILE_LEFT_RIGHT else (rows, cols)
    vprow, vpcol = (vrows // 2, vcols) if split == TILE_UP_DOWN else \
        (vrows, vcols // 2) if split == TILE_LEFT_RIGHT else (vrows, vcols)

    def cube(x, eye, fifo):
        pipe = TPipe(0, DIR_C2V, slot, DEPTH, peers=peers)(fifo, 0x0, 0)
        x_l1 = Tile(TileType.Mat, float32, rows, cols, addr=0x0, valid_rows=vrows, valid_cols=vcols)
        e_l1 = Tile(TileType.Mat, float32, cols, cols, addr=slot, valid_rows=vcols, valid_cols=vcols)
        x_l0 = Tile(TileType.Left, float32, rows, cols, addr=0x0, valid_rows=vrows, valid_cols=vcols)
        e_l0 = Tile(TileType.Right, float32, cols, cols, addr=0x0, valid_rows=vcols, valid_cols=vcols)
        accs = [Tile(TileType.Acc, float32, rows, cols, addr=k * slot, valid_rows=vrows, valid_cols=vcols)
                for k in range(2)]
        TLOAD(e_l1, GlobalTensor(eye.data(), (vcols, vcols), (cols, 1)))
        TMOV(e_l0, e_l1)
        src = GlobalTensor(x.data(), (vrows, vcols), (cols, 1))
        for i in range(n):
            if i == n // 2:
                TASSIGN(accs[0], 2 * slot)   # the same tile and plan, another source array
            src.assign(x.data() + i * rows * cols)
            TLOAD(x_l1, src)
            TMOV(x_l0, x_l1)
            TMATMUL(accs[i % 2], x_l0, e_l0)
            TPUSH(pipe, accs[i % 2], split)

    def vector(out, fifo, log):
        sub = get_subblockid()
        pipe = TPipe(0, DIR_C2V, slot, DEPTH, peers=peers)(fifo, 0x0, 0)
        # a popped tile has the shape of the pushed valid region's part
        part = Tile(TileType.Vec, float32, vprow, vpcol)
        o_ub = Tile(TileType.Vec, float32, prow, pcol, addr=0x10000, valid_rows=vprow, valid_cols=vpcol)
        dst = GlobalTensor(out.data(), (vprow, vpcol), (stride, 1))
        for i in range(n):
            TPOP(pipe, part, split)
            log.append((sub, part.addr, part.binding[1] if part.binding else None))   # where it landed
            TMULS(o_ub, part, 3.0)
            k = 0 if i == bad_at else sub
            dst.assign(out.data() + i * rows * stride + k * vpcol)   # lanes side by side in a row
            TSTORE(dst, o_ub)  # store
            TFREE(pipe, split)

    return cube, ((vector, vector) if lanes == 2 else (vector, None)), vector


def _run(fast, shapes, n, stride, checks, platform, protocol, bad_at=-1):
    rows, cols, vrows, vcols, split = shapes
    cube, aiv, _ = _kernels(rows, cols, vrows, vcols, split, n, stride, bad_at)
    rng = np.random.default_rng(n)
    x = rng.integers(-50, 50, (n * rows, cols)).astype(np.float32)
    args = dict(x=x, eye=np.eye(cols, dtype=np.float32), out=np.zeros(((n + 1) * rows, stride), np.float32),
                fifo=ptopipe.gm_buffer(DEPTH * rows * cols * 4), log=[])
    try:
        res = ptopipe.run(cube, aiv, args, checks=checks, platform=platform, protocol=protocol, trace=True,
                          fast_paths=fast)
    except PtoPipeError as e:
        return ("error", type(e).__name__, str(e), e.where)
    return ("ok", res.outputs["out"].tobytes(), res.summary.cycles, list(res.cluster.trace), args["log"])


@st.composite
def _shapes(draw):
    split = draw(st.sampled_from([TILE_NO_SPLIT, TILE_UP_DOWN, TILE_LEFT_RIGHT]))
    rows = draw(st.sampled_from([2, 4, 8, 16]))
    cols = draw(st.sampled_from([4, 8, 16]))
    vrows = draw(st.integers(1, rows // 2)) * 2 if split == TILE_UP_DOWN else draw(st.integers(1, rows))
    vcols = draw(st.integers(1, cols // 2)) * 2 if split == TILE_LEFT_RIGHT else draw(st.integers(1, cols))
    return rows, cols, vrows, vcols, split


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=_shapes(), n=st.integers(1, 7), extra=st.integers(0, 8), checks=st.booleans(),
       platform=st.sampled_from(["a2a3", "a5"]), protocol=st.sampled_from(["spec", "pto-isa"]),
       bad=st.integers(-1, 6))
def test_fast_paths_match_slow_paths(shapes, n, extra, checks, platform, protocol, bad):
    """Outputs, cycles, full traces and errors: identical with the fast paths on and off
    (random shapes, valid shapes, GM strides, splits, platforms, protocols, a race at a
    random tile)."""
    stride = 2 * shapes[1] + extra
    slow = _run(False, shapes, n, stride, checks, platform, protocol, bad)
    fast = _run(True, shapes, n, stride, checks, platform, protocol, bad)
    assert fast == slow
    if slow[0] == "ok" and bad < 0:
        rows, cols, vrows, vcols, split = shapes
        out = np.frombuffer(slow[1], np.float32).reshape(-1, stride)
        assert out.any() or vrows * vcols == 0 or platform == "a5" and split == TILE_NO_SPLIT
    # the same kernel again in this process: identical (no cache outlives its cluster)
    assert _run(True, shapes, n, stride, checks, platform, protocol, bad) == fast


@pytest.mark.parametrize("fast", [True, False])
def test_race_at_the_last_tile_is_reported_at_its_line(fast):
    """A misuse that appears only at the Nth execution of a site (the last tile's store goes
    to the other lane's rows): reported, at the TSTORE line, with the fast paths on or off."""
    shapes = (16, 16, 16, 16, TILE_UP_DOWN)
    r = _run(fast, shapes, 6, 32, True, "a2a3", "spec", bad_at=5)
    assert r[0] == "error" and r[1] == DataRaceError.__name__, r
    _, _, vector = _kernels(*shapes, 6, 32, 5)
    assert r[3].endswith(f":{line_of(vector, 'store')}"), r[3]
    assert "TSTORE" in r[2]
    assert _run(fast, shapes, 6, 32, True, "a2a3", "spec", bad_at=4)[0] == "error"
    assert _run(fast, shapes, 6, 32, True, "a2a3", "spec")[0] == "ok"


@pytest.mark.parametrize("fast", [True, False])
def test_out_of_bounds_store_at_the_last_tile(fast):
    """The GM view is built per address: a store past GM at the last tile only is caught at
    its line, after the earlier tiles went through the fast paths."""
    rows = cols = 8
    n = 5

    def cube(x, fifo):
        pipe = TPipe(0, DIR_C2V, rows * cols * 4, DEPTH, peers=(0,))(fifo, 0x0, 0)
        a = Tile(TileType.Mat, float32, rows, cols, addr=0)
        l0 = Tile(TileType.Left, float32, rows, cols, addr=0)
        r0 = Tile(TileType.Right, float32, cols, cols, addr=0)
        acc = Tile(TileType.Acc, float32, rows, cols, addr=0)
        TLOAD(a, GlobalTensor(x.data(), (rows, cols)))
        TMOV(l0, a)
        TMOV(r0, a)
        for i in range(n):
            TMATMUL(acc, l0, r0)
            TPUSH(pipe, acc)

    def vector(out, fifo):
        pipe = TPipe(0, DIR_C2V, rows * cols * 4, DEPTH, peers=(0,))(fifo, 0x0, 0)
        t = Tile(TileType.Vec, float32, rows, cols)
        dst = GlobalTensor(out.data(), (rows, cols))
        for i in range(n):
            TPOP(pipe, t)
            dst.assign(out.data() + i * rows * cols * (1 if i < n - 1 else 100))
            TSTORE(dst, t)  # oob
            TFREE(pipe)

    with pytest.raises(MemoryConflictError) as ei:
        ptopipe.run(cube, (vector, None), dict(x=np.ones((rows, cols), np.float32),
                                               out=np.zeros((n * rows, cols), np.float32),
                                               fifo=ptopipe.gm_buffer(DEPTH * rows * cols * 4)), fast_paths=fast)
    assert ei.value.where.endswith(f":{line_of(vector, 'oob')}")
    assert "GM" in str(ei.value)


@pytest.mark.parametrize("fast", [True, False])
def test_the_switch_chooses_the_paths(fast, monkeypatch):
    """``fast_paths=False`` really takes the reference paths (else the comparisons above
    would compare a path with itself): TPOP binds every staging slot anew and the checker's
    GM accesses go through HappensBefore.gm_access; with the fast paths on, neither after
    the first round of slots."""
    calls = {"bind": 0, "gm": 0}
    bind, gm = pipe_ops._bind_staging, HappensBefore.gm_access

    def counted_bind(*a):
        calls["bind"] += 1
        return bind(*a)

    def counted_gm(*a, **k):
        calls["gm"] += 1
        return gm(*a, **k)
    monkeypatch.setattr(pipe_ops, "_bind_staging", counted_bind)
    monkeypatch.setattr(HappensBefore, "gm_access", counted_gm)
    n = 3 * DEPTH
    res = _run(fast, (T, T, T, T, TILE_NO_SPLIT), n, T, True, "a2a3", "spec")
    assert res[0] == "ok", res
    if fast:
        assert calls["gm"] == 0 and 0 < calls["bind"] <= DEPTH, calls
    else:
        assert calls["bind"] == n and calls["gm"] >= 2 * n, calls


def test_checked_or_traced_run_raises_older_gc_thresholds_and_restores_them():
    seen = []

    def vec(out):
        seen.append(gc.get_threshold())
        TSTORE(GlobalTensor(out.data(), (1, 8)), Tile(TileType.Vec, float32, 1, 8, addr=0))

    def bad(out):
        seen.append(gc.get_threshold())
        TPOP(TPipe(0, DIR_C2V, 64, 2, peers=(0,))(out, 0x0, 0), Tile(TileType.Vec, float32, 1, 8))

    before = gc.get_threshold()
    try:
        gc.set_threshold(500, 7, 9)
        ptopipe.run(None, (vec, None), dict(out=np.zeros((1, 8), np.float32)))
        assert gc.get_threshold() == (500, 7, 9)
        with pytest.raises(PtoPipeError):
            ptopipe.run(None, (bad, None), dict(out=np.zeros((4, 8), np.float32)))
        assert gc.get_threshold() == (500, 7, 9)
        ptopipe.run(None, (vec, None), dict(out=np.zeros((1, 8), np.float32)), checks=False)
        assert gc.get_threshold() == (500, 7, 9)
        ptopipe.run(None, (vec, None), dict(out=np.zeros((1, 8), np.float32)), checks=False, trace=True)
        assert gc.get_threshold() == (500, 7, 9)
    finally:
        gc.set_threshold(*before)
    g = cluster_mod._GC_OLDER
    # unchanged without the checkers, raised again for a trace
    assert seen == [(500, g, g), (500, g, g), (500, 7, 9), (500, g, g)]


def test_overlapping_runs_in_two_threads_give_the_callers_thresholds_back():
    """Run A raises the thresholds, run B (another thread) starts while A runs and ends after
    it: when both ended the caller's thresholds are back (not the raised ones B found)."""
    import threading
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    errors = []

    def kernel(mine, other):
        def k(out):
            mine.set()
            other.wait(20)
            TSTORE(GlobalTensor(out.data(), (1, 8)), Tile(TileType.Vec, float32, 1, 8, addr=0))
        return k

    def run(k):
        try:
            ptopipe.run(None, (k, None), dict(out=np.zeros((1, 8), np.float32)))
        except Exception as e:          # (reported by the test below)
            errors.append(e)
    before = gc.get_threshold()
    try:
        gc.set_threshold(500, 7, 9)
        ta = threading.Thread(target=run, args=(kernel(a_in, b_in),))
        ta.start()
        assert a_in.wait(20)
        tb = threading.Thread(target=run, args=(kernel(b_in, a_out),))
        tb.start()
        ta.join(20)
        a_out.set()
        tb.join(20)
        assert not errors and not ta.is_alive() and not tb.is_alive()
        assert gc.get_threshold() == (500, 7, 9)
    finally:
        gc.set_threshold(*before)


def test_a_loop_of_checked_runs_does_not_keep_the_earlier_clusters():
    """The raised thresholds hold back the older collections only during a run: in a loop of
    runs (exploration, a sweep) each run's cluster - a cycle of cores, flags and memories -
    is collected a few runs later, not when some run happens to trigger an old collection."""
    import weakref

    from ptopipe.driver.loader import load_module
    sc = load_module(str(ROOT / "examples" / "scenarios" / "s7_long_stream.py")).SCENARIO
    alive = []
    res = None
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)           # (Python's default, a user's: the suite raises them)
    try:
        for seed in range(36):
            res, _ = sc.run("default", schedule_seed=seed)
            alive.append(weakref.ref(res.cluster))
    finally:
        gc.set_threshold(*before)
    kept = sum(r() is not None for r in alive)
    assert res.cluster is alive[-1]()
    assert kept <= 16, f"{kept} of 36 clusters still alive"     # (all 36 before)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([(8, 1), (1, 8), (8, 16), (4, 4)]),
                          st.sampled_from(["nd", "dn", "strided"]),
                          st.sampled_from(list(TileLayout))), min_size=1, max_size=6))
def test_a_tensors_remembered_gm_layout_is_gm_layouts_answer(moves):
    """GlobalTensor.layout_for remembers its answer for the tile layout it last moved with (a
    tensor's shape and strides are fixed): every answer, alternating layouts included, is the
    one arch.vocab.gm_layout gives."""
    from types import SimpleNamespace

    from ptopipe.arch.vocab import gm_layout
    made = {}
    for (rows, cols), order, tl in moves:
        stride = {"nd": (cols, 1), "dn": (1, rows), "strided": (2 * cols, 1)}[order]
        key = (rows, cols, order)
        g = made.setdefault(key, GlobalTensor(float32, (1, 1, 1, rows, cols), (1, 1, 1) + stride))
        assert g.layout_for(SimpleNamespace(layout=tl)) is gm_layout(rows, cols, *stride, tl)
