"""The vocabulary shared by every layer: memories and where a tile lives (``MemSpace``,
``TileType``), the pipes of a core (``PipeUnit``), the buffer alignment, pipe directions,
tile layouts (``BLayout`` / ``SLayout`` and the named ``TileLayout`` they make, with a
default per ``TileType``), split axes, FIFO kinds, the protocol selector, the two ring
ways, the platform ids and the enum attributes of tile ops (``RoundMode``, ``CmpMode``,
``PadValue``, ``PrintFormat``, ``MaskPattern``, ``GatherAxis``, ``QuantType``).  Pure data (enums and
constants); ``isa`` re-exports them for kernels, ``ir`` and ``language`` use them without
importing ``isa``."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum
from ..errors import with_article

#: every local buffer and ring slot is aligned to this many bytes (``Platform.alignment``
#: defaults to it; layers that know no platform, such as the IR verifier, use it directly)
ALIGNMENT = 32


class MemSpace(Enum):
    """The memories of a cluster.  GM is shared; the others belong to one core."""
    GM = "GM"
    UB = "UB"      # per AIV
    L1 = "L1"      # AIC
    L0A = "L0A"    # AIC, left matrix
    L0B = "L0B"    # AIC, right matrix
    L0C = "L0C"    # AIC, accumulator
    BIAS = "BIAS"  # AIC bias table
    FB = "FB"      # AIC fixpipe buffer: the quantisation parameters of the *_FP moves / stores
    L0A_SCALE = "L0A_SCALE"    # AIC, the left MX scales (A5)
    L0B_SCALE = "L0B_SCALE"    # AIC, the right MX scales (A5)

    __hash__ = object.__hash__      # members are singletons; Enum's own hash is slow Python


class TileType(Enum):
    """Where a tile lives (pto-isa ``TileType``): the one location vocabulary of the isa
    tiles, the IR's tile types and the DSL's ``pl.Vec`` / ``pl.Mat`` / ...."""
    Vec = "Vec"      # AIV UB
    Mat = "Mat"      # AIC L1
    Left = "Left"    # AIC L0A
    Right = "Right"  # AIC L0B
    Acc = "Acc"      # AIC L0C
    Bias = "Bias"    # AIC bias table
    Scaling = "Scaling"          # AIC fixpipe buffer (the fp tile of TMOV_FP / TSTORE_FP ...)
    ScaleLeft = "ScaleLeft"      # AIC, TMATMUL_MX's left scales (A5)
    ScaleRight = "ScaleRight"    # AIC, TMATMUL_MX's right scales (A5)

    __hash__ = object.__hash__

    @property
    def mem_space(self) -> MemSpace:
        """The memory a tile of this type lives in."""
        return TILE_SPACE[self]

    @property
    def core(self) -> str:
        """``"aiv"`` for Vec tiles, ``"aic"`` for every other type."""
        return "aiv" if self is TileType.Vec else "aic"


TILE_SPACE = {TileType.Vec: MemSpace.UB, TileType.Mat: MemSpace.L1, TileType.Left: MemSpace.L0A,
              TileType.Right: MemSpace.L0B, TileType.Acc: MemSpace.L0C,
              TileType.Bias: MemSpace.BIAS, TileType.Scaling: MemSpace.FB,
              TileType.ScaleLeft: MemSpace.L0A_SCALE, TileType.ScaleRight: MemSpace.L0B_SCALE}


class BLayout(Enum):
    """pto-isa ``BLayout``: the order of the (fractal) blocks of a tile."""
    RowMajor = "RowMajor"
    ColMajor = "ColMajor"

    __hash__ = object.__hash__


class SLayout(Enum):
    """pto-isa ``SLayout``: the order inside a fractal block (``NoneBox``: no fractal)."""
    NoneBox = "NoneBox"
    RowMajor = "RowMajor"
    ColMajor = "ColMajor"

    __hash__ = object.__hash__


class TileLayout(Enum):
    """The named layout of a tile, from its ``(BLayout, SLayout)`` pair (pto-isa / CANN):
    ND row-major, DN column-major, NZ column-major blocks of row-major fractals (Mat / Acc
    on the Cube), ZN row-major blocks of column-major fractals (Right), ZZ row-major blocks
    of row-major fractals (Left on A2A3; Left is NZ on A5).  A layout says how the logical
    matrix is placed in memory; moving data between layouts (TMOV) keeps the matrix."""
    ND = (BLayout.RowMajor, SLayout.NoneBox)
    DN = (BLayout.ColMajor, SLayout.NoneBox)
    NZ = (BLayout.ColMajor, SLayout.RowMajor)
    ZN = (BLayout.RowMajor, SLayout.ColMajor)
    ZZ = (BLayout.RowMajor, SLayout.RowMajor)

    __hash__ = object.__hash__

    @property
    def blayout(self) -> BLayout:
        return self.value[0]

    @property
    def slayout(self) -> SLayout:
        return self.value[1]

    @property
    def fractal(self) -> bool:
        """True for the boxed layouts (NZ, ZN, ZZ): 512-byte fractal blocks."""
        return self.value[1] is not SLayout.NoneBox

    @classmethod
    def of(cls, blayout: BLayout, slayout: SLayout) -> "TileLayout":
        """The named layout of a (BLayout, SLayout) pair (ColMajor blocks of ColMajor fractals have none: KeyError)."""
        return _LAYOUT_OF[(blayout, slayout)]


_LAYOUT_OF = {l.value: l for l in TileLayout}

#: the layouts a GlobalTensor (GM) can have, in the order of pto-isa's ``Layout`` enum
#: (type.hpp: ``ND, DN, NZ, ...``; the C++ header's values): how its 5-D view is seen as the
#: rows x cols matrix TLOAD / TSTORE move - ND: rows d0*d1*d2*d3, cols d4; DN: rows d3, cols
#: d0*d1*d2*d4; NZ: rows d2*d3, cols d0*d1*d4 (pto-isa's MapTileIndicesToGlobalOffset)
GM_LAYOUTS = (TileLayout.ND, TileLayout.DN, TileLayout.NZ)

#: a tile's layout when its declaration gives none: pto-isa's aliases (``TileLeft`` ZZ on
#: A2A3, ``TileRight`` ZN, ``TileAcc`` NZ); Vec, Mat and Bias tiles default to ND as pto-isa's
#: ``Tile<...>`` template does (a Mat tile is NZ only when declared so).  A one-column Vec
#: tile is the exception: :func:`default_layout`.
DEFAULT_LAYOUT = {TileType.Vec: TileLayout.ND, TileType.Mat: TileLayout.ND, TileType.Left: TileLayout.ZZ,
                  TileType.Right: TileLayout.ZN, TileType.Acc: TileLayout.NZ, TileType.Bias: TileLayout.ND,
                  TileType.Scaling: TileLayout.ND, TileType.ScaleLeft: TileLayout.ND,
                  TileType.ScaleRight: TileLayout.ND}

#: the layout of pto-isa's ``TileLeft`` per platform: ZZ on A2A3, NZ on A5 (ptoas gives every
#: Left tile this blayout, PTOAS PTOTypeDefs.cpp resolveTileBufBLayout).  A Left tile declared
#: without a layout is written (C++, PTO-AS) in its platform's, and ptopipe's C++ header's
#: ``TileLeft`` follows pto-isa's; the simulator holds the logical matrix either way.
LEFT_LAYOUT = {"a2a3": TileLayout.ZZ, "a5": TileLayout.NZ}


def default_layout(loc: TileType, rows: int, cols: int, platform: str | None = None) -> TileLayout:
    """The layout of a ``rows x cols`` tile of ``loc`` declared without one: DEFAULT_LAYOUT of
    its TileType, except that a one-column Vec tile - the per-row operand of the row
    reductions and row expansions - is DN (one value per row, the rows contiguous): pto-isa's
    TROWEXPAND* take that operand ColMajor with one valid column (or RowMajor with a whole
    32-byte block of valid columns per row, which a [R, 1] value is not), and TROWSUM /
    TROWMAX / TROWMIN write a DN dst with Cols == 1 (docs/isa/TROWEXPANDADD.md, TROWSUM.md).
    With a ``platform`` name a Left tile has that platform's layout (:data:`LEFT_LAYOUT`)."""
    if loc is TileType.Vec and cols == 1:
        return TileLayout.DN
    if loc is TileType.Left and platform is not None:
        return LEFT_LAYOUT[platform]
    return DEFAULT_LAYOUT[loc]


