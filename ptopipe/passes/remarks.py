"""Optimization remarks: what a pass did, did not do and why, at a source line (LLVM's
``-Rpass`` / ``-Rpass-missed`` / ``-Rpass-analysis``).

A :class:`Remark` is plain data (the pass, a :class:`RemarkKind`, the :class:`~ptopipe.ir.vocab.Loc`
of the op it is about, the message); passes add them to the :class:`Remarks` collector of
their :class:`~.manager.PassContext` (``ctx.remarks``), which the PassManager hands to
every pass of a run and ``ptopipe compile --remarks`` prints.  A pass run without a context
(``run(program)``) reports to nothing (:func:`remarks_of`).  Anything that can name a pass,
a line and a sentence can become a remark: a note of another part of the compiler is one
``Remarks.add`` away.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ..errors import shown_locations, shown_where
from ..ir.vocab import Loc


class RemarkKind(Enum):
    """What a remark says: a transformation a pass made (``applied``), one it considered and
    left out (``missed``, with the reason) or a fact it found (``analysis``)."""
    APPLIED = "applied"
    MISSED = "missed"
    ANALYSIS = "analysis"


#: ``--remarks=WHICH`` -> the kinds printed
REMARK_FILTERS = {"missed": frozenset({RemarkKind.MISSED}),
                  "all": frozenset(RemarkKind)}


@dataclass(frozen=True)
class Remark:
    pass_name: str
    kind: RemarkKind
    loc: Loc | None
    message: str

    def render(self) -> str:
        """``file:line:col: remark: [pass] kind: message`` (``<unknown>`` without a location),
        the file as an error's text shows it (:func:`~ptopipe.errors.shown_where`: relative
        below the working directory); ``loc`` keeps the path as located, for tools."""
        where = shown_where(str(self.loc)) if self.loc is not None else "<unknown>"
        return f"{where}: remark: [{self.pass_name}] {self.kind.value}: {shown_locations(self.message)}"

    def __str__(self) -> str:
        return self.render()


def _loc_of(at) -> Loc | None:
    """``at``: a Loc, an op (its ``loc``) or None."""
    if at is None or isinstance(at, Loc):
        return at
    return getattr(at, "loc", None)


@dataclass
class Remarks:
    """The remarks of one compile, in the order the passes made them."""
    items: list = field(default_factory=list)

    def add(self, remark: Remark) -> None:
        if remark not in self.items:      # a pass that revisits a candidate says it once
            self.items.append(remark)

    def emit(self, pass_name: str, kind: RemarkKind, at, message: str) -> None:
        self.add(Remark(pass_name, kind, _loc_of(at), message))

    def missed(self, pass_name: str, at, message: str) -> None:
        self.emit(pass_name, RemarkKind.MISSED, at, message)

    def applied(self, pass_name: str, at, message: str) -> None:
        self.emit(pass_name, RemarkKind.APPLIED, at, message)

    def analysis(self, pass_name: str, at, message: str) -> None:
        self.emit(pass_name, RemarkKind.ANALYSIS, at, message)

    def select(self, which: str = "all") -> list:
        """The remarks of the kinds ``which`` names (:data:`REMARK_FILTERS`)."""
        kinds = REMARK_FILTERS[which]
        return [r for r in self.items if r.kind in kinds]

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


class _Discard(Remarks):
    """Where the remarks of a pass run without a context go."""

    def add(self, remark: Remark) -> None:
        pass


def remarks_of(ctx) -> Remarks:
    """The collector of ``ctx`` (a PassContext), or one that keeps nothing."""
    r = getattr(ctx, "remarks", None)
    return r if isinstance(r, Remarks) else _Discard()
