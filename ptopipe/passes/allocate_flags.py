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
running out (a peer has ``flag_limit`` ids, e.g. 8 per direction).  A flag error names the
protocol it judges under; for a ``.pto`` file (device code) whose flags clash only under the
spec protocol's flag per slot, it says the file is valid for pto-isa (whose numbering this
pass then tries) and to run it with ``--protocol pto-isa``.
"""
from __future__ import annotations

from ..arch.vocab import Protocol
from ..errors import CompileError
from ..ir.vocab import FunctionKind
from ..ir.opdefs import ImportPeerBufferOp, ReserveBufferOp
from ..protocol.model import FIRST_FLAG_ID, PtoIsaModel, compile_model, platform_kind
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


def _flags(model, flag_id, init, n, plat, limit, name, peer, flag_error):
    """The init attributes of a pipe at ``flag_id`` and the [first, last] flags of its rings."""
    attrs, spans = {"flag_id": flag_id}, []
    for k, way in enumerate(ways(init)):
        ready, free = model.flag_ids(flag_id, k, n)
        top = model.flags_top(ready, free, n)
        if top > limit:
            msg, fix = model.flag_range_error(way, ready, free, flag_id, n, plat,
                                              len(ways(init)) == 2)
            raise flag_error(f"flags run out between {name!r} and {peer!r}: {msg}", init,
                             f"{fix}; or fewer pipes / a smaller slot_num")
        attrs[f"{way.lower()}_flags"] = (min(ready, free), top - 1)
        spans.append((min(ready, free), top - 1))
    return attrs, spans


def run(program, ctx):
    plat = platform_of(ctx)
    model = protocol_model(ctx)

    def flag_error(msg, init, fix):
        """A flag error under ``model``, naming it.  A ``.pto`` file is device code: the fix
        speaks its attributes, and when the device library's numbering (pto-isa: two counter
        flags per ring) takes the file's flags without a clash, says so."""
        if getattr(ctx, "as_ptoas", False):
            fix = ("give each pipe a flag_base range of its own: a ring takes slot_num flags "
                   f"under {model.name} (e.g. two one-way pipes with slot_num = 4 and flag_base = 0 "
                   "and 4)")
            if model.per_tag_flags and _valid_for(program, plat, Protocol.PTO_ISA):
                fix = (f"the file is valid for pto-isa, which uses {PtoIsaModel.FLAG_RULE}: "
                       f"run it with --protocol pto-isa; or, to run it under {model.name}, {fix}")
        why = ": seed 003's flag per ring slot" if model.per_tag_flags else ""
        return error(f"{msg} (under the {model.name} protocol{why})", init, fix)

    for init, other, attrs in _number(program, plat, model, flag_error):
        init.attributes.update(attrs)
        other.attributes.update(attrs)
    return program


def _valid_for(program, plat, protocol) -> bool:
    """Whether ``protocol``'s numbering gives every pipe of ``program`` its flags."""
    try:
        _number(program, plat, compile_model(protocol, platform_kind(plat)), error)
    except CompileError:
        return False
    return True


def _number(program, plat, model, flag_error) -> list:
    """``(init, its peer's init, flag attributes)`` of every pipe of ``program`` under
    ``model``; raises the CompileError of the first pipe that cannot be numbered (a flag
    error through ``flag_error(message, init, fix)``)."""
    limit = model.flag_limit(plat)
    funcs = {func_name(f): f for f in functions(program)}
    kinds = {f.kind for f in funcs.values()}
    # a lone kernel (no function of the other core: pypto compiles one) numbers its own pipes
    lone = FunctionKind.AIC not in kinds or FunctionKind.AIV not in kinds
    owner = FunctionKind.AIV if FunctionKind.AIC not in kinds else FunctionKind.AIC
    matched, out = set(), []
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
                attrs, spans = _flags(model, flag_id, init, n, plat, limit, name, peer, flag_error)
                clash = next((u for u in used if any(lo <= u[1] and u[0] <= hi for lo, hi in spans)), None)
                if clash is None:
                    break
                if given:
                    raise flag_error(f"flag_id={flag_id} of this pipe uses flags {spans[0][0]}.."
                                     f"{spans[-1][1]}, which overlap flags {clash[0]}..{clash[1]} of "
                                     f"the pipe initialised at {clash[2].loc}", init,
                                     "give the pipes disjoint flag ids (or leave flag_id out: "
                                     "AllocateFlags numbers the pipes)")
                flag_id += 1
            used.extend((lo, hi, init) for lo, hi in spans)
            if not given:
                next_id = model.next_flag_id(flag_id, len(ways(init)), n)
            out.append((init, other, attrs))
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
    return out
