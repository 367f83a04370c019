"""Multi-block launches (``run(..., blocks=N)``): each block on a cluster of its own with its
get_block_idx(), all on one GM; races between blocks, errors naming the block, blocks x
launches, the summary."""
import re

import numpy as np
import pytest

import ptopipe
from ptopipe import ConfigError, DataRaceError, ProtocolError
from ptopipe.isa import *
from ptopipe.arch import PipeUnit

from markers import line_of

R, C = 8, 16              # rows of one Vector core's share, columns


def share(x, out):
    """Each block doubles its rows of ``x``: block b, sub-block s takes rows
    [(2b + s) R, (2b + s + 1) R)."""
    b, n = get_block_idx(), get_block_num()
    row = (2 * b + get_subblockid()) * R
    assert x.shape[-2] == 2 * R * n
    t = Tile(TileType.Vec, float32, R, C, addr=0x0)
    TLOAD(t, GlobalTensor(x.data() + row * C, (R, C)))
    TMULS(t, t, 2.0)
    TSTORE(GlobalTensor(out.data() + row * C, (R, C)), t)


def args(blocks):
    x = np.arange(2 * R * blocks * C, dtype=np.float32).reshape(-1, C)
    return {"x": x, "out": np.zeros_like(x)}


def test_each_block_does_its_share():
    a = args(3)
    res = ptopipe.run(aiv=share, args=a, blocks=3)
    np.testing.assert_array_equal(res["out"], a["x"] * 2)
    s = res.summary
    assert s.blocks == 3 and s.asked_block
    assert s.cores["AIV0"]["instructions"] == 3 * res.clusters[0].aiv0.instructions
    assert s.cycles == max(cl.cycles for cl in res.clusters)
    assert [cl.block for cl in res.clusters] == [0, 1, 2]
    assert "3 blocks: the slowest block's cycles; instructions, busy cycles and pipe counts summed" in s.format()
    assert s.cores["AIV0"]["busy"]["V"] == sum(cl.aiv0.busy[PipeUnit.V] for cl in res.clusters)   # (as labelled)


def test_one_block_computes_a_third():
    a = args(1)
    a["x"] = np.arange(2 * R * 3 * C, dtype=np.float32).reshape(-1, C)      # sized for 3 blocks
    a["out"] = np.zeros_like(a["x"])

    def k(x, out):
        if get_block_num() == 1:        # the kernel of 3 blocks run as one: block 0's rows only
            row = get_subblockid() * R
            t = Tile(TileType.Vec, float32, R, C, addr=0x0)
            TLOAD(t, GlobalTensor(x.data() + row * C, (R, C)))
            TSTORE(GlobalTensor(out.data() + row * C, (R, C)), t)
    res = ptopipe.run(aiv=k, args=a)
    assert res.summary.blocks == 1 and res.summary.asked_block
    assert not res["out"][2 * R:].any()


def test_a_kernel_that_never_asks():
    def k(x, out):
        t = Tile(TileType.Vec, float32, R, C, addr=0x0)
        TLOAD(t, GlobalTensor(x.data(), (R, C)))
    assert not ptopipe.run(aiv=(k, None), args=args(1)).summary.asked_block


def same_rows(x, out, y):
    """Every block stores its row of ``y`` (different per block unless all rows are equal)
    into the same rows of ``out``."""
    t = Tile(TileType.Vec, float32, R, C, addr=0x0)
    TLOAD(t, GlobalTensor(y.data() + get_block_idx() * R * C, (R, C)))
    TSTORE(GlobalTensor(out.data(), (R, C)), t)  # store


def test_blocks_storing_different_data_to_the_same_rows_race():
    a = args(2)
    a["y"] = np.arange(2 * R * C, dtype=np.float32).reshape(-1, C)
    with pytest.raises(DataRaceError) as e:
        ptopipe.run(aiv=(same_rows, None), args=a, blocks=2)
    err = e.value
    line = line_of(same_rows, "store")
    assert err.where.endswith(f":{line}")
    assert "block 1 AIV0" in str(err) and "block 0 AIV0" in str(err)
    assert "get_block_idx()" in err.fix
    assert err.findings[0]["blocks"] == [0, 1]


