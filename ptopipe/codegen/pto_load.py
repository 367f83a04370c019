"""A ``.pto`` file as a run and the static verifier see it: :func:`load_pto` reads it
(:func:`~ptopipe.codegen.read_pto`), gives its pipes the lanes ptoas runs them with
(:func:`one_lane_nosplit`), runs the static passes a hand-written pair gets
(:data:`PTO_PASSES`: VerifyPipes, AllocateMemoryAddr, ResolvePeerBuffers, AllocateFlags,
LowerPlatform, Validate) and the checks PTO-AS adds (a reserve_buffer overlapping a tile placed with
``pto.alloc_tile addr = ...``, an entry that launches a piped kernel never or twice).  Every
finding is worded in the file's spelling (``pto.tadd``, not ``pl.add``) at its line:col.

:func:`static_findings` is that verification in front of a run, and :func:`run_pto` a run
behind it (``ptopipe.run_pto``); ``ptopipe run | check kernel.pto`` call the same, so the
library and the command verify a file alike.
"""
from __future__ import annotations

import os
import re

import numpy as np

from ..arch.vocab import TileLayout, TileSplitAxis
from ..errors import API_INPUTS, INPUT, RANGE, CompileError, ConfigError, Given, ParseError, PtoPipeError, user_line, with_article
from ..ir.vocab import FunctionKind
from ..ir.types import ScalarType, int_range
from ..ir.opdefs import INITIALIZE_PIPE, CallOp, ReserveBufferOp, TFree, TPop, TPush, call_names
from ..sim.pipesync import PTO_EVENTS
from .pto_exec.types import check_input_fits
from .pto_reader import read_pto
from .pto_syntax import BLAYOUT_NAMES, INT_DTYPES, PTO_OP, SLAYOUT_NAMES, refuse_spmd_inputs, run_line_platform
from .pto_writer import nosplit_functions, with_peers

#: what a .pto program goes through before it runs (it is already split into kernels)
PTO_PASSES = ("verify-pipes", "allocate-memory", "resolve-peers", "allocate-flags", "lower-platform", "validate")
_MEM = {"Vec": "UB", "Mat": "L1"}


def load_pto(path: str, platform: str | None = None, protocol: str = "spec", text: str | None = None,
             scalars: dict | None = None, verify_properties: bool | None = None,
             ranges: dict | None = None, print_after_all: bool = False, stream=None, given: Given = INPUT,
             refusals: list | None = None):
    """``path`` through the reader and the static passes: ``(op program, warnings, platform)``;
    ``refusals``: a list given by a run or its static verdict, which gets the errors the run
    raises at the pipe inits that name no gm_slot_buffer where every ring is in GM (an A5
    file on A2A3: :func:`~.pto_exec.pipe_ops.no_gm_slot_buffer`) in place of LowerPlatform's
    warnings, which give the compiled kernel a GM ring;
    ``scalars``: scalar parameter values VerifyPipes verifies with (the run's ``--input``),
    ``ranges``: declared ranges of the others (name -> (lo, hi));
    ``verify_properties``: check every IR property after every pass (``--verify-each``);
    ``print_after_all``: print the IR after each pass on ``stream`` (``--print-after-all``);
    ``given``: how the scalars were given (``--input``, ``inputs=``), the messages' words."""
    from ..passes import PassContext, PassManager     # imported when a file is loaded
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
    refuse_spmd_inputs(scalars or {}, given)
    refuse_spmd_inputs(ranges or {}, RANGE)
    addrs = []
    try:
        op = read_pto(text, path, platform, addrs=addrs)
    except RecursionError:
        raise ParseError("regions nest deeper than the reader follows", where=path,
                         fix="nest fewer scf.for / scf.if levels (a few hundred are fine)") from None
    plat = platform or op.platform or "a2a3"
    check_scalar_ranges(op, scalars or {}, given)
    ctx = PassContext(platform=plat, protocol=protocol, scalars=dict(scalars or {}), ranges=dict(ranges or {}),
                      as_ptoas=True)
    one_lane_nosplit(op, ctx)
    try:
        op = PassManager(list(PTO_PASSES), verify_properties=verify_properties,
                         print_after_all=print_after_all, stream=stream).run(op, ctx)
    except PtoPipeError as e:
        raise in_pto_words(e) from None
    check_explicit_addrs(op, addrs)
    check_entry_launches(op)
    from .pto_exec.pipe_ops import ptoas_refusals
    from .pto_exec.reader import read_program
    prog = read_program(text, path)
    warnings = ctx.warnings
    if refusals is not None:
        refused = _unbuffered_inits(ctx, prog)
        refusals.extend(refused)
        if refused:
            said = {id(w) for _, _, w in ctx.gm_rings_given}
            warnings = [w for w in warnings if id(w) not in said]
    return op, ptoas_refusals(prog) + [pto_words(w) for w in warnings], plat


