"""Running a file: the kernel arguments (given inputs, else seeded random data sized from the
program), which function runs on which core, and :func:`run_pto`."""
from __future__ import annotations

import re
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from ... import isa
from ...arch import get_platform
from ...arch.vocab import MemSpace
from ...protocol.model import nosplit_one_lane, platform_kind
from ...errors import API_INPUTS, INPUT, ConfigError, Given, PtoPipeError, refuse_unknown_parameters
from ...sim.pipesync import PTO_EVENTS
from ...isa.context import get_block_num
from ...isa.launch import lone_vector_lanes
from ...isa.unwritten import UNWRITTEN
from ..pto_syntax import (PLATFORM_OF_ARCH, SPMD_BLOCK_IDX, SPMD_BLOCK_NUM, SPMD_PARAMS, SPMD_SUBBLOCK_IDX,
                          refuse_spmd_inputs, run_line_platform)
from .executor import Executor
from .pipe_pairs import pipe_nosplit
from .pipe_ops import check_flag_ids, check_pipe_directions
from .placement import alias_notes, plan_layout
from .program import (MIXED, SUBBLOCK_OPS, Program, SYNTAX_SLIPS, choose_top, has_pipes, implied_kind, int_attr,
                      int_constants, lane0_scope, malformed, reachable, read_text)
from .reader import read_program
from .scalar_ops import DIVISIONS, INT_OPS, SHIFTS, int_op
from .values import Elements
from .types import ScalarT, TileSpec, check_input_fits, dtype_name, int_range


@dataclass
class PtoRun:
    """What :func:`run_pto` returns: the run's result, the function run, the notes on what was
    decided (random inputs, cores), what ``pto.tprint`` printed in simulated order, and the
    warnings (tiles at explicit addresses that overlap while live, tiles read before anything
    wrote them: ``"file:line:col: what"``)."""
    result: object
    func: str
    notes: list
    prints: list
    warnings: list

    @property
    def outputs(self) -> dict:
        return self.result.outputs

    @property
    def summary(self):
        return self.result.summary


#: the most bytes of seeded random data made for one parameter given no --input: a model's
#: real weight matrices (pypto's Qwen3 decode kernels: 400 MB of bf16) fit; a view of
#: gigabytes is a typo, and making it would take minutes and memory the machine may not have
SEEDED_MAX_BYTES = 1 << 30


