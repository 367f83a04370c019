"""A synthetic producer/consumer pipeline whose per-tile times are exact (cost overrides):
the Cube pushes N tiles (each TPUSH takes Tp on FIX), one Vector core pops each tile
(load Tl on MTE2) and scales it (Tv on V) before TFREE, so Tc = Tl + Tv.

depth 1:  the ring serialises producer and consumer: ~ N * (Tp + Tc + 2 L)
depth>=2: they overlap:                             ~ Tp + Tc + (N - 1) * max(Tp, Tc)
(L = cross-core latency; 0 unless stated, so the formulas are exact up to issue cycles).
"""
import numpy as np
import pytest

import ptopipe
from ptopipe import A2A3
from ptopipe.isa import *

T = 16
NB = T * T * 4          # bytes per tile


def cube(x, eye, fifo, n, depth):
    pipe = TPipe(0, DIR_C2V, NB, depth, peers=(0,))(fifo)
    x1 = Tile(TileType.Mat, float32, T, T, addr=0)
    e1 = Tile(TileType.Mat, float32, T, T, addr=0x1000)
    x0 = Tile(TileType.Left, float32, T, T, addr=0)
    e0 = Tile(TileType.Right, float32, T, T, addr=0)
    acc = Tile(TileType.Acc, float32, T, T, addr=0)
    TLOAD(x1, x)
    TLOAD(e1, eye)
    TMOV(x0, x1)
    TMOV(e0, e1)
    TMATMUL(acc, x0, e0)
    for _ in range(n):
        TPUSH(pipe, acc)


def vector(out, fifo, n, depth):
    pipe = TPipe(0, DIR_C2V, NB, depth, peers=(0,))(fifo, 0x8000)
    t = Tile(TileType.Vec, float32, T, T)
    o = Tile(TileType.Vec, float32, T, T, addr=0)
    dst = GlobalTensor(out.data(), (T, T))
    for i in range(n):
        TPOP(pipe, t)
        TMULS(o, t, 2.0)
        TFREE(pipe)
        dst.assign(out.data() + i * T * T)
        TSTORE(dst, o)


def platform(tp, tl, tv, latency=0):
    # TPUSH (L0C->GM) = NB / bw = tp; TPOP load (GM->UB) = tl; TMULS = 1 * 4 repeats + tail
    costs = A2A3.costs.replace(bandwidth={("L0C", "GM"): NB / tp, ("GM", "UB"): NB / tl,
                                          ("UB", "GM"): 1e9},
                               vector={"TMULS": (1, 0, tv - NB // 256)}, count_mode_penalty=0)
    return A2A3.replace(cross_core_latency=latency, costs=costs)


def run(n, depth, tp, tl, tv, latency=0):
    rng = np.random.default_rng(1)
    x = rng.integers(-9, 9, (T, T)).astype(np.float32)
    args = dict(x=x, eye=np.eye(T, dtype=np.float32), out=np.zeros((n * T, T), np.float32),
                fifo=ptopipe.gm_buffer(depth * NB), n=n, depth=depth)
    res = ptopipe.run(cube, (vector, None), args, platform=platform(tp, tl, tv, latency))
    assert (res.outputs["out"] == np.tile(2 * x, (n, 1))).all()
    return res.summary.cycles


N = 40


@pytest.mark.parametrize("tp,tl,tv", [(256, 100, 100), (128, 100, 200), (200, 80, 120)])
def test_timing_depth1_serialises(tp, tl, tv):
    tc = tl + tv
    cycles = run(N, 1, tp, tl, tv)
    assert cycles == pytest.approx(N * (tp + tc), rel=0.02)


@pytest.mark.parametrize("depth", [2, 4, 8])
@pytest.mark.parametrize("tp,tl,tv", [(256, 100, 100), (128, 100, 200), (200, 80, 120)])
def test_timing_deeper_rings_overlap(depth, tp, tl, tv):
    tc = tl + tv
    cycles = run(N, depth, tp, tl, tv)
    assert cycles == pytest.approx(tp + tc + (N - 1) * max(tp, tc), rel=0.02)


def test_timing_depth1_pays_flag_latency_twice_per_tile():
    tp, tl, tv, lat = 200, 100, 100, 150
    cycles = run(N, 1, tp, tl, tv, latency=lat)
    assert cycles == pytest.approx(N * (tp + tl + tv + 2 * lat), rel=0.02)


def test_timing_stall_kinds_producer_waits_free_consumer_waits_ready():
    from ptopipe.report import profile
    rng = np.random.default_rng(1)
    args = dict(x=rng.integers(-9, 9, (T, T)).astype(np.float32), eye=np.eye(T, dtype=np.float32),
                out=np.zeros((N * T, T), np.float32), fifo=ptopipe.gm_buffer(2 * NB), n=N, depth=2)
    # consumer-bound: the Cube waits for free slots, the Vector core never waits for data
    res = ptopipe.run(cube, (vector, None), args, platform=platform(50, 100, 200), trace=True)
    prof = profile(res)
    aic, aiv = prof.cores["AIC"], prof.cores["AIV0"]
    assert aic.stalls["free"] > 0.5 * prof.cycles and aic.stalls["ready"] == 0
    assert aiv.stalls["ready"] < 0.05 * prof.cycles
    assert prof.bottleneck.startswith("Load-bound") or prof.bottleneck.startswith("Vector-bound") \
        or "AIV0" in prof.bottleneck
    # producer-bound: now the Vector core waits for data
    res = ptopipe.run(cube, (vector, None), args, platform=platform(400, 50, 50), trace=True)
    prof = profile(res)
    assert prof.cores["AIV0"].stalls["ready"] > 0.5 * prof.cycles
    assert prof.cores["AIC"].stalls["free"] == 0
    assert prof.bottleneck == f"Fixpipe-bound (FIX, L0C out): AIC FIX pipe busy {prof.cores['AIC'].utilisation['FIX']:.0%}"
    for c in prof.cores.values():           # the parts add up to the total
        assert c.active + sum(c.stalls.values()) == prof.cycles
