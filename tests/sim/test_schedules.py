"""Schedules that change outcomes (ptopipe.sim.schedule, ptopipe.isa.explore, `check
--explore`): every cross-core visible event is a choice point of an exploring run, the
data order follows the explored schedule, the default run is unchanged, the random / pct /
exhaustive modes find the schedule-dependent misuse examples (M10, M29-M31) within a few
schedules with fixed seeds, and the examples and correct kernels stay clean (a small
version of benchmarks/schedules.py)."""
import glob
import os
import re

import numpy as np
import pytest

import ptopipe
from ptopipe import ConfigError, DataRaceError, MismatchError, ProtocolError, Scenario
from ptopipe.cli import main as cli_main
from ptopipe.driver.loader import load_scenarios
from ptopipe.isa import *  # noqa: F403
from ptopipe.isa.explore import ScheduleSpec, explore, run_schedule
from ptopipe.sim import schedule as S
from ptopipe.sim.schedule import BoundedPolicy, PCTPolicy, RandomPolicy

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MISUSE = os.path.join(ROOT, "examples", "misuse")


def _sc(path):
    return load_scenarios(os.path.join(ROOT, path))[0]


def _misuse(name):
    return _sc(os.path.join("examples", "misuse", name))


# -- the default run is unchanged; an exploring run chooses at every visible event --------
def test_default_choices_replay_the_default_run_exactly():
    """A policy that always takes option 0 makes every visible event a choice point and
    still reproduces the default scheduler: same trace, cycles and outputs."""
    sc = _sc("examples/scenarios/s4_both_ways.py")
    base = run_schedule(sc, None, "lr", trace=True)
    assert base.cluster.policy is None and all(c.policy is None for c in base.cluster.cores)
    pol = BoundedPolicy({})
    same = run_schedule(sc, None, "lr", trace=True, policy=pol)
    assert len(pol.options) > 10 and pol.events > len(pol.options)
    assert same.cluster.trace == base.cluster.trace
    assert same.summary.cycles == base.summary.cycles
    assert same["out"].tobytes() == base["out"].tobytes()


class _Log(BoundedPolicy):
    def __init__(self):
        super().__init__({})
        self.kinds = []

    def note(self, core, kind):
        super().note(core, kind)
        self.kinds.append((core.name, S.KIND_NAMES[kind]))


@pytest.mark.parametrize("path,want", [
    ("examples/scenarios/s1_cv_split.py", {"SET", "WAIT", "TLOAD", "TSTORE", "TPUSH", "TPOP", "TFREE"}),
    ("examples/scenarios/s5_subtile_gm.py", {"TALLOC", "TPUSH", "TPOP", "TFREE", "TLOAD", "TSTORE"}),
])
def test_every_cross_core_visible_event_is_a_choice_point(path, want):
    pol = _Log()
    run_schedule(_sc(path), None, policy=pol)
    assert want <= {k for _, k in pol.kinds}
    assert {c for c, _ in pol.kinds} == {"AIC", "AIV0", "AIV1"}
    assert pol.events == len(pol.kinds)


# -- the data order follows the explored schedule ---------------------------------------------
def _racy_cube(x, mid):
    a = Tile(TileType.Mat, float32, 16, 16, addr=0x0)
    TLOAD(a, x)
    TSTORE(mid, a)                        # no flag orders this with AIV0's TLOAD


def _racy_vec(mid, out):
    v = Tile(TileType.Vec, float32, 16, 16, addr=0x0)
    TLOAD(v, mid)
    TSTORE(out, v)


def _racy_args():
    return dict(x=np.full((16, 16), 7, np.float32), mid=np.zeros((16, 16), np.float32),
                out=np.zeros((16, 16), np.float32))


def test_an_unordered_store_and_load_land_in_the_schedules_order():
    seen = set()
    for seed in range(12):
        res = run_schedule((_racy_cube, (_racy_vec, None)), seed, args=_racy_args(), checks=False)
        seen.add(float(res["out"][0, 0]))
    assert seen == {0.0, 7.0}              # the load ran before the store in some schedules only
    for seed in (None, 0, 1):              # and the race checker reports it under every one
        with pytest.raises(DataRaceError):
            run_schedule((_racy_cube, (_racy_vec, None)), seed, args=_racy_args())


