"""ResolvePeerBuffers, AllocateFlags, LowerPlatform and Validate: the hand-written DSL
examples go through the pipeline (verified and round-tripped after every pass) and still
run and match numpy on both platforms and both protocols; every error of the four passes
with its message and DSL line."""
import os

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.driver.programs import programs_of
from ptopipe.driver.loader import load_module
from ptopipe.errors import CompileError
from ptopipe.ir import FunctionKind, Operation, Region, Block, verify_program
from ptopipe.ir.vocab import AUTO
from ptopipe.passes import PassContext, PassManager, allocate_flags, resolve_peers, validate
from ptopipe.ir.opdefs import ImportPeerBufferOp, ReserveBufferOp
from ptopipe.passes.util import functions, init_ops, top_ops
from ptopipe.runtime import KernelSet
from plans import plan as plan_program

from markers import line_of
from pass_kernels import SLOT, TM, N, c2v_args, c2v_golden, c2v_pair, unverified

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "dsl")
PLATFORMS = ("a2a3", "a5")
PROTOCOLS = ("spec", "pto-isa")


def _example(name, variant=None):
    mod = load_module(os.path.join(EXAMPLES, name))
    sc = mod.SCENARIO
    v = variant or sc.default_variant
    prog, = programs_of(mod, v)
    return sc, v, prog


def _compile(prog, platform, passes=None, protocol="spec"):
    ctx = PassContext(platform=platform, protocol=protocol)
    op = PassManager(passes, round_trip=True).run(prog.clone(), ctx)
    return op, ctx


def _fn(op, name):
    return next(f for f in functions(op) if f.attributes["sym_name"] == name)


def _at(e, fn, marker):
    """The error is at the marked line of ``fn`` (a @pl kernel)."""
    assert e.where is not None and e.where.split(":")[1] == str(line_of(fn.pyfunc, marker)), e.where


# -- the examples through the whole pipeline ----------------------------------------------------
CASES = [("s1_cv_split.py", None), ("s1_cv_split.py", "f16_lr_d1_m16"), ("s4_both_ways.py", "ud"),
         ("s4_both_ways.py", "lr"), ("s5_subtile_gm.py", None), ("s8_manual_sync.py", None)]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name,variant", CASES)
def test_examples_compile_and_still_run(name, variant, platform):
    sc, v, prog = _example(name, variant)
    op, ctx = _compile(prog, platform)
    verify_program(op.clone())                   # the lowered program is a valid DSL program
    ks = KernelSet(op)
    for protocol in PROTOCOLS:
        params = sc.params(v)
        args = sc.make_args(np.random.default_rng(1), **params)
        expected = sc.golden(args, **params)
        res = ptopipe.run(ks.aic, ks.aiv, args, platform=platform, protocol=protocol,
                          **({"sync": sc.sync} if sc.sync else {}))
        for k, want in expected.items():
            np.testing.assert_allclose(res.outputs[k], want, rtol=sc.rtol, atol=sc.atol)


# -- ResolvePeerBuffers -----------------------------------------------------------------------------
def test_resolve_peers_uses_the_runtime_allocation_and_propagates_it():
    sc, v, prog = _example("s4_both_ways.py", "ud")
    lays = plan_program(prog)
    op = resolve_peers.run(prog.clone(), PassContext())
    for fname, other in (("vector", "cube"), ("cube", "vector")):
        f = _fn(op, fname)
        r, = top_ops(f, ReserveBufferOp)
        i, = top_ops(f, ImportPeerBufferOp)
        assert r.attributes["base"] == lays[fname].by_name[r.attributes["name"]][0]
        assert r.attributes["base"] is not AUTO
        peer_r, = [x for x in top_ops(_fn(op, other), ReserveBufferOp)
                   if x.attributes["name"] == i.attributes["name"]]
        assert (i.attributes["base"], i.attributes["size"]) == (peer_r.attributes["base"],
                                                                peer_r.attributes["size"])
        init, = init_ops(f)
        # the init's ring arguments are the resolved constants
        c2v, v2c = (init.operands[k].op for k in (1, 2))
        assert c2v.name == v2c.name == "pl.const"
        want = {"vector": (r, i), "cube": (i, r)}[fname]
        assert (c2v.attributes["value"], v2c.attributes["value"]) == tuple(
            b.attributes["base"] for b in want)
        assert not any(o.name == "pl.buffer_attr" for o in f.walk())


