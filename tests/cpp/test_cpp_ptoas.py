"""C++ as ptoas writes it, and as pto-isa's device compiler builds it: each side compiled with its
own macros (``__DAV_CUBE__`` / ``__DAV_VEC__``, the architecture's ``__DAV_C220_*__``,
``__CCE_AICORE__``), ptoas's Tile spelling, pto-isa's include paths; a side whose body the
macros leave out is an error, never a clean run.  ``PTOAS=/path/to/ptoas`` also runs the real
assembler's output of a .pto file and compares it with running the .pto itself."""
from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

from ptopipe.cpp import run_cpp
from ptopipe.cpp.build import device_macros, find_kernels, side_macros
from ptopipe.errors import CompileError, ConfigError, DeadlockError, KernelError

from cpp_support import cpp_cache, needs_cxx  # noqa: F401 (fixture)

KDIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_kernels")
PTOAS_C2V = os.path.join(KDIR, "ptoas_c2v.cpp")
GUARDED_ABS = os.path.join(KDIR, "guarded_abs.cpp")
PTOAS_MIXED = os.path.join(KDIR, "ptoas_mixed.cpp")
PTOAS_BRANCH = os.path.join(KDIR, "ptoas_branch.cpp")


def c2v_args():
    r = np.random.default_rng(3)
    a = r.standard_normal((32, 16)).astype(np.float32)
    b = r.standard_normal((16, 16)).astype(np.float32)
    bias = r.standard_normal((32, 16)).astype(np.float32)
    return dict(a=a, b=b, bias=bias, out=np.zeros_like(bias), gm_slot_buffer=np.zeros(16384, np.uint8), n=2)


def test_device_macros_are_the_device_compilers_per_side_and_platform():
    assert device_macros("a2a3") == ("PTO_NPU_ARCH_A2A3", "__CCE_AICORE__=220", "__NPU_ARCH__=2201")
    assert device_macros("a5") == ("PTO_NPU_ARCH_A5", "__CCE_AICORE__=310", "__NPU_ARCH__=3510")
    assert side_macros("a3", "aic") == ("__DAV_CUBE__", "__DAV_C220_CUBE__")
    assert side_macros("a2a3", "aiv") == ("__DAV_VEC__", "__DAV_C220_VEC__")
    assert side_macros("a5", "aiv") == ("__DAV_VEC__", "__DAV_C310_VEC__")


def test_a_file_that_tests_a_side_macro_is_built_per_side(tmp_path):
    """ptoas's in-function sections make a file sided; ptopipe's own Group entry, whose sections
    only call the two kernels, does not (its kernels are called directly, one build)."""
    assert find_kernels(PTOAS_C2V).sided
    k = find_kernels(GUARDED_ABS, aiv="abs_kernel")
    assert k.sided and k.aic is None
    k = find_kernels(GUARDED_ABS)        # its one __global__, on the side it has a section for
    assert k.sided and k.entry.name == "abs_kernel" and list(k.roles) == ["aiv"]
    entry = tmp_path / "entry.cpp"
    entry.write_text("AICORE inline void k_aic(__gm__ float *x) {}\nAICORE inline void k_aiv(__gm__ float *x) {}\n"
                     "extern \"C\" __global__ AICORE void g(__gm__ float *x) {\n"
                     "#if defined(__DAV_CUBE__)\n    k_aic(x);\n#endif\n#if defined(__DAV_VEC__)\n    k_aiv(x);\n#endif\n}\n")
    k = find_kernels(str(entry))
    assert (k.aic.name, k.aiv.name, k.sided) == ("k_aic", "k_aiv", False)
    plain = tmp_path / "plain.cpp"
    plain.write_text("void my_aic(__gm__ float *x) {}\nvoid my_aiv(__gm__ float *x) {}\n")
    assert not find_kernels(str(plain)).sided


