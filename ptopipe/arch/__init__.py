"""arch: platform descriptions (A2A3, A5), their cost tables, and the one vocabulary of
every layer (dtypes, memories and tile types, pipes, directions, alignment, the op
catalogue).  Pure data."""
from .costs import CostTable
from .platform import A2A3, A5, PLATFORMS, Platform, PlatformID, get_platform
from .vocab import ALIGNMENT, MemSpace, PipeUnit, TileType

__all__ = ["A2A3", "A5", "ALIGNMENT", "PLATFORMS", "CostTable", "MemSpace", "PipeUnit", "Platform",
           "PlatformID", "TileType", "get_platform"]
