"""ptopipe: write, run and check Ascend PTO cross-core (TPUSH/TPOP) kernels without an NPU.

Quick start::

    import ptopipe
    from ptopipe.isa import *

    res = ptopipe.run(aic=cube_kernel, aiv=vector_kernel, args={...}, platform="a2a3")
    res.outputs["out"], res.summary.format()
"""
from ._startup import guard as _guard

_guard()            # first: Ctrl-C while the ptopipe command imports is one line, not a traceback

from .errors import (BudgetError, CompileError, ConfigError, DataRaceError, DeadlockError, KernelError,
                     LeakError, MemoryConflictError, MismatchError, ParseError, ProtocolError, PtoPipeError)
from ._lazy import lazy_exports as _lazy_exports

# The rest of the facade loads on first use (``ptopipe.run`` imports the instruction API and
# the simulator then), so ``import ptopipe`` costs next to nothing beyond numpy.
__getattr__, __dir__ = _lazy_exports(__name__, {
    "A2A3": ".arch", "A5": ".arch", "Platform": ".arch", "get_platform": ".arch",
    "RunResult": ".isa.launch", "RunSummary": ".isa.launch", "compare": ".isa.launch",
    "gm_buffer": ".isa.launch", "run": ".isa.launch",
    "Scenario": ".isa.scenario",
}, submodules=("arch", "ir", "isa", "protocol", "runtime", "sim"))


def run_pto(path=None, *, static: bool = True, **kwargs):
    """Run a ``.pto`` (PTO-AS) file on the simulated cluster with buffer semantics, as
    ptoas's C++ would run on the device: :func:`ptopipe.codegen.pto_load.run_pto`.  With
    ``static`` (default) the static verifier runs first where its IR expresses the file, as
    ``ptopipe run`` does: its findings are raised, its warnings and a skip are in ``.warnings``
    / ``.notes``."""
    from .codegen.pto_load import run_pto as _run_pto
    return _run_pto(path, static=static, **kwargs)


def check(target, schedules: int = 50, **kwargs):
    """The Python form of ``ptopipe check``: run ``target`` (a :class:`Scenario`, or an
    ``(aic, aiv)`` pair with ``args=``) under the default schedule and ``schedules`` explored
    ones, with every checker on - :func:`ptopipe.isa.explore.explore` (its keywords: ``seed``,
    ``variant``, ``platform``, ``protocol``, ``mode``, ...).  Returns its
    :class:`~ptopipe.isa.explore.ExploreResult`: ``.ok``, ``.failures`` ``[(schedule, error)]``,
    ``.warnings``.  What is wrong with the call itself - a target that is not one, an unknown
    keyword, variant, platform or protocol, a pair's missing ``args`` - raises a ConfigError,
    as :func:`run` does; what a kernel's runs find is a failure in the result."""
    from .isa.explore import checked_call, checked_target, explore
    from .isa.scenario import on_platform
    checked_target(target, schedules, "check")
    checked_call(target, kwargs.get("variant", "default"),
                 *on_platform(target, kwargs.get("platform"), kwargs.get("protocol")), kwargs.get("args"),
                 {k: v for k, v in kwargs.items() if k not in _EXPLORE_OWN}, "check")
    return explore(target, schedules, **kwargs)


#: explore()'s own keywords (the others are run()'s)
_EXPLORE_OWN = ("seed", "variant", "platform", "protocol", "data_seed", "args", "stop_on_first",
                "include_default", "progress", "mode", "depth")


__version__ = "0.1.0"

__all__ = ["A2A3", "A5", "BudgetError", "CompileError", "ConfigError", "DataRaceError", "DeadlockError",
           "KernelError", "LeakError", "MemoryConflictError", "MismatchError", "ParseError", "Platform",
           "ProtocolError", "PtoPipeError", "RunResult", "RunSummary", "Scenario", "__version__",
           "check", "compare", "get_platform", "gm_buffer", "run", "run_pto"]