def _picky_vec(mid, out):
    v = Tile(TileType.Vec, float32, 16, 16, addr=0x0)
    TLOAD(v, mid)
    if v.array[0, 0] == 0:
        raise ValueError("read mid before the Cube stored it")
    TSTORE(out, v)


def test_a_kernel_error_under_an_explored_schedule_names_the_schedule():
    target = (_racy_cube, (_picky_vec, None))
    with pytest.raises(ValueError) as ei:
        explore(target, schedules=20, mode="pct", args=_racy_args(), checks=False)
    spec = ei.value.ptopipe_schedule
    assert isinstance(spec, ScheduleSpec) and spec.mode == "pct"
    with pytest.raises(ValueError):
        run_schedule(target, str(spec), args=_racy_args(), checks=False)


def test_lane_skew_and_latency_jitter_change_timing_not_results():
    sc = _sc("examples/scenarios/s1_cv_split.py")
    base = run_schedule(sc, None).summary.cycles
    pols = [RandomPolicy(seed, perturb=True) for seed in range(4)]
    assert any(p.skew and max(p.skew) > 0 for p in pols)
    cycles = {run_schedule(sc, None, policy=p).summary.cycles for p in pols}
    assert cycles - {base}


# -- the policies -----------------------------------------------------------------------------
def test_pct_priorities_and_change_points():
    p = PCTPolicy(5, depth=3, k=100)
    assert sorted(p.prio) == [3, 4, 5] and len(p.changes) == 2
    assert sorted(p.changes.values()) == [1, 2] and all(1 <= e <= 100 for e in p.changes)

    class C:
        def __init__(self, i):
            self.index = i
    first = min(p.changes)
    for _ in range(first):
        p.note(C(1), S.TPUSH)
    assert p.prio[1] == 2                  # the running core dropped below every initial priority
    assert PCTPolicy(5, depth=3, k=0).changes == {}


def test_exhaustive_depth_1_runs_every_single_deviation_and_reports_the_bound_exhausted():
    sc = _sc("examples/scenarios/s1_cv_split.py")
    root = BoundedPolicy({})
    run_schedule(sc, None, policy=root)
    # depth 1: option 1 at each choice point (option j costs j deviations)
    expect = 1 + sum(1 for n in root.options if n > 1)
    res = explore(sc, schedules=10_000, mode="exhaustive", depth=1, include_default=False)
    assert res.ok and res.complete and res.runs == expect
    assert 1 < res.distinct <= res.runs
    part = explore(sc, schedules=expect - 1, mode="exhaustive", depth=1, include_default=False)
    assert part.runs == expect - 1 and not part.complete


def test_schedule_spec_round_trips_and_rejects_bad_text():
    for text in ("random:7", "pct:3:2:140", "exhaustive:", "exhaustive:4=1,17=2"):
        assert str(ScheduleSpec.parse(text)) == text
    for bad in ("pct:1", "exhaustive:3=0", "lottery:1", "random:x"):
        with pytest.raises(ConfigError) as ei:
            ScheduleSpec.parse(bad)
        assert ei.value.where == "option --replay"
    with pytest.raises(ConfigError):
        explore(_sc("examples/scenarios/s1_cv_split.py"), schedules=1, mode="dfs")
    with pytest.raises(ConfigError):
        explore(_sc("examples/scenarios/s1_cv_split.py"), schedules=1, mode="pct", depth=0)


# -- the schedule-dependent misuse: how many schedules each mode needs ------------------------
# (misuse file, platform, protocol, run kwargs, {mode: most explored schedules to find it,
#  or 0: the mode does not find it within FIND_CAP}); seed 0, deterministic.  M29-M31 run
#  with the checkers off (the race checker reports them under every schedule, see
#  test_misuse.py); M10 (a flag counter overflow) with the checkers on.
FIND_CAP = 30
FIND = [
    ("m10_schedule_dependent.py", "a5", "pto-isa", {}, ProtocolError, {"random": 6, "pct": 3}),
    ("m29_prefetch_before_wait.py", "a2a3", "spec", {"checks": False}, MismatchError,
     {"random": 2, "pct": 2, "exhaustive": 15}),
    ("m29_prefetch_before_wait.py", "a5", "pto-isa", {"checks": False}, MismatchError,
     {"random": 10, "pct": 2, "exhaustive": 8}),
    ("m30_commit_before_store.py", "a2a3", "spec", {"checks": False}, MismatchError,
     {"random": 2, "pct": 2, "exhaustive": 15}),
    ("m30_commit_before_store.py", "a5", "pto-isa", {"checks": False}, MismatchError,
     {"random": 8, "pct": 2, "exhaustive": 10}),
    ("m31_lane_init_overwrite.py", "a2a3", "spec", {"checks": False}, MismatchError,
     {"random": 60, "pct": 3, "exhaustive": 0}),
    ("m31_lane_init_overwrite.py", "a5", "pto-isa", {"checks": False}, MismatchError,
     {"random": 10, "pct": 3, "exhaustive": 15}),
]


