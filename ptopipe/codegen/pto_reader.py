"""The ``.pto`` (PTO-AS) reader: text -> a ``pl.program`` op of ptopipe's op IR, verified.

Owns the module / function structure and the destination-passing -> value conversion.
``pto.alloc_tile`` (or ``declare_tile``) names a buffer; each op writing it
(``outs(%t)``, a DPS ``pto.tpop``) makes a new IR value that later reads of ``%t`` see,
in program order.  A buffer written inside an ``scf.for`` / ``scf.if`` and read after it,
or read in a loop body before the body writes it (a value carried through memory), is a
ParseError asking for ``iter_args`` / ``scf.yield``: the IR carries loop values
explicitly.  Tensor parameters (``!pto.ptr``) get their shape from their
``pto.make_tensor_view``; the entry's parameters from the kernels it calls.  Ops are in
:mod:`.pto_ops`; tokens and types in :mod:`.pto_lexer` / :mod:`.pto_parse`.  Every op gets
its ``.pto`` line:col as ``loc``, so the verifier, VerifyPipes and the runtime report
there.  Malformed text is a :class:`~ptopipe.errors.ParseError` at line:col.
"""
from __future__ import annotations

import os

from ..arch import get_platform
from ..protocol.geometry import ODD_SPLITS
from ..errors import CompileError, ParseError
from ..ir.core import Block, Operation, Region, gc_paused
from ..ir.vocab import FunctionKind, Loc
from ..ir.op_verifier import verify_ops
from ..ir.ops import C2V, V2C
from ..ir.types import INDEX, ScalarType, TensorType, itemsize
from ..ir.opdefs import (CallOp, ConstOp, FuncOp, GetSubblockIdOp, ImportPeerBufferOp, ProgramOp, ReserveBufferOp,
                         TFree, TPop)
from .pto_lexer import BOM, tokenize, without_locations
from .pto_tree import OP_ALIASES
from .pto_ops import Scope, emit, h_arith, h_call, h_constant, h_copy, h_index_cast, h_select, h_number_cast
from .pto_regions import h_for, h_if, h_yield
from .pto_pipe_handle import HANDLE_HANDLERS
from .pto_pipe_ops import PIPE_HANDLERS
from .pto_tile_ops import (generic_tile_op, h_alloc, h_barrier, h_event, h_flag, h_partition, h_set_validshape,
                           h_subblock, h_tload, h_tprint, h_treshape, h_tstore, h_view)
from .pto_parse import Cursor
from .pto_syntax import (ARITH_OF, INT_DTYPES, LOWERED_DIVISIONS, IR_OP_OF_PTO, KIND_OF, LOGIC, PLATFORM_OF_ARCH, SPLIT_OF,
                         SPMD_BLOCK_IDX, SPMD_PARAMS, SPMD_SUBBLOCK_IDX, ptr_type)

UNUSED_PTR_SHAPE = (1,)     # the placeholder shape of a pointer parameter nothing uses

#: PTO-AS op name -> its handler (the tile ops of the op table: ``generic_tile_op``)
HANDLERS = {
    "arith.constant": h_constant, "arith.select": h_select, "scf.for": h_for, "scf.if": h_if, "scf.yield": h_yield,
    "func.call": h_call, "ptopipe.copy": h_copy, "arith.index_cast": h_index_cast,
    "arith.trunci": h_number_cast, "arith.sitofp": h_number_cast, "arith.uitofp": h_number_cast,
    "arith.truncf": h_number_cast, "arith.extf": h_number_cast,
    "pto.make_tensor_view": h_view, "pto.partition_view": h_partition,
    "pto.alloc_tile": h_alloc, "pto.declare_tile": h_alloc,
    "pto.tload": h_tload, "pto.tstore": h_tstore, "pto.treshape": h_treshape, "pto.set_validshape": h_set_validshape,
    "pto.get_subblockid": h_subblock, "pto.get_subblock_idx": h_subblock,
    "pto.record_event": h_event, "pto.wait_event": h_event, "pto.barrier": h_barrier, "pto.barrier_sync": h_barrier, "pto.tprint": h_tprint,
    "pto.set_flag": h_flag, "pto.wait_flag": h_flag, "pto.set_flag_dyn": h_flag, "pto.wait_flag_dyn": h_flag,
    **PIPE_HANDLERS, **HANDLE_HANDLERS,
    **{n: h_arith for n in list(ARITH_OF) + list(LOGIC.values()) + ["arith.cmpi", "arith.cmpf", *LOWERED_DIVISIONS]},
}


