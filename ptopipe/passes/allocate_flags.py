"""AllocateFlags: cross-core flag ids for every pipe, per Vector-Cube peer and direction.

Each pipe init gets ``flag_id`` (its TPipe FlagID) and, per ring, ``c2v_flags`` /
``v2c_flags`` = [first, last] flag id the ring uses; the AIC and AIV inits of one pipe carry
the same values.

A pipe whose inits give ``flag_id=`` (hand-written) keeps it; the others are numbered
around it.  The ids follow the protocol model's numbering (:meth:`ProtocolModel.flag_ids`; seed 003,
the default: ready[tag] = free[tag] = FlagID + tag, the V2C ring after the C2V ring's
SLOT_NUM flags - one direction uses flags 0..7, both directions 0..3 and 4..7).  The pipes
of one peer take consecutive ranges (:meth:`ProtocolModel.next_flag_id`) in the AIC
function's order; the runtime binds each pipe with the ``flag_id`` its init carries (a
hand-written kernel run without this pass: the same numbering, in its init order).

A lone kernel (a program with no function of the other core, as pypto compiles one) gets
its pipes numbered the same way; running it needs its peer, which the run reports.

The two ends of a pipe are the inits of the same direction(s) and ``id=`` (a function may
have several rings of one direction, each with its own id and its own flags).

Errors (CompileError at the init's DSL line): an init with no matching init (same
direction and id) in its peer; the two ends of a pipe disagreeing on DIR_MASK, SLOT_SIZE or
SLOT_NUM or on a given flag_id; a given flag_id whose flags overlap another pipe's; flags
running out (a peer has ``flag_limit`` ids, e.g. 8 per direction).
"""
from __future__ import annotations

from ..ir.vocab import FunctionKind
from ..ir.opdefs import ImportPeerBufferOp, ReserveBufferOp
from ..protocol.model import FIRST_FLAG_ID
from .util import (error, func_name, functions, init_ops, platform_of, protocol_model, slot_num,
                   top_ops, ways)
from .properties import IRProperty

NAME = "allocate-flags"
REQUIRED = frozenset({IRProperty.MIXED_KERNELS_EXPANDED})
PRODUCED = frozenset({IRProperty.FLAGS_ALLOCATED})
INVALIDATED = frozenset()


def _peer_of(f, funcs: dict) -> str | None:
    """The name of ``f``'s peer: named by its imports, or importing its reserves, or the one
    function of the other core kind."""
    me = func_name(f)
    for imp in top_ops(f, ImportPeerBufferOp):
        if imp.peer_func in funcs:
            return imp.peer_func
    mine = {r.buffer_name for r in top_ops(f, ReserveBufferOp)}
    for name, g in funcs.items():
        for imp in top_ops(g, ImportPeerBufferOp):
            if imp.peer_func == me and imp.buffer_name in mine:
                return name
    other = FunctionKind.AIV if f.kind is FunctionKind.AIC else FunctionKind.AIC
    cands = [n for n, g in funcs.items() if g.kind is other]
    return cands[0] if len(cands) == 1 else None


def _describe(init, n: int) -> str:
    pid = f", id={init.pipe_id}" if init.pipe_id else ""
    return (f"{init.call_name}({'|'.join(ways(init)) or init.dir_mask}, "
            f"slot_size={init.slot_size}, slot_num={n}{pid})")


def _flags(model, flag_id, init, n, plat, limit, name, peer):
    """The init attributes of a pipe at ``flag_id`` and the [first, last] flags of its rings."""
    attrs, spans = {"flag_id": flag_id}, []
    for k, way in enumerate(ways(init)):
        ready, free = model.flag_ids(flag_id, k, n)
        top = model.flags_top(ready, free, n)
        if top > limit:
            msg, fix = model.flag_range_error(way, ready, free, flag_id, n, plat,
                                              len(ways(init)) == 2)
            raise error(f"flags run out between {name!r} and {peer!r}: {msg}", init,
                        f"{fix}; or fewer pipes / a smaller slot_num")
        attrs[f"{way.lower()}_flags"] = (min(ready, free), top - 1)
        spans.append((min(ready, free), top - 1))
    return attrs, spans


