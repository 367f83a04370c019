"""Tile and GM-view ops of the ``.pto`` reader: ``pto.make_tensor_view`` (gives a
``!pto.ptr`` parameter its shape), ``pto.partition_view`` (a load / store window),
``pto.alloc_tile`` / ``declare_tile`` (a buffer), ``pto.tload`` / ``pto.tstore``, the
element-wise / matmul / move ops in their ``ins(...) outs(...)`` form (one handler for
every op of the op table: attributes such as ``space`` / ``dtype`` / ``shape`` are read off
the ``outs`` tile), ``get_subblockid`` and the intra-core events.
"""
from __future__ import annotations

import dataclasses

from ..arch.vocab import TileLayout, gm_layout_inferred, gm_layout_refused
from ..errors import CompileError, ParseError
from ..ir.opdefs import OperandView, operand_groups
from ..ir.ops import ISA_ATTRS, OPS, REQUIRED, OpError, scratch_index, store_window
from ..ir.types import INDEX, ScalarType, TensorType, TileValueType, describe, itemsize
from ..ir.vocab import Loc
from ..ir.opdefs import Barrier, ConstOp, CopyOp, GetSubblockIdOp, LoadOp, RecordEvent, StoreOp, WaitEvent
from .pto_ops import (MASK_MAKERS, RowView, wider_mask, Unwritten, _check_results, _check_type, _hint, emit, ins_outs, lookup, read,
                      same_tile, write)
from .pto_syntax import (CARRY, EVENT_IDS, FLOATS, FREE_ORDER, SYNC_OP_PIPE, INT_DTYPES, ISA_ATTR_SPELLING, INT_SCALAR_OPERAND, NUMBER_SCALAR_OPS,
                         IR_OP_OF_PTO, NAMED_COPY, PIPES, SCRATCH_A2A3_ONLY, SCRATCH_OPTIONAL, SCRATCH_REQUIRED,
                         a5_scratch_refusal, missing_scratch_refusal, read_atomic_type)
from ..errors import with_article


class View:
    """A ``pto.make_tensor_view`` of a tensor parameter, and its GM layout where a move sees
    it as DN or NZ (its ``{layout = ..}``, or what ptoas infers from its constant shape and
    strides; None: ND - the IR's tensors are row-major)."""
    __slots__ = ("tensor", "layout")

    def __init__(self, tensor, layout=None):
        self.tensor, self.layout = tensor, layout


class Part:
    """A ``pto.partition_view``: the tensor, the offset values, the window shape and the
    view's GM layout (:class:`View`)."""
    __slots__ = ("tensor", "offsets", "shape", "tok", "layout")

    def __init__(self, tensor, offsets, shape, tok, layout=None):
        self.tensor, self.offsets, self.shape, self.tok, self.layout = tensor, offsets, shape, tok, layout


def _keyed_list(r, fs, key):
    """``, key = [%a, %b, ...]`` -> the value tokens."""
    c = r.c
    c.expect(",")
    c.expect(key)
    c.expect("=")
    return _value_list(r, fs, key)


def _value_list(r, fs, what):
    c = r.c
    c.expect("[", f"opening {what}")
    toks = []
    while not c.accept("]"):
        toks.append(c.kind("value", f"a value in {what}"))
        if not c.at("]"):
            c.expect(",", f"between {what}")
    return toks


def _static(r, fs, toks, what):
    out = []
    for t in toks:
        v = read(r, fs, t)
        if v not in fs.const_values:
            raise r.c.error(f"{what} {t.text} is not an arith.constant", t,
                            "give the static shape in the view's type instead")
        out.append(fs.const_values[v])
    return tuple(out)


