"""The bounds every running subcommand takes (``run``, ``check``, ``trace``, ``sweep``):
``--timeout SECONDS`` (wall-clock) and ``--until-cycle N`` (simulated time).  Together
with the instruction budget they make sure a command never hangs; a value no run can use
is refused naming its option (:func:`ptopipe.cli.common.validate`).

``--timeout`` bounds the whole command: one :class:`~ptopipe.sim.bounds.Deadline`, made
at the command's first run, is shared by every run it makes (variants, schedules,
launches, the re-run that explains a mismatch).  A sweep is the exception: each row (a
configuration, run in its own worker process) has the bound, so that a row that hangs is
reported as a failed row and the others still run.  Without ``--timeout`` each run has
the default bound of ``ptopipe.run``."""
from __future__ import annotations

from ..sim.bounds import DEFAULT_TIMEOUT, Deadline, deadline


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
