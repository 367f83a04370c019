"""DSL source -> op IR.  Reads the Python AST of a ``pl`` kernel (like pypto / Triton), so
loops stay loops: plain Python reassignment inside ``for`` / ``if`` becomes explicit
loop-carried values (``pl.for`` block arguments) and branch results (``pl.if`` results) in
SSA form.  Each function becomes a ``pl.func`` op; expressions are flattened into ops as
they are read, in evaluation order, into the block being built.  A value assigned to a name
carries that name as its hint (made unique per function: ``x``, ``x_1``, ...); a nested
expression's value has none.  Constant expressions fold at compile time (a folded operand's
op is erased; ``**`` ``^`` ``<<`` ``>>``, which no scalar op computes, are taken on constants
only), and an ``if`` on a constant keeps only the taken branch.

Names that are not kernel values are compile-time constants looked up in the kernel's
globals and closure (ints, floats - numpy scalars as the numbers they hold -, ``pl``
objects).  A comparison of two such values that
are not both numbers (a builder's ``mode == "relu"``, ``bias is None``, ``dt in ("f16",
"bf16")``), an ``if`` on a str / None / tuple and ``a if c else b`` on such values are
decided while the kernel is read, as an ``if`` on a bool constant is; so are subscripts of
such values and calls of a few pure builtins on them (``SHAPES[0]``, ``len(SHAPES)``,
``min(N, 4)``: :data:`_STATIC_BUILTINS`).  Every error is a
:class:`~ptopipe.errors.CompileError` at ``file:line:col`` with a fix hint.
"""
from __future__ import annotations

import ast
import builtins
import difflib
import operator

import numpy as np

from ..errors import CompileError
from ..ir.core import Block, Operation, OpResult, Region, gc_paused
from ..ir.first_step import SCALAR_FNS, truth
from ..ir.vocab import AUTO, FunctionKind, Loc
from ..arch.vocab import ALIGNMENT, Direction, SyncPipe, TileLayout, TileSplitAxis
from ..ir.opdefs import (INT_ONLY, MAY_BE_ABSENT, SCALAR_CALLS, ARITH_OP, ARITH_UNARY_OP, BufferAttrOp, ConstOp, CopyOp, ForOp, FuncOp,
                         IfOp, ImportPeerBufferOp, OperandView, ReserveBufferOp, ReturnOp,
                         YieldOp, scalar_result_type, unary_result_type)
from ..ir.ops import (DIRS, REQUIRED, SPLITS, ConstArg, OpError, broadcast_form, canonical_direction,
                      infer, lookup)
from ..ir.pipe_config import name_rings
from ..ir.types import (BOOL, FLOAT_DTYPES, INDEX, NONE, BufferType, MemorySpace, ScalarType, TensorType,
                        TileValueType, describe)
from .surface import DSLOp, DType, Tile
from ..errors import near_name, with_article

_SCALAR_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%",
               ast.Div: "/", ast.BitOr: "|", ast.BitAnd: "&"}
_PY = SCALAR_FNS
_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
# comparisons of two compile-time Python values (a builder's `mode == "relu"`, `bias is None`),
# decided while the kernel is read
_PY_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
           ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
# Python builtins a kernel may call on compile-time values (len(SHAPES), min(N, 4)): evaluated
# while reading, as a constant expression is folded
_STATIC_BUILTINS = ("len", "min", "max", "abs", "int", "float", "round", "sum", "bool")
_BUILTINS = {n: getattr(builtins, n) for n in _STATIC_BUILTINS}
# the compile-time values whose truth an `if` takes from Python (numbers become kernel constants)
_STATIC_TRUTH = (str, bytes, tuple, list, dict, frozenset, set, type(None))
# the pl ops of the Python operators a tile has no operator for (a fix names them)
_TILE_OP_FOR = {ast.Pow: "pl.pow(a, b) / pl.pows(a, s)", ast.Mod: "pl.rem(a, b) / pl.rems(a, s) "
                "(pl.fmod / pl.fmods for floats)", ast.BitOr: "pl.or_(a, b) / pl.ors(a, s)",
                ast.BitAnd: "pl.and_(a, b) / pl.ands(a, s)", ast.BitXor: "pl.xor(a, b) / pl.xors(a, s)",
                ast.LShift: "pl.shl(a, b) / pl.shls(a, s)", ast.RShift: "pl.shr(a, b) / pl.shrs(a, s)",
                ast.MatMult: "pl.matmul(a, b) on a Left and a Right tile (pl.move them there)"}
# the Python operators a kernel takes on constants only, folded while reading (``10**12``,
# ``1 << 20``): no scalar op computes them at run time
_CONSTANT_ONLY = {ast.Pow: ("**", operator.pow), ast.BitXor: ("^", operator.xor),
                  ast.LShift: ("<<", operator.lshift), ast.RShift: (">>", operator.rshift)}
# the most bits a folded ``**`` / ``<<`` may make (a typo such as 10**10**10 would take the
# machine's memory and hours, not give a kernel constant)
_FOLD_BITS = 4096
_TILE_BIN = {"+": ("add", "adds"), "-": ("sub", "subs"), "*": ("mul", "muls"),
             "/": ("div", "divs")}
_UNSUPPORTED = {
    ast.While: "while loops are not supported; use `for i in pl.range(n)` with a static trip count",
    ast.Try: "try/except is not supported in kernels; check inputs before launching the kernel",
    ast.With: "`with` blocks are not supported in kernels; write the statements directly",
    ast.Lambda: "lambdas are not supported in kernels; write the expression inline",
    ast.ListComp: "comprehensions are not supported in kernels; write a `for i in pl.range(...)` loop",
    ast.SetComp: "comprehensions are not supported in kernels; write a `for i in pl.range(...)` loop",
    ast.DictComp: "comprehensions are not supported in kernels; write a `for i in pl.range(...)` loop",
    ast.GeneratorExp: "generator expressions are not supported in kernels; use a pl.range loop",
    ast.FunctionDef: "nested functions are not supported in kernels; define kernels at module level",
    ast.AsyncFunctionDef: "nested functions are not supported in kernels",
    ast.ClassDef: "classes are not supported inside kernels",
    ast.Break: "break is not supported: pl.range loops have a static trip count; use `if`",
    ast.Continue: "continue is not supported; guard the rest of the body with `if`",
    ast.Raise: "raise is not supported in kernels",
    ast.Assert: "assert is not supported in kernels; check at build time, outside the kernel",
    ast.Import: "imports belong at module level, not inside kernels",
    ast.ImportFrom: "imports belong at module level, not inside kernels",
    ast.Global: "global is not supported in kernels",
    ast.Nonlocal: "nonlocal is not supported in kernels",
    ast.Delete: "del is not supported in kernels",
    ast.Dict: "dicts are not supported in kernels",
    ast.Set: "sets are not supported in kernels",
    ast.JoinedStr: "strings are not kernel values",
    ast.Starred: "*args are not supported in kernels",
    ast.Await: "await is not supported in kernels",
    ast.Yield: "yield is not supported in kernels (pl.yield_ yields loop-carried values)",
    ast.NamedExpr: "the walrus operator is not supported in kernels",
}


def _popped_from(v, steps: int = 64):
    """The TPOP whose tile ``v`` is, or is computed from by ops of the same dtype (the first
    such operand, ``steps`` ops back at most), else None."""
    dtype = getattr(v.type, "dtype", None) if v is not None else None
    while isinstance(v, OpResult) and steps > 0:
        op = v.op
        if op.name == "pl.tpop":
            return op
        v = next((x for x in op.operands if isinstance(x.type, TileValueType) and x.type.dtype == dtype), None)
        steps -= 1
    return None


def _located_in(e: CompileError, code) -> bool:
    """``e`` was placed at a line of the compiled expression ``code`` (``pl.Tensor[...]`` and
    the like take their caller's line: Python's own at ``def`` time, but this code's lines
    count from the kernel's first line, not the file's)."""
    tb = e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is code:
            return e.where == f"{code.co_filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return False


class Source:
    """Where a kernel's AST came from, to turn AST positions into file:line:col."""

    def __init__(self, file: str, line0: int = 0, col0: int = 0):
        self.file, self.line0, self.col0 = file, line0, col0

    def loc(self, node) -> Loc:
        return Loc(self.file, getattr(node, "lineno", 1) + self.line0,
                   getattr(node, "col_offset", 0) + self.col0 + 1)


