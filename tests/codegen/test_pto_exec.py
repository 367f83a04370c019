"""The PTO-AS executor (buffer semantics): what ptoas's C++ does on the device, run on the
simulated cluster - scalar arithmetic of every width, control flow, tile placement and
aliasing, kernel-kind choice, and errors at the file's line:col."""
import pathlib
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ptopipe
from ptopipe.codegen.pto_exec import live_ranges, plan_layout, read_program, run_pto
from ptopipe.codegen import read_pto
from ptopipe.codegen.pto_load import load_pto
from ptopipe.codegen.pto_tree import parse_tree
from ptopipe.errors import (CompileError, ConfigError, DeadlockError, KernelError, LeakError, MemoryConflictError,
                            ParseError, PtoPipeError)


def vec_t(r, c, d="f32", loc="vec"):
    return (f"!pto.tile_buf<loc={loc}, dtype={d}, rows={r}, cols={c}, v_row={r}, v_col={c}, "
            "blayout=row_major, slayout=none_box, fractal=512, pad=0>")


def line_of(text: str, needle: str) -> int:
    return next(i for i, l in enumerate(text.splitlines(), 1) if needle in l)


def vector_kernel(body: str, params: str = "%x: !pto.ptr<f32>, %y: !pto.ptr<f32>", attrs: str = "") -> str:
    return f"""module {{
  func.func @k({params}){attrs} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
{body}
    return
  }}
}}
"""


IO = f"""    %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] {{layout = #pto.layout<nd>}} : !pto.tensor_view<?x?xf32>
    %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %t = pto.alloc_tile : {vec_t(16, 16)}
    pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%t : {vec_t(16, 16)})
"""
STORE = f"    pto.tstore ins(%t : {vec_t(16, 16)}) outs(%yp : !pto.partition_tensor_view<16x16xf32>)\n"
X = np.arange(256, dtype=np.float32).reshape(16, 16) / 7


def run_vec(body: str, **kw):
    return run_pto(text=vector_kernel(IO + body + STORE), inputs=dict(x=X, y=np.zeros_like(X)), **kw)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_kindless_vector_function_runs_on_a_vector_core(platform):
    body = f"    %s = arith.constant 2.5 : f32\n    pto.tmuls ins(%t, %s : {vec_t(16, 16)}, f32) outs(%t : {vec_t(16, 16)})\n"
    r = run_vec(body, platform=platform)
    np.testing.assert_allclose(r.outputs["y"], X * 2.5, rtol=1e-6)
    assert r.func == "k" and any("AIV0" in n for n in r.notes)


INT_CASES = [
    # (op, type, a, b, expected) - MLIR semantics: signed division truncates, iN wraps
    ("arith.divsi", "i32", -7, 2, -3), ("arith.remsi", "i32", -7, 2, -1),
    ("arith.floordivsi", "i32", -7, 2, -4), ("arith.ceildivsi", "i32", 7, 2, 4),
    ("arith.divui", "i8", -2, 3, 84), ("arith.remui", "i8", -1, 10, 5),
    ("arith.addi", "i8", 127, 1, -128), ("arith.muli", "i16", 300, 300, 24464),
    ("arith.shli", "i8", 1, 7, -128), ("arith.shrsi", "i8", -128, 7, -1), ("arith.shrui", "i8", -128, 7, 1),
    ("arith.maxui", "i32", -1, 5, -1), ("arith.minsi", "i64", -1, 5, -1), ("arith.xori", "i1", 1, 1, 0),
    ("arith.subi", "index", 3, 5, -2),
]


@pytest.mark.parametrize("op,ty,a,b,want", INT_CASES)
def test_integer_arithmetic_follows_mlir(op, ty, a, b, want):
    """The result drives a store offset, so a wrong value shows as a wrong output row."""
    body = f"""    %a = arith.constant {a} : {ty}
    %b = arith.constant {b} : {ty}
    %r = {op} %a, %b : {ty}
    %r64 = arith.extsi %r : {ty} to i64
    %w = arith.constant {want} : {ty}
    %w64 = arith.extsi %w : {ty} to i64
    %eq = arith.cmpi eq, %r64, %w64 : i64
    %bad = arith.constant 100.0 : f32
    scf.if %eq {{
    }} else {{
      pto.tadds ins(%t, %bad : {vec_t(16, 16)}, f32) outs(%t : {vec_t(16, 16)})
    }}
""" if ty != "i1" else f"""    %a = arith.constant true
    %r = {op} %a, %a : i1
    %bad = arith.constant 100.0 : f32
    scf.if %r {{
      pto.tadds ins(%t, %bad : {vec_t(16, 16)}, f32) outs(%t : {vec_t(16, 16)})
    }}
"""
    np.testing.assert_array_equal(run_vec(body).outputs["y"], X)


def test_division_by_zero_is_an_error_at_its_line():
    body = "    %z = arith.constant 0 : i32\n    %q = arith.divsi %z, %z : i32\n"
    text = vector_kernel(IO + body + STORE)
    with pytest.raises(KernelError) as e:
        run_pto(text=text, inputs=dict(x=X, y=X * 0))
    # where the op starts (its result), as the static verifier and ptoas locate an op
    assert e.value.where == f"<pto>:{line_of(text, 'arith.divsi')}:5" and "division by zero" in e.value.what


def test_scf_while_with_block_labels_and_if_results():
    """A while loop (before / after regions, ^bb0 arguments) adding 1.0 per trip: 5 trips."""
    body = f"""    %c5 = arith.constant 5 : index
    %one = arith.constant 1.0 : f32
    %true = arith.constant true
    %fin:2 = scf.while (%i = %c0, %go = %true) : (index, i1) -> (index, i1) {{
      %lt = arith.cmpi slt, %i, %c5 : index
      %more = arith.andi %lt, %go : i1
      scf.condition(%more) %i, %go : index, i1
    }} do {{
    ^bb0(%j: index, %g: i1):
      pto.tadds ins(%t, %one : {vec_t(16, 16)}, f32) outs(%t : {vec_t(16, 16)})
      %n = arith.addi %j, %c1 : index
      %r = scf.if %g -> (i1) {{
        scf.yield %g : i1
      }} else {{
        scf.yield %g : i1
      }}
      scf.yield %n, %r : index, i1
    }}
"""
    np.testing.assert_allclose(run_vec(body).outputs["y"], X + 5, rtol=1e-6)


def test_for_loop_iter_args_carry_scalars():
    body = f"""    %c4 = arith.constant 4 : index
    %h = arith.constant 0.5 : f32
    %z = arith.constant 0.0 : f32
    %sum = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %z) -> (f32) {{
      %n = arith.addf %acc, %h : f32
      scf.yield %n : f32
    }}
    pto.tadds ins(%t, %sum : {vec_t(16, 16)}, f32) outs(%t : {vec_t(16, 16)})
"""
    np.testing.assert_allclose(run_vec(body).outputs["y"], X + 2.0, rtol=1e-6)


@pytest.mark.parametrize("yields, result, said", [
    ("%i : index", "f32", "scf.yield gives index as value 0, but result 0 of the scf.for at {at} is f32"),
    ("%n, %n : f32, f32", "f32", "scf.yield gives 2 value(s); the scf.for at {at} has 1 result(s)"),
    ("%n : f32", "(f32)", None),
    ("%n : f32", "f32", None),
])
def test_a_yield_of_another_type_than_the_loops_result_is_a_parse_error(yields, result, said):
    """A loop whose scf.yield gives another type (or number) of values than its iter_args'
    results - ptoas refuses it - is a ParseError at the yield, not a run that carries an
    index into an f32 scale."""
    body = f"""    %c4 = arith.constant 4 : index
    %h = arith.constant 0.5 : f32
    %z = arith.constant 0.0 : f32
    %sum = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %z) -> {result} {{
      %n = arith.addf %acc, %h : f32
      scf.yield {yields}
    }}
    pto.tadds ins(%t, %sum : {vec_t(16, 16)}, f32) outs(%t : {vec_t(16, 16)})
"""
    if said is None:
        np.testing.assert_allclose(run_vec(body).outputs["y"], X + 2.0, rtol=1e-6)
        return
    with pytest.raises(ParseError) as e:
        run_vec(body)
    text = vector_kernel(IO + body + STORE)
    assert e.value.what.startswith(said.format(at=f"{line_of(text, 'scf.for')}:5")), e.value.what
    assert e.value.where == f"<pto>:{line_of(text, 'scf.yield')}:7"


def test_tiles_at_overlapping_explicit_addresses_alias_and_are_named():
    """Two tiles placed over each other: the second load overwrites the first (the device
    does the same), and the run's notes name both tiles, at the write that clobbers %a."""
    text = vector_kernel(f"""    %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %a0 = arith.constant 0 : i64
    %a512 = arith.constant 512 : i64
    %a = pto.alloc_tile addr = %a0 : {vec_t(16, 16)}
    pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%a : {vec_t(16, 16)})
    %b = pto.alloc_tile addr = %a512 : {vec_t(16, 16)}
    pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%b : {vec_t(16, 16)})
    %s = arith.constant 1.0 : f32
    pto.tadds ins(%b, %s : {vec_t(16, 16)}, f32) outs(%b : {vec_t(16, 16)})
    pto.tstore ins(%a : {vec_t(16, 16)}) outs(%yp : !pto.partition_tensor_view<16x16xf32>)
""")
    r = run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X)))
    want = X.copy()
    want[8:] = X[:8] + 1           # %b starts 512 bytes (8 rows of 64 B) into %a and holds x + 1
    np.testing.assert_allclose(r.outputs["y"], want, rtol=1e-6)
    note = next(n for n in r.warnings if "overlaps" in n)
    assert note.startswith(f"<pto>:{line_of(text, 'outs(%b')}:") and "%a [0, 1024)" in note


def test_tiles_live_together_past_their_memory_are_an_error_naming_them_at_the_allocation():
    """Two 128 KiB UB buffers live at once on A2A3 (192 KiB of UB; ptoas: "vec overflow"): the
    second allocation is the error, naming the first and the bytes it holds - not an address
    the file never wrote."""
    gm, ub = "memref<128x256xf32, #pto.address_space<gm>>", "memref<128x256xf32, #pto.address_space<vec>>"
    text = f"""module {{
  func.func @crowded(%x: {gm}, %y: {gm}) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %a = memref.alloc() : {ub}
    %b = memref.alloc() : {ub}
    pto.tload ins(%x : {gm}) outs(%a : {ub})
    pto.texp ins(%a : {ub}) outs(%b : {ub})
    pto.tadd ins(%a, %b : {ub}, {ub}) outs(%b : {ub})
    pto.tstore ins(%b : {ub}) outs(%y : {gm})
    return
  }}
}}
"""
    x = np.zeros((128, 256), np.float32)
    with pytest.raises(MemoryConflictError) as e:
        run_pto(text=text, inputs=dict(x=x, y=x), platform="a2a3")
    assert e.value.where == f"<pto>:{line_of(text, '%b = memref.alloc')}:5", e.value.where
    assert "%b: a Vec tile of 131,072 bytes has no room in UB (196,608 bytes on a2a3)" in e.value.what
    assert "%a (131,072 bytes at 0x0)" in e.value.what, e.value.what


def test_the_same_buffer_under_two_names_is_no_overlap():
    text = vector_kernel(f"""    %a0 = arith.constant 0 : i64
    %a = pto.alloc_tile addr = %a0 : {vec_t(16, 16)}
    %b = pto.alloc_tile addr = %a0 : {vec_t(16, 16)}
    %s = arith.constant 1.0 : f32
    pto.texpands ins(%s : f32) outs(%a : {vec_t(16, 16)})
    pto.tadds ins(%a, %s : {vec_t(16, 16)}, f32) outs(%b : {vec_t(16, 16)})
""", params="")
    assert not run_pto(text=text).warnings


def test_unsupported_op_is_a_parse_error_naming_it_before_anything_runs():
    text = vector_kernel(IO + "    pto.tfrobnicate ins(%t : f32) outs(%t : f32)\n" + STORE)
    with pytest.raises(ParseError) as e:
        run_pto(text=text, inputs=dict(x=X, y=X))
    assert "unknown operation 'pto.tfrobnicate'" in e.value.what
    assert e.value.where == f"<pto>:{line_of(text, 'tfrobnicate')}:5"
    sdma = vector_kernel(IO + "    %e = pto.test_async_event(%ev, %ss : !pto.async_event, !pto.async_session) -> i1\n"
                         + STORE)
    with pytest.raises(ParseError) as e:             # a ptoas op ptopipe does not model: why
        run_pto(text=sdma, inputs=dict(x=X, y=X))
    assert "pto.test_async_event is not supported: pto-comm's asynchronous DMA transfers" in e.value.what


@pytest.mark.parametrize("indirect", [False, True])
def test_a_recursive_call_is_a_parse_error_at_the_call_before_anything_runs(indirect, capsys):
    """ptoas refuses recursion ("recursive function calls are not supported"); the executor
    says so at the call closing the cycle, not with Python's RecursionError mid-run."""
    callee = "h" if indirect else "k"
    helper = """  func.func private @h(%a: i32) {
    func.call @k(%a) : (i32) -> ()
    return
  }
""" if indirect else ""
    text = f"""module {{
  func.func @k(%a: i32) attributes {{pto.entry}} {{
    pto.print ins("ran %d", %a : i32)
    func.call @{callee}(%a) : (i32) -> ()
    return
  }}
{helper}}}
"""
    with pytest.raises(ParseError) as e:
        run_pto(text=text, inputs=dict(a=np.array(1, np.int32)))
    assert "recursive function calls are not supported" in e.value.what
    where = line_of(text, "func.call @k(") if indirect else line_of(text, f"func.call @{callee}(")
    assert e.value.where == f"<pto>:{where}:5"
    assert "ran" not in capsys.readouterr().out


def test_tgather_compare_form_runs_and_refuses_other_modes():
    """ptoas's compare form ``ins(%src, %kValue, %tmp) outs(%dst, %cdst) {offset}``: the
    matching column numbers + offset per row into dst, their counts into cdst; a mode other
    than eq / gt is refused at the op's line."""
    i32, u8 = vec_t(16, 16, "i32"), vec_t(16, 32, "ui8")    # (a ui8 row of 32 bytes: pto-isa's Tile)

    def text(mode):
        return vector_kernel(IO + f"""    %s = arith.constant 20.0 : f32
    %tmp = pto.alloc_tile : {u8}
    %d = pto.alloc_tile : {i32}
    %cd = pto.alloc_tile : {i32}
    pto.texpands ins(%c0_i32 : i32) outs(%d : {i32})
    pto.tgather ins(%t, %s, %tmp : {vec_t(16, 16)}, f32, {u8}) outs(%d, %cd : {i32}, {i32}) {{{mode}offset = 7 : i32}}
    pto.tcvt ins(%d {{rmode = #pto<round_mode CAST_RINT>}} : {i32}) outs(%t : {vec_t(16, 16)})
""" + STORE).replace("%c16 = arith.constant 16 : index", "%c16 = arith.constant 16 : index\n    %c0_i32 = arith.constant 0 : i32")
    res = run_pto(text=text("cmpMode = #pto<cmp gt>, "), inputs=dict(x=X, y=np.zeros_like(X)))
    want = np.zeros((16, 16), np.float32)
    for r, row in enumerate(X > 20):
        cols = np.flatnonzero(row)
        want[r, :cols.size] = 7 + cols
    np.testing.assert_array_equal(res.outputs["y"].reshape(16, 16), want)
    bad = text("cmpMode = #pto<cmp lt>, ")
    with pytest.raises(KernelError) as e:
        run_pto(text=bad, inputs=dict(x=X, y=np.zeros_like(X)))
    assert "EQ or GT, not LT" in e.value.what
    assert e.value.where == f"<pto>:{line_of(bad, 'pto.tgather')}:5"


