"""The Cube's TPOP of a split V2C slot takes the tile both Vector cores pushed, one part each:
a Mat tile too small on the split axis to hold both parts (an 8-row tile for two pushed 8-row
halves) is a ProtocolError at that TPOP - not a silent read of AIV0's part only, reported
later at another transfer's shape or as wrong numbers.  The whole tile pops clean."""
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
    (TILE_UP_DOWN, (R // 2, C), "cannot hold the tile the two Vector cores pushed into slot 0"),
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
