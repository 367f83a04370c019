"""Vector instructions of the op catalogue's forms beyond :mod:`.ops`' element-wise ones:
three-operand and fused forms (TADDC, TADDSC, TAXPY, TMULADDDST, TFUSEDMULADD[RELU]),
powers (TPOW, TPOWS), compare and select through packed predicate masks (TCMP, TCMPS,
TSEL, TSELS), column broadcasts (TCOLEXPAND*), the arg-reductions (TROWARGMAX ...), the
part ops (TPARTADD ..., TPARTARGMAX / MIN), quantisation (TQUANT, TDEQUANT, TADDDEQRELU,
TADDRELUCONV) and THISTOGRAM.

Built from the catalogue (:mod:`ptopipe.arch.catalogue`) as the element-wise instructions
are: each checks its operands when issued (Vec tiles of this core, valid shapes, the
dtype rule of the run's platform, scalar values), queues its numpy work and occupies the
V pipe for its cost.  Arguments follow pto-isa's C++ order (destinations, sources,
scalars, ``tmp``), then wait events.
"""
from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace
from operator import setitem

import numpy as np

from ..arch import dtypes as dt
from ..arch.catalogue import (CMPS_BITS_AS_HALF_A2A3, MASK_DTYPES, OPS, PART_ARG_INDEX, POW_HIGH_PRECISION,
                              RELU_CONV, by_form, scalar_error)
from ..arch.vocab import CmpMode, HistByte, PlatformID, PowAlgorithm, QuantType
from .context import current_core, kernel_core, named
from .events import Event
from .ops import (_ALL, _VEC, _dtype_check, _err, _nd_source, _not_vec, _reduce_apart, _same_dtype, _same_shape, _scalar_value,
                  _sync, _tmp_tile, _ufunc_into, arr, vec_issue_n)
from .tile import Tile
from .unwritten import writes_part
from ..errors import with_article

_A2A3 = PlatformID.PLATFORM_A2A3
_INDEX_DTYPES = (dt.int32, dt.uint32)


def _tiles_then(args: tuple):
    """(the leading Tile arguments, the rest) of a variadic instruction call."""
    k = 0
    while k < len(args) and args[k].__class__ is Tile:
        k += 1
    return args[:k], args[k:]


def _vec(core, name: str, *tiles) -> list:
    """The valid-region arrays of ``tiles`` (all Vec tiles of this core)."""
    arrays = [arr(t, core) for t in tiles]
    if any(t.loc is not _VEC for t in tiles):
        raise _not_vec(core, name, list(tiles))
    return arrays


def _rule(core, op, tile: Tile, ok) -> None:
    if ok is not None and tile.dtype not in ok[core.cluster.platform.id]:
        _dtype_check(core, op, tile)


def _same(core, name: str, dst: Tile, d, **srcs) -> None:
    """Every source in ``srcs`` (role -> (tile, array)) has ``dst``'s valid shape and dtype."""
    pairs = [("dst", d)] + [(role, a) for role, (_, a) in srcs.items()]
    if any(a.shape != d.shape for _, a in pairs):
        _same_shape(core, name, *pairs)
    tiles = [dst] + [t for t, _ in srcs.values()]
    if any(t.dtype != dst.dtype for t in tiles):
        _same_dtype(core, name, *tiles)


def _issue(core, name, dsts, srcs, tmp, rows, cols, itemsize) -> Event:
    writes = list(dsts)
    _tmp_tile(core, name, tmp, writes, srcs)
    return vec_issue_n(core, name, writes, srcs, rows, cols, itemsize)


# -- three-operand and fused forms -------------------------------------------------------------
def _ternary(op):
    name, fn, ok = op.name, op.kernel, op.allowed()

    def instr(dst: Tile, src0: Tile, src1: Tile, src2: Tile, *events) -> Event:
        core = kernel_core()
        if core.ff is not None:                 # fast-forward (sim.periodic)
            return core.ff.call(core, instr, (dst, src0, src1, src2, *events), None)
        _sync(events)
        d, a, b, c = _vec(core, name, dst, src0, src1, src2)
        _same(core, name, dst, d, src0=(src0, a), src1=(src1, b), src2=(src2, c))
        _rule(core, op, dst, ok)
        core.pending.append((fn, a, b, c, d))
        return _issue(core, name, [dst], [src0, src1, src2], None, *d.shape, dst.item)
    instr.__doc__ = f"{name}(dst, src0, src1, src2): {op.doc or fn.__name__}, element-wise."
    return instr


def _scalar_ternary(op):
    name, fn, ok = op.name, op.kernel, op.allowed()

    def instr(dst: Tile, src0: Tile, scalar, src1: Tile, *events) -> Event:
        core = kernel_core()
        if core.ff is not None:                 # fast-forward (sim.periodic)
            return core.ff.call(core, instr, (dst, src0, scalar, src1, *events), None)
        _sync(events)
        d, a, b = _vec(core, name, dst, src0, src1)
        _same(core, name, dst, d, src0=(src0, a), src1=(src1, b))
        _rule(core, op, dst, ok)
        core.pending.append((fn, a, _scalar_value(core, name, dst, scalar), b, d))
        return _issue(core, name, [dst], [src0, src1], None, *d.shape, dst.item)
    instr.__doc__ = f"{name}(dst, src0, scalar, src1): {op.doc or fn.__name__}, element-wise."
    return instr


