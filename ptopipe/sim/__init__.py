"""sim: the machine - Cluster (1 AIC + 2 AIV), memories, cross-core flags, scheduler (and the
schedule policies of an exploring run: :mod:`.schedule`), clock, intra-core event flags and
the manual synchronisation mode (pipesync), and the bounds of a run (instruction budget,
simulated time, wall-clock watchdog)."""
from .bounds import DEFAULT_MAX_INSTRUCTIONS, DEFAULT_TIMEOUT
from .cluster import Cluster
from .context import GmArg, RunContext, RunState
from .core import Core, CoreKind, CoreState
from .flags import Flag
from .location import SourceLoc, user_loc
from .memory import Memory, gm_layout

__all__ = ["DEFAULT_MAX_INSTRUCTIONS", "DEFAULT_TIMEOUT", "Cluster", "Core", "CoreKind", "CoreState", "Flag", "GmArg", "Memory",
           "RunContext", "RunState", "SourceLoc", "gm_layout", "user_loc"]
