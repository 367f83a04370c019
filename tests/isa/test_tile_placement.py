"""A tile outside its memory is named as the kernel placed it (a TASSIGN is said to be one).
A ring reserved over a tile that TASSIGN placed names the tile as it was placed - its name,
address and memory then - though the placement is rendered only for that report (TASSIGN
itself renders nothing: it was half of a TASSIGN's cost)."""
from __future__ import annotations

import numpy as np
import pytest

import ptopipe
from ptopipe.errors import MemoryConflictError
from ptopipe.isa import DIR_C2V, TASSIGN, TPipe, Tile, TileType, float32, gm_buffer
from ptopipe.isa import tile as tile_mod

SL = 16 * 16 * 4


def test_the_overlapped_tile_is_named_as_tassign_placed_it(monkeypatch):
    said = []

    def k(fifo):
        t = Tile(TileType.Vec, float32, 16, 16, addr=0x8000, name="acc")
        said.append(t.describe())
        t.name = "renamed"                 # changed after the placement
        other = Tile(TileType.Vec, float32, 8, 16, addr=0x100)
        TASSIGN(other, 0x200)
        TPipe(0, DIR_C2V, SL, 4)(fifo, 0x7800, 0)
    rendered = []
    describe = tile_mod._describe
    monkeypatch.setattr(tile_mod, "_describe", lambda *a: rendered.append(a) or describe(*a))
    with pytest.raises(MemoryConflictError) as ei:
        ptopipe.run(aiv=(k, None), args=dict(fifo=gm_buffer(4 * SL)), platform="a5")
    assert said == ["Vec tile 'acc' float32 16x16 @AIV0.UB[0x8000]"]
    assert f"overlaps {said[0]} [0x8000, 0x8400) in AIV0.UB" in ei.value.what
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
