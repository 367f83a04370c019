"""Validate: seed 003's static rules on a program of AIC / AIV kernels (any stage: a
hand-written pair, or the pipeline's lowered output).

Errors (CompileError at the DSL line of the op at fault), in the order checked:

* a mixed ``@pl.incore`` function is still in the program (nothing split it);
* DIR_MASK not in {DIR_C2V (1), DIR_V2C (2), DIR_C2V | DIR_V2C (3)} (or their ``*_GM``
  forms, a ring asked for in GM);
* SLOT_SIZE <= 0;
* ``lanes=1`` on an AIV function not marked no-split (AIV1 would run it and bind the pipe);
* a second init of the same ring (direction and ``id=``) in one function;
* a second init whose ring buffer (the reserve_buffer / import_peer_buffer whose ``.base``
  it passes) another ring of the function already holds: TPUSH / TPOP / TFREE name their
  pipe by that buffer, so one of the two pipes would be unreachable and the rings would
  overlap (pypto: one ``reserve_buffer`` per initialised pipe direction);
* a consumer-local ring (A5) without its buffer: the consumer's ring argument is not a
  ``pl.reserve_buffer``, or the producer's not a ``pl.import_peer_buffer``; a GM ring's
  (A2A3) consumer that pops tiles but passes 0: its staging slots would sit at address 0;
* a ring in the wrong memory: the C2V ring must be in UB (the Vector core's), the V2C ring
  in L1 (the Cube's);
* reserve_buffer size != SLOT_NUM * SLOT_SIZE (for a seed-003 direction; a GM ring whose
  init gives ``local_slot_num`` may reserve from LOCAL_SLOT_NUM * SLOT_SIZE up to that);  this rule and
  the SRAM fit below are worded by :mod:`ptopipe.ir.layout`, as the runtime's own checks
  of kernels that run without compiling;
* a GM_SLOT_BUFFER smaller than the GM rings need (SLOT_NUM * SLOT_SIZE per direction);
* two inits of a function whose GM rings share bytes of one GM_SLOT_BUFFER (the same
  ``fifo`` tensor passed to both, from the same offset);
* import <-> reserve: an import whose peer or reserve does not exist, a ring (a reserve
  an init or a TPOP uses) that no function imports while the program has a function of the
  other core (a reserve that is no ring is a region the allocator keeps free; a lone kernel
  compiles, as pypto's does, and its run says the peer is missing);
* a reserve_buffer whose declared [base, base + size) exceeds its memory on the platform;
* a tile op on an element type the platform's pto-isa refuses (the op catalogue's rule per
  platform - the IR's own rule is either platform's: bf16 TADD is A5's, not A2A3's).

Warnings (``ctx.warnings``, at the consumer's init): a ring deeper than a counter flag
counts (pto-isa's counter flags, :meth:`ProtocolModel.counter_overflow`: SLOT_NUM 16 on A5),
which the device takes but which overflows its ready flag under some schedules.
"""
from __future__ import annotations

from ..arch import MemSpace
from ..ir.layout import no_ptoas_ring_fits, ptoas_slot_num, reserve_fit_problem, ring_size_problem
from ..ir.pipe_config import shared_buffer_error
from ..arch.vocab import PTOAS_SLOT_NUMS, TileSplitAxis
from ..ir.vocab import AUTO, FunctionKind
from ..arch.catalogue import OPS as CATALOGUE
from ..arch.catalogue import tcvt_pair_error
from ..ir.ops import ISA_NAMES, RULE_FREE_FORMS, rule_dtype
from ..ir.types import TensorType, TileValueType, np_dtype
from .expand_mixed import RING_NAME
from ..ir.opdefs import CONSUMER_OPS, CallOp, ImportPeerBufferOp, ReserveBufferOp, TPop
from .util import (RING_SPACE, consumer_kind, error, func_name, functions, gm_requested,
                   init_ops, platform_of, protocol_model, ring_buffer, ring_in_gm, seed_dir,
                   slot_num, top_ops, ways)
from .properties import IRProperty

