"""The ``gm_slot_buffer`` argument of compiled kernels: ExpandMixedKernel gives both kernels
of a mixed function a GM slot-buffer parameter (the A2A3 ring; A5 ignores it), so a run's
args need a zeroed buffer of the size the compiled program declares."""
from __future__ import annotations

from weakref import WeakKeyDictionary

from ..ir.nodes import FunctionKind, Program
from ..isa.launch import gm_buffer
from .expand_mixed import GM_PARAM


# program -> its gm_slot_bytes: a memo of a pure function of an immutable value (programs
# are frozen; equal programs - locations aside - declare equal buffers), so that a scenario's
# make_args, called once per explored schedule, expands its program once
_SLOT_BYTES: "WeakKeyDictionary[Program, int]" = WeakKeyDictionary()


def gm_slot_bytes(program: Program) -> int:
    """The size of the ``gm_slot_buffer`` argument a compiled program's kernels take (0:
    none).  A program that still holds mixed functions is expanded first (the front end of
    the pipeline: the size does not depend on the platform)."""
    n = _SLOT_BYTES.get(program)
    if n is None:
        n = _SLOT_BYTES[program] = _slot_bytes(program)
    return n


def _slot_bytes(program: Program) -> int:
    if any(f.kind is FunctionKind.InCore for f in program.functions):
        from .manager import FRONT_END, compile_program
        program = compile_program(program, "a2a3", FRONT_END)[1]
    for f in program.functions:
        for p in f.params:
            if p.name.startswith(GM_PARAM):
                return p.type.shape[0]
    return 0


def with_slot_buffer(program: Program, args: dict) -> dict:
    """``args`` plus a zeroed ``gm_slot_buffer`` of the size ``program``'s kernels take
    (none when they use no pipe)."""
    n = gm_slot_bytes(program)
    if n:
        args[GM_PARAM] = gm_buffer(n)
    return args
