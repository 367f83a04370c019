"""The IR's small vocabulary, shared by its ops, the DSL and the textual forms: where a
value or op comes from (:class:`Loc`), what kind of function a kernel is
(:class:`FunctionKind`), and ``pl.AUTO`` (a reserve_buffer base the compiler chooses)."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


@dataclass(frozen=True)
class Loc:
    file: str
    line: int
    col: int = 1
    #: a GM load / store sliced for one Vector core by a split mode (ExpandMixedKernel):
    #: (TileSplitAxis, the per-core extent on the split axis), so a runtime error can speak
    #: in the coordinates of the statement as written; None for everything else
    lane_split: tuple | None = field(default=None, compare=False)
    #: a ``.pto`` load / store: the location of the ``pto.partition_view`` that made its GM
    #: window, so a bounds report names where the offsets are written; None for everything else
    window: "Loc | None" = field(default=None, compare=False)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class _Auto:
    """``pl.AUTO``: let the compiler choose a reserve_buffer's base address."""
    _inst = None

    def __new__(cls):
        if cls._inst is None:
            cls._inst = super().__new__(cls)
        return cls._inst

    def __repr__(self) -> str:
        return "pl.AUTO"

    def __reduce__(self):
        return (_Auto, ())


AUTO = _Auto()


class FunctionKind(Enum):
    InCore = "incore"    # mixed: Cube and Vector work in one function
    AIC = "aic"
    AIV = "aiv"
    Group = "group"      # a co-scheduled AIC + AIV group
