"""``.pto`` kernels as commands take them: the ``--input`` values (``.npy`` files and numbers,
read once by the command: :func:`read_inputs`) checked against a kernel's parameters, the
launches of its functions with those inputs, the kernel as Scenarios for ``check``, and the
verdict of ``check --static`` on it.

The file is read and verified statically by :mod:`ptopipe.codegen.pto_load` (the reader, the
lanes ptoas gives its pipes, the static passes and the checks PTO-AS adds), exactly as
``ptopipe.run_pto`` does; every error points at the ``.pto`` line:col.  A missing
``gm_slot_buffer*`` parameter is zero-filled; ``check`` runs a kernel with no golden (the
checkers judge)."""
from __future__ import annotations

import codecs
import hashlib
import io
import os
import re
import stat
import sys
from dataclasses import dataclass, field

import numpy as np

from ..arch.platform import platform_name
from ..codegen.pto_exec.types import check_input_fits
from ..errors import INPUT, RANGE, ConfigError, ParseError, refuse_unknown_parameters
from ..ir.types import TensorType, int_range, np_dtype
from ..errors import with_article


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


#: MLIR's i1 constants, as a ``--input`` value (``--input cond=true``): 1 and 0
_BOOLS = {"true": 1, "false": 0}


def literal(text: str):
    """``text`` as an int or a float if it is a decimal number (``true`` / ``false``, MLIR's
    spelling of an i1, as 1 / 0), else None (a file name)."""
    if text in _BOOLS:
        return _BOOLS[text]
    if not _NUMBER.fullmatch(text):
        return None
    try:
        return int(text)
    except ValueError:
        return float(text)


#: how a bf16 / float8 array is given: numpy has no such dtype, so ``np.save`` writes an
#: ml_dtypes array as void (``|V2``) and np.load reads it back so; either that or its bits load
BITS_FIX = ("a bf16 / float8 array: np.save(f, x) of an ml_dtypes array, or of its bits "
            "x.view(np.uint16) / x.view(np.uint8)")


def as_declared(v: np.ndarray, want) -> np.ndarray:
    """``v`` as the bf16 / float8 elements a parameter declares (``want``, an ml_dtypes dtype)
    when the file holds them as numpy can save them: void (``|V2`` from ``np.save`` of an
    ml_dtypes array) or unsigned bits of the same width; any other array as it is."""
    want = np.dtype(want)
    if want.kind == "V" and v.dtype.kind in "Vu" and v.dtype.itemsize == want.itemsize and not v.dtype.fields:
        return v.view(want)
    return v


@dataclass(frozen=True)
class Inputs:
    """A command's ``--input`` values, each file read once (a pipe, ``--input x=/dev/stdin``,
    gives its bytes once, and the command uses them more than once: the static check's
    scalars, the run, a rerun, a worker's schedules): ``arrays`` name -> array as saved, a
    number as a 0-d array (int64 or float64; the parameter's type decides its value's type),
    and the names given as numbers (``numbers``).  Equal and hashed by ``digest``, of the
    names and arrays: a worker process that loads a kernel from them keeps one load per
    content (:func:`ptopipe.driver.spread.scenario_of`)."""
    arrays: dict = field(default_factory=dict, compare=False)
    numbers: frozenset = frozenset()
    digest: str = ""

    def scalars(self) -> dict:
        """The integer scalars: what VerifyPipes may take a trip count to be."""
        return {k: v.item() for k, v in self.arrays.items() if v.ndim == 0 and v.dtype.kind in "iu"}


def as_inputs(inputs) -> Inputs:
    """``inputs`` as :class:`Inputs`: read from ``NAME=FILE.npy|NAME=NUMBER`` pairs
    (:func:`read_inputs`), or as they are (read by the command already); None: none given."""
    return inputs if isinstance(inputs, Inputs) else read_inputs(inputs)


#: the ``--input`` file that is the standard input
STDIN = "-"


