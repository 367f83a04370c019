"""A tile popped from one pipe and then from another is staged by the second.

The tile's address came from the first pipe's staging ring, so it is not the user's to
place: the second TPOP stages it in its own ring.  Before, it loaded the data at the first
pipe's staging slot and kept that slot's binding - the first pipe's TFREE then made the
tile look freed: a false use-after-free at the next read, on A2A3 under the spec protocol.
"""
import numpy as np
import pytest

import ptopipe
from ptopipe.isa import *  # noqa: F403

T, N = 16, 32
SLOT = T * N * 4


def _pipes(fa, fb):
    return (TPipe(0, DIR_C2V, SLOT, 2)(fa, 0x10000, 0), TPipe(4, DIR_C2V, SLOT, 3)(fb, 0x14000, 0))


def cube(x, eye, fa, fb, n):
    pa, pb = _pipes(fa, fb)
    e1 = Tile(TileType.Mat, float32, T, T, addr=0)
    x1 = Tile(TileType.Mat, float32, T, N, addr=0x1000)
    e0 = Tile(TileType.Left, float32, T, T, addr=0)
    x0 = Tile(TileType.Right, float32, T, N, addr=0)
    acc = Tile(TileType.Acc, float32, T, N, addr=0)
    TLOAD(e1, eye)
    TMOV(e0, e1)
    for i in range(n):
        TLOAD(x1, GlobalTensor(x.data() + i * T * N, (T, N)))
        TMOV(x0, x1)
        TMATMUL(acc, e0, x0)
        TPUSH(pa if i % 3 == 0 else pb, acc, TILE_UP_DOWN)


def vector(out, fa, fb, n):
    pa, pb = _pipes(fa, fb)
    sub = get_subblockid()
    h = T // 2
    p = Tile(TileType.Vec, float32, h, N)             # one tile for both pipes
    o = Tile(TileType.Vec, float32, h, N, addr=0)
    for i in range(n):
        if i % 3 == 0:
            TPOP(pa, p, TILE_UP_DOWN)
            TRELU(o, p)
            TFREE(pa)
        else:
            TPOP(pb, p, TILE_UP_DOWN)
            TNEG(o, p)
            TFREE(pb)
        TSTORE(GlobalTensor(out.data() + (i * T + sub * h) * N, (h, N)), o)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a_tile_popped_from_two_pipes_in_turn(platform, protocol, no_hang):
    n = 10
    x = np.random.default_rng(8).integers(-9, 9, (n * T, N)).astype(np.float32)
    args = dict(x=x, eye=np.eye(T, dtype=np.float32), out=np.zeros_like(x),
                fa=ptopipe.gm_buffer(2 * SLOT), fb=ptopipe.gm_buffer(3 * SLOT), n=n)
    res = ptopipe.run(cube, vector, args, platform=platform, protocol=protocol)
    want = x.reshape(n, T, N).copy()
    for i in range(n):
        want[i] = np.maximum(want[i], 0) if i % 3 == 0 else -want[i]
    assert np.array_equal(res.outputs["out"], want.reshape(n * T, N))
