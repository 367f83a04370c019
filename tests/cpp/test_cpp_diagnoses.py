"""What pto-isa's own kernels write, run as the device runs it and diagnosed in the kernel's
terms: a TFREE without a split (the library's default per platform), AIV1 constructing a
one-lane pipe it is not a peer of, two pipes on one FlagID, a two-way pipe's rings by the
FlagID the kernel declared."""
from __future__ import annotations

import os

import numpy as np
import pytest

from ptopipe import isa
from ptopipe.cpp import run_cpp
from ptopipe.errors import ConfigError, DeadlockError, ProtocolError

from cpp_support import cpp_cache, needs_cxx, pto_inst_precompiled  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("pto_inst_precompiled")    # its kernels include <pto/pto-inst.hpp> first

KDIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_kernels")


def kernel(name: str) -> str:
    return os.path.join(KDIR, name)


def line_of(name: str, text: str) -> int:
    with open(kernel(name)) as f:
        return next(i for i, ln in enumerate(f, 1) if text in ln)


def _c2v64(form):
    rng = np.random.default_rng(3)
    a, b = rng.integers(-3, 4, (64, 32)).astype(np.float32), rng.integers(-3, 4, (32, 32)).astype(np.float32)
    bias = rng.integers(-8, 9, (64, 32)).astype(np.float32)
    return dict(a=a, b=b, bias=bias, out=np.zeros((64, 32), np.float32), fifo=isa.gm_buffer(2 * 2048),
                form=form), a @ b + bias


@needs_cxx
def test_a_tfree_without_a_split_frees_as_the_platforms_library_does(cpp_cache):
    """pto-isa builds ``TFREE(pipe)`` and ``TFREE<Pipe>(pipe)``: on A2A3 the tile TFREE is a no-op
    (the TPOP freed the GM slot); on A5 it is ``cons.free()`` with its
    default TILE_UP_DOWN on every call, not every SyncPeriod-th, and the extra credit lets push
    #3 of a 2-slot ring write a slot the Vector still holds - reported at that TPUSH, naming
    the TFREE; with the split it runs.  No build warning: pto-isa has both forms."""
    name = "c2v_tfree_forms.cpp"
    with pytest.raises(ProtocolError) as ei:
        run_cpp(kernel(name), _c2v64(1)[0], platform="a5", protocol="pto-isa")
    err = ei.value
    assert err.where == f"{os.path.relpath(kernel('c2v_cube.hpp'))}:{line_of('c2v_cube.hpp', 'TPUSH<')}", str(err)
    free_at = f"{os.path.relpath(kernel(name))}:{line_of(name, 'TFREE<Pipe>(pipe);')}"
    assert f"the TFREE without a split at {free_at} frees on every call on A5" in err.fix, err.fix
    assert "give TFREE the split of its TPOP" in err.fix and "TILE_NO_SPLIT" not in str(err)
    args, want = _c2v64(2)
    r = run_cpp(kernel(name), args, platform="a5", protocol="pto-isa")
    np.testing.assert_array_equal(r["out"], want)
    assert not [w for w in r.summary.leaks if "TFREE" in str(w)], r.summary.leaks
    # A2A3's tile TFREE is a no-op, whatever its split (the TPOP freed the GM slot): the model
    from ptopipe.protocol.model import model_for
    from ptopipe.arch.vocab import Protocol, TileSplitAxis
    assert model_for(Protocol.PTO_ISA, "a2a3").unsplit_free is None
    assert model_for(Protocol.PTO_ISA, "a5").unsplit_free is TileSplitAxis.TILE_UP_DOWN


LONE = """#include <pto/pto-inst.hpp>
using namespace pto;
template <typename T> AICORE void body(__gm__ T *x) { %s }
extern "C" __global__ AICORE void %s(__gm__ float *x) { body<float>(x); }
"""


@needs_cxx
@pytest.mark.parametrize("protocol,unsplit", [("pto-isa", False), ("spec", True)])
def test_a_cube_tfree_of_another_split_kind_is_fixed_in_cpp(cpp_cache, protocol, unsplit):
    """The Cube frees a TILE_NO_SPLIT pop with a split (A5, a one-lane pipe): the fix gives the
    TPOP's split in C++, and offers ``TFREE(pipe)`` only where that frees as the TPOP took -
    under spec, not under pto-isa, whose TFREE(pipe) frees TILE_UP_DOWN, the same error."""
    name = "v2c_nosplit_free_split.cpp"
    x = np.ones((32, 16), np.float32)
    args = dict(x=x, w=np.ones((16, 16), np.float32), out=np.zeros((32, 16), np.float32),
                fifo=isa.gm_buffer(2 * 1024))
    with pytest.raises(ProtocolError) as ei:
        run_cpp(kernel(name), args, platform="a5", protocol=protocol)
    err = ei.value
    assert err.where == f"{os.path.relpath(kernel(name))}:{line_of(name, 'TFREE<')}", str(err)
    assert "TFREE<Pipe, TileSplitAxis::TILE_NO_SPLIT>(pipe)" in err.fix, err.fix
    assert ("or none: TFREE(pipe)" in err.fix) == unsplit, err.fix


