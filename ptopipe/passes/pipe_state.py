"""The state of one explored path for :mod:`.pipe_paths` / :mod:`.verify_pipes`: popped
and TALLOCed slots (:class:`Slot`), the push / pop sequence of a direction
(:class:`Event`), a path (:class:`Path`: values, facts, held slots, ended slots, events),
when two paths leave the pipes alike (:func:`alike`), and the wording of paths in
findings."""
from __future__ import annotations

from dataclasses import dataclass

from ..arch.vocab import LOCAL_SLOT_NUM
from ..ir.vocab import FunctionKind
from ..ir.opdefs import AivInitializePipe
from ..ir.pipe_config import local_slot_num
from .symbolic import Count
from .util import ring_in_gm, slot_num


class Incomplete(Exception):
    """The exploration of a function passed its path or step limit
    (:data:`.pipe_paths.MAX_PATHS`, :data:`.pipe_paths.MAX_STEPS`)."""


@dataclass(frozen=True)
class HoldLimit:
    """The most popped slots of a direction a consumer may hold at once: ``n``, named
    ``name`` ("SLOT_NUM", or "LocalSlotNum" for the staging ring of a GM ring), why more
    fail and how to raise it (the end of a finding's fix).  ``exact``: when the number of
    earlier pops on a path is known, ``exact(pops_before, others_held)`` says whether this
    TPOP waits forever (pto-isa's SyncPeriod: ``n`` is then the bound for any count).
    ``pop_frees``: the TPOP frees its slot itself (:meth:`ProtocolModel.pop_frees`: pto-isa,
    a ring in GM) - it holds nothing, so there is no bound; its tile is staged in one of
    ``n`` (LocalSlotNum) staging slots, which the ``n``-th TPOP after it overwrites.
    ``moved``: when a TFREE's free notification tests the consumer's latest TPOP rather than
    the tile it releases (pto-isa, SyncPeriod > 1: :meth:`ProtocolModel.moved_notice`),
    ``moved(k, popped)`` says whether release ``k`` after ``popped`` TPOPs sends a credit the
    producer does not count on, or none where it counts on one; a kernel that frees every
    tile before the next TPOP of its ring (:attr:`free_each`, InsertTfree's limit) never
    moves one."""
    n: int
    name: str = "SLOT_NUM"
    why: str = ""
    fix: str = ("or raise SLOT_NUM (slot_num= of the *_initialize_pipe calls, or of "
                "@pl.incore for a mixed function)")
    exact: object = None
    pop_frees: bool = False
    moved: object = None
    sync_period: int = 1
    moved_rule: str = ""

    @property
    def free_each(self) -> bool:
        """Must each popped tile be freed before the next TPOP of its ring (:attr:`moved`)?"""
        return self.moved is not None


