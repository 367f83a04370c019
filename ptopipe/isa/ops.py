"""Tile instructions: data movement (TLOAD/TSTORE/TMOV/TEXTRACT), cube (TMATMUL*) and
vector (element-wise, scalar, unary, reduction, expand, convert) ops.

Each instruction is defined once in the op catalogue (:mod:`ptopipe.arch.catalogue`: pipe,
cost key, dtype rule, typing rule, numpy kernel); this module builds the instructions from
it.  Each checks its operands (location, dtype, shape, scalar value) when it is issued,
queues its numpy work on the real memory bytes, is issued to its pipe with a cost from
the platform table, and returns an :class:`~ptopipe.isa.events.Event`.  Trailing event
arguments are waited for first (``TSYNC(events...)``), as in ``pto_instr.hpp``.
"""
from __future__ import annotations

import functools
import inspect
from contextlib import nullcontext
from operator import setitem

import ml_dtypes
import numpy as np

from ..arch import MemSpace, PipeUnit
from ..arch.vocab import TCVT_DEFAULT_OFF, AtomicType, BLayout, PlatformID, RoundMode, SaturationMode, SLayout
from ..arch.catalogue import (A5_MOVES, ATOMIC_ADD_DTYPES, CONVERTS_FROM, EXTRACT_PATHS, acc_convert_error, LOAD_DST, MATMUL_PAIRS, MOVE_LAYOUTS, MOVE_PATHS,
                              MOVES, OPS, STORE_PIPE, STORE_SRC, by_form, div_trunc, matmul_pair_error, move_layout_error,
                              two_dim_load_error,
                              SCALAR_INTO_DST_FIRST, op_scalar_error, rows_from_dst, scalar_error, tcvt_pair_error,
                              tmp_too_small,
                              tmp_written)
from ..errors import KernelError, MemoryConflictError, with_article
from ..sim import schedule as _sched
from ..sim.core import SYNC_EVERY
from .mad_mode import tf32_operands, tf32_spec
from ..sim.race import ATOMIC_ADD
from ..sim.trace import MatmulArgs, TileArgs
from .context import _getcurrent, current_core, kernel_core, named
from .unwritten import writes_part
from .events import Event, TSYNC, new_event
from .tensor import GlobalTensor, whole
from .tile import Elsewhere, Tile, TileLayout, TileType
from .convtile import ConvTile, load as load_conv

_V, _M, _MTE2 = PipeUnit.V, PipeUnit.M, PipeUnit.MTE2
_A2A3 = PlatformID.PLATFORM_A2A3
_ALL = Ellipsis     # d[...] = s: an assignment casts like copyto(casting="unsafe")
_VEC = TileType.Vec
_MAT = TileType.Mat
_NZ, _ZN, _ZZ = TileLayout.NZ, TileLayout.ZN, TileLayout.ZZ


def _err(core, msg: str, fix: str | None = None) -> KernelError:
    return KernelError(msg, where=str(core.where()), fix=fix)


def _check_bound(t: Tile, core) -> None:
    if t.addr is None:
        t._need()
    if t.core.__class__ is Elsewhere:   # placed on a core without its memory (tile._assign)
        core.memory(t.space, t.describe)
    raise _err(core, f"{t.describe()} is bound on {t.core.name} but used on {core.name}",
               "create tiles inside the kernel function, so each core has its own")


def _use_after_free(t: Tile, core):
    from .pipe import slot_use_after_free   # pipe imports ops; the check lives with the slots
    return slot_use_after_free(t, core)


def arr(t, core, what: str = "operand") -> np.ndarray:
    """The valid-region array of tile ``t`` for an instruction on ``core``."""
    if not isinstance(t, Tile):
        raise _err(core, f"{what} must be a Tile, got {type(t).__name__}")
    if t.core is not core:
        _check_bound(t, core)
    if t.binding is not None and t.binding[0].gen != t.binding[1]:
        raise _use_after_free(t, core)
    return t._valid


def _sync(events) -> None:
    if events:
        TSYNC(*events)


def _need_loc(core, t: Tile, locs, op: str, role: str) -> None:
    if t.loc not in locs:
        raise _err(core, f"{op}: {role} is {with_article(t.loc.value)} tile; {op} needs "
                         f"{' or '.join(l.value for l in locs)}",
                   f"use {with_article('/'.join(l.value for l in locs))} tile as {role}")


def _same_shape(core, op: str, *pairs) -> None:
    shapes = [a.shape for _, a in pairs]
    if any(s != shapes[0] for s in shapes):
        desc = ", ".join(f"{n} {s[0]}x{s[1]}" for (n, _), s in zip(pairs, shapes))
        raise _err(core, f"{op}: operand shapes differ ({desc})",
                   "make the valid regions of all operands the same shape")


def _same_dtype(core, op: str, *tiles) -> None:
    d = tiles[0].dtype
    if any(t.dtype != d for t in tiles):
        raise _err(core, f"{op}: dtypes differ ({', '.join(t.dtype.name for t in tiles)})",
                   "convert with TCVT first")


def _dtype_check(core, op, tile: Tile) -> None:
    """Raise if the catalogue's dtype rule of ``op`` rejects ``tile`` on this run's platform
    (the slow path of the instructions' inline ``dtype not in allowed[platform]``)."""
    bad = op.dtype_error(tile.dtype, core.cluster.platform.id)
    if bad is not None:
        raise _err(core, f"{bad[0]} ({tile.describe()})", bad[1])


def _tmp_tile(core, name: str, tmp, writes: list, reads=()) -> None:
    """pto-isa's ``tmp`` operand (``TXOR(dst, src0, src1, tmp)``): a Vec tile of this core;
    where the device computes through it (``catalogue.tmp_written``: A2A3, and a few ops on
    A5) it is written (``writes`` gets it) and must share no byte with the op's other
    operands (``writes``, its destinations, and ``reads``, its sources)."""
    if tmp is None:
        return
    t = arr(tmp, core, f"{name} tmp")
    if tmp.loc is not _VEC:
        raise _not_vec(core, name, [tmp])
    src = next((r for r in reads if r is not None), None)
    _tmp_size(core, name, writes[0], src, tmp)
    if tmp_written(name, core.cluster.platform.id, src):
        _tmp_apart(core, name, tmp, t, writes, reads)
        writes.append(tmp)


def _tmp_size(core, name: str, dst, src, tmp: Tile, sat=None) -> None:
    """Raise if ``tmp`` is smaller than pto-isa's NPU code writes (catalogue.TMP_MINIMUM):
    on the device the op would write past it, into whatever tile follows."""
    short = tmp_too_small(name, core.cluster.platform.id, dst, src, tmp, sat) if src is not None else None
    if short is not None:
        raise _err(core, f"{name}'s tmp {tmp.describe()} is too small: {short}",
                   f"give tmp at least that much ({name}'s page in pto-isa's docs/isa gives its size); "
                   "the device writes past a smaller tmp")


def _tmp_apart(core, name: str, tmp: Tile, t, writes, reads) -> None:
    """Raise if the scratch ``tmp`` (valid region ``t``) shares bytes with a destination in
    ``writes`` or a source in ``reads`` (catalogue.tmp_written: the device overwrites it)."""
    for role, tiles in (("destination", writes), ("source", reads)):
        for o in tiles:
            if o is None or o.__class__ is not Tile or o.mem is not tmp.mem:
                continue
            a = arr(o, core)
            if np.may_share_memory(a, t) and np.shares_memory(a, t):
                plat = core.cluster.platform.name.upper()
                raise MemoryConflictError(
                    f"{name}'s tmp {tmp.describe()} overlaps its {role} {o.describe()}: pto-isa's {plat} "
                    f"{name} writes tmp as its own scratch while it reads its sources and writes its "
                    "destination, so on the device it overwrites data the op still uses",
                    where=str(core.where()),
                    fix=f"give tmp its own {tmp.nbytes} bytes, apart from {name}'s destination and sources")


def _reduce_apart(core, name: str, dst: Tile, written, src: Tile, a) -> None:
    """Raise if a reduction's (or arg-reduction's) result bytes ``written`` (the part of ``dst``
    it writes) share bytes with its source's valid region ``a``.  pto-isa's reductions store each result while
    they still load the source (A5: row by row, column block by column block, with no
    ``mem_bar`` between; A2A3: one repeated ``vcadd`` over the rows), and its docs make two
    non-alias tiles on the same bytes at once undefined (docs/isa/tile/ops/sync-and-config/
    tassign.md; a vector store and load of aliasing UB need a ``mem_bar``,
    docs/isa/vector/pipeline-sync.md) - so on the device the result overwrites source elements
    not yet read, where numpy (this simulator) reads the whole source first."""
    if dst is src or dst.mem is not src.mem or not np.may_share_memory(written, a) \
            or not np.shares_memory(written, a):
        return
    raise MemoryConflictError(
        f"{name}'s destination {dst.describe()} overlaps its source {src.describe()}: pto-isa's {name} stores "
        "results while it still reads the source, so on the device it overwrites source elements before it "
        "reads them (two tiles on the same bytes in one instruction are undefined in pto-isa: "
        "docs/isa/tile/ops/sync-and-config/tassign.md)",
        where=str(core.where()),
        fix=f"give {name}'s destination bytes of its own, apart from the source's {src.nbytes} bytes")


def _check_scalar(dt, scalar) -> tuple:
    """``(value of dtype dt, None)``, or ``(None, why not)`` when ``dt`` cannot hold
    ``scalar`` (catalogue.scalar_error)."""
    bad = scalar_error(dt, scalar)
    return (None, bad) if bad is not None else (dt.type(scalar), None)


@functools.lru_cache(maxsize=4096)
def _checked_scalar(dt, _cls, scalar) -> tuple:
    """The memo of :func:`_check_scalar`, by dtype, scalar class (1, 1.0 and True are equal
    keys otherwise) and scalar: a pure function of immutable values (no run state in it),
    bounded; a hit costs a quarter of converting."""
    return _check_scalar(dt, scalar)


def _scalar_value(core, name: str, dst: Tile, scalar):
    """``scalar`` as a value of ``dst``'s dtype, checked now (catalogue.scalar_error) rather
    than failing, wrapping or truncating when the queued work is applied."""
    dt = dst.dtype
    try:
        # not memoised: NaN (never equal to itself) and float zeros (-0.0 == 0.0, but the
        # sign of a zero changes results)
        memo = scalar == scalar and (scalar != 0 or scalar.__class__ is int)
        v, bad = _checked_scalar(dt, scalar.__class__, scalar) if memo else _check_scalar(dt, scalar)
    except (TypeError, ValueError):         # unhashable, or no truth value: not a number anyway
        v, bad = _check_scalar(dt, scalar)
    if bad is not None:
        raise _err(core, f"{name}: {bad} ({dst.describe()})",
                   f"pass a scalar that {dt.name} can hold, or TCVT the tile to a wider dtype")
    return v


# -- data movement ------------------------------------------------------------------------
def _gm_tile_view(core, gt, t: Tile, op: str, role: str) -> np.ndarray | None:
    """The GM side of a TLOAD/TSTORE, shaped to match the valid region of tile ``t``; None
    when that region is empty (the move touches no GM byte, whatever the tensor)."""
    if (gt.__class__ is not GlobalTensor or gt.rows != t.valid_rows or gt.cols != t.valid_cols
            or gt.ptr is None):
        if gt.__class__ is not GlobalTensor:
            raise _not_a_tensor(core, gt, f"{op} {role}")
        if t.empty:
            return None
        if gt.shape2 != (t.valid_rows, t.valid_cols):
            # (a TSTORE's smaller valid region is its window already: store_window)
            _layout_first(core, op, gt, t)
            raise _err(core, f"{op}: {gt.describe()} is {gt.rows}x{gt.cols} but the tile's valid "
                             f"region is {t.valid_rows}x{t.valid_cols} (pto-isa's {op} asserts that the "
                             "GM shape is the tile's valid shape)",
                       "make the GlobalTensor shape match the tile's valid rows/cols")
        raise gt.unassigned(f"{op} ({role})")
    return gt.matrix(core.cluster.gm)


