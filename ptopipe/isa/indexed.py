"""MGATHER / MSCATTER: pto-isa's indexed GM gather and scatter (docs/isa/MGATHER.md,
MSCATTER.md; include/pto/npu/a2a3|a5/MGather.hpp, MScatter.hpp), the one place their operand
rules, their GM bytes and their pipes are made.

``MGATHER(dst, table, indices, *events, coalesce=Coalesce.Row, oob=GatherOOB.Undefined)``
reads GM into the Vec tile ``dst`` at the indices of the Vec tile ``indices``:
``Coalesce.Row`` whole table rows (``dst[r, :] = table[idx[r], :]``, one index per dst row),
``Coalesce.Elem`` elements of the flat table (``dst[r, c] = table.flat[idx[r, c]]``).
``MSCATTER(table, src, indices, *events, coalesce=Coalesce.Row, atomic=ScatterAtomicOp(0),
oob=ScatterOOB.Undefined, conflict=None)`` writes a Vec tile's rows / elements there,
plainly (the last write to an element stays) or combined by an atomic Add (A5 also Max, Min).
The GM -> L1 form of MGATHER gathers into a Cube ``Mat`` tile in NZ layout with the indices in
GM: ``MGATHER(dst, table, gm_indices)`` (rows), ``MGATHER(dst, table, gm_indices, scratch,
coalesce=Coalesce.Elem)`` (elements, staged in the GM ``scratch`` in the tile's NZ order).

The indices are data: the instruction applies the work queued before it (as TGATHER's index
form does) and reads them when it is issued, so the GM bytes it reads or writes are known
exactly.  They take part in the checks a TLOAD's / TSTORE's bytes do: the race checker (one
access of exactly those bytes, an atomic op's of its kind), the manual-mode pipe order
(``PipeSync.gm_note``) and the bounds of the run argument the table's pointer comes from.  An
index at or past the table's capacity with ``Undefined`` is a KernelError at the line (the
device reads or writes whatever lies there); Clamp / Wrap / Zero / Skip remap as pto-isa's
``mgather_remap`` / ``mscatter_remap`` do (:func:`~ptopipe.arch.catalogue.remap_indices`: an
index is read as uint32, so a negative int32 is past any table).

Per platform, as pto-isa's NPU code (not its CPU simulator, which walks every form
element-wise): A2A3 runs on the scalar unit, moving a Row's rows by DMA (MTE2 / MTE3), a
table row ``Stride[3]`` elements apart, ``Shape[0..3]`` rows; A5 launches a SIMT kernel on the
vector pipe, a row ``validCols`` elements apart (``Shape[4]`` must be the tile's valid
columns), ``Shape[3]`` rows, a [R, 1] index tile read as R consecutive elements.  The pipes
and the library's own events are :data:`~ptopipe.arch.catalogue.INDEXED_PIPES`.  Not modelled
(a KernelError says what is): pto-isa's A2A3 NZ-table path (a ``Layout::NZ`` table with an NZ
Vec tile) and A5's SIMT executor of the GM -> L1 element gather (``GatherExec::Simt``).
"""
from __future__ import annotations

from enum import Enum

import numpy as np

from ..arch import PipeUnit
from ..arch.catalogue import INDEXED_INDEX, INDEXED_PIPES, OPS, SCATTER_ATOMIC, platform_label, remap_indices
from ..arch.vocab import Coalesce, GatherOOB, PlatformID, ScatterAtomicOp, ScatterConflict, ScatterOOB, TileLayout
from ..errors import MemoryConflictError, with_article
from ..sim import schedule as _sched
from ..sim.pipesync import psync
from ..sim.porder import SLOT
from ..sim.race import ATOMIC_ADD, ATOMIC_MAX, ATOMIC_MIN, region_of_ranges
from ..sim.trace import TileArgs
from .context import current_core
from .events import Event, new_event
from .ops import _err, _not_a_tensor, _sync, arr, queue_checked_write
from .tensor import GlobalTensor
from .tile import Tile, TileType

_GATHER, _SCATTER = OPS["MGATHER"], OPS["MSCATTER"]
_OK = _GATHER.allowed()
_A5 = PlatformID.PLATFORM_A5
_VEC, _MAT = TileType.Vec, TileType.Mat
_ND, _DN, _NZ = TileLayout.ND, TileLayout.DN, TileLayout.NZ
_KIND = {ScatterAtomicOp.Add: ATOMIC_ADD, ScatterAtomicOp.Max: ATOMIC_MAX, ScatterAtomicOp.Min: ATOMIC_MIN}
#: pto-isa's FRACTAL_NZ_ROW and C0_SIZE_BYTE: an NZ fractal is 16 rows of 32 bytes
_FRACTAL_ROWS, _C0_BYTES = 16, 32


def _enum(core, name: str, cls, value, what: str):
    """``value`` as a member of ``cls`` (one of another enum - a ScatterOOB given to MGATHER -
    is an error, not its number read as ``cls``'s)."""
    members = ", ".join(f"{cls.__name__}.{m.name}" for m in cls)
    if isinstance(value, Enum) and not isinstance(value, cls):
        raise _err(core, f"{name}: {what}={value!r} is {with_article(type(value).__name__)}; {name} takes "
                         f"{with_article(cls.__name__)} there", f"pass one of {members}")
    try:
        return cls(value)
    except ValueError:
        raise _err(core, f"{name}: {what}={value!r} is not {with_article(cls.__name__)}",
                   f"pass one of {members}") from None


