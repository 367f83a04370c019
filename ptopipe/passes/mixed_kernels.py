"""Run mixed ``@pl.incore`` programs: :class:`MixedKernelSet` is a
:class:`ptopipe.runtime.KernelSet` whose builder's programs are compiled
(:func:`.pipeline_min.compile_program`) before they run, and which adds the compiled
kernels' ``gm_slot_buffer`` argument to a run's args."""
from __future__ import annotations

import inspect

from ..isa.launch import gm_buffer
from ..runtime.kernels import KernelSet
from .expand_mixed import GM_PARAM
from .pipeline_min import compile_program, gm_slot_bytes


class MixedKernelSet(KernelSet):
    """``KernelSet(build)`` for a builder returning a program with mixed functions."""

    def __init__(self, build, platform="a2a3"):
        def compiled(**params):
            return compile_program(build(**params), platform)
        compiled.__signature__ = inspect.signature(build)
        compiled.__name__ = build.__name__
        super().__init__(compiled)

    def with_slot_buffer(self, args: dict) -> dict:
        """``args`` plus a zeroed ``gm_slot_buffer`` of the size the compiled kernels take."""
        n = gm_slot_bytes(self.program(**args))
        if n:
            args[GM_PARAM] = gm_buffer(n)
        return args
