"""Reports link to the kernel's code: every trace slice and wait carries the ``file:line``
that issued it (Python, DSL and C++ kernels), the HTML tooltips show it, the swimlane draws
TPUSH -> TPOP arrows and embeds its zoomable data only up to a size bound, and the PNG has a
legend."""
import json
import os
import re

import pytest

from ptopipe.driver.loader import load_scenarios
from ptopipe.report import chrome_trace, report_html, timeline
from ptopipe.report import swimlane, swimlane_view

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = os.path.join(ROOT, "examples", "scenarios", "s1_cv_split.py")
DSL = os.path.join(ROOT, "examples", "dsl", "s1_cv_split.py")


def _traced(path, platform="a2a3", protocol="spec"):
    sc = load_scenarios(path)[0]
    return sc.check("default", platform, protocol, trace=True)


def _line_of(path, needle):
    """The 1-based lines of ``path`` that contain ``needle``."""
    with open(path, encoding="utf-8") as f:
        return {k for k, text in enumerate(f, 1) if needle in text}


def _loc_line(loc: str, path: str) -> int:
    m = re.fullmatch(r"([^:]+):(\d+)(?::\d+)?", loc)
    assert m and os.path.basename(m.group(1)) == os.path.basename(path), loc
    return int(m.group(2))


@pytest.mark.parametrize("path", [PY, DSL], ids=["python", "dsl"])
@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a5", "pto-isa")])
def test_every_slice_names_the_kernel_line_that_issued_it(path, platform, protocol):
    ev = chrome_trace(_traced(path, platform, protocol))["traceEvents"]
    slices = [e for e in ev if e["ph"] == "X"]
    assert slices and all("loc" in e["args"] for e in slices)
    for op in ("TPUSH", "TPOP", "TFREE"):
        lines = {_loc_line(e["args"]["loc"], path) for e in slices if e["name"] == op}
        assert lines and lines <= _line_of(path, op + "("), (op, lines)
    waits = [e for e in slices if e["cat"] == "wait"]
    assert waits and all(_loc_line(e["args"]["loc"], path) for e in waits)


def test_html_tooltips_carry_the_line():
    res = _traced(PY)
    text = report_html(res, "s1")
    push_lines = _line_of(PY, "TPUSH(")
    tips = re.findall(r"<title>(TPUSH [^<]*)</title>", text)
    assert tips and all(re.search(r" at \S*s1_cv_split\.py:(\d+)$", t) for t in tips)
    assert {int(t.rsplit(":", 1)[1]) for t in tips} <= push_lines


def test_static_swimlane_draws_one_arrow_per_push_pop_pair(monkeypatch):
    res = _traced(PY)
    tl = timeline(res.cluster)
    svg = swimlane.swimlane_svg(tl)
    arrows = re.search(r'<g class="arrows">(.*?)</g>', svg, re.S).group(1)
    assert arrows.count("<line") == len(tl.push_pop) > 0
    monkeypatch.setattr(swimlane, "ARROW_CAP", len(tl.push_pop) - 1)
    svg = swimlane.swimlane_svg(tl)
    assert re.search(r'<g class="arrows">(.*?)</g>', svg, re.S).group(1).count("<line") == 0


def test_zoom_data_is_embedded_up_to_its_bound(monkeypatch):
    res = _traced(PY)
    tl = timeline(res.cluster)
    text = report_html(res, "s1")
    data = json.loads(re.search(r'id="swimlane-data">(.*?)</script>', text, re.S).group(1))
    rows = swimlane.lanes(tl)
    assert [lane["label"] for lane in data["lanes"]] == [r.label for r in rows]
    assert sum(len(lane["s"]) for lane in data["lanes"]) == sum(len(r.items) for r in rows)
    assert len(data["arrows"]) == len(tl.push_pop)
    assert "mouse wheel: zoom" in text
    monkeypatch.setattr(swimlane_view, "ITEM_CAP", 10)
    text = report_html(res, "s1")
    assert "swimlane-data" not in text and "<script" not in text
    assert "zoom into it in Perfetto" in text


def test_png_has_a_legend_of_the_colours_drawn():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt
    res = _traced(PY)
    fig = swimlane.png_figure(res, "s1")
    try:
        labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    finally:
        plt.close(fig)
    pipes = {lane.label.split()[1] for lane in swimlane.lanes(timeline(res.cluster))} - {"issue"}
    assert {"M", "V", "MTE2", "MTE3"} <= pipes          # only the colours the drawing uses:
    assert [x for x in labels if x in swimlane.PIPE_COLORS] == [p for p in swimlane.PIPE_COLORS if p in pipes]
    assert "ring slots in use" in labels and any(x.startswith("waits ") for x in labels)


def test_trace_of_a_pto_file_names_its_lines(tmp_path):
    from ptopipe.cli import main as cli_main
    pto = os.path.join(ROOT, "tests", "pto", "c2v_split_a3.pto")
    out = tmp_path / "t.json"
    assert cli_main(["trace", pto, "-o", str(out)]) == 0
    slices = [e for e in json.loads(out.read_text())["traceEvents"] if e["ph"] == "X"]
    pops = {_loc_line(e["args"]["loc"], pto) for e in slices if e["name"] == "TPOP"}
    assert pops and pops <= _line_of(pto, "pto.tpop")
