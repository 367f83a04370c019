"""Round trip: a mixed / DSL example compiled and written as pto-isa C++ (``write_cpp``, what
``ptopipe compile --emit cpp`` writes) and run through ptopipe's own headers (``run_cpp``)
computes what numpy computes, in the same number of cycles and with the same checker
findings as running the example itself, on both platforms and both protocols."""
from __future__ import annotations

import os

import numpy as np
import pytest

import ptopipe  # noqa: F401  (installs the mixed compiler)
from ptopipe.cli.loader import load_module
from ptopipe.codegen import write_cpp
from ptopipe.cpp import run_cpp
from ptopipe.passes import compile_program

from cpp_support import cpp_cache, needs_cxx  # noqa: F401 (fixture)
from layers import ROOT

EXAMPLES = sorted(f"{d}/{n[:-3]}" for d in ("mixed", "dsl")
                  for n in os.listdir(os.path.join(ROOT, "examples", d)) if n.endswith(".py"))
_COMBOS = [(p, q) for p in ("a2a3", "a5") for q in ("spec", "pto-isa")]
#: every example on every platform and protocol with PTOPIPE_CPP_FULL=1 (a C++ build each:
#: about 30 s of CPU); by default each example on one of the four, in turn, so the suite
#: still covers both platforms and protocols within its CPU budget
CASES = [(e, p, q) for i, e in enumerate(EXAMPLES) for k, (p, q) in enumerate(_COMBOS)
         if os.environ.get("PTOPIPE_CPP_FULL") == "1" or k == i % len(_COMBOS)]


@needs_cxx
@pytest.mark.parametrize("example,platform,protocol", CASES, ids=[f"{e}-{p}-{q}" for e, p, q in CASES])
def test_write_cpp_runs_like_the_example(cpp_cache, tmp_path, example, platform, protocol):
    m = load_module(os.path.join(ROOT, "examples", example + ".py"))
    sc = m.SCENARIO
    args = sc.args(sc.default_variant)
    program = m.KERNELS.source(**args) if hasattr(m, "KERNELS") else m.PROGRAM
    op = compile_program(program, platform, protocol=protocol)
    path = tmp_path / (example.replace("/", "_") + ".cpp")
    path.write_text(write_cpp(op, platform))
    given = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
    got = run_cpp(str(path), given, platform=platform, protocol=protocol)
    want = m.golden(args)
    for k, v in want.items():
        np.testing.assert_allclose(got[k], v, rtol=sc.rtol, atol=sc.atol, err_msg=k)
    py, _exp = sc.run(sc.default_variant, platform, protocol, 0)
    for k in want:
        np.testing.assert_array_equal(got[k], py.outputs[k])
    assert got.summary.cycles == py.summary.cycles
    assert [w for w, _ in got.summary.leaks] == [w for w, _ in py.summary.leaks]
    # (instruction counts may differ: the C++ of a two-lane TILE_NO_SPLIT kernel skips AIV1's data
    # ops, which the simulator runs on empty valid shapes - docs/cpp.md)
    assert [p["tiles"] for p in got.summary.pipes] == [p["tiles"] for p in py.summary.pipes]