def read_inputs(pairs) -> Inputs:
    """``name=file.npy`` / ``name=NUMBER`` pairs as :class:`Inputs`, each file read once (``-``:
    the standard input, for one name only), unchecked but for a name given twice (a ConfigError)."""
    given, literals = {}, set()
    dashes = [p for p in pairs or [] if p.partition("=")[2] == STDIN]
    if len(dashes) > 1:                 # (before anything is read)
        raise ConfigError(f"--input {dashes[1]}: the standard input is another parameter's already "
                          "(it gives its bytes once)", where="option --input",
                          fix="give one parameter '-' and the others files (a pipe each: <(...))")
    for p in pairs or []:
        name, sep, file = p.partition("=")
        if not sep or not name or not file:
            raise ConfigError(f"--input {p!r} is not NAME=FILE.npy or NAME=NUMBER", where="option --input",
                              fix="e.g. --input a=a.npy, or --input n=5 (--input c=true for an i1) for a scalar "
                                  "parameter")
        if name in given:           # (the last one would win, silently)
            first = next(q for q in pairs if q.partition("=")[0] == name)
            raise ConfigError(f"--input {name} is given twice ({first}, {p})", where="option --input",
                              fix=f"give --input {name}=... once")
        num = literal(file)
        if num is None:
            given[name] = read_npy(file, "--input", name)
            continue
        arr = np.array(num)
        if arr.dtype == object:
            raise ConfigError(f"--input {name}={file}: the number does not fit 64 bits", where="option --input",
                              fix="give a scalar parameter a value its type holds")
        given[name] = arr
        literals.add(name)
    digest = hashlib.sha256()
    for name, arr in sorted(given.items()):
        arr.flags.writeable = False     # (shared by every use: none may change what the next one sees)
        digest.update(f"{name}={arr.dtype.str}{arr.shape};".encode())
        digest.update(np.ascontiguousarray(arr).view(np.uint8).data if arr.size else b"")
    return Inputs(given, frozenset(literals), digest.hexdigest())


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


def make_inputs(op, inputs, zero_fill: bool, fill=()) -> dict:
    """``inputs`` (:func:`as_inputs`: ``name=file.npy`` pairs, or :class:`Inputs`) -> the run's
    arguments, checked against the parameters; a tensor without one is zeros when
    ``zero_fill`` or its name is in ``fill`` (an output)."""
    given = as_inputs(inputs).arrays
    args = {}
    params = _entry_params(op)
    names = {a.name for a in params}
    refuse_unknown_parameters(given, names)
    for a in params:
        t = a.type
        if a.name in given:
            v = given[a.name]
            if isinstance(t, TensorType):
                want = np_dtype(t.dtype)
                v = as_declared(v, want)
                if tuple(v.shape) != tuple(t.shape) or v.dtype != want:
                    raise ConfigError(f"--input {a.name}: {v.dtype}{list(v.shape)} but the kernel takes "
                                      f"{t.dtype}{list(t.shape)}", where="option --input",
                                      fix=f"save the array with that shape and dtype ({BITS_FIX})")
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
            raise ConfigError(f"--input {name}: {with_article(v.dtype)} value {v.item()!r} for the {dt} parameter "
                              f"{name!r}", where="option --input",
                              fix=f"give an integer: --input {name}=3 (or a .npy of one)")
        check_input_fits(name, int(v.item()), dt, *int_range(dt))
    elif v.dtype.kind not in "iuf":
        raise ConfigError(f"--input {name}: {with_article(v.dtype)} value for the {dt} parameter {name!r}",
                          where="option --input", fix=f"give a number: --input {name}=1.5 (or a .npy of one)")
    return v.item()


_NPY_MAGIC = b"\x93NUMPY"
_SAVE_FIX = "write it with numpy.save(path, array) (a numeric array)"


