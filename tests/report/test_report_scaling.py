"""The Chrome trace is streamed and the HTML report is bounded, and both
still say exactly what they said before on small runs.

- the streamed JSON equals, byte for byte, the dict-building writer it replaced (kept here
  as the reference) on small runs of both platforms and protocols - events, flows, counters;
- the swimlane's merged bars keep every lane's busy time, stay few per lane whatever the run
  length, and the page says how many instructions it drew as how many bars;
- the stall accounting (hold minus in-flight work) equals the brute-force sum."""
import glob
import json
import os
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ptopipe
from ptopipe.arch import PipeUnit
from ptopipe.driver.loader import load_scenarios
from ptopipe.isa import DIR_V2C_CTRL, TEXPANDS, TPOP, TPUSH, Tile, TileType, TPipe, int32
from ptopipe.isa.launch import run
from ptopipe.report import chrome, profile, report_html, timeline, write_chrome_trace
from ptopipe.report.swimlane import _BAR_PX, _GAP_PX, bars, lanes, occupancy_px
from ptopipe.report.timeline import arg_dict, covered, merge_intervals, pipe_name
from ptopipe.sim.trace import Hold, Instr, MatmulArgs, RingArgs, Signal, TileArgs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FA = os.path.join(ROOT, "examples", "flash_attention.py")
S4 = os.path.join(ROOT, "examples", "scenarios", "s4_both_ways.py")
S7 = os.path.join(ROOT, "examples", "scenarios", "s7_long_stream.py")


def reference_trace(cluster) -> dict:
    """The Chrome trace as the previous writer built it: every event a dict, in one list."""
    tl = timeline(cluster)
    pid, tid = (lambda c: c + 1), (lambda p: int(p) + 1)
    mid = lambda i: i.start + (i.end - i.start) / 2          # noqa: E731
    role = {"AIC": "Cube", "AIV0": "Vector 0", "AIV1": "Vector 1"}
    ev, used = [], {}
    for i in tl.instrs:
        used.setdefault(i.core, set()).add(int(i.pipe))
    for h in tl.holds:
        used.setdefault(h.core, set())
    for c in sorted(used):
        name = tl.core_names[c]
        ev.append({"ph": "M", "name": "process_name", "pid": pid(c), "tid": 0,
                   "args": {"name": f"{name} ({role.get(name, 'core')})"}})
        ev.append({"ph": "M", "name": "process_sort_index", "pid": pid(c), "tid": 0,
                   "args": {"sort_index": c}})
        for p in sorted(used[c]):
            ev.append({"ph": "M", "name": "thread_name", "pid": pid(c), "tid": tid(p),
                       "args": {"name": PipeUnit(p).name}})
            ev.append({"ph": "M", "name": "thread_sort_index", "pid": pid(c), "tid": tid(p),
                       "args": {"sort_index": p}})
        ev.append({"ph": "M", "name": "thread_name", "pid": pid(c), "tid": 100,
                   "args": {"name": "issue (waits)"}})
        ev.append({"ph": "M", "name": "thread_sort_index", "pid": pid(c), "tid": 100,
                   "args": {"sort_index": -1}})
    index = {}
    for r in tl.rings:
        for group in (r.pushes, r.pops, r.frees, r.allocs):
            for lst in group.values():
                for k, ins in enumerate(lst):
                    index[id(ins)] = k
    for i in tl.instrs:
        args = arg_dict(i.args)
        if id(i) in index:
            args["index"] = index[id(i)]
        if i.loc is not None:
            args["loc"] = str(i.loc)
        ev.append({"ph": "X", "name": i.name, "cat": pipe_name(i.pipe), "ts": i.start,
                   "dur": i.end - i.start, "pid": pid(i.core), "tid": tid(i.pipe), "args": args})
    for h in tl.holds:
        args = {"kind": h.kind}
        if h.what is not None:
            args["on"] = getattr(h.what, "name", None) or repr(h.what)
            if getattr(h.what, "owner", None) is not None:
                args["channel"] = h.what.owner.name
        if h.loc is not None:
            args["loc"] = str(h.loc)
        ev.append({"ph": "X", "name": f"wait {h.kind}", "cat": "wait", "ts": h.start,
                   "dur": h.end - h.start, "pid": pid(h.core), "tid": 100, "args": args})
    fid = 0
    for kind, pairs in (("ready", tl.push_pop), ("free", tl.free_push)):
        for a, b in pairs:
            fid += 1
            name = "TPUSH->TPOP" if kind == "ready" else "TFREE->TPUSH"
            ev.append({"ph": "s", "id": fid, "name": name, "cat": f"ring.{kind}", "ts": mid(a),
                       "pid": pid(a.core), "tid": tid(a.pipe)})
            ev.append({"ph": "f", "bp": "e", "id": fid, "name": name, "cat": f"ring.{kind}",
                       "ts": mid(b), "pid": pid(b.core), "tid": tid(b.pipe)})
    if tl.rings:
        ev.append({"ph": "M", "name": "process_name", "pid": 100, "tid": 0,
                   "args": {"name": "Rings (slots in use)"}})
        ev.append({"ph": "M", "name": "process_sort_index", "pid": 100, "tid": 0,
                   "args": {"sort_index": 99}})
    for r in tl.rings:
        for t, n in r.occupancy:
            ev.append({"ph": "C", "name": f"{r.name} occupancy", "ts": t, "pid": 100,
                       "tid": 0, "args": {"slots": n}})
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"generator": "ptopipe", "platform": cluster.platform.name,
                          "cycles": tl.cycles, "time_unit": "1 ts = 1 cycle"}}