def row_major_strides(shape) -> tuple:
    """The element strides of a dense row-major tensor of ``shape`` (the last dimension
    contiguous): what a GlobalTensor, a PTO-AS tensor view and a pto-isa ``pto::Stride``
    of a whole tensor give."""
    st, acc = [], 1
    for n in reversed(shape):
        st.append(acc)
        acc *= n
    return tuple(reversed(st))


def _five(dims) -> tuple:
    """``dims`` right-aligned to pto-isa's five GM dimensions (1 before them)."""
    return (1,) * (5 - len(dims)) + tuple(dims)


def gm_nz_inferred(shape, strides, itemsize: int) -> bool:
    """Whether ptoas's InferPTOLayout gives a GM tensor of this static ``shape`` and element
    ``strides`` (a ``make_tensor_view`` with constant shape and strides, or a static GM
    ``memref``) no ND / DN but the NZ layout (PTOAS ``inferLayout5D``): right-aligned to five
    dimensions, d2 is 16 and d2 * d3 * itemsize is 512 bytes, d4 is contiguous and d3 is d4
    elements apart (e.g. a 16x16x16 f16 tensor; its C++ GlobalTensor is then ``Layout::NZ``).
    A 2-D tensor never is (its d2 is 1)."""
    if not 0 < len(shape) <= 5 or len(strides) != len(shape):
        return False
    sh, st = _five(shape), _five(strides)
    return sh[2] == 16 and sh[2] * sh[3] * itemsize == 512 and st[4] == 1 and st[3] == sh[4]


