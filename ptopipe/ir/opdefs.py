"""The op definitions of the op/region IR: every op name, once, with its verifier.

* the pipe and sync ops (``pl.aic_/aiv_initialize_pipe``, ``pl.tpush`` / ``tpop`` /
  ``tfree`` / ``talloc``, ``pl.record_event`` / ``wait_event`` / ``barrier``,
  ``pl.reserve_buffer`` / ``import_peer_buffer``) and the structural ops (``pl.program``,
  ``pl.func``, ``pl.for`` with iter_args, ``pl.if`` with results, ``pl.yield``,
  ``pl.return``, ``pl.buffer_attr``, ``pl.const``, ``pl.copy``) are op classes
  (:class:`OpClass`): each declares its operands, attributes and results with their types,
  and its typing rule (registered in the op table :data:`.ops.OPS`: the DSL signature) or
  verifier.  The declarations are descriptors: an Operation of that op reads and rewrites
  them by name (``op.tile``, ``op.split``, ``init.flag_id``);
* the op table's other ops (the catalogue's tile ops, ``pl.call``, ``pl.get_subblockid``)
  get a class each DERIVED from their spec (:data:`TABLE_OPS`): operands = the spec's
  operand parameters in order (a ``values`` parameter, e.g. load offsets, takes the
  variadic rest), attributes = its attribute parameters, result = the spec's typing rule
  (none if the rule gives ``NONE``); the verifier re-runs that rule;
* scalar arithmetic ``arith.<name>``, one per operator of :data:`SCALAR_BINOPS` /
  :data:`SCALAR_UNOPS`, typed by :func:`scalar_result_type` (the DSL parser uses it too):
  ``//`` / ``%`` floor (Python's), ``arith.truncdiv`` / ``arith.truncrem`` (``pl.truncdiv`` /
  ``pl.truncrem``) truncate toward zero (MLIR's ``divsi`` / ``remsi``, C's ``/`` / ``%``; integers only); their values on Python
  ints are :data:`~.first_step.SCALAR_FNS`.

Code outside this module and the textual forms names an op through its class
(``op.is_a(TPush)``, ``TPush.name``, ``TPop.call_name``), not by a string.  A verifier is
``verify(op, ctx)``; it raises ``ctx.error(...)`` (a CompileError at the op's location).
Structure common to all ops (dominance, terminators) is checked by :mod:`.op_verifier`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..arch.vocab import ALIGNMENT, EventID, SyncPipe, TileSplitAxis
from ..errors import CompileError
from .core import OpResult, Operation, register_op_class
from .vocab import AUTO, FunctionKind
from .ops import (CARRIES, INIT_DIRS, NO_TILE, OPS, REQUIRED, RING, Axes, ConstArg, OpError,
                  OpSpec, Param, _buffer, _infer_dir, Ring, _scalar, _t, _tile, init_ways)
from .ops import register as register_spec
from .types import (BOOL, FLOAT_DTYPES, INDEX, NONE, BufferType, MemorySpace, NoneType, ScalarType,
                    TensorType, TileValueType, describe)
from ..errors import with_article

#: scalar operator (DSL spelling) -> arith op name suffix
SCALAR_BINOPS = {"+": "add", "-": "sub", "*": "mul", "//": "floordiv", "%": "mod", "/": "div",
                 "|": "bitor", "&": "bitand", "==": "eq", "!=": "ne", "<": "lt", "<=": "le",
                 ">": "gt", ">=": "ge", "and": "and", "or": "or", "min": "min", "max": "max",
                 "truncdiv": "truncdiv", "truncrem": "truncrem"}
SCALAR_UNOPS = {"-": "neg", "not": "not"}
#: the binary scalar ops spelled as calls, not as operators: ``pl.min(a, b)`` / ``pl.max(a, b)``
#: (pypto's), and the integer division and remainder that truncate toward zero,
#: ``pl.truncdiv(a, b)`` / ``pl.truncrem(a, b)`` (MLIR's ``arith.divsi`` / ``arith.remsi``, C's
#: ``/`` / ``%``: truncdiv(-7, 2) is -3, truncrem(-7, 2) is -1, where ``//`` / ``%`` floor: -4, 1)
SCALAR_CALLS = ("min", "max", "truncdiv", "truncrem")
#: the scalar operators of integer operands only
INT_ONLY = ("truncdiv", "truncrem")
_BOOL_RESULT = ("==", "!=", "<", "<=", ">", ">=", "and", "or")


def scalar_result_type(op: str, lhs: ScalarType, rhs: ScalarType) -> ScalarType:
    """The type of scalar ``lhs op rhs``: bool for comparisons and and/or, f32 for ``/``,
    else the common type: a float side's (f32 for two floats of different types: an f16
    times an index is an f16, not an index), else index."""
    if op in _BOOL_RESULT:
        return BOOL
    if op == "/":
        return ScalarType("f32")
    if lhs == rhs:
        return lhs
    floats = [t for t in (lhs, rhs) if t.dtype in FLOAT_DTYPES]
    if len(floats) == 1:
        return floats[0]
    return ScalarType("f32") if floats else INDEX


def unary_result_type(op: str, t: ScalarType) -> ScalarType:
    return BOOL if op == "not" else t


@dataclass(frozen=True)
class OpDef:
    """What an op name means: its verifier, its data dependence along tile rows and columns
    (:class:`~.ops.Axes`: what splitting its tiles between the Vector cores does to it),
    whether it ends a block, (for ops in the op table) the :class:`~.ops.OpSpec` and (for
    ops defined by a class) the class."""
    name: str
    verify: Callable
    axes: Axes
    terminator: bool = False
    spec: object = None
    doc: str = ""
    cls: type = None


OPDEFS: dict = {}


def _def(name, verify, axes, terminator=False, spec=None, doc="", cls=None):
    if name in OPDEFS:
        raise ValueError(f"op {name!r} is defined twice")
    if not isinstance(axes, Axes):
        raise ValueError(f"op {name!r} declares no Axes (how its result depends on its operands "
                         "along rows and columns: what a split mixed function needs)")
    OPDEFS[name] = OpDef(name, verify, axes, terminator, spec, doc, cls)


def lookup_op(name: str) -> OpDef | None:
    return OPDEFS.get(name)


def _shape(op, ctx, operands=None, results=None, regions=0, attrs=()):
    if operands is not None and len(op.operands) != operands:
        raise ctx.error(f"{op.name} takes {operands} operand(s), got {len(op.operands)}", op)
    if results is not None and len(op.results) != results:
        raise ctx.error(f"{op.name} has {results} result(s), got {len(op.results)}", op)
    if len(op.regions) != regions:
        raise ctx.error(f"{op.name} has {regions} region(s), got {len(op.regions)}", op)
    for a in attrs:
        if a not in op.attributes:
            raise ctx.error(f"{op.name} needs attribute '{a}'", op)


def _single_block(op, ctx, r: int):
    blocks = op.regions[r].blocks
    if len(blocks) != 1:
        raise ctx.error(f"{op.name} region {r} must hold exactly one block, has {len(blocks)}", op)
    return blocks[0]


def _check_yield(op, ctx, block, what: str):
    y = block.last
    if y is None or not y.is_a(YieldOp):
        raise ctx.error(f"the {what} of {op.name} must end with pl.yield", y or op,
                        "terminate the region with pl.yield(values...)")
    got = [v.type for v in y.operands]
    want = [r.type for r in op.results]
    if len(got) != len(want):
        raise ctx.error(f"the {what} of {op.name} yields {len(got)} value(s) but the op has "
                        f"{len(want)} result(s)", y)
    # Hot (every loop and branch of every walk): a list comparison tests an identical type
    # (the usual case: a pass or the DSL reuses the type object) without the types' Python
    # __eq__.  Invariant: a type equals itself (types are immutable values), so the lists
    # are equal exactly when each pair is; the loop below only finds the first difference.
    if got == want:
        return
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            raise ctx.error(f"the {what} of {op.name} yields {describe(g)} as value {i}, but "
                            f"result {i} is {describe(w)}", y, "a yielded value must keep its type")


# -- structural ops ----------------------------------------------------------------------------
def _v_program(op, ctx):
    _shape(op, ctx, 0, 0, 1, ("sym_name",))
    if op.parent is not None:
        raise ctx.error("pl.program must be the top-level op", op)
    seen = set()
    for f in _single_block(op, ctx, 0):
        if not f.is_a(FuncOp):
            raise ctx.error(f"a pl.program holds pl.func ops, not {f.name}", f)
        name = f.attributes.get("sym_name")
        if name in seen:
            raise ctx.error(f"two functions are called {name!r}", f)
        seen.add(name)


def _v_func(op, ctx):
    _shape(op, ctx, 0, 0, 1, ("sym_name", "kind"))
    if op.parent_op is None or not op.parent_op.is_a(ProgramOp):
        raise ctx.error("pl.func must be directly inside a pl.program", op)
    if not isinstance(op.kind, FunctionKind):
        raise ctx.error(f"pl.func kind must be a function kind, got {op.kind!r}", op)
    for a in _single_block(op, ctx, 0).args:
        if not isinstance(a.type, (TensorType, ScalarType)):
            raise ctx.error(f"parameter %{a.name or a.index} is {with_article(describe(a.type))}", op,
                            "kernel parameters are GM tensors or scalars")


def _v_return(op, ctx):
    _shape(op, ctx, None, 0, 0)
    p = op.parent_op
    if p is None or not p.is_a(FuncOp) or op.next is not None:
        raise ctx.error("pl.return must be the last op of a function body", op,
                        "remove the statements after it (or move the return to the end)")
    if op.operands and p.kind in (FunctionKind.AIC, FunctionKind.AIV):
        raise ctx.error("AIC/AIV kernels return no values", op,
                        "write results to an output tensor with pl.store")


def _v_yield(op, ctx):
    _shape(op, ctx, None, 0, 0)
    p = op.parent_op
    if p is None or not p.is_a(ForOp, IfOp) or op.next is not None:
        raise ctx.error("pl.yield must be the last op of a pl.for / pl.if region", op)


def _v_for(op, ctx):
    _shape(op, ctx, None, None, 1)
    n = len(op.results)
    if len(op.operands) != 3 + n:
        raise ctx.error(f"pl.for takes start, stop, step and one init per result: "
                        f"{3 + n} operand(s), got {len(op.operands)}", op)
    for what, v in zip(("start", "stop", "step"), op.operands):
        if not isinstance(v.type, ScalarType):
            raise ctx.error(f"loop {what} is {with_article(describe(v.type))}", op, "loop bounds are scalars")
    body = _single_block(op, ctx, 0)
    if len(body.args) != 1 + n:
        raise ctx.error(f"the body of pl.for takes the loop variable and {n} loop-carried "
                        f"value(s): {1 + n} block argument(s), got {len(body.args)}", op)
    if not isinstance(body.args[0].type, ScalarType):
        raise ctx.error(f"the loop variable is {with_article(describe(body.args[0].type))}", op)
    for i, (init, arg, res) in enumerate(zip(op.operands[3:], body.args[1:], op.results)):
        # (``is`` first: see _check_yield; a type equals itself)
        t = arg.type
        if not ((init.type is t or init.type == t) and (res.type is t or t == res.type)):
            raise ctx.error(f"loop-carried value {i}: init is {describe(init.type)}, block "
                            f"argument {describe(arg.type)}, result {describe(res.type)}", op,
                            "a loop-carried value keeps one type")
    _check_yield(op, ctx, body, "body")


def _v_if(op, ctx):
    _shape(op, ctx, 1, None, 2)
    if not isinstance(op.cond.type, ScalarType):
        raise ctx.error(f"if condition is {with_article(describe(op.cond.type))}", op)
    for r, what in ((0, "then region"), (1, "else region")):
        b = _single_block(op, ctx, r)
        if b.args:
            raise ctx.error(f"the {what} of pl.if takes no block arguments", op)
        _check_yield(op, ctx, b, what)


def _v_buffer_attr(op, ctx):
    _shape(op, ctx, 1, 1, 0, ("attr",))
    if not isinstance(op.buffer.type, BufferType) or op.attr not in ("base", "size"):
        raise ctx.error(f"'.{op.attr}' of {describe(op.buffer.type)}", op,
                        "only reserved / imported buffers have .base and .size")
    if op.results[0].type != INDEX:
        raise ctx.error(f"buffer .{op.attr} is an index, not "
                        f"{describe(op.results[0].type)}", op)


def const_type_ok(value, t) -> bool:
    if value is None:
        return isinstance(t, NoneType)
    if isinstance(value, bool):
        return isinstance(t, ScalarType)
    return isinstance(t, ScalarType) and isinstance(value, (int, float))


def _v_const(op, ctx):
    # Hot (constants are about 40% of a kernel's ops, and every pass re-verifies them): the
    # checks of _shape and the accessors op.value / op.out, read straight from the op.
    # Invariants: the condition is exactly the one _shape rejects (no operands, one result,
    # no regions, a "value" attribute), so it runs only to word the error; ``value`` is
    # ConstOp.value's key and ``out`` its result 0; an int / float / bool (exact classes)
    # of an exact ScalarType is what const_type_ok accepts, anything else is asked of it.
    attrs, results = op.attributes, op.results
    if op.operands or len(results) != 1 or op.regions or "value" not in attrs:
        _shape(op, ctx, 0, 1, 0, ("value",))
    v, t = attrs["value"], results[0].type
    c = v.__class__
    if (c is int or c is float or c is bool) and t.__class__ is ScalarType:
        return
    if not const_type_ok(v, t):
        raise ctx.error(f"constant {v!r} cannot have type {describe(t)}", op)


def _v_copy(op, ctx):
    _shape(op, ctx, 1, 1, 0)
    if op.source.type != op.out.type:
        raise ctx.error(f"pl.copy of {with_article(describe(op.source.type))} yields "
                        f"{describe(op.out.type)}", op)


def _arith(sym, unary):
    def verify(op, ctx):
        _shape(op, ctx, 1 if unary else 2, 1, 0)
        for v in op.operands:
            if not isinstance(v.type, ScalarType):
                raise ctx.error(f"operator {sym} on {with_article(describe(v.type))}", op,
                                "use pl ops (pl.add, pl.adds, ...) on tiles")
        ts = [v.type for v in op.operands]
        bad = [t for t in ts if t.dtype in FLOAT_DTYPES or t == BOOL] if sym in INT_ONLY else ()
        if bad:
            raise ctx.error(f"pl.{sym} of {with_article(describe(bad[0]))}: it divides integers", op,
                            "use / for floats")
        want = unary_result_type(sym, ts[0]) if unary else scalar_result_type(sym, *ts)
        if op.results[0].type != want:
            raise ctx.error(f"{op.name} produces {describe(want)} but the IR says "
                            f"{describe(op.results[0].type)}", op)
    return verify


ARITH_BINARY = {f"arith.{n}": sym for sym, n in SCALAR_BINOPS.items()}
ARITH_UNARY = {f"arith.{n}": sym for sym, n in SCALAR_UNOPS.items()}
#: scalar operator -> the arith op name (binary; ``ARITH_UNARY_OP`` for the unary ones)
ARITH_OP = {sym: name for name, sym in ARITH_BINARY.items()}
ARITH_UNARY_OP = {sym: name for name, sym in ARITH_UNARY.items()}
for _name, _sym in ARITH_BINARY.items():
    _def(_name, _arith(_sym, False), NO_TILE, doc=f"scalar {_sym}")
for _name, _sym in ARITH_UNARY.items():
    _def(_name, _arith(_sym, True), NO_TILE, doc=f"scalar unary {_sym}")


# -- ops derived from the op table ------------------------------------------------------------
class OperandView:
    """What the op table's typing rules read for a ``values`` parameter (``.items``)."""
    __slots__ = ("items",)

    def __init__(self, items):
        self.items = items


