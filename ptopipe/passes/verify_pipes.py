"""VerifyPipes - the static cross-core protocol verifier (seed 003).

It takes a ``pl.program`` op whose kernels are ``pl.func`` ops of kind AIC / AIV (a
hand-written DSL pair, ``pl.program(cube, vector)``, or the compiler's output) and returns
it unchanged but for the staging rings ExpandMixedKernel made in GM, which it sizes by the
hold bound it proved (:func:`size_staging`) (properties: ``REQUIRED`` / ``PRODUCED`` /
``INVALIDATED`` (docs/passes/README.md)).  Runs nothing: it explores
every path of every kernel symbolically (:mod:`.pipe_paths`: constant loops unrolled,
branches on unknown conditions taken both ways, each AIV function once per Vector lane
with ``get_subblockid()`` known) and proves, per pipe direction and per path:

* every TPOP is freed before the ring wraps: at most SLOT_NUM popped slots held at once
  (SLOT_NUM from the ``*_initialize_pipe`` op, else the platform's seed 003 default);
* no popped tile (or TALLOCed slot) is used after its TFREE (TPUSH), following copies,
  loop-carried values and if-results;
* a TFREE's ``split=`` frees the lanes its TPOP took (:func:`~ptopipe.protocol.geometry.free_split_problem`:
  the Cube's TFREE of a V2C slot tells TILE_NO_SPLIT from a split); a TFREE frees the oldest
  held slot whatever tile it names (so a tile read after a TFREE naming a newer one is a use
  after free, reported at that read, as the run reports it);
* no TPOP stays unfreed at the end of a path (a missing TFREE), and no TFREE frees
  nothing;
* every load / store's GM window lies within its tensor's static shape;
* a TFREE the kernel wrote follows every read of its popped tile where the protocol's free
  signal does not (:meth:`ProtocolModel.free_needs_event`: pto-isa on A5 sends the free from
  one pipe, so a TSTORE of the popped tile on MTE3 needs an event to the free's pipe or a
  barrier before the TFREE; a TFREE the compiler placed gets it from LowerPlatform);
* the producer pushes as many tiles as each consumer lane pops (AIV producers: per lane)
  for every value of the kernel's integer scalars (:mod:`.symbolic`; the failing values
  otherwise), and the k-th push's tile matches the k-th pop's (FIFO order:
  dtype, split and whole-slot shape; an AIV side's tile is its part of the slot) and is
  popped in the layout the push leaves in the slot (``geometry.slot_layout``);
* both Vector lanes take part in a TILE_NO_SPLIT pipe (the same number of transfers), and
  only one writes a V2C slot (AIV1 replays on empty tiles in a function marked no-split); a
  ring of one lane (``lanes=1``) takes no split push (AIV1's part would go to no one);
* every tile a TPUSH / TPOP moves fits the ring's SLOT_SIZE (its whole slot tile);
* a split TPUSH's tile divides between the two Vector cores (``protocol.geometry``'s
  odd_split_problem: an odd split only Cube->Vector through a ring in GM; split_push_problem:
  an even extent; an Acc pushed into the Vector cores' UB, pto-isa's A5 dual-mode TMOV rule -
  a multiple of 32 columns for TILE_LEFT_RIGHT; a Vector core's TILE_LEFT_RIGHT part pushed
  into the Cube's L1, rows of a multiple of 32 bytes);
* both ends of a pipe declare the same DIR_MASK, SLOT_SIZE, SLOT_NUM and lanes
  (:mod:`ptopipe.ir.pipe_config`, reported at the init of the side that differs);
* for each combination of one path per core whose facts agree, the cores' push / pop /
  free orders complete when run against each other, for every trip count of a loop of
  unknown trip count (no two cores waiting for each other forever, :mod:`.pipe_deadlock`;
  reported at each stuck op).

Paths of the two kernels are paired when their facts about shared unknowns (a scalar
parameter both kernels take) agree.  A finding names the values of the scalars it happens
with; what cannot be decided for every value (a trip count that is not affine ...) is a
warning starting with :data:`NOT_PROVEN` (:func:`not_proven`), a failing status of
``check --static``.  Errors: :class:`~ptopipe.errors.CompileError` at the DSL line:col of
the op, naming the path (loop iterations, branches) and a fix; :func:`verify` returns all
findings, :func:`run` raises the first with the others as details.
"""
from __future__ import annotations

from ..arch.platform import get_platform
from ..arch.vocab import Direction, TileLayout, TileSplitAxis
from ..errors import CompileError
from ..ir.vocab import FunctionKind
from ..ir.first_step import first_steps
from ..arch.vocab import SyncPipe
from ..ir.opdefs import Barrier, FuncOp, RecordEvent, ReserveBufferOp, TFree, TPop, TPush, WaitEvent
from ..ir.pipe_config import pipe_config_mismatches, ring_of
from ..ir.ops import Ring
from ..ir.types import DTYPES, MemorySpace, TensorType, TileValueType, describe, itemsize
from ..protocol.geometry import (ONE_LANE, two_lanes_fix_pto, a_layout, full_shape, layout_fix, odd_split_problem,
                                 part_shape, pop_converts, pop_split_fits, share_problem,
                                 slot_layout, slot_shape, split_push_problem)
from ..protocol.model import compile_model, model_for, platform_kind
from ..protocol.slots import push_band, transfer_problems
from ..protocol.versions import parse as parse_protocol
from ..sim.pipesync import PTO_EVENTS
from itertools import combinations, product

from .expand_mixed import RING_NAME
from .insert_tfree import aliases, read_pipe
from .pipe_deadlock import stuck_for_all
from .pipe_paths import Explorer, Incomplete, call_sites, unknown_scalars
from ..errors import ordinal
from .pipe_state import count_events, dir_name, hold_limit, lanes_of, line
from .symbolic import const, constraints, decide, ge, witness_text
from .util import compiler_made, consumer_kind, init_ops, ring_buffer, ring_in_gm, slot_num, ways
from .properties import IRProperty
from .remarks import remarks_of

NAME = "verify-pipes"
REQUIRED = frozenset({IRProperty.MIXED_KERNELS_EXPANDED})
PRODUCED = frozenset({IRProperty.PIPES_VERIFIED})
INVALIDATED = frozenset()

C2V, V2C = Direction.DIR_C2V, Direction.DIR_V2C


def run(program, ctx):
    """The pass: raise the first finding (the others in its details); else size the
    compiler's staging rings by the hold bound it proved (:func:`size_staging`) and return
    ``program``."""
    v = _Verifier(program, get_platform(getattr(ctx, "platform", "a2a3")),
                  getattr(ctx, "warnings", None), getattr(ctx, "protocol", "spec") or "spec",
                  getattr(ctx, "scalars", None), declared=getattr(ctx, "ranges", None),
                  remarks=remarks_of(ctx), as_ptoas=getattr(ctx, "as_ptoas", False))
    found = v.verify()
    if found:
        first = found[0]
        for e in found[1:]:
            first.add_detail(f"also: {e.what} (at {e.where})")
        first.findings = [e.to_dict() for e in found]
        raise first
    size_staging(program, v.plat, v.held_bounds())
    return program


def size_staging(program, plat, bounds: dict) -> None:
    """LocalSlotNum of each pipe ExpandMixedKernel made with its rings in GM (A2A3): a
    consumer stages every popped tile in one of LocalSlotNum slots of its reserve_buffer and
    never holds more than ``bounds[function][ring]`` popped tiles at once (the hold
    bound this pass proved on every path), so that many slots - not SLOT_NUM - are reserved.
    Both inits of the pipe carry the one LocalSlotNum (a pipe both ways: the larger bound,
    an init checks the reserve of each of its rings against it).  A pipe whose inits or
    reserves the user wrote, or whose functions were not both fully explored, keeps its
    size."""
    funcs = {f.sym_name: f for f in program.body if f.is_a(FuncOp)}
    made = compiler_made(program)
    ends = {}                                   # (the rings' ways, id) -> [(function, init)]
    for name in made & bounds.keys():
        for init in init_ops(funcs[name]):
            ends.setdefault((ways(init), init.pipe_id or 0), []).append((funcs[name], init))
    for (pipe_ways, _), pair in ends.items():
        if len(pair) != 2 or {f.kind for f, _ in pair} != {FunctionKind.AIC, FunctionKind.AIV}:
            continue
        init = pair[0][1]
        n = slot_num(init, plat)
        if not ring_in_gm(init, plat) or any(i.local_slot_num != n for _, i in pair):
            continue
        bufs, held = [], 1
        for way in pipe_ways:
            fn, i = next((f, i) for f, i in pair if consumer_kind(way) is f.kind)
            buf = ring_buffer(fn, i, way)
            if (buf is None or not buf.is_a(ReserveBufferOp) or buf.buffer_name not in RING_NAME.values()
                    or buf.size != n * i.slot_size):
                break
            bufs.append(buf)
            held = max(held, bounds[fn.sym_name].get(Ring(C2V if way == "C2V" else V2C, i.pipe_id), 0))
        else:
            if held < n:
                for _, i in pair:
                    i.local_slot_num = held
                for buf in bufs:
                    buf.size = held * init.slot_size


