"""ptopipe.runtime.skip: which ``pl.range`` loops are shift-equivariant (the fast-forward
engine may take whole iterations of them) and the coefficients of their moving GM windows;
ptopipe.sim.periodic.loops: how far those windows stay inside their tensors (``SkipPlan.room``
against counting).

The engine side - parking, skipping and the runs' equality with the exact engine - is
tests/sim/test_periodic_skip.py."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ptopipe.language as pl
from ptopipe.ir.opdefs import ForOp
from ptopipe.runtime.closures import _TILE_RESULT
from ptopipe.runtime.skip import affine_forms
from ptopipe.sim.periodic.loops import INFINITE, Site, SkipPlan, coefficient, keeps

T, N = 16, 8


def _outer(fn):
    """The outermost loop of a one-function program (the walk is in program order)."""
    prog = pl.program(fn, name="k")
    return next(op for op in prog.walk() if isinstance(op, ForOp))


def _coefs(sites, values=None):
    """Each site's per-dimension coefficients, invariant values read from ``values``
    (IR value name -> value) or, for a constant, its attribute."""
    def value(v):
        op = getattr(v, "op", None)
        if op is not None and op.name == "pl.const":
            return op.attributes["value"]
        return values[v.name]
    return [tuple(coefficient(f, value) for f in s.coefs) for s in sites]


@pl.aiv
def rows(x: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[N * T, T], pl.f32], flag: pl.Scalar[pl.i32]):
    for i in pl.range(N):
        t = pl.load(x, [i * T, 0], [T, T])
        if flag > 0:                                   # (loop-invariant: the same branch every time)
            pl.store(pl.adds(t, 1.0), [(i + 1) * T - T, 0], out)


@pl.aiv
def columns(x: pl.Tensor[[T, N * T], pl.f32], out: pl.Tensor[[T, N * T], pl.f32]):
    for i in pl.range(1, N, 2):
        t = pl.load(x, [0, T * i - T], [T, T])
        pl.store(pl.muls(t, 2.0), [0, -(0 - i) * T - T], out)


@pl.aiv
def scaled(x: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[N * T, T], pl.f32], k: pl.Scalar[pl.i32]):
    for i in pl.range(N):
        t = pl.load(x, [i * k, 0], [T, T])
        pl.store(t, [0, 0], out)                       # (a window that does not move)


@pl.aiv
def nested_still(x: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[N * T, T], pl.f32]):
    for i in pl.range(N):
        for j in pl.range(2):
            t = pl.load(x, [j * T, 0], [T, T])
            pl.store(t, [j * T, 0], out)


@pytest.mark.parametrize("fn,want", [(rows, [(T, 0), (T, 0)]), (columns, [(0, T), (0, T)]),
                                     (nested_still, [])])
def test_shift_equivariant_loops(fn, want):
    """Offsets built by +, - and * by a loop-invariant value from the loop variable move with
    it (a constant added drops out); a window a nested loop moves without the outer variable
    does not move with the outer loop."""
    sites, guards, _ = affine_forms(_outer(fn), _TILE_RESULT)
    assert _coefs(sites) == want and guards == ()
    assert all(isinstance(s, Site) for s in sites)


def test_coefficient_of_an_argument():
    """A multiple of a kernel argument: its coefficient is read at run time."""
    sites, _, _ = affine_forms(_outer(scaled), _TILE_RESULT)
    assert len(sites) == 1
    assert _coefs(sites, {"k": 24}) == [(24, 0)]
    assert _coefs(sites, {"k": 2.5}) == [(None, 0)]    # (an offset the interpreter truncates)


@pl.aiv
def branch_on_i(x: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[N * T, T], pl.f32]):
    for i in pl.range(N):
        t = pl.load(x, [i * T, 0], [T, T])
        if i < N - 1:
            pl.store(t, [i * T, 0], out)


@pl.aiv
def first_and_last(x: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[N * T, T], pl.f32]):
    for i in pl.range(N):
        t = pl.load(x, [i * T, 0], [T, T])
        if i == 0:
            pl.store(t, [0, 0], out)
        if N - 1 > 2 * i:
            pl.store(t, [i * T, 0], out)


@pytest.mark.parametrize("fn,want", [(branch_on_i, [("<", 1)]), (first_and_last, [("==", 1), (">", -2)])])
def test_guards(fn, want):
    """A comparison of a value that moves deciding a branch of the body's own that gives no
    values is a guard: the loop is shift-equivariant while it keeps its truth."""
    sites, guards, _ = affine_forms(_outer(fn), _TILE_RESULT)
    assert [(g.pred, coefficient(g.form, lambda v: v.op.attributes["value"])) for g in guards] == want
    assert _coefs(sites)[0] == (T, 0)


@pl.aiv
def guard_in_arithmetic(x: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[N * T, T], pl.f32]):
    for i in pl.range(N):
        t = pl.load(x, [(i < 3) * T, 0], [T, T])
        pl.store(t, [i * T, 0], out)


@pl.aiv
def guard_in_a_branch(x: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[N * T, T], pl.f32], flag: pl.Scalar[pl.i32]):
    for i in pl.range(N):
        t = pl.load(x, [i * T, 0], [T, T])
        if flag > 0:
            if i < 3:
                pl.store(t, [i * T, 0], out)


@pl.aiv
def guard_in_a_nested_loop(x: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[N * T, T], pl.f32]):
    for i in pl.range(N):
        for j in pl.range(2):
            if i < 3:
                t = pl.load(x, [j * T, 0], [T, T])
                pl.store(t, [j * T, 0], out)


@pl.aiv
def guard_gives_a_value(x: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[N * T, T], pl.f32]):
    for i in pl.range(N):
        row = 0
        if i < 3:
            row = T
        t = pl.load(x, [row, 0], [T, T])
        pl.store(t, [i * T, 0], out)


@pl.aiv
def truthy(x: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[N * T, T], pl.f32]):
    for i in pl.range(N):
        t = pl.load(x, [i * T, 0], [T, T])
        if i - 2:
            pl.store(t, [i * T, 0], out)


@pl.aiv
def modulo(x: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[N * T, T], pl.f32]):
    for i in pl.range(N):
        t = pl.load(x, [(i % 2) * T, 0], [T, T])
        pl.store(t, [i * T, 0], out)


@pl.aiv
def square(x: pl.Tensor[[N * N * T, T], pl.f32], out: pl.Tensor[[N * T, T], pl.f32]):
    for i in pl.range(N):
        t = pl.load(x, [i * i * T, 0], [T, T])
        pl.store(t, [i * T, 0], out)


@pl.aiv
def halves(x: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[N * T, T], pl.f32]):
    for i in pl.range(N):
        t = pl.load(x, [(i // 2) * T, 0], [T, T])
        pl.store(t, [i * T, 0], out)


@pl.aiv
def carried(x: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[N * T, T], pl.f32]):
    row = 0
    for i in pl.range(N):
        t = pl.load(x, [row, 0], [T, T])
        pl.store(t, [i * T, 0], out)
        row = row + T


@pl.aiv
def inner_bound(x: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[N * T, T], pl.f32]):
    for i in pl.range(N):
        for j in pl.range(i):
            t = pl.load(x, [j * T, 0], [T, T])
            pl.store(t, [j * T, 0], out)


@pl.aiv
def inner_moves(x: pl.Tensor[[N * T, T], pl.f32], out: pl.Tensor[[N * T, T], pl.f32]):
    for i in pl.range(N // 2):
        for j in pl.range(2):
            t = pl.load(x, [(2 * i + j) * T, 0], [T, T])
            pl.store(t, [(2 * i + j) * T, 0], out)


@pytest.mark.parametrize("fn", [truthy, guard_in_arithmetic, guard_in_a_branch, guard_in_a_nested_loop,
                                guard_gives_a_value, modulo, square, halves, carried, inner_bound, inner_moves],
                         ids=lambda f: f.__name__ if hasattr(f, "__name__") else str(f))
def test_loops_not_taken_whole(fn):
    """A branch on a number that moves, a comparison used otherwise than as the condition of
    a branch of the body's own that gives no values, a %, a square, a //, a carried value that changes, a nested
    loop bounded by the variable or moving a window with it: not shift-equivariant."""
    assert affine_forms(_outer(fn), _TILE_RESULT) is None


def _count(o, c, step, hi):
    """Brute force: iterations from the next one on (the last seen had offset ``o``) whose
    offset stays in [0, hi]."""
    t = 0
    while t < 10_000:
        x = o + c * step * (t + 1)
        if not 0 <= x <= hi:
            return t - 1
        t += 1
    return 1 << 62


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(-5, 5), st.integers(0, 200)), min_size=1, max_size=3),
       st.sampled_from([-3, -1, 1, 2]))
def test_room_counts_the_iterations_inside(dims, step):
    """``room`` - the iterations a skip may take with every moving window inside its tensor,
    per dimension - equals counting them one by one."""
    dims = [(min(o, hi), c, hi) for o, c, hi in dims]
    site = Site(None, tuple(c for _, c, _ in dims), tuple(hi for _, _, hi in dims))
    plan = SkipPlan(None, (site,), ([[o for o, _, _ in dims], None],), lambda v: v)
    want = min([_count(o, c, step, hi) for o, c, hi in dims])
    assert plan.room(step) == want


def test_room_of_a_window_not_executed_and_a_fraction():
    site = Site(None, (1,), (100,))
    assert SkipPlan(None, (site,), ([None, None],), lambda v: v).room(1) == 1 << 62
    assert SkipPlan(None, (site,), ([[2.5], None],), lambda v: v).room(1) == -1
    dynamic = Site(None, (1,), None)                   # (limits known at run time, kept with the offsets)
    assert SkipPlan(None, (dynamic,), ([[2], [10]],), lambda v: v).room(1) == 7

    def undefined(v):
        raise KeyError(v)
    scaled = Site(None, (("*", 1, "k"),), (100,))      # (a multiple of a value not defined: cannot be told)
    assert SkipPlan(None, (scaled,), ([[2], None],), undefined).room(1) == -1
    # (a numpy integer wraps: its moves cannot be told)
    assert SkipPlan(None, (site,), ([[np.int32(2)], None],), lambda v: v).room(1) == -1


def test_steady_stops_before_a_term_wraps():
    """A value that moves in a type that wraps (an i8 cast of the loop variable) keeps the
    loop affine only inside the type's range: ``steady`` counts the iterations until it
    leaves it, as it counts those a guard keeps its truth."""
    term = Site(None, (1,), None)
    plan = SkipPlan(None, (), (), lambda v: v, terms=(term,), held=([120, 127, -128],))
    assert plan.steady(1) == 6                        # (121 .. 127 inside, 128 would wrap)
    assert SkipPlan(None, (), (), lambda v: v, terms=(term,), held=([-120, 127, -128],)).steady(-2) == 3
    assert SkipPlan(None, (), (), lambda v: v, terms=(term,), held=([None, None, None],)).steady(1) == INFINITE


def _kept(d, s, pred):
    """Brute force: iterations from the next one on (the last had difference ``d``) for which
    ``x pred 0`` keeps its truth."""
    ops = {"<": lambda x: x < 0, "<=": lambda x: x <= 0, ">": lambda x: x > 0, ">=": lambda x: x >= 0,
           "==": lambda x: x == 0, "!=": lambda x: x != 0}
    f, was = ops[pred], ops[pred](d)
    for k in range(400):
        if f(d + s * (k + 1)) != was:
            return k - 1
    return INFINITE


@settings(max_examples=150, deadline=None)
@given(st.integers(-60, 60), st.integers(-7, 7), st.sampled_from(["<", "<=", ">", ">=", "==", "!="]))
def test_keeps_counts_the_iterations_a_guard_keeps_its_truth(d, s, pred):
    """``keeps`` - how far a guard keeps its truth, in closed form - equals stepping through
    the iterations one by one."""
    assert keeps(d, s, pred) == _kept(d, s, pred)
