"""The runtime binds the FlagID each pipe init carries (AllocateFlags' numbering), and a
hand-written kernel run without AllocateFlags gets the same numbering in its init order;
a function initialises each direction once."""
import numpy as np
import pytest

import ptopipe.language as pl
from ptopipe.errors import CompileError, ConfigError
from ptopipe.isa.pipe.binding import channels
from ptopipe.passes import compile_program
from ptopipe.passes.util import functions, init_ops
from ptopipe.runtime import run

import two_pipe_kernels as T
from markers import line_of


def _bound_flags(res) -> dict:
    """{way: (ready id, free id)} of every ring the run bound."""
    return {way: (ch.ready_id, ch.free_id) for (way, _r, _p), ch in channels(res.cluster).items()}


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_compiled_pipes_bind_their_flag_ids(platform, protocol):
    op = compile_program(T.build(), platform, protocol=protocol)
    inits = {f.attributes["sym_name"]: init_ops(f) for f in functions(op)}
    ids = [i.attributes["flag_id"] for i in inits["cube"]]
    assert ids[0] == 0 and ids[1] > 0          # the V2C pipe comes after the C2V pipe's flags
    # the Vector function initialises V2C first: its ends carry the Cube's ids, not 0
    assert [i.attributes["flag_id"] for i in inits["vector"]] == ids[::-1]
    args = T.make_args(np.random.default_rng(1))
    res = run(op, args, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], T.golden(args))
    bound = _bound_flags(res)
    assert bound["V2C"][0] == ids[1] > 0 and bound["C2V"][0] == 0
    for init in inits["cube"]:                  # the rings use the flag ranges the pass recorded
        for way in ("C2V", "V2C"):
            rng = init.attributes.get(f"{way.lower()}_flags")
            if rng is not None:
                assert bound[way][0] == rng[0] and max(bound[way]) <= rng[1]


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_hand_written_pipes_get_seed_numbering(platform):
    """Without AllocateFlags, pipes are numbered in init order like the pass numbers them."""
    prog = T.build(vector_c2v_first=True)
    args = T.make_args(np.random.default_rng(2))
    res = run(prog, args, platform=platform)
    np.testing.assert_array_equal(res.outputs["out"], T.golden(args))
    _op = compile_program(prog, platform)
    want = {i.attributes["flag_id"] for f in functions(_op) for i in init_ops(f)}
    assert {r for r, _f in _bound_flags(res).values()} == want == {0, 4}


def test_init_order_mismatch_needs_allocate_flags():
    """The Vector function's other init order makes the uncompiled ends disagree."""
    args = T.make_args(np.random.default_rng(3))
    with pytest.raises(ConfigError) as ei:
        run(T.build(), args, platform="a5")
    assert "share flag 0" in ei.value.what
    assert ei.value.where.split(":")[-2] == str(line_of(T.build, "vinit"))


def test_direction_initialised_twice():
    @pl.aiv
    def vector(x: pl.Tensor[[16, 32], pl.f32], fifo: pl.Tensor[[8192], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=4096, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=buf.base, slot_num=2)
        pl.aiv_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, 2048, fifo,  # again
                               c2v_consumer_buf=buf.base, slot_num=2)
        t = pl.TPOP(buf, pl.Tile[[16, 32], pl.f32, pl.Vec])
        pl.TFREE(buf)
        pl.store(t, [0, 0], x)

    with pytest.raises(CompileError) as ei:
        pl.program(vector, name="twice")
    assert ei.value.what == "the C2V ring is initialised twice in vector"
    assert ei.value.where.split(":")[-2] == str(line_of(vector.pyfunc, "again"))
    assert "one init with DIR_C2V | DIR_V2C" in ei.value.fix


def test_negative_flag_id():
    with pytest.raises(CompileError) as ei:
        @pl.aiv
        def vector(x: pl.Tensor[[16, 32], pl.f32], fifo: pl.Tensor[[8192], pl.u8]):
            buf = pl.reserve_buffer(name="ring", size=4096, base=pl.AUTO)
            pl.aiv_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=buf.base,
                                   slot_num=2, flag_id=-1)  # NEG
    assert ei.value.what == "pl.aiv_initialize_pipe: flag_id=-1 must be a FlagID >= 0"
    assert ei.value.where.split(":")[-2] == str(line_of(test_negative_flag_id, "NEG"))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_explicit_flag_ids_are_bound(platform):
    """A hand-written pair giving its pipes FlagIDs (flag_id=, here the other way round
    than the default numbering) runs on those flags."""
    prog = T.build(vector_c2v_first=True)
    for fn in prog.functions:
        for init in init_ops(fn):
            init.flag_id = 4 if init.dir_mask == pl.DIR_C2V else 0
    args = T.make_args(np.random.default_rng(4))
    res = run(prog, args, platform=platform)
    np.testing.assert_array_equal(res.outputs["out"], T.golden(args))
    assert {w: r for w, (r, _f) in _bound_flags(res).items()} == {"C2V": 4, "V2C": 0}


