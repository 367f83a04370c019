"""``.pto`` files on the command line: ``ptopipe run kernel.pto --input a=a.npy ...
[--output out=out.npy]``, ``ptopipe check kernel.pto [--schedules N ...]`` and
``ptopipe check --static kernel.pto``.

The file is read and verified statically by :mod:`ptopipe.codegen.pto_load` (the reader, the
lanes ptoas gives its pipes, the static passes and the checks PTO-AS adds), exactly as
``ptopipe.run_pto`` does; every error points at the ``.pto`` line:col.  This module parses
the ``--input`` / ``--output`` / ``--func`` options and prints.  ``run`` simulates the program
with the given inputs (a missing ``gm_slot_buffer*`` parameter is zero-filled) and writes
``--output`` arrays atomically.  ``check`` wraps the program in a
:class:`~ptopipe.Scenario` (missing inputs zero-filled, no golden: the checkers judge) and
explores schedules like ``check`` of a ``.py`` file; ``--static`` stops after the passes.
"""
from __future__ import annotations

import os
import re
import sys

import numpy as np

from ..codegen.pto_exec.types import check_input_fits
from ..errors import ConfigError, ParseError
from ..ir.types import TensorType, np_dtype
from . import bounds
from .common import launch_kwargs, read_npy, sync_kwargs, write_outputs


def _entry_params(op):
    fs = list(op.regions[0].blocks[0])
    from ..ir.vocab import FunctionKind
    groups = [f for f in fs if f.kind is FunctionKind.Group]
    f = groups[0] if groups else fs[0]
    seen, out = set(), []
    for g in ([f] if groups else fs):
        for a in g.regions[0].blocks[0].args:
            if a.name not in seen:
                seen.add(a.name)
                out.append(a)
    return out


#: a number on the command line (``--input n=5``, ``-3``, ``1.5``, ``1e-3``)
_NUMBER = re.compile(r"[+-]?(\d+|(\d+\.\d*|\.\d+)([eE][+-]?\d+)?|\d+[eE][+-]?\d+)")


def literal(text: str):
    """``text`` as an int or a float if it is a decimal number, else None (a file name)."""
    if not _NUMBER.fullmatch(text):
        return None
    try:
        return int(text)
    except ValueError:
        return float(text)


def load_inputs(pairs, literals: set | None = None) -> dict:
    """``name=file.npy`` / ``name=NUMBER`` pairs -> ``{name: array}`` as saved, a number as a 0-d
    array (int64 or float64; the parameter's type decides its value's type), unchecked; the
    names given a number are added to ``literals``."""
    given = {}
    for p in pairs or []:
        name, sep, file = p.partition("=")
        if not sep or not name or not file:
            raise ConfigError(f"--input {p!r} is not NAME=FILE.npy or NAME=NUMBER", where="option --input",
                              fix="e.g. --input a=a.npy, or --input n=5 for a scalar parameter")
        num = literal(file)
        if num is None:
            given[name] = read_npy(file, "--input")
            continue
        arr = np.array(num)
        if arr.dtype == object:
            raise ConfigError(f"--input {name}={file}: the number does not fit 64 bits", where="option --input",
                              fix="give a scalar parameter a value its type holds")
        given[name] = arr
        if literals is not None:
            literals.add(name)
    return given


def refuse_number_for_tensor(prog, funcs, literals: set) -> None:
    """A number given (``--input NAME=NUMBER``) for a pointer / memref parameter: a ConfigError."""
    from ..codegen.pto_exec.types import ScalarT
    for f in funcs:
        for part in f.split("+"):
            for name, ty, _tok in prog.funcs[part].params:
                if name[1:] in literals and not isinstance(ty, ScalarT):
                    raise ConfigError(f"--input {name[1:]}: a number for a tensor parameter",
                                      where="option --input",
                                      fix=f"give an array: --input {name[1:]}=FILE.npy (numpy.save)")


def scalar_inputs(pairs) -> dict:
    """The integer scalars among ``--input`` pairs: what VerifyPipes may take a trip count to be."""
    return {k: v.item() for k, v in load_inputs(pairs).items() if v.ndim == 0 and v.dtype.kind in "iu"}


