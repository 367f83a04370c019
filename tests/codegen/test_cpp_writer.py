"""The pto-isa C++ writer (ptopipe.codegen.write_cpp) checked against the compiled IR it
writes: the TPipe template arguments are the init op's attributes, each kernel's call
sequence is its op sequence, every TASSIGN is the allocator's address, the A2A3 / A5
variants differ where they must, the text is balanced and (with g++ / clang++ on the
machine) type-checks against the mock header tests/cpp/cpp_mock/pto/pto-inst.hpp."""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess

import pytest

from ptopipe.arch.catalogue import OPS as CATALOGUE
from ptopipe.arch.vocab import PLAIN_DIRECTION, Direction, TileSplitAxis
from ptopipe.driver.programs import programs_of
from ptopipe.driver.loader import load_module
from ptopipe.codegen import write_cpp
from ptopipe.codegen.cpp_origin import strip_origins
from ptopipe.errors import CompileError
from ptopipe.ir.layout import read_layout
from plans import named as named_plan
from ptopipe.ir.vocab import FunctionKind
from ptopipe.passes import compile_program

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MOCK = os.path.join(ROOT, "tests", "cpp", "cpp_mock")
S1, S4, FA = (os.path.join(ROOT, "examples", "mixed", f + ".py")
              for f in ("s1_cv_split", "s4_both_ways", "fa_forward"))
S2 = os.path.join(ROOT, "examples", "mixed", "s2_cv_nosplit.py")
S5 = os.path.join(ROOT, "examples", "dsl", "s5_subtile_gm.py")     # no mixed S5 exists
CHECKED = {"s1": S1, "s4": S4, "s5": S5, "fa": FA}
# the structure checks run on every other example too (mixed and hand-written pairs)
ALL = dict(CHECKED, **{f"{d}/{f[:-3]}": os.path.join(ROOT, "examples", d, f)
                       for d in ("mixed", "dsl") for f in sorted(os.listdir(os.path.join(ROOT, "examples", d)))
                       if f.endswith(".py") and os.path.join(ROOT, "examples", d, f) not in CHECKED.values()})
PLATFORMS = ("a2a3", "a5")
CXX = shutil.which("g++") or shutil.which("clang++")


@functools.lru_cache(maxsize=None)
def compiled(path: str, platform: str, protocol: str = "spec"):
    """(compiled op program, its C++) of the one program of an example file."""
    (prog,) = programs_of(load_module(path))
    op = compile_program(prog, platform, protocol=protocol)
    return op, strip_origins(write_cpp(op, platform))     # the C++ alone (DSL lines: tests/cpp)


def kernels(op) -> list:
    return [f for f in op.regions[0].blocks[0]
            if f.attributes["kind"] in (FunctionKind.AIC, FunctionKind.AIV)]


def section(cpp: str, name: str) -> str:
    """The text of kernel ``name``'s function (from its comment to the closing brace)."""
    m = re.search(rf"^// AI[CV] kernel '{re.escape(name)}'\n(.*?)^}}$", cpp, re.S | re.M)
    assert m, f"no kernel {name!r} in the C++"
    return m.group(1)


def init_op(f):
    (op,) = [o for o in f.regions[0].blocks[0]
             if o.name in ("pl.aic_initialize_pipe", "pl.aiv_initialize_pipe")]
    return op


PIPE = re.compile(r"using Pipe = TPipe<(\d+), Direction::(\w+), (\d+), (\d+), (\d+), (true|false)>;\n"
                  r"\s*Pipe pipe\(\(__gm__ void \*\)(\w+), (\d+), (\d+)\);")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("example", sorted(ALL))
