"""Kernels written as pto-isa's own tests and library kernels write them: a kernel that is a
function template runs as the instantiation a run names (``--aiv 'runTAdd<float, 64, 64>'``), a
bare template name is a ConfigError spelling the fix; a file that launches its kernels from a
host function with the device compiler's ``kernel<<<...>>>(args)`` syntax builds, its
diagnostics at its own lines; a view's runtime shape given through
the GlobalTensor's member type; logs written with ``cce::printf`` / ``printf`` go to the process's
stdout - stderr under ``--json``, whose stdout carries the report only."""
from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

import ptopipe
from ptopipe.cpp import run_cpp
from ptopipe.cpp.build import (device_source, find_kernels, host_code, without_explicit_instances,
                               without_launch_syntax)
from ptopipe.errors import CompileError, ConfigError, KernelError, ProtocolError

from cpp_support import cpp_cache, needs_cxx, pto_inst_precompiled  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("pto_inst_precompiled")    # its kernels include <pto/pto-inst.hpp> first

KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_kernels", "templated_vec.cpp")
INSTANCE = "runDouble<float, 16, 32>"
ROWS = 12


def _args() -> dict:
    src = (np.arange(16 * 32).reshape(16, 32) % 29).astype(np.float32) / 4
    return dict(out=np.zeros((16, 32), np.float32), src=src, rows=ROWS)


def _template_line() -> int:
    with open(KERNEL) as f:
        return next(i for i, ln in enumerate(f, 1) if "AICORE void runDouble" in ln)


@needs_cxx
def test_a_function_template_kernel_runs_as_the_instantiation_named(cpp_cache):
    """The instantiation's template arguments reach the build (the view's row count is the
    runtime one, given as ``typename G::Shape(rows)``) and its parameters' element types (``T``
    is float there: an array of another type is refused as for a ``float *``)."""
    a = _args()
    r = run_cpp(KERNEL, a, aiv=INSTANCE)
    want = np.zeros_like(a["out"])
    want[:ROWS] = 2 * a["src"][:ROWS]
    np.testing.assert_array_equal(r["out"], want)
    assert find_kernels(KERNEL, aiv=INSTANCE).aiv.elements == [np.dtype(np.float32)] * 2 + [None]


SCALARS = """#include <pto/pto-inst.hpp>
using namespace pto;
extern "C" __global__ AICORE void vec_scalars(__gm__ int32_t *out, uint32_t u, int64_t l, int8_t s, bool f, half h,
                                              __gm__ float *bias)
{
    Tile<TileType::Vec, int32_t, 1, 8> t;
    TASSIGN(t, 0x0);
    TEXPANDS(t, 0);
    t.SetValue(0, int32_t(u >> 16));
    t.SetValue(1, int32_t(l >> 32));
    t.SetValue(2, int32_t(s));
    t.SetValue(3, int32_t(f));
    t.SetValue(4, int32_t(float(h)));
    t.SetValue(5, int32_t(bias == nullptr));
    GlobalTensor<int32_t, Shape<1, 1, 1, 1, 8>, Stride<1, 1, 1, 8, 1>> g(out);
    TSTORE(g, t);
}
"""