def _axpy(op):
    name, fn, ok = op.name, op.kernel, op.allowed()

    def instr(dst: Tile, src0: Tile, scalar, *events) -> Event:
        core = kernel_core()
        if core.ff is not None:                 # fast-forward (sim.periodic)
            return core.ff.call(core, instr, (dst, src0, scalar, *events), None)
        _sync(events)
        d, a = _vec(core, name, dst, src0)
        if a.shape != d.shape:
            _same_shape(core, name, ("dst", d), ("src0", a))
        _rule(core, op, dst, ok)
        if src0.dtype != dst.dtype and not (dst.dtype == dt.float32 and src0.dtype == dt.float16):
            raise _err(core, f"{name}: src0 is {src0.dtype.name} but dst is {dst.dtype.name}; "
                             "TAXPY accumulates f16 into f16, f32 into f32, or f16 into f32",
                       "convert src0 with TCVT first")
        core.pending.append((fn, a, _scalar_value(core, name, src0, scalar), d))
        return _issue(core, name, [dst], [src0, dst], None, *d.shape, dst.item)
    instr.__doc__ = f"{name}(dst, src0, scalar): dst = scalar * src0 + dst (an f16 src0 may " \
                    "accumulate into an f32 dst)."
    return instr


# -- compare and select ------------------------------------------------------------------------
def cmp_mode(core, name: str, mode) -> CmpMode:
    """``mode`` as a CmpMode: a member, its pto-isa number or its name (``"lt"``)."""
    if mode.__class__ is CmpMode:
        return mode
    try:
        if isinstance(mode, str):
            return CmpMode[mode.upper()]
        if isinstance(mode, (int, np.integer)) and not isinstance(mode, bool):
            return CmpMode(int(mode))
    except (KeyError, ValueError):
        pass
    raise _err(core, f"{name}: {mode!r} is not a compare mode",
               f"pass one of {', '.join('CmpMode.' + m.name for m in CmpMode)}")