def hold_limit(init, kind, plat, model, protocol: str, tiles: bool = True) -> HoldLimit:
    """The HoldLimit of a kernel whose pipe init is ``init`` (None: no init) on
    ``plat`` under the protocol ``model``: its slot_num, else seed 003's default on the
    platform (8 one way, 4 per direction both ways); under pto-isa on a consumer-local ring
    at most SLOT_NUM - SyncPeriod + 1 (:meth:`ProtocolModel.held_limit`), and with
    SyncPeriod > 1 where the TFREE sends the free, the rule that a TFREE's credit follows the
    latest TPOP (``moved``: :meth:`ProtocolModel.moved_notice`); for a ring in GM
    at most its LocalSlotNum (the consumer stages each popped tile in one of that many
    slots of its reserve_buffer).  ``tiles``: the ring's TPOPs pop tiles (False: GM
    addresses, the address flow - such a TPOP never frees its slot itself).  VerifyPipes
    checks it; InsertTfree keeps within it."""
    if init is None:
        return HoldLimit(plat.slot_num_for(False))
    n = slot_num(init, plat)
    local = local_slot_num(init.attributes, n)
    in_gm = ring_in_gm(init, plat)
    frees = model.pop_frees(in_gm, tiles)
    held = model.held_limit(n, in_gm)
    sp = model.static_ring(n, in_gm).sync_period
    moved = None if frees or not model.notice_moves(n, sp) else (lambda k, popped: model.moved_notice(n, k, popped, sp))
    rule = model.NOTICE_RULE if moved is not None else ""
    if held < n:
        return HoldLimit(held, "pto-isa held-slot limit (SLOT_NUM - SyncPeriod + 1)",
                         f"under {protocol} the consumer signals a free every SyncPeriod {sp} "
                         f"TFREEs and the producer waits for one every {sp} pushes after the first "
                         f"SLOT_NUM {n}, so a TPOP holding more slots waits for a push the "
                         "producer cannot make (a hang on the device)",
                         "or raise SLOT_NUM (slot_num= of the *_initialize_pipe calls, or of "
                         "@pl.incore for a mixed function)",
                         exact=lambda pops, others: model.pop_waits_forever(n, pops, others),
                         moved=moved, sync_period=sp, moved_rule=rule)
    if not in_gm or local >= n:
        return HoldLimit(n, pop_frees=frees, moved=moved, sync_period=sp, moved_rule=rule)
    core = "aiv" if kind is FunctionKind.AIV else "aic"
    return HoldLimit(local, "LocalSlotNum",
                     f"on {plat.name} the ring is in GM and a TPOP stages its tile in one of "
                     f"LocalSlotNum {local} slots of the consumer's reserve_buffer, so the next TPOP "
                     "overwrites a tile still held",
                     f"or give pl.{core}_initialize_pipe local_slot_num=<tiles held at once> (at "
                     f"most its slot_num {n}; the default is {LOCAL_SLOT_NUM})", pop_frees=frees,
                     moved=moved, sync_period=sp, moved_rule=rule)


class Slot:
    """One dynamic TPOP (``kind`` "pop") or TALLOC ("alloc"): the op, its type and split,
    where it happened (``where``: the loop iterations / branches around it); ``seq``: a pop's
    index among its path's events of its ring (for the staging slot a later TPOP reuses);
    ``running``: the conditions of the loop iterations it was popped in (they ran)."""
    __slots__ = ("op", "type", "split", "kind", "where", "uid", "seq", "running")
    _n = 0

    def __init__(self, op, type, split, kind, where):
        Slot._n += 1
        self.op, self.type, self.split, self.kind, self.where, self.uid = op, type, split, kind, where, Slot._n
        self.seq = self.running = None


class Event:
    """A push (producer) or pop (consumer) in a path's sequence for one direction; an
    ``op`` of None with ``loop`` set marks "an unknown number of them" (a loop whose trip
    count is not known statically); ``iters``: the iteration numbers of the unrolled loops
    around it, outermost first, as (id of the loop op, iteration) (to find the iteration
    whose counts differ)."""
    __slots__ = ("op", "type", "split", "where", "loop", "iters", "count", "why")

    def __init__(self, op, type, split, where, loop=None, iters=()):
        self.op, self.type, self.split, self.where, self.loop = op, type, split, where, loop
        self.iters = iters
        # a marker: the number of events it stands for (a symbolic Count), or why that
        # number is not an affine expression of the kernel's scalars
        self.count, self.why = None, None


def count_events(events) -> tuple:
    """``(Count, why)``: the number of pushes / pops in ``events``, its markers' counts
    included; ``why`` (the count None) when a marker's count is not affine."""
    n, total = 0, Count.of(0)
    for e in events:
        if e.op is not None:
            n += 1
        elif e.count is None:
            return None, e.why or f"the trip count of the loop at {line(e.loop)} is not known"
        else:
            total = total + e.count
    return total + Count.of(n), None


