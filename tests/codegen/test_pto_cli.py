"""``ptopipe run | check [--static] k.pto`` on PTO-AS as pypto and ptoas write it: the static
verifier in front where its value IR expresses the file, the buffer-semantics executor for the
run, and a clear status where the static verifier cannot follow."""
import json
import sys

import numpy as np
import pytest

from ptopipe.cli import main as cli_main

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from test_pto_exec import IO, MAT, STORE, X, cube_vector_pair, line_of, vec_t, vector_kernel  # noqa: E402


def write(tmp_path, text, name="k.pto"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


A5_WHOLE_TILE = cube_vector_pair(0, "a5").replace("!pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=16, v_row=8, v_col=16",
                                                   "!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16") \
    .replace("sizes = [%c8, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<8x16xf32>",
             "sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>") \
    .replace("!pto.partition_tensor_view<8x16xf32>)", "!pto.partition_tensor_view<16x16xf32>)") \
    .replace("    %sb64 = pto.get_subblock_idx\n    %sb = arith.index_cast %sb64 : i64 to index\n"
             "    %row = arith.muli %sb, %c8 : index\n", "") \
    .replace("offsets = [%row, %c0]", "offsets = [%c0, %c0]")


def test_a5_split_0_pipes_run_on_aiv0_only_statically_and_in_the_run(tmp_path, capsys):
    """ptoas guards A5 TPUSH / TPOP / TFREE of split 0 (no ``nosplit``) with
    get_subblockid() == 0: one lane.  Both the static verifier and the run agree (no
    'both Vector lanes write the whole slot' finding) and the result is numpy's."""
    f = write(tmp_path, A5_WHOLE_TILE)
    assert cli_main(["check", "--static", f]) == 0
    assert "verified statically" in capsys.readouterr().out
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((16, 16)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32)
    for n, v in (("a", a), ("b", b)):
        np.save(tmp_path / f"{n}.npy", v)
    assert cli_main(["run", f, f"--input=a={tmp_path / 'a.npy'}", f"--input=b={tmp_path / 'b.npy'}",
                     f"--output=out={tmp_path / 'o.npy'}"]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "o.npy"), 2 * (a @ b), rtol=1e-4, atol=1e-4)
    assert "runs on AIV0" in capsys.readouterr().out


def test_an_unused_subblock_read_does_not_lift_the_a5_lane0_guard(tmp_path, capsys):
    """ptoas decides its get_subblockid() == 0 guard after dead-code elimination: a
    ``pto.get_subblock_idx`` (and its index_cast) that nothing uses is gone by then, so the
    split-0 Vector kernel still runs on AIV0 only - the run too (before, AIV1 ran it and
    constructed the one-lane pipe: a ConfigError), as the static verifier already had it."""
    text = A5_WHOLE_TILE.replace("    %ov = pto.make_tensor_view %out",
                                 "    %sb64 = pto.get_subblock_idx\n    %sb = arith.index_cast %sb64 : i64 to index\n"
                                 "    %unused = arith.muli %sb, %c8 : index\n    %ov = pto.make_tensor_view %out", 1)
    assert "%unused" in text
    f = write(tmp_path, text)
    assert cli_main(["check", "--static", f]) == 0, capsys.readouterr()
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((16, 16)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32)
    import ptopipe
    r = ptopipe.run_pto(text=text, inputs=dict(a=a, b=b, out=np.zeros((16, 16), np.float32)))
    np.testing.assert_allclose(r.outputs["out"], 2 * (a @ b), rtol=1e-4, atol=1e-4)
    assert any("run on AIV0 only" in n or "runs on AIV0" in n for n in r.notes), r.notes
    assert cli_main(["check", f]) == 0, capsys.readouterr()
    # a read something uses keeps the lanes the scope's own: no guard (ptoas emits none either)
    from ptopipe.codegen.pto_exec.program import lane0_scope
    from ptopipe.codegen.pto_exec import read_program
    used = read_program(text.replace("offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> "
                                      "!pto.partition_tensor_view<16x16xf32>\n    %t",
                                      "offsets = [%unused, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> "
                                      "!pto.partition_tensor_view<16x16xf32>\n    %t"), "k.pto")
    assert not lane0_scope(used.funcs["vector"].body)
    assert lane0_scope(read_program(text, "k.pto").funcs["vector"].body)


