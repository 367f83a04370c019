"""Liveness of tile storage in one DSL function: for every statement that produces a tile
into storage of its own (``x = pl.add(...)``, a nested op's temporary, the scratch tile of
an op that takes one - ``pl.row_sum``), the span of
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

How many buffers a statement needs (a kept tile read after its statement ran again) comes
from the abstract run over tile instances in :mod:`.instances`.
"""
from __future__ import annotations

from dataclasses import dataclass

from .instances import Instances, alias_source, owns_storage
from .nodes import Assign, BufferAttr, Call, Const, For, If, Var, stmt_exprs, walk
from .ops import SCRATCH_OPS
from .types import TileValueType


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
                self.scratch(v, s.var.name, p, loop)
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
        cls = e.__class__
        if cls is Var or cls is Const or cls is BufferAttr:
            return      # leaves: none has the nested-expression fields walked below
        if cls is not Call:
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
        self.scratch(e, id(e), p, loop)

    def scratch(self, c: Call, owner, p: int, loop) -> None:
        """The scratch tile of an op that takes one (``SCRATCH_OPS``: the size of its
        source), live only while the op runs at ``p``; keyed ``("scratch", owner)`` - the
        var the op assigns, or id() of a nested op."""
        if c.op in SCRATCH_OPS and isinstance(c.args[0].type, TileValueType):
            key = ("scratch", owner)
            self.storages[key] = Storage(key, c.args[0].type, p, p, loop, tuple(self.loops),
                                         loc=c.loc)

    def read_exprs(self, exprs, p: int) -> None:
        for e in exprs:
            self.read(e, p)

    def read(self, e, p: int) -> None:
        """The values ``e`` reads at position ``p`` (a nested op's operands are read at its
        own position, by :meth:`temps`)."""
        cls = e.__class__
        if cls is Var:
            self.uses.append((e.name, p, tuple(self.loops)))
            return
        if cls is Call:                 # a Call's only nested expressions are its args
            if ("call", id(e)) not in self.storages:
                for x in e.args:
                    self.read(x, p)
            return
        if cls is Const or cls is BufferAttr:
            return      # leaves: none has the nested-expression fields walked below
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
    flows = [(y, (x,)) for y, x in copy_of.items()]      # (target var, source names / keys)
    for s in walk(fn_body):
        if isinstance(s, For):
            for p, init, y, r in zip(s.iter_args, s.inits, s.yields, s.results):
                flows.append((p.name, (alias_source(init), alias_source(y))))
                flows.append((r.name, (alias_source(init), alias_source(y))))
        elif isinstance(s, If):
            for r, a, b in zip(s.results, s.then_yields, s.else_yields):
                flows.append((r.name, (alias_source(a), alias_source(b))))
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


def analyse(fn_body) -> dict:
    """``{storage key: Storage}`` with live spans and copies for one function body."""
    lv = _Liveness()
    lv.body(fn_body)
    refs, storages, span = lv.refs, lv.storages, lv.span
    for key in storages:
        if isinstance(key, tuple):
            refs[key] = frozenset((key,))
    _aliases(fn_body, refs, lv.copy_of)

    def read_end(pos: int, defined: int, enclosing) -> int:
        """A read at ``pos`` of something defined at ``defined``: read in a loop, defined
        before it, it is read again until the loop's end."""
        for loop in enclosing:
            first, last = span[id(loop)]
            if defined < first:
                pos = max(pos, last)
        return pos

    ends = {}                                   # name -> last position it may be read
    for name, pos, enclosing in lv.uses:
        ends[name] = max(ends.get(name, -1), read_end(pos, lv.defined_at.get(name, -1), enclosing))
    inst = Instances(storages, ends)
    inst.top(fn_body, lv.top_pos)
    for d, n in inst.need.items():
        storages[d].copies = n + 1
    for name, pos, enclosing in lv.uses:
        for key in refs.get(name, ()):
            st = storages.get(key)
            if st is not None:
                st.end = max(st.end, read_end(pos, st.start, enclosing))
    for s in walk(fn_body):                     # carried: live through the loop (and after it)
        if isinstance(s, For):
            first, last = span[id(s)]
            for e in tuple(s.yields) + tuple(s.inits):
                for key in refs.get(alias_source(e), ()) if alias_source(e) is not None else ():
                    st = storages.get(key)
                    if st is not None and first <= st.start <= last:
                        st.start, st.end = first, max(st.end, last)
                    elif st is not None:        # an init: read by the loop's iter_arg
                        st.end = max(st.end, last)
    return storages
