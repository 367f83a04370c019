"""Tile and GM-view ops: tensor / partition views, ``alloc_tile`` / ``declare_tile`` /
``memref.alloc`` buffers (valid shapes, explicit addresses), ``tload`` / ``tstore``, every
catalogue instruction in its ``ins(...) outs(...)`` form (``isa.TX(outs..., ins..., attrs...)``),
the scalar-first forms, reinterpretations (``treshape``, ``bind_tile``, ``reinterpret_cast``,
``addptr``), ``tprint`` and the block / sub-block ids."""
from __future__ import annotations

import re

import numpy as np

from ... import isa
from ...isa.context import current_core, get_block_num
from ...isa.ops import SCALAR_FIRST as ISA_SCALAR_FIRST
from ...arch.catalogue import OPS as CATALOGUE
from ...arch import PipeUnit
from ...arch.dtypes import short_name
from ...arch.vocab import (CmpMode, HistByte, MaskPattern, ReluPreMode, gm_layout_inferred, gm_layout_refused,
                            gm_nz_inferred, row_major_strides)
from ...errors import MemoryConflictError, ParseError, PtoPipeError
from ...sim.determinacy import unseen
from ..pto_syntax import (FILL_PADS, FLOAT_SCALAR_OPS, INDEXED_ATTRS, ISA_ATTR_SPELLING, NUMBER_SCALAR_OPS,
                          PTOAS_DISTINCT_OPERANDS, PTOAS_ELEMENT_TYPES, PTOAS_LOCATIONS, PTOAS_QUANT_TYPES,
                          PTOAS_ROW_MAJOR, ROW_REDUCTIONS,
                          SCRATCH_A2A3_ONLY, SCRATCH_OPTIONAL, SCRATCH_REQUIRED, a5_scratch_refusal,
                          float_scalar_refusal, indexed_coalesce, missing_scratch_refusal, ptoas_dst_refusal,
                          ptoas_element_refusal, ptoas_location_refusal, ptoas_quant_refusal,
                          ptoas_row_major_refusal, ptoas_storage_refusal, read_atomic_type, read_indexed_attr)
from ..pto_tree import Stmt, split_top
from .placement import crowded_error
from .program import catalogue_name, int_constants, res_type
from .types import ELEMENT, ROUND, MultiSpec, TileSpec
from .values import Elements, MultiTile, View


#: a tensor view's ``#pto.layout<..>``: pto-isa's GlobalTensor Layout
_GM_LAYOUT = {"nd": isa.TileLayout.ND, "dn": isa.TileLayout.DN, "nz": isa.TileLayout.NZ}


def h_view(ex, fr, s):
    vs = s.values()
    base = ex.val(fr, vs[0])
    ty = res_type(ex, s)
    shape = [ex.ival(fr, t) for t in (s.attr("shape") or [])[1:-1] if t.kind == "value"] or \
        [int(t.text) for t in (s.attr("shape") or [])[1:-1] if t.kind == "word"]
    strides_t = s.attr("strides")
    strides = [ex.ival(fr, t) if t.kind == "value" else int(t.text)
               for t in (strides_t or [])[1:-1] if t.kind in ("value", "word")]
    if not strides:
        strides = list(np.cumprod([1] + shape[::-1][:-1])[::-1])
    ptr = base.data() if isinstance(base, isa.GlobalTensor) else base
    lay = s.attr("layout")
    layout = None
    if lay and len(lay) >= 3 and lay[0].text == "#pto.layout":
        layout = _GM_LAYOUT.get(lay[2].text)
        if layout is None:
            raise ex.perr(lay[2], f"tensor view layout {lay[2].text!r} is not supported",
                          "use #pto.layout<nd>, <dn> or <nz>")
    strides = tuple(int(x) for x in strides)
    if _static_view(ex, fr, s, ty):
        layout = _inferred_layout(ex, s, lay, layout, shape, strides, np.dtype(ty[1]).itemsize)
    return View(ptr, ty[1], tuple(shape), strides, vs[0].text, layout)


def _static_view(ex, fr, s, ty) -> bool:
    """Whether ptoas knows a ``pto.make_tensor_view``'s shape and strides statically (each a
    dimension of its type or an ``arith.constant``), as its InferPTOLayout needs to read a
    layout off them (read once per statement)."""
    got = ex.decoded.get(id(s))
    if got is None:
        consts = int_constants(fr.f)

        def known(toks):
            return all(t.kind == "word" or t.text in consts for t in toks if t.kind in ("value", "word"))
        dims = [t for t in (s.attr("shape") or [])[1:-1] if t.kind in ("value", "word")]
        typed = ty[2] if len(ty) > 2 and ty[2] is not None else ()
        shape_ok = all(t.kind == "word" or t.text in consts or (i < len(typed) and typed[i] is not None)
                       for i, t in enumerate(dims))
        got = ex.decoded[id(s)] = shape_ok and known((s.attr("strides") or [])[1:-1])
    return got


def _inferred_layout(ex, s, lay, given, shape, strides, itemsize):
    """A static view's layout as ptoas's InferPTOLayout gives it: NZ for the shapes it reads
    as NZ (:func:`~ptopipe.arch.vocab.gm_nz_inferred`: its C++ GlobalTensor is then
    ``Layout::NZ``, which pto-isa moves into NZ tiles only), DN where only DN describes its last
    two dims (``Layout::DN``: a move sees d3 rows of d0*d1*d2*d4 columns, a 3-D view too),
    else ``given`` (None: ND, or a row / column vector whose move's tile decides between ND and
    DN, ``GlobalTensor.layout_for``) - :func:`~ptopipe.arch.vocab.gm_layout_inferred`.  A
    ``{layout = ..}`` that contradicts the shape and strides is ptoas's "layout mismatch"
    refusal, a ParseError at the attribute."""
    if given is None:
        inferred = gm_layout_inferred(shape, strides, itemsize)
        return inferred if inferred is not isa.TileLayout.ND else None
    other = gm_layout_refused(shape, strides, itemsize, given)
    if other is not None:
        raise ex.perr(lay[2], f"the view's layout {given.name} contradicts its shape {list(shape)} and strides "
                              f"{list(strides)}, which ptoas reads as {other.name} (ptoas: \"layout mismatch: "
                              f"user-specified layout={given.name.lower()} but inferred={other.name.lower()}\")",
                      f"write {{layout = #pto.layout<{other.name.lower()}>}} or leave the layout out (ptoas "
                      "infers it), or give the strides of the layout meant")
    return given


def _window_words(s, key: str) -> list:
    """The offsets or sizes of a ``pto.partition_view``: an int each, or the value's token."""
    return [t if t.kind == "value" else int(t.text) for t in (s.attr(key) or [])[1:-1] if t.kind in ("value", "word")]


def h_partition(ex, fr, s):
    vs = s.values()
    v = ex.val(fr, vs[0])
    words = ex.decoded.get(id(s))
    if words is None:
        words = ex.decoded[id(s)] = (_window_words(s, "offsets"), _window_words(s, "sizes"))
    ival = ex.ival
    offs = [t if t.__class__ is int else ival(fr, t) for t in words[0]]
    sizes = [t if t.__class__ is int else ival(fr, t) for t in words[1]]
    if not isinstance(v, View):
        raise ex.perr(vs[0], f"pto.partition_view of {vs[0].text}, which is not a tensor view")
    if len(offs) != len(v.shape) or len(sizes) != len(v.shape):
        raise ex.perr(s.tok, f"pto.partition_view: {len(offs)} offsets and {len(sizes)} sizes for a "
                             f"rank-{len(v.shape)} view", "give one offset and one size per dimension")
    if any(o < 0 or z < 0 for o, z in zip(offs, sizes)):
        raise ex.err(s, f"pto.partition_view of {v.name}: window offsets {offs} sizes {sizes} are "
                        "negative", "offsets and sizes are >= 0")
    if any(o + z > n for o, z, n in zip(offs, sizes, v.shape)):
        # the device does not check a window against its view (pto-isa: target-defined): it
        # reads the memory there, and so does the run - past the argument is still an error
        msg = (f"{ex.where(s)}: pto.partition_view of {v.name}: window offsets {offs} sizes {sizes} "
               f"leave the view's shape {list(v.shape)}; the run, like the device, uses the memory "
               "there (its argument's bounds still hold)")
        ex.warn(msg)
    seen = ex.seen.get(id(s))
    if seen is not None:                # (a window a skippable loop moves: pto_exec.skip)
        seen[0], seen[1] = offs, [n - z for n, z in zip(v.shape, sizes)]
    off = sum(o * st for o, st in zip(offs, v.strides))
    return isa.GlobalTensor(v.ptr + off, tuple(sizes), tuple(v.strides), name=v.name, layout=v.layout)


def tile_of(ex, s, spec: TileSpec, addr, fr):
    vr = spec.v_rows if spec.v_rows is not None else spec.rows
    vc = spec.v_cols if spec.v_cols is not None else spec.cols
    if spec.v_rows is None or spec.v_cols is None:
        vrt, vct = s.attr("valid_row"), s.attr("valid_col")
        if vrt:
            vr = ex.ival(fr, vrt[0])
        if vct:
            vc = ex.ival(fr, vct[0])
    name = s.results[0] if s.results else None
    t = isa.Tile(spec.loc, spec.dtype, spec.rows, spec.cols, blayout=spec.blayout, slayout=spec.slayout,
                 valid_rows=vr, valid_cols=vc, addr=addr, name=name)
    if spec.pad is not None:
        ex.pad_of[id(t)] = spec.pad
    return t


