"""The pto-isa model per platform (docs/protocols.md): where pto-isa's A2A3 and A5 headers
differ, kernels behave as each platform's code does.  Correct kernels run clean on every
platform/protocol combo where they are valid; broken ones are reported with the right
class at the right line (``# <marker>`` comments, found with ``line_of``)."""
import importlib.util
import os
from dataclasses import replace

import numpy as np
import pytest

import ptopipe
from ptopipe import ConfigError, DeadlockError, ProtocolError
from ptopipe.driver.loader import load_scenarios
from ptopipe.isa import *  # noqa: F403
from ptopipe.isa.explore import run_schedule
from ptopipe.isa.pipe import PTO_ISA, PTO_ISA_A5, SPEC, model_for
from ptopipe.protocol.model import SPEC_A5, compile_model, nosplit_one_lane
from markers import line_of

HERE = __file__
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MISUSE = os.path.join(ROOT, "examples", "misuse")
COMBOS = [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec"), ("a5", "pto-isa")]
T = 16
SLOT = T * T * 4

pytestmark = pytest.mark.usefixtures("no_hang")


def _where(err):
    path, _, line = (err.where or "").rpartition(":")
    return os.path.abspath(path), int(line)


def test_the_model_is_chosen_per_platform():
    assert model_for("spec", "a2a3") is SPEC and model_for("spec", "a5") is SPEC_A5
    assert SPEC_A5 == replace(SPEC, nosplit_lane0=True)     # seed 003 with the A5 no-split lane
    assert model_for("pto-isa", "a2a3") is PTO_ISA and model_for("pto-isa", "a5") is PTO_ISA_A5
    assert PTO_ISA.platform == "a2a3" and PTO_ISA_A5.platform == "a5"
    assert not PTO_ISA.tfree_after_pop_frees and PTO_ISA_A5.tfree_after_pop_frees
    assert not PTO_ISA.nosplit_lane0 and PTO_ISA_A5.nosplit_lane0
    assert not SPEC.nosplit_lane0 and SPEC_A5.nosplit_lane0


def test_a_no_split_pipe_has_one_lane_on_a5_under_every_device_protocol():
    """The lanes of a TILE_NO_SPLIT pipe are the platform's rule (docs/protocols.md, *Vector
    lanes of a NO_SPLIT pipe*): one, AIV0, on A5; both on A2A3 - whatever the protocol."""
    assert nosplit_one_lane("a5") and not nosplit_one_lane("a2a3")
    for protocol in ("spec", "pto-isa", "pto-isa-head", "pto-isa@3186c381"):
        assert model_for(protocol, "a5").nosplit_lane0 if "@" not in protocol else \
            model_for("pto-isa", "a5", library=protocol.split("@")[1]).nosplit_lane0
        assert compile_model(protocol, "a5").nosplit_lane0 and not compile_model(protocol, "a2a3").nosplit_lane0
    assert not model_for("spec", "a2a3").nosplit_lane0 and not model_for("pto-isa", "a2a3").nosplit_lane0


# --- a DIR_BOTH run-ahead kernel that fills exactly SlotNum slots -------------------------------
def _s4(depth):
    path = os.path.join(ROOT, "examples", "scenarios", "s4_both_ways.py")
    spec = importlib.util.spec_from_file_location(f"_pp_s4_{depth}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.DEPTH = mod.LAG = depth          # the Vector cores push SlotNum tiles before their first pop
    mod.M = 2 * depth * mod.TM           # then every slot is filled once more (not S4's 8 tiles)
    return mod


@pytest.mark.parametrize("platform,protocol", COMBOS)
@pytest.mark.parametrize("depth", [1, 2, 4])
@pytest.mark.parametrize("split", ["ud", "lr"])
def test_dir_both_run_ahead_filling_slot_num_slots_is_clean(platform, protocol, depth, split):
    s4 = _s4(depth)
    sc = s4.SCENARIO
    params = sc.params(split)
    args = sc.make_args(np.random.default_rng(1), **params)
    res = ptopipe.run(sc.aic, sc.aiv, args, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res["out"], sc.golden(args)["out"])


# --- TPipe(DIR_V2C_CTRL): not compilable in pto-isa; TMPipe CTRL works ------------------------
def _ctrl_kernels(make, lanes=1):
    """A Cube popping three control words the Vector lanes push (``lanes``: AIV0 alone, or both
    pushing each word)."""
    got = []

    def cube(ctrl):
        pipe = make(ctrl)
        for _ in range(3):
            got.append(TPOP(pipe))  # cube pop

    def vec(ctrl):
        pipe = make(ctrl)
        word = Tile(TileType.Vec, int32, 1, 8, addr=0)
        for i in range(3):
            TEXPANDS(word, 7 + i)
            TPUSH(pipe, word)
    return cube, (vec if lanes == 2 else (vec, None)), got


def _tpipe_ctrl(ctrl):
    return TPipe(0, DIR_V2C_CTRL, 32, 4, peers=(0,))(ctrl)   # tpipe ctrl


def _tmpipe_ctrl(ctrl):
    """A control TMPipe of one Vector lane (V1C1_VEC0): seed 001's 1 Cube : 1 Vector ratio."""
    w = Tile(TileType.Vec, int32, 1, 8)
    return TMPipe(0, FIFOType.CTRL_FIFO, 4, 1, w, w, vc_ratio=VecCubeRatio.V1C1_VEC0)(ctrl)


def _tmpipe_ctrl_both(ctrl):
    """A control TMPipe of both Vector lanes (V2C1_VECS, the default), each pushing every word:
    pto-isa's form - its Cube waits for both lanes' flags of a TMPipe whatever the ratio
    (``Consumer::wait``: FlagID and FlagID + 16 on A5, a CV_CORES_SYNC wait_flag_dev on A2A3)."""
    w = Tile(TileType.Vec, int32, 1, 8)
    return TMPipe(0, FIFOType.CTRL_FIFO, 4, 1, w, w)(ctrl)   # both lanes


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_tpipe_ctrl_is_a_config_error_under_pto_isa(platform):
    cube, vec, _ = _ctrl_kernels(_tpipe_ctrl)
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(cube, vec, dict(ctrl=gm_buffer(128)), platform=platform, protocol="pto-isa")
    assert _where(ei.value) == (os.path.abspath(HERE), line_of(_tpipe_ctrl, "tpipe ctrl"))
    assert "TMPipe" in ei.value.fix and "CTRL_FIFO" in ei.value.fix


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_ctrl_through_tmpipe_and_spec_tpipe_run_clean(platform, protocol):
    """Under spec the control TPipe and a one-lane control TMPipe run; under pto-isa the control
    TMPipe both Vector lanes push (each lane's word is the same four bytes of the slot: no race
    and no warning), while its one-lane form hangs at the Cube's first TPOP on AIV1's flag."""
    kinds = [(_tpipe_ctrl, 1), (_tmpipe_ctrl, 1)] if protocol == "spec" else [(_tmpipe_ctrl_both, 2)]
    for mk, lanes in kinds:
        cube, vec, got = _ctrl_kernels(mk, lanes)
        res = ptopipe.run(cube, vec, dict(ctrl=gm_buffer(128)), platform=platform, protocol=protocol)
        assert got == [7, 8, 9] and not res.summary.leaks
    if protocol == "pto-isa":
        cube, vec, got = _ctrl_kernels(_tmpipe_ctrl)
        with pytest.raises(DeadlockError) as ei:
            ptopipe.run(cube, vec, dict(ctrl=gm_buffer(128)), platform=platform, protocol=protocol)
        assert _where(ei.value) == (os.path.abspath(HERE), line_of(cube, "cube pop"))
        assert "waits for AIV1's ready signal" in ei.value.what and got == []


# --- DIR_BOTH_GM: one GM ring and a mismatched flag in pto-isa on A5 ----------------------------
def test_dir_both_gm_is_a_config_error_under_pto_isa_on_a5_and_clean_under_spec():
    sc = load_scenarios(os.path.join(MISUSE, "m20_both_gm_pto_isa.py"))[0]
    run_schedule(sc, None, platform="a5", protocol="spec")         # the address flow works
    with pytest.raises(ConfigError) as ei:
        run_schedule(sc, None, platform="a5", protocol="pto-isa")
    assert "GM_SLOT_BUFFER" in str(ei.value) and "FlagID+1" in str(ei.value)
    assert "DIR_C2V_GM" in ei.value.fix and "DIR_V2C_GM" in ei.value.fix


# --- NO_SPLIT has one lane (AIV0) in pto-isa on A5 ----------------------------------------------
def _alloc_kernels(direction):
    def cube(fifo, out):
        pipe = TPipe(0, direction, SLOT, 2, peers=(1,))(fifo, 0, 0x20000)
        m = Tile(TileType.Mat, float32, T, T, addr=0)
        for i in range(2):
            TPOP(pipe, m)
            if i == 1:
                TSTORE(out, m)            # before its TFREE: a staged copy ends there
            TFREE(pipe)

    def vec(x, fifo):
        pipe = TPipe(0, direction, SLOT, 2, peers=(1,))(fifo, 0, 0x20000)
        t = Tile(TileType.Vec, float32, T, T, addr=0)
        TLOAD(t, x)
        g = GlobalTensor(float32, (T, T))
        for i in range(2):
            TALLOC(pipe, g)               # nosplit alloc
            TSTORE(g, t)
            TPUSH(pipe, g)
    return cube, (None, vec)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_nosplit_talloc_on_lane_1(platform, protocol):
    direction = DIR_V2C if platform == "a2a3" else DIR_V2C_GM
    cube, vec = _alloc_kernels(direction)
    x = np.arange(T * T, dtype=np.float32).reshape(T, T)
    args = dict(x=x, out=np.zeros_like(x), fifo=gm_buffer(2 * SLOT))
    if platform == "a5":            # a NO_SPLIT pipe has one lane, AIV0, under either protocol
        with pytest.raises(ProtocolError) as ei:
            ptopipe.run(cube, vec, args, platform=platform, protocol=protocol)
        assert _where(ei.value) == (os.path.abspath(HERE), line_of(_alloc_kernels, "nosplit alloc"))
        assert "LEFT_RIGHT offset" in str(ei.value) and "peers=(0,)" in ei.value.fix
    else:
        res = ptopipe.run(cube, vec, args, platform=platform, protocol=protocol)
        np.testing.assert_array_equal(res["out"], x)


def _lane_kernels(peers, split, push_marker_split=None):
    def cube(x, fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=peers)(fifo, 0x8000, 0)
        m = Tile(TileType.Mat, float32, T, T, addr=0)
        lt = Tile(TileType.Left, float32, T, T, addr=0)
        rt = Tile(TileType.Right, float32, T, T, addr=0)
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        TLOAD(m, x)
        TMOV(lt, m)
        rt.array[...] = np.eye(T, dtype=np.float32)
        TMATMUL(acc, lt, rt)
        for i in range(3):
            TPUSH(pipe, acc, split)       # lane push

    def vec(out, fifo):
        pipe = TPipe(0, DIR_C2V, SLOT, 2, peers=peers)(fifo, 0x8000, 0)
        sub = get_subblockid()
        rows = T // 2 if split == TILE_UP_DOWN else T
        t = Tile(TileType.Vec, float32, rows, T)
        for i in range(3):
            TPOP(pipe, t, split)          # lane pop
            if i == 2:                    # NO_SPLIT: each lane its own copy; UP_DOWN: its half
                TSTORE(GlobalTensor(out.data() + sub * rows * T, (rows, T)), t)
            TFREE(pipe)
    return cube, tuple(vec if p in peers else None for p in (0, 1))


@pytest.mark.parametrize("platform,protocol", COMBOS)
@pytest.mark.parametrize("peers,split", [((1,), TILE_NO_SPLIT), ((0, 1), TILE_NO_SPLIT),
                                         ((0,), TILE_NO_SPLIT), ((0, 1), TILE_UP_DOWN)])
def test_nosplit_reaches_lane_0_only_on_a5(platform, protocol, peers, split):
    """A5 (spec and pto-isa): the Cube's NO_SPLIT SET uses flag id FlagID only (AIV0); a NO_SPLIT pipe
    whose one lane is AIV1 is reported at the Cube's first TPUSH, AIV1's pop of a two-lane
    one (whose NO_SPLIT transfers are AIV0's) at that pop.  Lane 0 alone, or a split between
    both lanes, runs clean everywhere."""
    cube, vec = _lane_kernels(peers, split)
    x = np.arange(T * T, dtype=np.float32).reshape(T, T)
    args = dict(x=x, out=np.zeros((2 * T, T), np.float32), fifo=gm_buffer(2 * SLOT))
    want = np.zeros((2 * T, T), np.float32)
    if split == TILE_UP_DOWN:
        want[:T] = x
    else:
        for p in peers:
            want[p * T:(p + 1) * T] = x
    if platform == "a5" and split == TILE_NO_SPLIT and 1 in peers:
        with pytest.raises(ProtocolError) as ei:
            ptopipe.run(cube, vec, args, platform=platform, protocol=protocol)
        at = "lane push" if 0 not in peers else "lane pop"
        assert _where(ei.value) == (os.path.abspath(HERE), line_of(_lane_kernels, at))
        assert "one lane" in str(ei.value) and "AIV1" in str(ei.value)
    else:
        res = ptopipe.run(cube, vec, args, platform=platform, protocol=protocol)
        np.testing.assert_array_equal(res["out"], want)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_cpusim_hands_lane_1_a_zero_nosplit_tile(platform):
    """pto-isa's CPU simulator: AIV1's TPOP of a TILE_NO_SPLIT C2V tile fills it with zeros
    (cpu/TPop.hpp ``TPOP_IMPL``), AIV0 gets the data; the run warns, at AIV1's TPOP, that what
    AIV1 computed differs from the device's."""
    cube, vec = _lane_kernels((0, 1), TILE_NO_SPLIT)
    x = np.arange(T * T, dtype=np.float32).reshape(T, T) + 1
    args = dict(x=x, out=np.full((2 * T, T), 7, np.float32), fifo=gm_buffer(2 * SLOT))
    res = ptopipe.run(cube, vec, args, platform=platform, protocol="pto-isa-cpusim")
    np.testing.assert_array_equal(res["out"][:T], x)
    np.testing.assert_array_equal(res["out"][T:], 0)
    (what, loc), = [w for w in res.summary.leaks if "got zeros" in w[0]]
    assert what.startswith("3 TPOPs of C2V pipe FlagID 0 (peers AIV0,AIV1) on AIV1 got zeros")
    assert ("AIV0 only" if platform == "a5" else "loads the tile as AIV0's does") in what
    path, _, line = str(loc).rpartition(":")
    assert (os.path.abspath(path), int(line)) == (os.path.abspath(HERE), line_of(_lane_kernels, "lane pop"))


# --- a GM-direction TPOP that already frees, followed by a tile TFREE --------------------------
def _gm_pop_kernels(direction, tfree, n=6):
    def cube(fifo):
        pipe = TPipe(0, direction, SLOT, 2, peers=(0,))(fifo, 0x8000, 0)
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        acc.array[...] = 0                # (what is pushed: set by the test, not computed)
        for i in range(n):
            TPUSH(pipe, acc)              # gm push

    def vec(fifo):
        pipe = TPipe(0, direction, SLOT, 2, peers=(0,))(fifo, 0x8000, 0)
        t = Tile(TileType.Vec, float32, T, T)
        for i in range(n):
            TPOP(pipe, t)
            if tfree:
                TFREE(pipe)
    return cube, (vec, None)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_tfree_after_a_gm_tpop(platform, protocol):
    """On A5 the TFREE after a GM-ring TPOP frees a second time: the producer overruns at
    push #4.  On A2A3 (ring in GM) it is a no-op; under the spec every TPOP needs it."""
    direction = DIR_C2V if platform == "a2a3" else DIR_C2V_GM
    fifo = dict(fifo=gm_buffer(2 * SLOT))
    cube, vec = _gm_pop_kernels(direction, tfree=True)
    if (platform, protocol) == ("a5", "pto-isa"):
        with pytest.raises(ProtocolError) as ei:
            ptopipe.run(cube, vec, fifo, platform=platform, protocol=protocol)
        assert _where(ei.value) == (os.path.abspath(HERE), line_of(_gm_pop_kernels, "gm push"))
        assert "push #4" in str(ei.value) and "second time" in ei.value.fix and "even" not in ei.value.fix
    else:
        ptopipe.run(cube, vec, fifo, platform=platform, protocol=protocol)
    if protocol == "pto-isa":            # without the TFREE pto-isa's TPOP alone frees: clean
        cube, vec = _gm_pop_kernels(direction, tfree=False)
        ptopipe.run(cube, vec, dict(fifo=gm_buffer(2 * SLOT)), platform=platform, protocol=protocol)


def test_m21_reported_on_a5_and_clean_on_a2a3():
    fname = "m21_a5_tfree_after_gm_pop.py"
    sc = load_scenarios(os.path.join(MISUSE, fname))[0]
    run_schedule(sc, None, platform="a2a3", protocol="pto-isa")
    with pytest.raises(ProtocolError) as ei:
        run_schedule(sc, None, platform="a5", protocol="pto-isa")
    with open(os.path.join(MISUSE, fname)) as f:
        where = [i for i, line in enumerate(f, 1) if "<- where" in line]
    assert _where(ei.value) == (os.path.abspath(os.path.join(MISUSE, fname)), where[0])


# --- the registry of correct kernels (tests/corpus.py): run by test_clean_corpus.py and
# benchmarks/schedules.py --kernels new.  Kernels whose direction the tests pick per platform
# (a GM ring on A5) are registered once per direction, each run on every combo it is valid on.
def _clean_registry():
    from corpus import kernel, of_scenario
    one_lane = "A5: a NO_SPLIT transfer has one lane (AIV0); AIV1 as a NO_SPLIT peer is reported"
    out = []
    for depth in (1, 2, 4):
        sc = _s4(depth).SCENARIO
        for split in ("ud", "lr"):
            out.append(of_scenario(f"ptoisa_s4_run_ahead_d{depth}_{split}", sc, split))
    one_tmpipe = ("pto-isa's TMPipe makes the Cube wait for both Vector lanes' flags whatever its VecCubeRatio: "
                  "a TMPipe of one lane hangs (ptoisa_ctrl_tmpipe_both is pto-isa's form)")
    for name, mk, lanes, why in (
            ("tmpipe", _tmpipe_ctrl, 1, {c: one_tmpipe for c in COMBOS if c[1] == "pto-isa"}),
            ("tmpipe_both", _tmpipe_ctrl_both, 2,
             {("a5", "spec"): "spec A5: a TILE_NO_SPLIT transfer has one lane (AIV0); AIV1's word races"}),
            ("tpipe", _tpipe_ctrl, 1, {c: "TPipe(DIR_V2C_CTRL) does not compile in pto-isa "
                                          "(CTRL goes through TMPipe)" for c in COMBOS if c[1] == "pto-isa"})):
        cube, vec, _ = _ctrl_kernels(mk, lanes)
        out.append(kernel(f"ptoisa_ctrl_{name}", cube, vec, lambda rng: dict(ctrl=gm_buffer(128)), excluded=why))
    x = np.arange(T * T, dtype=np.float32).reshape(T, T)
    # (on A5, DIR_V2C_GM, lane 1's NO_SPLIT TALLOC is not the pipe's one lane: an error under
    # either protocol, test_nosplit_talloc_on_lane_1)
    for plat, direction in (("a2a3", DIR_V2C),):
        cube, vec = _alloc_kernels(direction)
        why = {("a5", q): "A5: TALLOC needs a ring in GM (DIR_V2C_GM)" for q in ("spec", "pto-isa")}
        out.append(kernel(f"ptoisa_nosplit_talloc_{plat}", cube, vec,
                          lambda rng: dict(x=x.copy(), out=np.zeros_like(x), fifo=gm_buffer(2 * SLOT)),
                          lambda a: {"out": x}, excluded=why))
    for peers, split in (((1,), TILE_NO_SPLIT), ((0, 1), TILE_NO_SPLIT), ((0,), TILE_NO_SPLIT),
                         ((0, 1), TILE_UP_DOWN)):
        cube, vec = _lane_kernels(peers, split)
        want = np.zeros((2 * T, T), np.float32)
        if split == TILE_UP_DOWN:
            want[:T] = x
        else:
            for p in peers:
                want[p * T:(p + 1) * T] = x
        why = {("a5", q): one_lane for q in ("spec", "pto-isa")} if split == TILE_NO_SPLIT and 1 in peers else None
        out.append(kernel(f"ptoisa_lanes_{''.join(map(str, peers))}_{split.name}",
                          cube, vec, lambda rng: dict(x=x.copy(), out=np.zeros((2 * T, T), np.float32),
                                                      fifo=gm_buffer(2 * SLOT)),
                          lambda a, want=want: {"out": want}, excluded=why))
    for plat, direction in (("a2a3", DIR_C2V), ("a5", DIR_C2V_GM)):
        for tfree in (True, False):
            why = {("a2a3", q): "DIR_C2V_GM is A5-only" for q in ("spec", "pto-isa")} if plat == "a5" else {}
            if tfree and plat == "a5":
                why[("a5", "pto-isa")] = "pto-isa on A5: the TFREE after a GM TPOP frees a second time (M21)"
            if not tfree:
                why.update({(p, "spec"): "spec: every TPOP needs its TFREE" for p in ("a2a3", "a5")})
                if plat == "a2a3":
                    why[("a5", "pto-isa")] = "A5: DIR_C2V's ring is in UB, only a GM-ring TPOP frees (no TFREE: hang)"
            cube, vec = _gm_pop_kernels(direction, tfree)
            out.append(kernel(f"ptoisa_gm_pop_{plat}_{'tfree' if tfree else 'no_tfree'}", cube, vec,
                              lambda rng: dict(fifo=gm_buffer(2 * SLOT)), excluded=why))
    return out


CLEAN_KERNELS = _clean_registry()
