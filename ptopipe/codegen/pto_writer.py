"""The ``.pto`` (PTO-AS) writer: a compiled ``pl.program`` op (the output of
``ptopipe.passes.compile_program``) as MLIR text of the ``pto`` dialect.

Owns the value -> destination-passing conversion: an IR op ``%x = pl.add(%a, %b)``
becomes ``%x = pto.alloc_tile`` + ``pto.tadd ins(%a, %b : ...) outs(%x : ...)``; a GM
tensor parameter is a ``!pto.ptr<dtype>`` with one ``pto.make_tensor_view`` at the top of
its kernel, and each load / store goes through a ``pto.partition_view``.  Kernels are
``func.func private`` with ``pto.kernel_kind``; the Group function is the ``pto.entry``
calling them with ``func.call``.  Spellings come from :mod:`.pto_syntax`; the reader
(:mod:`.pto_reader`) reads this text back to a structurally equal program (after the
platform passes re-derive what the text does not carry: flag ids, ring placement).

The text is for ptoas (0.27, ``--pto-level=level2``) and means there the ring ptopipe
simulates: each pipe init in the spelling whose ``TPipe`` ptoas builds is the IR's
(:func:`ring_spelling`), reserves placed by ptoas (``auto = true``), the tiles a loop carries
or a branch yields in buffers written in place (:mod:`.pto_buffers`), and an op ptoas takes
on row-major tiles only (``arch.catalogue.ROW_MAJOR_FORMS``) on DN [R, 1] columns written on
their ND [1, R] row views (``%v = pto.treshape %col``, as PyPTO writes it; the reader reads
the view as its column).  A program that orders its pipes with events keeps the allocator's tile
addresses and ring bases (level3's ``alloc_tile addr`` / ``auto = false``: :meth:`_Writer.place`),
the placement its events were written for.  What ptoas has no
spelling for is written in ptopipe's and reported in ``write_pto``'s notes.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..arch.catalogue import OPS as CATALOGUE
from ..arch.catalogue import ROW_MAJOR_FORMS
from ..errors import CompileError
from ..arch.vocab import ALIGNMENT, PTOAS_SLOT_NUMS, Direction, MemSpace, TileSplitAxis, row_major_strides
from ..arch import get_platform
from ..ir.instances import storage_op
from ..ir.layout import read_layout, unallocated
from ..ir.vocab import FunctionKind
from ..ir.pipe_config import lane1_empty_pushes, lane1_replays, local_slot_num, ring_of
from ..protocol.rings import frontend_ring
from ..ir.opdefs import (CROSS_CORE_OPS, INITIALIZE_PIPE, RING_BUFFERS, Barrier, BufferAttrOp,
                         CallOp, ConstOp, CopyOp, CreateOp, ForOp, FuncOp, GetSubblockIdOp, IfOp, ImportPeerBufferOp,
                         LoadOp, RecordEvent, ReserveBufferOp, StoreOp, TAlloc, TFree, TPop, TPush,
                         WaitEvent, YieldOp, own_events)
from ..ir.ops import C2V, ISA_ATTRS, V2C, gm_layout_of, gm_window, scratch_index, scratch_type
from ..sim.pipesync import PTO_EVENTS
from ..ir.types import BufferType, NoneType, ScalarType, TensorType, TileValueType, itemsize, np_dtype
from .pto_buffers import Buf, BufferPlan, plan_buffers
from .pto_syntax import (ADDRESS_SPACE_OF_MEM, ARCH_OF_PLATFORM, ARITH, FLOOR_MOD, UNSIGNED_ARITH, CARRY, CMP, DATA_LANE_MARK, FLOAT_ADD_MARK, EVENT_IDS,
                         FLOATS, INT_DTYPES, KIND_NAMES, LOGIC, MLIR_DTYPE, NAMED_COPY, PTO_OP,
                         INT_SCALAR_OPERAND, ISA_ATTR_SPELLING, FLOAT_SCALAR_OPS, scalar_cast_type, FREE_ORDER, PLACED_LEVEL, PTOAS_LACKS, PTOPIPE_BASE,
                         SCRATCH_REQUIRED, ptoas_element_refusal, float_literal,
                         atomic_type_attr, ptr_type, tile_buf)
from ..errors import with_article

_IND = "  "
FORM_OF_DSL = {d.dsl: d.form for d in CATALOGUE.values() if d.dsl}
_EVENTS = (RecordEvent, WaitEvent)


def _free_order(op) -> str:
    """The mark of an event LowerPlatform placed for the protocol's free order (not the
    kernel's own: the reader takes it back; ptoas keeps a discardable attribute as it is)."""
    return f" {{{FREE_ORDER}}}" if op.free_order else ""


def _err(msg: str, op, fix: str | None = None) -> CompileError:
    return CompileError(msg, where=str(op.loc) if op.loc else None, fix=fix)


def type_str(t, platform=None) -> str:
    """A value's type as PTO-AS spells it (a Left tile's blayout is ``platform``'s)."""
    if isinstance(t, TileValueType):
        return tile_buf(t, platform)
    if isinstance(t, TensorType):
        return f"!pto.tensor_view<{'x'.join(map(str, t.shape))}x{MLIR_DTYPE[t.dtype]}>"
    if isinstance(t, ScalarType):
        return MLIR_DTYPE[t.dtype]
    if isinstance(t, BufferType):
        return "i32"
    raise TypeError(f"no PTO-AS type for {t}")


def _param_type(t) -> str:
    return ptr_type(t.dtype) if isinstance(t, TensorType) else type_str(t)


def _lit(v, t) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return float_literal(v, t.dtype) if isinstance(v, float) else str(v)


def _static_event(v):
    """The event id ``v`` holds when it is a constant ptoas spells as ``EVENT_IDn``, else None."""
    d = getattr(v, "op", None)
    if d is None or not d.is_a(ConstOp):
        return None
    k = d.value
    return k if isinstance(k, int) and not isinstance(k, bool) and k in EVENT_IDS else None


def _int_scalar(t) -> bool:
    """Is ``t`` an integer scalar type (index or a sized integer)?"""
    return isinstance(t, ScalarType) and t.dtype in INT_DTYPES


