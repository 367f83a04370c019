"""TPREFETCH_ASYNC in C++ (``ptopipe/isa/prefetch_async.py``): pto-isa's PrefetchAsyncContext and
comm::AsyncEvent.  Gated on ``PTO_ISA_ROOT``: the kernel moves its data unchanged on both
platforms and on pto-isa's CPU simulator, and its event is valid here (the device submits the
prefetch) where the CPU simulator's is empty; a prefetch with no workspace is empty, with a
warning at the C++ line."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from ptopipe.cpp import run_cpp

from cpp_support import cpp_cache, needs_cxx, pto_inst_precompiled  # noqa: F401 (fixtures)

PTO_ISA = os.environ.get("PTO_ISA_ROOT")
pytestmark = [pytest.mark.usefixtures("pto_inst_precompiled"), needs_cxx,
              pytest.mark.skipif(not PTO_ISA, reason="PTO_ISA_ROOT (a pto-isa checkout) is not set")]
KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_kernels", "prefetch_async.cpp")
N = 256

MAIN = """
#include <cstdio>
#include <string>
int main(int, char **argv)
{
    const std::string dir = argv[1];
    pto::NPU_MEMORY_INIT(pto::NPUArch::A5);
    static float src[N], dst[N], again[N];
    static uint8_t ws[64];
    for (int i = 0; i < N; ++i) src[i] = float(i);
    {
        pto::cpu_sim::ScopedExecutionContext ctx(0, 0, 1);
        prefetch(src, dst, again, ws);
    }
    FILE *f = std::fopen((dir + "/out.bin").c_str(), "wb");
    std::fwrite(dst, sizeof dst, 1, f);
    std::fwrite(again, sizeof again, 1, f);
    std::fclose(f);
    return 0;
}
"""


def test_the_data_moves_unchanged_and_the_event_is_the_devices(cpp_cache, tmp_path):
    from test_pto_isa_cpu_sim import build
    x = np.arange(N, dtype=np.float32)
    for platform in ("a2a3", "a5"):
        r = run_cpp(KERNEL, dict(src=x, dst=np.zeros(N, np.float32), again=np.zeros(N, np.float32),
                                 ws=np.zeros(64, np.uint8)), platform=platform, aiv="prefetch")
        np.testing.assert_array_equal(r["dst"], x)
        np.testing.assert_array_equal(r["again"], x)         # submitted: valid()
        assert not r.summary.leaks, r.summary.leaks
    with open(KERNEL) as f:
        built = build(tmp_path, f.read(), MAIN)
    assert built.returncode == 0, built.stderr[-4000:]
    ran = subprocess.run([str(tmp_path / "k"), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr[-3000:]
    out = np.fromfile(tmp_path / "out.bin", np.float32)
    np.testing.assert_array_equal(out[:N], x)
    np.testing.assert_array_equal(out[N:], 0)                # the CPU simulator's event is empty


def test_no_workspace_submits_nothing_with_a_warning_at_the_line(cpp_cache, tmp_path):
    f = tmp_path / "nows.cpp"
    f.write_text("""#include <pto/pto-inst.hpp>
using namespace pto;
extern "C" __global__ AICORE void nows(__gm__ float *src)
{
    GlobalTensor<float, Shape<1, 1, 1, 1, 64>, Stride<64, 64, 64, 64, 1>> s(src);
    PrefetchAsyncContext ctx;
    if (TPREFETCH_ASYNC(s, ctx).valid()) {  // line 7
        TPREFETCH_ASYNC(s, ctx);
    }
}
""")
    r = run_cpp(str(f), dict(src=np.zeros(64, np.float32)), aiv="nows", platform="a2a3")
    said = [(w, where) for w, where in r.summary.leaks if "TPREFETCH_ASYNC" in w]
    assert len(said) == 1 and "the context has no SDMA workspace" in said[0][0], r.summary.leaks
    assert str(said[0][1]).endswith("nows.cpp:7"), said