def test_a_kernel_using_both_kinds_of_tiles_is_the_cubes_given_a_ub(tmp_path):
    """ptoas's C++ of a .pto function using Cube and Vector tiles (no side sections) runs as the
    .pto function does: on the AIC, given a UB (``Kernels.mixed``) - the lone kernel, whatever
    its name says, or one named with --aic alone; the code decides a lone kernel's side before
    its name (a pure Cube kernel named ``*_vector_mix*`` is the AIC's); a file with side
    sections is not mixed."""
    k = find_kernels(PTOAS_MIXED)
    assert (k.mixed, k.aic.name, k.aiv) == (True, "mm_bias_block", None)
    cube = "Tile<TileType::Mat, float, 16, 16> m; Tile<TileType::Left, float, 16, 16> l; TMOV(l, m);"
    vec = "Tile<TileType::Vec, float, 16, 16> v; TABS(v, v);"
    f = tmp_path / "k.cpp"
    f.write_text(f"__global__ AICORE void mm_vector_mix_aiv(__gm__ float *x) {{ {cube} {vec} }}\n")
    assert find_kernels(str(f)).mixed
    f.write_text(f"__global__ AICORE void mm_vector_mix(__gm__ float *x) {{ {cube} }}\n")
    k = find_kernels(str(f))
    assert (k.mixed, k.aic.name, k.aiv) == (False, "mm_vector_mix", None)
    f.write_text(f"__global__ AICORE void one(__gm__ float *x) {{ {cube} {vec} }}\n"
                 f"__global__ AICORE void two(__gm__ float *x) {{ {vec} }}\n")
    assert find_kernels(str(f), aic="one").mixed and not find_kernels(str(f), aiv="two").mixed
    f.write_text(f"__global__ AICORE void one(__gm__ float *x) {{\n#if defined(__DAV_CUBE__)\n{cube}\n#endif\n"
                 f"#if defined(__DAV_VEC__)\n{vec}\n#endif\n}}\n")
    assert not find_kernels(str(f)).mixed


def test_a_parameter_name_the_two_kernels_declare_with_two_types_is_refused(tmp_path):
    """ptoas numbers each function's parameters v1, v2, ...: a Cube and a Vector function of a .pto
    without an entry share names for different tensors, which a run (one argument per name) would
    alias - here cube's v2 (a float tensor) would be vec's ring buffer; the same name of one type
    (a shared ring buffer), qualifiers aside, is one tensor and runs."""
    f = tmp_path / "pair.cpp"
    f.write_text("AICORE void k_cube(__gm__ float* v1, __gm__ float* v2, __gm__ uint8_t* v3) {}\n\n"
                 "AICORE void k_vec(__gm__ float* v1,\n                __gm__ uint8_t* v2) {}\n")
    with pytest.raises(ConfigError) as ei:
        find_kernels(str(f))
    assert ei.value.where == f"{f}:3", ei.value.where
    assert ei.value.what.startswith("parameter 'v2' is `__gm__ float* v2` in the Cube kernel k_cube but "
                                    "`__gm__ uint8_t* v2` in the Vector kernel k_vec"), ei.value.what
    f.write_text("AICORE void k_cube(__gm__ const float *a, __gm__ uint8_t *fifo) {}\n"
                 "AICORE void k_vec(__gm__ float* a, __gm__ uint8_t* fifo) {}\n")
    assert find_kernels(str(f)).aiv.name == "k_vec"


