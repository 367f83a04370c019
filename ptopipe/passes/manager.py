"""The PassManager: runs passes over a ``pl.program`` op (the op/region IR).

A pass is a module (or any object) with ``NAME``, the typed property sets ``REQUIRED`` /
``PRODUCED`` / ``INVALIDATED`` (frozensets of :class:`~.properties.IRProperty`) and
``run(program, ctx) -> program``.  Passes are registered by NAME (:func:`register`); a
pipeline is a list of names, or the text ``"resolve-peers,allocate-flags,lower-platform,validate"``.

* requirements: the manager follows the properties the IR has through the pipeline (a pass
  adds what it produces and removes what it invalidates); a pass that needs one the IR no
  longer or not yet has is a CompileError naming the pass, the property and the passes that
  produce it (every other unmet requirement in its details) - raised when the pipeline is
  built, before anything runs.  The properties an input may have by itself
  (:data:`~.properties.INPUT_PROPERTIES`: a hand-written AIC / AIV pair is already split) are
  assumed then and checked on the input when it is run, again before any pass runs;
  ``PassManager(available=...)`` declares more;
* verification: the input and the pipeline's result go through ``verify_ops``, and with
  ``verify_properties`` the result of every pass too; a result that does not verify runs
  the pipeline again from a copy of the input, verifying after each pass, so that the
  failure names the pass that broke the IR.  ``verify_properties`` (``ptopipe
  compile --verify-each``; by default when the environment sets :data:`VERIFY_EACH_ENV` to 1,
  as the test suite does) also checks,
  after every pass, each property the IR should have with its verifier
  (:mod:`.properties`): one the pass claims and its output lacks, or one it breaks
  without declaring it invalidated, is a CompileError naming the pass and the property
  (a whole-program proof, :data:`~.properties.AT_THE_END`, is checked once where the
  pipeline ends; only when it fails there is the pipeline run again from a copy of its
  input to name the pass);
* ``print_after_all``: the IR after each pass under an MLIR-style header;
* ``round_trip``: after each pass the IR is printed, parsed back and compared
  (structural equality up to renaming) - the tests run every pipeline this way.

:func:`compile_program` is the one entry point of ``ptopipe compile`` and of run/check
for files with mixed ``@pl.incore`` functions: a ``pl.program`` op in, a compiled copy out.
"""
from __future__ import annotations

import difflib
import os
import sys
from dataclasses import dataclass, field

from ..errors import CompileError, PtoPipeError
from ..ir import first_difference, parse_ir, print_ir, structural_equal, verify_ops
from ..ir.core import gc_paused
from ..ir.opdefs import ProgramOp
from .properties import AT_THE_END, INPUT_PROPERTIES, IRProperty, as_property, verify_property
from .remarks import Remarks

#: the passes that turn mixed functions into AIC / AIV kernels, before any platform lowering
FRONT_END = ("expand-mixed", "insert-tfree", "skew-push-ahead", "pipeline-cross-core-loops")

#: the order of the default pipeline; :func:`default_pipeline` keeps the registered ones
CANONICAL_ORDER = ("expand-mixed", "insert-tfree", "skew-push-ahead", "pipeline-cross-core-loops",
                   "verify-pipes", "allocate-memory",
                   "resolve-peers", "allocate-flags", "lower-platform", "validate")

#: the environment variable whose value 1 makes ``PassManager(verify_properties=None)`` check
#: every property after every pass: the test suite sets it, so every pipeline a test runs (in
#: its process or a ``ptopipe`` it starts) is checked
VERIFY_EACH_ENV = "PTOPIPE_VERIFY_EACH"


def _typed(name: str, what: str, props) -> frozenset:
    """``props`` as a frozenset of IRProperty; anything else is a CompileError (a property
    spelled as a string would be checked against nothing)."""
    if isinstance(props, (str, bytes)) or not hasattr(props, "__iter__"):
        props = (props,)
    props = frozenset(props)
    bad = [p for p in props if not isinstance(p, IRProperty)]
    if bad:
        raise CompileError(f"pass {name!r} declares {what} {', '.join(map(repr, bad))}, which "
                           f"{'is not an IRProperty member' if len(bad) == 1 else 'are not IRProperty members'}", where="pipeline",
                           fix="declare REQUIRED / PRODUCED / INVALIDATED as frozensets of "
                               "ptopipe.passes.properties.IRProperty: "
                               + ", ".join(f"IRProperty.{p.name}" for p in IRProperty))
    return props