def test_ptoas_mx_matmul_runs_to_pto_isa_scale_rule():
    """``pto.tmatmul.mx`` / ``.mx.acc`` as ptoas spells them are read and run; ptoas checks its
    scale tiles as ``loc=scaling`` tiles of the operand's shape (its MLIR has no e8m0 type),
    not the e8m0 scale tiles the MX unit reads (pto-isa's NPU TMATMUL_MX never reads its scale
    operands): the run reports it at the op's line."""
    def tb(loc, d, r, c, bl="row_major", sl="none_box"):
        return (f"!pto.tile_buf<loc={loc}, dtype={d}, rows={r}, cols={c}, v_row={r}, v_col={c}, "
                f"blayout={bl}, slayout={sl}, fractal=512, pad=0>")
    a = tb("left", "f8E4M3FN", 16, 64, "col_major", "row_major")
    b = tb("right", "f8E4M3FN", 64, 16, "row_major", "col_major")
    sa, sb = tb("scaling", "f16", 16, 64), tb("scaling", "f16", 64, 16)
    c = tb("acc", "f32", 16, 16, "col_major", "row_major")
    for op, ins, types in (("pto.tmatmul.mx", "%a, %sa, %b, %sb", f"{a}, {sa}, {b}, {sb}"),
                           ("pto.tmatmul.mx.acc", "%c, %a, %sa, %b, %sb", f"{c}, {a}, {sa}, {b}, {sb}")):
        text = f"""module {{
  func.func @k() attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %a = pto.alloc_tile : {a}
    %sa = pto.alloc_tile : {sa}
    %b = pto.alloc_tile : {b}
    %sb = pto.alloc_tile : {sb}
    %c = pto.alloc_tile : {c}
    %d = pto.alloc_tile : {c}
    {op} ins({ins} : {types}) outs(%d : {c})
    return
  }}
}}
"""
        with pytest.raises(KernelError) as e:
            run_pto(text=text, platform="a5")
        assert "TMATMUL_MX: a_scale is Scaling" in e.value.what and "float8_e8m0" in e.value.what
        assert e.value.where == f"<pto>:{line_of(text, op + ' ins')}:5"


def test_tget_scale_addr_binds_a_scaling_tile_as_ptoas_spells_the_scale_view():
    """ptoas's tget_scale_addr writes the scales of a Right tile into a loc=scaling tile of
    its shape; the view is bound at the operand's address >> 4 (a Mat destination stays
    refused)."""
    def tb(loc, d, r, c, bl, sl):
        return (f"!pto.tile_buf<loc={loc}, dtype={d}, rows={r}, cols={c}, v_row={r}, v_col={c}, "
                f"blayout={bl}, slayout={sl}, fractal=512, pad=0>")
    rt = tb("right", "f8E5M2", 32, 32, "row_major", "col_major")

    def kernel(loc, addr=4096):
        view = tb(loc, "f16", 32, 32, "row_major", "row_major")
        return f"""module {{
  func.func @k() attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %c4096 = arith.constant {addr} : i64
    %r = pto.alloc_tile addr = %c4096 : {rt}
    %s = pto.alloc_tile : {view}
    pto.tget_scale_addr ins(%r : {rt}) outs(%s : {view})
    return
  }}
}}
"""
    run_pto(text=kernel("scaling"), platform="a5")
    with pytest.raises(MemoryConflictError) as e:       # 0xc000 >> 4: the 2 KiB view overruns FB
        run_pto(text=kernel("scaling", 0xC000), platform="a5")
    assert "at AIC.FB[0xc00]" in e.value.what
    with pytest.raises(KernelError) as e:
        run_pto(text=kernel("mat"), platform="a5")
    assert "TGET_SCALE_ADDR binds a ScaleLeft tile" in e.value.what


def test_tmov_relu_and_the_generic_pre_quant_form_run_on_the_fixpipe():
    """``pto.tmov`` of an accumulator with ``reluPreMode = normal_relu`` cuts below 0, and
    ptoas's generic ``"pto.tmov"(%acc, %dst, %pre)`` quantises with the one word %pre."""
    def tb(loc, d, r, c, bl, sl, fr=512):
        return (f"!pto.tile_buf<loc={loc}, dtype={d}, rows={r}, cols={c}, v_row={r}, v_col={c}, "
                f"blayout={bl}, slayout={sl}, fractal={fr}, pad=0>")
    mat = tb("mat", "f32", 16, 16, "col_major", "row_major")
    q8 = tb("mat", "i8", 16, 16, "col_major", "row_major")
    acc = tb("acc", "f32", 16, 16, "col_major", "row_major", 1024)
    left, right = tb("left", "f32", 16, 16, "col_major", "row_major"), tb("right", "f32", 16, 16, "row_major", "col_major")
    word = int(np.float32(0.5).view(np.uint32)) | (1 << 46)          # scale 0.5, signed bytes
    pv = "!pto.partition_tensor_view<16x16x{}>"
    text = f"""module {{
  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %q: !pto.ptr<i8>) attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %pre = arith.constant {word} : i64
    %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %qv = pto.make_tensor_view %q, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xi8>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> {pv.format("f32")}
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> {pv.format("f32")}
    %qp = pto.partition_view %qv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xi8> -> {pv.format("i8")}
    %xm = pto.alloc_tile : {mat}
    pto.tload ins(%xp : {pv.format("f32")}) outs(%xm : {mat})
    %l = pto.alloc_tile : {left}
    %r = pto.alloc_tile : {right}
    pto.tmov ins(%xm : {mat}) outs(%l : {left})
    pto.tmov ins(%xm : {mat}) outs(%r : {right})
    %a = pto.alloc_tile : {acc}
    pto.tmatmul ins(%l, %r : {left}, {right}) outs(%a : {acc})
    %m = pto.alloc_tile : {mat}
    pto.tmov ins(%a : {acc}) outs(%m : {mat}) {{reluPreMode = #pto<relu_pre_mode normal_relu>}}
    pto.tstore ins(%m : {mat}) outs(%yp : {pv.format("f32")})
    %m8 = pto.alloc_tile : {q8}
    "pto.tmov"(%a, %m8, %pre) <{{operandSegmentSizes = array<i32: 1, 1, 0, 1>}}> : ({acc}, {q8}, i64) -> ()
    pto.tstore ins(%m8 : {q8}) outs(%qp : {pv.format("i8")})
    return
  }}
}}
"""
    x = np.random.default_rng(3).integers(-3, 4, (16, 16)).astype(np.float32)
    # (on A5: A2A3's fixpipe moves an f32 accumulator into L1 as f16 / bf16 only)
    r = run_pto(text=text, inputs=dict(x=x, y=np.zeros((16, 16), np.float32), q=np.zeros((16, 16), np.int8)),
                platform="a5")
    np.testing.assert_array_equal(r.outputs["y"], np.maximum(x @ x, 0))
    np.testing.assert_array_equal(r.outputs["q"], np.clip(np.rint((x @ x) * 0.5), -128, 127).astype(np.int8))


def test_dense_constants_are_element_values():
    """``arith.constant dense<...>``: a list or a splat of a vector / tensor type's shape,
    integers wrapped at the element width (ptoas writes dense<[50000, ...]> : vector<4xi16>);
    a count that fits neither, or a scalar type, is a ParseError at the constant."""
    from ptopipe.codegen.pto_exec.executor import Executor
    from ptopipe.codegen.pto_exec.scalar_ops import h_constant
    text = """module {
  func.func @k() {
    %a = arith.constant dense<[128, 64, 50000, 65535]> : vector<4xi16>
    %b = arith.constant dense<7> : vector<4xi16>
    %c = arith.constant dense<[[1.5, -2.0], [0.25, 3.0]]> : tensor<2x2xf32>
    %d = arith.constant dense<[1, 2, 3]> : vector<4xi16>
    %e = arith.constant dense<1> : i32
    return
  }
}
"""
    prog = read_program(text)
    ex = Executor(prog, "aiv0", None)
    stmts = {st.results[0]: st for st in prog.funcs["k"].body if st.results}
    np.testing.assert_array_equal(h_constant(ex, None, stmts["%a"]).data,
                                  np.array([128, 64, -15536, -1], np.int16))
    b = h_constant(ex, None, stmts["%b"]).data
    assert b.dtype == np.int16 and b.tolist() == [7, 7, 7, 7]
    np.testing.assert_array_equal(h_constant(ex, None, stmts["%c"]).data,
                                  np.array([[1.5, -2.0], [0.25, 3.0]], np.float32))
    for name, what in (("%d", "gives 3 values for a 4 vector"), ("%e", "needs a vector<...> or tensor<...>")):
        with pytest.raises(ParseError) as e:
            h_constant(ex, None, stmts[name])
        assert what in e.value.what
        assert e.value.where.startswith(f"<pto>:{line_of(text, name + ' =')}:")


def test_vector_parameter_takes_an_input_or_seeded_values():
    """A ``vector<4xi16>`` parameter (TMRGSORT's executed counts, as ptoas's tests pass them):
    given values, else seeded random ones with a note; a wrong count is refused."""
    corpus = pathlib.Path(__file__).parent.parent / "pto_corpus" / "v_tmrgsort_dense_executed_a3.pto"
    text = corpus.read_text().replace("%y: !pto.ptr<f32>)", "%y: !pto.ptr<f32>, %ex: vector<4xi16>)")
    text = text.replace("    %ex = arith.constant dense<0> : vector<4xi16>\n", "")
    x = {k: np.arange(32, dtype=np.float32).reshape(1, 32) - o for k, o in (("x0", 0.5), ("x1", 0.0))}
    idx = {k: np.arange(32, dtype=np.uint32).reshape(1, 32) for k in ("i0", "i1")}
    res = run_pto(text=text, inputs=x | idx | {"ex": np.array([1, 2, 3, 4])})
    vals = res.outputs["y"].reshape(-1)[0::2]
    np.testing.assert_array_equal(vals, np.sort(np.concatenate([x["x0"][0], x["x1"][0]]))[::-1])
    res = run_pto(text=text, inputs=x | idx)
    assert any("ex: seeded random vector<4xi16>" in n for n in res.notes)
    with pytest.raises(ConfigError) as e:
        run_pto(text=text, inputs=x | idx | {"ex": np.zeros(3)})
    assert "3 values for the vector parameter 'ex'" in e.value.what


@pytest.mark.parametrize("ty", [vec_t(16, 16), "memref<16x16xf32, #pto.address_space<vec>>"],
                         ids=["tile_buf", "memref-in-vec"])
def test_a_tile_parameter_of_an_entry_is_refused_at_the_parameter(ty):
    """An entry function taking a tile (a !pto.tile_buf, or a memref in a local address space as
    ptoas also reads one): nothing launches a kernel with a tile, given data or not - a located
    ConfigError, not an error inside the first op that reads it."""
    text = f"""module {{
  func.func @k(%t: {ty}, %o: {ty}, %a: f32) {{
    pto.tmuls ins(%t, %a : {ty}, f32) outs(%o : {ty})
    return
  }}
}}
"""
    for inputs in ({}, {"t": X, "o": X}):
        with pytest.raises(ConfigError) as e:
            run_pto(text=text, inputs=inputs)
        assert e.value.what == ("parameter %t of @k is a tile in vec memory: a kernel is launched with GM "
                                "pointers, tensor views and scalars, so nothing can give it a tile")
        assert e.value.where == "<pto>:2:16"


def test_subset_window_valid_region_and_refusals():
    """``pto.subset``: a contiguous tile of the window's shape at the offset (ptoas's lowering),
    valid where the source is (a source with 12 valid rows gives the window at row 8 four); a
    window past the source is an error at the op."""
    dyn = vec_t(16, 16).replace("v_row=16, v_col=16", "v_row=?, v_col=?")
    body = f"""    %c8 = arith.constant 8 : index
    %c12 = arith.constant 12 : index
    %five = arith.constant 5.0 : f32
    %v = pto.bind_tile %t, %c16, %c16 : {vec_t(16, 16)} -> {dyn}
    pto.set_validshape %v, %c12, %c16 : {dyn}
    %lo = pto.subset %v[%c8, %c0] sizes [8, 16] : {dyn}
    pto.texpands ins(%five : f32) outs(%lo : {vec_t(8, 16).replace("v_row=8, v_col=16", "v_row=?, v_col=?")})
"""
    text = vector_kernel(IO + body + STORE)
    got = run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X))).outputs["y"].reshape(16, 16)
    want = X.copy()
    want[8:12] = 5.0                             # the window's valid rows: 12 - 8
    np.testing.assert_array_equal(got, want)
    bad = text.replace("%v[%c8, %c0] sizes [8, 16]", "%v[%c8, %c8] sizes [8, 16]")
    with pytest.raises(KernelError) as e:
        run_pto(text=bad, inputs=dict(x=X, y=np.zeros_like(X)))
    assert "pto.subset 8x16 at (8, 8) leaves" in e.value.what
    assert e.value.where.startswith(f"<pto>:{line_of(bad, '%lo = pto.subset')}:")


@pytest.mark.parametrize("window,used,defined", [
    ("[%c8, %c0] sizes [8, 16]", (16, 16, 16, 16), "rows=8, v_row=8"),    # the source's type
    ("[%c0, %c8] sizes [16, 16]", (16, 16, 16, 16), "v_col=8"),           # ptoas: valid 16 - 8 columns
    ("[%row, %c0] sizes [8, 16]", (8, 16, 8, 16), "v_row=?"),            # an offset no constant: valid ?
    ("[%c8, %c0] sizes [8, 16]", (8, 16, 8, 16), None),                  # as ptoas infers it: runs
])
def test_a_subset_used_as_another_type_than_ptoas_infers_is_refused_at_the_use(window, used, defined):
    """ptoas gives ``%s = pto.subset %t[r, c] sizes [R, C]`` the type of its source with R x C
    rows x cols and, per dimension, the valid min(size, v - offset mod v) for a constant offset and
    a static valid v of the source, else ``?`` (SubsetOp::inferReturnTypes); a use naming another
    type is "use of value expects different type than prior uses" - a ParseError at the use."""
    r, c, vr, vc = used
    ty = vec_t(r, c).replace(f"v_row={r}", f"v_row={vr}").replace(f"v_col={c}", f"v_col={vc}")
    body = f"""    %two = arith.constant 2.0 : f32
    %c8 = arith.constant 8 : index
    %row = arith.muli %c8, %c1 : index
    %s = pto.subset %t{window} : {vec_t(16, 16)}
    %d = pto.alloc_tile : {ty}
    pto.tmuls ins(%s, %two : {ty}, f32) outs(%d : {ty})
"""
    text = vector_kernel(IO + body + STORE)
    if defined is None:
        run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X)))
        return
    with pytest.raises(ParseError) as e:
        run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X)))
    line = line_of(text, "pto.tmuls")
    assert e.value.where == f"<pto>:{line}:{text.splitlines()[line - 1].index('%s,') + 1}"
    assert e.value.what.startswith("%s is used here as a tile with ") and f"but {defined} is what its " \
        f"definition (line {line_of(text, '%s = pto.subset')}) makes it" in e.value.what, e.value.what


@pytest.mark.parametrize("window,warned", [
    ("[%c0, %col] sizes [16, 8]", True),        # part of the columns, 16 rows: rows 8 apart
    ("[%row, %c0] sizes [8, 16]", False),       # whole rows: the window
    ("[%row, %col] sizes [1, 8]", False),       # one row: the window
])
def test_a_subset_of_part_of_a_row_major_tiles_columns_is_a_warning_at_it(window, warned):
    """ptoas 0.27 lowers ``pto.subset`` to a Tile of the window's shape at its first element,
    rows as far apart as its own columns: the two column halves of a 16x16 tile, each scaled in
    a loop, scale the first 8 rows twice and the rest never - what the device computes, and a
    warning at the subset that it is not the window (once, not per trip).  The window's type
    has ``?`` for a valid dimension at an offset that is no constant, as ptoas infers it."""
    rows, cols = (16, 8) if "[16, 8]" in window else (8, 16) if "[8, 16]" in window else (1, 8)
    part = vec_t(rows, cols)
    if "%row" in window:
        part = part.replace(f"v_row={rows}", "v_row=?")
    if "%col" in window:
        part = part.replace(f"v_col={cols}", "v_col=?")
    body = f"""    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %three = arith.constant 3.0 : f32
    scf.for %h = %c0 to %c2 step %c1 {{
      %col = arith.muli %h, %c8 : index
      %row = arith.muli %h, %c8 : index
      %p = pto.subset %t{window} : {vec_t(16, 16)}
      pto.tmuls ins(%p, %three : {part}, f32) outs(%p : {part})
    }}
"""
    text = vector_kernel(IO + body + STORE)
    res = run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X)))
    got = np.asarray(res.outputs["y"]).reshape(16, 16)
    hits = [w for w in res.warnings if "pto.subset" in w]
    if not warned:
        assert not hits, hits
        return
    assert len(hits) == 1 and f"<pto>:{line_of(text, '%p = pto.subset')}:" in hits[0], hits
    assert "takes 8 of the 16 columns" in hits[0] and "its rows 8 elements apart" in hits[0], hits[0]
    flat, scale = X.reshape(-1).copy(), np.ones(256, np.float32)
    scale[0:128] *= 3                # the first "half": elements 0..127, the first 8 rows
    scale[8:136] *= 3                # the second: elements 8..135
    np.testing.assert_allclose(got.reshape(-1), flat * scale, rtol=1e-6)


