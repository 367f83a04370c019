"""VerifyPipes over ceil-division tiling and ragged last tiles: trip counts ``(n + 15) //
16``, ``-(-n // 16)``, ``(n + t - 1) // t``, a tail under ``n % 16 != 0``, tiles and windows
bounded by ``pl.min`` - proven for every n where the kernel is correct, and where it is not
the finding at the op and with the values a run fails with (``symbolic``'s derived unknowns;
``verify_pipes._Verifier.same_trips`` for the deadlock check)."""
import itertools
import pathlib
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ptopipe
import ptopipe.language as pl
from ptopipe.driver.loader import load_module
from ptopipe.errors import PtoPipeError
from ptopipe.passes import verify_pipes
from ptopipe.passes.static_check import FAILED, NOT_PROVEN, PROVEN, verdict, verify_program
from ptopipe.passes.symbolic import affine, const, decide, var
from ptopipe.runtime import run as dsl_run

from markers import line_of

# A C2V pair over n rows in 16-row tiles: the Cube pushes {PUSHES} tiles, each Vector lane
# pops its 8-row half of {POPS} tiles, doing {BODY} with each; {TAIL} after the loop.
KERNEL = '''
import numpy as np
import ptopipe
import ptopipe.language as pl

TM, K, N, HR = 16, 32, 32, 8
SLOT = TM * N * 4
VEC = pl.Tile[[HR, N], pl.f32, pl.Vec]


@pl.aiv
def vec(out: pl.Tensor[[128, N], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8],
        n: pl.Scalar[pl.index], t: pl.Scalar[pl.index]):
    buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=4)
    sub = pl.get_subblockid()
    for i in pl.range({POPS}):
        part = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)                          # V-POP
{BODY}
{TAIL}


@pl.aic
def cube(a: pl.Tensor[[TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
         fifo: pl.Tensor[[8 * SLOT], pl.u8], n: pl.Scalar[pl.index], t: pl.Scalar[pl.index]):
    peer = pl.import_peer_buffer(name="ring", peer_func=vec)
    pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                           slot_num=4)
    a0 = pl.move(pl.load(a, [0, 0], [TM, K], space=pl.Mat), space=pl.Left)
    b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
    for i in pl.range({PUSHES}):
        pl.TPUSH(pl.matmul(a0, b0), peer, split=pl.TILE_UP_DOWN)               # C-PUSH


prog = pl.program(cube, vec, name="ragged")
'''
# each popped half is stored, then freed (the barrier orders the store before the free on
# every protocol: pto-isa on A5 frees from PIPE_V)
FREE = '''        pl.store(part, [sub * HR, 0], out)
        pl.barrier()
        pl.TFREE(buf)'''
TAIL_POP = '''    if {COND}:
        tail = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)                          # T-POP
        pl.store(tail, [sub * HR, 0], out)
        pl.barrier()
        pl.TFREE(buf)'''
CEIL = "(n + 15) // 16"
_DIR = pathlib.Path(tempfile.mkdtemp(prefix="ragged_kernels_"))
_built: dict = {}


def kernel(pushes=CEIL, pops=CEIL, body=FREE, tail=""):
    """``(the program, the source line of each marker)`` of :data:`KERNEL` (built once per text)."""
    text = (KERNEL.replace("{PUSHES}", pushes).replace("{POPS}", pops).replace("{BODY}", body)
            .replace("{TAIL}", tail))
    if text not in _built:
        path = _DIR / f"ragged_{len(_built)}.py"
        path.write_text(text)
        lines = {ln.rsplit("# ", 1)[1].strip(): k + 1 for k, ln in enumerate(text.splitlines())
                 if "# " in ln and ln.rstrip().split("# ")[-1].isupper()}
        _built[text] = (load_module(str(path)).prog, lines, str(path))
    return _built[text]


def _verify(prog, platform="a2a3", protocol="spec", ranges=None):
    """(findings, not-proven reasons, status) of the static checks for every value."""
    warnings = []
    found = verify_pipes.verify(prog.clone(), platform, warnings, protocol=protocol, ranges=ranges)
    status = verdict(lambda v: (verify_program(prog, platform, protocol, v, w := [], ranges), w), None)[0]
    return found, verify_pipes.not_proven(warnings), status