def test_resolve_peers_missing_peer_function():
    cube, vector = c2v_pair()
    with pytest.raises(CompileError) as ei:
        PassManager("resolve-peers").run(unverified(cube).clone(), PassContext())
    e = ei.value
    assert "import_peer_buffer 'ring' names peer_func 'vector', which is not a function" in e.what
    assert "functions: cube" in e.fix
    _at(e, cube, "import")


def test_resolve_peers_missing_reserve():
    cube, vector = c2v_pair(iname="other")
    with pytest.raises(CompileError) as ei:
        PassManager("resolve-peers").run(unverified(cube, vector).clone(), PassContext())
    e = ei.value
    assert e.what == ("import_peer_buffer 'other': 'vector' reserves no buffer of that name "
                      "(it reserves: 'ring')")
    _at(e, cube, "import")


# -- AllocateFlags ----------------------------------------------------------------------------------
def _flags(op):
    return {f.attributes["sym_name"]: {k: v for k, v in init_ops(f)[0].attributes.items()
                                      if k == "flag_id" or k.endswith("_flags")}
            for f in functions(op)}


def test_flags_one_direction_and_both_directions():
    cube, vector = c2v_pair(depth=2)
    op, _ = _compile(unverified(cube, vector), "a5", "allocate-flags")
    got = _flags(op)
    assert got["cube"] == got["vector"] == {"flag_id": 0, "c2v_flags": (0, 1)}
    _sc, _v, s4 = _example("s4_both_ways.py", "ud")         # seed 003: 0..3 and 4..7
    got = _flags(_compile(s4, "a2a3", "allocate-flags")[0])
    assert got["cube"] == got["vector"] == {"flag_id": 0, "c2v_flags": (0, 3), "v2c_flags": (4, 7)}
    got = _flags(_compile(s4, "a2a3", "allocate-flags", protocol="pto-isa")[0])
    assert got["cube"] == {"flag_id": 0, "c2v_flags": (0, 1), "v2c_flags": (2, 3)}


def test_flags_default_slot_num_one_direction_uses_all_eight():
    _sc, _v, s1 = _example("s1_cv_split.py")
    op = s1.clone()
    for f in functions(op):
        init_ops(f)[0].attributes["slot_num"] = None
    allocate_flags.run(op, PassContext("a5"))
    assert _flags(op)["vector"]["c2v_flags"] == (0, 7)


def test_flags_run_out():
    _sc, _v, s4 = _example("s4_both_ways.py", "ud")
    op = s4.clone()
    for f in functions(op):
        init_ops(f)[0].attributes["slot_num"] = 8          # 8 + 8 flags on one peer
    with pytest.raises(CompileError) as ei:
        allocate_flags.run(op, PassContext("a2a3"))
    e = ei.value
    assert e.what.startswith("flags run out between 'cube' and 'vector': V2C ring uses flags 8..15")
    assert "a peer has only 8 flags per direction" in e.what
    init = init_ops(_fn(op, "cube"))[0]
    assert e.where == str(init.loc)
    src = open(init.loc.file).read().splitlines()
    assert "pl.aic_initialize_pipe(" in src[init.loc.line - 1]


def test_flags_ends_disagree():
    cube, vector = c2v_pair(cube_slot=2 * SLOT, size=4 * SLOT)
    with pytest.raises(CompileError) as ei:
        PassManager("allocate-flags").run(unverified(cube, vector).clone(), PassContext())
    e = ei.value
    assert e.what == ("the two ends of a pipe disagree on SLOT_SIZE: 'vector' says 2048, "
                      "'cube' says 4096")
    _at(e, vector, "vinit")
    assert f":{line_of(cube.pyfunc, 'cinit')}:" in e.details


def test_flags_init_without_partner():
    cube, vector = c2v_pair()
    op = unverified(cube, vector).clone()
    init_ops(_fn(op, "cube"))[0].erase()
    with pytest.raises(CompileError) as ei:
        allocate_flags.run(op, PassContext())
    assert ei.value.what == ("aiv_initialize_pipe(C2V, slot_size=2048, slot_num=2) in 'vector' has "
                             "no matching aic_initialize_pipe in a Cube function")
    _at(ei.value, vector, "vinit")


