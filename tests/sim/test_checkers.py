"""The checkers: happens-before races on exact bytes, protocol misuse at the offending
instruction, schedule exploration, and no false positives on the reference scenarios."""
import dataclasses
import glob
import os
import re

import numpy as np
import pytest

import ptopipe
from ptopipe import DataRaceError, ProtocolError
from ptopipe.driver.loader import load_scenarios
from ptopipe.isa import *
from ptopipe.isa.explore import explore, run_schedule
from ptopipe.sim.race import overlap, region_of_rows

from configs import rotated

HERE = os.path.dirname(__file__)
ROOT = os.path.join(HERE, "..", "..")

def marker_line(marker: str, path: str = __file__) -> int:
    """The one line of ``path`` that carries the comment ``# <- <marker>``."""
    with open(path) as f:
        hits = [i for i, ln in enumerate(f, 1) if re.search(rf"# <- {re.escape(marker)}\b", ln)]
    assert len(hits) == 1, (marker, hits)
    return hits[0]


def assert_where(err, marker: str, path: str = __file__) -> None:
    """``err.where`` is exactly ``path:<the line marked '# <- marker'>`` (followed by the kernel
    lines that called it when that line is in a function the kernel calls) and the message
    says so."""
    file, _, line = (err.where or "").split(" (called from ", 1)[0].rpartition(":")
    assert file and os.path.samefile(file, path), (err.where, str(err))
    assert int(line) == marker_line(marker, path), (err.where, str(err))
    assert f"{os.path.basename(path)}:{line}" in str(err)


# one small variant per reference scenario (overrides of its make_args parameters)
SMALL = {"s1_cv_split": [("f32_lr_d1_m32", {}), ("f32_ud_d4_m32", {})],
         "s2_cv_nosplit": [("f32_d2_m16_n32", {})],
         "s3_vc_dequant": [("int8_ud_k64_n32", {})],
         "s4_both_ways": [("lr", {})],
         "s5_subtile_gm": [("default", {})],
         "s6_stream_both": [("default", {})],
         "s7_long_stream": [("default", {"tiles": 20}), ("bi", {"tiles": 20})]}


def _scenarios():
    """Each small variant on one platform / protocol pair, rotated (:func:`configs.rotated`:
    every pair runs on some of them; PTOPIPE_FULL=1: each variant on every pair)."""
    cases = []
    for f in sorted(glob.glob(os.path.join(ROOT, "examples", "scenarios", "s*.py"))):
        for sc in load_scenarios(f):
            for variant, over in SMALL.get(sc.name, [(next(iter(sc.variants)), {})]):
                assert variant in sc.variants, f"{sc.name} has no variant {variant!r}: update SMALL"
                cases.append((sc, variant, over))
    return [pytest.param(sc, variant, over, plat, proto, id=f"{sc.name}[{variant}]-{plat}-{proto}")
            for sc, variant, over, plat, proto in rotated(cases)]


@pytest.mark.parametrize("sc,variant,over,platform,protocol", _scenarios())
@pytest.mark.usefixtures("every_schedule")
def test_reference_scenarios_pass_20_schedules(sc, variant, over, platform, protocol):
    # (benchmarks/schedules.py runs every example under 200 schedules per policy)
    small = dataclasses.replace(sc, variants={"small": {**sc.variants[variant], **over}})
    res = explore(small, schedules=20, seed=0, variant="small", platform=platform, protocol=protocol)
    assert res.ok, res.first[1]
    assert res.runs == res.passed == 21


# -- exact byte ranges ---------------------------------------------------------------------
def test_left_right_halves_interleave_without_overlap():
    # two 16-row halves of a 16x64 f32 matrix: columns 0..31 and 32..63
    a = region_of_rows(0x1000, 16, 32 * 4, 64 * 4)
    b = region_of_rows(0x1000 + 32 * 4, 16, 32 * 4, 64 * 4)
    assert a[0] < b[1] and b[0] < a[1]                       # the spans overlap...
    assert not overlap(*a, *b)                                # ...the bytes do not
    c = region_of_rows(0x1000 + 31 * 4, 16, 2 * 4, 64 * 4)     # columns 31..32 straddle both
    assert overlap(*a, *c) and overlap(*b, *c)
    d = region_of_rows(0x1000 + 15 * 64 * 4 + 32 * 4, 1, 4, 0)   # last row, column 32 only
    assert overlap(*b, *d) and not overlap(*a, *d)


