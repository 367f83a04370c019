"""What ptoas's own verifier refuses in a .pto pipe init (PTOAS PTO.cpp verifyPipeShape, the
frontend init's attribute block in PTOOps.td) is a warning at its line:col, and no fix text
tells a .pto user to write a value ptoas refuses."""

import os
import pathlib
import subprocess

import pytest

from ptopipe.codegen.pto_exec import read_program
from ptopipe.codegen.pto_exec.pipe_ops import ptoas_refusals
from ptopipe.codegen.pto_load import load_pto
from ptopipe.errors import CompileError, ParseError

ROOT = pathlib.Path(__file__).resolve().parents[2]

_L2L = """module attributes {pto.target_arch = "a5"} {
  func.func @cube() attributes {pto.kernel_kind = #pto.kernel_kind<cube>} {
    %c2v = pto.import_reserved_buffer {name = "c2v_fifo", peer_func = @vector} -> i32
    %pc = pto.initialize_l2l_pipe {dir_mask = 1, slot_size = 1024, slot_num = N}(%c2v : i32) -> !pto.pipe
    return
  }
  func.func @vector() attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c2v = pto.reserve_buffer {name = "c2v_fifo", size = RES, location = #pto.address_space<vec>, auto = true} -> i32
    %pc = pto.initialize_l2l_pipe {dir_mask = 1, slot_size = 1024, slot_num = N}(%c2v : i32) -> !pto.pipe
    return
  }
}
"""

_FRONTEND = """module attributes {pto.target_arch = "a5"} {
  func.func @cube() attributes {pto.kernel_kind = #pto.kernel_kind<cube>} {
    %c0 = arith.constant 0 : i32
    %c2v = pto.import_reserved_buffer {name = "c2v_fifo", peer_func = @vector} -> i32
    pto.aic_initialize_pipe {dir_mask = 1, slot_size = 1024EXTRA} (c2v_consumer_buf = %c2v : i32, v2c_consumer_buf = %c0 : i32)
    return
  }
  func.func @vector() attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : i32
    %c2v = pto.reserve_buffer {name = "c2v_fifo", size = RES, location = #pto.address_space<vec>, auto = true} -> i32
    pto.aiv_initialize_pipe {dir_mask = 1, slot_size = 1024EXTRA} (c2v_consumer_buf = %c2v : i32, v2c_consumer_buf = %c0 : i32)
    return
  }
}
"""


def _load(text, **subs):
    for k, v in subs.items():
        text = text.replace(k, str(v))
    return load_pto("k.pto", text=text)


@pytest.mark.parametrize("res,suggested", [(2048, None), (4096, 4)])
def test_a_short_reserve_suggests_only_a_slot_num_ptoas_builds(res, suggested):
    """8 slots of 1024 B need 8192 B: a reserve of 4096 may instead be a ring of slot_num 4;
    one of 2048 would be slot_num 2, which ptoas refuses - not suggested."""
    with pytest.raises(CompileError) as ei:
        _load(_L2L, N=8, RES=res)
    assert ei.value.where == "k.pto:8:5"
    assert ("slot_num" in ei.value.fix) is (suggested is not None)
    if suggested:
        assert f"slot_num = {suggested} (on a pto.initialize_l2l_pipe" in ei.value.fix


def test_a_short_reserve_of_a_frontend_init_does_not_suggest_slot_num_on_it():
    with pytest.raises(CompileError) as ei:
        _load(_FRONTEND, EXTRA="", RES=4096)
    assert "a pto.aic_/aiv_initialize_pipe takes no slot_num" in ei.value.fix


@pytest.mark.parametrize("n,warned", [(2, True), (4, False), (8, False)])
def test_slot_num_ptoas_refuses_is_a_warning_at_its_value(n, warned):
    _op, warnings, _plat = _load(_L2L, N=n, RES=n * 1024)
    mine = [w for w in warnings if "ptoas refuses" in w]
    assert len(mine) == (2 if warned else 0)
    if warned:
        assert mine[0].startswith("k.pto:4:79: ptoas refuses slot_num = 2 on pto.initialize_l2l_pipe "
                                  "(\"expects 'slot_num' to be 4 or 8\")")
        assert "give it slot_num = 4 or 8" in mine[0]