def test_cross_core_op_on_a_direction_never_initialised():
    @pl.aic
    def cube(fifo: pl.Tensor[[8192], pl.u8]):
        buf = pl.reserve_buffer(name="v2c", size=4096, base=pl.AUTO)
        pl.aic_initialize_pipe(pl.DIR_V2C, 2048, fifo, v2c_consumer_buf=buf.base, slot_num=2)
        t = pl.TPOP(buf, pl.Tile[[16, 32], pl.f32, pl.Mat], split=pl.TILE_UP_DOWN)
        pl.TFREE(buf)

    @pl.aiv
    def vector(x: pl.Tensor[[16, 32], pl.f32], fifo: pl.Tensor[[8192], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=4096, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=buf.base, slot_num=2)
        out = pl.import_peer_buffer(name="v2c", peer_func=cube)
        t = pl.load(x, [0, 0], [8, 32])
        pl.TPUSH(t, out, split=pl.TILE_UP_DOWN)  # PUSH
        r = pl.TPOP(buf, pl.Tile[[8, 32], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
        pl.TFREE(buf)

    with pytest.raises(CompileError) as ei:
        pl.program(cube, vector, name="undeclared")
    assert ei.value.what == ("TPUSH on the V2C direction, which no initialize_pipe of vector "
                             "sets up")
    assert ei.value.fix == "initialise the pipe with DIR_V2C (or DIR_C2V | DIR_V2C)"
    assert ei.value.where.split(":")[-2] == str(line_of(
        test_cross_core_op_on_a_direction_never_initialised, "PUSH"))


def _given_ids(prog, ids: dict):
    """``prog`` with ``flag_id=`` set on its inits: ids[(function name, dir_mask)]."""
    for fn in prog.functions:
        for init in init_ops(fn):
            key = (fn.sym_name, init.dir_mask)
            if key in ids:
                init.flag_id = ids[key]
    return prog


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_allocate_flags_keeps_given_flag_ids_and_numbers_the_rest_around_them(platform):
    """The C2V pipe given flag_id=4 on both ends keeps it through the whole pipeline (by
    default it is the first pipe, flag 0); the V2C pipe (no flag_id) is numbered from 0;
    the compiled program runs on those flags."""
    prog = _given_ids(T.build(), {("cube", pl.DIR_C2V): 4, ("vector", pl.DIR_C2V): 4})
    op = compile_program(prog, platform)
    ids = {f.attributes["sym_name"]: sorted((i.attributes["dir_mask"], i.attributes["flag_id"])
                                            for i in init_ops(f)) for f in functions(op)}
    assert ids == {"cube": [(pl.DIR_C2V, 4), (pl.DIR_V2C, 0)],
                   "vector": [(pl.DIR_C2V, 4), (pl.DIR_V2C, 0)]}
    args = T.make_args(np.random.default_rng(5))
    res = run(op, args, platform=platform)
    np.testing.assert_array_equal(res.outputs["out"], T.golden(args))
    assert {w: r for w, (r, _f) in _bound_flags(res).items()} == {"C2V": 4, "V2C": 0}


def test_the_two_ends_giving_different_flag_ids_is_an_error_at_the_vector_init():
    prog = _given_ids(T.build(), {("cube", pl.DIR_V2C): 0, ("vector", pl.DIR_V2C): 4})
    with pytest.raises(CompileError) as ei:
        compile_program(prog, "a5")
    assert ei.value.what == ("the two ends of a pipe disagree on flag_id: 'vector' says 4, "
                             "'cube' says 0")
    assert ei.value.where.split(":")[-2] == str(line_of(T.build, "vinit"))


def test_given_flag_ids_whose_flags_overlap_are_an_error():
    """flag_id=2 for the V2C pipe overlaps the C2V pipe's flags 0..3 (SLOT_NUM 4)."""
    prog = _given_ids(T.build(), {("cube", pl.DIR_C2V): 0, ("vector", pl.DIR_C2V): 0,
                                  ("cube", pl.DIR_V2C): 2, ("vector", pl.DIR_V2C): 2})
    with pytest.raises(CompileError) as ei:
        compile_program(prog, "a5")
    assert ei.value.what.startswith("flag_id=2 of this pipe uses flags 2..5, which overlap "
                                    "flags 0..3 of the pipe initialised at ")


def test_negative_isa_flag_id_says_flag_ids_start_at_0():
    """An ISA TPipe with FlagID -1 was told 'FlagID + SlotNum <= 8', which -1 already
    satisfies."""
    import ptopipe
    from ptopipe.isa import DIR_C2V, TPipe

    def cube(fifo):
        TPipe(-1, DIR_C2V, 2048, 4, peers=(0,))(fifo, 0x10000, 0)             # NEG-ISA

    def vector(fifo):
        TPipe(-1, DIR_C2V, 2048, 4, peers=(0,))(fifo, 0x10000, 0)
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(cube, (vector, None), dict(fifo=ptopipe.gm_buffer(4 * 2048)))
    assert ei.value.fix.startswith("a FlagID is a flag number, 0 or more; use FlagID + SlotNum <= 8")
    assert ei.value.where.endswith(f":{line_of(test_negative_isa_flag_id_says_flag_ids_start_at_0, 'NEG-ISA')}")


_TWO_PIPES_PTO = """module attributes {pto.target_arch = "a5"} {
  func.func @cube() attributes {pto.kernel_kind = #pto.kernel_kind<cube>} {
    %v2c = pto.reserve_buffer {name = "v2c_fifo", size = 8192, location = #pto.address_space<mat>, auto = true} -> i32
    %c2v = pto.import_reserved_buffer {name = "c2v_fifo", peer_func = @vector} -> i32
    %pc = pto.initialize_l2l_pipe {dir_mask = 1, slot_size = 1024, slot_num = 8, flag_base = 0}(%c2v : i32) -> !pto.pipe
    %pv = pto.initialize_l2l_pipe {dir_mask = 2, slot_size = 1024, slot_num = 8, flag_base = FB}(%v2c : i32) -> !pto.pipe
    return
  }
  func.func @vector() attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c2v = pto.reserve_buffer {name = "c2v_fifo", size = 8192, location = #pto.address_space<vec>, auto = true} -> i32
    %v2c = pto.import_reserved_buffer {name = "v2c_fifo", peer_func = @cube} -> i32
    %pc = pto.initialize_l2l_pipe {dir_mask = 1, slot_size = 1024, slot_num = 8, flag_base = 0}(%c2v : i32) -> !pto.pipe
    %pv = pto.initialize_l2l_pipe {dir_mask = 2, slot_size = 1024, slot_num = 8, flag_base = FB}(%v2c : i32) -> !pto.pipe
    return
  }
}
"""


@pytest.mark.parametrize("flag_base,device_ok", [(2, True), (1, False)])
def test_pto_flags_clashing_only_under_spec_name_it_and_point_to_pto_isa(flag_base, device_ok):
    """Two one-way pipes at flag_base 0 and 2: a flag per slot (spec) overlaps them, pto-isa's
    FlagID / FlagID+1 per ring does not - the error names spec and points to --protocol
    pto-isa; at flag_base 1 they clash under pto-isa too, and the error does not."""
    from ptopipe.codegen.pto_load import load_pto
    text = _TWO_PIPES_PTO.replace("FB", str(flag_base))
    with pytest.raises(CompileError) as ei:
        load_pto("two.pto", text=text)
    assert "(under the spec protocol: seed 003's flag per ring slot)" in ei.value.what
    assert ei.value.where == "two.pto:6:5"
    assert ("run it with --protocol pto-isa" in ei.value.fix) is device_ok
    assert "slot_num = 4 and flag_base = 0 and 4" in ei.value.fix
    if device_ok:
        load_pto("two.pto", protocol="pto-isa", text=text)


@pytest.mark.parametrize("v2c_flag,device_ok", [(2, True), (1, False)])
def test_isa_pipes_sharing_a_spec_flag_name_spec_and_point_to_pto_isa(v2c_flag, device_ok):
    import ptopipe
    from ptopipe.isa import DIR_C2V, DIR_V2C, TPipe

    def pipes():
        TPipe(0, DIR_C2V, 1024, 8)(0, 0x10000, 0)
        TPipe(v2c_flag, DIR_V2C, 1024, 8)(0, 0, 0x10000)
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(pipes, pipes, {}, platform="a5")
    assert "(under the spec protocol)" in ei.value.what
    assert ("run it with --protocol pto-isa" in ei.value.fix) is device_ok
    if device_ok:
        ptopipe.run(pipes, pipes, {}, platform="a5", protocol="pto-isa")