def _ring_slots(traces: dict, cfn, n: int, plat, model=None) -> tuple:
    """``(slot_num, rules)``: ring -> SLOT_NUM of every ring the cores' traces use (its init's
    in the Cube function ``cfn``; ``n``, the first init's, for a ring no init there sets up)
    and, with a protocol ``model``, ring -> its :meth:`~ptopipe.protocol.model.ProtocolModel.static_ring`."""
    nums, gm = {}, {}
    for i in init_ops(cfn):
        for r in i.rings:
            nums[r], gm[r] = slot_num(i, plat), ring_in_gm(i, plat)
    for trace in traces.values():
        for e in trace:
            for entry in (e[2] if e[0] == "loop" else (e,)):
                nums.setdefault(entry[1], n)
    rules = {r: model.static_ring(k, gm.get(r, plat.ring_in_gm)) for r, k in nums.items()} if model else None
    return nums, rules


def _culprit_first(found: list) -> list:
    """A TPOP whose tile disagrees with its TPUSH (``fifo_type``) is the culprit when the
    TFREE of its slot disagrees with it too (``split_mismatch``: the TFREE matches the
    push): that finding goes first, so the error names the TPOP's line.  Among the
    push / pop count findings, a TPOP that waits forever goes before a TPUSH never popped:
    the wait is where the device hangs, and the unpopped push of another ring may be one
    the hung core never reaches.  A transfer finding whose push comes after another's pop
    goes after it (:func:`_run_order`), and before what the run finds only at the kernel's
    end (a slot never freed, a push never popped): a run that gets there has made that TPOP."""
    first = [e for e in found if getattr(e, "kind", None) == "fifo_type" and any(
        getattr(g, "kind", None) == "split_mismatch" and getattr(g, "pop", None) is e.op for g in found)]
    found = _run_order(first + [e for e in found if e not in first] if first else found)
    for later in (_at_exit, _waits_on_other_core):
        found = _transfers_before(found, later)
    counts = [k for k, e in enumerate(found) if getattr(e, "kind", None) == "count"]
    hangs = [found[k] for k in counts if _is_pop(getattr(found[k], "op", None))]
    if not hangs or found[counts[0]] in hangs:
        return found
    rest = [e for e in found if e not in hangs]
    return rest[:counts[0]] + hangs + rest[counts[0]:]


def _transfers_before(found: list, later) -> list:
    """``found`` with the transfer findings (:data:`TRANSFER_KINDS`) that come after the first
    finding ``later(finding, transfer)`` says the run meets after them moved before it."""
    for k, e in enumerate(found):
        moved = [t for t in found[k + 1:] if getattr(t, "kind", None) in TRANSFER_KINDS and later(e, t)]
        if moved:
            rest = [x for x in found if x not in moved]
            return rest[:k] + moved + rest[k:]
    return found


def _at_exit(e, _t) -> bool:
    """Does the run find ``e`` only at the kernel's end (a slot never freed, a push never
    popped)?  A run that gets there has made every TPOP, a transfer finding's too."""
    kind = getattr(e, "kind", None)
    return kind == "missing_tfree" or kind == "count" and not _is_pop(getattr(e, "op", None))


def _waits_on_other_core(e, t) -> bool:
    """Is ``e`` a TPOP waiting forever for a push the other core never makes, and transfer
    finding ``t`` a TPOP of that other core?  That core ran to its end (its TPOP with it):
    the run stops there before it finds the wait."""
    return getattr(e, "kind", None) == "count" and _is_pop(getattr(e, "op", None)) \
        and _func_of(e.op) is not _func_of(getattr(t, "op", None))


def _func_of(op):
    while op is not None and not op.is_a(FuncOp):
        op = op.parent_op
    return op


def _run_order(found: list) -> list:
    """``found`` with each transfer finding (a TPOP that does not take its TPUSH's tile:
    :meth:`_Verifier.fifo`) moved before the one whose push its core makes after this
    finding's pop: the run stops at the pop, that push is never made (a Cube popping a tile
    too small, then pushing what it computed from it: the run fails at the Cube's pop, not
    at the Vector's later pop of the result)."""
    def before(y, x) -> bool:
        sent, taken = getattr(x, "transfer", (None, None))[0], getattr(y, "transfer", (None, None))[1]
        return sent is not None and taken is not None and sent[0] is taken[0] and taken[1] < sent[1]
    out = []
    for e in found:
        at = next((k for k, x in enumerate(out) if before(e, x)), None)
        out.insert(len(out) if at is None else at, e)
    return out


def _trace_at(path, d, kind: str, k: int):
    """``(path, index)`` of the ``k``-th ``kind`` ("push" / "pop") of ring ``d`` in
    ``path``'s trace, None when a loop of unknown trip count comes first (its entries are
    not one per op)."""
    for i, e in enumerate(path.trace):
        if e[0] == "loop":
            return None
        if e[0] == kind and e[1] == d:
            if k == 0:
                return path, i
            k -= 1
    return None


def _is_pop(op) -> bool:
    return op is not None and hasattr(op, "is_a") and op.is_a(TPop)


def verify(program, platform="a2a3", warnings: list | None = None, protocol="spec",
           known: dict | None = None, ranges: dict | None = None, remarks=None,
           size: bool = False) -> list:
    """Every finding of ``program`` (a ``pl.program`` op) under ``protocol`` as
    CompileErrors, in the order found; messages about skipped checks go to ``warnings``
    (and, as missed remarks at the function, to ``remarks``, a :class:`~.remarks.Remarks`).
    ``known``: scalar parameter values (by name) to verify with; others are unknowns, proven
    for every value >= 0, or within ``ranges`` (name -> (lo, hi), inclusive; hi None: no
    upper bound) where declared.  ``size``: with no finding, size the compiler's staging
    rings in ``program`` by the proven hold bound, as the pass does (:func:`size_staging`),
    for the passes after it to check what a compile makes."""
    plat = get_platform(platform)
    v = _Verifier(program, plat, warnings, protocol, known, declared=ranges, remarks=remarks)
    found = v.verify()
    if size and not found:
        size_staging(program, plat, v.held_bounds())
    return found


def not_proven(warnings) -> list:
    """The reasons, among ``warnings``, why VerifyPipes could not prove a program for every
    value of its integer scalars (a failing status of ``check --static``, never a PASS)."""
    return [w[len(NOT_PROVEN) + 2:] for w in warnings or () if w.startswith(NOT_PROVEN)]


#: the start of a warning saying what VerifyPipes could not prove (:func:`not_proven`)
NOT_PROVEN = "VerifyPipes: not proven for all values"
#: how deep a counterexample's exact re-verification may nest (values found while verifying
#: with the values of another counterexample)
MAX_DEPTH = 2
#: the most combinations of one path per core whose orders the deadlock check runs
MAX_COMBOS = 64
#: the findings of a TPOP that does not take what its TPUSH sent (:meth:`_Verifier.transfer`)
TRANSFER_KINDS = ("share", "fifo_type", "layout", "slot_layout")
#: the values of each integer scalar, and the most scalars, :meth:`_Verifier.small_witness`
#: verifies a deadlock the nested loops leave undecided with
SMALL_VALUES = (1, 2, 3)
SMALL_PARAMS = 3
#: the integer scalar types (the unknowns a program is proven for)
INT_SCALARS = tuple(d for d in DTYPES if d[0] in "iu")
#: the constant differences between two loops' trip counts the deadlock check tries
#: (:meth:`_Verifier.same_trips`): a ragged tail runs one more, seldom more
_TRIP_DELTAS = (0, 1, -1, 2, -2)


