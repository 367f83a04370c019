"""pto-isa's free index: a consumer's TFREE decides whether to send its free credit by
``shouldNotifyFree(cons.tileIndex - 1)`` - the index of its latest TPOP of the pipe, not of the
tile it releases (a5 / a2a3 ``TFree.hpp``; a TPOP that frees tests the tile it pops).  With
SyncPeriod > 1 a consumer holding several popped tiles then sends more or fewer credits than
the producer counts on (docs/protocols.md, *The free index*):

* ``pop, pop, free, free`` (A5, C2V ring in UB, SlotNum 4: SyncPeriod 2): both TFREEs of a pair
  test the second tile's index and send a credit each - the producer overwrites a slot the
  Vector core still holds: a ProtocolError at the TPUSH, the fix naming the TFREE;
* a sliding hold (pop ``i + 1`` before freeing ``i``): each credit one release early, the same;
* three held, then freed: the TFREEs test index 2, which sends none - the hang names the TFREE
  that sent no credit;
* the same on both engines (exact and periodic), a pair held only at the end of a long
  steady run too;
* the static proof finds it at the later TPOP; the compiler copies a Vector tile held across a
  later TPOP of its ring out, so a compiled kernel with holds stays clean and right."""
import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.errors import CompileError, DeadlockError, LeakError, ProtocolError
from ptopipe.ir import print_program
from ptopipe.isa import *  # noqa: F403
from ptopipe.passes import compile_program, verify_pipes
from ptopipe.runtime import run as dsl_run
from ptopipe.sim import periodic

from markers import line_of

TM, K, N = 16, 32, 32
SLOT = TM * N * 4
UB = 0x20000


def cube(a, b, fifo, n, depth):
    pipe = TPipe(0, DIR_C2V, SLOT, depth, depth)(fifo, UB)
    am = Tile(TileType.Mat, float32, TM, K, addr=0)
    bm = Tile(TileType.Mat, float32, K, N, addr=0x8000)
    l0, r0 = Tile(TileType.Left, float32, TM, K, addr=0), Tile(TileType.Right, float32, K, N, addr=0)
    acc = Tile(TileType.Acc, float32, TM, N, addr=0)
    TLOAD(bm, b)
    TMOV(r0, bm)
    for i in range(n):
        TLOAD(am, GlobalTensor(a.data() + i * TM * K, (TM, K)))
        TMOV(l0, am)
        TMATMUL(acc, l0, r0)
        TPUSH(pipe, acc, TILE_UP_DOWN)                                  # PUSH


