"""Which ``for ... in range(...)`` loops of a Python kernel the fast-forward engine may take
whole iterations of, without running them (:meth:`ptopipe.sim.periodic.engine.FastForward.head`),
and the kernel rewritten so that those loops offer it their heads.

A Python kernel's loop is its own Python, which the engine cannot run in bulk; but when the
loop body is a plain sequence of instructions and integer arithmetic - what a streaming
kernel's loop is - every iteration makes the learned calls moved by the block (as the ``pl``
interpreter's shift-equivariant loops do: :mod:`ptopipe.runtime.skip`), and the engine may
move the loop variable by whole blocks instead of running them.  The body is read from the
kernel's source (:mod:`ast`) and qualifies when it is made only of:

- assignments to names (``x = ...``, ``x += ...``) of values that depend on the loop variable
  only through ``+``, ``-`` and ``*`` by values that do not move, and every name assigned in
  the body assigned before it is read in each iteration (no value carried from one iteration
  to the next);
- calls of the instructions the engine records (TLOAD, TSTORE, TMOV, TMATMUL, TPUSH, TPOP,
  TFREE, the vector families ...: any operands), ``GlobalTensor(...)``, ``t.data()``,
  ``t.assign(...)`` (which sets ``t`` for the iteration: ``t`` is assigned), the core's ids
  (``get_subblockid()`` ...) and a few pure builtins of values that do not move;
- attribute reads of modules and classes (``TileType.Mat``), subscripts and tuples of values
  that do not move, nested ``for`` loops over values that do not move;
- ``if`` statements on values that do not move, and *guards*: an ``if`` of the body's own (not
  in another branch or a nested loop) comparing a value that moves (``if i < n - 1:``), whose
  truth the engine keeps over a skip (:meth:`~ptopipe.sim.periodic.loops.SkipPlan.steady`).

At a skip, every value that meets a moving one in ``+``, ``-``, ``*`` must be a Python int (a
numpy integer wraps, a float rounds; a GM pointer may take an int: ``x.data() + off``), and a
guard's operands are compared: both are read from the kernel's frame then, so they may name
only values the frame holds as the last iteration read them (a name the body assigns once,
by a statement of its own) and call nothing but ``t.data()`` (a call would run on the core
that asks).  A loop that fails it runs recorded.  What the source cannot tell is checked as
the loop starts: what the body iterates or subscripts is a list, tuple, dict or range, and no
tensor the body sets with ``t.assign`` is reachable through another name it reads (an alias,
a list holding it), else the loop runs recorded.  The GM windows the skipped calls would use
are kept inside their tensors by the engine (a Python kernel's window is checked where an
instruction uses it).

The kernel is recompiled from its source with those loops' ``range(...)`` replaced by
:func:`_iterate`'s generator (the same lines, names, globals and closure cells); a kernel whose
source cannot be read or no longer compiles to the running code, or that declares
``global`` / ``nonlocal`` names, runs as given."""
from __future__ import annotations

import ast
import builtins
import inspect
import sys
import textwrap
import types
from dataclasses import dataclass

import greenlet

from ..sim.periodic.loops import INFINITE, Guard, Site, SkipPlan
from .context import get_block_idx, get_block_num, get_subblockdim, get_subblockid
from .tensor import GlobalTensor, GMPtr

#: the name the recompiled kernel calls its loops' iterator by (a closure cell of its own)
_LOOP = "__ptopipe_loop__"
#: the attribute of a kernel function its rewritten code is kept in: (the code read, the
#: rewritten code or None, its loops)
_KEPT = "__ptopipe_whole__"
#: calls of values that do not move whose result does not move either
_PURE = frozenset({get_subblockid, get_block_idx, get_block_num, get_subblockdim, int, len, min, max, abs})
_COMPARISONS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_AMBIGUOUS = "?"        # a value that moves, not as an affine form of the loop variable
_UNKNOWN = object()     # a value that cannot be read at a skip (no int: the skip is refused)


