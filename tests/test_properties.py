"""Property tests (hypothesis): every fast path equals its slow path, runs repeat exactly,
and the checkers never change the data of a clean kernel.

* ``Core.issue_w/_r/_rw/_rrw/_s`` (fixed-arity hot forms) vs the general ``Core.issue``:
  same clock, pipe times, busy counts, scoreboard times, trace and budget error;
* the inline operand path of the ops (``tile._valid`` when the tile is plain and bound on
  the executing core) vs ``arr()``, the checked path;
* ``GlobalTensor.matrix`` (row-grid slices, cached per address) vs a generic strided view
  of the same bytes, reading and writing, random shapes / strides / offsets / dtypes;
* the same kernel run twice (and three times) in one process: identical outputs and trace;
* every reference scenario and DSL example variant: identical outputs with the checkers on
  and off, equal to the numpy golden - on one platform / protocol pair per variant, rotated
  so that every pair runs on some variants (:func:`configs.rotated`; PTOPIPE_FULL=1: every
  variant on every pair).
"""
from __future__ import annotations

import glob
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import ptopipe
from ptopipe import MemoryConflictError, PtoPipeError
from ptopipe.arch import MemSpace, PipeUnit
from ptopipe.driver.loader import load_scenarios
from ptopipe.isa import (TADD, TADDS, TASSIGN, TLOAD, TMOV, TMULS, TSTORE, GlobalTensor, GMPtr,
                         Tile, TileLayout, TileType, current_core, float16, float32, int32)
from ptopipe.isa import ops
from ptopipe.sim import Cluster
from ptopipe.sim.memory import Memory

from configs import rotated

ROOT = os.path.join(os.path.dirname(__file__), "..")
PROPS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                 suppress_health_check=list(HealthCheck))
PIPES = list(PipeUnit)


# -- Core.issue_* vs Core.issue ---------------------------------------------------------------
class _Operand:
    """What the scoreboard sees of a tile: when its data are ready and when reads end (and
    ``known_written``, the checkers' mark: None, as every tile's with the checkers off)."""
    __slots__ = ("ready_at", "read_end", "known_written")

    def __init__(self, ready_at, read_end):
        self.ready_at, self.read_end = ready_at, read_end
        self.known_written = None


_issue = st.tuples(st.sampled_from(["w", "r", "rw", "rrw", "s"]), st.sampled_from(PIPES),
                   st.integers(0, 50), st.lists(st.integers(0, 3), min_size=3, max_size=3),
                   st.integers(0, 30))


def _play(prog, operands, fast: bool, timing: bool, trace: bool, budget: int):
    cl = Cluster("a2a3", trace=trace, timing=timing, max_instructions=budget)
    core = cl.aiv0
    tiles = [_Operand(*o) for o in operands]
    ends, err = [], None
    try:
        for form, pipe, cost, idx, jump in prog:
            core.clock += jump                       # e.g. a WAIT held the issue clock
            a, b, c = (tiles[i] for i in idx)
            name, args = f"op_{form}", (form, cost)
            if fast:
                end = {"w": lambda: core.issue_w(pipe, cost, c, name, args),
                       "r": lambda: core.issue_r(pipe, cost, a, name, args),
                       "rw": lambda: core.issue_rw(pipe, cost, a, c, name, args),
                       "rrw": lambda: core.issue_rrw(pipe, cost, a, b, c, name, args),
                       "s": lambda: core.issue_s(pipe, cost, name, args)}[form]()
            else:
                srcs = {"w": (), "r": (a,), "rw": (a,), "rrw": (a, b), "s": ()}[form]
                dsts = (c,) if form in ("w", "rw", "rrw") else ()
                end = core.issue(pipe, cost, srcs, dsts, name, args)[1]
            ends.append(end)
    except PtoPipeError as e:
        err = (str(e.what), len(ends))
    return {"ends": ends, "err": err, "clock": core.clock, "pipe_free": list(core.pipe_free),
            "busy": list(core.busy), "instructions": core.instructions,
            "tiles": [(t.ready_at, t.read_end) for t in tiles],
            # (without ``loc``: the two forms are called from different lines of this file)
            "trace": cl.trace and [i._replace(loc=None) for i in cl.trace]}


