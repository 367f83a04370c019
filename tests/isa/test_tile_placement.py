"""A tile outside its memory is named as the kernel placed it (a TASSIGN is said to be one).
A tile that shares bytes with a ring, read after the ring wrote them, is named as TASSIGN placed
it - its name, address and memory then - though the placement is rendered only for that report
(TASSIGN itself renders nothing: it was half of a TASSIGN's cost)."""
from __future__ import annotations

import numpy as np
import pytest

import ptopipe
from ptopipe.errors import MemoryConflictError
from ptopipe.isa import DIR_C2V, TASSIGN, TFREE, TLOAD, TPOP, TPUSH, TPipe, TSTORE, Tile, TileType, float32, gm_buffer
from ptopipe.isa import tile as tile_mod

from cube_parts import square_acc

SL = 16 * 16 * 4


def test_the_overwritten_tile_is_named_as_tassign_placed_it(monkeypatch):
    said = []

    def cube(x, fifo):
        pipe = TPipe(0, DIR_C2V, SL, 4, peers=(0,))(fifo, 0x8000, 0)
        acc = square_acc(x)
        TPUSH(pipe, acc)

    def k(x, out, fifo):
        t = Tile(TileType.Vec, float32, 16, 16, addr=0x8000, name="acc")
        said.append(t.describe())
        t.name = "renamed"                 # changed after the placement
        TLOAD(t, x)
        other = Tile(TileType.Vec, float32, 8, 16, addr=0x100)
        TASSIGN(other, 0x200)
        pipe = TPipe(0, DIR_C2V, SL, 4, peers=(0,))(fifo, 0x8000, 0)
        p = Tile(TileType.Vec, float32, 16, 16)
        TPOP(pipe, p)                      # the Cube's tile lands in slot 0, over t
        TFREE(pipe)
        TSTORE(out, t)
    rendered = []
    describe = tile_mod._describe
    monkeypatch.setattr(tile_mod, "_describe", lambda *a: rendered.append(a) or describe(*a))
    x = np.ones((16, 16), np.float32)
    with pytest.raises(MemoryConflictError) as ei:
        ptopipe.run(cube, (k, None), args=dict(x=x, out=np.zeros_like(x), fifo=gm_buffer(4 * SL)), platform="a5")
    assert said == ["Vec tile 'acc' float32 16x16 @AIV0.UB[0x8000]"]
    assert f"TSTORE reads {said[0]} [0x8000, 0x8400)" in ei.value.what
    assert len(rendered) == 2              # the describe() above and the report: no TASSIGN
    assert np.dtype(rendered[1][2]) == np.float32 and rendered[1][1] == "acc"


@pytest.mark.parametrize("how", ["constructor", "TASSIGN"])
def test_a_tile_outside_its_memory_is_named_as_the_kernel_placed_it(how):
    def k():
        if how == "TASSIGN":
            TASSIGN(Tile(TileType.Vec, float32, 1024, 1024), 0)
        else:
            Tile(TileType.Vec, float32, 1024, 1024, addr=0)
    with pytest.raises(MemoryConflictError) as ei:
        ptopipe.run(aiv=(k, None), args={}, platform="a5")
    said = ei.value.what
    assert "is outside AIV0.UB" in said
    assert said.startswith("TASSIGN of " if how == "TASSIGN" else "Vec tile float32 1024x1024"), said


@pytest.mark.parametrize("checks", [False, True])
def test_a_tile_placed_per_iteration_is_not_kept_alive(checks):
    """A kernel that places a new tile every iteration (as a .pto `pto.alloc_tile` in a loop
    does) keeps no tile of an earlier iteration alive: the placements of tiles it no longer
    holds go (a long loop's memory stays flat)."""
    import gc
    import weakref
    alive = []

    def k(x, out, n):
        made = []
        for i in range(n):
            t = Tile(TileType.Vec, float32, 16, 16, addr=0x100 * (i % 3))
            made.append(weakref.ref(t))
            TLOAD(t, x)
            TSTORE(out, t)
            del t
        gc.collect()
        alive.append(sum(r() is not None for r in made))
    x = np.ones((16, 16), np.float32)
    # (the exact engine: the periodic one's learning holds the operands of a bounded number
    # of recent calls)
    ptopipe.run(aiv=(k, None), args=dict(x=x, out=np.zeros_like(x), n=50), checks=checks, engine="exact")
    assert alive == [0]