class _NotSkippable(Exception):
    pass


@dataclass(frozen=True)
class Loop:
    """A loop of a kernel that may be taken whole: its guards (each with the code of its two
    operands) and the values that meet a moving one (each must be an int at a skip; the
    flag: a GM pointer may stand there)."""
    line: int
    guards: tuple           # Guard per comparison of a value that moves
    operands: tuple         # per guard: (code of lhs, code of rhs)
    ints: tuple             # (code, a GM pointer allowed) per value that meets a moving one
    assigned: tuple         # the names whose tensor ``t.assign(...)`` sets in the body
    still: tuple            # the names the body reads and does not assign
    containers: tuple       # codes of what the body iterates or subscripts (a list, tuple, dict)


def hooked(f) -> bool:
    """Is ``f`` an instruction that hands its calls to the fast-forward engine (it reads
    ``core.ff``; :mod:`ptopipe.sim.periodic`)?"""
    code = getattr(f, "__code__", None)
    return (code is not None and getattr(f, "__module__", "").startswith("ptopipe.isa")
            and "ff" in code.co_names and "call" in code.co_names)


def take_whole(fn):
    """``fn`` with its loops that may be taken whole offering the engine their heads, or
    ``fn`` itself when it has none (or its source cannot be read: module docstring).  What
    its source says is read once per code object (kept on ``fn``)."""
    d = getattr(fn, "__dict__", None)
    got = d.get(_KEPT) if d is not None else None
    if got is None or got[0] is not fn.__code__ or not _same_names(fn, got[3]):
        seen: dict = {}
        got = (fn.__code__, *_rewritten(fn, seen), seen)
        if d is not None:
            d[_KEPT] = got
    _, code, loops, _ = got
    if code is None:
        return fn
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    cells[_LOOP] = types.CellType(_heads(loops))
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__,
                             tuple(cells[n] for n in code.co_freevars))
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__, new.__module__, new.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
    new.__annotations__ = fn.__annotations__
    return new


def _same_names(fn, seen: dict) -> bool:
    """Do the names the analysis of ``fn`` looked up still name what they named then (a
    global rebound to a helper of the kernel's own makes it read again)?"""
    resolve = _resolver(fn)
    try:
        return all(resolve(n) is o for n, o in seen.items())
    except _NotSkippable:
        return False


def _rewritten(fn, seen: dict) -> tuple:
    """The code of ``fn`` with its loops that may be taken whole calling :data:`_LOOP` in
    place of ``range`` (the loop's number first), and those loops; ``(None, ())`` when it
    has none.  ``seen``: the names looked up, and what they named."""
    found = _read(fn, seen)
    if found is None or not found[2]:
        return None, ()
    tree, defn, loops = found
    for k, (node, _) in enumerate(loops):
        it = node.iter
        node.iter = ast.copy_location(ast.Call(_at(ast.Name(_LOOP, ast.Load()), it), [_at(ast.Constant(k), it), *it.args],
                                               []), it)
    code = _compiled(tree, defn, fn)
    return (None, ()) if code is None else (code, tuple(loop for _, loop in loops))


def skippable(fn) -> tuple[Loop, ...]:
    """``fn``'s loops the engine may take whole, outermost first (module docstring)."""
    found = _read(fn)
    return () if found is None else tuple(loop for _, loop in found[2])


def _read(fn, seen: dict | None = None):
    """``fn``'s source as a module holding its definition (lines as in its file), the
    definition, and its loops that may be taken whole; None when it cannot be read.
    ``seen`` gets the names the analysis looked up and what they named."""
    if not isinstance(fn, types.FunctionType) or "__class__" in fn.__code__.co_freevars:
        return None
    try:
        src = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(src)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    if len(tree.body) != 1 or tree.body[0].__class__ is not ast.FunctionDef:
        return None
    defn = tree.body[0]
    first = defn.decorator_list[0].lineno if defn.decorator_list else defn.lineno
    ast.increment_lineno(tree, fn.__code__.co_firstlineno - first)
    if defn.name != fn.__code__.co_name or any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(defn)):
        return None
    if _compiled(tree, defn, fn, check=True) is None:
        return None             # (the source is not the running code's)
    resolve = _resolver(fn, seen)
    loops = []
    _find(defn.body, resolve, loops)
    return tree, defn, loops