def test_static_reads_views_with_a_layout_attribute_and_tprint(tmp_path, capsys):
    text = cube_vector_pair(1, "a3").replace("strides = [%c16, %c1] :", "strides = [%c16, %c1] {layout = #pto.layout<nd>} :")
    text = text.replace("    pto.tfree_from_aic {split = 1}\n",
                        f"    pto.tprint ins(%r : {vec_t(8, 16)})\n    pto.tfree_from_aic {{split = 1}}\n")
    text = text.replace("pto.tmuls ins(%t, %two", "pto.tmuls ins(%t{rmode = #pto<round_mode ROUND>}, %two")
    assert "{layout = #pto.layout<nd>}" in text and "pto.tprint" in text and "{rmode" in text
    assert cli_main(["check", "--static", write(tmp_path, text)]) == 0
    assert "verified statically" in capsys.readouterr().out


def test_static_on_a_file_its_ir_cannot_express(tmp_path, capsys):
    """A tile view (``pto.subset`` of an unused tile) is not in the value IR: a pipe-less file
    passes (nothing cross-core to prove), a file with pipes is NOT VERIFIED (exit 1) and says
    what and where; `check` runs both."""
    ov = "%ov = pto.make_tensor_view %out, shape = [%c16, %c16], strides = [%c16, %c1] :"
    text = cube_vector_pair(1, "a3")
    k = text.index(ov)
    text = (text[:k] + f"%sv = pto.alloc_tile : {vec_t(16, 16)}\n    %dv = pto.subset %sv[%c0, %c0] sizes [8, 16] : "
            f"{vec_t(16, 16)}\n    " + text[k:])
    f = write(tmp_path, text)
    assert cli_main(["check", "--static", f]) == 1
    out = capsys.readouterr().out
    assert out.startswith("NOT VERIFIED k.pto") and f"k.pto:{line_of(text, '%dv = ')}:" in out
    assert cli_main(["check", f, "--schedules", "2"]) == 0
    single = f"""module {{
  func.func @v(%x: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %t = pto.alloc_tile : {vec_t(16, 16)}
    %q = pto.subset %t[%c0, %c0] sizes [8, 16] : {vec_t(16, 16)}
    return
  }}
}}
"""
    assert cli_main(["check", "--static", write(tmp_path, single, "s.pto")]) == 0
    assert "no cross-core pipes, nothing to verify statically" in capsys.readouterr().out


def test_run_without_func_runs_each_top_function_and_output_needs_one(tmp_path, capsys):
    one = f"""  func.func @{{n}}(%x: !pto.ptr<f32>) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %t = pto.alloc_tile : {vec_t(16, 16)}
    pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%t : {vec_t(16, 16)})
    return
  }}
"""
    f = write(tmp_path, "module {\n" + one.replace("{n}", "first") + one.replace("{n}", "second") + "}\n")
    assert cli_main(["run", f]) == 0
    out = capsys.readouterr().out
    assert "PASS k.pto @first" in out and "PASS k.pto @second" in out
    two = f.replace("k.pto", "two.pto")
    with open(two, "w") as fh:                         # the second function's parameter is %y
        fh.write(open(f).read().replace("func.func @second(%x", "func.func @second(%y")
                 .replace("%xv = pto.make_tensor_view %x,", "%xv = pto.make_tensor_view %x,", 1))
    text = open(two).read()
    i = text.index("@second")
    with open(two, "w") as fh:
        fh.write(text[:i] + text[i:].replace("pto.make_tensor_view %x,", "pto.make_tensor_view %y,"))
    np.save(tmp_path / "y.npy", np.ones((16, 16), np.float32))
    assert cli_main(["run", two, f"--input=y={tmp_path / 'y.npy'}"]) == 0     # y is @second's only
    assert "note: x: seeded random" in capsys.readouterr().out
    assert cli_main(["run", two, f"--input=q={tmp_path / 'y.npy'}"]) == 1
    assert "the kernel has no parameter 'q'" in capsys.readouterr().err
    assert cli_main(["run", f, f"--output=x={tmp_path / 'x.npy'}"]) == 1
    assert "--output needs one" in capsys.readouterr().err
    assert cli_main(["run", f, "--func", "second", f"--output=x={tmp_path / 'x.npy'}"]) == 0
    assert cli_main(["check", f, "--schedules", "1"]) == 0
    out = capsys.readouterr().out
    assert "k.pto@first[default]" in out and "k.pto@second[default]" in out


