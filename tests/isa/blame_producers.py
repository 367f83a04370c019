"""A Cube producer kept in a module of its own (imported by tests/test_blame.py): a
deadlock where it blocks must still be reported at the consumer's line when the consumer
is the party that stopped."""
from ptopipe.isa import *  # noqa: F403

T = 16
SLOT = T * T * 4


def identity_cube(a, eye, fifo, tiles, depth=2):
    """Pushes ``tiles`` tiles a_i @ I of ``a`` (T x T each) on a C2V pipe (FlagID 0, AIV0)."""
    pipe = TPipe(0, DIR_C2V, SLOT, depth, peers=(0,))(fifo, 0x8000)
    m, e = Tile(TileType.Mat, float32, T, T, addr=0), Tile(TileType.Mat, float32, T, T, addr=0x1000)
    left, right = Tile(TileType.Left, float32, T, T, addr=0), Tile(TileType.Right, float32, T, T, addr=0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    TLOAD(e, eye)
    TMOV(right, e)
    for i in range(tiles):
        TLOAD(m, GlobalTensor(a.data() + i * T * T, (T, T)))
        TMOV(left, m)
        TMATMUL(acc, left, right)
        TPUSH(pipe, acc)                                        # PUSH
