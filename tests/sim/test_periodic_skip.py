"""The periodic engine takes blocks of a ``pl`` kernel whole: once its calls are proven to
repeat and every core's loop is shift-equivariant (ptopipe.runtime.skip), the cores park at
their loops' heads and skip whole blocks of iterations without running them
(FastForward.head).  Every run here is made on both engines and must give the same outputs,
cycles, summary and errors at the same lines (``same``); ``whole`` is how many blocks the
periodic run took whole."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ptopipe
import ptopipe.language as pl
from ptopipe.errors import PtoPipeError
from ptopipe.runtime import KernelSet
from markers import line_of
from test_periodic import T, _fields, engines, rint, same  # noqa: F401  (engines: the fixture)


def stream(n, split, out_rows=None, columns=False, lag=0, pops=None, guard=None, flip=None, pitch=T):
    """The Cube's product of each input tile, plus 1 on the Vector side, stored tile by tile:
    ``out_rows`` rows of output (fewer than the loop stores: a window leaves the tensor),
    tiles laid along the columns (``columns``, UP_DOWN: a window can leave its row while its
    bytes are still inside the tensor), the store ``lag`` tiles behind the load, the Vector side
    popping ``pops`` tiles (more than pushed: the run deadlocks at its end), its store under
    a branch on the loop variable (``guard``: "always" taken, a comparison; "truthy", the
    variable's value; "late", a comparison whose truth flips at iteration ``flip``, 150 before
    the end unless given, after which the tile is stored plus 1 more), the rows ``pitch``
    apart (less than T: a lane's window meets the other lane's of the iteration before, a
    race)."""
    h = T // 2 if split == pl.TILE_UP_DOWN else T
    band = h if split == pl.TILE_UP_DOWN else n * T         # (NO_SPLIT: each lane its own copy)
    rows = (n * T if split == pl.TILE_UP_DOWN else 2 * n * T) if out_rows is None else out_rows
    pops = n if pops is None else pops
    nrows, ncols = (2 * T, rows) if columns else (rows, T)      # (columns: rows below the windows)
    kind = {None: 0, "always": 1, "truthy": 2, "late": 3}[guard]     # (kernels take no strings)
    flip = pops - 150 if flip is None else flip

    @pl.aiv
    def vector(out: pl.Tensor[[nrows, ncols], pl.f32],
               fifo: pl.Tensor[[4 * T * T * 4], pl.u8]):
        buf = pl.reserve_buffer(name="c2v_slot_buffer", size=4 * T * T * 4, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, T * T * 4, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=4)
        sub = pl.get_subblockid()
        size = nrows * ncols            # (names the closure's shape for the annotation)
        for i in pl.range(pops):
            part = pl.TPOP(buf, pl.Tile[[h, T], pl.f32, pl.Vec], split=split)
            o = pl.adds(part, 1.0)
            pl.TFREE(buf)
            if columns:
                pl.store(o, [sub * h, (i - lag) * T + lag * T], out)  # skip store
            elif kind == 1:
                if i >= 0:
                    pl.store(o, [i * pitch + sub * band, 0], out)
            elif kind == 2:
                if i + 1:
                    pl.store(o, [i * T + sub * band, 0], out)
            elif kind == 3:
                if i < flip:
                    pl.store(o, [i * pitch + sub * band, 0], out)
                else:
                    pl.store(pl.adds(o, 1.0), [i * pitch + sub * band, 0], out)
            else:
                pl.store(o, [i * pitch + sub * band, 0], out)  # skip row store

    @pl.aic
    def cube(a: pl.Tensor[[n * T, T], pl.f32], b: pl.Tensor[[T, T], pl.f32], fifo: pl.Tensor[[4 * T * T * 4], pl.u8]):
        peer = pl.import_peer_buffer(name="c2v_slot_buffer", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, T * T * 4, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                               slot_num=4)
        right = pl.move(pl.load(b, [0, 0], [T, T], space=pl.Mat), space=pl.Right)
        for i in pl.range(n):
            left = pl.move(pl.load(a, [i * T, 0], [T, T], space=pl.Mat), space=pl.Left)
            pl.TPUSH(pl.matmul(left, right), peer, split=split)
    return pl.program(cube, vector, name="skip_stream")


def run_both(made, plat, n, split=pl.TILE_UP_DOWN, seed=5, engaged=True, **kw):
    ks = KernelSet(stream(n, split, **kw))
    rng = np.random.default_rng(seed)
    a, b = rint(rng, (n * T, T), -3, 4), rint(rng, (T, T), -3, 4)
    lanes = 1 if split == pl.TILE_UP_DOWN else 2
    rows = lanes * n * T if kw.get("out_rows") is None else kw["out_rows"]
    out = np.zeros((2 * T, rows) if kw.get("columns") else (rows, T), np.float32)
    args = dict(a=a, b=b, out=out, fifo=ptopipe.gm_buffer(4 * T * T * 4))
    res = same(ks.aic, ks.aiv, args, made, engaged=engaged, platform=plat)
    return res, np.vstack([a @ b + 1] * lanes)


def whole(made) -> int:
    return sum(f.whole for f in made)


# (NO_SPLIT with both lanes popping their own copy: A2A3's; on A5 a NO_SPLIT pipe has one lane)
@pytest.mark.parametrize("plat,split", [("a2a3", pl.TILE_UP_DOWN), ("a5", pl.TILE_UP_DOWN),
                                        ("a2a3", pl.TILE_NO_SPLIT)])
def test_stream_taken_whole(engines, plat, split):
    """The run's blocks but the first few and the last few are taken whole, with the exact
    run's outputs and cycles."""
    res, want = run_both(engines, plat, 500, split)
    assert np.array_equal(res.outputs["out"], want)
    ff = engines[-1]
    assert ff.whole > 0.8 * ff.blocks_skipped and ff.report().whole == ff.whole


