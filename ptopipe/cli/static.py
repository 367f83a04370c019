"""``ptopipe check --static FILE``: the static checks of
:func:`ptopipe.passes.static_check.verify_program` (VerifyPipes, then the rest of the
compiler's checks) on the DSL programs of a kernel file, without running them.  The
programs are the file's ``pl.program(...)`` values and, per scenario
variant, what its ``KernelSet`` builders make of the variant's arguments.  Prints every
finding like the dynamic checkers print an error (what, where, fix), or a PASS line per
program; exit code 1 on a finding."""
from __future__ import annotations

import sys

import numpy as np

from ..arch.platform import get_platform
from ..errors import ConfigError
from ..ir.core import Operation
from ..ir.opdefs import ProgramOp
from ..ir.types import TensorType
from ..isa.scenario import Scenario
from ..passes.static_check import PROVEN, NOT_PROVEN as STATUS_NOT_PROVEN, verdict, verify_program
from ..passes.verify_pipes import NOT_PROVEN, not_proven
from ..runtime.kernels import KernelSet
from .common import scalar_ranges, target
from .errors import color, report_exception
from .loader import load_module, pick_variants


def programs(path: str, variant: str | None) -> list:
    """``[(label, pl.program op, Scenario or None, scalars)]`` of the DSL programs in ``path``, one
    per distinct program and scalar arguments (a scenario variant's ints and floats: the
    trip counts the run would use)."""
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
            found.append((label, prog, sc, scalars))
    for v in values:
        if isinstance(v, Operation) and v.is_a(ProgramOp):
            add(v.sym_name, v, None)
    sets = [v for v in values if isinstance(v, KernelSet)]
    for sc in (v for v in values if isinstance(v, Scenario)):
        for var in pick_variants(sc, variant) if sets else ():
            args = sc.args(var)
            for ks in sets:
                try:
                    prog = ks.source(**args)
                except (ConfigError, KeyError):
                    continue            # this builder is not the scenario's
                add(f"{sc.name}[{var}]", prog, sc, args)
    if not found:
        raise ConfigError(f"{path} defines no DSL program (pl.program(...) or a KernelSet)",
                          fix="--static verifies DSL kernels; run `ptopipe check` without it "
                              "for ISA-level Python kernels")
    return found


def _int_params(prog) -> set:
    """Names of the integer scalar parameters of ``prog``'s functions (what is proven for
    every value)."""
    return {p.name for f in prog.functions for p in f.params
            if not isinstance(p.type, TensorType) and not str(getattr(p.type, "dtype", "")).startswith(("f", "bf"))}


def _scalar_params(prog) -> set:
    """Names of the scalar parameters of ``prog``'s functions."""
    return {p.name for f in prog.functions for p in f.params if not isinstance(p.type, TensorType)}


def main(args) -> int:
    status, reports = 0, []
    ranges = scalar_ranges(args)
    for label, prog, sc, scalars in programs(args.file, args.variant):
        plat = target(args, sc)[0] if sc is not None else get_platform(args.platform or "a2a3")
        protocol = (args.protocol or (sc.protocol if sc is not None else None) or "spec")

        def verify_with(values, prog=prog, plat=plat, protocol=protocol):
            warnings: list = []
            return verify_program(prog, plat, protocol, values, warnings, ranges), warnings
        state, found, warnings = verdict(verify_with, scalars)
        reasons = not_proven(warnings)
        reports.append({"program": label, "platform": plat.name, "status": state,
                        "findings": [e.to_dict() for e in found], "warnings": warnings,
                        "not_proven": reasons})
        status |= state != PROVEN
        if args.json:
            continue
        for w in warnings:
            if w not in (f"{NOT_PROVEN}: {r}" for r in reasons):
                print(f"  note: {w}", file=sys.stderr)
        params = _int_params(prog)
        given = f" (and exactly with {', '.join(f'{k}={v}' for k, v in scalars.items())}, the variant's)" \
            if scalars and params else ""
        which = (f"for every value of {', '.join(sorted(params))}"
                 + "".join(f", {k} in {lo}..{'' if hi is None else hi}" for k, (lo, hi) in ranges.items())
                 if params else "every path")
        if state == STATUS_NOT_PROVEN:
            print(f"{color('NOT PROVEN', '1;33', sys.stdout)} {label} on {plat.name}: not proven for all "
                  f"values: {'; '.join(reasons)}{given and ' - no error found' + given}")
            continue
        if not found:
            print(f"{color('PASS', '1;32', sys.stdout)} {label} on {plat.name}: VerifyPipes (static, "
                  f"{which}{given}) found no cross-core protocol error or GM access out of bounds, "
                  "and the compiler's checks passed")
            continue
        print(f"{color('FAIL', '1;31', sys.stdout)} {label} on {plat.name}: the static checks found "
              f"{len(found)} error(s) without running", flush=True)
        for e in found:
            report_exception(e)
    if args.json:
        from .check import print_json
        print_json(args, reports)
    return int(bool(status))
