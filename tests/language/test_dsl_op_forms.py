"""The catalogue ops of the DSL's derived operand forms (the remainders, powers, part ops,
broadcasts, arg-reductions, concat / transpose, the fused converts, dequant), each used in a
small ``@pl.aiv`` kernel and checked end to end: the IR interpreter on both platforms against
plain numpy; the written ``.pto`` read back to the same program and run as written (buffer
semantics) to the same numbers; the real assembler taking the file (``PTOAS=...``; a file the
writer noted as ptopipe's spelling must be refused); the C++ writer spelling each op as
pto-isa's function, with the scratch tile pto-isa requires, and that C++ on pto-isa's CPU
simulator (``PTO_ISA_ROOT=...``)."""
from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import subprocess

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.arch.catalogue import OPS as CATALOGUE
from ptopipe.codegen import read_pto, write_cpp, write_pto
from ptopipe.codegen.cpp_kernel import CPP_TEMPLATE_ATTRS
from ptopipe.codegen.pto_load import PTO_PASSES
from ptopipe.codegen.pto_syntax import PTO_OP
from ptopipe.errors import CompileError
from ptopipe.ir import first_difference, structural_equal
from ptopipe.ir.ops import ISA_ATTRS, ISA_NAMES, SCRATCH_OPS, scratch_index
from ptopipe.ir.types import MemorySpace, ScalarType, TileValueType
from ptopipe.ir.ops import OPS as IR_OPS
from ptopipe.passes import PassManager, compile_program
from ptopipe.passes.manager import PassContext
from ptopipe.runtime import run as dsl_run

pytestmark = pytest.mark.usefixtures("no_hang")
PLATFORMS = ["a2a3", "a5"]
PTOAS = os.environ.get("PTOAS")
HERE = pathlib.Path(__file__).resolve().parent


@pl.aic
def idle(x: pl.Tensor[[16, 32], pl.f32]):
    pass


# -- the kernels: each uses a few ops of one family ---------------------------------------------
@pl.aiv
def remainders(x: pl.Tensor[[16, 32], pl.f32], z: pl.Tensor[[16, 32], pl.f32],
               y: pl.Tensor[[16, 32], pl.f32]):
    if pl.get_subblockid() == 0:
        a = pl.load(x, [0, 0], [16, 32])
        b = pl.load(z, [0, 0], [16, 32])
        pl.store(pl.prelu(pl.rem(a, b), b), [0, 0], y)


@pl.aiv
def powers(x: pl.Tensor[[16, 32], pl.f32], z: pl.Tensor[[16, 32], pl.f32],
           y: pl.Tensor[[16, 32], pl.f32], w: pl.Tensor[[16, 32], pl.f32], v: pl.Tensor[[16, 32], pl.f32],
           u: pl.Tensor[[16, 32], pl.f32]):
    if pl.get_subblockid() == 0:
        a = pl.load(x, [0, 0], [16, 32])
        b = pl.load(z, [0, 0], [16, 32])
        pl.store(pl.pow(a, b), [0, 0], y)
        pl.store(pl.pows(a, 3.0), [0, 0], w)
        pl.store(pl.subrelu(a, b), [0, 0], v)
        pl.store(pl.pair_sum(b), [0, 0], u)


@pl.aiv
def parts(x: pl.Tensor[[16, 32], pl.f32], z: pl.Tensor[[8, 16], pl.f32],
          y: pl.Tensor[[16, 32], pl.f32], w: pl.Tensor[[16, 32], pl.f32]):
    if pl.get_subblockid() == 0:
        a = pl.load(x, [0, 0], [16, 32])
        b = pl.load(z, [0, 0], [8, 16])
        pl.store(pl.part_mul(pl.part_add(a, b), b), [0, 0], y)
        pl.store(pl.part_min(b, pl.part_max(a, b)), [0, 0], w)


@pl.aiv
def broadcasts(x: pl.Tensor[[16, 32], pl.f32], y: pl.Tensor[[16, 32], pl.f32],
               w: pl.Tensor[[16, 32], pl.f32], v: pl.Tensor[[16, 32], pl.f32],
               u: pl.Tensor[[16, 32], pl.f32]):
    if pl.get_subblockid() == 0:
        a = pl.load(x, [0, 0], [16, 32])
        pl.store(pl.row_expand(pl.row_max(a), [16, 32]), [0, 0], y)
        pl.store(pl.col_expand(pl.col_sum(a), [16, 32]), [0, 0], w)
        pl.store(pl.row_expand_expdif(a, pl.row_max(a)), [0, 0], v)
        pl.store(pl.col_expand_expdif(a, pl.col_max(a)), [0, 0], u)


@pl.aiv
def arg_reductions(x: pl.Tensor[[16, 32], pl.f32], y: pl.Tensor[[16, 1], pl.i32],
                   w: pl.Tensor[[16, 1], pl.i32], v: pl.Tensor[[1, 32], pl.i32],
                   u: pl.Tensor[[1, 32], pl.i32]):
    if pl.get_subblockid() == 0:
        a = pl.load(x, [0, 0], [16, 32])
        pl.store(pl.row_argmax(a), [0, 0], y)
        pl.store(pl.row_argmin(a), [0, 0], w)
        pl.store(pl.col_argmax(a), [0, 0], v)
        pl.store(pl.col_argmin(a), [0, 0], u)