def _order(prop: IRProperty) -> tuple:
    """Properties in the order the default pipeline makes them (then by name): the first
    unmet requirement reported is the one whose pass goes first."""
    makers = [CANONICAL_ORDER.index(q.name) for q in REGISTRY.values()
              if prop in q.produced and q.name in CANONICAL_ORDER]
    return (min(makers, default=len(CANONICAL_ORDER)), prop.value)


@dataclass(frozen=True)
class PassInfo:
    """A registered pass: its name, its run function and the typed property sets it
    requires, produces and invalidates."""
    name: str
    run: object
    required: frozenset = frozenset()
    produced: frozenset = frozenset()
    invalidated: frozenset = frozenset()
    doc: str = ""

    def __post_init__(self):
        for what in ("required", "produced", "invalidated"):
            object.__setattr__(self, what, _typed(self.name, what, getattr(self, what)))


#: the passes a pipeline may name: filled when :mod:`ptopipe.passes` is imported (its
#: passes) and by explicit :func:`register` calls (a plug-in pass), never by running one
REGISTRY: dict = {}


def register(p) -> PassInfo:
    """Register a pass module / object (``NAME``, ``REQUIRED``, ``PRODUCED``,
    ``INVALIDATED``, ``run``) or a :class:`PassInfo`; a later registration of the same NAME
    replaces the earlier one."""
    info = pass_info(p)
    REGISTRY[info.name] = info
    return info


def pass_info(p) -> PassInfo:
    """The :class:`PassInfo` of a pass module / object, or ``p`` itself (not registered)."""
    if not isinstance(p, PassInfo) and not (isinstance(getattr(p, "NAME", None), str)
                                            and callable(getattr(p, "run", None))):
        raise CompileError(f"{p!r} is not a pass", where="pipeline",
                           fix="a pass has NAME (a string), REQUIRED, PRODUCED, INVALIDATED "
                               "(frozensets of IRProperty) and run(program, ctx) -> program")
    if not isinstance(p, PassInfo):
        untyped = [a for a in ("REQUIRES", "PRODUCES") if hasattr(p, a)]
        if untyped:
            raise CompileError(f"pass {p.NAME!r} declares {' / '.join(untyped)}, which nothing reads",
                               where="pipeline", fix="declare REQUIRED / PRODUCED / INVALIDATED as "
                                                     "frozensets of IRProperty")
    info = p if isinstance(p, PassInfo) else PassInfo(
        p.NAME, p.run, getattr(p, "REQUIRED", frozenset()), getattr(p, "PRODUCED", frozenset()),
        getattr(p, "INVALIDATED", frozenset()), (getattr(p, "__doc__", "") or "").strip().split("\n")[0])
    return info


def default_pipeline() -> tuple:
    """The registered passes of :data:`CANONICAL_ORDER`, in that order."""
    return tuple(n for n in CANONICAL_ORDER if n in REGISTRY)


