"""Two Vector lanes storing identical bytes with no order between them: the same tile in the
same iteration is work done twice - a warning whose advice fits the front end (the ISA's
get_subblockid(), the DSL's pl.get_subblockid() or a split); the windows of different
iterations overlapping (a tail window clamped into the tensor, the README's
``pl.min(i * TM, M - TM)``, split UP_DOWN) is no warning at all, so ``check --werror`` passes."""
from __future__ import annotations

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.driver.check import fails_under_werror
from ptopipe.isa import TLOAD, TSTORE, GlobalTensor, Tile, TileType, float32, get_subblockid
from ptopipe.isa.explore import explore
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import KernelSet
from ptopipe.runtime import run as dsl_run

R, C = 8, 16


def _twice(res) -> list:
    return [(w, at) for w, at in res.summary.leaks if "store identical data" in w]


def _isa_vector(shift: int):
    """Each lane stores, in iteration i, rows (i + shift * lane) * R of x into the same rows of
    out: shift 0 - both lanes the same rows in the same iteration; shift 1 - lane 1's 1st store
    and lane 0's 2nd store the same rows."""
    def vector(x, out):
        sub = get_subblockid()
        t = Tile(TileType.Vec, float32, R, C, addr=0)
        for i in range(2):
            r0 = (i + shift * sub) * R
            TLOAD(t, GlobalTensor(x.data() + r0 * C, (R, C)))
            TSTORE(GlobalTensor(out.data() + r0 * C, (R, C)), t)            # the store
    return vector


def _isa_args():
    x = np.arange(3 * R * C, dtype=np.float32).reshape(3 * R, C)
    return x, dict(x=x, out=np.zeros_like(x))


def test_both_lanes_storing_the_same_tile_is_work_done_twice_with_the_isa_advice():
    x, args = _isa_args()
    res = ptopipe.run(None, _isa_vector(0), args)
    np.testing.assert_array_equal(res.outputs["out"][:2 * R], x[:2 * R])
    (w, _), = _twice(res)
    assert w.endswith("but the work is done twice - let one core store it (e.g. under get_subblockid() == 0; or, "
                      "for a Vector kernel whose work is not split between the lanes, run it on AIV0 alone: "
                      "aiv=(kernel, None))"), w


def test_overlapping_windows_of_different_iterations_are_no_warning():
    x, args = _isa_args()
    res = ptopipe.run(None, _isa_vector(1), args)
    np.testing.assert_array_equal(res.outputs["out"], x)
    assert _twice(res) == []


@pl.aiv
def both_lanes_store(x: pl.Tensor[[R, C], pl.f32], out: pl.Tensor[[R, C], pl.f32]):
    t = pl.load(x, [0, 0], [R, C])
    pl.store(t, [0, 0], out)


@pl.aic
def cube_beside(x: pl.Tensor[[R, C], pl.f32]):
    pass


def test_the_dsl_advice_is_what_a_dsl_kernel_can_write():
    # (a Cube kernel beside it: both Vector cores run it - alone it is a Vector-only launch, AIV0's)
    x = np.arange(R * C, dtype=np.float32).reshape(R, C)
    res = dsl_run(pl.program(cube_beside, both_lanes_store, name="both"), dict(x=x, out=np.zeros_like(x)))
    (w, _), = _twice(res)
    assert "under `if pl.get_subblockid() == 0:` in an @pl.aiv function" in w, w
    assert "in a mixed @pl.incore function, give it a split (split=pl.TILE_UP_DOWN or pl.TILE_LEFT_RIGHT)" in w
    assert "e.g. under get_subblockid() == 0;" not in w and "aiv=(kernel, None)" not in w


M, TM, N = 24, 16, 16
T = (M + TM - 1) // TM


def _clamped(split):
    @pl.incore(split=split, slot_num=1)
    def clamped(a: pl.Tensor[[M, N], pl.f32], b: pl.Tensor[[N, N], pl.f32], out: pl.Tensor[[M, N], pl.f32]):
        b0 = pl.move(pl.load(b, [0, 0], [N, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(T):
            r0 = pl.min(i * TM, M - TM)                  # the last window: rows 8..23, over rows 8..15
            a0 = pl.move(pl.load(a, [r0, 0], [TM, N], space=pl.Mat), space=pl.Left)
            y = pl.move(pl.matmul(a0, b0), space=pl.Vec)
            pl.store(pl.adds(y, 1.0), [r0, 0], out)
    return pl.program(clamped, name="clamped")


@pytest.mark.parametrize("split", [pl.TILE_UP_DOWN, pl.TILE_LEFT_RIGHT], ids=["up_down", "left_right"])
def test_the_readme_clamped_tail_window_passes_check_werror(split):
    ks = KernelSet(_clamped)
    rng = np.random.default_rng(1)
    a, b = rng.integers(-3, 4, (M, N)).astype(np.float32), rng.integers(-3, 4, (N, N)).astype(np.float32)
    args = with_slot_buffer(ks.source(split=split), dict(a=a, b=b, out=np.zeros((M, N), np.float32), split=split))
    res = explore((ks.aic, ks.aiv), schedules=3, args=args)
    assert res.ok, res.failures
    assert not fails_under_werror(res.warnings, True), res.warnings
