"""PTO-AS (.pto): every compiled example (examples/mixed, examples/dsl; a2a3 and a5) is
written, read back and, after the platform passes, structurally equal to the compiled
program; the re-read program runs on the simulated cluster (both platforms, both
protocols) and matches numpy; hand-written files in tests/pto run and match numpy."""
import importlib.util
import os
import pathlib
import re
import subprocess

import numpy as np
import pytest

import ptopipe  # noqa: F401  (installs the mixed compiler)
import ptopipe.language as pl
from ptopipe.driver.programs import programs_of
from ptopipe.driver.pto import make_inputs
from ptopipe.codegen.pto_load import PTO_PASSES, load_pto
from ptopipe.codegen import read_pto, write_pto
from ptopipe.errors import CompileError, ParseError
from ptopipe.ir import first_difference, structural_equal
from ptopipe.isa.launch import compare_launches
from ptopipe.isa.scenario import data_rng
from ptopipe.passes import PassManager, compile_program
from ptopipe.passes.manager import PassContext
from ptopipe.runtime import run
from configs import rotated
from markers import line_of

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted(str(p.relative_to(ROOT)) for d in ("mixed", "dsl")
                  for p in (ROOT / "examples" / d).glob("*.py"))


def _load(rel):
    spec = importlib.util.spec_from_file_location("pto_" + rel.replace("/", "_")[:-3], ROOT / rel)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


MODS = {rel: _load(rel) for rel in EXAMPLES}


def _program(mod, variant="default"):
    sc = mod.SCENARIO
    params = sc.params(variant)
    args = sc.make_args(data_rng(0), **params)
    return mod.KERNELS.source(**{p: args[p] for p in mod.KERNELS.params}), args, sc.golden(args, **params)


def _reread(op, platform, protocol="spec"):
    back = read_pto(write_pto(op), "k.pto")
    return PassManager(list(PTO_PASSES)).run(back, PassContext(platform=platform, protocol=protocol))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("rel", EXAMPLES)
def test_round_trip_is_structurally_equal(rel, platform):
    prog = programs_of(MODS[rel])[0]
    op = compile_program(prog, platform)
    back = _reread(op, platform)
    assert structural_equal(op, back), first_difference(op, back)


@pytest.mark.parametrize("rel,platform,protocol", rotated([(r,) for r in EXAMPLES if hasattr(MODS[r], "KERNELS")]))
def test_reread_program_matches_numpy(rel, platform, protocol):
    mod = MODS[rel]
    prog, args, expected = _program(mod)
    op = compile_program(prog, platform, protocol=protocol)
    back = _reread(op, platform, protocol)
    sc = mod.SCENARIO
    kw = {"sync": sc.sync} if sc.sync else {}
    res = run(back, args, platform=platform, protocol=protocol, **kw)
    compare_launches(res, expected, sc.rtol, sc.atol, rel)


def test_a_wrong_result_is_caught():
    """The comparison above fails on a program whose re-read text computes something else."""
    mod = MODS["examples/mixed/s1_cv_split.py"]
    prog, args, expected = _program(mod)
    text = write_pto(compile_program(prog, "a2a3")).replace("pto.tadd ins", "pto.tsub ins")
    back = PassManager(list(PTO_PASSES)).run(read_pto(text, "k.pto"), PassContext(platform="a2a3"))
    res = run(back, args, platform="a2a3")
    assert not np.allclose(res.outputs["out"], expected["out"])


def test_written_text_spelling():
    op = compile_program(_program(MODS["examples/mixed/s4_both_ways.py"])[0], "a5")
    text = write_pto(op)
    assert 'module @' in text and 'pto.target_arch = "a5"' in text
    assert "attributes {pto.kernel_kind = #pto.kernel_kind<cube>}" in text
    assert "attributes {pto.entry}" in text and "func.call @" in text
    # a ring ptoas's frontend builds as it is (SlotNum 4 both ways, FlagID 0): its spelling,
    # with the IR's LocalSlotNum (unused by an A5 consumer-local ring) for ptopipe only
    # (SLOT_SIZE: each Vector core's 8x128 f32 part of the 16x128 Acc - an A5 C2V slot in UB
    # holds one part; the V2C tiles are no larger)
    assert "pto.aic_initialize_pipe {dir_mask = 3, slot_size = 4096} (" in text
    assert "c2v_consumer_buf = %c2v_peer : i32, v2c_consumer_buf = %v2c_buf : i32) " \
           "{ptopipe.local_slot_num = 4}\n" in text
    # ptoas places the ring (level2); ptopipe's placement goes along for the reader
    assert re.search(r"location = #pto\.address_space<mat>, auto = true\} \{ptopipe\.base = \d+\} -> i32", text)
    assert "pto.tpush_to_aiv(%acc : !pto.tile_buf<loc=acc, dtype=f32, rows=16, cols=128, v_row=16, " \
           "v_col=128, blayout=col_major, slayout=row_major, fractal=1024, pad=0>) {split = 1}" in text
    assert "pto.tpop_from_aiv {split = 1} -> !pto.tile_buf<loc=mat" in text
    assert "scf.for %" in text
    assert "pto.tfree_from_aiv {split = 1}" in text          # InsertTfree's split=None, spelled out
    s1 = write_pto(compile_program(_program(MODS["examples/mixed/s1_cv_split.py"])[0], "a2a3"))
    assert "%sub_i64 = pto.get_subblock_idx\n    %sub = arith.index_cast %sub_i64 : i64 to index" in s1
    # SlotNum 4 one way is not the frontend's 8: the lower-level init, in GM on A2A3, staging
    # the one popped tile the Vector core holds at a time (LocalSlotNum 1)
    assert "%pipe = pto.initialize_l2g2l_pipe {dir_mask = 1, slot_size = 2048, slot_num = 4, " \
           "local_slot_num = 1, flag_base = 0} (%gm_slot_buffer : !pto.ptr<ui8>, %c2v_peer : i32) " \
           "-> !pto.pipe" in s1 and 'pto.target_arch = "a3"' in s1
    assert "pto.tpop(%part, %pipe : !pto.tile_buf<loc=vec" in s1 and "pto.tfree(%pipe : !pto.pipe) {split = 1}" in s1
    s2 = write_pto(compile_program(_program(MODS["examples/mixed/s2_cv_nosplit.py"])[0], "a5"))
    assert s2.count(", nosplit = true} (") == 2 and "ptopipe.split" not in s2


def _inputs(op):
    args = make_inputs(op, [], zero_fill=True)
    rng = np.random.default_rng(1)
    for k, v in args.items():
        if k != "out" and not k.startswith("gm_slot"):
            args[k] = rng.integers(-3, 4, v.shape).astype(v.dtype)
    return args


FILES = {"c2v_split_a3.pto": lambda a: a["a"] @ a["b"] + a["bias"],
         "both_ways_a5.pto": lambda a: a["x"] @ a["b"],
         "interleaved_dyn_a5.pto": lambda a: np.concatenate(
             [(a["a"][32 * i:32 * i + 16] + a["a"][32 * i + 16:32 * i + 32]) @ a["b"] for i in range(2)]),
         "lowlevel_a3.pto": lambda a: a["a"] @ a["b"] + a["bias"],
         "accumulate_a3.pto": lambda a: a["a"] @ a["b"],
         "nosplit_c2v_a5.pto": lambda a: a["a"] @ a["b"] + a["bias"],
         "lowlevel_slotid_a3.pto": lambda a: a["a"] @ a["b"] + a["bias"],
         "if_else_read_a3.pto": lambda a: a["a"][:16] @ a["b"] + a["a"][16:] @ a["b"],
         "unused_ptr_param_a5.pto": lambda a: a["x1"] @ a["x2"]}