# -- LowerPlatform ----------------------------------------------------------------------------------
def test_lower_a5_local_rings_explicit():
    cube, vector = c2v_pair()
    op, ctx = _compile(unverified(cube, vector), "a5")
    assert ctx.warnings == [] and op.attributes["platform"] == "a5"
    v = _fn(op, "vector")
    r, = top_ops(v, ReserveBufferOp)
    for f in functions(op):
        init, = init_ops(f)
        assert init.attributes["ring"] == "local" and init.attributes["slot_num"] == 2
        assert init.operands[1].op.attributes["value"] == r.attributes["base"]


def test_lower_a2a3_warns_and_adds_gm_slot_buffer():
    _sc, _v, s4 = _example("s4_both_ways.py", "ud")
    op = s4.clone()
    # a program written for A5 (no GM buffer): A2A3 needs one, 2 * SLOT_NUM * SLOT_SIZE bytes
    for f in functions(op):
        init = init_ops(f)[0]
        old = init.operands[0]
        c = Operation("pl.const", (), [ptopipe.ir.NONE], {"value": None}, (), init.loc, [None])
        init.insert_before(c)
        init.set_operand(0, c.results[0])
    group = Operation("pl.func", (), (), {"sym_name": "grp", "kind": FunctionKind.Group},
                      (Region([Block()]),))
    Block.append(group.regions[0].blocks[0], Operation("pl.return", (), (), {}, ()))
    op.regions[0].blocks[0].append(group)
    ctx = PassContext("a2a3")
    op = PassManager(round_trip=True).run(op, ctx)
    need = 2 * 4 * 8192
    for f in functions(op):
        gm = [a for a in f.regions[0].blocks[0].args if a.name == "gm_slot_buffer"]
        assert len(gm) == 1 and gm[0].type.nbytes == need, f.attributes["sym_name"]
        if f.attributes["kind"] is not FunctionKind.Group:
            init, = init_ops(f)
            assert init.operands[0] is gm[0] and init.attributes["ring_bytes"] == need
            assert init.attributes["slot_num"] == 4 and init.attributes["ring"] == "gm"  # seed 003
    # one warning per function whose signature grew, at its init's line
    inits = {f.attributes["sym_name"]: init_ops(f)[0] for f in functions(op)
             if f.attributes["kind"] is not FunctionKind.Group}
    assert ctx.warnings == [
        f"{inits[name].loc}: a2a3: {name!r} initialises its pipe with no GM_SLOT_BUFFER, but a2a3 "
        f"rings live in GM: the kernel now takes a parameter 'gm_slot_buffer' of {need} bytes - "
        f"pass gm_slot_buffer=ptopipe.gm_buffer({need}) when running it"
        for name in [f.attributes["sym_name"] for f in functions(op)] if name in inits]


@pytest.mark.parametrize("path", sorted(
    [os.path.join(EXAMPLES, "..", "mixed", n) for n in os.listdir(os.path.join(EXAMPLES, "..", "mixed"))
     if n.endswith(".py")] + [os.path.join(EXAMPLES, n) for n in os.listdir(EXAMPLES)
                              if n.endswith(".py")]))
def test_a2a3_compile_of_an_example_warns_nothing(path):
    """The examples declare (or are given) their GM slot buffer: compiling them for A2A3
    gives no warning (the rings being in GM is the platform's behaviour, not news)."""
    from ptopipe.passes import compile_program
    mod = load_module(path)
    prog, = programs_of(mod, mod.SCENARIO.default_variant)
    warnings = []
    _op = compile_program(prog, "a2a3", warnings=warnings)
    assert warnings == []


@pytest.mark.parametrize("platform", PLATFORMS)
def test_lower_gm_slot_buffer_none_runs(platform):
    """A pair written with gm_slot_buffer=None: A2A3 gets a new GM parameter, A5 needs none."""
    cube, vector = c2v_pair()
    op = unverified(cube, vector).clone()
    for f in functions(op):
        init = init_ops(f)[0]
        c = Operation("pl.const", (), [ptopipe.ir.NONE], {"value": None}, (), init.loc, [None])
        init.insert_before(c)
        init.set_operand(0, c.results[0])
    op = PassManager(round_trip=True).run(op, PassContext(platform))
    added = [a.name for f in functions(op) for a in f.regions[0].blocks[0].args
             if a.name == "gm_slot_buffer"]
    assert added == (["gm_slot_buffer"] * 2 if platform == "a2a3" else [])
    ks = KernelSet(op)
    for protocol in PROTOCOLS:
        args = c2v_args(np.random.default_rng(2))          # "fifo": still declared, unused
        if added:
            args["gm_slot_buffer"] = ptopipe.gm_buffer(2 * SLOT)
        res = ptopipe.run(ks.aic, ks.aiv, args, platform=platform, protocol=protocol)
        np.testing.assert_allclose(res.outputs["out"], c2v_golden(args)["out"])