@PROPS
@given(prog=st.lists(_issue, max_size=40),
       operands=st.lists(st.tuples(st.integers(0, 200), st.integers(0, 200)), min_size=4, max_size=4),
       timing=st.booleans(), trace=st.booleans(), budget=st.integers(1, 60))
def test_fixed_arity_issue_forms_equal_the_general_issue(prog, operands, timing, trace, budget):
    fast = _play(prog, operands, True, timing, trace, budget)
    slow = _play(prog, operands, False, timing, trace, budget)
    assert fast == slow


def test_issue_forms_property_can_fail(monkeypatch):
    """The comparison above sees a fast form that forgets the read-after-write wait."""
    from ptopipe.sim.core import Core

    def bad_issue_r(self, pipe, cost, s, name, args=None):
        return Core.issue_s(self, pipe, cost, name, args)
    prog = [("r", PipeUnit.V, 5, [0, 0, 0], 0)]
    good = _play(prog, [(100, 0)] * 4, True, True, True, 10)
    monkeypatch.setattr(Core, "issue_r", bad_issue_r)
    assert _play(prog, [(100, 0)] * 4, True, True, True, 10) != good


# -- the inline operand path vs arr() ---------------------------------------------------------------
_tile = st.tuples(st.sampled_from([float32, float16, int32]), st.integers(1, 16), st.integers(1, 32),
                  st.integers(0, 15), st.integers(0, 31), st.integers(0, 64))


def _check_operands(specs, reassign):
    seen = []

    def kernel():
        core = current_core()
        tiles = []
        for dt, r, c, dr, dc, slot in specs:
            vr, vc = max(1, r - dr), max(1, c - dc)
            t = Tile(TileType.Vec, dt, r, c, valid_rows=vr, valid_cols=vc, addr=slot * 2048)
            tiles.append(t)
        for k, t in enumerate(tiles):
            if k in reassign:
                TASSIGN(t, ((k * 7) % 64) * 2048)           # re-binding moves the views
                t.SetValid(t.valid_rows, max(1, t.valid_cols - 1))
            inline = ops._valid(t, core)
            checked = ops.arr(t, core)
            seen.append(inline is checked and inline.shape == (t.valid_rows, t.valid_cols)
                        and inline.dtype == t.dtype and inline.base is not None
                        and inline.__array_interface__["data"][0] ==
                        core.memory(MemSpace.UB).buf.__array_interface__["data"][0] + t.addr)
            # the data the ops read through either path are the same bytes
            TADDS(t, t, 1)
            assert np.array_equal(t.array, ops.arr(t, core))

    ptopipe.run(aiv=(kernel, None))
    return seen


@PROPS
@given(specs=st.lists(_tile, min_size=1, max_size=6), reassign=st.sets(st.integers(0, 5)))
def test_inline_operand_path_is_arr(specs, reassign):
    assert all(_check_operands(specs, reassign))


@PROPS
@given(dt=st.sampled_from([float32, int32]), rows=st.integers(1, 16), cols=st.integers(1, 32),
       vr=st.integers(1, 16), vc=st.integers(1, 32), s=st.integers(-3, 3))
def test_elementwise_inline_operands_compute_what_arr_sees(dt, rows, cols, vr, vc, s):
    """TADD / TMULS / TMOV through the inline path equal numpy on the arr() arrays."""
    assume(vr <= rows and vc <= cols)
    got = {}

    def kernel(x):
        core = current_core()
        # row-major tiles, as the row-major GM they load from (a one-column tile defaults to
        # DN, which pto-isa's TLOAD does not fill from an ND tensor)
        a = Tile(TileType.Vec, dt, rows, cols, valid_rows=vr, valid_cols=vc, addr=0x0, layout=TileLayout.ND)
        b = Tile(TileType.Vec, dt, rows, cols, valid_rows=vr, valid_cols=vc, addr=0x4000, layout=TileLayout.ND)
        d = Tile(TileType.Vec, dt, rows, cols, valid_rows=vr, valid_cols=vc, addr=0x8000, layout=TileLayout.ND)
        TLOAD(a, GlobalTensor(x.data(), (vr, vc), (32, 1)))
        TMULS(b, a, s)
        TADD(d, a, b)
        TMOV(b, d)
        core.cluster.sync()
        got["a"], got["d"], got["b"] = (ops.arr(t, core).copy() for t in (a, d, b))

    x = np.arange(16 * 32).reshape(16, 32).astype(dt) % 50
    ptopipe.run(aiv=(kernel, None), args=dict(x=x))
    a = x[:vr, :vc]
    assert np.array_equal(got["a"], a)
    assert np.array_equal(got["d"], a + a * dt.type(s) if dt != int32 else a + a * s)
    assert np.array_equal(got["b"], got["d"])


