"""The DSL entry points: the ``@pl.aic`` / ``@pl.aiv`` / ``@pl.incore`` decorators (parse a
live Python function into a ``pl.func`` op), ``pl.program(...)`` (group functions into a
verified ``pl.program`` op, resolving ``import_peer_buffer`` peers), and ``pl.parse(text)``
(read DSL source text, e.g. the printer's output)."""
from __future__ import annotations

import ast
import difflib
import functools
import inspect
import os
import textwrap

from ..arch.vocab import TileSplitAxis
from ..protocol.geometry import EVEN_SPLIT, ODD_SPLITS
from ..errors import CompileError, user_line
from ..ir.core import Block, Operation, Region, gc_paused
from ..ir.op_verifier import verify_program
from ..ir.opdefs import FuncOp, ProgramOp
from ..ir.vocab import FunctionKind
from .parser import FunctionParser, Source, error
from ..errors import with_article

_CORES = {"aic": FunctionKind.AIC, "aiv": FunctionKind.AIV, "mixed": FunctionKind.InCore,
          "incore": FunctionKind.InCore, "group": FunctionKind.Group}


class DSLFunction:
    """A parsed kernel: ``.ir`` is its ``pl.func`` op (detached: ``pl.program`` puts a copy
    of it in each program), ``.pyfunc`` the Python function."""

    def __init__(self, pyfunc, ir: Operation):
        self.pyfunc = pyfunc
        self.ir = ir
        self.__name__ = ir.sym_name
        self.__doc__ = pyfunc.__doc__ if pyfunc else None

    @property
    def kind(self) -> FunctionKind:
        return self.ir.kind

    @property
    def not_a_kernel_function(self) -> tuple:
        """(what, fix) for a run given this kernel as a core's function
        (:func:`ptopipe.isa.launch.kernels_problem`): the runtime runs its program."""
        deco = {"aic": "@pl.aic", "aiv": "@pl.aiv"}.get(self.kind.value, "@pl.incore")
        return (f"the {deco} kernel {self.__name__!r}, which ptopipe compiles from its source: a run "
                "takes the program's kernels from a KernelSet",
                f"from ptopipe.runtime import KernelSet; ks = KernelSet(pl.program({self.__name__}, ...)) "
                "and pass ks.aic, ks.aiv (KernelSet(build) for a builder of the run's parameters)")

    def __call__(self, *a, **k):
        raise CompileError(f"kernel {self.__name__} was called from plain Python",
                           fix="build a program with pl.program(...) and run it with "
                               "ptopipe.runtime.kernels(program)")

    def __repr__(self) -> str:
        return f"<pl kernel {self.ir.sym_name} ({self.ir.kind.value})>"


def _namespace(fn) -> dict:
    ns = dict(fn.__globals__)
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                ns[name] = cell.cell_contents
            except ValueError:
                pass
    return ns


def _name(fn) -> str:
    """The name of function (or code object) ``fn``."""
    return getattr(fn, "__name__", None) or getattr(fn, "co_name", None) or repr(fn)


