"""ResolvePeerBuffers: every ring buffer's base becomes a compile-time constant.

A ``base=pl.AUTO`` still unresolved (no AllocateMemoryAddr pass ran) is resolved here by the
one allocator, :func:`ptopipe.ir.layout.plan_function`: the base AllocateMemoryAddr
would give it.  Then every ``pl.reserve_buffer`` has an integer ``base``; every
``pl.import_peer_buffer`` carries the ``base`` and ``size`` of the reserve it names in its
peer function (cross-function constant propagation); every ``buf.base`` / ``buf.size``
(``pl.buffer_attr``) is folded to a ``pl.const``; each pipe init records which buffer
holds each of its rings (``c2v_ring`` / ``v2c_ring`` = the buffer's name) - also when the
init passes the ring's base as a literal address (a lowered program printed and read back:
the buffer of that kind whose resolved base it is).
Errors (CompileError at the import's DSL line): an import whose ``peer_func`` is not a
function of the program; an import naming a buffer its peer does not reserve.
"""
from __future__ import annotations

from ..ir.vocab import AUTO
from ..ir.opdefs import BufferAttrOp, ConstOp, ImportPeerBufferOp, ReserveBufferOp
from ..ir.layout import plan_function
from .util import consumer_kind, error, func_name, functions, init_ops, ring_buffer, top_ops, ways
from .properties import IRProperty

NAME = "resolve-peers"
REQUIRED = frozenset({IRProperty.MIXED_KERNELS_EXPANDED})
PRODUCED = frozenset({IRProperty.PEERS_RESOLVED})
INVALIDATED = frozenset()


def run(program, ctx):
    funcs = {func_name(f): f for f in functions(program)}
    reserves = {}
    for name, f in funcs.items():
        rs = top_ops(f, ReserveBufferOp)
        reserves[name] = {r.buffer_name: r for r in rs}
        if any(r.base is AUTO for r in rs):
            lay = plan_function(f)
            for r in rs:
                if r.base is AUTO:
                    r.base = lay.buffers[r.buf][0]
    for name, f in funcs.items():
        for imp in top_ops(f, ImportPeerBufferOp):
            bname, pname = imp.buffer_name, imp.peer_func
            peer = funcs.get(pname)
            if peer is None:
                raise error(f"import_peer_buffer {bname!r} names peer_func {pname!r}, "
                            f"which is not a function of program {program.sym_name!r}",
                            imp, f"put the peer in the program (functions: {', '.join(funcs)})")
            r = reserves[pname].get(bname)
            if r is None:
                have = ", ".join(map(repr, reserves[pname])) or "none"
                raise error(f"import_peer_buffer {bname!r}: {pname!r} reserves no "
                            f"buffer of that name (it reserves: {have})", imp,
                            f"add pl.reserve_buffer(name={bname!r}, ...) to {pname!r} "
                            "or import one of its buffers")
            imp.base = r.base
            imp.size = r.size
    for f in funcs.values():
        for init in init_ops(f):
            for way in ways(init):
                b = ring_buffer(f, init, way) or _buffer_at(f, init, way)
                if b is not None:
                    init.set_ring_name(way, b.buffer_name)
        _fold_buffer_attrs(f)
    return program


def _buffer_at(f, init, way: str):
    """The buffer holding ``way``'s ring when ``init`` passes its base as a literal address:
    the reserve (consumer) / import (producer) of ``f`` whose resolved base it is."""
    d = getattr(init.consumer_bufs[way], "op", None)
    if not isinstance(d, ConstOp) or not isinstance(d.value, int):
        return None
    kind = ReserveBufferOp if f.kind is consumer_kind(way) else ImportPeerBufferOp
    return next((b for b in top_ops(f, kind) if b.base == d.value), None)


def _fold_buffer_attrs(f) -> None:
    for op in list(f.walk()):
        if not op.is_a(BufferAttrOp):
            continue
        buf = op.buffer.op
        value = buf.base if op.attr == "base" else buf.size
        res = op.value
        op.replace_with(ConstOp.build(value=value, result_types=[res.type], loc=op.loc,
                                      result_names=[res.name]))
