"""What the subcommands share: the options they have in common and validating their values,
the platform and protocol a run uses (an explicit option, else the Scenario's own
``platform=`` / ``protocol=``, else a2a3 / spec), running every picked variant with a
summary of the failures, and writing ``--output`` arrays."""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from ..arch import PLATFORMS, get_platform
from ..arch.vocab import Protocol, SyncMode
from ..errors import ConfigError
from ..protocol.versions import name as protocol_name
from ..sim.location import CPP_SUFFIXES  # noqa: F401 - the C++ kernel files run / check / trace take
from .errors import color, report_exception
from ..driver.loader import check_kernel_file

#: the values of --protocol: the protocol vocabulary's own, and pto-isa@<commit>
PROTOCOLS = [p.value for p in Protocol]
PROTOCOL_HELP = ("ring protocol model: " + ", ".join(PROTOCOLS) +
                 ", or pto-isa@<commit> (a pto-isa release with its bugs: docs/protocols.md)")


def protocol_option(text: str) -> str:
    """The value of --protocol: a protocol name or pto-isa@<commit>, as its canonical name
    (an unknown one is a usage error that lists the known names and versions)."""
    try:
        return protocol_name(text)
    except ConfigError as e:
        raise argparse.ArgumentTypeError("; ".join(x for x in (e.what, e.details, e.fix) if x)) from None

def add_platform(p, help_: str) -> None:
    """``--platform``: any spelling the platform lookup knows (``a3`` = ``a2a3``, as ptoas
    names it), stored as the platform's canonical name."""
    p.add_argument("--platform", default=None, type=_platform_option, choices=sorted(set(
                   get_platform(n).name for n in PLATFORMS)), metavar="{" + ",".join(PLATFORMS) + "}",
                   help=f"{help_}; a3 is a2a3")


def _platform_option(text: str) -> str:
    try:
        return get_platform(text).name
    except ConfigError as e:
        raise argparse.ArgumentTypeError(f"{e.what}; {e.fix}") from None


# option attribute -> (smallest allowed value, what the value is)
_LOWER_BOUNDS = {
    "schedules": (0, "a number of schedules"),
    "launches": (1, "a number of launches"),
    "blocks": (1, "a number of blocks"),
    "seed": (0, "a seed"),
    "data_seed": (0, "a seed"),
    "latency": (0, "a latency in cycles"),
    "workers": (1, "a number of worker processes"),
    "depth": (1, "a depth (pct: the bug depth; exhaustive: deviations)"),
    "until_cycle": (1, "a cycle count"),
}


def validate(args) -> None:
    """Reject option values no run can use, naming the option, and a FILE argument that is
    not a readable file (before any kernel runs)."""
    from ..sim.core import sync_every_error
    bad = sync_every_error()
    if bad is not None:
        raise bad
    for name, (low, what) in _LOWER_BOUNDS.items():
        v = getattr(args, name, None)
        if v is not None and v < low:
            opt = "--" + name.replace("_", "-")
            raise ConfigError(f"{opt} {v} is not {what}", where=f"option {opt}",
                              fix=f"give {opt} a value >= {low}")
    timeout = getattr(args, "timeout", None)
    if timeout is not None and not timeout > 0:            # (nan too)
        raise ConfigError(f"--timeout {timeout:g} is not a positive number of seconds", where="option --timeout",
                          fix="give seconds > 0 (inf: no wall-clock bound), or leave the option out for "
                              "the default")
    variant = getattr(args, "variant", None)
    if variant is not None and not variant.strip():
        raise ConfigError("--variant is empty", where="option --variant",
                          fix="name a variant, write --variant all, or leave the option out "
                              "for the scenario's default")
    if getattr(args, "engine", None) == "ray":
        from ..driver.engine import require_ray
        require_ray()
    if getattr(args, "address", None):
        from ..driver.engine import check_address
        check_address(args.engine, args.address)
    paths = getattr(args, "paths", None)
    if paths is not None:                 # `check PATH...`: one file, or a kernel library
        args.file = paths[0] if len(paths) == 1 and not os.path.isdir(paths[0]) else None
    if getattr(args, "file", None) is not None:
        check_kernel_file(args.file, *([args.kernel_files] if getattr(args, "kernel_files", None) else []))
    check_outputs(args)