RUNS = [(f, plat, proto) for f in FILES for plat in ("a2a3", "a5") for proto in ("spec", "pto-isa")]


@pytest.mark.parametrize("name,platform,protocol", RUNS)
def test_hand_written_pto_matches_numpy(name, platform, protocol):
    path = str(ROOT / "tests" / "pto" / name)
    op, _, plat = load_pto(path, platform, protocol)
    args = _inputs(op)
    res = run(op, args, platform=plat, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], FILES[name](args))


def test_accumulator_buffer_is_carried_through_the_loop():
    """accumulate_a3.pto's %acc (read by tmatmul.acc before the body writes it) becomes an
    iter_arg of the pl.for; the push after the loop sends the loop's result."""
    from ptopipe.codegen import read_pto
    op = read_pto((ROOT / "tests" / "pto" / "accumulate_a3.pto").read_text(), "acc.pto")
    cube = next(f for f in op.regions[0].blocks[0] if f.attributes["sym_name"] == "cube")
    loop = next(o for o in cube.walk() if o.name == "pl.for")
    assert len(loop.operands) == 4 and len(loop.results) == 1
    assert loop.operands[3].owner.name == "pl.matmul"
    push = next(o for o in cube.walk() if o.name == "pl.tpush")
    assert push.operands[0] is loop.results[0]
    body = loop.regions[0].blocks[0]
    acc_op = next(o for o in body if o.name == "pl.matmul_acc")
    assert acc_op.operands[0] is body.args[1] and body.last.operands[0] is acc_op.results[0]


def test_nosplit_pipe_is_a_no_split_vector_kernel():
    """``nosplit = true`` makes the Vector kernel ptopipe's TILE_NO_SPLIT kernel (whole tiles
    on AIV0); on A5 its pipes get lanes=1 under either protocol model (AIV1 runs nothing: ptoas
    guards the pipe ops with get_subblockid() == 0)."""
    from ptopipe.arch.vocab import TileSplitAxis
    path = str(ROOT / "tests" / "pto" / "nosplit_c2v_a5.pto")
    for proto, lanes in (("spec", 1), ("pto-isa", 1)):
        op = load_pto(path, "a5", proto)[0]
        vec = next(f for f in op.regions[0].blocks[0] if f.attributes["sym_name"] == "vector")
        assert vec.attributes["split"] is TileSplitAxis.TILE_NO_SPLIT
        assert {o.attributes["lanes"] for o in op.walk() if o.name.endswith("initialize_pipe")} == {lanes}


def test_a_pipe_mixing_whole_and_split_tiles_is_refused_at_the_later_op():
    """both_ways_a5.pto with the Cube's C2V push made TILE_NO_SPLIT (split = 0) beside its
    split V2C pop: one logical pipe is no-split or split for its whole life (pto-isa's
    TPipe<..., IsNoSplit>; ptoas: "cannot mix 'split = 0' with 'split = 1' ..."), so both
    readers refuse the file at that push, naming the pop."""
    text = (ROOT / "tests" / "pto" / "both_ways_a5.pto").read_text()
    push = "pto.tpush_to_aiv(%acc : !pto.tile_buf<acc, 16x16xf32, blayout=col_major, slayout=row_major, " \
           "fractal=1024>) {split = 1}"
    assert push in text
    mixed = text.replace(push, push.replace("{split = 1}", "{split = 0}"))
    line = next(i for i, l in enumerate(mixed.splitlines(), 1) if "pto.tpush_to_aiv" in l)
    pop = next(i for i, l in enumerate(mixed.splitlines(), 1) if "pto.tpop_from_aiv" in l)
    from ptopipe.codegen import read_pto
    from ptopipe.codegen.pto_exec import run_pto
    for read in (lambda: load_pto("<pto>", "a5", "spec", text=mixed), lambda: read_pto(mixed, "k.pto"),
                 lambda: run_pto(text=mixed)):
        with pytest.raises(ParseError) as e:
            read()
        assert f":{line}:" in e.value.where, e.value.where
        assert f"pto.tpop_from_aiv {{split = 1}} at line {pop}" in e.value.what
        assert "cannot mix 'split = 0' with 'split = 1'" in e.value.what


def test_buffer_written_in_an_if_is_a_result_of_the_if():
    """c2v_split_a3.pto with ``scf.if %is0 { pto.tmuls ins(%o, %two) outs(%o) }`` before the
    store: %o after the if is the pl.if's result (AIV0's rows doubled)."""
    V = ("!pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=16, v_row=8, v_col=16, blayout=row_major, "
         "slayout=none_box, fractal=512, pad=0>")
    text = (ROOT / "tests" / "pto" / "c2v_split_a3.pto").read_text()
    store = f"      pto.tstore ins(%o : {V})"
    assert store in text
    text = text.replace(store, "      %is0 = arith.cmpi eq, %sub, %c0 : index\n"
                               "      %two = arith.constant 2.0 : f32\n"
                               f"      scf.if %is0 {{\n        pto.tmuls ins(%o, %two : {V}, f32) outs(%o : {V})\n      }}\n"
                        + store)
    for platform in ("a2a3", "a5"):
        op, _, plat = load_pto("if.pto", platform, "spec", text=text)
        iff = next(o for o in op.walk() if o.name == "pl.if")
        assert len(iff.results) == 1 and iff.regions[1].blocks[0].last.operands[0].owner.name == "pl.add"
        args = _inputs(op)
        res = run(op, args, platform=plat)
        want = args["a"] @ args["b"] + args["bias"]
        for i in range(2):
            want[16 * i:16 * i + 8] *= 2
        np.testing.assert_array_equal(res.outputs["out"], want)


def test_a_pipes_flag_id_round_trips_as_flag_base():
    """AllocateFlags' flag_id: ptoas's frontend init fixes FlagID 0, so a pipe on another
    flag is written as the lower-level init with its ``flag_base``, and read back."""
    from ptopipe.passes.util import functions, init_ops
    op = compile_program(_program(MODS["examples/mixed/s4_both_ways.py"])[0], "a5")
    for f in functions(op):
        for init in init_ops(f):
            init.attributes["flag_id"] = 2
    text = write_pto(op)
    assert text.count("= pto.initialize_l2l_pipe {dir_mask = 3, slot_size = 4096, slot_num = 4, "
                      "flag_base = 2} (") == 2
    back = read_pto(text, "k.pto")
    assert [i.attributes["flag_id"] for f in functions(back) for i in init_ops(f)] == [2, 2]


