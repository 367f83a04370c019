"""Cube-side set-ups the ISA tests share (a module of helpers, not of tests)."""
from ptopipe.isa import TLOAD, TMATMUL, TMOV, Tile, TileType, float32


def square_acc(x, n: int = 16):
    """The Acc tile of ``x @ x`` (n x n f32): x loaded to L1, moved to L0A and L0B, multiplied
    into L0C - every tile at address 0 of its memory."""
    m = Tile(TileType.Mat, float32, n, n, addr=0)
    left = Tile(TileType.Left, float32, n, n, addr=0)
    right = Tile(TileType.Right, float32, n, n, addr=0)
    acc = Tile(TileType.Acc, float32, n, n, addr=0)
    TLOAD(m, x)
    TMOV(left, m)
    TMOV(right, m)
    TMATMUL(acc, left, right)
    return acc
