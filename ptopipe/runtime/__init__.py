"""runtime: executes IR functions (AIC / AIV kernels from the ``pl`` DSL) on the simulated
cluster through :mod:`ptopipe.isa`, with DSL source lines in every error and report.

``aic, aiv = kernels(program)`` gives callables for ``ptopipe.run`` / ``ptopipe.Scenario``.
"""
from .interp import Interpreter
from .kernels import KernelSet, kernels, run
from ..ir.layout import FunctionLayout, plan_function, plan_program, resolve_program

__all__ = ["FunctionLayout", "Interpreter", "KernelSet", "kernels", "plan_function",
           "plan_program", "resolve_program", "run"]