def _unbuffered_inits(ctx, prog) -> list:
    """The run's ConfigError at each pipe init LowerPlatform gave a GM ring (``ctx``'s
    ``gm_rings_given``) when the platform keeps every ring in GM, in the file's spelling of
    the init (``prog``: the file as the executor reads it)."""
    from ..arch import get_platform
    from .pto_exec.pipe_ops import no_gm_slot_buffer
    plat = get_platform(ctx.platform)
    if not plat.ring_in_gm or not ctx.gm_rings_given:
        return []
    at = {(s.tok.line, s.col): s for f in prog.funcs.values() for s in f.statements()}
    out = []
    for init, nbytes, _ in ctx.gm_rings_given:
        s = at.get((init.loc.line, init.loc.col))
        name, where = (s.name, s.where(prog.path)) if s is not None else (pto_words(init.name), str(init.loc))
        out.append(no_gm_slot_buffer(name, plat.name, nbytes, where))
    return out


def check_scalar_ranges(op, scalars: dict, given: Given = INPUT) -> None:
    """Each given integer scalar fits its parameter's type (an i32 trip count of 2**40 is a
    ConfigError here, before VerifyPipes would count that many iterations)."""
    for f in op.body:
        for a in f.regions[0].blocks[0].args:
            v, t = scalars.get(a.name), a.type
            if v is None or not isinstance(t, ScalarType) or t.dtype not in INT_DTYPES:
                continue
            check_input_fits(a.name, int(v), t.dtype, *int_range(t.dtype), given)


def _pto_word(m) -> str:
    name = m.group(1)
    if name in PTO_OP:
        return PTO_OP[name]
    return f"pto.{name}" if name in _PTO_SAME else m.group(0)


#: DSL ops whose PTO-AS spelling is ``pto.<name>`` too
_PTO_SAME = call_names(INITIALIZE_PIPE + (ReserveBufferOp,))


def _quoted(s: str) -> str:
    return '"' + s[1:-1] + '"'