def test_ptoas_numbered_parameters_two_kernels_share_are_refused(tmp_path):
    """Of one type too: ptoas's v1, v2, ... say nothing of which tensor each is (the Cube's v2 its
    input, the Vector's v2 its output), so a pair of kernels whose parameters are all so numbered,
    with no entry that calls them, is refused where a run would alias what they share; with an
    entry (which the run binds), with one kernel's parameters named, or with one parameter list
    for both (pypto's split halves), it runs."""
    f = tmp_path / "pair.cpp"
    f.write_text("AICORE void k_cube(__gm__ float* v1, __gm__ float* v2, __gm__ float* v3) {\n"
                 "#if defined(__DAV_CUBE__)\n#endif\n}\n"
                 "AICORE void k_vec(__gm__ float* v1,\n                __gm__ float* v2) {\n"
                 "#if defined(__DAV_VEC__)\n#endif\n}\n")
    with pytest.raises(ConfigError) as ei:
        find_kernels(str(f))
    assert ei.value.where == f"{f}:5", ei.value.where
    assert ei.value.what == ("the Cube kernel k_cube and the Vector kernel k_vec both number their parameters as "
                             "ptoas does (v1, v2, ... in each function), with no entry that calls them: a run "
                             "passes one argument per name to both (v1, v2), whatever tensor each function's "
                             "parameter of that number is"), ei.value.what
    f.write_text(f.read_text() + "__global__ AICORE void k(__gm__ float* v1, __gm__ float* v2, __gm__ float* v3, "
                                 "__gm__ float* v4) {\n  k_cube(v1, v2, v3);\n  k_vec(v1, v4);\n}\n")
    k = find_kernels(str(f))
    assert k.entry is not None, k
    f.write_text("AICORE void k_cube(__gm__ float* v1, __gm__ float* v2) {}\n"
                 "AICORE void k_vec(__gm__ float* v1, __gm__ float* out) {}\n")
    assert find_kernels(str(f)).aiv.name == "k_vec"
    # the two halves pypto splits a mixed function into take its whole parameter list, and its
    # caller passes both the same arguments (pto-isa's tpush_a3 test): they bind alike
    f.write_text("AICORE void k_aic(__gm__ float* v1, __gm__ float* v2, int32_t v3) {}\n"
                 "AICORE void k_aiv(__gm__ float* v1, __gm__ float* v2, int32_t v3) {}\n")
    assert find_kernels(str(f)).aiv.name == "k_aiv"


def test_a_kernel_ordering_its_pipes_with_buffer_tokens_runs_in_the_auto_mode(tmp_path):
    """A5's get_buf / rls_buf (ptoas's pto.get_buf / pto.rls_buf), which ptopipe does not model,
    put a kernel that also sets events in the auto mode, as the .pto runs, with a note saying so."""
    from ptopipe.cpp.build import BUFFER_TOKENS_NOTE, OWN_EVENTS_NOTE
    from ptopipe.driver.cpp import notes
    f = tmp_path / "k.cpp"
    body = "set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0); wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);"
    f.write_text(f"__global__ AICORE void k_aiv(__gm__ float *x) {{ {body} }}\n")
    k = find_kernels(str(f))
    assert k.own_events and not k.buffer_tokens and notes(str(f), None, None)[1:] == [OWN_EVENTS_NOTE]
    f.write_text(f"__global__ AICORE void k_aiv(__gm__ float *x) {{ get_buf(PIPE_V, 0, 0); {body} "
                 "rls_buf(PIPE_V, 0, 0); }\n")
    k = find_kernels(str(f))
    assert not k.own_events and k.buffer_tokens and notes(str(f), None, None)[1:] == [BUFFER_TOKENS_NOTE]
    assert notes(str(f), None, None, sync="manual")[1:] == []       # (the first: the lone Vector kernel's lanes)


@needs_cxx
def test_a_kernel_using_both_kinds_of_tiles_runs_as_its_pto_function(cpp_cache):
    """The mixed kernel computes numpy's numbers on the AIC given a UB, with the warning the .pto
    function's run gives (no core of the device holds both)."""
    r = np.random.default_rng(7)
    a, b, bias = (r.standard_normal((16, 16)).astype(np.float32) for _ in range(3))
    res = run_cpp(PTOAS_MIXED, dict(v1=a, v2=b, v3=bias, v4=np.zeros_like(a), v5=np.zeros_like(a)))
    np.testing.assert_allclose(res["v5"], a @ b + bias, rtol=1e-5, atol=1e-5)
    assert res.summary.cores["AIC"]["instructions"] > 0 and res.summary.cores["AIV0"]["instructions"] == 0
    (what, where), = [w for w in res.summary.leaks if "Cube tiles and Vector tiles" in w[0]]
    assert "no core of the device holds both, so it runs on one core given both kinds of memory" in what
    assert where == f"{os.path.relpath(PTOAS_MIXED)}:{_line(PTOAS_MIXED, '__global__ AICORE')}"


