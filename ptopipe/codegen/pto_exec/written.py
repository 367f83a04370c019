"""Which local bytes a core's kernel has written, to name a tile read before anything wrote
it: the simulator's memories start at zero, so such a read gives zeros here and stale data on
the device - a bias added before it is loaded, an accumulator never initialised.

A tile counts as written over the bytes its valid region spans (first to last valid element,
the rows between included) by any op that writes it (TLOAD, an op's ``outs``, TPOP's binding);
a read is judged over the same span, so another name for the same bytes (an in-place alias at
one address) counts too, and a window view (``pto.subview``: its source's row stride, so its
static extent may run past its source) is judged by the bytes it can touch.  A tile whose valid shape is empty (AIV1's
push of a no-split tile it did not compute) reads nothing.  A finding is a warning, once per op
and tile: the run goes on and computes what the device would.
"""
from __future__ import annotations

from ... import isa
from ...sim.written import WrittenBytes


class Written(WrittenBytes):
    """Written byte ranges per memory of one core, and the (op, tile) pairs already reported."""

    __slots__ = ("reported",)

    def __init__(self):
        super().__init__()
        self.reported = set()

    def wrote(self, tile) -> None:
        if not isinstance(tile, isa.Tile) or tile.addr is None or tile.empty:
            return
        self.add(tile.space, *_span(tile))

    def covered(self, tile) -> bool:
        return self.covers(tile.space, *_span(tile))

    def read(self, ex, s, tile, warnings: list, transport: bool = False) -> None:
        """Warn (once per op and tile) when ``tile`` is read with bytes nothing wrote.  A
        ``transport`` read (a TPUSH) warns only when nothing wrote any of them: pypto widens a
        tile's valid shape to its box around a push (set_validshape) and the consumer pops the
        part that was computed, so a partly written pushed tile is its idiom, not a mistake."""
        if not isinstance(tile, isa.Tile) or tile.addr is None or tile.empty or self.covered(tile):
            return
        if transport and self.touches(tile.space, *_span(tile)):
            return
        key = (id(s), tile.name)
        if key in self.reported:
            return
        self.reported.add(key)
        warnings.append(f"{ex.where(s)}: {s.name} reads {tile.name or 'a tile'} ({tile.describe()}) before "
                        "anything wrote its bytes: it holds what the memory held (zeros in the "
                        "simulator, stale data on the device)")


def _span(tile) -> tuple:
    """[lo, hi) of the bytes ``tile``'s (non-empty) valid region spans in its memory."""
    return tile.addr, tile.addr + ((tile.valid_rows - 1) * tile.cols + tile.valid_cols) * tile.item
