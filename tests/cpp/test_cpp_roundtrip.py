"""Round trip: a mixed / DSL example compiled and written as pto-isa C++ (``write_cpp``, what
``ptopipe compile --emit cpp`` writes) and run through ptopipe's own headers (``run_cpp``)
computes what numpy computes, in the same number of cycles and with the same checker
findings as running the example itself, on both platforms and both protocols."""
from __future__ import annotations

import os

import numpy as np
import pytest

import ptopipe  # noqa: F401  (installs the mixed compiler)
from ptopipe.driver.loader import load_module
from ptopipe.codegen import write_cpp
from ptopipe.cpp import run_cpp
from ptopipe.passes import compile_program

from cpp_support import cpp_cache, needs_cxx, pto_inst_precompiled  # noqa: F401 (fixtures)
from layers import ROOT

pytestmark = pytest.mark.usefixtures("pto_inst_precompiled")    # its kernels include <pto/pto-inst.hpp> first

EXAMPLES = sorted(f"{d}/{n[:-3]}" for d in ("mixed", "dsl")
                  for n in os.listdir(os.path.join(ROOT, "examples", d)) if n.endswith(".py"))
_COMBOS = [(p, q) for p in ("a2a3", "a5") for q in ("spec", "pto-isa")]
#: every example on every platform and protocol with PTOPIPE_CPP_FULL=1 (a C++ build each:
#: about 30 s of CPU); by default each example on one of the four, in turn, so the suite
#: still covers both platforms and protocols within its CPU budget
CASES = [(e, p, q) for i, e in enumerate(EXAMPLES) for k, (p, q) in enumerate(_COMBOS)
         if os.environ.get("PTOPIPE_CPP_FULL") == "1" or k == i % len(_COMBOS)]


@needs_cxx
@pytest.mark.parametrize("example,platform,protocol", CASES, ids=[f"{e}-{p}-{q}" for e, p, q in CASES])
def test_write_cpp_runs_like_the_example(cpp_cache, tmp_path, example, platform, protocol):
    m = load_module(os.path.join(ROOT, "examples", example + ".py"))
    sc = m.SCENARIO
    args = sc.args(sc.default_variant)
    program = m.KERNELS.source(**args) if hasattr(m, "KERNELS") else m.PROGRAM
    op = compile_program(program, platform, protocol=protocol)
    path = tmp_path / (example.replace("/", "_") + ".cpp")
    path.write_text(write_cpp(op, platform, protocol))
    given = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
    got = run_cpp(str(path), given, platform=platform, protocol=protocol)
    want = m.golden(args)
    for k, v in want.items():
        np.testing.assert_allclose(got[k], v, rtol=sc.rtol, atol=sc.atol, err_msg=k)
    py, _exp = sc.run(sc.default_variant, platform, protocol, 0)
    for k in want:
        np.testing.assert_array_equal(got[k], py.outputs[k])
    assert got.summary.cycles == py.summary.cycles
    assert [w for w, _ in got.summary.leaks] == [w for w, _ in py.summary.leaks]
    # (instruction counts may differ: the C++ of a two-lane TILE_NO_SPLIT kernel skips AIV1's data
    # ops, which the simulator runs on empty valid shapes - docs/cpp.md)
    assert [p["tiles"] for p in got.summary.pipes] == [p["tiles"] for p in py.summary.pipes]


