"""``.pto`` files on the command line: ``ptopipe run kernel.pto --input a=a.npy ...
[--output out=out.npy]``, ``ptopipe check kernel.pto [--schedules N ...]`` and
``ptopipe check --static kernel.pto``.

:func:`load_pto` reads the file (:func:`ptopipe.codegen.read_pto`), runs the static passes
a hand-written pair gets (VerifyPipes, ResolvePeerBuffers, AllocateFlags, LowerPlatform,
Validate) and the one check PTO-AS adds: a reserve_buffer overlapping a tile placed with
``pto.alloc_tile addr = ...``.  Every error points at the ``.pto`` line:col.  ``run``
simulates the program with the given inputs (a missing ``gm_slot_buffer*`` parameter is
zero-filled) and writes ``--output`` arrays atomically.  ``check`` wraps the program in a
:class:`~ptopipe.Scenario` (missing inputs zero-filled, no golden: the checkers judge) and
explores schedules like ``check`` of a ``.py`` file; ``--static`` stops after the passes.
"""
from __future__ import annotations

import io
import os
import re
import sys

import numpy as np

from ..codegen.pto_syntax import PTO_OP
from ..errors import CompileError, ConfigError, ParseError, PtoPipeError
from ..ir import to_tree
from ..ir.types import TensorType, np_dtype
from ..ir.opdefs import INITIALIZE_PIPE, CallOp, ReserveBufferOp, TFree, TPop, TPush, call_names
from ..report._io import write_atomic
from . import bounds
from .common import launch_kwargs, read_npy, sync_kwargs

#: what a .pto program goes through before it runs (it is already split into kernels)
PTO_PASSES = ("verify-pipes", "resolve-peers", "allocate-flags", "lower-platform", "validate")
_MEM = {"Vec": "UB", "Mat": "L1"}


def load_pto(path: str, platform: str | None = None, protocol: str = "spec", text: str | None = None,
             scalars: dict | None = None):
    """``path`` through the reader and the static passes: ``(op program, tree, warnings, platform)``;
    ``scalars``: scalar parameter values VerifyPipes verifies with (the run's ``--input``)."""
    from ..codegen import read_pto
    from ..passes import PassManager
    from ..passes.manager import PassContext
    if text is None:
        if not os.path.exists(path):
            raise ConfigError(f"no such file: {path}", fix="give the path of a .pto file")
        with open(path, "rb") as f:
            raw = f.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            line = raw.count(b"\n", 0, e.start) + 1
            col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
            raise ParseError(f"byte {raw[e.start]:#04x} is not UTF-8 text", where=f"{path}:{line}:{col}",
                             fix="a .pto file is UTF-8 MLIR text") from None
    addrs = []
    try:
        op = read_pto(text, path, platform, addrs=addrs)
    except RecursionError:
        raise ParseError("regions nest deeper than the reader follows", where=path,
                         fix="nest fewer scf.for / scf.if levels (a few hundred are fine)") from None
    plat = platform or op.platform or "a2a3"
    ctx = PassContext(platform=plat, protocol=protocol, scalars=dict(scalars or {}))
    one_lane_nosplit(op, ctx)
    try:
        op = PassManager(list(PTO_PASSES)).run(op, ctx)
    except PtoPipeError as e:
        raise in_pto_words(e) from None
    check_explicit_addrs(op, addrs)
    check_entry_launches(op)
    return op, to_tree(op), [pto_words(w) for w in ctx.warnings], plat


def _pto_word(m) -> str:
    name = m.group(1)
    if name in PTO_OP:
        return PTO_OP[name]
    return f"pto.{name}" if name in _PTO_SAME else m.group(0)


#: DSL ops whose PTO-AS spelling is ``pto.<name>`` too
_PTO_SAME = call_names(INITIALIZE_PIPE + (ReserveBufferOp,))


def pto_words(text: str | None) -> str | None:
    """A message of the passes (worded for the DSL: ``pl.add``, ``pl.aiv_initialize_pipe``)
    in a ``.pto`` user's words (``pto.tadd``, ``pto.aiv_initialize_pipe``)."""
    return re.sub(r"\bpl\.(\w+)", _pto_word, text) if text else text


def in_pto_words(e: PtoPipeError) -> PtoPipeError:
    e.what, e.fix, e.details = pto_words(e.what), pto_words(e.fix), pto_words(e.details)
    e.args = (e.render(),)
    return e


