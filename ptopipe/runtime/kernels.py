"""Kernel callables for ``ptopipe.run(aic=..., aiv=...)`` and :class:`ptopipe.Scenario`
from a program (a ``pl.program`` op; or a
builder ``build(**params) -> program`` specialised per run by the run's arguments), so DSL
kernels run exactly like hand-written ones.

A program holding mixed ``@pl.incore`` functions is compiled first, for the platform and
protocol of the run, by the compiler the kernel set was given (``compiler=``; default
:func:`default_compiler`, the pass pipeline of :mod:`ptopipe.passes`).  The interpreter runs
the ops of the program at the addresses AllocateMemoryAddr wrote on them; a program no pass
has allocated (a hand-written AIC / AIV pair) is allocated the same way when it first runs."""
from __future__ import annotations

import inspect

from ..errors import ConfigError, PtoPipeError
from ..ir.core import Operation
from ..ir.vocab import FunctionKind
from ..isa import current_core
from ..isa.launch import lone_vector_lanes, run as isa_run
from .interp import Interpreter
from ..ir.layout import allocate_program
from ..ir.opdefs import INITIALIZE_PIPE, FuncOp, GetSubblockIdOp, ProgramOp
from ..ir.pipe_config import pipe_config_mismatches


def is_program(x) -> bool:
    """Is ``x`` a program: a ``pl.program`` op (what ``pl.program(...)`` returns)?"""
    return isinstance(x, Operation) and x.is_a(ProgramOp)


def _functions(program) -> list:
    return [f for f in program.body if f.is_a(FuncOp)]


def has_mixed(program) -> bool:
    """Does ``program`` hold a mixed ``@pl.incore`` function (one the compiler splits)?"""
    return any(f.kind is FunctionKind.InCore for f in _functions(program))


def default_compiler(program, platform, protocol="spec") -> Operation:
    """``program`` through the pass pipeline (:func:`ptopipe.passes.compile_program`) for
    ``platform`` and ``protocol`` (the name of a ``ptopipe.run(protocol=...)``: a
    TILE_NO_SPLIT pipe has one lane on A5): its ``pl.program`` op."""
    from ..passes import compile_program       # imported when a mixed program first runs
    return compile_program(program, platform, protocol=protocol)


class _Compiled:
    """A program's ops with their memory plan, ready to interpret; ``program`` is the
    program as the compiler gave it (or as written)."""

    def __init__(self, program, compiled_from_mixed: bool = False):
        self.program = program
        self.ops = ops = program
        self.name = ops.sym_name
        self.layouts = allocate_program(ops)
        self.compiled_from_mixed = compiled_from_mixed
        self._pipes_checked = set()

    def check_run(self, cluster) -> None:
        """Before a kernel of this program runs on ``cluster``.  A program compiled from a
        mixed function orders its cores' pipes through the scoreboard (the compiler inserts
        no set_flag / wait_flag), so the manual synchronisation mode would report races the
        kernel as written does not have: a ConfigError.  Hand-written kernels: both ends of
        each pipe declare the same configuration (:mod:`ptopipe.ir.pipe_config`), a
        ConfigError at the init that differs (the binding would blame a symptom: a reserve
        size, a slot overrun)."""
        if self.compiled_from_mixed:
            if cluster.manual_sync:
                fn = _functions(self.ops)[0]
                raise ConfigError(f"program '{self.name}' was compiled from a mixed "
                                  "@pl.incore function, which gets no set_flag / wait_flag events: "
                                  "it cannot run in the manual synchronisation mode",
                                  where=str(fn.loc),
                                  fix="run it with --sync auto (the default), or hand-write the "
                                      "AIC / AIV pair with its own events")
            return
        platform = cluster.platform
        if platform.name in self._pipes_checked:
            return
        self._pipes_checked.add(platform.name)
        for m in pipe_config_mismatches(self.ops, platform):
            raise ConfigError(m.what, where=str(m.culprit.init.loc), details=m.details, fix=m.fix)

    def aiv0_only(self) -> bool:
        """Does the program's Vector kernel run on AIV0 alone: a hand-written ``@pl.aiv``
        kernel with no Cube kernel beside it that does not read ``pl.get_subblockid()`` (a
        Vector-only launch, :func:`~ptopipe.isa.launch.lone_vector_lanes`, as its ``.pto``
        and C++ run)?  A compiled mixed function's Vector kernel is split between the cores
        or replays empty on lane 1 (TILE_NO_SPLIT): both run it."""
        funcs = _functions(self.ops)
        if self.compiled_from_mixed or any(f.kind is FunctionKind.AIC for f in funcs):
            return False
        aiv = [f for f in funcs if f.kind is FunctionKind.AIV]
        reads = any(o.is_a(GetSubblockIdOp) for f in aiv for o in f.walk())
        return lone_vector_lanes(reads, "pl.get_subblockid()")[0] == 1

    def function(self, kind: FunctionKind):
        """The one ``pl.func`` op of ``kind`` (None when a compiled mixed function needed
        only the other core: a pure-Cube or pure-Vector kernel)."""
        funcs = _functions(self.ops)
        fns = [f for f in funcs if f.kind is kind]
        if not fns and self.compiled_from_mixed and funcs:
            return None
        cores = {f.kind for f in funcs}
        if funcs and not self.compiled_from_mixed and cores & _CORES != _CORES:
            _lone_kernel(self.name, funcs)
            if not fns:                 # a lone kernel with no pipe: the other core idles
                return None
        if len(fns) != 1:
            raise ConfigError(f"program {self.name!r} has {len(fns)} {kind.value.upper()} "
                              "functions; the runtime runs exactly one per core",
                              fix="put one @pl.aic and one @pl.aiv kernel in the program")
        return fns[0]


