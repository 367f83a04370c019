"""AllocateMemoryAddr: every tile of every function in its memory space, checked against the
platform at compile time.

It writes the placement of the one allocator, :func:`ptopipe.ir.layout.allocate_function`
(liveness-based reuse, several buffers for an op whose older result a loop still reads,
literal reserve regions kept free, AUTO rings after the tiles), into the IR: every tile op
gets its result's address (``addr``; ``rotation``, the buffers used in turn, when it needs
several; ``scratch_addr`` when it takes a scratch tile) and every ``pl.reserve_buffer`` with
``base=pl.AUTO`` its integer base (ResolvePeerBuffers then propagates it to the imports).
The runtime, the C++ writer and the property verifier read those annotations (properties:
``REQUIRED`` / ``PRODUCED`` / ``INVALIDATED``, docs/passes/README.md).
Errors (CompileError at the function's DSL line): the tiles live at one time overflow a
memory of the platform (bytes needed vs available; on A2A3 the Vec tiles stay below pto-isa's
implicit UB scratch, ``Platform.tile_space``); a literal reserve overlapping another
(both named); a tile kept for an unbounded number of executions (at the read, from
:mod:`ptopipe.ir.instances`).  Whether a ring fits its memory is Validate's check.
"""
from __future__ import annotations

from ..arch import MemSpace
from ..ir.layout import allocate_function, tiles_fit_problem, tiles_past, tiles_past_details
from ..ir.opdefs import ReserveBufferOp, own_events
from ..ir.vocab import AUTO
from .util import error, func_name, functions, platform_of
from .properties import IRProperty
from .remarks import remarks_of

NAME = "allocate-memory"
REQUIRED = frozenset({IRProperty.MIXED_KERNELS_EXPANDED})
PRODUCED = frozenset({IRProperty.MEMORY_ALLOCATED})
INVALIDATED = frozenset()


def run(program, ctx):
    plat = platform_of(ctx)
    remarks = remarks_of(ctx)
    placed = getattr(ctx, "placed", set())
    for f in functions(program):
        placed.update(op for op in f.body if op.is_a(ReserveBufferOp) and op.base is AUTO)
        lay = allocate_function(f)              # (whether a ring fits its memory: Validate)
        event = next(iter(own_events(f)), None)
        if event is not None:
            remarks.missed(NAME, event, f"the tiles of {func_name(f)} share no memory: it orders "
                                        f"its pipes with events ({event.name} here), and a reuse "
                                        "would need an event it does not have")
        for op, addrs in lay.rotations.items():
            name = op.results[0].name if op.results else None
            remarks.applied(NAME, op, f"{op.name} result{' ' + name if name else ''} gets "
                                      f"{len(addrs)} buffers, used in turn: the loop still reads "
                                      "an older one when the op runs again")
        for space, peak in lay.peak.items():
            have = plat.mem_size(MemSpace(space))
            usable = plat.tile_space(MemSpace(space))
            bad = tiles_fit_problem(func_name(f), space, peak, plat.name, have, usable)
            if bad is not None:
                over = tiles_past(lay, space, usable)
                raise error(bad[0], over[0][0] if over else f, bad[2], details=tiles_past_details(over, bad[1]))
    return program