def minor_layouts(rows: int, cols: int, row_stride: int, col_stride: int) -> tuple:
    """``(nd, dn)``: whether a ``rows x cols`` view with these element strides reads as ND
    (rows ``cols`` elements apart, unit column stride) and as DN (columns ``rows`` apart, unit
    row stride) - both for a row or column vector (PTOAS ``matchesNDMinor2D`` /
    ``matchesDNMinor2D``)."""
    nd = (cols == 1 or col_stride == 1) and (rows == 1 or row_stride == (1 if cols == 1 else cols))
    dn = (rows == 1 or row_stride == 1) and (cols == 1 or col_stride == (1 if rows == 1 else rows))
    return nd, dn


#: per GM layout other than ND: (the five dims that make a tile move's rows, those that make its
#: columns), each outer first (pto-isa's TLOAD / TSTORE: a DN tensor is d3 rows of d0*d1*d2*d4
#: columns, an NZ one d2*d3 rows of d0*d1*d4 columns; ND: d0*d1*d2*d3 rows of d4)
GM_SPLITS = {TileLayout.DN: ((3,), (0, 1, 2, 4)), TileLayout.NZ: ((2, 3), (0, 1, 4))}


def gm_matrix(window, layout: "TileLayout | None") -> tuple:
    """``(rows, cols)`` a tile move sees of a GM ``window`` (its sizes, in the tensor's dims) in
    ``layout`` (None / ND: rows of the last dim) - the tile shape pto-isa's TLOAD / TSTORE
    asserts."""
    split = GM_SPLITS.get(layout)
    if split is None:                   # ND, of any rank
        rows = 1
        for n in window[:-1]:
            rows *= n
        return rows, window[-1]
    w, (rows_of, cols_of) = _five(window), split
    rows = cols = 1
    for k in rows_of:
        rows *= w[k]
    for k in cols_of:
        cols *= w[k]
    return rows, cols


def gm_layout_inferred(shape, strides, itemsize: int) -> "TileLayout | None":
    """The layout ptoas's InferPTOLayout gives a GM tensor of static ``shape`` / ``strides``
    when a move's tile cannot change it: NZ (:func:`gm_nz_inferred`), DN when only DN
    describes its last two dims (columns ``d3`` apart, unit row stride), ND when only ND does;
    None for a row or column vector, which either describes (the move's tile then decides,
    :func:`gm_layout`)."""
    if gm_nz_inferred(shape, strides, itemsize):
        return TileLayout.NZ
    if not 0 < len(shape) <= 5 or len(strides) != len(shape):
        return None
    sh, st = _five(shape), _five(strides)
    nd, dn = minor_layouts(sh[3], sh[4], st[3], st[4])
    if nd and dn:
        return None
    return TileLayout.DN if dn else TileLayout.ND


def gm_layout_refused(shape, strides, itemsize: int, given: TileLayout) -> TileLayout | None:
    """The layout ptoas's InferPTOLayout reads off a static GM tensor of ``shape`` / ``strides``
    when it differs from the ``{layout = #pto.layout<..>}`` the file ``given`` it - ptoas then
    refuses the file ("layout mismatch: user-specified layout=.. but inferred=..") - else None.
    A view both ND and DN describe (a row or column vector) takes either of them as given."""
    if gm_nz_inferred(shape, strides, itemsize):
        return None if given is TileLayout.NZ else TileLayout.NZ
    sh, st = _five(shape), _five(strides)
    nd, dn = minor_layouts(sh[3], sh[4], st[3], st[4])
    if nd and dn:
        if given in (TileLayout.ND, TileLayout.DN):
            return None
        return TileLayout.DN if sh[4] == 1 and sh[3] != 1 else TileLayout.ND
    inferred = TileLayout.DN if dn else TileLayout.ND
    return None if given is inferred else inferred


def gm_layout(rows: int, cols: int, row_stride: int, col_stride: int, tile: TileLayout) -> TileLayout:
    """The GM layout (pto-isa's GlobalTensor ``Layout``) of a ``rows x cols`` view with these
    element strides as a move with a ``tile``-layout tile sees it, read as ptoas reads a view
    (InferPTOLayout): ND when rows are ``cols`` elements apart with unit column stride, DN when
    columns are ``rows`` apart with unit row stride, ND when neither; a view both describe (a
    row or column vector) takes the tile's preference - ND for a row-major tile, DN for a
    column-major one (a boxed tile: DN for a column, else ND)."""
    nd, dn = minor_layouts(rows, cols, row_stride, col_stride)
    if nd and dn:
        if not tile.fractal:
            return TileLayout.DN if tile.blayout is BLayout.ColMajor else TileLayout.ND
        return TileLayout.DN if cols == 1 and rows != 1 else TileLayout.ND
    return TileLayout.DN if dn else TileLayout.ND