def one_lane_nosplit(op, ctx) -> None:
    """Where the protocol model gives a TILE_NO_SPLIT transfer one lane (pto-isa on A5), the
    pipes of a ``nosplit`` pair get ``lanes=1`` (AIV0 their only peer), as ExpandMixedKernel
    gives a compiled no-split function's; on A5 so do the pipes whose ops all say ``split = 0``
    (ptoas runs them on AIV0 only, whatever the protocol model)."""
    from ..arch.vocab import TileSplitAxis
    from ..codegen.pto_writer import nosplit_functions
    from ..ir.nodes import FunctionKind
    from ..passes.expand_mixed import one_lane_no_split
    funcs = list(op.body)
    a5 = ctx.platform == "a5"
    pair = nosplit_functions(op) if one_lane_no_split(ctx) or a5 else set()   # ptoas: AIV0 only on A5
    if a5:
        whole = whole_tile_pairs(funcs)
        pair |= whole
        for f in funcs:             # the Vector kernel runs on AIV0 only (AIV1 skips its body)
            if f.sym_name in whole and f.kind is FunctionKind.AIV:
                f.split = TileSplitAxis.TILE_NO_SPLIT
    for f in funcs:
        if f.sym_name in pair:
            for o in f.body:
                if o.is_a(*INITIALIZE_PIPE) and o.lanes is None:
                    o.lanes = 1


def whole_tile_pairs(funcs) -> set:
    """The Vector kernels whose every TPUSH / TPOP / TFREE says ``split = 0`` (without a
    ``nosplit`` init: ptoas lowers such ops on A5 to one lane, under ``get_subblockid() == 0``)
    and the Cube kernels they share a pipe with."""
    from ..codegen.pto_writer import with_peers
    from ..ir.nodes import FunctionKind
    aiv = set()
    for f in funcs:
        if f.kind is not FunctionKind.AIV or f.split is not None:
            continue                # a nosplit init's kernel: the protocol model decides its lanes
        splits = [o.split for o in f.walk() if o.is_a(TPush, TPop, TFree)]
        if splits and all(s in (None, 0) for s in splits) and any(s == 0 for s in splits):
            aiv.add(f.sym_name)
    return with_peers(funcs, aiv)


def check_entry_launches(op) -> None:
    """An entry launches each kernel of a pipe once: a kernel with a pipe init that the entry
    never calls leaves its peer waiting forever, one called twice initialises its pipe twice
    (ptoas accepts both)."""
    from ..ir.nodes import FunctionKind
    funcs = list(op.body)
    entries = [f for f in funcs if f.kind is FunctionKind.Group]
    if len(entries) != 1:
        return
    calls = {}
    for o in entries[0].walk():
        if o.is_a(CallOp):
            calls.setdefault(o.callee, []).append(o)
    piped = [f for f in funcs if f.kind is not FunctionKind.Group
             and any(o.is_a(*INITIALIZE_PIPE) for o in f.walk())]
    if not any(f.sym_name in calls for f in piped):
        return                          # the entry launches none of them: nothing to compare
    entry = entries[0].sym_name
    for f in piped:
        name = f.sym_name
        sites = calls.get(name, [])
        if not sites:
            raise CompileError(f"@{name} initialises a cross-core pipe but the entry @{entry} never "
                               "calls it: its peer waits on the pipe forever", where=_loc(f),
                               fix=f"call @{name} from @{entry} (func.call), once")
        if len(sites) > 1:
            raise CompileError(f"the entry @{entry} calls @{name} {len(sites)} times: each call "
                               "initialises its pipe again and pushes / pops its tiles again",
                               where=_loc(sites[1]), details=f"first call at {_loc(sites[0])}",
                               fix=f"call @{name} once (loop inside the kernel instead)")


def _loc(op) -> str | None:
    return str(op.loc) if op.loc else None


