"""ExpandMixedKernel's GM synchronisation tokens: a GM tensor the Cube writes and the
Vector reads (and the reverse) inside one mixed function is ordered by a token push /
pop; runs clean (no DataRaceError, checkers on) and matches numpy on both platforms and
protocols; without the token the race checker reports the race; the unorderable case
(a read before the other side's write) is a CompileError at the read."""
import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe import CompileError, DataRaceError
from ptopipe.ir import print_program
from ptopipe.passes import compile_program
from ptopipe.passes import expand_mixed
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import kernels

from configs import rotated
from markers import line_of

COMBOS = [(p, q) for p in ("a2a3", "a5") for q in ("spec", "pto-isa")]


def cube_to_vector(split=pl.TILE_UP_DOWN):
    @pl.incore(split=split)
    def c2v(a: pl.Tensor[[64, 16], pl.f32], b: pl.Tensor[[16, 16], pl.f32],
            tmp: pl.Tensor[[64, 16], pl.f32], out: pl.Tensor[[64, 16], pl.f32]):
        r = pl.move(pl.load(b, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        for i in pl.range(4):
            t = pl.move(pl.load(a, [i * 16, 0], [16, 16], space=pl.Mat), space=pl.Left)
            pl.store(pl.matmul(t, r), [i * 16, 0], tmp)           # Cube writes tmp
            x = pl.load(tmp, [i * 16, 0], [16, 16])                 # Vector reads it
            pl.store(pl.adds(x, 1.0), [i * 16, 0], out)
    return pl.program(c2v)


def vector_to_cube():
    @pl.incore
    def v2c(x: pl.Tensor[[16, 16], pl.f32], b: pl.Tensor[[16, 16], pl.f32],
            tmp: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32]):
        v = pl.muls(pl.load(x, [0, 0], [16, 16]), 2.0)
        pl.store(v, [0, 0], tmp)                                    # Vector writes tmp
        t = pl.move(pl.load(tmp, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)   # Cube reads
        r = pl.move(pl.load(b, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        pl.store(pl.matmul(t, r), [0, 0], out)
    return pl.program(v2c)


def _args_c2v(rng):
    return dict(a=rng.integers(-3, 4, (64, 16)).astype(np.float32),
                b=rng.integers(-3, 4, (16, 16)).astype(np.float32),
                tmp=np.zeros((64, 16), np.float32), out=np.zeros((64, 16), np.float32))


def _args_v2c(rng):
    return dict(x=rng.integers(-3, 4, (16, 16)).astype(np.float32),
                b=rng.integers(-3, 4, (16, 16)).astype(np.float32),
                tmp=np.zeros((16, 16), np.float32), out=np.zeros((16, 16), np.float32))


#: what compiling a LEFT_RIGHT split of the Cube's 16-column Acc tiles says on A5, whose split
#: push of an Acc into the Vector cores' UB takes a multiple of 32 columns (pto-isa's dual-mode TMOV)
A5_ACC_LR = "a multiple of 32 columns"


def _refused_on_a5(platform, split) -> bool:
    """Both directions' kernels have the Cube push Acc tiles (data or a token)."""
    return platform == "a5" and split == pl.TILE_LEFT_RIGHT


def _run(prog, args, platform, protocol):
    compiled = compile_program(prog, platform, protocol=protocol)
    aic, aiv = kernels(compiled)
    return ptopipe.run(aic, aiv, with_slot_buffer(compiled, args), platform=platform,
                       protocol=protocol)


@pytest.mark.parametrize("platform,protocol", COMBOS)
@pytest.mark.parametrize("split", [pl.TILE_UP_DOWN, pl.TILE_LEFT_RIGHT, pl.TILE_NO_SPLIT])
def test_cube_writes_vector_reads_gm(platform, protocol, split, no_hang):
    args = _args_c2v(np.random.default_rng(1))
    if _refused_on_a5(platform, split):
        with pytest.raises(CompileError, match=A5_ACC_LR):
            _run(cube_to_vector(split), args, platform, protocol)
        return
    r = _run(cube_to_vector(split), args, platform, protocol)     # checkers on
    np.testing.assert_array_equal(r.outputs["tmp"], args["a"] @ args["b"])
    np.testing.assert_array_equal(r.outputs["out"], args["a"] @ args["b"] + 1)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_vector_writes_cube_reads_gm(platform, protocol, no_hang):
    args = _args_v2c(np.random.default_rng(2))
    r = _run(vector_to_cube(), args, platform, protocol)
    np.testing.assert_array_equal(r.outputs["out"], (args["x"] * 2) @ args["b"])


def test_the_token_is_a_push_after_the_store_and_a_pop_before_the_load():
    text = print_program(compile_program(cube_to_vector(), "a2a3"))
    aic, aiv = text.split("@pl.aiv")[0], text.split("@pl.aiv")[1].split("@pl.incore")[0]
    assert aic.index("pl.store(_t0, [i * 16, 0], tmp)") < aic.index("pl.TPUSH(_t0")
    assert aiv.index("tmp_token = pl.TPOP(") < aiv.index("pl.TFREE(") < aiv.index("pl.load(tmp")


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_without_the_token_the_race_checker_reports_it(platform, protocol, monkeypatch, no_hang):
    """The guard of the tests above: with the token pass disabled the same kernel is a
    DataRaceError (the Vector's load is not ordered after the Cube's store)."""
    monkeypatch.setattr(expand_mixed, "insert_gm_tokens", lambda fn: [])
    with pytest.raises(DataRaceError):
        _run(cube_to_vector(), _args_c2v(np.random.default_rng(1)), platform, protocol)


def read_then_write():
    """The Vector reads tmp, then the Cube overwrites it, in a loop: iteration i reads what
    iteration i-1 wrote (write-after-read and read-after-write across the cores)."""
    @pl.incore
    def k(a: pl.Tensor[[16, 16], pl.f32], tmp: pl.Tensor[[16, 16], pl.f32],
          out: pl.Tensor[[32, 16], pl.f32]):
        for i in pl.range(2):
            x = pl.load(tmp, [0, 0], [16, 16])  # READ
            pl.store(pl.adds(x, 1.0), [i * 16, 0], out)
            t = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
            r = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
            pl.store(pl.matmul(t, r), [0, 0], tmp)  # WRITE
    return k


def scratch_reused(direction, split=pl.TILE_UP_DOWN):
    """One GM scratch tile written by one side and read by the other in every iteration: the
    next iteration's write must wait for this iteration's read (write-after-read)."""
    if direction == "c2v":
        @pl.incore(split=split)
        def k(a: pl.Tensor[[64, 16], pl.f32], b: pl.Tensor[[16, 16], pl.f32],
              mid: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[64, 16], pl.f32]):
            r = pl.move(pl.load(b, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
            for i in pl.range(4):
                t = pl.move(pl.load(a, [i * 16, 0], [16, 16], space=pl.Mat), space=pl.Left)
                pl.store(pl.matmul(t, r), [0, 0], mid)
                pl.store(pl.adds(pl.load(mid, [0, 0], [16, 16]), 1.0), [i * 16, 0], out)
    else:
        @pl.incore(split=split)
        def k(a: pl.Tensor[[64, 16], pl.f32], b: pl.Tensor[[16, 16], pl.f32],
              mid: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[64, 16], pl.f32]):
            r = pl.move(pl.load(b, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
            for i in pl.range(4):
                pl.store(pl.adds(pl.load(a, [i * 16, 0], [16, 16]), 1.0), [0, 0], mid)
                t = pl.move(pl.load(mid, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)
                pl.store(pl.matmul(t, r), [i * 16, 0], out)
    return pl.program(k)


# each direction and split on one platform / protocol pair, rotated (configs.rotated;
# PTOPIPE_FULL=1: on every pair)
@pytest.mark.parametrize("direction,split,platform,protocol", rotated(
    [(d, s) for d in ("c2v", "v2c") for s in (pl.TILE_UP_DOWN, pl.TILE_LEFT_RIGHT, pl.TILE_NO_SPLIT)]))
def test_a_gm_scratch_reused_every_iteration_is_ordered(direction, split, platform, protocol,
                                                        no_hang):
    args = _args_c2v(np.random.default_rng(3))
    args["mid"] = args.pop("tmp")[:16]
    if _refused_on_a5(platform, split):
        with pytest.raises(CompileError, match=A5_ACC_LR):
            _run(scratch_reused(direction, split), args, platform, protocol)
        return
    r = _run(scratch_reused(direction, split), args, platform, protocol)     # checkers on
    want = args["a"] @ args["b"] + 1 if direction == "c2v" else (args["a"] + 1) @ args["b"]
    np.testing.assert_array_equal(r.outputs["out"], want)


def test_the_write_after_read_token_follows_the_read_and_the_cubes_matmul():
    """The Vector's token follows its load of mid; the Cube's (it can push Acc tiles only)
    follows the matmul made from its load of mid."""
    for direction, side, after in (("c2v", "@pl.aiv", "pl.load(mid"), ("v2c", "@pl.aic", "pl.matmul(")):
        text = print_program(compile_program(scratch_reused(direction), "a5"))
        kernel = text.split(side)[1].split("\n@")[0]
        assert "pl.TPUSH(" in kernel[kernel.index(after):], direction


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_without_the_loop_carried_token_the_reused_scratch_races(platform, protocol,
                                                                monkeypatch, no_hang):
    """The guard of the test above: ordering only later-in-program-order accesses (not the
    next iteration's) leaves the Cube's next store racing with the Vector's load."""
    from ptopipe.passes import gm_tokens
    monkeypatch.setattr(gm_tokens, "_loops", lambda op: set())
    args = _args_c2v(np.random.default_rng(3))
    args["mid"] = args.pop("tmp")[:16]
    with pytest.raises(DataRaceError):
        _run(scratch_reused("c2v"), args, platform, protocol)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_a_read_before_the_other_sides_write_sees_the_older_value(platform, protocol, no_hang):
    rng = np.random.default_rng(4)
    args = dict(a=rng.integers(-3, 4, (16, 16)).astype(np.float32),
                tmp=rng.integers(-3, 4, (16, 16)).astype(np.float32),
                out=np.zeros((32, 16), np.float32))
    r = _run(pl.program(read_then_write()), dict(args), platform, protocol)
    np.testing.assert_array_equal(r.outputs["out"][:16], args["tmp"] + 1)
    np.testing.assert_array_equal(r.outputs["out"][16:], args["a"] @ args["a"] + 1)
    np.testing.assert_array_equal(r.outputs["tmp"], args["a"] @ args["a"])


def test_a_cube_read_no_token_can_follow_is_an_error_at_the_read():
    """The Cube pushes Acc tiles only: a Cube load the Vector overwrites before any Acc tile
    is made from it cannot be ordered."""
    @pl.incore
    def k(a: pl.Tensor[[16, 16], pl.f32], b: pl.Tensor[[16, 16], pl.f32],
          out: pl.Tensor[[16, 16], pl.f32]):
        t = pl.move(pl.load(a, [0, 0], [16, 16], space=pl.Mat), space=pl.Left)  # READ
        pl.store(pl.full([16, 16], pl.f32, 0.0), [0, 0], a)  # WRITE
        r = pl.move(pl.load(b, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        pl.store(pl.matmul(t, r), [0, 0], out)

    with pytest.raises(CompileError, match="GM tensor 'a' is read here by the Cube from a Mat "
                                           "tile and written later by the other side") as e:
        compile_program(pl.program(k), "a2a3")
    f = k.pyfunc.__code__.co_filename
    assert e.value.where.startswith(f"{f}:{line_of(k.pyfunc, 'READ')}:")
    assert f":{line_of(k.pyfunc, 'WRITE')}:" in e.value.what


WM, WK, WN = 16, 32, 32


@pl.incore(split=pl.TILE_UP_DOWN)
def both_write(a: pl.Tensor[[WM, WK], pl.f32], b: pl.Tensor[[WK, WN], pl.f32],
               c: pl.Tensor[[WM, WN], pl.f32], out: pl.Tensor[[WM, WN], pl.f32]):
    al = pl.move(pl.load(a, [0, 0], [WM, WK], space=pl.Mat), space=pl.Left)
    bl = pl.move(pl.load(b, [0, 0], [WK, WN], space=pl.Mat), space=pl.Right)
    pl.store(pl.matmul(al, bl), [0, 0], out)                      # the Cube writes first
    pl.store(pl.adds(pl.load(c, [0, 0], [WM, WN]), 1.0), [0, 0], out)   # then the Vector


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_both_sides_writing_one_tensor_are_ordered(platform, protocol):
    """A GM tensor both sides write: a token after the earlier write orders the later one
    (no race; the later write wins, as in program order)."""
    prog = pl.program(both_write, name="ww")
    rng = np.random.default_rng(6)
    args = with_slot_buffer(prog, dict(a=rng.integers(-3, 4, (WM, WK)).astype(np.float32),
                                       b=rng.integers(-3, 4, (WK, WN)).astype(np.float32),
                                       c=rng.integers(-3, 4, (WM, WN)).astype(np.float32),
                                       out=np.zeros((WM, WN), np.float32)))
    aic, aiv = kernels(prog)
    res = ptopipe.run(aic, aiv, args, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], args["c"] + 1)


RN = 4


def gm_recurrence(split=pl.TILE_UP_DOWN):
    """buf[i+1] = 0.5 * (buf[i] @ w) + 1: the Cube loads row block i, the Vector stores row
    block i + 1, which the Cube loads in the next iteration (a GM token orders them)."""
    @pl.incore(split=split, slot_num=2)
    def rec(buf: pl.Tensor[[(RN + 1) * 16, 16], pl.f32], w: pl.Tensor[[16, 16], pl.f32]):
        w_r = pl.move(pl.load(w, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        for i in pl.range(RN):
            bi = pl.move(pl.load(buf, [i * 16, 0], [16, 16], space=pl.Mat), space=pl.Left)
            r = pl.move(pl.matmul(bi, w_r), space=pl.Vec)
            pl.store(pl.adds(pl.muls(r, 0.5), 1.0), [(i + 1) * 16, 0], buf)
    return pl.program(rec)


def _rec_args(rng):
    buf = np.zeros(((RN + 1) * 16, 16), np.float32)
    buf[:16] = rng.integers(-2, 3, (16, 16))
    return dict(buf=buf, w=(rng.integers(-2, 3, (16, 16)) / 4).astype(np.float32))


def _rec_golden(args):
    b, w = args["buf"].astype(np.float64).copy(), args["w"].astype(np.float64)
    for i in range(RN):
        b[(i + 1) * 16:(i + 2) * 16] = 0.5 * (b[i * 16:(i + 1) * 16] @ w) + 1
    return b


@pytest.mark.parametrize("platform,protocol", COMBOS)
@pytest.mark.parametrize("split", [pl.TILE_UP_DOWN, pl.TILE_NO_SPLIT])
def test_a_gm_recurrence_across_the_cores_is_not_skewed(split, platform, protocol, no_hang):
    """SkewPushAhead must not run the Cube's loads ahead of the Vector's stores it waits for
    through the GM token (it did: a DataRaceError, wrong numbers with the checkers off)."""
    args = _rec_args(np.random.default_rng(8))
    r = _run(gm_recurrence(split), dict(args), platform, protocol)
    np.testing.assert_allclose(r.outputs["buf"], _rec_golden(args), rtol=1e-5)


@pytest.mark.parametrize("platform,protocol", COMBOS)
def test_skewing_the_gm_recurrence_races(platform, protocol, monkeypatch, no_hang):
    """The guard of the test above: without the peer-store check SkewPushAhead skews the
    Cube's loop and the race checker reports the load racing the Vector's store."""
    from ptopipe.passes import skew_push_ahead
    monkeypatch.setattr(skew_push_ahead, "_stores", lambda fn: set())
    with pytest.raises(DataRaceError):
        _run(gm_recurrence(), _rec_args(np.random.default_rng(8)), platform, protocol)