#: the options that name a file a command writes (``args`` attribute -> option)
OUTPUT_OPTIONS = {"output": "--output", "junit": "--junit", "report": "--report", "png": "--png",
                  "plot": "--plot"}
#: the commands whose outputs get each variant's name under --variant all (trace.py's ``_out``)
_PER_VARIANT = ("run", "trace")
#: the path that names stdout (``compile -o -``)
STDOUT = "-"
#: the (command, option) pairs whose output ``-`` sends to stdout: the output is what the
#: command prints without the option; every other command prints its own report there
_TO_STDOUT = {("compile", "output")}
#: what each output option writes, for the refusal of ``-`` (:func:`_refuse_stdout`)
_WRITES = {"output": "the arrays", "junit": "the JUnit XML", "report": "the HTML report",
           "png": "the PNG swimlane", "plot": "the plot"}


def check_outputs(args) -> None:
    """Refuse every output path of the command that could not be written (a missing or
    read-only directory, a directory, a read-only file: :func:`ptopipe.report._io.check_output`)
    before any work, not after it; ``--output NAME=FILE.npy`` checks FILE."""
    from ..report._io import check_output
    many = getattr(args, "variant", None) == "all" and getattr(args, "command", None) in _PER_VARIANT
    written = {}                        # real path -> the option value writing it
    inputs = _input_files(args)
    for dest, option in OUTPUT_OPTIONS.items():
        given = getattr(args, dest, None)
        for value in (given if isinstance(given, list) else [given] if given else []):
            path = value
            if isinstance(given, list):
                _, sep, path = value.partition("=")
                if not sep:
                    continue            # (the option's own parsing says what is wrong with it)
            if path == STDOUT:
                if (getattr(args, "command", None), dest) not in _TO_STDOUT:
                    raise _refuse_stdout(args, dest, option, value)
                continue
            real = os.path.realpath(path)
            source = next((f for f in inputs if os.path.exists(path) and os.path.samefile(path, f)), None)
            if source is not None:
                raise ConfigError(f"{option} {value} is the input file {source}: the output would overwrite it",
                                  where=f"option {option}", fix="write the output to another file")
            other = _other_parameters_input(args, value, path) if isinstance(given, list) else None
            if other is not None:
                raise ConfigError(f"{option} {value} would overwrite {other[1]}, the --input of parameter "
                                  f"{other[0]}: that array would be lost", where=f"option {option}",
                                  fix="write the output to another file (only a parameter's own --input file "
                                      "may take its result: --output NAME=FILE with --input NAME=FILE)")
            first = written.setdefault(real, f"{option} {value}")
            if first != f"{option} {value}" and not real.startswith("/dev/"):
                raise ConfigError(f"{option} {value}: {first} writes {path} too - one of them would be lost",
                                  where=f"option {option}", fix="give each output a file of its own")
            if many and os.path.lexists(path):      # (not written: each variant's own file is)
                stem, ext = os.path.splitext(path)
                path = f"{stem}.VARIANT{ext or '.json'}"
            try:
                check_output(path)
            except ConfigError as e:
                e.where = e.where or f"option {option}"
                raise


def _refuse_stdout(args, dest: str, option: str, value: str) -> ConfigError:
    """The error of ``option value`` naming stdout (``-``) where the command does not write
    that output there: its stdout carries the command's own report, and a file named ``-``
    is not what anyone writing ``-`` means."""
    command = getattr(args, "command", None) or "the command"
    what = "the Chrome trace" if (command, dest) == ("trace", "output") else _WRITES.get(dest, "its output")
    example = value[:-1] + "FILE" if value.endswith(STDOUT) else "FILE"
    return ConfigError(f"{option} {value}: {command} does not write {what} to stdout (its stdout is the "
                       "command's own report)", where=f"option {option}",
                       fix=f"name a file: {option} {example} (./- for a file named '-'); only compile -o - "
                           "writes its result to stdout")


