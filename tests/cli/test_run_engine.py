"""``ptopipe run FILE.py --no-checks [--engine periodic]``: a Python kernel run without the
checkers, on either engine (docs/engine.md) - the same verdict, the periodic engine saying
what it recorded - and the options refused where they do not apply."""
from __future__ import annotations

import os

from ptopipe.cli import main as cli_main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
S7 = os.path.join(ROOT, "examples", "scenarios", "s7_long_stream.py")
PTO = os.path.join(ROOT, "tests", "pto", "i32_trip_count_a3.pto")


def test_the_periodic_engine_records_and_matches(capsys):
    assert cli_main(["run", S7, "--no-checks", "--engine", "periodic"]) == 0
    out = capsys.readouterr().out
    assert "PASS s7_long_stream[default]: matches numpy golden" in out
    line = next(ln for ln in out.splitlines() if "periodic engine:" in ln)
    assert int(line.split("periodic engine: ")[1].split()[0]) > 0, line    # blocks recorded


def test_without_the_checkers_on_the_exact_engine(capsys):
    assert cli_main(["run", S7, "--no-checks", "--engine", "exact"]) == 0
    out = capsys.readouterr().out
    assert "matches numpy golden" in out and "periodic engine" not in out


def test_the_periodic_engine_needs_no_checkers(capsys):
    assert cli_main(["run", S7, "--engine", "periodic"]) == 1
    err = capsys.readouterr().err
    assert "ConfigError: --engine periodic runs without the checkers" in err and "add --no-checks" in err


def test_the_options_are_for_python_kernels(capsys):
    assert cli_main(["run", PTO, "--no-checks"]) == 1
    assert "--no-checks is for Python kernels" in capsys.readouterr().err
