"""Dynamic valid shapes through a pipe: a tail tile with fewer valid rows than its
static shape.  The consumer's static shape is compared with the producer's static shape, its
valid shape with the producer's valid shape; both platforms (UB and GM rings) read the
consumer's part of the pushed valid region."""
from __future__ import annotations

import os

import numpy as np
import pytest

import ptopipe
from ptopipe import ProtocolError
from ptopipe.isa import (DIR_C2V, TADDS, TFREE, TLOAD, TMATMUL, TMOV, TPOP, TPUSH, TSTORE,
                         TILE_NO_SPLIT, TILE_UP_DOWN, GlobalTensor, TPipe, Tile, TileType,
                         float32, get_subblockid)

from markers import line_of

M, TM, K, N = 44, 16, 32, 32           # 16, 16 and a 12-row tail tile
SLOT = TM * N * 4
HERE = os.path.basename(__file__)


def _cube(split, peers):
    def cube(a, b, fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 4, peers=peers)(fifo, 0x8000)
        bm = Tile(TileType.Mat, float32, K, N, addr=0x0)
        am = Tile(TileType.Mat, float32, TM, K, addr=0x1000)
        bl = Tile(TileType.Right, float32, K, N, addr=0x0)
        al = Tile(TileType.Left, float32, TM, K, addr=0x0)
        acc = Tile(TileType.Acc, float32, TM, N, addr=0x0)
        TLOAD(bm, b)
        TMOV(bl, bm)
        for r0 in range(0, M, TM):
            vr = min(TM, M - r0)
            am.SetValid(vr, K)
            al.SetValid(vr, K)
            acc.SetValid(vr, N)
            TLOAD(am, GlobalTensor(a.data() + r0 * K, (vr, K), (K, 1)))
            TMOV(al, am)
            TMATMUL(acc, al, bl)
            TPUSH(pipe, acc, split)
    return cube


def vector_nosplit(out, fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 4, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, TM, N)
    o = Tile(TileType.Vec, float32, TM, N, addr=0x0)
    for r0 in range(0, M, TM):
        vr = min(TM, M - r0)
        t.SetValid(vr, N)
        o.SetValid(vr, N)
        TPOP(pipe, t, TILE_NO_SPLIT)
        TADDS(o, t, 1.0)
        TFREE(pipe)
        TSTORE(GlobalTensor(out.data() + r0 * N, (vr, N), (N, 1)), o)


def vector_updown(out, fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, 0x8000)
    sub = get_subblockid()
    t = Tile(TileType.Vec, float32, TM // 2, N)
    o = Tile(TileType.Vec, float32, TM // 2, N, addr=0x0)
    for r0 in range(0, M, TM):
        vr = min(TM, M - r0) // 2          # each sub-block: half of the valid rows
        t.SetValid(vr, N)
        o.SetValid(vr, N)
        TPOP(pipe, t, TILE_UP_DOWN)
        TADDS(o, t, 1.0)
        TFREE(pipe)
        TSTORE(GlobalTensor(out.data() + (r0 + sub * vr) * N, (vr, N), (N, 1)), o)


def vector_whole_valid(out, fifo):
    """Wrong: pops every tile with its whole 16-row valid shape (the tail pushed 12)."""
    pipe = TPipe(0, DIR_C2V, SLOT, 4, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, TM, N)
    for _ in range(0, M, TM):
        TPOP(pipe, t, TILE_NO_SPLIT)        # <- whole-valid TPOP
        TFREE(pipe)


def _args(rng):
    return dict(a=rng.integers(-3, 4, (M, K)).astype(np.float32),
                b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                out=np.zeros((M, N), np.float32), fifo=ptopipe.gm_buffer(4 * SLOT))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("split", ["nosplit", "updown"])
def test_tail_tile_valid_rows_run_clean_and_exact(platform, protocol, split):
    args = _args(np.random.default_rng(3))
    if split == "nosplit":
        aic, aiv = _cube(TILE_NO_SPLIT, (0,)), (vector_nosplit, None)
    else:
        aic, aiv = _cube(TILE_UP_DOWN, (0, 1)), vector_updown
    res = ptopipe.run(aic=aic, aiv=aiv, args=args, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], args["a"] @ args["b"] + 1)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_valid_shape_mismatch_names_both_valid_regions(platform, protocol):
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(aic=_cube(TILE_NO_SPLIT, (0,)), aiv=(vector_whole_valid, None),
                    args=_args(np.random.default_rng(3)), platform=platform, protocol=protocol)
    msg = str(ei.value)
    assert "the consumer tile 16x32 float32 (TILE_NO_SPLIT) does not match the pushed tile " \
           "16x32 valid 12x32 float32 (TILE_NO_SPLIT) of slot " in msg and "it should pop a valid 12x32 float32" in msg, msg
    assert ei.value.where.endswith(f"{HERE}:{line_of(vector_whole_valid, '<- whole-valid TPOP')}"), msg


def vector_split_unset(out, fifo):
    """Each lane pops its 8-row half without SetValid: the 12-row tail needs 6 valid rows."""
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, TM // 2, N)
    for r0 in range(0, M, TM):
        TPOP(pipe, t, TILE_UP_DOWN)                                    # <- unset TPOP
        TFREE(pipe)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_split_valid_mismatch_says_the_part_to_pop(platform):
    """The message gives the valid region the lane should pop (not only the
    two tiles)."""
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(aic=_cube(TILE_UP_DOWN, (0, 1)), aiv=vector_split_unset,
                    args=_args(np.random.default_rng(3)), platform=platform)
    assert ei.value.what.endswith("of slot 2 - the valid shape differs: it should pop a valid 6x32 float32 "
                                  "(its part of the pushed valid region)"), ei.value.what
    assert ei.value.where.endswith(f"{HERE}:{line_of(vector_split_unset, '<- unset TPOP')}")


def vector_split_whole(out, fifo):
    """Each lane pops a whole-tile-sized tile of an UP_DOWN ring: its part is half the rows."""
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, TM, N)
    TPOP(pipe, t, TILE_UP_DOWN)                                        # <- whole TPOP
    TFREE(pipe)


def test_a_split_mismatch_prints_the_pushed_tiles_part_per_lane():
    """The consumer tile has the pushed tile's static shape and split: the pushed tile is
    described with each lane's part, so the two descriptions differ where the tiles do."""
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(aic=_cube(TILE_UP_DOWN, (0, 1)), aiv=vector_split_whole, args=_args(np.random.default_rng(3)))
    assert ei.value.what == (
        "TPOP on AIV0: the consumer tile 16x32 float32 (TILE_UP_DOWN) does not match the pushed tile 16x32 "
        "float32 (TILE_UP_DOWN: 8x32 per Vector core) of slot 0 - the valid shape differs: it should pop a "
        "valid 8x32 float32 (its part of the pushed valid region)"), ei.value.what
    assert ei.value.where.endswith(f"{HERE}:{line_of(vector_split_whole, '<- whole TPOP')}")
