"""The blocks of a launch (``ptopipe.run(blocks=N)``): what the race checker records of each
block's GM accesses, and the check at the end of a launch that no two blocks touch the same
GM bytes unordered.

On the device the N blocks of a launch run at the same time, each on a cluster of its own,
and nothing orders one block's GM accesses with another's; ptopipe runs them one after
another on one GM.  So GM bytes one block writes and another block reads or writes are a
race whatever order the simulator ran them in - except two writes of identical bytes, which
cannot change the result (the "work done twice" warning of :mod:`ptopipe.sim.race`), and two
atomic adds (maxima, minima), which commute (:data:`~ptopipe.sim.race.ATOMIC_ADD`; an add and
a plain access are a race).

Each block's checker (:class:`BlockChecks`, or :class:`BlockWriteRecorder` with
``record_writes``) keeps the exact GM regions its cores accessed, once per region and kind
(the race checker's own regions: TLOAD / TSTORE through a GlobalTensor, TPUSH / TPOP of a GM
ring slot); :func:`written` copies the bytes a block wrote when it ends, and
:func:`cross_block_races` sweeps the intervals of all blocks once, at the end of the launch.
A run of one block records nothing of this.
"""
from __future__ import annotations

from bisect import bisect_right

import numpy as np

from ..errors import DataRaceError
from ..sim.race import ATOMIC_KINDS, atomic_fix, atomic_why, clipped_ranges, loc_text
from .checks import KernelChecks, WriteRecorder

#: how to keep the blocks of a launch apart, for every report of a cross-block race
BLOCK_FIX = ("give each block its own GM range: offset the block's tensors by get_block_idx() (e.g. "
             "rows [b * n / get_block_num(), (b + 1) * n / get_block_num()) for b = get_block_idx()), "
             "and its GM_SLOT_BUFFER too")
#: the kind of an atomic add (:data:`~ptopipe.sim.race.ATOMIC_ADD`), maximum or minimum in
#: ``block_regions``' keys: a write (truthy), kept apart from a plain write of the same region
ADD = 2
_CODES = dict(zip(ATOMIC_KINDS, (ADD, ADD + 1, ADD + 2)))
#: key code -> the atomic op's name
_ATOMIC_OP = {code: kind.op for kind, code in _CODES.items()}


class _BlockRecording:
    """Records the GM regions a block's cores access (``block_regions``: ``(lo, hi, rows,
    write)`` -> the first access's ``(rows, core, op, where, label, ring)``)."""

    recordable = False

    def __init__(self, cluster):
        super().__init__(cluster)
        self.block_regions: dict = {}
        self._block_rings: set = set()

    def access(self, core, mem, lo, hi, rows, write, op, where, label=None, ring=None, end=None,
               pipe=None, work=None) -> bool:
        if mem is self.cluster.gm:
            key = (lo, hi, rows if rows.__class__ is not list else tuple(rows),
                   _CODES.get(write.__class__, write))
            if key not in self.block_regions:
                self.block_regions[key] = (rows, core.name, op, where, label, ring)
        return super().access(core, mem, lo, hi, rows, write, op, where, label, ring, end, pipe, work)

    def ring_access(self, core, ch, tag, write, op, loc, rows, cols, item, split, inflight=None,
                    work=None, valid=None) -> bool:
        if ch.in_gm:
            key = (ch.name, tag, write, core.index, rows, cols, item, split, valid)
            if key not in self._block_rings:
                self._block_rings.add(key)
                gm = self.cluster.gm
                for mem, (lo, hi, rws) in self._slot_regions(core, ch, tag, write, rows, cols, item, split, valid):
                    if mem is gm:
                        rkey = (lo, hi, rws if rws.__class__ is not list else tuple(rws), write)
                        self.block_regions.setdefault(rkey, (rws, core.name, op, loc, None, (ch.name, tag)))
        return super().ring_access(core, ch, tag, write, op, loc, rows, cols, item, split, inflight, work, valid)


class BlockChecks(_BlockRecording, KernelChecks):
    """:class:`~ptopipe.isa.checks.KernelChecks` of one block of several."""


class BlockWriteRecorder(_BlockRecording, WriteRecorder):
    """:class:`~ptopipe.isa.checks.WriteRecorder` of one block of several."""


def checker_class(record_writes: bool, blocks: int):
    """The checker a run's clusters get (checks on): a block of several records its GM regions."""
    if blocks > 1:
        return BlockWriteRecorder if record_writes else BlockChecks
    return WriteRecorder if record_writes else KernelChecks


class Written:
    """The GM bytes one block wrote, as they were when it ended: merged intervals (``starts``,
    ``ends``) and a copy of each."""
    __slots__ = ("starts", "ends", "data")

    def __init__(self, checker, gm):
        spans = sorted(r for (lo, hi, _k, write), (rows, *_rest) in checker.block_regions.items() if write
                       for r in clipped_ranges(lo, hi, rows, lo, hi))
        merged: list = []
        for a, b in spans:
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self.starts = [a for a, _ in merged]
        self.ends = [b for _, b in merged]
        self.data = [gm.buf[a:b].copy() for a, b in merged]

    def bytes(self, lo: int, hi: int) -> np.ndarray:
        """The bytes ``[lo, hi)`` (inside one of this block's writes) as the block left them."""
        i = bisect_right(self.starts, lo) - 1
        a = self.starts[i]
        return self.data[i][lo - a:hi - a]


def written(cluster) -> "Written | None":
    """What the block run on ``cluster`` wrote to GM (None: its checker recorded nothing)."""
    ch = cluster.checker
    return Written(ch, cluster.gm) if isinstance(ch, _BlockRecording) else None


