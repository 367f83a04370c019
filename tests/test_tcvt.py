"""TCVT converts as the vector unit does (fresh8 x12): a float becomes an integer rounded by
pto-isa's RoundMode (default CAST_RINT, ties to even) and saturated to the integer's range,
NaN as 0 - not numpy's truncating, wrapping cast.  Checked against plain numpy on both
platforms; CAST_ODD and non-RINT float narrowing are reported at their line."""
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import KernelError
from ptopipe.isa import *  # noqa: F403
from markers import line_of

X = np.array([[300, -300, 2.5, 3.5, -2.5, -3.5, 127.6, -128.6, 0.5, -0.5, 1.49, -1.5,
               70000, 1e10, -1e10, np.nan, np.inf, -np.inf] + [0.25] * 14], np.float32)
ROUND = {RoundMode.CAST_RINT: np.rint, RoundMode.CAST_FLOOR: np.floor, RoundMode.CAST_CEIL: np.ceil,
         RoundMode.CAST_TRUNC: np.trunc, RoundMode.CAST_NONE: np.trunc,
         RoundMode.CAST_ROUND: lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5)}


def _want(x, mode, dt):
    info = np.iinfo(dt)
    return np.clip(np.nan_to_num(ROUND[mode](x.astype(np.float64)), nan=0.0), info.min, info.max).astype(dt)


def _run(mode, dt, platform="a2a3"):
    def vec(x, out):
        a = Tile(TileType.Vec, float32, 1, 32, addr=0)
        b = Tile(TileType.Vec, dt, 1, 32, addr=0x200)
        e = TLOAD(a, x)
        if mode is None:
            TCVT(b, a, e)                       # no mode, an event: CAST_RINT after the load
        else:
            TCVT(b, a, mode)
        TSTORE(out, b)
    res = ptopipe.run(None, (vec, None), dict(x=X, out=np.zeros((1, 32), dt)), platform=platform)
    return res.outputs["out"]


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32])
@pytest.mark.parametrize("mode", [None] + list(ROUND))
def test_float_to_int_rounds_and_saturates(mode, dt, platform):
    got = _run(mode, dt, platform)
    np.testing.assert_array_equal(got, _want(X, mode or RoundMode.CAST_RINT, dt))


def test_rint_is_ties_to_even_and_round_is_ties_away():
    assert list(_run(RoundMode.CAST_RINT, np.int32)[0, 2:6]) == [2, 4, -2, -4]
    assert list(_run(RoundMode.CAST_ROUND, np.int32)[0, 2:6]) == [3, 4, -3, -4]
    assert list(_run(None, np.int8)[0, [0, 1, 13, 15]]) == [127, -128, 127, 0]   # saturated, NaN 0


def test_unmodelled_modes_are_reported_at_their_line():
    def vec(x, out):
        a = Tile(TileType.Vec, float32, 1, 32, addr=0)
        b = Tile(TileType.Vec, int32, 1, 32, addr=0x200)
        h = Tile(TileType.Vec, float16, 1, 32, addr=0x400)
        TLOAD(a, x)
        TCVT(h, a)                                      # float narrowing: CAST_RINT, fine
        if out.GetShape(3) == 1:
            TCVT(b, a, RoundMode.CAST_ODD)              # ODD
        TCVT(h, a, RoundMode.CAST_FLOOR)                # FLOOR16
    for rows, marker, text in ((1, "ODD", "CAST_ODD is not modelled"),
                               (2, "FLOOR16", "only CAST_RINT is modelled between float types")):
        with pytest.raises(KernelError) as ei:
            ptopipe.run(None, (vec, None), dict(x=X, out=np.zeros((rows, 32), np.int32)))
        assert text in ei.value.what and ei.value.fix
        assert ei.value.where.endswith(f":{line_of(vec, marker)}"), ei.value.where