def _other_parameters_input(args, value: str, path: str) -> tuple | None:
    """``(name, file)`` of the ``--input NAME=FILE`` that ``--output value`` (writing ``path``)
    would overwrite for another parameter than its own, else None."""
    own = value.partition("=")[0]
    if not os.path.exists(path):
        return None
    for item in getattr(args, "input", None) or ():
        name, sep, file = item.partition("=")
        if sep and name != own and os.path.isfile(file) and os.path.samefile(path, file):
            return name, file
    return None


def _input_files(args) -> list:
    """The kernel files the command reads, which no output may overwrite (a parameter's own
    ``--input`` array may: it has been read by then, and ``--output out=out.npy`` updating it
    is a choice; another parameter's is not, :func:`_other_parameters_input`)."""
    files = [getattr(args, "file", None), *(getattr(args, "paths", None) or ())]
    return [f for f in files if f and os.path.isfile(f)]


def command_inputs(args):
    """The command's ``--input`` values (:class:`~ptopipe.driver.pto.Inputs`), each file read
    once - at the first use, so that a refusal of the option comes first - and the same
    arrays handed to every later use (the static check's scalars, the run, a rerun, a check's
    workers): a pipe (``--input x=/dev/stdin``) gives its bytes once."""
    loaded = getattr(args, "inputs_read", None)
    if loaded is None:
        from ..driver.pto import read_inputs
        loaded = args.inputs_read = read_inputs(getattr(args, "input", None))
    return loaded


_PTO_ONLY_FIX = {
    "input": "drop --input: a .py kernel's arguments are what its make_args returns for the variant "
             "(--variant) and data seed (--seed)",
    "output": "drop --output: a .py kernel's results are checked against its golden and printed; "
              "to keep them, call ptopipe.run(...) or SCENARIO.run(...) and save .outputs",
    "func": "drop --func: a .py kernel's functions are the ones its SCENARIO names",
    "range": "use it with check --static (which proves a DSL kernel for the range), or drop it: a "
             ".py kernel's run takes its variant's values",
    "aic": "drop --aic: a .py kernel's functions are the ones its SCENARIO names",
    "aiv": "drop --aiv: a .py kernel's functions are the ones its SCENARIO names",
}
#: the file kinds each of these options is for (:func:`refuse_pto_options`)
_FOR = {"input": ".pto and C++ kernels", "output": ".pto and C++ kernels", "func": ".pto kernels",
        "range": ".pto kernels", "aic": "C++ kernels", "aiv": "C++ kernels",
        "no-checks": "Python and .pto kernels", "engine": "Python and .pto kernels"}
#: the fix of an option given for a C++ kernel (a .pto kernel's) that is not for it; a run of a
#: C++ kernel keeps its checkers (and so the exact engine) on the command line
_NOT_FOR_CPP = {
    "no-checks": "drop --no-checks: `run` checks a C++ kernel as `check` does (ptopipe.run(..., "
                 "checks=False) runs one without)",
    "engine": "drop --engine: `run` has it for Python and .pto kernels; PTOPIPE_ENGINE=periodic sets the "
              "engine of every run that names none (a C++ kernel's too)",
    "func": "name the C++ kernel functions with --aic NAME / --aiv NAME",
    "range": "drop --range: it bounds the static check of .pto and DSL kernels; a C++ kernel runs with "
             "its --input values",
}
_NOT_FOR_PTO = {
    "aic": "drop --aic: a .pto file's function to run is its pto.entry, or the one --func names",
    "aiv": "drop --aiv: a .pto file's function to run is its pto.entry, or the one --func names",
}
_DEST = {"func": "pto_func", "range": "ranges", "no-checks": "no_checks"}