def _run(prog, n, t=16, platform="a2a3", protocol="spec"):
    """The error class a run with ``n`` rows raises (None: it ran clean)."""
    rng = np.random.default_rng(0)
    args = dict(a=rng.integers(-3, 4, (16, 32)).astype(np.float32),
                b=rng.integers(-3, 4, (32, 32)).astype(np.float32), out=np.zeros((128, 32), np.float32),
                fifo=ptopipe.gm_buffer(8 * 16 * 32 * 4), n=n, t=t)
    try:
        dsl_run(prog, args, platform=platform, protocol=protocol)
    except PtoPipeError as e:
        return type(e).__name__
    return None


# -- correct kernels: proven for every n ---------------------------------------------------------
@pytest.mark.parametrize("pushes,pops", [
    (CEIL, CEIL),
    ("-(-n // 16)", "-(-n // 16)"),
    (CEIL, "-(-n // 16)"),                       # two spellings of one count, on two cores
    ("(n + 16 - 1) // 16", CEIL),
    ("(n + t - 1) // t", "(n + t - 1) // t"),    # a tile size the launch passes
], ids=["ceil", "negneg", "ceil_vs_negneg", "ceil_unfolded", "ceil_by_t"])
@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a5", "pto-isa")])
def test_ceil_division_trip_counts_are_proven_for_every_n(pushes, pops, platform, protocol):
    prog, _, _ = kernel(pushes, pops)
    assert _verify(prog, platform, protocol) == ([], [], PROVEN)


@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec"),
                                               ("a5", "pto-isa")])
def test_full_tiles_and_a_tail_under_n_mod_16_are_proven_against_ceil_division_pushes(platform, protocol):
    """16-row tiles ``range(n // 16)`` and one more pop ``if n % 16 != 0``: the counts are
    the pushes' ``(n + 15) // 16`` on both paths, and the deadlock check runs the Cube's loop
    as the Vector's plus one iteration where the tail is popped."""
    prog, _, _ = kernel(CEIL, "n // 16", tail=TAIL_POP.replace("{COND}", "n % 16 != 0"))
    assert _verify(prog, platform, protocol) == ([], [], PROVEN)


def test_a_ragged_last_tile_bounded_by_pl_min_is_proven():
    body = '''        rows = pl.min(16, n - i * 16)
        if rows == 16:
            pl.store(pl.adds(part, 1.0), [sub * HR, 0], out)
        else:
            pl.store(part, [sub * HR, 0], out)
        pl.barrier()
        pl.TFREE(buf)'''
    assert _verify(kernel(body=body)[0]) == ([], [], PROVEN)


CLAMPED = '''        r0 = pl.min(i * 16, {LAST})
        pl.store(part, [r0 + sub * HR, 0], out)                               # R-STORE
        pl.barrier()
        pl.TFREE(buf)'''


def test_a_window_clamped_into_the_tensor_is_proven_for_the_rows_it_holds():
    """``pl.min(i * 16, n - 16)``: within the 128 rows for every n in 16..128; below 16 rows
    the clamp reaches row -15, which the NOT PROVEN reason names with how to declare n."""
    prog, lines, _ = kernel(body=CLAMPED.replace("{LAST}", "n - 16"))
    assert _verify(prog, ranges={"n": (16, 128)}) == ([], [], PROVEN)
    found, reasons, status = _verify(prog)
    assert (found, status) == ([], NOT_PROVEN)
    assert reasons == [f"the pl.store at line {lines['R-STORE']} accesses GM out of bounds when n=1, i=0 (in the "
                       f"loop at line {lines['R-STORE'] - 3}) (offsets [min(16*i, n - 16), 0] + window [8, 32] "
                       "exceed 'out' of shape [128, 32]); declare the values the kernel takes (--range "
                       "NAME=LO..HI)"], reasons


