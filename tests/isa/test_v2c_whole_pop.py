"""A split TPOP takes a share of the split push: the Cube the tile both Vector cores pushed
(V2C), a Vector core its part of the Cube's tile (C2V).  A consumer tile too small on the split
axis to hold that share (an 8-row Mat tile for two pushed 8-row halves, a 4-row Vec tile for an
8-row part) is a ProtocolError at that TPOP on both platforms - not a silent read of one lane's
part, reported later at another transfer's shape or as wrong numbers.  The share pops clean."""
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import ProtocolError
from ptopipe.isa import *  # noqa: F403
from markers import line_of

R, C = 16, 32                       # the whole tile; each Vector core pushes its half


def _kernels(split, cube_shape):
    ud = split == TILE_UP_DOWN
    part = (R // 2, C) if ud else (R, C // 2)

    def cube(out, fifo):
        pipe = TPipe(0, DIR_V2C, R * C * 4, 2)(fifo, 0, 0x20000)
        x = Tile(TileType.Mat, float32, *cube_shape)
        TPOP(pipe, x, split)                                                    # POP
        TFREE(pipe)

    def vector(a, fifo):
        pipe = TPipe(0, DIR_V2C, R * C * 4, 2)(fifo, 0, 0x20000)
        sub = get_subblockid()
        t = Tile(TileType.Vec, float32, *part, addr=0)
        off = sub * part[0] * C if ud else sub * part[1]
        TLOAD(t, GlobalTensor(a.data() + off, part, (C, 1)))
        TPUSH(pipe, t, split)
    return cube, vector


def _args():
    return dict(a=np.arange(R * C, dtype=np.float32).reshape(R, C), out=np.zeros((R, C), np.float32),
                fifo=gm_buffer(2 * R * C * 4))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("split,small,what", [
    (TILE_UP_DOWN, (R // 2, C), "cannot hold the tile the two Vector cores pushed: 16x32 float32 (8x32 from each)"),
    # (half the columns: the pop's row pitch is not the slot's either, which says so)
    (TILE_LEFT_RIGHT, (R, C // 2), "the row pitch differs")])
def test_a_cube_pop_holding_one_lanes_part_is_refused_at_the_tpop(platform, split, small, what):
    cube, vector = _kernels(split, small)
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, vector, _args(), platform=platform)
    e = ei.value
    assert e.where.endswith(f":{line_of(_kernels, 'POP')}"), e.where
    assert what in e.what, e.what


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("split", [TILE_UP_DOWN, TILE_LEFT_RIGHT])
def test_the_whole_tile_pops_clean(platform, split):
    cube, vector = _kernels(split, (R, C))
    ptopipe.run(cube, vector, _args(), platform=platform)



def _c2v_kernels(pop_rows):
    def cube(a, eye, fifo):
        pipe = TPipe(0, DIR_C2V, R * C * 4, 2)(fifo, 0x8000)
        a1 = Tile(TileType.Mat, float32, R, C, addr=0)
        e1 = Tile(TileType.Mat, float32, C, C, addr=0x4000)
        a0 = Tile(TileType.Left, float32, R, C, addr=0)
        e0 = Tile(TileType.Right, float32, C, C, addr=0)
        acc = Tile(TileType.Acc, float32, R, C, addr=0)
        TLOAD(a1, a); TMOV(a0, a1); TLOAD(e1, eye); TMOV(e0, e1)
        TMATMUL(acc, a0, e0)
        TPUSH(pipe, acc, TILE_UP_DOWN)

    def vector(out, fifo):
        pipe = TPipe(0, DIR_C2V, R * C * 4, 2)(fifo, 0x8000)
        t = Tile(TileType.Vec, float32, pop_rows, C)
        TPOP(pipe, t, TILE_UP_DOWN)                                             # C2V-POP
        TSTORE(GlobalTensor(out.data() + get_subblockid() * pop_rows * C, (pop_rows, C)), t)
        TFREE(pipe)
    return cube, vector


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("pop_rows", [R // 2, R // 4])
def test_a_vector_pop_smaller_than_its_part_is_refused_at_the_tpop(platform, pop_rows):
    cube, vector = _c2v_kernels(pop_rows)
    a = np.arange(R * C, dtype=np.float32).reshape(R, C)
    args = dict(a=a, eye=np.eye(C, dtype=np.float32), out=np.zeros((R, C), np.float32), fifo=gm_buffer(2 * R * C * 4))
    if pop_rows == R // 2:
        assert np.array_equal(ptopipe.run(cube, vector, args, platform=platform).outputs["out"], a)
        return
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, vector, args, platform=platform)
    assert ei.value.where.endswith(f":{line_of(_c2v_kernels, 'C2V-POP')}"), ei.value.where
    assert "cannot hold its 8x32 part of the Cube's 16x32 float32 tile" in ei.value.what, ei.value.what