def test_a_second_reserve_or_import_in_a_function_is_a_warning_at_it():
    """ptoas 0.27 takes one pto.reserve_buffer and one pto.import_reserved_buffer per function
    ("expects at most one reserve_buffer in the function"); ptopipe's writer spells a kernel with
    two rings of a direction so: the file runs, each second one warned at its op."""
    text = _L2L.replace("slot_num = N}", "slot_num = N, flag_base = 0}")
    lines = text.splitlines(True)
    second = [ln.replace("%c2v", "%c2v_b").replace("c2v_fifo", "c2v_fifo_b").replace("%pc", "%pb")
              .replace("flag_base = 0", "flag_base = 4") for ln in lines]
    text = "".join(lines[:4] + second[2:4] + lines[4:9] + second[7:9] + lines[9:])
    _op, warnings, _plat = _load(text, N=4, RES=4096)
    said = [w for w in warnings if "refuses a second" in w]
    assert [w.split(": ptoas")[0] for w in said] == ["k.pto:5:14", "k.pto:12:14"], warnings   # at the op
    assert "refuses a second pto.import_reserved_buffer in @cube (\"expects at most one import_reserved_buffer in " \
           "the function\"; the first is at line 3)" in said[0]
    assert "reserve one buffer for the function's rings" in said[1]


def test_a_free_without_its_split_is_a_warning_at_the_free():
    """ptoas reads a free only with its split ("expected '{'"); ptopipe frees with the TPOP's."""
    text = (ROOT / "tests" / "pto_corpus" / "x_c2v_split2_relu_a3.pto").read_text()
    text = text.replace("pto.tfree_from_aic {split = 2}", "pto.tfree_from_aic")
    said = [w for w in ptoas_refusals(read_program(text, "k.pto")) if "without its split" in w]
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.strip() == "pto.tfree_from_aic")
    assert said == [f"k.pto:{line}:5: ptoas refuses pto.tfree_from_aic without its split (\"expected '{{'\"); "
                    "ptopipe frees with its TPOP's split - write it: {split = N}, N the TPOP's"], said


def test_slot_num_on_a_frontend_init_is_a_warning_at_the_attribute():
    """ptoas's frontend init takes dir_mask, slot_size and nosplit in its braces."""
    _op, warnings, _plat = _load(_FRONTEND, EXTRA=", slot_num = 4", RES=4096)
    assert [w.split(" on ")[0] for w in warnings if "ptoas refuses" in w] == \
        ["k.pto:5:62: ptoas refuses slot_num", "k.pto:11:62: ptoas refuses slot_num"]
    _op, warnings, _plat = _load(_FRONTEND, EXTRA=", nosplit = false", RES=8192)
    assert not [w for w in warnings if "ptoas refuses" in w]


def test_the_runs_short_reserve_fix_gives_no_slot_num_to_a_frontend_init():
    from ptopipe.codegen.pto_load import run_pto
    with pytest.raises(CompileError) as ei:
        run_pto(text=_FRONTEND.replace("EXTRA", "").replace("RES", "4096"), static=False)
    assert "give the init slot_num" not in ei.value.fix
    assert "a pto.initialize_l2l_pipe / initialize_l2g2l_pipe of slot_num = 4" in ei.value.fix