@pytest.mark.parametrize("name,code,side", [
    ("k", "Tile<TileType::Vec, T, 8, 32> t; TASSIGN(t, 0);", "aiv"),          # the code decides
    ("k", "if (get_subblockid() != 0) return;", "aiv"),
    ("k", "TileAcc<T, 16, 16> acc; TileLeft<T, 16, 16> a; TileRight<T, 16, 16> b; TMATMUL(acc, a, b);", "aic"),
    ("vec_k", "TileAcc<T, 16, 16> acc;", "aic"),          # the code before the name's word
    ("vec_k", "(void)x;", "aiv"),                           # the name's word when the code says nothing
    ("k", "TileAcc<T, 16, 16> acc; Tile<TileType::Vec, T, 8, 32> t;", "mixed"),    # both
    ("k", "(void)x;", None)])                                                  # neither
def test_a_lone_kernel_runs_on_the_side_its_name_or_code_says(tmp_path, name, code, side):
    """A file whose only kernel is one ``__global__`` function needs no --aic / --aiv: Cube-only
    tiles or TMATMUL (AIC) against get_subblockid() or Vec tiles (AIV), else the name's word (aic /
    cube, aiv / vec: ptoas keeps a .pto function's name, ``matmul_vector_mix`` for a Cube kernel);
    Cube and Vec tiles both make it the mixed kernel ptoas writes for a .pto function using both,
    run on the AIC given a UB as that function runs (``Kernels.mixed``); code of neither side is
    still a ConfigError asking for --aic / --aiv."""
    from ptopipe.cpp.build import find_kernels
    from ptopipe.errors import ConfigError
    p = tmp_path / "lone.cpp"
    p.write_text(LONE % (code, name))
    if side is None:
        with pytest.raises(ConfigError) as ei:
            find_kernels(str(p))
        assert "--aic NAME --aiv NAME" in ei.value.fix
        return
    k = find_kernels(str(p))
    assert k.mixed == (side == "mixed")
    side = "aic" if side == "mixed" else side
    assert getattr(k, side).name == name and getattr(k, "aic" if side == "aiv" else "aiv") is None
    assert k.entry is None


def test_helpers_named_for_their_side_leave_the_global_kernels_found(tmp_path):
    """Helpers named as the kernels are (``CubeTask`` / ``VecTask``, each side's per-task code)
    do not hide the __global__ kernels: of several functions named for a side, its one
    __global__ function is the kernel."""
    from ptopipe.cpp.build import find_kernels
    p = tmp_path / "tasks.cpp"
    p.write_text("#include <pto/pto-inst.hpp>\nusing namespace pto;\n"
                 "AICORE inline void CubeTask(__gm__ float *x) { (void)x; }\n"
                 "AICORE inline void VecTask(__gm__ float *x) { (void)x; }\n"
                 'extern "C" __global__ AICORE void cube_kernel(__gm__ float *x) { CubeTask(x); }\n'
                 'extern "C" __global__ AICORE void vec_kernel(__gm__ float *x) { VecTask(x); }\n')
    k = find_kernels(str(p))
    assert (k.aic.name, k.aiv.name) == ("cube_kernel", "vec_kernel")


def test_kernels_it_cannot_tell_apart_are_listed_by_their_global_functions(tmp_path):
    """The fix lists the __global__ functions (the kernels), not the templates they call."""
    from ptopipe.cpp.build import find_kernels
    from ptopipe.errors import ConfigError
    p = tmp_path / "two.cpp"
    p.write_text("#include <pto/pto-inst.hpp>\nusing namespace pto;\n"
                 "template <int N> AICORE inline void a_impl(__gm__ float *x) { (void)x; }\n"
                 'extern "C" __global__ AICORE void first(__gm__ float *x) { a_impl<1>(x); }\n'
                 'extern "C" __global__ AICORE void second(__gm__ float *x) { a_impl<2>(x); }\n')
    with pytest.raises(ConfigError) as e:
        find_kernels(str(p))
    assert e.value.fix == "name them: --aic NAME --aiv NAME (__global__ functions: first, second)"
    # a __global__ of a namespace (pto-isa's kernels/manual benchmarks: an included header's) is
    # listed by its qualified name; it was a KeyError
    (tmp_path / "bench.hpp").write_text("#pragma once\nnamespace bench {\n"
                                        "__global__ AICORE void Baseline(__gm__ float *x) { (void)x; }\n}\n")
    p.write_text(p.read_text() + '#include "bench.hpp"\n')
    with pytest.raises(ConfigError) as e:
        find_kernels(str(p))
    assert e.value.fix == "name them: --aic NAME --aiv NAME (__global__ functions: bench::Baseline, first, second)"