NAME = "validate"
REQUIRED = frozenset()
PRODUCED = frozenset({IRProperty.VALIDATED})
INVALIDATED = frozenset()


def run(program, ctx):
    plat = platform_of(ctx)
    depth = protocol_model(ctx).fifo_depth(plat)     # the most slots a ring may have
    funcs = {func_name(f): f for f in functions(program)}
    for name, f in funcs.items():
        if f.kind is FunctionKind.InCore:
            raise error(f"mixed @pl.incore function {name!r} was not split into an AIC and an AIV "
                        "kernel", f, "run the expand-mixed pass first (ptopipe compile runs it "
                                     "when it is registered), or write @pl.aic / @pl.aiv kernels")
        _check_dtypes(f, plat)
        seen, held, in_gm = {}, {}, []
        for init in init_ops(f):
            _check_shared_buffer(f, init, held)
            _check_init(f, init, plat, seen, depth, getattr(ctx, "as_ptoas", False))
            _check_gm_rings(init, plat, in_gm)
            _warn_counter_overflow(f, init, plat, protocol_model(ctx), getattr(ctx, "warnings", None))
    made = {c.callee: g_name for g_name, g in funcs.items()
            if g.kind is FunctionKind.Group for c in g.walk() if c.is_a(CallOp)}
    for name, f in funcs.items():
        _check_buffers(name, f, funcs, plat, made.get(name), depth, getattr(ctx, "placed", ()))
    return program


def _check_dtypes(f, plat) -> None:
    """The catalogue's dtype rule of every tile op of ``f`` on ``plat`` (the IR checked it for
    either platform), on the dtype the instruction checks when it is issued."""
    for op in f.walk():
        isa = ISA_NAMES.get(getattr(op, "call_name", None))
        if isa == "TCVT":
            bad = tcvt_pair_error(rule_dtype(op.a, op.results[0].type), np_dtype(op.results[0].type.dtype), plat.id)
            if bad is not None:
                raise error(f"{op.name}: {bad[0]}", op, bad[1])
        if isa is None or CATALOGUE[isa].form in RULE_FREE_FORMS or not op.results:
            continue
        src = op.a if any(p.name == "a" for p in op.spec.params) else None
        bad = CATALOGUE[isa].dtype_error(rule_dtype(src, op.results[0].type), plat.id)
        if bad is not None:
            raise error(f"{op.name}: {bad[0]}", op, bad[1])


def _check_shared_buffer(f, init, held: dict) -> None:
    """Each ring its own buffer: ``held`` maps a buffer op to the (init, ring) holding it (the
    DSL's parser refuses this first; a program built otherwise, or a .pto, meets it here)."""
    for way, ring in zip(ways(init), init.rings):
        buf = ring_buffer(f, init, way)
        if buf is None or not buf.is_a(ReserveBufferOp, ImportPeerBufferOp):
            continue
        if buf in held and held[buf][1] != ring:      # (one ring set up twice: _check_init's)
            first, other = held[buf]
            raise shared_buffer_error(func_name(f), buf, ring, init, other, first)
        held[buf] = (init, ring)


def _check_gm_rings(init, plat, held: list) -> None:
    """Each GM ring its own bytes: ``held`` lists the ``(init, buffer value, lo, hi)`` of the
    function's GM rings so far; a ring whose bytes of the same GM_SLOT_BUFFER value overlap
    one of them (two inits passing one ``fifo`` tensor) would overwrite its slots with no flag
    saying so - the run's bind says it too, but only on the platform whose rings are in GM."""
    if not ring_in_gm(init, plat) or not isinstance(init.slot_size, int) or not ways(init):
        return
    buf, off = init.gm_slot_buffer, init.gm_offset or 0
    if buf is None or not isinstance(off, int):
        return
    lo, hi = off, off + slot_num(init, plat) * init.slot_size * len(ways(init))
    for other, obuf, olo, ohi in held:
        if obuf is buf and lo < ohi and olo < hi:
            name = f"'{buf.name}'" if getattr(buf, "name", None) else "GM_SLOT_BUFFER"
            two = len(ways(init)) == 2
            both = set(ways(init)) != set(ways(other))
            raise error(f"this init's GM ring{'s' if two else ''} [{lo}, {hi}) of {name} "
                        f"overlap{'' if two else 's'} bytes [{olo}, {ohi}) that the init at line "
                        f"{other.loc.line if other.loc else '?'} gave its ring{'s' if len(ways(other)) == 2 else ''}: "
                        f"on {plat.name} the rings are in GM, and each would overwrite the other's "
                        "slots with no flag saying so", init,
                        "give each ring a GM_SLOT_BUFFER of its own (another pl.Tensor[[SLOT_NUM * "
                        "SLOT_SIZE], pl.u8] parameter, and a ptopipe.gm_buffer of that size for it in "
                        "the run's args)" + ("; or one init with DIR_C2V | DIR_V2C for the two directions"
                                             if both else ""),
                        details=f"the other ring initialised at {other.loc}")
    held.append((init, buf, lo, hi))