@needs_cxx
def test_a_scalar_its_parameter_type_cannot_hold_is_refused(cpp_cache, tmp_path):
    """Each scalar parameter takes the values of its C type, up to its limits (a uint32 up to
    2**32 - 1, an int64 beyond 32 bits, a half up to 65504); a value the type cannot hold - which
    the conversion would turn into another (-1 into 4294967295, 70000 into a half's infinity) and
    run clean on - is a ConfigError naming the parameter, its type and the values it holds.  A
    pointer parameter given None gets a nullptr (pto-isa's matmul tests pass one for no bias)."""
    p = tmp_path / "scalars.cpp"
    p.write_text(SCALARS)
    args = dict(out=np.zeros(8, np.int32), u=2**32 - 1, l=2**40, s=-128, f=1, h=65504.0, bias=None)
    np.testing.assert_array_equal(run_cpp(str(p), args, aiv="vec_scalars")["out"][:6],
                                  [2**16 - 1, 2**8, -128, 1, 65504, 1])     # (bias=None: a nullptr)
    for name, v, what, span in (("u", -1, "is uint32_t, which cannot hold -1", "from 0 to 4294967295"),
                                ("s", 128, "is int8_t, which cannot hold 128", "from -128 to 127"),
                                ("h", 70000.0, "is half, whose largest value is 65504: 70000 would reach the kernel "
                                               "as an infinity", "within +-65504")):
        with pytest.raises(ConfigError) as ei:
            run_cpp(str(p), dict(args, **{name: v}), aiv="vec_scalars")
        e = ei.value
        assert f"parameter {name!r} {what}" in e.what, e.what
        assert e.where == "scalars.cpp:3 vec_scalars" and span in e.fix


#: kernels whose errors' fixes must be spelt in C++
CPP_FIXES = """#include <pto/pto-inst.hpp>
using namespace pto;
extern "C" __global__ AICORE void vec_nowhere(__gm__ float *out)
{
    using G = GlobalTensor<float, Shape<1, 1, 1, 1, 8>, Stride<1, 1, 1, 8, 1>>;
    Tile<TileType::Vec, float, 1, 8> t;
    TASSIGN(t, 0x0);
    TEXPANDS(t, 1.0f);
    G g;
    TSTORE(g, t);
}
extern "C" __global__ AICORE void vec_unbound(__gm__ float *out)
{
    Tile<TileType::Vec, float, 1, 8> t;
    if (out != nullptr) {
        TEXPANDS(t, 1.0f);
    }
}
extern "C" __global__ AICORE void vec_pop_mat(__gm__ float *out)
{
    using Pipe = TPipe<0, Direction::DIR_C2V, 16 * 32 * 4, 2>;
    Pipe pipe(nullptr, 0x0, 0);
    Tile<TileType::Mat, float, 8, 32> m;
    TPOP<Pipe, Tile<TileType::Mat, float, 8, 32>, TileSplitAxis::TILE_UP_DOWN>(pipe, m);
}
extern "C" __global__ AICORE void cube_push(__gm__ float *out)
{
    using Pipe = TPipe<0, Direction::DIR_C2V, 16 * 32 * 4, 2>;
    Pipe pipe(nullptr, 0x0, 0);
    TileAcc<float, 16, 32> acc;
    TASSIGN(acc, 0x0);
    TPUSH<Pipe, TileAcc<float, 16, 32>, TileSplitAxis::TILE_UP_DOWN>(pipe, acc);
}
"""


@needs_cxx
@pytest.mark.parametrize("kernel, cls, at, what, fix", [
    ("vec_nowhere", KernelError, "TSTORE(g, t)", "has no GM address yet",
     "GlobalTensor<T, Shape<...>, Stride<...>> g(ptr + offset)"),
    ("vec_unbound", KernelError, "TEXPANDS(t, 1.0f);\n    }", "has no address", "bind it with TASSIGN(tile, addr) before use"),
    ("vec_pop_mat", ProtocolError, "TPOP<", "the consumer tile must be Vec", "pop into a Tile<TileType::Vec, T, Rows, Cols>"),
])
def test_errors_at_a_cpp_line_spell_their_fix_in_cpp(cpp_cache, tmp_path, kernel, cls, at, what, fix):
    """An error at a C++ kernel's line spells its fix in pto-isa's C++ - construct a GlobalTensor
    from a __gm__ pointer, declare a ``Tile<TileType::Vec, ...>`` - never in the Python ISA's
    (``x.data()``, ``Tile(TileType.Vec, ...)``, ``Tile(..., addr=...)``)."""
    p = tmp_path / "fixes.cpp"
    p.write_text(CPP_FIXES)
    with pytest.raises(cls) as ei:
        run_cpp(str(p), dict(out=np.zeros(8, np.float32)), aiv=kernel, platform="a5",
                aic="cube_push" if kernel == "vec_pop_mat" else None)
    e = ei.value
    line = CPP_FIXES[:CPP_FIXES.index(at)].count("\n") + 1
    assert what in e.what and e.where.endswith(f"fixes.cpp:{line}"), e
    assert fix in e.fix, e.fix
    for python in (".data()", "Tile(", "addr="):
        assert python not in e.fix, e.fix