def _begin(name: str, events, sched_kind):
    core = current_core()
    core.unrecorded(name)                       # data-dependent addresses: no recorded replay
    if core.policy is not None:                 # an exploring run: a choice point
        core.cluster.visible(core, sched_kind)
    _sync(events)
    return core


def _tensor(core, name: str, gt, role: str) -> GlobalTensor:
    if gt.__class__ is not GlobalTensor:
        raise _not_a_tensor(core, gt, f"{name} {role}")
    if gt.ptr is None:
        raise gt.unassigned(f"{name} ({role})")
    return gt


def _index_tile(core, name: str, idx, platform) -> np.ndarray:
    """The valid array of the Vec index tile ``idx`` (int32 / uint32; on A2A3 row-major ND,
    pto-isa's MGatherCheck / MScatterCheck)."""
    if not isinstance(idx, Tile):
        raise _err(core, f"{name}: the indices are {type(idx).__name__}, not a tile",
                   "pass a Vec tile of int32 indices (a GlobalTensor of them for the GM -> L1 gather into a Mat tile)")
    a = arr(idx, core, f"{name} indices")
    if idx.loc is not _VEC:
        raise _err(core, f"{name}: the index tile {idx.describe()} is {with_article(idx.loc.value)} tile; "
                         f"pto-isa reads {name}'s indices from UB (\"indices must be a Vec tile\")",
                   "TLOAD the indices into a Vec tile")
    _index_dtype(core, name, idx.dtype, idx.describe())
    if platform is not _A5 and idx.layout is not _ND:
        raise _err(core, f"{name} on A2A3: the index tile {idx.describe()} is {idx.layout.name}; pto-isa's A2A3 "
                         f"{name} reads row-major ND index tiles only (\"index tile must be BLayout::RowMajor\")",
                   "declare the index tile row-major (blayout=BLayout.RowMajor), e.g. [1, R] for a row gather")
    return a


def _index_dtype(core, name: str, dtype, what: str) -> None:
    if dtype not in INDEXED_INDEX:
        raise _err(core, f"{name}: the indices {what} are {dtype.name}; pto-isa's {name} takes int32 or uint32 "
                         "indices (\"index type must be int32_t or uint32_t\")",
                   "declare the indices int32 (TCVT them first if they are another type)")


def _data_tile(core, name: str, t, role: str, platform) -> np.ndarray:
    """The valid array of the Vec data tile ``t`` (ND; A5 also DN), dtype checked."""
    if not isinstance(t, Tile):
        raise _err(core, f"{name}: {role} is {type(t).__name__}, not a tile", f"pass a Vec tile as {role}")
    a = arr(t, core, f"{name} {role}")
    if t.loc is not _VEC:
        raise _err(core, f"{name}: {role} {t.describe()} is {with_article(t.loc.value)} tile; {name} moves "
                         "between GM and a Vec tile (UB)" + (" - or, MGATHER, into an NZ Mat tile with the indices "
                                                            "in GM" if name == "MGATHER" else ""),
                   f"use a Vec tile as {role}")
    ok = (_ND,) if platform is not _A5 else (_ND, _DN)
    if t.layout not in ok:
        nz = " (pto-isa's A2A3 NZ path - a Layout::NZ table with an NZ Vec tile - is not modelled by ptopipe)" \
            if platform is not _A5 and t.layout is _NZ else ""
        raise _err(core, f"{name} on {platform_label(platform)}: {role} {t.describe()} is {t.layout.name}; "
                         f"{name} moves {' or '.join(l.name for l in ok)} tiles{nz}",
                   f"declare {role} row-major (ND), and TMOV it into another layout after")
    if _OK is not None and t.dtype not in _OK[platform]:
        bad = _GATHER.dtype_error(t.dtype, platform)
        raise _err(core, f"{bad[0].replace('MGATHER', name)} ({t.describe()})", bad[1])
    return a


