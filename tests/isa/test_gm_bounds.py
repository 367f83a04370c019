"""A tile move through a pointer derived from a run argument stays within that argument: an
off-by-one loop walking past ``a`` into the next tensor in GM is a
MemoryConflictError at its line, before any byte moves - not a silent read of another
argument or a write over it.  Pointer arithmetic, casts and views inside the argument stay
clean, and a pointer made from an integer address is not bounded."""
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import KernelError, MemoryConflictError
from ptopipe.isa import *  # noqa: F403
from markers import line_of

T = 16


def _kernels(extra_in, extra_out):
    def cube(a, tiles):
        pass

    def vector(a, out, sentinel, tiles):
        t = Tile(TileType.Vec, float32, T // 2, T, addr=0)
        sub = get_subblockid()
        n = tiles + (extra_in if sub == 0 else 0)
        for i in range(n):
            src = GlobalTensor(a.data() + (i * T + sub * T // 2) * T, (T // 2, T))
            TLOAD(t, src)                                           # LOAD
            k = i + (extra_out if sub == 1 else 0)
            TSTORE(GlobalTensor(out.data() + (k * T + sub * T // 2) * T, (T // 2, T)), t)  # STORE
    return cube, (vector, vector)


def _args(tiles):
    rng = np.random.default_rng(tiles)
    return dict(a=rng.integers(-9, 9, (tiles * T, T)).astype(np.float32),
                out=np.zeros((tiles * T, T), np.float32), sentinel=np.full((64, T), 7, np.float32),
                tiles=tiles)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("checks", [True, False])
def test_in_bounds_copy_is_clean(platform, checks):
    cube, aiv = _kernels(0, 0)
    args = _args(3)
    res = ptopipe.run(cube, aiv, args, platform=platform, checks=checks)
    assert np.array_equal(res.outputs["out"], args["a"])


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("extra_in,extra_out,marker,name", [(1, 0, "LOAD", "a"), (0, 1, "STORE", "out")])
def test_an_off_by_one_loop_leaving_its_argument_is_reported_at_its_line(platform, extra_in, extra_out,
                                                                         marker, name):
    cube, aiv = _kernels(extra_in, extra_out)
    args = _args(3)
    with pytest.raises(MemoryConflictError) as ei:
        ptopipe.run(cube, aiv, args, platform=platform)
    e = ei.value
    assert e.where.endswith(f":{line_of(_kernels, marker)}"), e.where
    assert f"outside argument '{name}'" in e.what and "access out of bounds" in e.what
    assert f"{name}.data()" in e.fix
    # lane 0's fourth load of a 48x16 'a' / lane 1's third store one tile ahead in 'out'
    assert ("elements 768 to 895 of 768" if name == "a" else "elements 896 to 1023 of 768") in e.what


def test_casts_and_subtraction_keep_the_bounds():
    def cube(a):
        pass

    def vector(a, out):
        t = Tile(TileType.Vec, float32, 1, T, addr=0)
        p = (a.data().cast(uint8) + 4 * T * 8).cast(float32) - T    # row 7
        TLOAD(t, GlobalTensor(p, (1, T)))
        TSTORE(GlobalTensor(out.data(), (1, T)), t)
        TLOAD(t, GlobalTensor(p + 2 * T, (1, T)))                   # row 9 of 8: out     # PAST
        TSTORE(GlobalTensor(out.data(), (1, T)), t)

    a = np.arange(8 * T, dtype=np.float32).reshape(8, T)
    with pytest.raises(MemoryConflictError) as ei:
        ptopipe.run(cube, (vector, None), dict(a=a, out=np.zeros((1, T), np.float32)))
    assert ei.value.where.endswith(f":{line_of(test_casts_and_subtraction_keep_the_bounds, 'PAST')}")
    assert "outside argument 'a'" in ei.value.what


@pytest.mark.parametrize("offset", [0.5, "8"])
def test_a_pointer_offset_that_is_no_whole_number_is_an_error_at_its_line(offset):
    def cube(a):
        pass

    def vector(a, out):
        t = Tile(TileType.Vec, float32, 1, T, addr=0)
        TLOAD(t, GlobalTensor(a.data() + T * 3 / 2, (1, T)))        # an integral float is a count
        TSTORE(GlobalTensor(out.data(), (1, T)), t)
        TLOAD(t, GlobalTensor(a.data() + offset, (1, T)))           # OFFSET

    a = np.arange(8 * T, dtype=np.float32).reshape(8, T)
    with pytest.raises(KernelError) as ei:
        ptopipe.run(cube, (vector, None), dict(a=a, out=np.zeros((1, T), np.float32)))
    e = ei.value
    assert e.where.endswith(f":{line_of(test_a_pointer_offset_that_is_no_whole_number_is_an_error_at_its_line, 'OFFSET')}")
    assert "whole number of elements" in e.what and repr(offset) in e.what
