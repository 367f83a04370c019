"""``ptopipe check --static FILE``: the static checks of :func:`ptopipe.driver.programs.verify`
(VerifyPipes, then the rest of the compiler's checks) on the DSL programs of a kernel file,
without running them.  The
programs are the file's ``pl.program(...)`` values and, per scenario
variant, what its ``KernelSet`` builders make of the variant's arguments.  Prints every
finding like the dynamic checkers print an error (what, where, fix), or a PASS line per
program, its warnings (a leak harmless under the protocol judged) above it; exit code 1 on
a finding, or on a warning under ``--werror`` (as for a ``.pto`` file and a run)."""
from __future__ import annotations

import sys

from ..arch.platform import get_platform
from ..driver.check import fails_under_werror
from ..errors import RANGE, refuse_unknown_parameters, shown_locations
from ..driver.programs import int_params, programs, verify
from ..passes.static_check import FAILED, PROVEN, NOT_PROVEN as STATUS_NOT_PROVEN
from ..passes.verify_pipes import NOT_PROVEN, not_proven
from .common import scalar_ranges, target, werror_note
from .errors import color, report_exception


def main(args) -> int:
    status, reports = 0, []
    ranges = scalar_ranges(args)
    built = list(programs(args.file, args.variant))
    # a --range name no program has: refused (as run refuses an --input typo), not "proven"
    refuse_unknown_parameters(ranges, set().union(*(int_params(p) for _, p, _, _, e in built if e is None)),
                              RANGE)
    for label, prog, sc, scalars, error in built:
        plat = target(args, sc)[0] if sc is not None else get_platform(args.platform or "a2a3")
        protocol = (args.protocol or (sc.protocol if sc is not None else None) or "spec")
        on = f"{plat.name}/{protocol}"          # the protocol judged, as the run names it
        if error is not None:                   # the program did not build: no check ran
            status = 1
            reports.append({"program": label, "platform": plat.name, "status": FAILED,
                            "findings": [error.to_dict()], "warnings": [], "not_proven": []})
            if not args.json:
                print(f"{color('FAIL', '1;31', sys.stdout)} {label} on {on}: {type(error).__name__} "
                      "building the program: the compiler refuses it before the static checks", flush=True)
                report_exception(error)
            continue
        state, found, warnings = verify(prog, plat, protocol, scalars, ranges)
        reasons = not_proven(warnings)
        reports.append({"program": label, "platform": plat.name, "status": state,
                        "findings": [e.to_dict() for e in found], "warnings": warnings,
                        "not_proven": reasons})
        others = [w for w in warnings if w not in (f"{NOT_PROVEN}: {r}" for r in reasons)]
        failed = state == PROVEN and not found and fails_under_werror(others, getattr(args, "werror", False))
        status |= state != PROVEN or failed
        if args.json:
            continue
        for w in others:
            print(f"warning: {shown_locations(w)}", file=sys.stderr)
        params = int_params(prog)
        given = f" (and exactly with {', '.join(f'{k}={v}' for k, v in scalars.items())}, the variant's)" \
            if scalars and params else ""
        which = (f"for every value of {', '.join(sorted(params))}"
                 + "".join(f", {k} in {lo}..{'' if hi is None else hi}" for k, (lo, hi) in ranges.items())
                 if params else "every path")
        if state == STATUS_NOT_PROVEN:
            print(f"{color('NOT PROVEN', '1;33', sys.stdout)} {label} on {on}: not proven for all "
                  f"values: {'; '.join(reasons)}{given and ' - no error found' + given}")
            continue
        if not found:
            word = color("FAIL", "1;31", sys.stdout) if failed else color("PASS", "1;32", sys.stdout)
            print(f"{word} {label} on {on}: VerifyPipes (static, "
                  f"{which}{given}) found no cross-core protocol error or GM access out of bounds, "
                  "and the compiler's checks passed; data races between cores, intra-core events and "
                  "the numbers are the run's to check (`ptopipe check`)" + werror_note(failed, others))
            continue
        print(f"{color('FAIL', '1;31', sys.stdout)} {label} on {on}: the static checks found "
              f"{len(found)} error(s) without running", flush=True)
        for e in found:
            report_exception(e)
    if args.json:
        from .check import print_json
        print_json(args, reports)
    return int(bool(status))
