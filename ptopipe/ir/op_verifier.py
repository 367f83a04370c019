"""The verifier of the op/region IR.

Generic rules, checked in one linear walk: every op is defined (:mod:`.opdefs`), every
operand is defined before its use and visible there (SSA dominance: defined earlier in
the same block or in an enclosing one; a function sees no value of another), a value
is defined once, terminators
(``pl.yield`` / ``pl.return``) only end a block.  Then each op's own verifier
(operand / result / region shapes, types, yields vs results, the op table's typing rule
for tile and cross-core ops), and the per-core rules of a function: tiles in the core's
memory spaces, each ring (direction and pipe id) initialised once at the top and before any
cross-core op, ring buffers declared once each, in the core's memory (which side owns a ring
is the cross-core ops' typing: TPOP / TFREE take a reserve, TPUSH / TALLOC an import; a
reserve no TPOP reads is a region the kernel keeps, as in pypto); function names unique in a
program.
``verify_program`` adds: every import names a buffer its peer function (on the other core)
reserves.

``verify_ops(top)`` raises :class:`~ptopipe.errors.CompileError` at the first problem,
with the op's source location; ``verify_program(top)`` adds the whole program's rules (its
functions' peers).
"""
from __future__ import annotations

from types import MappingProxyType

from ..errors import CompileError
from .core import Operation
from .vocab import FunctionKind
from .opdefs import (CROSS_CORE_OPS, INITIALIZE_PIPE, OPDEFS, FuncOp, ImportPeerBufferOp,
                     ReserveBufferOp)
from .ops import C2V, V2C, Ring
from .types import MemorySpace, TileValueType, describe
from ..errors import with_article


class _Ctx:
    __slots__ = ("kind", "func", "inited", "memo")

    def __init__(self):
        self.kind = FunctionKind.InCore
        self.func = None
        self.inited = {}              # Ring -> the init that sets it up
        self.memo = set()             # keys of table-derived ops verified in this walk (opdefs)

    @staticmethod
    def error(msg: str, op, fix: str | None = None) -> CompileError:
        loc = getattr(op, "loc", None)
        return CompileError(msg, where=str(loc) if loc else None, fix=fix)


def _vname(v) -> str:
    return f"%{v.name}" if v.name else f"%<{type(v).__name__} {getattr(v, 'index', '?')}>"


#: the tile spaces a function of each core kind cannot hold (a Vector core has only UB, the
#: Cube core none); tuples, because an Enum hashes in Python and a tuple tests by identity
_NOT_ON_CORE = {FunctionKind.AIV: tuple(s for s in MemorySpace if s is not MemorySpace.Vec),
                FunctionKind.AIC: (MemorySpace.Vec,)}


def _check_space(ctx: _Ctx, v, op) -> None:
    """Value ``v`` (a block argument or result, named in the error) of a tile type is in a
    memory space of the function's core."""
    t = v.type
    if t.__class__ is not TileValueType or t.space not in _NOT_ON_CORE.get(ctx.kind, ()):
        return
    if ctx.kind is FunctionKind.AIV:
        raise ctx.error(f"{_vname(v)} is {with_article(describe(t))} in Vector function {ctx.func}; a Vector core "
                        "has only UB (Vec tiles)", op,
                        "do Cube work (Mat/Left/Right/Acc tiles) in the AIC function")
    raise ctx.error(f"{_vname(v)} is {with_article(describe(t))} in Cube function {ctx.func}; the Cube core has "
                    "no UB", op, "do Vector work (Vec tiles) in the AIV function")


#: what the walk does for an op of a class besides its verifier: bits of _FUNC (it opens a
#: function: its kind and name become the context's), _INIT (a pipe initialisation's core
#: rules), _CROSS (a cross-core op's core rules)
_FUNC, _INIT, _CROSS = 1, 2, 4


def _role(cls) -> int:
    """The role bits of op class ``cls``."""
    # Hot-path invariant: the bits are issubclass tests of the class, and an op's class
    # never changes, so looking them up by class is the isinstance tests the rules state
    # (FuncOp; else-if INITIALIZE_PIPE, CROSS_CORE_OPS).
    return (_FUNC if issubclass(cls, FuncOp) else 0) | (
        _INIT if issubclass(cls, INITIALIZE_PIPE) else
        _CROSS if issubclass(cls, CROSS_CORE_OPS) else 0)


