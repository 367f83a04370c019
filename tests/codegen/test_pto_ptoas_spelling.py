"""The ``.pto`` spellings ptoas takes (PTOAS 0.27, hw-native-sys/PTOAS a56b18c3), written and
read back without the assembler (``tests/codegen/test_ptoas.py`` runs it when ``PTOAS`` is set):
pipe inits whose ring is the one ptoas builds, ``auto = true`` reserves, float literals,
set_flag / wait_flag, the scratch tile of a row reduction, loop / branch tiles in buffers,
A5 Left tiles."""
import math
import os
import pathlib
import re
import subprocess

import pytest

import ptopipe  # (also installs the mixed compiler)
import ptopipe.language as pl
from ptopipe.driver.programs import programs_of
from ptopipe.driver.loader import load_module
from ptopipe.codegen.pto_load import PTO_PASSES
from ptopipe.codegen import read_pto, write_pto
from ptopipe.codegen.pto_syntax import float_literal, float_of_literal
from ptopipe.errors import ParseError
from ptopipe.ir import first_difference
from ptopipe.ir.vocab import AUTO
from ptopipe.ir.pipe_config import local_slot_num
from ptopipe.ir.types import MemorySpace
from ptopipe.passes import PassManager, compile_program
from ptopipe.passes.manager import PassContext

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted(str(p.relative_to(ROOT)) for d in ("mixed", "dsl")
                  for p in (ROOT / "examples" / d).glob("*.py"))
_CACHE = {}


def written(rel, platform):
    if (rel, platform) not in _CACHE:
        op = compile_program(programs_of(load_module(str(ROOT / rel)))[0], platform)
        _CACHE[rel, platform] = op, write_pto(op, platform)
    return _CACHE[rel, platform]


def _reread(text, platform):
    return PassManager(list(PTO_PASSES)).run(read_pto(text, "k.pto"), PassContext(platform=platform))


def _inits(op):
    return [o for o in op.walk() if o.name in ("pl.aic_initialize_pipe", "pl.aiv_initialize_pipe")]


# -- pipe inits ------------------------------------------------------------------------------
_INIT = re.compile(r"(pto\.aic_initialize_pipe|pto\.aiv_initialize_pipe|pto\.initialize_l2g2l_pipe|"
                   r"pto\.initialize_l2l_pipe) \{([^}]*)\} \(([^)]*)\)(?: \{([^}]*)\})?")
#: what ptoas's own ops take in their attribute block (PTOOps.td)
_BLOCK = {"pto.aic_initialize_pipe": {"dir_mask", "slot_size", "nosplit"},
          "pto.aiv_initialize_pipe": {"dir_mask", "slot_size", "nosplit"},
          "pto.initialize_l2g2l_pipe": {"dir_mask", "slot_size", "slot_num", "local_slot_num",
                                        "flag_base", "nosplit"},
          "pto.initialize_l2l_pipe": {"dir_mask", "slot_size", "slot_num", "flag_base", "nosplit"}}


def ptoas_ring(op_name, block, platform):
    """(SlotNum, LocalSlotNum, FlagID) ptoas builds from an init: its frontend fixes SlotNum
    8 / 4, FlagID 0 and LocalSlotNum = SlotNum (A2A3) / 2 (A5); l2g2l defaults LocalSlotNum to
    SlotNum; l2l prints 2 (PTOLowerFrontendPipeOps, PTOToEmitC)."""
    kv = dict(re.match(r"\s*([\w.]+) = (\w+)", p).groups() for p in block.split(","))
    mask = int(kv["dir_mask"])
    if op_name in ("pto.aic_initialize_pipe", "pto.aiv_initialize_pipe"):
        n = 4 if mask == 3 else 8
        return n, n if platform == "a2a3" else 2, 0
    n = int(kv["slot_num"])
    local = int(kv.get("local_slot_num", n)) if op_name == "pto.initialize_l2g2l_pipe" else 2
    return n, local, int(kv.get("flag_base", 0))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("rel", EXAMPLES)
def test_pipe_inits_say_only_what_ptoas_reads_and_mean_the_simulated_ring(rel, platform):
    op, text = written(rel, platform)
    found = _INIT.findall(text)
    inits = _inits(op)
    assert len(found) == len(inits) == 2
    for (name, block, _ops, trailing), init in zip(found, inits):
        keys = {p.split("=")[0].strip() for p in block.split(",")}
        assert keys <= _BLOCK[name], (name, keys - _BLOCK[name])
        assert all(p.strip().startswith("ptopipe.") for p in trailing.split(",") if p.strip())
        a = init.attributes
        n, local, flag = ptoas_ring(name, block, platform)
        assert (n, flag) == (a["slot_num"], a["flag_id"]), (rel, name, block)
        if platform == "a2a3":            # LocalSlotNum stages a GM ring's pops (A2A3 only)
            assert local == local_slot_num(a), (rel, name, block)


