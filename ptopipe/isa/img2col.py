"""TIMG2COL and its register writes - SETFMATRIX, SET_IMG2COL_RPT, SET_IMG2COL_PADDING - as
pto-isa's NPU code runs them (docs/isa/TIMG2COL.md ...; include/pto/npu/a2a3|a5/TImg2col.hpp,
SetFmatrix.hpp, SetImg2colRpt.hpp, SetImg2colPadding.hpp): the one place their operand rules,
the Cube's img2col registers and their reads are made.

``TIMG2COL(dst, src, pos_m=0, pos_k=0, *events, fmatrix_mode=SetFmatrixMode.FMATRIX_A_MANUAL)``
moves the im2col block at (pos_m, pos_k) of the NC1HWC0 :class:`~ptopipe.isa.convtile.ConvTile`
``src`` (L1) into the Left tile ``dst`` on MTE1 (the load3d instruction): row ``m`` is output
position ``(m // outW, m % outW)``, column ``k`` is ``(c1, kh, kw, c0)`` with c0 fastest, the
pad value where the window lies in the padding (:func:`~ptopipe.arch.catalogue.img2col`).  The
device takes the feature map's size and pads from the FMATRIX register and the pad value from
the padding register; stride, dilation, filter and channel size from ``src``.  In the MANUAL
modes (pto-isa's default) those registers hold what ``SETFMATRIX(src)`` /
``SET_IMG2COL_PADDING(src)`` wrote before on this Cube core (with the same bank: A, or B for the
``FMATRIX_B_*`` modes; A2A3 has one padding and one repeat register), and a TIMG2COL whose
register no instruction wrote is a KernelError - the device reads whatever it holds.  In the
AUTO modes the TIMG2COL writes them itself from ``src`` first (on the scalar unit), and the
SET_* instructions write nothing.  pto-isa's CPU simulator reads every field from ``src`` (and
the map's size from its shape) whatever the mode: the two agree where the registers hold
``src``'s fields.

The device writes ``validCol`` rounded up to whole C0 blocks of each row (``stepK``).  What
pto-isa's sources leave open is refused at the line rather than guessed (the catalogue's entry
says so): rows past one image's ``outH * outW`` positions (the simulator walks into the next
image, or pads), columns past the channels ``channelSize`` gives, a ``posK`` that is not a
whole C0 block, more than one repeat (the repeat register's ``repeatTime`` other than 1, A5's
``dstMposition`` other than 0), ``transpose``.
"""
from __future__ import annotations

import numpy as np

from ..arch import PipeUnit
from ..arch.catalogue import IMG2COL_BANKED, OPS, Img2colGeometry, img2col
from ..arch.vocab import LEFT_LAYOUT, SetFmatrixMode
from ..sim.core import CoreKind
from ..sim.location import is_cpp, is_pto
from ..sim.trace import TileArgs
from .context import current_core
from .convtile import ConvTile
from .events import Event, new_event
from .ops import _err, _sync, arr
from .tile import Tile, TileType

_OP = OPS["TIMG2COL"]
_KEY = "img2col"                    # core.isa's entry: the Cube's img2col registers
_C0_BYTES = 32
#: pto-isa's field widths: TImg2col's uint8_t stride / dilation, its filter's 8 bits and a high
#: bit each, the FMATRIX register's 16-bit fmap sizes
_MAX = {"stride": 255, "dilation": 255, "filter": 511, "fmap": 0xFFFF}


def _begin(name: str, events, mode):
    """The core of a register instruction or TIMG2COL after the checks every one makes: the
    Cube's (the img2col registers are its), a SetFmatrixMode, wait events waited for."""
    core = current_core()
    core.unrecorded(name)                       # a change of state no recorded call makes
    if core.kind is not CoreKind.AIC:
        raise _err(core, f"{name} on {core.name}: the img2col registers and load3d are the Cube's",
                   f"call {name} in the Cube (AIC) kernel")
    try:
        mode = SetFmatrixMode(mode)
    except ValueError:
        raise _err(core, f"{name}: fmatrix_mode={mode!r} is not a SetFmatrixMode",
                   "pass SetFmatrixMode.FMATRIX_A_MANUAL (pto-isa's default), _B_MANUAL, _A_AUTO or _B_AUTO") from None
    _sync(events)
    return core, mode