def _compiled(tree, defn, fn, check: bool = False):
    """The code of ``defn`` compiled where its free names are cells as ``fn``'s (inside a
    function taking them, and the loop iterator's cell); with ``check``, None unless it is
    the running code of ``fn`` (its source read again is what runs)."""
    frees = [n for n in fn.__code__.co_freevars] + ([] if check else [_LOOP])
    outer = ast.FunctionDef("__ptopipe_make__",
                            ast.arguments([], [_at(ast.arg(n), defn) for n in frees], None, [], [], None, []),
                            [defn, _at(ast.Return(_at(ast.Name(defn.name, ast.Load()), defn)), defn)], [], None)
    mod = ast.Module([_at(outer, defn)], [])
    try:
        top = compile(mod, fn.__code__.co_filename, "exec")
    except (SyntaxError, ValueError, TypeError):
        return None
    make = next(c for c in top.co_consts if isinstance(c, types.CodeType))
    code = next((c for c in make.co_consts if isinstance(c, types.CodeType) and c.co_name == defn.name), None)
    if code is None:
        return None
    if check:
        run = fn.__code__
        same = (code.co_code == run.co_code and code.co_names == run.co_names and code.co_consts == run.co_consts
                and code.co_varnames == run.co_varnames and code.co_freevars == run.co_freevars
                and code.co_firstlineno == run.co_firstlineno)
        return code if same else None
    return code if set(code.co_freevars) <= set(frees) else None


def _at(node, where):
    """``node`` at ``where``'s place in the source."""
    return ast.copy_location(node, where)


def _resolver(fn, seen: dict | None = None):
    """Name -> what it names for ``fn`` outside its locals (closure, globals, builtins);
    ``_NotSkippable`` for one it cannot tell (a local, an empty cell).  ``seen`` gets each
    name looked up and what it named."""
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    local = set(fn.__code__.co_varnames) | set(fn.__code__.co_cellvars)
    g = fn.__globals__
    b = g.get("__builtins__", builtins)
    b = b if isinstance(b, dict) else vars(b)

    def lookup(name: str):
        if name in local:
            raise _NotSkippable
        if name in cells:
            try:
                return cells[name].cell_contents
            except ValueError:
                raise _NotSkippable from None
        if name in g:
            return g[name]
        if name in b:
            return b[name]
        raise _NotSkippable

    def resolve(name: str):
        o = lookup(name)
        if seen is not None:
            seen[name] = o
        return o
    return resolve


def _find(stmts, resolve, out: list) -> None:
    """The loops of ``stmts`` (outermost first) that may be taken whole."""
    for st in stmts:
        if st.__class__ is ast.For:
            loop = _loop(st, resolve)
            if loop is not None:
                out.append((st, loop))
                continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            sub = getattr(st, field, None)
            if sub and st.__class__ is not ast.FunctionDef and st.__class__ is not ast.ClassDef:
                _find(sub, resolve, out)


def _loop(st: ast.For, resolve) -> Loop | None:
    """``st`` as a :class:`Loop`, or None when it may not be taken whole."""
    it = st.iter
    if (st.orelse or st.target.__class__ is not ast.Name or it.__class__ is not ast.Call
            or it.func.__class__ is not ast.Name or it.keywords or not 1 <= len(it.args) <= 3
            or any(a.__class__ is ast.Starred for a in it.args)):
        return None
    try:
        if resolve(it.func.id) is not range:
            return None
        a = _Body(st, resolve)
        for x in it.args:
            if a.expr(x) is not None:
                return None
        a.block(st.body, top=True)
    except _NotSkippable:
        return None
    return Loop(st.lineno, tuple(a.guards), tuple(a.operands), tuple(a.ints), tuple(sorted(a.receivers)),
                tuple(sorted(a.still)), tuple(a.containers))