def read_npy(file: str, option: str, name: str | None = None) -> np.ndarray:
    """The array in the ``.npy`` file ``file`` that ``option`` (``--input``) names for the
    parameter ``name``; a file that is not one (text, an ``.npz`` archive, a pickled object
    array, a truncated file) is a ConfigError saying what the file is instead, and one that
    does not exist says that a scalar parameter takes a number there.  A pipe (``/dev/stdin``, ``<(...)``) is
    read whole: it gives its bytes once, and the head read to judge them is part of them;
    ``-`` is the standard input (``./-``: a file named ``-``)."""
    def bad(why: str, fix: str = _SAVE_FIX) -> ConfigError:
        return ConfigError(f"cannot load {file}{' (stdin)' if file == STDIN else ''}: {why}",
                           where=f"option {option}", fix=fix)
    try:
        if file == STDIN:
            data = sys.stdin.buffer.read()
            head = data[:64]
        elif stat.S_ISFIFO(os.stat(file).st_mode):
            with open(file, "rb") as f:
                data = f.read()
            head = data[:64]
        else:
            data = None
            with open(file, "rb") as f:
                head = f.read(64)
    except OSError as e:
        if name and isinstance(e, FileNotFoundError) and os.sep not in file and not file.endswith(".npy"):
            # (a value meant as a number - a scalar's 'abc', '1,5' - more likely than a missing file)
            raise ConfigError(f"{option} {name}={file}: {file!r} is neither a number nor a file",
                              where=f"option {option}",
                              fix=f"give a number for a scalar parameter ({option} {name}=5 or {name}=1.5) "
                                  "or the path of a .npy file for an array") from None
        number = (f", or a number if {name} is a scalar parameter ({option} {name}=5)"
                  if name and isinstance(e, FileNotFoundError) else "")
        raise bad(e.strerror or str(e), "give the path of a .npy file" + number) from None
    if not head.startswith(_NPY_MAGIC):
        if not head:
            raise bad("the file is empty")
        if head.startswith(b"PK\x03\x04"):
            raise bad("it is a .npz archive (several arrays), not a .npy file",
                      "save the one array with numpy.save(path, np.load(archive)[name])")
        text = codecs.getincrementaldecoder("utf-8")("replace").decode(head)   # a cut last char: dropped
        if "\ufffd" in text or not all(c.isprintable() or c in "\t\r\n" for c in text):
            raise bad("it is not a .npy file (no NUMPY header)")
        raise bad(f"it is a text file (it starts with {text.splitlines()[0][:32]!r}), not a .npy file",
                  "convert it: numpy.save(path, numpy.loadtxt(textfile, dtype=...))")
    try:
        return np.load(file if data is None else io.BytesIO(data), allow_pickle=False)
    except ValueError as e:
        if "pickle" in str(e):
            raise bad("it holds Python objects (a pickled object array), not numbers") from None
        raise bad(f"the .npy data is damaged ({e})") from None
    except (OSError, EOFError) as e:
        raise bad(f"the .npy data is truncated or damaged ({e or 'ends early'})") from None