def _lr_kernel(col_of_aiv1):
    def vector(out):
        sub = get_subblockid()
        v = Tile(TileType.Vec, float32, 16, 32, addr=0x0)
        TEXPANDS(v, float(sub + 1))
        col = 0 if sub == 0 else col_of_aiv1
        TSTORE(GlobalTensor(out.data() + col, (16, 32), (64, 1)), v)   # <- race
    return vector


def test_unsynchronised_left_right_stores_do_not_race():
    out = np.zeros((16, 64), np.float32)
    res = ptopipe.run(None, _lr_kernel(32), dict(out=out))
    assert (res["out"][:, :32] == 1).all() and (res["out"][:, 32:] == 2).all()


def test_overlapping_column_stores_race_by_happens_before():
    out = np.zeros((16, 64), np.float32)
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(None, _lr_kernel(31), dict(out=out))       # column 31 written by both
    f = ei.value.findings[0]
    assert {f["access"]["core"], f["other"]["core"]} == {"AIV0", "AIV1"}
    assert f["type"] == "write/write" and f["access"]["strided"]
    assert_where(ei.value, "race")
    # the same kernel with the checkers off runs (silently wrong on hardware)
    ptopipe.run(None, _lr_kernel(31), dict(out=out), checks=False)


def test_race_judged_by_happens_before_not_by_simulated_order():
    # AIV0 stores, then pushes; AIC pops, then loads: ordered by the ring -> no race,
    # under every schedule.  Loading before the pop is a race under every schedule.
    SLOT = 16 * 16 * 4

    def cube(buf, fifo, early):
        pipe = TPipe(0, DIR_V2C, SLOT, 2, peers=(0,))(fifo, 0, 0x40000)
        m = Tile(TileType.Mat, float32, 16, 16)
        a = Tile(TileType.Mat, float32, 16, 16, addr=0x0)
        if early:
            TLOAD(a, buf)
        TPOP(pipe, m)
        TFREE(pipe)
        TLOAD(a, buf)

    def vector(buf, fifo):
        pipe = TPipe(0, DIR_V2C, SLOT, 2, peers=(0,))(fifo, 0, 0x40000)
        v = Tile(TileType.Vec, float32, 16, 16, addr=0x0)
        TEXPANDS(v, 3.0)
        TSTORE(buf, v)
        TPUSH(pipe, v)

    args = dict(buf=np.zeros((16, 16), np.float32), fifo=ptopipe.gm_buffer(2 * SLOT))
    for early, ok in ((False, True), (True, False)):
        res = explore((cube, (vector, None)), schedules=10, args=dict(args, early=early))
        assert res.ok is ok
        if not ok:
            assert all(isinstance(e, DataRaceError) for _, e in res.failures)


# -- protocol misuse at the offending instruction ------------------------------------------
SLOT = 16 * 16 * 4


