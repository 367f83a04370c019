"""An accumulating matmul (TMATMUL_ACC, TGEMV_ACC) onto Acc bytes no instruction of the launch
wrote: L0C is not cleared at a launch, so on the device it holds what the last kernel left,
while the simulator's zeros (or a relaunch's carried L0C) make the numbers look right.  With the
checkers on it is a KernelError at the instruction; a K loop that starts with TMATMUL is clean,
also relaunched, and with the checkers off nothing is checked."""
from __future__ import annotations

import numpy as np
import pytest

import ptopipe
from ptopipe import KernelError
from ptopipe.isa import *  # noqa: F403
from markers import line_of

N, NK = 16, 3
RNG = np.random.default_rng(7)
A = RNG.integers(-3, 4, (N, NK * N)).astype(np.float32)
B = RNG.integers(-3, 4, (NK * N, N)).astype(np.float32)


def k_loop(a, b, out, first):
    """out = a @ b over NK steps; ``first`` names the op of step 0 ("mm", "acc", "alias")."""
    am = Tile(TileType.Mat, float32, N, N, addr=0)
    bm = Tile(TileType.Mat, float32, N, N, addr=0x1000)
    left = Tile(TileType.Left, float32, N, N, addr=0)
    right = Tile(TileType.Right, float32, N, N, addr=0)
    acc = Tile(TileType.Acc, float32, N, N, addr=0x400)
    for k in range(NK):
        TLOAD(am, GlobalTensor(a.data() + k * N, (N, N), (NK * N, 1)))
        TLOAD(bm, GlobalTensor(b.data() + k * N * N, (N, N), (N, 1)))
        TMOV(left, am)
        TMOV(right, bm)
        if k == 0 and first == "mm":
            TMATMUL(acc, left, right)
        elif k == 0 and first == "alias":           # another tile over the same L0C bytes
            TMATMUL(Tile(TileType.Acc, float32, N, N, addr=0x400), left, right)
        elif k == 0 and first == "gemv":
            row, row_left = Tile(TileType.Acc, float32, 1, N, addr=0x400), Tile(TileType.Left, float32, 1, N, addr=0)
            TGEMV_ACC(row, row, row_left, right)    # GEMV-ACC
        else:
            TMATMUL_ACC(acc, acc, left, right)      # ACC
    TSTORE(out, acc)


def _run(first, **kw):
    return ptopipe.run(lambda a, b, out: k_loop(a, b, out, first), None,
                       dict(a=A, b=B, out=np.zeros((N, N), np.float32)), **kw)


@pytest.mark.parametrize("first, marker, op", [("acc", "ACC", "TMATMUL_ACC"), ("gemv", "GEMV-ACC", "TGEMV_ACC")])
def test_accumulating_onto_unwritten_acc_is_an_error_at_its_line(first, marker, op):
    with pytest.raises(KernelError) as ei:
        _run(first)
    e = ei.value
    assert e.what.startswith(f"{op} accumulates onto Acc tile float32") and "no instruction of this launch wrote" \
        in e.what, e.what
    assert e.where.endswith(f"test_acc_written.py:{line_of(k_loop, marker)}"), e.where
    assert e.fix.startswith(f"start the accumulation with {op[:-4]} (or {op[:-4]}_BIAS)"), e.fix


@pytest.mark.parametrize("first", ["mm", "alias"])
def test_a_k_loop_that_starts_with_tmatmul_is_clean_also_relaunched(first):
    for launches in (1, 2):
        np.testing.assert_array_equal(_run(first, launches=launches).outputs["out"], A @ B)


def test_the_checkers_off_run_does_not_look():
    np.testing.assert_array_equal(_run("acc", checks=False).outputs["out"], A @ B)   # zeros: looks right