@pl.aiv
def layout(x: pl.Tensor[[16, 32], pl.f32], z: pl.Tensor[[16, 32], pl.f32],
           y: pl.Tensor[[16, 64], pl.f32], w: pl.Tensor[[32, 16], pl.f32]):
    if pl.get_subblockid() == 0:
        a = pl.load(x, [0, 0], [16, 32])
        b = pl.load(z, [0, 0], [16, 32])
        pl.store(pl.concat(a, b), [0, 0], y)
        pl.store(pl.transpose(a), [0, 0], w)


@pl.aiv
def relu_convert(x: pl.Tensor[[16, 32], pl.f32], z: pl.Tensor[[16, 32], pl.f32], y: pl.Tensor[[16, 32], pl.f16],
                 w: pl.Tensor[[16, 32], pl.f16]):
    if pl.get_subblockid() == 0:
        pl.store(pl.add_relu_conv(pl.load(x, [0, 0], [16, 32]), pl.load(z, [0, 0], [16, 32])), [0, 0], y)
        pl.store(pl.sub_relu_conv(pl.load(x, [0, 0], [16, 32]), pl.load(z, [0, 0], [16, 32])), [0, 0], w)


@pl.aiv
def deq_relu(k: pl.Tensor[[16, 32], pl.i32], j: pl.Tensor[[16, 32], pl.i32], u: pl.Tensor[[16, 32], pl.f16]):
    if pl.get_subblockid() == 0:
        n = pl.load(k, [0, 0], [16, 32])
        pl.store(pl.add_deq_relu(n, pl.load(j, [0, 0], [16, 32]), 0.25), [0, 0], u)


@pl.aiv
def sorting(vals: pl.Tensor[[4, 64], pl.f32], i: pl.Tensor[[4, 64], pl.u32], y: pl.Tensor[[4, 128], pl.f32]):
    if pl.get_subblockid() == 0:
        pl.store(pl.sort32(pl.load(vals, [0, 0], [4, 64]), pl.load(i, [0, 0], [4, 64])), [0, 0], y)


def _sorting(rng):
    x = rng.permutation(4 * 64).reshape(4, 64).astype(np.float32)        # no ties
    i = np.tile(np.arange(64, dtype=np.uint32), (4, 1))
    out = np.zeros((4, 64, 2), np.float32)
    for b in range(0, 64, 32):          # each block of 32, descending, as [value, index bits]
        order = np.argsort(-x[:, b:b + 32], axis=1, kind="stable")
        out[:, b:b + 32, 0] = np.take_along_axis(x[:, b:b + 32], order, axis=1)
        out[:, b:b + 32, 1] = np.take_along_axis(i[:, b:b + 32], order, axis=1).view(np.float32)
    return dict(x=np.zeros((16, 32), np.float32), vals=x, i=i), dict(y=out.reshape(4, 128))


@pl.aiv
def generators(y: pl.Tensor[[1, 32], pl.i32], w: pl.Tensor[[16, 32], pl.f32], v: pl.Tensor[[16, 32], pl.f32],
               d: pl.Tensor[[1, 32], pl.i32]):
    if pl.get_subblockid() == 0:
        s = pl.arange([1, 32], pl.i32, 5)
        pl.store(s, [0, 0], y)
        pl.store(s, [0, 0], y, atomic=pl.ATOMIC_ADD)       # y = s + s
        pl.store(pl.arange([1, 32], pl.i32, 3, descending=1), [0, 0], d)
        pl.store(pl.tri([16, 32], pl.f32, 2), [0, 0], w)
        pl.store(pl.tri([16, 32], pl.f32, -3, upper=1), [0, 0], v)


def _generators(rng):
    return dict(x=np.zeros((16, 32), np.float32)), dict(
        y=2 * np.arange(5, 37, dtype=np.int32)[None, :], d=np.arange(3, -29, -1, dtype=np.int32)[None, :],
        w=np.tril(np.ones((16, 32), np.float32), 2),
        v=np.triu(np.ones((16, 32), np.float32), -3))


@pl.aiv
def compares(x: pl.Tensor[[16, 32], pl.f32], z: pl.Tensor[[16, 32], pl.f32], y: pl.Tensor[[16, 32], pl.f32],
             w: pl.Tensor[[16, 32], pl.f32], v: pl.Tensor[[16, 32], pl.f32], u: pl.Tensor[[16, 32], pl.f32]):
    if pl.get_subblockid() == 0:
        a = pl.load(x, [0, 0], [16, 32])
        b = pl.load(z, [0, 0], [16, 32])
        pl.store(pl.select(pl.cmp(a, b, pl.CMP_LT), a, b), [0, 0], y)
        pl.store(pl.select(pl.cmps(a, 0.5, pl.CMP_GE), a, b), [0, 0], w)
        pl.store(pl.select(pl.cmp(a, a, pl.CMP_NE), a, b), [0, 0], v)
        pl.store(pl.selects(pl.cmps(b, 1.0, pl.CMP_GT), a, -2.0), [0, 0], u)


