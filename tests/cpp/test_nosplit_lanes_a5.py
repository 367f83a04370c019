"""The lanes of an A5 TILE_NO_SPLIT pipe, one rule for every front end
(``ptopipe.protocol.model.nosplit_one_lane``): AIV0 alone pushes, pops and frees each whole
tile, under spec and pto-isa alike.  A ``.pto`` file and ptoas's C++ of it
(``TPipe<..., IsNoSplit = true>``, the Vector body under ``if (get_subblockid() == 0)``) give
the same pipe (one lane, one pop per tile), the same results and numpy's.  ``PTOAS=/path/to/ptoas``
also assembles the file with the real ptoas and runs its output.  Under ``--protocol
pto-isa-cpusim`` the pipe has that one lane too, and the simulator's second Vector thread only
keeps slots from being released; ``PTO_ISA_ROOT=/path/to/pto-isa`` also runs the kernel on
pto-isa's CPU simulator."""
from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

from ptopipe import isa
from ptopipe.codegen.pto_exec import run_pto
from ptopipe.cpp import run_cpp
from ptopipe.errors import ConfigError, DeadlockError

from cpp_support import cpp_cache, needs_cxx  # noqa: F401 (fixture)

KDIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_kernels")
PTO = os.path.join(KDIR, "nosplit_c2v_a5.pto")
#: ptoas's C++ of PTO (``ptoas --pto-arch=a5 --enable-insert-sync``)
CPP = os.path.join(KDIR, "ptoas_nosplit_c2v_a5.cpp")
PTOAS = os.environ.get("PTOAS")
#: pto-isa's A5 one-lane form: ``tiles`` tiles through a 2-slot IsNoSplit pipe, AIV0 alone
#: constructing and popping it
ONE_LANE = os.path.join(KDIR, "nosplit_both_lanes.cpp")
PTO_ISA = os.environ.get("PTO_ISA_ROOT")


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


def run_one_lane(tiles: int):
    return run_cpp(ONE_LANE, dict(fifo=isa.gm_buffer(4096), tiles=tiles), aic="cube_one_lane",
                   aiv="vec_one_lane", platform="a5", protocol="pto-isa-cpusim")


@needs_cxx
def test_the_cpu_simulator_runs_the_one_lane_pipe_until_it_needs_a_slot_back(cpp_cache):
    """pto-isa's CPU simulator (include/pto/cpu/TPush.hpp) starts with every slot free and, with
    two Vector threads, releases a TILE_NO_SPLIT C2V slot after both freed it
    (``remaining_consumers = get_subblockdim()``): the one-lane kernel moves SlotNum tiles, and
    push #SlotNum waits forever - the simulator's stall, at that push.  The pipe is the device's
    one-lane pipe there too: AIV1, which never builds it, holds up no push before that."""
    assert [p["lanes"] for p in run_one_lane(2).summary.pipes] == [1]
    with pytest.raises(DeadlockError) as ei:
        run_one_lane(3)
    e = ei.value
    assert e.where == f"{os.path.relpath(ONE_LANE)}:{_line(ONE_LANE, 'the push')}"
    assert e.what.startswith("deadlock: pto-isa's CPU simulator causes this stall, not the kernel") and \
        "AIC's push #2" in e.what
    assert "sub-block dim of 1" in e.fix


def _line(path: str, text: str) -> int:
    with open(path) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


MAIN = """
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <thread>
int main(int, char **argv)
{
    const int64_t tiles = std::atoi(argv[1]);
    const uint32_t vdim = std::atoi(argv[2]);
    pto::NPU_MEMORY_INIT(pto::NPUArch::A5);
    static float fifo[1024];
    std::barrier<> go(3);
    auto core = [&](uint32_t sub, uint32_t dim, auto f) {
        pto::cpu_sim::ScopedExecutionContext ctx(0, sub, dim);
        go.arrive_and_wait();
        f();
    };
    std::thread aic([&] { core(0, 1, [&] { cube_one_lane(fifo, tiles); }); });
    std::thread aiv0([&] { core(0, vdim, [&] { vec_one_lane(fifo, tiles); }); });
    std::thread aiv1([&] { core(1, vdim, [&] { vec_one_lane(fifo, tiles); }); });
    aic.join(); aiv0.join(); aiv1.join();
    return 0;
}
"""


@needs_cxx
@pytest.mark.skipif(not PTO_ISA, reason="PTO_ISA_ROOT (a pto-isa checkout) is not set")
def test_the_one_lane_pipe_stalls_where_pto_isas_cpu_simulator_does(cpp_cache, tmp_path):
    """The kernel built against pto-isa's headers (``-D__CPU_SIM``) and launched with two Vector
    threads ends with 1 and 2 tiles and hangs with 3, as ``--protocol pto-isa-cpusim`` says;
    with a sub-block dim of 1 (the fix the stall names) 3 tiles run."""
    from test_pto_isa_cpu_sim import build
    with open(ONE_LANE) as f:
        r = build(tmp_path, f.read(), MAIN)
    assert r.returncode == 0, r.stderr[-4000:]

    def ends(tiles, vdim):
        try:
            subprocess.run([str(tmp_path / "k"), str(tiles), str(vdim)], check=True, timeout=10)
            return True
        except subprocess.TimeoutExpired:
            return False
    for tiles in (1, 2, 3):
        try:
            run_one_lane(tiles)
            stalls = False
        except DeadlockError:
            stalls = True
        assert ends(tiles, 2) is not stalls, tiles
    assert ends(3, 1)


