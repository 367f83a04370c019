"""Tile instructions that rearrange or generate data rather than compute element-wise:
TCONCAT (plain and with per-row index tiles), TTRANS, TRESHAPE, TFILLPAD (and its _EXPAND /
_INPLACE forms), TCI, TTRI, TRANDOM, TINSERT (the inverse of TEXTRACT), TGATHER (by index, by
MaskPattern or by comparing with a threshold) / TSCATTER (by index or by MaskPattern),
TGATHERB (32-byte blocks by byte offset), TSORT32, TMRGSORT, TINTERLEAVE / TDEINTERLEAVE,
and TSUBVIEW (a tile bound over part of another's storage).

Each is defined in the op catalogue (:mod:`ptopipe.arch.catalogue`: numpy kernel, dtype
rule per platform, cost class) and checked here when issued; arguments follow pto-isa's
C++ order, enum template parameters (TCI's ``descending``, TTRI's ``upper_or_lower``,
TFILLPAD's pad value) are keyword or positional arguments after the operands.
"""
from __future__ import annotations

from dataclasses import dataclass
from operator import setitem

import numpy as np

from ..arch import PipeUnit
from ..arch import dtypes as dt
from ..arch.catalogue import (CONCAT_INDEX, GATHER_COMPARE, GATHER_COMPARE_A2A3_EQ_ONLY, GATHER_COMPARE_INDEX,
                              GATHER_COMPARE_K, GATHER_COMPARE_MODES, INSERT_PATHS, INSERT_VEC_A2A3, acc_convert_error,
                              OPS, concat_counted, gather_compare, gather_index_error, mrgsort_blocks, pad_value,
                              pattern_takes, platform_label)
from ..arch.vocab import CmpMode, CustomPad, GatherAxis, MaskPattern, PadValue, PlatformID, TileLayout
from .context import current_core, named
from .events import Event, new_event
from ..sim.trace import TileArgs
from .ops import _err, _same_dtype, _scalar_value, _sync, _valid, arr
from .tile import TASSIGN, Tile, TileType
from .vector import _issue, _rule, _tiles_then, _vec
from ..errors import with_article

_VEC = TileType.Vec



def _full(core, t: Tile, what: str) -> np.ndarray:
    """The whole static rows x cols view of tile ``t`` (bound on this core)."""
    arr(t, core, what)
    return t._full


# -- TCONCAT / TTRANS ----------------------------------------------------------------------------
_CONCAT = OPS["TCONCAT"]


def TCONCAT(dst: Tile, src0: Tile, src1: Tile, *rest) -> Event:
    """dst[i, :c0] = src0[i, :], dst[i, c0:c0 + c1] = src1[i, :] (c0, c1: the sources' valid
    columns).  On A5 dst's valid columns must be c0 + c1; on A2A3 they fit its static columns.
    Indexed forms ``TCONCAT(dst, src0, src1[, dstIdx], src0Idx, src1Idx)``: the per-row column
    counts come from column 0 of the index tiles (see :func:`~ptopipe.arch.catalogue.concat_counted`)."""
    core = current_core()
    idx, events = _tiles_then(rest)
    _sync(events)
    d, a, b = _vec(core, "TCONCAT", dst, src0, src1)
    if not (src0.dtype == src1.dtype == dst.dtype):
        _same_dtype(core, "TCONCAT", dst, src0, src1)
    _rule(core, _CONCAT, dst, _CONCAT_OK)
    if idx:
        return _concat_indexed(core, dst, src0, src1, d, a, b, idx)
    c0, c1 = a.shape[1], b.shape[1]
    rows_ok = a.shape[0] == b.shape[0] == d.shape[0]
    a5 = core.cluster.platform.id is PlatformID.PLATFORM_A5
    cols_ok = d.shape[1] == c0 + c1 if a5 else c0 + c1 <= dst.cols
    if not (rows_ok and cols_ok):
        need = f"{c0 + c1} valid columns" if a5 else f"at most {dst.cols} columns (its static width)"
        raise _err(core, f"TCONCAT: dst {d.shape[0]}x{d.shape[1]}, src0 {a.shape[0]}x{c0} and src1 "
                         f"{b.shape[0]}x{c1} do not concatenate: the rows must agree and the "
                         f"columns make {c0 + c1}; on {platform_label(core.cluster.platform.id)} "
                         f"dst takes {need}", "give dst the sources' rows and their total columns")
    out = dst._full[:d.shape[0], :c0 + c1]
    core.pending.append((_CONCAT.kernel, a, b, out))
    return _issue(core, "TCONCAT", [dst], [src0, src1], None, d.shape[0], c0 + c1, dst.item)


_CONCAT_OK = _CONCAT.allowed()


def _concat_indexed(core, dst, src0, src1, d, a, b, idx: tuple) -> Event:
    if len(idx) not in (2, 3):
        raise _err(core, f"TCONCAT takes 2 (src0Idx, src1Idx) or 3 (dstIdx, src0Idx, src1Idx) index "
                         f"tiles after its sources, got {len(idx)}")
    dst_idx, i0, i1 = idx if len(idx) == 3 else (None, *idx)
    arrays = _vec(core, "TCONCAT", *idx)
    for t in idx:
        if t.dtype not in CONCAT_INDEX or t.dtype != i0.dtype:
            raise _err(core, f"TCONCAT: the index tiles are {', '.join(x.dtype.name for x in idx)}; pto-isa "
                             "takes one integer dtype of 1, 2 or 4 bytes for all of them",
                       "declare the index tiles int32 (or another 1-, 2- or 4-byte integer), all alike")
    rows = d.shape[0]
    if not (a.shape[0] == b.shape[0] == rows):
        raise _err(core, f"TCONCAT: dst has {rows} valid rows, src0 {a.shape[0]} and src1 {b.shape[0]}",
                   "give dst and both sources the same valid rows")
    for t, x in zip(idx, arrays):
        have = t.rows if t is dst_idx else x.shape[0]
        if have < rows or x.shape[1] < 1:
            raise _err(core, f"TCONCAT: the index tile {t.describe()} has no column 0 for each of the "
                             f"{rows} rows", "give each index tile a valid [rows, 1] column")
    n0, n1 = arrays[-2][:rows, 0], arrays[-1][:rows, 0]
    out = None if dst_idx is None else dst_idx._full[:rows, 0]
    core.pending.append((concat_counted, src0._full[:rows], src1._full[:rows], n0, n1, i0.item, d, out))
    dsts = [dst] + ([dst_idx] if dst_idx is not None else [])
    return _issue(core, "TCONCAT", dsts, [src0, src1, i0, i1], None, rows, d.shape[1], dst.item)


