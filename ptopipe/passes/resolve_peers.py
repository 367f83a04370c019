"""ResolvePeerBuffers: every ring buffer's base becomes a compile-time constant.

A ``base=pl.AUTO`` still unresolved (no AllocateMemoryAddr pass ran) is resolved here by the
one allocator, :func:`ptopipe.ir.layout.plan_function`, the same placement the runtime
makes.  Then every ``pl.reserve_buffer`` has an integer ``base``; every
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

from ..ir.convert import op_to_function
from ..ir.core import Operation
from ..ir.nodes import AUTO
from ..ir.layout import plan_function
from .util import (consumer_kind, error, func_name, functions, init_ops, ring_buffer, top_ops,
                   way_operand, ways)
from .properties import IRProperty

NAME = "resolve-peers"
REQUIRED = frozenset({IRProperty.MIXED_KERNELS_EXPANDED})
PRODUCED = frozenset({IRProperty.PEERS_RESOLVED})
INVALIDATED = frozenset()


def run(program, ctx):
    funcs = {func_name(f): f for f in functions(program)}
    reserves = {}
    for name, f in funcs.items():
        rs = top_ops(f, "pl.reserve_buffer")
        reserves[name] = {r.attributes["name"]: r for r in rs}
        if any(r.attributes["base"] is AUTO for r in rs):
            lay = plan_function(op_to_function(f))
            for r in rs:
                if r.attributes["base"] is AUTO:
                    r.attributes["base"] = lay.by_name[r.attributes["name"]][0]
    for name, f in funcs.items():
        for imp in top_ops(f, "pl.import_peer_buffer"):
            a = imp.attributes
            peer = funcs.get(a["peer_func"])
            if peer is None:
                raise error(f"import_peer_buffer {a['name']!r} names peer_func {a['peer_func']!r}, "
                            f"which is not a function of program {program.attributes['sym_name']!r}",
                            imp, f"put the peer in the program (functions: {', '.join(funcs)})")
            r = reserves[a["peer_func"]].get(a["name"])
            if r is None:
                have = ", ".join(map(repr, reserves[a["peer_func"]])) or "none"
                raise error(f"import_peer_buffer {a['name']!r}: {a['peer_func']!r} reserves no "
                            f"buffer of that name (it reserves: {have})", imp,
                            f"add pl.reserve_buffer(name={a['name']!r}, ...) to {a['peer_func']!r} "
                            "or import one of its buffers")
            a["base"] = r.attributes["base"]
            a["size"] = r.attributes["size"]
    for f in funcs.values():
        for init in init_ops(f):
            for way in ways(init):
                b = ring_buffer(f, init, way) or _buffer_at(f, init, way)
                if b is not None:
                    init.attributes[f"{way.lower()}_ring"] = b.attributes["name"]
        _fold_buffer_attrs(f)
    return program


def _buffer_at(f, init, way: str):
    """The buffer holding ``way``'s ring when ``init`` passes its base as a literal address:
    the reserve (consumer) / import (producer) of ``f`` whose resolved base it is."""
    d = getattr(init.operands[way_operand(way)], "op", None)
    if d is None or d.name != "pl.const" or not isinstance(d.attributes["value"], int):
        return None
    kind = ("pl.reserve_buffer" if f.attributes["kind"] is consumer_kind(way)
            else "pl.import_peer_buffer")
    return next((b for b in top_ops(f, kind) if b.attributes.get("base") == d.attributes["value"]),
                None)


def _fold_buffer_attrs(f) -> None:
    for op in list(f.walk()):
        if op.name != "pl.buffer_attr":
            continue
        buf = op.operands[0].op
        value = buf.attributes[op.attributes["attr"]]
        res = op.results[0]
        const = Operation("pl.const", (), [res.type], {"value": value}, (), op.loc, [res.name])
        op.replace_with(const)