@pytest.mark.parametrize("plat", ["a2a3", "a5"])
def test_window_leaves_its_tensor_late(engines, plat):
    """``out`` has 40 tiles fewer than the loop stores: the skip stops short of the first
    store past its end, which raises at its line as in the exact run."""
    n = 500
    err, _ = run_both(engines, plat, n, out_rows=(n - 40) * T)
    assert isinstance(err, PtoPipeError) and "out of bounds" in str(err)
    assert f"test_periodic_skip.py:{line_of(stream, 'skip row store')}:" in err.where
    assert whole(engines) > 0


def test_window_leaves_its_row_late(engines):
    """Tiles along the columns of a (2T, W) output: the window past the last column still has
    its bytes inside the tensor (the rows below), but leaves its row - where the exact run
    raises, not later."""
    n = 500
    err, _ = run_both(engines, "a2a3", n, columns=True, out_rows=(n - 40) * T)
    assert isinstance(err, PtoPipeError) and "out of bounds" in str(err)
    assert f"test_periodic_skip.py:{line_of(stream, 'skip store')}:" in err.where
    assert whole(engines) > 0


def test_deadlock_after_blocks_taken_whole(engines):
    """The Vector side pops one tile more than the Cube pushes: after the blocks taken whole
    the run deadlocks at the last TPOP, as the exact one does."""
    err, _ = run_both(engines, "a5", 600, pops=601)
    assert isinstance(err, ptopipe.DeadlockError)
    assert whole(engines) > 0


def test_columns_taken_whole(engines):
    """Windows moving along the columns, their offset written with a shift that cancels:
    taken whole."""
    n = 500
    res, want = run_both(engines, "a2a3", n, columns=True, lag=3)
    assert np.array_equal(res.outputs["out"][:T], np.hstack([want[k * T:(k + 1) * T] for k in range(n)]))
    assert whole(engines) > 0


def test_guarded_branches_taken_whole(engines):
    """A branch on a comparison of the loop variable: taken whole while the comparison keeps
    its truth - always, or up to the iteration where it flips (the exact run's results after
    it: the blocks after the flip are learned again)."""
    res, want = run_both(engines, "a5", 500, guard="always")
    assert np.array_equal(res.outputs["out"], want) and whole(engines) > 0
    n = 800
    res, want = run_both(engines, "a2a3", n, guard="late")
    want[(n - 150) * T:] += 1
    assert np.array_equal(res.outputs["out"], want) and whole(engines) > 0


@pytest.mark.parametrize("guard", [None, "late"])
def test_racing_windows_are_run_exactly(engines, guard):
    """Rows 6 apart, 8 tall: each lane's window meets the other lane's of the iteration before
    (a race the checkers report; which write lands last is the exact run's order, which
    recording does not keep - nor parking, nor the calls re-made after a cut): the run is
    left exact, the same bytes with or without a guard flipping late."""
    run_both(engines, "a2a3", 500, guard=guard, pitch=6, engaged=False)
    assert engines[-1].blocks_skipped == 0 and "windows meet" in engines[-1].reason


def test_branch_on_a_number_is_recorded_not_taken_whole(engines):
    """A branch on the variable's value (not a comparison): recorded call by call, none of
    its blocks taken whole."""
    res, want = run_both(engines, "a5", 500, guard="truthy")
    assert np.array_equal(res.outputs["out"], want)
    assert engines[-1].blocks_skipped > 0 and whole(engines) == 0


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(300, 520), plat=st.sampled_from(["a2a3", "a5"]),
       split=st.sampled_from([pl.TILE_UP_DOWN, pl.TILE_NO_SPLIT]), columns=st.booleans(),
       short=st.one_of(st.none(), st.integers(1, 60)), extra=st.sampled_from([0, 0, 1]),
       guard=st.sampled_from([None, "always", "late"]), flip=st.integers(100, 520))