def engine_note(res) -> str | None:
    """What the periodic engine recorded in run ``res`` (None: it did not run)."""
    ff = res.fast_forward
    if ff is None:
        return None
    return (f"  periodic engine: {ff.blocks} blocks ({ff.calls} instructions) recorded, not simulated"
            + (f", {ff.whole} of them taken whole (their iterations not run)" if ff.whole else "")
            + (f"; it stopped recording: {ff.reason}" if ff.reason else ""))


def add_ranges(p) -> None:
    p.add_argument("--range", action="append", dest="ranges", metavar="NAME=LO..HI",
                   help="the values an integer scalar parameter takes: the static check (check "
                        "--static, and the one in front of a .pto run) proves the kernel for those "
                        "(default: every value >= 0); HI may be left out (n=1..); repeatable")


def scalar_ranges(args) -> dict:
    """``--range NAME=LO..HI`` options -> ``{name: (lo, hi or None)}``."""
    out = {}
    for item in getattr(args, "ranges", None) or ():
        name, _, text = item.partition("=")
        lo, dots, hi = text.partition("..")
        try:
            bounds = (int(lo), int(hi) if hi.strip() else None)
        except ValueError:
            bounds = None
        if not name or not dots or bounds is None or (bounds[1] is not None and bounds[1] < bounds[0]):
            raise ConfigError(f"--range {item!r}: not NAME=LO..HI", where="option --range",
                              fix="give integer bounds, LO <= HI: --range n=1..64 (or n=1.. for no upper bound)")
        out[name.strip()] = bounds
    return out


def add_pto_func(p) -> None:
    p.add_argument("--func", dest="pto_func", default=None, metavar="NAME",
                   help="(.pto files) the function to run (default: the pto.entry, else the one "
                        "function no other calls, else the cube + vector pair)")


def refuse_pto_options(args, *options: str) -> None:
    """``options`` given for a kernel file they are not for - ``--input`` / ``--output`` (the
    parameters of a .pto or C++ kernel) or ``--func`` / ``--range`` (a .pto kernel's) for a .py
    kernel, whose arguments come from its Scenario; ``--func`` / ``--range`` for a C++ kernel;
    ``--aic`` / ``--aiv`` (a C++ kernel's functions) for any other - are a ConfigError rather
    than silently unused."""
    if args.file.endswith(".pto"):
        kind, fixes = "a .pto kernel", _NOT_FOR_PTO
    elif args.file.endswith(CPP_SUFFIXES):
        kind, fixes = "a C++ kernel", _NOT_FOR_CPP
    else:
        kind, fixes = "a Python kernel", _PTO_ONLY_FIX
    for opt in options:
        if opt in fixes and getattr(args, _DEST.get(opt, opt), None):
            raise ConfigError(f"--{opt} is for {_FOR[opt]}, and {args.file} is {kind}",
                              where=f"option --{opt}", fix=fixes[opt])


def target(args, sc) -> tuple:
    """(platform, protocol) of a run of ``sc``: option > the Scenario's own > default.
    The platform is a Platform object (with ``--latency`` applied, if the command has it)."""
    return (run_platform(args, getattr(args, "platform", None) or sc.platform or "a2a3"),
            getattr(args, "protocol", None) or sc.protocol or "spec")


def run_platform(args, platform):
    """The Platform a run of the command takes on ``platform`` (a name or a Platform): with
    ``--latency`` applied, if the command has it - for every kind of kernel file alike."""
    plat = get_platform(platform)
    if getattr(args, "latency", None) is not None:
        plat = plat.replace(cross_core_latency=int(args.latency))
    return plat


def add_werror(p) -> None:
    """``--werror``: a run that goes on after warnings (tiles at explicit addresses that
    overlap, a read of bytes nothing wrote, ...) fails."""
    p.add_argument("--werror", action="store_true",
                   help="treat the warnings a run goes on after as errors (exit status 1)")


