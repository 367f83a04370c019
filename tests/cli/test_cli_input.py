"""Bad command-line input gets one clear error (what, where: the option, how to fix), a
non-zero exit code and no traceback; a failing variant or configuration is named; every
subcommand runs a Scenario on the same platform/protocol (option > Scenario's own > default)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from ptopipe.cli import main as cli_main
from ptopipe.driver.loader import load_scenarios
from ptopipe.isa import TILE_UP_DOWN
from ptopipe.report.sweep import SweepRow, check_params, format_table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
S1 = os.path.join(ROOT, "examples", "scenarios", "s1_cv_split.py")

KERNEL = '''
import numpy as np
from ptopipe import Scenario
from ptopipe.isa import *


def vec(x, out, boom=False):
    if boom:
        raise ValueError("kernel bug")          # BOOM
    sub = get_subblockid()
    t = Tile(TileType.Vec, float32, 1, 8, addr=0)
    TLOAD(t, GlobalTensor(x.data() + sub * 8, (1, 8)))
    TSTORE(GlobalTensor(out.data() + sub * 8, (1, 8)), t)


def make_args(rng, bad=False, boom=False):
    return dict(x=rng.standard_normal((2, 8)).astype(np.float32), out=np.zeros((2, 8), np.float32),
                boom=boom)


def golden(args, bad=False, boom=False):
    return {"out": args["x"] + (1 if bad else 0)}

'''


def _kernel_file(tmp_path, scenario: str, name: str = "k.py") -> str:
    path = tmp_path / name
    path.write_text(KERNEL + textwrap.dedent(scenario), encoding="utf-8")
    return str(path)


def _line_of(path: str, marker: str) -> int:
    with open(path, encoding="utf-8") as f:
        return next(i for i, t in enumerate(f, 1) if marker in t)


def _cli(argv, capsys):
    code = cli_main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


# --- option values ----------------------------------------------------------------------
@pytest.mark.parametrize("argv, option", [
    (["check", S1, "--schedules", "-1"], "--schedules"),
    (["check", S1, "--seed", "-1"], "--seed"),
    (["check", S1, "--data-seed", "-1"], "--data-seed"),
    (["run", S1, "--seed", "-1"], "--seed"),
    (["trace", S1, "--latency", "-5"], "--latency"),
    (["sweep", S1, "--param", "depth=2", "--latency", "-5"], "--latency"),
    (["sweep", S1, "--param", "depth=2", "--workers", "0"], "--workers"),
    (["run", S1, "--variant", ""], "--variant"),
    (["check", S1, "--variant", " "], "--variant"),
    (["run", S1, "--variant", "nosuch"], "--variant"),        # (a misspelt one, every command alike)
    (["trace", S1, "--variant", "nosuch"], "--variant"),
    (["sweep", S1, "--param", "depth=2", "--variant", "nosuch"], "--variant"),
    (["mutate", S1, "--variant", "nosuch"], "--variant"),     # (was: "fails its own checks", at bin/ptopipe)
])
def test_bad_option_value_is_a_config_error_naming_the_option(argv, option, capsys, tmp_path):
    if argv[0] == "trace":
        argv = argv + ["-o", str(tmp_path / "t.json")]
    code, out, err = _cli(argv, capsys)
    assert code == 1
    assert "PASS" not in out and not os.path.exists(tmp_path / "t.json")
    assert err.startswith("error: ConfigError: ")
    assert f"at option {option}" in err and "fix: " in err


def test_scenario_run_rejects_a_negative_data_seed():
    from ptopipe import ConfigError
    sc = load_scenarios(S1)[0]
    with pytest.raises(ConfigError, match="seed -1"):
        sc.run("default", seed=-1)


def test_python_dash_m_ptopipe():
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "ptopipe", "--version"], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("ptopipe ")


def test_an_input_that_is_neither_a_number_nor_a_file_says_a_scalar_takes_a_number(capsys):
    """``--input n=abc`` for a scalar parameter: neither a number nor a file (not "cannot load
    abc: No such file"), and the fix says what each kind of parameter takes; a missing .npy
    file is one that cannot be loaded."""
    pto = os.path.join(ROOT, "tests", "pto", "i32_trip_count_a3.pto")
    code, _out, err = _cli(["run", pto, "--input", "n=abc"], capsys)
    assert code == 1
    assert err.splitlines()[-3:] == [
        "error: ConfigError: --input n=abc: 'abc' is neither a number nor a file", "  at option --input",
        "  fix: give a number for a scalar parameter (--input n=5 or n=1.5) or the path of a .npy file for an "
        "array"], err
    code, _out, err = _cli(["run", pto, "--input", "n=nn.npy"], capsys)
    assert code == 1
    assert err.splitlines()[-3:] == [
        "error: ConfigError: cannot load nn.npy: No such file or directory", "  at option --input",
        "  fix: give the path of a .npy file, or a number if n is a scalar parameter (--input n=5)"], err


# --- sweep parameters and table ---------------------------------------------------------
def test_sweep_param_of_the_wrong_type_is_a_config_error(capsys):
    code, out, err = _cli(["sweep", S1, "--param", "depth=abc"], capsys)
    assert code == 1 and "configurations" not in out
    assert "--param depth=abc: depth takes an integer" in err and "at option --param" in err
    assert "abcabc" not in err


def test_sweep_param_converts_to_the_default_type():
    sc = load_scenarios(S1)[0]
    assert check_params(sc, "default", {"split": [1, "TILE_LEFT_RIGHT"]})["split"][0] is TILE_UP_DOWN
    assert check_params(sc, "default", {"dtype": [16]}) == {"dtype": ["16"]}


def test_sweep_table_keeps_its_width_when_a_row_fails():
    ok = SweepRow({"depth": 4}, cycles=872, utilisation={"AIC": 0.5}, busiest={"AIC": "FIX"}, best=True)
    long_error = "ValueError: invalid literal for int() with base 10: '" + "abc" * 80 + "'"
    bad = SweepRow({"depth": 9}, ok=False, error=long_error)
    normal = format_table([ok]).splitlines()
    lines = format_table([ok, bad]).splitlines()
    width = max(len(t) for t in normal)
    assert max(len(t) for t in lines[:3]) <= width + 4        # header, ok row, failed row
    assert "FAILED [1]" in lines[2]
    assert lines[-1].startswith("[1] depth=9: ValueError: invalid literal") and len(lines[-1]) <= 200


# --- failures are named -----------------------------------------------------------------
def test_check_json_reports_a_kernel_exception(tmp_path, capsys):
    path = _kernel_file(tmp_path, 'SCENARIO = Scenario("k", None, vec, make_args, golden, '
                                  '{"default": {"boom": True}})\n')
    code, out, _ = _cli(["check", path, "--json", "--schedules", "1"], capsys)
    assert code == 1
    (rep,) = json.loads(out)
    assert rep["variant"] == "default" and rep["failure"]["error"] == "ValueError"
    assert rep["failure"]["where"] == f"{path}:{_line_of(path, '# BOOM')}"


def test_check_json_reports_a_file_that_cannot_load(tmp_path, capsys):
    code, out, _ = _cli(["check", str(tmp_path / "missing.py"), "--json"], capsys)
    assert code == 1
    (rep,) = json.loads(out)
    assert rep["failure"]["error"] == "ConfigError" and "no such file" in rep["failure"]["what"]


def test_run_variant_all_runs_every_variant_and_names_the_failures(tmp_path, capsys):
    path = _kernel_file(tmp_path, 'SCENARIO = Scenario("k", None, vec, make_args, golden, '
                                  '{"a": {}, "b": {"bad": True}, "c": {"boom": True}, "d": {}})\n')
    code, out, err = _cli(["run", path, "--variant", "all", "--quiet"], capsys)
    assert code == 1
    assert "PASS k[a]" in out and "PASS k[d]" in out
    assert "FAIL k[b]: MismatchError" in out and "FAIL k[c]: ValueError" in out
    assert "2 of 4 variants failed: k[b], k[c]" in out
    assert "MismatchError: k[b] does not match" in err


# --- Scenario variants and the platform/protocol it asks for ---------------------------
def test_scenario_without_variants_runs_its_default(tmp_path, capsys):
    path = _kernel_file(tmp_path, 'SCENARIO = Scenario("k", None, vec, make_args, golden)\n')
    code, out, _ = _cli(["run", path, "--quiet"], capsys)
    assert code == 0 and "PASS k[default]" in out


def test_scenario_with_empty_variants_is_a_config_error_at_its_line(tmp_path, capsys):
    path = _kernel_file(tmp_path, 'SCENARIO = Scenario("k", None, vec, make_args, golden, {})  # EMPTY\n')
    code, _, err = _cli(["run", path], capsys)
    assert code == 1 and "ConfigError: scenario 'k': variants must be a non-empty dict" in err
    assert f"at {path}:{_line_of(path, '# EMPTY')}" in err


SCENARIO_A5 = ('SCENARIO = Scenario("k", None, vec, make_args, golden, platform="a5", '
               'protocol="pto-isa")\n')


@pytest.mark.parametrize("cmd", ["run", "trace", "check", "sweep"])
def test_every_command_uses_the_scenarios_platform_and_protocol(cmd, tmp_path, capsys):
    path = _kernel_file(tmp_path, SCENARIO_A5)
    extra = {"run": [], "trace": ["-o", str(tmp_path / "t.json")], "check": ["--json", "--schedules", "0"],
             "sweep": ["--param", "bad=False", "--workers", "1"]}[cmd]
    code, out, _ = _cli([cmd, path] + extra, capsys)
    assert code == 0
    if cmd == "check":
        assert (json.loads(out)[0]["platform"], json.loads(out)[0]["protocol"]) == ("a5", "pto-isa")
    elif cmd == "sweep":
        assert "(variant default, a5, pto-isa)" in out
    elif cmd == "trace":
        with open(tmp_path / "t.json", encoding="utf-8") as f:
            json.load(f)
        assert "cycles on a5" in out
    else:
        assert "platform a5, protocol pto-isa" in out
    # an explicit option wins over the Scenario's own
    code, out, _ = _cli([cmd, path, "--platform", "a2a3", "--protocol", "spec"] + extra, capsys)
    assert code == 0
    assert "a5" not in out.replace(str(tmp_path), "") and "pto-isa" not in out


def test_check_variant_all_summarises_the_failures(tmp_path, capsys):
    path = _kernel_file(tmp_path, 'SCENARIO = Scenario("k", None, vec, make_args, golden, '
                                  '{"a": {}, "b": {"bad": True}, "c": {"boom": True}})\n')
    code, out, err = _cli(["check", path, "--variant", "all", "--schedules", "1"], capsys)
    assert code == 1
    assert "PASS k[a]" in out and "FAIL k[b] on a2a3/spec: MismatchError" in out
    assert "FAIL k[c] on a2a3/spec: ValueError under the default schedule" in out
    # check's default schedule orders GM accesses causally: `run` alone may not reproduce it
    assert "(fails under the default schedule: every check, or run --causal, reproduces it)" in err
    assert out.rstrip().endswith("2 of 3 variants failed: k[b], k[c]")


def test_check_json_reports_a_bad_option_as_json(capsys):
    code, out, err = _cli(["check", S1, "--json", "--schedules", "-1"], capsys)
    assert code == 1 and "at option --schedules" in err
    (rep,) = json.loads(out)
    assert rep["failure"]["error"] == "ConfigError" and rep["failure"]["where"] == "option --schedules"


def test_output_piped_into_a_reader_that_stops_early_is_not_an_error():
    """`ptopipe run k.py | head -1` printed "error: BrokenPipeError" and exited 1 after a PASS."""
    p = subprocess.Popen([sys.executable, "-m", "ptopipe", "run", S1], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    first = p.stdout.readline()
    p.stdout.close()                      # the reader goes away
    err = p.stderr.read()
    assert p.wait(timeout=120) == 0, err
    assert first.startswith("PASS") and "BrokenPipe" not in err and "error" not in err, err