def test_integer_parameter_words_by_their_c_type():
    """Each integer kind the headers report (ptopipe_entry.hpp ``int_kind``) takes the values of
    its C type: unsigned ones no negative value, a uint64 beyond int64 as its bit pattern, a
    bool any integer (C++ converts it)."""
    from ptopipe.cpp.abi import int_word
    assert int_word("k", "m", "I", 2**32 - 1) == 2**32 - 1
    assert int_word("k", "m", "L", 2**64 - 1) == -1
    assert int_word("k", "f", "b", 7) == 7
    assert int_word("k", "s", "a", -128) == -128
    for kind, v in (("I", -1), ("a", 128), ("H", 1 << 16), ("l", 1 << 63)):
        with pytest.raises(ConfigError):
            int_word("k", "m", kind, v)
    # the kernel is named once, at its location (it was the head line's too)
    with pytest.raises(ConfigError) as ei:
        int_word("k.cpp:8 my_cube", "M", "i", 64.5)
    assert (ei.value.what, ei.value.where) == ("parameter 'M' is an integer, got 64.5", "k.cpp:8 my_cube"), ei.value


def test_a_bare_template_name_is_refused_with_its_arguments_to_spell(tmp_path):
    """A function template is no kernel until its arguments are spelled: naming it alone, with
    the wrong number of arguments, or naming a plain function with some, is a ConfigError at the
    function's line saying what to write (no build runs); an instantiation the file spells
    itself is the fix's example."""
    at = f"{os.path.relpath(KERNEL)}:{_template_line()}"
    with pytest.raises(ConfigError) as ei:
        find_kernels(KERNEL, aiv="runDouble")
    e = ei.value
    assert e.where == at
    assert "runDouble" in e.what and "is a function template (template <typename T, int Rows, int Cols>)" in e.what
    assert "--aiv 'runDouble<T, Rows, Cols>' with each parameter's type or value" in e.fix
    with pytest.raises(ConfigError) as ei:
        find_kernels(KERNEL, aiv="runDouble<float, 16>")
    assert ei.value.where == at and "takes 3 template argument(s)" in ei.value.what and "not 2" in ei.value.what
    with pytest.raises(ConfigError) as ei:
        find_kernels(KERNEL, aiv="runDouble<>")
    assert "not 0" in ei.value.what
    p = tmp_path / "k.cpp"
    p.write_text("#include <pto/pto-inst.hpp>\n"
                 "template <typename T, int N = 8>\nvoid body(__gm__ T *x) {}\n"
                 "void plain(__gm__ float *x) {}\n"
                 "void caller(__gm__ float *x) { body<float, 16>(x); }\n")
    with pytest.raises(ConfigError) as ei:
        find_kernels(str(p), aic="body")
    assert "--aic 'body<float, 16>'" in ei.value.fix and "with each" not in ei.value.fix
    assert find_kernels(str(p), aic="body<half>").aic.name == "body<half>"       # (a default for N)
    with pytest.raises(ConfigError) as ei:
        find_kernels(str(p), aiv="plain<float>")
    assert "plain" in ei.value.what and "not a function template" in ei.value.what
    assert ei.value.fix == "name it alone: --aiv plain"
    with pytest.raises(ConfigError) as ei:                    # (listed as a template when none is named)
        find_kernels(str(p))
    assert "functions: body<...>, caller, plain" in ei.value.fix