def _ptoas_refuses(text, tmp_path, words):
    """``PTOAS=...``: the real assembler refuses ``text`` saying ``words`` too."""
    ptoas = os.environ.get("PTOAS")
    if not ptoas:
        return
    f = tmp_path / "k.pto"
    f.write_text(text)
    r = subprocess.run([ptoas, str(f), "-o", str(tmp_path / "k.cpp")], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and words in r.stderr + r.stdout, r.stderr[-2000:]


_NOT_FROM_A_BUFFER = ("requires local_addr to come from pto.reserve_buffer or pto.import_reserved_buffer when "
                      "'flag_base' is not explicit")
_INCOMPLETE_PAIR = ("requires a complete peer init pair when local_addr comes from pto.reserve_buffer or "
                    "pto.import_reserved_buffer")


def test_a_frontend_init_whose_consumer_buffer_is_no_reserved_buffer_is_refused_at_it(tmp_path):
    """A frontend init finds its other end through its buffer (it has no flag_base): a constant
    given as the Cube's c2v_consumer_buf is a ParseError at that operand, as ptoas says."""
    text = _FRONTEND.replace("EXTRA", "").replace("RES", "8192").replace("c2v_consumer_buf = %c2v : i32", "c2v_consumer_buf = %c0 : i32", 1)
    with pytest.raises(ParseError) as ei:
        read_program(text, "k.pto")
    assert ei.value.where == f"k.pto:5:{text.splitlines()[4].index('%c0 : i32') + 1}"
    assert ei.value.what.startswith("pto.aic_initialize_pipe's local address %c0 is the result of arith.constant "
                                    "at 3:5, not a pto.reserve_buffer or pto.import_reserved_buffer result")
    assert _NOT_FROM_A_BUFFER in ei.value.what
    assert "pto.import_reserved_buffer in the producer's" in ei.value.fix and "flag_base" not in ei.value.fix
    _ptoas_refuses(text, tmp_path, _NOT_FROM_A_BUFFER)


def test_a_lower_level_init_of_no_reserved_buffer_needs_its_flag_base(tmp_path):
    """``pto.initialize_l2l_pipe`` on a constant address: refused without flag_base (the fix
    offers one); with flag_base = 0 on both ends the pipe is ptoas's and runs."""
    text = _L2L.replace("N", "8").replace("RES", "8192")
    for side in ("import_reserved_buffer {name = \"c2v_fifo\", peer_func = @vector}",
                 "reserve_buffer {name = \"c2v_fifo\", size = 8192, location = #pto.address_space<vec>, auto = true}"):
        text = text.replace(f"%c2v = pto.{side} -> i32", "%c2v = arith.constant 0 : i32")
    with pytest.raises(ParseError) as ei:
        read_program(text, "k.pto")
    assert ei.value.where == f"k.pto:4:{text.splitlines()[3].index('%c2v : i32') + 1}"
    assert ei.value.what.startswith("pto.initialize_l2l_pipe's local address %c2v is the result of arith.constant")
    assert "names no flag_base" in ei.value.what and _NOT_FROM_A_BUFFER in ei.value.what
    assert "or give the init an explicit flag_base = N (both ends the same N)" in ei.value.fix
    _ptoas_refuses(text, tmp_path, _NOT_FROM_A_BUFFER)
    read_program(text.replace("slot_num = 8}", "slot_num = 8, flag_base = 0}"), "k.pto")


def test_a_reserved_buffer_named_by_one_init_only_is_refused_at_it(tmp_path):
    """The Vector end on a constant address with flag_base: the Cube's import is then the one
    init of the buffer's pipe - ptoas pairs two, so the file is refused at the Cube's."""
    text = _L2L.replace("N", "8").replace("RES", "8192")
    vec_init = "%pc = pto.initialize_l2l_pipe {dir_mask = 1, slot_size = 1024, slot_num = 8}(%c2v : i32)"
    k = text.rindex(vec_init)
    text = text[:k] + ("%c0 = arith.constant 0 : i32\n    " + vec_init.replace("slot_num = 8}", "slot_num = 8, flag_base = 0}")
                       .replace("(%c2v", "(%c0")) + text[k + len(vec_init):]
    with pytest.raises(ParseError) as ei:
        read_program(text, "k.pto")
    assert ei.value.where == f"k.pto:4:{text.splitlines()[3].index('%c2v : i32') + 1}"
    assert ei.value.what.startswith("the C2V pipe over buffer \"c2v_fifo\" (reserved by @vector) has 1 init naming "
                                    "the buffer (pto.initialize_l2l_pipe at 4:5 in @cube)")
    assert _INCOMPLETE_PAIR in ei.value.what
    _ptoas_refuses(text, tmp_path, _INCOMPLETE_PAIR)


_FOLDS_BACK = ["arith.ori %c2v, %c2v : i32", "arith.addi %c2v, %c0 : i32", "arith.addi %c0, %c2v : i32",
               "arith.muli %c1, %c2v : i32", "arith.subi %c2v, %c0 : i32", "arith.divsi %c2v, %c1 : i32"]
_COMPUTED = ["arith.addi %c2v, %c32 : i32", "arith.muli %c2v, %c2 : i32", "arith.subi %c0, %c2v : i32"]


def _local_addr(init: str, form: str) -> str:
    """``_L2L`` (``init="l2l"``) or ``_FRONTEND`` with the Vector init's buffer replaced by
    ``%addr = <form>``."""
    if init == "l2l":
        text = _L2L.replace("N", "8").replace("RES", "8192")
        k = text.rindex("    %pc = pto.initialize_l2l_pipe")
        tail = text[k:].replace("(%c2v : i32)", "(%addr : i32)")
    else:
        text = _FRONTEND.replace("EXTRA", "").replace("RES", "8192")
        k = text.rindex("    pto.aiv_initialize_pipe")
        tail = text[k:].replace("c2v_consumer_buf = %c2v", "c2v_consumer_buf = %addr")
    consts = "".join(f"    %c{n} = arith.constant {n} : i32\n" for n in (1, 2, 32) if f"%c{n}," in form or
                     form.endswith(f"%c{n} : i32")) + ("    %c0 = arith.constant 0 : i32\n"
                                                       if "%c0" in form and init == "l2l" else "")
    return text[:k] + consts + f"    %addr = {form}\n" + tail


@pytest.mark.parametrize("init", ["l2l", "frontend"])
@pytest.mark.parametrize("form", _FOLDS_BACK)
def test_an_address_that_folds_back_to_the_reserved_buffer_is_the_buffer(tmp_path, init, form):
    """ptoas canonicalizes before it pairs the inits: ``%b | %b``, ``%b + 0``, ``1 * %b`` ... are
    the buffer again - taken, not refused."""
    text = _local_addr(init, form)
    read_program(text, "k.pto")
    ptoas = os.environ.get("PTOAS")
    if ptoas:
        f = tmp_path / "k.pto"
        f.write_text(text)
        r = subprocess.run([ptoas, str(f), "-o", str(tmp_path / "k.cpp")], capture_output=True, text=True,
                           timeout=120)
        assert _NOT_FROM_A_BUFFER not in r.stderr + r.stdout, r.stderr[-2000:]


@pytest.mark.parametrize("init", ["l2l", "frontend"])
@pytest.mark.parametrize("form", _COMPUTED)
def test_an_address_computed_from_the_reserved_buffer_is_refused_at_the_init(tmp_path, init, form):
    """``%b + 32`` is an address in the buffer, not the buffer: ptoas cannot find the pipe's
    other end by it and refuses the file; so does ptopipe, at the init's operand, telling to pass
    the buffer itself."""
    text = _local_addr(init, form)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "%addr : i32" in ln)
    with pytest.raises(ParseError) as ei:
        read_program(text, "k.pto")
    assert ei.value.where == f"k.pto:{line}:{text.splitlines()[line - 1].index('%addr : i32') + 1}"
    assert "local address %addr is the result of arith." in ei.value.what and _NOT_FROM_A_BUFFER in ei.value.what
    assert ei.value.fix.startswith("pass %c2v itself")
    _ptoas_refuses(text, tmp_path, _NOT_FROM_A_BUFFER)


