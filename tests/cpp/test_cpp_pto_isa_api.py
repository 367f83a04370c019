"""ptopipe's C++ headers spell pto-isa's kernel API as pto-isa's headers declare it
(include/pto/common/pto_tile.hpp, fifo.hpp, pto_instr.hpp): what a kernel written for pto-isa
means there it means here, and what pto-isa refuses to build is refused here.  Most checks
are syntax-only compiles (each a fraction of a second); what needs the simulator runs one small
kernel."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from ptopipe.cpp import include_dir, run_cpp

from cpp_support import cpp_cache, needs_cxx  # noqa: F401 (fixture)

KDIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_kernels")


def kernel(name: str) -> str:
    return os.path.join(KDIR, name)

PRELUDE = "#include <pto/pto-inst.hpp>\nusing namespace pto;\n"


def compile_only(tmp_path, body: str, platform: str = "a2a3") -> subprocess.CompletedProcess:
    """A syntax-only compile of ``body`` after the headers, with the build's compiler ($CXX)."""
    from ptopipe.cpp.build import STD, arch_macro, find_compiler
    p = tmp_path / "api.cpp"
    p.write_text(PRELUDE + body)
    return subprocess.run([find_compiler()[0], STD, "-fsyntax-only", f"-D{arch_macro(platform)}",
                           "-I", include_dir(), str(p)], capture_output=True, text=True)


DIMS = """
// the DYNAMIC dims, in order
constexpr Shape<-1, 1, 1, 8, -1> s2(2, 32);
static_assert(s2.shape[0] == 2 && s2.shape[1] == 1 && s2.shape[3] == 8 && s2.shape[4] == 32);
constexpr Stride<-1, 1, 1, -1, 1> t2(256, 32);
static_assert(t2.stride[0] == 256 && t2.stride[3] == 32 && t2.stride[4] == 1);
constexpr Stride<1, 1, 1, -1, 1> t1(48);
static_assert(t1.stride[3] == 48 && t1.stride[4] == 1);
constexpr Shape<1, -1, -1, -1, 16> s3(2, 3, 4);
static_assert(s3.shape[1] == 2 && s3.shape[2] == 3 && s3.shape[3] == 4 && s3.shape[4] == 16);
constexpr Shape<-1, -1, 1, -1, -1> s4(5, 6, 7, 8);
static_assert(s4.shape[0] == 5 && s4.shape[1] == 6 && s4.shape[3] == 7 && s4.shape[4] == 8);
// five values: one per dim, those of static dims not read
constexpr Shape<1, 1, 1, 16, -1> s5(9, 9, 9, 9, 24);
static_assert(s5.shape[0] == 1 && s5.shape[3] == 16 && s5.shape[4] == 24);
// no value: a DYNAMIC dim is 1
constexpr Stride<1, 1, 1, -1, -1> t0;
static_assert(t0.stride[3] == 1 && t0.stride[4] == 1);
"""


@needs_cxx
def test_shape_and_stride_constructors_set_the_dynamic_dims_in_order(tmp_path):
    r = compile_only(tmp_path, DIMS)
    assert r.returncode == 0, r.stderr


@needs_cxx
@pytest.mark.parametrize("decl,form", [("Stride<1, 1, 1, -1, -1> t(32);", "Stride(n1)"),
                                       ("Stride<1, 1, 1, -1, 1> t(32, 1);", "Stride(n1, n2)"),
                                       ("Shape<1, 1, -1, -1, -1> s(2, 3, 4, 5);", "Shape(n1, n2, n3, n4)")])
def test_a_constructor_with_another_count_than_the_dynamic_dims_does_not_build(tmp_path, decl, form):
    """pto-isa static_asserts that a 1- to 4-argument constructor gets one value per DYNAMIC dim."""
    r = compile_only(tmp_path, decl + "\n")
    assert r.returncode != 0
    assert f"{form}: pto-isa's" in r.stderr and "DYNAMIC (-1)" in r.stderr, r.stderr


@needs_cxx
def test_an_nz_global_tensor_loads_as_its_fractals(cpp_cache):
    """The GlobalTensor's Layout crosses the ABI: an NZ tensor is read as pto-isa's TLOAD
    reads it (rows d2*d3, columns d0*d1*d4), not refused as a 16x8 ND matrix."""
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    xnz = x.reshape(16, 2, 8).transpose(1, 0, 2).copy()     # 2 column blocks of 16 x 8
    r = run_cpp(kernel("nz_gm_load.cpp"), dict(xnz=xnz, eye=np.eye(16, dtype=np.float32),
                                               out=np.zeros((16, 16), np.float32)))
    np.testing.assert_array_equal(r["out"], x)
