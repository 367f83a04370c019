"""Schedule quality of the compiled mixed examples: simulated cycles of each
examples/mixed kernel (one @pl.incore function, compiled by the default pass pipeline for
the platform) next to the hand-written kernel of the same scenario and
shape, per platform and protocol.  Target: within 10%; exits 1 when missed.

Usage:  python benchmarks/mixed_vs_hand.py
"""
from __future__ import annotations

import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (hand-written file, its variant, mixed file, its variant): the same shape and split
PAIRS = [
    ("examples/dsl/s1_cv_split.py", "f32_ud_d4_m64", "examples/mixed/s1_cv_split.py", "default"),
    ("examples/scenarios/s1_cv_split.py", "f32_ud_d4_m64", "examples/mixed/s1_cv_split.py",
     "default"),
    ("examples/scenarios/s3_vc_dequant.py", "int8_ud_k128_n32", "examples/mixed/s3_vc_dequant.py",
     "default"),
    ("examples/dsl/s4_both_ways.py", "ud", "examples/mixed/s4_both_ways.py", "ud"),
    ("examples/dsl/s4_both_ways.py", "lr", "examples/mixed/s4_both_ways.py", "lr"),
    ("examples/scenarios/s6_stream_both.py", "default", "examples/mixed/s6_stream_both.py",
     "default"),
    ("examples/dsl/fa_forward.py", "default", "examples/mixed/fa_forward.py", "default"),
    ("examples/dsl/fa_forward.py", "s128", "examples/mixed/fa_forward.py", "s128"),
]


def load(rel: str):
    spec = importlib.util.spec_from_file_location(rel.replace("/", "_")[:-3], ROOT / rel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rows():
    """(hand file, variant, platform, protocol, hand cycles, compiled cycles) per pair."""
    for hand, hv, mixed, mv in PAIRS:
        h, m = load(hand).SCENARIO, load(mixed).SCENARIO
        for platform in ("a2a3", "a5"):
            for protocol in ("spec", "pto-isa"):
                yield (hand, hv, platform, protocol, h.check(hv, platform, protocol).summary.cycles,
                       m.check(mv, platform, protocol).summary.cycles)


def main() -> int:
    worst = 0.0
    print(f"{'hand-written kernel':40} {'variant':18} {'platform':8} {'protocol':8} "
          f"{'hand':>7} {'compiled':>8} {'ratio':>6}")
    for hand, hv, platform, protocol, h, c in rows():
        worst = max(worst, abs(c - h) / h)
        print(f"{hand:40} {hv:18} {platform:8} {protocol:8} {h:7d} {c:8d} {c / h:6.3f}")
    print(f"worst difference: {worst:.1%} (target: within 10%)")
    return 0 if worst <= 0.10 else 1


if __name__ == "__main__":
    sys.exit(main())
