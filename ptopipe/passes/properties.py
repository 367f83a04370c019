"""The properties the op IR of a program can have (:class:`IRProperty`), and one verifier
per property that checks a program really has it.

A pass declares the properties it needs (``REQUIRED``), the ones its output has
(``PRODUCED``) and the ones it may break (``INVALIDATED``), as frozensets of
:class:`IRProperty`; the PassManager tracks which properties the IR has through a pipeline
and refuses one whose pass needs a property no earlier pass made (or a later one broke).
With property verification on (``PassManager(verify_properties=True)``, ``ptopipe compile
--verify-each``, the test suite) every property the IR is supposed to have is checked
after every pass by its verifier here: a pass that claims a property its output lacks, or
breaks one it does not declare invalidated, is a CompileError naming the pass.

A verifier takes ``(program, ctx)`` (the ``pl.program`` op and the PassContext: the
platform and protocol some properties are relative to) and returns a list of problems
(strings naming the function / op at fault); an empty list means the IR has the property.
"""
from __future__ import annotations

from enum import Enum

from ..arch import MemSpace
from ..arch.vocab import ALIGNMENT
from ..ir.layout import read_layout, tiles_fit_problem, unallocated
from ..ir.vocab import AUTO, FunctionKind
from ..ir.opdefs import (CROSS_CORE_OPS, BufferAttrOp, ConstOp, ImportPeerBufferOp, ReserveBufferOp, TFree,
                         TPop)
from .util import func_name, functions, init_ops, platform_of, ring_buffer, ring_in_gm, top_ops, ways


class IRProperty(Enum):
    """A property of the op IR of a program (the value is its name in pipelines' messages
    and in the docs); what the IR has when it has one is its verifier's docstring."""
    MIXED_KERNELS_EXPANDED = "mixed-kernels-expanded"
    TFREES_INSERTED = "tfrees-inserted"
    PIPES_VERIFIED = "pipes-verified"
    MEMORY_ALLOCATED = "memory-allocated"
    PEERS_RESOLVED = "peers-resolved"
    FLAGS_ALLOCATED = "flags-allocated"
    PLATFORM_LOWERED = "platform-lowered"
    VALIDATED = "validated"

    def __str__(self) -> str:
        return self.value


#: properties a program can have before any pass ran (a hand-written AIC / AIV pair is
#: already split): the PassManager checks them on its input instead of assuming them absent
INPUT_PROPERTIES = frozenset({IRProperty.MIXED_KERNELS_EXPANDED})


def as_property(x) -> IRProperty:
    """``x`` (an IRProperty or its name) as an IRProperty; another value is a CompileError."""
    from ..errors import CompileError
    if isinstance(x, IRProperty):
        return x
    try:
        return IRProperty(x)
    except ValueError:
        raise CompileError(f"{x!r} is not an IR property", where="pipeline",
                           fix="use one of: " + ", ".join(p.value for p in IRProperty)) from None


def _where(op) -> str:
    return f" (at {op.loc})" if getattr(op, "loc", None) else ""


def _mixed_kernels_expanded(program, ctx) -> list:
    """No mixed ``@pl.incore`` function is left (every function is an AIC / AIV kernel or
    a Group), and each kernel initialises every pipe direction it pushes to / pops from."""
    out = []
    for f in functions(program):
        name = func_name(f)
        if f.kind is FunctionKind.InCore:
            out.append(f"mixed @pl.incore function {name!r} is not split into AIC / AIV kernels")
            continue
        declared = {w for i in init_ops(f) for w in ways(i)}
        for op in f.walk():
            d = op.direction if op.is_a(*CROSS_CORE_OPS) else None
            if d is not None and d.name[4:] not in declared:
                out.append(f"{name!r} runs {op.name} on the {d.name[4:]} ring but initialises no "
                           f"pipe of that direction{_where(op)}")
                break
    return out


def _tfrees_inserted(program, ctx) -> list:
    """Every kernel that TPOPs from a ring also TFREEs that ring's slots."""
    out = []
    for f in functions(program):
        popped = {op.direction for op in f.walk() if op.is_a(TPop)}
        freed = {op.direction for op in f.walk() if op.is_a(TFree)}
        for d in sorted(popped - freed, key=lambda d: getattr(d, "name", "")):
            out.append(f"{func_name(f)!r} pops from the {getattr(d, 'name', d)} ring but frees none "
                       "of its slots (no pl.tfree)")
    return out