def v2c_no_split_program():
    """A TILE_NO_SPLIT Vector kernel on a two-lane V2C pipe: AIV0 pushes 2x a tile of ``x``
    (AIV1 replays the pushes with an empty tile), the Cube pops each and computes t @ w."""
    import ptopipe.language as pl
    T, SLOT = 16, 16 * 16 * 4

    @pl.aiv(split=pl.TILE_NO_SPLIT)
    def vector(x: pl.Tensor[[2 * T, T], pl.f32], fifo: pl.Tensor[[4 * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="v2c", peer_func=cube)
        pl.aiv_initialize_pipe(pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=0, v2c_consumer_buf=peer.base, slot_num=4)
        for i in pl.range(2):
            v = pl.load(x, [i * T, 0], [T, T])
            pl.TPUSH(pl.muls(v, 2.0), peer, split=pl.TILE_NO_SPLIT)

    @pl.aic
    def cube(w: pl.Tensor[[T, T], pl.f32], out: pl.Tensor[[2 * T, T], pl.f32], fifo: pl.Tensor[[4 * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="v2c", size=4 * SLOT, base=pl.AUTO)
        pl.aic_initialize_pipe(pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=0, v2c_consumer_buf=buf.base, slot_num=4)
        right = pl.move(pl.load(w, [0, 0], [T, T], space=pl.Mat), space=pl.Right)
        for i in pl.range(2):
            t = pl.TPOP(buf, pl.Tile[[T, T], pl.f32, pl.Mat], split=pl.TILE_NO_SPLIT)
            acc = pl.matmul(pl.move(t, space=pl.Left), right)
            pl.TFREE(buf)
            pl.store(acc, [i * T, 0], out)
    return pl.program(cube, vector, name="v2c_no_split")


#: A2A3 (both protocols) gives the no-split pipe two lanes (A5 one)
V2C_NO_SPLIT = ([("a2a3", "spec"), ("a2a3", "pto-isa")] if os.environ.get("PTOPIPE_CPP_FULL") == "1"
                else [("a2a3", "pto-isa")])


@needs_cxx
@pytest.mark.parametrize("platform,protocol", V2C_NO_SPLIT)
def test_a_no_split_v2c_kernel_pushes_from_one_lane_in_cpp_too(cpp_cache, tmp_path, platform, protocol):
    """AIV1 of a two-lane TILE_NO_SPLIT kernel replays each TPUSH with an empty tile (the
    simulator's lane-1 replay); its C++ declares the pushed tile with a valid shape that is
    empty on AIV1 - pushing a full one would be a second writer of the whole slot."""
    from ptopipe.runtime import KernelSet
    import ptopipe
    rng = np.random.default_rng(3)
    args = dict(x=rng.integers(-3, 4, (32, 16)).astype(np.float32), w=rng.integers(-3, 4, (16, 16)).astype(np.float32),
                out=np.zeros((32, 16), np.float32), fifo=ptopipe.gm_buffer(4 * 1024))
    want = np.concatenate([(2 * args["x"][:16]) @ args["w"], (2 * args["x"][16:]) @ args["w"]])
    program = v2c_no_split_program()
    ks = KernelSet(program)
    py = ptopipe.run(ks.aic, ks.aiv, {k: v.copy() for k, v in args.items()}, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(py["out"], want)
    path = tmp_path / "v2c_no_split.cpp"
    path.write_text(write_cpp(compile_program(program, platform, protocol=protocol), platform, protocol))
    got = run_cpp(str(path), args, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(got["out"], want)
    assert got.summary.cycles == py.summary.cycles


def per_row_program():
    """A per-row scale loaded from GM as a [TM, 1] column (pl.load(rs, [r, 0], [TM, 1])) times a
    matmul result, and that result's row maxima stored as a [TM, 1] column: both one-column
    Vec tiles, DN, moved to and from GM."""
    import ptopipe.language as pl
    M = K = N = 16

    @pl.incore(split=pl.TILE_UP_DOWN)
    def per_row(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[K, N], pl.f32], rs: pl.Tensor[[M, 1], pl.f32],
                out: pl.Tensor[[M, N], pl.f32], mx: pl.Tensor[[M, 1], pl.f32]):
        al = pl.move(pl.load(a, [0, 0], [M, K], space=pl.Mat), space=pl.Left)
        bl = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        y = pl.mul(pl.move(pl.matmul(al, bl), space=pl.Vec), pl.load(rs, [0, 0], [M, 1]))
        pl.store(y, [0, 0], out)
        pl.store(pl.row_max(y), [0, 0], mx)
    return pl.program(per_row, name="per_row")


@needs_cxx
def test_a_per_row_column_moves_through_a_dn_global_tensor_in_cpp(cpp_cache, tmp_path):
    """pto-isa's Vec TLOAD moves only ND<-ND and DN<-DN: the C++ of a [TM, 1] column load views
    GM as a DN GlobalTensor (as ptoas's C++ of the same .pto does) and runs; numbers as numpy's."""
    from ptopipe.passes.slot_buffer import with_slot_buffer
    rng = np.random.default_rng(5)
    program = per_row_program()
    args = with_slot_buffer(program, dict(
        a=rng.integers(-3, 4, (16, 16)).astype(np.float32), b=rng.integers(-3, 4, (16, 16)).astype(np.float32),
        rs=rng.integers(-3, 4, (16, 1)).astype(np.float32), out=np.zeros((16, 16), np.float32),
        mx=np.zeros((16, 1), np.float32)))
    y = args["rs"] * (args["a"] @ args["b"])
    path = tmp_path / "per_row.cpp"
    path.write_text(write_cpp(compile_program(program, "a2a3", protocol="pto-isa"), "a2a3", "pto-isa"))
    got = run_cpp(str(path), args, platform="a2a3", protocol="pto-isa")
    np.testing.assert_array_equal(got["out"], y)
    np.testing.assert_array_equal(got["mx"], y.max(axis=1, keepdims=True))