# -- GlobalTensor row-grid views vs the generic strided view ----------------------------------------
_DT = st.sampled_from([np.float32, np.float16, np.int8, np.int32])


@st.composite
def _gm_views(draw):
    """A 5-D GlobalTensor geometry whose outer dimensions may or may not merge into rows."""
    dt = np.dtype(draw(_DT))
    shape = [draw(st.integers(1, 3)) for _ in range(3)] + [draw(st.integers(1, 6)), draw(st.integers(1, 8))]
    col_stride = draw(st.sampled_from([1, 1, 1, 2]))
    row = shape[4] * col_stride + draw(st.integers(0, 4))
    st3 = row
    st2 = st3 * shape[3] + draw(st.sampled_from([0, 0, 3]))          # 3: not mergeable
    st1 = st2 * shape[2]
    st0 = st1 * shape[1] + draw(st.sampled_from([0, 0, 5]))
    stride = [st0, st1, st2, st3, col_stride]
    return dt, tuple(shape), tuple(stride)


def _generic(buf, addr, dt, shape, stride):
    """The bytes a view covers, element by element, without the GlobalTensor code."""
    idx = np.indices(shape).reshape(5, -1).T @ np.array(stride)
    return addr + idx * dt.itemsize


def _matrix_vs_generic(geom, offsets, gm_size, n_gms):
    dt, shape, stride = geom
    gms = [Memory(MemSpace.GM, gm_size) for _ in range(n_gms)]
    for k, g in enumerate(gms):
        g.buf[:] = np.random.default_rng(k).integers(0, 256, gm_size, dtype=np.uint8)
    gt = GlobalTensor(GMPtr(0, dt), shape, stride)
    rows, cols = shape[0] * shape[1] * shape[2] * shape[3], shape[4]
    for k, off in enumerate(offsets):
        gm = gms[k % n_gms]
        addr = off * dt.itemsize
        gt.assign(GMPtr(addr, dt))                         # the TALLOC / TPOP way of moving a view
        byte_addrs = _generic(gm.buf, addr, dt, shape, stride)
        inside = addr >= 0 and byte_addrs.max() + dt.itemsize <= gm_size
        if not inside:
            with pytest.raises(MemoryConflictError):
                gt.matrix(gm)
            continue
        v = gt.matrix(gm)
        elems = np.stack([gm.buf[byte_addrs + j] for j in range(dt.itemsize)], axis=1).copy().view(dt)
        flat = np.ascontiguousarray(v).reshape(-1)
        assert np.array_equal(flat.view(np.uint8), elems.reshape(-1).view(np.uint8))
        if v.ndim == 2:
            assert v.shape == (rows, cols)
        # writing through the view lands on exactly those bytes
        before = gm.buf.copy()
        new = (np.arange(v.size) % 97 + 1).astype(dt).reshape(v.shape)
        v[...] = new
        changed = np.flatnonzero(gm.buf != before)
        touched = set((byte_addrs[:, None] + np.arange(dt.itemsize)).reshape(-1).tolist())
        assert set(changed.tolist()) <= touched
        got = np.stack([gm.buf[byte_addrs + j] for j in range(dt.itemsize)], axis=1).copy().view(dt)
        assert np.array_equal(got.reshape(-1).view(np.uint8), new.reshape(-1).view(np.uint8))


_OFFSETS = st.lists(st.integers(-64, 3000), min_size=1, max_size=6)