@pytest.mark.parametrize("fname,platform,protocol,kw,cls,bounds", FIND,
                         ids=[f"{f[:3]}-{p}-{q}" for f, p, q, *_ in FIND])
def test_schedule_dependent_misuse_found_within_bounds(fname, platform, protocol, kw, cls, bounds):
    sc = _misuse(fname)
    run_schedule(sc, None, platform=platform, protocol=protocol, **kw)     # the default: clean
    for mode, most in bounds.items():
        res = explore(sc, schedules=most or FIND_CAP, seed=0, platform=platform, protocol=protocol,
                      mode=mode, include_default=False, **kw)
        if not most:                       # this mode misses it (the benchmark table shows how far)
            assert res.ok and res.runs == FIND_CAP, (mode, res.first)
            continue
        assert not res.ok, f"{mode} did not find {fname} within {most} schedules"
        spec, err = res.first
        assert type(err) is cls, f"{mode}: {type(err).__name__}: {err}"
        # deterministic, and the printed schedule replays it
        again = explore(sc, schedules=most, seed=0, platform=platform, protocol=protocol,
                        mode=mode, include_default=False, **kw)
        assert again.runs == res.runs and str(again.first[0]) == str(spec)
        with pytest.raises(cls):
            run_schedule(sc, str(spec) if mode != "random" else spec, platform=platform,
                         protocol=protocol, **kw)


# -- the CLI ------------------------------------------------------------------------------------
@pytest.mark.usefixtures("every_schedule")
def test_cli_summary_counts_distinct_interleavings(capsys):
    s1 = os.path.join(ROOT, "examples", "scenarios", "s1_cv_split.py")
    assert cli_main(["check", s1, "--schedules", "4", "--explore", "pct", "--depth", "2"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"default schedule \+ 4 explored schedules \(pct, [1-4] distinct interleavings?\)", out), out
    assert cli_main(["check", s1, "--schedules", "100000", "--explore", "exhaustive", "--depth", "1"]) == 0
    assert "bound 1 exhausted" in capsys.readouterr().out


def test_cli_prints_a_replay_that_reproduces_the_failure(capsys):
    m10 = os.path.join(MISUSE, "m10_schedule_dependent.py")
    assert cli_main(["check", m10, "--schedules", "5", "--explore", "pct"]) == 1
    out, err = capsys.readouterr()
    assert "ProtocolError under schedule pct:" in out
    spec = re.search(r"--replay (pct:\d+:\d+:\d+)$", err, re.M).group(1)
    assert cli_main(["check", m10, "--replay", spec]) == 1
    out2, err2 = capsys.readouterr()
    assert f"ProtocolError under schedule {spec}" in out2
    at = re.search(r"^  at (\S+)$", err, re.M).group(1)
    with open(m10) as f:
        where = next(i for i, line in enumerate(f, 1) if "<- where" in line)
    assert f"  at {at}" in err2 and at.endswith(f":{where}")


def test_cli_replay_is_one_shell_command_with_the_options_the_runs_took(tmp_path, capsys):
    """The replay line is pasted into a shell: a path with a space is one word, and the data
    seed (a .pto / C++ kernel's --input ...) the runs took is on it."""
    import shlex
    import shutil
    where = tmp_path / "my kernels"
    where.mkdir()
    for name in ("m10_schedule_dependent.py", "_common.py"):
        shutil.copy(os.path.join(MISUSE, name), where / name)
    m10 = str(where / "m10_schedule_dependent.py")
    assert cli_main(["check", m10, "--schedules", "5", "--explore", "pct", "--data-seed", "3"]) == 1
    line = re.search(r"^  replay: (.*)$", capsys.readouterr().err, re.M).group(1)
    words = shlex.split(line)
    assert words[:3] == ["ptopipe", "check", m10] and words[words.index("--data-seed") + 1] == "3", line
    assert cli_main(words[1:]) == 1
    out, err = capsys.readouterr()
    assert f"ProtocolError under schedule {words[-1]}" in out and f"replay: {line}\n" in err


def test_cli_no_checks_shows_the_wrong_result_of_a_schedule(capsys):
    m29 = os.path.join(MISUSE, "m29_prefetch_before_wait.py")
    assert cli_main(["check", m29, "--no-checks", "--schedules", "0"]) == 0     # the default: right
    assert "right results (checkers off)" in capsys.readouterr().out
    assert cli_main(["check", m29, "--no-checks", "--schedules", "5", "--explore", "pct"]) == 1
    out, err = capsys.readouterr()
    assert "MismatchError under schedule pct:0:3:0" in out
    assert "--no-checks --replay pct:0:3:0" in err
    # the mismatch names its cause: the re-run with the checkers on finds the unordered access
    assert "a re-run with the checkers on finds the cause: DataRaceError" in err, err
    assert re.search(r"^  at \S*m29_prefetch_before_wait\.py:\d+$", err, re.M), err
    assert cli_main(["check", m29, "--schedules", "5"]) == 1                    # checkers on: the race
    assert "DataRaceError under the default schedule" in capsys.readouterr().out


def test_cli_rejects_a_bad_replay_or_depth(capsys):
    s1 = os.path.join(ROOT, "examples", "scenarios", "s1_cv_split.py")
    assert cli_main(["check", s1, "--replay", "pct:1"]) == 1
    assert "option --replay" in capsys.readouterr().err
    assert cli_main(["check", s1, "--explore", "pct", "--depth", "0"]) == 1
    assert "option --depth" in capsys.readouterr().err


# -- no false positive (benchmarks/schedules.py runs 200 schedules per mode) ---------------------
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "examples", "scenarios", "*.py"))
                  + glob.glob(os.path.join(ROOT, "examples", "dsl", "*.py"))
                  + [os.path.join(ROOT, "examples", "flash_attention.py")])


