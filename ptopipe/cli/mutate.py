"""``ptopipe mutate FILE``: checker coverage of a kernel - every protocol mutant of its
source run through the same checks as ``ptopipe check`` (every variant by default), a table
of what was caught where and by what, the survivors listed; ``--json`` for tools;
``--fail-under PCT`` makes a coverage below PCT the exit status 1.  ``--timeout`` bounds the
whole command, as ``run``'s and ``check``'s do (:mod:`.bounds`); the progress line names the
run under way (the kernel's own check first, then each mutant's)."""
from __future__ import annotations

import json
import os

from ..errors import ConfigError
from ..mutate import NOT_CHECKED, SURVIVED, Job, coverage
from ..sim.bounds import DEFAULT_TIMEOUT
from ..isa.explore import MODES
from .common import add_platform, PROTOCOL_HELP, add_engine_arguments, add_run_engine, protocol_option
from ..driver.loader import check_kernel_file, load_scenarios, one_variant
from . import bounds
from .progress import Progress


#: the FILE mutate takes
_FILES = "a Python kernel .py file (raw ISA or pl DSL)"


def add_parser(sub) -> None:
    p = sub.add_parser("mutate", help="how many protocol mutants of a kernel its checks catch")
    p.add_argument("file", help="kernel file (.py defining SCENARIO, raw ISA or pl DSL)")
    p.add_argument("--variant", default=None, help="variant to check (default: every variant)")
    add_platform(p, "platform model (default: the scenario's, else a2a3)")
    p.add_argument("--protocol", default=None, type=protocol_option, metavar="PROTOCOL",
                   help=PROTOCOL_HELP)
    p.add_argument("--schedules", type=int, default=20,
                   help="schedules explored per mutant and variant, as check's (default 20)")
    p.add_argument("--explore", default="mix", choices=MODES, help="exploration mode (default mix)")
    p.add_argument("--seed", type=int, default=0, help="first schedule seed (default 0)")
    add_engine_arguments(p)
    add_run_engine(p, "the default schedule of a mutant shows that every schedule gives its result")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="wall-clock bound of the whole command, as run's and check's: the kernel's own "
                        "check and every mutant's runs together; the mutants it stops are listed as not "
                        "checked, not counted, and the exit status is 1 (default: no bound on the command, "
                        f"{DEFAULT_TIMEOUT:g} s on each run - a mutant whose run passes it is caught by the "
                        "BudgetError)")
    p.add_argument("--fail-under", type=float, default=None, metavar="PCT",
                   help="exit status 1 when fewer than PCT %% of the mutants are caught")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    p.set_defaults(func=main, kernel_files=_FILES)



def main(args) -> int:
    check_kernel_file(args.file, _FILES)
    if not args.file.endswith(".py"):
        raise ConfigError(f"{args.file}: ptopipe mutate takes a Python kernel file (raw ISA or pl DSL)",
                          where="argument FILE",
                          fix="mutate the .py kernel; a .pto or C++ kernel is not mutated yet")
    if args.schedules < 0:
        raise ConfigError(f"--schedules {args.schedules} is negative", where="option --schedules",
                          fix="give 0 (the default schedule only) or more")
    if args.fail_under is not None and not 0 <= args.fail_under <= 100:
        raise ConfigError(f"--fail-under {args.fail_under} is not a percentage",
                          where="option --fail-under", fix="give a number from 0 to 100")
    if args.variant is not None:        # (a misspelt one: refused at its option, not as the kernel failing)
        for sc in load_scenarios(args.file, kinds=args.kernel_files):
            one_variant(sc, args.variant)
    limit = bounds.run_kwargs(args)["timeout"]          # (the command's Deadline, or None)
    job = Job(args.file, args.variant, args.platform, args.protocol, args.schedules, args.seed,
              args.explore, None, args.run_engine, limit.portable() if limit is not None else None)
    bar = Progress(f"mutants of {os.path.basename(args.file)}", 1)

    def progress(done, total, note=""):
        bar.total = max(total, 1)
        bar.step(done, note)
    try:
        cov = coverage(job, args.workers, progress, args.engine, args.address)
    finally:
        bar.close()
    if args.json:
        from . import json_out
        print(json.dumps(cov.to_dict(), indent=2), file=json_out(args))
    else:
        print(format_coverage(cov, () if cov.verdicts else _kernels_elsewhere(args.file)))
    if args.fail_under is not None and (not cov.counted or 100 * cov.ratio < args.fail_under):
        return 1                        # (no mutant: nothing measured, no coverage to pass)
    return int(bool(cov.not_checked))   # (--timeout left some unmeasured)