def error(src: Source, node, msg: str, fix: str | None = None) -> CompileError:
    return CompileError(msg, where=str(src.loc(node)), fix=fix)


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _assigned_names(stmts) -> list:
    out = []
    for s in stmts:
        for n in ast.walk(s):
            tgts = []
            if isinstance(n, ast.Assign):
                tgts = n.targets
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
                tgts = [n.target]
            elif isinstance(n, ast.For):
                tgts = [n.target]
            for t in tgts:
                for x in ast.walk(t):
                    if isinstance(x, ast.Name) and x.id not in out:
                        out.append(x.id)
    return out


def _is_call_to(node, ns_lookup, name: str) -> bool:
    if not isinstance(node, ast.Call):
        return False
    obj = ns_lookup(node.func)
    return isinstance(obj, DSLOp) and obj.op == name


class _Void:
    """The value of an expression whose op has no result (a call statement); what the
    parser reads back is its ``type`` (NONE) and its ``op``."""
    __slots__ = ("op",)
    type = NONE
    name = None

    def __init__(self, op: Operation):
        self.op = op


def _fresh_const(v) -> bool:
    """``v`` is the value of a constant as written (a literal, a module constant, a folded
    expression), not yet used nor named: constant expressions fold only such values, and
    the typing rules see its value."""
    return v.__class__ is OpResult and v.name is None and v.op.__class__ is ConstOp


def _is_const(v) -> bool:
    """``v`` is a constant's value (a literal, a module or closure number, a folded
    expression), named or not."""
    return v.__class__ is OpResult and v.op.__class__ is ConstOp


def _plain(v):
    """A compile-time value with numpy scalars made Python's (``np.int64(16)`` from
    ``np.prod``, ``np.float32(0.5)``: the int / float / bool they hold), in a list or tuple
    too; anything else as it is."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (list, tuple)) and any(isinstance(x, (np.generic, list, tuple)) for x in v):
        return type(v)(_plain(x) for x in v)
    return v


def _is_number(x) -> bool:
    """A Python number a kernel takes as a constant (bool, int, float; pl enums are ints)."""
    return isinstance(x, (bool, int, float))


def _runs_no_iteration(bounds) -> bool:
    """Do loop bounds ``[start, stop, step]``, all constants, give no iteration?"""
    vals = [b.op.value for b in bounds if b.__class__ is OpResult and b.op.__class__ is ConstOp]
    if len(vals) != 3 or not all(isinstance(v, int) for v in vals):
        return False
    start, stop, step = vals
    return start >= stop if step > 0 else start <= stop


def _typing_arg(v):
    """What the op table's typing rules read for an operand: a constant as written as its
    value, anything else as is (the rules read ``.type``)."""
    if isinstance(v, list):
        return OperandView(tuple(_typing_arg(x) for x in v))
    return ConstArg(v.op.value, v.type) if _fresh_const(v) else v


def source_name(hint: str) -> str:
    """The source variable of an SSA name hint the parser gave a re-assignment
    (:meth:`FunctionParser.fresh`: ``v``, ``v_1``, ``v_2`` ... are all ``v``), for messages
    in the kernel's terms (a source name that itself ends in ``_<digits>`` reads as its stem)."""
    stem, _, k = hint.rpartition("_")
    return stem if stem and k.isdigit() else hint