@dataclass
class PassContext:
    """What a pass sees besides the program: the target ``platform`` (a Platform or its
    name), the ``protocol`` whose flag numbering AllocateFlags follows, and ``warnings``
    (messages a pass appends); ``scalars``: values of scalar kernel parameters the static
    checks may assume (a run's arguments; VerifyPipes then counts loops of those trip counts);
    ``ranges``: declared ranges (name -> (lo, hi), inclusive) of the others, within which
    VerifyPipes proves them (else for every value >= 0); ``remarks``: what each pass did and
    did not do, and why (:mod:`.remarks`); ``as_ptoas``: the program is a ``.pto`` file,
    judged by what ptoas and the device do with it rather than by the rules seed 003 sets
    for the compiler's own output (a reserve larger than its ring is then no error);
    ``placed``: the reserve_buffers whose ``base=pl.AUTO`` AllocateMemoryAddr resolved (after
    the function's tiles), so that Validate tells one that then overruns its memory to shrink,
    not to move; ``sizing``: the compile only sizes the kernels' parameters (the GM slot
    buffer, :mod:`.slot_buffer`, the same on every platform), so a platform's refusal of a
    transfer (:mod:`.tile_boxes`) waits for the compile for that platform; ``gm_rings_given``:
    ``(init op, ring bytes, its warning)`` of each pipe init LowerPlatform gave a GM slot buffer
    it names none of (what a run of a ``.pto`` file where every ring is in GM refuses)."""
    platform: object = "a2a3"
    protocol: str = "spec"
    warnings: list = field(default_factory=list)
    scalars: dict = field(default_factory=dict)
    ranges: dict = field(default_factory=dict)
    remarks: Remarks = field(default_factory=Remarks)
    as_ptoas: bool = False
    placed: set = field(default_factory=set)
    sizing: bool = False
    gm_rings_given: list = field(default_factory=list)


def unverified_pipeline(passes=None) -> tuple:
    """The pass names of pipeline ``passes`` (names, ``"a,b"`` text, or None for the default)
    without VerifyPipes' static proof: what ``ptopipe compile --no-verify`` runs, to write out
    a kernel that proof refuses - its misuse is then reported when the output runs, at the
    line it is on."""
    from .verify_pipes import NAME as VERIFY_PIPES
    if passes is None:
        names = list(default_pipeline())
    elif isinstance(passes, str):
        names = [p.name for p in parse_pipeline(passes)]
    else:
        names = [p if isinstance(p, str) else pass_info(p).name for p in passes]
    return tuple(n for n in names if n != VERIFY_PIPES)


def _lookup(name: str) -> PassInfo:
    info = REGISTRY.get(name)
    if info is None:
        known = ", ".join(sorted(REGISTRY)) or "(none)"
        near = difflib.get_close_matches(name, list(REGISTRY), n=1, cutoff=0.6)
        raise CompileError(f"unknown pass {name!r}", where="pipeline",
                           fix=f"did you mean {near[0]!r}? (the registered passes: {known})" if near else
                               f"use one of the registered passes: {known}")
    return info


def parse_pipeline(text: str) -> list:
    """``"a,b,c"`` -> the PassInfos of a, b, c (unknown or empty names are errors)."""
    names = [n.strip() for n in text.split(",")]
    if any(not n for n in names):
        raise CompileError(f"empty pass name in pipeline {text!r}", where="pipeline",
                           fix="separate pass names with single commas, e.g. "
                               "'resolve-peers,allocate-flags'")
    return [_lookup(n) for n in names]


