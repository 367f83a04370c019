"""sim: the machine - Cluster (1 AIC + 2 AIV), memories, cross-core flags, scheduler, clock."""
from .cluster import Cluster
from .core import Core, CoreKind, CoreState
from .flags import Flag
from .location import SourceLoc, user_loc
from .memory import Memory, gm_layout

__all__ = ["Cluster", "Core", "CoreKind", "CoreState", "Flag", "Memory", "SourceLoc",
           "gm_layout", "user_loc"]