def _layout_first(core, op: str, gt, t: Tile) -> None:
    """Before a TLOAD / TSTORE's shape error: the layout pair's, when pto-isa has no path
    between them - its static_assert stops the compile before any shape is asserted at run
    time (a 16x16x16 f16 tensor ptoas reads as NZ, moved into a row-major tile, is refused
    for its layouts, not for the 256 rows an NZ tensor of that shape has)."""
    check_move_layout(core, op, gt.layout_for(t), t, gt.describe)


def _not_a_tensor(core, value, what: str) -> KernelError:
    """The error of a GM operand that is not a GlobalTensor: a list, tuple or scalar given to
    ``run`` reaches the kernel as it is (only numpy arrays are laid out in GM)."""
    kind = type(value).__name__
    if isinstance(value, (list, tuple)):
        fix = (f"pass the argument to run() as a numpy array (np.asarray(value, dtype=np.float32)): "
               f"only numpy arrays become GlobalTensors in GM, {with_article(kind)} reaches the kernel as it is")
    elif isinstance(value, np.ndarray):
        fix = "a numpy array made inside the kernel is not in GM: pass it to run() as an argument"
    else:
        fix = "pass a GlobalTensor: a numpy array argument of run(), or GlobalTensor(x.data() + offset, shape)"
    return _err(core, f"{what} must be a GlobalTensor, got {kind}", fix)


#: pto-isa's ``C0_SIZE_BYTE`` (include/pto/common/constants.hpp): the bytes of one C0 block,
#: which the CPU TStore's size assertion counts a GM element as (``numel * C0 >= valid``)
C0_SIZE_BYTE = 32


