"""The op/region IR's object model (MLIR-shaped): SSA values with their uses, operations
with operands / results / attributes / regions / a source location, blocks with arguments
and an ordered list of operations, regions holding blocks.

This module owns the *structure* and the rewriting API, nothing op-specific:

* walking: :meth:`Operation.walk` (pre-order), :meth:`Block.ops` / iteration;
* use lists: :attr:`Value.uses` (``Use(owner, index)``), :meth:`Value.replace_all_uses_with`;
* rewriting: :meth:`Block.append` / :meth:`Operation.insert_before` / ``insert_after`` /
  :meth:`Operation.erase` (refuses while a result is still used) /
  :meth:`Operation.replace_with` / :meth:`Operation.set_operand`;
* cloning with a value map: :meth:`Operation.clone`, :meth:`Region.clone_into`;
* building: :class:`Builder` (create ops at an insertion point), :func:`gc_paused`.

Operations in a block form a doubly-linked list, so inserting and erasing are O(1).  Op
definitions (what an op name means, its verifier) are in :mod:`.opdefs`; an op defined there
as a class registers itself here (:func:`register_op_class`), and ``Operation(name, ...)``
then makes an instance of that class, so every op of that name - built by a pass, a parser
or :meth:`Operation.clone` - has the definition's typed accessors.  The textual
form in :mod:`.asm_printer` / :mod:`.asm_parser`.  Objects use ``__slots__`` and no per-op
dict beyond the attributes, to keep 20k-op programs cheap.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager

from ..errors import CompileError
from .vocab import Loc


@contextmanager
def gc_paused():
    """Pause Python's cyclic garbage collector while building many IR objects (a parse,
    a conversion, a pass over a large program).  Every object made stays alive, so the
    collections a build would trigger only rescan the growing IR - work that makes large
    builds super-linear.  The previous GC state is restored on exit."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class Use:
    """One use of a value: operand ``index`` of operation ``owner``."""
    __slots__ = ("owner", "index")

    def __init__(self, owner: "Operation", index: int):
        self.owner, self.index = owner, index

    def __repr__(self) -> str:
        return f"Use({self.owner.name}#{self.index})"


class Value:
    """An SSA value: a ``type`` (an IR type of :mod:`.types`), its ``uses`` and an optional
    ``name`` hint (the DSL variable name; printing and conversion keep it, equality
    ignores it)."""
    __slots__ = ("type", "uses", "name")

    def __init__(self, type, name: str | None = None):
        self.type = type
        self.uses: list = []
        self.name = name

    @property
    def owner(self):
        raise NotImplementedError

    def has_uses(self) -> bool:
        return bool(self.uses)

    def users(self) -> list:
        return [u.owner for u in self.uses]

    def replace_all_uses_with(self, new: "Value") -> None:
        """Make every user of this value use ``new`` instead."""
        if new is self:
            return
        for u in self.uses:
            u.owner.operands[u.index] = new
            new.uses.append(u)
        self.uses = []

    def __repr__(self) -> str:
        return f"<{type(self).__name__} %{self.name or '?'}: {self.type}>"


class OpResult(Value):
    """Result ``index`` of operation ``op``."""
    __slots__ = ("op", "index")

    def __init__(self, type, op: "Operation", index: int, name: str | None = None):
        Value.__init__(self, type, name)
        self.op, self.index = op, index

    @property
    def owner(self):
        return self.op


class BlockArgument(Value):
    """Argument ``index`` of ``block`` (a function parameter, a loop variable or a
    loop-carried value)."""
    __slots__ = ("block", "index")

    def __init__(self, type, block: "Block", index: int, name: str | None = None):
        Value.__init__(self, type, name)
        self.block, self.index = block, index

    @property
    def owner(self):
        return self.block


def _ir_error(msg: str, op: "Operation | None", fix: str | None = None) -> CompileError:
    loc = op.loc if op is not None else None
    return CompileError(msg, where=str(loc) if loc else None, fix=fix)


#: op name -> the Operation subclass that defines it (filled by :mod:`.opdefs`)
_OP_CLASSES: dict = {}


def register_op_class(name: str, cls) -> None:
    """Make ``Operation(name, ...)`` build instances of ``cls`` (a subclass of Operation
    without instance state of its own)."""
    _OP_CLASSES[name] = cls


