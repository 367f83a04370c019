"""The ops of the ``.pto`` reader: one handler per PTO-AS op name, each parsing the op's
operands / attributes / types with the cursor and appending the ptopipe IR ops it means to
the current block.  This module owns the name scopes (:class:`Scope`, ``read`` /
``write``: the destination-passing -> value rules of :mod:`.pto_reader`), ``ins(...)`` /
``outs(...)`` lists, and the scalar and structural ops (``arith``, ``scf.for`` / ``scf.if`` /
``scf.yield``, ``func.call``); tile ops are in :mod:`.pto_tile_ops`, pipe ops in
:mod:`.pto_pipe_ops` / :mod:`.pto_pipe_handle`; the op-name table in :mod:`.pto_reader`.
"""
from __future__ import annotations

from ..ir.core import Block, Operation, Region
from ..ir.vocab import FunctionKind
from ..ir.opdefs import ARITH_UNARY_OP, SCALAR_BINOPS, SCALAR_UNOPS, scalar_result_type, unary_result_type
from ..ir.ops import ISA_NAMES
from ..ir.types import BOOL, BufferType, ScalarType, TensorType, TileValueType, describe
from ..ir.opdefs import CallOp, ConstOp, CopyOp, GetSubblockIdOp, IfOp, YieldOp
from .pto_syntax import (ARITH_OF, CEILDIV, CMP_OF, DATA_LANE_MARK, FLOAT_ADD_MARK, FLOATS, INT_DTYPES, LOGIC, LOWERED_DIVISIONS,
                         MLIR_DTYPE, float_of_literal, int_bits, ptr_type)
from .pto_exec.scalar_ops import int_op
from .pto_exec.types import ScalarT, wrap
from ..errors import with_article

_SYM = {v: k for k, v in SCALAR_BINOPS.items()}
_USYM = {v: k for k, v in SCALAR_UNOPS.items()}


class Unwritten:
    """An ``alloc_tile`` / ``declare_tile`` buffer nothing has written yet."""
    __slots__ = ("type", "tok", "addr")

    def __init__(self, type, tok, addr=None):
        self.type, self.tok, self.addr = type, tok, addr


class RowView:
    """``%v = pto.treshape %col``: the ND [1, R] row view of the DN [R, 1] column buffer
    ``%col`` (``tok``), as ptopipe's writer spells an op ptoas takes on row-major tiles only;
    ``ins`` / ``outs`` naming %v read / write %col (``ptype``: its type)."""
    __slots__ = ("tok", "ptype")

    def __init__(self, tok, ptype):
        self.tok, self.ptype = tok, ptype


class Scope:
    """One region's names; ``loop`` for an scf.for body.  ``outer_writes``: names of outer
    buffers written here (name -> token); ``outer_reads``: outer buffers read here;
    ``defined``: the names this region defines (forgotten when it ends: a sibling region or
    the code after it may define them again, as MLIR scopes names by region)."""

    def __init__(self, block, loop: bool = False):
        self.block, self.loop = block, loop
        self.vars, self.outer_writes, self.outer_reads = {}, {}, set()
        self.stale = {}
        self.defined = []


def _depth(fs, name):
    for i in range(len(fs.scopes) - 1, -1, -1):
        if name in fs.scopes[i].vars:
            return i
    return None


def lookup(r, fs, tok):
    d = _depth(fs, tok.text)
    if d is None:
        raise r.c.error(f"use of undefined value {tok.text}", tok, "define it before this use")
    return d, fs.scopes[d].vars[tok.text]


def read(r, fs, tok, want=None):
    """The current IR value of name ``tok`` (a value, or a buffer's last write)."""
    d, b = lookup(r, fs, tok)
    for s in fs.scopes[d:]:
        w = s.stale.get(tok.text)
        if w is not None:
            raise r.c.error(f"{tok.text} is read after the region that wrote it at line "
                            f"{w.line}:{w.col}", tok,
                            "carry the value out of the scf.for / scf.if with iter_args / scf.yield")
    if isinstance(b, Unwritten):
        raise r.c.error(f"{tok.text} is read before anything writes it", tok,
                        f"write it first (its pto.alloc_tile is at line {b.tok.line})")
    if not hasattr(b, "uses"):
        raise r.c.error(f"{tok.text} is not a value here", tok)
    if isinstance(b.type, TileValueType):
        for s in fs.scopes[d + 1:]:
            s.outer_reads.add(tok.text)
    if want == "tile" and not isinstance(b.type, TileValueType):
        raise r.c.error(f"{tok.text} is {with_article(describe(b.type))}, not a tile", tok)
    return b