def operand_groups(spec, operands) -> dict:
    """Bind ``operands`` (flat) to the spec's operand parameters: name -> Value, or
    name -> list of Values for the one ``values`` parameter (which takes the rest)."""
    ops = spec.operands
    nvar = len(operands) - sum(1 for p in ops if p.kind == "value")
    out, i = {}, 0
    for p in ops:
        if p.kind == "values":
            out[p.name] = operands[i:i + nvar]
            i += nvar
        else:
            out[p.name] = operands[i]
            i += 1
    return out


# (An operand is defined by an op when it is an OpResult: only an OpResult has ``.op``.)
def _typing_arg(v):
    """A Value as the typing rules see it: a constant as a ConstArg (rules read constant
    values), anything else as is (rules read ``.type``)."""
    d = getattr(v, "op", None)
    if d is not None and d.is_a(ConstOp):
        return ConstArg(d.value, v.type)
    return v


def infer_type(op, kind: FunctionKind):
    """The result type of ``op`` (an op of the op table) in a function of ``kind``: its typing
    rule applied to its operands and attributes as they are (raises :class:`~.ops.OpError`);
    what its verifier checks the IR against, and what a pass that retypes an operand asks."""
    spec = op.spec
    args = {}
    for k, v in operand_groups(spec, op.operands).items():
        args[k] = OperandView(v) if isinstance(v, list) else _typing_arg(v)
    return spec.infer(kind, args, op.attributes)