def make_inputs(op, pairs, zero_fill: bool, fill=()) -> dict:
    """``name=file.npy`` pairs -> the run's arguments, checked against the parameters; a
    tensor without one is zeros when ``zero_fill`` or its name is in ``fill`` (an output)."""
    given = load_inputs(pairs)
    args = {}
    params = _entry_params(op)
    names = {a.name for a in params}
    for k in given:
        if k not in names:
            raise ConfigError(f"--input {k}: the kernel has no parameter {k!r}", where="option --input",
                              fix=f"parameters: {', '.join(sorted(names))}")
    for a in params:
        t = a.type
        if a.name in given:
            v = given[a.name]
            if isinstance(t, TensorType):
                want = np_dtype(t.dtype)
                if want.kind == "V" and v.dtype.kind in "Vu" and v.dtype.itemsize == want.itemsize:
                    v = v.view(want)        # bf16 / float8 saved as raw bits (numpy has no such dtype)
                if tuple(v.shape) != tuple(t.shape) or v.dtype != want:
                    raise ConfigError(f"--input {a.name}: {v.dtype}{list(v.shape)} but the kernel takes "
                                      f"{t.dtype}{list(t.shape)}", where="option --input",
                                      fix="save the array with that shape and dtype (a bf16 / float8 "
                                          "array as its bits: np.save(f, x.view(np.uint16 or np.uint8)))")
                args[a.name] = np.ascontiguousarray(v)
            else:
                args[a.name] = _scalar(a.name, t, v)
        elif isinstance(t, TensorType) and (zero_fill or a.name in fill
                                            or a.name.startswith("gm_slot_buffer")):
            args[a.name] = np.zeros(t.shape, np_dtype(t.dtype))
        else:
            raise ConfigError(f"no input for parameter {a.name!r}", where="option --input",
                              fix=f"add --input {a.name}=FILE.npy")
    return args


def _scalar(name: str, t, v):
    """A 0-d ``--input`` array as the value of a scalar parameter of type ``t``: an index or
    integer parameter takes an integer (a 2.5 trip count would run 2 iterations)."""
    dt = getattr(t, "dtype", None)
    if v.ndim != 0:
        raise ConfigError(f"--input {name}: a {list(v.shape)} array for a scalar parameter",
                          where="option --input", fix="save a 0-d array: np.save(f, np.array(value))")
    if dt == "index" or (dt or "").startswith(("i", "u")):
        if v.dtype.kind not in "iu":
            raise ConfigError(f"--input {name}: a {v.dtype} value {v.item()!r} for the {dt} parameter "
                              f"{name!r}", where="option --input",
                              fix=f"give an integer: --input {name}=3 (or a .npy of one)")
        info = np.iinfo(np.int64 if dt == "index" else np_dtype(dt))
        check_input_fits(name, int(v.item()), dt, int(info.min), int(info.max))
    elif v.dtype.kind not in "iuf":
        raise ConfigError(f"--input {name}: a {v.dtype} value for the {dt} parameter {name!r}",
                          where="option --input", fix=f"give a number: --input {name}=1.5 (or a .npy of one)")
    return v.item()


def _target(args, path):
    """(platform name or None: the file's pto.target_arch, protocol) of a command on a .pto file."""
    return getattr(args, "platform", None), getattr(args, "protocol", None) or "spec"


def static_front(args, platform, protocol):
    """:func:`static_findings` of ``args.file`` with the integer ``--input`` scalars."""
    from ..codegen.pto_load import static_findings
    return static_findings(args.file, platform, protocol, scalar_inputs(getattr(args, "input", None)))


def _launches(args) -> tuple:
    """``(launches, protocol)``: the executor's kernels and arguments for ``args.file`` with the
    ``--input`` arrays, one per function run - ``--func``'s, else the entry, else each
    function nothing calls (several only without ``--output``)."""
    from ..codegen.pto_exec import prepare, read_program, read_text, top_functions
    from ..codegen.pto_load import skipped_note
    from ..codegen.pto_exec.program import choose_top
    platform, protocol = _target(args, args.file)
    seed = getattr(args, "data_seed", None)
    func = getattr(args, "pto_func", None)
    prog = read_program(read_text(args.file), args.file)
    funcs = [choose_top(prog, func)] if func is not None else top_functions(prog)
    if len(funcs) > 1 and getattr(args, "output", None):
        raise ConfigError(f"{args.file} has {len(funcs)} top-level functions ({', '.join(funcs)}) and no "
                          "pto.entry: --output needs one", where="option --output",
                          fix="choose the function with --func NAME")
    literals = set()
    inputs = load_inputs(getattr(args, "input", None), literals)
    refuse_number_for_tensor(prog, funcs, literals)
    params = {f: {p[0][1:] for part in f.split("+") for p in prog.funcs[part].params} for f in funcs}
    known = set().union(*params.values()) if params else set()
    for k in inputs:
        if k not in known:
            raise ConfigError(f"--input {k}: the kernel has no parameter {k!r}", where="option --input",
                              fix=f"parameters: {', '.join(sorted(known)) or 'none'}")
    out = []
    for f in funcs:
        mine = {k: v for k, v in inputs.items() if k in params[f]}
        out.append(prepare(args.file, inputs=mine, platform=platform, func=f,
                           data_seed=(seed if seed is not None else getattr(args, "seed", None)) or 0))
    # the static verifier after the inputs are checked: a trip count its parameter cannot
    # hold is refused before VerifyPipes counts that many iterations
    warnings, skipped = static_front(args, platform, protocol)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    for pl in out if skipped else ():
        pl.notes.insert(0, skipped_note(skipped))
    return out, protocol


