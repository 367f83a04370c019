"""pto-isa C++ kernel files as commands take them: the ``--input`` values as the kernels'
arguments (every ``__gm__`` pointer parameter an array - its shape comes from the array, a
pointer does not say it; an array of another element type than the pointer's is refused -
every scalar a number), and the kernels built against
ptopipe's headers and run on the simulated cluster, or explored like any kernel's Scenario,
in a child process (:func:`ptopipe.cpp.runner.in_child`: a crash in native code is a
KernelError, not a dead ptopipe; every error at the C++ file:line)."""
from __future__ import annotations

import os

import numpy as np

from ..errors import BudgetError, ConfigError, DataRaceError, PtoPipeError, refuse_unknown_parameters
from ..sim.bounds import Deadline
from .pto import Inputs, as_declared, as_inputs


def inputs(given: "Inputs | None", kernels) -> dict:
    """The ``--input`` values (:class:`~ptopipe.driver.pto.Inputs`, read by the command) as the
    arguments of the C++ :class:`~ptopipe.cpp.build.Kernels`
    ``kernels``: a name none of them has is refused, as a .pto kernel's is (a typo would go unused);
    an array for a pointer to bf16 / float8 elements may be saved as numpy saves them (void, or
    the unsigned bits: :func:`ptopipe.driver.pto.as_declared`)."""
    given = as_inputs(given).arrays
    refuse_unknown_parameters(given, {p for f in kernels.roles.values() for p in f.params})
    declared = {}
    for fn in kernels.roles.values():
        declared.update((n, e) for n, e in zip(fn.params, fn.elements or ()) if e is not None)
    return {k: (v.item() if v.ndim == 0 else
                np.ascontiguousarray(as_declared(v, declared[k]) if k in declared else v))
            for k, v in given.items()}


def refuse_missing_parameters(given: dict, kernels) -> None:
    """A ConfigError naming every parameter of the C++ ``kernels`` that ``given`` has no value
    for, all at once and before the build (a pointer has no shape to make an array of: unlike
    a .pto kernel's, none gets seeded data)."""
    missing = {}
    for fn in kernels.roles.values():
        for k, name in enumerate(fn.params):
            if name not in given and name not in missing:
                scalar = fn.decls is not None and "*" not in fn.decls[k]     # (a .npy of one will do too)
                missing[name] = f"--input {name}={'NUMBER' if scalar else 'FILE.npy'}"
    if missing:
        names = ", ".join(missing)
        raise ConfigError(f"no --input for the kernel parameter{'s' if len(missing) > 1 else ''} {names} of "
                          f"{os.path.basename(kernels.path)}: a C++ kernel's parameters take the arrays and "
                          "numbers given", where="option --input", fix="give " + " ".join(missing.values()))


def run_target(path: str, platform: str | None, protocol: str | None) -> tuple:
    """``(platform, protocol, note)`` a run of the C++ file ``path`` takes: the given ones, and for
    those not given (None) the ones a file ptopipe wrote was compiled for (its first line:
    :func:`ptopipe.codegen.cpp_writer.written_for`), said in ``note`` - as is a platform given
    that is not the one the file was compiled for; any other C++ keeps None (the commands'
    defaults, a2a3 and spec) and no note."""
    from ..arch import get_platform
    from ..codegen.cpp_writer import written_for
    with open(path, encoding="utf-8", errors="replace") as f:
        target = written_for(f.readline())
    if target is None:
        return platform, protocol, None
    took = [(k, v) for k, given, v in zip(("platform", "protocol"), (platform, protocol), target) if given is None]
    notes = [f"{' and '.join(f'{k} {v}' for k, v in took)}: what ptopipe compiled the file for (its first line; "
             f"{' / '.join('--' + k for k, _ in took)} to choose another)"] if took else []
    if platform is not None and get_platform(platform).name != target[0]:
        notes.append(f"platform {get_platform(platform).name}: given, while ptopipe compiled the file for "
                     f"{target[0]}")
    return platform or target[0], protocol or target[1], "; ".join(notes) or None


def given_names(given: "Inputs | None") -> set:
    """The parameter names the ``--input`` values are given for (of a kernel's overloads, they
    pick the one to run: :func:`ptopipe.cpp.build.find_kernels`)."""
    return set(as_inputs(given).arrays)


def notes(path: str, aic: str | None, aiv: str | None, sync: str | None = None, platform: str = "a2a3",
          params=None) -> list:
    """What a run of the C++ kernels of ``path`` on ``platform`` decides for the user and says as a
    note (a lone Vector kernel run on AIV0 only or on both Vector cores; the manual synchronisation
    mode for a kernel that sets its own events, and the auto mode for one that orders its pipes
    with buffer tokens, unless ``sync`` was given; ``params``: the names of the run's inputs)."""
    from ..cpp.build import BUFFER_TOKENS_NOTE, OWN_EVENTS_NOTE, find_kernels
    k = find_kernels(path, aic, aiv, platform, params=params)
    return [n for n, on in ((k.lane_note, k.lane_note), (OWN_EVENTS_NOTE, k.own_events and sync is None),
                            (BUFFER_TOKENS_NOTE, k.buffer_tokens and sync is None)) if on]