#: the DSL's and pto-isa C++'s spellings of what a fix tells a user to write, as a .pto writes
#: it: keyword arguments as attributes (``slot_num=4`` -> ``slot_num = 4``, ``base=pl.AUTO`` ->
#: ``auto = true``), the reserve / import calls as their ops, the C++ events as ptoas's
_PTO_PHRASES = (
    (re.compile(r"\b(?:pl\.)?reserve_buffer\(name=('[^']*'|\"[^\"]*\"), size=([^,()]+(?:\([^()]*\))?), \.\.\.\)"),
     lambda m: f"pto.reserve_buffer {{name = {_quoted(m.group(1))}, size = {m.group(2)}, ...}}"),
    (re.compile(r"\b(?:pl\.)?import_peer_buffer\(name=('[^']*'|\"[^\"]*\"), peer_func=(\w+)\)"),
     lambda m: f"pto.import_reserved_buffer {{name = {_quoted(m.group(1))}, peer_func = @{m.group(2)}}}"),
    (re.compile(r"\bbase=pl\.AUTO\b"), lambda m: "auto = true"),
    (re.compile(r"\b(local_slot_num|slot_num|slot_size)=(\d+)"), lambda m: f"{m.group(1)} = {m.group(2)}"),
    (re.compile(r"\b(set_flag|wait_flag)\((PIPE_\w+), (PIPE_\w+), (?:EVENT_ID)?(\w+|\.\.\.)\)"),
     lambda m: PTO_EVENTS.call(f"pto.{m.group(1)}", m.group(2), m.group(3), m.group(4))),
    (re.compile(r"\bpipe_barrier\((PIPE_\w+)\)"), lambda m: f"pto.barrier #pto.pipe<{m.group(1)}>"),
    (re.compile(r"\bpl\.matmul_acc\(acc, a, b, init_cond=\((.*?)\)\)"),
     lambda m: f"an scf.if on ({m.group(1)}) picking pto.tmatmul, else pto.tmatmul.acc"),
    (re.compile(r"\bdeclare the (Left|Right|Acc) tile without a layout \(the default is (\w+)\) or with "
                r"layout=TileLayout\.\w+"), lambda m: _cube_tile_type(m.group(1), m.group(2))),
)


def _cube_tile_type(loc: str, layout: str) -> str:
    """A fix's "declare the Left tile with layout ZZ" as a .pto declares one: the tile_buf's
    blayout / slayout (a short form that names neither, and a memref in left / right / acc, is
    ptoas's row-major NoneBox tile: ``pto_syntax.SHORT_FORM_LAYOUT``)."""
    lay = TileLayout[layout]
    a5 = ", on A5 blayout=col_major (NZ)" if loc == "Left" else ""
    return (f"declare the {loc} tile as a !pto.tile_buf<loc={loc.lower()}, ..., "
            f"blayout={BLAYOUT_NAMES[lay.blayout]}, slayout={SLAYOUT_NAMES[lay.slayout]}> ({layout}{a5}; a short form "
            f"<{loc.lower()}, RxCxT> that names no layout, and a memref in {loc.lower()}, is ptoas's row_major / "
            "none_box tile)")


def pto_words(text: str | None) -> str | None:
    """A message (worded for the DSL: ``pl.add``, ``pl.aiv_initialize_pipe``, ``slot_num=4``,
    or for pto-isa C++: ``set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0)``) in a ``.pto`` user's words
    (``pto.tadd``, ``pto.aiv_initialize_pipe``, ``slot_num = 4``,
    ``pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]``)."""
    if not text:
        return text
    for pattern, spelled in _PTO_PHRASES:
        text = pattern.sub(spelled, text)
    return re.sub(r"\bpl\.(\w+)", _pto_word, text)


def in_pto_words(e: PtoPipeError) -> PtoPipeError:
    e.what, e.fix, e.details = pto_words(e.what), pto_words(e.fix), pto_words(e.details)
    e.args = (e.render(),)
    return e


def one_lane_nosplit(op, ctx) -> None:
    """Where a TILE_NO_SPLIT pipe has one lane (:func:`~ptopipe.protocol.model.nosplit_one_lane`:
    A5), the pipes of a ``nosplit`` pair get ``lanes=1`` (AIV0 their only peer), as
    ExpandMixedKernel gives a compiled no-split function's, and so do the pipes whose ops all
    say ``split = 0`` (ptoas runs them on AIV0 only)."""
    from ..passes.expand_mixed import one_lane_no_split
    if not one_lane_no_split(ctx):
        return
    funcs = list(op.body)
    whole = whole_tile_pairs(funcs)
    pair = nosplit_functions(op) | whole
    for f in funcs:                 # the Vector kernel runs on AIV0 only (AIV1 skips its body)
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


