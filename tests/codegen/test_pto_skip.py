"""ptopipe.codegen.pto_exec.skip: which ``scf.for`` loops of a PTO-AS function are
shift-equivariant (the fast-forward engine may take whole iterations of them) and the
coefficients of their moving windows (``pto.partition_view`` offsets).  Each case is a
vector function whose loop body is written out below; tests/sim/test_periodic_skip.py runs
such loops on both engines."""
from __future__ import annotations

import pytest

from ptopipe.codegen.pto_exec.program import walk
from ptopipe.codegen.pto_exec.reader import read_program
from ptopipe.codegen.pto_exec.skip import pto_forms
from ptopipe.sim.periodic.loops import coefficient

_HEAD = """module attributes {pto.target_arch = "a3"} {
  func.func @k(%out: !pto.ptr<f32>, %n: i32, %k: index) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %n_idx = arith.index_cast %n : i32 to index
    %ov = pto.make_tensor_view %out, shape = [%c64, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x16xf32>
    %t = pto.alloc_tile : !pto.tile_buf<vec, 8x16xf32>
"""
_TAIL = """    return
  }
}
"""


def _loop(body: str, carried: str = ""):
    text = (_HEAD + f"    scf.for %i = %c0 to %n_idx step %c1{carried} {{\n" + body + "    }\n" + _TAIL)
    prog = read_program(text, "k.pto")
    return next(s for s in walk(prog.funcs["k"].body) if s.name == "scf.for")


def _store(offsets: str) -> str:
    return (f"      %po = pto.partition_view %ov, offsets = [{offsets}], sizes = [%c8, %c16] : "
            "!pto.tensor_view<?x16xf32> -> !pto.partition_tensor_view<8x16xf32>\n"
            "      pto.tstore ins(%t : !pto.tile_buf<vec, 8x16xf32>) outs(%po : !pto.partition_tensor_view<8x16xf32>)\n")


_VALUES = {"%c0": 0, "%c1": 1, "%c2": 2, "%c8": 8, "%c16": 16, "%k": 24}


def _coefs(sites):
    return [tuple(coefficient(f, lambda tok: _VALUES[tok.text]) for f in s.coefs) for s in sites]


@pytest.mark.parametrize("body,want", [
    ("      %r = arith.muli %i, %c16 : index\n" + _store("%r, %c0"), [(16, 0)]),
    ("      %a = arith.muli %c8, %i : index\n      %b = arith.addi %a, %c8 : index\n"
     "      %r = arith.subi %b, %c8 : index\n" + _store("%r, %c0"), [(8, 0)]),
    ("      %a = arith.muli %i, %k : index\n      %z = arith.subi %c0, %a : index\n"
     "      %r = arith.subi %c64, %z : index\n" + _store("%r, %c0"), [(24, 0)]),
    ("      %j = arith.index_cast %i : index to i32\n      %w = arith.extsi %j : i32 to i64\n"
     "      %r = arith.index_cast %w : i64 to index\n" + _store("%c0, %r"), [(0, 1)]),
    (_store("%c0, %c0"), []),
    ("      scf.for %j = %c0 to %c2 step %c1 {\n        %r = arith.muli %j, %c8 : index\n"
     "  " + _store("%r, %c0").replace("\n      ", "\n        ") + "      }\n", []),
])
def test_shift_equivariant_loops(body, want):
    """Sums, differences and multiples by invariant values of the induction variable, and the
    casts that keep a value, move a window with the loop; a window a nested loop moves with
    its own variable does not move with the outer loop."""
    sites, guards, _ = pto_forms(_loop(body))
    assert _coefs(sites) == want and guards == ()


def _if(cond: str, inner: str = None) -> str:
    inner = _store("%c0, %c0") if inner is None else inner
    return f"      scf.if {cond} {{\n" + inner.replace("\n      ", "\n        ").replace("      %po", "        %po", 1) \
        + "      }\n"


@pytest.mark.parametrize("body,want", [
    ("      %c = arith.cmpi slt, %i, %c8 : index\n" + _if("%c"), [("<", 1)]),
    ("      %c = arith.cmpi eq, %i, %c0 : index\n" + _if("%c") + "      %r = arith.muli %i, %c2 : index\n"
     "      %d = arith.cmpi sge, %c8, %r : index\n" + _if("%d"), [("==", 1), (">=", -2)]),
])
def test_guards(body, want):
    """A signed or equality comparison of a value that moves deciding an scf.if of the body's
    own that gives no results is a guard."""
    sites, guards, _ = pto_forms(_loop(body))
    assert [(g.pred, coefficient(g.form, lambda tok: _VALUES[tok.text])) for g in guards] == want


@pytest.mark.parametrize("body,carried", [
    ("      %c = arith.cmpi ult, %i, %c8 : index\n" + _if("%c"), ""),
    ("      %c = arith.cmpi slt, %i, %c8 : index\n      %r = arith.select %c, %c0, %c16 : index\n"
     + _store("%r, %c0"), ""),
    ("      %k1 = arith.cmpi sgt, %k, %c0 : index\n      scf.if %k1 {\n"
     "        %c = arith.cmpi slt, %i, %c8 : index\n        scf.if %c {\n        }\n      }\n", ""),
    ("      scf.for %j = %c0 to %c2 step %c1 {\n        %c = arith.cmpi slt, %i, %c8 : index\n"
     "        scf.if %c {\n        }\n      }\n", ""),
    ("      %c = arith.cmpi slt, %i, %c8 : index\n      %v = scf.if %c -> (index) {\n        scf.yield %c0 : index\n"
     "      } else {\n        scf.yield %c16 : index\n      }\n" + _store("%v, %c0"), ""),
    ("      %r = arith.remsi %i, %c2 : index\n" + _store("%r, %c0"), ""),
    ("      %r = arith.muli %i, %i : index\n" + _store("%r, %c0"), ""),
    ("      %r = arith.divsi %i, %c2 : index\n" + _store("%r, %c0"), ""),
    ("      %r = arith.maxsi %i, %c8 : index\n" + _store("%r, %c0"), ""),
    ("      scf.for %j = %c0 to %i step %c1 {\n      }\n", ""),
    ("      scf.for %j = %c0 to %c2 step %c1 {\n        %r = arith.addi %i, %j : index\n"
     "  " + _store("%r, %c0").replace("\n      ", "\n        ") + "      }\n", ""),
    ("      %r = arith.addi %acc, %c16 : index\n" + _store("%acc, %c0") + "      scf.yield %r : index\n",
     " iter_args(%acc = %c0) -> (index)"),
    ("      %v = pto.tgetval ins(%t, %c0 : !pto.tile_buf<vec, 8x16xf32>, index) outs : f32\n", ""),
])
def test_loops_not_taken_whole(body, carried):
    """An unsigned comparison, a comparison used otherwise than as the condition of an
    scf.if of the body's own that gives no results (a select, in a branch, in a nested loop,
    an scf.if with results), a remainder, a square, a division, a max, a nested loop bounded
    by the variable or moving a window with it, a carried value that changes, a scalar read
    from a tile: not shift-equivariant."""
    assert pto_forms(_loop(body, carried)) is None


def test_passed_through_iter_args():
    """A carried value yielded unchanged does not stop the loop being taken whole."""
    body = "      %r = arith.muli %i, %c16 : index\n" + _store("%r, %c0") + "      scf.yield %acc : index\n"
    assert _coefs(pto_forms(_loop(body, " iter_args(%acc = %c0) -> (index)"))[0]) == [(16, 0)]