def run_file(path: str, aic: str | None, aiv: str | None, given: "Inputs | None", platform: str = "a2a3",
             after=None, failed=None, silent: bool = False, **run_kwargs) -> tuple:
    """The C++ kernels of ``path`` (``aic`` / ``aiv``: their function names, else found) run
    with the ``given`` inputs as arguments in a child process (``run_kwargs``: ``ptopipe.run``'s);
    ``after(result)`` runs there too (it writes what needs the whole run: traces, reports),
    and ``failed(error)`` when the run raises a PtoPipeError (its ``run_cluster`` holds the
    run up to the error; only the child has it), before the error comes back here; ``silent``:
    what the kernels write to stdout themselves (printf) is dropped - a rerun of a run shown already.
    Returns ``(outputs, summary)``; the build's warnings (a ptopipe-only name the kernel uses:
    :func:`ptopipe.cpp.build.build_warnings`) come first among the summary's warnings."""
    from ..cpp.build import build, build_warnings, find_kernels
    from ..cpp.runner import DEFAULT_TIMEOUT, Loaded, bridge, in_child
    from ..isa.launch import run
    kernels = find_kernels(path, aic, aiv, platform, params=given_names(given))
    if kernels.own_events:          # hand-written events: the manual mode (cpp.build.Kernels)
        run_kwargs.setdefault("sync", "manual")
    kargs = inputs(given, kernels)                  # (refused before the build: it takes seconds)
    refuse_missing_parameters(kargs, kernels)
    libs, bridge_lib = build(kernels, platform), bridge()

    def work(crash_fd):
        if silent:                      # (the child's own descriptor: the parent's stays)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        k = Loaded(kernels, libs, crash_fd, bridge_lib)
        try:
            res = run(aic=k.aic, aiv=k.aiv, args=kargs, platform=platform, **run_kwargs)
        except PtoPipeError as e:
            if failed is not None:
                failed(e)
            raise
        if after is not None:
            after(res)
        return {n: a.copy() for n, a in res.outputs.items()}, res.summary
    try:
        outputs, summary = in_child(work, run_kwargs.get("timeout") or DEFAULT_TIMEOUT,
                                    f"the C++ kernel {os.path.basename(path)}")
    except PtoPipeError as e:
        # a form the build warned about (a default it took) may be why the run failed
        for what, where in build_warnings(libs, kernels):
            e.add_detail(f"build warning at {where}: {what}")
        raise
    summary.leaks[:0] = build_warnings(libs, kernels)
    return outputs, summary


def pto_isa_note(path: str, aic: str | None, aiv: str | None, given: "Inputs | None", platform: str, *,
                 protocol: str | None, checks: bool, pipes: bool, causal_clean: bool,
                 run_kwargs: dict) -> str | None:
    """The note for a clean run or check of the C++ kernels of ``path`` under the default
    protocol (``protocol`` None; with the checkers on, and ``pipes``: the kernels use a ring)
    when the same kernels fail under pto-isa's protocol - judged as ``check`` judges, a
    checked rerun in the causal order: spec's TFREE follows every read of the slot, pto-isa's
    may signal before a TSTORE of it finished, a race only that order shows.  When the run
    was not already clean in the causal order (``causal_clean`` false: a ``run`` without
    --causal) and the causal order fails under spec as well, the note says that instead.
    None when there is nothing to say (or a rerun ran out of its bounds)."""
    if protocol is not None or not checks or not pipes:
        return None
    found = {}
    for proto in ("pto-isa",) if causal_clean else ("pto-isa", "spec"):
        try:
            run_file(path, aic, aiv, given, platform, protocol=proto, causal=True, silent=True, **run_kwargs)
        except BudgetError:             # out of time or instructions: no finding
            return None
        except PtoPipeError as e:
            found[proto] = e
        if not found:
            return None
    e = found.get("spec", found["pto-isa"])
    head = f"{type(e).__name__}: {e.what}" + (f" (at {e.where})" if e.where else "")
    if "spec" in found:
        return (f"in the causal order `check` uses this kernel fails: {head} (`run --causal` with the "
                "same inputs reports it)")
    verb = "races" if isinstance(e, DataRaceError) or "race" in e.what else "fails"
    return (f"under --protocol pto-isa (what pto-isa's TPipe does on {platform}) this kernel {verb}: {head} "
            "(`check --protocol pto-isa`, or `run --protocol pto-isa --causal`, with the same inputs reports it)")


def check_file(path: str, aic: str | None, aiv: str | None, given: "Inputs | None", platform: str, check, runs: int,
               timeout: float | None = None):
    """``check(scenario, warnings)`` of the C++ kernels of ``path`` as a Scenario with no golden
    (the checkers judge) and the build's warnings (``"file:line:col: what"``), in a child
    process bounded by ``timeout`` (default: the runner's) per each of its ``runs``; built here
    first, so that a compile error is reported before anything runs.  Returns what ``check``
    returns."""
    from ..cpp.build import build, build_warnings, find_kernels
    from ..cpp.runner import DEFAULT_TIMEOUT, Loaded, bridge, in_child
    from ..isa.scenario import Scenario
    kernels = find_kernels(path, aic, aiv, platform, params=given_names(given))
    kargs = inputs(given, kernels)                  # (refused before the build: it takes seconds)
    refuse_missing_parameters(kargs, kernels)
    libs, bridge_lib = build(kernels, platform), bridge()
    warned = [f"{where}: {what}" for what, where in build_warnings(libs, kernels)]     # (run warnings' form)

    def work(crash_fd):
        k = Loaded(kernels, libs, crash_fd, bridge_lib)

        def make_args(rng):
            return {n: v.copy() if isinstance(v, np.ndarray) else v for n, v in kargs.items()}
        return check(Scenario(os.path.basename(path), k.aic, k.aiv, make_args, lambda a: {},
                              sync="manual" if kernels.own_events else None), warned)
    # a command's Deadline bounds all the runs together; seconds bound each run
    bound = timeout if isinstance(timeout, Deadline) else (timeout or DEFAULT_TIMEOUT) * runs
    return in_child(work, bound, f"the C++ kernel {os.path.basename(path)}")