@pl.aiv
def narrow_compare(x: pl.Tensor[[16, 16], pl.f32], y: pl.Tensor[[16, 16], pl.f32]):
    if pl.get_subblockid() == 0:
        a = pl.load(x, [0, 0], [16, 16])
        pl.store(pl.select(pl.cmp(a, a, pl.CMP_GE), a, a), [0, 0], y)


@pl.aic
def idle_i32(x: pl.Tensor[[16, 32], pl.i32]):
    pass


@pl.aiv
def int_bitwise(x: pl.Tensor[[16, 32], pl.i32], y: pl.Tensor[[16, 32], pl.i32]):
    if pl.get_subblockid() == 0:
        a = pl.load(x, [0, 0], [16, 32])
        pl.store(pl.xors(pl.ors(pl.ands(a, 12), 1), 5), [0, 0], y)


@pl.aiv
def half_fill(h: pl.Tensor[[16, 32], pl.f16], y: pl.Tensor[[32, 32], pl.f16]):
    if pl.get_subblockid() == 0:
        a = pl.load(h, [0, 0], [16, 32])
        for i in pl.range(2):
            # an f32 scalar (a literal, a value computed in the loop) filling f16 tiles
            b = pl.mul(pl.full([16, 32], pl.f16, -0.5), pl.full([16, 32], pl.f16, i * 0.5 + 1.0))
            pl.store(pl.add(a, b), [i * 16, 0], y)


def _half_fill(rng):
    h = rng.integers(-8, 9, (16, 32)).astype(np.float16)
    return dict(x=np.zeros((16, 32), np.float32), h=h), dict(y=np.concatenate([h - np.float16(0.5),
                                                                               h - np.float16(0.75)]))


def _compares(rng):
    x, z = _f32(rng, -4, 4, (16, 32)), _f32(rng, -4, 4, (16, 32))
    return dict(x=x, z=z), dict(y=np.minimum(x, z), w=np.where(x >= 0.5, x, z), v=z,
                                u=np.where(z > 1.0, x, np.float32(-2.0)))


@pl.aiv
def dequantize(q: pl.Tensor[[16, 32], pl.i8], s: pl.Tensor[[16, 8], pl.f32], o: pl.Tensor[[16, 8], pl.f32],
               w: pl.Tensor[[16, 32], pl.f32]):
    if pl.get_subblockid() == 0:
        pl.store(pl.dequant(pl.load(q, [0, 0], [16, 32]), pl.load(s, [0, 0], [16, 8]),
                            pl.load(o, [0, 0], [16, 8])), [0, 0], w)


def _dequantize(rng):
    q = rng.integers(-128, 128, (16, 32)).astype(np.int8)
    s, o = _f32(rng, 0.5, 2, (16, 8)), _f32(rng, -3, 3, (16, 8))
    col = np.minimum(np.arange(32), 7)      # pto-isa: column min(j, params' cols - 1) of row i's
    return dict(x=np.zeros((16, 32), np.float32), q=q, s=s, o=o), dict(
        w=(q.astype(np.float32) - o[:, col]) * s[:, col])


def _f32(rng, lo, hi, shape):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def _remainders(rng):
    x, z = _f32(rng, -8, 8, (16, 32)), _f32(rng, 0.5, 3, (16, 32))
    r = np.remainder(x.astype(np.float64), z).astype(np.float32)
    return dict(x=x, z=z), dict(y=np.where(r > 0, r, r * z))


def _powers(rng):
    x, z = _f32(rng, 0.5, 2, (16, 32)), _f32(rng, -2, 2, (16, 32))
    pairs = np.zeros_like(z)
    pairs[:, :16] = z[:, 0::2] + z[:, 1::2]
    return dict(x=x, z=z), dict(y=np.power(x.astype(np.float64), z).astype(np.float32),
                                w=np.power(x.astype(np.float64), 3.0).astype(np.float32),
                                v=np.maximum(x - z, 0), u=pairs)


def _parts(rng):
    x, z = _f32(rng, -4, 4, (16, 32)), _f32(rng, -4, 4, (8, 16))

    def part(fn, a, b):
        out = a.copy()
        out[:8, :16] = fn(a[:8, :16], b)
        return out
    s = part(np.add, x, z)
    return dict(x=x, z=z), dict(y=part(np.multiply, s, z), w=part(np.minimum, part(np.maximum, x, z), z))


def _broadcasts(rng):
    x = _f32(rng, -2, 2, (16, 32))
    rmax, cmax = x.max(axis=1, keepdims=True), x.max(axis=0, keepdims=True)
    return dict(x=x), dict(y=np.broadcast_to(rmax, x.shape).copy(),
                           w=np.broadcast_to(x.sum(axis=0, keepdims=True, dtype=np.float32), x.shape).copy(),
                           v=np.exp(x - rmax), u=np.exp(x - cmax))


def _arg_reductions(rng):
    x = rng.permutation(16 * 32).reshape(16, 32).astype(np.float32)      # no ties
    return dict(x=x), dict(y=x.argmax(axis=1)[:, None].astype(np.int32),
                           w=x.argmin(axis=1)[:, None].astype(np.int32),
                           v=x.argmax(axis=0)[None, :].astype(np.int32),
                           u=x.argmin(axis=0)[None, :].astype(np.int32))


