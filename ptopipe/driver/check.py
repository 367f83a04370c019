"""A check of one kernel variant as data: its default schedule and the explored ones run
with every checker on (or the default schedule and one ``replay`` schedule), an exception
the kernel raises counted as that variant's failure, and the report row ``check --json``,
the library table and JUnit show - the error as structured data (``PtoPipeError.to_dict``
keys), at the DSL line a written C++ line came from."""
from __future__ import annotations

import os
import re

from ..errors import ConfigError, PtoPipeError, user_frame
from ..isa.explore import ExploreResult, ScheduleSpec, explore, run_schedule
from ..sim.bounds import DEFAULT_TIMEOUT

#: the options whose bad value is the command's error, not one variant's failure
_OPTION_ERRORS = ("option --explore", "option --depth", "option --replay", "option --engine",
                  "option --address", "option --workers")


def explore_variant(sc, variant: str, platform, protocol: str, *, schedules: int = 20, seed: int = 0,
                    mode: str = "mix", depth: int | None = None, replay: str | None = None,
                    data_seed: int = 0, progress=None, source: tuple | None = None,
                    engine: str = "local", address: str | None = None, workers: int | None = None,
                    run_warnings: list | None = None, run_engine: str | None = None,
                    **run_kwargs) -> ExploreResult:
    """:func:`ptopipe.isa.explore.explore` of ``sc``'s ``variant`` (``replay``: the default
    schedule, then the schedule that spec names), with an error the runs raise - a kernel's
    own exception too - as the result's failure; ``progress(done, total)`` as runs end.

    With a ``source`` - ``(function, *args)`` that loads ``(sc, run warnings)`` in another
    process - the explored schedules of a long check run on ``engine``'s workers
    (``workers``: the local pool's size, 1: none; ``address``: the Ray cluster's), with the
    same result, their warnings added to ``run_warnings`` (:mod:`ptopipe.driver.spread`).
    ``run_engine``: the runs' execution engine (``run``'s ``engine``; None: $PTOPIPE_ENGINE)."""
    at = [0, schedules + 1]
    if run_engine is not None:
        run_kwargs["run_engine"] = run_engine

    def step(done: int, total: int) -> None:
        at[:] = done, total             # run 0 is the default schedule, run k seed + k - 1
        if progress is not None:
            progress(done, total)
    try:
        if replay is not None:
            return _replay(sc, variant, platform, protocol, replay, data_seed, step, as_run(run_kwargs))
        if spread_out(source, engine, workers):
            from .spread import explore_spread
            return explore_spread(sc, source, schedules=schedules, seed=seed, variant=variant,
                                  platform=platform, protocol=protocol, data_seed=data_seed,
                                  progress=step, mode=mode, depth=depth, engine=engine,
                                  address=address, workers=workers, run_warnings=run_warnings,
                                  **run_kwargs)
        return explore(sc, schedules=schedules, seed=seed, variant=variant, platform=platform,
                       protocol=protocol, data_seed=data_seed, progress=step, mode=mode, depth=depth,
                       **as_run(run_kwargs))
    except KeyboardInterrupt as e:      # (Ctrl-C: the command says how far the check got)
        if not hasattr(e, "ptopipe_done"):
            e.ptopipe_done = f"{at[0]} of {at[1]} schedules of {variant} had finished"
        raise
    except ConfigError as e:
        if e.where in _OPTION_ERRORS:
            raise
        res = ExploreResult(runs=at[0] + 1, passed=at[0], mode=mode)
        res.failures.append((getattr(e, "ptopipe_schedule", None), e))
        return res
    except Exception as e:  # noqa: BLE001 - user code may raise anything; report it per variant
        res = ExploreResult(runs=at[0] + 1, passed=at[0], mode=mode)
        res.failures.append((getattr(e, "ptopipe_schedule", None), e))
        return res


def as_run(run_kwargs: dict) -> dict:
    """``run_kwargs`` as ``run`` takes them: a ``run_engine`` (the name a check gives the
    runs' engine, beside the engine its schedules are spread on) is ``engine``."""
    if "run_engine" not in run_kwargs:
        return run_kwargs
    kw = dict(run_kwargs)
    kw["engine"] = kw.pop("run_engine")
    return kw


def spread_out(source, engine: str = "local", workers: int | None = None) -> bool:
    """Whether a check may run its explored schedules on workers: it has a ``source`` to
    load its kernel there, and more than one worker (``--workers``, else the machine's cores)
    or a Ray cluster."""
    if source is None or workers == 1:
        return False
    return engine == "ray" or (workers or os.cpu_count() or 1) > 1


def _replay(sc, variant, platform, protocol, replay: str, data_seed: int, progress, run_kwargs):
    """The default schedule, then the one schedule ``replay`` names."""
    spec = ScheduleSpec.parse(replay)
    res = ExploreResult(mode=spec.mode)
    for i, s in enumerate((None, spec)):
        progress(i, 2)
        res.runs += 1
        pol = s.policy() if s is not None else None
        try:
            run_schedule(sc, s, variant, platform, protocol, data_seed, policy=pol, **run_kwargs)
            res.passed += 1
        except PtoPipeError as e:
            res.failures.append((s, e))
            break
        except Exception as e:  # noqa: BLE001 - a kernel's own error, with its schedule
            e.ptopipe_schedule = s
            raise
        finally:
            if pol is not None:
                res.digests.add(pol.digest)
    return res


def located(warning: str) -> tuple:
    """``"file:line:col: what"`` (an executor's run warning) as ``(what, where)``."""
    m = re.match(r"(.*?:\d+:\d+): (.*)", warning, re.S)
    return (m.group(2), m.group(1)) if m else (warning, None)