def param_arrays(prog: Program, top_funcs, inputs: dict, rng, platform, given: Given = INPUT) -> tuple:
    """The kernel arguments by parameter name: the given inputs (``given``: how the user gave
    them, for the messages), else seeded random arrays (pointer parameters: sized by their
    largest static tensor view in any of the functions ``top_funcs``), the notes saying so, and
    the note of each tensor made up, by name."""
    args, notes, seeded = {}, [], {}
    refuse_spmd_inputs(inputs, given)
    # a given buffer is held to its size (``sizes``): a ring at a pto.addptr of it that runs past its end
    # is the run's error at the ring's init (what it overruns, by how much)
    extents, sizes, natural, origin = _param_extents(prog, inputs, platform)
    params, runs = {}, {}
    for n in top_funcs:
        for name, ty, tok in prog.funcs[n].params:
            if name[1:] in SPMD_PARAMS:     # each core's own value: bound as its kernel starts
                continue
            params.setdefault(name[1:], (ty, tok))
            runs.setdefault(name[1:], []).append(n)
    for key, (ty, tok) in params.items():
        # pypto gives the Cube and the Vector function one signature, and each leaves unused
        # the tensors only the other reads: a parameter takes the largest view of it in any
        # function run (the first of them on a tie)
        fname = max(runs[key], key=lambda f: extents.get((f, "%" + key), 0))
        if isinstance(ty, TileSpec) or isinstance(ty, tuple) and ty[0] == "memref" and isinstance(ty[1], TileSpec):
            raise ConfigError(f"parameter %{key} of @{fname} is a tile in {_tile_memory(ty)} memory: a kernel is "
                              "launched with GM pointers, tensor views and scalars, so nothing can give it "
                              "a tile", where=f"{prog.path}:{tok.line}:{tok.col}",
                              fix=f"run the function that allocates the tile and calls @{fname} (--func NAME), "
                                  f"or give @{fname} a GM pointer and pto.tload it into a tile it allocates")
        if key in inputs:
            v = inputs[key]
            if isinstance(ty, ScalarT):
                if isinstance(v, np.ndarray):
                    if v.size != 1:
                        raise ConfigError(f"{given.of(key)}: a scalar parameter ({ty.name}) got an array "
                                          f"of shape {v.shape}", where=given.where, fix="give one value")
                    v = v.reshape(()).item()
                if not ty.is_float:
                    if isinstance(v, float) and not v.is_integer():
                        raise ConfigError(f"{given.of(key)}: {v!r} for the {ty.name} parameter {key!r}",
                                          where=given.where,
                                          fix=f"give an integer: {given.give(key, '3')}"
                                              f"{' (or a .npy of one)' if given.option else ''}")
                    check_input_fits(key, int(v), ty.name, *int_range(ty), given)
                args[key] = float(v) if ty.is_float else int(v)      # the parameter's type decides
            elif isinstance(ty, tuple) and ty[0] in ("vector", "tensor"):
                a = np.asarray(v)
                if a.size != int(np.prod(ty[2])):
                    raise ConfigError(f"{given.of(key)}: {a.size} values for the {ty[0]} parameter {key!r} of "
                                      f"shape {list(ty[2])}", where=given.where,
                                      fix=f"give {int(np.prod(ty[2]))} values")
                args[key] = Elements(a.astype(ty[1]).reshape(ty[2]))
            else:
                want = ty[1] if isinstance(ty, tuple) else None
                want = want if isinstance(want, np.dtype) else None
                a = np.ascontiguousarray(v)
                if want is not None and want.kind == "V" and a.dtype.kind in "Vu" and \
                        a.dtype.itemsize == want.itemsize:
                    a = a.view(want)        # bf16 / float8 saved as raw bits (numpy has no such dtype)
                need = sizes.get((fname, "%" + key), 0) if isinstance(ty, tuple) and ty[0] == "ptr" else \
                    int(np.prod(ty[2])) if isinstance(ty, tuple) and ty[0] == "memref" else 0
                if (want is not None and a.dtype != want) or a.size < need:
                    shape = natural.get((fname, "%" + key)) or (ty[2] if ty[0] == "memref" else (need,))
                    raise ConfigError(f"{given.of(key)}: {a.dtype}{list(a.shape)} but the kernel takes "
                                      f"{dtype_name(want) if want is not None else '?'}{list(shape)}",
                                      where=given.where,
                                      fix=("save the array with that shape and dtype (a bf16 / float8 "
                                           "array as its bits: np.save(f, x.view(np.uint16 or np.uint8)))")
                                      if given.option else "give an array of that shape and dtype (a bf16 "
                                      "/ float8 array as its bits: x.view(np.uint16 or np.uint8))")
                args[key] = a
            continue
        if isinstance(ty, ScalarT):
            args[key] = 0.0 if ty.is_float else 0
            notes.append(f"scalar parameter {key} ({ty.name}) not given: 0 (give {given.give(key, 'VALUE')})")
            continue
        if isinstance(ty, tuple) and ty[0] in ("vector", "tensor"):
            _seeded_fits(key, ty[1], ty[2], f"{prog.path}:{tok.line}:{tok.col}", given)
            args[key] = Elements(_random(rng, ty[1], ty[2]))
            notes.append(f"{key}: seeded random {ty[0]}<{'x'.join(map(str, ty[2]))}x{dtype_name(ty[1])}> "
                         f"(give {given.give(key)})")
            continue
        if not isinstance(ty, tuple) or ty[0] not in ("ptr", "memref"):
            raise ConfigError(f"parameter %{key} of @{fname} has a type ptopipe cannot make data for",
                              where=f"{prog.path}:{tok.line}:{tok.col}", fix=f"give {given.give(key)}")
        if ty[0] == "memref":
            d, shape = ty[1], ty[2]
            if any(x is None for x in shape):
                raise ConfigError(f"parameter %{key} has a dynamic memref shape",
                                  where=f"{prog.path}:{tok.line}:{tok.col}", fix=f"give {given.give(key)}")
            n = max(int(np.prod(shape)), extents.get((fname, "%" + key), 0))
            shape = shape if n == int(np.prod(shape)) else (n,)      # a slot buffer the ring needs
        else:
            d = ty[1]
            n = extents.get((fname, "%" + key), 0)
            shape = natural.get((fname, "%" + key)) or (n,)       # a dense view's shape, else flat
            if n == 0:
                if any(_read(prog, f, "%" + key) for f in runs[key]):
                    raise ConfigError(f"the size of parameter %{key} is not known statically",
                                      where=f"{prog.path}:{tok.line}:{tok.col}",
                                      fix=f"give {given.give(key)} (or a static shape in its "
                                          "make_tensor_view)")
                shape = (1,)                 # a pointer nothing reads: one element stands for it
        at = origin.get((fname, "%" + key)) or tok
        _seeded_fits(key, d, shape, f"{prog.path}:{at.line}:{at.col}", given)
        args[key] = _random(rng, d, shape)
        notes.append(f"{key}: seeded random {d.name}{list(shape)} (give {given.give(key)})")
        seeded[key] = notes[-1]
    return args, notes, seeded


