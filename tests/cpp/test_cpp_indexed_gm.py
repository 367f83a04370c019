"""MGATHER / MSCATTER in C++ (pto-isa's mode template arguments, ``ptopipe/isa/indexed.py``): a
kernel built against ptopipe's headers gives numpy's numbers on both platforms, and - with
``PTO_ISA_ROOT`` set - the numbers the same file gives built against pto-isa's headers on its
CPU simulator; an index past the table with the Undefined mode and an index tile of another
dtype are errors at the C++ line; A5's SIMT executor of the GM -> L1 element gather does not
build, saying what does."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from ptopipe.cpp import run_cpp
from ptopipe.errors import CompileError, KernelError

from cpp_support import SIM_FILE_IO, cpp_cache, needs_cxx, pto_inst_precompiled  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("pto_inst_precompiled")
KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_kernels", "mgather_mscatter.cpp")
R, C, TR = 8, 16, 32
PTO_ISA = os.environ.get("PTO_ISA_ROOT")


def args() -> dict:
    rng = np.random.default_rng(11)
    return dict(table=rng.integers(-50, 50, (TR, C)).astype(np.float32),
                ridx=np.array([3, 0, 31, 40, -1, 3, 2, 9], np.int32),
                eidx=rng.integers(0, 2 * TR * C, (R, C)).astype(np.int32),
                rows=np.zeros((R, C), np.float32), elems=np.zeros((R, C), np.float32),
                racc=np.ones((TR, C), np.float32), eacc=np.zeros(TR * C, np.float32))


def expected(a: dict) -> dict:
    table, ridx, eidx = a["table"], a["ridx"].astype(np.int64) & 0xFFFFFFFF, a["eidx"]
    rows = table[np.minimum(ridx, TR - 1)]
    elems = table.reshape(-1)[eidx % (TR * C)]
    racc = a["racc"].copy()
    for r, i in enumerate(ridx):
        if i < TR:
            racc[i] += rows[r]
    eacc = a["eacc"].copy()
    eacc[np.minimum(eidx, TR * C - 1).reshape(-1)] = elems.reshape(-1)     # (numpy: the last write stays)
    return dict(rows=rows, elems=elems, racc=racc, eacc=eacc)


@needs_cxx
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_the_kernel_gives_numpys_numbers(cpp_cache, platform):
    a = args()
    r = run_cpp(KERNEL, a, platform=platform)
    for k, v in expected(a).items():
        np.testing.assert_array_equal(r[k], v, err_msg=k)
    assert not r.summary.leaks


MAIN = """
#include "kernel.cpp"
""" + SIM_FILE_IO + """int main(int, char **argv)
{
    const std::string dir = argv[1];
    pto::NPU_MEMORY_INIT(pto::NPUArch::A5);
@BUFFERS@
    {
        pto::cpu_sim::ScopedExecutionContext ctx(0, 0, 1);
        mgather_mscatter(@CALL@);
    }
@SAVES@
    return 0;
}
"""


@needs_cxx
@pytest.mark.skipif(not PTO_ISA, reason="PTO_ISA_ROOT (a pto-isa checkout) is not set")
def test_pto_isas_cpu_simulator_gives_the_same_numbers(cpp_cache, tmp_path):
    """The same file built against pto-isa's headers (its CPU simulator, one Vector thread) and
    against ptopipe's: the same outputs (the file's modes avoid where the two differ -
    docs/cpp.md: the simulator's Row Max / Min, a negative index under Wrap)."""
    from test_pto_isa_cpu_sim import build
    a = args()
    names = list(a)
    bufs, saves = [], []
    for k, v in a.items():
        v.tofile(tmp_path / f"{k}.in")
        bufs.append(f"    static {'int32_t' if v.dtype == np.int32 else 'float'} buf_{k}[{v.size}];\n"
                    f"    io(dir + \"/{k}.in\", buf_{k}, {v.nbytes}, false);")
        saves.append(f"    io(dir + \"/{k}.out\", buf_{k}, {v.nbytes}, true);")
    main = MAIN.replace("@BUFFERS@", "\n".join(bufs)).replace("@SAVES@", "\n".join(saves)).replace(
        "@CALL@", ", ".join(f"buf_{k}" for k in names)).replace('#include "kernel.cpp"\n', "")
    with open(KERNEL) as f:
        r = build(tmp_path, f.read(), main)
    assert r.returncode == 0, r.stderr[-4000:]
    run = subprocess.run([str(tmp_path / "k"), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-3000:]
    ours = run_cpp(KERNEL, args(), platform="a5")
    for k in ("rows", "elems", "racc", "eacc"):
        got = np.fromfile(tmp_path / f"{k}.out", np.float32).reshape(a[k].shape)
        np.testing.assert_array_equal(got, ours[k], err_msg=k)
        np.testing.assert_array_equal(got, expected(a)[k], err_msg=k)


MISUSE = """#include <pto/pto-inst.hpp>
using namespace pto;
extern "C" __global__ AICORE void misuse(__gm__ float *table, __gm__ IDX *idx)
{
    if (get_subblockid() != 0) return;
    using G = GlobalTensor<float, Shape<1, 1, 1, 32, 16>, Stride<1, 1, 1, 16, 1>>;
    using GI = GlobalTensor<IDX, Shape<1, 1, 1, 1, 8>, Stride<1, 1, 1, 8, 1>>;
    Tile<TileType::Vec, float, 8, 16> d;
    Tile<TileType::Vec, IDX, 1, 16, BLayout::RowMajor, 1, 8> ri;
    TASSIGN(ri, 0x0);
    TASSIGN(d, 0x1000);
    G t(table);
    GI gi(idx);
    TLOAD(ri, gi);
    pipe_barrier(PIPE_ALL);
    MGATHER<Coalesce::Row>(d, t, ri);   // line 16
}
"""


@needs_cxx
@pytest.mark.parametrize("idx_t,values,words", [
    ("int32_t", [1, 2, 3, 32, 0, 0, 0, 0], "MGATHER index 32 at index 3 of the index tile (for row 3) is past the "
                                           "table's 32 rows"),
    ("int16_t", [0] * 8, "the indices Vec tile")])
def test_misuse_is_an_error_at_the_cpp_line(cpp_cache, tmp_path, idx_t, values, words):
    f = tmp_path / "misuse.cpp"
    f.write_text(MISUSE.replace("IDX", idx_t))
    idx = np.array(values, np.int32 if idx_t == "int32_t" else np.int16)
    with pytest.raises(KernelError) as ei:
        run_cpp(str(f), dict(table=np.zeros((32, 16), np.float32), idx=idx), platform="a5")
    assert words in ei.value.what, ei.value.what
    assert ei.value.where.endswith("misuse.cpp:16"), ei.value.where


@needs_cxx
def test_the_simt_executor_does_not_build(cpp_cache, tmp_path):
    f = tmp_path / "simt.cpp"
    f.write_text("""#include <pto/pto-inst.hpp>
using namespace pto;
extern "C" __global__ AICORE void simt(__gm__ float *table, __gm__ int32_t *idx, __gm__ float *scratch)
{
    using G = GlobalTensor<float, Shape<1, 1, 1, 1, 512>, Stride<1, 1, 1, 512, 1>>;
    using GI = GlobalTensor<int32_t, Shape<1, 1, 1, 16, 16>, Stride<1, 1, 1, 16, 1>>;
    Tile<TileType::Mat, float, 16, 16, BLayout::ColMajor, 16, 16, SLayout::RowMajor, 512> m;
    TASSIGN(m, 0x0);
    G t(table), s(scratch);
    GI gi(idx);
    MGATHER<Coalesce::Elem, GatherOOB::Zero, GatherExec::Simt>(m, t, gi, s);
}
""")
    with pytest.raises(CompileError) as ei:
        run_cpp(str(f), dict(table=np.zeros(512, np.float32), idx=np.zeros(256, np.int32),
                             scratch=np.zeros(256, np.float32)), aic="simt", platform="a5")
    assert "GatherExec::Simt gathers on the Vector core" in str(ei.value), str(ei.value)[-2000:]
    assert "simt.cpp:11" in str(ei.value)


FORMS = """
using V = Tile<TileType::Vec, float, 8, 16>;
using M = Tile<TileType::Mat, float, 16, 16, BLayout::ColMajor, 16, 16, SLayout::RowMajor, 512>;
using G = GlobalTensor<float, Shape<1, 1, 1, 32, 16>, Stride<1, 1, 1, 16, 1>>;
using GI = GlobalTensor<int32_t, Shape<1, 1, 1, 16, 16>, Stride<1, 1, 1, 16, 1>>;
using RI = Tile<TileType::Vec, int32_t, 1, 8>;
void forms(V &v, M &m, G &g, GI &gi, RI &ri, Event<Op::TLOAD, Op::MGATHER_VEC> &e)
{
    MGATHER(v, g, ri);
    MGATHER(v, g, ri, e);
    MGATHER<Coalesce::Row>(v, g, ri);
    MGATHER<Coalesce::Elem, GatherOOB::Wrap>(v, g, ri, e);
    MGATHER<V, G, RI>(v, g, ri);
    MGATHER<Coalesce::Row, GatherOOB::Clamp>(m, g, gi);
    MGATHER<Coalesce::Elem>(m, g, gi, g);
    MGATHER<Coalesce::Elem, GatherOOB::Zero>(m, g, gi, g);
    MGATHER<Coalesce::Elem, GatherOOB::Zero, GatherExec::Scalar>(m, g, gi, g);
    MSCATTER(g, v, ri);
    MSCATTER<Coalesce::Row>(g, v, ri, e);
    MSCATTER<Coalesce::Row, ScatterAtomicOp::Add>(g, v, ri);
    MSCATTER<Coalesce::Elem, ScatterAtomicOp::None, ScatterOOB::Skip>(g, v, ri);
    MSCATTER<Coalesce::Elem, ScatterAtomicOp::Max, ScatterOOB::Wrap, ScatterConflict::Default>(g, v, ri, e);
}
"""


@needs_cxx
def test_every_pto_isa_spelling_builds(tmp_path):
    """pto_instr.hpp's forms - no mode (and the operands' types as explicit template arguments),
    the modes in order, the GM -> L1 forms with the scratch, wait events after the operands -
    pick one declaration each (a syntax-only compile against ptopipe's headers, each platform)."""
    from test_cpp_pto_isa_api import compile_only
    for platform in ("a2a3", "a5"):
        r = compile_only(tmp_path, FORMS, platform)
        assert r.returncode == 0, r.stderr[-3000:]