#: ops that run (``ptopipe run`` / ``check``: :mod:`.pto_exec`) but that the value IR cannot
#: express: what the IR lacks for each.  The static verifier says so at the op (a file with
#: pipes is then "not verified", never passed)
UNEXPRESSED = {
    "pto.subview": "tile views (a window aliasing another tile's storage, with its own valid shape)",
    "pto.subset": "tile views (a window aliasing another tile's storage)",
    "pto.alloc_multi_tile": "multi-slot tile regions (one buffer whose slots a loop selects)",
    "pto.multi_tile_get": "multi-slot tile regions (one buffer whose slots a loop selects)",
    "pto.syncall": "all-core barriers (SYNCALL orders every core's accesses; VerifyPipes proves rings only)",
    "pto.mgather": "indexed GM reads (MGATHER reads the table rows / elements an index tile's values pick)",
    "pto.mscatter": "indexed GM writes (MSCATTER writes the table rows / elements an index tile's values pick)",
}


def h_unexpressed(r, fs, opt, results, loc):
    raise r.c.error(f"{opt.text}: the static verifier's value IR has no {UNEXPRESSED[opt.text]}", opt,
                    "`ptopipe run` / `ptopipe check` run the file with buffer semantics and every checker")


HANDLERS.update({n: h_unexpressed for n in UNEXPRESSED})


class FuncState:
    """What the reader knows inside one function."""

    def __init__(self, name, kind, op, block, tok):
        self.name, self.kind, self.op, self.block, self.tok = name, kind, op, block, tok
        self.scopes = [Scope(block)]
        self.defined = {}              # visible name -> token of its definition (Scope.defined)
        self.untyped = {}              # ptr parameter -> its token
        self.made_consts = []          # pl.const ops made from arith.constant
        self.const_values = {}         # Value -> python value
        self.init = None               # the function's pipe init op
        self.nosplit = None            # the init's token when it says nosplit = true
        self.split_kind = None         # the first frontend push / pop: (op, split, line)
        self.rings = {}                # Ring -> buffer Value (reserve / import), or None
        self.explicit_addrs = []       # (addr, nbytes, space, token) of alloc_tile addr = ...


def canonical_tfree_splits(f) -> None:
    """A TFREE whose split equals the split of every TPOP of its direction in the function
    frees with its TPOP's split: the IR's ``split = None`` (what InsertTfree makes and the
    writer spells out).  A TFREE whose split differs from them keeps it (VerifyPipes reports it)."""
    ops = list(f.walk())
    for d in (C2V, V2C):
        splits = {o.split for o in ops if o.is_a(TPop) and o.direction == d}
        if len(splits) != 1:
            continue
        s = splits.pop()
        for o in ops:
            if o.is_a(TFree) and o.direction == d and o.split == s:
                o.split = None


def unique_names(f) -> None:
    """Value names unique in the function, as the op IR keeps them (a tree ``Var`` per name):
    the values one buffer holds in turn are named after it, so the second and later take
    ``name_1``, ``name_2`` ... in program order."""
    used, dups = set(), []
    for op in f.walk():
        vals = list(op.results) + [a for r in op.regions for b in r.blocks for a in b.args]
        for v in vals:
            if v.name is None:
                continue
            if v.name in used:
                dups.append(v)
            used.add(v.name)
    for v in dups:
        k = 1
        while f"{v.name}_{k}" in used:
            k += 1
        v.name = f"{v.name}_{k}"
        used.add(v.name)


