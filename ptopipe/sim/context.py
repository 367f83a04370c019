"""The run a cluster belongs to, as the layers above the machine see it: what the launch
decided (:class:`RunContext`, frozen: the protocol and the arguments' GM extents, the same
for every launch of a run) and what those layers keep while the cluster lives
(:class:`RunState`: the bound pipes, the TPRINT texts, the report's timeline).

The machine itself reads none of it; it is defined here, on the cluster's layer, so that
every cluster has one (a cluster made without a launch has the defaults) and each field has
one type and one default for every reader: the protocol model, the ISA's pipes and checks,
the runtime and the reports.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ..arch.vocab import Protocol


class GmArg(NamedTuple):
    """The GM extent ``[lo, hi)`` of the array argument ``name`` of a run."""
    name: str
    lo: int
    hi: int


@dataclass(frozen=True)
class RunContext:
    """What the launch of a run decided for every layer above the machine."""
    #: the ring protocol the pipes follow (``ptopipe.run(protocol=...)``)
    protocol: Protocol = Protocol.SPEC
    #: where the array arguments are in GM: a ring placed through a raw pointer must stay in its own
    gm_args: tuple[GmArg, ...] = ()
    #: the ISA's replayed fast paths (TPUSH's queued copies per source array, TPOP's
    #: re-binding to its next staging slot, the race checker's inline GM regions); False takes
    #: the reference path of each, which gives the same results, trace and errors, slower
    fast_paths: bool = True
    #: the pto-isa release a ``pto-isa@<commit>`` run models (its full hash; None: the fixed
    #: library), resolved by ``ptopipe.protocol.versions``
    library: str | None = None
    #: the blocks of each launch (``ptopipe.run(blocks=N)``): one cluster each, ``get_block_num()``
    blocks: int = 1

    @property
    def protocol_name(self) -> str:
        """The protocol as the user named it: "pto-isa@8d74fb38", "spec", ..."""
        return f"{self.protocol.value}@{self.library[:8]}" if self.library else self.protocol.value

    def __post_init__(self):
        if not isinstance(self.protocol, Protocol):
            object.__setattr__(self, "protocol", Protocol(self.protocol))
        object.__setattr__(self, "gm_args", tuple(GmArg(*a) for a in self.gm_args))


@dataclass
class RunState:
    """What the layers above the machine keep for one cluster, as long as it lives."""
    #: the bound pipes (:class:`ptopipe.isa.pipe.Channel` by ``(way, ready id, peers)``),
    #: in binding order
    channels: dict = field(default_factory=dict)
    #: TPRINT / PRINT texts: ``((time, core index, seq), text)`` in issue order
    prints: list = field(default_factory=list)
    #: the prints were written out (``flush_prints``: once per cluster)
    prints_flushed: bool = False
    #: the report's timeline of a traced run and the trace sizes it was built from
    #: (:func:`ptopipe.report.timeline.timeline`; rebuilt when the trace grew)
    timeline: tuple | None = None
    #: a kernel asked for its block index or the number of blocks (get_block_idx / get_block_num)
    asked_block: bool = False
