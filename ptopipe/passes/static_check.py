"""The static verification of a DSL program, without running it (what ``ptopipe check
--static`` reports per program): a program with mixed ``@pl.incore`` functions goes through
the front end first (the kernels they become are what is verified); VerifyPipes proves the
cross-core protocol on every path; when it finds nothing the rest of the pipeline runs for
its checks (memory plan, peer buffers, flags, platform lowering, Validate), so a ring or
reserve that does not fit, or a SlotNum beyond the protocol's FIFO depth, is found before a
run would fail on it."""
from __future__ import annotations

from ..errors import CompileError
from ..ir.vocab import FunctionKind
from . import verify_pipes
from .manager import CANONICAL_ORDER, FRONT_END, PassContext, PassManager

#: the passes after VerifyPipes (their checks run once it has found nothing)
BACK_END = CANONICAL_ORDER[CANONICAL_ORDER.index("verify-pipes") + 1:]


def verify_program(program, platform="a2a3", protocol="spec", scalars: dict | None = None,
                   warnings: list | None = None) -> list:
    """Every finding of the static checks on ``program`` (a ``pl.program`` op, left as it is:
    the checks run on a copy) for ``platform``
    (a Platform or its name) under ``protocol``, as CompileErrors (empty: it passed);
    ``scalars``: scalar parameter values to verify with (a run's trip counts; others are
    unknowns); notes about checks that were skipped go to ``warnings``."""
    warnings = [] if warnings is None else warnings
    ctx = PassContext(platform=platform, protocol=protocol, warnings=warnings)
    op = program.clone()
    try:
        front, rest, have = PassManager(FRONT_END), FRONT_END + BACK_END, ()
        if op.by_kind(FunctionKind.InCore):             # verify the kernels they become
            op = front.run(op, ctx)
            rest, have = BACK_END, front.provides
        found = verify_pipes.verify(op, platform, warnings, protocol, scalars)
        if not found:                                   # the front end ran once
            PassManager(rest, available=have).run(op, ctx)
    except CompileError as e:
        found = [e]
    return found