NAMESPACED = """#include <pto/pto-inst.hpp>
using namespace pto;
namespace RowTest {
template <typename T, int R, int C>
__global__ AICORE void runScale(__gm__ T *out, __gm__ T *src)
{
    using G = GlobalTensor<T, Shape<1, 1, 1, R, C>, Stride<1, 1, 1, C, 1>>;
    Tile<TileType::Vec, T, R, C> t;
    TASSIGN(t, 0x0);
    G gs(src), go(out);
    TLOAD(t, gs);
    TMULS(t, t, T(3));
    TSTORE(go, t);
}
// an overload taking more template arguments (pto-isa's tests declare such pairs)
template <typename T, int R, int C, int VR, int VC>
__global__ AICORE void runScale(__gm__ T *out, __gm__ T *src) {}
}  // namespace RowTest
"""


LAUNCHED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_kernels", "launched_c2v.cpp")


def _launched_args(rows: int, rng=None) -> dict:
    rng = rng or np.random.default_rng(5)
    return dict(out=np.zeros((rows, 32), np.float32), a=rng.integers(-3, 4, (rows, 32)).astype(np.float32),
                b=rng.integers(-3, 4, (32, 32)).astype(np.float32),
                bias=rng.integers(-3, 4, (rows, 32)).astype(np.float32), fifo=ptopipe.gm_buffer(2 * rows * 32 * 4))


