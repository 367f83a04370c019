"""Misuse cases M1-M9 (SCENARIOS.md): each is reported with the right error class and the
kernel's file:line, on A2A3 and A5, through the Python API and through `ptopipe check`."""
import os
import re

import pytest

from ptopipe import (ConfigError, DataRaceError, DeadlockError, MemoryConflictError,
                     ProtocolError)
from ptopipe.cli import main as cli_main
from ptopipe.driver.loader import load_scenarios
from ptopipe.errors import LeakError
from ptopipe.isa.explore import run_schedule

HERE = os.path.dirname(__file__)
MISUSE = os.path.join(HERE, "..", "..", "examples", "misuse")

CASES = {
    "m1_no_tfree.py": DeadlockError,
    "m2_flag_mismatch.py": DeadlockError,
    "m3_use_after_free.py": ProtocolError,
    "m4_shared_flag.py": ConfigError,
    "m5_ring_overlap.py": MemoryConflictError,
    "m6_tile_too_large.py": ProtocolError,
    "m7_leak.py": LeakError,
    "m8_pto_isa_slotnum5.py": ProtocolError,
    "m9_gm_race.py": DataRaceError,
    "m11_missing_wait.py": DataRaceError,          # intra-core events, manual sync (M11-M14)
    "m12_misprimed_event.py": DeadlockError,
    "m13_event_leak.py": LeakError,
    "m14_pingpong_tail.py": DataRaceError,
    "m15_rebind_in_loop.py": ConfigError,
    "m16_teardown_hang.py": DeadlockError,
    "m17_relaunch_unpopped.py": ProtocolError,
    "m18_drain_leak.py": LeakError,
    "m19_tpipe_ctrl_pto_isa.py": ConfigError,
    "m20_both_gm_pto_isa.py": ConfigError,
    "m22_layout_nd_into_nz.py": ProtocolError,
    "m23_lane1_not_dispatched.py": DeadlockError,
    "m24_v2c_lane1_returns.py": DeadlockError,
    "m25_free_split.py": ProtocolError,
    "m26_rings_overlap_across_cores.py": MemoryConflictError,
    "m27_staged_read_after_free.py": ProtocolError,
    "m28_sync_period_credit.py": DeadlockError,
    # schedule-dependent wrong results; the checkers report them under every schedule
    "m29_prefetch_before_wait.py": DataRaceError,
    "m30_commit_before_store.py": ProtocolError,        # the store into the pushed slot
    "m31_lane_init_overwrite.py": DataRaceError,
}
#: examples that are correct on a platform (the misuse is the other platform's): they run clean there
#: where an example is a correct kernel: M22 on A2A3 (its GM ring converts); M23 / M24 on A5, where
#: a NO_SPLIT pipe has one lane, AIV0, so AIV1 taking no part is what the device does
CLEAN_ON = {"m22_layout_nd_into_nz.py": ("a2a3",), "m23_lane1_not_dispatched.py": ("a5",),
            "m24_v2c_lane1_returns.py": ("a5",)}
ALL_MARKERS = {"m1_no_tfree.py", "m2_flag_mismatch.py", "m9_gm_race.py", "m22_layout_nd_into_nz.py",
               "m11_missing_wait.py"}   # every marked line named


def markers(fname):
    """Source lines tagged '# M<n>' in the example: the offending instructions."""
    with open(os.path.join(MISUSE, fname)) as f:
        return [i for i, line in enumerate(f, 1) if re.search(r"#\s*M\d+\b", line)]


def where_line(fname, platform):
    """The one line tagged '<- where' (or '<- where on <platform>') in the example: the
    line the error's ``where`` must name exactly."""
    with open(os.path.join(MISUSE, fname)) as f:
        hits = [i for i, line in enumerate(f, 1)
                for m in [re.search(r"<- where(?: on (\w+))?", line)]
                if m and m.group(1) in (None, platform)]
    assert len(hits) == 1, (fname, platform, hits)
    return hits[0]


def assert_where(err, fname, platform):
    """``err.where`` is exactly ``<the example file>:<its '<- where' line>``."""
    path, _, line = (err.where or "").rpartition(":")
    assert path and os.path.samefile(path, os.path.join(MISUSE, fname)), err.where
    assert int(line) == where_line(fname, platform), (err.where, str(err))


def _run(fname, platform):
    sc = load_scenarios(os.path.join(MISUSE, fname))[0]
    with pytest.raises(Exception) as ei:
        run_schedule(sc, None, platform=platform, protocol=sc.protocol or "spec")
    return ei.value


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("fname", sorted(CASES))
def test_misuse_reported_with_class_and_line(fname, platform):
    if platform in CLEAN_ON.get(fname, ()):
        sc = load_scenarios(os.path.join(MISUSE, fname))[0]
        run_schedule(sc, None, platform=platform, protocol=sc.protocol or "spec")   # no error
        return
    err = _run(fname, platform)
    assert type(err) is CASES[fname], f"{type(err).__name__}: {err}"
    text = str(err)
    lines = markers(fname)
    named = [ln for ln in lines if f"{fname}:{ln}" in text]
    assert named, f"none of the lines {lines} of {fname} in:\n{text}"
    assert_where(err, fname, platform)
    if fname in ALL_MARKERS:
        assert named == lines, text


