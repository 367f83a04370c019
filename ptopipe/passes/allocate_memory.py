"""AllocateMemoryAddr: every tile of every function in its memory space, checked against the
platform at compile time.

Requires: ``no-mixed-functions`` (the AIC / AIV kernels exist; a mixed function has no core
to allocate for).
Produces: ``memory-allocated`` - every ``pl.reserve_buffer`` with ``base=pl.AUTO`` has the
integer base the allocator gave it (ResolvePeerBuffers then propagates it to the imports).
Tile addresses come from the one allocator, :func:`ptopipe.ir.layout.plan_function`
(liveness-based reuse, several buffers for a statement whose older value a loop still
reads, literal reserve regions kept free, AUTO rings after the tiles); the runtime makes the
same placement when it runs the program, so the IR does not carry them.
Errors (CompileError at the function's DSL line): the tiles live at one time overflow a
memory of the platform (bytes needed vs available); a reserve_buffer that does not fit its
memory; a literal reserve overlapping another (both named); a tile kept for an unbounded
number of executions (at the read, from :mod:`ptopipe.ir.liveness`).
"""
from __future__ import annotations

from ..arch import MemSpace
from ..ir.convert import op_to_function
from ..ir.nodes import AUTO
from ..ir.layout import plan_function
from .util import error, func_name, functions, platform_of, top_ops

NAME = "allocate-memory"
REQUIRES = ("no-mixed-functions",)
PRODUCES = ("memory-allocated",)


def run(program, ctx):
    plat = platform_of(ctx)
    for f in functions(program):
        lay = plan_function(op_to_function(f))
        for space, peak in lay.peak.items():
            size = plat.mem_size(MemSpace(space))
            if peak > size:
                raise error(f"the tiles of {func_name(f)} need {peak} bytes of {space} at their peak "
                            f"but {plat.name} has {size} bytes", f,
                            "use smaller tiles, or keep fewer of them live at once (a tile's memory "
                            "is reused after its last read)",
                            details=f"tiles live at the same time cannot share memory (overflow by "
                                    f"{peak - size} bytes)")
        for r in top_ops(f, "pl.reserve_buffer"):
            a = r.attributes
            base, rsize = lay.by_name[a["name"]]
            if a["base"] is AUTO:
                a["base"] = base
            if a["memory_space"]:
                size = plat.mem_size(MemSpace(a["memory_space"]))
                if base + rsize > size:
                    raise error(f"reserve_buffer {a['name']!r} of {rsize} bytes at {base:#x} does not "
                                f"fit {plat.name}'s {a['memory_space']} ({size} bytes) after the tiles "
                                f"of {func_name(f)}", r,
                                "reserve SLOT_NUM * SLOT_SIZE bytes (smaller slots or fewer of them), "
                                "or use smaller tiles")
    return program