def test_a_kernel_defined_in_a_local_header_is_located_there(tmp_path):
    """A kernel function of an included header is at the header's line (it was the kernel file's
    path with the header's line: k.cpp:6 of a 4-line k.cpp)."""
    from ptopipe.cpp.build import find_kernels
    from ptopipe.errors import ConfigError
    (tmp_path / "cube.hpp").write_text("#pragma once\n#include <pto/pto-inst.hpp>\nusing namespace pto;\n\n"
                                       "template <int N>\n__global__ AICORE void t_cube(__gm__ float *x) { (void)x; }\n")
    p = tmp_path / "k.cpp"
    p.write_text('#include "cube.hpp"\n\n__global__ AICORE void k_vec(__gm__ float *x) { (void)x; }\n')
    with pytest.raises(ConfigError) as e:
        find_kernels(str(p), aic="t_cube", aiv="k_vec")
    assert e.value.where == f"{tmp_path / 'cube.hpp'}:6", e.value.where
    assert find_kernels(str(p), aic="t_cube<1>", aiv="k_vec").aic.at(str(p)) == f"{tmp_path / 'cube.hpp'}:6"


@pytest.mark.parametrize("code,one_lane", [
    ("Tile<TileType::Vec, T, 8, 32> t; TASSIGN(t, 0);", True),
    ("Tile<TileType::Vec, T, 8, 32> t; TASSIGN(t, get_subblockid() * 1024);", False),
    ("// get_subblockid() in a comment only\n Tile<TileType::Vec, T, 8, 32> t;", True)])
def test_a_lone_vector_kernel_runs_on_aiv0_unless_it_asks_for_its_sub_block(tmp_path, code, one_lane):
    """A Vector kernel with no Cube kernel runs on one Vector core, as a Vector-only launch
    runs it on the device (pto-isa's single-core tests; a .pto Vector kernel without pipes):
    both sub-blocks only for a file that calls get_subblockid(), written for a mixed launch."""
    from ptopipe.cpp.build import find_kernels
    p = tmp_path / "lone.cpp"
    p.write_text(LONE % (code, "k"))
    assert find_kernels(str(p)).one_lane is one_lane
    assert find_kernels(str(p), aiv="k").one_lane is one_lane                 # named, the same
    # the note of either (ptopipe.driver.cpp.notes: what `ptopipe run` prints)
    from ptopipe.driver.cpp import notes
    said = notes(str(p), None, None)
    assert len(said) == 1
    assert ("no get_subblockid() in the file: run on AIV0, one Vector core" if one_lane else
            "reads its sub-block index (get_subblockid()): run on both Vector cores, AIV0 and AIV1") in said[0]


TWO_KERNELS = """#include <pto/pto-inst.hpp>
using namespace pto;
AICORE inline void fence() { set_flag(PIPE_V, PIPE_MTE3, EVENT_ID1); wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID1); }
extern "C" __global__ AICORE void vec_plain(__gm__ float *x) { (void)x; }
extern "C" __global__ AICORE void vec_fenced(__gm__ float *x) { fence(); }
extern "C" __global__ AICORE void vec_flagged(__gm__ float *x) { set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0); }
"""


def test_the_manual_default_follows_the_code_a_run_executes(tmp_path):
    """Events in the kernel that runs, or in a function it calls, make the manual mode the
    default; another kernel's events in the same file do not, nor a pipe_barrier alone."""
    from ptopipe.cpp.build import find_kernels
    p = tmp_path / "two.cpp"
    p.write_text(TWO_KERNELS)
    assert find_kernels(str(p), aiv="vec_flagged").own_events
    assert find_kernels(str(p), aiv="vec_fenced").own_events           # through the helper it calls
    assert not find_kernels(str(p), aiv="vec_plain").own_events         # a helper it does not call
    p.write_text(TWO_KERNELS.replace("{ fence(); }", "{ vec_flagged(x); }"))
    assert find_kernels(str(p), aiv="vec_fenced").own_events           # a __global__ it calls
    p.write_text(TWO_KERNELS.replace("set_flag(PIPE_V, PIPE_MTE3, EVENT_ID1); wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID1);",
                                     "pipe_barrier(PIPE_ALL);"))      # a barrier alone: auto-synchronised code ends so too
    assert not find_kernels(str(p), aiv="vec_plain").own_events         # vec_flagged's do not count
    assert not find_kernels(str(p), aiv="vec_fenced").own_events


