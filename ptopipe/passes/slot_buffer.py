"""The ``gm_slot_buffer`` argument of compiled kernels: ExpandMixedKernel gives both kernels
of a mixed function a GM slot-buffer parameter (the A2A3 ring; A5 ignores it), so a run's
args need a zeroed buffer of the size the compiled program declares."""
from __future__ import annotations

import functools

import numpy as np

from ..ir.asm_printer import print_ir
from ..ir.vocab import FunctionKind
from ..ir.types import np_dtype
from .expand_mixed import GM_PARAM

class _ByText:
    """A program as a memo key: its IR text (locations aside), which decides the buffer it
    declares - equal text, equal buffer."""
    __slots__ = ("text", "program")

    def __init__(self, program):
        self.text, self.program = print_ir(program), program

    def __hash__(self) -> int:
        return hash(self.text)

    def __eq__(self, other) -> bool:
        return isinstance(other, _ByText) and self.text == other.text


@functools.lru_cache(maxsize=256)
def _slot_type_of(key: _ByText):
    """The buffer type of ``key``'s program: a memo of a pure function of the program's
    text, so that a scenario's make_args, called once per explored schedule, expands its
    program once (bounded: a session of many programs)."""
    t = _slot_type(key.program)
    key.program = None                  # the memo keeps the text, not the program
    return t


def slot_buffer_type(program):
    """The TensorType of the ``gm_slot_buffer`` parameter a compiled program's kernels take
    (None: none).  ``program``: a ``pl.program`` op.  A program that still holds mixed
    functions is expanded first (the front end of the pipeline, on a copy: the buffer does
    not depend on the platform)."""
    return _slot_type_of(_ByText(program))


def gm_slot_bytes(program) -> int:
    """The bytes of that parameter (0: none)."""
    t = slot_buffer_type(program)
    return t.nbytes if t is not None else 0


def _slot_type(op):
    if op.by_kind(FunctionKind.InCore):
        from .manager import FRONT_END, compile_program
        op = compile_program(op, "a2a3", FRONT_END, sizing=True)
    for f in op.functions:
        for p in f.params:
            if p.name and p.name.startswith(GM_PARAM):
                return p.type
    return None


def with_slot_buffer(program, args: dict) -> dict:
    """``args`` plus a zeroed ``gm_slot_buffer`` of the shape and element type ``program``'s
    kernels declare (none when they use no pipe)."""
    t = slot_buffer_type(program)
    if t is not None:
        args[GM_PARAM] = np.zeros(t.shape, np_dtype(t.dtype))
    return args