def test_an_unsupported_op_is_named_at_its_line_by_run_check_and_static(tmp_path, capsys):
    text = cube_vector_pair(1, "a5").replace("    %two = arith.constant 2.0 : f32\n",
                                             "    %two = arith.constant 2.0 : f32\n    pto.tfancy ins(%t : f32)\n")
    f = write(tmp_path, text)
    for cmd in (["run", f], ["check", f], ["check", "--static", f]):
        assert cli_main(cmd) == 1
        err = capsys.readouterr().err
        assert "unknown operation 'pto.tfancy'" in err and f"k.pto:{line_of(text, 'pto.tfancy')}:5" in err
        assert "Traceback" not in err


def test_a_mat_tile_in_a_vector_kernel_is_an_error_at_the_op(tmp_path, capsys):
    """A kernel_kind says the core: a Mat tile in a vector kernel has no memory there."""
    text = f"""module {{
  func.func @v() attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %m = pto.alloc_tile : {MAT}
    return
  }}
}}
"""
    assert cli_main(["run", write(tmp_path, text)]) == 1
    err = capsys.readouterr().err
    assert "AIV0 has no L1" in err and f"k.pto:{line_of(text, '%m =')}:" in err


def v2c_whole_tile() -> str:
    """A5: AIV0 (ptoas's get_subblockid() == 0 guard) pushes a whole 16x16 Vec tile, split 0,
    and the Cube pops it into a Mat tile and stores it."""
    mat_nd = MAT.replace("blayout=col_major, slayout=row_major", "blayout=row_major, slayout=none_box")
    return f"""module attributes {{pto.target_arch = "a5"}} {{
  func.func @pair(%x: !pto.ptr<f32>, %out: !pto.ptr<f32>) attributes {{pto.entry}} {{
    func.call @cube(%x, %out) : (!pto.ptr<f32>, !pto.ptr<f32>) -> ()
    func.call @vector(%x, %out) : (!pto.ptr<f32>, !pto.ptr<f32>) -> ()
    return
  }}
  func.func private @cube(%x: !pto.ptr<f32>, %out: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<cube>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %z = arith.constant 0 : i32
    %ring = pto.reserve_buffer {{name = "ring", size = 8192, location = #pto.address_space<mat>, auto = false, base = 0}} -> i32
    pto.aic_initialize_pipe {{dir_mask = 2, slot_size = 1024}} (c2v_consumer_buf = %z : i32, v2c_consumer_buf = %ring : i32)
    %t = pto.tpop_from_aiv {{split = 0}} -> {mat_nd}
    %ov = pto.make_tensor_view %out, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %op = pto.partition_view %ov, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    pto.tstore ins(%t : {mat_nd}) outs(%op : !pto.partition_tensor_view<16x16xf32>)
    pto.tfree_from_aiv {{split = 0}}
    return
  }}
  func.func private @vector(%x: !pto.ptr<f32>, %out: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %z = arith.constant 0 : i32
    %imp = pto.import_reserved_buffer {{name = "ring", peer_func = @cube}} -> i32
    pto.aiv_initialize_pipe {{dir_mask = 2, slot_size = 1024}} (c2v_consumer_buf = %z : i32, v2c_consumer_buf = %imp : i32)
    %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %v = pto.alloc_tile : {vec_t(16, 16)}
    pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%v : {vec_t(16, 16)})
    pto.tpush_to_aic(%v : {vec_t(16, 16)}) {{split = 0}}
    return
  }}
}}
"""


