"""The machine: cross-core flag counters (SET/WAIT, overflow), the deterministic
scheduler (same inputs => identical outputs, cycles and summary), deadlock and runaway
detection, memories with bounds checks, and the platform sizes."""
from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

import ptopipe
from ptopipe import DeadlockError, MemoryConflictError, ProtocolError, PtoPipeError
from ptopipe.arch import A2A3, A5, MemSpace, PipeUnit
from ptopipe.sim import Cluster, CoreState, Memory, gm_layout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _scenario(name):
    path = os.path.join(ROOT, "examples", "scenarios", name + ".py")
    spec = importlib.util.spec_from_file_location("sim_scenario_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.SCENARIO


# --- flags ---------------------------------------------------------------------------------
def test_flag_set_increments_and_overflow_is_an_error():
    cl = Cluster("a2a3")
    f = cl.flag(cl.aic, cl.aiv0, 3)
    assert cl.flag(cl.aic, cl.aiv0, 3) is f                # one flag per (sender, receiver, id)
    assert cl.flag(cl.aiv0, cl.aic, 3) is not f            # the other direction is another flag
    limit = cl.platform.flag_counter_max
    for i in range(limit):
        cl.set_flag(cl.aic, f, 10 * i)
    assert f.count == limit and len(f.arrivals) == limit
    assert list(f.arrivals) == [10 * i + cl.platform.cross_core_latency for i in range(limit)]
    with pytest.raises(ProtocolError) as ei:
        cl.set_flag(cl.aic, f, 0)
    assert "overflows" in str(ei.value) and "flag 3" in str(ei.value)
    assert f.count == limit                                 # the failed SET changed nothing


def test_wait_blocks_until_set_then_decrements():
    cl = Cluster("a2a3")
    f = cl.flag(cl.aic, cl.aiv0, 0)
    seen = {}

    def producer():
        cl.aic.issue(PipeUnit.S, 1000)                     # some work first
        cl.aic.clock = 1000
        cl.set_flag(cl.aic, f, cl.aic.clock)
        cl.set_flag(cl.aic, f, cl.aic.clock)

    def consumer():
        seen["arrival"] = cl.aiv0.wait_flag(f, "test wait")
        seen["clock"] = cl.aiv0.clock
        seen["count_after"] = f.count

    cl.run({cl.aiv0: (consumer, {}), cl.aic: (producer, {})})
    lat = cl.platform.cross_core_latency
    assert seen["arrival"] == 1000 + lat
    assert seen["clock"] >= 1000 + lat                     # the WAIT held the consumer's clock
    assert seen["count_after"] == 1                        # two SETs, one WAIT
    assert f.count == 1 and len(f.arrivals) == 1         # one SET left pending
    assert cl.aiv0.state is CoreState.DONE and cl.aic.state is CoreState.DONE


def test_wait_with_nobody_setting_is_a_deadlock_naming_core_and_flag():
    cl = Cluster("a2a3")
    f = cl.flag(cl.aiv1, cl.aic, 5)

    def waiter():
        cl.aic.wait_flag(f, "a test WAIT")

    def idle_peer():
        cl.aiv1.issue(PipeUnit.V, 10)

    with pytest.raises(DeadlockError) as ei:
        cl.run({cl.aic: (waiter, {}), cl.aiv1: (idle_peer, {})})
    msg = str(ei.value)
    assert "AIC" in ei.value.what
    assert "flag 5" in msg and "AIV1" in msg


def test_mutual_wait_is_a_deadlock_not_a_hang():
    cl = Cluster("a5")
    to_v = cl.flag(cl.aic, cl.aiv0, 0)
    to_c = cl.flag(cl.aiv0, cl.aic, 0)

    def cube():
        cl.aic.wait_flag(to_c, "cube waits")
        cl.set_flag(cl.aic, to_v, cl.aic.clock)

    def vec():
        cl.aiv0.wait_flag(to_v, "vector waits")
        cl.set_flag(cl.aiv0, to_c, cl.aiv0.clock)

    with pytest.raises(DeadlockError) as ei:
        cl.run({cl.aic: (cube, {}), cl.aiv0: (vec, {})})
    assert "AIC" in ei.value.what and "AIV0" in ei.value.what


def test_flag_overflow_inside_a_run_is_reported():
    from ptopipe.isa import current_core

    def spammer():
        core = current_core()
        f = core.cluster.flag(core, core.cluster.aiv0, 2)
        for _ in range(100):
            core.cluster.set_flag(core, f, core.clock)

    with pytest.raises(ProtocolError, match="overflows"):
        ptopipe.run(aic=spammer)


def test_runaway_kernel_hits_the_instruction_budget():
    from ptopipe.isa import TADDS, Tile, TileType, float32

    def forever():
        t = Tile(TileType.Vec, float32, 8, 8, addr=0x0)
        while True:
            TADDS(t, t, 1.0)

    with pytest.raises(PtoPipeError, match="instruction budget"):
        ptopipe.run(aiv=(forever, None), max_instructions=500)


# --- determinism ---------------------------------------------------------------------------
def _summary_key(s):
    return (s.platform, s.protocol, s.cycles, s.cores, s.pipes, s.leaks)


@pytest.mark.parametrize("name,variant", [("s4_both_ways", "lr"), ("s6_stream_both", "default"),
                                          ("s3_vc_dequant", "int8_ud_k256_n64")])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_same_inputs_give_identical_outputs_cycles_and_summary(name, variant, platform):
    sc = _scenario(name)
    r1, _ = sc.run(variant, platform, "spec", seed=3, trace=True)
    r2, _ = sc.run(variant, platform, "spec", seed=3, trace=True)
    for k in r1.outputs:
        assert r1.outputs[k].tobytes() == r2.outputs[k].tobytes(), k
    assert r1.summary.cycles > 0
    assert _summary_key(r1.summary) == _summary_key(r2.summary)
    assert r1.cluster.trace == r2.cluster.trace and len(r1.cluster.trace) > 0


def _field(rec, name, index):
    """Field of a trace record: typed records by attribute, tuples by position."""
    return getattr(rec, name) if hasattr(rec, name) else rec[index]


def _interleaving(res, flag_log):
    """What a run did, in the order the simulator did it: the global issue order of every
    instruction (core, name, start, end), each core's own instruction sequence, and the
    global sequence of cross-core flag SETs and WAITs (core, op, sender, receiver, id)."""
    recs = [(_field(r, "core", 0), _field(r, "name", 2), _field(r, "start", 3), _field(r, "end", 4))
            for r in res.cluster.trace]
    per_core = {c: [r[1:] for r in recs if r[0] == c] for c in {r[0] for r in recs}}
    return {"global": recs, "per_core": per_core, "flags": list(flag_log)}


def _run_logged(monkeypatch, seed):
    """One traced run of S4 (lr) with ``schedule_seed=seed``, logging every SET and WAIT."""
    from ptopipe.sim.core import Core

    log = []
    set_flag, wait_flag = Cluster.set_flag, Core.wait_flag

    def logged_set(self, sender, flag, at, order=None):
        log.append((sender.name, "SET", flag.sender.name, flag.receiver.name, flag.id))
        return set_flag(self, sender, flag, at, order)

    def logged_wait(self, flag, what, info=None):
        arrival = wait_flag(self, flag, what, info)
        log.append((self.name, "WAIT", flag.sender.name, flag.receiver.name, flag.id))
        return arrival

    monkeypatch.setattr(Cluster, "set_flag", logged_set)
    monkeypatch.setattr(Core, "wait_flag", logged_wait)
    sc = _scenario("s4_both_ways")
    args = sc.args("lr", seed=0)
    res = ptopipe.run(sc.aic, sc.aiv, args, schedule_seed=seed, trace=True)
    np.testing.assert_array_equal(res["out"], sc.golden(args)["out"])     # every schedule is correct
    monkeypatch.undo()
    return res, _interleaving(res, log)


def test_schedule_seed_replays_the_exact_interleaving(monkeypatch):
    runs = {seed: [_run_logged(monkeypatch, seed) for _ in range(2 if seed == 1 else 1)]
            for seed in (None, 1, 2, 3)}
    (r1, i1), (r1b, i1b) = runs[1]
    assert i1["global"] and i1["flags"]
    # the same seed replays the same run: instruction order, flag order, times, outputs
    assert i1b == i1
    assert r1b.cluster.trace == r1.cluster.trace
    assert r1b["out"].tobytes() == r1["out"].tobytes()
    assert _summary_key(r1b.summary) == _summary_key(r1.summary)
    # other seeds (and the default scheduler) interleave the cores differently ...
    orders = {seed: [rec[0] for rec in runs[seed][0][1]["global"]] for seed in runs}
    assert len({tuple(o) for o in orders.values()}) == len(orders), "seeds gave the same interleaving"
    flag_orders = {tuple(runs[seed][0][1]["flags"]) for seed in runs}
    assert len(flag_orders) > 1, "every seed gave the same SET/WAIT sequence"
    # ... while each core still issues its own program in the same order, at the same times
    for seed in runs:
        assert runs[seed][0][1]["per_core"] == i1["per_core"], seed
        assert sorted(runs[seed][0][1]["flags"]) == sorted(i1["flags"])


def test_different_inputs_give_different_outputs():
    sc = _scenario("s6_stream_both")
    a, _ = sc.run("default", "a2a3", "spec", seed=0)
    b, _ = sc.run("default", "a2a3", "spec", seed=1)
    assert a["out"].tobytes() != b["out"].tobytes()


# --- memories ------------------------------------------------------------------------------
def test_memory_bounds():
    m = Memory(MemSpace.UB, 1024, "AIV0")
    v = m.view(0, np.float32, (16, 16))                    # exactly the whole memory
    assert v.shape == (16, 16)
    m.view(1024 - 4, np.float32, (1,))
    with pytest.raises(MemoryConflictError) as ei:
        m.view(4, np.float32, (16, 16))
    assert "AIV0.UB" in str(ei.value) and "outside" in str(ei.value)
    with pytest.raises(MemoryConflictError):
        m.view(-4, np.float32, (1,))
    with pytest.raises(MemoryConflictError):
        m.check(1000, 25)
    m.check(1000, 24)
    # strided views are checked on their real extent
    m.view(0, np.float32, (4, 4), (64, 1))                 # last element at byte 3*256+12
    with pytest.raises(MemoryConflictError):
        m.view(0, np.float32, (5, 4), (64, 1))


def test_memory_views_alias_the_same_bytes():
    m = Memory(MemSpace.GM, 256)
    a = m.view(0, np.float32, (4, 4))
    b = m.view(16, np.float32, (4,))                       # row 1 of a
    b[:] = [1, 2, 3, 4]
    np.testing.assert_array_equal(a[1], [1, 2, 3, 4])
    assert m.buf[16:20].view(np.float32)[0] == 1


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="no shared-memory files on this system")
def test_a_shared_gm_is_a_file_another_mapping_of_which_sees_its_bytes():
    import mmap
    from ptopipe.sim.memory import MemoryPool
    pool = MemoryPool()
    cl = Cluster("a2a3", gm_size=5000, shared_gm=True, pool=pool)
    assert Cluster("a2a3", gm_size=5000).gm.file() is None           # private unless asked for
    view = mmap.mmap(cl.gm.file(), 8192, prot=mmap.PROT_READ)         # (whole pages of the file)
    cl.gm.buf[4096:4100] = [1, 2, 3, 4]
    assert view[4096:4100] == bytes([1, 2, 3, 4]) and cl.gm.buf.ctypes.data % 4096 == 0
    cl.run({})
    buf = cl.gm.buf
    pool.reclaim(cl)
    assert Cluster("a2a3", gm_size=5000, pool=pool).gm.file() is None  # a shared buffer is pooled as one
    again = Cluster("a2a3", gm_size=5000, shared_gm=True, pool=pool).gm
    assert again.buf is buf and again.file() is not None and not again.buf.any()


