"""The Chrome trace-event JSON: schema check, flows TPUSH -> TPOP and TFREE -> TPUSH,
ring occupancy counters; the profile, the HTML/PNG report and the CLI commands."""
import json
import os
import sys

import pytest

from ptopipe.cli import main as cli_main
from ptopipe.driver.loader import load_scenarios
from ptopipe.errors import ConfigError
from ptopipe.report import chrome_trace, profile, report_html, write_chrome_trace, write_png

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FA = os.path.join(ROOT, "examples", "flash_attention.py")
S1 = os.path.join(ROOT, "examples", "scenarios", "s1_cv_split.py")

_REQUIRED = {"X": {"name", "ts", "dur", "pid", "tid", "args"}, "M": {"name", "pid", "args"},
             "s": {"id", "name", "ts", "pid", "tid", "cat"}, "f": {"id", "name", "ts", "pid", "tid", "cat", "bp"},
             "C": {"name", "ts", "pid", "args"}}


@pytest.fixture(scope="module")
def fa_run():
    sc = load_scenarios(FA)[0]
    return sc.check("default", trace=True)


def validate(trace: dict) -> dict:
    """Structural schema of the Chrome trace-event format; returns per-ph counts."""
    assert set(trace) >= {"traceEvents"}
    counts = {}
    flows = {}
    for e in trace["traceEvents"]:
        ph = e["ph"]
        assert ph in _REQUIRED, f"unexpected ph {ph!r}"
        missing = _REQUIRED[ph] - set(e)
        assert not missing, f"{ph} event lacks {missing}: {e}"
        counts[ph] = counts.get(ph, 0) + 1
        for k in ("ts", "dur"):
            if k in e:
                assert isinstance(e[k], (int, float)) and e[k] >= 0
        assert isinstance(e["pid"], int)
        if ph == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index", "thread_sort_index")
        if ph in "sf":
            flows.setdefault(e["id"], {})[ph] = e
        if ph == "C":
            assert all(isinstance(v, (int, float)) for v in e["args"].values())
    for fid, pair in flows.items():
        assert set(pair) == {"s", "f"}, f"flow {fid} is not paired"
        if pair["s"]["name"] == "TPUSH->TPOP":      # data flows forward in time
            assert pair["s"]["ts"] < pair["f"]["ts"], f"flow {fid} goes back in time"
    json.dumps(trace)
    return counts


def _enclosing(slices, e):
    return [x for x in slices if x["pid"] == e["pid"] and x["tid"] == e["tid"]
            and x["ts"] <= e["ts"] <= x["ts"] + x["dur"]]