#: attributes of the op classes an op may lack (read as their default), and which an op
#: built without them does not carry: a pipe op's ring id (absent: ring 0, as pypto's id=), a
#: store's atomic type (absent: a plain store)
MAY_BE_ABSENT = frozenset({"id", "atomic"})


def _derived(spec, fields=None):
    fixed = sum(1 for p in spec.operands if p.kind == "value")
    variadic = any(p.kind == "values" for p in spec.operands)
    attr_names = tuple(p.name for p in spec.attr_params if p.name not in MAY_BE_ABSENT)

    def verify(op, ctx):
        # Memo (one verify_ops walk, ctx.memo): the typing rule reads only the op's name,
        # the core kind, its operands' types and constant values, its attributes and result
        # types, so an op whose key was verified in this walk verifies again.  Unhashable
        # attributes (lists) skip the memo.  The key is built for every table-derived op of
        # every walk, in one flat loop (comprehensions cost a frame each here):
        # (name, kind, attributes, one entry per operand, one per result).
        #   Types and the core kind enter the key by identity (id): hashing them by value
        # runs their Python-level __hash__ several times per op, the key's main cost.
        # Invariants: an identical object is an equal one (types are immutable, kinds enum
        # members), so a hit by identity is a hit by value; the walk changes nothing in
        # the IR, so every type whose id is in the memo stays alive for the walk and no
        # other object takes its id.  An operand's entry is its type's id (an int), or, if
        # a constant defines it, (id, value, the value's class) - 1, 1.0 and True are equal
        # keys, but a rule may accept one and refuse another; a result's entry is (id,),
        # so the operands and results of a key split one way only.  ``ConstOp in
        # ..._ancestors`` is is_a(ConstOp), inline.
        memo = getattr(ctx, "memo", None)
        key = None
        if memo is not None:
            attrs = op.attributes
            key = [op.name, id(ctx.kind), tuple(attrs.items()) if attrs else ()]
            for v in op.operands:
                if isinstance(v, OpResult) and ConstOp in v.op._ancestors:
                    c = v.op.value
                    key.append((id(v.type), c, c.__class__))
                else:
                    key.append(id(v.type))
            for r in op.results:
                key.append((id(r.type),))
            try:
                key = tuple(key)
                if key in memo:
                    return
            except TypeError:
                key = None
        _verify(op, ctx)
        if key is not None:
            memo.add(key)

    def _verify(op, ctx):
        n = len(op.operands)
        if n < fixed or (n != fixed and not variadic):
            raise ctx.error(f"{op.name} takes {fixed}{'+' if variadic else ''} operand(s), got {n}",
                            op)
        _shape(op, ctx, None, None, 0, attr_names)
        try:
            t = infer_type(op, ctx.kind)
        except OpError as e:
            raise ctx.error(e.about(spec.dsl), op, e.fix) from None
        got = [r.type for r in op.results]
        want = [] if t is NONE else [t]
        # a result may be declared in a box its rule does not give (passes.tile_boxes: a Mat
        # tile TMOVed into a wider Left / Right, a Vec tile a ring slot's pitch fixes)
        if got != want and [g.unboxed if g.__class__ is TileValueType else g for g in got] != \
                [w.unboxed if w.__class__ is TileValueType else w for w in want]:
            raise ctx.error(f"{spec.dsl} produces {describe(t) if want else 'no result'} but the "
                            f"IR says {', '.join(describe(g) for g in got) or 'no result'}", op)
        if fields is not None:
            fields(op, ctx)
    return verify


# -- op classes: the pipe and sync ops, each defined once with typed accessors -----------------
# An op class names its op (``name``), declares its operands, attributes and results in
# signature order (the DSL binds arguments in this order), and gives its typing rule
# (``infer``, what the DSL parser and the op verifier run) or its own
# ``verify``.  The fields are descriptors: on an Operation of that op, ``op.tile`` is the
# operand, ``op.split`` the attribute, ``op.popped`` the result; assigning one rewrites the
# op (``set_operand`` keeps use lists right).  ``Operation(name, ...)`` of a defined name
# is an instance of its class (see :func:`.core.register_op_class`).
class _Field:
    """One declared part of an op; ``attr`` is its Python name on the op."""
    attr: str = ""

    def __set_name__(self, owner, attr):
        self.attr = attr


def _accepts(constraint, value) -> bool:
    if constraint is None:
        return True
    if isinstance(constraint, type):
        return isinstance(value, constraint)
    if isinstance(constraint, tuple):
        return any(_accepts(c, value) for c in constraint)
    return value == constraint