def test_pipe_template_arguments_are_the_init_attributes(example, platform):
    op, cpp = compiled(ALL[example], platform)
    for f in kernels(op):
        a = init_op(f).attributes
        m = PIPE.search(section(cpp, f.attributes["sym_name"]))
        assert m, f.attributes["sym_name"]
        flag, d, size, num, local, nosplit, gm, c2v, v2c = m.groups()
        # LocalSlotNum: the init's local_slot_num (ExpandMixedKernel gives SLOT_NUM; on a ring
        # in GM VerifyPipes lowers it to the hold bound, and the reserve holds that many),
        # else pto-isa's default 2 - what the simulator stages
        want_local = a["local_slot_num"] if a.get("local_slot_num") is not None else 2
        if example.startswith("mixed/"):
            assert 1 <= want_local <= a["slot_num"]
            if platform == "a5":
                assert want_local == a["slot_num"]
        # a *_GM direction is A5's (pto-isa declares it under PTO_NPU_ARCH_A5): on A2A3, whose
        # rings are in GM anyway, it is spelled as the plain direction
        want_dir = Direction(a["dir_mask"])
        if platform == "a2a3":
            want_dir = PLAIN_DIRECTION.get(want_dir, want_dir)
        assert (int(flag), d, int(size), int(num), int(local)) == \
            (a["flag_id"], want_dir.name, a["slot_size"], a["slot_num"], want_local)
        splits = {o.attributes["split"] for o in f.walk()
                  if o.name in ("pl.tpush", "pl.tpop", "pl.talloc") and o.attributes["split"] is not None}
        assert nosplit == ("true" if splits == {TileSplitAxis.TILE_NO_SPLIT} else "false")
        # the consumer buffers are the resolved bases of the rings the init names
        bases = {o.attributes["name"]: o.attributes["base"] for o in f.regions[0].blocks[0]
                 if o.name in ("pl.reserve_buffer", "pl.import_peer_buffer")}
        assert int(c2v) == (bases[a["c2v_ring"]] if a.get("c2v_ring") else 0)
        assert int(v2c) == (bases[a["v2c_ring"]] if a.get("v2c_ring") else 0)
        gm_param = f.regions[0].blocks[0].args[-1].name
        assert gm == (gm_param if a["ring"] == "gm" else "nullptr")


def test_pipe_arguments_are_read_from_the_attributes_not_derived():
    """Another flag base, slot count and direction in the init op: the C++ follows them."""
    (prog,) = programs_of(load_module(S1))
    op = compile_program(prog, "a2a3")             # a fresh copy: this test edits it
    for f in kernels(op):
        init_op(f).attributes.update(flag_id=6, slot_num=3, local_slot_num=1, dir_mask=Direction.DIR_BOTH)
    cpp = write_cpp(op, "a2a3")
    assert cpp.count("using Pipe = TPipe<6, Direction::DIR_BOTH, 2048, 3, 1, false>;") == 2


@pytest.mark.parametrize("platform,spelled", [("a2a3", "DIR_C2V"), ("a5", "DIR_C2V_GM")])
def test_a_gm_direction_is_spelled_as_the_platform_has_it(platform, spelled):
    """pto-isa declares the *_GM directions for A5 only (fifo.hpp, under PTO_NPU_ARCH_A5): on
    A2A3, whose rings are in GM anyway, DIR_C2V_GM is written DIR_C2V, as the simulator runs it."""
    op, cpp = compiled(S5, platform)
    assert {init_op(f).attributes["dir_mask"] for f in kernels(op)} == {Direction.DIR_C2V_GM}
    assert cpp.count(f"Direction::{spelled}, ") == 2 and cpp.count("Direction::") == 2


def expected_calls(block) -> list:
    """The pto-isa calls of a kernel body, from its op IR (pre-order)."""
    names = {"pl.tpush": "TPUSH", "pl.tpop": "TPOP", "pl.tfree": "TFREE", "pl.talloc": "TALLOC",
             "pl.record_event": "set_flag", "pl.wait_event": "wait_flag", "pl.barrier": "pipe_barrier"}
    names.update({"pl." + d.dsl: d.name for d in CATALOGUE.values() if d.dsl})
    return [names[o.name] for op in block for o in op.walk() if o.name in names]


# TASSIGN binds and TRESHAPE re-views a tile (no op of the IR): not calls
CALL = re.compile(r"\b(T(?!ASSIGN\b|RESHAPE\b)[A-Z_]+|set_flag|wait_flag|pipe_barrier)\s*[<(]")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("example", sorted(ALL))
def test_call_sequence_of_each_kernel_is_its_op_sequence(example, platform):
    op, cpp = compiled(ALL[example], platform)
    for f in kernels(op):
        got = CALL.findall(section(cpp, f.attributes["sym_name"]))
        want = expected_calls(list(f.regions[0].blocks[0]))
        assert got == want, f.attributes["sym_name"]


def test_s1_call_sequence_by_hand():
    """An expectation written out, not derived: S1's Cube and Vector kernels."""
    _op, cpp = compiled(S1, "a2a3")
    assert CALL.findall(section(cpp, "s1_aic")) == ["TLOAD", "TMOV", "TLOAD", "TMOV", "TMATMUL", "TPUSH"]
    assert CALL.findall(section(cpp, "s1_aiv")) == ["TPOP", "TLOAD", "TADD", "TFREE", "TSTORE"]
    assert "TPUSH<Pipe, TileAcc_16x32_f32, TileSplitAxis::TILE_UP_DOWN>(pipe, acc);" in cpp
    assert "TPOP<Pipe, TileVec_8x32_f32, TileSplitAxis::TILE_UP_DOWN>(pipe, part);" in cpp
    assert "TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);" in cpp
    assert "Gm_16x32_f32 gm1(a + ((i * 16) * 32));" in cpp       # the A row block of step i