def test_tmov_fp_into_ub_is_a5_only():
    """TMOV_FP Acc -> Vec (the fixpipe writing UB): A5 has the path; on A2A3 the op is refused
    at its line, naming the platform (a function using both kinds of tiles runs on one core)."""
    corpus = pathlib.Path(__file__).parent.parent / "pto_corpus" / "c_fp_quant_store_a5.pto"
    text = corpus.read_text()
    text = text.replace(' attributes {pto.kernel_kind = #pto.kernel_kind<cube>}', '')
    store = next(l for l in text.splitlines() if "pto.tstore_fp" in l)
    acc, fp = re.findall(r"!pto\.tile_buf<[^>]*>", store)[:2]
    vec = vec_t(16, 32, "i8").replace("v_col=32", "v_col=16")       # whole 32-byte rows (pto-isa's Tile)
    text = text.replace(store, f"""    %v = pto.alloc_tile : {vec}
    pto.tmov.fp ins(%acc, %fp : {acc}, {fp}) outs(%v : {vec})
    pto.tstore ins(%v : {vec}) outs(%py : !pto.partition_tensor_view<16x16xi8>)""")
    rng = np.random.default_rng(0)
    a, b = (rng.integers(-3, 4, sh).astype(np.float16) for sh in ((16, 32), (32, 16)))
    q = np.array([[(int(np.float32(0.5).view(np.uint32)) & 0xFFFFE000) | (1 << 46)] * 16], np.uint64)
    inputs = dict(a=a, b=b, q=q, y=np.zeros((16, 16), np.int8))
    got = run_pto(text=text.replace('"a3"', '"a5"'), inputs=inputs, platform="a5").outputs["y"].reshape(16, 16)
    acc_v = a.astype(np.float32) @ b.astype(np.float32)
    want = np.clip(np.rint(acc_v * 0.5), -128, 127).astype(np.int8)
    np.testing.assert_array_equal(got, want)
    relu = text.replace(f"outs(%v : {vec})", f"outs(%v : {vec}) {{reluPreMode = #pto<relu_pre_mode normal_relu>}}", 1)
    got = run_pto(text=relu.replace('"a3"', '"a5"'), inputs=inputs, platform="a5").outputs["y"].reshape(16, 16)
    np.testing.assert_array_equal(got, np.maximum(want, 0))
    assert (want < 0).any()
    plain = text.replace("pto.tmov.fp ins(%acc, %fp", "pto.tmov ins(%acc, %fp")     # ptoas's other spelling
    got = run_pto(text=plain.replace('"a3"', '"a5"'), inputs=inputs, platform="a5").outputs["y"].reshape(16, 16)
    np.testing.assert_array_equal(got, want)
    # the scalar pre-quant form: one word for every column (here each column's word), with
    # and without the ReLU
    scalar = plain.replace("%acc, %fp : ", "%acc, %q64 : ").replace(f", {fp})", ", i64)").replace(
        "    %c0 = arith.constant 0 : index", f"    %c0 = arith.constant 0 : index\n    %q64 = arith.constant {int(q[0, 0])} : i64")
    for form, relu in ((scalar, False), (scalar.replace("outs(%v : " + vec + ")", "outs(%v : " + vec + ") "
                                                        "{reluPreMode = #pto<relu_pre_mode normal_relu>}"), True)):
        got = run_pto(text=form.replace('"a3"', '"a5"'), inputs=inputs, platform="a5").outputs["y"].reshape(16, 16)
        np.testing.assert_array_equal(got, np.maximum(want, 0) if relu else want)
    with pytest.raises(KernelError) as e:
        run_pto(text=text.replace('"a5"', '"a3"'), inputs=inputs, platform="a2a3")
    assert "TMOV_FP from Acc to Vec is not a path on A2A3" in e.value.what
    assert e.value.where.startswith(f"<pto>:{line_of(text, 'pto.tmov.fp')}:")


def test_use_before_definition_is_a_parse_error_at_the_use():
    text = vector_kernel(f"    pto.tadds ins(%nope, %nope : {vec_t(16, 16)}, f32) outs(%nope : {vec_t(16, 16)})\n",
                         params="")
    with pytest.raises(ParseError) as e:
        run_pto(text=text)
    assert "use of undefined value %nope" in e.value.what
    assert e.value.where == f"<pto>:{line_of(text, '%nope')}:{text.splitlines()[line_of(text, '%nope') - 1].index('%nope') + 1}"


def test_an_undefined_value_in_a_tensor_views_shape_is_a_parse_error_at_it_not_an_unknown_size():
    """ptoas refuses a use of a name nothing defines (use of undeclared SSA value name); the run
    used to size the parameter first and ask for an --input (a ConfigError at the parameter)."""
    text = vector_kernel(IO.replace("shape = [%c16, %c16], strides = [%c16, %c1]",
                                    "shape = [%c32, %c16], strides = [%c16, %c1]", 1) + STORE)
    with pytest.raises(ParseError) as e:
        run_pto(text=text)
    ln = line_of(text, "%c32")
    assert "use of undefined value %c32" in e.value.what
    assert e.value.where == f"<pto>:{ln}:{text.splitlines()[ln - 1].index('%c32') + 1}"


MAT = "!pto.tile_buf<loc=mat, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, slayout=row_major, fractal=512, pad=0>"
LEFT = "!pto.tile_buf<loc=left, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, slayout=row_major, fractal=512, pad=0>"
RIGHT = "!pto.tile_buf<loc=right, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=col_major, fractal=512, pad=0>"
ACC = "!pto.tile_buf<loc=acc, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, slayout=row_major, fractal=1024, pad=0>"


def square_x_into_y(indent: str) -> str:
    """Cube ops: the partition %xp loaded to L1, moved to L0A / L0B, x @ x into L0C, stored to %yp."""
    ops = [f"%m = pto.alloc_tile : {MAT}",
           f"pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%m : {MAT})",
           f"%l = pto.alloc_tile : {LEFT}", f"%r = pto.alloc_tile : {RIGHT}",
           f"pto.tmov ins(%m : {MAT}) outs(%l : {LEFT})", f"pto.tmov ins(%m : {MAT}) outs(%r : {RIGHT})",
           f"%acc = pto.alloc_tile : {ACC}", f"pto.tmatmul ins(%l, %r : {LEFT}, {RIGHT}) outs(%acc : {ACC})",
           f"pto.tstore ins(%acc : {ACC}) outs(%yp : !pto.partition_tensor_view<16x16xf32>)"]
    return "".join(indent + o + "\n" for o in ops)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_function_using_both_kinds_of_tiles_runs_on_one_core_with_a_warning(platform):
    """x @ x through the Cube, stored, loaded into a Vec tile and doubled: what pto-isa's CPU
    simulator computes; the warning names a tile of each kind (no device core holds both)."""
    text = vector_kernel(IO + f"""{square_x_into_y("    ")}    pto.barrier <PIPE_ALL>
    pto.tload ins(%yp : !pto.partition_tensor_view<16x16xf32>) outs(%t : {vec_t(16, 16)})
    %two = arith.constant 2.0 : f32
    pto.tmuls ins(%t, %two : {vec_t(16, 16)}, f32) outs(%t : {vec_t(16, 16)})
""" + STORE)
    r = run_pto(text=text, platform=platform, inputs=dict(x=X, y=np.zeros_like(X)))
    np.testing.assert_allclose(r.outputs["y"], 2 * (X @ X), rtol=1e-4)
    (w,) = r.warnings
    assert f"line {line_of(text, '%m = pto.alloc_tile')})" in w and f"line {line_of(text, '%t = pto.alloc_tile')})" in w
    assert "no core of the device holds both" in w
    isa = ptopipe.isa

    def cube(use):
        t = isa.Tile(isa.TileType.Vec, np.float32, 8, 8)
        isa.TASSIGN(t, 0x40)        # pto-isa's TASSIGN only sets the address (its FA kernel places
        assert t.addr == 0x40       # its Vec tiles on the Cube too): data() has it
        if use:
            isa.TADDS(t, t, 1.0)    # a hand-written Cube kernel still has no UB
    ptopipe.run(aic=lambda: cube(False))
    with pytest.raises(KernelError, match="AIC has no UB") as ei:
        ptopipe.run(aic=lambda: cube(True))
    with open(__file__) as f:
        assert ei.value.where.endswith(f":{line_of(f.read(), 'isa.TADDS(t, t, 1.0)')}"), ei.value.where


def test_a_cross_core_sync_in_a_function_of_both_kinds_of_tiles_is_a_warning_with_no_peer():
    """ptoas's mix_kernel sample: the Cube half sets, the Vector half waits, in one function run
    on one core - program order already orders the halves, so the sync is said and skipped."""
    text = vector_kernel(IO + f"""{square_x_into_y("    ")}    pto.sync.set <PIPE_FIX>, 0
    pto.sync.wait <PIPE_V>, 0
    pto.barrier <PIPE_ALL>
    pto.tload ins(%yp : !pto.partition_tensor_view<16x16xf32>) outs(%t : {vec_t(16, 16)})
""" + STORE)
    r = run_pto(text=text, platform="a5", inputs=dict(x=X, y=np.zeros_like(X)))
    np.testing.assert_allclose(r.outputs["y"], X @ X, rtol=1e-4)
    for op in ("pto.sync.set", "pto.sync.wait"):
        assert any(w.startswith(f"<pto>:{line_of(text, op)}:5: {op} in a function of Cube and Vector tiles")
                   for w in r.warnings), r.warnings


@pytest.mark.parametrize("loc,was,now,said,fix", [
    ("acc", "loc=acc, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, slayout=row_major, "
            "fractal=1024, pad=0", "acc, 16x16xf32", "expects dst to use the col_major blayout on A5",
     "declare the acc tile with blayout=col_major, slayout=row_major (a tile_buf that names no blayout / slayout is "
     "row_major / none_box to ptoas)"),
    ("right", "blayout=row_major, slayout=col_major", "blayout=row_major, slayout=none_box",
     "expects rhs to use the col_major slayout on A5", "declare the right tile with slayout=col_major (a tile_buf"),
    ("left", "blayout=col_major", "blayout=row_major", None, None)])     # (ptoas makes every A5 Left col_major)
def test_an_a5_matmul_tile_layout_ptoas_refuses_is_a_parse_error_at_the_matmul(loc, was, now, said, fix):
    """ptoas's A5 verifier takes a matmul's Acc only col_major / row_major (blayout / slayout; a
    short form that names none is row_major / none_box), its Right row_major / col_major - the
    fractals the Cube reads, so the run could not go on either: a ParseError at the matmul."""
    text = cube_vector_pair(1, "a5")
    ty = next(t for t in re.findall(r"!pto\.tile_buf<[^>]*>", text) if f"loc={loc}," in t)
    text = text.replace(ty, ty.replace(was, now))
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((16, 16)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32)
    args = dict(a=a, b=b, out=np.zeros((16, 16), np.float32))
    if said is None:
        r = run_pto(text=text, inputs=args)
        np.testing.assert_allclose(r.outputs["out"], 2 * (a @ b), rtol=1e-4, atol=1e-4)
        return
    with pytest.raises(ParseError) as e:
        run_pto(text=text, inputs=args)
    assert e.value.what.startswith(f'ptoas refuses this pto.tmatmul on A5 ("{said}")'), e.value.what
    assert e.value.fix.startswith(fix), e.value.fix
    assert e.value.where == f"<pto>:{line_of(text, 'pto.tmatmul')}:5", e.value.where


FFTS_T = "memref<256xi64>"


def with_set_ffts(text: str) -> str:
    """ptoas takes an A3 pto.sync.set / wait only in a function that sets its FFTS base: every
    function of ``text`` gets the FFTS workspace as its last parameter (each func.call passes it
    on) and every kernel a ``pto.set_ffts`` of it first."""
    text = re.sub(r"(func\.func (?:private )?@\w+\()([^)]*)\)",
                  lambda m: f"{m.group(1)}{m.group(2)}{', ' if m.group(2) else ''}%ffts: {FFTS_T})", text)
    text = re.sub(r"(func\.call @\w+\()([^)]*)\) : \(([^)]*)\)",
                  lambda m: f"{m.group(1)}{m.group(2)}, %ffts) : ({m.group(3)}, {FFTS_T})", text)
    return re.sub(r"(attributes \{pto\.kernel_kind = [^\n]*\{\n)", rf"\1    pto.set_ffts %ffts : {FFTS_T}\n", text)


def synced_pair(arch: str, split: bool) -> str:
    """A Cube kernel stores x @ x to y and sets cross-core flag 5; the Vector kernel waits for
    it and stores y + 1 to z - no pipes.  ``split``: each Vector core its half of the rows (it
    reads its sub-block index, so both run); else the whole tile, on AIV0 alone."""
    rows, off = ("8", "%row") if split else ("16", "%c0")
    lane = ("    %c8 = arith.constant 8 : index\n    %sb64 = pto.get_subblock_idx\n"
            "    %sb = arith.index_cast %sb64 : i64 to index\n"
            "    %row = arith.muli %sb, %c8 : index\n") if split else ""
    tv = "!pto.tensor_view<?x?xf32>"
    pv = f"!pto.partition_tensor_view<{rows}x16xf32>"
    text = f"""module attributes {{pto.target_arch = "{arch}"}} {{
  func.func private @cube(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : {tv}
    %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : {tv}
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : {tv} -> !pto.partition_tensor_view<16x16xf32>
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c16] : {tv} -> !pto.partition_tensor_view<16x16xf32>
{square_x_into_y("    ")}    pto.sync.set <PIPE_FIX>, 5
    return
  }}
  func.func private @vector(%y: !pto.ptr<f32>, %z: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
{lane}    %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : {tv}
    %zv = pto.make_tensor_view %z, shape = [%c16, %c16], strides = [%c16, %c1] : {tv}
    %yp = pto.partition_view %yv, offsets = [{off}, %c0], sizes = [%c{rows}, %c16] : {tv} -> {pv}
    %zp = pto.partition_view %zv, offsets = [{off}, %c0], sizes = [%c{rows}, %c16] : {tv} -> {pv}
    %t = pto.alloc_tile : {vec_t(rows, 16)}
    pto.sync.wait <PIPE_MTE2>, 5
    pto.tload ins(%yp : {pv}) outs(%t : {vec_t(rows, 16)})
    %one = arith.constant 1.0 : f32
    pto.tadds ins(%t, %one : {vec_t(rows, 16)}, f32) outs(%t : {vec_t(rows, 16)})
    pto.tstore ins(%t : {vec_t(rows, 16)}) outs(%zp : {pv})
    return
  }}
}}
"""
    return with_set_ffts(text) if arch == "a3" else text


@pytest.mark.parametrize("arch", ["a3", "a5"])
@pytest.mark.parametrize("split", [False, True])
def test_a_cube_sync_set_reaches_the_vector_cores_that_run(arch, split):
    """Without pipes, a Vector kernel that does not read its sub-block index runs on AIV0
    alone: the Cube's SET (A5: set_intra_block and ptoas's mirror to id + 16) reaches AIV0 and
    leaves no count for an AIV1 that runs nothing; split, both take it."""
    r = run_pto(text=synced_pair(arch, split), inputs=dict(x=X, y=np.zeros_like(X), z=np.zeros_like(X)))
    np.testing.assert_allclose(r.outputs["z"], X @ X + 1, rtol=1e-4)
    assert not r.warnings and not r.summary.leaks, (r.warnings, r.summary.leaks)
    assert (r.summary.cores["AIV1"]["state"] != "idle") == split


def test_an_a3_sync_in_a_function_without_set_ffts_is_refused_at_the_sync():
    """ptoas refuses an A3 pto.sync.set / wait in a function with no pto.set_ffts ("A3 inter-core
    sync requires explicit `pto.set_ffts` in the same function"): so does the run, at the sync."""
    text = synced_pair("a3", False)
    first = f"    pto.set_ffts %ffts : {FFTS_T}\n"
    assert text.count(first) == 2
    text = text.replace(first, "", 1)                       # the Cube's
    with pytest.raises(ParseError) as e:
        run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X), z=np.zeros_like(X)))
    assert e.value.where == f"<pto>:{line_of(text, 'pto.sync.set <PIPE_FIX>, 5')}:5", e.value.where
    assert "pto.sync.set in @cube, which has no pto.set_ffts: ptoas refuses it on A3" in e.value.what
    assert "pto.set_ffts %ffts : memref<256xi64>" in e.value.fix


def test_an_a5_pipe_fix_sync_set_of_aiv1s_id_is_refused_at_its_line():
    """ptoas mirrors an A5 PIPE_FIX set to id + 16 (AIV1's id): id 16 would set the Cube's id 32."""
    text = cross_core_synced("a5", cube_set=16)
    with pytest.raises(KernelError) as e:
        run_pto(text=text, protocol="pto-isa", inputs=dict(a=X, b=X, out=X * 0))
    assert e.value.where == f"<pto>:{line_of(text, 'pto.sync.set <PIPE_FIX>, 16')}:5"
    assert "set_intra_block(PIPE_FIX, 32)" in e.value.what and "id 0..15" in e.value.fix