class _Operand(_Field):
    """An operand: one Value (``kind`` "value") or the variadic rest (``kind`` "values",
    at most one per op); ``types`` constrains its type; ``default`` is the DSL's value for
    an omitted argument (an operand still: a constant)."""

    def __init__(self, types, kind="value", default=REQUIRED, doc=""):
        self.types, self.kind, self.default, self.doc = types, kind, default, doc
        self.variadic = kind == "values"
        self.index = None          # set by the class: position (negative: counted from the end)

    @property
    def key(self) -> str:
        return self.attr

    def get(self, op):
        return self.__get__(op)

    def __get__(self, op, cls=None):
        # Hot (passes read operands by name): one Python call, its tests on plain
        # attributes fixed when the class is made.
        if op is None:
            return self
        if self.variadic:
            return op.operands[self.start:len(op.operands) - self.after]
        return op.operands[self.index]

    def of(self, args):
        """This operand among ``args`` grouped per operand parameter, as the runtime's
        evaluated arguments are (:func:`operand_groups`: a list for a variadic one)."""
        return args[self.start]

    def index_of(self, op, k: int = 0) -> int:
        """The position in ``op.operands`` of this operand (item ``k`` of a variadic one)."""
        if self.kind == "values":
            return self.start + k
        return self.index if self.index >= 0 else len(op.operands) + self.index

    def __set__(self, op, value):
        if self.kind == "values":
            raise AttributeError(f"{self.attr} is variadic: set its operands one by one")
        op.set_operand(self.index_of(op), value)


class _Attribute(_Field):
    """A compile-time attribute: ``kind`` is its DSL kind (see :mod:`.ops`), ``types`` its
    Python types (None always allowed when the default is None), ``key`` its name in the IR
    when that is not the Python name (``name`` is the op's own)."""

    def __init__(self, kind, types, default=REQUIRED, key=None, doc="", param=True):
        self.kind, self.types, self.default, self._key, self.doc = kind, types, default, key, doc
        self.param = param         # in the DSL signature (else set by a pass: an annotation)
        self.key = key or self.attr

    def __set_name__(self, owner, attr):
        super().__set_name__(owner, attr)
        # ``key`` is a plain attribute, not computed on each read: the hot read below uses
        # it.  Invariant: it is ``_key or attr`` once the field is named.
        self.key = self._key or attr

    def get(self, op):
        return self.__get__(op)

    def of(self, attrs: dict):
        """This attribute in an attribute dict (an op's ``attributes``, read once where the
        interpreter builds its closures), its default if absent."""
        return attrs[self.key] if self.default is REQUIRED else attrs.get(self.key, self.default)

    def __get__(self, op, cls=None):
        # Hot (passes and verifiers read attributes by name): one Python call.
        if op is None:
            return self
        if self.default is not REQUIRED:
            return op.attributes.get(self.key, self.default)
        try:
            return op.attributes[self.key]
        except KeyError:
            raise CompileError(f"{op.name} has no attribute '{self.key}'",
                               where=str(op.loc) if op.loc else None,
                               fix="build it with its class's build(...), or verify_ops the IR "
                                   "first") from None

    def __set__(self, op, value):
        op.attributes[self.key] = value

    def __delete__(self, op):
        """Drop the attribute from ``op`` (reads give the default again)."""
        op.attributes.pop(self.key, None)


class _Result(_Field):
    """A result, ``types`` constraining its type."""

    def __init__(self, types, doc=""):
        self.types, self.doc = types, doc
        self.index = None

    def __get__(self, op, cls=None):
        return self if op is None else op.results[self.index]


def operand(*types, default=REQUIRED, doc=""):
    """One operand whose type is an instance of one of ``types`` (a class, or a type value
    it must equal); ``default``: the DSL's value for an omitted argument."""
    return _Operand(types or None, "value", default, doc)


def var_operand(*types, doc=""):
    """The variadic operands (a list), each typed as for :func:`operand`."""
    return _Operand(types or None, "values", REQUIRED, doc)


def attribute(kind, *types, default=REQUIRED, key=None, doc=""):
    """An attribute of DSL kind ``kind`` (see :mod:`.ops`) holding one of ``types``;
    ``key``: its name in the IR when that is not the field's."""
    return _Attribute(kind, types or None, default, key, doc)


def annotation(*types, key=None, doc=""):
    """An attribute a pass adds (not in the DSL signature; None until then)."""
    return _Attribute(None, types or None, None, key, doc, param=False)


def result(*types, doc=""):
    """A result whose type is one of ``types``."""
    return _Result(types or None, doc)


class _OpMeta(type):
    """The op classes' metaclass: ``name`` read on an op class (``TPush.name``) is its op
    name, while ``op.name`` on an instance stays :class:`.core.Operation`'s slot.

    Hot-path invariant: no op class keeps ``name`` in its own ``__dict__`` (``__new__`` moves
    a class body's ``name`` string to ``_op_name`` before the class exists), so an instance
    read finds the slot - a C-level member read, the most frequent read of a compile - and
    no Python-level descriptor in between.  The class read goes through this metaclass's
    property: a data descriptor of the metaclass wins over the slot inherited from
    Operation.  The slot always holds the class's op name for an op built by name
    (``Operation(name, ...)`` picks the class from the name)."""

    def __new__(mcs, cls_name, bases, ns, **kw):
        if isinstance(ns.get("name"), str):
            ns = dict(ns)
            ns["_op_name"] = ns.pop("name")
        return super().__new__(mcs, cls_name, bases, ns, **kw)

    @property
    def name(cls):
        """The op name this class defines (inherited by a subclass that names none; None
        for a class of shared fields)."""
        return cls._op_name


#: op name -> its op class
OP_CLASSES: dict = {}


