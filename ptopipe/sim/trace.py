"""The records of a traced run (``Cluster(trace=True)``), defined once for the recorders
(sim, isa) and the readers (report).

They are ``NamedTuple``s: as cheap to build as the plain tuples they replace (only built
when tracing is on), still tuples for code that unpacks them, and read by field name.
``Cluster.trace`` holds :class:`Instr`, ``Cluster.waits`` :class:`Hold` and
``Cluster.signals`` :class:`Signal`; an instruction's ``args`` is one of :class:`RingArgs`,
:class:`TileArgs`, :class:`MatmulArgs` or ``None``.
"""
from __future__ import annotations

from typing import NamedTuple


class Instr(NamedTuple):
    """One issued instruction (in issue order across the cluster)."""
    core: int
    """Index of the issuing core in ``Cluster.cores`` (0 AIC, 1 AIV0, 2 AIV1)."""
    pipe: int
    """The :class:`~ptopipe.arch.PipeUnit` that executed it."""
    name: str
    """The mnemonic (``TPUSH``, ``TMATMUL``, ...)."""
    start: int
    """Cycle its pipe started it."""
    end: int
    """Cycle its pipe finished it (``end - start`` is its cost)."""
    args: object = None
    """What it worked on: a :class:`RingArgs`, :class:`TileArgs`, :class:`MatmulArgs` or None."""
    loc: object = None
    """The kernel source line that issued it (a :class:`~ptopipe.sim.location.SourceLoc`:
    the Python, DSL, ``.pto`` or C++ line), None where no kernel line is known."""


class RingArgs(NamedTuple):
    """Args of a ring instruction (TPUSH, TPOP, TFREE, TALLOC)."""
    channel: str
    """Name of the ring (channel) it works on."""
    tag: "int | None"
    """The slot / tag it used; None for a TFREE that had nothing to free (a no-op)."""
    shape: "tuple | None" = None
    """Shape of the tile moved, when a tile was moved."""
    kind: "str | None" = None
    """How it moved no tile: ``ctrl`` (control flow only), ``addr`` (an address handed
    over), ``commit`` (data written by TSTOREs), ``no-op``; None when it moved a tile."""


class TileArgs(NamedTuple):
    """Args of a data instruction (TLOAD, TSTORE, TMOV, TEXTRACT, vector ops)."""
    shape: tuple
    """Shape of the data moved or computed (rows, cols)."""
    dtype: object
    """Its element type."""


class MatmulArgs(NamedTuple):
    """Args of a TMATMUL*: an ``m x k @ k x n`` product."""
    m: int
    k: int
    n: int


class Hold(NamedTuple):
    """A span during which a core's instruction issue was held."""
    core: int
    """Index of the held core."""
    kind: str
    """Why: ``ready`` (a TPOP waits for data), ``free`` (a TPUSH/TALLOC waits for a slot),
    ``flag`` (another flag), ``event`` (TSYNC)."""
    start: int
    """Cycle the hold began (the core's issue clock)."""
    end: int
    """Cycle issue resumed."""
    what: object = None
    """What was waited for: the :class:`~ptopipe.sim.flags.Flag`, an event, or None."""
    loc: object = None
    """The kernel source line whose instruction waited (a ``SourceLoc``), or None."""


class Signal(NamedTuple):
    """A cross-core SET."""
    sender: int
    """Index of the core that set the flag."""
    flag: object
    """The :class:`~ptopipe.sim.flags.Flag` set (its receiver, id, signal and owner ring)."""
    at: int
    """Cycle of the SET (it arrives ``cross_core_latency`` cycles later)."""


__all__ = ["Hold", "Instr", "MatmulArgs", "RingArgs", "Signal", "TileArgs"]
