"""Which ``pl.range`` loops the fast-forward engine may take whole iterations of, without
running them (:meth:`ptopipe.sim.periodic.engine.FastForward.head`).

The engine proves a kernel's calls repeat block after block and records them one by one
(checking each against the learned one).  Where the interpreter owns the loop, a proven
block can be skipped whole - its iterations not run at all - if every iteration would make
the learned calls moved by the block.  That holds when the body is *shift-equivariant*: its
control flow and its values depend on the loop variable only through sums, differences
and multiples by loop-invariant values (affine in it), so that moving the variable by a
block's worth moves every value by the block's move:

- a nested loop's bounds or carried values, and the operand of any other scalar operation
  (``//``, ``%``, ``min`` ...) must not depend on the loop variable (nor on a loop-carried
  value that changes: the loop's carried values must be passed through unchanged);
- a comparison of a value that moves (a *guard*: ``if i < n - 1``, ``if i == 0``) may decide
  a branch of the body's own (not inside another branch or a nested loop) that gives no
  values: its truth changes at one or two iterations, which the skip stops short of
  (:meth:`~ptopipe.sim.periodic.loops.SkipPlan.steady`), so within a skip it is loop-invariant;
- a value affine in the variable may reach an instruction's operands: a GM window's
  offsets (the engine moves the window with the block) or a scalar operand (the engine's
  proof already saw it equal in every block, so its coefficient is zero);
- a GM window whose offsets move is only skipped while it stays inside its tensor, per
  dimension (:meth:`~ptopipe.sim.periodic.loops.SkipPlan.room`): the interpreter would raise where it leaves it.  It
  must be executed once per iteration (not in a nested loop), so that the offsets it last
  had and its coefficients tell where every later one is.

Anything else - a ``return``, events, barriers, a pipe's initialisation in the loop - makes
the loop unskippable: it runs call by call, recorded or exact, as before.
"""
from __future__ import annotations

from ..ir import ops as irops
from ..ir.opdefs import (ARITH_BINARY, ARITH_UNARY, BufferAttrOp, ConstOp, CopyOp, CreateOp, ForOp,
                         GetSubblockIdOp, IfOp, ImportPeerBufferOp, LoadOp, ReserveBufferOp, StoreOp, TFree,
                         TPop, TPush, YieldOp)
from ..sim.periodic.loops import Guard, Site

_INVARIANT_RESULT = (ConstOp, BufferAttrOp, GetSubblockIdOp, ReserveBufferOp, ImportPeerBufferOp)
_INSTRUCTIONS = (LoadOp, StoreOp, TPop, TPush, TFree, CreateOp)


class _NotSkippable(Exception):
    pass


#: comparisons whose truth, on a value that moves, changes at most twice over a loop (guards)
_COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})


def affine_forms(loop: ForOp, tile_ops) -> tuple[tuple[Site, ...], tuple[Guard, ...], tuple] | None:
    """The moving GM windows and the guards of ``loop``'s body, and its terms (none: Python
    integers do not wrap; a numpy one is no Python int, which the engine cannot tell about),
    or None when the loop is not shift-equivariant (module docstring).  ``tile_ops``: the DSL names of the instructions
    that make a tile (their operands may be affine; their results are not scalars).

    A coefficient is an affine *form*: ``1`` (the loop variable), ``("+", a, b)``,
    ``("-", a, b)``, ``("neg", a)`` or ``("*", a, value)`` with ``value`` a loop-invariant IR
    value; :func:`~ptopipe.sim.periodic.loops.coefficient` evaluates one."""
    body = loop.body
    for arg, y in zip(body.args[1:], body.last.operands):
        if y is not arg:
            return None                 # (a carried value that changes)
    a = _Analysis(body.args[0], tile_ops)
    try:
        a.block(body, nested=False, top=True)
    except _NotSkippable:
        return None
    return tuple(a.sites), tuple(a.guards.values()), ()


class _Analysis:
    """The values of a loop body that move with its variable: affine ones (``forms``: value ->
    its coefficient's form) and guards (``guards``: a comparison's result -> its Guard)."""

    def __init__(self, var, tile_ops):
        self.forms, self.guards, self.sites, self.tile_ops = {var: 1}, {}, [], tile_ops

    def block(self, block, nested: bool, top: bool) -> None:
        forms, guards = self.forms, self.guards
        for op in block:
            cls = op.__class__
            if cls is YieldOp:
                continue
            if guards and any(v in guards for v in op.operands):
                if cls is CopyOp:
                    guards[op.results[0]] = guards[op.source]
                    continue
                if cls is not IfOp or not top or op.results:
                    raise _NotSkippable     # (a guard decides only a branch of the body's own)
            moving = [v for v in op.operands if v in forms]
            if cls in _INVARIANT_RESULT:
                continue
            if cls is CopyOp:
                if moving:
                    forms[op.results[0]] = forms[op.source]
                continue
            name = op.name
            if name in ARITH_BINARY:
                if moving:
                    sym = ARITH_BINARY[name]
                    if sym in _COMPARISONS:
                        guards[op.results[0]] = Guard(op, _binary("-", op.operands, forms), sym)
                    else:
                        forms[op.results[0]] = _binary(sym, op.operands, forms)
                continue
            if name in ARITH_UNARY:
                if moving:
                    if ARITH_UNARY[name] != "-":
                        raise _NotSkippable
                    forms[op.results[0]] = ("neg", forms[op.operands[0]])
                continue
            if cls is IfOp:
                if op.cond in forms:
                    raise _NotSkippable
                for b in (op.then_block, op.else_block):
                    self.block(b, nested, False)
                    if any(v in forms or v in guards for v in b.last.operands):
                        raise _NotSkippable
                continue
            if cls is ForOp:
                if moving:
                    raise _NotSkippable     # (its bounds or carried values move)
                self.block(op.body, True, False)
                if any(v in forms or v in guards for v in op.body.last.operands):
                    raise _NotSkippable
                continue
            if cls is LoadOp or cls is StoreOp:
                offs = tuple(op.offsets)
                if any(v in forms for v in offs):
                    if nested or op.tensor in forms:
                        raise _NotSkippable
                    shape = tuple(op.tensor.type.shape)
                    window = _window(op)
                    if len(offs) != len(shape) or len(window) != len(shape):
                        raise _NotSkippable
                    self.sites.append(Site(op, tuple(forms.get(v, 0) for v in offs),
                                           tuple(n - w for n, w in zip(shape, window))))
                continue
            if cls in _INSTRUCTIONS or op.spec is not None and op.spec.name in self.tile_ops:
                continue                    # (a moving scalar operand: the engine's proof saw it still)
            raise _NotSkippable             # (return, events, barriers, pipe set-up, TALLOC ...)


def _binary(sym: str, operands, forms: dict):
    a, b = operands
    fa, fb = forms.get(a), forms.get(b)
    if sym == "+":
        return fa if fb is None else fb if fa is None else ("+", fa, fb)
    if sym == "-":
        return fa if fb is None else ("neg", fb) if fa is None else ("-", fa, fb)
    if sym == "*" and (fa is None) != (fb is None):
        return ("*", fa, b) if fb is None else ("*", fb, a)
    raise _NotSkippable


def _window(op) -> tuple:
    return irops.gm_window(op)