def test_gm_layout_is_aligned_and_disjoint():
    addrs, end = gm_layout([10, 1000, 0, 513], alignment=512, base=0x1000)
    assert addrs == [0x1000, 0x1200, 0x1600, 0x1800]
    assert end == 0x1C00
    assert all(a % 512 == 0 for a in addrs)


@pytest.mark.parametrize("plat,sizes", [
    ("a2a3", {MemSpace.UB: 192, MemSpace.L1: 512, MemSpace.L0A: 64, MemSpace.L0B: 64, MemSpace.L0C: 128}),
    ("a5", {MemSpace.UB: 256, MemSpace.L1: 512, MemSpace.L0A: 64, MemSpace.L0B: 64, MemSpace.L0C: 256}),
])
def test_cluster_memories_sized_by_platform(plat, sizes):
    cl = Cluster(plat)
    assert [c.name for c in cl.cores] == ["AIC", "AIV0", "AIV1"]
    assert (cl.aiv0.subblock, cl.aiv1.subblock) == (0, 1)
    for space, kib in sizes.items():
        core = cl.aiv0 if space is MemSpace.UB else cl.aic
        assert core.memory(space).size == kib * 1024
        assert core.memory(space).buf.dtype == np.uint8
    assert cl.aiv1.memory(MemSpace.UB) is not cl.aiv0.memory(MemSpace.UB)
    with pytest.raises(ptopipe.KernelError):
        cl.aic.memory(MemSpace.UB)


def test_platform_constants():
    assert A2A3.flags_per_direction == 8 and A5.flags_per_direction == 16   # seed 001: FlagID 0-7 / 0-15
    for p in (A2A3, A5):
        assert p.slot_num_for(False) == 8 and p.slot_num_for(True) == 4
        assert p.alignment == 32
    assert A2A3.ring_in_gm and not A2A3.gm_directions
    assert not A5.ring_in_gm and A5.gm_directions
    big = A2A3.replace(mem_sizes={"UB": 64 * 1024}, cross_core_latency=5)
    assert big.mem_size(MemSpace.UB) == 64 * 1024 and big.cross_core_latency == 5
    assert A2A3.mem_size(MemSpace.UB) == 192 * 1024      # the original is unchanged
    with pytest.raises(ptopipe.ConfigError):
        A2A3.replace(no_such_field=1)
    with pytest.raises(ptopipe.ConfigError):
        ptopipe.get_platform("a9")