def _store(out, o, j):
    TSTORE(GlobalTensor(out.data() + (j * TM + get_subblockid() * TM // 2) * N, (TM // 2, N)), o)
    set_flag(PIPE_MTE3, PIPE_V, EVENT_ID0)
    wait_flag(PIPE_MTE3, PIPE_V, EVENT_ID0)


def pairs(out, fifo, n, depth):
    """k10: each Vector lane pops two tiles, adds them, frees both."""
    pipe = TPipe(0, DIR_C2V, SLOT, depth, depth)(fifo, UB)
    p0, p1 = Tile(TileType.Vec, float32, TM // 2, N), Tile(TileType.Vec, float32, TM // 2, N)
    o = Tile(TileType.Vec, float32, TM // 2, N, addr=0)
    for j in range(n // 2):
        TPOP(pipe, p0, TILE_UP_DOWN)
        TPOP(pipe, p1, TILE_UP_DOWN)
        TADD(o, p0, p1)
        TFREE(pipe, TILE_UP_DOWN)                                       # PAIR-FREE
        TFREE(pipe, TILE_UP_DOWN)
        _store(out, o, j)


def sliding(out, fifo, n, depth):
    """Pops tile i + 1 before freeing tile i; out row block j = tile 2j + tile 2j + 1."""
    pipe = TPipe(0, DIR_C2V, SLOT, depth, depth)(fifo, UB)
    p0, p1 = Tile(TileType.Vec, float32, TM // 2, N), Tile(TileType.Vec, float32, TM // 2, N)
    o = Tile(TileType.Vec, float32, TM // 2, N, addr=0)
    TPOP(pipe, p0, TILE_UP_DOWN)
    for j in range(n // 2):
        TPOP(pipe, p1, TILE_UP_DOWN)
        TADD(o, p0, p1)
        TFREE(pipe, TILE_UP_DOWN)                                       # SLIDE-FREE
        _store(out, o, j)
        if 2 * j + 2 < n:
            TPOP(pipe, p0, TILE_UP_DOWN)
        TFREE(pipe, TILE_UP_DOWN)


def triples(out, fifo, n, depth):
    """Pops three tiles, frees all three."""
    pipe = TPipe(0, DIR_C2V, SLOT, depth, depth)(fifo, UB)
    ts = [Tile(TileType.Vec, float32, TM // 2, N) for _ in range(3)]
    o = Tile(TileType.Vec, float32, TM // 2, N, addr=0)
    for j in range(n // 3):
        for t in ts:
            TPOP(pipe, t, TILE_UP_DOWN)
        TADD(o, ts[0], ts[1])
        TFREE(pipe, TILE_UP_DOWN)
        TFREE(pipe, TILE_UP_DOWN)                                       # TRIPLE-FREE
        TFREE(pipe, TILE_UP_DOWN)


def late_pair(out, fifo, n, depth):
    """One tile at a time, then the last two held together."""
    pipe = TPipe(0, DIR_C2V, SLOT, depth, depth)(fifo, UB)
    p0, p1 = Tile(TileType.Vec, float32, TM // 2, N), Tile(TileType.Vec, float32, TM // 2, N)
    o = Tile(TileType.Vec, float32, TM // 2, N, addr=0)
    for j in range(n - 2):
        TPOP(pipe, p0, TILE_UP_DOWN)
        TADDS(o, p0, 1.0)
        TFREE(pipe, TILE_UP_DOWN)
    TPOP(pipe, p0, TILE_UP_DOWN)
    TPOP(pipe, p1, TILE_UP_DOWN)
    TADD(o, p0, p1)
    TFREE(pipe, TILE_UP_DOWN)                                           # LATE-FREE
    TFREE(pipe, TILE_UP_DOWN)
    _store(out, o, 0)


def _args(n, depth):
    rng = np.random.default_rng(7)
    return dict(a=rng.integers(-3, 4, (n * TM, K)).astype(np.float32),
                b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                out=np.zeros((min(n // 2, 8) * TM, N), np.float32), fifo=ptopipe.gm_buffer(depth * SLOT),
                n=n, depth=depth)


def _pair_sums(args):
    p = args["a"] @ args["b"]
    return p.reshape(-1, 2, TM, N).sum(1).reshape(-1, N)


def _at(fn, marker) -> str:
    return f"tests/protocol/test_free_index.py:{line_of(fn, marker)}"


@pytest.mark.parametrize("engine", ["exact", "periodic"])
@pytest.mark.parametrize("vec,marker", [(pairs, "PAIR-FREE"), (sliding, "SLIDE-FREE")])
def test_held_tiles_send_a_credit_early_and_a_push_overwrites_a_held_slot(vec, marker, engine, no_hang):
    """A5 under pto-isa, SlotNum 4 (SyncPeriod 2): the TFREE of tile 0, made after the TPOP of
    tile 1, tests tile 1's index, which ends a period, and sends the credit the producer counts
    on for tile 1's release: push #5 overwrites slot 1 while tile 1 is still held (wrong numbers
    on the device).  A ProtocolError at the TPUSH, the fix naming that TFREE and the rule."""
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run(cube, vec, _args(8, 4), platform="a5", protocol="pto-isa", engine=engine)
    e = ei.value
    assert e.where.endswith(_at(cube, "PUSH")), e.where
    assert "slot 1 of C2V pipe FlagID 0" in e.what and "reused before freed" in e.what, e.what
    assert f"the TFREE at {_at(vec, marker)} released tile #0 after the TPOP of tile #1" in e.fix, e.fix
    assert "latest TPOP of the pipe (shouldNotifyFree(cons.tileIndex - 1))" in e.fix, e.fix
    assert "free each popped tile before the next TPOP of its pipe" in e.fix and "SlotNum 1 or 3" in e.fix


@pytest.mark.parametrize("vec", [pairs, sliding])
@pytest.mark.parametrize("platform,protocol,depth", [("a5", "spec", 4), ("a2a3", "pto-isa", 4),
                                                     ("a5", "pto-isa", 3)])
def test_held_tiles_are_clean_where_every_release_sends_its_own_credit(vec, platform, protocol, depth, no_hang):
    """Spec frees every release; A2A3's tile TPOP from its GM ring frees inside the TPOP with
    the popped tile's own index; SlotNum 3 has SyncPeriod 1: every TFREE sends a credit."""
    args = _args(8, depth)
    res = ptopipe.run(cube, vec, dict(args), platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], _pair_sums(args))


@pytest.mark.parametrize("engine", ["exact", "periodic"])
def test_three_held_then_freed_send_no_credit_and_the_hang_names_the_tfree(engine, no_hang):
    """The three TFREEs after the third TPOP test index 2, which does not end a period: the
    second sends no credit where the producer counts on one, and push #4 waits forever - the
    deadlock is headed by that TFREE, with pto-isa's rule in the fix."""
    with pytest.raises(DeadlockError) as ei:
        ptopipe.run(cube, triples, _args(9, 4), platform="a5", protocol="pto-isa", engine=engine)
    e = ei.value
    assert e.where.endswith(_at(triples, "TRIPLE-FREE")), e.where
    assert e.what.startswith("deadlock: the free credit is withheld by pto-isa's free index: AIV0 has made 3 "
                             "TFREE(s), the 2 push #4 needs by the producer's count"), e.what
    assert f"{_at(triples, 'TRIPLE-FREE')} (tile #1, after the TPOP of #2)" in e.what, e.what
    assert e.fix.startswith(f"the TFREE at {_at(triples, 'TRIPLE-FREE')} released tile #1 after the TPOP of "
                            "tile #2"), e.fix
    assert "sent no credit where the producer counts on one" in e.fix, e.fix


def test_a_pair_held_after_a_long_steady_run_is_found_by_both_engines(monkeypatch, no_hang):
    """One tile at a time for 198 tiles (the periodic engine records that steady state), then the
    last two held together: the TFREE of tile 198 tests tile 199's index and sends a credit too
    many - left on the flag at exit, a LeakError naming the TFREE, alike on both engines."""
    made = []
    init = periodic.FastForward.__init__

    def spy(self, *a, **k):
        init(self, *a, **k)
        made.append(self)
    monkeypatch.setattr(periodic.FastForward, "__init__", spy)
    errs = []
    for engine in ("exact", "periodic"):
        with pytest.raises(LeakError) as ei:
            ptopipe.run(cube, late_pair, _args(200, 4), platform="a5", protocol="pto-isa", engine=engine,
                        checks=False)
        errs.append(ei.value)
    assert any(ff.blocks_skipped > 0 for ff in made), [(ff.mode, ff.reason) for ff in made]
    assert errs[0].to_dict() == errs[1].to_dict()
    e = errs[0]
    assert "the consumer sent 101 frees where 100 are due for 200 pushes" in e.what, e.what
    assert f"the TFREE at {_at(late_pair, 'LATE-FREE')} released tile #198 after the TPOP of tile #199" in e.what


# -- the DSL: the static proof, and the compiler's holds ------------------------------------------------
def dsl_pairs(slot_num):
    """The k10 pattern, hand-written: each lane pops two tiles, adds them, frees both."""
    @pl.aiv
    def vec(y: pl.Tensor[[4 * 16, 32], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=slot_num * 2048, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=buf.base, slot_num=slot_num)
        sub = pl.get_subblockid()
        for i in pl.range(4):
            a = pl.TPOP(buf, pl.Tile[[8, 32], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
            b = pl.TPOP(buf, pl.Tile[[8, 32], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)     # SECOND
            s = pl.add(a, b)
            pl.TFREE(buf)
            pl.TFREE(buf)
            pl.store(s, [i * 16 + sub * 8, 0], y)

    @pl.aic
    def cube(x: pl.Tensor[[8 * 16, 32], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="ring", peer_func=vec)
        pl.aic_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=peer.base, slot_num=slot_num)
        r = pl.move(pl.load(x, [0, 0], [32, 32], space=pl.Mat), space=pl.Right)
        for i in pl.range(8):
            t = pl.load(x, [i * 16, 0], [16, 32], space=pl.Mat)
            pl.TPUSH(pl.matmul(pl.move(t, space=pl.Left), r), peer, split=pl.TILE_UP_DOWN)
    return pl.program(cube, vec, name="pairs"), vec


def _dsl_args():
    x = np.zeros((8 * 16, 32), np.float32)
    x[:32] = np.eye(32, dtype=np.float32)
    x[32:] = np.random.default_rng(5).integers(-9, 9, (8 * 16 - 32, 32))
    return dict(x=x, y=np.zeros((4 * 16, 32), np.float32), fifo=np.zeros(8 * SLOT, np.uint8))


def test_the_static_proof_finds_a_hand_written_pair_where_the_run_does(no_hang):
    """``check --static`` and the run agree: under pto-isa on A5 (SlotNum 4) the static proof
    reports the second TPOP of each pair, whose index the first TFREE tests, and the run the
    overwrite that credit allows; under spec, and with SlotNum 3, both are clean."""
    prog, vec = dsl_pairs(4)
    found = verify_pipes.verify(prog.clone(), "a5", protocol="pto-isa")
    assert [f.kind for f in found][:1] == ["free_index"], [str(f) for f in found]
    assert found[0].where.split(":")[-2] == str(line_of(vec.pyfunc, "SECOND")), found[0].where
    assert "this TPOP pops tile #1 of the C2V ring while tile #0" in found[0].what, found[0].what
    with pytest.raises(ProtocolError, match="reused before freed"):
        dsl_run(prog, _dsl_args(), platform="a5", protocol="pto-isa")
    assert verify_pipes.verify(prog.clone(), "a5", protocol="spec") == []
    prog3, _ = dsl_pairs(3)
    assert verify_pipes.verify(prog3.clone(), "a5", protocol="pto-isa") == []
    dsl_run(prog3, _dsl_args(), platform="a5", protocol="pto-isa")


def mixed_holds():
    """A mixed function whose Vector side holds s1 while s2 crosses (a 4-slot ring on A5:
    SyncPeriod 2 under pto-isa)."""
    @pl.incore(slot_num=4)
    def k(x: pl.Tensor[[3 * 16, 16], pl.f32], w: pl.Tensor[[16, 16], pl.f32],
          out: pl.Tensor[[3 * 16, 16], pl.f32]):
        w_r = pl.move(pl.load(w, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        for i in pl.range(3):
            xi = pl.move(pl.load(x, [i * 16, 0], [16, 16], space=pl.Mat), space=pl.Left)
            s1 = pl.move(pl.matmul(xi, w_r), space=pl.Vec)
            s2 = pl.move(pl.matmul(xi, w_r), space=pl.Vec)
            pl.store(pl.add(s1, pl.muls(s2, 2.0)), [i * 16, 0], out)
    return pl.program(k)


@pytest.mark.parametrize("engine", ["exact", "periodic"])
def test_a_compiled_vector_hold_is_copied_out_and_stays_clean_on_a5(engine, no_hang):
    """Within the ring (2 of 4 slots held), but under pto-isa with SyncPeriod 2 s1's TFREE after
    s2's TPOP would test s2's index: InsertTfree copies s1 out right after its TPOP and frees
    its slot at once, so each TFREE comes before the next TPOP - the compiled kernel verifies,
    runs clean on both engines and matches numpy.  Under spec the hold is kept."""
    from ptopipe.passes.slot_buffer import with_slot_buffer
    from ptopipe.runtime import kernels
    compiled = compile_program(mixed_holds(), "a5", protocol="pto-isa")
    assert "s1_held = pl.move(s1, pl.Vec)" in print_program(compiled)
    assert "s1_held" not in print_program(compile_program(mixed_holds(), "a5", protocol="spec"))
    rng = np.random.default_rng(9)
    args = dict(x=rng.integers(-2, 3, (3 * 16, 16)).astype(np.float32),
                w=rng.integers(-2, 3, (16, 16)).astype(np.float32), out=np.zeros((3 * 16, 16), np.float32))
    aic, aiv = kernels(compiled)
    res = ptopipe.run(aic, aiv, with_slot_buffer(compiled, dict(args)), platform="a5", protocol="pto-isa",
                      engine=engine)
    np.testing.assert_array_equal(res.outputs["out"], 3 * (args["x"] @ args["w"]))


def test_a_compiled_cube_hold_is_refused_at_the_second_tile_with_a_fix():
    """The Cube's Mat tiles cannot be copied out: a mixed function whose Cube reads two V2C
    tiles at once on a 4-slot ring is refused under pto-isa on A5, at the second one's line,
    with the fix a mixed function can take."""
    @pl.incore(slot_num=4)
    def k(x: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32]):
        for i in pl.range(2):
            a = pl.move(pl.load(x, [0, 0], [16, 16]), space=pl.Mat)
            b = pl.move(pl.muls(pl.load(x, [0, 0], [16, 16]), 2.0), space=pl.Mat)  # SECOND
            pl.store(pl.matmul(pl.move(a, space=pl.Left), pl.move(b, space=pl.Right)), [0, 0], out)
    with pytest.raises(CompileError) as ei:
        compile_program(pl.program(k), "a5", protocol="pto-isa")
    e = ei.value
    assert e.kind == "free_index" and e.where.split(":")[-2] == str(line_of(k.pyfunc, "SECOND")), e
    assert "freed after this TPOP (after its last use)" in e.what, e.what
    assert e.fix.startswith("use the tile received at line ") and "@pl.incore(slot_num=3)" in e.fix, e.fix
    compile_program(pl.program(k), "a5", protocol="spec")


def dsl_window():
    """A window of three popped tiles kept by popping the next before freeing the oldest (4
    slots): the TFREE of tile i, after the TPOP of tile i + 3, tests that index."""
    @pl.aiv
    def vec(y: pl.Tensor[[4 * 16, 32], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="ring", size=4 * 2048, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=buf.base, slot_num=4)
        sub = pl.get_subblockid()
        a = pl.TPOP(buf, pl.Tile[[8, 32], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
        b = pl.TPOP(buf, pl.Tile[[8, 32], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
        c = pl.TPOP(buf, pl.Tile[[8, 32], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
        pl.store(pl.add(pl.add(a, b), c), [48 + sub * 8, 0], y)
        for i in pl.range(3):
            d = pl.TPOP(buf, pl.Tile[[8, 32], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)     # NEXT
            pl.store(d, [i * 16 + sub * 8, 0], y)
            pl.TFREE(buf)
        pl.TFREE(buf)
        pl.TFREE(buf)
        pl.TFREE(buf)

    @pl.aic
    def cube(x: pl.Tensor[[8 * 16, 32], pl.f32], fifo: pl.Tensor[[8 * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="ring", peer_func=vec)
        pl.aic_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=peer.base, slot_num=4)
        r = pl.move(pl.load(x, [0, 0], [32, 32], space=pl.Mat), space=pl.Right)
        for i in pl.range(6):
            t = pl.load(x, [i * 16, 0], [16, 32], space=pl.Mat)
            pl.TPUSH(pl.matmul(pl.move(t, space=pl.Left), r), peer, split=pl.TILE_UP_DOWN)     # WPUSH
    return pl.program(cube, vec, name="window"), cube, vec


def test_a_window_kept_by_popping_first_overwrites_and_is_no_hang(no_hang):
    """Counted by releases, the fifth TPOP would wait forever (the hold bound, SLOT_NUM -
    SyncPeriod + 1 = 3); by pto-isa's rule the first TFREE, made after tile 3's TPOP, sends a
    credit early and push #5 overwrites a slot still held.  The static proof reports that
    credit (``free_index``) and no hang - it is not the device's - and the run the overwrite at
    the TPUSH."""
    prog, cube, vec = dsl_window()
    found = verify_pipes.verify(prog.clone(), "a5", protocol="pto-isa")
    assert [f.kind for f in found] == ["free_index"], [str(f) for f in found]
    assert found[0].where.split(":")[-2] == str(line_of(vec.pyfunc, "NEXT")), found[0].where
    with pytest.raises(ProtocolError) as ei:
        dsl_run(prog, _dsl_args(), platform="a5", protocol="pto-isa")
    assert ei.value.where.split(":")[-2] == str(line_of(cube.pyfunc, "WPUSH")), ei.value.where
    assert "released tile #0 after the TPOP of tile #3" in ei.value.fix, ei.value.fix
    assert verify_pipes.verify(prog.clone(), "a5", protocol="spec") == []