class OpClass(Operation, metaclass=_OpMeta):
    """Base of the op classes.  A subclass that sets ``name`` defines that op; one without
    it shares fields with its subclasses (e.g. the two initialize_pipe ops)."""
    __slots__ = ()
    _op_name = None           # the op name (``cls.name``; see _OpMeta)
    fields: tuple = ()
    call_name: str = ""       # the op's name in the op table (tpush)
    dsl: str = ""             # its DSL spelling (pl.TPUSH)
    role = None               # a cross-core op's ring end: "producer" / "consumer"
    terminator = False        # ends its block
    doc = ""
    infer = None              # the typing rule (kind, args, attrs) -> Type, if in the op table
    spec = None               # its OpSpec in the op table (:mod:`.ops`), if there
    axes = None               # its data dependence along tile rows / columns (:class:`.ops.Axes`)

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        fields = []
        for base in reversed(cls.__mro__[1:]):
            for f in base.__dict__.values():
                if isinstance(f, _Field) and f not in fields:
                    fields.append(f)
        fields += [f for f in cls.__dict__.values() if isinstance(f, _Field) and f not in fields]
        cls.fields = tuple(fields)
        name = cls.__dict__.get("_op_name")
        if not isinstance(name, str):
            return
        if name in OP_CLASSES:
            raise ValueError(f"op {name!r} is defined twice ({OP_CLASSES[name].__name__}, "
                             f"{cls.__name__})")
        ops_ = cls.operands_def()
        var = [k for k, f in enumerate(ops_) if f.kind == "values"]
        if len(var) > 1:
            raise TypeError(f"{cls.__name__}: more than one variadic operand")
        for k, f in enumerate(ops_):
            # fixed operands after the variadic one are counted from the end
            f.index = k if not var or k <= var[0] else k - len(ops_)
            f.start, f.after = k, len(ops_) - 1 - k
        for k, f in enumerate(cls.results_def()):
            f.index = k
        cls.call_name = cls.__dict__.get("call_name") or name.split(".", 1)[1]
        OP_CLASSES[name] = cls
        register_op_class(name, cls)
        if cls.infer is not None and cls.spec is None:     # (a typing rule: in the op table)
            params = tuple(Param(f.key, f.kind, f.default) for f in fields
                           if isinstance(f, _Operand) or (isinstance(f, _Attribute) and f.param))
            cls.spec = register_spec(OpSpec(cls.call_name, cls.dsl or cls.call_name, params,
                                            cls.infer, cls.doc, (), cls.role, cls.axes))

    @classmethod
    def operands_def(cls) -> tuple:
        return tuple(f for f in cls.fields if isinstance(f, _Operand))

    @classmethod
    def attributes_def(cls) -> tuple:
        return tuple(f for f in cls.fields if isinstance(f, _Attribute))

    @classmethod
    def results_def(cls) -> tuple:
        return tuple(f for f in cls.fields if isinstance(f, _Result))

    @classmethod
    def build(cls, *, result_types=(), loc=None, result_names=None, **values) -> "OpClass":
        """A detached op of this class from its fields by Python name (operands: Values, a
        list for a variadic one; attributes: values, omitted ones at their default, omitted
        annotations left out)."""
        unknown = set(values) - {f.attr for f in cls.fields}
        if unknown:
            raise TypeError(f"{cls.__name__} has no field {', '.join(sorted(unknown))}")
        operands = []
        for f in cls.operands_def():
            v = values[f.attr]
            operands.extend(v) if f.kind == "values" else operands.append(v)
        attrs = {}
        for f in cls.attributes_def():
            if f.attr in values:
                attrs[f.key] = values[f.attr]
            elif f.default is not REQUIRED:
                if f.param and f.key not in MAY_BE_ABSENT:
                    attrs[f.key] = f.default
            else:
                raise TypeError(f"{cls.__name__} needs attribute {f.attr}")
        return Operation(cls.name, operands, result_types, attrs, (), loc, result_names)

    @classmethod
    def check_fields(cls, op, ctx) -> None:
        """The declared shape and types: operand and result counts and types, attribute
        presence and Python types, no regions."""
        ops_ = cls.operands_def()
        n, fixed = len(op.operands), sum(1 for f in ops_ if f.kind == "value")
        if n < fixed or (n != fixed and fixed == len(ops_)):
            raise ctx.error(f"{op.name} takes {fixed}{'+' if fixed < len(ops_) else ''} "
                            f"operand(s), got {n}", op)
        res = cls.results_def()
        _shape(op, ctx, None, len(res), 0, tuple(f.key for f in cls.attributes_def()
                                                 if f.default is REQUIRED))
        for f in ops_:
            for v in (f.get(op) if f.kind == "values" else (f.get(op),)):
                if not _accepts(f.types, v.type):
                    raise ctx.error(f"{op.name} operand '{f.key}' is {with_article(describe(v.type))}", op)
        for f in res:
            if not _accepts(f.types, f.__get__(op).type):
                raise ctx.error(f"{op.name} result '{f.attr}' is a "
                                f"{describe(f.__get__(op).type)}", op)
        for f in cls.attributes_def():
            v = f.get(op)
            if not (_accepts(f.types, v) or (v is None and f.default is None)):
                raise ctx.error(f"{op.name} attribute '{f.key}' is {v!r}", op)

    @classmethod
    def verify(cls, op, ctx) -> None:
        """An op class without a typing rule: its declared shape and types."""
        cls.check_fields(op, ctx)


# -- structural ops ------------------------------------------------------------------------------
class ProgramOp(OpClass):
    __slots__ = ()
    axes = NO_TILE
    name = "pl.program"
    doc = "the whole program: one region of pl.func ops"
    sym_name = attribute("symbol", str)
    platform = annotation(str, doc="the platform compiled for (LowerPlatform)")
    verify = staticmethod(_v_program)

    @property
    def body(self):
        """The block of the program's functions."""
        return self.regions[0].blocks[0]

    @property
    def functions(self) -> list:
        """The program's ``pl.func`` ops, in order."""
        return list(self.body)

    def function(self, name: str):
        """The function called ``name`` (None: none)."""
        return next((f for f in self.body if f.sym_name == name), None)

    def by_kind(self, kind: FunctionKind) -> list:
        """The functions of ``kind``, in order."""
        return [f for f in self.body if f.kind is kind]


class FuncOp(OpClass):
    __slots__ = ()
    axes = NO_TILE
    name = "pl.func"
    doc = "a kernel: parameters are the entry block's arguments"
    sym_name = attribute("symbol", str)
    kind = attribute(None, FunctionKind)
    split = annotation(TileSplitAxis, doc="a mixed or Vector function's tile split")
    slot_num = annotation(int, doc="a mixed function's SLOT_NUM")
    verify = staticmethod(_v_func)

    @property
    def body(self):
        """The entry block (its arguments are the parameters)."""
        return self.regions[0].blocks[0]

    @property
    def params(self) -> list:
        """The parameters: the entry block's arguments."""
        return self.regions[0].blocks[0].args


class ReturnOp(OpClass):
    __slots__ = ()
    axes = CARRIES
    name = "pl.return"
    doc = "return from a function"
    terminator = True
    values = var_operand()
    verify = staticmethod(_v_return)


class YieldOp(OpClass):
    __slots__ = ()
    axes = CARRIES
    name = "pl.yield"
    doc = "end of a for body / if branch"
    terminator = True
    values = var_operand()
    verify = staticmethod(_v_yield)


class ForOp(OpClass):
    """``for iv in range(start, stop, step)``; the body block's arguments are the loop
    variable then the loop-carried values (``inits`` in, results out)."""
    __slots__ = ()
    axes = CARRIES
    name = "pl.for"
    doc = "for iv in range(start, stop, step) with loop-carried iter_args"
    start = operand(ScalarType)
    stop = operand(ScalarType)
    step = operand(ScalarType)
    inits = var_operand()
    verify = staticmethod(_v_for)

    @property
    def body(self):
        return self.regions[0].blocks[0]

    def carried_index(self, operand_index: int):
        """The loop-carried value an operand index feeds (k of ``inits``), None for a bound."""
        k = operand_index - type(self).inits.start
        return k if k >= 0 else None

    def iter_arg(self, k: int):
        """The body's block argument of loop-carried value ``k``."""
        return self.body.args[1 + k]


class IfOp(OpClass):
    __slots__ = ()
    axes = CARRIES
    name = "pl.if"
    doc = "if cond: then region else: else region, with results"
    cond = operand(ScalarType)
    verify = staticmethod(_v_if)

    @property
    def then_block(self):
        return self.regions[0].blocks[0]

    @property
    def else_block(self):
        return self.regions[1].blocks[0]


class BufferAttrOp(OpClass):
    __slots__ = ()
    axes = NO_TILE
    name = "pl.buffer_attr"
    doc = "buf.base / buf.size"
    buffer = operand(BufferType)
    attr = attribute(None, str, doc='"base" or "size"')
    value = result(ScalarType)
    verify = staticmethod(_v_buffer_attr)


