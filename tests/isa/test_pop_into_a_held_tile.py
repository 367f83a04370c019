"""A TPOP into the very Tile object whose earlier pop is still held (not yet TFREEd).

On the device the second TPOP rebinds the tile to its own slot: the first pop's slot stays
held until its TFREE, but the kernel has no handle to its data any more.  That is legal (a
kernel may drop a tile it does not need), so it is a warning at the second TPOP naming the
first - the shape of ptoas's C++ when it folds two identical ``pto.declare_tile`` ops into
one Tile: ``TPOP(pipe, v); TPOP(pipe, v);`` and the epilogue reads the second tile twice.
"""
import numpy as np
import pytest

import ptopipe
from ptopipe.isa import *  # noqa: F403
from markers import line_of

T, N = 16, 32
SLOT = T * N * 4


def _pipe(fifo):
    return TPipe(0, DIR_C2V, SLOT, 4)(fifo, 0x10000, 0)


def cube(x, eye, fifo, n):
    pipe = _pipe(fifo)
    e1 = Tile(TileType.Mat, float32, T, T, addr=0)
    x1 = Tile(TileType.Mat, float32, T, N, addr=0x1000)
    e0 = Tile(TileType.Left, float32, T, T, addr=0)
    x0 = Tile(TileType.Right, float32, T, N, addr=0)
    acc = Tile(TileType.Acc, float32, T, N, addr=0)
    TLOAD(e1, eye)
    TMOV(e0, e1)
    for i in range(2 * n):
        TLOAD(x1, GlobalTensor(x.data() + i * T * N, (T, N)))
        TMOV(x0, x1)
        TMATMUL(acc, e0, x0)
        TPUSH(pipe, acc, TILE_UP_DOWN)


def _vector(form):
    def vector(out, fifo, n):
        pipe = _pipe(fifo)
        sub = get_subblockid()
        h = T // 2
        a = Tile(TileType.Vec, float32, h, N)
        b = Tile(TileType.Vec, float32, h, N) if form == "two tiles" else a
        r = Tile(TileType.Vec, float32, h, N, addr=0)
        o = Tile(TileType.Vec, float32, h, N, addr=0x1000)
        for i in range(n):
            TPOP(pipe, a, TILE_UP_DOWN)
            if form == "freed first":
                TRELU(r, a)
                TFREE(pipe, TILE_UP_DOWN)
            TPOP(pipe, b, TILE_UP_DOWN)
            if form != "freed first":
                TRELU(r, a)
                if form != "never freed":
                    TFREE(pipe, TILE_UP_DOWN)                   # FREE-FIRST
            TSUB(o, r, b)
            if form != "never freed":
                TFREE(pipe, TILE_UP_DOWN)
            TSTORE(GlobalTensor(out.data() + (i * T + sub * h) * N, (h, N)), o)
    return vector


def _run(form, platform, protocol):
    n = 2
    x = np.random.default_rng(5).integers(-9, 9, (2 * n * T, N)).astype(np.float32)
    args = dict(x=x, eye=np.eye(T, dtype=np.float32), out=np.zeros((n * T, N), np.float32),
                fifo=ptopipe.gm_buffer(4 * SLOT), n=n)
    res = ptopipe.run(cube, _vector(form), args, platform=platform, protocol=protocol)
    y = x.reshape(n, 2, T, N)
    return res, y[:, 0], y[:, 1]


def _repops(res):
    return [(w, loc) for w, loc in res.summary.leaks if "still holds" in w]


@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec")])
def test_a_second_pop_into_a_held_tile_is_a_warning_naming_the_first(platform, protocol, no_hang):
    """(Not A5 under pto-isa: there both TFREEs follow the second TPOP and test its index -
    ``shouldNotifyFree(cons.tileIndex - 1)`` - so each pair of tiles sends two free credits
    where the producer counts on one, test_the_two_frees_after_the_second_pop_send_two_credits_on_a5.)"""
    res, _y1, y2 = _run("one tile", platform, protocol)
    # the device's numbers: the first tile's data is gone, the epilogue reads the second twice
    assert np.array_equal(res.outputs["out"], (np.maximum(y2, 0) - y2).reshape(-1, N))
    found = _repops(res)
    src = open(__file__).read().splitlines()
    pops = [k + 1 for k, line in enumerate(src) if line.strip().startswith("TPOP(pipe, ")]
    assert sorted(w.split()[2] for w, _ in found) == ["AIV0", "AIV1"]     # once per core, not per pop
    for what, loc in found:
        assert str(loc).endswith(f":{pops[1]}"), loc
        assert f":{pops[0]} " in what and "not yet freed" in what, what
        assert "declare_tile" in what         # the .pto spelling that makes this C++


@pytest.mark.parametrize("form", ["two tiles", "freed first"])
def test_two_tiles_or_a_free_in_between_is_quiet(form, no_hang):
    res, y1, y2 = _run(form, "a2a3", "pto-isa")
    assert np.array_equal(res.outputs["out"], (np.maximum(y1, 0) - y2).reshape(-1, N))
    assert not _repops(res)


def test_a_kernel_that_never_frees_gets_the_missing_tfree_warning_only(no_hang):
    """Where the TPOP frees its slot itself (pto-isa, GM ring) a kernel with no TFREE runs; its
    pops are never "held" by a TFREE to come, and the missing TFREEs are the one warning."""
    res, _y1, y2 = _run("never freed", "a2a3", "pto-isa")
    assert np.array_equal(res.outputs["out"], (np.maximum(y2, 0) - y2).reshape(-1, N))
    assert not _repops(res)
    assert any("have no TFREE" in w for w, _ in res.summary.leaks)


def test_the_two_frees_after_the_second_pop_send_two_credits_on_a5(no_hang):
    """A5 under pto-isa (a ring in UB, SlotNum 4: SyncPeriod 2): the TFREE of the first tile
    comes after the second TPOP and tests that TPOP's index, so it sends a credit as well as the
    second TFREE - two per pair where the destructor drains one: credits left for the next
    launch, named at the TFREE with pto-isa's rule."""
    with pytest.raises(ptopipe.LeakError) as ei:
        _run("one tile", "a5", "pto-isa")
    free = line_of(_vector, "FREE-FIRST")
    assert f"the TFREE at tests/isa/test_pop_into_a_held_tile.py:{free} released tile #0 after the TPOP of tile #1" \
        in ei.value.what, ei.value.what