def _conv(core, name: str, src) -> ConvTile:
    if src.__class__ is not ConvTile:
        where = core.where()
        if is_pto(where):
            fix = ("PTO-AS has no ConvTile and ptoas 0.27 no img2col op: write the convolution in C++ (pto-isa's "
                   "ConvTile) or with the Python ISA (ptopipe.isa.ConvTile)")
        elif is_cpp(where):
            fix = ("declare the feature map as a ConvTile (ConvTile<TileType::Mat, T, Size, Layout::NC1HWC0, "
                   "ConvTileShape<N, C1, H, W, C0>>)")
        else:
            fix = "declare the feature map as ConvTile(TileType.Mat, dtype, (N, C1, H, W, C0))"
        raise _err(core, f"{name} takes a ConvTile (the NC1HWC0 feature map and its img2col fields), got "
                         f"{src.describe() if isinstance(src, Tile) else type(src).__name__}", fix)
    return src


def _reg(core, name: str, mode: SetFmatrixMode) -> tuple:
    """The key of register ``name`` (FMATRIX, PADDING, RPT) the mode's bank selects on this platform."""
    banked = name in IMG2COL_BANKED[core.cluster.platform.id]
    return name, mode.bank if banked else "A"


def _write(core, src: ConvTile, mode: SetFmatrixMode, which) -> None:
    """Write registers ``which`` from ``src``'s fields, as pto-isa's SET_* / TIMG2COL's auto path."""
    regs = core.isa.setdefault(_KEY, {})
    if "FMATRIX" in which:
        regs[_reg(core, "FMATRIX", mode)] = (src.fmap_h & 0xFFFF, src.fmap_w & 0xFFFF,
                                             tuple(p & 0xFF for p in src.GetPadListArray()))
    if "RPT" in which:
        regs[_reg(core, "RPT", mode)] = (src.repeat_time & 0xFF, src.dst_mposition & 0xFFFF)
    if "PADDING" in which:
        regs[_reg(core, "PADDING", mode)] = src.pad_bits()


def _set(name: str, which: str, src, events, fmatrix_mode) -> Event:
    core, mode = _begin(name, events, fmatrix_mode)
    src = _conv(core, name, src)
    if mode.auto:               # pto-isa's SET_* write nothing in the AUTO modes (TIMG2COL does)
        _, end = core.issue(PipeUnit.S, 0, (), (), name)
        return new_event((name, core, end))
    if which == "FMATRIX" and not (0 < src.fmap_h <= _MAX["fmap"] and 0 < src.fmap_w <= _MAX["fmap"]):
        raise _err(core, f"SETFMATRIX of {src.describe()} with fmap {src.fmap_h} x {src.fmap_w}: the FMATRIX register "
                         "takes the feature map's size, 1..65535 each (pto-isa's CPU simulator: \"SETFMATRIX requires "
                         "non-zero fmap size\")", "SetFmapH(H) and SetFmapW(W) on the ConvTile first")
    _write(core, src, mode, (which,))
    _, end = core.issue(PipeUnit.S, core.costs.scalar_op, (), (), name)
    return new_event((name, core, end))


def SETFMATRIX(src: ConvTile, *events, fmatrix_mode=SetFmatrixMode.FMATRIX_A_MANUAL) -> Event:
    """Write ``src``'s fmapH, fmapW and pads into the FMATRIX register of the mode's bank (the
    MANUAL modes; nothing in the AUTO ones)."""
    return _set("SETFMATRIX", "FMATRIX", src, events, fmatrix_mode)


def SET_IMG2COL_RPT(src: ConvTile, *events, fmatrix_mode=SetFmatrixMode.FMATRIX_A_MANUAL) -> Event:
    """Write ``src``'s repeat fields into the img2col repeat register (the MANUAL modes)."""
    return _set("SET_IMG2COL_RPT", "RPT", src, events, fmatrix_mode)


def SET_IMG2COL_PADDING(src: ConvTile, *events, fmatrix_mode=SetFmatrixMode.FMATRIX_A_MANUAL) -> Event:
    """Write ``src``'s pad value into the img2col padding register (the MANUAL modes)."""
    return _set("SET_IMG2COL_PADDING", "PADDING", src, events, fmatrix_mode)


def _unset(core, mode: SetFmatrixMode, reg: str, writer: str) -> None:
    bank = _reg(core, reg, mode)[1]
    raise _err(core, f"TIMG2COL<{mode.name}> reads the {reg} register (bank {bank}), which no {writer}<"
                     f"{'FMATRIX_B_MANUAL' if bank == 'B' else 'FMATRIX_A_MANUAL'}> wrote on {core.name}: the device "
                     "reads whatever it holds",
               f"call {writer}(src) with the same SetFmatrixMode before the TIMG2COL, or use an AUTO mode "
               "(SetFmatrixMode::FMATRIX_A_AUTO: the TIMG2COL writes the registers from its ConvTile)")