@pytest.mark.parametrize("body,own", [
    ("TLOAD(t, g); TADD(t, t, t); TSTORE(g, t); pipe_barrier(PIPE_ALL);", False),     # ptoas's trailing one
    ("TLOAD(t, g); pipe_barrier(PIPE_ALL); TADD(t, t, t); TSTORE(g, t);", True),      # between instructions
    ("for (int i = 0; i < 4; ++i) { TLOAD(t, g); TADD(t, t, t); pipe_barrier(PIPE_ALL); }", True),  # a loop repeats it
    ("for (int i = 0; i < 4; ++i) { TLOAD(t, g); TADD(t, t, t); } pipe_barrier(PIPE_ALL);", False),
    ("// pipe_barrier(PIPE_ALL); TADD(t, t, t);\n TLOAD(t, g);", False),              # a comment
])
def test_pipe_barriers_between_instructions_make_the_manual_default(tmp_path, body, own):
    """A kernel that orders its pipes with pipe_barrier alone (no set_flag / wait_flag) runs in
    the manual mode too: in the auto mode the scoreboard would order the pipes a missing barrier
    leaves unordered, and the race would go unreported."""
    from ptopipe.cpp.build import find_kernels
    p = tmp_path / "fenced.cpp"
    p.write_text("#include <pto/pto-inst.hpp>\nusing namespace pto;\n"
                 "extern \"C\" __global__ AICORE void k(__gm__ float *x) {\n" + body + "\n}\n")
    assert find_kernels(str(p), aiv="k").own_events is own


@pytest.mark.parametrize("wrap,own", [
    ("#if 0\n{}\n#endif", False),                          # never compiled
    ("#ifdef BUG_EARLY_FREE\n{}\n#endif", False),          # a macro nothing defines
    ("#ifndef BUG_EARLY_FREE\n{}\n#endif", True),
    ("#if 0\n#else\n{}\n#endif", True),
    ("#if 1\n{}\n#else\nTADD(t, t, t);\n#endif", True),
    ("#ifdef __DAV_VEC__\n{}\n#endif", True),             # the compiler's own: may be compiled
    ("#define BUG 1\n#ifdef BUG\n{}\n#endif", True),      # the file defines it
    ("#if 0\n#elif 0\n#else\n{}\n#endif", True),
    ("#if SOME_LEVEL > 2\n{}\n#endif", True),             # not judged: taken as code
    ("#ifdef PTO_NPU_ARCH_A5\n{}\n#endif", True),         # the build defines it on A5
    ("#if 0\n#elifndef FOO\n{}\n#else\nTADD(t, t, t);\n#endif", True),     # C++23's #elifndef
    ("#if 1\n#elifdef FOO\n{}\n#endif", False),
])
def test_events_in_code_the_preprocessor_drops_do_not_make_the_manual_default(tmp_path, wrap, own):
    """Only the events of code the compiler compiles count: a set_flag / wait_flag pair under
    ``#if 0`` or an ``#ifdef`` of a macro nothing defines (a planted-bug switch) keeps the auto
    default; a condition ptopipe cannot judge keeps the pair as code."""
    from ptopipe.cpp.build import find_kernels
    pair = "set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);\nwait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);"
    p = tmp_path / "guarded.cpp"
    p.write_text("#include <pto/pto-inst.hpp>\nusing namespace pto;\n"
                 "extern \"C\" __global__ AICORE void k(__gm__ float *x) {\nTLOAD(t, g);\n"
                 + wrap.format(pair) + "\nTADD(t, t, t);\n}\n")
    assert find_kernels(str(p), aiv="k").own_events is own


def test_a_cxxflags_define_decides_an_ifdef(tmp_path, monkeypatch):
    from ptopipe.cpp.build import find_kernels
    p = tmp_path / "guarded.cpp"
    p.write_text("extern \"C\" __global__ AICORE void k(__gm__ float *x) {\nTLOAD(t, g);\n#ifdef WITH_EVENTS\n"
                 "set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);\nwait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);\n#endif\nTADD(t, t, t);\n}\n")
    assert not find_kernels(str(p), aiv="k").own_events
    for flags in ("-O1 -DWITH_EVENTS", "-D WITH_EVENTS", "-DWITH_EVENTS=1"):
        monkeypatch.setenv("CXXFLAGS", flags)
        assert find_kernels(str(p), aiv="k").own_events, flags
    monkeypatch.delenv("CXXFLAGS")
    (tmp_path / "cfg.h").write_text("#define WITH_EVENTS 1\n")      # a local header defines it
    p.write_text('#include "cfg.h"\n' + p.read_text())
    assert find_kernels(str(p), aiv="k").own_events


PER_PLATFORM = """#include <pto/pto-inst.hpp>
using namespace pto;
#if defined(PTO_NPU_ARCH_A5)
extern "C" __global__ AICORE void vec_k(__gm__ float *x, __gm__ float *y) { TSTORE(g, t); }
#else
extern "C" __global__ AICORE void vec_k(__gm__ float *x, __gm__ float *y@EXTRA@) { TSTORE(g, t); }
#endif
"""