class ConstOp(OpClass):
    __slots__ = ()
    axes = NO_TILE
    name = "pl.const"
    doc = "a compile-time scalar (or None: a null GM pointer)"
    value = attribute(None, None)
    out = result(ScalarType, NoneType)
    verify = staticmethod(_v_const)


class CopyOp(OpClass):
    __slots__ = ()
    axes = CARRIES
    name = "pl.copy"
    doc = "a named copy of a value (DSL `a = b`)"
    source = operand()
    out = result()
    verify = staticmethod(_v_copy)


_DIR = (int,)                 # a Direction (an IntEnum; DIR_C2V | DIR_V2C is a plain int)
_SPLIT = (int,)                # a TileSplitAxis (an IntEnum; the asm form reads a plain int)
_POPPED = (TileValueType, TensorType)


class InitializePipe(OpClass):
    """A core's pipe initialisation (seed 003): the ring's directions, slot geometry, GM
    slot buffer (A2A3) and the consumer buffers' bases (A5).  The fields of both
    initialisations (this class defines no op itself)."""
    __slots__ = ()
    axes = NO_TILE
    dir_mask = attribute("dir", int)
    slot_size = attribute("int", int)
    gm_slot_buffer = operand(TensorType, NoneType, ScalarType,
                             doc="the GM ring (a tensor parameter), or None on A5")
    c2v_consumer_buf = operand(ScalarType, default=0)
    v2c_consumer_buf = operand(ScalarType, default=0)
    slot_num = attribute("int", int, default=None)
    lanes = attribute("int", int, default=None)
    flag_id = attribute("int", int, default=None)
    local_slot_num = attribute("int", int, default=None)
    pipe_id = attribute("int", int, default=None, key="id",
                        doc="the pipe id (pypto's id=): rings of one direction differ by it")
    gm_offset = annotation(int,
                            doc="bytes from the start of gm_slot_buffer to this init's GM ring (a "
                               ".pto's pto.addptr of the buffer, where pypto lays out pipe k)")
    ring = annotation(str, doc='where the rings live: "gm" or "local" (LowerPlatform)')
    ring_bytes = annotation(int, doc="the GM ring's bytes (LowerPlatform)")
    c2v_ring = annotation(str, doc="the C2V ring buffer's name (ResolvePeerBuffers)")
    v2c_ring = annotation(str, doc="the V2C ring buffer's name (ResolvePeerBuffers)")
    c2v_flags = annotation(tuple, list, doc="the C2V ring's first and last flag (AllocateFlags)")
    v2c_flags = annotation(tuple, list, doc="the V2C ring's first and last flag (AllocateFlags)")
    core = ""

    @classmethod
    def infer(cls, kind, a, at):
        core = cls.core
        want = FunctionKind.AIC if core == "aic" else FunctionKind.AIV
        if kind not in (want, FunctionKind.InCore):
            other = "aiv" if core == "aic" else "aic"
            raise OpError(f"{core}_initialize_pipe in a{'n' if kind is FunctionKind.AIV else ''} "
                          f"{kind.value.upper()} function",
                          f"call {other}_initialize_pipe on this core")
        if at["dir_mask"] not in INIT_DIRS:
            raise OpError(f"invalid dir_mask {at['dir_mask']}",
                          "use DIR_C2V, DIR_V2C or DIR_C2V | DIR_V2C", "dir_mask")
        if at["slot_size"] <= 0 or at["slot_size"] % ALIGNMENT:
            raise OpError(f"slot_size {at['slot_size']} must be a positive multiple of "
                          f"{ALIGNMENT} bytes",
                          param="slot_size")
        sn = at["slot_num"]
        if sn is not None and sn < 1:
            raise OpError(f"slot_num {sn} must be >= 1", param="slot_num")
        fid = at.get("flag_id")
        if fid is not None and (isinstance(fid, bool) or not isinstance(fid, int) or fid < 0):
            raise OpError(f"flag_id={fid!r} must be a FlagID >= 0",
                          "leave it out: AllocateFlags (or the runtime, for a kernel run "
                          "uncompiled) numbers the pipes", "flag_id")
        pid = at.get("id")
        if pid is not None and (isinstance(pid, bool) or not isinstance(pid, int) or pid < 0):
            raise OpError(f"id={pid!r} must be a pipe id >= 0",
                          "number the rings of one direction 0, 1, ... (pypto's id=)", "id")
        lsn = at.get("local_slot_num")
        if lsn is not None and (lsn < 1 or (sn is not None and lsn > sn)):
            raise OpError(f"local_slot_num {lsn} must be >= 1 and at most slot_num {sn} (the "
                          "reserve_buffer of SLOT_NUM * SLOT_SIZE bytes holds the staging slots)",
                          param="local_slot_num")
        if at.get("lanes") not in (None, 1, 2):
            raise OpError(f"lanes={at['lanes']} must be 1 (AIV0 only) or 2 (both Vector cores)",
                          param="lanes")
        g = _t(a["gm_slot_buffer"])
        if not (isinstance(g, TensorType) or (isinstance(a["gm_slot_buffer"], ConstArg)
                                               and a["gm_slot_buffer"].value in (None, 0))):
            raise OpError("gm_slot_buffer must be a GM tensor parameter (or None on A5)",
                          param="gm_slot_buffer")
        for p in ("c2v_consumer_buf", "v2c_consumer_buf"):
            _scalar(a, p)
        return NONE

    @property
    def ways(self) -> tuple:
        """The one-way directions this initialisation sets up, in flag order."""
        return init_ways(self.dir_mask)

    @property
    def rings(self) -> tuple:
        """The :class:`~.ops.Ring` of each way, in flag order."""
        return tuple(Ring(w, self.pipe_id) for w in init_ways(self.dir_mask))

    @property
    def consumer_bufs(self) -> dict:
        """Way ("C2V" / "V2C") -> the operand giving that ring's consumer buffer base."""
        return {"C2V": self.c2v_consumer_buf, "V2C": self.v2c_consumer_buf}

    def ring_name(self, way: str):
        """The name of ``way``'s ("C2V" / "V2C") ring buffer, once ResolvePeerBuffers set it."""
        return self.c2v_ring if way == "C2V" else self.v2c_ring

    def set_ring_name(self, way: str, name: str) -> None:
        if way == "C2V":
            self.c2v_ring = name
        else:
            self.v2c_ring = name


class AicInitializePipe(InitializePipe):
    __slots__ = ()
    name = "pl.aic_initialize_pipe"
    core = "aic"
    doc = "seed 003 Cube pipe initialisation"


class AivInitializePipe(InitializePipe):
    __slots__ = ()
    name = "pl.aiv_initialize_pipe"
    core = "aiv"
    doc = "seed 003 Vector pipe initialisation"


#: the pipe initialisations, Cube's and Vector's
INITIALIZE_PIPE = (AicInitializePipe, AivInitializePipe)