ASSIGN = re.compile(r"TASSIGN\((\w+), (0x[0-9a-f]+)\);")
ROTATION = re.compile(r"const uint32_t (\w+)_addrs\[\d+\] = \{([^}]*)\};")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("example", sorted(ALL))
def test_tassign_addresses_are_the_allocators(example, platform):
    op, cpp = compiled(ALL[example], platform)
    for f in kernels(op):
        lay = named_plan(read_layout(f))
        text = section(cpp, f.attributes["sym_name"])
        got = {n: int(a, 16) for n, a in ASSIGN.findall(text)}
        rot = {n: tuple(int(x, 16) for x in a.split(",")) for n, a in ROTATION.findall(text)}
        # a var's buffers by its name; an unnamed op's (keyed by the op) under a fresh name
        assert {n: a for n, a in rot.items() if n in lay.rotations} == \
            {n: a for n, a in lay.rotations.items() if isinstance(n, str)}
        assert sorted(rot.values()) == sorted(lay.rotations.values())
        for name, (_mem, addr) in lay.tiles.items():
            if name not in lay.rotations:
                assert got[name] == addr, (f.attributes["sym_name"], name)
        temps = sorted([a for k, (_m, a) in lay.temps.items() if k not in lay.rotations]
                       + [a for _m, a in lay.scratch.values()])
        named = {n for n in lay.tiles if n not in lay.rotations}
        assert sorted(a for n, a in got.items() if n not in named) == temps
        assert len(got) == len(named) + len(temps)


def test_fa_has_a_rotating_tile_and_assigns_it_in_turn():
    op, cpp = compiled(FA, "a2a3")
    text = section(cpp, "fa_aiv")
    rotations = dict(named_plan(read_layout(kernels(op)[1])).rotations)
    assert rotations
    for name, addrs in rotations.items():
        assert f"TASSIGN({name}, {name}_addrs[{name}_turn]);" in text
        assert f"{name}_turn = ({name}_turn + 1) % {len(addrs)};" in text
    assert "m = m_new;" in text and "o = o0;" in text        # loop-carried handles


def test_a2a3_and_a5_differ_in_the_ring_and_the_no_split_lane():
    _op, a3 = compiled(S4, "a2a3")
    _op, a5 = compiled(S4, "a5")
    assert "Pipe pipe((__gm__ void *)gm_slot_buffer, " in section(a3, "s4_aiv")
    assert "Pipe pipe((__gm__ void *)nullptr, " in section(a5, "s4_aiv")
    for proto in ("pto-isa", "spec"):             # A5: a no-split pipe has one lane, AIV0
        _op, a5_nosplit = compiled(S2, "a5", proto)
        aiv = section(a5_nosplit, "s2_aiv")
        assert "if (get_subblockid() == 0) {" in aiv
        assert aiv.index("if (get_subblockid() == 0) {") < aiv.index("TPOP<")
        assert "TPipe<0, Direction::DIR_C2V, 2048, 4, 4, true>" in aiv
        assert "get_subblockid() == 0" not in section(a5_nosplit, "s2_aic")
    for plat, proto in (("a2a3", "pto-isa"), ("a2a3", "spec")):     # both lanes take part
        _op, cpp = compiled(S2, plat, proto)
        aiv = section(cpp, "s2_aiv")
        assert "if (get_subblockid() == 0) {" not in cpp
        assert "const bool data_lane = get_subblockid() == 0;" in aiv
        # ... in every handshake, but AIV1 loads, computes and stores nothing (the lane-1 replay)
        calls = {name: block for name, block in enclosing_blocks(aiv)}
        assert calls and {n for n in calls if calls[n] == "if (data_lane) {"} == {"TLOAD", "TADD", "TSTORE"}
        assert calls["TPOP"].startswith("for (") and calls["TFREE"].startswith("for (")
        assert "data_lane" not in section(cpp, "s2_aic")
    _op, s5 = compiled(S5, "a5")                   # an A5 GM-ring direction keeps the GM buffer
    assert "TPipe<0, Direction::DIR_C2V_GM, 262144, 2, 2, false>" in s5
    assert "Pipe pipe((__gm__ void *)fifo, " in s5


