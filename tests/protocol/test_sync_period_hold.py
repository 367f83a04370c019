"""Under pto-isa a consumer's frees reach the producer in batches of SyncPeriod (SLOT_NUM
<= 2: SLOT_NUM, else SLOT_NUM / 2), so on a consumer-local ring (A5) a TPOP may hold at
most SLOT_NUM - SyncPeriod + 1 slots, the popped one included; holding more hangs (the
simulator's DeadlockError, an AICPU timeout on the device).  VerifyPipes reports it at the
TPOP, statically, for the protocol of the compile / check; spec, A2A3 (a GM ring's TPOP
frees inside the TPOP) and a SLOT_NUM of SyncPeriod 1 stay clean.

And pto-isa's TFREE sends its free by the index of the consumer's latest TPOP
(``shouldNotifyFree(cons.tileIndex - 1)``), not of the tile it releases: with SyncPeriod > 1 a
tile freed after a later TPOP of its ring sends that TPOP's credit - more or fewer than the
producer counts on - so a hold within that limit is wrong too where its TFREE's answer
differs (VerifyPipes' ``free_index`` finding, at the later TPOP).  InsertTfree copies a popped
Vec tile held across a later TPOP of its ring there, so a compiled Vector kernel frees each
tile before the next TPOP; a Cube's Mat tiles cannot be copied, and such a kernel is refused."""
import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe import CompileError, DeadlockError, LeakError, ProtocolError
from ptopipe.ir import print_program
from ptopipe.passes import compile_program
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import kernels

from markers import line_of

N = 3