class _Verifier:
    def __init__(self, program, plat, warnings, protocol="spec", known=None, depth=0, declared=None,
                 remarks=None, as_ptoas=False):
        self.program, self.plat, self.known = program, plat, known
        # a .pto file: ptoas's InsertSync places its events, TFREE's order included
        self.as_ptoas = as_ptoas
        self.remarks = remarks if remarks is not None else remarks_of(None)
        self.declared = declared or {}
        # ("param", name) -> (lo, hi exclusive) of the declared ranges, as loop ranges are kept
        self.param_ranges = {("param", k): (lo, None if hi is None else hi + 1)
                             for k, (lo, hi) in self.declared.items()}
        self.protocol_arg = protocol    # (as given: a named library version stays one)
        self.model = compile_model(protocol, platform_kind(plat))
        # the rules a run under ``protocol`` follows (a CPU simulator's, a release's bugs)
        self.run_model = model_for(*parse_protocol(protocol)[:1], platform_kind(plat),
                                   library=parse_protocol(protocol)[1])
        self.protocol = self.model.protocol
        self.warnings = warnings if warnings is not None else []
        self.findings, self.seen = [], set()
        self.explored: dict = {}
        self.depth = depth
        self.ranges: dict = dict(self.param_ranges)   # + loop variable symbol -> (lo, hi)
        self.stats: dict = {}           # "runs": trip counts the deadlock check ran
        self.unproven_ops: set = set()  # id(op) of the ops whose bounds are not proven

    def finding(self, kind, op, msg, fix, pop=None, facts=None, ranges=None, values=None,
                details=None, at=None) -> None:
        """Record finding ``kind`` at ``op`` (``pop``: the TPOP a TFREE finding is about; ``at``:
        the Loc to report it at, when not ``op``'s) on a path whose ``facts`` (condition symbol
        -> truth; ``ranges``: its loop variables' bounds) are solved for the values of the
        unknowns it happens with: a path no values take is no finding; ``values`` (words) are
        given when already known."""
        key = (kind, id(op))
        if key in self.seen:
            return
        if kind == "missing_tfree" and self._pop_frees(op):
            # the library's TPOP frees the slot itself on this ring (its TFREE is a no-op): the
            # kernel runs there, as its run says - a warning, not a refusal
            self.seen.add(key)
            self.warn(f"{op.loc}: {msg}; under {self.protocol_arg} on {self.plat.name} the TPOP frees "
                      "its slot itself, so this runs here, but the kernel leaks the slot under the "
                      "seed-003 protocol and on A5's local rings")
            return
        if kind == "free_without_pop" and self._free_is_noop(op):
            # likewise the library's TFREE after such a TPOP does nothing: the extra one runs
            self.seen.add(key)
            self.warn(f"{op.loc}: {msg}; under {self.protocol_arg} on {self.plat.name} the TPOP frees "
                      "its slot itself and the TFREE after it does nothing, so this runs here, but it "
                      "frees a slot never popped under the seed-003 protocol and on A5")
            return
        if facts and values is None:
            rng = {**(ranges or {}), **self.param_ranges}
            cons, unhandled = constraints(facts, rng)
            verdict, w = decide(cons, rng)
            if verdict == "unsat":
                return                          # an impossible path (contradicting facts)
            values = witness_text(w) if verdict == "sat" and not unhandled else None
        self.seen.add(key)
        if values:
            msg = f"{msg} (fails when {values})"
        lines = [d for d in (details, f"failing values: {values}" if values else None) if d]
        at = at if at is not None else op.loc if op is not None else None
        e = CompileError(msg, where=str(at) if at else None, fix=fix, details="\n".join(lines) or None)
        e.kind, e.op, e.pop, e.values = kind, op, pop, values
        self.findings.append(e)

    def _free_is_noop(self, free) -> bool:
        """Is TFREE ``free`` a tile TFREE (it names no popped GM tensor: pto-isa's
        ``TFREE(pipe)``) of a ring whose tile TPOP frees the slot itself, where the library's
        TFREE then does nothing (pto-isa on A2A3; on A5 it frees the slot again)?"""
        obj = free.obj if len(free.operands) > 1 else None
        return (not (obj is not None and isinstance(obj.type, TensorType))
                and self._pop_frees(free, tile=True) and not self.model.tfree_after_pop_frees)

    def _pop_frees(self, pop, tile=None) -> bool:
        """Does TPOP ``pop`` free its slot itself (:meth:`ProtocolModel.pop_frees`), its ring
        being in GM on this platform (the init of its ring in its function says)?  ``tile``:
        whether it pops a tile (default: its result says)."""
        fn = pop
        while fn is not None and not fn.is_a(FuncOp):
            fn = fn.parent_op
        ring = ring_of(pop)
        init = next((i for i in init_ops(fn) if ring in i.rings), None) if fn is not None else None
        if tile is None:
            tile = isinstance(pop.result_type, TileValueType)
        return init is not None and self.model.pop_frees(ring_in_gm(init, self.plat), tile)

    def warn(self, msg: str) -> None:
        if msg not in self.warnings:
            self.warnings.append(msg)

    def unproven(self, why: str) -> None:
        """Record what VerifyPipes cannot prove for every value (:func:`not_proven`)."""
        self.warn(f"{NOT_PROVEN}: {why}")

    def first_steps(self, fn) -> None:
        """A ``pl.matmul_acc(acc, a, b, init_cond=c)`` step that may be the first into a
        ``pl.create`` accumulator must overwrite it (:mod:`ptopipe.ir.first_step`; the parser
        refuses a ``c`` false there for every value): one that depends on a value known
        only at run time is not proven - false with the given scalar values, a finding."""
        for step, made, holds, guarded in first_steps(fn, self.known):
            where = (f"the {step.name} at {step.loc} on its first step into the accumulator "
                     f"created at line {made.loc.line}")
            if not guarded:
                self.finding("first_step", step, f"{where} accumulates onto storage nothing has written "
                             "(no step overwrites it first)",
                             "overwrite the accumulator on the first step: pl.matmul_acc(acc, a, b, "
                             "init_cond=(k == <the loop's start>)), or write it with pl.matmul before "
                             "the loop")
            elif holds is False:
                given = ", ".join(f"{k}={v}" for k, v in sorted((self.known or {}).items()))
                self.finding("first_step", step, f"init_cond is false for {where}"
                             + (f" (with {given})" if given else "") + ": that step accumulates onto "
                             "storage nothing has written",
                             "make init_cond hold on the first iteration of the loop, e.g. "
                             "init_cond=(k == <its start>) (in a .pto: the scf.if condition that picks "
                             "pto.tmatmul over pto.tmatmul.acc)")
            elif holds is None:
                self.unproven(f"init_cond of {where} depends on values known only at run time: "
                              "where it is false, that step accumulates onto storage nothing has "
                              "written")
                self.remarks.missed(NAME, step, "init_cond not proven to hold on the first step "
                                                f"into the accumulator created at line {made.loc.line}")

    def verify(self) -> list:
        funcs = [f for f in self.program.body if f.is_a(FuncOp)]
        for m in pipe_config_mismatches(self.program, self.plat):
            self.findings.append(CompileError(m.what, where=str(m.culprit.init.loc), details=m.details,
                                              fix=m.fix))
        for fn in funcs:
            self.first_steps(fn)
        for kind in (TPush, TPop):        # the push first, as the run reports it
            for fn in funcs:
                self.slots_fit(fn, kind)
                if kind is TPush:
                    self.splits_divide(fn)
        explored, sites, range_fails = {}, call_sites(self.program), []
        for fn in funcs:
            slot_num = self.slot_nums(fn)
            lanes = {}
            try:
                for lane in lanes_of(fn):
                    ex = Explorer(fn, lane, slot_num, self.finding, self.known, self.param_ranges,
                                  sites.get(fn.sym_name))
                    lanes[lane] = (ex.run(), ex)
                    self.ranges.update(ex.ranges)
                    range_fails.extend(ex.range_fails.values())
                    for k, why in ex.not_affine.items():
                        if k not in self.unproven_ops:        # once per op, not per lane
                            self.unproven_ops.add(k)
                            self.unproven(why)
            except Incomplete as e:
                self.unproven(f"{fn.sym_name} was not fully explored ({e}); its cross-core "
                              "counts are not checked")
                self.remarks.missed(NAME, fn, f"{fn.sym_name} not fully verified ({e}): its "
                                              "cross-core counts are not checked")
                continue
            explored[fn.sym_name] = (fn, lanes)
        self.explored = explored
        for fn in funcs:
            self.free_order(fn, explored.get(fn.sym_name))
        self.cross(funcs, explored)
        if not self.findings:
            for kind, op, what, fix, values, at in range_fails:
                self.finding(kind, op, what, fix, values=values, at=at)
        return _culprit_first(self.findings)

    def free_order(self, fn, explored=None) -> None:
        """Each TFREE the kernel wrote (the compiler's carry ``read_on``: LowerPlatform orders
        them) follows the reads of the tile it frees on every pipe the protocol's free signal
        does not wait for (:meth:`ProtocolModel.free_needs_event`): an event from that pipe to
        the free's, or ``pl.barrier()``, between the last such read and the TFREE - on a ring
        whose producer may reuse a slot (more pops than SLOT_NUM on some path of ``fn``'s
        ``explored`` lanes, or a count not known).  The TFREE frees the oldest slot its ring
        holds; a pop and free in different blocks are left to the run's race checker.  A ``.pto``
        file too: ptoas's InsertSync orders the tile dependencies it sees, and a TFREE is none -
        ptoas 0.27 places no event before a ``pto.tfree_from_aic`` (with --enable-insert-sync a
        PIPE_MTE3 -> PIPE_S set after the store, waited for after the free)."""
        way = "C2V" if fn.kind is FunctionKind.AIV else "V2C"
        inits = {r: i for i in init_ops(fn) for r in i.rings}

        def wraps(ring) -> bool:
            init = inits.get(ring)
            if explored is None or init is None:
                return True
            n = slot_num(init, self.plat)
            return any(_unknown(evs) or len(evs) > n
                       for paths, _ex in explored[1].values() for p in paths
                       for evs in (p.events.get(ring, []),))
        held: dict = {}
        for op in fn.walk():
            if op.is_a(TPop):
                held.setdefault(ring_of(op), []).append(op)
            elif op.is_a(TFree):
                q = held.get(ring_of(op)) or []
                pop = q.pop(0) if q else None
                if (pop is None or op.read_on is not None or pop.parent is not op.parent
                        or not isinstance(pop.tile.type, TileValueType)   # a GM slot: the kernel's TLOADs
                        or not wraps(ring_of(op))):
                    continue
                init = inits.get(ring_of(op))
                in_gm = ring_in_gm(init, self.plat) if init is not None else self.plat.ring_in_gm
                self.unordered_reads(pop, op, way, in_gm)

    def unordered_reads(self, pop, free, way: str, in_gm: bool) -> None:
        """The finding of a read of ``pop``'s tile before ``free`` (the same block) that the
        free signal does not follow (see :meth:`free_order`)."""
        model = self.run_model
        sig = f"PIPE_{model.free_signal_pipe(way, in_gm).name}"
        tiles = aliases(pop.tile)
        pending: dict = {}                  # pipe name -> the last read on it not yet ordered
        recorded: set = set()               # (src, dst) recorded since
        x = pop.next
        while x is not None and x is not free:
            for o in x.walk():
                if o.is_a(Barrier) and o.pipe is SyncPipe.PIPE_ALL:
                    pending.clear()
                elif o.is_a(RecordEvent):
                    recorded.add((o.src.value, o.dst.value))
                elif o.is_a(WaitEvent) and o.dst.value == sig and (o.src.value, sig) in recorded:
                    pending.pop(o.src.value, None)
                else:
                    for t in tiles:
                        if any(u.owner is o for u in t.uses):
                            p = read_pipe(o, t)
                            if p is not None and model.free_needs_event(way, in_gm, p):
                                pending[f"PIPE_{p.name}"] = o
            x = x.next
        for src, read in pending.items():
            what = f"pl.{read.dsl}" if getattr(read, "dsl", None) else read.name
            if self.as_ptoas:
                ew = PTO_EVENTS
                fix = (f"order the read before the free: {ew.call(ew.set, src, sig, 0)} and "
                       f"{ew.call(ew.wait, src, sig, 0)} (or {ew.barrier}) between the {what} and the TFREE")
            else:
                fix = (f"order the read before the free: pl.record_event(pl.{src}, pl.{sig}, 0) and "
                       f"pl.wait_event(pl.{src}, pl.{sig}, 0) (or pl.barrier()) between the {what} and the "
                       "TFREE (in a .pto: pto.set_flag / pto.wait_flag); a TFREE the compiler places gets "
                       "them itself")
            self.finding("free_order", free,
                         f"this TFREE signals the free of the slot popped at {line(pop)} from {sig} without "
                         f"waiting for {src}, where the {what} at {line(read)} still reads the popped tile "
                         f"({model.name} on {self.plat.name}: the consumer's free is one signal on {sig}), "
                         "so the producer's next TPUSH may overwrite the slot under that read (a data race "
                         "on the device)", fix)

    def held_bounds(self) -> dict:
        """function name -> :class:`~ptopipe.ir.ops.Ring` -> the most popped slots it holds at
        once on any path of any lane (its functions fully explored only)."""
        out = {}
        for name, (_fn, lanes) in self.explored.items():
            b = out[name] = {}
            for _paths, ex in lanes.values():
                for d, k in ex.max_held.items():
                    b[d] = max(b.get(d, 0), k)
        return out

    def slots_fit(self, fn, kind) -> None:
        """Every tile a ``kind`` op (TPUSH / TPOP) moves fits its ring's SLOT_SIZE: the tile one
        slot holds (:func:`~ptopipe.protocol.geometry.slot_shape`: the Cube-side whole tile, or,
        in a C2V ring in the Vector cores' UB, one Vector core's part of it)."""
        sizes = {}
        for init in init_ops(fn):
            for r in init.rings:
                if isinstance(init.slot_size, int):
                    sizes[r] = (init.slot_size, init)
        for op in fn.walk():
            if not op.is_a(kind):
                continue
            t = op.tile.type            # the pushed tile (TPUSH) or the popped one (TPOP)
            r = ring_of(op)
            got = sizes.get(r)
            if got is None or not isinstance(t, TileValueType):
                continue
            own_shape = tuple(t.shape)
            whole = full_shape(op.split, *own_shape) if fn.kind is FunctionKind.AIV else own_shape
            shape = slot_shape(r.way, ring_in_gm(got[1], self.plat), op.split, *whole)
            need = shape[0] * shape[1] * itemsize(t.dtype)
            if need > got[0]:
                what = op.dsl
                own = own_shape[0] * own_shape[1] * itemsize(t.dtype)
                if shape == own_shape:
                    moves = f"{describe(t)} ({need} bytes)"
                elif shape == whole:
                    moves = (f"{describe(t)} ({own} bytes), its part of a {shape[0]}x{shape[1]} slot tile "
                             f"of {need} bytes (split {op.split.name})")
                else:
                    moves = (f"{describe(t)} ({own} bytes), whose {op.split.name} part each Vector core's "
                             f"slot in its UB holds: {shape[0]}x{shape[1]}, {need} bytes")
                self.finding("slot_size", op,
                             f"this {what} moves {moves} but the "
                             f"{_dir(r)} ring's SLOT_SIZE is {got[0]} bytes (init at "
                             f"{line(got[1])}); a slot holds the static tile whatever its valid "
                             "region (a popped tile is bound at its slot and spans the next slots if "
                             "larger; ptoas does not check this)",
                             f"declare SLOT_SIZE {need} (or more) on both *_initialize_pipe calls, "
                             "or move smaller tiles")
                continue
            span = self.slot_span(op, r.way, ring_in_gm(got[1], self.plat), t)
            if span > got[0]:
                self.finding("slot_size", op,
                             f"this {op.dsl} of {describe(t)} declared {'x'.join(map(str, t.static_shape))} "
                             f"reaches byte {span} of its slot, where the protocol's code puts its rows (at the "
                             f"tiles' static pitch), but the {_dir(r)} ring's SLOT_SIZE is {got[0]} bytes (init "
                             f"at {line(got[1])})",
                             f"declare SLOT_SIZE {span} (or more) on both *_initialize_pipe calls, or move "
                             "smaller tiles")

    def slot_span(self, op, way: str, in_gm: bool, t) -> int:
        """The bytes of its slot a TPUSH / TPOP of ``t`` reaches as the protocol's placement
        lays it out (:mod:`~ptopipe.protocol.slots`, what the run's TPUSH / TPOP check): a push's
        rows at their pitch (each lane's, each C2V consumer slot), a pop's whole static tile."""
        item, static, valid = itemsize(t.dtype), tuple(t.static_shape), tuple(t.shape)
        if op.is_a(TPop):
            return static[0] * static[1] * item
        kind, split = self.model.slot_placement, op.split
        if split not in (TileSplitAxis.TILE_NO_SPLIT, TileSplitAxis.TILE_UP_DOWN, TileSplitAxis.TILE_LEFT_RIGHT):
            return 0
        return max(push_band(kind, way, in_gm, split, static, valid, lane).span() for lane in (0, 1)) * item

    def splits_divide(self, fn) -> None:
        """Every split TPUSH of ``fn`` divides its tile between the two Vector cores
        (:func:`~ptopipe.protocol.geometry.split_push_problem`, the rule the run's TPUSH checks)."""
        rings = {r: i for i in init_ops(fn) for r in i.rings}
        for op in fn.walk():
            if not op.is_a(TPush) or fn.kind not in (FunctionKind.AIC, FunctionKind.AIV):
                continue
            t = op.tile.type
            if not isinstance(t, TileValueType):
                continue
            init = rings.get(ring_of(op))
            in_gm = ring_in_gm(init, self.plat) if init is not None else self.plat.ring_in_gm
            odd = odd_split_problem(op.split, ring_of(op).way, in_gm)
            if odd is not None:
                self.finding("split_geometry", op, f"this {op.dsl} {op.split.name} of {describe(t)} on the "
                             f"{_dir(ring_of(op))} ring: {odd[0]}", odd[1])
                continue
            if fn.kind is FunctionKind.AIV and in_gm:
                continue                    # a Vector core's part stored to GM: no layout rule
            bad = split_push_problem(op.split, tuple(t.static_shape), tuple(t.shape[-2:]), itemsize(t.dtype),
                                     acc_to_ub=t.space is MemorySpace.Acc and not in_gm,
                                     vec_to_l1=fn.kind is FunctionKind.AIV)
            if bad is not None:
                self.finding("split_geometry", op, f"this {op.dsl} {op.split.name} of {describe(t)} on the "
                             f"{_dir(ring_of(op))} ring: {bad[0]}", bad[1])

    def slot_nums(self, fn):
        """``ring -> HoldLimit`` for ``fn`` (:func:`.pipe_state.hold_limit` of the ring's
        init; a ring no init sets up: of the first init)."""
        inits = init_ops(fn)
        tiles = {ring_of(op) for op in fn.walk() if op.is_a(TPop) and isinstance(op.result_type, TileValueType)}
        lims = {r: hold_limit(i, fn.kind, self.plat, self.model, self.protocol.value, r in tiles)
                for i in inits for r in i.rings}
        first = hold_limit(next(iter(inits), None), fn.kind, self.plat, self.model,
                           self.protocol.value)
        return lambda d: lims.get(d, first)

    # -- the two kernels together ------------------------------------------------------
    def cross(self, funcs, explored) -> None:
        aic = [f for f in funcs if f.kind is FunctionKind.AIC]
        aiv = [f for f in funcs if f.kind is FunctionKind.AIV]
        if len(aic) != 1 or len(aiv) != 1:
            if aic and aiv:
                self.warn(f"VerifyPipes: {len(aic)} AIC and {len(aiv)} AIV functions; push/pop "
                          "counts are checked for one AIC + one AIV pair only")
                self.remarks.missed(NAME, aic[0], f"push / pop counts not checked: {len(aic)} AIC "
                                                  f"and {len(aiv)} AIV functions (one pair only)")
            return
        c, v = (explored.get(f.sym_name) for f in (aic[0], aiv[0]))
        if c is None or v is None:
            return
        for d in _rings(aic[0], aiv[0]):
            prod, cons = (c, v) if d.direction == C2V else (v, c)
            if self.nosplit_two_lanes(d, prod, v) is False or self.lanes_agree(d, v) is False or \
                    self.one_lane_split(d, prod, v) is False:
                continue
            self.counts(d, prod, cons)
        if all(_at_exit(e, None) and getattr(e, "kind", None) == "count" for e in self.findings):
            # pushes never popped are found at the kernel's end: the cores may hang before
            # it (a push waiting for a slot the consumer never frees, a cycle) - that first
            before, notes = list(self.findings), len(self.warnings)
            self.deadlock(c, v)
            hangs = [e for e in self.findings if e not in before]
            self.findings = hangs + before
            if before:                  # failed already: what the hang check cannot decide is moot
                self.warnings[notes:] = [w for w in self.warnings[notes:] if not w.startswith(NOT_PROVEN)]

    def deadlock(self, c, v) -> None:
        """The cores' pipe op orders run against each other (:mod:`.pipe_deadlock`), for each
        combination of one path per core whose facts agree, and for every trip count of a
        loop of unknown trip count (:func:`.pipe_deadlock.stuck_for_all`)."""
        (cfn, clanes), (vfn, vlanes) = c, v
        names, cores = {}, []
        for fn, lanes in ((cfn, clanes), (vfn, vlanes)):
            for lane, (paths, _) in lanes.items():
                cores.append((lane, paths))
                names[lane] = _who(fn.sym_name, lane)
        init = next(iter(init_ops(cfn)), None)
        if init is None:
            return
        n = slot_num(init, self.plat)
        combos = 0
        for k, choice in enumerate(product(*(paths for _, paths in cores))):
            if k >= MAX_COMBOS * 64:
                self.unproven("too many combinations of the cores' paths: deadlock freedom not "
                              "checked for them all")
                return
            if not all(_compatible(p, q) for p, q in combinations(choice, 2)):
                continue
            facts = {}
            for p in choice:
                facts.update(p.facts)
            traces = self.same_trips({lane: p.trace for (lane, _), p in zip(cores, choice)}, facts)
            if not any(traces.values()):
                continue
            combos += 1
            if combos > MAX_COMBOS:
                self.unproven(f"more than {MAX_COMBOS} combinations of the cores' paths: deadlock "
                              "freedom not checked for the others")
                return
            nums, rules = _ring_slots(traces, cfn, n, self.plat, self.run_model)
            counts: dict = {}
            verdict = stuck_for_all(traces, tuple(k for k in vlanes), nums, self.stats, rules, counts)
            if verdict[0] == "unproven":
                if _nested(traces) and self.small_witness():
                    return
                self.unproven(f"deadlock freedom: {verdict[1]}")
                continue
            if verdict[0] == "stuck":
                values = self.stuck_values(facts, traces, verdict[1])
                if values is None and verdict[1] and _nested(traces):
                    # a product of two trip counts need not take every value: only values an
                    # exact exploration hangs with make the hang a finding
                    if self.small_witness():
                        return
                    self.unproven(f"deadlock freedom: the cores hang after {verdict[1]} iterations of "
                                  "nested loops of unknown trip count, for no values found")
                    continue
                if values is not False:
                    self.stuck(verdict[2], names, values, rules, counts)
                    return

    def small_witness(self) -> bool:
        """The deadlock check left undecided (nested loops of unknown trip count): the program
        verified again exactly - every loop unrolled, as with a scenario's values - with small
        values of its integer scalars (each of :data:`SMALL_VALUES` within its declared range,
        at most :data:`SMALL_PARAMS` unknowns, the smallest sums first).  The first values that
        hang, or leave a ring's push / pop counts unequal, are that finding, naming them: an
        exact exploration's finding is one a run with those values meets.  True when one was
        made."""
        if self.depth >= MAX_DEPTH:
            return False
        names = sorted(unknown_scalars(self.program, INT_SCALARS) - set(self.known or {}))
        if not names or len(names) > SMALL_PARAMS:
            return False
        choices = []
        for n in names:
            lo, hi = self.declared.get(n, (None, None))
            vals = [v for v in SMALL_VALUES if (lo is None or v >= lo) and (hi is None or v <= hi)]
            if not vals:
                return False
            choices.append(vals)
        for combo in sorted(product(*choices), key=sum):
            known = dict(self.known or {})
            known.update(zip(names, combo))
            again = _Verifier(self.program, self.plat, [], self.protocol_arg, known, MAX_DEPTH, self.declared)
            found = [e for e in again.verify() if getattr(e, "kind", None) in ("deadlock", "count")]
            if found:
                text = ", ".join(f"{k}={v}" for k, v in zip(names, combo))
                for e in found[:1]:
                    self.finding(e.kind, e.op, e.what, e.fix, e.pop, values=text)
                    self.findings[-1].add_detail("found by verifying exactly with small values: the nested "
                                                 "loops' trip counts are products, not decided for every value")
                return True
        return False

    def same_trips(self, traces: dict, facts: dict) -> dict:
        """``traces`` with the loops of unknown trip count run as one loop where their trip
        counts differ by a constant for every value ``facts`` allow: each loop entry gets
        the shortest one's trip count, written as the first loop's, and its remaining
        iterations unrolled after it (``range((n + 15) // 16)`` against ``range(n // 16)``
        and a tail pop under ``n % 16 != 0``: on that path one more iteration).  The
        deadlock check then runs them as one loop; loops whose counts are not proven to
        differ by a constant are left as they are."""
        loops = [e for t in traces.values() for e in t if e[0] == "loop" and e[1] is not None]
        if len({e[1] for e in loops}) < 2:
            return traces
        cons, _ = constraints(facts, self.ranges)

        def never(c) -> bool:
            return decide(cons + [c], self.ranges, witness=False)[0] == "unsat"
        (lo, hi), extra = loops[0][1], {}
        for e in loops:
            if e[1] in extra:
                continue
            diff = (e[1][1] - e[1][0]) - (hi - lo)
            k = next((k for k in _TRIP_DELTAS if never((diff - const(k + 1), ">="))
                      and never((const(k - 1) - diff, ">="))), None)
            if k is None:
                return traces
            extra[e[1]] = k
        low = min(extra.values())
        if any(extra.values()) and not never((lo - hi - const(low + 1), ">=")):
            return traces           # the shortest may run fewer than 0 times: max(0, ...) differ
        ref = (lo, hi + const(low))

        def entries(t):
            for e in t:
                if e[0] == "loop" and e[1] in extra:
                    yield (e[0], ref) + e[2:]
                    yield from e[2] * (extra[e[1]] - low)
                else:
                    yield e
        return {core: list(entries(t)) for core, t in traces.items()}

    def stuck_values(self, facts, traces, trips):
        """The values of the unknowns that make a combination of paths whose facts are
        ``facts`` hang with its loop of unknown trip count run ``trips`` times (None: no
        loop): their words, None when there are none to name, False when no values do."""
        cons, unhandled = constraints(facts, self.ranges)
        loop = next((e for t in traces.values() for e in t if e[0] == "loop"), None)
        if loop is not None and trips is not None and not (loop[1][0].is_const() and loop[1][1].is_const()):
            lo, hi = loop[1]                    # (a known trip count is run one period only)
            cons = cons + ([(hi - lo - const(trips), "==")] if trips else [ge(lo, hi)])
        verdict, w = decide(cons, self.ranges)
        if verdict == "unsat":
            return False
        return witness_text(w) if verdict == "sat" and not unhandled and w else None

    def stuck(self, stuck, names, values, rules=None, counts=None) -> None:
        waits = {core: (f"{names[core]} waits in the {'TPOP' if kind == 'pop' else 'TPUSH'} of the "
                        f"{_dir(d)} ring at {line(op)} "
                        + ("for a tile not yet pushed" if kind == "pop" else "for a free slot"))
                 for core, (kind, d, op) in stuck.items()}
        withheld = {core: self.withheld(core, d, names, rules, counts)
                    for core, (kind, d, _op) in stuck.items() if kind == "push"}
        # one cycle, one finding: at the first stuck core's op, naming every other one
        for core, (kind, d, op) in list(stuck.items())[:1]:
            others = "; ".join(w for k, w in waits.items() if k != core) or \
                "the other cores have finished"
            sparse = next((w for w in withheld.values() if w), None)
            self.finding("deadlock", op,
                         f"the cores wait for each other forever: {waits[core]}, while {others} "
                         f"(a hang on the device{'; ' + sparse[0] if sparse else ''})",
                         (sparse[1] + "; or reorder the pushes and pops so that each TPOP's tile is "
                          "pushed before the pushing core waits for anything" if sparse else
                          "reorder the pushes and pops so that each TPOP's tile is pushed before "
                          "the pushing core waits for anything (push first, then pop the answer), "
                          "or give the ring more slots"), values=values or "")

    def withheld(self, core, d, names, rules, counts):
        """(cause, fix) when ``core``'s stuck TPUSH on ring ``d`` waits only for the protocol's
        sparse free notification (the consumer has freed enough slots for seed 003, not
        enough for a notification: :meth:`~ptopipe.protocol.model.StaticRing.withheld_credit`);
        None otherwise."""
        rule = (rules or {}).get(d)
        if rule is None or not counts:
            return None
        for ln in ((core,) if core is not None else sorted(k[1] for k in counts["push"] if k[0] == d)):
            i, freed = counts["push"][d, ln], counts["free"][d, ln]
            consumer = names[None if core is not None else ln]
            got = rule.withheld_credit(i, freed, consumer)
            if got is not None:
                # a DSL pipe sets no SyncPeriod (pto-isa's default): the fix is the ring's depth
                # or the lag
                return (f"under {self.run_model.name} on {self.plat.name}: {got[0]}",
                        f"{consumer}'s TFREEs reach the producer only every SyncPeriod = "
                        f"{rule.sync_period} TFREEs under {self.run_model.name}: deepen the ring "
                        "(slot_num= of both *_initialize_pipe calls) or push fewer tiles before "
                        "popping the answers")
        return None

    def lanes_agree(self, d, side):
        """No-split pipes: both Vector lanes transfer the same number of tiles."""
        fn, lanes = side
        if 1 not in lanes:                  # a one-lane pipe (lanes=1): AIV1 takes no part
            return True
        for p0 in lanes[0][0]:
            for p1 in lanes[1][0]:
                if not _compatible(p0, p1):
                    continue
                e0, e1 = p0.events.get(d, []), p1.events.get(d, [])
                if _unknown(e0) or _unknown(e1):
                    (c0, w0), (c1, w1) = count_events(e0), count_events(e1)
                    nosplit = any(e.split == TileSplitAxis.TILE_NO_SPLIT for e in e0 + e1 if e.op is not None)
                    if nosplit and (w0 or w1 or not (c0 - c1).is_zero()):
                        self.unproven(f"the lanes of the no-split {_dir(d)} pipe of {fn.sym_name} transfer "
                                      f"{w0 or c0.text()} and {w1 or c1.text()} tiles: not proven equal")
                    continue
                if len(e0) == len(e1):
                    continue
                longer, lane, other = (e0, 0, 1) if len(e0) > len(e1) else (e1, 1, 0)
                ev = longer[min(len(e0), len(e1))]
                if ev.split != TileSplitAxis.TILE_NO_SPLIT:
                    continue
                what = ev.op.dsl
                self.finding("absent_lane", ev.op,
                             f"lane AIV{other} does not take part in this {what} of the no-split "
                             f"{_dir(d)} pipe: {fn.sym_name} transfers {len(longer)} "
                             f"tile(s) on lane AIV{lane} but {min(len(e0), len(e1))} on lane "
                             f"AIV{other}{_ev_where(ev)}; with TILE_NO_SPLIT both Vector lanes take "
                             "part in every handshake (lane 1 replays it)",
                             f"run the {what} on both lanes (do not guard it with "
                             "get_subblockid()), or split the tile (TILE_UP_DOWN / TILE_LEFT_RIGHT)")
                return False
        if d.direction == V2C and fn.split is not TileSplitAxis.TILE_NO_SPLIT:
            return self.one_writer(fn, lanes, d)
        return True

    def nosplit_two_lanes(self, d, prod, vec) -> bool:
        """A5 gives a TILE_NO_SPLIT transfer one lane, AIV0 (the protocol model's
        ``nosplit_lane0``): on a pipe with AIV1 as a peer the first NO_SPLIT push breaks the
        handshake, where the run reports it (``isa.pipe.steps.check_nosplit_lanes``)."""
        fn, lanes = vec
        if not self.model.nosplit_lane0 or 1 not in lanes:
            return True
        pfn, plans = prod
        for p0 in next(iter(plans.values()))[0]:
            ev = next((e for e in p0.events.get(d, []) if e.op is not None
                       and e.split == TileSplitAxis.TILE_NO_SPLIT), None)
            if ev is not None:
                what = ev.op.dsl
                self.finding("nosplit_lanes", ev.op,
                             f"this {what} moves a TILE_NO_SPLIT tile on the {_dir(d)} pipe of "
                             f"{pfn.sym_name}, whose lanes are AIV0 and AIV1, but in "
                             f"{self.protocol.value} on {self.plat.name} a NO_SPLIT transfer has one lane, "
                             "AIV0: AIV1's side of the handshake is lost (a hang or a slot reused early)",
                             f"give the pipe one lane ({ONE_LANE}), or split the tile between the "
                             "lanes (TILE_UP_DOWN / TILE_LEFT_RIGHT)")
                return False
        return True

    def one_lane_split(self, d, prod, vec) -> bool:
        """A ring whose Vector side is one lane (``lanes=1``): a split push there divides each
        tile between two Vector cores, and AIV1's part goes to no one - where the run reports
        it (``isa.pipe.steps._one_lane_split``).  False after a finding."""
        fn, _lanes = vec
        if not any(d in i.rings and i.lanes == 1 for i in init_ops(fn)):
            return True
        pfn, plans = prod
        for paths, _ in plans.values():
            for p in paths:
                ev = next((e for e in p.events.get(d, []) if e.op is not None
                           and e.split != TileSplitAxis.TILE_NO_SPLIT), None)
                if ev is not None:
                    name = TileSplitAxis(ev.split).name
                    self.finding("one_lane_split", ev.op,
                                 f"this {ev.op.dsl} splits its tile {name} on the {_dir(d)} ring of "
                                 f"{pfn.sym_name}{_ev_where(ev)}, whose Vector side is one lane (lanes=1: "
                                 f"AIV0), but {name} divides each tile between two Vector cores: AIV1's "
                                 "part goes to no one (on A5 the Cube's split handshake also waits for "
                                 "AIV1's flags, a hang)",
                                 "move whole tiles through a one-lane ring (split=pl.TILE_NO_SPLIT at both "
                                 "ends: AIV0 handles each tile), or drop lanes=1 and let both lanes take "
                                 "their part")
                    return False
        return True

    def one_writer(self, fn, lanes, ring) -> bool:
        """V2C no-split pipes of two lanes: only one lane writes a slot of ``ring``.  Lane
        AIV1 of a function not marked no-split pushes its data too: both write the whole slot."""
        for p1 in lanes[1][0]:
            ev = next((e for e in p1.events.get(ring, []) if e.op is not None
                       and e.split == TileSplitAxis.TILE_NO_SPLIT), None)
            if ev is not None:
                self.finding("both_lanes_write", ev.op,
                             f"both Vector lanes write the whole slot in this TPUSH of the no-split "
                             f"{_dir(ring)} pipe{_ev_where(ev)}: {fn.sym_name} runs on AIV0 and "
                             "AIV1, and a TILE_NO_SPLIT tile is the whole slot (a race on the same "
                             "bytes)",
                             two_lanes_fix_pto(platform_kind(self.plat) == "a5") if self.as_ptoas else
                             "split the tile between the lanes (TILE_UP_DOWN / TILE_LEFT_RIGHT: each "
                             "lane pushes its part), or mark the vector kernel no-split "
                             "(@pl.aiv(split=pl.TILE_NO_SPLIT)): AIV1 then replays each handshake with an "
                             "empty tile")
                return False
        return True

    def counts(self, d, prod, cons) -> None:
        pfn, plans = prod
        cfn, clans = cons
        pname, cname = pfn.sym_name, cfn.sym_name
        for plane, (ppaths, _) in plans.items():
            for clane, (cpaths, _) in clans.items():
                for pp in ppaths:
                    for cp in cpaths:
                        if not _compatible(pp, cp):
                            continue
                        pe, ce = pp.events.get(d, []), cp.events.get(d, [])
                        who_p = _who(pname, plane)
                        who_c = _who(cname, clane)
                        if _unknown(pe) or _unknown(ce):
                            if self.symbolic_counts(d, pp, cp, who_p, who_c, pfn, cfn):
                                return
                            continue
                        if self.fifo(d, pe, ce, who_p, who_c, pfn, cfn, (pp, cp)):
                            return
                        if len(pe) != len(ce):
                            self.count_mismatch(d, pe, ce, who_p, who_c)
                            return

    def symbolic_counts(self, d, pp, cp, who_p, who_c, pfn, cfn) -> bool:
        """Direction ``d`` of a producer path ``pp`` and a consumer path ``cp`` whose counts
        depend on loops of unknown trip count: the counts equal for every value of the
        unknowns the two paths' facts allow (each trip count ``max(0, hi - lo)`` split into
        its two cases), and the tiles of one type; a failing value is verified again exactly
        (:meth:`counterexample`, the finding then names the op); what cannot be decided is
        :meth:`unproven`.  True when a finding was made."""
        pe, ce = pp.events.get(d, []), cp.events.get(d, [])
        (pc, pwhy), (cc, cwhy) = count_events(pe), count_events(ce)
        if pwhy or cwhy:
            self.unproven(f"the {_dir(d)} push / pop counts of {who_p} and {who_c}: {pwhy or cwhy}")
            return False
        facts = dict(pp.facts)
        facts.update(cp.facts)
        if any(facts.get(k, v) != v for k, v in pp.facts.items()):
            return False                        # the two paths contradict each other
        cons, unhandled = constraints(facts, self.ranges)
        for case, diff in (pc - cc).cases():
            for sign in (1, -1):
                verdict, w = decide(cons + case + [(diff.scale(sign) - const(1), ">=")], self.ranges)
                if verdict == "unsat":
                    continue
                if verdict == "sat" and not unhandled:
                    return self.counterexample(d, w, pe, ce, pc, cc, who_p, who_c)
                self.unproven(f"the {_dir(d)} counts of {who_p} ({pc.text()}) and {who_c} "
                              f"({cc.text()}) are not proven equal"
                              + (" (a condition on their paths is not affine)" if unhandled else ""))
                return False
        pe, ce = [e for e in pe if e.op is not None], [e for e in ce if e.op is not None]
        kinds = {(_whole(a, pfn), a.split) for a in pe} | {(_whole(b, cfn), b.split) for b in ce}
        if len(kinds) > 1:
            self.unproven(f"the {_dir(d)} ring carries tiles of more than one type across a loop of "
                          "unknown trip count: their order (FIFO types) is not proven")
            return False
        return bool(pe and ce) and self.fifo(d, pe[:1], ce[:1], who_p, who_c, pfn, cfn, (pp, cp))

    def counterexample(self, d, w, pe, ce, pc, cc, who_p, who_c) -> bool:
        """The counts of direction ``d`` differ for the values ``w``: the program is verified
        again with those values of its parameters and that finding reported (it names the
        unmatched TPUSH / TPOP), with the values; else a finding at the loop."""
        values = {k[1]: v for k, v in w.items() if k[0] == "param"}
        text = witness_text(w)
        summary = (f"for every value: {who_p} pushes {pc.text()} tile(s) to the {_dir(d)} ring, "
                   f"{who_c} pops {cc.text()}")
        if self.depth < MAX_DEPTH and values:
            known = dict(self.known or {})
            known.update(values)
            again = _Verifier(self.program, self.plat, [], self.protocol_arg, known, self.depth + 1,
                              self.declared)
            found = [e for e in again.verify() if getattr(e, "kind", None) in ("count", "deadlock")]
            for e in found:
                self.finding(e.kind, e.op, e.what, e.fix, e.pop, values=text)
                self.findings[-1].add_detail(summary)
            if found:
                return True
        loop = next(e.loop for e in pe + ce if e.op is None)
        more = "pushes" if pc.text() != cc.text() else "counts"
        self.finding("count", loop, f"the {_dir(d)} push / pop counts differ: {summary} ({more} "
                     "differ, a hang or a leak on the device)",
                     "make the consumer TPOP once per TPUSH of the producer (the same trip counts "
                     "and branch conditions on both sides)", values=text)
        return True

    def fifo(self, d, pe, ce, who_p, who_c, pfn, cfn, paths=None) -> bool:
        """The pops ``ce`` of ring ``d`` take the tiles the pushes ``pe`` sent, in order
        (:meth:`transfer`); True at the first pair that does not.  ``paths``: the producer's
        and the consumer's Path, whose traces place the finding's push and pop in their
        cores' program order (:func:`_culprit_first` puts the finding the run meets first
        first)."""
        for k, (a, b) in enumerate(zip(pe, ce)):
            n = len(self.findings)
            if self.transfer(d, k, a, b, who_p, who_c, pfn, cfn):
                if paths is not None and len(self.findings) > n:
                    self.findings[-1].transfer = tuple(_trace_at(q, d, kind, k)
                                                       for q, kind in zip(paths, ("push", "pop")))
                return True
        return False

    def transfer(self, d, k, a, b, who_p, who_c, pfn, cfn) -> bool:
        """The ``k``-th pop ``b`` of ring ``d`` takes the tile the ``k``-th push ``a`` sent:
        its share of a split (:meth:`share`), its type and split, layout and slot placement
        (:meth:`placement`); True when a finding was made."""
        wa, wb = _whole(a, pfn), _whole(b, cfn)
        if wa != wb and self.share(d, k, a, b, who_p, who_c, cfn):
            return True
        if wa != wb or not pop_split_fits(d.way, self.plat.ring_in_gm, a.split, b.split):
            self.finding("fifo_type", b.op,
                         f"the {ordinal(k + 1)} TPOP of the {_dir(d)} ring in {who_c}"
                         f"{_ev_where(b)} takes {_desc(b, wb)} but the {ordinal(k + 1)} "
                         f"TPUSH in {who_p}, at {line(a.op)}{_ev_where(a)}, pushes "
                         f"{_desc(a, wa)}: a ring delivers tiles in push order",
                         _fifo_fix(a, b, wa, wb, cfn))
            return True
        if not wa[0] and not wb[0]:
            pushed, popped = slot_layout(d.way, a.type.effective_layout), b.type.effective_layout
            if pushed is not popped and not pop_converts(d.way, self.plat.ring_in_gm):
                self.finding("layout", b.op,
                             f"the {ordinal(k + 1)} TPOP of the {_dir(d)} ring in {who_c}"
                             f"{_ev_where(b)} pops {a_layout(popped)} tile, but the slot holds "
                             f"{pushed.name} data: the {ordinal(k + 1)} TPUSH in {who_p}, at "
                             f"{line(a.op)}{_ev_where(a)}, pushes {_layout_desc(d, a.type)} - the "
                             "consumer would read the bytes in the wrong order",
                             layout_fix(d.way, pushed, popped))
                return True
            if self.placement(d, k, a, b, who_p, who_c, cfn):
                return True
        return False

    def share(self, d, k, a, b, who_p, who_c, cfn) -> bool:
        """The ``k``-th pop ``b`` of a split transfer into a tile too small for its share of
        the ``k``-th push ``a`` (:func:`~ptopipe.protocol.geometry.share_problem`, the rule
        the run's TPOP checks, after the slot placement): a finding at the pop, worded as the
        run's."""
        if not isinstance(a.type, TileValueType) or not isinstance(b.type, TileValueType) \
                or not all(b.type.shape[-2:]):
            return False
        bad = share_problem(d.way, a.split, tuple(a.type.shape[-2:]), b.split,
                            tuple(b.type.static_shape[-2:]), str(a.type.dtype))
        if bad is None or self.placement_problems(d, a, b, cfn):
            return False
        held, tail, fix = bad
        self.finding("share", b.op,
                     f"the {ordinal(k + 1)} TPOP of the {_dir(d)} ring in {who_c}{_ev_where(b)} pops into "
                     f"{describe(b.type)} declared {'x'.join(map(str, b.type.static_shape))} "
                     f"({b.split.name}), which cannot hold {held}, pushed by the {ordinal(k + 1)} "
                     f"TPUSH in {who_p}, at {line(a.op)}{_ev_where(a)} - {tail}", fix)
        return True

    def placement_problems(self, d, a, b, cfn) -> list:
        """The slot placement problems of pop ``b`` reading what push ``a`` filled
        (:func:`~ptopipe.protocol.slots.transfer_problems`), judged before the share (as the
        run's TPOP does)."""
        if a.split != b.split or not isinstance(a.type, TileValueType) or not isinstance(b.type, TileValueType):
            return []
        cube, part = (a, b) if d.way == "C2V" else (b, a)
        init = next((i for i in init_ops(cfn) if d in i.rings), None)
        in_gm = ring_in_gm(init, self.plat) if init is not None else self.plat.ring_in_gm
        return transfer_problems(self.model.slot_placement, d.way, in_gm, a.split, cube.type.static_shape,
                                 tuple(cube.type.shape), part.type.static_shape, tuple(part.type.shape))

    def placement(self, d, k, a, b, who_p, who_c, cfn) -> bool:
        """The ``k``-th pop ``b`` reads the slot the ``k``-th push ``a`` filled as the protocol's
        placement lays it out (:func:`~ptopipe.protocol.slots.transfer_problems`: the tiles'
        static shapes give the row pitches, what the run's TPOP judges): a finding at the pop."""
        if a.split != b.split or not isinstance(a.type, TileValueType) or not isinstance(b.type, TileValueType):
            return False
        kind = self.model.slot_placement
        probs = self.placement_problems(d, a, b, cfn)
        if not probs:
            return False
        _lane, why, fix = probs[0]
        where = "in pto-isa's CPU simulator" if kind == "cpusim" else "on the device"
        self.finding("slot_layout", b.op,
                     f"the {ordinal(k + 1)} TPOP of the {_dir(d)} ring in {who_c}{_ev_where(b)} pops "
                     f"{describe(b.type)} declared {'x'.join(map(str, b.type.static_shape))}, from the slot the "
                     f"{ordinal(k + 1)} TPUSH in {who_p}, at {line(a.op)}{_ev_where(a)}, filled with "
                     f"{describe(a.type)} declared {'x'.join(map(str, a.type.static_shape))}: {where} the pop "
                     "does not read what was pushed", fix, details=why)
        return True

    def count_mismatch(self, d, pe, ce, who_p, who_c) -> None:
        n, m = len(pe), len(ce)
        ev = _unmatched(pe, ce)
        if n > m:
            msg = (f"this TPUSH (the {ordinal(pe.index(ev) + 1)} to the {_dir(d)} ring{_ev_where(ev)}) is "
                   f"never popped: {who_p} pushes {n} tile(s) but {who_c} pops {m}")
        else:
            msg = (f"this TPOP (the {ordinal(ce.index(ev) + 1)} of the {_dir(d)} ring{_ev_where(ev)}) has no "
                   f"matching TPUSH and waits forever: {who_p} pushes {n} tile(s) but {who_c} "
                   f"pops {m}")
        self.finding("count", ev.op, msg,
                     "make the consumer TPOP once per TPUSH of the producer (the same trip counts "
                     "and branch conditions on both sides)")


