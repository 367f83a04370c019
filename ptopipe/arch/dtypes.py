"""Element types, as numpy dtypes (bf16 and fp8 from ml_dtypes): the one dtype vocabulary
of every layer (isa tiles, IR types, the op catalogue)."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ..errors import ConfigError

float16 = half = np.dtype(np.float16)
float32 = np.dtype(np.float32)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
#: the MX formats (TMATMUL_MX): e8m0 block scales (pto-isa ``float8_e8m0_t``) and e2m1 fp4
#: values, one per byte as pto-isa's CPU model holds its ``float4_e2m1x2_t`` elements
float8_e8m0 = np.dtype(ml_dtypes.float8_e8m0fnu)
float4_e2m1 = np.dtype(ml_dtypes.float4_e2m1fn)
int8 = np.dtype(np.int8)
uint8 = np.dtype(np.uint8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
uint32 = np.dtype(np.uint32)
int64 = np.dtype(np.int64)

_BY_NAME = {
    "f16": float16, "half": float16, "float16": float16, "fp16": float16,
    "f32": float32, "float": float32, "float32": float32, "fp32": float32,
    "bf16": bfloat16, "bfloat16": bfloat16,
    "fp8_e4m3": float8_e4m3, "fp8_e5m2": float8_e5m2, "fp8_e8m0": float8_e8m0, "fp4_e2m1": float4_e2m1,
    "i8": int8, "int8": int8, "u8": uint8, "uint8": uint8, "i16": int16, "int16": int16,
    "i32": int32, "int32": int32, "u32": uint32, "uint32": uint32, "i64": int64, "int64": int64,
}


def as_dtype(d) -> np.dtype:
    """Accept a numpy dtype, a numpy scalar type, or a short name like ``"f16"``."""
    if isinstance(d, str) and d in _BY_NAME:
        return _BY_NAME[d]
    try:
        dt = np.dtype(d)
    except TypeError:
        dt = None
    if dt is None or not is_element_type(dt):
        raise ConfigError(f"unknown element type {d!r}",
                          fix="use a numpy dtype or one of: " + ", ".join(sorted(_BY_NAME)))
    return dt


def is_element_type(dt: np.dtype) -> bool:
    """A numeric type a tile or GM tensor can hold (not object / str / datetime / records)."""
    return dt.kind in "biufc" or dt.type.__module__.startswith("ml_dtypes")


_SHORT = {float16: "f16", float32: "f32", bfloat16: "bf16", float8_e4m3: "fp8_e4m3",
          float8_e5m2: "fp8_e5m2", float8_e8m0: "fp8_e8m0", float4_e2m1: "fp4_e2m1",
          int8: "i8", uint8: "u8", int16: "i16", int32: "i32",
          uint32: "u32", int64: "i64"}


def short_name(d) -> str:
    """The short (DSL) name of a dtype: ``float16`` -> ``"f16"``."""
    d = np.dtype(d)
    return _SHORT.get(d, d.name)


# the accumulator rule of matmuls is the op catalogue's (arch.catalogue.accum_dtype)