class _Body:
    """The values of a loop body that move with its variable (``forms``: name -> its affine
    form, :func:`~ptopipe.sim.periodic.loops.coefficient`'s, with code objects for the values
    that do not move) and the names assigned so far in an iteration (``defined``)."""

    def __init__(self, loop: ast.For, resolve):
        self.var, self.resolve, self.file = loop.target.id, resolve, "<kernel>"
        self.assigned, self.receivers, self.once, reads = set(), set(), set(), set()
        counts: dict = {}
        for n in ast.walk(ast.Module(loop.body, [])):
            name = None
            if n.__class__ is ast.Name:
                if n.ctx.__class__ is ast.Load:
                    reads.add(n.id)
                else:
                    name = n.id
            elif _assign_call(n) is not None:
                name = n.value.func.value.id
                self.receivers.add(name)
            if name is not None:
                self.assigned.add(name)
                counts[name] = counts.get(name, 0) + 1
        self.counts = counts
        # names a skip may read from the kernel's frame: assigned once, by a statement of the
        # body's own (the frame then holds what the last iteration read at every use)
        self.once = {n for n, k in counts.items() if k == 1} - {
            t.id for st in loop.body if st.__class__ is not ast.Assign and st.__class__ is not ast.AnnAssign
            for t in ast.walk(st) if t.__class__ is ast.Name and t.ctx.__class__ is not ast.Load}
        self.once -= self.receivers
        self.still = reads - self.assigned - {self.var}
        if self.var in self.assigned:
            raise _NotSkippable                 # (the loop variable set in the body)
        self.forms, self.defined = {}, set()
        self.guards, self.operands, self.ints, self.containers = [], [], [], []
        self.counters = set()                   # names only a nested ``range`` loop sets (ints)

    # -- statements ------------------------------------------------------------------------
    def block(self, stmts, top: bool) -> None:
        for st in stmts:
            self.statement(st, top)

    def statement(self, st, top: bool) -> None:
        cls = st.__class__
        if cls is ast.Assign:
            v = self.expr(st.value)
            for t in st.targets:
                self.bind(t, v)
        elif cls is ast.AnnAssign and st.value is not None and st.simple:
            self.bind(st.target, self.expr(st.value))
        elif cls is ast.AugAssign:
            if st.target.__class__ is not ast.Name:
                raise _NotSkippable
            self.bind(st.target, self.binary(st.op, ast.copy_location(ast.Name(st.target.id, ast.Load()), st.target),
                                             st.value))
        elif cls is ast.Expr:
            name = _assign_call(st)
            if name is not None:
                self.expr(st.value.args[0])
                self.defined.add(name)
                self.forms[name] = _AMBIGUOUS
            elif st.value.__class__ is ast.Call or st.value.__class__ is ast.Constant:
                self.expr(st.value)
            else:
                raise _NotSkippable
        elif cls is ast.If:
            self.branch(st, top)
        elif cls is ast.For:
            self.nested(st)
        elif cls is not ast.Pass:
            raise _NotSkippable                 # (return, break, while, with, try, del ...)

    def bind(self, target, v) -> None:
        if target.__class__ is not ast.Name:
            raise _NotSkippable
        self.defined.add(target.id)
        if v is None:
            self.forms.pop(target.id, None)
        else:
            self.forms[target.id] = v

    def branch(self, st: ast.If, top: bool) -> None:
        t = st.test
        if (top and t.__class__ is ast.Compare and len(t.ops) == 1 and t.ops[0].__class__ in _COMPARISONS):
            lhs, rhs = self.expr(t.left), self.expr(t.comparators[0])
            if lhs is not None or rhs is not None:
                if lhs is _AMBIGUOUS or rhs is _AMBIGUOUS:
                    raise _NotSkippable
                self.guards.append(Guard(st, _combine("-", lhs, rhs), _COMPARISONS[t.ops[0].__class__]))
                self.operands.append((self.code(t.left), self.code(t.comparators[0])))
        elif self.expr(t) is not None:
            raise _NotSkippable                 # (a branch on a value that moves, not a guard)
        before = (set(self.defined), dict(self.forms))
        self.block(st.body, False)
        then = (self.defined, self.forms)
        self.defined, self.forms = set(before[0]), dict(before[1])
        self.block(st.orelse, False)
        self.defined &= then[0]
        for n in set(self.forms) | set(then[1]):
            a, b = self.forms.get(n), then[1].get(n)
            if a != b:
                self.forms[n] = _AMBIGUOUS

    def nested(self, st: ast.For) -> None:
        it = st.iter
        if st.orelse or st.target.__class__ is not ast.Name:
            raise _NotSkippable
        if it.__class__ is ast.Call and it.func.__class__ is ast.Name and it.func.id == "range":
            if self.resolve_call(it.func.id) is not range or it.keywords:
                raise _NotSkippable
            args = it.args
            if self.counts[st.target.id] == 1:
                self.counters.add(st.target.id)
        elif it.__class__ is ast.Tuple or it.__class__ is ast.List:
            args = it.elts
        else:
            args = [it]                         # (a list or tuple at run time: Loop.containers)
            self.containers.append(self.code(it, evaluated=False))
        if any(self.expr(a) is not None for a in args):
            raise _NotSkippable                 # (its bounds move)
        inner = {n.id for n in ast.walk(ast.Module(st.body, [])) if n.__class__ is ast.Name
                 and n.ctx.__class__ is not ast.Load} | {st.target.id}
        saved = (set(self.defined), dict(self.forms))
        self.defined -= inner                   # (each nested iteration assigns before it reads)
        self.defined.add(st.target.id)
        self.forms.pop(st.target.id, None)
        self.block(st.body, False)
        inside = self.forms
        self.defined, self.forms = saved
        for n in inner:                         # (after it: the last iteration's, or as before it)
            if self.forms.get(n) is not None or inside.get(n) is not None:
                self.forms[n] = _AMBIGUOUS

    # -- expressions: None (does not move), an affine form, or _AMBIGUOUS ------------------
    def expr(self, e):
        cls = e.__class__
        if cls is ast.Constant:
            return None
        if cls is ast.Name:
            if e.id == self.var:
                return 1
            if e.id in self.assigned:
                if e.id not in self.defined:
                    raise _NotSkippable         # (read before it is assigned: carried)
                return self.forms.get(e.id)
            return None
        if cls is ast.BinOp:
            return self.binary(e.op, e.left, e.right)
        if cls is ast.UnaryOp:
            v = self.expr(e.operand)
            if v is None:
                return None
            if e.op.__class__ is ast.USub:
                return _AMBIGUOUS if v is _AMBIGUOUS else ("neg", v)
            if e.op.__class__ is ast.UAdd:
                return v
            raise _NotSkippable
        if cls is ast.Call:
            return self.call(e)
        if cls is ast.Attribute:
            if e.value.__class__ is not ast.Name or e.value.id in self.assigned or e.value.id == self.var:
                raise _NotSkippable
            if not isinstance(self.resolve(e.value.id), (type, types.ModuleType)):
                raise _NotSkippable             # (a field of an object the run changes)
            return None
        if cls is ast.Subscript or cls is ast.Slice:
            parts = (e.value, e.slice) if cls is ast.Subscript else (e.lower, e.upper, e.step)
            if any(p is not None and self.expr(p) is not None for p in parts):
                raise _NotSkippable
            if cls is ast.Subscript:            # (a list, tuple or dict at run time: Loop.containers)
                self.containers.append(self.code(e.value, evaluated=False))
            return None
        if cls is ast.Tuple or cls is ast.List:
            moving = [self.expr(x) for x in e.elts]
            return _AMBIGUOUS if any(v is not None for v in moving) else None
        if cls is ast.Compare or cls is ast.BoolOp or cls is ast.IfExp:
            parts = ([e.left, *e.comparators] if cls is ast.Compare else e.values if cls is ast.BoolOp
                     else [e.test, e.body, e.orelse])
            if any(self.expr(p) is not None for p in parts):
                raise _NotSkippable
            return None
        raise _NotSkippable

    def binary(self, op, left, right):
        a, b = self.expr(left), self.expr(right)
        if a is None and b is None:
            return None
        cls = op.__class__
        if cls is not ast.Add and cls is not ast.Sub and cls is not ast.Mult:
            raise _NotSkippable                 # (//, %, ** ... of a value that moves)
        if a is not None and b is not None:
            if cls is ast.Mult:
                raise _NotSkippable
            return _AMBIGUOUS if a is _AMBIGUOUS or b is _AMBIGUOUS else _combine(
                "+" if cls is ast.Add else "-", a, b)
        still = right if a is not None else left
        if still.__class__ is ast.Name and still.id in self.counters:
            code = compile(ast.Expression(still), self.file, "eval")    # (an int: a nested range's)
        else:
            code = self.code(still)
            self.ints.append((code, b is not None and cls is not ast.Mult))
        moving = a if a is not None else b
        if moving is _AMBIGUOUS:
            return _AMBIGUOUS
        if cls is ast.Mult:
            return ("*", moving, code)
        return ("neg", moving) if cls is ast.Sub and b is not None else moving

    def call(self, e: ast.Call):
        f = e.func
        if any(a.__class__ is ast.Starred for a in e.args) or any(k.arg is None for k in e.keywords):
            raise _NotSkippable
        if f.__class__ is ast.Attribute:
            if f.attr != "data" or e.args or e.keywords or f.value.__class__ is not ast.Name:
                raise _NotSkippable
            self.expr(f.value)
            return _AMBIGUOUS if f.value.id in self.assigned else None
        if f.__class__ is not ast.Name:
            raise _NotSkippable
        target = self.resolve_call(f.id)
        moving = [self.expr(a) for a in e.args] + [self.expr(k.value) for k in e.keywords]
        if hooked(target):
            return None                         # (its operands: the engine's proof saw them move)
        if target is GlobalTensor:
            return _AMBIGUOUS if any(v is not None for v in moving) else None
        if target in _PURE and all(v is None for v in moving):
            return None
        raise _NotSkippable

    def resolve_call(self, name: str):
        if name in self.assigned:
            raise _NotSkippable
        return self.resolve(name)

    def code(self, e, evaluated: bool = True):
        """The code of ``e``, read from the kernel's frame at a skip (``evaluated``) or at the
        loop's start: no call but ``t.data()`` (a call runs on the core that asks), and at a
        skip no name the body assigns twice or in a branch or nested loop (the frame holds its
        last value, not the one read)."""
        for n in ast.walk(e):
            if n.__class__ is ast.Call:
                if not (n.func.__class__ is ast.Attribute and n.func.attr == "data" and not n.args):
                    raise _NotSkippable
            elif n.__class__ is ast.Name and n.id in self.assigned and (not evaluated or n.id not in self.once):
                raise _NotSkippable
        return compile(ast.Expression(e), self.file, "eval")


