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


TMPIPE = """
using Acc = TileAcc<float, 16, 16>;
using Half = Tile<TileType::Vec, float, 8, 16>;
using Pipe = TMPipe<0, FIFOType::GM_FIFO, 2, 1, Acc, Half, false, 0>;
"""

TMPIPE_API = TMPIPE + """
// pto-isa's VecCubeRatio (fifo.hpp)
static_assert(int(VecCubeRatio::V1C1_VEC0) == 0 && int(VecCubeRatio::V1C1_VEC1) == 1 &&
              int(VecCubeRatio::V2C1_VECS) == 2);
// the Vector lanes' split follows from the tiles, as A5's TMPipe takes it (isSplitM / isSplitN)
static_assert(Pipe::Split == TileSplitAxis::TILE_UP_DOWN);
static_assert(TMPipe<0, FIFOType::GM_FIFO, 2, 1, Acc, Tile<TileType::Vec, float, 16, 8>>::Split ==
              TileSplitAxis::TILE_LEFT_RIGHT);
static_assert(TMPipe<0, FIFOType::GM_FIFO, 2, 1, Acc, Tile<TileType::Vec, float, 16, 16>, false, 2,
                     VecCubeRatio::V1C1_VEC0>::Split == TileSplitAxis::TILE_NO_SPLIT);
void k(float *fifo, Acc &acc, Half &v, Event<Op::TADD, Op::TSTORE_VEC> &e) {
    Pipe pipe(fifo);                        // LocalFiFoDepth 0: the one-argument constructor
    pipe.prod.setAllocateStatus(pipe.prod.getAllocateStatus());
    pipe.prod.setRecordStatus(true);
    pipe.cons.setWaitStatus(true);
    pipe.cons.setFreeStatus(pipe.cons.getFreeStatus());
    TPUSH(acc, pipe);                       // the tile first, as pto-isa drives a TMPipe
    TPUSH(acc, pipe, e);
    TPOP(v, pipe);
    TPOP(v, pipe, e);
}
"""


@needs_cxx
def test_a_tmpipe_is_driven_as_pto_isa_drives_it(tmp_path):
    r = compile_only(tmp_path, TMPIPE_API)
    assert r.returncode == 0, r.stderr


@needs_cxx
@pytest.mark.parametrize("call,message", [
    ("TPUSH<Pipe, Acc, TileSplitAxis::TILE_NO_SPLIT>(pipe, acc);",
     "TPUSH(pipe, tile) on a TMPipe: pto-isa spells it TPUSH(tile, pipe)"),
    ("TPOP<Pipe, Half, TileSplitAxis::TILE_NO_SPLIT>(pipe, v);",
     "TPOP(pipe, tile) on a TMPipe: pto-isa spells it TPOP(tile, pipe)"),
    ("pipe.prod.setEntryOffset(64);", "pipe.setEntryOffset: ptopipe does not model"),
    ("pipe.cons.free();", "pipe.free: ptopipe does not model")])
def test_what_pto_isa_cannot_build_or_ptopipe_does_not_model_does_not_compile(tmp_path, call, message):
    r = compile_only(tmp_path, TMPIPE + f"void k(float *fifo, Acc &acc, Half &v) {{\n    Pipe pipe(fifo);\n    {call}\n}}\n")
    assert r.returncode != 0 and message in r.stderr, r.stderr


@needs_cxx
def test_a_two_lane_tmpipe_splits_its_slot_and_its_pops_free_it(cpp_cache):
    """Each Vector lane pops its half of the Acc tile; the pops free their GM slot themselves
    (no TFREE); the consumers' setFreeStatus(false) reaches the simulator: the Cube's TMPipe
    then waits forever at teardown."""
    from ptopipe import isa
    from ptopipe.errors import DeadlockError
    x = np.arange(256, dtype=np.float32).reshape(16, 16) % 13

    def args(free_status):
        return dict(x=x, eye=np.eye(16, dtype=np.float32), out=np.zeros_like(x),
                    fifo=isa.gm_buffer(2 * 1024).view(np.float32), free_status=free_status)
    r = run_cpp(kernel("tmpipe_two_lanes.cpp"), args(1), platform="a2a3", protocol="pto-isa")
    np.testing.assert_array_equal(r["out"], x + 1)
    assert not r.summary.leaks
    with pytest.raises(DeadlockError) as ei:
        run_cpp(kernel("tmpipe_two_lanes.cpp"), args(0), platform="a2a3", protocol="spec")
    assert ei.value.where == f"{os.path.relpath(kernel('tmpipe_two_lanes.cpp'))}:{_line('tmpipe_two_lanes.cpp', 'Pipe pipe(')}"


def _line(name: str, text: str) -> int:
    with open(kernel(name)) as f:
        return next(i for i, ln in enumerate(f, 1) if text in ln)
