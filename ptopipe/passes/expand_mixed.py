"""ExpandMixedKernel (seed 003 "Compiler Toolchain Implications" point 2):
one mixed ``@pl.incore`` function -> an AIC function, an AIV function and a Group function
calling both, communicating through TPUSH / TPOP.

It takes the op IR of a verified program (a ``pl.program`` op) and leaves no InCore function: each
ring is a ``reserve_buffer(base=AUTO)`` in its consumer, an ``import_peer_buffer`` in its
producer and one ``*_initialize_pipe`` per kernel (properties: ``REQUIRED`` / ``PRODUCED`` / ``INVALIDATED`` (docs/passes/README.md)).
TFREEs are NOT placed here: InsertTfree does that.

Classification (by the tile types an op touches): a tile in Vec (UB) is Vector, one in
Mat/Left/Right/Acc is Cube, so ``pl.matmul`` is Cube, a load goes by its target space, a
store by its source tile; a ``pl.move`` from one side to the other is a *boundary*:
Acc -> Vec is C2V, Vec -> Mat/Left/Right is V2C.  Scalars and control flow are shared: both
kernels get a copy, and each drops the other side's ops, loop-carried values and results
(then unused scalars and empty loops / branches).  A boundary becomes TPUSH on the producer
and TPOP on the consumer (a V2C tile bound for Left/Right is popped into Mat, then moved).
DIR_MASK is 1 / 2 / 3; SLOT_SIZE the most bytes a slot holds of a crossing tile (aligned): the
static shape of the Cube's tile, but one Vector core's part of a C2V tile where the ring is in
the Vector cores' UB (A5; :func:`~ptopipe.protocol.geometry.slot_shape`); where the static
shapes of the two sides differ, :mod:`.tile_boxes` declares the tiles so that the device and
pto-isa's CPU simulator read the slot alike (an A5 popped part at its slot's pitch, copied
into its own shape for the ops that read it), or refuses the crossing at its move;
SLOT_NUM ``@pl.incore(slot_num=N)``, else the platform's default (seed 003: 8 for one
direction, 4 per direction for both, ``Platform.slot_num_for``) - lowered, where the rings
live in their consumers' memories (A5), to the most slots that fit beside the consumer's
tiles, with a note in the compile's warnings saying so (:func:`_fitting_slot_num`).
LocalSlotNum starts at SLOT_NUM; VerifyPipes lowers it to the hold bound it proves
(:func:`.verify_pipes.size_staging`).  Both kernels take a ``gm_slot_buffer`` GM parameter of
SLOT_NUM * SLOT_SIZE bytes per direction (the A2A3 ring; the A5 rings are the reserved
buffers) and the tensors they use.

Split: ``@pl.incore(split=...)``, default TILE_UP_DOWN (a cluster has two Vector cores and
seed 003's split consumer gives each a half; the hand-written pairs do the same); see
:mod:`.expand_split`.  TILE_NO_SPLIT: the AIV function keeps whole tiles and is marked
``split=TILE_NO_SPLIT`` (``@pl.aiv(split=pl.TILE_NO_SPLIT)``): AIV0 does the work and AIV1
replays every handshake on empty valid shapes (A2A3), or, where the protocol model says a
NO_SPLIT transfer has one lane (``nosplit_lane0``: A5 under spec and pto-isa, decided from
``ctx.platform`` and ``ctx.protocol``), both ``*_initialize_pipe`` ops get ``lanes=1`` (AIV0
the only peer) and AIV1 runs nothing.  A function with only Cube (only
Vector) work becomes an AIC (AIV) function; a Vector-only one is split as asked, or run whole
on AIV0 when its tiles do not split (:func:`_split_or_whole`).

A GM tensor one side writes and the other reads or writes gets synchronisation tokens (a
boundary move after each access the other side's later access must wait for, see
:mod:`.gm_tokens`).

Errors (CompileError at the DSL line): a loop bound or branch condition computed on the
Vector side only (from ``pl.get_subblockid()``) controlling Cube work; a GM access no
token can follow (:mod:`.gm_tokens`); the split errors of :mod:`.expand_split`.
"""
from __future__ import annotations

import numpy as np