#: ops that declare a tile ptoas gives no storage (the TPOP binds it): ``pto.declare_tile``,
#: and the frontend pops, which ptoas lowers to a ``declare_tile`` + ``pto.tpop``
_DECLARING = ("pto.declare_tile", "pto.tpop_from_aic", "pto.tpop_from_aiv")


def declare_folds(stmts) -> dict:
    """``id(stmt) -> name``: each tile declaration of ``stmts`` (a function body) that ptoas
    folds into an earlier identical one that dominates it, and that one's result.  ptoas's
    ``declare_tile`` is pure and has no operands, so its CSE merges two of one type into one C++
    Tile - two frontend pops of one type too - and a TPOP into the second rebinds the first
    (:func:`ptopipe.isa.pipe.ops._check_repop` warns where a pop is still held then).  A
    ``declare_tile`` with valid-shape operands is not folded."""
    out = {}

    def walk(body, seen):
        seen = dict(seen)                # a region sees its parents' declarations, not its siblings'
        for s in body:
            if s.name in _DECLARING and s.results and (s.name != "pto.declare_tile" or not s.used()):
                ty = s.result_type_text()
                key = re.sub(r"\s+", "", ty) if ty else None
                if key in seen:
                    out[id(s)] = seen[key]
                elif key is not None:
                    seen[key] = s.results[0]
            for region in s.regions:
                for block in region:
                    walk(block.stmts, seen)
    walk(stmts, {})
    return out


def folded(ex, fr, s):
    """The tile an earlier identical declaration made, where ptoas folds ``s`` into it
    (:func:`declare_folds`), else None."""
    folds = ex.folds.get(fr.f.name)
    if folds is None:
        folds = ex.folds[fr.f.name] = declare_folds(fr.f.body)
    name = folds.get(id(s))
    return None if name is None else fr.env.get(name)


def h_alloc(ex, fr, s):
    spec = res_type(ex, s)
    if isinstance(spec, tuple) and spec[0] == "memref":
        spec = spec[1]
        if not isinstance(spec, TileSpec):
            raise ex.perr(s.tok, "memref.alloc in GM is not supported", "pass GM memory as a parameter")
    if not isinstance(spec, TileSpec):
        raise ex.perr(s.tok, f"{s.name} needs a !pto.tile_buf type")
    a = s.attr("addr")
    addr = ex.ival(fr, a[0]) if a else ex.layout.sites.get(id(s))
    if s.name == "pto.declare_tile":
        addr = None
        same = folded(ex, fr, s)
        if same is not None:
            return same
    elif not a and ex.layout.crowded:
        crowded = crowded_error(ex.layout, s, spec, ex.where(s), ex.core.cluster.platform)
        if crowded is not None:
            raise crowded
    return tile_of(ex, s, spec, addr, fr)


def h_alloc_multi(ex, fr, s):
    """``%mb = pto.alloc_multi_tile [valid_row = %r valid_col = %c] [addr = %a] :
    !pto.multi_tile_buf<!pto.tile_buf<...>, count=N>``: N slots of the tile type side by side,
    placed as one buffer (ptoas's PlanMemory never merges its slots), each slot's valid shape
    the operands' (else the type's)."""
    spec = res_type(ex, s)
    if not isinstance(spec, MultiSpec):
        raise ex.perr(s.tok, "pto.alloc_multi_tile needs a !pto.multi_tile_buf<!pto.tile_buf<...>, count=N> type")
    slot = spec.slot
    valid = []
    for key, static in (("valid_row", slot.v_rows), ("valid_col", slot.v_cols)):
        t = s.attr(key)
        if t:
            valid.append(ex.ival(fr, t[0]))
        elif static is not None:
            valid.append(static)
        else:
            raise ex.perr(s.tok, f"pto.alloc_multi_tile of a slot type with a dynamic {key.replace('_', '')[:4]} "
                                 f"needs {key} = %v", f"give {key} = %v, or a static one in the slot type")
    a = s.attr("addr")
    addr = ex.ival(fr, a[0]) if a else ex.layout.sites.get(id(s))
    if addr is None:
        raise ex.err(s, "pto.alloc_multi_tile has no address", "give it addr = %a, or let the run place it")
    return MultiTile(spec, addr, tuple(valid), s.results[0] if s.results else None)


def h_multi_get(ex, fr, s):
    """``%t = pto.multi_tile_get %mb[%i] : <multi type> -> <slot type>``: slot ``i`` of the
    region, a tile of the slot type at slot 0's address plus ``i`` slot strides (``i`` outside
    0..count-1 is an error at the op: the device would address past the region)."""
    vs = s.values()
    mb = ex.val(fr, vs[0]) if vs else None
    if not isinstance(mb, MultiTile) or len(vs) < 2:
        raise ex.perr(s.tok, "pto.multi_tile_get takes a multi-slot region and a slot index: "
                             "%t = pto.multi_tile_get %mb[%i] : <multi type> -> <slot type>")
    i = ex.ival(fr, vs[1])
    spec = mb.spec
    if not 0 <= i < spec.count:
        raise ex.err(s, f"pto.multi_tile_get {mb.name}[{i}]: the region has {spec.count} slots (0..{spec.count - 1})",
                     f"select a slot 0..{spec.count - 1} (pypto writes the loop index modulo the count)")
    tys = s.types()
    if len(tys) >= 2:
        want = ex.prog.types.parse(tys[-1])
        if not isinstance(want, TileSpec) or (want.loc, want.dtype, want.rows, want.cols) != \
                (spec.slot.loc, spec.slot.dtype, spec.slot.rows, spec.slot.cols):
            raise ex.err(s, f"pto.multi_tile_get {mb.name}[{i}]: the result type is not the region's slot type",
                         "give the result the slot's !pto.tile_buf type")
    slot = spec.slot
    t = isa.Tile(slot.loc, slot.dtype, slot.rows, slot.cols, blayout=slot.blayout, slayout=slot.slayout,
                 valid_rows=mb.valid[0], valid_cols=mb.valid[1], addr=mb.addr + i * spec.stride,
                 name=f"{mb.name}[{i}]")
    if slot.pad is not None:
        ex.pad_of[id(t)] = slot.pad
    return t


def h_tassign(ex, fr, s):
    vs = s.values()
    t = ex.val(fr, vs[0])
    isa.TASSIGN(t, ex.ival(fr, vs[1]))
    return t


def h_set_validshape(ex, fr, s):
    vs = s.values()
    t = ex.val(fr, vs[0])
    t.SetValid(ex.ival(fr, vs[1]), ex.ival(fr, vs[2]))


def h_io(ex, fr, s):
    io = ex.decoded.get(id(s))
    if io is None:
        io = ex.decoded[id(s)] = _io_form(ex, s, fr)
    load, src, dst, pre, kw, lay = io
    src, dst = ex.val(fr, src), ex.val(fr, dst)
    if lay is not None:
        if load:
            src = _laid_out(src, lay)
        else:
            dst = _laid_out(dst, lay)
    try:
        if load:
            return isa.TLOAD(dst, src)
        # ptoas's TSTORE<TileData, GlobalData, AtomicType, ReluPreMode>(dst, src[, preQuantScalar])
        if pre:
            kw = dict(kw, pre_quant=ex.ival(fr, pre[0]))
        return isa.TSTORE(dst, src, **kw)
    except MemoryConflictError as e:
        if getattr(e, "argument", None) is not None:        # past its run argument (GlobalTensor)
            _name_the_window(ex, fr, io[1] if load else io[2], e)
        raise


def _name_the_window(ex, fr, tok, e: MemoryConflictError) -> None:
    """Add to ``e`` (a load / store past its argument) the ``pto.partition_view`` that made the
    GM operand ``tok``, with the offsets and sizes it had: where the window was written, the
    access being where it is used."""
    part = next((x for x in fr.f.statements() if x.name == "pto.partition_view" and tok.text in x.results), None)
    if part is None:
        return
    view = fr.env.get(part.values()[0].text) if part.values() else None
    offs, sizes = (_window_words(part, k) for k in ("offsets", "sizes"))
    try:
        offs = [t if t.__class__ is int else ex.ival(fr, t) for t in offs]
        sizes = [t if t.__class__ is int else ex.ival(fr, t) for t in sizes]
    except PtoPipeError:
        return
    shape = f" of a view of shape {list(view.shape)}" if isinstance(view, View) else ""
    e.add_detail(f"its window: the pto.partition_view {tok.text} at {ex.where(part)}, offsets {offs} sizes "
                 f"{sizes}{shape}")