def werror_verdict(args, printed=(), shown=()) -> tuple:
    """``(failed, verdict word)`` of a run that finished with warnings: ``printed`` (printed
    here, on stderr) and ``shown`` (that its output shows elsewhere, e.g. in the run
    summary) - the one rule, :func:`ptopipe.driver.check.fails_under_werror`, ``check``
    judges by too."""
    from ..driver.check import fails_under_werror
    printed = list(dict.fromkeys(printed))
    for w in printed:
        print(f"warning: {w}", file=sys.stderr)
    failed = fails_under_werror(printed + list(shown), getattr(args, "werror", False))
    return failed, (color("FAIL", "1;31", sys.stdout) if failed else color("PASS", "1;32", sys.stdout))


def werror_note(failed: bool, warnings) -> str:
    """What a verdict line failed under --werror adds: the number of warnings."""
    return f"; {len(set(warnings))} warning(s), errors under --werror" if failed else ""


def summary_warnings(summary) -> list:
    """A run summary's warnings (leaks, unpaired frees, build warnings) as text."""
    return [what + (f" ({loc})" if loc else "") for what, loc in summary.leaks]


def add_sync(p) -> None:
    """``--sync auto|manual``: the synchronisation mode of the runs (docs/events.md)."""
    p.add_argument("--sync", default=None, choices=[m.value for m in SyncMode],
                   help="'manual': only set_flag / wait_flag / pipe_barrier order the pipes of a "
                        "core (missing events are races, hangs or leaks); 'auto': the scoreboard "
                        "orders them (default: the scenario's, else auto)")


def sync_kwargs(args) -> dict:
    """``{"sync": ...}`` if ``--sync`` was given (else the Scenario's own mode applies)."""
    s = getattr(args, "sync", None)
    return {} if s is None else {"sync": s}


def run_each(jobs: list, one) -> int:
    """Call ``one(sc, variant)`` for every job (a true return: it failed).  A single job's error propagates (the CLI
    prints it); with several jobs a failure is reported under the variant's name, the
    others still run, and a summary names every failed variant.  Returns the exit code."""
    if len(jobs) == 1:
        return int(bool(one(*jobs[0])))
    failed = []
    for sc, v in jobs:
        try:
            if one(sc, v):                # (it printed its FAIL line: --werror)
                failed.append(f"{sc.name}[{v}]")
        except Exception as e:  # noqa: BLE001 - report it under the variant's name, go on
            failed.append(f"{sc.name}[{v}]")
            print(f"{color('FAIL', '1;31', sys.stdout)} {sc.name}[{v}]: {type(e).__name__}", flush=True)
            report_exception(e)
            sys.stderr.flush()
    if failed:
        print(f"{len(failed)} of {len(jobs)} variants failed: {', '.join(failed)}")
        return 1
    print(f"all {len(jobs)} variants passed")
    return 0


def add_launches(p) -> None:
    """The options of how a run launches the kernels: ``--launches K``, ``--blocks N``."""
    p.add_argument("--launches", type=int, default=None, metavar="K",
                   help="run the kernels K times back to back on one cluster, flag counters and "
                        "memories carried over (default: the scenario's launches=, else 1)")
    p.add_argument("--blocks", type=int, default=None, metavar="N",
                   help="launch N blocks (kernel<<<N, ...>>>): each runs the kernels on a cluster of "
                        "its own with get_block_idx() 0 .. N-1, all on one GM (default: the "
                        "scenario's blocks=, else 1)")


def launch_kwargs(args) -> dict:
    """``ptopipe.run``'s ``launches`` / ``blocks`` from the options that were given."""
    return {name: v for name in ("launches", "blocks") if (v := getattr(args, name, None)) is not None}


def blocks_ran(summary) -> str:
    """' (N blocks)' for the verdict line of a run of several blocks, else ''."""
    return f" ({summary.blocks} blocks)" if summary.blocks > 1 else ""