@pytest.mark.parametrize("template", ["l2l", "frontend"])
def test_an_import_of_a_buffer_the_peer_does_not_reserve_is_refused_at_the_import(tmp_path, template):
    """The Cube imports "c2v_fifx", which @vector does not reserve: a ParseError at the import's
    name (ptoas: "expects matching peer reserve_buffer to exist"), not at the init that uses it."""
    text = (_L2L.replace("N", "8") if template == "l2l" else _FRONTEND.replace("EXTRA", "")).replace("RES", "8192")
    text = text.replace('{name = "c2v_fifo", peer_func', '{name = "c2v_fifx", peer_func')
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "c2v_fifx" in ln)
    with pytest.raises(ParseError) as ei:
        read_program(text, "k.pto")
    col = text.splitlines()[line - 1].index('"c2v_fifx"') + 1
    assert ei.value.where == f"k.pto:{line}:{col}"
    assert ei.value.what.startswith('pto.import_reserved_buffer names buffer "c2v_fifx" of @vector, which reserves '
                                    'no buffer of that name (it reserves "c2v_fifo")')
    assert 'name = "c2v_fifo"' in ei.value.fix
    _ptoas_refuses(text, tmp_path, "expects matching peer reserve_buffer to exist")


_ACC = ("!pto.tile_buf<loc=acc, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, "
        "slayout=row_major, fractal=1024, pad=0>")