@pytest.mark.parametrize("extra", ["", ", int32_t n"], ids=["same", "more"])
def test_a_kernel_defined_once_per_platform_is_that_platforms(tmp_path, extra):
    """A kernel defined in the two branches of an ``#if defined(PTO_NPU_ARCH_A5)`` is one kernel
    per build, not two overloads: for a platform, the definition its build compiles (its line,
    its parameters); with none given, the same signature is found whichever it is, and different
    ones are a ConfigError saying the platform decides."""
    from ptopipe.cpp.build import find_kernels
    p = tmp_path / "per_platform.cpp"
    p.write_text(PER_PLATFORM.replace("@EXTRA@", extra))
    a5, a2a3 = (find_kernels(str(p), aiv="vec_k", platform=q).aiv for q in ("a5", "a2a3"))
    assert (a5.line, a5.params) == (4, ["x", "y"])
    assert (a2a3.line, a2a3.params) == (6, ["x", "y", "n"] if extra else ["x", "y"])
    if not extra:
        assert find_kernels(str(p), aiv="vec_k").aiv.params == ["x", "y"]
        return
    with pytest.raises(ConfigError) as ei:
        find_kernels(str(p), aiv="vec_k")
    assert "vec_k is defined 2 times with different parameters" in ei.value.what, ei.value.what
    assert ei.value.where.endswith("per_platform.cpp:4") and "--platform" in ei.value.fix


PER_PLATFORM_RUN = """#include <pto/pto-inst.hpp>
using namespace pto;
using G = GlobalTensor<float, Shape<1, 1, 1, 16, 32>, Stride<1, 1, 1, 32, 1>>;
#if defined(PTO_NPU_ARCH_A5)
extern "C" __global__ AICORE void vec_k(__gm__ float *x, __gm__ float *y)
{
    Tile<TileType::Vec, float, 16, 32> t;
    TASSIGN(t, 0x0);
    G gx(x), gy(y);
    TLOAD(t, gx);
    TSTORE(gy, t);
}
#else
extern "C" __global__ AICORE void vec_k(__gm__ float *x, __gm__ float *y, int32_t twice)
{
    Tile<TileType::Vec, float, 16, 32> t;
    TASSIGN(t, 0x0);
    G gx(x), gy(y);
    TLOAD(t, gx);
    if (twice)
        TADD(t, t, t);
    TSTORE(gy, t);
}
#endif
"""


@needs_cxx
def test_api_kernels_defined_once_per_platform_run_each_platforms_definition(tmp_path, cpp_cache):
    """:func:`ptopipe.cpp.kernels` of a kernel defined once per platform with different
    parameters: each run takes its platform's definition - A5's copies x, A2/A3's (which takes
    ``twice`` too) doubles it - as ``--platform`` does on the command line."""
    from ptopipe.cpp import kernels
    from ptopipe.cpp.runner import in_child
    p = tmp_path / "per_platform_run.cpp"
    p.write_text(PER_PLATFORM_RUN)
    aic, aiv = kernels(str(p), aiv="vec_k")
    assert aic is None and aiv[1] is None
    x = np.arange(16 * 32, dtype=np.float32).reshape(16, 32) - 100
    for platform, extra, want in (("a5", {}, x), ("a2a3", {"twice": 1}, 2 * x)):
        def work(_fd, platform=platform, extra=extra):
            r = isa.run(aiv=aiv, args=dict(x=x, y=np.zeros_like(x), **extra), platform=platform)
            return r.outputs["y"].copy()
        np.testing.assert_array_equal(in_child(work), want, err_msg=platform)


A5_ONLY = """#include <pto/pto-inst.hpp>
using namespace pto;
#if defined(PTO_NPU_ARCH_A5)
extern "C" __global__ AICORE void vec_k(__gm__ float *x) { (void)x; }
#endif
"""


def test_api_kernels_errors_speak_the_apis_terms_and_the_runs_platform(tmp_path):
    """Through :func:`ptopipe.cpp.kernels` a kernel is named ``aiv='NAME'``, not ``--aiv NAME``,
    and a platform is the run's: a name the file does not define is a ConfigError saying
    ``aiv='nope'``; a kernel only A5's build defines runs nothing on A2/A3 - the run there is
    a ConfigError saying so (before any build), whose fix names neither option."""
    from ptopipe.cpp import kernels
    p = tmp_path / "a5_only.cpp"
    p.write_text(A5_ONLY)
    with pytest.raises(ConfigError) as ei:
        kernels(str(p), aiv="nope")
    assert ei.value.what.startswith("aiv='nope': ") and "defines no function 'nope'" in ei.value.what
    _, aiv = kernels(str(p), aiv="vec_k")
    with pytest.raises(ConfigError) as ei:
        isa.run(aiv=aiv, args=dict(x=np.zeros(8, np.float32)), platform="a2a3")
    e = ei.value
    assert e.what.startswith("on a2a3: aiv='vec_k': ") and "defines no function 'vec_k'" in e.what, e.what
    assert "found for a5" in e.fix and "--" not in e.what + e.fix, e.fix


