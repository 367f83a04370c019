"""The read-before-write check: a tile read with bytes no instruction of the launch wrote.

The simulator's memories start at zero (a relaunch's, as the last launch left them), so a
kernel that adds a bias it never loaded, or pushes a tile whose TMOV was dropped, computes
plausible numbers here and garbage on the device, where local memory holds whatever the last
kernel left.  With the checkers on, :class:`UnwrittenReads` (one per core and launch, made by
:class:`~ptopipe.isa.checks.KernelChecks`) sees every instruction's operands where the core
issues it (``Core.issue*``), so every front end (Python kernels, C++ kernels through the C ABI,
the DSL runtime, ``.pto`` files) gets it at the instruction's line:

- an instruction's destinations are written over the bytes their valid region spans (first to
  last valid element, the rows between included): TLOAD, TMOV, TEXTRACT, an op's destination,
  TPOP's staging copy or zero-copy binding (:meth:`UnwrittenReads.wrote` where no tile is
  issued), the fixpipe;
- a reduction writes one value per row (column) into column 0 (row 0) of its destination, as
  pto-isa's TROWMAX / TCOLSUM ... do: a row-major destination with more valid columns (rows)
  than that has only those bytes written (:func:`writes_part`), so a later read of the rest -
  a TROWEXPAND* taking the [R, 8] result as its 32-byte-block operand - is a read of bytes
  nothing wrote;
- its sources are read over the same span; a read of bytes nothing wrote is a run warning,
  once per line, instruction and tile.  Bytes are what counts, so another name for the same
  bytes (a TASSIGN alias at one address) written is the tile written;
- a TPUSH moves its tile rather than computing with it: it warns only when nothing wrote any
  of its bytes (pypto widens an Acc's valid shape to its box around a push and the consumer
  pops the part that was computed);
- a tile whose valid region is empty reads and writes nothing, nor does a TRESHAPE in place
  (a new view of the same bytes);
- a Python kernel that sets a tile's bytes through ``Tile.array`` (a test's shortcut, no
  instruction of the device) has written its valid region.

The hot path is one identity test per operand, inline in the issue methods: a tile known to be
written at its current bytes carries this core's checker (``Tile.known_written``, None with the
checkers off, as the core's ``unwritten``); a new address or valid shape
clears it (:func:`~ptopipe.isa.tile.bind`, ``Tile.SetValid``), and the next launch has other
checkers, so nothing is carried from one launch to the next: local memory is not the
previous launch's to read.
"""
from __future__ import annotations

from contextlib import contextmanager

from ..arch.vocab import TileLayout
from ..sim.written import WrittenBytes
from .tile import Tile

#: the words of every warning of this check (front ends pick its findings out of a run's)
UNWRITTEN = "before anything wrote its bytes"

#: instructions that move their source tile to another core rather than compute with it
TRANSPORT = frozenset({"TPUSH"})
#: instructions whose destination at its source's address is another view of the same bytes:
#: they move nothing (pto-isa aliases them), so they neither read nor write
VIEWS = frozenset({"TRESHAPE"})


class UnwrittenReads(WrittenBytes):
    """Written byte ranges of one core's local memories in one launch, and the reads of bytes
    none wrote.  The core's ``issue*`` methods call :meth:`read` / :meth:`wrote` for an
    operand not known to be written (:attr:`Tile.known_written`), :meth:`operands` for the
    operands of an instruction of any arity."""

    __slots__ = ("core", "reported", "spans")

    def __init__(self, core):
        super().__init__()
        self.core = core
        self.reported: set = set()      # (line, instruction, tile) already warned of
        # (memory space, lo, hi) known to be written: the spans a tile is rebound to again and
        # again (a TPOP's staging slots) are found without a range search.  Written bytes only
        # grow within a launch, so a span once covered stays covered.
        self.spans: set = set()
        core.unwritten = self

    def operands(self, srcs, dsts, name: str) -> None:
        """Instruction ``name`` reads the tiles ``srcs``, then writes ``dsts`` (an in-place op
        reads its destination's old value first)."""
        if name in VIEWS and dsts[0]._addr == srcs[0]._addr:
            return
        for s in srcs:
            if s.__class__ is Tile and s.known_written is not self:
                self.read(s, name)
        for d in dsts:
            if d.__class__ is Tile and d.known_written is not self:
                self.wrote(d)

    def wrote(self, t: Tile) -> None:
        """``t``'s valid region has been written (an instruction's destination, a TPOP's binding)."""
        a = t._addr                     # (_span, inline: a TPOP rebinds its tile every time)
        vr, vc = t.valid_rows, t.valid_cols
        if a is None or vr == 0 or vc == 0:
            return
        key = (t.space, a, a + ((vr - 1) * t.cols + vc) * t.item)
        spans = self.spans
        if key not in spans:
            if not self.covers(*key):
                self.add(*key)
            spans.add(key)
        t.known_written = self

    def wrote_block(self, t: Tile, rows: int, cols: int) -> None:
        """The first ``cols`` columns of the first ``rows`` rows of row-major ``t`` have been
        written (a reduction's one value per row or column)."""
        a = t._addr
        if a is None or rows <= 0 or cols <= 0:
            return
        pitch, width = t.cols * t.item, cols * t.item
        for r in range(rows):
            lo = a + r * pitch
            self.add(t.space, lo, lo + width)

    def covered(self, t: Tile) -> bool:
        """Has every byte of ``t``'s valid region been written?"""
        if t.known_written is self:
            return True
        span = _span(t)
        return span is None or self.covers(t.space, *span)

    def read(self, t: Tile, name: str) -> None:
        """Instruction ``name`` reads ``t``: warn when bytes of its valid region were never
        written (a transport: when none were)."""
        span = _span(t)
        if span is None:
            return
        key = (t.space, *span)
        if key in self.spans or self.covers(*key):
            self.spans.add(key)
            t.known_written = self
            return
        if name in TRANSPORT and self.touches(t.space, *span):
            return
        core = self.core
        where = core.where()
        key = (where, name, t.name or id(t))
        if key in self.reported:
            return
        self.reported.add(key)
        op = core.op_word or name
        core.cluster.warnings.append((
            f"{op} reads {t.name or 'a tile'} ({t.describe()}) {UNWRITTEN}: it holds what "
            "the memory held (zeros in the simulator, stale data on the device) - write it first (TLOAD, "
            "TEXPANDS, the instruction that computes it)", where))


@contextmanager
def writes_part(core, t: Tile, rows: int, cols: int):
    """The instruction issued inside writes only the first ``cols`` columns of the first
    ``rows`` rows of its destination ``t`` (a reduction's result column or row): those bytes
    are recorded written, and the issue does not record the rest of ``t``'s valid region."""
    uw = core.unwritten
    if uw is None or t.known_written is uw or t.layout is not TileLayout.ND or (rows >= t.valid_rows and cols >= t.valid_cols):
        yield
        return
    uw.wrote_block(t, rows, cols)
    t.known_written = uw                # (what the issue tests before recording the whole tile)
    try:
        yield
    finally:
        t.known_written = None


def _span(t: Tile) -> "tuple | None":
    """[lo, hi) of the bytes ``t``'s valid region spans in its memory (None: it spans none -
    an empty valid region, or no address)."""
    a = t._addr
    vr, vc = t.valid_rows, t.valid_cols
    if a is None or vr == 0 or vc == 0:
        return None
    return a, a + ((vr - 1) * t.cols + vc) * t.item