def _layout(rng):
    x, z = _f32(rng, -4, 4, (16, 32)), _f32(rng, -4, 4, (16, 32))
    return dict(x=x, z=z), dict(y=np.concatenate([x, z], axis=1), w=x.T.copy())


def _relu_convert(rng):
    x, z = _f32(rng, -4, 4, (16, 32)), _f32(rng, -4, 4, (16, 32))
    return dict(x=x, z=z), dict(y=np.maximum(x + z, 0).astype(np.float16), w=np.maximum(x - z, 0).astype(np.float16))


def _deq_relu(rng):
    k, j = (rng.integers(-20000, 20000, (16, 32)).astype(np.int32) for _ in range(2))
    return dict(x=np.zeros((16, 32), np.float32), k=k, j=j), dict(
        u=np.maximum((k + j).astype(np.float32) * np.float32(0.25), 0).astype(np.float16))


#: kernel -> (its numpy inputs and expected outputs, the DSL ops it exposes, rtol)
CASES = {
    "remainders": (remainders, _remainders, ("rem", "prelu"), 1e-6),
    "powers": (powers, _powers, ("pow", "pows", "subrelu", "pair_sum"), 1e-6),
    "parts": (parts, _parts, ("part_add", "part_mul", "part_max", "part_min"), 0),
    "broadcasts": (broadcasts, _broadcasts, ("row_expand", "col_expand", "row_expand_expdif",
                                             "col_expand_expdif"), 1e-6),
    "arg_reductions": (arg_reductions, _arg_reductions, ("row_argmax", "row_argmin", "col_argmax",
                                                         "col_argmin"), 0),
    "layout": (layout, _layout, ("concat", "transpose"), 0),
    "compares": (compares, _compares, ("cmp", "cmps", "select", "selects"), 0),
    "half_fill": (half_fill, _half_fill, ("full",), 0),
    "generators": (generators, _generators, ("arange", "tri"), 0),
    "sorting": (sorting, _sorting, ("sort32",), 0),
    "relu_convert": (relu_convert, _relu_convert, ("add_relu_conv", "sub_relu_conv"), 1e-6),
    "deq_relu": (deq_relu, _deq_relu, ("add_deq_relu",), 1e-6),
    "dequantize": (dequantize, _dequantize, ("dequant",), 1e-6),
}


def _case(name):
    kernel, data, ops, rtol = CASES[name]
    ins, want = data(np.random.default_rng(7))
    args = dict(ins)
    args.update({k: np.zeros_like(v) for k, v in want.items()})
    return pl.program(idle, kernel, name=name), args, want, ops, rtol


def _check(got: dict, want: dict, rtol: float, what: str) -> None:
    for k, v in want.items():
        if rtol:
            np.testing.assert_allclose(got[k], v, rtol=rtol, atol=1e-6, err_msg=f"{what}: {k}")
        else:
            np.testing.assert_array_equal(got[k], v, err_msg=f"{what}: {k}")


def test_the_cases_cover_every_op_of_the_added_forms():
    """Every DSL op of these forms is used by a kernel here (an op added to a form joins a case)."""
    forms = {"pow", "pows", "part", "row_bcast", "col_bcast", "row_arg", "col_arg", "TCONCAT",
             "TTRANS", "relu_conv", "TADDDEQRELU", "TDEQUANT", "TSORT32", "TCI", "TTRI", "compare",
             "compare_scalar", "select", "select_scalar"}
    extra = {"rem", "prelu", "subrelu", "pair_sum", "row_expand_expdif", "col_expand_expdif"}
    want = {d.dsl for d in CATALOGUE.values() if d.dsl and d.form in forms} | extra
    used = {op for _, _, ops, _ in CASES.values() for op in ops}
    assert want <= used, sorted(want - used)
    assert used <= set(ISA_NAMES)


def test_every_catalogue_op_has_a_dsl_form_or_a_reason():
    """docs/isa.md's DSL column: a ``pl`` name, or why the DSL has none (never both)."""
    from ptopipe.ir.ops import NO_DSL_FORM
    from ptopipe.report.isa_reference import page
    no_dsl = {d.name for d in CATALOGUE.values() if d.dsl is None}
    assert set(NO_DSL_FORM) == no_dsl, (sorted(no_dsl - set(NO_DSL_FORM)), sorted(set(NO_DSL_FORM) - no_dsl))
    text = page()
    assert "| `TQUANT` | `pto.tquant` | none: takes a compile-time mode (QuantType" in text
    assert "| `TREM` | `pto.trem` | `pl.rem` |" in text


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_dsl_op_matches_numpy(name, platform):
    prog, args, want, _, rtol = _case(name)
    res = dsl_run(prog, args, platform=platform)
    _check(res, want, rtol, f"{name} on {platform}")


def _written(name, platform):
    prog, args, want, ops, rtol = _case(name)
    op = compile_program(prog, platform)
    notes = []
    return op, write_pto(op, platform, notes), notes, args, want, ops, rtol


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_written_pto_reads_back_and_runs_as_written(name, platform):
    op, text, _, args, want, ops, rtol = _written(name, platform)
    for o in ops:
        assert re.search(rf"\b{re.escape(PTO_OP[o])} ins\(", text), (o, PTO_OP[o])
    back = PassManager(list(PTO_PASSES)).run(read_pto(text, f"{name}.pto"),
                                            PassContext(platform=platform, protocol="spec"))
    assert structural_equal(op, back), first_difference(op, back)
    inputs = {k: v for k, v in args.items()}
    res = ptopipe.run_pto(text=text, inputs=inputs, platform=platform)
    assert res.warnings == []
    _check(res.outputs, want, rtol, f"{name}.pto on {platform}")