def _core_tile(kind, t, role, p):
    """The tile a TPUSH (producer) / TPOP (consumer) uses on this core."""
    if kind is FunctionKind.AIC:
        want = MemorySpace.Acc if role == "producer" else MemorySpace.Mat
    elif kind is FunctionKind.AIV:
        want = MemorySpace.Vec
    else:
        return
    if t.space is not want:
        raise OpError(f"{'TPUSH' if role == 'producer' else 'TPOP'} on {with_article(kind.value.upper())} "
                      f"function {'pushes' if role == 'producer' else 'pops'} {want.value} tiles, "
                      f"not {describe(t)}",
                      "Cube pushes its Acc result (C2V) and pops Mat tiles (V2C); Vector pushes "
                      "and pops Vec tiles", p)


_IMPORTED, _RESERVED = BufferType("import"), BufferType("reserve")
_RING_ID = "the ring's pipe id (the id= of its init; None: the ring its buffer belongs to, else 0)"


class TPush(OpClass):
    """Producer push of a tile (or, address flow, commit of the TALLOCed slot view)."""
    __slots__ = ()
    axes = RING
    name = "pl.tpush"
    dsl = "TPUSH"
    role = "producer"
    doc = "producer push"
    tile = operand(TileValueType, TensorType)
    buf = operand(_IMPORTED, doc="the producer's import_peer_buffer")
    split = attribute("split", *_SPLIT, default=TileSplitAxis.TILE_NO_SPLIT)
    direction = attribute("dir", *_DIR, default=None)
    pipe_id = attribute("int", int, default=None, key="id", doc=_RING_ID)

    @staticmethod
    def infer(kind, a, at):
        _buffer(a, "buf", "import")
        _infer_dir(kind, at, "producer")
        t = _t(a["tile"])
        if isinstance(t, TensorType):
            return NONE          # address flow: commit the TALLOCed slot
        _core_tile(kind, _tile(a, "tile"), "producer", "tile")
        return NONE


class TPop(OpClass):
    """Consumer pop: waits for the next slot, yields its tile (slot held until TFREE)."""
    __slots__ = ()
    axes = RING
    name = "pl.tpop"
    dsl = "TPOP"
    role = "consumer"
    doc = "consumer pop (slot held)"
    buf = operand(_RESERVED, doc="the consumer's reserve_buffer")
    result_type = attribute("type", *_POPPED, key="type")
    split = attribute("split", *_SPLIT, default=TileSplitAxis.TILE_NO_SPLIT)
    direction = attribute("dir", *_DIR, default=None)
    pipe_id = attribute("int", int, default=None, key="id", doc=_RING_ID)
    tile = result(*_POPPED, doc="the popped tile (address flow: the slot's GM view)")

    @staticmethod
    def infer(kind, a, at):
        _buffer(a, "buf", "reserve")
        _infer_dir(kind, at, "consumer")
        t = at["type"]
        if isinstance(t, TileValueType):
            _core_tile(kind, t, "consumer", "type")
        elif not isinstance(t, TensorType):
            raise OpError("TPOP needs the popped value's type: pl.Tile[[r, c], dtype, space] or "
                          "pl.Tensor[[...], dtype] (address flow)", param="type")
        return t


class TFree(OpClass):
    """Consumer release of the oldest held slot."""
    __slots__ = ()
    axes = NO_TILE
    name = "pl.tfree"
    dsl = "TFREE"
    role = "consumer"
    doc = "consumer release of the oldest held slot (split: its TPOP's, if given)"
    buf = operand(_RESERVED, doc="the consumer's reserve_buffer")
    obj = operand(default=None, doc="the popped value released (or a None constant)")
    direction = attribute("dir", *_DIR, default=None)
    pipe_id = attribute("int", int, default=None, key="id", doc=_RING_ID)
    split = attribute("split", *_SPLIT, default=None)
    read_on = annotation(tuple, list, doc="the pipes (PipeUnit names) that read the freed slot "
                                          "before a TFREE the compiler placed (InsertTfree); "
                                          "LowerPlatform orders the ones the protocol's free "
                                          "signal does not wait for")

    @staticmethod
    def infer(kind, a, at):
        _buffer(a, "buf", "reserve")
        _infer_dir(kind, at, "consumer")
        return NONE


class TAlloc(OpClass):
    """Address flow: the next slot as a GM tensor view the producer writes, then TPUSHes."""
    __slots__ = ()
    axes = RING
    name = "pl.talloc"
    dsl = "TALLOC"
    role = "producer"
    doc = "address flow: allocate the next slot as a GM tensor view"
    buf = operand(_IMPORTED, doc="the producer's import_peer_buffer")
    result_type = attribute("type", TensorType, key="type")
    split = attribute("split", *_SPLIT, default=TileSplitAxis.TILE_NO_SPLIT)
    direction = attribute("dir", *_DIR, default=None)
    pipe_id = attribute("int", int, default=None, key="id", doc=_RING_ID)
    view = result(TensorType, doc="the slot's GM view")

    @staticmethod
    def infer(kind, a, at):
        _buffer(a, "buf", "import")
        _infer_dir(kind, at, "producer")
        if not isinstance(at["type"], TensorType):
            raise OpError("TALLOC allocates a GM slot view: pass pl.Tensor[[...], dtype]",
                          param="type")
        return at["type"]


#: the cross-core (ring) ops; the producer's and the consumer's
CROSS_CORE_OPS = (TPush, TPop, TFree, TAlloc)
PRODUCER_OPS = (TPush, TAlloc)
CONSUMER_OPS = (TPop, TFree)
#: a function's own pipe ops: its ring ops and its initialisation
PIPE_OPS = CROSS_CORE_OPS + INITIALIZE_PIPE


# -- intra-core events (PTO-AS record_event / wait_event / pto.barrier: pto-isa's set_flag /
# wait_flag / pipe_barrier); the event id is a value (a loop may select it, e.g. i % 2)
_FREE_ORDER_DOC = ("placed by LowerPlatform before a TFREE the compiler placed, for the order the "
                   "protocol's free signal lacks: not the kernel's own synchronisation (own_events)")


class _Event(OpClass):
    __slots__ = ()
    axes = NO_TILE
    src = attribute("pipe", SyncPipe)
    dst = attribute("pipe", SyncPipe)
    event_id = operand(ScalarType)
    free_order = annotation(bool, doc=_FREE_ORDER_DOC)

    @staticmethod
    def infer(kind, a, at):
        for p in ("src", "dst"):
            if at[p] is SyncPipe.PIPE_ALL:
                raise OpError(f"'{p}' cannot be PIPE_ALL (only pl.barrier takes it)",
                              "name the one pipe that records / waits", p)
        _scalar(a, "event_id")
        e = a["event_id"]
        if isinstance(e, ConstArg) and not (isinstance(e.value, int) and 0 <= e.value < len(EventID)):
            raise OpError(f"event id {e.value!r} is not EVENT_ID0..EVENT_ID7",
                          "use pl.EVENT_ID0 .. pl.EVENT_ID7 (or an index expression)", "event_id")
        return NONE


class RecordEvent(_Event):
    __slots__ = ()
    name = "pl.record_event"
    doc = "set_flag(src, dst, event_id): signal dst when src is done"


class WaitEvent(_Event):
    __slots__ = ()
    name = "pl.wait_event"
    doc = "wait_flag(src, dst, event_id): hold dst until recorded"


class Barrier(OpClass):
    __slots__ = ()
    axes = NO_TILE
    name = "pl.barrier"
    doc = "pipe_barrier(pipe): PIPE_ALL orders everything after everything before"
    pipe = attribute("pipe", SyncPipe, default=SyncPipe.PIPE_ALL)
    free_order = annotation(bool, doc=_FREE_ORDER_DOC)

    @staticmethod
    def infer(kind, a, at):
        return NONE


