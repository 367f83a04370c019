"""Both ends of a pipe declare the same configuration: a hand-written pair whose
AIC and AIV inits differ in SLOT_SIZE, SLOT_NUM, DIR_MASK or lanes is reported statically
by VerifyPipes (CompileError) and, before running, by the runtime (ConfigError) - at the
init of the side that differs, naming both values - instead of a symptom (a reserve size,
a slot overrun) found while running."""
import os

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.errors import CompileError, ConfigError, shown_path
from ptopipe.passes import verify_pipes
from ptopipe.runtime import run as dsl_run

from markers import line_of

TM, K, N, T = 16, 32, 32, 2
SLOT = TM * N * 4
SN = 4
HR = TM // 2
HERE = os.path.abspath(__file__)


def build(aiv_slot=SLOT, aiv_reserve_slot=SLOT, aic_num=SN, aiv_dir=pl.DIR_C2V, aic_lanes=None):
    """The Cube pushes T 16x32 tiles; each Vector lane pops its UP_DOWN half, adds 1 and
    stores it.  The keyword arguments change one end's declaration."""
    @pl.aiv
    def vector(out: pl.Tensor[[T * TM, N], pl.f32], fifo: pl.Tensor[[2 * SN * SLOT], pl.u8]):
        buf = pl.reserve_buffer(name="c2v", size=SN * aiv_reserve_slot, base=pl.AUTO)
        pl.aiv_initialize_pipe(aiv_dir, aiv_slot, fifo, c2v_consumer_buf=buf.base,        # AIV-INIT
                               v2c_consumer_buf=0, slot_num=SN)
        sub = pl.get_subblockid()
        for i in pl.range(T):
            x = pl.TPOP(buf, pl.Tile[[HR, N], pl.f32, pl.Vec], split=pl.TILE_UP_DOWN)
            o = pl.adds(x, 1.0)
            pl.TFREE(buf)
            pl.store(o, [i * TM + sub * HR, 0], out)

    @pl.aic
    def cube(a: pl.Tensor[[T * TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32],
             fifo: pl.Tensor[[2 * SN * SLOT], pl.u8]):
        peer = pl.import_peer_buffer(name="c2v", peer_func=vector)
        pl.aic_initialize_pipe(pl.DIR_C2V, SLOT, fifo, c2v_consumer_buf=peer.base,          # AIC-INIT
                               v2c_consumer_buf=0, slot_num=aic_num, lanes=aic_lanes)
        b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(T):
            al = pl.move(pl.load(a, [i * TM, 0], [TM, K], space=pl.Mat), space=pl.Left)
            pl.TPUSH(pl.matmul(al, b0), peer, split=pl.TILE_UP_DOWN)

    return pl.program(cube, vector, name="ends"), vector, cube


def _args():
    rng = np.random.default_rng(1)
    return dict(a=rng.integers(-3, 4, (T * TM, K)).astype(np.float32),
                b=rng.integers(-3, 4, (K, N)).astype(np.float32),
                out=np.zeros((T * TM, N), np.float32), fifo=ptopipe.gm_buffer(2 * SN * SLOT))


CASES = {   # name: (build kwargs, the side that differs, message)
    "slot_size_aiv_only": (dict(aiv_slot=SLOT // 2), "AIV",
                           "disagree on slot_size: vector (AIV) declares SLOT_SIZE 1024 but cube (AIC) "
                           "declares SLOT_SIZE 2048"),
    "slot_size_aiv_and_reserve": (dict(aiv_slot=SLOT // 2, aiv_reserve_slot=SLOT // 2), "AIV",
                                  "disagree on slot_size: vector (AIV) declares SLOT_SIZE 1024"),
    # below one Vector core's part: too small for the AIV end on every platform
    "slot_size_aiv_and_reserve_below_part": (dict(aiv_slot=SLOT // 4, aiv_reserve_slot=SLOT // 4), "AIV",
                                             "disagree on slot_size: vector (AIV) declares SLOT_SIZE 512"),
    "slot_num_aic": (dict(aic_num=2), "AIC",
                     "disagree on slot_num: cube (AIC) declares SLOT_NUM 2 but vector (AIV) declares "
                     "SLOT_NUM 4"),
    "dir_mask_aiv": (dict(aiv_dir=pl.DIR_C2V | pl.DIR_V2C), "AIC",
                     "disagree on dir_mask: cube (AIC) declares DIR_C2V but vector (AIV) declares DIR_BOTH"),
    "lanes_aic": (dict(aic_lanes=1), "AIC", "disagree on lanes: cube (AIC) declares lanes=1 but vector "
                                            "(AIV) declares both lanes"),
}


#: on A5 the C2V ring is in each Vector core's UB and a slot holds one core's part: an AIV end
#: declaring SLOT_SIZE of one part with a reserve to match is right, and the Cube's end differs
A5_CASES = {"slot_size_aiv_and_reserve": ("AIC", "disagree on slot_size: cube (AIC) declares SLOT_SIZE 2048 "
                                                 "but vector (AIV) declares SLOT_SIZE 1024")}


def _case(case, platform):
    kw, side, msg = CASES[case]
    if platform == "a5" and case in A5_CASES:
        side, msg = A5_CASES[case]
    return kw, side, msg


def _line(side, fns):
    vector, cube = fns
    return line_of(cube.pyfunc, "AIC-INIT") if side == "AIC" else line_of(vector.pyfunc, "AIV-INIT")


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_static_finding_at_the_init_that_differs(case, platform):
    kw, side, msg = _case(case, platform)
    prog, *fns = build(**kw)
    found = verify_pipes.verify(prog.clone(), platform)
    assert found and isinstance(found[0], CompileError), [str(e) for e in found]
    err = found[0]
    assert msg in err.what, err.what
    assert err.where.startswith(f"{HERE}:{_line(side, fns)}:"), (err.where, str(err))
    other = "vector" if side == "AIC" else "cube"
    assert f"the other end: {other}'s init at {shown_path(HERE)}:{_line('AIV' if side == 'AIC' else 'AIC', fns)}:" \
        in str(err)


@pytest.mark.parametrize("case", ["slot_size_aiv_only", "slot_size_aiv_and_reserve",
                                  "slot_size_aiv_and_reserve_below_part", "slot_num_aic"])
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_run_names_the_mismatch_first(case, platform, protocol):
    kw, side, msg = _case(case, platform)
    prog, *fns = build(**kw)
    with pytest.raises(ConfigError) as ei:
        dsl_run(prog, _args(), platform=platform, protocol=protocol)
    assert msg in ei.value.what, str(ei.value)
    assert ei.value.where.startswith(f"{HERE}:{_line(side, fns)}"), (ei.value.where, str(ei.value))


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_agreeing_ends_are_clean_and_exact(platform, protocol):
    prog, *_ = build()
    assert verify_pipes.verify(prog.clone(), platform) == []
    args = _args()
    res = dsl_run(prog, args, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], args["a"] @ args["b"] + 1)