def write(r, fs, tok, value) -> None:
    """Name ``tok`` (a buffer) now holds ``value``."""
    d, b = lookup(r, fs, tok)
    old = b.type if hasattr(b, "type") else None
    if not isinstance(old, TileValueType):
        raise r.c.error(f"{tok.text} is not a tile buffer (outs(...) takes pto.alloc_tile results)", tok)
    if not same_tile(old, value.type) and not _mask_in(value, old):
        raise r.c.error(f"type mismatch: {tok.text} is {with_article(describe(old))} but the op writes a "
                        f"{describe(value.type)}", tok)
    cur = len(fs.scopes) - 1
    for s in fs.scopes[d + 1:]:
        if s.loop and tok.text in s.outer_reads:
            raise r.c.error(f"{tok.text} is read in this scf.for body before it is written: the "
                            "value is carried from one iteration to the next through the buffer",
                            tok, "pass it through iter_args and scf.yield")
    fs.scopes[cur].vars[tok.text] = value
    fs.scopes[cur].stale.pop(tok.text, None)
    if d < cur:
        fs.scopes[cur].outer_writes[tok.text] = tok
    if value.name is None:
        value.name = tok.text[1:]


def emit(r, fs, name, operands, types, attrs, loc, names=None, regions=()):
    op = Operation(name, operands, types, attrs, regions, loc, names)
    fs.scopes[-1].block.append(op)
    return op


def _hint(t: str):
    h = t[1:]
    return None if h.isdigit() or "#" in h else h


def _check_results(r, opt, results, n):
    if len(results) != n:
        raise r.c.error(f"{opt.text} has {n} result{'s' if n != 1 else ''}, got {len(results)}", opt)


def _typed_operand(r, fs, want_tile=False):
    t = r.c.kind("value", "an operand %name")
    return t, read(r, fs, t, "tile" if want_tile else None)


def same_tile(a, b) -> bool:
    """Tile types equal up to layout.  A layout only says how a tile's matrix is placed (TLOAD,
    TMOV and the element-wise ops keep the matrix), so the layout a ``.pto`` type declares is
    checked where an op takes it (``pto.tmov`` to a layout) and otherwise not enforced: ptoas
    files declare e.g. col_major Mat tiles that ptopipe's TLOAD gives in the default layout."""
    return a == b or (isinstance(a, TileValueType) and isinstance(b, TileValueType)
                      and (a.shape, a.dtype, a.space) == (b.shape, b.dtype, b.space))


#: the IR ops that make a packed predicate mask (TCMP / TCMPS)
MASK_MAKERS = tuple(f"pl.{dsl}" for dsl, isa in ISA_NAMES.items() if isa in ("TCMP", "TCMPS"))


def wider_mask(packed, declared) -> bool:
    """Is the tile type ``declared`` a mask tile holding the IR's ``packed`` mask (TCMP /
    TCMPS: one bit per element, ``mask_shape``) in its first words of each row?  ptoas's files
    declare the mask of R x C tiles as an R x C tile of bytes (pto-isa's TCMP asserts only
    that its rows are the source's; each row's bits start a row of the declared tile), a wider
    tile of the same rows and word type: the same mask to every op that reads it."""
    return (isinstance(packed, TileValueType) and isinstance(declared, TileValueType)
            and packed.dtype == declared.dtype and packed.space == declared.space
            and len(packed.shape) == len(declared.shape) == 2 and packed.shape[0] == declared.shape[0]
            and packed.shape[1] <= declared.shape[1])


def _mask_in(v, declared) -> bool:
    """Is ``v`` a TCMP / TCMPS mask that a tile of type ``declared`` holds (:func:`wider_mask`)?"""
    return isinstance(v.owner, Operation) and v.owner.name in MASK_MAKERS and wider_mask(v.type, declared)