_VEC = ("!pto.tile_buf<loc=vec, dtype=f32, rows=ROWS, cols=16, v_row=ROWS, v_col=16, blayout=row_major, "
        "slayout=none_box, fractal=512, pad=0>")


def _pushed_and_popped(push_split, pop_split):
    """``_FRONTEND`` with the Cube pushing a tile and the Vector popping and freeing it."""
    text = _FRONTEND.replace("EXTRA", "").replace("RES", "8192")
    cube_init = text.index("pto.aic_initialize_pipe")
    k = text.index("    return", cube_init)
    text = (text[:k] + f"    %acc = pto.alloc_tile : {_ACC}\n"
            f"    pto.tpush_to_aiv(%acc : {_ACC}) {{split = {push_split}}}\n" + text[k:])
    vec = _VEC.replace("ROWS", "16" if pop_split == 0 else "8")
    k = text.index("    return", text.index("pto.aiv_initialize_pipe"))
    return (text[:k] + f"    %t = pto.tpop_from_aic {{split = {pop_split}}} -> {vec}\n"
            f"    pto.tfree_from_aic {{split = {pop_split}}}\n" + text[k:])


def test_the_two_ends_of_a_pipe_moving_tiles_differently_are_refused(tmp_path):
    """A Cube that splits its pushes (split = 1) and a Vector that pops whole tiles (split = 0) on
    one reserved buffer's pipe: ptoas infers the pipe's nosplit from both ends and refuses them
    (before, the run found the pops' split differing from the pushes')."""
    text = _pushed_and_popped(1, 0)
    with pytest.raises(ParseError) as ei:
        read_program(text, "k.pto")
    assert ei.value.where == "k.pto:13:5"
    assert ei.value.what == (
        "the two ends of the pipe over buffer \"c2v_fifo\" (reserved by @vector) move tiles differently: "
        "@cube's pto.tpush_to_aiv at 7:5 splits them (split = 1 / 2), @vector's pto.tpop_from_aic at 14:5 moves "
        "whole tiles (split = 0) (ptoas: \"conflicting pipe split usage across peer pipe init ops\")")
    _ptoas_refuses(text, tmp_path, "conflicting pipe split usage across peer pipe init ops")
    read_program(_pushed_and_popped(1, 1), "k.pto")
    read_program(_pushed_and_popped(0, 0), "k.pto")


@pytest.mark.parametrize("form", ["no kind", "section", "other kind"])
def test_a_frontend_pipe_op_outside_its_kind_of_kernel_is_refused_at_it(tmp_path, form):
    """ptoas takes the frontend pipe ops only in a function whose pto.kernel_kind is the kernel
    they name: a Cube function without one - its body in a pto.section.cube too - or marked
    vector is a ParseError at the init, before anything runs."""
    text = _FRONTEND.replace("EXTRA", "").replace("RES", "8192")
    cube = "  func.func @cube() attributes {pto.kernel_kind = #pto.kernel_kind<cube>} {"
    body = text.split(cube + "\n")[1].split("    return\n  }\n", 1)[0]
    if form == "no kind":
        text = text.replace(cube, "  func.func @cube() {")
    elif form == "section":
        text = text.replace(cube + "\n" + body, "  func.func @cube() {\n    pto.section.cube {\n" + body + "    }\n")
    else:
        text = text.replace(cube, cube.replace("<cube>", "<vector>"))
    with pytest.raises(ParseError) as ei:
        read_program(text, "k.pto")
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "pto.aic_initialize_pipe" in ln)
    col = text.splitlines()[line - 1].index("pto.aic_initialize_pipe") + 1
    assert ei.value.where == f"k.pto:{line}:{col}"
    has = "@cube is a vector kernel" if form == "other kind" else "@cube has no pto.kernel_kind"
    assert ei.value.what.startswith(f"pto.aic_initialize_pipe belongs in a cube kernel, but {has}"), ei.value.what
    assert "(ptoas: 'pto.aic_initialize_pipe' op must be inside a cube kernel function)" in ei.value.what
    if form != "other kind":
        assert "pto.kernel_kind = #pto.kernel_kind<cube>" in ei.value.fix and "pto.initialize_l2l_pipe" in ei.value.fix
    _ptoas_refuses(text, tmp_path, "'pto.aic_initialize_pipe' op must be inside a cube kernel function")