def _run(path, variant="default", platform="a2a3", protocol="spec", **params):
    sc = load_scenarios(path)[0]
    if params:
        args = sc.make_args(np.random.default_rng(0), **{**sc.params(variant), **params})
        return run(sc.aic, sc.aiv, args, platform=platform, protocol=protocol, trace=True)
    return sc.check(variant, platform, protocol, trace=True)


@pytest.fixture(scope="module")
def s7_long():
    return _run(S7, tiles=3000)


_SCENARIOS = sorted(glob.glob(os.path.join(ROOT, "examples", "scenarios", "s*.py"))) + [FA]


@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a5", "pto-isa")])
@pytest.mark.parametrize("path", _SCENARIOS, ids=lambda p: os.path.basename(p)[:-3])
def test_streamed_trace_equals_the_previous_writer(path, platform, protocol, tmp_path, monkeypatch):
    # S7 with 40 tiles (not its 1000): five wraps of its ring, some 500 events in chunks of 7
    res = _run(path, platform=platform, protocol=protocol, **({"tiles": 40} if path == S7 else {}))
    # every record typed: a ring op always says its ring (else it would drop out of the flows)
    for i in res.cluster.trace:
        assert type(i.args) in (RingArgs, TileArgs, MatmulArgs, type(None)), i
        assert type(i.args) is RingArgs or i.name not in ("TPUSH", "TPOP", "TFREE", "TALLOC"), i
    ref = json.dumps(reference_trace(res.cluster), separators=(",", ":"))
    monkeypatch.setattr(chrome, "_CHUNK", 7)          # many chunk boundaries
    out = write_chrome_trace(res, str(tmp_path / "t.json"))
    with open(out, encoding="utf-8") as f:
        text = f.read()
    assert text == ref
    ev = json.loads(text)["traceEvents"]
    assert {e["ph"] for e in ev} >= {"M", "X", "s", "f", "C"}
    assert chrome.chrome_trace(res) == json.loads(ref)


def test_trace_records_are_typed():
    res = _run(FA)
    cl = res.cluster
    assert cl.trace and all(type(i) is Instr for i in cl.trace)
    assert cl.waits and all(type(h) is Hold for h in cl.waits)
    assert cl.signals and all(type(s) is Signal for s in cl.signals)
    kinds = {i.name: type(i.args) for i in cl.trace}
    assert kinds["TPUSH"] is RingArgs and kinds["TPOP"] is RingArgs and kinds["TFREE"] is RingArgs
    assert kinds["TMATMUL"] is MatmulArgs and kinds["TLOAD"] is TileArgs and kinds["TEXP"] is TileArgs
    push = next(i for i in cl.trace if i.name == "TPUSH")
    assert arg_dict(push.args) == {"channel": push.args.channel, "slot": push.args.tag,
                                   "tag": push.args.tag, "shape": "x".join(map(str, push.args.shape))}
    assert arg_dict(RingArgs("r", None, None, "no-op")) == {"channel": "r", "kind": "no-op"}
    assert arg_dict(MatmulArgs(2, 3, 4))["shape"] == "2x3 @ 3x4"
    assert timeline(cl) is timeline(cl)          # built once, shared by trace/report/profile


def _union(items):
    return sum(e - s for s, e in merge_intervals((s, e) for s, e, *_ in items))


def test_merged_bars_keep_each_lanes_busy_time(s7_long):
    tl = timeline(s7_long.cluster)
    prof = profile(s7_long, tl)
    scale = 1270 / tl.cycles
    merged = 0
    for lane in lanes(tl):
        drawn = bars(lane.items, scale)
        assert sum(b.busy for b in drawn) == _union(lane.items), lane.label
        assert sum(b.n for b in drawn) == len(lane.items)
        assert len(drawn) <= 1270 / _GAP_PX + 2 * 1270 / _BAR_PX + 1
        name, _, pipe = lane.label.partition(" ")
        if pipe != "issue":             # a pipe runs one instruction at a time: busy == sum
            assert sum(b.busy for b in drawn) == prof.cores[name].busy[pipe]
        merged += len(drawn) < len(lane.items)
    assert merged >= 3                   # 3000 tiles do not fit 1270 pixels