def h_view(r, fs, opt, results, loc):
    c = r.c
    _check_results(r, opt, results, 1)
    pt = c.kind("value", "the tensor pointer")
    _, p = lookup(r, fs, pt)
    if p not in fs.untyped and not (hasattr(p, "type") and isinstance(p.type, TensorType)
                                    and p.owner is fs.block):
        raise c.error(f"{pt.text} is not a !pto.ptr parameter of this kernel", pt)
    shape_t = _keyed_list(r, fs, "shape")
    strides_t = _keyed_list(r, fs, "strides")
    lay = None
    if c.at("{"):                       # ``{layout = #pto.layout<nd | dn | nz>}``
        lay = c.enum_attr(c.attr_dict(), "layout", "#pto.layout", None)
        if lay is not None and lay[0] not in _GM_LAYOUT:
            raise c.error(f"tensor view layout {lay[0]!r} is not supported", lay[1] or opt,
                          "use #pto.layout<nd>, <dn> or <nz>")
    c.expect(":", "before the view type")
    vt = c.peek()
    ty = c.type_()
    if ty.kind != "view":
        raise c.error("pto.make_tensor_view gives a !pto.tensor_view<...>", vt)
    if len(shape_t) != len(ty.shape) or len(strides_t) != len(ty.shape):
        raise c.error(f"a {len(ty.shape)}-D view needs {len(ty.shape)} shape and stride values", opt)
    shape = ty.shape if None not in ty.shape else _static(r, fs, shape_t, "shape")
    if any(n is not None and n < 0 for n in shape):
        # a wrong file, not one the IR cannot express: an error of the static checks (the run
        # refuses it too)
        e = c.error(f"the pto.make_tensor_view of {pt.text} has a negative size: shape {list(shape)}", opt,
                    "give every dimension a size >= 0")
        raise CompileError(e.what, where=e.where, fix=e.fix)
    for t in shape_t:
        read(r, fs, t)
    strides = [fs.const_values.get(read(r, fs, t)) for t in strides_t]
    layout = _view_layout(c, lay, tuple(shape), strides, itemsize(ty.dtype))
    want = TensorType(tuple(shape), ty.dtype)
    if p in fs.untyped:
        if p.type.dtype != ty.dtype:
            raise c.error(f"type mismatch: {pt.text} points to {p.type.dtype}, the view is {ty.dtype}", vt)
        p.type = want
        del fs.untyped[p]
    elif p.type != want:
        raise c.error(f"{pt.text} already has a view of another shape", pt)
    rt, name = results[0]
    r.define(fs, rt, name, View(p, layout))


#: a tensor view's ``#pto.layout<..>``: pto-isa's GlobalTensor Layout
_GM_LAYOUT = {"nd": TileLayout.ND, "dn": TileLayout.DN, "nz": TileLayout.NZ}


def _view_layout(c, lay, shape: tuple, strides: list, item: int) -> TileLayout | None:
    """The GM layout a move sees a view in, as the run reads it (``pto_exec.tile_ops``): the
    ``{layout = ..}`` given (``lay``: (name, token)), else what ptoas's InferPTOLayout reads off
    constant shape and strides (:func:`~ptopipe.arch.vocab.gm_layout_inferred`); None for ND
    (and for a row / column vector, or strides known only at run time: ND for the IR).  A
    layout the shape and strides contradict is ptoas's "layout mismatch": a CompileError at
    the attribute, the file being wrong."""
    static = None not in shape and None not in strides and len(strides) == len(shape)
    given = _GM_LAYOUT[lay[0]] if lay is not None else None
    if static:
        if given is None:
            given = gm_layout_inferred(shape, strides, item)
        else:
            other = gm_layout_refused(shape, strides, item, given)
            if other is not None:
                e = c.error(f"the view's layout {given.name} contradicts its shape {list(shape)} and strides "
                            f"{list(strides)}, which ptoas reads as {other.name} (ptoas: \"layout mismatch: "
                            f"user-specified layout={given.name.lower()} but inferred={other.name.lower()}\")",
                            lay[1], f"write {{layout = #pto.layout<{other.name.lower()}>}} or leave the layout out "
                                    "(ptoas infers it), or give the strides of the layout meant")
                raise CompileError(e.what, where=e.where, fix=e.fix)
    return given if given in (TileLayout.DN, TileLayout.NZ) else None


