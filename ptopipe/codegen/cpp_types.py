"""How ptopipe's IR types and enums are spelled in pto-isa C++: element types, ``Tile<...>``,
``GlobalTensor<...>`` windows, ``TPipe<...>`` template arguments, split axes, pipes and
identifiers.  Pure spelling: every value comes from an IR type or an op attribute (the
layouts from :func:`ptopipe.arch.vocab.default_layout` - a one-column Vec tile DN, a Left
tile ZZ on A2A3 and NZ on A5 -, the pipe parameters from the ``*_initialize_pipe``
attributes the passes wrote); nothing here is re-derived.

pto-isa facts used (read in hw-native-sys/pto-isa, never copied):
``include/pto/cpu/TPush.hpp`` - ``template <uint8_t FlagID, uint8_t DirType, uint32_t SlotSize,
uint32_t SlotNum, uint32_t LocalSlotNum = 2, bool IsNoSplit = false, ...> struct TPipe``;
``tests/cpu/st/testcase/tpushpop/main.cpp`` - ``Pipe pipe((__gm__ void*)gm, c2v_base, v2c_base)``
(``nullptr`` for A5 consumer-local rings), ``TPUSH<Pipe, Tile, TileSplitAxis::X>(pipe, tile)``,
``TPOP<Pipe, Tile, Split>(pipe, tile)``, ``TFREE<Pipe, Split>(pipe)``;
``tests/npu/a2a3/src/st/testcase/tpushpop_subtile/tpushpop_subtile_kernel.cpp`` -
``Tile<TileType::Mat, T, R, C, BLayout::ColMajor, vR, vC, SLayout::RowMajor, 512>``,
``Tile<TileType::Vec, T, R, C, BLayout::RowMajor, vR, vC>``, ``GlobalTensor<T, pto::Shape<1, 1, 1,
R, C>, pto::Stride<1, 1, 1, C, 1>>`` built from a ``__gm__ T*``, ``TASSIGN(tile, addr)``,
``TLOAD(tile, g)`` / ``TSTORE(g, tile)`` / ``TMOV`` / ``TMATMUL(acc, a, b)``, ``TALLOC`` of a
GlobalTensor slot, ``set_flag`` / ``wait_flag(PIPE_A, PIPE_B, EVENT_IDn)``,
``__global__ AICORE void k(__gm__ T* ...)`` and ``__DAV_CUBE__`` / ``__DAV_VEC__`` sections;
``include/pto/common/fifo.hpp`` - the ``*_GM`` directions exist under PTO_NPU_ARCH_A5 only;
``docs/isa/TRESHAPE.md`` / ``include/pto/npu/a2a3/TReshape.hpp`` - TRESHAPE re-views a tile's
bytes in another shape of the same size (as PyPTO's kernels view a DN [R, 1] column as an ND
[1, R] row for the element-wise ops, which pto-isa's NPU headers take RowMajor only);
pto_tile.hpp (as quoted in PTO-ISA docs) - ``TileAcc`` is ``BLayout::ColMajor`` /
``SLayout::RowMajor`` with fractal 1024 (``TileConfig::fractalCSize``), other boxed tiles 512;
``include/pto/common/type.hpp`` - ``Direction::DIR_C2V_GM`` / ``DIR_V2C_GM`` / ``DIR_BOTH_GM``
(A5 GM rings).
"""
from __future__ import annotations

import re

from ..arch.vocab import (PLAIN_DIRECTION, Direction, SLayout, TileLayout, TileSplitAxis, gm_layout,
                          row_major_strides)
from ..errors import CompileError
from ..ir.types import ScalarType, TensorType, TileValueType

#: ptopipe dtype -> C++ element type (pto-isa kernels use ``half`` / ``bfloat16_t``)
CTYPES = {"f16": "half", "f32": "float", "bf16": "bfloat16_t", "i8": "int8_t", "u8": "uint8_t",
          "i16": "int16_t", "i32": "int32_t", "u32": "uint32_t", "i64": "int64_t",
          "index": "int64_t", "bool": "bool"}

#: the fractal block size pto-isa gives a boxed layout: Acc 1024 bytes, every other 512
ACC_FRACTAL, FRACTAL = 1024, 512

CPP_WORDS = frozenset("""alignas alignof and asm auto bool break case catch char class const
constexpr continue default delete do double else enum explicit extern false float for friend
goto if inline int long namespace new noexcept not nullptr operator or private protected public
register return short signed sizeof static struct switch template this throw true try typedef
typename union unsigned using virtual void volatile while xor half bfloat16_t main
int8_t uint8_t int16_t int32_t uint32_t int64_t uint64_t size_t""".split())


def ctype(dtype: str, what: str = "value") -> str:
    try:
        return CTYPES[dtype]
    except KeyError:
        raise CompileError(f"no C++ element type for dtype {dtype!r} of {what}") from None