def _mask_words(core, name: str, mask: Tile, m, rows: int, cols: int, role: str) -> None:
    """``mask`` can hold the packed predicate of a rows x cols source (module catalogue)."""
    if mask.dtype not in MASK_DTYPES:
        raise _err(core, f"{name}: the {role} {mask.describe()} is {mask.dtype.name}; predicate masks "
                         "are 8- or 32-bit words", "declare the mask tile as uint8 or uint32")
    words = -(-cols // (8 * mask.item))
    if m.shape[0] < rows or m.shape[1] < words:
        raise _err(core, f"{name}: the {role} {mask.describe()} has a {m.shape[0]}x{m.shape[1]} valid "
                         f"region; a {rows}x{cols} predicate needs {rows}x{words} "
                         f"{mask.dtype.name} words", "give the mask one row per source row and "
                         f"ceil(cols / {8 * mask.item}) valid columns")


def _a5_select_mask(core, name: str, mask: Tile, rows: int, cols: int, item: int) -> None:
    """pto-isa's A5 TSEL (a5/TSel.hpp:45, :65, :108) loads row ``i``'s predicate from byte
    ``i * RowStride`` of the mask, RowStride counted in mask elements but taken as bytes, and
    for 1-byte data the predicate of each 256-column repeat ``j`` from byte ``16 * j`` of the
    row (32 bytes a repeat needs): a mask wider than a byte with more than one row, or 1-byte
    data wider than 256 columns, selects by other bits than the mask holds for the row.
    (TSELS and A2A3's TSEL step the mask in bytes: a5/TSels.hpp:30, a2a3/TSel.hpp:50.)"""
    if core.cluster.platform.id is _A2A3:
        return
    if mask.item > 1 and rows > 1:
        raise _err(core, f"{name}: the mask {mask.describe()} is {mask.dtype.name} with {rows} rows; pto-isa's "
                         f"A5 {name} steps mask rows by the tile's row stride in bytes, not in {mask.dtype.name} "
                         "words (a5/TSel.hpp:45), so rows 1.. select by the wrong bits on the device",
                   "declare the mask tile uint8 (TCMP / TCMPS write a uint8 mask as well)")
    if item == 1 and cols > 256:
        raise _err(core, f"{name}: {cols} columns of 1-byte data; pto-isa's A5 {name} loads the mask of each "
                         "256-column repeat from 16 bytes on, not 32 (a5/TSel.hpp:108), so columns 256.. select "
                         "by the wrong bits on the device",
                   "split the rows into tiles of at most 256 columns, or select 2-byte data")


def _int32_eq_ne_only(core, name: str, src: Tile, mode: CmpMode) -> None:
    """pto-isa on A2A3 compares int32 tiles with vcmpv_eq whatever the mode (a2a3/TCmp.hpp,
    TCmps.hpp CmpCall), and inverts the mask afterwards for NE: EQ and NE are exact, an
    ordering mode is an error (it would be EQ)."""
    if mode not in (CmpMode.EQ, CmpMode.NE) and src.dtype == dt.int32 and core.cluster.platform.id is _A2A3:
        raise _err(core, f"{name}: {mode.name} on int32 tiles: pto-isa on A2A3 compares int32 with "
                         "EQ / NE only (the ordering modes fall back to EQ)",
                   "compare f32 copies (TCVT), or use CmpMode.EQ / CmpMode.NE")


def _compare(op):
    name, fn, ok = op.name, op.kernel, op.allowed()

    def instr(dst: Tile, src0: Tile, src1: Tile, mode=CmpMode.EQ, *events) -> Event:
        core = kernel_core()
        if core.ff is not None:                 # fast-forward (sim.periodic)
            return core.ff.call(core, instr, (dst, src0, src1, mode, *events), None)
        if mode.__class__ is Event:               # TCMP(dst, a, b, event, ...): no mode given
            events, mode = (mode,) + events, CmpMode.EQ
        _sync(events)
        mode = cmp_mode(core, name, mode)
        m, a, b = _vec(core, name, dst, src0, src1)
        if a.shape != b.shape or src0.dtype != src1.dtype:
            _same(core, name, src0, a, src1=(src1, b))
        _rule(core, op, src0, ok)
        _mask_words(core, name, dst, m, *a.shape, "destination")
        _int32_eq_ne_only(core, name, src0, mode)
        core.pending.append((fn, a, b, mode, m))
        return _issue(core, name, [dst], [src0, src1], None, *a.shape, src0.item)
    instr.__doc__ = f"{name}(dst, src0, src1, mode=CmpMode.EQ): the packed predicate mask of " \
                    "src0 <mode> src1 (bit j of row i: element (i, j))."
    return instr


def _compare_scalar(op):
    name, fn, ok = op.name, op.kernel, op.allowed()

    def instr(dst: Tile, src0: Tile, src1, mode=CmpMode.EQ, *events) -> Event:
        core = kernel_core()
        if core.ff is not None:                 # fast-forward (sim.periodic)
            return core.ff.call(core, instr, (dst, src0, src1, mode, *events), None)
        if mode.__class__ is Event:
            events, mode = (mode,) + events, CmpMode.EQ
        _sync(events)
        mode = cmp_mode(core, name, mode)
        m, a = _vec(core, name, dst, src0)
        srcs = [src0]
        if src1.__class__ is Tile:                # the tile form: its element (0, 0)
            b = _vec(core, name, src1)[0]
            if src1.dtype != src0.dtype:
                _same_dtype(core, name, src0, src1)
            if b.size == 0:
                raise _err(core, f"{name}: {src1.describe()} has an empty valid region; the tile "
                                 "form compares with its element (0, 0)")
            b = b[:1, :1]
            srcs.append(src1)
        else:
            b = _scalar_value(core, name, src0, src1)
        _rule(core, op, src0, ok)
        _mask_words(core, name, dst, m, *a.shape, "destination")
        _int32_eq_ne_only(core, name, src0, mode)
        if src0.dtype in CMPS_BITS_AS_HALF_A2A3 and core.cluster.platform.id is _A2A3:
            a, b = a.view(np.float16), np.asarray(b, src0.dtype).view(np.float16)
        core.pending.append((fn, a, b, mode, m))
        return _issue(core, name, [dst], srcs, None, *a.shape, src0.item)
    instr.__doc__ = f"{name}(dst, src0, scalar_or_tile, mode=CmpMode.EQ): the packed predicate " \
                    "mask of src0 <mode> scalar (a tile: its element (0, 0))."
    return instr


def _select(op):
    name, fn, ok = op.name, op.kernel, op.allowed()

    def instr(dst: Tile, mask: Tile, src0: Tile, src1: Tile, *rest) -> Event:
        core = kernel_core()
        if core.ff is not None:                 # fast-forward (sim.periodic)
            return core.ff.call(core, instr, (dst, mask, src0, src1, *rest), None)
        tmp, events = (rest[0], rest[1:]) if rest and rest[0].__class__ is Tile else (None, rest)
        _sync(events)
        d, m, a, b = _vec(core, name, dst, mask, src0, src1)
        _same(core, name, dst, d, src0=(src0, a), src1=(src1, b))
        _rule(core, op, dst, ok)
        _mask_words(core, name, mask, m, *d.shape, "mask")
        _a5_select_mask(core, name, mask, *d.shape, dst.item)
        core.pending.append((fn, m, a, b, d))
        return _issue(core, name, [dst], [mask, src0, src1], tmp, *d.shape, dst.item)
    instr.__doc__ = f"{name}(dst, mask, src0, src1[, tmp]): dst = mask ? src0 : src1 per element."
    return instr


def _select_scalar(op):
    name, fn, ok = op.name, op.kernel, op.allowed()

    def instr(dst: Tile, mask: Tile, src: Tile, *rest) -> Event:
        core = kernel_core()
        if core.ff is not None:                 # fast-forward (sim.periodic)
            return core.ff.call(core, instr, (dst, mask, src, *rest), None)
        tmp = None
        if rest and rest[0].__class__ is Tile:    # pto-isa's order: tmp, then the scalar
            tmp, rest = rest[0], rest[1:]
        if not rest:
            raise _err(core, f"{name} needs a scalar: {name}(dst, mask, src, tmp, scalar)")
        scalar, events = rest[0], rest[1:]
        _sync(events)
        d, m, a = _vec(core, name, dst, mask, src)
        _same(core, name, dst, d, src=(src, a))
        _rule(core, op, dst, ok)
        _mask_words(core, name, mask, m, *d.shape, "mask")
        core.pending.append((fn, m, a, _scalar_value(core, name, dst, scalar), d))
        return _issue(core, name, [dst], [mask, src], tmp, *d.shape, dst.item)
    instr.__doc__ = f"{name}(dst, mask, src, tmp, scalar): dst = mask ? src : scalar per element " \
                    "(tmp may be left out)."
    return instr


# -- column broadcasts -------------------------------------------------------------------------
def _col_expand(op):
    name, fn, ok = op.name, op.kernel, op.allowed()

    def instr(dst: Tile, src0: Tile, src1: Tile, *events) -> Event:
        core = kernel_core()
        if core.ff is not None:                 # fast-forward (sim.periodic)
            return core.ff.call(core, instr, (dst, src0, src1, *events), None)
        _sync(events)
        d, a, b = _vec(core, name, dst, src0, src1)
        if a.shape != d.shape or b.shape[1] != d.shape[1] or (b.shape[0] < 1 and d.size):
            raise _err(core, f"{name}: dst {d.shape}, src0 {a.shape} and per-column src1 {b.shape} "
                             "do not agree", "src1 needs one column per dst column (row 0 is used)")
        if not (src0.dtype == src1.dtype == dst.dtype):
            _same_dtype(core, name, dst, src0, src1)
        _rule(core, op, dst, ok)
        if d.size:                              # (row 0 of src1: the bytes the op reads)
            core.pending.append((_ufunc_into, fn, a, b[:1, :], d))
        return _issue(core, name, [dst], [src0, src1], None, *d.shape, dst.item)
    instr.__doc__ = f"{name}(dst, src0, src1): dst[i, j] = {fn.__name__}(src0[i, j], src1[0, j])."
    return instr


def _col_bcast(op):
    name, ok = op.name, op.allowed()

    def instr(dst: Tile, src: Tile, *events) -> Event:
        core = kernel_core()
        if core.ff is not None:                 # fast-forward (sim.periodic)
            return core.ff.call(core, instr, (dst, src, *events), None)
        _sync(events)
        d, a = _vec(core, name, dst, src)
        if a.shape[1] != d.shape[1] or (a.shape[0] < 1 and d.size):
            raise _err(core, f"{name}: dst has {d.shape[1]} valid cols, src {a.shape[0]}x{a.shape[1]}",
                       "src needs one column per dst column (row 0 is broadcast)")
        if src.dtype != dst.dtype:
            _same_dtype(core, name, dst, src)
        _rule(core, op, dst, ok)
        if d.size:
            core.pending.append((setitem, d, _ALL, a[:1, :]))
        return _issue(core, name, [dst], [src], None, *d.shape, dst.item)
    instr.__doc__ = f"{name}(dst, src): dst[i, j] = src[0, j]."
    return instr


# -- arg-reductions ----------------------------------------------------------------------------
def _arg_into(fn, axis: int, a, idx, val) -> None:
    if a.size == 0:
        return                      # an empty valid region reduces nothing
    i = fn(a, axis=axis)
    if axis == 1:
        idx[:, 0] = i
        if val is not None:
            val[:, 0] = a[np.arange(a.shape[0]), i]
    else:
        idx[0, :] = i
        if val is not None:
            val[0, :] = a[i, np.arange(a.shape[1])]


def _arg(op):
    name, fn, ok = op.name, op.kernel, op.allowed()
    axis = 1 if op.form == "row_arg" else 0
    what = "row" if axis == 1 else "column"

    def instr(*args) -> Event:
        core = current_core()
        tiles, events = _tiles_then(args)
        if len(tiles) not in (2, 3, 4):
            raise _err(core, f"{name} takes (dst, src, tmp) or (dst_val, dst_idx, src, tmp), got "
                             f"{len(tiles)} tiles")
        if len(tiles) == 4:
            val, idx, src, tmp = tiles
        elif len(tiles) == 3:
            val, (idx, src, tmp) = None, tiles
        else:
            val, (idx, src), tmp = None, tiles, None
        _sync(events)
        if axis == 1:
            _nd_source(core, name, src)
        outs = [idx] if val is None else [val, idx]
        arrays = _vec(core, name, src, *outs)
        a, outs_a = arrays[0], arrays[1:]
        _rule(core, op, src, ok)
        i = outs_a[-1]
        for t, o in zip(outs, outs_a):
            # one result per source row (column), in column (row) 0 of the result tile
            if o.shape[1 - axis] != a.shape[1 - axis] or (a.size and o.shape[axis] < 1):
                want = (a.shape[0], 1) if axis == 1 else (1, a.shape[1])
                raise _err(core, f"{name}: {t.describe()} has a {o.shape[0]}x{o.shape[1]} valid region; "
                                 f"the {what} results of a {a.shape[0]}x{a.shape[1]} source need "
                                 f"{want[0]}x{want[1]}", f"one result per source {what}")
        idx_ok = _INDEX_DTYPES
        if val is not None and axis == 0 and src.item == 2:
            idx_ok = (dt.int16,)            # pto-isa: a 2-byte source's value+index form
        if idx.dtype not in idx_ok:
            raise _err(core, f"{name}: the index tile {idx.describe()} is {idx.dtype.name}; "
                             f"indices are {' or '.join(d.name for d in idx_ok)}",
                       f"declare the index tile as {idx_ok[0].name}")
        if val is not None and val.dtype != src.dtype:
            raise _err(core, f"{name}: the value tile is {val.dtype.name} but the source is "
                             f"{src.dtype.name}", "declare the value tile with the source's dtype")
        if a.size:                          # (each result stored while the source is read, as the plain reductions)
            for t, o in zip(outs, outs_a):
                _reduce_apart(core, name, t, o[:, :1] if axis == 1 else o[:1, :], src, a)
        core.pending.append((_arg_into, fn, axis, a, i, None if val is None else outs_a[0]))
        with ExitStack() as parts:          # (each result tile: column 0 / row 0 written)
            for t in outs:
                if (t.valid_cols if axis == 1 else t.valid_rows) > 1:
                    parts.enter_context(writes_part(core, t, *((t.valid_rows, 1) if axis == 1 else (1, t.valid_cols))))
            return _issue(core, name, outs, [src], tmp, *a.shape, src.item)
    instr.__doc__ = (f"{name}(dst_idx, src, tmp) or {name}(dst_val, dst_idx, src, tmp): the "
                     f"{'column' if axis == 1 else 'row'} index of each {what}'s "
                     f"{'maximum' if fn is np.argmax else 'minimum'} (the first on ties), and "
                     "its value; tmp may be left out.")
    return instr


# -- part ops ----------------------------------------------------------------------------------
def _part_into(fn, a, b, d) -> None:
    """``fn`` where both sources are valid; elsewhere in ``d`` the one valid source."""
    out = np.empty(d.shape, d.dtype)
    ra, ca = a.shape
    rb, cb = b.shape
    out[:ra, :ca] = a
    out[:rb, :cb] = b
    r, c = min(ra, rb), min(ca, cb)
    out[:r, :c] = fn(a[:r, :c], b[:r, :c])
    d[...] = out


def _part(op):
    name, fn, ok = op.name, op.kernel, op.allowed()

    def instr(dst: Tile, src0: Tile, src1: Tile, *events) -> Event:
        core = current_core()
        _sync(events)
        d, a, b = _vec(core, name, dst, src0, src1)
        if not (src0.dtype == src1.dtype == dst.dtype):
            _same_dtype(core, name, dst, src0, src1)
        _rule(core, op, dst, ok)
        fits = all(x.shape[0] <= d.shape[0] and x.shape[1] <= d.shape[1] for x in (a, b))
        if d.size and (not fits or (a.shape != d.shape and b.shape != d.shape)):
            raise _err(core, f"{name}: valid regions dst {d.shape[0]}x{d.shape[1]}, src0 "
                             f"{a.shape[0]}x{a.shape[1]}, src1 {b.shape[0]}x{b.shape[1]}: one source "
                             "must cover dst exactly and the other fit inside it",
                       "give one source dst's valid shape")
        if d.size:
            core.pending.append((_part_into, fn, a, b, d))
        return _issue(core, name, [dst], [src0, src1], None, *d.shape, dst.item)
    instr.__doc__ = f"{name}(dst, src0, src1): {fn.__name__} where both sources are valid, the " \
                    "valid one elsewhere in dst's valid region."
    return instr


# -- quantisation ---------------------------------------------------------------------------------
_QUANT, _DEQUANT = OPS["TQUANT"], OPS["TDEQUANT"]
_QUANT_OK, _DEQUANT_OK = _QUANT.allowed(), _DEQUANT.allowed()


def _params(core, name: str, rows: int, *tiles) -> list:
    """The per-row f32 parameter tiles (scale, offset): one row per data row."""
    arrays = _vec(core, name, *tiles)
    for t, p in zip(tiles, arrays):
        if t.dtype != dt.float32 or p.shape[0] != rows or p.shape[1] < 1:
            raise _err(core, f"{name}: the parameter tile {t.describe()} (valid {p.shape[0]}x{p.shape[1]}) "
                             f"must be float32 with one row per data row ({rows})",
                       "give scale / offset as float32 tiles of rows x 1")
    return arrays


def TQUANT(dst: Tile, src: Tile, scale: Tile, *rest, quant_type=None, scale_alg=None, grp_axis=None, mx_alg=None,
           interleave=False) -> Event:
    """pto-isa's INT8 TQUANT: ``dst = clip(rint(src * scale[i] (+ offset[i])))`` per row i;
    ``TQUANT(dst, src, scale[, tmp][, offset])``: int8 dst (INT8_SYM, no offset) or uint8
    dst (INT8_ASYM, with the offset).  ``scale`` holds the inverse scale (the multiplier),
    as in pto-isa's CPU model; src is f32.  With an MX quant type, ``mx_alg`` or ``grp_axis``:
    the MX forms ``TQUANT(dst, src, exp, max, scaling)`` (:mod:`ptopipe.isa.mx_quant`)."""
    if (mx_alg is not None or grp_axis is not None or scale_alg is not None
            or quant_type in (QuantType.MXFP8, QuantType.MXFP4_E2M1)):
        from .mx_quant import mx_tquant     # (it imports this module)
        return mx_tquant(dst, src, scale, rest, quant_type, scale_alg, grp_axis, mx_alg, interleave)
    core = current_core()
    tiles, events = _tiles_then(rest)
    _sync(events)
    qt = (QuantType.INT8_ASYM if dst.dtype == dt.uint8 else QuantType.INT8_SYM) if quant_type is None \
        else quant_type
    if not isinstance(qt, QuantType) or qt not in (QuantType.INT8_SYM, QuantType.INT8_ASYM):
        raise _err(core, f"TQUANT: quant_type {qt!r} is not modelled", "use QuantType.INT8_SYM or INT8_ASYM")
    if len(tiles) > 2:
        raise _err(core, f"TQUANT takes (dst, src, scale[, tmp][, offset]), got {3 + len(tiles)} tiles")
    # one tile after scale: the offset of INT8_ASYM, the tmp of INT8_SYM (pto-isa's overloads)
    tmp, offset = tiles if len(tiles) == 2 else \
        ((None, tiles[0]) if qt is QuantType.INT8_ASYM else (tiles[0], None)) if tiles else (None, None)
    if qt is QuantType.INT8_SYM and (dst.dtype != dt.int8 or offset is not None):
        raise _err(core, f"TQUANT INT8_SYM writes int8 with no offset, not {dst.describe()}"
                         f"{' with an offset' if offset is not None else ''}",
                   "declare dst as int8 and leave out the offset (or use INT8_ASYM into uint8)")
    if qt is QuantType.INT8_ASYM and (dst.dtype != dt.uint8 or offset is None):
        raise _err(core, f"TQUANT INT8_ASYM writes uint8 with an offset tile, not {dst.describe()}"
                         f"{'' if offset is not None else ' without one'}",
                   "declare dst as uint8 and pass the offset tile")
    d, a = _vec(core, "TQUANT", dst, src)
    if a.shape != d.shape:
        _same_shape(core, "TQUANT", ("dst", d), ("src", a))
    _rule(core, _QUANT, src, _QUANT_OK)
    ps = _params(core, "TQUANT", a.shape[0], *([scale] if offset is None else [scale, offset]))
    core.pending.append((_QUANT.kernel, a, ps[0], ps[1] if offset is not None else None, d))
    srcs = [src, scale] + ([offset] if offset is not None else [])
    return _issue(core, "TQUANT", [dst], srcs, tmp, *d.shape, src.item)


def TDEQUANT(dst: Tile, src: Tile, scale: Tile, offset: Tile, *events) -> Event:
    """``dst[i, j] = (src[i, j] - offset[i]) * scale[i]``: int8 / int16 src to f32 dst with
    per-row f32 parameters (a parameter tile with several columns: column min(j, cols - 1))."""
    core = current_core()
    _sync(events)
    d, a = _vec(core, "TDEQUANT", dst, src)
    if a.shape != d.shape:
        _same_shape(core, "TDEQUANT", ("dst", d), ("src", a))
    _rule(core, _DEQUANT, src, _DEQUANT_OK)
    if dst.dtype != dt.float32:
        raise _err(core, f"TDEQUANT writes float32, not {dst.describe()}", "declare dst as float32")
    s, o = _params(core, "TDEQUANT", a.shape[0], scale, offset)
    if s.shape != o.shape:
        _same_shape(core, "TDEQUANT", ("scale", s), ("offset", o))
    core.pending.append((_DEQUANT.kernel, a, s, o, d))
    return _issue(core, "TDEQUANT", [dst], [src, scale, offset], None, *d.shape, dst.item)


# -- forms that read their destination: dst = f(src0, src1, dst) ----------------------------------
def _dst_binary(op):
    name, fn, ok = op.name, op.kernel, op.allowed()

    def instr(dst: Tile, src0: Tile, src1: Tile, *events) -> Event:
        core = kernel_core()
        if core.ff is not None:                 # fast-forward (sim.periodic)
            return core.ff.call(core, instr, (dst, src0, src1, *events), None)
        _sync(events)
        d, a, b = _vec(core, name, dst, src0, src1)
        _same(core, name, dst, d, src0=(src0, a), src1=(src1, b))
        _rule(core, op, dst, ok)
        core.pending.append((fn, a, b, d))
        return _issue(core, name, [dst], [src0, src1, dst], None, *d.shape, dst.item)
    instr.__doc__ = f"{name}(dst, src0, src1): {op.doc}; " + (
        "the product and the sum rounded once (vmadd)" if name.startswith("TFUSED") else
        "the product is rounded to the tile's dtype, then the sum.")
    return instr


# -- TPOW / TPOWS ------------------------------------------------------------------------------
def _pow_rule(core, op, dst: Tile, algorithm) -> None:
    """The dtype rule of ``algorithm`` (A5's HIGH_PRECISION takes floats only, bf16 too)."""
    try:
        algo = PowAlgorithm(algorithm)
    except ValueError:
        raise _err(core, f"{op.name}: algorithm {algorithm!r} is not a PowAlgorithm",
                   "pass PowAlgorithm.DEFAULT or PowAlgorithm.HIGH_PRECISION") from None
    rules = {PowAlgorithm.DEFAULT: op, PowAlgorithm.HIGH_PRECISION: replace(op, dtypes=POW_HIGH_PRECISION)}
    plat = core.cluster.platform.id
    bad = rules[algo].dtype_error(dst.dtype, plat)
    if bad is not None:
        other = next(a for a in rules if a is not algo)
        fix = bad[1]
        if rules[other].dtype_error(dst.dtype, plat) is None:
            fix = f"use algorithm=PowAlgorithm.{other.name} (it takes {dst.dtype.name}), or {fix}"
        raise _err(core, f"{bad[0]} with PowAlgorithm.{algo.name} ({dst.describe()})", fix)


def _pow_tmp(core, name: str, dst: Tile, d, tmp) -> None:
    """A2A3 computes a float power through ``tmp``: it needs dst's dtype and valid region."""
    if tmp is None or core.cluster.platform.id is not _A2A3 or dst.dtype.kind in "iu":
        return
    t = _vec(core, name, tmp)[0]
    if tmp.dtype != dst.dtype or t.shape[0] < d.shape[0] or t.shape[1] < d.shape[1]:
        raise _err(core, f"{name}: the tmp tile {tmp.describe()} (valid {t.shape[0]}x{t.shape[1]}) "
                         f"must be {dst.dtype.name} with dst's {d.shape[0]}x{d.shape[1]} valid region "
                         "(A2A3 computes a float power through it)",
                   "give tmp dst's dtype and valid shape")


def TPOW(dst: Tile, base: Tile, exp: Tile, *rest, algorithm=PowAlgorithm.DEFAULT) -> Event:
    """``dst = base ** exp`` per element; pto-isa's ``tmp`` tile may follow ``exp``.  Integers
    wrap (a negative exponent gives 0, or +/-1 for a base of -1); floats are ``pow`` rounded
    to the dtype (:func:`~ptopipe.arch.catalogue.power`)."""
    core = current_core()
    tmp, events = (rest[0], rest[1:]) if rest and rest[0].__class__ is Tile else (None, rest)
    _sync(events)
    d, a, b = _vec(core, "TPOW", dst, base, exp)
    _same(core, "TPOW", dst, d, base=(base, a), exp=(exp, b))
    _pow_rule(core, _POW, dst, algorithm)
    _pow_tmp(core, "TPOW", dst, d, tmp)
    core.pending.append((_POW.kernel, a, b, d))
    return _issue(core, "TPOW", [dst], [base, exp], tmp, *d.shape, dst.item)


def TPOWS(dst: Tile, base: Tile, exp, *rest, algorithm=PowAlgorithm.DEFAULT) -> Event:
    """``dst = base ** exp`` per element with a scalar exponent (a value of dst's dtype);
    pto-isa's ``tmp`` tile may follow it.  See :func:`TPOW`."""
    core = current_core()
    tmp, events = (rest[0], rest[1:]) if rest and rest[0].__class__ is Tile else (None, rest)
    _sync(events)
    d, a = _vec(core, "TPOWS", dst, base)
    _same(core, "TPOWS", dst, d, base=(base, a))
    _pow_rule(core, _POWS, dst, algorithm)
    _pow_tmp(core, "TPOWS", dst, d, tmp)
    core.pending.append((_POWS.kernel, a, _scalar_value(core, "TPOWS", dst, exp), d))
    return _issue(core, "TPOWS", [dst], [base], tmp, *d.shape, dst.item)


_POW, _POWS = OPS["TPOW"], OPS["TPOWS"]


# -- TPARTARGMAX / TPARTARGMIN -------------------------------------------------------------------
def _part_arg_into(take1, v0, v1, i0, i1, dv, di) -> None:
    """(value, index) of src0 / src1 where each alone is valid; where both are, src1's where
    ``take1(src1, src0)`` holds (so src0 wins ties)."""
    vals, idxs = np.empty(dv.shape, dv.dtype), np.empty(di.shape, di.dtype)
    for v, i in ((v0, i0), (v1, i1)):
        vals[:v.shape[0], :v.shape[1]] = v
        idxs[:i.shape[0], :i.shape[1]] = i
    r, c = min(v0.shape[0], v1.shape[0]), min(v0.shape[1], v1.shape[1])
    one = take1(v1[:r, :c], v0[:r, :c])
    vals[:r, :c] = np.where(one, v1[:r, :c], v0[:r, :c])
    idxs[:r, :c] = np.where(one, i1[:r, :c], i0[:r, :c])
    dv[...], di[...] = vals, idxs


def _part_arg(op):
    name, ok = op.name, op.allowed()
    what = "maximum" if op.kernel is np.greater else "minimum"

    def instr(dst_val: Tile, src0_val: Tile, src1_val: Tile, dst_idx: Tile, src0_idx: Tile,
              src1_idx: Tile, *events) -> Event:
        core = current_core()
        _sync(events)
        dv, v0, v1, di, i0, i1 = _vec(core, name, dst_val, src0_val, src1_val, dst_idx, src0_idx, src1_idx)
        if not (src0_val.dtype == src1_val.dtype == dst_val.dtype):
            _same_dtype(core, name, dst_val, src0_val, src1_val)
        _rule(core, op, dst_val, ok)
        want = PART_ARG_INDEX[dst_val.dtype]
        if not (src0_idx.dtype == src1_idx.dtype == dst_idx.dtype) or dst_idx.dtype not in want:
            raise _err(core, f"{name}: index tiles {dst_idx.dtype.name}, {src0_idx.dtype.name}, "
                             f"{src1_idx.dtype.name}; {dst_val.dtype.name} values take "
                             f"{' / '.join(d.name for d in want)} indices, all three the same",
                       f"declare the three index tiles as {want[-1].name}")
        for role, v, i in (("dst", dv, di), ("src0", v0, i0), ("src1", v1, i1)):
            if v.shape != i.shape:
                raise _err(core, f"{name}: the {role} value tile's valid region {v.shape[0]}x{v.shape[1]} "
                                 f"differs from its index tile's {i.shape[0]}x{i.shape[1]}",
                           "give each value tile and its index tile the same valid shape")
        cover = (max(v0.shape[0], v1.shape[0]), max(v0.shape[1], v1.shape[1]))
        if dv.shape != cover or cover not in (v0.shape, v1.shape) or not dv.size:
            raise _err(core, f"{name}: valid regions dst {dv.shape[0]}x{dv.shape[1]}, src0 "
                             f"{v0.shape[0]}x{v0.shape[1]}, src1 {v1.shape[0]}x{v1.shape[1]}: one source "
                             "must cover dst exactly (not empty) and the other fit inside it",
                       "give one source dst's valid shape")
        core.pending.append((_part_arg_into, op.kernel, v0, v1, i0, i1, dv, di))
        return _issue(core, name, [dst_val, dst_idx], [src0_val, src1_val, src0_idx, src1_idx], None,
                      *dv.shape, dst_val.item)
    instr.__doc__ = (f"{name}(dst_val, src0_val, src1_val, dst_idx, src0_idx, src1_idx): per element "
                     f"the {what} of src0 and src1 and its index where both are valid (src0's on "
                     "ties, as both devices' kernels select), the valid one's elsewhere.")
    return instr


# -- TADDRELUCONV / TSUBRELUCONV / TADDDEQRELU ---------------------------------------------------
_ADR = OPS["TADDDEQRELU"]
_ADR_OK = _ADR.allowed()


def _relu_conv(op):
    """TADDRELUCONV / TSUBRELUCONV: ``dst = convert(max(src0 +/- src1, 0))``."""
    name, ok = op.name, op.allowed()

    def instr(dst: Tile, src0: Tile, src1: Tile, *events) -> Event:
        core = current_core()
        _sync(events)
        d, a, b = _vec(core, name, dst, src0, src1)
        _same(core, name, src0, a, src1=(src1, b))
        if a.shape != d.shape or not d.size:
            _same_shape(core, name, ("dst", d), ("src0", a))
            raise _err(core, f"{name}: an empty valid region ({d.shape[0]}x{d.shape[1]})",
                       "pto-isa requires valid rows and cols > 0")
        _rule(core, op, src0, ok)
        if RELU_CONV[src0.dtype] != dst.dtype:
            pairs = ", ".join(f"{s.name} -> {t.name}" for s, t in RELU_CONV.items())
            raise _err(core, f"{name}: {src0.dtype.name} sources into {with_article(dst.dtype.name)} dst; the pairs "
                             f"are {pairs}", f"declare dst as {RELU_CONV[src0.dtype].name}")
        core.pending.append((op.kernel, a, b, d))
        return _issue(core, name, [dst], [src0, src1], None, *d.shape, src0.item)
    instr.__doc__ = (f"``dst = convert(max(src0 {'+' if name == 'TADDRELUCONV' else '-'} src1, 0))``: f32 -> f16, "
                     "f16 -> i8 or i16 -> i8, in the sources' dtype and a saturating conversion to nearest "
                     "(ties to even).")
    return instr


def TADDDEQRELU(dst: Tile, src0: Tile, src1: Tile, deq_scale, *rest) -> Event:
    """``dst = f16(max((src0 + src1) * deq_scale, 0))``: int32 sources, a float scale, an f16
    dst (saturated to its range); pto-isa's int32 ``tmp`` tile may follow the scale (A2A3
    adds into it)."""
    core = current_core()
    tmp, events = (rest[0], rest[1:]) if rest and rest[0].__class__ is Tile else (None, rest)
    _sync(events)
    d, a, b = _vec(core, "TADDDEQRELU", dst, src0, src1)
    _same(core, "TADDDEQRELU", src0, a, src1=(src1, b))
    if a.shape != d.shape or not d.size:
        _same_shape(core, "TADDDEQRELU", ("dst", d), ("src0", a))
        raise _err(core, f"TADDDEQRELU: an empty valid region ({d.shape[0]}x{d.shape[1]})",
                   "pto-isa requires valid rows and cols > 0")
    _rule(core, _ADR, src0, _ADR_OK)
    if dst.dtype != dt.float16:
        raise _err(core, f"TADDDEQRELU writes float16, not {dst.describe()}", "declare dst as float16")
    if tmp is not None and tmp.dtype != dt.int32:
        raise _err(core, f"TADDDEQRELU: the tmp tile {tmp.describe()} must be int32", "declare tmp as int32")
    bad = scalar_error(dt.float32, deq_scale)
    if bad is not None:
        raise _err(core, f"TADDDEQRELU: deqScale: {bad}", "pass a float32 value as deqScale")
    scale = np.float32(deq_scale)
    core.pending.append((_ADR.kernel, a, b, scale, d))
    return _issue(core, "TADDDEQRELU", [dst], [src0, src1], tmp, *d.shape, src0.item)


# -- THISTOGRAM ----------------------------------------------------------------------------------
_HIST = OPS["THISTOGRAM"]
_HIST_OK = _HIST.allowed()


def THISTOGRAM(dst: Tile, src: Tile, idx: Tile, byte=None, *events) -> Event:
    """Per valid row of ``src`` (uint16 or uint32), the cumulative histogram of byte ``byte``
    (a HistByte; default the source's most significant) into ``dst`` (uint32, the source's
    rows, >= 256 valid columns): ``dst[i, b]`` counts the row's elements whose byte is <= ``b``
    among those the filter bytes of ``idx`` (uint8) pass - uint16: BYTE_1 unfiltered, BYTE_0
    where byte 1 equals ``idx[i, 0]``; uint32: upper bytes equal to ``idx[0, 0]`` (byte 3),
    ``idx[1, 0]`` (byte 2), ``idx[2, 0]`` (byte 1), 3 - byte rows (none for BYTE_3).
    A5 only, as in pto-isa."""
    core = current_core()
    if byte.__class__ is Event:
        events, byte = (byte,) + events, None
    _sync(events)
    d, a, i = _vec(core, "THISTOGRAM", dst, src, idx)
    _rule(core, _HIST, src, _HIST_OK)
    wide = src.item == 4
    try:
        k = (HistByte.BYTE_3 if wide else HistByte.BYTE_1) if byte is None else HistByte(byte)
    except ValueError:
        raise _err(core, f"THISTOGRAM: byte {byte!r} is not a HistByte",
                   "pass HistByte.BYTE_0 .. BYTE_3") from None
    if not wide and k > HistByte.BYTE_1:
        raise _err(core, f"THISTOGRAM: {k.name} of a uint16 source (it has bytes 0 and 1)",
                   "pass HistByte.BYTE_1 (the upper byte) or BYTE_0")
    if dst.dtype != dt.uint32 or idx.dtype != dt.uint8:
        raise _err(core, f"THISTOGRAM: dst {dst.describe()} and idx {idx.describe()}: the bins are "
                         "uint32, the filter bytes uint8", "declare dst as uint32 and idx as uint8")
    if d.shape[0] != a.shape[0] or d.shape[1] < 256:
        raise _err(core, f"THISTOGRAM: dst's valid region {d.shape[0]}x{d.shape[1]} must have the "
                         f"source's {a.shape[0]} rows and at least 256 columns (one bin per byte value)",
                   f"give dst a {a.shape[0]}x256 valid region")
    need = (3 - int(k)) if wide else (a.shape[0] if k is HistByte.BYTE_0 else 0)
    if need and (i.shape[0] < need or i.shape[1] < 1):
        what = f"the {need} filter rows (bytes 3 .. {int(k) + 1})" if wide else "one filter byte per source row"
        raise _err(core, f"THISTOGRAM {k.name}: idx's valid region {i.shape[0]}x{i.shape[1]} holds fewer than "
                         f"{what}", f"give idx {need} valid rows, the filter byte in column 0")
    core.pending.append((_HIST.kernel, a, i, int(k), d))
    return _issue(core, "THISTOGRAM", [dst], [src, idx], None, *a.shape, src.item)


_BUILD = {"ternary": _ternary, "scalar_ternary": _scalar_ternary, "axpy": _axpy,
          "compare": _compare, "compare_scalar": _compare_scalar, "select": _select,
          "select_scalar": _select_scalar, "col_expand": _col_expand, "col_bcast": _col_bcast,
          "row_arg": _arg, "col_arg": _arg, "part": _part, "dst_binary": _dst_binary,
          "part_arg": _part_arg, "relu_conv": _relu_conv}
for _op in by_form(*_BUILD):
    _fn = named(_BUILD[_op.form](_op), _op.name)
    _fn.__module__ = __name__
    globals()[_op.name] = _fn
__all__ = [_op.name for _op in by_form(*_BUILD)] + ["TADDDEQRELU", "TDEQUANT",
                                                     "THISTOGRAM", "TPOW", "TPOWS", "TQUANT"]
del _op, _fn
