"""The op/region IR (ptopipe.ir.core / opdefs / op_verifier / asm_printer / asm_parser /
convert / equality): every DSL program the repository has converts to ops, verifies,
prints, parses back structurally equal and converts back to a tree ``==`` to the original;
equality is invariant under value renaming and says where programs differ; one test per
verifier error (message and location); the rewriting API; malformed text is a ParseError
at line:col; generated programs round-trip (hypothesis)."""
from __future__ import annotations

import importlib
import importlib.util
import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ptopipe.language as pl
from ptopipe.errors import CompileError, ParseError
from ptopipe.ir import (INDEX, Block, Builder, Loc, Operation, Program, Region, first_difference,
                        parse_ir, print_ir, structural_equal, to_ops, to_tree, verify_ops)
from ptopipe.runtime import resolve_program

from ir_programs import TILE, count_ops, generate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- the corpus: every DSL program of examples/ and tests/ ------------------------------------
def _example(name):
    spec = importlib.util.spec_from_file_location(f"ir_core_{name}",
                                                  os.path.join(ROOT, "examples", "dsl", name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _module_kernels(modname):
    """Every module-level @pl kernel of a test module, each as a one-function program."""
    mod = importlib.import_module(modname)
    return [(f"{modname}.{k}", Program(k, (v.ir,))) for k, v in vars(mod).items()
            if isinstance(v, pl.DSLFunction)]


def _corpus():
    out = []
    for name in ("s1_cv_split", "s4_both_ways", "s5_subtile_gm", "s8_manual_sync"):
        mod = _example(name)
        if hasattr(mod, "PROGRAM"):
            out.append((name, mod.PROGRAM))
        variants = getattr(mod, "VARIANTS", None)
        if variants:
            out += [(f"{name}[{v}]", mod.KERNELS.program(**args)) for v, args in variants.items()]
        elif hasattr(mod, "build"):
            out += [(f"{name}[{s.name}]", mod.build(s)) for s in (pl.TILE_UP_DOWN, pl.TILE_LEFT_RIGHT)]
    s1 = _example("s1_cv_split")
    out.append(("s1 resolved", resolve_program(s1.build(**s1.VARIANTS["default"]))))
    for modname in ("test_runtime_dsl", "test_bad_input", "test_events", "test_layouts"):
        out += _module_kernels(modname)
    events = importlib.import_module("test_events")
    out += [(f"test_events[{v}]", events._dsl_program(v)) for v in ("ok", "noprime", "race", "leak")]
    layouts = importlib.import_module("test_layouts")
    out += [(f"test_layouts[{c}]", layouts._dsl_program(c)[0]) for c in (True, False)]
    bad = importlib.import_module("test_bad_input")
    out += [(f"test_bad_input ring {s}", bad._ring_program(s, n)[0])
            for s, n in ((8 * bad.SLOT, None), (2 * bad.SLOT, 2))]
    dp = importlib.import_module("test_dataplane_errors")
    out.append(("mm_i8", pl.parse("import ptopipe.language as pl\n" + dp.MM_SRC.format(dt="i8", acc="i32"))))
    out.append(("natural loops", pl.parse(NATURAL)))
    return out


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

CORPUS = _corpus()


def test_the_corpus_holds_every_dsl_program_kind():
    names = [n for n, _ in CORPUS]
    assert len(CORPUS) >= 50, len(CORPUS)
    for want in ("s1_cv_split[", "s4_both_ways[", "s5_subtile_gm", "s8_manual_sync[", "test_events[",
                 "test_layouts[", "test_runtime_dsl.acc_cube", "test_bad_input.div_vec", "mm_i8"):
        assert any(n.startswith(want) for n in names), want


@pytest.mark.parametrize("name,prog", CORPUS, ids=[n for n, _ in CORPUS])
def test_every_dsl_program_round_trips_through_ops_and_text(name, prog):
    ops = to_ops(prog)
    verify_ops(ops)
    assert to_tree(ops) == prog, first_difference(prog, to_tree(ops))   # tree -> ops -> tree
    text = print_ir(ops, locs=True)
    again = parse_ir(text, "printed.ir")
    verify_ops(again)
    assert first_difference(ops, again) is None
    assert print_ir(again, locs=True) == text
    assert to_tree(again) == prog                                        # names survive text
    locs = [(o.name, o.loc) for o in ops.walk() if o.name != "pl.program"]
    assert all(loc is not None for _, loc in locs)                       # every op has a loc
    assert locs == [(o.name, o.loc) for o in again.walk() if o.name != "pl.program"]


def test_locations_print_as_a_loc_suffix():
    ops = to_ops(pl.parse(NATURAL, filename="k.py"))
    text = print_ir(ops, locs=True)
    line = next(ln for ln in text.splitlines() if "pl.exp(" in ln)
    assert re.search(r'= pl\.exp\(%t_\d*\) : \(tile<16x32xf32,Vec>\) -> tile<16x32xf32,Vec> '
                     r'loc\("k\.py":10:13\)$', line), line
    assert "loc(" not in print_ir(ops)


# -- equality up to renaming ----------------------------------------------------------------
def _anonymise(top):
    for op in top.walk():
        for r in op.results:
            r.name = None
        for reg in op.regions:
            for b in reg.blocks:
                for a in b.args:
                    a.name = None


def test_equality_is_invariant_under_value_renaming():
    ops = to_ops(CORPUS[0][1])
    text = print_ir(ops)
    renamed = re.sub(r"%([A-Za-z_][\w.]*)", r"%renamed_\1", text)
    assert renamed != text
    assert structural_equal(ops, parse_ir(renamed))
    other = parse_ir(text)
    _anonymise(other)
    numbered = print_ir(other)
    assert "%a_l0" not in numbered and structural_equal(parse_ir(numbered), ops)


def test_first_difference_says_where_and_what():
    text = print_ir(to_ops(pl.parse(NATURAL, filename="k.py")), locs=True)
    assert first_difference(parse_ir(text), parse_ir(text)) is None
    # a different attribute value, deep in the loop
    changed = text.replace("{value = 1.0}", "{value = 2.0}", 1)
    d = first_difference(parse_ir(text), parse_ir(changed))
    assert d.startswith("pl.program @program/region 0/op 0/pl.func @k/region 0/op ") and \
        "pl.for" in d and 'at k.py:' in d and "attribute value = 1.0 != 2.0" in d, d
    # the same op reading a different (equally typed) value
    a = parse_ir(text)
    b = parse_ir(text)
    load = next(o for o in b.walk() if o.name == "pl.store")
    tile_param = load.operands[0]
    other_tile = next(o for o in b.walk() if o.name == "pl.load").result
    assert tile_param is not other_tile
    load.set_operand(0, other_tile)
    d = first_difference(a, b)
    assert "pl.store at k.py:12:5: operand 0 is %" in d and "not the same value up to renaming" in d, d
    # True is not 1
    c = parse_ir(text.replace("{value = 0}", "{value = false}", 1))
    assert "attribute value = 0 != False" in first_difference(a, c)