def launches(path: str, inputs=None, func: str | None = None, platform: str | None = None,
             protocol: str = "spec", data_seed: int = 0, one: bool = False,
             ranges: dict | None = None) -> tuple:
    """``(launches, warnings)``: the executor's kernels and arguments for the ``.pto`` file
    ``path`` with the ``inputs`` (:class:`Inputs`, or the pairs to read), one per function run -
    ``func``, else the entry, else each function nothing calls (``one``: a single one is
    needed, e.g. to write its outputs) - and the warnings of the static verifier (which
    proves the other integer scalars within ``ranges``, name -> (lo, hi), where declared)."""
    from ..codegen.pto_exec import prepare, read_program, read_text, top_functions
    from ..codegen.pto_load import skipped_note, static_findings
    from ..codegen.pto_exec.launch import noted, platform_note
    from ..codegen.pto_exec.program import choose_top
    text = read_text(path)
    prog = read_program(text, path)
    funcs = [choose_top(prog, func)] if func is not None else top_functions(prog)
    if len(funcs) > 1 and one:
        raise ConfigError(f"{path} has {len(funcs)} top-level functions ({', '.join(funcs)}) and no "
                          "pto.entry: --output needs one", where="option --output",
                          fix="choose the function with --func NAME")
    loaded = as_inputs(inputs)
    given = loaded.arrays
    refuse_number_for_tensor(prog, funcs, loaded.numbers)
    params = {f: {p[0][1:] for part in f.split("+") for p in prog.funcs[part].params} for f in funcs}
    known = set().union(*params.values()) if params else set()
    refuse_unknown_parameters(given, known)
    refuse_unknown_parameters(ranges or (), known, RANGE)
    out = []
    for f in funcs:
        mine = {k: v for k, v in given.items() if k in params[f]}
        out.append(prepare(path, inputs=mine, platform=platform, func=f, data_seed=data_seed or 0, given=INPUT))
    # the static verifier after the inputs are checked: a trip count its parameter cannot
    # hold is refused before VerifyPipes counts that many iterations
    with noted(platform_note(text, platform)):
        warnings, skipped = static_findings(path, platform, protocol, loaded.scalars(), ranges=ranges)
    for pl in out if skipped else ():
        pl.notes.insert(0, skipped_note(skipped))
    return out, list(warnings)


def platform_of(path: str) -> str | None:
    """The platform the ``.pto`` file ``path`` is for (:func:`file_platform`), None when it
    cannot be read (its error says why)."""
    from ..codegen.pto_exec import read_program, read_text
    from ..codegen.pto_exec.launch import file_platform
    try:
        text = read_text(path)
        return file_platform(read_program(text, path), text)[0]
    except (OSError, ParseError, ConfigError):
        return None


def scenarios(path: str, launched: list, protocol: str) -> list:
    """The launches of the .pto file ``path`` as ``(Scenario, run warnings)`` pairs (one per
    function run, a 'default' variant each) for ``check``: the executor's kernels, the given
    arrays, seeded random data for the others; the list the runs' executors add their
    warnings to (reads before writes: what the run finds and goes on after).  A level3 file
    ptopipe wrote (:func:`~ptopipe.codegen.pto_syntax.placed_level`) runs in the manual
    synchronisation mode, as ``run`` runs it."""
    from ..isa.scenario import Scenario
    sync = file_sync(path, None)[0]
    out = []
    for pl in launched:
        def make_args(rng, pl=pl):
            return {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in pl.args.items()}
        name = os.path.basename(path) + ("" if len(launched) == 1 else f"@{pl.func}")
        out.append((Scenario(name, pl.aic, pl.aiv, make_args, lambda a: {}, platform=pl.platform,
                             protocol=protocol, sync=sync), _with_load_warnings(pl)))
    return out


#: the note of a level3 file ptopipe wrote, run in the manual synchronisation mode by default
LEVEL3_NOTE = ("the file is level3 (its first line): its program orders its pipes with its own events, which "
               "ptoas keeps as they are - run in the manual synchronisation mode, where only they order its "
               "pipes, as on the device (--sync auto: the simulator's scoreboard orders them)")


def auto_events_note(where: str, op: str) -> str:
    """The note of a run, in the auto synchronisation mode, of a .pto file whose kernels set
    events of their own (the first, ``op``, at ``where``)."""
    return (f"{where}: the file orders its pipes with events of its own ({op} here) but runs in the auto "
            "synchronisation mode, where the simulator's scoreboard orders each core's pipes - as ptoas "
            "builds it with --enable-insert-sync, which adds the events the file lacks; --sync manual "
            "checks that the file's own events order them (as ptoas builds it without --enable-insert-sync)")