def ident(name: str) -> str:
    """A C++ identifier for a DSL name (reserved words and pto-isa names get a ``_``)."""
    s = re.sub(r"\W", "_", name)
    if not s or s[0].isdigit():
        s = "v_" + s
    return s + "_" if s in CPP_WORDS else s


def tile_type(t: TileValueType, platform: str | None = None, dynamic_valid: bool = False) -> str:
    """``Tile<TileType::X, T, R, C, BLayout::B, R, C[, SLayout::S, fractal]>`` of a tile type
    (``dynamic_valid``: the valid shape ``-1, -1``, pto-isa's DYNAMIC, given when the tile is
    constructed)."""
    r, c = ("-1", "-1") if dynamic_valid else t.shape
    lay = t.written_layout(platform)
    sr, sc = t.static_shape             # padded to whole 32-byte rows (ND) / columns (DN)
    head = (f"Tile<TileType::{t.space.value}, {ctype(t.dtype)}, {sr}, {sc}, "
            f"BLayout::{lay.blayout.value}, {r}, {c}")
    if lay.slayout is SLayout.NoneBox:
        return head + ">"
    fractal = ACC_FRACTAL if t.space.value == "Acc" else FRACTAL
    return head + f", SLayout::{lay.slayout.value}, {fractal}>"


def tile_alias(t: TileValueType) -> str:
    """A readable, deterministic alias name for a tile type."""
    lay = t.layout.name if t.layout is not None else ""
    box = f"_in_{t.box[0]}x{t.box[1]}" if t.box is not None else ""
    return f"Tile{t.space.value}_{t.shape[0]}x{t.shape[1]}_{t.dtype}{('_' + lay) if lay else ''}{box}"


def _pad5(xs) -> list:
    xs = list(xs)
    if len(xs) > 5:
        raise CompileError(f"a {len(xs)}-D GM window: pto-isa GlobalTensor has 5 dimensions")
    return [1] * (5 - len(xs)) + xs


def global_type(dtype: str, window, tensor_shape, tile: TileLayout | None = None) -> str:
    """``GlobalTensor<T, pto::Shape<...>, pto::Stride<...>[, pto::Layout::DN]>`` of a ``window``
    (extents per dimension) of a row-major tensor of ``tensor_shape``, moved with a tile in
    layout ``tile`` (None: no tile).  The layout is the one ptoas reads off the view for that
    tile (:func:`ptopipe.arch.vocab.gm_layout`): DN for the one-column window of a DN tile whose
    rows are contiguous - pto-isa's Vec TLOAD moves only ND<-ND and DN<-DN - else pto-isa's
    default ND, left unwritten."""
    win = _pad5(window)
    shp = ", ".join(map(str, win))
    std = list(row_major_strides(tensor_shape))
    std = [1] * (5 - len(std)) + std if len(std) < 5 else std
    # pto-isa spells the unused outer strides with the full size; 1 is as good for extent 1
    head = f"GlobalTensor<{ctype(dtype)}, pto::Shape<{shp}>, pto::Stride<{', '.join(map(str, std))}>"
    if tile is not None and gm_layout(win[3], win[4], std[3], std[4], tile) is TileLayout.DN:
        return head + ", pto::Layout::DN>"
    return head + ">"


def tensor_global(t: TensorType) -> str:
    """The GlobalTensor type of a whole tensor value (a TALLOC'd or TPOP'd GM slot)."""
    return global_type(t.dtype, t.shape, t.shape)


def param_decl(name: str, t) -> str:
    if isinstance(t, TensorType):
        return f"__gm__ {ctype(t.dtype)} *{name}"
    if isinstance(t, ScalarType):
        return f"{ctype(t.dtype)} {name}"
    raise CompileError(f"kernel parameter {name!r} of type {t} has no C++ spelling")


def split_name(split) -> str:
    return f"TileSplitAxis::{TileSplitAxis(split).name}"


def direction_name(d, gm_directions: bool = True) -> str:
    """``Direction::X`` of a dir_mask; where the platform has no ``*_GM`` values
    (``gm_directions`` False: A2A3, whose rings are in GM anyway) a ``*_GM`` direction is
    spelled as its plain one (:data:`ptopipe.arch.vocab.PLAIN_DIRECTION`)."""
    d = Direction(d)
    if not gm_directions:
        d = PLAIN_DIRECTION.get(d, d)
    return f"Direction::{d.name}"


def scalar_ctype(t) -> str:
    return ctype(t.dtype) if isinstance(t, ScalarType) else "int64_t"


def literal(value, t) -> str:
    """A C++ literal for a scalar constant of IR type ``t``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    dtype = getattr(t, "dtype", "index")
    if isinstance(value, float) or dtype in ("f16", "f32", "bf16"):
        v = float(value)
        text = repr(v) if v == v and v not in (float("inf"), float("-inf")) else None
        if text is None:
            raise CompileError(f"constant {value!r} has no C++ literal")
        return f"{text}f" if dtype == "f32" else f"static_cast<{ctype(dtype)}>({text})"
    return str(int(value))
