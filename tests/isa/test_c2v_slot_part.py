"""What SlotSize must hold on a C2V ring: on A5 the ring lives in each Vector core's UB and
each core's slot receives only its TILE_UP_DOWN / TILE_LEFT_RIGHT part of the Cube's Acc
(pto-isa A5 ``pushAcc2VecFiFo``), so pto-isa's own A5 tests declare SlotSize as one part;
on A2A3 the ring is in GM and a slot holds the whole tile.  A push whose slot share does
not fit is refused at the TPUSH."""
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import ProtocolError
from ptopipe.isa import *  # noqa: F403
from ptopipe.protocol.geometry import part_shape
from markers import line_of

M, K, N = 16, 32, 64            # LEFT_RIGHT parts of 32 columns: A5's dual-mode TMOV takes N % 32 == 0
WHOLE = M * N * 4


def part_bytes(split) -> int:
    r, c = part_shape(split, M, N)
    return r * c * 4


def pair(split, slot):
    pr, pc = part_shape(split, M, N)

    def cube(x, w, fifo):
        pipe = TPipe(0, DIR_C2V, slot, 2)(fifo, 0x10000, 0)
        xm = Tile(TileType.Mat, float32, M, K, addr=0)
        wm = Tile(TileType.Mat, float32, K, N, addr=0x4000)
        a = Tile(TileType.Left, float32, M, K, addr=0)
        b = Tile(TileType.Right, float32, K, N, addr=0)
        acc = Tile(TileType.Acc, float32, M, N, addr=0)
        TLOAD(xm, GlobalTensor(x.data(), (M, K)))
        TLOAD(wm, GlobalTensor(w.data(), (K, N)))
        TMOV(a, xm)
        TMOV(b, wm)
        TMATMUL(acc, a, b)
        TPUSH(pipe, acc, split)                             # PUSH

    def vector(out, fifo):
        pipe = TPipe(0, DIR_C2V, slot, 2)(fifo, 0x10000, 0)
        t = Tile(TileType.Vec, float32, pr, pc)
        TPOP(pipe, t, split)
        s = get_subblockid()
        off = s * pr * N if split == TILE_UP_DOWN else s * pc
        TSTORE(GlobalTensor(out.data() + off, (pr, pc), (N, 1)), t)
        TFREE(pipe)
    return cube, vector


def args():
    rng = np.random.default_rng(7)
    return dict(x=rng.integers(-3, 4, (M, K)).astype(np.float32),
                w=rng.integers(-3, 4, (K, N)).astype(np.float32),
                out=np.zeros((M, N), np.float32), fifo=ptopipe.gm_buffer(2 * WHOLE))


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("split", [TILE_UP_DOWN, TILE_LEFT_RIGHT], ids=["UP_DOWN", "LEFT_RIGHT"])
def test_a5_slot_size_of_one_part_runs_as_pto_isa_declares_it(split, protocol, no_hang):
    a = args()
    res = ptopipe.run(*pair(split, part_bytes(split)), a, platform="a5", protocol=protocol)
    np.testing.assert_array_equal(res["out"], a["x"] @ a["w"])


@pytest.mark.parametrize("split", [TILE_UP_DOWN, TILE_LEFT_RIGHT], ids=["UP_DOWN", "LEFT_RIGHT"])
def test_a5_part_larger_than_the_slot_is_refused_at_the_push(split, no_hang):
    need = part_bytes(split)
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(*pair(split, need - 512), args(), platform="a5")
    e = ei.value
    assert f"{need} bytes in each Vector core's slot) does not fit SlotSize {need - 512}" in e.what, e
    assert e.where.endswith(f":{line_of(pair, 'PUSH')}"), e.where
    assert f"declare SlotSize {need}" in e.fix and f"{split.name} part" in e.fix, e.fix


def test_a2a3_gm_slot_holds_the_whole_tile(no_hang):
    split = TILE_UP_DOWN
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(*pair(split, part_bytes(split)), args(), platform="a2a3")
    assert f"({WHOLE} bytes) does not fit SlotSize {part_bytes(split)}" in ei.value.what
    assert f"declare SlotSize {WHOLE}" in ei.value.fix
    a = args()
    res = ptopipe.run(*pair(split, WHOLE), a, platform="a2a3")
    np.testing.assert_array_equal(res["out"], a["x"] @ a["w"])
