"""ptopipe's C++ headers spell pto-isa's kernel API as pto-isa's headers declare it
(include/pto/common/pto_tile.hpp, fifo.hpp, pto_instr.hpp): what a kernel written for pto-isa
means there it means here, and what pto-isa refuses to build is refused here.  Most checks
are syntax-only compiles (each a fraction of a second); what needs the simulator runs one small
kernel."""
from __future__ import annotations

import os
import re
import subprocess

import numpy as np
import pytest

from ptopipe.cpp import include_dir, run_cpp

from cpp_support import LEAN, cpp_cache, needs_cxx, pto_inst_precompiled  # noqa: F401 (fixtures)

# the kernels run_cpp builds here include <pto/pto-inst.hpp> first (the syntax-only compiles of
# pto-isa's header paths do not read CXXFLAGS)
pytestmark = pytest.mark.usefixtures("pto_inst_precompiled")

KDIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_kernels")


def kernel(name: str) -> str:
    return os.path.join(KDIR, name)


PRELUDE = "#include <pto/pto-inst.hpp>\nusing namespace pto;\n"


def compile_only(tmp_path, body: str, platform: str = "a2a3", lean: bool = True) -> subprocess.CompletedProcess:
    """A syntax-only compile of ``body`` after the headers, with the build's compiler ($CXX) and
    standard; ``lean``: without <algorithm> (the bodies include what they use)."""
    from ptopipe.cpp.build import arch_macro, find_compiler, standard
    p = tmp_path / "api.cpp"
    p.write_text(PRELUDE + body)
    cxx = find_compiler()[0]
    return subprocess.run([cxx, standard(cxx), "-fsyntax-only", f"-D{arch_macro(platform)}", *([LEAN] if lean else []),
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
def test_an_nz_global_tensor_loads_as_its_fractals(cpp_cache):
    """The GlobalTensor's Layout crosses the ABI: an NZ tensor is read as pto-isa's TLOAD
    reads it (rows d2*d3, columns d0*d1*d4), not refused as a 16x8 ND matrix."""
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    xnz = x.reshape(16, 2, 8).transpose(1, 0, 2).copy()     # 2 column blocks of 16 x 8
    r = run_cpp(kernel("nz_gm_load.cpp"), dict(xnz=xnz, eye=np.eye(16, dtype=np.float32),
                                               out=np.zeros((16, 16), np.float32)))
    np.testing.assert_array_equal(r["out"], x)
    # its Vector kernel is written empty (the file tests no side macro): a warning says so
    assert any("AIV (Vector) kernel vec_kernel issued no PTO instruction" in what and where.endswith("nz_gm_load.cpp:32")
               for what, where in r.summary.leaks)


TF32_MATMUL = PRELUDE + """
extern "C" __global__ AICORE void cube_tf32(__gm__ float *out, __gm__ float *a, __gm__ float *b)
{
    using G = GlobalTensor<float, Shape<1, 1, 1, 16, 16>, Stride<1, 1, 1, 16, 1>>;
    Tile<TileType::Mat, float, 16, 16, BLayout::ColMajor, 16, 16, SLayout::RowMajor> a1, b1;
    TileLeft<float, 16, 16> a0;
    TileRight<float, 16, 16> b0;
    TileAcc<float, 16, 16> c;
    TASSIGN(a1, 0x0); TASSIGN(b1, 0x800); TASSIGN(a0, 0x0); TASSIGN(b0, 0x0); TASSIGN(c, 0x0);
    G ga(a), gb(b), go(out);
    TLOAD(a1, ga);
    TLOAD(b1, gb);
    TMOV(a0, a1);
    TMOV(b0, b1);
    a0.SetMadTF32Mode(RoundMode::CAST_RINT);
    TMATMUL(c, a0, b0);
    a0.ResetMadMode();
    TSTORE(go, c);
}
"""


@needs_cxx
def test_a_cube_tiles_tf32_mode_reaches_the_simulator(cpp_cache, tmp_path):
    """pto-isa's ``Tile::SetMadTF32Mode`` / ``ResetMadMode`` (its tmatmul TF32 tests) build, and
    the matmul between them reads TF32 operands (A2A3: 11 mantissa bits, ties to even)."""
    p = tmp_path / "tf32.cpp"
    p.write_text(TF32_MATMUL)
    a = np.zeros((16, 16), np.float32)
    a[:2, 0] = [1 + 2 ** -12, 1 + 3 * 2 ** -12]
    b = np.zeros((16, 16), np.float32)
    b[0, 0] = 1
    r = run_cpp(str(p), dict(out=np.zeros((16, 16), np.float32), a=a, b=b), aic="cube_tf32")
    np.testing.assert_array_equal(r["out"][:2, 0], np.float32([1, 1 + 2 ** -10]))


EVENT_INIT = PRELUDE + """
// pto-isa's Op names of a pipe and of ops outside the vector catalogue (event.hpp)
static_assert(Op::SCALAR != Op::VECTOR && Op::TMOV_M2R != Op::TGEMV && Op::TSTORE_MAT != Op::TMOV_A2V);
extern "C" __global__ AICORE void vec_scaled(__gm__ float *out, __gm__ float *x)
{
    using G = GlobalTensor<float, Shape<1, 1, 1, 1, 8>, Stride<1, 1, 1, 8, 1>>;
    Tile<TileType::Vec, float, 1, 8> t, d;
    TASSIGN(t, 0x0);
    TASSIGN(d, 0x100);
    G gx(x), go(out);
    Event<Op::TLOAD, Op::SCALAR> loaded;
    loaded = TLOAD(t, gx);
    loaded.Wait();
    t.SetValue(0, 7.0f);                    // scalar work the vector op reads
    Event<Op::SCALAR, Op::TADD> scalar;
    scalar.Init();
    Event<Op::TADD, Op::TSTORE_VEC> added;
    added = TADD(d, t, t, scalar);
    TSTORE(go, d, added);
}
"""


@needs_cxx
def test_an_event_recorded_without_an_instruction_orders_the_scalar_work_before_it(cpp_cache, tmp_path):
    """pto-isa's ``Event<Op::SCALAR, Op::TRANDOM> e; e.Init();`` (its trandom test): Init()
    records the event on SrcOp's pipe with no instruction, and the op waiting on it reads what
    the scalar unit wrote before - in the manual synchronisation such a kernel runs in, clean."""
    p = tmp_path / "event_init.cpp"
    p.write_text(EVENT_INIT)
    x = np.arange(8, dtype=np.float32)
    r = run_cpp(str(p), dict(out=np.zeros(8, np.float32), x=x), aiv="vec_scaled", sync="manual")
    np.testing.assert_array_equal(r["out"], 2 * np.float32([7, *x[1:]]))
    assert r.summary.leaks == [], r.summary.leaks


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
// A5's FIFOs in the consumer's local memory take their base alone (a literal 0 too)
void local_fifos() {
    TMPipe<2, FIFOType::VEC_FIFO, 2, 1, Acc, Half> vec_fifo(0x8000);
    TMPipe<4, FIFOType::MAT_FIFO, 2, 1, Half, Tile<TileType::Mat, float, 16, 16>> mat_fifo(0);
}
"""


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


SPLIT_FORMS = """
using P7 = TPipe<0, Direction::DIR_C2V, 1024, 2, 2, false, true>;     // EN_UNIT_FLAG: the 7th parameter
using V = Tile<TileType::Vec, float, 8, 32>;
using G = GlobalTensor<float, Shape<1, 1, 1, 8, 32>, Stride<1, 1, 1, 32, 1>>;
static_assert(P7::UnitFlag);
template <typename Pipe> void split_forms(Pipe &pipe, V &v, G &g, Event<Op::TADD, Op::TSTORE_VEC> &e, int lane) {
    TPUSH<Pipe, V, TileSplitAxis::TILE_UP_DOWN>(pipe, v, lane);                 // the sub-block id
    TPOP<Pipe, V, TileSplitAxis::TILE_UP_DOWN>(pipe, v, get_subblockid(), e);
    TPOP<Pipe, V, TileSplitAxis::TILE_UP_DOWN>(pipe, v, e);
    TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe, e);
    TFREE<Pipe>(pipe);
    TFREE(pipe);
    TFREE(pipe, e);
    TALLOC<Pipe, G, TileSplitAxis::TILE_UP_DOWN>(pipe, g);
    TFREE<Pipe, G, TileSplitAxis::TILE_UP_DOWN>(pipe, g);
%s}
template void split_forms(P7 &, V &, G &, Event<Op::TADD, Op::TSTORE_VEC> &, int);
"""
DEFAULT_SPLIT = ("    TPUSH<Pipe, V>(pipe, v);                  // TPUSH\n"
                 "    TPOP<Pipe, V>(pipe, v, e);                // TPOP\n"
                 "    TALLOC<Pipe, G>(pipe, g);                 // TALLOC\n"
                 "    TFREE<Pipe, G>(pipe, g);                  // TFREE\n")


@needs_cxx
def test_the_split_pto_isa_requires_defaults_with_a_warning_at_the_call(tmp_path):
    """pto-isa's TPUSH / TPOP / TFREE / TALLOC of a TPipe take the TileSplitAxis as a template
    argument it requires: the forms with it (and with a sub-block id, and a TPipe with
    EN_UNIT_FLAG) build without a warning; a form without it builds, taking TILE_NO_SPLIT, with a
    deprecation warning at the kernel's line that ptopipe's build keeps for the run."""
    from ptopipe.cpp.build import _deprecations
    clean = compile_only(tmp_path, SPLIT_FORMS % "")
    assert clean.returncode == 0 and "warning" not in clean.stderr, clean.stderr
    r = compile_only(tmp_path, SPLIT_FORMS % DEFAULT_SPLIT)
    assert r.returncode == 0, r.stderr
    text = (PRELUDE + SPLIT_FORMS % DEFAULT_SPLIT).splitlines()
    want = [(i, ln.rsplit("// ", 1)[1]) for i, ln in enumerate(text, 1) if ln.startswith("    T") and "//" in ln
            and "TILE_" not in ln]
    found = [(int(w.split(":")[1]), w.split(": ", 1)[1]) for w in _deprecations(r.stderr)]
    assert [(line, msg.split(" is deprecated")[0]) for line, msg in found] == want
    assert all(f"{op} without its TileSplitAxis: pto-isa requires it" in msg and "TILE_NO_SPLIT" in msg
               for (_line, op), (_l, msg) in zip(want, found))


@needs_cxx
def test_a_tpipe_driven_tile_first_builds_as_pto_isas_cpu_simulator_with_a_warning(tmp_path):
    """pto-isa's CPU-simulator tests drive a TPipe tile first, ``TPUSH(tile, pipe)`` /
    ``TPOP(tile, pipe)`` (TILE_NO_SPLIT there); its NPU headers build that form for a TMPipe
    only: it builds here, as the CPU simulator takes it, with a one-line warning at each call
    (not an overload dump)."""
    from ptopipe.cpp.build import _deprecations
    body = ("using P = TPipe<0, Direction::DIR_C2V, 1024, 2>;\n"
            "void tile_first(P &pipe, Tile<TileType::Vec, float, 8, 32> &v) {\n"
            "    TPUSH(v, pipe);\n"
            "    TPOP(v, pipe);\n"
            "}\n")
    r = compile_only(tmp_path, body)
    assert r.returncode == 0, r.stderr
    found = _deprecations(r.stderr)
    assert [(int(w.split(":")[1]), w.split(": ", 1)[1].split(" is deprecated")[0]) for w in found] == \
        [(5, "TPUSH"), (6, "TPOP")], found
    assert all("on a TPipe builds in pto-isa's CPU simulator only, as TILE_NO_SPLIT" in w for w in found)


@needs_cxx
def test_a_tpipe_call_without_template_arguments_is_one_error_spelling_them(tmp_path):
    """``TPOP(pipe, tile)`` (and TPUSH, TALLOC) with no template arguments: pto-isa deduces no
    split, so it does not build - one static assertion per call, at the call, that spells the
    form to write, not the compiler's list of candidate overloads; the forms that name the
    arguments are untouched (test_the_split_pto_isa_requires_defaults_with_a_warning_at_the_call)."""
    body = ("using P = TPipe<0, Direction::DIR_C2V, 1024, 2>;\n"
            "using G = GlobalTensor<float, Shape<1, 1, 1, 8, 32>, Stride<1, 1, 1, 32, 1>>;\n"
            "void no_arguments(P &pipe, Tile<TileType::Vec, float, 8, 32> &v, G &g) {\n"
            "    TPUSH(pipe, v);\n"
            "    TPOP(pipe, v, get_subblockid());\n"
            "    TALLOC(pipe, g);\n"
            "}\n")
    r = compile_only(tmp_path, body)
    assert r.returncode != 0
    errors = [re.search(r"(T[A-Z]+\(pipe, .*)$", ln)[1] for ln in r.stderr.splitlines() if ": error: " in ln]
    spelt = (("TPUSH", "tile", "Tile"), ("TPOP", "tile", "Tile"), ("TALLOC", "tensor", "GlobalTensor"))
    assert errors == [
        f"{op}(pipe, {arg}) without template arguments: pto-isa deduces no split - write {op}<Pipe, {typ}, "
        f"TileSplitAxis::TILE_UP_DOWN>(pipe, {arg}) with the split of the pipe's other end (TILE_NO_SPLIT, "
        "TILE_UP_DOWN or TILE_LEFT_RIGHT)" for op, arg, typ in spelt], r.stderr
    calls = re.findall(r"api\.cpp:(\d+):\d+:.*(?:required from here|requested here)", r.stderr)   # (g++, clang++)
    assert calls == ["6", "7", "8"] and "candidate" not in r.stderr, r.stderr


@needs_cxx
def test_an_explicit_sub_block_id_is_the_lanes_own(cpp_cache):
    """TPUSH / TPOP with pto-isa's sub-block id argument run as without it when it names the
    lane's own part of the slot; naming the other lane's is an error at the call."""
    from ptopipe import isa
    from ptopipe.errors import KernelError
    x = np.arange(256, dtype=np.float32).reshape(16, 16) % 13

    def args(other_lane):
        return dict(x=x, eye=np.eye(16, dtype=np.float32), out=np.zeros_like(x), fifo=isa.gm_buffer(4 * 1024),
                    other_lane=other_lane)
    r = run_cpp(kernel("c2v_pto_isa_forms.cpp"), args(0))
    np.testing.assert_array_equal(r["out"], x + 1)
    with pytest.raises(KernelError) as ei:
        run_cpp(kernel("c2v_pto_isa_forms.cpp"), args(1))
    assert ei.value.where == f"{os.path.relpath(kernel('c2v_pto_isa_forms.cpp'))}:{_line('c2v_pto_isa_forms.cpp', 'TPOP<')}"
    assert "subBlockId 1 on AIV0" in ei.value.what and "get_subblockid()" in ei.value.fix


@needs_cxx
def test_pto_isas_spellings_build_without_a_warning(tmp_path):
    """Shape / Stride constructors (their values checked at compile time), a TMPipe driven tile
    first with its status switches, the split and sub-block forms of a TPipe's instructions, the
    GlobalTensor's member types and constants, cce::printf, the fixpipe's integer scalars."""
    from ptopipe.cpp.build import STD20, find_compiler, standard
    cxx20 = CXX20 if standard(find_compiler()[0]) == STD20 else ""
    r = compile_only(tmp_path, DIMS + TMPIPE_API + SPLIT_FORMS % "" + HOST_NAMES + PIPE_SIDES + TMP_FORMS + FIXPIPE_SCALARS
                     + GLOBAL_MEMBERS
                     + cxx20)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


#: the member types and constants of pto-isa's GlobalTensor (pto_tile.hpp) and its GlobalTensorDim
#: (type.hpp): its kernels give a view's runtime shape as ``typename G::Shape(rows)``; cce::printf,
#: the CPU simulator's kernel log (cpu_stub.hpp), with a 16-bit float argument
GLOBAL_MEMBERS = """
using GD = GlobalTensor<const float, Shape<1, 1, 1, DYNAMIC, 64>, Stride<1, 1, 1, 64, 1>, Layout::ND>;
static_assert(std::is_same_v<GD::Shape, Shape<1, 1, 1, DYNAMIC, 64>> && std::is_same_v<GD::Stride, Stride<1, 1, 1, 64, 1>>);
static_assert(std::is_same_v<GD::RawDType, float> && std::is_same_v<GD::DType, const float>);
static_assert(GlobalTensorDim::DIM_0 == 0 && GlobalTensorDim::DIM_4 == 4 && GlobalTensorDim::TOTAL_DIM == 5);
static_assert(GD::staticShape[GlobalTensorDim::DIM_3] == DYNAMIC && GD::staticShape[GlobalTensorDim::DIM_4] == 64);
static_assert(GD::staticStride[GlobalTensorDim::DIM_3] == 64 && GD::GetShape<GlobalTensorDim::DIM_4>() == 64);
static_assert(GD::GetStride<GlobalTensorDim::DIM_3>() == 64);
template <typename G> int64_t viewRows(const float *p, int rows) {
    G g(p, typename G::Shape(rows));
    cce::printf("rows %d, first %f\\n", rows, half(1.5f));
    return g.GetShape(GlobalTensorDim::DIM_3);
}
template int64_t viewRows<GD>(const float *, int);
"""


#: what pto-isa's kernels include and name besides (common/debug.h, memory.hpp, utils.hpp,
#: cpu_stub.hpp; constants.hpp's CUBE_BLOCK_SIZE; pto_tile.hpp's compact Left / Right / Acc
#: aliases and a Cube tile's K-alignment hint; the host runtime header its NPU tests include)
KERNEL_INCLUDES = """
#include <pto/common/debug.h>
#include <pto/common/memory.hpp>
#include <pto/common/utils.hpp>
#include <pto/common/cpu_stub.hpp>
#include "acl/acl.h"
static_assert(CUBE_BLOCK_SIZE == 512 && FRACTAL_ZZ_ROW == 16 && ACC_C0_SIZE == 16 && REPEAT_BYTE == 256);
using LC = TileLeftCompact<float, 16, 32>;
using RC = TileRightCompact<float, 32, 16>;
using AC = TileAccCompact<float, 16, 16, 15, 9>;
static_assert(LC::Compact == CompactMode::Normal && RC::Compact == CompactMode::Normal && RC::Loc == TileType::Right);
static_assert(AC::Compact == CompactMode::Normal && AC::Loc == TileType::Acc && AC::ValidRow == 15 && !AC::isRowMajor);
inline bool kAligned(LC &a) { a.SetKAligned(true); return a.GetKAligned(); }
inline void checked(int n) { PTO_ASSERT(n > 0, "n is positive"); DEBUG_CHECK(n < 100, "n is small"); }
"""


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_pto_isas_kernel_headers_and_names_build(tmp_path, platform):
    r = compile_only(tmp_path, KERNEL_INCLUDES, platform)
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


#: C++20, as pto-isa's CPU tests are built (its tconcat: a struct as a non-type template parameter):
#: kernels are built so where the compiler has it
CXX20 = """
struct Sizes { int rows, cols; };
template <Sizes S> struct Shaped { static constexpr int numel = S.rows * S.cols; };
static_assert(Shaped<Sizes{2, 3}>::numel == 6);
"""


def test_a_cxx20_error_of_a_cxx17_build_says_how_to_build_cxx20():
    """With a compiler that has no C++20 the build is C++17: an error the compiler blames on the
    standard says how to build the kernel as C++20; any other error keeps the usual fix."""
    from ptopipe.cpp.build import STD, STD20, _compile_error
    for diag in ("k.cpp:3:17: error: a non-type template parameter cannot have type 'Sizes' before C++20",
                 "k.cpp:3:17: error: non-type template parameters of class type only available with "
                 "'-std=c++20' or '-std=gnu++20'"):
        e = _compile_error("k.cpp", diag, "/usr/bin/g++", ["-O1", STD])
        assert "the kernel needs C++20" in e.fix and f"CXXFLAGS={STD20}" in e.fix, e.fix
        assert "the kernel needs C++20" not in _compile_error("k.cpp", diag, "/usr/bin/g++", [STD20, "-O1"]).fix
    other = _compile_error("k.cpp", "k.cpp:3:1: error: unknown type name 'Foo'", "/usr/bin/g++", [STD])
    assert "fix the C++ at the line the compiler names" in other.fix


def test_an_element_type_without_a_form_is_named_by_the_build_error():
    """The static_assert of an element type ptopipe has no form for cannot name the type; the
    build's error does, from the instantiation the compiler reports (g++ and clang spell it
    differently), and says that a kernel the run does not name is compiled too (pto-isa's tcvt
    test file instantiates its int4b_t kernels beside the float ones)."""
    from ptopipe.cpp.build import _compile_error
    says = ("static assertion failed: this element type has no ptopipe form (the type is dtype_code's T in this "
            "error's instantiation): ptopipe's tiles and GlobalTensors take half, float")
    for diag, name in ((f"k.cpp:194:12: error: {says}\n/inc/ptopipe_generated.hpp: In instantiation of "
                        "‘struct ptopipe::dtype_code<pto::int4b_t>’:", "pto::int4b_t"),
                       (f"/inc/ptopipe_generated.hpp:14:5: error: {says}\nk.cpp:65:12: note: in instantiation of "
                        "template class 'ptopipe::dtype_code<float8_e4m3_t>' requested here", "float8_e4m3_t")):
        e = _compile_error("k.cpp", diag, "/usr/bin/g++")
        assert e.what == ("the C++ kernel does not compile (g++): static assertion failed: the element type "
                          f"{name} has no ptopipe form: ptopipe's tiles and GlobalTensors take half, float"), e.what
        assert "the file is compiled whole" in e.fix and "template void Launch<...>" in e.fix, e.fix


#: pto-isa's fifo.hpp / fixpipe.hpp include paths, a pipe's Producer / Consumer types declared on
#: their own (pto-isa's tpushpop_vc: ``typename MatPipe::Consumer cons;``), an int event id
PIPE_SIDES = """
#include <pto/common/fifo.hpp>
#include <pto/common/fixpipe.hpp>
template <typename MatPipe> bool sides(int slice) {
    typename MatPipe::Consumer cons;
    typename MatPipe::Producer prod;
    cons.setWaitStatus(false);
    prod.setAllocateStatus(false);
    wait_flag(PIPE_MTE3, PIPE_MTE2, slice & 1);
    set_flag(PIPE_MTE3, PIPE_MTE2, slice & 1);
    return cons.getWaitStatus() || prod.getAllocateStatus();
}
template bool sides<TPipe<0, Direction::DIR_C2V, 1024, 2>>(int);
// a tile's one dynamic valid dim given alone (pto_tile.hpp's Tile(VR) / Tile(VC))
inline int64_t one_valid_dim(int n) {
    Tile<TileType::Vec, float, 16, 32, BLayout::RowMajor, DYNAMIC, 32> rows(n);
    Tile<TileType::Vec, float, 16, 32, BLayout::RowMajor, 16, DYNAMIC> cols(n);
    return rows.GetValidRow() + cols.GetValidCol();
}
template bool sides<Pipe>(int);
using FixpipeConfig = FixpipeParams<LayoutMode_t::NZ2ND, QuantMode_t::F322F16>;
static_assert(FixpipeConfig::QuantPre == QuantMode_t::F322F16);
"""


#: pto-isa's forms with a trailing tmp tile (the Python forms take it in their ``*rest``), with and
#: without a wait event after it
TMP_FORMS = """
inline void tmpForms() {
    using F = Tile<TileType::Vec, float, 16, 16>;
    using M = Tile<TileType::Vec, uint8_t, 16, 32>;
    using I = Tile<TileType::Vec, int32_t, 16, 16>;
    F d, a, b, tmp; M m; I idx;
    TTRANS(d, a, tmp);
    TSEL(d, m, a, b, tmp);
    TSELS(d, m, a, tmp, -1.0f);
    TGATHER(d, a, idx, tmp);
    Event<Op::TPOWS, Op::TTRANS> e;
    e = TPOWS(d, a, 2.0f, tmp);
    TTRANS(d, a, tmp, e);
}
"""

#: the fixpipe's forms with an integer scalar given as an int (pto-isa converts it to its
#: uint16_t index / uint64_t pre-quant scalar): one overload, not an ambiguous pair
FIXPIPE_SCALARS = """
inline void fixpipeScalars() {
    using Acc = TileAcc<int32_t, 32, 32>;
    using Mat = Tile<TileType::Mat, int8_t, 32, 32, BLayout::ColMajor, 32, 32, SLayout::RowMajor, 512>;
    using FP = Tile<TileType::Scaling, uint64_t, 1, 32>;
    using G = GlobalTensor<int8_t, Shape<1, 1, 1, 32, 32>, Stride<1, 1, 1, 32, 1>>;
    Acc acc; Mat mat; FP fp; G g;
    TEXTRACT_FP(mat, acc, fp, 0, 0);
    TINSERT_FP(mat, acc, fp, 0, 0);
    TMOV(mat, acc, 3);
    TSTORE(g, acc, 3);
}
"""


#: the host-side names pto-isa's test kernels use in their launch functions (its CPU simulator's)
HOST_NAMES = """
template <int N> void launchCase(aclFloat16 *out, aclrtStream stream) { (void)out; (void)stream; }
inline void launchAll(aclFloat16 *out) { launchCase<NUM_64>(out, nullptr); launchCase<NUM_512 + NUM_1>(out, nullptr); }
"""


#: what pto-isa cannot build, or ptopipe does not model: (declaration, the compiler's message)
REFUSED = [
    # a 1- to 4-argument constructor takes one value per DYNAMIC dim (pto-isa static_asserts it)
    ("Stride<1, 1, 1, -1, -1> t(32);", "Stride(n1, ...): pto-isa's 1- to 4-argument Stride constructors take "
                                       "exactly one value per DYNAMIC (-1) dim"),
    ("Stride<1, 1, 1, -1, 1> t(32, 1);", "Stride(n1, ...): pto-isa's 1- to 4-argument"),
    ("Shape<1, 1, -1, -1, -1> s(2, 3, 4, 5);", "Shape(n1, ...): pto-isa's 1- to 4-argument"),
    # a TMPipe is driven tile first
    ("TPUSH<Pipe, Acc, TileSplitAxis::TILE_NO_SPLIT>(pipe, acc);",
     "TPUSH(pipe, tile) on a TMPipe: pto-isa spells it TPUSH(tile, pipe)"),
    ("TPOP<Pipe, Half, TileSplitAxis::TILE_NO_SPLIT>(pipe, v);",
     "TPOP(pipe, tile) on a TMPipe: pto-isa spells it TPOP(tile, pipe)"),
    # the rest of pto-isa's Producer / Consumer
    ("pipe.prod.setEntryOffset(64);", "pipe.setEntryOffset: ptopipe does not model"),
    ("pipe.cons.free();", "pipe.free: ptopipe does not model"),
    # the fixpipe's converting push (fixpipe.hpp)
    ("TPUSH<Pipe, Acc, FixpipeParams<LayoutMode_t::NZ2ND, QuantMode_t::F322F16>>(pipe, acc);",
     "TPUSH<Pipe, Tile, FixpipeParams<...>>: ptopipe does not model the fixpipe's converting push"),
    ("SET_QUANT_SCALAR<half>(2.0f);", "SET_QUANT_SCALAR: ptopipe does not model the fixpipe's quantisation"),
    ("Tile<TileType::Scaling, uint64_t, 1, 16> fb; SET_QUANT_VECTOR(fb);",
     "SET_QUANT_VECTOR: ptopipe does not model the fixpipe's quantisation"),
    # an instruction's RecordEvent is no wait event (pto-isa's has no Wait(): only an Event<Src, Dst> is)
    ("auto e = TADDS(v, v, 1.0f); TADDS(v, v, 2.0f, e);", "an instruction's RecordEvent is no wait event"),
    ("RecordEvent e = TADDS(v, v, 1.0f); TSYNC(e);", "an instruction's RecordEvent is no wait event"),
    # TRANDOM runs 7 or 10 rounds (pto-isa's A5 TRandom static_asserts it)
    ("TRandomKey key = {1, 2}; TRandomCounter ctr = {}; TRANDOM<8>(v, key, ctr);",
     "TRANDOM: pto-isa runs 7 or 10 rounds (Rounds)"),
    # TCI writes one row (pto-isa's TCI static_asserts Rows == 1), even where the kernel never runs it
    ("using Ramp = Tile<TileType::Vec, int32_t, 2, 16>; Ramp r; TCI<Ramp, int32_t, 0>(r, 5);",
     "TCI: pto-isa generates the sequence along one row"),
    # pto-isa's right MX scale tile: ColMajor blocks of ColMajor fractals, not modelled
    ("TileRightScale<float8_e8m0_t, 4, 16> rs; (void)rs;",
     "TileRightScale: pto-isa's right MX scale tile is ColMajor blocks of ColMajor 32-byte fractals"),
    # A5's TMPipe of a GM FIFO has the two-argument constructor only (A2A3's one-argument one is
    # not in a5/TPush.hpp)
    ("Pipe one(fifo);  // one-argument", "TMPipe(gmFiFoBase): pto-isa's A5 TMPipe of a GM_FIFO has only the "
                                         "two-argument constructor TMPipe(gmFiFoBase, localFiFoBase)")]


@needs_cxx
def test_what_pto_isa_cannot_build_or_ptopipe_does_not_model_does_not_compile(tmp_path):
    """One A5 build of every refused declaration (the others refuse on every platform)."""
    body = TMPIPE + "".join(f"void k{i}(float *fifo, Acc &acc, Half &v) {{\n    Pipe pipe(fifo, 0);\n    {decl}\n}}\n"
                            for i, (decl, _msg) in enumerate(REFUSED))
    r = compile_only(tmp_path, body, platform="a5")
    assert r.returncode != 0
    for decl, msg in REFUSED:
        assert msg in r.stderr, (decl, r.stderr)
    # the A5 constructor's refusal is at the kernel's line, once (the two-argument ones build)
    line = next(i for i, ln in enumerate((PRELUDE + body).splitlines(), 1) if ln.endswith("// one-argument"))
    assert r.stderr.count("pto-isa's A5 TMPipe of a GM_FIFO") == 1, r.stderr
    assert re.search(rf"api\.cpp:{line}:\d+:.*(?:required from here|requested here)", r.stderr), r.stderr


#: an instruction whose pto-isa form requires its scratch tile (pto_instr.hpp declares no form
#: without it): (the call without it, the call with it); pto-isa's headers do not build the first
NO_SCRATCH = {"TROWSUM": ("TROWSUM(c, a)", "TROWSUM(c, a, b)"), "TROWMAX": ("TROWMAX(c, a)", "TROWMAX(c, a, b)"),
              "TROWMIN": ("TROWMIN(c, a)", "TROWMIN(c, a, b)"), "TROWPROD": ("TROWPROD(c, a)", "TROWPROD(c, a, b)"),
              "TTRANS": ("TTRANS(d, a)", "TTRANS(d, a, b)"), "TSEL": ("TSEL(d, m, a, b)", "TSEL(d, m, a, b, d)"),
              "TSELS": ("TSELS(d, m, a, -1.0f)", "TSELS(d, m, a, b, -1.0f)"),
              "TXOR": ("TXOR(i, i, j)", "TXOR(i, i, j, j)"), "TXORS": ("TXORS(i, i, 5)", "TXORS(i, i, 5, j)"),
              "TREM": ("TREM(d, a, b)", "TREM(d, a, b, d)"), "TREMS": ("TREMS(d, a, 3.0f)", "TREMS(d, a, 3.0f, b)"),
              "TPRELU": ("TPRELU(d, a, b)", "TPRELU(d, a, b, d)"), "TPOW": ("TPOW(d, a, b)", "TPOW(d, a, b, d)"),
              "TPOWS": ("TPOWS(d, a, 2.0f)", "TPOWS(d, a, 2.0f, b)"),
              "TROWARGMAX": ("TROWARGMAX(ci, a)", "TROWARGMAX(ci, a, b)"),
              "TCOLARGMIN": ("TCOLARGMIN(ri, a)", "TCOLARGMIN(ri, a, b)")}
SCRATCH_TILES = """
using F = Tile<TileType::Vec, float, 16, 16>;
using I = Tile<TileType::Vec, int32_t, 16, 16>;
using C = Tile<TileType::Vec, float, 16, 1, BLayout::ColMajor>;
using CI = Tile<TileType::Vec, int32_t, 16, 1, BLayout::ColMajor>;
using RI = Tile<TileType::Vec, int32_t, 1, 16>;
using M = Tile<TileType::Vec, uint8_t, 16, 32>;
"""


@needs_cxx
def test_an_instruction_called_without_the_scratch_tile_pto_isa_requires_does_not_compile(tmp_path):
    def calls(which):
        return SCRATCH_TILES + "".join(f"void k{n}(F &d, F &a, F &b, I &i, I &j, C &c, CI &ci, RI &ri, M &m) "
                                       f"{{ {forms[which]}; }}\n" for n, forms in NO_SCRATCH.items())
    r = compile_only(tmp_path, calls(0))
    assert r.returncode != 0
    for name in NO_SCRATCH:
        assert f"{name} takes " in r.stderr and f"the scratch tile tmp that pto-isa's {name} requires" in r.stderr, \
            (name, r.stderr[-3000:])
    ok = compile_only(tmp_path, calls(1))
    assert ok.returncode == 0, ok.stderr[-3000:]


#: what pto-isa's pto_instr.hpp declares without a default and the Python form defaults: (the call
#: without it, the call with it)
NO_DEFAULT = {"TCVT": ("TCVT(d, a)", "TCVT(d, a, RoundMode::CAST_RINT)"),
              "TCMP": ("TCMP(m, a, b)", "TCMP(m, a, b, CmpMode::LT)"),
              "TCMPS": ("TCMPS(m, a, 1.0f)", "TCMPS(m, a, 1.0f, CmpMode::GE)"),
              "TEXTRACT_FP": ("TEXTRACT_FP(d, a, f)", "TEXTRACT_FP(d, a, f, 0, 0)"),
              "TDEINTERLEAVE": ("TDEINTERLEAVE(d, b)", "TDEINTERLEAVE(d, b, a)")}


@needs_cxx
def test_an_operand_pto_isa_declares_without_a_default_must_be_spelled(tmp_path):
    def calls(which):
        return (SCRATCH_TILES + "using FP = Tile<TileType::Scaling, uint64_t, 1, 16>;\n"
                + "".join(f"void k{n}(F &d, F &a, F &b, M &m, FP &f) {{ {forms[which]}; }}\n"
                          for n, forms in NO_DEFAULT.items()))
    r = compile_only(tmp_path, calls(0))
    assert r.returncode != 0
    for name in NO_DEFAULT:
        assert f"{name} takes " in r.stderr and f"pto-isa's {name} has no defaults for them" in r.stderr, \
            (name, r.stderr[-3000:])
    ok = compile_only(tmp_path, calls(1))
    assert ok.returncode == 0, ok.stderr[-3000:]


#: the instructions pto-isa declares only with a mode template argument no operand gives
#: (headergen.PTO_ISA_TEMPLATE_ONLY): (the plain call, pto-isa's spelling)
TEMPLATE_ONLY = {"TCI": ("TCI(ri, 5)", "TCI<RI, int32_t, 0>(ri, 5)"),
                 "TTRI": ("TTRI(i, 1)", "TTRI<I, 1>(i, 1)"),
                 "THISTOGRAM": ("THISTOGRAM(ri, u, m)", "THISTOGRAM<HistByte::BYTE_1>(ri, u, m)"),
                 "TQUANT": ("TQUANT(q, d, a)", "TQUANT<QuantType::INT8_SYM, Q, F, F>(q, d, a)")}


@needs_cxx
def test_an_instruction_pto_isa_declares_with_its_mode_only_needs_its_template_arguments(tmp_path):
    """TCI(dst, start) without ``<TileData, T, descending>`` does not build with pto-isa's
    headers (the mode is deduced from no operand): nor here, saying how pto-isa spells it."""
    def calls(which):
        return (SCRATCH_TILES + "using U = Tile<TileType::Vec, uint16_t, 16, 16>;\n"
                "using Q = Tile<TileType::Vec, int8_t, 16, 32, BLayout::RowMajor, 16, 16>;\n"
                + "".join(f"void k{n}(F &d, F &a, I &i, RI &ri, U &u, M &m, Q &q) {{ {forms[which]}; }}\n"
                          for n, forms in TEMPLATE_ONLY.items()))
    r = compile_only(tmp_path, calls(0))
    assert r.returncode != 0
    errors = [ln for ln in r.stderr.splitlines() if "error:" in ln]
    assert len(errors) == len(TEMPLATE_ONLY), r.stderr[-3000:]
    for name in TEMPLATE_ONLY:
        assert f"{name} needs its template arguments: pto-isa declares only {name}<" in r.stderr, (name, r.stderr[-3000:])
    assert "TCI<TileData, T, descending>(dst, start)" in r.stderr
    ok = compile_only(tmp_path, calls(1))
    assert ok.returncode == 0, ok.stderr[-3000:]


#: what pto-isa declares and ptopipe does not model: a file naming it compiles (the names below,
#: <algorithm> through the headers); each use is refused with a message naming what is not modelled
UNMODELLED = """
#include <pto/cpu/MXTypes.hpp>
using V = Tile<TileType::Vec, float, 8, 32>;
using G = GlobalTensor<float, Shape<1, 1, 1, 8, 32>, Stride<1, 1, 1, 32, 1>>;
template <typename T> struct Named { T x; };
Named<pto::int4b_t> n0;
Named<float4_e2m1x2_t> n1;
Named<float8_e4m3_t> n2;
Named<hifloat8_t> n3;
inline void named(V &v, int *p) { std::fill(p, p + 4, 0); comm::AsyncSession session; (void)session; (void)v; }
comm::sdma::SdmaBaseConfig sdma_config = {32768ULL, 0ULL, 1u};
using Conv = std::conditional_t<false, GlobalTensor<float, Shape<1, 1, 1, 8, 32>, Stride<1, 1, 1, 32, 1>, Layout::NHWC>, G>;
using M = Tile<TileType::Mat, float, 16, 32, BLayout::ColMajor, 16, 32, SLayout::RowMajor, 512>;
void u0(M &m, G &g, G &i, G &s) { MGATHER<Coalesce::Elem, GatherOOB::Zero, GatherExec::Simt>(m, g, i, s); }
void u3(G &a, G &b, V &t) { comm::TGET(a, b, t); }
bool u4(comm::Signal &s) { return comm::TTEST(s, 1, comm::WaitCmp::EQ); }
void u5(G *gs) { comm::ParallelGroup<G> group(gs, 4, 0); }
void u6(Tile<TileType::Vec, float4_e2m1x2_t, 8, 64> &t) { TASSIGN(t, 0); }
void u7(float *p) { GlobalTensor<float, Shape<1, 1, 1, 8, 32>, Stride<1, 1, 1, 32, 1>, Layout::FRACTAL_Z> g(p); (void)g; }
void u8(V &t, uint8_t *ws, comm::AsyncSession &s) {
    comm::BuildAsyncSession<comm::DmaEngine::SDMA>(t, ws, s, 0u, sdma_config, 0u);
}
void u9(V &d, V &s, V &tmp) { TMOV(d, s, tmp); }
void u10(V &d, V &s, V &tmp) { TMOV<0>(d, s, tmp); }
// (an event after the source is no tmp tile: the plain move)
void moved(V &d, V &s) { Event<Op::TMOV_M2V, Op::TMOV_M2V> e; TMOV(d, s, e); }
"""
#: the message of each refused use, in order (u0 .. u10, no u1, u2)
UNMODELLED_SAYS = ["MGATHER: ptopipe models the Cube's scalar executor of the GM -> L1 element gather",
                   "TGET: ptopipe simulates one cluster", "TTEST: ptopipe simulates one cluster",
                   "pto::comm::ParallelGroup: ptopipe simulates one cluster",
                   "this element type has no ptopipe form",
                   "ptopipe models a GlobalTensor's ND, DN and NZ layouts",
                   "BuildAsyncSession: ptopipe simulates one cluster",
                   # A5's X -> ZZ repack, both spellings: named, with the plain move to write instead
                   *["TMOV(dst, src, tmp) with a tmp tile is A5's microscaling exponent repack (X -> ZZ"] * 2]


@needs_cxx
def test_what_pto_isa_declares_and_ptopipe_does_not_model_names_itself(tmp_path):
    """A5's SIMT executor of MGATHER's GM -> L1 element gather, pto-isa's 4- and 8-bit
    element types and its pto::comm are declared: a file that names them compiles, and each use
    is a static_assert saying what ptopipe does not model - never an undeclared identifier."""
    r = compile_only(tmp_path, UNMODELLED, lean=False)  # (std::fill: <algorithm> through the headers)
    assert r.returncode != 0
    assert "undeclared" not in r.stderr and "no member named" not in r.stderr, r.stderr[-3000:]
    errors = [ln for ln in r.stderr.splitlines() if "error: static assertion failed" in ln]
    assert len(errors) == len(UNMODELLED_SAYS), r.stderr[-3000:]
    # the names alone compile: every error is at a use (u0 .. u8), none in the lines naming them
    lines = (PRELUDE + UNMODELLED).splitlines()
    first_use = next(i for i, ln in enumerate(lines, 1) if ln.startswith("void u0"))
    at = [int(m) for m in re.findall(r"api\.cpp:(\d+):\d+:", r.stderr)]
    assert at and min(at) >= first_use, r.stderr[-3000:]
    for msg in UNMODELLED_SAYS:
        assert any(msg in e for e in errors), (msg, errors)
    for use in ("void u9", "void u10"):           # the TMOV forms: at the kernel's call
        assert next(i for i, ln in enumerate(lines, 1) if ln.startswith(use)) in at, (use, r.stderr[-3000:])


#: element types by size, for the shape-rule cases
_CTYPE = {1: "uint8_t", 2: "half", 4: "float", 8: "int64_t"}


@needs_cxx
def test_a_tile_shape_pto_isa_refuses_does_not_compile(tmp_path):
    """The header's Tile static_asserts pto_tile.hpp's shape rule, and its rule is
    ``arch.vocab.tile_shape_error``'s on every tile the writers declare (the fractal 1024 of a
    boxed Acc tile, 512 otherwise): a row-major row / column-major column of whole 32-byte blocks,
    a boxed tile of whole fractals; a padded shape with the data's valid shape builds."""
    from ptopipe.arch.vocab import TileLayout, TileType, tile_shape_error
    checks = []
    for loc in (TileType.Vec, TileType.Mat, TileType.Left, TileType.Right, TileType.Acc):
        for lay in TileLayout:
            for r, c in ((1, 4), (4, 1), (8, 8), (16, 12), (16, 16), (12, 32), (32, 64)):
                for size, ctype in _CTYPE.items():
                    ok = tile_shape_error(loc, lay, r, c, size) is None
                    frac = 1024 if loc is TileType.Acc and lay.fractal else 512
                    checks.append(f"static_assert(ptopipe::tile_shape_ok<TileType::{loc.value}, {ctype}, {r}, {c}, "
                                  f"BLayout::{lay.blayout.value}, SLayout::{lay.slayout.value}, {frac}>() == "
                                  f"{str(ok).lower()});")
    bad = ["Tile<TileType::Vec, float, 16, 12> a;",
           "Tile<TileType::Vec, uint8_t, 8, 1, BLayout::ColMajor> b;",
           "Tile<TileType::Mat, int8_t, 16, 16, BLayout::ColMajor, 16, 16, SLayout::RowMajor> c;"]
    good = ["Tile<TileType::Vec, float, 16, 16, BLayout::RowMajor, 16, 12> a;",
            "Tile<TileType::Vec, uint8_t, 32, 1, BLayout::ColMajor, 8, 1> b;",
            "Tile<TileType::Mat, int8_t, 16, 32, BLayout::ColMajor, 16, 16, SLayout::RowMajor> c;"]
    body = "\n".join(checks) + "\nvoid refused() {\n" + "\n".join(bad) + "\n}\nvoid taken() {\n" + "\n".join(good) + "\n}\n"
    r = compile_only(tmp_path, body)
    assert r.returncode != 0
    errors = [ln for ln in r.stderr.splitlines() if "error:" in ln]       # (not clang's "3 errors generated")
    assert sum("pto-isa's Tile refuses this static shape" in ln for ln in errors) == len(bad), r.stderr[-3000:]
    lines = (PRELUDE + body).splitlines()
    assert {i for i, ln in enumerate(lines, 1) if ln in bad} <= {
        int(m) for m in re.findall(r"api\.cpp:(\d+):\d+:\s+(?:required from here|note: in instantiation of "
                                   r"template class .* requested here)", r.stderr)}, r.stderr[-3000:]
    assert len(errors) == len(bad), errors


