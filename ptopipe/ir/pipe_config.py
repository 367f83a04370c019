"""Both ends of a pipe agree on its configuration: the ``*_initialize_pipe`` ops of the
AIC and the AIV function of a ``pl.program`` op that bind the same ring (C2V / V2C and
``id=``) must
give the same DIR_MASK, SLOT_SIZE, SLOT_NUM (the platform's seed 003 default when not
given) and lanes (``lanes=1``: a one-lane no-split pipe).  Checked statically by
VerifyPipes (a CompileError) and, for hand-written kernels run without compiling, by the
runtime before it runs (a ConfigError): the finding is worded here, once.  Also the one
place an init's LocalSlotNum is read (:func:`local_slot_num`), the one place a pipe op's
ring is decided (:func:`ring_of`; the DSL names it by the op's buffer, :func:`name_rings`) and
the one place that says which Vector function AIV1 replays on empty valid shapes and which
tiles it then pushes empty (:func:`lane1_replays`, :func:`lane1_empty_pushes`: both writers
ask it).

The finding is reported at the init of the side that differs: the side whose SLOT_SIZE
cannot hold the largest tile crossing the ring (what a slot holds of it,
:func:`~ptopipe.protocol.geometry.slot_shape`), else the side whose SLOT_NUM * SLOT_SIZE is not the size of the consumer's
reserve_buffer when the other side's is, else the producer (the consumer reserves the
ring, so its declaration is the reference)."""
from __future__ import annotations

from dataclasses import dataclass

from ..arch.vocab import PLAIN_DIRECTION as _GM, Direction, TileSplitAxis
from ..protocol.geometry import full_shape, slot_shape
from ..protocol.rings import default_local_slot_num
from .vocab import FunctionKind
from .opdefs import INITIALIZE_PIPE, BufferAttrOp, FuncOp, ReserveBufferOp, TAlloc, TFree, TPop, TPush
from .ops import Ring
from ..errors import CompileError
from .types import TileValueType, itemsize

_BITS = (("C2V", Direction.DIR_C2V), ("V2C", Direction.DIR_V2C))


@dataclass(frozen=True)
class PipeEnd:
    """One function's binding of one ring: its init op and the configuration it gives."""
    func: str
    kind: FunctionKind
    init: object            # the *_initialize_pipe op
    dir_mask: int
    slot_size: int
    slot_num: int
    lanes: int | None
    largest: int            # bytes of the largest tile a slot holds that it pushes / pops (0: none)
    reserve: int | None     # the consumer's reserve_buffer size for this ring (None: none)


@dataclass(frozen=True)
class ConfigMismatch:
    """The ends of ``way``'s ring disagree on ``field``: ``culprit`` differs from ``other``."""
    way: str
    field: str
    culprit: PipeEnd
    other: PipeEnd

    @property
    def what(self) -> str:
        c, o = self.culprit, self.other
        return (f"the two ends of the {self.way} pipe disagree on {self.field}: {c.func} "
                f"({c.kind.value.upper()}) declares {_value(c, self.field)} but {o.func} "
                f"({o.kind.value.upper()}) declares {_value(o, self.field)}")

    @property
    def fix(self) -> str:
        return (f"give both *_initialize_pipe calls of the {self.way} pipe the same {self.field} "
                f"({_knob(self.field)}), e.g. {_value(self.other, self.field)} here as in {self.other.func}")

    @property
    def details(self) -> str:
        return f"the other end: {self.other.func}'s init at {self.other.init.loc}"


def ring_of(op) -> Ring:
    """The :class:`~.ops.Ring` a TPUSH / TPOP / TFREE / TALLOC uses: its direction and its
    ``id=`` (0 when not given; the DSL fills it in from the buffer the op passes,
    :func:`name_rings`)."""
    return Ring(op.direction, op.pipe_id)