#: the intra-core sync ops
EVENT_OPS = (RecordEvent, WaitEvent, Barrier)


def own_events(op) -> list:
    """The intra-core sync ops in ``op`` (walked) that the kernel orders its pipes with by hand:
    every one but those LowerPlatform placed for the ring protocol's free order (``free_order``),
    which a kernel the scoreboard synchronises has too."""
    return [o for o in op.walk() if o.is_a(*EVENT_OPS) and not o.free_order]


# -- the ring buffers (seed 003): declared at the top of a kernel, not DSL calls ------------------
def _top_level(op, ctx, what):
    p = op.parent_op
    if p is None or not p.is_a(FuncOp):
        raise ctx.error(f"{what} inside a loop or branch", op,
                        "declare ring buffers at the top of the kernel")


#: where a kernel of each core kind keeps the ring it reserves (a mixed function's ring gets
#: its space when the compiler splits it)
RING_SPACE_OF_KIND = {FunctionKind.AIV: "UB", FunctionKind.AIC: "L1"}


class ReserveBufferOp(OpClass):
    """The consumer's ring buffer: ``size`` bytes at ``base`` (AUTO: AllocateMemory places
    it) in ``memory_space``; its ``buffer_name`` is what the producer imports."""
    __slots__ = ()
    axes = NO_TILE
    name = "pl.reserve_buffer"
    doc = "seed 003 consumer ring buffer"
    buffer_name = attribute("symbol", str, key="name")
    size = attribute("int", int)
    base = attribute("int", int, type(AUTO))
    memory_space = attribute("space", str, default=None)
    buf = result(_RESERVED)

    @classmethod
    def verify(cls, op, ctx):
        _shape(op, ctx, 0, 1, 0, ("name", "size", "base", "memory_space"))
        _top_level(op, ctx, "reserve_buffer")
        if op.results[0].type != _RESERVED:
            raise ctx.error(f"reserve_buffer result has type {op.results[0].type}", op)
        size, base = op.size, op.base
        if not isinstance(size, int) or size <= 0:
            raise ctx.error(f"reserve_buffer size must be a positive number of bytes, got {size!r}",
                            op, "size=SLOT_NUM * SLOT_SIZE")
        if base is not AUTO and (not isinstance(base, int) or base < 0 or base % ALIGNMENT):
            raise ctx.error(f"reserve_buffer base {base!r} is not a {ALIGNMENT}-byte aligned "
                            "address", op, f"use base=pl.AUTO or a multiple of {ALIGNMENT}")
        if ctx.func is not None:
            want = RING_SPACE_OF_KIND.get(ctx.kind)
            if want is not None and op.memory_space != want:
                raise ctx.error(f"reserve_buffer in {with_article(ctx.kind.value)} function lives in "
                                f"{want}, not {op.memory_space}", op)
            first = next(o for o in op.parent if o.is_a(ReserveBufferOp)
                         and o.buffer_name == op.buffer_name)
            if first is not op:
                raise ctx.error(f"reserve_buffer name {op.buffer_name!r} is declared twice in "
                                f"{ctx.func}", op)
        cls.check_fields(op, ctx)


class ImportPeerBufferOp(OpClass):
    """The producer's view of the consumer's ring buffer ``buffer_name`` in ``peer_func``."""
    __slots__ = ()
    axes = NO_TILE
    name = "pl.import_peer_buffer"
    doc = "seed 003 producer view of the peer's ring"
    buffer_name = attribute("symbol", str, key="name")
    peer_func = attribute("symbol", str)
    base = annotation(int, type(AUTO), doc="the peer's buffer base (ResolvePeerBuffers)")
    size = annotation(int, doc="the peer's buffer size (ResolvePeerBuffers)")
    buf = result(_IMPORTED)

    @classmethod
    def verify(cls, op, ctx):
        _shape(op, ctx, 0, 1, 0, ("name", "peer_func"))
        _top_level(op, ctx, "import_peer_buffer")
        if op.results[0].type != _IMPORTED:
            raise ctx.error(f"import_peer_buffer result has type {op.results[0].type}", op)
        cls.check_fields(op, ctx)


#: the ring-buffer declarations
RING_BUFFERS = (ReserveBufferOp, ImportPeerBufferOp)


def call_names(classes) -> frozenset:
    """The op-table names (``OpClass.call_name``: ``tpush``) of op ``classes``."""
    return frozenset(c.call_name for c in classes)



class TableOp(OpClass):
    """Base of the ops derived from the op table.  A tile op's result gets storage of its own
    in its memory space; AllocateMemoryAddr (:func:`.layout.allocate_function`) writes where,
    and the runtime, the C++ writer and the property verifier read it from here."""
    __slots__ = ()
    addr = annotation(int, doc="the byte address of the tile result in its memory space "
                               "(AllocateMemoryAddr)")
    rotation = annotation(tuple, list, doc="the addresses of the result's buffers when a loop "
                                           "still reads an older result: one per execution, used "
                                           "in turn, the first being addr (AllocateMemoryAddr)")
    scratch_addr = annotation(int, doc="the address of the scratch tile an op takes (pto-isa's "
                                       "tmp operand, the size of its source) (AllocateMemoryAddr)")


# -- the op table's other ops (the catalogue's tile ops, pl.call, pl.get_subblockid): a class
# each, its fields derived from the spec's signature (names, no types: the typing rule checks)
def _table_class(spec) -> type:
    ns = {"__slots__": (), "name": f"pl.{spec.name}", "call_name": spec.name, "dsl": spec.dsl,
          "doc": spec.doc, "infer": staticmethod(spec.infer), "spec": spec, "axes": spec.axes}
    for p in spec.params:
        if p.operand:
            ns[p.name] = _Operand(None, p.kind, p.default)
        else:
            ns[p.name] = _Attribute(p.kind, None, p.default)
    title = _TITLES.get(spec.name) or "".join(w.capitalize() for w in spec.name.strip("_").split("_"))
    return type(f"{title}Op", (TableOp,), ns)


_TITLES = {"get_subblockid": "GetSubblockId"}


#: op-table name -> the op class of each op derived from the table
TABLE_OPS = {n: _table_class(spec) for n, spec in OPS.items() if f"pl.{n}" not in OP_CLASSES}
_DERIVED = frozenset(TABLE_OPS.values())
(LoadOp, StoreOp, MoveOp, CastOp, FullOp, MatmulOp, CallOp, GetSubblockIdOp,
 CreateOp) = (TABLE_OPS[n] for n in ("load", "store", "move", "cast", "full", "matmul", "call",
                                     "get_subblockid", "create"))

for _cls in OP_CLASSES.values():
    if _cls.spec is None:
        _def(_cls.name, _cls.verify, _cls.axes, _cls.terminator, doc=_cls.doc, cls=_cls)
    else:
        derived = _cls in _DERIVED      # (declares no types: its typing rule checks them)
        _def(_cls.name, _derived(_cls.spec, None if derived else _cls.check_fields),
             _cls.spec.axes, spec=_cls.spec, doc=_cls.doc, cls=_cls)

#: op name -> OpSpec of the ops derived from the op table
CALL_OPS = {name: d.spec for name, d in OPDEFS.items() if d.spec is not None}