def _check_type(r, tok, v, pt):
    ok = (pt.kind == "tile" and same_tile(v.type, pt.ir)) or \
         (pt.kind == "tile" and _mask_in(v, pt.ir)) or \
         (pt.kind == "scalar" and isinstance(v.type, ScalarType) and v.type.dtype == pt.dtype) or \
         (pt.kind in ("view", "ptr") and isinstance(v.type, TensorType) and v.type.dtype == pt.dtype) or \
         (pt.kind == "scalar" and isinstance(v.type, BufferType) and pt.dtype == "i32")
    if not ok:
        raise r.c.error(f"type mismatch: {tok.text} is {with_article(describe(v.type))}, the op says "
                        f"{pt.ir if pt.ir is not None else pt.dtype}", tok)


def ins_outs(r, fs, key, attrs: dict | None = None):
    """``key(%a, %b : T1, T2)`` -> [(token, binding, PType)]; the attributes written after an
    operand (``ins(%a, %b {cmpMode = ...} : ...)``) into ``attrs`` when given."""
    c = r.c
    c.expect(key, "")
    c.expect("(", f"after {key}")
    toks = []
    while not c.at(":"):
        toks.append(c.kind("value", f"an operand of {key}(...)"))
        if c.at("{"):               # ``ins(%x{rmode = ...} : T)``: an operand's attributes, as
            d = c.attr_dict()       # pypto writes a cast's rounding, ptoas TCMP's cmpMode
            if attrs is not None:
                attrs.update(d)
        if not c.at(":"):
            c.expect(",", f"between {key} operands")
    c.expect(":")
    types = [c.type_()]
    while c.accept(","):
        types.append(c.type_())
    c.expect(")", f"closing {key}(...)")
    if len(types) != len(toks):
        raise c.error(f"{key}(...) has {len(toks)} operands but {len(types)} types", toks[0])
    out = []
    for t, ty in zip(toks, types):
        d = _depth(fs, t.text)
        b = fs.scopes[d].vars[t.text] if d is not None else None
        if isinstance(b, RowView):          # the row view names its column
            if ty.ir != b.ptype.ir.row_view():
                raise c.error(f"{t.text} is the row view {describe(b.ptype.ir.row_view())}, the op "
                              f"says {describe(ty.ir) if ty.ir else ty.kind}", t)
            t, ty = t._replace(text=b.tok.text), b.ptype
        out.append((t, ty))
    return out


# -- scalars and structure -------------------------------------------------------------------------
def h_constant(r, fs, opt, results, loc):
    c = r.c
    _check_results(r, opt, results, 1)
    vt = c.peek()
    c.next()
    c.expect(":", "before the constant's type")
    pt = c.type_()
    if pt.kind != "scalar":
        raise c.error("arith.constant takes a scalar type", vt)
    if vt.text in ("true", "false"):
        v = vt.text == "true"
    else:
        try:
            v = int(vt.text)
        except ValueError:
            try:
                v = float_of_literal(vt.text, pt.dtype) if pt.dtype in FLOATS else float(vt.text)
            except ValueError:
                raise c.error(f"bad number {vt.text!r}", vt) from None
            if pt.dtype not in FLOATS:
                raise c.error(f"a float constant {vt.text} of integer type {pt.dtype}", vt)
    if pt.dtype == "bool" and not isinstance(v, bool):
        raise c.error(f"an i1 constant is true or false, got {vt.text}", vt)
    if pt.dtype in INT_DTYPES and type(v) is int:     # 0xFFFFFFFF : i32 is -1, as in MLIR
        v = wrap(v, ScalarT(MLIR_DTYPE[pt.dtype]))
    rt, name = results[0]
    op = emit(r, fs, ConstOp.name, (), [ScalarType(pt.dtype)], {"value": v}, loc, [_hint(name)])
    fs.made_consts.append(op)
    fs.const_values[op.results[0]] = v
    r.define(fs, rt, name, op.results[0])


