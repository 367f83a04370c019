"""A bf16 GM array through the command line: numpy has no bf16 dtype, so ``np.save`` of an
ml_dtypes.bfloat16 array writes void ``|V2`` and ``--output`` writes the bits as uint16; both
load as a C++ kernel's ``bfloat16_t *`` argument, and an ``--output`` file is a valid
``--input`` as it is.  Where no parameter says bf16, the messages say how to view the bits."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ptopipe
from ptopipe.cli import main as cli_main
from ptopipe.cpp.build import find_kernels
from ptopipe.driver.cpp import inputs
from ptopipe.errors import ConfigError

KERNEL = """#include <pto/pto-inst.hpp>
using namespace pto;
extern "C" __global__ AICORE void vec_kernel(__gm__ float *x, __gm__ bfloat16_t *o, __gm__ uint16_t *u)
{
}
"""


TILE = ("!pto.tile_buf<loc=vec, dtype=bf16, rows=1, cols=16, v_row=1, v_col=16, blayout=row_major, "
        "slayout=none_box, fractal=512, pad=0>")
COPY_PTO = f"""module {{
  func.func @k(%x: !pto.ptr<bf16>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %v = pto.make_tensor_view %x, shape = [%c1, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xbf16>
    %p = pto.partition_view %v, offsets = [%c0, %c0], sizes = [%c1, %c16] : !pto.tensor_view<?x?xbf16> -> !pto.partition_tensor_view<1x16xbf16>
    %t = pto.alloc_tile : {TILE}
    pto.tload ins(%p : !pto.partition_tensor_view<1x16xbf16>) outs(%t : {TILE})
    pto.tstore ins(%t : {TILE}) outs(%p : !pto.partition_tensor_view<1x16xbf16>)
    return
  }}
}}
"""


def test_a_bf16_parameter_takes_void_and_bit_files_and_outputs_load_back(tmp_path):
    k = tmp_path / "k.cpp"
    k.write_text(KERNEL)
    kernels = find_kernels(str(k), None, "vec_kernel")
    bf = (np.arange(16, dtype=np.float32) - 7.5).astype(ml_dtypes.bfloat16).reshape(1, 16)
    np.save(tmp_path / "void.npy", bf)                            # np.load gives |V2
    assert np.load(tmp_path / "void.npy").dtype.kind == "V"
    np.save(tmp_path / "bits.npy", bf.view(np.uint16))
    pto = tmp_path / "copy.pto"                                   # --output's file, from a .pto run
    pto.write_text(COPY_PTO)
    assert cli_main(["run", str(pto), "--input", f"x={tmp_path / 'void.npy'}", "--output",
                     f"x={tmp_path / 'out.npy'}", "--quiet"]) == 0
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


ENTRY = """#include <pto/pto-inst.hpp>
using namespace pto;
AICORE inline void k_aic(__gm__ bfloat16_t *a, __gm__ uint8_t *fifo) {}
AICORE inline void k_aiv(__gm__ bfloat16_t *out, __gm__ uint8_t *fifo) {}
extern "C" __global__ AICORE void k(__gm__ bfloat16_t *a, __gm__ bfloat16_t *out, __gm__ uint8_t *fifo)
{
#if defined(__DAV_CUBE__)
    k_aic(a, fifo);
#endif
#if defined(__DAV_VEC__)
    k_aiv(out, fifo);
#endif
}
"""


def test_the_kernels_an_entry_calls_take_bf16_files_for_their_bf16_pointers(tmp_path):
    """C++ that ``compile --emit cpp`` writes: the entry's sections call the Cube and Vector
    kernels with its arguments - their bf16 pointers take a bf16 file as np.load gives it."""
    k = tmp_path / "k.cpp"
    k.write_text(ENTRY)
    kernels = find_kernels(str(k))
    assert (kernels.aic.name, kernels.aiv.name) == ("k_aic", "k_aiv")
    bf = np.arange(16, dtype=np.float32).astype(ml_dtypes.bfloat16)
    np.save(tmp_path / "a.npy", bf)
    got = inputs([f"a={tmp_path / 'a.npy'}", f"out={tmp_path / 'a.npy'}"], kernels)
    assert got["a"].dtype == ml_dtypes.bfloat16 and got["out"].dtype == ml_dtypes.bfloat16