class Reader:
    def __init__(self, text: str, filename: str, platform=None):
        self.c = Cursor(tokenize(text.removeprefix(BOM), filename), filename)
        self.file = filename
        self.platform = platform
        self.funcs = {}                # name -> FuncState
        self.gm_sized = set()          # pointer parameters sized from their kernel's pipe init
        self.order = []

    def loc(self, t) -> Loc:
        return Loc(self.file, t.line, t.col)

    # -- module ------------------------------------------------------------------------------
    def module(self):
        c = self.c
        name = os.path.splitext(os.path.basename(self.file))[0] or "program"
        wrapped = c.accept("module")
        if wrapped:
            if c.peek().kind == "symbol":
                name = c.next().text[1:]
            if c.accept("attributes"):
                attrs = c.attr_dict()
                if "pto.target_arch" in attrs:
                    v, t = attrs["pto.target_arch"]
                    if not isinstance(v, str) or v not in PLATFORM_OF_ARCH:
                        raise c.error(f"unknown pto.target_arch {v!r}", t, 'use "a3" or "a5"')
                    self.platform = self.platform or PLATFORM_OF_ARCH[v]
            open_tok = c.expect("{", "opening the module")
        c.platform = self.platform
        spans = []
        while not (c.at("}") if wrapped else c.peek().kind == "eof"):
            t = c.peek()
            if t.kind == "eof":
                raise c.error("the module's '{' is never closed (truncated file?)", open_tok,
                              "close the module with '}'")
            if t.text != "func.func":
                raise c.error(f"expected func.func at module level, got {t.text!r}", t)
            spans.append(self.skip_func())
        if wrapped:
            c.next()
        if c.peek().kind != "eof":
            raise c.error(f"unexpected {c.peek().text!r} after the module")
        if not spans:
            raise c.error("no func.func in the module", fix="define cube / vector kernels and their entry")
        heads = []
        for start in spans:
            c.i = start
            heads.append(self.header())
        for grp in (False, True):        # kernels first: the entry's parameter types come from them
            for start, h in zip(spans, heads):
                if (h[1] is FunctionKind.Group) == grp:
                    c.i = start
                    self.function(self.header())
        self.finish()
        attrs = {"sym_name": name}
        if self.platform:
            attrs["platform"] = get_platform(self.platform).name
        region = Region([Block()])
        prog = Operation(ProgramOp.name, (), (), attrs, [region], Loc(self.file, 1, 1))
        for h in heads:
            region.blocks[0].append(self.funcs[h[0]].op)
        return prog

    def skip_func(self) -> int:
        c = self.c
        start = c.i
        parens = 0
        while True:                             # the header: '{' in it are attribute dicts
            t = c.peek()
            if t.kind == "eof":
                raise c.error("truncated func.func header", c.toks[start])
            if t.text == "{":
                if parens == 0 and c.peek(-1).text != "attributes":
                    break
                c.attr_dict()
                continue
            parens += (t.text == "(") - (t.text == ")")
            c.next()
        opens = [c.next()]
        while opens:
            t = c.next()
            if t.kind == "eof" or (t.text == "func.func" and t.kind == "word"):
                where = "the end of the file (truncated?)" if t.kind == "eof" else \
                    f"the next func.func at line {t.line}"
                raise c.error(f"unbalanced braces: this '{{' is never closed before {where}",
                              opens[-1], "close every region and function with '}'")
            if t.text == "{":
                opens.append(t)
            elif t.text == "}":
                opens.pop()
        return start

    # -- functions ---------------------------------------------------------------------------
    def header(self):
        c = self.c
        ft = c.expect("func.func")
        c.accept("private")
        name_t = c.kind("symbol", "the function's @name")
        name = name_t.text[1:]
        c.expect("(", "opening the parameter list")
        params = []
        while not c.accept(")"):
            pt = c.kind("value", "a parameter %name")
            c.expect(":", f"after {pt.text}")
            ty = c.type_()
            if c.at("{"):
                c.attr_dict()
            params.append((pt, ty))
            if not c.at(")"):
                c.expect(",", "between parameters")
        if c.accept("->"):
            c.expect("(")
            c.expect(")", "(kernels return nothing)")
        attrs = c.attr_dict() if c.accept("attributes") else {}
        kind = None
        if "pto.entry" in attrs:
            kind = FunctionKind.Group
        elif "pto.kernel_kind" in attrs:
            v, t = c.enum_attr(attrs, "pto.kernel_kind", "#pto.kernel_kind")
            kind = KIND_OF.get(v)
            if kind is None:
                raise c.error(f"unknown kernel kind {v!r}", t, "use #pto.kernel_kind<cube> or <vector>")
        if kind is None:
            raise c.error(f"func.func @{name} has no pto.kernel_kind (and is not the pto.entry)", name_t,
                          "add attributes {pto.kernel_kind = #pto.kernel_kind<cube>} or <vector>")
        split = attrs.get("ptopipe.split", (None,))[0]
        if split is not None and (isinstance(split, bool) or not isinstance(split, int) or split not in SPLIT_OF
                                  or SPLIT_OF[split] in ODD_SPLITS):
            # a function's split is how the DSL compiler halved its tiles: no odd split
            raise c.error(f"bad split value {split!r}: 0, 1 or 2", attrs["ptopipe.split"][1])
        return name, kind, params, ft, name_t, split

    def function(self, h) -> None:
        name, kind, params, ft, name_t, split = h
        c = self.c
        if name in self.funcs:
            raise c.error(f"function @{name} defined twice", name_t)
        types = []
        for pt, ty in params:
            if ty.kind == "ptr":
                types.append(TensorType((), ty.dtype))
            elif ty.kind == "scalar":
                types.append(ScalarType(ty.dtype))
            else:
                raise c.error(f"parameter {pt.text}: a kernel takes !pto.ptr<...> tensors and scalars", pt)
        block = Block(types, [pt.text[1:] for pt, _ in params])
        attrs = {"sym_name": name, "kind": kind}
        if split is not None:
            attrs["split"] = SPLIT_OF[split]
        op = Operation(FuncOp.name, (), (), attrs, [Region([block])], self.loc(ft))
        fs = FuncState(name, kind, op, block, name_t)
        for (pt, ty), a in zip(params, block.args):
            if pt.text in fs.defined:
                raise c.error(f"{pt.text} defined twice", pt)
            fs.defined[pt.text] = pt
            fs.scopes[0].vars[pt.text] = a
            if ty.kind == "ptr":
                fs.untyped[a] = pt
        spmd = self.spmd_values(fs, params)
        self.funcs[name] = fs
        self.order.append(name)
        c.expect("{", "opening the function body")
        self.body(fs, fs.scopes[0], func_body=True)
        for k in fs.made_consts + spmd:
            if not k.results[0].uses:
                k.erase()
        canonical_tfree_splits(fs.op)
        unique_names(fs.op)

    def spmd_values(self, fs: FuncState, params) -> list:
        """pypto's SPMD identity parameters (:data:`~.pto_syntax.SPMD_PARAMS`) read as the
        values the run binds them to: the sub-block index as ``get_subblockid`` (each lane
        its own), block index 0 and block number 1 (one cluster).  The ops made (erased when
        unused)."""
        made = []
        for pt, ty in params:
            key = pt.text[1:]
            if key not in SPMD_PARAMS or ty.kind != "scalar" or ty.dtype not in INT_DTYPES:
                continue
            if key == SPMD_SUBBLOCK_IDX:
                op = emit(self, fs, GetSubblockIdOp.name, [], [INDEX], {}, self.loc(pt), [key])
            else:
                v = 0 if key == SPMD_BLOCK_IDX else 1
                op = emit(self, fs, ConstOp.name, (), [ScalarType(ty.dtype)], {"value": v}, self.loc(pt), [key])
                fs.const_values[op.results[0]] = v
            fs.scopes[0].vars[pt.text] = op.results[0]
            made.append(op)
        return made

    def body(self, fs: FuncState, scope, func_body: bool = False) -> None:
        """Statements up to the closing '}' (consumed)."""
        c = self.c
        returned = False
        while not c.at("}"):
            t = c.peek()
            if t.kind == "eof":
                raise c.error("unexpected end of file: a '}' is missing (truncated file?)", t,
                              "close every region and function with '}'")
            if OP_ALIASES.get(t.text, t.text) == "return":
                c.next()
                if not func_body:
                    raise c.error("'return' inside a region", t, "use scf.yield to end a region")
                if not c.at("}"):
                    raise c.error("'return' must be the last op of the function", c.peek())
                returned = True
                continue
            self.statement(fs)
        end = c.next()
        if func_body and not returned:
            raise c.error(f"function @{fs.name} does not end with 'return' (an MLIR block needs "
                          "a terminator)", end, "add 'return' as the last op of the function")

    def statement(self, fs: FuncState) -> None:
        c = self.c
        start = c.peek()
        results = []
        if start.kind == "value":
            while True:
                r = c.kind("value", "a result %name")
                if c.at(":") and c.peek(1).kind == "word" and c.peek(1).text.isdigit():
                    c.next()
                    n = int(c.next().text)
                    results.extend([(r, f"{r.text}#{i}") for i in range(n)])
                else:
                    results.append((r, r.text))
                if not c.accept(","):
                    break
            c.expect("=", "after the results")
        opt = c.peek()
        if opt.kind != "word":
            raise c.error(f"expected an operation name, got {opt.text or 'the end of the file'!r}", opt)
        c.next()
        h = HANDLERS.get(OP_ALIASES.get(opt.text, opt.text))
        if h is None and opt.text in IR_OP_OF_PTO:
            h = generic_tile_op
        if h is None:
            raise c.error(f"unknown operation {opt.text!r}", opt,
                          "docs/pto.md lists the PTO-AS ops ptopipe reads")
        h(self, fs, opt, results, self.loc(start))

    # -- values ------------------------------------------------------------------------------
    def define(self, fs: FuncState, tok, name: str, binding) -> None:
        """``name`` defined in the current region: once among the names visible there (its
        region's and the enclosing ones', MLIR's rule - ptoas: "redefinition of SSA value")."""
        if name in fs.defined:
            first = fs.defined[name]
            raise self.c.error(f"{name} defined twice (first at line {first.line}:{first.col})", tok,
                               "give the value a name of its own: a name is defined once in its region "
                               "and the regions nested in it")
        fs.defined[name] = tok
        fs.scopes[-1].vars[name] = binding
        fs.scopes[-1].defined.append(name)

    def finish(self) -> None:
        """Cross-function facts: peers exist, the entry's parameter types, untyped pointers."""
        for fs in self.funcs.values():
            for op in fs.block:
                if op.is_a(ImportPeerBufferOp):
                    bname, pname = op.buffer_name, op.peer_func
                    peer = self.funcs.get(pname)
                    if peer is None or peer.kind is FunctionKind.Group:
                        raise ParseError(f"import_reserved_buffer {bname!r}: peer_func "
                                         f"@{pname} is not a kernel of this module",
                                         where=str(op.loc), fix=f"define @{pname} or name "
                                         f"one of: {', '.join('@' + n for n in self.order if n != fs.name)}")
                    names = [o.buffer_name for o in peer.block if o.is_a(ReserveBufferOp)]
                    if bname not in names:
                        raise ParseError(f"import_reserved_buffer {bname!r}: @{pname} "
                                         f"reserves no buffer of that name (it reserves: "
                                         f"{', '.join(map(repr, names)) or 'none'})", where=str(op.loc),
                                         fix="name the peer's pto.reserve_buffer")
            if fs.kind is FunctionKind.Group:
                self.entry_types(fs)
        for fs in self.funcs.values():
            for a, t in list(fs.untyped.items()):
                if not a.uses:                      # unused (ptoas accepts it): a placeholder
                    a.type = TensorType(UNUSED_PTR_SHAPE, a.type.dtype)
                    del fs.untyped[a]
                    continue
                raise self.c.error(f"the shape of tensor parameter {t.text} is unknown", t,
                                   f"give it a view: pto.make_tensor_view {t.text}, shape = [...], "
                                   "strides = [...] : !pto.tensor_view<RxCxdtype>")

    def entry_types(self, fs: FuncState) -> None:
        """The entry's pointer parameters take the types of the kernel parameters they are
        passed to; a kernel's unused pointer parameter takes its argument's type."""
        unused = []
        for op in fs.block:
            if not op.is_a(CallOp):
                continue
            callee = self.funcs.get(op.callee)
            if callee is None or callee.kind is FunctionKind.Group:
                raise ParseError(f"func.call @{op.callee}: no such kernel in the module",
                                 where=str(op.loc), fix="call one of the module's cube / vector kernels")
            params = callee.block.args
            if len(params) != len(op.operands):
                raise ParseError(f"func.call @{callee.name} passes {len(op.operands)} arguments; "
                                 f"it takes {len(params)}", where=str(op.loc))
            for v, p in zip(op.operands, params):
                if p in callee.untyped and not p.uses:
                    unused.append((v, callee, p))  # takes the argument's type (below)
                elif v in fs.untyped:
                    if isinstance(v.type, TensorType) and isinstance(p.type, TensorType) \
                            and v.type.dtype != p.type.dtype:
                        raise ParseError(f"func.call @{callee.name}: argument %{v.name} is declared "
                                         f"{ptr_type(v.type.dtype)} but parameter %{p.name} is {ptr_type(p.type.dtype)}",
                                         where=str(op.loc), fix="declare the entry parameter with the "
                                         "kernel parameter's element type")
                    v.type = p.type
                    del fs.untyped[v]
                elif p in self.gm_sized and self._gm_widen(fs, v, p):
                    pass
                elif v.type != p.type:
                    raise ParseError(f"func.call @{callee.name}: argument {v.name} does not match "
                                     f"parameter {p.name} ({p.type})", where=str(op.loc))
        for v, callee, p in unused:
            if v in fs.untyped:                   # no kernel uses it
                v.type = TensorType(UNUSED_PTR_SHAPE, v.type.dtype)
                del fs.untyped[v]
            if v.type.dtype != p.type.dtype:
                raise ParseError(f"func.call @{callee.name}: argument {v.name} does not match "
                                 f"parameter {p.name} ({p.type})", where=str(v.uses[0].owner.loc))
            p.type = v.type
            callee.untyped.pop(p, None)           # a kernel the entry calls twice: once

    def _gm_widen(self, fs, v, p) -> bool:
        """A GM slot buffer sized from each kernel's pipe init (``gm_sized``) passed by the
        entry to kernels whose inits disagree: the argument and every kernel parameter it is
        passed to take the larger size (the disagreement is VerifyPipes' finding, at the
        init).  False when the types differ otherwise."""
        if not (isinstance(v.type, TensorType) and isinstance(p.type, TensorType)
                and v.type.dtype == p.type.dtype and len(v.type.shape) == len(p.type.shape) == 1):
            return False
        big = max(v.type, p.type, key=lambda t: t.shape[0])
        v.type = big
        for op in fs.block:
            if op.is_a(CallOp) and op.callee in self.funcs:
                for a, q in zip(op.operands, self.funcs[op.callee].block.args):
                    if a is v and q in self.gm_sized:
                        q.type = big
        return True

    def gm_slot_type(self, ptr_dtype: str, attrs: dict) -> TensorType:
        """The shape of a ``gm_slot_buffer`` pointer with no view: the rings it holds."""
        ways = 2 if int(attrs["dir_mask"]) & 3 == 3 else 1
        n = attrs.get("slot_num") or get_platform(self.platform or "a2a3").slot_num_for(ways == 2)
        return TensorType((n * attrs["slot_size"] * ways // itemsize(ptr_dtype),), ptr_dtype)


def read_pto(text: str, filename: str = "<pto>", platform=None, addrs: list | None = None):
    """PTO-AS ``text`` -> a verified ``pl.program`` op (locations are ``filename``:line:col).
    ``platform`` (a name) is used when the module carries no ``pto.target_arch``.  ``addrs``
    (a list) receives ``(function, addr, nbytes, space, "file:line:col")`` for every tile
    placed with ``pto.alloc_tile addr = ...`` (the IR does not carry fixed addresses)."""
    if text.startswith("\ufeff"):          # a UTF-8 byte order mark (some editors write one)
        text = text[1:]
    text = without_locations(text)
    with gc_paused():
        rd = Reader(text, filename, platform)
        prog = rd.module()
    if addrs is not None:
        for fs in rd.funcs.values():
            for a, n, sp, tok in fs.explicit_addrs:
                addrs.append((fs.name, a, n, sp, f"{filename}:{tok.line}:{tok.col}"))
    try:
        verify_ops(prog)
    except CompileError as e:
        raise ParseError(e.what, where=e.where, fix=e.fix, details=e.details) from None
    return prog