def name_rings(fn) -> None:
    """Give each pipe op of kernel ``fn`` without ``id=`` the id of the ring whose buffer it
    passes: an op naming the reserve_buffer / import_peer_buffer that an init of ``fn`` hands
    as that direction's consumer buffer takes that init's ``id=`` (pushes and pops name
    their ring by its buffer).  An op whose buffer no init names keeps id 0; one whose
    ``id=`` names another ring than its buffer's is a CompileError at the op, and so is a
    second init handing a buffer an earlier ring of ``fn`` holds (:func:`shared_buffer_error`)."""
    by_buf = {}
    for init in fn.regions[0].blocks[0]:
        if not init.is_a(*INITIALIZE_PIPE):
            continue
        for way, ring in zip(init.ways, init.rings):
            d = getattr(init.consumer_bufs[way.name[4:]], "op", None)
            if d is None or not d.is_a(BufferAttrOp):
                continue
            key = (way, d.buffer)
            if key in by_buf and by_buf[key][1] != ring:   # (one ring set up twice: Validate's)
                first, other = by_buf[key]
                raise shared_buffer_error(fn.sym_name, getattr(d.buffer, "op", None), ring, init, other, first)
            by_buf[key] = (init, ring)
    if not any(ring[1] for _, ring in by_buf.values()):
        return
    for op in fn.walk():
        if op.is_a(TPush, TPop, TFree, TAlloc):
            held = by_buf.get((op.direction, op.buf))
            pid = held[1][1] if held is not None else 0
            if not pid:
                continue
            if op.pipe_id is None:
                op.pipe_id = pid
            elif op.pipe_id != pid:
                raise CompileError(f"this {op.dsl} says id={op.pipe_id} but passes the buffer of the "
                                   f"{Ring(op.direction, pid).label} ring", where=str(op.loc) if op.loc else None,
                                   fix=f"pass the buffer of the ring it uses, or give id={pid} (or no id=)")


def lane1_replays(f) -> bool:
    """Does AIV1 replay ``f`` (a ``pl.func`` op) on empty valid shapes?  A TILE_NO_SPLIT AIV
    function whose pipes have two lanes (none is initialised with ``lanes=1``, the A5
    one-lane NO_SPLIT): AIV0 moves and computes the whole tiles, AIV1 takes part in every
    TPUSH / TPOP / TFREE handshake but loads, computes and stores nothing (the A2A3 no-split
    replay the runtime simulates, docs/layouts.md)."""
    return (f.kind is FunctionKind.AIV and f.split is TileSplitAxis.TILE_NO_SPLIT
            and not any(op.is_a(*INITIALIZE_PIPE) and op.lanes == 1 for op in f.regions[0].blocks[0]))


def lane1_empty_pushes(f) -> frozenset:
    """The tile values ``f`` TPUSHes that AIV1 pushes with an empty (0 x 0) valid shape: every
    one, when AIV1 replays ``f`` (:func:`lane1_replays`), else none.  A writer gives them a
    valid shape that is the tile's own on AIV0 and 0 x 0 on AIV1: pto-isa's no-split TPUSH
    writes the valid region from offset 0 of the slot whichever lane pushes, so AIV1 pushing
    the full shape would write its uncomputed tile over AIV0's data."""
    if not lane1_replays(f):
        return frozenset()
    return frozenset(op.tile for op in f.walk() if op.is_a(TPush) and isinstance(op.tile.type, TileValueType))


def shared_buffer_error(func: str, buf, ring: Ring, init, other: Ring, first) -> CompileError:
    """The finding that ``init`` of function ``func`` hands ``ring`` the buffer ``buf`` (a
    reserve_buffer / import_peer_buffer op) that ``other``, set up by the earlier init
    ``first``, already holds: TPUSH / TPOP / TFREE name their pipe by its buffer, so one pipe
    is unreachable and the two rings overlap (pypto refuses a program with fewer
    ``reserve_buffer`` calls than initialised pipe directions)."""
    name = f"{buf.call_name} {buf.buffer_name!r}" if buf is not None else "its buffer"
    peer = "" if buf is None else (" (and the peer's import_peer_buffer of it)" if buf.is_a(ReserveBufferOp)
                                   else " (the consumer's reserve_buffer, imported here)")
    return CompileError(
        f"the {ring.label} ring is given {name}, which the {other.label} ring initialised before "
        f"it in {func!r} already holds: TPUSH / TPOP / TFREE name their pipe by this buffer, so "
        f"the {other.label} pipe would never be used and the two rings would overlap",
        where=str(init.loc) if init.loc else None,
        fix=f"give each pipe direction its own buffer: one pl.reserve_buffer of SLOT_NUM * SLOT_SIZE "
            f"bytes per ring{peer}, passed to this init and to the {ring.label} pipe's "
            f"TPUSH / TPOP / TFREE",
        details=f"the {other.label} ring is initialised at {first.loc}")


def local_slot_num(attrs, slot_num: int | None = None) -> int:
    """LocalSlotNum of an init's attributes: the staging slots a GM-ring consumer holds its
    popped tiles in (A2A3), so the most popped tiles it holds at once.  ``local_slot_num=``
    when given (ExpandMixedKernel gives SLOT_NUM, which VerifyPipes lowers to the hold bound it
    proves on a ring in GM: the compiler's reserve_buffer holds that many slots),
    else pto-isa's default (:func:`ptopipe.protocol.rings.default_local_slot_num`: at most the
    ring's ``slot_num``).  The simulator stages that many, VerifyPipes bounds the held pops by
    it and the writers print it."""
    n = attrs.get("local_slot_num")
    return default_local_slot_num(slot_num) if n is None else n


