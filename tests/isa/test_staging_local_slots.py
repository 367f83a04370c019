"""The staging ring of a GM-ring consumer has the consumer's own LocalSlotNum (its TPipe's),
whatever the producer's TPipe says, and LocalSlotNum must be >= 1."""
from __future__ import annotations

import os

import numpy as np
import pytest

import ptopipe
from ptopipe import ConfigError
from ptopipe.isa import (DIR_C2V, TADDS, TFREE, TPOP, TPUSH, TSTORE, GlobalTensor, TPipe, Tile,
                         TileType, float32)

from markers import line_of

ROWS, COLS = 8, 32
SLOT = ROWS * COLS * 4
N = 3                       # tiles held at once by the consumer


def _kernels(prod_local: int, cons_local: int):
    """The Cube pushes its zero accumulator N times to AIV0 only, declaring ``prod_local``;
    AIV0 declares ``cons_local``, pops N tiles into address-less tiles (staged), holds them
    all, then stores tile i + i to row block i of ``out``."""
    def cube(fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 4, prod_local, peers=(0,))(fifo)
        acc = Tile(TileType.Acc, float32, ROWS, COLS, addr=0)
        for _ in range(N):
            TPUSH(pipe, acc)

    def vector(fifo, out):
        pipe = TPipe(0, DIR_C2V, SLOT, 4, cons_local, peers=(0,))(fifo)
        held = [Tile(TileType.Vec, float32, ROWS, COLS) for _ in range(N)]
        for t in held:
            TPOP(pipe, t)
        for i, t in enumerate(held):
            o = Tile(TileType.Vec, float32, ROWS, COLS, addr=0x10000)
            TADDS(o, t, float(i))
            TSTORE(GlobalTensor(out.data() + i * ROWS * COLS, (ROWS, COLS)), o)
        for _ in held:
            TFREE(pipe)
    return cube, vector


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_consumer_local_slot_num_sizes_its_staging_ring(protocol):
    cube, vector = _kernels(prod_local=2, cons_local=N)
    res = ptopipe.run(aic=cube, aiv=(vector, None),
                      args=dict(fifo=ptopipe.gm_buffer(4 * SLOT), out=np.full((N * ROWS, COLS), -1, np.float32)),
                      platform="a2a3", protocol=protocol)
    want = np.repeat(np.arange(N, dtype=np.float32), ROWS)[:, None] * np.ones((1, COLS), np.float32)
    np.testing.assert_array_equal(res.outputs["out"], want)


def vector_zero(fifo, out):
    TPipe(0, DIR_C2V, SLOT, 4, 0)(fifo)                # ZERO


def cube_default(fifo):
    TPipe(0, DIR_C2V, SLOT, 4)(fifo)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_local_slot_num_zero_is_a_config_error(platform, protocol):
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(aic=None, aiv=vector_zero,
                    args=dict(fifo=ptopipe.gm_buffer(4 * SLOT), out=np.zeros(4, np.float32)),
                    platform=platform, protocol=protocol)
    assert "LocalSlotNum 0" in ei.value.what
    path, line = ei.value.where.rsplit(":", 1)
    assert (os.path.basename(path), int(line)) == (os.path.basename(__file__), line_of(vector_zero, "ZERO"))


def vector_wide(fifo, out):
    TPipe(0, DIR_C2V, SLOT, 2, 9, peers=(0,))(fifo)   # WIDE


def cube_two(fifo):
    TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo)