def test_a5_v2c_split_0_push_is_one_lane_not_both_lanes_on_one_slot(tmp_path, capsys):
    f = write(tmp_path, v2c_whole_tile())
    assert cli_main(["check", "--static", f]) == 0, capsys.readouterr()
    capsys.readouterr()
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    np.save(tmp_path / "x.npy", x)
    assert cli_main(["run", f, f"--input=x={tmp_path / 'x.npy'}", f"--output=out={tmp_path / 'o.npy'}"]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), x)


def test_the_library_runs_the_static_verifier_first_as_the_cli_does():
    """A reserve smaller than its ring: ptopipe.run_pto raises the static finding at the
    reserve, as `ptopipe run` does; static=False runs the file with the run's checkers only."""
    import ptopipe
    from ptopipe.errors import CompileError
    text = cube_vector_pair(1, "a5").replace("size = 8192, location", "size = 2048, location")
    with pytest.raises(CompileError) as e:
        ptopipe.run_pto(text=text)
    assert "reserve_buffer 'ring' has 2048 bytes" in e.value.what
    assert f":{line_of(text, 'pto.reserve_buffer')}:" in e.value.where
    with pytest.raises(ptopipe.PtoPipeError):
        ptopipe.run_pto(text=text, static=False)     # the run meets the small ring too


@pytest.mark.parametrize("arch", ["a3", "a5"])
def test_an_entry_must_launch_each_pipe_kernel_once(tmp_path, capsys, arch):
    text = cube_vector_pair(1, arch)
    never = text.replace("    func.call @vector(%a, %b, %out, %buf) : (!pto.ptr<f32>, !pto.ptr<f32>, "
                         "!pto.ptr<f32>, !pto.ptr<f32>) -> ()\n", "")
    call = "    func.call @cube(%a, %b, %out, %buf) : (!pto.ptr<f32>, !pto.ptr<f32>, !pto.ptr<f32>, !pto.ptr<f32>) -> ()\n"
    twice = text.replace(call, call + call)
    assert never != text and twice != text
    for bad, what, line in ((never, "never calls it", line_of(never, "func.func private @vector")),
                            (twice, "calls @cube 2 times", line_of(twice, call.strip()) + 1)):
        f = write(tmp_path, bad)
        for cmd in (["check", "--static", f], ["run", f]):
            assert cli_main(cmd) == 1
            err = capsys.readouterr().err
            assert what in err and f"k.pto:{line}:" in err, err