def h_arith(r, fs, opt, results, loc):
    c = r.c
    _check_results(r, opt, results, 1)
    pred = mlir_pred = None
    if opt.text in ("arith.cmpi", "arith.cmpf"):
        pt = c.next()
        mlir_pred = pt.text
        pred = CMP_OF.get((opt.text, pt.text))
        if pred is None:
            raise c.error(f"unknown {opt.text} predicate {pt.text!r}", pt)
        c.expect(",", "after the predicate")
    toks = [c.kind("value", "an operand")]
    while c.accept(","):
        toks.append(c.kind("value", "an operand"))
    marks = c.attr_dict() if c.at("{") else {}
    c.expect(":", "before the type")
    declared = c.type_()
    xs = [read(r, fs, t) for t in toks]
    if DATA_LANE_MARK in marks:
        data_lane_condition(r, fs, results, xs)
        return
    for t, x in zip(toks, xs):
        if not isinstance(x.type, ScalarType):
            raise c.error(f"{t.text} is {with_article(describe(x.type))}, not a scalar", t)
    negated = None
    if FLOAT_ADD_MARK in marks:
        # the writer's float a + b, spelled a - (-b) for ptoas: the add of a and b
        d = getattr(xs[-1], "op", None)
        if opt.text != "arith.subf" or len(xs) != 2 or d is None or d.name != ARITH_UNARY_OP["-"]:
            raise c.error(f"{{{FLOAT_ADD_MARK}}} marks an arith.subf of a value and an arith.negf", opt)
        negated, xs = d, [xs[0], d.operands[0]]
    if pred is not None:
        k = pred
    elif negated is not None:
        k = "add"
    elif opt.text in LOGIC.values() and xs[0].type == BOOL:
        k = "and" if opt.text == "arith.andi" else "or"
    else:
        k = "floordiv" if opt.text in LOWERED_DIVISIONS else ARITH_OF[opt.text]
    unary = k in _USYM
    if len(xs) != (1 if unary else 2):
        raise c.error(f"{opt.text} takes {1 if unary else 2} operand(s), got {len(xs)}", opt)
    if unary:
        rt = BOOL if k == "not" else xs[0].type
    else:
        rt = scalar_result_type(_SYM[k], xs[0].type, xs[1].type)
    # (a comparison is of its operands' common type: an integer met by a float is converted)
    shown = scalar_result_type("+", xs[0].type, xs[1].type) if pred is not None else rt
    # an index and an integer type agree: the reader types ptoas's i64 ``get_subblock_idx``
    # (and index_casts) as index, and integer scalars are exact Python ints in the run
    index_int = declared.kind == "scalar" and "index" in (declared.dtype, shown.dtype) \
        and {declared.dtype, shown.dtype} <= set(INT_DTYPES)
    if declared.kind != "scalar" or (declared.dtype != shown.dtype and not index_int):
        raise c.error(f"type mismatch: {opt.text} on these operands is {shown.dtype}, the op says "
                      f"{declared.dtype}", opt)
    rtok, name = results[0]
    folded = _folded(fs, opt.text, mlir_pred, xs, declared.dtype)
    if folded is not None:
        op = emit(r, fs, ConstOp.name, (), [rt], {"value": folded}, loc, [_hint(name)])
        fs.made_consts.append(op)
        fs.const_values[op.results[0]] = folded
        value = op.results[0]
    elif opt.text in LOWERED_DIVISIONS:
        value = _division(r, fs, opt, toks[1], xs, int_bits(declared.dtype), loc, _hint(name))
    else:
        value = emit(r, fs, f"arith.{k}", xs, [rt], {}, loc, [_hint(name)]).results[0]
    if negated is not None and not negated.results[0].uses:
        negated.erase()         # (the negation existed only to spell the add)
    r.define(fs, rtok, name, value)


#: an integer type wide enough that no op of two 64-bit operands wraps in it: the IR's exact value
_EXACT = ScalarT("i130")
#: the MLIR integer ops the IR spells as an op of another value on some operands (the
#: unsigned min / max as the signed ones): their IR value
_IR_VALUE = {"arith.maxui": max, "arith.minui": min}


def _folded(fs, name: str, pred: str | None, xs, dtype: str):
    """The value of integer op ``name`` of type ``dtype`` on constant operands ``xs`` as MLIR
    computes it (wrapped at the type's width: ``index`` / ``i64`` at 2**64, ``i32`` at 2**32
    ..., :func:`~.pto_exec.scalar_ops.int_op`) where it is not the value of the IR op the
    reader would write for it (the IR's integers are exact: ``2**62 * 4`` is 2**64 there, 0 in
    MLIR); else None - the op is then read as an IR op (a round trip keeps it), as it is when an
    operand is not constant or the run reports the op (a division by zero, an over-wide shift).
    ``pred``: an ``arith.cmpi``'s predicate (never folded: its constant operands are in range)."""
    if pred is not None or dtype not in INT_DTYPES:
        return None
    vs = [fs.const_values.get(x) for x in xs]
    if len(vs) != 2 or any(type(v) is not int for v in vs):
        return None
    try:
        v = int_op(name, *vs, ScalarT(MLIR_DTYPE[dtype]))
        exact = _IR_VALUE[name](*vs) if name in _IR_VALUE else int_op(name, *vs, _EXACT)
    except (ZeroDivisionError, OverflowError):
        return None
    return v if v is not None and v != exact else None


