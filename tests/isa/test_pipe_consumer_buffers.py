"""A TPipe's two consumer buffer addresses (pto-isa's ``TPipe(gm, c2vConsumerBuf,
v2cConsumerBuf)``): the one of a direction the pipe does not have is unused, so an address
given there - the V2C ring's L1 base passed as ``c2v_consumer_buf`` - leaves the ring at the
other argument.  A warning at the construction says which argument places the ring, and a
tile the misplaced ring then covers is reported with that fix."""
from __future__ import annotations

import os

import numpy as np
import pytest

import ptopipe
from ptopipe import MemoryConflictError
from ptopipe.isa import (DIR_C2V, DIR_V2C, TADD, TEXPANDS, TFREE, TILE_UP_DOWN, TLOAD, TMATMUL, TMOV, TMULS, TPOP,
                         TPUSH, TSTORE, GlobalTensor, TPipe, Tile, TileType, float32, get_subblockid)

from markers import line_of

M, K, N = 16, 16, 16
SLOT = M * K * 4
RING_L1 = 0x10000


def _kernels(c2v_buf: int, v2c_buf: int):
    """Each AIV loads its 8 rows of X and pushes them (V2C); the Cube pops the 16x16 tile into
    L1, multiplies it with W (loaded to L1 at 0) and stores the product."""
    def pipe(fifo):
        return TPipe(2, DIR_V2C, SLOT, 2)(fifo, c2v_buf, v2c_buf)          # CONSTRUCT

    def cube(w, out, fifo):
        p = pipe(fifo)
        w1 = Tile(TileType.Mat, float32, K, N, addr=0)
        w0, x0 = Tile(TileType.Right, float32, K, N, addr=0), Tile(TileType.Left, float32, M, K, addr=0)
        acc, x = Tile(TileType.Acc, float32, M, N, addr=0), Tile(TileType.Mat, float32, M, K)
        TLOAD(w1, w)
        TMOV(w0, w1)                                                      # READ-W
        TPOP(p, x, TILE_UP_DOWN)
        TMOV(x0, x)
        TFREE(p)
        TMATMUL(acc, x0, w0)
        TSTORE(out, acc)

    def vector(x, fifo):
        p = pipe(fifo)
        t = Tile(TileType.Vec, float32, M // 2, K, addr=0)
        TLOAD(t, GlobalTensor(x.data() + get_subblockid() * (M // 2) * K, (M // 2, K)))
        TPUSH(p, t, TILE_UP_DOWN)
    return pipe, cube, vector


def _args():
    rng = np.random.default_rng(3)
    return dict(x=rng.standard_normal((M, K)).astype(np.float32), w=rng.standard_normal((K, N)).astype(np.float32),
                out=np.zeros((M, N), np.float32), fifo=ptopipe.gm_buffer(2 * SLOT))


def _line(fn, marker):
    return os.path.basename(__file__), line_of(fn, marker)


def _at(where):
    path, line = where.rsplit(":", 1)
    return os.path.basename(path), int(line)


def test_the_unused_address_is_a_warning_at_the_construction_where_the_ring_is_in_gm():
    pipe, cube, vector = _kernels(RING_L1, 0)
    args = _args()
    res = ptopipe.run(cube, vector, args, platform="a2a3")
    np.testing.assert_allclose(res.outputs["out"], args["x"] @ args["w"], rtol=1e-5, atol=1e-5)
    warned = [(w, at) for w, at in res.summary.leaks if "consumer_buf" in w]
    assert len(warned) == 1, res.summary.leaks
    what, at = warned[0]
    assert "DIR_V2C pipe given c2v_consumer_buf=0x10000, which a DIR_V2C pipe does not use" in what
    assert "pass the address as v2c_consumer_buf, and 0 as c2v_consumer_buf" in what
    assert _at(at) == _line(pipe, "CONSTRUCT")


def test_a_tile_the_misplaced_ring_covers_is_reported_with_the_argument_to_move():
    pipe, cube, vector = _kernels(RING_L1, 0)
    with pytest.raises(MemoryConflictError) as ei:
        ptopipe.run(cube, vector, _args(), platform="a5")
    assert "shares bytes with slot 0 of V2C pipe FlagID 2" in ei.value.what
    assert _at(ei.value.where) == _line(cube, "READ-W")
    assert "c2v_consumer_buf=0x10000 is unused" in ei.value.fix
    assert "pass 0x10000 as v2c_consumer_buf" in ei.value.fix


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("c2v_buf", [0, RING_L1])
def test_the_address_in_its_own_argument_is_clean(platform, protocol, c2v_buf):
    """The ring's address in its own argument, the other 0 or the same address (harmless)."""
    _, cube, vector = _kernels(c2v_buf, RING_L1)
    args = _args()
    res = ptopipe.run(cube, vector, args, platform=platform, protocol=protocol)
    np.testing.assert_allclose(res.outputs["out"], args["x"] @ args["w"], rtol=1e-5, atol=1e-5)
    assert not [w for w, _ in res.summary.leaks if "consumer_buf" in w]


def _c2v_kernels(sum_tiles: bool):
    """A C2V pipe given its UB ring address as ``v2c_consumer_buf`` (and 0 as ``c2v_consumer_buf``):
    the ring - on A2A3 the staging ring of the popped tiles - sits at UB 0, where AIV0 keeps a
    tile of its own: a running sum of the popped tiles (``sum_tiles``) or each popped tile
    scaled, stored after the TFREE."""
    def pipe(fifo):
        return TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0, RING_L1)

    def cube(x, fifo):
        p = pipe(fifo)
        m = Tile(TileType.Mat, float32, M, K, addr=0)
        left, right = Tile(TileType.Left, float32, M, K, addr=0), Tile(TileType.Right, float32, K, N, addr=0)
        acc = Tile(TileType.Acc, float32, M, N, addr=0)
        TLOAD(m, x)
        TMOV(left, m)
        TMOV(right, m)
        TMATMUL(acc, left, right)
        for i in range(4):
            TPUSH(p, acc)

    def vector(out, fifo):
        p = pipe(fifo)
        t = Tile(TileType.Vec, float32, M, N)
        own = Tile(TileType.Vec, float32, M, N, addr=0)
        if sum_tiles:
            TEXPANDS(own, 0.0)
        for i in range(4):
            TPOP(p, t)
            if sum_tiles:
                TADD(own, own, t)                                          # SUM
            else:
                TMULS(own, t, 2.0)                                         # SCALE
            TFREE(p)
            TSTORE(out, own)
    return cube, vector


@pytest.mark.parametrize("platform,sum_tiles,marker", [("a2a3", True, "SUM"), ("a5", False, "SCALE")])
def test_a_tile_the_misplaced_ring_overwrites_is_reported_with_the_argument_to_move(platform, sum_tiles, marker):
    """A2A3: the TPOP stages a tile over the running sum, read next (a read of an overwritten
    tile); A5: the scaled tile is written over the held slot - both name the argument."""
    cube, vector = _c2v_kernels(sum_tiles)
    args = dict(x=_args()["x"], out=np.zeros((M, N), np.float32), fifo=ptopipe.gm_buffer(2 * SLOT))
    with pytest.raises(MemoryConflictError) as ei:
        ptopipe.run(cube, (vector, None), args, platform=platform)
    assert _at(ei.value.where) == _line(_c2v_kernels, marker)
    assert "v2c_consumer_buf=0x10000 is unused" in ei.value.fix
    assert "pass 0x10000 as c2v_consumer_buf" in ei.value.fix