def check_explicit_addrs(op, addrs) -> None:
    """A reserve_buffer's [base, base + size) overlapping a tile ``pto.alloc_tile`` placed
    at a fixed address in the same memory of the same kernel (ptoas accepts it)."""
    for f in op.body:
        name = f.sym_name
        for r in f.body:
            if not r.is_a(ReserveBufferOp):
                continue
            lo, hi, space_r = r.base, r.base + r.size, r.memory_space
            for fn, addr, nbytes, space, loc in addrs:
                if fn == name and _MEM.get(space.value) == space_r and addr < hi and lo < addr + nbytes:
                    raise CompileError(
                        f"reserve_buffer {r.buffer_name!r} [{lo}, {hi}) overlaps the tile placed at "
                        f"addr {addr} ({nbytes} bytes, [{addr}, {addr + nbytes})) in {space_r}",
                        where=loc, fix="move the tile (alloc_tile addr) or the ring (reserve_buffer base) "
                                       "so the two ranges are disjoint; ptoas does not check this")


def _entry_params(op):
    fs = list(op.regions[0].blocks[0])
    from ..ir.nodes import FunctionKind
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
        if not info.min <= v.item() <= info.max:
            raise ConfigError(f"--input {name}: {v.item()} does not fit the {dt} parameter {name!r} "
                              f"({info.min}..{info.max})", where="option --input",
                              fix=f"give a value in {info.min}..{info.max}")
    elif v.dtype.kind not in "iuf":
        raise ConfigError(f"--input {name}: a {v.dtype} value for the {dt} parameter {name!r}",
                          where="option --input", fix=f"give a number: --input {name}=1.5 (or a .npy of one)")
    return v.item()


def _target(args, path):
    """(platform name or None: the file's pto.target_arch, protocol) of a command on a .pto file."""
    return getattr(args, "platform", None), getattr(args, "protocol", None) or "spec"


def static_front(args, platform, protocol):
    """:func:`static_findings` of ``args.file`` with the integer ``--input`` scalars."""
    return static_findings(args.file, platform, protocol, scalar_inputs(getattr(args, "input", None)))


def static_findings(path: str, platform, protocol, scalars: dict | None = None,
                    text: str | None = None) -> tuple:
    """The static passes in front of a run: ``(warnings, None)`` when the value IR reads the
    file (a finding of the passes is raised), ``([], reason)`` when it cannot express the file
    (the run then has the executor's checks only, and says so)."""
    from ..codegen.pto_exec import read_program, read_text
    from ..codegen.pto_syntax import run_line_platform
    text = text if text is not None else read_text(path)
    platform = platform or run_line_platform(text)
    try:
        _, _, warnings, _ = load_pto(path, platform, protocol, text=text, scalars=scalars)
    except ParseError as e:
        read_program(text, path)        # the executor's words
        return [], e.what
    return warnings, None


def _launches(args) -> tuple:
    """``(launches, protocol)``: the executor's kernels and arguments for ``args.file`` with the
    ``--input`` arrays, one per function run - ``--func``'s, else the entry, else each
    function nothing calls (several only without ``--output``)."""
    from ..codegen.pto_exec import prepare, read_program, read_text, top_functions
    from ..codegen.pto_exec.program import choose_top
    platform, protocol = _target(args, args.file)
    warnings, skipped = static_front(args, platform, protocol)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
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
        pl = prepare(args.file, inputs=mine, platform=platform, func=f,
                     data_seed=(seed if seed is not None else getattr(args, "seed", None)) or 0)
        for w in pl.warnings:
            print(f"warning: {w}", file=sys.stderr)
        if skipped:
            pl.notes.insert(0, f"static pipe verification skipped (the value IR cannot express this "
                               f"file: {skipped}); the run's checkers still apply")
        out.append(pl)
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
                             protocol=protocol), pl.run_warnings))
    return out


def static_pto(args) -> int:
    """``check --static kernel.pto``: the reader and the static passes, nothing run."""
    from .errors import color
    from ..codegen.pto_exec import read_text
    from ..codegen.pto_syntax import run_line_platform
    platform, protocol = _target(args, args.file)
    platform = platform or run_line_platform(read_text(args.file))
    scalars = scalar_inputs(getattr(args, "input", None))
    try:
        op, _, warnings, plat = load_pto(args.file, platform, protocol, scalars=scalars)
    except ParseError as e:
        return _static_unexpressed(args, e, platform, protocol)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    if not any(o.name.endswith("initialize_pipe") for o in op.walk()):
        print(f"{color('PASS', '1;32', sys.stdout)} {os.path.basename(args.file)} on {plat} ({protocol}): "
              "no cross-core pipes, nothing to verify statically (`ptopipe check` runs it with every "
              "checker)")
        return 0
    skipped = any("skipped" in w or "not fully verified" in w for w in warnings)
    given = f" with {', '.join(f'{k}={v}' for k, v in scalars.items())} (--input)" if scalars else ""
    print(f"{color('PASS', '1;32', sys.stdout)} {os.path.basename(args.file)} on {plat} ({protocol}): "
          f"verified statically{given} (VerifyPipes, Validate, ring and address checks)"
          + ("; some checks skipped (see the warnings; --input NAME=n.npy gives a trip count): "
             "`ptopipe check` runs it" if skipped else ""))
    return 0