def _tensor_of(r, fs, tok):
    _, b = lookup(r, fs, tok)
    if isinstance(b, View):
        return b.tensor
    v = read(r, fs, tok)
    if not isinstance(v.type, TensorType):
        raise r.c.error(f"{tok.text} is {with_article(describe(v.type))}, not a tensor view", tok)
    return v


def h_partition(r, fs, opt, results, loc):
    c = r.c
    _check_results(r, opt, results, 1)
    vt = c.kind("value", "the tensor view")
    ten = _tensor_of(r, fs, vt)
    offs_t = _keyed_list(r, fs, "offsets")
    sizes_t = _keyed_list(r, fs, "sizes")
    c.expect(":")
    c.type_()
    n = len(ten.type.shape)
    if len(offs_t) != n or len(sizes_t) != n:
        raise c.error(f"a partition of a {n}-D tensor needs {n} offsets and {n} sizes", opt)
    if c.accept("->"):
        ptt = c.peek()
        ty = c.type_()
        if ty.kind != "part":
            raise c.error("pto.partition_view gives a !pto.partition_tensor_view<...>", ptt)
        if len(ty.shape) != n:
            raise c.error(f"a partition of a {n}-D tensor needs {n} offsets and {n} sizes", opt)
        shape = ty.shape if None not in ty.shape else _static(r, fs, sizes_t, "size")
    else:                                   # no result type (ptoas infers it): constant sizes
        for t in sizes_t:
            v = read(r, fs, t)
            if v not in fs.const_values:
                raise c.error(f"size {t.text} is not an arith.constant, and this pto.partition_view "
                              "has no result type", t, "give the static shape in its type: "
                              "-> !pto.partition_tensor_view<RxCxdtype>")
        shape = _static(r, fs, sizes_t, "size")
    offs = [read(r, fs, t) for t in offs_t]
    for t, dim in zip(sizes_t, shape):
        v = fs.const_values.get(read(r, fs, t))
        if v is None:
            continue
        if isinstance(v, bool) or v <= 0:
            raise c.error(f"partition size {t.text} = {v} is not a positive size", t,
                          "give each partition size a positive arith.constant")
        if v != dim:
            raise c.error(f"partition size {t.text} = {v} differs from the result type's {dim}", t,
                          "make the sizes and the !pto.partition_tensor_view shape agree")
    rt, name = results[0]
    _, src = lookup(r, fs, vt)
    r.define(fs, rt, name, Part(ten, offs, tuple(shape), rt, getattr(src, "layout", None)))


def h_alloc(r, fs, opt, results, loc):
    c = r.c
    _check_results(r, opt, results, 1)
    addr = None
    if c.accept("addr"):
        c.expect("=")
        at = c.kind("value", "the address")
        av = read(r, fs, at)
        if av not in fs.const_values:
            raise c.error("alloc_tile addr must be an arith.constant", at)
        addr = fs.const_values[av]
    dyn = False
    # a runtime valid extent per dimension whose type says ``?`` (ptoas: a static one takes no
    # operand - "valid_col operand must be absent because result type v_col is 16")
    for key, what in (("valid_row", "the valid rows"), ("valid_col", "the valid columns")):
        if c.accept(key):
            dyn = True
            c.expect("=")
            read(r, fs, c.kind("value", what))
    if opt.text == "pto.declare_tile":
        c.expect("->", "before the tile type")
    else:
        c.expect(":", "before the tile type")
    tt = c.peek()
    ty = c.type_()
    if ty.kind != "tile":
        raise c.error(f"{opt.text} makes a !pto.tile_buf", tt)
    if dyn and c.accept(","):       # ptoas also spells the valid operands' type (index / i32)
        c.type_()
    rt, name = results[0]
    if addr is not None:
        fs.explicit_addrs.append((addr, ty.shape[0] * ty.shape[1] * itemsize(ty.ir.dtype), ty.ir.space, rt))
    r.define(fs, rt, name, Unwritten(ty.ir, rt, addr))


