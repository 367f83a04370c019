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


TB = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, "
      "slayout=none_box, fractal=512, pad=0>")
TV, PV = "!pto.tensor_view<?x?xf32>", "!pto.partition_tensor_view<16x16xf32>"


def _vector_rows(rows: str) -> str:
    """A Vector kernel copying x's 16-row blocks to out, 3 iterations; ``rows`` (MLIR lines in
    the loop over %i) computes the block's first row %row."""
    return f"""module attributes {{pto.target_arch = "a3"}} {{
  func.func @copy(%x: !pto.ptr<f32>, %out: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c16 = arith.constant 16 : index
    %c48 = arith.constant 48 : index
    %xv = pto.make_tensor_view %x, shape = [%c48, %c16], strides = [%c16, %c1] : {TV}
    %ov = pto.make_tensor_view %out, shape = [%c48, %c16], strides = [%c16, %c1] : {TV}
    %t = pto.alloc_tile : {TB}
    scf.for %i = %c0 to %c3 step %c1 {{
{rows}
      %xp = pto.partition_view %xv, offsets = [%row, %c0], sizes = [%c16, %c16] : {TV} -> {PV}
      %op = pto.partition_view %ov, offsets = [%row, %c0], sizes = [%c16, %c16] : {TV} -> {PV}
      pto.tload ins(%xp : {PV}) outs(%t : {TB})
      pto.tstore ins(%t : {TB}) outs(%op : {PV})
    }}
    return
  }}
}}
"""


#: row block (remsi(i - 1, 3) + 1): 0, 1, 2 toward zero (floor: 3, 1, 2 - out of bounds at i = 0)
REM_IN = """      %j = arith.subi %i, %c1 : index
      %r = arith.remsi %j, %c3 : index
      %r1 = arith.addi %r, %c1 : index
      %row = arith.muli %r1, %c16 : index"""
#: row block remsi(i - 1, 3): -1 at i = 0 toward zero (floor: 2, 0, 1 - in bounds)
REM_OUT = """      %j = arith.subi %i, %c1 : index
      %r = arith.remsi %j, %c3 : index
      %row = arith.muli %r, %c16 : index"""


def test_remsi_of_a_negative_loop_value_is_judged_as_the_run_computes_it(tmp_path, capsys):
    x = np.arange(48 * 16, dtype=np.float32).reshape(48, 16)
    good = tmp_path / "good.pto"
    good.write_text(_vector_rows(REM_IN))
    assert cli_main(["check", "--static", str(good)]) == 0, capsys.readouterr()
    r = ptopipe.run_pto(str(good), inputs=dict(x=x, out=np.zeros_like(x)))
    np.testing.assert_array_equal(r.outputs["out"], x)
    capsys.readouterr()
    bad = tmp_path / "bad.pto"
    text = _vector_rows(REM_OUT)
    bad.write_text(text)
    assert cli_main(["check", "--static", str(bad)]) == 1
    err = capsys.readouterr().err
    # a negative offset: at the pto.partition_view that writes it, naming the load (as the run)
    part = next(i for i, ln in enumerate(text.splitlines(), 1) if "pto.partition_view %x" in ln)
    assert "access out of bounds: offsets [-16, 0] + window [16, 16] exceed 'x' of shape [48, 16] " \
           "(in iteration 1 (i=0)" in err and f"bad.pto:{part}:7" in err, err
    with pytest.raises(ptopipe.errors.PtoPipeError, match=r"offsets \[-16, 0\]"):
        ptopipe.run_pto(str(bad), static=False, inputs=dict(x=x, out=np.zeros_like(x)))
