"""A minimal compile pipeline (to be replaced by the PassManager): tree Program -> op IR ->
ExpandMixedKernel -> InsertTfree -> SkewPushAhead -> verify_ops (after each) -> tree Program, ready for the runtime
(``ptopipe.runtime.KernelSet`` / ``kernels``: a builder returns ``compile_program(...)``,
and the run's args get the compiled kernels' ``gm_slot_buffer`` from :func:`with_slot_buffer`)."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.convert import to_ops, to_tree
from ..isa.launch import gm_buffer
from ..ir.nodes import Program
from ..ir.op_verifier import verify_ops
from ..ir.verifier import verify
from . import expand_mixed, insert_tfree, skew_push_ahead

PASSES = (expand_mixed, insert_tfree, skew_push_ahead)


@dataclass
class Context:
    """What a pass may read (the platform) and report (warnings)."""
    platform: object = "a2a3"
    warnings: list = field(default_factory=list)


def compile_ops(program: Program, platform="a2a3", ctx: Context | None = None):
    """The op IR (a ``pl.program`` op) of ``program`` after the passes."""
    ctx = ctx or Context(platform)
    op = to_ops(program)
    for p in PASSES:
        op = p.run(op, ctx)
        verify_ops(op)
    return op


def compile_program(program: Program, platform="a2a3") -> Program:
    """``program`` with every mixed ``@pl.incore`` function expanded into a verified AIC +
    AIV + Group triple with TFREEs placed."""
    return verify(to_tree(compile_ops(program, platform)))


def gm_slot_bytes(program: Program) -> int:
    """The size of the ``gm_slot_buffer`` argument a compiled program's kernels take (0:
    none)."""
    for f in program.functions:
        for p in f.params:
            if p.name.startswith(expand_mixed.GM_PARAM):
                return p.type.shape[0]
    return 0


def with_slot_buffer(program: Program, args: dict) -> dict:
    """``args`` plus a zeroed ``gm_slot_buffer`` of the size the compiled ``program``'s
    kernels take (none when they use no pipe)."""
    n = gm_slot_bytes(program)
    if n:
        args[expand_mixed.GM_PARAM] = gm_buffer(n)
    return args
