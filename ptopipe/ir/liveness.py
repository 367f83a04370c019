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

How many buffers a statement needs comes from an abstract run of the function over
*instances* (:class:`_Instances`): every value that may hold a tile made by statement ``D``
counts how many times ``D`` may have run again since that tile was made (loops run to a
fixpoint, branches joined).  A read of a value whose count may be ``n`` needs ``D`` to have
``n + 1`` buffers, used in turn by its successive executions (``prev = cur`` with ``cur =
pl.load(...)`` and a later read of ``prev`` needs 2).  A count without bound (a tile kept
under a condition, or carried out of an inner loop that may run again) is a CompileError
at the read: no number of buffers keeps it, the kernel must copy the tile it keeps.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import CompileError
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
    loops: tuple = ()          # every loop around the definition, outermost first
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
        self.defined_at: dict = {}    # var name -> position of its definition
        self.top_pos: dict = {}       # id(top-level statement) -> its last position
        self.depth = 0                # nesting in loops and branches

    # -- pass 1: positions, storages, alias sets, reads ---------------------------------
    def body(self, stmts) -> None:
        for s in stmts:
            self.stmt(s)
            if self.depth == 0:
                self.top_pos[id(s)] = self.pos - 1

    def nested(self, stmts) -> None:
        self.depth += 1
        self.body(stmts)
        self.depth -= 1

    def stmt(self, s) -> None:
        loop = self.loops[-1] if self.loops else None
        if isinstance(s, For):              # tile expressions among the inits: before the loop
            for e in s.inits:
                self.temps(e, None, loop)
        if isinstance(s, (For, If)):
            p = self.pos
            self.pos += 1
            for key in self.open_temps:
                self.storages[key].end = p
            self.open_temps = []
        if isinstance(s, For):
            self.read_exprs((s.start, s.stop, s.step) + tuple(s.inits), p)
            for v in s.iter_args:
                self.defined_at[v.name] = p
            self.loops.append(s)
            self.nested(s.body)
            self.yields(s.yields, s)
            last = self.pos - 1
            self.loops.pop()
            self.span[id(s)] = (p, max(p, last))
            for v in s.results:
                self.defined_at[v.name] = last
            return
        if isinstance(s, If):
            self.read_exprs((s.cond,), p)
            self.nested(s.then_body)
            self.yields(s.then_yields, loop)
            self.nested(s.else_body)
            self.yields(s.else_yields, loop)
            for v in s.results:
                self.defined_at[v.name] = self.pos - 1
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
            self.defined_at[s.var.name] = p
            v = s.value
            if owns_storage(v):
                self.storages[s.var.name] = Storage(s.var.name, v.type, p, p, loop, tuple(self.loops),
                                                   loc=s.loc)
                self.refs[s.var.name] = frozenset((s.var.name,))
            elif isinstance(v, Var):
                self.refs[s.var.name] = self.refs.get(v.name, frozenset())
                self.copy_of[s.var.name] = v.name

    def yields(self, ys, loop) -> None:
        """A body's yields, evaluated at its end (tile expressions among them made there)."""
        for e in ys:
            self.temps(e, None, loop)
        p = self.pos
        self.pos += 1
        self.read_exprs(ys, p)
        for key in self.open_temps:
            self.storages[key].end = p
        self.open_temps = []

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
        self.storages[key] = Storage(key, e.type, p, p, loop, tuple(self.loops), loc=e.loc)
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


def _src(e):
    """What a yielded / init expression refers to: a variable, or a nested op's storage."""
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Call) and owns_storage(e):
        return ("call", id(e))
    return None


def _aliases(fn_body, refs: dict, copy_of: dict) -> None:
    """Loop iter_args / results, branch results and ``y = x`` refer to what flows into them
    (to a fixpoint: a yield may refer back to its own iter_arg)."""
    flows = [(y, (x,)) for y, x in copy_of.items()]      # (target var, source names / keys)
    for s in walk(fn_body):
        if isinstance(s, For):
            for p, init, y, r in zip(s.iter_args, s.inits, s.yields, s.results):
                flows.append((p.name, (_src(init), _src(y))))
                flows.append((r.name, (_src(init), _src(y))))
        elif isinstance(s, If):
            for r, a, b in zip(s.results, s.then_yields, s.else_yields):
                flows.append((r.name, (_src(a), _src(b))))
    changed = True
    while changed:
        changed = False
        for target, srcs in flows:
            new = refs.get(target, frozenset())
            for name in srcs:
                if name is not None:
                    new = new | refs.get(name, frozenset())
            if new != refs.get(target, frozenset()):
                refs[target] = new
                changed = True