class _Func:
    """Naming state of one function: SSA names made unique, tensor views, constants."""

    def __init__(self):
        self.names, self.used, self.n = {}, set(), 0
        self.views, self.cints = {}, {}
        self.pipes = {}             # Ring -> the ``!pto.pipe`` handle of its lower-level init
        self.ring_ids = {}          # Ring -> k: the k-th lower-level init of its direction (its ``id``)
        self.ring_bufs = set()      # the ring buffer ops written (reserve / import)
        self.plan = BufferPlan()    # where carried tile values live (pto_buffers)
        self.bufs = {}              # Buf -> its SSA name, once declared
        self.data_lane = None       # the AIV0 condition of a two-lane TILE_NO_SPLIT AIV kernel
        self.empty_on_lane1 = set() # the values / Bufs declared with a valid shape 0 x 0 on AIV1
        self.lane_dims = {}         # size -> the index that is it on AIV0 and 0 on AIV1
        self.dynamic = set()        # names of the tile buffers declared with v_row=?, v_col=?
        self.placed = False         # tiles written at the allocator's addresses (level3)
        self.addr_names = {}        # address -> the name of its i64 constant
        self.tops = {}              # memory -> the first byte no tile or ring of the function uses
        self.consts_at = 0          # where in the output the address constants go

    def fresh(self, hint: str | None) -> str:
        if hint is None:
            while f"%{self.n}" in self.used:
                self.n += 1
            s = f"%{self.n}"
            self.n += 1
        else:
            s, k = f"%{hint}", 1
            while s in self.used:
                s, k = f"%{hint}_{k}", k + 1
        self.used.add(s)
        return s

    def bind(self, v) -> str:
        s = self.names[v] = self.fresh(v.name)
        return s

    def home(self, v) -> str | None:
        """The name of the planned buffer ``v`` lives in (None: its own)."""
        b = self.plan.home.get(v)
        if b is None:
            return None
        s = self.names[v] = self.bufs[b]
        return s

    def __getitem__(self, v) -> str:
        return self.names[v]