def static_findings(path: str, platform, protocol, scalars: dict | None = None,
                    text: str | None = None, ranges: dict | None = None, given: Given = INPUT) -> tuple:
    """The static passes in front of a run: ``(warnings, None)`` when the value IR reads the
    file (a finding of the passes is raised), ``(what ptoas refuses, reason)`` when it cannot
    express the file (the run then has the executor's checks only, and says so)."""
    from .pto_exec import read_program, read_text
    from .pto_exec.pipe_ops import ptoas_refusals
    text = text if text is not None else read_text(path)
    platform = platform or run_line_platform(text)
    try:
        # (an init without a gm_slot_buffer where every ring is in GM - an A5 file run on A2A3 - is
        # the run's error at that init: not LowerPlatform's warning, which gives a compiled kernel
        # a GM ring, before it)
        _, warnings, plat = load_pto(path, platform, protocol, text=text, scalars=scalars, ranges=ranges,
                                     given=given, refusals=[])
    except ParseError as e:
        prog = read_program(text, path)        # the executor's words
        return ptoas_refusals(prog), e.what
    return warnings, None


def _checked_call(path, text, inputs) -> str | None:
    """``run_pto``'s file (a path as a string) and inputs, refused at the call when they are
    not a path / ``text=`` and a dict: a run would fail far from the call, or look for a file
    named ``<pto>``."""
    if text is None:
        if path is None:
            raise ConfigError("run_pto() needs the path of a .pto file", where=user_line(),
                              fix="call run_pto('kernel.pto', inputs={...}), or run_pto(text=...) with the "
                                  "file's text")
        if not isinstance(path, (str, os.PathLike)):
            raise ConfigError(f"run_pto(path): {path!r} is {with_article(type(path).__name__)}, not the path "
                              "of a .pto file", where=user_line(),
                              fix="give the path as a string, e.g. run_pto('kernel.pto')")
    elif not isinstance(text, str):
        raise ConfigError(f"run_pto(text=): {with_article(type(text).__name__)}, not the text of a .pto file",
                          where=user_line(), fix="give the file's text as a str (or its path as path)")
    if inputs is not None and not isinstance(inputs, dict):
        raise ConfigError(f"run_pto(inputs=): {with_article(type(inputs).__name__)}, not a dict "
                          "{parameter: array or number}", where=user_line(),
                          fix="give inputs={'arg0': array, 'n': 16, ...}: the kernel's parameter names "
                              "(without %) to their values")
    return os.fspath(path) if path is not None else None


def skipped_note(reason: str) -> str:
    """The note of a run whose file the static verifier's value IR cannot express."""
    return (f"static pipe verification skipped (the value IR cannot express this file: {reason}); "
            "the run's checkers still apply")


def run_pto(path: str | None = None, *, static: bool = True, **kwargs):
    """Run a ``.pto`` file (or ``text=``) on the simulated cluster with buffer semantics
    (:func:`ptopipe.codegen.pto_exec.run_pto`, which takes the other keywords).  With
    ``static`` (default) :func:`static_findings` runs first: its findings are raised, its
    warnings are in the result's ``.warnings`` and a skip is in its ``.notes``."""
    from .pto_exec import read_text, run_pto as run_file
    from .pto_exec.launch import noted, platform_note
    path = _checked_call(path, kwargs.get("text"), kwargs.get("inputs"))
    found, skipped = [], None
    if static:
        ints = {k: v for k, v in (kwargs.get("inputs") or {}).items()
                if isinstance(v, (int, np.integer)) and not isinstance(v, bool)}
        text = kwargs.get("text")
        text = text if text is not None else read_text(path)
        with noted(platform_note(text, kwargs.get("platform"))):
            found, skipped = static_findings(path or "<pto>", kwargs.get("platform"),
                                             kwargs.get("protocol", "spec"), ints, text, given=API_INPUTS)
    res = run_file(path, **kwargs)
    res.warnings[:0] = found
    if skipped:
        res.notes.insert(0, skipped_note(skipped))
    return res
