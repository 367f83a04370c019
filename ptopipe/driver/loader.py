"""Loading a kernel file: a Python file that defines a ``SCENARIO`` (a
:class:`ptopipe.Scenario`), or several ``Scenario`` objects; and refusing, with the file
named, a FILE argument that is no kernel file (missing, a directory, binary data)."""
from __future__ import annotations

import importlib.util
import os
import sys

from ..errors import ConfigError, ending_call, user_frame
from ..isa.scenario import Scenario
from ..sim.location import CPP_SUFFIXES


#: what a FILE argument of run / check / trace may be
KERNEL_FILES = "a kernel .py, .pto or pto-isa .cpp file"


def check_kernel_file(path: str, kinds: str = KERNEL_FILES) -> None:
    """Raise a ConfigError naming ``path`` unless it is a readable regular file: what every
    subcommand checks before it reads its FILE argument (``kinds``: the files it takes)."""
    if not os.path.exists(path):
        raise ConfigError(f"no such file: {path}", where="argument FILE",
                          fix=f"give the path of {kinds}")
    if os.path.isdir(path):
        inside = next((p for p in (os.path.join(path, f) for f in sorted(os.listdir(path)) if not f.startswith("_"))
                       if looks_like_kernel(p)), None)
        raise ConfigError(f"{path} is a directory, not a kernel file", where="argument FILE",
                          fix="give one kernel file" + (f", e.g. {inside}" if inside else f" ({kinds})"))
    if not os.path.isfile(path):
        raise ConfigError(f"{path} is not a regular file", where="argument FILE",
                          fix=f"give the path of {kinds}")
    if not os.access(path, os.R_OK):
        raise ConfigError(f"cannot read {path}: permission denied", where="argument FILE",
                          fix=f"make it readable (chmod u+r {path})")


def looks_like_kernel(path: str) -> bool:
    """Whether the file ``path`` is a kernel file by its name and text, without running it: a
    ``.pto``, a ``.py`` that defines a ``SCENARIO``, a C++ file with an ``AICORE`` or
    ``__global__`` function - not a helper script or a header beside them."""
    if path.endswith(".pto"):
        return not os.path.isdir(path)
    if not path.endswith((".py",) + CPP_SUFFIXES):
        return False
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError):
        return False
    return "SCENARIO" in text if path.endswith(".py") else ("AICORE" in text or "__global__" in text)


def _check_source(path: str) -> None:
    """Refuse a file that is not Python source text (a .pyc, an image, a file in another
    encoding) before Python compiles it: its SyntaxError would name no line, or advise
    fixing the syntax of binary data."""
    with open(path, "rb") as f:
        data = f.read()
    nul = data.find(b"\0")
    if nul >= 0:
        raise ConfigError(f"{path} is not Python source: it holds binary data (a NUL byte at offset {nul})",
                          where=f"{path}:{_line_at(data, nul)}",
                          fix="give the kernel's .py source file, not a compiled or binary file")
    try:
        importlib.util.decode_source(data)
        return
    except UnicodeDecodeError as e:
        start, encoding = e.start, e.encoding
    except SyntaxError as e:           # the first two lines: no text, or an unknown coding
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as u:
            start, encoding = u.start, "utf-8"
        else:
            line = next((i for i, t in enumerate(data.splitlines()[:2], 1) if b"coding" in t), 1)
            raise ConfigError(f"{path} is not Python source: {e.msg}",
                              where=f"{path}:{line}",
                              fix="declare an encoding Python knows, e.g. '# -*- coding: utf-8 -*-'") from None
    raise ConfigError(f"{path} is not Python source: byte {data[start]:#04x} at offset {start} "
                      f"is not {encoding} text", where=f"{path}:{_line_at(data, start)}",
                      fix="give the kernel's .py source file, saved as UTF-8 text")


