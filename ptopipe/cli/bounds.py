"""The bounds every running subcommand takes (``run``, ``check``, ``trace``, ``sweep``):
``--timeout SECONDS`` (wall-clock, per run) and ``--until-cycle N`` (simulated time).
Together with the instruction budget they make sure a command never hangs; the values
are checked by the simulator (a ConfigError for a non-positive one)."""
from __future__ import annotations

from ..sim.bounds import DEFAULT_TIMEOUT


def add_arguments(p) -> None:
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help=f"wall-clock bound per run (default {DEFAULT_TIMEOUT:g} s): a run still going "
                        "after it stops with a BudgetError naming each core's kernel line")
    p.add_argument("--until-cycle", type=int, default=None, metavar="N",
                   help="simulated-time bound: a core passing cycle N stops the run with a "
                        "BudgetError (default: no bound)")


def run_kwargs(args) -> dict:
    """The keyword arguments of ``ptopipe.run`` for the bounds given on the command line."""
    return {"timeout": getattr(args, "timeout", None), "until_cycle": getattr(args, "until_cycle", None)}
