"""Pipe misuse found in review: both ends of a pipe placing the ring in different kinds of
memory, and an invalid split value, are located errors (never a raw TypeError or an error
without a line)."""
from __future__ import annotations

import os

import pytest

import ptopipe
from ptopipe import ConfigError, ProtocolError
from ptopipe.isa import (DIR_C2V, DIR_C2V_GM, TFREE, TPOP, TPUSH, TPipe, Tile, TileType,
                         float32)

from markers import line_of

SLOT = 16 * 32 * 4


def cube_local(fifo):
    TPipe(0, DIR_C2V, SLOT, 4)(fifo, 0x8000)          # LOCAL


def vector_gm(fifo):
    TPipe(0, DIR_C2V_GM, SLOT, 4)(fifo, 0x8000)       # GM


def cube_gm(fifo):
    TPipe(0, DIR_C2V_GM, SLOT, 4)(fifo, 0x8000)       # GM


def vector_local(fifo):
    TPipe(0, DIR_C2V, SLOT, 4)(fifo, 0x8000)          # LOCAL


def _line(where: str) -> tuple:
    path, line = where.rsplit(":", 1)
    return os.path.basename(path), int(line)


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("aic,aiv", [(cube_local, vector_gm), (cube_gm, vector_local)])
def test_ring_in_gm_on_one_end_only(aic, aiv, protocol):
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(aic=aic, aiv=aiv, args=dict(fifo=ptopipe.gm_buffer(4 * SLOT)), platform="a5",
                    protocol=protocol)
    e = ei.value
    assert "places the ring in" in e.what
    # the second core to bind is reported (the Cube binds first), the first named in details
    assert _line(e.where) == (os.path.basename(__file__), line_of(aiv, "GM" if aiv is vector_gm else "LOCAL"))
    assert f":{line_of(aic, 'LOCAL' if aic is cube_local else 'GM')}" in e.details


def cube_bad_split(fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, 0x8000)
    acc = Tile(TileType.Acc, float32, 16, 32, addr=0)
    TPUSH(pipe, acc, 7)                                # BAD-SPLIT


def vector_pop(fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, 16, 32)
    TPOP(pipe, t)
    TFREE(pipe, t, 9)                                  # BAD-FREE-SPLIT


def cube_push(fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 4)(fifo, 0x8000)
    acc = Tile(TileType.Acc, float32, 16, 32, addr=0)
    TPUSH(pipe, acc)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("aic,aiv,marker", [(cube_bad_split, vector_pop, "BAD-SPLIT"),
                                            (cube_push, vector_pop, "BAD-FREE-SPLIT")])
def test_invalid_split_is_located(aic, aiv, marker, platform):
    fn = aic if marker == "BAD-SPLIT" else aiv
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(aic=aic, aiv=aiv, args=dict(fifo=ptopipe.gm_buffer(4 * SLOT)), platform=platform)
    assert "invalid TileSplitAxis" in ei.value.what
    assert _line(ei.value.where) == (os.path.basename(__file__), line_of(fn, marker))