def _nested(traces: dict) -> bool:
    """Does a loop entry of ``traces`` stand for a loop in a loop (its trip count a product,
    :func:`.pipe_paths._loop_entry`), or hold one?"""
    return any(e[0] == "loop" and (e[1] is not None and any(v[0] == "derived" and v[1] == "mul"
                                                             for v, _ in e[1][1].vars)
                                   or any(x[0] == "loop" for x in e[2]))
               for t in traces.values() for e in t)


def _unmatched(pe, ce, depth: int = 0):
    """The push or pop that makes the counts differ: the two sequences are cut into the
    iterations of their loops (level ``depth``, outermost first); in the first iteration
    whose counts differ (when both sides run as many iterations, and nothing outside them
    at that level: a pop after the loop is no iteration of it) the search goes one level
    deeper; at the bottom, the first event past the other side's count - where the run
    waits forever or leaves a slot unpopped."""
    gp, gc = _runs(pe, depth), _runs(ce, depth)
    if len(gp) == len(gc) and len(gp) > 1 and all(k for k, _ in gp + gc):
        for (kp, a), (kc, b) in zip(gp, gc):
            if len(a) != len(b):
                if kp and kc:
                    return _unmatched(a, b, depth + 1)
                pe, ce = a, b
                break
    return pe[len(ce)] if len(pe) > len(ce) else ce[len(pe)]


