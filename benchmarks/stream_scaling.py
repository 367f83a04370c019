"""Does a checked run's per-tile cost and memory stay flat with its length?

The per-tile stream kernel of ``stream_speed.py`` (the Cube streams 16x16 f32 tiles to the
Vector side, UP_DOWN: each lane stores its half to a new GM row block), checkers on, run for
a short and a long stream, each in a fresh interpreter.  Printed side by side: CPU
microseconds per tile and the peak resident memory beyond the arguments and their image in
GM (an untraced run: the process's peak RSS - Linux's VmHWM, reset once the argument arrays
are resident - less its RSS then and less the GM bytes the arguments occupy, which the
run copies in and the kernel writes), and the peak memory the run allocates (a second run under ``tracemalloc``,
which sees every Python object and numpy buffer the simulator keeps; GM, a mapping of the
argument arrays' size, is not counted).

Targets (exit 1 when missed): the long stream's per-tile cost within 1.2x of the short
one's, and at most 100 MiB at the peak, both resident beyond the arguments and allocated.  ``--long 1000000`` is the full-size check
(~1 minute a run); the default keeps it to a few seconds.

Usage:  python benchmarks/stream_scaling.py [--short 1000] [--long 100000] [--repeat 2]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RATIO, EXTRA_MIB = 1.2, 100

_CHILD = r"""
import json, sys, time
sys.path[:0] = [{root!r}, {bench!r}]
import numpy as np
import ptopipe
import stream_speed as S
from ptopipe.isa import TILE_UP_DOWN
n = {tiles}
x = np.random.default_rng(0).integers(-100, 100, (n * S.T, S.T)).astype(np.float32)
out = np.zeros_like(x)
out.fill(0)                                   # both arrays resident before the baseline
ptopipe.run(S.cube, (S.vector, S.vector), dict(x=x[:S.T * 4], eye=np.eye(S.T, dtype=np.float32),
            out=out[:S.T * 4], fifo=ptopipe.gm_buffer(S.DEPTH * S.SLOT), tiles=4, split=TILE_UP_DOWN))
def status(key):
    with open("/proc/self/status") as f:
        return next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith(key + ":"))
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")                              # reset the peak RSS (VmHWM) to the RSS now
    rss0 = status("VmRSS")
except OSError:                                   # not Linux: no resident figure
    rss0 = None
if {traced}:
    import tracemalloc
    tracemalloc.start()
t = time.process_time()
res = ptopipe.run(S.cube, (S.vector, S.vector), dict(x=x, eye=np.eye(S.T, dtype=np.float32), out=out,
                  fifo=ptopipe.gm_buffer(S.DEPTH * S.SLOT), tiles=n, split=TILE_UP_DOWN), timeout=24 * 3600)
cpu = time.process_time() - t
peak = tracemalloc.get_traced_memory()[1] if {traced} else 0
gm = x.nbytes + out.nbytes + S.DEPTH * S.SLOT           # the arguments' image in GM
rss = status("VmHWM") - rss0 - gm if rss0 is not None else None
assert np.array_equal(res.outputs["out"], x * 3)
print(json.dumps(dict(us=cpu / n * 1e6, extra=peak, rss=rss)))
"""


def run_child(tiles: int, traced: bool) -> dict:
    code = _CHILD.format(root=ROOT, bench=os.path.join(ROOT, "benchmarks"), tiles=tiles, traced=traced)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"the {tiles}-tile run failed:\n{p.stderr}")
    return json.loads(p.stdout)


def measure(tiles: int) -> dict:
    """CPU per tile and peak RSS of an untraced run, the traced peak of another."""
    plain = run_child(tiles, False)
    return dict(us=plain["us"], rss=plain["rss"], extra=run_child(tiles, True)["extra"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--short", type=int, default=1000)
    ap.add_argument("--long", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=2)
    ns = ap.parse_args()
    best = {}
    for _ in range(ns.repeat):                 # alternated, so both see the same machine state
        for n in (ns.short, ns.long):
            m = measure(n)
            b = best.setdefault(n, m)
            for k in ("us", "extra") + (("rss",) if m["rss"] is not None else ()):
                b[k] = min(b[k], m[k])
    s, g = best[ns.short], best[ns.long]
    ratio = g["us"] / s["us"]
    extra = g["extra"] / 2**20
    rss = g["rss"] / 2**20 if g["rss"] is not None else None
    mib = lambda v: f"{v / 2**20:.1f}" if v is not None else "n/a"   # noqa: E731
    print(f"checked UP_DOWN stream, best of {ns.repeat}")
    print(f"{'tiles':>9} {'us/tile':>8} {'MiB resident beyond args+GM (peak)':>35} {'MiB allocated (peak)':>21}")
    for n in (ns.short, ns.long):
        print(f"{n:9d} {best[n]['us']:8.1f} {mib(best[n]['rss']):>35} {mib(best[n]['extra']):>21}")
    ok_r, ok_m = ratio <= RATIO, extra <= EXTRA_MIB and (rss is None or rss <= EXTRA_MIB)
    print(f"per-tile cost {ratio:.2f}x that of {ns.short} tiles (target <= {RATIO}) {'ok' if ok_r else 'MISSED'}; "
          f"at the peak {mib(g['rss'])} MiB resident beyond the arguments and their GM image, "
          f"{extra:.1f} MiB allocated "
          f"(target <= {EXTRA_MIB}) {'ok' if ok_m else 'MISSED'}")
    return 0 if ok_r and ok_m else 1


if __name__ == "__main__":
    sys.exit(main())