def test_several_top_functions_need_func_and_func_picks_one():
    one = vector_kernel(IO + STORE)
    text = one.replace("  func.func @k(", "  func.func @other(%q: !pto.ptr<f32>) {\n    return\n  }\n  func.func @k(")
    with pytest.raises(ConfigError) as e:
        run_pto(text=text, inputs=dict(x=X, y=X))
    assert "--func" in e.value.fix
    r = run_pto(text=text, func="k", inputs=dict(x=X, y=np.zeros_like(X)))
    np.testing.assert_array_equal(r.outputs["y"], X)
    with pytest.raises(ConfigError):
        run_pto(text=text, func="missing")


def test_tprint_and_print_come_out_in_simulated_order(capsys):
    body = f"""    %s = arith.constant 1.0 : f32
    %c3 = arith.constant 3 : i32
    pto.print ins("n = %d", %c3 : i32)
    pto.tadds ins(%t, %s : {vec_t(16, 16)}, f32) outs(%t : {vec_t(16, 16)})
    pto.tprint ins(%t : {vec_t(16, 16)})
"""
    r = run_vec(body)
    assert len(r.prints) == 2 and r.prints[0] == "n = 3" and r.prints[1].startswith("TPRINT 16x16")
    assert r.prints[1].splitlines()[1].split()[:2] == [f"{X[0, 0] + 1:.4f}", f"{X[0, 1] + 1:.4f}"]
    assert capsys.readouterr().out.startswith("n = 3\nTPRINT 16x16")   # printed when the run ends


def test_a_tensor_view_with_a_negative_stride_is_refused_at_its_partition():
    """A view that walks GM backwards (pto-isa's TLOAD moves rows with unsigned DMA gaps): a
    KernelError at the line that makes the view the TLOAD uses, not a read of other bytes."""
    text = vector_kernel(f"""    %cm16 = arith.constant -16 : index
    %c240 = arith.constant 240 : index
    %q = pto.addptr %x, %c240 : !pto.ptr<f32> -> !pto.ptr<f32>
    %nv = pto.make_tensor_view %q, shape = [%c16, %c16], strides = [%cm16, %c1] : !pto.tensor_view<?x?xf32>
    %rp = pto.partition_view %nv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %t = pto.alloc_tile : {vec_t(16, 16)}
    pto.tload ins(%rp : !pto.partition_tensor_view<16x16xf32>) outs(%t : {vec_t(16, 16)})
""")
    with pytest.raises(KernelError) as e:
        run_pto(text=text, inputs=dict(x=X, y=X))
    assert e.value.what == "GlobalTensor of shape (16, 16) with stride (-16, 1): the stride of dimension 0 is -16, negative"
    assert f":{line_of(text, 'pto.partition_view %nv')}:" in e.value.where


def test_tile_elements_and_gm_scalars():
    """tgetval / tsetval (row-major element of a tile), load_scalar / store_scalar (one GM
    element), get_tensor_view_dim: x[0, 5] * 2 is written to y's element 3 and to the tile's
    element 0; the tile is stored."""
    body = f"""    %c5 = arith.constant 5 : index
    %c3 = arith.constant 3 : index
    %two = arith.constant 2.0 : f32
    %v = pto.tgetval ins(%t, %c5 : {vec_t(16, 16)}, index) outs : f32
    %w = arith.mulf %v, %two : f32
    pto.tsetval ins(%c0, %w : index, f32) outs(%t : {vec_t(16, 16)})
    %g = pto.load_scalar %x[%c5] : !pto.ptr<f32> -> f32
    %n = pto.get_tensor_view_dim %xv, %c1 : !pto.tensor_view<?x?xf32> -> index
    %nf = arith.index_cast %n : index to i64
    %nff = arith.sitofp %nf : i64 to f32
    %u = arith.addf %g, %nff : f32
"""
    tail = "    pto.store_scalar %u, %y[%c3] : !pto.ptr<f32>, f32\n"
    text = vector_kernel(IO + body + STORE + tail)
    r = run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X)))
    want = X.copy()
    want[0, 0] = X[0, 5] * 2
    want[0, 3] = X[0, 5] + 16
    np.testing.assert_allclose(r.outputs["y"], want, rtol=1e-6)
    bad = vector_kernel(IO + "    %c999 = arith.constant 999 : index\n"
                        "    %g = pto.load_scalar %x[%c999] : !pto.ptr<f32> -> f32\n")
    with pytest.raises(PtoPipeError) as e:
        run_pto(text=bad, inputs=dict(x=X, y=X))
    assert "outside the argument" in e.value.what and f":{line_of(bad, 'load_scalar')}:" in e.value.where


def test_trap_stops_at_its_line():
    text = vector_kernel(IO + "    pto.trap\n" + STORE)
    with pytest.raises(KernelError) as e:
        run_pto(text=text, inputs=dict(x=X, y=X))
    assert e.value.where.endswith(f":{line_of(text, 'pto.trap')}:5")


def test_event_ids_from_an_array_pair_sets_and_waits():
    """A set and a wait of different ids taken from an event-id array: the wait hangs."""
    def text(set_id, wait_id):
        return vector_kernel(f"""    %arr = pto.declare_eventid_array -> !pto.eventid_array<2>
    %i0 = arith.constant 0 : index
    %e1 = arith.constant {set_id} : index
    %e2 = arith.constant {wait_id} : index
    pto.eventid_array_set %arr[%i0], %e1 : !pto.eventid_array<2>
    %a = pto.eventid_array_get %arr[%i0] : !pto.eventid_array<2>
    pto.set_flag_dyn [#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, %a]
    pto.wait_flag_dyn [#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, %e2]
    %b = pto.alloc_tile : {vec_t(1, 16)}
""", params="")
    run_pto(text=text(1, 1))
    bad = text(1, 2)
    with pytest.raises(DeadlockError) as e:
        run_pto(text=bad)
    assert e.value.where.endswith(f":{line_of(bad, 'wait_flag_dyn')}:5")


def test_record_event_takes_ptoas_sync_op_types():
    body = """    pto.record_event [#pto.pipe_event_type<TLOAD>, #pto.pipe_event_type<TVEC>, #pto.event<EVENT_ID0>]
    pto.wait_event [#pto.pipe_event_type<TLOAD>, #pto.pipe_event_type<TVEC>, #pto.event<EVENT_ID0>]
    pto.barrier <PIPE_ALL>
"""
    np.testing.assert_array_equal(run_vec(body).outputs["y"], X)


def cube_vector_pair(platform_split: int, arch: str) -> str:
    """A Cube matmul pushed to both Vector cores (split 1: up / down halves)."""
    acc = "!pto.tile_buf<loc=acc, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, slayout=row_major, fractal=1024, pad=0>"
    mat = "!pto.tile_buf<loc=mat, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, slayout=row_major, fractal=512, pad=0>"
    left = "!pto.tile_buf<loc=left, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, slayout=row_major, fractal=512, pad=0>"
    right = "!pto.tile_buf<loc=right, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, slayout=col_major, fractal=512, pad=0>"
    half = vec_t(8, 16)
    gm = "gm_slot_buffer = %buf : !pto.ptr<f32>, " if arch == "a3" else ""
    return f"""module attributes {{pto.target_arch = "{arch}"}} {{
  func.func @mm(%a: !pto.ptr<f32>, %b: !pto.ptr<f32>, %out: !pto.ptr<f32>, %buf: !pto.ptr<f32>) attributes {{pto.entry}} {{
    func.call @cube(%a, %b, %out, %buf) : (!pto.ptr<f32>, !pto.ptr<f32>, !pto.ptr<f32>, !pto.ptr<f32>) -> ()
    func.call @vector(%a, %b, %out, %buf) : (!pto.ptr<f32>, !pto.ptr<f32>, !pto.ptr<f32>, !pto.ptr<f32>) -> ()
    return
  }}
  func.func private @cube(%a: !pto.ptr<f32>, %b: !pto.ptr<f32>, %out: !pto.ptr<f32>, %buf: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %z = arith.constant 0 : i32
    %imp = pto.import_reserved_buffer {{name = "ring", peer_func = @vector}} -> i32
    pto.aic_initialize_pipe {{dir_mask = 1, slot_size = 1024}} ({gm}c2v_consumer_buf = %imp : i32, v2c_consumer_buf = %z : i32)
    %av = pto.make_tensor_view %a, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %bv = pto.make_tensor_view %b, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %ap = pto.partition_view %av, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %bp = pto.partition_view %bv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %am = pto.alloc_tile : {mat}
    %bm = pto.alloc_tile : {mat}
    pto.tload ins(%ap : !pto.partition_tensor_view<16x16xf32>) outs(%am : {mat})
    pto.tload ins(%bp : !pto.partition_tensor_view<16x16xf32>) outs(%bm : {mat})
    %al = pto.alloc_tile : {left}
    %br = pto.alloc_tile : {right}
    pto.tmov ins(%am : {mat}) outs(%al : {left})
    pto.tmov ins(%bm : {mat}) outs(%br : {right})
    %acc = pto.alloc_tile : {acc}
    pto.tmatmul ins(%al, %br : {left}, {right}) outs(%acc : {acc})
    pto.tpush_to_aiv(%acc : {acc}) {{split = {platform_split}}}
    return
  }}
  func.func private @vector(%a: !pto.ptr<f32>, %b: !pto.ptr<f32>, %out: !pto.ptr<f32>, %buf: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %z = arith.constant 0 : i32
    %ring = pto.reserve_buffer {{name = "ring", size = 8192, location = #pto.address_space<vec>, auto = false, base = 0}} -> i32
    pto.aiv_initialize_pipe {{dir_mask = 1, slot_size = 1024}} ({gm}c2v_consumer_buf = %ring : i32, v2c_consumer_buf = %z : i32)
    %sb64 = pto.get_subblock_idx
    %sb = arith.index_cast %sb64 : i64 to index
    %row = arith.muli %sb, %c8 : index
    %ov = pto.make_tensor_view %out, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %op = pto.partition_view %ov, offsets = [%row, %c0], sizes = [%c8, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>
    %t = pto.tpop_from_aic {{split = {platform_split}}} -> {half}
    %two = arith.constant 2.0 : f32
    %r = pto.alloc_tile : {half}
    pto.tmuls ins(%t, %two : {half}, f32) outs(%r : {half})
    pto.tfree_from_aic {{split = {platform_split}}}
    pto.tstore ins(%r : {half}) outs(%op : !pto.partition_tensor_view<8x16xf32>)
    return
  }}
}}
"""


