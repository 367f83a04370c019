"""arch: platform descriptions (A2A3, A5) and their cost tables.  Pure data."""
from .costs import CostTable, PipeUnit
from .platform import A2A3, A5, PLATFORMS, MemSpace, Platform, PlatformID, get_platform

__all__ = ["A2A3", "A5", "PLATFORMS", "CostTable", "MemSpace", "PipeUnit", "Platform",
           "PlatformID", "get_platform"]