# -- two placed tiles over part of one another ----------------------------------------------------
def _overlap_kernel(out_addr: int, reuse: bool = False):
    """A bias tile loaded once at 0x0 (2 KiB) and an output tile at ``out_addr``: each iteration
    adds into the output and reads the bias again (``reuse``: reloads the bias first)."""
    from ptopipe.isa import GlobalTensor, TADD

    def vec(x, bias, out):
        b = Tile(TileType.Vec, float32, 16, 32, addr=0x0, name="bias")
        o = Tile(TileType.Vec, float32, 16, 32, addr=out_addr, name="o")
        t = Tile(TileType.Vec, float32, 16, 32, addr=0x4000)
        TLOAD(b, bias)
        for i in range(3):
            if reuse:
                TLOAD(b, bias)
            TLOAD(t, GlobalTensor(x.data() + i * 512, (16, 32)))
            TADD(o, t, b)                                                     # READ-BIAS
            TSTORE(GlobalTensor(out.data() + i * 512, (16, 32)), o)
    return vec


def _overlap_args():
    rng = np.random.default_rng(3)
    x, bias = rng.integers(-3, 4, (48, 32)).astype(np.float32), rng.integers(1, 9, (16, 32)).astype(np.float32)
    return dict(x=x, bias=bias, out=np.zeros_like(x)), x, bias


def test_a_tile_read_after_another_tile_overwrote_part_of_it_is_a_warning_at_the_read():
    """o at 0x400 covers bias's second half: the first TADD writes it there, the second reads
    bias's clobbered bytes - a warning at that read naming the write, as the device computes."""
    from markers import line_of
    vec = _overlap_kernel(0x400)
    args, x, bias = _overlap_args()
    res = ptopipe.run(None, (vec, None), args)
    (w, where), = [(w, loc) for w, loc in res.summary.leaks if "the two tiles overlap" in w]
    assert str(where).endswith(f":{line_of(vec, 'READ-BIAS')}"), where
    assert "'bias'" in w and "'o'" in w and "[0x400, 0x800)" in w, w
    assert not np.array_equal(res.outputs["out"][16:32], x[16:32] + bias)     # (the numbers show it too)


@pytest.mark.parametrize("out_addr,reuse", [(0x800, False), (0x400, True), (0x0, False)],
                         ids=["disjoint", "reloaded-before-each-read", "same-bytes"])
def test_tiles_that_do_not_lose_a_value_are_not_reported(out_addr, reuse):
    """Disjoint tiles, a tile written again before it is read, and two names of one storage."""
    args, x, bias = _overlap_args()
    res = ptopipe.run(None, (_overlap_kernel(out_addr, reuse), None), args)
    assert not [w for w, _ in res.summary.leaks if "the two tiles overlap" in w]
    if out_addr == 0x800:
        np.testing.assert_array_equal(res.outputs["out"], x + np.tile(bias, (3, 1)))


def test_a_tile_written_through_a_part_of_it_is_not_reported():
    """A whole tile padded, then a part of it loaded through a tile inside it, then the whole
    read: the part's write is meant for the whole."""
    from ptopipe.isa import GlobalTensor, TEXPANDS, TMULS

    def vec(x, out):
        whole = Tile(TileType.Vec, float32, 16, 32, addr=0x0)
        part = Tile(TileType.Vec, float32, 8, 32, addr=0x400)               # rows 8..15 of whole
        TEXPANDS(whole, 0.0)
        TLOAD(part, GlobalTensor(x.data(), (8, 32)))
        TMULS(whole, whole, 2.0)
        TSTORE(GlobalTensor(out.data(), (16, 32)), whole)
    x = np.arange(256, dtype=np.float32).reshape(8, 32)
    res = ptopipe.run(None, (vec, None), dict(x=x, out=np.zeros((16, 32), np.float32)))
    assert not [w for w, _ in res.summary.leaks if "the two tiles overlap" in w]
    np.testing.assert_array_equal(res.outputs["out"][8:], 2 * x)


