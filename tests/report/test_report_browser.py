"""The HTML report in a real browser: headless Chromium (Debian's ``chromium`` package, which
``.ci/run`` installs) opens the report of a traced run, zooms with the mouse wheel, pans by
dragging, and finds the kernel's ``file:line`` in the tooltip of a single TPUSH.

A probe script appended to a copy of the page drives it with DOM events and writes what it
saw into the DOM, which ``chromium --dump-dom`` prints.  Skipped where no Chromium is
installed, except under CI (CI=true), where a missing browser fails."""
import json
import os
import re
import shutil
import subprocess

import pytest

from ptopipe.driver.loader import load_scenarios
from ptopipe.report import timeline, write_html

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
S1 = os.path.join(ROOT, "examples", "scenarios", "s1_cv_split.py")

_PROBE = """<script>
window.addEventListener('load', () => {
  const svg = document.getElementById('swimlane'), r = svg.getBoundingClientRect();
  const seen = {full: svg.dataset.window};
  const wheel = (dy, x) => svg.dispatchEvent(new WheelEvent('wheel',
      {deltaY: dy, clientX: r.left + x, clientY: r.top + 40, bubbles: true, cancelable: true}));
  for (let k = 0; k < 6; k++) wheel(-100, 700);
  seen.zoomed = svg.dataset.window;
  seen.tips = [...svg.querySelectorAll('g.bars title')].map(t => t.textContent);
  seen.arrows = svg.querySelectorAll('g.arrows line').length;
  svg.dispatchEvent(new MouseEvent('mousedown', {clientX: r.left + 600, bubbles: true}));
  window.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + 500, bubbles: true}));
  window.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
  seen.panned = svg.dataset.window;
  svg.dispatchEvent(new MouseEvent('dblclick', {bubbles: true}));
  seen.reset = svg.dataset.window;
  const out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = JSON.stringify(seen);
  document.body.appendChild(out);
});
</script>"""


def _browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI"):
        pytest.fail("no Chromium: .ci/run installs Debian's chromium package for this test")
    pytest.skip("needs a Chromium (apt-get install chromium)")


def _span(window: str) -> "tuple[int, int]":
    a, b = map(int, window.split("-"))
    return a, b


def test_report_zooms_pans_and_links_to_the_kernel_line(tmp_path):
    browser = _browser()
    res = load_scenarios(S1)[0].check("default", trace=True)
    cycles = timeline(res.cluster).cycles
    page = tmp_path / "report.html"
    write_html(res, str(page), "s1")
    page.write_text(page.read_text(encoding="utf-8").replace("</body>", _PROBE + "</body>"),
                    encoding="utf-8")
    out = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                          "--user-data-dir=" + str(tmp_path / "profile"), "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="probe">(.*?)</pre>', out.stdout, re.S)
    assert m, out.stderr[-2000:]
    seen = json.loads(m.group(1).replace("&quot;", '"').replace("&gt;", ">").replace("&lt;", "<")
                      .replace("&amp;", "&"))
    assert _span(seen["full"]) == (0, cycles)
    z0, z1 = _span(seen["zoomed"])
    assert 0 < z1 - z0 < cycles / 2                        # six wheel steps of 0.8
    push_lines = {k for k, text in enumerate(open(S1, encoding="utf-8"), 1) if "TPUSH(" in text}
    pushes = [t for t in seen["tips"] if t.startswith("TPUSH ")]
    assert pushes, seen["tips"]
    for t in pushes:
        loc = re.search(r" at (\S+):(\d+)$", t)
        assert loc and os.path.basename(loc.group(1)) == "s1_cv_split.py" and int(loc.group(2)) in push_lines
    assert seen["arrows"] > 0
    p0, p1 = _span(seen["panned"])
    assert p1 - p0 == z1 - z0 and p0 > z0                  # dragged left: later cycles
    assert _span(seen["reset"]) == (0, cycles)