class PassManager:
    """Runs a pipeline of registered passes, verifying the IR after each."""

    def __init__(self, passes=None, *, verify: bool = True, print_after_all: bool = False,
                 round_trip: bool = False, available=(), stream=None,
                 verify_properties: bool | None = None):
        if passes is None:
            passes = list(default_pipeline())
        elif isinstance(passes, str):
            passes = parse_pipeline(passes)
        self.passes = [p if isinstance(p, PassInfo) else _lookup(p) if isinstance(p, str)
                       else pass_info(p) for p in passes]
        self.verify = verify
        self.verify_properties = (os.environ.get(VERIFY_EACH_ENV) == "1" if verify_properties is None
                                  else verify_properties)
        self.print_after_all = print_after_all
        self.round_trip = round_trip
        self.stream = stream
        self.available = frozenset(as_property(x) for x in available)
        #: what the IR has after the whole pipeline (the input's properties included)
        self.provides = self._check_requirements(self.available | INPUT_PROPERTIES)

    def _check_requirements(self, have, lacking: dict | None = None) -> frozenset:
        """Follow the properties through the pipeline from ``have``; raise on the first pass
        whose requirement is unmet (the others in the details); return the final set.
        ``lacking``: property -> why the input does not have it."""
        have, broken, unmet = set(have), {}, []
        for i, p in enumerate(self.passes):
            for req in sorted(p.required - have, key=_order):
                unmet.append((p.name, req) + self._unmet(i, p, req, broken, lacking or {}))
            for x in p.invalidated & have:
                broken[x] = p.name
            have -= p.invalidated
            have |= p.produced
            for x in p.produced:
                broken.pop(x, None)
        if unmet:
            what, fix = unmet[0][2:]
            rest = [f"also: pass {n!r} requires {r.value!r} ({f})" for n, r, _w, f in unmet[1:]]
            raise CompileError(what, where="pipeline", fix=fix, details="; ".join(rest) or None)
        return frozenset(have)

    def _unmet(self, i: int, p: PassInfo, req: IRProperty, broken: dict, lacking: dict) -> tuple:
        """(what, fix) of pass ``p`` (at ``i``) missing ``req``."""
        later = [q.name for q in self.passes[i + 1:] if req in q.produced]
        makers = [q.name for q in REGISTRY.values() if req in q.produced]
        if req in broken:
            what = (f"pass {p.name!r} requires {req.value!r}, which pass {broken[req]!r} before it "
                    "invalidates")
            fix = (f"run {' or '.join(map(repr, makers))} again after {broken[req]!r}" if makers
                   else f"run {broken[req]!r} after {p.name!r}")
            return what, fix
        if req in lacking:
            what = (f"pass {p.name!r} requires {req.value!r}, which the input program does not have "
                    f"({lacking[req]}) and no earlier pass of the pipeline produces")
        else:
            what = f"pass {p.name!r} requires {req.value!r}, which no earlier pass of the pipeline produces"
        if later:
            fix = f"run {later[0]!r} before {p.name!r}"
        elif makers:
            fix = f"add {' or '.join(map(repr, makers))} before {p.name!r}"
        else:
            fix = "no registered pass produces it"
        return what, fix

    @property
    def names(self) -> list:
        return [p.name for p in self.passes]

    def _input_properties(self, program, ctx) -> tuple:
        """(the properties ``program`` has before any pass runs, property -> why it lacks one
        of :data:`INPUT_PROPERTIES`)."""
        have, lacking = set(self.available), {}
        for prop in sorted(INPUT_PROPERTIES - self.available, key=_order):
            problems = verify_property(prop, program, ctx)
            if problems:
                lacking[prop] = problems[0]
            else:
                have.add(prop)
        return frozenset(have), lacking

    def run(self, program, ctx: PassContext | None = None):
        """Run the pipeline on ``program`` (a ``pl.program`` op); returns the result."""
        ctx = ctx or PassContext()
        if self.verify:
            try:
                verify_ops(program)
            except CompileError as e:
                e.what = f"the input program does not verify: {e.what}"
                raise _rerender(e)
        have, lacking = self._input_properties(program, ctx)
        if lacking:
            self._check_requirements(have, lacking)
        if self.verify_properties:
            for prop in sorted(self.available, key=_order):
                problems = verify_property(prop, program, ctx)
                if problems:
                    raise CompileError(f"the input program does not have {prop.value!r}, which the "
                                       f"pipeline is told it has (available=): {problems[0]}",
                                       where="pipeline", fix=f"run the pass that produces {prop.value!r} "
                                                             "or do not declare it available",
                                       details="; ".join(problems[1:]) or None)
        start, each = have, self.verify_properties
        first = program.clone() if self.verify or each else None
        try:
            program, have = self._run_passes(program, ctx, have, self.verify and each, AT_THE_END if each else None)
        except Exception as e:
            if self.verify and not each and not isinstance(e, PtoPipeError):
                # a pass crashing on IR an earlier pass broke: that pass is named instead
                self._run_passes(first, ctx, start, True, None, again=True)
            raise
        if self.verify and not each:
            try:
                verify_ops(program)
            except CompileError as e:
                # the same pipeline again, verifying after each pass: raises at the pass at fault
                self._run_passes(first, ctx, start, True, None, again=True)
                e.what = f"the compiled program does not verify: {e.what}"
                raise _rerender(e)
        if each:
            for prop in sorted(have & AT_THE_END, key=_order):
                problems = verify_property(prop, program, ctx)
                if problems:
                    self._run_passes(first, ctx, start, self.verify, frozenset(), again=True)
                    raise CompileError(f"the pipeline's output lacks {prop.value!r}: {problems[0]}",
                                       where="pipeline", fix="a pass of the pipeline is not deterministic",
                                       details="; ".join(problems[1:]) or None)
        return program

    def _run_passes(self, program, ctx, have, verify_each: bool, unchecked: frozenset | None,
                    again: bool = False) -> tuple:
        """(the result of the passes on ``program``, the properties it has then).
        ``verify_each``: ``verify_ops`` after each pass; ``unchecked``: the properties not
        verified after each pass (None: none is); ``again``: a second run, which prints nothing."""
        for p in self.passes:
            with gc_paused():
                out = p.run(program, ctx)
            if not isinstance(out, ProgramOp):
                raise CompileError(f"pass {p.name!r} returned {out!r}, not a pl.program op",
                                   where="pipeline")
            program = out
            if verify_each:
                try:
                    verify_ops(program)
                except CompileError as e:
                    e.what = f"the IR after pass {p.name!r} does not verify: {e.what}"
                    e.fix = e.fix or f"this is a bug of pass {p.name!r}"
                    raise _rerender(e)
            have = (have - p.invalidated) | p.produced
            if unchecked is not None:
                _verify_properties(p, have - unchecked, program, ctx)
            if self.print_after_all and not again:
                out_stream = self.stream or sys.stdout
                print(f"// -----// IR Dump After {p.name} //----- //", file=out_stream)
                print(print_ir(program), file=out_stream)
            if self.round_trip and not again:
                _round_trip(program, p.name)
        return program, have