def _pair(cube_body, vector_body, platform="a2a3"):
    def cube(fifo, z):
        pipe = TPipe(0, DIR_C2V, SLOT, 4, peers=(0,))(fifo, 0x8000, 0)
        acc = Tile(TileType.Acc, float32, 16, 16, addr=0x0)
        mat = Tile(TileType.Mat, float32, 16, 16, addr=0x0)
        left, right = Tile(TileType.Left, float32, 16, 16, addr=0x0), Tile(TileType.Right, float32, 16, 16, addr=0x0)
        TLOAD(mat, z)
        TMOV(left, mat)
        TMOV(right, mat)
        TMATMUL(acc, left, right)                   # (the pushed tile holds what the Cube computed)
        cube_body(pipe, acc)

    def vector(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 4, peers=(0,))(fifo, 0x8000, 0)
        vector_body(pipe, Tile(TileType.Vec, float32, 16, 16))

    return ptopipe.run(cube, (vector, None), dict(fifo=ptopipe.gm_buffer(8 * SLOT), z=np.zeros((16, 16), np.float32)),
                       platform=platform)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_tfree_without_held_slot(platform):
    with pytest.raises(ProtocolError, match="TFREE on AIV0 with no held slot") as ei:
        _pair(lambda p, t: TPUSH(p, t),
              lambda p, t: (TPOP(p, t), TFREE(p), TFREE(p)),   # <- second TFREE
              platform)
    assert_where(ei.value, "second TFREE")


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_vector_core_producing_on_c2v_pipe(platform):
    with pytest.raises(ProtocolError, match="TPUSH on AIV0: a Vector core is the producer only of a V2C") as ei:
        _pair(lambda p, t: None,
              lambda p, t: TPUSH(p, Tile(TileType.Vec, float32, 16, 16, addr=0)),   # <- vector TPUSH
              platform)
    assert_where(ei.value, "vector TPUSH")


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_cube_core_freeing_a_c2v_pipe(platform):
    with pytest.raises(ProtocolError, match="TFREE on AIC: a Cube core is the consumer only of a V2C") as ei:
        _pair(lambda p, t: (TPUSH(p, t), TFREE(p)),   # <- cube TFREE
              lambda p, t: (TPOP(p, t), TFREE(p)), platform)
    assert_where(ei.value, "cube TFREE")
    # the fix names the instruction the kernel made and the end of the ring the Cube is
    assert ei.value.fix == ("on this pipe the Cube core is the producer (TALLOC / TPUSH): the consumer's TFREE "
                            "is the peer's to make, or, for data the Cube core receives, bind a V2C (or BOTH) pipe")


def test_the_cleanup_of_a_suspended_kernel_does_not_replace_the_runs_error():
    """The run ends with the Cube's error while AIV0 waits in a TPOP inside try / finally: the
    unwinding of AIV0 runs its finally, whose TFREE frees a slot the TPOP never took - a
    ProtocolError of the ended run, not what the run reports."""
    def vector_body(p, t):
        try:
            TPOP(p, t)          # waits: the Cube fails before its push reaches AIV0
        finally:
            TFREE(p)

    def cube_body(p, t):
        TPUSH(p, t)
        raise ValueError("the Cube's own error")    # <- cube raises

    with pytest.raises(ValueError, match="the Cube's own error"):
        _pair(cube_body, vector_body)


def test_a_failed_tpop_is_reported_not_the_tfree_its_finally_makes():
    """A TPOP fails inside try / finally; the finally's TFREE then fails too (nothing held):
    the TPOP's error is the kernel's mistake, reported at its line with the TFREE's after it."""
    def vector_body(p, t):
        try:
            TPOP(p, Tile(TileType.Vec, float16, 16, 16, addr=0x0))   # <- popped in try
        finally:
            TFREE(p)                                                  # <- freed in finally

    with pytest.raises(ProtocolError, match="does not match the pushed tile") as ei:
        _pair(lambda p, t: TPUSH(p, t), vector_body)
    assert_where(ei.value, "popped in try")
    then = ei.value.details.splitlines()[-1]
    assert then.startswith("(then the kernel's cleanup, run as this error propagated, raised ProtocolError at ")
    assert f"test_checkers.py:{marker_line('freed in finally', __file__)}: TFREE on AIV0 with no held slot" in then


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_wrong_dtype_for_the_pipe(platform):
    def vec(p, t):
        TPOP(p, Tile(TileType.Vec, float16, 16, 16, addr=0x0) if platform == "a2a3" else   # <- f16 TPOP
             Tile(TileType.Vec, float16, 16, 16))
    with pytest.raises(ProtocolError, match="does not match the pushed tile") as ei:
        _pair(lambda p, t: TPUSH(p, t), vec, platform)
    assert_where(ei.value, "f16 TPOP")
    assert ei.value.what.endswith("- the dtype differs: it should pop a valid 16x16 float32")