def _line_at(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def load_module(path: str, source: str | None = None, bindings: dict | None = None, kinds: str | None = None):
    """The kernel file ``path`` imported as a module; with ``source``, that text instead of
    the file's (a variant of the file, e.g. a mutant: its code and errors still name
    ``path`` and its lines), with ``bindings`` set in its globals first.  ``kinds``: the
    files the command takes, for the fix of a file that is not Python (None: a Scenario's
    file, or a .pto / .cpp kernel where the command takes one)."""
    check_kernel_file(path)
    if not path.endswith(".py"):
        raise ConfigError(f"{path} is not a Python file", where="argument FILE",
                          fix=f"give {kinds}" if kinds else
                              "give a .py file defining SCENARIO (the command also takes a .pto "
                              "or a .cpp kernel where it says so in --help)")
    _check_source(path)
    name = "ptopipe_kernel_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    mod.__dict__.update(bindings or {})
    sys.modules[name] = mod
    d = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, d)
    try:
        if source is None:
            spec.loader.exec_module(mod)
        else:
            exec(compile(source, path, "exec", dont_inherit=True), mod.__dict__)
    except SyntaxError as e:
        raise ConfigError(f"syntax error in {path}: {e.msg}",
                          where=f"{e.filename or path}:{e.lineno}" if e.lineno else path,
                          fix="fix the Python syntax") from None
    except SystemExit as e:     # it would end the command silently, with no report written
        f = user_frame(e)
        raise ConfigError(f"loading {path} raised {ending_call(e)}: a kernel file cannot end the program",
                          where=f"{f.filename}:{f.lineno}" if f else path,
                          fix="ptopipe imports the file: put its script part under "
                              "`if __name__ == \"__main__\":`, and raise an exception (e.g. ValueError) "
                              "to report a failure") from e
    finally:
        if sys.path and sys.path[0] == d:
            sys.path.pop(0)
    return mod


def load_scenarios(path: str, source: str | None = None, bindings: dict | None = None,
                   kinds: str | None = None) -> list:
    """The Scenarios the kernel file defines (``SCENARIO`` first); ``source``, ``bindings``
    and ``kinds`` as for :func:`load_module`."""
    mod = load_module(path, source, bindings, kinds)
    found = []
    sc = getattr(mod, "SCENARIO", None)
    if isinstance(sc, Scenario):
        found.append(sc)
    for v in vars(mod).values():
        if isinstance(v, Scenario) and v not in found:
            found.append(v)
    if not found:
        fix = "define SCENARIO = ptopipe.Scenario(name, aic, aiv, make_args, golden, variants)"
        if _defines_dsl(mod):
            fix = (f"it defines pl kernels but no Scenario (the arguments and golden a run needs): "
                   f"`ptopipe check --static {path}` verifies them as they are, and "
                   f"`ptopipe compile {path} --emit pto -o k.pto` then `ptopipe run k.pto` runs them on "
                   f"seeded inputs; or {fix}")
        raise ConfigError(f"{path} defines no ptopipe.Scenario", fix=fix)
    return found


def _defines_dsl(mod) -> bool:
    """Whether the module defines ``pl`` kernels: a ``pl.program``, an ``@pl`` function or a
    KernelSet (what ``compile`` and ``check --static`` take without a Scenario)."""
    from ..ir import Operation
    from ..ir.opdefs import ProgramOp
    from ..language.frontend import DSLFunction
    from ..runtime import KernelSet
    return any(isinstance(v, (DSLFunction, KernelSet)) or (isinstance(v, Operation) and v.is_a(ProgramOp))
               for v in vars(mod).values())


def scenario_at(path: str, index: int) -> tuple:
    """The ``index``-th Scenario of the kernel file ``path`` (:func:`load_scenarios`' order)
    with its run warnings (none: a Python kernel's runs add none), as ``check`` takes it:
    how a worker process loads the kernel of a check it runs schedules of."""
    return load_scenarios(path)[index], []


def pick_variants(sc: Scenario, variant: str | None) -> list:
    """The variants of ``sc`` a command's ``--variant`` names: none given, the default one;
    ``all``, each; else that one (:func:`one_variant`)."""
    if variant is None:
        return [sc.default_variant]
    if variant == "all":
        return list(sc.variants)
    return [one_variant(sc, variant)]


def one_variant(sc: Scenario, variant: str) -> str:
    """``variant`` of ``sc`` as a command's ``--variant`` names it: one the Scenario does not
    declare is a ConfigError at that option naming the ones it does (every command alike)."""
    try:
        sc.params(variant)
    except ConfigError as e:
        e.where = e.where or "option --variant"
        e.args = (e.render(),)
        raise
    return variant