@pytest.mark.parametrize("arch", ["a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a_cube_vector_pair_through_the_ring_matches_numpy(arch, protocol):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((16, 16)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32)
    r = run_pto(text=cube_vector_pair(1, arch), protocol=protocol,
                inputs=dict(a=a, b=b, out=np.zeros((16, 16), np.float32)))
    np.testing.assert_allclose(r.outputs["out"], 2 * (a @ b), rtol=1e-4, atol=1e-4)
    assert r.func == "mm"


@pytest.mark.parametrize("arch", ["a3", "a5"])
def test_a_missing_tfree_is_reported_at_the_pop(arch):
    text = cube_vector_pair(1, arch).replace("    pto.tfree_from_aic {split = 1}\n", "")
    with pytest.raises(PtoPipeError) as e:
        run_pto(text=text, inputs=dict(a=X, b=X, out=X * 0))
    assert f":{line_of(text, 'pto.tpop_from_aic')}:" in str(e.value)


def holding_three(arch: str) -> str:
    """cube_vector_pair with three pushes, and three pops held at once before their TFREEs:
    out = 2 * a @ b + a @ b + a @ b."""
    half = vec_t(8, 16)
    text = cube_vector_pair(1, arch)
    push = next(l for l in text.splitlines(True) if "pto.tpush_to_aiv" in l)
    pop = next(l for l in text.splitlines(True) if "pto.tpop_from_aic" in l)
    free = next(l for l in text.splitlines(True) if "pto.tfree_from_aic" in l)
    mul = next(l for l in text.splitlines(True) if "pto.tmuls" in l)
    adds = "".join(f"    pto.tadd ins(%r, %t{k} : {half}, {half}) outs(%r : {half})\n" for k in (2, 3))
    return (text.replace(push, push * 3).replace(pop, pop + pop.replace("%t ", "%t2 ") + pop.replace("%t ", "%t3 "))
            .replace(mul, mul + adds).replace(free, free * 3))


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a3_frontend_ring_stages_as_many_tiles_as_ptoas_lowers_it_to(protocol):
    """ptoas lowers an A2A3 pto.aiv_initialize_pipe to TPipe<0, DIR_C2V, 1024, 8, 8, false>:
    LocalSlotNum 8 staging slots, so a kernel may hold three popped tiles (pto-isa's default
    of 2 would report the third TPOP, or under pto-isa let it overwrite the first)."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((16, 16)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32)
    r = run_pto(text=holding_three("a3"), protocol=protocol, inputs=dict(a=a, b=b, out=np.zeros((16, 16), np.float32)))
    np.testing.assert_allclose(r.outputs["out"], 4 * (a @ b), rtol=1e-4, atol=1e-4)


def test_an_l2g2l_ring_without_local_slot_num_stages_its_slot_num_as_ptoas_writes_it():
    """PTOAS's PTOToEmitC gives a pto.initialize_l2g2l_pipe without local_slot_num the SlotNum
    as LocalSlotNum: three pushed tiles held at once on an 8-slot ring run (pto-isa's default
    of 2 would report the third TPOP).  out = 3 * (a @ b) + 1."""
    text = (pathlib.Path(__file__).parents[1] / "pto_corpus" / "x_internal_pipe_a3.pto").read_text()
    text = text.replace("      local_slot_num = 8,\n", "")
    lines = text.splitlines(True)
    push = next(l for l in lines if "pto.tpush(%p_acc" in l)
    pop = next(l for l in lines if "pto.tpop(%fifo_tile" in l)
    decl = next(l for l in lines if "%fifo_tile = pto.declare_tile" in l)
    adds = next(l for l in lines if "pto.tadds ins(%fifo_tile" in l)
    free = next(l for l in lines if "pto.tfree(%pipe" in l)
    vt = "!pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=16, v_row=8, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>"
    more = "".join(decl.replace("%fifo_tile", f"%f{k}") + pop.replace("%fifo_tile", f"%f{k}") for k in (2, 3))
    sums = "".join(f"    pto.tadd ins(%res, %f{k} : {vt}, {vt}) outs(%res : {vt})\n" for k in (2, 3))
    text = text.replace(push, push * 3).replace(pop, pop + more).replace(adds, adds + sums).replace(free, free * 3)
    assert "local_slot_num =" not in text
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((16, 16)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32)
    r = run_pto(text=text, inputs=dict(a=a, b=b, out=np.zeros((16, 16), np.float32)))
    np.testing.assert_allclose(r.outputs["out"], 3 * (a @ b) + 1, rtol=1e-4, atol=1e-4)


def cross_core_synced(arch: str, cube_set: int = 9, vec_wait: int = 9, vec_set: int = 10,
                      cube_wait: int = 10) -> str:
    """cube_vector_pair whose cores also sync through cross-core flags of their own: the Cube
    sets ``cube_set`` after its push and waits ``cube_wait`` before returning, each Vector core
    waits ``vec_wait`` before its pop and sets ``vec_set`` after its store.  On A5 the Cube's
    ids 16..31 are AIV1's: it waits for AIV1's SET at ``cube_wait + 16`` too."""
    text = cube_vector_pair(1, arch)
    waits = f"    pto.sync.wait <PIPE_FIX>, {cube_wait}\n" + (
        f"    pto.sync.wait <PIPE_FIX>, {cube_wait + 16}\n" if arch == "a5" else "")
    push = next(l for l in text.splitlines(True) if "pto.tpush_to_aiv" in l)
    pop = next(l for l in text.splitlines(True) if "pto.tpop_from_aic" in l)
    store = next(l for l in text.splitlines(True) if "pto.tstore ins(%r" in l)
    text = (text.replace(push, push + f"    pto.sync.set <PIPE_FIX>, {cube_set}\n" + waits)
            .replace(pop, f"    pto.sync.wait <PIPE_V>, {vec_wait}\n" + pop)
            .replace(store, store + f"    pto.sync.set <PIPE_MTE3>, {vec_set}\n"))
    return with_set_ffts(text) if arch == "a3" else text


@pytest.mark.parametrize("arch,protocol", [("a3", "spec"), ("a5", "pto-isa")])
def test_cross_core_sync_set_and_wait_pair_on_the_cluster_flags(arch, protocol):
    """pto.sync.set / wait as ptoas lowers them (A2A3 FFTS mode 2: the Cube's SET reaches both
    Vector cores and its WAIT takes both of theirs; A5 set_intra_block, a PIPE_FIX SET mirrored
    to id + 16 for AIV1) run clean, as many SETs as WAITs."""
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((16, 16)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32)
    r = run_pto(text=cross_core_synced(arch), protocol=protocol,
                inputs=dict(a=a, b=b, out=np.zeros((16, 16), np.float32)))
    np.testing.assert_allclose(r.outputs["out"], 2 * (a @ b), rtol=1e-4, atol=1e-4)
    assert not r.warnings and not r.summary.leaks


@pytest.mark.parametrize("arch", ["a3", "a5"])
def test_a_cross_core_wait_nothing_sets_is_a_deadlock_at_the_wait(arch):
    text = cross_core_synced(arch, vec_set=11)          # the Cube waits for 10, the Vector cores set 11
    with pytest.raises(DeadlockError) as e:
        run_pto(text=text, protocol="pto-isa", inputs=dict(a=X, b=X, out=X * 0))
    assert e.value.where == f"<pto>:{line_of(text, 'pto.sync.wait <PIPE_FIX>, 10')}:5"
    assert "cross-core flag 10" in e.value.fix


@pytest.mark.parametrize("protocol,fid", [("spec", 3), ("pto-isa", 0)])
def test_a_cross_core_sync_on_a_flag_of_a_ring_is_a_config_error_at_the_sync(protocol, fid):
    """Flag 0 is the C2V ring's ready flag under both protocols; under spec the ring counts on
    flags 0..7 (one a slot), under pto-isa on 0 and 1 only - the fix says so."""
    text = cross_core_synced("a5", cube_set=fid, vec_wait=fid)
    with pytest.raises(ConfigError) as e:
        run_pto(text=text, protocol=protocol, inputs=dict(a=X, b=X, out=X * 0))
    assert f"counts on (under the {protocol} protocol)" in e.value.what
    syncs = {line_of(text, f"pto.sync.set <PIPE_FIX>, {fid}"), line_of(text, f"pto.sync.wait <PIPE_V>, {fid}")}
    assert int(e.value.where.split(":")[1]) in syncs       # whichever core reaches its sync first
    assert ("run it with --protocol pto-isa" in e.value.fix) == (protocol == "spec")


def test_a_ring_bound_on_a_flag_the_kernel_synced_on_is_a_config_error_at_the_init():
    text = cross_core_synced("a3")
    init = next(l for l in text.splitlines(True) if "pto.aic_initialize_pipe" in l)
    text = text.replace(init, "    pto.sync.set <PIPE_FIX>, 0\n" + init)     # the ring's ready flag
    with pytest.raises(ConfigError) as e:
        run_pto(text=text, protocol="pto-isa", inputs=dict(a=X, b=X, out=X * 0))
    assert e.value.where.startswith(f"<pto>:{line_of(text, 'pto.aic_initialize_pipe')}:")
    assert f"a cross-core sync at <pto>:{line_of(text, 'pto.sync.set <PIPE_FIX>, 0')}:5" in e.value.what


def test_a_cross_core_set_nothing_waits_for_is_a_warning_naming_the_set():
    text = cross_core_synced("a5")
    text = text.replace(next(l for l in text.splitlines(True) if "pto.sync.wait <PIPE_V>" in l), "")
    r = run_pto(text=text, protocol="pto-isa", inputs=dict(a=X, b=X, out=X * 0))
    set_at = f"<pto>:{line_of(text, 'pto.sync.set <PIPE_FIX>')}:5"
    assert sorted(r.summary.leaks) == [(f"flag 9 (AIC->AIV{k}) left at count 1: SETs never consumed by a WAIT", set_at)
                                       for k in (0, 1)]


def test_a_cross_core_set_left_over_is_told_at_the_set_not_at_the_wait_that_came_first():
    """The Cube waits for flag 10 before the Vector cores set it; each sets it twice: the SET
    left over is the later one, and the warning names it (it named the Cube's WAIT, the flag's
    first use)."""
    text = cross_core_synced("a3")
    first = next(l for l in text.splitlines(True) if "pto.sync.set <PIPE_MTE3>, 10" in l)
    text = text.replace(first, first + "    pto.sync.set <PIPE_V>, 10\n")
    r = run_pto(text=text, protocol="pto-isa", inputs=dict(a=X, b=X, out=X * 0))
    set_at = f"<pto>:{line_of(text, 'pto.sync.set <PIPE_V>, 10')}:5"
    assert sorted(r.summary.leaks) == [(f"flag 10 (AIV{k}->AIC) left at count 1: SETs never consumed by a WAIT", set_at)
                                       for k in (0, 1)]


def left_right_pair(cols: int) -> str:
    """cube_vector_pair on A5 with a 16 x ``cols`` Acc split LEFT_RIGHT: each Vector core pops
    16 x cols/2, doubles it and stores its column half."""
    text = cube_vector_pair(1, "a5").replace("{split = 1}", "{split = 2}")
    acc16 = "rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, slayout=row_major, fractal=1024"
    right16 = "loc=right, dtype=f32, rows=16, cols=16, v_row=16, v_col=16"
    mat16 = "loc=mat, dtype=f32, rows=16, cols=16, v_row=16, v_col=16"
    lines = []
    for l in text.splitlines(True):
        if "%bm" in l or "%br" in l or "%bp" in l or "%bv" in l or "%acc" in l:
            l = (l.replace(acc16, acc16.replace("cols=16", f"cols={cols}").replace("v_col=16", f"v_col={cols}"))
                 .replace(right16, right16.replace("cols=16", f"cols={cols}").replace("v_col=16", f"v_col={cols}")))
            if "%bm" in l or "%bp" in l:
                l = l.replace(mat16, mat16.replace("cols=16", f"cols={cols}").replace("v_col=16", f"v_col={cols}"))
            l = (l.replace("sizes = [%c16, %c16]", f"sizes = [%c16, %c{cols}]")
                 .replace("16x16xf32>", f"16x{cols}xf32>") if ("%bp" in l or "%bv =" in l) else l)
            if "%bv =" in l:
                l = l.replace("shape = [%c16, %c16], strides = [%c16, %c1]", f"shape = [%c16, %c{cols}], strides = [%c{cols}, %c1]")
        lines.append(l)
    text = "".join(lines)
    half = vec_t(16, cols // 2)
    return (text.replace(vec_t(8, 16), half).replace("slot_size = 1024", f"slot_size = {64 * cols}")
            .replace("size = 8192", f"size = {8 * 64 * cols}")
            .replace("%c16 = arith.constant 16 : index\n", f"%c16 = arith.constant 16 : index\n    %c{cols} = arith.constant {cols} : index\n"
                     if cols != 16 else "%c16 = arith.constant 16 : index\n")
            .replace("%row = arith.muli %sb, %c8 : index", f"%row = arith.muli %sb, %c{cols // 2 if cols != 16 else 8} : index")
            .replace("%ov = pto.make_tensor_view %out, shape = [%c16, %c16], strides = [%c16, %c1]",
                     f"%ov = pto.make_tensor_view %out, shape = [%c16, %c{cols}], strides = [%c{cols}, %c1]")
            .replace("offsets = [%row, %c0], sizes = [%c8, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>",
                     f"offsets = [%c0, %row], sizes = [%c16, %c{cols // 2}] : !pto.tensor_view<?x?xf32> -> "
                     f"!pto.partition_tensor_view<16x{cols // 2}xf32>")
            .replace("outs(%op : !pto.partition_tensor_view<8x16xf32>)", f"outs(%op : !pto.partition_tensor_view<16x{cols // 2}xf32>)"))


def test_an_a5_left_right_push_of_a_16_column_acc_is_refused_at_the_push_by_run_and_static_check():
    """pto-isa's A5 pushAcc2VecFiFo static_asserts a multiple of 32 columns for a LEFT_RIGHT
    push of an Acc into UB (the FIX pipe's DualModeSplitN TMOV); 32 columns run to numpy."""
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((16, 16)).astype(np.float32), rng.standard_normal((16, 32)).astype(np.float32)
    r = run_pto(text=left_right_pair(32), inputs=dict(a=a, b=b, out=np.zeros((16, 32), np.float32)))
    np.testing.assert_allclose(r.outputs["out"], 2 * (a @ b), rtol=1e-4, atol=1e-4)
    text = left_right_pair(16)
    at = f"<pto>:{line_of(text, 'pto.tpush_to_aiv')}:"
    with pytest.raises(CompileError) as e:          # the static check (VerifyPipes)
        load_pto("<pto>", text=text)
    assert e.value.where.startswith(at)
    assert "a multiple of 32 columns" in e.value.what and "static_assert" in e.value.what
    load_pto("<pto>", text=left_right_pair(32))
    with pytest.raises(PtoPipeError) as e:          # the run's own check
        run_pto(text=text, inputs=dict(a=X, b=X, out=X * 0))
    assert e.value.where.startswith(at) and "a multiple of 32 columns" in e.value.what


def test_missing_inputs_get_seeded_data_and_notes_and_the_same_seed_the_same_run():
    text = cube_vector_pair(1, "a5")
    r1, r2 = run_pto(text=text, data_seed=4), run_pto(text=text, data_seed=4)
    np.testing.assert_array_equal(r1.outputs["out"], r2.outputs["out"])
    assert r1.summary.cycles == r2.summary.cycles
    assert any(n.startswith("a: seeded random float32[16, 16]") for n in r1.notes)
    assert not np.array_equal(run_pto(text=text, data_seed=5).outputs["out"], r1.outputs["out"])


def test_an_input_of_the_wrong_size_or_dtype_is_refused():
    with pytest.raises(ConfigError) as e:
        run_pto(text=vector_kernel(IO + STORE), inputs=dict(x=np.zeros((4, 4), np.float32)))
    assert "float32[4, 4] but the kernel takes f32[16, 16]" in e.value.what
    with pytest.raises(ConfigError):
        run_pto(text=vector_kernel(IO + STORE), inputs=dict(x=X.astype(np.float16)))
    with pytest.raises(ConfigError) as e:
        run_pto(text=vector_kernel(IO + STORE), inputs=dict(zz=X))
    assert "no parameter 'zz'" in e.value.what


# -- placement ---------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 8), st.integers(0, 6)), min_size=1, max_size=12),
       st.booleans())
def test_placed_tiles_never_overlap_while_both_are_live(tiles, in_loop):
    """Random allocation sites (rows, how many statements later their last use comes), some
    in a loop using a tile from before it: no two tiles live at once share a byte."""
    lines, uses = [], []
    for i, (rows, later) in enumerate(tiles):
        lines.append(f"    %t{i} = pto.alloc_tile : {vec_t(rows * 8, 16)}")
        uses.append((i + later, i))
    n = len(tiles)
    for k in range(n + 6):
        for at, i in uses:
            if at == k:
                lines.append(f"    pto.texpands ins(%f : f32) outs(%t{i} : {vec_t(tiles[i][0] * 8, 16)})")
    if in_loop:
        lines.append("    scf.for %i = %c0 to %c16 step %c1 {")
        lines.append(f"      %u = pto.alloc_tile : {vec_t(8, 16)}")
        lines.append(f"      pto.texpands ins(%f : f32) outs(%t0 : {vec_t(tiles[0][0] * 8, 16)})")
        lines.append("    }")
    text = vector_kernel("    %f = arith.constant 1.0 : f32\n" + "\n".join(lines) + "\n", params="")
    prog = read_program(text)
    f = prog.funcs["k"]
    lay = plan_layout(prog, ptopipe.get_platform("a5"))
    specs, ranges = live_ranges(f, prog)
    items = [(lay.sites[k], lay.sites[k] + specs[k].nbytes, *ranges[k]) for k in specs]
    for i, (a1, b1, lo1, hi1) in enumerate(items):
        assert a1 % 32 == 0
        for a2, b2, lo2, hi2 in items[i + 1:]:
            if not (hi1 < lo2 or hi2 < lo1):
                assert b1 <= a2 or b2 <= a1, (items, text)
    run_pto(text=text)


# -- the syntax tree ---------------------------------------------------------------------------------
def test_statements_split_as_ptoas_prints_them():
    text = """module {
  func.func @f(%a: index,
               %b: index) attributes {pto.entry} {
    %r:2 = scf.while (%i = %a, %j = %b)
        : (index, index) -> (index, index) {
      %c = arith.cmpi slt, %i, %j : index
      scf.condition(%c) %i, %j : index, index
    } do {
    ^bb0(%x: index, %y: index):
      scf.yield %x, %y : index, index
    }
    pto.aic_initialize_pipe {dir_mask = 1, slot_size = 1024}
      (c2v_consumer_buf = %a : i32,
       v2c_consumer_buf = %b : i32)
    return
  }
}
"""
    (mod,) = parse_tree(text)
    (f,) = mod.regions[0][0].stmts
    w, init, ret = f.regions[0][0].stmts
    assert list(w.results) == ["%r#0", "%r#1"] and w.name == "scf.while" and len(w.regions) == 2
    assert w.regions[1][-1].label == "^bb0" and w.regions[1][-1].args == [("%x", "index"), ("%y", "index")]
    assert init.name == "pto.aic_initialize_pipe" and init.attr("slot_size")[0].text == "1024"
    assert [t.text for t in init.attr("v2c_consumer_buf")] == ["%b", ":", "i32"] and ret.name == "return"


@pytest.mark.parametrize("bad,msg", [
    ("  func.func @f() {\n    return\n", "'}' missing at the end of the file"),
    ("  }\n", "'}' closes no region"),
    ("  func.func @f() {\n    %x = \n  }\n", "expected an operation name"),
])
def test_malformed_nesting_is_a_parse_error_at_line_col(bad, msg):
    with pytest.raises(ParseError) as e:
        parse_tree("module {\n" + bad + "}\n", "m.pto")
    assert msg in e.value.what and e.value.where.startswith("m.pto:")


@settings(max_examples=int(__import__("os").environ.get("PTO_FUZZ_EXAMPLES", 60)), deadline=None)
@given(st.data())
def test_mutated_real_style_text_gives_only_ptopipe_errors(data):
    """Truncations and token edits of a cross-core file: read and run, or a PtoPipeError."""
    text = cube_vector_pair(1, "a5")
    k = data.draw(st.integers(0, len(text) - 1))
    junk = data.draw(st.sampled_from(["", "{", "}", "(", "%", "%zz", "@q", "=", ":", "\n", "pto.tadd",
                                      "^bb1:", "<", ">", "1x", "-> i32", ","]))
    cut = data.draw(st.integers(0, 40))
    mutated = text[:k] + junk + text[k + cut:]
    try:
        run_pto(text=mutated, timeout=10)
    except PtoPipeError as e:
        assert e.where or isinstance(e, ConfigError)


@pytest.mark.parametrize("mode,fn", [("gt", np.greater), ("lt", np.less), ("eq", np.equal)])
def test_compare_modes_reach_the_compare(mode, fn):
    """``{cmpMode = #pto<cmp MODE>}`` selects the comparison: the mask picks x where x MODE 3."""
    mask = "!pto.tile_buf<loc=vec, dtype=ui8, rows=16, cols=32, v_row=16, v_col=32, blayout=row_major, slayout=none_box, fractal=512, pad=0>"
    body = f"""    %thr = arith.constant 3.0 : f32
    %zero = arith.constant 0.0 : f32
    %m = pto.alloc_tile : {mask}
    pto.tcmps ins(%t, %thr {{cmpMode = #pto<cmp {mode}>}} : {vec_t(16, 16)}, f32) outs(%m : {mask})
    %tmp = pto.alloc_tile : {vec_t(16, 16)}
    pto.tsels ins(%m, %t, %tmp, %zero : {mask}, {vec_t(16, 16)}, {vec_t(16, 16)}, f32) outs(%t : {vec_t(16, 16)})
"""
    np.testing.assert_array_equal(run_vec(body).outputs["y"], np.where(fn(X, 3.0), X, 0))


def test_a_function_of_sections_runs_each_section_on_its_kind_of_core():
    """No kernel_kind, a cube section (x @ x stored to y) and a vector section (y + 1 stored
    to x, after a flag from nothing - the two run on different cores): both run."""
    text = vector_kernel(f"""    pto.section.cube {{
      %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
      %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
      %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
      %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
{square_x_into_y("      ")}    }}
    pto.section.vector {{
      %zv = pto.make_tensor_view %z, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
      %zp = pto.partition_view %zv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
      %v = pto.alloc_tile : {vec_t(16, 16)}
      pto.tload ins(%zp : !pto.partition_tensor_view<16x16xf32>) outs(%v : {vec_t(16, 16)})
      %one = arith.constant 1.0 : f32
      pto.tadds ins(%v, %one : {vec_t(16, 16)}, f32) outs(%v : {vec_t(16, 16)})
      pto.tstore ins(%v : {vec_t(16, 16)}) outs(%zp : !pto.partition_tensor_view<16x16xf32>)
    }}
""", params="%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %z: !pto.ptr<f32>")
    r = run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X), z=X.copy()))
    np.testing.assert_allclose(r.outputs["y"], X @ X, rtol=1e-4)
    np.testing.assert_allclose(r.outputs["z"], X + 1, rtol=1e-6)
    assert not r.warnings


