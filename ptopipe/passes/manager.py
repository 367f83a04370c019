"""The PassManager: runs passes over a ``pl.program`` op (the op/region IR).

A pass is a module (or any object) with ``NAME``, ``REQUIRES`` / ``PRODUCES`` (property
names) and ``run(program, ctx) -> program``.  Passes are registered by NAME
(:func:`register`); a pipeline is a list of names, or the text
``"resolve-peers,allocate-flags,lower-platform,validate"``.

* requirements: a pass whose requirement no earlier pass produced (nor the input has,
  ``PassManager(available=...)``) is a CompileError naming the pass, the property and the
  passes that produce it - raised when the pipeline is built, before anything runs;
* verification: the input and the result of every pass go through ``verify_ops``; a
  failure after a pass names the pass that broke the IR;
* ``print_after_all``: the IR after each pass under an MLIR-style header;
* ``round_trip``: after each pass the IR is printed, parsed back and compared
  (structural equality up to renaming) - the tests run every pipeline this way.

:func:`compile_program` is the one entry point of ``ptopipe compile`` and of run/check
for files with mixed ``@pl.incore`` functions: tree Program in, tree Program out.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field

from ..errors import CompileError
from ..ir import first_difference, parse_ir, print_ir, structural_equal, to_ops, to_tree, verify_ops
from ..ir.core import gc_paused

#: the pipeline of issue 11, in order; :data:`DEFAULT_PIPELINE` keeps the registered ones
#: the passes that turn mixed functions into AIC / AIV kernels, before any platform lowering
FRONT_END = ("expand-mixed", "insert-tfree", "skew-push-ahead", "pipeline-cross-core-loops")

CANONICAL_ORDER = ("expand-mixed", "insert-tfree", "skew-push-ahead", "pipeline-cross-core-loops",
                   "verify-pipes", "allocate-memory",
                   "resolve-peers", "allocate-flags", "lower-platform", "validate")


@dataclass(frozen=True)
class PassInfo:
    """A registered pass."""
    name: str
    run: object
    requires: tuple = ()
    produces: tuple = ()
    doc: str = ""


#: the passes a pipeline may name: filled when :mod:`ptopipe.passes` is imported (its
#: passes) and by explicit :func:`register` calls (a plug-in pass), never by running one
REGISTRY: dict = {}


def register(p) -> PassInfo:
    """Register a pass module / object (``NAME``, ``REQUIRES``, ``PRODUCES``, ``run``) or a
    :class:`PassInfo`; a later registration of the same NAME replaces the earlier one."""
    info = pass_info(p)
    REGISTRY[info.name] = info
    return info


def pass_info(p) -> PassInfo:
    """The :class:`PassInfo` of a pass module / object, or ``p`` itself (not registered)."""
    if not isinstance(p, PassInfo) and not (isinstance(getattr(p, "NAME", None), str)
                                            and callable(getattr(p, "run", None))):
        raise CompileError(f"{p!r} is not a pass", where="pipeline",
                           fix="a pass has NAME (a string), REQUIRES, PRODUCES and "
                               "run(program, ctx) -> program")
    info = p if isinstance(p, PassInfo) else PassInfo(
        p.NAME, p.run, tuple(getattr(p, "REQUIRES", ())), tuple(getattr(p, "PRODUCES", ())),
        (getattr(p, "__doc__", "") or "").strip().split("\n")[0])
    return info


def default_pipeline() -> tuple:
    """The registered passes of :data:`CANONICAL_ORDER`, in that order."""
    return tuple(n for n in CANONICAL_ORDER if n in REGISTRY)


@dataclass
class PassContext:
    """What a pass sees besides the program: the target ``platform`` (a Platform or its
    name), the ``protocol`` whose flag numbering AllocateFlags follows, and ``warnings``
    (messages a pass appends); ``scalars``: values of scalar kernel parameters the static
    checks may assume (a run's arguments; VerifyPipes then counts loops of those trip counts)."""
    platform: object = "a2a3"
    protocol: str = "spec"
    warnings: list = field(default_factory=list)
    scalars: dict = field(default_factory=dict)


def _lookup(name: str) -> PassInfo:
    info = REGISTRY.get(name)
    if info is None:
        known = ", ".join(sorted(REGISTRY)) or "(none)"
        raise CompileError(f"unknown pass {name!r}", where="pipeline",
                           fix=f"use one of the registered passes: {known}")
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
                 round_trip: bool = False, available=(), stream=None):
        if passes is None:
            passes = list(default_pipeline())
        elif isinstance(passes, str):
            passes = parse_pipeline(passes)
        self.passes = [p if isinstance(p, PassInfo) else _lookup(p) if isinstance(p, str)
                       else pass_info(p) for p in passes]
        self.verify = verify
        self.print_after_all = print_after_all
        self.round_trip = round_trip
        self.stream = stream
        self._check_requirements(set(available))

    def _check_requirements(self, have: set) -> None:
        for i, p in enumerate(self.passes):
            for req in p.requires:
                if req not in have:
                    later = [q.name for q in self.passes[i + 1:] if req in q.produces]
                    makers = [q.name for q in REGISTRY.values() if req in q.produces]
                    if later:
                        fix = f"run {later[0]!r} before {p.name!r}"
                    elif makers:
                        fix = f"add {' or '.join(map(repr, makers))} before {p.name!r}"
                    else:
                        fix = "no registered pass produces it"
                    raise CompileError(f"pass {p.name!r} requires {req!r}, which no earlier pass "
                                       "of the pipeline produces", where="pipeline", fix=fix)
            have.update(p.produces)

    @property
    def names(self) -> list:
        return [p.name for p in self.passes]

    def run(self, program, ctx: PassContext | None = None):
        """Run the pipeline on ``program`` (a ``pl.program`` op); returns the result."""
        ctx = ctx or PassContext()
        if self.verify:
            try:
                verify_ops(program)
            except CompileError as e:
                e.what = f"the input program does not verify: {e.what}"
                raise _rerender(e)
        for p in self.passes:
            with gc_paused():
                out = p.run(program, ctx)
            if out is None or getattr(out, "name", None) != "pl.program":
                raise CompileError(f"pass {p.name!r} returned {out!r}, not a pl.program op",
                                   where="pipeline")
            program = out
            if self.verify:
                try:
                    verify_ops(program)
                except CompileError as e:
                    e.what = f"the IR after pass {p.name!r} does not verify: {e.what}"
                    e.fix = e.fix or f"this is a bug of pass {p.name!r}"
                    raise _rerender(e)
            if self.print_after_all:
                out_stream = self.stream or sys.stdout
                print(f"// -----// IR Dump After {p.name} //----- //", file=out_stream)
                print(print_ir(program), file=out_stream)
            if self.round_trip:
                _round_trip(program, p.name)
        return program


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
                    print_after_all: bool = False, stream=None, warnings: list | None = None):
    """A tree-IR Program through the pipeline (``passes``: names, text or None for the
    default); returns ``(op program, tree Program, warnings)``."""
    pm = PassManager(passes, print_after_all=print_after_all, stream=stream)
    ctx = PassContext(platform=platform, protocol=protocol,
                      warnings=warnings if warnings is not None else [])
    op = pm.run(to_ops(program), ctx)
    return op, to_tree(op), ctx.warnings
