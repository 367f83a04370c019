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
"""
from __future__ import annotations

from ..errors import CompileError
from ..arch.vocab import TileSplitAxis
from ..ir.nodes import AUTO, FunctionKind
from ..ir.ops import C2V, V2C
from ..ir.types import BufferType, NoneType, ScalarType, TensorType, TileValueType
from .pto_syntax import (ADDRESS_SPACE_OF_MEM, ARCH_OF_PLATFORM, ARITH, CMP, FLOATS, INT_DTYPES,
                         KIND_NAMES, LOGIC, MLIR_DTYPE, PTO_OP, ptr_type, tile_buf)

_IND = "  "
_INIT = ("pl.aic_initialize_pipe", "pl.aiv_initialize_pipe")
_DPS_SKIP = ("pl.load", "pl.store", "pl.tpop", "pl.talloc")


def _err(msg: str, op, fix: str | None = None) -> CompileError:
    return CompileError(msg, where=str(op.loc) if op.loc else None, fix=fix)


def type_str(t) -> str:
    """A value's type as PTO-AS spells it."""
    if isinstance(t, TileValueType):
        return tile_buf(t)
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
    return repr(v) if isinstance(v, float) else str(v)


class _Func:
    """Naming state of one function: SSA names made unique, tensor views, constants."""

    def __init__(self):
        self.names, self.used, self.n = {}, set(), 0
        self.views, self.cints = {}, {}

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

    def __getitem__(self, v) -> str:
        return self.names[v]


