"""The cost model is pinned to the reference points of shared/PLATFORMS.md."""
import numpy as np
import pytest

import ptopipe
from ptopipe import A2A3, A5
from ptopipe.arch import CostTable, PipeUnit
from ptopipe.isa import *


@pytest.mark.parametrize("m,k,n,itemsize,cycles", [
    (40, 50, 60, 2, 54),        # half 40x50x60
    (120, 110, 50, 4, 902),     # float 120x110x50
    (128, 128, 64, 2, 262),     # half 128x128x64
])
def test_timing_matmul_reference_points(m, k, n, itemsize, cycles):
    assert CostTable().matmul(m, k, n, itemsize) == cycles


@pytest.mark.parametrize("op,rows,cols,cycles", [
    ("TADD", 64, 64, 160), ("TEXP", 64, 64, 159), ("TDIV", 64, 64, 288),
    ("TROWSUM", 64, 64, 492), ("TROWMAX", 64, 64, 480), ("TMULS", 32, 64, 58),
])
def test_timing_vector_measured_ops(op, rows, cols, cycles):
    assert CostTable().vector_op(op, rows, cols, 4, head=True) == cycles


def test_timing_vector_head_only_when_idle_and_count_mode():
    c = CostTable()
    assert c.vector_op("TADD", 64, 64, 4, head=False) == 160 - 14
    # a 48-column f32 row is 192 bytes, not a multiple of 256: count mode adds 16
    assert c.vector_op("TADDS", 16, 48, 4) == c.vector["TADDS"][0] * 12 + 12 + 14 + 16


def test_timing_bandwidth_and_measured_tload_assumption():
    c = CostTable()
    nbytes = 128 * 128 * 4
    assert c.move("GM", "UB", nbytes) == 1119          # the cost-model table (default)
    measured = c.replace(bandwidth={("GM", "UB"): 84.5})
    assert abs(measured.move("GM", "UB", nbytes) - 776) <= 2   # the measured TLOAD
    assert measured.bandwidth[("GM", "L1")] == 78.4            # other entries kept
    assert c.move("L1", "L0B", 8192) == 64 and c.move("L0C", "GM", 16384) == 404


def test_cost_table_memo_is_per_table_and_survives_pickling():
    """Costs are memoised per table: replace() starts afresh, a pickled table (process
    sweeps) computes the same costs."""
    import pickle
    c = CostTable()
    assert c.move("GM", "UB", 4096) == c.move("GM", "UB", 4096) == 70
    slow = c.replace(bandwidth={("GM", "UB"): 8.0})
    assert slow.move("GM", "UB", 4096) == 512 and c.move("GM", "UB", 4096) == 70
    back = pickle.loads(pickle.dumps(slow))
    assert back == slow and back.move("GM", "UB", 4096) == 512
    assert pickle.loads(pickle.dumps(A2A3)).costs.matmul(120, 110, 50, 4) == 902


def _one_of_each(a, b, out, x, y):
    a1 = Tile(TileType.Mat, float16, 32, 32, addr=0)
    b1 = Tile(TileType.Mat, float16, 32, 32, addr=0x1000)
    a0 = Tile(TileType.Left, float16, 32, 32, addr=0)
    b0 = Tile(TileType.Right, float16, 32, 32, addr=0)
    acc = Tile(TileType.Acc, float32, 32, 32, addr=0)
    TLOAD(a1, a)
    TLOAD(b1, b)
    TMOV(a0, a1)
    TMOV(b0, b1)
    TMATMUL(acc, a0, b0)
    TSTORE(out, acc)


def _vec(x, y):
    t = Tile(TileType.Vec, float32, 64, 64, addr=0)
    u = Tile(TileType.Vec, float32, 64, 64, addr=0x4000)
    TLOAD(t, x)
    TADD(u, t, t)
    TMOV(t, u)
    TSTORE(y, u)


def test_timing_routing_of_each_instruction_to_its_pipe():
    rng = np.random.default_rng(0)
    args = dict(a=rng.standard_normal((32, 32)).astype(np.float16),
                b=rng.standard_normal((32, 32)).astype(np.float16),
                out=np.zeros((32, 32), np.float32),
                x=np.ones((64, 64), np.float32), y=np.zeros((64, 64), np.float32))
    res = ptopipe.run(_one_of_each, (_vec, None), args, trace=True)
    names = {c.name: c.index for c in res.cluster.cores}
    got = {(res.cluster.cores[c].name, name): PipeUnit(p).name for c, p, name, *_ in res.cluster.trace}
    assert got[("AIC", "TLOAD")] == "MTE2"
    assert got[("AIC", "TMOV")] == "MTE1"
    assert got[("AIC", "TMATMUL")] == "M"
    assert got[("AIC", "TSTORE")] == "FIX"          # from L0C
    assert got[("AIV0", "TLOAD")] == "MTE2"
    assert got[("AIV0", "TADD")] == "V"
    assert got[("AIV0", "TMOV")] == "V"             # UB -> UB
    assert got[("AIV0", "TSTORE")] == "MTE3"        # from UB
    # durations come from the table: the matmul is 6 + ceil(32/16)*ceil(32/16)*ceil(32/16)
    mm = [r for r in res.cluster.trace if r[2] == "TMATMUL"][0]
    assert mm[4] - mm[3] == 6 + 2 * 2 * 2
    add = [r for r in res.cluster.trace if r[2] == "TADD"][0]
    assert add[4] - add[3] == 160                    # queue idle: head paid
    assert names["AIV1"] == 2


def test_timing_overrides_per_run():
    def cube(x):
        pass

    def vec(x, y):
        t = Tile(TileType.Vec, float32, 64, 64, addr=0)
        TLOAD(t, x)
        TEXP(t, t)
        TSTORE(y, t)

    args = dict(x=np.zeros((64, 64), np.float32), y=np.zeros((64, 64), np.float32))
    base = ptopipe.run(None, (vec, None), args).summary.cores["AIV0"]["busy"]["V"]
    plat = A2A3.replace(costs=A2A3.costs.replace(vector={"TEXP": (4, 14, 17)}))
    slow = ptopipe.run(None, (vec, None), args, platform=plat).summary.cores["AIV0"]["busy"]["V"]
    assert base == 159 and slow == 4 * 64 + 14 + 17
    assert A5.costs.matmul(40, 50, 60, 2) == 54      # A5 uses the A2A3 table (assumption)


def test_a_cost_of_an_instruction_the_catalogue_lacks_is_refused():
    """A misspelt op would change no cost, silently: the replace names it and its neighbour."""
    from ptopipe.errors import ConfigError
    with pytest.raises(ConfigError) as ei:
        A2A3.costs.replace(vector={"TEXPP": (4, 14, 17)})
    assert "no instruction 'TEXPP'" in ei.value.what and ei.value.fix == "did you mean 'TEXP'?"


def test_timing_off_is_functional_only():
    def vec(x, y):
        t = Tile(TileType.Vec, float32, 64, 64, addr=0)
        TLOAD(t, x)
        TMULS(t, t, 3.0)
        TSTORE(y, t)

    args = dict(x=np.full((64, 64), 2, np.float32), y=np.zeros((64, 64), np.float32))
    on = ptopipe.run(None, (vec, None), args)
    off = ptopipe.run(None, (vec, None), args, timing=False)
    assert (off.outputs["y"] == 6).all() and (on.outputs["y"] == 6).all()
    assert on.summary.cycles > 100
    assert off.summary.cycles == 3 and sum(off.summary.cores["AIV0"]["busy"].values()) == 0
