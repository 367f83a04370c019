"""The Cube's TF32 matmul mode: pto-isa's ``Tile::SetMadTF32Mode(RoundMode)`` /
``Tile::ResetMadMode()`` (pto_tile.hpp), which set and clear the MAD_MODE bit of the core's
control register on the scalar pipe.  While it is set, a matmul of float32 operands (the
TMATMUL and TGEMV forms) reads each operand rounded to TF32 - 11 mantissa bits on A2A3 (e8m11),
10 on A5 (e8m10), pto-isa's note there - to nearest, ties to even (``CAST_RINT``) or away from
zero (``CAST_ROUND``, the default); it accumulates in float32 as before.  The operand tiles
keep their float32 values.  The mode is the Cube core's: it lasts until ``ResetMadMode()`` or
the end of the run, whichever tile the calls are made through; a Vector core has none (pto-isa
declares the members in the Cube's build only)."""
from __future__ import annotations

import numpy as np

from ..arch import PipeUnit
from ..arch.vocab import RoundMode
from ..errors import KernelError
from ..sim.core import CoreKind
from .context import current_core

#: the mantissa bits a TF32 operand drops from float32's 23, per platform (pto_tile.hpp: "a2/a3
#: : e8m11, a5 : e8m10")
DROPPED_BITS = {"a2a3": 12, "a5": 13}
#: the rounding each mode takes: ties away from zero (True) or to even (False)
TF32_MODES = {RoundMode.CAST_ROUND: True, RoundMode.CAST_RINT: False}
_KEY = "mad_tf32"


def _set(what: str, spec) -> None:
    core = current_core()
    core.unrecorded(what)                       # a change of state no recorded call makes
    if core.kind is not CoreKind.AIC:
        raise KernelError(f"{what} on {core.name}: the TF32 matmul mode is the Cube's (pto-isa declares it "
                          "in the Cube's build only)", where=str(core.where()),
                          fix="call it in the Cube kernel, before the matmuls it is for")
    core.issue(PipeUnit.S, core.costs.scalar_op, (), (), what)
    if spec is None:
        core.isa.pop(_KEY, None)
    else:
        core.isa[_KEY] = spec


def set_tf32(round_mode=RoundMode.CAST_ROUND) -> None:
    """``tile.SetMadTF32Mode(round_mode)``: the core's float32 matmuls read TF32 operands from
    here on (pto-isa asserts the mode is CAST_ROUND or CAST_RINT)."""
    core = current_core()
    try:
        away = TF32_MODES[RoundMode(round_mode)]
    except (KeyError, ValueError):
        raise KernelError(f"SetMadTF32Mode({round_mode!r}): pto-isa rounds to TF32 with RoundMode::CAST_ROUND or "
                          "CAST_RINT only (\"Unsupported RoundMode for TF32.\")", where=str(core.where()),
                          fix="pass RoundMode::CAST_ROUND (ties away from zero) or RoundMode::CAST_RINT (ties to "
                              "even)") from None
    _set("SetMadTF32Mode", (DROPPED_BITS[core.cluster.platform.name], away))


def reset() -> None:
    """``tile.ResetMadMode()``: float32 matmuls read their operands whole again."""
    _set("ResetMadMode", None)


def tf32_spec(core):
    """(mantissa bits dropped, ties away) when the core's matmuls read TF32, else None."""
    return core.isa.get(_KEY)


def to_tf32(src: np.ndarray, dst: np.ndarray, drop: int, away: bool) -> None:
    """``dst`` = float32 ``src`` rounded to ``23 - drop`` mantissa bits (a carry moves into the
    exponent; inf and NaN kept as they are)."""
    u = np.ascontiguousarray(src).view(np.uint32)
    half = np.uint32(1 << (drop - 1))
    r = u + half if away else u + (half - np.uint32(1)) + ((u >> np.uint32(drop)) & np.uint32(1))
    r &= np.uint32(~((1 << drop) - 1) & 0xFFFFFFFF)
    special = (u & np.uint32(0x7F800000)) == np.uint32(0x7F800000)
    dst[...] = np.where(special, u, r).view(np.float32)


def tf32_operands(core, A: np.ndarray, B: np.ndarray, spec) -> tuple:
    """Copies of a matmul's operands that the core's queued work rounds to TF32 (``spec``:
    :func:`tf32_spec`) just before the product reads them - the tiles keep their values."""
    ra, rb = np.empty(A.shape, np.float32), np.empty(B.shape, np.float32)
    core.pending.append((to_tf32, A, ra, *spec))
    core.pending.append((to_tf32, B, rb, *spec))
    return ra, rb