_CORES = {FunctionKind.AIC, FunctionKind.AIV}


def _lone_kernel(name: str, funcs: list) -> None:
    """A program of one core's kernels runs alone unless a kernel initialises a pipe: its
    peer is not there to push to or pop from it (the compiler accepts such a program, as
    pypto's does; running it is what needs the peer)."""
    for f in funcs:
        init = next((o for o in f.walk() if o.is_a(*INITIALIZE_PIPE)), None)
        if init is not None:
            me, peer, deco = (("Cube", "Vector", "aiv") if f.kind is FunctionKind.AIC
                              else ("Vector", "Cube", "aic"))
            raise ConfigError(f"{me} kernel {f.sym_name!r} of program {name!r} initialises a pipe, "
                              f"but the program has no {peer} kernel to be its peer: a lone "
                              "kernel compiles, it runs only with its peer",
                              where=str(init.loc),
                              fix=f"put the @pl.{deco} kernel at the "
                                  "other end of the pipe in the program (pl.program(cube, vector))")


def _one_block(fn, blocks: int) -> None:
    """A ``pl`` kernel reads no block index (``pl`` has no ``get_block_idx``; a mixed function's
    GM slot buffer is one ring): run on several blocks, each would do block 0's work on the
    same GM, which the race checker reports with a fix the kernel cannot follow - say why."""
    if blocks > 1:
        raise ConfigError(f"pl kernel {fn.sym_name!r} runs on {blocks} blocks, but a pl kernel reads no "
                          "block index (pl has no get_block_idx): every block would do the same work on "
                          "the same GM, its rings' GM slot buffers included", where=str(fn.loc),
                          fix="run it on one block (--blocks 1, blocks=1); to split the work between "
                              "blocks write the kernel in Python (get_block_idx()), C++ or PTO-AS "
                              "(pto.get_block_idx)")


