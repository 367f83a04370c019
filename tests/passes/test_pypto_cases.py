"""The themes of pypto's own compiler tests (tests/ut/ir/transforms: expand mixed kernel,
init memref, insert tfree / stamp tfree split, allocate memory addr, pipe ids and slot_num,
tile.create accumulators, broadcast), written as small ``pl`` kernels: each one pypto takes
compiles, runs and matches numpy; each one pypto refuses is a CompileError at its line (an
unmatched TFREE, a TFREE naming another ring id, overlapping reserves), except a hand-written
pair's TPOP without TFREE (pypto's verifier): ptopipe runs a hand-written pair as written,
and its run reports the leak at the TPOP.  A lone kernel compiles, and its run names the
missing peer at the pipe's init.

One platform / protocol per case by default (rotated over the cases, so every combination
is exercised); PTOPIPE_FULL=1 runs every case on both platforms and both protocols.
A deliberate difference from pypto: a 16-slot ring on A2A3, which pypto sizes and the real
A2A3 stack cannot hold (8 flags per direction; pto-isa's FIFO depth 8), is refused there."""
import os

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe import CompileError, ConfigError
from ptopipe.errors import LeakError
from ptopipe.ir import print_program
from ptopipe.ir.layout import read_layout
from ptopipe.ir.opdefs import FuncOp
from ptopipe.passes import compile_program
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.passes.util import functions, init_ops
from ptopipe.runtime import run

from configs import FULL, PAIRS
from markers import line_of

M, K, N = 16, 16, 32
S = M * N * 4                               # a 16x32 f32 slot
COMBOS = PAIRS


def _r(rng, *shape):
    return rng.integers(-3, 4, shape).astype(np.float32)


# -- the kernels pypto takes: (program, make_args(rng), golden(args)) ----------------------
def pure_vector():
    """A split incore function with only vector work is one AIV kernel, no pipe."""
    @pl.incore(split=pl.TILE_UP_DOWN)
    def pv(x: pl.Tensor[[M, N], pl.f32], y: pl.Tensor[[M, N], pl.f32],
           out: pl.Tensor[[M, N], pl.f32]):
        pl.store(pl.muls(pl.load(x, [0, 0], [M, N]), 2.0) + pl.load(y, [0, 0], [M, N]), [0, 0], out)
    return (pl.program(pv, name="pure_vector"),
            lambda g: dict(x=_r(g, M, N), y=_r(g, M, N), out=np.zeros((M, N), np.float32)),
            lambda a: 2 * a["x"] + a["y"])


def created_acc_pure_cube():
    """tile.create accumulator, K loop with init_cond, stored from Acc: a pure Cube kernel."""
    NK = 3

    @pl.incore
    def cc(a: pl.Tensor[[M, K * NK], pl.f32], b: pl.Tensor[[K * NK, N], pl.f32],
           out: pl.Tensor[[M, N], pl.f32]):
        acc = pl.create([M, N], pl.f32, space=pl.Acc)
        for k in pl.range(NK):
            ak = pl.move(pl.load(a, [0, k * K], [M, K], space=pl.Mat), space=pl.Left)
            bk = pl.move(pl.load(b, [k * K, 0], [K, N], space=pl.Mat), space=pl.Right)
            acc = pl.matmul_acc(acc, ak, bk, init_cond=(k == 0))
        pl.store(acc, [0, 0], out)
    return (pl.program(cc, name="created_acc"),
            lambda g: dict(a=_r(g, M, K * NK), b=_r(g, K * NK, N), out=np.zeros((M, N), np.float32)),
            lambda a: a["a"] @ a["b"])


def matmul_post_chain(sn=None):
    """matmul, then a vector chain: the chain lands on the AIV behind a C2V ring."""
    @pl.incore(split=pl.TILE_UP_DOWN, slot_num=sn)
    def mp(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],            # DEF
           out: pl.Tensor[[M, N], pl.f32]):
        al = pl.move(pl.load(a, [0, 0], [M, K], space=pl.Mat), space=pl.Left)
        br = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        v = pl.move(pl.matmul(al, br), space=pl.Vec)
        pl.store(pl.adds(pl.muls(v, 2.0), 1.0), [0, 0], out)
    return (pl.program(mp, name=f"post_chain_{sn}"),
            lambda g: dict(a=_r(g, M, K), b=_r(g, K, N), out=np.zeros((M, N), np.float32)),
            lambda a: 2 * (a["a"] @ a["b"]) + 1), mp


