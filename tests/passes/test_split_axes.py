"""The split of a mixed function's Vector work between the two Vector cores follows each op's
declared data dependence (:class:`ptopipe.ir.ops.Axes`): ops that change the shape
(transpose, concat, broadcasts to a shape, pl.tri / pl.arange / pl.full) get their half by
their own typing rule, a transpose swaps the axis its result is split along, a sequence or
triangle starts at the core's first index - each run matches numpy; an op that mixes data
across the split axis is a CompileError at its line (and ``check --static`` reports it),
never a silently wrong result.  The split program is compared line for line (FileCheck
style) for the shape-changing ops."""
import numpy as np
import pytest

import ptopipe.language as pl
from ptopipe.errors import CompileError
from ptopipe.ir.printer import print_program
from ptopipe.passes import compile_program
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import run

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
OP_LINE, STORE_LINE = 10, 11


def _program(split, expr, cols=16):
    return pl.parse(SOURCE.format(split=split, expr=expr, cols=cols))


def _tril(diagonal=0, upper=False):
    i, j = np.arange(16)[:, None], np.arange(16)[None, :]
    return ((j >= i + diagonal) if upper else (j <= i + diagonal)).astype(np.float32)


def _pairs(p):
    out = np.zeros_like(p)
    out[:, :8] = p[:, 0::2] + p[:, 1::2]
    return out


RUNS = [
    (UD, "pl.transpose(v)", lambda p, r, c: p.T),
    (LR, "pl.transpose(v)", lambda p, r, c: p.T),
    (UD, "pl.concat(v, pl.muls(v, 2.0))", lambda p, r, c: np.concatenate([p, 2 * p], 1)),
    (UD, "pl.pair_sum(v)", lambda p, r, c: _pairs(p)),
    (UD, "pl.mul(v, pl.tri([16, 16], pl.f32, 0))", lambda p, r, c: p * _tril()),
    (LR, "pl.mul(v, pl.tri([16, 16], pl.f32, 0))", lambda p, r, c: p * _tril()),
    (LR, "pl.mul(v, pl.tri([16, 16], pl.f32, 3, upper=1))", lambda p, r, c: p * _tril(3, True)),
    (LR, "pl.add(v, pl.cast(pl.arange([1, 16], pl.i32, 5), pl.f32))",
     lambda p, r, c: p + np.arange(5, 21, dtype=np.float32)),
    (UD, "pl.add(v, pl.col_expand(pl.load(r, [0, 0], [1, 16]), shape=[16, 16]))",
     lambda p, r, c: p + r),
    (LR, "pl.add(v, pl.col_expand(pl.load(r, [0, 0], [1, 16]), shape=[16, 16]))",
     lambda p, r, c: p + r),
    (UD, "pl.row_expand(pl.row_max(v), shape=[16, 16])",
     lambda p, r, c: np.repeat(p.max(1, keepdims=True), 16, 1)),
    (LR, "pl.add(v, pl.row_expand(pl.load(c, [0, 0], [16, 1]), shape=[16, 16]))",
     lambda p, r, c: p + c),
    (UD, "pl.add(v, pl.cast(pl.row_argmax(v), pl.f32))", lambda p, r, c: p + p.argmax(1)[:, None]),
    (LR, "pl.add(v, pl.cast(pl.col_argmax(v), pl.f32))", lambda p, r, c: p + p.argmax(0)[None, :]),
    (LR, "pl.add(v, pl.full([16, 16], pl.f32, 3.0))", lambda p, r, c: p + 3),
    (LR, "pl.select(pl.cmps(v, 0.0, mode=pl.CMP_GT), v, pl.muls(v, 0.5))",
     lambda p, r, c: np.where(p > 0, p, p / 2)),
]


@pytest.mark.parametrize("split, expr, golden", RUNS, ids=[f"{s}-{e}" for s, e, _ in RUNS])
def test_split_shape_and_index_ops_match_numpy(split, expr, golden):
    rng = np.random.default_rng(3)
    a, b = (rng.integers(-3, 4, (16, 16)).astype(np.float32) for _ in range(2))
    r = rng.integers(-3, 4, (1, 16)).astype(np.float32)
    c = rng.integers(-3, 4, (16, 1)).astype(np.float32)
    want = golden(a @ b, r, c)
    prog = _program(split, expr, want.shape[1])
    args = dict(a=a, b=b, r=r, c=c, o=np.zeros(want.shape, np.float32))
    res = run(prog, with_slot_buffer(prog, args))
    np.testing.assert_array_equal(res.outputs["o"], want)


def _split_aiv(split, expr) -> list:
    """The AIV function ExpandMixedKernel makes, its lines from the one popping the tile on."""
    text = print_program(compile_program(_program(split, expr), passes=["expand-mixed"]))
    aiv = text.split("def k_aiv(")[1].split("@pl.incore")[0]
    lines = [ln.strip() for ln in aiv.splitlines() if ln.strip()]
    return lines[lines.index("sub = pl.get_subblockid()"):]