@needs_cxx
def test_a_side_whose_section_is_compiled_in_and_did_nothing_is_a_warning(cpp_cache, monkeypatch):
    """A ptoas kernel whose tiles are all under a branch its arguments skip (n = 0) did nothing:
    its section is compiled in, so that is a warning, not "its body compiled away"; with n = 1 it
    computes |x|; built without its side's macro, it is the error."""
    x = np.random.default_rng(5).standard_normal((16, 16)).astype(np.float32)
    res = run_cpp(PTOAS_BRANCH, dict(v1=x, v2=np.zeros_like(x), v3=0))
    assert not res["v2"].any()
    assert [what.split(": ", 1)[1] for what, where in res.summary.leaks if "issued no PTO instruction" in what] == \
        ["its section for the side is compiled in, and with these arguments did nothing"]
    np.testing.assert_array_equal(run_cpp(PTOAS_BRANCH, dict(v1=x, v2=np.zeros_like(x), v3=1))["v2"], np.abs(x))
    monkeypatch.setenv("CXXFLAGS", os.environ.get("CXXFLAGS", "") + " -U__DAV_VEC__")
    with pytest.raises(KernelError) as e:
        run_cpp(PTOAS_BRANCH, dict(v1=x, v2=np.zeros_like(x), v3=1))
    assert e.value.what.endswith("its body compiled away")
    assert e.value.where == f"{os.path.relpath(PTOAS_BRANCH)}:{_line(PTOAS_BRANCH, '__global__ AICORE')}"


@needs_cxx
def test_a_merge_sort_count_list_parameter_taken_by_value(cpp_cache, tmp_path):
    """ptoas lowers a .pto ``vector<4xi16>`` parameter to a ``pto::MrgSortExecutedNumList`` taken by
    value: it takes an array of four 16-bit counts, which the kernel gets a copy of (what it writes
    stays in the kernel); any other struct by value is a CompileError at the kernel naming the
    parameter, not the entry header's static_assert."""
    f = tmp_path / "k.cpp"
    f.write_text("#include \"pto/pto-inst.hpp\"\nusing namespace pto;\n\n"
                 "__global__ AICORE void sort_vec(__gm__ float* v1, pto::MrgSortExecutedNumList v2) {\n"
                 "  Tile<TileType::Vec, float, 1, 8> t;\n  TASSIGN(t, 0);\n"
                 "  TEXPANDS(t, float(v2.mrgSortList0 + 10 * v2.mrgSortList3));\n  v2.mrgSortList0 = 7;\n"
                 "  GlobalTensor<float, Shape<1, 1, 1, 1, 8>, Stride<8, 8, 8, 8, 1>> g(v1);\n  TSTORE(g, t);\n}\n")
    counts = np.array([3, 1, 2, 4], np.int16)
    res = run_cpp(str(f), dict(v1=np.zeros(8, np.float32), v2=counts))
    np.testing.assert_array_equal(res["v1"], np.full(8, 43, np.float32))
    np.testing.assert_array_equal(res["v2"], [3, 1, 2, 4])
    with pytest.raises(ConfigError) as e:
        run_cpp(str(f), dict(v1=np.zeros(8, np.float32), v2=np.zeros(4, np.int32)))
    assert "parameter 'v2' is a pto::MrgSortExecutedNumList (four 16-bit counts, taken by value), got an array " \
           "of 4 int32" in e.value.what
    f.write_text("#include \"pto/pto-inst.hpp\"\nusing namespace pto;\nstruct Pair { int32_t a, b; };\n\n"
                 "__global__ AICORE void pair_vec(__gm__ float* v1, Pair v2) {\n  return;\n}\n")
    with pytest.raises(CompileError) as e:
        run_cpp(str(f), dict(v1=np.zeros(8, np.float32), v2=0))
    assert e.value.what.startswith("the AIV (Vector) kernel pair_vec takes its parameter v2 as a Pair by value")
    assert e.value.where.endswith("k.cpp:5")


def _line(path: str, text: str) -> int:
    with open(path) as f:
        return next(i for i, ln in enumerate(f, 1) if text in ln)


