"""A ring that does not fit its memory is explained in the user's terms: the
ring ExpandMixedKernel reserved for a mixed function names ``@pl.incore(slot_num=...)`` (or
smaller tiles) at the function's line, not a reserve_buffer the user never wrote; a
hand-written reserve_buffer whose size fits but whose base is too high names the base."""
import os

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.errors import CompileError, ConfigError
from ptopipe.ir.layout import reserve_fit_problem
from ptopipe.passes.manager import compile_program
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import run as dsl_run

from markers import line_of

M, K, N = 128, 64, 128              # a 128x128 f32 accumulator crosses C2V: on A5 a 32 KiB slot (a part)
HERE = os.path.abspath(__file__)


def big(sn=None, rows=M):
    @pl.incore(slot_num=sn)
    def big_ring(a: pl.Tensor[[rows, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],  # DEF
                 out: pl.Tensor[[rows, N], pl.f32]):
        al = pl.move(pl.load(a, [0, 0], [rows, K], space=pl.Mat), space=pl.Left)
        bl = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        r = pl.move(pl.matmul(al, bl), space=pl.Vec)
        pl.store(pl.muls(r, 2.0), [0, 0], out)
    return pl.program(big_ring, name="big"), big_ring


def test_a_compiler_made_ring_too_big_names_slot_num_at_the_function():
    """slot_num given: the compiler keeps it (by default it picks one that fits, and on A2A3
    the ring is in GM: tests/passes/test_ring_memory_defaults.py).  The fix names a slot_num
    ptoas builds a ring of (4 or 8), and it works."""
    prog, fn = big(8)                           # 32 KiB slots (each Vector core's 64x128 part): six fit,
    #                                             ptoas builds four
    with pytest.raises(CompileError) as ei:
        compile_program(prog, "a5")
    e = ei.value
    assert "the C2V ring of the mixed function 'big_ring' (SLOT_NUM 8 * SLOT_SIZE 32768 = 262144 bytes" in e.what
    assert "SLOT_SIZE one Vector core's part of the largest tile crossing C2V) does not fit" in e.what
    assert "reserve_buffer" not in e.what and "reserve_buffer" not in e.fix
    assert e.fix == "@pl.incore(slot_num=4) on 'big_ring', or cross smaller tiles", e.fix
    assert e.where.startswith(f"{HERE}:{line_of(fn.pyfunc, 'DEF')}:"), e.where
    # the fix works: that slot_num compiles and runs clean and exact
    prog, _ = big(4)
    rng = np.random.default_rng(5)
    args = with_slot_buffer(prog, dict(a=rng.integers(-3, 4, (M, K)).astype(np.float32),
                                       b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                                       out=np.zeros((M, N), np.float32)))
    res = dsl_run(prog, args, platform="a5")
    np.testing.assert_array_equal(res.outputs["out"], args["a"] @ args["b"] * 2)


@pytest.mark.parametrize("sn", [8, 4])
def test_a_ring_no_ptoas_slot_num_fits_says_so_and_what_to_shrink(sn):
    """64 KiB slots (each Vector core's 128x128 part of a 256x128 accumulator): three fit beside
    the tiles, so neither SLOT_NUM ptoas builds does; the fix says so plainly and names the part
    size and the bytes that would make four fit (it suggests no slot_num ptoas would refuse)."""
    prog, fn = big(sn, rows=2 * M)
    with pytest.raises(CompileError) as ei:
        compile_program(prog, "a5")
    e = ei.value
    assert f"(SLOT_NUM {sn} * SLOT_SIZE 65536 = {sn * 65536} bytes" in e.what
    assert e.fix == ("no ring ptoas builds fits (it takes SLOT_NUM 4 or 8; 4 slots of 65536 bytes need "
                     "262144, the Vector core's UB above its tiles at 0x10000 has 196608 free): cross "
                     "tiles whose Vector core parts are at most 49152 bytes over C2V (a slot in each "
                     "Vector core's UB holds its part of the largest crossing tile: compute and cross it "
                     "in smaller blocks), or leave 65536 more bytes free (fewer or smaller tiles live "
                     "beside the ring)"), e.fix
    assert "slot_num=" not in e.fix


TM, SLOT, SN = 16, 16 * 32 * 4, 4


def pair(base):
    @pl.aiv
    def vector(out: pl.Tensor[[TM, 32], pl.f32], fifo: pl.Tensor[[SN * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="c2v", size=SN * SLOT, base=base)                 # RESERVE
        pl.aiv_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                               slot_num=SN)
        sub = pl.get_subblockid()
        x = pl.TPOP(buf, pl.Tile[[TM // 2, 32], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
        o = pl.adds(x, 1.0)
        pl.TFREE(buf)
        pl.store(o, [sub * (TM // 2), 0], out)

    @pl.aic
    def cube(a: pl.Tensor[[TM, 32], pl.f32], b: pl.Tensor[[32, 32], pl.f32],
             fifo: pl.Tensor[[SN * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="c2v", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base, v2c_consumer_buf=0,
                               slot_num=SN)
        al = pl.move(pl.load(a, [0, 0], [TM, 32], space=pl.Mat), space=pl.Left)
        bl = pl.move(pl.load(b, [0, 0], [32, 32], space=pl.Mat), space=pl.Right)
        pl.TPUSH(pl.matmul(al, bl), peer, split=pl.TILE_UP_DOWN)
    return pl.program(cube, vector, name="oob"), vector


def _args():
    rng = np.random.default_rng(6)
    return dict(a=rng.integers(-3, 4, (TM, 32)).astype(np.float32),
                b=rng.integers(-3, 4, (32, 32)).astype(np.float32),
                out=np.zeros((TM, 32), np.float32), fifo=ptopipe.gm_buffer(SN * SLOT))


@pytest.mark.parametrize("platform,ub", [("a2a3", 196608), ("a5", 262144)])
def test_a_hand_written_reserve_base_too_high_names_the_base(platform, ub):
    base = ub - SN * SLOT + 0x1000
    prog, vector = pair(base)
    fix = f"lower its base: {SN * SLOT} bytes fit at a base up to {ub - SN * SLOT:#x} (or base=pl.AUTO)"
    with pytest.raises(ConfigError) as ei:
        dsl_run(prog, _args(), platform=platform)
    e = ei.value
    if platform == "a2a3":
        assert f"reserve_buffer 'c2v' of {SN * SLOT} bytes at {base:#x} does not fit" in e.what, str(e)
        assert e.fix == fix
        assert e.where.endswith(f"{os.path.basename(HERE)}:{line_of(vector.pyfunc, 'RESERVE')}:9"), e.where
    else:       # A5: the ring itself is bound there first; that report names the base too
        assert e.fix == f"use a consumer buffer base <= {ub - SN * SLOT:#x}", str(e)
    with pytest.raises(CompileError) as ci:           # the compiler's Validate
        compile_program(prog, platform)
    assert ci.value.fix == fix and ci.value.where.startswith(f"{HERE}:{line_of(vector.pyfunc, 'RESERVE')}:")
    # at the highest base that fits it runs clean and exact
    prog, _ = pair(ub - SN * SLOT)
    args = _args()
    res = dsl_run(prog, args, platform=platform)
    np.testing.assert_array_equal(res.outputs["out"], args["a"] @ args["b"] + 1)


def test_a_reserve_too_big_for_any_base_still_names_the_size():
    what, fix = reserve_fit_problem("r", 0, 300000, "AIV0", "UB", 196608)
    assert "of 300000 bytes at 0x0 does not fit" in what
    assert fix == "reserve SLOT_NUM * SLOT_SIZE bytes (smaller slots or fewer of them)"