# -- Validate ---------------------------------------------------------------------------------------
def _validate(op, platform="a2a3"):
    with pytest.raises(CompileError) as ei:
        validate.run(op, PassContext(platform))
    return ei.value


def test_validate_mixed_function_left():
    cube, vector = c2v_pair()
    prog = unverified(cube, vector)
    op = prog.clone()
    _fn(op, "vector").attributes["kind"] = FunctionKind.InCore
    e = _validate(op)
    assert e.what == "mixed @pl.incore function 'vector' was not split into an AIC and an AIV kernel"
    assert e.where.split(":")[1] == str(vector.ir.loc.line)


@pytest.mark.parametrize("mask", [0, 4])
def test_validate_dir_mask(mask):
    cube, vector = c2v_pair()
    op = unverified(cube, vector).clone()
    init_ops(_fn(op, "vector"))[0].attributes["dir_mask"] = mask
    e = _validate(op)
    assert e.what == f"DIR_MASK {mask} is not a seed 003 direction" and "DIR_C2V | DIR_V2C (3)" in e.fix
    _at(e, vector, "vinit")


def test_validate_slot_size():
    cube, vector = c2v_pair()
    op = unverified(cube, vector).clone()
    init_ops(_fn(op, "cube"))[0].attributes["slot_size"] = 0
    e = _validate(op)
    assert e.what == "SLOT_SIZE 0 must be a positive number of bytes"
    _at(e, cube, "cinit")


def test_validate_one_init_per_direction():
    cube, vector = c2v_pair()
    op = unverified(cube, vector).clone()
    first = init_ops(_fn(op, "vector"))[0]
    first.insert_after(first.clone())
    e = _validate(op)
    assert e.what == "the C2V ring is initialised twice in 'vector'"
    assert f"first initialised at {first.loc}" in e.details
    _at(e, vector, "vinit")