def enclosing_blocks(body: str) -> list:
    """[(call name, the opening line of the innermost block around it)] of a kernel body."""
    out, stack = [], []
    for line in body.splitlines():
        line = line.strip()
        m = CALL.search(line)
        if m:
            out.append((m.group(1), stack[-1] if stack else ""))
        if line.endswith("{"):
            stack.append(line)
        elif line == "}" and stack:
            stack.pop()
    return out


def _balanced(text: str) -> bool:
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r'"[^"\n]*"', '""', text)
    stack, pairs = [], {")": "(", "]": "[", "}": "{"}
    for ch in text:
        if ch in "([{":
            stack.append(ch)
        elif ch in pairs:
            if not stack or stack.pop() != pairs[ch]:
                return False
    return not stack


EXAMPLES = sorted([os.path.join("examples", "mixed", f) for f in os.listdir(os.path.join(ROOT, "examples", "mixed"))
                   if f.endswith(".py")] + [os.path.join("examples", "dsl", f)
                                            for f in os.listdir(os.path.join(ROOT, "examples", "dsl"))
                                            if f.endswith(".py")])


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_example_is_balanced_and_type_checks_against_the_mock(example, tmp_path):
    for plat in PLATFORMS:
        _op, cpp = compiled(os.path.join(ROOT, example), plat)
        assert _balanced(cpp), (example, plat)
        if CXX is None:
            continue
        src = tmp_path / f"k_{plat}.cpp"
        src.write_text(cpp)
        _type_checks(src)


#: the flags that give the type checks the mock header precompiled (:func:`_precompile_mock`)
_MOCK_PCH: list = []


@pytest.fixture(scope="module", autouse=True)
def _mock_precompiled(tmp_path_factory):
    """The mock header precompiled once for this module's type checks (about half of each
    check's time is parsing it and the standard headers it includes)."""
    _MOCK_PCH[:] = _precompile_mock(tmp_path_factory.mktemp("mock_pch"))
    yield
    _MOCK_PCH.clear()


def _precompile_mock(directory) -> list:
    """``-include`` flags of the mock header precompiled into ``directory``, one variant per
    platform macro it reads (g++ takes the one whose macros match the check's), or [] where
    the compiler is not g++ (clang reads a precompiled header only by -include-pch) or cannot
    build it: the checks then read the header itself.  The checked files include the mock
    first, so including it before them changes nothing (it is #pragma once)."""
    if CXX is None or "Free Software Foundation" not in subprocess.run(
            [CXX, "--version"], capture_output=True, text=True).stdout:
        return []
    header = directory / "mock.hpp"
    header.write_text("#include <pto/pto-inst.hpp>\n")
    (directory / "mock.hpp.gch").mkdir()
    for name, arch in (("a2a3", []), ("a5", ["-DPTO_NPU_ARCH_A5"])):
        r = subprocess.run([CXX, "-std=c++17", *arch, "-I", MOCK, "-x", "c++-header", str(header), "-o",
                            str(directory / "mock.hpp.gch" / name)], capture_output=True, text=True)
        if r.returncode != 0:
            return []
    return ["-include", str(header)]