def run(program, ctx):
    plat = platform_of(ctx)
    model = protocol_model(ctx)
    limit = model.flag_limit(plat)
    funcs = {func_name(f): f for f in functions(program)}
    kinds = {f.kind for f in funcs.values()}
    # a lone kernel (no function of the other core: pypto compiles one) numbers its own pipes
    lone = FunctionKind.AIC not in kinds or FunctionKind.AIV not in kinds
    owner = FunctionKind.AIV if FunctionKind.AIC not in kinds else FunctionKind.AIC
    matched = set()
    for name, cube in funcs.items():
        if cube.kind is not owner:
            continue
        inits = init_ops(cube)
        if not inits:
            continue
        peer = None if lone else _peer_of(cube, funcs)
        if peer is None and not lone:
            raise error(f"the pipe of Cube function {name!r} has no Vector peer in the program",
                        inits[0], "put the @pl.aiv function that imports / reserves its rings in "
                                  "the program")
        vec_inits = {} if lone else {(ways(i), i.pipe_id or 0): i for i in init_ops(funcs[peer])}
        next_id, used = FIRST_FLAG_ID, []          # used: (first, last flag, init) per ring
        for init in sorted(inits, key=lambda i: i.flag_id is None):
            n = slot_num(init, plat)
            other = init if lone else vec_inits.pop((ways(init), init.pipe_id or 0), None)
            if other is None:
                raise error(f"{_describe(init, n)} in {name!r} has no matching "
                            f"aiv_initialize_pipe of the same direction and id in its peer {peer!r}",
                            init, f"initialise the same pipe in {peer!r}")
            m = slot_num(other, plat)
            for what, a, b in (("DIR_MASK", init.dir_mask, other.dir_mask),
                               ("SLOT_SIZE", init.slot_size, other.slot_size),
                               ("SLOT_NUM", n, m)):
                if a != b:
                    raise error(f"the two ends of a pipe disagree on {what}: {peer!r} says {b}, "
                                f"{name!r} says {a}", other,
                                f"give both initialize_pipe calls the same {what}",
                                details=f"{name!r} initialises the pipe at {init.loc}")
            given = {i.flag_id for i in (init, other)} - {None}
            if len(given) == 2:
                raise error(f"the two ends of a pipe disagree on flag_id: {peer!r} says "
                            f"{other.flag_id}, {name!r} says "
                            f"{init.flag_id}", other,
                            "give both initialize_pipe calls the same flag_id (or none: "
                            "AllocateFlags numbers the pipes)", details=f"{name!r} initialises "
                            f"the pipe at {init.loc}")
            flag_id = next(iter(given)) if given else next_id
            while True:
                attrs, spans = _flags(model, flag_id, init, n, plat, limit, name, peer)
                clash = next((u for u in used if any(lo <= u[1] and u[0] <= hi for lo, hi in spans)), None)
                if clash is None:
                    break
                if given:
                    raise error(f"flag_id={flag_id} of this pipe uses flags {spans[0][0]}.."
                                f"{spans[-1][1]}, which overlap flags {clash[0]}..{clash[1]} of "
                                f"the pipe initialised at {clash[2].loc}", init,
                                "give the pipes disjoint flag ids (or leave flag_id out: "
                                "AllocateFlags numbers the pipes)")
                flag_id += 1
            used.extend((lo, hi, init) for lo, hi in spans)
            if not given:
                next_id = model.next_flag_id(flag_id, len(ways(init)), n)
            init.attributes.update(attrs)
            other.attributes.update(attrs)
            matched.add(other)
        for rest in vec_inits.values():
            raise error(f"{_describe(rest, slot_num(rest, plat))} in {peer!r} has no matching "
                        f"aic_initialize_pipe of the same direction and id in its peer {name!r}", rest,
                        f"initialise the same pipe in {name!r}")
    for name, vec in funcs.items():
        if vec.kind is FunctionKind.AIV:
            for init in init_ops(vec):
                if init not in matched:
                    raise error(f"{_describe(init, slot_num(init, plat))} in {name!r} has no "
                                "matching aic_initialize_pipe in a Cube function", init,
                                "initialise the same pipe in the Cube function that pushes to / "
                                "pops from this one")
    return program
