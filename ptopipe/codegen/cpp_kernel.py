"""One AIC / AIV kernel as a pto-isa C++ function (see :mod:`.cpp_writer` for the whole
translation unit and the mapping rules): tile declarations with their TASSIGNs at the
allocator's addresses, the TPipe from the init op's attributes, and the body - tile ops,
cross-core ops, events, ``for`` / ``if`` and scalar index math.  A kernel op the writer
cannot express raises a CompileError naming the op and its DSL line.

Two things the simulator does that the C++ says explicitly: an element-wise op on DN
``[R, 1]`` columns runs on their ND ``[1, R]`` row views (TRESHAPE; pto-isa's NPU element-wise
ops take RowMajor tiles only), and AIV1 of a TILE_NO_SPLIT function with two lanes (the A2A3
lane-1 replay, docs/layouts.md) runs its data ops under ``if (get_subblockid() == 0)``: it
takes part in every TPUSH / TPOP / TFREE handshake but loads, computes and stores nothing,
as the simulator runs it on empty valid shapes.
"""
from __future__ import annotations

from ..arch import get_platform
from ..arch.catalogue import OPS as CATALOGUE
from ..arch.catalogue import ROW_MAJOR_FORMS
from ..arch.vocab import AtomicType, CmpMode, Direction, TileSplitAxis, row_major_strides
from ..errors import CompileError
from ..ir.layout import read_layout, unallocated
from ..ir.pipe_config import lane1_empty_pushes, lane1_replays, local_slot_num, ring_of
from ..ir.vocab import FunctionKind
from ..ir.opdefs import (ARITH_BINARY, ARITH_UNARY, CALL_OPS, CROSS_CORE_OPS, INITIALIZE_PIPE,
                         RING_BUFFERS, Barrier, ReserveBufferOp, BufferAttrOp, CastOp, ConstOp, CopyOp, ForOp,
                         CreateOp, GetSubblockIdOp, IfOp, LoadOp, RecordEvent, ReturnOp, StoreOp, TFree,
                         TPop, TPush, WaitEvent, YieldOp, operand_groups)
from ..ir.types import ScalarType, TensorType, TileValueType
from ..ir.ops import ISA_ATTRS, gm_layout_of, gm_window, scratch_index, scratch_type
from . import cpp_types as T
from .cpp_origin import mark

BY_DSL = {d.dsl: d for d in CATALOGUE.values() if d.dsl}
#: the instructions whose pto-isa template arguments cannot be deduced from their operands
#: (a non-type parameter: TCI's ``descending``, TTRI's ``isUpperOrLower``), spelled from the
#: destination's tile type and element type and the op's attributes (TCI's direction, TTRI's
#: upper / lower)
#: the IR attributes an instruction takes after its operands (``ir.ops.ISA_ATTRS``), spelled
#: as pto-isa's C++ enums
CPP_ATTR_SPELLING = {"mode": lambda v: f"CmpMode::{CmpMode(v).name}"}
CPP_TEMPLATE_ARGS = {"TCI": lambda tile, elem, at: f"{tile}, {elem}, {int(at['descending'])}",
                     "TTRI": lambda tile, elem, at: f"{tile}, {int(at['upper'])}"}
#: the instruction attributes pto-isa takes as template arguments, not call arguments
CPP_TEMPLATE_ATTRS = ("upper", "descending")
_CMP = {"and": "&&", "or": "||"}



def err(msg: str, op, fix: str | None = None) -> CompileError:
    """A CompileError at ``op``'s DSL line."""
    loc = getattr(op, "loc", None)
    return CompileError(msg, where=str(loc) if loc else None, fix=fix)


def params(f) -> tuple:
    """(block arguments, C++ names) of a function's parameters."""
    args = f.regions[0].blocks[0].args
    names = [T.ident(a.name or f"arg{i}") for i, a in enumerate(args)]
    return args, names