def _io_form(ex, s, fr) -> tuple:
    """What :func:`h_io` reads off a ``pto.tload`` / ``pto.tstore``, once: whether it loads,
    its source's and destination's tokens, a store's pre-quant scalar tokens and keywords, and
    the GM operand's layout its ``{layout = #pto.layout<..>}`` names (None: none), else the NZ
    layout ptoas's InferPTOLayout reads off a static GM ``memref`` parameter of that shape
    (:func:`~ptopipe.arch.vocab.gm_nz_inferred`)."""
    ins, outs = s.group("ins"), s.group("outs")
    if ins is None or outs is None:
        raise ex.perr(s.tok, f"{s.name} needs ins(...) outs(...)")
    src, dst = s.values(ins)[0], s.values(outs)[0]
    lay = s.attr("layout")
    layout = None
    if lay and len(lay) >= 3 and lay[0].text == "#pto.layout":
        layout = _GM_LAYOUT.get(lay[2].text)
        if layout is None:
            raise ex.perr(lay[2], f"{s.name} layout {lay[2].text!r} is not supported", "use #pto.layout<nd>, <dn> or <nz>")
    if layout is None:
        gm = (src if s.name == "pto.tload" else dst).text
        ty = next((ty for name, ty, _ in fr.f.params if name == gm), None)
        if isinstance(ty, tuple) and ty[0] == "memref" and isinstance(ty[1], np.dtype) and None not in ty[2] \
                and gm_nz_inferred(ty[2], row_major_strides(ty[2]), ty[1].itemsize):
            layout = isa.TileLayout.NZ
    if s.name == "pto.tload":
        return True, src, dst, (), {}, layout
    kw = _relu_kwargs(ex, s)
    v = s.attr("atomicType")
    if v:
        kind = read_atomic_type("".join(t.text for t in v))
        if kind is None:
            raise ex.perr(v[0], f"atomicType {' '.join(t.text for t in v)} is not an atomic type",
                          "use #pto<atomic_type atomic_add> (or atomic_none, a plain store)")
        kw["atomic_type"] = kind
    return False, src, dst, s.values(ins)[1:], kw, layout


def _laid_out(gm, layout):
    """The GM operand of a ``pto.tload`` / ``pto.tstore`` whose ``{layout = #pto.layout<..>}``
    says its layout: a GlobalTensor that has none of its own (a GM memref parameter: ptoas's
    GlobalTensor of it takes the op's layout) in that layout; any other operand as it is."""
    if not isinstance(gm, isa.GlobalTensor) or gm.layout is not None:
        return gm
    return isa.GlobalTensor(gm, gm.shape, gm.stride, gm.name, layout=layout)


def _relu_kwargs(ex, s: Stmt) -> dict:
    """``{"relu_mode": ...}`` of an op's ``reluPreMode`` (the fixpipe's ReLU), else ``{}``."""
    v = s.attr("reluPreMode")
    if not v:
        return {}
    m = re.search(r"(no_relu|normal_relu)", "".join(t.text + " " for t in v))
    if m is None:
        raise ex.perr(v[0], f"reluPreMode {' '.join(t.text for t in v)} is not a relu mode",
                      "use #pto<relu_pre_mode no_relu> or normal_relu")
    return {"relu_mode": ReluPreMode.NormalRelu if m.group(1) == "normal_relu" else ReluPreMode.NoRelu}


_FP_OPS = ("TMOV_FP", "TEXTRACT_FP", "TINSERT_FP", "TSTORE_FP")


def _tmov_form(ex, s: Stmt, srcs: list) -> str:
    """The instruction a ``pto.tmov`` is: with a Scaling (fp) tile after its source, TMOV_FP
    (ptoas lowers it so); with a scalar there (ptoas's generic form ``"pto.tmov"(%src, %dst,
    %pre)``), TMOV with that pre-quant word, which :func:`_tmov_scalar` takes out of
    ``srcs``; else TMOV.  The ReLU (``reluPreMode``) is a keyword of either
    (:func:`_attr_kwargs`)."""
    if len(srcs) > 1:
        if isinstance(srcs[1], isa.Tile):
            if srcs[1].loc is isa.TileType.Scaling:
                return "TMOV_FP"
            raise ex.perr(s.tok, f"pto.tmov's second operand is {srcs[1].describe()}: ptoas takes an fp tile "
                                 "(loc=scaling) or a pre-quant scalar (i64) there",
                          "pass the quantisation words as a loc=scaling tile, or one word as an i64")
    return "TMOV"


def _generic_tmov(ex, s: Stmt) -> tuple:
    """``(ins, outs)`` value tokens of ``"pto.tmov"(%src, %dst, [%fp], [%pre]) <{operandSegmentSizes
    = array<i32: 1, 1, f, p>}>``, MLIR's generic form (the operand order of ptoas's TMovOp:
    src, dst, fp, preQuantScalar)."""
    segs = [int(n) for n in re.findall(r"\d+", "".join(t.text + " " for t in s.attr("operandSegmentSizes"))
                                                 .split(":", 1)[-1])]
    vals = s.values()
    if len(segs) != 4 or segs[:2] != [1, 1] or sum(segs) != len(vals):
        raise ex.perr(s.tok, f"{s.name}'s operandSegmentSizes {segs} do not give its {len(vals)} operands as "
                             "src, dst, fp, preQuantScalar", "write the op as ptoas prints it")
    return [vals[0]] + vals[2:], [vals[1]]


def _tmov_scalar(ex, s: Stmt, srcs: list) -> dict:
    """``{"pre_quant": word}`` of a TMOV with a pre-quant scalar after its source (removed
    from ``srcs``: pto-isa's ``TMOV(dst, src, preQuantScalar)``), else ``{}``."""
    if len(srcs) < 2 or isinstance(srcs[1], isa.Tile):
        return {}
    word = srcs.pop(1)
    if isinstance(word, bool) or not isinstance(word, (int, np.integer)):
        raise ex.perr(s.tok, f"pto.tmov's pre-quant scalar is {word!r}, not an integer",
                      "pass the quantisation word as an i64 value")
    return {"pre_quant": int(word)}


def _attr_kwargs(ex, s: Stmt, name: str | None = None) -> dict:
    """Op attributes a catalogue instruction takes as keywords (``maskPattern``, ``cmpMode``,
    ``isMSB``, ``upperOrLower``, ``descending``, ``rounds``)."""
    out = {}
    v = s.attr("isMSB")                       # THISTOGRAM: the source's upper byte, or byte 0
    if v and v[0].text == "false":
        out["byte"] = HistByte.BYTE_0
    for key in ("cmpMode", "cmp_mode"):
        v = s.attr(key)
        if v:
            m = re.search(r"(?:cmp\s*)?(\w+)>$", "".join(t.text + " " for t in v).strip().replace(" >", ">"))
            try:
                out["mode"] = CmpMode[m.group(1).upper()]
            except (AttributeError, KeyError):
                raise ex.perr(v[0], f"{key} {' '.join(t.text for t in v)} is not a compare mode",
                              "use eq, ne, lt, le, gt or ge") from None
    v = s.attr("offset") if s.name == "pto.tgather" else None    # compare form: the first index
    if v:
        out["offset"] = int(v[0].text)
    v = s.attr("upperOrLower") if s.name == "pto.ttri" else None     # 1: the upper triangle
    if v:
        out["upper_or_lower"] = int(v[0].text)
    v = s.attr("descending") if s.name == "pto.tci" else None       # start, start - 1, ...
    if v:
        try:                                    # (read as the static reader reads it)
            out["descending"] = bool(ISA_ATTR_SPELLING["descending"][2]("", v[0].text))
        except KeyError:
            raise ex.perr(v[0], f"descending {v[0].text} is not a boolean", "use descending = true or false") from None
    v = s.attr("rounds") if s.name == "pto.trandom" else None        # Philox rounds (default 10)
    if v:
        try:
            out["rounds"] = int(v[0].text)
        except ValueError:
            raise ex.perr(v[0], f"rounds {v[0].text} is not an integer", "use rounds = 7 : i32 or 10 : i32") from None
    v = s.attr("exhausted") if s.name == "pto.tmrgsort" else None    # stop when a list runs out
    if v:
        out["exhausted"] = v[0].text == "true"
    if name in _FP_OPS or name == "TMOV":      # the fixpipe's ReLU
        out.update(_relu_kwargs(ex, s))
    if name in ("MGATHER", "MSCATTER"):        # gatherOob / scatterAtomicOp / scatterOob
        for key, (mnemonic, enum, kw) in INDEXED_ATTRS.items():
            v = s.attr(key)
            if not v:
                continue
            text = " ".join(t.text for t in v)
            member = read_indexed_attr(key, text)
            if member is None:
                raise ex.perr(v[0], f"{key} {text} is not {'an' if enum.__name__[0] in 'AEIOU' else 'a'} "
                                    f"{enum.__name__}", f"use #pto<{mnemonic} "
                                                        f"{'|'.join(m.name.lower() for m in enum)}>")
            out[kw] = member
    v = s.attr("maskPattern")
    if v:
        ins = s.group("ins") or []
        brace = next((k for k, t in enumerate(ins) if t.text == "{"), None)
        if brace and ins[brace - 1].text != ",":
            raise ex.perr(ins[brace], f"{s.name}'s maskPattern follows its source after a comma: ptoas refuses it "
                                      f"without one (custom op '{s.name}' expected ',' after src operand in ins(...))",
                          "write ins(%src, {maskPattern = #pto.mask_pattern<P0101>} : type)")
        m = re.search(r"<(\w+)>", "".join(t.text for t in v))
        try:
            out["mask_pattern"] = MaskPattern[m.group(1)]
        except (AttributeError, KeyError):
            raise ex.perr(v[0], f"maskPattern {''.join(t.text for t in v)} is not a mask pattern") from None
    return out