def test_a_tile_filled_through_column_views_is_not_reported():
    """A wide tile filled through narrower tiles of its row pitch placed along its first row
    (pto-isa's FA kernel loads a 16 x 256 tile as two 128-column halves), then read whole."""
    from ptopipe.isa import GlobalTensor, TMULS

    def vec(x, out):
        whole = Tile(TileType.Vec, float32, 16, 32, addr=0x0)
        for c in range(2):
            half = Tile(TileType.Vec, float32, 16, 32, valid_cols=16, addr=c * 16 * 4)
            TLOAD(half, GlobalTensor(x.data() + c * 16 * 16, (16, 16)))
        TMULS(whole, whole, 2.0)
        TSTORE(GlobalTensor(out.data(), (16, 32)), whole)
    x = np.arange(512, dtype=np.float32).reshape(2, 16, 16)
    res = ptopipe.run(None, (vec, None), dict(x=x, out=np.zeros((16, 32), np.float32)))
    assert not [w for w, _ in res.summary.leaks if "overlap" in w], res.summary.leaks
    np.testing.assert_array_equal(res.outputs["out"], 2 * np.concatenate([x[0], x[1]], axis=1))


def _acc_strip_kernel(cols: int):
    """An Acc tile of 32 x ``cols`` f32 written by a TMATMUL, then its rows 16..31 stored through a
    16-row Acc tile placed 16 rows into it by bytes (16 x ``cols`` x 4 bytes)."""
    from ptopipe.isa import GlobalTensor, TMATMUL, TMOV, TSTORE

    def cube(a, b, out):
        a1 = Tile(TileType.Mat, float32, 32, 16, addr=0x0)
        b1 = Tile(TileType.Mat, float32, 16, cols, addr=0x1000)
        a0 = Tile(TileType.Left, float32, 32, 16, addr=0x0)
        b0 = Tile(TileType.Right, float32, 16, cols, addr=0x0)
        acc = Tile(TileType.Acc, float32, 32, cols, addr=0x0)
        strip = Tile(TileType.Acc, float32, 16, cols, addr=16 * cols * 4)
        TLOAD(a1, a)
        TLOAD(b1, b)
        TMOV(a0, a1)
        TMOV(b0, b1)
        TMATMUL(acc, a0, b0)
        TSTORE(GlobalTensor(out.data(), (16, cols)), strip)                  # READ-STRIP
    return cube


@pytest.mark.parametrize("cols", [16, 32])
def test_a_tile_inside_a_fractal_tile_is_reported_where_the_simulators_order_is_not_the_devices(cols):
    """An Acc tile is NZ: with one column of fractals (16 f32 columns) its bytes are row-major,
    as the simulator holds them, and a strip 16 rows in reads rows 16..31 on both; with two
    (32 columns) the device's strip reads other elements than the simulator's - a warning at
    the read, saying the numbers differ from the device's."""
    from markers import line_of
    rng = np.random.default_rng(2)
    a, b = rng.integers(-3, 4, (32, 16)).astype(np.float32), rng.integers(-3, 4, (16, cols)).astype(np.float32)
    cube = _acc_strip_kernel(cols)
    res = ptopipe.run(cube, None, dict(a=a, b=b, out=np.zeros((16, cols), np.float32)))
    said = [(w, loc) for w, loc in res.summary.leaks if "fractal layout" in w]
    if cols == 16:
        assert not said and not res.summary.leaks
        np.testing.assert_array_equal(res.outputs["out"], (a @ b)[16:])
    else:
        (w, where), = said
        assert str(where).endswith(f":{line_of(cube, 'READ-STRIP')}") and "numbers differ from the device's" in w
