"""The dtype rules of pto-isa's NPU headers that name integer and uint16 / uint64 tiles:
integer division (TDIV on A5, TDIVS and TRECIP on both platforms) truncates toward zero as
C's ``/`` does, uint16 / uint64 element-wise ops run on A5, and a refusal names the
platform that takes the dtype."""
from __future__ import annotations

import numpy as np
import pytest

import ptopipe
from ptopipe import KernelError
from ptopipe.isa import *  # noqa: F403

U16, U64 = np.dtype(np.uint16), np.dtype(np.uint64)


def run_aiv(fn, platform, **args):
    return ptopipe.run(aiv=(fn, None), args=args, platform=platform).outputs


def trunc_div(a, b):
    """C's integer ``/`` (toward zero), in Python integers."""
    return np.array([abs(int(x)) // abs(int(y)) * (1 if (x < 0) == (y < 0) else -1)
                     for x, y in zip(np.ravel(a), np.ravel(b))], dtype=object).reshape(np.shape(a))


def _unary_kernel(dtype, body):
    def k(out, x):
        s = Tile(TileType.Vec, dtype, 4, 16, addr=0x0)
        d = Tile(TileType.Vec, dtype, 4, 16, addr=0x400)
        TLOAD(s, GlobalTensor(x.data(), (4, 16)))
        body(d, s)
        TSTORE(GlobalTensor(out.data(), (4, 16)), d)
    return k


_X = np.array([7, -7, 9, -9, 1, -1, 0, 100, -100, 32767, -32768, 5, -5, 3, -3, 2] * 4,
              np.int32).reshape(4, 16)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_int_tdivs_and_trecip_truncate_toward_zero(platform):
    nonzero = np.where(_X == 0, 1, _X).astype(np.int32)
    cases = ((lambda d, s: TDIVS(d, s, 2), _X, trunc_div(_X, np.full_like(_X, 2))),
             (lambda d, s: TDIVS(d, -3, s), nonzero, trunc_div(np.full_like(_X, -3), nonzero)),  # -3 / x
             (lambda d, s: TRECIP(d, s), nonzero, trunc_div(np.ones_like(_X), nonzero)))
    for body, src, want in cases:
        out = run_aiv(_unary_kernel(np.int32, body), platform, out=np.zeros_like(src), x=src)["out"]
        assert (out.astype(object) == want).all(), (platform, out, want)


def test_int_tdiv_on_a5_is_exact_for_int64():
    a = np.array([2**62 + 1, -(2**62) - 3, 10**18 + 7, -7, 7, 9007199254740993, -9, 5], np.int64).reshape(1, 8)
    b = np.array([3, 7, -(10**9) - 9, 2, -2, 2, 4, -5], np.int64).reshape(1, 8)

    def k(out, x, y):
        ta, tb, td = (Tile(TileType.Vec, np.int64, 1, 8, addr=o) for o in (0x0, 0x100, 0x200))
        TLOAD(ta, GlobalTensor(x.data(), (1, 8)))
        TLOAD(tb, GlobalTensor(y.data(), (1, 8)))
        TDIV(td, ta, tb)
        TSTORE(GlobalTensor(out.data(), (1, 8)), td)
    out = run_aiv(k, "a5", out=np.zeros_like(a), x=a, y=b)["out"]
    assert (out.astype(object) == trunc_div(a, b)).all()


def test_int_tdiv_on_a2a3_is_refused_naming_a5():
    def k():
        t = Tile(TileType.Vec, np.int32, 4, 16, addr=0x0)
        TEXPANDS(t, 6)
        TDIV(t, t, t)
    with pytest.raises(KernelError) as ei:
        run_aiv(k, "a2a3")
    assert ei.value.what.startswith("TDIV takes f16, f32 tiles on A2A3, not int32"), ei.value.what
    assert "(A5 takes int32)" in ei.value.fix


def test_uint16_elementwise_runs_on_a5_and_wraps():
    x = (np.arange(64, dtype=np.uint16) * 1000).reshape(4, 16)

    def body(d, s):
        TMULS(d, s, 3)
        TADD(d, d, s)
    out = run_aiv(_unary_kernel(U16, body), "a5", out=np.zeros_like(x), x=x)["out"]
    assert out.dtype == U16 and (out == (x * np.uint16(3) + x)).all()
    with pytest.raises(KernelError) as ei:
        run_aiv(_unary_kernel(U16, body), "a2a3", out=np.zeros_like(x), x=x)
    assert "not uint16" in ei.value.what and "(A5 takes uint16)" in ei.value.fix


def test_uint64_tmul_runs_on_a5():
    x = np.array([2**63 + 5, 3, 2**40, 7], np.uint64).reshape(1, 4)

    def k(out, a):
        s = Tile(TileType.Vec, U64, 1, 4, addr=0x0)
        d = Tile(TileType.Vec, U64, 1, 4, addr=0x100)
        TLOAD(s, GlobalTensor(a.data(), (1, 4)))
        TMUL(d, s, s)
        TSTORE(GlobalTensor(out.data(), (1, 4)), d)
    out = run_aiv(k, "a5", out=np.zeros_like(x), a=x)["out"]
    assert (out == x * x).all()
