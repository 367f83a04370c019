"""The fixpipe's quantising moves and store: TMOV_FP, TEXTRACT_FP, TINSERT_FP and TSTORE_FP.

Each takes an accumulator (Acc) tile and an fp tile - a ``TileType.Scaling`` tile (the
fixpipe buffer) of uint64 quantisation words, one per column - and converts every element
with its column's word (:func:`~ptopipe.arch.catalogue.quantize_fp`) on the way to L1, UB
(A5) or GM.  The paths, the (accumulator, destination) dtype pairs of each platform and the
numpy kernel are the op catalogue's (``FP_PATHS``, ``FP_CONVERTS``); arguments follow
pto-isa's C++ order (``TEXTRACT_FP(dst, src, fp, indexRow, indexCol)``); pto-isa's
``ReluPreMode`` template parameter is the keyword ``relu_mode``.
"""
from __future__ import annotations

import numpy as np

from ..arch.catalogue import FP_CONVERTS, FP_PARAM, FP_PATHS, OPS, platform_label
from ..arch.vocab import AtomicType, ReluPreMode
from .context import current_core
from .events import Event, new_event
from .ops import _add_into, _err, _gm_tile_view, _sync, arr, atomic_add, queue_checked_write, store_window
from .tensor import GlobalTensor
from .tile import Tile, TileType, spell_tile
from ..sim.trace import TileArgs

_KERNEL = OPS["TMOV_FP"].kernel


def _check(core, name: str, src: Tile, dst_dtype, fp: Tile, cols: int, what: str, first: int = 0) -> np.ndarray:
    """The fp words of ``cols`` columns after the checks every *_FP op makes: an Acc source, a
    Scaling fp tile holding the words, a dtype pair the fixpipe converts on this platform.
    The fixpipe reads 8-byte words from the fp tile's address plus ``first`` of its elements
    (pto-isa sets the FPC register so; its declared dtype is not checked: ptoas writes f32 fp
    tiles) - uint64 tiles, ``TileType.Scaling, uint64, 1, N``, are what pto-isa's pages use."""
    platform = core.cluster.platform.id
    arr(src, core, f"{name} source")
    if src.loc is not TileType.Acc:
        raise _err(core, f"{name} converts an Acc tile, not {src.describe()}",
                   "move the accumulator (TMATMUL's result) with it")
    arr(fp, core, f"{name} fp")
    if fp.loc is not TileType.Scaling:
        raise _err(core, f"{name}'s fp operand is {fp.describe()}; pto-isa takes a TileType.Scaling tile "
                         "(the fixpipe buffer) of uint64 quantisation words, one per column",
                   f"declare fp as {spell_tile(core.where(), TileType.Scaling, 'uint64, 1, N', 'uint64_t, 1, N')} "
                   "and TMOV it there from a Mat tile")
    start = first * fp.item
    if start + cols * FP_PARAM.itemsize > fp.nbytes:
        raise _err(core, f"{name}: {fp.describe()} holds {fp.nbytes} bytes; the {cols} columns {what} need "
                         f"{cols} 8-byte words from byte {start}", f"give fp {cols} uint64 words")
    pairs = FP_CONVERTS[platform]
    if np.dtype(dst_dtype) not in pairs.get(src.dtype, ()):
        have = "; ".join(f"{s.name} -> {', '.join(d.name for d in ds)}" for s, ds in pairs.items())
        raise _err(core, f"{name} does not convert {src.dtype.name} to {np.dtype(dst_dtype).name} on "
                         f"{platform_label(platform)} (the fixpipe's vector quantisation: {have})",
                   "store / move the accumulator as it is (TSTORE / TMOV), or pick one of these pairs")
    return fp._full.reshape(-1).view(np.uint8)[start:start + cols * FP_PARAM.itemsize].view(FP_PARAM)


def _relu(core, name: str, relu_mode) -> bool:
    try:
        return ReluPreMode(relu_mode) is ReluPreMode.NormalRelu
    except ValueError:
        raise _err(core, f"{name}: relu_mode={relu_mode!r} is not a ReluPreMode",
                   "pass ReluPreMode.NoRelu or ReluPreMode.NormalRelu") from None


def _path(core, name: str, src: Tile, dst: Tile):
    paths = FP_PATHS[name]
    got = paths.get((src.loc, dst.loc))
    platform = core.cluster.platform.id
    if got is None or platform not in got[1]:
        here = [f"{a.value}->{b.value}" for (a, b), (_, on) in paths.items() if platform in on]
        raise _err(core, f"{name} from {src.loc.value} to {dst.loc.value} is not a path on "
                         f"{platform_label(platform)}", f"paths there: {', '.join(here)}")
    return got[0]