def pto_scenarios(args) -> list:
    """The .pto file of ``args`` as ``(Scenario, run warnings)`` pairs (one per function run, a
    'default' variant each) for ``check``: the executor's kernels, the ``--input`` arrays,
    seeded random data for the others; the list the runs' executors add their warnings to
    (reads before writes: what the run finds and goes on after)."""
    from ..isa.scenario import Scenario
    launches, protocol = _launches(args)
    out = []
    for pl in launches:
        for n in pl.notes:
            print(f"note: {n}", file=sys.stderr)

        def make_args(rng, pl=pl):
            return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in pl.args.items()}
        name = os.path.basename(args.file) + ("" if len(launches) == 1 else f"@{pl.func}")
        out.append((Scenario(name, pl.aic, pl.aiv, make_args, lambda a: {}, platform=pl.platform,
                             protocol=protocol), _with_load_warnings(pl)))
    return out


def _with_load_warnings(pl) -> list:
    """``pl.run_warnings`` (the list its runs add to) with the warnings of reading the file
    first (tiles at explicit addresses that overlap): check reports them with the run's."""
    pl.run_warnings[:0] = [w for w in pl.warnings if w not in pl.run_warnings]
    return pl.run_warnings


def static_pto(args) -> int:
    """``check --static kernel.pto``: the reader and the static passes, nothing run."""
    from ..codegen.pto_load import load_pto
    from ..codegen.pto_exec import read_text
    from ..codegen.pto_syntax import INT_DTYPES, run_line_platform
    from ..errors import CompileError
    from ..ir.types import ScalarType
    from ..passes.static_check import NOT_PROVEN as NOT_PROVEN_STATUS, status_of
    from ..passes.verify_pipes import not_proven
    from .common import scalar_ranges
    platform, protocol = _target(args, args.file)
    platform = platform or run_line_platform(read_text(args.file))
    scalars = scalar_inputs(getattr(args, "input", None))
    ranges = scalar_ranges(args)
    name = os.path.basename(args.file)
    # the --input values are the launch's (as `run` takes them): verified exactly; the other
    # integer scalars for every value (or within --range)
    try:
        op, warnings, plat = load_pto(args.file, platform, protocol, scalars=scalars, ranges=ranges)
    except ParseError as e:
        return _static_unexpressed(args, e, platform, protocol)
    except CompileError as e:
        from ..codegen.pto_exec import read_program, read_text
        arch = read_program(read_text(args.file), args.file).arch or ""
        return _static_verdict(args, name, platform or {"a3": "a2a3"}.get(arch, arch) or "a2a3", protocol,
                               "failed", [], "the static checks found an error without running", [e])
    state = status_of([], warnings)
    if not any(o.name.endswith("initialize_pipe") for o in op.walk()):
        return _static_verdict(args, name, plat, protocol, "nothing to verify", warnings,
                               "no cross-core pipes, nothing to verify statically (`ptopipe check` "
                               "runs it with every checker)")
    given = f" with {', '.join(f'{k}={v}' for k, v in scalars.items())} (--input)" if scalars else ""
    if state == NOT_PROVEN_STATUS:
        return _static_verdict(args, name, plat, protocol, "not proven", warnings,
                               f"not proven for all values{given}: {'; '.join(not_proven(warnings))}")
    params = sorted({a.name for f in op.body for a in f.regions[0].blocks[0].args
                     if isinstance(a.type, ScalarType) and a.type.dtype in INT_DTYPES} - set(scalars))
    which = f" for every value of {', '.join(params)}" if params else ""
    which += "".join(f", {k} in {lo}..{'' if hi is None else hi}" for k, (lo, hi) in ranges.items())
    return _static_verdict(args, name, plat, protocol, "verified", warnings,
                           f"verified statically{which}{given} (VerifyPipes, GM bounds, Validate, ring and "
                           "address checks)")