def test_bars_merge_overlaps_once_and_take_the_dominant_colour():
    items = [(0, 10, "a", None), (5, 12, "b", None), (12, 13, "b", None), (13, 22, "b", None),
             (1000, 1001, "a", None)]
    drawn = bars(items, scale=0.1)      # 10 cycles per pixel: the first four merge
    # a: 10 cycles, b: 2 + 1 + 9 = 12 (the overlap 5-10 counted once, for a)
    assert [(b.start, b.end, b.busy, b.n, b.color) for b in drawn] == [
        (0, 22, 22, 4, "b"), (1000, 1001, 1, 1, "a")]
    assert bars(items, scale=10) == [bars([it], 10)[0] for it in items]    # zoomed in: none merge


def test_page_says_it_aggregated(s7_long):
    text = report_html(s7_long, "s7")
    m = re.search(r"(\d+) instructions and waits shown as (\d+) merged bars", text)
    assert m, "the page does not say it merged bars"
    n, drawn = int(m[1]), int(m[2])
    cl = s7_long.cluster
    assert n == len(cl.trace) + len(cl.waits) and drawn < n / 5
    assert drawn == text.count("</title></rect>")                 # one tooltip per drawn bar
    assert "mean per pixel" in text                       # the ring chart is averaged too
    assert len(text) < 3_000_000


def test_small_page_draws_every_instruction():
    res = _run(S4)
    text = report_html(res, "s4")
    assert "merged bars" not in text
    assert text.count("</title></rect>") == len(res.cluster.trace) + len(res.cluster.waits)


def test_occupancy_mean_per_pixel_keeps_the_area():
    steps = [(0, 0)] + [(t, (t // 3) % 5) for t in range(1, 5000)]
    cycles = 5003
    out, avg = occupancy_px(steps, cycles, scale=0.02)
    assert avg and len(out) <= 0.02 * cycles + 1
    area = sum((b[0] - a[0]) * a[1] for a, b in zip(steps, steps[1:] + [(cycles, 0)]))
    w = out[1][0] - out[0][0]
    assert sum(v * w for _t, v in out) == pytest.approx(area)
    assert occupancy_px(steps[:10], cycles, 0.02) == (steps[:10], False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 30)), max_size=30),
       st.lists(st.tuples(st.integers(0, 200), st.integers(0, 30)), max_size=30))
def test_covered_equals_brute_force(work, holds):
    union = merge_intervals((s, s + d) for s, d in work)
    busy = {t for s, e in union for t in range(s, e)}
    iv = [(s, s + d) for s, d in holds]
    assert covered(iv, union) == [sum(t in busy for t in range(s, e)) for s, e in iv]


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_control_and_address_transports_are_typed(platform, tmp_path):
    """The ring paths no example's default variant takes with a trace: the V2C control FIFO
    (TPUSH/TPOP of control words) and S5's TALLOC + TPOP of a GM address."""

    def cube(ctrl):
        pipe = TPipe(0, DIR_V2C_CTRL, 32, 4, peers=(0,))(ctrl)
        for _ in range(6):
            TPOP(pipe)

    def vec(ctrl):
        pipe = TPipe(0, DIR_V2C_CTRL, 32, 4, peers=(0,))(ctrl)
        word = Tile(TileType.Vec, int32, 1, 8, addr=0)
        for i in range(6):
            TEXPANDS(word, 100 + i)
            TPUSH(pipe, word)

    res = ptopipe.run(cube, (vec, None), dict(ctrl=ptopipe.gm_buffer(4 * 32)), platform=platform,
                      trace=True)
    ring = [i for i in res.cluster.trace if i.name in ("TPUSH", "TPOP")]
    assert len(ring) == 12 and {i.args.kind for i in ring} == {"ctrl"}
    s5 = _run(os.path.join(ROOT, "examples", "scenarios", "s5_subtile_gm.py"), platform=platform)
    kinds = {(i.name, i.args.kind) for i in s5.cluster.trace if type(i.args) is RingArgs}
    assert {("TALLOC", None), ("TPUSH", "commit"), ("TPOP", "addr")} <= kinds
    for r in (res, s5):
        out = write_chrome_trace(r, str(tmp_path / "t.json"))
        with open(out, encoding="utf-8") as f:
            assert f.read() == json.dumps(reference_trace(r.cluster), separators=(",", ":"))


def test_trace_writer_memory_does_not_grow_with_the_run(tmp_path, monkeypatch):
    """Streamed: the writer holds one chunk of events, whatever the run length (the
    timeline it reads is the run's own, built before)."""
    import tracemalloc
    monkeypatch.setattr(chrome, "_CHUNK", 64)
    peaks, sizes = [], []
    for tiles in (100, 400):
        res = _run(S7, tiles=tiles)
        timeline(res.cluster)
        path = str(tmp_path / f"t{tiles}.json")
        tracemalloc.start()
        try:
            write_chrome_trace(res, path)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        sizes.append(os.path.getsize(path))
    assert sizes[1] > 3.5 * sizes[0]
    assert peaks[1] < 1.5 * peaks[0] and peaks[1] < sizes[1] / 4, (peaks, sizes)
