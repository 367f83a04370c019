"""The first step into a created accumulator: does ``pl.matmul_acc``'s ``init_cond`` hold there?

``acc = pl.create(..., space=pl.Acc)`` makes storage no instruction has written;
``pl.matmul_acc(acc, a, b, init_cond=c)`` overwrites it (TMATMUL) where ``c`` holds and
accumulates into it (TMATMUL_ACC) elsewhere, so ``c`` must hold on the step that first
reaches the created storage: the one in the first iteration of every loop the accumulator
is carried into from its ``pl.create``.  :func:`truth` evaluates a scalar condition with those
loop variables at their loops' first values (``start``) and everything else left symbolic
(parameters, other loop variables, values read at run time): True, False, or None when it
depends on them.  The DSL parser refuses a False one at the ``pl.matmul_acc`` line
(:mod:`ptopipe.language.parser`); VerifyPipes reports a None one as not proven
(:func:`first_steps` finds them in the IR).  The scalar operators' Python meaning
is :data:`SCALAR_FNS` (the parser folds constants with it too).
"""
from __future__ import annotations

import operator

from .core import BlockArgument, OpResult
from .opdefs import ARITH_BINARY, ARITH_UNARY, TABLE_OPS, ConstOp, CreateOp, ForOp, FuncOp, IfOp, MatmulOp, YieldOp

_MATMUL_ACC = TABLE_OPS["matmul_acc"]

def div_toward_zero(a: int, b: int) -> int:
    """``a / b`` rounded toward zero (MLIR's ``arith.divsi``, C's ``/``); ZeroDivisionError for 0."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def rem_toward_zero(a: int, b: int) -> int:
    """``a - b * div_toward_zero(a, b)``: the sign of ``a`` (MLIR's ``arith.remsi``, C's ``%``)."""
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


#: the scalar operators of the DSL (``arith.*``) on Python values
SCALAR_FNS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
              "%": operator.mod, "/": operator.truediv, "|": operator.or_, "&": operator.and_,
              "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
              ">": operator.gt, ">=": operator.ge, "and": lambda a, b: a and b,
              "or": lambda a, b: a or b, "min": min, "max": max, "truncdiv": div_toward_zero,
              "truncrem": rem_toward_zero}
#: the unary scalar operators of the DSL on Python values
UNARY_FNS = {"-": operator.neg, "not": operator.not_}
#: comparisons of a value with itself
_SELF = {"==": True, "<=": True, ">=": True, "!=": False, "<": False, ">": False}


def _value(v, firsts: dict, known: dict, depth: int = 0):
    """``v`` as a Python constant, or a hashable symbolic form (equal forms: equal values)."""
    if v in firsts:
        return _value(firsts[v], {}, known, depth + 1)
    if isinstance(v, BlockArgument):
        fn = _block_op(v.block)
        if v.name in known and fn is not None and fn.is_a(FuncOp):
            return known[v.name]        # a scalar parameter of the kernel whose value is given
        return ("arg", id(v))
    op = v.op if isinstance(v, OpResult) else None
    if op is None or depth > 64:
        return ("value", id(v))
    if op.is_a(ConstOp):
        return op.value
    sym = ARITH_BINARY.get(op.name)
    if sym is not None:
        a, b = (_value(x, firsts, known, depth + 1) for x in op.operands)
        if sym in ("and", "or"):
            for x, y in ((a, b), (b, a)):
                if not isinstance(x, tuple):            # a known side decides or leaves the other
                    if bool(x) == (sym == "or"):
                        return bool(x)
                    return y if isinstance(y, tuple) else bool(y)
        if not isinstance(a, tuple) and not isinstance(b, tuple):
            try:
                return SCALAR_FNS[sym](a, b)
            except (ZeroDivisionError, TypeError):
                return ("value", id(v))
        if a == b and sym in _SELF:
            return _SELF[sym]
        return (sym, a, b)
    sym = ARITH_UNARY.get(op.name)
    if sym is not None:
        a = _value(op.operands[0], firsts, known, depth + 1)
        return (sym, a) if isinstance(a, tuple) else UNARY_FNS[sym](a)
    if op.name.endswith("cast") and len(op.operands) == 1:
        return _value(op.operands[0], firsts, known, depth + 1)
    return ("value", id(v))


def _block_op(block):
    """The op whose region holds ``block`` (None for a detached block)."""
    r = block.parent
    return r.parent if r is not None else None


def truth(cond, firsts: dict, known: dict | None = None):
    """Does scalar ``cond`` hold where each loop variable in ``firsts`` (block argument ->
    its loop's start value) takes its first value: True / False, None when it depends on a
    value not known here (``known``: scalar parameter values by name)."""
    v = _value(cond, firsts, known or {})
    return None if isinstance(v, tuple) else bool(v)


def created_chain(acc, at):
    """``(create op, firsts)`` when ``acc``, read by an op in block ``at``, is still the
    storage a ``pl.create`` made on the first iteration of the loops it is carried into (a
    create result in ``at``, or the block argument of a loop body ``at`` whose init is one
    such at the loop), ``firsts`` mapping those loops' variables to their start values;
    else None."""
    firsts = {}
    while True:
        if isinstance(acc, OpResult) and acc.op.is_a(CreateOp):
            return (acc.op, firsts) if acc.op.parent is at else None
        loop = _block_op(at)
        if not isinstance(acc, BlockArgument) or acc.block is not at or acc.index == 0 or \
                loop is None or not loop.is_a(ForOp):
            return None
        firsts[at.args[0]] = loop.start
        acc, at = loop.inits[acc.index - 1], loop.parent


def init_steps(fn):
    """``(if op, condition, matmul_acc op)`` of each ``pl.matmul_acc(acc, a, b, init_cond=c)``
    of function op ``fn`` (the parser's ``if c: a @ b else: acc + a @ b``)."""
    for op in fn.walk():
        if not op.is_a(IfOp) or len(op.results) != 1:
            continue
        then, els = (r.blocks[0] for r in op.regions)
        ops = list(els)
        if len(ops) == 2 and ops[0].is_a(_MATMUL_ACC) and ops[1].is_a(YieldOp) and \
                then.first is not None and then.first.is_a(MatmulOp):
            yield op, op.cond, ops[0]


def first_steps(fn, known: dict | None = None) -> list:
    """``(matmul_acc op, create op, truth, guarded)`` of each step of ``fn`` that may be the
    first into a created accumulator: for a ``pl.matmul_acc(..., init_cond=c)`` (``guarded``)
    the :func:`truth` of ``c`` there (``known``: scalar parameter values by name); a bare
    accumulate (a ``.pto``'s ``pto.tmatmul.acc`` with no ``scf.if`` picking ``pto.tmatmul``)
    never overwrites: False."""
    out, guarded = [], set()
    for iff, cond, step in init_steps(fn):
        guarded.add(id(step))
        got = created_chain(step.operands[0], iff.parent)
        if got is not None:
            out.append((step, got[0], truth(cond, got[1], known), True))
    for step in fn.walk():
        if not step.is_a(_MATMUL_ACC) or id(step) in guarded:
            continue
        at, branch = step.parent, _block_op(step.parent)
        while branch is not None and branch.is_a(IfOp):    # a branch reads what its if's block holds,
            if any(o.is_a(MatmulOp) for o in branch.walk()):   # unless an overwrite may come first
                break
            at, branch = branch.parent, _block_op(branch.parent)
        else:
            got = created_chain(step.operands[0], at)
            if got is not None:
                out.append((step, got[0], False, False))
    return out
