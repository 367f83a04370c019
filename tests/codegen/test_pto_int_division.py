"""Integer division and remainder keep their rounding through every form of a kernel: the
DSL's ``//`` / ``%`` floor (Python's), ``pl.truncdiv`` / ``pl.truncrem`` truncate toward zero
(MLIR's ``arith.divsi`` / ``arith.remsi``, C's ``/`` / ``%``).  A ``.pto`` file's
``arith.remsi`` / ``divsi`` of a loop variable or parameter is read as the truncating op (not
as the IR's floor ``%``), the writer writes each back as what it is (``%`` as ``a -
floordivsi(a, b) * b``), and the run of the DSL program, the run of its ``.pto`` and the
static verifier agree on negative operands.  With ``PTOAS`` set, the real assembler reads the
written file."""
import os
import subprocess

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.cli import main as cli_main
from ptopipe.codegen import read_pto, write_pto
from ptopipe.errors import CompileError
from ptopipe.ir import print_program
from ptopipe.passes import compile_program
from ptopipe.runtime import run

PTOAS = os.environ.get("PTOAS")
PROBE = os.path.join(os.path.dirname(__file__), "..", "pto")


@pl.aic
def _idle():
    pass


@pl.aiv
def _rounding(x: pl.Tensor[[64, 16], pl.f32], out: pl.Tensor[[64, 32], pl.f32]):
    for i in pl.range(4):
        j = i - 2                                   # -2, -1, 0, 1
        r = j % 4 * 16                              # floor: 2, 3, 0, 1 (toward zero: -2, -1, 0, 1)
        t = (pl.truncrem(j, 4) + 2) * 16            # toward zero: 0, 1, 2, 3 (floor: 4, 5, 2, 3)
        c = (pl.truncdiv(j - 1, 2) + 1) * 16        # toward zero: 0, 0, 1, 1 (floor: -1, 0, 0, 1)
        a = pl.load(x, [r, 0], [16, 16])
        pl.store(a, [t, c], out)


def _expected(x):
    out = np.zeros((64, 32), np.float32)
    for i in range(4):
        j = i - 2
        r, t = j % 4, int(np.fmod(j, 4)) + 2
        c = int(np.trunc((j - 1) / 2)) + 1
        out[16 * t:16 * t + 16, 16 * c:16 * c + 16] = x[16 * r:16 * r + 16]
    return out


X = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)


def _program():
    return pl.program(_idle, _rounding, name="rounding")


def test_the_dsl_floors_and_truncates_as_written():
    res = run(_program(), dict(x=X, out=np.zeros((64, 32), np.float32)), platform="a2a3")
    np.testing.assert_array_equal(res.outputs["out"], _expected(X))


def test_truncating_ops_print_as_calls_and_parse_back():
    text = print_program(_program())
    assert "pl.truncrem(j, 4)" in text and "pl.truncdiv(j - 1, 2)" in text and "j % 4" in text, text
    assert print_program(pl.parse(text)) == text


def test_written_pto_spells_each_rounding_and_runs_as_the_dsl(tmp_path, capsys):
    op = compile_program(_program(), "a2a3")
    text = write_pto(op)
    assert "arith.remsi" in text and "arith.divsi" in text and "arith.floordivsi" in text, text
    res = ptopipe.run_pto(text=text, inputs=dict(x=X, out=np.zeros((64, 32), np.float32)))
    np.testing.assert_array_equal(res.outputs["out"], _expected(X))
    f = tmp_path / "k.pto"
    f.write_text(text)
    assert cli_main(["check", "--static", str(f)]) == 0, capsys.readouterr()
    # read back: the written remsi / divsi are the truncating ops again, and are written as such
    again = write_pto(compile_program(read_pto(text, "k.pto"), "a2a3"))
    assert again.count("arith.remsi") == text.count("arith.remsi") == 1
    assert again.count("arith.divsi") == text.count("arith.divsi") == 1


def test_truncdiv_of_floats_is_refused():
    @pl.aiv
    def _floats(x: pl.Tensor[[16, 16], pl.f32]):
        a = pl.load(x, [0, 0], [16, 16])
        s = pl.truncdiv(2.5, 1.5)
        pl.store(pl.muls(a, s), [0, 0], x)
    with pytest.raises(CompileError, match="pl.truncdiv of an f32 scalar: it divides integers") as e:
        compile_program(pl.program(_idle, _floats, name="f"), "a2a3")
    at = next(i for i, ln in enumerate(open(__file__), 1) if "s = pl.truncdiv(2.5" in ln)
    assert f"test_pto_int_division.py:{at}:" in str(e.value)


@pytest.mark.skipif(not PTOAS, reason="set PTOAS to the ptoas binary")
def test_ptoas_reads_the_written_roundings(tmp_path):
    f = tmp_path / "k.pto"
    f.write_text(write_pto(compile_program(_program(), "a2a3")))
    r = subprocess.run([PTOAS, str(f), "-o", str(tmp_path / "k.cpp")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
