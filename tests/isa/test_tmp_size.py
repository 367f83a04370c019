"""A scratch ``tmp`` tile smaller than pto-isa's A2A3 code writes (catalogue.TMP_MINIMUM: TCVT's
non-saturating narrowings, the float row reductions, TREM / TREMS) is a KernelError at the
instruction naming the size it needs; the same tile at that size runs (checked against
numpy), and on A5, whose code leaves these tmps alone, the small one runs too.  The DSL's
scratch for pl.rem is as wide as pto-isa's TREM asks."""
from __future__ import annotations

import numpy as np
import pytest

import ptopipe
from ptopipe.errors import KernelError
from ptopipe.ir.ops import scratch_type
from ptopipe.ir.types import MemorySpace, TileValueType
from ptopipe.isa import *  # noqa: F403
from markers import line_of

X = (np.arange(8 * 200, dtype=np.float32).reshape(8, 200) % 97 - 40) * 0.75
Y = np.full((8, 64), 7.0, np.float32)


def _kernel(op, tmp_rows, tmp_cols, tmp_dtype):
    def k(x, y, o):
        if op == "TCVT":
            a = Tile(TileType.Vec, float32, 8, 64, addr=0x0)
            d = Tile(TileType.Vec, int16, 8, 64, addr=0x800)
            t = Tile(TileType.Vec, tmp_dtype, tmp_rows, tmp_cols, addr=0x2000)
            TLOAD(a, GlobalTensor(x.data(), (8, 64), (200, 1)))
            TCVT(d, a, t, RoundMode.CAST_RINT, SaturationMode.OFF)  # TCVT op
        elif op == "TROWSUM":
            a = Tile(TileType.Vec, float32, 8, 200, addr=0x0)
            d = Tile(TileType.Vec, float32, 8, 8, BLayout.ColMajor, 8, 1, addr=0x2000)
            t = Tile(TileType.Vec, tmp_dtype, tmp_rows, tmp_cols, addr=0x2400)
            TLOAD(a, x)
            TROWSUM(d, a, t)  # TROWSUM op
        else:
            a = Tile(TileType.Vec, float32, 8, 64, addr=0x0)
            b = Tile(TileType.Vec, float32, 8, 64, addr=0x800)
            d = Tile(TileType.Vec, float32, 8, 64, addr=0x1000)
            t = Tile(TileType.Vec, tmp_dtype, tmp_rows, tmp_cols, addr=0x2000)
            TLOAD(a, GlobalTensor(x.data(), (8, 64), (200, 1)))
            TLOAD(b, y)
            TREM(d, a, b, t)  # TREM op
        TSTORE(o, d)
    return k


_OUT = {"TCVT": ((8, 64), np.int16), "TROWSUM": ((8, 1), np.float32), "TREM": ((8, 64), np.float32)}


def _run(op, small, platform):
    shape, dtype = _OUT[op]
    k = _kernel(op, *small)
    res = ptopipe.run(aiv=(k, None), args=dict(x=X, y=Y, o=np.zeros(shape, dtype)), platform=platform)
    return k, res.outputs["o"]


def _want(op):
    x = X[:, :64].astype(np.float64)
    if op == "TCVT":
        return np.rint(x).astype(np.int64).astype(np.int16)
    if op == "TROWSUM":
        return X.sum(axis=1, dtype=np.float64)[:, None]
    return np.fmod(x, 7.0) + np.where(np.fmod(x, 7.0) < 0, 7.0, 0.0)


#: op -> (the small tmp, the text of its need, a tmp of the needed size)
CASES = {"TCVT": ((1, 8, int32), "writes 256 bytes of int32 steps into tmp, which has 32", (1, 64, int32)),
         "TROWSUM": ((1, 8, float32), "8 rows of at least 64 float32, not 1x8", (8, 64, float32)),
         "TREM": ((1, 8, float32), "needs 66 valid tmp columns for a 64-column dst", (1, 72, float32))}


@pytest.mark.parametrize("op", list(CASES))
def test_a_tmp_smaller_than_a2a3_writes_is_an_error_at_the_op(op):
    small, need, big = CASES[op]
    with pytest.raises(KernelError) as ei:
        _run(op, small, "a2a3")
    e = ei.value
    assert e.what.startswith(f"{op}'s tmp") and "is too small" in e.what and need in e.what, e.what
    assert e.where.endswith(f":{line_of(_kernel(op, *small), f'{op} op')}"), e.where
    assert "the device writes past a smaller tmp" in e.fix
    np.testing.assert_allclose(_run(op, big, "a2a3")[1], _want(op), rtol=1e-6)
    np.testing.assert_allclose(_run(op, small, "a5")[1], _want(op), rtol=1e-6)      # A5: tmp unused


def test_the_dsl_scratch_of_rem_is_as_wide_as_pto_isa_asks():
    """TREM's mask follows a row in tmp: 64 + 2 columns, whole 32-byte rows (72 f32)."""
    src = TileValueType((8, 64), "f32", MemorySpace.Vec)
    assert scratch_type("rem", src).shape == (8, 72)
    assert scratch_type("row_sum", src) == src