class Operation:
    """An operation: ``name`` (e.g. ``"pl.matmul"``), ``operands`` (Values),
    ``results`` (OpResults), ``attributes`` (a dict of compile-time values), ``regions``,
    its ``parent`` block and source ``loc``.  ``Operation(name, ...)`` of a name defined
    by a class of :mod:`.opdefs` is an instance of that class."""
    __slots__ = ("name", "operands", "results", "attributes", "regions", "parent", "loc",
                 "prev", "next")

    def __new__(cls, name=None, *args, **kwargs):
        if cls is Operation:
            cls = _OP_CLASSES.get(name, Operation)
        return object.__new__(cls)

    def __init__(self, name: str, operands=(), result_types=(), attributes=None, regions=(),
                 loc: Loc | None = None, result_names=None):
        self.name = name
        self.operands = list(operands)
        for i, v in enumerate(self.operands):
            v.uses.append(Use(self, i))
        if result_names is None:
            self.results = [OpResult(t, self, i) for i, t in enumerate(result_types)]
        else:
            self.results = [OpResult(t, self, i, n)
                            for i, (t, n) in enumerate(zip(result_types, result_names))]
        self.attributes = attributes if attributes is not None else {}
        self.regions = list(regions)
        for r in self.regions:
            r.parent = self
        self.parent = None
        self.loc = loc
        self.prev = self.next = None

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls._ancestors = frozenset(cls.__mro__)

    def is_a(self, *defs) -> bool:
        """Whether this op is one of the op classes ``defs`` (of :mod:`.opdefs`), as
        ``isinstance(op, defs)``."""
        # Hot path (every pass asks it of every op): a set lookup per class.  isinstance
        # would dispatch to the op classes' metaclass's __instancecheck__ for each class
        # it is not, which costs several times more.  Invariant: ``_ancestors`` is the
        # frozenset of the class's MRO (set when the class is made; no op class reassigns
        # __bases__ or defines __instancecheck__), which is exactly what isinstance tests.
        ancestors = self._ancestors
        for d in defs:
            if d in ancestors:
                return True
        return False

    # -- navigation -------------------------------------------------------------------------
    @property
    def result(self) -> OpResult:
        """The single result (an error if the op has not exactly one)."""
        if len(self.results) != 1:
            raise _ir_error(f"{self.name} has {len(self.results)} results, not one", self)
        return self.results[0]

    @property
    def parent_op(self) -> "Operation | None":
        b = self.parent
        return b.parent.parent if b is not None and b.parent is not None else None

    def walk(self):
        """This op and every op nested in its regions, pre-order.  Each op's successor is
        read before the op is yielded (the caller may erase or move the op it is given),
        its regions after (the walk sees what the caller did to them)."""
        yield self
        # An explicit stack of [regions, blocks of the current region, next op] per open op,
        # not nested generators: every pass walks the whole program, and a nested generator
        # makes each op cost one resume per level of nesting above it.
        stack = [[iter(self.regions), None, None]]
        while stack:
            frame = stack[-1]
            op = frame[2]
            if op is None:                      # the next block (of this region or the next)
                block = None if frame[1] is None else next(frame[1], None)
                while block is None:
                    region = next(frame[0], None)
                    if region is None:
                        break
                    frame[1] = iter(region.blocks)
                    block = next(frame[1], None)
                if block is None:
                    stack.pop()
                    continue
                op = block.first
                if op is None:
                    continue
            frame[2] = op.next
            yield op
            if op.regions:
                stack.append([iter(op.regions), None, None])

    def is_ancestor_of(self, other: "Operation") -> bool:
        while other is not None:
            if other is self:
                return True
            other = other.parent_op
        return False

    # -- operands ----------------------------------------------------------------------------
    def set_operand(self, index: int, value: Value) -> None:
        old = self.operands[index]
        for k, u in enumerate(old.uses):
            if u.owner is self and u.index == index:
                del old.uses[k]
                break
        self.operands[index] = value
        value.uses.append(Use(self, index))

    def drop_operand_uses(self) -> None:
        for v in self.operands:
            v.uses = [u for u in v.uses if u.owner is not self]

    # -- placement ---------------------------------------------------------------------------
    def insert_before(self, op: "Operation") -> "Operation":
        """Insert ``op`` (detached) right before this op; returns ``op``."""
        self.parent._link(op, self.prev, self)
        return op

    def insert_after(self, op: "Operation") -> "Operation":
        """Insert ``op`` (detached) right after this op; returns ``op``."""
        self.parent._link(op, self, self.next)
        return op

    def detach(self) -> "Operation":
        """Unlink this op from its block (it keeps its operands and uses)."""
        b = self.parent
        if b is None:
            return self
        if self.prev is None:
            b.first = self.next
        else:
            self.prev.next = self.next
        if self.next is None:
            b.last = self.prev
        else:
            self.next.prev = self.prev
        self.prev = self.next = self.parent = None
        return self

    def move_before(self, anchor: "Operation") -> None:
        anchor.insert_before(self.detach())

    def move_after(self, anchor: "Operation") -> None:
        anchor.insert_after(self.detach())

    def erase(self) -> None:
        """Remove this op (and everything nested in it).  Refuses while one of its
        results is still used: replace those uses first."""
        for r in self.results:
            if r.uses:
                users = ", ".join(sorted({u.owner.name for u in r.uses}))
                raise _ir_error(f"cannot erase {self.name}: its result "
                                f"%{r.name or r.index} is still used by {users}", self,
                                "replace_all_uses_with(...) first, or erase the users")
        self.detach()
        for op in list(self.walk()):
            op.drop_operand_uses()

    def replace_with(self, new: "Operation") -> "Operation":
        """Put ``new`` (detached) where this op is, redirect this op's result uses to
        ``new``'s results (same number), and erase this op."""
        if len(new.results) != len(self.results):
            raise _ir_error(f"cannot replace {self.name} ({len(self.results)} results) with "
                            f"{new.name} ({len(new.results)} results)", self)
        self.insert_before(new)
        for a, b in zip(self.results, new.results):
            a.replace_all_uses_with(b)
        self.erase()
        return new

    # -- cloning -----------------------------------------------------------------------------
    def clone(self, value_map: dict | None = None) -> "Operation":
        """A deep copy (regions included) as a detached op.  Operands found in
        ``value_map`` (old Value -> new Value) are remapped, others are kept; every result
        and block argument of the copy is added to ``value_map``."""
        vm = {} if value_map is None else value_map
        new = Operation(self.name, [vm.get(v, v) for v in self.operands],
                        [r.type for r in self.results], dict(self.attributes), (), self.loc,
                        [r.name for r in self.results])
        for old_r, new_r in zip(self.results, new.results):
            vm[old_r] = new_r
        for r in self.regions:
            nr = Region()
            r.clone_into(nr, vm)
            nr.parent = new
            new.regions.append(nr)
        return new

    def __repr__(self) -> str:
        return f"<Operation {self.name} at {self.loc}>" if self.loc else f"<Operation {self.name}>"