# -- broken kernels: the finding at its op, with the values a run fails with --------------------
def test_pops_of_the_full_tiles_only_leave_the_ragged_tile_unpopped_at_n_1():
    prog, lines, _ = kernel(CEIL, "n // 16")
    found, reasons, status = _verify(prog)
    assert status == FAILED and [e.kind for e in found] == ["count"] and reasons == []
    e = found[0]
    assert f":{lines['C-PUSH']}:" in e.where and e.values == "n=1"
    assert e.what.startswith("this TPUSH (the 1st to the C2V ring, in iteration 1 (i=0) of the loop at line")
    assert "cube pushes 1 tile(s) but vec (lane AIV0) pops 0 (fails when n=1)" in e.what
    assert "for every value: cube pushes (n + 15) // 16 tile(s) to the C2V ring, vec (lane AIV0) pops " \
           "n // 16" in e.details
    assert _run(prog, 1) == "LeakError" and _run(prog, 32) is None


def test_a_tail_test_that_misses_a_remainder_of_1_is_found_with_n_1():
    prog, lines, _ = kernel(CEIL, "n // 16", tail=TAIL_POP.replace("{COND}", "n % 16 > 1"))
    found, _, status = _verify(prog)
    assert status == FAILED and [e.kind for e in found] == ["count"]
    assert f":{lines['C-PUSH']}:" in found[0].where and found[0].values == "n=1"
    assert _run(prog, 1) == "LeakError" and _run(prog, 2) is None


def test_a_tile_size_the_launch_passes_against_a_fixed_16_is_found_with_the_values_that_differ():
    prog, lines, _ = kernel(CEIL, "(n + t - 1) // t")
    found, _, status = _verify(prog)
    assert status == FAILED and [e.kind for e in found] == ["count"]
    e = found[0]
    values = dict(kv.split("=") for kv in e.values.split(", "))
    n, t = int(values["n"]), int(values["t"])
    assert t > 0 and (n + 15) // 16 != (n + t - 1) // t
    assert f":{lines['C-PUSH']}:" in e.where or f":{lines['V-POP']}:" in e.where
    assert _run(prog, n, t) is not None and _run(prog, n, 16) is None


def test_a_tfree_skipped_on_the_ragged_last_tile_is_found_at_its_pop_with_a_ragged_n():
    body = '''        pl.store(part, [sub * HR, 0], out)
        pl.barrier()
        if pl.min(16, n - i * 16) == 16:
            pl.TFREE(buf)'''
    prog, lines, _ = kernel(body=body)
    found, _, status = _verify(prog)
    assert status == FAILED and found
    for e in found:
        assert f":{lines['V-POP']}:" in e.where and e.values
        assert int(e.values.split(",")[0].removeprefix("n=")) % 16 != 0, e.values
    assert _run(prog, 1) == "LeakError" and _run(prog, 32) is None


def test_a_batch_loop_around_ceil_division_tiles_finds_floor_pops_with_m_1_n_1():
    """``for b in range(m): for i in range((n + 15) // 16)`` pushes against ``n // 16``
    pops: the counts multiply two unknown trip counts; the witness computes both products,
    so the finding is at the Cube's TPUSH with values a run fails with."""
    text = KERNEL.replace("{PUSHES}", CEIL).replace("{POPS}", "n // 16").replace("{BODY}", FREE)
    text = (text.replace("{TAIL}", "").replace("t: pl.Scalar[pl.index])", "t: pl.Scalar[pl.index], m: pl.Scalar[pl.index])")
            .replace("    for i in pl.range(", "    for b in pl.range(m):\n     for i in pl.range("))  # both cores
    path = _DIR / "nested_floor.py"
    path.write_text(text)
    prog = load_module(str(path)).prog
    found, reasons, status = _verify(prog)
    assert status == FAILED and [e.kind for e in found] == ["count"] and reasons == []
    push = next(k + 1 for k, ln in enumerate(path.read_text().splitlines()) if ln.endswith("# C-PUSH"))
    assert f":{push}:" in found[0].where and found[0].values == "m=1, n=1"
    assert "cube pushes max(0, (n + 15) // 16)*max(0, m) tile(s)" in found[0].details


PP_SLOT = 16 * 16 * 4