from ..arch import MemSpace
from ..arch.platform import get_platform
from ..arch.vocab import ALIGNMENT, PTOAS_SLOT_NUMS, Direction, TileSplitAxis
from ..errors import CompileError
from ..ir.core import Block, Operation, Region
from ..ir.layout import no_ptoas_ring_fits, plan_function, ptoas_slot_num
from ..ir.vocab import AUTO, FunctionKind
from ..ir.types import INDEX, BufferType, MemorySpace, TensorType, TileValueType, np_dtype
from ._rewrite import (CUBE, PURE, VECTOR, boundary_direction, const, dce, drop_unused_args, err,
                       fresh, is_boundary, names_in, op_sides, remove_carried, side_of_type,
                       strip_yields)
from ..ir.opdefs import (ARITH_BINARY, PIPE_OPS, SCALAR_CALLS, AicInitializePipe, AivInitializePipe,
                         BufferAttrOp, CallOp, CastOp, ConstOp, ForOp, FuncOp, GetSubblockIdOp,
                         IfOp, ImportPeerBufferOp, MoveOp,
                         ReserveBufferOp, ReturnOp, TPop, TPush, YieldOp)
from ..ir.ops import GM_SLOT_PARAM
from .expand_split import split_vector_function
from .gm_tokens import insert_gm_tokens
from .util import platform_of, protocol_model
from .properties import IRProperty
from .remarks import remarks_of
from .tile_boxes import Crossing, box_kernel, mat_requirements, plan_crossing, slot_of

NAME = "expand-mixed"
REQUIRED = frozenset()
PRODUCED = frozenset({IRProperty.MIXED_KERNELS_EXPANDED})
INVALIDATED = frozenset({IRProperty.TFREES_INSERTED, IRProperty.PIPES_VERIFIED, IRProperty.MEMORY_ALLOCATED,
                         IRProperty.PEERS_RESOLVED, IRProperty.FLAGS_ALLOCATED, IRProperty.PLATFORM_LOWERED,
                         IRProperty.VALIDATED})

C2V, V2C = Direction.DIR_C2V, Direction.DIR_V2C
DEFAULT_SPLIT = TileSplitAxis.TILE_UP_DOWN
RING_NAME = {C2V: "c2v_slot_buffer", V2C: "v2c_slot_buffer"}
GM_PARAM = GM_SLOT_PARAM
_STRUCTURAL = (ForOp, IfOp, YieldOp, ReturnOp)


