"""The rings ExpandMixedKernel makes take the memory their kernel needs: on A2A3 (rings in
GM) the consumer stages its popped tiles in LocalSlotNum slots of its reserve_buffer,
LocalSlotNum the hold bound VerifyPipes proves (not SLOT_NUM); on A5 (rings in the
consumer's memory) a function without ``slot_num=`` whose default ring does not fit beside its
tiles gets the deepest ring ptoas builds (4 or 8 slots) that fits - or, when none does, the
most slots that fit, with a warning that ptoas will refuse that ring and what to shrink - and
the compile's warnings say what was chosen and why."""
import numpy as np
import pytest

import ptopipe.language as pl
from ptopipe.codegen import write_pto
from ptopipe.errors import CompileError
from ptopipe.passes.manager import compile_program
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.passes.util import functions, init_ops, ring_buffer
from ptopipe.runtime import run as dsl_run

TM, K, N = 32, 32, 256          # LayerNorm rows of N = 256 f32: a 32 KiB tile crosses C2V
M = 2 * TM


def layernorm_of(tm):
    """LayerNorm of 2 * ``tm`` rows in blocks of ``tm`` rows."""
    m = 2 * tm

    @pl.incore
    def layernorm(x: pl.Tensor[[m, K], pl.f32], w: pl.Tensor[[K, N], pl.f32],
                  out: pl.Tensor[[m, N], pl.f32]):
        w0 = pl.move(pl.load(w, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(m // tm):
            a0 = pl.move(pl.load(x, [i * tm, 0], [tm, K], space=pl.Mat), space=pl.Left)
            h = pl.move(pl.matmul(a0, w0), space=pl.Vec)
            mean = pl.muls(pl.row_sum(h), 1.0 / N)
            c = pl.row_expand_sub(h, mean)
            var = pl.muls(pl.row_sum(pl.mul(c, c)), 1.0 / N)
            pl.store(pl.row_expand_mul(c, pl.rsqrt(pl.adds(var, 1e-5))), [i * tm, 0], out)
    return layernorm


layernorm = layernorm_of(TM)


def _ln_golden(x, w):
    h = x @ w
    c = h - h.mean(1, keepdims=True)
    return c / np.sqrt((c * c).mean(1, keepdims=True) + 1e-5)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_layernorm_n256_f32_compiles_by_default_and_matches_numpy(platform, no_hang):
    prog = pl.program(layernorm, name="ln")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((M, K)).astype(np.float32)
    w = rng.standard_normal((K, N)).astype(np.float32)
    for protocol in ("spec", "pto-isa"):
        args = with_slot_buffer(prog, dict(x=x, w=w, out=np.zeros((M, N), np.float32)))
        res = dsl_run(prog, args, platform=platform, protocol=protocol)
        np.testing.assert_allclose(res.outputs["out"], _ln_golden(x, w), rtol=1e-4, atol=1e-4)


def _consumer_init(op, kind="AIV"):
    f = next(f for f in functions(op) if f.kind.value.upper() == kind)
    init = init_ops(f)[0]
    return init, ring_buffer(f, init, "C2V")


def test_a2a3_stages_one_slot_when_one_popped_tile_is_held():
    warnings = []
    init, buf = _consumer_init(compile_program(pl.program(layernorm, name="ln"), "a2a3",
                                               warnings=warnings))
    assert (init.slot_num, init.local_slot_num) == (8, 1)
    assert buf.size == init.slot_size == TM * N * 4
    assert not any("SLOT_NUM" in w for w in warnings)     # the ring is in GM: nothing chosen


R, C = 16, 64


@pl.incore
def holds_two(a: pl.Tensor[[R, R], pl.f32], b: pl.Tensor[[R, C], pl.f32],
              out: pl.Tensor[[R, C], pl.f32]):
    al = pl.move(pl.load(a, [0, 0], [R, R], space=pl.Mat), space=pl.Left)
    bl = pl.move(pl.load(b, [0, 0], [R, C], space=pl.Mat), space=pl.Right)
    u = pl.move(pl.matmul(al, bl), space=pl.Vec)
    v = pl.move(pl.matmul(al, bl), space=pl.Vec)        # popped while u is still held
    pl.store(pl.add(u, pl.muls(v, 2.0)), [0, 0], out)


def test_a_kernel_holding_two_popped_tiles_gets_local_slot_num_2(no_hang):
    prog = pl.program(holds_two, name="two")
    init, buf = _consumer_init(compile_program(prog, "a2a3"))
    assert (init.slot_num, init.local_slot_num) == (8, 2)
    assert buf.size == 2 * init.slot_size
    rng = np.random.default_rng(4)
    a = rng.integers(-3, 4, (R, R)).astype(np.float32)
    b = rng.integers(-3, 4, (R, C)).astype(np.float32)
    for protocol in ("spec", "pto-isa"):
        args = with_slot_buffer(prog, dict(a=a, b=b, out=np.zeros((R, C), np.float32)))
        res = dsl_run(prog, args, platform="a2a3", protocol=protocol)
        np.testing.assert_array_equal(res.outputs["out"], 3 * (a @ b))


def test_a5_chooses_the_deepest_ptoas_ring_that_fits_and_says_so():
    """Blocks of 64 rows: each Vector core's part of a block is 32 KiB, what an A5 slot holds.
    Four 32 KiB slots fit beside the tiles, not eight; ptoas builds rings of 4 or 8 slots only,
    so the compiler takes 4 (the .pto stays one ptoas assembles)."""
    warnings = []
    ln64 = layernorm_of(2 * TM)
    init, buf = _consumer_init(compile_program(pl.program(ln64, name="ln"), "a5",
                                               warnings=warnings))
    assert init.slot_num == 4 and buf.size == 4 * init.slot_size
    note = next(w for w in warnings if "SLOT_NUM" in w)
    assert "layernorm: SLOT_NUM 4 chosen (the default 8: 8 slots of 32768 bytes" in note
    assert "do not fit the 163584 bytes of UB layernorm_aiv has free above its tiles on a5" in note
    assert note.endswith("the deepest ring ptoas builds that fits; give @pl.incore(slot_num=...) to "
                         "choose (ptoas takes 4 or 8)"), note
    op = compile_program(pl.program(ln64, name="ln"), "a5")
    cube, _ = _consumer_init(op, "AIC")
    assert cube.slot_num == 4                           # both ends of the pipe agree
    notes = []                                          # and the .pto is one ptoas assembles
    text = write_pto(op, "a5", notes)
    assert notes == [] and text.count("pto.initialize_l2l_pipe {dir_mask = 1, slot_size = 32768, "
                                      "slot_num = 4, flag_base = 0}") == 2


BM = 128                        # a 256x128 f32 accumulator crosses C2V: 64 KiB slots on A5 (a part)


@pl.incore
def big_default(a: pl.Tensor[[2 * BM, K], pl.f32], b: pl.Tensor[[K, BM], pl.f32],
                out: pl.Tensor[[2 * BM, BM], pl.f32]):
    al = pl.move(pl.load(a, [0, 0], [2 * BM, K], space=pl.Mat), space=pl.Left)
    bl = pl.move(pl.load(b, [0, 0], [K, BM], space=pl.Mat), space=pl.Right)
    r = pl.move(pl.matmul(al, bl), space=pl.Vec)
    pl.store(pl.muls(r, 2.0), [0, 0], out)


def test_a5_with_no_ptoas_ring_that_fits_says_so_plainly_and_what_to_shrink(no_hang):
    """Three 64 KiB slots fit beside the tiles, four do not: the compiler keeps the deepest
    ring that fits for ptopipe's run and C++, and says that ptoas refuses it and what to shrink
    (no slot_num it would refuse is suggested)."""
    warnings = []
    prog = pl.program(big_default, name="big")
    init, buf = _consumer_init(compile_program(prog, "a5", warnings=warnings))
    assert init.slot_num == 3 and buf.size == 3 * init.slot_size
    note = next(w for w in warnings if "SLOT_NUM" in w)
    assert "big_default: SLOT_NUM 3 chosen (the default 8: 8 slots of 65536 bytes" in note
    assert ("ptoas will refuse this ring (ptopipe's run and C++ take it): no ring ptoas builds fits "
            "(it takes SLOT_NUM 4 or 8; 4 slots of 65536 bytes need 262144, the UB of big_default_aiv "
            "has 196608 free): cross tiles whose Vector core parts are at most 49152 bytes over C2V") in note
    assert "or leave 65536 more bytes free" in note and "slot_num=3" not in note
    rng = np.random.default_rng(6)
    a = rng.integers(-3, 4, (2 * BM, K)).astype(np.float32)
    b = rng.integers(-3, 4, (K, BM)).astype(np.float32)
    res = dsl_run(prog, with_slot_buffer(prog, dict(a=a, b=b, out=np.zeros((2 * BM, BM), np.float32))),
                  platform="a5")
    np.testing.assert_array_equal(res.outputs["out"], 2 * (a @ b))


BR, BK, BC = 128, 64, 128       # 64 KiB tiles: three held at once do not fit A2A3's UB


@pl.incore
def holds_three(a: pl.Tensor[[BR, BK], pl.f32], b: pl.Tensor[[BK, BC], pl.f32],
                out: pl.Tensor[[BR, BC], pl.f32]):
    al = pl.move(pl.load(a, [0, 0], [BR, BK], space=pl.Mat), space=pl.Left)
    bl = pl.move(pl.load(b, [0, 0], [BK, BC], space=pl.Mat), space=pl.Right)
    u = pl.move(pl.matmul(al, bl), space=pl.Vec)
    v = pl.move(pl.matmul(al, bl), space=pl.Vec)
    w = pl.move(pl.matmul(al, bl), space=pl.Vec)
    pl.store(pl.add(pl.add(u, v), w), [0, 0], out)


def test_a2a3_staging_too_big_names_local_slot_num_and_the_held_tiles():
    with pytest.raises(CompileError) as ei:
        compile_program(pl.program(holds_three, name="three"), "a2a3")
    e = ei.value
    assert "the C2V ring of the mixed function 'holds_three' (LocalSlotNum 3 * SLOT_SIZE 65536" in e.what
    assert e.fix.startswith("hold fewer popped tiles at once (at most 2)"), e.fix
    assert "its ring is in GM" in e.details
    code = holds_three.pyfunc.__code__                   # at the mixed function's def
    assert e.where == f"{code.co_filename}:{code.co_firstlineno + 1}:1", e.where
