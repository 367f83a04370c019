"""LowerPlatform: the pipes of a program for one platform (``ctx.platform``).

The ``pl.program`` gets ``platform = "<name>"``; every pipe init an explicit ``slot_num``
and ``ring = "gm" | "local"``.

* A2A3 (rings in GM), and a ``*_GM`` direction on any platform: the ring is in
  GM_SLOT_BUFFER, ``SLOT_NUM * SLOT_SIZE`` bytes per direction (``2 * SLOT_NUM *
  SLOT_SIZE`` when bidirectional, recorded as ``ring_bytes``).  An init whose
  ``gm_slot_buffer`` is ``None`` gets a new ``gm_slot_buffer`` tensor parameter of that
  size on its function (one it declares but does not use - a ``.pto`` kernel - is taken and
  retyped; a Group's GM parameter then takes the type of the kernel parameters it is passed
  to), and so does every Group function of the program, whose calls of a kernel that grew the
  parameter pass it its own; for a function
  that did not declare one (ExpandMixedKernel's functions do) a warning (``ctx.warnings``)
  says the kernel's signature grew and what to pass.  Each init given a buffer is recorded in
  ``ctx.gm_rings_given`` (a ``.pto`` run refuses it where every ring is in GM).  The
  reserve_buffer / import_peer_buffer no longer hold the ring - seed 003's A2A3 behaviour, the same
  program being right for A5, so no warning - but stay in the IR because TPUSH / TPOP /
  TFREE name them as the pipe's handle, and the consumer's reserved region stays the
  staging area a GM-ring TPOP lands in (its base is the init's resolved consumer-buffer
  argument).
* A5 (consumer-local rings): each ring lives in its consumer's reserved buffer; the
  resolved CONSUMER_BUFFER_BASE is the init's constant argument (ResolvePeerBuffers)
  and its size ``SLOT_NUM * SLOT_SIZE`` is explicit through ``slot_num``.

A TFREE the compiler placed (InsertTfree's, annotated ``read_on``: the pipes that read the
slot before it) gets the order its protocol's free signal lacks: where the free SET is one
instruction on one pipe and follows nothing else (pto-isa on A5: ``Consumer::free`` sets
from PIPE_V for a C2V ring in UB, PIPE_MTE1 for a V2C ring in L1), a read of the slot on
another pipe - a TSTORE of the popped tile on MTE3 - is still running when the producer may
overwrite the slot, so ``set_flag(PIPE_MTE3, PIPE_V, id)`` / ``wait_flag`` go right before
the TFREE (``ProtocolModel.free_needs_event`` decides; an event id the kernel's own events
of that pipe pair do not use, else ``pipe_barrier(PIPE_ALL)``).  They come after the
scheduling passes and AllocateMemoryAddr, whose rules read any event as a kernel that
orders its pipes by hand.  A TFREE the kernel wrote is left as written (the checkers tell
its author).

Errors: none of its own (a ring that does not fit is Validate's).
"""
from __future__ import annotations

from ..arch import PipeUnit
from ..arch.vocab import EventID, SyncPipe
from ..ir.vocab import FunctionKind
from ..ir.opdefs import Barrier, CallOp, ConstOp, RecordEvent, TFree, WaitEvent
from ..ir.ops import GM_SLOT_PARAM
from ..ir.types import INDEX, TensorType
from ._rewrite import set_operands
from .util import entry, functions, init_ops, platform_of, protocol_model, ring_in_gm, slot_num, ways
from .properties import IRProperty

NAME = "lower-platform"
REQUIRED = frozenset({IRProperty.MIXED_KERNELS_EXPANDED, IRProperty.PEERS_RESOLVED,
                      IRProperty.FLAGS_ALLOCATED})
PRODUCED = frozenset({IRProperty.PLATFORM_LOWERED})
INVALIDATED = frozenset()

GM_PARAM = GM_SLOT_PARAM          # the GM slot-buffer parameter added on A2A3


def _is_null(v) -> bool:
    d = getattr(v, "op", None)
    return isinstance(d, ConstOp) and d.value in (None, 0)


def _add_param(f, nbytes: int):
    block = entry(f)
    for a in block.args:
        if a.name == GM_PARAM and not a.uses:     # declared, unused (a .pto kernel): take it
            a.type = TensorType((nbytes,), "u8")
            return a
    names = {a.name for a in block.args}
    name, k = GM_PARAM, 1
    while name in names:
        name, k = f"{GM_PARAM}_{k}", k + 1
    return block.add_arg(TensorType((nbytes,), "u8"), name)