def _division(r, fs, opt, btok, xs, bits: int, loc, hint):
    """The IR ops of the MLIR division ``opt`` (:data:`~.pto_syntax.LOWERED_DIVISIONS`) of
    ``xs`` (a, b), of the same value - the IR's divisions are signed:
    ``ceildivsi`` is ``-((-a) // b)``; by a constant ``c``, the unsigned ops work
    on ``u = a + 2**bits * min(max(-a, 0), 1)`` (``a``'s bits read unsigned: ``a`` itself when
    it is not negative) and ``c``'s unsigned value: ``u // c``, ``-((-u) // c)``, ``u % c`` -
    below 2**(bits - 1) for ``c`` >= 2, so read back signed (as ``scf.for`` compares) they are
    the same; by 1 the quotient is ``a``'s bits, ``a`` itself.  ``bits``: the width of the
    op's type.  The last op gets the result's name ``hint``."""
    a, b = xs

    def op(k, *vs, last=False):
        t = unary_result_type(_USYM[k], vs[0].type) if len(vs) == 1 else \
            scalar_result_type(_SYM[k], vs[0].type, vs[1].type)
        return emit(r, fs, f"arith.{k}", list(vs), [t], {}, loc, [hint] if last else None).results[0]

    def const(v):
        made = emit(r, fs, ConstOp.name, (), [a.type], {"value": v}, loc)
        fs.made_consts.append(made)
        fs.const_values[made.results[0]] = v
        return made.results[0]
    neg, name = SCALAR_UNOPS["-"], opt.text
    if name == CEILDIV:                     # ceil(a / b) == -((-a) // b), either sign
        return op(neg, op("floordiv", op(neg, a), b), last=True)
    c = fs.const_values.get(b)
    if type(c) is not int:
        raise r.c.error(f"{name} by {btok.text}, a value known only at run time: the static verifier's IR "
                        "reads this division by a constant divisor only", btok,
                        "`ptopipe run` / `ptopipe check` run the file with MLIR's integer semantics; "
                        "divide by a constant (or use a signed division) for --static")
    cu = c & ((1 << bits) - 1)
    if cu >= 1 << (bits - 1):
        raise r.c.error(f"{name} by {btok.text} = {c}, {cu} read unsigned: the static verifier's IR reads an "
                        "unsigned division by a divisor below 2**(bits - 1) only", btok,
                        "`ptopipe run` / `ptopipe check` run the file with MLIR's integer semantics")
    if cu == 1:                             # the value itself (its bits, read back signed), or 0
        return op("add", a, const(0), last=True) if name != "arith.remui" else op("mul", a, const(0), last=True)
    d = b if cu == c else const(cu)
    au = fs.const_values.get(a)
    if type(au) is int:
        u = const(au & ((1 << bits) - 1))
    else:                                   # a, or a + 2**bits where it is negative
        wraps = op("min", op("max", op(neg, a), const(0)), const(1))
        u = op("add", a, op("mul", wraps, const(1 << bits)))
    if name == "arith.divui":
        return op("floordiv", u, d, last=True)
    if name == "arith.remui":
        return op("mod", u, d, last=True)
    return op(neg, op("floordiv", op(neg, u), d), last=True)       # ceildivui


class DataLane:
    """What a data-lane condition's name is bound to: an ``scf.if`` on it is read as its
    body (the IR's two-lane no-split AIV kernel does its data work on AIV0 only)."""


def data_lane_condition(r, fs, results, xs) -> None:
    """Bind the marked ``arith.cmpi``'s result to :class:`DataLane`; the sub-block id it
    compares goes too once nothing else reads it (its constant goes with the unused ones)."""
    rtok, name = results[0]
    r.define(fs, rtok, name, DataLane())
    for x in xs:
        if x.op is not None and x.op.is_a(GetSubblockIdOp) and not x.uses:
            x.op.erase()