def test_the_frontend_init_is_written_for_the_ring_ptoas_builds_and_the_handle_form_else():
    _, s4 = written("examples/mixed/s4_both_ways.py", "a5")        # SlotNum 4 both ways: ptoas's
    # (A5 SLOT_SIZE: one Vector core's part of the crossing Acc, what its slot in UB holds)
    assert s4.count("_initialize_pipe {dir_mask = 3, slot_size = 4096} (") == 2
    _, s1 = written("examples/mixed/s1_cv_split.py", "a5")         # SlotNum 4 one way: not
    assert s1.count("= pto.initialize_l2l_pipe {dir_mask = 1, slot_size = 1024, slot_num = 4, "
                    "flag_base = 0} (") == 2
    assert s1.count('{ptopipe.local_slot_num = 4, ptopipe.gm_slot_buffer = "gm_slot_buffer"} -> !pto.pipe') == 2
    _, d4 = written("examples/dsl/s4_both_ways.py", "a2a3")        # LocalSlotNum 2 on a GM ring
    assert d4.count("slot_num = 4, local_slot_num = 2, flag_base = 0} (%fifo : !pto.ptr<ui8>, ") == 2
    assert d4.count("{ptopipe.default_local_slot_num} -> !pto.pipe") == 2


def test_ptoas_spellings_of_an_init_read_with_the_local_slot_num_ptoas_gives_them():
    """A frontend init with no slot_num: ptoas's ring, LocalSlotNum = SlotNum on A2A3 (2, the
    default, on A5); an initialize_l2g2l_pipe with no local_slot_num: its SlotNum."""
    acc = (ROOT / "tests" / "pto" / "accumulate_a3.pto").read_text()
    assert [i.attributes["local_slot_num"] for i in _inits(read_pto(acc, "a.pto"))] == [8, 8]
    assert [i.attributes["local_slot_num"] for i in _inits(read_pto(acc, "a.pto", "a5"))] == [None, None]
    low = (ROOT / "tests" / "pto" / "lowlevel_a3.pto").read_text()
    assert [i.attributes["local_slot_num"] for i in _inits(read_pto(low, "l.pto"))] == [4, 4]
    both = (ROOT / "tests" / "pto" / "c2v_split_a3.pto").read_text()        # ptopipe's slot_num
    assert [i.attributes["local_slot_num"] for i in _inits(read_pto(both, "c.pto"))] == [None, None]


def test_trailing_ptopipe_attributes_are_checked():
    text = written("examples/dsl/s4_both_ways.py", "a2a3")[1]
    bad = text.replace("{ptopipe.default_local_slot_num}", "{ptopipe.default_local_slot_num = 3}", 1)
    with pytest.raises(ParseError, match="takes no value"):
        read_pto(bad, "k.pto")
    bad = text.replace("{ptopipe.default_local_slot_num}", "{ptopipe.slots = 3}", 1)
    with pytest.raises(ParseError, match="unknown attribute 'ptopipe.slots'"):
        read_pto(bad, "k.pto")


# -- reserve_buffer ----------------------------------------------------------------------------
def test_reserves_are_auto_with_ptopipes_base_alongside():
    op, text = written("examples/mixed/s1_cv_split.py", "a2a3")
    assert "auto = false" not in text
    base = next(o.attributes["base"] for o in op.walk() if o.name == "pl.reserve_buffer")
    assert f"location = #pto.address_space<vec>, auto = true}} {{ptopipe.base = {base}}} -> i32" in text
    back = read_pto(text, "k.pto")
    assert [o.attributes["base"] for o in back.walk() if o.name == "pl.reserve_buffer"] == [base]
    bare = read_pto(text.replace(f" {{ptopipe.base = {base}}}", ""), "k.pto")
    assert [o.attributes["base"] for o in bare.walk() if o.name == "pl.reserve_buffer"] == [AUTO]
    with pytest.raises(ParseError, match="ptopipe.base on a reserve_buffer with auto = false"):
        read_pto(text.replace("auto = true} {ptopipe.base", f"auto = false, base = {base}}} {{ptopipe.base"), "k.pto")


# -- scalars and sync ------------------------------------------------------------------------------
@pytest.mark.parametrize("v,dtype,text", [(-1e30, "f32", "-1.0e+30"), (0.5, "f32", "0.5"), (3.0, "f16", "3.0"),
                                          (1e-05, "f32", "1.0e-05"), (math.inf, "f32", "0x7F800000"),
                                          (-math.inf, "bf16", "0xFF80"), (-math.inf, "f16", "0xFC00")])
def test_float_literals_have_a_point_or_are_hex_bits(v, dtype, text):
    assert float_literal(v, dtype) == text
    assert float_of_literal(text, dtype) == v


def test_a_nan_constant_is_hex_and_reads_back_as_nan():
    assert float_literal(math.nan, "f32") == "0x7FC00000" and math.isnan(float_of_literal("0x7FC00000", "f32"))
    with pytest.raises(ValueError):
        float_of_literal("0x1FFFF", "f16")


def test_fa_writes_its_minus_1e30_with_a_point():
    assert "arith.constant -1.0e+30 : f32" in written("examples/mixed/fa_forward.py", "a2a3")[1]


def test_events_are_set_flag_wait_flag_and_barrier_takes_its_pipe():
    op, text = written("examples/dsl/s8_manual_sync.py", "a2a3")
    assert "pto.set_flag[#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_MTE1>, #pto.event<EVENT_ID1>]" in text
    assert "pto.wait_flag[#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_MTE1>, #pto.event<EVENT_ID1>]" in text
    assert "pto.record_event" not in text and "pto.wait_event" not in text
    assert first_difference(op, _reread(text, "a2a3")) is None
    # the dynamic form (an index value) and the barrier
    dyn = text.replace("pto.set_flag[#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_MTE1>, #pto.event<EVENT_ID1>]",
                       "%ev = arith.constant 1 : index\n    pto.set_flag_dyn [#pto.pipe<PIPE_MTE2>, "
                       "#pto.pipe<PIPE_MTE1>, %ev]\n    pto.barrier #pto.pipe<PIPE_MTE2>", 1)
    back = read_pto(dyn, "d.pto")
    assert any(o.name == "pl.barrier" and o.attributes["pipe"].value == "PIPE_MTE2" for o in back.walk())
    with pytest.raises(ParseError, match="bad event 'EVENT_ID9'"):
        read_pto(text.replace("EVENT_ID1>]", "EVENT_ID9>]", 1), "e.pto")