def _attr_args(ex, s: Stmt) -> list:
    """Op attributes a catalogue instruction takes after its operands (rounding mode; a
    tcvt's saturation mode)."""
    out = []
    for key in ("rmode", "round_mode", "mode"):
        v = s.attr(key)
        if v:
            text = re.sub(r"\s*([<>])\s*", r"\1", " ".join(t.text for t in v))
            words = [t for t in v if re.fullmatch(r"\w+", t.text)]
            rm = ROUND.get(words[-1].text) if words else None
            if rm is None:
                raise ex.perr(words[-1] if words else v[0], f"{key} {text} is not a round mode ptoas reads: its RoundMode is one of "
                                    f"{', '.join(ROUND)} (ptoas: \"expected ::mlir::pto::RoundMode to be one "
                                    "of: ...\")", "write #pto<round_mode CAST_RINT> (to nearest, ties to even; "
                                    "RINT is the same), or another of those words")
            out.append(rm)
    v = s.attr("sat_mode") if s.name == "pto.tcvt" else None       # #pto<saturation_mode ON|OFF>
    if v:
        m = re.search(r"saturation_mode\s+(ON|OFF)\b", " ".join(t.text for t in v))
        if m is None:
            raise ex.perr(v[0], f"sat_mode {' '.join(t.text for t in v)} is not a saturation mode",
                          "use #pto<saturation_mode ON> or #pto<saturation_mode OFF>")
        if not out:                 # pto-isa's TCVT takes the saturation mode after a RoundMode
            out.append(isa.RoundMode.CAST_RINT)
        out.append(isa.SaturationMode[m.group(1)])
    return out


def _is_binary(ex, s: Stmt) -> bool:
    """``pto.tcolsum ins(%src, %tmp {isBinary = true} : ...)``: pto-isa's TCOLSUM(dst, src, tmp,
    isBinary) - the sum pairwise through tmp or row by row (ptoas's default: false)."""
    v = s.attr("isBinary")
    if not v:
        return False
    word = "".join(t.text for t in v)
    if word not in ("true", "false"):
        raise ex.perr(v[0], f"isBinary {word} is not a bool", "write {isBinary = true} or {isBinary = false}")
    return word == "true"


#: catalogue instructions whose pto-isa argument order is not outs(...) then ins(...): their
#: operands from (outs, ins) - two destinations each
CPP_ORDER = {
    "TINTERLEAVE": lambda o, i: [o[1], o[0], *reversed(i)],      # (dst1, dst0, src1, src0)
    "TDEINTERLEAVE": lambda o, i: [o[1], o[0], *reversed(i)],    # (dst1, dst0, src1, src0 | src)
    "TPARTARGMAX": lambda o, i: [o[0], *i[:2], o[1], *i[2:]],    # (dstVal, src0Val, src1Val,
    "TPARTARGMIN": lambda o, i: [o[0], *i[:2], o[1], *i[2:]],    #  dstIdx, src0Idx, src1Idx)
    "TGATHER": lambda o, i: [o[0], *i[:2], o[1], *i[2:]],        # compare form: (dst, src, kValue,
                                                                 #  cdst, tmp)
    "TMRGSORT": lambda o, i: [o[0], o[1], i[-1], *i[:-1]],       # (dst, executed, tmp, src0, ...)
}


#: operands (destination included) the ISA instruction of a catalogue form takes; a .pto op
#: may add pto-isa scratch tiles after them (``pto.trsqrt ins(%src, %tmp)``), which the
#: simulator does not need - except the scratch tile ptoas passes on to the instruction
#: (:data:`SCRATCH`: ``TREM(dst, src0, src1, tmp)``), whose size and overlap pto-isa's code
#: depends on: the ISA checks it as it checks the C++ instruction's
SCRATCH = frozenset(SCRATCH_REQUIRED + SCRATCH_OPTIONAL)
ARITY = {"binary": 3, "scalar": 3, "unary": 2, "col_reduce": 2, "row_expand": 3, "row_bcast": 2,
         "fill": 2, "convert": 2, "matmul": 3, "matmul_acc": 4, "matmul_bias": 4, "move": 2}


def _ins_type(ins, k: int) -> str | None:
    """The text of the ``k``-th type of an ``ins(... : types)`` group, else None."""
    parts = split_top(ins or [], (":",))
    types = split_top(parts[-1]) if len(parts) > 1 else []
    return "".join(t.text for t in types[k]) if len(types) > k else None


def _expands_scalar_type(ex, s, ins, dst) -> None:
    """``pto.texpands``'s scalar has the destination's element type exactly (ptoas: "expects
    scalar type == dst element type"; an i32 scalar does not fill a ui32 tile there)."""
    ty = _ins_type(ins, 0)
    if ty is not None and ty in ELEMENT and isinstance(dst, isa.Tile) and ELEMENT[ty] != dst.dtype:
        want = next(k for k, v in ELEMENT.items() if v == dst.dtype)
        raise ParseError(f"pto.texpands of a {want} tile with a {ty} scalar: ptoas refuses it ('pto.texpands' op "
                         "expects scalar type == dst element type)", where=ex.where(s),
                         fix=f"give the scalar as {want}")


def _lrelu_slope_type(ex, s, ins) -> None:
    """``pto.tlrelu``'s slope is an f32 whatever the tiles' element type (ptoas's op definition:
    "operand #1 must be 32-bit float"): another type is a ParseError at the op."""
    ty = _ins_type(ins, 1)
    if ty is not None:
        if ty != "f32":
            raise ParseError(f"pto.tlrelu's slope is {ty}: ptoas refuses it ('pto.tlrelu' op operand #1 must be "
                             f"32-bit float, but got '{ty}')", where=ex.where(s),
                             fix="give the slope as an f32 scalar (also for f16 tiles)")


class _Form:
    """What :func:`op_catalogue` reads off a statement, once: its instruction, its operands'
    tokens, the attributes it passes (a TMOV's keywords depend on its form, known when it
    runs: kept per form)."""
    __slots__ = ("name", "outs", "ins", "ins_group", "attr_args", "kw", "layouts_seen", "arch_verified")

    def __init__(self, ex, s):
        self.name = catalogue_name(s.name)
        ins, outs = s.group("ins"), s.group("outs")
        if outs is None and ins is None and self.name == "TMOV" and s.attr("operandSegmentSizes"):
            ins, outs = _generic_tmov(ex, s)
        if outs is None:
            raise ex.perr(s.tok, f"{s.name} needs outs(...)", "write pto.tX ins(...) outs(%dst : type)")
        self.ins_group = ins
        self.outs, self.ins = s.values(outs), (s.values(ins) if ins else [])
        refused = missing_scratch_refusal(s.name, len(self.ins))
        if refused:
            raise ex.perr(s.tok, *refused)
        if s.name in ROW_REDUCTIONS or s.name in FILL_PADS:
            _ptoas_dst(ex, s)
        if s.name in NUMBER_SCALAR_OPS:
            _number_scalar(ex, s, ins)
        if s.name in PTOAS_DISTINCT_OPERANDS and not _memref_operand(ins, outs):
            refused = ptoas_storage_refusal(s.name, ex.core.cluster.platform.name,
                                            [t.text for t in self.ins], [t.text for t in self.outs])
            if refused:
                raise ex.perr(self.outs[0], *refused)
        if s.name == "pto.tgather" and len(self.outs) == 1 and len(self.ins) == 2 and not s.attr("maskPattern"):
            raise ex.perr(s.tok, "pto.tgather's index form without its tmp: ptoas refuses it ('pto.tgather' op "
                                 "index-form tgather expects both indices and tmp)",
                          "pass a scratch tile of the indices' type after them: ins(%src, %indices, %tmp : ...)")
        self.attr_args = _attr_args(ex, s)
        if s.name == "pto.tcolsum" and len(self.ins) == 2:
            self.attr_args.insert(0, _is_binary(ex, s))
        self.kw = {}
        self.layouts_seen = False
        self.arch_verified = not _memref_operand(ins, outs)

    def kwargs(self, ex, s, name: str) -> dict:
        kw = self.kw.get(name)
        if kw is None:
            kw = self.kw[name] = _attr_kwargs(ex, s, name)
        return kw


def _memref_operand(ins, outs) -> bool:
    """Does an operand of the op (its ``ins`` / ``outs`` token groups) have a memref type?  ptoas
    then skips the op's per-architecture verifier (PTO.cpp ``shouldBypassDecodedMemrefVerifier``):
    its location, element-type, layout and A5 scratch rules refuse only ``!pto.tile_buf`` forms."""
    return any(t.text == "memref" for group in (ins or (), outs or ()) for t in group)


