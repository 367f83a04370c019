"""pto-isa's mode template arguments in ptopipe's C++ headers (headergen.MODE_FORMS): each kind
- an int (TCI's descending), an int operand (TTRI's isUpperOrLower), an enum operand (TFILLPAD's
PadValue, TGATHER's MaskPattern), an enum keyword (TPRINT's PrintFormat, TSCATTER's
ScatterAxis, TSTORE's AtomicType), a mode checked where it is written (TCI's descending) - reaches
the simulator and gives numpy's result; a mode value that is not one is a clear error at its line."""
from __future__ import annotations

import os

import numpy as np
import pytest

from ptopipe.cpp import run_cpp
from ptopipe.errors import CompileError, KernelError

from cpp_support import cpp_cache, needs_cxx, pto_inst_precompiled  # noqa: F401 (fixtures)
from test_cpp_kernels import kernel, line_of

pytestmark = pytest.mark.usefixtures("pto_inst_precompiled")    # its kernels include <pto/pto-inst.hpp> first

R, C, VC = 8, 16, 12


def _args(wrong=0):
    x = np.arange(R * C, dtype=np.float32).reshape(R, C) / 4
    return dict(x=x, seq=np.zeros((2, C), np.int32), tri=np.zeros((R, C), np.float32),
                pad=np.zeros((R, C), np.float32), gathered=np.zeros((R, C // 2), np.float32),
                scattered=np.zeros((R, C), np.float32), wrong=wrong)


@needs_cxx
def test_mode_template_arguments_reach_the_simulator(cpp_cache):
    args = _args()
    r = run_cpp(kernel("modes.cpp"), args, aiv="vec_kernel")
    x = args["x"]
    np.testing.assert_array_equal(r["seq"], [5 + np.arange(C), 5 - np.arange(C)])
    np.testing.assert_array_equal(r["tri"], 2 * np.triu(np.ones((R, C), np.float32), 2))   # stored, then added
    np.testing.assert_array_equal(r["pad"], np.where(np.arange(C) < VC, x, np.inf))
    np.testing.assert_array_equal(r["gathered"], x[:, 0::2])
    np.testing.assert_array_equal(r["scattered"], np.where(np.arange(C) % 2 == 0, x, 0))
    assert r.prints[0].split("\n")[1].split() == [f"{v:10.6f}".strip() for v in x[0]]


@needs_cxx
@pytest.mark.parametrize("wrong,what,at", [(1, "MaskPattern", "static_cast<MaskPattern>(0)"),
                                           (2, "upper_or_lower=2", "TTRI<V, 2>")])
def test_a_mode_that_is_no_value_of_its_kind_is_an_error_at_its_line(cpp_cache, wrong, what, at):
    with pytest.raises(KernelError) as ei:
        run_cpp(kernel("modes.cpp"), _args(wrong), aiv="vec_kernel")
    assert what in str(ei.value)
    assert ei.value.where == f"{os.path.relpath(kernel('modes.cpp'))}:{line_of('modes.cpp', at)}"


@needs_cxx
def test_an_int_mode_out_of_range_and_a_mistyped_start_do_not_compile(cpp_cache, tmp_path):
    f = tmp_path / "modes_bad.cpp"
    f.write_text("#include <pto/pto-inst.hpp>\nusing namespace pto;\n"
                 "extern \"C\" __global__ AICORE void vec_kernel(__gm__ float *out)\n{\n"
                 "    Tile<TileType::Vec, int32_t, 1, 16> t;\n    Tile<TileType::Vec, float, 1, 16> v;\n"
                 "    TCI<Tile<TileType::Vec, int32_t, 1, 16>, int32_t, 2>(t, 0);\n"
                 "    TCI<Tile<TileType::Vec, int32_t, 1, 16>, int16_t, 0>(t, 0);\n"
                 "}\n")
    with pytest.raises(CompileError) as ei:
        run_cpp(str(f), {"out": np.zeros(16, np.float32)}, aiv="vec_kernel")
    text = str(ei.value) + (ei.value.details or "")
    assert "TCI: descending == 0 || descending == 1" in text
    assert "TCI: the start's type T must be dst's element type" in text      # pto-isa's CheckValid
    path, line, _col = ei.value.where.rsplit(":", 2)
    assert path.endswith("modes_bad.cpp") and line == "7"