def test_trace_schema_and_flows(fa_run):
    tr = chrome_trace(fa_run)
    counts = validate(tr)
    ev = tr["traceEvents"]
    xs = [e for e in ev if e["ph"] == "X"]
    assert counts["X"] == len(fa_run.cluster.trace) + len(fa_run.cluster.waits)
    pushes = [e for e in xs if e["name"] == "TPUSH"]
    pops = [e for e in xs if e["name"] == "TPOP"]
    starts = {e["id"]: e for e in ev if e["ph"] == "s" and e["name"] == "TPUSH->TPOP"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f" and e["name"] == "TPUSH->TPOP"}
    # every TPUSH starts a flow that ends on a TPOP of the same ring with the same slot
    for p in pushes:
        mine = [fid for fid, s in starts.items() if p in _enclosing([p], s)]
        assert mine, f"TPUSH without a flow: {p}"
        for fid in mine:
            target = _enclosing(pops, ends[fid])
            assert len(target) == 1 and target[0]["args"]["channel"] == p["args"]["channel"]
            assert target[0]["args"]["slot"] == p["args"]["slot"]
            assert target[0]["args"]["index"] == p["args"]["index"]
    # C2V pushes feed both Vector cores, V2C pops take both halves: 2 flows per push/pop
    assert len(starts) == 2 * len([p for p in pushes if p["pid"] == 1]) + len([p for p in pushes if p["pid"] != 1])
    # each TFREE links to the TPUSH SlotNum pushes later
    frees = [e for e in ev if e["ph"] == "s" and e["name"] == "TFREE->TPUSH"]
    assert frees and all(_enclosing([x for x in xs if x["name"] == "TFREE"], f) for f in frees)
    # processes per core, threads per pipe, tile args
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    assert {"AIC (Cube)", "AIV0 (Vector 0)", "AIV1 (Vector 1)"} <= names
    mm = next(e for e in xs if e["name"] == "TMATMUL")
    assert mm["args"]["shape"] == "64x64 @ 64x64" and mm["dur"] == 70
    exp = next(e for e in xs if e["name"] == "TEXP" and e["args"]["shape"] == "32x64")
    assert exp["args"]["dtype"] == "float32"
    # ring occupancy counters never exceed SlotNum
    cnt = [e for e in ev if e["ph"] == "C"]
    assert cnt and max(e["args"]["slots"] for e in cnt) <= 4


def test_trace_flow_pairing_breaks_when_pops_are_missing(fa_run):
    tr = chrome_trace(fa_run)
    ev = [e for e in tr["traceEvents"] if not (e["ph"] == "f" and e["id"] == 1)]
    with pytest.raises(AssertionError):
        validate({"traceEvents": ev})


def test_profile_flash_attention(fa_run):
    prof = profile(fa_run)
    assert prof.cycles == fa_run.summary.cycles
    assert prof.cores["AIC"].busy["M"] == 16 * 70          # 16 half 64x64x64 matmuls
    assert prof.bottleneck.startswith("Vector-bound: AIV")
    for c in prof.cores.values():
        assert c.active + sum(c.stalls.values()) == prof.cycles
    assert {r.peak for r in prof.rings} <= {1, 2, 3, 4}
    assert [r.slot_num for r in prof.rings] == [4, 2, 2]
    assert "bottleneck: Vector-bound" in prof.format()


def test_report_html_is_self_contained(fa_run, tmp_path):
    text = report_html(fa_run, "fa")
    assert text.startswith("<!DOCTYPE html>") and "<svg" in text and "</html>" in text
    assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in text and "<script src" not in text
    assert "Vector-bound" in text and "AIV0 V" in text


def test_report_png_needs_matplotlib(fa_run, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ConfigError, match="matplotlib"):
        write_png(fa_run, str(tmp_path / "x.png"))
    assert not (tmp_path / "x.png").exists()


def test_report_png(fa_run, tmp_path):
    pytest.importorskip("matplotlib")
    path = write_png(fa_run, str(tmp_path / "lanes.png"))
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_trace_needs_a_traced_run():
    sc = load_scenarios(S1)[0]
    res, _ = sc.run("default")
    with pytest.raises(ConfigError, match="trace=True"):
        chrome_trace(res)


def test_trace_cli_writes_valid_json_atomically(tmp_path, capsys):
    out = tmp_path / "t.json"
    html = tmp_path / "r.html"
    assert cli_main(["trace", S1, "-o", str(out), "--report", str(html), "--latency", "100"]) == 0
    validate(json.loads(out.read_text()))
    assert html.read_text().count("<svg") == 1
    assert "cross-core latency 100 cycles" in html.read_text()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []   # no temp files
    text = capsys.readouterr().out
    assert "wrote" in text and "bottleneck:" in text


@pytest.mark.parametrize("kernel", [S1, os.path.join(ROOT, "tests", "pto", "c2v_split_a3.pto")],
                         ids=["py", "pto"])
def test_trace_latency_reaches_every_kind_of_kernel_file(kernel, tmp_path, capsys):
    """``trace --latency`` is the run's cross-core latency whatever the file is (a .pto's run
    took the platform's own, the option accepted and ignored; the C++ file's: test_cpp_kernels)."""
    html = tmp_path / "r.html"
    assert cli_main(["trace", kernel, "-o", str(tmp_path / "t.json"), "--report", str(html),
                     "--latency", "777"]) == 0, capsys.readouterr()
    assert "cross-core latency 777 cycles" in html.read_text()


def test_trace_cli_refuses_an_html_path_for_its_json(tmp_path, capsys):
    """``-o`` takes the Chrome trace JSON: an .html path is refused (naming --report), not
    given JSON in an .html file."""
    html = tmp_path / "k.html"
    assert cli_main(["trace", S1, "-o", str(html)]) == 1
    err = capsys.readouterr().err
    assert "ConfigError" in err and f"--report {html}" in err and f"-o {tmp_path / 'k.json'}" in err, err
    assert not html.exists()


def test_report_run_cli_option(tmp_path, capsys):
    html = tmp_path / "run.html"
    assert cli_main(["run", S1, "--quiet", "--report", str(html)]) == 0
    assert "<svg" in html.read_text()


def test_trace_cli_error_is_readable(tmp_path, capsys):
    assert cli_main(["trace", str(tmp_path / "nope.py")]) == 1
    err = capsys.readouterr().err
    assert "no such file" in err and "Traceback" not in err


def _chain_kernels(accs, K=64, slot=16 * 32 * 4):
    """TMATMUL then TPUSH of the same Acc tile (``accs`` = 1: the FIX pipe's TPUSH waits for
    the matmul, the next matmul waits for the TPUSH), 64 tiles into an 8-slot ring."""
    from ptopipe.isa import (DIR_C2V, TFREE, TLOAD, TMATMUL, TMOV, TPOP, TPUSH, TSTORE, GlobalTensor,
                             Tile, TileType, TPipe, float32)

    def cube(a, b, fifo, n):
        pipe = TPipe(0, DIR_C2V, slot, 8, peers=(0,))(fifo, 0x10000, 0)
        ma, mb = Tile(TileType.Mat, float32, 16, K, addr=0), Tile(TileType.Mat, float32, K, 32, addr=0x8000)
        left, right = Tile(TileType.Left, float32, 16, K, addr=0), Tile(TileType.Right, float32, K, 32, addr=0)
        acc = [Tile(TileType.Acc, float32, 16, 32, addr=k * slot) for k in range(accs)]
        TLOAD(ma, a)
        TLOAD(mb, b)
        TMOV(left, ma)
        TMOV(right, mb)
        for i in range(n):
            TMATMUL(acc[i % accs], left, right)
            TPUSH(pipe, acc[i % accs])

    def vector(out, fifo, n):
        pipe = TPipe(0, DIR_C2V, slot, 8, peers=(0,))(fifo, 0x10000, 0)
        t = Tile(TileType.Vec, float32, 16, 32)
        for i in range(n):
            TPOP(pipe, t)
            if i == n - 1:
                TSTORE(GlobalTensor(out.data(), (16, 32)), t)
            TFREE(pipe)
    return cube, (vector, None)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_chain_of_dependent_instructions_is_named_not_latency(platform):
    """No pipe saturated, yet the AIC always busy: its TMATMUL and TPUSH take turns on one
    Acc tile.  It was called latency-bound; double-buffering the Acc is the cure."""
    import numpy as np

    import ptopipe
    args = dict(a=np.ones((16, 64), np.float32), b=np.ones((64, 32), np.float32),
                out=np.zeros((16, 32), np.float32), n=64)
    one = ptopipe.run(*_chain_kernels(1), dict(args, fifo=ptopipe.gm_buffer(8 * 2048)), platform=platform,
                      trace=True)
    np.testing.assert_array_equal(one.outputs["out"], np.full((16, 32), 64, np.float32))
    prof = profile(one)
    assert prof.bottleneck.startswith("Dependency-bound: AIC is active 96% of the time but no pipe is "
                                      "saturated (FIX 53% and M 39%)"), prof.bottleneck
    assert "double-buffer" in prof.bottleneck
    two = ptopipe.run(*_chain_kernels(2), dict(args, fifo=ptopipe.gm_buffer(8 * 2048)), platform=platform,
                      trace=True)
    assert two.summary.cycles < 0.8 * one.summary.cycles
    assert profile(two).bottleneck.startswith("Fixpipe-bound")
