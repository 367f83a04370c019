"""``ptopipe run FILE.py|FILE.pto [--no-checks] [--engine periodic]``: a Python or PTO-AS kernel
run with or without the checkers, on either engine (docs/engine.md) - the same verdict and outputs,
the periodic engine saying what it recorded - and the options refused where they do not
apply (a C++ kernel)."""
from __future__ import annotations

import os

import numpy as np

from ptopipe.cli import main as cli_main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
S7 = os.path.join(ROOT, "examples", "scenarios", "s7_long_stream.py")
PTO = os.path.join(ROOT, "tests", "pto", "i32_trip_count_a3.pto")
CPP = os.path.join(ROOT, "examples", "cpp", "c2v_bias.cpp")


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


def test_the_periodic_engine_with_the_checkers(capsys):
    assert cli_main(["run", S7, "--engine", "periodic"]) == 0
    out = capsys.readouterr().out
    assert "PASS s7_long_stream[default]: matches numpy golden" in out
    line = next(ln for ln in out.splitlines() if "periodic engine:" in ln)
    assert int(line.split("periodic engine: ")[1].split()[0]) > 0, line


def test_a_pto_kernel_records_and_writes_what_the_exact_engine_writes(capsys, tmp_path):
    """ptoas's stream spelling with 300 tiles: the periodic engine records its blocks - most
    of them taken whole - and the output it writes is the exact engine's."""
    text = open(PTO).read().replace("%c64 = arith.constant 64 : index", "%c64 = arith.constant 4800 : index")
    src = tmp_path / "stream.pto"
    src.write_text(text)
    rng = np.random.default_rng(3)
    for name, shape in (("a", (4800, 16)), ("b", (16, 16))):
        np.save(tmp_path / f"{name}.npy", rng.integers(-3, 4, shape).astype(np.float16))
    outs = {}
    for engine in ("exact", "periodic"):
        outs[engine] = tmp_path / f"out_{engine}.npy"
        assert cli_main(["run", str(src), "--no-checks", "--engine", engine, "--input", f"a={tmp_path / 'a.npy'}",
                         "--input", f"b={tmp_path / 'b.npy'}", "--input", "n=300",
                         "--output", f"out={outs[engine]}"]) == 0
        out = capsys.readouterr().out
        assert "PASS stream.pto @entry" in out
        if engine == "periodic":
            line = next(ln for ln in out.splitlines() if "periodic engine:" in ln)
            assert int(line.split("periodic engine: ")[1].split()[0]) > 0, line
            assert int(line.split(" of them taken whole")[0].split(", ")[-1]) > 0, line
        else:
            assert "periodic engine" not in out
    assert np.load(outs["exact"]).tobytes() == np.load(outs["periodic"]).tobytes()


def test_the_options_are_not_for_cpp_kernels(capsys):
    assert cli_main(["run", CPP, "--no-checks"]) == 1
    assert "--no-checks is for Python and .pto kernels" in capsys.readouterr().err
