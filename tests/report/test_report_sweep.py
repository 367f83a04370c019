"""Sweeps: parameter parsing, the grid, parallel runs and the best configuration."""
import os

import pytest

from ptopipe.cli import main as cli_main
from ptopipe.errors import ConfigError
from ptopipe.isa import TILE_LEFT_RIGHT
from ptopipe.report.sweep import format_table, grid, parse_params, sweep

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
S1 = os.path.join(ROOT, "examples", "scenarios", "s1_cv_split.py")


def test_sweep_parse_params():
    p = parse_params(["depth=1,2,4", "split=TILE_LEFT_RIGHT", "dtype=f16,f32"])
    assert p == {"depth": [1, 2, 4], "split": [TILE_LEFT_RIGHT], "dtype": ["f16", "f32"]}
    assert len(grid(p)) == 6
    with pytest.raises(ConfigError):
        parse_params(["depth"])
    with pytest.raises(ConfigError) as ei:           # the last would win, silently
        parse_params(["depth=1", "depth=2"])
    assert ei.value.what == "--param depth is given twice" and "--param depth=v1,v2" in ei.value.fix


def test_sweep_depth_marks_best_in_parallel():
    rows = sweep(S1, {"depth": [1, 2, 4]}, workers=2)
    assert [r.params["depth"] for r in rows] == [1, 2, 4]
    assert all(r.ok for r in rows)
    cyc = {r.params["depth"]: r.cycles for r in rows}
    assert cyc[1] > cyc[2] >= cyc[4]                # deeper rings overlap more
    best = [r for r in rows if r.best]
    assert len(best) == 1 and best[0].cycles == min(cyc.values())
    table = format_table(rows)
    assert table.splitlines()[0].split()[:2] == ["depth", "cycles"]
    assert any(line.startswith("*") for line in table.splitlines())


def test_sweep_unknown_parameter_is_a_config_error():
    with pytest.raises(ConfigError, match="no parameter 'slots'"):
        sweep(S1, {"slots": [1]}, workers=1)


def test_sweep_parameter_of_a_make_args_without_parameters_says_there_is_none():
    from ptopipe.isa import Scenario
    from ptopipe.report.sweep import check_params
    sc = Scenario("fixed", lambda: None, lambda: None, lambda rng: {}, lambda args: {})
    with pytest.raises(ConfigError) as ei:
        check_params(sc, "default", {"depth": [1, 2]})
    assert ei.value.what == "scenario fixed has no parameter 'depth'"
    assert "takes no parameter besides rng" in ei.value.fix, ei.value.fix


def test_sweep_failing_configuration_is_reported_not_raised():
    rows = sweep(S1, {"depth": [2, 9]}, workers=1)   # 9 > 8 flags per direction
    assert rows[0].ok and not rows[1].ok and "ConfigError" in rows[1].error
    assert "FAILED" in format_table(rows)


def test_sweep_cli(capsys):
    assert cli_main(["sweep", S1, "--param", "depth=1,4", "--param", "M=32"]) == 0
    out = capsys.readouterr().out
    assert "2 configurations" in out and "* best: depth=4, M=32" in out
