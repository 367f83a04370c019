"""The ``gm_slot_buffer`` argument of compiled kernels: ExpandMixedKernel gives both kernels
of a mixed function a GM slot-buffer parameter (the A2A3 ring; A5 ignores it), so a run's
args need a zeroed buffer of the size the compiled program declares."""
from __future__ import annotations

from weakref import WeakKeyDictionary

import numpy as np

from ..ir.convert import to_ops
from ..ir.core import Operation
from ..ir.vocab import FunctionKind
from ..ir.types import np_dtype
from .expand_mixed import GM_PARAM


# program -> the type of its gm_slot_buffer parameter: a memo of a pure function of the
# program (a DSL Program is frozen, a compiled op program is not changed once it runs), so
# that a scenario's make_args, called once per explored schedule, expands its program once
_SLOT_TYPE: "WeakKeyDictionary[object, object]" = WeakKeyDictionary()


def slot_buffer_type(program):
    """The TensorType of the ``gm_slot_buffer`` parameter a compiled program's kernels take
    (None: none).  A program that still holds mixed functions is expanded first (the front
    end of the pipeline: the buffer does not depend on the platform)."""
    if program not in _SLOT_TYPE:
        _SLOT_TYPE[program] = _slot_type(program)
    return _SLOT_TYPE[program]


def gm_slot_bytes(program) -> int:
    """The bytes of that parameter (0: none)."""
    t = slot_buffer_type(program)
    return t.nbytes if t is not None else 0


def _slot_type(program):
    """``program``: a ``pl.program`` op or a DSL Program (converted)."""
    op = program if isinstance(program, Operation) else to_ops(program)
    if any(f.kind is FunctionKind.InCore for f in op.body):
        from .manager import FRONT_END, compile_program
        op = compile_program(op, "a2a3", FRONT_END)
    for f in op.body:
        for p in f.body.args:
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
