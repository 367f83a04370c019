"""AllocateMemoryAddr: every tile of every function in its memory space, checked against the
platform at compile time.

It writes the integer base the allocator gives every ``pl.reserve_buffer`` with
``base=pl.AUTO`` (ResolvePeerBuffers then propagates it to the imports), and nothing else:
tile addresses come from the one allocator, :func:`ptopipe.ir.layout.plan_function`
(liveness-based reuse, several buffers for a statement whose older value a loop still
reads, literal reserve regions kept free, AUTO rings after the tiles), which the runtime and
the C++ writer run on the IR they are given, so the IR does not carry them (the placement
depends on how the IR names its values - a nested expression is a temporary, a named one a
variable - which the .pto form does not keep; properties: ``REQUIRED`` / ``PRODUCED`` /
``INVALIDATED``, docs/passes/README.md).
Errors (CompileError at the function's DSL line): the tiles live at one time overflow a
memory of the platform (bytes needed vs available); a literal reserve overlapping another
(both named); a tile kept for an unbounded number of executions (at the read, from
:mod:`ptopipe.ir.instances`).  Whether a ring fits its memory is Validate's check.
"""
from __future__ import annotations

from ..arch import MemSpace
from ..ir.convert import op_to_function
from ..ir.vocab import AUTO
from ..ir.layout import plan_function, tiles_fit_problem
from ..ir.opdefs import ReserveBufferOp
from .util import error, func_name, functions, platform_of, top_ops
from .properties import IRProperty

NAME = "allocate-memory"
REQUIRED = frozenset({IRProperty.MIXED_KERNELS_EXPANDED})
PRODUCED = frozenset({IRProperty.MEMORY_PLANNED})
INVALIDATED = frozenset()


def run(program, ctx):
    plat = platform_of(ctx)
    for f in functions(program):
        lay = plan_function(op_to_function(f))
        for space, peak in lay.peak.items():
            bad = tiles_fit_problem(func_name(f), space, peak, plat.name, plat.mem_size(MemSpace(space)))
            if bad is not None:
                raise error(bad[0], f, bad[2], details=bad[1])
        for r in top_ops(f, ReserveBufferOp):      # (whether the ring fits: Validate)
            if r.base is AUTO:
                r.base = lay.by_name[r.buffer_name][0]
    return program
