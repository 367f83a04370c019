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
                     MemoryConflictError, MismatchError, ParseError, ProtocolError, PtoPipeError)
from ._lazy import lazy_exports as _lazy_exports, when_imported as _when_imported

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
    ptoas's C++ would run on the device: :func:`ptopipe.codegen.pto_exec.run_pto`.  With
    ``static`` (default) the static verifier runs first where its IR expresses the file, as
    ``ptopipe run`` does: its findings are raised, its warnings and a skip are in ``.warnings``
    / ``.notes``."""
    from .codegen.pto_exec import run_pto as _run_pto
    found, skipped = [], None
    if static:
        import numpy as np
        from .cli.pto import static_findings        # the facade wires the static passes in
        ints = {k: v for k, v in (kwargs.get("inputs") or {}).items()
                if isinstance(v, (int, np.integer)) and not isinstance(v, bool)}
        found, skipped = static_findings(path or "<pto>", kwargs.get("platform"),
                                         kwargs.get("protocol", "spec"), ints, kwargs.get("text"))
    res = _run_pto(path, **kwargs)
    res.warnings[:0] = found
    if skipped:
        res.notes.insert(0, f"static pipe verification skipped (the value IR cannot express this file: "
                            f"{skipped})")
    return res


__version__ = "0.1.0"


def _compile_mixed(program, platform, protocol="spec"):
    """The default pass pipeline for the runtime's mixed programs (the facade wires the two
    layers: the runtime cannot import the passes)."""
    from .passes import compile_program
    return compile_program(program, platform, protocol=protocol)[1]


# installed when the runtime's kernels module loads: importing it here would load the runtime
_when_imported("ptopipe.runtime.kernels", lambda kernels: kernels.install_mixed_compiler(_compile_mixed))

__all__ = ["A2A3", "A5", "BudgetError", "CompileError", "ConfigError", "DataRaceError", "DeadlockError",
           "KernelError", "MemoryConflictError", "MismatchError", "ParseError", "Platform",
           "ProtocolError", "PtoPipeError", "RunResult", "RunSummary", "Scenario", "__version__",
           "compare", "get_platform", "gm_buffer", "run", "run_pto"]