def test_blocks_storing_identical_data_is_a_warning():
    a = args(2)
    a["y"] = np.ones((2 * R, C), np.float32)
    res = ptopipe.run(aiv=(same_rows, None), args=a, blocks=2)
    warned = [w for w, _ in res.summary.leaks if "blocks 0 and 1 both run the TSTORE" in w]
    assert len(warned) == 1 and "work is done twice" in warned[0]
    a["y"] = np.ones((3 * R, C), np.float32)                # every pair of 3 blocks: one warning
    res = ptopipe.run(aiv=(same_rows, None), args=a, blocks=3)
    warned = [w for w, _ in res.summary.leaks if "work is done twice" in w]
    assert len(warned) == 1 and "blocks 0 and 1 (so do blocks 0 and 2, 1 and 2) both run the TSTORE" in warned[0]


def test_no_cross_block_check_without_checks():
    a = args(2)
    a["y"] = np.arange(2 * R * C, dtype=np.float32).reshape(-1, C)
    res = ptopipe.run(aiv=(same_rows, None), args=a, blocks=2, checks=False)
    np.testing.assert_array_equal(res["out"][:R], a["y"][R:])          # block 1 ran last


def test_blocks_times_launches_carry_each_blocks_memories():
    """Each launch adds its block's UB tile (kept in UB across launches) to its rows."""
    def k(out):
        t = Tile(TileType.Vec, float32, R, C, addr=0x0)
        one = Tile(TileType.Vec, float32, R, C, addr=0x2000)
        TEXPANDS(one, float(get_block_idx() + 1))
        TADD(t, t, one)                  # the UB tile the same block left in the launch before
        TSTORE(GlobalTensor(out.data() + get_block_idx() * R * C, (R, C)), t)
    res = ptopipe.run(aiv=(k, None), args={"out": np.zeros((2 * R, C), np.float32)}, blocks=2, launches=3)
    for k_, outs in enumerate(res.launches, 1):
        np.testing.assert_array_equal(outs["out"][:R], np.full((R, C), k_))
        np.testing.assert_array_equal(outs["out"][R:], np.full((R, C), 2 * k_))


def test_an_error_names_its_block():
    def k(x, out):
        if get_block_idx() == 1:
            TFREE(TPipe(0, DIR_C2V, 64, 2, peers=(0,))(out, 0x8000, 0))  # free
    with pytest.raises(ProtocolError) as e:
        ptopipe.run(aiv=(k, None), args=args(2), blocks=3, launches=2)
    assert "\n  (in block 1 of 3)\n  (in launch 1 of 2)\n" in str(e.value)


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "2"])
def test_bad_blocks(bad):
    with pytest.raises(ConfigError) as e:
        ptopipe.run(aiv=share, args=args(1), blocks=bad)
    assert e.value.where == "blocks" and "blocks >= 1" in e.value.fix


def test_a_traced_run_traces_every_block_and_reports_block_0():
    a = args(2)
    res = ptopipe.run(aiv=share, args=a, blocks=2, trace=True)
    assert res.cluster is res.clusters[0] and res.cluster.block == 0
    assert all(cl.trace for cl in res.clusters)

    def k(x, out):
        share(x, out)
        if get_block_idx() == 1:
            TFREE(TPipe(0, DIR_C2V, 64, 2, peers=(0,))(out, 0x8000, 0))
    with pytest.raises(ProtocolError) as e:
        ptopipe.run(aiv=(k, None), args=a, blocks=2, trace=True)
    assert e.value.run_cluster.block == 1 and e.value.run_cluster.trace      # the failing block's run


