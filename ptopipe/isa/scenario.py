"""The :class:`Scenario` bundle - what ``ptopipe run / check / sweep FILE`` runs: the kernels,
``make_args`` (their inputs), ``golden`` (the expected outputs) and named parameter sets
(variants), each checked where a user writes them (a ConfigError at their line)."""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from enum import Enum
from typing import Callable

import numpy as np

from ..errors import ConfigError, PtoPipeError
from .golden import compare_launches
from ..arch import get_platform
from ..protocol.versions import parse as parse_protocol
from ..sim.cluster import sync_mode
from .launch import RunResult, kernels_problem, run
from ..errors import ending_call, near_name, with_article


@dataclass(frozen=True)
class Scenario:
    """A runnable kernel with its inputs and numpy golden - what ``ptopipe run FILE`` runs.

    ``make_args(rng, **params)`` builds the ``args`` dict; ``golden(args, **params)`` returns
    the expected outputs ``{name: array}``.  ``variants`` name parameter sets (None: one
    ``"default"`` run with make_args' own defaults)."""
    name: str
    aic: Callable | None
    aiv: object
    make_args: Callable
    golden: Callable
    variants: dict | None = None
    rtol: float = 1e-5
    atol: float = 1e-5
    doc: str = ""
    platform: str | None = None   # the scenario's platform / protocol: what `ptopipe run/check/
    protocol: str | None = None   # trace/sweep` use unless an option overrides them (None: defaults)
    sync: str | None = None       # "manual": run in the manual synchronisation mode (None: auto)
    launches: int | None = None   # launches per run (``run(launches=K)``) unless --launches overrides
    blocks: int | None = None     # blocks per launch (``run(blocks=N)``) unless --blocks overrides

    def __post_init__(self):
        bad = kernels_problem(self.aic, self.aiv)
        if bad is not None:
            raise ConfigError(f"scenario {self.name!r}: {bad[0]}", where=_caller(), fix=bad[1])
        self._check_run_fields()
        for what in ("make_args", "golden"):
            if not callable(getattr(self, what)):
                raise ConfigError(f"scenario {self.name!r}: {what} is {getattr(self, what)!r}, not a "
                                  "function", where=_caller(),
                                  fix=f"pass {what}({'rng' if what == 'make_args' else 'args'}, **params)")
        v = self.variants
        if v is None:       # no parameter sets: one run with make_args' own defaults
            object.__setattr__(self, "variants", {"default": {}})
        elif (not isinstance(v, dict) or not v
              or not all(isinstance(k, str) and k and isinstance(p, dict) for k, p in v.items())):
            raise ConfigError(f"scenario {self.name!r}: variants must be a non-empty dict "
                              f"{{name: {{make_args parameter: value}}}}, got {v!r}", where=_caller(),
                              fix="leave variants out for one 'default' run with make_args' defaults, "
                                  "or write variants={'default': {}}")
        elif "all" in v:
            raise ConfigError(f"scenario {self.name!r}: a variant is named 'all', which `--variant all` "
                              "cannot choose: it runs every variant", where=_caller(),
                              fix="give the variant another name (e.g. 'all_tiles')")

    def _check_run_fields(self) -> None:
        """``launches``, ``blocks``, ``sync``, ``platform`` and ``protocol``, checked where the
        Scenario is written (a run would refuse them later, far from this line)."""
        for field_name, what in (("launches", "launch per run"), ("blocks", "block per launch")):
            n = getattr(self, field_name)
            if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1):
                raise ConfigError(f"scenario {self.name!r}: {field_name}={n!r} is not a number of {field_name}",
                                  where=_caller(), fix=f"give {field_name} >= 1 (None or 1: one {what})")
        for field_name in ("rtol", "atol"):      # the golden comparison's tolerances
            t = getattr(self, field_name)
            if (isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating))
                    or not t >= 0 or t == float("inf")):
                raise ConfigError(f"scenario {self.name!r}: {field_name}={t!r} is not a tolerance (a finite "
                                  "number >= 0)", where=_caller(),
                                  fix=f"give {field_name} as a number, e.g. {field_name}=1e-5 (0: exact)")
        for field_name, check in (("sync", sync_mode), ("platform", get_platform), ("protocol", parse_protocol)):
            v = getattr(self, field_name)
            if v is None:
                continue
            try:
                check(v)
            except ConfigError as e:
                raise ConfigError(f"scenario {self.name!r}: {field_name}={v!r}: {e.what}", where=_caller(),
                                  fix=e.fix) from None

    @property
    def default_variant(self) -> str:
        """``'default'`` if there is one, else the first variant."""
        return "default" if "default" in self.variants else next(iter(self.variants))

    def args(self, variant: str, seed: int = 0) -> dict:
        return self.inputs(self.params(variant), seed, variant)

    def inputs(self, params: dict, seed: int = 0, variant: str | None = None) -> dict:
        """``make_args(rng, **params)``, checked: it takes these parameters and returns the
        kernel's arguments as a dict."""
        where = f"variant {variant!r} of " if variant else ""
        try:
            sig = inspect.signature(self.make_args)
            try:
                sig.bind(None)
            except TypeError:
                if not any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
                           for p in sig.parameters.values()):
                    raise ConfigError(f"scenario {self.name!r}: make_args{sig} takes no rng: a run calls "
                                      "make_args(rng, **params), a numpy Generator first (to draw the inputs "
                                      "from)", where=_def_loc(self.make_args),
                                      fix="def make_args(rng, ...): and draw random inputs from rng "
                                          "(rng.standard_normal(...)), or ignore it") from None
            sig.bind(None, **params)
        except TypeError as e:
            missing = [n for i, (n, p) in enumerate(sig.parameters.items())
                       if i > 0 and n not in params and p.default is p.empty
                       and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
            named = ", ".join(f"{n}=..." for n in missing)
            fix = (f"give make_args a default (def make_args(rng, {named})), or each variant a value "
                   f"(Scenario(..., variants={{'default': dict({named})}}))") if missing else \
                "give the variant only parameters make_args takes"
            raise ConfigError(f"{where}scenario {self.name!r} gives make_args {sorted(params)}: {e}",
                              where=_def_loc(self.make_args), fix=fix) from None
        except ValueError:
            pass                                    # no signature to check (a builtin)
        a = _call(self, "make_args", data_rng(seed), **params)
        if not isinstance(a, dict):
            raise ConfigError(f"scenario {self.name!r}: make_args returned {with_article(type(a).__name__)}, not the "
                              "dict of kernel arguments", where=_def_loc(self.make_args),
                              fix="return dict(a=..., out=..., ...): one entry per kernel parameter")
        return a

    def expected(self, args: dict, params: dict) -> dict:
        """``golden(args, **params)``, checked: a dict naming arguments of the kernel."""
        e = _call(self, "golden", args, **params)
        if not isinstance(e, dict):
            raise ConfigError(f"scenario {self.name!r}: golden returned {with_article(type(e).__name__)}, not the "
                              "dict of expected outputs", where=_def_loc(self.golden),
                              fix="return {'out': expected_array, ...}")
        bad = [k for k in e if k not in args]
        if bad:
            raise ConfigError(f"scenario {self.name!r}: golden names {', '.join(map(repr, bad))}, which "
                              f"make_args does not give (arguments: {', '.join(args)})",
                              where=_def_loc(self.golden), fix="name the output arguments the kernel writes")
        for k, v in e.items():
            kind = np.asarray(v).dtype.kind if not isinstance(v, (str, bytes, dict)) else "U"
            if kind in "USOV" and not (kind == "V" and hasattr(v, "dtype")):
                raise ConfigError(f"scenario {self.name!r}: golden's {k!r} is {with_article(type(v).__name__)}, "
                                  "not an array of numbers", where=_def_loc(self.golden),
                                  fix=f"return {{{k!r}: expected_array}} (a numpy array of the output's values)")
            # the kernel writes into the array make_args gives: an output of another shape
            # can never match, whatever the kernel does
            given = args[k]
            if isinstance(given, np.ndarray) and np.shape(v) != given.shape:
                raise ConfigError(f"scenario {self.name!r}: golden's {k!r} has shape {np.shape(v)}, but the "
                                  f"argument {k!r} make_args gives has shape {given.shape}",
                                  where=_def_loc(self.golden),
                                  fix=f"return {k!r} with the shape {given.shape} of its argument (the kernel writes "
                                      "into that array, whose shape it cannot change)")
        return e

    def params(self, variant: str) -> dict:
        if variant not in self.variants:
            raise ConfigError(f"scenario {self.name} has no variant {variant!r}",
                              fix=f"choose one of: {', '.join(self.variants)}")
        return dict(self.variants[variant])

    def prepare(self, variant: str = "default", seed: int = 0) -> "tuple[dict, dict]":
        """``(args, expected)`` of a run of ``variant`` on data seed ``seed``: the kernel's
        arguments (make_args) and the golden's expected outputs."""
        params = self.params(variant)
        args = self.inputs(params, seed, variant)
        return args, self.expected(args, params)

    def run(self, variant: str = "default", platform=None, protocol=None, seed: int = 0,
            prepared: "tuple[dict, dict] | None" = None, **run_kwargs) -> "tuple[RunResult, dict]":
        """Run one variant; returns (result, expected).  ``platform`` / ``protocol``: the
        scenario's own when not given (:func:`on_platform`).  ``prepared``: what
        :meth:`prepare` returned for this variant and seed (None: made here)."""
        platform, protocol = on_platform(self, platform, protocol)
        args, expected = self.prepare(variant, seed) if prepared is None else prepared
        if run_kwargs.get("sync") is None:
            run_kwargs["sync"] = self.sync
        if self.launches is not None:
            run_kwargs.setdefault("launches", self.launches)
        if self.blocks is not None:
            run_kwargs.setdefault("blocks", self.blocks)
        res = run(self.aic, self.aiv, args, platform=platform, protocol=protocol, **run_kwargs)
        return res, expected

    def check(self, variant: str = "default", platform=None, protocol=None, seed: int = 0,
              **run_kwargs) -> RunResult:
        """Run one variant and raise :class:`MismatchError` if it differs from the golden."""
        platform, protocol = on_platform(self, platform, protocol)
        res, expected = self.run(variant, platform, protocol, seed, **run_kwargs)
        compare_launches(res, expected, self.rtol, self.atol, f"{self.name}[{variant}]",
                         rerun=lambda: self.run(variant, platform, protocol, seed,
                                                **{**run_kwargs, "record_writes": True})[0])
        return res


def on_platform(target, platform, protocol) -> tuple:
    """(platform, protocol) a run of ``target`` takes: the ones given, else a Scenario's own,
    else A2A3 under the spec protocol."""
    own = target if isinstance(target, Scenario) else None
    return (platform or (own and own.platform) or "a2a3", protocol or (own and own.protocol) or "spec")


#: argument values a run passes to the kernels unchanged that no kernel can alter
_IMMUTABLE = (bool, int, float, complex, str, bytes, type(None), np.number, np.bool_, np.dtype, Enum, range)


def reusable_args(args: dict) -> bool:
    """Whether ``args`` (make_args' dict) can serve several runs: every value is a numpy
    array (a run copies it into GM; its kernels see only the GM copy) or an immutable value
    (ints, enums, tuples of them ...), so that a run leaves them as it found them."""
    def fixed(v) -> bool:
        return isinstance(v, _IMMUTABLE) or (type(v) in (tuple, frozenset) and all(map(fixed, v)))
    return all(isinstance(v, np.ndarray) or fixed(v) for v in args.values())


def data_rng(seed) -> np.random.Generator:
    """The input-data generator of a Scenario run (``seed``: a non-negative integer)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"data seed {seed!r} is not a non-negative integer", where="seed",
                          fix="use a seed >= 0 (e.g. --seed 0)")
    return np.random.default_rng(int(seed))


def _call(sc: "Scenario", name: str, *args, **params):
    """The scenario's ``make_args`` / ``golden`` (``name``) called; an exception it raises (not
    a ptopipe error), or a ``sys.exit()`` (which would end the program silently, with no
    report written), becomes a ConfigError at the line of that function that raised it."""
    fn = getattr(sc, name)
    try:
        return fn(*args, **params)
    except PtoPipeError:
        raise
    except (Exception, SystemExit) as e:
        code = getattr(fn, "__code__", None)
        where, tb, inner = _def_loc(fn), e.__traceback__, None
        while tb is not None:                     # the innermost frame in fn's file
            if code is not None and tb.tb_frame.f_code.co_filename == code.co_filename:
                where, inner = f"{code.co_filename}:{tb.tb_lineno}", tb.tb_frame.f_code
            tb = tb.tb_next
        call = f"{name}({'rng' if name == 'make_args' else 'args'}, **params)"
        # (a function of the file fn calls - a kernel builder whose annotation is wrong - is the
        # code to fix, not fn; a comprehension or lambda in fn is fn's own)
        callee = inner.co_name if inner is not None and inner is not code and \
            not inner.co_name.startswith("<") else None
        if isinstance(e, SystemExit):
            result = "dict of kernel arguments" if name == "make_args" else "dict of expected outputs"
            raise ConfigError(f"scenario {sc.name!r}: {name} raised {ending_call(e)}: a scenario function "
                              "cannot end the program", where=where,
                              fix=f"return the {result} from {name}; raise an exception (e.g. "
                                  "ValueError) to report a failure") from e
        fix = (f"fix {callee}() at that line: {call} calls it, before the kernel runs, with the variant's "
               "parameters" if callee else f"fix {call}: it runs before the kernel, with the variant's parameters")
        raise ConfigError(f"scenario {sc.name!r}: {name} raised {type(e).__name__}: {e}{near_name(e)}", where=where,
                          fix=fix) from e


def _def_loc(fn) -> str | None:
    """file:line of the def of a scenario function."""
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else None


def _caller() -> str | None:
    """file:line of the first frame outside this module (the user's ``Scenario(...)``)."""
    f = inspect.currentframe()
    while f is not None and (f.f_code.co_filename in (__file__, "<string>")):
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else None