@needs_cxx
def test_a_ptoas_style_kernel_runs_each_side_under_its_macro(cpp_cache):
    """Both bodies are under in-function ``#if defined(__DAV_*__)`` sections: built with neither
    macro, both would be empty; with each side's own, the numbers are numpy's."""
    args = c2v_args()
    r = run_cpp(PTOAS_C2V, args, sync="auto")
    gold = np.concatenate([args["a"][:16] @ args["b"], args["a"][16:] @ args["b"]]) + args["bias"]
    np.testing.assert_allclose(r["out"], gold, rtol=1e-5, atol=1e-5)
    assert r.summary.pipes[0]["pops"] == 4 and not r.summary.leaks
    # no block to do: the Vector side sets up its pipe and tiles and computes nothing, a warning
    # (its body is there: not an error); the Cube still loads b
    r = run_cpp(PTOAS_C2V, {**args, "n": 0, "out": np.zeros_like(args["out"])}, sync="auto")
    assert not r["out"].any()
    assert [(what.split(" issued")[0], where) for what, where in r.summary.leaks
            if "with these arguments did nothing" in what] == \
        [("the AIV (Vector) kernel mm_aiv", "tests/cpp/cpp_kernels/ptoas_c2v.cpp:57")]


@needs_cxx
def test_a_side_whose_body_its_macros_leave_out_is_reported(cpp_cache, monkeypatch):
    """Built without the Vector macro (the user's -U in $CXXFLAGS, after ptopipe's -D), the Vector
    body is empty: the Cube then waits for it forever, and the deadlock names the empty side as
    its cause; with both bodies empty nothing hangs, and the run is a KernelError - never a PASS."""
    flags = os.environ.get("CXXFLAGS", "")
    monkeypatch.setenv("CXXFLAGS", flags + " -U__DAV_VEC__")
    with pytest.raises(DeadlockError) as e:
        run_cpp(PTOAS_C2V, c2v_args(), sync="auto")
    assert e.value.what.startswith("deadlock: the AIV (Vector) kernel mm_aiv issued no PTO instruction besides "
                                   "intra-core synchronisation")
    assert e.value.what.endswith("its body compiled away")
    assert e.value.where.endswith("ptoas_c2v.cpp:57")
    assert "-D__DAV_VEC__ -D__DAV_C220_VEC__" in e.value.fix
    monkeypatch.setenv("CXXFLAGS", flags + " -U__DAV_VEC__ -U__DAV_CUBE__")
    with pytest.raises(KernelError) as e:
        run_cpp(PTOAS_C2V, c2v_args(), sync="auto")
    assert e.value.what.startswith("the AIC (Cube) kernel mm_aic issued no PTO instruction")
    assert e.value.where.endswith("ptoas_c2v.cpp:22")
    assert "also: the AIV (Vector) kernel mm_aiv issued no PTO instruction" in str(e.value)


@needs_cxx
def test_a_kernel_including_pto_instr_hpp_under_an_arch_guard(cpp_cache):
    """PTOAS's compile_cpp spelling: ``#include "pto/common/pto_instr.hpp"`` and the body under
    ``#if __CCE_AICORE__ == 220 && defined(__DAV_C220_VEC__)``: it runs on A2A3's Vector cores
    (found as the file's one ``__global__``, or named); on A5 the guard leaves the kernel out, a
    CompileError at the function, not g++'s words."""
    x = np.random.default_rng(5).standard_normal((16, 16)).astype(np.float32)
    for names in ({}, {"aiv": "abs_kernel"}):
        r = run_cpp(GUARDED_ABS, dict(x=x, y=np.zeros_like(x)), **names)
        np.testing.assert_array_equal(r["y"], np.abs(x))
        assert r.summary.cores["AIC"]["instructions"] == 0
    with pytest.raises(CompileError) as e:
        run_cpp(GUARDED_ABS, dict(x=x, y=np.zeros_like(x)), aiv="abs_kernel", platform="a5")
    assert e.value.what.startswith("the AIV (Vector) kernel abs_kernel is not defined when ptopipe compiles it")
    assert "-D__CCE_AICORE__=310" in e.value.what and "-D__DAV_C310_VEC__" in e.value.what
    assert e.value.where.endswith("guarded_abs.cpp:9")