#: the (blayout, slayout) ptoas's A5 verifier takes for a matmul's operands, by tile location
#: (PTOAS ``verifyMatTileOperandsA5``: "expects lhs to use the col_major blayout on A5", ...) - the
#: fractals the Cube reads (pto-isa's TMATMUL refuses any other); a type that names none has
#: row_major / none_box (``pto_syntax.SHORT_FORM_LAYOUT``); an A5 Left tile's blayout is col_major
#: whatever its type says (PTOAS PTOTypeDefs.cpp ``resolveTileBufBLayout``)
_A5_MATMUL_LAYOUT = {isa.TileType.Left: ("lhs", isa.BLayout.ColMajor, isa.SLayout.RowMajor),
                     isa.TileType.Right: ("rhs", isa.BLayout.RowMajor, isa.SLayout.ColMajor),
                     isa.TileType.Acc: ("dst", isa.BLayout.ColMajor, isa.SLayout.RowMajor)}
_LAYOUT_WORD = {isa.BLayout.RowMajor: "row_major", isa.BLayout.ColMajor: "col_major",
                isa.SLayout.RowMajor: "row_major", isa.SLayout.ColMajor: "col_major",
                isa.SLayout.NoneBox: "none_box"}


def _a5_matmul_layouts(ex, s) -> None:
    """A ParseError at an A5 matmul whose Left / Right / Acc tile type has a layout ptoas's
    verifier refuses there (the Cube reads none of them: the run could not go on either)."""
    for g in ("ins", "outs"):
        toks = s.group(g) or []
        colon = next((i for i, t in enumerate(toks) if t.text == ":"), None)
        for ty in split_top(toks[colon + 1:]) if colon is not None else ():
            try:
                spec = ex.prog.types.parse(ty)
            except PtoPipeError:             # (the op reports a bad type where it uses it)
                continue
            want = _A5_MATMUL_LAYOUT.get(getattr(spec, "loc", None))
            if want is None:
                continue
            role, b, sl = want
            got_b = isa.BLayout.ColMajor if spec.loc is isa.TileType.Left else spec.blayout
            wrong = [(kind, got, need) for kind, got, need in (("blayout", got_b, b), ("slayout", spec.slayout, sl))
                     if got is not need]
            if wrong:
                kind, got, need = wrong[0]
                loc = spec.loc.name.lower()
                keys = ", ".join(f"{k}={_LAYOUT_WORD[n]}" for k, _, n in wrong)
                raise ParseError(f"ptoas refuses this {s.name} on A5 (\"expects {role} to use the {_LAYOUT_WORD[need]} "
                                 f"{kind} on A5\"): its {loc} tile's {kind} is {_LAYOUT_WORD[got]}, and the Cube reads "
                                 f"{loc} tiles in {_LAYOUT_WORD[b]} / {_LAYOUT_WORD[sl]} fractals only",
                                 where=ex.where(s),
                                 fix=f"declare the {loc} tile with {keys} (a tile_buf that names no blayout / slayout "
                                     "is row_major / none_box to ptoas)")


def op_catalogue(ex, fr, s):
    """``pto.tX ins(srcs...) outs(dsts...)`` -> ``isa.TX(*dsts, *srcs, *attrs)``."""
    form = ex.decoded.get(id(s))
    if form is None:
        form = ex.decoded[id(s)] = _Form(ex, s)
    val = ex.val
    dsts = [val(fr, t) for t in form.outs]
    dsts = [d.executed() if isinstance(d, Elements) else d for d in dsts]   # TMRGSORT's counts
    srcs = [val(fr, t) for t in form.ins]
    name, more = form.name, {}
    if name == "TMOV":
        name = _tmov_form(ex, s, srcs)
        more = _tmov_scalar(ex, s, srcs) if name == "TMOV" else {}
    if form.arch_verified:
        _ptoas_arch_rules(ex, s, srcs, dsts)
    if s.name == "pto.tci":
        _tci_start_type(ex, s, form.ins_group, dsts[0])
    elif s.name == "pto.tlrelu":
        _lrelu_slope_type(ex, s, form.ins_group)
    elif s.name == "pto.texpands":
        _expands_scalar_type(ex, s, form.ins_group, dsts[0])
    elif s.name == "pto.tquant":
        more = {"quant_type": _quant_type(ex, s, srcs, dsts)}
    if not form.layouts_seen:
        form.layouts_seen = True
        if name.startswith(("TMATMUL", "TGEMV")) and ex.core.cluster.platform.name == "a5" and form.arch_verified:
            _a5_matmul_layouts(ex, s)
    if name in ("MGATHER", "MSCATTER"):
        more = _indexed_coalesce(ex, s, form, name, dsts, srcs)
    order = CPP_ORDER.get(name)
    operands = dsts + srcs if order is None or len(dsts) != 2 else order(dsts, srcs)
    op = CATALOGUE[name]
    n = ARITY.get(op.form)
    if n is not None and len(operands) > n and s.name not in SCRATCH:
        extra = operands[n:]
        if all(isinstance(x, isa.Tile) for x in extra):
            operands = operands[:n]
        elif order is None and len(dsts) < n:
            # (a value there would reach the instruction as a wait event: "TSYNC expects Event tokens")
            k = n - len(dsts)
            raise ex.perr(form.ins[k], f"{s.name} takes {k} operand(s) in ins(...), got {len(form.ins)}: "
                                       f"{form.ins[k].text} is one too many (ptoas: \"expected ':'\")",
                          f"remove {form.ins[k].text} and its type")
    if op.form == "scalar" and len(operands) == 3 and not isinstance(operands[1], isa.Tile) \
            and isinstance(operands[2], isa.Tile):
        return _scalar_first(ex, s, name, *operands)
    if name.startswith("TFILLPAD") and id(operands[0]) in ex.pad_of:
        operands.append(ex.pad_of[id(operands[0])])     # pto-isa: the destination type's PadValue
    return getattr(isa, name)(*operands, *form.attr_args, **form.kwargs(ex, s, name), **more)


def _indexed_coalesce(ex, s, form, name: str, dsts, srcs) -> dict:
    """``{"coalesce": ...}`` of a ``pto.mgather ins(%mem, %idx) outs(%dst)`` / ``pto.mscatter ins(%src,
    %idx) outs(%mem)``: the Coalesce its tiles' shapes mean (:func:`~ptopipe.codegen.pto_syntax.indexed_coalesce`),
    after the rules of ptoas's verifier (PTO.cpp MGatherOp / MScatterOp::verify, skipped for memref
    operands as ptoas skips them): A5 only, an i32 index tile of the data's rows."""
    if len(dsts) != 1 or len(srcs) != 2:
        spelled = "ins(%mem, %idx) outs(%dst)" if name == "MGATHER" else "ins(%src, %idx) outs(%mem)"
        raise ex.perr(s.tok, f"{s.name} takes {spelled}, got {len(srcs)} in ins and {len(dsts)} in outs",
                      "write the op as ptoas prints it")
    data, idx = (dsts[0], srcs[1]) if name == "MGATHER" else (srcs[0], srcs[1])
    role = "dst" if name == "MGATHER" else "src"
    if not (isinstance(data, isa.Tile) and isinstance(idx, isa.Tile)):
        raise ex.perr(s.tok, f"{s.name}'s {role} and idx are tile buffers (its GM operand is the table)",
                      f"pass the table as a pto.partition_view and the {role} and the indices as tiles")
    if form.arch_verified:
        refused = None
        if ex.core.cluster.platform.name != "a5":
            refused = (f"{s.name} is only supported on A5 targets", f"run the file on A5 (pto.target_arch = \"a5\"); "
                       f"pto-isa's C++ {name} runs on A2A3 too")
        elif idx.dtype != np.dtype(np.int32):
            refused = ("expects idx element type to be signless i32", "declare the index tile i32")
        elif idx.rows != data.rows:
            refused = (f"expects {role} and idx static row dimensions to match",
                       f"give the index tile the {role}'s rows")
        elif indexed_coalesce(data.cols, idx.cols) is None:
            refused = (f"expects idx cols to be 1 or equal to {role} cols",
                       f"give the index tile {data.cols} columns (one index per element) or 1 (one per row)")
        if refused:
            raise ParseError(f"ptoas refuses this {s.name} ('{s.name}' op {refused[0]})", where=ex.where(s),
                             fix=refused[1])
    coalesce = indexed_coalesce(data.cols, idx.cols)
    if coalesce is None:
        raise ex.perr(s.tok, f"{s.name}: the index tile has {idx.cols} columns, neither the {role}'s {data.cols} (one "
                             "index per element) nor 1 (one per row)", "give the index tile one of those widths")
    modes = [k for k in INDEXED_ATTRS if s.attr(k)]
    if modes:
        ex.warn(f"{ex.where(s)}: ptoas 0.27 drops {s.name}'s {' and '.join(modes)} (its PTOViewToMemref pass rebuilds "
                f"the op without its attributes): the C++ it writes calls {name} without them - the Undefined "
                f"out-of-bounds mode{'' if name == 'MGATHER' else ' and no atomic op'} on the device; ptopipe runs the "
                "op as the file writes it")
    return {"coalesce": coalesce}