def test_row_reductions_get_a_scratch_tile_and_the_reader_takes_it():
    text = written("examples/mixed/fa_forward.py", "a2a3")[1]
    T8 = "!pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=32, v_row=8, v_col=32, blayout=row_major, " \
         "slayout=none_box, fractal=512, pad=0>"
    assert re.search(r"pto\.trowmax ins\(%s, %tmp : " + re.escape(f"{T8}, {T8}") + r"\)", text)
    assert re.search(r"pto\.trowsum ins\(%p, %tmp_\d+ : ", text)
    # an optional scratch (a row broadcast) reads too; a scratch that is no tile does not
    line = next(ln for ln in text.splitlines() if "pto.trowexpandsub ins(%s, %m :" in ln)
    tmp = line.replace("ins(%s, %m :", "ins(%s, %m, %tmp :").replace(") outs(", f", {T8}) outs(")
    with_tmp = text.replace(line, tmp, 1)
    assert first_difference(read_pto(with_tmp, "t.pto"), read_pto(text, "t.pto")) is None
    with pytest.raises(ParseError, match="is not a tile buffer"):
        read_pto(text.replace("pto.trowmax ins(%s, %tmp :", "pto.trowmax ins(%s, %sub :", 1), "t.pto")



@pl.aiv
def _scratch_ops(a: pl.Tensor[[16, 32], pl.i16], b: pl.Tensor[[16, 32], pl.i16], o: pl.Tensor[[16, 32], pl.i16],
                 q: pl.Tensor[[16, 32], pl.i16], x: pl.Tensor[[16, 32], pl.f32], p: pl.Tensor[[16, 1], pl.f32],
                 r: pl.Tensor[[16, 32], pl.f32]):
    ta = pl.load(a, [0, 0], [16, 32])
    pl.store(pl.xor(ta, pl.load(b, [0, 0], [16, 32])), [0, 0], o)
    pl.store(pl.xors(ta, 3), [0, 0], q)
    tx = pl.load(x, [0, 0], [16, 32])
    pl.store(pl.row_prod(tx), [0, 0], p)
    pl.store(pl.rems(tx, 1.5), [0, 0], r)


def test_every_op_ptoas_gives_a_required_tmp_is_written_with_one():
    # ptoas's txor / txors / trems / trowprod take ``ins(..., %tmp)`` and refuse the op without
    # it ("expected ','"): the writer passes the scratch tile its allocator placed
    op = compile_program(pl.program(_scratch_ops, name="scratch_ops"), "a2a3")
    text = write_pto(op, "a2a3")
    for name, ins in (("txor", r"%\w+, %\w+, %tmp\w*"), ("txors", r"%\w+, %\w+, %tmp\w*"),
                      ("trowprod", r"%\w+, %tmp\w*"), ("trems", r"%\w+, %\w+, %tmp\w*")):
        assert re.search(rf"pto\.{name} ins\({ins} : ", text), name
    assert first_difference(op, _reread(text, "a2a3")) is None



@pl.aiv
def _index_scalars(a: pl.Tensor[[64, 16], pl.i32], o: pl.Tensor[[64, 16], pl.i32], x: pl.Tensor[[64, 16], pl.f32],
                   y: pl.Tensor[[64, 16], pl.f32]):
    for i in pl.range(4):
        pl.store(pl.adds(pl.load(a, [i * 16, 0], [16, 16]), i), [i * 16, 0], o)
        pl.store(pl.muls(pl.load(x, [i * 16, 0], [16, 16]), i), [i * 16, 0], y)
        pl.store(pl.subs(pl.load(a, [i * 16, 0], [16, 16]), 3), [i * 16, 0], o)
        pl.store(pl.full([16, 16], pl.f32, i), [i * 16, 0], y)