class Path:
    """One path through the function: values, facts, loop/branch context, pipe state."""
    __slots__ = ("env", "facts", "loops", "iters", "branches", "held", "dead", "events", "yielded",
                 "counted", "trace", "cross", "mid")

    def __init__(self):
        # the pops so far: counted exactly (True), per direction (base, per iteration) in a
        # later iteration of a loop of unknown trip count (a dict), or not known (False)
        self.counted = True
        self.trace: list = []         # (kind "push"/"pop"/"free", direction, op) in order
        self.env, self.facts = {}, {}
        self.loops, self.iters, self.branches = (), (), ()
        self.held: dict = {}          # direction -> tuple of held pop Slots (oldest first)
        # Slot uid -> (op that ended it, where, "TFREE"/"TPUSH"[, what a TFREE named instead:
        # (its name, its Slot) when it named a newer popped slot, else None])
        self.dead: dict = {}
        self.events: dict = {}        # direction -> list of Events (copied on fork)
        self.yielded = None
        # direction -> (TFREE, the popped Slot it freed) the first time a TFREE frees a slot
        # popped in the other branch of an if (for the leak report; not a fact: paths merge)
        self.cross: dict = {}
        # id(loop op of unknown trip count) -> the counts after its first iteration
        self.mid: dict = {}

    def fork(self) -> "Path":
        p = Path.__new__(Path)
        p.env, p.facts = dict(self.env), dict(self.facts)
        p.loops, p.iters, p.branches = self.loops, self.iters, self.branches
        p.held, p.dead = dict(self.held), dict(self.dead)
        p.events = {d: list(ev) for d, ev in self.events.items()}
        p.yielded = self.yielded
        p.counted = self.counted
        p.trace = list(self.trace)
        p.cross = dict(self.cross)
        p.mid = self.mid
        return p

    def where(self) -> str:
        """The path in words: the current loop iterations, then the branches taken."""
        parts = list(self.loops) + [b for b in self.branches[-3:]]
        return ", ".join(parts)


def line(op) -> str:
    return f"line {op.loc.line}" if op is not None and op.loc is not None else "an unknown line"


def is_sym(v) -> bool:
    return v.__class__ is tuple


def alike(t: Path, e: Path, mark: int) -> bool:
    """Two paths leave the pipes alike: the same held slots (a slot popped before the fork
    by identity, one popped in the branch by op type and split), the same push / pop
    sequences (events after the fork compared by type and split), and the same slots
    from before the fork ended (freed / pushed)."""
    if t.held.keys() != e.held.keys() or t.events.keys() != e.events.keys():
        return False
    for d, h in t.held.items():
        g = e.held[d]
        if len(h) != len(g) or any(a is not b and (a.uid <= mark or b.uid <= mark or
                                                   a.type != b.type or a.split != b.split)
                                   for a, b in zip(h, g)):
            return False
    for d, ev in t.events.items():
        fv = e.events[d]
        if len(ev) != len(fv) or any(a is not b and (a.type != b.type or a.split != b.split
                                                     or a.op is None or b.op is None)
                                     for a, b in zip(ev, fv)):
            return False
    return ({u for u in t.dead if u <= mark} == {u for u in e.dead if u <= mark})


def facts_but(p: Path, cond) -> dict:
    return {k: v for k, v in p.facts.items() if k != cond}


def in_loops(p: Path) -> str:
    return f" in {', '.join(p.loops)}" if p.loops else ""


def on(p: Path, end: bool = False) -> str:
    w = p.where()
    if not w:
        return ""
    return f" (on the path through {w})" if end else f" (in {w})"


def pop_site(s) -> str:
    return f" at {line(s.op)}" + (f" ({s.where})" if s.where else "")


def dir_name(d) -> str:
    """A ring (:class:`~ptopipe.ir.ops.Ring`: "C2V", "C2V id=1") or a direction in words."""
    label = getattr(d, "label", None)
    return label if label is not None else getattr(d, "name", str(d)).replace("DIR_", "")


def split_name(s) -> str:
    return getattr(s, "name", str(s))


def lanes_of(fn) -> tuple:
    """The lanes a function runs on: both Vector sub-blocks for AIV (AIV0 only when its
    pipe is initialised with ``lanes=1``: AIV1 runs nothing), one Cube (None)."""
    if fn.kind is not FunctionKind.AIV:
        return (None,)
    one = any(op.lanes == 1 for op in fn.body if op.is_a(AivInitializePipe))
    return (0,) if one else (0, 1)