@pytest.mark.parametrize("platform,push_split,pop_split,match,where", [
    # a UB slot holds the part the producer split off: the pop of another part is the mismatch
    ("a5", TILE_NO_SPLIT, TILE_UP_DOWN, "does not match the pushed tile", "split TPOP"),
    # this pipe has one lane (AIV0): a split push sends AIV1's part to no one, refused at the push
    # (the halves-vs-whole pop of a two-lane A2A3 GM slot: tests/protocol/test_protocol_model.py)
    ("a2a3", TILE_UP_DOWN, TILE_NO_SPLIT, "the pipe has one Vector lane, AIV0", "split TPUSH")])
def test_split_mode_inconsistent(platform, push_split, pop_split, match, where):
    def vec(p, t):
        TPOP(p, Tile(TileType.Vec, float32, 8, 16, addr=0x0) if platform == "a2a3" else   # <- split TPOP
             Tile(TileType.Vec, float32, 8, 16), pop_split)
    with pytest.raises(ProtocolError, match=match) as ei:
        _pair(lambda p, t: TPUSH(p, t, push_split), vec, platform)   # <- split TPUSH
    assert_where(ei.value, where)


def test_talloc_without_tpush_is_a_leak():
    from ptopipe.errors import LeakError

    def cube_body(p, t):
        TALLOC(p, GlobalTensor(float32, (16, 16)))   # <- TALLOC

    with pytest.raises(LeakError, match="TALLOCed but never TPUSHed") as ei:
        _pair(cube_body, lambda p, t: None)
    assert ei.value.findings[0]["kind"] == "leak"
    assert_where(ei.value, "TALLOC")


def test_leftover_free_presignals_are_not_reported():
    res = _pair(lambda p, t: [TPUSH(p, t) for _ in range(6)],
                lambda p, t: [(TPOP(p, t), TFREE(p)) for _ in range(6)])
    assert res.summary.leaks == []


# -- schedule exploration -------------------------------------------------------------------
def test_schedule_dependent_bug_found_by_exploration_and_replayed():
    (sc,) = load_scenarios(os.path.join(ROOT, "examples", "misuse", "m10_schedule_dependent.py"))
    kw = dict(platform=sc.platform, protocol=sc.protocol)
    run_schedule(sc, None, **kw)                               # the default schedule passes
    res = explore(sc, schedules=50, seed=0, mode="random", **kw)     # (the default mixes modes)
    assert not res.ok
    seed, err = res.first
    assert seed is not None and isinstance(err, ProtocolError) and "overflows" in err.what
    m10 = os.path.join(ROOT, "examples", "misuse", "m10_schedule_dependent.py")
    file, _, line = err.where.rpartition(":")
    assert os.path.samefile(file, m10) and int(line) == _where_line(m10), err.where
    assert {"kind": "schedule", "seed": seed} in err.findings
    with pytest.raises(ProtocolError, match="overflows"):
        run_schedule(sc, seed, **kw)                           # the seed replays it


def _where_line(path):
    with open(path) as f:
        (line,) = [i for i, ln in enumerate(f, 1) if "<- where" in ln]
    return line


def test_cli_check_reports_seed(capsys):
    from ptopipe.cli import main
    f = os.path.join(ROOT, "examples", "misuse", "m10_schedule_dependent.py")
    assert main(["check", f, "--schedules", "0"]) == 0
    assert main(["check", f, "--schedules", "50", "--explore", "random"]) == 1
    out, err = capsys.readouterr()
    assert "ProtocolError" in err and "Traceback" not in out + err
    assert "replay: ptopipe check" in err and "--seed" in err


@pytest.mark.usefixtures("every_schedule")
def test_explore_reports_progress_before_each_schedule():
    sc = next(s for f in glob.glob(os.path.join(ROOT, "examples", "scenarios", "s7_*.py"))
              for s in load_scenarios(f))
    small = dataclasses.replace(sc, variants={"small": {**sc.variants["default"], "tiles": 8}})
    calls = []
    res = explore(small, schedules=3, variant="small", progress=lambda done, total: calls.append((done, total)))
    assert res.ok and res.runs == 4
    assert calls == [(0, 4), (1, 4), (2, 4), (3, 4)]



def _cube_stream(x, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, 1024, 4, peers=(0, 1))(fifo, 0x0, 0)
    acc = Tile(TileType.Acc, float32, 16, 16, addr=0)
    for _ in range(tiles):
        TPUSH(pipe, acc, TILE_UP_DOWN)


