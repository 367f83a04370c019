"""TQUANT's MX forms on A5 (docs/isa/TQUANT.md, TQUANT_DN.md; include/pto/npu/a5/TQuant.hpp,
pto-isa's CPU simulator cpu/TQuant.hpp): the one place their operand rules are made.

``TQUANT(dst, src, exp, max, scaling, *events, mx_alg=MxQuantAlg.OcpMxFp8E4M3, grp_axis=1,
interleave=False)`` - pto-isa's ``TQUANT<grp_axis, mx_alg[, interleave]>(dst, src, &exp, &max,
&scaling)``; its older spelling ``TQUANT<QuantType::MXFP8[, QuantScaleAlg]>`` is
``quant_type=QuantType.MXFP8[, scale_alg=...]`` (ND) - quantises the float32 / float16 /
bfloat16 Vec tile ``src`` to MXFP8: per group of 32 elements along a row (ND, ``grp_axis`` 1) or
a column (DN, ``grp_axis`` 0) an e8m0 exponent from the group's largest magnitude (OCP or NV,
:func:`~ptopipe.arch.catalogue.mx_exponents`) and the elements scaled by it to e4m3, written as
bytes into ``dst`` (int8, as pto-isa's kernels declare it, or float8_e4m3fn) of src's valid
shape; the exponents into the uint8 tile ``exp`` - ND rows x cols/32 (a one-row ``exp`` takes
them flat, r * cols/32 + g), DN rows/32 x cols, DN with ``interleave`` rows/64 x 2 * cols (the
exponents of row groups 2p and 2p + 1 side by side); ``max`` and ``scaling`` are the device's
scratch, written here as pto-isa's CPU simulator writes them (the groups' maxima and scalings,
flat).  On the vector pipe, costed as TQUANT.

Refused at the line, as pto-isa's sources refuse them or leave them open: A2A3 (pto-isa declares
the MX forms for A5 only); MXFP4 (its ``float4_e2m1x2_t`` packs two values a byte, a type ptopipe
does not model); HiFloat4 (``MxQuantAlg::Hif4``: A6 only); a group that is not whole (valid
columns, ND, or valid rows, DN, a multiple of 32 - the device's partial-group masking is not
modelled); interleave without 64-aligned rows; the exponents' ZZ store (``VecStoreMode::NZ``).
pto-isa's CPU simulator differs where ptopipe follows the device: an OCP element too small for
e4m3 on the negative side is 0x00 there (the device keeps the sign: 0x80), and it quantises the
static columns (ND) / rows (DN) rather than the valid ones.
"""
from __future__ import annotations

import numpy as np

from ..arch import dtypes as dt
from ..arch.catalogue import MX_GROUP, MX_QUANT_SRC, mx_quant_fp8
from ..arch.vocab import BLayout, MxQuantAlg, PlatformID, QuantScaleAlg, QuantType
from .context import current_core
from .events import Event
from .ops import _err, _sync
from .tile import Tile
from .vector import _issue, _tiles_then, _vec

_DST = (dt.int8, np.dtype(dt.as_dtype("fp8_e4m3")))


def _mode(core, quant_type, scale_alg, grp_axis, mx_alg, interleave) -> tuple:
    """(quant type, NV?, group axis, interleave) of the call's mode arguments."""
    if mx_alg is not None:
        try:
            alg = MxQuantAlg(mx_alg)
        except ValueError:
            raise _err(core, f"TQUANT: mx_alg={mx_alg!r} is not an MxQuantAlg",
                       "pass MxQuantAlg.OcpMxFp8E4M3, NvMxFp8E4M3, OcpMxFp4E2M1 or NvMxFp4E2M1") from None
        if alg is MxQuantAlg.Hif4:
            raise _err(core, "TQUANT<grp_axis, MxQuantAlg::Hif4>: HiFloat4 quantisation is pto-isa's A6 (dav-920r1) "
                             "only (include/pto/npu/a6/TQuant.hpp); ptopipe simulates A2A3 and A5",
                       "quantise to MXFP8 (MxQuantAlg::OcpMxFp8E4M3 / NvMxFp8E4M3) on A5")
        qt, sa = alg.quant_type, alg.scale_alg
    else:
        qt = QuantType(QuantType.MXFP8 if quant_type is None else quant_type)
        sa = QuantScaleAlg(QuantScaleAlg.OCP if scale_alg is None else scale_alg)
    axis = 1 if grp_axis is None else grp_axis
    if axis not in (0, 1):
        raise _err(core, f"TQUANT: grp_axis={grp_axis!r}: pto-isa groups along the rows (0, DN) or the columns "
                         "(1, ND)", "pass grp_axis 0 or 1")
    if interleave and axis != 0:
        raise _err(core, "TQUANT: the exponent interleave is DN's (grp_axis 0) only (pto-isa: \"exponent interleave "
                         "is only supported for DN\")", "leave interleave out, or group along the rows")
    if core.cluster.platform.id != PlatformID.PLATFORM_A5:
        raise _err(core, f"TQUANT's MX forms are pto-isa's A5 ones (pto_instr.hpp declares them for A5 only), not "
                         f"{core.cluster.platform.name}'s", "run the kernel on A5, or quantise with the INT8 forms")
    if qt is QuantType.MXFP4_E2M1:
        raise _err(core, "TQUANT MXFP4_E2M1 writes pto-isa's float4_e2m1x2_t (two 4-bit values a byte), an element "
                         "type ptopipe does not model", "quantise to MXFP8 (MxQuantAlg::OcpMxFp8E4M3 / NvMxFp8E4M3)")
    if qt is not QuantType.MXFP8:
        raise _err(core, f"TQUANT with the exponent / max / scaling tiles is an MX form; {qt.name} is not",
                   "pass QuantType.MXFP8, or call the INT8 form TQUANT(dst, src, scale[, offset])")
    return sa is QuantScaleAlg.NV, axis, bool(interleave)