def test_unused_pointer_parameters_are_accepted():
    """ptoas accepts a pointer parameter nothing uses: c2v_split_a3.pto's cube gets an unused
    ``%w: !pto.ptr<f16>`` (a placeholder 1-element tensor) and its vector an unused ``%a``
    (the entry's %a: the type the cube gives it); the kernel still matches numpy."""
    from ptopipe.ir.types import TensorType
    text = (ROOT / "tests" / "pto" / "c2v_split_a3.pto").read_text()
    P = "!pto.ptr<f32>"
    for old, new in (
            (f"%gm_slot_buffer: {P}) attributes {{pto.entry}}", f"%gm_slot_buffer: {P}, %w: !pto.ptr<f16>) attributes {{pto.entry}}"),
            ("func.call @cube(%a, %b, %gm_slot_buffer) : (", "func.call @cube(%a, %b, %gm_slot_buffer, %w) : ("),
            (f"{P}, {P}, {P}) -> ()\n    func.call @vector", f"{P}, {P}, {P}, !pto.ptr<f16>) -> ()\n    func.call @vector"),
            ("func.call @vector(%bias, %out, %gm_slot_buffer) : (", "func.call @vector(%bias, %out, %gm_slot_buffer, %a) : ("),
            (f"{P}, {P}, {P}) -> ()\n    return", f"{P}, {P}, {P}, {P}) -> ()\n    return"),
            (f"@cube(%a: {P}, %b: {P}, %gm_slot_buffer: {P})", f"@cube(%a: {P}, %b: {P}, %gm_slot_buffer: {P}, %w: !pto.ptr<f16>)"),
            (f"%gm_slot_buffer: {P}) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}}",
             f"%gm_slot_buffer: {P}, %a: {P}) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}}")):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    op = read_pto(text, "u.pto")
    params = {f.attributes["sym_name"]: f.regions[0].blocks[0].args for f in op.regions[0].blocks[0]}
    assert params["cube"][3].type == TensorType((1,), "f16") == params["entry"][5].type
    assert params["vector"][3].type == params["cube"][0].type == params["entry"][0].type == TensorType((32, 16), "f32")
    for platform in ("a2a3", "a5"):
        op, _, plat = load_pto("u.pto", platform, "spec", text=text)
        args = _inputs(op)
        res = run(op, args, platform=plat)
        np.testing.assert_array_equal(res.outputs["out"], args["a"] @ args["b"] + args["bias"])


def _ptoas_spellings(text):
    """c2v_split_a3.pto in other spellings ptoas accepts: partition_view with no ``->`` result
    type, integer attributes typed ``: i32``, and the AIV row offset by ``arith.select``."""
    import re
    text, n = re.subn(r"(pto\.partition_view .*) -> !pto\.partition_tensor_view<[^>]*>", r"\1", text)
    assert n == 4
    for old, new in (("{dir_mask = 1, slot_size = 1024, slot_num = 4}", "{dir_mask = 1 : i32, slot_size = 1024 : i32, slot_num = 4 : i64}"),
                     ("      %r1 = arith.muli %sub, %c8 : index\n",
                      "      %is1 = arith.cmpi eq, %sub, %c1 : index\n      %r1 = arith.select %is1, %c8, %c0 : index\n")):
        assert old in text, old
        text = text.replace(old, new)
    return text


def test_ptoas_spellings_partition_view_without_result_type_typed_attrs_select():
    """The spellings of :func:`_ptoas_spellings` read as the plain file does (select as a
    pl.if yielding one of its operands) and the kernel matches numpy."""
    text = _ptoas_spellings((ROOT / "tests" / "pto" / "c2v_split_a3.pto").read_text())
    op = read_pto(text, "s.pto")
    vec = next(f for f in op.regions[0].blocks[0] if f.attributes["sym_name"] == "vector")
    sel = next(o for o in vec.walk() if o.name == "pl.if")
    assert [b.last.operands[0].owner.attributes["value"] for r in sel.regions for b in r.blocks] == [8, 0]
    assert {i.attributes["slot_num"] for i in op.walk() if i.name.endswith("initialize_pipe")} == {4}
    for platform in ("a2a3", "a5"):
        for protocol in ("spec", "pto-isa"):
            op, _, plat = load_pto("s.pto", platform, protocol, text=text)
            args = _inputs(op)
            res = run(op, args, platform=plat, protocol=protocol)
            np.testing.assert_array_equal(res.outputs["out"], args["a"] @ args["b"] + args["bias"])


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_pto_written_for_another_platform_reads_back_and_runs(name, platform, tmp_path):
    """`compile k_a5.pto --emit pto --platform a2a3` gives the kernels a gm_slot_buffer
    parameter; the entry's func.calls must pass it (ptopipe reads its own
    output), and the written file runs to the same numbers (under the spec protocol, which the
    file is read back and run with)."""
    from ptopipe.cli import main as cli_main
    out = tmp_path / "k.pto"
    assert cli_main(["compile", str(ROOT / "tests" / "pto" / name), "--emit", "pto", "--protocol", "spec",
                     "--platform", platform, "-o", str(out)]) == 0
    op, _, plat = load_pto(str(out), platform, "spec")
    args = _inputs(op)
    res = run(op, args, platform=plat, protocol="spec")
    np.testing.assert_array_equal(res.outputs["out"], FILES[name](args))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_an_i32_trip_count_cast_to_index(platform, protocol, tmp_path):
    """`arith.index_cast %n : i32 to index` of an i32 kernel parameter (ptoas's spelling of a
    runtime trip count) was a ParseError.  It runs n iterations, and the .pto
    ptopipe writes casts the i32 again before the scf.for (bounds are index).  On A5 under
    pto-isa its Vector TSTOREs the popped tile right before the tfree, which signals from
    PIPE_V: with a trip count past SLOT_NUM the Cube's push races the store, so the static
    verifier refuses it at the tfree, naming the events (ptoas places none there)."""
    path = str(ROOT / "tests" / "pto" / "i32_trip_count_a3.pto")
    if (platform, protocol) == ("a5", "pto-isa"):
        with pytest.raises(CompileError) as ei:
            load_pto(path, platform, protocol)
        assert ei.value.where == f"{path}:60:7", ei.value
        assert "pto.set_flag[#pto.pipe<PIPE_MTE3>, #pto.pipe<PIPE_V>, #pto.event<EVENT_ID0>]" in ei.value.fix
        return
    op, _, plat = load_pto(path, platform, protocol)
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (64, 16)).astype(np.float16)
    b = rng.integers(-3, 4, (16, 16)).astype(np.float16)
    np.save(tmp_path / "n.npy", np.int32(3))
    args = make_inputs(op, [f"n={tmp_path / 'n.npy'}"], zero_fill=True)
    args.update(a=a, b=b)
    res = run(op, args, platform=plat, protocol=protocol)
    want = np.zeros((64, 16), np.float32)
    want[:48] = a[:48].astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_array_equal(res.outputs["out"], want)
    text = write_pto(op)
    assert text.count("%n_idx = arith.index_cast %n : i32 to index\n    scf.for %i = %c0 to %n_idx") == 2
    op2, _, _ = load_pto("back.pto", platform, protocol, text=text)
    res2 = run(op2, dict(args, out=np.zeros_like(want)), platform=plat, protocol=protocol)
    np.testing.assert_array_equal(res2.outputs["out"], want)


def test_the_events_the_refusal_names_order_the_store_before_the_tfree(tmp_path):
    """The i32 trip-count file with the events the A5 pto-isa refusal names before its tfree:
    verified statically (for any trip count) and run clean in check's causal order, against
    numpy."""
    path = ROOT / "tests" / "pto" / "i32_trip_count_a3.pto"
    ev = "[#pto.pipe<PIPE_MTE3>, #pto.pipe<PIPE_V>, #pto.event<EVENT_ID0>]"
    text = path.read_text().replace("      pto.tfree_from_aic {split = 1}\n",
                                    f"      pto.set_flag{ev}\n      pto.wait_flag{ev}\n"
                                    "      pto.tfree_from_aic {split = 1}\n")
    assert text.count("pto.wait_flag") == 1
    op, _, plat = load_pto("events.pto", "a5", "pto-isa", text=text)
    rng = np.random.default_rng(4)
    a = rng.integers(-3, 4, (64, 16)).astype(np.float16)
    b = rng.integers(-3, 4, (16, 16)).astype(np.float16)
    np.save(tmp_path / "n.npy", np.int32(4))
    args = make_inputs(op, [f"n={tmp_path / 'n.npy'}"], zero_fill=True)
    args.update(a=a, b=b)
    res = run(op, args, platform=plat, protocol="pto-isa", causal=True)
    np.testing.assert_array_equal(res.outputs["out"], a.astype(np.float32) @ b.astype(np.float32))


