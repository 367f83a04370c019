"""How much of a directory of real ``.pto`` files ptopipe reads and runs - e.g. ptoas's own
``test/basic`` and ``test/samples`` (fetch hw-native-sys/PTOAS; never copy its files into
this repository).

Every ``*.pto`` under the directories given is run with :func:`ptopipe.run_pto` (seeded
random inputs, scalars 0; every top-level function when there is no entry) and sorted into:

* ``clean``   - ran with every checker, no report;
* ``finding`` - ran to a checker's or an instruction's error at the file's line (a hang, a
  protocol misuse, a race, an operand pto-isa refuses): the file was read and run;
* ``refused`` - a ParseError naming the construct ptopipe does not support, or a
  ConfigError (a size that needs ``--input``);
* ``crash``   - anything else (a bug in ptopipe: the script exits 1).

A file whose RUN line is ``not ptoas ...`` is a negative test of ptoas (it must be refused on
its architecture); a finding or refusal there agrees with ptoas and is counted apart as well.

With ``--ptoas PATH`` only the files that ptoas itself accepts (on a3 or a5, level2 or
level3) count, and the platform is the first architecture it accepts them on; without it,
the module's ``pto.target_arch``, else the file's ``--pto-arch`` RUN line, else a2a3.

Target (exit 1 when missed): ``clean + finding`` at least ``--target`` (default 90 %) of the
counted files, and no crash.

Usage:  python benchmarks/real_pto.py PTOAS/test/basic PTOAS/test/samples [--ptoas tools/ptoas] [-v]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [ROOT]

from ptopipe.codegen.pto_exec import read_program, top_functions  # noqa: E402
from ptopipe.codegen.pto_exec import run_pto  # noqa: E402
from ptopipe.errors import ConfigError, ParseError, PtoPipeError  # noqa: E402

ARCH = {"a3": "a2a3", "a5": "a5"}


def ptoas_arch(ptoas: str, path: str) -> str | None:
    """The first architecture ptoas accepts ``path`` on (level2, then level3), else None."""
    with tempfile.TemporaryDirectory() as d:
        for arch in ("a3", "a5"):
            for level in ("level2", "level3"):
                r = subprocess.run([ptoas, f"--pto-arch={arch}", f"--pto-level={level}", path,
                                    "-o", os.path.join(d, "out.cpp")], capture_output=True, timeout=60)
                if r.returncode == 0:
                    return ARCH[arch]
    return None


def file_arch(path: str, text: str, default: str | None = "a2a3") -> str | None:
    """The platform a file is for: None when its module says it (``pto.target_arch``), else
    its RUN line's ``--pto-arch``, else an ``a3`` / ``a5`` in its name, else ``default``."""
    if "target_arch" in text:
        return None
    m = re.search(r"pto-arch[ =](a3|a5)", text) or re.search(r"(?:^|[_./-])(a3|a5)(?:[_./-]|$)", path)
    return ARCH[m.group(1)] if m else default


def classify(path: str, platform: str | None) -> tuple:
    text = open(path, encoding="utf-8", errors="replace").read()
    try:
        prog = read_program(text, path)
        funcs = top_functions(prog)
        for f in funcs:
            run_pto(path, text=text, func=f, platform=platform, timeout=30)
        return "clean", ""
    except (ParseError, ConfigError) as e:
        return "refused", str(e).splitlines()[0]
    except PtoPipeError as e:
        return "finding", f"{type(e).__name__}: {str(e).splitlines()[0]}"
    except Exception as e:      # noqa: BLE001 - a crash is what this script looks for
        return "crash", f"{type(e).__name__}: {e}"


def _shape(msg: str) -> str:
    """A message with its names and numbers blanked, to count causes."""
    return re.sub(r"%[\w$.#-]+|\d+", "N", msg.split(" at ")[0])[:100]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--ptoas", default=None, help="count only the files this ptoas accepts")
    ap.add_argument("--target", type=float, default=90.0)
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per file")
    a = ap.parse_args()
    files = sorted({d for d in a.dirs if d.endswith(".pto") and os.path.isfile(d)}
                   | {os.path.join(r, f) for d in a.dirs for r, _, fs in os.walk(d) for f in fs
                      if f.endswith(".pto")})
    counts, why = Counter(), Counter()
    for i, path in enumerate(files, 1):
        text = open(path, encoding="utf-8", errors="replace").read()
        if a.ptoas:
            arch = ptoas_arch(a.ptoas, path)
            if arch is None:
                counts["not accepted by ptoas"] += 1
                continue
            plat = file_arch(path, text, arch)
        else:
            plat = file_arch(path, text)
        kind, msg = classify(path, plat)
        if kind != "clean" and re.search(r"RUN:\s*not\s+\S*ptoas", text):
            msg += "  [ptoas's own test expects this file refused (RUN: not ptoas)]"
            counts[f"{kind} that ptoas's test expects refused"] += 1
        counts[kind] += 1
        if kind != "clean":
            why[f"{kind}: " + _shape(msg)] += 1
        if a.verbose:
            print(f"{kind:8} {path}  {msg[:160]}", flush=True)
        elif i % 25 == 0:
            print(f"  {i}/{len(files)} files", file=sys.stderr, flush=True)
    counted = sum(counts[k] for k in ("clean", "finding", "refused", "crash"))
    ran = counts["clean"] + counts["finding"]
    share = 100.0 * ran / counted if counted else 0.0
    for k, n in why.most_common():
        print(f"{n:4}  {k}")
    print(", ".join(f"{k} {n}" for k, n in counts.items()))
    ok = share >= a.target and not counts["crash"]
    print(f"read and run: {ran} of {counted} ({share:.1f} %, target >= {a.target:.0f} %), "
          f"{counts['crash']} crash(es): {'PASS' if ok else 'MISSED TARGET'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
