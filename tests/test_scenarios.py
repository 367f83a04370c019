"""The reference scenarios S1-S7 (examples/scenarios/), every variant checked against its
numpy golden on one platform / protocol pair, rotated over the variants so that each
scenario runs on both platforms and under both protocol models (:func:`configs.rotated`;
PTOPIPE_FULL=1: every variant on every pair); plus proof that the check can fail."""
from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

import ptopipe
from ptopipe import MismatchError
from ptopipe.isa.launch import compare

from configs import rotated

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCEN_DIR = os.path.join(ROOT, "examples", "scenarios")
FILES = ["s1_cv_split", "s2_cv_nosplit", "s3_vc_dequant", "s4_both_ways", "s5_subtile_gm",
         "s6_stream_both", "s7_long_stream"]
# S7: the 20,000-tile "long" variant belongs to the benchmark; here it runs with fewer tiles
REDUCED = {("s7_long_stream", "long"): dict(tiles=1200)}


def _load(name: str):
    path = os.path.join(SCEN_DIR, name + ".py")
    spec = importlib.util.spec_from_file_location("scenario_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.SCENARIO


SCENARIOS = {name: _load(name) for name in FILES}


def _cases():
    for name, variant, platform, protocol in rotated([(name, v) for name, sc in SCENARIOS.items()
                                                      for v in sc.variants]):
        yield pytest.param(name, variant, platform, protocol, id=f"{name}[{variant}]-{platform}-{protocol}")


def _check(sc, variant, platform, protocol, seed=0, **override):
    params = sc.params(variant)
    params.update(override)
    args = sc.make_args(np.random.default_rng(seed), **params)
    expected = sc.golden(args, **params)
    res = ptopipe.run(sc.aic, sc.aiv, args, platform=platform, protocol=protocol)
    compare(res.outputs, expected, sc.rtol, sc.atol, f"{sc.name}[{variant}]")
    return res, expected


def test_all_seven_scenarios_present():
    assert [sc.name for sc in SCENARIOS.values()] == FILES


@pytest.mark.parametrize("name,variant,platform,protocol", list(_cases()))
def test_scenario_matches_numpy(name, variant, platform, protocol):
    sc = SCENARIOS[name]
    res, expected = _check(sc, variant, platform, protocol, **REDUCED.get((name, variant), {}))
    s = res.summary
    assert s.platform == platform and s.protocol == protocol
    assert s.cycles > 0
    # every pushed tile was popped and freed on every pipe used
    for p in s.pipes:
        assert p["pops"] == p["frees"], p
    assert sum(p["pushes"] for p in s.pipes) > 0
    assert not s.leaks


def test_scenario_check_api_and_seed_changes_data():
    sc = SCENARIOS["s2_cv_nosplit"]
    r0 = sc.check("f32_d2_m32_n32", "a5", "spec", seed=0)
    r1 = sc.check("f32_d2_m32_n32", "a5", "spec", seed=1)
    assert not np.array_equal(r0.outputs["out"], r1.outputs["out"])


def test_s5_uses_gm_direction_on_a5():
    res, _ = _check(SCENARIOS["s5_subtile_gm"], "rounds", "a5", "spec")
    (pipe,) = res.summary.pipes
    assert pipe["pushes"] == 3 and pipe["slot_num"] == 2 and pipe["slot_size"] == 128 * 512 * 4


def test_bidirectional_scenarios_use_both_rings_with_4_slots():
    for name in ("s4_both_ways", "s6_stream_both"):
        res, _ = _check(SCENARIOS[name], "default", "a2a3", "spec")
        pipes = res.summary.pipes
        assert len(pipes) == 2, name
        assert all(p["slot_num"] == 4 and p["pushes"] > 0 for p in pipes), pipes


# --- the comparison can fail --------------------------------------------------------------
def test_wrong_golden_is_a_mismatch():
    sc = SCENARIOS["s1_cv_split"]
    bad = ptopipe.Scenario(sc.name, sc.aic, sc.aiv, sc.make_args,
                           lambda args, **p: {"out": sc.golden(args, **p)["out"] + 1.0},
                           sc.variants)
    with pytest.raises(MismatchError) as ei:
        bad.check("default", "a2a3", "spec")
    assert "does not match" in str(ei.value) and "out" in str(ei.value)


def test_kernel_with_wrong_offset_is_a_mismatch():
    """S2's vector kernel storing every tile one row too low gives wrong numbers."""
    from ptopipe.isa import (DIR_C2V, TADD, TFREE, TILE_NO_SPLIT, TLOAD, TPOP, TSTORE, GlobalTensor,
                             Tile, TileType, TPipe, float32)
    sc = SCENARIOS["s2_cv_nosplit"]
    TM, RING_UB = 16, 0x10000

    def vector(bias, out, fifo, M, N, depth):
        pipe = TPipe(0, DIR_C2V, TM * N * 4, depth, peers=(0,))(fifo, RING_UB, 0)
        t = Tile(TileType.Vec, float32, TM, N)
        b_ub = Tile(TileType.Vec, float32, TM, N, addr=0x0)
        o_ub = Tile(TileType.Vec, float32, TM, N, addr=0x4000)
        for i in range(M // TM):
            TPOP(pipe, t, TILE_NO_SPLIT)
            TLOAD(b_ub, GlobalTensor(bias.data() + i * TM * N, (TM, N)))
            TADD(o_ub, t, b_ub)
            TFREE(pipe)
            row = min(i * TM + 1, M - TM)              # off by one row
            TSTORE(GlobalTensor(out.data() + row * N, (TM, N)), o_ub)

    bad = ptopipe.Scenario(sc.name, sc.aic, (vector, None), sc.make_args, sc.golden, sc.variants)
    with pytest.raises(MismatchError):
        bad.check("f32_d2_m32_n32", "a2a3", "spec")
    # and the same variant with the real kernel passes
    sc.check("f32_d2_m32_n32", "a2a3", "spec")


def test_compare_reports_shape_and_missing_outputs():
    with pytest.raises(MismatchError, match="shape"):
        compare({"out": np.zeros((2, 2))}, {"out": np.zeros((2, 3))}, 1e-5, 1e-5)
    with pytest.raises(MismatchError, match="no such output"):
        compare({}, {"out": np.zeros(2)}, 1e-5, 1e-5)
    compare({"out": np.ones(3, np.float32)}, {"out": np.ones(3)}, 1e-5, 1e-5)