def _describe(block: int, nblocks: int, rec, write, lo: int, hi: int) -> dict:
    rows, core, op, where, label, ring = rec
    if write in _ATOMIC_OP:
        op += f" (atomic {_ATOMIC_OP[write]})"
    if isinstance(label, tuple):
        gt, ptr = label[:2]           # (gt, ptr, occurrence, ...): sim.race gm_label
        label = gt.describe(ptr)
    obj = label or (f"slot {ring[1]} of {ring[0]}" if ring is not None else None)
    return {"block": block, "blocks": nblocks, "core": core, "op": op, "access": "write" if write else "read",
            "where": loc_text(where), "lo": lo, "hi": hi, "object": obj}


def _line(d: dict) -> str:
    obj = f" via {d['object']}" if d["object"] else ""
    return (f"block {d['block']} {d['core']:5s} {d['access']:5s} {d['op']:7s} at {d['where']}: "
            f"GM[{d['lo']:#x}, {d['hi']:#x}){obj}")


def cross_block_races(clusters: list, writes: list) -> list:
    """The end of a launch whose blocks ran on ``clusters`` (by block; ``writes``: each one's
    :func:`written`): a DataRaceError for GM bytes one block wrote and another read or wrote
    different bytes to; the ``(warning, where)`` list of blocks that wrote identical bytes."""
    n = len(clusters)
    items = []                              # (lo, hi, block, write, record)
    for b, cl in enumerate(clusters):
        ch = cl.checker
        for (lo, hi, _k, write), rec in ch.block_regions.items():
            rows = rec[0]
            spans = ((lo, hi),) if rows is None else clipped_ranges(lo, hi, rows, lo, hi)
            items.extend((a, e, b, write, rec) for a, e in spans if a < e)
    items.sort(key=lambda x: (x[0], x[2]))
    live_w: list = []                       # writes (then reads) still open at the sweep point
    live_r: list = []
    twice: dict = {}                        # (the two lines) -> [first pair's items and overlap, block pairs]
    for it in items:
        lo = it[0]
        live_w = [x for x in live_w if x[1] > lo]
        live_r = [x for x in live_r if x[1] > lo]
        for other in live_w + (live_r if it[3] else []):
            if other[2] == it[2]:
                continue
            first, later = (other, it) if other[2] < it[2] else (it, other)
            a, b = max(first[0], later[0]), min(first[1], later[1])
            if first[3] in _ATOMIC_OP or later[3] in _ATOMIC_OP:
                if first[3] == later[3]:        # two atomic adds (maxes, mins): they commute
                    continue
                raise _race(n, later, first, a, b)
            if first[3] and later[3] and np.array_equal(writes[first[2]].bytes(a, b),
                                                         writes[later[2]].bytes(a, b)):
                key = (loc_text(first[4][3]), loc_text(later[4][3]))
                seen = twice.setdefault(key, [(first, later, a, b), []])
                if (first[2], later[2]) not in seen[1]:
                    seen[1].append((first[2], later[2]))
                continue
            raise _race(n, later, first, a, b)
        (live_w if it[3] else live_r).append(it)
    return [_twice(n, *at, pairs) for at, pairs in twice.values()]


def _race(n: int, cur, prev, lo: int, hi: int) -> DataRaceError:
    a = _describe(cur[2], n, cur[4], cur[3], cur[0], cur[1])
    b = _describe(prev[2], n, prev[4], prev[3], prev[0], prev[1])
    kind = "write/write" if cur[3] and prev[3] else "read/write"
    why = ("nothing orders one block's GM accesses with another's (ptopipe runs the blocks one after "
           "another, the device at once)")
    fix = BLOCK_FIX
    if cur[3] in _ATOMIC_OP or prev[3] in _ATOMIC_OP:
        plain, kind = (b, cur[3]) if cur[3] in _ATOMIC_OP else (a, prev[3])
        if cur[3] in _ATOMIC_OP and prev[3] in _ATOMIC_OP:       # two atomic ops of different kinds
            plain, kind = a, prev[3]
        why += "; " + atomic_why(_ATOMIC_OP[kind])
        fix = atomic_fix(f"block {plain['block']}'s {plain['op']} at {plain['where']}", blocks=True,
                         op=_ATOMIC_OP[kind])
    return DataRaceError(
        f"data race ({kind}) on GM between blocks: block {a['block']} {a['core']} {a['op']} and block "
        f"{b['block']} {b['core']} {b['op']} touch the same bytes, and the {n} blocks of a launch run at "
        "the same time",
        where=a["where"],
        details="\n".join([_line(a), _line(b),
                           f"overlap within GM[{lo:#x}, {hi:#x}); {why}"]),
        fix=fix,
        findings=[{"kind": "data_race", "type": kind, "blocks": [b["block"], a["block"]], "access": a,
                   "other": b}])


def _twice(n: int, first, later, lo: int, hi: int, pairs: list) -> tuple:
    """The warning of identical bytes written by two blocks at the same two lines: the first
    pair's overlap, and every pair of blocks that did it (``pairs``: (block, block))."""
    a = _describe(later[2], n, later[4], True, later[0], later[1])
    b = _describe(first[2], n, first[4], True, first[0], first[1])
    more = "" if len(pairs) == 1 else f" (so do blocks {', '.join(f'{x} and {y}' for x, y in pairs[1:])})"
    who = (f"blocks {b['block']} and {a['block']}{more} both run the {a['op']} at {a['where']}"
           if a["where"] == b["where"]
           else f"block {a['block']} {a['core']} {a['op']} and block {b['block']} {b['core']} {b['op']} "
                f"(at {b['where']}){more}")
    return (f"{who} on the same bytes of GM (first [{lo:#x}, {hi:#x})) and the blocks run at the same time: "
            "they store identical data, so the result does not depend on their order, but the work is "
            f"done twice - {BLOCK_FIX}", a["where"])