def _two_rings(shared: bool):
    """A pair with two C2V rings (id=0, id=1) whose GM slot buffers are one tensor or two."""
    D = 2

    @pl.aiv
    def vector(out: pl.Tensor[[TM, N], pl.f32], fa: pl.Tensor[[D * SLOT], pl.u8],
               fb: pl.Tensor[[D * SLOT], pl.u8]):
        ra = pl.reserve_buffer(name="ra", size=D * SLOT, base=pl.AUTO)
        rb = pl.reserve_buffer(name="rb", size=D * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fa, c2v_consumer_buf=ra.base, v2c_consumer_buf=0, slot_num=D)
        if shared:
            pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fa, c2v_consumer_buf=rb.base,  # VSHARED
                                   v2c_consumer_buf=0, slot_num=D, id=1)
        else:
            pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fb, c2v_consumer_buf=rb.base, v2c_consumer_buf=0,
                                   slot_num=D, id=1)
        sub = pl.get_subblockid()
        p = pl.TPOP(ra, pl.Tile[[TM // 2, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
        q = pl.TPOP(rb, pl.Tile[[TM // 2, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
        o = pl.add(p, q)
        pl.TFREE(ra)
        pl.TFREE(rb)
        pl.store(o, [sub * (TM // 2), 0], out)

    @pl.aic
    def cube(a: pl.Tensor[[TM, N], pl.f32], b: pl.Tensor[[N, N], pl.f32], fa: pl.Tensor[[D * SLOT], pl.u8],
             fb: pl.Tensor[[D * SLOT], pl.u8]):
        pa = pl.import_peer_buffer(name="ra", peer_func=vector)
        pb = pl.import_peer_buffer(name="rb", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fa, c2v_consumer_buf=pa.base, v2c_consumer_buf=0, slot_num=D)
        if shared:
            pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fa, c2v_consumer_buf=pb.base,  # CSHARED
                                   v2c_consumer_buf=0, slot_num=D, id=1)
        else:
            pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fb, c2v_consumer_buf=pb.base, v2c_consumer_buf=0,
                                   slot_num=D, id=1)
        a0 = pl.move(pl.load(a, [0, 0], [TM, N], space=pl.Mat), space=pl.Left)
        acc = pl.matmul(a0, pl.move(pl.load(b, [0, 0], [N, N], space=pl.Mat), space=pl.Right))
        pl.TPUSH(acc, pa, split=pl.TILE_UP_DOWN)
        pl.TPUSH(acc, pb, split=pl.TILE_UP_DOWN)
    return cube, vector


def test_validate_two_gm_rings_in_one_slot_buffer():
    # two inits passing one `fifo` tensor: on A2A3 (rings in GM) both rings take its first
    # bytes - refused at the second init of the first function, where `check --static` says it
    # (the run says it only at the bind); on A5 the rings are in UB / L1 and the tensor unused
    cube, vector = _two_rings(shared=True)
    e = _validate(unverified(cube, vector))
    assert "this init's GM ring [0, 4096) of 'fa' overlaps bytes [0, 4096) that the init at line" in e.what
    assert "another pl.Tensor[[SLOT_NUM * SLOT_SIZE], pl.u8] parameter" in e.fix
    _at(e, cube, "CSHARED")
    validate.run(unverified(cube, vector), PassContext("a5"))
    validate.run(unverified(*_two_rings(shared=False)), PassContext("a2a3"))
    # run without compiling, the pair meets the bind's check, whose fix names a pl kernel's way out
    args = dict(a=np.ones((TM, N), np.float32), b=np.ones((N, N), np.float32), out=np.zeros((TM, N), np.float32),
                fa=ptopipe.gm_buffer(2 * SLOT), fb=ptopipe.gm_buffer(2 * SLOT))
    ks = KernelSet(pl.program(cube, vector))
    with pytest.raises(ptopipe.MemoryConflictError) as ei:
        ptopipe.run(ks.aic, ks.aiv, args)
    assert "a pl kernel: another pl.Tensor parameter for the second init" in ei.value.fix


def test_validate_reserve_size():
    cube, vector = c2v_pair(size=3 * SLOT)
    e = _validate(unverified(cube, vector))
    assert e.what == ("reserve_buffer 'ring' has 6144 bytes but the pipe that uses it needs "
                      "SLOT_NUM * SLOT_SIZE = 2 * 2048 = 4096")
    # (a ring of 3 slots ptoas does not build: the fix suggests no slot_num=3)
    assert e.fix == "reserve_buffer(name='ring', size=SLOT_NUM * SLOT_SIZE, ...)"
    assert e.details.startswith("pipe initialised at ") and \
        f":{line_of(vector.pyfunc, 'vinit')}:" in e.details
    _at(e, vector, "reserve")
    cube, vector = c2v_pair(size=4 * SLOT)
    e = _validate(unverified(cube, vector))
    assert e.fix == ("reserve_buffer(name='ring', size=SLOT_NUM * SLOT_SIZE, ...), or give the pipe "
                     "slot_num=4")


def test_validate_ring_memory():
    cube, vector = c2v_pair()
    op = unverified(cube, vector).clone()
    top_ops(_fn(op, "vector"), ReserveBufferOp)[0].attributes["memory_space"] = "L1"
    e = _validate(op, "a5")
    assert e.what == "the C2V ring must be in UB but reserve_buffer 'ring' is in L1"
    _at(e, vector, "reserve")


def test_validate_gm_slot_buffer_too_small():
    cube, vector = c2v_pair(fifo_bytes=SLOT)
    e = _validate(unverified(cube, vector), "a2a3")
    assert e.what == ("GM_SLOT_BUFFER of 2048 bytes is smaller than the GM ring it holds: "
                      "1 * SLOT_NUM * SLOT_SIZE = 4096 bytes")
    _at(e, cube, "cinit")


def test_validate_import_without_reserve():
    cube, vector = c2v_pair(iname="other")
    e = _validate(unverified(cube, vector), "a2a3")
    assert e.what == "import_peer_buffer 'other' has no matching reserve_buffer in 'vector'"
    _at(e, cube, "import")


def test_validate_ring_nobody_imports():
    """The ring the consumer's init and TPOPs use is imported by no function (the producer
    imports another reserve): the consumer's reserve is named."""
    cube, vector = c2v_pair()
    op = unverified(cube, vector).clone()
    r, = top_ops(_fn(op, "vector"), ReserveBufferOp)
    spare = r.clone()
    spare.attributes["name"] = "spare"
    r.insert_after(spare)
    imp, = top_ops(_fn(op, "cube"), ImportPeerBufferOp)
    imp.attributes["name"] = "spare"
    e = _validate(op, "a2a3")
    assert e.what == "reserve_buffer 'ring' of 'vector' is imported by no function"
    assert e.fix == "import it in the producer: pl.import_peer_buffer(name='ring', peer_func=vector)"
    _at(e, vector, "reserve")


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_validate_keeps_a_reserve_no_one_imports_as_a_region(platform):
    """A reserve that is no ring (no init or TPOP uses it) needs no import: as pypto's
    allocator, the compiler keeps its bytes free."""
    cube, vector = c2v_pair()
    op = unverified(cube, vector).clone()
    r, = top_ops(_fn(op, "vector"), ReserveBufferOp)
    spare = r.clone()
    spare.attributes["name"] = "spare"
    r.insert_after(spare)
    assert validate.run(op, PassContext(platform)) is op


def test_validate_reserve_exceeds_sram():
    big = 200 * 1024                       # > A2A3's 192 KiB UB, < A5's 256 KiB
    cube, vector = c2v_pair(depth=1, size=big, fifo_bytes=big, cube_slot=big)
    op = unverified(cube, vector).clone()
    for f in functions(op):
        init_ops(f)[0].attributes["slot_size"] = big
    validate.run(op, PassContext("a5"))                 # fits A5's 256 KiB UB
    e = _validate(op, "a2a3")
    assert e.what == ("reserve_buffer 'ring' of 204800 bytes at 0x0 does not fit a2a3's UB "
                      "(196608 bytes)")
    _at(e, vector, "reserve")


@pytest.mark.parametrize("side", ["vector", "cube"])
def test_validate_local_ring_without_its_buffer(side):
    cube, vector = c2v_pair()
    op = unverified(cube, vector).clone()
    init = init_ops(_fn(op, side))[0]
    c = Operation("pl.const", (), [ptopipe.ir.INDEX], {"value": 0}, (), init.loc, [None])
    init.insert_before(c)
    init.set_operand(1, c.results[0])                 # c2v_consumer_buf=0, not buf.base
    if side == "cube":
        validate.run(op, PassContext("a2a3"))         # a GM ring's producer needs no local buffer
    else:                                             # its consumer stages each popped tile there
        e = _validate(op, "a2a3")
        assert e.what.startswith("the C2V ring's consumer 'vector' passes 0 as c2v_consumer_buf, but "
                                 "its ring is in GM and each popped tile is staged in UB")
        _at(e, vector, "vinit")
    e = _validate(op, "a5")
    role = "consumer" if side == "vector" else "producer"
    assert e.what == f"the C2V ring's {role} '{side}' passes no buffer as c2v_consumer_buf"
    assert e.fix.endswith("reserve_buffer(...).base" if side == "vector" else
                          "import_peer_buffer(...).base")
    _at(e, vector if side == "vector" else cube, "vinit" if side == "vector" else "cinit")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_allocated_flags_are_the_ones_the_run_binds(platform, protocol):
    """AllocateFlags agrees with the simulator: the flag ids the compiled pipe's rings use
    at run time are the ones recorded on its inits."""
    sc, v, prog = _example("s4_both_ways.py", "ud")
    op, _ctx = _compile(prog, platform, protocol=protocol)
    flags = _flags(op)["cube"]
    args = sc.make_args(np.random.default_rng(0), **sc.params(v))
    ks = KernelSet(op)
    res = ptopipe.run(ks.aic, ks.aiv, args, platform=platform, protocol=protocol)
    chans = {ch.way: ch for ch in res.cluster.state.channels.values()}
    assert set(chans) == {"C2V", "V2C"}
    for way, ch in chans.items():
        used = ((ch.ready_id, ch.ready_id + ch.slot_num - 1) if protocol == "spec"
                else (ch.ready_id, ch.free_id))
        assert flags[f"{way.lower()}_flags"] == used, way
