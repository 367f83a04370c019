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


#: the statuses of a static verification (:func:`status_of`)
PROVEN, NOT_PROVEN, FAILED = "verified", "not proven", "failed"


def verdict(verify_with, scalars: dict | None) -> tuple:
    """``(status, findings, warnings)`` of a program verified by ``verify_with(values)`` (->
    ``(findings, warnings)``; ``values`` None: every scalar an unknown): with the values
    ``scalars`` gives (a scenario variant's) exactly first, so a finding names the run
    they make; then, when that found nothing, for every value of its integer scalars (the
    variant's values are an example, not the kernel's domain).  ``status``: FAILED (a
    finding), NOT_PROVEN (no finding, but :func:`.verify_pipes.not_proven` reasons among the
    warnings: a failing status, never a PASS) or PROVEN."""
    found, warnings = verify_with(dict(scalars)) if scalars else ([], [])
    if not found:
        found, more = verify_with(None)
        warnings = [w for w in warnings if not w.startswith(verify_pipes.NOT_PROVEN)] + \
            [w for w in more if w not in warnings]
    return status_of(found, warnings), found, warnings


def status_of(found: list, warnings: list) -> str:
    """FAILED (a finding), NOT_PROVEN (what VerifyPipes could not prove, among the
    warnings) or PROVEN."""
    return FAILED if found else NOT_PROVEN if verify_pipes.not_proven(warnings) else PROVEN


def verify_program(program, platform="a2a3", protocol="spec", scalars: dict | None = None,
                   warnings: list | None = None, ranges: dict | None = None) -> list:
    """Every finding of the static checks on ``program`` (a ``pl.program`` op, left as it is:
    the checks run on a copy) for ``platform``
    (a Platform or its name) under ``protocol``, as CompileErrors (empty: it passed);
    ``scalars``: scalar parameter values to verify with (a run's trip counts; others are
    unknowns, proven for every value >= 0 or within ``ranges``: name -> (lo, hi)); notes
    about checks that were skipped, and what could not be proven, go to ``warnings``."""
    warnings = [] if warnings is None else warnings
    ctx = PassContext(platform=platform, protocol=protocol, warnings=warnings, ranges=dict(ranges or {}))
    op = program.clone()
    try:
        front, rest, have = PassManager(FRONT_END), FRONT_END + BACK_END, ()
        if op.by_kind(FunctionKind.InCore):             # verify the kernels they become
            op = front.run(op, ctx)
            rest, have = BACK_END, front.provides
        # sized as the pass sizes them: the back end checks the staging rings a compile makes
        found = verify_pipes.verify(op, platform, warnings, protocol, scalars, ranges, size=True)
        if not found:                                   # the front end ran once
            PassManager(rest, available=have).run(op, ctx)
    except CompileError as e:
        found = [e]
    return found