MACRO_KERNEL = """#include <pto/pto-inst.hpp>
using namespace pto;
#define DOUBLE_KERNEL(NAME, T) \\
extern "C" __global__ AICORE void NAME(__gm__ T *out, __gm__ T *a) { \\
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0); }
#define DOUBLE_BODY(T) TADD(t, t, t)
DOUBLE_KERNEL(vec_double_f32, float)
extern "C" __global__ AICORE void vec_body(__gm__ float *out) { DOUBLE_BODY(float); }
"""


def test_a_function_a_macro_defines_is_no_kernel_and_the_error_says_why(tmp_path):
    """ptopipe finds kernels in the source as written: a function inside a ``#define`` is not
    one (its parameter NAME was taken for a kernel), and naming the kernel the macro makes says
    that the macro defines it; a kernel whose body a macro gives is found."""
    from ptopipe.cpp.build import find_kernels
    p = tmp_path / "macro.cpp"
    p.write_text(MACRO_KERNEL)
    k = find_kernels(str(p))
    assert k.aiv.name == "vec_body" and not k.own_events       # (the macro's set_flag is not its code)
    with pytest.raises(ConfigError) as ei:
        find_kernels(str(p), aiv="vec_double_f32")
    assert "defines no function 'vec_double_f32'" in ei.value.what
    assert "#define DOUBLE_KERNEL(NAME, T) defines functions, which ptopipe does not expand" in ei.value.fix


PASTED_KERNELS = """#include <pto/pto-inst.hpp>
using namespace pto;
template <typename T, int N>
AICORE void runScale(__gm__ T *out, __gm__ T *src) {}
#define DEF_SCALE(NAME, T, N) \\
    extern "C" __global__ AICORE void runScale_##NAME(__gm__ T *out, __gm__ T *src) \\
    { runScale<T, N>(out, src); }
DEF_SCALE(f32_8, float, 8)
DEF_SCALE(f16_16, half, 16)
"""


def test_a_kernel_a_macro_pastes_the_name_of_is_named_by_the_template_it_calls(tmp_path):
    """pto-isa's mgather / tadddeqrelu tests make their kernels with a macro that pastes the
    name (``void runMGATHER_##NAME(...)``) and calls a function template: naming such a kernel
    says which invocation makes it and the instantiation to name instead, with the invocation's
    arguments put in - which is then found; a name no invocation makes gets the general hint."""
    from ptopipe.cpp.build import find_kernels
    p = tmp_path / "pasted.cpp"
    p.write_text(PASTED_KERNELS)
    with pytest.raises(ConfigError) as ei:
        find_kernels(str(p), aiv="runScale_f16_16")
    assert "defines no function 'runScale_f16_16'" in ei.value.what
    assert ei.value.fix.endswith("DEF_SCALE(f16_16, half, 16) at line 9 defines it with a macro, which ptopipe "
                                 "does not expand (it finds the kernels in the source as written): name the "
                                 "function template it calls, --aiv 'runScale<half, 16>'"), ei.value.fix
    assert find_kernels(str(p), aiv="runScale<half, 16>").aiv.elements == [np.dtype(np.float16)] * 2
    with pytest.raises(ConfigError) as ei:
        find_kernels(str(p), aic="runScale_f64_2")
    assert ei.value.fix.endswith("#define DEF_SCALE(NAME, T, N) defines functions, which ptopipe does not expand "
                                 "(it finds the kernels in the source as written): write each kernel's signature "
                                 "as a function - a macro may still give its body, or name the function template "
                                 "a kernel of it calls with the macro's arguments, as C++ spells its "
                                 "instantiation (runScale<...>)"), ei.value.fix


FREED = """#include <pto/pto-inst.hpp>
using namespace pto;
extern "C" __global__ AICORE void vec(__gm__ float *x) {
    TSTORE(g, t);
    set_flag(PIPE_MTE3, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID0);
    TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
}
"""


def test_an_event_that_orders_a_tfree_alone_keeps_the_auto_default(tmp_path):
    """The set_flag / wait_flag(MTE3, V) pair ptopipe's compiler puts before an A5 pto-isa TFREE
    (and ptoas passes through from the .pto) orders the free signal, not the kernel's pipes: ptoas's
    C++ of an auto-synchronised kernel keeps the auto default.  The same pair elsewhere, or a pair
    of two events, is the kernel's own."""
    from ptopipe.cpp.build import find_kernels
    p = tmp_path / "freed.cpp"
    p.write_text(FREED)
    assert not find_kernels(str(p)).own_events
    p.write_text(FREED.replace("    TFREE<", "    TSTORE(g, t);\n    TFREE<"))
    assert find_kernels(str(p)).own_events
    p.write_text(FREED.replace("wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID0)", "wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID1)"))
    assert find_kernels(str(p)).own_events