def test_a_function_of_cube_sections_only_runs_on_the_cube():
    """Only a cube section: the Vector cores have nothing to run, and no note says one ran."""
    text = vector_kernel(f"""    pto.section.cube {{
      %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
      %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
      %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
      %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
{square_x_into_y("      ")}    }}
""")
    r = run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X)))
    np.testing.assert_allclose(r.outputs["y"], X @ X, rtol=1e-4)
    assert not [n for n in r.notes if "Vector kernel" in n]
    assert [n for n, c in r.summary.cores.items() if c["state"] != "idle"] == ["AIC"]


def test_a_tile_read_before_anything_wrote_it_is_a_warning_at_the_read():
    """A bias added before it is loaded: the run computes what the device would (here x + 0),
    and warns at the add, once; the same bytes written under another name (an in-place alias
    at one address) count as written."""
    text = vector_kernel(IO + f"""    %b = pto.alloc_tile : {vec_t(16, 16)}
    pto.tadd ins(%t, %b : {vec_t(16, 16)}, {vec_t(16, 16)}) outs(%t : {vec_t(16, 16)})
    pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%b : {vec_t(16, 16)})
""" + STORE)
    r = run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X)))
    (w,) = r.warnings
    assert w.startswith(f"<pto>:{line_of(text, 'pto.tadd')}:5: pto.tadd reads %b") and "before anything wrote" in w
    alias = vector_kernel(IO + f"""    %a0 = arith.constant 4096 : i64
    %u = pto.alloc_tile addr = %a0 : {vec_t(16, 16)}
    %v = pto.alloc_tile addr = %a0 : {vec_t(16, 16)}
    %one = arith.constant 1.0 : f32
    pto.texpands ins(%one : f32) outs(%u : {vec_t(16, 16)})
    pto.tadd ins(%t, %v : {vec_t(16, 16)}, {vec_t(16, 16)}) outs(%t : {vec_t(16, 16)})
""" + STORE)
    r = run_pto(text=alias, inputs=dict(x=X, y=np.zeros_like(X)))
    assert not r.warnings and not r.summary.leaks
    np.testing.assert_allclose(r.outputs["y"], X + 1, rtol=1e-6)