@needs_cxx
def test_syncall_orders_the_vector_lanes_gm_handoff(cpp_cache):
    """pto-isa's SYNCALL<CoreType>() and SYNCALL<Mode, CoreType>(workspace, usedCores): lane 1
    reads what lane 0 stored before the barrier; without it the handoff is a race at the store,
    and a usedCores the launch cannot match is refused at the call."""
    from ptopipe.errors import ConfigError, DataRaceError
    x = np.arange(256, dtype=np.float32).reshape(16, 16) / 8
    path = kernel("syncall_vec.cpp")

    def run(mode, used=0):
        return run_cpp(path, dict(x=x, ws=np.zeros_like(x), out=np.zeros_like(x), sw=np.zeros(16, np.int32),
                                  mode=mode, used=used), aiv="vec_kernel", platform="a5")
    for mode, used in ((1, 0), (2, 2)):
        np.testing.assert_array_equal(run(mode, used)["out"], 2 * x + 1)
    with pytest.raises(DataRaceError) as e:
        run(0)
    assert "TSTORE" in e.value.what and "TLOAD" in e.value.what
    with pytest.raises(DataRaceError) as e:      # a barrier lane 1 skips: AIV0 waits there for it
        run(3)
    assert e.value.where == f"{os.path.relpath(path)}:{_line('syncall_vec.cpp', 'TLOAD(t, gws)')}"
    assert (f"AIV0 waits at its SYNCALL ({os.path.relpath(path)}:{_line('syncall_vec.cpp', 'mode == 3') + 1}) "
            "for AIV1, which made its TLOAD without having reached a SYNCALL") in e.value.what
    assert "not under a core- or lane-dependent branch (e.g. if (get_subblockid() == 0))" in e.value.fix
    assert "TPUSH" not in e.value.fix
    with pytest.raises(ConfigError) as e:
        run(2, 3)
    assert "used_cores = 3, but the launch has 2 participating core(s)" in e.value.what
    assert e.value.where == f"{os.path.relpath(path)}:{_line('syncall_vec.cpp', 'SYNCALL<SyncAllMode::Soft')}"


