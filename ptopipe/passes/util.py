"""What the seed-003 passes share: finding functions, pipe inits and ring buffers in a
``pl.program`` op, the rings (ways) of a DIR_MASK, and a CompileError at an op's DSL
location.  No policy lives here: flag ids come from the protocol model
(:mod:`ptopipe.protocol.model`), SLOT_NUM defaults and memory sizes from the
platform (:mod:`ptopipe.arch`)."""
from __future__ import annotations

from ..arch import MemSpace, get_platform
from ..arch.vocab import PLAIN_DIRECTION, Direction
from ..errors import CompileError
from ..ir.core import Operation
from ..ir.vocab import AUTO, FunctionKind
from ..ir.opdefs import INITIALIZE_PIPE, RING_BUFFERS, BufferAttrOp, CallOp, ConstOp
from ..ir.types import INDEX

#: seed 003's DIR_MASK values (the *_GM forms, a ring asked for in GM explicitly: PLAIN_DIRECTION)
SEED_DIRS = (Direction.DIR_C2V, Direction.DIR_V2C, Direction.DIR_BOTH)
#: the memory a consumer-local ring lives in: C2V in the Vector core's UB, V2C in the Cube's L1
RING_SPACE = {"C2V": MemSpace.UB, "V2C": MemSpace.L1}


def error(msg: str, op, fix: str | None = None, details: str | None = None) -> CompileError:
    loc = getattr(op, "loc", None)
    return CompileError(msg, where=str(loc) if loc else None, fix=fix, details=details)


def platform_of(ctx):
    return get_platform(getattr(ctx, "platform", None) or "a2a3")


def protocol_of(ctx) -> str:
    """The ring protocol a compile targets (``ctx.protocol``; seed 003's "spec" by default)."""
    return getattr(getattr(ctx, "protocol", None), "value", getattr(ctx, "protocol", None)) or "spec"


def protocol_model(ctx):
    """The :class:`~ptopipe.protocol.model.ProtocolModel` of ``ctx``'s protocol on its
    platform (flag numbering, hold limits, the A5 no-split lane)."""
    from ..protocol.model import compile_model, platform_kind
    return compile_model(protocol_of(ctx), platform_kind(platform_of(ctx)))


def functions(program: Operation) -> list:
    return list(program.regions[0].blocks[0])


def func_name(f: Operation) -> str:
    return f.sym_name


def entry(f: Operation):
    return f.regions[0].blocks[0]


def top_ops(f: Operation, *defs) -> list:
    """The ops of ``f``'s body (not nested) of the op classes ``defs``."""
    return [op for op in entry(f) if isinstance(op, defs)]


def init_ops(f: Operation) -> list:
    """The pipe initialisations of function ``f`` (the verifier keeps them top level)."""
    return top_ops(f, *INITIALIZE_PIPE)


def seed_dir(op: Operation) -> Direction | None:
    """The seed 003 DIR_MASK of an init (a *_GM form mapped to its plain mask), or None."""
    d = op.dir_mask
    try:
        d = Direction(d)
    except ValueError:
        return None
    return PLAIN_DIRECTION.get(d, d) if d in SEED_DIRS or d in PLAIN_DIRECTION else None


def ways(op: Operation) -> tuple:
    """The rings ("C2V", "V2C") an init binds, in flag order."""
    d = seed_dir(op)
    if d is None:
        return ()
    return tuple(w for w, bit in (("C2V", Direction.DIR_C2V), ("V2C", Direction.DIR_V2C)) if d & bit)


def gm_requested(op: Operation) -> bool:
    """The init asks for its rings in GM explicitly (a *_GM direction)."""
    try:
        return Direction(op.dir_mask) in PLAIN_DIRECTION
    except ValueError:
        return False


def slot_num(op: Operation, plat) -> int:
    """SLOT_NUM of an init: its own ``slot_num``, else the platform's seed-003 default."""
    n = op.slot_num
    return n if n is not None else plat.slot_num_for(len(ways(op)) == 2)


def consumer_kind(way: str) -> FunctionKind:
    return FunctionKind.AIV if way == "C2V" else FunctionKind.AIC


def ring_buffer(f: Operation, init: Operation, way: str) -> Operation | None:
    """The reserve_buffer / import_peer_buffer op holding ``way``'s ring for ``init``: the
    buffer whose ``.base`` is the init's argument, else (after ResolvePeerBuffers folded
    the base to a constant) the buffer named by the init's ``<way>_ring`` attribute."""
    d = getattr(init.consumer_bufs[way], "op", None)
    if isinstance(d, BufferAttrOp):
        b = getattr(d.buffer, "op", None)
        if b is not None:
            return b
    name = init.ring_name(way)
    if name is None:
        return None
    for b in top_ops(f, *RING_BUFFERS):
        if b.buffer_name == name:
            return b
    return None


def const_before(anchor: Operation, value, type=INDEX, name: str | None = None):
    """A ``pl.const`` inserted before ``anchor``; returns its value."""
    op = ConstOp.build(value=value, result_types=[type], loc=anchor.loc, result_names=[name])
    anchor.insert_before(op)
    return op.results[0]


def resolved_base(buf: Operation):
    """A buffer op's base: an int once resolved, else None."""
    b = buf.base
    return None if b is None or b is AUTO else b


def ring_in_gm(init: Operation, plat) -> bool:
    """Are ``init``'s rings in GM (the platform's rule, or a *_GM direction)?"""
    return plat.ring_in_gm or gm_requested(init)


def compiler_made(program) -> set:
    """Names of the kernels ExpandMixedKernel made (those a Group function calls): the
    others are the user's own ``pl.aic`` / ``pl.aiv`` functions."""
    return {c.callee for g in program.body if getattr(g, "kind", None) is FunctionKind.Group
            for c in g.walk() if c.is_a(CallOp)}