@pytest.mark.parametrize("arch", ["a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a_pipe_init_that_runs_twice_is_reported_at_the_init(arch, protocol):
    text = cube_vector_pair(1, arch)
    init = next(ln for ln in text.splitlines() if "pto.aiv_initialize_pipe" in ln)
    text = text.replace(init, "    %c2 = arith.constant 2 : index\n    scf.for %i = %c0 to %c2 step %c1 {\n"
                              f"  {init}\n    }}")
    with pytest.raises(ConfigError) as e:
        run_pto(text=text, protocol=protocol, inputs=dict(a=X, b=X, out=X * 0))
    assert "runs a second time on aiv0" in e.value.what
    assert e.value.where.endswith(f":{line_of(text, 'pto.aiv_initialize_pipe')}:7")


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_tpack_converts_as_static_cast(platform):
    """f32 -> i32 toward zero, i32 -> i16 keeping the low bits (then back to f32 to store)."""
    i32, i16 = vec_t(16, 16, "i32"), vec_t(16, 16, "i16")
    body = (f"    %s = arith.constant -3.0e5 : f32\n    %k = arith.constant 3.3e2 : f32\n"
            f"    pto.tmuls ins(%t, %k : {vec_t(16, 16)}, f32) outs(%t : {vec_t(16, 16)})\n"
            f"    pto.tadds ins(%t, %s : {vec_t(16, 16)}, f32) outs(%t : {vec_t(16, 16)})\n"
            f"    %w = pto.alloc_tile : {i32}\n    %n = pto.alloc_tile : {i16}\n"
            f"    pto.tpack ins(%t : {vec_t(16, 16)}) outs(%w : {i32})\n"
            f"    pto.tpack ins(%w : {i32}) outs(%n : {i16})\n"
            f"    pto.tsync ins(%x, %y : !pto.ptr<f32>, !pto.ptr<f32>)\n"
            f"    pto.tcvt ins(%n : {i16}) outs(%t : {vec_t(16, 16)})\n")
    r = run_vec(body, platform=platform)
    v = X * np.float32(330) + np.float32(-3e5)
    want = np.trunc(v).astype(np.int32).astype(np.int16).astype(np.float32)
    np.testing.assert_array_equal(r.outputs["y"], want)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("sat", ["", ", sat_mode = #pto<saturation_mode OFF>", ", sat_mode = #pto<saturation_mode ON>"])
def test_tcvt_without_a_saturation_mode_wraps_f32_to_i16_as_pto_isa(platform, sat):
    """pto.tcvt f32 -> i16 without a sat_mode: pto-isa's NPU default for the pair is
    SaturationMode::OFF (rounded through int32, low 16 bits kept), not a clamp; ptoas's
    ``sat_mode = #pto<saturation_mode ON>`` clamps, OFF wraps."""
    i16 = vec_t(16, 16, "i16")
    body = (f"    %s = arith.constant -3.0e5 : f32\n    %k = arith.constant 3.3e2 : f32\n"
            f"    pto.tmuls ins(%t, %k : {vec_t(16, 16)}, f32) outs(%t : {vec_t(16, 16)})\n"
            f"    pto.tadds ins(%t, %s : {vec_t(16, 16)}, f32) outs(%t : {vec_t(16, 16)})\n"
            f"    %n = pto.alloc_tile : {i16}\n"
            f"    pto.tcvt ins(%t {{rmode = #pto<round_mode CAST_RINT>{sat}}} : {vec_t(16, 16)}) outs(%n : {i16})\n"
            f"    pto.tcvt ins(%n : {i16}) outs(%t : {vec_t(16, 16)})\n")
    r = run_vec(body, platform=platform)
    v = X * np.float32(330) + np.float32(-3e5)
    r64 = np.rint(v.astype(np.float64))
    want = np.clip(r64, -32768, 32767) if "ON" in sat else r64.astype(np.int64).astype(np.int16)
    np.testing.assert_array_equal(r.outputs["y"], want.astype(np.float32))
    assert (v < -32768).all()


@pytest.mark.parametrize("word,rounded", [("NONE", np.trunc), ("RINT", np.rint), ("CAST_RINT", np.rint),
                                          ("CAST_NONE", None), ("CAST_FLOOR", None), ("CAST_ROUND", None)])
def test_tcvt_takes_the_round_modes_ptoas_reads_and_refuses_the_others_at_the_word(word, rounded):
    """ptoas's RoundMode is NONE, RINT, ROUND, FLOOR, CEIL, TRUNC, ODD, CAST_RINT: another word
    (pto-isa's C++ spelling CAST_NONE ...) is ptoas's parse error at the word, so a ParseError
    there, not a run of the mode the word names."""
    i32 = vec_t(16, 16, "i32")
    body = (f"    %n = pto.alloc_tile : {i32}\n"
            f"    pto.tcvt ins(%t {{rmode = #pto<round_mode {word}>}} : {vec_t(16, 16)}) outs(%n : {i32})\n"
            f"    pto.tcvt ins(%n : {i32}) outs(%t : {vec_t(16, 16)})\n")
    if rounded is not None:
        np.testing.assert_array_equal(run_vec(body).outputs["y"], rounded(X))
        return
    text = vector_kernel(IO + body + STORE)
    with pytest.raises(ParseError) as e:
        run_pto(text=text, inputs=dict(x=X, y=X * 0))
    ln = line_of(text, word)
    assert e.value.where == f"<pto>:{ln}:{text.splitlines()[ln - 1].index(word) + 1}"
    assert "NONE, RINT, ROUND, FLOOR, CEIL, TRUNC, ODD, CAST_RINT" in e.value.what


def test_a_value_of_an_earlier_loop_body_is_a_parse_error_at_its_use():
    """MLIR visibility: %k of the first loop's body is not visible in the second loop (ptoas:
    use of undeclared SSA value name); an iter_arg, the induction variable and an enclosing
    region's values are."""
    body = f"""    %c2 = arith.constant 2 : index
    %true = arith.constant true
    %s = arith.constant 1.0 : f32
    scf.for %i = %c0 to %c2 step %c1 {{
      %k = arith.muli %i, %c16 : index
      pto.tadds ins(%t, %s : {vec_t(16, 16)}, f32) outs(%t : {vec_t(16, 16)})
    }}
    %n = scf.for %j = %c0 to %c2 step %c1 iter_args(%a = %c0) -> (index) {{
      %m = arith.addi %a, %j : index
      scf.if %true {{
        %q = arith.addi %m, %k : index
      }}
      scf.yield %m : index
    }}
"""
    text = vector_kernel(IO + body.replace("%m, %k", "%m, %c1") + STORE)
    np.testing.assert_allclose(run_pto(text=text, inputs=dict(x=X, y=X * 0)).outputs["y"], X + 2, rtol=1e-6)
    text = vector_kernel(IO + body + STORE)
    with pytest.raises(ParseError) as e:
        run_pto(text=text, inputs=dict(x=X, y=X * 0))
    assert "%k is used outside the region that defines it" in e.value.what
    ln = line_of(text, "%q = ")
    assert e.value.where == f"<pto>:{ln}:{text.splitlines()[ln - 1].index('%k') + 1}"


def test_a_value_defined_twice_where_the_first_is_visible_is_a_parse_error_at_the_second():
    """MLIR's rule (ptoas: redefinition of SSA value), whether or not the static verifier
    runs: a name defined again in its region or a nested one is refused at the second
    definition; sibling loop bodies may each define it."""
    body = f"""    %c2 = arith.constant 2 : index
    %true = arith.constant true
    %s = arith.constant 1.0 : f32
    scf.for %i = %c0 to %c2 step %c1 {{
      %k = arith.muli %i, %c16 : index
      pto.tadds ins(%t, %s : {vec_t(16, 16)}, f32) outs(%t : {vec_t(16, 16)})
    }}
    scf.for %i = %c0 to %c2 step %c1 {{
      %k = arith.muli %i, %c16 : index
      %k2 = arith.addi %k, %c1 : index
    }}
"""
    from ptopipe.codegen.pto_load import run_pto as run_checked      # the static verifier in front
    ok = vector_kernel(IO + body + STORE)
    np.testing.assert_allclose(run_checked(text=ok, inputs=dict(x=X, y=X * 0)).outputs["y"], X + 2,
                               rtol=1e-6)
    for bad, second in ((body.replace("%k2 = ", "%k = "), "%k = arith.addi"),
                        (body.replace("%k2 = ", "%s = "), "%s = arith.addi")):
        text = vector_kernel(IO + bad + STORE)
        for static in (True, False):
            with pytest.raises(ParseError) as e:
                run_checked(text=text, inputs=dict(x=X, y=X * 0), static=static)
            name, ln = second.split()[0], line_of(text, second)
            first = max(i for i, l in enumerate(text.splitlines()[:ln - 1], 1) if l.strip().startswith(name + " = "))
            assert f"redefinition of SSA value {name} (first defined at {first}:" in e.value.what
            assert e.value.where == f"<pto>:{ln}:{text.splitlines()[ln - 1].index(name) + 1}"


def test_a_vec_tile_stored_to_a_view_of_another_layout_is_an_error_at_the_store():
    """pto-isa's TSTORE / TLOAD of a Vec tile need the view's layout (ND for a row-major view,
    DN for one ``#pto.layout<dn>`` names): an NZ tile stored to a row-major view was written
    as if converted; a column-major view and tile match."""
    nz = vec_t(16, 16).replace("blayout=row_major, slayout=none_box", "blayout=col_major, slayout=row_major")
    body = f"    %z = pto.alloc_tile : {nz}\n    pto.tmov ins(%t : {vec_t(16, 16)}) outs(%z : {nz})\n"
    text = vector_kernel(IO + body + STORE.replace(f"%t : {vec_t(16, 16)}", f"%z : {nz}"))
    with pytest.raises(KernelError) as e:
        run_pto(text=text, inputs=dict(x=X, y=X * 0))
    assert "TSTORE of the NZ tile" in e.value.what and "an ND GM tensor" in e.value.what
    assert e.value.where == f"<pto>:{line_of(text, 'pto.tstore')}:5"
    dn = vec_t(16, 16).replace("blayout=row_major", "blayout=col_major")
    text = vector_kernel(IO.replace("strides = [%c16, %c1] {layout = #pto.layout<nd>} :", "strides = [%c16, %c1] :")
                         .replace("strides = [%c16, %c1] :", "strides = [%c1, %c16] {layout = #pto.layout<dn>} :")
                         .replace(f"outs(%t : {vec_t(16, 16)})", f"outs(%t : {dn})").replace(f"%t = pto.alloc_tile : {vec_t(16, 16)}", f"%t = pto.alloc_tile : {dn}")
                         + STORE.replace(vec_t(16, 16), dn))
    assert text.count("#pto.layout<dn>") == 2 and "layout<nd>" not in text
    np.testing.assert_array_equal(run_pto(text=text, inputs=dict(x=X, y=X * 0)).outputs["y"], X)


@pytest.mark.parametrize("static", [True, False])
def test_a_vec_tile_shape_pto_isa_refuses_is_an_error_at_its_type(static):
    """pto-isa's Tile static_asserts whole 32-byte rows (row-major, none_box), whole 32-byte
    columns (col_major, none_box) and whole fractal columns (boxed) on the static shape; the
    valid shape is free and a boxed Vec tile's rows too.  A memref in vec is a row-major tile."""
    from ptopipe.codegen.pto_load import run_pto as run_checked

    def tb(r, c, vc, bl="row_major", sl="none_box"):
        return (f"!pto.tile_buf<loc=vec, dtype=f32, rows={r}, cols={c}, v_row={r}, v_col={vc}, "
                f"blayout={bl}, slayout={sl}, fractal=512, pad=0>")
    for ty, why, fix in ((tb(16, 12, 10), "row is Cols x 4 = 48 bytes", "rows=16, cols=16 and give the data's "
                          "shape as the valid shape (v_row=16, v_col=10)"),
                         (tb(12, 16, 16, "col_major"), "column is Rows x 4 = 48 bytes", "rows=16, cols=16"),
                         (tb(16, 4, 4, "col_major", "row_major"), "whole 16x8 fractals: Cols a multiple of 8",
                          "rows=16, cols=8")):
        text = vector_kernel(IO + f"    %w = pto.alloc_tile : {ty}\n" + STORE)
        with pytest.raises(CompileError) as e:
            run_checked(text=text, inputs=dict(x=X, y=X * 0), static=static)
        assert why in e.value.what and "pto-isa's Tile refuses this static shape" in e.value.what
        assert f"declare {fix}" in e.value.fix
        ln = line_of(text, "%w = ")
        assert e.value.where == f"<pto>:{ln}:{text.splitlines()[ln - 1].index('!pto.tile_buf') + 1}"
    # a memref in vec is ptoas's row-major NoneBox Tile of its shape
    text = vector_kernel(IO + "    %w = memref.alloc() : memref<16x12xf32, #pto.address_space<vec>>\n" + STORE)
    with pytest.raises(CompileError) as e:
        run_checked(text=text, inputs=dict(x=X, y=X * 0), static=static)
    assert "a 16x12 Vec tile in layout ND: a row-major (ND) tile's row is Cols x 4 = 48 bytes" in e.value.what
    assert e.value.fix.endswith("(v_row=16, v_col=12) in a !pto.tile_buf (a memref has no valid shape)")
    ln = line_of(text, "%w = ")
    assert e.value.where == f"<pto>:{ln}:{text.splitlines()[ln - 1].index('memref<') + 1}"
    ok = (tb(16, 16, 12) + "\n    %n = pto.alloc_tile : "
          + tb(4, 8, 8, "col_major", "row_major"))
    run_checked(text=vector_kernel(IO + f"    %w = pto.alloc_tile : {ok}\n" + STORE), inputs=dict(x=X, y=X * 0),
                static=static)


@pytest.mark.parametrize("op", ["pto.trowexpandexpdif", "pto.trowexpandmax"])
def test_a_row_broadcast_with_a_tmp_tile_on_a5_is_refused_at_its_line(op):
    """ptoas's A5 form of trowexpandexpdif / max / min has no tmp tile ("expects A5 form to
    omit tmp"); the run went past it.  A2A3 takes it, and A5 the form without it."""
    col = vec_t(16, 1).replace("blayout=row_major", "blayout=col_major")
    body = (f"    %m = pto.alloc_tile : {col}\n    %s = pto.alloc_tile : {vec_t(16, 16)}\n"
            f"    pto.trowmax ins(%t, %s : {vec_t(16, 16)}, {vec_t(16, 16)}) outs(%m : {col})\n"
            f"    {op} ins(%t, %m, %s : {vec_t(16, 16)}, {col}, {vec_t(16, 16)}) outs(%t : {vec_t(16, 16)})\n")
    text = vector_kernel(IO + body + STORE)
    with pytest.raises(ParseError) as e:
        run_pto(text=text, inputs=dict(x=X, y=X * 0), platform="a5")
    assert f"{op} with a tmp tile on A5: ptoas refuses it" in e.value.what
    assert e.value.where == f"<pto>:{line_of(text, op + ' ins')}:5"
    want = np.exp(X - X.max(1, keepdims=True)) if op.endswith("expdif") else np.maximum(X, X.max(1, keepdims=True))
    np.testing.assert_allclose(run_pto(text=text, inputs=dict(x=X, y=X * 0), platform="a2a3").outputs["y"], want,
                               rtol=1e-5)
    bare = text.replace(f"{op} ins(%t, %m, %s : {vec_t(16, 16)}, {col}, {vec_t(16, 16)})",
                        f"{op} ins(%t, %m : {vec_t(16, 16)}, {col})")
    assert bare != text
    np.testing.assert_allclose(run_pto(text=bare, inputs=dict(x=X, y=X * 0), platform="a5").outputs["y"], want,
                               rtol=1e-5)


def test_the_scratch_tile_ptoas_passes_on_is_the_instructions():
    """ptoas passes a pto.trem's tmp to pto-isa's TREM(dst, src0, src1, tmp), whose A2A3 code
    writes a row and its compare mask there: a tmp of dst's 16 columns is too small, the error
    the C++ run gives, at the trem; one of 32 columns computes numpy's fmod."""
    def text(tmp_cols):
        return vector_kernel(IO + f"    %r = pto.alloc_tile : {vec_t(16, 16)}\n    %tmp = pto.alloc_tile : "
                             f"{vec_t(16, tmp_cols)}\n    pto.texpands ins(%c3f : f32) outs(%r : {vec_t(16, 16)})\n"
                             f"    pto.trem ins(%t, %r, %tmp : {vec_t(16, 16)}, {vec_t(16, 16)}, {vec_t(16, tmp_cols)}) "
                             f"outs(%t : {vec_t(16, 16)})\n" + STORE).replace(
            "    %c16 = arith.constant 16 : index\n", "    %c16 = arith.constant 16 : index\n"
            "    %c3f = arith.constant 3.0 : f32\n")
    with pytest.raises(KernelError) as e:
        run_pto(text=text(16), inputs=dict(x=X, y=X * 0), platform="a2a3")
    assert "pto-isa's TREM needs 18 valid tmp columns for a 16-column dst" in e.value.what
    assert e.value.where == f"<pto>:{line_of(text(16), 'pto.trem')}:5"
    np.testing.assert_allclose(run_pto(text=text(32), inputs=dict(x=X, y=X * 0), platform="a2a3").outputs["y"],
                               np.fmod(X, 3), rtol=1e-6)


def test_a_window_past_its_view_reads_the_memory_there_with_a_warning():
    """The device does not check a partition window against its view: rows 1..16 of a 16-row
    view read the argument's next row (a warning at the partition_view); past the argument
    itself the run stops at the load."""
    text = vector_kernel(IO.replace("offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> "
                                    "!pto.partition_tensor_view<16x16xf32>\n    %yp",
                                    "offsets = [%r, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> "
                                    "!pto.partition_tensor_view<16x16xf32>\n    %yp", 1) + STORE,
                         params="%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %r: index")
    big = np.arange(17 * 16, dtype=np.float32).reshape(17, 16)
    r = run_pto(text=text, inputs=dict(x=big, y=X * 0, r=1))
    np.testing.assert_array_equal(r.outputs["y"], big[1:])
    (w,) = [w for w in r.warnings if "leave the view's shape" in w]
    assert w.startswith(f"<pto>:{line_of(text, '%xp = pto.partition_view')}:")
    with pytest.raises(PtoPipeError) as e:
        run_pto(text=text, inputs=dict(x=X, y=X * 0, r=1))
    assert e.value.where.startswith(f"<pto>:{line_of(text, 'pto.tload')}:")


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_the_two_ends_of_a_pipe_naming_different_flag_ids_is_a_config_error_at_the_init(protocol):
    """Cube flag_base 0, Vector flag_base 2: each end waits on flags the other never sets."""
    good = (pathlib.Path(__file__).parents[1] / "pto_corpus" / "x_internal_pipe_a3.pto").read_text()
    vec_init = good.index("%pipe = pto.initialize_l2g2l_pipe", good.index("func.func @lowlevel_pipe_vector"))
    text = good[:vec_init] + good[vec_init:].replace("flag_base = 0", "flag_base = 2", 1)
    with pytest.raises(ConfigError) as e:
        run_pto(text=text, protocol=protocol, inputs=dict(a=X, b=X, out=X * 0))
    assert "two ends name different FlagIDs" in e.value.what and "the Cube end FlagID 0" in e.value.what
    assert e.value.where.startswith(f"<pto>:{line_of(text, '%pipe = pto.initialize_l2g2l_pipe')}:")
    other = text.index("%pipe = pto.initialize_l2g2l_pipe", vec_init)
    assert f"the other end 2 (at <pto>:{text.count(chr(10), 0, other) + 1}:" in e.value.what, e.value.what


@pytest.mark.parametrize("arch", ["a3", "a5"])
def test_a_reserve_larger_than_the_ring_runs_as_ptoas_plans_it(arch):
    """ptoas reserves the size the file gives and the TPipe uses its first SLOT_NUM x
    SLOT_SIZE bytes: a larger reserve is unused memory, not an error."""
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((16, 16)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32)
    text = cube_vector_pair(1, arch).replace("size = 8192", "size = 16384")
    r = run_pto(text=text, inputs=dict(a=a, b=b, out=np.zeros((16, 16), np.float32)))
    np.testing.assert_allclose(r.outputs["out"], 2 * (a @ b), rtol=1e-4, atol=1e-4)
    load_pto("<pto>", text=text)                    # the static passes (Validate) agree


@pytest.mark.parametrize("arch", ["a3", "a5"])
def test_a_reserve_smaller_than_the_ring_is_a_compile_error_at_the_init(arch):
    """The run itself checks the consumer's reserve against SLOT_NUM x SLOT_SIZE (files the
    static verifier cannot express get it too), naming the reserve and the init's line."""
    text = cube_vector_pair(1, arch).replace("size = 8192", "size = 4096")
    with pytest.raises(CompileError) as e:
        run_pto(text=text, inputs=dict(a=X, b=X, out=X * 0))
    assert "reserve_buffer 'ring' has 4096 bytes but the pipe that uses it needs" in e.value.what
    assert e.value.where.startswith(f"<pto>:{line_of(text, 'pto.aic_initialize_pipe')}:")
    assert "slot_num = 4" in e.value.fix


def test_a_file_run_on_another_platform_than_its_own_says_so(tmp_path, capsys):
    """An a3 file run as a5 (``--platform a5``): its run notes it (the command before it runs),
    and the fix of an error - here a reserve sized for the a3 ring, from the executor and from
    the static passes in front of a run - ends with it: the file's own platform may be the fix."""
    from ptopipe.cli import main
    from ptopipe.codegen.pto_load import run_pto as run_checked
    text, args = cube_vector_pair(1, "a3"), dict(a=X, b=X, out=X * 0)
    note = 'the file is written for a2a3 (its pto.target_arch = "a3") and runs as a5, the platform given'
    assert run_pto(text=text, inputs=args, platform="a5").notes[0] == note
    assert not any("written for" in n for n in run_pto(text=text, inputs=args, platform="a3").notes)
    for run in (run_pto, run_checked):
        with pytest.raises(CompileError) as e:
            run(text=text.replace("size = 8192", "size = 4096"), inputs=args, platform="a5")
        assert e.value.fix.endswith(f"; or run the file on its own platform: {note}"), e.value.fix
    f = tmp_path / "k.pto"
    f.write_text(text)
    assert main(["run", str(f), "--platform", "a5"]) == 0
    assert capsys.readouterr().out.startswith(f"note: {note}\n")


def test_an_a5_file_run_on_a2a3_is_told_its_init_lacks_the_gm_ring():
    """An A5 ``.pto`` initialises its pipes without a gm_slot_buffer (rings in local memory);
    run on A2A3, where every ring lives in GM, the init says so at its line - and how to
    give it one - instead of a kernel-argument fix a .pto cannot follow."""
    path = pathlib.Path(__file__).resolve().parents[1] / "pto" / "both_ways_a5.pto"
    text = path.read_text()
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "pto.aic_initialize_pipe" in ln)
    with pytest.raises(ConfigError) as ei:
        run_pto(text=text, path="both_ways_a5.pto", platform="a2a3")
    e = ei.value
    assert e.where.startswith(f"both_ways_a5.pto:{line}:"), e.where
    assert "names no gm_slot_buffer, but on a2a3 every ring lives in GM" in e.what
    assert "--platform a5" in e.fix and "gm_slot_buffer operand" in e.fix


@pytest.mark.parametrize("command", ["check", "run"])
def test_the_check_or_run_of_an_a5_file_on_a2a3_says_it_once_in_the_files_own_terms(capsys, command):
    """The run's error at the init, once: the static passes in front of it, which give the
    compiled kernel a GM ring (compile --platform a2a3 of the file), warned of it per init."""
    from ptopipe.cli import main
    path = pathlib.Path(__file__).resolve().parents[1] / "pto" / "both_ways_a5.pto"
    assert main([command, str(path), "--platform", "a2a3"] + (["--schedules", "1"] if command == "check" else [])) == 1
    cap = capsys.readouterr()
    out, err = cap.out, cap.err
    assert "GM_SLOT_BUFFER" not in out + err and "ptopipe.gm_buffer" not in out + err, out + err
    assert (out + err).count("gm_slot_buffer operand") == 1, out + err
    assert "error: ConfigError: pto.aic_initialize_pipe names no gm_slot_buffer" in err


def test_a_view_too_big_for_seeded_data_is_refused_at_its_line_before_any_is_made():
    """A parameter without --input whose tensor view needs more seeded data than ptopipe
    makes up (here 1.28 GB) is a ConfigError at its make_tensor_view naming the parameter, its
    shape and bytes - not minutes of generating it, nor a MemoryError."""
    big = IO.replace("%x, shape = [%c16, %c16], strides = [%c16, %c1]",
                     "%x, shape = [%c16, %cbig], strides = [%cbig, %c1]")
    text = vector_kernel("    %cbig = arith.constant 20000000 : index\n" + big + STORE)
    with pytest.raises(ConfigError) as e:
        run_pto(text=text, inputs=dict(y=np.zeros((16, 16), np.float32)))
    line = line_of(text, "%xv = pto.make_tensor_view")
    col = text.splitlines()[line - 1].index("pto.make_tensor_view") + 1
    assert e.value.where.endswith(f":{line}:{col}")
    assert "parameter %x would need 1,280,000,000 bytes" in e.value.what and "f32[16, 20000000]" in e.value.what
    assert "give inputs={'x': array}" in e.value.fix         # the API's words, not the CLI's --input


def test_the_api_names_a_wrong_input_as_the_caller_gave_it():
    """run_pto(inputs=...) errors speak of ``inputs['x']`` and ``argument inputs=``: the caller
    wrote no --input (the CLI's words are the CLI's: tests/codegen/test_pto_errors.py)."""
    text = vector_kernel(IO + STORE)
    with pytest.raises(ConfigError) as e:
        run_pto(text=text, inputs=dict(x=np.zeros((4, 4), np.float32), y=np.zeros((16, 16), np.float32)))
    assert e.value.what.startswith("inputs['x']: float32[4, 4] but the kernel takes f32[16, 16]")
    assert e.value.where == "argument inputs=" and "np.save" not in e.value.fix
    with pytest.raises(ConfigError) as e:
        run_pto(text=text, inputs=dict(xx=np.zeros((16, 16), np.float32)))
    assert e.value.what == "inputs['xx']: the kernel has no parameter 'xx'" and e.value.where == "argument inputs="


def test_a_byte_order_mark_before_the_module_is_no_character_of_it():
    """An editor's UTF-8 BOM at the start: both readers skip it (lines and columns unchanged)."""
    text = vector_kernel(IO + STORE)
    plain = run_pto(text=text, inputs=dict(x=X, y=X * 0)).outputs["y"]
    np.testing.assert_array_equal(run_pto(text="\ufeff" + text, inputs=dict(x=X, y=X * 0)).outputs["y"], plain)
    bad = "\ufeff" + text.replace("pto.tload", "pto.tlaod", 1)
    with pytest.raises(ParseError) as e:
        run_pto(text=bad, inputs=dict(x=X, y=X * 0))
    assert e.value.where == f"<pto>:{line_of(bad, 'pto.tlaod')}:5"


def test_seeded_float32_data_is_made_in_float32():
    import tracemalloc
    from ptopipe.codegen.pto_exec.launch import _random
    tracemalloc.start()
    try:
        a = _random(np.random.default_rng(0), np.float32, (1 << 20,))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert a.dtype == np.float32 and -1 <= a.min() and a.max() < 1 and a.std() > 0.5
    assert peak < 1.5 * a.nbytes                        # (a float64 draw cast down: 3x)


_CALLED = """module {
  func.func @vec(%p: !pto.ptr<f32>, %q: !pto.ptr<f32>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c64 = arith.constant 64 : index
    %b = pto.get_block_idx
    %i = arith.index_cast %b : i64 to index
    %o = arith.muli %i, %c64 : index
    %r = pto.addptr %p, %o : <f32> -> <f32>
    %z = arith.constant 0 : i32
    %pipe = pto.initialize_l2g2l_pipe {dir_mask = 1, slot_size = 1024, slot_num = 8, local_slot_num = 8, flag_base = 0} (%r : !pto.ptr<f32>, %z : i32) -> !pto.pipe
    return
  }
  func.func @entry(%a: !pto.ptr<f32>, %unused: !pto.ptr<f32>) attributes {pto.entry} {
    CALL @vec(%a, %unused) : (!pto.ptr<f32>, !pto.ptr<f32>) -> ()
    return
  }
}
"""


@pytest.mark.parametrize("call", ["call", "func.call"])
def test_a_pointer_a_callee_uses_at_an_unknown_offset_has_no_static_size(call):
    """A parameter passed on to a kernel that offsets it by a run-time value (here the ring's
    gm_slot_buffer at block_idx * 64) has no size ptopipe can make data for: refused at the
    entry's parameter, in either spelling of the call - a parameter the callee never uses
    is not (one element stands for it)."""
    text = _CALLED.replace("CALL", call)
    with pytest.raises(ConfigError) as e:
        run_pto(text=text, static=False)
    assert e.value.what == "the size of parameter %a is not known statically"
    line = line_of(text, "func.func @entry")
    assert e.value.where.endswith(f":{line}:{text.splitlines()[line - 1].index('%a') + 1}")


def test_a_view_shape_computed_from_a_given_scalar_sizes_the_parameters():
    """pypto writes a composite dim as arithmetic on its scalar (``M * 2``: arith.muli %m, %c2):
    given m, the tensors are sized from it (m = 8: 16 x 16, seeded); without m they are not."""
    io = ("    %c2 = arith.constant 2 : index\n    %mw = arith.index_cast %m : i32 to index\n"
          "    %rows = arith.muli %mw, %c2 : index\n"
          + IO.replace("shape = [%c16, %c16]", "shape = [%rows, %c16]"))
    text = vector_kernel(io + STORE, "%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %m: i32")
    res = run_pto(text=text, inputs=dict(m=8))
    assert res.outputs["y"].shape == (16, 16)
    np.testing.assert_array_equal(res.outputs["y"], res.outputs["x"])
    with pytest.raises(ConfigError) as e:
        run_pto(text=text)
    assert e.value.what == "the size of parameter %x is not known statically"


def test_a_tci_start_of_another_integer_type_than_its_tile_is_refused_at_its_line():
    """pto-isa's TCI static_asserts that the start's type is the tile's element type (a2a3/TCI.hpp
    CheckValid); an i32 start runs."""
    tile = vec_t(1, 32, "i32")
    body = ("    %s = arith.constant 5 : {ty}\n    %a = pto.alloc_tile : " + tile + "\n"
            "    pto.tci ins(%s : {ty}) outs(%a : " + tile + ")\n")
    text = vector_kernel(body.replace("{ty}", "i16"))
    with pytest.raises(ParseError) as e:
        run_pto(text=text, inputs=dict(x=X, y=X * 0))
    assert "pto.tci: the start is i16 but the destination holds int32" in e.value.what, e.value.what
    assert e.value.where.startswith(f"<pto>:{line_of(text, 'pto.tci')}:"), e.value.where
    run_pto(text=vector_kernel(body.replace("{ty}", "i32")), inputs=dict(x=X, y=X * 0))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_pto_tmuls_into_a_dst_of_fewer_rows_runs_on_a5_as_pto_isa(platform):
    """A5's TMULS asserts only the valid columns and runs over dst's rows (ptoas's A5
    verifier takes it too); A2A3's asserts the rows (ptoas: "expects src and dst to have the
    same valid_shape[0]"): a KernelError at the pto.tmuls."""
    body = (f"    %s = arith.constant 3.0 : f32\n    %c8 = arith.constant 8 : index\n"
            f"    %h = pto.alloc_tile : {vec_t(8, 16)}\n"
            f"    pto.tmuls ins(%t, %s : {vec_t(16, 16)}, f32) outs(%h : {vec_t(8, 16)})\n"
            "    %yh = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c8, %c16] : "
            "!pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>\n"
            f"    pto.tstore ins(%h : {vec_t(8, 16)}) outs(%yh : !pto.partition_tensor_view<8x16xf32>)\n")
    text = vector_kernel(IO + body)
    if platform == "a5":
        y = run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X)), platform=platform).outputs["y"]
        np.testing.assert_allclose(y[:8], X[:8] * 3, rtol=1e-6)
        assert not y[8:].any()
        return
    with pytest.raises(KernelError) as e:
        run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X)), platform=platform)
    assert e.value.what == "TMULS: operand shapes differ (dst 8x16, src 16x16)"
    assert e.value.where == f"<pto>:{line_of(text, 'pto.tmuls')}:5"


