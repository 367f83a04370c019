"""The DSL parser builds the op IR directly: for every DSL program of the repository (the
examples' programs in every variant, the kernels of the test modules, parsed source texts
and the printed generated programs of ``ir_programs``), each function the parser builds
prints, locations and name hints included, as ``parser_ops.golden`` holds (a change in what
the parser builds for any of them shows here)."""
from __future__ import annotations

import importlib.util
import os
import re

import pytest

import ptopipe.language as pl
from ptopipe.ir import print_ir, to_source
from ptopipe.language import frontend

from ir_programs import generate

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

NATURAL = '''
import ptopipe.language as pl

@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32], n: pl.Scalar[pl.i32]):
    t = pl.load(x, [0, 0], [16, 32])
    for i in pl.range(n):
        t = t + 1.0
        if i > 2 and not (i == 5):
            t = pl.exp(t)
        u = -i
    pl.store(t, [0, 0], x)
'''

FOLDS = '''
import ptopipe.language as pl

@pl.aiv
def k(x: pl.Tensor[[16, 32], pl.f32], n: pl.Scalar[pl.i32]):
    t = pl.load(x, [0 * 2, N - 4], [16, 32])
    c = 3
    d = c
    for i in pl.range(1 + n * 2):
        for j in pl.range(2, n, N // 2):
            t = pl.adds(t, -1.5)
            e = 1 + i * 2 + (N + 1) * 3 - -j
            if N > 2:
                t = pl.muls(t, 2.0)
            else:
                t = pl.exp(t)
            if not (j < N) or i == 0:
                t = pl.relu(t)
            else:
                q = d + c
    y = +c
    d += 2
    z: pl.Scalar[pl.index] = d * n
    pl.store(t, [0, 0], x)
    return
'''


def _fresh_module(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _dsl_text(top) -> str:
    """A generated program as DSL source: its unused values (a statement of their own in
    the DSL only when they are op calls) are named, so they print as assignments."""
    k = 0
    for o in top.walk():
        for r in o.results:
            if r.name is None and not r.uses:
                r.name, k = f"dead{k}", k + 1
    return to_source(top)


def _build_everything():
    """Build every DSL program once; returns how many programs were built."""
    n = 0
    for sub in ("dsl", "mixed"):
        d = os.path.join(ROOT, "examples", sub)
        for f in sorted(os.listdir(d)):
            if not f.endswith(".py") or f.startswith("_"):
                continue
            mod = _fresh_module(os.path.join(d, f), f"parser_ops_{sub}_{f[:-3]}")
            n += hasattr(mod, "PROGRAM")
            for args in getattr(mod, "VARIANTS", {}).values():
                mod.build(**args)
                n += 1
    for modname in ("test_runtime_dsl", "test_bad_input", "test_events", "test_layouts",
                    "test_dataplane_errors"):
        origin = importlib.util.find_spec(modname).origin
        mod = _fresh_module(origin, f"parser_ops_{modname}")
        n += 1
        if modname == "test_events":
            for v in ("ok", "noprime", "race", "leak"):
                mod._dsl_program(v)
        elif modname == "test_layouts":
            for c in (True, False):
                mod._dsl_program(c)
        elif modname == "test_dataplane_errors":
            pl.parse("import ptopipe.language as pl\n" + mod.MM_SRC.format(dt="i8", acc="i32"))
    for src in (NATURAL, FOLDS):
        pl.parse(src, "k.py", {"N": 4})
        n += 1
    for n_ops, seed in ((200, 0), (300, 1), (150, 2)):
        for kw in ({}, {"outer_reads": True}, {"lagged": True}):
            pl.parse(_dsl_text(generate(n_ops, seed, **kw)), "gen.py")
            n += 1
    return n


GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "parser_ops.golden")
SEP = "// ---- function\n"


_LOC = re.compile(r'loc\("([^"]*)":(\d+):(\d+)\)')


def _text(func) -> str:
    """A function's IR text with every location and name hint: paths from the repository,
    lines from the function's ``def`` (so editing the file above it changes nothing)."""
    base = func.loc.line
    return _LOC.sub(lambda m: f'loc("{m.group(1)}":+{int(m.group(2)) - base}:{m.group(3)})',
                    print_ir(func, locs=True).replace(ROOT, "<root>"))


def _parsed():
    """The IR text of every function parsed while building everything, in order."""
    out = []
    cls = frontend.FunctionParser

    class Recording(cls):
        def parse(self):
            f = super().parse()
            out.append(_text(f))
            return f

    frontend.FunctionParser = Recording
    try:
        built = _build_everything()
    finally:
        frontend.FunctionParser = cls
    return built, out


BUILT, PARSED = _parsed()
with open(GOLDEN) as fh:
    WANT = fh.read().split(SEP)[1:]


def test_every_dsl_program_is_covered():
    assert BUILT >= 40, BUILT
    assert len(PARSED) == len(WANT) >= 80, (len(PARSED), len(WANT))
    op_name = re.compile(r"^\s*(?:%[\w.]+(?:, %[\w.]+)* = )?([\w.]+)\(")
    ops = {m.group(1) for t in PARSED for ln in t.splitlines() for m in [op_name.match(ln)] if m}
    for want in ("pl.for", "pl.if", "pl.yield", "pl.copy", "pl.buffer_attr", "pl.reserve_buffer",
                 "pl.import_peer_buffer", "pl.tpush", "pl.tpop", "arith.neg", "arith.not",
                 "arith.and", "pl.return"):
        assert want in ops, want


@pytest.mark.parametrize("k", range(len(WANT)))
def test_the_parser_builds_what_the_statement_tree_converted_to(k):
    got, want = PARSED[k].splitlines(), WANT[k].splitlines()
    line = next((n for n, (a, b) in enumerate(zip(got, want), 1) if a != b), None)
    assert line is None, f"line {line}:\n got {got[line - 1]}\nwant {want[line - 1]}"
    assert len(got) == len(want)