class _Writer:
    def __init__(self):
        self.out = []

    def line(self, ind: str, text: str) -> None:
        self.out.append(ind + text)

    # -- module / functions ------------------------------------------------------------------
    def program(self, prog, platform) -> str:
        self.nosplit = nosplit_functions(prog)
        plat = platform or prog.attributes.get("platform")
        attrs = f' attributes {{pto.target_arch = "{ARCH_OF_PLATFORM[plat]}"}}' if plat else ""
        self.line("", f"module @{prog.attributes['sym_name']}{attrs} {{")
        for f in prog.regions[0].blocks[0]:
            self.func(f)
        self.line("", "}")
        return "\n".join(self.out) + "\n"

    def func(self, f) -> None:
        kind = f.attributes["kind"]
        st = _Func()
        block = f.regions[0].blocks[0]
        params = ", ".join(f"{st.bind(a)}: {_param_type(a.type)}" for a in block.args)
        if kind is FunctionKind.Group:
            attrs, vis = "pto.entry", ""
        elif kind in KIND_NAMES:
            attrs, vis = f"pto.kernel_kind = #pto.kernel_kind<{KIND_NAMES[kind]}>", "private "
        else:
            raise _err(f"function {f.attributes['sym_name']!r} is a {kind.value} function; "
                       "PTO-AS has cube and vector kernels and their entry", f,
                       "compile the program first (ptopipe compile), which splits mixed functions")
        split = f.attributes.get("split")
        if split is not None and not (split is TileSplitAxis.TILE_NO_SPLIT and kind is FunctionKind.AIV):
            attrs += f", ptopipe.split = {int(split)}"
        self.line(_IND, f"func.func {vis}@{f.attributes['sym_name']}({params}) attributes {{{attrs}}} {{")
        ind = _IND * 2
        if kind is not FunctionKind.Group:
            self.views(f, block, st, ind)
        self.block(block, st, ind)
        self.line(ind, "return")
        self.line(_IND, "}")

    def views(self, f, block, st: _Func, ind: str) -> None:
        """Index constants for shapes / strides / partition sizes, then one tensor view per
        GM tensor parameter."""
        need = set()
        for a in block.args:
            if isinstance(a.type, TensorType):
                need.update(a.type.shape)
                need.update(self._strides(a.type.shape))
        for op in f.walk():
            if op.name == "pl.load":
                need.update(op.attributes["shape"])
            elif op.name == "pl.store":
                need.update(op.operands[0].type.shape)
        for n in sorted(need):
            st.cints[n] = st.fresh(f"c{n}")
            self.line(ind, f"{st.cints[n]} = arith.constant {n} : index")
        for a in block.args:
            if isinstance(a.type, TensorType):
                v = st.views[a] = st.fresh(f"{a.name or 'arg'}_view")
                shape = ", ".join(st.cints[s] for s in a.type.shape)
                strides = ", ".join(st.cints[s] for s in self._strides(a.type.shape))
                self.line(ind, f"{v} = pto.make_tensor_view {st[a]}, shape = [{shape}], "
                               f"strides = [{strides}] : {type_str(a.type)}")

    @staticmethod
    def _strides(shape) -> list:
        out, s = [], 1
        for d in reversed(shape):
            out.append(s)
            s *= d
        return out[::-1]

    def block(self, block, st: _Func, ind: str) -> None:
        for op in block:
            self.op(op, st, ind)

    # -- ops ---------------------------------------------------------------------------------
    def _skip_const(self, op) -> bool:
        """A constant the reader re-creates: a null pointer / TFREE object, or a pipe
        init's consumer-buffer argument (written as the buffer itself or ``0 : i32``)."""
        r = op.results[0]
        return bool(r.uses) and all(
            (u.owner.name in _INIT and u.index > 0)
            or (isinstance(r.type, NoneType) and u.owner.name in ("pl.tfree",) + _INIT)
            for u in r.uses)

    def op(self, op, st: _Func, ind: str) -> None:
        n = op.name
        if n == "pl.const":
            if self._skip_const(op):
                return
            r = op.results[0]
            if isinstance(r.type, NoneType):
                raise _err("a None constant used other than as a TFREE object or a null "
                           "GM pointer has no PTO-AS spelling", op)
            v = op.attributes["value"]
            self.line(ind, f"{st.bind(r)} = arith.constant {_lit(v, r.type)} : {type_str(r.type)}")
        elif n.startswith("arith."):
            self.arith(op, st, ind)
        elif n == "pl.for":
            self.for_(op, st, ind)
        elif n == "pl.if":
            self.if_(op, st, ind)
        elif n == "pl.yield":
            if op.operands:
                self.line(ind, f"scf.yield {', '.join(st[v] for v in op.operands)} : "
                               f"{', '.join(type_str(v.type) for v in op.operands)}")
        elif n == "pl.call":
            args = ", ".join(st[v] for v in op.operands)
            tys = ", ".join(_param_type(v.type) for v in op.operands)
            self.line(ind, f"func.call @{op.attributes['callee']}({args}) : ({tys}) -> ()")
        elif n == "pl.reserve_buffer":
            a = op.attributes
            loc = ADDRESS_SPACE_OF_MEM[a["memory_space"]]
            place = "auto = true" if a["base"] is AUTO else f"auto = false, base = {a['base']}"
            self.line(ind, f'{st.bind(op.results[0])} = pto.reserve_buffer {{name = "{a["name"]}", '
                           f"size = {a['size']}, location = #pto.address_space<{loc}>, {place}}} -> i32")
        elif n == "pl.import_peer_buffer":
            a = op.attributes
            self.line(ind, f'{st.bind(op.results[0])} = pto.import_reserved_buffer {{name = "{a["name"]}", '
                           f"peer_func = @{a['peer_func']}}} -> i32")
        elif n in _INIT:
            self.init(op, st, ind)
        elif n in ("pl.tpush", "pl.tpop", "pl.tfree", "pl.talloc"):
            self.cross(op, st, ind)
        elif n in ("pl.record_event", "pl.wait_event"):
            a = op.attributes
            e = op.operands[0]
            self.line(ind, f"pto.{n[3:]}({st[e]} : {type_str(e.type)}) {{src = #pto.pipe<{a['src'].value}>, "
                           f"dst = #pto.pipe<{a['dst'].value}>}}")
        elif n == "pl.barrier":
            self.line(ind, f"pto.barrier {{pipe = #pto.pipe<{op.attributes['pipe'].value}>}}")
        elif n == "pl.get_subblockid":          # ptoas: an i64, cast to index
            raw = st.fresh(f"{op.results[0].name or 'sub'}_i64")
            self.line(ind, f"{raw} = pto.get_subblock_idx")
            self.line(ind, f"{st.bind(op.results[0])} = arith.index_cast {raw} : i64 to index")
        elif n == "pl.copy":
            x = op.operands[0]
            self.line(ind, f"{st.bind(op.results[0])} = ptopipe.copy {st[x]} : {type_str(x.type)}")
        elif n in ("pl.load", "pl.store"):
            self.load_store(op, st, ind)
        elif n[3:] in PTO_OP:
            self.tile_op(op, st, ind)
        else:
            raise _err(f"{n} has no PTO-AS spelling in ptopipe's writer", op,
                       "see docs/pto.md for the subset ptopipe writes")

    def arith(self, op, st: _Func, ind: str) -> None:
        k = op.name[6:]
        xs = op.operands
        t = xs[0].type
        fl = t.dtype in FLOATS
        args = ", ".join(st[v] for v in xs)
        res = st.bind(op.results[0])
        if k in CMP:
            pred = CMP[k][1 if fl else 0]
            self.line(ind, f"{res} = arith.{'cmpf' if fl else 'cmpi'} {pred}, {args} : {type_str(t)}")
            return
        if k in LOGIC:
            name = LOGIC[k]
        else:
            name = ARITH[k][1 if fl else 0] or ARITH[k][0] or ARITH[k][1]
        self.line(ind, f"{res} = {name} {args} : {type_str(op.results[0].type)}")

    def init(self, op, st: _Func, ind: str) -> None:
        a = op.attributes
        f = op
        while f.name != "pl.func":
            f = f.parent_op
        bufs = {}
        for o in f.regions[0].blocks[0]:
            if o.name in ("pl.reserve_buffer", "pl.import_peer_buffer"):
                bufs[o.attributes["name"]] = o.results[0]
        parts = []
        gm = op.operands[0]
        if isinstance(gm.type, TensorType):
            parts.append(f"gm_slot_buffer = {st[gm]} : {_param_type(gm.type)}")
        for i, way in ((1, "c2v"), (2, "v2c")):
            v = op.operands[i]
            d = getattr(v, "op", None)
            buf = None
            if d is not None and d.name == "pl.buffer_attr":
                buf = d.operands[0]
            elif a.get(f"{way}_ring") in bufs:
                buf = bufs[a[f"{way}_ring"]]
            if buf is not None:
                parts.append(f"{way}_consumer_buf = {st[buf]} : i32")
            elif d is not None and d.name == "pl.const" and d.attributes["value"] in (0, None):
                z = st.fresh("c0_i32")
                self.line(ind, f"{z} = arith.constant 0 : i32")
                parts.append(f"{way}_consumer_buf = {z} : i32")
            else:
                raise _err(f"the {way.upper()} consumer buffer of this pipe init is neither a "
                           "reserve / import buffer nor 0", op)
        attrs = f"dir_mask = {int(a['dir_mask'])}, slot_size = {a['slot_size']}"
        if a.get("slot_num") is not None:
            attrs += f", slot_num = {a['slot_num']}"
        if a.get("local_slot_num") is not None:
            attrs += f", local_slot_num = {a['local_slot_num']}"
        if a.get("flag_id") is not None:
            attrs += f", id = {a['flag_id']}"
        if f.attributes["sym_name"] in self.nosplit:
            attrs += ", nosplit = true"
        if a.get("lanes") is not None:
            attrs += f", ptopipe.lanes = {a['lanes']}"
        self.line(ind, f"pto.{op.name[3:]} {{{attrs}}} ({', '.join(parts)})")

    def cross(self, op, st: _Func, ind: str) -> None:
        a = op.attributes
        d = a["direction"]
        peer = {C2V: "aiv", V2C: "aic"}[d]      # producer side's peer
        me = {C2V: "aic", V2C: "aiv"}[d]        # consumer side's peer
        split = a.get("split")
        if split is None and op.name == "pl.tfree":
            split = self._pop_split(op, d)
        sattr = "" if split is None else f" {{split = {int(split)}}}"
        n = op.name
        if n == "pl.tpush":
            t = op.operands[0]
            self.line(ind, f"pto.tpush_to_{peer}({st[t]} : {type_str(t.type)}){sattr}")
        elif n == "pl.tfree":
            obj = op.operands[1]
            tile = "" if isinstance(obj.type, NoneType) else f"({st[obj]} : {type_str(obj.type)})"
            self.line(ind, f"pto.tfree_from_{me}{tile}{sattr}")
        else:
            r = op.results[0]
            what = "tpop_from_" + me if n == "pl.tpop" else "talloc_to_" + peer
            self.line(ind, f"{st.bind(r)} = pto.{what}{sattr} -> {type_str(r.type)}")

    @staticmethod
    def _pop_split(op, d):
        """The split of every TPOP of direction ``d`` in ``op``'s function, if they agree
        (a TFREE with no split frees with its TPOP's; ptoas wants it spelled)."""
        f = op
        while f.name != "pl.func":
            f = f.parent_op
        splits = {o.attributes["split"] for o in f.walk()
                  if o.name == "pl.tpop" and o.attributes["direction"] == d}
        return splits.pop() if len(splits) == 1 else None

    def _view_of(self, st: _Func, v) -> str:
        return st.views.get(v) or st[v]

    def load_store(self, op, st: _Func, ind: str) -> None:
        load = op.name == "pl.load"
        if load:
            ten, offs = op.operands[0], op.operands[1:]
            shape = op.attributes["shape"]
        else:
            tile, offs, ten = op.operands[0], op.operands[1:-1], op.operands[-1]
            shape = tile.type.shape
        pv = st.fresh("pv")
        ptype = f"!pto.partition_tensor_view<{'x'.join(map(str, shape))}x{MLIR_DTYPE[ten.type.dtype]}>"
        self.line(ind, f"{pv} = pto.partition_view {self._view_of(st, ten)}, offsets = "
                       f"[{', '.join(st[o] for o in offs)}], sizes = [{', '.join(st.cints[s] for s in shape)}]"
                       f" : {type_str(ten.type)} -> {ptype}")
        if load:
            r = op.results[0]
            res = st.bind(r)
            self.line(ind, f"{res} = pto.alloc_tile : {type_str(r.type)}")
            self.line(ind, f"pto.tload ins({pv} : {ptype}) outs({res} : {type_str(r.type)})")
        else:
            self.line(ind, f"pto.tstore ins({st[tile]} : {type_str(tile.type)}) outs({pv} : {ptype})")

    def tile_op(self, op, st: _Func, ind: str) -> None:
        ins = ", ".join(st[v] for v in op.operands)
        tys = ", ".join(type_str(v.type) for v in op.operands)
        r = op.results[0]
        res = st.bind(r)
        self.line(ind, f"{res} = pto.alloc_tile : {type_str(r.type)}")
        self.line(ind, f"{PTO_OP[op.name[3:]]} ins({ins} : {tys}) outs({res} : {type_str(r.type)})")

    # -- regions -----------------------------------------------------------------------------
    def _results(self, op, st: _Func) -> str:
        return ", ".join(st.bind(r) for r in op.results) + " = " if op.results else ""

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
        lb, ub, step, *inits = op.operands
        body = op.regions[0].blocks[0]
        iv, *iters = body.args
        lb, ub, step = (self._index(x, st, ind) for x in (lb, ub, step))
        head = f"scf.for {st.bind(iv)} = {lb} to {ub} step {step}"
        if iters:
            pairs = ", ".join(f"{st.bind(a)} = {st[x]}" for a, x in zip(iters, inits))
            head += f" iter_args({pairs}) -> ({', '.join(type_str(r.type) for r in op.results)})"
        self.line(ind, self._results(op, st) + head + " {")
        self.block(body, st, ind + _IND)
        self.line(ind, "}")

    def if_(self, op, st: _Func, ind: str) -> None:
        c = op.operands[0]
        rt = f" -> ({', '.join(type_str(r.type) for r in op.results)})" if op.results else ""
        then, els = (r.blocks[0] for r in op.regions)
        self.line(ind, f"{self._results(op, st)}scf.if {st[c]}{rt} {{")
        self.block(then, st, ind + _IND)
        if op.results or els.first is not els.last:
            self.line(ind, "} else {")
            self.block(els, st, ind + _IND)
        self.line(ind, "}")


def nosplit_functions(prog) -> set:
    """The AIV kernels marked ``split=TILE_NO_SPLIT`` (whole tiles on AIV0: a ``nosplit``
    pipe) and the Cube kernels whose pipes they share."""
    funcs = list(prog.regions[0].blocks[0])
    aiv = {f.attributes["sym_name"] for f in funcs if f.attributes["kind"] is FunctionKind.AIV
           and f.attributes.get("split") is TileSplitAxis.TILE_NO_SPLIT}
    out = set(aiv)
    for f in funcs:
        for o in f.regions[0].blocks[0]:
            if o.name == "pl.import_peer_buffer":
                if o.attributes["peer_func"] in aiv:
                    out.add(f.attributes["sym_name"])
                if f.attributes["sym_name"] in aiv:
                    out.add(o.attributes["peer_func"])
    return out


def write_pto(program, platform=None) -> str:
    """``program`` (a compiled ``pl.program`` op) as PTO-AS text; ``platform`` (a name)
    overrides the program's ``platform`` attribute for ``pto.target_arch``."""
    if getattr(platform, "name", None):
        platform = platform.name
    return _Writer().program(program, platform)
