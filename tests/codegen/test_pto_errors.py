"""Bad .pto input: malformed text is a ParseError at its line:col (never a traceback or a
hang); what ptoas accepts but is unsafe is reported by ptopipe at the .pto line; the CLI
prints one clear error and exits non-zero."""
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from ptopipe.cli import main as cli_main
from ptopipe.codegen.pto_load import load_pto
from ptopipe.codegen import read_pto
from ptopipe.errors import CompileError, ParseError, PtoPipeError

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOOD = (ROOT / "tests" / "pto" / "c2v_split_a3.pto").read_text()
GOOD5 = (ROOT / "tests" / "pto" / "interleaved_dyn_a5.pto").read_text()
LINES = GOOD.splitlines()


def _line(text, needle, k=0):
    hits = [i + 1 for i, ln in enumerate(text.splitlines()) if needle in ln]
    return hits[k]


def _sub(old, new, text=GOOD, count=1):
    assert old in text, old
    return text.replace(old, new, count)


VEC8 = ("!pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=16, v_row=8, v_col=16, blayout=row_major, "
        "slayout=none_box, fractal=512, pad=0>")
MALFORMED = {
    "truncated": (GOOD[:GOOD.index("scf.for %i = %c0 to %c2 step %c1 {\n      %t")], "truncated"),
    "unknown op": (_sub("pto.tmov ins", "pto.tmove ins"), "unknown operation 'pto.tmove'"),
    "bad attribute": (_sub("slot_size = 1024", "slot_size = big"), "bad attribute value 'big'"),
    "tile_buf key order": (_sub("rows=8, cols=16", "cols=16, rows=8"), "tile_buf key 'cols' out of order"),
    "type mismatch": (_sub(f"pto.tstore ins(%o : {VEC8})", f"pto.tstore ins(%o : {VEC8.replace('f32', 'f16', 1)})"),
                      "type mismatch"),
    "missing peer": (_sub("peer_func = @vector", "peer_func = @vectr"), "peer_func @vectr is not a kernel"),
    "undefined value": (_sub("arith.addi %r0, %r1", "arith.addi %r0, %r9"), "use of undefined value %r9"),
    "duplicate name": (_sub("%r1 = arith.muli %sub", "%r0 = arith.muli %sub"), "%r0 defined twice"),
    "unbalanced braces": (_sub("      pto.tpush_to_aiv", "      scf.if %c1 {\n      pto.tpush_to_aiv"), "never closed"),
    "bad integer": (_sub("%c16 = arith.constant 16 : index", "%c16 = arith.constant 1x6 : index"), "bad number '1x6'"),
    "unknown address space": (_sub("#pto.address_space<vec>", "#pto.address_space<ub>"), "unknown address space 'ub'"),
    "unknown tile loc": (_sub("loc=vec", "loc=ub"), "unknown tile address space 'ub'"),
    "wrong operand count": (_sub("pto.tadd ins(%t, %bv : " + VEC8 + ", " + VEC8 + ")", "pto.tadd ins(%t : " + VEC8 + ")"),
                            "pto.tadd takes 2 operand(s)"),
    "missing kernel_kind": (_sub(" attributes {pto.kernel_kind = #pto.kernel_kind<vector>}", ""), "has no pto.kernel_kind"),
    "bad split value": (_sub("pto.tfree_from_aic {split = 1}", "pto.tfree_from_aic {split = 5}"), "bad split value 5"),
    "missing consumer buffer": (_sub(", v2c_consumer_buf = %c0_i32 : i32)", ")"), "needs v2c_consumer_buf"),
    "unknown type": (_sub("-> i32", "-> i33"), "unknown element type 'i33'"),
    "unterminated string": (_sub('name = "c2v_fifo", size', 'name = "c2v_fifo, size'), "unterminated string"),
    "stray character": (_sub("%c0 = arith", "%c0 = $arith"), "unexpected character '$'"),
    "read before write": (_sub("pto.tload ins(%pb : !pto.partition_tensor_view<8x16xf32>) outs(%bv",
                               "pto.tload ins(%pb : !pto.partition_tensor_view<8x16xf32>) outs(%o"),
                          "%bv is read before anything writes it"),
    "tile written in a loop read after it": (_sub("      pto.tstore ins(%o : " + VEC8 + ") outs(%po : !pto.partition_tensor_view<8x16xf32>)\n    }\n",
                                                  "    }\n    %po2 = pto.partition_view %out_view, offsets = [%c0, %c0], sizes = [%c8, %c16] : !pto.tensor_view<32x16xf32> -> !pto.partition_tensor_view<8x16xf32>\n    pto.tstore ins(%o : " + VEC8 + ") outs(%po2 : !pto.partition_tensor_view<8x16xf32>)\n"),
                                             "%o is read after the region that wrote it"),
    "split of the wrong kind": (_sub("pto.tpush_to_aiv(", "pto.tpush_to_aiv(").replace(
        "pto.tfree_from_aic {split = 1}", "pto.tfree_from_aic {split = [1, 2]}"), "bad split value [1, 2]"),
    "address space of the wrong kind": (_sub("location = #pto.address_space<vec>", 'location = "vec"'),
                                        "bad attribute location: expected #pto.address_space<...>"),
    "auto of the wrong kind": (_sub("auto = true", "auto = 1"), "bad attribute auto = 1: expected true or false"),
    "slot_num of the wrong kind": (_sub("slot_num = 4", 'slot_num = "4"'), "bad attribute slot_num = '4': expected an integer"),
    "kernel_kind without a value": (_sub("pto.kernel_kind = #pto.kernel_kind<vector>", "pto.kernel_kind"),
                                    "bad attribute pto.kernel_kind: expected #pto.kernel_kind<...>"),
    "cube op in vector kernel": (_sub("pto.tfree_from_aic {split = 1}", "pto.tfree_from_aiv {split = 1}"),
                                 "pto.tfree_from_aiv in a vector kernel"),
    "missing return": ("    return\n".join(GOOD.rsplit("    return\n", 1)[:1]) + GOOD.rsplit("    return\n", 1)[1],
                       "function @vector does not end with 'return'"),
    "partition size differs from its type": (
        _sub("sizes = [%c8, %c16] : !pto.tensor_view<32x16xf32> -> !pto.partition_tensor_view<8x16xf32>",
             "sizes = [%c16, %c16] : !pto.tensor_view<32x16xf32> -> !pto.partition_tensor_view<8x16xf32>"),
        "partition size %c16 = 16 differs from the result type's 8"),
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_pto_is_a_parse_error_at_its_line(kind):
    text, msg = MALFORMED[kind]
    with pytest.raises(ParseError) as e:
        read_pto(text, "bad.pto")
    err = e.value
    assert msg in err.what, err.what
    assert err.where.startswith("bad.pto:")
    line = int(err.where.split(":")[1])
    assert 1 <= line <= len(text.splitlines()) + 1
    if kind not in ("truncated", "unbalanced braces", "missing peer", "tile written in a loop read after it"):
        # the error is on the line the edit changed
        good, bad = GOOD.splitlines(), text.splitlines()
        first = next(i for i, (a, b) in enumerate(zip(good, bad)) if a != b) + 1
        assert line in (first - 1, first, first + 1), (line, first, err.where)   # an op may span 2 lines


@pytest.mark.parametrize("old,new,bracket", [
    ("pto.tadd ins(%t, %bv : " + VEC8 + ", " + VEC8 + ")", "pto.tadd ins(%t, %bv : " + VEC8 + ", " + VEC8, "("),
    ("dtype=f32, rows=8, cols=16, v_row=8, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>)",
     "dtype=f32, rows=8, cols=16, v_row=8, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0)", "<"),
], ids=["operand list", "type"])
def test_a_bracket_left_open_is_a_parse_error_at_that_bracket(old, new, bracket):
    """The executor's reader: an operation continues while a bracket is open, but never into
    the next operation - a bracket a typo leaves open is reported where it opens, not at the
    end of the file."""
    from ptopipe.codegen.pto_exec import read_program
    text = _sub(old, new)
    line = _line(text, new)
    with pytest.raises(ParseError) as e:
        read_program(text, "bad.pto")
    row = text.splitlines()[line - 1]
    end = row.index(new) + len(new)
    col = (row.index("ins(") + 4 if bracket == "(" else row.rindex("tile_buf<", 0, end) + len("tile_buf<"))
    assert e.value.where == f"bad.pto:{line}:{col}", (e.value.where, row)
    assert f"the '{bracket}' here is never closed (line {line + 1} starts the next operation)" in e.value.what


ACC = "fractal=1024, pad=0>) {split = 1}"
MAT = "%b_mat = pto.alloc_tile : !pto.tile_buf<loc=mat, dtype=f32,"


@pytest.mark.parametrize("old,new,at,what", [
    (ACC, ACC + " &", " &", "unexpected character '&'"),
    (MAT, MAT.replace("dtype=f32,", "dtype=f32 &,"), " &", "unexpected character '&'"),
    ("%b_mat = pto.alloc_tile : ", '%b_mat = pto.alloc_tile {name = "a/b" : ', "{name", "the '{' here is never closed"),
], ids=["after an op's attributes", "in a tile type", "a brace left open before a string"])
def test_a_stray_character_or_open_bracket_is_a_parse_error_at_its_place_in_the_file(old, new, at, what):
    """The executor's reader reads parts of a statement (its attributes, its type) on their
    own: an error in one is at its line and column in the file, not in the part."""
    from ptopipe.codegen.pto_exec import read_program
    text = _sub(old, new)
    line = _line(text, new)
    with pytest.raises(ParseError) as e:
        read_program(text, "bad.pto")
    col = text.splitlines()[line - 1].index(at) + 1 + at.startswith(" ")
    assert (e.value.where, what in e.value.what) == (f"bad.pto:{line}:{col}", True), e.value.what


def test_a_multi_line_attribute_dictionary_is_no_new_operation():
    from ptopipe.codegen.pto_exec import read_program
    text = GOOD.replace('{pto.target_arch = "a3"}', '{\n  pto.target_arch = "a3"\n}', 1)
    assert text != GOOD
    read_pto(text, "ok.pto")
    read_program(text, "ok.pto")


PB = "%pb = pto.partition_view %bias_view, offsets = [%row, %c0], sizes = [%c8, %c16] : !pto.tensor_view<32x16xf32>"
SEL = "      %is1 = arith.cmpi eq, %sub, %c1 : index\n      %r1 = arith.select "


@pytest.mark.parametrize("old,new,msg,at", [
    (PB + " -> !pto.partition_tensor_view<8x16xf32>", PB.replace("sizes = [%c8", "sizes = [%row"),
     "size %row is not an arith.constant, and this pto.partition_view has no result type", "sizes = [%row"),
    ("slot_size = 1024, slot_num = 4}\n      (gm_slot_buffer = %gm_slot_buffer : !pto.ptr<f32>, c2v_consumer_buf = %c2v_local",
     "slot_size = 1024, slot_num = 4 : f32}\n      (gm_slot_buffer = %gm_slot_buffer : !pto.ptr<f32>, c2v_consumer_buf = %c2v_local",
     "bad attribute type 'f32' for 4", "pto.aiv_initialize_pipe"),
    ("      %r1 = arith.muli %sub, %c8 : index", "      %r1 = arith.select %sub, %c8, %c0 : index",
     "%sub is a", "%r1 = arith.select"),
    ("      %r1 = arith.muli %sub, %c8 : index", SEL + "%is1, %c8, %c0_i32 : index",
     "type mismatch: %c0_i32 is a", "%r1 = arith.select"),
])
def test_ptoas_spellings_errors_at_their_line(old, new, msg, at):
    """Errors in the ptoas spellings the reader accepts (partition_view with no result type,
    typed integer attributes, arith.select) are at the line of the op."""
    text = _sub(old, new)
    with pytest.raises(ParseError) as e:
        read_pto(text, "bad.pto")
    assert msg in e.value.what, e.value.what
    assert e.value.where.startswith(f"bad.pto:{_line(text, at)}:"), e.value.where


def test_a_missing_token_at_the_end_of_a_line_is_reported_on_that_line():
    """``expected ':'`` for an op whose type is missing points just after the op's last token
    (its line), not at the next line's first token."""
    text = _sub("%row = arith.addi %r0, %r1 : index", "%row = arith.addi %r0, %r1")
    with pytest.raises(ParseError) as e:
        read_pto(text, "bad.pto")
    ln = _line(text, "%row = arith.addi %r0, %r1")
    col = text.splitlines()[ln - 1].index("%r1") + 4
    assert "expected ':'" in e.value.what and e.value.where == f"bad.pto:{ln}:{col}", e.value


@pytest.mark.parametrize("old, new, what, at", [
    ("shape = [%c32, %c16], strides", "shape = [%c32, %c16] strides", "pto.make_tensor_view: expected ',' before "
     "'strides ='", "strides"),
    ("%c0 = arith.constant 0 : index", "%c0 = arith.constant 0 :", "arith.constant: expected a type after ':'", ":"),
])
def test_a_run_refuses_text_ptoas_refuses_that_the_ops_could_be_read_past(tmp_path, capsys, old, new, what, at):
    """A missing comma between a list and the next key, or a missing type after ':', is a
    ParseError of the run at its token - the run's reader looks tokens up by key and would
    read past it, and the static reader's refusal alone only skips verification."""
    text = _sub(old, new)
    f = tmp_path / "bad.pto"
    f.write_text(text)
    assert cli_main(["run", str(f)]) == 1
    err = capsys.readouterr().err
    ln = _line(text, new)
    col = text.splitlines()[ln - 1].rindex(at) + 1
    assert f"ParseError: {what}" in err and f"at {f}:{ln}:{col}\n" in err, err


SOFTMAX = (ROOT / "tests" / "pto_corpus" / "v_softmax_rows_a3.pto").read_text()


def test_a_misspelled_operation_on_a_line_of_its_own_is_no_part_of_the_op_above(tmp_path, capsys):
    """A bare word where an operation's line would go on (``retrun``) is refused at its line -
    the reader would take it for a continuation of the op above and run on without it."""
    text = SOFTMAX.replace("    return\n", "    retrun\n")
    f = tmp_path / "bad.pto"
    f.write_text(text)
    assert cli_main(["run", str(f)]) == 1
    err = capsys.readouterr().err
    ln = _line(text, "retrun")
    assert "ParseError: expected an operation, got 'retrun' (not a part of the pto.tstore above)" in err
    assert f"at {f}:{ln}:5\n" in err


SM_TILE = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=64, v_row=16, v_col=64, blayout=row_major, "
           "slayout=none_box, fractal=512, pad=0>")


@pytest.mark.parametrize("old, new, what, at", [
    (f"pto.texp ins(%shifted : {SM_TILE})", f"pto.texp ins(%shifted, %c0 : {SM_TILE}, index)",
     "pto.texp takes 1 operand(s) in ins(...), got 2: %c0 is one too many", "%c0 :"),
    (f"pto.tmuls ins(%scores, %scale : {SM_TILE}, f32)", f"pto.tmuls ins(%scores, %scale : {SM_TILE})",
     "pto.tmuls: 2 operand(s) but 1 type(s) after their ':'", "!pto.tile_buf"),
])
def test_an_op_given_more_operands_or_fewer_types_than_it_takes_is_refused_at_them(tmp_path, capsys, old, new,
                                                                                    what, at):
    """An operand past the op's last (here an index, which the run handed the instruction as a
    wait event: "TSYNC expects Event tokens") and an operand list with fewer types than values
    (which ran as if the types were there) are ParseErrors at the operand / the types, as ptoas
    refuses both - in a kernel without pipes too, whose static check has nothing to stop."""
    text = SOFTMAX.replace(old, new)
    assert text != SOFTMAX
    f = tmp_path / "bad.pto"
    f.write_text(text)
    code = cli_main(["run", str(f)])
    out, err = capsys.readouterr()
    ln = _line(text, new)
    col = text.splitlines()[ln - 1].index(at, len(new.split("(")[0])) + 1
    assert code == 1, out + err
    assert f"ParseError: {what}" in err and f"at {f}:{ln}:{col}\n" in err, err