@needs_cxx
@pytest.mark.parametrize("rows, platform, protocol", [(16, "a2a3", "pto-isa"), (32, "a5", "spec")])
def test_a_kernel_launched_with_the_device_syntax_runs_as_the_instantiation_named(cpp_cache, rows, platform,
                                                                                  protocol):
    """pto-isa's NPU tests launch their kernel template from a host function,
    ``runX<float, 16><<<1, nullptr, stream>>>(...)``, which no C++ compiler takes: the file
    builds without the launch configurations, and the __global__ that runs both sides (``if
    constexpr`` on the side it is compiled for) runs named as both.  What such a file includes
    besides builds too: the runtime's ``acl/acl.h`` (ptopipe's stub) and pto-isa's
    implementation headers (``<pto/npu/a2a3/TPush.hpp>``, left out: pto-inst.hpp declares all)."""
    k = f"runMatmulAdd<float, {rows}>"
    a = _launched_args(rows)
    r = run_cpp(LAUNCHED, a, aic=k, aiv=k, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(r["out"], a["a"] @ a["b"] + a["bias"])


def test_launch_syntax_is_blanked_in_place():
    """Only the launch configuration goes, each of its characters a space (newlines kept): every
    line and column of the file stays where the compiler's diagnostics name it; text without
    a launch, and shifts, are left alone."""
    text = "f<float, 4><<<1, nullptr,\n  stream>>>(x, y); z = a << b;\ng <<< n >>> ();\n"
    out = without_launch_syntax(text)
    assert out.splitlines() == ["f<float, 4>" + " " * 14, " " * 11 + "(x, y); z = a << b;", "g" + " " * 11 + "();"]
    assert without_launch_syntax("int x = a << b;\n") is None


def test_explicit_instantiations_are_blanked_in_place():
    """pto-isa's CPU tests instantiate their host launch function once per case (``template
    void LaunchTCvt<int4b_t, float, 64>(int4b_t *dst, float *src, void *stream);``, over lines):
    a run compiles the one kernel it names, so each explicit instantiation definition is blanked -
    one of an element type ptopipe has no form for no longer stops every case's build - with
    every line and column kept; templates, specialisations and other statements stay."""
    text = ("template <typename T, int N>\nvoid LaunchX(T *x, void *stream) { runX<T, N>(x); }\n"
            "template void LaunchX<float, 8>(float *x, void *stream);\n"
            "template void LaunchX<int4b_t, 8>(\n    int4b_t *x, void *stream);  // int4\n"
            "template <> void LaunchX<half, 4>(half *x, void *stream) {}\n"
            "extern template void LaunchX<int, 2>(int *x, void *stream);\n"
            "template struct Box<float>;\n")
    out = without_explicit_instances(text)
    assert len(out) == len(text) and out.count("\n") == text.count("\n")
    lines = out.splitlines()
    assert lines[:2] == text.splitlines()[:2] and lines[2].strip() == "" and lines[3].strip() == ""
    assert lines[4].strip() == "// int4" and lines[5:] == text.splitlines()[5:]
    assert device_source(text) == out
    assert without_explicit_instances(text.splitlines()[0] + "\n") is None


GTEST_FILE = """#include <pto/pto-inst.hpp>
#include "test_common.h"
#include "beside.h"
#include "pto/pto-inst.hpp"
#include <gtest/gtest.h>
using namespace PtoTestCommon;
constexpr int Scale(int n) { return 2 * n; }
struct Conf { static constexpr int N = Scale(8); };
template <typename T> AICORE void Fill(__gm__ T *out) { (void)out; }
template <typename T, int N = Conf::N>
AICORE void runK(__gm__ T *out) { Fill<T>(out); }
int HostOnly() { return ReadFile(); }
class KTest : public testing::Test {
protected:
    void SetUp() override {}
};
template <typename T> void k_test() { aclInit(nullptr); runK<T>(nullptr); }
TEST_F(KTest, case_float) { k_test<float>(); }
int main(int argc, char **argv) { testing::InitGoogleTest(&argc, argv); return RUN_ALL_TESTS(); }
"""


def test_the_host_code_of_a_gtest_file_is_left_out_of_its_kernels_build(tmp_path):
    """pto-isa's CPU tests define kernels in the main.cpp holding the gtest cases that launch
    them: a run builds the kernel it names and what it reaches - by name, from the kernel and
    from every line kept (a constexpr function a struct's constant calls) - while gtest, the
    suite's shared headers not beside the file, the fixture, the host helpers, the cases and
    main() are blanked in place (lines kept); a using-directive of a namespace the file does not
    declare gets an empty declaration first (a left-out header may have been what declared it);
    ptopipe's own headers and those beside the file stay.  A file without gtest is its own."""
    (tmp_path / "beside.h").write_text("")
    path = str(tmp_path / "main.cpp")
    out = device_source(GTEST_FILE, path, ["runK<float, 16>"])
    assert out is not None and out.count("\n") == GTEST_FILE.count("\n")
    got, was = out.splitlines(), GTEST_FILE.splitlines()
    blank = [i for i, ln in enumerate(got, 1) if not ln.strip()]
    assert blank == [2, 5, 12, 13, 14, 15, 16, 17, 18, 19], out
    assert got[0] == was[0] and got[2:4] == was[2:4] and got[6:11] == was[6:11]
    assert got[5] == "namespace PtoTestCommon {} " + was[5]
    left = host_code(GTEST_FILE, path, ["runK<float, 16>"])[1]
    assert left == [(2, '#include "test_common.h"'), (5, "#include <gtest/gtest.h>"), (12, "HostOnly()"),
                    (13, "the fixture KTest"), (17, "k_test()"), (18, "1 gtest case(s)"), (19, "main()")]
    assert device_source(GTEST_FILE.replace("#include <gtest/gtest.h>", ""), path, ["runK<float, 16>"]) is None


PTO_ISA = os.environ.get("PTO_ISA_ROOT")


@pytest.mark.skipif(not PTO_ISA, reason="PTO_ISA_ROOT (a pto-isa checkout) is not set")
def test_the_kernels_of_a_pto_isa_gtest_main_run_and_its_errors_say_what_was_left_out(cpp_cache):
    """pto-isa's tpush_a3 test defines its Cube and Vector kernels in main.cpp, beside the case
    that runs them on threads of the CPU simulator (its runtime's hooks, gtest, test_common.h):
    named, they run on ptopipe's cluster to the test's golden (c + (a + 1) @ b).  A kernel of such a
    file that does not compile says what the build left out (textract_quant's TEXTRACT of a
    Mat tile with a quantisation scalar, which pto-isa's NPU takes from an Acc tile only)."""
    st = os.path.join(PTO_ISA, "tests", "cpu", "st", "testcase")
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((32, 64)).astype(np.float32), rng.standard_normal((64, 512)).astype(np.float32)
    c = rng.standard_normal((32, 512)).astype(np.float32)
    r = run_cpp(os.path.join(st, "tpush_a3", "main.cpp"), dict(v1=c.copy(), v2=a, v3=b, v4=ptopipe.gm_buffer(2 * 65536),
                                                             v5=0),
                aic="main_incore_0_aic", aiv="main_incore_0_aiv", platform="a2a3")
    np.testing.assert_allclose(r["v1"], c + (a + 1) @ b, rtol=1e-5, atol=1e-4)
    k = "runTEXTRACT_Scalar<Params<int32_t, int8_t, 128, 64, 128, 64, 128, 64, 128, 64, 0, 0, false, false>>"
    with pytest.raises(CompileError) as ei:
        run_cpp(os.path.join(st, "textract_quant", "main.cpp"), dict(dst=np.zeros(8192, np.int8),
                src=np.zeros(8192, np.int32), quant=np.zeros(1, np.uint64)), aic=k, platform="a5")
    assert "the build leaves out the file's gtest host code: #include \"test_common.h\" (line 11)" in str(ei.value)


@pytest.mark.skipif(not PTO_ISA, reason="PTO_ISA_ROOT (a pto-isa checkout) is not set")
def test_pto_isa_tconcat_runs_its_implementation_entry_points_and_aggregate_sizes(cpp_cache):
    """pto-isa's tconcat test kernel calls ``TCONCAT_IMPL`` (the instruction's implementation entry
    point, which was undeclared) from ``LaunchTConcat<float, TilesSize{...}>`` (an aggregate template
    argument), overloaded by its index tiles: the run's arguments pick the plain form."""
    k = "LaunchTConcat<float, TilesSize{16, 64, 16, 32, 16, 32, 16, 32, 32}>"
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((16, 32)).astype(np.float32), rng.standard_normal((16, 32)).astype(np.float32)
    r = run_cpp(os.path.join(PTO_ISA, "tests", "cpu", "st", "testcase", "tconcat", "tconcat_kernel.cpp"),
                dict(out=np.zeros((16, 64), np.float32), src0=a, src1=b, stream=None), aiv=k)
    np.testing.assert_array_equal(r["out"], np.concatenate([a, b], axis=1))


@needs_cxx
def test_a_compile_error_in_a_launching_file_is_at_its_line_and_column(cpp_cache, tmp_path):
    """The file is compiled from a copy without its launch syntax; the error still names the
    file, the line and the column the user wrote."""
    with open(LAUNCHED) as f:
        text = f.read()
    text = text.replace("        TFREE<Pipe", "        int broken = ;\n        TFREE<Pipe", 1)
    p = tmp_path / "launched_bad.cpp"
    p.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "int broken = ;" in ln)
    k = "runMatmulAdd<float, 16>"
    with pytest.raises(CompileError) as ei:
        run_cpp(str(p), _launched_args(16), aic=k, aiv=k)
    assert ei.value.where == f"{p}:{line}:{text.splitlines()[line - 1].index(';') + 1}", str(ei.value)


