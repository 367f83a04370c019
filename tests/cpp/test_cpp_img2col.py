"""TIMG2COL in C++ (``ptopipe/isa/img2col.py``): pto-isa's ConvTile, TLOAD of its NC1HWC0
GlobalTensor, SETFMATRIX / SET_IMG2COL_PADDING / SET_IMG2COL_RPT and TIMG2COL with their
SetFmatrixMode template arguments.  Gated on ``PTO_ISA_ROOT``: the convolution kernel gives
numpy's numbers on both platforms and the numbers the same file gives built against pto-isa's
headers on its CPU simulator; a register no SET_* wrote and an NC1HWC0 tensor moved into a plain
tile are errors at the C++ line; a ConvTile layout ptopipe does not model does not build."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from ptopipe.cpp import run_cpp
from ptopipe.errors import CompileError, KernelError

from cpp_support import SIM_FILE_IO, cpp_cache, needs_cxx, pto_inst_precompiled  # noqa: F401 (fixtures)

PTO_ISA = os.environ.get("PTO_ISA_ROOT")
pytestmark = [pytest.mark.usefixtures("pto_inst_precompiled"), needs_cxx,
              pytest.mark.skipif(not PTO_ISA, reason="PTO_ISA_ROOT (a pto-isa checkout) is not set")]
KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_kernels", "img2col_conv.cpp")
C1, H, W, C0, CO = 2, 8, 8, 16, 16
M, K = H * W, C1 * 9 * C0
OUTS = ("out_a", "out_b", "out_auto")


def args() -> dict:
    rng = np.random.default_rng(3)
    return dict(x=rng.integers(-3, 4, (1, C1, H, W, C0)).astype(np.float16),
                w=rng.integers(-2, 3, (K, CO)).astype(np.float16),
                **{k: np.zeros((M, CO), np.float32) for k in OUTS})


def expected(a: dict) -> dict:
    """The 3x3 convolution (pads 1) as im2col @ w: pad value 0 for the SET_* banks, -1 for AUTO."""
    def conv(pad):
        xp = np.full((C1, H + 2, W + 2, C0), pad, np.float32)
        xp[:, 1:-1, 1:-1] = a["x"][0]
        cols = np.stack([xp[:, m // W:m // W + 3, m % W:m % W + 3, :].reshape(-1) for m in range(M)])
        return cols @ a["w"].astype(np.float32)
    return dict(out_a=conv(0), out_b=conv(0), out_auto=conv(-1))


MAIN = SIM_FILE_IO + """int main(int, char **argv)
{
    const std::string dir = argv[1];
    pto::NPU_MEMORY_INIT(pto::NPUArch::A5);
    static half x[N * C1 * H * W * C0], w[K * CO];
    static float a[M * CO], b[M * CO], c[M * CO];
    io(dir + "/x.in", x, sizeof x, false);
    io(dir + "/w.in", w, sizeof w, false);
    {
        pto::cpu_sim::ScopedExecutionContext ctx(0, 0, 1);
        conv(x, w, a, b, c);
    }
    io(dir + "/out_a.out", a, sizeof a, true);
    io(dir + "/out_b.out", b, sizeof b, true);
    io(dir + "/out_auto.out", c, sizeof c, true);
    return 0;
}
"""


def test_the_convolution_gives_numpys_and_pto_isas_cpu_simulators_numbers(cpp_cache, tmp_path):
    """The A bank written by the SET_* instructions, the B bank with the rows and K in two blocks,
    the AUTO mode: numpy's numbers on both platforms, and the CPU simulator's (A5's TileLeft, as
    its build has) for the same file."""
    from test_pto_isa_cpu_sim import build
    a = args()
    want = expected(a)
    for platform in ("a2a3", "a5"):
        r = run_cpp(KERNEL, a, platform=platform, aic="conv")
        for k in OUTS:
            np.testing.assert_array_equal(r[k], want[k], err_msg=f"{platform} {k}")
        assert not r.summary.leaks
    a["x"].tofile(tmp_path / "x.in")
    a["w"].tofile(tmp_path / "w.in")
    with open(KERNEL) as f:
        built = build(tmp_path, f.read(), MAIN)
    assert built.returncode == 0, built.stderr[-4000:]
    ran = subprocess.run([str(tmp_path / "k"), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr[-3000:]
    for k in OUTS:
        np.testing.assert_array_equal(np.fromfile(tmp_path / f"{k}.out", np.float32).reshape(M, CO), want[k],
                                      err_msg=k)


MISUSE = """#include <pto/pto-inst.hpp>
using namespace pto;
using XT = ConvTile<TileType::Mat, half, 2 * 4 * 8 * 16, Layout::NC1HWC0, ConvTileShape<1, 2, 4, 8, 16>>;
using GX = GlobalTensor<half, Shape<1, 2, 4, 8, 16>, Stride<1024, 512, 128, 16, 1>, Layout::NC1HWC0>;
extern "C" __global__ AICORE void misuse(__gm__ half *x)
{
    XT xt;
    TileLeft<half, 32, 64> a;
    Tile<TileType::Mat, half, 64, 16> m;
    TASSIGN(xt, 0x0);
    TASSIGN(a, 0x0);
    TASSIGN(m, 0x8000);
    GX gx(x);
    TLOAD(xt, gx);
    xt.SetFmapH(4);
    xt.SetFmapW(8);
    xt.SetChannelSize(32);
    BODY
}
"""


@pytest.mark.parametrize("body,says", [
    ("SET_IMG2COL_PADDING(xt);\n    TIMG2COL(a, xt);  // line 18",
     "TIMG2COL<FMATRIX_A_MANUAL> reads the FMATRIX register (bank A), which no SETFMATRIX"),
    ("TLOAD(m, gx);  // line 18", "a Layout::NC1HWC0 GlobalTensor here: ptopipe moves an NC1HWC0 tensor only into a "
                                  "ConvTile")])
def test_misuse_is_an_error_at_the_cpp_line(cpp_cache, tmp_path, body, says):
    f = tmp_path / "misuse.cpp"
    f.write_text(MISUSE.replace("BODY", body))
    with pytest.raises(KernelError) as ei:
        run_cpp(str(f), dict(x=np.zeros((1, 2, 4, 8, 16), np.float16)), aic="misuse", platform="a5")
    assert says in ei.value.what, ei.value.what
    line = 18 + body.count("\n")
    assert ei.value.where.endswith(f"misuse.cpp:{line}"), ei.value.where


def test_a_convtile_layout_ptopipe_does_not_model_does_not_build(cpp_cache, tmp_path):
    f = tmp_path / "fz.cpp"
    f.write_text("""#include <pto/pto-inst.hpp>
using namespace pto;
extern "C" __global__ AICORE void fz(__gm__ half *w)
{
    ConvTile<TileType::Mat, half, 9 * 16 * 16, Layout::FRACTAL_Z, ConvTileShape<1, 3, 3, 16, 16>> wt;
    TASSIGN(wt, 0x0);
}
""")
    with pytest.raises(CompileError) as ei:
        run_cpp(str(f), dict(w=np.zeros(16, np.float16)), aic="fz", platform="a5")
    assert "ConvTile: ptopipe models the NC1HWC0 feature map only" in str(ei.value), str(ei.value)[-2000:]
    assert "fz.cpp:5" in str(ei.value)