def _vector_stream(out, fifo, tiles):
    sub = get_subblockid()
    pipe = TPipe(0, DIR_C2V, 1024, 4, peers=(0, 1))(fifo, 0x0, 0)
    part = Tile(TileType.Vec, float32, 8, 16)
    for i in range(tiles):
        TPOP(pipe, part, TILE_UP_DOWN)
        TSTORE(GlobalTensor(out.data() + (i * 16 + sub * 8) * 16, (8, 16)), part)
        TFREE(pipe, TILE_UP_DOWN)


def _unordered_stores(n_pages, clash):
    """Each AIV stores one 4 KiB row per GM page, nothing orders the two; with ``clash``
    AIV1 also stores over AIV0's first row at the end: a race after many sweeps."""
    def vec(out):
        sub = get_subblockid()
        t = Tile(TileType.Vec, float32, 1, 1024, addr=0)
        TEXPANDS(t, float(sub + 1))         # different data: identical bytes would be no race
        for i in range(sub, n_pages, 2):
            TSTORE(GlobalTensor(out.data() + i * 1024, (1, 1024)), t)
        if clash and sub == 1:
            TSTORE(GlobalTensor(out.data(), (1, 1024)), t)      # <- late race
    return vec


def test_race_records_of_a_long_stream_are_swept():
    """A stream storing each tile to new GM pages keeps a bounded set of race records: what
    every core is ordered after is dropped (4 tiles a page: 500 pages made here, about twice
    the pages made between two sweeps)."""
    n = 2000
    res = ptopipe.run(_cube_stream, _vector_stream,
                      dict(x=None, out=np.zeros((n * 16, 16), np.float32), fifo=ptopipe.gm_buffer(4096),
                           tiles=n))
    assert len(res.cluster.checker.mems[id(res.cluster.gm)]) < 400             # (500 unswept)


def test_unordered_records_survive_the_sweeps():
    n = 3000
    res = ptopipe.run(None, _unordered_stores(n, False), dict(out=np.zeros((n, 1024), np.float32)))
    hb = res.cluster.checker
    assert hb.sweep_at >= n // 2         # the last sweep kept every page it saw
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(None, _unordered_stores(n, True), dict(out=np.zeros((n, 1024), np.float32)))
    f = ei.value.findings[0]
    assert (f["access"]["core"], f["other"]["core"]) == ("AIV1", "AIV0")
    assert_where(ei.value, "late race")


# -- unordered writes of identical bytes --------------------------------------------------
def _twice_warnings(res) -> list:
    return [(w, at) for w, at in res.summary.leaks if "store identical data" in w]


def _nosplit_c2v_cube(a, fifo, tiles):
    pipe = TPipe(0, DIR_C2V, 16 * 16 * 4, 2, peers=(0, 1))(fifo, 0x0, 0)
    a1 = Tile(TileType.Mat, float32, 16, 16, addr=0)
    a0 = Tile(TileType.Left, float32, 16, 16, addr=0)
    b1 = Tile(TileType.Mat, float32, 16, 16, addr=0x400)
    b0 = Tile(TileType.Right, float32, 16, 16, addr=0)
    acc = Tile(TileType.Acc, float32, 16, 16, addr=0)
    TLOAD(b1, GlobalTensor(a.data() + tiles * 256, (16, 16)))      # the identity, after the tiles
    TMOV(b0, b1)
    for i in range(tiles):
        TLOAD(a1, GlobalTensor(a.data() + i * 256, (16, 16)))
        TMOV(a0, a1)
        TMATMUL(acc, a0, b0)
        TPUSH(pipe, acc, TILE_NO_SPLIT)


