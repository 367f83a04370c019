"""Which local bytes a core's kernel has written, to name a tile read before anything wrote
it: the simulator's memories start at zero, so such a read gives zeros here and stale data on
the device - a bias added before it is loaded, an accumulator never initialised.

A tile counts as written whole by any op that writes it (TLOAD, an op's ``outs``, TPOP's
binding); a read is judged over the tile's whole static bytes, so another name for the same
bytes (an in-place alias at one address) counts too.  A tile whose valid shape is empty (AIV1's
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
        if not isinstance(tile, isa.Tile) or tile.addr is None:
            return
        self.add(tile.space, tile.addr, tile.addr + tile.nbytes)

    def covered(self, tile) -> bool:
        return self.covers(tile.space, tile.addr, tile.addr + tile.nbytes)

    def read(self, ex, s, tile, warnings: list) -> None:
        """Warn (once per op and tile) when ``tile`` is read with bytes nothing wrote."""
        if not isinstance(tile, isa.Tile) or tile.addr is None or self.covered(tile):
            return
        if not (tile.valid_rows and tile.valid_cols):
            return
        key = (id(s), tile.name)
        if key in self.reported:
            return
        self.reported.add(key)
        warnings.append(f"{ex.where(s)}: {s.name} reads {tile.name or 'a tile'} ({tile.describe()}) before "
                        "anything wrote its bytes: it holds what the memory held (zeros in the "
                        "simulator, stale data on the device)")