def test_with_slot_buffer_makes_the_declared_element_type():
    """A .pto whose gm_slot_buffer is !pto.ptr<f32>: with_slot_buffer (what the A2A3 warning
    recommends) gave a uint8 buffer, which the kernel then rejected."""
    from ptopipe.passes.slot_buffer import gm_slot_bytes, with_slot_buffer
    op, _, plat = load_pto(str(ROOT / "tests" / "pto" / "i32_trip_count_a3.pto"), "a2a3")
    args = with_slot_buffer(op, {})
    buf = args["gm_slot_buffer"]
    assert buf.dtype == np.float32 and buf.nbytes == gm_slot_bytes(op) > 0
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 4, (64, 16)).astype(np.float16)
    b = rng.integers(-3, 4, (16, 16)).astype(np.float16)
    res = run(op, dict(args, a=a, b=b, n=2, out=np.zeros((64, 16), np.float32)), platform=plat)
    want = np.zeros((64, 16), np.float32)
    want[:32] = a[:32].astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_array_equal(res.outputs["out"], want)


@pytest.mark.parametrize("rel,platform,protocol", rotated(
    [(r,) for r in reversed(EXAMPLES) if hasattr(MODS[r], "KERNELS")]))   # (other pairs than above)
def test_written_pto_runs_as_written_and_matches_numpy(rel, platform, protocol):
    """The written text run with buffer semantics (as ptoas's C++ runs on the device), not
    re-read into the IR: a two-lane TILE_NO_SPLIT AIV kernel's data ops are guarded to AIV0,
    else AIV1 stores whatever its TPOP left in the tile over AIV0's result."""
    prog, args, expected = _program(MODS[rel])
    op = compile_program(prog, platform, protocol=protocol)
    inputs = {a.name: args[a.name] for f in op.regions[0].blocks[0] for a in f.regions[0].blocks[0].args
              if a.name in args}
    res = ptopipe.run_pto(text=write_pto(op, platform), inputs=inputs, platform=platform,
                          protocol=protocol)
    assert res.warnings == []
    for k, want in expected.items():
        np.testing.assert_allclose(res.outputs[k], want, rtol=1e-5, atol=1e-5, err_msg=k)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_written_address_flow_pto_runs_and_matches_numpy(platform):
    """The address flow as ptopipe writes it (``pto.talloc_to_aiv``, a TPUSH / TPOP / TFREE of
    the slot's ``!pto.tensor_view``, the ring asked for in GM with dir_mask 5): the run reads
    it back and matches the golden (ptoas has no such ops: the writer's note says so)."""
    mod = MODS["examples/dsl/s5_subtile_gm.py"]
    sc = mod.SCENARIO
    args = sc.make_args(data_rng(0))
    text = write_pto(compile_program(mod.PROGRAM, platform), platform)
    assert "pto.talloc_to_aiv" in text and "-> !pto.tensor_view<64x512xf32>" in text
    inputs = {k: v for k, v in args.items() if isinstance(v, np.ndarray)}
    res = ptopipe.run_pto(text=text, inputs=inputs, platform=platform)
    for k, want in sc.golden(args).items():
        np.testing.assert_allclose(res.outputs[k], want, rtol=sc.rtol, atol=sc.atol, err_msg=k)


_R, _C, _DEPTH = 32, 32, 4
_SLOT = _R * _C * 4