SINGLE_CORE = """#include <pto/pto-inst.hpp>
using namespace pto;
extern "C" __global__ AICORE void k(__gm__ float *out, __gm__ float *src) {
    using G = GlobalTensor<float, Shape<1, 1, 1, 8, 32>, Stride<1, 1, 1, 32, 1>>;
    Tile<TileType::Vec, float, 8, 32> a, b;
    TASSIGN(a, 0x0 + 0x800 * block_idx); TASSIGN(b, 0x400 + 0x800 * (block_idx % block_num));
    G s(src), o(out);
    TLOAD(a, s); TLOAD(b, o);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0); wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    TADD(b, a, b);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0); wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    TSTORE(o, b);
}
"""


@needs_cxx
def test_a_single_core_kernel_like_pto_isas_tests_runs_once(tmp_path, cpp_cache, capsys):
    """out += src, as pto-isa's tests/cpu/st kernels read and write their output: on both
    sub-blocks AIV1's load of ``out`` would race AIV0's store (and add twice); on AIV0 it is
    the device's result, said in a note.  (Its tiles sit at ``block_idx`` offsets, as pto-isa's
    NPU test kernels place them: the device compiler's builtin, block 0 here.)"""
    from ptopipe.cli import main as cli_main
    p = tmp_path / "single.cpp"
    p.write_text(SINGLE_CORE)
    src, out = np.arange(256, dtype=np.float32).reshape(8, 32), np.ones((8, 32), np.float32)
    r = run_cpp(str(p), dict(out=out.copy(), src=src), platform="a2a3")
    np.testing.assert_array_equal(r["out"], out + src)
    assert r.summary.cores["AIV1"]["state"] == "idle"
    np.save(tmp_path / "src.npy", src)
    np.save(tmp_path / "out.npy", out)
    assert cli_main(["run", str(p), "--input", f"src={tmp_path / 'src.npy'}", "--input",
                     f"out={tmp_path / 'out.npy'}"]) == 0
    out = capsys.readouterr().out
    assert "note: a Vector kernel with no Cube kernel" in out
    assert "note: the kernel sets its own events" in out and "manual synchronisation mode" in out


@needs_cxx
def test_a_hand_written_kernel_with_events_runs_in_the_manual_mode(tmp_path, cpp_cache):
    """C++ that sets its own events runs as on the device, where only they order its pipes: a
    forgotten set_flag / wait_flag pair is a DataRaceError naming the two instructions, by
    default; sync="auto" lets the scoreboard order them."""
    from ptopipe.errors import DataRaceError
    p = tmp_path / "forgot.cpp"
    text = SINGLE_CORE.replace("    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0); wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);\n", "")
    assert text != SINGLE_CORE
    p.write_text(text)
    args = dict(out=np.ones((8, 32), np.float32), src=np.ones((8, 32), np.float32))
    with pytest.raises(DataRaceError) as ei:
        run_cpp(str(p), dict(args))
    assert ei.value.where.endswith(f"forgot.cpp:{text.splitlines().index('    TSTORE(o, b);') + 1}")
    assert "TLOAD" in ei.value.details          # (of `out`, on MTE2: nothing orders the store after it)
    np.testing.assert_array_equal(run_cpp(str(p), dict(args), sync="auto")["out"], 2 * args["out"])


TAIL_CALL = """#include <pto/pto-inst.hpp>
using namespace pto;
template <int R> AICORE void body()
{
    Tile<TileType::Vec, float, R, 32> a;
    Tile<TileType::Vec, float, 8, 32> b;
    TASSIGN(a, 0x0);
    TASSIGN(b, 0x1000);
    TADD(a, a, b);
}
extern "C" __global__ AICORE void vec_k(__gm__ float *x) { body<16>(); }
"""


@needs_cxx
def test_an_entry_ending_in_its_body_call_is_named_at_the_builds_own_flags(tmp_path, cpp_cache, monkeypatch):
    """Optimised (here a user's -O2, where every compiler makes sibling calls; not the suite's
    -O0), a kernel entry whose last statement calls its templated body keeps its frame (the
    build asks for no sibling calls): an error in the body names the entry's line as its caller."""
    from cpp_support import LEAN
    from ptopipe.errors import KernelError
    monkeypatch.setenv("CXXFLAGS", "-O2 " + LEAN)
    p = tmp_path / "tail.cpp"
    p.write_text(TAIL_CALL)
    with pytest.raises(KernelError) as ei:
        run_cpp(str(p), dict(x=np.zeros(8, np.float32)), platform="a2a3")
    lines = TAIL_CALL.splitlines()
    at = f"{p}:{lines.index('    TADD(a, a, b);') + 1}"
    entry = f"{p}:{next(i for i, ln in enumerate(lines, 1) if ln.startswith('extern'))}"
    assert ei.value.where == f"{at} (called from {entry})", ei.value.where