def _kernels_elsewhere(path: str) -> list:
    """The other Python files that define the kernels the file's Scenarios run (a file that
    imports its kernels from a module of its own): mutate edits the file it is given only."""
    from ..driver.loader import load_module
    from ..isa.scenario import Scenario
    here, pkg = os.path.realpath(path), os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    found = []
    for sc in (v for v in vars(load_module(path)).values() if isinstance(v, Scenario)):
        for fn in (sc.aic, *(sc.aiv if isinstance(sc.aiv, tuple) else (sc.aiv,))):
            code = getattr(fn, "__code__", None)
            src = os.path.realpath(code.co_filename) if code is not None else None
            if src and src != here and not src.startswith(pkg + os.sep) and os.path.isfile(src) \
                    and src not in found:
                found.append(src)
    return found


def format_coverage(cov, elsewhere=()) -> str:
    """The coverage table: one row per mutant, then the survivors and the ratio; ``elsewhere``:
    the files that define the kernels when the file given has none of their statements."""
    if not cov.verdicts:
        if elsewhere:
            return (f"{cov.path}: no protocol statement to mutate: its Scenario's kernels are defined in "
                    f"{', '.join(map(os.path.relpath, elsewhere))}, and mutate edits the file it is given "
                    "only - define the Scenario in the file of its kernels and mutate that file")
        return (f"{cov.path}: no protocol statement to mutate: its Python source has no TPUSH / "
                "TPOP / TFREE / event call or pipe set-up (a mixed pl kernel gets them from the "
                "compiler, a C++ kernel's are in its .cpp, which mutate does not edit)")
    rows = [("line", "mutation", "change", "verdict", "finding")]
    for v in cov.verdicts:
        found = ""
        if v.status == NOT_CHECKED:
            found = "--timeout ran out before its checks finished"
        elif v.status != SURVIVED:
            at = f" at {v.where}" if v.where else ""
            found = f"{v.error}{at} ({v.by}{f', variant {v.variant}' if v.variant else ''})"
        rows.append((str(v.mutant.line), v.mutant.name, v.mutant.change, v.status, found))
    widths = [max(len(r[k]) for r in rows) for k in range(4)]
    lines = [f"checker coverage of {cov.path} (variants: {cov.variant}, {cov.platform}/{cov.protocol}, "
             f"default schedule + {cov.schedules} explored each)"]
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths + [0])).rstrip())
    survivors = [v for v in cov.verdicts if v.status == SURVIVED]
    invalid = len(cov.verdicts) - cov.counted - cov.not_checked
    lines.append(f"caught {cov.caught} of {cov.counted} mutants ({100 * cov.ratio:.0f} %)"
                 + (f"; {invalid} more broke the kernel's Python (invalid: a name used before it is "
                    "bound, a syntax error - no kernel, not counted)" if invalid else "")
                 + (f"; {cov.not_checked} not checked: --timeout ran out before their checks finished "
                    "(not counted; raise --timeout to measure them)" if cov.not_checked else ""))
    for v in survivors:
        lines.append(f"  survived: {v.mutant.label} - a mistake these checks would not notice "
                     "(docs/mutate.md, \"Survivors, explained\": equivalent mutants and checks worth adding)")
    return "\n".join(lines)