@pytest.mark.parametrize("path", EXAMPLES, ids=[os.path.relpath(p, ROOT) for p in EXAMPLES])
def test_examples_clean_under_every_mode(path, no_hang):
    platform, protocol = [("a2a3", "spec"), ("a5", "pto-isa")][EXAMPLES.index(path) % 2]
    for sc in load_scenarios(path):
        for mode in ("random", "pct", "exhaustive"):
            res = explore(sc, schedules=2, seed=0, variant=sc.default_variant, platform=platform,
                          protocol=protocol, mode=mode, include_default=mode == "random")
            assert res.ok, f"{mode}: {res.first}"


def _unseen():
    import test_varied_kernels as unseen
    return unseen.CORRECT


def _aiv1_only():
    import test_varied_kernels as unseen
    return unseen.AIV1_ONLY


@pytest.mark.parametrize("name", sorted(_unseen()))
def test_correct_kernels_clean_under_every_mode(name, no_hang):
    aic, aiv, make, golden = _unseen()[name]
    sc = Scenario(name, aic, aiv, lambda rng: make(np.random.default_rng(7)), lambda a: golden(a),
                  rtol=0, atol=0)
    combo = [("a2a3", "pto-isa"), ("a5", "spec")][sorted(_unseen()).index(name) % 2]
    if combo[0] == "a5" and name in _aiv1_only():
        combo = ("a2a3", "spec")    # (an AIV1-only NO_SPLIT pipe: reported on A5, test_varied_kernels)
    for mode in ("random", "pct", "exhaustive"):
        res = explore(sc, schedules=2, seed=3, platform=combo[0], protocol=combo[1], mode=mode,
                      include_default=mode == "random")
        assert res.ok, f"{mode} on {combo}: {res.first}"


def _double_vec(x, out):
    v = Tile(TileType.Vec, float32, 16, 16, addr=0x0)
    TLOAD(v, x)
    TADD(v, v, v)
    TSTORE(out, v)


def test_one_core_has_one_interleaving_and_explores_nothing():
    args = {"x": np.ones((16, 16), np.float32), "out": np.zeros((16, 16), np.float32)}
    res = explore((None, (_double_vec, None)), schedules=20, args=args)
    assert res.ok and res.one_core and res.complete and res.runs == 1
    two = explore((_racy_cube, (_racy_vec, None)), schedules=3, args=_racy_args(), checks=False)
    assert not two.one_core and two.runs == 4