def test_an_index_scalar_of_a_tile_op_is_cast_to_a_number_ptoas_takes(tmp_path):
    """ptoas's tile-scalar ops take a number, not an index ("'pto.tadds' op operand #1 must be
    numeric (integer/float), but got 'index'"), and its C++ emitter casts an index to i64 only:
    the writer casts a loop variable or an integer constant through i64 to the tile's integer
    type (i32 for a float tile; texpands': its float tile's type), and the reader reads the casts
    back as the index."""
    op = compile_program(pl.program(_index_scalars, name="index_scalars"), "a2a3")
    text = write_pto(op, "a2a3")
    assert not re.search(r"pto\.t(adds|muls|subs) ins\([^)]*, index\)", text), text
    assert re.search(r"arith\.index_cast %i : index to i64\n\s*(%\w+) = arith\.trunci %\w+ : i64 to i32", text), text
    # texpands takes a scalar of its tile's own type ("expects scalar type == dst element type")
    cast = re.search(r"(%\w+) = arith\.sitofp %i_i64\w* : i64 to f32\n", text)
    assert cast and f"pto.texpands ins({cast.group(1)} : f32)" in text, text
    assert first_difference(op, _reread(text, "a2a3")) is None
    ptoas = os.environ.get("PTOAS")
    if ptoas:
        f = tmp_path / "s.pto"
        f.write_text(text)
        r = subprocess.run([ptoas, "--pto-arch=a3", str(f), "-o", str(tmp_path / "s.cpp")], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stdout + r.stderr


_T = "!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=32, v_row=16, v_col=32, blayout=row_major, " \
     "slayout=none_box, fractal=512, pad=0>"
_C = "!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=1, v_row=16, v_col=1, blayout=col_major, " \
     "slayout=none_box, fractal=512, pad=0>"
_R = "!pto.tile_buf<loc=vec, dtype=f32, rows=1, cols=32, v_row=1, v_col=32, blayout=row_major, " \
     "slayout=none_box, fractal=512, pad=0>"
_OPTIONAL_TMP = {
    "pto.trsqrt": (f"pto.trsqrt ins(%x : {_T}) outs(%y : {_T})", f"pto.trsqrt ins(%x, %tmp : {_T}, {_T}) outs(%y : {_T})"),
    "pto.tcolsum": (f"pto.tcolsum ins(%x : {_T}) outs(%s : {_R})",
                    f"pto.tcolsum ins(%x, %tmp {{isBinary = true}} : {_T}, {_T}) outs(%s : {_R})"),
    "pto.trowexpandmax": (f"pto.trowexpandmax ins(%x, %m : {_T}, {_C}) outs(%y : {_T})",
                          f"pto.trowexpandmax ins(%x, %m, %tmp : {_T}, {_C}, {_T}) outs(%y : {_T})"),
}


@pytest.mark.parametrize("name", sorted(_OPTIONAL_TMP))
def test_the_optional_tmp_ptoas_takes_reads_statically(name):
    without, with_tmp = _OPTIONAL_TMP[name]
    body = "\n".join([
        'module attributes {pto.target_arch = "a3"} {',
        "  func.func @k(%x_ptr: !pto.ptr<f32>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {",
        "    %c0 = arith.constant 0 : index", "    %c1 = arith.constant 1 : index",
        "    %c16 = arith.constant 16 : index", "    %c32 = arith.constant 32 : index",
        "    %v = pto.make_tensor_view %x_ptr, shape = [%c16, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf32>",
        "    %pv = pto.partition_view %v, offsets = [%c0, %c0], sizes = [%c16, %c32] : !pto.tensor_view<?x?xf32> "
        "-> !pto.partition_tensor_view<16x32xf32>",
        f"    %x = pto.alloc_tile : {_T}", f"    %y = pto.alloc_tile : {_T}", f"    %tmp = pto.alloc_tile : {_T}",
        f"    %m = pto.alloc_tile : {_C}", f"    %s = pto.alloc_tile : {_R}",
        f"    pto.tload ins(%pv : !pto.partition_tensor_view<16x32xf32>) outs(%x : {_T})",
        f"    pto.trowmax ins(%x, %tmp : {_T}, {_T}) outs(%m : {_C})",
        "    OP", "    return", "  }", "}", ""])
    plain = read_pto(body.replace("OP", without), "k.pto")
    assert first_difference(read_pto(body.replace("OP", with_tmp), "k.pto"), plain) is None


# -- tiles a loop carries or a branch yields -------------------------------------------------------
_TILE_CARRIED = re.compile(r"(iter_args\([^)]*\) -> \([^)]*tile_buf|scf\.if [^{]*-> \([^)]*tile_buf|"
                           r"scf\.yield [^\n]*tile_buf)")


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("rel", ["examples/mixed/fa_forward.py", "examples/dsl/fa_forward.py"])
def test_loop_and_branch_tiles_live_in_buffers(rel, platform):
    """ptoas takes no tile-typed iter_args / if results: the writer keeps them in buffers
    written in place; the reader makes them iter_args / results again."""
    op, text = written(rel, platform)
    assert not _TILE_CARRIED.search(text), _TILE_CARRIED.search(text).group(0)
    assert first_difference(op, _reread(text, platform)) is None


def test_the_fa_loop_moves_the_values_it_cannot_write_in_place():
    """mixed FA: m_new_1 and alpha_1 are made while the loop still reads m and alpha_ahead:
    moved in at the end of the body; l and o are written in place."""
    text = written("examples/mixed/fa_forward.py", "a2a3")[1]
    moves = re.findall(r"pto\.tmov ins\((%\w+) : [^)]*\) outs\((%\w+) : [^)]*\) \{ptopipe\.carry\}", text)
    assert moves == [("%m_new_1", "%m"), ("%alpha_1", "%alpha_ahead")], moves
    # l is a DN column: the add writes it in place through its row view (ptoas's tadd is row-major only)
    view = re.search(r"pto\.tadd ins\(%\w+, %\w+ : [^)]*\) outs\((%l_row\w*) : ", text)
    assert view and re.search(rf"{view.group(1)} = pto\.treshape %l : ", text)


def _swap_program(pure: bool):
    """A loop carrying (p, q) <- (q, p) (``pure``) or (q, p + q)."""
    @pl.aiv
    def swap(x: pl.Tensor[[8, 32], pl.f32], y: pl.Tensor[[8, 32], pl.f32], out: pl.Tensor[[8, 32], pl.f32]):
        a = pl.load(x, [0, 0], [8, 32], space=pl.Vec)
        b = pl.load(y, [0, 0], [8, 32], space=pl.Vec)
        for i, (p, q) in pl.range(0, 3, init_values=(a, b)):
            s1, s2 = pl.yield_(q, p)
        pl.store(pl.sub(s1, s2), [0, 0], out)

    @pl.aiv
    def fib(x: pl.Tensor[[8, 32], pl.f32], y: pl.Tensor[[8, 32], pl.f32], out: pl.Tensor[[8, 32], pl.f32]):
        a = pl.load(x, [0, 0], [8, 32], space=pl.Vec)
        b = pl.load(y, [0, 0], [8, 32], space=pl.Vec)
        for i, (p, q) in pl.range(0, 3, init_values=(a, b)):
            s1, s2 = pl.yield_(q, pl.add(p, q))
        pl.store(pl.sub(s1, s2), [0, 0], out)
    return pl.program(swap if pure else fib, name="swp")


@pytest.mark.parametrize("pure,moves", [
    (False, [("%q", "%p"), ("%7", "%q")]),
    (True, [("%q", "%staged"), ("%p", "%q"), ("%staged", "%p")])])
def test_moves_into_carried_buffers_read_before_they_overwrite(pure, moves):
    """(p, q) <- (q, p + q): p takes q's value before q is overwritten; (p, q) <- (q, p): a
    cycle, through a staging buffer.  Reading the moves in order is the DPS meaning: the IR
    read back yields what the original yields - moved the other way round it does not."""
    op = compile_program(_swap_program(pure), "a2a3")
    text = write_pto(op)
    got = re.findall(r"pto\.tmov ins\((%\w+) : [^)]*\) outs\((%\w+) : [^)]*\) \{ptopipe\.carry\}", text)
    assert got == moves, got
    assert first_difference(op, _reread(text, "a2a3")) is None
    lines = text.splitlines()
    at = [i for i, ln in enumerate(lines) if "{ptopipe.carry}" in ln]
    lines[at[0]:at[-1] + 1] = reversed(lines[at[0]:at[-1] + 1])
    try:
        wrong = first_difference(op, _reread("\n".join(lines), "a2a3"))
    except ParseError as e:             # a buffer written before the body reads it: not carried
        wrong = e.what
    assert wrong is not None


def test_carry_moves_alias_and_named_copies_are_copies():
    """``{ptopipe.carry}`` is no op of the IR (the buffer holds the moved value); ``{ptopipe.copy}``
    is the IR's pl.copy."""
    text = written("examples/dsl/fa_forward.py", "a2a3")[1]
    assert text.count("{ptopipe.copy}") == 2 and "ptopipe.copy %" not in text
    ops = [o.name for o in read_pto(text, "k.pto").walk()]
    assert ops.count("pl.copy") == 2
    mixed = written("examples/mixed/fa_forward.py", "a2a3")[1]
    as_copies = read_pto(mixed.replace("{ptopipe.carry}", "{ptopipe.copy}"), "k.pto")
    assert [o.name for o in as_copies.walk()].count("pl.copy") == 2
    assert [o.name for o in read_pto(mixed, "k.pto").walk()].count("pl.copy") == 0


def test_buffers_an_op_carries_are_its_values_in_declaration_order():
    """Two buffers a loop reads in the other order than they are declared: its iter_args
    follow the declarations (how the writer lists them), and value names stay unique."""
    op = compile_program(_swap_program(False), "a2a3")
    text = write_pto(op)
    body = text[text.index("scf.for"):]
    flipped = text.replace(body, body.replace("pto.tadd ins(%p, %q :", "pto.tadd ins(%q, %p :", 1))
    back = read_pto(flipped, "k.pto")
    loop = next(o for o in back.walk() if o.name == "pl.for")
    assert [v.name for v in loop.operands[3:]] == ["p", "q"]
    names = [v.name for o in back.walk() for v in o.results if v.name]
    assert len(names) == len(set(names)), names
    acc = read_pto((ROOT / "tests" / "pto" / "accumulate_a3.pto").read_text(), "a.pto")
    cube = next(f for f in acc.regions[0].blocks[0] if f.attributes["sym_name"] == "cube")
    written_acc = [v.name for o in cube.walk() for v in o.results if v.name and v.name.startswith("acc")]
    assert written_acc == ["acc", "acc_out", "acc_1"], written_acc      # one name per value


@pl.aic
def _acc_if(a: pl.Tensor[[16, 64], pl.f32], b: pl.Tensor[[64, 32], pl.f32], out: pl.Tensor[[16, 32], pl.f32],
            flag: pl.Scalar[pl.i32]):
    a0 = pl.move(pl.load(a, [0, 0], [16, 32], space=pl.Mat), space=pl.Left)
    b0 = pl.move(pl.load(b, [0, 0], [32, 32], space=pl.Mat), space=pl.Right)
    acc = pl.matmul(a0, b0)
    if flag > 0:
        a1 = pl.move(pl.load(a, [0, 32], [16, 32], space=pl.Mat), space=pl.Left)
        b1 = pl.move(pl.load(b, [32, 0], [32, 32], space=pl.Mat), space=pl.Right)
        acc = pl.matmul_acc(acc, a1, b1)
    pl.store(acc, [0, 0], out)


@pl.aiv
def _vec_if(x: pl.Tensor[[16, 32], pl.f32], out: pl.Tensor[[16, 32], pl.f32], flag: pl.Scalar[pl.i32]):
    t = pl.load(x, [0, 0], [16, 32])
    if flag > 0:
        t = pl.add(t, t)
    else:
        pl.store(pl.exp(t), [0, 0], out)
    pl.store(t, [0, 0], out)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("kernel", [_acc_if, _vec_if])
def test_a_tile_a_branch_passes_through_is_made_in_the_results_buffer(kernel, platform, tmp_path):
    """``if flag: acc = pl.matmul_acc(acc, ...)`` passes ``acc`` through the else branch: the
    op making ``acc`` writes it into the if's result buffer, and the then branch accumulates
    there - no move of it into that buffer, which for an accumulator is a ``pto.tmov`` from Acc
    to Acc that neither ptoas ("expects a supported tmov address-space pair") nor pto-isa has.
    The file reads back to the program and runs to its numbers on either branch."""
    import numpy as np
    from ptopipe.runtime import run as dsl_run
    prog = pl.program(kernel, name="passes")
    op = compile_program(prog, platform)
    text = write_pto(op, platform)
    assert "{ptopipe.carry}" not in text, text
    assert first_difference(op, _reread(text, platform)) is None
    rng = np.random.default_rng(2)
    args = {p: rng.integers(-3, 4, s).astype(np.float32) for p, s in
            (dict(a=(16, 64), b=(64, 32), x=(16, 32))).items() if p in kernel.pyfunc.__code__.co_varnames}
    for flag in (0, 1):
        want = dsl_run(prog, dict(args, out=np.zeros((16, 32), np.float32), flag=flag),
                       platform=platform).outputs["out"]
        got = ptopipe.run_pto(text=text, inputs=dict(args, flag=flag), platform=platform).outputs["out"]
        np.testing.assert_array_equal(got, want)
    ptoas = os.environ.get("PTOAS")
    if ptoas:
        f = tmp_path / "k.pto"
        f.write_text(text)
        r = subprocess.run([ptoas, f"--pto-arch={'a5' if platform == 'a5' else 'a3'}", str(f), "-o",
                            str(tmp_path / "k.cpp")], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


# -- Left tiles -------------------------------------------------------------------------------------
def test_a5_left_tiles_are_col_major_as_in_ptoas_and_pto_isa():
    _, a5 = written("examples/mixed/s1_cv_split.py", "a5")
    _, a3 = written("examples/mixed/s1_cv_split.py", "a2a3")
    assert "loc=left, dtype=f32, rows=16, cols=32, v_row=16, v_col=32, blayout=col_major, slayout=row_major" in a5
    assert "loc=left, dtype=f32, rows=16, cols=32, v_row=16, v_col=32, blayout=row_major, slayout=row_major" in a3
    # ptoas gives a Left tile its platform's blayout whatever the text says: so does the reader
    for text, plat in ((a5.replace("loc=left, dtype=f32, rows=16, cols=32, v_row=16, v_col=32, blayout=col_major",
                                   "loc=left, dtype=f32, rows=16, cols=32, v_row=16, v_col=32, blayout=row_major"), "a5"),
                       (a3.replace("loc=left, dtype=f32, rows=16, cols=32, v_row=16, v_col=32, blayout=row_major",
                                   "loc=left, dtype=f32, rows=16, cols=32, v_row=16, v_col=32, blayout=col_major"), "a2a3")):
        lefts = [v.type for o in read_pto(text, "k.pto").walk() for v in o.results
                 if getattr(v.type, "space", None) is MemorySpace.Left]
        assert lefts and all(t.layout is None for t in lefts), (plat, lefts)


# -- what ptoas does not take ----------------------------------------------------------------------
def test_the_writer_notes_what_ptoas_will_reject():
    notes = []
    op = compile_program(programs_of(load_module(str(ROOT / "examples/dsl/s5_subtile_gm.py")))[0], "a5")
    write_pto(op, "a5", notes)
    whats = [w for w, _ in notes]
    assert any("SLOT_NUM 4 or 8 only: this ring has 2 slots" in w for w in whats)
    assert any("DIR_C2V_GM" in w for w in whats) and any("address flow" in w for w in whats)
    assert all(where and "s5_subtile_gm.py:" in where for _, where in notes)
    clean = []
    write_pto(written("examples/mixed/fa_forward.py", "a5")[0], "a5", clean)
    assert clean == []


def test_compile_emit_pto_warns_of_what_ptoas_will_reject(tmp_path, capsys):
    from ptopipe.cli import main as cli_main
    code = cli_main(["compile", str(ROOT / "examples" / "dsl" / "s8_manual_sync.py"), "--variant", "m128_d2",
                     "--emit", "pto", "-o", str(tmp_path / "k.pto")])
    err = capsys.readouterr().err
    assert code == 0 and (tmp_path / "k.pto").exists()
    assert "warning: ptoas will reject this .pto: ptoas builds rings of SLOT_NUM 4 or 8 only: " \
           "this ring has 2 slots (at " in err


@pl.incore(split=pl.TILE_UP_DOWN)
def narrow_cast(a: pl.Tensor[[16, 16], pl.f16], x: pl.Tensor[[16, 8], pl.f32], out: pl.Tensor[[16, 8], pl.f16],
                wide: pl.Tensor[[16, 16], pl.f16]):
    al = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
    y = pl.load(x, [0, 0], [16, 8])     # (an 8-column accumulator would not cross: tile_boxes)
    pl.store(pl.cast(y, pl.f16), [0, 0], out)       # <- narrow
    w = pl.move(pl.matmul(al, pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)), space=pl.Vec)
    pl.store(pl.cast(w, pl.f16), [0, 0], wide)


def test_a_cast_between_two_static_shapes_is_noted():
    """An 8-column f32 -> f16 cast: f32 rows are 32 bytes as they are, f16 rows are padded to 16
    columns, and ptoas's pto.tcvt takes one static shape only: the writer notes it, at the DSL
    line (tests/codegen/test_ptoas.py sees ptoas reject it); the 16-column cast is not noted."""
    from markers import line_of
    for plat in ("a2a3", "a5"):
        notes = []
        text = write_pto(compile_program(pl.program(narrow_cast, name="nc"), plat), plat, notes)
        assert [(w.split(":")[0], int(at.split(":")[-2])) for w, at in notes] == \
            [("pto.tcvt of f32 8x8 to f16", line_of(narrow_cast.pyfunc, "<- narrow"))], notes
        assert "rows=8, cols=8, v_row=8, v_col=8" in text and "rows=8, cols=16, v_row=8, v_col=8" in text


# -- integer scalars of two types ---------------------------------------------------------------
def _dynamic_rows_program():
    """An i32 row count ``n`` met by index values: a trip count ``(n + 15) // 16``, a window
    clamped with ``pl.min(i * 16, n - 16)``, a test ``i < n // 16``."""
    @pl.aiv
    def rows(x: pl.Tensor[[64, 32], pl.f32], out: pl.Tensor[[64, 32], pl.f32], n: pl.Scalar[pl.i32]):
        for i in pl.range((n + 15) // 16):
            r0 = pl.min(i * 16, n - 16)
            t = pl.load(x, [r0, 0], [16, 32])
            if i < n // 16:
                t = pl.adds(t, 1.0)
            pl.store(t, [r0, 0], out)
    return pl.program(rows, name="dynamic_rows")


_ARITH_LINE = re.compile(r"(%[\w.]+) = arith\.(\w+) (?:\w+, )?(%[\w.]+), (%[\w.]+) : (\w+)")


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_an_i32_scalar_met_by_an_index_is_cast_to_index_first(platform):
    """MLIR's arith ops take operands of the op's one type: an ``i32`` kernel parameter in an
    expression with an index (a constant, a loop variable) is ``arith.index_cast`` to index
    before the op (ptoas: "use of value '%n' expects different type than prior uses: 'index' vs
    'i32'"), and the file reads back to the program's run."""
    import numpy as np
    from ptopipe.runtime import kernels
    text = write_pto(compile_program(_dynamic_rows_program(), platform), platform)
    types = dict(re.findall(r"(%[\w.]+): (i32|index)\b", text))           # parameters
    types.update(re.findall(r"(%[\w.]+) = arith\.constant -?\d+ : (\w+)", text))
    types.update(re.findall(r"(%[\w.]+) = arith\.index_cast %[\w.]+ : \w+ to (\w+)", text))
    ops = _ARITH_LINE.findall(text)
    for res, name, a, b, ty in ops:
        if not name.startswith("cmp"):
            types[res] = ty
    checked = [(name, a, b, ty) for _r, name, a, b, ty in ops if a in types and b in types]
    assert any(a.startswith("%n") or b.startswith("%n") for _n, a, b, _t in checked), text
    for name, a, b, ty in checked:
        assert types[a] == types[b] == ty, (name, a, types[a], b, types[b], ty)
    assert "arith.index_cast %n : i32 to index" in text, text
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 4, (64, 32)).astype(np.float32)
    for n in (16, 40, 64):
        want = np.zeros((64, 32), np.float32)
        for i in range((n + 15) // 16):
            r0 = min(i * 16, n - 16)
            want[r0:r0 + 16] = x[r0:r0 + 16] + (1 if i < n // 16 else 0)
        _aic, aiv = kernels(_reread(text, platform))          # a lone Vector kernel: on AIV0
        got = ptopipe.run(None, (aiv, None), dict(x=x, out=np.zeros((64, 32), np.float32), n=n),
                          platform=platform).outputs["out"]
        np.testing.assert_array_equal(got, want)


@pl.aiv
def _float_scalars(x: pl.Tensor[[32, 32], pl.f32], y: pl.Tensor[[32, 32], pl.f32], n: pl.Scalar[pl.i32],
                   h: pl.Scalar[pl.f16]):
    for i in pl.range(2):
        a = pl.load(x, [i * 16, 0], [16, 32])
        s = i * 0.5 + 1.0                   # index * f32, f32 + f32
        u = n * 0.5 + s / 2 + i / 4 - h * 2.0   # i32 * f32, f32 / index, index / index, f16 * f32
        if s > i:                           # f32 > index
            a = pl.muls(a, 0.25 * i)
        pl.store(pl.adds(pl.adds(pl.adds(a, s), u), h * i), [i * 16, 0], y)     # f16 * index: an f16


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_float_scalar_arithmetic_is_spelled_in_floats_ptoas_lowers(platform, tmp_path):
    """A float scalar op meeting an integer (a loop variable, an i32 parameter; ``/`` of two
    integers) converts the integer first - MLIR's float ops take floats (ptoas: "use of value '%i'
    expects different type than prior uses: 'f32' vs 'index'"), as is an f16 met by an f32 -
    and a float ``a + b`` is
    ``a - (-b)``: ptoas 0.27 lowers no ``arith.addf`` ("failed to legalize operation
    'arith.addf'").  The file reads back to the program and runs to its numbers."""
    import numpy as np
    from ptopipe.runtime import run as dsl_run
    op = compile_program(pl.program(_float_scalars, name="float_scalars"), platform)
    text = write_pto(op, platform)
    assert "arith.addf" not in text, text
    types = dict(re.findall(r"(%[\w.]+): (i32|index|f16)\b", text))
    types.update(re.findall(r"(%[\w.]+) = arith\.constant [-\d.e]+ : (\w+)", text))
    types.update(re.findall(r"(%[\w.]+) = arith\.(?:index_cast|sitofp|negf|extf) %[\w.]+ : (?:\w+ to )?(\w+)", text))
    types.update(re.findall(r"(%[\w.]+) = arith\.\w+f (?:\w+, )?%[\w.]+, %[\w.]+(?: \{[\w.]+\})? : (\w+)", text))
    types.update({"%i": "index"})
    floats = re.findall(r"= arith\.(\w+f) (?:\w+, )?(%[\w.]+), (%[\w.]+)(?: \{[\w.]+\})? : (\w+)", text)
    assert len(floats) >= 8, text
    for name, a, b, ty in floats:
        assert types[a] == types[b] == ty in ("f32", "f16"), (name, a, types.get(a), b, types.get(b), ty)
    assert re.search(r"= arith\.mulf %h, %\w+ : f16\n", text), text
    assert first_difference(op, _reread(text, platform)) is None
    x = np.random.default_rng(5).standard_normal((32, 32)).astype(np.float32)
    want = dsl_run(pl.program(_float_scalars, name="float_scalars"), dict(x=x, y=np.zeros_like(x), n=3, h=1.5),
                   platform=platform).outputs["y"]
    got = ptopipe.run_pto(text=text, inputs=dict(x=x, n=3, h=1.5), platform=platform).outputs["y"]
    np.testing.assert_array_equal(got, want)
    ptoas = os.environ.get("PTOAS")
    if ptoas:
        f = tmp_path / "s.pto"
        f.write_text(text)
        r = subprocess.run([ptoas, f"--pto-arch={'a5' if platform == 'a5' else 'a3'}", str(f), "-o",
                            str(tmp_path / "s.cpp")], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


def _mask_kernel(mask_rows, mask_cols):
    m = (f"!pto.tile_buf<loc=vec, dtype=ui8, rows={mask_rows}, cols={mask_cols}, v_row={mask_rows}, "
         f"v_col={mask_cols}, blayout=row_major, slayout=none_box, fractal=512, pad=0>")
    return "\n".join([
        'module attributes {pto.target_arch = "a3"} {',
        "  func.func @k(%x_ptr: !pto.ptr<f32>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {",
        "    %c0 = arith.constant 0 : index", "    %c1 = arith.constant 1 : index",
        "    %c16 = arith.constant 16 : index", "    %c32 = arith.constant 32 : index",
        "    %zero = arith.constant 0.0 : f32",
        "    %v = pto.make_tensor_view %x_ptr, shape = [%c16, %c32], strides = [%c32, %c1] : !pto.tensor_view<?x?xf32>",
        "    %pv = pto.partition_view %v, offsets = [%c0, %c0], sizes = [%c16, %c32] : !pto.tensor_view<?x?xf32> "
        "-> !pto.partition_tensor_view<16x32xf32>",
        f"    %x = pto.alloc_tile : {_T}", f"    %z = pto.alloc_tile : {_T}", f"    %tmp = pto.alloc_tile : {_T}",
        f"    %m = pto.alloc_tile : {m}",
        f"    pto.tload ins(%pv : !pto.partition_tensor_view<16x32xf32>) outs(%x : {_T})",
        f"    pto.texpands ins(%zero : f32) outs(%z : {_T})",
        f"    pto.tcmps ins(%x, %zero {{cmpMode = #pto<cmp gt>}} : {_T}, f32) outs(%m : {m})",
        f"    pto.tsel ins(%m, %x, %z, %tmp : {m}, {_T}, {_T}, {_T}) outs(%x : {_T})",
        f"    pto.tstore ins(%x : {_T}) outs(%pv : !pto.partition_tensor_view<16x32xf32>)",
        "    return", "  }", "}", ""])


@pytest.mark.parametrize("cols", [32, 64])
def test_a_compare_mask_ptoas_declares_in_the_sources_shape_reads_statically(cols):
    """ptoas's files declare the mask of a 16 x 32 compare as a 16 x 32 tile of bytes (its
    Cmp / Sel samples; pto-isa's TCMP asserts only the rows, and its Tile takes no row of
    fewer than 32 bytes): the IR's packed 16 x 4 mask in the first bytes of each row."""
    op = read_pto(_mask_kernel(16, cols), "k.pto")
    (cmps,) = [o for o in op.walk() if o.name == "pl.cmps"]
    assert cmps.results[0].type.shape == (16, 4)
    assert [u.owner.name for u in cmps.results[0].uses] == ["pl.select"]


def test_a_compare_mask_of_other_rows_is_still_refused():
    with pytest.raises(ParseError, match="cmps produces Vec tile 16x4 u8 but the IR says Vec tile 8x32 u8"):
        read_pto(_mask_kernel(8, 32), "k.pto")