def h_select(r, fs, opt, results, loc):
    """``%r = arith.select %cond, %a, %b : T`` (scalars) -> a ``pl.if`` whose branches yield
    %a / %b (the IR has no select op).  On the data lane (:class:`DataLane`) it is %a: the IR
    is AIV0's program (a size that is the tile's on AIV0 and 0 on AIV1 is the tile's)."""
    c = r.c
    _check_results(r, opt, results, 1)
    toks = [c.kind("value", "the condition")]
    for what in ("the true value", "the false value"):
        c.expect(",", f"before {what}")
        toks.append(c.kind("value", what))
    c.expect(":", "before the type")
    tt = c.peek()
    declared = c.type_()
    if isinstance(lookup(r, fs, toks[0])[1], DataLane):
        a, b = [read(r, fs, t) for t in toks[1:]]
        rtok, name = results[0]
        r.define(fs, rtok, name, a)
        return
    cond, a, b = [read(r, fs, t) for t in toks]
    if cond.type != BOOL:
        raise c.error(f"{toks[0].text} is {with_article(describe(cond.type))}, not an i1 condition", toks[0])
    if declared.kind != "scalar":
        raise c.error("arith.select of tiles or tensors is not read: give a scalar type", tt)
    for t, x in zip(toks[1:], (a, b)):
        if not isinstance(x.type, ScalarType) or x.type.dtype != declared.dtype:
            raise c.error(f"type mismatch: {t.text} is {with_article(describe(x.type))}, the op says "
                          f"{declared.dtype}", t)
    blocks = [Block(), Block()]
    for blk, v in zip(blocks, (a, b)):
        blk.append(Operation(YieldOp.name, [v], (), {}, (), loc))
    rtok, name = results[0]
    op = emit(r, fs, IfOp.name, [cond], [a.type], {}, loc, [_hint(name)], [Region([x]) for x in blocks])
    r.define(fs, rtok, name, op.results[0])


def h_call(r, fs, opt, results, loc):
    c = r.c
    _check_results(r, opt, results, 0)
    if fs.kind is not FunctionKind.Group:
        raise c.error("func.call in a kernel: only the pto.entry function calls kernels", opt)
    callee = c.kind("symbol", "the callee @name")
    c.expect("(")
    toks = []
    while not c.accept(")"):
        toks.append(c.kind("value", "an argument"))
        if not c.at(")"):
            c.expect(",")
    c.expect(":")
    c.expect("(")
    types = []
    while not c.accept(")"):
        types.append((c.peek(), c.type_()))
        if not c.at(")"):
            c.expect(",")
    c.expect("->")
    c.expect("(")
    c.expect(")", "(kernels return nothing)")
    if len(types) != len(toks):
        raise c.error(f"func.call with {len(toks)} arguments but {len(types)} types", opt)
    args = [read(r, fs, t) for t in toks]
    for v, (at, pt) in zip(args, types):
        _check_call_type(c, v, at, pt)
    emit(r, fs, CallOp.name, args, [], {"callee": callee.text[1:]}, loc)


def _check_call_type(c, v, at, pt) -> None:
    """A func.call's type list says what each argument is: a pointer's element type, a
    scalar's type.  ``v`` is the entry's own parameter (its declared type)."""
    vt = v.type
    if pt.kind == "ptr":
        ok = isinstance(vt, TensorType) and vt.dtype == pt.dtype
    elif pt.kind == "scalar":
        ok = isinstance(vt, ScalarType) and vt.dtype == pt.dtype
    else:
        ok = False
    if not ok:
        have = _spelled(isinstance(vt, TensorType), getattr(vt, "dtype", None)) or describe(vt)
        said = _spelled(pt.kind == "ptr", pt.dtype) or pt.kind
        raise c.error(f"func.call: argument %{v.name} is declared {have} but the call's type list "
                      f"says {said}", at, f"write {have} for %{v.name} in the type list")


def _spelled(ptr: bool, dtype) -> str | None:
    if dtype not in MLIR_DTYPE:
        return None
    return ptr_type(dtype) if ptr else MLIR_DTYPE[dtype]


def _cast(r, fs, opt, results, what: str) -> tuple:
    """The operand of a cast ``%y = arith.<cast> %x : T to U``, its token and the two types:
    ``(x, %x, T, U)``."""
    c = r.c
    _check_results(r, opt, results, 1)
    t = c.kind("value", what)
    c.expect(":")
    src = c.type_()
    c.expect("to")
    return read(r, fs, t), t, src, c.type_()