def test_a_gm_ring_moved_past_its_buffer_is_blamed_on_that_buffer(tmp_path, capsys):
    """``addptr`` moves the slot buffer's pointer past the end of the buffer given for it: the
    ring overrun names gm_slot_buffer (the pointer's argument), not the argument the address
    lands in.  (Not given, a buffer is seeded to hold the moved ring, as for a constant offset.)"""
    text = cube_vector_pair(1, "a3").replace(
        "    %imp = pto.import_reserved_buffer",
        "    %c64 = arith.constant 64 : index\n    %c4096 = arith.muli %c64, %c64 : index\n"
        "    %far = pto.addptr %buf, %c4096 : <f32> -> <f32>\n    %imp = pto.import_reserved_buffer", 1)
    text = text.replace("gm_slot_buffer = %buf : !pto.ptr<f32>, c2v_consumer_buf = %imp",
                        "gm_slot_buffer = %far : !pto.ptr<f32>, c2v_consumer_buf = %imp", 1)
    assert "%far" in text
    ring = tmp_path / "ring.npy"
    np.save(ring, np.zeros(8 * 1024 // 4, np.float32))      # the ring's 8 slots of 1024 B, not past them
    assert cli_main(["run", write(tmp_path, text), "--input", f"buf={ring}"]) == 1
    err = capsys.readouterr().err
    assert "runs past the end of its GM argument 'buf'" in err, err


def test_check_reports_the_runs_warnings_and_prints_only_the_default_schedules_output(tmp_path, capsys):
    """``check`` shows what the run finds and goes on after (a tile read before anything wrote
    it, at its line) in its PASS, and its --json; a print comes out once, not once per schedule."""
    from test_pto_exec import IO, STORE, vector_kernel
    text = vector_kernel(IO + f"""    %b = pto.alloc_tile : {vec_t(16, 16)}
    %c3 = arith.constant 3 : i32
    pto.print ins("n = %d", %c3 : i32)
    pto.tadd ins(%t, %b : {vec_t(16, 16)}, {vec_t(16, 16)}) outs(%t : {vec_t(16, 16)})
""" + STORE)
    f = write(tmp_path, text)
    at = f"k.pto:{line_of(text, 'pto.tadd')}:5"
    assert cli_main(["check", f, "--schedules", "4"]) == 0
    out = capsys.readouterr().out
    assert out.count("n = 3") == 1
    assert "1 warning(s)" in out and "pto.tadd reads %b" in out and f"({f.rsplit('/', 1)[0]}/{at})" in out
    assert cli_main(["check", f, "--schedules", "4", "--json"]) == 0
    out = capsys.readouterr().out
    (rep,) = json.loads(out[out.index("["):])
    assert rep["warnings"][0]["where"].endswith(at) and "reads %b" in rep["warnings"][0]["what"]


def test_a_scalar_input_may_be_a_number_typed_by_its_parameter(tmp_path, capsys):
    """``--input n=3`` / ``s=-1.5`` give scalar parameters on the command line (the note for a
    missing scalar says ``--input n=VALUE``); the parameter's type decides the value's (an
    integer for an f32 is a float, 1.5 for an index is refused); a .npy still works, and a
    number for a tensor parameter is refused."""
    text = vector_kernel(IO + f"""    scf.for %i = %c0 to %n step %c1 {{
      pto.tmuls ins(%t, %s : {vec_t(16, 16)}, f32) outs(%t : {vec_t(16, 16)})
    }}
""" + STORE, params="%x: !pto.ptr<f32>, %y: !pto.ptr<f32>, %s: f32, %n: index")
    f = write(tmp_path, text)
    np.save(tmp_path / "x.npy", X)
    o, xin = tmp_path / "o.npy", f"--input=x={tmp_path / 'x.npy'}"
    for s, n, want in (("-1.5", "3", X * -1.5 ** 3), ("-2", "2", X * 4), ("0.5", "0", X), ("1e1", "1", X * 10)):
        assert cli_main(["run", f, xin, "--input", f"s={s}", "--input", f"n={n}", f"--output=y={o}"]) == 0
        np.testing.assert_allclose(np.load(o), want, rtol=1e-6)
    np.save(tmp_path / "n.npy", np.array(2))
    assert cli_main(["run", f, xin, "--input", "s=3", f"--input=n={tmp_path / 'n.npy'}", f"--output=y={o}"]) == 0
    np.testing.assert_allclose(np.load(o), X * 9, rtol=1e-6)
    capsys.readouterr()
    assert cli_main(["run", f, xin, "--input", "s=1", "--input", "n=1.5"]) == 1
    assert "--input n: 1.5 for the index parameter 'n'" in capsys.readouterr().err
    assert cli_main(["run", f, "--input", "x=2", "--input", "n=1"]) == 1
    assert "--input x: a number for a tensor parameter" in capsys.readouterr().err
    assert cli_main(["run", f, xin]) == 0
    assert "give --input n=VALUE" in capsys.readouterr().out


def test_func_naming_no_function_lists_the_files_functions(tmp_path, capsys):
    """``--func nope`` was a raw KeyError: now a ConfigError at the option naming the file's
    functions and how to pick one, for run and check alike."""
    f = write(tmp_path, vector_kernel(IO + STORE).replace(
        "  func.func @k(", "  func.func private @helper(%q: i32) {\n    return\n  }\n  func.func @k("))
    for cmd in (["run", f, "--func", "nope"], ["check", f, "--func", "@nope", "--schedules", "1"]):
        assert cli_main(cmd) == 1
        err = capsys.readouterr().err
        assert "ConfigError: --func" in err and "defines no function 'nope'; it defines @helper, @k" in err
        assert "at option --func" in err and "--func NAME" in err and "Traceback" not in err
    assert cli_main(["run", f, "--func", "k"]) == 0


@pytest.mark.parametrize("cmd", ["run", "check"])
def test_help_says_the_file_may_be_a_pto_file(cmd, capsys):
    with pytest.raises(SystemExit) as e:
        cli_main([cmd, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    positional = out[out.index("positional arguments:"):out.index("options:")]
    assert ".py defining SCENARIO" in positional and ".pto" in positional


def test_quiet_prints_only_the_pass_line_of_a_pto_run(tmp_path, capsys):
    """``--quiet`` (the summary line only, as for a .py kernel) left every note and the
    per-core summary in a .pto run's output."""
    f = write(tmp_path, vector_kernel(IO + STORE))
    assert cli_main(["run", f]) == 0
    loud = capsys.readouterr().out
    assert "note: x: seeded random" in loud and "AIV0" in loud
    assert cli_main(["run", f, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [next(ln for ln in loud.splitlines() if ln.startswith("PASS k.pto @k"))]


@pytest.mark.parametrize("spelling", ["--pto-arch=a5", "--pto-arch a5"])
def test_a_file_without_target_arch_runs_on_its_run_lines_arch(tmp_path, capsys, spelling):
    """ptoas's test files name their arch only in the lit RUN line: an A5 pair (rings in UB,
    no GM slot buffer) runs on A5 from it, statically and in the run, and says so."""
    text = f"// RUN: ptoas {spelling} %s | FileCheck %s\n" + cube_vector_pair(1, "a5").replace(
        ' attributes {pto.target_arch = "a5"}', "", 1)
    f = write(tmp_path, text)
    assert cli_main(["check", "--static", f]) == 0
    assert "on a5 (spec): verified statically" in capsys.readouterr().out
    assert cli_main(["run", f]) == 0
    out = capsys.readouterr().out
    assert "note: platform a5: the file's RUN line's --pto-arch" in out and "@mm on a5 (spec): ran" in out
    assert cli_main(["run", f, "--platform", "a2a3"]) == 1      # A2A3 rings need the GM buffer
    import ptopipe
    assert ptopipe.run_pto(f).summary.platform == "a5"


CORPUS = __import__("pathlib").Path(__file__).resolve().parents[1] / "pto_corpus"


def test_check_json_keeps_stdout_for_the_report(capsys):
    """A kernel's TPRINT output goes to stderr under --json: stdout parses as the report."""
    f = str(CORPUS / "v_tprint_debug_a3.pto")
    assert cli_main(["check", f, "--json"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert [r["failure"] for r in report] == [None] and "TPRINT" in err
    assert cli_main(["check", f, str(CORPUS / "c_mm_bf16_a3.pto"), "--json"]) == 0   # a library
    out, _ = capsys.readouterr()
    assert [r["file"] for r in json.loads(out)] == [f, str(CORPUS / "c_mm_bf16_a3.pto")]


@pytest.mark.parametrize("name,status,rc", [("v_tprint_debug_a3.pto", "nothing to verify", 0),
                                             ("x_c2v_kloop_split2_a3.pto", "verified", 0),
                                             # its trip index as f32 (index_cast + sitofp) in a tadds
                                             ("x_c2v_loop_ring_a3.pto", "verified", 0),
                                             ("x_internal_pipe_a3.pto", "not verified", 1)])
def test_check_static_json_of_a_pto_file(name, status, rc, capsys):
    assert cli_main(["check", "--static", str(CORPUS / name), "--json"]) == rc
    (r,) = json.loads(capsys.readouterr().out)
    assert (r["program"], r["status"], r["findings"]) == (name, status, [])


def test_werror_fails_a_run_that_went_on_after_warnings(tmp_path, capsys):
    """Tiles at explicit addresses that overlap while live: a warning (the device does the
    same), exit 0; with --werror, run and check fail."""
    t = vec_t(16, 16)
    f = write(tmp_path, vector_kernel(f"""    %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %a0 = arith.constant 0 : i64
    %a512 = arith.constant 512 : i64
    %a = pto.alloc_tile addr = %a0 : {t}
    pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%a : {t})
    %b = pto.alloc_tile addr = %a512 : {t}
    pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%b : {t})
    pto.tstore ins(%a : {t}) outs(%yp : !pto.partition_tensor_view<16x16xf32>)
"""))
    for cmd in (["run"], ["check"]):
        assert cli_main(cmd + [f]) == 0
        out, err = capsys.readouterr()
        assert "overlaps" in out + err and "PASS" in out
        assert cli_main(cmd + [f, "--werror"]) == 1
        out, err = capsys.readouterr()
        assert "FAIL" in out and "--werror" in out


def test_check_of_a_pto_the_static_checks_refuse_says_fail_before_the_error(capsys):
    broken = CORPUS.parent / "pto_broken" / "tfree_missing_then_a5.pto"
    assert cli_main(["check", str(broken), "--schedules", "1"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("FAIL tfree_missing_then_a5.pto: CompileError before it ran: the static checks refuse it")
    assert "error: CompileError: " in err


def test_a_negative_constant_size_of_a_tensor_view_is_said_to_be_negative(tmp_path, capsys):
    body = IO.replace("%xv = pto.make_tensor_view %x, shape = [%c16,", "%xv = pto.make_tensor_view %x, shape = [%m16,")
    assert body != IO
    f = write(tmp_path, vector_kernel("    %m16 = arith.constant -16 : index\n" + body + STORE))
    assert cli_main(["run", f]) == 1
    err = capsys.readouterr().err
    assert "negative size" in err and "not known statically" not in err


def test_the_static_checks_refuse_a_negative_tensor_view_size_at_the_view(tmp_path, capsys):
    """A view the run refuses for its negative size fails the static checks at its line too
    (not "nothing to verify")."""
    text = ("module {\n"
            "  func.func @vk(%x: !pto.ptr<f32>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {\n"
            "    %c1 = arith.constant 1 : index\n"
            "    %m = arith.constant -8 : index\n"
            "    %xv = pto.make_tensor_view %x, shape = [%c1, %m], strides = [%c1, %c1] : !pto.tensor_view<?x?xf32>\n"
            "    return\n  }\n}\n")
    f = tmp_path / "neg.pto"
    f.write_text(text)
    assert cli_main(["check", "--static", str(f)]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("FAIL") and "CompileError: the pto.make_tensor_view of %x has a negative size" in err
    assert "neg.pto:5:11" in err


def test_static_check_refuses_a_tile_larger_than_its_memory(tmp_path, capsys):
    f = write(tmp_path, vector_kernel(IO + f"    %big = pto.alloc_tile : {vec_t(1024, 1024)}\n" + STORE))
    assert cli_main(["check", "--static", f]) == 1
    cap = capsys.readouterr()
    assert cap.out.startswith("FAIL") and "%big: a Vec tile of 4,194,304 bytes does not fit UB" in cap.err
    assert cli_main(["check", "--static", write(tmp_path, vector_kernel(IO + STORE), "ok.pto")]) == 0


def test_a_file_setting_its_own_events_says_it_ran_in_the_auto_mode(tmp_path, capsys):
    """ptoas's samples set some events and are built with --enable-insert-sync, so the auto
    mode stays the default; a note now says so, at the file's first event, and how to check
    the file's own events (--sync manual).  Not with --sync given, nor for a file without
    events."""
    events = ("    pto.set_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]\n"
              "    pto.wait_flag[<PIPE_MTE2>, <PIPE_V>, <EVENT_ID0>]\n"
              "    %s = arith.constant 1.0 : f32\n"
              f"    pto.tadds ins(%t, %s : {vec_t(16, 16)}, f32) outs(%t : {vec_t(16, 16)})\n"
              "    pto.set_flag[<PIPE_V>, <PIPE_MTE3>, <EVENT_ID0>]\n"
              "    pto.wait_flag[<PIPE_V>, <PIPE_MTE3>, <EVENT_ID0>]\n")
    text = vector_kernel(IO + events + STORE)
    f = write(tmp_path, text)
    at = f"{f}:{line_of(text, 'pto.set_flag')}:5"
    say = (f"note: {at}: the file orders its pipes with events of its own (pto.set_flag here) but runs in the "
           "auto synchronisation mode, where the simulator's scoreboard orders each core's pipes - as ptoas "
           "builds it with --enable-insert-sync, which adds the events the file lacks; --sync manual checks "
           "that the file's own events order them (as ptoas builds it without --enable-insert-sync)\n")
    assert cli_main(["run", f]) == 0
    assert say in capsys.readouterr().out
    assert cli_main(["check", f, "--schedules", "1"]) == 0
    assert say in capsys.readouterr().err
    for cmd in (["run", f, "--sync", "manual"], ["check", f, "--schedules", "1", "--sync", "auto"],
                ["run", write(tmp_path, vector_kernel(IO + STORE), "plain.pto")]):
        assert cli_main(cmd) == 0
        out, err = capsys.readouterr()
        assert "events of its own" not in out + err


ACC = "!pto.tile_buf<loc=acc, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=col_major, slayout=row_major, fractal=1024, pad=0>"
LEFT = MAT.replace("loc=mat", "loc=left")
RIGHT = MAT.replace("loc=mat", "loc=right").replace("blayout=col_major, slayout=row_major",
                                                    "blayout=row_major, slayout=col_major")
PV = "!pto.partition_tensor_view<16x16xf32>"
#: a kindless function whose Cube section matmuls only under two nested i1 conditions (the
#: form of ptoas's nested-if sync-motion guard): the second TMOV and the TMATMUL are each
#: under their own scf.if
NESTED_GUARD = """module attributes {pto.target_arch = "a3"} {
  func.func @guarded(%a: !pto.ptr<f32>, %b: !pto.ptr<f32>, %out: !pto.ptr<f32>, %cond0: i1, %cond1: i1) {
    pto.section.cube {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c16 = arith.constant 16 : index
""" + "".join(f"""      %{n}v = pto.make_tensor_view %{n}, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
      %{n}p = pto.partition_view %{n}v, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> {PV}
""" for n in ("a", "b", "out")) + f"""      %am = pto.alloc_tile : {MAT}
      %bm = pto.alloc_tile : {MAT}
      %al = pto.alloc_tile : {LEFT}
      %br = pto.alloc_tile : {RIGHT}
      %acc = pto.alloc_tile : {ACC}
      pto.tload ins(%ap : {PV}) outs(%am : {MAT})
      pto.tload ins(%bp : {PV}) outs(%bm : {MAT})
      pto.tmov ins(%bm : {MAT}) outs(%br : {RIGHT})
      scf.if %cond0 {{
        pto.tmov ins(%am : {MAT}) outs(%al : {LEFT})
        scf.if %cond1 {{
          pto.tmatmul ins(%al, %br : {LEFT}, {RIGHT}) outs(%acc : {ACC})
          pto.tstore ins(%acc : {ACC}) outs(%outp : {PV})
        }}
      }}
    }}
    return
  }}
}}
"""


@pytest.mark.parametrize("cond0,cond1", [("true", "true"), ("true", "false"), ("false", "true")])
def test_nested_i1_guards_take_true_and_false_on_the_command_line(tmp_path, capsys, cond0, cond1):
    """``--input c=true`` / ``=false`` give an i1 parameter its value as MLIR spells it; the
    matmul runs only when both nested conditions hold, and nothing else reaches the output."""
    f = write(tmp_path, NESTED_GUARD)
    a, b = X, X.T / 16
    for n, v in (("a", a), ("b", b), ("out", np.zeros_like(X))):
        np.save(tmp_path / f"{n}.npy", v)
    args = ["run", f, *(f"--input={n}={tmp_path / (n + '.npy')}" for n in ("a", "b", "out")),
            f"--input=cond0={cond0}", f"--input=cond1={cond1}", f"--output=out={tmp_path / 'got.npy'}"]
    assert cli_main(args) == 0, capsys.readouterr()
    want = a @ b if (cond0, cond1) == ("true", "true") else np.zeros_like(X)
    np.testing.assert_allclose(np.load(tmp_path / "got.npy").reshape(16, 16), want, rtol=1e-5)