def test_a_mismatch_names_the_block_that_wrote_last():
    """Block 1 stores its rows plus one: the re-run that records writes names block 1's TSTORE."""
    def k(x, out):
        b = get_block_idx()
        row = (2 * b + get_subblockid()) * R
        t = Tile(TileType.Vec, float32, R, C, addr=0x0)
        TLOAD(t, GlobalTensor(x.data() + row * C, (R, C)))
        TADDS(t, t, float(b))
        TSTORE(GlobalTensor(out.data() + row * C, (R, C)), t)  # store
    sc = ptopipe.Scenario("wrong", None, k, lambda rng: args(2), lambda a: {"out": a["x"]}, blocks=2)
    with pytest.raises(ptopipe.MismatchError) as e:
        sc.check()
    assert re.search(rf"was last written by block 1's AIV0 TSTORE at \S*test_blocks.py:{line_of(k, 'store')}\n",
                     str(e.value))


def test_a_mismatch_gives_the_rows_each_block_wrote_the_rows_none_did_and_the_runs_warnings():
    """Each block advances one share (not two) per block, with the same data in the rows two
    blocks share: the rows of the last shares are never written, the blocks overlap, and the
    run's "work done twice" warning stays with the mismatch."""
    def k(x, out):
        row = (get_block_idx() + get_subblockid()) * R
        t = Tile(TileType.Vec, float32, R, C, addr=0x0)
        TLOAD(t, GlobalTensor(x.data() + row * C, (R, C)))
        TSTORE(GlobalTensor(out.data() + row * C, (R, C)), t)
    sc = ptopipe.Scenario("skew", None, k, lambda rng: args(3), lambda a: {"out": a["x"]}, blocks=3)
    with pytest.raises(ptopipe.MismatchError) as e:
        sc.check()
    text = str(e.value)
    assert f"out: rows 32..47 (of 0..{6 * R - 1}) were never written" in text
    assert "out: rows written by each block: block 0 0..15; block 1 8..23; block 2 16..31" in text
    assert "the run warned: blocks 0 and 1 (so do blocks 1 and 2) both run the TSTORE" in text
    assert "work is done twice" in text


def test_a_check_scope_takes_back_every_blocks_memories():
    from ptopipe.isa.explore import CheckScope
    scope = CheckScope()
    res = ptopipe.run(aiv=share, args=args(2), blocks=2, pool=scope.pool)
    scope.passed(res)
    assert all(not core.memories for cl in res.clusters for core in cl.cores)


def ring_kernels(offset: bool):
    """The Cube pushes block b's x @ x through a C2V ring in GM (A2A3) that AIV0 pops; each
    block's ring at its own bytes of ``fifo`` (``offset``) or all at the same."""
    from cube_parts import square_acc
    slot = 16 * 16 * 4

    def ring(fifo):
        base = fifo.data() + (get_block_idx() * 2 * slot if offset else 0)
        return TPipe(0, DIR_C2V, slot, 2, peers=(0,))(base, 0x8000, 0)

    def cube(x, fifo):
        pipe = ring(fifo)
        TPUSH(pipe, square_acc(GlobalTensor(x.data() + get_block_idx() * 256, (16, 16))))  # push

    def vector(x, fifo):
        pipe = ring(fifo)
        TPOP(pipe, Tile(TileType.Vec, float32, 16, 16))
        TFREE(pipe)
    return cube, vector


def test_blocks_sharing_a_gm_ring_race():
    # (the ring's 4 KiB GM page first: no TLOAD shares it, so only the ring's own records see it)
    a = {"fifo": gm_buffer(4 * 16 * 16 * 4), "x": np.arange(512, dtype=np.float32).reshape(32, 16) / 64}
    cube, vector = ring_kernels(offset=True)
    ptopipe.run(cube, (vector, None), a, blocks=2)
    cube, vector = ring_kernels(offset=False)
    with pytest.raises(DataRaceError) as e:
        ptopipe.run(cube, (vector, None), a, blocks=2)
    assert e.value.where.endswith(f":{line_of(cube, 'push')}") and "block 1 AIC" in str(e.value)
    assert "slot 0 of" in str(e.value)