def h_number_cast(r, fs, opt, results, loc):
    """``%y = arith.trunci %x : i64 to i32`` (or ``arith.sitofp %x : i64 to f32``) of an index
    cast to i64 (which :func:`h_index_cast` reads as the index itself): the writer's cast of an
    index scalar operand to the number type ptoas takes there (INT_SCALAR_OPERAND,
    NUMBER_SCALAR_OPS; texpands' float tile's own type) - %y names the same IR value.  So does
    ``arith.truncf`` / ``arith.extf`` of a float scalar (the writer's texpands scalar in its f16
    tile's type: pto-isa converts it to the tile's type all the same).  The value IR has no
    other truncation or conversion."""
    x, _t, src, dst = _cast(r, fs, opt, results, "the converted value")
    if opt.text in ("arith.truncf", "arith.extf"):
        ok = src.kind == dst.kind == "scalar" and src.dtype in FLOATS and dst.dtype in FLOATS \
            and isinstance(x.type, ScalarType) and x.type.dtype == src.dtype
        what = "a float scalar (a tile-scalar op's operand in its tile's type)"
    elif opt.text in ("arith.sitofp", "arith.uitofp") and isinstance(x.type, ScalarType) \
            and x.type.dtype == src.dtype != "index":
        # a sized integer (an i32 parameter) made the float of a float scalar op, or the float
        # scalar of pto.tmaxs / tmins (FLOAT_SCALAR_OPS)
        ok = src.kind == dst.kind == "scalar" and src.dtype in INT_DTYPES and dst.dtype in FLOATS
        what = "an integer scalar"
    else:
        to = FLOATS if opt.text in ("arith.sitofp", "arith.uitofp") else INT_DTYPES
        ok = src.kind == dst.kind == "scalar" and src.dtype == "i64" and dst.dtype in to \
            and isinstance(x.type, ScalarType) and x.type.dtype == "index"
        what = "an index cast to i64 (a scalar operand's cast)"
    if not ok:
        raise r.c.error(f"{opt.text}: the value IR reads only the conversion of {what}", opt)
    rt, name = results[0]
    r.define(fs, rt, name, x)


def h_index_cast(r, fs, opt, results, loc):
    """``%y = arith.index_cast %x : i64 to index`` of an integer value (the i64 that
    ptoas's ``pto.get_subblock_idx`` gives, an ``i32`` kernel parameter): %y names the same
    IR value (integer scalars are exact Python ints in the run)."""
    c = r.c
    x, t, src, dst = _cast(r, fs, opt, results, "the cast value")
    if src.kind == "scalar" and dst.kind == "scalar" and src.dtype == "index" and dst.dtype in INT_DTYPES \
            and isinstance(x.type, ScalarType) and x.type.dtype == "index":
        # an index cast to an integer type (the writer's operand of an op ptoas takes an
        # integer scalar for, INT_SCALAR_OPERAND): the same exact Python int in the run
        rt, name = results[0]
        r.define(fs, rt, name, x)
        return
    if src.kind != "scalar" or dst.kind != "scalar" or dst.dtype != "index" \
            or not (isinstance(x.type, ScalarType) and x.type.dtype in INT_DTYPES):
        raise c.error(f"arith.index_cast: ptopipe reads only a cast to index of an integer value "
                      f"({t.text} is {with_article(describe(x.type))})", opt)
    if x.type.dtype not in ("index", src.dtype):
        raise c.error(f"arith.index_cast: {t.text} is {MLIR_DTYPE[x.type.dtype]} but the cast says "
                      f"{MLIR_DTYPE.get(src.dtype, src.dtype)}", opt,
                      f"write `arith.index_cast {t.text} : {MLIR_DTYPE[x.type.dtype]} to index`")
    rt, name = results[0]
    r.define(fs, rt, name, x)


def h_copy(r, fs, opt, results, loc):
    _check_results(r, opt, results, 1)
    t, x = _typed_operand(r, fs)
    r.c.expect(":")
    _check_type(r, t, x, r.c.type_())
    rt, name = results[0]
    op = emit(r, fs, CopyOp.name, [x], [x.type], {}, loc, [_hint(name)])
    r.define(fs, rt, name, op.results[0])