def hold_while_popping(slot_num):
    """The Vector holds s1 while it pops s2 (C2V, Vec tiles: InsertTfree can copy s1)."""
    @pl.incore(slot_num=slot_num)
    def k(x: pl.Tensor[[N * 16, 16], pl.f32], w: pl.Tensor[[16, 16], pl.f32],
          out: pl.Tensor[[N * 16, 16], pl.f32], out0: pl.Tensor[[N * 16, 16], pl.f32]):
        w_r = pl.move(pl.load(w, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        for i in pl.range(N):
            xi = pl.move(pl.load(x, [i * 16, 0], [16, 16], space=pl.Mat), space=pl.Left)
            s0 = pl.move(pl.matmul(xi, w_r), space=pl.Vec)      # freed at once
            pl.store(pl.adds(s0, 1.0), [i * 16, 0], out0)
            s1 = pl.move(pl.matmul(xi, w_r), space=pl.Vec)      # held ...
            s2 = pl.move(pl.matmul(xi, w_r), space=pl.Vec)  # SECOND
            pl.store(pl.add(s1, s2), [i * 16, 0], out)
    return k


def cube_holds(slot_num):
    """Per iteration the Cube pops c (freed after its move), then holds a while it pops b
    (V2C, Mat tiles: no copy in Mat).  At SLOT_NUM 2 under pto-isa the pop of b in the
    first iteration is tile 2 with one free done: the producer waits for a free SET that the
    consumer sends only at its second TFREE, after this pop."""
    @pl.incore(slot_num=slot_num)
    def k(x: pl.Tensor[[N * 16, 16], pl.f32], w: pl.Tensor[[16, 16], pl.f32],
          out: pl.Tensor[[N * 16, 16], pl.f32], out0: pl.Tensor[[N * 16, 16], pl.f32]):
        w_r = pl.move(pl.load(w, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        for i in pl.range(N):
            c = pl.move(pl.load(x, [i * 16, 0], [16, 16]), space=pl.Mat)
            pl.store(pl.matmul(pl.move(c, space=pl.Left), w_r), [i * 16, 0], out0)
            a = pl.move(pl.load(x, [i * 16, 0], [16, 16]), space=pl.Mat)
            b = pl.move(pl.muls(pl.load(x, [i * 16, 0], [16, 16]), 2.0), space=pl.Mat)  # SECOND
            pl.store(pl.matmul(pl.move(a, space=pl.Left), pl.move(b, space=pl.Right)),
                     [i * 16, 0], out)
    return k


def _args():
    rng = np.random.default_rng(9)
    return dict(x=rng.integers(-2, 3, (N * 16, 16)).astype(np.float32),
                w=rng.integers(-2, 3, (16, 16)).astype(np.float32),
                out=np.zeros((N * 16, 16), np.float32), out0=np.zeros((N * 16, 16), np.float32))


def _cube_args():
    return _args()


def _cube_want(args):
    x = args["x"].reshape(N, 16, 16)
    return np.concatenate([xi @ (2 * xi) for xi in x])


def _run(k, args, platform, protocol, passes=None):
    compiled = compile_program(pl.program(k), platform, passes, protocol=protocol)
    aic, aiv = kernels(compiled)
    return ptopipe.run(aic, aiv, with_slot_buffer(compiled, dict(args)), platform=platform,
                       protocol=protocol)


def test_holding_a_cube_slot_while_popping_at_slot_num_2_is_an_error_under_pto_isa_on_a5():
    k = cube_holds(2)
    with pytest.raises(CompileError) as e:
        compile_program(pl.program(k), "a5", protocol="pto-isa")
    assert e.value.what.startswith("this TPOP holds 2 slots of the V2C ring at once, more than its "
                                   "pto-isa held-slot limit (SLOT_NUM - SyncPeriod + 1) 1")
    assert "a free every SyncPeriod 2 TFREEs" in e.value.what
    assert e.value.where.split(":")[-2] == str(line_of(k.pyfunc, "SECOND"))
    assert "raise SLOT_NUM" in e.value.fix


@pytest.mark.parametrize("platform,protocol,slot_num", [("a5", "spec", 2), ("a2a3", "pto-isa", 2),
                                                         ("a5", "pto-isa", 3)])
def test_the_cube_kernel_is_clean_and_right_where_the_hold_fits(platform, protocol, slot_num, no_hang):
    """(Not A5 under pto-isa with SLOT_NUM 4: test_the_cube_kernel_at_slot_num_4_is_refused_by_the_free_index.)"""
    args = _cube_args()
    res = _run(cube_holds(slot_num), args, platform, protocol)
    np.testing.assert_array_equal(res.outputs["out"], _cube_want(args))
    np.testing.assert_array_equal(res.outputs["out0"], args["x"] @ args["w"])


def test_the_cube_kernel_at_slot_num_4_is_refused_by_the_free_index(no_hang):
    """SLOT_NUM 4 (SyncPeriod 2) leaves room for the hold (3 of 4), but the TFREE of a comes
    after b's TPOP and tests b's index (pto-isa's ``shouldNotifyFree(cons.tileIndex - 1)``): per
    iteration the three TFREEs send one credit where the producer counts on 1.5, so the Cube
    sends 3 for 9 tiles and the Vector's destructor, which drains for 4, hangs on the device.
    (This test used to call the kernel clean: the free index was counted by releases.)
    Refused at b's TPOP; compiled without VerifyPipes the run hangs at the teardown, naming the
    TFREE that sent no credit."""
    k = cube_holds(4)
    with pytest.raises(CompileError) as e:
        compile_program(pl.program(k), "a5", protocol="pto-isa")
    assert e.value.kind == "free_index", e.value
    assert e.value.where.split(":")[-2] == str(line_of(k.pyfunc, "SECOND"))
    assert "tests this TPOP's index" in e.value.what and "latest TPOP" in e.value.what, e.value.what
    assert "move it to pl.Left / pl.Right" in e.value.fix and "@pl.incore(slot_num=3)" in e.value.fix, e.value.fix
    from ptopipe.passes.manager import CANONICAL_ORDER
    passes = [p for p in CANONICAL_ORDER if p != "verify-pipes"]
    with pytest.raises(DeadlockError) as ei:
        _run(k, _cube_args(), "a5", "pto-isa", passes)
    assert "teardown" in ei.value.what and "sent 3 / consumed 3 / awaited 1" in ei.value.what, ei.value.what
    assert "latest TPOP" in ei.value.fix, ei.value.fix


def test_what_the_finding_prevents_is_a_hang(no_hang):
    """The guard: compiled without VerifyPipes, the Cube kernel deadlocks on A5 (pto-isa)."""
    from ptopipe.passes.manager import CANONICAL_ORDER
    passes = [p for p in CANONICAL_ORDER if p != "verify-pipes"]
    with pytest.raises(DeadlockError):
        _run(cube_holds(2), _cube_args(), "a5", "pto-isa", passes)


@pytest.mark.parametrize("platform,protocol", [("a5", "pto-isa"), ("a5", "spec"), ("a2a3", "spec"),
                                               ("a2a3", "pto-isa")])
@pytest.mark.parametrize("slot_num", [1, 2])
def test_a_vector_tile_held_past_the_limit_is_copied_out(slot_num, platform, protocol, no_hang):
    """InsertTfree keeps within the hold limit: s1, held while s2 is popped, is copied right
    after its TPOP when the ring cannot hold both (slot_num 1; slot_num 2 under pto-isa on
    A5), and the kernel runs and matches numpy."""
    k = hold_while_popping(slot_num)
    text = print_program(compile_program(pl.program(k), platform, protocol=protocol))
    limit = 1 if slot_num == 1 or (platform, protocol) == ("a5", "pto-isa") else 2
    assert ("s1_held = pl.move(s1, pl.Vec)" in text) == (limit < 2)
    args = _args()
    res = _run(k, args, platform, protocol)
    np.testing.assert_array_equal(res.outputs["out"], 2 * (args["x"] @ args["w"]))


def aligned_holds(slot_num):
    """Per iteration the Cube holds a while it pops b, and frees both: at SLOT_NUM 2 under
    pto-isa each pop of b is an odd tile, which the producer pushes without waiting - no
    hang; but both TFREEs test b's index (pto-isa's free index), so each sends a credit where
    the producer counts on one for the two."""
    @pl.incore(slot_num=slot_num)
    def k(x: pl.Tensor[[N * 16, 16], pl.f32], out: pl.Tensor[[N * 16, 16], pl.f32],
          n: pl.Scalar[pl.index]):
        for i in pl.range(n):
            a = pl.move(pl.load(x, [i * 16, 0], [16, 16]), space=pl.Mat)
            b = pl.move(pl.muls(pl.load(x, [i * 16, 0], [16, 16]), 2.0), space=pl.Mat)  # SECOND
            pl.store(pl.matmul(pl.move(a, space=pl.Left), pl.move(b, space=pl.Right)),
                     [i * 16, 0], out)
    return k


def scalar_trip_cube_holds():
    """cube_holds with a scalar trip count: the pops of a later iteration are counted as
    tile base + j * 3 + offset for every j, and the hang of the first is still found."""
    @pl.incore(slot_num=2)
    def k(x: pl.Tensor[[N * 16, 16], pl.f32], out: pl.Tensor[[N * 16, 16], pl.f32],
          n: pl.Scalar[pl.index]):
        for i in pl.range(n):
            c = pl.move(pl.load(x, [i * 16, 0], [16, 16]), space=pl.Mat)
            pl.store(pl.matmul(pl.move(c, space=pl.Left), pl.move(c, space=pl.Right)),
                     [i * 16, 0], out)
            a = pl.move(pl.load(x, [i * 16, 0], [16, 16]), space=pl.Mat)
            b = pl.move(pl.muls(pl.load(x, [i * 16, 0], [16, 16]), 2.0), space=pl.Mat)  # SECOND
            pl.store(pl.matmul(pl.move(a, space=pl.Left), pl.move(b, space=pl.Right)),
                     [i * 16, 0], out)
    return k


@pytest.mark.parametrize("n", [1, 3])
def test_holds_aligned_with_the_sync_period_send_a_credit_too_many(n, no_hang):
    """The hold never waits for a push, but the TFREE of a, after b's TPOP, tests b's index
    (pto-isa's ``shouldNotifyFree(cons.tileIndex - 1)``) and sends a credit as b's does: one
    too many per iteration (this test used to call the kernel clean, counting the free index by
    releases).  Refused at b's TPOP for every trip count; compiled without VerifyPipes the run
    leaves the credit for the next launch (n=1) or overwrites a slot still held (n=3); with
    SLOT_NUM 3 (SyncPeriod 1) every TFREE sends its own credit and the kernel is clean."""
    k = aligned_holds(2)
    with pytest.raises(CompileError) as e:
        compile_program(pl.program(k), "a5", protocol="pto-isa")
    assert e.value.kind == "free_index", e.value
    assert e.value.where.split(":")[-2] == str(line_of(k.pyfunc, "SECOND"))
    from ptopipe.passes.manager import CANONICAL_ORDER
    passes = [p for p in CANONICAL_ORDER if p != "verify-pipes"]
    args = dict(x=_args()["x"], out=np.zeros((N * 16, 16), np.float32), n=n)
    with pytest.raises(LeakError if n == 1 else ProtocolError) as ei:
        _run(k, dict(args), "a5", "pto-isa", passes)
    assert "released tile #0 after the TPOP of tile #1" in str(ei.value), str(ei.value)
    res = _run(aligned_holds(3), args, "a5", "pto-isa")
    want = _cube_want(args)
    np.testing.assert_array_equal(res.outputs["out"][:n * 16], want[:n * 16])


def test_a_hang_in_a_loop_of_unknown_trip_count_is_found():
    k = scalar_trip_cube_holds()
    with pytest.raises(CompileError) as e:
        compile_program(pl.program(k), "a5", protocol="pto-isa")
    assert "pto-isa held-slot limit" in e.value.what
    assert e.value.where.split(":")[-2] == str(line_of(k.pyfunc, "SECOND"))
