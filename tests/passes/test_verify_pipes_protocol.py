"""VerifyPipes judges a kernel pair by the rules of the protocol it is checked under
(``ProtocolModel``): pto-isa's sparse free notifications (SyncPeriod) decide when a producer
may push, and pto-isa on A5 sends a consumer's free from one pipe, so a hand-written TFREE
after a TSTORE of the popped tile needs an event.  Each finding is absent under seed 003's
protocol, where the kernel is right."""
import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.errors import DataRaceError
from ptopipe.passes import verify_pipes
from ptopipe.passes.pipe_deadlock import C2V, stuck_cores
from ptopipe.protocol.model import PTO_ISA, PTO_ISA_A5, SPEC
from ptopipe.runtime import run as dsl_run

from markers import line_of

TM, K = 16, 16
SLOT = TM * K * 4
TILES, DEPTH = 10, 4


def lagging_pair(lag: int):
    """Each AIV pushes ``lag`` tiles V2C ahead of popping the Cube's answers (C2V); the Cube
    pops, frees, answers.  With 4 slots both ways, the Cube frees 5 V2C tiles before its 5th
    answer blocks: seed 003 lets the AIV push 9 tiles, pto-isa (SyncPeriod 2) 8."""
    @pl.aiv
    def vector(a: pl.Tensor[[TILES * TM, K], pl.f32], out: pl.Tensor[[TILES * TM, K], pl.f32],
               fifo: pl.Tensor[[2 * DEPTH * SLOT], pl.u8]):
        c2v = pl.reserve_buffer(name="c2v", size=DEPTH * SLOT, base=pl.AUTO)
        v2c = pl.import_peer_buffer(name="v2c", peer_func=cube)
        pl.aiv_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=c2v.base,
                               v2c_consumer_buf=v2c.base, slot_num=DEPTH)
        sub = pl.get_subblockid()
        for i in pl.range(TILES + lag):
            if i < TILES:
                x = pl.load(a, [i * TM + sub * 8, 0], [8, K])
                pl.TPUSH(x, v2c, split=pl.TILE_UP_DOWN)  # VPUSH
            j = i - lag
            if j >= 0:
                r = pl.TPOP(c2v, pl.Tile[[8, K], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
                o = pl.relu(r)
                pl.TFREE(c2v)
                pl.store(o, [j * TM + sub * 8, 0], out)

    @pl.aic
    def cube(d: pl.Tensor[[K, K], pl.f32], fifo: pl.Tensor[[2 * DEPTH * SLOT], pl.u8]):
        v2c = pl.reserve_buffer(name="v2c", size=DEPTH * SLOT, base=pl.AUTO)
        c2v = pl.import_peer_buffer(name="c2v", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=c2v.base,
                               v2c_consumer_buf=v2c.base, slot_num=DEPTH)
        d0 = pl.move(pl.load(d, [0, 0], [K, K], space=pl.Mat), space=pl.Right)
        for i in pl.range(TILES):
            x = pl.TPOP(v2c, pl.Tile[[TM, K], pl.f32, pl.Mat], split=pl.TILE_UP_DOWN)
            x0 = pl.move(x, space=pl.Left)
            pl.TFREE(v2c)
            pl.TPUSH(pl.matmul(x0, d0), c2v, split=pl.TILE_UP_DOWN)  # CPUSH
    return pl.program(cube, vector, name=f"lag{lag}"), cube, vector


def test_a_push_waiting_for_a_sparse_free_notification_deadlocks_under_pto_isa_only():
    prog, cube, vector = lagging_pair(8)
    assert verify_pipes.verify(prog.clone(), "a5", protocol="spec") == []
    found = verify_pipes.verify(prog.clone(), "a5", protocol="pto-isa")
    (e,) = found                                  # one cycle, one finding
    assert e.kind == "deadlock" and int(e.where.split(":")[-2]) == line_of(cube.pyfunc, "CPUSH")
    assert f"waits in the TPUSH of the V2C ring at line {line_of(vector.pyfunc, 'VPUSH')}" in e.what
    assert "SyncPeriod = 2" in e.what and "slot_num= of both *_initialize_pipe calls" in e.fix
    prog9, _c, _v = lagging_pair(9)               # beyond both rings: a deadlock under either
    assert verify_pipes.verify(prog9.clone(), "a5", protocol="spec")


def test_the_deadlock_rule_is_the_models():
    """Four pushes into 4 slots, then a fifth after one TFREE: seed 003 lets it go, pto-isa
    (SyncPeriod 2) holds it until the second TFREE announces both."""
    push, pop, free = "push", "pop", "free"
    prod = [(push, C2V, k) for k in range(5)]
    cons = [(pop, C2V, "a"), (free, C2V, "f")]
    rules = lambda m: {C2V: m.static_ring(4, False)}          # noqa: E731
    assert stuck_cores({None: prod, 0: cons}, (0,), {C2V: 4}, rules(SPEC)) == {}
    assert stuck_cores({None: prod, 0: cons}, (0,), {C2V: 4}) == {}
    assert stuck_cores({None: prod, 0: cons}, (0,), {C2V: 4}, rules(PTO_ISA_A5)) == {None: (push, C2V, 4)}
    assert stuck_cores({None: prod, 0: cons * 2}, (0,), {C2V: 4}, rules(PTO_ISA_A5)) == {}


def test_the_deadlock_rule_counts_the_credits_the_tfrees_send():
    """Three pops, three frees, then more pops (4 slots, SyncPeriod 2): counted by releases the
    second TFREE announces two slots and push #4 goes on; pto-isa's three TFREEs all test the
    latest TPOP's index, #2, and send no credit, so push #4 waits forever (the run's deadlock,
    tests/protocol/test_free_index.py) - the ring model asks the protocol what a TFREE sends
    (``StaticRing.sends``)."""
    push, pop, free = "push", "pop", "free"
    prod = [(push, C2V, k) for k in range(6)]
    cons = [(pop, C2V, "p")] * 3 + [(free, C2V, "f")] * 3 + [(pop, C2V, "q")] * 3 + [(free, C2V, "g")] * 3
    rules = lambda m: {C2V: m.static_ring(4, False)}          # noqa: E731
    assert stuck_cores({None: prod, 0: cons}, (0,), {C2V: 4}, rules(SPEC)) == {}
    assert stuck_cores({None: prod, 0: cons}, (0,), {C2V: 4}, rules(PTO_ISA_A5)) == {
        None: (push, C2V, 4), 0: (pop, C2V, "q")}
    assert stuck_cores({None: prod, 0: cons}, (0,), {C2V: 4}, {C2V: PTO_ISA.static_ring(4, True)}) == {}  # TPOP frees
    assert stuck_cores({None: prod, 0: cons}, (0,), {C2V: 3}, {C2V: PTO_ISA_A5.static_ring(3, False)}) == {}


def store_popped(ordered: bool, trips: int = 4):
    """Each AIV pops its half of the Cube's tile, stores it (MTE3) and frees the slot; with
    ``ordered`` an MTE3 -> V event orders the store before the free.  ``trips`` tiles through
    2 slots: 4 reuse every slot, 2 reuse none."""
    @pl.aiv
    def vector(out: pl.Tensor[[4 * TM, K], pl.f32], fifo: pl.Tensor[[2 * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="c2v", size=2 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=2)
        sub = pl.get_subblockid()
        for i in pl.range(trips):
            t = pl.TPOP(buf, pl.Tile[[8, K], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
            pl.store(t, [i * TM + sub * 8, 0], out)  # STORE
            if ordered:
                pl.record_event(pl.PIPE_MTE3, pl.PIPE_V, 0)
                pl.wait_event(pl.PIPE_MTE3, pl.PIPE_V, 0)
            pl.TFREE(buf)  # FREE

    @pl.aic
    def cube(q: pl.Tensor[[4 * TM, K], pl.f32], fifo: pl.Tensor[[2 * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="c2v", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                               slot_num=2)
        k0 = pl.move(pl.load(q, [0, 0], [K, K], space=pl.Mat), space=pl.Right)
        for i in pl.range(trips):
            q0 = pl.move(pl.load(q, [i * TM, 0], [TM, K], space=pl.Mat), space=pl.Left)
            pl.TPUSH(pl.matmul(q0, k0), peer, split=pl.TILE_UP_DOWN)
    return pl.program(cube, vector, name="store_popped"), vector


def test_a_hand_written_free_after_a_store_of_the_popped_tile_needs_an_event_on_a5_pto_isa():
    prog, vector = store_popped(False)
    (e,) = verify_pipes.verify(prog.clone(), "a5", protocol="pto-isa")
    assert e.kind == "free_order" and e.where.endswith(f":{line_of(vector.pyfunc, 'FREE')}:13")
    assert f"pl.store at line {line_of(vector.pyfunc, 'STORE')}" in e.what and "PIPE_MTE3" in e.what
    assert "pl.record_event(pl.PIPE_MTE3, pl.PIPE_V, 0)" in e.fix and "set_flag(" not in e.fix
    for platform, protocol in (("a5", "spec"), ("a2a3", "pto-isa"), ("a5", "pto-isa-cpusim")):
        assert verify_pipes.verify(prog.clone(), platform, protocol=protocol) == [], (platform, protocol)
    assert verify_pipes.verify(store_popped(True)[0].clone(), "a5", protocol="pto-isa") == []
    # no slot is reused: the early free overwrites nothing (the run agrees)
    assert verify_pipes.verify(store_popped(False, trips=2)[0].clone(), "a5", protocol="pto-isa") == []


def test_the_run_reports_the_same_race_in_the_dsls_words(no_hang):
    prog, vector = store_popped(False)
    q = np.random.default_rng(0).integers(-2, 3, (4 * TM, K)).astype(np.float32)
    with pytest.raises(DataRaceError) as ei:
        dsl_run(prog, dict(q=q, out=np.zeros((4 * TM, K), np.float32), fifo=ptopipe.gm_buffer(2 * SLOT)),
                platform="a5", protocol="pto-isa", causal=True)
    e = ei.value
    assert e.where.endswith(f":{line_of(vector.pyfunc, 'FREE')}:13")
    assert "pl.record_event(pl.PIPE_MTE3, pl.PIPE_V, 0) and pl.wait_event(pl.PIPE_MTE3, pl.PIPE_V, 0)" in e.fix
    assert "(or pl.barrier())" in e.fix and "set_flag" not in e.fix


def padded_acc_pair(N: int):
    """The Cube pushes a 16xN f32 accumulator TILE_UP_DOWN; each Vector core pops its 8xN part
    as the DSL declares it (its own static shape) and stores it.  pto-isa declares the Acc in
    whole 16x16 fractals: for N = 24, 16x32 (each slot holds a core's 8x32 part)."""
    slot = 8 * 32 * 4

    @pl.aiv
    def vector(out: pl.Tensor[[16, N], pl.f32], fifo: pl.Tensor[[2 * slot], pl.u8]):
        buf = pl.reserve_buffer(name="c2v", size=2 * slot, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, slot, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=2)
        sub = pl.get_subblockid()
        part = pl.TPOP(buf, pl.Tile[[8, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)     # PADDED POP
        pl.store(part, [sub * 8, 0], out)
        pl.TFREE(buf)

    @pl.aic
    def cube(a: pl.Tensor[[16, 16], pl.f32], b: pl.Tensor[[16, N], pl.f32], fifo: pl.Tensor[[2 * slot], pl.u8]):
        buf = pl.import_peer_buffer(name="c2v", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, slot, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=2)
        al = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
        br = pl.move(pl.load(b, [0, 0], [16, N], space=pl.Mat), space=pl.Right)
        pl.TPUSH(pl.matmul(al, br), buf, split=pl.TILE_UP_DOWN)
    return pl.program(cube, vector, name=f"padded_{N}"), vector


@pytest.mark.parametrize("protocol", ["spec", "pto-isa", "pto-isa-cpusim"])
def test_a_part_popped_in_its_own_static_shape_from_a_padded_acc_is_found_statically(protocol, no_hang):
    """A5: each Vector core's slot holds its 8 rows of the 16x32 Acc 32 elements apart (device and
    CPU simulator alike), and the TPOP binds / copies at the popped tile's own 24 columns: every row
    after the first misread.  VerifyPipes finds it at the TPOP from the tiles' static shapes, the
    run at the same line; with 32 columns both are clean."""
    prog, vector = padded_acc_pair(24)
    found = verify_pipes.verify(prog.clone(), "a5", protocol=protocol)
    assert [e.kind for e in found] == ["slot_layout"], [str(e) for e in found]
    e = found[0]
    assert e.where.endswith(f":{line_of(vector.pyfunc, 'PADDED POP')}:9"), e.where
    assert "declared 8x24" in e.what and "declared 16x32" in e.what and "32 elements apart" in e.details, e.render()
    rng = np.random.default_rng(0)
    args = dict(a=rng.integers(-3, 4, (16, 16)).astype(np.float32), b=rng.integers(-3, 4, (16, 24)).astype(np.float32),
                out=np.zeros((16, 24), np.float32), fifo=ptopipe.gm_buffer(2 * 8 * 32 * 4))
    with pytest.raises(ptopipe.ProtocolError) as ei:
        dsl_run(prog, args, platform="a5", protocol=protocol)
    assert e.where.endswith(ei.value.where), (ei.value.where, e.where)
    assert "the row pitch differs: the slot's rows are 32 elements apart, the pop reads them 24 apart" in \
        ei.value.what, ei.value.what
    ok, _ = padded_acc_pair(32)
    assert verify_pipes.verify(ok.clone(), "a5", protocol=protocol) == []
