"""Path exploration of one kernel function for :mod:`.verify_pipes`: a symbolic execution
of the op IR that records, per path, what the function does on each pipe direction.

Values are abstract: a scalar is a Python number / bool when it is known at compile time
(constants, arithmetic on them, loop variables of unrolled loops, ``get_subblockid()`` of
the lane being explored), else a *symbol* - a tuple naming where it comes from (``("param",
name)`` for a kernel scalar parameter, ``("arith.gt", a, b)`` for an expression on
symbols ...).  Equal symbols are the same unknown, also across the two kernels (a scalar
parameter of both is one symbol).  A popped tile (TPOP) or TALLOCed slot is a :class:`Slot`;
copies, loop-carried values and if-results carry the Slot along (aliases).

* ``pl.if`` on a known condition runs one branch; on a symbol the path forks, each side
  remembering the symbol's value (a *fact*), so a later test of the same symbol is known;
  after the if, the two sides merge again when they leave the pipes alike (:func:`.pipe_state.alike`).
* ``pl.for`` with constant bounds is unrolled (each iteration named in findings); a loop
  without pipe ops whose unrolling would cost more than :data:`SUMMARY_OPS` op steps runs
  once with an unknown loop variable.  A loop with unknown bounds (or more than
  :data:`PERIOD_TRIPS` static ones, its iterations alike) runs twice with unknown loop
  variables (a "first" iteration, whose loop variable is the start where a branch tests it,
  and a "later" one, past it); a later iteration that does not leave the held-slot queue as
  long as it found it is a finding (the ring would wrap or starve after enough
  iterations); a finding's values run the iterations it happens in; its pipe counts become a marker Event counting ``max(0, hi - lo)`` times an
  iteration's (:class:`~.symbolic.Count`), its trace entries one ``("loop", ...)`` entry.
* A load / store's GM window is checked against its tensor's static shape
  (:meth:`Explorer.gm_bounds`).
* A kernel a group function calls is explored once per call (:func:`call_sites`): a scalar
  parameter the call passes a constant for is that constant on the call's path, as the run
  binds it; the others stay unknowns.

The path state (:class:`~.pipe_state.Path`, slots, events) and the merge rule live in
:mod:`.pipe_state`.
* Limits: :data:`MAX_PATHS` live paths and :data:`MAX_STEPS` op steps per function and
  lane; beyond them the exploration stops with a warning (:class:`Incomplete`).
"""
from __future__ import annotations

from itertools import count

from ..arch.vocab import C2V, V2C, Direction
from ..ir.opdefs import (CROSS_CORE_OPS, SCALAR_BINOPS, SCALAR_UNOPS, BufferAttrOp, CallOp, ConstOp, CopyOp, ForOp,
                         GetSubblockIdOp, IfOp, LoadOp, ReturnOp, StoreOp, TAlloc, TFree, TPop, TPush, YieldOp)
from ..ir.first_step import SCALAR_FNS, UNARY_FNS
from ..ir.layout import gm_window_problem
from ..ir.ops import gm_window
from ..ir.pipe_config import ring_of
from ..ir.types import ScalarType, TensorType, int_range
from ..ir.vocab import FunctionKind
from ..protocol.geometry import free_split_problem
from .symbolic import (Count, affine, condition, const, constraints, decide, derived, invariant, magnitude, show,
                       unknowns,
                       var_name,
                       witness_text)
from .pipe_state import (Event, Incomplete, Path, Slot, alike, count_events, dir_name, facts_but, in_loops,
                         is_sym, line, on, pop_site, split_name)
from .util import compiler_made

MAX_PATHS = 128
MAX_STEPS = 400_000
SUMMARY_OPS = 20_000
#: a loop of more static trips whose iterations all take the same branches is explored as
#: a first and a later iteration (its counts and orders then checked once per ring period)
PERIOD_TRIPS = 256
_fresh = count()        # numbers fresh unknowns: two of them are never the same symbol
#: why a value past its type's range is not judged (the run's wrapped value is another)
WRAP_NOTE = ("the GM bounds are not verified there (a value that wraps is not judged by its exact value; "
             "`ptopipe run` computes the wrapped one)")
#: what ended a popped tile that a later TPOP restaged over (:meth:`Explorer.restage`)
STAGED = "staged copy, overwritten in its staging slot by the TPOP"


#: the IR's scalar ops (``arith.<suffix>``) on known values, as the run computes them
_ARITH = {**{SCALAR_BINOPS[sym]: f for sym, f in SCALAR_FNS.items()},
          **{SCALAR_UNOPS[sym]: f for sym, f in UNARY_FNS.items()}}


def _fits(v: int, t) -> bool:
    """Is integer ``v`` within the range of scalar type ``t`` (:func:`~ptopipe.ir.types.int_range`),
    where the IR's exact arithmetic is the device's wrapping one?  (True for other types.)"""
    r = int_range(t.dtype) if isinstance(t, ScalarType) else None
    return r is None or r[0] <= v <= r[1]


def call_sites(program) -> dict:
    """``{kernel name: [({parameter name: value}, the call), ...]}``: for each kernel a group
    function (the ``.pto`` entry) calls, one dict per call (of distinct dicts), of the scalar parameters that call
    passes a constant for (``func.call @k(%x, %c8)``: ``{"row": 8}``) or a parameter of the
    group (``("param", its name)``: the launch's value, ``--input`` / ``--range`` name it).  A
    kernel no group calls is not in it (launched on its own: its parameters are the launch's)."""
    kernels = {f.sym_name: f for f in program.body if f.kind is not FunctionKind.Group}
    out: dict = {}
    for g in program.body:
        if g.kind is not FunctionKind.Group:
            continue
        for op in g.walk():
            callee = kernels.get(op.callee) if op.is_a(CallOp) else None
            if callee is None:
                continue
            site = {}
            for v, a in zip(op.operands, callee.regions[0].block.args):
                if not isinstance(a.type, ScalarType):
                    continue
                d = getattr(v, "op", None)
                k = d.attributes.get("value") if d is not None and d.is_a(ConstOp) else None
                if type(k) is int:
                    site[a.name] = k
                elif getattr(v, "block", None) is g.regions[0].block:
                    site[a.name] = ("param", v.name)      # the group's own parameter
            sites = out.setdefault(callee.sym_name, [])
            if all(site != s for s, _ in sites):
                sites.append((site, op))
    return out


