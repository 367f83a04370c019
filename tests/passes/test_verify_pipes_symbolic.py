"""VerifyPipes over integer scalars: what ``check --static`` proves for every value of a
kernel's scalar parameters (not only a scenario variant's), the failing values it names
when the proof fails, the "not proven" status where it cannot decide, static GM bounds,
and loops checked once per ring period (a long or unknown trip count costs one period)."""
import json

import pytest

import ptopipe.language as pl
from ptopipe.passes import pipe_paths, verify_pipes
from ptopipe.passes.static_check import FAILED, NOT_PROVEN, PROVEN, verdict, verify_program
from ptopipe.passes.symbolic import Count, const, decide, var

from markers import line_of
from test_verify_pipes import HR, K, N, SLOT, TM, VEC, c2v_cube, program


def _verify(prog, warnings=None, **kw):
    return verify_pipes.verify(prog.clone(), "a2a3", warnings, **kw)


# -- a TFREE skipped while i < flag: fine for flag=4 only ---------------------------------------
def skip_free(good: bool):
    @pl.aiv
    def vec(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8],
            flag: pl.Scalar[pl.index]):
        buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=4, local_slot_num=4)
        sub = pl.get_subblockid()
        for i in pl.range(4):
            part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)                          # FLAG-POP
            o = pl.adds(part, 1.0)
            if i < flag:
                pl.TFREE(buf)
            else:
                if good:
                    pl.TFREE(buf)
            pl.store(o, [i * TM + sub * HR, 0], out)
    return vec


def test_a_tfree_skipped_below_a_flag_is_found_with_the_flag_values_that_leak():
    vec = skip_free(good=False)
    prog = pl.program(c2v_cube(vec), vec, name="flag")
    assert _verify(prog, known={"flag": 4}) == []          # the scenario's value: no leak
    found = _verify(prog)
    assert [e.kind for e in found] == ["missing_tfree"]
    e = found[0]
    assert f":{line_of(vec.pyfunc, 'FLAG-POP')}:" in e.where and "is never freed" in e.what
    flag = int(e.values.split("=")[1])
    assert 0 <= flag < 4 and e.what.endswith(f"(fails when flag={flag})")
    assert e.to_dict()["values"] == f"flag={flag}"
    assert _verify(prog, known={"flag": flag}) != []       # that value does leak


def test_the_tfree_on_both_branches_is_proven_for_every_flag():
    vec = skip_free(good=True)
    warnings = []
    assert _verify(pl.program(c2v_cube(vec), vec, name="flag"), warnings) == [] and warnings == []


@pytest.mark.parametrize("platform,protocol", [("a2a3", "pto-isa"), ("a5", "spec"), ("a5", "pto-isa")])
def test_the_flag_proof_holds_on_every_platform_and_protocol(platform, protocol):
    """The same leak below the flag, at the same pop, and the same proof when both branches
    free, on the other platform and under pto-isa's flag model (a2a3 / spec: above) - where
    pto-isa's TPOP frees the slot itself (A2A3: the ring is in GM), a warning, as its run says."""
    bad, good = skip_free(good=False), skip_free(good=True)
    warnings = []
    found = verify_pipes.verify(pl.program(c2v_cube(bad), bad, name="flag").clone(), platform,
                                warnings, protocol=protocol)
    pop = f":{line_of(bad.pyfunc, 'FLAG-POP')}:"
    if (platform, protocol) == ("a2a3", "pto-isa"):
        assert found == [] and len(warnings) == 1 and pop in warnings[0], (found, warnings)
        assert "the TPOP frees its slot itself, so this runs here" in warnings[0]
    else:
        assert [e.kind for e in found] == ["missing_tfree"], found
        assert pop in found[0].where
        assert int(found[0].values.split("=")[1]) < 4
    warnings = []
    assert verify_pipes.verify(pl.program(c2v_cube(good), good, name="flag").clone(), platform,
                               warnings, protocol=protocol) == [] and warnings == []


def extra_free():
    @pl.aiv
    def vec(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=4)
        sub = pl.get_subblockid()
        for i in pl.range(4):
            part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
            o = pl.adds(part, 1.0)
            pl.TFREE(buf)
            pl.store(o, [i * TM + sub * HR, 0], out)
            pl.TFREE(buf)                                                            # EXTRA-FREE
    return vec


@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec"),
                                               ("a5", "pto-isa")])
def test_a_tfree_with_nothing_held_is_a_warning_where_the_library_makes_it_a_no_op(platform, protocol):
    """Where pto-isa's tile TPOP frees the slot itself (A2A3: the ring is in GM) its tile TFREE
    does nothing: a TFREE with nothing held runs there, as its run says (a warning), like a
    missing one; elsewhere it frees a slot never popped."""
    vec = extra_free()
    warnings = []
    found = verify_pipes.verify(pl.program(c2v_cube(vec), vec, name="extra").clone(), platform, warnings,
                                protocol=protocol)
    at = f":{line_of(vec.pyfunc, 'EXTRA-FREE')}:"
    if (platform, protocol) == ("a2a3", "pto-isa"):
        assert found == [] and len(warnings) == 1 and at in warnings[0], (found, warnings)
        assert "the TFREE after it does nothing, so this runs here" in warnings[0], warnings
    else:
        assert [e.kind for e in found] == ["free_without_pop"] and at in found[0].where, found
        assert warnings == [], warnings