def test_m1_names_the_tpop_lacking_tfree():
    err = _run("m1_no_tfree.py", "a2a3")
    tpop = [ln for ln in markers("m1_no_tfree.py")][1]
    blocked = {f["core"]: f for f in err.findings if f["kind"] == "blocked"}
    assert blocked["AIC"]["signal"] == "free" and blocked["AIC"]["tag"] == 0
    assert blocked["AIV0"]["signal"] == "ready"
    assert [h["slot"] for h in blocked["AIV0"]["holds"]] == [0, 1, 2, 3]
    assert all(h["where"].endswith(f"m1_no_tfree.py:{tpop}") for h in blocked["AIV0"]["holds"])
    cycle = [f for f in err.findings if f["kind"] == "wait_for"][0]
    assert cycle["cycle"] and [s["core"] for s in cycle["steps"]] == ["AIC", "AIV0"]
    assert "AIC waits free[0]" in cycle["text"] and "AIV0 holds slots 0,1,2,3" in cycle["text"]
    assert f"call TFREE after the TPOP at" in err.fix


def test_m2_names_both_flags():
    err = _run("m2_flag_mismatch.py", "a5")
    flags = sorted(f["flag"] for f in err.findings if f["kind"] == "blocked")
    assert flags == [0, 4]
    assert "no consumer bound" in str(err) and "no producer bound" in str(err)


def test_m9_race_names_both_accesses():
    err = _run("m9_gm_race.py", "a2a3")
    (f,) = err.findings
    assert f["kind"] == "data_race"
    assert {f["access"]["core"], f["other"]["core"]} == {"AIC", "AIV0"}
    assert {f["access"]["op"], f["other"]["op"]} == {"TLOAD", "TSTORE"}
    assert f["access"]["hi"] - f["access"]["lo"] == 16 * 16 * 4


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("fname", sorted(CASES))
def test_cli_check_exits_nonzero_without_traceback(fname, platform, capsys):
    rc = cli_main(["check", os.path.join(MISUSE, fname), "--platform", platform, "--schedules", "2"])
    out, errout = capsys.readouterr()
    text = out + errout
    if platform in CLEAN_ON.get(fname, ()):
        assert rc == 0 and "PASS" in text, text
        return
    assert rc == 1
    assert "Traceback" not in text
    assert f"error: {CASES[fname].__name__}:" in text
    assert re.search(rf"^  at \S*{re.escape(fname)}:{where_line(fname, platform)}$", text, re.M), text


@pytest.mark.parametrize("platform", ["a2a3"])         # (A5: one lane, clean - CLEAN_ON)
@pytest.mark.parametrize("fname", ["m23_lane1_not_dispatched.py", "m24_v2c_lane1_returns.py"])
def test_m23_m24_name_the_lane_that_never_takes_part(fname, platform):
    err = _run(fname, platform)
    assert "AIV1 never takes part" in err.what, err.what
    assert "SetValid(0, 0)" in err.fix
    # one lane, as each front end spells it (ISA, DSL, .pto, C++)
    assert "peers=(0,)" in err.fix and "lanes=1" in err.fix and "IsNoSplit = true" in err.fix
    assert any(f["kind"] == "absent_lane" and f["core"] == "AIV1" for f in err.findings)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_m28_names_the_withheld_credit_and_is_clean_under_spec(platform):
    err = _run("m28_sync_period_credit.py", platform)
    cause = [f["text"] for f in err.findings if f["kind"] == "cause"][0]
    assert "SyncPeriod = 2" in cause and "push #4 waits for notification #1, sent at TFREE #2" in cause
    assert "call TFREE" not in err.fix
    sc = load_scenarios(os.path.join(MISUSE, "m28_sync_period_credit.py"))[0]
    run_schedule(sc, None, platform=platform, protocol="spec")


def test_m15_to_m18_messages_name_the_cause():
    """M15 the rebinding fix; M16 the teardown ledger; M17 launch 1, the flag and its
    leftover; M18 the credit left after the drain, with a teardown fix (not the TPOP/TFREE one)."""
    e15 = _run("m15_rebind_in_loop.py", "a2a3")
    assert "second time in one launch" in str(e15) and "before the loop" in e15.fix
    e16 = _run("m16_teardown_hang.py", "a5")
    assert "sent 31 / consumed 30 / awaited 2" in str(e16)
    e17 = _run("m17_relaunch_unpopped.py", "a2a3")
    assert "launch 1" in str(e17) and "flag 0 (AIC->AIV0)" in str(e17) and "(1 left)" in str(e17)
    assert "in launch 2 of 2" in str(e17)
    e18 = _run("m18_drain_leak.py", "a5")
    assert "keeps 1 credit after the teardown drain (sent 32 / consumed 30 / drained 1)" in str(e18)
    assert "setAllocateStatus" in e18.fix and "TFREE" not in e18.fix


def test_m7_leak_gives_the_pop_and_free_counts():
    """A held slot at kernel end says how many TPOPs and TFREEs ran (1500 and
    1499 say the loop skipped one TFREE)."""
    err = _run("m7_leak.py", "a2a3")
    assert re.search(r"ends holding slot \d+ of .* \(TPOP without TFREE: (\d+) TPOPs, (\d+) TFREEs\)",
                     str(err)), str(err)
    pops, frees = map(int, re.search(r"(\d+) TPOPs, (\d+) TFREEs", str(err)).groups())
    assert pops == frees + 1
