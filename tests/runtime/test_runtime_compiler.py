"""Mixed ``@pl.incore`` programs are compiled by the compiler their kernel set was given
(``KernelSet(source, compiler=)``, default the pass pipeline): an explicit parameter, so two
kernel sets in one process each run through their own compiler."""
import numpy as np

import ptopipe
import ptopipe.language as pl
from ptopipe.runtime import KernelSet, kernels, run
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime.kernels import default_compiler

M = K = N = 16


def _program(c: float, name: str):
    @pl.incore(split=pl.TILE_UP_DOWN)
    def mm(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[K, N], pl.f32], out: pl.Tensor[[M, N], pl.f32]):
        al = pl.move(pl.load(a, [0, 0], [M, K], space=pl.Mat), space=pl.Left)
        bl = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        v = pl.move(pl.matmul(al, bl), space=pl.Vec)
        pl.store(pl.adds(v, c), [0, 0], out)
    return pl.program(mm, name=name)


def _args(prog):
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (M, K)).astype(np.float32)
    b = rng.integers(-3, 4, (K, N)).astype(np.float32)
    return with_slot_buffer(prog, dict(a=a, b=b, out=np.zeros((M, N), np.float32)))


def test_each_kernel_set_runs_through_its_own_compiler(no_hang):
    plus_one, plus_two = _program(1.0, "plus_one"), _program(2.0, "plus_two")
    seen_a, seen_b = [], []

    def comp_a(prog, platform, protocol):
        seen_a.append((prog.sym_name, getattr(platform, "name", platform), protocol))
        return default_compiler(prog, platform, protocol)

    def comp_b(prog, platform, protocol):          # compiles another program: what it returns runs
        seen_b.append((prog.sym_name, getattr(platform, "name", platform), protocol))
        return default_compiler(plus_two, platform, protocol)

    ka, kb = KernelSet(plus_one, compiler=comp_a), KernelSet(plus_one, compiler=comp_b)
    for platform in ("a2a3", "a5"):
        args = _args(plus_one)
        golden = args["a"] @ args["b"]
        ra = ptopipe.run(ka.aic, ka.aiv, dict(args, out=args["out"].copy()), platform=platform)
        rb = ptopipe.run(kb.aic, kb.aiv, dict(args, out=args["out"].copy()), platform=platform,
                         protocol="pto-isa")
        np.testing.assert_array_equal(ra["out"], golden + 1)
        np.testing.assert_array_equal(rb["out"], golden + 2)
    assert seen_a == [("plus_one", "a2a3", "spec"), ("plus_one", "a5", "spec")]
    assert seen_b == [("plus_one", "a2a3", "pto-isa"), ("plus_one", "a5", "pto-isa")]


def test_the_default_compiler_and_the_shortcuts(no_hang):
    prog = _program(1.0, "p")
    args = _args(prog)
    res = run(prog, dict(args), platform="a5")
    np.testing.assert_array_equal(res["out"], args["a"] @ args["b"] + 1)
    calls = []
    aic, aiv = kernels(prog, lambda *a: calls.append(a[1:]) or default_compiler(*a))
    res = ptopipe.run(aic, aiv, dict(args), platform="a2a3")
    np.testing.assert_array_equal(res["out"], args["a"] @ args["b"] + 1)
    assert [(getattr(p, "name", p), proto) for p, proto in calls] == [("a2a3", "spec")]
