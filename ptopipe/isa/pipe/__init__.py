"""The cross-core pipes: TPipe / TMPipe, the seed-003 init API, and TPUSH / TPOP / TFREE /
TALLOC for both the tile flow and the address-based GlobalTensor flow.

One :class:`Channel` is one unidirectional ring (C2V or V2C) between the Cube core and its
Vector peers.  The package is split along its seams:

``config``       TPipe, TMPipe, ``aic_/aiv_initialize_pipe``
``protocol``     the ring protocol as data: ``SpecModel`` (seed 003) / ``PtoIsaModel``
``channel``      channel, slot and side state; the PipeHandle a kernel holds
``binding``      binding a core's half of a pipe (flags, rings, start-up credits)
``geometry``     split geometry of a slot (the one copy)
``plans``        push/pop plans per tile geometry, layout checks
``steps``        protocol steps shared by all flows (waits, signals, release)
``ops``          the tile flow: TPUSH / TPOP / TFREE
``flows``        the address flow (TALLOC, GlobalTensor TPUSH/TPOP) and the control flow
``diagnostics``  ring state, holdings, misuse errors, leaks at kernel end
``cpusim``       pto-isa's CPU simulator's one ring of a DIR_BOTH pipe, replayed
"""
from ...arch.vocab import (C2V, DIR_BOTH, DIR_BOTH_GM, DIR_C2V, DIR_C2V_GM, DIR_V2C, DIR_V2C_CTRL,  # noqa: F401
                           DIR_V2C_GM, TILE_LEFT_RIGHT, TILE_LEFT_RIGHT_ODD, TILE_NO_SPLIT, TILE_UP_DOWN,
                           TILE_UP_DOWN_ODD, V2C, Direction,
                           FIFOType, Protocol, TileSplitAxis, VecCubeRatio)
from .binding import bind_pipe, channels  # noqa: F401
from .channel import Channel, PipeHandle, Side, Slot  # noqa: F401
from .config import TMPipe, TPipe, aic_initialize_pipe, aiv_initialize_pipe  # noqa: F401
from .diagnostics import describe_ring, holdings, leaks, ring_state, slot_use_after_free  # noqa: F401
from .flows import TALLOC, SlotPtr  # noqa: F401
from .ops import TFREE, TPOP, TPOPDONE, TPUSH  # noqa: F401
from ...protocol.model import PTO_ISA, PTO_ISA_A5, SPEC, ProtocolModel, PtoIsaModel, SpecModel, model_for  # noqa: F401