def _outs_tile(r, fs, outs, opt):
    if len(outs) != 1:
        raise r.c.error(f"{opt.text} writes one tile: outs(%t : !pto.tile_buf<...>)", opt)
    tok, pt = outs[0]
    if pt.kind != "tile":
        raise r.c.error(f"outs of {opt.text} is a tile buffer", tok)
    _, b = lookup(r, fs, tok)
    have = b.type if hasattr(b, "type") else None
    if have != pt.ir:
        raise r.c.error(f"type mismatch: {tok.text} is {with_article(describe(have) if have else 'view')}, "
                        f"the op says {describe(pt.ir)}", tok)
    return tok, pt.ir


def h_tload(r, fs, opt, results, loc):
    _check_results(r, opt, results, 0)
    ins = ins_outs(r, fs, "ins")
    outs = ins_outs(r, fs, "outs")
    if len(ins) != 1:
        raise r.c.error("pto.tload reads one partition view", opt)
    pv_t, _ = ins[0]
    _, part = lookup(r, fs, pv_t)
    if not isinstance(part, Part):
        raise r.c.error(f"{pv_t.text} is not a pto.partition_view", pv_t)
    tok, tt = _outs_tile(r, fs, outs, opt)
    if tuple(part.shape) != tt.shape and len(part.shape) == 2 and part.layout is None:
        raise r.c.error(f"type mismatch: the view is {part.shape}, the tile {tt.shape}", tok)
    tt = TileValueType(tt.shape, tt.dtype, tt.space)        # TLOAD gives the default layout
    attrs = {"shape": tuple(part.shape), "space": tt.space}
    if part.layout is not None:         # a DN / NZ view: a move sees its window so (ir.ops.gm_window)
        attrs["gm_layout"] = part.layout
    op = emit(r, fs, LoadOp.name, [part.tensor] + part.offsets, [tt], attrs, _windowed(loc, part), [tok.text[1:]])
    write(r, fs, tok, op.results[0])


def h_tstore(r, fs, opt, results, loc):
    _check_results(r, opt, results, 0)
    ins = ins_outs(r, fs, "ins")
    outs = ins_outs(r, fs, "outs")
    if len(ins) != 1 or len(outs) != 1:
        raise r.c.error("pto.tstore ins(%tile) outs(%partition_view)", opt)
    (tt, tp), (pv_t, _) = ins[0], outs[0]
    tile = read(r, fs, tt, "tile")
    _check_type(r, tt, tile, tp)
    _, part = lookup(r, fs, pv_t)
    if not isinstance(part, Part):
        raise r.c.error(f"{pv_t.text} is not a pto.partition_view", pv_t)
    shape = getattr(tile.type, "shape", None)
    if len(part.shape) == 2 and shape is not None and tuple(part.shape) == tuple(shape)[::-1] \
            and part.layout is None and getattr(tile.type, "is_column", False):   # (ins_outs named the row view's column)
        raise r.c.error(f"a store of the {shape[0]}x1 column {tt.text} (or of a pto.treshape row view of it, which "
                        f"the value IR keeps as the column) into a 1x{shape[0]} window: the value IR has no such "
                        "store", tt)
    if len(part.shape) == 2 and shape is not None and tuple(part.shape) != tuple(shape) and part.layout is None:
        raise r.c.error(f"type mismatch: the view is {tuple(part.shape)}, the tile {tuple(shape)}: "
                        "the store would write the whole tile", pv_t,
                        "store into a partition view of the tile's shape (ptopipe reads v_row=? / "
                        "v_col=? but moves the whole tile)")
    attrs = {}                      # (no atomicType: a plain store, no attribute in the IR)
    for key, (v, t) in (r.c.attr_dict() if r.c.at("{") else {}).items():
        text = f"{v[0]}<{v[1]}>" if isinstance(v, tuple) else repr(v)
        if key != "atomicType":
            raise r.c.error(f"pto.tstore's {key} {text} has no form in the value IR", t)
        kind = read_atomic_type(text)
        if kind is None:
            raise r.c.error(f"atomicType {text} is not an atomic type", t,
                            "use #pto<atomic_type atomic_add> (or atomic_none, a plain store)")
        attrs["atomic"] = int(kind)
    if part.layout is not None:         # a DN / NZ view: a move sees its window so (ir.ops.gm_window)
        attrs["gm_layout"] = part.layout
    if part.layout is not None or (shape is not None and tuple(part.shape) != store_window(part.tensor.type.shape,
                                                                                             tuple(shape))):
        attrs["window"] = tuple(part.shape)     # the view's window, not the tile's (ir.ops.gm_window)
    emit(r, fs, StoreOp.name, [tile] + part.offsets + [part.tensor], [], attrs, _windowed(loc, part))