def _geometry(core, src: ConvTile, fm: tuple) -> Img2colGeometry:
    """The geometry of a TIMG2COL of ``src`` with FMATRIX register ``fm``, its fields checked."""
    for what, (h, w) in (("stride", (src.stride_h, src.stride_w)), ("dilation", (src.dilation_h, src.dilation_w)),
                         ("filter", (src.filter_h, src.filter_w))):
        if not (0 < h <= _MAX[what] and 0 < w <= _MAX[what]):
            raise _err(core, f"TIMG2COL of {src.describe()} with {what} {h} x {w}: the load3d instruction takes "
                             f"a {what} of 1..{_MAX[what]} each", f"Set{what.capitalize()}H / W on the ConvTile")
    fmap_h, fmap_w, pads = fm
    if not (fmap_h and fmap_w):
        raise _err(core, f"TIMG2COL of {src.describe()} with an FMATRIX register of fmap {fmap_h} x {fmap_w}",
                   "SetFmapH(H) and SetFmapW(W) on the ConvTile before the FMATRIX register is written")
    g = Img2colGeometry(fmap_h, fmap_w, pads, (src.stride_h, src.stride_w), (src.dilation_h, src.dilation_w),
                        (src.filter_h, src.filter_w), _C0_BYTES // src.dtype.itemsize)
    if g.out_h < 1 or g.out_w < 1:
        raise _err(core, f"TIMG2COL of {src.describe()}: a {src.filter_h} x {src.filter_w} filter (dilation "
                         f"{src.dilation_h} x {src.dilation_w}) does not fit the padded {fmap_h} x {fmap_w} map "
                         f"(pads left, right, top, bottom {', '.join(map(str, pads))}): no output position",
                   "check the filter, dilation and pads against the map's size")
    return g


def TIMG2COL(dst: Tile, src: ConvTile, pos_m: int = 0, pos_k: int = 0, *events,
             fmatrix_mode=SetFmatrixMode.FMATRIX_A_MANUAL) -> Event:
    """The im2col block at (``pos_m``, ``pos_k``) of ``src`` into the Left tile ``dst`` (see the
    module docstring)."""
    core, mode = _begin("TIMG2COL", events, fmatrix_mode)
    src = _conv(core, "TIMG2COL", src)
    arr(src.tile, core, "TIMG2COL source")
    arr(dst, core, "TIMG2COL destination")
    platform = core.cluster.platform
    if dst.loc is not TileType.Left:
        raise _err(core, f"TIMG2COL into {dst.describe()}: pto-isa's TIMG2COL writes a Left tile (\"Destination "
                         "TileType only support Left\")", "give it the Left (L0A) tile the matmul reads")
    if dst.layout is not LEFT_LAYOUT[platform.name]:
        want = LEFT_LAYOUT[platform.name]
        raise _err(core, f"TIMG2COL into {dst.describe()}: on {platform.name} pto-isa's TIMG2COL writes a "
                         f"{want.name} Left tile (BLayout {want.blayout.name}, SLayout {want.slayout.name})",
                   "declare it " + ("TileLeft<T, Rows, Cols> (the platform's Left layout)"
                                    if is_cpp(core.where()) else f"with layout=TileLayout.{want.name}"))
    if dst.dtype != src.dtype:
        raise _err(core, f"TIMG2COL: {src.describe()} is {src.dtype.name} but {dst.describe()} is {dst.dtype.name} "
                         "(\"Destination and Source tile data types must be the same\")",
                   "give the Left tile the ConvTile's element type")
    bad = _OP.dtype_error(dst.dtype, platform.id)
    if bad is not None:
        other = "" if not _OP.takes(dst.dtype) else " (the other platform's TIMG2COL takes it)"
        raise _err(core, f"{bad[0]} ({dst.describe()}){other}",
                   "give the feature map (its GM tensor, the ConvTile, the Left tile) one of these element types")
    for what, v in (("posM", pos_m), ("posK", pos_k)):
        if not (isinstance(v, (int, np.integer)) and 0 <= v <= 0xFFFF):
            raise _err(core, f"TIMG2COL {what} {v!r} is not a uint16_t position", f"give {what} as 0..65535")
    pos_m, pos_k = int(pos_m), int(pos_k)
    if src.transpose:
        raise _err(core, f"TIMG2COL of {src.describe()} with transpose set: what the load3d's transpose writes is not "
                         "determined by pto-isa's sources (its CPU simulator ignores it), so ptopipe does not guess",
                   "SetTranspose(false), and transpose the result otherwise")
    cost = core.costs.scalar_op
    if mode.auto:                   # pto-isa's TIMG2COL_IMPL: the registers from src first
        _write(core, src, mode, ("FMATRIX", "RPT", "PADDING"))
        core.issue(PipeUnit.S, 3 * cost, (), (), "TIMG2COL")
    regs = core.isa.get(_KEY, {})
    fm = regs.get(_reg(core, "FMATRIX", mode))
    if fm is None:
        _unset(core, mode, "FMATRIX", "SETFMATRIX")
    pad_bits = regs.get(_reg(core, "PADDING", mode))
    if pad_bits is None:
        _unset(core, mode, "PADDING", "SET_IMG2COL_PADDING")
    rpt = regs.get(_reg(core, "RPT", mode))     # never written: one repeat (pto-isa's own kernels so)
    if rpt is not None and (rpt[0] != 1 or rpt[1] != 0):
        raise _err(core, f"TIMG2COL with the repeat register's repeatTime {rpt[0]}, dstMposition {rpt[1]}: ptopipe runs "
                         "one repeat from the destination's first row - what further repeats write is not determined "
                         "by pto-isa's sources (its CPU simulator ignores them)",
                   "SetRepeatTime(1) / SetDstMposition(0) and one TIMG2COL per block (posM, posK)")
    g = _geometry(core, src, fm)
    c0 = g.c0
    rows, vc = dst.valid_rows, dst.valid_cols
    step_k = -(-vc // c0) * c0              # the device's stepK: whole C0 blocks of each row
    if pos_k % c0:
        raise _err(core, f"TIMG2COL posK {pos_k} is not a whole C0 block ({c0} {src.dtype.name} elements): where the "
                         "load3d starts within a block is not determined by pto-isa's sources",
                   f"give posK as a multiple of {c0}")
    positions = g.out_h * g.out_w
    if pos_m + rows > positions:
        raise _err(core, f"TIMG2COL rows {pos_m}..{pos_m + rows - 1} of {src.describe()}: the map has {positions} output "
                         f"positions ({g.out_h} x {g.out_w}) - rows past them are not determined by pto-isa's sources "
                         "(its CPU simulator goes on into the next image, or pads), so ptopipe does not guess",
                   f"give dst {max(0, positions - pos_m)} valid rows from posM {pos_m} (SetValidRow), or a smaller posM")
    ch = src.channel_size
    if ch <= 0 or ch % c0:
        raise _err(core, f"TIMG2COL of {src.describe()} with channelSize {ch}: the load3d reads channelSize channels, "
                         f"whole C0 blocks of {c0}", f"SetChannelSize(C1 * {c0}) on the ConvTile")
    k_all = ch // c0 * g.k_per_c1
    if pos_k + step_k > k_all:
        raise _err(core, f"TIMG2COL columns {pos_k}..{pos_k + step_k - 1} (posK {pos_k}, {vc} valid columns in whole C0 "
                         f"blocks) of {src.describe()}: its {ch} channels and {g.filt[0]} x {g.filt[1]} filter make "
                         f"{k_all} columns - columns past them are not determined by pto-isa's sources",
                   f"keep posK + the Left tile's valid columns within {k_all}")
    planes = (pos_k + step_k - 1) // g.k_per_c1 + 1 if step_k else 0
    plane = g.fmap_h * g.fmap_w * c0
    have = src.tile.rows * src.tile.cols
    if planes * plane > have:
        raise _err(core, f"TIMG2COL reads {planes} channel blocks of {g.fmap_h} x {g.fmap_w} x {c0} from {src.describe()} "
                         f"({planes * plane} elements; the FMATRIX register's map size, the ConvTile holds {have})",
                   "write the map's size (SetFmapH / SetFmapW, then SETFMATRIX) as the ConvTile holds it")
    if rows and step_k:
        flat = src.tile._full.view()
        flat.shape = (-1,)                  # (a view: the work below reads the memory when applied)
        fmap = flat[:planes * plane].reshape(planes, g.fmap_h, g.fmap_w, c0)
        item = src.dtype.itemsize
        pad = np.array(pad_bits & ((1 << 8 * item) - 1), f"u{item}").view(dst.dtype)[()]
        core.pending.append((img2col, fmap, g, pos_m, pos_k, pad, dst._full[:rows, :step_k]))
    move = core.costs.move(src.tile.sname, dst.sname, rows * step_k * dst.item)
    _, end = core.issue(PipeUnit.MTE1, move, (src.tile,), (dst,), "TIMG2COL",
                        TileArgs((rows, step_k), dst.dtype) if core.trace is not None else None)
    return new_event(("TIMG2COL", core, end))


__all__ = ["SETFMATRIX", "SET_IMG2COL_PADDING", "SET_IMG2COL_RPT", "TIMG2COL"]