class _Writer:
    def __init__(self):
        self.out = []
        self.notes = {}             # what -> where: ptopipe spellings ptoas does not take

    def ring_buffer(self, op, st: _Func) -> None:
        """A reserve / import of the function: ptoas (0.27: "expects at most one
        import_reserved_buffer in the function") takes one of each per function."""
        if op.__class__ in st.ring_bufs:
            what = "pto.reserve_buffer" if op.is_a(ReserveBufferOp) else "pto.import_reserved_buffer"
            self.note(op, f"ptoas takes one {what} per function: a kernel with several rings of a "
                          "direction (id=) is ptopipe's")
        st.ring_bufs.add(op.__class__)

    def note(self, op, what: str) -> None:
        """``op`` is written in a spelling of ptopipe's that ptoas rejects (``what``)."""
        self.notes.setdefault(what, str(op.loc) if op.loc else None)

    def ty(self, t) -> str:
        return type_str(t, self.plat)

    def line(self, ind: str, text: str) -> None:
        self.out.append(ind + text)

    # -- module / functions ------------------------------------------------------------------
    def program(self, prog, platform) -> str:
        self.nosplit = nosplit_functions(prog)
        plat = platform or prog.platform
        self.plat = get_platform(plat or "a2a3")
        # a program that orders its pipes with events was synchronised for the tiles the
        # allocator kept apart (it shares no memory in such a function): the file keeps
        # their addresses, or ptoas's placement (and the run's) could put two tiles the
        # events do not order in one buffer.  The events LowerPlatform placed before a TFREE
        # are not the program's: its other pipes are ordered by no event, and its tiles share
        self.placed = bool(own_events(prog))
        self.own = set()
        for f in prog.body:
            if f.kind is not FunctionKind.Group:
                self.own |= self.held_alike(f)
        self.own_rings = {ring_of(o) for o in self.own}
        if self.placed:
            self.line("", f"// {PLACED_LEVEL}: every tile at the address ptopipe's allocator gave it "
                          "(the program orders its pipes with events)")
        attrs = f' attributes {{pto.target_arch = "{ARCH_OF_PLATFORM[plat]}"}}' if plat else ""
        self.line("", f"module @{prog.sym_name}{attrs} {{")
        for f in prog.body:
            self.func(f)
        self.line("", "}")
        return "\n".join(self.out) + "\n"

    def func(self, f) -> None:
        kind = f.kind
        st = _Func()
        block = f.body
        params = ", ".join(f"{st.bind(a)}: {_param_type(a.type)}" for a in block.args)
        if kind is FunctionKind.Group:
            attrs, vis = "pto.entry", ""
        elif kind in KIND_NAMES:
            attrs, vis = f"pto.kernel_kind = #pto.kernel_kind<{KIND_NAMES[kind]}>", "private "
        else:
            raise _err(f"function {f.sym_name!r} is {with_article(kind.value)} function; "
                       "PTO-AS has cube and vector kernels and their entry", f,
                       "compile the program first (ptopipe compile), which splits mixed functions")
        split = f.split
        if split is not None and not (split is TileSplitAxis.TILE_NO_SPLIT and kind is FunctionKind.AIV):
            attrs += f", ptopipe.split = {int(split)}"
        self.line(_IND, f"func.func {vis}@{f.sym_name}({params}) attributes {{{attrs}}} {{")
        ind = _IND * 2
        if kind is not FunctionKind.Group:
            st.plan = plan_buffers(f)
            pushed = lane1_empty_pushes(f)
            st.empty_on_lane1 = {st.plan.home.get(v) or v for v in pushed}
            if self.placed:
                self.place(f, st)
            st.consts_at = len(self.out)
            self.views(f, block, st, ind, {0, *(d for v in pushed for d in v.type.shape)} if pushed else ())
        if kind is not FunctionKind.Group and lane1_replays(f):
            # two lanes on a whole-tile ring: AIV1 takes part in every handshake but loads,
            # computes and stores nothing (the lane-1 replay ptopipe simulates); unguarded,
            # ptoas's lowering lets AIV1 store whatever its TPOP left in the tile.  A tile it
            # pushes is empty on AIV1 (lane_dims): pto-isa's no-split TPUSH writes its valid
            # region at the slot's start from either lane, over AIV0's data
            sub, zero = st.fresh("sub_i64"), st.fresh("c0_i64")
            st.data_lane = st.fresh("data_lane")
            self.line(ind, f"{sub} = pto.get_subblock_idx")
            self.line(ind, f"{zero} = arith.constant 0 : i64")
            self.line(ind, f"{st.data_lane} = arith.cmpi eq, {sub}, {zero} {{{DATA_LANE_MARK}}} : i64")
            for d in sorted({d for v in lane1_empty_pushes(f) for d in v.type.shape}):
                st.lane_dims[d] = st.fresh(f"lane_c{d}")
                self.line(ind, f"{st.lane_dims[d]} = arith.select {st.data_lane}, {st.cints[d]}, "
                               f"{st.cints[0]} : index")
        self.block(block, st, ind)
        self.line(ind, "return")
        self.line(_IND, "}")
        self.out[st.consts_at:st.consts_at] = [f"{ind}{n} = arith.constant {a} : i64"
                                               for a, n in sorted(st.addr_names.items())]

    def place(self, f, st: _Func) -> None:
        """Write ``f``'s tiles at the addresses AllocateMemoryAddr gave them; a buffer of the
        writer's own (a carried tile's, a named copy's) goes above every tile and ring of its
        memory, where nothing else lives.  A function with events that carries a tile through
        such a buffer (written in place, or moved in by a ``pto.tmov`` no event orders) is
        refused."""
        missing = unallocated(f)
        if missing or any(not isinstance(r.base, int) for r in f.body if r.is_a(ReserveBufferOp)):
            raise _err(f"function {f.sym_name!r} has tiles or rings without an address, and its "
                       "program orders its pipes with events: the .pto keeps the allocator's addresses",
                       missing[0] if missing else f, "compile the program first (ptopipe compile)")
        event = next(iter(own_events(f)), None)
        if event is not None:         # (a result used in turn from several buffers is carried too)
            for bufs in st.plan.declare.values():
                buf = bufs[0]
                owner = next(o for o in f.walk() if o.is_a(ForOp, IfOp)
                             and any(st.plan.home.get(r) is buf for r in o.results))
                what = "a loop carries" if owner.is_a(ForOp) else "a branch yields"
                raise _err(f"the tile {buf.hint!r} {what} in {f.sym_name!r} lives in a .pto buffer of "
                           "the writer's (written in place, or moved in by pto.tmov): a reuse and a "
                           f"copy the kernel's events ({event.name} at {event.loc}) do not order",
                           owner, "run the DSL kernel itself (ptopipe run), or keep the kernel free of "
                                  "loop-carried and branch-yielded tiles")

        st.placed = True
        st.tops = dict(read_layout(f).peak)
        for r in f.body:
            if r.is_a(ReserveBufferOp):
                st.tops[r.memory_space] = max(st.tops.get(r.memory_space, 0), r.base + r.size)

    def at(self, st: _Func, addr: int | None, t, what) -> str:
        """`` addr = %cN_i64`` for an alloc_tile of type ``t`` at ``addr`` (None: above
        everything else of its memory) when the function's tiles are placed, else nothing."""
        if not st.placed:
            return ""
        if addr is None:
            mem = t.space.mem_space.value
            addr = (st.tops.get(mem, 0) + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
            st.tops[mem] = addr + t.footprint
            have = self.plat.mem_size(MemSpace(mem))
            if addr + t.footprint > have:
                raise CompileError(f"the .pto's own buffer for {what} needs {t.footprint} bytes of {mem} "
                                   f"at {addr:#x}, past the {have} bytes of {self.plat.name}",
                                   fix="use smaller tiles, or keep fewer of them live at once")
        name = st.addr_names.get(addr)
        if name is None:
            name = st.addr_names[addr] = st.fresh(f"c{addr}_i64")
        return f" addr = {name}"

    def views(self, f, block, st: _Func, ind: str, more=()) -> None:
        """Index constants for shapes / strides / partition sizes (and ``more``), then one
        tensor view per GM tensor parameter."""
        need = set(more)
        for a in block.args:
            if isinstance(a.type, TensorType):
                need.update(a.type.shape)
                need.update(row_major_strides(a.type.shape))
        for op in f.walk():
            if op.is_a(LoadOp):
                need.update(op.shape)
            elif op.is_a(StoreOp):
                need.update(gm_window(op))
        for n in sorted(need):
            st.cints[n] = st.fresh(f"c{n}")
            self.line(ind, f"{st.cints[n]} = arith.constant {n} : index")
        for a in block.args:
            if isinstance(a.type, TensorType):
                v = st.views[a] = st.fresh(f"{a.name or 'arg'}_view")
                shape = ", ".join(st.cints[s] for s in a.type.shape)
                strides = ", ".join(st.cints[s] for s in row_major_strides(a.type.shape))
                self.line(ind, f"{v} = pto.make_tensor_view {st[a]}, shape = [{shape}], "
                               f"strides = [{strides}] : {self.ty(a.type)}")

    def block(self, block, st: _Func, ind: str) -> None:
        for op in block:
            self.before(op, st, ind)
            self.op(op, st, ind)

    def before(self, op, st: _Func, ind: str) -> None:
        """The buffers the plan declares before ``op`` and its carry moves there."""
        for b in st.plan.declare.get(op, ()):
            st.bufs[b] = st.fresh(b.hint)
            self.alloc(st, b, st.bufs[b], self.at(st, None, b.type, b.hint), b.type, ind)
        for src, dst in st.plan.copies.get(op, ()):
            s = st.bufs[src] if isinstance(src, Buf) else st[src]
            d = st.bufs[dst]
            self.on_data_lane(st, ind, lambda i: self.line(
                i, f"pto.tmov ins({s} : {self.named_ty(st, s, dst.type)}) "
                   f"outs({d} : {self.named_ty(st, d, dst.type)}) {{{CARRY}}}"))

    def alloc(self, st: _Func, owner, name: str, addr: str, t, ind: str) -> None:
        """``name = pto.alloc_tile`` of type ``t`` for ``owner`` (a value or a Buf): a tile
        AIV1 pushes empty (:func:`~ptopipe.ir.pipe_config.lane1_empty_pushes`) gets its valid
        shape at run time, the tile's on AIV0 and 0 x 0 on AIV1, as the C++ writer declares it."""
        if owner not in st.empty_on_lane1:
            self.line(ind, f"{name} = pto.alloc_tile{addr} : {self.ty(t)}")
            return
        st.dynamic.add(name)
        vr, vc = (st.lane_dims[d] for d in t.shape)
        self.line(ind, f"{name} = pto.alloc_tile{addr} valid_row = {vr} valid_col = {vc} : "
                       f"{self.named_ty(st, name, t)}")

    def named_ty(self, st: _Func, name: str, t) -> str:
        """The type of the buffer ``name`` holding a value of type ``t`` (its declaration's)."""
        if name in st.dynamic:
            return tile_buf(t, self.plat, dynamic_valid=True)
        return self.ty(t)

    def vty(self, st: _Func, v) -> str:
        """The type of value ``v`` where an op names it (its buffer's declared type)."""
        return self.named_ty(st, st[v], v.type)

    def dest(self, r, st: _Func, ind: str) -> str:
        """The ``outs`` buffer of tile result ``r``: its planned one, else a new alloc_tile."""
        name = st.home(r)
        if name is None:
            name = st.bind(r)
            op = storage_op(r)
            addr = self.at(st, op.addr if op is not None else None, r.type, name)
            self.alloc(st, r, name, addr, r.type, ind)
        return name

    # -- ops ---------------------------------------------------------------------------------
    def _skip_const(self, op) -> bool:
        """A constant the reader re-creates: a null pointer / TFREE object, or a pipe
        init's consumer-buffer argument (written as the buffer itself or ``0 : i32``)."""
        r = op.results[0]
        return bool(r.uses) and all(
            (u.owner.is_a(*INITIALIZE_PIPE) and u.index > 0)
            or (isinstance(r.type, NoneType) and u.owner.is_a(TFree, *INITIALIZE_PIPE))
            or (u.owner.is_a(*_EVENTS) and _static_event(r) is not None)
            for u in r.uses)

    def op(self, op, st: _Func, ind: str) -> None:
        n, cls = op.name, op.__class__
        if cls is ConstOp:
            if self._skip_const(op):
                return
            r = op.out
            if isinstance(r.type, NoneType):
                raise _err("a None constant used other than as a TFREE object or a null "
                           "GM pointer has no PTO-AS spelling", op)
            v = op.value
            self.line(ind, f"{st.bind(r)} = arith.constant {_lit(v, r.type)} : {self.ty(r.type)}")
        elif n.startswith("arith."):
            self.arith(op, st, ind)
        elif cls is ForOp:
            self.for_(op, st, ind)
        elif cls is IfOp:
            self.if_(op, st, ind)
        elif cls is YieldOp:                # a tile is yielded through its buffer
            xs = [v for v in op.operands if not isinstance(v.type, TileValueType)]
            if xs:
                self.line(ind, f"scf.yield {', '.join(st[v] for v in xs)} : "
                               f"{', '.join(self.ty(v.type) for v in xs)}")
        elif cls is CallOp:
            args = ", ".join(st[v] for v in op.operands)
            tys = ", ".join(_param_type(v.type) for v in op.operands)
            self.line(ind, f"func.call @{op.callee}({args}) : ({tys}) -> ()")
        elif cls is ReserveBufferOp:
            self.ring_buffer(op, st)
            # auto = true: ptoas's PlanMemory (--pto-level=level2, its default) places every
            # local buffer and rejects a fixed base; the base ptopipe placed the ring at (its
            # tile layout differs from ptoas's) goes along for the reader
            loc = ADDRESS_SPACE_OF_MEM[op.memory_space]
            if st.placed:           # level3: the ring where the tiles' addresses leave it room
                place, base = f"auto = false, base = {op.base}", ""
            else:
                place = "auto = true"
                base = f" {{{PTOPIPE_BASE} = {op.base}}}" if isinstance(op.base, int) else ""
            self.line(ind, f'{st.bind(op.buf)} = pto.reserve_buffer {{name = "{op.buffer_name}", '
                           f"size = {op.size}, location = #pto.address_space<{loc}>, {place}}}"
                           f"{base} -> i32")
        elif cls is ImportPeerBufferOp:
            self.ring_buffer(op, st)
            self.line(ind, f'{st.bind(op.buf)} = pto.import_reserved_buffer {{name = '
                           f'"{op.buffer_name}", peer_func = @{op.peer_func}}} -> i32')
        elif cls in INITIALIZE_PIPE:
            self.init(op, st, ind)
        elif cls in CROSS_CORE_OPS:
            self.cross(op, st, ind)
        elif cls in _EVENTS:
            # ptoas's set_flag / wait_flag: a constant event id as #pto.event<EVENT_IDn>,
            # another as the index operand of the _dyn form
            name = "pto.set_flag" if cls is RecordEvent else "pto.wait_flag"
            k = _static_event(op.event_id)
            if k is not None:
                self.line(ind, PTO_EVENTS.call(name, op.src.value, op.dst.value, k) + _free_order(op))
            else:
                pipes = f"#pto.pipe<{op.src.value}>, #pto.pipe<{op.dst.value}>"
                self.line(ind, f"{name}_dyn [{pipes}, {self._index(op.event_id, st, ind)}]{_free_order(op)}")
        elif cls is Barrier:
            self.line(ind, f"pto.barrier #pto.pipe<{op.pipe.value}>{_free_order(op)}")
        elif cls is GetSubblockIdOp:            # ptoas: an i64, cast to index
            raw = st.fresh(f"{op.result.name or 'sub'}_i64")
            self.line(ind, f"{raw} = pto.get_subblock_idx")
            self.line(ind, f"{st.bind(op.result)} = arith.index_cast {raw} : i64 to index")
        elif cls is CopyOp and isinstance(op.source.type, TileValueType):
            self.on_data_lane(st, ind, lambda i: self.named_copy(op, st, i))
        elif cls is CopyOp:
            x = op.source
            self.note(op, f"a named copy of {with_article(x.type)} value is ptopipe.copy, ptopipe's own op")
            self.line(ind, f"{st.bind(op.out)} = ptopipe.copy {st[x]} : {self.ty(x.type)}")
        elif cls in (LoadOp, StoreOp):
            self.on_data_lane(st, ind, lambda i: self.load_store(op, st, i))
        elif n[3:] in PTO_OP:
            self.on_data_lane(st, ind, lambda i: self.tile_op(op, st, i))
        elif cls is CreateOp:               # pypto's tile.create: a buffer nothing wrote yet
            self.dest(op.results[0], st, ind)
        else:
            raise _err(f"{n} has no PTO-AS spelling in ptopipe's writer", op,
                       "see docs/pto.md for the subset ptopipe writes")

    def on_data_lane(self, st: _Func, ind: str, write) -> None:
        """``write(ind)``, under ``scf.if`` the kernel's data lane when it has one: the
        buffers the op allocates are declared before the ``scf.if`` (a later op, guarded in
        its own ``scf.if``, reads them)."""
        if st.data_lane is None:
            write(ind)
            return
        start = len(self.out)
        write(ind + _IND)
        lines = self.out[start:]
        del self.out[start:]
        allocs = [x for x in lines if " = pto.alloc_tile " in x]
        self.out += [x[len(_IND):] for x in allocs]
        self.line(ind, f"scf.if {st.data_lane} {{")
        self.out += [x for x in lines if x not in allocs]
        self.line(ind, "}")

    def named_copy(self, op, st: _Func, ind: str) -> None:
        x = op.source
        res = self.dest(op.out, st, ind)
        self.line(ind, f"pto.tmov ins({st[x]} : {self.vty(st, x)}) outs({res} : "
                       f"{self.named_ty(st, res, x.type)}) {{{NAMED_COPY}}}")

    def arith(self, op, st: _Func, ind: str) -> None:
        k = op.name[6:]
        xs = op.operands
        t = xs[0].type
        if _int_scalar(t) and any(_int_scalar(v.type) and v.type != t for v in xs[1:]):
            # an integer of another type than index (an i32 kernel parameter) met by an
            # index (a constant, a loop variable): the IR's result is index (scalar_result_type),
            # and an MLIR arith op takes operands of its one type - the integers are cast first
            t = ScalarType("index")
        floats = [v.type for v in xs if v.type.dtype in FLOATS]
        rt = op.results[0].type
        if floats or rt.dtype in FLOATS and k not in CMP:
            # a float op (one float operand, or `/` of integers): MLIR's float ops take floats
            # of one type - an integer operand (a loop variable, an i32 parameter) or a float
            # of another width (an f16 parameter met by an f32) is converted first, to the
            # result's type (a comparison: its widest operand's), as the IR computes it
            # (scalar_result_type)
            t = rt if k not in CMP and rt.dtype in FLOATS else max(floats, key=lambda f: itemsize(f.dtype))
            names = [st[v] if v.type == t else
                     self.float_scalar(v, st[v], t.dtype, st, ind) if v.type.dtype in FLOATS else
                     self.int_as_float(v, st[v], t.dtype, st, ind) for v in xs]
        else:
            names = [self._index(v, st, ind) if t.dtype == "index" else st[v] for v in xs]
        fl = t.dtype in FLOATS
        args = ", ".join(names)
        res = st.bind(op.results[0])
        if k in CMP:
            pred = CMP[k][1 if fl else 0]
            self.line(ind, f"{res} = arith.{'cmpf' if fl else 'cmpi'} {pred}, {args} : {self.ty(t)}")
            return
        if k in LOGIC:
            name = LOGIC[k]
        elif k == "mod" and not fl:             # MLIR has no flooring remainder: a - (a // b) * b
            a, b = names
            ty = self.ty(op.results[0].type)
            q, p = st.fresh(None), st.fresh(None)
            for out, o, xy in zip((q, p, res), FLOOR_MOD, (f"{a}, {b}", f"{q}, {b}", f"{a}, {p}")):
                self.line(ind, f"{out} = {o} {xy} : {ty}")
            return
        elif k == "add" and fl:
            # ptoas lowers no arith.addf: a - (-b), marked for the reader (FLOAT_ADD_MARK)
            a, b = names
            nb = st.fresh(None)
            ty = self.ty(op.results[0].type)
            self.line(ind, f"{nb} = arith.negf {b} : {ty}")
            self.line(ind, f"{res} = arith.subf {a}, {nb} {{{FLOAT_ADD_MARK}}} : {ty}")
            return
        else:
            name = ARITH[k][1 if fl else 0] or ARITH[k][0] or ARITH[k][1]
            if not fl and k in UNSIGNED_ARITH and t.dtype.startswith("u"):
                name = UNSIGNED_ARITH[k]
        self.line(ind, f"{res} = {name} {args} : {self.ty(op.results[0].type)}")

    def init(self, op, st: _Func, ind: str) -> None:
        """The pipe init in the spelling whose ring ptoas builds is the one the IR describes
        (:func:`ring_spelling`); what ptoas does not read but the IR holds goes into the
        op's trailing attribute dictionary as ``ptopipe.*`` (ptoas keeps and ignores it)."""
        f = op
        while not f.is_a(FuncOp):
            f = f.parent_op
        bufs = {}
        for o in f.body:
            if o.is_a(*RING_BUFFERS):
                bufs[o.buffer_name] = o.buf
        way_args = {}
        for way_name, v in op.consumer_bufs.items():
            way = way_name.lower()
            d = getattr(v, "op", None)
            buf = None
            if d is not None and d.is_a(BufferAttrOp):
                buf = d.buffer
            elif op.ring_name(way_name) in bufs:
                buf = bufs[op.ring_name(way_name)]
            if buf is not None:
                way_args[way] = f"{st[buf]} : i32"
            elif d is not None and d.is_a(ConstOp) and d.value in (0, None):
                z = st.fresh("c0_i32")
                self.line(ind, f"{z} = arith.constant 0 : i32")
                way_args[way] = f"{z} : i32"
            else:
                raise _err(f"the {way.upper()} consumer buffer of this pipe init is neither a "
                           "reserve / import buffer nor 0", op)
        gm = op.gm_slot_buffer
        gm_arg = f"{st[gm]} : {_param_type(gm.type)}" if isinstance(gm.type, TensorType) else None
        if gm_arg is not None and op.gm_offset:     # the ring further into the buffer, as pypto lays it out
            item = itemsize(gm.type.dtype)
            if op.gm_offset % item:
                raise _err(f"the GM ring starts {op.gm_offset} bytes into its slot buffer, not a whole "
                           f"number of {MLIR_DTYPE[gm.type.dtype]} elements (pto.addptr counts elements)", op)
            k, moved = st.fresh(f"c{op.gm_offset // item}_index"), st.fresh("gm_ring")
            short = f"<{MLIR_DTYPE[gm.type.dtype]}>"
            self.line(ind, f"{k} = arith.constant {op.gm_offset // item} : index")
            self.line(ind, f"{moved} = pto.addptr {st[gm]}, {k} : {short} -> {short}")
            gm_arg = f"{moved} : {_param_type(gm.type)}"
        sp = ring_spelling(op, self.plat, f.sym_name in self.nosplit,
                           frontend=not any(r in self.own_rings for r in op.rings))
        for what in sp.unsupported:
            self.note(op, what)
        trailing = list(sp.extra)
        if sp.form == "frontend":
            parts = ([f"gm_slot_buffer = {gm_arg}"] if gm_arg else []) + \
                [f"{w}_consumer_buf = {way_args[w]}" for w in ("c2v", "v2c")]
            head, tail = f"pto.{op.call_name} {{{sp.block}}} ({', '.join(parts)})", ""
        else:
            mask = int(op.dir_mask) & 3
            locals_ = [way_args["c2v"], way_args["v2c"]] if mask == 3 else \
                [way_args["c2v" if mask == 1 else "v2c"]]
            if sp.form == "pto.initialize_l2g2l_pipe":
                if gm_arg is None:
                    raise _err("a ring in GM needs its GM slot buffer, but this pipe init has none", op,
                               "lower the program for its platform first (ptopipe compile)")
                locals_.insert(0, gm_arg)
            elif gm_arg is not None:        # unused by a consumer-local ring; the IR names it
                trailing.append(f'ptopipe.gm_slot_buffer = "{st[gm][1:]}"')
            h = st.fresh("pipe")
            for ring in op.rings:
                st.pipes[ring] = h
                # (the readers number a function's lower-level rings of a direction 0, 1, ...: an
                # op that names no handle - the address flow's - names its ring by that id)
                st.ring_ids[ring] = sum(1 for r in st.ring_ids if r.direction == ring.direction)
            head = f"{h} = {sp.form} {{{sp.block}}} ({', '.join(locals_)})"
            tail = " -> !pto.pipe"
        extra = f" {{{', '.join(trailing)}}}" if trailing else ""
        self.line(ind, head + extra + tail)

    def cross(self, op, st: _Func, ind: str) -> None:
        d = op.direction
        peer = {C2V: "aiv", V2C: "aic"}[d]      # producer side's peer
        me = {C2V: "aic", V2C: "aiv"}[d]        # consumer side's peer
        split = op.split
        cls = op.__class__
        if split is None and cls is TFree:
            split = self._pop_split(op, ring_of(op))
        h = st.pipes.get(ring_of(op))           # the !pto.pipe handle, when the init made one
        sattr = "" if split is None else f" {{split = {int(split)}}}"
        k = st.ring_ids.get(ring_of(op), 0)      # an op with no handle names its ring by id
        named = ([] if split is None else [f"split = {int(split)}"]) + ([f"id = {k}"] if k else [])
        nattr = f" {{{', '.join(named)}}}" if named else ""
        if not all(isinstance(v.type, (TileValueType, BufferType, NoneType))
                   for v in list(op.operands) + list(op.results)) or cls is TAlloc:
            self.note(op, "the address flow (TALLOC, a GM slot pushed / popped as a tensor, a "
                          "TFREE naming its tile) is ptopipe's: ptoas moves tiles")
        if cls is TPush:
            t = op.tile
            if h is not None and isinstance(t.type, TileValueType):
                self.line(ind, f"pto.tpush({st[t]}, {h} : {self.vty(st, t)}, !pto.pipe){sattr}")
            else:
                self.line(ind, f"pto.tpush_to_{peer}({st[t]} : {self.vty(st, t)}){nattr}")
        elif cls is TFree:
            obj = op.obj
            if h is not None and isinstance(obj.type, NoneType):
                self.line(ind, f"pto.tfree({h} : !pto.pipe){sattr}")
                return
            tile = "" if isinstance(obj.type, NoneType) else f"({st[obj]} : {self.ty(obj.type)})"
            if tile:
                self.note(op, "the address flow (TALLOC, a GM slot pushed / popped as a tensor, a "
                              "TFREE naming its tile) is ptopipe's: ptoas moves tiles")
            self.line(ind, f"pto.tfree_from_{me}{tile}{nattr}")
        elif cls is TPop and h is not None and isinstance(op.tile.type, TileValueType):
            r = op.tile
            res, t = st.bind(r), self.ty(r.type)
            if op in self.own:      # a buffer of its own: see held_alike
                self.line(ind, f"{res} = pto.alloc_tile{self.at(st, None, r.type, res[1:])} : {t}")
            else:
                self.line(ind, f"{res} = pto.declare_tile -> {t}")
            self.line(ind, f"pto.tpop({res}, {h} : {t}, !pto.pipe){sattr}")
        else:
            r = op.results[0]
            what = "tpop_from_" + me if cls is TPop else "talloc_to_" + peer
            self.line(ind, f"{st.bind(r)} = pto.{what}{nattr} -> {self.ty(r.type)}")

    def held_alike(self, f) -> set:
        """The TPOPs of ``f`` that pop while a tile popped earlier, of the same ``.pto`` type,
        is still held (not yet freed) - two matmul results crossing to the Vector side and
        combined there.  ptoas folds identical ``pto.declare_tile`` ops (pure, no operands:
        its CSE) into one C++ Tile, so ``TPOP(pipe, v); TPOP(pipe, v)`` would leave the first
        pop's data without a handle; such a TPOP pops into a ``pto.alloc_tile`` (an allocation,
        never folded; the TPOP rebinds it to its slot), on a pipe with a handle (a ring ptoas's
        frontend ops would pop is written in the lower-level spelling, :func:`ring_spelling`).
        A TFREE frees the oldest held pop of its ring; held pops are tracked through nested
        regions conservatively (a free inside a region is not assumed to end an outer hold;
        a loop body is walked twice, for a pop held into the next iteration)."""
        own = set()

        def walk(block, held):          # held: [(ring, .pto type or None, the TPOP)], oldest first
            held = list(held)
            for op in block:
                if op.is_a(TPop):
                    t = self.ty(op.tile.type) if isinstance(op.tile.type, TileValueType) else None
                    if t is not None and any(h[1] == t for h in held):
                        own.add(op)
                    held.append((ring_of(op), t, op))
                elif op.is_a(TFree):
                    ring = ring_of(op)
                    k = next((j for j, h in enumerate(held) if h[0] == ring), None)
                    if k is not None:
                        del held[k]
                elif op.regions:
                    more = []
                    for region in op.regions:
                        for b in region.blocks:
                            left = [h for h in walk(b, held) if h not in held]
                            if left and op.is_a(ForOp):     # still held in the next iteration
                                walk(b, held + left)
                            more += [h for h in left if h not in more]
                    held += more
            return held

        walk(f.body, [])
        return own

    @staticmethod
    def _pop_split(op, d):
        """The split of every TPOP of direction ``d`` in ``op``'s function, if they agree
        (a TFREE with no split frees with its TPOP's; ptoas wants it spelled)."""
        f = op
        while not f.is_a(FuncOp):
            f = f.parent_op
        splits = {o.split for o in f.walk() if o.is_a(TPop) and ring_of(o) == d}
        return splits.pop() if len(splits) == 1 else None

    def _view_of(self, st: _Func, v) -> str:
        return st.views.get(v) or st[v]

    def load_store(self, op, st: _Func, ind: str) -> None:
        load = op.is_a(LoadOp)
        ten, offs = op.tensor, op.offsets
        lay = gm_layout_of(op)
        if lay is not None:     # (the value IR keeps no strides to write the view with)
            raise _err(f"{op.name} of a {lay.name} GM window: the value IR keeps a tensor's shape, not its "
                       "strides, so the .pto writer cannot write its view", op)
        if not load:
            tile = op.tile
        shape = gm_window(op)   # the window in the tensor's rank (a 1-D tensor's store: [C])
        pv = st.fresh("pv")
        ptype = f"!pto.partition_tensor_view<{'x'.join(map(str, shape))}x{MLIR_DTYPE[ten.type.dtype]}>"
        self.line(ind, f"{pv} = pto.partition_view {self._view_of(st, ten)}, offsets = "
                       f"[{', '.join(st[o] for o in offs)}], sizes = [{', '.join(st.cints[s] for s in shape)}]"
                       f" : {self.ty(ten.type)} -> {ptype}")
        if load:
            r = op.result
            res = self.dest(r, st, ind)
            self.line(ind, f"pto.tload ins({pv} : {ptype}) outs({res} : {self.named_ty(st, res, r.type)})")
        else:
            self.line(ind, f"pto.tstore ins({st[tile]} : {self.vty(st, tile)}) outs({pv} : {ptype})"
                           + atomic_type_attr(op.attributes.get("atomic", 0)))

    def tile_op(self, op, st: _Func, ind: str) -> None:
        name = PTO_OP[op.name[3:]]
        if name in PTOAS_LACKS:
            self.note(op, f"{name} is ptopipe's spelling: ptoas has no {name} op")
        if (name == "pto.tcmp" and self.plat.name == "a5"
                and op.results[0].type.static_shape != op.operands[0].type.static_shape):
            # the DSL's packed mask is ceil(cols / 8) bytes a row (pto-isa's CPU TSEL reads it so),
            # declared in whole 32-byte rows: the sources' static shape only when they have as many columns
            self.note(op, "pto.tcmp of a packed mask: ptoas's A5 verifier wants the mask in the sources' "
                          "static shape")
        if name == "pto.tcvt" and op.results[0].type.static_shape != op.operands[0].type.static_shape:
            # each dtype's rows are padded to whole 32-byte blocks (arch.vocab.static_shape): a
            # narrow tile converted between dtypes of two sizes has two static shapes, which
            # pto-isa's TCVT takes (valid shapes equal) and ptoas's verifier does not
            src, dst = op.operands[0].type, op.results[0].type
            (sr, sc), (dr, dc) = src.static_shape, dst.static_shape
            self.note(op, f"pto.tcvt of {src.dtype} {src.shape[0]}x{src.shape[1]} to {dst.dtype}: pto-isa pads "
                          f"each to whole 32-byte rows ({sr}x{sc} and {dr}x{dc}), and ptoas's verifier takes src "
                          "and dst of one static shape only (a tile whose rows are whole 32 bytes in both dtypes "
                          "converts; --emit cpp, pto-isa's C++, takes this one)")
        if FORM_OF_DSL.get(op.name[3:]) == "part" and len({v.type.shape for v in op.operands}) > 1:
            # a DSL tile's static shape is its valid shape; ptoas's verifier wants one static shape
            self.note(op, f"{name} of tiles of two shapes: ptoas takes its operands in one static shape")
        ins = [st[v] for v in op.operands]
        tys = [self.vty(st, v) if isinstance(v.type, TileValueType) else self.ty(v.type) for v in op.operands]
        tiles = [v.type.dtype for v in op.operands if isinstance(v.type, TileValueType)]
        refused = ptoas_element_refusal(name, self.plat.name,
                                        np_dtype(tiles[0] if tiles else op.results[0].type.dtype))
        if refused:         # the run takes it as pto-isa's instruction does; ptoas's verifier does not
            self.note(op, refused[0])
        want = scalar_cast_type(name, op.results[0].type.dtype if name in INT_SCALAR_OPERAND or not tiles
                                else tiles[0])
        if want is not None:
            for k, v in enumerate(op.operands):
                if isinstance(v.type, ScalarType) and v.type.dtype == "index":
                    ins[k], tys[k] = self.index_as(v, ins[k], want, st, ind), MLIR_DTYPE[want]
                elif want in FLOATS and isinstance(v.type, ScalarType) and v.type.dtype in FLOATS \
                        and v.type.dtype != want:
                    ins[k], tys[k] = self.float_scalar(v, ins[k], want, st, ind), MLIR_DTYPE[want]
                elif name in FLOAT_SCALAR_OPS and isinstance(v.type, ScalarType) and v.type.dtype not in FLOATS:
                    # an integer scalar ptoas takes only as a float here (FLOAT_SCALAR_OPS)
                    x = st.fresh(f"{v.name or 'n'}_{want}")
                    cast = "arith.uitofp" if v.type.dtype in ("u8", "u32", "bool") else "arith.sitofp"
                    self.line(ind, f"{x} = {cast} {ins[k]} : {MLIR_DTYPE[v.type.dtype]} to {MLIR_DTYPE[want]}")
                    ins[k], tys[k] = x, MLIR_DTYPE[want]
        if name in SCRATCH_REQUIRED:
            stype = scratch_type(op.name[3:], op.operands[0].type)
            tmp, tt = st.fresh("tmp"), self.ty(stype)
            self.line(ind, f"{tmp} = pto.alloc_tile{self.at(st, op.scratch_addr, stype, tmp)} : {tt}")
            k = scratch_index(op.name[3:], [v.type for v in op.operands])
            ins.insert(k, tmp)
            tys.insert(k, tt)
        r = op.results[0]
        res = self.dest(r, st, ind)
        rty = self.named_ty(st, res, r.type)
        tiles = [v.type for v in op.operands if isinstance(v.type, TileValueType)] + [r.type]
        if FORM_OF_DSL.get(op.name[3:]) in ROW_MAJOR_FORMS and all(t.is_column for t in tiles):
            # ptoas takes these ops on row-major tiles only: run them on the columns' rows
            ins = [self.row_view(x, v.type, ind, st) if isinstance(v.type, TileValueType) else x
                   for x, v in zip(ins, op.operands)]
            tys = [self.ty(v.type.row_view()) if isinstance(v.type, TileValueType) else t
                   for t, v in zip(tys, op.operands)]
            res, rty = self.row_view(res, r.type, ind, st), self.ty(r.type.row_view())
        spelled = ((ISA_ATTR_SPELLING[k][0], ISA_ATTR_SPELLING[k][1](op.attributes[k]))
                   for k in ISA_ATTRS.get(op.name[3:], ()))
        at = "".join(f" {{{key} = {text}}}" for key, text in spelled if text is not None)
        self.line(ind, f"{name} ins({', '.join(ins)}{at} : {', '.join(tys)}) outs({res} : {rty})")

    def index_as(self, v, name: str, want: str, st: _Func, ind: str) -> str:
        """Index scalar ``v`` (spelled ``name``) as a ``want`` number: via i64 - ptoas's C++
        emitter takes an index_cast to i64 (an index is an int64_t there) and refuses one to a
        narrower type ("unsupported operation") - then ``arith.trunci`` / ``arith.sitofp``
        (the reader reads the chain as ``v`` itself)."""
        x = st.fresh(f"{v.name or 'n'}_i64")
        self.line(ind, f"{x} = arith.index_cast {name} : index to i64")
        if want != "i64":
            x64, x = x, st.fresh(f"{v.name or 'n'}_{want}")
            cast = "arith.sitofp" if want in FLOATS else "arith.trunci"
            self.line(ind, f"{x} = {cast} {x64} : i64 to {MLIR_DTYPE[want]}")
        return x

    def int_as_float(self, v, name: str, want: str, st: _Func, ind: str) -> str:
        """Integer scalar ``v`` (spelled ``name``) converted to float type ``want``: an index
        through i64 (:meth:`index_as`), a sized integer (an i32 parameter) by ``arith.sitofp``."""
        if v.type.dtype == "index":
            return self.index_as(v, name, want, st, ind)
        x = st.fresh(f"{v.name or 'n'}_{want}")
        self.line(ind, f"{x} = arith.sitofp {name} : {MLIR_DTYPE[v.type.dtype]} to {MLIR_DTYPE[want]}")
        return x

    def float_scalar(self, v, name: str, want: str, st: _Func, ind: str) -> str:
        """Float scalar ``v`` (spelled ``name``) converted to a ``want`` float with
        ``arith.truncf`` / ``arith.extf``: for an op whose ptoas verifier wants the scalar in its
        tile's type (texpands: "expects scalar type == dst element type"; pto-isa converts it
        there all the same), or a float op meeting a float of another width (MLIR's float ops
        take one type).  The reader reads the conversion as ``v`` itself."""
        x = st.fresh(f"{v.name or 'c'}_{want}")
        wider = itemsize(want) > itemsize(v.type.dtype)
        self.line(ind, f"{x} = {'arith.extf' if wider else 'arith.truncf'} {name} : "
                       f"{MLIR_DTYPE[v.type.dtype]} to {MLIR_DTYPE[want]}")
        return x

    def row_view(self, name: str, t: TileValueType, ind: str, st: _Func) -> str:
        """``%v = pto.treshape %name``: the ND [1, R] row view of DN column ``name``."""
        view = st.fresh("row" if name[1].isdigit() else name[1:] + "_row")   # %12_row is no MLIR name
        self.line(ind, f"{view} = pto.treshape {name} : {self.named_ty(st, name, t)} -> {self.ty(t.row_view())}")
        return view

    # -- regions -----------------------------------------------------------------------------
    def _results(self, op, st: _Func) -> str:
        """``%a, %b = `` for the results spelled as results (a tile result is its buffer)."""
        xs = [st.bind(r) for r in op.results if st.home(r) is None]
        return ", ".join(xs) + " = " if xs else ""

    def _index(self, x, st: _Func, ind: str) -> str:
        """``x`` as an index value: an integer scalar of another type (an ``i32`` kernel
        parameter) is cast first (scf.for bounds are ``index``)."""
        t = x.type
        if not isinstance(t, ScalarType) or t.dtype == "index" or t.dtype not in INT_DTYPES:
            return st[x]
        y = st.fresh(f"{x.name or 'n'}_idx")
        self.line(ind, f"{y} = arith.index_cast {st[x]} : {MLIR_DTYPE[t.dtype]} to index")
        return y

    def for_(self, op, st: _Func, ind: str) -> None:
        lb, ub, step, inits = op.start, op.stop, op.step, op.inits
        body = op.body
        iv, *iters = body.args
        lb, ub, step = (self._index(x, st, ind) for x in (lb, ub, step))
        head = f"scf.for {st.bind(iv)} = {lb} to {ub} step {step}"
        pairs = [(a, x, r) for a, x, r in zip(iters, inits, op.results) if st.home(a) is None]
        if pairs:
            head += (f" iter_args({', '.join(f'{st.bind(a)} = {st[x]}' for a, x, _ in pairs)}) -> "
                     f"({', '.join(self.ty(r.type) for _, _, r in pairs)})")
        self.line(ind, self._results(op, st) + head + " {")
        self.block(body, st, ind + _IND)
        self.line(ind, "}")

    def if_(self, op, st: _Func, ind: str) -> None:
        c = op.cond
        res = self._results(op, st)
        typed = [r for r in op.results if st.home(r) is None]
        rt = f" -> ({', '.join(self.ty(r.type) for r in typed)})" if typed else ""
        then, els = op.then_block, op.else_block
        self.line(ind, f"{res}scf.if {st[c]}{rt} {{")
        self.block(then, st, ind + _IND)
        mark = len(self.out)
        self.line(ind, "} else {")
        self.block(els, st, ind + _IND)
        if len(self.out) == mark + 1:       # nothing in the else branch: no else
            self.out.pop()
        self.line(ind, "}")


@dataclass(frozen=True)
class RingSpelling:
    """How the writer spells one pipe init: ``form`` is ``"frontend"``
    (``pto.aic_/aiv_initialize_pipe``) or the lower-level op name; ``block`` the attribute
    block ptoas reads; ``extra`` the ``ptopipe.*`` entries of the trailing dictionary."""
    form: str
    block: str
    extra: tuple
    unsupported: tuple = ()     # why ptoas rejects it (a ring it cannot build)


def ring_spelling(init, platform, nosplit: bool, frontend: bool = True) -> RingSpelling:
    """The spelling of ``init`` (a compiled ``pl.*_initialize_pipe``) under which ptoas builds
    the ring the IR describes - ``TPipe<FlagID, Dir, SlotSize, SlotNum, LocalSlotNum, nosplit>``.

    ptoas's frontend op fixes SlotNum, FlagID and LocalSlotNum (:func:`ptopipe.protocol.rings.frontend_ring`),
    so it is written only for a ring that has them; any other ring is an explicit
    ``pto.initialize_l2g2l_pipe`` (a ring in GM: A2A3, or a ``*_GM`` direction) or
    ``pto.initialize_l2l_pipe`` (A5's consumer-local ring), which take SlotNum, LocalSlotNum
    (l2g2l only) and the FlagID (``flag_base``).  The IR's facts no ptoas spelling carries
    go to ``extra``: ``ptopipe.lanes``; a LocalSlotNum on an A5 consumer-local ring, which
    stages nothing (``ptopipe.local_slot_num``); an l2g2l ring whose IR left LocalSlotNum
    to pto-isa's default (``ptopipe.default_local_slot_num``: the reserve then holds
    SLOT_NUM slots, the seed 003 rule).  ``frontend=False``: the lower-level spelling even
    for a ring the frontend op builds (its handle lets a TPOP pop into a tile of the
    kernel's: :meth:`_Writer.held_alike`).  The reader reverses this (:mod:`.pto_pipe_ops`)."""
    plat = get_platform(platform)
    mask = int(init.dir_mask)
    n = init.slot_num
    n = plat.slot_num_for(mask & 3 == 3) if n is None else n
    lsn, flag = init.local_slot_num, init.flag_id or 0
    gm_dir = mask > 3
    in_gm = plat.ring_in_gm or gm_dir
    fn, flsn = frontend_ring(mask, plat)
    extra = [] if init.lanes is None else [f"ptopipe.lanes = {init.lanes}"]
    ns = ", nosplit = true" if nosplit else ""
    head = f"dir_mask = {mask}, slot_size = {init.slot_size}"
    # (a ring with a pipe id: the lower-level spelling, whose handle names the ring each
    # push / pop uses - ptoas's frontend ops carry no pipe handle)
    if frontend and not gm_dir and n == fn and flag == 0 and not init.pipe_id and (lsn == flsn or not in_gm):
        if lsn != flsn:
            extra.append(f"ptopipe.local_slot_num = {lsn}")
        return RingSpelling("frontend", head + ns, tuple(extra))
    bad = []
    if n not in PTOAS_SLOT_NUMS:
        bad.append(f"ptoas builds rings of SLOT_NUM {' or '.join(map(str, PTOAS_SLOT_NUMS))} "
                   f"only: this ring has {n} slots")
    if gm_dir:
        bad.append(f"a ring in GM by its direction ({Direction(mask).name}) is ptopipe's: "
                   "ptoas's dir_mask is 1, 2 or 3")
    if in_gm:
        if lsn is None:
            extra.append("ptopipe.default_local_slot_num")
        block = f"{head}, slot_num = {n}, local_slot_num = {local_slot_num(init.attributes, n)}, flag_base = {flag}{ns}"
        return RingSpelling("pto.initialize_l2g2l_pipe", block, tuple(extra), tuple(bad))
    if lsn is not None:
        extra.append(f"ptopipe.local_slot_num = {lsn}")
    return RingSpelling("pto.initialize_l2l_pipe", f"{head}, slot_num = {n}, flag_base = {flag}{ns}",
                        tuple(extra), tuple(bad))


def nosplit_functions(prog) -> set:
    """The AIV kernels marked ``split=TILE_NO_SPLIT`` (whole tiles on AIV0: a ``nosplit``
    pipe) and the Cube kernels whose pipes they share."""
    funcs = list(prog.body)
    return with_peers(funcs, {f.sym_name for f in funcs if f.kind is FunctionKind.AIV
                              and f.split is TileSplitAxis.TILE_NO_SPLIT})


def with_peers(funcs, names: set) -> set:
    """``names`` and the functions sharing a pipe with one of them (an import_peer_buffer
    of one names the other)."""
    out = set(names)
    for f in funcs:
        for o in f.body:
            if o.is_a(ImportPeerBufferOp):
                if o.peer_func in names:
                    out.add(f.sym_name)
                if f.sym_name in names:
                    out.add(o.peer_func)
    return out


def write_pto(program, platform=None, notes: list | None = None) -> str:
    """``program`` (a compiled ``pl.program`` op) as PTO-AS text; ``platform`` (a name)
    overrides the program's ``platform`` attribute for ``pto.target_arch``.  ``notes`` (a
    list) receives ``(what, where)`` for each thing written in a spelling of ptopipe's that
    ptoas rejects (a ring ptoas cannot build, the address flow...)."""
    if getattr(platform, "name", None):
        platform = platform.name
    w = _Writer()
    text = w.program(program, platform)
    if notes is not None:
        notes.extend(w.notes.items())
    return text