def block_note(summary) -> str | None:
    """The note of a run of one block whose kernel asked for its block index or the number
    of blocks (None otherwise): it computed block 0's share only."""
    if summary.blocks == 1 and summary.asked_block:
        return ("note: the kernel asked for its block index (get_block_idx / get_block_num) and ran as "
                "block 0 of 1 (--blocks N to run N)")
    return None


def output_files(specs, names, what: str = "a tensor parameter", fix_names: str | None = None) -> dict:
    """``{file: name}`` of the ``--output NAME=FILE.npy`` ``specs``, each NAME one of ``names``
    (``what`` says which may be given; ``fix_names``: how the fix lists them) - a ConfigError
    otherwise, raised before the run as well as after it: a misspelt name does not cost the run."""
    files = {}
    for p in specs or []:
        name, sep, file = p.partition("=")
        if not sep or name not in names:
            raise ConfigError(f"--output {p!r}: expected NAME=FILE.npy with NAME {what}", where="option --output",
                              fix=f"names: {fix_names or ', '.join(sorted(names))}")
        files[file] = name
    return files


def write_outputs(outputs: dict, specs, what: str = "a tensor parameter", fix_names: str | None = None) -> list:
    """Write each ``--output NAME=FILE.npy`` of ``specs`` from ``outputs`` (name -> array),
    atomically; a bf16 / float8 array is saved as its raw bits.  ``what`` says which names
    may be given (:func:`output_files`).  Returns the files written."""
    import io
    from ..report._io import write_atomic
    outs = {}
    for file, name in output_files(specs, outputs, what, fix_names).items():
        arr = outputs[name]
        if arr.dtype.kind == "V":                   # bf16 / float8: saved as its raw bits
            arr = arr.view({1: np.uint8, 2: np.uint16}[arr.dtype.itemsize])
        outs[file] = arr
    for file, arr in outs.items():
        buf = io.BytesIO()
        np.save(buf, arr, allow_pickle=False)
        write_atomic(file, buf.getvalue())
    return list(outs)


def add_run_engine(p, when: str) -> None:
    """``--run-engine exact|periodic``: the execution engine of a checking command's runs (``run``'s
    ``--engine``); the periodic one also explores no schedule when ``when``."""
    from ..sim.cluster import ENGINES
    p.add_argument("--run-engine", choices=ENGINES, default=None,
                   help=f"the execution engine of the runs, as run's --engine (docs/engine.md); periodic also "
                        f"explores no schedule when {when} (docs/schedules.md) (default: $PTOPIPE_ENGINE, "
                        f"else exact)")


def _where_engine(value: str) -> str:
    """``--engine`` of a checking command names where its work runs; an execution engine there
    (``run``'s ``--engine periodic``) is refused with the option that takes it."""
    from ..sim.cluster import ENGINES
    if value in ENGINES:
        raise argparse.ArgumentTypeError(f"{value!r} is an execution engine, which this command takes as "
                                         f"--run-engine {value} (its --engine is where the work runs: "
                                         f"local or ray)")
    return value


def add_engine_arguments(p, what: str | None = None) -> None:
    """``--engine local|ray``, ``--address``, ``--workers``: where a command's units (the files
    of a kernel library, the explored schedules of one kernel, the mutants of a kernel) run
    (:mod:`ptopipe.driver.engine`); ``what``: the command's units, said in the help."""
    from ..driver.engine import ENGINES
    p.add_argument("--engine", default="local", choices=ENGINES, type=_where_engine,
                   help="where the work runs" + (f" ({what})" if what else "") + ": local (a process "
                        "pool sized to the machine) or ray (a Ray cluster: pip install \"ptopipe[ray]\")")
    p.add_argument("--address", default=None, metavar="HOST:PORT",
                   help="(--engine ray) the Ray cluster to use (default: start one on this machine)")
    p.add_argument("--workers", type=int, default=None,
                   help="(--engine local) parallel processes (default: the machine's cores; 1: "
                        "everything in this process)")