def _static_unexpressed(args, why: ParseError, platform, protocol) -> int:
    """``check --static`` of a file the static verifier's value IR cannot express (``why``):
    a file without cross-core pipes has nothing to prove (PASS, saying so); one with pipes is
    NOT VERIFIED (exit 1) - never a PASS for what was not proved."""
    from ..codegen.pto_exec import has_pipes, read_program, read_text
    from .errors import color
    prog = read_program(read_text(args.file), args.file)    # unreadable: the executor's ParseError
    name = os.path.basename(args.file)
    plat = platform or {"a3": "a2a3"}.get(prog.arch or "", prog.arch) or "a2a3"
    if not has_pipes(prog, list(prog.funcs)):
        print(f"{color('PASS', '1;32', sys.stdout)} {name} on {plat} ({protocol}): no cross-core pipes, "
              "nothing to verify statically (`ptopipe check` runs it with every checker)")
        return 0
    print(f"{color('NOT VERIFIED', '1;33', sys.stdout)} {name} on {plat} ({protocol}): the static verifier "
          f"cannot express this file ({why.what}, at {why.where}); `ptopipe check {args.file}` runs it "
          "with every checker")
    return 1


def run_pto(args) -> int:
    """``run kernel.pto``: simulate with the given inputs (seeded random data for the others,
    said in a note), write the ``--output`` arrays atomically."""
    variant = getattr(args, "variant", None)
    if variant not in (None, "default", "all"):
        raise ConfigError(f"--variant {variant!r}: a .pto file has one variant, 'default'",
                          where="option --variant", fix="drop --variant")
    launches, protocol = _launches(args)
    for pl in launches:
        _run_one(args, pl, protocol)
    return 0


def _run_one(args, pl, protocol) -> None:
    from ..isa import run as run_kernels
    from .errors import color
    reports = getattr(args, "report", None) or getattr(args, "png", None)
    res = run_kernels(aic=pl.aic, aiv=pl.aiv, args=pl.args, platform=pl.platform, protocol=protocol,
                      **({"trace": True} if reports else {}), **bounds.run_kwargs(args),
                      **sync_kwargs(args), **launch_kwargs(args), causal=getattr(args, "causal", False))
    if reports:
        from .trace import write_reports
        write_reports(res, args, os.path.basename(args.file), "default")
    outs = {}
    for p in getattr(args, "output", None) or []:
        name, sep, file = p.partition("=")
        if not sep or name not in res.outputs:
            raise ConfigError(f"--output {p!r}: expected NAME=FILE.npy with NAME a tensor parameter",
                              where="option --output", fix=f"names: {', '.join(sorted(res.outputs))}")
        arr = res.outputs[name]
        if arr.dtype.kind == "V":                   # bf16 / float8: saved as its raw bits
            arr = arr.view({1: np.uint8, 2: np.uint16}[arr.dtype.itemsize])
        outs[file] = arr
    for file, arr in outs.items():
        buf = io.BytesIO()
        np.save(buf, arr, allow_pickle=False)
        write_atomic(file, buf.getvalue())
    for w in dict.fromkeys(pl.run_warnings):
        print(f"warning: {w}", file=sys.stderr)
    quiet = getattr(args, "quiet", False)          # as for a .py kernel: the PASS line only
    for n in [] if quiet else pl.notes:
        print(f"note: {n}")
    print(f"{color('PASS', '1;32', sys.stdout)} {os.path.basename(args.file)} @{pl.func} on {pl.platform} "
          f"({protocol}): ran" + (f", wrote {', '.join(outs)}" if outs else ""))
    if not quiet:
        print("  " + res.summary.format().replace("\n", "\n  "))
