"""A kernel's scalar reads and writes of one element of a Vec tile: pto-isa's
``Tile::GetValue(offset)`` / ``Tile::SetValue(offset, value)`` (pto_tile.hpp), the scalar unit
addressing UB at ``data() + offset`` elements.

Each is an instruction on the scalar pipe (PIPE_S) that reads or writes the tile: the automatic
synchronisation orders it after the vector instruction that wrote the tile (a manual kernel
waits with its own events, as on the device), and the unwritten-byte and race checkers see
it.  The offset counts elements from the tile's address over its static shape (row-major), as
the pointer arithmetic does; one past the tile is an error, where the device would read or
write whatever follows it."""
from __future__ import annotations

import numpy as np

from ..arch import PipeUnit
from ..errors import KernelError
from .context import current_core
from .ops import arr
from .tile import Tile, TileType


def _element(core, tile: Tile, offset, what: str) -> np.ndarray:
    """The flat view of ``tile``'s static elements, checked for a ``what`` at ``offset``."""
    core.unrecorded(what)                       # a use of the machine no recorded call makes
    if not isinstance(tile, Tile):
        raise KernelError(f"{what}: {tile!r} is not a tile", where=str(core.where()))
    if tile.loc is not TileType.Vec:
        raise KernelError(f"{what} of {tile.describe()}: pto-isa reads and writes a Vec tile's elements only "
                          "(\"Location of tile must be Location::Vec\")", where=str(core.where()),
                          fix="move the value into a Vec tile first")
    arr(tile, core, what)                       # (bound here, not freed)
    n = tile.rows * tile.cols
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or not 0 <= offset < n:
        raise KernelError(f"{what}({offset!r}) of {tile.describe()}: the offset is not one of its {n} elements",
                          where=str(core.where()),
                          fix=f"give an element offset 0..{n - 1} (row * {tile.cols} + column)")
    return tile._full.reshape(-1)


def get_value(tile: Tile, offset: int):
    """The element ``offset`` of Vec tile ``tile`` (``Tile::GetValue``), as a numpy scalar."""
    core = current_core()
    flat = _element(core, tile, offset, "GetValue")
    core.issue_r(PipeUnit.S, core.costs.scalar_op, tile, "GetValue")
    core.cluster.sync()                         # (the value is Python's now: the queued work first)
    return flat[int(offset)][()]


def set_value(tile: Tile, offset: int, value) -> None:
    """Write ``value`` (in the tile's element type) to element ``offset`` of Vec tile ``tile``
    (``Tile::SetValue``)."""
    core = current_core()
    flat = _element(core, tile, offset, "SetValue")
    v = np.asarray(value).astype(tile.dtype)        # (as the C++ assignment converts: wrapping)
    core.issue_w(PipeUnit.S, core.costs.scalar_op, tile, "SetValue")
    core.pending.append((flat.__setitem__, int(offset), v))
