"""Liveness of tile storage in one DSL function: for every statement that produces a tile
into storage of its own (``x = pl.add(...)``, a nested op's temporary), the span of
program positions during which that storage may still be read, and how many copies of it
a loop needs.

Positions number the statements in program order (pre-order: a loop or branch, then its
body).  A storage is live from its defining statement to the last read of any value that
may refer to it.  Values refer to storage through SSA aliases: a loop's iter_arg and
result refer to what its init and its yield refer to; a branch result to what either
branch yields; ``y = x`` to what ``x`` refers to.  A read inside a loop of storage
defined before the loop keeps it live to the loop's end (the next iteration reads it
again); storage defined in a loop and carried to the next iteration is live through the
whole loop.

A carried value read *after* its producing statement ran again in the next iteration
(``prev = cur`` with ``cur = pl.load(...)`` and a later read of ``prev``) would see the
new value if both lived in one buffer: such a statement gets ``copies`` > 1 buffers, used
in turn by successive executions (the value carried ``d`` iterations back needs ``d + 1``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import Assign, Call, For, If, Var, calls, stmt_exprs, walk
from ..ir.types import TileValueType


@dataclass
class Storage:
    """The storage one statement (or nested op) writes its tile result into."""
    key: object                # the Assign's var name, or ("call", id(nested Call))
    type: TileValueType
    start: int                 # position of the defining statement
    end: int                   # last position it may be read (>= start)
    loop: "For | None"         # the innermost loop around the definition
    copies: int = 1
    loc: object = None


def owns_storage(c) -> bool:
    """A tile-producing op whose result needs storage of its own (TPOP binds to a ring slot)."""
    return isinstance(c, Call) and isinstance(c.type, TileValueType) and c.op != "tpop"


class _Liveness:
    def __init__(self):
        self.pos = 0
        self.storages: dict = {}      # key -> Storage
        self.refs: dict = {}          # var name -> frozenset of storage keys
        self.loops: list = []         # enclosing For statements (innermost last)
        self.span: dict = {}          # id(For) -> (first, last) position
        self.uses: list = []          # (var name, position, loops enclosing the read)
        self.copy_of: dict = {}       # var name -> var name, for ``y = x``
        self.open_temps: list = []    # nested-op results not yet read by their consumer

    # -- pass 1: positions, storages, alias sets, reads ---------------------------------
    def body(self, stmts) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s) -> None:
        loop = self.loops[-1] if self.loops else None
        if isinstance(s, (For, If)):
            p = self.pos
            self.pos += 1
        if isinstance(s, For):
            self.read_exprs((s.start, s.stop, s.step) + tuple(s.inits), p)
            self.loops.append(s)
            self.body(s.body)
            last = self.pos - 1
            self.read_exprs(s.yields, last)
            self.loops.pop()
            self.span[id(s)] = (p, max(p, last))
            return
        if isinstance(s, If):
            self.read_exprs((s.cond,), p)
            self.body(s.then_body)
            self.read_exprs(s.then_yields, self.pos - 1)
            self.body(s.else_body)
            self.read_exprs(s.else_yields, self.pos - 1)
            return
        exprs = stmt_exprs(s)
        top = s.value if isinstance(s, Assign) else None
        for e in exprs:                     # nested ops first, each at a position of its own
            self.temps(e, top, loop)
        p = self.pos                        # the statement itself: after its nested ops
        self.pos += 1
        self.read_exprs(exprs, p)
        for key in self.open_temps:         # read by the statement's own op
            self.storages[key].end = p
        self.open_temps = []
        if isinstance(s, Assign):
            v = s.value
            if owns_storage(v):
                self.storages[s.var.name] = Storage(s.var.name, v.type, p, p, loop, loc=s.loc)
                self.refs[s.var.name] = frozenset((s.var.name,))
            elif isinstance(v, Var):
                self.refs[s.var.name] = self.refs.get(v.name, frozenset())
                self.copy_of[s.var.name] = v.name

    def temps(self, e, top, loop) -> None:
        """Positions and storage for the nested ops of ``e`` (post-order): a nested op's
        result is read by the op that takes it as an operand."""
        if not isinstance(e, Call):
            for x in getattr(e, "items", ()) or ():
                self.temps(x, top, loop)
            for name in ("lhs", "rhs", "operand"):
                x = getattr(e, name, None)
                if x is not None:
                    self.temps(x, top, loop)
            return
        outer = self.open_temps
        self.open_temps = []
        for x in e.args:
            self.temps(x, top, loop)
        inner, self.open_temps = self.open_temps, outer
        if e is top or not owns_storage(e):
            self.open_temps.extend(inner)    # read when the statement's op runs
            return
        p = self.pos
        self.pos += 1
        for key in inner:                   # this op reads its operands' temps
            self.storages[key].end = p
        for x in e.args:                    # and its other operands
            self.read(x, p)
        key = ("call", id(e))
        self.storages[key] = Storage(key, e.type, p, p, loop, loc=e.loc)
        self.open_temps.append(key)

    def read_exprs(self, exprs, p: int) -> None:
        for e in exprs:
            self.read(e, p)

    def read(self, e, p: int) -> None:
        """The values ``e`` reads at position ``p`` (a nested op's operands are read at its
        own position, by :meth:`temps`)."""
        if isinstance(e, Var):
            self.uses.append((e.name, p, tuple(self.loops)))
            return
        if e.__class__ is Call and ("call", id(e)) in self.storages:
            return
        for name in ("args", "items"):
            for x in getattr(e, name, ()):
                self.read(x, p)
        for name in ("lhs", "rhs", "operand"):
            x = getattr(e, name, None)
            if x is not None:
                self.read(x, p)


def _aliases(fn_body, refs: dict, copy_of: dict) -> None:
    """Loop iter_args / results, branch results and ``y = x`` refer to what flows into them
    (to a fixpoint: a yield may refer back to its own iter_arg)."""
    flows = [(y, (x,)) for y, x in copy_of.items()]      # (target var, source var names)
    for s in walk(fn_body):
        if isinstance(s, For):
            for p, init, y, r in zip(s.iter_args, s.inits, s.yields, s.results):
                flows.append((p.name, _names(init, y)))
                flows.append((r.name, _names(init, y)))
        elif isinstance(s, If):
            for r, a, b in zip(s.results, s.then_yields, s.else_yields):
                flows.append((r.name, _names(a, b)))
    changed = True
    while changed:
        changed = False
        for target, srcs in flows:
            new = refs.get(target, frozenset())
            for name in srcs:
                new = new | refs.get(name, frozenset())
            if new != refs.get(target, frozenset()):
                refs[target] = new
                changed = True


def _names(*exprs) -> tuple:
    return tuple(e.name for e in exprs if isinstance(e, Var))


def _carry_depths(loop: For, refs: dict, storages: dict, copy_of: dict) -> dict:
    """For ``loop``'s iter_args: ``{iter_arg name: {storage key: iterations back}}`` - how
    many iterations ago the storage's defining statement (inside ``loop``) produced the
    value the iter_arg carries."""
    own = {k for k, st in storages.items() if st.loop is loop}
    depth: dict = {p.name: {} for p in loop.iter_args}
    for _ in range(len(loop.iter_args) + 1):
        for p, y in zip(loop.iter_args, loop.yields):
            if not isinstance(y, Var):
                continue
            d = dict(depth[p.name])
            src = y.name
            while src in copy_of and src not in depth:
                src = copy_of[src]
            if src in depth:                    # carries another iter_arg: one more back
                for k, n in depth[src].items():
                    d[k] = max(d.get(k, 0), n + 1)
            else:
                for k in refs.get(y.name, ()):
                    if k in own:
                        d[k] = max(d.get(k, 0), 1)
            depth[p.name] = d
    return depth


def analyse(fn_body) -> dict:
    """``{storage key: Storage}`` with live spans and copies for one function body."""
    lv = _Liveness()
    lv.body(fn_body)
    refs, storages, span = lv.refs, lv.storages, lv.span
    _aliases(fn_body, refs, lv.copy_of)
    loops = [s for s in walk(fn_body) if isinstance(s, For)]
    carried = {}                                   # var name -> {storage key: iterations back}
    after = {}          # loop result -> {storage key: iterations before the last it was made}
    for loop in loops:
        depth = _carry_depths(loop, refs, storages, lv.copy_of)
        carried.update(depth)
        for y, r in zip(loop.yields, loop.results):
            src = y.name if isinstance(y, Var) else None
            while src in lv.copy_of and src not in depth:
                src = lv.copy_of[src]
            if src in depth:
                after[r.name] = depth[src]
    for name, pos, enclosing in lv.uses:
        for key in refs.get(name, ()):
            st = storages.get(key)
            if st is None:
                continue
            end = pos
            for loop in enclosing:              # read in a loop, defined before it
                first, last = span[id(loop)]
                if st.start < first:
                    end = max(end, last)
            if end > st.end:
                st.end = end
            src = name
            while src in lv.copy_of and src not in carried:
                src = lv.copy_of[src]
            back = carried.get(src, {}).get(key, 0)
            res = name
            while res in lv.copy_of and res not in after:
                res = lv.copy_of[res]
            if after.get(res, {}).get(key, 0):
                # read after the loop: the last iteration made the storage anew
                st.copies = max(st.copies, after[res][key] + 1)
            if back and pos > st.start and st.loop is not None:
                # an older value of the storage is read after it is produced anew
                first, last = span[id(st.loop)]
                if pos <= last:
                    st.copies = max(st.copies, back + 1)
    for loop in loops:                          # carried into the next iteration
        first, last = span[id(loop)]
        for y in loop.yields:
            if isinstance(y, Var):
                for key in refs.get(y.name, ()):
                    st = storages.get(key)
                    if st is not None and first <= st.start <= last:
                        st.start, st.end = first, max(st.end, last)
    return storages
