"""The MX matmuls (A5): TMATMUL_MX and TGEMV_MX, each with pto-isa's three forms -
``(c, a, a_scale, b, b_scale)``, the accumulating ``(c_out, c_in, a, a_scale, b, b_scale)``
and the biased ``(c, a, a_scale, b, b_scale, bias)``.

``a`` (Left, M x K) and ``b`` (Right, K x N) hold fp8 (e4m3 / e5m2) or fp4 (e2m1) values;
``a_scale`` (ScaleLeft, M x K/32) and ``b_scale`` (ScaleRight, K/32 x N) hold e8m0 powers of
two, one per 32 values of K; the result is float32 (Acc).  The dtypes, the group size and the
numpy kernel are the op catalogue's (``MX_INPUTS``, ``MX_SCALE``, ``MX_GROUP``,
:func:`~ptopipe.arch.catalogue.matmul_mx`).  TGET_SCALE_ADDR binds a scale tile where an
operand tile's scales live.  A2A3 has no MX unit: the instructions say so.
"""
from __future__ import annotations

from ..arch import PipeUnit
from ..arch.catalogue import (MX_BASE_K, MX_GROUP, MX_INPUTS, MX_SCALE, MX_SCALE_ADDR_SHIFT, MX_SCALE_OF, OPS,
                              platform_label)
from ..arch.vocab import PlatformID
from ..sim.trace import MatmulArgs
from .context import current_core, named
from .events import Event, new_event
from .ops import _acc_read, _err, _gemv_check, _mm_layouts, _same_shape, _sync, arr
from .tile import TASSIGN, Tile, TileLayout, TileType, spell_tile
from ..errors import with_article

_NAMES = ", ".join(d.name for d in MX_INPUTS)


def _scale(core, op: str, role: str, t: Tile, loc: TileType, rows: int, cols: int) -> None:
    s = arr(t, core, f"{op} {role}")
    if t.loc is not loc or t.dtype != MX_SCALE:
        raise _err(core, f"{op}: {role} is {t.describe()}; pto-isa takes {with_article(loc.value)} tile of {MX_SCALE.name} "
                         f"block scales ({'TileLeftScale<' if loc is TileType.ScaleLeft else 'Tile<TileType::ScaleRight, '}"
                         "float8_e8m0_t, ...>)", f"declare {role} as "
                                  f"{spell_tile(core.where(), loc, f'float8_e8m0, {rows}, {cols}', f'float8_e8m0_t, {rows}, {cols}')}"
                                  " and TMOV it there from a Mat tile")
    if s.shape[0] < rows or s.shape[1] < cols:
        raise _err(core, f"{op}: {role}'s valid region {s.shape[0]}x{s.shape[1]} has no scale for each block "
                         f"of {MX_GROUP}: it needs {rows}x{cols}", f"give {role} a {rows}x{cols} valid region")


