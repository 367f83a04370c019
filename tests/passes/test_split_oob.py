"""An out-of-bounds GM access of a split mixed kernel is reported in the coordinates of the
mixed function as written (its offsets and window at its DSL line), naming the Vector core
whose half went out and that half's own offsets: by VerifyPipes before the run (a
CompileError), and in the same words by the run itself (a MemoryConflictError)."""
import numpy as np
import pytest

import ptopipe.language as pl
from ptopipe.errors import CompileError, MemoryConflictError
from ptopipe.passes.manager import CANONICAL_ORDER, compile_program
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import run
from markers import line_of

M, K, N = 32, 32, 32


def kernel(split, row0, col0, store):
    """Adds bias[row0:row0+16, col0:col0+32] (a load) to A@B and stores it at (row0, col0)
    when ``store``, else at (0, 0)."""
    @pl.incore(split=split)
    def k(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
          bias: pl.Tensor[[M, N], pl.f32], out: pl.Tensor[[M, N], pl.f32]):
        b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        a0 = pl.move(pl.load(a, [0, 0], [16, K], space=pl.Mat), space=pl.Left)
        s = pl.move(pl.matmul(a0, b0), space=pl.Vec)
        if store:
            bv = pl.load(bias, [0, 0], [16, N])
            pl.store(pl.add(s, bv), [row0, col0], out)                          # STORE
        else:
            bv = pl.load(bias, [row0, col0], [16, N])                           # LOAD
            pl.store(pl.add(s, bv), [0, 0], out)
    return k


def _run(fn, platform):
    """The run's error (its compile without VerifyPipes), after checking VerifyPipes reports
    the same before running."""
    prog = pl.program(fn, name="oob")
    args = dict(a=np.ones((M, K), np.float32), b=np.ones((K, N), np.float32),
                bias=np.ones((M, N), np.float32), out=np.zeros((M, N), np.float32))
    with pytest.raises(CompileError) as static:
        run(prog, with_slot_buffer(prog, args), platform=platform)
    no_verify = [n for n in CANONICAL_ORDER if n != "verify-pipes"]
    with pytest.raises(MemoryConflictError) as ei:
        run(prog, with_slot_buffer(prog, args), platform=platform,
            compiler=lambda p, plat, protocol="spec": compile_program(p, plat, no_verify, protocol=protocol))
    e = ei.value
    assert (static.value.what, static.value.details) == (e.what, e.details)
    assert static.value.where.split(":")[-2:] == e.where.split(":")[-2:]      # the same line:col
    return e


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_up_down_load_only_lane1_out(platform):
    """Rows 24..40 of a 32-row tensor: AIV0's half [24, 32) fits, AIV1's [32, 40) does not."""
    e = _run(kernel(pl.TILE_UP_DOWN, 24, 0, False), platform)
    assert e.what == "access out of bounds: offsets [24, 0] + window [16, 32] exceed 'bias' of shape [32, 32]"
    assert e.details == ("split TILE_UP_DOWN: Vector core AIV1 moves its half, rows [32, 40) "
                         "(offsets [32, 0] + window [8, 32])")
    assert e.where.split(":")[-2] == str(line_of(kernel, "LOAD"))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_left_right_store_out(platform):
    """Columns 8..40 of a 32-column tensor under LEFT_RIGHT: AIV1's half [24, 40) is out."""
    e = _run(kernel(pl.TILE_LEFT_RIGHT, 0, 8, True), platform)
    assert e.what == "access out of bounds: offsets [0, 8] + window [16, 32] exceed 'out' of shape [32, 32]"
    assert e.details == ("split TILE_LEFT_RIGHT: Vector core AIV1 moves its half, columns [24, 40) "
                         "(offsets [0, 24] + window [16, 16])")
    assert e.where.split(":")[-2] == str(line_of(kernel, "STORE"))


def test_hand_written_kernels_keep_their_own_offsets():
    """A kernel nobody split reports its own offsets (no lane, no details)."""
    from ptopipe.runtime.interp import _out_of_bounds
    e = _out_of_bounds("x", (4, 4), [3, 0], [2, 4], None, "f.py:1:1")
    assert e.what == "access out of bounds: offsets [3, 0] + window [2, 4] exceed 'x' of shape [4, 4]"
    assert e.details is None