# -- range(n) pushes against range(n + extra) pops ----------------------------------------------
def n_pair(extra: int):
    @pl.aiv
    def vec(out: pl.Tensor[[TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8],
            n: pl.Scalar[pl.index]):
        buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=4)
        sub = pl.get_subblockid()
        for i in pl.range(n + extra):
            part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)                          # N-POP
            pl.store(part, [sub * HR, 0], out)
            pl.TFREE(buf)

    @pl.aic
    def cube(a: pl.Tensor[[TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
             fifo: pl.Tensor[[8 * SLOT], pl.u8], n: pl.Scalar[pl.index]):
        peer = pl.import_peer_buffer(name="ring", peer_func=vec)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                               slot_num=4)
        a0 = pl.move(pl.load(a, [0, 0], [TM, K], space=pl.Mat), space=pl.Left)
        b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(n):
            pl.TPUSH(pl.matmul(a0, b0), peer, split=pl.TILE_UP_DOWN)
    return pl.program(cube, vec, name="npair"), vec


def test_one_pop_more_than_the_pushes_is_found_for_every_n_with_a_failing_value():
    prog, vec = n_pair(1)
    warnings = []
    found = _verify(prog, warnings)
    assert [e.kind for e in found] == ["count"] and warnings == []
    e = found[0]
    assert f":{line_of(vec.pyfunc, 'N-POP')}:" in e.where and e.values == "n=0"
    assert "has no matching TPUSH and waits forever: cube pushes 0 tile(s) but vec (lane AIV0) pops 1" in e.what
    assert "for every value: cube pushes n tile(s) to the C2V ring, vec (lane AIV0) pops n + 1" in e.details
    assert verdict(lambda v: (verify_program(prog, scalars=v), []), None)[0] == FAILED


def test_equal_trip_counts_are_proven_for_every_n():
    prog, _ = n_pair(0)
    warnings = []
    assert _verify(prog, warnings) == [] and warnings == []
    assert verdict(lambda v: (verify_program(prog, scalars=v), []), {"n": 3})[0] == PROVEN


# -- what the analysis cannot decide ------------------------------------------------------------
@pl.aiv
def every_other_vec(out: pl.Tensor[[TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8],
                    n: pl.Scalar[pl.index]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range(0, n, 2):                                                      # STEP-LOOP
        part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        pl.store(part, [sub * HR, 0], out)
        pl.TFREE(buf)


def test_a_trip_count_that_is_not_affine_is_not_proven_rather_than_passed():
    warnings = []
    prog = program(c2v_cube(every_other_vec), every_other_vec)
    assert _verify(prog, warnings) == []
    reasons = verify_pipes.not_proven(warnings)
    assert reasons and all("not an affine expression" in r for r in reasons), reasons
    assert f"the loop at line {line_of(every_other_vec.pyfunc, 'STEP-LOOP')}" in reasons[0]
    status, found, _ = verdict(lambda v: (_verify(prog, w := []), w), None)
    assert (status, found) == (NOT_PROVEN, [])


# -- GM bounds ------------------------------------------------------------------------------------
def store_at(row: int):
    @pl.aiv
    def vec(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=4)
        sub = pl.get_subblockid()
        for i in pl.range(4):
            part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
            pl.store(part, [row + sub * HR, 0], out)                                 # ROW-STORE
            pl.TFREE(buf)
    return vec


def test_a_store_past_the_tensor_at_a_constant_offset_is_found_at_its_line():
    vec = store_at(4 * TM)
    found = _verify(pl.program(c2v_cube(vec), vec, name="oob"))
    assert [e.kind for e in found] == ["gm_bounds"]
    assert f":{line_of(vec.pyfunc, 'ROW-STORE')}:" in found[0].where
    assert found[0].what.startswith("access out of bounds: offsets [64, 0] + window [8, 32] exceed "
                                    "'out' of shape [64, 32] (in iteration 1 (i=0) of the loop at line")
    vec = store_at(3 * TM)
    assert _verify(pl.program(c2v_cube(vec), vec, name="ok")) == []


@pl.aiv
def row_per_trip(out: pl.Tensor[[4 * TM, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    for i in pl.range(300):                                                          # LONG-LOOP
        part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        pl.store(part, [i, 0], out)                                                  # I-STORE
        pl.TFREE(buf)


def test_a_long_loop_checked_once_per_period_still_finds_the_first_trip_out_of_bounds():
    """300 trips: explored as two iterations with i unknown in [0, 300); the store of rows
    [i, i + 8) leaves the 64 rows from i = 57."""
    found = _verify(program(c2v_cube(row_per_trip, n=300), row_per_trip))
    assert [e.kind for e in found] == ["gm_bounds"]
    e = found[0]
    assert f":{line_of(row_per_trip.pyfunc, 'I-STORE')}:" in e.where
    assert e.values == f"i=57 (in the loop at line {line_of(row_per_trip.pyfunc, 'LONG-LOOP')})"
    assert e.what.startswith("access out of bounds: offsets [i, 0] + window [8, 32] exceed 'out' of shape [64, 32]")


OOB_PTO = "tests/pto/i32_trip_count_a3.pto"


def test_a_pto_store_out_of_bounds_fails_check_static_and_compile(tmp_path, capsys):
    from ptopipe.cli import main
    text = open(OOB_PTO).read()
    vec = text.index("func.func private @vector")
    bad = text[:vec] + text[vec:].replace("offsets = [%row, %c0]", "offsets = [%c64, %c0]", 1)
    f = tmp_path / "oob.pto"
    f.write_text(bad)
    store = next(i for i, ln in enumerate(bad.splitlines(), 1) if "pto.tstore" in ln)
    assert main(["compile", str(f), "--emit", "cpp", "-o", str(tmp_path / "k.cpp")]) == 1
    assert f"oob.pto:{store}:" in capsys.readouterr().err
    assert main(["check", "--static", str(f), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)[0]
    assert report["status"] == "failed"
    assert report["findings"][0]["what"].startswith("access out of bounds: offsets [64, 0] + window "
                                                    "[8, 16] exceed 'out' of shape [64, 16]")


def test_a_pto_loop_past_its_tensor_for_large_n_is_not_proven_until_n_is_declared(capsys):
    from ptopipe.cli import main
    assert main(["check", "--static", OOB_PTO, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)[0]
    assert report["status"] == "not proven" and report["findings"] == []
    assert any("accesses GM out of bounds when n=5, i=4" in r for r in report["not_proven"])
    assert main(["check", "--static", OOB_PTO, "--range", "n=0..4"]) == 0
    assert "PASS i32_trip_count_a3.pto on a2a3 (spec): verified statically for every value of n, n in 0..4" \
        in capsys.readouterr().out


# -- deadlock for every trip count, checked once per ring period --------------------------------
SLOT16 = 16 * 16 * 4


def ping_pong(cube_pops_first: bool):
    """Cube: pop the vector's tile, push one back, n times; vector: push then pop (or pop
    first: both wait)."""
    @pl.aic
    def cube(fifo: pl.Tensor[[4 * SLOT16], pl.u8], n: pl.Scalar[pl.index]):
        v2c_buf = pl.reserve_buffer(name="v2c", size=2 * SLOT16, base=pl.AUTO)
        c2v = pl.import_peer_buffer(name="c2v", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, SLOT16, fifo, c2v_consumer_buf=c2v.base,
                               v2c_consumer_buf=v2c_buf.base, slot_num=2)
        for i in pl.range(n):
            x = pl.TPOP(v2c_buf, pl.Tile[[16, 16], pl.f32, pl.Mat], split=pl.TILE_UP_DOWN)  # CPOP
            acc = pl.matmul(pl.move(x, space=pl.Left), pl.move(x, space=pl.Right))
            pl.TFREE(v2c_buf)
            pl.TPUSH(acc, c2v, split=pl.TILE_UP_DOWN)

    @pl.aiv
    def vector(a: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32],
               fifo: pl.Tensor[[4 * SLOT16], pl.u8], n: pl.Scalar[pl.index]):
        c2v_buf = pl.reserve_buffer(name="c2v", size=2 * SLOT16, base=pl.AUTO)
        v2c = pl.import_peer_buffer(name="v2c", peer_func=cube)
        pl.aiv_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, SLOT16, fifo, c2v_consumer_buf=c2v_buf.base,
                               v2c_consumer_buf=v2c.base, slot_num=2)
        sub = pl.get_subblockid()
        for i in pl.range(n):
            if cube_pops_first:
                r = pl.TPOP(c2v_buf, pl.Tile[[8, 16], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
                pl.store(pl.adds(r, 1.0), [sub * 8, 0], out)
                pl.TFREE(c2v_buf)
                pl.TPUSH(pl.load(a, [sub * 8, 0], [8, 16]), v2c, split=pl.TILE_UP_DOWN)
            else:
                pl.TPUSH(pl.load(a, [sub * 8, 0], [8, 16]), v2c, split=pl.TILE_UP_DOWN)
                r = pl.TPOP(c2v_buf, pl.Tile[[8, 16], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
                pl.store(pl.adds(r, 1.0), [sub * 8, 0], out)
                pl.TFREE(c2v_buf)
    return pl.program(cube, vector, name="pingpong"), cube


def _verifier(prog, trips=None):
    """The verifier of ``prog`` (with n = ``trips`` when given, as ``--input n=...`` gives it)."""
    return verify_pipes._Verifier(prog.clone(), verify_pipes.get_platform("a2a3"), [],
                                  known=None if trips is None else {"n": trips})


def test_a_hang_for_every_n_is_found_with_the_first_n_that_hangs():
    prog, cube = ping_pong(True)
    found = _verifier(prog).verify()
    assert found and {e.kind for e in found} == {"deadlock"}
    assert all(e.values == "n=1" for e in found)
    assert any(f":{line_of(cube.pyfunc, 'CPOP')}:" in e.where for e in found)


@pytest.mark.parametrize("trips", [None, 100_000])
def test_the_cores_orders_are_checked_once_per_ring_period(trips):
    """Push-then-pop against pop-then-push completes for every n, and for 100000 trips: the
    path exploration runs two iterations of each loop (not 100000) and the order check one
    trip count per period of the rings (not one per trip)."""
    prog, _ = ping_pong(False)
    v = _verifier(prog, trips)
    assert v.verify() == [] and v.warnings == []
    assert v.stats["runs"] <= 4, v.stats
    steps = []
    real = pipe_paths.Explorer.run

    def counted(self):
        out = real(self)
        steps.append(self.steps)
        return out
    pipe_paths.Explorer.run = counted
    try:
        _verifier(prog, trips).verify()
    finally:
        pipe_paths.Explorer.run = real
    assert max(steps) < 200, steps


def test_a_long_loop_that_hangs_late_is_still_found():
    """The period check decides every trip count: a cube that pops before pushing hangs at
    once, also among 100000 trips."""
    prog, _ = ping_pong(True)
    found = _verifier(prog, 100_000).verify()
    assert found and {e.kind for e in found} == {"deadlock"}


# -- the solver -------------------------------------------------------------------------------
def test_decide_finds_small_witnesses_and_refutes_with_fourier_motzkin():
    n, m = var(("param", "n")), var(("param", "m"))
    assert decide([(n - const(3), ">="), (const(5) - n, ">=")]) == ("sat", {("param", "n"): 3})
    assert decide([(n - m - const(1), ">="), (m - n, ">=")])[0] == "unsat"
    # no integer between rational solutions: 2n = 1; 16n >= 49 and 2n <= 7 (n in [3.06, 3.5])
    assert decide([(n.scale(2) - const(1), "==")])[0] == "unsat"
    assert decide([(n.scale(16) - const(49), ">="), (const(7) - n.scale(2), ">=")])[0] == "unsat"
    assert decide([(n, ">=")], {("param", "n"): (2, 4)}) == ("sat", {("param", "n"): 2})
    # a caller asking only for unsat searches no witness, and gets the same refutations
    for cons in ([(n - const(3), ">="), (const(5) - n, ">=")], [(n - m - const(1), ">="), (m - n, ">=")],
                 [(n.scale(2) - const(1), "==")]):
        assert decide(cons, witness=False) == (decide(cons)[0] == "unsat" and ("unsat", None) or ("unknown", None))


def test_counts_split_each_trip_count_into_its_two_cases():
    n = var(("param", "n"))
    c = Count.trips(const(0), n + const(1)) - Count.trips(const(0), n)
    values = {str(cons): aff for cons, aff in c.cases()}
    assert sorted(str(a) for a in values.values()) == ["-n", "0", "1", "n + 1"]
    assert (Count.trips(const(0), n) * Count.trips(const(0), n)).text().startswith("max(0, n)*max(0, n)")


# -- check --static: the statuses -----------------------------------------------------------------
FLAG_FILE = '''
import numpy as np
import ptopipe
import ptopipe.language as pl
from ptopipe.runtime import KernelSet

SLOT = 16 * 32 * 4
VEC = pl.Tile[[8, 32], pl.f32, pl.Vec]


def build(flag, half):
    @pl.aiv
    def vector(out: pl.Tensor[[64, 32], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8],
               flag: pl.Scalar[pl.index]):
        buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=4, local_slot_num=4)
        sub = pl.get_subblockid()
        for i in pl.range(4):
            t = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)                            # POP
            pl.store(t, [i * 16 + sub * 8, 0], out)
            if i < flag:
                pl.TFREE(buf)
        if half:
            for j in pl.range(flag // 2):
                z = pl.load(out, [j * 16 + sub * 8, 0], [8, 32])
                pl.store(pl.adds(z, 1.0), [j * 16 + sub * 8, 0], out)             # HALF

    @pl.aic
    def cube(a: pl.Tensor[[16, 32], pl.f32], b: pl.Tensor[[32, 32], pl.f32],
             fifo: pl.Tensor[[8 * SLOT], pl.u8], flag: pl.Scalar[pl.index]):
        peer = pl.import_peer_buffer(name="ring", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                               slot_num=4)
        a0 = pl.move(pl.load(a, [0, 0], [16, 32], space=pl.Mat), space=pl.Left)
        b0 = pl.move(pl.load(b, [0, 0], [32, 32], space=pl.Mat), space=pl.Right)
        for i in pl.range(4):
            pl.TPUSH(pl.matmul(a0, b0), peer, split=pl.TILE_UP_DOWN)
    return pl.program(cube, vector, name="flags")


KERNELS = KernelSet(build)


def make_args(rng, flag=4, half=False):
    return dict(a=np.ones((16, 32), np.float32), b=np.ones((32, 32), np.float32),
                out=np.zeros((64, 32), np.float32), fifo=ptopipe.gm_buffer(8 * SLOT), flag=flag,
                half=half)


SCENARIO = ptopipe.Scenario("flags", KERNELS.aic, KERNELS.aiv, make_args, lambda a, **_: {},
                            {"default": {}})
'''


def test_check_static_fails_a_kernel_that_leaks_below_the_variants_flag(tmp_path, capsys):
    """The variant runs flag=4 (every TFREE taken): check --static verified that value only
    and passed; it now proves every flag and names one that leaks."""
    from ptopipe.cli import main
    f = tmp_path / "flags.py"
    f.write_text(FLAG_FILE)
    assert main(["check", "--static", "--json", str(f)]) == 1
    (rep,) = json.loads(capsys.readouterr().out)
    assert rep["status"] == "failed" and rep["not_proven"] == []
    (fd,) = rep["findings"]
    pop = next(i + 1 for i, ln in enumerate(FLAG_FILE.splitlines()) if "# POP" in ln)
    assert fd["where"].startswith(f"{f}:{pop}:") and "is never freed" in fd["what"]
    assert fd["values"].startswith("flag=") and int(fd["values"][5:]) < 4
    assert main(["check", "--static", str(f), "--range", "flag=4.."]) == 0
    assert "PASS flags[default] on a2a3/spec: VerifyPipes (static, for every value of flag, flag in 4.. (and " \
        "exactly with flag=4, the variant's))" in capsys.readouterr().out


def test_check_static_names_the_values_a_floor_divided_trip_count_overruns_the_tensor_with(tmp_path, capsys):
    """``range(flag // 2)`` bounds the rows a load / store touches: for flag >= 10 the loop
    reaches row 64 of the 64-row tensor, so for every flag >= 4 the bounds are not proven (a
    failing status naming those values and how to declare the kernel's), though flag=4 runs
    clean; with flag in 4..9 they are proven."""
    from ptopipe.cli import main
    f = tmp_path / "flags.py"
    f.write_text(FLAG_FILE.replace("flag=4, half=False", "flag=4, half=True"))
    assert main(["check", "--static", str(f), "--range", "flag=4.."]) == 1
    out = capsys.readouterr().out
    half = next(i + 1 for i, ln in enumerate(FLAG_FILE.splitlines()) if "# HALF" in ln) - 1
    assert out.startswith(f"NOT PROVEN flags[default] on a2a3/spec: not proven for all values: the pl.load "
                          f"at line {half} accesses GM out of bounds when flag=10, j=4 (in the loop at line "
                          f"{half - 1}) (offsets [16*j, 0] + window [8, 32] exceed 'out' of shape [64, 32]); "
                          "declare the values the kernel takes (--range NAME=LO..HI)"), out
    assert out.rstrip().endswith(" - no error found (and exactly with flag=4, the variant's)")
    assert main(["check", "--static", str(f), "--range", "flag=4..9"]) == 0
    assert capsys.readouterr().out.startswith("PASS flags[default] on a2a3/spec")


def test_check_static_fails_a_kernel_at_values_of_a_closed_declared_range(tmp_path, capsys):
    """``--range flag=4..12`` declares the values the kernel takes: the load that leaves the
    tensor at flag = 10 is an error at them (it was "not proven: declare the values", the
    values declared); an open range (flag=4..) leaves the limit undeclared: not proven."""
    from ptopipe.cli import main
    f = tmp_path / "flags.py"
    f.write_text(FLAG_FILE.replace("flag=4, half=False", "flag=4, half=True"))
    assert main(["check", "--static", str(f), "--range", "flag=4..12"]) == 1
    cap = capsys.readouterr()
    out = cap.out + cap.err
    half = next(i + 1 for i, ln in enumerate(FLAG_FILE.splitlines()) if "# HALF" in ln) - 1
    assert out.startswith("FAIL flags[default] on a2a3/spec: the static checks found"), out
    assert "error: CompileError: access out of bounds: offsets [16*j, 0] + window [8, 32] exceed 'out' of " \
           "shape [64, 32]" in out and f"flags.py:{half}:" in out and "fails when flag=" in out, out


# -- the same in .pto files -------------------------------------------------------------------------
def _pto(tmp_path, vector_loop: str, vector_free: str = "pto.tfree_from_aic {split = 1}"):
    """tests/pto/i32_trip_count_a3.pto with the vector kernel's loop header and TFREE
    replaced."""
    text = open(OOB_PTO).read()
    vec = text.index("func.func private @vector")
    body = text[vec:].replace("scf.for %i = %c0 to %n_idx step %c1 {", vector_loop, 1)
    body = body.replace("pto.tfree_from_aic {split = 1}", vector_free, 1)
    f = tmp_path / "k.pto"
    f.write_text(text[:vec] + body)
    return f, text[:vec] + body


def test_a_pto_consumer_popping_n_plus_one_tiles_fails_for_every_n(tmp_path, capsys):
    from ptopipe.cli import main
    f, text = _pto(tmp_path, "%n1 = arith.addi %n_idx, %c1 : index\n"
                             "    scf.for %i = %c0 to %n1 step %c1 {")
    assert main(["check", "--static", "--json", str(f), "--range", "n=0..3"]) == 1
    (rep,) = json.loads(capsys.readouterr().out)
    assert rep["status"] == "failed"
    (fd,) = rep["findings"]
    pop = next(i for i, ln in enumerate(text.splitlines(), 1) if "pto.tpop_from_aic" in ln)
    assert fd["where"].endswith(f"k.pto:{pop}:7") and fd["values"] == "n=0"
    assert "for every value: cube pushes n tile(s) to the C2V ring, vector (lane AIV0) pops n + 1" in fd["details"]


def test_a_pto_consumer_looping_over_ceil_divided_rows_fails_where_the_counts_differ(tmp_path, capsys):
    """The Vector kernel pops ``(n + 15) // 16`` tiles (``arith.floordivsi``) against the
    Cube's n: equal for n <= 1, an unpopped push from n = 2, reported at the Cube's TPUSH."""
    from ptopipe.cli import main
    f, text = _pto(tmp_path, "%c15 = arith.constant 15 : index\n"
                             "    %n15 = arith.addi %n_idx, %c15 : index\n"
                             "    %q = arith.floordivsi %n15, %c16 : index\n"
                             "    scf.for %i = %c0 to %q step %c1 {")
    assert main(["check", "--static", "--json", str(f)]) == 1
    (rep,) = json.loads(capsys.readouterr().out)
    assert rep["status"] == "failed"
    (fd,) = rep["findings"]
    push = next(i for i, ln in enumerate(text.splitlines(), 1) if "pto.tpush_to_aiv" in ln)
    assert fd["where"].endswith(f"k.pto:{push}:7") and fd["values"] == "n=2"
    assert "for every value: cube pushes n tile(s) to the C2V ring, vector (lane AIV0) pops (n + 15) // 16" \
        in fd["details"]


CEILDIV_LOOP = ("%q = arith.ceildivsi %n_idx, %c16 : index\n"
                "    scf.for %i = %c0 to %q step %c1 {")


def test_pto_ceildivsi_trip_counts_on_both_cores_are_proven_and_against_n_fail_at_n_2(tmp_path, capsys):
    """``arith.ceildivsi`` (pypto's tile count) is read as ``-((-n) // 16)``, which is
    ``(n + 15) // 16``: both cores looping over it are proven (within the 64 rows the
    tensors hold); the Vector kernel alone looping over it against the Cube's n leaves the
    Cube's 2nd push unpopped at n = 2."""
    from ptopipe.cli import main
    f, text = _pto(tmp_path, CEILDIV_LOOP)
    both = text.replace("scf.for %i = %c0 to %n_idx step %c1 {", CEILDIV_LOOP, 1)
    g = tmp_path / "both.pto"
    g.write_text(both)
    assert main(["check", "--static", str(g), "--range", "n=0..64"]) == 0
    assert "PASS both.pto on a2a3 (spec): verified statically for every value of n, n in 0..64" \
        in capsys.readouterr().out
    assert main(["check", "--static", "--json", str(f)]) == 1
    (rep,) = json.loads(capsys.readouterr().out)
    (fd,) = rep["findings"]
    push = next(i for i, ln in enumerate(text.splitlines(), 1) if "pto.tpush_to_aiv" in ln)
    assert fd["where"].endswith(f"k.pto:{push}:7") and fd["values"] == "n=2"
    assert "vector (lane AIV0) pops (n + 15) // 16" in fd["details"]


def _loop_over(expr: str) -> str:
    """The Vector kernel's loop header of :func:`_pto` over ``%q`` computed by ``expr``
    (MLIR lines; ``%n_idx`` is n, the constants ``%k16`` / ``%k15`` / ``%k17`` / ``%km1``
    are defined before it)."""
    return ("%k16 = arith.constant 16 : index\n    %k15 = arith.constant 15 : index\n"
            "    %k17 = arith.constant 17 : index\n    %km1 = arith.constant -1 : index\n"
            f"    {expr}\n    scf.for %i = %c0 to %q step %c1 {{")


#: (the Vector kernel's trip count, a range of n, the verdict there; None: proven, else the
#: failing value and whether the Cube's push (else the Vector's pop) is unmatched)
DIVISIONS = [
    ("%m = arith.muli %n_idx, %k16 : index\n    %q = arith.divsi %m, %k16 : index", "0..4", None),
    ("%m = arith.muli %n_idx, %km1 : index\n    %q = arith.divsi %m, %km1 : index", "0..4", None),
    ("%m = arith.addi %n_idx, %k15 : index\n    %q = arith.divsi %m, %k16 : index", "0..4", "n=2"),
    # toward zero: (n - 17) / 16 is -1 for n <= 1 and 0 for n in 2..16 (floor division: -1 to 16)
    ("%m = arith.subi %n_idx, %k17 : index\n    %d = arith.divsi %m, %k16 : index\n"
     "    %q = arith.addi %d, %n_idx : index", "2..4", None),
    ("%m = arith.subi %n_idx, %k17 : index\n    %d = arith.divsi %m, %k16 : index\n"
     "    %q = arith.addi %d, %n_idx : index", "0..4", "n=1"),
    # toward zero: (n - 16) rem 16 is n - 16 for n in 1..15, so n pops (floor: 16 + n)
    ("%m = arith.subi %n_idx, %k16 : index\n    %r = arith.remsi %m, %k16 : index\n"
     "    %q = arith.addi %r, %k16 : index", "1..4", None),
    ("%m = arith.subi %n_idx, %k16 : index\n    %r = arith.remsi %m, %k16 : index\n"
     "    %q = arith.addi %r, %k16 : index", "0..4", "n=0"),
    # by a value known at run time: (n + 4) / (n + 1) pops 1 tile at n = 3 (no facts: a witness decides)
    ("%k4 = arith.constant 4 : index\n    %m = arith.addi %n_idx, %k4 : index\n    %d = arith.addi %n_idx, %c1 : index\n"
     "    %q = arith.divsi %m, %d : index", "0..4", "n=3"),
    ("%m = arith.muli %n_idx, %k16 : index\n    %q = arith.divui %m, %k16 : index", "0..4", None),
    ("%q = arith.ceildivui %n_idx, %k16 : index", "0..4", "n=2"),
    ("%q = arith.remui %n_idx, %k16 : index", "0..4", None),
    ("%c4 = arith.constant 4 : index\n    %q = arith.remui %n_idx, %c4 : index", "0..4", "n=4"),
]


@pytest.mark.parametrize("expr,rng,fails", DIVISIONS)
def test_pto_divisions_are_read_exactly(tmp_path, capsys, expr, rng, fails):
    """``arith.divsi`` / ``remsi`` (toward zero: the IR's ``truncdiv`` / ``truncrem``, not
    its floor ``//`` / ``%``), ``divui`` / ``ceildivui`` / ``remui`` (unsigned) by a
    constant are read as IR ops of the same value: a Vector trip count computed with them
    against the Cube's n is proven where they equal it and fails at the first value where
    they do not - as the run (the .pto executor, MLIR's integer semantics) finds at that n."""
    from ptopipe.cli import main
    f, text = _pto(tmp_path, _loop_over(expr))
    rc = main(["check", "--static", "--json", str(f), "--range", f"n={rng}"])
    (rep,) = json.loads(capsys.readouterr().out)
    if fails is None:
        assert rc == 0 and rep["status"] == "verified", rep["findings"]
        return
    assert rc == 1 and rep["status"] == "failed", rep
    fd = rep["findings"][0]
    assert fd["values"] == fails, fd
    # an unpopped push, or the Cube's push waiting for a slot never freed (a hang, as the run's)
    op = "pto.tpush_to_aiv" if "never popped" in fd["what"] or "waits in the TPUSH" in fd["what"] \
        else "pto.tpop_from_aic"
    at = next(i for i, ln in enumerate(text.splitlines(), 1) if op in ln)
    assert fd["where"].endswith(f"k.pto:{at}:7"), fd


def test_pto_divsi_toward_zero_runs_as_it_is_proven(tmp_path):
    """The run of the ``(n - 17) / 16 + n`` kernel (without the static gate in front of it):
    n = 3 runs clean, n = 1 leaves the Cube's push unpopped - the values the proof says."""
    import numpy as np
    from ptopipe import run_pto
    from ptopipe.errors import PtoPipeError
    f, _ = _pto(tmp_path, _loop_over(DIVISIONS[3][0]))
    run_pto(str(f), static=False, inputs={"n": np.int32(3)})
    with pytest.raises(PtoPipeError, match="never popped|leak|TPUSH"):
        run_pto(str(f), static=False, inputs={"n": np.int32(1)})


def test_pto_an_unsigned_division_of_a_negative_value_is_a_count_of_about_2_to_the_63(tmp_path, capsys):
    """``ceildivui(2*n - 20, 2)``: 2*n - 20 read unsigned is about 2**64, so the Vector
    kernel pops 2**63 - 10 tiles at n = 0 - a FAIL there naming that count (the exact trip
    count was an OverflowError of the verifier); by 1 the quotient is 2*n - 20 itself, its
    bits read back signed as scf.for compares them: no pops at n = 0, an unpopped push at 1."""
    from ptopipe.cli import main
    f, _ = _pto(tmp_path, _loop_over("%c2 = arith.constant 2 : index\n    %c20 = arith.constant 20 : index\n"
                                     "    %m2 = arith.muli %n_idx, %c2 : index\n"
                                     "    %m = arith.subi %m2, %c20 : index\n"
                                     "    %q = arith.ceildivui %m, %c2 : index"))
    assert main(["check", "--static", "--json", str(f), "--range", "n=0..4"]) == 1
    (rep,) = json.loads(capsys.readouterr().out)
    assert rep.get("status") == "failed", rep
    # (the hang there comes first; the store at 16*i of such an i wraps: its bounds are not judged)
    every = [g for f in rep["findings"] for g in [f] + f.get("findings", [])]
    fd = next(f for f in every if "push / pop counts differ" in f["what"])
    assert fd["error"] == "CompileError" and fd["values"] == "n=0", fd
    assert f"pops {2 ** 63 - 10}" in fd["what"], fd["what"]
    g, text = _pto(tmp_path, _loop_over("%c2 = arith.constant 2 : index\n    %c20 = arith.constant 20 : index\n"
                                        "    %m2 = arith.muli %n_idx, %c2 : index\n"
                                        "    %m = arith.subi %m2, %c20 : index\n"
                                        "    %q = arith.ceildivui %m, %c1 : index"))
    assert main(["check", "--static", "--json", str(g), "--range", "n=0..4"]) == 1
    (rep,) = json.loads(capsys.readouterr().out)
    fd = rep["findings"][0]
    push = next(i for i, ln in enumerate(text.splitlines(), 1) if "pto.tpush_to_aiv" in ln)
    assert fd["values"] == "n=1" and fd["where"].endswith(f"k.pto:{push}:7"), fd


def test_pto_divsi_by_a_run_time_value_fails_where_the_run_does(tmp_path, capsys):
    """``n / n`` (toward zero) pops one tile against the Cube's n: the first failing n is 2,
    a leak in the run there too; n = 1 runs clean."""
    import numpy as np
    from ptopipe import run_pto
    from ptopipe.cli import main
    from ptopipe.errors import PtoPipeError
    f, text = _pto(tmp_path, _loop_over("%q = arith.divsi %n_idx, %n_idx : index"))
    assert main(["check", "--static", "--json", str(f)]) == 1
    (rep,) = json.loads(capsys.readouterr().out)
    fd = rep["findings"][0]
    push = next(i for i, ln in enumerate(text.splitlines(), 1) if "pto.tpush_to_aiv" in ln)
    assert fd["values"] == "n=2" and fd["where"].endswith(f"k.pto:{push}:7"), fd
    assert "vector (lane AIV0) pops truncdiv(n, n)" in fd["details"], fd
    run_pto(str(f), static=False, inputs={"n": np.int32(1)})
    with pytest.raises(PtoPipeError, match="never popped"):
        run_pto(str(f), static=False, inputs={"n": np.int32(2)})


def test_a_pto_tfree_taken_only_while_i_is_below_a_flag_leaks_for_small_flags(tmp_path, capsys):
    """4 pops, the TFREE only while i < n: clean for the launch's n=4, a hang for n=0 (the
    third pop finds both slots held)."""
    from ptopipe.cli import main
    skip = ("%lt = arith.cmpi slt, %i, %n_idx : index\n"
            "      scf.if %lt {\n        pto.tfree_from_aic {split = 1}\n      }")
    f, text = _pto(tmp_path, "scf.for %i = %c0 to %c4 step %c1 {", skip)
    text_c = text.replace("scf.for %i = %c0 to %n_idx step %c1 {", "scf.for %i = %c0 to %c4 step %c1 {", 1)
    text_c = text_c.replace("%c1 = arith.constant 1 : index",
                            "%c1 = arith.constant 1 : index\n    %c4 = arith.constant 4 : index")
    f.write_text(text_c)
    assert main(["check", "--static", str(f), "--input", "n=4"]) == 0      # the launch's value
    capsys.readouterr()
    assert main(["check", "--static", "--json", str(f)]) == 1
    (rep,) = json.loads(capsys.readouterr().out)
    (fd,) = rep["findings"]
    pop = next(i for i, ln in enumerate(text_c.splitlines(), 1) if "pto.tpop_from_aic" in ln)
    assert fd["where"].endswith(f"k.pto:{pop}:7") and fd["values"] == "n=0"      # SLOT_NUM 2: a hang
    assert fd["what"].startswith("this TPOP holds 3 slots of the C2V ring at once, more than its SLOT_NUM 2")


# -- a kernel's scalar parameters as its calls pass them ----------------------------------------
def _rows_kernel(calls: str, entry_params: str = "") -> str:
    """A Vector kernel scaling 8 rows of a 32x16 tensor from row %row, and an entry calling
    it (``calls``: its func.call lines, ``%cK`` constants defined)."""
    t = ("!pto.tile_buf<loc=vec, dtype=f32, rows=8, cols=16, v_row=8, v_col=16, blayout=row_major, "
         "slayout=none_box, fractal=512, pad=0>")
    consts = "".join(f"    %c{k} = arith.constant {k} : index\n" for k in (0, 1, 7, 8, 16, 24, 25, 32))
    return f"""module attributes {{pto.target_arch = "a3"}} {{
  func.func private @rows(%x: !pto.ptr<f32>, %row: index) attributes {{pto.kernel_kind = #pto.kernel_kind<vector>}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %xv = pto.make_tensor_view %x, shape = [%c32, %c16], strides = [%c16, %c1] : !pto.tensor_view<32x16xf32>
    %a = pto.alloc_tile : {t}
    %p = pto.partition_view %xv, offsets = [%row, %c0], sizes = [%c8, %c16] : !pto.tensor_view<32x16xf32> -> !pto.partition_tensor_view<8x16xf32>
    pto.tload ins(%p : !pto.partition_tensor_view<8x16xf32>) outs(%a : {t})
    pto.tstore ins(%a : {t}) outs(%p : !pto.partition_tensor_view<8x16xf32>)
    return
  }}
  func.func @main(%x: !pto.ptr<f32>{entry_params}) attributes {{pto.entry}} {{
{consts}{calls}    return
  }}
}}
"""


def _call(row: str) -> str:
    return f"    func.call @rows(%x, {row}) : (!pto.ptr<f32>, index) -> ()\n"


def test_a_called_kernels_parameter_is_verified_for_the_constants_its_calls_pass():
    """@main calls @rows with %row = 0, 8, 16, 24: each call's value is proven (the run's
    values), no "not proven when row=25" with a --range the run then refuses."""
    from ptopipe.codegen.pto_load import load_pto
    text = _rows_kernel("".join(_call(f"%c{k}") for k in (0, 8, 16, 24)))
    _, warnings, _ = load_pto("rows.pto", text=text)
    assert not any(w.startswith(verify_pipes.NOT_PROVEN) for w in warnings), warnings


def test_a_call_passing_a_constant_past_the_tensor_is_the_error_at_the_access():
    from ptopipe.codegen.pto_load import load_pto
    from ptopipe.errors import CompileError
    text = _rows_kernel(_call("%c0") + _call("%c25"))
    with pytest.raises(CompileError) as e:
        load_pto("rows.pto", text=text)
    load = next(i for i, ln in enumerate(text.splitlines(), 1) if "pto.tload" in ln)
    assert e.value.where == f"rows.pto:{load}:5"
    call = next(i for i, ln in enumerate(text.splitlines(), 1) if "@rows(%x, %c25)" in ln)
    part = next(i for i, ln in enumerate(text.splitlines(), 1) if "pto.partition_view" in ln)
    assert e.value.what == ("access out of bounds: offsets [25, 0] + window [8, 16] exceed 'x' of shape "
                            f"[32, 16] (in the call at line {call}); its window: the pto.partition_view at "
                            f"line {part}")


def test_a_called_kernels_parameter_passed_an_entry_parameter_takes_the_entrys_range(tmp_path, capsys):
    """@main passes its own %start as @rows's %row: --range start=... (a name the run knows)
    proves the access; unproven, the fix names --range for it."""
    from ptopipe.cli import main
    from ptopipe.codegen.pto_load import load_pto
    text = _rows_kernel(_call("%start"), ", %start: index")
    _, warnings, _ = load_pto("rows.pto", text=text)
    (w,) = [w for w in warnings if w.startswith(verify_pipes.NOT_PROVEN)][:1]
    assert "when start=25" in w and w.endswith("declare the values the kernel takes (--range NAME=LO..HI)")
    _, warnings, _ = load_pto("rows.pto", text=text, ranges={"start": (0, 24)})
    assert not any(w.startswith(verify_pipes.NOT_PROVEN) for w in warnings), warnings


def test_a_value_the_caller_computes_is_not_offered_a_range_the_run_refuses():
    """%row = %c7 + %c1 at the call: an unknown no option names; the fix says where it comes
    from instead of proposing --range row=..."""
    from ptopipe.codegen.pto_load import load_pto
    text = _rows_kernel("    %r = arith.addi %c7, %c1 : index\n" + _call("%r"))
    _, warnings, _ = load_pto("rows.pto", text=text)
    found = [w for w in warnings if w.startswith(verify_pipes.NOT_PROVEN)]
    assert found and all("row is computed by the caller of @rows: pass a constant, or a parameter of "
                         "the function run and declare its values (--range NAME=LO..HI)" in w for w in found)


@pytest.mark.parametrize("n, status", [(4, 0), (5, 1)])
def test_check_static_of_an_entry_passing_a_constant_trip_count_proves_that_count(tmp_path, capsys, n, status):
    """The entry passes %n = 4 to both kernels: proven for that count (not "for every value
    of n"); 5 runs the vector's store past its 64-row tensor, the error at the store."""
    from ptopipe.cli import main
    text = open(OOB_PTO).read().replace("%n: i32, %gm_slot_buffer: !pto.ptr<f32>) attributes {pto.entry} {",
                                        f"%gm_slot_buffer: !pto.ptr<f32>) attributes {{pto.entry}} {{\n"
                                        f"    %n = arith.constant {n} : i32", 1)
    f = tmp_path / "k.pto"
    f.write_text(text)
    assert main(["check", "--static", str(f)]) == status
    out, err = capsys.readouterr()
    if status == 0:
        assert out.startswith("PASS k.pto on a2a3 (spec): verified statically (VerifyPipes,"), out
    else:
        store = next(i for i, ln in enumerate(text.splitlines(), 1) if "pto.tstore" in ln)
        assert f"k.pto:{store}:" in err and "access out of bounds" in err and "n=" not in err