def v2c_pre_matmul():
    """A vector op feeding the matmul's left operand: a V2C ring into Left."""
    @pl.incore(split=pl.TILE_UP_DOWN)
    def vp(x: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
           out: pl.Tensor[[M, N], pl.f32]):
        s = pl.move(pl.adds(pl.load(x, [0, 0], [M, K]), 1.0), space=pl.Left)
        br = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        pl.store(pl.matmul(s, br), [0, 0], out)
    return (pl.program(vp, name="v2c_pre_matmul"),
            lambda g: dict(x=_r(g, M, K), b=_r(g, K, N), out=np.zeros((M, N), np.float32)),
            lambda a: (a["x"] + 1) @ a["b"])


def both_ways_in_loop():
    """V2C and C2V inside one loop: a ring each way."""
    T = 2

    @pl.incore(split=pl.TILE_UP_DOWN)
    def bw(x: pl.Tensor[[T * M, K], pl.f32], d: pl.Tensor[[K, N], pl.f32],
           out: pl.Tensor[[T * M, N], pl.f32]):
        dr = pl.move(pl.load(d, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(T):
            s = pl.move(pl.muls(pl.load(x, [i * M, 0], [M, K]), 2.0), space=pl.Left)
            r = pl.move(pl.matmul(s, dr), space=pl.Vec)
            pl.store(pl.adds(r, -1.0), [i * M, 0], out)
    return (pl.program(bw, name="both_ways"),
            lambda g: dict(x=_r(g, T * M, K), d=_r(g, K, N), out=np.zeros((T * M, N), np.float32)),
            lambda a: (2 * a["x"]) @ a["d"] - 1)


def loop_plus_flat_ops():
    """Flat vector work before a mixed loop, and a loop-carried vector sum (init_memref's
    loop-carry case) after the pops."""
    T = 3

    @pl.incore(split=pl.TILE_UP_DOWN)
    def lf(a: pl.Tensor[[T * M, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
           x: pl.Tensor[[M, N], pl.f32], out: pl.Tensor[[M, N], pl.f32],
           side: pl.Tensor[[M, N], pl.f32]):
        xv = pl.load(x, [0, 0], [M, N])
        pl.store(pl.muls(xv, 3.0), [0, 0], side)
        br = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        for i, (s,) in pl.range(T, init_values=(xv,)):
            al = pl.move(pl.load(a, [i * M, 0], [M, K], space=pl.Mat), space=pl.Left)
            v = pl.move(pl.matmul(al, br), space=pl.Vec)
            total = pl.yield_(pl.add(s, v))
        pl.store(total, [0, 0], out)

    def golden(a):
        return {"out": a["x"] + sum(a["a"][i * M:(i + 1) * M] @ a["b"] for i in range(T)),
                "side": 3 * a["x"]}
    return (pl.program(lf, name="loop_plus_flat"),
            lambda g: dict(a=_r(g, T * M, K), b=_r(g, K, N), x=_r(g, M, N),
                           out=np.zeros((M, N), np.float32), side=np.zeros((M, N), np.float32)),
            golden)


def tfree_after_intermediate_use():
    """The popped tile is read again after a value computed from it: freed after that read."""
    @pl.incore(split=pl.TILE_UP_DOWN)
    def ti(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
           out: pl.Tensor[[M, N], pl.f32]):
        al = pl.move(pl.load(a, [0, 0], [M, K], space=pl.Mat), space=pl.Left)
        br = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        t = pl.move(pl.matmul(al, br), space=pl.Vec)
        u = pl.adds(t, 1.0)
        pl.store(pl.mul(u, t), [0, 0], out)
    return (pl.program(ti, name="tfree_late"),
            lambda g: dict(a=_r(g, M, K), b=_r(g, K, N), out=np.zeros((M, N), np.float32)),
            lambda a: (a["a"] @ a["b"] + 1) * (a["a"] @ a["b"]))


def popped_tile_yielded_from_if(flag):
    """A popped tile is the result of an if (pypto frees it before the yield; here after the
    join, where it is read)."""
    @pl.incore(split=pl.TILE_UP_DOWN)
    def py(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
           x: pl.Tensor[[M, N], pl.f32], out: pl.Tensor[[M, N], pl.f32],
           flag: pl.Scalar[pl.index]):
        al = pl.move(pl.load(a, [0, 0], [M, K], space=pl.Mat), space=pl.Left)
        br = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        if flag > 0:
            t = pl.move(pl.matmul(al, br), space=pl.Vec)
        else:
            t = pl.load(x, [0, 0], [M, N])
        pl.store(pl.adds(t, 1.0), [0, 0], out)
    return (pl.program(py, name=f"if_yield_{flag}"),
            lambda g: dict(a=_r(g, M, K), b=_r(g, K, N), x=_r(g, M, N),
                           out=np.zeros((M, N), np.float32), flag=flag),
            lambda a: (a["a"] @ a["b"] if flag else a["x"]) + 1)


def broadcast_row_and_column():
    """A [1, N] bias and an [M, 1] scale broadcast in element-wise ops after the matmul."""
    @pl.incore(split=pl.TILE_UP_DOWN)
    def bc(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
           bias: pl.Tensor[[1, N], pl.f32], scale: pl.Tensor[[M, 1], pl.f32],
           out: pl.Tensor[[M, N], pl.f32]):
        al = pl.move(pl.load(a, [0, 0], [M, K], space=pl.Mat), space=pl.Left)
        br = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        y = pl.move(pl.matmul(al, br), space=pl.Vec)
        pl.store(pl.mul(pl.add(y, pl.load(bias, [0, 0], [1, N])), pl.load(scale, [0, 0], [M, 1])),
                 [0, 0], out)
    return (pl.program(bc, name="broadcast"),
            lambda g: dict(a=_r(g, M, K), b=_r(g, K, N), bias=_r(g, 1, N), scale=_r(g, M, 1),
                           out=np.zeros((M, N), np.float32)),
            lambda a: (a["a"] @ a["b"] + a["bias"]) * a["scale"])


def reserve_regions():
    """An auto reserve and one at an explicit base beside the tiles (allocate memory addr)."""
    src = '''import ptopipe.language as pl

@pl.aiv(split=pl.TILE_NO_SPLIT)
def main(x: pl.Tensor[[16, 32], pl.f32], out: pl.Tensor[[16, 32], pl.f32]):
    auto = pl.reserve_buffer(name="auto", size=2048, base=pl.AUTO)
    fixed = pl.reserve_buffer(name="fixed", size=1024, base=0x1000)
    a = pl.load(x, [0, 0], [16, 32])
    pl.store(a + a, [0, 0], out)
'''
    return (pl.parse(src),
            lambda g: dict(x=_r(g, M, N), out=np.zeros((M, N), np.float32)),
            lambda a: 2 * a["x"])


def two_c2v_rings(mode=0):
    """Two C2V rings, the second id=1 (several explicit pipe buffers).  ``mode`` 1: ring
    B's TFREE is left out; 2: a second TFREE with no slot held; 3: a TFREE naming a ring id
    the kernel does not set up."""
    SB = M * K * 4

    @pl.aiv(split=pl.TILE_NO_SPLIT)
    def vec(oa: pl.Tensor[[M, N], pl.f32], ob: pl.Tensor[[M, K], pl.f32],
            fa: pl.Tensor[[2 * S], pl.u8], fb: pl.Tensor[[2 * SB], pl.u8]):
        ra = pl.reserve_buffer(name="ring_a", size=2 * S, base=pl.AUTO)
        rb = pl.reserve_buffer(name="ring_b", size=2 * SB, base=pl.AUTO)
        pl.aiv_initialize_pipe(pl.DIR_C2V, S, fa, c2v_consumer_buf=ra.base, v2c_consumer_buf=0,
                               slot_num=2, lanes=1)
        pl.aiv_initialize_pipe(pl.DIR_C2V, SB, fb, c2v_consumer_buf=rb.base, v2c_consumer_buf=0,
                               slot_num=2, id=1, lanes=1)
        x = pl.TPOP(ra, pl.Tile[[M, N], pl.f32, pl.Vec])
        y = pl.TPOP(rb, pl.Tile[[M, K], pl.f32, pl.Vec])                            # POP_B
        pl.store(pl.adds(x, 1.0), [0, 0], oa)
        pl.store(pl.muls(y, 2.0), [0, 0], ob)
        pl.TFREE(ra)
        if mode != 1:
            pl.TFREE(rb)
        if mode == 2:
            pl.TFREE(rb)                                                             # AGAIN
        if mode == 3:
            pl.TFREE(rb, id=2)                                                       # OTHER_ID

    @pl.aic
    def cube(a: pl.Tensor[[M, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
             c: pl.Tensor[[K, K], pl.f32], fa: pl.Tensor[[2 * S], pl.u8],
             fb: pl.Tensor[[2 * SB], pl.u8]):
        pa = pl.import_peer_buffer(name="ring_a", peer_func=vec)
        pb = pl.import_peer_buffer(name="ring_b", peer_func=vec)
        pl.aic_initialize_pipe(pl.DIR_C2V, S, fa, c2v_consumer_buf=pa.base, v2c_consumer_buf=0,
                               slot_num=2, lanes=1)
        pl.aic_initialize_pipe(pl.DIR_C2V, SB, fb, c2v_consumer_buf=pb.base, v2c_consumer_buf=0,
                               slot_num=2, id=1, lanes=1)
        al = pl.move(pl.load(a, [0, 0], [M, K], space=pl.Mat), space=pl.Left)
        br = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        cr = pl.move(pl.load(c, [0, 0], [K, K], space=pl.Mat), space=pl.Right)
        pl.TPUSH(pl.matmul(al, br), pa)
        pl.TPUSH(pl.matmul(al, cr), pb)

    def golden(a):
        return {"oa": a["a"] @ a["b"] + 1, "ob": 2 * (a["a"] @ a["c"])}
    return (pl.program(cube, vec, name=f"two_rings_{mode}"),
            lambda g: dict(a=_r(g, M, K), b=_r(g, K, N), c=_r(g, K, K),
                           oa=np.zeros((M, N), np.float32), ob=np.zeros((M, K), np.float32),
                           fa=ptopipe.gm_buffer(2 * S), fb=ptopipe.gm_buffer(2 * SB)),
            golden), vec


CASES = {
    "expand_mixed: pure vector with a split is one AIV kernel": pure_vector,
    "expand_mixed: tile.create accumulator is pure AIC": created_acc_pure_cube,
    "expand_mixed: matmul then vector chain (C2V)": lambda: matmul_post_chain()[0],
    "expand_mixed: vector op before matmul (V2C into Left)": v2c_pre_matmul,
    "expand_mixed: both directions inside a loop": both_ways_in_loop,
    "expand_mixed / init_memref: flat ops and a loop carry": loop_plus_flat_ops,
    "insert_tfree: after the last use past an intermediate": tfree_after_intermediate_use,
    "insert_tfree: popped tile yielded from an if (then)": lambda: popped_tile_yielded_from_if(1),
    "insert_tfree: popped tile yielded from an if (else)": lambda: popped_tile_yielded_from_if(0),
    "broadcast: [1, N] bias and [M, 1] scale": broadcast_row_and_column,
    "allocate: auto and explicit reserve beside tiles": reserve_regions,
    "pipe ids: two explicit C2V rings (id=1)": lambda: two_c2v_rings()[0],
    "slot_num: split(slot_num=16) sizes the ring (A5)": lambda: matmul_post_chain(16)[0],
}


def _combos(k: int, name: str):
    if "(A5)" in name:
        return [("a5", "spec"), ("a5", "pto-isa")] if FULL else [("a5", "spec")]
    return COMBOS if FULL else [COMBOS[k % len(COMBOS)]]


PARAMS = [pytest.param(name, plat, proto, id=f"{name}-{plat}-{proto}")
          for k, name in enumerate(CASES) for plat, proto in _combos(k, name)]


@pytest.mark.parametrize("name, platform, protocol", PARAMS)
def test_pypto_case_compiles_runs_and_matches_numpy(name, platform, protocol, no_hang):
    prog, make_args, golden = CASES[name]()
    warnings = []
    compile_program(prog, platform, protocol=protocol, warnings=warnings)
    if name.endswith("(A5)") and protocol == "pto-isa":      # deep ring on a counter flag: said
        assert any("SLOT_NUM 16 on pto-isa's counter flags can overflow" in w for w in warnings)
    args = with_slot_buffer(prog, make_args(np.random.default_rng(len(name))))
    res = run(prog, args, platform=platform, protocol=protocol)
    want = golden(args)
    for out, value in (want.items() if isinstance(want, dict) else [("out", want)]):
        np.testing.assert_array_equal(res.outputs[out], value, err_msg=f"{name}: {out}")


def test_the_pure_kernels_have_no_pipe_and_the_reserves_keep_their_places():
    for build in (pure_vector, created_acc_pure_cube):
        op = compile_program(build()[0], "a2a3")
        assert len(functions(op)) == 1 and not init_ops(functions(op)[0])
    fn = next(f for f in compile_program(reserve_regions()[0], "a5").body if f.is_a(FuncOp))
    lay = read_layout(fn)
    assert lay.by_name["fixed"] == (0x1000, 1024)
    regions = sorted(lay.by_name.values())
    for _mem, addr in lay.tiles.values():                    # 16x32 f32 tiles: 2 KiB each
        assert all(addr + 2048 <= lo or lo + n <= addr for lo, n in regions), (addr, regions)


# -- the kernels pypto refuses: a CompileError at the line -------------------------------
def _error_at(prog, fn, marker, platform="a2a3", protocol="spec") -> CompileError:
    with pytest.raises(CompileError) as ei:
        compile_program(prog, platform, protocol=protocol)
    e = ei.value
    assert e.where.startswith(f"{fn.pyfunc.__code__.co_filename}:{line_of(fn.pyfunc, marker)}:"), e
    return e


def test_an_unmatched_tfree_is_refused_at_it():
    (prog, _, _), vec = two_c2v_rings(2)
    e = _error_at(prog, vec, "AGAIN")
    assert "TFREE of the C2V id=1 ring with no popped slot held" in e.what, e.what


def test_a_tfree_naming_another_ring_id_is_refused_at_it():
    _, vec = two_c2v_rings(0)
    with pytest.raises(CompileError) as ei:              # the DSL's check, as it builds
        two_c2v_rings(3)
    e = ei.value
    assert e.where.startswith(f"{vec.pyfunc.__code__.co_filename}:"
                              f"{line_of(vec.pyfunc, 'OTHER_ID')}:"), e
    assert "this TFREE says id=2 but passes the buffer of the C2V id=1 ring" in e.what, e.what


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_sixteen_slots_on_a2a3_are_refused_at_the_function(protocol):
    (prog, _, _), fn = matmul_post_chain(16)
    e = _error_at(prog, fn, "DEF", "a2a3", protocol)
    assert "SlotNum 16" in e.what or "SLOT_NUM 16" in e.what, e.what


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_hand_pairs_pop_without_tfree_is_reported_at_the_pop(platform):
    """pypto's verifier refuses a TPOP with no TFREE; a hand-written pair runs as written
    and its run names the pop (compile_program's InsertTfree adds the TFREE instead, as
    pypto's pass does for the pops it makes)."""
    (prog, make_args, _), vec = two_c2v_rings(1)
    with pytest.raises(LeakError) as ei:
        run(prog, make_args(np.random.default_rng(1)), platform=platform)
    where = ei.value.where.rsplit(":", 2)           # the run names the file as imported
    assert os.path.samefile(where[0], vec.pyfunc.__code__.co_filename), ei.value
    assert int(where[1]) == line_of(vec.pyfunc, "POP_B"), ei.value
    text = print_program(compile_program(prog, platform))
    assert "pl.TFREE(rb, id=1)" in text.split("def vec")[1]


OVERLAP = '''import ptopipe.language as pl

@pl.aiv(split=pl.TILE_NO_SPLIT)
def main(x: pl.Tensor[[16, 32], pl.f32]):
    first = pl.reserve_buffer(name="first", size=4096, base=0)
    second = pl.reserve_buffer(name="second", size=1024, base=1024)
    pl.store(pl.load(x, [0, 0], [16, 32]), [0, 0], x)
'''


def test_overlapping_reserves_are_refused_at_the_second():
    with pytest.raises(CompileError) as ei:
        compile_program(pl.parse(OVERLAP), "a5")
    assert ei.value.where.endswith(":6:5") and "overlaps reserve_buffer 'first'" in ei.value.what


LONE = '''import ptopipe.language as pl

@pl.aiv(split=pl.TILE_NO_SPLIT)
def consumer(fifo: pl.Tensor[[4096], pl.u8], out: pl.Tensor[[16, 32], pl.f32]):
    buf = pl.reserve_buffer(name="c2v_slot_buffer", size=4096, base=pl.AUTO)
    pl.aiv_initialize_pipe(pl.DIR_C2V, 2048, fifo, c2v_consumer_buf=buf.base, v2c_consumer_buf=0,
                           slot_num=2)
    t = pl.TPOP(buf, pl.Tile[[16, 32], pl.f32, pl.Vec])
    pl.store(t, [0, 0], out)
    pl.TFREE(buf)
'''


def test_a_lone_kernel_compiles_and_its_run_names_the_missing_peer():
    prog = pl.parse(LONE)
    compile_program(prog, "a5")
    with pytest.raises(ConfigError) as ei:
        run(prog, dict(fifo=ptopipe.gm_buffer(4096), out=np.zeros((M, N), np.float32)),
            platform="a5")
    assert "has no Cube kernel to be its peer" in ei.value.what and ei.value.where.endswith(":6:5")