@needs_cxx
def test_an_error_in_a_helper_names_the_kernel_lines_that_called_it(cpp_cache):
    """An instruction's site is its own line (``__builtin_LINE``); an error there also names the
    kernel lines that called the helper holding it, innermost first - from the failing call's
    native return addresses and the build's line tables - as the Python front end's "called
    from": here the second of two calls is the wrong one."""
    from ptopipe.errors import KernelError
    name = "helper_error.cpp"
    with pytest.raises(KernelError) as ei:
        run_cpp(kernel(name), dict(x=np.ones((8, 32), np.float32)), platform="a2a3", protocol="pto-isa")
    at = os.path.relpath(kernel(name))
    assert ei.value.where == (f"{at}:{line_of(name, 'TADD(')} (called from {at}:{line_of(name, 'addInto(d, a);')}, "
                              f"from {at}:{line_of(name, 'twice(big, a);')})"), ei.value.where


#: M28 in C++ (a pto-isa TPipe of 4 slots on A5): the Vector cores hold three popped tiles, free one
#: and pop two more - fine under spec, a deadlock under pto-isa, whose SyncPeriod (2) withholds the
#: credit (the TFREE tests the latest TPOP's index, #2, which does not end a period either; holding
#: four and freeing one would test #3, which does, and send the credit early)
HOLD_FOUR = """#include <pto/pto-inst.hpp>
using namespace pto;
using Pipe = TPipe<0, Direction::DIR_C2V, 16 * 16 * 4, 4, 4>;
using V = Tile<TileType::Vec, float, 8, 16>;
extern "C" __global__ AICORE void cube_push(__gm__ float *x)
{
    Pipe pipe(nullptr, 0x0, 0);
    Tile<TileType::Mat, float, 16, 16> m;
    TileLeft<float, 16, 16> a;
    TileRight<float, 16, 16> b;
    TileAcc<float, 16, 16> acc;
    TASSIGN(m, 0x0);
    TASSIGN(a, 0x0);
    TASSIGN(b, 0x0);
    TASSIGN(acc, 0x0);
    GlobalTensor<float, Shape<1, 1, 1, 16, 16>, Stride<1, 1, 1, 16, 1>> g(x);
    TLOAD(m, g);
    TMOV(a, m);
    TMOV(b, m);
    TMATMUL(acc, a, b);
    for (int i = 0; i < 5; ++i) {
        TPUSH<Pipe, TileAcc<float, 16, 16>, TileSplitAxis::TILE_UP_DOWN>(pipe, acc);
    }
}
extern "C" __global__ AICORE void vec_hold(__gm__ float *x)
{
    Pipe pipe(nullptr, 0x0, 0);
    V t0, t1, t2, t3, t4;
    TPOP<Pipe, V, TileSplitAxis::TILE_UP_DOWN>(pipe, t0);
    TPOP<Pipe, V, TileSplitAxis::TILE_UP_DOWN>(pipe, t1);
    TPOP<Pipe, V, TileSplitAxis::TILE_UP_DOWN>(pipe, t2);
    TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
    TPOP<Pipe, V, TileSplitAxis::TILE_UP_DOWN>(pipe, t3);
    TPOP<Pipe, V, TileSplitAxis::TILE_UP_DOWN>(pipe, t4);
    for (int i = 0; i < 4; ++i) {
        TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
    }
}
"""


@needs_cxx
def test_a_credit_syncperiod_withholds_is_fixed_in_cpp_terms(cpp_cache, tmp_path):
    """The deadlock of a credit pto-isa's SyncPeriod withholds names the arithmetic, and its fix
    is one a C++ kernel can take: a pto-isa TPipe takes no SyncPeriod (it follows from SlotNum),
    so the fix names the TMPipe, which frees on every release - not the Python ISA's
    ``sync_period=1``."""
    p = tmp_path / "hold_four.cpp"
    p.write_text(HOLD_FOUR)
    args = dict(x=np.ones((16, 16), np.float32))
    with pytest.raises(DeadlockError) as ei:
        run_cpp(str(p), args, aic="cube_push", aiv="vec_hold", platform="a5", protocol="pto-isa")
    e = ei.value
    assert "the free credit is withheld by pto-isa's SyncPeriod" in str(e), str(e)
    assert "drive it with a TMPipe, which frees on every release" in e.fix and "sync_period=" not in e.fix, e.fix