def _check_init(f, init, plat, seen: dict, depth: int | None, as_ptoas: bool = False) -> None:
    if seed_dir(init) is None:
        raise error(f"DIR_MASK {init.dir_mask!r} is not a seed 003 direction", init,
                    "use DIR_C2V (1), DIR_V2C (2) or DIR_C2V | DIR_V2C (3)")
    if not isinstance(init.slot_size, int) or init.slot_size <= 0:
        raise error(f"SLOT_SIZE {init.slot_size!r} must be a positive number of bytes", init,
                    "SLOT_SIZE is the bytes of the largest tile crossing the ring")
    name = func_name(f)
    if init.lanes == 1 and f.kind is FunctionKind.AIV \
            and f.split is not TileSplitAxis.TILE_NO_SPLIT:
        raise error(f"lanes=1 makes AIV0 the only Vector lane of this pipe, but {name!r} runs on "
                    "AIV1 too (it is not marked no-split) and AIV1 would bind the pipe", init,
                    f"mark {name!r} @pl.aiv(split=pl.TILE_NO_SPLIT): AIV0 does its work and AIV1 runs "
                    "nothing; or drop lanes=1 and let both lanes take part")
    for ring in init.rings:
        if ring in seen:
            raise error(f"the {ring.label} ring is initialised twice in {name!r}", init,
                        "initialise each ring once per function (one init with DIR_C2V | DIR_V2C "
                        "for both directions; a second ring of a direction takes its own id=)",
                        details=f"first initialised at {seen[ring].loc}")
        seen[ring] = init
    n, size = slot_num(init, plat), init.slot_size
    if depth is not None and n > depth:
        raise error(f"SLOT_NUM {n} exceeds the FIFO depth limit {depth} of {plat.name} under "
                    "pto-isa", init, f"use at most {depth} slots (slot_num= of the *_initialize_pipe "
                    "calls, or of @pl.incore for a mixed function)")
    in_gm = ring_in_gm(init, plat)
    for way in ways(init):
        buf = ring_buffer(f, init, way)
        consumer = f.kind is consumer_kind(way)
        want = ReserveBufferOp if consumer else ImportPeerBufferOp
        if buf is None or not buf.is_a(want):
            if in_gm and buf is None and not (consumer and _stages(f, way)):
                continue                  # a GM ring needs no local buffer, but for staging
            if in_gm and buf is None:
                raise error(f"the {way} ring's consumer {name!r} passes 0 as "
                            f"{way.lower()}_consumer_buf, but its ring is in GM and each popped tile "
                            f"is staged in {RING_SPACE[way].value} at that address: at 0x0, over the "
                            "tiles placed there", init,
                            f"reserve the staging slots (reserve_buffer of LOCAL_SLOT_NUM * SLOT_SIZE "
                            f"bytes) and pass its .base as {way.lower()}_consumer_buf")
            got = f"{buf.call_name} {buf.buffer_name!r}" if buf is not None else "no buffer"
            raise error(f"the {way} ring's {'consumer' if consumer else 'producer'} {name!r} "
                        f"passes {got} as {way.lower()}_consumer_buf", init,
                        f"pass {'the ring it reserves' if consumer else 'the imported peer ring'}: "
                        f"{want.call_name}(...).base")
        if not consumer:
            continue
        space = buf.memory_space
        if space is not None and space != RING_SPACE[way].value:
            raise error(f"the {way} ring must be in {RING_SPACE[way].value} but reserve_buffer "
                        f"{buf.buffer_name!r} is in {space}", buf,
                        f"reserve the {way} ring in the {'Vector' if way == 'C2V' else 'Cube'} "
                        "function that TPOPs from it")
        bad = None if gm_requested(init) else ring_size_problem(
            buf.buffer_name, buf.size, n, size,
            init.local_slot_num if in_gm else None, spare_ok=as_ptoas,   # explicit: staging only
            slot_nums=PTOAS_SLOT_NUMS if as_ptoas else None)            # (a .pto: what ptoas builds)
        if bad is not None:
            raise error(bad[0], buf, bad[1], details=f"pipe initialised at {init.loc}")
    if in_gm:
        need = n * size * len(ways(init))
        off = init.gm_offset or 0           # a ring further into the buffer (a .pto's pto.addptr)
        t = init.gm_slot_buffer.type
        if isinstance(t, TensorType) and t.nbytes < off + need:
            at = f" from byte {off}" if off else ""
            raise error(f"GM_SLOT_BUFFER of {t.nbytes} bytes is smaller than the GM ring"
                        f"{'s' if len(ways(init)) == 2 else ''} it holds{at}: {len(ways(init))} * "
                        f"SLOT_NUM * SLOT_SIZE = {need} bytes", init,
                        f"pass a GM tensor of at least {off + need} bytes")