@needs_cxx
def test_pto_isas_header_paths_and_tile_parameters(tmp_path):
    """pto-isa's other header paths kernels include, and its Tile's eleven parameters with their
    defaults (PadValue::Null, CompactMode::Null): a syntax-only compile."""
    from ptopipe.cpp import include_dir
    from ptopipe.cpp.build import STD, find_compiler
    src = tmp_path / "paths.cpp"
    src.write_text("""
#include <pto/common/type.hpp>
#include <pto/common/constants.hpp>
#include <pto/common/pto_tile.hpp>
#include <pto/common/pto_instr.hpp>
#include <pto/pto-inst.hpp>
using namespace pto;
using Plain = Tile<TileType::Vec, float, 8, 16>;
using Spelled = Tile<TileType::Vec, float, 8, 16, BLayout::RowMajor, 8, 16, SLayout::NoneBox, 512, PadValue::Null,
                     CompactMode::Null>;
static_assert(std::is_same_v<Plain, Spelled>, "pto-isa's defaults");
static_assert(Plain::PadVal == PadValue::Null && Plain::Compact == CompactMode::Null && Plain::SFractalSize == 512);
using Padded = Tile<TileType::Vec, float, 8, 16, BLayout::RowMajor, 8, 16, SLayout::NoneBox, 512, PadValue::Zero,
                    CompactMode::RowPlusOne>;
static_assert(Padded::PadVal == PadValue::Zero && Padded::Compact == CompactMode::RowPlusOne);
""")
    r = subprocess.run([find_compiler()[0], STD, "-fsyntax-only", "-I", include_dir(), str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@needs_cxx
def test_tile_data_is_the_tiles_address(cpp_cache):
    x = np.arange(128, dtype=np.float32).reshape(8, 16)
    r = run_cpp(os.path.join(KDIR, "tile_data.cpp"), dict(x=x, out=np.zeros((16, 16), np.float32), unbound=0),
                aiv="data_vec")
    np.testing.assert_array_equal(r["out"][8:], x)
    assert not r["out"][:8].any()
    with pytest.raises(KernelError) as e:
        run_cpp(os.path.join(KDIR, "tile_data.cpp"), dict(x=x, out=np.zeros((16, 16), np.float32), unbound=1),
                aiv="data_vec")
    assert e.value.what.startswith("data() of a tile with no address")
    assert e.value.where.endswith("tile_data.cpp:21")


# -- the real assembler ------------------------------------------------------------------------------
PTOAS = os.environ.get("PTOAS")


@needs_cxx
@pytest.mark.skipif(not (PTOAS and shutil.which(PTOAS)), reason="set PTOAS to the ptoas binary")
def test_ptoas_output_runs_as_the_pto_file(cpp_cache, tmp_path):
    """A .pto of this suite through the real ptoas (its own allocation, sync insertion): its C++ -
    a ``__global__`` entry calling the Cube and Vector kernels, their bodies under the side
    macros - gives the numbers the .pto itself gives on ptopipe, and numpy's."""
    from ptopipe.codegen.pto_exec import run_pto
    src = os.path.join(KDIR, "ptoas_c2v_a3.pto")
    out = tmp_path / "k.cpp"
    r = subprocess.run([PTOAS, "--pto-arch=a3", "--enable-insert-sync", src, "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    args = c2v_args()
    args["gm_slot_buffer"] = args["gm_slot_buffer"].view(np.float32)
    del args["n"]
    cpp = run_cpp(str(out), {f"v{i}": a for i, a in enumerate(args.values(), 1)})
    pto = run_pto(src, inputs=dict(args))
    np.testing.assert_array_equal(cpp["v4"], pto.outputs["out"])
    gold = np.concatenate([args["a"][:16] @ args["b"], args["a"][16:] @ args["b"]]) + args["bias"]
    np.testing.assert_allclose(cpp["v4"], gold, rtol=1e-5, atol=1e-5)