def test_split_program_of_a_triangle_and_a_sequence():
    """Under TILE_LEFT_RIGHT each core makes the [16, 8] part of the triangle and the [1, 8]
    part of the sequence it holds: the diagonal moves down, the start on, by its first column."""
    assert _split_aiv(LR, "pl.add(pl.mul(v, pl.tri([16, 16], pl.f32, 0)), "
                          "pl.cast(pl.arange([1, 16], pl.i32, 0), pl.f32))") == [
        "sub = pl.get_subblockid()",
        "v = pl.TPOP(c2v_buf, pl.Tile[[16, 8], pl.f32, pl.Vec], split=pl.TILE_LEFT_RIGHT)",
        "y = pl.col_expand_add(pl.mul(v, pl.tri([16, 8], pl.f32, 0 - (sub * 8))), "
        "pl.cast(pl.arange([1, 8], pl.i32, 0 + (sub * 8)), pl.f32))",
        "pl.store(y, [0, sub * 8], o)",
    ]


def test_split_program_of_a_broadcast_and_a_transpose():
    """Under TILE_UP_DOWN the per-row broadcast makes its core's 8 rows; their transpose is
    the core's 8 columns of the result, stored at column sub * 8."""
    assert _split_aiv(UD, "pl.transpose(pl.row_expand(pl.row_max(v), shape=[16, 16]))") == [
        "sub = pl.get_subblockid()",
        "v = pl.TPOP(c2v_buf, pl.Tile[[8, 16], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)",
        "y = pl.transpose(pl.row_expand(pl.row_max(v), [8, 16]))",
        "pl.store(y, [0, sub * 8], o)",
    ]


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


def test_tiles_split_along_different_axes_do_not_combine():
    e = _refused(UD, "pl.add(pl.transpose(v), v)")
    assert e.what.startswith("pl.add combines a tile split by columns with one split by rows")


def test_an_operand_that_does_not_line_up_with_the_result_is_refused():
    e = _refused(UD, "pl.part_add(v, pl.load(a, [0, 0], [8, 16]))")
    assert e.what.startswith("pl.part_add: 'b' (a Vector tile) has 8 rows and the result 16")


def test_a_per_row_operand_split_by_columns_is_refused():
    e = _refused(LR, "pl.dequant(pl.cast(pl.cast(v, pl.f16), pl.i8), pl.load(a, [0, 0], [16, 16]), "
                     "pl.load(a, [0, 0], [16, 16]))")
    assert e.what.startswith("pl.dequant reads one column of its 'scale' operand (a Vector "
                             "tile) for every column of its result, but that operand is split by "
                             "columns"), e.what
    assert e.fix.startswith("pass a one-column 'scale'")


def test_whole_tiles_are_not_stored_from_both_cores():
    e = _refused(UD, "pl.load(r, [0, 0], [1, 16])", line=STORE_LINE)
    assert e.what.startswith("storing a per-column tile (1x16 f32) under split TILE_UP_DOWN")
    assert e.fix == ("use @pl.incore(split=pl.TILE_LEFT_RIGHT) (a per-column tile is split "
                     "there: each core writes its half), or split=pl.TILE_NO_SPLIT")
    e = _refused(UD, "pl.transpose(pl.load(r, [0, 0], [1, 16]))", line=STORE_LINE)
    assert e.what.startswith("storing a tile (16x1 f32) that both Vector cores hold whole under "
                             "split TILE_UP_DOWN")


def test_a_transposed_tile_is_not_pushed_split_the_other_way():
    e = _refused(UD, "pl.move(pl.matmul(pl.move(pl.transpose(v), space=pl.Left), bl), "
                     "space=pl.Vec)")
    assert e.what.startswith("passing to the Cube a Vector tile, which is split by columns "
                             "between the Vector cores (it is a transpose)"), e.what


CARRIED = '''\
import ptopipe.language as pl


@pl.incore(split=pl.TILE_UP_DOWN, slot_num=2)
def k(a: pl.Tensor[[16, 16], pl.f32], o: pl.Tensor[[16, 16], pl.f32]):
    al = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
    bl = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
    v = pl.move(pl.matmul(al, bl), space=pl.Vec)
    for i, (t,) in pl.range(2, init_values=(pl.transpose(v),)):
        t1 = pl.yield_(pl.adds(t, 1.0))
    pl.store(t1, [0, 0], o)

program = pl.program(k, name="k")
'''


def test_a_loop_carried_value_keeps_one_split():
    with pytest.raises(CompileError) as e:
        compile_program(pl.parse(CARRIED))
    assert e.value.what.startswith("'t' is carried split by rows between the Vector cores, but "
                                   "the value given for it (a Vector tile) is split by columns")
    assert e.value.where.split(":")[-2] == "9"


def test_check_static_reports_an_op_mixing_across_the_split(tmp_path, capsys):
    from ptopipe.cli import main as cli_main
    path = tmp_path / "concat_lr.py"
    path.write_text(SOURCE.format(split=LR, expr="pl.concat(v, pl.muls(v, 2.0))", cols=32))
    rc = cli_main(["check", "--static", str(path)])
    out, err = capsys.readouterr()
    assert rc != 0 and "PASS" not in out, (out, err)
    assert f"pl.concat {MIXES} columns of 'v'" in err
    assert f"concat_lr.py:{OP_LINE}:" in err