def _mx(op: str, gemv: bool):
    kernel = OPS[op].kernel

    def instr(c: Tile, *args) -> Event:
        core = current_core()
        tiles = [x for x in args if isinstance(x, Tile)]
        events = args[len(tiles):]
        _sync(events)
        platform = core.cluster.platform.id
        if platform is not PlatformID.PLATFORM_A5:
            raise _err(core, f"{op} is not implemented on {platform_label(platform)} (pto-isa has it on A5 only)",
                       "run the kernel on A5, or dequantise to f16 / bf16 and use TMATMUL")
        c_in = bias = None
        if len(tiles) == 5 and tiles[0].loc is TileType.Acc:
            c_in, (a, sa, b, sb) = tiles[0], tiles[1:]
        elif len(tiles) == 5:
            a, sa, b, sb, bias = tiles
        elif len(tiles) == 4:
            a, sa, b, sb = tiles
        else:
            raise _err(core, f"{op} takes (c, a, a_scale, b, b_scale[, bias]) or (c_out, c_in, a, a_scale, b, "
                             f"b_scale): {1 + len(tiles)} tiles given")
        A, B, C = arr(a, core, f"{op} a"), arr(b, core, f"{op} b"), arr(c, core, f"{op} c")
        for t, loc, role in ((a, TileType.Left, "a"), (b, TileType.Right, "b"), (c, TileType.Acc, "c")):
            if t.loc is not loc:
                raise _err(core, f"{op}: {role} is {t.describe()}, not {with_article(loc.value)} tile")
        if a.layout is not TileLayout.NZ or b.layout is not TileLayout.ZN or c.layout is not TileLayout.NZ:
            _mm_layouts(core, op, a, b, c)
        m, k, n = A.shape[0], A.shape[1], B.shape[1]
        if B.shape[0] != k or C.shape != (m, n):
            raise _err(core, f"{op}: shapes do not chain: a {m}x{k}, b {B.shape[0]}x{n}, c {C.shape[0]}x{C.shape[1]}",
                       "need a MxK, b KxN, c MxN")
        for t, role in ((a, "a"), (b, "b")):
            if t.dtype not in MX_INPUTS:
                raise _err(core, f"{op}: {role} is {t.dtype.name}; the MX unit takes {_NAMES}",
                           "quantise the operands to fp8 / fp4 with their e8m0 block scales")
        if c.dtype.name != "float32":
            raise _err(core, f"{op}: c is {c.dtype.name}; MX matmuls accumulate in float32",
                       "declare the Acc tile float32")
        if a.cols % MX_BASE_K:
            raise _err(core, f"{op}: a has {a.cols} static columns; pto-isa takes a multiple of {MX_BASE_K}",
                       f"pad K to a multiple of {MX_BASE_K} (zero values add nothing)")
        if gemv:
            _gemv_check(core, op, a, b)
        groups = -(-k // MX_GROUP)
        _scale(core, op, "a_scale", sa, TileType.ScaleLeft, m, groups)
        _scale(core, op, "b_scale", sb, TileType.ScaleRight, groups, n)
        Ci = Bi = None
        if c_in is not None:
            Ci = arr(c_in, core, f"{op} c_in")
            _same_shape(core, op, ("c_out", C), ("c_in", Ci))
        if bias is not None:
            Bi = arr(bias, core, f"{op} bias")
            if bias.loc is not TileType.Bias or bias.dtype.name != "float32" or Bi.shape[1] != n:
                raise _err(core, f"{op}: bias is {bias.describe()}; pto-isa takes a float32 Bias tile of one row "
                                 f"and {n} columns",
                           f"declare the bias {spell_tile(core.where(), TileType.Bias, 'float32, 1, N', 'float, 1, N')}")
        if c_in is not None:
            _acc_read(core, op, c_in)
        core.pending.append((kernel, A, sa._valid[:m, :groups], B, sb._valid[:groups, :n], Ci, Bi, C))
        srcs = tuple(t for t in (a, sa, b, sb, c_in, bias) if t is not None)
        _, end = core.issue(PipeUnit.M, core.costs.matmul(m, k, n, a.item), srcs, (c,), op,
                            MatmulArgs(m, k, n) if core.trace is not None else None)
        return new_event((op, core, end))
    named(instr, op)
    instr.__doc__ = (f"{op}(c, a, a_scale, b, b_scale[, bias]) / {op}(c_out, c_in, a, a_scale, b, b_scale): "
                     f"{OPS[op].doc}")
    return instr


TMATMUL_MX = _mx("TMATMUL_MX", gemv=False)
TGEMV_MX = _mx("TGEMV_MX", gemv=True)


def TGET_SCALE_ADDR(dst: Tile, src: Tile, *events) -> Event:
    """Bind ``dst`` (ScaleLeft / ScaleRight) where the scales of ``src`` (Left / Right) live:
    src's address >> 4 in the scale buffer (A5).  A Scaling ``dst`` is how ptoas spells that
    scale view (its verifier wants ``loc=scaling`` of src's shape; pto-isa's
    TGET_SCALE_ADDR_IMPL asks only for two tiles): it is bound at the same address, in its
    own buffer, as the C++ ptoas writes types it."""
    core = current_core()
    _sync(events)
    platform = core.cluster.platform.id
    if platform is not PlatformID.PLATFORM_A5:
        raise _err(core, f"TGET_SCALE_ADDR is not implemented on {platform_label(platform)} (pto-isa has it on "
                         "A5 only)", "run the kernel on A5")
    arr(src, core, "TGET_SCALE_ADDR source")
    want = MX_SCALE_OF.get(src.loc)
    if want is None or dst.loc not in (want, TileType.Scaling):
        raise _err(core, f"TGET_SCALE_ADDR binds a ScaleLeft tile to a Left tile's scales or a ScaleRight tile "
                         f"to a Right tile's; got dst {dst.describe()}, src {src.describe()}",
                   "pass (ScaleLeft, Left) or (ScaleRight, Right) (a .pto: a loc=scaling dst)")
    TASSIGN(dst, src.addr >> MX_SCALE_ADDR_SHIFT)
    _, end = core.issue(PipeUnit.S, core.costs.scalar_op, (), (), "TGET_SCALE_ADDR", None)
    return new_event(("TGET_SCALE_ADDR", core, end))


__all__ = ["TGEMV_MX", "TGET_SCALE_ADDR", "TMATMUL_MX"]