def unknown_scalars(program, dtypes) -> set:
    """The names of the scalar parameters (of ``dtypes``) VerifyPipes proves a program for
    every value of: a launched function's own, and those a call passes from its caller's
    parameters or computes - not those every call passes a constant for (:func:`call_sites`)."""
    sites, out = call_sites(program), set()
    for f in program.body:
        args = [a.name for a in f.regions[0].block.args if isinstance(a.type, ScalarType) and a.type.dtype in dtypes]
        for site, _ in sites.get(f.sym_name, (({}, None),)):
            out.update(v[1] if is_sym(v) else None for v in (site.get(n, ("param", n)) for n in args))
    out.discard(None)
    return out


class Explorer:
    """Explores one function (``fn``: a ``pl.func`` op) for one lane (0 / 1 for an AIV
    function, None for AIC); ``report(kind, op, msg, fix)`` receives findings,
    ``slot_num(ring)`` gives a ring's (:class:`~ptopipe.ir.ops.Ring`) :class:`~.pipe_state.HoldLimit` (SLOT_NUM,
    or the LocalSlotNum of a GM ring's staging); ``known``: values of scalar parameters
    (by name) to explore with instead of unknowns (a scenario variant's arguments);
    ``sites``: the function's calls (:func:`call_sites`), None when no group calls it."""

    def __init__(self, fn, lane, slot_num, report, known=None, declared=None, sites=None):
        self.fn, self.lane, self.slot_num, self.report = fn, lane, slot_num, report
        self.known = known or {}
        self.sites = sites
        # the scalar parameters some call passes a value computed in the caller: unknowns no
        # launch option names (the findings' fixes say where they come from)
        self.from_caller = {a.name for a in fn.regions[0].block.args if isinstance(a.type, ScalarType)
                            and sites and any(a.name not in site for site, _ in sites)}
        self.not_affine: dict = {}         # id(op) -> why its GM bounds are not proven
        # id(op) -> (kind, op, what, fix, values) of a GM access out of bounds at values of the
        # launch's declared ranges (VerifyPipes reports it when no other finding comes first)
        self.range_fails: dict = {}
        self.kind = fn.kind
        self.steps = 0
        self.unknown_counts: dict = {}     # ring -> the loop op that made it unknown
        self.max_held: dict = {}           # ring -> the most popped slots held at a TPOP
        # loop variable symbol -> (lo, hi) of its loop; ("param", name) -> a declared range
        self.ranges: dict = dict(declared or {})
        # the parameters' ranges the launch declares (--range): a value in a closed one that
        # fails is an error, where a value past a limit left undeclared (no range, or an open
        # one: flag=4..) is only not proven
        self.declared: dict = dict(declared or {})
        self._loops: dict = {}             # id(loop op) -> (has pipe ops, op count)
        self._dependent: dict = {}         # id(loop op) -> iteration_dependent(op)
        # the conditions under which the iterations being explored of loops of unknown trip
        # count happen (the loop runs; a later iteration: twice): each finding's values hold them
        self._running: list = []
        self._first: dict = {}             # the loop variable of a first iteration -> its start
        # rings with a TFREE whose free credit is not the producer's count (moved_notice): the
        # credits no longer follow the releases the hold bound's exact rule counts
        self.moved: set = set()

    def report_on(self, p: Path, kind, op, msg, fix, pop=None, values=None, details=None, at=None) -> None:
        """A finding on path ``p``: ``report`` with the path's facts and the ranges of the loop
        variables (the finding's values are solved from them, unless ``values`` gives them;
        ``at``: where to report it, when not at ``op``)."""
        facts = {**dict.fromkeys(self._running, True), **p.facts} if self._running else p.facts
        self.report(kind, op, msg, fix, pop, facts=facts, ranges=self.ranges, values=values,
                    details=details, at=at)

    def loop_info(self, op) -> tuple:
        """(whether a pipe op is nested in loop ``op``, how many ops it holds)."""
        r = self._loops.get(id(op))
        if r is None:
            ops = list(op.walk())
            r = self._loops[id(op)] = (any(o.is_a(*CROSS_CORE_OPS) for o in ops), len(ops))
        return r

    # -- entry ---------------------------------------------------------------------------
    def run(self) -> list:
        body = self.fn.regions[0].block
        starts = []
        for site, call in self.sites or (({}, None),):     # one path per call, its constants bound
            p = Path()
            if len(self.sites or ()) > 1:
                p.loops = (f"the call at {line(call)}",)         # (a finding's words: which call)
            for a in body.args:
                if isinstance(a.type, TensorType):
                    p.env[a] = None
                else:
                    v = site.get(a.name, ("param", a.name))
                    p.env[a] = self.known.get(v[1], v) if is_sym(v) else v
            starts.append(p)
        paths = self.block(body, starts)
        for q in paths:
            for d, held in q.held.items():
                cross = q.cross.get(d)
                for s in held:
                    if cross is not None:      # a branch pops without a TFREE: another frees it
                        free, first = cross
                        self.report_on(q, "missing_tfree", first.op,
                                    f"the TPOP{pop_site(first)} has no TFREE on its branch: the TFREE at "
                                    f"{line(free)}, in the other branch of the same if, freed its slot "
                                    f"instead (a TFREE frees the oldest held slot), and the TPOP"
                                    f"{pop_site(s)} is never freed{on(q, end=True)}",
                                    "TFREE every popped slot on every path (after its last use)")
                        break
                    self.report_on(q, "missing_tfree", s.op,
                                f"the TPOP{pop_site(s)} is never freed{on(q, end=True)}: "
                                f"{self._who()} ends holding its slot",
                                "TFREE every popped slot on every path (after its last use)")
        return paths

    def _who(self) -> str:
        name = self.fn.sym_name
        return name if self.lane is None else f"{name} (lane AIV{self.lane})"

    # -- blocks and ops ------------------------------------------------------------------
    def block(self, block, paths: list) -> list:
        for op in block:
            if op.is_a(YieldOp):
                for p in paths:
                    p.yielded = [p.env.get(v) for v in op.operands]
                continue
            paths = self.op(op, paths)
        return paths

    def op(self, op, paths: list) -> list:
        self.steps += len(paths)
        if self.steps > MAX_STEPS:
            raise Incomplete(f"more than {MAX_STEPS} op steps")
        cls = op.__class__
        if cls is IfOp:
            return self.if_(op, paths)
        if cls is ForOp:
            return self.for_(op, paths)
        for p in paths:
            self.check_uses(op, p)
            self.step(op, p)
        return paths

    def check_uses(self, op, p: Path, operands=None) -> None:
        if op.is_a(CopyOp):
            return
        env, dead = p.env, p.dead
        for v in (op.operands if operands is None else operands):
            s = env.get(v)
            if s.__class__ is Slot and s.uid in dead:
                end_op, end_where, what, *named = dead[s.uid]
                if op.is_a(TFree) and what in ("TFREE", STAGED):
                    continue      # a second TFREE naming the object: counted as a TFREE
                nm = f"%{v.name}" if v.name else "a value"
                src = "popped" if s.kind == "pop" else "TALLOCed"
                named = named[0] if named else None
                why = (f"; that TFREE names {named[0]} (TPOP{pop_site(named[1])}), but a TFREE frees the oldest "
                       "held slot, whatever it names" if named else "")
                self.report_on(p, "use_after_free", op,
                            f"{op.name} uses {nm} ({src} by the {'TPOP' if s.kind == 'pop' else 'TALLOC'}"
                            f"{pop_site(s)}) after its {what} at {line(end_op)}{on(p)}{why}",
                            f"TFREE the popped slots in the order they were popped, or move the TFREE at "
                            f"{line(end_op)} after the last use of {nm}" if named else
                            f"move the {what} after the last use of {nm}" if what == "TFREE" else
                            f"read {nm} before more TPOPs of its ring than its staging slots (LocalSlotNum), "
                            "or raise local_slot_num" if what == STAGED else
                            "write the slot before its TPUSH (TPUSH hands it to the consumer)")

    def step(self, op, p: Path) -> None:
        name, cls, env = op.name, op.__class__, p.env
        if cls is ConstOp:
            env[op.out] = op.value
        elif name.startswith("arith."):
            env[op.results[0]] = self.arith(name[6:], [env.get(v) for v in op.operands], p)
        elif cls is CopyOp:
            env[op.out] = env.get(op.source)
        elif cls is GetSubblockIdOp:
            env[op.results[0]] = self.lane if self.lane is not None else ("subblock",)
        elif cls is BufferAttrOp:
            env[op.value] = ("buffer_attr", id(op))
        elif cls is TPop:
            self.tpop(op, p)
        elif cls is TFree:
            self.tfree(op, p)
        elif cls is TAlloc:
            env[op.view] = Slot(op, op.result_type, op.split, "alloc", p.where())
        elif cls is TPush:
            self.tpush(op, p)
        elif cls is LoadOp or cls is StoreOp:
            self.gm_bounds(op, p)
        elif cls is ReturnOp:
            pass

    def gm_bounds(self, op, p: Path) -> None:
        """A load / store's GM window within its tensor's shape: at constant offsets
        directly, at offsets affine in the unknowns for every value the path allows (a
        failing value is a finding naming it; what cannot be decided is not proven)."""
        t = op.tensor.type
        if not isinstance(t, TensorType) or not all(type(n) is int for n in t.shape):
            return
        shape = tuple(t.shape)
        window = gm_window(op)
        offs = [p.env.get(v) for v in op.offsets]
        if len(offs) != len(shape) or len(window) != len(shape):
            return                          # a rank mismatch: the typing rule's error
        name = op.tensor.name or "tensor"
        wide = [o for o, v in zip(offs, op.offsets) if type(o) is int and not _fits(o, v.type)]
        if wide:
            self.not_affine.setdefault(id(op), f"the offsets of the {op.name} at {line(op)} reach {wide[0]}, "
                                       f"past the 64-bit range their type wraps at on the device "
                                       f"(MLIR's index / i64), where the IR's integers are exact: {WRAP_NOTE}")
            return
        if all(type(o) is int for o in offs):     # the run's words (a split lane's too)
            bad = gm_window_problem(name, shape, offs, window, getattr(op.loc, "lane_split", None),
                                    self.lane)
            if bad is not None:
                at, where = _negative_at(op, any(o < 0 for o in offs))
                self.report_on(p, "gm_bounds", op, bad[0] + on(p) + where, bad[2], details=bad[1], at=at)
            return
        what = op.name
        fix = f"keep every offset + window within {name}'s shape [{', '.join(map(str, shape))}]"
        texts, bad = [], None
        for o, w, n, v in zip(offs, window, shape, op.offsets):
            a = affine(o)
            texts.append("?" if a is None else show(a))
            if a is not None and not a.is_const() and not _fits(magnitude(a, self.ranges), v.type):
                self.not_affine.setdefault(id(op), f"the offset {show(a)} of the {op.name} at {line(op)} may "
                                           f"pass the 64-bit range its type wraps at on the device: {WRAP_NOTE}")
                continue
            if a is None:
                if any(u[0] in ("param", "iv") for u in unknowns(o, set())):
                    self.not_affine.setdefault(id(op), f"the offsets of the {what} at {line(op)} are not affine "
                                           "in the kernel's integer scalars (bounds not proven)")
                continue
            if bad is None:
                bad = self._outside(a, w, n, p, op)
        if bad is None:
            return
        at, where = _negative_at(op, bad[-1] if bad.__class__ is tuple else bad)
        bad = bad[:-1] if bad.__class__ is tuple else True
        values = None if bad is True else bad[0]
        declared = bad is not True and bad[1] is not None and all(
            self.declared.get(("param", n), (None, None))[1] is not None for n in bad[1])
        if declared:
            # values the launch declares: an error - unless another one on the path comes first
            # (a loop running past its pushes blocks at its TPOP before its store leaves the
            # tensor): kept for VerifyPipes to report when nothing else fails
            self.range_fails.setdefault(id(op), (
                "gm_bounds", op, f"access out of bounds: offsets [{', '.join(texts)}] + window "
                f"[{', '.join(map(str, window))}] exceed {name!r} of shape [{', '.join(map(str, shape))}]"
                f"{on(p)}{where}", fix, values, at))
            return
        if bad is not True and bad[1] is not None:
            # it needs a scalar parameter past what the tensor holds: a limit the kernel
            # leaves undeclared (a dynamic trip count over a fixed shape), not proven
            self.not_affine.setdefault(id(op),
                f"the {what} at {line(op)} accesses GM out of bounds when {values} (offsets "
                f"[{', '.join(texts)}] + window [{', '.join(map(str, window))}] exceed {name!r} of "
                f"shape [{', '.join(map(str, shape))}]{_window_of(op)}); " + self._declare_fix(bad[1]))
            return
        self.report_on(p, "gm_bounds", op,
                       f"access out of bounds: offsets [{', '.join(texts)}] + window "
                       f"[{', '.join(map(str, window))}] exceed {name!r} of shape "
                       f"[{', '.join(map(str, shape))}]{on(p)}{where}", fix, values=values, at=at)

    def _declare_fix(self, names) -> str:
        """How to bound the scalar parameters ``names`` the GM bounds need: the launch's
        range, unless a call computes one in its caller (no launch option names it)."""
        inner = sorted(n for n in names if n in self.from_caller)
        if not inner:
            return "declare the values the kernel takes (--range NAME=LO..HI)"
        return (f"{', '.join(inner)} {'is' if len(inner) == 1 else 'are'} computed by the caller of "
                f"@{self.fn.sym_name}: pass a constant, or a parameter of the function run and declare "
                "its values (--range NAME=LO..HI)")

    def _outside(self, a, w: int, n: int, p: Path, op):
        """None when offset ``a`` + window ``w`` is within [0, n) for every value path ``p``
        allows; else whether the offset is negative there (a constant one: True or False) or
        ``(the failing values in words, the scalar parameters they name or None, whether the
        offset is negative at them)``."""
        if a.is_const():
            return (a.const < 0) if a.const < 0 or a.const + w > n else None
        cons, unhandled = constraints({**dict.fromkeys(self._running, True), **p.facts}, self.ranges)
        for negative, bad in ((True, (a.scale(-1) - const(1), ">=")), (False, (a + const(w - n - 1), ">="))):
            verdict, wit = decide(cons + [bad], self.ranges)
            if verdict == "sat" and not unhandled:
                names = [var_name(k) for k in wit if k[0] == "param"]
                return witness_text(wit), names or None, negative
            if verdict != "unsat":
                free = sorted({var_name(v) for e, _ in cons + [bad] for v, _ in e.vars
                               if v[0] == "param" and v not in self.declared})
                self.not_affine.setdefault(id(op), f"the GM bounds of the {op.name} at {line(op)} "
                                           + (f"(they depend on {', '.join(free)}, whose values are not "
                                              "declared: --range NAME=LO..HI)" if free else
                                              "(a loop bound or condition on its path is not affine)"))
                return None
        return None

    def arith(self, fn: str, args: list, p: Path):
        if any(a is None for a in args):
            return ("opaque", fn, next(_fresh))
        if any(is_sym(a) for a in args):
            s = (fn, *args)
            return p.facts.get(s, s)
        try:
            return _ARITH[fn](*args)
        except (ZeroDivisionError, KeyError):
            return ("opaque", fn, next(_fresh))

    # -- pipe ops --------------------------------------------------------------------------
    def tpop(self, op, p: Path) -> None:
        d = ring_of(op)
        s = Slot(op, op.result_type, op.split, "pop", p.where())
        s.running = tuple(self._running)
        p.env[op.tile] = s
        p.trace.append(("pop", d, op))
        held = p.held.get(d, ()) + (s,)
        p.held[d] = held
        if len(held) > self.max_held.get(d, 0):
            self.max_held[d] = len(held)
        p.events.setdefault(d, []).append(Event(op, op.result_type, op.split, p.where(),
                                                iters=p.iters))
        lim = self.slot_num(d)
        n = lim.n
        if lim.pop_frees:
            self.restage(op, p, d, s, n)
            return
        if lim.exact is not None and d in self.moved:
            # a TFREE of the ring sent another credit than the releases' count (reported): the
            # bound's arithmetic no longer holds - the deadlock check runs the real credits
            over = False
        elif lim.exact is not None and p.counted is True:
            over = lim.exact(len(p.events[d]) - 1, len(held) - 1)
        elif lim.exact is not None and isinstance(p.counted, dict) and d in p.counted:
            # a later iteration of a loop of unknown trip count: this pop is tile
            # base + k * per + offset for every k >= 1 (per: the pops of one iteration)
            base, per, trips = p.counted[d]
            offset = len(p.events[d]) - 1 - base - per
            ks = range(1, (lim.n + 2 * max(per, 1)) // max(per, 1) + 2 * n + 2) if per else (1,)
            if trips is not None:            # a known trip count: iterations 1 .. trips - 1
                ks = range(1, min(ks[-1] + 1, trips)) if per else ks
            over = any(lim.exact(base + k * per + offset, len(held) - 1) for k in ks)
        else:
            over = len(held) > n
        if over:
            self.report_on(p, "too_many_pops", op,
                        f"this TPOP holds {len(held)} slots of the {dir_name(d)} ring at once, more than "
                        f"its {lim.name} {n}{on(p)} (oldest held: TPOP{pop_site(held[0])}): "
                        + (f"the producer can never fill slot {n + 1}, so the TPOP waits forever"
                           if lim.name == "SLOT_NUM" else lim.why),
                        f"TFREE a slot before popping another (at most {n} popped and not freed), "
                        + lim.fix)

    def restage(self, op, p: Path, d, s: Slot, n: int) -> None:
        """A TPOP that frees its slot itself (``HoldLimit.pop_frees``) holds nothing, so no
        hold limit applies (the run's TPOP counts none); it stages its tile in staging slot
        ``seq % n``, overwriting the tile popped ``n`` TPOPs before it: a later use of that
        one is a use after free (as the run reports it, at the read).  Pops across a loop of
        unknown trip count are not counted apart."""
        ev = p.events[d]
        s.seq = len(ev) - 1
        for h in p.held.get(d, ())[:-1]:
            if h.uid in p.dead or h.seq is None or s.seq - h.seq < n:
                continue
            if any(e.op is None for e in ev[h.seq:]):
                continue                    # a loop of unknown trip count in between
            p.dead[h.uid] = (op, p.where(), STAGED)

    def tfree(self, op, p: Path) -> None:
        d = ring_of(op)
        held = p.held.get(d, ())
        p.trace.append(("free", d, op))
        if not held:
            self.report_on(p, "free_without_pop", op,
                        f"TFREE of the {dir_name(d)} ring with no popped slot held{on(p)}",
                        "call TFREE exactly once after each TPOP")
            return
        s = held[0]
        p.held[d] = held[1:]
        if len(held) > 1:
            self.moved_notice(op, p, d, held)
        if d not in p.cross and _sibling_branches(s.op, op):
            p.cross[d] = (op, s)                      # for the leak report: the culprit branch
        split = op.split
        why = None if split is None or split == s.split else \
            free_split_problem(V2C if d[0] == Direction.DIR_V2C else C2V, s.split, split)
        if why is not None:
            self.report_on(p, "split_mismatch", op,
                        f"TFREE gives split {split_name(split)} but the TPOP{pop_site(s)} whose slot it "
                        f"frees used {split_name(s.split)}{on(p)}: {why}",
                        f"give TFREE the split of its TPOP (split={split_name(s.split)}) or none", s.op)
        # a TFREE naming a newer popped slot still frees the oldest (pto-isa's TFREE does not read
        # what it names): harmless when both are read before both TFREEs, as the run and the
        # device have it; a later use of the older one is the finding, saying so (check_uses)
        obj = p.env.get(op.obj) if len(op.operands) > 1 else None
        named = (f"%{op.obj.name}", obj) if obj.__class__ is Slot and obj is not s and obj.uid not in p.dead \
            else None
        p.dead[s.uid] = (op, p.where(), "TFREE", named)

    def moved_notice(self, op, p: Path, d, held: tuple) -> None:
        """A TFREE of ring ``d`` releasing ``held[0]`` while later pops (``held[1:]``) are
        held: where the protocol's free notification tests the consumer's latest TPOP
        (``HoldLimit.moved``: pto-isa, SyncPeriod > 1), find whether it then sends a free where
        the producer counts on none, or none where it counts on one - for the pop counts of
        the path (every iteration of a loop of unknown trip count, any count after it).  The
        finding is at the latest TPOP, the one whose index the TFREE tests."""
        lim = self.slot_num(d)
        if lim.moved is None:
            return
        ev = p.events.get(d, [])
        if p.counted is True:
            popped = (len(ev),)
        elif isinstance(p.counted, dict) and d in p.counted:
            base, per, trips = p.counted[d]         # as in tpop: base + j * per + offset, j >= 1
            offset = len(ev) - 1 - base - per
            ks = range(1, 2 * lim.sync_period + 2) if per else (1,)
            if trips is not None:
                ks = range(1, min(ks[-1] + 1, trips)) if per else ks
            popped = tuple(base + j * per + offset + 1 for j in ks)
        else:                                       # not known: any count
            popped = tuple(range(len(held), len(held) + lim.sync_period))
        bad = next((q for q in popped if lim.moved(q - len(held), q)), None)
        if bad is None:
            return
        self.moved.add(d)
        last = held[-1]
        tiles = (f"tile #{bad - 1} of the {dir_name(d)} ring while tile #{bad - len(held)}" if p.counted is True
                 else f"a tile of the {dir_name(d)} ring while a tile")
        self.report_on(p, "free_index", last.op,
                       f"this TPOP pops {tiles}, popped at "
                       f"{line(held[0].op)}, is still held{on(p)}; that tile is freed after this TPOP ("
                       + ("after its last use" if line(op) == line(held[0].op) else f"TFREE at {line(op)}") +
                       f"), and {lim.moved_rule}: the TFREE tests this TPOP's index and sends more or fewer free "
                       f"credits than the producer counts on (one per SyncPeriod {lim.sync_period} releases) - a "
                       "slot overwritten before it is freed, a hang, or credits left for the next launch",
                       (f"use the tile received at {line(held[0].op)} (e.g. move it to pl.Left / pl.Right) before "
                        "the next tile crosses this way, so that its slot is freed first, or give the function "
                        "SyncPeriod 1: @pl.incore(slot_num=3) (or 1; ptoas takes SlotNum 4 or 8 only)"
                        if self._mixed() else
                        f"free the tile popped at {line(held[0].op)} before this TPOP (use it first, or copy it "
                        "out), so that each TFREE comes before the next TPOP of its ring, or give the ring "
                        "SyncPeriod 1: slot_num=3 (or 1) of the *_initialize_pipe calls (ptoas takes SlotNum 4 "
                        "or 8 only)"), held[0].op)

    def _mixed(self) -> bool:
        """Is the function one ExpandMixedKernel made of a mixed function (its TPOPs and TFREEs
        are the compiler's)?"""
        prog = self.fn.parent_op
        return prog is not None and self.fn.sym_name in compiler_made(prog)

    def tpush(self, op, p: Path) -> None:
        d = ring_of(op)
        v = p.env.get(op.tile)
        if v.__class__ is Slot and v.kind == "alloc":
            ty, split = v.type, v.split
            p.dead[v.uid] = (op, p.where(), "TPUSH")
        else:
            ty, split = op.tile.type, op.split
        p.events.setdefault(d, []).append(Event(op, ty, split, p.where(), iters=p.iters))
        p.trace.append(("push", d, op))

    # -- control flow ----------------------------------------------------------------------
    def if_(self, op, paths: list) -> list:
        cond_v = op.cond
        out = []
        then_b, else_b = op.then_block, op.else_block
        for p in paths:
            self.check_uses(op, p)
            c = p.env.get(cond_v)
            if c is None:
                c = ("opaque", next(_fresh))
            if is_sym(c):
                c = p.facts.get(c, c)
            if is_sym(c) and self._first:
                c = self._at_first(c)
            if not is_sym(c):
                q = self.block(then_b if c else else_b, [p])
                for r in q:
                    self._results(op, r)
                out.extend(q)
                continue
            t, e = p.fork(), p
            t.facts[c], e.facts[c] = True, False
            t.branches = p.branches + (f"the then branch of the if at {line(op)}{in_loops(p)}",)
            e.branches = p.branches + (f"the else branch of the if at {line(op)}{in_loops(p)}",)
            base_branches, mark = p.branches, Slot._n
            tq = self.block(then_b, [t])
            eq = self.block(else_b, [e])
            out.extend(self._merge(op, c, tq, eq, base_branches, mark))
        if len(out) > MAX_PATHS:
            raise Incomplete(f"more than {MAX_PATHS} paths")
        return out

    def _at_first(self, c):
        """Condition ``c`` with the loop variables of the first iterations being explored at
        their loops' starts: its truth when that decides it (``i > 0`` in the first iteration
        of ``range(0, n)``), else ``c``."""
        def sub(v):
            if v.__class__ is tuple:
                return self._first[v] if v in self._first else tuple(sub(x) for x in v)
            return v
        s = sub(c)
        cs = condition(s, True) if s != c else None
        if not cs or any(not e.is_const() for e, _ in cs):
            return c
        return all(e.const >= 0 if rel == ">=" else (e.const == 0) == (rel == "==") for e, rel in cs)

    def _results(self, op, p: Path) -> None:
        for r, v in zip(op.results, p.yielded or ()):
            p.env[r] = v

    def _merge(self, op, cond, tq: list, eq: list, base_branches, mark: int) -> list:
        """Merge a then-path with an else-path that leaves the pipes alike (see
        :func:`.pipe_state.alike`); the if-results that differ become one unknown (never a Slot:
        two different tiles do not merge)."""
        for r in tq + eq:
            self._results(op, r)
        out, rest = [], list(eq)
        for t in tq:
            for i, e in enumerate(rest):
                if alike(t, e, mark) and facts_but(t, cond) == facts_but(e, cond) \
                        and self._joinable(op, t, e):
                    del rest[i]
                    for r in op.results:
                        a, b = t.env.get(r), e.env.get(r)
                        if a is not b and a != b:
                            t.env[r] = ("join", line(op), next(_fresh))
                    t.facts.pop(cond, None)
                    t.branches = base_branches
                    break
            out.append(t)
        return out + rest

    @staticmethod
    def _joinable(op, t: Path, e: Path) -> bool:
        for r in op.results:
            a, b = t.env.get(r), e.env.get(r)
            if a is not b and (a.__class__ is Slot or b.__class__ is Slot):
                return False
        return True

    def for_(self, op, paths: list) -> list:
        body = op.regions[0].block
        out = []
        for p in paths:
            # the bounds are read here; the inits are only passed on to the iter_args (a freed
            # tile among them is reported where the loop reads it, as an alias)
            bounds = (op.start, op.stop, op.step)
            self.check_uses(op, p, bounds)
            lo, hi, st = (p.env.get(v) for v in bounds)
            inits = [p.env.get(v) for v in op.inits]
            known = all(isinstance(x, int) and not isinstance(x, bool) for x in (lo, hi, st)) and st != 0
            pipes, size = self.loop_info(op)
            if known:
                trips = range(lo, hi, st)
                n = trip_count(lo, hi, st)
                if pipes and n > PERIOD_TRIPS and not self.iteration_dependent(op):
                    out.extend(self._summary(op, body, p, inits, twice=True, bounds=(lo, hi, st)))
                    continue
                if pipes or n * size <= SUMMARY_OPS:
                    out.extend(self._unroll(op, body, p, trips, inits))
                    continue
            out.extend(self._summary(op, body, p, inits, twice=not known and pipes, bounds=(lo, hi, st)))
        return out

    def iteration_dependent(self, op) -> bool:
        """Does a branch or loop bound inside loop ``op`` depend on its loop variable or its
        loop-carried values (so that its iterations may differ)?"""
        r = self._dependent.get(id(op))
        if r is None:
            tainted = set(op.regions[0].block.args)
            ops = [o for o in op.walk() if o is not op]
            size = -1
            while len(tainted) != size:         # to a fixed point: if-results yielded later
                size = len(tainted)
                for o in ops:
                    if not any(v in tainted for v in o.operands):
                        continue
                    tainted.update(o.results)
                    for reg in o.regions:
                        for b in reg.blocks:
                            tainted.update(b.args)
                    if o.is_a(YieldOp):         # the value of the if / loop it ends
                        block = o.parent
                        owner = block.parent.parent if block is not None and block.parent else None
                        if owner is not None and owner is not op:
                            tainted.update(owner.results)
            r = any((o.is_a(IfOp) and o.cond in tainted) or
                    (o.is_a(ForOp) and any(v in tainted for v in (o.start, o.stop, o.step)))
                    for o in ops)
            self._dependent[id(op)] = r
        return r

    def _bind(self, body, p: Path, iv, carried) -> None:
        p.env[body.args[0]] = iv
        for a, v in zip(body.args[1:], carried):
            p.env[a] = v

    def _unroll(self, op, body, p: Path, trips, inits) -> list:
        live = [(p, inits)]
        iv = body.args[0].name or "i"           # the loop variable as the source names it
        outer, outer_iters = p.loops, p.iters
        for k, i in enumerate(trips):
            nxt = []
            for q, carried in live:
                q.loops = outer + (f"iteration {k + 1} ({iv}={i}) of the loop at {line(op)}",)
                q.iters = outer_iters + ((id(op), k),)
                self._bind(body, q, i, carried)
                for r in self.block(body, [q]):
                    nxt.append((r, r.yielded or []))
            if len(nxt) > MAX_PATHS:
                raise Incomplete(f"more than {MAX_PATHS} paths")
            live = nxt
        res = []
        for q, carried in live:
            q.loops, q.iters = outer, outer_iters
            for r, v in zip(op.results, carried):
                q.env[r] = v
            res.append(q)
        return res

    def _summary(self, op, body, p: Path, inits, twice: bool, bounds=(None, None, None)) -> list:
        """A loop run with unknown loop variables: once (no pipe ops), or a first and a later
        iteration (pipe ops under unknown bounds), checking the held queue is balanced; after
        the loop, each direction it pushes or pops on gets a marker Event whose ``count`` makes
        the path's count ``before + trips * (one iteration's)`` (:func:`count_events`), or whose
        ``why`` says why that count is not an affine expression of the unknowns."""
        outer = p.loops
        carried_names = [("carried", line(op), next(_fresh)) for _ in inits]
        live = [(p, inits)]
        n_events = {d: len(ev) for d, ev in p.events.items()}
        at_entry = {d: count_events(ev) for d, ev in p.events.items()}
        facts0 = set(p.facts)
        iv_name = body.args[0].name or "i"
        t0 = len(p.trace)
        lo, hi, st = bounds
        known = trip_count(lo, hi, st) if all(type(x) is int for x in bounds) and st else None
        how = "trip count not known statically" if known is None else f"one of its {known}"
        for k in range(2 if twice else 1):
            nxt = []
            for q, carried in live:
                if twice and k == 1:      # a later iteration: tile base + j * per + offset,
                    # j >= 1 (the first iteration's pops were counted exactly from the entry)
                    q.counted = ({d: (n_events.get(d, 0), len(ev) - n_events.get(d, 0), known)
                                  for d, ev in q.events.items()} if q.counted is True else False)
                q.loops = outer + (f"an iteration of the loop at {line(op)}" + (f" ({how})" if twice else ""),)
                before = {d: len(h) for d, h in q.held.items()}
                iv = ("iv", line(op), next(_fresh), iv_name)
                self.ranges[iv] = iv_range(bounds)
                if twice and k == 1 and st == 1:        # a later iteration: past the start
                    self.ranges[iv] = (("add", lo, 1), hi)
                # the first iteration's loop variable is the start: a branch on it is decided
                first = twice and k == 0 and st == 1 and lo is not None
                self._bind(body, q, iv, carried if k == 0 else
                           [c if c.__class__ is Slot else n for c, n in zip(carried, carried_names)])
                # (spelled apart from any condition of the kernel's: a path's facts keep theirs)
                running = (("and", ("eq", iv, ("add", lo, 0)), ("lt", ("add", lo, 0), hi)) if first else
                           ("ge", iv, ("add", lo, 1)) if twice and k == 1 and st == 1 else None)
                if running is not None:
                    self._running.append(running)
                if first:
                    self._first[iv] = lo
                try:
                    for r in self.block(body, [q]):
                        if twice:
                            if k == 1:      # (the first iteration may hold a slot the later ones free)
                                self._balanced(op, r, before, bounds)
                            if k == 0:
                                r.mid = dict(r.mid)
                                r.mid[id(op)] = ({d: count_events(ev) for d, ev in r.events.items()},
                                                 len(r.trace))
                        nxt.append((r, r.yielded or []))
                finally:
                    if running is not None:
                        self._running.pop()
                    self._first.pop(iv, None)
            live = nxt
        res = []
        for q, carried in live:
            q.loops = outer
            if twice:
                q.counted = False         # after it: the number of pops is not known
            for r, v in zip(op.results, carried):
                q.env[r] = v if v.__class__ is Slot else ("result", line(op), next(_fresh))
            if twice:
                mid, t1 = q.mid.get(id(op), ({}, t0))
                for d, ev in q.events.items():
                    if len(ev) != n_events.get(d, 0):
                        self.unknown_counts.setdefault(d, op)
                        mark = Event(None, None, None, q.where(), loop=op)
                        mark.count, mark.why = self._trips(op, bounds, q, facts0, d, at_entry.get(d),
                                                           mid.get(d), count_events(ev))
                        ev.append(mark)
                if len(q.trace) > t0:
                    q.trace[t0:] = [_loop_entry(op, bounds, q.trace[t0:t1], q.trace[t1:])]
            res.append(q)
        return res

    def _trips(self, op, bounds, q: Path, facts0, d, entry, mid, end) -> tuple:
        """``(count, why)`` of the marker of loop ``op`` (bounds ``(lo, hi, step)``) on
        direction ``d`` of path ``q``: the events the loop adds beyond the two iterations
        explored (``entry`` / ``mid`` / ``end``: the counts before it, after its first and
        after its later iteration), or None and why that is not affine."""
        zero = (Count.of(0), None)
        entry, mid = entry or zero, mid or entry or zero
        why = next((w for w in (entry[1], mid[1], end[1]) if w), None)
        if why:
            return None, why
        first, later = mid[0] - entry[0], end[0] - mid[0]
        if not (first == later):
            return None, (f"the first iteration of the loop at {line(op)} pushes / pops a different "
                          f"number of {dir_name(d)} tiles than a later one")
        moving = [k for k in q.facts if k not in facts0 and not invariant(k)]
        if moving and not self._counts_moved(op, q, d, moving):
            moving = []
        if moving:
            return None, (f"the {dir_name(d)} pushes / pops of an iteration of the loop at {line(op)} "
                          "depend on a condition that changes from iteration to iteration")
        lo, hi, st = bounds
        if all(type(x) is int for x in bounds) and st:
            return Count.of(trip_count(lo, hi, st)) * later - (end[0] - entry[0]), None
        a, b = affine(lo), affine(hi)
        if a is None or b is None or st != 1:
            return None, (f"the trip count of the loop at {line(op)} is not an affine expression of "
                          "the kernel's integer scalars with step 1")
        return Count.trips(a, b) * later - (end[0] - entry[0]), None

    def _counts_moved(self, op, q: Path, d, moving) -> bool:
        """May one of the ``moving`` conditions (facts of path ``q`` that change from
        iteration to iteration of loop ``op``) change how many ``d`` tiles an iteration pushes
        or pops?  Only the condition of an if in the loop with a TPUSH / TPOP of ``d`` in it
        can (an ``if i > 0: TFREE`` cannot); one not found among them may."""
        guards = set()
        for o in op.walk():
            if o.is_a(IfOp) and any(x.is_a(TPush, TPop) and ring_of(x) == d for x in o.walk()):
                v = q.env.get(o.cond)
                if v is None:
                    return True
                guards.add(v)
        conds = {q.env.get(o.cond) for o in op.walk() if o.is_a(IfOp)}
        return any(k in guards or k not in conds for k in moving)

    def _balanced(self, op, p: Path, before: dict, bounds=(None, None, None)) -> None:
        lo, hi, st = bounds
        for d, h in p.held.items():
            n0 = before.get(d, 0)
            lim = self.slot_num(d)
            if len(h) > n0 and lim.pop_frees:
                continue        # a TPOP that frees its slot itself holds nothing
            if len(h) > n0:
                s = h[-1]
                # its values run the loop often enough to hold more than the limit
                need = ("ge", ("sub", hi, lo), (lim.n - n0) // (len(h) - n0) + 1) if st == 1 else None
                # and the loops in it that popped the slot run too
                kept = self._running
                self._running = list(dict.fromkeys(kept + list(s.running or ()) + ([need] if need else [])))
                try:
                    self.report_on(p, "unbounded_pops", s.op,
                            f"each iteration of the loop at {line(op)} leaves {len(h) - n0} more "
                            f"slot(s) of the {dir_name(d)} ring held (TPOP{pop_site(s)}); its trip count is "
                            "not known statically, so the outstanding pops can exceed SLOT_NUM",
                            "TFREE in the same iteration every slot the iteration pops")
                finally:
                    self._running = kept
            elif len(h) < n0:
                self.report_on(p, "unbounded_frees", op,
                            f"each iteration of the loop at {line(op)} frees {n0 - len(h)} more "
                            f"slot(s) of the {dir_name(d)} ring than it pops; its trip count is not "
                            "known statically, so a later iteration frees a slot never popped",
                            "pair every TFREE in the loop with a TPOP in the same iteration")



__all__ = ["Explorer", "Incomplete"]


def trip_count(lo: int, hi: int, st: int) -> int:
    """The iterations of ``range(lo, hi, st)`` (``st`` not 0) - also past the machine's
    sizes, where ``len(range(...))`` fails (an unsigned division of a negative value is
    about 2**64 trips)."""
    return max(0, -((lo - hi) // st)) if st > 0 else max(0, -((hi - lo) // -st))


def iv_range(bounds) -> tuple:
    """``(lo, hi)``: the loop variable of ``range(start, stop, step)`` is in [lo, hi); a step
    not known statically leaves it anywhere (a bound no constraint can hold)."""
    lo, hi, st = bounds
    if type(st) is int and st > 0:
        return lo, hi
    if type(st) is int and st < 0:
        return ("add", hi, 1), ("add", lo, 1)
    return ("unknown step",), ("unknown step",)


def _loop_entry(op, bounds, first: list, later: list) -> tuple:
    """The trace entry of a loop of unknown trip count: ``("loop", trips, body, op, why)``,
    ``trips`` the (lo, hi) Affines of its trip count ``max(0, hi - lo)`` and ``body`` one
    iteration's entries, or ``why`` (trips None) the loop cannot be repeated as one body."""
    lo, hi, st = bounds
    if all(type(x) is int for x in bounds) and st:
        lo, hi, st = 0, trip_count(lo, hi, st), 1
    a, b = affine(lo), affine(hi)
    why = None
    if a is None or b is None or st != 1:
        why = f"the trip count of the loop at {line(op)} is not an affine expression with step 1"
    elif _one_inner_loop(first, later):
        # its body is one loop, alike in every iteration: the two are one loop of the
        # product of their trip counts (the inner loop's iterations, one after the other)
        (_, (c, d), body, _, _), = later
        trips = derived("mul", derived("max", b - a, const(0)), derived("max", d - c, const(0)))
        return ("loop", (const(0), trips), body, op, None)
    elif any(e[0] == "loop" for e in later):
        why = f"the loop at {line(op)} holds another loop of unknown trip count"
    elif len(first) != len(later) or any(x[0] != y[0] or x[1] != y[1] or x[2] is not y[2]
                                         for x, y in zip(first, later)):
        why = f"the iterations of the loop at {line(op)} do not all push / pop / free alike"
    return ("loop", None if why else (a, b), tuple(later), op, why)


def _one_inner_loop(first: list, later: list) -> bool:
    """Is each of an outer loop's iteration traces ``first`` / ``later`` one loop entry, of
    the same trip count (not depending on the outer loop's variable) and body?"""
    if len(first) != 1 or len(later) != 1 or first[0][0] != "loop" or later[0][0] != "loop":
        return False
    (x, y) = first[0], later[0]
    return x[1] is not None and x[1] == y[1] and len(x[2]) == len(y[2]) and \
        all(e[0] == f[0] and e[1] == f[1] and e[2] is f[2] for e, f in zip(x[2], y[2]))


def _branches(op) -> dict:
    """id(if op) -> the region index of each ``pl.if`` around ``op``."""
    out = {}
    while op is not None:
        block = op.parent
        region = block.parent if block is not None else None
        owner = region.parent if region is not None else None
        if owner is not None and owner.is_a(IfOp):
            out[id(owner)] = owner.regions.index(region)
        op = owner
    return out


def _sibling_branches(a, b) -> bool:
    """Are ops ``a`` and ``b`` in different branches of one ``pl.if``?"""
    ba, bb = _branches(a), _branches(b)
    return any(k in bb and bb[k] != r for k, r in ba.items())


def _negative_at(op, negative: bool) -> tuple:
    """``(where to report, what to add)`` for a GM window of ``op`` out of bounds: an offset
    that is negative is wrong where the offsets are written, so a ``.pto`` load / store whose
    window a partition view made reports it at that ``pto.partition_view`` (``Loc.window``),
    as the run refuses its negative offsets there, naming the load / store; else at ``op``,
    naming the partition view (:func:`_window_of`)."""
    w = getattr(op.loc, "window", None)
    if negative and w is not None:
        return w, f"; negative offsets: this pto.partition_view makes the window of the {op.name} at {line(op)}"
    return None, _window_of(op)


def _window_of(op) -> str:
    """``; its window: the pto.partition_view at line N`` for a ``.pto`` load / store whose
    window a partition view made (``Loc.window``), else nothing."""
    w = getattr(op.loc, "window", None)
    return f"; its window: the pto.partition_view at line {w.line}" if w is not None else ""