def _nosplit_c2v_vector(skew):
    """pto-isa's own a2a3 no-split C2V test pattern: both Vector cores pop the whole tile and
    store the same result (``skew``: AIV1 adds 1 first, so the two stores differ)."""
    def vec(out, fifo, tiles):
        pipe = TPipe(0, DIR_C2V, 16 * 16 * 4, 2, peers=(0, 1))(fifo, 0x0, 0)
        t = Tile(TileType.Vec, float32, 16, 16)
        o = Tile(TileType.Vec, float32, 16, 16, addr=0x4000)
        for i in range(tiles):
            TPOP(pipe, t, TILE_NO_SPLIT)
            TMULS(o, t, 2.0)
            if skew and get_subblockid() == 1:
                TADDS(o, o, 1.0)
            TSTORE(GlobalTensor(out.data() + i * 256, (16, 16)), o)        # <- twice
            TFREE(pipe, TILE_NO_SPLIT)
    return vec


def _nosplit_args(tiles=3):
    x = np.arange(tiles * 256, dtype=np.float32).reshape(tiles * 16, 16)
    return x, dict(a=np.concatenate([x, np.eye(16, dtype=np.float32)]), out=np.zeros_like(x),
                   fifo=ptopipe.gm_buffer(2 * 1024), tiles=tiles)


@pytest.mark.parametrize("platform,protocol", [("a2a3", "pto-isa"), ("a2a3", "spec")])
def test_both_lanes_storing_identical_bytes_is_a_warning_not_a_race(platform, protocol):
    """Two unordered writes of identical bytes cannot make the result depend on their order:
    a warning naming the line (the work is done twice), not a DataRaceError.  (A5 gives a
    NO_SPLIT pipe one lane: refused there, tests/isa.)"""
    x, args = _nosplit_args()
    res = ptopipe.run(_nosplit_c2v_cube, _nosplit_c2v_vector(False), args, platform=platform,
                      protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], x * 2)
    (w, at), = _twice_warnings(res)
    assert "AIV1 and AIV0 both run this TSTORE" in w and "done twice" in w
    assert at.endswith(f"test_checkers.py:{marker_line('twice')}")


def test_both_lanes_storing_different_bytes_is_a_race():
    _, args = _nosplit_args()
    with pytest.raises(DataRaceError) as ei:
        ptopipe.run(_nosplit_c2v_cube, _nosplit_c2v_vector(True), args, protocol="pto-isa")
    assert_where(ei.value, "twice")


def test_identical_bytes_are_judged_when_every_write_is_applied_at_once(monkeypatch):
    """The verdict sees the bytes before the write whenever the queued work is applied (here
    after every instruction, as PTOPIPE_SYNC_EVERY=1 does): the same answers both ways."""
    import ptopipe.isa.ops as isa_ops
    import ptopipe.sim.core as sim_core
    monkeypatch.setattr(sim_core, "SYNC_EVERY", 1)
    monkeypatch.setattr(isa_ops, "SYNC_EVERY", 1)
    x, args = _nosplit_args()
    res = ptopipe.run(_nosplit_c2v_cube, _nosplit_c2v_vector(False), args, protocol="pto-isa", trace=True)
    np.testing.assert_array_equal(res.outputs["out"], x * 2)
    assert len(_twice_warnings(res)) == 1
    with pytest.raises(DataRaceError):
        ptopipe.run(_nosplit_c2v_cube, _nosplit_c2v_vector(True), _nosplit_args()[1], protocol="pto-isa",
                    trace=True)