def _prefix_box(dims: tuple, n: int) -> "tuple | None":
    """The shape (outer first) of the box the first ``n`` indices of the mixed-radix index
    space ``dims`` (outer first) cover, or None when they are not a box."""
    inner = 1
    for k in range(len(dims) - 1, -1, -1):
        if n % inner == 0 and n // inner <= dims[k]:
            return (1,) * k + (n // inner,) + tuple(dims[k + 1:])
        inner *= dims[k]
    return None


def store_window(core, gt, t: Tile, op: str = "TSTORE"):
    """The GM tensor a TSTORE of tile ``t`` writes: ``gt`` itself, or the part of it the tile's
    valid region covers.  pto-isa's TSTORE moves ``src.GetValidRow() x GetValidCol()``
    elements (docs/isa/TSTORE.md, Valid region) to the indices ``MapTileIndicesToGlobalOffset``
    gives them (include/pto/cpu/tile_offsets.hpp), and its CPU model asserts only
    ``numel(gt) * C0 >= valid rows * valid cols`` for an ND / DN tensor and the exact shape
    for an NZ one (include/pto/cpu/TStore.hpp, CheckTileDataStore): a valid region smaller
    than the tensor writes its first rows and columns.  A region reaching outside the
    tensor's shape (which pto-isa writes through the strides, past the tensor's dims) is
    refused, as is one the assertion refuses."""
    if gt.__class__ is not GlobalTensor or t.empty or gt.shape2 == (t.valid_rows, t.valid_cols):
        return gt
    if gt.ptr is None:
        raise gt.unassigned(f"{op} (destination)")
    vr, vc = t.valid_rows, t.valid_cols
    c0 = max(1, C0_SIZE_BYTE // gt.item)
    numel = 1
    for n in gt.shape:
        numel *= n
    fix = "make the GlobalTensor cover the tile's valid rows/cols (or SetValid the tile to the GM window)"
    _layout_first(core, op, gt, t)
    if gt.layout is TileLayout.NZ:
        raise _err(core, f"{op}: {gt.describe()} is {gt.rows}x{gt.cols} but the tile's valid region is "
                         f"{vr}x{vc}; pto-isa stores to an NZ tensor of exactly the valid shape "
                         "(valid rows == d2*d3, valid cols == d0*d1*d4)", fix)
    if numel * c0 < vr * vc:
        raise _err(core, f"{op}: {gt.describe()} has {numel} elements, fewer than the tile's valid region "
                         f"{vr}x{vc} needs (pto-isa asserts numel * C0 >= valid rows * valid cols, C0 = "
                         f"{c0} {gt.dtype.name} elements)", fix)
    s = gt.shape
    if gt.layout is TileLayout.DN:          # rows d3; columns d0, d1, d2, d4 (d4 inner)
        box, rows = _prefix_box((s[0], s[1], s[2], s[4]), vc), vr <= s[3]
        shape = None if box is None or not rows else (box[0], box[1], box[2], vr, box[3])
    else:                                   # rows d0, d1, d2, d3; columns d4
        box = _prefix_box(s[:4], vr)
        shape = None if box is None or vc > s[4] else box + (vc,)
    if shape is None:
        raise _err(core, f"{op}: the tile's valid region {vr}x{vc} reaches outside {gt.describe()} "
                         f"({gt.rows}x{gt.cols}): pto-isa writes such a region through the strides, past "
                         "the tensor's dims, which ptopipe does not model", fix)
    if gt.layout is not TileLayout.DN and t.loc is _VEC:     # (ND: NZ is refused above)
        _device_window_warning(core, gt, t, op)
    return GlobalTensor(gt.ptr, shape, gt.stride, name=gt.name, layout=gt.layout)


def _device_window_warning(core, gt, t: Tile, op: str) -> None:
    """A run warning at a TSTORE of a Vec tile whose valid region is not the ND GlobalTensor's
    shape, where the device writes other elements than the valid region at the strides
    (:func:`store_window`, pto-isa's CPU model): pto-isa's NPU TStore (TStoreUb2gmNd2nd on A2A3,
    TStoreVecND on A5) asserts the two are one shape and, built without that check, moves Shape3
    rows (per outer index) of the tile's valid columns, A5's at the tensor's row stride, A2A3's
    ``validCol + Stride3 - Shape4`` elements apart (its gap is the tensor's, not the tile's).
    Once per line."""
    s, st = gt.shape, gt.stride
    rows = s[0] * s[1] * s[2] * s[3]
    a2a3 = core.cluster.platform.name == "a2a3"
    packed = a2a3 and t.valid_cols != s[4] and s[3] > 1
    if rows == t.valid_rows and not packed:
        return
    pitch = t.valid_cols + st[3] - s[4] if a2a3 else st[3]
    does = (f"the {core.cluster.platform.name.upper()} device writes {s[3]} rows (Shape3) of {t.valid_cols} "
            f"elements{' per outer index' if rows != s[3] else ''}, {pitch} elements apart"
            + (f" - rows {t.valid_rows}.. from the tile's memory past its valid rows" if rows > t.valid_rows else ""))
    core.cluster.warn_once((
        f"{op} of the tile's valid region {t.valid_rows}x{t.valid_cols} into {gt.describe()} ({gt.rows}x{gt.cols}): "
        f"pto-isa's NPU TSTORE asserts the valid region is the GlobalTensor's shape (validCol == Shape4, validRow "
        f"== Shape0*Shape1*Shape2*Shape3) and, built without the check, moves the tensor's rows: {does}, where "
        f"ptopipe writes the valid region at the strides, as pto-isa's CPU model does - the device's numbers "
        f"differ from these; give the GlobalTensor the valid region's shape"), core.where(), "device window")


def check_move_layout(core, op: str, gm: TileLayout, t: Tile, what, via: str | None = None) -> None:
    """A TLOAD / TSTORE (``op``; ``via``: the instruction that makes it, a GM ring's TPUSH /
    TPOP) between ``t`` and a GM tensor in layout ``gm`` (``what`` describes it: a string or a
    callable giving one, called only on error) in a pair of layouts pto-isa moves
    (``arch.catalogue.move_layout_error``): else a KernelError saying which pairs it moves and
    the tile declaration that fits."""
    why = move_layout_error(op, t.loc, core.cluster.platform.id, gm, t.layout, t.rows, t.cols, t.item)
    if why is None:
        return
    if callable(what):
        what = what()
    fits = [tl for g, tl in MOVE_LAYOUTS[(op, t.loc, core.cluster.platform.id)] if g is gm]
    to = "from" if op == "TLOAD" else "to"
    if t.loc is TileType.Acc:
        fix = "store the Acc tile to an ND or NZ GM tensor (its fixpipe writes those layouts)"
    else:
        fix = ((f"declare the tile {' or '.join(f'{tl.name} (blayout={tl.blayout.name}, slayout={tl.slayout.name})' for tl in fits)}"
                if fits else f"move the tile through {with_article(gm.name)} GM tensor")
               + (f" and TMOV between it and the {t.layout.name} tile" if t.loc is _VEC else "")
               + "; a move between layouts converts only where pto-isa has that path")
    raise _err(core, f"{via or op} of the {t.layout.name} tile {t.describe()} {to} {what}, {with_article(gm.name)} GM tensor: {why}", fix)


def _same_size_bytes(core, op: str, gm: GlobalTensor, tile: Tile, data, to, fix: str):
    """``data`` (the side of a TLOAD / TSTORE whose element type is not ``to``) seen as ``to``:
    the move copies bytes, so elements of the same size move bit for bit (pto-isa's TLOAD /
    TSTORE of a Vec or Mat tile static_assert only ``sizeof`` of the two element types, and the
    DMA does not convert - a float32 tensor loads into an int32 tile as its bits); elements of
    another size are a KernelError."""
    if gm.dtype.itemsize != tile.dtype.itemsize:
        raise _err(core, f"{op}: {gm.describe()} is {gm.dtype.name} but {tile.describe()} is "
                         f"{tile.dtype.name}: {op} moves bytes, between element types of one size only",
                   f"{op} does not convert; {fix}")
    return data.view(to)


def TLOAD(dst: Tile, src: GlobalTensor, *events) -> Event:
    """GM -> local tile (MTE2).  ``src`` is seen as a matrix by its layout: ND (d0*d1*d2*d3) x d4,
    DN d3 x (d0*d1*d2*d4), NZ (d2*d3) x (d0*d1*d4) (:class:`~ptopipe.isa.tensor.GlobalTensor`).
    Into a :class:`~ptopipe.isa.convtile.ConvTile`: its storage, from a tensor of its 5-D shape."""
    if dst.__class__ is ConvTile:
        return load_conv(dst, src, events)
    try:
        core = _getcurrent().core        # current_core(), inline (hot path)
    except AttributeError:
        core = current_core()            # raises: not inside a running kernel
    if core.ff is not None:                     # fast-forward (sim.periodic)
        return core.ff.call(core, TLOAD, (dst, src, *events), None)
    if core.policy is not None:                       # an exploring run: a choice point
        core.cluster.visible(core, _sched.TLOAD)
    if events:
        TSYNC(*events)
    d = (dst._valid if dst.__class__ is Tile and dst.core is core and dst.binding is None
         else arr(dst, core, "TLOAD destination"))
    v = _gm_tile_view(core, src, dst, "TLOAD", "source")
    if dst.loc not in LOAD_DST:
        _need_loc(core, dst, LOAD_DST, "TLOAD", "destination")
    gm = src.layout_for(dst)
    check_move_layout(core, "TLOAD", gm, dst, src.describe)
    if dst.loc is _MAT and gm is not dst.layout:
        why = two_dim_load_error(core.cluster.platform.id, gm, dst.layout, src.shape)
        if why is not None:
            raise _err(core, f"TLOAD of the {dst.layout.name} tile {dst.describe()} from {src.describe()}: {why}",
                       f"view the rows as one dimension, GlobalTensor<T, Shape<1, 1, 1, rows, cols>, Stride<..., "
                       f"row stride, 1>>, one TLOAD per 2-D block, or load into an {gm.name} Mat tile (its "
                       f"same-layout TLOAD takes every dim)")
    if v is None:
        return _empty_move(core, _MTE2, dst, "TLOAD", True)
    if src.dtype != dst.dtype:
        v = _same_size_bytes(core, "TLOAD", src, dst, v, dst.dtype, "load then TCVT")
    if src._mat2:                                      # v is 2-D (GlobalTensor.matrix)
        core.pending.append((setitem, d, _ALL, v))     # the copy, queued (Cluster.sync)
    else:
        core.pending.append((np.copyto, src.tile5(d), v))   # splits rows / cols: a view
    ps = core.psync
    if ps is not None and ps.gm_watch:   # manual mode: checked against the core's other pipes
        ps.gm_note(src, False, "TLOAD")
    end = core.issue_w(_MTE2, core.costs.move("GM", dst.sname, dst.valid_rows * dst.valid_cols * dst.item), dst,
                       "TLOAD", TileArgs(d.shape, dst.dtype) if core.trace is not None else None)
    chk = core.cluster.checker
    if chk is not None:                  # (a SET orders it once it is ordered before it: sim.porder)
        chk.gm_access(core, src, False, "TLOAD", None, end, _MTE2)
    return new_event(("TLOAD", core, end))


def TSTORE(dst: GlobalTensor, src: Tile, *events, atomic_type=AtomicType.AtomicNone, relu_mode=None,
           pre_quant=None) -> Event:
    """Local tile -> GM (Acc via FIX, with dtype conversion; Vec/Mat via MTE3).

    ``atomic_type=AtomicType.AtomicAdd`` (pto-isa's ``TSTORE<TileData, GlobalData,
    AtomicType::AtomicAdd>``) adds the tile's valid region into GM instead of overwriting it:
    :func:`atomic_add`.  Atomic adds of several cores or blocks to the same bytes commute and
    are no race among themselves; one and a plain access of those bytes unordered are.
    From an Acc tile the fixpipe may apply a ReLU (``relu_mode``, pto-isa's ``ReluPreMode``)
    and quantise with one word (``pre_quant``, its ``preQuantScalar``) on the way:
    :func:`ptopipe.isa.fixpipe.fixpipe_store`."""
    try:
        core = _getcurrent().core        # current_core(), inline (hot path)
    except AttributeError:
        core = current_core()            # raises: not inside a running kernel
    if core.ff is not None:                     # fast-forward (sim.periodic)
        return core.ff.call(core, TSTORE, (dst, src, *events),
                            None if atomic_type is AtomicType.AtomicNone and relu_mode is None and pre_quant is None
                            else dict(atomic_type=atomic_type, relu_mode=relu_mode, pre_quant=pre_quant))
    if core.policy is not None:                       # an exploring run: a choice point
        core.cluster.visible(core, _sched.TSTORE)
    if events:
        TSYNC(*events)
    s = (src._valid if src.__class__ is Tile and src.core is core and src.binding is None
         else arr(src, core, "TSTORE source"))
    if dst.__class__ is GlobalTensor and dst.shape2 != s.shape:
        dst = store_window(core, dst, src)
    v = _gm_tile_view(core, dst, src, "TSTORE", "destination")
    if src.loc not in STORE_SRC:
        _need_loc(core, src, STORE_SRC, "TSTORE", "source")
    write = atomic_add(core, "TSTORE", dst, atomic_type) if atomic_type else True
    check_move_layout(core, "TSTORE", dst.layout_for(src), src, dst.describe)
    if v is None:
        return _empty_move(core, STORE_PIPE[src.loc], src, "TSTORE", False)
    if (relu_mode is not None or pre_quant is not None) and src.loc is not CONVERTS_FROM:
        from .fixpipe import fixpipe_store        # (raises: the fixpipe's ReLU / quantisation take an Acc tile)
        fixpipe_store(core, src, s, dst.dtype, relu_mode, pre_quant)
    if dst.dtype != src.dtype:
        if src.loc is not CONVERTS_FROM:
            s = _same_size_bytes(core, "TSTORE", dst, src, s, dst.dtype,
                                 "only Acc tiles convert on store (FIX); TCVT first")
        elif pre_quant is None:
            _acc_converts(core, "TSTORE", src, dst.dtype, store=True)
    if relu_mode is not None or pre_quant is not None:
        from .fixpipe import fixpipe_store        # (fixpipe imports this module)
        s = fixpipe_store(core, src, s, dst.dtype, relu_mode, pre_quant)
    # Acc -> f16 converts (FIX); v is 2-D when dst._mat2 (GlobalTensor.matrix)
    if write is True:
        work = (setitem, v, _ALL, s) if dst._mat2 else (_copy_unsafe, v, dst.tile5(s))
    else:
        work = (_add_into, v, s if dst._mat2 else dst.tile5(s))
    ps = core.psync
    if ps is not None and ps.gm_watch:
        ps.gm_note(dst, True, "TSTORE")
    pipe = STORE_PIPE[src.loc]
    chk = core.cluster.checker
    if chk is None:
        core.pending.append(work)
    end = core.issue_r(pipe, core.costs.move(src.sname, "GM", src.valid_rows * src.valid_cols * dst.item), src,
                        "TSTORE", TileArgs(s.shape, src.dtype) if core.trace is not None else None)
    if chk is not None:
        queue_checked_write(core, chk.gm_access(core, dst, write, "TSTORE", None, end, pipe, (work,)), work)
    return new_event(("TSTORE", core, end))


def atomic_add(core, op: str, dst: GlobalTensor, atomic_type):
    """The race checker's kind of access of a store ``op`` into ``dst`` with pto-isa's
    ``atomic_type`` (:class:`~ptopipe.arch.vocab.AtomicType`): ``True`` (a plain write) for
    AtomicNone, :data:`~ptopipe.sim.race.ATOMIC_ADD` for AtomicAdd - into a GM dtype the atomic
    unit adds in (:data:`~ptopipe.arch.catalogue.ATOMIC_ADD_DTYPES`), else a KernelError, as
    pto-isa's ``SetAtomicAdd`` static_asserts."""
    try:
        kind = AtomicType(atomic_type)
    except ValueError:
        raise _err(core, f"{op}: atomic_type={atomic_type!r} is not an AtomicType",
                   "pass AtomicType.AtomicNone (a plain store) or AtomicType.AtomicAdd") from None
    if kind is AtomicType.AtomicNone:
        return True
    if dst.dtype not in ATOMIC_ADD_DTYPES:
        have = ", ".join(d.name for d in ATOMIC_ADD_DTYPES)
        raise _err(core, f"{op} with AtomicType::AtomicAdd into {dst.describe()}: the atomic unit adds "
                         f"{have} in GM, not {dst.dtype.name} (pto-isa's SetAtomicAdd refuses it at compile time)",
                   "add in one of those dtypes (e.g. int32 for an unsigned or 64-bit sum), or let one core "
                   "store the reduced result with a plain TSTORE")
    return ATOMIC_ADD


def _add_into(d: np.ndarray, s: np.ndarray) -> None:
    """``d += s`` in ``d``'s dtype: an atomic-add store.  An Acc source is converted to GM's
    dtype first (the fixpipe's conversion, as for a plain store), then added and rounded (an
    integer wraps) in that dtype, as pto-isa's CPU model does (``AddToElement``)."""
    if s.dtype != d.dtype:
        s = s.astype(d.dtype)
    np.add(d, s, out=d)


def queue_checked_write(core, applied: bool, *work) -> None:
    """Queue a checked GM write's numpy work after its race check - which applies the work
    itself when it lets an unordered write/write pair of identical bytes pass, and must see
    the bytes before it (sim.race.HappensBefore.access) - and apply it now when the queue
    is due (as issuing it would have: PTOPIPE_SYNC_EVERY=1 names the write's own line)."""
    if not applied:
        q = core.pending
        q.extend(work)
        if len(q) >= SYNC_EVERY:
            core.cluster.sync()


def _empty_move(core, pipe, tile: Tile, op: str, write: bool) -> Event:
    """A TLOAD / TSTORE of a tile whose valid region is empty: no byte moves, no GM access;
    issued (in order on its pipe, with the tile's dependencies) at no cost."""
    args = TileArgs((tile.valid_rows, tile.valid_cols), tile.dtype) if core.trace is not None else None
    end = core.issue_w(pipe, 0, tile, op, args) if write else core.issue_r(pipe, 0, tile, op, args)
    return new_event((op, core, end))


def TMOV(dst: Tile, src: Tile, *events, relu_mode=None, pre_quant=None) -> Event:
    """Local move: L1->L0A/L0B (MTE1), L0C->L1 (FIX, may convert), UB->UB (V).

    The two tiles may differ in layout (ND <-> NZ ...): TMOV converts, the logical matrix is
    kept (e.g. a Vec ND tile into a Vec NZ tile before a V2C TPUSH to an NZ Mat tile).
    From an Acc tile the fixpipe may also apply a ReLU (``relu_mode``, pto-isa's
    ``ReluPreMode`` template parameter) and quantise with one word (``pre_quant``, pto-isa's
    ``preQuantScalar``): :func:`ptopipe.isa.fixpipe.fixpipe_move`."""
    try:
        core = _getcurrent().core        # current_core(), inline (hot path)
    except AttributeError:
        core = current_core()            # raises: not inside a running kernel
    if core.ff is not None:                     # fast-forward (sim.periodic)
        return core.ff.call(core, TMOV, (dst, src, *events), None if relu_mode is None and pre_quant is None
                            else dict(relu_mode=relu_mode, pre_quant=pre_quant))
    if events:
        TSYNC(*events)
    s = _valid(src, core, "TMOV source")
    d = _valid(dst, core, "TMOV destination")
    pipe = MOVES.get((src.loc, dst.loc))
    if pipe is None and core.cluster.platform.name == "a5":
        pipe = A5_MOVES.get((src.loc, dst.loc))
    if pipe is None:
        raise _err(core, f"TMOV from {src.loc.value} to {dst.loc.value} is not a local path",
                   f"valid: {MOVE_PATHS}; across cores use TPUSH/TPOP")
    if dst.loc is TileType.Bias and src.loc is TileType.Mat:
        d, s = _to_bias(core, dst, src)
    elif src.valid_rows != dst.valid_rows or src.valid_cols != dst.valid_cols:
        if src.loc is TileType.Mat and dst.loc in _L0_AB and _block_of(dst, src):
            s = s[:dst.valid_rows, :dst.valid_cols]
        else:
            _same_shape(core, "TMOV", ("dst", d), ("src", s))
    if src.loc is CONVERTS_FROM:
        if pre_quant is None:
            _acc_converts(core, "TMOV", src, dst.dtype)
    elif src.dtype != dst.dtype and dst.loc is not TileType.Bias:
        raise _err(core, f"TMOV: dtypes differ ({src.dtype.name} -> {dst.dtype.name})",
                   "only Acc -> Mat converts; use TCVT on vector tiles")
    if relu_mode is None and pre_quant is None:
        core.pending.append((setitem, d, _ALL, s))    # Acc -> Mat converts (FIX)
    else:
        from .fixpipe import fixpipe_move         # (fixpipe imports this module)
        fixpipe_move(core, src, dst, s, d, relu_mode, pre_quant)
    costs = core.costs
    cost = (costs.vector_op("TMOV", src.valid_rows, src.valid_cols, src.item) if pipe is _V
            else costs.move(src.sname, dst.sname, s.size * src.item))
    end = core.issue_rw(pipe, cost, src, dst, "TMOV",
                        TileArgs(s.shape, src.dtype) if core.trace is not None else None)
    return new_event(("TMOV", core, end))


_L0_AB = (TileType.Left, TileType.Right)


def _acc_converts(core, op: str, src: Tile, dtype, store: bool = False) -> None:
    """An accumulator ``src`` moved (``store``: to GM) as ``dtype`` without a quantisation word:
    only the conversions pto-isa compiles (:func:`~ptopipe.arch.catalogue.acc_convert_error`)."""
    bad = acc_convert_error(op, src.dtype, dtype, core.cluster.platform.id, store)
    if bad is not None:
        raise _err(core, *bad)


def _block_of(dst: Tile, src: Tile) -> bool:
    """Does an L1 -> L0A / L0B TMOV move ``dst``'s valid block out of ``src``: pto-isa's
    TMovToLeft / TMovToRight copy the tile from its origin (the whole static tile, or the
    destination's valid block of a compact one), so a destination of the source's static shape
    whose valid region lies within the source's (a matmul on the first K columns of a
    K-padded L1 tile) receives the source's top-left block of that shape."""
    return ((dst.rows, dst.cols) == (src.rows, src.cols) and dst.valid_rows <= src.valid_rows
            and dst.valid_cols <= src.valid_cols)


#: (source, Bias tile) dtypes of a Mat -> Bias TMOV, by platform (pto-isa's TMovToBt: the
#: bias table holds int32 or float; a2a3 converts half, a5 half and bfloat16, to float)
BIAS_MOVES = {"a2a3": {("int32", "int32"), ("float32", "float32"), ("float16", "float32")},
              "a5": {("int32", "int32"), ("float32", "float32"), ("float16", "float32"), ("bfloat16", "float32")}}


def _to_bias(core, dst: Tile, src: Tile) -> tuple:
    """The (dst, src) arrays of a Mat -> Bias TMOV: pto-isa's TMovToBt copies the whole static
    row (one burst), so the static shapes must agree, not the valid ones."""
    if (src.rows, src.cols) != (dst.rows, dst.cols):
        raise _err(core, f"TMOV: the static shapes differ (dst {dst.rows}x{dst.cols}, src {src.rows}x{src.cols}); "
                         "pto-isa moves a Mat tile into a Bias tile of its own shape",
                   "declare the Bias tile with the Mat tile's rows and cols")
    if (src.dtype.name, dst.dtype.name) not in BIAS_MOVES[core.cluster.platform.name]:
        raise _err(core, f"TMOV: a {src.dtype.name} Mat tile does not move into a {dst.dtype.name} Bias tile on "
                         f"{core.cluster.platform.name} (pto-isa's TMovToBt: \"Incorrect data type\")",
                   "the bias table takes " + ", ".join(f"{a} -> {b}" for a, b in
                                                        sorted(BIAS_MOVES[core.cluster.platform.name])))
    arr(dst, core, "TMOV destination")
    arr(src, core, "TMOV source")
    return dst._full, src._full


def TEXTRACT(dst: Tile, src: Tile, index_row: int = 0, index_col: int = 0, *events) -> Event:
    """Copy the block of ``src`` starting at (row, col) into ``dst``: Mat -> Left / Right
    (MTE1), Vec -> Vec (V), Acc -> Mat (FIX); on A5 also Acc -> Vec (FIX) and Vec -> Mat
    (:data:`~ptopipe.arch.catalogue.EXTRACT_PATHS`)."""
    core = kernel_core()
    if core.ff is not None:                     # fast-forward (sim.periodic)
        return core.ff.call(core, TEXTRACT, (dst, src, index_row, index_col, *events), None)
    if events:
        TSYNC(*events)
    s = arr(src, core, "TEXTRACT source")
    d = arr(dst, core, "TEXTRACT destination")
    row, col = whole(index_row), whole(index_col)
    if row is None or col is None:
        raise _err(core, f"TEXTRACT index ({index_row!r}, {index_col!r}) is not a whole row and column",
                   "give the block's first row and column as integers (// instead of /)")
    index_row, index_col = row, col
    path = EXTRACT_PATHS.get((src.loc, dst.loc))
    if path is None or core.cluster.platform.id not in path[1]:
        here = [f"{a.value}->{b.value}" for (a, b), (_, on) in EXTRACT_PATHS.items()
                if core.cluster.platform.id in on]
        # pto-isa's TEXTRACT has no branch for such a pair: the call compiles to nothing and
        # dst never receives the data; a TMOV of the pair, where there is one, moves it
        move = (src.loc, dst.loc) in MOVES
        raise _err(core, f"TEXTRACT from {src.loc.value} to {dst.loc.value} is not a path on "
                         f"{core.cluster.platform.name}"
                         + (" (pto-isa's TEXTRACT has no branch for it: the call would move nothing)"
                            if move else ""),
                   (f"move the whole tile with TMOV ({src.loc.value}->{dst.loc.value}); " if move else "")
                   + f"TEXTRACT paths there: {', '.join(here)}")
    r, c = d.shape
    if index_row < 0 or index_col < 0 or index_row + r > s.shape[0] or index_col + c > s.shape[1]:
        raise _err(core, f"TEXTRACT block {r}x{c} at ({index_row}, {index_col}) is outside the "
                         f"{s.shape[0]}x{s.shape[1]} source")
    if src.loc is CONVERTS_FROM:
        _acc_converts(core, "TEXTRACT", src, dst.dtype)
    elif dst.dtype != src.dtype:
        _same_dtype(core, "TEXTRACT", dst, src)
    core.pending.append((setitem, d, _ALL, s[index_row:index_row + r, index_col:index_col + c]))
    cost = (core.costs.vector_op("TEXTRACT", r, c, src.item) if path[0] is PipeUnit.V
            else core.costs.move(src.sname, dst.sname, d.size * d.itemsize))
    _, end = core.issue(path[0], cost, (src,), (dst,), "TEXTRACT",
                        TileArgs(d.shape, dst.dtype) if core.trace is not None else None)
    return new_event(("TEXTRACT", core, end))


# -- cube ---------------------------------------------------------------------------------
def _mm_layouts(core, op, a, b, c) -> None:
    """The Cube reads its operands as fractals (pto-isa's TileLeft ZZ on A2A3 / NZ on A5,
    TileRight ZN, TileAcc NZ): a Left / Right / Acc tile declared in another layout."""
    want = {"a": ((_ZZ, _NZ), a), "b": ((_ZN,), b), "c": ((_NZ,), c)}
    for role, (ok, t) in want.items():
        if t.layout not in ok:
            names = " or ".join(l.name for l in ok)
            raise _err(core, f"{op}: {role} is {t.describe()} in layout {t.layout.name}; the Cube reads "
                             f"{t.loc.value} tiles as {names} fractals",
                       f"declare the {t.loc.value} tile without a layout (the default is {ok[0].name}) "
                       f"or with layout=TileLayout.{ok[0].name}, and TMOV / TEXTRACT the data into it")


def _mm_operands(core, op, c, a, b, gemv: bool = False):
    """The checked operands of a matmul ``c = a @ b``: the arrays it reads and writes, and the
    accumulator dtype.  TMATMUL* as pto-isa runs it: m, k, n are a's valid rows and columns
    and b's valid columns, each at most 4095 (its PTO_ASSERT), and it reads b's first k rows
    and writes c's first m x n elements whatever their valid shapes say (an accumulator of
    valid 16 x 12 fed 16 x 16 operands takes all 16 columns) - within the tiles.  A GEMV
    (``gemv``) checks the valid shapes chain."""
    A = a._valid if a.__class__ is Tile and a.core is core and a.binding is None else arr(a, core, f"{op} left operand")
    B = b._valid if b.__class__ is Tile and b.core is core and b.binding is None else arr(b, core, f"{op} right operand")
    C = c._valid if c.__class__ is Tile and c.core is core and c.binding is None else arr(c, core, f"{op} result")
    if a.loc is not TileType.Left or b.loc is not TileType.Right or c.loc is not TileType.Acc:
        _need_loc(core, a, (TileType.Left,), op, "a")
        _need_loc(core, b, (TileType.Right,), op, "b")
        _need_loc(core, c, (TileType.Acc,), op, "c")
    if (a.layout is not _ZZ and a.layout is not _NZ) or b.layout is not _ZN or c.layout is not _NZ:
        _mm_layouts(core, op, a, b, c)
    if gemv:
        if a.valid_cols != b.valid_rows or c.valid_rows != a.valid_rows or c.valid_cols != b.valid_cols:
            raise _err(core, f"{op}: shapes do not chain: a {A.shape[0]}x{A.shape[1]}, b "
                             f"{B.shape[0]}x{B.shape[1]}, c {C.shape[0]}x{C.shape[1]}",
                       "need a MxK, b KxN, c MxN")
    else:
        m, k, n = a.valid_rows, a.valid_cols, b.valid_cols
        if m > 4095 or k > 4095 or n > 4095:
            # (the MMAD's fields: a larger one is cut; an empty m, k or n - which pto-isa's debug
            # build also asserts against - is the empty product, as an empty tile moves no data)
            raise _err(core, f"{op}: m = {m}, k = {k}, n = {n} (a's valid rows and columns, b's valid "
                             "columns); pto-isa asserts each is at most 4095",
                       "split the matmul into blocks of at most 4095 rows / columns (TEXTRACT)")
        if k != b.valid_rows or m != c.valid_rows or n != c.valid_cols:
            if k > b.rows or m > c.rows or n > c.cols:      # (past the tiles: other data)
                raise _err(core, f"{op}: shapes do not chain: m, k, n = {m}, {k}, {n} (a's valid rows "
                                 f"and columns, b's valid columns) but b holds {b.rows} rows and c "
                                 f"{c.rows}x{c.cols}", "need a MxK, b KxN, c MxN")
            B, C = b._full[:k, :n], c._full[:m, :n]          # b's first k rows, c's first m x n
    pid = core.cluster.platform.id
    acc = MATMUL_PAIRS[pid].get((a.dtype, b.dtype))
    if acc is None:
        raise _err(core, *matmul_pair_error(op, a.dtype, b.dtype, pid))
    if c.dtype != acc:
        raise _err(core, f"{op}: accumulator is {c.dtype.name}; {a.dtype.name} inputs accumulate "
                         f"in {acc.name}", f"declare the Acc tile as {acc.name}")
    if acc == A.dtype:                           # float32 operands: TF32 in the Cube's TF32 mode
        spec = tf32_spec(core)
        if spec is not None:
            A, B = tf32_operands(core, A, B, spec)
    return A, B, C, acc


def _product(A, B, acc, out=None):
    if A.dtype == acc:
        return np.matmul(A, B, out=out)
    return np.matmul(A.astype(acc), B.astype(acc), out=out)


def _product_into(A, B, acc, C):
    """C = A @ B for an Acc valid region that is not contiguous."""
    C[...] = _product(A, B, acc)


def _product_acc(Ci, A, B, acc, C):
    np.add(Ci, _product(A, B, acc), out=C)


def _product_bias(A, B, Bi, acc, C):
    np.add(_product(A, B, acc), Bi[:1].astype(acc), out=C)


def _copy_unsafe(d, s):
    np.copyto(d, s, casting="unsafe")


def _ufunc_into(ufunc, a, b, d):
    ufunc(a, b, out=d)


def _row_block_into(ufunc, a, b, d, first: bool):
    """d = ufunc(a, b) where the per-row operand (``a`` if ``first``, else ``b``) is a block per
    row that repeats along it: element (i, j) takes its (i, j mod block).  (The last two axes
    are the tile's: a batch of blocks adds a leading one.)"""
    reps = -(-d.shape[-1] // (a if first else b).shape[-1])
    if first:
        a = np.tile(a, (1, reps))[..., :d.shape[-1]]
    else:
        b = np.tile(b, (1, reps))[..., :d.shape[-1]]
    ufunc(a, b, out=d)


# these run unchanged on operands with one more leading axis - a batch of repeated blocks
# (sim.periodic; ``batch_out``: the argument each writes): matmul broadcasts its leading axes
for _k in (_product, _product_into, _product_acc, _ufunc_into):
    _k.batch_out = -1
_copy_unsafe.batch_out = 0
_copy_unsafe.batch_copy = (0, 1)    # (a plain copy where the dtypes are equal)
_row_block_into.batch_out = 3       # (d)
del _k


def _acc_read(core, op: str, c_in: Tile) -> None:
    """With the checkers on: ``op`` accumulates onto ``c_in``, which this launch must have
    written (KernelChecks.acc_read)."""
    chk = core.cluster.checker
    if chk is not None:
        chk.acc_read(core, op, c_in)


def _mm_issue(core, op, a, b, c, srcs, A, B):
    m, k, n = a.valid_rows, a.valid_cols, b.valid_cols
    cost = core.costs.matmul(m, k, n, a.item)
    args = MatmulArgs(m, k, n) if core.trace is not None else None
    if srcs is None:
        end = core.issue_rrw(_M, cost, a, b, c, op, args)
    else:
        _, end = core.issue(_M, cost, srcs, (c,), op, args)
    return new_event((op, core, end))


def TMATMUL(c: Tile, a: Tile, b: Tile, *events) -> Event:
    """c = a @ b  (Left x Right -> Acc, f16/bf16/f32 -> f32, int8 -> int32)."""
    try:
        core = _getcurrent().core        # current_core(), inline (hot path)
    except AttributeError:
        core = current_core()            # raises: not inside a running kernel
    if core.ff is not None:                     # fast-forward (sim.periodic)
        return core.ff.call(core, TMATMUL, (c, a, b, *events), None)
    if events:
        TSYNC(*events)
    A, B, C, acc = _mm_operands(core, "TMATMUL", c, a, b)
    if C.shape[1] == c.cols:             # the region written is contiguous: write in place
        core.pending.append((_product, A, B, acc, C))
    else:
        core.pending.append((_product_into, A, B, acc, C))
    return _mm_issue(core, "TMATMUL", a, b, c, None, A, B)


def TMATMUL_ACC(c_out: Tile, c_in: Tile, a: Tile, b: Tile, *events) -> Event:
    """c_out = c_in + a @ b."""
    core = kernel_core()
    if core.ff is not None:                     # fast-forward (sim.periodic)
        return core.ff.call(core, TMATMUL_ACC, (c_out, c_in, a, b, *events), None)
    if events:
        TSYNC(*events)
    A, B, C, acc = _mm_operands(core, "TMATMUL_ACC", c_out, a, b)
    Ci = arr(c_in, core, "TMATMUL_ACC accumulator input")
    if C is not c_out._valid:           # (valid shapes that do not chain) c_out's first m x n: c_in's too
        Ci = c_in._full[:C.shape[0], :C.shape[1]]
    _same_shape(core, "TMATMUL_ACC", ("c_out", C), ("c_in", Ci))
    _acc_read(core, "TMATMUL_ACC", c_in)
    core.pending.append((_product_acc, Ci, A, B, acc, C))
    return _mm_issue(core, "TMATMUL_ACC", a, b, c_out, (a, b, c_in), A, B)


def _bias_row(core, op: str, bias: Tile, n: int, acc) -> np.ndarray:
    """The first ``n`` entries of ``bias``'s row: the Cube reads the bias table for the
    result's n columns, whatever the Bias tile's valid region (pto-isa's TMatmulBias passes
    only its address).  The bias is a one-row Bias tile of the accumulator's dtype ``acc``
    (pto-isa's static_asserts: "No supported bias data type", "TileBias must be single row")."""
    arr(bias, core, f"{op} bias")
    if bias.loc is not TileType.Bias or bias.rows != 1 or bias.dtype != acc:
        raise _err(core, f"{op}: the bias is {bias.describe()}; the Cube adds a one-row Bias tile of the "
                         f"accumulator's dtype, {acc.name} (pto-isa's static_assert: the kernel does not compile)",
                   f"TMOV the bias row from L1 into a one-row Bias tile of {acc.name} (a half row converts "
                   "to float there) and pass that")
    if bias.cols < n:
        raise _err(core, f"{op}: the bias tile has {bias.cols} columns, the result {n}",
                   "declare a Bias tile with at least the result's columns")
    return bias._full[:1, :n]


def TMATMUL_BIAS(c: Tile, a: Tile, b: Tile, bias: Tile, *events) -> Event:
    """c = a @ b + bias (bias: 1 x N, broadcast over rows)."""
    core = kernel_core()
    if core.ff is not None:                     # fast-forward (sim.periodic)
        return core.ff.call(core, TMATMUL_BIAS, (c, a, b, bias, *events), None)
    if events:
        TSYNC(*events)
    A, B, C, acc = _mm_operands(core, "TMATMUL_BIAS", c, a, b)
    Bi = _bias_row(core, "TMATMUL_BIAS", bias, C.shape[1], acc)
    core.pending.append((_product_bias, A, B, Bi, acc, C))
    return _mm_issue(core, "TMATMUL_BIAS", a, b, c, (a, b, bias), A, B)


def _gemv_check(core, op: str, a: Tile, b: Tile) -> None:
    """pto-isa's GEMV shape: one row of ``a`` (m = 1), k and n (b's valid shape) in 1 .. 4095."""
    if a.valid_rows != 1 or not (1 <= b.valid_rows <= 4095 and 1 <= b.valid_cols <= 4095):
        raise _err(core, f"{op}: m = {a.valid_rows}, k = {b.valid_rows}, n = {b.valid_cols}; a GEMV "
                         "multiplies one row (m = 1) by a k x n matrix with k, n in 1 .. 4095",
                   "give a one valid row, or use TMATMUL for m > 1")


def TGEMV(c: Tile, a: Tile, b: Tile, *events) -> Event:
    """c[0, :] = a[0, :] @ b: TMATMUL with one row (Left 1 x K, Right K x N, Acc 1 x N)."""
    core = current_core()
    if events:
        TSYNC(*events)
    A, B, C, acc = _mm_operands(core, "TGEMV", c, a, b, gemv=True)
    _gemv_check(core, "TGEMV", a, b)
    core.pending.append((_product_into, A, B, acc, C))
    return _mm_issue(core, "TGEMV", a, b, c, None, A, B)


def TGEMV_ACC(c_out: Tile, c_in: Tile, a: Tile, b: Tile, *events) -> Event:
    """c_out = c_in + a @ b with one row (TMATMUL_ACC's GEMV)."""
    core = current_core()
    if events:
        TSYNC(*events)
    A, B, C, acc = _mm_operands(core, "TGEMV_ACC", c_out, a, b, gemv=True)
    _gemv_check(core, "TGEMV_ACC", a, b)
    Ci = arr(c_in, core, "TGEMV_ACC accumulator input")
    _same_shape(core, "TGEMV_ACC", ("c_out", C), ("c_in", Ci))
    _acc_read(core, "TGEMV_ACC", c_in)
    core.pending.append((_product_acc, Ci, A, B, acc, C))
    return _mm_issue(core, "TGEMV_ACC", a, b, c_out, (a, b, c_in), A, B)


def TGEMV_BIAS(c: Tile, a: Tile, b: Tile, bias: Tile, *events) -> Event:
    """c = a @ b + bias with one row (TMATMUL_BIAS's GEMV; bias 1 x N)."""
    core = current_core()
    if events:
        TSYNC(*events)
    A, B, C, acc = _mm_operands(core, "TGEMV_BIAS", c, a, b, gemv=True)
    _gemv_check(core, "TGEMV_BIAS", a, b)
    Bi = _bias_row(core, "TGEMV_BIAS", bias, C.shape[1], acc)
    core.pending.append((_product_bias, A, B, Bi, acc, C))
    return _mm_issue(core, "TGEMV_BIAS", a, b, c, (a, b, bias), A, B)


# -- vector -------------------------------------------------------------------------------
def _not_vec(core, name, tiles) -> KernelError:
    bad = next(t for t in tiles if t.loc is not TileType.Vec)
    return _err(core, f"{name}: {bad.describe()} is not a Vec tile; vector ops work on Vec tiles (UB)",
                "TMOV/TSTORE the data to a Vec tile on a Vector core first")


def _vec_issue(core, name, dst, s0, s1, rows, cols, itemsize):
    """Issue a vector op writing ``dst`` from sources ``s0`` / ``s1`` (either may be None)."""
    if dst.loc is not _VEC or (s0 is not None and s0.loc is not _VEC) or (s1 is not None and s1.loc is not _VEC):
        raise _not_vec(core, name, [t for t in (dst, s0, s1) if t is not None])
    # the head latency is paid when the vector queue runs dry before this op starts: the
    # V pipe is drained at issue, or an operand becomes ready only after it drains
    pf = core.pipe_free[_V]
    head = (pf <= core.clock or dst.read_end > pf or dst.ready_at > pf
            or (s0 is not None and s0.ready_at > pf) or (s1 is not None and s1.ready_at > pf))
    cost = core.costs.vector_op(name, rows, cols, itemsize, head)
    args = TileArgs((rows, cols), dst.dtype) if core.trace is not None else None
    if s1 is not None:
        end = core.issue_rrw(_V, cost, s0, s1, dst, name, args)
    elif s0 is not None:
        end = core.issue_rw(_V, cost, s0, dst, name, args)
    else:
        end = core.issue_w(_V, cost, dst, name, args)
    return new_event((name, core, end))


def _valid(t, core, what: str = "operand") -> np.ndarray:
    """``arr`` with the common case (a plain tile bound on this core) checked inline."""
    if t.__class__ is Tile and t.core is core and t.binding is None:
        return t._valid
    return arr(t, core, what)


def _elementwise(core, name: str, dst: Tile, src: Tile, src1: Tile | None = None):
    """The arrays of an element-wise vector op, checked: same valid shape, same dtype."""
    d = dst._valid if dst.__class__ is Tile and dst.core is core and dst.binding is None else arr(dst, core)
    a = src._valid if src.__class__ is Tile and src.core is core and src.binding is None else arr(src, core)
    if src1 is None:
        if src.sig != dst.sig:
            _same_shape(core, name, ("dst", d), ("src", a))
            _same_dtype(core, name, dst, src)
        return d, a, None
    b = src1._valid if src1.__class__ is Tile and src1.core is core and src1.binding is None else arr(src1, core)
    if not (src.sig == src1.sig == dst.sig):
        _same_shape(core, name, ("dst", d), ("src0", a), ("src1", b))
        _same_dtype(core, name, dst, src, src1)
    return d, a, b


def _split_tmp(rest: tuple):
    """(tmp, events) of an instruction's trailing arguments: a leading Tile is its ``tmp``."""
    if rest and rest[0].__class__ is Tile:
        return rest[0], rest[1:]
    return None, rest


def _with_tmp(instr, operands: str):
    """``instr`` with pto-isa's optional ``tmp`` tile as a positional parameter after its
    ``operands`` (``TROWEXPANDADD(dst, src0, src1, tmp, events...)``), so the C ABI counts it
    among the arguments the instruction takes (``cpp.headergen.arities``); ``instr`` takes it
    as the first of its trailing arguments.  The wrapper is what the kernel calls, so it hands
    the call to the fast-forward engine (which reads the kernel's line one frame up)."""
    n = len(operands.split(", "))

    def with_tmp(*args, **kw):
        if len(args) > n and args[n] is None:       # tmp=None given: no tmp
            args = args[:n] + args[n + 1:]
        core = getattr(_getcurrent(), "core", None)
        if core is not None and core.ff is not None:    # fast-forward (sim.periodic)
            return core.ff.call(core, instr, args, kw or None)
        return instr(*args, **kw)
    params = [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in operands.split(", ")]
    params += [inspect.Parameter("tmp", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None),
               inspect.Parameter("events", inspect.Parameter.VAR_POSITIONAL)]
    with_tmp.__signature__ = inspect.Signature(params, return_annotation=Event)
    with_tmp.__doc__ = instr.__doc__
    return with_tmp


def _vec_issue_tmp(core, name, dst, s0, s1, tmp):
    """``_vec_issue`` of an op given a ``tmp`` tile (written on A2A3: ``_tmp_tile``)."""
    writes = [dst]
    _tmp_tile(core, name, tmp, writes, (s0, s1))
    if len(writes) == 1:
        return _vec_issue(core, name, dst, s0, s1, dst.valid_rows, dst.valid_cols, dst.item)
    srcs = [t for t in (s0, s1) if t is not None]
    return vec_issue_n(core, name, writes, srcs, dst.valid_rows, dst.valid_cols, dst.item)


def vec_issue_n(core, name, dsts, srcs, rows, cols, itemsize):
    """Issue a vector op writing the tiles ``dsts`` from the tiles ``srcs`` (any number of
    each; the fixed-arity ``_vec_issue`` is the hot path of the common ones)."""
    tiles = list(dsts) + list(srcs)
    if any(t.loc is not _VEC for t in tiles):
        raise _not_vec(core, name, tiles)
    pf = core.pipe_free[_V]
    head = (pf <= core.clock or any(d.read_end > pf or d.ready_at > pf for d in dsts)
            or any(s.ready_at > pf for s in srcs))
    cost = core.costs.vector_op(name, rows, cols, itemsize, head)
    args = TileArgs((rows, cols), dsts[0].dtype) if core.trace is not None else None
    _, end = core.issue(_V, cost, tuple(srcs), tuple(dsts), name, args)
    return new_event((name, core, end))


def _binary(op):
    name, ufunc, ok, takes_tmp = op.name, op.kernel, op.allowed(), op.tmp or op.scratch

    def instr(dst: Tile, src0: Tile, src1: Tile, *events) -> Event:
        try:
            core = _getcurrent().core    # current_core(), inline (hot path)
        except AttributeError:
            core = current_core()        # raises: not inside a running kernel
        if core.ff is not None:                 # fast-forward (sim.periodic)
            return core.ff.call(core, instr, (dst, src0, src1, *events), None)
        tmp = None
        if takes_tmp and events:
            tmp, events = _split_tmp(events)
        if events:
            TSYNC(*events)
        d, a, b = _elementwise(core, name, dst, src0, src1)
        # the catalogue's dtype rule inline; _dtype_check raises with the reason
        # (test_catalogue checks the ISA and the rule agree)
        if ok is not None and dst.dtype not in ok[core.cluster.platform.id]:
            _dtype_check(core, op, dst)
        core.pending.append((_ufunc_into, ufunc, a, b, d))
        if tmp is not None:
            return _vec_issue_tmp(core, name, dst, src0, src1, tmp)
        return _vec_issue(core, name, dst, src0, src1, dst.valid_rows, dst.valid_cols, dst.item)
    sig = "dst, src0, src1, tmp" if takes_tmp else "dst, src0, src1"
    instr.__doc__ = f"{name}({sig}): dst = {ufunc.__name__}(src0, src1), element-wise."
    return _with_tmp(named(instr, name), "dst, src0, src1") if takes_tmp else instr


#: the scalar ops pto-isa also spells scalar first (pto_instr.hpp's ``TDIVS(dst, scalar,
#: src)``, include/pto/cpu/TBinSOps.hpp's OP_RDIVS): the kernel of ``dst = scalar op src``
SCALAR_FIRST = {"TDIVS": lambda a, v, d: div_trunc(v, a, d)}


def _dst_rows(core, name: str, dst: Tile, src: Tile):
    """The arrays of a tile-scalar op that runs over dst's valid region and asks only that
    src's valid columns be dst's (:func:`~ptopipe.arch.catalogue.rows_from_dst`): src's
    first ``dst.valid_rows`` rows of its storage, as the device reads them (a row past src's
    static rows is past the tile: an error)."""
    d, a = arr(dst, core), arr(src, core)
    if a.shape[1] != d.shape[1]:
        raise _err(core, f"{name}: src has {a.shape[1]} valid columns, dst {d.shape[1]} "
                         f"({src.describe()}, {dst.describe()})",
                   f"give src and dst the same valid columns ({name} on this platform takes "
                   "different valid rows, running over dst's)")
    _same_dtype(core, name, dst, src)
    if d.shape[0] > src.rows:
        raise _err(core, f"{name}: dst has {d.shape[0]} valid rows but src has {src.rows} rows of "
                         f"storage ({src.describe()}); the device would read past src's tile",
                   f"give dst at most {src.rows} valid rows")
    return d, src._full[:d.shape[0], :d.shape[1]]


def _scalar(op):
    name, fn, ok, takes_tmp = op.name, op.kernel, op.allowed(), op.tmp or op.scratch
    nonneg = op.nonneg_scalar
    first = SCALAR_FIRST.get(name)

    def instr(dst: Tile, src: Tile, scalar, *events) -> Event:
        try:
            core = _getcurrent().core    # current_core(), inline (hot path)
        except AttributeError:
            core = current_core()        # raises: not inside a running kernel
        if core.ff is not None:                 # fast-forward (sim.periodic)
            return core.ff.call(core, instr, (dst, src, scalar, *events), None)
        tmp = None
        if takes_tmp and events:
            tmp, events = _split_tmp(events)
        if events:
            TSYNC(*events)
        if scalar.__class__ is Tile and src.__class__ is not Tile and first is not None:
            # pto-isa's scalar-first form, TDIVS(dst, scalar, src): dst = scalar / src
            d, a, _ = _elementwise(core, name, dst, scalar)
            if ok is not None and dst.dtype not in ok[core.cluster.platform.id]:
                _dtype_check(core, op, dst)
            core.pending.append((first, a, _scalar_value(core, name, dst, src), d))
            return _vec_issue(core, name, dst, scalar, None, dst.valid_rows, dst.valid_cols, dst.item)
        if src.sig != dst.sig and src.__class__ is Tile and dst.__class__ is Tile \
                and rows_from_dst(name, core.cluster.platform.id):
            d, a = _dst_rows(core, name, dst, src)
        else:
            d, a, _ = _elementwise(core, name, dst, src)
        if ok is not None and dst.dtype not in ok[core.cluster.platform.id]:
            _dtype_check(core, op, dst)
        if name in SCALAR_INTO_DST_FIRST.get(core.cluster.platform.id, ()) and dst.mem is src.mem \
                and np.shares_memory(d, a):
            raise MemoryConflictError(
                f"{name}'s destination {dst.describe()} overlaps its source {src.describe()}: pto-isa's "
                f"{core.cluster.platform.name.upper()} {name} expands the scalar into dst first, so on the device it "
                "overwrites the source before it reads it (its debug build asserts \"Setting the source Tile and "
                "destination Tile to the same memory is unsupported\")",
                where=str(core.where()), fix=f"give {name}'s destination bytes of its own, apart from the source's")
        v = _scalar_value(core, name, dst, scalar)
        if nonneg and v < 0:
            raise _err(core, f"{name}: {op_scalar_error(op, dst.dtype, scalar)} ({dst.describe()})",
                       "pass a shift count >= 0")
        core.pending.append((fn, a, v, d))
        if tmp is not None:
            return _vec_issue_tmp(core, name, dst, src, None, tmp)
        return _vec_issue(core, name, dst, src, None, dst.valid_rows, dst.valid_cols, dst.item)
    sig = "dst, src, scalar, tmp" if takes_tmp else "dst, src, scalar"
    instr.__doc__ = f"{name}({sig}): element-wise with a scalar operand ({fn.__name__})" + \
        (f"; {name}(dst, scalar, src): the scalar first." if first is not None else ".")
    return _with_tmp(named(instr, name), "dst, src, scalar") if takes_tmp else instr


def _unary(op):
    name, fn, ok, takes_tmp = op.name, op.kernel, op.allowed(), op.tmp

    def instr(dst: Tile, src: Tile, *events) -> Event:
        try:
            core = _getcurrent().core    # current_core(), inline (hot path)
        except AttributeError:
            core = current_core()        # raises: not inside a running kernel
        if core.ff is not None:                 # fast-forward (sim.periodic)
            return core.ff.call(core, instr, (dst, src, *events), None)
        tmp = None
        if takes_tmp and events:
            tmp, events = _split_tmp(events)
        if events:
            TSYNC(*events)
        d, a, _ = _elementwise(core, name, dst, src)
        if ok is not None and dst.dtype not in ok[core.cluster.platform.id]:
            _dtype_check(core, op, dst)
        core.pending.append((fn, a, d))
        if tmp is not None:
            return _vec_issue_tmp(core, name, dst, src, None, tmp)
        return _vec_issue(core, name, dst, src, None, dst.valid_rows, dst.valid_cols, dst.item)
    instr.__doc__ = f"{name}(dst, src{'[, tmp]' if takes_tmp else ''}): element-wise unary op ({fn.__name__})."
    return _with_tmp(named(instr, name), "dst, src") if takes_tmp else instr


#: the destination of a reduction whose valid region is its one result column (row): the issue
#: records all of it written (else :func:`~ptopipe.isa.unwritten.writes_part` says which part)
_WHOLE = nullcontext()


def _row_reduce_into(fn, a, d):
    """``d``, one column, = ``fn`` of each row of ``a`` (the last two axes are the tile's: a
    batch of blocks adds a leading one)."""
    d[..., 0] = fn(a, axis=-1)


def _col_reduce_into(fn, a, d):
    """``d``, one row, = ``fn`` of each column of ``a`` (as :func:`_row_reduce_into`)."""
    d[..., 0, :] = fn(a, axis=-2)


# (each writes every element of d - a batch's copy of it holds no byte of its own - and each
# output element reduces the same elements in the same order on a batch of blocks)
_row_reduce_into.batch_out = _col_reduce_into.batch_out = -1


def _nd_source(core, name: str, src: Tile, role: str = "source") -> None:
    """pto-isa's row and column reductions (arg-reductions along rows too) read an ND tile only
    (row-major, no boxes: a2a3 TRowReduceOps.hpp TRowReduceCheck - which TRowReduceIdxOps.hpp
    calls too -, TColReduceOps.hpp, TColSum.hpp; a5 TRowReduce.hpp, TColReduceOps.hpp
    static_assert "only support Nd fractal Tile"), and TROWEXPAND writes one (its ``role`` the
    destination: a2a3 / a5 TRowExpand.hpp)."""
    if src.blayout is not BLayout.RowMajor or src.slayout is not SLayout.NoneBox:
        raise _err(core, f"{name}'s {role} {src.describe()} is not an ND tile: pto-isa's {name} takes an ND "
                         "tile only (row-major, no boxes: \"only support Nd fractal Tile\")",
                   f"give {name} a row-major {role} (blayout=RowMajor, slayout=NoneBox); TMOV a DN column to its "
                   "row view first")


def _row_reduce(op):
    name, fn, ok = op.name, op.kernel, op.allowed()

    def instr(dst: Tile, src: Tile, tmp: Tile | None = None, *events) -> Event:
        core = kernel_core()
        if core.ff is not None:                 # fast-forward (sim.periodic)
            return core.ff.call(core, instr, (dst, src, tmp, *events), None)
        _sync(events if tmp is None or isinstance(tmp, Tile) else (tmp,) + events)
        _nd_source(core, name, src)
        a = arr(src, core)
        d = arr(dst, core)
        if d.shape[0] != a.shape[0]:
            raise _err(core, f"{name}: dst has {d.shape[0]} valid rows, src has {a.shape[0]}",
                       "the result tile needs one row per source row (valid cols >= 1)")
        if src.dtype != dst.dtype:
            _same_dtype(core, name, dst, src)
        if ok is not None and src.dtype not in ok[core.cluster.platform.id]:
            _dtype_check(core, op, src)
        if a.size and d.size:                   # (an empty valid region reduces nothing)
            _reduce_apart(core, name, dst, d[:, :1], src, a)
            core.pending.append((_row_reduce_into, fn, a, d[:, :1]))
        writes = [dst]
        if tmp.__class__ is Tile:
            _tmp_tile(core, name, tmp, writes, (src,))
        with (writes_part(core, dst, dst.valid_rows, 1) if dst.valid_cols > 1 else _WHOLE):   # (column 0 written)
            if len(writes) > 1:
                return vec_issue_n(core, name, writes, [src], src.valid_rows, src.valid_cols, src.item)
            return _vec_issue(core, name, dst, src, None, src.valid_rows, src.valid_cols, src.item)
    instr.__doc__ = f"{name}(dst, src[, tmp]): dst[:, 0] = {fn.__name__} of each row of src."
    return instr


def _col_reduce(op):
    name, fn, ok, takes_tmp = op.name, op.kernel, op.allowed(), op.tmp

    def instr(dst: Tile, src: Tile, *events) -> Event:
        core = kernel_core()
        if core.ff is not None:                 # fast-forward (sim.periodic)
            return core.ff.call(core, instr, (dst, src, *events), None)
        tmp = None
        if takes_tmp and events and events[0].__class__ is Tile:
            # pto-isa's TCOLSUM(dst, src, tmp, isBinary): the sum through tmp, pairwise or
            # row by row (the same sum; A2A3 and A5 write tmp when pairwise)
            tmp, events = events[0], events[1:]
            if not events or events[0].__class__ is Event or not isinstance(events[0], (bool, int, np.bool_)):
                raise _err(core, f"{name}(dst, src, tmp, isBinary): the tmp form takes isBinary after tmp",
                           f"write {name}(dst, src, tmp, true) (pairwise) or {name}(dst, src, tmp, false)")
            binary, events = bool(events[0]), events[1:]
        if events:
            TSYNC(*events)
        _nd_source(core, name, src)
        a = arr(src, core)
        d = arr(dst, core)
        if d.shape[1] != a.shape[1]:
            raise _err(core, f"{name}: dst has {d.shape[1]} valid cols, src has {a.shape[1]}")
        if src.dtype != dst.dtype:
            _same_dtype(core, name, dst, src)
        if ok is not None and src.dtype not in ok[core.cluster.platform.id]:
            _dtype_check(core, op, src)
        if a.size and d.size:
            _reduce_apart(core, name, dst, d[:1, :], src, a)
            core.pending.append((_col_reduce_into, fn, a, d[:1, :]))
        with (writes_part(core, dst, 1, dst.valid_cols) if dst.valid_rows > 1 else _WHOLE):   # (row 0 written)
            if tmp is not None:
                t = arr(tmp, core, f"{name} tmp")
                if binary:
                    _tmp_apart(core, name, tmp, t, (dst,), (src,))
                    return vec_issue_n(core, name, [dst, tmp], [src], src.valid_rows, src.valid_cols, src.item)
            return _vec_issue(core, name, dst, src, None, src.valid_rows, src.valid_cols, src.item)
    instr.__doc__ = f"{name}(dst, src{'[, tmp, isBinary]' if takes_tmp else ''}): dst[0, :] = {fn.__name__} " \
                    "of each column of src."
    if not takes_tmp:
        return instr
    named(instr, name)                          # (the engine's record names the wrapped call)

    def with_tmp(dst: Tile, src: Tile, tmp=None, is_binary=None, *events) -> Event:
        args = (dst, src, *(x for x in (tmp, is_binary) if x is not None), *events)
        core = getattr(_getcurrent(), "core", None)
        if core is not None and core.ff is not None:    # fast-forward (sim.periodic): as _with_tmp's
            return core.ff.call(core, instr, args, None)
        return instr(*args)
    with_tmp.__doc__ = instr.__doc__
    return with_tmp


def _implicit_ub_scratch(core, name: str, tiles) -> None:
    """pto-isa's A2A3 TROWEXPAND* whose per-row operand is column-major (a [M, 1] tile's
    default DN) and that is given no tmp computes through UB[TMP_UB_OFFSET, end)
    (a2a3/TRowExpandBinOp.hpp:208; ``Platform.ub_scratch_base``): an operand there is
    overwritten while the op reads or writes it."""
    plat = core.cluster.platform
    base, end = plat.ub_scratch_base, plat.mem_size(MemSpace.UB)
    for t in tiles:
        if t.addr + t.nbytes > base:
            raise _err(core, f"{name} with a column-major per-row operand computes through UB[{base:#x}, "
                             f"{end:#x}) on {plat.name.upper()} (pto-isa's TMP_UB_OFFSET scratch), which "
                             f"{t.describe()} overlaps: its bytes there are overwritten",
                       f"place the kernel's Vec tiles below {base:#x} (ptopipe's allocator does), or "
                       "give the per-row operand a row-major layout")


def _row_expand(op):
    name, ufunc, ok, takes_tmp = op.name, op.kernel, op.allowed(), op.tmp

    def instr(dst: Tile, src0: Tile, src1: Tile, *events) -> Event:
        core = kernel_core()
        if core.ff is not None:                 # fast-forward (sim.periodic)
            return core.ff.call(core, instr, (dst, src0, src1, *events), None)
        tmp = None
        if takes_tmp and events:
            tmp, events = _split_tmp(events)
        if events:
            TSYNC(*events)
        a = arr(src0, core)
        b = arr(src1, core)
        d = arr(dst, core)
        if not (src0.dtype == src1.dtype == dst.dtype):
            _same_dtype(core, name, dst, src0, src1)
        if ok is not None and dst.dtype not in ok[core.cluster.platform.id]:
            _dtype_check(core, op, dst)
        # the per-row operand is src1, or src0 when src1 has dst's shape (pto-isa's TRowExpandOp):
        # one value per row, or a 32-byte block per row that repeats along it (its mode 2)
        per_row = b if a.shape == d.shape else a if b.shape == d.shape else None
        block = 32 // dst.item
        if d.size == 0:                 # (an empty valid region - a lane's replay - computes nothing)
            per_row = b
        elif per_row is None or per_row.shape[0] != d.shape[0] or per_row.shape[1] not in (1, block, d.shape[1]):
            raise _err(core, f"{name}: dst {d.shape}, src0 {a.shape} and per-row src1 "
                             f"{b.shape} do not agree",
                       f"one of src0 / src1 has dst's shape, the other one row per dst row: one value "
                       f"(one column) or a 32-byte block ({block} columns, RowMajor) per row")
        else:
            # pto-isa reads a RowMajor per-row operand as a 32-byte block per row (mode 2) and a
            # column-major one as one value per row (mode 1), and asserts its valid columns fit
            pt = src1 if per_row is b else src0
            want = block if pt.blayout is BLayout.RowMajor else 1
            if per_row.shape[1] != want:
                raise _err(core, f"{name}: the per-row operand {pt.describe()} has {per_row.shape[1]} valid "
                                 f"column{'s' if per_row.shape[1] != 1 else ''}, but pto-isa reads a "
                                 f"{pt.blayout.name} one as "
                                 + (f"a 32-byte block per row ({block} valid columns)" if want == block else
                                    "one value per row (1 valid column)")
                                 + " (its PTO_ASSERT 'invalid src1 shape' on A2A3, A5 and the CPU simulator)",
                           f"declare a per-row value ColMajor (DN, [R, 1]: what a row reduction writes), or "
                           f"RowMajor with {block} valid columns (a 32-byte block per row)")
        if tmp is None and src1.blayout is not BLayout.RowMajor \
                and core.cluster.platform.ub_scratch_base is not None:
            _implicit_ub_scratch(core, name, (dst, src0, src1))
        if per_row.shape[1] == 1 or per_row.shape[1] == d.shape[1]:
            core.pending.append((_ufunc_into, ufunc, a, b, d))
        else:
            core.pending.append((_row_block_into, ufunc, a, b, d, per_row is a))
        if tmp is not None:
            return _vec_issue_tmp(core, name, dst, src0, src1, tmp)
        return _vec_issue(core, name, dst, src0, src1, dst.valid_rows, dst.valid_cols, dst.item)
    sig = "dst, src0, src1[, tmp]" if takes_tmp else "dst, src0, src1"
    instr.__doc__ = (f"{name}({sig}): dst = {ufunc.__name__}(src0, src1) with the per-row operand (src1, or "
                     "src0 when src1 has dst's shape) repeated along each row: one value, or a 32-byte block.")
    return _with_tmp(named(instr, name), "dst, src0, src1") if takes_tmp else instr


def TROWEXPAND(dst: Tile, src: Tile, *events) -> Event:
    """dst[i, :] = src[i, 0]."""
    core = kernel_core()
    if core.ff is not None:                     # fast-forward (sim.periodic)
        return core.ff.call(core, TROWEXPAND, (dst, src, *events), None)
    if events:
        TSYNC(*events)
    a = arr(src, core)
    d = arr(dst, core)
    if a.shape[0] != d.shape[0]:
        raise _err(core, f"TROWEXPAND: dst has {d.shape[0]} rows, src has {a.shape[0]}")
    _nd_source(core, "TROWEXPAND", dst, "destination")
    _same_dtype(core, "TROWEXPAND", dst, src)
    core.pending.append((setitem, d, _ALL, a[:, :1]))
    return _vec_issue(core, "TROWEXPAND", dst, src, None, dst.valid_rows, dst.valid_cols, dst.item)


def TEXPANDS(dst: Tile, scalar, *events) -> Event:
    """Fill dst with a scalar."""
    core = kernel_core()
    if core.ff is not None:                     # fast-forward (sim.periodic)
        return core.ff.call(core, TEXPANDS, (dst, scalar, *events), None)
    if events:
        TSYNC(*events)
    d = arr(dst, core)
    core.pending.append((setitem, d, _ALL, _scalar_value(core, "TEXPANDS", dst, scalar)))
    return _vec_issue(core, "TEXPANDS", dst, None, None, dst.valid_rows, dst.valid_cols, dst.item)


_ROUNDERS = {RoundMode.CAST_RINT: np.rint, RoundMode.CAST_FLOOR: np.floor, RoundMode.CAST_CEIL: np.ceil,
             RoundMode.CAST_TRUNC: np.trunc, RoundMode.CAST_NONE: np.trunc,
             RoundMode.CAST_ROUND: lambda x: np.copysign(np.floor(np.abs(x) + 0.5), x)}


def _to_int(d, a, rounder, lo, hi):
    """A float array into an integer one: rounded, NaN as 0, saturated to [lo, hi] (in
    float64, which holds every int32 bound exactly)."""
    x = rounder(a.astype(np.float64))
    np.nan_to_num(x, copy=False, nan=0.0)
    np.clip(x, lo, hi, out=x)
    with np.errstate(invalid="ignore"):
        np.copyto(d, x, casting="unsafe")
    if float(hi) >= 2.0 ** 63:      # int64's largest value is 2^63 in float64: the cast would wrap it
        d[x >= 2.0 ** 63] = hi


def _adjacent(y: np.ndarray, up: np.ndarray) -> np.ndarray:
    """The float next to each ``y`` of its own dtype, upwards where ``up`` (else downwards):
    one step of the sign-magnitude bit pattern (zeros step to the smallest subnormal)."""
    u = y.view(np.dtype(f"u{y.dtype.itemsize}"))
    neg = np.signbit(y.astype(np.float32))
    away = up != neg                       # the step grows the magnitude
    out = np.where(away, u + 1, u - 1).astype(u.dtype)
    zero = y.astype(np.float32) == 0
    if zero.any():
        sign = np.array(1 << (8 * y.dtype.itemsize - 1), dtype=u.dtype)
        out = np.where(zero, np.where(up, np.array(1, u.dtype), sign | np.array(1, u.dtype)), out)
    return out.view(y.dtype)


def _to_float(d, a, mode: RoundMode) -> None:
    """A float (or 32-bit integer) array into a float dtype rounded by ``mode``: nearest-even first,
    then one step where the mode wants the other neighbour (FLOOR / CEIL / TRUNC by the
    side the exact value lies on, ROUND: ties away from zero).  float64 holds every source
    value and both neighbours exactly, so the comparisons are exact."""
    x = a.astype(np.float64)
    y = a.astype(d.dtype)
    yd = y.astype(np.float64)
    if mode is RoundMode.CAST_FLOOR:
        fix, up = yd > x, np.zeros(x.shape, bool)
    elif mode is RoundMode.CAST_CEIL:
        fix, up = yd < x, np.ones(x.shape, bool)
    elif mode is RoundMode.CAST_TRUNC:
        fix, up = np.abs(yd) > np.abs(x), x < 0
    else:                                   # CAST_ROUND: a tie goes to the larger magnitude
        other = _adjacent(y, yd < x).astype(np.float64)
        fix = (np.abs(x - yd) == np.abs(other - x)) & (np.abs(yd) < np.abs(x))
        up = yd < x
    with np.errstate(invalid="ignore"):
        fix &= np.isfinite(x)
    d[...] = np.where(fix, _adjacent(y, up), y)


def _saturated_float(d, a, big: float, mode: RoundMode) -> None:
    """A float or 32-bit integer array into a narrower float dtype under SaturationMode.ON:
    clamped to [-big, big] (NaN kept), then rounded by ``mode`` (float64 holds every source
    value exactly)."""
    x = np.clip(a.astype(np.float64), -big, big)
    if mode in (RoundMode.CAST_RINT, RoundMode.CAST_NONE):
        d[...] = x.astype(d.dtype)
    else:
        _to_float(d, x, mode)


def _wrap_int(d, a, rounder):
    """A float array into a narrower integer one without saturation (SaturationMode::OFF):
    rounded to int32 (saturated there, NaN 0), then the low bits kept - A2A3's PyTorch-
    compatible narrowing through int32 (docs/isa/TCVT.md, Temporary tile)."""
    x = np.empty(a.shape, np.int32)
    _to_int(x, a, rounder, np.iinfo(np.int32).min, np.iinfo(np.int32).max)
    np.copyto(d, x, casting="unsafe")


def _clamp_to(d, a, lo, hi):
    """``a`` clamped to [lo, hi] (in float64), then converted into ``d`` (SaturationMode::ON
    of an integer narrowing, or a float one to the destination's finite range)."""
    np.copyto(d, np.clip(a.astype(np.float64), lo, hi), casting="unsafe")


def _tcvt_args(core, args) -> tuple:
    """(tmp, RoundMode, SaturationMode or None, events) of TCVT's trailing arguments, in
    pto-isa's orders ``(tmp, mode[, satMode])`` / ``(mode[, satMode])``, each optional."""
    tmp = mode = sat = None
    rest = [x for x in args if x is not None]
    if rest and rest[0].__class__ is Tile:
        tmp = rest.pop(0)
    if rest and rest[0].__class__ is RoundMode:
        mode = rest.pop(0)
        if rest and isinstance(rest[0], SaturationMode):
            sat = rest.pop(0)
    for x in rest:
        if x.__class__ is not Event:
            raise _err(core, f"TCVT: argument {x!r} is not a tmp tile, a RoundMode, a SaturationMode or an event "
                             "in pto-isa's order", "write TCVT(dst, src[, tmp], mode[, satMode][, events...])")
    return tmp, mode or RoundMode.CAST_RINT, sat, rest


def TCVT(dst: Tile, src: Tile, mode: RoundMode = RoundMode.CAST_RINT, sat_mode: SaturationMode | None = None,
         tmp=None, *events) -> Event:
    """Convert src to dst's dtype; pto-isa's forms ``TCVT(dst, src[, tmp], mode[, satMode])``
    (the arguments after src are told apart by their types).  A float becomes an integer
    rounded by ``mode`` (pto-isa's RoundMode; default CAST_RINT: to nearest, ties to even) and
    saturated to the integer's range (NaN: 0), as the vector unit converts; float to float
    rounds to nearest (another mode: to that neighbour), integer to float is exact or rounded
    by ``mode`` as well (a 32-bit source), integer to integer keeps the low bits.  An explicit SaturationMode (include/pto/common/type.hpp) decides for
    the narrowing pairs: ON clamps to the destination's range first (an integer narrowing
    too, and a float one to its largest finite value - pto-isa's CPU TCvt_Impl clamps to
    the intersection of the two types' ranges), OFF narrows a float to an 8- or 16-bit
    integer through int32 and keeps the low bits (A2A3's PyTorch-compatible path).  Without
    one, the pairs pto-isa's NPU headers default to OFF (vocab.TCVT_DEFAULT_OFF: f16 -> u8 /
    i8 / i16, f32 -> i16, i64 -> i32, i32 -> i16) wrap, as on the device.  ``tmp`` is A2A3's
    scratch for those narrowings (written there, unused on A5; catalogue.TMP_MINIMUM sizes it).
    Only the pairs the run's platform converts (vocab.TCVT_PAIRS) are taken."""
    core = kernel_core()
    if core.ff is not None:                     # fast-forward (sim.periodic)
        return core.ff.call(core, TCVT, (dst, src, mode, sat_mode, tmp, *events), None)
    tmp, mode, sat, events = _tcvt_args(core, (mode, sat_mode, tmp) + events)
    if events:
        TSYNC(*events)
    a = arr(src, core)
    d = arr(dst, core)
    _same_shape(core, "TCVT", ("dst", d), ("src", a))
    bad = tcvt_pair_error(src.dtype, dst.dtype, core.cluster.platform.id)
    if bad is not None:
        raise _err(core, *bad)
    if sat is None and (src.dtype.name, dst.dtype.name) in TCVT_DEFAULT_OFF[core.cluster.platform.id]:
        sat = SaturationMode.OFF
    narrow = sat is not None and (dst.dtype.itemsize < src.dtype.itemsize or
                                  (dst.dtype.kind in "iu" and src.dtype.kind in "iu"
                                   and dst.dtype.kind != src.dtype.kind))
    if narrow and sat is SaturationMode.ON and src.dtype.kind in "iu" and dst.dtype.kind in "iu":
        info = np.iinfo(dst.dtype)
        core.pending.append((_clamp_to, d, a, info.min, info.max))
    elif narrow and sat is SaturationMode.ON and dst.dtype.kind in "fV" and mode is not RoundMode.CAST_ODD and \
            src.dtype.itemsize <= 4:
        # to a narrower float: clamped to its largest finite value first (inf too), then
        # rounded by the mode - pto-isa's TCvt_Impl clamps to the two types' common range
        big = float(np.finfo(dst.dtype).max) if dst.dtype.kind == "f" else float(ml_dtypes.finfo(dst.dtype).max)
        core.pending.append((_saturated_float, d, a, big, mode))
    elif src.dtype.kind in "fV":              # float16/32, bfloat16 and float8 (ml_dtypes: "V")
        if dst.dtype.kind in "iu":
            if mode is RoundMode.CAST_ODD:
                raise _err(core, "TCVT: RoundMode.CAST_ODD is not modelled",
                           "use CAST_RINT, CAST_ROUND, CAST_FLOOR, CAST_CEIL or CAST_TRUNC")
            info = np.iinfo(dst.dtype)
            if sat is SaturationMode.OFF and dst.dtype.itemsize < 4:
                core.pending.append((_wrap_int, d, a, _ROUNDERS[mode]))
            else:
                core.pending.append((_to_int, d, a, _ROUNDERS[mode], info.min, info.max))
        elif mode is RoundMode.CAST_ODD:
            raise _err(core, f"TCVT {src.dtype.name} -> {dst.dtype.name} with CAST_ODD: von Neumann "
                             "rounding is not modelled", "use CAST_RINT, CAST_ROUND, CAST_FLOOR, CAST_CEIL "
                                                         "or CAST_TRUNC")
        elif mode in (RoundMode.CAST_RINT, RoundMode.CAST_NONE) or dst.dtype.itemsize >= src.dtype.itemsize \
                and dst.dtype.kind == "f" and src.dtype.kind == "f":
            core.pending.append((_copy_unsafe, d, a))        # exact widening, or nearest-even
        else:
            core.pending.append((_to_float, d, a, mode))
    elif dst.dtype.kind == "f" and mode not in (RoundMode.CAST_RINT, RoundMode.CAST_NONE):
        # an integer to a float under another mode: the device has one conversion per mode
        if mode is RoundMode.CAST_ODD or src.dtype.itemsize > 4:
            raise _err(core, f"TCVT {src.dtype.name} -> {dst.dtype.name} with {mode.name}: "
                             f"{'von Neumann rounding' if mode is RoundMode.CAST_ODD else 'a 64-bit source'} "
                             "is not modelled under that mode", "use CAST_RINT (to nearest, ties to even)")
        core.pending.append((_to_float, d, a, mode))     # (float64 holds every 32-bit integer)
    else:
        core.pending.append((_copy_unsafe, d, a))
    if tmp is not None:
        t = arr(tmp, core, "TCVT tmp")
        if core.cluster.platform.id is _A2A3:
            _tmp_size(core, "TCVT", dst, src, tmp, None if sat is None else sat.name)
            _tmp_apart(core, "TCVT", tmp, t, (dst,), (src,))
            return vec_issue_n(core, "TCVT", [dst, tmp], [src], dst.valid_rows, dst.valid_cols, max(src.item, dst.item))
    return _vec_issue(core, "TCVT", dst, src, None, dst.valid_rows, dst.valid_cols, max(src.item, dst.item))


def TPACK(dst: Tile, src: Tile, *events) -> Event:
    """Pack src's valid region into dst's element type, each element as C++'s ``static_cast``
    converts it (pto-isa's CPU model of TPACK): an integer keeps its low bits, a float becomes
    an integer toward zero (saturated; NaN: 0), a float narrows to the nearest."""
    core = current_core()
    if events:
        TSYNC(*events)
    a = arr(src, core)
    d = arr(dst, core)
    _same_shape(core, "TPACK", ("dst", d), ("src", a))
    if src.dtype.kind in "fV" and dst.dtype.kind in "iu":
        info = np.iinfo(dst.dtype)
        core.pending.append((_to_int, d, a, _ROUNDERS[RoundMode.CAST_TRUNC], info.min, info.max))
    else:
        core.pending.append((_copy_unsafe, d, a))
    return _vec_issue(core, "TPACK", dst, src, None, dst.valid_rows, dst.valid_cols, max(src.item, dst.item))


# the catalogue's vector instructions of the generic forms, one module-level name each
# (TADD, TADDS, TEXP, TROWSUM, TROWEXPANDSUB, ...)
_BUILD = {"binary": _binary, "scalar": _scalar, "unary": _unary, "row_reduce": _row_reduce,
          "col_reduce": _col_reduce, "row_expand": _row_expand}
for _op in by_form(*_BUILD):
    _fn = named(_BUILD[_op.form](_op), _op.name)
    _fn.__module__ = __name__
    globals()[_op.name] = _fn
del _op, _fn

__all__ = [name for name in OPS if name in globals()]