@pytest.mark.parametrize("command", [["run"], ["check", "--static"]])
def test_a_function_without_its_return_is_refused_at_its_last_op(tmp_path, capsys, command):
    """A body with no ``return`` (ptoas: "block with no terminator") is a ParseError at its
    last op for the run and the static check alike - not a run of the body as if it were whole,
    nor a PASS of a kernel without pipes, whose static check has nothing else to refuse."""
    text = SOFTMAX.replace("    return\n", "")
    f = tmp_path / "bad.pto"
    f.write_text(text)
    code = cli_main([*command, str(f)])
    out, err = capsys.readouterr()
    ln = _line(text, "pto.tstore ins(%probs")
    assert code == 1, out + err
    assert ("ParseError: function @softmax_rows does not end with 'return': its last operation, pto.tstore at "
            f"line {ln}, is no terminator" in err and f"at {f}:{ln}:5\n" in err), err


@pytest.mark.parametrize("old, new, fix", [
    ("module attributes", "modul attributes", "did you mean 'module'?"),
    ("scf.for %i", "scf.fro %i", "did you mean 'scf.for'?"),
    ("func.func private @cube", "func.fnc private @cube", "did you mean 'func.func'?"),
])
def test_a_misspelled_region_op_is_refused_at_its_name(tmp_path, capsys, old, new, fix):
    """``modul ... {`` on line 1: the error said the '{' was never closed (at the '{'), not that
    the word before it is no op holding a region, as ptoas says ("custom op 'modul' is unknown")."""
    text = _sub(old, new)
    f = tmp_path / "bad.pto"
    f.write_text(text)
    assert cli_main(["run", str(f)]) == 1
    err = capsys.readouterr().err
    ln = _line(text, new)
    name = new.split()[0]
    assert err.startswith(f"error: ParseError: {name} is no operation that holds a region, yet the '{{' ending "
                          f"its line opens one (line {ln + 1} starts an operation in it)\n"), err
    assert f"at {f}:{ln}:{text.splitlines()[ln - 1].index(name) + 1}\n  fix: {fix}\n" in err, err


@pytest.mark.parametrize("command", ["run", "check"])
def test_text_after_the_modules_closing_brace_is_refused_at_it(tmp_path, capsys, command):
    """Words after the module's last '}' (a stray paste at the end of the file) are refused
    where they start, as ptoas and `compile` refuse them - the run read past them."""
    text = SOFTMAX + "garbage after\n"
    f = tmp_path / "bad.pto"
    f.write_text(text)
    assert cli_main([command, str(f), "--schedules", "0"][:2 if command == "run" else 4]) == 1
    cap = capsys.readouterr()
    assert "ParseError: unexpected 'garbage' after the module's closing '}'" in cap.err, cap.err
    assert f"at {f}:{_line(text, 'garbage')}:1\n" in cap.err and "PASS" not in cap.out


@pytest.mark.parametrize("new, what", [("%c16 arith.constant 16 : index", "expected '=' after the result %c16"),
                                       ("c16 = arith.constant 16 : index",
                                        "the result c16 of arith.constant needs its '%'")])
def test_a_result_definition_without_its_equals_or_its_sigil_is_refused_at_its_line(tmp_path, capsys, new, what):
    text = SOFTMAX.replace("%c16 = arith.constant 16 : index", new)
    f = tmp_path / "bad.pto"
    f.write_text(text)
    assert cli_main(["run", str(f)]) == 1
    err = capsys.readouterr().err
    assert f"ParseError: {what}" in err and f"at {f}:{_line(text, new)}:5\n" in err, err


def test_a_constant_without_a_type_takes_mlirs_default_type_not_a_bit():
    """``arith.constant 0.125`` is an f64 and ``arith.constant 16`` an i64, as MLIR reads
    them (ptoas then refuses the use of an f64 where an f32 goes): never an i1 that keeps the
    value's lowest bit."""
    import ptopipe
    x = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)
    run = lambda t: ptopipe.run_pto(text=t, inputs=dict(s=x, p=np.zeros_like(x)))      # noqa: E731
    typed = run(SOFTMAX)
    untyped = run(SOFTMAX.replace("arith.constant 1.250000e-01 : f32", "arith.constant 1.250000e-01")
                  .replace("%c16 = arith.constant 16 : index", "%c16 = arith.constant 16"))
    for k in typed.outputs:
        np.testing.assert_array_equal(untyped.outputs[k], typed.outputs[k])


@pytest.mark.parametrize("old, new, what", [
    ("strides = [%c64, %c1]", "stride = [%c64, %c1]",
     "pto.make_tensor_view has no attribute 'stride' (it takes layout, shape, strides)"),
    ("{layout = #pto.layout<nd>}", "{layout = #pto.layout<nd>, layout = #pto.layout<dn>}",
     "pto.make_tensor_view gives attribute 'layout' twice"),
    ("offsets = [%c0, %c0]", "offset = [%c0, %c0]", "pto.partition_view has no attribute 'offset'"),
])
def test_a_misspelled_or_repeated_attribute_of_an_op_read_by_name_is_refused(tmp_path, capsys, old, new, what):
    """The run reads these ops' pieces by name: a misspelled one would be ignored (``stride =``:
    the view read as dense) - it is a ParseError at the op, with the spelling it resembles."""
    text = SOFTMAX.replace(old, new, 1)
    assert text != SOFTMAX
    f = tmp_path / "bad.pto"
    f.write_text(text)
    assert cli_main(["run", str(f)]) == 1
    err = capsys.readouterr().err
    assert f"ParseError: {what}" in err and f"at {f}:{_line(text, new)}:" in err, err


SM_COL = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=1, v_row=16, v_col=1, blayout=col_major, "
          "slayout=none_box, fractal=512, pad=0>")


@pytest.mark.parametrize("name, old, new, what", [
    ("c_mm_sync_flags_a3.pto", "pto.tmatmul.acc ins(%7, %5, %6 :", "pto.tmatmul.acc ins(%5, %6 :",
     "pto.tmatmul.acc: 2 operand(s) but 3 type(s) after their ':' (MLIR gives each operand one type; ptoas "
     "refuses the op)"),
    ("v_softmax_rows_a3.pto", f"pto.trowexpandsub ins(%scaled, %row_max : {SM_TILE}, {SM_COL})",
     f"pto.trowexpandsub ins(%scaled : {SM_TILE})",
     "pto.trowexpandsub: its operands, attributes or types do not read as ptoas writes them (1 operand(s) missing)"),
])
def test_an_op_whose_pieces_do_not_read_says_what_is_missing_in_the_ops_words(tmp_path, capsys, name, old, new, what):
    text = (ROOT / "tests" / "pto_corpus" / name).read_text()
    assert old in text
    text = text.replace(old, new, 1)
    f = tmp_path / name
    f.write_text(text)
    assert cli_main(["run", str(f)]) == 1
    err = capsys.readouterr().err
    assert f"ParseError: {what}\n  at {f}:{_line(text, new)}:" in err, err


def test_op_table_errors_name_the_op_once():
    """An op-table check (here: an 8x16 tile stored into a 32x8 tensor) is reported once as
    ``store: ...`` (``pl.store: ...`` from the DSL), not ``store: store: ...``."""
    text = _sub("%out_view = pto.make_tensor_view %out, shape = [%c32, %c16], strides = [%c16, %c1] : !pto.tensor_view<32x16xf32>",
                "%out_view = pto.make_tensor_view %out, shape = [%c32, %c8], strides = [%c8, %c1] : !pto.tensor_view<32x8xf32>")
    text = _sub("%po = pto.partition_view %out_view, offsets = [%row, %c0], sizes = [%c8, %c16] : !pto.tensor_view<32x16xf32>",
                "%po = pto.partition_view %out_view, offsets = [%row, %c0], sizes = [%c8, %c16] : !pto.tensor_view<32x8xf32>", text)
    with pytest.raises(ParseError) as e:
        read_pto(text, "bad.pto")
    assert e.value.what == "store: a 8x16 tile does not fit tensor 32x8", e.value.what
    assert e.value.where.startswith(f"bad.pto:{_line(text, 'pto.tstore ins(%o')}:")
    import ptopipe.language as pl
    with pytest.raises(CompileError) as e:
        @pl.aiv
        def k(x: pl.Tensor[[16, 32], pl.f32], y: pl.Tensor[[16, 8], pl.f32]):
            t = pl.load(x, [0, 0], [16, 32])
            pl.store(t, [0, 0], y)
    assert e.value.what == "pl.store: a 16x32 tile does not fit tensor 16x8", e.value.what


SLOTID = (ROOT / "tests" / "pto" / "lowlevel_slotid_a3.pto").read_text()
FIFO = "      %t = pto.get_fifo_tile(%pipe, %sid : !pto.pipe, index) -> "


@pytest.mark.parametrize("edit,msg,at", [
    (lambda t: t.replace(FIFO, FIFO.replace("%t =", "%t2 =") + VEC8 + "\n" + FIFO, 1),
     "a second pto.get_fifo_tile of slot %sid", "%t = pto.get_fifo_tile"),
    (lambda t: t.replace("      pto.tfree(%pipe, %sid", "      pto.tfree(%pipe, %sid : !pto.pipe, index) {split = 1}\n"
                         "      pto.tfree(%pipe, %sid", 1), "slot %sid freed twice", "pto.tfree(%pipe, %sid"),
    (lambda t: t.replace(FIFO, "      pto.tfree(%pipe, %sid : !pto.pipe, index) {split = 1}\n" + FIFO, 1),
     "pto.tfree of slot %sid before its pto.get_fifo_tile", "pto.tfree(%pipe, %sid"),
    (lambda t: t.replace("%sid = pto.tpop(%pipe : !pto.pipe) {split = 1} -> index",
                         "%sid = pto.tpop(%pipe : !pto.pipe) {split = 1} -> index\n      scf.if %c1 {", 1)
     .replace(FIFO + VEC8, FIFO + VEC8 + "\n      }", 1),
     "outside the block of its pto.tpop", "pto.get_fifo_tile"),
])
def test_slot_id_misuse(edit, msg, at):
    text = edit(SLOTID)
    assert text != SLOTID
    with pytest.raises(ParseError) as e:
        read_pto(text, "s.pto")
    assert msg in e.value.what, e.value.what
    assert int(e.value.where.split(":")[1]) in [i + 1 for i, ln in enumerate(text.splitlines()) if at in ln]


def test_parameter_attribute_dicts_are_read():
    text = GOOD.replace("%bias: !pto.ptr<f32>, %out", "%bias: !pto.ptr<f32> {pto.note = 1}, %out", 1)
    assert text != GOOD
    read_pto(text, "p.pto")


def test_error_lines_of_structural_cases():
    _, _ = MALFORMED["missing peer"]
    with pytest.raises(ParseError) as e:
        read_pto(MALFORMED["missing peer"][0], "bad.pto")
    assert e.value.where == f"bad.pto:{_line(GOOD, 'import_reserved_buffer')}:5"
    with pytest.raises(ParseError) as e:
        read_pto(MALFORMED["tile written in a loop read after it"][0], "bad.pto")
    assert "iter_args" in e.value.fix
    with pytest.raises(ParseError) as e:
        read_pto(MALFORMED["unbalanced braces"][0], "bad.pto")
    cube = LINES[_line(GOOD, "func.func private @cube") - 1]
    assert e.value.where == f"bad.pto:{_line(GOOD, 'func.func private @cube')}:{len(cube)}"
    assert "never closed before the next func.func at line" in e.value.what
    with pytest.raises(ParseError) as e:
        read_pto(MALFORMED["truncated"][0], "bad.pto")
    vec = LINES[_line(GOOD, "func.func private @vector") - 1]
    assert e.value.where == f"bad.pto:{_line(GOOD, 'func.func private @vector')}:{len(vec)}"
    assert "never closed before the end of the file (truncated?)" in e.value.what


_PO = ("      %po = pto.partition_view %out_view, offsets = [%row, %c0], sizes = [%c8, %c16] : "
       "!pto.tensor_view<32x16xf32> -> !pto.partition_tensor_view<8x16xf32>\n"
       f"      pto.tstore ins(%o : {VEC8}) outs(%po : !pto.partition_tensor_view<8x16xf32>)\n")


def test_a_name_defined_in_both_branches_of_an_if_is_read_and_verified(tmp_path, capsys):
    """MLIR scopes names by region: %po defined in the then and the else region of an
    scf.if (ptoas builds it) was "%po defined twice" to the static verifier, which then
    skipped the file; it verifies now, and the run stores both lanes' rows."""
    branches = ("      %is0 = arith.cmpi eq, %sub, %c0 : index\n      scf.if %is0 {\n" + _PO.replace("      ", "        ")
                + "      } else {\n" + _PO.replace("      ", "        ") + "      }\n")
    text = _sub(_PO, branches)
    read_pto(text, "sib.pto")
    after = _sub(_PO, branches + _PO.replace("%po", "%q").replace(
        "      %q = ", "      %po = arith.addi %row, %c0 : index\n      %q = "))
    read_pto(after, "after.pto")           # the branches' %po is out of sight after the if
    f = tmp_path / "sib.pto"
    f.write_text(text)
    assert cli_main(["check", "--static", str(f)]) == 0
    assert "PASS sib.pto on a2a3 (spec): verified statically" in capsys.readouterr().out
    assert cli_main(["run", str(f)]) == 0
    assert "skipped" not in capsys.readouterr().err


@pytest.mark.parametrize("redefined", ["%row", "%po"])
def test_a_name_defined_again_where_it_is_visible_stays_an_error_of_the_static_reader(redefined):
    """Shadowing a visible outer name (%row of the loop body) or defining one twice in a
    region is MLIR's "redefinition of SSA value" (ptoas refuses both)."""
    twice = _PO.replace("%po = ", f"{redefined} = ", 1).replace("outs(%po", f"outs({redefined}")
    if redefined == "%po":
        twice = _PO + twice
    text = _sub(_PO, "      %is0 = arith.cmpi eq, %sub, %c0 : index\n      scf.if %is0 {\n"
                + twice.replace("      ", "        ") + "      }\n" if redefined == "%row" else twice)
    with pytest.raises(ParseError) as e:
        read_pto(text, "re.pto")
    second = [i for i, ln in enumerate(text.splitlines(), 1) if ln.lstrip().startswith(f"{redefined} = ")][-1]
    assert e.value.what.startswith(f"{redefined} defined twice (first at line ")
    assert e.value.where.startswith(f"re.pto:{second}:")
    assert "a name is defined once in its region and the regions nested in it" in e.value.fix


def test_loop_carried_buffer_never_written_before_the_loop():
    """A buffer the loop body reads before writing it is carried through the loop
    (tests/codegen/test_pto.py); with nothing written before the loop it has no first value."""
    text = _sub("      %t = pto.tpop_from_aic", "      pto.tadd ins(%o, %o : " + VEC8 + ", " + VEC8 + ") outs(%o : " + VEC8 + ")\n      %t = pto.tpop_from_aic")
    with pytest.raises(ParseError) as e:
        read_pto(text, "bad.pto")
    assert "%o is read in this scf.for body before it is written, and nothing writes it before the loop" in e.value.what
    assert e.value.where == f"bad.pto:{_line(text, 'pto.tadd ins(%o, %o')}:20"


def test_buffer_read_in_the_else_branch_with_nothing_written_before_the_loop():
    """tests/pto/if_else_read_a3.pto (then-branch writes %s, else-branch reads it; carried by
    the loop) without its init before the loop: the else-branch's read is the error."""
    text = (ROOT / "tests" / "pto" / "if_else_read_a3.pto").read_text()
    text = _sub("    pto.texpands ins(%f0 : f32) outs(%s : !pto.tile_buf<vec, 16x16xf32>)\n", "", text)
    with pytest.raises(ParseError) as e:
        read_pto(text, "bad.pto")
    assert "%s is read in this scf.for body before it is written, and nothing writes it before the loop" in e.value.what
    assert e.value.where == f"bad.pto:{_line(text, 'pto.tadd ins(%s, %t')}:22"


# -- unsafe but accepted by ptoas: reported by ptopipe at the .pto line ---------------------------
def _load(text, platform="a2a3"):
    return load_pto("u.pto", platform, "spec", text=text)