def _verify_properties(p: PassInfo, have, program, ctx) -> None:
    """Each property the IR should have after pass ``p``, checked by its verifier: one ``p``
    claims (produces) or keeps (had before it and does not invalidate)."""
    for prop in sorted(have, key=_order):
        problems = verify_property(prop, program, ctx)
        if not problems:
            continue
        if prop in p.produced:
            what = f"pass {p.name!r} claims {prop.value!r}, but its output lacks it: {problems[0]}"
            fix = f"this is a bug of pass {p.name!r}: make its output have {prop.value!r} or drop it from PRODUCED"
        else:
            what = (f"pass {p.name!r} breaks {prop.value!r}, which it does not declare invalidated: "
                    f"{problems[0]}")
            fix = f"this is a bug of pass {p.name!r}: keep {prop.value!r} or add it to INVALIDATED"
        raise CompileError(what, where="pipeline", fix=fix,
                           details="; ".join(problems[1:]) or None)


def _rerender(e: CompileError) -> CompileError:
    e.args = (e.render(),)
    return e


def _round_trip(program, after: str) -> None:
    text = print_ir(program)
    back = parse_ir(text, f"<IR after {after}>")
    if not structural_equal(program, back):
        raise CompileError(f"the IR after pass {after!r} does not survive print -> parse: "
                           f"{first_difference(program, back)}", where="pipeline",
                           fix=f"the printer/parser or pass {after!r} keeps something the text "
                               "form cannot spell")


def compile_program(program, platform="a2a3", passes=None, *, protocol: str = "spec",
                    print_after_all: bool = False, stream=None, warnings: list | None = None,
                    verify_properties: bool | None = None, remarks: Remarks | None = None,
                    sizing: bool = False):
    """A program (a ``pl.program`` op, left as it is: a copy is compiled - the same source is
    compiled for several platforms and protocols) through the pipeline (``passes``: names, text or None for the default;
    ``verify_properties``: check every property after every pass, see
    :class:`PassManager`); returns the compiled ``pl.program`` op.  The passes' warnings
    are appended to ``warnings`` and their remarks added to ``remarks`` when given; ``sizing``:
    see :class:`PassContext`."""
    pm = PassManager(passes, print_after_all=print_after_all, stream=stream,
                     verify_properties=verify_properties)
    ctx = PassContext(platform=platform, protocol=protocol,
                      warnings=warnings if warnings is not None else [],
                      remarks=remarks if remarks is not None else Remarks(), sizing=sizing)
    return pm.run(program.clone(), ctx)
