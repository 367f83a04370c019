"""isa: the instruction API a kernel calls, mirroring pto-isa's ``pto_instr.hpp``.

Tiles, GlobalTensors, TPipe/TMPipe, TPUSH/TPOP/TFREE/TALLOC/TSYNC, TLOAD/TSTORE/TMOV,
TMATMUL and vector ops, ``get_subblockid()``; and ``run()`` to launch kernels.
``from ptopipe.isa import *`` gives a kernel file everything it needs.
"""
from .context import current_core, get_block_idx, get_block_num, get_subblockdim, get_subblockid, is_cube, platform_id
from ..arch.dtypes import (bfloat16, float4_e2m1, float8_e4m3, float8_e5m2, float8_e8m0, float16, float32,
                           half, int8, int16, int32, int64, uint8, uint32)
from .events import TSYNC, Event, Op
from .launch import RunResult, RunSummary, compare, gm_buffer, run
from .scenario import Scenario
from .ops import *  # noqa: F401,F403
from .ops import __all__ as _ops_all
from .vector import *  # noqa: F401,F403
from .vector import __all__ as _vector_all
from .layout_ops import *  # noqa: F401,F403
from .layout_ops import __all__ as _layout_all
from .fixpipe import *  # noqa: F401,F403
from .fixpipe import __all__ as _fixpipe_all
from .mx_ops import *  # noqa: F401,F403
from .mx_ops import __all__ as _mx_all
from .debug import PRINT, TPREFETCH, TPRINT, TTRAP, prints
from .indexed import MGATHER, MSCATTER
from .convtile import ConvTile
from .img2col import SETFMATRIX, SET_IMG2COL_PADDING, SET_IMG2COL_RPT, TIMG2COL
from .prefetch_async import AsyncEvent, AsyncSession, PrefetchAsyncContext, TPREFETCH_ASYNC
from .pipe import (DIR_BOTH, DIR_BOTH_GM, DIR_C2V, DIR_C2V_GM, DIR_V2C, DIR_V2C_CTRL, DIR_V2C_GM,
                   TALLOC, TFREE, TILE_LEFT_RIGHT, TILE_LEFT_RIGHT_ODD, TILE_NO_SPLIT, TILE_UP_DOWN,
                   TILE_UP_DOWN_ODD, TPOP, TPOPDONE, TPUSH, Direction, FIFOType, PipeHandle, Protocol, TileSplitAxis,
                   TMPipe, TPipe, VecCubeRatio, aic_initialize_pipe, aiv_initialize_pipe)
from .sync import *  # noqa: F401,F403
from .crosscore import *  # noqa: F401,F403
from .crosscore import VEC_CORE_ID_OFFSET, __all__ as _crosscore_all
from .sync import __all__ as _sync_all
from .tensor import GlobalTensor, GMPtr
from .tile import TASSIGN, BLayout, SLayout, Tile, TileLayout, TileType
from ..arch.platform import PlatformID
from ..arch.vocab import (AtomicType, CmpMode, Coalesce, GatherAxis, GatherExec, GatherOOB, HistByte, MaskPattern,
                          PadValue, PowAlgorithm, PrintFormat, QuantType, ReluPreMode, RoundMode, SaturationMode,
                          ScatterAtomicOp, ScatterConflict, ScatterOOB, SetFmatrixMode, QuantScaleAlg, MxQuantAlg,
                          VecStoreMode)

PLATFORM_A2A3 = PlatformID.PLATFORM_A2A3
PLATFORM_A5 = PlatformID.PLATFORM_A5

__all__ = list(_ops_all) + list(_vector_all) + list(_layout_all) + list(_fixpipe_all) + list(_mx_all) + list(_sync_all) + list(_crosscore_all) + [
    "AtomicType", "BLayout", "CmpMode", "Coalesce", "GatherAxis", "GatherExec", "GatherOOB", "MGATHER", "MSCATTER",
    "ScatterAtomicOp", "ScatterConflict", "ScatterOOB", "ConvTile", "SETFMATRIX", "SET_IMG2COL_PADDING",
    "SET_IMG2COL_RPT", "SetFmatrixMode", "TIMG2COL", "AsyncEvent", "AsyncSession", "PrefetchAsyncContext",
    "TPREFETCH_ASYNC", "QuantScaleAlg", "MxQuantAlg", "VecStoreMode", "HistByte", "MaskPattern", "PowAlgorithm", "QuantType", "ReluPreMode", "PadValue", "PrintFormat", "PRINT", "TPREFETCH", "TPRINT", "TTRAP", "DIR_BOTH", "DIR_BOTH_GM", "DIR_C2V", "DIR_C2V_GM", "DIR_V2C",
    "DIR_V2C_CTRL", "DIR_V2C_GM", "Direction", "Event", "FIFOType", "GMPtr", "GlobalTensor", "Op",
    "PLATFORM_A2A3", "PLATFORM_A5", "PipeHandle", "PlatformID", "Protocol", "RoundMode", "SaturationMode", "RunResult",
    "RunSummary", "SLayout", "Scenario", "TileLayout", "TALLOC", "TASSIGN", "TFREE", "TILE_LEFT_RIGHT",
    "TILE_LEFT_RIGHT_ODD", "TILE_NO_SPLIT", "TILE_UP_DOWN", "TILE_UP_DOWN_ODD", "TMPipe", "TPOP", "TPOPDONE",
    "TPUSH", "TPipe", "TSYNC",
    "Tile", "TileSplitAxis", "TileType", "VecCubeRatio", "aic_initialize_pipe",
    "aiv_initialize_pipe", "bfloat16", "compare", "current_core", "float16", "float32",
    "float4_e2m1", "float8_e4m3", "float8_e5m2", "float8_e8m0", "get_block_idx", "get_block_num", "get_subblockdim", "get_subblockid", "gm_buffer", "half", "int16",
    "int32", "int64", "int8", "is_cube", "platform_id", "run", "uint32", "uint8",
]