_UNBOUNDED = 8                                   # a count this high has no bound


def _dsl_name(name: str) -> str:
    """The DSL variable of an SSA name (``keep_2`` -> ``keep``)."""
    return name.rstrip("0123456789").rstrip("_") or name


class _Instances:
    """The abstract run behind ``copies``: ``state[v] = {D: n}`` when the alias ``v`` (a copy,
    an iter_arg, a loop or branch result) may hold a tile made by storage ``D`` whose
    statement may have overwritten it ``n`` times since (saturating at _UNBOUNDED); a
    statement's own result holds its newest tile (``{D: 0}``, not stored).  Defining an
    alias replaces what it held (SSA); a loop runs to a fixpoint of its head state, the
    join of the entry and the back edge; ``need[D]`` is the largest count a read sees.
    Aliases past their last read are dropped between top-level statements (``ends``), so
    the state stays as small as what is live."""

    def __init__(self, storages: dict, ends: dict):
        self.storages = storages
        self.ends = ends
        self.need: dict = {}
        self.inner: dict = {}          # id(For) -> names and temp keys defined in its body
        self.loc = None                # the statement being run (for errors)

    def top(self, stmts, positions: dict) -> None:
        state = {}
        for s in stmts:
            state = self.stmt(s, state)
            p = positions.get(id(s))
            if p is not None:
                for v in [v for v in state if self.ends.get(v, -1) <= p]:
                    del state[v]

    def body(self, stmts, state: dict) -> dict:
        for s in stmts:
            state = self.stmt(s, state)
        return state

    def held(self, state: dict, v) -> dict:
        h = state.get(v)
        if h is not None:
            return h
        return {v: 0} if v in self.storages else {}

    def define(self, dst: dict, target, src: dict, value) -> None:
        """SSA definition of the alias ``target``: it holds what ``value`` holds in ``src``."""
        h = self.held(src, value) if value is not None else {}
        if h:
            dst[target] = dict(h)
        else:
            dst.pop(target, None)

    def stmt(self, s, state: dict) -> dict:
        self.loc = s.loc
        if isinstance(s, For):
            for e in (s.start, s.stop, s.step):
                self.expr(e, state)
            srcs = [self.value(e, state) for e in s.inits]
            entry = _copy(state)
            for p, src in zip(s.iter_args, srcs):
                self.define(entry, p.name, state, src)
            inner = self.inner.get(id(s))
            if inner is None:
                inner = self.inner[id(s)] = _defined_in(s.body) - {p.name for p in s.iter_args}
            head = entry
            while True:
                end = self.body(s.body, _copy(head))
                ys = [self.value(e, end) for e in s.yields]
                back = _copy(end)
                for p, y in zip(s.iter_args, ys):
                    self.define(back, p.name, end, y)
                for v in inner:             # the body's own values end with the iteration
                    back.pop(v, None)
                nxt = _join(entry, back)
                if nxt == head:
                    break
                head = nxt
            out = _copy(head)
            for r, p in zip(s.results, s.iter_args):
                self.define(out, r.name, head, p.name)
            for p in s.iter_args:
                out.pop(p.name, None)
            return out
        if isinstance(s, If):
            self.expr(s.cond, state)
            outs = []
            for body, ys in ((s.then_body, s.then_yields), (s.else_body, s.else_yields)):
                out = self.body(body, _copy(state))
                vals = [self.value(e, out) for e in ys]
                for r, v in zip(s.results, vals):
                    self.define(out, r.name, out, v)
                outs.append(out)
            return _join(outs[0], outs[1])
        if isinstance(s, Assign):
            v = s.value
            if isinstance(v, Var):
                self.define(state, s.var.name, state, v.name)
            elif owns_storage(v):
                for a in v.args:
                    self.expr(a, state)
                _run(state, s.var.name)
            else:
                self.expr(v, state)
            return state
        for e in stmt_exprs(s):
            self.expr(e, state)
        return state

    def value(self, e, state: dict):
        """Evaluate a forwarded expression (an init / a yield): a variable is passed on, a
        nested op runs; returns what the target will refer to."""
        if isinstance(e, Var):
            return e.name
        self.expr(e, state)
        return _src(e)

    def expr(self, e, state: dict) -> None:
        """Reads of ``e`` (and runs of the nested ops that make tiles in it)."""
        if isinstance(e, Var):
            self.read(e.name, state)
            return
        if isinstance(e, Call):
            for a in e.args:
                self.expr(a, state)
            if owns_storage(e):
                key = ("call", id(e))
                if key in self.storages:
                    _run(state, key)
            return
        for x in getattr(e, "items", ()) or ():
            self.expr(x, state)
        for name in ("lhs", "rhs", "operand"):
            x = getattr(e, name, None)
            if x is not None:
                self.expr(x, state)

    def read(self, name, state: dict) -> None:
        h = state.get(name)
        if not h:
            return
        for d, n in h.items():
            if n:
                if n >= _UNBOUNDED:
                    st = self.storages[d]
                    raise CompileError(
                        f"'{_dsl_name(name)}' may hold the tile made at {st.loc} any number of "
                        "executions ago, and that statement has run again since: its buffer is "
                        "reused, so the value read here may be gone",
                        where=str(self.loc) if self.loc else None,
                        fix="copy the tile you keep into a tile of its own when you keep it (for a Vec "
                            "tile: kept = pl.move(t, space=pl.Vec)), or read it before the statement "
                            "runs again")
                if n > self.need.get(d, 0):
                    self.need[d] = n


