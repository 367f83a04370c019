"""Ring instructions a kernel issues from a function of its own are located at their line
and the kernel line that called it, as set_flag / wait_flag are (docs/events.md): a leak and
a deadlock at a TPOP in a helper say "(called from ...)", with no library line between (a
``with`` helper's contextlib frame).  Two ends of a pipe declaring
different SyncPeriods pass under spec (which does not read it) with a warning naming both
lines - pto-isa refuses them.  A flag clash under spec says what pto-isa's rings really
number: two counter flags per ring, FlagID+2 / FlagID+3 for a DIR_BOTH pipe's V2C ring."""
from __future__ import annotations

import contextlib
import inspect
import os

import pytest

import ptopipe
from ptopipe.errors import ConfigError, DeadlockError, LeakError
from ptopipe.isa import (DIR_BOTH, DIR_C2V, TFREE, TPOP, TPUSH, Tile, TileType, TPipe, float32, gm_buffer)

R, C = 8, 16
SLOT = R * C * 4
HERE = os.path.abspath(__file__)


def _line(fn, marker: str) -> int:
    src, start = inspect.getsourcelines(fn)
    (i,) = [k for k, t in enumerate(src) if f"# {marker}" in t]
    return start + i


def _lines(where: str) -> list:
    """The (file, line) pairs of a ``file:line (called from file:line)`` location."""
    out = []
    for part in where.replace(")", "").split(" (called from "):
        file, line = part.rsplit(":", 1)
        out.append((os.path.abspath(file), int(line)))
    return out


def cube(fifo, n):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x20000, 0)
    acc = Tile(TileType.Acc, float32, R, C, addr=0)
    for i in range(n):
        TPUSH(pipe, acc)


def consume(pipe, y, i):
    TPOP(pipe, y)                                        # helper-pop
    if i != 1:
        TFREE(pipe)


def vector(fifo, n, pops):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x20000, 0)
    y = Tile(TileType.Vec, float32, R, C)
    for i in range(pops):
        consume(pipe, y, i)                              # the-call


def _run(n, pops, **kw):
    return ptopipe.run(cube, (vector, None), dict(fifo=gm_buffer(2 * SLOT), n=n, pops=pops), **kw)


def test_a_leak_at_a_tpop_in_a_helper_names_the_kernel_line_that_called_it():
    with pytest.raises(LeakError) as ei:
        _run(2, 2)
    assert _lines(ei.value.where) == [(HERE, _line(consume, "helper-pop")), (HERE, _line(vector, "the-call"))]
    assert " (called from " in str(ei.value)


def test_a_deadlock_at_a_tpop_in_a_helper_names_the_kernel_line_that_called_it():
    with pytest.raises(DeadlockError) as ei:
        _run(1, 2)                   # the second pop waits for a push that never comes
    assert _lines(ei.value.where) == [(HERE, _line(consume, "helper-pop")), (HERE, _line(vector, "the-call"))]
    blocked = next(ln for ln in ei.value.details.splitlines() if ln.strip().startswith("AIV0  TPOP"))
    assert f":{_line(vector, 'the-call')})" in blocked, blocked


@contextlib.contextmanager
def popped(pipe, y):
    TPOP(pipe, y)                                        # ctx-pop
    yield y


def with_vector(fifo, n, pops):
    pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=(0,))(fifo, 0x20000, 0)
    y = Tile(TileType.Vec, float32, R, C)
    for i in range(pops):
        with popped(pipe, y):                            # the-with
            pass


def test_a_tpop_in_a_with_helper_names_the_with_line_and_no_library_line():
    with pytest.raises(LeakError) as ei:
        ptopipe.run(cube, (with_vector, None), dict(fifo=gm_buffer(2 * SLOT), n=1, pops=1))
    assert _lines(ei.value.where) == [(HERE, _line(popped, "ctx-pop")), (HERE, _line(with_vector, "the-with"))]


def sp_cube(fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 4, peers=(0,))(fifo, 0x20000, 0)            # cube-pipe
    acc = Tile(TileType.Acc, float32, R, C, addr=0)
    for i in range(4):
        TPUSH(pipe, acc)


def sp_vector(fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 4, peers=(0,), sync_period=1)(fifo, 0x20000, 0)   # vector-pipe
    y = Tile(TileType.Vec, float32, R, C)
    for i in range(4):
        TPOP(pipe, y)
        TFREE(pipe)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_sync_period_mismatch_is_a_warning_under_spec_naming_both_ends(platform):
    args = dict(fifo=gm_buffer(4 * SLOT))
    res = ptopipe.run(sp_cube, (sp_vector, None), args, platform=platform)
    (what, at), = [(w, at) for w, at in res.summary.leaks if "SyncPeriod" in w]
    assert _lines(str(at)) == [(HERE, _line(sp_vector, "vector-pipe"))]
    assert what.startswith("C2V pipe FlagID 0 (peers AIV0): SyncPeriod (FiFoSyncT) 1 here but none (pto-isa's "
                           "default for SlotNum 4: 2) on the other end (AIC at "), what
    assert f":{_line(sp_cube, 'cube-pipe')}): spec does not read SyncPeriod" in what
    assert "--protocol pto-isa refuses the pipe" in what
    with pytest.raises(ConfigError, match="binds SyncPeriod"):
        ptopipe.run(sp_cube, (sp_vector, None), args, platform=platform, protocol="pto-isa")
    # the same declaration on both ends: no warning
    res = ptopipe.run(sp_cube, (sp_vector_explicit_default, None), args, platform=platform)
    assert not [w for w, _ in res.summary.leaks if "SyncPeriod" in w]


def sp_vector_explicit_default(fifo):
    pipe = TPipe(0, DIR_C2V, SLOT, 4, peers=(0,), sync_period=2)(fifo, 0x20000, 0)
    y = Tile(TileType.Vec, float32, R, C)
    for i in range(4):
        TPOP(pipe, y)
        TFREE(pipe)


def both_cube(fifo, fifo2):
    TPipe(5, DIR_C2V, SLOT, 2)(fifo2, 0x28000, 0)
    TPipe(3, DIR_BOTH, SLOT, 2)(fifo, 0x20000, 0x40000)


def test_a_flag_clash_under_spec_says_how_pto_isa_numbers_a_both_ways_pipe():
    args = dict(fifo=gm_buffer(4 * SLOT), fifo2=gm_buffer(2 * SLOT))
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(both_cube, None, args)
    fix = ei.value.fix
    assert ("under pto-isa (the device library), which uses two counter flags per ring, whatever its SlotNum "
            "(ready FlagID, free FlagID+1; a DIR_BOTH pipe's V2C ring: FlagID+2 and FlagID+3), these pipes get "
            "flags of their own: run it with --protocol pto-isa") in fix, fix
    assert "FlagID and FlagID+1 only" not in fix
