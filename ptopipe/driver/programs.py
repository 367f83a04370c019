"""The DSL programs of a kernel file - its module-level ``pl.program(...)`` objects, the
programs its ``KernelSet`` builders (module-level, or behind a Scenario's kernels) make for
a Scenario variant, else one program of its
``@pl`` kernels: what ``compile`` compiles - and the static checks ``check --static`` runs on
them."""
from __future__ import annotations

import numpy as np

from ..errors import CompileError, ConfigError
from ..ir import Operation
from ..ir.opdefs import ProgramOp
from ..ir.types import TensorType
from ..isa.scenario import Scenario
from ..language.frontend import DSLFunction, program
from ..runtime import KernelSet
from .loader import load_module, pick_variants


def _kernel_sets(values: list) -> list:
    """The KernelSets of a module's values: module-level ones, then those whose ``.aic`` /
    ``.aiv`` a Scenario runs (``AIC, AIV = kernels(build)``: the set itself has no name)."""
    sets = [v for v in values if isinstance(v, KernelSet)]
    for sc in (v for v in values if isinstance(v, Scenario)):
        for fn in (sc.aic, sc.aiv):
            ks = getattr(fn, "kernel_set", None)
            if isinstance(ks, KernelSet) and all(ks is not s for s in sets):
                sets.append(ks)
    return sets


def programs_of(mod, variant: str | None = None) -> list:
    """The programs (``pl.program`` ops) a loaded kernel module defines (see the module doc;
    ``variant``: the Scenario variant whose arguments a builder gets, default its default)."""
    found, seen = [], set()

    def add(p):
        if id(p) not in seen:
            seen.add(id(p))
            found.append(p)

    values = list(vars(mod).values())
    for v in values:
        if isinstance(v, Operation) and v.is_a(ProgramOp):
            add(v)
    scenarios = [v for v in values if isinstance(v, Scenario)]
    for ks in _kernel_sets(values):
        sc = next((s for s in scenarios if s.aic is ks.aic or s.aiv is ks.aiv), None)
        if sc is not None:
            add(ks.source(**sc.args(pick_variants(sc, variant)[0])))
        elif not ks.params:
            add(ks.source())
    if not found:
        fns = [v for v in values if isinstance(v, DSLFunction)]
        if fns:
            add(program(*fns, name=getattr(mod, "__name__", "program").removeprefix("ptopipe_kernel_")))
    return found


def programs(path: str, variant: str | None) -> list:
    """``[(label, pl.program op, Scenario or None, scalars, error)]`` of the DSL programs in
    ``path``, one per distinct program and scalar arguments (a scenario variant's ints and
    floats: the trip counts the run would use); ``error``: the CompileError that building a
    variant's program (or its arguments) raised - its program is None - else None."""
    mod = load_module(path)
    values = list(vars(mod).values())
    found, seen = [], set()

    def add(label, prog, sc, scalars=None):
        names = _scalar_params(prog)
        scalars = {k: v.item() if isinstance(v, np.generic) else v for k, v in (scalars or {}).items()
                   if k in names and isinstance(v, (int, float, np.integer, np.floating))}
        key = (id(prog), tuple(sorted(scalars.items())))
        if key not in seen:
            seen.add(key)
            found.append((label, prog, sc, scalars, None))
    for v in values:
        if isinstance(v, Operation) and v.is_a(ProgramOp):
            add(v.sym_name, v, None)
    sets = _kernel_sets(values)
    for sc in (v for v in values if isinstance(v, Scenario)):
        for var in pick_variants(sc, variant) if sets else ():
            label = f"{sc.name}[{var}]"
            try:
                args = sc.args(var)
            except CompileError as e:       # its make_args compiles the program and fails
                found.append((label, None, sc, {}, e))
                continue
            for ks in sets:
                try:
                    prog = ks.source(**args)
                except (ConfigError, KeyError):
                    continue            # this builder is not the scenario's
                except CompileError as e:
                    found.append((label, None, sc, {}, e))
                    break
                add(label, prog, sc, args)
    if not found:
        raise ConfigError(f"{path} defines no DSL program (pl.program(...) or a KernelSet)",
                          fix="--static verifies DSL kernels; run `ptopipe check` without it "
                              "for ISA-level Python kernels")
    return found


def int_params(prog) -> set:
    """Names of the integer scalar parameters of ``prog``'s functions (what is proven for
    every value)."""
    return {p.name for f in prog.functions for p in f.params
            if not isinstance(p.type, TensorType) and not str(getattr(p.type, "dtype", "")).startswith(("f", "bf"))}


def _scalar_params(prog) -> set:
    """Names of the scalar parameters of ``prog``'s functions."""
    return {p.name for f in prog.functions for p in f.params if not isinstance(p.type, TensorType)}


def verify(prog, platform, protocol: str, scalars: dict, ranges: dict | None = None) -> tuple:
    """``(status, findings, warnings)`` of the static checks of ``prog``
    (:func:`ptopipe.passes.static_check.verify_program`) on ``platform`` under ``protocol``:
    for every value of its integer scalars (within ``ranges``), and exactly with the
    ``scalars`` a variant gives (:func:`ptopipe.passes.static_check.verdict`)."""
    from ..passes.static_check import verdict, verify_program

    def verify_with(values):
        warnings: list = []
        return verify_program(prog, platform, protocol, values, warnings, ranges), warnings
    return verdict(verify_with, scalars)

