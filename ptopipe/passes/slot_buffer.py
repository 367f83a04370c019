"""The ``gm_slot_buffer`` argument of compiled kernels: ExpandMixedKernel gives both kernels
of a mixed function a GM slot-buffer parameter (the A2A3 ring; A5 ignores it), so a run's
args need a zeroed buffer of the size the compiled program declares."""
from __future__ import annotations

import numpy as np

from ..ir.asm_printer import print_ir
from ..ir.vocab import FunctionKind
from ..ir.types import np_dtype
from .expand_mixed import GM_PARAM

# a program's IR text -> the type of its gm_slot_buffer parameter: a memo of a pure function
# of the program (equal text - locations aside - declares an equal buffer), so that a
# scenario's make_args, called once per explored schedule, expands its program once
_SLOT_TYPE: dict = {}


def slot_buffer_type(program):
    """The TensorType of the ``gm_slot_buffer`` parameter a compiled program's kernels take
    (None: none).  ``program``: a ``pl.program`` op.  A program that still holds mixed
    functions is expanded first (the front end of the pipeline, on a copy: the buffer does
    not depend on the platform)."""
    key = print_ir(program)
    if key not in _SLOT_TYPE:
        if len(_SLOT_TYPE) >= 256:          # a session of many programs: keep it bounded
            _SLOT_TYPE.clear()
        _SLOT_TYPE[key] = _slot_type(program)
    return _SLOT_TYPE[key]


def gm_slot_bytes(program) -> int:
    """The bytes of that parameter (0: none)."""
    t = slot_buffer_type(program)
    return t.nbytes if t is not None else 0


def _slot_type(op):
    if op.by_kind(FunctionKind.InCore):
        from .manager import FRONT_END, compile_program
        op = compile_program(op, "a2a3", FRONT_END)
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