@PROPS
@given(geom=_gm_views(), offsets=_OFFSETS, gm_size=st.sampled_from([4096, 8192]))
def test_global_tensor_matrix_equals_generic_view(geom, offsets, gm_size):
    """One GM; the view moved to random addresses (in and out of range)."""
    _matrix_vs_generic(geom, offsets, gm_size, 1)


@pytest.mark.parametrize("geom", [(np.dtype(np.float32), (1, 1, 1, 4, 8), (32, 32, 32, 8, 1)),
                                  (np.dtype(np.float16), (1, 1, 2, 3, 4), (64, 64, 32, 8, 2))])
def test_global_tensor_matrix_follows_the_gm_it_is_given(geom):
    """Two GMs used alternately (two runs in one process): each access sees its own GM."""
    _matrix_vs_generic(geom, [0, 0, 64, 64], 4096, 2)


# -- the same kernel run again in one process ----------------------------------------------------------
def _scenario_files():
    return sorted(glob.glob(os.path.join(ROOT, "examples", "scenarios", "s*.py")) +
                  glob.glob(os.path.join(ROOT, "examples", "dsl", "s*.py")))


SMALL = {"s2_cv_nosplit": {"M": 64}, "s7_long_stream": {"tiles": 40}}


def _small_variants():
    """``(scenario, variant, platform, protocol)`` of every variant, on the pairs
    :func:`configs.rotated` picks."""
    cases = [(sc, v) for f in _scenario_files() for sc in load_scenarios(f) for v in sc.variants]
    return [pytest.param(sc, v, platform, protocol, id=f"{sc.name}[{v}]-{platform}-{protocol}")
            for sc, v, platform, protocol in rotated(cases)]


def _run(sc, variant, platform, protocol, **kw):
    params = {**sc.params(variant), **SMALL.get(sc.name, {})}
    args = sc.make_args(np.random.default_rng(0), **params)
    res = ptopipe.run(sc.aic, sc.aiv, args, platform=platform, protocol=protocol, **kw)
    return res, sc.golden(args, **params)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("name", ["s1_cv_split", "s4_both_ways", "s5_subtile_gm", "dsl_s4_both_ways"])
def test_the_same_kernel_run_three_times_repeats_exactly(name, platform):
    (sc,) = [s for f in _scenario_files() for s in load_scenarios(f) if s.name == name]
    variant = next(iter(sc.variants))
    runs = [_run(sc, variant, platform, "spec", trace=True)[0] for _ in range(3)]
    for r in runs[1:]:
        assert r.cluster.trace == runs[0].cluster.trace and len(r.cluster.trace) > 0
        for k in runs[0].outputs:
            assert r.outputs[k].tobytes() == runs[0].outputs[k].tobytes(), k


def _reused_objects_kernel():
    """A kernel factory: the Tile and GlobalTensor objects are made once and reused by every
    run (notebooks, in-process sweeps)."""
    t = Tile(TileType.Vec, float32, 16, 16)
    view = GlobalTensor(float32, (16, 16))

    def vector(x, out):
        TASSIGN(t, 0x0)
        view.assign(x.data())
        TLOAD(t, view)
        TMULS(t, t, 2.0)
        TSTORE(out, t)
    return vector


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_objects_reused_by_a_second_run_see_that_runs_data(platform):
    vector = _reused_objects_kernel()
    for k in range(3):
        x = np.full((16, 16), float(k + 1), np.float32)
        res = ptopipe.run(aiv=(vector, None), args=dict(x=x, out=np.zeros((16, 16), np.float32)),
                          platform=platform)
        np.testing.assert_array_equal(res["out"], 2 * x)


# -- checkers on / off ------------------------------------------------------------------------------
@pytest.mark.parametrize("sc,variant,platform,protocol", _small_variants())
def test_checkers_on_and_off_give_identical_data(sc, variant, platform, protocol):
    on, expected = _run(sc, variant, platform, protocol, checks=True)
    off, _ = _run(sc, variant, platform, protocol, checks=False)
    assert set(on.outputs) == set(off.outputs)
    for k in on.outputs:
        assert on.outputs[k].tobytes() == off.outputs[k].tobytes(), k
    ptopipe.compare(on.outputs, expected, sc.rtol, sc.atol, f"{sc.name}[{variant}]")
    assert on.summary.cycles == off.summary.cycles