def _issue(core, name, pipe, src, fp, dst, shape) -> Event:
    cost = core.costs.move(src.sname, dst.sname, shape[0] * shape[1] * src.item)
    _, end = core.issue(pipe, cost, (src, fp), (dst,), name,
                        TileArgs(shape, dst.dtype) if core.trace is not None else None)
    return new_event((name, core, end))


def TMOV_FP(dst: Tile, src: Tile, fp: Tile, *events, relu_mode=ReluPreMode.NoRelu) -> Event:
    """dst = src converted per column with fp's words (Acc -> Mat; A5 also Acc -> Vec); dst's
    valid region is src's."""
    core = current_core()
    _sync(events)
    s = arr(src, core, "TMOV_FP source")
    d = arr(dst, core, "TMOV_FP destination")
    pipe = _path(core, "TMOV_FP", src, dst)
    if s.shape != d.shape:
        raise _err(core, f"TMOV_FP: src's valid region {s.shape[0]}x{s.shape[1]} and dst's "
                         f"{d.shape[0]}x{d.shape[1]} differ", "give both tiles the same valid shape")
    q = _check(core, "TMOV_FP", src, dst.dtype, fp, s.shape[1], "of src")
    core.pending.append((_KERNEL, s, q, d, _relu(core, "TMOV_FP", relu_mode)))
    return _issue(core, "TMOV_FP", pipe, src, fp, dst, s.shape)


def TEXTRACT_FP(dst: Tile, src: Tile, fp: Tile, index_row: int = 0, index_col: int = 0, *events,
                relu_mode=ReluPreMode.NoRelu) -> Event:
    """dst = the block of src at (index_row, index_col), dst's valid shape, converted per
    source column ``index_col + c`` with fp's word of that column."""
    core = current_core()
    _sync(events)
    s = arr(src, core, "TEXTRACT_FP source")
    d = arr(dst, core, "TEXTRACT_FP destination")
    pipe = _path(core, "TEXTRACT_FP", src, dst)
    r0, c0 = int(index_row), int(index_col)
    r, c = d.shape
    if r0 < 0 or c0 < 0 or r0 + r > s.shape[0] or c0 + c > s.shape[1]:
        raise _err(core, f"TEXTRACT_FP block {r}x{c} at ({r0}, {c0}) is outside the {s.shape[0]}x{s.shape[1]} "
                         "source", "keep the block inside src's valid region")
    q = _check(core, "TEXTRACT_FP", src, dst.dtype, fp, c, "the block reads", first=c0)
    core.pending.append((_KERNEL, s[r0:r0 + r, c0:c0 + c], q, d, _relu(core, "TEXTRACT_FP", relu_mode)))
    return _issue(core, "TEXTRACT_FP", pipe, src, fp, dst, d.shape)


def TINSERT_FP(dst: Tile, src: Tile, fp: Tile, index_row: int = 0, index_col: int = 0, *events,
               relu_mode=ReluPreMode.NoRelu) -> Event:
    """dst[index_row:, index_col:] = src's valid region converted per source column with fp's
    words (Acc -> Mat)."""
    core = current_core()
    _sync(events)
    s = arr(src, core, "TINSERT_FP source")
    arr(dst, core, "TINSERT_FP destination")
    pipe = _path(core, "TINSERT_FP", src, dst)
    r0, c0 = int(index_row), int(index_col)
    r, c = s.shape
    full = dst._full
    if r0 < 0 or c0 < 0 or r0 + r > full.shape[0] or c0 + c > full.shape[1]:
        raise _err(core, f"TINSERT_FP: a {r}x{c} source at ({r0}, {c0}) does not fit {dst.describe()}",
                   "keep the inserted block inside dst's static shape")
    q = _check(core, "TINSERT_FP", src, dst.dtype, fp, c, "of src")
    core.pending.append((_KERNEL, s, q, full[r0:r0 + r, c0:c0 + c], _relu(core, "TINSERT_FP", relu_mode)))
    return _issue(core, "TINSERT_FP", pipe, src, fp, dst, s.shape)