def _ptoas_arch_rules(ex, s, srcs, dsts) -> None:
    """A ParseError at an op of ``!pto.tile_buf`` operands that ptoas's verifier for the run's
    architecture refuses: a scratch tile on A5 where it takes none, an element type
    (:data:`PTOAS_ELEMENT_TYPES`), a source / destination location or layout
    (:data:`PTOAS_LOCATIONS`), a Vec tile not row-major where ptoas takes row-major ones only
    (:data:`PTOAS_ROW_MAJOR`)."""
    platform = ex.core.cluster.platform.name
    if s.name in SCRATCH_A2A3_ONLY and len(srcs) > 2 and platform == "a5":
        what, fix = a5_scratch_refusal(s.name)
        raise ParseError(what, where=ex.where(s), fix=fix)
    if s.name in PTOAS_ELEMENT_TYPES:
        t = next((x for x in srcs + dsts if isinstance(x, isa.Tile)), None)
        refused = t is not None and ptoas_element_refusal(s.name, platform, t.dtype)
        if refused:
            raise ParseError(refused[0], where=ex.where(s), fix=refused[1])
    if s.name in PTOAS_ROW_MAJOR and dsts:
        refused = ptoas_row_major_refusal(s.name, platform, srcs, dsts[0])
        if refused:
            raise ParseError(refused[0], where=ex.where(s), fix=refused[1])
    if s.name in PTOAS_LOCATIONS and srcs and dsts and isinstance(srcs[0], isa.Tile) and isinstance(dsts[0], isa.Tile):
        refused = ptoas_location_refusal(s.name, platform, srcs[0], dsts[0])
        if refused:
            raise ParseError(refused[0], where=ex.where(s), fix=refused[1])


def _number_scalar(ex, s, ins) -> None:
    """A ParseError at a tile-scalar op whose scalar is declared ``index``: ptoas's operand is a
    number (:data:`NUMBER_SCALAR_OPS`; "operand #1 must be numeric (integer/float), but got
    'index'") - cast it first, as ptopipe's writer does; and at a :data:`FLOAT_SCALAR_OPS` op
    whose scalar is not a float, which ptoas 0.27 does not lower."""
    parts = split_top(ins or [], (":",))
    for k, ty in enumerate(split_top(parts[-1]) if len(parts) > 1 else []):
        if len(ty) == 1 and ty[0].text == "index":
            if s.name in FLOAT_SCALAR_OPS:
                raise ex.perr(ty[0], *float_scalar_refusal(s.name, "index"))
            raise ex.perr(ty[0], f"{s.name}'s scalar is an index: ptoas refuses it ('{s.name}' op operand #{k} must "
                                 "be numeric (integer/float), but got 'index')",
                          "cast it first: %n = arith.index_cast %i : index to i32 (the tile's integer type; an "
                          "integer scalar of a float tile converts)")
        if len(ty) == 1 and ty[0].kind == "word" and k > 0:
            refused = float_scalar_refusal(s.name, ty[0].text)
            if refused:
                raise ex.perr(ty[0], *refused)


def _ptoas_dst(ex, s) -> None:
    """A ParseError at an op whose ``outs`` tile type ptoas's verifier refuses for it
    (:func:`ptoas_dst_refusal`: a row reduction into more than one column, a pad without a pad
    value)."""
    parts = split_top(s.group("outs") or [], (":",))
    types = split_top(parts[-1]) if len(parts) > 1 else []
    spec = ex.prog.types.parse(types[0]) if types else None
    if isinstance(spec, TileSpec):
        refused = ptoas_dst_refusal(s.name, spec.v_cols, spec.pad)
        if refused:
            raise ParseError(refused[0], where=ex.where(s), fix=refused[1])


def _quant_type(ex, s, srcs, dsts) -> isa.QuantType:
    """The ``quant_type`` of ``pto.tquant ins(%src, %scale[, %offset]) outs(%dst) {quant_type =
    #pto<quant_type INT8_SYM | INT8_ASYM>}`` as the ISA's TQUANT takes it; a ParseError at the op
    where ptoas refuses it: the attribute missing or of another value, or a destination element
    type or offset operand the quant type does not take (:func:`ptoas_quant_refusal`)."""
    v = s.attr("quant_type")
    if not v:
        raise ex.perr(s.tok, "pto.tquant without its quant_type: ptoas refuses it ('pto.tquant' op requires "
                             "attribute 'quant_type')",
                      "write {quant_type = #pto<quant_type INT8_SYM>} (i8, no offset) or INT8_ASYM (ui8, with "
                      "an offset tile) after outs(...)")
    text = " ".join(t.text for t in v)
    m = re.search(r"(\w+)\s*>$", text)
    if m is None or m.group(1) not in PTOAS_QUANT_TYPES:
        raise ex.perr(v[0], f"quant_type {text} is not a quant type ptoas knows",
                      f"use #pto<quant_type {' | '.join(PTOAS_QUANT_TYPES)}>")
    if dsts and isinstance(dsts[0], isa.Tile):
        refused = ptoas_quant_refusal(m.group(1), dsts[0].dtype, len(srcs) > 2)
        if refused:
            raise ParseError(refused[0], where=ex.where(s), fix=refused[1])
    return isa.QuantType[m.group(1)]


def _tci_start_type(ex, s, ins, dst) -> None:
    """``pto.tci ins(%s : i16) outs(<i32 tile>)``: the start's declared integer type must be the
    destination's element type (ptoas's TCI verifier; pto-isa's TCI CheckValid static_asserts
    "TCI expect src and dst same datatype").  An ``index`` start is the writer's cast."""
    words = [t for t in ins or [] if t.kind == "word" and re.fullmatch(r"u?i\d+", t.text)]
    if not words or not isinstance(dst, isa.Tile):
        return
    declared = words[0].text.replace("ui", "u")
    have = short_name(dst.dtype)
    if declared != have:
        raise ex.perr(words[0], f"pto.tci: the start is {words[0].text} but the destination holds {dst.dtype.name}; "
                                "pto-isa's TCI takes a start of the tile's element type",
                      f"declare the start {have.replace('u', 'ui') if have.startswith('u') else have}")


#: scalar-first forms ``s op tile`` of the catalogue's scalar ops: the tile op that gives
#: them once the destination holds the scalar (``TDIVS(dst, s, src)``: dst = s / src)
_SCALAR_FIRST = {"TDIVS": "TDIV", "TSUBS": "TSUB", "TADDS": "TADD", "TMULS": "TMUL",
                 "TMAXS": "TMAX", "TMINS": "TMIN"}


def _scalar_first(ex, s, name, dst, scalar, src):
    """``pto.tdivs ins(%s, %tile)``: dst = scalar / tile, as the destination filled with the
    scalar, then the tile op (exact: the scalar is a value of the tile's dtype)."""
    if name not in _SCALAR_FIRST:
        raise ex.perr(s.tok, f"{s.name} with the scalar first is not supported",
                      f"write {s.name} ins(%tile, %scalar)")
    if dst is src:
        raise ex.err(s, f"{s.name} scalar-first in place (the destination is the source)",
                     "write the result to another tile")
    if name in ISA_SCALAR_FIRST:     # the ISA has the form (integer TDIVS divides toward zero)
        return getattr(isa, name)(dst, scalar, src)
    isa.TEXPANDS(dst, scalar)
    return getattr(isa, _SCALAR_FIRST[name])(dst, dst, src)


def h_addptr(ex, fr, s):
    """``%q = pto.addptr %p, %n``: the GM pointer ``n`` elements on (bounded by its tensor)."""
    vs = s.values()
    base = ex.val(fr, vs[0])
    ptr = base.data() if isinstance(base, isa.GlobalTensor) else base
    return ptr + ex.ival(fr, vs[1])


def _colon_list(ex, fr, s, key):
    """``key: [%a, 4, ...]`` of ``memref.reinterpret_cast`` -> the integers."""
    toks = s.toks
    for i, t in enumerate(toks[:-2]):
        if t.text == key and toks[i + 1].text == ":" and toks[i + 2].text == "[":
            out, j = [], i + 3
            while toks[j].text != "]":
                if toks[j].kind == "value":
                    out.append(ex.ival(fr, toks[j]))
                elif toks[j].kind == "word":
                    out.append(int(toks[j].text))
                j += 1
            return out
    raise ex.perr(s.tok, f"{s.name} needs {key}: [...]")


def h_reinterpret(ex, fr, s):
    """``memref.reinterpret_cast %m to offset: [o], sizes: [...], strides: [...]``: a GM
    window of the memref's tensor (elements from its base), as a partition view is."""
    base = ex.val(fr, s.values()[0])
    if not isinstance(base, isa.GlobalTensor):
        raise ex.perr(s.tok, "memref.reinterpret_cast of a tile is not supported (GM memrefs only)")
    (off,), sizes, strides = (_colon_list(ex, fr, s, k) for k in ("offset", "sizes", "strides"))
    return isa.GlobalTensor(base.data() + off, tuple(sizes), tuple(strides), name=base.name)


def h_bind_tile(ex, fr, s):
    """``%v = pto.bind_tile %buf, %rows, %cols {config}``: the buffer as a tile whose valid
    region is rows x cols (the same bytes)."""
    vs = s.values()
    src = ex.val(fr, vs[0])
    t = isa.Tile(src.loc, src.dtype, src.rows, src.cols, layout=src.layout, addr=src.addr,
                 name=s.results[0] if s.results else None)
    if len(vs) >= 3:
        t.SetValid(ex.ival(fr, vs[1]), ex.ival(fr, vs[2]))
    return t


