"""A5's MXFP8 TQUANT in C++ (``ptopipe/isa/mx_quant.py``): pto-isa's ``TQUANT<grp_axis, MxQuantAlg>``.
Gated on ``PTO_ISA_ROOT``: ND and DN, OCP and NV, float32 / half sources give the same
codes and exponents as the file built against pto-isa's headers on its CPU simulator (data whose
scaled values stay clear of e4m3's zero, where the two differ in sign: docs/cpp.md); HiFloat4 and
the ZZ exponent store do not build, saying why."""
from __future__ import annotations

import os
import subprocess

import ml_dtypes
import numpy as np
import pytest

from ptopipe.cpp import run_cpp
from ptopipe.errors import CompileError

from cpp_support import SIM_FILE_IO, cpp_cache, needs_cxx, pto_inst_precompiled  # noqa: F401 (fixtures)

PTO_ISA = os.environ.get("PTO_ISA_ROOT")
pytestmark = [pytest.mark.usefixtures("pto_inst_precompiled"), needs_cxx,
              pytest.mark.skipif(not PTO_ISA, reason="PTO_ISA_ROOT (a pto-isa checkout) is not set")]
KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_kernels", "mx_quant_a5.cpp")
R = C = 64
SRC = {"x1": np.float32, "x2": np.float16, "x3": np.float16, "x4": np.float32}
EXP = {"e1": (R, 32), "e2": (R, 32), "e3": (R // 32, C), "e4": (R // 32, C)}


def args() -> dict:
    rng = np.random.default_rng(7)
    a = {k: (rng.integers(-9, 10, (R, C)) * np.exp2(rng.integers(-4, 5, (R, 1)))).astype(t) for k, t in SRC.items()}
    a.update({f"q{i}": np.zeros((R, C), np.int8) for i in range(1, 5)})
    a.update({k: np.zeros(s, np.uint8) for k, s in EXP.items()})
    return a


MAIN = SIM_FILE_IO + """int main(int, char **argv)
{
    const std::string dir = argv[1];
    pto::NPU_MEMORY_INIT(pto::NPUArch::A5);
@BUFFERS@
    {
        pto::cpu_sim::ScopedExecutionContext ctx(0, 0, 1);
        mx_quant(@CALL@);
    }
@SAVES@
    return 0;
}
"""
_CTYPE = {np.dtype(np.float32): "float", np.dtype(ml_dtypes.bfloat16): "bfloat16_t", np.dtype(np.float16): "half",
          np.dtype(np.int8): "int8_t", np.dtype(np.uint8): "uint8_t"}


def test_the_codes_and_exponents_are_pto_isas_cpu_simulators(cpp_cache, tmp_path):
    from test_pto_isa_cpu_sim import build
    a = args()
    ours = run_cpp(KERNEL, a, platform="a5", aiv="mx_quant")
    assert not ours.summary.leaks, ours.summary.leaks
    bufs, saves = [], []
    for k, v in a.items():
        v.tofile(tmp_path / f"{k}.in")
        bufs.append(f"    static {_CTYPE[v.dtype]} buf_{k}[{v.size}];\n    io(dir + \"/{k}.in\", buf_{k}, {v.nbytes}, false);")
        saves.append(f"    io(dir + \"/{k}.out\", buf_{k}, {v.nbytes}, true);")
    main = MAIN.replace("@BUFFERS@", "\n".join(bufs)).replace("@SAVES@", "\n".join(saves)).replace(
        "@CALL@", ", ".join(f"buf_{k}" for k in a))
    with open(KERNEL) as f:
        built = build(tmp_path, f.read(), main)
    assert built.returncode == 0, built.stderr[-4000:]
    ran = subprocess.run([str(tmp_path / "k"), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr[-3000:]
    for i in range(1, 5):
        q = np.fromfile(tmp_path / f"q{i}.out", np.int8).reshape(R, C)
        np.testing.assert_array_equal(ours[f"q{i}"], q, err_msg=f"q{i}")
        e = np.fromfile(tmp_path / f"e{i}.out", np.uint8).reshape(EXP[f"e{i}"])
        cols = 2 if EXP[f"e{i}"][1] == 32 else C             # (ND: a row's two groups)
        np.testing.assert_array_equal(ours[f"e{i}"][:, :cols], e[:, :cols], err_msg=f"e{i}")


@pytest.mark.parametrize("call,says", [
    ("TQUANT<1, MxQuantAlg::Hif4>(d, s, &e, &m, &m);", "MxQuantAlg::Hif4 (HiFloat4) is pto-isa's A6 (dav-920r1) only"),
    ("TQUANT<QuantType::MXFP8, VecStoreMode::NZ>(d, s, &e, &m, &m, &e);",
     "writes the ZZ order an MX matmul reads, a scale layout ptopipe does not model"),
    ("Tile<TileType::Vec, hifloat4x2_t, 16, 64> h; TASSIGN(h, 0);", "hifloat4x2_t: HiFloat4")])
def test_what_is_a6s_or_not_modelled_does_not_build(cpp_cache, tmp_path, call, says):
    f = tmp_path / "refused.cpp"
    f.write_text("""#include <pto/pto-inst.hpp>
using namespace pto;
extern "C" __global__ AICORE void refused(__gm__ float *x)
{
    Tile<TileType::Vec, float, 64, 64> s;
    Tile<TileType::Vec, int8_t, 64, 64> d;
    Tile<TileType::Vec, uint8_t, 64, 32> e;
    Tile<TileType::Vec, float, 8, 64> m;
    CALL  // line 9
}
""".replace("CALL", call))
    with pytest.raises(CompileError) as ei:
        run_cpp(str(f), dict(x=np.zeros(4, np.float32)), aiv="refused", platform="a5")
    assert says in str(ei.value), str(ei.value)[-3000:]
    assert "refused.cpp:9" in str(ei.value), str(ei.value)[-3000:]