def _warn_counter_overflow(f, init, plat, model, warnings) -> None:
    """A ring the device takes but whose flag can overflow under some schedules (pto-isa's
    counter flags deeper than a flag counts: :meth:`ProtocolModel.counter_overflow`): a
    warning at the consumer's init."""
    if warnings is None:
        return
    split = lambda: any(o.is_a(TPop) and o.split not in (None, TileSplitAxis.TILE_NO_SPLIT)
                        for o in f.walk())
    for way in ways(init):
        if f.kind is not consumer_kind(way):
            continue
        why = model.counter_overflow(slot_num(init, plat), plat,
                                     way == "C2V" and init.lanes != 1 and split())
        if why is not None:
            msg = f"{init.loc}: the {way} ring of {func_name(f)!r}: {why}"
            if msg not in warnings:
                warnings.append(msg)


def _check_buffers(name, f, funcs, plat, mixed: str | None = None, depth: int | None = None,
                   placed=()) -> None:
    """``mixed``: the @pl.incore function ExpandMixedKernel made ``f`` from (its rings are
    the compiler's: a ring that does not fit is fixed with ``slot_num=`` or smaller tiles);
    ``placed``: the reserves whose base the allocator chose (``PassContext.placed``)."""
    for imp in top_ops(f, ImportPeerBufferOp):
        bname, pname = imp.buffer_name, imp.peer_func
        peer = funcs.get(pname)
        names = {r.buffer_name for r in top_ops(peer, ReserveBufferOp)} if peer else set()
        if bname not in names:
            raise error(f"import_peer_buffer {bname!r} has no matching reserve_buffer in "
                        f"{pname!r}", imp,
                        f"reserve {bname!r} in {pname!r} (the consumer of the ring)")
    rings = _rings(f)
    peered = any(g.kind is _OTHER.get(f.kind) for g in funcs.values())
    for r in top_ops(f, ReserveBufferOp):
        rname, space = r.buffer_name, r.memory_space
        if r in rings and peered and not any(
                imp.peer_func == name and imp.buffer_name == rname
                for g in funcs.values() for imp in top_ops(g, ImportPeerBufferOp)):
            raise error(f"reserve_buffer {rname!r} of {name!r} is imported by no function",
                        r, f"import it in the producer: pl.import_peer_buffer(name={rname!r}, "
                           f"peer_func={name})")
        if space is None:
            continue
        base = 0 if r.base is AUTO else r.base
        have = plat.mem_size(MemSpace(space))
        bad = reserve_fit_problem(rname, base, r.size, plat.name, space, have, placed=r in placed)
        if bad is not None and mixed is not None and rname in RING_NAME.values():
            raise _compiler_ring_too_big(f, r, mixed, base, have, plat, depth)
        if bad is not None:
            raise error(bad[0], r, bad[1])