_TRANS = OPS["TTRANS"]
_TRANS_OK = _TRANS.allowed()


def TTRANS(dst: Tile, src: Tile, *rest) -> Event:
    """dst[j, i] = src[i, j] over src's R x C valid region (dst's valid region at least
    C x R); pto-isa's ``tmp`` tile may follow src."""
    core = current_core()
    tmp, events = (rest[0], rest[1:]) if rest and rest[0].__class__ is Tile else (None, rest)
    _sync(events)
    d, a = _vec(core, "TTRANS", dst, src)
    if src.dtype != dst.dtype:
        _same_dtype(core, "TTRANS", dst, src)
    _rule(core, _TRANS, src, _TRANS_OK)
    r, c = a.shape
    if d.shape[0] < c or d.shape[1] < r:
        raise _err(core, f"TTRANS: a {r}x{c} source transposes to {c}x{r}, but dst's valid region is "
                         f"{d.shape[0]}x{d.shape[1]}", f"give dst a {c}x{r} valid region")
    core.pending.append((_TRANS.kernel, a, d))
    return _issue(core, "TTRANS", [dst], [src], tmp, r, c, src.item)


# -- TRESHAPE ----------------------------------------------------------------------------------
def _copy_bytes(s, d) -> None:
    np.copyto(d.reshape(-1).view(np.uint8), s.reshape(-1).view(np.uint8))


def TRESHAPE(dst: Tile, src: Tile, *events) -> Event:
    """dst holds src's bytes seen as dst's shape and dtype (same tile type, same byte size,
    both fractal or both not).  On A2A3 pto-isa aliases dst to src's storage: a dst at src's
    address moves nothing; elsewhere the bytes are copied (pto-isa's CPU model)."""
    core = current_core()
    _sync(events)
    s, d = _full(core, src, "TRESHAPE source"), _full(core, dst, "TRESHAPE destination")
    if src.loc is not dst.loc:
        raise _err(core, f"TRESHAPE from {with_article(src.loc.value)} tile to {with_article(dst.loc.value)} tile",
                   "reshape within one tile type; TMOV moves between them")
    if src.nbytes != dst.nbytes:
        raise _err(core, f"TRESHAPE: {src.describe()} has {src.nbytes} bytes, {dst.describe()} "
                         f"{dst.nbytes}", "give both tiles the same rows * cols * element size")
    if src.layout.fractal != dst.layout.fractal:
        raise _err(core, f"TRESHAPE between a fractal ({TileLayout.NZ.name}-like) and a plain layout: "
                         f"{src.layout.name} -> {dst.layout.name}",
                   "reshape between two fractal or two plain layouts; TMOV converts layouts")
    if dst.addr == src.addr:
        # pto-isa's TRESHAPE rebinds dst to src's storage and issues nothing (npu TReshape.hpp):
        # no pipe runs it, so it orders nothing and races with nothing; dst is ready when src is
        if src.ready_at > dst.ready_at:
            dst.ready_at = src.ready_at
        return new_event(("TRESHAPE", core, dst.ready_at))
    core.pending.append((_copy_bytes, s, d))
    pipe = PipeUnit.V if src.loc is _VEC else PipeUnit.MTE1
    args = TileArgs(dst.shape, dst.dtype) if core.trace is not None else None
    _, end = core.issue(pipe, core.costs.move(src.sname, dst.sname, src.nbytes), (src,), (dst,), "TRESHAPE", args)
    return new_event(("TRESHAPE", core, end))


# -- TFILLPAD ----------------------------------------------------------------------------------
def _fillpad(name: str):
    op = OPS[name]
    ok = op.allowed()

    def instr(dst: Tile, src: Tile, pad=None, *events) -> Event:
        core = current_core()
        if pad.__class__ is Event:
            events, pad = (pad,) + events, None
        if pad is None:             # pto-isa: the destination type's PadVal (docs/isa/TFILLPAD.md)
            pad = dst.pad if dst.__class__ is Tile else PadValue.Zero
        _sync(events)
        if name == "TFILLPAD" and dst.__class__ is Tile and dst.loc is TileType.Mat:
            return _fillpad_mat(core, dst, src, pad)
        a = _vec(core, name, src)[0]
        d = _full(core, dst, f"{name} destination")
        if dst.loc is not _VEC:
            _vec(core, name, dst)
        if src.dtype != dst.dtype:
            _same_dtype(core, name, dst, src)
        _rule(core, op, dst, ok)
        shapes = f"dst {dst.rows}x{dst.cols}, src {src.rows}x{src.cols}"
        if name == "TFILLPAD" and dst.shape != src.shape:
            raise _err(core, f"TFILLPAD: the static shapes differ ({shapes})",
                       "use TFILLPAD_EXPAND for a larger destination")
        if name == "TFILLPAD_EXPAND" and (dst.rows < src.rows or dst.cols < src.cols):
            raise _err(core, f"TFILLPAD_EXPAND: dst is smaller than src ({shapes})",
                       "the destination's static shape must cover the source's")
        if name == "TFILLPAD_INPLACE" and (dst.addr != src.addr or dst.shape != src.shape):
            raise _err(core, f"TFILLPAD_INPLACE: dst and src are not one tile ({dst.describe()}, "
                             f"{src.describe()})", "pass the same storage as dst and src")
        if not (isinstance(pad, (PadValue, CustomPad)) or (isinstance(pad, (int, float, np.number))
                                                           and not isinstance(pad, bool))):
            raise _err(core, f"{name}: pad {pad!r} is not a PadValue or a number",
                       "pass PadValue.Zero / Max / Min or a number")
        if pad is PadValue.Null:
            raise _err(core, f"{name}: PadValue.Null is no pad value (pto-isa: \"TFillPad dst vecTile pad value "
                             "must not be Null\")", "pass PadValue.Zero / Max / Min or a number")
        fill = pad_value(pad, dst.dtype) if isinstance(pad, (PadValue, CustomPad)) \
            else _scalar_value(core, name, dst, pad)
        core.pending.append((op.kernel, a, fill, d))
        return _issue(core, name, [dst], [src], None, dst.rows, dst.cols, dst.item)
    instr.__doc__ = f"{name}(dst, src, pad=dst.pad): the whole dst tile = src in src's valid " \
                    "region, the pad value elsewhere (Max / Min: +/-inf for floats, the integer " \
                    "limits; a number: a custom pad); without one, the destination's own PadValue " \
                    "(Tile(..., pad=...), pto-isa's PadVal template parameter)."
    named(instr, name)
    return instr