def _op_classes(cls) -> list:
    """``cls`` and every class derived from it."""
    out = [cls]
    for sub in cls.__subclasses__():
        out.extend(_op_classes(sub))
    return out


#: op class -> its role bits, for every op class there is (all are defined by ir.opdefs,
#: imported above): computed once at import, then only looked up
_ROLES = MappingProxyType({cls: _role(cls) for cls in _op_classes(Operation)})


def _core_rules(ctx: _Ctx, op, role: int, top: bool) -> None:
    """The per-core rules of pipe initialisation (``role`` has _INIT) and cross-core ops
    (_CROSS) in a function."""
    name = op.name
    if role & _INIT:
        if not top:
            raise ctx.error(f"{name[3:]} inside a loop or branch", op,
                            "initialise the pipe once, at the top of the kernel")
        for ring in op.rings:
            if ring in ctx.inited:
                e = ctx.error(f"the {ring.label} ring is initialised twice in {ctx.func}", op,
                              "initialise each ring once per kernel (one init with DIR_C2V | "
                              "DIR_V2C for both directions; a second ring of a direction takes "
                              "its own id=)")
                e.details = f"first initialised at {ctx.inited[ring].loc}"
                raise e
            ctx.inited[ring] = op
    elif role & _CROSS:
        if not ctx.inited:
            raise ctx.error(f"{name[3:]} before the pipe is initialised", op,
                            f"call {'aic' if ctx.kind is FunctionKind.AIC else 'aiv'}"
                            "_initialize_pipe(...) first")
        d = op.direction
        if ctx.kind in (FunctionKind.AIC, FunctionKind.AIV) and d is None:
            raise ctx.error(f"{name[3:]} without a direction", op)
        if d is not None and d in (C2V, V2C) and Ring(d, op.pipe_id) not in ctx.inited:
            ring = Ring(d, op.pipe_id)
            have = sorted(r.id for r in ctx.inited if r.direction == d)
            if have:
                raise ctx.error(f"{type(op).dsl or name[3:]} on the {ring.label} ring, which no "
                                f"initialize_pipe of {ctx.func} sets up (its {ring.way} rings: "
                                f"{', '.join(f'id={i}' for i in have)})", op,
                                "name a ring this kernel initialises: id= of its init, or pass "
                                "that ring's buffer")
            raise ctx.error(f"{type(op).dsl or name[3:]} on the {d.name[4:]} direction, which no initialize_pipe "
                            f"of {ctx.func} sets up", op,
                            f"initialise the pipe with DIR_{d.name[4:]} (or DIR_C2V | DIR_V2C)")


def _block(ctx: _Ctx, block, visible: set, top: bool) -> None:
    # The walk visits every op of the program once per verify_ops, and the pass manager
    # verifies after every pass, so this loop is the compiler's hottest: it keeps to set
    # operations, reads an op's role by its class once (_role) and calls _core_rules /
    # _check_space only for an op / value they apply to.
    added = []
    kind = ctx.kind
    no_space = _NOT_ON_CORE.get(kind, ())
    roles = _ROLES
    for a in block.args:
        if a in visible:
            raise ctx.error(f"{_vname(a)} is defined twice", block.parent.parent)
        _check_space(ctx, a, block.parent.parent)
        visible.add(a)
        added.append(a)
    op = block.first
    while op is not None:
        d = OPDEFS.get(op.name)
        if d is None:
            raise ctx.error(f"unknown op {op.name!r}", op, "see ptopipe.ir.opdefs.OPDEFS")
        if op.parent is not block:
            raise ctx.error(f"{op.name} is linked into a block that is not its parent", op)
        if not visible.issuperset(op.operands):         # one C-level pass over the operands
            raise _undefined_operand(ctx, op, visible)
        if d.terminator and op.next is not None:
            raise ctx.error(f"{op.name} must be the last op of its block", op)
        d.verify(op, ctx)
        role = roles.get(op.__class__)
        if role is None:
            role = _role(op.__class__)
        if role:
            if role & _FUNC:            # (verified: it has its kind and name)
                ctx.kind, ctx.func, ctx.inited = op.kind, op.sym_name, {}
            if ctx.func is not None and role & (_INIT | _CROSS):
                _core_rules(ctx, op, role, top)
        if op.regions:
            inner_top = bool(role & _FUNC)
            for r in op.regions:
                for b in r.blocks:
                    _block(ctx, b, visible, inner_top)
        for res in op.results:
            if res in visible:
                raise ctx.error(f"{_vname(res)} is defined twice", op)
            t = res.type                # _check_space's test, inline: it raises only when true
            if t.__class__ is TileValueType:
                if ctx.kind is not kind:            # a pl.func of this block set another kind
                    kind = ctx.kind
                    no_space = _NOT_ON_CORE.get(kind, ())
                if t.space in no_space:
                    _check_space(ctx, res, op)
            visible.add(res)
            added.append(res)
        op = op.next
    visible.difference_update(added)