def _tile_memory(ty) -> str:
    """The memory a tile parameter's type (a TileSpec, or a memref of one) names: ``vec``, ``mat``..."""
    spec = ty[1] if isinstance(ty, tuple) else ty
    return spec.loc.name.lower()


def _own(v):
    """A core's own copy of a vector / tensor argument (each core's registers hold one)."""
    return Elements(v.data.copy()) if isinstance(v, Elements) else v


def spmd_value(name: str) -> int:
    """What pypto's kernel wrapper passes the running core for its SPMD identity parameter
    ``name`` (:data:`~ptopipe.codegen.pto_syntax.SPMD_PARAMS`): the runtime's lane id of the
    core (AIV0 0, AIV1 1; 0 on the Cube), the block index and the number of blocks."""
    if name == SPMD_SUBBLOCK_IDX:
        return isa.get_subblockid()
    return isa.get_block_idx() if name == SPMD_BLOCK_IDX else get_block_num()


def reads_subblock(prog: Program, reach, top_funcs) -> bool:
    """Do the functions ``reach`` ask for the core's sub-block (an op of it, or pypto's SPMD
    sub-block parameter on a function run, ``top_funcs``)?"""
    return any(p[0][1:] == SPMD_SUBBLOCK_IDX for t in top_funcs for p in prog.funcs[t].params) or \
        any(s.name in SUBBLOCK_OPS for n in reach for s in prog.funcs[n].statements())


def spmd_note(prog: Program, top_funcs) -> str | None:
    """The note saying which of pypto's SPMD identity parameters the functions run take, and
    the values each core gets (None: none)."""
    have = [n for n in SPMD_PARAMS
            if any(p[0][1:] == n for t in top_funcs for p in prog.funcs[t].params)]
    if not have:
        return None
    said = {SPMD_SUBBLOCK_IDX: f"{SPMD_SUBBLOCK_IDX} = the core's lane (AIV0 0, AIV1 1, the Cube 0)",
            SPMD_BLOCK_IDX: f"{SPMD_BLOCK_IDX} = the core's block (0 .. N-1 with --blocks N)",
            SPMD_BLOCK_NUM: f"{SPMD_BLOCK_NUM} = the number of blocks (1 unless --blocks N)"}
    return ("pypto's SPMD parameters, bound per core as its runtime does: "
            + ", ".join(said[n] for n in have))


def _random(rng, d, shape):
    d = np.dtype(d)
    if d.kind == "b":
        return rng.integers(0, 2, size=shape).astype(d)
    if d.kind in "iu":
        info = np.iinfo(d)
        return rng.integers(max(info.min, -8), min(info.max, 8) + 1, size=shape).astype(d)
    # uniform in [-1, 1): made in float32 (float64 for a float64 parameter), in place - a
    # float64 draw cast down would take twice the memory and time of the array it makes
    wide = np.float64 if d == np.float64 else np.float32
    a = rng.random(size=shape, dtype=wide)
    a *= 2
    a -= 1
    return a if a.dtype == d else a.astype(d)