def h_subset(ex, fr, s):
    """``%v = pto.subset %src[%r, %c] sizes [R, C] : <src type>``: an R x C tile of src's type at
    src's address plus the offset's elements, as ptoas lowers it (a contiguous tile there:
    ``r * cols + c`` for a row-major source, ``c * rows + r`` for a column-major one; a boxed
    (fractal) source keeps its full rows or columns, as ptoas's verifier requires).  The valid
    region is the part of src's valid one the window covers (ptoas's rule: min(size, valid -
    offset mod valid) per dimension)."""
    vs = s.values()
    src = ex.val(fr, vs[0]) if vs else None
    if not isinstance(src, isa.Tile):
        raise ex.perr(s.tok, "pto.subset takes a tile: %v = pto.subset %tile[%r, %c] sizes [R, C] : type")
    toks = s.toks
    at = next((i for i, t in enumerate(toks) if t.text == "sizes"), None)
    sizes = [int(t.text) for t in toks[at + 1:] if t.kind == "word" and t.text.isdigit()][:2] if at else []
    offs = [ex.ival(fr, t) for t in vs[1:3]]
    if len(sizes) != 2 or len(offs) != 2:
        raise ex.perr(s.tok, "pto.subset needs two offsets and two sizes: %tile[%r, %c] sizes [R, C]")
    (r, c), (rows, cols) = offs, sizes
    layout = src.layout
    if r < 0 or c < 0 or r + rows > src.rows or c + cols > src.cols:
        raise ex.err(s, f"pto.subset {rows}x{cols} at ({r}, {c}) leaves {src.describe()}",
                     "keep the window inside the source's static shape")
    col_major = layout.blayout is isa.BLayout.ColMajor
    if layout.fractal and (rows != src.rows if col_major else cols != src.cols):
        raise ex.err(s, f"pto.subset of the {layout.name} tile {src.describe()}: a boxed "
                        f"{'column' if col_major else 'row'}-major subset keeps its full "
                        f"{'rows' if col_major else 'columns'}", "take whole rows / columns of it")
    if not layout.fractal and ((cols < src.cols and rows > 1) if not col_major else (rows < src.rows and cols > 1)):
        _strideless_subset(ex, s, src, rows, cols, col_major)
    off = c * src.rows + r if col_major else r * src.cols + c
    vr = max(0, min(rows, src.valid_rows - r % src.valid_rows)) if src.valid_rows else 0
    vc = max(0, min(cols, src.valid_cols - c % src.valid_cols)) if src.valid_cols else 0
    return isa.Tile(src.loc, src.dtype, rows, cols, layout=layout, valid_rows=vr, valid_cols=vc,
                    addr=src.addr + off * src.item, name=s.results[0] if s.results else None)


def _strideless_subset(ex, s, src, rows: int, cols: int, col_major: bool) -> None:
    """A warning at a ``pto.subset`` that takes part of the rows of a row-major tile (part of
    the columns of a column-major one) and more than one row (column): ptoas 0.27's C++ for it
    is a ``Tile<.., rows, cols, ..>`` at the window's first element, whose rows are its own
    ``cols`` elements apart (pto-isa's RowStride), not the source's - the window PTOAS's IR
    manual describes ("a strided view") is not what the device computes on, past its first row
    (column).  The run computes what that C++ computes."""
    if col_major:
        what, n, whole = "rows of the column-major", src.rows, f"sizes [{src.rows}, C]"
        part = f"its columns {rows} elements apart (its own rows), not the source's {src.rows}"
    else:
        what, n, whole = "columns of the row-major", src.cols, f"sizes [R, {src.cols}]"
        part = f"its rows {cols} elements apart (its own columns), not the source's {src.cols}"
    ex.warn(f"{ex.where(s)}: pto.subset {rows}x{cols} takes {cols if not col_major else rows} of the {n} {what} "
            f"tile {src.describe()}: ptoas's C++ makes it a {rows}x{cols} Tile at the window's first element, "
            f"{part}, so past its first {'column' if col_major else 'row'} it is not the window (the run "
            f"computes what that C++ computes) - take whole {'columns' if col_major else 'rows'} ({whole}) or "
            f"one {'column' if col_major else 'row'} at a time, or keep the parts in tiles of their own")


def _bracket_after(ex, fr, s, at: int) -> list:
    """The integers of the ``[a, b]`` list starting at token ``at`` (SSA values or literals)."""
    toks = s.toks
    if at >= len(toks) or toks[at].text != "[":
        return []
    out, j = [], at + 1
    while j < len(toks) and toks[j].text != "]":
        t = toks[j]
        if t.kind == "value":
            out.append(ex.ival(fr, t))
        elif t.kind == "word":
            out.append(int(t.text))
        j += 1
    return out


def h_subview(ex, fr, s):
    """``%v = pto.subview %src[%r, %c] sizes [R, C] [valid [%vr, %vc]] : <src type> -> <view
    type>`` (pypto's ``tile.slice`` / ``tile.assemble`` / ``tile.gather_row``): a zero-copy
    window of src whose element (i, j) is src's (r + i, c + j), with its own valid region (the
    clause, else the part of src's valid region the window covers).  pto-isa's SUBVIEW: the
    view keeps its source's storage and row stride (``TSubView.hpp``: the data pointer moves
    by the offset; the view tile has the source's static capacity), so here it is a tile of
    src's width at src's address plus ``r * cols + c`` elements (ptopipe holds every layout as
    its logical row-major matrix).  Not ``pto.subset``, which ptoas 0.27 lowers to a
    contiguous R x C tile at the offset (``h_subset``): the two agree only on whole rows."""
    vs = s.values()
    src = ex.val(fr, vs[0]) if vs else None
    if not isinstance(src, isa.Tile):
        raise ex.perr(s.tok, "pto.subview takes a tile: %v = pto.subview %tile[%r, %c] sizes [R, C] "
                             "valid [%vr, %vc] : type -> type")
    toks = s.toks
    at_src = next(i for i, t in enumerate(toks) if t is vs[0])
    offs = _bracket_after(ex, fr, s, at_src + 1)
    k = {t.text: i for i, t in enumerate(toks) if t.kind == "word" and t.text in ("sizes", "valid")}
    sizes = _bracket_after(ex, fr, s, k["sizes"] + 1) if "sizes" in k else []
    valid = _bracket_after(ex, fr, s, k["valid"] + 1) if "valid" in k else None
    if len(offs) != 2 or len(sizes) != 2 or (valid is not None and len(valid) != 2):
        raise ex.perr(s.tok, "pto.subview needs two offsets, two sizes and (optionally) two valid extents: "
                             "%tile[%r, %c] sizes [R, C] valid [%vr, %vc]")
    (r, c), (rows, cols) = offs, sizes
    clipped = valid is None             # (the valid region: the part of src's the window covers)
    if valid is None:
        valid = [max(0, min(rows, src.valid_rows - r)), max(0, min(cols, src.valid_cols - c))]
    vr, vc = valid
    where = f"pto.subview {rows}x{cols} at ({r}, {c}) valid [{vr}, {vc}] of {src.describe()}"
    if r < 0 or c < 0 or rows <= 0 or cols <= 0 or vr < 0 or vc < 0:
        raise ex.err(s, f"{where}: offsets, sizes and valid extents are non-negative (sizes positive)",
                     "give the window's top-left corner, its static shape and its valid extent")
    if vr > rows or vc > cols:
        raise ex.err(s, f"{where}: the valid extent exceeds the window's sizes",
                     "give a valid extent within sizes (the window's static shape)")
    if r + vr > src.rows or c + vc > src.cols:
        raise ex.err(s, f"{where}: the valid region leaves the source's static shape",
                     "keep offset + valid extent within the source tile, per dimension")
    tys = s.types()
    if len(tys) >= 2:
        spec = ex.prog.types.parse(tys[-1])
        if isinstance(spec, TileSpec) and ((spec.rows, spec.cols) != (rows, cols) or spec.dtype != src.dtype
                                           or spec.loc is not src.loc):
            raise ex.err(s, f"{where}: the view type says {spec.loc.value} {spec.rows}x{spec.cols} of "
                            f"{np.dtype(spec.dtype).name}",
                         "give the view its source's dtype and memory and the window's sizes")
        for got, want, what, at, size, n, axis in ((spec.v_rows, vr, "v_row", r, rows, src.rows, "rows"),
                                                   (spec.v_cols, vc, "v_col", c, cols, src.cols, "columns")):
            if isinstance(spec, TileSpec) and got is not None and got != want:
                if clipped and at + size > n:       # the window itself runs past its source
                    raise ex.err(s, f"{where}: the window is {axis} {at}..{at + size - 1} of a source of {n} "
                                    f"{axis} ({axis} 0..{n - 1}): it leaves its source, so only {want} of its "
                                    f"{axis} are valid, where the view type says {what}={got}",
                                 f"keep the window inside its source (offset + size <= {n} {axis}), or give "
                                 f"the view a valid clause / {what}=? for the {want} {axis} it has")
                raise ex.err(s, f"{where}: the view type says {what}={got}",
                             f"write {what}=? for a runtime extent, or make the valid clause say {got}")
    off = (r * src.cols + c) * src.item
    align = current_core().cluster.platform.alignment
    if off % align:
        raise ex.err(s, f"{where} starts {off} bytes into its source, not on a {align}-byte boundary: "
                        "the device's tile ops take aligned tile starts (an unaligned view can hang "
                        "the vector unit)", "move the window to an aligned column, or copy it out "
                                            "with pto.textract into an aligned tile")
    t = isa.Tile(src.loc, src.dtype, min(rows, src.rows - r), src.cols, layout=src.layout,
                 valid_rows=vr, valid_cols=vc, addr=src.addr + off, name=s.results[0] if s.results else None)
    if id(src) in ex.pad_of:
        ex.pad_of[id(t)] = ex.pad_of[id(src)]
    return t