def _table(core, name: str, table, t: Tile, coalesce, platform, vc: int):
    """The table's checks and geometry: ``(capacity, row pitch in elements or None)``."""
    table = _tensor(core, name, table, "table")
    if table.dtype != t.dtype:
        raise _err(core, f"{name}: the table {table.describe()} is {table.dtype.name} but {t.describe()} is "
                         f"{t.dtype.name}; pto-isa's {name} takes a table of the tile's element type "
                         "(GlobalTable::DType == __gm__ T)", "declare the table with the tile's element type")
    lay = table.layout_for(t)
    if lay is not _ND:
        raise _err(core, f"{name}: the table {table.describe()} is {lay.name}; ptopipe models {name} on ND tables "
                         "(A5's only layout; pto-isa's A2A3 NZ path - a Layout::NZ table with an NZ Vec tile - is "
                         "not modelled)", "give the table the ND layout (the data row-major, Stride[4] == 1)")
    s, st = table.shape, table.stride
    if coalesce is Coalesce.Elem:
        return s[0] * s[1] * s[2] * s[3] * s[4], None
    if platform is _A5 and t.loc is _VEC:
        if s[4] != vc:
            raise _err(core, f"{name} Coalesce::Row on A5: the table's rows have {s[4]} elements (Shape[4]) but the "
                             f"tile's valid columns are {vc}; pto-isa's A5 kernel reads rows of validCols elements "
                             "(\"Coalesce::Row requires GlobalTensor inner dim (Shape[4]) == TileDst::ValidCol\")",
                       f"give the table Shape[4] = {vc}, or the tile {vc} valid columns of its rows")
        if s[3] > 1 and st[3] != s[4]:
            raise _err(core, f"{name} Coalesce::Row on A5: the table's rows are {st[3]} elements apart (Stride[3]) "
                             f"but pto-isa's A5 kernel reads them {s[4]} apart (table + index * validCols: a packed "
                             "table), so the device would move other elements than the table's rows",
                       f"give the table packed rows (Stride[3] == Shape[4] == {s[4]})")
        return s[3], vc
    if vc > s[4] or (st[4] != 1 and vc > 1):
        raise _err(core, f"{name} Coalesce::Row: the tile's {vc} valid columns are more than a table row's {s[4]} "
                         f"adjacent elements (shape {s}, stride {st}); the DMA moves {vc} adjacent elements a row",
                   f"give the table rows of {vc} elements, or the tile {s[4]} valid columns")
    return s[0] * s[1] * s[2] * s[3], st[3]


def _row_indices(core, name: str, idx: Tile, a: np.ndarray, rows: int, platform) -> np.ndarray:
    """The ``rows`` row indices of a Row gather / scatter: a [1, R] index tile (A5 also [R, 1],
    read as R consecutive elements of the tile, as pto-isa's ``indices[row]``)."""
    vr, vc = a.shape
    if vr == 1 and vc == rows:
        return a[0]
    if platform is _A5 and vr == rows and vc == 1:
        if idx.cols > 1 and idx.layout is _ND:
            raise _err(core, f"{name} Coalesce::Row on A5: the [{rows}, 1] index tile {idx.describe()} is row-major "
                             f"with {idx.cols} columns, so its column holds the indices {idx.cols} elements apart, "
                             "but pto-isa's A5 kernel reads them as consecutive elements (indices[row])",
                       f"declare the index tile [{rows}, 1] (one column: DN) or [1, {rows}]")
        return a[:, 0]
    want = f"[1, {rows}]" + (f" or [{rows}, 1]" if platform is _A5 else "")
    raise _err(core, f"{name} Coalesce::Row: the index tile's valid shape is [{vr}, {vc}], not {want} (one index per "
                     f"row of the {rows}-row tile) on {platform_label(platform)}",
               f"give the index tile valid shape {want}; for one index per element pass coalesce=Coalesce.Elem "
               f"(the device's default is Row: pto-isa's CPU simulator alone gathers element-wise then)")


def _elem_indices(core, name: str, a: np.ndarray, shape: tuple) -> np.ndarray:
    if a.shape != shape:
        raise _err(core, f"{name} Coalesce::Elem: the index tile's valid shape is [{a.shape[0]}, {a.shape[1]}], not "
                         f"the tile's [{shape[0]}, {shape[1]}] (one index per element)",
                   f"give the index tile valid shape [{shape[0]}, {shape[1]}]")
    return a


def _undefined_index(core, name: str, raw: np.ndarray, cap: int, coalesce, at) -> None:
    """The error of an index at or past the table's ``cap`` rows / elements under OOB Undefined."""
    bad = raw.astype(np.int64) >= cap
    if not bad.any():
        return
    k = tuple(int(x) for x in np.argwhere(bad)[0])
    v = int(raw[k])
    signed = f" ({v - (1 << 32)} as int32, read as uint32)" if v >= 1 << 31 else ""
    unit = "rows" if coalesce is Coalesce.Row else "elements"
    mode = "GatherOOB" if name == "MGATHER" else "ScatterOOB"
    others = "Clamp, .Wrap or .Zero" if name == "MGATHER" else "Skip, .Clamp or .Wrap"
    raise _err(core, f"{name} index {v}{signed} at {at(k)} is past the table's {cap} {unit}: with "
                     f"{mode}::Undefined pto-isa relies on every index being below {cap}, and the device "
                     f"{'reads' if name == 'MGATHER' else 'writes'} whatever lies there",
               f"keep every index in 0 .. {cap - 1}, or pass oob={mode}.{others} to have the indices past the "
               "table handled")


