"""Debugging and hint instructions: TPRINT (print a tile or a GM tensor), PRINT (a formatted
scalar), TTRAP (stop with
an error, PTO-AS ``pto.trap``) and TPREFETCH (a GM prefetch hint: no data changes).

TPRINT prints what the tile holds when the instruction executes in simulated time: like
pto-isa's it first waits for every pipe of its core (``pipe_barrier(PIPE_ALL)``), then
formats the valid region on the scalar pipe.  Prints of all cores come out in the
simulated-time order of their TPRINTs (ties: AIC, AIV0, AIV1, then issue order), the same
on every run, when the run ends - also when it ends in an error, so the prints leading up
to it are kept.  :func:`prints` gives them as text, and ``RunResult.prints`` too.
"""
from __future__ import annotations

import sys

import numpy as np

from ..arch import PipeUnit
from ..arch.vocab import PlatformID, PrintFormat
from ..errors import KernelError
from ..sim.pipesync import psync
from .context import current_core
from .events import Event, new_event
from .ops import _err, arr
from .tensor import GlobalTensor
from .tile import Tile, TileType


def _format(a: np.ndarray, fmt: PrintFormat) -> str:
    """pto-isa's CPU model's TPRINT text: ``TPRINT RxC`` and one line per row."""
    lines = [f"TPRINT {a.shape[0]}x{a.shape[1]}"]
    if a.dtype.kind in "iub":
        cell = "{:%dd}" % fmt.width
        vals = a.astype(np.int64)
    else:
        cell = "{:%d.%df}" % (fmt.width, fmt.precision)
        vals = a.astype(np.float64)
    lines.extend(" ".join(cell.format(v) for v in row) for row in vals.tolist())
    return "\n".join(lines)


def _record(log: list, key: tuple, a: np.ndarray, fmt: PrintFormat) -> None:
    log.append((key, _format(a, fmt)))


def TPRINT(src, *rest, fmt: PrintFormat = PrintFormat.Width8_Precision4) -> Event:
    """Print ``src`` (a Vec tile, an Acc tile / a Mat tile on A2A3 with a GM ``tmp`` tensor of
    at least its size, or a GlobalTensor) in simulated-time order; ``fmt`` (or a
    PrintFormat after the operands) sets the width and precision."""
    core = current_core()
    if rest and isinstance(rest[-1], PrintFormat):
        fmt, rest = rest[-1], rest[:-1]
    tmp = rest[0] if rest else None
    if src.__class__ is GlobalTensor:
        view = src.matrix(core.cluster.gm)
        where = None
    else:
        view = arr(src, core, "TPRINT source")
        if src.loc is not TileType.Vec:
            if src.loc not in (TileType.Acc, TileType.Mat):
                raise _err(core, f"TPRINT prints Vec, Acc and Mat tiles and GM tensors, not "
                                 f"{src.describe()}")
            if src.loc is TileType.Mat and core.cluster.platform.id is PlatformID.PLATFORM_A5:
                raise _err(core, "TPRINT of a Mat tile: pto-isa prints Mat tiles on A2A3 only",
                           "TMOV / TSTORE the data somewhere printable first")
            if tmp.__class__ is not GlobalTensor or tmp.nbytes < src.nbytes:
                raise _err(core, f"TPRINT of {src.describe()} needs a GM tmp tensor of at least "
                                 f"{src.nbytes} bytes: TPRINT(tile, tmp)",
                           "pass a GlobalTensor of the tile's size as the second operand")
        where = src
    psync(core).barrier(None)             # pto-isa: pipe_barrier(PIPE_ALL) before printing
    log = core.cluster.state.prints
    key = (core.clock, core.index, len(log))
    core.pending.append((_record, log, key, view, PrintFormat(fmt)))
    cost = view.size * core.costs.scalar_op         # a scalar printf per element
    if where is not None:
        _, end = core.issue(PipeUnit.S, cost, (where,), (), "TPRINT", None)
    else:
        end = core.issue_s(PipeUnit.S, cost, "TPRINT")
    # the scalar unit prints (cce::printf of each element) before it issues the next
    # instruction: whatever follows, on any pipe, comes after the reads
    psync(core).drain("TPRINT")
    return new_event(("TPRINT", core, end))


def PRINT(fmt: str, *values) -> Event:
    """A formatted scalar print (PTO-AS ``pto.print ins("fmt", %v)``, the kernel's
    ``printf``): C-style ``fmt`` (``%d``, ``%f``, ``%.3f``, ``%x``, ...) with ``values``, in the
    same simulated-time-ordered stream as TPRINT's."""
    core = current_core()
    try:
        text = fmt % tuple(values) if "%" in fmt else " ".join([fmt, *map(str, values)])
    except (TypeError, ValueError) as e:
        raise _err(core, f"print: format {fmt!r} does not take {values!r} ({e})",
                   "one %-conversion per value, of its kind (%d for integers, %f for floats)") from None
    log = core.cluster.state.prints
    log.append(((core.clock, core.index, len(log)), text.rstrip("\n")))
    end = core.issue_s(PipeUnit.S, core.costs.scalar_op, "PRINT")
    return new_event(("PRINT", core, end))


def prints(cluster) -> list:
    """The texts of a run's TPRINTs, in simulated-time order (applies queued work first)."""
    cluster.sync()
    return [text for _, text in sorted(cluster.state.prints, key=lambda e: e[0])]


def flush_prints(cluster, stream=None) -> None:
    """Write the run's TPRINT texts to ``stream`` (default: stdout), in order, once."""
    st = cluster.state
    if st.prints and not st.prints_flushed:
        st.prints_flushed = True
        out = stream or sys.stdout
        for text in prints(cluster):
            print(text, file=out)


def TTRAP() -> None:
    """Stop the kernel with a KernelError at this line (PTO-AS ``pto.trap``)."""
    core = current_core()
    raise KernelError(f"TTRAP: {core.name} trapped", where=str(core.where()),
                      fix="the kernel reached a trap; remove it or guard it with the condition "
                          "it was meant for")


_PREFETCH_DST = (TileType.Vec, TileType.Mat)


def TPREFETCH(dst: Tile, src: GlobalTensor) -> Event:
    """A hint to bring ``src`` closer before a TLOAD into ``dst``: changes no data; occupies
    MTE2 for the transfer's time.  Takes no wait events (pto-isa's TPREFETCH does not sync)."""
    core = current_core()
    if dst.__class__ is not Tile or src.__class__ is not GlobalTensor:
        raise _err(core, "TPREFETCH(dst, src) takes a tile and a GlobalTensor, got "
                         f"{type(dst).__name__}, {type(src).__name__}")
    arr(dst, core, "TPREFETCH destination")
    if dst.loc not in _PREFETCH_DST:
        raise _err(core, f"TPREFETCH into {dst.describe()}: prefetches go to Vec or Mat tiles",
                   "prefetch for the tile a TLOAD will fill")
    if src.dtype != dst.dtype:
        raise _err(core, f"TPREFETCH: {src.describe()} is {src.dtype.name} but {dst.describe()} is "
                         f"{dst.dtype.name}")
    cost = core.costs.move("GM", dst.sname, min(src.nbytes, dst.nbytes))
    end = core.issue_s(PipeUnit.MTE2, cost, "TPREFETCH")
    return new_event(("TPREFETCH", core, end))


__all__ = ["TPREFETCH", "TPRINT", "TTRAP"]