def _pipes_verified(program, ctx) -> list:
    """VerifyPipes' static proof holds: on every path each popped slot is freed before
    the ring wraps and not used after, pushes match pops in number, order and type, and no
    two cores wait for each other forever - for the scalar values and within the declared
    ranges the pass proved it for."""
    from .verify_pipes import verify
    found = verify(program, getattr(ctx, "platform", "a2a3"), [], getattr(ctx, "protocol", "spec") or "spec",
                   getattr(ctx, "scalars", None), getattr(ctx, "ranges", None))
    return [f"{e.what} (at {e.where})" for e in found]


def _unresolved_reserves(f) -> list:
    return [f"reserve_buffer {r.buffer_name!r} of {func_name(f)!r} has no integer base "
            f"(base={r.base!r}){_where(r)}"
            for r in top_ops(f, ReserveBufferOp) if not isinstance(r.base, int) or r.base is AUTO]


def _memory_allocated(program, ctx) -> list:
    """Every reserve_buffer has an integer base, every tile op of an AIC / AIV kernel
    carries the address AllocateMemoryAddr gave its result (``addr``, aligned; a
    ``rotation`` table, when it has one, of two or more aligned addresses starting at
    ``addr``; ``scratch_addr`` for an op that takes a scratch tile), and the tiles at
    those addresses fit the platform's memories."""
    plat = platform_of(ctx)
    out = []
    for f in functions(program):
        out += _unresolved_reserves(f)
        if f.kind not in (FunctionKind.AIC, FunctionKind.AIV):
            continue
        for op in unallocated(f):
            out.append(f"{op.name} in {func_name(f)!r} has no address for its "
                       f"{'scratch tile' if isinstance(op.addr, int) else 'tile result'}{_where(op)}")
        lay = read_layout(f)
        for op, (_mem, addr) in lay.tiles.items():
            rot = lay.rotations.get(op, (addr,))
            extra = (op.scratch_addr,) if isinstance(op.scratch_addr, int) else ()
            if any(a % ALIGNMENT for a in tuple(rot) + extra) or rot[0] != addr or len(rot) == 1 \
                    and op.rotation is not None:
                out.append(f"{op.name} in {func_name(f)!r} has addr={addr!r}, rotation="
                           f"{op.rotation!r}, scratch_addr={op.scratch_addr!r}: not aligned "
                           f"addresses to {ALIGNMENT} bytes starting at addr{_where(op)}")
        for space, peak in lay.peak.items():
            bad = tiles_fit_problem(func_name(f), space, peak, plat.name, plat.mem_size(MemSpace(space)),
                                    plat.tile_space(MemSpace(space)))
            if bad is not None:
                out.append(bad[0])
    return out


def _peers_resolved(program, ctx) -> list:
    """Every reserve_buffer has an integer base, every import_peer_buffer the base and
    size of the reserve it names, no ``buf.base`` / ``buf.size`` is left unfolded, and
    every pipe init names the buffer of each ring it has one for (``c2v_ring`` /
    ``v2c_ring``)."""
    out = []
    funcs = {func_name(f): f for f in functions(program)}
    for name, f in funcs.items():
        out += _unresolved_reserves(f)
        for imp in top_ops(f, ImportPeerBufferOp):
            peer = funcs.get(imp.peer_func)
            r = next((r for r in top_ops(peer, ReserveBufferOp) if r.buffer_name == imp.buffer_name),
                     None) if peer is not None else None
            if r is None:
                out.append(f"import_peer_buffer {imp.buffer_name!r} of {name!r} names no reserve_buffer of "
                           f"{imp.peer_func!r}{_where(imp)}")
            elif (imp.base, imp.size) != (r.base, r.size):
                out.append(f"import_peer_buffer {imp.buffer_name!r} of {name!r} carries base={imp.base!r}, "
                           f"size={imp.size!r}, not its reserve's {r.base!r}, {r.size!r}{_where(imp)}")
        for op in f.walk():
            if op.is_a(BufferAttrOp):
                out.append(f"{name!r} still reads .{op.attr} of a buffer at run time "
                           f"(pl.buffer_attr not folded){_where(op)}")
        for init in init_ops(f):
            for way in ways(init):
                b = ring_buffer(f, init, way)
                ring = init.c2v_ring if way == "C2V" else init.v2c_ring
                if b is not None and ring != b.buffer_name:
                    out.append(f"the {init.name} of {name!r} does not name the buffer of its {way} ring "
                               f"({way.lower()}_ring){_where(init)}")
    return out