def _aligned_bytes(shape: tuple, dtype: str) -> int:
    size = shape[0] * shape[1] * np.dtype(np_dtype(dtype)).itemsize
    return (size + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


class PipePlan:
    """What the pipes of one mixed function look like."""

    def __init__(self, fn: Operation, plat, decide: bool = True):
        self.boundaries = [op for op in fn.walk() if is_boundary(op)]
        self.dirs = {boundary_direction(op) for op in self.boundaries}
        self.mask = Direction(sum(int(d) for d in self.dirs)) if self.dirs else None
        self.split = fn.split if fn.split is not None else DEFAULT_SPLIT
        self.chosen = fn.slot_num is None           # the compiler picks SLOT_NUM
        # each boundary's slot and the box of its Vector part (tile_boxes; in walk order, which
        # the kernels' copies keep); a V2C tile's Mat box is the Left / Right it is TMOVed into;
        # ``decide`` False (a compile that only sizes the parameters): the slots only
        mats = mat_requirements(fn)
        mat_box = [mats.get(op.result) for op in self.boundaries]
        self.crossings = [plan_crossing(op, self.split, plat.ring_in_gm, m, plat.name) if decide else
                          Crossing(slot_of(op, self.split, plat.ring_in_gm, m), None, None)
                          for op, m in zip(self.boundaries, mat_box)]
        # what one slot holds: the static Cube-side tile, or on a C2V ring in the Vector cores'
        # UB one core's part of it
        self.slot_size = max((_aligned_bytes(c.slot, op.tile.type.dtype)
                              for op, c in zip(self.boundaries, self.crossings)), default=0)
        self.slot_num = fn.slot_num or plat.slot_num_for(len(self.dirs) == 2)
        # the kernels' GM slot-buffer parameter is the same on every platform (with_slot_buffer
        # sizes it from the front end): the GM ring's, which holds whole static tiles
        gm_slot = max((_aligned_bytes(slot_of(op, self.split, True, m), op.tile.type.dtype)
                       for op, m in zip(self.boundaries, mat_box)), default=0)
        self.gm_bytes = max(1, len(self.dirs)) * self.slot_num * gm_slot


def _taint_check(fn: Operation) -> None:
    """In the AIC copy nothing but scalar arithmetic may depend on ``pl.get_subblockid()``
    (a Vector-only value): a loop bound or branch condition computed from it is an error."""
    tainted = set()
    for op in fn.walk():
        bad = next((v for v in op.operands if v in tainted), None)
        if op.is_a(GetSubblockIdOp) or (bad is not None and (
                op.is_a(*PURE) or op.name.startswith("arith."))):
            tainted.update(op.results)
        elif bad is not None:
            i = op.operands.index(bad)
            what = {ForOp.name: "loop bound" if i < 3 else "loop-carried value",
                    IfOp.name: "branch condition"}.get(op.name, f"operand of {op.name}")
            where = {ForOp.name: "the loop", IfOp.name: "the branch"}.get(op.name, "it")
            raise err(f"the {what} '{_expr_text(bad)}' is computed on the Vector side only (from "
                      f"pl.get_subblockid()), but {where} also holds Cube work", op,
                      "compute loop bounds and branch conditions from parameters and loop "
                      "variables (both kernels replicate them), not from pl.get_subblockid()")


class _Expander:
    def __init__(self, fn: Operation, plan: PipePlan, aic: str, aiv: str, one_lane: bool):
        self.fn, self.plan, self.aic, self.aiv = fn, plan, aic, aiv
        self.no_split = plan.split is TileSplitAxis.TILE_NO_SPLIT
        self.one_lane = one_lane and self.no_split

    def kernel(self, side: str) -> Operation:
        plan, src = self.plan, self.fn.regions[0].blocks[0]
        entry = Block([a.type for a in src.args], [a.name for a in src.args])
        vm = dict(zip(src.args, entry.args))
        for op in src:
            entry.append(op.clone(vm))
        kind = FunctionKind.AIC if side == CUBE else FunctionKind.AIV
        name = self.aic if side == CUBE else self.aiv
        fn = Operation(FuncOp.name, (), (), {"sym_name": name, "kind": kind}, (Region([entry]),),
                       self.fn.loc)
        names = names_in(fn)
        gm = entry.add_arg(TensorType((plan.gm_bytes,), "u8"), fresh(names, GM_PARAM)) \
            if plan.dirs else None
        bufs, init = self.pipe_setup(entry, side, gm, names) if plan.dirs else ({}, None)
        popped, pushed = {}, {}             # the boxes tile_boxes gives the ring ops' tiles
        for op, crossing in zip([o for o in fn.walk() if is_boundary(o)], plan.crossings):
            self.boundary(op, side, bufs, crossing, popped, pushed)
        self.prune(fn, side)
        if side == CUBE:
            _taint_check(fn)
        elif self.no_split:                 # whole tiles on AIV0; AIV1 replays or idles
            fn.split = TileSplitAxis.TILE_NO_SPLIT
        else:
            split_vector_function(fn, plan.split, init, fresh(names, "sub"))
        box_kernel(fn, popped, pushed)
        drop_unused_args(entry, keep=(gm,) if gm is not None else ())
        return fn

    def pipe_setup(self, entry: Block, side: str, gm, names: set):
        """reserve_buffer for each ring this side consumes, import_peer_buffer for each it
        produces into, then ``*_initialize_pipe`` (as the hand-written DSL pairs do)."""
        plan, loc = self.plan, self.fn.loc
        consumes = V2C if side == CUBE else C2V
        peer = self.aiv if side == CUBE else self.aic
        ops, bufs, base = [], {}, {}
        order = [d for d in (consumes, Direction(3 - int(consumes))) if d in plan.dirs]
        for d in order:
            if d == consumes:
                op = ReserveBufferOp.build(
                    buffer_name=RING_NAME[d], size=plan.slot_num * plan.slot_size, base=AUTO,
                    memory_space="L1" if side == CUBE else "UB",
                    result_types=[BufferType("reserve")], loc=loc,
                    result_names=[fresh(names, f"{RING_NAME[d][:3]}_buf")])
            else:
                op = ImportPeerBufferOp.build(
                    buffer_name=RING_NAME[d], peer_func=peer, result_types=[BufferType("import")],
                    loc=loc, result_names=[fresh(names, f"{RING_NAME[d][:3]}_peer")])
            ops.append(op)
            bufs[d] = op.buf
        for d in (C2V, V2C):
            if d in bufs:
                ops.append(BufferAttrOp.build(buffer=bufs[d], attr="base", result_types=[INDEX],
                                              loc=loc))
            else:
                ops.append(const(0, loc))
            base[d] = ops[-1].results[0]
        init = (AicInitializePipe if side == CUBE else AivInitializePipe).build(
            gm_slot_buffer=gm, c2v_consumer_buf=base[C2V], v2c_consumer_buf=base[V2C],
            dir_mask=plan.mask, slot_size=plan.slot_size, slot_num=plan.slot_num,
            lanes=1 if self.one_lane else None, flag_id=None, local_slot_num=plan.slot_num,
            loc=loc)
        ops.append(init)
        for op in reversed(ops):
            entry.prepend(op)
        return bufs, init

    def boundary(self, op: Operation, side: str, bufs: dict, crossing, popped: dict,
                 pushed: dict) -> None:
        """The move ``op`` as this side's TPUSH (producer) or TPOP (consumer); ``popped`` /
        ``pushed`` receive the box ``crossing`` (:func:`.tile_boxes.plan_crossing`) gives the
        tile of the TPOP / TPUSH made (a Vector side's: its part, once split)."""
        d = boundary_direction(op)
        src, dst = op.tile, op.result
        producer = CUBE if d == C2V else VECTOR
        split = self.plan.split
        if side == producer:
            push = op.insert_before(TPush.build(tile=src, buf=bufs[d], split=split, direction=d,
                                                loc=op.loc))
            if side == VECTOR and crossing.part is not None:
                pushed[push] = crossing.part
            return                    # the move itself goes with the other side's ops
        st, dt = src.type, dst.type
        space = MemorySpace.Vec if d == C2V else MemorySpace.Mat
        ptype = TileValueType(st.shape, st.dtype, space)
        box = crossing.part if d == C2V else crossing.cube
        copy = d == C2V and box is not None
        last = pop = op.insert_before(TPop.build(
            buf=bufs[d], result_type=ptype, split=split, direction=d, result_types=[ptype],
            loc=op.loc, result_names=[dst.name if ptype == dt and not copy else None]))
        if box is not None:
            popped[pop] = box
        if copy:
            # the slot's pitch boxes the popped tile; the kernel reads a copy in its own static
            # shape (ptoas wants the tiles of most Vector ops in one static shape)
            last = op.insert_before(MoveOp.build(
                tile=pop.tile, space=MemorySpace.Vec, dtype=None, layout=None, result_types=[ptype],
                loc=op.loc, result_names=[dst.name if ptype == dt else None]))
        if d == C2V and dt.dtype != st.dtype:
            last = op.insert_before(CastOp.build(a=last.results[0], dtype=dt.dtype, result_types=[dt],
                                                 loc=op.loc, result_names=[dst.name]))
        elif d == V2C and dt.space is not MemorySpace.Mat:
            last = op.insert_before(MoveOp.build(
                tile=pop.tile, space=dt.space, dtype=None, layout=op.layout, result_types=[dt],
                loc=op.loc, result_names=[dst.name]))
        dst.replace_all_uses_with(last.results[0])
        op.erase()

    def prune(self, fn: Operation, side: str) -> None:
        """Drop the other side's ops, loop-carried values and results, then dead code."""
        other = VECTOR if side == CUBE else CUBE
        drops = {}
        for op in fn.walk():
            if op.is_a(ForOp, IfOp):
                drop = {i for i, r in enumerate(op.results) if side_of_type(r.type) == other}
                if drop:
                    drops[op] = drop
                    strip_yields(op, drop)
        for op in reversed(list(fn.walk())):
            if op is not fn and not op.is_a(*_STRUCTURAL) and other in op_sides(op):
                op.erase()
        for op, drop in drops.items():
            remove_carried(op, drop)
        dce(fn)

    def group(self, kernels) -> Operation:
        src = self.fn.regions[0].blocks[0]
        entry = Block([a.type for a in src.args], [a.name for a in src.args])
        by_name = {a.name: a for a in entry.args}
        for k in kernels:
            for a in k.regions[0].blocks[0].args:
                if a.name not in by_name:           # the GM slot buffer
                    by_name[a.name] = entry.add_arg(a.type, a.name)
        for k in kernels:
            args = [by_name[a.name] for a in k.regions[0].blocks[0].args]
            entry.append(CallOp.build(callee=k.sym_name, args=args, loc=self.fn.loc))
        return Operation(FuncOp.name, (), (), {"sym_name": self.fn.sym_name,
                                             "kind": FunctionKind.Group}, (Region([entry]),),
                         self.fn.loc)


def _sides(fn: Operation) -> set:
    out = set()
    for op in fn.walk():
        if not is_boundary(op):
            out |= op_sides(op)
    return out


def _expr_text(v, depth: int = 4) -> str:
    """A scalar value as the DSL expression that made it (``sb + 1``), for messages."""
    if v.name is not None or depth == 0:
        return v.name or "..."
    op = v.op
    if op.is_a(ConstOp):
        return repr(op.value)
    if op.name in ARITH_BINARY:
        a, b = (_expr_text(x, depth - 1) for x in op.operands)
        sym = ARITH_BINARY[op.name]
        return f"pl.{sym}({a}, {b})" if sym in SCALAR_CALLS else f"{a} {sym} {b}"
    if op.is_a(GetSubblockIdOp):
        return "pl.get_subblockid()"
    return f"<{op.name}>"


def _split_or_whole(fn: Operation, split, warn) -> Operation | None:
    """The pure-Vector function ``fn`` split between the two Vector cores (a new function);
    None when its tiles do not split (an odd extent, a one-row store ...): nothing crosses
    cores, so it runs whole on AIV0 instead - pypto clears the split of a pure AIV function
    (pypto #841).  A function using ``pl.get_subblockid()`` splits by hand: its errors stand."""
    split_fn = fn.clone()
    try:
        split_vector_function(split_fn, split, None, fresh(names_in(fn), "sub"))
    except CompileError as e:
        if any(o.is_a(GetSubblockIdOp) for o in fn.walk()):
            raise
        if warn is not None:
            warn(f"{fn.sym_name}: Vector-only work kept whole on AIV0 (split "
                 f"{split.name} does not apply: {e.what})")
        return None
    return split_fn


def expand_function(fn: Operation, taken: set, one_lane: bool = False, warn=None,
                    plat="a2a3", decide: bool = True) -> list:
    """The functions replacing the mixed function ``fn`` for platform ``plat``;
    ``one_lane``: a TILE_NO_SPLIT pipe has AIV0 as its only lane (the protocol model's
    ``nosplit_lane0``); ``warn(msg)`` receives notes (a Vector-only function kept whole, a
    SLOT_NUM chosen to fit memory); ``decide`` False: the ring slots only, no tile boxes and
    no refusal of a transfer on ``plat`` (a compile that sizes the parameters,
    ``PassContext.sizing``)."""
    for op in fn.walk():
        if op.is_a(ReturnOp) and op.operands:
            raise err(f"{fn.sym_name}: a kernel returns no value (its results go to GM "
                      "tensors)", op, "pl.store the tile to an output tensor parameter instead of "
                      "returning it")
    insert_gm_tokens(fn)
    plat = get_platform(plat)
    plan = PipePlan(fn, plat, decide)
    sides = _sides(fn)
    name = fn.sym_name
    if not plan.dirs and len(sides) < 2:
        kind = FunctionKind.AIC if sides == {CUBE} else FunctionKind.AIV
        fn.kind = kind
        for r in fn.regions[0].blocks[0]:           # its own rings now live in its core's memory
            if r.is_a(ReserveBufferOp) and not r.memory_space:
                r.memory_space = "L1" if kind is FunctionKind.AIC else "UB"
        own_pipes = any(o.is_a(*PIPE_OPS) for o in fn.walk())
        if kind is FunctionKind.AIV and not own_pipes:
            # both Vector cores run it: each takes its half (or, NO_SPLIT, AIV1 replays empty)
            split_fn = None if plan.split is TileSplitAxis.TILE_NO_SPLIT else \
                _split_or_whole(fn, plan.split, warn)
            if split_fn is None:
                fn.split = TileSplitAxis.TILE_NO_SPLIT
                del fn.slot_num
                return [fn]
            fn = split_fn
        del fn.split
        del fn.slot_num
        return [fn]
    aic, aiv = fresh(taken, f"{name}_aic"), fresh(taken, f"{name}_aiv")
    ex = _Expander(fn, plan, aic, aiv, one_lane)
    kernels = [ex.kernel(CUBE), ex.kernel(VECTOR)]
    if plan.chosen and not plat.ring_in_gm:
        fit = _fitting_slot_num(kernels, plan, plat)
        if fit is not None:
            n, why, advice = fit
            if warn is not None:
                warn(f"ExpandMixedKernel: {name}: SLOT_NUM {n} chosen (the default "
                     f"{plan.slot_num}: {why}); {advice}")
            # (gm_bytes stays: the kernels' GM slot-buffer parameter is the same on every
            # platform - with_slot_buffer sizes it from the front end - and an A5 ring
            # in the consumer's memory does not use it)
            plan.slot_num = n
            kernels = [ex.kernel(CUBE), ex.kernel(VECTOR)]
    return kernels + [ex.group(kernels)]


def _fitting_slot_num(kernels, plan: PipePlan, plat):
    """``(n, why, advice)`` when the plan's (default) SLOT_NUM does not fit: each
    consumer-local ring of ``kernels`` must fit its consumer's memory above the tiles the
    allocator places below it (AUTO rings go after the peak of the tiles).  ``n`` is the
    deepest ring ptoas builds (4 or 8 slots) that fits, so the .pto stays one ptoas takes;
    when none does, the most slots that fit (ptopipe's run and C++ take any SLOT_NUM; pypto
    itself defaults to 2) and ``advice`` says plainly that ptoas will refuse the ring and what
    to shrink.  None when the plan's SLOT_NUM fits or not even one slot does (Validate then
    reports the ring)."""
    most, tight = plan.slot_num, None
    for k in kernels:
        lay = plan_function(k)
        for r in k.body:
            if not r.is_a(ReserveBufferOp) or r.buffer_name not in RING_NAME.values():
                continue
            space = MemSpace(r.memory_space)
            start = -(-lay.peak.get(r.memory_space, 0) // ALIGNMENT) * ALIGNMENT
            have = plat.mem_size(space) - start
            if have // plan.slot_size < most:
                most, tight = have // plan.slot_size, (r, k, space, have)
    if not 1 <= most < plan.slot_num:
        return None
    r, k, space, have = tight
    why = (f"{plan.slot_num} slots of {plan.slot_size} bytes for the ring {r.buffer_name!r} do "
           f"not fit the {have} bytes of {space.value} {k.sym_name} has free above its tiles on "
           f"{plat.name}")
    n = ptoas_slot_num(most)
    if n is not None:
        return n, why, (f"the deepest ring ptoas builds that fits; give @pl.incore(slot_num=...) to "
                        f"choose (ptoas takes {' or '.join(map(str, PTOAS_SLOT_NUMS))})")
    way = next(w for w, b in RING_NAME.items() if b == r.buffer_name).name.replace("DIR_", "")
    return most, why, ("ptoas will refuse this ring (ptopipe's run and C++ take it): "
                       + no_ptoas_ring_fits(plan.slot_size, have, way,
                                            f"the {space.value} of {k.sym_name}",
                                            part=way == "C2V" and plan.split is not TileSplitAxis.TILE_NO_SPLIT))


def one_lane_no_split(ctx) -> bool:
    """Does a TILE_NO_SPLIT transfer have one lane (AIV0) on ``ctx``'s platform and
    protocol?  A5 under spec and pto-isa: yes; A2A3: both lanes take part
    (:func:`~ptopipe.protocol.model.nosplit_one_lane`)."""
    return protocol_model(ctx).nosplit_lane0


def run(program: Operation, ctx=None) -> Operation:
    one_lane = one_lane_no_split(ctx)
    remarks = remarks_of(ctx)
    top = program.regions[0].blocks[0]
    taken = {f.sym_name for f in top}
    for fn in list(top):
        if fn.kind is not FunctionKind.InCore:
            if fn.kind in (FunctionKind.AIC, FunctionKind.AIV):
                box_kernel(fn)              # a hand-written kernel's Mat tiles TMOVed to Left / Right
            continue
        warnings = getattr(ctx, "warnings", None)

        def note(msg, fn=fn):              # a note is a warning and a missed-split remark
            if warnings is not None:
                warnings.append(msg)
            remarks.missed(NAME, fn, msg)
        new = expand_function(fn, taken, one_lane, note, platform_of(ctx), not getattr(ctx, "sizing", False))
        if new == [fn]:
            if fn.kind in (FunctionKind.AIC, FunctionKind.AIV):
                box_kernel(fn)              # a one-sided function, now a kernel
            continue
        for f in new:
            fn.insert_before(f)
        fn.erase()
    return program