def test_streams_equal_on_both_engines(engines, n, plat, split, columns, short, extra, guard, flip):
    """Random stream lengths, platforms, splits, layouts, outputs short by a few tiles, a
    Vector side popping one more than pushed, a branch on a comparison that flips anywhere:
    the periodic run (taking blocks whole) is the exact run."""
    engines.clear()
    split = pl.TILE_UP_DOWN if columns else split
    run_both(engines, plat, n, split, seed=n, engaged=False, columns=columns,
             out_rows=None if short is None else (n - short) * T, pops=n + extra, guard=guard, flip=flip)


# ============================================================================ .pto text
PTO_STREAM = pathlib.Path(__file__).parent.parent / "pto" / "i32_trip_count_a3.pto"
_VEC_STORE = ("      %po = pto.partition_view %ov, offsets = [%row, %c0], sizes = [%c8, %c16] : "
              "!pto.tensor_view<?x16xf32> -> !pto.partition_tensor_view<8x16xf32>\n"
              "      pto.tstore ins(%t : !pto.tile_buf<vec, 8x16xf32>) outs(%po : !pto.partition_tensor_view<8x16xf32>)\n")


def pto_both(made, n, view_rows=None, guard=None, flip=None):
    """ptoas's spelling of the C2V stream (tests/pto/i32_trip_count_a3.pto) with ``n`` tiles,
    its output view ``view_rows`` rows (fewer: the last windows leave it, which the run
    warns of), its store under an ``scf.if`` on the induction variable: ``guard`` "cmpi" (a
    comparison, true from iteration ``flip`` on: from then on the tile is stored plus 1),
    "select" (the same comparison choosing the row through an ``arith.select``) or "i8" (the
    induction variable cast to i8, which wraps at 128, compared with 100: plus 1 where it is
    below)."""
    from ptopipe.codegen.pto_exec.launch import prepare
    text = PTO_STREAM.read_text()
    assert text.count(_VEC_STORE) == 1
    cube, vec = text.split("func.func private @vector")
    cube = cube.replace("%c64 = arith.constant 64 : index", f"%c64 = arith.constant {n * 16} : index")
    rows = n * 16 if view_rows is None else view_rows
    vec = vec.replace("%c64 = arith.constant 64 : index", f"%c64 = arith.constant {rows} : index")
    inner = _VEC_STORE.replace("\n      ", "\n        ").replace("      %po", "        %po", 1)
    plus1 = ("        pto.tadds ins(%t, %one : !pto.tile_buf<vec, 8x16xf32>, f32) "
             "outs(%t : !pto.tile_buf<vec, 8x16xf32>)\n")
    if guard is not None:
        vec = vec.replace("    %sub = pto.get_subblockid -> index\n", "    %sub = pto.get_subblockid -> index\n"
                          f"    %flip = arith.constant {flip or 0} : index\n    %one = arith.constant 1.0 : f32\n")
        test = "      %g = arith.cmpi sge, %i, %flip : index\n"
    if guard == "cmpi":
        vec = vec.replace(_VEC_STORE, test + "      scf.if %g {\n" + plus1 + inner + "      } else {\n" + inner
                          + "      }\n")
    elif guard == "i8":
        test = ("      %i8 = arith.index_cast %i : index to i8\n      %h8 = arith.constant 100 : i8\n"
                "      %g = arith.cmpi slt, %i8, %h8 : i8\n")
        vec = vec.replace(_VEC_STORE, test + "      scf.if %g {\n" + plus1 + inner + "      } else {\n" + inner
                          + "      }\n")
    elif guard == "select":
        vec = vec.replace(_VEC_STORE, test + "      %rs = arith.select %g, %row, %row : index\n"
                          + _VEC_STORE.replace("offsets = [%row,", "offsets = [%rs,"))
    text = cube + "func.func private @vector" + vec
    rng = np.random.default_rng(n)
    a, b = rng.integers(-3, 4, (n * 16, 16)).astype(np.float16), rng.integers(-3, 4, (16, 16)).astype(np.float16)
    runs = []
    for engine in ("exact", "periodic"):
        made.clear()
        launch = prepare(text=text, inputs=dict(a=a, b=b, out=np.zeros((n * 16, 16), np.float32), n=n))
        res = ptopipe.run(launch.aic, launch.aiv, launch.args, checks=False, engine=engine,
                          platform=launch.platform)
        runs.append((res.outputs["out"].tobytes(), _fields(res.summary), list(launch.run_warnings)))
    assert runs[0] == runs[1]
    want = a.astype(np.float32) @ b.astype(np.float32)
    if guard == "i8":
        want += np.repeat(np.arange(n).astype(np.int8) < 100, 16)[:, None]
    else:
        want[(flip or n) * 16:] += 1
    assert np.array_equal(res.outputs["out"].reshape(n * 16, 16), want)
    return runs[0][2]