def test_a_launching_file_whose_kernels_are_not_named_is_told_what_it_launches():
    """Without --aic / --aiv the fix names the instantiations the host function launches and
    that a kernel running both sides is named as both."""
    with pytest.raises(ConfigError) as ei:
        find_kernels(LAUNCHED)
    fix = ei.value.fix
    assert ("the file launches runMatmulAdd<float, 16> and 1 more" in fix
            and "--aic 'runMatmulAdd<float, 16>' --aiv 'runMatmulAdd<float, 16>'" in fix), fix


@needs_cxx
def test_a_kernel_in_a_namespace_or_overloaded_runs_as_cpp_names_it(cpp_cache, tmp_path):
    """A kernel template inside a namespace is named as C++ names it from outside
    (``RowTest::runScale<float, 8, 32>``), and of two overloads the one whose template takes
    the arguments given runs; unqualified, the name is found too."""
    p = tmp_path / "ns.cpp"
    p.write_text(NAMESPACED)
    src = np.arange(8 * 32, dtype=np.float32).reshape(8, 32)
    r = run_cpp(str(p), dict(out=np.zeros_like(src), src=src), aiv="RowTest::runScale<float, 8, 32>")
    np.testing.assert_array_equal(r["out"], 3 * src)
    assert find_kernels(str(p), aiv="runScale<float, 8, 32>").aiv.name == "RowTest::runScale<float, 8, 32>"
    other = next(i for i, ln in enumerate(NAMESPACED.splitlines(), 1) if ln.endswith("*src) {}"))
    assert find_kernels(str(p), aiv="runScale<float, 8, 32, 8, 8>").aiv.line == other     # the other overload
    with pytest.raises(ConfigError) as ei:
        find_kernels(str(p), aiv="Other::runScale<float, 8, 32>")
    assert "defines no function 'Other::runScale'" in ei.value.what and "RowTest::runScale<...>" in ei.value.fix