class KernelSet:
    """``.aic`` and ``.aiv`` callables running a program's AIC / AIV function.

    ``source`` is a ``pl.program`` op, or a builder function whose parameters are taken from the
    run's arguments (e.g. ``build(M, split)``); each distinct parameter set is built
    (and verified) once.  ``compiler(program, platform, protocol) -> program`` compiles a
    program with mixed functions, once per platform and protocol (default
    :func:`default_compiler`)."""

    def __init__(self, source, compiler=None):
        # ``compiler(program, platform, protocol) -> program``: splits mixed functions
        self._compiler = compiler if compiler is not None else default_compiler
        self._cache = {}
        self._built = {}            # parameter values -> the builder's program, as written
        if is_program(source):
            self._static = None if has_mixed(source) else _Compiled(source)
            self._source = source
            self._params = ()
        elif callable(source):
            self._static = self._source = None
            self._builder = source
            self._params = tuple(inspect.signature(source).parameters)
        else:
            raise ConfigError(f"kernels() takes a pl.program op or a builder function, got {source!r}",
                              fix="pass pl.program(cube, vector), or a function of the run's parameters "
                                  "returning one")
        self.aic = self._callable(FunctionKind.AIC)
        self.aiv = self._callable(FunctionKind.AIV)

    def compiled(self, args: dict, platform=None, protocol=None) -> _Compiled:
        """The program of a run with ``args`` (mixed functions compiled for ``platform`` and
        ``protocol``, default the running cluster's; outside a run, spec)."""
        if self._static is not None:
            return self._static
        if self._source is not None:          # a program with mixed functions
            return self._mixed(self._source, (), platform, protocol)
        missing = [p for p in self._params if p not in args]
        if missing:
            raise ConfigError(f"the kernel builder {self._builder.__name__} needs "
                              f"{', '.join(map(repr, missing))} in the run's args",
                              fix="add them to args (make_args)")
        key = tuple(args[p] for p in self._params)
        c = self._cache.get(key)
        if c is None:
            prog = self.source(**args)        # built once per parameter set
            if not is_program(prog):
                raise ConfigError(f"{self._builder.__name__} must return pl.program(...), got "
                                  f"{type(prog).__name__}",
                                  fix=f"end {self._builder.__name__} with `return pl.program(<its @pl kernels>)`")
            if has_mixed(prog):
                return self._mixed(prog, key, platform, protocol)
            c = self._cache[key] = _Compiled(prog)
        return c

    def _mixed(self, prog, key: tuple, platform, protocol) -> _Compiled:
        if platform is None:
            cluster = current_core().cluster
            platform = cluster.platform
            if protocol is None:
                protocol = cluster.context.protocol
        protocol = getattr(protocol, "value", protocol) or "spec"
        name = getattr(platform, "name", platform)
        c = self._cache.get((name, protocol, key))
        if c is None:
            c = self._cache[(name, protocol, key)] = _Compiled(self._compiler(prog, platform, protocol), True)
        return c

    def program(self, platform="a2a3", protocol="spec", **args) -> Operation:
        """The ``pl.program`` op a run with ``args`` on ``platform`` under ``protocol``
        executes (mixed functions compiled, tile addresses allocated)."""
        return self.compiled(args, platform, protocol).ops

    @property
    def params(self) -> tuple:
        """The run arguments a builder source takes (empty for a program)."""
        return self._params

    def source(self, **args):
        """The program as written (before any compilation) for a run with ``args`` (built
        once per parameter set)."""
        if self._source is not None:
            return self._source
        key = tuple(args[p] for p in self._params)
        prog = self._built.get(key)
        if prog is None:
            params = {p: args[p] for p in self._params}
            try:
                prog = self._builder(**params)
            except Exception as e:
                # the builder's own exception (a kernel's annotation, a check of its
                # parameters): told as the builder's, not as a kernel's on a core
                if not isinstance(e, PtoPipeError) and not hasattr(e, "ptopipe_raised_by"):
                    shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
                    e.ptopipe_raised_by = (f"the kernel builder {self._builder.__name__}({shown}), "
                                           "which makes the pl program of these arguments")
                    if hasattr(e, "add_note"):          # (Python >= 3.11: its traceback says so too)
                        e.add_note(f"(raised by {e.ptopipe_raised_by} in a ptopipe run)")
                raise
            self._built[key] = prog
        return prog

    def _callable(self, kind: FunctionKind):
        def kernel(**args):
            comp = self.compiled(args)
            cluster = current_core().cluster
            comp.check_run(cluster)
            fn = comp.function(kind)
            if kind is FunctionKind.AIV and current_core().subblock == 1 and comp.aiv0_only():
                return                  # a Vector-only launch: one Vector core
            if fn is not None:
                _one_block(fn, cluster.context.blocks)
                Interpreter(fn, comp.layouts[fn.sym_name]).run(args)
        kernel.__name__ = kernel.__qualname__ = f"dsl_{kind.value}"
        kernel.kernel_set = self        # what `compile` / `check --static` find a Scenario's program by
        return kernel


def kernels(source, compiler=None) -> tuple:
    """``(aic, aiv)`` callables for ``ptopipe.run`` / ``ptopipe.Scenario`` (``compiler``: what
    compiles mixed functions, :class:`KernelSet`)."""
    ks = KernelSet(source, compiler)
    return ks.aic, ks.aiv


def run(source, args: dict, compiler=None, **run_kwargs):
    """Run a DSL program (or builder) on the simulated cluster: ``ptopipe.run`` for DSL."""
    aic, aiv = kernels(source, compiler)
    return isa_run(aic, aiv, args, **run_kwargs)
