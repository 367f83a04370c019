"""The split of a mixed function's Vector work between the two Vector cores follows each op's
declared data dependence (:class:`ptopipe.ir.ops.Axes`): an op that mixes data across the
split axis is a CompileError at its line (and ``check --static`` reports it), never a
silently wrong result."""
import pytest

import ptopipe.language as pl
from ptopipe.errors import CompileError
from ptopipe.passes import compile_program

UD, LR = "TILE_UP_DOWN", "TILE_LEFT_RIGHT"
#: out = EXPR(v), v = a @ b crossed to the Vector side; r a [1, 16] row, c a [16, 1] column
SOURCE = '''\
import ptopipe.language as pl


@pl.incore(split=pl.{split}, slot_num=2)
def k(a: pl.Tensor[[16, 16], pl.f32], b: pl.Tensor[[16, 16], pl.f32], r: pl.Tensor[[1, 16], pl.f32],
      c: pl.Tensor[[16, 1], pl.f32], o: pl.Tensor[[16, {cols}], pl.f32]):
    al = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
    bl = pl.move(pl.load(b, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
    v = pl.move(pl.matmul(al, bl), space=pl.Vec)
    y = {expr}
    pl.store(y, [0, 0], o)

program = pl.program(k, name="k")
'''
OP_LINE = 10


def _program(split, expr, cols=16):
    return pl.parse(SOURCE.format(split=split, expr=expr, cols=cols))


def _refused(split, expr, line=OP_LINE, cols=16):
    with pytest.raises(CompileError) as e:
        compile_program(_program(split, expr, cols))
    assert e.value.where.split(":")[-2] == str(line), e.value.where
    return e.value


MIXES = "mixes data across the split axis: its result combines values from different"


@pytest.mark.parametrize("split, expr, cols, what", [
    (LR, "pl.concat(v, pl.muls(v, 2.0))", 32, f"pl.concat {MIXES} columns of 'v'"),
    (LR, "pl.pair_sum(v)", 16, f"pl.pair_sum {MIXES} columns of 'v'"),
    (LR, "pl.add(v, pl.cast(pl.row_argmax(v), pl.f32))", 16, f"pl.row_argmax {MIXES} columns"),
    (UD, "pl.add(v, pl.cast(pl.col_argmax(v), pl.f32))", 16, f"pl.col_argmax {MIXES} rows"),
    (UD, "pl.col_expand(pl.col_sum(v), shape=[16, 16])", 16, f"pl.col_sum {MIXES} rows"),
])
def test_an_op_mixing_data_across_the_split_axis_is_refused(split, expr, cols, what):
    e = _refused(split, expr, cols=cols)
    assert e.what.startswith(what), e.what
    other = LR if split == UD else UD
    assert e.fix.startswith(f"use @pl.incore(split=pl.{other})") and "TILE_NO_SPLIT" in e.fix


def test_check_static_reports_an_op_mixing_across_the_split(tmp_path, capsys):
    from ptopipe.cli import main as cli_main
    path = tmp_path / "concat_lr.py"
    path.write_text(SOURCE.format(split=LR, expr="pl.concat(v, pl.muls(v, 2.0))", cols=32))
    rc = cli_main(["check", "--static", str(path)])
    out, err = capsys.readouterr()
    assert rc != 0 and "PASS" not in out, (out, err)
    assert f"pl.concat {MIXES} columns of 'v'" in err
    assert f"concat_lr.py:{OP_LINE}:" in err