def test_ops_ptoas_requires_a_scratch_tile_for_are_written_with_one():
    _, text, _, *_ = _written("arg_reductions", "a2a3")
    line = next(ln for ln in text.splitlines() if "pto.trowargmax ins(" in ln)
    assert re.search(r"pto\.trowargmax ins\(%\w+, %tmp\w* :", line), line
    _, text, _, *_ = _written("remainders", "a2a3")
    assert re.search(r"pto\.trem ins\(%\w+, %\w+, %tmp\w* :", text)
    # TPRELU's tmp is uint8 (ptoas's A2A3 verifier, pto-isa's A2A3 kernel), of the source's shape
    tmp = re.search(r"pto\.tprelu ins\(%\w+, %\w+, (%tmp\w*) :", text).group(1)
    assert re.search(rf"{tmp} = pto.alloc_tile : !pto.tile_buf<loc=vec, dtype=ui8, rows=16, cols=32,", text)
    _, cpp, *_ = _cpp("remainders")
    tmp = re.search(r"TPRELU\(\w+, \w+, \w+, (\w+)\);", cpp).group(1)
    decl = re.search(rf"(\w+) {tmp};", cpp).group(1)
    assert re.search(rf"using {decl} = Tile<TileType::Vec, uint8_t, 16, 32,", cpp), cpp


def test_ops_ptoas_lacks_are_noted():
    _, _, notes, *_ = _written("powers", "a5")
    assert [w for w, _ in notes] == [f"pto.{o} is ptopipe's spelling: ptoas has no pto.{o} op"
                                     for o in ("tpow", "tpows", "tsubrelu", "tpairreducesum")]
    _, _, notes, *_ = _written("parts", "a5")
    assert sorted({w for w, _ in notes}) == [
        f"pto.tpart{k} of tiles of two shapes: ptoas takes its operands in one static shape"
        for k in ("add", "max", "min", "mul")]
    _, _, notes, *_ = _written("arg_reductions", "a5")
    assert notes == []
    # a packed mask of 32 f32 columns is 4 bytes a row, declared 32: the sources' static shape
    assert _written("compares", "a5")[2] == [] and _written("compares", "a2a3")[2] == []
    notes = []
    text = write_pto(compile_program(pl.program(idle, narrow_compare, name="narrow"), "a5"), "a5", notes)
    assert [w for w, _ in notes] == ["pto.tcmp of a packed mask: ptoas's A5 verifier wants the mask in the "
                                     "sources' static shape"]
    assert "dtype=ui8, rows=16, cols=32, v_row=16, v_col=2," in text     # 16 f32 columns: 2 bytes a row


@pytest.mark.parametrize("platform", PLATFORMS)
def test_ptoas_element_type_refusals_are_noted(platform, tmp_path):
    """pto-isa's TANDS / TORS / TXORS take i32 tiles; ptoas's A2/A3 verifier only i8 / i16: the
    written file says so where it writes the op (A5's verifier takes i32), and the run is numpy's."""
    prog = pl.program(idle_i32, int_bitwise, name="int_bitwise")
    notes = []
    text = write_pto(compile_program(prog, platform), platform, notes)
    x = np.arange(16 * 32, dtype=np.int32).reshape(16, 32) - 100
    res = dsl_run(prog, dict(x=x, y=np.zeros_like(x)), platform=platform)
    np.testing.assert_array_equal(res.outputs["y"], ((x & 12) | 1) ^ 5)
    want = [] if platform == "a5" else [
        f"pto.t{o} of int32 tiles on A2A3: ptoas refuses it ('pto.t{o}' op expects A2/A3 t{o} element type to be "
        "i8/i16), though pto-isa's instruction takes it" for o in ("ands", "ors", "xors")]
    assert [w for w, _ in notes] == want
    line = next(k for k, ln in enumerate(pathlib.Path(__file__).read_text().splitlines(), 1)
                if "pl.store(pl.xors(pl.ors(pl.ands(a, 12)" in ln)
    assert all(where.startswith(f"{__file__}:{line}:") for _, where in notes), notes
    if PTOAS:
        pto = tmp_path / "int_bitwise.pto"
        pto.write_text(text)
        r = subprocess.run([PTOAS, f"--pto-arch={'a5' if platform == 'a5' else 'a3'}", str(pto), "-o",
                            str(tmp_path / "out.cpp")], capture_output=True, text=True, timeout=300)
        assert (r.returncode == 0) == (platform == "a5"), r.stderr[-2000:]


@pl.aiv
def int_clamp(x: pl.Tensor[[16, 32], pl.i32], y: pl.Tensor[[16, 32], pl.i32]):
    if pl.get_subblockid() == 0:
        pl.store(pl.mins(pl.maxs(pl.load(x, [0, 0], [16, 32]), -3), 5), [0, 0], y)     # <- clamp