Operation._ancestors = frozenset(Operation.__mro__)     # (subclasses: __init_subclass__)


class Block:
    """A block: ``args`` (BlockArguments) and a linked list of operations (``first`` ..
    ``last``); iterate it for its ops."""
    __slots__ = ("args", "first", "last", "parent")

    def __init__(self, arg_types=(), arg_names=None):
        names = arg_names or [None] * len(arg_types)
        self.args = [BlockArgument(t, self, i, n) for i, (t, n) in enumerate(zip(arg_types, names))]
        self.first = self.last = None
        self.parent = None

    def add_arg(self, type, name: str | None = None) -> BlockArgument:
        a = BlockArgument(type, self, len(self.args), name)
        self.args.append(a)
        return a

    def __iter__(self):
        op = self.first
        while op is not None:
            nxt = op.next
            yield op
            op = nxt

    @property
    def ops(self) -> list:
        return list(self)

    @property
    def terminator(self) -> "Operation | None":
        return self.last

    def is_empty(self) -> bool:
        return self.first is None

    def _link(self, op: Operation, prev, nxt) -> None:
        if op.parent is not None:
            raise _ir_error(f"{op.name} is already in a block", op, "detach() it first")
        op.parent, op.prev, op.next = self, prev, nxt
        if prev is None:
            self.first = op
        else:
            prev.next = op
        if nxt is None:
            self.last = op
        else:
            nxt.prev = op

    def append(self, op: Operation) -> Operation:
        self._link(op, self.last, None)
        return op

    def prepend(self, op: Operation) -> Operation:
        self._link(op, None, self.first)
        return op


class Region:
    """A list of blocks owned by an operation (``parent``)."""
    __slots__ = ("blocks", "parent")

    def __init__(self, blocks=()):
        self.blocks = list(blocks)
        for b in self.blocks:
            b.parent = self
        self.parent = None

    @property
    def block(self) -> Block:
        """The entry (for our ops: only) block."""
        return self.blocks[0]

    def add_block(self, block: Block) -> Block:
        block.parent = self
        self.blocks.append(block)
        return block

    def clone_into(self, dest: "Region", value_map: dict) -> None:
        """Append copies of this region's blocks to ``dest``, mapping values through
        ``value_map`` (block arguments and results are added to it)."""
        for b in self.blocks:
            nb = Block([a.type for a in b.args], [a.name for a in b.args])
            for old_a, new_a in zip(b.args, nb.args):
                value_map[old_a] = new_a
            dest.add_block(nb)
            for op in b:
                nb.append(op.clone(value_map))


class Builder:
    """Creates ops at an insertion point: the end of ``block``, or before ``before``
    (``Builder.at_end(block)``, ``Builder.before(op)``, ``Builder.after(op)``)."""
    __slots__ = ("block", "anchor")

    def __init__(self, block: Block, anchor: "Operation | None" = None):
        self.block, self.anchor = block, anchor

    @classmethod
    def at_end(cls, block: Block) -> "Builder":
        return cls(block)

    @classmethod
    def before(cls, op: Operation) -> "Builder":
        return cls(op.parent, op)

    @classmethod
    def after(cls, op: Operation) -> "Builder":
        return cls(op.parent, op.next) if op.next is not None else cls(op.parent)

    def insert(self, op: Operation) -> Operation:
        if self.anchor is None:
            return self.block.append(op)
        return self.anchor.insert_before(op)

    def create(self, name: str, operands=(), result_types=(), attributes=None, regions=(),
               loc: Loc | None = None, result_names=None) -> Operation:
        return self.insert(Operation(name, operands, result_types, attributes, regions, loc,
                                     result_names))