def _runs(events, depth: int) -> list:
    """``events`` cut into runs of one iteration of the level-``depth`` loop around them:
    ``[(in a loop at that level, [events])]``."""
    runs, key = [], object()
    for e in events:
        k = e.iters[:depth + 1] if len(e.iters) > depth else ("out", e.iters)
        if k != key:
            runs.append((len(e.iters) > depth, []))
            key = k
        runs[-1][1].append(e)
    return runs


def _compatible(p, q) -> bool:
    f, g = p.facts, q.facts
    if len(g) < len(f):
        f, g = g, f
    return all(g.get(k, v) == v for k, v in f.items())


def _unknown(events) -> bool:
    return any(e.op is None for e in events)


def _whole(ev, fn):
    """(flow, dtype, shape of the whole slot tile) of a push / pop event; the Vector side's
    tile is its part of the slot."""
    t = ev.type
    shape = tuple(t.shape)
    if fn.kind is FunctionKind.AIV and len(shape) >= 2:
        shape = shape[:-2] + full_shape(ev.split, shape[-2], shape[-1])
    return (isinstance(t, TensorType), t.dtype, shape)


def _layout_desc(d, t) -> str:
    lay = t.effective_layout
    if d.direction == C2V and lay is not TileLayout.ND:
        return f"its {lay.name} {t.space.name} tile, which the FIX pipe writes out as ND"
    return f"{a_layout(lay)} {t.space.name} tile"


