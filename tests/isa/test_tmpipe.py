"""TMPipe: the multi-pipe configuration maps onto the same rings as TPipe, and its FIFO
kind decides where the ring lives."""
import numpy as np
import pytest

import ptopipe
from ptopipe.isa import *  # noqa: F403

T = 16
SLOT = T * T * 4


def _kernels(fifo_type, ring_ub=0x4000):
    def cube(x, fifo, n):
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        xl1 = Tile(TileType.Mat, float32, T, T, addr=0)
        xl0 = Tile(TileType.Left, float32, T, T, addr=0)
        eye = Tile(TileType.Right, float32, T, T, addr=0)
        eye.array[...] = np.eye(T, dtype=np.float32)
        pipe = TMPipe(0, fifo_type, 2, 1, acc, Tile(TileType.Vec, float32, T, T),
                      vc_ratio=VecCubeRatio.V1C1_VEC0)(fifo, ring_ub, 0)
        for i in range(n):
            TLOAD(xl1, GlobalTensor(x.data() + i * T * T, (T, T)))
            TMOV(xl0, xl1)
            TMATMUL(acc, xl0, eye)
            TPUSH(pipe, acc)

    def vec(out, fifo, n):
        t = Tile(TileType.Vec, float32, T, T)
        pipe = TMPipe(0, fifo_type, 2, 1, Tile(TileType.Acc, float32, T, T), t,
                      vc_ratio=VecCubeRatio.V1C1_VEC0)(fifo, ring_ub, 0)
        for i in range(n):
            TPOP(pipe, t)
            TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), t)
            TFREE(pipe)
    return cube, (vec, None)


def _args(n=5):
    x = np.arange(n * T * T, dtype=np.float32).reshape(n * T, T)
    return dict(x=x, out=np.zeros_like(x), fifo=ptopipe.gm_buffer(2 * SLOT), n=n)


@pytest.mark.parametrize("platform,fifo_type", [("a2a3", FIFOType.GM_FIFO), ("a5", FIFOType.GM_FIFO),
                                                ("a5", FIFOType.VEC_FIFO)])
def test_tmpipe_streams_tiles(platform, fifo_type):
    cube, vec = _kernels(fifo_type)
    args = _args()
    res = ptopipe.run(cube, vec, args, platform=platform)
    np.testing.assert_array_equal(res.outputs["out"], args["x"])
    ring_in_gm = fifo_type is FIFOType.GM_FIFO
    # a GM_FIFO ring writes its slots into the GM slot buffer; a VEC_FIFO ring does not
    assert res.outputs["fifo"].any() == ring_in_gm


def test_vec_fifo_is_rejected_where_rings_live_in_gm():
    cube, vec = _kernels(FIFOType.VEC_FIFO)
    with pytest.raises(ptopipe.ConfigError, match="GM_FIFO"):
        ptopipe.run(cube, vec, _args(), platform="a2a3")


def test_mat_fifo_on_a_c2v_pipe_is_a_config_error():
    cube, vec = _kernels(FIFOType.MAT_FIFO)
    with pytest.raises(ptopipe.ConfigError, match="VEC_FIFO"):
        ptopipe.run(cube, vec, _args(), platform="a5")


def test_tmpipe_with_tiles_of_unaligned_size_says_the_tiles_set_the_slot_size():
    """TMPipe takes SlotSize from its tiles: the error must say so, not "round SlotSize up"
    (found by the fuzz)."""
    def make():
        return TMPipe(0, FIFOType.GM_FIFO, 2, 1, Tile(TileType.Acc, int32, 2, 2),
                      Tile(TileType.Vec, int32, 2, 2))

    def cube(fifo):
        make()(fifo, 0x8000, 0)  # <- here

    def vector(fifo):
        make()(fifo, 0x8000, 0)

    with pytest.raises(ptopipe.ConfigError, match="byte size of its larger tile") as ei:
        ptopipe.run(cube, (vector, None), dict(fifo=ptopipe.gm_buffer(64)))
    assert "tiles of a multiple of 32 bytes" in ei.value.fix
    import inspect
    lines, first = inspect.getsourcelines(cube)
    line = first + next(i for i, ln in enumerate(lines) if ln.rstrip().endswith("# <- here"))
    assert ei.value.where.endswith(f"test_tmpipe.py:{line}")