def h_reshape(ex, fr, s):
    """``pto.treshape ins(%src) outs(%dst)``, or the SSA form ``%r = pto.treshape %src : A -> B``:
    a tile of type B over the source's bytes (TRESHAPE reinterprets, it does not copy)."""
    if s.group("outs") is not None:
        return op_catalogue(ex, fr, s)
    src = ex.val(fr, s.values()[0])
    spec = res_type(ex, s)
    if not isinstance(spec, TileSpec):
        raise ex.perr(s.tok, "pto.treshape gives a !pto.tile_buf")
    dst = tile_of(ex, s, spec, src.addr, fr)
    isa.TRESHAPE(dst, src)
    return dst


def h_subblock(ex, fr, s):
    return isa.get_subblockid()


def h_block_idx(ex, fr, s):
    return isa.get_block_idx()


def h_block_num(ex, fr, s):
    return get_block_num()


def h_tprint(ex, fr, s):
    """``pto.tprint ins(%tile[, %gm_tmp])``: TPRINT, in the run's simulated-time-ordered prints."""
    vs = s.values(s.group("ins")) if s.group("ins") else s.values()
    return isa.TPRINT(*[ex.val(fr, v) for v in vs])


def h_print(ex, fr, s):
    """``pto.print ins("fmt", %scalar : T)``: the kernel's printf, in the same stream."""
    ins = s.group("ins") or s.toks
    fmt = next((t.text[1:-1].encode().decode("unicode_escape") for t in ins if t.kind == "string"), None)
    if fmt is None:
        raise ex.perr(s.tok, 'pto.print needs a format string: ins("x = %d", %v : i32)')
    return isa.PRINT(fmt, *[ex.val(fr, v) for v in s.values(ins)])


def h_trap(ex, fr, s):
    """``pto.trap``: stop the kernel with a KernelError at this line."""
    isa.TTRAP()


def h_view_dim(ex, fr, s):
    """``%n = pto.get_tensor_view_dim %view, %dim``: the view's extent in that dimension."""
    vs = s.values()
    v, d = ex.val(fr, vs[0]), ex.ival(fr, vs[1])
    shape = v.shape if isinstance(v, View) else getattr(v, "shape", ())
    if not 0 <= d < len(shape):
        raise ex.err(s, f"pto.get_tensor_view_dim: dimension {d} of a rank-{len(shape)} view")
    return int(shape[d])


def h_subblock_num(ex, fr, s):
    """``pto.get_subblock_num``: the Vector sub-blocks of the cluster (2)."""
    return 2


def h_bitcast(ex, fr, s):
    """``%r = pto.bitcast %tile : A -> B``: the same bytes as a tile of type B."""
    src = ex.val(fr, s.values()[0])
    spec = res_type(ex, s)
    if not isinstance(spec, TileSpec) or not isinstance(src, isa.Tile):
        raise ex.perr(s.tok, "pto.bitcast reinterprets a tile as a !pto.tile_buf")
    if spec.nbytes > src.nbytes:
        raise ex.err(s, f"pto.bitcast to {spec.rows}x{spec.cols} {spec.dtype.name} ({spec.nbytes} bytes) "
                        f"of {src.describe()} ({src.nbytes} bytes): larger than its source")
    return tile_of(ex, s, spec, src.addr, fr)


def h_pointer_cast(ex, fr, s):
    """``%m = pto.pointer_cast(%addr[, %valid_row, %valid_col]) : memref<...>``: a buffer at a
    fixed local address (what ptoas's PlanMemory leaves in level-3 code)."""
    vs = s.values()
    spec = res_type(ex, s)
    spec = spec[1] if isinstance(spec, tuple) and spec[0] == "memref" else spec
    if not isinstance(spec, TileSpec) or not vs:
        raise ex.perr(s.tok, "pto.pointer_cast gives a local memref / tile at an address")
    t = tile_of(ex, s, spec, ex.ival(fr, vs[0]), fr)
    if len(vs) >= 3:
        t.SetValid(ex.ival(fr, vs[1]), ex.ival(fr, vs[2]))
    return t


def _element(ex, s, t, offset: int):
    if not isinstance(t, isa.Tile):
        raise ex.perr(s.tok, f"{s.name} reads an element of a tile")
    if not 0 <= offset < t.rows * t.cols:
        raise ex.err(s, f"{s.name}: offset {offset} is outside {t.describe()} ({t.rows * t.cols} elements)",
                     "give an offset in 0 .. rows * cols - 1 (row-major)")


def h_getval(ex, fr, s):
    """``%v = pto.tgetval ins(%tile, %offset)``: element ``offset`` of the tile (row-major), after
    every queued write to it (a scalar read on the S pipe)."""
    vs = s.values(s.group("ins") or s.toks)
    t, off = ex.val(fr, vs[0]), ex.ival(fr, vs[1])
    _element(ex, s, t, off)
    full = t.full               # (the exact state first: sim.periodic records no S-pipe issue)
    ex.core.issue(PipeUnit.S, ex.core.costs.scalar_op, (t,), (), "TGETVAL", None)
    v = full.reshape(-1)[off]
    return float(v) if t.dtype.kind not in "iub" else int(v)


def _set_element(full, offset, value):
    full.reshape(-1)[offset] = value


def h_setval(ex, fr, s):
    """``pto.tsetval ins(%offset, %value) outs(%tile)``: element ``offset`` of the tile (row-major)
    = value, in issue order with the tile's other writes."""
    off, val = (ex.val(fr, v) for v in s.values(s.group("ins")))
    t = ex.val(fr, s.values(s.group("outs"))[0])
    _element(ex, s, t, int(off))
    core = ex.core
    full = t.full               # (the exact state first - sim.periodic: its queue may be another after)
    core.pending.append((_set_element, full, int(off), val))
    core.issue(PipeUnit.S, core.costs.scalar_op, (), (t,), "TSETVAL", None)


def _gm_element(ex, s, ptr, offset: int):
    """The GM address of element ``offset`` past ``ptr`` (a GMPtr or a tensor), bounds-checked
    against the argument it points into."""
    p = ptr.data() if isinstance(ptr, isa.GlobalTensor) else ptr
    if not isinstance(p, isa.GMPtr):
        raise ex.perr(s.tok, f"{s.name} takes a GM pointer or memref")
    q = p + offset
    lo, hi = (p.bounds[0], p.bounds[1]) if p.bounds else (None, None)
    if lo is not None and not lo <= q.addr <= hi - q.dtype.itemsize:
        raise MemoryConflictError(f"{s.name}: element {offset} is outside the argument "
                                  f"{p.bounds[2]!r} ({(hi - lo) // q.dtype.itemsize} elements)",
                                  where=ex.where(s), fix="keep the offset within the tensor")
    return q


def h_load_scalar(ex, fr, s):
    """``%v = pto.load_scalar %ptr[%off]``: one GM element read by the scalar unit (the race
    checker does not see scalar GM accesses)."""
    vs = s.values()
    q = _gm_element(ex, s, ex.val(fr, vs[0]), ex.ival(fr, vs[1]))
    gm = ex.core.cluster.gm
    ex.core.unrecorded("pto.load_scalar")
    ex.core.cluster.sync()
    unseen(ex.core, "a scalar GM load (pto.load_scalar)")
    ex.core.issue_s(PipeUnit.S, ex.core.costs.scalar_op, "LOAD_SCALAR")
    v = gm.view(q.addr, q.dtype, (1,))[0]
    return float(v) if q.dtype.kind not in "iub" else int(v)


def h_store_scalar(ex, fr, s):
    """``pto.store_scalar %v, %ptr[%off]``: one GM element written by the scalar unit (in issue
    order with queued work; the race checker does not see scalar GM accesses)."""
    vs = s.values()
    val = ex.val(fr, vs[0])
    q = _gm_element(ex, s, ex.val(fr, vs[1]), ex.ival(fr, vs[2]))
    view = ex.core.cluster.gm.view(q.addr, q.dtype, (1,))
    ex.core.unrecorded("pto.store_scalar")
    unseen(ex.core, "a scalar GM store (pto.store_scalar)")
    ex.core.pending.append((_set_element, view, 0, val))
    ex.core.issue_s(PipeUnit.S, ex.core.costs.scalar_op, "STORE_SCALAR")