def _assign_call(st) -> str | None:
    """The name ``t`` of a statement ``t.assign(x)``, else None."""
    if st.__class__ is not ast.Expr:
        return None
    c = st.value
    if (c.__class__ is ast.Call and c.func.__class__ is ast.Attribute and c.func.attr == "assign"
            and c.func.value.__class__ is ast.Name and len(c.args) == 1 and not c.keywords):
        return c.func.value.id
    return None


def _combine(sym: str, a, b):
    if b is None:
        return a
    if a is None:
        return ("neg", b) if sym == "-" else b
    return (sym, a, b)


# -- running ---------------------------------------------------------------------------------
def _heads(loops: tuple):
    """The iterator the recompiled kernel's loop number ``k`` calls in place of ``range``."""
    def loop(k, *args):
        r = range(*args)
        core = getattr(greenlet.getcurrent(), "core", None)
        if core is None or len(r) < 2:
            return iter(r)
        frame = sys._getframe(1)
        if not _alone(loops[k], frame):
            return iter(r)
        return _iterate(core, _plan(loops[k], frame), r)
    return loop


def _alone(loop: Loop, frame) -> bool:
    """What the loop's source cannot tell, as the loop starts: what it iterates or
    subscripts is a list, tuple, dict or range (no ``__iter__`` / ``__getitem__`` of the
    kernel's own with a state), and no tensor the body sets (``t.assign``) is reachable
    through another name it reads (an alias, a list holding it: the body would read a
    tensor an earlier iteration set)."""
    g, local = frame.f_globals, frame.f_locals
    b = g.get("__builtins__", builtins)
    b = b if isinstance(b, dict) else vars(b)
    try:
        if any(eval(c, g, local).__class__ not in (list, tuple, dict, range) for c in loop.containers):
            return False
    except Exception:                   # (as the loop raises on its first iteration)
        return False
    set_ = {id(local[n]) for n in loop.assigned if n in local}
    if not set_:
        return True
    for n in loop.still:
        v = local[n] if n in local else g[n] if n in g else b.get(n)
        if _reaches(v, set_, 4):
            return False
    return True