class FunctionParser:
    """Parses one ``def`` into a ``pl.func`` op (:meth:`parse`)."""

    def __init__(self, fdef: ast.FunctionDef, kind: FunctionKind, ns: dict, src: Source,
                 annotations: dict | None = None):
        self.fdef, self.kind, self.ns, self.src = fdef, kind, ns, src
        self.annotations = annotations or {}     # already evaluated (live functions)
        self.env: dict = {}                      # source name -> its current Value
        self.defined: set = set()
        self.block: Block | None = None          # where the ops being read are appended
        # a pl.create accumulator no instruction has written: its value -> the create op; a
        # loop's block argument it starts -> (that op, the loop body)
        self.unwritten: dict = {}
        self.no_iteration: dict = {}     # an unwritten value a loop of no iteration gave -> its line
        self.guarded = False                     # reading matmul_acc(..., init_cond=)'s acc
        # a name a loop body defines, which does not outlive the loop: name -> (the line
        # assigning it, the loop's line, the loop's result names)
        self.loop_locals: dict = {}
        self.taken = {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name)} | \
                     {a.arg for a in fdef.args.args}

    # -- helpers -----------------------------------------------------------------------
    def err(self, node, msg, fix=None) -> CompileError:
        return error(self.src, node, msg, fix)

    def loc(self, node) -> Loc:
        return self.src.loc(node)

    def unsupported(self, node) -> CompileError:
        what, _, fix = _UNSUPPORTED[type(node)].partition("; ")
        return self.err(node, what, fix or "kernels use assignments, pl op calls, "
                                           "`for i in pl.range(...)`, `if` and `return`")

    def fresh(self, base: str) -> str:
        """The SSA name hint of the next definition of source name ``base`` (``base``, then
        ``base_1``, ``base_2`` ...: :func:`source_name` reads it back)."""
        if base not in self.defined:
            self.defined.add(base)
            return base
        k = 1
        while f"{base}_{k}" in self.defined or f"{base}_{k}" in self.taken:
            k += 1
        name = f"{base}_{k}"
        self.defined.add(name)
        return name

    def emit(self, op: Operation) -> Operation:
        return self.block.append(op)

    def bind(self, name: str, value, node) -> None:
        """Assign ``value`` (an expression just read) to source name ``name``: the op that
        computed it takes the name and the statement's location; a value that already has
        a name (``y = x``) is copied into a named value."""
        ssa = self.fresh(name)
        if value.name is None:
            value.name = ssa
            value.op.loc = self.loc(node)
        else:
            value = self.emit(Operation(CopyOp.name, (value,), [value.type], {}, (),
                                        self.loc(node), [ssa])).results[0]
        self.env[name] = value

    def lookup_ns(self, node):
        """Evaluate a Name/Attribute chain in the kernel's namespace (None if not found)."""
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return None
            return self.ns.get(node.id, _MISSING)
        if isinstance(node, ast.Attribute):
            base = self.lookup_ns(node.value)
            if base is None or base is _MISSING:
                return base
            return getattr(base, node.attr, _MISSING)
        return None

    def near(self, node, ops: bool = False) -> str:
        """``did you mean pl.relu? `` for a misspelled name (``pl.reluu``, ``TWOO``): the closest
        attribute of its module (``ops``: op of it), or kernel value or module name, else ""."""
        if isinstance(node, ast.Attribute):
            base = self.lookup_ns(node.value)
            if base is None or base is _MISSING:
                return ""
            names = [n for n in dir(base) if not n.startswith("_")
                     and (not ops or isinstance(getattr(base, n, None), DSLOp))]
            prefix, word = f"{ast.unparse(node.value)}.", node.attr
        elif isinstance(node, ast.Name):
            names, prefix, word = [*self.env, *self.ns], "", node.id
        else:
            return ""
        near = difflib.get_close_matches(word, [n for n in names if n != word], n=1, cutoff=0.6)
        return f"did you mean {prefix}{near[0]}? " if near else ""

    def static_operand(self, node):
        """``(True, value)`` when ``node`` is a compile-time Python value - a literal, a module
        or closure name that is not a kernel value, an attribute of one, a tuple / list of
        them - else ``(False, None)``."""
        if isinstance(node, ast.Constant):
            return True, node.value
        if isinstance(node, ast.Name):
            if node.id in self.env or node.id not in self.ns:
                return False, None
            return True, self.ns[node.id]
        if isinstance(node, ast.Attribute):
            ok, base = self.static_operand(node.value)
            if ok:
                v = getattr(base, node.attr, _MISSING)
                return (True, v) if v is not _MISSING else (False, None)
        if isinstance(node, (ast.Tuple, ast.List)):
            items = [self.static_operand(e) for e in node.elts]
            if all(ok for ok, _ in items):
                return True, tuple(v for _, v in items)
        return False, None

    def static_value(self, node):
        """``(True, value)`` when ``node`` - a subscript or a call of one of
        :data:`_STATIC_BUILTINS` - reads compile-time values only (module or closure constants,
        literals: ``SHAPES[0]``, ``len(SHAPES)``, ``min(N, 4)``), evaluated now; else
        ``(False, None)``."""
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and (n.id in self.env or n.id in self.loop_locals):
                return False, None
            if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name) and n.func.id in _STATIC_BUILTINS
                                                and n.func.id not in self.ns):
                return False, None
            if type(n) in _UNSUPPORTED or isinstance(n, (ast.Lambda, ast.NamedExpr)):
                return False, None
        try:
            code = compile(ast.Expression(body=node), self.src.file, "eval")
            v = _plain(eval(code, {"__builtins__": _BUILTINS}, dict(self.ns)))   # noqa: S307
        except Exception:               # (not a value: the kernel-value error says what is wrong)
            return False, None
        return (True, v) if isinstance(v, (bool, int, float)) else (False, None)

    def static_compare(self, node: ast.Compare):
        """The bool of a one-operator comparison of two compile-time Python values that are not
        both numbers (numbers fold as kernel constants), decided while the kernel is read -
        a builder's switch: `mode == "relu"`, `bias is None`, `dtype in ("f16", "bf16")` -
        else None."""
        ok_l, a = self.static_operand(node.left)
        ok_r, b = self.static_operand(node.comparators[0])
        op = type(node.ops[0])
        if not (ok_l and ok_r) or (op in _CMP and all(_is_number(x) for x in (a, b))):
            return None
        try:
            val = _PY_CMP[op](a, b)
        except TypeError:
            return None
        return val if type(val) is bool else None

    def const_eval(self, node, what: str):
        """A compile-time constant (attribute values, annotations, shapes)."""
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in self.env:
                raise self.err(n, f"{what} must be a compile-time constant, but '{n.id}' is a "
                                  "kernel value", "use a literal or a module-level / closure "
                                  "constant")
            if type(n) in _UNSUPPORTED:
                raise self.unsupported(n)
        try:
            code = compile(ast.Expression(body=node), self.src.file, "eval")
            return _plain(eval(code, dict(self.ns)))    # noqa: S307 - the user's own kernel source
        except CompileError as e:
            if _located_in(e, code):        # (a pl.Tensor[...] of a string annotation: at its line)
                e.where = str(self.loc(node))
                e.args = (e.render(),)
            raise
        except NameError as e:
            at = next((n for n in ast.walk(node) if isinstance(n, ast.Name)
                       and n.id not in self.ns and f"'{n.id}'" in str(e)), node)
            raise self.err(at, f"{what}: {e}{near_name(e)}", "define the constant at module level") from None
        except Exception as e:   # a bad annotation / constant expression
            raise self.err(node, f"{what}: {e}{near_name(e)}",
                           "give a literal, a pl name (pl.Mat, pl.f32, pl.TILE_UP_DOWN ...) or a "
                           "module-level constant") from None

    # -- function -------------------------------------------------------------------------
    def parse(self) -> Operation:
        with gc_paused():
            return self._parse()

    def _parse(self) -> Operation:
        f = self.fdef
        a = f.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs:
            raise self.err(f, "kernel parameters must be plain named parameters (no defaults, "
                              "*args or **kwargs)", "list each tensor / scalar parameter with its type")
        types, names = [], []
        for arg in a.args:
            if arg.annotation is None:
                raise self.err(arg, f"parameter '{arg.arg}' has no type",
                               f"annotate it, e.g. {arg.arg}: pl.Tensor[[M, N], pl.f32] or "
                               f"{arg.arg}: pl.Scalar[pl.i32]")
            t = self.annotations.get(arg.arg)
            if t is None or isinstance(t, str):
                t = self.const_eval(arg.annotation, f"type of parameter '{arg.arg}'")
            if not isinstance(t, (TensorType, ScalarType)):
                if isinstance(t, (TileValueType, BufferType)):
                    shown = f"is {with_article(describe(t))}"
                elif isinstance(t, type) and t.__module__ == Tile.__module__:
                    what = "dtype" if t.__name__ == "Scalar" else "shape and dtype"
                    shown = f"is annotated pl.{t.__name__} without its {what}"
                else:
                    shown = f"has type {t!r}"
                raise self.err(arg.annotation, f"parameter '{arg.arg}' {shown}; kernel "
                                               "parameters are GM tensors or scalars",
                               "use pl.Tensor[[...], dtype] or pl.Scalar[dtype]")
            types.append(t)
            names.append(self.fresh(arg.arg))
            self.env[arg.arg] = None        # a kernel value from here on (not a constant)
        entry = Block(types, names)
        for arg, v in zip(a.args, entry.args):
            self.env[arg.arg] = v
        body = f.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]     # docstring
        self.block = entry
        self.stmts(body)
        fn = Operation(FuncOp.name, (), (), {"sym_name": f.name, "kind": self.kind},
                       (Region([entry]),), self.loc(f))
        name_rings(fn)              # a pipe op names its ring by its buffer
        return fn

    # -- statements -----------------------------------------------------------------------
    def stmts(self, stmts) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s) -> None:
        if type(s) in _UNSUPPORTED:
            raise self.unsupported(s)
        if isinstance(s, ast.Pass):
            return
        if isinstance(s, ast.Assign):
            return self.assign(s)
        if isinstance(s, ast.AugAssign):
            if not isinstance(s.target, ast.Name):
                raise self.err(s, "augmented assignment needs a plain name target")
            val = self.binop(s, s.op, self.name_expr(s.target), self.expr(s.value))
            self.bind(s.target.id, val, s)
            return
        if isinstance(s, ast.AnnAssign):
            if not isinstance(s.target, ast.Name) or s.value is None:
                raise self.err(s, "annotated assignment needs a name and a value")
            t = self.const_eval(s.annotation, f"type of '{s.target.id}'")
            val = self.expr(s.value)
            if val.type != t:
                raise self.err(s.value, f"'{s.target.id}' is annotated {describe(t)} but the "
                                        f"value is {with_article(describe(val.type))}")
            self.bind(s.target.id, val, s)
            return
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant) and isinstance(s.value.value, str):
                return   # a string statement (comment)
            if not isinstance(s.value, ast.Call):
                raise self.err(s, "an expression statement must be an op call",
                               "assign the value to a name, or remove the statement")
            if _is_call_to(s.value, self.lookup_ns, "yield_"):
                raise self.err(s, "pl.yield_ must be the last statement of a loop / branch body "
                                  "and assign the results: `x = pl.yield_(v)`")
            self.expr(s.value).op.loc = self.loc(s)
            return
        if isinstance(s, ast.For):
            return self.for_(s)
        if isinstance(s, ast.If):
            return self.if_(s)
        if isinstance(s, ast.Return):
            vals = []
            if s.value is not None:
                v = s.value
                items = v.elts if isinstance(v, ast.Tuple) else [v]
                vals = [self.expr(x) for x in items]
                if self.kind in (FunctionKind.AIC, FunctionKind.AIV):
                    raise self.err(s, "AIC/AIV kernels return no values",
                                   "write results to an output tensor with pl.store")
            self.emit(Operation(ReturnOp.name, vals, (), {}, (), self.loc(s)))
            return
        raise self.err(s, f"{type(s).__name__} statements are not supported in kernels",
                       "use assignments, op calls, `for ... in pl.range(...)` and `if`")

    def assign(self, s: ast.Assign) -> None:
        if len(s.targets) != 1:
            raise self.err(s, "chained assignment (a = b = ...) is not supported")
        tgt = s.targets[0]
        if _is_call_to(s.value, self.lookup_ns, "yield_"):
            raise self.err(s, "pl.yield_ must be the last statement of a loop or branch body")
        if not isinstance(tgt, ast.Name):
            raise self.err(tgt, "only single-name assignment is supported (no tuple unpacking, "
                                "subscripts or attributes)", "assign each value to its own name")
        v = s.value
        if _is_call_to(v, self.lookup_ns, "reserve_buffer"):
            return self.reserve_buffer(tgt.id, v, s)
        if _is_call_to(v, self.lookup_ns, "import_peer_buffer"):
            return self.import_peer_buffer(tgt.id, v, s)
        val = self.expr(v)
        if val.type is NONE:
            raise self.err(v, "this op has no result to assign", "call it as a statement")
        self.bind(tgt.id, val, s)

    def _kw(self, call: ast.Call, allowed: tuple, required: tuple, what: str) -> dict:
        if call.args:
            raise self.err(call.args[0], f"{what} takes keyword arguments only",
                           f"write {what}({', '.join(f'{k}=...' for k in allowed)})")
        got = {}
        for k in call.keywords:
            if k.arg not in allowed:
                raise self.err(k.value if k.arg is None else k, f"{what} has no argument {k.arg!r}",
                               f"its arguments are {', '.join(allowed)}")
            got[k.arg] = k.value
        for r in required:
            if r not in got:
                raise self.err(call, f"{what} needs {r}=",
                               "e.g. pl.reserve_buffer(name=\"c2v_slot_buffer\", size=SLOT_NUM * "
                               "SLOT_SIZE, base=pl.AUTO)" if what == "pl.reserve_buffer" else
                               "e.g. pl.import_peer_buffer(name=\"c2v_slot_buffer\", "
                               "peer_func=my_vector_kernel)")
        return got

    def reserve_buffer(self, name: str, call: ast.Call, s) -> None:
        kw = self._kw(call, ("name", "size", "base"), ("name", "size"), "pl.reserve_buffer")
        bname = self.const_eval(kw["name"], "reserve_buffer name")
        if not isinstance(bname, str) or not bname:
            raise self.err(kw["name"], "reserve_buffer name must be a non-empty string")
        size = self.const_eval(kw["size"], "reserve_buffer size")
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise self.err(kw["size"], f"reserve_buffer size must be a positive number of bytes, "
                                       f"got {size!r}", "size=SLOT_NUM * SLOT_SIZE")
        base = AUTO
        if "base" in kw:
            base = self.const_eval(kw["base"], "reserve_buffer base")
            if base is not AUTO and (not isinstance(base, int) or isinstance(base, bool)
                                     or base < 0 or base % ALIGNMENT):
                raise self.err(kw["base"], f"reserve_buffer base must be pl.AUTO or a {ALIGNMENT}-byte "
                                           f"aligned address, got {base!r}",
                               "use base=pl.AUTO to let the compiler choose")
        space = {FunctionKind.AIV: "UB", FunctionKind.AIC: "L1"}.get(self.kind)
        op = self.emit(ReserveBufferOp.build(
            buffer_name=bname, size=int(size), base=base if base is AUTO else int(base),
            memory_space=space, result_types=[BufferType("reserve")], loc=self.loc(s),
            result_names=[self.fresh(name)]))
        self.env[name] = op.buf

    def import_peer_buffer(self, name: str, call: ast.Call, s) -> None:
        kw = self._kw(call, ("name", "peer_func"), ("name", "peer_func"), "pl.import_peer_buffer")
        bname = self.const_eval(kw["name"], "import_peer_buffer name")
        if not isinstance(bname, str) or not bname:
            raise self.err(kw["name"], "import_peer_buffer name must be a non-empty string")
        pf = kw["peer_func"]
        if isinstance(pf, ast.Name):
            peer = pf.id                      # may be defined later in the module
        elif isinstance(pf, ast.Constant) and isinstance(pf.value, str):
            peer = pf.value
        elif isinstance(pf, ast.Attribute):
            peer = pf.attr
        else:
            raise self.err(pf, "peer_func must name the paired consumer function",
                           "peer_func=my_vector_kernel")
        op = self.emit(ImportPeerBufferOp.build(
            buffer_name=bname, peer_func=peer, result_types=[BufferType("import")],
            loc=self.loc(s), result_names=[self.fresh(name)]))
        self.env[name] = op.buf

    # loops and branches ---------------------------------------------------------------------
    def _yield_stmt(self, stmts, carried=None):
        """(body without a trailing ``targets = pl.yield_(...)``, targets, value nodes, the
        statement).  ``carried``: a loop's init value nodes, which the yielded values must
        match one for one."""
        if stmts:
            last = stmts[-1]
            if isinstance(last, ast.Assign) and _is_call_to(last.value, self.lookup_ns, "yield_"):
                t = last.targets[0]
                names = t.elts if isinstance(t, ast.Tuple) else [t]
                if not all(isinstance(n, ast.Name) for n in names) or len(last.targets) != 1:
                    raise self.err(last, "pl.yield_ results must be assigned to names")
                if last.value.keywords:
                    raise self.err(last.value, "pl.yield_ takes positional values only")
                got = len(last.value.args)
                if carried is not None and got != len(carried):
                    raise self.err(last.value, f"the loop carries {_count(len(carried), 'value')} "
                                               f"(init_values=({', '.join(ast.unparse(x) for x in carried)}"
                                               f"{',' if len(carried) == 1 else ''}) at line {self.loc(carried[0]).line}) "
                                               f"but pl.yield_ gives {got}" if carried else
                                   "a loop without init_values carries nothing to pl.yield_",
                                   "yield the next value of each carried name, in the init_values' order"
                                   if carried else "carry values with pl.range(..., init_values=(x0, ...))")
                if len(names) != got:
                    raise self.err(last, f"{_count(len(names), 'name')} for {got} yielded values",
                                   "assign one name per yielded value: `a, b = pl.yield_(x, y)`")
                return stmts[:-1], [n.id for n in names], last.value.args, last
        return stmts, [], [], None

    def for_(self, s: ast.For) -> None:
        if s.orelse:
            raise self.err(s.orelse[0], "for ... else is not supported")
        it = s.iter
        if not _is_call_to(it, self.lookup_ns, "range"):
            hint = ("use pl.range(...) instead of range(...)" if isinstance(it, ast.Call) and
                    isinstance(it.func, ast.Name) and it.func.id == "range" else
                    "loops iterate over pl.range(start, stop, step)")
            raise self.err(it, "kernel loops must iterate over pl.range(...)", hint)
        if len(it.args) not in (1, 2, 3):
            raise self.err(it, "pl.range takes 1 to 3 positional arguments (stop | start, stop[, step])")
        inits_ast = None
        for k in it.keywords:
            if k.arg != "init_values":
                raise self.err(k, f"pl.range has no argument {k.arg!r}", "use init_values=(...)")
            if not isinstance(k.value, (ast.Tuple, ast.List)):
                raise self.err(k.value, "init_values must be a tuple")
            inits_ast = k.value.elts
        outer = self.block
        mark = outer.last                   # pl.range(stop) starts at 0: its op goes first
        bounds = [self.expr(a) for a in it.args]
        for a, b in zip(it.args, bounds):
            if not isinstance(b.type, ScalarType):
                raise self.err(a, f"loop bound is {with_article(describe(b.type))}", "loop bounds are scalars")
            if b.type.dtype in FLOAT_DTYPES:
                raise self.err(a, f"loop bound is {with_article(b.type.dtype)} scalar: a trip count is a whole number",
                               "use an integer (e.g. int(...) of the value when the kernel is built), "
                               "or an index expression")
        here = self.loc(s)
        if len(bounds) == 1:
            zero = Operation(ConstOp.name, (), [INDEX], {"value": 0}, (), here, [None])
            outer.prepend(zero) if mark is None else mark.insert_after(zero)
            bounds.insert(0, zero.results[0])
        if len(bounds) == 2:
            bounds.append(self.emit(Operation(ConstOp.name, (), [INDEX], {"value": 1}, (), here,
                                              [None])).results[0])
        step = bounds[2]
        if _fresh_const(step) and step.op.value == 0:
            raise self.err(it, "pl.range step must not be 0")
        tgt = s.target
        explicit = []
        if isinstance(tgt, ast.Tuple):
            if len(tgt.elts) != 2 or not isinstance(tgt.elts[0], ast.Name) or \
                    not isinstance(tgt.elts[1], ast.Tuple) or inits_ast is None:
                raise self.err(tgt, "write `for i, (x, y) in pl.range(n, init_values=(x0, y0))`")
            explicit = tgt.elts[1].elts
            if len(explicit) != len(inits_ast) or not all(isinstance(n, ast.Name) for n in explicit):
                raise self.err(tgt, "one loop-carried name per init value")
            tgt = tgt.elts[0]
        elif inits_ast is not None:
            raise self.err(it, "init_values= needs `for i, (x, ...) in pl.range(...)`")
        if not isinstance(tgt, ast.Name):
            raise self.err(tgt, "the loop variable must be a plain name")
        body_ast, ynames, yvals, ynode = self._yield_stmt(s.body, inits_ast or [])
        if explicit and not ynames:
            raise self.err(s, "a loop with init_values must end with `x = pl.yield_(v)`")
        inits = [self.expr(x) for x in (inits_ast or [])]
        # implicit loop-carried values: names reassigned in the body that exist before it
        carried = [n for n in _assigned_names(body_ast) if n in self.env
                   and n not in [e.id for e in explicit] and n != tgt.id]
        carried = [n for n in carried if not isinstance(self.env[n].type, BufferType)]
        before = dict(self.env)
        inits += [before[n] for n in carried]
        sources = [tgt.id] + [n.id for n in explicit] + carried
        body = Block([INDEX] + [v.type for v in inits], [self.fresh(n) for n in sources])
        for n, a in zip(sources, body.args):
            self.env[n] = a
        start = ("0" if len(it.args) == 1 else str(bounds[0].op.value) if _fresh_const(bounds[0])
                 else ast.unparse(it.args[0]))
        first = f"{tgt.id} = {start} (the first iteration of the loop at line {here.line})"
        for a, x in zip(body.args[1:], inits):
            made = None if _runs_no_iteration(bounds) else self._unwritten_at(x)
            if made is not None:                # unwritten when the first iteration starts
                firsts, words = self._first_step(x)
                self.unwritten[a] = (made, body, {**firsts, body.args[0]: bounds[0]}, words + [first])
        self.block = body
        self.stmts(body_ast)
        yields = [self.expr(v) for v in yvals] + [self.env[n] for n in carried]
        last = {}
        for x in ast.walk(ast.Module(body=list(body_ast), type_ignores=[])):
            if isinstance(x, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                for t in (x.targets if isinstance(x, ast.Assign) else [x.target]):
                    if isinstance(t, ast.Name):
                        last[t.id] = x
        for v, y, node in zip(body.args[1:], yields,
                              list(yvals) + [last.get(n, s) for n in carried]):
            if v.type != y.type:
                raise self.err(node, f"loop-carried '{source_name(v.name or '?')}' starts as {with_article(describe(v.type))} but "
                                     f"the loop body makes it {with_article(describe(y.type))}",
                               "a value carried across iterations must keep its type")
        self.emit(Operation(YieldOp.name, yields, (), {}, (), here))
        for n in self.env:                  # what the body defined ends with it
            if n not in before and n not in sources:
                self.loop_locals.setdefault(n, (self.loc(last[n]).line if n in last else here.line, here.line,
                                                ynames + carried))
        self.block = outer
        self.env = before
        names = [self.fresh(n) for n in ynames + carried]
        op = self.emit(Operation(ForOp.name, bounds + inits, [v.type for v in inits], {},
                                 (Region([body]),), here, names))
        for n, r in zip(ynames + carried, op.results):
            self.env[n] = r
        if _runs_no_iteration(bounds):      # its results are its initial values, unwritten ones too
            for r, x in zip(op.results, inits):
                if x in self.unwritten:
                    self.unwritten[r] = self.unwritten[x]
                    self.no_iteration[r] = here.line

    def if_(self, s: ast.If) -> None:
        ok, v = self.static_operand(s.test)
        if ok and isinstance(v, _STATIC_TRUTH):     # `if mode:` / `if bias:` of a builder
            for x in (s.body if v else s.orelse):
                self.stmt(x)
            return
        cond = self.expr(s.test)
        if not isinstance(cond.type, ScalarType):
            raise self.err(s.test, f"if condition is {with_article(describe(cond.type))}", "compare scalars")
        if _fresh_const(cond):     # compile-time condition: keep the taken branch only
            cond.op.erase()
            for x in (s.body if cond.op.value else s.orelse):
                self.stmt(x)
            return
        outer = self.block
        before = dict(self.env)
        then_ast, tnames, tvals, tnode = self._yield_stmt(s.body)
        else_ast, enames, evals, enode = self._yield_stmt(s.orelse)
        if tnames != enames:
            raise self.err(tnode or enode or s, "both branches must yield the same names",
                           "end both branches with the same `x = pl.yield_(...)`")
        then = self.block = Block()
        self.stmts(then_ast)
        tys = [self.expr(v) for v in tvals]
        tenv = self.env
        self.env = dict(before)
        els = self.block = Block()
        self.stmts(else_ast)
        eys = [self.expr(v) for v in evals]
        eenv = self.env
        self.env = before
        self.block = outer
        assigned = [n for n in _assigned_names(then_ast) + _assigned_names(else_ast)]
        names = []
        for n in assigned:
            if n in names or n in tnames:
                continue
            in_t, in_e = tenv.get(n) is not before.get(n), eenv.get(n) is not before.get(n)
            if (n in before and (in_t or in_e)) or (n in tenv and n in eenv and in_t and in_e):
                names.append(n)
        for n in names:
            tys.append(tenv[n])
            eys.append(eenv[n])
        results = []
        for n, a, b in zip(tnames + names, tys, eys):
            if a.type != b.type:
                raise self.err(s, f"'{n}' is {with_article(describe(a.type))} after the if branch but a "
                                  f"{describe(b.type)} after the else branch",
                               "both branches must give it the same type")
            results.append(self.fresh(n))
        here = self.loc(s)
        then.append(Operation(YieldOp.name, tys, (), {}, (), here))
        els.append(Operation(YieldOp.name, eys, (), {}, (), here))
        op = self.emit(Operation(IfOp.name, (cond,), [a.type for a in tys], {},
                                 (Region([then]), Region([els])), here, results))
        for n, r in zip(tnames + names, op.results):
            self.env[n] = r

    def name_expr(self, node: ast.Name):
        if node.id in self.env:
            return self.env[node.id]
        obj = self.ns.get(node.id, _MISSING)
        if obj is _MISSING and node.id in self.loop_locals:
            line, loop, results = self.loop_locals[node.id]
            use = (f"use the loop's result ({', '.join(results)}), or carry it" if results else "carry it")
            raise self.err(node, f"'{node.id}' is assigned at line {line}, inside the loop at line {loop}, "
                                 "and read after it: a loop body's values end with the loop",
                           f"{use}: pl.range(..., init_values=(x0, ...)) and `x = pl.yield_(...)` "
                           "give the last iteration's value after the loop (or define it before the loop, "
                           "which carries it)")
        if obj is _MISSING:
            raise self.err(node, f"name '{node.id}' is not defined",
                           f"{self.near(node)}define it before use (kernel values) or at module level (constants)")
        return self.constant(obj, node)

    def const(self, value, type_, loc):
        return self.emit(Operation(ConstOp.name, (), [type_], {"value": value}, (), loc,
                                   [None])).results[0]

    def constant(self, obj, node):
        obj = _plain(obj)
        if isinstance(obj, bool):
            return self.const(obj, BOOL, self.loc(node))
        if isinstance(obj, int):
            return self.const(int(obj), INDEX, self.loc(node))
        if isinstance(obj, float):
            return self.const(obj, ScalarType("f32"), self.loc(node))
        if obj is None:
            return self.const(None, NONE, self.loc(node))
        if isinstance(obj, DSLOp):
            raise self.err(node, f"pl.{obj.dsl} is an op; call it", f"write pl.{obj.dsl}(...)")
        raise self.err(node, f"{type(obj).__name__} value {obj!r} cannot be used in a kernel",
                       "kernels use tensors, tiles, scalars and int/float constants")

    def expr(self, node):
        if type(node) in _UNSUPPORTED:
            raise self.unsupported(node)
        if isinstance(node, ast.Name):
            return self.name_expr(node)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                raise self.err(node, "strings are not kernel values")
            return self.constant(node.value, node)
        if isinstance(node, ast.BinOp):
            return self.binop(node, node.op, self.expr(node.left), self.expr(node.right))
        if isinstance(node, ast.UnaryOp):
            v = self.expr(node.operand)
            if isinstance(node.op, ast.UAdd):
                return v
            op = "-" if isinstance(node.op, ast.USub) else "not" if isinstance(node.op, ast.Not) else None
            if isinstance(node.op, ast.Invert) and _is_const(v) and type(v.op.value) is int:
                if _fresh_const(v):             # (~ has no scalar op: taken on an int constant only)
                    v.op.erase()
                return self.constant(~v.op.value, node)
            if op is None:
                raise self.err(node, f"unsupported unary operator {ast.unparse(node)}",
                               "kernels take - and not on scalars, ~ on integer constants (folded while "
                               "reading), - on tiles (pl.neg)")
            if isinstance(v.type, TileValueType) and op == "-":
                return self.make_call("neg", node, {"a": v}, {}, {})
            if not isinstance(v.type, ScalarType):
                raise self.err(node, f"operator {op} on {with_article(describe(v.type))}")
            if _fresh_const(v):
                v.op.erase()
                x = v.op.value
                return self.const(-x if op == "-" else (not x), v.type if op == "-" else BOOL,
                                  self.loc(node))
            return self.emit(Operation(ARITH_UNARY_OP[op], (v,), [unary_result_type(op, v.type)],
                                       {}, (), self.loc(node), [None])).results[0]
        if isinstance(node, ast.IfExp):     # `2.0 if flag else 3.0` of compile-time values
            ok, v = self.static_operand(node.test)
            if ok and isinstance(v, _STATIC_TRUTH):
                return self.expr(node.body if v else node.orelse)
            cond = self.expr(node.test)
            if _fresh_const(cond):
                cond.op.erase()
                return self.expr(node.body if cond.op.value else node.orelse)
            raise self.err(node, "conditional expressions on kernel values are not supported",
                           "use an if statement (its branches may assign the value); a condition "
                           "on compile-time values (a closure flag) is decided while reading")
        if isinstance(node, ast.Compare):
            if len(node.ops) != 1:
                raise self.err(node, "chained comparisons are not supported", "use `and`")
            folded = self.static_compare(node)
            if folded is not None:
                return self.constant(folded, node)
            op = _CMP.get(type(node.ops[0]))
            if op is None:
                raise self.err(node, "only == != < <= > >= comparisons of kernel values are supported",
                               "`is`, `is not`, `in` and `not in` compare compile-time values only (a "
                               "literal, a module or closure constant: `if bias is None:` in a builder); "
                               "compare kernel scalars with == != < <= > >=")
            lhs, rhs = self.expr(node.left), self.expr(node.comparators[0])
            return self.scalar_binop(node, op, lhs, rhs, BOOL)
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            acc = self.expr(node.values[0])
            for x in node.values[1:]:
                acc = self.scalar_binop(node, op, acc, self.expr(x), BOOL)
            return acc
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id in self.env:
                v = self.name_expr(node.value)
                if isinstance(v.type, BufferType) and node.attr in ("base", "size"):
                    return self.emit(BufferAttrOp.build(
                        buffer=v, attr=node.attr, result_types=[INDEX], loc=self.loc(node),
                        result_names=[None])).value
                raise self.err(node, f"'{node.value.id}' ({describe(v.type)}) has no attribute "
                                     f"'{node.attr}'", "buffers have .base and .size")
            obj = self.lookup_ns(node)
            if obj is _MISSING:
                raise self.err(node, f"'{ast.unparse(node)}' is not defined",
                               f"{self.near(node)}see `import ptopipe.language as pl; dir(pl)` for the ops")
            return self.constant(obj, node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, (ast.List, ast.Tuple)):
            raise self.err(node, "a list is not a kernel value here")
        if isinstance(node, ast.Subscript):
            ok, v = self.static_value(node)
            if ok:                              # SHAPES[0], CFG["rows"]: a compile-time value
                return self.constant(v, node)
            raise self.err(node, "subscripts are not supported on kernel values",
                           "use pl.load(tensor, offsets, shape) for a block of a tensor; a subscript of "
                           "compile-time values (a module or closure list) is read as its value")
        raise self.err(node, f"{type(node).__name__} expressions are not supported in kernels")

    def scalar_binop(self, node, op, lhs, rhs, rtype=None):
        for x in (lhs, rhs):
            if not isinstance(x.type, ScalarType):
                raise self.err(node, f"operator {op} on {with_article(describe(x.type))}",
                               "use pl ops (pl.add, pl.adds, ...) on tiles")
        if _fresh_const(lhs) and _fresh_const(rhs) and (
                op not in INT_ONLY or all(type(x.op.value) is int for x in (lhs, rhs))):
            try:
                val = _PY[op](lhs.op.value, rhs.op.value)
            except ZeroDivisionError:
                raise self.err(node, "division by zero in a constant expression") from None
            except TypeError:                   # (1.5 | 2)
                raise self.err(node, f"operator {op} on {lhs.op.value!r} and {rhs.op.value!r}",
                               f"{op} takes integer constants") from None
            rhs.op.erase()
            lhs.op.erase()
            return self.constant(val, node)
        if op in ("//", "%") and any(x.type.dtype in FLOAT_DTYPES for x in (lhs, rhs)):
            # Python's flooring // and % of floats: MLIR's arith has no such op (arith.remf is
            # C's fmod, which differs for negative operands) and the C++ kernel computes in
            # integers - the compiled kernel would not compute what this run computes
            raise self.err(node, f"operator {op} on a float scalar: the compiled kernel has no floor division or modulo of floats "
                                 "(PTO-AS's arith.remf is C's fmod, pto-isa C++ computes // and % in integers)",
                           "compute it in integers (index scalars: loop variables, pl.Scalar[pl.index] "
                           "arguments), or before the kernel is built (a closure constant)")
        if rtype is None:
            rtype = scalar_result_type(op, lhs.type, rhs.type)
        return self.emit(Operation(ARITH_OP[op], (lhs, rhs), [rtype], {}, (), self.loc(node),
                                   [None])).results[0]

    def binop(self, node, astop, lhs, rhs):
        op = _SCALAR_OPS.get(type(astop))
        tl, tr = isinstance(lhs.type, TileValueType), isinstance(rhs.type, TileValueType)
        if op is None:
            if type(astop) in _CONSTANT_ONLY and not (tl or tr) and _is_const(lhs) and _is_const(rhs):
                return self.fold_constant(node, astop, lhs, rhs)
            ops = _TILE_OP_FOR.get(type(astop))
            raise self.err(node, f"operator {type(astop).__name__} is not supported",
                           f"call the pl op: {ops}" if ops and (tl or tr) else
                           "kernels take + - * / // % | & on scalars and + - * / on tiles; ** ^ << >> "
                           "on constants (literals, module or closure numbers), folded while reading")
        if tl or tr:
            if op not in _TILE_BIN:
                ops = _TILE_OP_FOR.get(type(astop))
                raise self.err(node, f"operator {op} is not defined on tiles",
                               f"call the pl op: {ops}" if ops else "tiles take + - * / (pl.add, pl.sub, "
                               "pl.mul, pl.div and their scalar forms)")
            tile_op, scal_op = _TILE_BIN[op]
            if tl and tr:
                return self.make_call(tile_op, node, {"a": lhs, "b": rhs}, {}, {})
            if tl:
                return self.make_call(scal_op, node, {"a": lhs, "scalar": rhs}, {}, {})
            raise self.err(node, "put the tile first: tile op scalar", "e.g. x + 1.0, not 1.0 + x")
        return self.scalar_binop(node, op, lhs, rhs)

    def fold_constant(self, node, astop, lhs, rhs):
        """``lhs astop rhs`` of two constants, for an operator no scalar op computes
        (:data:`_CONSTANT_ONLY`): the constant it gives, as if written as a literal; the
        operands' ops erased when nothing else uses them."""
        sym, fn = _CONSTANT_ONLY[type(astop)]
        a, b = lhs.op.value, rhs.op.value
        if not all(_is_number(x) for x in (a, b)) or (sym != "**" and not all(type(x) in (int, bool) for x in (a, b))):
            raise self.err(node, f"operator {sym} on {a!r} and {b!r}",
                           f"{sym} takes integer constants" if sym != "**" else "** takes number constants")
        if type(a) is int and type(b) is int and b > 0 and (
                b > _FOLD_BITS if sym == "<<" else sym == "**" and abs(a) > 1 and b * (abs(a).bit_length() - 1) > _FOLD_BITS):
            raise self.err(node, f"the constant {ast.unparse(node)} has more than {_FOLD_BITS} bits",
                           "no kernel value is that large: check the expression")
        try:
            val = fn(a, b)
        except ZeroDivisionError:
            raise self.err(node, "division by zero in a constant expression") from None
        except OverflowError:
            raise self.err(node, f"the constant expression {ast.unparse(node)} overflows a float",
                           "no kernel value is that large: check the expression") from None
        except ValueError as e:             # (a negative shift count)
            raise self.err(node, f"the constant expression {ast.unparse(node)} has no value: {e}",
                           "shift by a count >= 0") from None
        for x in (rhs, lhs):
            if _fresh_const(x):
                x.op.erase()
        return self.constant(val, node)

    def call(self, node: ast.Call):
        obj = self.lookup_ns(node.func)
        if obj is None:
            raise self.err(node.func, f"'{ast.unparse(node.func)}' is a kernel value, not an op")
        if obj is _MISSING:
            name = ast.unparse(node.func)
            ok, v = self.static_value(node)
            if ok:                              # len(SHAPES), min(N, 4): a compile-time value
                return self.constant(v, node)
            hint = (f"; for kernel scalars use pl.{name}(a, b)" if name in ("min", "max") else
                    "; on compile-time values (module or closure constants) they are read as "
                    "their value" if name in _STATIC_BUILTINS else "")
            raise self.err(node.func, f"unknown op '{name}'",
                           f"{self.near(node.func, ops=True)}see dir(ptopipe.language) for the ops; Python builtins and other "
                           f"functions cannot be called on kernel values{hint}")
        if not isinstance(obj, DSLOp):
            raise self.err(node.func, f"'{ast.unparse(node.func)}' is not a pl op",
                           "only pl ops can be called inside kernels")
        if obj.op in ("range", "yield_", "reserve_buffer", "import_peer_buffer"):
            where = {"range": "as the iterable of a for loop", "yield_": "as the last statement "
                     "of a loop / branch body", "reserve_buffer": "as `buf = pl.reserve_buffer(...)`",
                     "import_peer_buffer": "as `buf = pl.import_peer_buffer(...)`"}[obj.op]
            raise self.err(node, f"pl.{obj.op} can only be used {where}")
        if obj.op in SCALAR_CALLS:
            if len(node.args) != 2 or node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                raise self.err(node, f"pl.{obj.op} takes two scalars", f"e.g. pl.{obj.op}(n - i, 16)")
            return self.scalar_binop(node, obj.op, *(self.expr(a) for a in node.args))
        if obj.op == "matmul_acc" and any(k.arg == "init_cond" for k in node.keywords):
            return self.matmul_acc_init(node)
        spec = lookup(obj.op)
        # bind arguments to the op's parameters
        params = spec.params
        bound, nodes = {}, {}
        if len(node.args) > len(params):
            raise self.err(node.args[len(params)], f"pl.{spec.dsl} takes at most {len(params)} "
                                                   f"arguments ({', '.join(p.name for p in params)})")
        for p, a in zip(params, node.args):
            if isinstance(a, ast.Starred):
                raise self.unsupported(a)
            bound[p.name], nodes[p.name] = a, a
        names = {p.name: p for p in params}
        for k in node.keywords:
            if k.arg is None:
                raise self.err(k.value, "**kwargs are not supported in kernels")
            if k.arg not in names:
                raise self.err(k, f"pl.{spec.dsl} has no argument {k.arg!r}",
                               f"its arguments are {', '.join(names)}")
            if k.arg in bound:
                raise self.err(k, f"pl.{spec.dsl} got {k.arg!r} twice")
            bound[k.arg], nodes[k.arg] = k.value, k.value
        args, attrs = {}, {}
        for p in params:
            a = bound.get(p.name)
            if a is None:
                if p.default is REQUIRED:
                    raise self.err(node, f"pl.{spec.dsl} needs argument {p.name!r}",
                                   f"pl.{spec.dsl}({', '.join(q.name for q in params)})")
                if p.operand:
                    args[p.name] = self.const(p.default, INDEX if isinstance(p.default, int)
                                              else NONE, self.loc(node))
                else:
                    attrs[p.name] = p.default
                continue
            if p.kind == "value":
                args[p.name] = self.expr(a)
            elif p.kind == "values":
                if not isinstance(a, (ast.List, ast.Tuple)):
                    raise self.err(a, f"{p.name} must be a list, e.g. [row, col]")
                args[p.name] = [self.expr(x) for x in a.elts]
            else:
                attrs[p.name] = self.attr_value(p, a, spec)
        return self.make_call(spec.name, node, args, attrs, nodes)

    def matmul_acc_init(self, node: ast.Call):
        """``pl.matmul_acc(acc, a, b, init_cond=c)`` (pypto's): where ``c`` holds the
        accumulator is overwritten with ``a @ b`` (TMATMUL), elsewhere accumulated into
        (TMATMUL_ACC) - an ``if`` over the two, or the one a constant ``c`` picks, as pypto's
        code generator writes it.  The operands are read once, before the branch."""
        names = ("acc", "a", "b")
        bound = dict(zip(names, node.args))
        if len(node.args) > 3:
            raise self.err(node.args[3], "pl.matmul_acc takes at most 3 positional arguments "
                                         "(acc, a, b) and init_cond=")
        cond_node = None
        for k in node.keywords:
            if k.arg == "init_cond":
                cond_node = k.value
            elif k.arg in names and k.arg not in bound:
                bound[k.arg] = k.value
            else:
                raise self.err(k, f"pl.matmul_acc has no argument {k.arg!r} here",
                               "pl.matmul_acc(acc, a, b, init_cond=...)")
        missing = [n for n in names if n not in bound]
        if missing:
            raise self.err(node, f"pl.matmul_acc needs argument {missing[0]!r}",
                           "pl.matmul_acc(acc, a, b, init_cond=...)")
        vals = {n: self.expr(bound[n]) for n in names}
        cond = self.expr(cond_node)
        if not isinstance(cond.type, ScalarType):
            raise self.err(cond_node, f"init_cond is {with_article(describe(cond.type))}",
                           "pass a scalar condition, e.g. init_cond=(k == 0)")
        self._check_first_step(node, bound["acc"], vals["acc"], cond_node, cond)

        def first(block):               # TMATMUL: acc = a @ b (acc's storage is not read)
            self.block = block
            return self.make_call("matmul", node, {"a": vals["a"], "b": vals["b"]}, {},
                                  {"a": bound["a"], "b": bound["b"]})

        def rest(block):                # TMATMUL_ACC: acc = acc + a @ b
            self.block, self.guarded = block, True
            try:
                return self.make_call("matmul_acc", node, vals, {}, bound)
            finally:
                self.guarded = False
        outer = self.block
        if _fresh_const(cond):
            cond.op.erase()
            return (first if cond.op.value else rest)(outer)
        then, els = Block(), Block()
        t, e = first(then), rest(els)
        self.block = outer
        here = self.loc(node)
        then.append(Operation(YieldOp.name, (t,), (), {}, (), here))
        els.append(Operation(YieldOp.name, (e,), (), {}, (), here))
        op = self.emit(Operation(IfOp.name, (cond,), [t.type], {}, (Region([then]), Region([els])),
                                 here, [None]))
        return op.results[0]

    def _check_first_step(self, node, acc_node, acc, cond_node, cond) -> None:
        """The step that first reaches a pl.create accumulator must overwrite it: its
        init_cond must hold there (:mod:`ptopipe.ir.first_step`; a condition that depends on
        a value known only at run time is VerifyPipes' "not proven")."""
        made = self._unwritten_at(acc)
        if made is None:
            return
        firsts, words = self._first_step(acc)
        if truth(cond, firsts) is not False:
            return
        name = ast.unparse(acc_node) if isinstance(acc_node, ast.Name) else acc.name or "acc"
        when = f"at {' and '.join(words)}" if words else "here"
        raise self.err(node, f"init_cond=({ast.unparse(cond_node)}) is false {when}, the first step "
                             f"into '{name}': that step accumulates onto the accumulator pl.create "
                             f"made at line {made.loc.line}, which nothing has written",
                       "make init_cond hold on the first step, e.g. init_cond=("
                       + (f"{words[-1].split(' (')[0].replace(' = ', ' == ')})" if words else "True)")
                       + ": TMATMUL overwrites the accumulator there, TMATMUL_ACC accumulates after")

    def attr_value(self, p, a, spec):
        v = self.const_eval(a, f"argument {p.name!r} of pl.{spec.dsl}")
        k = p.kind
        bad = None
        if k == "shape":
            if isinstance(v, (list, tuple)) and v and all(isinstance(x, int) and not isinstance(x, bool)
                                                           and x > 0 for x in v):
                return tuple(int(x) for x in v)
            bad = "a list of positive integers, e.g. [16, 32]"
        elif k == "dtype":
            if isinstance(v, DType):
                return v.name
            if v is None and p.default is None:
                return None
            bad = "a pl dtype such as pl.f32"
        elif k == "space":
            if isinstance(v, MemorySpace):
                return v
            bad = "a memory space: pl.Vec, pl.Mat, pl.Left, pl.Right or pl.Acc"
        elif k == "split":
            if isinstance(v, int) and int(v) in SPLITS:
                return TileSplitAxis(v)
            bad = "pl.TILE_NO_SPLIT, pl.TILE_UP_DOWN or pl.TILE_LEFT_RIGHT"
        elif k == "dir":
            if v is None and p.default is None:
                return None
            if isinstance(v, int) and int(v) in DIRS:
                return Direction(v)
            bad = "a direction: pl.DIR_C2V, pl.DIR_V2C or pl.DIR_C2V | pl.DIR_V2C"
        elif k == "pipe":
            if isinstance(v, SyncPipe):
                return v
            bad = "a pipe: pl.PIPE_MTE2, pl.PIPE_V, ... (pl.PIPE_ALL for pl.barrier)"
        elif k == "int":
            if v is None and p.default is None:
                return None
            if isinstance(v, int) and not isinstance(v, bool):
                return int(v)
            bad = "an integer constant"
        elif k == "layout":
            if v is None or isinstance(v, TileLayout):
                return v
            bad = "a tile layout: pl.ND, pl.DN, pl.NZ, pl.ZN or pl.ZZ"
        elif k == "symbol":
            name = getattr(getattr(v, "ir", None), "name", v)
            if isinstance(name, str) and name:
                return name
            bad = "a function: a @pl kernel or its name"
        elif k == "type":
            if isinstance(v, (TileValueType, TensorType)):
                return v
            bad = "a type: pl.Tile[[rows, cols], dtype, space] or pl.Tensor[[...], dtype]"
        raise self.err(a, f"argument {p.name!r} of pl.{spec.dsl} must be {bad}, got {v!r}")

    def _unwritten_at(self, v):
        """The pl.create op whose unwritten storage ``v`` is when read here, else None: the
        create's own value anywhere, a loop-carried value it starts at the top of that loop's
        body (its first iteration: inside an ``if`` the read may be guarded)."""
        got = self.unwritten.get(v)
        if got is None:
            return None
        if isinstance(got, tuple):
            made, body = got[:2]
            return made if self.block is body else None
        return got

    def _first_step(self, v) -> tuple:
        """``(firsts, words)`` of unwritten ``v``: the loop variables of the loops it is carried
        into from its pl.create, each mapped to its loop's start value
        (:func:`~ptopipe.ir.first_step.truth`), and those first iterations in words."""
        got = self.unwritten.get(v)
        return (got[2], got[3]) if isinstance(got, tuple) else ({}, [])

    def _check_written(self, args: dict, nodes: dict, node) -> None:
        for k, v in args.items():
            made = None if self.guarded or isinstance(v, list) else self._unwritten_at(v)
            if made is not None:
                at = nodes.get(k)
                name = ast.unparse(at) if isinstance(at, ast.Name) else v.name or k
                raise self.err(at or node,
                               f"'{name}' is read before anything writes it: pl.create at "
                               f"line {made.loc.line} makes an accumulator no instruction has "
                               "written (its first step must overwrite it)"
                               + (f"; the loop at line {self.no_iteration[v]} that would write it runs no "
                                  "iteration" if v in self.no_iteration else ""),
                               "pl.matmul_acc(acc, a, b, init_cond=(k == 0)): TMATMUL on the first "
                               "step, TMATMUL_ACC after; or start from acc = pl.matmul(a, b)")

    def popped_dtype(self, pop, node, args) -> CompileError:
        """A store whose tile dtype is not its tensor's, where that dtype comes from a TPOP (the
        tile or what is computed from it): the TPOP is the likely slip - a ring slot holds the
        producer's bytes and a TPOP does not convert - so the error is at the TPOP."""
        tile, tensor = args["tile"].type, args["tensor"].type
        line = self.src.loc(node).line
        return CompileError(
            f"this pl.TPOP pops its slot as {tile.dtype}, and the pl.store at line {line} stores "
            f"{'it' if args['tile'] is pop.results[0] else 'what is computed from it'} ({tile.dtype}) into "
            f"{with_article(tensor.dtype)} tensor: a TPOP takes the slot's bytes as the dtype it names, it does "
            "not convert",
            where=str(pop.loc), fix=f"pop the dtype the producer pushes (pl.Tile[[...], pl.{tensor.dtype}, "
                                    f"...] if it pushes {tensor.dtype} tiles); else pl.cast(x, "
                                    f"pl.{tensor.dtype}) before the store")

    def make_call(self, op: str, node, args: dict, attrs: dict, nodes: dict):
        self._check_written(args, nodes, node)
        if set(args) == {"a", "b"} and all(isinstance(v.type, TileValueType) for v in args.values()):
            try:
                form = broadcast_form(op, args["a"].type, args["b"].type)
            except OpError as e:
                raise self.err(nodes.get(e.param, node), e.about(op, f"pl.{op}"), e.fix) from None
            if form is not None:        # one operand per row / per column: an expand op
                op, swapped = form
                a, b = (args["b"], args["a"]) if swapped else (args["a"], args["b"])
                na, nb = (nodes.get("b"), nodes.get("a")) if swapped else (nodes.get("a"), nodes.get("b"))
                key = "row" if op.startswith("row") else "col"
                args, nodes = {"a": a, key: b}, {"a": na, key: nb}
        spec = lookup(op)
        for p in spec.attr_params:
            attrs.setdefault(p.name, None if p.default is REQUIRED else p.default)
        try:
            if spec.role is not None:            # a cross-core op: its direction
                attrs["direction"] = canonical_direction(spec, self.kind, attrs)
            t = infer(spec, self.kind, {k: _typing_arg(v) for k, v in args.items()}, attrs)
            if isinstance(t, TileValueType) and self.kind in (FunctionKind.AIC, FunctionKind.AIV) \
                    and (t.space is MemorySpace.Vec) != (self.kind is FunctionKind.AIV):
                core = "Vector" if self.kind is FunctionKind.AIV else "Cube"
                raise OpError(f"the result is {with_article(describe(t))}, which a {core} core cannot hold "
                              f"({'only Vec tiles' if core == 'Vector' else 'no Vec tiles'})",
                              "Vector kernels work on Vec tiles (UB); Cube kernels on "
                              "Mat/Left/Right/Acc tiles", "space")
        except OpError as e:
            pop = _popped_from(args.get("tile")) if spec.name == "store" and e.param == "tile" else None
            if pop is not None and args["tile"].type.dtype != args["tensor"].type.dtype:
                raise self.popped_dtype(pop, node, args) from None
            at = nodes.get(e.param, node)
            raise self.err(at, e.about(spec.dsl, f"pl.{spec.dsl}"), e.fix) from None
        operands = []
        for p in spec.operands:
            a = args[p.name]
            operands.extend(a) if isinstance(a, list) else operands.append(a)
        op = self.emit(Operation(f"pl.{spec.name}", operands, [] if t is NONE else [t],
                                 {p.name: attrs[p.name] for p in spec.attr_params
                                  if p.name not in MAY_BE_ABSENT or attrs[p.name] is not None}, (),
                                 self.loc(node), [None]))
        if spec.name == "create":
            self.unwritten[op.results[0]] = op
        return op.results[0] if op.results else _Void(op)


class _Missing:
    def __repr__(self):
        return "<missing>"


_MISSING = _Missing()
