"""The runs of one check share a CheckScope: the scenario's inputs and golden, made once,
and the memory buffers of the runs that passed, handed zeroed to the next run's cluster.

A run under a scope must be the run without one: the same outputs, cycles, errors (class,
text, line) and explored interleavings (digests).  A pooled memory must be a fresh one (space,
owner, size, every byte zero, page-aligned address 0), whatever the run before wrote.
Inputs a run could change (a mutable value handed to the kernels) or that print are made
per run, as without a scope."""
from __future__ import annotations

import dataclasses
import os

import numpy as np
from hypothesis import given, settings, strategies as st

import pytest

import ptopipe.sim.memory as memory
from ptopipe import Scenario
from ptopipe.driver.loader import load_scenarios
from ptopipe.isa import (DIR_C2V, TFREE, TILE_UP_DOWN, TPOP, TPUSH, TSTORE, GlobalTensor, Tile, TileType,
                         TPipe, float32, get_subblockid, run)
from ptopipe.isa.explore import CheckScope, explore
from ptopipe.isa.launch import gm_buffer
from ptopipe.isa.scenario import reusable_args
from ptopipe.sim import Cluster
from ptopipe.sim.memory import MemoryPool

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
S1 = os.path.join(ROOT, "scenarios", "s1_cv_split.py")
M10 = os.path.join(ROOT, "misuse", "m10_schedule_dependent.py")


def _memories(cluster) -> list:
    return [cluster.gm] + [m for c in cluster.cores for m in c.memories.values()]


def _finished(pool=None) -> Cluster:
    cl = Cluster("a2a3", gm_size=1 << 14, pool=pool)
    cl.run({})                                   # (no kernel: the run ends at once)
    return cl


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10), st.integers(0, 1 << 19), st.binary(min_size=1, max_size=64)),
                max_size=12))
def test_a_pooled_memory_is_a_fresh_one(writes):
    pool = MemoryPool()
    old = _finished(pool)
    mems = _memories(old)
    for k, addr, data in writes:                 # whatever the run before left in them
        m = mems[k % len(mems)]
        if m.size:
            a = addr % m.size
            n = min(len(data), m.size - a)
            m.buf[a:a + n] = np.frombuffer(data[:n], np.uint8)
    bufs = {id(m.buf) for m in mems}
    pool.reclaim(old)
    assert old.gm is None and all(c.memories == {} for c in old.cores)
    assert all(m.buf is None for m in mems)      # a late read of the old run fails
    again, fresh = Cluster("a2a3", gm_size=1 << 14, pool=pool), Cluster("a2a3", gm_size=1 << 14)
    got = _memories(again)
    assert [id(m.buf) for m in got if id(m.buf) in bufs] and not set(map(id, got)) & set(map(id, mems))
    assert [(m.space, m.owner, m.size) for m in got] == [(m.space, m.owner, m.size) for m in _memories(fresh)]
    for m in got:
        assert m.buf.dtype == np.uint8 and m.buf.shape == (m.size,) and not m.buf.any()
        assert m.size == 0 or m.buf.ctypes.data % 4096 == 0


def test_a_cluster_whose_run_has_not_ended_keeps_its_memories():
    pool = MemoryPool()
    cl = Cluster("a2a3", gm_size=1 << 12, pool=pool)
    pool.reclaim(cl)
    assert len(pool) == 0 and cl.gm is not None and cl.gm.buf is not None


def _outcome(ex) -> tuple:
    fails = [(str(k), type(e).__name__, str(e), e.where) for k, e in ex.failures]
    return ex.runs, ex.passed, sorted(ex.digests), ex.complete, ex.events, ex.warnings, fails


@pytest.mark.usefixtures("every_schedule")
def test_an_exploration_shares_its_data_and_memories_and_finds_the_same(monkeypatch):
    (s1,) = load_scenarios(S1)
    made, fresh = [], []
    sc = dataclasses.replace(s1, make_args=lambda rng, **p: made.append(1) or s1.make_args(rng, **p))
    aligned = memory._aligned_zeros
    monkeypatch.setattr(memory, "_aligned_zeros", lambda *a, **k: fresh.append(1) or aligned(*a, **k))
    kw = dict(schedules=12, variant="f32_ud_d1_m32")
    alone = explore(sc, scope=None, **kw)
    n_made, n_fresh = len(made), len(fresh)
    assert n_made == 13 and n_fresh == 13 * 11           # a run: one GM and ten local memories
    shared = explore(sc, **kw)
    assert len(made) - n_made == 1                        # made once for the check
    assert len(fresh) - n_fresh == 11                     # one cluster's memories for 13 runs
    assert alone.ok and _outcome(shared) == _outcome(alone)