def _with_helper(helper_body: str, calls: int = 1) -> str:
    """A vector kernel (IO + STORE) calling ``@helper`` (no kernel kind) ``calls`` times."""
    text = vector_kernel(IO + "    func.call @helper() : () -> ()\n" * calls + STORE,
                         attrs=" attributes {pto.kernel_kind = #pto.kernel_kind<vector>}")
    return text.replace("module {\n", "module {\n  func.func private @helper() {\n" + helper_body
                        + "    return\n  }\n", 1)


@pytest.mark.parametrize("helper, error, calls", [
    ("    pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID1>]\n", DeadlockError, 1),
    ("    pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]\n", LeakError, 1),
    ("    pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]\n", LeakError, 2),
])
def test_an_event_error_in_a_called_function_names_the_call(helper, error, calls):
    """docs/events.md: an event in a function the kernel calls is located at its line and
    the kernel line that called it, as the Python front end locates it (the error named
    only the helper's line).  A set the second call leaves is the first pending one: the
    error names the call of that set."""
    text = _with_helper(helper, calls)
    with pytest.raises(error) as e:
        run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X)))
    op = line_of(text, "pto.wait_flag" if error is DeadlockError else "pto.set_flag")
    call = line_of(text, "func.call @helper")
    assert e.value.where == f"<pto>:{op}:5 (called from <pto>:{call}:5)"


def test_a_kernel_the_entry_launches_is_located_without_the_entrys_call():
    """The entry's func.call launches a kernel (as the runner calls a Python kernel): its
    lines are its own, no "(called from" the entry."""
    text = (pathlib.Path(__file__).resolve().parents[1] / "pto" / "c2v_split_a3.pto").read_text()
    bad = text.replace("      pto.tfree_from_aic {split = 1}\n", "", 1)
    with pytest.raises(LeakError) as e:
        run_pto(text=bad, inputs={})
    assert e.value.where == f"<pto>:{line_of(bad, 'pto.tpop_from_aic')}:7"


@pytest.mark.parametrize("binary", ["", " {isBinary = true}", " {isBinary = false}"])
def test_a_column_sum_through_ptoas_tmp_runs_with_its_is_binary(binary):
    """``pto.tcolsum ins(%src, %tmp {isBinary = ...} : ...)``: pto-isa's TCOLSUM(dst, src, tmp,
    isBinary) - the column sum either way; ptoas's default is false."""
    row = vec_t(1, 16)
    body = f"""    %tmp = pto.alloc_tile : {vec_t(16, 16)}
    %s = pto.alloc_tile : {row}
    pto.tcolsum ins(%t, %tmp{binary} : {vec_t(16, 16)}, {vec_t(16, 16)}) outs(%s : {row})
    pto.texpands ins(%zero : f32) outs(%t : {vec_t(16, 16)})
    pto.tcolexpandadd ins(%t, %s : {vec_t(16, 16)}, {row}) outs(%t : {vec_t(16, 16)})
"""
    r = run_vec("    %zero = arith.constant 0.0 : f32\n" + body)
    np.testing.assert_allclose(r.outputs["y"].reshape(16, 16), np.broadcast_to(X.sum(axis=0), (16, 16)), rtol=1e-5)


def test_a_column_sum_is_binary_that_is_no_bool_is_refused_at_its_place():
    text = vector_kernel(IO + f"""    %tmp = pto.alloc_tile : {vec_t(16, 16)}
    %s = pto.alloc_tile : {vec_t(1, 16)}
    pto.tcolsum ins(%t, %tmp {{isBinary = 7}} : {vec_t(16, 16)}, {vec_t(16, 16)}) outs(%s : {vec_t(1, 16)})
""" + STORE)
    with pytest.raises(ParseError, match="isBinary 7 is not a bool") as e:
        run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X)))
    assert e.value.where.startswith(f"<pto>:{line_of(text, 'pto.tcolsum')}:")


_MISSING_TMP = {
    "pto.trowsum": lambda t: f"pto.trowsum ins(%t : {t(16, 16)}) outs(%c : {t(16, 1)})",
    "pto.tprelu": lambda t: f"pto.tprelu ins(%t, %t : {t(16, 16)}, {t(16, 16)}) outs(%t : {t(16, 16)})",
    "pto.trems": lambda t: f"pto.trems ins(%t, %s : {t(16, 16)}, f32) outs(%t : {t(16, 16)})",
}


@pytest.mark.parametrize("name", sorted(_MISSING_TMP))
def test_an_op_without_the_tmp_ptoas_requires_is_refused_at_its_line(name):
    """ptoas's trowsum / tprelu / trems (and the other ops of SCRATCH_REQUIRED) take a scratch
    tile in ins(...) and refuse the op without it ("expected ','"): so do run and the static
    reader, at the op."""
    def t(r, c):
        return vec_t(r, c).replace("blayout=row_major", "blayout=col_major") if c == 1 else vec_t(r, c)
    text = vector_kernel(IO + f"    %c = pto.alloc_tile : {t(16, 1)}\n    %s = arith.constant 1.5 : f32\n"
                         f"    {_MISSING_TMP[name](t)}\n" + STORE,
                         attrs=" attributes {pto.kernel_kind = #pto.kernel_kind<vector>}")
    line = line_of(text, name + " ins(")
    with pytest.raises(ParseError, match=f"{name} without its tmp operand") as e:
        run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X)))
    assert e.value.where.startswith(f"<pto>:{line}:")
    with pytest.raises(ParseError, match=f"{name} without its tmp operand") as e:
        read_pto(text, "k.pto")
    assert e.value.where.startswith(f"k.pto:{line}:")


@pytest.mark.parametrize("with_tmp", [True, False])
def test_tgather_index_form_takes_ptoas_tmp_and_is_refused_without_it(with_tmp):
    """``pto.tgather ins(%src, %indices, %tmp)``: ptoas's index form requires the scratch tile
    ("index-form tgather expects both indices and tmp"); without it the file does not assemble -
    a ParseError at the op, not a run."""
    i32 = vec_t(16, 16, "i32")
    ins = f"%t, %ix, %tmp : {vec_t(16, 16)}, {i32}, {i32}" if with_tmp else f"%t, %ix : {vec_t(16, 16)}, {i32}"
    text = vector_kernel(IO + f"""    %iv = pto.make_tensor_view %i, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xi32>
    %ip = pto.partition_view %iv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xi32> -> !pto.partition_tensor_view<16x16xi32>
    %ix = pto.alloc_tile : {i32}
    %tmp = pto.alloc_tile : {i32}
    %g = pto.alloc_tile : {vec_t(16, 16)}
    pto.tload ins(%ip : !pto.partition_tensor_view<16x16xi32>) outs(%ix : {i32})
    pto.tgather ins({ins}) outs(%g : {vec_t(16, 16)})
    pto.tmov ins(%g : {vec_t(16, 16)}) outs(%t : {vec_t(16, 16)})
""" + STORE, params="%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %i: !pto.ptr<i32>")
    ix = np.arange(256, dtype=np.int32)[::-1].reshape(16, 16).copy()
    inputs = dict(x=X, y=np.zeros_like(X), i=ix)
    if not with_tmp:
        with pytest.raises(ParseError, match="index form without its tmp") as e:
            run_pto(text=text, inputs=inputs)
        assert e.value.where == f"<pto>:{line_of(text, 'pto.tgather')}:5"
        return
    r = run_pto(text=text, inputs=inputs)
    np.testing.assert_array_equal(r.outputs["y"].reshape(16, 16), X.reshape(-1)[ix])


def test_a_tile_scalar_op_given_an_index_is_refused_at_its_type():
    """ptoas's tile-scalar ops take a number: ``pto.tmuls ins(%t, %i : T, index)`` does not
    assemble ("operand #1 must be numeric (integer/float), but got 'index'") - a ParseError at
    the type, not a run."""
    body = f"    %i = arith.constant 3 : index\n    pto.tmuls ins(%t, %i : {vec_t(16, 16)}, index) outs(%t : {vec_t(16, 16)})\n"
    text = vector_kernel(IO + body + STORE)
    with pytest.raises(ParseError, match="pto.tmuls's scalar is an index: ptoas refuses it") as e:
        run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X)))
    line = line_of(text, "pto.tmuls")
    assert e.value.where == f"<pto>:{line}:{text.splitlines()[line - 1].index(', index)') + 3}"


@pytest.mark.parametrize("op,scalar,dtype", [("pto.tmaxs", "%k = arith.constant 3 : i32", "i32"),
                                              ("pto.tmins", "%k = arith.constant 3 : i16", "i16"),
                                              ("pto.tmaxs", "%k = arith.constant 3 : index", "index")])
def test_a_max_or_min_with_an_integer_scalar_is_refused_at_its_type(op, scalar, dtype):
    """ptoas 0.27 lowers ``pto.tmaxs`` / ``pto.tmins`` only with a float scalar (its
    PTOViewToMemref: "ins/outs are not memref yet"), whatever the tile holds: an integer one is
    a ParseError at the scalar's type, not a run that passes; a float one runs."""
    body = f"    {scalar}\n    {op} ins(%t, %k : {vec_t(16, 16)}, {dtype}) outs(%t : {vec_t(16, 16)})\n"
    text = vector_kernel(IO + body + STORE)
    with pytest.raises(ParseError, match=f"{op}'s scalar is {dtype}: ptoas 0.27 lowers {op} only with a float "
                                         "scalar") as e:
        run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X)))
    line = line_of(text, op)
    assert e.value.where == f"<pto>:{line}:{text.splitlines()[line - 1].index(f', {dtype})') + 3}"
    assert "arith.sitofp" in e.value.fix
    fine = text.replace(scalar, "%k = arith.constant 3.0 : f32").replace(f", {dtype}) outs", ", f32) outs")
    r = run_pto(text=fine, inputs=dict(x=X, y=np.zeros_like(X)))
    np.testing.assert_array_equal(r.outputs["y"].reshape(X.shape), (np.maximum if op == "pto.tmaxs" else np.minimum)(X, 3))


@pytest.mark.parametrize("op,platform,refused", [("pto.tands", "a2a3", True), ("pto.tors", "a5", True),
                                                 ("pto.tands", "a5", True), ("pto.trecip", "a2a3", True),
                                                 ("pto.trecip", "a5", False)])
def test_an_op_ptoas_wants_out_of_place_is_refused_in_place(op, platform, refused):
    """ptoas's verifier refuses pto.tands / tors / txors (and, on A2/A3, pto.trecip) whose
    destination is its source ("expects src and dst to use different storage"): a ParseError at
    the destination; an A5 trecip in place runs."""
    i16 = vec_t(16, 16, "i16")
    if op == "pto.trecip":
        body = f"    {op} ins(%t : {vec_t(16, 16)}) outs(%t : {vec_t(16, 16)})\n"
    else:
        body = (f"    %k = arith.constant 3 : i16\n    %m = pto.alloc_tile : {i16}\n"
                f"    pto.texpands ins(%k : i16) outs(%m : {i16})\n    {op} ins(%m, %k : {i16}, i16) outs(%m : {i16})\n")
    text = vector_kernel(IO + body + STORE)
    if not refused:
        r = run_pto(text=text, platform=platform, inputs=dict(x=X + 1, y=np.zeros_like(X)))
        np.testing.assert_allclose(r.outputs["y"].reshape(X.shape), 1 / (X + 1), rtol=1e-6)
        return
    with pytest.raises(ParseError, match="twice .in place.: ptoas refuses it") as e:
        run_pto(text=text, platform=platform, inputs=dict(x=X + 1, y=np.zeros_like(X)))
    line = line_of(text, op)
    assert e.value.where == f"<pto>:{line}:{text.splitlines()[line - 1].index('outs(%') + 6}"
    assert "use different storage" in e.value.what and "a tile of its own" in e.value.fix


def test_a_split_v2c_push_past_its_slot_names_the_tile_both_vector_cores_make():
    """On A5 each Vector core pushes its 8x16 NZ half into the Cube's one L1 slot: the slot holds
    the 16x16 tile the two halves make (1024 bytes), so a 512-byte slot is too small - said in
    those words at the push (the run's check; the static one says it first in a `check`)."""
    nz8 = "!pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=16, v_row=8, v_col=16, blayout=col_major, slayout=row_major, fractal=512, pad=0>"
    mat = "!pto.tile_buf<loc=mat, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, slayout=row_major, fractal=512, pad=0>"
    text = f"""module attributes {{pto.target_arch = "a5"}} {{
  func.func private @cube() attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %z = arith.constant 0 : i32
    %ring = pto.reserve_buffer {{name = "v2c", size = 4096, location = #pto.address_space<mat>, auto = true}} -> i32
    pto.aic_initialize_pipe {{dir_mask = 2, slot_size = 512}} (c2v_consumer_buf = %z : i32, v2c_consumer_buf = %ring : i32)
    %m = pto.tpop_from_aiv {{split = 1}} -> {mat}
    pto.tfree_from_aiv {{split = 1}}
    return
  }}
  func.func private @vector() attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %z = arith.constant 0 : i32
    %one = arith.constant 1.0 : f32
    %imp = pto.import_reserved_buffer {{name = "v2c", peer_func = @cube}} -> i32
    pto.aiv_initialize_pipe {{dir_mask = 2, slot_size = 512}} (c2v_consumer_buf = %z : i32, v2c_consumer_buf = %imp : i32)
    %t = pto.alloc_tile : {vec_t(8, 16)}
    %n = pto.alloc_tile : {nz8}
    pto.texpands ins(%one : f32) outs(%t : {vec_t(8, 16)})
    pto.tmov ins(%t : {vec_t(8, 16)}) outs(%n : {nz8})
    pto.tpush_to_aic(%n : {nz8}) {{split = 1}}
    return
  }}
}}
"""
    with pytest.raises(PtoPipeError) as e:
        run_pto(text=text, func="cube+vector", platform="a5")
    assert e.value.where.startswith(f"<pto>:{line_of(text, 'pto.tpush_to_aic')}:"), e.value.where
    assert ("(512 bytes; the slot holds the 16x16 tile both Vector cores' TILE_UP_DOWN parts make, 1024 bytes) "
            "does not fit SlotSize 512") in e.value.what, e.value.what


def test_a_load_past_its_argument_names_the_partition_view_of_its_window():
    """A loop one block too long: the load past the argument is the error at its line, and it
    names the pto.partition_view that made the window with the offsets of that trip."""
    body = f"""    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c3 = arith.constant 3 : index
    %u = pto.alloc_tile : {vec_t(8, 16)}
    scf.for %k = %c0 to %c3 step %c1 {{
      %row = arith.muli %k, %c8 : index
      %wp = pto.partition_view %xv, offsets = [%row, %c0], sizes = [%c8, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>
      pto.tload ins(%wp : !pto.partition_tensor_view<8x16xf32>) outs(%u : {vec_t(8, 16)})
    }}
"""
    text = vector_kernel(IO + body + STORE)
    with pytest.raises(MemoryConflictError) as e:
        run_pto(text=text, inputs=dict(x=X, y=np.zeros_like(X)))
    assert e.value.where.startswith(f"<pto>:{line_of(text, 'pto.tload ins(%wp')}:"), e.value.where
    assert (f"its window: the pto.partition_view %wp at <pto>:{line_of(text, '%wp = pto.partition_view')}:7, "
            "offsets [16, 0] sizes [8, 16] of a view of shape [16, 16]") in str(e.value), str(e.value)