#: Random123's known answers for Philox-4x32 (kat_vectors): the counter and key of pi's digits,
#: and the four output words of 7 and of 10 rounds
PHILOX_KEY, PHILOX_COUNTER = [0xA4093822, 0x299F31D0], [0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344]
PHILOX_KAT = {7: [0x4DFCCABA, 0x190A87F0, 0xC47362BA, 0xB6B5242A], 10: [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]}


@needs_cxx
def test_trandom_takes_pto_isas_key_and_counter_arrays(cpp_cache):
    """``TRANDOM<Rounds>(dst, key, counter)`` with pto-isa's TRandomKey / TRandomCounter (and the
    default 10 rounds): the words are Philox-4x32's (lane 0 of row 0 holds the counter's own four
    outputs, 64 columns apart), laid out over the tile as pto-isa's CPU model lays them."""
    from ptopipe.arch.catalogue import random_words
    r = run_cpp(kernel("trandom_vec.cpp"), dict(r7=np.zeros((2, 256), np.uint32), r10=np.zeros((2, 256), np.uint32),
                                                k0=PHILOX_KEY[0], k1=PHILOX_KEY[1]), platform="a5")
    for rounds, out in ((7, r["r7"]), (10, r["r10"])):
        assert out[0, ::64].tolist() == PHILOX_KAT[rounds]
        want = np.zeros((2, 256), np.uint32)
        random_words(PHILOX_KEY, PHILOX_COUNTER, rounds, 256, want)
        np.testing.assert_array_equal(out, want)