def _undefined_operand(ctx: _Ctx, op, visible: set) -> CompileError:
    """The error for ``op``'s first operand not in ``visible`` (one of them is not)."""
    for i, v in enumerate(op.operands):
        if v not in visible:
            return ctx.error(f"{op.name} uses {_vname(v)} (operand {i}) before it is defined "
                             "or outside its scope", op,
                             "define it earlier (values defined inside a loop or branch are "
                             "not visible outside it unless yielded)")
    raise AssertionError("every operand is visible")


def verify_ops(top, memo: bool = True) -> None:
    """Verify ``top`` (a ``pl.program`` op, or any op) and everything nested in it.
    ``memo=False`` checks every table-derived op from scratch (the memo's reference)."""
    d = OPDEFS.get(top.name)
    if d is None:
        raise _Ctx.error(f"unknown op {top.name!r}", top)
    ctx = _Ctx()
    if not memo:
        ctx.memo = None
    is_func = top.is_a(FuncOp)
    if is_func:                         # (a detached function is not verified itself)
        ctx.kind, ctx.func = top.attributes.get("kind"), top.attributes.get("sym_name")
    if not is_func or top.parent is not None:
        d.verify(top, ctx)
    for r in top.regions:
        for b in r.blocks:
            _block(ctx, b, set(), is_func)


def verify_program(top) -> None:
    """:func:`verify_ops` of a whole program (a ``pl.program`` op), and its functions' peers
    (:func:`check_peers`): what a program the DSL builds must pass."""
    verify_ops(top)
    check_peers(top)


def check_peers(program) -> None:
    """Every import_peer_buffer of ``program`` (a ``pl.program`` op) names another function
    of the program, on the other core kind, that reserves a buffer of that name."""
    funcs = {f.sym_name: f for f in program.body}
    for fn in program.body:
        for s in fn.body:
            if not s.is_a(ImportPeerBufferOp):
                continue
            peer = funcs.get(s.peer_func)
            if peer is None:
                have = ", ".join(f.sym_name for f in program.body if f is not fn) or "none"
                raise _Ctx.error(f"import_peer_buffer names peer_func {s.peer_func!r}, which is "
                                 f"not in program {program.sym_name!r} (functions: {have})", s,
                                 "pass the consumer function to pl.program(...) along with this one")
            if peer is fn:
                raise _Ctx.error("import_peer_buffer names its own function as the peer", s,
                                 "peer_func is the paired consumer function on the other core")
            names = [x.buffer_name for x in peer.body if x.is_a(ReserveBufferOp)]
            if s.buffer_name not in names:
                raise _Ctx.error(f"import_peer_buffer: {peer.sym_name} reserves no buffer named "
                                 f"{s.buffer_name!r}"
                                 + (f" (it reserves {', '.join(map(repr, names))})" if names else ""),
                                 s, f"use the name given to pl.reserve_buffer in {peer.sym_name}")
            if fn.kind in (FunctionKind.AIC, FunctionKind.AIV) and peer.kind is fn.kind:
                raise _Ctx.error(f"import_peer_buffer: peer {peer.sym_name} runs on the same core "
                                 f"kind ({fn.kind.value})", s, "pair an AIC function with an AIV function")