def _flags_allocated(program, ctx) -> list:
    """Every pipe init has an integer ``flag_id`` and the [first, last] flag ids of each
    of its rings (``c2v_flags`` / ``v2c_flags``), disjoint among a function's pipes."""
    out = []
    for f in functions(program):
        spans = []
        for init in init_ops(f):
            if not isinstance(init.flag_id, int):
                out.append(f"the {init.name} of {func_name(f)!r} has no integer flag_id "
                           f"(flag_id={init.flag_id!r}){_where(init)}")
                continue
            for way in ways(init):
                r = init.c2v_flags if way == "C2V" else init.v2c_flags
                if not (isinstance(r, (tuple, list)) and len(r) == 2 and all(isinstance(x, int) for x in r)
                        and r[0] <= r[1]):
                    out.append(f"the {init.name} of {func_name(f)!r} has no [first, last] flag ids of its "
                               f"{way} ring ({way.lower()}_flags={r!r}){_where(init)}")
                    continue
                clash = next((s for s in spans if s[0] == way and r[0] <= s[2] and s[1] <= r[1]), None)
                if clash is not None:
                    out.append(f"the {way} flags {r[0]}..{r[1]} of a pipe of {func_name(f)!r} overlap "
                               f"flags {clash[1]}..{clash[2]} of another{_where(init)}")
                spans.append((way, r[0], r[1]))
    return out


def _platform_lowered(program, ctx) -> list:
    """The program names the platform it is lowered for; every pipe init has an
    explicit ``slot_num`` and ``ring`` ("gm" where the platform keeps it in GM, else
    "local"), a GM ring its ``ring_bytes`` and a GM slot buffer."""
    plat = platform_of(ctx)
    out = []
    if program.platform != plat.name:
        out.append(f"the program is lowered for platform {program.platform!r}, not {plat.name!r}")
    for f in functions(program):
        for init in init_ops(f):
            if not isinstance(init.slot_num, int) or init.ring not in ("gm", "local"):
                out.append(f"the {init.name} of {func_name(f)!r} has no explicit slot_num and ring "
                           f"(slot_num={init.slot_num!r}, ring={init.ring!r}){_where(init)}")
                continue
            if (init.ring == "gm") != ring_in_gm(init, plat):
                out.append(f"the {init.name} of {func_name(f)!r} says ring={init.ring!r}, but on "
                           f"{plat.name} its rings are {'in GM' if ring_in_gm(init, plat) else 'local'}"
                           f"{_where(init)}")
            elif init.ring == "gm":
                d = getattr(init.gm_slot_buffer, "op", None)
                null = d is not None and d.is_a(ConstOp) and d.value in (None, 0)
                if not isinstance(init.ring_bytes, int) or null:
                    out.append(f"the GM ring of the {init.name} of {func_name(f)!r} has no ring_bytes "
                               f"or no GM slot buffer{_where(init)}")
    return out


def _validated(program, ctx) -> list:
    """Seed 003's static rules hold (Validate's checks: directions, slot sizes, ring
    buffers in the right memory and of the right size, imports matching reserves)."""
    from ..errors import CompileError
    from .validate import run
    try:
        run(program, ctx)
    except CompileError as e:
        return [f"{e.what} (at {e.where})"]
    return []


#: the verifier of each property
VERIFIERS = {
    IRProperty.MIXED_KERNELS_EXPANDED: _mixed_kernels_expanded,
    IRProperty.TFREES_INSERTED: _tfrees_inserted,
    IRProperty.PIPES_VERIFIED: _pipes_verified,
    IRProperty.MEMORY_ALLOCATED: _memory_allocated,
    IRProperty.PEERS_RESOLVED: _peers_resolved,
    IRProperty.FLAGS_ALLOCATED: _flags_allocated,
    IRProperty.PLATFORM_LOWERED: _platform_lowered,
    IRProperty.VALIDATED: _validated,
}


#: properties whose verifier is a whole-program proof (VerifyPipes' over every path, about as
#: costly as the compile itself): with property verification on they are checked where the
#: pipeline ends rather than after every pass, and only a failure there pays for naming the
#: pass that broke one (the PassManager runs the pipeline again from a copy of its input,
#: checking them after each pass)
AT_THE_END = frozenset({IRProperty.PIPES_VERIFIED})


def verify_property(prop: IRProperty, program, ctx) -> list:
    """The problems that keep ``program`` from having ``prop`` (empty: it has it)."""
    return VERIFIERS[prop](program, ctx)