#: the element-wise instructions pto-isa's NPU code runs on RowMajor tiles only
#: (``catalogue.ROW_MAJOR_ONLY``): on a DN column (FA's running max, a row reduction's result)
#: a call does not build there, whichever form spells it; the scalar forms, TNEG and TRECIP
#: (TMULS / TDIVS on the device) assert no layout and build
ROW_MAJOR_TILES = """
using Col = Tile<TileType::Vec, float, 16, 1, BLayout::ColMajor>;
using Row = Tile<TileType::Vec, float, 1, 16>;
"""
ROW_MAJOR_REFUSED = ["TMAX(m_new, m_old, m_cur);", "TSUB(m_new, m_old, row);", "TEXP(m_new, m_cur);",
                     "TEXP<ExpAlgorithm::HIGH_PRECISION>(m_new, m_cur);", "TDIV<DivAlgorithm::DEFAULT>(row, row, m_cur);",
                     "TADD<Col, Col, Col>(m_new, m_old, m_cur);"]
ROW_MAJOR_TAKEN = ["TMAX(row, row, row);", "TEXP(row, row);", "TMULS(m_new, m_cur, 2.0f);", "TADDS(m_new, m_cur, 1.0f);",
                   "TNEG(m_new, m_cur);", "TRECIP(m_new, m_cur);", "TEXPANDS(m_new, 0.0f);"]