def _reaches(v, ids: set, depth: int) -> bool:
    """Is an object of ``ids`` ``v``, or held by ``v`` (a list, tuple, set or dict, ``depth``
    levels deep; deeper: assumed held)?"""
    if id(v) in ids:
        return True
    cls = v.__class__
    if cls is list or cls is tuple or cls is set or cls is frozenset:
        return depth == 0 or any(_reaches(x, ids, depth - 1) for x in v)
    if cls is dict:
        return depth == 0 or any(_reaches(x, ids, depth - 1) for x in (*v.keys(), *v.values()))
    return False


def _iterate(core, plan: SkipPlan, r: range):
    """``r``'s values; each head but the first offered to the engine while it records (the
    iteration to go on from)."""
    i, stop, step = r.start, r.stop, r.step
    up = step > 0
    yield i
    i += step
    while i < stop if up else i > stop:
        ff = core.ff
        if ff is not None and ff.recording:
            i = ff.head(core, plan, i, step, stop)
        yield i
        i += step


def _plan(loop: Loop, frame) -> SkipPlan:
    """``loop`` as the engine reads it, its values read from the kernel's ``frame`` when it
    asks (the names then hold the last iteration's)."""
    g = frame.f_globals

    def value(code):
        return eval(code, g, frame.f_locals)

    return SkipPlan(loop, (), (), value, loop.guards, _Read(loop.operands, value, False),
                    tuple(Site(c, (0,), None) for c, _ in loop.ints), _Read(loop.ints, value, True))


class _Read:
    """The values of ``codes`` now, as :class:`~ptopipe.sim.periodic.loops.SkipPlan` reads its
    ``compared`` (``[lhs, rhs]`` per guard) or ``held`` (``[value, largest, smallest]`` per
    term: here any int, and a GM pointer where one may stand) - read when iterated."""

    def __init__(self, codes, value, held: bool):
        self.codes, self.value, self.held = codes, value, held

    def __iter__(self):
        for a, b in self.codes:
            if not self.held:
                yield [self.read(a), self.read(b)]
                continue
            v = self.read(a)
            yield [0 if b and v.__class__ is GMPtr else v, INFINITE, -INFINITE]

    def read(self, code):
        try:
            return self.value(code)
        except Exception:           # (a name the last iteration did not set: cannot be told)
            return _UNKNOWN

    def __len__(self) -> int:
        return len(self.codes)