class KernelWriter:
    """One AIC / AIV kernel function."""

    def __init__(self, f, called: bool, platform: str | None = None):
        self.f, self.called = f, called
        self.platform = platform
        self.gm_directions = get_platform(platform).gm_directions if platform else True
        self.name = f.sym_name
        missing = unallocated(f)
        if missing:
            raise err(f"{missing[0].name}: AllocateMemoryAddr gave its tile no address", missing[0],
                      "compile the program with allocate-memory in the pipeline")
        self.lay = read_layout(f)
        self.names = {}            # Value -> C++ name (tiles, GM values, named scalars)
        self.used = set()
        self.aliases = {}          # C++ type -> alias name
        self.alias_lines = []
        self.decls = []            # tile variable declarations + TASSIGNs (function top)
        self.buffers = {}          # buffer Value -> (base, size)
        self.pipes = {}            # Ring -> (TPipe type name, variable) of its init
        self.ngm = 0
        self.pops = {}             # Ring -> {splits of its TPOPs}
        self.splits = set()
        self.views = {}            # C++ name of a DN column tile -> its row view's name
        self.data_lane = None      # the lane-0 condition of a two-lane TILE_NO_SPLIT AIV kernel
        self.dynamic = set()       # tile values declared with a dynamic valid shape (empty on lane 1)
        for op in f.walk():
            if op.is_a(*CROSS_CORE_OPS) and op.split is not None:
                self.splits.add(TileSplitAxis(op.split))
            if op.is_a(TPop):
                self.pops.setdefault(ring_of(op), set()).add(op.split)
        self.empty_on_lane1 = lane1_empty_pushes(f)

    # -- names and types ---------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        base = T.ident(hint)
        name, k = base, 1
        while name in self.used:
            name, k = f"{base}_{k}", k + 1
        self.used.add(name)
        return name

    def alias(self, cpp_type: str, hint: str) -> str:
        a = self.aliases.get(cpp_type)
        if a is None:
            a = self.aliases[cpp_type] = self.fresh(hint)
            self.alias_lines.append(f"    using {a} = {cpp_type};")
        return a

    def ttype(self, t) -> str:
        if isinstance(t, TileValueType):
            return self.alias(T.tile_type(t, self.platform), T.tile_alias(t))
        if isinstance(t, TensorType):
            return self.alias(T.tensor_global(t), f"Gm_{'x'.join(map(str, t.shape))}_{t.dtype}")
        raise CompileError(f"type {t} has no pto-isa C++ object type")

    def vtype(self, v) -> str:
        """The C++ type of tile variable ``v`` (its declaration's)."""
        if v in self.dynamic:
            t = v.type
            return self.alias(T.tile_type(t, self.platform, dynamic_valid=True), T.tile_alias(t) + "_dyn")
        return self.ttype(v.type)

    def declaration(self, v, name: str) -> str:
        """The declaration of tile variable ``v``.  In a two-lane TILE_NO_SPLIT AIV kernel a
        tile it TPUSHes has a dynamic valid shape, empty on AIV1: AIV1 pushes an empty tile
        (the handshake, no data), as the simulator's lane-1 replay does - a full one would be a
        second writer of the whole slot (pto-isa's no-split TPUSH has one writer)."""
        if v in self.empty_on_lane1:
            self.dynamic.add(v)
            r, c = v.type.shape
            lane0 = "get_subblockid() == 0"
            return f"    {self.vtype(v)} {name}({lane0} ? {r} : 0, {lane0} ? {c} : 0);"
        return f"    {self.vtype(v)} {name};"

    def handle(self, v, hint: str) -> str:
        """Declare (at the top) a tile variable for ``v`` with no address of its own."""
        name = self.names[v] = self.fresh(v.name or hint)
        self.decls.append(f"    {self.ttype(v.type)} {name};")       # a handle: bound by = or TPOP
        return name

    def define(self, v, op, ind: str) -> tuple:
        """(C++ name of tile result ``v``, lines to emit at its definition)."""
        if v in self.names:
            return self.names[v], []
        d = getattr(v, "op", None)
        place = self.lay.tiles.get(d)
        if place is None:
            raise err(f"{op.name}: the allocator gave its tile result no address", op,
                      "compile the program with allocate-memory in the pipeline")
        mem, addr = place
        rot = self.lay.rotations.get(d)
        name = self.names[v] = self.fresh(v.name or "tmp")
        self.decls.append(self.declaration(v, name))
        if rot is None:
            self.decls += mark([f"    TASSIGN({name}, {addr:#x});  // {mem}"], op.loc)
            return name, []
        table, turn = self.fresh(name + "_addrs"), self.fresh(name + "_turn")
        self.decls += [f"    const uint32_t {table}[{len(rot)}] = {{{', '.join(f'{a:#x}' for a in rot)}}};"
                       f"  // {mem}: {len(rot)} buffers used in turn",
                       f"    uint32_t {turn} = 0;"]
        return name, [f"{ind}TASSIGN({name}, {table}[{turn}]);",
                      f"{ind}{turn} = ({turn} + 1) % {len(rot)};"]

    # -- scalar expressions ------------------------------------------------------------------
    def expr(self, v) -> str:
        name = self.names.get(v)
        if name is not None:
            return name
        op = getattr(v, "op", None)
        if op is None:
            raise CompileError(f"value %{v.name or '?'} is used before it is defined in {self.name}")
        n, cls = op.name, op.__class__
        if cls is ConstOp:
            return T.literal(op.value, v.type)
        if n in ARITH_BINARY:
            sym = ARITH_BINARY[n]
            x, y = (self.expr(o) for o in op.operands)
            if sym == "//":
                return f"ptopipe_floordiv({x}, {y})"
            if sym == "%":
                return f"ptopipe_mod({x}, {y})"
            if sym in ("truncdiv", "truncrem"):        # C++'s integer / and % truncate toward zero
                return f"({x} {'/' if sym == 'truncdiv' else '%'} {y})"
            if sym == "/":
                return f"(static_cast<float>({x}) / static_cast<float>({y}))"
            if sym in ("min", "max"):
                return f"({x} {'<' if sym == 'min' else '>'} {y} ? {x} : {y})"
            return f"({x} {_CMP.get(sym, sym)} {y})"
        if n in ARITH_UNARY:
            x, = op.operands
            return f"({'!' if ARITH_UNARY[n] == 'not' else '-'}{self.expr(x)})"
        if cls is GetSubblockIdOp:
            return "static_cast<int64_t>(get_subblockid())"
        if cls is BufferAttrOp:
            base, size = self.buffers[op.buffer]
            return str(base if op.attr == "base" else size)
        if cls is CopyOp:
            return self.expr(op.source)
        raise err(f"{n} result used as a scalar has no C++ expression", op)

    def gm_ptr(self, v) -> str:
        """A ``__gm__ T*`` expression for a tensor value (a parameter or a GM slot)."""
        name = self.names[v]
        return name if getattr(v, "op", None) is None else f"{name}.data()"

    def window(self, tensor, offsets, window, op, ind, tile) -> tuple:
        """(lines declaring a GlobalTensor window, its name) at ``offsets`` of ``tensor``, in the
        GM layout a move with ``tile`` needs (:func:`~ptopipe.codegen.cpp_types.global_type`)."""
        t = tensor.type
        terms = []
        for o, s in zip(offsets, row_major_strides(t.shape)):
            e = self.expr(o)
            if e != "0":
                terms.append(e if s == 1 else f"{e} * {s}")
        lay = tile.type.written_layout(self.platform)
        gtype = T.global_type(t.dtype, window, t.shape, lay)
        gtype = self.alias(gtype, f"Gm_{'x'.join(map(str, window))}_{t.dtype}{'_DN' if 'Layout::DN' in gtype else ''}")
        g = self.fresh(f"gm{self.ngm}")
        self.ngm += 1
        ptr = self.gm_ptr(tensor) + (f" + ({' + '.join(terms)})" if terms else "")
        return [f"{ind}{gtype} {g}({ptr});"], g

    # -- statements --------------------------------------------------------------------------
    def write(self) -> str:
        args, names = params(self.f)
        for a, n in zip(args, names):
            self.used.add(n)
            self.names[a] = n
        body = []
        ops = list(self.f.body)
        one_lane = any(op.is_a(*INITIALIZE_PIPE) and op.lanes == 1 for op in ops)
        aiv = self.f.kind is FunctionKind.AIV
        guard = one_lane and aiv
        ind = "        " if guard else "    "
        if lane1_replays(self.f):
            self.data_lane = self.fresh("data_lane")
            body += ["    // TILE_NO_SPLIT with two lanes: AIV1 takes part in every handshake but loads,",
                     "    // computes and stores nothing (the simulator's lane-1 replay on empty valid shapes)",
                     f"    const bool {self.data_lane} = get_subblockid() == 0;"]
        for op in ops:
            body += self.op(op, ind)
        head = "AICORE inline void" if self.called else 'extern "C" __global__ AICORE void'
        lines = [f"// {self.f.kind.value.upper()} kernel {self.name!r}",
                 f"{head} {T.ident(self.name)}("
                 + ", ".join(T.param_decl(n, a.type) for a, n in zip(args, names)) + ")", "{"]
        lines += self.alias_lines + self.decls
        if guard:
            lines += ["    // lanes = 1 (A5 no-split pipe): AIV0 is the only peer, AIV1 runs nothing",
                      "    if (get_subblockid() == 0) {"] + body + ["    }"]
        else:
            lines += body
        return "\n".join(lines + ["}", ""])

    def block(self, blk, ind) -> list:
        out = []
        for op in blk:
            out += self.op(op, ind)
        return out

    def op(self, op, ind) -> list:
        """The C++ lines of ``op``, each statement ending with its DSL line (a loop / branch
        marks its own header lines; its body's ops mark theirs)."""
        lines = self.statement(op, ind)
        return lines if op.__class__ in (ForOp, IfOp) else mark(lines, op.loc)

    def statement(self, op, ind) -> list:
        n, cls = op.name, op.__class__
        if cls is YieldOp:
            return []                               # written by the loop / branch (yields)
        if cls in (ConstOp, BufferAttrOp, GetSubblockIdOp) or n in ARITH_BINARY or n in ARITH_UNARY:
            r = op.results[0]
            if r.name is None or isinstance(r.type, TileValueType):
                return []                           # inlined where used
            e = self.expr(r)
            name = self.names[r] = self.fresh(r.name)
            return [f"{ind}const {T.scalar_ctype(r.type)} {name} = {e};"]
        if cls is CopyOp:
            src = op.source
            if src in self.names:
                self.names[op.out] = self.names[src]
            return []
        if cls in RING_BUFFERS:
            base, size = op.base, op.size
            if not isinstance(base, int) or not isinstance(size, int):
                raise err(f"{n} {op.buffer_name!r} has no resolved base/size", op,
                          "compile the program (allocate-memory, resolve-peers)")
            self.buffers[op.buf] = (base, size)
            where = op.memory_space if cls is ReserveBufferOp else f"peer {op.peer_func}"
            return [f"{ind}// {op.call_name} {op.buffer_name!r}: {where} [{base:#x}, {base + size:#x})"]
        if cls in INITIALIZE_PIPE:
            return self.init(op, ind)
        if cls in CROSS_CORE_OPS:
            return self.cross(op, ind)
        if cls is ForOp:
            return self.loop(op, ind)
        if cls is IfOp:
            return self.branch(op, ind)
        if cls is ReturnOp:
            if op.operands:
                raise err("a kernel returns no values", op)
            return [f"{ind}return;"]
        if cls in (RecordEvent, WaitEvent):
            fn = "set_flag" if cls is RecordEvent else "wait_flag"
            e = self.expr(op.event_id)
            ev_s = f"EVENT_ID{e}" if e.isdigit() else f"static_cast<event_t>({e})"
            return [f"{ind}{fn}({op.src.value}, {op.dst.value}, {ev_s});"]
        if cls is Barrier:
            return [f"{ind}pipe_barrier({op.pipe.value});"]
        return self.tile_op(op, ind)

    def init(self, op, ind) -> list:
        for k, v in (("flag_id", op.flag_id), ("slot_num", op.slot_num),
                     ("slot_size", op.slot_size), ("ring", op.ring)):
            if v is None:
                raise err(f"{op.name} has no {k} attribute", op,
                          "compile the program (allocate-flags and lower-platform set it)")
        nosplit = bool(self.splits) and self.splits == {TileSplitAxis.TILE_NO_SPLIT}
        targs = [str(op.flag_id), T.direction_name(op.dir_mask, self.gm_directions),
                 str(op.slot_size), str(op.slot_num), str(local_slot_num(op.attributes, op.slot_num)),
                 "true" if nosplit else "false"]
        ptype, pipe_var = self.fresh("Pipe"), self.fresh("pipe")
        for ring in op.rings:               # one TPipe per init; a kernel may have several
            self.pipes[ring] = (ptype, pipe_var)
        gm = op.gm_slot_buffer
        gm_s = f"(__gm__ void *){self.gm_ptr(gm)}" if op.ring == "gm" and gm is not None \
            else "(__gm__ void *)nullptr"
        if op.ring == "gm" and gm is not None and op.gm_offset:     # a ring further into the buffer
            gm_s = f"(__gm__ void *)((__gm__ uint8_t *){self.gm_ptr(gm)} + {op.gm_offset})"
        ring = "GM slot buffer" if op.ring == "gm" else "consumer-local rings"
        flags = "".join(f", {w} flags {tuple(fl)}" for w, fl in (("c2v", op.c2v_flags),
                                                                  ("v2c", op.v2c_flags)) if fl)
        return [f"{ind}// {op.call_name}: {ring}{flags}",
                f"{ind}using {ptype} = TPipe<{', '.join(targs)}>;",
                f"{ind}{ptype} {pipe_var}({gm_s}, {self.expr(op.c2v_consumer_buf)}, "
                f"{self.expr(op.v2c_consumer_buf)});"]

    def cross(self, op, ind) -> list:
        got = self.pipes.get(ring_of(op))
        if got is None:
            raise err(f"{op.dsl} before the initialisation of its pipe ({ring_of(op).label}) in "
                      f"{self.name}", op)
        ptype, pvar = got
        name = op.dsl
        split = op.split
        if split is None and op.is_a(TFree):
            splits = self.pops.get(ring_of(op), set())
            if len(splits) != 1:
                raise err(f"TFREE without a split in {self.name}, whose TPOPs of "
                          f"{Direction(op.direction).name} use {len(splits)} different splits", op,
                          "give the TFREE the split of its TPOP")
            split = next(iter(splits))
        if split is None:
            raise err(f"{name} in {self.name} has no split", op, "give it split=pl.TILE_...")
        sp = T.split_name(split)
        if op.is_a(TFree):
            obj = op.obj if len(op.operands) > 1 else None
            if obj is not None and isinstance(obj.type, TensorType):
                return [f"{ind}TFREE<{ptype}, {self.ttype(obj.type)}, {sp}>({pvar}, {self.names[obj]});"]
            return [f"{ind}TFREE<{ptype}, {sp}>({pvar});"]
        if op.is_a(TPush):
            v = op.tile
            return [f"{ind}TPUSH<{ptype}, {self.vtype(v)}, {sp}>({pvar}, {self.names[v]});"]
        r = op.results[0]
        if isinstance(r.type, TileValueType):     # TPOP of a tile: bound to its slot by TPOP
            tname = self.handle(r, "popped")
            return [f"{ind}TPOP<{ptype}, {self.ttype(r.type)}, {sp}>({pvar}, {tname});"]
        gt = self.ttype(r.type)                   # a GM slot (TALLOC / TPOP of a tensor)
        var = self.names[r] = self.fresh(r.name or "slot")
        return [f"{ind}{gt} {var};", f"{ind}{name}<{ptype}, {gt}, {sp}>({pvar}, {var});"]

    def tile_op(self, op, ind) -> list:
        if self.data_lane is None:
            return self.data_op(op, ind)
        lines = self.data_op(op, ind + "    ")
        return [f"{ind}if ({self.data_lane}) {{"] + lines + [f"{ind}}}"]

    def data_op(self, op, ind) -> list:
        n = op.name
        spec = CALL_OPS.get(n)
        if spec is None or not n.startswith("pl."):
            raise err(f"{n} has no pto-isa C++ form in the C++ writer", op)
        g = operand_groups(spec, op.operands)
        if op.is_a(StoreOp):
            tile, tensor = op.tile, op.tensor
            _nd_window(op)
            lines, gm = self.window(tensor, g["offsets"], gm_window(op), op, ind, tile)
            if op.attributes.get("atomic", 0):      # pto-isa's TSTORE<TileData, GlobalData, AtomicType>
                head = f"TSTORE<{self.vtype(tile)}, decltype({gm}), AtomicType::{AtomicType(op.attributes['atomic']).name}>"
            else:
                head = "TSTORE"
            return lines + [f"{ind}{head}({gm}, {self.names[tile]});"]
        if op.is_a(CreateOp):           # storage only: the first matmul_acc step overwrites it
            dst, pre = self.define(op.results[0], op, ind)
            return pre + [f"{ind}// {dst}: an Acc accumulator no instruction has written (pl.create)"]
        d = BY_DSL.get(n[3:])
        if d is None or not op.results:
            raise err(f"{n} has no pto-isa C++ form in the C++ writer", op)
        r = op.results[0]
        dst, pre = self.define(r, op, ind)
        if op.is_a(LoadOp):
            _nd_window(op)
            lines, gm = self.window(op.tensor, op.offsets, op.shape, op, ind, r)
            return pre + lines + [f"{ind}TLOAD({dst}, {gm});"]
        args, tiles = [], [r]
        for p in spec.operands:
            v = g[p.name]
            if isinstance(v, list):
                raise err(f"{n}: list operand {p.name!r} has no C++ form", op)
            if isinstance(v.type, TileValueType):
                tiles.append(v)
                args.append(self.names[v])
            else:
                args.append(self.expr(v))
        if d.form in ROW_MAJOR_FORMS and all(v.type.is_column for v in tiles):
            pre += [f"{ind}TRESHAPE({self.row_view(v)}, {self.names[v]});" for v in tiles]
            dst = self.views[dst]
            args = [self.views.get(a, a) for a in args]
        if op.is_a(CastOp):
            args.append("RoundMode::CAST_RINT")
        args += [CPP_ATTR_SPELLING[k](op.attributes[k]) for k in ISA_ATTRS.get(n[3:], ())
                 if k not in CPP_TEMPLATE_ATTRS]
        if d.scratch:
            k = scratch_index(n[3:], [v.type for v in op.operands])
            args.insert(k, self.scratch_tile(op, r, next(iter(g.values()))))
        targs = CPP_TEMPLATE_ARGS.get(d.name)
        head = d.name if targs is None else \
            f"{d.name}<{targs(self.ttype(r.type), T.ctype(r.type.dtype), op.attributes)}>"
        return pre + [f"{ind}{head}({', '.join([dst] + args)});"]

    def row_view(self, v) -> str:
        """The ND [1, R] row view variable of DN column tile ``v`` (declared once)."""
        name = self.names[v]
        view = self.views.get(name)
        if view is None:
            view = self.views[name] = self.fresh(name + "_row")
            t = v.type
            self.decls.append(f"    {self.alias(T.tile_type(t.row_view()), f'Row_1x{t.shape[0]}_{t.dtype}')} {view};")
        return view

    def scratch_tile(self, op, r, src) -> str:
        """The scratch tile the allocator placed for ``op`` (pto-isa's ``tmp`` operand)."""
        if op not in self.lay.scratch:
            raise err(f"{op.name}: the allocator gave its scratch tile no address", op,
                      "compile the program with allocate-memory in the pipeline")
        mem, addr = self.lay.scratch[op]
        name = self.fresh(f"{r.name or 'reduce'}_tmp")
        t = scratch_type(op.name[3:], src.type)
        self.decls += [f"    {self.ttype(t)} {name};"] + mark([f"    TASSIGN({name}, {addr:#x});  // {mem}"], op.loc)
        return name

    # -- control flow ------------------------------------------------------------------------
    def carried(self, v, init: str | None, ind, hint) -> list:
        """Declare the variable of a loop-carried / branch value ``v``; lines before the op."""
        if isinstance(v.type, TileValueType):
            name = self.handle(v, hint)
            return [f"{ind}{name} = {init};"] if init is not None else []
        if isinstance(v.type, ScalarType):
            name = self.names[v] = self.fresh(v.name or hint)
            return [f"{ind}{T.scalar_ctype(v.type)} {name}" + (f" = {init};" if init else "{};")]
        raise CompileError(f"a loop-carried / branch {v.type} value has no C++ form in {self.name}")

    def value(self, v) -> str:
        return self.names[v] if isinstance(v.type, (TileValueType, TensorType)) else self.expr(v)

    def yields(self, blk, targets, ind) -> list:
        term = list(blk)[-1] if len(list(blk)) else None
        if term is None or not term.is_a(YieldOp) or len(term.operands) != len(targets):
            return []
        return mark(self.assign_yields(term, targets, ind), term.loc)

    def assign_yields(self, term, targets, ind) -> list:
        srcs = [self.value(v) for v in term.operands]
        pairs = [(t, s) for t, s in zip(targets, srcs) if t != s]
        if any(s in targets for _t, s in pairs):  # a swap: read every value first
            tmps = [self.fresh(t + "_next") for t, _s in pairs]
            return ([f"{ind}auto {m} = {s};" for m, (_t, s) in zip(tmps, pairs)]
                    + [f"{ind}{t} = {m};" for m, (t, _s) in zip(tmps, pairs)])
        return [f"{ind}{t} = {s};" for t, s in pairs]

    def loop(self, op, ind) -> list:
        start, stop, step, inits = op.start, op.stop, op.step, op.inits
        blk = op.body
        iv, *iters = blk.args
        out = []
        for a, init in zip(iters, inits):
            out += mark(self.carried(a, self.value(init), ind, "carried"), op.loc)
        for r, a in zip(op.results, iters):
            self.names[r] = self.names[a]
        ivn = self.names[iv] = self.fresh(iv.name or "i")
        st = self.expr(step)
        cond = f"{ivn} < {self.expr(stop)}"
        if not st.lstrip("-").isdigit():
            cond = f"({st} > 0 ? {ivn} < {self.expr(stop)} : {ivn} > {self.expr(stop)})"
        elif int(st) <= 0:
            raise err(f"a loop with step {st}: only positive constant steps have a C++ for", op)
        out += mark([f"{ind}for (int64_t {ivn} = {self.expr(start)}; {cond}; {ivn} += {st}) {{"], op.loc)
        out += self.block(blk, ind + "    ")
        out += self.yields(blk, [self.names[a] for a in iters], ind + "    ")
        return out + [f"{ind}}}"]

    def branch(self, op, ind) -> list:
        out = []
        for r in op.results:
            out += mark(self.carried(r, None, ind, "result"), op.loc)
        targets = [self.names[r] for r in op.results]
        out += mark([f"{ind}if ({self.expr(op.cond)}) {{"], op.loc)
        then, els = op.then_block, op.else_block
        out += self.block(then, ind + "    ") + self.yields(then, targets, ind + "    ")
        body = self.block(els, ind + "    ") + self.yields(els, targets, ind + "    ")
        if body:
            out += [f"{ind}}} else {{"] + body
        return out + [f"{ind}}}"]


def _nd_window(op) -> None:
    """A load / store of a ``.pto`` DN / NZ view (``gm_layout_of``): the value IR keeps no
    strides, so the C++ writer would write its GlobalTensor row-major - refused at the op."""
    lay = gm_layout_of(op)
    if lay is not None:
        raise err(f"{op.name} of a {lay.name} GM window: the value IR keeps a tensor's shape, not its strides, so "
                  "the C++ writer cannot write its GlobalTensor", op,
                  "let ptoas write the C++ of the .pto file (ptoas --pto-arch=a3|a5 FILE.pto -o FILE.cpp)")