def _windowed(loc, part: Part):
    """``loc`` of a load / store with the location of the partition view ``part`` it moves
    through (``Loc.window``)."""
    if not isinstance(loc, Loc) or part.tok is None:
        return loc
    return dataclasses.replace(loc, window=Loc(loc.file, part.tok.line, part.tok.col))


def h_treshape(r, fs, opt, results, loc):
    """``%v = pto.treshape %col : <DN [R, 1]> -> <ND [1, R]>``: a row view of a column, how
    ptopipe's writer runs ptoas's row-major-only ops (element-wise, texpands) on per-row
    columns; ops naming %v read / write %col (:class:`.pto_ops.RowView`).  Other reshapes change
    what the IR's tile values are and are not read here."""
    c = r.c
    _check_results(r, opt, results, 1)
    st = c.kind("value", "the tile to view")
    c.expect(":", "before the source type")
    src = c.type_()
    c.expect("->", "before the view type")
    dst = c.type_()
    if src.kind != "tile" or dst.kind != "tile" or not src.ir.is_column or dst.ir != src.ir.row_view():
        raise c.error("the static reader takes pto.treshape only from a DN [R, 1] column to its ND "
                      "[1, R] row view", opt,
                      "`ptopipe run` / `ptopipe check` run the file with buffer semantics")
    _, b = lookup(r, fs, st)
    if getattr(b, "type", None) != src.ir:
        raise c.error(f"type mismatch: {st.text} is {with_article(describe(b.type) if hasattr(b, 'type') else 'view')}, "
                      f"the op says {describe(src.ir)}", st)
    rt, name = results[0]
    r.define(fs, rt, name, RowView(st, src))