def TSTORE_FP(dst: GlobalTensor, src: Tile, fp: Tile, *events, relu_mode=ReluPreMode.NoRelu,
              atomic_type=AtomicType.AtomicNone) -> Event:
    """GM = src converted per column with fp's words (Acc -> GM on the FIX pipe); with
    ``atomic_type=AtomicType.AtomicAdd``, GM += the converted tile (:func:`~ptopipe.isa.ops.atomic_add`)."""
    core = current_core()
    _sync(events)
    s = arr(src, core, "TSTORE_FP source")
    q = _check(core, "TSTORE_FP", src, dst.dtype, fp, s.shape[1], "of src")
    relu = _relu(core, "TSTORE_FP", relu_mode)
    dst = store_window(core, dst, src, "TSTORE_FP")
    write = atomic_add(core, "TSTORE_FP", dst, atomic_type) if atomic_type else True
    v = _gm_tile_view(core, dst, src, "TSTORE_FP", "destination")
    work = ()
    if v is not None and write is not True:     # converted aside, then added in GM's dtype
        out = np.empty(s.shape, dst.dtype)
        work = ((_KERNEL, s, q, out, relu), (_add_into, v, out if dst._mat2 else out.reshape(dst.shape)))
    elif v is not None:
        out = v if dst._mat2 else np.empty(s.shape, dst.dtype)
        work = ((_KERNEL, s, q, out, relu),) + (() if dst._mat2 else ((_put, v, out, dst.shape),))
    ps = core.psync
    if ps is not None and ps.gm_watch:
        ps.gm_note(dst, True, "TSTORE_FP")
    pipe = OPS["TSTORE_FP"].pipe
    chk = core.cluster.checker
    if chk is None:
        core.pending.extend(work)
    _, end = core.issue(pipe, core.costs.move(src.sname, "GM", s.size * dst.item), (src, fp), (), "TSTORE_FP",
                        TileArgs(s.shape, src.dtype) if core.trace is not None else None)
    if chk is not None:
        queue_checked_write(core, chk.gm_access(core, dst, write, "TSTORE_FP", None, end, pipe, work), *work)
    return new_event(("TSTORE_FP", core, end))


def _put(v, out, shape) -> None:
    np.copyto(v, out.reshape(shape), casting="unsafe")


def _relu_move(s: np.ndarray, d: np.ndarray) -> None:
    """``d = max(convert(s), 0)``: the fixpipe's ReLU on a converting move (pto-isa's CPU
    model: the element cast, then negatives set to zero)."""
    d[...] = s
    np.maximum(d, 0, out=d)


def fixpipe_move(core, src: Tile, dst: Tile, s: np.ndarray, d: np.ndarray, relu_mode, pre_quant,
                 op: str = "TMOV") -> None:
    """The data of a TMOV whose ``ReluPreMode`` is NormalRelu or that has a pre-quant scalar
    (pto-isa's ``TMOV<..., reluMode>(dst, src[, preQuantScalar])``, Acc -> Mat / Vec): the
    fixpipe converts every column with the one quantisation word ``pre_quant`` (the format
    of an fp tile's words), then applies the ReLU; without a word it casts.  Queued on
    ``core`` like TMOV's plain copy; TMOV has checked the path and the shapes.  ``op``: the
    instruction, for its messages (TSTORE's, :func:`fixpipe_store`)."""
    if src.loc is not TileType.Acc:
        raise _err(core, f"{op}'s ReLU and pre-quant scalar are the fixpipe's: they move an Acc tile, not "
                         f"{src.describe()}", f"{'move' if op == 'TMOV' else 'store'} as it is ({op} without "
                                              "relu_mode / pre_quant)")
    relu = relu_mode is not None and _relu(core, op, relu_mode)
    if pre_quant is None:
        core.pending.append((_relu_move, s, d) if relu else (np.copyto, d, s, "unsafe"))
        return
    pairs = FP_CONVERTS[core.cluster.platform.id]
    if d.dtype not in pairs.get(src.dtype, ()):
        have = "; ".join(f"{a.name} -> {', '.join(b.name for b in bs)}" for a, bs in pairs.items())
        raise _err(core, f"{op}'s scalar pre-quant does not convert {src.dtype.name} to {d.dtype.name} on "
                         f"{platform_label(core.cluster.platform.id)} (the fixpipe's quantisation: {have})",
                   f"{'move' if op == 'TMOV' else 'store'} the accumulator as it is (no pre-quant scalar), or "
                   "pick one of these pairs")
    word = np.full(s.shape[1], int(pre_quant) & 0xFFFFFFFFFFFFFFFF, FP_PARAM)
    core.pending.append((_KERNEL, s, word, d, relu))


def fixpipe_store(core, src: Tile, s: np.ndarray, dtype, relu_mode, pre_quant) -> np.ndarray:
    """What a TSTORE with pto-isa's ``ReluPreMode`` / ``preQuantScalar`` (``TSTORE<TileData,
    GlobalData, AtomicType, ReluPreMode>(dst, src[, preQuantScalar])``, an Acc tile) writes to
    GM: ``s`` (the tile's valid region) converted as :func:`fixpipe_move` converts, into a
    buffer of GM's ``dtype`` - queued on ``core``, before the store that moves it."""
    out = np.empty(s.shape, dtype)
    fixpipe_move(core, src, None, s, out, relu_mode, pre_quant, op="TSTORE")
    return out


__all__ = ["TEXTRACT_FP", "TINSERT_FP", "TMOV_FP", "TSTORE_FP"]