@needs_cxx
def test_an_element_wise_op_pto_isa_runs_row_major_only_does_not_compile_on_a_dn_column(tmp_path):
    """Each refused call is one error, at its own line ("required from here"), naming the fix."""
    body = ROW_MAJOR_TILES + "void k(Col &m_new, Col &m_old, Col &m_cur, Row &row) {\n" + \
        "\n".join(ROW_MAJOR_REFUSED + ROW_MAJOR_TAKEN) + "\n}\n"
    r = compile_only(tmp_path, body)
    assert r.returncode != 0
    errors = [ln for ln in r.stderr.splitlines() if "error:" in ln]
    assert len(errors) == len(ROW_MAJOR_REFUSED), r.stderr[-3000:]
    assert all("takes RowMajor tiles only" in ln and "TRESHAPE a DN [R, 1] column" in ln for ln in errors), errors
    lines = (PRELUDE + body).splitlines()
    assert {i for i, ln in enumerate(lines, 1) if ln in ROW_MAJOR_REFUSED} == {
        int(m) for m in re.findall(r"api\.cpp:(\d+):\d+:\s+(?:required from here|note: in instantiation of "
                                   r"function template specialization .* requested here)", r.stderr)}, r.stderr[-3000:]


@needs_cxx
def test_a_dn_column_max_is_a_compile_error_at_its_line(cpp_cache, tmp_path):
    """As a run reports it: a CompileError at the kernel's line of the call."""
    from ptopipe.errors import CompileError
    p = tmp_path / "k.cpp"
    text = PRELUDE + "extern \"C\" __global__ AICORE void vec_kernel(__gm__ float *x)\n{\n" \
        "    Tile<TileType::Vec, float, 16, 1, BLayout::ColMajor> a, b;\n" \
        "    TASSIGN(a, 0x0);\n    TASSIGN(b, 0x100);\n    TMAX(a, a, b);\n}\n"
    p.write_text(text)
    line = text.splitlines().index("    TMAX(a, a, b);") + 1
    with pytest.raises(CompileError) as ei:
        run_cpp(str(p), dict(x=np.zeros(16, np.float32)))
    assert re.search(rf"k\.cpp:{line}:\d+$", ei.value.where), ei.value.where
    assert "TMAX takes RowMajor tiles only" in ei.value.what