def _static_unexpressed(args, why: ParseError, platform, protocol) -> int:
    """``check --static`` of a file the static verifier's value IR cannot express (``why``):
    a file without cross-core pipes has nothing to prove (PASS, saying so); one with pipes is
    NOT VERIFIED (exit 1) - never a PASS for what was not proved."""
    from ..codegen.pto_exec import has_pipes, read_program, read_text
    prog = read_program(read_text(args.file), args.file)    # unreadable: the executor's ParseError
    name = os.path.basename(args.file)
    plat = platform or {"a3": "a2a3"}.get(prog.arch or "", prog.arch) or "a2a3"
    if not has_pipes(prog, list(prog.funcs)):
        return _static_verdict(args, name, plat, protocol, "nothing to verify", [],
                               "no cross-core pipes, nothing to verify statically (`ptopipe check` "
                               "runs it with every checker)")
    return _static_verdict(args, name, plat, protocol, "not verified", [],
                           f"the static verifier cannot express this file ({why.what}, at {why.where}); "
                           f"`ptopipe check {args.file}` runs it with every checker")


_VERDICT = {"verified": ("PASS", "1;32", 0), "nothing to verify": ("PASS", "1;32", 0),
            "not verified": ("NOT VERIFIED", "1;33", 1), "not proven": ("NOT PROVEN", "1;33", 1),
            "failed": ("FAIL", "1;31", 1)}


def _static_verdict(args, name, plat, protocol, status, warnings, text, found=()) -> int:
    """Print ``check --static``'s verdict on a ``.pto`` file (a line, or ``--json``'s report);
    ``found``: the findings of a "failed" one."""
    from .check import print_json
    from .errors import color, report_exception
    from ..passes.verify_pipes import NOT_PROVEN, not_proven
    word, paint, rc = _VERDICT[status]
    reasons = not_proven(warnings)
    if getattr(args, "json", False):
        print_json(args, [{"program": name, "platform": str(plat), "protocol": protocol, "status": status,
                           "findings": [e.to_dict() for e in found], "warnings": list(warnings),
                           "not_proven": reasons, "detail": text}])
        return rc
    for w in warnings:
        if status != "not proven" or not w.startswith(NOT_PROVEN):
            print(f"warning: {w}", file=sys.stderr)
    print(f"{color(word, paint, sys.stdout)} {name} on {plat} ({protocol}): {text}", flush=True)
    for e in found:
        report_exception(e)
    return rc


def run_pto(args) -> int:
    """``run kernel.pto``: simulate with the given inputs (seeded random data for the others,
    said in a note), write the ``--output`` arrays atomically."""
    variant = getattr(args, "variant", None)
    if variant not in (None, "default", "all"):
        raise ConfigError(f"--variant {variant!r}: a .pto file has one variant, 'default'",
                          where="option --variant", fix="drop --variant")
    launches, protocol = _launches(args)
    return max([_run_one(args, pl, protocol) for pl in launches], default=0)


def _run_one(args, pl, protocol) -> int:
    from ..isa import run as run_kernels
    from .errors import color
    reports = getattr(args, "report", None) or getattr(args, "png", None)
    res = run_kernels(aic=pl.aic, aiv=pl.aiv, args=pl.args, platform=pl.platform, protocol=protocol,
                      **({"trace": True} if reports else {}), **bounds.run_kwargs(args),
                      **sync_kwargs(args), **launch_kwargs(args), causal=getattr(args, "causal", False))
    if reports:
        from .trace import write_reports
        write_reports(res, args, os.path.basename(args.file), "default")
    outs = write_outputs(res.outputs, getattr(args, "output", None))
    warned = list(dict.fromkeys(list(pl.warnings) + list(pl.run_warnings)))
    for w in warned:
        print(f"warning: {w}", file=sys.stderr)
    quiet = getattr(args, "quiet", False)          # as for a .py kernel: the PASS line only
    for n in [] if quiet else pl.notes:
        print(f"note: {n}")
    failed = bool(warned) and getattr(args, "werror", False)
    verdict = color("FAIL", "1;31", sys.stdout) if failed else color("PASS", "1;32", sys.stdout)
    print(f"{verdict} {os.path.basename(args.file)} @{pl.func} on {pl.platform} "
          f"({protocol}): ran" + (f", wrote {', '.join(outs)}" if outs else "")
          + (f"; {len(warned)} warning(s), errors under --werror" if failed else ""))
    if not quiet:
        print("  " + res.summary.format().replace("\n", "\n  "))
    return int(failed)