def _flat(gm, base: int, dtype):
    """GM as a flat array of ``dtype`` whose element ``k`` is at ``base``'s phase + k items, and
    the index of ``base`` in it."""
    item = dtype.itemsize
    phase = base % item
    return np.ndarray(((gm.size - phase) // item,), dtype, gm.buf, phase), (base - phase) // item


def _ranges(base: int, item: int, starts: np.ndarray, length: int) -> list:
    """The byte ranges of ``length`` elements at each element offset of ``starts`` from ``base``."""
    lo = base + starts.astype(np.int64) * item
    return list(zip(lo.tolist(), (lo + length * item).tolist()))


def _in_bounds(core, name: str, table: GlobalTensor, ranges: list, what) -> None:
    """The bytes of ``ranges`` lie in GM and in the run argument the table's pointer comes from."""
    if not ranges:
        return
    lo = min(a for a, _ in ranges)
    hi = max(b for _, b in ranges)
    p = table.ptr
    b = p.bounds
    if b is not None and (lo < b[0] or hi > b[1]):
        k = next(i for i, (a, e) in enumerate(ranges) if a < b[0] or e > b[1])
        a, e = ranges[k]
        desc = f"{name} through {table.describe()} at {what(k)}"
        if not isinstance(b[2], str):             # a TALLOCed / popped slot: it words the report
            msg, fix = b[2].explain(desc, a, e - a)
            raise MemoryConflictError(msg, where=str(core.where()), fix=fix)
        item = table.dtype.itemsize
        raise MemoryConflictError(
            f"access out of bounds: {desc} {'reads' if name == 'MGATHER' else 'writes'} GM [{a:#x}, {e:#x}), outside "
            f"argument '{b[2]}' [{b[0]:#x}, {b[1]:#x}) that the table's pointer comes from (elements "
            f"{(a - b[0]) // item} to {(e - b[0]) // item - 1} of {(b[1] - b[0]) // item})", where=str(core.where()),
            fix=f"keep the table within '{b[2]}': its shape and the offset added to its pointer give the rows / "
                "elements its indices pick")
    core.cluster.gm.check(lo, hi - lo, lambda: f"{name} through {table.describe()}")


#: ``core.isa`` key: the end of the core's latest GM access on a pipe that is not a TLOAD / TSTORE
#: pipe (``sim.porder.GM_PIPES``): an A5 MGATHER / MSCATTER on PIPE_V
_OFF_GM_PIPES = "gm_off_gm_pipes"


def gm_end_off_gm_pipes(core) -> int:
    """The end cycle of ``core``'s latest GM access made on a pipe other than MTE2 / MTE3 / FIX (an
    A5 MGATHER / MSCATTER on the vector pipe; 0: none).  A signal that follows every access of
    a ring slot (``ProtocolModel.free_after_readers``: the address flow's TFREE and TPUSH under
    spec) waits for it too: sim.porder orders the GM pipes' accesses only, and the race checker
    judges the others by their end (``HappensBefore.on_set``)."""
    return core.isa.get(_OFF_GM_PIPES, 0)


def _pipes(core, name: str, form: str):
    return INDEXED_PIPES[core.cluster.platform.id][(name, form)]


def _issue(core, name: str, form: str, gm_table, region, write, walk_srcs, move_srcs, dsts, walk_cost, move_cost,
           trace_shape, dtype, work=None):
    """Issue the op as the platform runs it (:data:`INDEXED_PIPES` of ``(name, form)``): the
    library's events before, the walk over the indices (reading ``walk_srcs``), the move
    (reading ``move_srcs``, writing ``dsts``; with ``region``, the GM bytes, checked), its
    events after.  ``work``: a scatter's numpy work (a write's, queued after its check).
    Returns the end cycle."""
    walk, move, before, after = _pipes(core, name, form)
    # the library's own events order the core's pipes in either synchronisation mode: in auto
    # mode too a later instruction on their dst pipe - an A2A3 address-flow TFREE on MTE2 after
    # an MSCATTER into the popped slot - follows the op (its timing and sim.porder's order)
    ps = psync(core) if before or after else core.psync
    chk = core.cluster.checker
    args = TileArgs(trace_shape, dtype) if core.trace is not None else None
    if ps is not None:
        for a, b in before:
            ps.order(a, b)
    if walk is not move:
        core.issue(walk, walk_cost, tuple(walk_srcs), (), name, args)
        if ps is not None:
            ps.order(walk, move)                # the walk issues the moves
        srcs, cost = tuple(move_srcs), move_cost
    else:
        srcs, cost = tuple(walk_srcs) + tuple(move_srcs), walk_cost + move_cost
    if region is not None and ps is not None and ps.gm_watch:
        ps.gm_note(gm_table, bool(write), name, region)
    if work is not None and (chk is None or region is None):
        core.pending.append(work)
    _, end = core.issue(move, cost, srcs, tuple(dsts), name, args)
    if region is not None and SLOT[move] is None:
        core.isa[_OFF_GM_PIPES] = end
    if region is not None and chk is not None:
        applied = chk.gm_indexed(core, gm_table, region, write, name, end, move, (work,) if work is not None else None)
        if work is not None:
            queue_checked_write(core, applied, work)
    if ps is not None:
        for a, b in after:
            ps.order(a, b)
    return end


def MGATHER(dst, table, indices, *rest, coalesce=None, oob=GatherOOB.Undefined) -> Event:
    """GM rows or elements of ``table`` into ``dst`` at the indices of ``indices`` (module doc):
    ``coalesce`` Row (the default) or Elem, ``oob`` the GatherOOB of an index past the table.  A
    ``Mat`` dst (NZ) gathers from GM on the Cube, the indices a GlobalTensor; its element form
    takes a GM ``scratch`` tensor after them (``MGATHER(dst, table, idx, scratch,
    coalesce=Coalesce.Elem)``)."""
    scratch = rest[0] if rest and isinstance(rest[0], GlobalTensor) else None
    events = rest[1:] if scratch is not None else rest
    core = _begin("MGATHER", events, _sched.TLOAD)
    oob = _enum(core, "MGATHER", GatherOOB, oob, "oob")
    if coalesce is not None:
        coalesce = _enum(core, "MGATHER", Coalesce, coalesce, "coalesce")
    if isinstance(dst, Tile) and dst.loc is _MAT:
        return _gather_to_l1(core, dst, table, indices, scratch, coalesce, oob)
    if scratch is not None:
        raise _err(core, "MGATHER: a scratch tensor after the indices is the GM -> L1 element gather's, into a Mat "
                         "tile; a gather into a Vec tile takes none", "leave the scratch tensor out")
    coalesce = Coalesce.Row if coalesce is None else coalesce
    platform = core.cluster.platform.id
    d = _data_tile(core, "MGATHER", dst, "dst", platform)
    rows, cols = d.shape
    cap, pitch = _table(core, "MGATHER", table, dst, coalesce, platform, cols)
    a = _index_tile(core, "MGATHER", indices, platform)
    if not rows or not cols:
        return _empty(core, "MGATHER", coalesce, [indices], [dst], dst)
    core.cluster.sync()                         # the indices' values decide the bytes it reads
    if coalesce is Coalesce.Row:
        raw = _row_indices(core, "MGATHER", indices, a, rows, platform).astype(np.uint32)
    else:
        raw = _elem_indices(core, "MGATHER", a, (rows, cols)).astype(np.uint32)
    at = (_at_rows if coalesce is Coalesce.Row else _at_elems)(indices, raw)
    return _gather(core, dst, d, table, raw, cap, pitch, coalesce, oob, [indices], at, coalesce.name)


def _at_rows(idx, raw):
    """Where index ``k`` of a row gather sits, for messages."""
    return lambda k: f"index {k[0]} of the index tile (for row {k[0]})"


def _at_elems(idx, raw):
    return lambda k: f"indices[{k[0]}, {k[1]}]"


def _empty(core, name, coalesce, srcs, dsts, t):
    """A gather / scatter of an empty valid region: no byte moves; issued at no cost."""
    end = _issue(core, name, coalesce.name, None, None, False, srcs, (), dsts, 0, 0, (t.valid_rows, t.valid_cols),
                 t.dtype)
    return new_event((name, core, end))


def _gather(core, dst: Tile, d: np.ndarray, table: GlobalTensor, raw, cap, pitch, coalesce, oob, srcs, at,
            form: str, space="UB", walked: bool = False) -> Event:
    """The GM side of a gather into ``d`` (dst's valid array) from the checked indices ``raw``
    (read from ``srcs``, or already by the walk ``walked``), as ``(MGATHER, form)`` runs."""
    flat, offs, kept_all, units, region = _targets(core, "MGATHER", table, raw, cap, pitch, d.shape, coalesce, oob,
                                                   oob is GatherOOB.Undefined, at)
    item = table.dtype.itemsize
    work = (_GATHER.kernel, flat, offs, kept_all, d)
    moved = int(np.count_nonzero(kept_all)) * item
    costs = core.costs
    end = _issue(core, "MGATHER", form, table, region, False, srcs, (), [dst], 0 if walked else costs.scalar_op * units,
                 costs.move("GM", space, moved), d.shape, dst.dtype)
    core.pending.append(work)
    return new_event(("MGATHER", core, end))


def _targets(core, op: str, table: GlobalTensor, raw, cap: int, pitch, shape: tuple, coalesce, oob, undefined: bool,
             at) -> tuple:
    """The GM elements an MGATHER / MSCATTER (``op``) of a ``shape`` tile moves, from the checked
    indices ``raw`` (``at`` says where each sits) into a table of ``cap`` rows (``pitch``
    elements apart) or elements (``pitch`` None), after the OOB mode ``oob`` (``undefined``:
    an index past the table is an error) remaps them: ``(flat, offs, kept, units, region)`` -
    the table's GM as a flat array of its element type, each tile element's offset into it,
    which ones move, the scalar unit's steps (a row or an element each) and the bytes' region
    for the checkers.  A range past the table's argument is a MemoryConflictError."""
    rows, cols = shape
    if cap == 0:
        raise _err(core, f"{op}: the table {table.describe()} has no {'rows' if pitch is not None else 'elements'}",
                   "give the table the shape of the data it holds")
    if undefined:
        _undefined_index(core, op, raw, cap, coalesce, at)
    safe, kept = remap_indices(raw, cap, oob.name)
    item, base = table.dtype.itemsize, table.ptr.addr
    flat, b0 = _flat(core.cluster.gm, base, table.dtype)
    if pitch is not None:                       # rows: `cols` adjacent elements from row idx * pitch
        starts = safe * pitch
        ranges = _ranges(base, item, starts[kept], cols)
        offs = b0 + starts[:, None] + np.arange(cols)
        kept_all, units = np.broadcast_to(kept[:, None], (rows, cols)), rows
    else:
        ranges = _ranges(base, item, safe[kept], 1)
        offs, kept_all, units = b0 + safe, kept, rows * cols
    _in_bounds(core, op, table, ranges, _range_at(kept, at))
    return flat, offs, kept_all, units, region_of_ranges(ranges)


def _range_at(kept: np.ndarray, at):
    """Where the ``k``-th kept index sits (``at`` of its position), for messages."""
    pos = np.argwhere(kept)
    return lambda k: at(tuple(int(x) for x in pos[k]))


def MSCATTER(table, src, indices, *events, coalesce=Coalesce.Row, atomic=ScatterAtomicOp(0),
             oob=ScatterOOB.Undefined, conflict=None) -> Event:
    """The rows or elements of the Vec tile ``src`` into GM ``table`` at the indices of
    ``indices`` (module doc): ``coalesce`` Row or Elem, ``atomic`` the ScatterAtomicOp combining
    a write with the table's element (None: a plain store), ``oob`` the ScatterOOB of an index
    past the table, ``conflict`` A5's ScatterConflict (None: its default, Last)."""
    core = _begin("MSCATTER", events, _sched.TSTORE)
    platform = core.cluster.platform.id
    coalesce = _enum(core, "MSCATTER", Coalesce, coalesce, "coalesce")
    atomic = _enum(core, "MSCATTER", ScatterAtomicOp, atomic, "atomic")
    oob = _enum(core, "MSCATTER", ScatterOOB, oob, "oob")
    if conflict is not None:
        conflict = _enum(core, "MSCATTER", ScatterConflict, conflict, "conflict")
        if platform is not _A5:
            raise _err(core, f"MSCATTER on A2A3 takes no ScatterConflict (conflict={conflict.name}): pto-isa declares "
                             "it on A5 only - A2A3's scatter runs in order and the last write to an element stays",
                       "leave the ScatterConflict out on A2A3")
    s = _data_tile(core, "MSCATTER", src, "src", platform)
    if atomic is not ScatterAtomicOp(0):
        ok = SCATTER_ATOMIC[atomic].on(platform)
        if src.dtype not in ok:
            takes = f"takes {', '.join(sorted(d.name for d in ok))}" if ok else "is not implemented"
            other = SCATTER_ATOMIC[atomic].on(_A5 if platform is not _A5 else PlatformID.PLATFORM_A2A3)
            raise _err(core, f"MSCATTER with ScatterAtomicOp::{atomic.name} {takes} on {platform_label(platform)}, "
                             f"not {src.dtype.name} (pto-isa's MScatterCheck refuses it at compile time)",
                       f"scatter {', '.join(sorted(d.name for d in ok))} data" if ok else
                       f"run it on A5 ({', '.join(sorted(d.name for d in other))}), or combine the values in a tile "
                       "and scatter them plainly")
    rows, cols = s.shape
    cap, pitch = _table(core, "MSCATTER", table, src, coalesce, platform, cols)
    a = _index_tile(core, "MSCATTER", indices, platform)
    if not rows or not cols:
        return _empty(core, "MSCATTER", coalesce, [indices, src], [], src)
    core.cluster.sync()                         # the indices' values decide the bytes it writes
    if coalesce is Coalesce.Row:
        raw = _row_indices(core, "MSCATTER", indices, a, rows, platform).astype(np.uint32)
        at = _at_rows(indices, raw)
    else:
        raw = _elem_indices(core, "MSCATTER", a, (rows, cols)).astype(np.uint32)
        at = _at_elems(indices, raw)
    flat, offs, kept_all, units, region = _targets(core, "MSCATTER", table, raw, cap, pitch, (rows, cols), coalesce,
                                                   oob, oob is ScatterOOB.Undefined, at)
    item = table.dtype.itemsize
    if atomic is ScatterAtomicOp(0) and platform is _A5 and conflict is ScatterConflict.Default:
        _conflict_warning(core, offs, kept_all, s, at, coalesce)
    write = True if atomic is ScatterAtomicOp(0) else _KIND[atomic]
    work = (_SCATTER.kernel, flat, offs, kept_all, s, atomic)
    moved = int(np.count_nonzero(kept_all)) * item
    costs = core.costs
    end = _issue(core, "MSCATTER", coalesce.name, table, region, write, [indices], [src], [], costs.scalar_op * units,
                 costs.move("UB", "GM", moved), s.shape, src.dtype, work)
    return new_event(("MSCATTER", core, end))


def _conflict_warning(core, offs, kept, s, at, coalesce) -> None:
    """A run warning at an A5 MSCATTER with ScatterConflict::Default whose writes to one element
    differ: the device keeps one of them, which one the warp scheduler decides (ptopipe keeps
    the last, as Conflict::Last)."""
    o, v = offs[kept], np.ascontiguousarray(s[kept]).view(np.dtype(f"u{s.dtype.itemsize}"))
    order = np.argsort(o, kind="stable")
    o, v = o[order], v[order]
    same = o[1:] == o[:-1]
    differ = same & (v[1:] != v[:-1])
    if not differ.any():
        return
    unit = "row" if coalesce is Coalesce.Row else "element"
    core.cluster.warn_once(
        f"MSCATTER with ScatterConflict::Default writes different values to one table {unit}: on A5 the device keeps "
        "whichever write its warp scheduler lets last; ptopipe keeps the last in row-major order (Conflict::Last) - "
        "pass conflict=ScatterConflict.Last for that order on the device too, or give each write its own index",
        core.where())


# -- GM -> L1: into an NZ Mat tile, the indices in GM ---------------------------------------------
def _gather_to_l1(core, dst: Tile, table, indices, scratch, coalesce, oob) -> Event:
    """MGATHER into a Cube Mat tile (pto-isa's MGatherCheckGm2L1, MGatherGm2L1RowImpl /
    MGatherGm2L1ElemImpl): rows by one DMA each, or elements staged in ``scratch`` in the tile's
    NZ order (zeros where nothing is gathered) and moved as a whole; A2A3 and A5 alike (the
    Cube's scalar unit, then MTE2)."""
    platform = core.cluster.platform.id
    d = arr(dst, core, "MGATHER dst")
    if _OK is not None and dst.dtype not in _OK[platform]:
        bad = _GATHER.dtype_error(dst.dtype, platform)
        raise _err(core, f"{bad[0]} ({dst.describe()})", bad[1])
    c0 = _C0_BYTES // dst.item
    if dst.layout is not _NZ or dst.cols % c0 or dst.rows % _FRACTAL_ROWS:
        raise _err(core, f"MGATHER into {dst.describe()}: pto-isa's GM -> L1 gather fills an NZ Mat tile "
                         f"(BLayout::ColMajor + SLayout::RowMajor) of rows a multiple of {_FRACTAL_ROWS} and columns "
                         f"a multiple of {c0} (\"GM->L1 destination must be NZ\")",
                   f"declare dst layout=TileLayout.NZ with rows % {_FRACTAL_ROWS} == 0 and cols % {c0} == 0")
    if scratch is None and coalesce is Coalesce.Elem:
        raise _err(core, "MGATHER Coalesce::Elem into a Mat tile takes a GM scratch tensor after the indices "
                         "(MGATHER(dst, table, idx, scratch)): pto-isa stages the elements there in the tile's NZ "
                         "order; its 3-operand form of a Mat tile gathers rows whatever its Coalesce",
                   f"pass a GM scratch tensor of at least {dst.rows * dst.cols} {dst.dtype.name} elements")
    if scratch is not None and coalesce is Coalesce.Row:
        raise _err(core, "MGATHER with a scratch tensor gathers elements (pto-isa's NPU code runs its element path "
                         "whatever the Coalesce)", "pass coalesce=Coalesce.Elem, or leave the scratch out for a row "
                                                   "gather")
    coalesce = Coalesce.Elem if scratch is not None else Coalesce.Row
    idx = _tensor(core, "MGATHER", indices, "indices")
    _index_dtype(core, "MGATHER", idx.dtype, idx.describe())
    rows, cols = d.shape
    cap, pitch = _table(core, "MGATHER", table, dst, coalesce, platform, cols)
    if coalesce is Coalesce.Row:
        # pto-isa reads ``idxPtr[r]``: the first ``rows`` elements at the pointer, whatever its shape
        where = [(idx.ptr.addr, idx.ptr.addr + rows * 4)]
        stride = None
    else:
        stride = idx.stride[3]                  # ``idxPtr[r * GetStride(DIM_3) + c]``
        where = [(idx.ptr.addr + r * stride * 4, idx.ptr.addr + (r * stride + cols) * 4) for r in range(rows)]
    if not rows or not cols:
        raise _err(core, f"MGATHER into {dst.describe()}: an empty valid region; pto-isa's GM -> L1 gather moves "
                         "the valid rows / columns", "give dst a valid region")
    _in_bounds(core, "MGATHER", idx, where, lambda k: f"its indices (row {k})")
    core.cluster.sync()
    flat_i, i0 = _flat(core.cluster.gm, idx.ptr.addr, idx.dtype)
    if coalesce is Coalesce.Row:
        raw = flat_i[i0:i0 + rows].astype(np.uint32)
        at = _at_rows(idx, raw)
    else:
        raw = flat_i[i0 + np.arange(rows)[:, None] * stride + np.arange(cols)].astype(np.uint32)
        at = _at_elems(idx, raw)
    chk, ps = core.cluster.checker, core.psync
    idx_region = region_of_ranges(where)
    if ps is not None and ps.gm_watch:
        ps.gm_note(idx, False, "MGATHER", idx_region)
    # the Cube's scalar unit reads the indices
    core.issue(PipeUnit.S, core.costs.scalar_op * (rows if coalesce is Coalesce.Row else rows * cols), (), (),
               "MGATHER", None)
    if chk is not None:
        chk.gm_indexed(core, idx, idx_region, False, "MGATHER", None, PipeUnit.S)
    if coalesce is Coalesce.Row:
        if oob is GatherOOB.Zero:               # pto_create_cbuf_matrix: the whole tile first
            core.pending.append((_zero, dst._full))
        return _gather(core, dst, d, table, raw, cap, pitch, coalesce, oob, [], at, "L1", space="L1", walked=True)
    return _gather_via_scratch(core, dst, table, scratch, raw, cap, oob, at)


def _zero(a: np.ndarray) -> None:
    a[...] = 0


def _gather_via_scratch(core, dst: Tile, table, scratch, raw, cap, oob, at) -> Event:
    """The GM -> L1 element gather: the scalar unit fills ``scratch`` (the whole tile, NZ order:
    zeros, then each gathered element), MTE2 moves it into the Mat tile."""
    scratch = _tensor(core, "MGATHER", scratch, "scratch")
    if scratch.dtype != dst.dtype:
        raise _err(core, f"MGATHER: the scratch tensor {scratch.describe()} is {scratch.dtype.name} but "
                         f"{dst.describe()} is {dst.dtype.name} (\"GM->L1 scratch must be a GM GlobalTensor with "
                         "element type matching the destination\")", "declare the scratch with the tile's element type")
    n = dst.rows * dst.cols
    item = dst.item
    c0 = _C0_BYTES // item
    rows, cols = raw.shape
    if cap == 0:
        raise _err(core, f"MGATHER: the table {table.describe()} has no elements", "give the table its shape")
    if oob is GatherOOB.Undefined:
        _undefined_index(core, "MGATHER", raw, cap, Coalesce.Elem, at)
    safe, kept = remap_indices(raw, cap, oob.name)
    sbase = scratch.ptr.addr
    _in_bounds(core, "MGATHER", scratch, [(sbase, sbase + n * item)], lambda k: "its scratch")
    tbase = table.ptr.addr
    ranges = _ranges(tbase, item, safe[kept], 1)
    _in_bounds(core, "MGATHER", table, ranges, _range_at(kept, at))
    gm = core.cluster.gm
    flat_t, t0 = _flat(gm, tbase, table.dtype)
    flat_s, s0 = _flat(gm, sbase, scratch.dtype)
    r = np.arange(rows)[:, None]
    c = np.arange(cols)[None, :]
    nz = s0 + (c // c0) * (dst.rows * c0) + r * c0 + c % c0     # the scratch element of tile element (r, c)
    stage = (_stage_nz, flat_s, s0, n, flat_t, t0 + safe, kept, nz)
    load = (_load_nz, flat_s, s0, dst._full, c0)
    chk, ps = core.cluster.checker, core.psync
    costs = core.costs
    reads = region_of_ranges(ranges)
    scratch_region = (sbase, sbase + n * item, None)
    # the scalar unit gathers into the scratch (reading the table, writing the scratch) ...
    if reads is not None and ps is not None and ps.gm_watch:
        ps.gm_note(table, False, "MGATHER", reads)
    _, end = core.issue(PipeUnit.S, costs.scalar_op * rows * cols, (), (), "MGATHER", None)
    if reads is not None and chk is not None:
        chk.gm_indexed(core, table, reads, False, "MGATHER", end, PipeUnit.S)
    if ps is not None and ps.gm_watch:
        ps.gm_note(scratch, True, "MGATHER", scratch_region)
    _, end = core.issue(PipeUnit.S, costs.scalar_op * n, (), (), "MGATHER", None)
    if chk is not None:
        queue_checked_write(core, chk.gm_indexed(core, scratch, scratch_region, True, "MGATHER", end, PipeUnit.S,
                                                 (stage,)), stage)
    else:
        core.pending.append(stage)
    # ... flushes it (dcci, dsb) and MTE2 moves it into L1 after an S -> MTE2 event
    ps = psync(core)
    ps.order(PipeUnit.S, PipeUnit.MTE2)
    if ps.gm_watch:
        ps.gm_note(scratch, False, "MGATHER", scratch_region)
    args = TileArgs((dst.rows, dst.cols), dst.dtype) if core.trace is not None else None
    _, end = core.issue(PipeUnit.MTE2, costs.move("GM", "L1", n * item), (), (dst,), "MGATHER", args)
    if chk is not None:
        chk.gm_indexed(core, scratch, scratch_region, False, "MGATHER", end, PipeUnit.MTE2)
    core.pending.append(load)
    return new_event(("MGATHER", core, end))


def _stage_nz(flat_s, s0: int, n: int, flat_t, offs, kept, nz) -> None:
    """The scalar fill of the GM scratch: zeros, then each kept element of the table at its
    tile element's NZ place."""
    flat_s[s0:s0 + n] = 0
    flat_s[nz[kept]] = flat_t[offs[kept]]


def _load_nz(flat_s, s0: int, full: np.ndarray, c0: int) -> None:
    """The scratch (the tile in NZ order: column blocks of ``c0``, each rows x c0) into the
    tile's logical matrix."""
    rows, cols = full.shape
    full[...] = flat_s[s0:s0 + rows * cols].reshape(cols // c0, rows, c0).transpose(1, 0, 2).reshape(rows, cols)


__all__ = ["MGATHER", "MSCATTER"]
