"""The lanes of an A5 TILE_NO_SPLIT pipe, one rule for every front end
(``ptopipe.protocol.model.nosplit_one_lane``): AIV0 alone pushes, pops and frees each whole
tile, under spec and pto-isa alike.  A ``.pto`` file and ptoas's C++ of it
(``TPipe<..., IsNoSplit = true>``, the Vector body under ``if (get_subblockid() == 0)``) give
the same pipe (one lane, one pop per tile), the same results and numpy's.  ``PTOAS=/path/to/ptoas``
also assembles the file with the real ptoas and runs its output."""
from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

from ptopipe.codegen.pto_exec import run_pto
from ptopipe.cpp import run_cpp

from cpp_support import cpp_cache, needs_cxx  # noqa: F401 (fixture)

KDIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_kernels")
PTO = os.path.join(KDIR, "nosplit_c2v_a5.pto")
#: ptoas's C++ of PTO (``ptoas --pto-arch=a5 --enable-insert-sync``)
CPP = os.path.join(KDIR, "ptoas_nosplit_c2v_a5.cpp")
PTOAS = os.environ.get("PTOAS")


def inputs():
    r = np.random.default_rng(5)
    a = r.standard_normal((48, 16)).astype(np.float32)
    b = r.standard_normal((16, 16)).astype(np.float32)
    bias = r.standard_normal((48, 16)).astype(np.float32)
    return a, b, bias


def run_both(cpp_path, protocol):
    """The .pto and ``cpp_path`` on A5 under ``protocol``: (outputs, pipes, AIV1's instructions)
    of each."""
    a, b, bias = inputs()
    p = run_pto(PTO, inputs=dict(a=a, b=b, bias=bias, out=np.zeros_like(bias)), protocol=protocol)
    c = run_cpp(cpp_path, dict(v1=a, v2=b, v3=bias, v4=np.zeros_like(bias)), platform="a5", protocol=protocol)
    return ((p.outputs["out"], p.result.summary.pipes, p.result.summary.cores["AIV1"]),
            (c["v4"], c.summary.pipes, c.summary.cores["AIV1"]))


@needs_cxx
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a_nosplit_pto_and_its_ptoas_cpp_give_one_lane_and_the_same_results(cpp_cache, protocol):
    """Three tiles through a no-split C2V pipe: one lane (AIV0) in both runs, each tile pushed,
    popped and freed once, AIV1 making no pipe op; out = a @ b + bias in both."""
    (pout, ppipes, paiv1), (cout, cpipes, caiv1) = run_both(CPP, protocol)
    assert ppipes == cpipes
    assert [(p["lanes"], p["pushes"], p["pops"], p["frees"]) for p in cpipes] == [(1, 3, 3, 3)]
    assert "peers AIV0)" in cpipes[0]["name"]
    for aiv1 in (paiv1, caiv1):
        assert aiv1["stall"]["ready"] == aiv1["stall"]["free"] == 0
    a, b, bias = inputs()
    np.testing.assert_array_equal(pout, cout)
    np.testing.assert_allclose(cout, a @ b + bias, rtol=1e-5, atol=1e-5)


@needs_cxx
@pytest.mark.skipif(not (PTOAS and shutil.which(PTOAS)), reason="set PTOAS to the ptoas binary")
def test_the_real_ptoas_output_runs_as_the_pto_file_under_spec(cpp_cache, tmp_path):
    """The real assembler guards the Vector body with ``get_subblockid() == 0`` and declares the
    TPipe IsNoSplit; its C++ runs under spec as the .pto does."""
    out = tmp_path / "k.cpp"
    r = subprocess.run([PTOAS, "--pto-arch=a5", "--enable-insert-sync", PTO, "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    text = out.read_text()
    assert "if (get_subblockid() == 0) {" in text and "1024, 8, 2, true>" in text
    (pout, ppipes, _), (cout, cpipes, _) = run_both(str(out), "spec")
    assert ppipes == cpipes and cpipes[0]["lanes"] == 1
    np.testing.assert_array_equal(pout, cout)


TWO_VECTOR = os.path.join(KDIR, "two_vector_{}_nosplit_a5.pto")


def _ptoas_cpp(pto, tmp_path):
    out = tmp_path / "k.cpp"
    r = subprocess.run([PTOAS, "--pto-arch=a5", "--enable-insert-sync", str(pto), "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return out


@needs_cxx
@pytest.mark.skipif(not (PTOAS and shutil.which(PTOAS)), reason="set PTOAS to the ptoas binary")
@pytest.mark.parametrize("scopes", ["functions", "sections"])
def test_the_aiv0_guard_of_each_vector_function_is_ptoas_s(cpp_cache, tmp_path, scopes):
    """Two Vector functions (or pto.section.vector regions): ptoas guards the one that pops whole
    tiles and reads no sub-block, not the one that reads get_subblock_idx; the .pto run and
    ptoas's C++ give the same pipe, the same outputs, and AIV1 no pipe op in either."""
    pto = TWO_VECTOR.format(scopes)
    out = _ptoas_cpp(pto, tmp_path)
    text = out.read_text()
    pop, rows = text.index("void two_pop("), text.index("void two_rows(")
    assert "if (get_subblockid() == 0) {" in text[pop:rows] and "if (get_subblockid() == 0)" not in text[rows:]
    rng = np.random.default_rng(3)
    ins = {k: rng.standard_normal((16, 16)).astype(np.float32) for k in ("a", "b", "x", "out", "y")}
    p = run_pto(pto, inputs={k: v.copy() for k, v in ins.items()})
    c = run_cpp(str(out), {f"v{i + 1}": v.copy() for i, v in enumerate(ins.values())}, platform="a5")
    assert p.result.summary.pipes == c.summary.pipes and [q["lanes"] for q in c.summary.pipes] == [1]
    for i, k in enumerate(ins):
        np.testing.assert_array_equal(p.outputs[k], c[f"v{i + 1}"].reshape(16, 16))
    np.testing.assert_array_equal(p.outputs["y"], ins["x"] + 1)
    for s in (p.result.summary, c.summary):
        assert s.cores["AIV1"]["stall"]["ready"] == s.cores["AIV1"]["stall"]["free"] == 0
