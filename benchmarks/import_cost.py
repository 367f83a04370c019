"""What ``import ptopipe`` costs on top of numpy, measured side by side in one run.

Fresh interpreters, alternating: one runs ``import numpy``, the next ``import numpy;
import ptopipe`` (this checkout's, checked), each timing its own import statements in CPU
seconds (``time.process_time``, so interpreter start-up and a loaded machine's waiting are
left out).  Prints every sample, the median and best of each side and the difference of the
medians.  Target: ptopipe adds at most 0.1 s; exits 1 when it adds more.

``--importtime`` also prints the ptopipe modules a plain import loads, slowest first
(``python -X importtime``), to see what to defer when the target is missed.

Usage:  python benchmarks/import_cost.py [--repeat 7] [--importtime]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = 0.1        # seconds of CPU ptopipe may add to ``import numpy``

PROBE = """
import time
t0 = time.process_time()
import numpy
{more}
t1 = time.process_time()
{check}
print(t1 - t0)
"""
FACADE = os.path.join(ROOT, "ptopipe", "__init__.py")
SIDES = {
    "numpy": PROBE.format(more="", check=""),
    "numpy+ptopipe": PROBE.format(more="import ptopipe",
                                  check=f"assert ptopipe.__file__ == {FACADE!r}, ptopipe.__file__"),
}


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=ROOT)


def sample(code: str) -> float:
    """CPU seconds of the imports in ``code``, run in a fresh interpreter."""
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True,
                       text=True, check=False)
    if r.returncode:
        raise SystemExit(f"probe failed:\n{r.stderr}")
    return float(r.stdout)


def importtime() -> list:
    """(self us, cumulative us, module) of each ptopipe module ``import ptopipe`` loads."""
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", "import numpy; import ptopipe"],
                       cwd=ROOT, env=_env(), capture_output=True, text=True, check=True)
    rows = []
    for line in r.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip().startswith("ptopipe"):
            rows.append((int(parts[0].split(":")[1]), int(parts[1]), parts[2].strip()))
    return sorted(rows, reverse=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--importtime", action="store_true")
    a = ap.parse_args(argv)
    times = {side: [] for side in SIDES}
    sample(SIDES["numpy+ptopipe"])                  # writes this checkout's .pyc files
    for _ in range(a.repeat):
        for side, code in SIDES.items():
            times[side].append(sample(code))
    for side, ts in times.items():
        print(f"{side:>14}: median {statistics.median(ts) * 1e3:7.1f} ms  best {min(ts) * 1e3:7.1f} ms"
              f"  ({' '.join(f'{t * 1e3:.0f}' for t in ts)})")
    extra = statistics.median(times["numpy+ptopipe"]) - statistics.median(times["numpy"])
    ok = extra <= TARGET
    print(f"import ptopipe adds {extra * 1e3:.1f} ms of CPU to import numpy (target <= "
          f"{TARGET * 1e3:.0f} ms) {'ok' if ok else 'MISS'}")
    if a.importtime:
        print(f"{'self us':>9} {'cum us':>9}  module")
        for own, cum, mod in importtime():
            print(f"{own:>9} {cum:>9}  {mod}")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