def _nosplit_v2c(skew, tiles=2):
    """Both Vector cores push the whole tile into one V2C slot (pto-isa's own a2a3
    tpushpop_vc_nosplit test does, on purpose); ``skew``: AIV1's tile differs."""
    def cube(a, eye, out, fifo):
        pipe = TPipe(0, DIR_V2C, 16 * 16 * 4, 2, peers=(0, 1))(fifo, 0, 0x10000)
        m = Tile(TileType.Mat, float32, 16, 16)
        e1 = Tile(TileType.Mat, float32, 16, 16, addr=0x8000)
        left = Tile(TileType.Left, float32, 16, 16, addr=0)
        right = Tile(TileType.Right, float32, 16, 16, addr=0)
        acc = Tile(TileType.Acc, float32, 16, 16, addr=0)
        TLOAD(e1, eye)
        TMOV(right, e1)
        for i in range(tiles):
            TPOP(pipe, m, TILE_NO_SPLIT)
            TMOV(left, m)
            TFREE(pipe, TILE_NO_SPLIT)
            TMATMUL(acc, left, right)
            TSTORE(GlobalTensor(out.data() + i * 256, (16, 16)), acc)

    def vec(a, eye, out, fifo):
        pipe = TPipe(0, DIR_V2C, 16 * 16 * 4, 2, peers=(0, 1))(fifo, 0, 0x10000)
        v = Tile(TileType.Vec, float32, 16, 16, addr=0)
        for i in range(tiles):
            TLOAD(v, GlobalTensor(a.data() + i * 256, (16, 16)))
            if skew and get_subblockid() == 1:
                TADDS(v, v, 1.0)
            TPUSH(pipe, v, TILE_NO_SPLIT)                 # <- both lanes
    x = np.arange(tiles * 256, dtype=np.float32).reshape(tiles * 16, 16)
    args = dict(a=x, eye=np.eye(16, dtype=np.float32), out=np.zeros_like(x), fifo=ptopipe.gm_buffer(2 * 1024))
    return cube, vec, x, args


@pytest.mark.parametrize("platform,protocol", [("a2a3", "pto-isa"), ("a2a3", "spec")])   # (A5: one lane)
def test_both_lanes_pushing_identical_nosplit_tiles_is_a_warning(platform, protocol):
    """The two lanes' pushes of one NO_SPLIT slot are unordered, but identical: the consumer
    reads the right tile (pto-isa's a2a3 Cube waits for both lanes' ready), the work is done
    twice - a warning at the TPUSH; different tiles stay a ProtocolError there."""
    cube, vec, x, args = _nosplit_v2c(False)
    res = ptopipe.run(cube, vec, args, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], x)
    warned = [(w, at) for w, at in res.summary.leaks if "both push a TILE_NO_SPLIT tile" in w]
    (w, at), = warned                                  # once per pair of lines, not per slot
    assert at.endswith(f"test_checkers.py:{marker_line('both lanes')}"), at
    assert "the tiles are identical" in w and "done twice" in w
    # at a C++ line, IsNoSplit is a fix only where the model gives such a pipe one lane
    from ptopipe.isa.checks import two_lanes_fix
    ch, = res.cluster.state.channels.values()
    cpp_fix = two_lanes_fix(res.cluster, ch, "kernel.cpp:12")
    assert ("IsNoSplit = true" in cpp_fix) is ch.model.nosplit_lane0, cpp_fix
    assert "IsNoSplit = true" in two_lanes_fix(res.cluster, ch, "kernel.py:12")
    cube, vec, x, args = _nosplit_v2c(True)
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, vec, args, platform=platform, protocol=protocol)
    assert "written by both producer lanes" in ei.value.what and "push different" in ei.value.what
    assert_where(ei.value, "both lanes")


def test_only_the_shared_bytes_must_be_identical():
    """Overlapping stores: identical on the bytes both write passes, whatever each writes
    elsewhere; one differing shared byte is a race; a later write of other data over an
    identical pair is one too."""
    def vec(out, src, mode):
        sub = get_subblockid()
        t = Tile(TileType.Vec, float32, 1, 64, addr=0)
        TEXPANDS(t, 1.0)
        if mode == "edge" and sub == 1:
            TLOAD(t, src)              # AIV1's first element differs: inside the shared bytes
        if mode == "rewrite" and sub == 0:
            TSTORE(GlobalTensor(out.data() + 32, (1, 64)), t)
            TEXPANDS(t, 7.0)
        TSTORE(GlobalTensor(out.data() + 32 * sub, (1, 64)), t)   # <- shared
    src = np.ones((1, 64), np.float32)
    src[0, 0] = 5.0
    res = ptopipe.run(None, vec, dict(out=np.zeros(96, np.float32), src=src, mode="ok"))
    np.testing.assert_array_equal(res.outputs["out"], np.ones(96, np.float32))
    for mode in ("edge", "rewrite"):
        with pytest.raises(DataRaceError) as ei:
            ptopipe.run(None, vec, dict(out=np.zeros(96, np.float32), src=src, mode=mode))
        assert_where(ei.value, "shared")