def _tile_block(loc: TileType, layout: TileLayout, itemsize: int) -> tuple:
    """pto_tile.hpp's inner box of a ``loc`` tile in ``layout``: one 32-byte block along a row
    (ND) or a column (DN), else one fractal - 16 x 32 bytes row-major inside (NZ, ZZ), 32 bytes
    x 16 column-major inside (ZN), 16 x 16 in the 1024-byte fractal of an Acc tile."""
    per = ALIGNMENT // itemsize if ALIGNMENT % itemsize == 0 else 1
    if layout is TileLayout.ND:
        return 1, per
    if layout is TileLayout.DN:
        return per, 1
    if loc is TileType.Acc:
        return 16, 16
    return (16, per) if layout.slayout is SLayout.RowMajor else (per, 16)


def static_shape(loc: TileType, layout: TileLayout, rows: int, cols: int, itemsize: int) -> tuple:
    """The static (Rows, Cols) pto-isa declares for a ``rows x cols`` tile of ``loc`` in
    ``layout``: the shape rounded up to what pto_tile.hpp's ``Tile`` ``static_assert``s - an
    unboxed tile's rows (ND) or columns (DN) span whole 32-byte blocks, a boxed tile is whole
    fractals (:func:`_tile_block`) in its columns, and in its rows too unless it is a Vec tile
    or one row.  A narrower tile - the [M, 1] column of a row reduction, a [16, 4] u8 compare
    mask - is declared padded, with the data's shape as its valid shape (the C++ and the
    ``.pto`` writers alike).  The MX scale tiles (ScaleLeft / ScaleRight) are kept as they are:
    their fractals have rules of their own."""
    if loc in (TileType.ScaleLeft, TileType.ScaleRight):
        return rows, cols
    br, bc = _tile_block(loc, layout, itemsize)
    if layout.fractal and (loc is TileType.Vec or rows == 1):
        br = 1
    return -(-rows // br) * br, -(-cols // bc) * bc


def tile_shape_error(loc: TileType, layout: TileLayout, rows: int, cols: int, itemsize: int) -> str | None:
    """Why pto-isa's ``Tile`` refuses a static ``rows x cols`` tile of ``loc`` in ``layout``
    (it is not its own :func:`static_shape`; the valid shape is free), else None."""
    if static_shape(loc, layout, rows, cols, itemsize) == (rows, cols):
        return None
    br, bc = _tile_block(loc, layout, itemsize)
    if layout is TileLayout.ND:
        return (f"a row-major (ND) tile's row is Cols x {itemsize} = {cols * itemsize} bytes, not a multiple "
                f"of {ALIGNMENT}")
    if layout is TileLayout.DN:
        return (f"a column-major (DN) tile's column is Rows x {itemsize} = {rows * itemsize} bytes, not a "
                f"multiple of {ALIGNMENT}")
    return (f"{with_article(layout.name)} tile is whole {br}x{bc} fractals: Cols a multiple of {bc}"
            + ("" if loc is TileType.Vec else f", Rows of {br} (or 1)"))


class PlatformID(IntEnum):
    """Compile-time platform constant of seed 003 (``PLATFORM_ID``); also the key of the op
    catalogue's per-platform dtype sets."""
    PLATFORM_A2A3 = 0
    PLATFORM_A5 = 1


class PipeUnit(IntEnum):
    """The in-order pipes of a core (an IntEnum so that per-pipe state is a plain list)."""
    S = 0        # scalar / control, flag set/wait
    MTE1 = 1     # L1 -> L0A/L0B
    MTE2 = 2     # GM -> local
    MTE3 = 3     # UB -> GM / UB -> L1
    M = 4        # cube
    V = 5        # vector
    FIX = 6      # L0C -> GM/UB/L1

    @property
    def label(self) -> str:
        return self.name


class Direction(IntEnum):
    """``TPipe`` / ``*_initialize_pipe`` direction (seed 003 DIR_MASK 1/2/3, pto-isa's extras)."""
    DIR_C2V = 1
    DIR_V2C = 2
    DIR_BOTH = 3
    DIR_V2C_CTRL = 4
    DIR_C2V_GM = 5
    DIR_V2C_GM = 6
    DIR_BOTH_GM = 7


#: a ``*_GM`` direction -> the plain direction with the same ways: what a ``*_GM`` pipe is on a
#: platform whose rings are in GM anyway (A2A3 has no ``*_GM`` values: pto-isa type.hpp
#: declares them under PTO_NPU_ARCH_A5 only)
PLAIN_DIRECTION = {Direction.DIR_C2V_GM: Direction.DIR_C2V, Direction.DIR_V2C_GM: Direction.DIR_V2C,
                   Direction.DIR_BOTH_GM: Direction.DIR_BOTH}


class TileSplitAxis(IntEnum):
    """How a pushed tile is divided between the two Vector sub-blocks (pto-isa fifo.hpp).  The
    two ``_ODD`` modes split an odd extent: AIV0 takes the extra row / column; each lane's
    place in the slot is worked out from its own popped extent
    (:mod:`ptopipe.protocol.geometry`)."""
    TILE_NO_SPLIT = 0
    TILE_UP_DOWN = 1
    TILE_LEFT_RIGHT = 2
    TILE_UP_DOWN_ODD = 3
    TILE_LEFT_RIGHT_ODD = 4


class FIFOType(Enum):
    """Where a ``TMPipe`` ring lives."""
    GM_FIFO = "GM_FIFO"
    VEC_FIFO = "VEC_FIFO"
    MAT_FIFO = "MAT_FIFO"
    CTRL_FIFO = "CTRL_FIFO"

    __hash__ = object.__hash__


class VecCubeRatio(Enum):
    """pto-isa ``VecCubeRatio`` (fifo.hpp), in its order (the C++ values 0, 1, 2): the Vector
    sub-blocks on a TMPipe."""
    V1C1_VEC0 = (0,)       # 1 Cube, 1 Vector core: AIV0 only
    V1C1_VEC1 = (1,)       # 1 Cube, 1 Vector core: AIV1 only
    V2C1_VECS = (0, 1)     # 1 Cube, 2 Vector cores


class Protocol(Enum):
    """Which ring protocol a run follows: seed 003 (``spec``), pto-isa's C++ (``pto-isa``),
    or pto-isa with the newest A5 TPipe credits (``pto-isa-head``: the constructor credits
    of GM-backed and split pipes counted together with the start-up window; on A2A3 the
    same as ``pto-isa``), or pto-isa's CPU simulator (``pto-isa-cpusim``: include/pto/cpu/).
    A named library version, ``pto-isa@<commit>``, is ``PTO_ISA`` with that release's bugs
    (``ptopipe.protocol.versions``; docs/protocols.md)."""
    SPEC = "spec"
    PTO_ISA = "pto-isa"
    PTO_ISA_HEAD = "pto-isa-head"
    PTO_ISA_CPUSIM = "pto-isa-cpusim"


DIR_C2V, DIR_V2C, DIR_BOTH = Direction.DIR_C2V, Direction.DIR_V2C, Direction.DIR_BOTH
DIR_V2C_CTRL, DIR_C2V_GM = Direction.DIR_V2C_CTRL, Direction.DIR_C2V_GM
DIR_V2C_GM, DIR_BOTH_GM = Direction.DIR_V2C_GM, Direction.DIR_BOTH_GM
TILE_NO_SPLIT, TILE_UP_DOWN = TileSplitAxis.TILE_NO_SPLIT, TileSplitAxis.TILE_UP_DOWN
TILE_LEFT_RIGHT = TileSplitAxis.TILE_LEFT_RIGHT
TILE_UP_DOWN_ODD, TILE_LEFT_RIGHT_ODD = TileSplitAxis.TILE_UP_DOWN_ODD, TileSplitAxis.TILE_LEFT_RIGHT_ODD
#: the two ring ways of a channel (one unidirectional ring each)
C2V, V2C = "C2V", "V2C"


class SyncPipe(Enum):
    """pto-isa's ``pipe_t`` names, as ``set_flag`` / ``wait_flag`` / ``pipe_barrier`` take
    them (PTO-AS ``record_event`` / ``wait_event`` / ``pto.barrier`` name the same pipes).
    ``unit`` is the core's :class:`PipeUnit` (None for PIPE_ALL: every pipe)."""
    PIPE_S = "PIPE_S"
    PIPE_MTE1 = "PIPE_MTE1"
    PIPE_MTE2 = "PIPE_MTE2"
    PIPE_MTE3 = "PIPE_MTE3"
    PIPE_M = "PIPE_M"
    PIPE_V = "PIPE_V"
    PIPE_FIX = "PIPE_FIX"
    PIPE_ALL = "PIPE_ALL"

    __hash__ = object.__hash__

    @property
    def unit(self) -> "PipeUnit | None":
        return None if self is SyncPipe.PIPE_ALL else PipeUnit[self.value[5:]]


class EventID(IntEnum):
    """The intra-core event flags of one (src pipe, dst pipe) pair (pto-isa ``event_t``)."""
    EVENT_ID0 = 0
    EVENT_ID1 = 1
    EVENT_ID2 = 2
    EVENT_ID3 = 3
    EVENT_ID4 = 4
    EVENT_ID5 = 5
    EVENT_ID6 = 6
    EVENT_ID7 = 7


class SyncCoreType(Enum):
    """pto-isa's ``SyncCoreType`` of ``SYNCALL`` (include/pto/common/type.hpp): which cores of
    the launch take part in the all-core barrier (PTO-AS ``#pto.sync_core_type<aiv_only |
    aic_only | mix>``)."""
    AIVOnly = "aiv_only"
    AICOnly = "aic_only"
    Mix = "mix"

    __hash__ = object.__hash__


class SyncAllMode(Enum):
    """pto-isa's ``SyncAllMode`` of ``SYNCALL``: Hard, the FFTS barrier; Soft, the GM-polling
    barrier on a shared int32 counter in a 64-byte workspace (PTO-AS ``#pto.sync_all_mode<..>``)."""
    Hard = "hard"
    Soft = "soft"

    __hash__ = object.__hash__


class SyncMode(Enum):
    """How the pipes of one core are ordered: ``auto`` (the scoreboard orders every
    same-core dependency: the default) or ``manual`` (only set_flag / wait_flag /
    pipe_barrier order different pipes; see docs/events.md)."""
    AUTO = "auto"
    MANUAL = "manual"

    __hash__ = object.__hash__


class RoundMode(Enum):
    """pto-isa's ``RoundMode`` of ``TCVT``: how a float becomes an integer (the DSL's ``pl.cast``
    and the C++ writer use CAST_RINT).  CAST_NONE truncates as CAST_TRUNC does."""
    CAST_RINT = "rint"        # to nearest, ties to even
    CAST_ROUND = "round"      # to nearest, ties away from zero
    CAST_FLOOR = "floor"
    CAST_CEIL = "ceil"
    CAST_TRUNC = "trunc"
    CAST_NONE = "none"
    CAST_ODD = "odd"          # von Neumann rounding (not modelled: a TCVT with it is an error)


class SaturationMode(IntEnum):
    """pto-isa's ``SaturationMode`` of ``TCVT`` (include/pto/common/type.hpp, its numbering): ON
    clamps a value to the destination's range before converting, OFF narrows without it (an
    integer keeps its low bits; a float goes through int32 first, as A2A3's PyTorch-compatible
    narrowing does).  A TCVT without one takes pto-isa's per-pair default (TCVT_DEFAULT_OFF)."""
    ON = 0
    OFF = 1


_NARROWING_OFF = frozenset({("float16", "uint8"), ("float16", "int8"), ("float32", "int16"), ("float16", "int16"),
                            ("int64", "int32"), ("int32", "int16")})
#: (source, destination) dtype names per platform whose TCVT without a SaturationMode narrows
#: without saturation (SaturationMode::OFF: wraps); every other pair keeps its saturating
#: default.  A2A3: ``kIsNarrowingCvt`` (include/pto/npu/a2a3/TCvt.hpp, "PyTorch-compatible
#: truncation"); A5: the default-mode ``TCVT_IMPL`` of include/pto/npu/a5/TCvt.hpp - the same six.
TCVT_DEFAULT_OFF = {PlatformID.PLATFORM_A2A3: _NARROWING_OFF, PlatformID.PLATFORM_A5: _NARROWING_OFF}


def _pairs(table: str) -> frozenset:
    """``"src: dst dst; src: dst"`` -> {(src, dst), ...} of numpy dtype names."""
    out = set()
    for entry in table.split(";"):
        src, dsts = entry.split(":")
        out.update((src.strip(), d) for d in dsts.split())
    return frozenset(out)


#: (source, destination) dtype names of the conversions TCVT has on each platform: the one
#: table of TCVT's dtype rule (the ISA, the IR's cast and both writers ask it).  A2A3: the
#: ``if constexpr`` chain of ``GenCastCall`` / ``GenCastCallSpecialCases`` in
#: include/pto/npu/a2a3/TCvt.hpp, which has no ``else``: any other pair compiles and converts
#: nothing, the destination keeps its old bytes (int32 -> f16 is its ``vconv_deq`` with scale
#: 1).  A5: the ``castData`` overloads of include/pto/npu/a5/TCvt.hpp (another pair has no
#: overload and does not compile).  Both agree with docs/isa/TCVT.md "Supported Conversions"
#: over the dtypes ptopipe's tiles hold (its int4 / hifloat8 / fp4 rows have no tile dtype here).
TCVT_PAIRS = {
    PlatformID.PLATFORM_A2A3: _pairs(
        "float32: float16 float32 bfloat16 int16 int32 int64; float16: float32 int32 int16 int8 uint8;"
        "bfloat16: float32 int32; int16: float16 float32; int32: float32 int16 int64 float16;"
        "int64: float32 int32; uint8: float16; int8: float16"),
    PlatformID.PLATFORM_A5: _pairs(
        "float32: float32 float16 bfloat16 int16 int32 int64 float8_e4m3fn float8_e5m2;"
        "float16: float32 int32 int16 int8 uint8; bfloat16: float32 int32 float16;"
        "uint8: float16 uint16; int8: float16 int16 int32; int16: uint8 float16 float32 uint32 int32;"
        "int32: float32 int16 uint16 int64 uint8; uint32: uint8 uint16 int16; int64: float32 int32;"
        "float8_e4m3fn: float32; float8_e5m2: float32"),
}


class CmpMode(IntEnum):
    """pto-isa's ``CmpMode`` of ``TCMP`` / ``TCMPS`` (its numbering): the comparison whose
    truth each bit of the packed predicate mask holds."""
    EQ = 0
    NE = 1
    LT = 2
    LE = 3
    GT = 4
    GE = 5


class PadValue(Enum):
    """pto-isa's ``PadValue`` of ``TFILLPAD``: what fills a tile outside the source's valid
    region (Max / Min: +inf / -inf for floats, the integer's largest / smallest value; a
    plain number or a :class:`CustomPad` is pto-isa's custom pad).  ``Null`` is a tile's "no
    pad value" (pto-isa's ``Tile`` default, what ptoas writes): TFILLPAD refuses it, as
    pto-isa's static_assert does."""
    Null = "null"
    Zero = "zero"
    Max = "max"
    Min = "min"

    __hash__ = object.__hash__


#: pto-isa's ``PadValue::CustomBase`` (type.hpp): a PadValue at or above it is a custom pad
#: whose low 32 bits are the fill's bits (constants.hpp ``PadValueCustom``)
CUSTOM_PAD_BASE = 1 << 32


@dataclass(frozen=True)
class CustomPad:
    """A custom pad value as pto-isa's C++ spells it (``PadValueCustom(-1.0f)``,
    ``PadCustom<42>``, ``PadValueCustom16(bits)``): the raw ``bits`` of the fill, read in the
    tile's element type - the low 16 / 8 bits for a 2- / 1-byte type (constants.hpp
    ``GetPadValue``)."""
    bits: int

    def __repr__(self) -> str:
        return f"PadValueCustom(0x{self.bits:08X})"


class PrintFormat(IntEnum):
    """pto-isa's ``PrintFormat`` of ``TPRINT``: the printf width and precision of each value
    (integers: the width only)."""
    Width8_Precision4 = 0
    Width8_Precision2 = 1
    Width10_Precision6 = 2

    @property
    def width(self) -> int:
        return 10 if self is PrintFormat.Width10_Precision6 else 8

    @property
    def precision(self) -> int:
        return (4, 2, 6)[self]


class MaskPattern(IntEnum):
    """pto-isa's ``MaskPattern`` of the mask forms of ``TGATHER`` / ``TSCATTER``: which
    elements of each group of 2 or 4 are taken (P0101: the first of each 2, P1000: the
    fourth of each 4; read right to left), or all (P1111)."""
    P0101 = 1
    P1010 = 2
    P0001 = 3
    P0010 = 4
    P0100 = 5
    P1000 = 6
    P1111 = 7


class GatherAxis(IntEnum):
    """pto-isa's ``GatherAxis`` (``ScatterAxis``): a mask gather / scatter picks columns of
    each row (ROW) or whole rows (COL)."""
    GATHER_ROW = 0
    GATHER_COL = 1


class ScatterAxis(IntEnum):
    """pto-isa's ``ScatterAxis`` of the mask form of ``TSCATTER``: its name for the
    :class:`GatherAxis` a mask scatter places along (same values)."""
    SCATTER_ROW = 0
    SCATTER_COL = 1


class AtomicType(IntEnum):
    """pto-isa's ``AtomicType`` of ``TSTORE``: a plain store, or one that adds the tile into
    GM (``GM += tile``, in GM's dtype: :data:`~ptopipe.arch.catalogue.ATOMIC_ADD_DTYPES`)."""
    AtomicNone = 0
    AtomicAdd = 1


class Coalesce(IntEnum):
    """pto-isa's ``Coalesce`` of ``MGATHER`` / ``MSCATTER`` (type.hpp): whole table rows by a
    1-D index per tile row (Row: ``dst[r, :] = table[idx[r], :]``), or one element of the flat
    table per tile element (Elem: ``dst[r, c] = table[idx[r, c]]``).  The device's default is
    Row (pto-isa's CPU simulator walks element-wise whatever the mode)."""
    Row = 0
    Elem = 1


class GatherOOB(IntEnum):
    """pto-isa's ``GatherOOB`` of ``MGATHER``: what an index at or past the table's capacity
    (its rows, Row; its elements, Elem) reads - nothing defined (Undefined: the caller
    guarantees every index is in range), the last one (Clamp), the index modulo the capacity
    (Wrap), or zeros (Zero)."""
    Undefined = 0
    Clamp = 1
    Wrap = 2
    Zero = 3


# (made by name: pto-isa's first enumerator is ``None``, a word Python's class syntax refuses)
ScatterAtomicOp = IntEnum("ScatterAtomicOp", [("None", 0), ("Add", 1), ("Max", 2), ("Min", 3)],
                          module=__name__, qualname="ScatterAtomicOp")
ScatterAtomicOp.__doc__ = (
    "pto-isa's ``ScatterAtomicOp`` of ``MSCATTER``: a plain store (``None``, spelled "
    "``ScatterAtomicOp['None']`` or ``ScatterAtomicOp(0)`` in Python), or one that adds into (Add) / "
    "keeps the larger (Max) / the smaller (Min) of the table's element and the source's.")


class ScatterOOB(IntEnum):
    """pto-isa's ``ScatterOOB`` of ``MSCATTER``: what an index at or past the table's capacity
    writes - nothing defined (Undefined), nothing (Skip), the last row / element (Clamp), the
    index modulo the capacity (Wrap)."""
    Undefined = 0
    Skip = 1
    Clamp = 2
    Wrap = 3


class ScatterConflict(IntEnum):
    """pto-isa's ``ScatterConflict`` of A5's ``MSCATTER`` (A2A3 has none: its scatter runs in
    order, the last write wins): which of several writes to one destination stays when no
    atomic op combines them - the source position latest in row-major order (Last), or
    whichever the warp scheduler lets (Default)."""
    Last = 0
    Default = 1


class GatherExec(IntEnum):
    """pto-isa's ``GatherExec`` of A5's GM -> L1 element gather: the Cube's scalar unit
    (Scalar) or a SIMT launch on the Vector core handing off to the Cube (Simt)."""
    Scalar = 0
    Simt = 1


class ReluPreMode(IntEnum):
    """pto-isa's ``ReluPreMode``: the fixpipe's ReLU after its conversion (the *_FP ops)."""
    NoRelu = 0
    NormalRelu = 1


class QuantType(IntEnum):
    """pto-isa's ``QuantType`` of ``TQUANT``: the INT8 forms and (A5) the MX block formats
    (MXFP8 modelled; MXFP4_E2M1 writes pto-isa's packed float4_e2m1x2_t, which is not)."""
    MXFP8 = 0
    MXFP4_E2M1 = 1
    INT8_SYM = 2
    INT8_ASYM = 3


class QuantScaleAlg(IntEnum):
    """pto-isa's ``QuantScaleAlg`` of an MX ``TQUANT``: how a group's shared e8m0 exponent is
    taken from its largest magnitude - OCP (the exponent bits less the format's emax) or NV
    (the exponent of max / the format's largest value, rounded up)."""
    OCP = 0
    NV = 1


class MxQuantAlg(IntEnum):
    """pto-isa's ``MxQuantAlg`` of ``TQUANT<grp_axis, mx_alg>``: the MX destination format and
    scale algorithm in one tag (Hif4: HiFloat4, pto-isa's A6 only)."""
    OcpMxFp8E4M3 = 0
    NvMxFp8E4M3 = 1
    OcpMxFp4E2M1 = 2
    NvMxFp4E2M1 = 3
    Hif4 = 4

    @property
    def quant_type(self) -> QuantType:
        return QuantType.MXFP8 if self in (MxQuantAlg.OcpMxFp8E4M3, MxQuantAlg.NvMxFp8E4M3) else QuantType.MXFP4_E2M1

    @property
    def scale_alg(self) -> QuantScaleAlg:
        return QuantScaleAlg.NV if self in (MxQuantAlg.NvMxFp8E4M3, MxQuantAlg.NvMxFp4E2M1) else QuantScaleAlg.OCP


class VecStoreMode(IntEnum):
    """pto-isa's ``VecStoreMode`` of the MXFP8 TQUANT that also writes its exponents in the ZZ
    order an MX matmul reads (NZ; not modelled: ptopipe has no ZZ scale layout)."""
    ND = 0
    NZ = 1


class PowAlgorithm(IntEnum):
    """pto-isa's ``PowAlgorithm`` of ``TPOW`` / ``TPOWS``: the A5 algorithm (HIGH_PRECISION
    is the one that takes bf16; A2A3 ignores the choice).  The results are modelled exactly
    either way."""
    DEFAULT = 0
    HIGH_PRECISION = 1


class HistByte(IntEnum):
    """pto-isa's ``HistByte`` of ``THISTOGRAM``: the byte of each element counted (BYTE_0 the
    least significant)."""
    BYTE_0 = 0
    BYTE_1 = 1
    BYTE_2 = 2
    BYTE_3 = 3


class SetFmatrixMode(IntEnum):
    """pto-isa's ``SetFmatrixMode`` of ``TIMG2COL`` / ``SETFMATRIX`` / ``SET_IMG2COL_RPT`` /
    ``SET_IMG2COL_PADDING`` (type.hpp): which of the Cube's two img2col register banks (A or
    B) the instruction uses, and who writes them - the TIMG2COL itself from its ConvTile
    (AUTO: the SET_* instructions then write nothing) or the SET_* instructions before it
    (MANUAL: the TIMG2COL reads what they wrote)."""
    FMATRIX_A_AUTO = 0
    FMATRIX_B_AUTO = 1
    FMATRIX_A_MANUAL = 2
    FMATRIX_B_MANUAL = 3

    @property
    def auto(self) -> bool:
        return self in (SetFmatrixMode.FMATRIX_A_AUTO, SetFmatrixMode.FMATRIX_B_AUTO)

    @property
    def bank(self) -> str:
        return "B" if self in (SetFmatrixMode.FMATRIX_B_AUTO, SetFmatrixMode.FMATRIX_B_MANUAL) else "A"


PIPE_S, PIPE_MTE1, PIPE_MTE2 = SyncPipe.PIPE_S, SyncPipe.PIPE_MTE1, SyncPipe.PIPE_MTE2
PIPE_MTE3, PIPE_M, PIPE_V = SyncPipe.PIPE_MTE3, SyncPipe.PIPE_M, SyncPipe.PIPE_V
PIPE_FIX, PIPE_ALL = SyncPipe.PIPE_FIX, SyncPipe.PIPE_ALL
(EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3,
 EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7) = tuple(EventID)


#: pto-isa ``TPipe``'s default LocalSlotNum: the staging slots a GM-ring consumer holds popped
#: tiles in (A2A3), so at most that many popped tiles are held at once
LOCAL_SLOT_NUM = 2
#: the SlotNums ptoas builds a ring of (PTOAS PTO.cpp verifyPipeShape: "expects 'slot_num' to
#: be 4 or 8"); a .pto init with another is refused by ptoas
PTOAS_SLOT_NUMS = (4, 8)