def generic_tile_op(r, fs, opt, results, loc):
    _check_results(r, opt, results, 0)
    in_attrs = {}
    ins = ins_outs(r, fs, "ins", in_attrs)
    outs = ins_outs(r, fs, "outs")
    marks = r.c.attr_dict() if r.c.at("{") else {}
    if opt.text == "pto.tmov" and (CARRY in marks or NAMED_COPY in marks):
        _marked_move(r, fs, opt, ins, outs, marks, loc)
        return
    if marks:
        k, (_, t) = next(iter(marks.items()))
        raise r.c.error(f"unknown attribute {k!r} of {opt.text}", t,
                        f"ptopipe reads {{{CARRY}}} and {{{NAMED_COPY}}} on a pto.tmov")
    spec = OPS[IR_OP_OF_PTO[opt.text]]
    want = [p for p in spec.operands]
    if len(ins) == len(want) + 1 and opt.text in SCRATCH_A2A3_ONLY and r.platform == "a5":
        what, fix = a5_scratch_refusal(opt.text)
        raise ParseError(what, where=str(loc), fix=fix)
    refused = missing_scratch_refusal(opt.text, len(ins))
    if refused:
        raise ParseError(refused[0], where=str(loc), fix=refused[1])
    if len(ins) == len(want) + 1 and opt.text in SCRATCH_REQUIRED + SCRATCH_OPTIONAL:
        # ptoas's scratch tile, no value of the IR: last, or the last tile before the scalar
        k = scratch_index(spec.name, [pt.ir if pt.kind == "tile" else None for _, pt in ins]) - 1
        t, pt = ins.pop(k)
        _, b = lookup(r, fs, t)
        if not isinstance(getattr(b, "type", None), TileValueType):
            raise r.c.error(f"the scratch operand {t.text} of {opt.text} is not a tile buffer", t)
    if len(ins) != len(want):
        raise r.c.error(f"{opt.text} takes {len(want)} operand(s) in ins(...), got {len(ins)}", opt)
    xs = []
    for t, pt in ins:
        v = read(r, fs, t)
        cast_index = (opt.text in INT_SCALAR_OPERAND or opt.text in NUMBER_SCALAR_OPS) and pt.kind == "scalar" \
            and (pt.dtype in INT_DTYPES or opt.text in NUMBER_SCALAR_OPS and pt.dtype in FLOATS) \
            and isinstance(v.type, ScalarType) and v.type.dtype == "index"     # a cast of an index
        # (a float made of an integer scalar - arith.sitofp, which the value IR reads as the integer -
        # where a tile-scalar op takes a float: the writer's scalar of tmaxs / tmins, a counter as f32)
        cast_index = cast_index or opt.text in NUMBER_SCALAR_OPS and pt.kind == "scalar" and pt.dtype in FLOATS \
            and isinstance(v.type, ScalarType) and v.type.dtype in INT_DTYPES
        # (texpands' float scalar in its tile's type: arith.truncf / extf, read as the value itself)
        cast_index = cast_index or (opt.text == "pto.texpands" and pt.kind == "scalar" and pt.dtype in FLOATS
                                    and isinstance(v.type, ScalarType) and v.type.dtype in FLOATS)
        if not cast_index:
            _check_type(r, t, v, pt)
        xs.append(v)
    tok, out = _outs_tile(r, fs, outs, opt)
    attrs = {}
    isa_attrs = ISA_ATTRS.get(spec.name, ())
    for k in isa_attrs:             # TCMP's cmpMode: ptoas's default when it is left out
        key, _, read_value = ISA_ATTR_SPELLING[k]
        if key in in_attrs:
            v, t = in_attrs.pop(key)
            try:
                attrs[k] = read_value(*v) if isinstance(v, tuple) else read_value("", str(v))
            except (KeyError, TypeError, ValueError):
                raise r.c.error(f"{opt.text}: bad {key} {v!r}", t) from None
    for p in spec.attr_params:
        if p.name in attrs:
            continue
        if p.kind == "shape":
            attrs[p.name] = tuple(out.shape)
        elif p.kind == "space":
            attrs[p.name] = out.space
        elif p.kind == "layout":
            attrs[p.name] = out.layout
        elif p.kind == "dtype":
            same = xs and isinstance(xs[0].type, TileValueType) and xs[0].type.dtype == out.dtype
            attrs[p.name] = None if (spec.name == "move" and same) else out.dtype
        elif p.default is not REQUIRED:
            attrs[p.name] = p.default
        else:
            raise r.c.error(f"{opt.text}: ptopipe cannot derive {p.name!r}", opt)
    op = emit(r, fs, f"pl.{spec.name}", xs, [_result_type(spec, fs, xs, attrs, out)], attrs, loc,
              [tok.text[1:]])
    write(r, fs, tok, op.results[0])


def _marked_move(r, fs, opt, ins, outs, marks, loc):
    """``pto.tmov ins(%x) outs(%b) {ptopipe.carry}``: ptopipe's writer moving a loop / branch
    value into the buffer that carries it - %b now holds %x's value, no IR op;
    ``{ptopipe.copy}``: the IR's named copy (``pl.copy``) of %x into %b."""
    c = r.c
    if len(marks) != 1 or next(iter(marks.values()))[0] is not True:
        k, (_, t) = next(iter(marks.items()))
        raise c.error(f"{opt.text} takes one of {{{CARRY}}} / {{{NAMED_COPY}}}, without a value", t)
    if len(ins) != 1:
        raise c.error(f"{opt.text} moves one tile: ins(%t : !pto.tile_buf<...>)", opt)
    t, pt = ins[0]
    v = read(r, fs, t, "tile")
    _check_type(r, t, v, pt)
    tok, out = _outs_tile(r, fs, outs, opt)
    if not same_tile(v.type, out):
        raise c.error(f"{opt.text} {{{next(iter(marks))}}} of {with_article(describe(v.type))} into a "
                      f"{describe(out)}: a carried value keeps its type", tok)
    if CARRY in marks:
        write(r, fs, tok, v)
        return
    op = emit(r, fs, CopyOp.name, [v], [v.type], {}, loc, [tok.text[1:]])
    write(r, fs, tok, op.results[0])


