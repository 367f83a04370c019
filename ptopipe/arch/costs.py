"""Cycle cost formulas and tables (pure data + arithmetic, no state).

Numbers are the public pto-isa cost-model facts of ``shared/PLATFORMS.md`` (A2A3).  The
same table is used for A5 until A5 facts exist (documented assumption).

Routing (which pipe an instruction occupies) is in the op catalogue (``catalogue.py``):
TLOAD -> MTE2; TSTORE from L0C -> FIX, other TSTORE -> MTE3; TMOV/TEXTRACT L1 -> L0 ->
MTE1, L0C -> L1 -> FIX, UB -> UB -> V; TMATMUL* -> M; element-wise / reduction -> V;
C2V TPUSH -> FIX, V2C TPUSH -> MTE3, GM-ring TPOP (the load) and TFREE -> MTE2, flag-only
steps (zero-copy TPOP, TALLOC, address-flow TPUSH) -> S.

Assumptions (see docs/performance.md):

* Data movement is bandwidth only (``move_latency`` 0): ``ceil(bytes / B_per_cycle)``.
  PLATFORMS.md also quotes a *measured* TLOAD f32 128x128 GM->UB of ~776 cycles, which is
  84.5 B/cycle, not the table's 58.6 (1,119 cycles).  We keep the cost-model table by
  default because the published end-to-end reference (flash attention, 12,438 cycles)
  comes from that same cost model; ``costs.replace(bandwidth={("GM", "UB"): 84.5})``
  selects the measured figure instead.
* Paths the table does not list: L0C->UB = L0C->GM (40.6), UB->L1 = UB->GM (109.4),
  GM->L0A/L0B = GM->L1 (78.4); anything else 64 B/cycle.
* Vector ops not measured use their slope class with head 14 / tail 18 (slope 1: 12 / 14);
  an op whose name is unknown costs like a slope-2 op.
* A5: no public cost facts, so the A2A3 table is used unchanged.
"""
from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from functools import lru_cache
from math import ceil

from ..errors import ConfigError
from .catalogue import OPS
from .vocab import PipeUnit  # noqa: F401  (re-exported: arch.costs.PipeUnit)


# (slope cycles per 256-byte repeat, head, tail) of every vector op, from the op catalogue;
# calibrated on PLATFORMS.md's measured single ops: TADD f32 64x64 = 160, TEXP = 159,
# TDIV = 288, TROWSUM = 492, TROWMAX = 480, TMULS f32 32x64 = 58.
_VEC = {op.name: op.cost for op in OPS.values() if op.cost is not None}

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

    def __post_init__(self):
        # memoise the cost formulas per table: the hot path asks the same few costs again
        # and again, and a cache hit runs no Python code (not copied by replace())
        for name in _MEMOISED:
            object.__setattr__(self, name, lru_cache(maxsize=None)(getattr(self, name)))

    def __getstate__(self) -> dict:          # pickle the fields, not the memo wrappers
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def __setstate__(self, state: dict) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)
        self.__post_init__()

    def replace(self, **changes) -> "CostTable":
        """A copy with some entries changed.  ``vector`` and ``bandwidth`` are *merged* into
        the current tables, e.g. ``costs.replace(vector={"TMULS": (1, 0, 0)},
        bandwidth={("GM", "UB"): 84.5})``; other fields are replaced.  A ``vector`` entry for
        an op the catalogue does not have is a ConfigError (it would change no cost)."""
        unknown = [k for k in changes.get("vector", {}) if k not in OPS]
        if unknown:
            near = difflib.get_close_matches(unknown[0], list(OPS), n=1)
            raise ConfigError(f"costs.replace(vector=...): no instruction {unknown[0]!r} in the op catalogue",
                              fix=f"did you mean {near[0]!r}?" if near else
                                  "name an instruction of ptopipe.arch.catalogue.OPS (e.g. 'TMULS')")
        for name in ("vector", "bandwidth"):
            if name in changes:
                merged = dict(getattr(self, name))
                merged.update(changes[name])
                changes[name] = merged
        return dataclasses.replace(self, **changes)

    def matmul(self, m: int, k: int, n: int, in_itemsize: int) -> int:
        """TMATMUL cycles: 6 + c * ceil(M/16) * ceil(K/(32/sizeof(A))) * ceil(N/16)."""
        c = 2 if in_itemsize == 4 else 1
        k_step = max(1, 32 // in_itemsize)
        return self.matmul_base + c * ceil(m / 16) * ceil(k / k_step) * ceil(n / 16)

    def vector_op(self, op: str, rows: int, cols: int, itemsize: int, head: bool = True) -> int:
        """Vector cycles: slope * repeats + head (if the queue was idle) + tail."""
        if rows == 0 or cols == 0:
            return 0            # an empty valid region (a lane-1 replay): nothing to compute
        slope, h, t = self.vector.get(op, (2, 14, 18))
        repeats = max(1, ceil(rows * cols * itemsize / self.vector_repeat_bytes))
        cyc = slope * repeats + t + (h if head else 0)
        if (cols * itemsize) % self.vector_repeat_bytes:
            cyc += self.count_mode_penalty
        return cyc

    def move(self, src: str, dst: str, nbytes: int) -> int:
        """Data movement cycles by bandwidth of the path."""
        if nbytes == 0:
            return 0            # an empty valid region moves nothing
        bw = self.bandwidth.get((src, dst))
        if bw is None:
            bw = 64.0  # assumption for paths PLATFORMS.md does not list
        return self.move_latency + max(1, ceil(nbytes / bw))


class _NoCosts(CostTable):
    """The table of a run with timing off: every cost is 0 and nothing is computed."""

    def matmul(self, m, k, n, in_itemsize):
        return 0

    def vector_op(self, op, rows, cols, itemsize, head=True):
        return 0

    def move(self, src, dst, nbytes):
        return 0


_MEMOISED = ("matmul", "vector_op", "move")
NO_COSTS = _NoCosts(flag_op=0, scalar_op=0)