def run(program, ctx):
    plat = platform_of(ctx)
    program.platform = plat.name
    gm_bytes = 0
    grown = set()             # kernels given a new trailing GM parameter (their calls pass one)
    for f in functions(program):
        for init in init_ops(f):
            n = slot_num(init, plat)
            size = init.slot_size
            in_gm = ring_in_gm(init, plat)
            init.slot_num = n
            init.ring = "gm" if in_gm else "local"
            if not in_gm:
                continue
            need = n * size * len(ways(init))
            init.ring_bytes = need
            gm_bytes = max(gm_bytes, need)
            if _is_null(init.gm_slot_buffer):
                old = init.gm_slot_buffer.op
                nargs = len(entry(f).args)
                param = _add_param(f, need)
                if len(entry(f).args) > nargs:
                    grown.add(f.sym_name)
                init.gm_slot_buffer = param
                if not old.results[0].uses:
                    old.erase()
                how = (f"give the init a gm_slot_buffer operand (a !pto.ptr parameter of {need} bytes), "
                       "or run the file with --platform a5" if ctx.as_ptoas else
                       f"the kernel now takes a parameter {param.name!r} of {need} bytes - pass "
                       f"{param.name}=ptopipe.gm_buffer({need}) when running it")
                said = (f"{init.loc}: {plat.name}: {f.sym_name!r} initialises its pipe with no GM_SLOT_BUFFER, "
                        f"but {plat.name} rings live in GM: {how}")
                ctx.warnings.append(said)
                ctx.gm_rings_given.append((init, need, said))
    model = protocol_model(ctx)
    for f in functions(program):
        _order_frees(f, plat, model)
    if gm_bytes:
        kernels = {f.sym_name: f for f in functions(program)}
        for f in functions(program):
            if f.kind is not FunctionKind.Group:
                continue
            gm = [a for a in entry(f).args if a.name and a.name.startswith(GM_PARAM)]
            if not gm:
                gm = [_add_param(f, gm_bytes)]
            for call in [op for op in f.walk() if op.is_a(CallOp)]:
                if call.callee in grown:       # pass the entry's slot buffer
                    set_operands(call, list(call.operands) + [gm[0]])
            for a in gm:
                _as_passed(a, kernels)
    return program


def _as_passed(a, kernels) -> None:
    """A Group's GM parameter takes the type of the kernel parameters it is passed to (one
    that was declared unused has just been given the ring's)."""
    if not a.uses or any(not u.owner.is_a(CallOp) for u in a.uses):
        return
    ts = {entry(kernels[u.owner.callee]).args[u.index].type for u in a.uses}
    if len(ts) == 1:
        a.type = ts.pop()


def _order_frees(f, plat, model) -> None:
    """The events before each TFREE of ``f`` the compiler placed (see the module doc)."""
    frees = [op for op in f.walk() if op.is_a(TFree) and op.read_on is not None]
    if not frees:
        return
    inits = {(w, i.pipe_id or 0): i for i in init_ops(f) for w in ways(i)}
    way = "C2V" if f.kind is FunctionKind.AIV else "V2C"      # the ring this kernel consumes
    free_ids = _free_event_ids(f)
    for free in frees:
        pipes = [PipeUnit[p] for p in free.read_on]
        del free.read_on
        init = inits.get((way, free.pipe_id or 0))
        in_gm = ring_in_gm(init, plat) if init is not None else plat.ring_in_gm
        dst = SyncPipe[f"PIPE_{model.free_signal_pipe(way, in_gm).name}"]
        z = getattr(free.obj, "op", None)       # the free's null object stays right before it
        at = z if z is not None and z is free.prev else free
        for p in pipes:
            if not model.free_needs_event(way, in_gm, p):
                continue
            src = SyncPipe[f"PIPE_{p.name}"]
            ids = free_ids(src, dst)
            if not ids:             # every id of the pair is the kernel's own: order everything
                barrier = Barrier.build(pipe=SyncPipe.PIPE_ALL, loc=free.loc)
                barrier.free_order = True
                at.insert_before(barrier)
                break
            for cls in (RecordEvent, WaitEvent):
                eid = ConstOp.build(value=int(ids[0]), result_types=[INDEX], loc=free.loc)
                at.insert_before(eid)
                ev = cls.build(src=src, dst=dst, event_id=eid.results[0], loc=free.loc)
                ev.free_order = True        # (not the kernel's own events: docs/pto.md)
                at.insert_before(ev)


def _free_event_ids(f):
    """``ids(src, dst)``: the event ids of pipe pair (src, dst) that no event op of ``f`` uses
    (an id computed at run time may be any of them)."""
    used = {}
    for op in f.walk():
        if op.is_a(RecordEvent, WaitEvent):
            d = getattr(op.event_id, "op", None)
            ids = used.setdefault((op.src, op.dst), set())
            ids.update((d.value,) if isinstance(d, ConstOp) else EventID)
    return lambda src, dst: [e for e in EventID if e not in used.get((src, dst), ())]
