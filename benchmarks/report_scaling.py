"""Report cost against run cost, as the run grows: both must be linear.

S7 (examples/scenarios/s7_long_stream.py, 16x16 f32 tiles, one TPUSH per tile) is run
traced at 10k, 50k and 200k pushes; for each size it prints the CPU time of the traced
run, of writing the Chrome trace (``ptopipe trace -o x.json``) and of writing the HTML
report (``--report x.html``), each report's time / run time, and the output sizes.

Targets (exit 1 when missed): every ratio <= 2, and flat - the ratio at the largest size
within 1.5x of the ratio at the smallest.  CPU time (``time.process_time``), so the other
processes of a busy machine do not count.  Runs in about a minute.

Usage:  python benchmarks/report_scaling.py [--pushes 10000 50000 200000]
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples", "scenarios"))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout

import ptopipe  # noqa: E402
import s7_long_stream as s7  # noqa: E402
from ptopipe.report import write_chrome_trace, write_html  # noqa: E402

MAX_RATIO = 2.0
MAX_GROWTH = 1.5


def measure(pushes: int, out_dir: str) -> dict:
    sc = s7.SCENARIO
    args = sc.make_args(np.random.default_rng(0), tiles=pushes)
    t0 = time.process_time()
    res = ptopipe.run(sc.aic, sc.aiv, args, trace=True)
    t1 = time.process_time()
    trace = write_chrome_trace(res, os.path.join(out_dir, f"s7_{pushes}.json"))
    res.cluster.state.timeline = None   # the page builds its own, as `run --report` does
    t2 = time.process_time()
    page = write_html(res, os.path.join(out_dir, f"s7_{pushes}.html"), f"S7 {pushes} tiles")
    t3 = time.process_time()
    assert res.summary.pipes[0]["pushes"] == pushes, res.summary.pipes
    return {"pushes": pushes, "instructions": len(res.cluster.trace), "run": t1 - t0,
            "trace": t2 - t1, "html": t3 - t2, "trace_mb": os.path.getsize(trace) / 1e6,
            "html_mb": os.path.getsize(page) / 1e6}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pushes", type=int, nargs="+", default=[10_000, 50_000, 200_000])
    a = ap.parse_args(argv)
    rows = []
    print(f"{'pushes':>8s} {'instrs':>8s} {'run s':>7s} {'trace s':>8s} {'ratio':>6s} "
          f"{'html s':>7s} {'ratio':>6s} {'trace MB':>9s} {'html MB':>8s}")
    with tempfile.TemporaryDirectory(prefix="report_scaling.") as d:
        for n in a.pushes:
            r = measure(n, d)
            r["trace_ratio"], r["html_ratio"] = r["trace"] / r["run"], r["html"] / r["run"]
            rows.append(r)
            print(f"{n:8d} {r['instructions']:8d} {r['run']:7.2f} {r['trace']:8.2f} "
                  f"{r['trace_ratio']:6.2f} {r['html']:7.2f} {r['html_ratio']:6.2f} "
                  f"{r['trace_mb']:9.1f} {r['html_mb']:8.2f}", flush=True)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB "
          "(the runs' own data included)")
    bad = []
    for kind in ("trace", "html"):
        worst = max(r[f"{kind}_ratio"] for r in rows)
        if worst > MAX_RATIO:
            bad.append(f"{kind}: report/run ratio {worst:.2f} > {MAX_RATIO}")
        growth = rows[-1][f"{kind}_ratio"] / rows[0][f"{kind}_ratio"]
        print(f"{kind}: worst ratio {worst:.2f} (target <= {MAX_RATIO}), "
              f"{rows[-1]['pushes']} vs {rows[0]['pushes']} pushes x{growth:.2f} "
              f"(target <= {MAX_GROWTH})")
        if len(rows) > 1 and growth > MAX_GROWTH:
            bad.append(f"{kind}: ratio grows x{growth:.2f} from {rows[0]['pushes']} to "
                       f"{rows[-1]['pushes']} pushes (not linear)")
    for b in bad:
        print("MISSED " + b)
    print("OK" if not bad else "FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