def fails_under_werror(warnings, werror: bool) -> bool:
    """Whether a run that finished with ``warnings`` - every warning its command showed: the
    static checks', the loader's, the run's - fails: under ``--werror``, any warning does."""
    return bool(werror) and bool(list(warnings))


def variant_report(name: str, variant: str, platform: str, protocol: str, res: ExploreResult,
                   run_warnings=(), werror: bool = False, library: bool = False) -> dict:
    """The report row of ``res``, a check of scenario ``name``'s ``variant``; the
    ``run_warnings`` (``file:line:col: what``) join ``res.warnings`` first.  Its ``failure``:
    None for a pass, the first failure's error with its schedule, or - a pass with warnings
    under ``werror`` - a ``Warnings`` failure; :data:`TIMEOUT` when the command's --timeout
    stopped it (:func:`out_of_time`; ``library``: a row of a kernel library's check)."""
    res.warnings = [located(w) for w in dict.fromkeys(run_warnings)] + list(res.warnings)
    rep = {"scenario": name, "variant": variant, "platform": platform, "protocol": protocol,
           "runs": res.runs, "passed": res.passed, "failure": None, "explore": res.mode,
           "distinct": res.distinct, "complete": res.complete, "determinate": res.determinate,
           "why_explored": res.why_explored,
           "warnings": [{"what": w, "where": str(loc) if loc else None} for w, loc in res.warnings]}
    if res.ok and fails_under_werror(res.warnings, werror):
        rep["failure"] = {"error": "Warnings", "what": f"{len(res.warnings)} warning(s) treated as "
                          "errors (--werror)", "where": res.warnings[0][1] and str(res.warnings[0][1]),
                          "seed": None}
    elif not res.ok:
        seed, err = res.first
        seed = seed if seed is None or isinstance(seed, int) else str(seed)
        late = out_of_time(err, res.passed, library)
        if late is not None:
            rep["failure"] = {"error": TIMEOUT, "what": late, "where": None,
                              "fix": OUTSIDE_FIX if "kernel file's own code" in late else
                              TIMEOUT_FIX if res.passed < 1 and late.startswith("not finished") else None,
                              "details": None, "findings": list(err.findings), "seed": seed}
        else:
            rep["failure"] = dict(describe_exception(err), seed=seed)
    return rep


#: the error name of a variant the command's --timeout stopped (or never started) before
#: anything failed: not the kernel's failure, the command's.  A run that never finished the
#: default schedule of a lone kernel file stays a BudgetError at its line (the kernel may
#: loop; run and trace say so too); in a kernel library, whose files all share the one
#: --timeout, it is TIMEOUT too: the other files may have taken the time
TIMEOUT = "Timeout"


def command_timeout(err: BaseException) -> dict | None:
    """The finding of ``err`` that says the command's ``--timeout`` stopped it (its limit,
    where, the core), else None."""
    bound = next((f for f in getattr(err, "findings", ()) if f.get("bound") == "timeout"), None)
    return bound if bound is not None and bound.get("scope") == "command" else None


def out_of_time(err: BaseException, passed: int, library: bool = False) -> str | None:
    """What to say of ``err`` when it is the command's ``--timeout`` running out after
    ``passed`` passing schedules (or before the variant started; in a ``library``, also in
    its default schedule), else None."""
    bound = command_timeout(err)
    if bound is None:
        return None
    limit = f"--timeout {bound['limit']:g} s"
    at = f" (stopped at {bound['where']})" if bound.get("where") else ""
    if bound.get("outside_runs"):
        return f"not finished: {limit} ran out in the kernel file's own code, outside any run{at}"
    if bound.get("core") is None:
        if passed < 1:
            return f"not checked: {limit} ran out before this variant started"
        return f"not finished: {limit} ran out after {passed} passing schedule(s), no failure found in them"
    if passed < 1:
        return (f"not finished: {limit} ran out in the default schedule{at}; a kernel that loops "
                "forever and one that needs more time look alike here") if library else None
    return (f"not finished: {limit} ran out after {passed} passing schedule(s), no failure found in "
            f"them; the schedule under way then did not finish{at}")


#: what a variant stopped by --timeout in the kernel file's own code can do
OUTSIDE_FIX = ("the kernel file's own code (make_args, golden, its import) did not finish: end that loop or "
               "wait, or raise --timeout if it is just long")
#: what a variant stopped by --timeout in its default schedule can do
TIMEOUT_FIX = ("check it alone with a larger --timeout, or without one: each run then has its own "
               f"{DEFAULT_TIMEOUT:g} s bound, which reports a kernel that loops forever as a BudgetError")


def error_report(e: BaseException, scenario: str | None = None, variant: str | None = None,
                 platform: str | None = None, protocol: str | None = None) -> dict:
    """The report row of an error that is no variant's check (a bad file, a bad option)."""
    return {"scenario": scenario, "variant": variant, "platform": platform, "protocol": protocol,
            "runs": 0, "passed": 0, "failure": describe_exception(e)}


def with_dsl_line(e: PtoPipeError) -> PtoPipeError:
    """``e`` naming the DSL line its C++ line was written from, when it is at a line of C++
    that ``ptopipe compile --emit cpp`` wrote (:mod:`ptopipe.codegen.cpp_origin`)."""
    if e.where:
        from ..codegen.cpp_origin import annotate
        annotate(e)
    return e


def describe_exception(e: BaseException) -> dict:
    """``e`` as structured data (``PtoPipeError.to_dict`` keys) for a report row."""
    if isinstance(e, PtoPipeError):
        return with_dsl_line(e).to_dict()
    f = user_frame(e)
    return {"error": type(e).__name__, "what": str(e), "where": f"{f.filename}:{f.lineno}" if f else None,
            "fix": None, "details": None, "findings": []}
