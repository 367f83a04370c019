"""Scalar ``pl.min`` / ``pl.max`` (pypto's spelling): one IR op each (``arith.min`` /
``arith.max``), run by the interpreter, printed and parsed back, written to .pto as pypto
writes them (``arith.minsi`` / ``arith.maxsi``, ``arith.minimumf`` / ``arith.maximumf``), read
back from those spellings (and ``arith.minui`` / ``arith.maxui``), verified by the static
checks, and written to C++."""
import numpy as np
import pytest

import ptopipe.language as pl
from ptopipe.codegen import read_pto, write_cpp, write_pto
from ptopipe.errors import CompileError
from ptopipe.ir import first_difference, structural_equal, to_source
from ptopipe.language import frontend
from ptopipe.passes import PassManager, compile_program
from ptopipe.passes.manager import PassContext
from ptopipe.runtime import run

from ptopipe.codegen.pto_load import PTO_PASSES

N, R, C = 40, 16, 16        # 40 rows in tiles of 16: the last window is clamped to rows 24..39


def _tail_program():
    @pl.aic
    def cube(x: pl.Tensor[[N, C], pl.f32]):
        pass

    @pl.aiv
    def vec(x: pl.Tensor[[N, C], pl.f32], y: pl.Tensor[[2 * N, C], pl.f32]):
        sub = pl.get_subblockid()
        for i in pl.range(3):
            row = pl.min(i * R, N - R)                 # the tail window overlaps the one before
            t = pl.load(x, [pl.max(row - 100, row), 0], [R, C])
            pl.store(pl.muls(t, 2.0), [row + sub * N, 0], y)
    return pl.program(cube, vec, name="tail")


def _args():
    x = np.arange(N * C, dtype=np.float32).reshape(N, C)
    return x, dict(x=x, y=np.zeros((2 * N, C), np.float32))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_min_max_offsets_run_as_numpy_says(platform):
    x, args = _args()
    res = run(_tail_program(), args, platform=platform)
    np.testing.assert_array_equal(res.outputs["y"], np.concatenate([2 * x, 2 * x]))


def test_min_max_print_as_calls_and_parse_back():
    prog = _tail_program()
    text = to_source(prog)
    assert "pl.min(" in text and "pl.max(" in text
    back = frontend.parse(text)
    assert structural_equal(prog, back), first_difference(prog, back)


def test_min_max_take_two_scalars():
    bad = '''
import ptopipe.language as pl

@pl.aiv
def k(x: pl.Tensor[[16, 16], pl.f32]):
    t = pl.load(x, [pl.min(0), 0], [16, 16])
'''
    with pytest.raises(CompileError, match=r"pl.min takes two scalars") as ei:
        frontend.parse(bad)
    assert ei.value.where == "<dsl>:6:21"


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_min_max_in_pto_are_pyptos_spellings_and_read_back(platform):
    x, args = _args()
    op = compile_program(_tail_program(), platform)
    text = write_pto(op)
    assert "arith.minsi" in text and "arith.maxsi" in text
    back = PassManager(list(PTO_PASSES)).run(read_pto(text, "k.pto"), PassContext(platform=platform))
    assert structural_equal(op, back), first_difference(op, back)
    res = run(back, args, platform=platform)
    np.testing.assert_array_equal(res.outputs["y"], np.concatenate([2 * x, 2 * x]))
    # the unsigned and NaN-ignoring spellings read as the same ops
    alt = text.replace("arith.minsi", "arith.minui").replace("arith.maxsi", "arith.maxui")
    again = PassManager(list(PTO_PASSES)).run(read_pto(alt, "k.pto"), PassContext(platform=platform))
    assert structural_equal(op, again), first_difference(op, again)


def test_min_max_in_cpp():
    text = write_cpp(compile_program(_tail_program(), "a2a3"), "a2a3")
    assert " < " in text and " ? " in text