def _seeded_fits(key: str, d, shape, where: str | None, given: Given) -> None:
    """A ConfigError unless seeded data for parameter ``key`` (dtype ``d``, ``shape``) fits
    :data:`SEEDED_MAX_BYTES` (``where``: the tensor view that sizes it)."""
    n = int(np.prod(shape, dtype=object))
    size = n * np.dtype(d).itemsize
    if size > SEEDED_MAX_BYTES:
        raise ConfigError(f"parameter %{key} would need {size:,} bytes of seeded random data "
                          f"({dtype_name(np.dtype(d))}{list(shape)}), more than the "
                          f"{SEEDED_MAX_BYTES >> 20} MiB ptopipe makes up for a parameter",
                          where=where,
                          fix=f"give {given.give(key)}, or a smaller shape in its make_tensor_view")


def _read(prog: Program, fname: str, name: str, seen=None) -> bool:
    """Does function ``fname`` use its value ``name`` - in a statement other than a call, or
    as the argument of a callee that uses it (a pointer nothing uses needs no size)?  A
    ``pto.set_ffts`` of it is no use: it hands the device its FFTS workspace, whose bytes the
    simulated cluster's flags never read (pypto passes one with every cross-core sync)."""
    seen = set() if seen is None else seen
    if (fname, name) in seen:
        return False
    seen.add((fname, name))
    for st in prog.funcs[fname].statements():
        if name not in st.used() or st.name == "pto.set_ffts":
            continue
        if st.name != "func.call":
            return True
        callee = prog.funcs[next(t for t in st.toks if t.kind == "symbol").text[1:]]
        if any(a.text == name and _read(prog, callee.name, p[0], seen)
               for a, p in zip(st.values(), callee.params)):
            return True
    return False


#: the casts whose integer result is its operand's value (the sizes here are far from any width)
_INT_CASTS = frozenset(("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui"))


def _known_ints(f, inputs: dict) -> dict:
    """The integer values of ``f`` known before it runs, by name: its constants, its integer
    scalar parameters given as inputs, and what MLIR's integer ops and casts make of those
    (pypto's composite dims: ``%0 = arith.muli %M, %c2_index`` as a view's shape) - the
    values a parameter is sized from.  A name defined more than once is left out."""
    known = int_constants(f)
    for name, ty, _ in f.params:
        if name[1:] in inputs and isinstance(ty, ScalarT) and not ty.is_float:
            try:
                known[name] = int(np.asarray(inputs[name[1:]]).reshape(-1)[0])
            except (TypeError, ValueError):
                pass
    defs = Counter(r for s in f.statements() for r in s.results)
    for s in f.statements():
        if len(s.results) != 1 or defs[s.results[0]] != 1 or not s.name.startswith("arith."):
            continue
        vs = [known.get(v.text) for v in s.values()]
        if not vs or None in vs:
            continue
        if s.name in _INT_CASTS and len(vs) == 1:
            known[s.results[0]] = vs[0]
        elif len(vs) == 2 and (s.name in INT_OPS or s.name in DIVISIONS or s.name in SHIFTS):
            try:
                v = int_op(s.name, vs[0], vs[1], ScalarT(s.text().rsplit(":", 1)[1].strip()))
            except (ZeroDivisionError, OverflowError):
                continue
            if v is not None:
                known[s.results[0]] = v
    return known