_CARRY = """module attributes {pto.target_arch = "a5"} {
  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c16 = arith.constant 16 : index
    %one = arith.constant 1.000000e+00 : f32
    %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %t = pto.alloc_tile : T
    %u = pto.alloc_tile : T
    pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%t : T)
    %f, %g = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %t, %b = %u) -> (T, T) {
      pto.tadds ins(%a, %one : T, f32) outs(%b : T)
      scf.yield %b, %a : T, T
    }
    pto.tstore ins(%f : T) outs(%yp : !pto.partition_tensor_view<16x16xf32>)
    return
  }
}
""".replace("T", "!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, "
                 "slayout=none_box, fractal=512, pad=0>")


def test_a_tile_carried_in_scf_for_iter_args_is_a_warning_at_the_iter_arg(tmp_path):
    """ptoas 0.27 does not lower an scf.for carrying a !pto.tile_buf in iter_args (its memref
    conversion leaves the loop's types): a warning at the iter_arg, and the run computes what
    the loop says (three swaps of +1: x + 3)."""
    import numpy as np
    import ptopipe
    from ptopipe.codegen.pto_exec.pipe_ops import ptoas_refusals
    text = _CARRY
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "iter_args" in ln)
    col = text.splitlines()[line - 1].index("%a = %t") + 1
    mine = ptoas_refusals(read_program(text, "k.pto"))
    assert mine == [f"k.pto:{line}:{col}: ptoas 0.27 refuses this scf.for: it carries the tile %a in iter_args "
                    "(\"'scf.for' op 0-th init and 0-th region iter_arg have different type\", or \"ins/outs are not "
                    "memref yet\" at an op of the carried tile); ptopipe runs it as written - for the device keep the "
                    "tile in one pto.alloc_tile that the body writes in place (outs(%t)), as pypto does"], mine
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    r = ptopipe.run_pto(text=text, inputs=dict(x=x, y=np.zeros_like(x)))
    np.testing.assert_array_equal(r.outputs["y"].reshape(16, 16), x + 3)
    assert any("carries the tile %a in iter_args" in w for w in r.warnings), r.warnings
    _ptoas_refuses(text, tmp_path, "ins/outs are not memref yet")


_VEC_T = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, "
          "slayout=none_box, fractal=512, pad=0>")


@pytest.mark.parametrize("form", ["off the init's direction", "before the init"])
def test_a_frontend_op_on_a_ring_no_init_before_it_enables_is_refused_at_it(tmp_path, form):
    """A Vector tpush_to_aic (V2C) with the function's only init saying dir_mask = 1 (C2V), or a
    tpop_from_aic ahead of the init: ptoas's frontend-pipe lowering refuses the op - a ParseError
    at it, not a KernelError when it runs."""
    text = _FRONTEND.replace("EXTRA", "").replace("RES", "8192")
    init = "    pto.aiv_initialize_pipe {dir_mask = 1"
    if form == "before the init":
        op = f"    %p = pto.tpop_from_aic {{split = 0}} -> {_VEC_T}\n"
        text = text.replace(init, op + init)
        words = "'pto.tpop_from_aic' op requires a dominating frontend initialize_pipe op"
    else:
        op = f"    %t = pto.alloc_tile : {_VEC_T}\n    pto.tpush_to_aic(%t : {_VEC_T}) {{split = 0}}\n"
        text = text.replace("    return\n  }\n}", op + "    return\n  }\n}")
        words = "'pto.tpush_to_aic' op requires the dominating initialize_pipe op to enable V2C"
    with pytest.raises(ParseError) as ei:
        read_program(text, "k.pto")
    name = "pto.tpop_from_aic" if form == "before the init" else "pto.tpush_to_aic"
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if name in ln)
    assert ei.value.where == f"k.pto:{line}:{text.splitlines()[line - 1].index(name) + 1}"
    assert f"(ptoas: {words})" in ei.value.what, ei.value.what
    if form != "before the init":
        assert ei.value.what.startswith("pto.tpush_to_aic moves a tile V2C, but the pipe init at 11:5 says "
                                        "dir_mask = 1 (C2V)"), ei.value.what
    _ptoas_refuses(text, tmp_path, words)
