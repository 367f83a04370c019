"""Two popped tiles of one type held at once ("two GEMMs, one epilogue", SwiGLU-like) in the
``.pto`` the writer makes.

ptoas folds identical ``pto.declare_tile`` ops (pure, no operands) into one C++ Tile, so two
``declare_tile`` + ``pto.tpop`` pairs of one type become ``TPOP(pipe, v); TPOP(pipe, v)`` and
the epilogue reads the second tile twice.  The writer pops a tile held together with an
earlier one of its type into a ``pto.alloc_tile`` (never folded), on a pipe with a handle;
pops that are not held together keep ``declare_tile``.  With ``PTOAS`` set, the real
assembler's C++ of the file, run through ptopipe, gives numpy's numbers on A2A3 and A5.
"""
import os
import re
import subprocess

import numpy as np
import pytest

import ptopipe.language as pl
from ptopipe.codegen import read_pto, write_pto
from ptopipe.codegen.pto_load import PTO_PASSES
from ptopipe.ir import first_difference, structural_equal
from ptopipe.passes import PassManager, compile_program
from ptopipe.passes.manager import PassContext

M, K, N, TM = 32, 32, 32, 16


@pl.incore(split=pl.TILE_UP_DOWN)
def held(a: pl.Tensor[[M, K], pl.f32], b1: pl.Tensor[[K, N], pl.f32], b2: pl.Tensor[[K, N], pl.f32],
         out: pl.Tensor[[M, N], pl.f32]):
    w1 = pl.move(pl.load(b1, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
    w2 = pl.move(pl.load(b2, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
    for i in pl.range(M // TM):
        a_l0 = pl.move(pl.load(a, [i * TM, 0], [TM, K], space=pl.Mat), space=pl.Left)
        y1 = pl.move(pl.matmul(a_l0, w1), space=pl.Vec)
        y2 = pl.move(pl.matmul(a_l0, w2), space=pl.Vec)
        pl.store(pl.sub(pl.relu(y1), y2), [i * TM, 0], out)


@pl.incore(split=pl.TILE_UP_DOWN)
def in_turn(a: pl.Tensor[[M, K], pl.f32], b1: pl.Tensor[[K, N], pl.f32], b2: pl.Tensor[[K, N], pl.f32],
            out: pl.Tensor[[M, N], pl.f32]):
    w1 = pl.move(pl.load(b1, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
    w2 = pl.move(pl.load(b2, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
    for i in pl.range(M // TM):
        a_l0 = pl.move(pl.load(a, [i * TM, 0], [TM, K], space=pl.Mat), space=pl.Left)
        r = pl.relu(pl.move(pl.matmul(a_l0, w1), space=pl.Vec))
        y2 = pl.move(pl.matmul(a_l0, w2), space=pl.Vec)
        pl.store(pl.sub(r, y2), [i * TM, 0], out)


def _pto(kernel, platform):
    return write_pto(compile_program(pl.program(kernel, name=kernel.__name__), platform), platform)


def _pops(text):
    """``[(name, how it is declared, its type)]`` of each DPS ``pto.tpop`` of the Vector kernel."""
    vec = text[text.index("kernel_kind<vector>"):]
    out = []
    for m in re.finditer(r"pto\.tpop\((%\w+), %\w+ : (!pto\.tile_buf<[^>]*>)", vec):
        decl = re.search(rf"{re.escape(m.group(1))} = (pto\.\w+)", vec)
        out.append((m.group(1), decl.group(1), m.group(2)))
    return out


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_tile_popped_while_one_of_its_type_is_held_gets_an_alloc_tile(platform):
    op = compile_program(pl.program(held, name="held"), platform)
    text = write_pto(op, platform)
    (n1, d1, t1), (n2, d2, t2) = _pops(text)
    assert t1 == t2 and (n1, n2) == ("%y1", "%y2")
    assert (d1, d2) == ("pto.declare_tile", "pto.alloc_tile")
    # a ring ptoas's frontend op would build (A5's default) is written with a handle to pop into
    assert "tpop_from_aic" not in text and "aiv_initialize_pipe" not in text
    from ptopipe.codegen.pto_exec import run_pto
    args = _held_args(pl.program(held, name="held"))
    res = run_pto(text=text, inputs=args, platform=platform)
    a, b1, b2 = args["a"], args["b1"], args["b2"]
    np.testing.assert_array_equal(res.outputs["out"], np.maximum(a @ b1, 0) - a @ b2)
    assert not [w for w, _ in res.summary.leaks if "still holds" in w]
    # and it reads back to the program (the lower-level ring is the one the IR describes)
    back = PassManager(list(PTO_PASSES)).run(read_pto(text, "held.pto"), PassContext(platform=platform))
    assert structural_equal(op, back), first_difference(op, back)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_pops_freed_before_the_next_keep_their_spelling(platform):
    text = _pto(in_turn, platform)
    if platform == "a5":        # the frontend ring stays: ptoas's own pop of each tile
        assert len(re.findall(r"%\w+ = pto\.tpop_from_aic", text)) == 2 and not _pops(text)
    else:
        assert [d for _, d, _ in _pops(text)] == ["pto.declare_tile"] * 2


PTOAS = os.environ.get("PTOAS")


@pytest.mark.skipif(not PTOAS, reason="PTOAS (a ptoas binary) is not set")
@pytest.mark.parametrize("platform,arch", [("a2a3", "a3"), ("a5", "a5")])
def test_ptoas_keeps_the_held_pops_apart_and_its_cpp_computes_numpys_numbers(platform, arch, tmp_path):
    from ptopipe.cpp import run_cpp
    from ptopipe.passes.slot_buffer import with_slot_buffer
    prog = pl.program(held, name="held")
    pto, cpp = tmp_path / "held.pto", tmp_path / "held.cpp"
    pto.write_text(write_pto(compile_program(prog, platform), platform))
    r = subprocess.run([PTOAS, f"--pto-arch={arch}", str(pto), "-o", str(cpp)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    pops = re.findall(r"TPOP<[^;]*>\((\w+), (\w+)\);", cpp.read_text())
    assert len(pops) == 2 and pops[0][1] != pops[1][1], pops      # two C++ tiles
    rng = np.random.default_rng(7)
    a, b1, b2 = (rng.integers(-3, 4, s).astype(np.float32) for s in ((M, K), (K, N), (K, N)))
    args = with_slot_buffer(prog, dict(a=a, b1=b1, b2=b2, out=np.zeros((M, N), np.float32)))
    # ptoas names the entry's parameters v1.. in the program's order
    # (compiled for spec, whose rings hold both tiles: under pto-isa on A5 - SyncPeriod 4 - the two
    # TFREEs after y2's TPOP both test its index, pto-isa's free index, and every second iteration
    # sends a credit too many; a compile for pto-isa there copies y1 out instead)
    res = run_cpp(str(cpp), {f"v{k + 1}": v for k, v in enumerate(args.values())}, platform=platform,
                  protocol="pto-isa" if platform == "a2a3" else "spec")
    np.testing.assert_array_equal(res["v4"], np.maximum(a @ b1, 0) - a @ b2)
    assert not [w for w, _ in res.summary.leaks if "still holds" in w]


def _held_args(prog):
    from ptopipe.passes.slot_buffer import with_slot_buffer
    rng = np.random.default_rng(7)
    a, b1, b2 = (rng.integers(-3, 4, s).astype(np.float32) for s in ((M, K), (K, N), (K, N)))
    return with_slot_buffer(prog, dict(a=a, b1=b1, b2=b2, out=np.zeros((M, N), np.float32)))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_run_of_identical_declarations_popped_while_held_folds_them_as_ptoas_does(platform, monkeypatch):
    """The spelling ptoas folds (two identical ``declare_tile``s on A2A3; two frontend
    ``tpop_from_aic``s on A5, which ptoas lowers to them): ptopipe's run of the file computes
    what ptoas's C++ computes - the second matmul twice - and warns at the second pop, naming
    the first."""
    from ptopipe.codegen import pto_writer
    from ptopipe.codegen.pto_exec import run_pto
    monkeypatch.setattr(pto_writer._Writer, "held_alike", lambda self, f: set())
    prog = pl.program(held, name="held")
    text = write_pto(compile_program(prog, platform), platform)
    pops = [k + 1 for k, line in enumerate(text.splitlines()) if re.search(r"pto\.tpop(_from_aic)?\(?", line)
            and "%y" in line]
    assert len(pops) == 2, pops
    args = _held_args(prog)
    res = run_pto(text=text, inputs=args, platform=platform)
    a, b2 = args["a"], args["b2"]
    np.testing.assert_array_equal(res.outputs["out"], np.maximum(a @ b2, 0) - a @ b2)
    found = [(w, str(loc)) for w, loc in res.summary.leaks if "still holds" in w]
    assert found and all(loc.split(":")[-2] == str(pops[1]) and f":{pops[0]}:" in w for w, loc in found), found
