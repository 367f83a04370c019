"""A bf16 GM array through the command line: numpy has no bf16 dtype, so ``np.save`` of an
ml_dtypes.bfloat16 array writes void ``|V2`` and ``--output`` writes the bits as uint16; both
load as a C++ kernel's ``bfloat16_t *`` argument, and an ``--output`` file is a valid
``--input`` as it is.  Where no parameter says bf16, the messages say how to view the bits."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ptopipe
from ptopipe.cli.common import write_outputs
from ptopipe.cpp.build import find_kernels
from ptopipe.driver.cpp import inputs
from ptopipe.errors import ConfigError
from ptopipe.isa import *  # noqa: F403

KERNEL = """#include <pto/pto-inst.hpp>
using namespace pto;
extern "C" __global__ AICORE void vec_kernel(__gm__ float *x, __gm__ bfloat16_t *o, __gm__ uint16_t *u)
{
}
"""


def test_a_bf16_parameter_takes_void_and_bit_files_and_outputs_load_back(tmp_path):
    k = tmp_path / "k.cpp"
    k.write_text(KERNEL)
    kernels = find_kernels(str(k), None, "vec_kernel")
    bf = (np.arange(16, dtype=np.float32) - 7.5).astype(ml_dtypes.bfloat16).reshape(1, 16)
    np.save(tmp_path / "void.npy", bf)                            # np.load gives |V2
    assert np.load(tmp_path / "void.npy").dtype.kind == "V"
    np.save(tmp_path / "bits.npy", bf.view(np.uint16))
    write_outputs({"o": bf}, [f"o={tmp_path / 'out.npy'}"])      # --output's file
    for f in ("void", "bits", "out"):
        got = inputs([f"o={tmp_path / f}.npy", f"u={tmp_path / 'bits.npy'}"], kernels)
        assert got["o"].dtype == ml_dtypes.bfloat16 and np.array_equal(got["o"].view(np.uint16), bf.view(np.uint16))
        assert got["u"].dtype == np.uint16                           # a uint16 parameter keeps its bits


def test_a_void_array_for_gm_says_how_to_view_it():
    def vec(x):
        pass
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(aiv=(vec, None), args=dict(x=np.zeros((1, 16), ml_dtypes.bfloat16).view("V2")))
    assert "GM cannot hold" in ei.value.what and "x.view(ml_dtypes.bfloat16)" in ei.value.fix, ei.value