def nested_pingpong(cube_pops_first: bool):
    """A batch loop around ceil-division tiles, both ways: the Cube pops the Vector's tile
    and pushes its square back (C2V), the Vector pushes first (clean) or pops first (both
    cores wait for the other)."""
    @pl.aic
    def cube(fifo: pl.Tensor[[4 * PP_SLOT], pl.u8], m: pl.Scalar[pl.index], n: pl.Scalar[pl.index]):
        v2c_buf = pl.reserve_buffer(name="v2c", size=2 * PP_SLOT, base=pl.AUTO)
        c2v = pl.import_peer_buffer(name="c2v", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, PP_SLOT, fifo, c2v_consumer_buf=c2v.base,
                               v2c_consumer_buf=v2c_buf.base, slot_num=2)
        for b in pl.range(m):
            for i in pl.range((n + 15) // 16):
                x = pl.TPOP(v2c_buf, pl.Tile[[16, 16], pl.f32, pl.Mat], split=pl.TILE_UP_DOWN)  # PP-CPOP
                acc = pl.matmul(pl.move(x, space=pl.Left), pl.move(x, space=pl.Right))
                pl.TFREE(v2c_buf)
                pl.TPUSH(acc, c2v, split=pl.TILE_UP_DOWN)

    @pl.aiv
    def vector(a: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32],
               fifo: pl.Tensor[[4 * PP_SLOT], pl.u8], m: pl.Scalar[pl.index], n: pl.Scalar[pl.index]):
        c2v_buf = pl.reserve_buffer(name="c2v", size=2 * PP_SLOT, base=pl.AUTO)
        v2c = pl.import_peer_buffer(name="v2c", peer_func=cube)
        pl.aiv_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, PP_SLOT, fifo, c2v_consumer_buf=c2v_buf.base,
                               v2c_consumer_buf=v2c.base, slot_num=2)
        sub = pl.get_subblockid()
        for b in pl.range(m):
            for i in pl.range((n + 15) // 16):
                if cube_pops_first:
                    r = pl.TPOP(c2v_buf, pl.Tile[[8, 16], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
                    pl.store(pl.adds(r, 1.0), [sub * 8, 0], out)
                    pl.barrier()
                    pl.TFREE(c2v_buf)
                    pl.TPUSH(pl.load(a, [sub * 8, 0], [8, 16]), v2c, split=pl.TILE_UP_DOWN)
                else:
                    pl.TPUSH(pl.load(a, [sub * 8, 0], [8, 16]), v2c, split=pl.TILE_UP_DOWN)
                    r = pl.TPOP(c2v_buf, pl.Tile[[8, 16], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
                    pl.store(pl.adds(r, 1.0), [sub * 8, 0], out)
                    pl.barrier()
                    pl.TFREE(c2v_buf)
    return pl.program(cube, vector, name="nested_pingpong"), cube


def _run_pingpong(prog, m, n):
    try:
        dsl_run(prog, dict(a=np.ones((16, 16), np.float32), out=np.zeros((16, 16), np.float32),
                           fifo=ptopipe.gm_buffer(4 * PP_SLOT), m=m, n=n))
    except PtoPipeError as e:
        return type(e).__name__
    return None


def test_nested_loops_of_unknown_trip_count_run_as_one_loop_in_the_deadlock_check(no_hang):
    """The batch loop's body is the tile loop, alike in every batch: the deadlock check runs
    them as one loop of ``m * ((n + 15) // 16)`` iterations - clean when the Vector pushes
    first, a hang at the Cube's TPOP with the values of one iteration when both pop first."""
    good, _ = nested_pingpong(cube_pops_first=False)
    assert _verify(good) == ([], [], PROVEN)
    assert [(m, n) for m in range(3) for n in (0, 1, 17, 40) if _run_pingpong(good, m, n)] == []
    bad, cube = nested_pingpong(cube_pops_first=True)
    found, _, status = _verify(bad)
    assert status == FAILED and [e.kind for e in found] == ["deadlock"]
    assert f":{line_of(cube.pyfunc, 'PP-CPOP')}:" in found[0].where and found[0].values == "m=1, n=1"
    assert _run_pingpong(bad, 1, 1) == "DeadlockError" and _run_pingpong(bad, 0, 1) is None


# -- the derived unknowns themselves --------------------------------------------------------------
N_ = ("param", "n")


def test_decide_finds_a_witness_at_the_corner_of_declared_ranges():
    """A trip count declared up to 600 over a 512-tile tensor: the tile ``16*i`` leaves it only
    at i >= 512, past the small values the search tries first; the ranges' corner (n = 600,
    i = n - 1) is the witness, not "unknown"."""
    i = ("iv", "line 3", 0, "i")
    ranges = {N_: (0, 601), i: (0, N_)}
    found, w = decide([(var(i).scale(16) + const(16 - 8192 - 1), ">=")], ranges)
    assert found == "sat" and w == {N_: 600, i: 599}
    assert decide([(var(i).scale(16) + const(16 - 8192 - 1), ">=")], {N_: (0, 513), i: (0, N_)})[0] == "unsat"


def test_decide_pins_a_floor_division_and_splits_min_into_its_cases():
    """The explorer's symbols of ``(n + 15) // 16``, ``-(-n // 16)``, ``n // 16``, ``n % 16``
    and ``pl.min(16*n, 24)`` read as derived unknowns."""
    ceil = affine(("floordiv", ("add", N_, 15), 16))
    negneg = affine(("neg", ("floordiv", ("neg", N_), 16)))
    floor = affine(("floordiv", N_, 16))
    assert affine(("floordiv", ("sub", ("add", N_, 16), 1), 16)) == ceil   # one unknown per form
    assert affine(("mod", N_, 16)) == var(N_) - floor.scale(16)
    assert negneg == ceil                                         # -(-n // 16): one unknown
    assert affine(("floordiv", N_, -16)) == affine(("floordiv", ("neg", N_), 16))
    two = affine(("floordiv", ("add", N_, 16), 16))               # (n + 16) // 16: another one
    for sign in (1, -1):            # two ceil-like divisions: never 2 apart
        assert decide([((two - ceil).scale(sign) - const(2), ">=")])[0] == "unsat"
    found, w = decide([(ceil - floor - const(1), ">=")])
    assert found == "sat" and w[N_] == 1                         # the smallest ragged n
    clamp = affine(("min", ("mul", 16, N_), 24))                 # 0 <= min(16n, 24) <= 24
    assert decide([(clamp.scale(-1) - const(1), ">=")])[0] == "unsat"
    assert decide([(clamp - const(25), ">=")])[0] == "unsat"
    assert decide([(clamp - const(24), "==")]) == ("sat", {N_: 2, clamp.vars[0][0]: 24})
    # a witness past the constants' span: n // 16 >= 3 with n % 16 == 0 first holds at n = 48
    found, w = decide([(floor - const(3), ">="), (affine(("mod", N_, 16)), "==")])
    assert found == "sat" and w[N_] == 48


# -- the static verdict against runs -------------------------------------------------------------
_TRIPS = [CEIL, "-(-n // 16)", "n // 16", "(n + 7) // 8", "(n + 16) // 16", "n // 16 + 1"]
_TAILS = ["", "n % 16 != 0", "n % 16 > 1", "n % 8 != 0"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_TRIPS), st.sampled_from(_TRIPS), st.sampled_from(_TAILS))
def test_the_static_verdict_agrees_with_runs_for_every_n(pushes, pops, tail):
    """Every such kernel is decided: a PROVEN one runs clean for every n in 0..40, a FAILED
    one fails in the run with the values its finding names."""
    prog, _, _ = kernel(pushes, pops, tail=TAIL_POP.replace("{COND}", tail) if tail else "")
    found, reasons, status = _verify(prog)
    assert status != NOT_PROVEN, reasons
    if status == PROVEN:
        assert [n for n in range(41) if _run(prog, n)] == []
    else:
        n = int(found[0].values.removeprefix("n="))
        assert _run(prog, n) is not None, found[0]


def test_the_property_sample_holds_both_verdicts():
    """The kernels the property test draws from hold proven and failing ones."""
    seen = set()
    for pushes, pops, tail in itertools.product(_TRIPS[:3], _TRIPS[:3], _TAILS[:2]):
        seen.add(_verify(kernel(pushes, pops, tail=TAIL_POP.replace("{COND}", tail) if tail else "")[0])[2])
    assert seen == {PROVEN, FAILED}