def test_kernel_templates_declared_pto_internal_and_ambiguous_overloads(tmp_path):
    """A kernel template declared ``PTO_INTERNAL`` (pto-isa's ``AICORE PTO_INLINE``, as its CPU
    tests write it) is a template; of two overloads that take the same template arguments (pto-isa's
    targreduceop: ``LaunchTROWARGMAX(out, src, stream)`` and ``(outVal, outIdx, src, stream)``) the
    one whose parameters the run's arguments name runs, exported by its function type as C++ picks
    an overload; arguments naming neither (or no arguments: a bare find) are a ConfigError naming
    both and their parameters - never a compile error in the generated wrapper."""
    p = tmp_path / "k.cpp"
    p.write_text("#include <pto/pto-inst.hpp>\n"
                 "template <typename T, int N>\nPTO_INTERNAL void runX(__gm__ T *x) {}\n"
                 "template <typename T, int N>\nPTO_INTERNAL void runX(__gm__ T *x, __gm__ T *y) {}\n")
    for params in (None, {"z"}):
        with pytest.raises(ConfigError) as ei:
            find_kernels(str(p), aiv="runX<float, 8>", params=params)
        assert "runX" in ei.value.what and "k.cpp:3" in ei.value.what and "k.cpp:5" in ei.value.what
        assert "line 3: x; line 5: x, y" in ei.value.fix
    for params, decls in (({"x"}, "__gm__ float *x"), ({"x", "y"}, "__gm__ float *x, __gm__ float *y")):
        f = find_kernels(str(p), aiv="runX<float, 8>", params=params).aiv
        assert f.params == sorted(params) and f.export == f"*static_cast<void (*)({decls})>(&runX<float, 8>)"
        assert f.elements == [np.dtype(np.float32)] * len(params)
    # (the command line: its --input names, before any file is read)
    from ptopipe.driver.cpp import notes
    assert isinstance(notes(str(p), None, "runX<float, 8>", params={"x", "y"}), list)
    p.write_text("#include <pto/pto-inst.hpp>\ntemplate <typename T, int N>\nPTO_INTERNAL void runX(__gm__ T *x) {}\n")
    assert find_kernels(str(p), aiv="runX<float, 8>").aiv.name == "runX<float, 8>"


def test_a_kernel_template_takes_an_aggregate_template_argument(tmp_path):
    """A template argument of a class type spelled as an aggregate (pto-isa's tconcat test runs
    ``LaunchTConcat<float, TilesSize{64, 128, ...}>``, C++20) is one argument: its braces' commas do
    not split it (it was a ConfigError counting three arguments for two to three), nor do a
    parenthesised comparison's."""
    p = tmp_path / "k.cpp"
    p.write_text("#include <pto/pto-inst.hpp>\nstruct Sizes { int rows; int cols; };\n"
                 "template <typename T, Sizes s, int N = 1>\nAICORE void runX(__gm__ T *x) {}\n")
    for name in ("runX<float, Sizes{16, 32}>", "runX<float, Sizes{16, 32}, (3 > 2)>"):
        f = find_kernels(str(p), aiv=name).aiv
        assert f.name == name and f.elements == [np.dtype(np.float32)]


