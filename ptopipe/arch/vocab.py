"""The cross-core vocabulary shared by every layer: pipe directions, split axes, FIFO kinds,
the protocol selector and the two ring ways.  Pure data (enums and constants); ``isa``
re-exports them for kernels, ``ir`` and ``language`` use them without importing ``isa``."""
from __future__ import annotations

from enum import Enum, IntEnum


class Direction(IntEnum):
    """``TPipe`` / ``*_initialize_pipe`` direction (seed 003 DIR_MASK 1/2/3, pto-isa's extras)."""
    DIR_C2V = 1
    DIR_V2C = 2
    DIR_BOTH = 3
    DIR_V2C_CTRL = 4
    DIR_C2V_GM = 5
    DIR_V2C_GM = 6
    DIR_BOTH_GM = 7


class TileSplitAxis(IntEnum):
    """How a pushed tile is divided between the two Vector sub-blocks."""
    TILE_NO_SPLIT = 0
    TILE_UP_DOWN = 1
    TILE_LEFT_RIGHT = 2


class FIFOType(Enum):
    """Where a ``TMPipe`` ring lives."""
    GM_FIFO = "GM_FIFO"
    VEC_FIFO = "VEC_FIFO"
    MAT_FIFO = "MAT_FIFO"
    CTRL_FIFO = "CTRL_FIFO"

    __hash__ = object.__hash__


class VecCubeRatio(Enum):
    V2C1_VECS = (0, 1)     # 1 Cube, 2 Vector cores
    V2C2_VECS = (0,)       # 1 Cube, 1 Vector core


class Protocol(Enum):
    """Which ring protocol a run follows: seed 003 (``spec``) or pto-isa's C++ (``pto-isa``)."""
    SPEC = "spec"
    PTO_ISA = "pto-isa"


DIR_C2V, DIR_V2C, DIR_BOTH = Direction.DIR_C2V, Direction.DIR_V2C, Direction.DIR_BOTH
DIR_V2C_CTRL, DIR_C2V_GM = Direction.DIR_V2C_CTRL, Direction.DIR_C2V_GM
DIR_V2C_GM, DIR_BOTH_GM = Direction.DIR_V2C_GM, Direction.DIR_BOTH_GM
TILE_NO_SPLIT, TILE_UP_DOWN = TileSplitAxis.TILE_NO_SPLIT, TileSplitAxis.TILE_UP_DOWN
TILE_LEFT_RIGHT = TileSplitAxis.TILE_LEFT_RIGHT
#: the two ring ways of a channel (one unidirectional ring each)
C2V, V2C = "C2V", "V2C"