def test_a_cube_tfree_without_split_of_a_split_tpop():
    """pto-isa's Cube frees a V2C slot on AIV0's flag alone for split 0 (setIntraBlockBySplit):
    AIV1 never gets its half back.  Another split than the TPOP's, or any split in a Vector
    core's TFREE, frees alike on the device and is accepted, by ptoas too."""
    both = (ROOT / "tests" / "pto_corpus" / "x_both_split1_a3.pto").read_text()
    text = _sub("pto.tfree_from_aiv {split = 1}", "pto.tfree_from_aiv {split = 0}", text=both)
    with pytest.raises(CompileError) as e:
        _load(text)
    assert "TFREE gives split TILE_NO_SPLIT" in e.value.what and "used TILE_UP_DOWN" in e.value.what
    assert e.value.where.startswith(f"u.pto:{_line(both, 'pto.tfree_from_aiv')}:")
    _load(_sub("pto.tfree_from_aiv {split = 1}", "pto.tfree_from_aiv {split = 2}", text=both))
    _load(_sub("pto.tfree_from_aic {split = 1}", "pto.tfree_from_aic {split = 2}"))
    _load(_sub("pto.tfree_from_aic {split = 1}", "pto.tfree_from_aic {split = 0}"))


def test_missing_tfree():
    text = _sub("      pto.tfree_from_aic {split = 1}\n", "")
    with pytest.raises(CompileError) as e:
        _load(text)
    assert "never freed" in e.value.what
    assert e.value.where.startswith(f"u.pto:{_line(GOOD, 'pto.tpop_from_aic')}:")


def test_reserve_size_is_not_slot_num_times_slot_size():
    text = _sub("size = 4096", "size = 3072")
    with pytest.raises(CompileError) as e:
        _load(text, "a5")
    assert "4096" in e.value.what or "SLOT_NUM" in e.value.what
    assert e.value.where.startswith(f"u.pto:{_line(GOOD, 'pto.reserve_buffer')}:")


def test_popped_tile_larger_than_slot_size():
    text = GOOD.replace("slot_size = 1024", "slot_size = 256").replace("size = 4096", "size = 1024")
    with pytest.raises(PtoPipeError) as e:
        _load(text)
    assert "this TPUSH moves Acc tile 16x16 f32 (1024 bytes) but the C2V ring's SLOT_SIZE is 256 bytes" \
        in e.value.what
    assert e.value.where.startswith(f"u.pto:{_line(GOOD, 'pto.tpush_to_aiv')}:")


def test_reserve_overlapping_an_explicit_alloc_tile_addr():
    text = _sub('auto = true} -> i32', 'auto = false, base = 0} -> i32')
    text = _sub("    %bv = pto.alloc_tile : ", "    %c2048_i64 = arith.constant 2048 : i64\n    %bv = pto.alloc_tile addr = %c2048_i64 : ", text)
    with pytest.raises(CompileError) as e:
        _load(text)
    assert "overlaps the tile placed at addr 2048" in e.value.what
    assert e.value.where == f"u.pto:{_line(text, '%bv = pto.alloc_tile')}:5"
    ok = text.replace("base = 0}", "base = 65536}")
    _load(ok)


# -- CLI ------------------------------------------------------------------------------------------------
def test_cli_run_pto_writes_output(tmp_path):
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, (32, 16)).astype(np.float32)
    b = rng.integers(-3, 4, (16, 16)).astype(np.float32)
    bias = rng.integers(-3, 4, (32, 16)).astype(np.float32)
    for n, v in (("a", a), ("b", b), ("bias", bias), ("out", np.zeros((32, 16), np.float32))):
        np.save(tmp_path / f"{n}.npy", v)
    f = str(ROOT / "tests" / "pto" / "c2v_split_a3.pto")
    code = cli_main(["run", f] + [f"--input={n}={tmp_path / (n + '.npy')}" for n in ("a", "b", "bias")]
                    + [f"--output=out={tmp_path / 'res.npy'}"])     # an output needs no input
    assert code == 0
    np.testing.assert_array_equal(np.load(tmp_path / "res.npy"), a @ b + bias)
    assert cli_main(["check", f, "--schedules", "3"]) == 0
    assert cli_main(["check", "--static", f]) == 0


def test_cli_check_pto_reports_a_protocol_error(tmp_path, capsys):
    """both_ways_a5.pto without the Vector kernel's TFREE: the static passes refuse it at the
    pop under either protocol - exit 1, the error at the .pto line, also as JSON."""
    text = (ROOT / "tests" / "pto" / "both_ways_a5.pto").read_text()
    f = tmp_path / "no_free.pto"
    f.write_text(text.replace("    pto.tfree_from_aic {split = 1}\n", ""))
    pop = f"no_free.pto:{_line(f.read_text(), 'pto.tpop_from_aic')}:5"
    for protocol in ("pto-isa", "spec"):
        assert cli_main(["check", str(f), "--protocol", protocol, "--schedules", "2"]) == 1
        err = capsys.readouterr().err
        assert "CompileError" in err and pop in err and "is never freed" in err, err
    assert cli_main(["check", str(f), "--protocol", "pto-isa", "--schedules", "2", "--json"]) == 1
    import json
    rep = json.loads(capsys.readouterr().out)
    assert rep[0]["failure"]["error"] == "CompileError" and rep[0]["failure"]["where"].endswith(pop)


@pytest.mark.parametrize("command", ["check", "compile"])
def test_cli_bad_pto_is_one_clear_error(command, tmp_path, capsys):
    """Every command reading a .pto says the same (``compile`` read it with the value-IR reader
    only: no name guessed for a misspelt op, an unclosed bracket reported a line too late)."""
    p = tmp_path / "bad.pto"
    p.write_text(MALFORMED["unknown op"][0])
    assert cli_main([command, str(p)]) != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "unknown operation 'pto.tmove'" in err
    assert f"bad.pto:{_line(p.read_text(), 'pto.tmove')}:" in err
    assert "fix: did you mean 'pto.tmov'?" in err        # a misspelt op: the nearest one
    p.write_text(_sub("pto.tmov ins", "pto.tfrobnicate ins"))
    assert cli_main([command, str(p)]) != 0
    assert "did you mean" not in capsys.readouterr().err     # nothing near: no guess
    add = "pto.tadd ins(%t, %bv : " + VEC8 + ", " + VEC8 + ")"
    p.write_text(_sub(add, add[:-1]))                   # an operand list left open
    assert cli_main([command, str(p)]) != 0
    line = _line(p.read_text(), add[:-1])
    err = capsys.readouterr().err
    assert f"bad.pto:{line}:" in err and f"never closed (line {line + 1} starts the next operation)" in err, err