@pytest.mark.parametrize("local,slot_num", [(9, 2), (2, 2), (2, 1)])
def test_local_slot_num_above_slot_num_is_a_warning_at_the_construction(local, slot_num):
    """pto-isa accepts LocalSlotNum 9 with SlotNum 2 (no static_assert); a consumer holds at most
    SlotNum popped tiles, so 7 of its 9 staging slots' bytes are never needed: a run warning
    naming them, at the consumer's TPipe - none where LocalSlotNum is at most SlotNum, or is
    pto-isa's default (2, what a one-slot TPipe naming no LocalSlotNum gets)."""
    def vector(fifo, out):
        TPipe(0, DIR_C2V, SLOT, slot_num, local, peers=(0,))(fifo)

    def cube(fifo):
        TPipe(0, DIR_C2V, SLOT, slot_num, peers=(0,))(fifo)

    res = ptopipe.run(aic=cube if local != 9 else cube_two, aiv=(vector_wide if local == 9 else vector, None),
                      args=dict(fifo=ptopipe.gm_buffer(2 * SLOT), out=np.zeros(4, np.float32)),
                      platform="a2a3", protocol="pto-isa")
    warned = [(w, at) for w, at in res.summary.leaks if "LocalSlotNum" in w]
    if local != 9:
        assert warned == []
        return
    assert len(warned) == 1, warned
    what, at = warned[0]
    assert "LocalSlotNum 9 is more than SlotNum 2" in what
    assert f"{7 * SLOT} of the {9 * SLOT} bytes of the consumer's staging buffer" in what
    assert "declare LocalSlotNum at most 2" in what
    path, line = at.rsplit(":", 1)
    assert (os.path.basename(path), int(line)) == (os.path.basename(__file__), line_of(vector_wide, "WIDE"))


def _overlapping_rings(second_at):
    """Two C2V pipes whose consumer-side regions (A5: the rings in UB; A2A3: the staging rings
    of popped tiles) start ``second_at`` bytes apart: closer than one ring's size overlaps."""
    def pipes(fa, fb):
        return (TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fa, 0x8000, 0),                # first-ring
                TPipe(4, DIR_C2V, SLOT, 2, peers=(0,))(fb, 0x8000 + second_at, 0))    # second-ring

    def cube(fa, fb):
        pa, pb = pipes(fa, fb)
        acc = Tile(TileType.Acc, float32, ROWS, COLS, addr=0)
        TPUSH(pa, acc)
        TPUSH(pb, acc)

    def vector(fa, fb, out):
        pa, pb = pipes(fa, fb)
        x, y = Tile(TileType.Vec, float32, ROWS, COLS), Tile(TileType.Vec, float32, ROWS, COLS)
        TPOP(pa, x)
        TPOP(pb, y)
        TFREE(pa)
        TFREE(pb)
    return pipes, cube, vector


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_overlapping_consumer_rings_are_reported_at_the_second_binding(platform):
    """The bytes a consumer's ring (A5) or staging ring (A2A3, reserved at the first TPOP,
    once the popped tile's memory is known) takes are given where the pipe is bound: an overlap
    is reported there on both platforms - not at the TPOP that stages the first tile - naming
    where the other ring was bound and the addresses that would not overlap."""
    args = lambda: dict(fa=ptopipe.gm_buffer(2 * SLOT), fb=ptopipe.gm_buffer(2 * SLOT),  # noqa: E731
                        out=np.zeros((ROWS, COLS), np.float32))
    pipes, cube, vector = _overlapping_rings(2 * SLOT)
    ptopipe.run(cube, (vector, None), args(), platform=platform)                   # disjoint: clean
    pipes, cube, vector = _overlapping_rings(SLOT)
    with pytest.raises(ptopipe.MemoryConflictError) as ei:
        ptopipe.run(cube, (vector, None), args(), platform=platform)
    err = ei.value
    here = os.path.basename(__file__)
    assert err.where.endswith(f"{here}:{line_of(pipes, 'second-ring')}"), err.where
    assert err.what.endswith(f"(bound at tests/isa/{here}:{line_of(pipes, 'first-ring')})"), err.what
    assert err.fix == (f"place the ring buffers in disjoint regions: start this one at {0x8000 + 2 * SLOT:#x} "
                       f"or above, or end it at {0x8000:#x} or below"), err.fix