def _fifo_fix(push, pop, wpush, wpop, cfn) -> str:
    """How to make a TPOP take what its matching TPUSH sent: the shape to pop where only the
    shape differs (a Vector core pops its part of the slot, the Cube the whole slot)."""
    fix = ("pop the type the matching push sends (same dtype and split; a Vector core's tile is "
           "its part of the slot), or reorder the pushes")
    if wpush[:2] != wpop[:2] or push.split != pop.split or wpush[2] == wpop[2] or len(wpush[2]) < 2:
        return fix
    want = wpush[2]
    if cfn.kind is FunctionKind.AIV:
        want = want[:-2] + part_shape(pop.split, *want[-2:])
    return (f"pop a {'x'.join(map(str, want))} tile (the whole slot is {'x'.join(map(str, wpush[2]))}; "
            "a Vector core's tile is its part of the slot, the Cube's the whole slot), or push the "
            "shape this TPOP takes")


def _desc(ev, whole) -> str:
    t = ev.type
    kind = "GM slot" if whole[0] else "tile"
    return (f"a {kind} {'x'.join(map(str, t.shape))} {t.dtype} (split "
            f"{getattr(ev.split, 'name', ev.split)}, whole slot {'x'.join(map(str, whole[2]))})")


def _who(name, lane) -> str:
    return name if lane is None else f"{name} (lane AIV{lane})"


def _ev_where(ev) -> str:
    return f", in {ev.where}" if ev.where else ""


def _dir(d) -> str:
    return dir_name(d)


def _rings(*fns) -> list:
    """The rings (:class:`~ptopipe.ir.ops.Ring`) the inits of ``fns`` set up, C2V first."""
    return sorted({r for f in fns for i in init_ops(f) for r in i.rings})
