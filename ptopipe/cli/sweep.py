"""``ptopipe sweep FILE --param depth=1,2,4,8 [--param M=32,64]``: run a kernel once per
configuration (the Scenario's make_args parameters; the rest from --variant) in parallel
processes and print cycles and utilisation per configuration, the best one marked."""
from __future__ import annotations

import contextlib

from ..report.sweep import format_table, parse_params, pick_scenario, sweep, write_plot
from .common import add_platform, PROTOCOL_HELP, protocol_option, target
from . import bounds
from ..driver.loader import load_scenarios, one_variant
from .progress import Progress
from ..sim.bounds import CommandWatch, deadline


def add_parser(sub) -> None:
    p = sub.add_parser("sweep", help="run a kernel over a grid of parameters and compare cycles")
    p.add_argument("file", help="kernel file (.py defining SCENARIO)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=V1,V2,...",
                   help="a make_args parameter and its values (at least one; repeatable), e.g. depth=1,2,4,8")
    p.add_argument("--variant", default=None, help="variant giving the other parameters (default: the one named 'default', "
                        "else the first)")
    p.add_argument("--scenario", default=None, help="scenario name if the file defines several")
    add_platform(p, "platform model (default: the scenario's, else a2a3)")
    p.add_argument("--protocol", default=None, type=protocol_option, metavar="PROTOCOL",
                   help=PROTOCOL_HELP + " (default: the scenario's, else spec)")
    p.add_argument("--latency", type=int, default=None, help="cross-core flag latency in cycles")
    p.add_argument("--seed", type=int, default=0, help="input data seed of make_args' rng (default 0)")
    p.add_argument("--data-seed", dest="seed", type=int, metavar="SEED", help="the same as --seed")
    p.add_argument("--workers", type=int, default=2, help="parallel processes (default 2)")
    bounds.add_arguments(p, per_row=True)
    p.add_argument("--plot", default=None, metavar="OUT.png", help="also plot cycles per configuration "
                                                                  "(needs matplotlib)")
    p.set_defaults(func=main, kernel_files="a kernel .py file defining SCENARIO")   # (the FILE it takes)


def main(args) -> int:
    params = parse_params(args.param)
    # (--timeout bounds each row; loading the file here, before the rows, is bounded by it too)
    with CommandWatch(deadline(args.timeout)) if args.timeout is not None else contextlib.nullcontext():
        sc = pick_scenario(load_scenarios(args.file, kinds=args.kernel_files), args.scenario)
    variant = one_variant(sc, args.variant) if args.variant else sc.default_variant
    platform, protocol = target(args, sc)
    bar = Progress(f"sweep of {sc.name}", 1)

    def progress(done, total):
        bar.total = total
        bar.step(done)
    try:
        rows = sweep(args.file, params, variant, sc.name, platform, protocol, args.seed,
                     args.workers, bounds=bounds.run_kwargs(args), progress=progress)
    finally:
        bar.close()
    print(f"sweep of {sc.name} (variant {variant}, {platform.name}, {protocol}): "
          f"{len(rows)} configuration{'s' if len(rows) != 1 else ''}")
    print(format_table(rows))
    if args.plot:
        print(f"wrote {write_plot(rows, args.plot, f'ptopipe sweep {sc.name}')}")
    return 0 if all(r.ok for r in rows) else 1