def test_a_kernel_file_with_latin1_bytes_in_a_comment_is_found(tmp_path):
    """The compiler judges a kernel's bytes; finding its functions does not stop at a byte that
    is not UTF-8 (a Latin-1 comment)."""
    p = tmp_path / "k.cpp"
    p.write_bytes(b"#include <pto/pto-inst.hpp>\n// r\xe9sum\xe9 of the kernel\nvoid k(__gm__ float *x) {}\n")
    assert find_kernels(str(p), aiv="k").aiv.line == 3


def _cli(argv, cwd, capfd, monkeypatch) -> subprocess.CompletedProcess:
    from ptopipe.cli import main as cli_main
    monkeypatch.chdir(cwd)
    code = cli_main([str(a) for a in argv])
    out = capfd.readouterr()
    return subprocess.CompletedProcess(argv, code, out.out, out.err)


@needs_cxx
def test_a_kernels_printf_is_its_stdout_and_stderr_under_json(cpp_cache, tmp_path, capfd, monkeypatch):
    """What the kernel writes with cce::printf and printf reaches the process's stdout (C
    stdio's buffer flushed before the child running it ends); under ``check --json`` it goes to
    stderr, and stdout is the JSON report alone.  A rerun ptopipe makes on its own is silent."""
    pairs = []
    for k, v in _args().items():
        if isinstance(v, np.ndarray):
            np.save(tmp_path / f"{k}.npy", v)
            v = tmp_path / f"{k}.npy"
        pairs.append(f"{k}={v}")
    argv = [KERNEL, "--aiv", INSTANCE] + [a for p in pairs for a in ("--input", p)]
    logged = [f"runDouble: {ROWS} rows of 32", "runDouble: stored"]
    plain = _cli(["run", *argv, "--quiet"], tmp_path, capfd, monkeypatch)
    assert plain.returncode == 0, plain.stderr
    assert [ln for ln in plain.stdout.splitlines() if ln.startswith("runDouble")] == logged, plain.stdout
    r = _cli(["check", *argv, "--schedules", "0", "--json"], tmp_path, capfd, monkeypatch)
    assert r.returncode == 0, r.stderr
    (report,) = json.loads(r.stdout)
    assert report["scenario"] == "templated_vec.cpp" and report["failure"] is None, report
    assert [ln for ln in r.stderr.splitlines() if ln.startswith("runDouble")] == logged, r.stderr
    # a rerun the command makes on its own (the pto-isa protocol note's) prints nothing
    from ptopipe.driver.cpp import run_file
    outputs, _ = run_file(KERNEL, None, INSTANCE, pairs, silent=True)
    assert outputs["out"][0, 1] == 2 * _args()["src"][0, 1] and "runDouble" not in capfd.readouterr().out


def test_what_c_stdio_holds_in_the_child_is_written_before_it_ends(capfd):
    """A kernel's printf to a stdout that is not a terminal stays in C stdio's buffer: the child
    a run forks flushes it before ending (``_exit`` would drop it)."""
    import ctypes
    from ptopipe.cpp.runner import in_child

    kept = []                   # (the buffer outlives work: the child flushes it after)

    def work(crash_fd):
        libc = ctypes.CDLL(None)
        libc.setvbuf.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t]
        buf = ctypes.create_string_buffer(1 << 12)          # _IOFBF: held there until flushed
        kept.append(buf)
        libc.setvbuf(ctypes.c_void_p.in_dll(libc, "stdout"), buf, 0, len(buf))
        libc.printf(b"held by C stdio\n")
        return 7
    assert in_child(work, 30.0) == 7
    assert capfd.readouterr().out == "held by C stdio\n"