def _run(state: dict, key) -> None:
    """Storage ``key``'s statement runs: every alias holding a tile it made before now holds
    one that is one run older (its own result holds the new one)."""
    for h in state.values():
        n = h.get(key)
        if n is not None and n < _UNBOUNDED:
            h[key] = n + 1


def _defined_in(body) -> set:
    out = set()
    for s in walk(body):
        if isinstance(s, Assign):
            out.add(s.var.name)
        elif isinstance(s, For):
            out.update(v.name for v in s.iter_args + s.results)
        elif isinstance(s, If):
            out.update(v.name for v in s.results)
    return out


def _copy(state: dict) -> dict:
    return {v: dict(h) for v, h in state.items()}


def _join(a: dict, b: dict) -> dict:
    out = _copy(a)
    for v, h in b.items():
        o = out.setdefault(v, {})
        for d, n in h.items():
            if n > o.get(d, -1):
                o[d] = n
    return out


def analyse(fn_body) -> dict:
    """``{storage key: Storage}`` with live spans and copies for one function body."""
    lv = _Liveness()
    lv.body(fn_body)
    refs, storages, span = lv.refs, lv.storages, lv.span
    for key in storages:
        if isinstance(key, tuple):
            refs[key] = frozenset((key,))
    _aliases(fn_body, refs, lv.copy_of)
    ends = {}                                   # name -> last position it may be read
    for name, pos, enclosing in lv.uses:
        for loop in enclosing:
            first, last = span[id(loop)]
            if lv.defined_at.get(name, -1) < first:
                pos = max(pos, last)
        if pos > ends.get(name, -1):
            ends[name] = pos
    inst = _Instances(storages, ends)
    inst.top(fn_body, lv.top_pos)
    for d, n in inst.need.items():
        storages[d].copies = n + 1
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
    for s in walk(fn_body):                     # carried: live through the loop (and after it)
        if isinstance(s, For):
            first, last = span[id(s)]
            for e in tuple(s.yields) + tuple(s.inits):
                for key in refs.get(_src(e), ()) if _src(e) is not None else ():
                    st = storages.get(key)
                    if st is not None and first <= st.start <= last:
                        st.start, st.end = first, max(st.end, last)
                    elif st is not None:        # an init: read by the loop's iter_arg
                        st.end = max(st.end, last)
    return storages