def _fillpad_mat(core, dst: Tile, src: Tile, pad) -> Event:
    """pto-isa's TFILLPAD of an L1 (Mat) tile on the Cube (a2a3 TFillPad.hpp, create_cbuf_matrix):
    zeros in dst's padding - the rows below its valid rows up to its valid columns rounded up to a
    32-byte block, and every column past that block - for the matmul reading the whole fractals."""
    if src is not dst and (src.__class__ is not Tile or src.loc is not TileType.Mat or src.addr != dst.addr):
        raise _err(core, f"TFILLPAD of {dst.describe()}: an L1 tile is padded in place (dst and src one tile), "
                         f"got {src.describe() if src.__class__ is Tile else src!r}", "pass the Mat tile as dst and src")
    if dst.layout is not TileLayout.NZ:
        raise _err(core, f"TFILLPAD of {dst.describe()}: pto-isa pads an L1 tile in the NZ layout only",
                   "declare the Mat tile NZ (BLayout::ColMajor, SLayout::RowMajor)")
    if pad not in (PadValue.Zero, PadValue.Null):
        raise _err(core, f"TFILLPAD of {dst.describe()}: an L1 tile is padded with zeros (pad {pad!r})",
                   "pass PadValue.Zero (or none)")
    d = _full(core, dst, "TFILLPAD destination")
    vr, vc = dst.valid_rows, dst.valid_cols
    block = 32 // dst.item
    aligned = min(dst.cols, -(-vc // block) * block)
    core.pending.append((_zero_mat_padding, d, vr, aligned))
    padded = (dst.rows - vr) * aligned + dst.rows * (dst.cols - aligned)
    args = TileArgs(dst.shape, dst.dtype) if core.trace is not None else None
    _, end = core.issue(PipeUnit.MTE2, core.costs.move(dst.sname, dst.sname, padded * dst.item), (), (dst,),
                        "TFILLPAD", args)
    return new_event(("TFILLPAD", core, end))


def _zero_mat_padding(d: np.ndarray, rows: int, cols: int) -> None:
    d[rows:, :cols] = 0
    d[:, cols:] = 0


TFILLPAD = _fillpad("TFILLPAD")
TFILLPAD_EXPAND = _fillpad("TFILLPAD_EXPAND")
TFILLPAD_INPLACE = _fillpad("TFILLPAD_INPLACE")


# -- TCI / TTRI ----------------------------------------------------------------------------------
_CI = OPS["TCI"]
_CI_OK = _CI.allowed()


def TCI(dst: Tile, start, *rest, descending: bool = False) -> Event:
    """dst[0, k] = start + k (start - k if ``descending``) for the valid columns of a one-row
    tile; pto-isa's ``tmp`` tile (A2A3's vectorised form) may follow ``start``."""
    core = current_core()
    if rest and (isinstance(rest[0], (bool, np.bool_)) or (rest[0].__class__ is int and rest[0] in (0, 1))):
        descending, rest = bool(rest[0]), rest[1:]      # (pto-isa's template flag: bool or 0 / 1)
    tmp, events = (rest[0], rest[1:]) if rest and rest[0].__class__ is Tile else (None, rest)
    _sync(events)
    d = _vec(core, "TCI", dst)[0]
    _rule(core, _CI, dst, _CI_OK)
    if dst.rows != 1:
        raise _err(core, f"TCI: {dst.describe()} has {dst.rows} rows; pto-isa generates the "
                         "sequence along one row (Rows == 1)", "declare dst with one row")
    v = _scalar_value(core, "TCI", dst, start)
    if d.size:
        core.pending.append((_CI.kernel, v.item(), bool(descending), d))
    return _issue(core, "TCI", [dst], [], tmp, *d.shape, dst.item)


_TRI = OPS["TTRI"]
_TRI_OK = _TRI.allowed()


def TTRI(dst: Tile, diagonal: int, upper_or_lower: int = 0, *events) -> Event:
    """A 0/1 mask over dst's valid region: lower (``upper_or_lower=0``) 1 where
    ``j <= i + diagonal``; upper (1) 1 where ``j >= i + diagonal``."""
    core = current_core()
    if upper_or_lower.__class__ is Event:
        events, upper_or_lower = (upper_or_lower,) + events, 0
    _sync(events)
    d = _vec(core, "TTRI", dst)[0]
    _rule(core, _TRI, dst, _TRI_OK)
    if upper_or_lower not in (0, 1) or isinstance(diagonal, bool) or \
            not isinstance(diagonal, (int, np.integer)):
        raise _err(core, f"TTRI: upper_or_lower={upper_or_lower!r} must be 0 (lower) or 1 (upper) "
                         f"and diagonal={diagonal!r} an integer")
    core.pending.append((_TRI.kernel, int(diagonal), bool(upper_or_lower), d))
    return _issue(core, "TTRI", [dst], [], None, *d.shape, dst.item)


# -- TRANDOM ------------------------------------------------------------------------------------
_RANDOM = OPS["TRANDOM"]
_RANDOM_OK = _RANDOM.allowed()


def _words(core, what: str, value, n: int) -> tuple:
    try:
        words = tuple(int(w) for w in value)
    except TypeError:
        words = ()
    if len(words) != n or any(not -(1 << 31) <= w < 1 << 32 for w in words):
        raise _err(core, f"TRANDOM: the {what} {value!r} is not {n} 32-bit words",
                   f"pass the {what} as {n} integers in 0 .. 2**32 - 1 (an i32 may be negative)")
    return tuple(w & 0xFFFFFFFF for w in words)      # an i32 word's bits


def TRANDOM(dst: Tile, *args, rounds: int = 10) -> Event:
    """Philox-4x32 random words into dst's valid region: ``TRANDOM(dst, key, counter)``
    (``key``: 2 words, ``counter``: 4 words, as pto-isa's TRandomKey / TRandomCounter) or
    ``TRANDOM(dst, k0, k1, c0, c1, c2, c3)`` (PTO-AS ``pto.trandom``'s operands);
    ``rounds`` 7 or 10.  The same key and counter give the same words, run after run; the
    words are laid out as pto-isa's CPU model lays them (:func:`~ptopipe.arch.catalogue.random_words`)."""
    core = current_core()
    k = 2 if len(args) >= 2 and not np.isscalar(args[0]) else 6
    operands, events = args[:k], args[k:]
    _sync(events)
    if k == 2:
        key, counter = _words(core, "key", operands[0], 2), _words(core, "counter", operands[1], 4)
    else:
        ws = _words(core, "key and counter", operands, 6)
        key, counter = ws[:2], ws[2:]
    d = _vec(core, "TRANDOM", dst)[0]
    _rule(core, _RANDOM, dst, _RANDOM_OK)
    if rounds not in (7, 10):
        raise _err(core, f"TRANDOM: rounds={rounds!r}; pto-isa runs 7 or 10 rounds", "pass rounds=10 or 7")
    if d.size:
        core.pending.append((_RANDOM.kernel, key, counter, int(rounds), dst.cols, d))
    return _issue(core, "TRANDOM", [dst], [], None, *d.shape, dst.item)


# -- TINSERT -----------------------------------------------------------------------------------
def TINSERT(dst: Tile, src: Tile, index_row: int = 0, index_col: int = 0, *events) -> Event:
    """dst[index_row + i, index_col + j] = src[i, j] over src's valid region (TEXTRACT's
    inverse): Acc -> Mat on FIX, converting f32 to f16 / bf16 (A5 also f32 -> f32, i32 ->
    i32); Vec -> Vec on V, same dtype (A2A3: a 32-byte aligned column, or one element)."""
    core = current_core()
    _sync(events)
    s = _valid(src, core, "TINSERT source")
    d = _full(core, dst, "TINSERT destination")
    pid = core.cluster.platform.id
    path = INSERT_PATHS.get((src.loc, dst.loc))
    if path is None or pid not in path[1]:
        have = ", ".join(f"{a.value}->{b.value}" for (a, b), (_, on) in INSERT_PATHS.items() if pid in on)
        raise _err(core, f"TINSERT from {src.loc.value} to {dst.loc.value} is not a path on "
                         f"{platform_label(pid)}", f"paths modelled there: {have}")
    pipe = path[0]
    if src.loc is TileType.Acc:
        bad = acc_convert_error("TINSERT", src.dtype, dst.dtype, pid)
        if bad is not None:
            raise _err(core, *bad)
    elif src.dtype != dst.dtype:
        _same_dtype(core, "TINSERT", dst, src)
    r, c = s.shape
    index_row, index_col = int(index_row), int(index_col)
    if index_row < 0 or index_col < 0 or index_row + r > dst.rows or index_col + c > dst.cols:
        raise _err(core, f"TINSERT block {r}x{c} at ({index_row}, {index_col}) is outside the "
                         f"{dst.rows}x{dst.cols} destination")
    if pid is PlatformID.PLATFORM_A2A3 and src.loc is TileType.Vec and dst.loc is TileType.Vec:
        _a2a3_vec_insert(core, dst, src, r, c, index_col)
    core.pending.append((setitem, d, (slice(index_row, index_row + r), slice(index_col, index_col + c)), s))
    cost = (core.costs.vector_op("TINSERT", r, c, src.item) if pipe is PipeUnit.V
            else core.costs.move(src.sname, dst.sname, r * c * dst.item))
    args = TileArgs((r, c), dst.dtype) if core.trace is not None else None
    _, end = core.issue(pipe, cost, (src,), (dst,), "TINSERT", args)
    return new_event(("TINSERT", core, end))


def _a2a3_vec_insert(core, dst: Tile, src: Tile, r: int, c: int, index_col: int) -> None:
    """pto-isa's A2A3 TINSERT Vec -> Vec (a2a3/TInsert.hpp TInsertVecToVecNDDispatch): its
    dtypes, and a block (not one element) starting on a 32-byte column boundary."""
    if src.dtype not in INSERT_VEC_A2A3:
        raise _err(core, f"TINSERT Vec->Vec on A2A3 copies {', '.join(sorted(d.name for d in INSERT_VEC_A2A3))} "
                         f"tiles, not {src.dtype.name}", "insert on A5, or TRESHAPE the tiles to a 4-byte type")
    if (r, c) != (1, 1) and (index_col * src.item) % 32:
        raise _err(core, f"TINSERT Vec->Vec on A2A3: a {r}x{c} block at column {index_col} starts "
                         f"{index_col * src.item} bytes into the row; pto-isa's A2A3 copy needs a 32-byte "
                         "aligned indexCol (a2a3/TInsert.hpp)",
                   f"insert at a column that is a multiple of {32 // src.item}, or one element at a time")


# -- TGATHER / TSCATTER / TSORT32 ------------------------------------------------------------
_GATHER, _SCATTER, _SORT = OPS["TGATHER"], OPS["TSCATTER"], OPS["TSORT32"]
_GATHER_OK, _SCATTER_OK, _SORT_OK = _GATHER.allowed(), _SCATTER.allowed(), _SORT.allowed()
_INDEX = (dt.int32, dt.uint32)


def _pattern(core, name: str, rest: tuple, mask_pattern, axis):
    """(MaskPattern, GatherAxis, events) of a mask-form call: the enums may come positionally."""
    if rest and isinstance(rest[0], MaskPattern):
        mask_pattern, rest = rest[0], rest[1:]
    if rest and isinstance(rest[0], GatherAxis):
        axis, rest = rest[0], rest[1:]
    try:
        return MaskPattern(mask_pattern), GatherAxis(axis), rest
    except ValueError:
        raise _err(core, f"{name}: mask_pattern={mask_pattern!r}, axis={axis!r} are not a MaskPattern "
                         "and a GatherAxis") from None


#: TSCATTER's index types by the data's element size (pto-isa's npu a2a3 / a5 TScatter.hpp
#: static_asserts: uint16 / int16 / uint32 / int32 indices, 4 bytes for 4-byte data, 2 for 2-
#: and 1-byte data, 4 for A5's 8-byte data)
_SCATTER_INDEX = {8: (dt.int32, dt.uint32), 4: (dt.int32, dt.uint32), 2: (dt.int16, np.dtype(np.uint16)),
                  1: (dt.int16, np.dtype(np.uint16))}


def _index_tile(core, name: str, idx: Tile, rows: int, cols: int, allowed=_INDEX, data=None) -> np.ndarray:
    i = _vec(core, name, idx)[0]
    if idx.dtype not in allowed:
        of = f" for {data.name} data" if data is not None else ""
        raise _err(core, f"{name}: the index tile {idx.describe()} is {idx.dtype.name}; indices{of} are "
                         f"{' or '.join(d.name for d in allowed)}", f"declare the index tile as {allowed[0].name}")
    if i.shape[0] < rows or i.shape[1] < cols:
        raise _err(core, f"{name}: the index tile's valid region {i.shape[0]}x{i.shape[1]} does not "
                         f"cover the {rows}x{cols} elements", "give one index per element")
    return i[:rows, :cols]


def _bitcast(core, name: str, dst: Tile, src: Tile) -> None:
    if dst.item != src.item:
        raise _err(core, f"{name}: {dst.dtype.name} and {src.dtype.name} differ in size",
                   "give dst an element type of the source's size")


def _mask_gather(src_a, pattern, axis, dst_full) -> None:
    if axis is GatherAxis.GATHER_ROW:
        taken = src_a[:, pattern_takes(pattern, src_a.shape[1])].reshape(-1)
        dst_full.reshape(-1)[:taken.size] = taken.view(dst_full.dtype)
    else:
        taken = src_a[pattern_takes(pattern, src_a.shape[0])]
        dst_full[:taken.shape[0], :taken.shape[1]] = taken.view(dst_full.dtype)


def TGATHER(dst: Tile, src: Tile, *rest, mask_pattern=MaskPattern.P1111,
            axis=GatherAxis.GATHER_ROW, mode=CmpMode.EQ, offset=0) -> Event:
    """By index: ``TGATHER(dst, src, indices[, tmp])``: dst[r, c] = src.flat[indices[r, c]]
    (row-major over the whole src tile; an index outside it is an error).  By pattern: ``TGATHER(dst, src,
    mask_pattern, axis)``: the src elements (GATHER_ROW: columns, GATHER_COL: rows) the
    pattern takes, packed from dst's start.  By compare: ``TGATHER(dst, src, kValue, cdst,
    tmp[, offset], mode=CmpMode.EQ | GT)``: per row the column numbers (+ offset) of the
    elements ``<mode>`` kValue (a per-row tile, element i for row i, or one scalar: ptoas's
    form), packed into the row of dst, and their count into cdst's element i."""
    core = current_core()
    tiles, rest = _tiles_then(rest)
    if len(tiles) == 3 or (not tiles and rest and isinstance(rest[0], (int, float, np.number))
                           and not isinstance(rest[0], (bool, MaskPattern, GatherAxis))):
        return _gather_compare(core, dst, src, tiles, rest, mode, offset)
    if tiles:
        idx, tmp = tiles[0], (tiles[1] if len(tiles) > 1 else None)
        _sync(rest)
        d, _ = _vec(core, "TGATHER", dst, src)
        if src.dtype != dst.dtype:
            _same_dtype(core, "TGATHER", dst, src)
        _rule(core, _GATHER, dst, _GATHER_OK)
        i = _index_tile(core, "TGATHER", idx, *d.shape)
        core.cluster.sync()          # the indices' values decide: one past src is an error at this line
        bad = gather_index_error(src._full.shape, i)
        if bad is not None:
            raise _err(core, *bad)
        core.pending.append((_GATHER.kernel, src._full, i, d))
        return _issue(core, "TGATHER", [dst], [src, idx], tmp, *d.shape, dst.item)
    pattern, axis, events = _pattern(core, "TGATHER", rest, mask_pattern, axis)
    _sync(events)
    a, _ = _vec(core, "TGATHER", src, dst)
    full = dst._full
    _bitcast(core, "TGATHER", dst, src)
    _rule(core, _GATHER, src, _GATHER_OK)
    along = a.shape[1] if axis is GatherAxis.GATHER_ROW else a.shape[0]
    n = int(pattern_takes(pattern, along).sum())
    need = n * a.shape[0] if axis is GatherAxis.GATHER_ROW else n
    room = full.size if axis is GatherAxis.GATHER_ROW else dst.rows
    if need > room or (axis is GatherAxis.GATHER_COL and a.shape[1] > dst.cols):
        raise _err(core, f"TGATHER: {pattern.name} takes {need} {'elements' if axis is GatherAxis.GATHER_ROW else 'rows'}"
                         f" of the {a.shape[0]}x{a.shape[1]} source; {dst.describe()} holds {room}",
                   "give dst room for what the pattern takes")
    core.pending.append((_mask_gather, a, pattern, axis, full))
    return _issue(core, "TGATHER", [dst], [src], None, *a.shape, src.item)


def _gather_compare(core, dst, src, tiles, rest, mode, offset) -> Event:
    if tiles:
        k, cdst, tmp = tiles
    else:
        k = rest[0]
        more, rest = _tiles_then(rest[1:])
        cdst, tmp = (tuple(more) + (None, None))[:2]
    if rest and isinstance(rest[0], (int, np.integer)) and not isinstance(rest[0], bool):
        offset, rest = int(rest[0]), rest[1:]
    if cdst is None or tmp is None:
        raise _err(core, "TGATHER's compare form takes (dst, src, kValue, cdst, tmp[, offset])",
                   "pass the count tile cdst and pto-isa's tmp tile after kValue")
    _sync(rest)
    platform = core.cluster.platform.id
    a = _vec(core, "TGATHER", dst, src, cdst, tmp)[1]
    try:
        mode = CmpMode(mode)
    except ValueError:
        raise _err(core, f"TGATHER: mode={mode!r} is not a CmpMode") from None
    if mode not in GATHER_COMPARE_MODES:
        raise _err(core, f"TGATHER's compare form compares with CmpMode.EQ or GT, not {mode.name}",
                   "use CmpMode.EQ or CmpMode.GT")
    ok = GATHER_COMPARE.on(platform)
    on = platform_label(platform)
    if src.dtype not in ok:
        raise _err(core, f"TGATHER's compare form takes {', '.join(sorted(x.name for x in ok))} sources on "
                         f"{on}, not {src.dtype.name}", "TCVT the source to f32 first")
    if platform is PlatformID.PLATFORM_A2A3 and src.dtype in GATHER_COMPARE_A2A3_EQ_ONLY and mode is not CmpMode.EQ:
        raise _err(core, f"TGATHER's compare form on A2A3 takes {src.dtype.name} sources with CmpMode.EQ "
                         f"only, not {mode.name}", "compare with EQ, or TCVT the source to f32")
    for role, t in (("dst", dst), ("cdst", cdst)):
        if t.dtype not in GATHER_COMPARE_INDEX:
            raise _err(core, f"TGATHER's compare form writes int32 / uint32 indices; {role} is "
                             f"{t.describe()}", f"declare {role} int32")
    if cdst.dtype != dst.dtype:
        _same_dtype(core, "TGATHER", dst, cdst)
    rows, cols = a.shape
    if dst.rows < rows or dst.cols < cols:
        raise _err(core, f"TGATHER: a {rows}x{cols} source can match every element; {dst.describe()} has "
                         f"room for {dst.rows}x{dst.cols}", "give dst the source's valid rows and columns")
    if cdst.rows * cdst.cols < rows:
        raise _err(core, f"TGATHER: cdst {cdst.describe()} holds {cdst.rows * cdst.cols} counts, the "
                         f"source has {rows} rows", "give cdst one element per source row")
    if isinstance(k, Tile):
        if k.dtype not in GATHER_COMPARE_K.on(platform):
            ks = ", ".join(sorted(x.name for x in GATHER_COMPARE_K.on(platform)))
            raise _err(core, f"TGATHER's compare form takes a {ks} kValue tile on {on}, not "
                             f"{k.dtype.name}", f"declare the kValue tile {ks.split(', ')[0]}")
        kf = _full(core, k, "TGATHER kValue").reshape(-1)
        if kf.size < rows:
            raise _err(core, f"TGATHER: the kValue tile {k.describe()} has {kf.size} elements, the source "
                             f"{rows} rows", "give kValue one element per source row")
        kv, reads = kf[:rows], [src, k]
    else:
        kv, reads = np.full(rows, _scalar_value(core, "TGATHER", src, k)), [src]
    counts = cdst._full.reshape(-1)[:rows]
    core.pending.append((gather_compare, a, kv, mode, offset, dst._full, counts))
    return _issue(core, "TGATHER", [dst, cdst], reads, tmp, rows, cols, src.item)


def _mask_scatter(src_full, pattern, axis, d) -> None:
    rows, cols = d.shape
    out = np.zeros(d.shape, d.dtype)
    if axis is GatherAxis.GATHER_ROW:
        take = np.broadcast_to(pattern_takes(pattern, cols), d.shape)
        out[take] = src_full.reshape(-1)[:int(take.sum())].view(d.dtype)
    else:
        take = pattern_takes(pattern, rows)
        out[take] = src_full[:int(take.sum()), :cols].view(d.dtype)
    d[...] = out


def TSCATTER(dst: Tile, src: Tile, *rest, mask_pattern=MaskPattern.P1111,
             axis=GatherAxis.GATHER_ROW) -> Event:
    """By index: ``TSCATTER(dst, src, indexes)``: dst.flat[indexes[r, c]] = src[r, c] over the
    index tile's valid region (row-major over the whole dst tile).  By pattern:
    ``TSCATTER(dst, src, mask_pattern, axis)``: dst's valid region takes src's elements in
    order where the pattern takes (columns of each row, or whole rows), 0 elsewhere."""
    core = current_core()
    tiles, rest = _tiles_then(rest)
    if tiles:
        idx = tiles[0]
        _sync(rest)
        _, s = _vec(core, "TSCATTER", dst, src)
        if src.dtype != dst.dtype:
            _same_dtype(core, "TSCATTER", dst, src)
        _rule(core, _SCATTER, dst, _SCATTER_OK)
        iv = _vec(core, "TSCATTER", idx)[0]
        i = _index_tile(core, "TSCATTER", idx, *iv.shape, _SCATTER_INDEX.get(dst.item, _INDEX), dst.dtype)
        if s.shape[0] < i.shape[0] or s.shape[1] < i.shape[1]:
            raise _err(core, f"TSCATTER: the source's valid region {s.shape[0]}x{s.shape[1]} does not "
                             f"cover the {i.shape[0]}x{i.shape[1]} indexes", "give one source element per index")
        core.pending.append((_SCATTER.kernel, s[:i.shape[0], :i.shape[1]], i, dst._full))
        return _issue(core, "TSCATTER", [dst], [src, idx], None, *i.shape, dst.item)
    pattern, axis, events = _pattern(core, "TSCATTER", rest, mask_pattern, axis)
    _sync(events)
    d, _ = _vec(core, "TSCATTER", dst, src)
    _bitcast(core, "TSCATTER", dst, src)
    _rule(core, _SCATTER, dst, _SCATTER_OK)
    along = d.shape[1] if axis is GatherAxis.GATHER_ROW else d.shape[0]
    n = int(pattern_takes(pattern, along).sum())
    if (n * d.shape[0] if axis is GatherAxis.GATHER_ROW else n * d.shape[1]) > src.rows * src.cols \
            or (axis is GatherAxis.GATHER_COL and d.shape[1] > src.cols):
        raise _err(core, f"TSCATTER: {pattern.name} places more elements than {src.describe()} holds",
                   "give src what the pattern places")
    core.pending.append((_mask_scatter, src._full, pattern, axis, d))
    return _issue(core, "TSCATTER", [dst], [src], None, *d.shape, dst.item)


def TSORT32(dst: Tile, src: Tile, idx: Tile, tmp: Tile | None = None) -> Event:
    """Per row, each block of 32 src values with their idx (uint32; a one-row idx serves every
    row) sorted by value, descending (ties: the smaller index first), into dst as 8-byte [value, index] tuples
    (dst: 2 (f32) or 4 (f16) columns per source column).  No wait events (pto-isa's
    TSORT32 does not sync); without ``tmp`` the valid columns are a multiple of 32."""
    core = current_core()
    d, s, i = _vec(core, "TSORT32", dst, src, idx)
    if src.dtype != dst.dtype:
        _same_dtype(core, "TSORT32", dst, src)
    _rule(core, _SORT, src, _SORT_OK)
    # one index row serves every row (pto-isa: idxStride 0 when idx's valid rows are 1)
    if idx.dtype != dt.uint32 or (i.shape[0] < s.shape[0] and i.shape[0] != 1) or i.shape[1] < s.shape[1]:
        raise _err(core, f"TSORT32: the index tile {idx.describe()} must be uint32 with a valid region "
                         f"covering the {s.shape[0]}x{s.shape[1]} values (or one row of {s.shape[1]} indices "
                         "for every row)", "one uint32 index per value, or one index row shared by the rows")
    if tmp is None and s.shape[1] % 32:
        raise _err(core, f"TSORT32: {s.shape[1]} valid columns are not whole blocks of 32; the "
                         "form without tmp sorts whole blocks", "pass a tmp tile (TSORT32(dst, src, idx, tmp))")
    width = s.shape[1] * 8 // dst.item
    if d.shape[0] < s.shape[0] or d.shape[1] < width:
        raise _err(core, f"TSORT32: dst's valid region {d.shape[0]}x{d.shape[1]} cannot hold "
                         f"{s.shape[0]}x{s.shape[1]} 8-byte tuples", f"give dst {width} valid columns")
    ix = i[:s.shape[0], :s.shape[1]] if i.shape[0] != 1 else np.broadcast_to(i[:1, :s.shape[1]], s.shape)
    core.pending.append((_SORT.kernel, s, ix, d[:s.shape[0]]))
    return _issue(core, "TSORT32", [dst], [src, idx], tmp, *s.shape, src.item)


@dataclass
class MrgSortExecutedNumList:
    """pto-isa's ``MrgSortExecutedNumList``: how many tuples a multi-list TMRGSORT took from
    each of its lists (set when the TMRGSORT has executed)."""
    mrgSortList0: int = 0
    mrgSortList1: int = 0
    mrgSortList2: int = 0
    mrgSortList3: int = 0


_MRG = OPS["TMRGSORT"]
_MRG_OK = _MRG.allowed()


def _one_row(core, tiles) -> None:
    for t in tiles:
        if t.rows != 1:
            raise _err(core, f"TMRGSORT: {t.describe()} has {t.rows} rows; its lists are one-row tiles",
                       "declare every TMRGSORT tile with Rows == 1")


def TMRGSORT(dst: Tile, *args, exhausted: bool = False) -> Event:
    """Merge sorted lists of 8-byte [value, index] tuples (TSORT32's output) into dst,
    descending by value (ties: the earlier list): ``TMRGSORT(dst, src, block_len)`` merges
    each 4 consecutive blocks of ``block_len`` elements of src; ``TMRGSORT(dst, executed,
    tmp, src0, src1[, src2, src3], exhausted=False)`` merges 2 to 4 lists into dst's valid
    tuples and records how many of each it took in ``executed`` (a MrgSortExecutedNumList;
    with ``exhausted`` it stops when a list runs out)."""
    core = current_core()
    if len(args) >= 2 and args[0].__class__ is Tile and not isinstance(args[1], Tile):
        src, block_len, events = args[0], args[1], args[2:]
        _sync(events)
        d, s = _vec(core, "TMRGSORT", dst, src)
        _one_row(core, (dst, src))
        if src.dtype != dst.dtype:
            _same_dtype(core, "TMRGSORT", dst, src)
        _rule(core, _MRG, dst, _MRG_OK)
        if isinstance(block_len, bool) or not isinstance(block_len, (int, np.integer)) or block_len <= 0 \
                or block_len % 64 or s.shape[1] % (4 * block_len) or not 1 <= s.shape[1] // (4 * block_len) <= 255:
            raise _err(core, f"TMRGSORT: block_len {block_len!r} with {s.shape[1]} valid source columns: "
                             "block_len is a multiple of 64 and the columns 1 to 255 groups of 4 blocks",
                       "pass a block_len that divides the source into groups of 4 blocks")
        core.pending.append((mrgsort_blocks, s, int(block_len), d))
        return _issue(core, "TMRGSORT", [dst], [src], None, *s.shape, src.item)
    tiles, events = _tiles_then(args[1:]) if args else ((), ())
    executed = args[0] if args else None
    if not hasattr(executed, "mrgSortList0") or not 3 <= len(tiles) <= 5:
        raise _err(core, "TMRGSORT takes (dst, src, block_len) or (dst, executed, tmp, src0, src1[, "
                         "src2, src3])", "pass a MrgSortExecutedNumList, the tmp tile and 2 to 4 lists")
    _sync(events)
    tmp, srcs = tiles[0], tiles[1:]
    arrays = _vec(core, "TMRGSORT", dst, tmp, *srcs)
    d, lists = arrays[0], arrays[2:]
    _one_row(core, (dst, tmp) + srcs)
    if any(t.dtype != dst.dtype for t in (tmp,) + srcs):
        _same_dtype(core, "TMRGSORT", dst, tmp, *srcs)
    _rule(core, _MRG, dst, _MRG_OK)
    if tmp.cols < sum(a.shape[1] for a in lists):      # (what the lists hold: their valid columns)
        raise _err(core, f"TMRGSORT: tmp has {tmp.cols} columns; the lists' valid columns total "
                         f"{sum(a.shape[1] for a in lists)}", "give tmp the lists' total valid columns")
    core.pending.append((_MRG.kernel, lists, bool(exhausted), executed, d))
    ev = _issue(core, "TMRGSORT", [dst], list(srcs), tmp, 1, sum(a.shape[1] for a in lists), dst.item)
    core.cluster.sync()              # ``executed`` holds the counts when TMRGSORT returns
    return ev


# -- TINTERLEAVE / TDEINTERLEAVE -------------------------------------------------------------------
_INTLV, _DINTLV = OPS["TINTERLEAVE"], OPS["TDEINTERLEAVE"]
_INTLV_OK, _DINTLV_OK = _INTLV.allowed(), _DINTLV.allowed()


def _pairs_shape(core, name: str, tiles, arrays, shape, why: str) -> None:
    """Every tile of ``tiles`` has the valid ``shape`` and the first tile's dtype."""
    if any(a.shape != shape for a in arrays) or any(t.dtype != tiles[0].dtype for t in tiles):
        if any(t.dtype != tiles[0].dtype for t in tiles):
            _same_dtype(core, name, *tiles)
        desc = ", ".join(f"{a.shape[0]}x{a.shape[1]}" for a in arrays)
        raise _err(core, f"{name}: valid regions {desc}; {why}", "give the tiles the valid shapes pto-isa checks")


def TINTERLEAVE(dst1: Tile, dst0: Tile, src1: Tile, src0: Tile, *events) -> Event:
    """pto-isa's order ``(dst1, dst0, src1, src0)``: each row's stream src0[0], src1[0],
    src0[1], src1[1], ... split in halves, the first into dst0, the second into dst1.  All
    four tiles have one valid shape with an even number of columns (A5 only)."""
    core = current_core()
    _sync(events)
    d1, d0, s1, s0 = _vec(core, "TINTERLEAVE", dst1, dst0, src1, src0)
    _rule(core, _INTLV, dst0, _INTLV_OK)
    _pairs_shape(core, "TINTERLEAVE", (dst0, dst1, src0, src1), (d0, d1, s0, s1), d0.shape,
                 "all four tiles take dst0's valid shape")
    if d0.shape[1] % 2:
        raise _err(core, f"TINTERLEAVE: {d0.shape[1]} valid columns; pto-isa interleaves an even number",
                   "give the tiles an even number of valid columns")
    core.pending.append((_INTLV.kernel, s0, s1, d0, d1))
    return _issue(core, "TINTERLEAVE", [dst0, dst1], [src0, src1], None, *d0.shape, dst0.item)


def TDEINTERLEAVE(dst1: Tile, dst0: Tile, *args) -> Event:
    """pto-isa's order: ``TDEINTERLEAVE(dst1, dst0, src1, src0)`` (two sources, the first and
    the second half of each row's stream; all four of one valid shape, even columns) or
    ``TDEINTERLEAVE(dst1, dst0, src)`` (one source of 2C valid columns, dst0 and dst1 of C):
    the stream's even elements into dst0, its odd elements into dst1 (A5 only)."""
    core = current_core()
    tiles, events = _tiles_then(args)
    if len(tiles) not in (1, 2):
        raise _err(core, f"TDEINTERLEAVE takes (dst1, dst0, src1, src0) or (dst1, dst0, src), got "
                         f"{2 + len(tiles)} tiles")
    _sync(events)
    d1, d0 = _vec(core, "TDEINTERLEAVE", dst1, dst0)
    srcs = _vec(core, "TDEINTERLEAVE", *tiles)
    _rule(core, _DINTLV, dst0, _DINTLV_OK)
    if len(tiles) == 2:
        (src1, src0), (s1, s0) = tiles, srcs
        _pairs_shape(core, "TDEINTERLEAVE", (dst0, dst1, src0, src1), (d0, d1, s0, s1), d0.shape,
                     "all four tiles take dst0's valid shape")
        if d0.shape[1] % 2:
            raise _err(core, f"TDEINTERLEAVE: {d0.shape[1]} valid columns; pto-isa de-interleaves an "
                             "even number", "give the tiles an even number of valid columns")
        core.pending.append((_DINTLV.kernel, s0, s1, d0, d1))
        return _issue(core, "TDEINTERLEAVE", [dst0, dst1], [src0, src1], None, *d0.shape, dst0.item)
    (src,), (s,) = tiles, srcs
    half = (s.shape[0], s.shape[1] // 2)
    _pairs_shape(core, "TDEINTERLEAVE", (dst0, dst1, src), (d0, d1), half,
                 f"dst0 and dst1 take half the source's {s.shape[0]}x{s.shape[1]}")
    if s.shape[1] % 2:
        raise _err(core, f"TDEINTERLEAVE: the source has {s.shape[1]} valid columns; the single-source "
                         "form splits an even number", "give the source an even number of valid columns")
    core.pending.append((_DINTLV.kernel, s, None, d0, d1))
    return _issue(core, "TDEINTERLEAVE", [dst0, dst1], [src], None, *s.shape, src.item)


# -- TGATHERB ------------------------------------------------------------------------------------
_GATHERB = OPS["TGATHERB"]
_GATHERB_OK = _GATHERB.allowed()


def _tile_bytes(core, t: Tile) -> np.ndarray:
    """The bytes of ``t``'s whole static tile (a view of its memory)."""
    arr(t, core)
    return t._full.reshape(-1).view(np.uint8)


def TGATHERB(dst: Tile, src: Tile, offset: Tile, *events) -> Event:
    """Block gather: 32-byte block ``c`` of dst's row ``i`` = the 32 bytes of src's tile at byte
    offset ``offset[i, c]`` (uint32 / int32).  dst's valid row is a whole number of 32-byte
    blocks; an offset whose block leaves the src tile is an error (target-defined in
    pto-isa)."""
    core = current_core()
    _sync(events)
    d, _, o = _vec(core, "TGATHERB", dst, src, offset)
    _rule(core, _GATHERB, dst, _GATHERB_OK)
    _rule(core, _GATHERB, src, _GATHERB_OK)
    row_bytes = d.shape[1] * dst.item
    if row_bytes % 32:
        raise _err(core, f"TGATHERB: dst's valid row is {row_bytes} bytes ({d.shape[1]} x {dst.dtype.name}), "
                         "not whole 32-byte blocks", "give dst valid columns of a multiple of 32 bytes")
    blocks = row_bytes // 32
    if offset.dtype not in _INDEX or o.shape[0] < d.shape[0] or o.shape[1] < blocks:
        raise _err(core, f"TGATHERB: the offset tile {offset.describe()} (valid {o.shape[0]}x{o.shape[1]}) "
                         f"must be uint32 / int32 with one byte offset per 32-byte block: "
                         f"{d.shape[0]}x{blocks}", f"give offset a {d.shape[0]}x{blocks} valid region")
    core.pending.append((_GATHERB.kernel, _tile_bytes(core, src), o, d))
    return _issue(core, "TGATHERB", [dst], [src, offset], None, *d.shape, dst.item)


# -- TSUBVIEW ------------------------------------------------------------------------------------
def TSUBVIEW(dst: Tile, src: Tile, row_idx: int, col_idx: int) -> None:
    """Bind ``dst`` over ``src``'s storage from element (row_idx, col_idx): a view, no data
    moves and no pipe is used (pto-isa ``TASSIGN(dst, src.data() + offset)``).  So that
    ``dst[i, j]`` is ``src[row_idx + i, col_idx + j]``, both tiles are plain row-major (ND) with
    the same static columns and element type, dst's valid region fits in src's from that
    element, and the byte offset keeps TASSIGN's alignment."""
    core = current_core()
    arr(src, core, "TSUBVIEW source")
    if not isinstance(dst, Tile):
        raise _err(core, f"TSUBVIEW destination must be a Tile, got {type(dst).__name__}")
    if isinstance(row_idx, bool) or isinstance(col_idx, bool) or \
            not isinstance(row_idx, (int, np.integer)) or not isinstance(col_idx, (int, np.integer)):
        raise _err(core, f"TSUBVIEW: row_idx={row_idx!r}, col_idx={col_idx!r} are not integers")
    r, c = int(row_idx), int(col_idx)
    if dst.loc is not src.loc:
        raise _err(core, f"TSUBVIEW of {with_article(src.loc.value)} tile as {with_article(dst.loc.value)} tile",
                   "the view has the source's TileType")
    nd = TileLayout.ND
    if src.layout is not nd or dst.layout is not nd or dst.cols != src.cols or dst.dtype != src.dtype:
        raise _err(core, f"TSUBVIEW: {dst.describe()} over {src.describe()}: a sub-tile view needs both "
                         f"tiles ND with the same element type and static columns (the row stride)",
                   f"declare dst as {src.dtype.name} with {src.cols} columns, layout ND")
    # (pto-isa's TSUBVIEW only moves the address: the view's valid region must lie in the
    # source's, its static tile may reach past it, as a TASSIGN there would)
    if r < 0 or c < 0 or r + dst.valid_rows > src.valid_rows or c + dst.valid_cols > src.valid_cols:
        raise _err(core, f"TSUBVIEW: a {dst.valid_rows}x{dst.valid_cols} valid view ({dst.rows}x{dst.cols} "
                         f"tile) at ({r}, {c}) does not fit {src.describe()} (valid {src.valid_rows}x"
                         f"{src.valid_cols})", "keep the view inside the source's valid region")
    offset = (r * src.cols + c) * src.item
    align = core.cluster.platform.alignment
    if (src.addr + offset) % align:
        raise _err(core, f"TSUBVIEW at ({r}, {c}) starts {offset} bytes into {src.describe()}, not "
                         f"{align}-byte aligned", f"start the view at a column whose byte offset is a "
                                                   f"multiple of {align}")
    TASSIGN(dst, src.addr + offset)


__all__ = ["MrgSortExecutedNumList", "TMRGSORT", "TGATHER", "TSCATTER", "TSORT32", "TCI", "TCONCAT", "TFILLPAD", "TFILLPAD_EXPAND", "TFILLPAD_INPLACE", "TINSERT",
           "TRANDOM", "TRESHAPE", "TTRANS", "TTRI", "TDEINTERLEAVE", "TGATHERB", "TINTERLEAVE", "TSUBVIEW"]
