"""How many buffers a DSL statement's tile storage needs: an abstract run of a function
over tile *instances*.  Every alias (a ``y = x`` copy, a loop iter_arg or result, a branch
result) that may hold a tile made by statement ``D`` counts how many times ``D`` may have run
again since that tile was made; loops run to a fixpoint of their head state, branches are
joined.  A read of an alias whose count may be ``n`` needs ``D`` to have ``n + 1`` buffers,
used in turn by its successive executions; a count without bound is a CompileError at the
read.  :mod:`.liveness` owns the live spans and calls this for the counts.
"""
from __future__ import annotations

from ..errors import CompileError
from .nodes import Assign, BufferAttr, Call, Const, For, If, Var, stmt_exprs, walk
from .opdefs import TPop
from .types import TileValueType


def owns_storage(c) -> bool:
    """A tile-producing op whose result needs storage of its own (TPOP binds to a ring slot)."""
    return isinstance(c, Call) and isinstance(c.type, TileValueType) and c.op != TPop.call_name


def alias_source(e):
    """What a yielded / init expression refers to: a variable, or a nested op's storage."""
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Call) and owns_storage(e):
        return ("call", id(e))
    return None


_UNBOUNDED = 8                                   # a count this high has no bound


def _dsl_name(name: str) -> str:
    """The DSL variable of an SSA name (``keep_2`` -> ``keep``)."""
    return name.rstrip("0123456789").rstrip("_") or name


class Instances:
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
        return alias_source(e)

    def expr(self, e, state: dict) -> None:
        """Reads of ``e`` (and runs of the nested ops that make tiles in it)."""
        cls = e.__class__
        if cls is Var:
            self.read(e.name, state)
            return
        if cls is Call:
            for a in e.args:
                self.expr(a, state)
            if owns_storage(e):
                key = ("call", id(e))
                if key in self.storages:
                    _run(state, key)
            return
        if cls is Const or cls is BufferAttr:
            return      # leaves: none has the nested-expression fields walked below
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
