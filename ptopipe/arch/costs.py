"""Cycle cost formulas and tables (pure data + arithmetic, no state).

Numbers are the public pto-isa cost-model facts of ``shared/PLATFORMS.md`` (A2A3).  The
same table is used for A5 until A5 facts exist (documented assumption).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from math import ceil


class PipeUnit(IntEnum):
    """The in-order pipes of a core (an IntEnum so that per-pipe state is a plain list)."""
    S = 0        # scalar / control, flag set/wait
    MTE1 = 1     # L1 -> L0A/L0B
    MTE2 = 2     # GM -> local
    MTE3 = 3     # UB -> GM / UB -> L1
    M = 4        # cube
    V = 5        # vector
    FIX = 6      # L0C -> GM/UB/L1

    @property
    def label(self) -> str:
        return self.name


# (slope cycles per 256-byte repeat, head, tail); calibrated on PLATFORMS.md's measured
# single ops: TADD f32 64x64 = 160, TEXP = 159, TDIV = 288, TROWSUM = 492, TROWMAX = 480,
# TMULS f32 32x64 = 58.
_VEC = {
    # slope 1: scalar-operand and copy-like ops
    "TADDS": (1, 12, 14), "TSUBS": (1, 12, 14), "TMULS": (1, 12, 14), "TDIVS": (1, 12, 14),
    "TMAXS": (1, 12, 14), "TMINS": (1, 12, 14), "TRELU": (1, 12, 14), "TABS": (1, 12, 14),
    "TNEG": (1, 12, 14), "TRSQRT": (1, 12, 14), "TMOV": (1, 12, 14), "TEXPANDS": (1, 12, 14),
    "TROWEXPAND": (1, 12, 14),
    # slope 2: binary element-wise, transcendental, compare, convert
    "TADD": (2, 14, 18), "TSUB": (2, 14, 18), "TMUL": (2, 14, 18), "TMAX": (2, 14, 18),
    "TMIN": (2, 14, 18), "TEXP": (2, 14, 17), "TLOG": (2, 14, 17), "TSQRT": (2, 14, 17),
    "TCVT": (2, 14, 18), "TROWEXPANDSUB": (2, 14, 18), "TROWEXPANDMUL": (2, 14, 18),
    "TROWEXPANDDIV": (4, 14, 18),
    # slope 4: divide; slope 7: reductions
    "TDIV": (4, 14, 18),
    "TROWSUM": (7, 26, 18), "TROWMAX": (7, 14, 18), "TROWMIN": (7, 14, 18),
    "TCOLSUM": (7, 26, 18), "TCOLMAX": (7, 14, 18),
}

# bytes per cycle of the data paths (A2A3)
_BANDWIDTH = {
    ("GM", "UB"): 58.6, ("GM", "L1"): 78.4, ("UB", "GM"): 109.4, ("L1", "GM"): 18.6,
    ("UB", "UB"): 594.0, ("L0C", "GM"): 40.6, ("L0C", "L1"): 74.3, ("L0C", "UB"): 40.6,
    ("L1", "L0A"): 256.0, ("L1", "L0B"): 128.0, ("UB", "L1"): 109.4, ("GM", "L0A"): 78.4,
    ("GM", "L0B"): 78.4,
}


@dataclass(frozen=True)
class CostTable:
    """Cycle costs.  Every entry can be overridden with ``dataclasses.replace``."""
    matmul_base: int = 6
    vector: dict = field(default_factory=lambda: dict(_VEC))
    vector_repeat_bytes: int = 256
    count_mode_penalty: int = 16
    bandwidth: dict = field(default_factory=lambda: dict(_BANDWIDTH))
    move_latency: int = 0          # fixed start-up cycles of a DMA (assumption: 0)
    flag_op: int = 1               # issue cost of a SET / WAIT
    scalar_op: int = 1

    def matmul(self, m: int, k: int, n: int, in_itemsize: int) -> int:
        """TMATMUL cycles: 6 + c * ceil(M/16) * ceil(K/(32/sizeof(A))) * ceil(N/16)."""
        c = 2 if in_itemsize == 4 else 1
        k_step = max(1, 32 // in_itemsize)
        return self.matmul_base + c * ceil(m / 16) * ceil(k / k_step) * ceil(n / 16)

    def vector_op(self, op: str, rows: int, cols: int, itemsize: int, head: bool = True) -> int:
        """Vector cycles: slope * repeats + head (if the queue was idle) + tail."""
        slope, h, t = self.vector.get(op, (2, 14, 18))
        repeats = max(1, ceil(rows * cols * itemsize / self.vector_repeat_bytes))
        cyc = slope * repeats + t + (h if head else 0)
        if (cols * itemsize) % self.vector_repeat_bytes:
            cyc += self.count_mode_penalty
        return cyc

    def move(self, src: str, dst: str, nbytes: int) -> int:
        """Data movement cycles by bandwidth of the path."""
        bw = self.bandwidth.get((src, dst))
        if bw is None:
            bw = 64.0  # assumption for paths PLATFORMS.md does not list
        return self.move_latency + max(1, ceil(nbytes / bw))