def pipe_config_mismatches(program, plat) -> list:
    """The :class:`ConfigMismatch` of every ring of ``program`` (a ``pl.program`` op) whose
    two ends disagree, for a program of one AIC and one AIV function (else none)."""
    funcs = [f for f in program.body if f.is_a(FuncOp)]
    aic = [f for f in funcs if f.kind is FunctionKind.AIC]
    aiv = [f for f in funcs if f.kind is FunctionKind.AIV]
    if len(aic) != 1 or len(aiv) != 1:
        return []
    out = []
    ids = sorted({op.pipe_id or 0 for f in (aic[0], aiv[0]) for op in f.body
                  if op.is_a(*INITIALIZE_PIPE)})
    for pid in ids:
        for way, bit in _BITS:
            ends = [_end(f, way, bit, plat, pid) for f in (aic[0], aiv[0])]
            if None in ends:
                continue
            prod, cons = ends if way == "C2V" else ends[::-1]
            for field in ("dir_mask", "slot_size", "slot_num", "lanes"):
                if getattr(prod, field) != getattr(cons, field):
                    c = _culprit(field, prod, cons)
                    out.append(ConfigMismatch(Ring(bit, pid).label, field, c,
                                              cons if c is prod else prod))
                    break
    return out


def _end(f, way: str, bit, plat, pipe_id: int = 0) -> PipeEnd | None:
    init = next((op for op in f.body if op.is_a(*INITIALIZE_PIPE)
                 and _covers(op.dir_mask, bit) and (op.pipe_id or 0) == pipe_id), None)
    if init is None:
        return None
    d = Direction(init.dir_mask)
    both = _GM.get(d, d) == Direction.DIR_BOTH
    n = init.slot_num
    kind = f.kind
    consumer = (kind is FunctionKind.AIV) == (way == "C2V")
    return PipeEnd(f.sym_name, kind, init, int(d), init.slot_size,
                   n if n is not None else plat.slot_num_for(both), init.lanes,
                   _largest(f, kind, bool(plat.ring_in_gm) or d in _GM, pipe_id),
                   _reserve(init, way) if consumer else None)


def _covers(mask, bit) -> bool:
    try:
        d = Direction(mask)
    except ValueError:
        return False
    return bool(_GM.get(d, d) & bit)


def _largest(f, kind, in_gm: bool, pipe_id: int = 0) -> int:
    """Bytes of the largest tile a slot holds (:func:`~ptopipe.protocol.geometry.slot_shape`)
    of those ``f`` pushes or pops (either direction) on the rings of id ``pipe_id``, in GM
    (``in_gm``) or in the consumers' memories."""
    best = 0
    for op in f.walk():
        if op.is_a(TPop, TAlloc, TPush) and (op.pipe_id or 0) != pipe_id:
            continue
        if op.is_a(TPop, TAlloc):
            t = op.result_type
        elif op.is_a(TPush):
            t = op.tile.type
        else:
            continue
        shape = getattr(t, "shape", None)
        if shape is None or len(shape) != 2:
            continue
        split = op.split or TileSplitAxis.TILE_NO_SPLIT
        whole = full_shape(split, *shape) if kind is FunctionKind.AIV else tuple(shape)
        rows, cols = slot_shape(ring_of(op).way, in_gm, split, *whole)
        best = max(best, rows * cols * itemsize(t.dtype))
    return best


def _reserve(init, way: str) -> int | None:
    d = getattr(init.consumer_bufs[way], "op", None)
    if d is not None and d.is_a(BufferAttrOp):
        b = getattr(d.buffer, "op", None)
        if b is not None and b.is_a(ReserveBufferOp):
            return b.size
    return None


def _culprit(field: str, prod: PipeEnd, cons: PipeEnd) -> PipeEnd:
    if field == "slot_size":
        need = max(prod.largest, cons.largest)
        small = [e for e in (prod, cons) if e.slot_size < need]
        if len(small) == 1:
            return small[0]
    if field in ("slot_size", "slot_num") and cons.reserve is not None:
        fits = [e for e in (prod, cons) if e.slot_num * e.slot_size == cons.reserve]
        if len(fits) == 1:
            return cons if fits[0] is prod else prod
    return prod


def _value(e: PipeEnd, field: str) -> str:
    v = getattr(e, field)
    if field == "dir_mask":
        return Direction(v).name
    if field == "lanes":
        return "lanes=1" if v == 1 else "both lanes"
    return f"{field.upper()} {v}"


def _knob(field: str) -> str:
    return {"dir_mask": "the DIR_MASK argument", "slot_size": "the SLOT_SIZE argument",
            "slot_num": "slot_num=", "lanes": "lanes="}[field]
