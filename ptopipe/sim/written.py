"""Which bytes of a core's local memories instructions have written since the launch began:
sorted, disjoint ``[lo, hi)`` intervals per memory space.  The simulator's memories start at
zero (or, in a relaunch, as the last launch left them), so a read of bytes nothing wrote gives
numbers the device does not: there they hold whatever the previous kernel left."""
from __future__ import annotations

from bisect import bisect_right

#: up to this many ranges in a memory, ``covers`` scans them (cheaper than a bisection)
_SCAN = 8


class WrittenBytes:
    """Written byte ranges per memory space of one core."""

    __slots__ = ("ranges",)

    def __init__(self):
        self.ranges: dict = {}           # memory space -> [[lo, hi], ...], sorted and disjoint

    def add(self, space, lo: int, hi: int) -> None:
        if self.covers(space, lo, hi):      # the common case: the same tile written again
            return
        merged = [lo, hi]
        keep = []
        for r in self.ranges.get(space, ()):
            if r[1] < merged[0] or r[0] > merged[1]:
                keep.append(r)
            else:                               # overlapping or touching: one range
                merged = [min(merged[0], r[0]), max(merged[1], r[1])]
        keep.append(merged)
        keep.sort()
        self.ranges[space] = keep

    def covers(self, space, lo: int, hi: int) -> bool:
        rs = self.ranges.get(space, ())
        if len(rs) <= _SCAN:
            # (the checked hot path: a few ranges, scanned) the first range ending at or after
            # hi is the only one that can hold [lo, hi): every one before it ends before hi
            for r in rs:
                if r[1] >= hi:
                    return r[0] <= lo
            return False
        i = bisect_right(rs, [lo, float("inf")]) - 1
        return i >= 0 and rs[i][0] <= lo and rs[i][1] >= hi

    def touches(self, space, lo: int, hi: int) -> bool:
        """Was any byte of ``[lo, hi)`` written?"""
        rs = self.ranges.get(space, ())
        i = bisect_right(rs, [hi, float("-inf")]) - 1     # the last range starting before hi
        return i >= 0 and rs[i][1] > lo
