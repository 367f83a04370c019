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
        h = Tile(TileType.Vec, float32, T, N // 2, addr=0, valid_cols=8)    # 32 bytes a row (A5's L1 insert)
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


def v2c_f16_part(part_cols):
    """Each Vector core pushes a 16 x ``part_cols`` f16 part, TILE_LEFT_RIGHT."""
    slot = T * 2 * part_cols * 2

    def cube(out, fifo):
        pipe = TPipe(0, DIR_V2C, slot, 2)(fifo, 0, 0x20000)
        m = Tile(TileType.Mat, float16, T, 2 * part_cols)
        TPOP(pipe, m, TILE_LEFT_RIGHT)
        TSTORE(GlobalTensor(out.data(), (T, 2 * part_cols)), m)
        TFREE(pipe, m, TILE_LEFT_RIGHT)

    def vector(x, fifo):
        pipe = TPipe(0, DIR_V2C, slot, 2)(fifo, 0, 0x20000)
        h = Tile(TileType.Vec, float16, T, part_cols, addr=0)
        TLOAD(h, GlobalTensor(x.data() + get_subblockid() * part_cols, (T, part_cols), (2 * part_cols, 1)))
        TPUSH(pipe, h, TILE_LEFT_RIGHT)                     # PART
    return cube, vector


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("part_cols", [8, 16])
def test_a_vector_part_narrower_than_32_bytes_into_l1(part_cols, platform, no_hang):
    """A5's V2C ring is in the Cube's L1: pto-isa's pushVec2MatFiFo asserts a TILE_LEFT_RIGHT
    part's valid rows are a multiple of 32 bytes (8 f16 columns are 16).  A2A3's ring is in GM,
    where the part is TSTOREd and any width is fine."""
    cube, vector = v2c_f16_part(part_cols)
    x = np.arange(T * 2 * part_cols, dtype=np.float16).reshape(T, 2 * part_cols)
    args = dict(x=x, out=np.zeros_like(x), fifo=ptopipe.gm_buffer(2 * x.nbytes))
    if platform == "a5" and part_cols == 8:
        with pytest.raises(ProtocolError) as ei:
            ptopipe.run(cube, vector, args, platform=platform)
        assert "multiple of 32 bytes" in ei.value.what and "16 bytes a row" in ei.value.what
        assert ei.value.where.endswith(f":{line_of(v2c_f16_part, 'PART')}"), ei.value.where
        assert "a multiple of 16 columns" in ei.value.fix
        return
    res = ptopipe.run(cube, vector, args, platform=platform)
    np.testing.assert_array_equal(res.outputs["out"], x)
