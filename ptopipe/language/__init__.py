"""language: the ``pl`` DSL (``import ptopipe.language as pl``).

Write kernels as Python functions decorated with ``@pl.aic`` (Cube), ``@pl.aiv`` (Vector)
or ``@pl.incore`` (mixed); the parser reads their source into the IR.  Seed 003's
constructs are here under their seed names: ``pl.reserve_buffer``,
``pl.import_peer_buffer``, ``pl.AUTO``, ``aic_initialize_pipe`` / ``aiv_initialize_pipe``,
``TPUSH`` / ``TPOP`` / ``TFREE`` (and ``TALLOC`` for the address flow).
"""
from ..errors import CompileError
from ..ir.types import MemorySpace
from .frontend import DSLFunction, aic, aiv, incore, parse, program
from .surface import (ATOMIC_ADD, AUTO, BF16, DIR_BOTH, DIR_BOTH_GM, DIR_C2V, DIR_C2V_GM, DIR_V2C, DIR_V2C_GM,
                      DN, FP16, FP32, INT8, INT32, LEFT_RIGHT, ND, NO_SPLIT, NZ, STUBS, TILE_LEFT_RIGHT,
                      TILE_NO_SPLIT, TILE_UP_DOWN, UP_DOWN, Acc, DType, Left, Mat, Right, Scalar,
                      Tensor, Tile, Vec, ZN, ZZ, bf16, bool_, f16, f32, i8, i16, i32, i64, index, u8, u32)

from .surface import CMP_MODES, EVENT_IDS, PIPES

globals().update(STUBS)
globals().update(PIPES)         # pl.PIPE_MTE2, ... pl.PIPE_ALL
globals().update(EVENT_IDS)     # pl.EVENT_ID0 .. pl.EVENT_ID7
globals().update(CMP_MODES)     # pl.CMP_EQ .. pl.CMP_GE
globals()["bool"] = bool_     # printed as pl.bool

__all__ = ["ATOMIC_ADD", "AUTO", "Acc", "BF16", "CompileError", "DIR_BOTH", "DIR_BOTH_GM", "DIR_C2V", "DIR_C2V_GM",
           "DIR_V2C", "DIR_V2C_GM", "DN", "DSLFunction", "DType", "FP16", "FP32", "INT32", "INT8",
           "LEFT_RIGHT", "Left", "Mat", "MemorySpace", "ND", "NO_SPLIT", "NZ", "Right", "Scalar",
           "TILE_LEFT_RIGHT", "TILE_NO_SPLIT", "TILE_UP_DOWN", "Tensor", "Tile", "UP_DOWN", "Vec", "ZN", "ZZ",
           "aic", "aiv", "bf16", "bool_", "f16", "f32", "i16", "i32", "i64", "i8", "incore",
           "index", "parse", "program", "u32", "u8"] + sorted(STUBS) + sorted(PIPES) + sorted(EVENT_IDS) + sorted(CMP_MODES)