def test_pto_stream_taken_whole(engines):
    pto_both(engines, 600)
    assert whole(engines) > 0.8 * engines[-1].blocks_skipped


@pytest.mark.parametrize("n,short", [(600, 40), (400, 30)])
def test_pto_window_leaves_its_view_late(engines, n, short):
    """The output view is ``short`` tiles short of the loop's windows: each window past it is
    a warning (the run, as the device, uses the memory there), made where the exact run makes
    it - the skip stops short of them - and listed in the order of the simulated time the
    lanes met them at (not the order the cores ran in)."""
    rows = (n - short) * 16
    warned = pto_both(engines, n, view_rows=rows)
    assert len(warned) == short * 2 and all(f"leave the view's shape [{rows}, 16]" in w for w in warned)
    assert whole(engines) > 0


def test_pto_warnings_while_recording(engines):
    """A loop recorded, not taken whole (its row goes through an ``arith.select``), whose
    windows leave the output view from iteration 120 on: the run's warnings are listed by the
    simulated time the lanes met them at, which a recorded call does not keep - each is made
    on the exact state (the recording stops there), so the list is the exact run's."""
    warned = pto_both(engines, 150, view_rows=120 * 16, guard="select")
    assert len(warned) == 60 and engines[-1].blocks_skipped > 0


@pytest.mark.parametrize("n,short", [(400, 30), (500, 20)])
def test_pto_warnings_in_simulated_time_order(engines, n, short):
    """The stream's output view ``short`` tiles short, each lane storing its half: the run's
    warnings (a window past the view, per lane and tile) are listed in the order of the
    simulated time the lanes met them at, which the exact engine and the cut after blocks
    taken whole agree on - not the order the cores ran in."""
    from pto_streams import pto_stream
    from ptopipe.codegen.pto_exec.launch import prepare
    text = pto_stream(n, view_rows=(n - short) * 16)
    x = np.random.default_rng(n).integers(-3, 4, (n * 16, 16)).astype(np.float32)
    got = []
    for engine in ("exact", "periodic"):
        launch = prepare(text=text, inputs=dict(x=x, eye=np.eye(16, dtype=np.float32), out=np.zeros_like(x), n=n))
        res = ptopipe.run(launch.aic, launch.aiv, launch.args, checks=False, engine=engine, platform=launch.platform)
        got.append((res.outputs["out"].tobytes(), list(launch.run_warnings)))
    assert got[0] == got[1] and len(got[0][1]) == 2 * short
    assert whole(engines) > 0


@pytest.mark.parametrize("n,view_short,short", [(500, 40, 10), (600, 30, 5)])
def test_pto_failing_run_warns_as_the_exact_run(engines, n, view_short, short):
    """The view ``view_short`` tiles short, the argument ``short``: warnings, then a window past
    the argument - the failing run is made again exactly, and the warnings the first run
    found go with it: the error and the warnings are the exact run's."""
    from pto_streams import pto_stream
    from ptopipe.codegen.pto_exec.launch import prepare
    text = pto_stream(n, view_rows=(n - view_short) * 16)
    x = np.random.default_rng(n).integers(-3, 4, (n * 16, 16)).astype(np.float32)
    got = []
    for engine in ("exact", "periodic"):
        launch = prepare(text=text, inputs=dict(x=x, eye=np.eye(16, dtype=np.float32),
                                                out=np.zeros(((n - short) * 16, 16), np.float32), n=n))
        with pytest.raises(PtoPipeError) as e:
            ptopipe.run(launch.aic, launch.aiv, launch.args, checks=False, engine=engine, platform=launch.platform)
        got.append((str(e.value), list(launch.run_warnings)))
    assert got[0] == got[1] and any(f.blocks_skipped for f in engines)


def test_pto_guarded_branch_taken_whole(engines):
    """An scf.if on a comparison of the induction variable that flips 150 iterations before
    the end: taken whole up to the flip, the exact run's results after it."""
    pto_both(engines, 600, guard="cmpi", flip=450)
    assert whole(engines) > 0


def test_pto_guard_on_a_value_that_wraps(engines):
    """The induction variable cast to i8 wraps at 128: the guard on it is true again from
    there, which the skip stops short of (the cast is a term kept inside its type)."""
    pto_both(engines, 600, guard="i8")
    assert whole(engines) > 0


def test_pto_comparison_through_a_select_is_recorded_not_taken_whole(engines):
    pto_both(engines, 400, guard="select")
    assert engines[-1].blocks_skipped > 0 and whole(engines) == 0