@pl.aiv
def _two_rings_vector(out0: pl.Tensor[[_R, _C], pl.f32], out1: pl.Tensor[[_R, _C], pl.f32],
                      fifo0: pl.Tensor[[_DEPTH * _SLOT], pl.u8], fifo1: pl.Tensor[[_DEPTH * _SLOT], pl.u8]):
    b0 = pl.reserve_buffer(name="c2v_buf0", size=4096, base=pl.AUTO)
    b1 = pl.reserve_buffer(name="c2v_buf1", size=4096, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V_GM, _SLOT, fifo0, c2v_consumer_buf=b0.base, v2c_consumer_buf=0,
                           slot_num=_DEPTH, id=0)
    pl.aiv_initialize_pipe(pl.DIR_C2V_GM, _SLOT, fifo1, c2v_consumer_buf=b1.base, v2c_consumer_buf=0,
                           slot_num=_DEPTH, id=1)
    sub = pl.get_subblockid()
    h1 = pl.TPOP(b1, pl.Tensor[[_R // 2, _C], pl.f32], split=pl.TILE_UP_DOWN)      # ring 1 first
    pl.store(pl.load(h1, [0, 0], [_R // 2, _C]), [sub * (_R // 2), 0], out1)
    pl.TFREE(b1, h1)
    h0 = pl.TPOP(b0, pl.Tensor[[_R // 2, _C], pl.f32], split=pl.TILE_UP_DOWN)
    pl.store(pl.load(h0, [0, 0], [_R // 2, _C]), [sub * (_R // 2), 0], out0)
    pl.TFREE(b0, h0)


@pl.aic
def _two_rings_cube(a: pl.Tensor[[_R, _C], pl.f32], b: pl.Tensor[[_R, _C], pl.f32],
                    fifo0: pl.Tensor[[_DEPTH * _SLOT], pl.u8], fifo1: pl.Tensor[[_DEPTH * _SLOT], pl.u8]):
    p0 = pl.import_peer_buffer(name="c2v_buf0", peer_func=_two_rings_vector)
    p1 = pl.import_peer_buffer(name="c2v_buf1", peer_func=_two_rings_vector)
    pl.aic_initialize_pipe(pl.DIR_C2V_GM, _SLOT, fifo0, c2v_consumer_buf=p0.base, v2c_consumer_buf=0,
                           slot_num=_DEPTH, id=0)
    pl.aic_initialize_pipe(pl.DIR_C2V_GM, _SLOT, fifo1, c2v_consumer_buf=p1.base, v2c_consumer_buf=0,
                           slot_num=_DEPTH, id=1)
    s0 = pl.TALLOC(p0, pl.Tensor[[_R, _C], pl.f32], split=pl.TILE_UP_DOWN)
    pl.store(pl.load(a, [0, 0], [_R, _C], space=pl.Mat), [0, 0], s0)
    pl.TPUSH(s0, p0)
    s1 = pl.TALLOC(p1, pl.Tensor[[_R, _C], pl.f32], split=pl.TILE_UP_DOWN)
    pl.store(pl.load(b, [0, 0], [_R, _C], space=pl.Mat), [0, 0], s1)
    pl.TPUSH(s1, p1)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_address_flow_ops_of_two_rings_of_a_direction_name_their_ring(platform):
    """Two GM rings of one direction, the address flow on each (ops without a pipe handle):
    the writer names the second ring ``id = 1`` on each op, both readers take the k-th
    lower-level ring of a direction as id k, and the run pops each ring's own tiles."""
    prog = pl.program(_two_rings_cube, _two_rings_vector, name="two_rings")
    text = write_pto(compile_program(prog, platform), platform)
    assert re.search(r"pto\.talloc_to_aiv \{split = 1, id = 1\}", text) and "pto.tfree_from_aic(" in text
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, _R, _C)).astype(np.float32)
    fifo = np.zeros(_DEPTH * _SLOT, np.uint8)
    res = ptopipe.run_pto(text=text, platform=platform, inputs=dict(
        a=a, b=b, out0=np.zeros_like(a), out1=np.zeros_like(b), fifo0=fifo, fifo1=fifo.copy()))
    np.testing.assert_array_equal(res.outputs["out0"], a)
    np.testing.assert_array_equal(res.outputs["out1"], b)


def test_two_lane_no_split_data_ops_are_guarded_to_aiv0():
    text = write_pto(compile_program(_program(MODS["examples/mixed/s2_cv_nosplit.py"])[0], "a2a3"),
                     "a2a3")
    aiv = text[text.index("@s2_aiv"):text.index("func.func @s2(")]
    assert re.search(r"(%\w+) = arith.cmpi eq, %sub_i64, %c0_i64 \{ptopipe.data_lane\} : i64", aiv)
    guarded = re.findall(r"scf.if %data_lane \{\n\s+(?:%\w+ = pto.partition_view .*\n\s+)?(pto\.\w+)", aiv)
    assert guarded == ["pto.tload", "pto.tadd", "pto.tstore"]
    assert "data_lane" not in text[:text.index("@s2_aiv")]          # not the Cube kernel


@pl.aic
def _idle():
    pass


@pl.aiv
def _manual(x: pl.Tensor[[32, 16], pl.f32], out: pl.Tensor[[32, 16], pl.f32]):
    a = pl.load(x, [0, 0], [16, 16])
    pl.record_event(pl.PIPE_MTE2, pl.PIPE_V, pl.EVENT_ID0)
    pl.wait_event(pl.PIPE_MTE2, pl.PIPE_V, pl.EVENT_ID0)
    b = pl.muls(a, 2.0)
    pl.record_event(pl.PIPE_V, pl.PIPE_MTE3, pl.EVENT_ID0)
    pl.wait_event(pl.PIPE_V, pl.PIPE_MTE3, pl.EVENT_ID0)
    pl.store(b, [0, 0], out)
    c = pl.load(x, [16, 0], [16, 16])       # a is dead, but no V -> MTE2 event orders a reuse
    pl.record_event(pl.PIPE_MTE2, pl.PIPE_MTE3, pl.EVENT_ID1)
    pl.wait_event(pl.PIPE_MTE2, pl.PIPE_MTE3, pl.EVENT_ID1)
    pl.store(c, [16, 0], out)


def test_manual_sync_program_keeps_the_allocators_addresses():
    """A program ordering its pipes with events was synchronised for the tiles the allocator
    kept apart: its .pto places every tile there (level3's ``alloc_tile addr``, a fixed ring
    base), so the run of the file does not put c in a's bytes and race the TLOAD with TMULS."""
    op = compile_program(pl.program(_idle, _manual, name="m"), "a2a3")
    text = write_pto(op)
    x = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
    res = ptopipe.run_pto(text=text, inputs=dict(x=x, out=np.zeros_like(x)), sync="manual")
    np.testing.assert_array_equal(res.outputs["out"], np.concatenate([x[:16] * 2, x[16:]]))
    assert text.startswith("// ptoas --pto-level=level3")
    addrs = dict(re.findall(r"%(\w+) = pto.alloc_tile addr = %c(\d+)_i64 :", text))
    assert sorted(addrs) == ["a", "b", "c"] and len(set(addrs.values())) == 3
    # the rings too: at the base the allocator left them, which the run takes
    s8 = write_pto(compile_program(_program(MODS["examples/dsl/s8_manual_sync.py"])[0], "a2a3"))
    assert re.search(r'reserve_buffer \{name = "c2v_slot_buffer", size = 8192, location = '
                     r'#pto.address_space<vec>, auto = false, base = \d+\}', s8)


@pl.aic
def _barrier_only():
    pl.barrier(pl.PIPE_ALL)


@pl.aiv
def _carry(x: pl.Tensor[[32, 16], pl.f32], out: pl.Tensor[[32, 16], pl.f32]):
    acc = pl.load(x, [0, 0], [16, 16])
    for i, (s,) in pl.range(2, init_values=(acc,)):
        t = pl.load(x, [16, 0], [16, 16])
        s2 = pl.yield_(pl.add(s, t))
    pl.store(s2, [0, 0], out)


def test_a_placed_programs_carry_buffer_goes_above_the_allocators_tiles():
    """In a program with events the file is level3 throughout: the buffer the writer gives a
    tile a kernel without events carries has no allocator address, and goes above all of them."""
    from ptopipe.ir.layout import read_layout
    op = compile_program(pl.program(_barrier_only, _carry, name="c"), "a2a3")
    text = write_pto(op)
    addrs = dict(re.findall(r"%(\w+) = pto.alloc_tile addr = %c(\d+)_i64 :", text))
    f = next(f for f in op.body if f.sym_name == "_carry")
    assert int(addrs["s"]) >= read_layout(f).peak["UB"] > int(addrs["t"])
    x = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
    res = ptopipe.run_pto(text=text, inputs=dict(x=x, out=np.zeros_like(x)))
    np.testing.assert_array_equal(res.outputs["out"][:16], x[:16] + 2 * x[16:])


@pl.aiv
def _manual_carry(x: pl.Tensor[[32, 16], pl.f32], out: pl.Tensor[[32, 16], pl.f32]):
    acc = pl.load(x, [0, 0], [16, 16])
    pl.record_event(pl.PIPE_MTE2, pl.PIPE_V, pl.EVENT_ID0)
    pl.wait_event(pl.PIPE_MTE2, pl.PIPE_V, pl.EVENT_ID0)
    for i, (s,) in pl.range(2, init_values=(acc,)):     # <- carried
        s2 = pl.yield_(pl.muls(s, 2.0))
    pl.record_event(pl.PIPE_V, pl.PIPE_MTE3, pl.EVENT_ID0)
    pl.wait_event(pl.PIPE_V, pl.PIPE_MTE3, pl.EVENT_ID0)
    pl.store(s2, [0, 0], out)


def test_manual_sync_tile_the_file_cannot_place_is_refused_at_its_line():
    """A tile a loop carries lives in a .pto buffer of the writer's, moved in by a pto.tmov no
    event of the kernel orders: refused, at the DSL line, rather than written to race."""
    op = compile_program(pl.program(_idle, _manual_carry, name="mc"), "a2a3")
    with pytest.raises(CompileError) as e:
        write_pto(op)
    assert "tile 's' a loop carries in '_manual_carry'" in e.value.what and "pl.record_event" in e.value.what
    assert e.value.where.split(":")[-2] == str(line_of(_manual_carry.pyfunc, "<- carried"))


def test_the_value_ir_reads_ptoas_op_type_events_and_barrier_sync():
    """ptoas's ``pto.record_event / wait_event [op type, op type, event]`` and
    ``pto.barrier_sync[<op type>]`` are the IR's events and barrier on the pipes those op types
    run on (PTOAS mapSyncOpTypeToPipe): the static checks read such a file instead of skipping it."""
    from ptopipe.ir.opdefs import Barrier, RecordEvent, WaitEvent
    op = read_pto((ROOT / "tests" / "pto_corpus" / "v_record_wait_event_a5.pto").read_text(), "ev.pto")
    events = [(o.name, o.src.value, o.dst.value) for o in op.walk() if o.is_a(RecordEvent, WaitEvent)]
    rec, wait = RecordEvent.name, WaitEvent.name
    assert events[:4] == [(rec, "PIPE_MTE2", "PIPE_V"), (rec, "PIPE_MTE2", "PIPE_V"),
                          (wait, "PIPE_MTE2", "PIPE_V"), (wait, "PIPE_MTE2", "PIPE_V")]
    assert (rec, "PIPE_V", "PIPE_MTE3") in events
    assert [o.pipe.value for o in op.walk() if o.is_a(Barrier)] == ["PIPE_V"]


@pl.aic
def _idle_narrow(x: pl.Tensor[[4, 8], pl.f32]):
    pass


@pl.aiv
def _narrow_tiles(x: pl.Tensor[[4, 8], pl.f32], s: pl.Tensor[[4, 1], pl.f32], y: pl.Tensor[[4, 8], pl.f32]):
    if pl.get_subblockid() == 0:
        a = pl.load(x, [0, 0], [4, 8])
        pl.store(pl.row_sum(a), [0, 0], s)
        pl.store(pl.select(pl.cmp(a, pl.mul(a, a), pl.CMP_GE), a, pl.neg(a)), [0, 0], y)


def test_narrow_tiles_are_declared_in_pto_isas_padded_shape_with_their_valid_shape():
    """A tile narrower than pto-isa's Tile takes (a [4, 1] f32 row sum, its [4, 1] ui8 compare
    mask) is written as the C++ writer declares it: rows / cols padded to whole 32-byte columns,
    the data's shape as v_row / v_col; it reads back to the same program and runs as written."""
    from ptopipe.arch.vocab import TileLayout, tile_shape_error
    from ptopipe.codegen import write_cpp
    from ptopipe.codegen.pto_exec.types import BLAYOUT, ELEMENT, LOC, SLAYOUT
    op = compile_program(pl.program(_idle_narrow, _narrow_tiles, name="narrow"), "a2a3")
    text = write_pto(op, "a2a3")
    assert ("!pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=1, v_row=4, v_col=1, blayout=col_major, "
            "slayout=none_box, fractal=512, pad=0>") in text
    assert ("!pto.tile_buf<loc=vec, dtype=ui8, rows=32, cols=1, v_row=4, v_col=1, blayout=col_major, "
            "slayout=none_box, fractal=512, pad=0>") in text
    assert "!pto.tile_buf<loc=vec, dtype=f32, rows=4, cols=8, v_row=4, v_col=8, blayout=row_major," in text
    cpp = write_cpp(compile_program(pl.program(_idle_narrow, _narrow_tiles, name="narrow"), "a2a3", protocol="pto-isa"),
                    "a2a3")
    assert "Tile<TileType::Vec, float, 8, 1, BLayout::ColMajor, 4, 1>" in cpp
    assert "Tile<TileType::Vec, uint8_t, 32, 1, BLayout::ColMajor, 4, 1>" in cpp
    for m in re.finditer(r"loc=(\w+), dtype=(\w+), rows=(\d+), cols=(\d+), v_row=\d+, v_col=\d+, "
                         r"blayout=(\w+), slayout=(\w+)", text):   # every declaration is one pto-isa takes
        lay = TileLayout.of(BLAYOUT[m[5]], SLAYOUT[m[6]])
        assert tile_shape_error(LOC[m[1]], lay, int(m[3]), int(m[4]), ELEMENT[m[2]].itemsize) is None, m[0]
    back = PassManager(list(PTO_PASSES)).run(read_pto(text, "narrow.pto"),
                                            PassContext(platform="a2a3", protocol="spec"))
    assert structural_equal(op, back), first_difference(op, back)
    x = np.arange(-16, 16, dtype=np.float32).reshape(4, 8) / 4
    res = ptopipe.run_pto(text=text, inputs=dict(x=x, s=np.zeros((4, 1), np.float32), y=x * 0),
                          platform="a2a3")
    np.testing.assert_allclose(res.outputs["s"], x.sum(axis=1, keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(res.outputs["y"], np.where(x >= x * x, x, -x))


def test_a_k_loop_that_only_accumulates_onto_an_unwritten_accumulator_is_found_statically(tmp_path, capsys):
    """Without the pto.tmatmul before the loop, %acc is storage nothing wrote and the loop's
    first pto.tmatmul.acc adds onto it: check --static refuses it at that step (docs/pto.md,
    destination passing), the fix in .pto words; the file as written is clean."""
    from ptopipe.cli import main
    text = (ROOT / "tests" / "pto" / "accumulate_a3.pto").read_text()
    good = tmp_path / "good.pto"
    good.write_text(text)
    assert main(["check", "--static", str(good)]) == 0
    lines = [ln for ln in text.splitlines() if not ln.strip().startswith("pto.tmatmul ins(")]
    bad = tmp_path / "bad.pto"
    bad.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(["check", "--static", str(bad)]) == 1
    err = capsys.readouterr().err
    step = next(i for i, ln in enumerate(lines, 1) if ln.strip().startswith("pto.tmatmul.acc"))
    assert "CompileError: the pto.tmatmul.acc at" in err and "accumulates onto storage nothing has written" in err
    assert f"at {bad}:{step}:7" in err
    assert "an scf.if on (k == <the loop's start>) picking pto.tmatmul, else pto.tmatmul.acc" in err


@pl.incore
def _views_of_ranks(x: pl.Tensor[[64], pl.f32], y: pl.Tensor[[2, 4, 16], pl.f32],
                    out: pl.Tensor[[64], pl.f32], out3: pl.Tensor[[2, 4, 16], pl.f32]):
    v = pl.load(x, [0], [64])
    pl.store(pl.add(v, v), [0], out)
    w = pl.load(y, [1, 0, 0], [1, 4, 16])
    pl.store(pl.muls(w, 3.0), [0, 0, 0], out3)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_store_writes_its_partition_view_in_the_tensors_rank(platform):
    """A store's partition_view has the tensor's rank, as its load's has (ptoas: "size count
    must match source rank"): [64] for a 1-D tensor, [1, 4, 16] for a 3-D one."""
    text = write_pto(compile_program(pl.program(_views_of_ranks, name="ranks"), platform), platform)
    views = re.findall(r"pto.partition_view %(\w+)_view, offsets = \[[^]]*\], sizes = \[([^]]*)\] : "
                       r"\S+ -> !pto.partition_tensor_view<(\w+)>", text)
    assert sorted(views) == [("out", "%c64", "64xf32"), ("out3", "%c1, %c4, %c16", "1x4x16xf32"),
                             ("x", "%c64", "64xf32"), ("y", "%c1, %c4, %c16", "1x4x16xf32")]
    rng = np.random.default_rng(2)
    x = rng.integers(-4, 5, 64).astype(np.float32)
    y = rng.integers(-4, 5, (2, 4, 16)).astype(np.float32)
    res = ptopipe.run_pto(text=text, platform=platform, inputs=dict(x=x, y=y, out3=np.zeros((2, 4, 16), np.float32)))
    np.testing.assert_array_equal(res.outputs["out"], 2 * x)
    want = np.zeros((2, 4, 16), np.float32)
    want[0] = 3 * y[1]
    np.testing.assert_array_equal(res.outputs["out3"], want)


@pl.incore(split=pl.TILE_UP_DOWN, slot_num=4)
def _store_popped(a: pl.Tensor[[16, 16], pl.f32], b: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32]):
    bl = pl.move(pl.load(b, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
    al = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
    pl.store(pl.move(pl.matmul(al, bl), space=pl.Vec), [0, 0], out)


def test_the_compilers_own_event_before_a_tfree_does_not_make_the_file_level3(tmp_path):
    """pto-isa's A5 free signal does not wait for a TSTORE of the popped tile, so the compiler
    puts set_flag / wait_flag(MTE3, V) before the TFREE; those are not the program's own events:
    the file stays level2 (ptoas places the tiles, which share memory), the events carry
    {ptopipe.free_order} and read back as the compiler's (the round trip is exact)."""
    op = compile_program(pl.program(_store_popped, name="sp"), "a5", protocol="pto-isa")
    text = write_pto(op)
    assert not text.startswith("//") and "addr =" not in text and "auto = true" in text, text
    assert len(re.findall(r"pto\.(set|wait)_flag\[#pto.pipe<PIPE_MTE3>, #pto.pipe<PIPE_V>, "
                          r"#pto.event<EVENT_ID\d>\] \{ptopipe.free_order\}\n", text)) == 2, text
    back = _reread(op, "a5", "pto-isa")
    assert structural_equal(op, back), first_difference(op, back)
    path = tmp_path / "sp.pto"
    path.write_text(text)
    rng = np.random.default_rng(1)
    a, b = (rng.integers(-3, 4, (16, 16)).astype(np.float32) for _ in range(2))
    res = ptopipe.run_pto(str(path), inputs=dict(a=a, b=b, out=np.zeros((16, 16), np.float32)), protocol="pto-isa")
    np.testing.assert_array_equal(res.outputs["out"], a @ b)
    from ptopipe.driver.pto import file_sync
    assert file_sync(str(path), None) == (None, None)       # no note of events of the file's own


def test_a_level3_file_runs_with_its_own_events_only(tmp_path, capsys):
    """ptoas builds a level3 file's pipes with the file's events alone: `run` (and `check`) of such
    a file that ptopipe wrote runs in the manual mode (a note says so), so a missing event is the
    race the device has; --sync auto still lets the scoreboard order the pipes."""
    from ptopipe.cli import main as cli_main
    text = write_pto(compile_program(pl.program(_idle, _manual, name="m"), "a2a3"))
    ev = re.compile(r".*pto\.(set|wait)_flag\[#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_V>, #pto.event<EVENT_ID0>\]\n")
    assert len(ev.findall(text)) == 2
    x = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
    np.save(tmp_path / "x.npy", x)
    for name, body in (("m.pto", text), ("m_no_wait.pto", ev.sub("", text))):
        (tmp_path / name).write_text(body)
    run = ["run", "--quiet", "--input", f"x={tmp_path / 'x.npy'}"]
    assert cli_main([*run[:1], str(tmp_path / "m.pto"), *run[2:]]) == 0
    out = capsys.readouterr().out
    assert "manual synchronisation mode" in out and "events of its own" not in out
    assert cli_main([*run, str(tmp_path / "m_no_wait.pto")]) == 1
    assert "DataRaceError" in capsys.readouterr().err
    assert cli_main([*run, "--sync", "auto", str(tmp_path / "m_no_wait.pto")]) == 0
    capsys.readouterr()
    check = ["check", "--input", f"x={tmp_path / 'x.npy'}"]      # check runs it as run does
    assert cli_main([*check, str(tmp_path / "m.pto")]) == 0
    assert "(manual sync)" in capsys.readouterr().out
    assert cli_main([*check, str(tmp_path / "m_no_wait.pto")]) == 1


@pl.incore(split=pl.TILE_UP_DOWN, slot_num=4)
def _two_held(a: pl.Tensor[[16, 16], pl.f32], b1: pl.Tensor[[16, 16], pl.f32], b2: pl.Tensor[[16, 16], pl.f32],
              out: pl.Tensor[[16, 16], pl.f32]):
    al = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
    y1 = pl.move(pl.matmul(al, pl.move(pl.load(b1, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)), space=pl.Vec)
    y2 = pl.move(pl.matmul(al, pl.move(pl.load(b2, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)), space=pl.Vec)
    pl.store(pl.sub(pl.relu(y1), y2), [0, 0], out)


def two_held_args(rng):
    a, b1, b2 = (rng.integers(-3, 4, (16, 16)).astype(np.float32) for _ in range(3))
    return dict(a=a, b1=b1, b2=b2, out=np.zeros((16, 16), np.float32)), np.maximum(a @ b1, 0) - a @ b2


#: the protocol two popped tiles of one type are held at once under, per platform: on A5 under
#: pto-isa (a ring in UB, SlotNum 4: SyncPeriod 2) the compiler frees each tile before the next
#: TPOP of its ring - pto-isa's TFREE tests the latest TPOP's index - and copies y1 out instead
HOLDS_UNDER = {"a2a3": "pto-isa", "a5": "spec"}


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_second_popped_tile_of_a_type_is_a_tile_of_its_own(platform):
    """Two popped tiles of one type held at once: ptoas's C++ would declare two identical
    pto.declare_tile as one Tile (both TPOPs then bind it; tests/codegen/test_ptoas.py runs it), so
    the second is an alloc_tile.  The file reads back to the program and runs to numpy's numbers."""
    protocol = HOLDS_UNDER[platform]
    op = compile_program(pl.program(_two_held, name="th"), platform, protocol=protocol)
    text = write_pto(op)
    assert re.search(r"%y1 = pto.declare_tile -> (.*)\n\s*pto.tpop\(%y1, ", text), text
    assert re.search(r"%y2 = pto.alloc_tile : (.*)\n\s*pto.tpop\(%y2, ", text), text
    back = _reread(op, platform, protocol)
    assert structural_equal(op, back), first_difference(op, back)
    args, want = two_held_args(np.random.default_rng(4))
    res = ptopipe.run_pto(text=text, inputs=args, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], want)
    if platform == "a5":            # under pto-isa: y1 copied out, its slot freed before y2's TPOP
        held = write_pto(compile_program(pl.program(_two_held, name="th"), platform, protocol="pto-isa"))
        assert held.index("pto.tfree") < held.index("pto.tpop(%y2") and "%y1_held" in held, held
        res = ptopipe.run_pto(text=held, inputs=args, protocol="pto-isa")
        np.testing.assert_array_equal(res.outputs["out"], want)


@pl.aiv
def _max_min_int_scalars(x: pl.Tensor[[16, 16], pl.i32], y: pl.Tensor[[16, 16], pl.i32],
                         z: pl.Tensor[[16, 16], pl.f32], w: pl.Tensor[[16, 16], pl.f32]):
    pl.store(pl.maxs(pl.load(x, [0, 0], [16, 16]), 3), [0, 0], y)
    for i in pl.range(2):
        pl.store(pl.mins(pl.load(z, [0, 0], [16, 16]), i), [0, 0], w)


def test_max_and_min_with_an_integer_scalar_are_written_with_a_float_one(tmp_path):
    """ptoas 0.27 lowers pto.tmaxs / pto.tmins only with a float scalar (an i32 one: "ins/outs are
    not memref yet"), on an int tile too: the writer converts the index scalar with arith.sitofp,
    the file reads back to the program and runs to numpy's numbers."""
    op = compile_program(pl.program(_idle, _max_min_int_scalars, name="mm"), "a2a3")
    text = write_pto(op)
    back = _reread(op, "a2a3")
    assert structural_equal(op, back), first_difference(op, back)
    for op in ("pto.tmaxs", "pto.tmins"):
        line = next(ln for ln in text.splitlines() if op in ln)
        assert re.search(r"ins\(%\w+, %(\w+) : !pto\.tile_buf<[^>]*>, f32\)", line), line
    assert text.count("arith.sitofp") == 2
    rng = np.random.default_rng(0)
    x, z = rng.integers(-5, 6, (16, 16)).astype(np.int32), rng.uniform(-2, 2, (16, 16)).astype(np.float32)
    res = ptopipe.run_pto(text=text, inputs=dict(x=x, y=np.zeros_like(x), z=z, w=np.zeros_like(z)))
    np.testing.assert_array_equal(res.outputs["y"], np.maximum(x, 3))
    np.testing.assert_array_equal(res.outputs["w"], np.minimum(z, 1))
    ptoas = os.environ.get("PTOAS")
    if ptoas:
        (tmp_path / "k.pto").write_text(text)
        r = subprocess.run([ptoas, "--pto-arch=a3", str(tmp_path / "k.pto"), "-o", str(tmp_path / "k.cpp")],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]


@pl.aiv
def _carried_ors_recip(x: pl.Tensor[[16, 16], pl.i16], y: pl.Tensor[[16, 16], pl.i16],
                       z: pl.Tensor[[16, 16], pl.f32], w: pl.Tensor[[16, 16], pl.f32]):
    t = pl.load(x, [0, 0], [16, 16])
    for i in pl.range(2):
        t = pl.ors(t, 1)
    pl.store(t, [0, 0], y)
    f = pl.load(z, [0, 0], [16, 16])
    for i in pl.range(2):
        f = pl.recip(f)
    pl.store(f, [0, 0], w)


def test_a_carried_tile_of_an_op_ptoas_wants_out_of_place_is_moved_in(tmp_path):
    """A loop carrying t = ors(t, 1) (recip likewise, which A2/A3 wants out of place): the op
    writes a tile of its own and a carry move puts it in the loop's buffer - ptoas refuses
    pto.tors / trecip with one value as source and destination."""
    text = write_pto(compile_program(pl.program(_idle, _carried_ors_recip, name="cr"), "a2a3"))
    for op in ("pto.tors", "pto.trecip"):
        line = next(ln for ln in text.splitlines() if op in ln)
        src, dst = re.search(r"ins\((%\w+)", line).group(1), re.search(r"outs\((%\w+)", line).group(1)
        assert src != dst, line
    rng = np.random.default_rng(0)
    x, z = rng.integers(-9, 9, (16, 16)).astype(np.int16), rng.uniform(0.5, 2, (16, 16)).astype(np.float32)
    res = ptopipe.run_pto(text=text, inputs=dict(x=x, y=np.zeros_like(x), z=z, w=np.zeros_like(z)))
    np.testing.assert_array_equal(res.outputs["y"], x | 1)
    np.testing.assert_allclose(res.outputs["w"], z, rtol=1e-5)
    ptoas = os.environ.get("PTOAS")
    if ptoas:
        (tmp_path / "k.pto").write_text(text)
        r = subprocess.run([ptoas, "--pto-arch=a3", str(tmp_path / "k.pto"), "-o", str(tmp_path / "k.cpp")],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]


_COL32 = ("!pto.tile_buf<loc=vec, dtype=f32, rows=32, cols=1, v_row=32, v_col=1, blayout=col_major, slayout=none_box, "
          "fractal=512, pad=0>")
_ROW32 = ("!pto.tile_buf<loc=vec, dtype=f32, rows=1, cols=32, v_row=1, v_col=32, blayout=row_major, slayout=none_box, "
          "fractal=512, pad=0>")


def test_a_stored_row_view_is_not_read_as_a_type_mismatch():
    """``%r = pto.treshape %col`` stored into a 1x32 window: the value IR keeps the row view as its
    column and has no such store - the static reader says that (its NOT VERIFIED reason), not
    "type mismatch: the view is (1, 32), the tile (32, 1)", which blamed a file ptoas accepts."""
    text = f"""module attributes {{pto.target_arch = "a5"}} {{
  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %xv = pto.make_tensor_view %x, shape = [%c32, %c1], strides = [%c1, %c1] : !pto.tensor_view<?x?xf32>
    %yv = pto.make_tensor_view %y, shape = [%c1, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf32>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c32, %c1] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<32x1xf32>
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c1, %c32] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<1x32xf32>
    %col = pto.alloc_tile : {_COL32}
    pto.tload ins(%xp : !pto.partition_tensor_view<32x1xf32>) outs(%col : {_COL32})
    %row = pto.treshape %col : {_COL32} -> {_ROW32}
    pto.tstore ins(%row : {_ROW32}) outs(%yp : !pto.partition_tensor_view<1x32xf32>)
    return
  }}
}}
"""
    with pytest.raises(ParseError) as e:
        read_pto(text, "k.pto")
    assert e.value.what == ("a store of the 32x1 column %col (or of a pto.treshape row view of it, which the value "
                            "IR keeps as the column) into a 1x32 window: the value IR has no such store"), e.value.what
    x = np.arange(32, dtype=np.float32).reshape(32, 1)
    res = ptopipe.run_pto(text=text, inputs=dict(x=x, y=np.zeros((1, 32), np.float32)))
    np.testing.assert_array_equal(res.outputs["y"], x.reshape(1, 32))


_VEC16 = ("!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, "
          "slayout=none_box, fractal=512, pad=0>")


@pytest.mark.parametrize("made", [
    "    %k64 = arith.index_cast %c16 : index to i64\n    %kf = arith.sitofp %k64 : i64 to f32\n",   # an index as f32
    "    %k = arith.constant 16 : i32\n    %kf = arith.sitofp %k : i32 to f32\n",                    # an i32 as f32
])
def test_a_float_scalar_made_of_an_integer_reads_into_the_value_ir(made):
    """``tmuls ins(%t, %kf : T, f32)`` with %kf an arith.sitofp of an integer (a loop index or a
    counter as a float): the static reader reads %kf as that integer, as the writer's casts (it
    was "type mismatch: %kf is an index scalar, the op says f32", a file it could not verify)."""
    text = f"""module attributes {{pto.target_arch = "a3"}} {{
  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %xv = pto.make_tensor_view %x, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %yv = pto.make_tensor_view %y, shape = [%c16, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %xp = pto.partition_view %xv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %yp = pto.partition_view %yv, offsets = [%c0, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    %t = pto.alloc_tile : {_VEC16}
    %u = pto.alloc_tile : {_VEC16}
    pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%t : {_VEC16})
{made}    pto.tmuls ins(%t, %kf : {_VEC16}, f32) outs(%u : {_VEC16})
    pto.tstore ins(%u : {_VEC16}) outs(%yp : !pto.partition_tensor_view<16x16xf32>)
    return
  }}
}}
"""
    op = read_pto(text, "k.pto")
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    res = run(op, dict(x=x, y=np.zeros_like(x)), platform="a2a3")
    np.testing.assert_array_equal(res.outputs["y"], 16 * x)