def _result_type(spec, fs, xs, attrs, out):
    """The op's own result type when it differs from the declared ``outs`` tile only in
    layout (see ``same_tile``), else the declared one (the verifier then names a real clash)."""
    args = {k: OperandView(v) if isinstance(v, list) else v for k, v in operand_groups(spec, xs).items()}
    try:
        t = spec.infer(fs.kind, args, attrs)
    except OpError:
        return out
    if f"pl.{spec.name}" in MASK_MAKERS and wider_mask(t, out):
        return t                # the packed mask in a mask tile ptoas declares wider
    return t if same_tile(t, out) else out


def h_subblock(r, fs, opt, results, loc):
    _check_results(r, opt, results, 1)
    if r.c.accept("->") or r.c.accept(":"):
        r.c.type_()
    rt, name = results[0]
    op = emit(r, fs, GetSubblockIdOp.name, [], [INDEX], {}, loc, [_hint(name)])
    r.define(fs, rt, name, op.results[0])


def _pipe_attr(r, attrs, key, opt):
    """A pipe: ``#pto.pipe<PIPE_...>``, or ptoas's sync op type (``#pto.pipe_event_type<TLOAD>``
    / ``#pto.sync_op_type<...>``) of the pipe it runs on."""
    if key not in attrs:
        raise r.c.error(f"{opt.text} needs {key} = #pto.pipe<PIPE_...>", opt)
    v, t = attrs[key]
    if isinstance(v, tuple) and v[0] in ("#pto.pipe_event_type", "#pto.sync_op_type") and v[1] in SYNC_OP_PIPE:
        return PIPES[SYNC_OP_PIPE[v[1]]]
    v, t = r.c.enum_attr(attrs, key, "#pto.pipe")
    p = PIPES.get(v) or (PIPES[SYNC_OP_PIPE[v]] if v in SYNC_OP_PIPE else None)
    if p is None:
        raise r.c.error(f"unknown pipe {v!r}", t, f"use one of {', '.join(PIPES)}")
    return p


def h_event(r, fs, opt, results, loc):
    c = r.c
    if c.at("["):                   # ptoas's form: [src, dst, event], as set_flag / wait_flag
        return h_flag(r, fs, opt, results, loc)
    _check_results(r, opt, results, 0)
    c.expect("(")
    et = c.kind("value", "the event id")
    c.expect(":")
    c.type_()
    c.expect(")")
    e = read(r, fs, et)
    attrs = c.attr_dict()
    emit(r, fs, f"pl.{opt.text[4:]}", [e], [],
         {"src": _pipe_attr(r, attrs, "src", opt), "dst": _pipe_attr(r, attrs, "dst", opt)}, loc)