def test_cli_compile_emit_pto_to_file(tmp_path):
    out = tmp_path / "s1.pto"
    assert cli_main(["compile", str(ROOT / "examples" / "mixed" / "s1_cv_split.py"), "--emit", "pto",
                     "--platform", "a5", "-o", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("module @") and 'pto.target_arch = "a5"' in text
    read_pto(text, str(out))
    assert [x.name for x in tmp_path.iterdir()] == ["s1.pto"]     # no temporary left behind


def test_mutated_pto_gives_only_ptopipe_errors():
    """Truncations and random token edits of the hand-written files: each reads, or raises a
    PtoPipeError with a location - never another exception, never a hang."""
    import random
    rng = random.Random(0)
    toks = ["{", "}", "(", ")", "%x", "=", ",", ":", "<", ">", "->", "0", "-1", '"', "@f",
            "!pto.tile_buf", "#pto.x", "?", "x", "scf.for", "i32", ""]
    n_err = 0
    for p in sorted((ROOT / "tests" / "pto").glob("*.pto")):
        text = p.read_text()
        cands = [text[:i] for i in range(0, len(text), 211)]
        for _ in range(35):         # (benchmarks/fuzz.py runs random kernels for minutes)
            i = rng.randrange(len(text))
            cands.append(text[:i] + rng.choice(toks) + text[i + rng.randrange(1, 12):])
        for t in cands:
            try:
                read_pto(t, "m.pto")
            except PtoPipeError as e:
                n_err += 1
                assert e.where and e.where.startswith("m.pto:"), e
    assert n_err > 400


def test_mutated_attribute_values_give_only_ptopipe_errors():
    """Every ``key = value`` of the hand-written files replaced by values of other kinds
    (bool, list, string, enum, negative, huge ...): read and the static passes raise only
    PtoPipeErrors."""
    import random
    import re
    rng = random.Random(1)
    vals = ["true", "[1, 2]", '"a3"', "#pto.x<y>", "<vec>", "-5", "0", "3.5", "@f", "99999"]
    for p in sorted((ROOT / "tests" / "pto").glob("*.pto")):
        text = p.read_text()
        spots = [m.start(1) for m in re.finditer(r"= ([^,}\s]+)", text)]
        for k in range(30):
            i = rng.choice(spots)
            j = i + len(re.match(r"[^,}\s]+", text[i:]).group())
            t = text[:i] + rng.choice(vals) + text[j:]
            try:
                if k % 4:
                    read_pto(t, "m.pto")
                else:
                    load_pto("m.pto", None, "spec", text=t)
            except PtoPipeError as e:
                assert e.where, e


def test_cli_run_pto_input_errors(tmp_path, capsys):
    f = str(ROOT / "tests" / "pto" / "c2v_split_a3.pto")
    assert cli_main(["run", f]) == 0          # no inputs: seeded random data, said in a note
    assert "note: a: seeded random float32[32, 16] (give --input a=FILE.npy)" in capsys.readouterr().out
    np.save(tmp_path / "a.npy", np.zeros((4, 4), np.float32))
    assert cli_main(["run", f, f"--input=a={tmp_path / 'a.npy'}"]) != 0
    assert "--input a: float32[4, 4] but the kernel takes f32[32, 16]" in capsys.readouterr().err
    assert cli_main(["run", f, f"--input=zz={tmp_path / 'a.npy'}"]) != 0
    assert "the kernel has no parameter 'zz'" in capsys.readouterr().err


def test_a_pto_file_that_is_not_utf8_is_a_parse_error_at_the_byte(tmp_path, capsys):
    p = tmp_path / "bin.pto"
    text = GOOD.encode()
    k = text.index(b"pto.tload")
    p.write_bytes(text[:k] + b"\xff" + text[k:])
    assert cli_main(["check", "--static", str(p)]) == 1
    err = capsys.readouterr().err
    assert "ParseError: byte 0xff is not UTF-8 text" in err
    assert f"bin.pto:{_line(GOOD, 'pto.tload')}:" in err and "Traceback" not in err


def test_regions_nested_past_the_recursion_limit_are_a_parse_error(tmp_path, capsys):
    depth = sys.getrecursionlimit()
    body = "".join("  " * i + "scf.if %c {\n" for i in range(depth)) + "".join(
        "  " * i + "}\n" for i in reversed(range(depth)))
    p = tmp_path / "deep.pto"
    p.write_text("module {\n  func.func @k(%c: i1) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {\n"
                 + body + "    return\n  }\n}\n")
    assert cli_main(["check", "--static", str(p)]) == 1
    err = capsys.readouterr().err
    assert "ParseError: regions nest deeper than the reader follows" in err and "Traceback" not in err


def test_pipe_ends_disagreeing_with_an_explicit_gm_slot_buffer_are_reported_at_the_init():
    """An a3 file passing %gm_slot_buffer: each kernel sizes it from its own init, so ends
    that disagree (slot_num 4 vs 2) are the pipe-config finding at the init, not a
    func.call argument mismatch in the entry."""
    text = (ROOT / "tests" / "pto" / "c2v_split_a3.pto").read_text()
    lines = text.splitlines()
    k = next(i for i, ln in enumerate(lines) if "pto.aiv_initialize_pipe {dir_mask = 1, slot_size = 1024, slot_num = 4}" in ln)
    lines[k] = lines[k].replace("slot_num = 4", "slot_num = 2")
    with pytest.raises(CompileError) as e:
        _load("\n".join(lines) + "\n")
    assert "the two ends of the C2V pipe disagree on slot_num" in e.value.what
    assert e.value.where.split(":")[1] in (str(k + 1), str(_line(text, "pto.aic_initialize_pipe")))


def test_a_negative_constant_partition_size_is_a_parse_error_at_the_partition():
    """A size that is an arith.constant below 1 (ptoas takes it; the run would report an
    out-of-bounds access, or nothing) is reported where the partition uses it."""
    text = _sub("%c8 = arith.constant 8 : index", "%c8 = arith.constant -8 : index", GOOD)
    with pytest.raises(ParseError) as e:
        read_pto(text, "bad.pto")
    assert "partition size %c8 = -8 is not a positive size" in e.value.what
    line = int(e.value.where.split(":")[1])
    assert "pto.partition_view" in text.splitlines()[line - 1] and "%c8" in text.splitlines()[line - 1]


def test_nosplit_true_on_a_split_pipe_is_a_parse_error_at_the_split():
    """nosplit = true makes the kernel the no-split one (whole tiles on AIV0): a tpop with
    split = 1 on it gave AIV1 empty tiles and wrong output rows silently."""
    text = GOOD.replace("pto.aiv_initialize_pipe {dir_mask = 1", "pto.aiv_initialize_pipe {dir_mask = 1, nosplit = true", 1)
    assert text != GOOD
    with pytest.raises(ParseError) as e:
        read_pto(text, "bad.pto")
    assert "with split = 1 on a pipe initialised with nosplit = true" in e.value.what
    line = int(e.value.where.split(":")[1])
    assert "split = 1" in text.splitlines()[line - 1]


def test_tstore_of_a_tile_larger_than_its_view_is_a_parse_error_at_the_view():
    """pto.tstore wrote the whole tile past a smaller partition view, silently;
    pto.tload already reported the same mismatch."""
    old = "%po = pto.partition_view %out_view, offsets = [%row, %c0], sizes = [%c8, %c16] : !pto.tensor_view<32x16xf32> -> !pto.partition_tensor_view<8x16xf32>"
    new = "%po = pto.partition_view %out_view, offsets = [%row, %c0], sizes = [%c8, %c8] : !pto.tensor_view<32x16xf32> -> !pto.partition_tensor_view<8x8xf32>"
    text = _sub(old, new).replace("outs(%po : !pto.partition_tensor_view<8x16xf32>)",
                                  "outs(%po : !pto.partition_tensor_view<8x8xf32>)")
    with pytest.raises(ParseError) as e:
        read_pto(text, "bad.pto")
    assert "type mismatch: the view is (8, 8), the tile (8, 16)" in e.value.what
    line = int(e.value.where.split(":")[1])
    assert "pto.tstore" in text.splitlines()[line - 1]


def test_cli_run_pto_honours_the_run_options(tmp_path, capsys):
    """run k.pto ignored --until-cycle, --timeout, --launches, --sync, --report and --variant:
    each now acts as it does for a Python kernel file."""
    f = str(ROOT / "tests" / "pto" / "c2v_split_a3.pto")
    ins = []
    for n, shape in (("a", (32, 16)), ("b", (16, 16)), ("bias", (32, 16))):
        np.save(tmp_path / f"{n}.npy", np.ones(shape, np.float32))
        ins.append(f"--input={n}={tmp_path / (n + '.npy')}")
    out = [f"--output=out={tmp_path / 'o.npy'}"]
    assert cli_main(["run", f, *ins, *out, "--until-cycle", "50"]) == 1
    assert "BudgetError" in capsys.readouterr().err
    assert cli_main(["run", f, *ins, *out, "--launches", "2"]) == 0
    assert "launch" in capsys.readouterr().out
    assert cli_main(["run", f, *ins, *out, "--report", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").stat().st_size > 0
    assert cli_main(["run", f, *ins, *out, "--variant", "big"]) == 1
    assert "a .pto file has one variant" in capsys.readouterr().err


def test_cli_output_paths_are_checked(tmp_path, capsys):
    """An empty output name was a FileNotFoundError naming a temporary file, and -o naming
    the input overwrote the kernel source with the output."""
    src = tmp_path / "k.pto"
    src.write_text(GOOD)
    assert cli_main(["compile", str(src), "--emit", "pto", "-o", str(src)]) == 1
    assert "is the input file" in capsys.readouterr().err and src.read_text() == GOOD
    assert cli_main(["compile", str(src), "--emit", "pto", "-o", ""]) == 1
    err = capsys.readouterr().err
    assert "no output file name in ''" in err and "FileNotFoundError" not in err


def test_cli_scalar_and_bf16_inputs(tmp_path, monkeypatch):
    """A scalar input is checked against its parameter (a 2.5 trip count ran 2 iterations; a
    [3] array and True were accepted), and a bf16 tensor is read and written as its bits
    (a bf16 .npy loads as |V2, which the kernel's bf16 parameter accepts)."""
    import ml_dtypes
    from ptopipe.driver.pto import make_inputs
    op, _w, _p = load_pto(str(ROOT / "tests" / "pto" / "c2v_split_a3.pto"))
    for name, v, msg in (("n", np.array(2.5), "float64 value 2.5 for the index parameter"),
                         ("n", np.array([3]), "a [1] array for a scalar parameter"),
                         ("n", np.array(True), "bool value True for the index parameter")):
        np.save(tmp_path / "n.npy", v)
        from ptopipe.ir.types import INDEX
        from ptopipe.driver.pto import _scalar
        with pytest.raises(PtoPipeError) as e:
            _scalar(name, INDEX, np.load(tmp_path / "n.npy"))
        assert msg in e.value.what, e.value.what
    assert _scalar("n", INDEX, np.array(3)) == 3
    # bf16 bits in, bf16 bits out: a bf16 kernel parameter takes a uint16 or |V2 array
    x = np.arange(6, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(2, 3)
    np.save(tmp_path / "x.npy", x)
    assert np.load(tmp_path / "x.npy").dtype.kind == "V"
    from ptopipe.ir.types import TensorType
    from ptopipe.driver import pto as driver_pto

    class _Param:
        name, type = "x", TensorType((2, 3), "bf16")
    monkeypatch.setattr(driver_pto, "_entry_params", lambda op: [_Param()])
    for f, arr in (("x.npy", x), ("bits.npy", x.view(np.uint16))):
        np.save(tmp_path / f, arr)
        got = make_inputs(op, [f"x={tmp_path / f}"], zero_fill=False)["x"]
        assert got.dtype == np.dtype(ml_dtypes.bfloat16)
        assert np.array_equal(got.view(np.uint16), x.view(np.uint16))


def test_a_blocked_tpop_read_by_a_tmov_is_reported_at_the_tpop(no_hang, tmp_path):
    """The tree runs a TPOP whose tile one tmov reads as one statement: the deadlock of the
    TPOP named the tmov's line.  Each op now runs at its own .pto line."""
    from ptopipe.errors import DeadlockError
    from ptopipe.driver.pto import make_inputs
    from ptopipe.runtime import run
    from ptopipe.codegen.pto_load import PTO_PASSES
    from ptopipe.passes import PassContext, PassManager
    path = ROOT / "tests" / "pto_broken" / "both_pop_first_a3.pto"
    text = path.read_text()
    with pytest.raises(CompileError) as found:          # VerifyPipes finds the hang statically
        load_pto(str(path))
    assert "the cores wait for each other forever" in found.value.what and "T=1" in found.value.what
    # the run's own report of it: the passes after VerifyPipes, then the run
    op = read_pto(text, str(path))
    plat = op.platform or "a2a3"
    op = PassManager([n for n in PTO_PASSES if n != "verify-pipes"]).run(op, PassContext(platform=plat))
    np.save(tmp_path / "T.npy", np.array(3))
    args = make_inputs(op, [f"T={tmp_path / 'T.npy'}"], zero_fill=True)
    with pytest.raises(DeadlockError) as e:
        run(op, args, platform=plat)
    lines = text.splitlines()
    tpop = next(i for i, ln in enumerate(lines, 1) if "pto.tpop_from_aiv" in ln)
    assert "pto.tmov" in lines[tpop + 1] or "pto.tmov" in lines[tpop]     # read by the next ops
    assert re.search(rf"AIC   TPOP   at \S*both_pop_first_a3.pto:{tpop}:", str(e.value)), str(e.value)


def test_a_utf8_byte_order_mark_is_skipped():
    """An editor's BOM made the file a ParseError at 1:1."""
    read_pto("\ufeff" + GOOD, "bom.pto")


def test_a_constant_step_of_zero_is_a_parse_error_at_the_step():
    """`scf.for ... step %c0` passed --static and failed only in the run."""
    text = _sub("scf.for %i = %c0 to %c2 step %c1 {", "scf.for %i = %c0 to %c2 step %c0 {")
    with pytest.raises(ParseError) as e:
        read_pto(text, "s.pto")
    assert "scf.for step %c0 = 0: the loop never ends" in e.value.what
    assert int(e.value.where.split(":")[1]) == _line(text, "step %c0 {")


def test_alloc_tile_with_valid_operands_and_their_type():
    """ptoas spells `alloc_tile valid_row = %r valid_col = %c : !pto.tile_buf<...>, index`
    (PTOAS test/basic/index_input_compat_i32.pto); the trailing type was a ParseError."""
    old = "%o = pto.alloc_tile : " + VEC8
    new = "%o = pto.alloc_tile valid_row = %c8 valid_col = %c16 : " + VEC8 + ", index"
    read_pto(_sub(old, new), "v.pto")


def test_flag_base_is_the_pipes_flag_id_and_both_ends_must_agree():
    """flag_base was read and ignored, so two ends with different flag_base passed."""
    from ptopipe.errors import CompileError
    text = GOOD.replace("pto.aic_initialize_pipe {dir_mask = 1", "pto.aic_initialize_pipe {dir_mask = 1, flag_base = 0", 1)
    text = text.replace("pto.aiv_initialize_pipe {dir_mask = 1", "pto.aiv_initialize_pipe {dir_mask = 1, flag_base = 4", 1)
    assert text.count("flag_base") == 2
    with pytest.raises(CompileError) as e:
        _load(text)
    assert "disagree on flag_id" in e.value.what


def test_a_tpop_whose_split_differs_from_its_push_and_tfree_is_the_error():
    """The TPOP alone says split 2 (its TPUSH and TFREE say 1): the error was the TFREE's
    "split differs from its TPOP", with the TPOP only under also."""
    from ptopipe.errors import CompileError
    pop = next(ln for ln in LINES if "pto.tpop_from_aic" in ln)
    text = _sub(pop, pop.replace("{split = 1}", "{split = 2}"))
    with pytest.raises(CompileError) as e:
        _load(text)
    assert "a ring delivers tiles in push order" in e.value.what, e.value.what
    assert int(e.value.where.split(":")[1]) == _line(text, "pto.tpop_from_aic")


def test_findings_name_the_loop_variable_as_written():
    """'iteration 1 (i=0)' was printed for a `%j` loop too."""
    from ptopipe.errors import CompileError
    pop = next(ln for ln in LINES if "pto.tpop_from_aic" in ln)
    text = _sub(pop, pop.replace("{split = 1}", "{split = 2}")).replace("%i ", "%j ").replace("%i,", "%j,")
    with pytest.raises(CompileError) as e:
        _load(text)
    assert "(j=0)" in e.value.what and "(i=" not in e.value.what, e.value.what


def test_a_branch_that_pops_without_tfree_is_named():
    """The then-branch pops without a TFREE; in a later iteration the else-branch's TFREE
    frees that slot (the oldest), and the else-branch's own TPOP ends held.  The error named
    that last TPOP; it now names the then-branch TPOP and why."""
    from ptopipe.errors import CompileError
    path = ROOT / "tests" / "pto_broken" / "tfree_missing_then_a5.pto"
    text = path.read_text()
    with pytest.raises(CompileError) as e:
        load_pto(str(path))
    lines = text.splitlines()
    first_if = next(i for i, ln in enumerate(lines, 1) if "scf.if" in ln)
    then_pop = next(i for i, ln in enumerate(lines, 1) if i > first_if and "tpop_from_aic" in ln)
    assert "has no TFREE on its branch" in e.value.what and "in the other branch of the same if" in e.value.what
    assert int(e.value.where.split(":")[-2]) == then_pop


def test_a_func_call_type_list_must_say_the_arguments_types():
    """A call's type list disagreeing with the entry's parameter passed --static."""
    old = "func.call @vector(%bias, %out, %gm_slot_buffer) : (!pto.ptr<f32>, !pto.ptr<f32>,"
    text = _sub(old, "func.call @vector(%bias, %out, %gm_slot_buffer) : (!pto.ptr<f32>, !pto.ptr<f16>,")
    with pytest.raises(ParseError) as e:
        read_pto(text, "call.pto")
    assert "argument %out is declared !pto.ptr<f32> but the call's type list says !pto.ptr<f16>" in e.value.what
    line = _line(text, "func.call @vector")
    assert e.value.where == f"call.pto:{line}:{text.splitlines()[line - 1].index('!pto.ptr<f16>') + 1}"
    assert "write !pto.ptr<f32> for %out" in e.value.fix


@pytest.mark.parametrize("cmd", [["run"], ["check", "--schedules", "1"]])
def test_a_func_call_type_list_disagreeing_with_its_argument_stops_the_run(tmp_path, capsys, cmd):
    """The run reads the call too: a type list naming another element type than the
    argument's declaration ran (only the static verifier noted it) - ptoas refuses it."""
    old = "func.call @vector(%bias, %out, %gm_slot_buffer) : (!pto.ptr<f32>, !pto.ptr<f32>,"
    text = _sub(old, "func.call @vector(%bias, %out, %gm_slot_buffer) : (!pto.ptr<f32>, !pto.ptr<i32>,")
    f = tmp_path / "call.pto"
    f.write_text(text)
    assert cli_main(cmd + [str(f)]) == 1
    err = capsys.readouterr().err
    line = _line(text, "func.call @vector")
    col = text.splitlines()[line - 1].index("!pto.ptr<i32>") + 1
    assert "error: ParseError: func.call: argument %out is declared !pto.ptr<f32> but the call's type list " \
           "says !pto.ptr<i32>" in err
    assert f"at {f}:{line}:{col}\n" in err and "fix: write !pto.ptr<f32> for %out in the type list" in err


@pytest.mark.parametrize("cmd", [["run"], ["check", "--schedules", "1"]])
def test_a_func_call_passing_another_type_than_the_callee_takes_stops_the_run(tmp_path, capsys, cmd):
    """The entry and its call say f32, @vector's parameter says i32 (ptoas: operand type
    mismatch): a ParseError at the call, before anything runs."""
    text = _sub("func.func private @vector(%bias: !pto.ptr<f32>, %out: !pto.ptr<f32>,",
                "func.func private @vector(%bias: !pto.ptr<f32>, %out: !pto.ptr<i32>,")
    f = tmp_path / "sig.pto"
    f.write_text(text)
    assert cli_main(cmd + [str(f)]) == 1
    err = capsys.readouterr().err
    line = _line(text, "func.call @vector")
    assert "error: ParseError: func.call @vector: argument 1 (%out) is passed as !pto.ptr<f32> but @vector's " \
           "parameter %out is !pto.ptr<i32>" in err
    assert f"at {f}:{line}:5\n" in err and "fix: pass @vector a !pto.ptr<i32> value" in err


def test_a_func_call_of_the_wrong_arity_is_a_parse_error_at_the_call():
    from ptopipe.codegen.pto_exec import read_program
    text = _sub("func.call @vector(%bias, %out, %gm_slot_buffer) : (!pto.ptr<f32>, !pto.ptr<f32>, !pto.ptr<f32>)",
                "func.call @vector(%bias, %out) : (!pto.ptr<f32>, !pto.ptr<f32>)")
    with pytest.raises(ParseError) as e:
        read_program(text, "n.pto")
    assert e.value.what == "func.call @vector passes 2 argument(s); @vector takes 3"
    assert e.value.where == f"n.pto:{_line(text, 'func.call @vector')}:5"


def test_check_static_takes_trip_counts_from_the_scalar_inputs(tmp_path, capsys):
    """A .pto whose loops run a scalar parameter's count: --static skipped its count checks
    and passed a vector loop starting at 1; it is now found for every n (n pushes, n - 1
    pops) with a failing value, and --input n=... gives the count, as `run` and `check`
    would use it.  A value the i32 cannot hold, or an empty .npy, is a clean error."""
    text = (ROOT / "tests" / "pto" / "i32_trip_count_a3.pto").read_text()
    vec = text.index("func.func private @vector")
    bad = text[:vec] + text[vec:].replace("scf.for %i = %c0 to %n_idx", "scf.for %i = %c1 to %n_idx", 1)
    f = tmp_path / "k.pto"
    f.write_text(bad)
    assert cli_main(["check", "--static", str(f)]) == 1
    out, err = capsys.readouterr()
    assert "FAIL k.pto on a2a3 (spec): the static checks found an error without running" in out
    assert "cube pushes 1 tile(s) but vector (lane AIV0) pops 0 (fails when n=1)" in err
    assert "for every value: cube pushes n tile(s) to the C2V ring, vector (lane AIV0) pops n - 1" in err
    np.save(tmp_path / "n.npy", np.int32(3))
    assert cli_main(["check", "--static", str(f), "--input", f"n={tmp_path / 'n.npy'}"]) == 1
    err = capsys.readouterr().err
    push = _line(bad, "pto.tpush_to_aiv")
    assert "cube pushes 3 tile(s) but vector (lane AIV0) pops 2" in err and f"k.pto:{push}:" in err
    f.write_text(text)
    assert cli_main(["check", "--static", str(f), "--input", f"n={tmp_path / 'n.npy'}"]) == 0
    assert "verified statically with n=3 (--input)" in capsys.readouterr().out
    np.save(tmp_path / "big.npy", np.int64(2 ** 40))
    (tmp_path / "empty.npy").write_bytes(b"")
    for name, text_ in (("big.npy", "does not fit the i32 parameter 'n' (-2147483648..2147483647)"),
                        ("empty.npy", "cannot load")):
        for cmd in (["check", "--schedules", "1"], ["check", "--static"], ["run"]):
            # refused before the static verifier would count 2**40 iterations
            assert cli_main(cmd + [str(f), "--input", f"n={tmp_path / name}"]) == 1
            err = capsys.readouterr().err
            assert "error: ConfigError: " in err and text_ in err and "Traceback" not in err, err


def test_an_index_cast_whose_type_list_disagrees_with_the_value_names_both_types():
    text = (ROOT / "tests" / "pto" / "i32_trip_count_a3.pto").read_text()
    bad = text.replace("arith.index_cast %n : i32 to index", "arith.index_cast %n : i64 to index", 1)
    with pytest.raises(ParseError) as e:
        read_pto(bad, "c.pto")
    assert e.value.what == "arith.index_cast: %n is i32 but the cast says i64"
    assert int(e.value.where.split(":")[1]) == _line(bad, "arith.index_cast %n : i64")
    assert "arith.index_cast %n : i32 to index" in e.value.fix


def test_an_entry_parameter_of_another_element_type_than_its_kernel_parameter():
    """The entry's %out is f32 (and its call says so) but @vector takes bf16: MLIR's call
    verifier rejects it; it passed --static and then asked for a bf16 input."""
    text = (ROOT / "tests" / "pto_broken" / "entry_param_dtype_a5.pto").read_text()
    with pytest.raises(ParseError) as e:
        read_pto(text, "m.pto")
    assert e.value.what == ("func.call @vector: argument %out is declared !pto.ptr<f32> but parameter "
                            "%out is !pto.ptr<bf16>")
    assert int(e.value.where.split(":")[1]) == _line(text, "func.call @vector")
    fixed = text.replace("%out: !pto.ptr<f32>, %n: i32) attributes {pto.entry}",
                         "%out: !pto.ptr<bf16>, %n: i32) attributes {pto.entry}").replace(
        "func.call @vector(%bias, %out, %n) : (!pto.ptr<f32>, !pto.ptr<f32>, i32)",
        "func.call @vector(%bias, %out, %n) : (!pto.ptr<f32>, !pto.ptr<bf16>, i32)")
    read_pto(fixed, "m.pto")


def test_static_findings_on_a_pto_name_its_ops_as_the_file_writes_them():
    """VerifyPipes words its findings for the DSL (`pl.add uses %t`); on a .pto they name the
    PTO-AS op (`pto.tadd`) and init."""
    lines = GOOD.splitlines(keepends=True)
    free = next(i for i, ln in enumerate(lines) if "pto.tfree_from_aic {split = 1}" in ln)
    add = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("pto.tadd ins(%t, %bv"))
    assert free > add
    lines.insert(add, lines.pop(free))                          # TFREE before the tadd reads %t
    text = "".join(lines)
    with pytest.raises(CompileError) as e:
        _load(text)
    assert e.value.what.startswith("pto.tadd uses %t (popped by the TPOP at line"), e.value.what
    assert "pl." not in str(e.value)


@pytest.mark.parametrize("old,new,key", [("slot_num = 4", "slot_num = -4", "slot_num"),
                                         ("slot_size = 1024", "slot_size = 0", "slot_size")])
def test_a_ring_of_no_slots_or_bytes_is_a_parse_error_at_its_init(old, new, key):
    """A pipe init's slot_num / slot_size below 1 is refused where it is written - not as a GM
    slot buffer of unknown size, or a ring of negative bytes, later."""
    from ptopipe.codegen.pto_exec import read_program
    text = _sub(old, new)
    with pytest.raises(ParseError) as e:
        read_program(text, "bad.pto")
    assert f"{key} = {new.split('= ')[1]} is not a positive number" in e.value.what, e.value.what
    assert e.value.where.startswith(f"bad.pto:{_line(text, new)}:")


# -- what ptoas refuses in an op's spelling is a ParseError at the piece, before anything runs --------------

SCF_ACC = (ROOT / "tests" / "pto_corpus" / "v_scf_for_accum_a3.pto").read_text()
SCF_ITER = (ROOT / "tests" / "pto_corpus" / "v_scf_for_iter_args_a5.pto").read_text()
PIPES = (ROOT / "tests" / "pto_corpus" / "x_c2v_split2_relu_a3.pto").read_text()
F32_16x64 = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=64, v_row=16, v_col=64, blayout=row_major, "
             "slayout=none_box, fractal=512, pad=0>")
I32_64 = "    %c64 = arith.constant 64 : index\n    %c64i = arith.constant 64 : i32\n"


def _refused_at(tmp_path, capsys, text, needle, token, what, cmd=("run",), k=0):
    """Run ``cmd`` on ``text``: one ParseError saying ``what``, at the line holding ``needle``
    (its ``k``-th) and the column of ``token`` on it."""
    f = tmp_path / "bad.pto"
    f.write_text(text)
    assert cli_main([*cmd, str(f)]) == 1
    err = capsys.readouterr().err
    ln = _line(text, needle, k)
    col = text.splitlines()[ln - 1].index(token) + 1
    assert f"ParseError: {what}" in err and f"at {f}:{ln}:{col}\n" in err, err
    assert "Traceback" not in err
    return err


def _edit(text, old, new):
    assert old in text, old
    return text.replace(old, new, 1)


@pytest.mark.parametrize("text, needle, token, what", [
    # a tile read as another valid shape than it was made with
    (_edit(SOFTMAX, f"pto.tmuls ins(%scores, %scale : {F32_16x64}",
           f"pto.tmuls ins(%scores, %scale : {F32_16x64.replace('v_row=16', 'v_row=8')}"),
     "pto.tmuls", "%scores", "%scores is used here as a tile with v_row=8, but v_row=16 is what its definition "
                             "(line 16) makes it"),
    # a scalar of another type than its constant
    (_edit(SOFTMAX, f"{F32_16x64}, f32) outs(%scaled", f"{F32_16x64}, f16) outs(%scaled"),
     "pto.tmuls", "%scale", "%scale is used here as f16, but f32 is what its definition (line 11) makes it"),
    # a view stored through as another shape
    (_edit(SOFTMAX, "outs(%p_pv : !pto.partition_tensor_view<16x64xf32>)",
           "outs(%p_pv : !pto.partition_tensor_view<16x32xf32>)"),
     "pto.tstore", "%p_pv", "%p_pv is used here as !pto.partition_tensor_view<16x32xf32>, but "
                            "!pto.partition_tensor_view<16x64xf32> is what"),
    # an index loop variable in i32 arithmetic
    (_edit(SCF_ACC, "%col = arith.muli %k, %c16 : index", "%col = arith.muli %k, %c16 : i32"),
     "arith.muli", "%k", "%k is used here as i32, but index is what its definition"),
    # an i32 constant where an index goes: a view's shape, a loop bound
    (_edit(_edit(SOFTMAX, "    %c64 = arith.constant 64 : index\n", I32_64),
           "%s_view = pto.make_tensor_view %s, shape = [%c16, %c64]", "%s_view = pto.make_tensor_view %s, shape = [%c16, %c64i]"),
     "%s_view =", "%c64i", "%c64i is used here as index, but i32 is what its definition"),
    (_edit(_edit(SCF_ACC, "    %c64 = arith.constant 64 : index\n", I32_64),
           "scf.for %k = %c0 to %c4 step", "scf.for %k = %c0 to %c64i step"),
     "scf.for %k", "%c64i", "%c64i is used here as index, but i32 is what its definition"),
    # an iter_arg's initial value of another type than the loop's result it carries
    (_edit(SCF_ITER, "-> (index, f32) {", "-> (index, f16) {"),
     "scf.for %i", "%one", "%one is used here as f16, but f32 is what its definition"),
    # an iter_arg read in the body as another type than the header gives it
    (_edit(SCF_ITER, "%next_scale = arith.mulf %scale, %two : f32", "%next_scale = arith.mulf %scale, %two : f16"),
     "arith.mulf", "%scale", "%scale is used here as f16, but f32 is what its definition"),
    # a loop variable the header types i32, bounded by index values
    (_edit(SCF_ITER, "iter_args(%row = %c0, %scale = %one) -> (index, f32) {",
           "iter_args(%row = %c0, %scale = %one) -> (index, f32) : i32 {"),
     "scf.for %i", "%c0 to", "%c0 is used here as i32, but index is what its definition"),
])
def test_a_value_used_as_another_type_than_its_definition_gives_it_is_refused_at_the_use(
        tmp_path, capsys, text, needle, token, what):
    """Every use of a value says the type it reads it with; one that is not the type its
    definition gives it (ptoas: "use of value expects different type than prior uses") is a
    ParseError at the use - the run would read the value as its definition made it, which is
    not what the op says."""
    _refused_at(tmp_path, capsys, text, needle, token, what)


@pytest.mark.parametrize("cmd", [("run",), ("check", "--static")])
def test_a_store_into_a_view_of_another_element_count_is_refused_at_it(tmp_path, capsys, cmd):
    """A 16x64 tile stored into a 16x32 partition view (types consistent): ptoas's TSTORE verifier
    wants the view's static element count to be the tile's valid one - a ParseError at the store,
    where the run stored the valid region with a warning."""
    text = _edit(SOFTMAX, "%p_pv = pto.partition_view %p_view, offsets = [%c0, %c0], sizes = [%c16, %c64] : "
                          "!pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x64xf32>",
                 "%p_pv = pto.partition_view %p_view, offsets = [%c0, %c0], sizes = [%c16, %c32] : "
                 "!pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x32xf32>")
    text = _edit(_edit(text, "outs(%p_pv : !pto.partition_tensor_view<16x64xf32>)",
                       "outs(%p_pv : !pto.partition_tensor_view<16x32xf32>)"),
                 "    %c64 = arith.constant 64 : index\n", "    %c64 = arith.constant 64 : index\n"
                 "    %c32 = arith.constant 32 : index\n")
    _refused_at(tmp_path, capsys, text, "pto.tstore ins(%probs", "pto.tstore",
                "pto.tstore of a tile of valid shape 16x64 (1024 elements) into a partition view of 16x32 (512): "
                "ptoas refuses it (\"expects dst static element count (512) to match src valid_shape static element "
                "count (1024)\")", cmd=cmd)


def test_a_use_type_slip_is_refused_by_check_and_check_static_alike(tmp_path, capsys):
    text = _edit(PIPES, "%half = pto.tpop_from_aic {split = 2} -> !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, "
                        "v_row=16, v_col=16", "%half = pto.tpop_from_aic {split = 2} -> !pto.tile_buf<loc=vec, dtype=f32, "
                                              "rows=16, cols=16, v_row=8, v_col=16")
    for cmd in (("check",), ("check", "--static")):
        _refused_at(tmp_path, capsys, text, "ins(%half", "%half", "%half is used here as a tile with v_row=16, but v_row=8",
                    cmd=cmd)


_HELPER = ("  func.func private @unused(%t: !pto.tile<16x64xf32>, %o: " + F32_16x64 + ", %a: f32) {\n"
           "    pto.tmuls ins(%t, %a : !pto.tile<16x64xf32>, f32) outs(%o : " + F32_16x64 + ")\n"
           "    return\n  }\n")
_UNNAMED = ("  func.func private @unused(%t: " + F32_16x64 + ", %o: " + F32_16x64 + ", %a: f32) {\n"
            "    pto.tmuls ins(%t, %a : " + F32_16x64[len("!pto.tile_buf"):] + ", f32) outs(%o : " + F32_16x64 + ")\n"
            "    return\n  }\n")
PIPE_TILE = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, "
             "slayout=none_box, fractal=512, pad=0>")


@pytest.mark.parametrize("text, needle, token, what", [
    # a scalar operand of a tile op given a word that is no MLIR type
    (_edit(SOFTMAX, f"{F32_16x64}, f32) outs(%scaled", f"{F32_16x64}, f33) outs(%scaled"),
     "pto.tmuls", "f33", "%scale's type here: 'f33' is not a type: ptoas refuses the file (\"expected non-function type\")"),
    (_edit(SOFTMAX, f"{F32_16x64}, f32) outs(%scaled", f"{F32_16x64}, foo) outs(%scaled"),
     "pto.tmuls", "foo", "%scale's type here: 'foo' is not a type"),
    # ptoas's !pto.tile (no address space), which no op takes: an alloc's result, a pop's, an operand
    (_edit(SOFTMAX, f"%scores = pto.alloc_tile : {F32_16x64}", "%scores = pto.alloc_tile : !pto.tile<16x64xf32>"),
     "%scores = pto.alloc_tile", "!pto.tile<", "pto.alloc_tile with a !pto.tile<16x64xf32>: ptoas's tile ops take "
                                               "and give !pto.tile_buf tiles"),
    (_edit(PIPES, f"%half = pto.tpop_from_aic {{split = 2}} -> {PIPE_TILE}",
           "%half = pto.tpop_from_aic {split = 2} -> !pto.tile<16x16xf32>"),
     "%half = pto.tpop_from_aic", "!pto.tile<", "pto.tpop_from_aic with a !pto.tile<16x16xf32>"),
    # ... in a function nothing calls (ptoas reads every function)
    (_edit(SOFTMAX, "  func.func @softmax_rows", _HELPER + "  func.func @softmax_rows"),
     "pto.tmuls ins(%t", "!pto.tile<", "pto.tmuls with a !pto.tile<16x64xf32>"),
    # an element type in pto-isa's short word for an unsigned integer, which MLIR does not have
    (_edit(SOFTMAX, f"%scores = pto.alloc_tile : {F32_16x64}",
           f"%scores = pto.alloc_tile : {F32_16x64.replace('dtype=f32', 'dtype=u16')}"),
     "%scores = pto.alloc_tile", "!pto.tile_buf", "element type 'u16' is not an MLIR type: ptoas refuses the file"),
    (_edit(SOFTMAX, "%p: !pto.ptr<f32>", "%p: !pto.ptr<u8>"),
     "func.func @softmax_rows", "!pto.ptr<u8>", "element type 'u8' is not an MLIR type"),
    # a tile type without its !pto. prefix
    (_edit(SOFTMAX, f"%scores = pto.alloc_tile : {F32_16x64}", f"%scores = pto.alloc_tile : {F32_16x64[5:]}"),
     "%scores = pto.alloc_tile", "tile_buf<", f"type '{F32_16x64[5:]}': a tile type is written !pto.tile_buf<...> "
                                              "(ptoas: \"expected non-function type\")"),
    # ... or with no name at all, in an operand list of a function nothing calls
    (_edit(SOFTMAX, "  func.func @softmax_rows", _UNNAMED + "  func.func @softmax_rows"),
     "pto.tmuls ins(%t", "<loc=", f"type '{F32_16x64[len('!pto.tile_buf'):]}': a tile type is written "
                                  "!pto.tile_buf<...>"),
])
def test_a_type_ptoas_cannot_read_is_refused_at_it(tmp_path, capsys, text, needle, token, what):
    """A type ptoas's parser or verifier refuses - a bare word that is no MLIR type, the
    address-space-less ``!pto.tile<...>`` as a tile op's operand or result, a tile type
    without ``!pto.`` - is a ParseError at the type, in every function of the file, with how
    to write it; ``PTOAS=...``: ptoas refuses the file too."""
    err = _refused_at(tmp_path, capsys, text, needle, token, what)
    assert "fix: write " in err, err
    ptoas = os.environ.get("PTOAS")
    if ptoas:
        r = subprocess.run([ptoas, str(tmp_path / "bad.pto"), "-o", str(tmp_path / "bad.cpp")],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode != 0 and "error:" in r.stderr + r.stdout


def test_two_spellings_of_one_tile_type_are_one_type():
    """``!pto.tile_buf<vec, 16x64xf32>`` is the long form's type with its defaults (ptoas takes
    the one for the other): no refusal."""
    from ptopipe.codegen.pto_exec import read_program
    text = _edit(SOFTMAX, f"pto.tmuls ins(%scores, %scale : {F32_16x64}", "pto.tmuls ins(%scores, %scale : "
                                                                          "!pto.tile_buf<vec, 16x64xf32>")
    read_program(text, "ok.pto")


@pytest.mark.parametrize("text, needle, token, what", [
    (_edit(SOFTMAX, "outs(%p_pv : !pto.partition_tensor_view<16x64xf32>)\n",
           "outs(%p_pv : !pto.partition_tensor_view<16x64xf32>) %c0\n"),
     "pto.tstore", " %c0", "pto.tstore: unexpected '%c0' after the op's outs(...)"),
    (_edit(SCF_ACC, "%col = arith.muli %k, %c16 : index\n", "%col = arith.muli %k, %c16 : index foo\n"),
     "arith.muli", "foo", "arith.muli: unexpected 'foo' after the type index: an operation ends with its types"),
    (_edit(PIPES, "pto.tfree_from_aic {split = 2}\n", "pto.tfree_from_aic {split = 2} %half\n"),
     "pto.tfree_from_aic", " %half", "pto.tfree_from_aic: unexpected '%half' after the op's {...}"),
    (_edit(PIPES, "pto.tfree_from_aic {split = 2}\n", "pto.tfree_from_aic {split = 2}\n      %half\n"),
     "      %half", "%half", "pto.tfree_from_aic: unexpected '%half' after the op's {...}"),
])
def test_a_token_after_the_end_of_an_op_is_refused_at_the_token(tmp_path, capsys, text, needle, token, what):
    """An op ends with its types, or its last (...) / {...} group: a token after it (on its
    line or alone on the next) is no part of it (ptoas reads it as the start of the next op and
    refuses it) - a ParseError at the token, not an op run without it."""
    _refused_at(tmp_path, capsys, text, needle, token.strip(), what)


@pytest.mark.parametrize("header, at, what", [
    ("scf.for %k = %c0 too %c4 step %c1 {", "too", "expected 'to' after the lower bound %c0, got 'too'"),
    ("scf.for %k = %c0 %c4 step %c1 {", "%c4", "expected 'to' after the lower bound %c0, got '%c4'"),
    ("scf.for %k = %c0 to %c4 stp %c1 {", "stp", "expected 'step' after the upper bound %c4, got 'stp'"),
    ("scf.for %k = %c0 to %c4 {", "{", "expected 'step' after the upper bound %c4, got '{' (the body)"),
    ("scf.for %k = %c0 to %c4, %c1 {", ",", "expected 'step' after the upper bound %c4, got ','"),
    ("scf.for %k %c0 to %c4 step %c1 {", "%c0", "expected '=' after the loop variable %k, got '%c0'"),
    ("scf.for %k := %c0 to %c4 step %c1 {", ":", "expected '=' after the loop variable %k, got ':'"),
    ("scf.for k = %c0 to %c4 step %c1 {", "k =", "expected the loop variable (an SSA name such as %i) after "
                                                "scf.for, got 'k'"),
    ("scf.for %k = %c0 to step %c1 {", "step", "expected the upper bound (an SSA value) after 'to', got 'step'"),
    ("scf.for %k = %c0 to %c4 step {", "{", "expected the step (an SSA value) after 'step', got '{' (the body)"),
    ("scf.for %k = %c0 to %c4 step %c1 %c1 {", "%c1 {", "expected '{' opening the body after the step %c1, "
                                                         "got '%c1'"),
])
def test_a_slip_in_a_loop_header_is_refused_at_the_slip(tmp_path, capsys, header, at, what):
    """``scf.for %i = %lb to %ub step %step {`` is read piece by piece: a missing, misspelled or
    extra piece is a ParseError at it (at the body's ``{`` when it is missing at the end),
    saying what was expected where - by run and check --static alike."""
    text = _edit(SCF_ACC, "scf.for %k = %c0 to %c4 step %c1 {", header)
    for cmd in (("run",), ("check", "--static")):
        _refused_at(tmp_path, capsys, text, header, at, f"scf.for: {what}", cmd=cmd)


@pytest.mark.parametrize("text, needle, token, what", [
    # a keyword of the op's syntax (ptoas: "expected ':'")
    (_edit(SOFTMAX, f"%scores = pto.alloc_tile : {F32_16x64}",
           f"%c16v = arith.constant 16 : index\n    %scores = pto.alloc_tile vaild_row = %c16v : "
           f"{F32_16x64.replace('v_row=16', 'v_row=?')}"),
     "vaild_row", "vaild_row", "pto.alloc_tile has no attribute 'vaild_row': did you mean 'valid_row'?"),
    # a key of the op's attribute dictionary (ptoas keeps it and ignores it)
    (_edit(SOFTMAX, "outs(%p_pv : !pto.partition_tensor_view<16x64xf32>)\n",
           "outs(%p_pv : !pto.partition_tensor_view<16x64xf32>) {atomictype = #pto<atomic_type atomic_add>}\n"),
     "pto.tstore", "atomictype", "pto.tstore has no attribute 'atomictype': did you mean 'atomicType'?"),
])
def test_a_misspelled_attribute_of_any_op_is_refused_at_the_key(tmp_path, capsys, text, needle, token, what):
    """A key no op takes but close to one an op takes is that key misspelled (the op would run
    without the attribute meant): a ParseError at the key, naming the key it resembles."""
    _refused_at(tmp_path, capsys, text, needle, token, what)


_TEXP_OUTS = f"outs(%expd : {F32_16x64})\n"


@pytest.mark.parametrize("key", ["names", "round", "stride", "values", "modes", "pipes", "configs", "layouts",
                                 "shapes", "splits", "valid_rows", "is_binary", "operand_segment_sizes"])
def test_a_discardable_attribute_close_to_another_ops_key_is_read(key):
    """A key an op does not take, in its attribute dictionary, is a discardable attribute ptoas
    keeps (every one of these it accepts on pto.texp, which takes no key): it is a misspelling
    only when close to a key of that op's own, so the file is read."""
    from ptopipe.codegen.pto_exec import read_program
    read_program(_edit(SOFTMAX, _TEXP_OUTS, _TEXP_OUTS[:-1] + f" {{{key} = 1 : i32}}\n"), "ok.pto")


_BLOCK_MUL = "      %col = arith.muli %k, %c16 : index\n"
_F32_16 = F32_16x64.replace("cols=64", "cols=16").replace("v_col=64", "v_col=16")


def _block_sum_runs(tmp_path, text):
    """``text`` (SCF_ACC edited) runs, and its out is the sum of x's four 16x16 blocks."""
    import ptopipe
    x = np.arange(16 * 64, dtype=np.float32).reshape(16, 64) / 64
    got = ptopipe.run_pto(text=text, inputs=dict(x=x, out=np.zeros((16, 16), np.float32)))
    np.testing.assert_allclose(got.outputs["out"], x.reshape(16, 4, 16).sum(axis=1), rtol=1e-6)


@pytest.mark.parametrize("attrs", ['{names = "k1"}', "{stride = 1 : i64}", "{round = 1 : i32}"])
def test_a_discardable_attribute_of_an_arith_op_runs(tmp_path, attrs):
    """``arith.muli %k, %c16 {names = "k1"} : index``: a key arith.muli does not take and that
    resembles none it takes (it takes overflowFlags) is kept and ignored, as ptoas does."""
    _block_sum_runs(tmp_path, _edit(SCF_ACC, _BLOCK_MUL, _BLOCK_MUL.replace(" : index", f" {attrs} : index")))


_IF_COL = ("      %isz = arith.cmpi eq, %k, %c0 : index\n"
           "      %col = scf.if %isz -> index {\n        scf.yield %c0 : index\n"
           "      } else {\n        %m = arith.muli %k, %c16 : index\n        scf.yield %m : index\n      }\n")


def test_an_scf_if_with_an_unparenthesised_result_type_and_an_else_runs(tmp_path):
    """``scf.if %c -> index { ... } else { ... }``: the result type is ``index`` (the ``else``
    between the regions is no part of it), and the yields of that type are read."""
    _block_sum_runs(tmp_path, _edit(SCF_ACC, _BLOCK_MUL, _IF_COL))


def test_a_yield_of_another_type_than_an_scf_ifs_unparenthesised_result_is_refused_at_the_yield(tmp_path, capsys):
    text = _edit(SCF_ACC, _BLOCK_MUL, _IF_COL.replace("scf.yield %m : index", "scf.yield %zero : f32"))
    _refused_at(tmp_path, capsys, text, "scf.yield %zero", "scf.yield",
                f"scf.yield gives f32 as value 0, but result 0 of the scf.if at {_line(text, '%col = scf.if')}:")


_ADD = (f"      pto.tadd ins(%acc, %blk : {_F32_16}, {_F32_16}) outs(%acc : {_F32_16})\n")
_SHORT = "!pto.tile_buf<vec, 16x16xf32>"
_HELPER = (f"  func.func private @accumulate(%a: {_SHORT}, %b: {_SHORT}) attributes "
           "{pto.kernel_kind = #pto.kernel_kind<vector>} {\n"
           f"    pto.tadd ins(%a, %b : {_SHORT}, {_SHORT}) outs(%a : {_SHORT})\n    return\n  }}\n")


def test_a_call_passing_a_tiles_long_form_to_a_short_form_parameter_runs(tmp_path):
    """The long and short forms of one tile type are one type (ptoas: the same type): a call
    that lists the long form for a parameter declared in the short form runs."""
    text = _edit(SCF_ACC, _ADD, f"      func.call @accumulate(%acc, %blk) : ({_F32_16}, {_F32_16}) -> ()\n")
    _block_sum_runs(tmp_path, _edit(text, "  func.func @block_sum", _HELPER + "  func.func @block_sum"))


def test_a_call_passing_a_tile_of_another_shape_than_the_parameter_is_refused(tmp_path, capsys):
    wide = "!pto.tile_buf<vec, 16x32xf32>"
    helper = _HELPER.replace("%b: " + _SHORT, "%b: " + wide).replace(f"{_SHORT}, {_SHORT})", f"{_SHORT}, {wide})")
    text = _edit(SCF_ACC, _ADD, f"      func.call @accumulate(%acc, %blk) : ({_F32_16}, {_F32_16}) -> ()\n")
    text = _edit(text, "  func.func @block_sum", helper + "  func.func @block_sum")
    _refused_at(tmp_path, capsys, text, "func.call @accumulate", "func.call",
                "func.call @accumulate: argument 1 (%blk) is passed as")


_BLK_ALLOC = f"    %blk = pto.alloc_tile : {_F32_16}\n"


def test_a_tile_types_quoted_keywords_read_as_the_bare_ones(tmp_path):
    """``loc="vec"``, ``blayout="row_major"``: ptoas reads a quoted keyword as the bare one."""
    quoted = _F32_16.replace("loc=vec", 'loc="vec"').replace("blayout=row_major", 'blayout="row_major"')
    _block_sum_runs(tmp_path, _edit(SCF_ACC, _BLK_ALLOC, f"    %blk = pto.alloc_tile : {quoted}\n"))


_MINUS1 = _F32_16.replace("v_row=16, v_col=16", "v_row=-1, v_col=-1")
_QROW = _F32_16.replace("v_row=16", "v_row=?")


def _blk_as(alloc, use):
    """SCF_ACC with %blk made by ``alloc`` and its uses typed ``use``."""
    text = _edit(SCF_ACC, _BLK_ALLOC, alloc)
    text = _edit(text, f"outs(%blk : {_F32_16})", f"outs(%blk : {use})")
    return _edit(text, f"ins(%acc, %blk : {_F32_16}, {_F32_16})", f"ins(%acc, %blk : {_F32_16}, {use})")


@pytest.mark.parametrize("alloc, use", [
    # v_row=-1 is ptoas's other spelling of v_row=?: a dynamic valid shape, given by the operands
    (f"    %blk = pto.alloc_tile valid_row = %c16 valid_col = %c16 : {_MINUS1}\n", _MINUS1),
    # a definition with v_row=? and a use with v_row=-1 are one type
    (f"    %blk = pto.alloc_tile valid_row = %c16 : {_QROW}\n", _QROW.replace("v_row=?", "v_row=-1")),
])
def test_a_valid_dim_of_minus_one_is_dynamic(tmp_path, alloc, use):
    _block_sum_runs(tmp_path, _blk_as(alloc, use))


def test_a_tile_of_v_row_minus_one_without_valid_row_is_refused_as_one_of_v_row_unknown(tmp_path, capsys):
    """(ptoas: valid_row operand is required because result type v_row is ?)"""
    text = _blk_as(f"    %blk = pto.alloc_tile valid_col = %c16 : {_MINUS1}\n", _MINUS1)
    _refused_at(tmp_path, capsys, text, "%blk = pto.alloc_tile", "pto.alloc_tile",
                "pto.alloc_tile of a type with v_row=? needs valid_row = %n")


def test_an_attribute_like_no_known_one_is_left_to_the_tool_that_wrote_it():
    """ptoas keeps an unknown attribute of an op's dictionary: one that resembles no key an op
    takes is no misspelling, and the file is read."""
    from ptopipe.codegen.pto_exec import read_program
    read_program(_edit(SOFTMAX, "outs(%p_pv : !pto.partition_tensor_view<16x64xf32>)\n",
                       "outs(%p_pv : !pto.partition_tensor_view<16x64xf32>) {my_tool_hint = 3}\n"), "ok.pto")


_DYN = F32_16x64.replace("v_row=16", "v_row=?")
_RET = "    pto.tstore ins(%acc : "


@pytest.mark.parametrize("text, needle, token, what", [
    # a tile's valid-shape operands exactly where its type's v_row / v_col is '?'
    (_edit(SOFTMAX, f"%scores = pto.alloc_tile : {F32_16x64}", f"%scores = pto.alloc_tile valid_row = %c16 : {F32_16x64}"),
     "%scores = pto.alloc_tile", "pto.alloc_tile", "pto.alloc_tile gives valid_row, but its type's v_row is 16"),
    (_edit(SOFTMAX, f"%scores = pto.alloc_tile : {F32_16x64}", f"%scores = pto.alloc_tile : {_DYN}"),
     "%scores = pto.alloc_tile", "pto.alloc_tile", "pto.alloc_tile of a type with v_row=? needs valid_row = %n"),
    # a tile type's long form names every key, in order
    (_edit(SOFTMAX, f"%scores = pto.alloc_tile : {F32_16x64}", "%scores = pto.alloc_tile : !pto.tile_buf<loc=vec, "
                                                             "dtype=f32, rows=16, cols=64>"),
     "%scores = pto.alloc_tile", "!pto.tile_buf", "!pto.tile_buf: its long form ends before 'v_row'"),
    (_edit(SOFTMAX, f"%scores = pto.alloc_tile : {F32_16x64}",
           f"%scores = pto.alloc_tile : {F32_16x64.replace('blayout=row_major, slayout=none_box', 'slayout=none_box, blayout=row_major')}"),
     "%scores = pto.alloc_tile", "slayout", "!pto.tile_buf: expected the key 'blayout', got 'slayout' out of order"),
    # a constant's literal is of its type
    (_edit(SOFTMAX, "%c16 = arith.constant 16 : index", "%c16 = arith.constant 16.0 : index"),
     "%c16 = arith.constant", "arith", "arith.constant: 16.0 is not an integer literal, which an index constant takes"),
    (_edit(SOFTMAX, "%scale = arith.constant 1.250000e-01 : f32", "%scale = arith.constant 1 : f32"),
     "%scale = arith.constant", "arith", "arith.constant: 1 is an integer literal; an f32 constant takes one with a '.'"),
    (_edit(SOFTMAX, "%c16 = arith.constant 16 : index", "%c16 = arith.constant 16 : index\n    %u = arith.constant 2 : ui32"),
     "%u = arith.constant", "arith", "arith.constant of type ui32: an arith.constant integer is signless"),
    # a partition's constant sizes are its result type's shape
    (_edit(SOFTMAX, "%s_pv = pto.partition_view %s_view, offsets = [%c0, %c0], sizes = [%c16, %c64]",
           "%s_pv = pto.partition_view %s_view, offsets = [%c0, %c0], sizes = [%c16, %c16]"),
     "%s_pv = pto.partition_view", "pto.partition_view", "pto.partition_view: size 1 is %c16 = 16, but its result "
                                                         "type's dim 1 is 64"),
    # a partition's constant offsets are not negative and, with its sizes, stay within a
    # static dim of its source view (a '?' dim is not checked, by ptoas either)
    (_edit(_edit(SOFTMAX, "%c16 = arith.constant 16 : index", "%c16 = arith.constant 16 : index\n    %cm16 = arith.constant -16 : index"),
           "%s_pv = pto.partition_view %s_view, offsets = [%c0, %c0]", "%s_pv = pto.partition_view %s_view, offsets = [%cm16, %c0]"),
     "%s_pv = pto.partition_view", "pto.partition_view", "pto.partition_view: offset 0 is %cm16 = -16, a negative offset "
                                                         "(ptoas: offset at dim 0 must be non-negative)"),
    (_edit(GOOD, "%pb = pto.partition_view %b_view, offsets = [%c0, %c0]", "%pb = pto.partition_view %b_view, offsets = [%c16, %c0]"),
     "%pb = pto.partition_view", "pto.partition_view", "pto.partition_view: offset 0 + size 0 = 16 + 16 = 32 leaves the "
                                                       "source view's dim 0 of 16 (ptoas: offset+size at dim 0 exceeds "
                                                       "static source dim)"),
    # a pipe init's dir_mask names a direction
    (_edit(PIPES, "pto.aic_initialize_pipe {dir_mask = 1", "pto.aic_initialize_pipe {dir_mask = 4"),
     "pto.aic_initialize_pipe", "4", "pto.aic_initialize_pipe: dir_mask = 4 names no direction (it takes one of "
                                     "1, 2, 3, 5, 6, 7)"),
    # a return gives the function's results, at the end of its body
    (_edit(SCF_ACC, "    return\n", "    return %c0 : index\n"), "return %c0", "return",
     "return gives 1 value(s), but @block_sum returns 0"),
    (_edit(SCF_ACC, "    }\n    %out_pv", "    %out_pv"), "    return", "return",
     "return inside the scf.for at line 18: a return ends a func.func's body"),
    # a region of an op with results yields them
    (_edit(_edit(SCF_ACC, "    scf.for %k = %c0 to %c4 step %c1 {", "    %last = scf.for %k = %c0 to %c4 step %c1 "
                                                                    "iter_args(%prev = %c0) -> (index) {"),
           "      pto.tadd ins(%acc, %blk", "      pto.tadd ins(%acc, %blk"),
     "%last = scf.for", "scf.for", "scf.for: a region of it ends without the scf.yield of its 1 result(s)"),
    # a pop without its split (ptoas: "expected '{'"), not a whole-tile pop at odds with its push
    (_edit(PIPES, "%half = pto.tpop_from_aic {split = 2} ->", "%half = pto.tpop_from_aic ->"),
     "%half = pto.tpop_from_aic", "->", "pto.tpop_from_aic without its split: ptoas refuses it (\"expected '{'\""),
])
def test_what_ptoas_verifies_in_an_ops_own_pieces_is_refused_at_the_op(tmp_path, capsys, text, needle, token, what):
    """ptoas's parser and verifier refuse these in one op's pieces; the run would go on with a
    meaning the file does not have (the type's valid shape for the operand's, a default for a
    missing tile key, the constant's integer part, a view of another shape, a loop that returns
    from the function): a ParseError at the op, before anything runs, by run and check --static."""
    for cmd in (("run",), ("check", "--static")):
        _refused_at(tmp_path, capsys, text, needle, token, what, cmd=cmd)


@pytest.mark.parametrize("text, needle, token, what", [
    # a tile read as another pad or fractal (ptoas's type holds them: pad=0 is Null, not "unsaid")
    (_edit(SOFTMAX, f"pto.tmuls ins(%scores, %scale : {F32_16x64}", f"pto.tmuls ins(%scores, %scale : "
           f"{F32_16x64.replace('pad=0', 'pad=1')}"), "pto.tmuls", "%scores", "%scores is used here as a tile with "
     "pad=1, but pad=0 is what its definition (line 16) makes it"),
    (_edit(SOFTMAX, f"pto.tmuls ins(%scores, %scale : {F32_16x64}", f"pto.tmuls ins(%scores, %scale : "
           f"{F32_16x64.replace('fractal=512', 'fractal=1024')}"), "pto.tmuls", "%scores", "%scores is used here as "
     "a tile with fractal=1024, but fractal=512 is what its definition (line 16) makes it"),
    # ... as a type whose static shape pto-isa's Tile refuses (which parses to no tile: still another type)
    (_edit(SOFTMAX, f"pto.tmuls ins(%scores, %scale : {F32_16x64}", f"pto.tmuls ins(%scores, %scale : "
           f"{F32_16x64.replace('cols=64, v_row=16, v_col=64', 'cols=4, v_row=16, v_col=4')}"), "pto.tmuls", "%scores",
     "%scores is used here as !pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=4,"),
    # a popped tile (its declare_tile's `-> T`) read as another shape
    (_edit((ROOT / "tests" / "pto" / "lowlevel_a3.pto").read_text(),
           "pto.tpop(%t, %pipe : !pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=16, v_row=8, v_col=16",
           "pto.tpop(%t, %pipe : !pto.tile_buf<loc=vec, dtype=f32, rows=4, cols=16, v_row=4, v_col=16"),
     "pto.tpop(%t", "%t", "%t is used here as a tile with rows=4, v_row=4, but rows=8, v_row=8 is what its "
                          "definition (line 56) makes it"),
    # a group with an attribute dictionary after its values (tcvt's rmode)
    (_edit((ROOT / "tests" / "pto_corpus" / "v_cvt_f32_f16_a5.pto").read_text(),
           "pto.tcvt ins(%xf {rmode = #pto<round_mode RINT>} : !pto.tile_buf<loc=vec, dtype=f32",
           "pto.tcvt ins(%xf {rmode = #pto<round_mode RINT>} : !pto.tile_buf<loc=vec, dtype=f16"),
     "pto.tcvt ins(%xf", "%xf", "%xf is used here as a tile with dtype=f16, but dtype=f32 is what its definition"),
])
def test_the_runs_reader_refuses_a_use_of_another_type_than_its_definition(text, needle, token, what):
    """The run's reader checks each use's type against its definition's, as ptoas does ("use of
    value expects different type than prior uses"), on its own - a file the static reader cannot
    express (a dynamic shape, a slot-id pop) is checked by it alone: a pad or fractal written
    differently, a use of a declare_tile's result, a group with an attribute dictionary."""
    from ptopipe.codegen.pto_exec import read_program
    with pytest.raises(ParseError) as e:
        read_program(text, "bad.pto")
    ln = _line(text, needle)
    col = text.splitlines()[ln - 1].index(token, text.splitlines()[ln - 1].index(needle.split()[0])) + 1
    assert what in e.value.what and e.value.where == f"bad.pto:{ln}:{col}", (e.value.what, e.value.where)


def test_a_tpop_that_waits_forever_is_named_before_a_tpush_never_popped():
    """The Vector side of a DIR_BOTH loop runs one trip fewer than the Cube side: the Cube hangs
    in the V2C TPOP of its last trip, so that is the error's line; the C2V TPUSH of that trip,
    never popped and never reached, is only mentioned after it."""
    path = ROOT / "tests" / "pto_broken" / "both_loop_short_consumer_a3.pto"
    text = path.read_text()
    with pytest.raises(CompileError) as e:
        load_pto(str(path))
    assert int(e.value.where.split(":")[1]) == _line(text, "pto.tpop_from_aiv"), str(e.value)
    assert "waits forever" in e.value.what


_ONE_OP = """module {
  func.func @k(%x: !pto.ptr<DT>, %y: !pto.ptr<DT>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %xv = pto.make_tensor_view %x, shape = [%c4, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xDT>
    %yv = pto.make_tensor_view %y, shape = [%c4, %c64], strides = [%c64, %c1] : !pto.tensor_view<?x?xDT>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c4, %c64] : !pto.tensor_view<?x?xDT> -> !pto.partition_tensor_view<4x64xDT>
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c4, %c64] : !pto.tensor_view<?x?xDT> -> !pto.partition_tensor_view<4x64xDT>
    %a = pto.alloc_tile : TB
    %d = pto.alloc_tile : TB
    pto.tload ins(%xp : !pto.partition_tensor_view<4x64xDT>) outs(%a : TB)
    pto.OP ins(%a, %a : TB, TB) outs(%d : TB)
    pto.tstore ins(%d : TB) outs(%yp : !pto.partition_tensor_view<4x64xDT>)
    return
  }
}
"""


@pytest.mark.parametrize("op,dt,platform,refused", [
    ("tand", "i32", "a2a3", "expects A2/A3 tand element type to be i8/i16"),
    ("tand", "i16", "a2a3", None),
    ("tand", "i32", "a5", None),
    ("tsub", "bf16", "a5", "expects A5 tsub element type to be i32/i16/i8/f16/f32"),
])
def test_an_element_type_ptoas_refuses_where_pto_isa_takes_it_is_a_parse_error(tmp_path, capsys, op, dt, platform,
                                                                                refused):
    """ptoas's verifier takes fewer element types than pto-isa's instruction for some ops (i32
    TAND on A2/A3, bf16 TSUB on A5): ptoas refuses the file, and so does the run, at the op."""
    tb = (f"!pto.tile_buf<loc=vec, dtype={dt}, rows=4, cols=64, v_row=4, v_col=64, blayout=row_major, "
          "slayout=none_box, fractal=512, pad=0>")
    text = _ONE_OP.replace("TB", tb).replace("DT", dt).replace("OP", op)
    if refused is None:
        f = tmp_path / "ok.pto"
        f.write_text(text)
        assert cli_main(["run", str(f), "--platform", platform]) == 0, capsys.readouterr().err
        return
    err = _refused_at(tmp_path, capsys, text, f"pto.{op} ins", f"pto.{op}",
                      f"pto.{op} of {'bfloat16' if dt == 'bf16' else 'int32'} tiles on {platform.upper()}: ptoas "
                      f"refuses it ('pto.{op}' op {refused})", cmd=("run", "--platform", platform))
    assert "fix: use one of the element types ptoas takes here" in err


_COLUMN = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=1, v_row=16, v_col=1, blayout=col_major, "
           "slayout=none_box, fractal=512, pad=0>")
_ROWS_V1 = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=8, v_row=16, v_col=1, blayout=row_major, "
            "slayout=none_box, fractal=512, pad=0>")
_DN16 = _COLUMN.replace("cols=1, v_row=16, v_col=1", "cols=16, v_row=16, v_col=16")
_ND16 = _DN16.replace("blayout=col_major", "blayout=row_major")
_ROW = "!pto.tile_buf<loc=vec, dtype=f32, rows=1, cols=16, v_row=1, v_col=16, blayout=row_major, slayout=none_box, fractal=512, pad=0>"
_COLUMN_OP = """module {
  func.func @k() attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %s = arith.constant 2.0 : f32
    %a = pto.alloc_tile : T
    %b = pto.alloc_tile : T
    %d = pto.alloc_tile : T
    %x = pto.alloc_tile : ND16
    %r = pto.alloc_tile : ROW
    %c = pto.alloc_tile : COLUMN
    OP
    return
  }
}
"""


@pytest.mark.parametrize("op,tile,platform,refused", [
    ("pto.trecip ins(%a : T) outs(%d : T)", _COLUMN, "a5", "src Vec tile '%a' float32 16x1 @AIV0.UB[0x0] is col_major: "
     "ptoas refuses it ('pto.trecip' op expects src to use the row_major blayout)"),
    ("pto.tmax ins(%a, %b : T, T) outs(%d : T)", _COLUMN, "a2a3", "src0 Vec tile '%a' float32 16x1 @AIV0.UB[0x0] is "
     "col_major: ptoas refuses it ('pto.tmax' op expects src0, src1, and dst to use row-major layout)"),
    ("pto.texpands ins(%s : f32) outs(%d : T)", _COLUMN, "a2a3", "dst Vec tile '%d' float32 16x1 @AIV0.UB[0x0] is "
     "col_major: ptoas refuses it ('pto.texpands' op expects vec dst to use row-major layout on A2/A3)"),
    ("pto.texpands ins(%s : f32) outs(%d : T)", _COLUMN, "a5", None),
    ("pto.tmuls ins(%a, %s : T, f32) outs(%d : T)", _COLUMN, "a2a3", None),
    ("pto.trecip ins(%a : T) outs(%d : T)", _ROWS_V1, "a5", None),
    ("pto.tcolexpandmul ins(%a, %r : T, ROW) outs(%x : ND16)", _DN16, "a2a3", "src0 Vec tile '%a' float32 16x16 DN "
     "@AIV0.UB[0x0] is col_major: ptoas refuses it ('pto.tcolexpandmul' op expects src0 to use row-major layout)"),
    ("pto.trowexpandmul ins(%x, %c : ND16, COLUMN) outs(%d : T)", _ND16, "a5", None),
])
def test_a_vec_tile_ptoas_takes_row_major_only_is_refused_at_the_op(tmp_path, capsys, op, tile, platform, refused):
    """ptoas's verifier takes only row-major Vec tiles for the element-wise ops and the broadcasts'
    full tiles (pto-isa's NPU code static_asserts most of them too): a DN tile there is a ParseError
    at the op; the tile-scalar ops and A5's TEXPANDS take a DN column, the row broadcasts take it as
    their per-row operand, and a per-row value in a row-major [R, 8] tile runs."""
    text = (_COLUMN_OP.replace("OP", op).replace("ND16", _ND16).replace("ROW", _ROW).replace("COLUMN", _COLUMN)
            .replace("T", tile))
    if refused is None:
        f = tmp_path / "ok.pto"
        f.write_text(text)
        assert cli_main(["run", str(f), "--platform", platform]) == 0, capsys.readouterr().err
        return
    name = op.split()[0]
    err = _refused_at(tmp_path, capsys, text, name, name, f"{name}'s {refused}", cmd=("run", "--platform", platform))
    assert "fix: declare the tile blayout=row_major" in err


_QUANT = """module attributes {pto.target_arch = "a5"} {
  func.func @k(%x: !pto.ptr<f32>, %q: !pto.ptr<DT>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %xv = pto.make_tensor_view %x, shape = [%c8, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf32>
    %qv = pto.make_tensor_view %q, shape = [%c8, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xDT>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c8, %c32] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x32xf32>
    %qp = pto.partition_view %qv, offsets = [%c0, %c0], sizes = [%c8, %c32] : !pto.tensor_view<?x?xDT> -> !pto.partition_tensor_view<8x32xDT>
    %s = arith.constant 4.0 : f32
    %xt = pto.alloc_tile : !pto.tile_buf<vec, 8x32xf32>
    %sc = pto.alloc_tile : !pto.tile_buf<vec, 8x8xf32, v_col=1>
    %qt = pto.alloc_tile : !pto.tile_buf<vec, 8x32xDT>
    pto.tload ins(%xp : !pto.partition_tensor_view<8x32xf32>) outs(%xt : !pto.tile_buf<vec, 8x32xf32>)
    pto.texpands ins(%s : f32) outs(%sc : !pto.tile_buf<vec, 8x8xf32, v_col=1>)
    pto.tquant ins(%xt, %sc OFFSET: !pto.tile_buf<vec, 8x32xf32>, !pto.tile_buf<vec, 8x8xf32, v_col=1>OFFSET_T) outs(%qt : !pto.tile_buf<vec, 8x32xDT>)ATTR
    pto.tstore ins(%qt : !pto.tile_buf<vec, 8x32xDT>) outs(%qp : !pto.partition_tensor_view<8x32xDT>)
    return
  }
}
"""


@pytest.mark.parametrize("dt,offset,attr,refused", [
    ("i8", False, "INT8_ASYM", "pto.tquant INT8_ASYM into an int8 tile: ptoas refuses it ('pto.tquant' op expects dst "
                               "element type ui8 for INT8_ASYM quantization)"),
    ("i8", True, "INT8_SYM", "pto.tquant INT8_SYM with an offset operand: ptoas refuses it ('pto.tquant' op INT8_SYM "
                             "quantization must not have an offset operand)"),
    ("ui8", False, "INT8_ASYM", "pto.tquant INT8_ASYM without an offset operand: ptoas refuses it"),
    ("i8", False, None, "pto.tquant without its quant_type: ptoas refuses it ('pto.tquant' op requires attribute "
                        "'quant_type')"),
    ("i8", False, "INT8_SYM", None),
    ("ui8", True, "INT8_ASYM", None),
])
def test_a_tquant_runs_its_quant_type_and_refuses_what_ptoas_refuses(tmp_path, capsys, dt, offset, attr, refused):
    """pto.tquant's quant_type decides the form (ptoas's TQuantOp verifier: INT8_SYM writes i8 with
    no offset, INT8_ASYM ui8 with one; the attribute is required): a destination or offset it does
    not take is a ParseError at the op, not a run of the other form."""
    text = (_QUANT.replace("DT", dt).replace("OFFSET_T", ", !pto.tile_buf<vec, 8x8xf32, v_col=1>" if offset else "")
            .replace("OFFSET", ", %sc " if offset else " ")
            .replace("ATTR", f" {{quant_type = #pto<quant_type {attr}>}}" if attr else ""))
    if refused is None:
        f = tmp_path / "ok.pto"
        f.write_text(text)
        x = np.linspace(-3, 3, 256, dtype=np.float32).reshape(8, 32)
        np.save(tmp_path / "x.npy", x)
        assert cli_main(["run", str(f), "--input", f"x={tmp_path / 'x.npy'}", "--output",
                         f"q={tmp_path / 'q.npy'}"]) == 0, capsys.readouterr().err
        want = np.clip(np.rint(x * 4 + (4 if offset else 0)), 0 if offset else -128, 255 if offset else 127)
        assert (np.load(tmp_path / "q.npy") == want).all()
        return
    _refused_at(tmp_path, capsys, text, "pto.tquant", "pto.tquant", refused)


@pytest.mark.parametrize("slope", ["f16", "f32"])
def test_a_tlrelu_slope_is_an_f32_for_f16_tiles_too(tmp_path, capsys, slope):
    """ptoas's pto.tlrelu takes its slope as an f32 whatever the tiles' element type: an f16
    slope is refused at the op; an f32 one with f16 tiles runs."""
    tb = ("!pto.tile_buf<loc=vec, dtype=f16, rows=4, cols=64, v_row=4, v_col=64, blayout=row_major, "
          "slayout=none_box, fractal=512, pad=0>")
    text = (_ONE_OP.replace("TB", tb).replace("DT", "f16")
            .replace("    %c0 = arith.constant 0 : index", f"    %s = arith.constant 1.0e-01 : {slope}\n    %c0 = arith.constant 0 : index")
            .replace("pto.OP ins(%a, %a : TB, TB)".replace("TB", tb), f"pto.tlrelu ins(%a, %s : {tb}, {slope})"))
    if slope == "f32":
        f = tmp_path / "ok.pto"
        f.write_text(text)
        assert cli_main(["run", str(f), "--platform", "a5"]) == 0, capsys.readouterr().err
        return
    _refused_at(tmp_path, capsys, text, "pto.tlrelu", "pto.tlrelu",
                "pto.tlrelu's slope is f16: ptoas refuses it ('pto.tlrelu' op operand #1 must be 32-bit float")


@pytest.mark.parametrize("dt,scalar,platform,what", [
    ("ui32", "i32", "a5", "pto.texpands of a ui32 tile with a i32 scalar: ptoas refuses it ('pto.texpands' op expects "
                          "scalar type == dst element type)"),
    ("bf16", "bf16", "a5", "pto.texpands of bfloat16 tiles on A5: ptoas refuses it ('pto.texpands' op expects A5 "
                           "texpands dst element type to be i8/i16/i32/f16/f32)"),
    ("i8", "i8", "a5", None),
])
def test_texpands_takes_ptoas_element_and_scalar_types(tmp_path, capsys, dt, scalar, platform, what):
    """ptoas's pto.texpands wants its scalar of the tile's element type exactly and, on A5, an
    8/16/32-bit integer or f16 / f32 tile: other files are refused at the op."""
    tb = (f"!pto.tile_buf<loc=vec, dtype={dt}, rows=4, cols=64, v_row=4, v_col=64, blayout=row_major, "
          "slayout=none_box, fractal=512, pad=0>")
    lit = "3.0" if dt.startswith(("f", "bf")) else "3"
    text = (_ONE_OP.replace("TB", tb).replace("DT", dt)
            .replace("    %c0 = arith.constant 0 : index", f"    %s = arith.constant {lit} : {scalar}\n    %c0 = arith.constant 0 : index")
            .replace(f"pto.OP ins(%a, %a : {tb}, {tb})", f"pto.texpands ins(%s : {scalar})"))
    if what is None:
        f = tmp_path / "ok.pto"
        f.write_text(text)
        assert cli_main(["run", str(f), "--platform", platform]) == 0, capsys.readouterr().err
        return
    _refused_at(tmp_path, capsys, text, "pto.texpands", "pto.texpands", what, cmd=("run", "--platform", platform))


@pytest.mark.parametrize("comma", [", ", " "])
def test_a_mask_pattern_tgather_takes_a_comma_before_its_attribute(tmp_path, capsys, comma):
    """ptoas's pto.tgather parser wants ``ins(%src, {maskPattern = ...} : type)``; without the
    comma it refuses the file: a ParseError at the attribute, and the comma form runs."""
    t64, t32 = (f"!pto.tile_buf<loc=vec, dtype=f32, rows=4, cols={c}, v_row=4, v_col={c}, blayout=row_major, "
                "slayout=none_box, fractal=512, pad=0>" for c in (64, 32))
    text = (_ONE_OP.replace("TB", t64).replace("DT", "f32")
            .replace("%d = pto.alloc_tile : " + t64, "%d = pto.alloc_tile : " + t32)
            .replace(f"pto.OP ins(%a, %a : {t64}, {t64}) outs(%d : {t64})",
                     f"pto.tgather ins(%a{comma}{{maskPattern = #pto.mask_pattern<P0101>}} : {t64}) outs(%d : {t32})")
            .replace(f"pto.tstore ins(%d : {t64})", f"pto.tstore ins(%d : {t32})"))
    text = text.replace("%yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c4, %c64] : !pto.tensor_view<?x?xf32> "
                        "-> !pto.partition_tensor_view<4x64xf32>",
                        "%c32 = arith.constant 32 : index\n    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = "
                        "[%c4, %c32] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<4x32xf32>")
    text = text.replace("outs(%yp : !pto.partition_tensor_view<4x64xf32>)", "outs(%yp : !pto.partition_tensor_view<4x32xf32>)")
    if comma == ", ":
        f = tmp_path / "ok.pto"
        f.write_text(text)
        assert cli_main(["run", str(f)]) == 0, capsys.readouterr().err
        return
    _refused_at(tmp_path, capsys, text, "pto.tgather", "{maskPattern",
                "pto.tgather's maskPattern follows its source after a comma: ptoas refuses it without one")


@pytest.mark.parametrize("op,platform,what", [
    ("textract", "a2a3", "pto.textract from a Vec tile to a Vec tile on A2A3: ptoas refuses it ('pto.textract' op "
                         "expects A2/A3 textract src to use loc=mat and dst loc=left or loc=right)"),
    ("tinsert", "a2a3", "pto.tinsert from a Vec tile to a Vec tile on A2A3: ptoas refuses it ('pto.tinsert' op "
                        "expects A2/A3 tinsert src to use loc=acc and dst to use loc=mat)"),
    ("textract", "a5", None),
])
def test_a_vec_to_vec_extract_or_insert_is_refused_on_a2a3_as_ptoas_does(tmp_path, capsys, op, platform, what):
    """pto-isa runs TEXTRACT / TINSERT between Vec tiles on A2A3 too, ptoas's A2/A3 verifier only
    Mat -> Left / Right and Acc -> Mat: such a file is refused at the op there, and runs on A5."""
    big, small = (f"!pto.tile_buf<loc=vec, dtype=f32, rows={r}, cols=64, v_row={r}, v_col=64, blayout=row_major, "
                  "slayout=none_box, fractal=512, pad=0>" for r in (8, 4))
    src, dst = (big, small) if op == "textract" else (small, big)
    text = (_ONE_OP.replace("%a = pto.alloc_tile : TB", f"%a = pto.alloc_tile : {big}")
            .replace("%d = pto.alloc_tile : TB", f"%d = pto.alloc_tile : {big}\n    %e = pto.alloc_tile : {small}")
            .replace("pto.tload ins(%xp : !pto.partition_tensor_view<4x64xDT>) outs(%a : TB)",
                     f"pto.tload ins(%xp : !pto.partition_tensor_view<4x64xDT>) outs(%e : {small})\n"
                     f"    pto.texpands ins(%one : f32) outs(%a : {big})")
            .replace("    %c0 = arith.constant 0 : index", "    %one = arith.constant 1.0 : f32\n    %c0 = arith.constant 0 : index")
            .replace("pto.OP ins(%a, %a : TB, TB) outs(%d : TB)",
                     f"pto.{op} ins({'%a' if op == 'textract' else '%e'}, %c4, %c0 : {src}, index, index) "
                     f"outs({'%e' if op == 'textract' else '%d'} : {dst})")
            .replace("pto.tstore ins(%d : TB)", f"pto.tstore ins(%e : {small})")
            .replace("DT", "f32"))
    if what is None:
        f = tmp_path / "ok.pto"
        f.write_text(text)
        assert cli_main(["run", str(f), "--platform", platform]) == 0, capsys.readouterr().err
        return
    _refused_at(tmp_path, capsys, text, f"pto.{op} ins", f"pto.{op}", what, cmd=("run", "--platform", platform))


_VEC_MEMREF_INSERT = """module {
  func.func @insert_vec(%a: memref<16x16xf32, #pto.address_space<gm>>, %o: memref<16x32xf32, #pto.address_space<gm>>) {
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %z = arith.constant 0.0 : f32
    %src = memref.alloc() : memref<16x16xf32, #pto.address_space<vec>>
    %dst = memref.alloc() : memref<16x32xf32, #pto.address_space<vec>>
    pto.texpands ins(%z : f32) outs(%dst : memref<16x32xf32, #pto.address_space<vec>>)
    pto.tload ins(%a : memref<16x16xf32, #pto.address_space<gm>>) outs(%src : memref<16x16xf32, #pto.address_space<vec>>)
    pto.tinsert ins(%src, %c0, %c16 : memref<16x16xf32, #pto.address_space<vec>>, index, index) outs(%dst : memref<16x32xf32, #pto.address_space<vec>>)
    pto.tstore ins(%dst : memref<16x32xf32, #pto.address_space<vec>>) outs(%o : memref<16x32xf32, #pto.address_space<gm>>)
    return
  }
}
"""


def test_an_op_of_memref_operands_is_not_held_to_ptoas_architecture_rules(tmp_path):
    """ptoas skips an op's per-architecture verifier when an operand is a memref (PTO.cpp
    shouldBypassDecodedMemrefVerifier): the Vec -> Vec TINSERT it refuses between tile_bufs on
    A2A3 it takes between memrefs, and writes the TINSERT pto-isa's A2A3 runs - so the file runs."""
    import ptopipe
    a = np.arange(256, dtype=np.float32).reshape(16, 16)
    res = ptopipe.run_pto(text=_VEC_MEMREF_INSERT, platform="a2a3",
                          inputs={"a": a, "o": np.ones((16, 32), np.float32)})
    np.testing.assert_array_equal(res.outputs["o"], np.concatenate([np.zeros_like(a), a], axis=1))
    ptoas = os.environ.get("PTOAS")
    if ptoas:
        (tmp_path / "k.pto").write_text(_VEC_MEMREF_INSERT)
        r = subprocess.run([ptoas, "--pto-arch=a3", str(tmp_path / "k.pto"), "-o", str(tmp_path / "k.cpp")],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
        assert "TINSERT(" in (tmp_path / "k.cpp").read_text()


@pytest.mark.parametrize("marked", [True, False])
def test_an_entry_function_that_returns_a_value_is_refused(tmp_path, capsys, marked):
    """ptoas: "PTO entry functions must return void" - for a function marked pto.entry and for
    a file's only function; a helper the entry calls may return values."""
    entry = " attributes {pto.entry}" if marked else ""
    helper = ("\n  func.func private @twice(%v: index) -> index {\n    %r = arith.addi %v, %v : index\n"
              "    return %r : index\n  }" if marked else "")
    text = (f"module {{\n  func.func @k(%n: index) -> index{entry} {{\n    %c1 = arith.constant 1 : index\n"
            f"    %m = arith.addi %n, %c1 : index\n    return %m : index\n  }}{helper}\n}}\n")
    _refused_at(tmp_path, capsys, text, "func.func @k", "func.func",
                "@k is the file's entry function and returns index: ptoas refuses it (PTO entry functions must "
                "return void)")


@pytest.mark.parametrize("dt,layout,what", [
    ("f32", "blayout=col_major, slayout=row_major", "pto.tinsert between Vec tiles on A5 not both row_major / none_box: "
     "ptoas refuses it ('pto.tinsert' op expects A5 vec->vec tinsert src/dst to use ND layout"),
    ("i16", "blayout=row_major, slayout=none_box", "pto.tinsert of int16 Vec tiles on A5: ptoas refuses it "
     "('pto.tinsert' op expects A5 vec->vec tinsert src/dst to have same supported dtype (fp8/f16/bf16/f32/i8/i32))"),
    ("i32", "blayout=row_major, slayout=none_box", None),
])
def test_an_a5_vec_to_vec_insert_takes_nd_tiles_of_ptoas_element_types(tmp_path, capsys, dt, layout, what):
    """ptoas's A5 verifier takes a Vec -> Vec TINSERT of ND (row_major / none_box) tiles of 8- or
    32-bit integers or floats; pto-isa runs others too: the file is refused at the op."""
    big, small = (f"!pto.tile_buf<loc=vec, dtype={dt}, rows={r}, cols=64, v_row={r}, v_col=64, {lay}, "
                  "fractal=512, pad=0>" for r, lay in ((8, layout), (4, "blayout=row_major, slayout=none_box")))
    text = (_ONE_OP.replace("%a = pto.alloc_tile : TB", f"%a = pto.alloc_tile : {small}")
            .replace("%d = pto.alloc_tile : TB", f"%d = pto.alloc_tile : {big}")
            .replace("pto.tload ins(%xp : !pto.partition_tensor_view<4x64xDT>) outs(%a : TB)",
                     f"pto.tload ins(%xp : !pto.partition_tensor_view<4x64xDT>) outs(%a : {small})")
            .replace("pto.OP ins(%a, %a : TB, TB) outs(%d : TB)",
                     f"pto.tinsert ins(%a, %c4, %c0 : {small}, index, index) outs(%d : {big})")
            .replace("pto.tstore ins(%d : TB)", f"pto.tstore ins(%a : {small})")
            .replace("DT", dt))
    if what is None:
        f = tmp_path / "ok.pto"
        f.write_text(text)
        assert cli_main(["run", str(f), "--platform", "a5"]) == 0, capsys.readouterr().err
        return
    _refused_at(tmp_path, capsys, text, "pto.tinsert ins", "pto.tinsert", what, cmd=("run", "--platform", "a5"))


@pytest.mark.parametrize("corpus, old, new", [
    ("x_c2v_split2_relu_a3.pto", "location = #pto.address_space<vec>", "location = #pto.address_space<mat>"),
    ("x_v2c_split1_a3.pto", "location = #pto.address_space<mat>", "location = #pto.address_space<vec>"),
    ("x_c2v_split2_relu_a3.pto", "location = #pto.address_space<vec>", "location = #pto.address_space<gm>"),
])
def test_a_reserve_outside_its_cores_memory_is_refused_at_the_reserve(tmp_path, capsys, corpus, old, new):
    """The ring a function reserves is the one it consumes, in its core's memory (UB on a
    Vector core, L1 on the Cube); ptoas plans it where ``location`` says.  Another location is
    a CompileError at the reserve - not the ring laid over the core's own tiles and a
    MemoryConflictError at some later op that touches them; one that is no local memory
    (``gm``), which ptoas refuses, a ParseError at it - not a ring in the core's default memory."""
    text = _edit((ROOT / "tests" / "pto_corpus" / corpus).read_text(), old, new)
    f = tmp_path / "bad.pto"
    f.write_text(text)
    for cmd in ("run", "check"):
        assert cli_main([cmd, str(f)]) == 1
        err = capsys.readouterr().err
        ln = _line(text, "pto.reserve_buffer")
        if "<gm>" in new:
            col = text.splitlines()[ln - 1].index("#pto.address_space<gm>") + 1
            assert "ParseError: pto.reserve_buffer 'c2v_fifo' in #pto.address_space<gm>: ptoas refuses it" in err \
                and f"at {f}:{ln}:{col}\n" in err, err
            continue
        assert "CompileError: pto.reserve_buffer" in err and f"at {f}:{ln}:" in err, err
        assert f"fix: write {old}" in err


@pytest.mark.parametrize("op,was,now,what", [
    ("set_flag", "EVENT_ID0", "EVENT_ID8", "EVENT_ID8 is not an event: ptoas refuses the file"),
    ("wait_flag", "EVENT_ID0", "EVENT_ID8", "EVENT_ID8 is not an event: ptoas refuses the file"),
    ("set_flag", "PIPE_MTE1", "PIPE_MET1", "PIPE_MET1 is not a pipe ptopipe models (ptoas: \"expected "
                                           "::mlir::pto::PIPE to be one of: PIPE_S, PIPE_V,"),
])
def test_an_event_past_event_id7_or_a_misspelled_pipe_is_refused_at_it(tmp_path, capsys, op, was, now, what):
    """``<EVENT_ID8>`` is no member of ptoas's EVENT enum, ``<PIPE_MET1>`` none of its PIPE enum (its
    parser refuses the file): a ParseError at the word, not a KernelError (or an error naming
    Python's ValueError) when the op runs."""
    text = (ROOT / "tests" / "pto_corpus" / "c_mm_sync_flags_a3.pto").read_text()
    old = f"pto.{op}[<PIPE_MTE2>, <PIPE_MTE1>, <EVENT_ID0>]"
    text = _edit(text, old, old.replace(was, now))
    err = _refused_at(tmp_path, capsys, text, old.replace(was, now), now, f"pto.{op}: {what}")
    assert "ValueError" not in err


@pytest.mark.parametrize("cmd", [("run",), ("check",)])
def test_a_ring_op_of_the_other_core_is_refused_at_it(tmp_path, capsys, cmd):
    """``pto.tfree_from_aic`` in the Cube's function: ptoas's verifier refuses it ("op must be
    inside a vector kernel function") - a ParseError at the op, as every refusal of ptoas's."""
    text = (ROOT / "tests" / "pto_corpus" / "x_v2c_split1_a3.pto").read_text()
    text = _edit(text, "    pto.tfree_from_aiv {split = 1}", "    pto.tfree_from_aic {split = 1}")
    _refused_at(tmp_path, capsys, text, "pto.tfree_from_aic {split = 1}", "pto.tfree_from_aic",
                "pto.tfree_from_aic belongs in a vector kernel, but @srm_cube is a cube kernel (ptoas: "
                "'pto.tfree_from_aic' op must be inside a vector kernel function)", cmd=cmd)


_COL16 = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=1, v_row=16, v_col=1, blayout=col_major, "
          "slayout=none_box, fractal=512, pad=0>")


@pytest.mark.parametrize("text, needle, what", [
    # a row reduction into a tile of more than one valid column (pto-isa writes its column 0)
    (_edit(SOFTMAX, f"outs(%row_max : {_COL16})", f"outs(%tmp : {F32_16x64})"),
     "pto.trowmax", "pto.trowmax into a destination of 64 valid columns: ptoas refuses it"),
    # a pad into a destination whose type names no pad value
    (_edit(SOFTMAX, "    pto.tmuls ins(%scores", f"    pto.tfillpad ins(%scores : {F32_16x64}) outs(%tmp : {F32_16x64})\n"
                                                  "    pto.tmuls ins(%scores"),
     "pto.tfillpad", "pto.tfillpad into a destination whose type has no pad value (pad=0, Null): ptoas refuses it"),
])
def test_a_destination_ptoas_refuses_for_the_op_is_refused_at_the_op(tmp_path, capsys, text, needle, what):
    """ptoas's verifier constrains these ops' destination types beyond pto-isa (a row
    reduction's dst has one valid column; a pad's dst type has a pad value): a ParseError at
    the op, not a run of a file that does not assemble."""
    _refused_at(tmp_path, capsys, text, needle, needle, what)
    ptoas = os.environ.get("PTOAS")
    if ptoas:
        r = subprocess.run([ptoas, str(tmp_path / "bad.pto"), "-o", str(tmp_path / "bad.cpp")],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode != 0
