"""The default exploration mixes policies (``mode="mix"``: pct, random, exhaustive in
turn), so a lane-starvation bug that only a pct schedule finds - a split ring of SlotNum 16
on pto-isa A5 whose AIV1 lane falls 16 tiles behind and overflows its 15-count ready flag
(examples/misuse/m32_lane_starvation.py) - is found by ``explore`` and ``ptopipe check`` with
their defaults; the overflow names the ring depth and the counter's maximum."""
import os

import pytest

from ptopipe.cli import main as cli_main
from ptopipe.driver.loader import load_scenarios
from ptopipe.errors import ProtocolError
from ptopipe.isa.explore import MIX, ScheduleSpec, explore, stream
from markers import line_of

HERE = os.path.dirname(__file__)
M32 = os.path.join(HERE, "..", "..", "examples", "misuse", "m32_lane_starvation.py")


def _scenario():
    (sc,) = load_scenarios(M32)
    return sc


def test_the_default_exploration_finds_the_starved_lane():
    sc = _scenario()
    mod = __import__("sys").modules[sc.aic.__module__]
    ex = explore(sc, schedules=20, platform="a5", protocol="pto-isa")
    assert ex.mode == "mix"
    (spec, e), = ex.failures
    assert isinstance(spec, ScheduleSpec) and spec.mode == "pct", spec
    assert type(e) is ProtocolError, e
    assert e.where.endswith(f"m32_lane_starvation.py:{line_of(mod.cube, 'M32: the 16th push AIV1 has not popped  <- where')}")
    assert "is a ring of depth 16 on a counter flag that holds at most 15" in e.what, e.what
    assert "flag 0 (AIC->AIV1)" in e.what
    assert "pair every SET with a WAIT" not in e.fix and "SlotNum <= 15" in e.fix


@pytest.mark.usefixtures("every_schedule")
def test_a_ring_that_fits_the_counter_is_clean_under_the_mix():
    ex = explore(_scenario(), schedules=30, variant="depth14", platform="a5", protocol="pto-isa")
    assert ex.ok, ex.first
    assert ex.distinct > 20


def test_check_mixes_policies_by_default(capsys):
    rc = cli_main(["check", M32, "--platform", "a5", "--schedules", "6"])
    cap = capsys.readouterr()
    out = cap.out + cap.err
    assert rc == 1
    assert "ProtocolError under schedule pct:" in out
    assert "a ring of depth 16 on a counter flag that holds at most 15" in out


def test_the_mix_takes_the_modes_in_turn_and_each_mode_sees_its_own_runs():
    """pct measures its event count on its own first run and uses it from its second on;
    exhaustive expands the choice points of its own schedules."""
    specs = []
    for spec, pol in stream("mix", 9, 0, 0, {}):
        specs.append(spec)
        pol.events = 40 if spec.mode == "pct" else 7        # as a run would leave them
        pol.options = [2, 2, 2]
    assert [s.mode for s in specs] == list(MIX) * 3
    pcts = [s for s in specs if s.mode == "pct"]
    assert pcts[0].k == 0 and pcts[1].k == 40 and pcts[1].depth == 3
    assert [s.deviations for s in specs if s.mode == "exhaustive"][1:] == [((0, 1),), ((1, 1),)]


def test_an_overflow_of_a_ring_that_fits_its_counter_blames_the_skipped_wait():
    from ptopipe.sim.flags import Flag, overflow_error

    class Model:
        per_tag_flags = False

    class Ch:
        slot_num, name, model = 4, "C2V pipe FlagID 0", Model()

    class Core:
        def __init__(self, name):
            self.name = name

        def where(self):
            return "k.py:3"
    f = Flag(Core("AIC"), Core("AIV0"), 0)
    f.owner, f.signal = Ch(), "ready"
    e = overflow_error(f, 15)
    assert "a ring of depth 4 on a counter flag that holds at most 15" in e.what
    assert "setAllocateStatus" in e.fix