def _compiler_ring_too_big(f, r, mixed: str, base: int, have: int, plat, depth: int | None):
    """The ring ExpandMixedKernel reserved for ``mixed`` does not fit: say so in the user's
    terms (the function's slot_num= and its crossing tiles), at the function's line."""
    way = next(w for w, n in RING_NAME.items() if n == r.buffer_name)
    way = way.name.replace("DIR_", "")
    init = next(i for i in init_ops(f) if way in ways(i))
    n, size = slot_num(init, plat), init.slot_size
    # a slot of a C2V ring in the Vector cores' UB holds one core's part of a split tile
    part = way == "C2V" and not ring_in_gm(init, plat) and any(
        o.is_a(TPop) and o.split not in (None, TileSplitAxis.TILE_NO_SPLIT) for o in f.walk())
    fits = (have - base) // size
    if depth is not None:
        fits = min(fits, depth)
    core = "Vector core's UB" if r.memory_space == "UB" else "Cube's L1"
    if ring_in_gm(init, plat):    # the ring is in GM: the reserve holds one staging slot per held tile
        count = f"LocalSlotNum {r.size // size}"
        fix = (f"hold fewer popped tiles at once (at most {fits}), or cross smaller tiles" if fits >= 1
               else f"cross smaller tiles: one slot of {size} bytes (the largest tile crossing) does "
                    f"not fit at {base:#x}")
        details = ("its ring is in GM: ExpandMixedKernel reserves LocalSlotNum * SLOT_SIZE bytes of "
                   "the consumer's memory to stage the popped tiles, LocalSlotNum the most it holds "
                   "at once (docs/passes/expand-mixed.md)")
    else:
        count = f"SLOT_NUM {n}"
        legal = ptoas_slot_num(fits)         # a fix names only a ring ptoas builds
        fix = (f"@pl.incore(slot_num={legal}) on {mixed!r}, or cross smaller tiles" if legal is not None
               else no_ptoas_ring_fits(size, have - base, way, f"the {core} above its tiles at {base:#x}",
                                       part=part))
        details = ("ExpandMixedKernel reserves SLOT_NUM * SLOT_SIZE bytes of the consumer's memory "
                   "for each ring (docs/passes/expand-mixed.md)")
    held = f"one Vector core's part of the largest tile crossing {way}" if part else \
        f"the largest tile crossing {way}"
    return error(f"the {way} ring of the mixed function {mixed!r} ({count} * SLOT_SIZE {size} = "
                 f"{r.size} bytes at {base:#x}, SLOT_SIZE {held}) does not "
                 f"fit the {core} on {plat.name} ({have} bytes)", r, fix, details=details)


_OTHER = {FunctionKind.AIC: FunctionKind.AIV, FunctionKind.AIV: FunctionKind.AIC}


def _rings(f) -> set:
    """The reserve_buffers of ``f`` that hold a ring: an init's consumer buffer, or the buffer
    a TPOP / TFREE names.  Another reserve is a region the kernel keeps for itself."""
    rings = {ring_buffer(f, init, way) for init in init_ops(f) for way in ways(init)}
    rings.update(o.operands[0].op for o in f.walk() if o.is_a(*CONSUMER_OPS)
                 and getattr(o.operands[0], "op", None) is not None)
    return rings


def _stages(f, way) -> bool:
    """Does ``f`` pop tiles of the ``way`` ring (staged in its local memory on a GM ring)?
    A TPOP of a GM slot (the address flow) reads GM in place."""
    return any(o.is_a(TPop) and o.direction.name[4:] == way
               and isinstance(o.tile.type, TileValueType) for o in f.walk())
