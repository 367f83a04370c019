"""Pipe misuse: both ends of a pipe placing the ring in different kinds of
memory, and an invalid split value, are located errors (never a raw TypeError or an error
without a line)."""
from __future__ import annotations

import os

import pytest

import ptopipe
from ptopipe import ConfigError, ProtocolError
from ptopipe.isa import (DIR_C2V, DIR_C2V_GM, TFREE, TPOP, TPUSH, TPipe, Tile, TileSplitAxis, TileType,
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


def cube_other_base(fifo):
    TPipe(0, DIR_C2V, SLOT, 4)(fifo, 0x9000)          # OTHER-BASE


def test_a_producer_naming_another_local_ring_base_is_told_the_consumers_base():
    """On A5 a C2V ring is in each Vector core's UB at the consumer's base: the Cube naming
    another base gets the base to give, whichever end is at fault in the kernel's front end."""
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(aic=cube_other_base, aiv=vector_local, args=dict(fifo=ptopipe.gm_buffer(4 * SLOT)),
                    platform="a5")
    e = ei.value
    assert e.what.endswith("AIV0 places the ring at 0x8000 but the other side uses 0x9000")
    assert f":{line_of(cube_other_base, 'OTHER-BASE')}" in e.details
    assert e.fix.startswith("the ring is in the consumer's memory at the consumer's base: give the "
                            "producer that base, 0x8000 (a Python kernel's TPipe(...)(fifo, 0x8000)")


def cube_two_slots(fifo):
    TPipe(0, DIR_C2V, SLOT, 2)(fifo, 0x8000)          # TWO-SLOTS


def vector_four_slots(fifo):
    TPipe(0, DIR_C2V, SLOT, 4)(fifo, 0x8000)          # FOUR-SLOTS


def test_two_ends_with_different_slot_counts_are_told_so_before_the_ring_size():
    """The Cube's 2-slot ring fits the GM buffer sized for it, the Vector core's 4-slot one does
    not: the mistake is the ends disagreeing, reported naming both, not a buffer too small."""
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(aic=cube_two_slots, aiv=vector_four_slots, args=dict(fifo=ptopipe.gm_buffer(2 * SLOT)),
                    platform="a2a3")
    e = ei.value
    assert e.what.endswith(f"AIV0 binds SlotSize {SLOT} x SlotNum 4 but the other side has {SLOT} x 2")
    assert _line(e.where) == (os.path.basename(__file__), line_of(vector_four_slots, "FOUR-SLOTS"))
    assert f":{line_of(cube_two_slots, 'TWO-SLOTS')}" in e.details


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


SLOT8 = 8 * 32 * 4


def cube_sync1(fifo):
    pipe = TPipe(0, DIR_C2V, SLOT8, 4, sync_period=1)(fifo)     # SYNC1
    acc = Tile(TileType.Acc, float32, 8, 32, addr=0)
    for _ in range(8):
        TPUSH(pipe, acc)


def vector_sync2(fifo):
    pipe = TPipe(0, DIR_C2V, SLOT8, 4, sync_period=2)(fifo)     # SYNC2
    t = Tile(TileType.Vec, float32, 8, 32)
    for _ in range(8):
        TPOP(pipe, t)
        TFREE(pipe)


def vector_sync_negative(fifo):
    TPipe(0, DIR_C2V, SLOT8, 4, sync_period=-1)(fifo)          # SYNC-NEG


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_sync_period_must_agree_on_both_ends(platform):
    # pto-isa only: under spec every release signals (SyncPeriod 1 on both ends)
    args = dict(fifo=ptopipe.gm_buffer(4 * SLOT8))
    if platform == "a5":
        def cube(fifo):
            pipe = TPipe(0, DIR_C2V, SLOT8, 4, sync_period=1)(fifo, 0x8000)   # SYNC1
            acc = Tile(TileType.Acc, float32, 8, 32, addr=0)
            TPUSH(pipe, acc, TileSplitAxis.TILE_UP_DOWN)   # both lanes (a5 pto-isa NO_SPLIT: AIV0 only)

        def vector(fifo):
            TPipe(0, DIR_C2V, SLOT8, 4, sync_period=2)(fifo, 0x8000)          # SYNC2
    else:
        cube, vector = cube_sync1, vector_sync2
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(aic=cube, aiv=vector, args=args, platform=platform, protocol="pto-isa")
    assert "SyncPeriod (FiFoSyncT) 2" in ei.value.what
    assert _line(ei.value.where) == (os.path.basename(__file__), line_of(vector, "SYNC2"))
    assert f":{line_of(cube, 'SYNC1')}" in ei.value.details
    # under spec the two declarations do not matter: the run is clean
    ptopipe.run(aic=cube_sync1, aiv=vector_sync2, args=args, platform="a2a3", protocol="spec")


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_negative_sync_period_is_a_config_error(protocol):
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(aic=None, aiv=vector_sync_negative, args=dict(fifo=ptopipe.gm_buffer(4 * SLOT8)),
                    protocol=protocol)
    assert "SyncPeriod (FiFoSyncT) -1" in ei.value.what
    assert _line(ei.value.where) == (os.path.basename(__file__), line_of(vector_sync_negative, "SYNC-NEG"))