@pytest.mark.parametrize("platform", PLATFORMS)
def test_integer_scalar_max_and_min_are_written_as_ptoas_takes_them(platform, tmp_path):
    """pto-isa's TMAXS / TMINS take integer tiles, and so does ptoas - with a float scalar only
    (its PTOViewToMemref rebuilds them with one; an i32 scalar: "ins/outs are not memref yet"):
    the written file gives the integer scalars as floats, compile notes nothing, ptoas takes
    the file and the run is numpy's."""
    prog = pl.program(idle_i32, int_clamp, name="int_clamp")
    notes = []
    text = write_pto(compile_program(prog, platform), platform, notes)
    x = np.arange(16 * 32, dtype=np.int32).reshape(16, 32) % 13 - 6
    res = dsl_run(prog, dict(x=x, y=np.zeros_like(x)), platform=platform)
    np.testing.assert_array_equal(res.outputs["y"], np.clip(x, -3, 5))
    assert notes == []
    for op in ("pto.tmaxs", "pto.tmins"):
        line = next(ln for ln in text.splitlines() if op in ln)
        assert re.search(r"ins\(%[\w.]+, %[\w.]+ : !pto\.tile_buf<[^>]*>, f32\)", line), line
    if PTOAS:
        pto = tmp_path / "int_clamp.pto"
        pto.write_text(text)
        r = subprocess.run([PTOAS, f"--pto-arch={'a5' if platform == 'a5' else 'a3'}", str(pto), "-o",
                            str(tmp_path / "out.cpp")], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.skipif(not PTOAS, reason="PTOAS (a ptoas binary) is not set")
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_ptoas_takes_the_written_file_unless_noted(name, platform, tmp_path):
    _, text, notes, *_ = _written(name, platform)
    pto = tmp_path / f"{name}.pto"
    pto.write_text(text)
    r = subprocess.run([PTOAS, f"--pto-arch={'a5' if platform == 'a5' else 'a3'}", str(pto), "-o",
                        str(tmp_path / "out.cpp")], capture_output=True, text=True, timeout=300)
    if notes:
        assert r.returncode != 0, f"{name}: ptoas took a file the writer noted {notes}"
        assert "is unknown" in r.stderr or "same shape" in r.stderr, r.stderr[-2000:]   # the note's reason
    else:
        assert r.returncode == 0, f"{name} on {platform}: ptoas refused the file:\n{r.stderr[-3000:]}"


def _cpp(name, platform="a2a3"):
    prog, args, want, ops, rtol = _case(name)
    op = compile_program(prog, platform, protocol="pto-isa")
    return op, write_cpp(op, platform), args, want, ops, rtol


@pytest.mark.parametrize("name", sorted(CASES))
def test_cpp_writer_spells_each_op_as_pto_isa(name):
    """Each op is its pto-isa function, called (dst, operands...[, tmp]): the scratch tile
    pto-isa's signature requires (TREM, TPOW, TROWARGMAX, TTRANS ...) placed by the allocator."""
    _, cpp, _, _, ops, _ = _cpp(name)
    for o in ops:
        d = CATALOGUE[ISA_NAMES[o]]
        calls = re.findall(rf"\b{d.name}(?:<[\w, ]*>)?\(([^;]*)\);", cpp)     # TCI<Tile, T, 0>(...)
        assert calls, (o, d.name)
        call_attrs = [k for k in ISA_ATTRS.get(o, ()) if k not in CPP_TEMPLATE_ATTRS]
        nargs = 1 + len(IR_OPS[o].operands) + len(call_attrs)
        takes_tmp = o in SCRATCH_OPS
        for c in calls:
            args = [a.strip() for a in c.split(",")]
            assert len(args) == nargs + takes_tmp, (o, c)
            if takes_tmp:       # last, or before the scalar (TSELS)
                k = scratch_index(o, [v.type for v in _operand_types(o, args)])
                assert f"TASSIGN({args[1 + k]}," in cpp, (o, c)


class _Typed:
    def __init__(self, t):
        self.type = t


def _operand_types(o, args):
    """Stand-ins typed as op ``o``'s operands are (a tile, or a scalar for a scalar operand)."""
    tile = TileValueType((16, 32), "f32", MemorySpace.Vec)
    return [_Typed(ScalarType("f32") if p.name == "scalar" else tile) for p in IR_OPS[o].operands]


#: the cases whose instruction pto-isa's CPU simulator does not implement (the build fails there)
CPU_SIM_LACKS = {"relu_convert": "TADDRELUCONV_IMPL"}


def _cpu_sim():
    spec = importlib.util.spec_from_file_location("cpu_sim_harness", HERE.parent / "codegen" /
                                                  "test_pto_isa_cpu_sim.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.skipif(not os.environ.get("PTO_ISA_ROOT"), reason="PTO_ISA_ROOT (a pto-isa checkout) is not set")
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_cpp_gives_numpys_numbers_on_pto_isas_cpu_simulator(name, platform, tmp_path):
    sim = _cpu_sim()
    op, cpp, args, want, _, rtol = _cpp(name, platform)
    for k, v in args.items():
        np.ascontiguousarray(v).tofile(tmp_path / f"{k}.in")
    r = sim.build(tmp_path, cpp, sim.main_cpp(op, args, platform))
    if r.returncode and name in CPU_SIM_LACKS and CPU_SIM_LACKS[name] in r.stderr:
        pytest.xfail(f"pto-isa's CPU simulator has no {CPU_SIM_LACKS[name]} (its NPU kernels do)")
    assert r.returncode == 0, f"{name} on {platform} does not build:\n{r.stderr[-4000:]}"
    run = subprocess.run([str(tmp_path / "k"), str(tmp_path)], capture_output=True, text=True,
                         timeout=sim.RUN_SECONDS)
    assert run.returncode == 0, run.stderr[-3000:]
    got = {k: np.fromfile(tmp_path / f"{k}.out", dtype=args[k].dtype).reshape(args[k].shape) for k in want}
    _check(got, want, rtol, f"{name} C++ on {platform}")


# -- typing rules -------------------------------------------------------------------------------
def test_part_op_needs_one_operand_covering_the_other():
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def vec(x: pl.Tensor[[16, 32], pl.f32], z: pl.Tensor[[32, 16], pl.f32]):
            pl.part_add(pl.load(x, [0, 0], [16, 32]), pl.load(z, [0, 0], [32, 16]))
    assert "covers the other" in ei.value.what, ei.value


def test_broadcast_shape_must_keep_the_source_rows():
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def vec(x: pl.Tensor[[16, 32], pl.f32]):
            pl.row_expand(pl.row_sum(pl.load(x, [0, 0], [16, 32])), [8, 32])
    assert "different rows" in ei.value.what, ei.value


def test_arg_reduction_gives_int32_indices_and_checks_the_source_dtype():
    from ptopipe.ir.ops import ARG_INDEX_DTYPE
    assert ARG_INDEX_DTYPE == "i32"
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def vec(x: pl.Tensor[[16, 32], pl.i8]):
            pl.row_argmax(pl.load(x, [0, 0], [16, 32]))
    assert "TROWARGMAX takes" in ei.value.what and "not int8" in ei.value.what, ei.value


def test_add_relu_conv_result_dtype_and_dequant_parameters():
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def vec(x: pl.Tensor[[16, 32], pl.f32]):
            a = pl.load(x, [0, 0], [16, 32])
            pl.store(pl.add_relu_conv(a, a), [0, 0], x)
    assert "tile is f16 but the tensor is f32" in ei.value.what, ei.value
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def vec2(q: pl.Tensor[[16, 32], pl.i8], s: pl.Tensor[[8, 1], pl.f32]):
            b = pl.load(s, [0, 0], [8, 1])
            pl.dequant(pl.load(q, [0, 0], [16, 32]), b, b)
    assert "per-row f32 parameters" in ei.value.what, ei.value


def test_sort32_takes_a_u32_index_per_value_in_blocks_of_32():
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def vec(x: pl.Tensor[[4, 64], pl.f32], i: pl.Tensor[[4, 64], pl.i32]):
            pl.sort32(pl.load(x, [0, 0], [4, 64]), pl.load(i, [0, 0], [4, 64]))
    assert "not one u32 per value" in ei.value.what, ei.value
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def vec2(x: pl.Tensor[[4, 48], pl.f32], i: pl.Tensor[[4, 48], pl.u32]):
            pl.sort32(pl.load(x, [0, 0], [4, 48]), pl.load(i, [0, 0], [4, 48]))
    assert "not whole blocks of 32" in ei.value.what, ei.value


def test_arange_is_one_row_and_tri_takes_an_integer_diagonal():
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def vec(y: pl.Tensor[[2, 32], pl.i32]):
            pl.store(pl.arange([2, 32], pl.i32, 0), [0, 0], y)
    assert "along one row" in ei.value.what, ei.value
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def vec2(y: pl.Tensor[[16, 32], pl.f32]):
            pl.store(pl.tri([16, 32], pl.f32, 1.5), [0, 0], y)
    assert "pto-isa takes an integer" in ei.value.what, ei.value
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def vec4(y: pl.Tensor[[16, 32], pl.f32]):
            pl.store(pl.tri([16, 32], pl.f32, 0, upper=2), [0, 0], y)
    assert "0 is the lower triangle, 1 the upper" in ei.value.what, ei.value
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def vec3(y: pl.Tensor[[1, 32], pl.i8]):
            pl.store(pl.arange([1, 32], pl.i8, 0), [0, 0], y)
    assert "TCI takes" in ei.value.what and "not int8" in ei.value.what, ei.value


def test_integer_scalar_operands_ptoas_wants_typed_are_cast_and_read_back():
    _, text, notes, *_ = _written("generators", "a2a3")
    assert notes == []
    # (through i64: ptoas's C++ emitter casts an index to i64 only)
    assert re.search(r"(%\w+) = arith.index_cast %\w+ : index to i64\n\s*(%\w+) = arith.trunci \1 : i64 to i32\n"
                     r"(?:.*\n)*?\s*pto\.tci ins\(\2 : i32\)", text), text
    _, cpp, *_ = _cpp("generators")
    assert re.search(r"TCI<\w+, int32_t, 0>\(\w+, 5\);", cpp) and re.search(r"TTRI<\w+, 0>\(\w+, 2\);", cpp), cpp
    assert re.search(r"TTRI<\w+, 1>\(\w+, -3\);", cpp), cpp
    assert re.search(r"TCI<\w+, int32_t, 1>\(\w+, 3\);", cpp), cpp         # descending
    assert re.search(r"pto\.tci ins\(%\w+ \{descending = true\} : i32\)", text), text
    assert text.count("descending") == 1, text                          # (false: ptoas's default)
    assert re.search(r"pto\.ttri ins\(%\w+ \{upperOrLower = 1 : i32\} : i32\)", text), text


def test_a_float_scalar_filling_a_half_tile_is_given_in_the_tiles_type():
    """ptoas's texpands wants its scalar in its tile's type ("expects scalar type == dst element
    type"): the writer converts an f32 scalar - a literal or a computed value - to f16 there, and
    the reader reads the conversion back as the value itself (the program reads back equal)."""
    _, text, notes, *_ = _written("half_fill", "a2a3")
    assert notes == []
    fills = re.findall(r"pto\.texpands ins\((%\w+) : (\w+)\)", text)
    assert len(fills) == 2 and all(t == "f16" for _, t in fills), fills
    for x, _ in fills:
        assert re.search(rf"{x} = arith.truncf %\w+ : f32 to f16\n", text), text


def test_an_atomic_store_is_spelled_by_both_writers():
    """pl.store(..., atomic=pl.ATOMIC_ADD): ptoas's attribute after the store's outs (the plain
    store has none: atomic_none is ptoas's default), pto-isa's AtomicType template argument."""
    _, text, *_ = _written("generators", "a2a3")
    assert len(re.findall(r"pto\.tstore ins\(.*\) outs\(.*\) \{atomicType = #pto<atomic_type atomic_add>\}\n",
                          text)) == 1, text
    assert text.count("atomicType") == 1, text
    _, cpp, *_ = _cpp("generators")
    assert len(re.findall(r"TSTORE<\w+, decltype\((\w+)\), AtomicType::AtomicAdd>\(\1, \w+\);", cpp)) == 1, cpp


def test_store_checks_its_atomic_attribute():
    with pytest.raises(CompileError, match="atomic is 2; 0 stores, 1 adds"):
        @pl.aiv
        def bad(x: pl.Tensor[[16, 32], pl.f32]):
            pl.store(pl.load(x, [0, 0], [16, 32]), [0, 0], x, atomic=2)
    with pytest.raises(CompileError, match="an atomic add into a u32 tensor; the atomic unit adds f32, f16, bf16, "
                                           "i32, i16, i8 in GM"):
        @pl.aiv
        def unsigned(x: pl.Tensor[[16, 32], pl.u32]):
            pl.store(pl.load(x, [0, 0], [16, 32]), [0, 0], x, atomic=pl.ATOMIC_ADD)


def test_compare_mode_is_spelled_per_layer_and_checked():
    """The mode is the instruction's last argument: ptoas's cmpMode in ``ins``, pto-isa's CmpMode."""
    _, text, *_ = _written("compares", "a5")
    assert re.search(r"pto\.tcmp ins\(%a, %b \{cmpMode = #pto<cmp lt>\} :", text), text
    assert re.search(r"pto\.tcmps ins\(%a, %\w+ \{cmpMode = #pto<cmp ge>\} :", text), text
    assert re.search(r"pto\.tsel ins\(%\w+, %a, %b, %tmp\w* :", text), text
    assert re.search(r"pto\.tsels ins\(%\w+, %a, %tmp\w*, %\w+ :", text), text     # tmp, then the scalar
    _, cpp, *_ = _cpp("compares")
    assert re.search(r"TSELS\(\w+, \w+, a, \w+_tmp\w*, \(?-?2\.0f?\)?\);", cpp), cpp
    assert re.search(r"TCMP\(\w+, a, b, CmpMode::LT\);", cpp) and "CmpMode::GE);" in cpp, cpp
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def vec(x: pl.Tensor[[16, 32], pl.f32]):
            a = pl.load(x, [0, 0], [16, 32])
            pl.cmp(a, a, 9)
    assert "not a compare mode" in ei.value.what and "pl.CMP_LT" in ei.value.fix, ei.value
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def vec2(x: pl.Tensor[[16, 32], pl.f32], m: pl.Tensor[[16, 32], pl.u8]):
            a = pl.load(x, [0, 0], [16, 32])
            pl.select(pl.load(m, [0, 0], [16, 32]), a, a)     # a mask is 16x4 bytes: 32 bits a row
    assert "not a packed mask" in ei.value.what, ei.value


@pytest.mark.parametrize("name", sorted(CASES))
def test_printed_dsl_and_op_ir_text_read_back_equal(name):
    """Every added op (its attributes too: a compare's mode, tri's upper) prints as DSL source
    and as op-IR text that read back to the same program."""
    from ptopipe.ir import print_program, structural_equal
    from ptopipe.ir.asm_parser import parse_ir
    from ptopipe.ir.asm_printer import print_ir
    prog = _case(name)[0]
    again = pl.parse(print_program(prog), filename="<printed>")
    assert structural_equal(again, prog), first_difference(prog, again)
    ops = prog.clone()
    back = parse_ir(print_ir(ops))
    assert structural_equal(ops, back), first_difference(ops, back)
