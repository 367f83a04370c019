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
from ..passes.static_check import verify_program
from ..runtime.kernels import KernelSet
from .common import target
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


def _scalar_params(prog) -> set:
    """Names of the scalar parameters of ``prog``'s functions."""
    return {p.name for f in prog.functions for p in f.params if not isinstance(p.type, TensorType)}


def main(args) -> int:
    status, reports = 0, []
    for label, prog, sc, scalars in programs(args.file, args.variant):
        plat = target(args, sc)[0] if sc is not None else get_platform(args.platform or "a2a3")
        warnings: list = []
        protocol = (args.protocol or (sc.protocol if sc is not None else None) or "spec")
        found = verify_program(prog, plat, protocol, scalars, warnings)
        reports.append({"program": label, "platform": plat.name,
                        "findings": [e.to_dict() for e in found], "warnings": warnings})
        if args.json:
            status |= bool(found)
            continue
        for w in warnings:
            print(f"  note: {w}", file=sys.stderr)
        if not found:
            given = f" with {', '.join(f'{k}={v}' for k, v in scalars.items())} (the variant's)" \
                if scalars else ""
            skipped = any("skipped" in w or "not fully verified" in w for w in warnings)
            print(f"{color('PASS', '1;32', sys.stdout)} {label} on {plat.name}: VerifyPipes (static, "
                  f"every path{given}) found no cross-core protocol error"
                  + (" in the checks it could make (some skipped: see the notes)" if skipped else "")
                  + ", and the compiler's checks passed")
            continue
        status = 1
        print(f"{color('FAIL', '1;31', sys.stdout)} {label} on {plat.name}: the static checks found "
              f"{len(found)} error(s) without running", flush=True)
        for e in found:
            report_exception(e)
    if args.json:
        from .check import print_json
        print_json(args, reports)
    return int(bool(status))
