"""Reading real-style PTO-AS is linear: generated ``.pto`` files of about 1, 10 and 60 MB
read by the executor's reader (:func:`ptopipe.codegen.pto_exec.read_program`: the syntax
tree, the functions and the op check) and laid out (:func:`plan_layout`, liveness-based
placement); prints MB/s per size.

The file: one Vector function in the spelling pypto / ptoas write (a dense tensor view, a
partition per row block, ``pto.alloc_tile`` without addresses, ``pto.tload`` /
``pto.tadds`` / ``pto.tmul`` / ``pto.tstore`` on long ``!pto.tile_buf<...>`` types), the
body repeated until the size is reached, in scf.for loops of 64 blocks each.  Building the
text is not timed.

Targets (exit 1 when missed): at least 10 MB/s at every size, and the largest size's rate
within 1.5x of the smallest's (flat).  CPU time (``time.process_time``), best of
``--repeat`` runs.

Usage:  python benchmarks/pto_read.py [--sizes 1 10 60] [--repeat 2]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [ROOT]

from ptopipe.arch import get_platform  # noqa: E402
from ptopipe.codegen.pto_exec import plan_layout, read_program  # noqa: E402

TILE = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=64, v_row=16, v_col=64, blayout=row_major, "
        "slayout=none_box, fractal=512, pad=0>")
PART = "!pto.partition_tensor_view<16x64xf32>"


def block(i: int) -> str:
    return f"""      %r{i} = arith.muli %i, %c16 : index
      %p{i} = pto.partition_view %xv, offsets = [%r{i}, %c0], sizes = [%c16, %c64] : !pto.tensor_view<?x?xf32> -> {PART}
      %t{i} = pto.alloc_tile : {TILE}
      pto.tload ins(%p{i} : {PART}) outs(%t{i} : {TILE})
      %u{i} = pto.alloc_tile : {TILE}
      pto.tadds ins(%t{i}, %s : {TILE}, f32) outs(%u{i} : {TILE})
      pto.tmul ins(%u{i}, %t{i} : {TILE}, {TILE}) outs(%u{i} : {TILE})
      pto.tstore ins(%u{i} : {TILE}) outs(%p{i} : {PART})
"""


def make(mb: float) -> str:
    head = """module {
  func.func @big(%x: !pto.ptr<f32>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %n = arith.constant 1024 : index
    %s = arith.constant 1.5 : f32
    %xv = pto.make_tensor_view %x, shape = [%n, %c64], strides = [%c64, %c1] {layout = #pto.layout<nd>} : !pto.tensor_view<?x?xf32>
"""
    parts, size, i = [head], len(head), 0
    target = int(mb * 1e6)
    while size < target:
        loop = ["    scf.for %i = %c0 to %c16 step %c1 {\n"]
        for _ in range(64):
            loop.append(block(i))
            i += 1
        loop.append("    }\n")
        text = "".join(loop)
        parts.append(text)
        size += len(text)
    parts.append("    return\n  }\n}\n")
    return "".join(parts)


def rate(text: str, repeat: int) -> float:
    best = float("inf")
    plat = get_platform("a5")
    for _ in range(repeat):
        t0 = time.process_time()
        prog = read_program(text, "big.pto")
        plan_layout(prog, plat)
        best = min(best, time.process_time() - t0)
    return len(text) / 1e6 / best


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1, 10, 60])
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    rates = []
    for mb in a.sizes:
        text = make(mb)
        r = rate(text, a.repeat)
        rates.append(r)
        print(f"{len(text) / 1e6:7.1f} MB: {r:6.1f} MB/s", flush=True)
    flat = rates[0] / rates[-1]
    ok = min(rates) >= 10 and flat <= 1.5
    print(f"slowest {min(rates):.1f} MB/s (target >= 10), smallest / largest rate {flat:.2f} "
          f"(target <= 1.5): {'PASS' if ok else 'MISSED TARGET'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