def test_failing_schedules_are_found_the_same_with_a_scope():
    """Failures (a counter overflow under some schedules) keep their cluster; the runs after
    them take fresh memories: every run's report is the one without a scope."""
    (sc,) = load_scenarios(M10)
    kw = dict(schedules=10, platform="a5", protocol="pto-isa", stop_on_first=False)
    alone, shared = explore(sc, scope=None, **kw), explore(sc, **kw)
    assert alone.failures and alone.passed
    assert _outcome(shared) == _outcome(alone)


T = 16


def _cube(fifo, rows):
    pipe = TPipe(0, DIR_C2V, T * T * 4, 2)(fifo, 0x8000, 0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0x0)
    for _ in rows:
        TPUSH(pipe, acc, TILE_UP_DOWN)


def _vector(fifo, rows):
    pipe = TPipe(0, DIR_C2V, T * T * 4, 2)(fifo, 0x8000, 0)
    t = Tile(TileType.Vec, float32, T // 2, T)
    for _ in rows:
        TPOP(pipe, t, TILE_UP_DOWN)
        TFREE(pipe)


def test_inputs_a_run_could_change_or_that_print_are_made_per_run(capsys):
    calls = []

    def listed(rng):
        calls.append("list")
        return dict(fifo=gm_buffer(2 * T * T * 4), rows=[0, 1, 2])        # a kernel may change a list

    def printing(rng):
        calls.append("print")
        print("making the inputs")
        return dict(fifo=gm_buffer(2 * T * T * 4), rows=(0, 1, 2))

    for make in (listed, printing):
        ex = explore(Scenario("s", _cube, _vector, make, lambda a: {}), schedules=3)
        assert ex.ok, ex.first
    assert calls == ["list"] * 4 + ["print"] * 4
    assert capsys.readouterr().out.count("making the inputs") == 4
    assert not reusable_args(dict(rows=[0])) and not reusable_args(dict(k=(1, [2])))
    assert reusable_args(dict(a=np.zeros(2), n=3, split=TILE_UP_DOWN, t=(1, 2.0, "x"), d=None))


def test_a_scope_serves_one_scenario():
    """Another scenario with the same variant and seed gets its own data."""
    scope = CheckScope()
    one = Scenario("a", _cube, _vector, lambda rng: dict(rows=(0,), n=1), lambda a: {})
    two = Scenario("b", _cube, _vector, lambda rng: dict(rows=(0,), n=2), lambda a: {})
    assert scope.prepared(one, "default", 0)[0]["n"] == 1
    assert scope.prepared(two, "default", 0)[0]["n"] == 2
    assert scope.prepared(one, "default", 0) is scope.prepared(one, "default", 0)
    assert scope.prepared(one, "default", 1) is not scope.prepared(one, "default", 0)


def test_a_run_on_pooled_memories_is_the_run_on_fresh_ones():
    """Outputs, cycles, summary and trace of a traced run on the buffers of an earlier run
    (left full of other bytes) are those of the run on fresh memories: the kernel reads the
    never-written half of its output tile, so a buffer not zeroed would show."""

    def cube(a, fifo, rows):
        pipe = TPipe(0, DIR_C2V, T * T * 4, 2)(fifo, 0x8000, 0)
        acc = Tile(TileType.Acc, float32, T, T, addr=0x0)          # never written: zeros
        for _ in rows:
            TPUSH(pipe, acc, TILE_UP_DOWN)

    def vector(out, fifo, rows):
        pipe = TPipe(0, DIR_C2V, T * T * 4, 2)(fifo, 0x8000, 0)
        t = Tile(TileType.Vec, float32, T // 2, T)
        half = GlobalTensor(out.data() + get_subblockid() * (T // 2) * T, (T // 2, T))
        for _ in rows:
            TPOP(pipe, t, TILE_UP_DOWN)
            TSTORE(half, t)
            TFREE(pipe)

    def go(pool=None):
        args = dict(a=np.ones((T, T), np.float32), out=np.full((T, T), 7, np.float32),
                    fifo=gm_buffer(2 * T * T * 4), rows=(0, 1, 2))
        return run(cube, vector, args, trace=True, pool=pool)

    fresh = go()
    pool = MemoryPool()
    dirty = go(pool)
    for m in _memories(dirty.cluster):
        m.buf.fill(0xA5)
    pool.reclaim(dirty.cluster)
    again = go(pool)
    assert len(pool) == 0                                     # every buffer was reused
    assert np.array_equal(again.outputs["out"], fresh.outputs["out"]) and not fresh.outputs["out"].any()
    assert again.summary.cycles == fresh.summary.cycles
    assert again.summary.cores == fresh.summary.cores and again.summary.pipes == fresh.summary.pipes
    assert again.cluster.trace == fresh.cluster.trace and len(fresh.cluster.trace) > 10