def file_sync(path: str, sync: str | None) -> tuple:
    """``(sync, note)`` of a run of the .pto file ``path``: ``sync`` when given; else the manual
    mode for a level3 file ptopipe wrote (:func:`~ptopipe.codegen.pto_syntax.placed_level`), whose
    events are all that orders its pipes once ptoas has built it (as for C++ that sets its own
    events), with :data:`LEVEL3_NOTE`; else None (auto) - with :func:`auto_events_note` when its
    kernels set events of their own (ptoas's samples are built with --enable-insert-sync, so
    auto stays their default)."""
    from ..codegen.pto_exec import read_program, read_text
    from ..codegen.pto_exec.sync_ops import own_event
    from ..codegen.pto_syntax import placed_level
    if sync is not None:
        return sync, None
    text = read_text(path)
    if placed_level(text):
        return "manual", LEVEL3_NOTE
    s = own_event(read_program(text, path))
    return None, (auto_events_note(s.where(path), s.name) if s is not None else None)


def scenario_at(path: str, inputs: Inputs, func: str | None, platform: str | None, protocol: str,
                data_seed: int, ranges: tuple, index: int) -> tuple:
    """The ``index``-th ``(Scenario, run warnings)`` pair of :func:`scenarios` of the .pto
    file ``path`` launched with these options (:func:`launches`' arguments; ``inputs`` the
    arrays the command read, not their files - a pipe was read once, in the command - and
    ``ranges`` as a tuple): how a worker process loads the kernel of a check it runs
    schedules of."""
    launched, _ = launches(path, inputs, func, platform, protocol, data_seed, ranges=dict(ranges))
    return scenarios(path, launched, protocol)[index]


def _with_load_warnings(pl) -> list:
    """``pl.run_warnings`` (the list its runs add to) with the warnings of reading the file
    first (tiles at explicit addresses that overlap): check reports them with the run's."""
    pl.run_warnings[:0] = [w for w in pl.warnings if w not in pl.run_warnings]
    return pl.run_warnings


_NOTHING = ("no cross-core pipes, nothing to verify statically (`ptopipe check` runs it with "
            "every checker)")


def static_verdict(path: str, platform: str | None, protocol: str, inputs=None, ranges=None) -> dict:
    """``check --static`` of the .pto file ``path``: the reader and the static passes, nothing
    run.  The ``inputs``' (:class:`Inputs`, or the pairs to read) integer values are the
    launch's (as ``run`` takes them): verified exactly; the other integer scalars for every
    value (or within ``ranges``).  The verdict: ``{"program", "platform", "protocol",
    "status"`` (verified, nothing to verify, not proven, not verified, failed)``,
    "warnings", "detail", "found"}`` (the findings of a
    failed one)."""
    from ..codegen.pto_load import load_pto
    from ..codegen.pto_exec import read_program, read_text
    from ..codegen.pto_exec.launch import noted, platform_note
    from ..codegen.pto_syntax import INT_DTYPES, PLATFORM_OF_ARCH, SPMD_PARAMS, run_line_platform
    from ..errors import CompileError
    from ..passes.pipe_paths import unknown_scalars
    from ..passes.static_check import NOT_PROVEN as NOT_PROVEN_STATUS, status_of
    from ..passes.verify_pipes import not_proven
    platform = platform or run_line_platform(read_text(path))
    loaded = as_inputs(inputs)
    scalars = loaded.scalars()
    ranges = ranges or {}
    _refuse_unknown_names(path, loaded, ranges)
    name = os.path.basename(path)

    def verdict(plat, status, warnings, text, found=()):
        return {"program": name, "platform": str(plat), "protocol": protocol, "status": status,
                "warnings": list(warnings), "detail": text, "found": list(found)}
    on = platform_name(platform or platform_of(path) or "a2a3")
    too_big = _tiles_larger_than_memory(path, on)       # (whether or not the value IR reads the file)
    if too_big:
        return verdict(on, "failed", [], "the static checks found an error without running", too_big)
    refused = []                    # (what the run refuses at an init: the run's error, found here)
    try:
        with noted(platform_note(read_text(path), platform)):
            op, warnings, plat = load_pto(path, platform, protocol, scalars=scalars, ranges=ranges,
                                          refusals=refused)
    except ParseError as e:
        return verdict(*_unexpressed(path, e, platform))
    except CompileError as e:
        arch = read_program(read_text(path), path).arch or ""
        return verdict(platform_name(platform or PLATFORM_OF_ARCH.get(arch) or "a2a3"), "failed", [],
                       "the static checks found an error without running", [e])
    if refused:
        return verdict(plat, "failed", warnings, "the static checks found an error without running", refused)
    state = status_of([], warnings)
    given = f" with {', '.join(f'{k}={v}' for k, v in scalars.items())} (--input)" if scalars else ""
    if not any(o.name.endswith("initialize_pipe") for o in op.walk()):
        # no protocol to prove, but the static checks ran (GM bounds, accumulators): say what
        # they proved, never "nothing to verify" next to their not-proven warnings
        proved = (f"not proven for all values{given} (the warnings above)" if state == NOT_PROVEN_STATUS
                  else "its GM accesses are in bounds" + (" with " + ", ".join(
                      f"{k} in {lo}..{'' if hi is None else hi}" for k, (lo, hi) in ranges.items())
                      if ranges else ""))
        return verdict(plat, "nothing to verify", warnings,
                       f"no cross-core pipes; {proved}, nothing else to verify statically (`ptopipe "
                       "check` runs it with every checker)")
    if state == NOT_PROVEN_STATUS:
        return verdict(plat, "not proven", warnings,
                       f"not proven for all values{given}: {'; '.join(not_proven(warnings))}")
    params = sorted(unknown_scalars(op, INT_DTYPES) - set(scalars)
                    - set(SPMD_PARAMS))       # (those are bound: as the run binds them)
    which = f" for every value of {', '.join(params)}" if params else ""
    which += "".join(f", {k} in {lo}..{'' if hi is None else hi}" for k, (lo, hi) in ranges.items())
    return verdict(plat, "verified", warnings,
                   f"verified statically{which}{given} (VerifyPipes, GM bounds, Validate, ring and "
                   "address checks)")