def _flat(core, t: Tile, n: int, role: str) -> np.ndarray:
    """Tile ``t``'s storage as a flat view of its first ``n`` elements."""
    v = t._full.view()
    v.shape = (-1,)
    if v.size < n:
        raise _err(core, f"TQUANT: the {role} tile {t.describe()} holds {v.size} elements; the quantisation writes "
                         f"one per group, {n}", f"give {role} {n} elements or more")
    return v[:n]


def mx_tquant(dst: Tile, src: Tile, exp: Tile, rest: tuple, quant_type, scale_alg, grp_axis, mx_alg,
              interleave) -> Event:
    """TQUANT's MX forms (see the module docstring); ``rest``: max, scaling, then wait events."""
    core = current_core()
    tiles, events = _tiles_then(rest)
    _sync(events)
    nv, axis, inter = _mode(core, quant_type, scale_alg, grp_axis, mx_alg, interleave)
    if len(tiles) != 2:
        raise _err(core, f"TQUANT's MX form takes (dst, src, exp, max, scaling), got {3 + len(tiles)} tiles",
                   "pass the exponent, max and scaling tiles (pto-isa: &exp, &max, &scaling)")
    mx, scaling = tiles
    d, a, e = _vec(core, "TQUANT", dst, src, exp)
    _vec(core, "TQUANT", mx, scaling)
    if src.dtype not in MX_QUANT_SRC:
        raise _err(core, f"TQUANT MXFP8 quantises float32, float16 or bfloat16, not {src.describe()}",
                   "TCVT the source to one of them first")
    if dst.dtype not in _DST:
        raise _err(core, f"TQUANT MXFP8 writes e4m3 bytes into an int8 (or float8_e4m3fn) tile, not {dst.describe()}",
                   "declare dst int8_t, of src's valid shape")
    if exp.dtype != dt.uint8:
        raise _err(core, f"TQUANT MXFP8 writes its e8m0 exponents into a uint8 tile, not {exp.describe()}",
                   "declare exp uint8_t")
    if src.blayout is not BLayout.RowMajor or dst.blayout is not BLayout.RowMajor:
        raise _err(core, "TQUANT MXFP8 takes RowMajor src and dst (pto-isa: \"Src and Out tiles should have the same "
                         "BFractal layout\")", "declare both BLayout::RowMajor")
    if d.shape != a.shape:
        raise _err(core, f"TQUANT: dst's valid region {d.shape[0]}x{d.shape[1]} is not src's {a.shape[0]}x{a.shape[1]}",
                   "give dst src's valid shape")
    rows, cols = a.shape
    along, n = (cols, "columns (ND)") if axis == 1 else (rows, "rows (DN)")
    if along % MX_GROUP:
        raise _err(core, f"TQUANT MXFP8 of {rows}x{cols} valid elements: its {n} are not whole groups of {MX_GROUP} - "
                         "what the device does with a partial group is not determined by pto-isa's sources",
                   f"give src a valid shape whose {n.split()[0]} are a multiple of {MX_GROUP}")
    groups = (rows, cols // MX_GROUP) if axis == 1 else (rows // MX_GROUP, cols)
    if inter:
        if rows % (2 * MX_GROUP):
            raise _err(core, f"TQUANT DN interleave of {rows} valid rows: pto-isa pairs row groups, 64 rows each "
                             "(\"DN interleave requires 64-aligned valid rows\")", "give src 64-aligned valid rows")
        shape = (groups[0] // 2, 2 * cols)
    else:
        shape = groups
    if axis == 1 and exp.rows == 1:             # a one-row exponent tile: flat (the device's 1-D buffer)
        ev = _flat(core, exp, groups[0] * groups[1], "exp").reshape(groups)
    else:
        if exp.rows < shape[0] or exp.cols < shape[1]:
            raise _err(core, f"TQUANT: the exponent tile {exp.describe()} is smaller than the {shape[0]}x{shape[1]} "
                             "exponents", f"declare exp {shape[0]} x {shape[1]} (or more)")
        ev = exp._full[:shape[0], :shape[1]]
    ng = groups[0] * groups[1]
    m, s = _flat(core, mx, ng, "max"), _flat(core, scaling, ng, "scaling")
    core.pending.append((mx_quant_fp8, a, axis, nv, inter, d, ev, m, s))
    return _issue(core, "TQUANT", [dst, exp, mx, scaling], [src], None, rows, cols, src.item)


__all__: list = []