def _type_checks(src):
    """``src`` compiles against the mock as the host pass and as each core's pass (the
    compiler defines __DAV_CUBE__ / __DAV_VEC__ per core: the entry's calls sit under them),
    for the platform its first line names (A5: PTO_NPU_ARCH_A5, which declares the *_GM
    directions)."""
    from ptopipe.codegen.cpp_writer import written_for
    arch = ["-DPTO_NPU_ARCH_A5"] if written_for(src.read_text().splitlines()[0])[0] == "a5" else []
    for define in ([], ["-D__DAV_CUBE__"], ["-D__DAV_VEC__"]):
        r = subprocess.run([CXX, "-std=c++17", "-fsyntax-only", *arch, *define, *_MOCK_PCH, "-I", MOCK, str(src)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, (define, r.stderr[:2000])


@pytest.mark.parametrize("pto", sorted(f for f in os.listdir(os.path.join(ROOT, "tests", "pto"))
                                       if f.endswith(".pto")))
def test_cpp_of_every_pto_file_type_checks_for_each_core(pto, tmp_path):
    """A .pto file defines its entry first: the C++ entry must still come after the kernels
    it calls (with either core's macro defined, 'cube' is declared)."""
    from ptopipe.cli import main as cli_main
    if CXX is None:
        pytest.skip("no C++ compiler on this machine")
    out = tmp_path / "k.cpp"
    path = os.path.join(ROOT, "tests", "pto", pto)
    assert cli_main(["compile", path, "--emit", "cpp", "-o", str(out)]) == 0
    _type_checks(out)


def test_balance_check_and_mock_header_reject_broken_cpp(tmp_path):
    """The two syntax guards can fail: an unclosed loop, Left/Right swapped in TMATMUL."""
    _op, cpp = compiled(S1, "a2a3")
    assert not _balanced(cpp.replace("for (int64_t i = 0; i < 4; i += 1) {\n", "for (;;) {{\n", 1))
    if CXX is None:
        pytest.skip("no C++ compiler on this machine")
    src = tmp_path / "bad.cpp"
    src.write_text(cpp.replace("TMATMUL(acc, a_l0, b_l0)", "TMATMUL(acc, b_l0, a_l0)"))
    r = subprocess.run([CXX, "-std=c++17", "-fsyntax-only", "-I", MOCK, str(src)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "TMATMUL" in r.stderr


# -- what the writer refuses ---------------------------------------------------------------
def test_an_op_the_writer_cannot_express_is_a_compile_error_at_its_line():
    from ptopipe.ir.core import Operation
    (prog,) = programs_of(load_module(S1))
    op = compile_program(prog, "a2a3")             # a fresh copy: this test edits it
    aiv = kernels(op)[1]
    loop = next(o for o in aiv.regions[0].blocks[0] if o.name == "pl.for")
    tpop = next(o for o in loop.walk() if o.name == "pl.tpop")
    # a call of a kernel from a kernel: valid IR (it has a tree form), no pto-isa C++
    tpop.insert_before(Operation("pl.call", (), (), {"callee": "s1_aic"}, (), tpop.loc))
    with pytest.raises(CompileError) as e:
        write_cpp(op, "a2a3")
    assert e.value.what == "pl.call has no pto-isa C++ form in the C++ writer"
    assert e.value.where == str(tpop.loc) and tpop.loc.line > 0


def test_negative_step_loop_is_refused_at_its_dsl_line(tmp_path):
    import ptopipe.language as pl
    from markers import line_of

    @pl.aiv
    def k(x: pl.Tensor[[4, 8], pl.f32], out: pl.Tensor[[4, 8], pl.f32]):
        for i in pl.range(3, -1, -1):                       # DOWN
            t = pl.load(x, [i, 0], [1, 8])
            pl.store(t, [i, 0], out)

    op = compile_program(pl.program(k, name="down"), "a2a3")
    with pytest.raises(CompileError) as e:
        write_cpp(op, "a2a3")
    assert "step -1" in e.value.what
    assert e.value.where.split(":")[-2] == str(line_of(k.pyfunc, "DOWN"))


def test_uncompiled_or_other_platform_program_is_refused():
    (prog,) = programs_of(load_module(S1))
    with pytest.raises(CompileError, match="needs a compiled program"):
        write_cpp(prog.clone(), "a2a3")
    op, _cpp = compiled(S1, "a5")
    with pytest.raises(CompileError, match="compiled for a5, not a2a3"):
        write_cpp(op, "a2a3")


def test_tfree_without_a_split_needs_one_pop_split():
    """FA's Vector TFREEs carry no split: they take the TPOPs' one; two splits on the same
    ring leave the TFREE ambiguous - a CompileError at the TFREE's line."""
    (prog,) = programs_of(load_module(FA))
    op = compile_program(prog, "a2a3")             # a fresh copy: this test edits it
    aiv = kernels(op)[1]
    pops = [o for o in aiv.walk() if o.name == "pl.tpop"]
    tfree = next(o for o in aiv.walk() if o.name == "pl.tfree")
    assert tfree.attributes["split"] is None and len(pops) == 4      # FA is software-pipelined
    pops[-1].attributes["split"] = TileSplitAxis.TILE_LEFT_RIGHT
    with pytest.raises(CompileError) as e:
        write_cpp(op, "a2a3")
    assert e.value.what == ("TFREE without a split in fa_aiv, whose TPOPs of DIR_C2V use 2 "
                            "different splits")
    assert e.value.where == str(tfree.loc)


def test_two_programs_in_one_unit_define_the_helpers_once(tmp_path):
    if CXX is None:
        pytest.skip("no C++ compiler on this machine")
    _op, s1 = compiled(S1, "a2a3")
    _op, s4 = compiled(S4, "a5")
    src = tmp_path / "two.cpp"
    src.write_text(s1 + s4)
    r = subprocess.run([CXX, "-std=c++17", "-fsyntax-only", "-I", MOCK, str(src)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[:2000]


def _branchy():
    """A mixed kernel with a scalar parameter, a branch yielding a tile on the Cube side, a
    loop carrying a scalar and floor division in an index."""
    import ptopipe.language as pl

    @pl.incore
    def k(a: pl.Tensor[[16, 16], pl.f32], b: pl.Tensor[[16, 16], pl.f32],
          out: pl.Tensor[[16, 16], pl.f32], flag: pl.Scalar[pl.index]):
        x = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        y = pl.move(pl.load(b, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        if flag > 0:
            acc1 = pl.matmul(x, y)
            acc = pl.yield_(acc1)
        else:
            acc2 = pl.matmul(x, pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Right))
            acc = pl.yield_(acc2)
        r = pl.move(acc, space=pl.Vec)
        for i, (row,) in pl.range(2, init_values=(0,)):
            v = pl.load(b, [row // 2, 0], [8, 16])
            pl.store(pl.add(v, v), [row // 2, 0], out)
            (row_out,) = pl.yield_(row + 8)
        pl.store(pl.add(r, r), [0, 0], out)
    return pl.program(k, name="branchy")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_branch_results_carried_scalars_and_index_math(platform, tmp_path):
    op = compile_program(_branchy(), platform)
    cpp = strip_origins(write_cpp(op, platform))
    aic, aiv = section(cpp, "k_aic"), section(cpp, "k_aiv")
    assert "int64_t flag," in cpp
    assert re.search(r"if \(\(flag > 0\)\) \{\n\s+TMATMUL\(acc1, x, y\);\n\s+acc = acc1;\n\s+\} else \{", aic)
    assert re.search(r"TMATMUL\(acc2, x, \w+\);\n\s+acc = acc2;\n\s+\}\n\s+TPUSH<", aic)
    assert "TileAcc_16x16_f32 acc;\n" in aic and "TASSIGN(acc," not in aic   # a handle, no storage
    assert re.search(r"int64_t row = 0;\n\s+for \(int64_t i = 0; i < 2; i \+= 1\) \{", aiv)
    assert "ptopipe_floordiv(row, 2)" in aiv and re.search(r"row = \(row \+ 8\);\n\s+\}", aiv)
    for f in kernels(op):                          # every stored tile at the allocator's address
        lay = named_plan(read_layout(f))
        got = dict(ASSIGN.findall(section(cpp, f.attributes["sym_name"])))
        assert {n: int(a, 16) for n, a in got.items() if n in lay.tiles} == \
            {n: a for n, (_m, a) in lay.tiles.items()}
    assert _balanced(cpp)
    if CXX is not None:
        src = tmp_path / "k.cpp"
        src.write_text(cpp)
        r = subprocess.run([CXX, "-std=c++17", "-fsyntax-only", "-I", MOCK, str(src)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr[:2000]


def test_row_reductions_take_the_allocators_scratch_tile():
    """pto-isa's TROWMAX / TROWSUM take a scratch tile (``TROWSUM(dst, src, tmp)``): FA's
    Vector kernel passes one of its source's type, TASSIGNed where the allocator put it."""
    op, cpp = compiled(FA, "a5")
    text = section(cpp, "fa_aiv")
    lay = named_plan(read_layout(kernels(op)[1]))
    calls = re.findall(r"(TROW(?:SUM|MAX|MIN))\((\w+), (\w+), (\w+)\);", text)
    assert calls and len(calls) == len(lay.scratch)
    assigned = {n: int(a, 16) for n, a in ASSIGN.findall(text)}
    for _op, _dst, src, tmp in calls:
        assert "_tmp" in tmp and tmp != src
        assert re.search(rf"(\w+) {tmp};", text).group(1) == re.search(rf"(\w+) {src};", text).group(1)
    assert sorted(assigned[t] for *_x, t in calls) == sorted(a for _m, a in lay.scratch.values())


NARROW = '''
import ptopipe.language as pl


@pl.incore(split=pl.TILE_UP_DOWN)
def narrow(b: pl.Tensor[[16, 5], pl.f32], out: pl.Tensor[[16, 5], pl.f32], m: pl.Tensor[[16, 1], pl.f32]):
    r = pl.load(b, [0, 0], [16, 5])
    pl.store(pl.adds(r, 1.0), [0, 0], out)
    pl.store(pl.row_max(r), [0, 0], m)


PROGRAM = pl.program(narrow, name="narrow")
'''


def test_narrow_tiles_are_declared_padded_to_32_byte_rows(tmp_path):
    """pto-isa static_asserts Cols * sizeof(T) % 32 == 0 for a row-major unboxed tile: a
    16x5 f32 tile is declared with padded Cols and its valid shape, and the
    allocator keeps the padded bytes free.  A row reduction's [8, 1] column is DN: one 32-byte
    column (TROWMAX writes a DN dst with Cols == 1).  (A 5-column accumulator does not cross to
    the Vector side: ``passes.tile_boxes``; the tile is loaded there.)"""
    src = tmp_path / "narrow.py"
    src.write_text(NARROW)
    for plat in PLATFORMS:
        _op, cpp = compiled(str(src), plat)
        assert "float, 8, 8, BLayout::RowMajor, 8, 5>" in cpp, cpp       # each core's 8x5 half
        assert "float, 8, 1, BLayout::ColMajor, 8, 1>" in cpp             # the row_max column
        if CXX is not None:
            out = tmp_path / f"n_{plat}.cpp"
            out.write_text(cpp)
            _type_checks(out)


def _in_order(text: str, lines) -> None:
    """Each of ``lines`` occurs in ``text``, in this order (FileCheck's CHECK lines)."""
    at = 0
    for ln in lines:
        k = text.find(ln, at)
        assert k >= 0, f"not found after offset {at}: {ln!r}\n{text[at:at + 3000]}"
        at = k + len(ln)


def test_an_a5_accumulator_of_24_columns_crosses_at_its_32_column_pitch(tmp_path):
    """A 16x24 f32 accumulator is a 16x32 Acc tile (whole 16x16 fractals).  Pushed TILE_UP_DOWN
    into the Vector cores' UB, pto-isa's pushAcc2VecFiFo writes each core's 8 rows 32 elements
    apart: the ring's slot holds an 8x32 part, each core pops it into an 8x32 tile with its 8x24
    valid region (the TPOP binds the tile at the slot) and the kernel reads a copy in the 8x24
    tile's own static shape; the 32x24 Right tile is 32x32, and the Mat tile TMOVed into it too."""
    from padded_tiles import up_down_cols
    from ptopipe.codegen import write_pto
    op = compile_program(up_down_cols(), "a5", protocol="pto-isa")
    cpp = strip_origins(write_cpp(op, "a5"))
    _in_order(section(cpp, "ud24_aic"), [
        "using TileMat_32x24_f32_in_32x32 = Tile<TileType::Mat, float, 32, 32, BLayout::RowMajor, 32, 24>;",
        "Tile<TileType::Right, float, 32, 32, BLayout::RowMajor, 32, 24, SLayout::ColMajor, 512>;",
        "using TileAcc_16x24_f32 = Tile<TileType::Acc, float, 16, 32, BLayout::ColMajor, 16, 24, SLayout::RowMajor, "
        "1024>;",
        "using Pipe = TPipe<0, Direction::DIR_C2V, 1024, 4, 4, false>;",
        "TLOAD(tmp, gm0);", "TMOV(br, tmp);",
        "TPUSH<Pipe, TileAcc_16x24_f32, TileSplitAxis::TILE_UP_DOWN>(pipe, tmp_2);"])
    _in_order(section(cpp, "ud24_aiv"), [
        "using TileVec_8x24_f32_in_8x32 = Tile<TileType::Vec, float, 8, 32, BLayout::RowMajor, 8, 24>;",
        "using TileVec_8x24_f32 = Tile<TileType::Vec, float, 8, 24, BLayout::RowMajor, 8, 24>;",
        "TileVec_8x24_f32_in_8x32 popped;",
        "using Pipe = TPipe<0, Direction::DIR_C2V, 1024, 4, 4, false>;",
        "TPOP<Pipe, TileVec_8x24_f32_in_8x32, TileSplitAxis::TILE_UP_DOWN>(pipe, popped);",
        "TMOV(y, popped);", "TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);", "TCOLEXPANDMUL(tmp, y, bv);"])
    pto = write_pto(op, "a5")
    _in_order(pto, [
        "pto.tmov ins(%2 : !pto.tile_buf<loc=mat, dtype=f32, rows=32, cols=32, v_row=32, v_col=24,",
        "outs(%br : !pto.tile_buf<loc=right, dtype=f32, rows=32, cols=32, v_row=32, v_col=24,",
        "slot_size = 1024, slot_num = 4",
        "pto.tpop(%5, %pipe : !pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=32, v_row=8, v_col=24,",
        "pto.tmov ins(%5 : !pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=32, v_row=8, v_col=24,",
        "outs(%y : !pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=24, v_row=8, v_col=24,"])
    if CXX is not None:
        out = tmp_path / "ud24.cpp"
        out.write_text(cpp)
        _type_checks(out)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_24_row_accumulator_and_its_left_tile_are_declared_in_32_rows(platform):
    """A 24x32 accumulator is a 32x32 Acc tile, its 24x32 Left operand a 32x32 Left tile and the
    Mat tile TMOVed into it 32x32 too (pto-isa's TMOV from Mat takes the destination's static
    shape); its TILE_LEFT_RIGHT parts need no box (24x16, rows 16 columns apart)."""
    from padded_tiles import left_right_rows
    cpp = strip_origins(write_cpp(compile_program(left_right_rows(), platform, protocol="pto-isa"), platform))
    _in_order(section(cpp, "lr24_aic"), [
        "using TileMat_24x32_f32_in_32x32 = Tile<TileType::Mat, float, 32, 32, BLayout::RowMajor, 24, 32>;",
        "Tile<TileType::Left, float, 32, 32, BLayout::", ", 24, 32, SLayout::RowMajor, 512>;",
        "using TileAcc_24x32_f32 = Tile<TileType::Acc, float, 32, 32, BLayout::ColMajor, 24, 32, SLayout::RowMajor, "
        "1024>;"])
    _in_order(section(cpp, "lr24_aiv"), [
        "using TileVec_24x16_f32 = Tile<TileType::Vec, float, 24, 16, BLayout::RowMajor, 24, 16>;",
        "TPOP<Pipe, TileVec_24x16_f32, TileSplitAxis::TILE_LEFT_RIGHT>"])


def test_a_tile_pushed_by_a_two_lane_no_split_kernel_is_empty_on_aiv1(tmp_path):
    """AIV1 replays a TILE_NO_SPLIT kernel's TPUSHes with an empty tile: the pushed tile has a
    DYNAMIC valid shape, 0 x 0 on sub-block 1 (tests/cpp/test_cpp_roundtrip.py runs it)."""
    from test_cpp_roundtrip import v2c_no_split_program
    cpp = strip_origins(write_cpp(compile_program(v2c_no_split_program(), "a2a3"), "a2a3"))
    assert "using TileVec_16x16_f32_dyn = Tile<TileType::Vec, float, 16, 16, BLayout::RowMajor, -1, -1>;" in cpp
    assert re.search(r"TileVec_16x16_f32_dyn (\w+)\(get_subblockid\(\) == 0 \? 16 : 0, "
                     r"get_subblockid\(\) == 0 \? 16 : 0\);", cpp), cpp
    assert "TPUSH<Pipe, TileVec_16x16_f32_dyn, TileSplitAxis::TILE_NO_SPLIT>(pipe, " in cpp
    if CXX is None:
        pytest.skip("no C++ compiler on this machine")
    src = tmp_path / "k.cpp"
    src.write_text(cpp)
    _type_checks(src)


def test_a_one_column_tile_moves_through_a_dn_global_tensor():
    """A [TM, 1] column load / store: the GlobalTensor has the layout the DN tile needs (pto-isa's
    Vec TLOAD moves only ND<-ND and DN<-DN), spelled as ptoas's C++ spells it; a wider window
    keeps pto-isa's default ND (tests/cpp/test_cpp_roundtrip.py runs the kernel)."""
    from test_cpp_roundtrip import per_row_program
    for plat in PLATFORMS:
        cpp = strip_origins(write_cpp(compile_program(per_row_program(), plat), plat))
        dn = re.findall(r"using (\w+) = GlobalTensor<float, pto::Shape<1, 1, 1, 8, 1>, "
                        r"pto::Stride<1, 1, 1, 1, 1>, pto::Layout::DN>;", cpp)
        assert len(dn) == 1, cpp
        aiv = section(cpp, "per_row_aiv")
        load = re.search(rf"{dn[0]} (\w+)\(rs[^;]*\);\n\s*TLOAD\((\w+), \1\);", aiv)
        assert load and re.search(rf"TileVec_8x1_f32 {load.group(2)};", cpp), aiv
        assert re.search(rf"{dn[0]} (\w+)\(mx[^;]*\);\n\s*TSTORE\(\1, \w+\);", aiv), aiv
        assert re.search(r"using \w+ = GlobalTensor<float, pto::Shape<1, 1, 1, 8, 16>, pto::Stride<1, 1, 1, 16, 1>>;",
                         cpp), cpp
