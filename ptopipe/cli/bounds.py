"""The bounds every running subcommand takes (``run``, ``check``, ``trace``, ``sweep``):
``--timeout SECONDS`` (wall-clock) and ``--until-cycle N`` (simulated time).  Together
with the instruction budget they make sure a command never hangs; a value no run can use
is refused naming its option (:func:`ptopipe.cli.common.validate`).

``--timeout`` bounds the whole command: one :class:`~ptopipe.sim.bounds.Deadline`, made
as the command starts, is shared by every run it makes (variants, schedules, launches, the
re-run that explains a mismatch) and watches the command's own work between them (:func:`watched`).  A sweep is the exception: each row (a
configuration, run in its own worker process) has the bound, so that a row that hangs is
reported as a failed row and the others still run.  Without ``--timeout`` each run has
the default bound of ``ptopipe.run``."""
from __future__ import annotations

import contextlib

from ..sim.bounds import DEFAULT_TIMEOUT, CommandWatch, Deadline, deadline


def add_arguments(p, per_row: bool = False) -> None:
    """The bound options of a subcommand; ``per_row``: ``--timeout`` bounds each row of a
    sweep instead of the whole command."""
    scope = ("each configuration's run (a row that passes it fails, the others still run)" if per_row
             else "the whole command: every variant, schedule and launch it runs together")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help=f"wall-clock bound of {scope}; passing it stops the run with a BudgetError "
                        f"naming each core's kernel line (default: {DEFAULT_TIMEOUT:g} s per run)")
    p.add_argument("--until-cycle", type=int, default=None, metavar="N",
                   help="simulated-time bound: a core passing cycle N stops the run with a "
                        "BudgetError (default: no bound)")
    p.set_defaults(timeout_per_row=per_row)


#: seconds past the deadline the command's own watch waits when its files are checked in
#: workers, each watching itself (their reports come first)
WORKERS_GRACE = 1.0


def watched(args, grace: float = 0.25):
    """The watch of ``--timeout`` over the whole command, its own work between runs too
    (importing the kernel file, make_args, golden: :class:`~ptopipe.sim.bounds.CommandWatch`);
    a context that watches nothing without the option or for a sweep, whose rows each have it."""
    t = getattr(args, "timeout", None)
    if t is None or getattr(args, "timeout_per_row", False):
        return contextlib.nullcontext()
    from ..cpp.runner import in_child      # (a C++ kernel's child: bounded by its runner, which names its line)
    return CommandWatch(run_kwargs(args)["timeout"], grace, frozenset({in_child.__code__}))


def run_kwargs(args) -> dict:
    """The keyword arguments of ``ptopipe.run`` for the bounds given on the command line
    (the command's Deadline is made at the first call, then shared)."""
    t = getattr(args, "timeout", None)
    if t is not None and not getattr(args, "timeout_per_row", False):
        limit = getattr(args, "timeout_deadline", None)
        if limit is None:
            deadline(t)                                 # a ConfigError for a non-positive one
            limit = args.timeout_deadline = Deadline(t, scope="command")
        t = limit
    return {"timeout": t, "until_cycle": getattr(args, "until_cycle", None)}