def _definition(fn) -> tuple:
    """``(file, first line, indent, syntax tree)`` of the ``def`` of function ``fn``."""
    try:
        lines, start = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn) or "<unknown>"
    except (OSError, TypeError):
        raise CompileError(f"cannot read the source of {_name(fn)!r}",
                           fix="define kernels in a .py file (pl needs their source)") from None
    first = lines[0]
    indent = len(first) - len(first.lstrip())
    text = textwrap.dedent("".join(lines))
    try:
        mod = ast.parse(text)
    except SyntaxError as e:
        raise CompileError(f"syntax error: {e.msg}", where=f"{file}:{(e.lineno or 1) + start - 1}")
    fdef = next((n for n in mod.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if fdef is None:
        raise CompileError(f"no function definition found for {_name(fn)!r}", where=f"{file}:{start}")
    return file, start, indent, fdef


@functools.lru_cache(maxsize=512)
def _code_definition(code, file: str, line: int, stamp: tuple) -> tuple:
    """:func:`_definition` of the functions made from ``code`` (a kernel built by a factory
    is a new function of the same code each time it is built, and reading its source -
    finding the end of its block - costs as much as parsing it).  The key has the file, the
    line and the file's (mtime, size) - what ``linecache`` checks - as well: equal code
    objects may come from two files, or from one file before and after an edit that changed
    only an annotation.  The tree is only read."""
    return _definition(code)


def _cached_definition(fn) -> tuple:
    """:func:`_definition` of ``fn``, from :func:`_code_definition` when its file is there."""
    code = getattr(fn, "__code__", None)
    if code is None or hasattr(fn, "__wrapped__"):      # (inspect reads what it wraps)
        return _definition(fn)
    try:
        st = os.stat(code.co_filename)
    except (OSError, ValueError):
        return _definition(fn)
    return _code_definition(code, code.co_filename, code.co_firstlineno, (st.st_mtime_ns, st.st_size))


def parse_function(fn, kind: FunctionKind) -> Operation:
    """Parse the live Python function ``fn`` into a ``pl.func`` op of ``kind``."""
    file, start, indent, fdef = _cached_definition(fn)
    src = Source(file, start - 1, indent)
    if isinstance(fdef, ast.AsyncFunctionDef):
        raise error(src, fdef, "kernels cannot be async", "remove `async`")
    return FunctionParser(fdef, kind, _namespace(fn), src,
                          dict(getattr(fn, "__annotations__", {}))).parse()


#: the keyword options of the decorators (Decorator.__call__)
_OPTIONS = ("core", "split", "slot_num")


class Decorator:
    """``@pl.aic``, ``@pl.aiv``, ``@pl.incore``, ``@pl.incore(core="aic" | "aiv")`` and, for a
    mixed function, ``@pl.incore(split=pl.TILE_UP_DOWN | pl.TILE_LEFT_RIGHT, slot_num=N)``
    (both optional: ExpandMixedKernel defaults to TILE_UP_DOWN and seed 003's SLOT_NUM)."""

    def __init__(self, kind: FunctionKind, name: str, split=None, slot_num=None):
        self.kind = kind
        self.name = name
        self.split = split
        self.slot_num = slot_num

    def options(self, split=None, slot_num=None) -> "Decorator":
        """This decorator with the mixed-function options checked and set."""
        if split is not None:
            if isinstance(split, bool) or not isinstance(split, int) or \
                    int(split) not in tuple(TileSplitAxis):
                raise CompileError(f"@pl.{self.name}(split={split!r}) is not a split mode",
                                   where=user_line(),
                                   fix="use pl.TILE_UP_DOWN, pl.TILE_LEFT_RIGHT or pl.TILE_NO_SPLIT")
            if split in ODD_SPLITS:
                # the mixed-kernel compiler gives each Vector core half of every tile
                raise CompileError(f"@pl.{self.name}(split={TileSplitAxis(split).name}): the mixed-kernel "
                                   "compiler splits tiles into two equal halves; it has no odd split",
                                   where=user_line(),
                                   fix="give the tile an even extent on the split axis (pad the tail tile) and "
                                       f"split it {EVEN_SPLIT[TileSplitAxis(split)].name}, or write the AIC and AIV "
                                       "kernels by hand (the ISA's TPUSH / TPOP take the odd splits)")
            split = TileSplitAxis(split)
        if slot_num is not None and (isinstance(slot_num, bool) or not isinstance(slot_num, int)
                                     or slot_num < 1):
            raise CompileError(f"@pl.{self.name}(slot_num={slot_num!r}) must be a positive integer",
                               where=user_line(), fix="e.g. slot_num=4")
        no_split_aiv = self.kind is FunctionKind.AIV and split is TileSplitAxis.TILE_NO_SPLIT \
            and slot_num is None          # a no-split AIV kernel: lane 1 replays (docs/layouts.md)
        if (split is not None or slot_num is not None) and self.kind is not FunctionKind.InCore \
                and not no_split_aiv:
            raise CompileError(f"split= / slot_num= are options of a mixed @pl.incore function, "
                               f"not of {with_article(self.kind.value)} one", where=user_line(),
                               fix="drop them, or write the function as one mixed @pl.incore "
                                   "(an @pl.aiv function takes split=pl.TILE_NO_SPLIT alone)")
        return Decorator(self.kind, self.name, split, slot_num)

    def __call__(self, fn=None, *, core: str | None = None, split=None, slot_num=None, **unknown):
        if unknown:
            name = next(iter(unknown))
            near = difflib.get_close_matches(name, _OPTIONS, n=1)
            raise CompileError(f"@pl.{self.name}({name}=...): no such option",
                               where=user_line(),
                               fix=(f"did you mean {near[0]}=? " if near else "")
                                   + f"@pl.{self.name} takes {', '.join(o + '=' for o in _OPTIONS)}")
        if fn is None:
            dec = self
            if core is not None:
                if core not in _CORES:
                    raise CompileError(f"unknown core {core!r} in @pl.{self.name}(core=...)",
                                       where=user_line(), fix=f"use one of: {', '.join(_CORES)}")
                dec = Decorator(_CORES[core], self.name)
            return dec.options(split, slot_num)
        if not callable(fn):
            fix = (f"pass the split by keyword: @pl.{self.name}(split=pl.{fn.name})"
                   if isinstance(fn, TileSplitAxis) else f"write @pl.{self.name} on the line above a def")
            raise CompileError(f"@pl.{self.name} decorates a function, got {fn!r}", where=user_line(), fix=fix)
        return DSLFunction(fn, self.apply(parse_function(fn, self.kind)))

    def apply(self, f: Operation) -> Operation:
        """The function ``f`` (a ``pl.func`` op) with this decorator's options."""
        if self.split is not None:
            f.split = self.split
        if self.slot_num is not None:
            f.slot_num = self.slot_num
        return f

    def __repr__(self) -> str:
        return f"<pl.{self.name} decorator ({self.kind.value})>"


aic = Decorator(FunctionKind.AIC, "aic")
aiv = Decorator(FunctionKind.AIV, "aiv")
incore = Decorator(FunctionKind.InCore, "incore")


def _ir(f) -> Operation:
    if isinstance(f, DSLFunction):
        return f.ir
    if isinstance(f, Operation) and f.is_a(FuncOp):
        return f
    raise CompileError(f"pl.program takes @pl kernels, got {f!r}",
                       fix="decorate the functions with @pl.aic / @pl.aiv")


def _program(name: str, functions, copy: bool = True) -> Operation:
    """A verified ``pl.program`` op of ``functions``: copies of them (a kernel may be in
    several programs, and the compiler rewrites the program it is given), or, ``copy=False``,
    the functions themselves (just parsed, nobody else holds them)."""
    top = Block()
    with gc_paused():
        for f in functions:
            top.append(f.clone() if copy else f)
        op = Operation(ProgramOp.name, (), (), {"sym_name": name}, (Region([top]),))
        verify_program(op)
    return op


def program(*functions, name: str = "program") -> Operation:
    """Group kernels (e.g. one AIC + one AIV function paired by ``peer_func``) into a
    verified ``pl.program`` op."""
    if not functions:
        raise CompileError("pl.program needs at least one kernel", where=user_line(),
                           fix="pass the @pl kernels: pl.program(cube, vector)")
    return _program(name, [_ir(f) for f in functions])


def parse(text: str, filename: str = "<dsl>", namespace: dict | None = None) -> Operation:
    """Parse DSL source text (a module of ``@pl`` kernels, optionally ending with
    ``program = pl.program(..., name=...)``) into a verified ``pl.program`` op."""
    from .. import language as pl_module
    ns = {"pl": pl_module}
    ns.update(namespace or {})
    src = Source(filename)
    try:
        mod = ast.parse(text, filename)
    except SyntaxError as e:
        raise CompileError(f"syntax error: {e.msg}", where=f"{filename}:{e.lineno}:{e.offset}",
                           fix="fix the Python syntax") from None
    funcs, order, name = {}, None, "program"
    for node in mod.body:
        if isinstance(node, ast.FunctionDef):
            kind, deco = FunctionKind.InCore, None
            for d in node.decorator_list:
                try:
                    dec = eval(compile(ast.Expression(d), filename, "eval"), dict(ns))  # noqa: S307
                except CompileError as e:        # a bad option: its own message, at the decorator
                    raise error(src, d, e.what, e.fix) from None
                except Exception as e:
                    raise error(src, d, f"bad decorator: {e}", "use @pl.aic, @pl.aiv or @pl.incore")
                if not isinstance(dec, Decorator):
                    raise error(src, d, "kernels are decorated with @pl.aic, @pl.aiv or @pl.incore")
                kind, deco = dec.kind, dec
            f = FunctionParser(node, kind, ns, src).parse()
            funcs[node.name] = deco.apply(f) if deco is not None else f
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                ast.unparse(node.value.func) == "pl.program":
            order = []
            for a in node.value.args:
                if not isinstance(a, ast.Name) or a.id not in funcs:
                    raise error(src, a, "pl.program arguments must name kernels defined above")
                order.append(a.id)
            for k in node.value.keywords:
                if k.arg == "name" and isinstance(k.value, ast.Constant):
                    name = k.value.value
        elif isinstance(node, (ast.Import, ast.ImportFrom, ast.Expr)):
            continue
        else:
            raise error(src, node, "DSL source holds imports, kernels and `program = pl.program(...)`")
    fs = [funcs[n] for n in order] if order is not None else list(funcs.values())
    if len({id(f) for f in fs}) != len(fs):      # a kernel named twice: its copies
        return _program(name, fs)
    return _program(name, fs, copy=False)
