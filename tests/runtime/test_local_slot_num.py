"""LocalSlotNum of a DSL pipe: on A2A3 the ring is in GM and a consumer stages
each popped tile in one of LocalSlotNum slots of its reserve_buffer, so it can hold at most
that many popped tiles.  ``local_slot_num=`` on ``pl.*_initialize_pipe`` (default pto-isa's
2, at most SLOT_NUM; ExpandMixedKernel gives SLOT_NUM, what its reserve holds) is what the simulator stages,
what VerifyPipes bounds the held pops by and what the C++ writer prints."""
import os
import re

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.codegen.cpp_writer import write_cpp
from ptopipe.errors import CompileError, ConfigError, DeadlockError, ProtocolError
from ptopipe.passes import verify_pipes
from ptopipe.passes.manager import compile_program
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import run as dsl_run

from markers import line_of

TM, K, N, T = 16, 32, 32, 2
SLOT = TM * N * 4
SN = 4
HR = TM // 2
HERE = os.path.abspath(__file__)
PAIRS = [(p, q) for p in ("a2a3", "a5") for q in ("spec", "pto-isa")]


def hand_written(local=None, reserved=SN):
    """Three tiles popped and held at once per iteration; ``local`` the AIV's local_slot_num,
    ``reserved`` the slots its reserve_buffer holds."""
    @pl.aiv
    def vector(out: pl.Tensor[[T * TM, N], pl.f32], fifo: pl.Tensor[[SN * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="c2v", size=reserved * SLOT, base=pl.AUTO)  # RESERVE
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=SN, local_slot_num=local)
        sub = pl.get_subblockid()
        for i in pl.range(T):
            x = pl.TPOP(buf, pl.Tile[[HR, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
            y = pl.TPOP(buf, pl.Tile[[HR, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
            z = pl.TPOP(buf, pl.Tile[[HR, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)  # THIRD-POP
            o = pl.add(pl.add(x, pl.muls(y, 2.0)), pl.muls(z, 3.0))                   # USE
            pl.TFREE(buf)
            pl.TFREE(buf)                                                             # FREE-2
            pl.TFREE(buf)
            pl.store(o, [i * TM + sub * HR, 0], out)

    @pl.aic
    def cube(a: pl.Tensor[[T * TM, K], pl.f32], b: pl.Tensor[[K, 3 * N], pl.f32],
             fifo: pl.Tensor[[SN * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="c2v", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                               slot_num=SN)
        for i in pl.range(T):
            al = pl.move(pl.load(a, [i * TM, 0], [TM, K], space=pl.Mat), space=pl.Left)
            for j in pl.range(3):
                bj = pl.move(pl.load(b, [0, j * N], [K, N], space=pl.Mat), space=pl.Right)
                pl.TPUSH(pl.matmul(al, bj), peer, split=pl.TILE_UP_DOWN)

    return pl.program(cube, vector, name="hold3"), vector


def _args():
    rng = np.random.default_rng(2)
    return dict(a=rng.integers(-3, 4, (T * TM, K)).astype(np.float32),
                b=rng.integers(-3, 4, (K, 3 * N)).astype(np.float32),
                out=np.zeros((T * TM, N), np.float32), fifo=ptopipe.gm_buffer(SN * SLOT))


def _golden(args):
    c = args["a"] @ args["b"]
    return c[:, :N] + 2 * c[:, N:2 * N] + 3 * c[:, 2 * N:]


def test_hand_written_three_held_is_a_static_error_on_a2a3_at_the_third_pop():
    prog, vector = hand_written()
    found = verify_pipes.verify(prog.clone(), "a2a3")
    assert len(found) == 1, [str(e) for e in found]
    err = found[0]
    assert isinstance(err, CompileError)
    assert err.where.startswith(f"{HERE}:{line_of(vector.pyfunc, 'THIRD-POP')}:"), err.where
    assert "holds 3 slots of the C2V ring at once, more than its LocalSlotNum 2" in err.what
    assert "local_slot_num=" in err.fix and "pl.aiv_initialize_pipe" in err.fix
    assert verify_pipes.verify(prog.clone(), "a5") == []       # A5: a zero-copy ring, no staging


def test_hand_written_three_held_run_on_a2a3_names_the_limit_at_the_third_pop():
    """spec: the held tiles keep their staging slots until TFREE: the third TPOP is the error."""
    prog, vector = hand_written()
    with pytest.raises(ProtocolError) as ei:
        dsl_run(prog, _args(), platform="a2a3", protocol="spec")
    e = ei.value
    assert "holds more popped tiles of C2V pipe" in e.what and "than its LocalSlotNum 2" in e.what, str(e)
    assert e.where.endswith(f"{os.path.basename(HERE)}:{line_of(vector.pyfunc, 'THIRD-POP')}:13"), e.where
    assert "local_slot_num=" in e.fix
    assert f"at most SlotNum {SN}, the most a consumer holds" in e.fix, e.fix


def test_hand_written_three_held_run_on_a2a3_pto_isa_reports_the_read_of_the_overwritten_tile():
    """pto-isa: the GM-ring TPOP frees its slot itself (TFREE is a no-op), so the third TPOP
    may reuse a staging slot; reading the first tile afterwards is the error."""
    prog, vector = hand_written()
    with pytest.raises(ProtocolError) as ei:
        dsl_run(prog, _args(), platform="a2a3", protocol="pto-isa")
    e = ei.value
    assert "use after free" in e.what, str(e)
    # the staging slot's latest TPOP is the third one: named as the reuse, not as this tile's pop
    third = f"{os.path.basename(HERE)}:{line_of(vector.pyfunc, 'THIRD-POP')}:13"
    assert re.search(rf"reused by the later TPOP at \S*{re.escape(third)} ", e.what), e.what
    assert f":{line_of(vector.pyfunc, 'THIRD-POP')}" not in (e.details or ""), e.details
    assert e.where.endswith(f"{os.path.basename(HERE)}:{line_of(vector.pyfunc, 'USE')}:13"), e.where
    assert "LocalSlotNum" in e.fix and "local_slot_num=" in e.fix


def test_hand_written_three_held_is_clean_on_a5_under_spec():
    prog, _ = hand_written()
    args = _args()
    res = dsl_run(prog, args, platform="a5", protocol="spec")
    np.testing.assert_array_equal(res.outputs["out"], _golden(args))


@pytest.mark.parametrize("local", [None, 3])
def test_hand_written_three_held_hangs_on_a5_under_pto_isa(local):
    """A5 under pto-isa (a ring in UB, SLOT_NUM 4: SyncPeriod 2): the three TFREEs after the
    third TPOP all test that TPOP's index (pto-isa's ``shouldNotifyFree(cons.tileIndex - 1)``),
    which sends no free credit, so the second TFREE sends none where the producer counts on one
    and push #4 waits forever - the run's deadlock names that TFREE, the static proof the third
    TPOP (LocalSlotNum does not matter: the ring is the consumer's own)."""
    prog, vector = hand_written(local=local)
    found = verify_pipes.verify(prog.clone(), "a5", protocol="pto-isa")
    assert found and found[0].kind == "free_index", [str(e) for e in found]
    assert found[0].where.startswith(f"{HERE}:{line_of(vector.pyfunc, 'THIRD-POP')}:"), found[0].where
    with pytest.raises(DeadlockError) as ei:
        dsl_run(prog, _args(), platform="a5", protocol="pto-isa")
    e = ei.value
    assert e.where.endswith(f"{os.path.basename(HERE)}:{line_of(vector.pyfunc, 'FREE-2')}:13"), e.where
    assert "withheld by pto-isa's free index" in e.what and "latest TPOP" in e.fix, str(e)


@pytest.mark.parametrize("platform,protocol", [p for p in PAIRS if p != ("a5", "pto-isa")])
def test_local_slot_num_three_is_clean_and_exact(platform, protocol):
    """(Not A5 under pto-isa: test_hand_written_three_held_hangs_on_a5_under_pto_isa.)"""
    prog, _ = hand_written(local=3)
    assert verify_pipes.verify(prog.clone(), platform) == []
    args = _args()
    res = dsl_run(prog, args, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], _golden(args))


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a_gm_ring_reserve_may_hold_only_the_staging_slots(protocol):
    """A2A3: the ring is in GM and the consumer's reserve holds its LocalSlotNum staging
    slots only (pto-isa's TPipe<..., 8, 2> of the manual FA; the .pto PTOAS writes, PTOAS
    #629): LOCAL_SLOT_NUM * SLOT_SIZE bytes are enough there.  On A5 the ring
    itself is in that buffer: SLOT_NUM * SLOT_SIZE, reported at the reserve."""
    prog, vector = hand_written(local=3, reserved=3)
    assert verify_pipes.verify(prog.clone(), "a2a3") == []
    compile_program(prog, "a2a3", protocol=protocol)
    args = _args()
    res = dsl_run(prog, args, platform="a2a3", protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], _golden(args))
    for prog, _ in (hand_written(local=3, reserved=3), hand_written(local=3, reserved=2)):
        with pytest.raises(ConfigError) as ei:
            dsl_run(prog, _args(), platform="a5", protocol=protocol)
        assert "needs SLOT_NUM * SLOT_SIZE = 4 * 2048 = 8192" in ei.value.what
        assert f"{os.path.basename(HERE)}:{line_of(vector.pyfunc, 'RESERVE')}:" in ei.value.where
    with pytest.raises(ConfigError) as ei:           # two staging slots for LocalSlotNum 3: too few
        dsl_run(hand_written(local=3, reserved=2)[0], _args(), platform="a2a3", protocol=protocol)
    assert "(its ring being in GM, at least LOCAL_SLOT_NUM * SLOT_SIZE = 3 * 2048 = 6144 staging bytes, " \
           "at most 8192)" in ei.value.what
    assert "or give the init local_slot_num=2" in ei.value.fix
    # no local_slot_num given: seed 003's rule, the reserve holds SLOT_NUM slots
    with pytest.raises(ConfigError) as ei:
        dsl_run(hand_written(local=None, reserved=2)[0], _args(), platform="a2a3", protocol="spec")
    assert ei.value.what.endswith("needs SLOT_NUM * SLOT_SIZE = 4 * 2048 = 8192")
    with pytest.raises(CompileError, match="LOCAL_SLOT_NUM"):
        compile_program(hand_written(local=3, reserved=2)[0], "a2a3", protocol=protocol)


def test_local_slot_num_above_slot_num_is_rejected_at_the_init():
    with pytest.raises(CompileError, match="local_slot_num 5 must be >= 1 and at most slot_num 4") as ei:
        hand_written(local=5)
    assert f"{os.path.basename(HERE)}:" in ei.value.where


# -- compiled mixed kernels: the reserve holds SLOT_NUM slots, all of them staging ---------
def mixed(split=pl.TILE_UP_DOWN, sn=4):
    @pl.incore(split=split, slot_num=sn)
    def hold3(a: pl.Tensor[[T * TM, K], pl.f32], b: pl.Tensor[[K, 3 * N], pl.f32],
              out: pl.Tensor[[T * TM, N], pl.f32]):
        b1 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        b2 = pl.move(pl.load(b, [0, N], [K, N], space=pl.Mat), space=pl.Right)
        b3 = pl.move(pl.load(b, [0, 2 * N], [K, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(T):
            x = pl.move(pl.load(a, [i * TM, 0], [TM, K], space=pl.Mat), space=pl.Left)
            r1 = pl.move(pl.matmul(x, b1), space=pl.Vec)
            r2 = pl.move(pl.matmul(x, b2), space=pl.Vec)
            r3 = pl.move(pl.matmul(x, b3), space=pl.Vec)
            o = pl.add(pl.add(r1, pl.muls(r2, 2.0)), pl.muls(r3, 3.0))
            pl.store(o, [i * TM, 0], out)
    return pl.program(hold3, name="hold3m")


@pytest.mark.parametrize("platform,protocol", PAIRS)
@pytest.mark.parametrize("split,sn", [(pl.TILE_UP_DOWN, 4), (pl.TILE_NO_SPLIT, 3)])
def test_compiled_three_held_is_clean_and_exact(platform, protocol, split, sn):
    prog = mixed(split, sn)
    rng = np.random.default_rng(4)
    args = with_slot_buffer(prog, dict(a=rng.integers(-3, 4, (T * TM, K)).astype(np.float32),
                                       b=rng.integers(-3, 4, (K, 3 * N)).astype(np.float32),
                                       out=np.zeros((T * TM, N), np.float32)))
    res = dsl_run(prog, args, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], _golden(args))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_compiled_inits_give_the_held_tiles_staging_slots_and_the_cpp_prints_them(platform):
    # A2A3 (ring in GM): LocalSlotNum is the three tiles the kernel holds at once (VerifyPipes'
    # hold bound); A5 (ring in UB): SLOT_NUM, which it does not read
    local = 3 if platform == "a2a3" else 4
    op = compile_program(mixed(), platform)
    inits = [o for o in op.walk() if o.name in ("pl.aic_initialize_pipe", "pl.aiv_initialize_pipe")]
    assert len(inits) == 2 and all(o.attributes["slot_num"] == 4 and o.attributes["local_slot_num"] == local
                                   for o in inits)
    assert verify_pipes.verify(op, platform) == []
    cpp = write_cpp(op, platform)
    got = re.findall(r"TPipe<\d+, Direction::\w+, \d+, (\d+), (\d+), (?:true|false)>", cpp)
    assert got == [("4", str(local)), ("4", str(local))], got


def _two_one_slot_rings():
    """Two C2V rings of one slot each, their reserves side by side (base=pl.AUTO)."""
    @pl.aiv
    def vector(out: pl.Tensor[[TM, N], pl.f32], f0: pl.Tensor[[SLOT], pl.u8], f1: pl.Tensor[[SLOT], pl.u8]):
        r0 = pl.reserve_buffer(name="ring0", size=SLOT, base=pl.AUTO)
        r1 = pl.reserve_buffer(name="ring1", size=SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, f0, c2v_consumer_buf=r0.base, v2c_consumer_buf=0, slot_num=1)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, f1, c2v_consumer_buf=r1.base, v2c_consumer_buf=0, slot_num=1,
                               id=1)
        x = pl.TPOP(r0, pl.Tile[[HR, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
        y = pl.TPOP(r1, pl.Tile[[HR, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
        o = pl.sub(x, y)
        pl.TFREE(r0)
        pl.TFREE(r1)
        pl.store(o, [pl.get_subblockid() * HR, 0], out)

    @pl.aic
    def cube(a: pl.Tensor[[TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
             f0: pl.Tensor[[SLOT], pl.u8], f1: pl.Tensor[[SLOT], pl.u8]):
        p0 = pl.import_peer_buffer(name="ring0", peer_func=vector)
        p1 = pl.import_peer_buffer(name="ring1", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, f0, c2v_consumer_buf=p0.base, v2c_consumer_buf=0, slot_num=1)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, f1, c2v_consumer_buf=p1.base, v2c_consumer_buf=0, slot_num=1,
                               id=1)
        right = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        acc = pl.matmul(pl.move(pl.load(a, [0, 0], [TM, K], space=pl.Mat), space=pl.Left), right)
        pl.TPUSH(acc, p0, split=pl.TILE_UP_DOWN)
        twice = pl.matmul(pl.move(pl.load(a, [0, 0], [TM, K], space=pl.Mat), space=pl.Left), right)
        pl.TPUSH(twice, p1, split=pl.TILE_UP_DOWN)
    return pl.program(cube, vector, name="two_one_slot_rings")


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a_one_slot_gm_ring_stages_in_its_one_slot_by_default(protocol):
    """The default LocalSlotNum is pto-isa's 2, but at most the ring's SlotNum: the staging
    slots are in the consumer's reserve of SLOT_NUM * SLOT_SIZE, so a one-slot ring must not
    stage past it into the next ring's reserve (the run agrees with the static checks)."""
    prog = _two_one_slot_rings()
    rng = np.random.default_rng(3)
    args = dict(a=rng.integers(-3, 4, (TM, K)).astype(np.float32), b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                out=np.zeros((TM, N), np.float32), f0=ptopipe.gm_buffer(SLOT), f1=ptopipe.gm_buffer(SLOT))
    res = dsl_run(prog, args, platform="a2a3", protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], np.zeros((TM, N), np.float32))
    cpp = write_cpp(compile_program(_two_one_slot_rings(), "a2a3", protocol=protocol), "a2a3")
    pipes = re.findall(r"TPipe<\d+, Direction::DIR_C2V, \d+, (\d+), (\d+), ", cpp)
    assert pipes == [("1", "1")] * 4, pipes                  # SlotNum 1, LocalSlotNum 1: both rings, both ends