def _tiles_larger_than_memory(path: str, platform) -> list:
    """The tiles of the .pto file ``path`` that cannot fit their memory on ``platform``
    (:func:`ptopipe.codegen.pto_exec.placement.tiles_larger_than_memory`)."""
    from ..arch import get_platform
    from ..codegen.pto_exec import read_program, read_text
    from ..codegen.pto_exec.placement import tiles_larger_than_memory
    return tiles_larger_than_memory(read_program(read_text(path), path), get_platform(platform))


def _refuse_unknown_names(path: str, inputs: Inputs, ranges: dict) -> None:
    """``--input`` / ``--range`` names the functions that would run (as ``run`` takes them)
    do not have: a ConfigError, not a proof about a parameter that is not there."""
    from ..codegen.pto_exec import read_program, read_text, top_functions
    prog = read_program(read_text(path), path)
    known = {p[0][1:] for f in top_functions(prog) for part in f.split("+") for p in prog.funcs[part].params}
    refuse_unknown_parameters(inputs.arrays, known)
    refuse_unknown_parameters(ranges, known, RANGE)


def _unexpressed(path: str, why: ParseError, platform) -> tuple:
    """The verdict of a file the static verifier's value IR cannot express (``why``): a file
    without cross-core pipes has nothing to prove (a pass, saying so); one with pipes is
    not verified - never a pass for what was not proved."""
    from ..codegen.pto_exec import has_pipes, read_program, read_text
    from ..codegen.pto_syntax import PLATFORM_OF_ARCH
    prog = read_program(read_text(path), path)    # unreadable: the executor's ParseError
    plat = platform_name(platform or PLATFORM_OF_ARCH.get(prog.arch or "") or "a2a3")
    if not has_pipes(prog, list(prog.funcs)):
        return plat, "nothing to verify", [], _NOTHING
    return (plat, "not verified", [],
            f"the static verifier cannot express this file ({why.what}, at {why.where}); "
            f"`ptopipe check {path}` runs it with every checker")
