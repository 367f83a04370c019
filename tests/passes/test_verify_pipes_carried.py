"""VerifyPipes on a popped tile held into the next iteration of a loop whose trip count is
a kernel scalar parameter (pop before the loop; in the loop: use the previous tile, pop the
next, free the previous, carry the next; free after): the correct kernel is clean on both
platforms, and freeing too little or reading the carried tile after its TFREE are still
found at their DSL line.  The pair also runs and matches numpy."""
import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.errors import CompileError
from ptopipe.passes import verify_pipes
from ptopipe.runtime import run
from markers import line_of

TM, K, N = 16, 32, 32
SLOT = TM * N * 4
HR = TM // 2
VEC = pl.Tile[[HR, N], pl.f32, pl.Vec]
M = 8 * TM


@pl.aic
def cube(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
         fifo: pl.Tensor[[4 * SLOT], pl.u8], n: pl.Scalar[pl.index]):
    peer = pl.import_peer_buffer(name="ring", peer_func="vec")
    pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base,
                           v2c_consumer_buf=0, slot_num=4)
    b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
    for i in pl.range(n):
        ai = pl.move(pl.load(a, [i * TM, 0], [TM, K], space=pl.Mat), space=pl.Left)
        acc = pl.matmul(ai, b0)
        pl.TPUSH(acc, peer, split=pl.TILE_UP_DOWN)


def vector(variant):
    """The consumer; ``variant``: "ok", "no-free" (the loop frees nothing: one slot more held
    per iteration) or "read-freed" (the carried tile read after its TFREE)."""
    free_in_loop = variant != "no-free"
    read_freed = variant == "read-freed"

    @pl.aiv
    def vec(out: pl.Tensor[[M, N], pl.f32], fifo: pl.Tensor[[4 * SLOT], pl.u8],
            n: pl.Scalar[pl.index]):
        buf = pl.reserve_buffer(name="ring", size=4 * SLOT, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base,
                               v2c_consumer_buf=0, slot_num=4)
        sub = pl.get_subblockid()
        first = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)
        for i, (prev,) in pl.range(1, n, init_values=(first,)):
            o = pl.adds(prev, 1.0)
            pl.store(o, [(i - 1) * TM + sub * HR, 0], out)
            nxt = pl.TPOP(buf, VEC, split=pl.TILE_UP_DOWN)                   # NEXT
            if free_in_loop:
                pl.TFREE(buf)
            if read_freed:
                o3 = pl.adds(prev, 2.0)                                       # READ-FREED
                pl.store(o3, [(i - 1) * TM + sub * HR, 0], out)
            last = pl.yield_(nxt)
        o2 = pl.adds(last, 1.0)
        pl.store(o2, [(n - 1) * TM + sub * HR, 0], out)
        pl.TFREE(buf)
    return vec