def _param_extents(prog: Program, inputs: dict, platform) -> tuple:
    """(function, parameter name) -> elements a pointer parameter needs: the largest extent
    of its static tensor views, the GM ring of a pipe init it is the slot buffer of (SLOT_NUM
    x SLOT_SIZE per direction, from a constant ``pto.addptr`` of it on), and what the
    functions it is passed to (func.call) need; with each the dense shape of the view that
    sets it (or None) and that statement's token.  Also the same without the rings at an
    ``addptr`` (what a given buffer is held to: a ring running past it is the run's error at
    the ring's init)."""
    ext, held, shapes, origin = {}, {}, {}, {}

    def need(key, n, shape=None, at=None, moved=False):
        if not moved and n > held.get(key, 0):
            held[key] = n
        if n > ext.get(key, 0):
            ext[key] = n
            shapes[key] = shape
            origin[key] = at

    for f in prog.funcs.values():
        consts = _known_ints(f, inputs)
        ptypes = {p[0]: p[1] for p in f.params}
        moved = {}                          # %q = pto.addptr %p, %n: q -> (parameter p, n elements)
        for s in f.statements():
            if s.name == "pto.addptr" and s.results:
                vs = s.values()
                base, off = ((vs[0].text, 0) if vs and vs[0].text in ptypes else
                             moved.get(vs[0].text if vs else None, (None, 0)))
                n = consts.get(vs[1].text) if len(vs) > 1 else None
                if base is not None and n is not None:
                    moved[s.results[0]] = (base, off + n)
                continue
            if s.name != "pto.make_tensor_view" and not ("initialize" in s.name and "pipe" in s.name):
                continue
            vs = s.values()
            if s.name == "pto.make_tensor_view" and vs and vs[0].text in ptypes:
                def nums(k):
                    out = []
                    for t in (s.attr(k) or [])[1:-1]:
                        if t.kind == "value":
                            out.append(consts.get(t.text))
                        elif t.kind == "word":
                            out.append(int(t.text))
                    return out
                shape, strides = nums("shape"), nums("strides")
                if not shape or any(x is None for x in shape):
                    continue
                if any(x < 0 for x in shape):     # (not "unknown": it is known, and wrong)
                    raise ConfigError(f"the pto.make_tensor_view of {vs[0].text} has a negative size: shape "
                                      f"{shape}", where=f"{prog.path}:{s.tok.line}:{s.tok.col}",
                                      fix="give every dimension a size >= 0")
                if not strides or any(x is None for x in strides):
                    strides = list(np.cumprod([1] + shape[::-1][:-1])[::-1])
                dense = list(strides) == list(np.cumprod([1] + shape[::-1][:-1])[::-1])
                need((f.name, vs[0].text), 1 + sum((n - 1) * st for n, st in zip(shape, strides)),
                     tuple(shape) if dense else None, s.tok)
            elif "initialize" in s.name and "pipe" in s.name:
                gm = s.attr("gm_slot_buffer")
                gm = gm[0] if gm else (vs[0] if s.name == "pto.initialize_l2g2l_pipe" and vs else None)
                # pypto lays the GM rings of a function's pipes out in one buffer, pipe k's at
                # pto.addptr of it (PTOCodegen::GetGMSlotBufferSSAForPipe): the buffer holds them all
                base, off = ((gm.text, 0) if gm is not None and gm.text in ptypes else
                             moved.get(gm.text if gm is not None else None, (None, 0)))
                if base is not None and gm.kind == "value":
                    ty = ptypes[base]
                    item = ty[1].itemsize if isinstance(ty, tuple) and isinstance(ty[1], np.dtype) else 1
                    d = int_attr(s, "dir_mask", prog)
                    ways = 2 if d & 3 == 3 else 1
                    n = int_attr(s, "slot_num", prog, 0) or platform.slot_num_for(ways == 2)
                    need((f.name, base), off - (-int_attr(s, "slot_size", prog) * n * ways // item), None, s.tok,
                         moved=off > 0)
    changed = True
    while changed:                          # callers need what their callees need
        changed = False
        for f in prog.funcs.values():
            for s in f.statements():
                if s.name != "func.call":
                    continue
                callee = prog.funcs[next(t for t in s.toks if t.kind == "symbol").text[1:]]
                for a, p in zip(s.values(), callee.params):
                    if held.get((callee.name, p[0]), 0) > held.get((f.name, a.text), 0):
                        held[(f.name, a.text)] = held[(callee.name, p[0])]
                        changed = True
                    n = ext.get((callee.name, p[0]), 0)
                    if n > ext.get((f.name, a.text), 0):
                        ext[(f.name, a.text)] = n
                        shapes[(f.name, a.text)] = shapes.get((callee.name, p[0]))
                        origin[(f.name, a.text)] = origin.get((callee.name, p[0]))
                        changed = True
    return ext, held, shapes, origin


@dataclass
class PtoLaunch:
    """A read ``.pto`` ready to run: the kernels per core, their arguments, the platform, the
    function run and the notes on what was decided."""
    aic: object
    aiv: object
    args: dict
    platform: str
    func: str
    notes: list
    program: Program
    warnings: list = field(default_factory=list)     # likely bugs the run itself does not stop at
    run_warnings: list = field(default_factory=list)  # the same, found by the runs (once each)
    platform_note: str | None = None    # run on another platform than the file's (platform_note)


def prepare(path: str | None = None, *, text: str | None = None, func: str | None = None,
            inputs: dict | None = None, platform: str | None = None, data_seed: int = 0,
            given: Given = API_INPUTS) -> PtoLaunch:
    """Read a ``.pto`` file (or ``text``) and make its kernels and arguments (see
    :func:`run_pto`; ``given``: how the inputs were given, the messages' words for them)."""
    if text is None:
        if path is None:
            raise ConfigError("run_pto needs a path or text=")
        text = read_text(path)
    path = path or "<pto>"
    note = platform_note(text, platform)
    try:
        with noted(note):
            launch = _prepare(path, text, func, inputs, platform, data_seed, given)
    except SYNTAX_SLIPS as e:
        if isinstance(e, PtoPipeError):
            raise
        raise malformed(e, path) from None
    launch.platform_note = note
    return launch


_SECTION_KIND = {"pto.section.cube": "cube", "pto.section.vector": "vector"}


def section_kinds(prog: Program, names) -> set:
    """The kinds of core a kernel of ``pto.section.cube`` / ``.vector`` regions (the functions
    ``names``) runs on: those of its sections; every kind when a ``pto.`` op sits outside them
    (ptoas guards only the sections' bodies, so every core runs it) or a section names no
    kind.  Empty: no sections."""
    found, outside = set(), False

    def visit(stmts):
        nonlocal outside
        for s in stmts:
            if s.name.startswith("pto.section"):
                found.update({_SECTION_KIND[s.name]} if s.name in _SECTION_KIND else {"cube", "vector"})
                continue
            outside = outside or s.name.startswith("pto.")
            for r in s.regions:
                for b in r:
                    visit(b.stmts)
    for n in names:
        visit(prog.funcs[n].body)
    return found | ({"cube", "vector"} if found and outside else set())


def lane0_functions(prog: Program, reach, plat: str) -> tuple:
    """``(functions, AIV1 idle)``: the Vector functions of ``reach`` that ptoas runs on AIV0 only
    on ``plat`` (A5: each ``kernel_kind = vector`` function whose body moves whole tiles and
    reads no sub-block, :func:`~.program.lane0_scope` - AIV1 skips them), and whether AIV1 runs
    nothing else (every Vector function is one, and no function of no kind holds ops it would
    run), so the launch leaves it out.  Decided on the kinds the file writes, as ptoas does."""
    if not nosplit_one_lane(platform_kind(get_platform(plat))):
        return frozenset(), False
    funcs = [prog.funcs[n] for n in dict.fromkeys(reach)]
    vector = [f for f in funcs if f.kind == "vector"]
    lane0 = frozenset(f.name for f in vector if lane0_scope(f.body))
    kindless = any(f.kind is None and any(s.name.startswith("pto.") for s in f.statements()) for f in funcs)
    return lane0, bool(vector) and len(lane0) == len(vector) and not kindless


def file_platform(prog: Program, text: str) -> tuple:
    """``(platform, from_run_line)`` a file is for: its module's ``pto.target_arch``, else its
    lit ``// RUN:`` line's ``--pto-arch`` (ptoas's test files), else A2A3."""
    plat = PLATFORM_OF_ARCH.get(prog.arch or "", None)
    if plat:
        return plat, False
    run_line = run_line_platform(text)
    return (run_line, True) if run_line else ("a2a3", False)


_TARGET_ARCH = re.compile(r'pto\.target_arch"?\s*=\s*"(\w+)"')


def platform_note(text: str, platform: str | None) -> str | None:
    """The note of a run of the file ``text`` on ``platform`` (the one given; None: the file's
    own) when the file says it is written for another - its ``pto.target_arch``, else its lit
    ``// RUN:`` line's ``--pto-arch``: what an error of such a run (a ring sized for the
    file's platform) may come from.  None when they agree or the file names none."""
    if platform is None:
        return None
    m = _TARGET_ARCH.search(text)
    own, how = ((PLATFORM_OF_ARCH.get(m.group(1)), f'its pto.target_arch = "{m.group(1)}"') if m else
                (run_line_platform(text), "its RUN line's --pto-arch"))
    given = get_platform(platform).name
    if own is None or own == given:
        return None
    return f"the file is written for {own} ({how}) and runs as {given}, the platform given"


@contextmanager
def noted(note: str | None):
    """An error raised inside (a PtoPipeError) has its fix end with ``note``
    (:func:`platform_note`): running the file on its own platform may be the fix, and the
    note a run prints before it is not printed when the run cannot start."""
    try:
        yield
    except PtoPipeError as e:
        if note:
            e.fix = (f"{e.fix}; or " if e.fix else "") + f"run the file on its own platform: {note}"
            e.args = (e.render(),)
        raise


def _prepare(path, text, func, inputs, platform, data_seed, given) -> PtoLaunch:
    prog = read_program(text, path)
    plat, run_line = (platform, False) if platform else file_platform(prog, text)
    top = choose_top(prog, func)
    tops = top.split("+")
    inputs = dict(inputs or {})
    known = {p[0][1:] for t in tops for p in prog.funcs[t].params}
    refuse_unknown_parameters(inputs, known, given)
    rng = np.random.default_rng(data_seed)
    args, notes, made = param_arrays(prog, tops, inputs, rng, get_platform(plat), given)
    spmd = spmd_note(prog, tops)
    if spmd:
        notes.append(spmd)
    if run_line:
        notes.insert(0, f"platform {plat}: the file's RUN line's --pto-arch (it has no pto.target_arch)")
    warnings = []
    layout = plan_layout(prog, get_platform(plat))
    reach = [n for t in tops for n in reachable(prog, t)]
    pipes = has_pipes(prog, reach)
    lane0, one_lane = lane0_functions(prog, reach, plat)
    nosplit = pipe_nosplit(prog.funcs)     # each pipe's, as ptoas infers it from both ends
    kinds = {}
    for t in tops:
        f = prog.funcs[t]
        if f.kind is not None:
            kinds[t] = {f.kind}
        else:
            callee_kinds = {prog.funcs[c].kind for c in reachable(prog, t) if prog.funcs[c].kind}
            if callee_kinds:                # an entry: each callee runs on its kernels' cores
                kinds[t] = callee_kinds
                continue
            sections = section_kinds(prog, reachable(prog, t))
            if sections:                    # each section runs on its kind of core
                kinds[t] = sections
                continue
            kind, warning = implied_kind(f, prog.funcs, path, prog.types)
            if warning:
                warnings.append(warning)
            kinds[t] = {kind}
            for c in reachable(prog, t):   # its kind-less callees run where it runs
                prog.funcs[c].kind = prog.funcs[c].kind or kind
    check_flag_ids(prog, reach)
    check_pipe_directions(prog, reach)
    mixed = any(MIXED in k for k in kinds.values())
    if mixed and pipes:
        raise ConfigError(f"@{top} uses Cube and Vector tiles and cross-core pipes",
                          where=f"{path}:{prog.funcs[tops[0]].stmt.tok.line}",
                          fix="give each function of a pipe its pto.kernel_kind (cube / vector)")

    run_warnings = []                   # what the runs of these kernels find and go on after
    warned = {}                         # each of them -> when it was found (Executor.warn)

    def kernel_for(core_name):
        def kernel(**kw):
            ex = Executor(prog, core_name, layout, lane0, dict(nosplit))
            ex.warnings, ex.warned = run_warnings, warned
            ex.mixed = mixed
            ex.core = isa.current_core()
            again = ex.core.cluster.again_of
            if again is not None:                   # (a failed run made again: its findings go)
                ex.forget(again)
            ex.core.event_words = PTO_EVENTS        # messages spell the .pto's event ops
            if mixed:
                ex.core.add_memory(MemSpace.UB)
            for t in tops:
                if core_name == "aic" and "cube" not in kinds[t] and MIXED not in kinds[t]:
                    continue
                if core_name != "aic" and "vector" not in kinds[t]:
                    continue
                f = prog.funcs[t]
                try:
                    ex.call(f, [spmd_value(p[0][1:]) if p[0][1:] in SPMD_PARAMS else _own(kw.get(p[0][1:]))
                                for p in f.params])
                except PtoPipeError as e:    # what the run finds, in the file's spelling
                    from ..pto_load import in_pto_words
                    in_pto_words(e)
                    seeded = made.get(getattr(e, "argument", None))
                    if seeded:              # (the notes print after a run, which this one ends)
                        e.add_detail(f"note: {seeded}")
                    raise
        kernel.__name__ = f"{top}@{core_name}"
        return kernel

    all_kinds = set().union(*kinds.values())
    aic = kernel_for("aic") if "cube" in all_kinds or mixed else None
    aiv = None
    if "vector" in all_kinds:
        lanes = 1 if one_lane else 2
        if not pipes:                   # (nothing of the Cube's reaches it: a lone Vector kernel)
            lanes, note = lone_vector_lanes(reads_subblock(prog, reach, tops), "pto.get_subblock_idx",
                                                       "a Vector kernel without cross-core pipes")
            notes.append(note)
        aiv = (kernel_for("aiv0"), kernel_for("aiv1") if lanes == 2 else None)
        if pipes and one_lane:
            notes.append("A5 pipes that move whole tiles (split = 0 / nosplit): the Vector kernel runs "
                         "on AIV0, as ptoas guards them with get_subblockid() == 0")
        elif pipes and lane0:
            guarded = ", ".join("@" + n for n in sorted(lane0))
            notes.append(f"A5 pipes that move whole tiles (split = 0 / nosplit): {guarded} run on AIV0 only, as "
                         "ptoas guards each Vector function that reads no sub-block with get_subblockid() == 0; "
                         "AIV1 runs the others")
    return PtoLaunch(aic, aiv, args, plat, top, notes, prog, warnings + alias_notes(prog), run_warnings)


def run_pto(path: str | None = None, *, text: str | None = None, func: str | None = None,
            inputs: dict | None = None, platform: str | None = None, protocol: str = "spec",
            data_seed: int = 0, **run_kwargs) -> PtoRun:
    """Read a ``.pto`` file (or ``text``) and run it on the simulated cluster.

    ``func`` picks the function to run (default: the ``pto.entry``, else the one function
    nothing calls, else a cube + vector pair); ``inputs`` maps parameter names (without
    ``%``) to numpy arrays / scalars; parameters not given get seeded random data
    (``data_seed``) or 0 for scalars, each listed in the result's ``notes``.  The platform is
    ``platform``, else the module's ``pto.target_arch``, else the arch of its lit ``// RUN:`` line's
    ``--pto-arch`` (ptoas's test files), else A2A3.  Other keywords go to
    :func:`ptopipe.run` (``schedule_seed``, ``timeout``, ``checks``, ...).  Errors are
    :class:`~ptopipe.PtoPipeError` subclasses at the file's line:col."""
    pl = prepare(path, text=text, func=func, inputs=inputs, platform=platform, data_seed=data_seed)
    with noted(pl.platform_note):
        res = isa.run(aic=pl.aic, aiv=pl.aiv, args=pl.args, platform=pl.platform, protocol=protocol,
                      **run_kwargs)
    outputs = res.outputs
    for k, a in list(outputs.items()):
        if k in (inputs or {}) and isinstance(inputs[k], np.ndarray):
            outputs[k] = a.reshape(np.asarray(inputs[k]).shape)
    # the run's reads of tile bytes nothing wrote (isa.unwritten), as "file:line:col: what" too
    unwritten = [f"{loc}: {what}" for what, loc in res.summary.leaks if UNWRITTEN in what]
    return PtoRun(res, pl.func, ([pl.platform_note] if pl.platform_note else []) + pl.notes, res.prints,
                  pl.warnings + list(dict.fromkeys(pl.run_warnings + unwritten)))