def h_flag(r, fs, opt, results, loc):
    """``pto.set_flag[#pto.pipe<S>, #pto.pipe<D>, #pto.event<EVENT_IDn>]`` (``wait_flag``), or
    the ``_dyn`` forms whose event id is an index value: the IR's record_event / wait_event."""
    c = r.c
    _check_results(r, opt, results, 0)
    c.expect("[", f"after {opt.text}")
    src = _pipe_attr(r, {"src": c.attr_value()}, "src", opt)
    c.expect(",", "between the pipes")
    dst = _pipe_attr(r, {"dst": c.attr_value()}, "dst", opt)
    c.expect(",", "before the event id")
    if opt.text.endswith("_dyn"):
        e = read(r, fs, c.kind("value", "the event id"))
    else:
        (fam, v), t = c.attr_value()
        if fam not in ("#pto.event", "") or not v.startswith("EVENT_ID") or not v[8:].isdigit() \
                or int(v[8:]) not in EVENT_IDS:
            raise c.error(f"bad event {v!r}", t, f"use #pto.event<EVENT_ID0> .. <EVENT_ID{EVENT_IDS[-1]}>")
        e = emit(r, fs, ConstOp.name, [], [INDEX], {"value": int(v[8:])}, loc).results[0]
    c.expect("]")
    name = RecordEvent.name if opt.text.startswith(("pto.set_flag", "pto.record_event")) else WaitEvent.name
    _mark_free_order(r, emit(r, fs, name, [e], [], {"src": src, "dst": dst}, loc))


def _mark_free_order(r, op) -> None:
    """An event op's trailing ``{ptopipe.free_order}``: the writer's mark of an event the
    compiler placed before a TFREE (the IR's ``free_order``; any other attribute is refused)."""
    if not r.c.at("{"):
        return
    attrs = r.c.attr_dict()
    for key, (_v, tok) in attrs.items():
        if key != FREE_ORDER:
            raise r.c.error(f"unknown attribute {key!r} on {op.name}'s pto op", tok,
                            f"an event takes only {{{FREE_ORDER}}} (the compiler's own event before a TFREE)")
    op.free_order = True


def h_tprint(r, fs, opt, results, loc):
    """``pto.tprint ins(%v : T) [{attrs}]``: a debug print.  The static view keeps no op for it
    (it orders and moves nothing across cores); its operand must be defined, and the run
    (:mod:`.pto_exec`) prints it."""
    _check_results(r, opt, results, 0)
    for tok, _ty in ins_outs(r, fs, "ins"):
        lookup(r, fs, tok)
    if r.c.at("{"):
        r.c.attr_dict()


def h_set_validshape(r, fs, opt, results, loc):
    """``pto.set_validshape %t, %rows, %cols : T``: the tile's valid shape, metadata the value
    IR does not model (its ops act on whole tiles, docs/pto.md): no op, and no read of the
    tile's data - a tile whose valid shape a loop sets before it loads it is not carried."""
    _check_results(r, opt, results, 0)
    c = r.c
    tile = c.kind("value", "the tile")
    _, b = lookup(r, fs, tile)
    if not isinstance(b, RowView) and not isinstance(getattr(b, "type", None), TileValueType):
        raise c.error(f"{tile.text} is not a tile: pto.set_validshape sets a tile's valid shape", tile)
    for what in ("the valid rows", "the valid columns"):
        c.expect(",", f"before {what}")
        t = c.kind("value", what)
        v = read(r, fs, t)
        if not isinstance(v.type, ScalarType) or v.type.dtype not in INT_DTYPES:
            raise c.error(f"{t.text} is a {describe(v.type)}, not an integer valid size", t)
    c.expect(":", "before the tile's type")
    c.type_()


def h_barrier(r, fs, opt, results, loc):
    """``pto.barrier #pto.pipe<P>`` (ptoas), or ``{pipe = #pto.pipe<P>}``; no pipe: PIPE_ALL;
    ``pto.barrier_sync[<TVEC>]``: the pipe of a sync op type."""
    _check_results(r, opt, results, 0)
    if r.c.accept("["):
        attrs = {"pipe": r.c.attr_value()}
        r.c.expect("]")
    elif r.c.at("{"):
        attrs = r.c.attr_dict()
    elif r.c.peek().kind == "hash" or r.c.at("<"):
        attrs = {"pipe": r.c.attr_value()}
    else:
        attrs = {}
    mark = attrs.pop(FREE_ORDER, None)
    p = _pipe_attr(r, attrs, "pipe", opt) if "pipe" in attrs else PIPES["PIPE_ALL"]
    op = emit(r, fs, Barrier.name, [], [], {"pipe": p}, loc)
    if mark is not None:
        op.free_order = True
    else:
        _mark_free_order(r, op)