def _findings(variant, platform, ranges={"n": (1, M // TM)}):
    """The findings for 1 <= n <= 8 (the kernel pops one tile before its loop, so n = 0 hangs;
    ``out`` holds 8 tiles of rows)."""
    return verify_pipes.verify(pl.program(cube, vector(variant), name="carried").clone(), platform,
                               ranges=ranges)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_carried_pop_is_clean(platform):
    assert _findings("ok", platform) == []


def _line(err) -> int:
    return int(err.where.split(":")[-2])


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_carried_pop_without_free_in_the_loop(platform):
    found = _findings("no-free", platform)
    if platform == "a2a3":          # the GM ring stages pops in LocalSlotNum (2) slots too:
        # the third held pop is where the run fails, found in the loop's first iteration
        assert [type(e) for e in found] == [CompileError] * 3, [str(e) for e in found]
        staged, grows, leak = found
        assert "more than its LocalSlotNum 2" in staged.what and _line(staged) == line_of(vector, "NEXT")
    else:
        assert [type(e) for e in found] == [CompileError, CompileError], [str(e) for e in found]
        grows, leak = found
    assert grows.what.startswith("each iteration of the loop at line "
                                 f"{line_of(vector, 'NEXT') - 3} leaves 1 more slot(s) of the C2V "
                                 "ring held"), grows.what
    assert "trip count is not known statically, so the outstanding pops can exceed SLOT_NUM" \
        in grows.what
    assert "is never freed" in leak.what
    assert _line(grows) == _line(leak) == line_of(vector, "NEXT")


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_carried_tile_read_after_its_free(platform):
    found = _findings("read-freed", platform)
    assert len(found) == 1, [str(e) for e in found]
    err = found[0]
    assert isinstance(err, CompileError)
    assert "after its TFREE" in err.what, err.what
    assert _line(err) == line_of(vector, "READ-FREED")


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_carried_pop_runs(platform):
    rng = np.random.default_rng(0)
    args = dict(a=rng.integers(-3, 4, (M, K)).astype(np.float32),
                b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                out=np.zeros((M, N), np.float32), fifo=ptopipe.gm_buffer(4 * SLOT), n=6)
    res = run(pl.program(cube, vector("ok"), name="carried"), args, platform=platform)
    want = args["a"] @ args["b"] + 1.0
    np.testing.assert_array_equal(res.outputs["out"][:6 * TM], want[:6 * TM])


# -- the same pattern written as one mixed function: InsertTfree frees the carried slot -----
def mixed(variant="ok"):
    """``variant``: "ok"; "read-after" (the tile popped before the loop read after it);
    "pop-after" (the body pops the ring again after the carried pop); "not-popped" (the
    loop's init is a Vector tile, not a popped one)."""
    read_after, pop_after, not_popped = (variant == v for v in ("read-after", "pop-after",
                                                                "not-popped"))

    @pl.incore(split=pl.TILE_UP_DOWN, slot_num=4)
    def hold(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
             out: pl.Tensor[[M, N], pl.f32], n: pl.Scalar[pl.index]):
        b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        a0 = pl.move(pl.load(a, [0, 0], [TM, K], space=pl.Mat), space=pl.Left)
        first = pl.move(pl.matmul(a0, b0), space=pl.Vec)                        # FIRST
        if not_popped:
            first = pl.full([TM, N], pl.f32, 0.0)
        for i, (prev,) in pl.range(1, n, init_values=(first,)):
            o = pl.adds(prev, 1.0)
            pl.store(o, [(i - 1) * TM, 0], out)
            ai = pl.move(pl.load(a, [i * TM, 0], [TM, K], space=pl.Mat), space=pl.Left)
            nxt = pl.move(pl.matmul(ai, b0), space=pl.Vec)                      # CARRIED
            if pop_after:
                extra = pl.move(pl.matmul(ai, b0), space=pl.Vec)                # AGAIN
                pl.store(extra, [(i - 1) * TM, 0], out)
            last = pl.yield_(nxt)
        o2 = pl.adds(last, 1.0)
        pl.store(o2, [(n - 1) * TM, 0], out)
        if read_after:
            pl.store(first, [0, 0], out)                                        # READ-AFTER
    return hold


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_mixed_carried_pop_compiles_and_runs(platform, protocol):
    from ptopipe.passes import compile_program
    from ptopipe.passes.slot_buffer import with_slot_buffer
    prog = pl.program(mixed(), name="carried_mixed")
    op = compile_program(prog, platform, protocol=protocol)    # VerifyPipes included
    rng = np.random.default_rng(1)
    args = dict(a=rng.integers(-3, 4, (M, K)).astype(np.float32),
                b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                out=np.zeros((M, N), np.float32), n=6)
    res = run(prog, with_slot_buffer(prog, args), platform=platform, protocol=protocol)
    want = args["a"] @ args["b"] + 1.0
    np.testing.assert_array_equal(res.outputs["out"][:6 * TM], want[:6 * TM])
    assert not res.outputs["out"][6 * TM:].any()


@pytest.mark.parametrize("variant, marker, text", [
    ("read-after", "FIRST", "is carried into the loop at"),
    ("pop-after", "CARRIED", "is carried to the next iteration but the body pops the same ring "
                             "again after it"),
    ("not-popped", "CARRIED", "the tile received from the other core here is assigned to 'last' in the loop at "
                                 "line"),
])
def test_mixed_carried_pop_errors(variant, marker, text):
    from ptopipe.passes import compile_program
    fn = mixed(variant)
    with pytest.raises(CompileError) as ei:
        compile_program(pl.program(fn, name="carried_mixed"), "a2a3")
    e = ei.value
    assert text in e.what, e.what
    assert _line(e) == line_of(mixed, marker)
    if variant == "not-popped":
        assert "move the first tile before the loop and pass it as the loop's init" in e.fix