TWO_LANES_MAIN = """
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <thread>
int main(int, char **argv)
{
    const int64_t tiles = std::atoi(argv[1]), lanes = std::atoi(argv[2]);
    pto::NPU_MEMORY_INIT(pto::NPUArch::A5);
    static float a[256], eye[256], out[512];
    for (int i = 0; i < 256; ++i) { a[i] = float(i); eye[i] = (i / 16 == i % 16) ? 1.0f : 0.0f; }
    for (int i = 0; i < 512; ++i) out[i] = -1.0f;
    std::barrier<> go(3);
    auto core = [&](uint32_t sub, uint32_t dim, auto f) {
        pto::cpu_sim::ScopedExecutionContext ctx(0, sub, dim);
        go.arrive_and_wait();
        f();
    };
    std::thread aic([&] { core(0, 1, [&] { cube_two_lanes(a, eye, tiles); }); });
    std::thread aiv0([&] { core(0, 2, [&] { vec_two_lanes(out, tiles, lanes); }); });
    std::thread aiv1([&] { core(1, 2, [&] { vec_two_lanes(out, tiles, lanes); }); });
    aic.join(); aiv0.join(); aiv1.join();
    std::fwrite(out, sizeof(float), 512, stdout);
    return 0;
}
"""


@needs_cxx
@pytest.mark.skipif(not PTO_ISA, reason="PTO_ISA_ROOT (a pto-isa checkout) is not set")
def test_the_two_lane_kernel_gives_the_cpu_simulators_numbers(cpp_cache, tmp_path):
    """Built against pto-isa's headers and run with two Vector threads, the dual-lane kernel
    ends and stores what ``--protocol pto-isa-cpusim`` gives: the tile on AIV0, zeros on AIV1;
    with AIV1 popping nothing it ends with 2 tiles and hangs with 3, as that protocol says."""
    from test_pto_isa_cpu_sim import build
    with open(ONE_LANE) as f:
        r = build(tmp_path, f.read(), TWO_LANES_MAIN)
    assert r.returncode == 0, r.stderr[-4000:]
    run = subprocess.run([str(tmp_path / "k"), "3", "2"], capture_output=True, timeout=20, check=True)
    _, res = run_two_lanes("pto-isa-cpusim")
    np.testing.assert_array_equal(np.frombuffer(run.stdout, np.float32).reshape(32, 16), res["out"])
    subprocess.run([str(tmp_path / "k"), "2", "1"], capture_output=True, timeout=20, check=True)
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([str(tmp_path / "k"), "3", "1"], capture_output=True, timeout=10)


def run_two_lanes(protocol: str, tiles: int = 3, lanes: int = 2):
    eye = np.eye(16, dtype=np.float32)
    a = np.arange(256, dtype=np.float32).reshape(16, 16)
    return a, run_cpp(ONE_LANE, dict(a=a, eye=eye, out=np.full((32, 16), -1, np.float32), tiles=tiles, lanes=lanes),
                      aic="cube_two_lanes", aiv="vec_two_lanes", platform="a5", protocol=protocol)


@needs_cxx
def test_the_cpu_simulator_hands_the_second_lane_of_a_nosplit_pipe_zeros(cpp_cache):
    """Both Vector lanes pop and free every tile of an A5 IsNoSplit pipe (pto-isa's CPU
    simulator's dual-lane protocol, cpu/TPush.hpp): under ``pto-isa-cpusim`` the kernel runs as
    the simulator runs it - AIV0 gets the tile, AIV1 zeros (a warning at its TPOP says so), a
    slot is released once both lanes freed it, so 3 tiles pass the 2 slots; under ``pto-isa``
    (the device: AIV0 is the pipe's one lane) AIV1's TPOP is a ConfigError there."""
    a, res = run_two_lanes("pto-isa-cpusim")
    np.testing.assert_array_equal(res["out"][:16], a)
    np.testing.assert_array_equal(res["out"][16:], 0)
    assert [(p["lanes"], p["pushes"], p["pops"], p["frees"]) for p in res.summary.pipes] == [(2, 3, 6, 6)]
    pop = f"{os.path.relpath(ONE_LANE)}:{_line(ONE_LANE, 'both lanes pop')}"
    assert any("3 TPOPs of" in w and "on AIV1 got zeros" in w and str(loc) == pop for w, loc in res.summary.leaks)
    with pytest.raises(ConfigError) as ei:
        run_two_lanes("pto-isa")
    assert ei.value.where == pop and ei.value.what.startswith("TPOP on AIV1")
    # pto-isa's device form, AIV1 constructing the pipe and popping nothing: the simulator runs
    # SlotNum tiles (no destructor drain waits for AIV1) and stalls at push #SlotNum
    _, res = run_two_lanes("pto-isa-cpusim", tiles=2, lanes=1)
    assert [(p["lanes"], p["pops"]) for p in res.summary.pipes] == [(1, 2)]
    with pytest.raises(DeadlockError) as ei:
        run_two_lanes("pto-isa-cpusim", tiles=3, lanes=1)
    assert ei.value.what.startswith("deadlock: pto-isa's CPU simulator causes this stall") and \
        "AIV1 never pops it" in ei.value.what and "AIC's push #2" in ei.value.what


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
