"""A split transfer's whole tile (the Cube's: C2V TPUSH, V2C TPOP) must halve between the two
Vector cores: an odd valid extent on the split axis - a 15-row tail tile
under TILE_UP_DOWN, a 1-row tile - is reported at the Cube's instruction, not as a
consumer/producer shape mismatch at a TPOP that looks identical."""
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import ProtocolError
from ptopipe.isa import *  # noqa: F403
from markers import line_of

T, N = 16, 32
SLOT = T * N * 4


def c2v(vrows):
    def cube(x, fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, 0x8000, 0)
        m = Tile(TileType.Mat, float32, T, N, addr=0, valid_rows=vrows)
        r = Tile(TileType.Right, float32, N, N, addr=0)
        a = Tile(TileType.Left, float32, T, N, addr=0, valid_rows=vrows)
        acc = Tile(TileType.Acc, float32, T, N, addr=0, valid_rows=vrows)
        TLOAD(m, GlobalTensor(x.data(), (vrows, N)))
        TMOV(a, m)
        TMATMUL(acc, a, r)
        TPUSH(pipe, acc, TILE_UP_DOWN)                      # PUSH

    def vector(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, 0x8000, 0)
        p = Tile(TileType.Vec, float32, T // 2, N, valid_rows=vrows // 2)
        TPOP(pipe, p, TILE_UP_DOWN)
        TFREE(pipe)
    return cube, vector


def v2c(vcols):
    def cube(fifo):
        pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, 0x20000)
        m = Tile(TileType.Mat, float32, T, N, valid_cols=vcols)
        TPOP(pipe, m, TILE_LEFT_RIGHT)                      # POP
        TFREE(pipe)

    def vector(fifo):
        pipe = TPipe(0, DIR_V2C, SLOT, 2)(fifo, 0, 0x20000)
        h = Tile(TileType.Vec, float32, T, N // 2, addr=0, valid_cols=vcols // 2)
        TPUSH(pipe, h, TILE_LEFT_RIGHT)
    return cube, vector


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("make,n,marker,word", [(c2v, 15, "PUSH", "rows"), (c2v, 1, "PUSH", "rows"),
                                                 (v2c, 31, "POP", "columns")])
def test_an_odd_extent_on_the_split_axis(make, n, marker, word, platform, no_hang):
    cube, vector = make(n)
    args = dict(x=np.ones((T, N), np.float32), fifo=ptopipe.gm_buffer(2 * SLOT))
    if make is v2c:
        args.pop("x")
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, vector, args, platform=platform)
    assert f"its {n} valid {word} do not halve between the two Vector cores" in ei.value.what
    assert ei.value.where.endswith(f":{line_of(make, marker)}"), ei.value.where


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_an_even_tail_tile_passes(platform):
    cube, vector = c2v(14)
    ptopipe.run(cube, vector, dict(x=np.ones((T, N), np.float32), fifo=ptopipe.gm_buffer(2 * SLOT)),
                platform=platform)
