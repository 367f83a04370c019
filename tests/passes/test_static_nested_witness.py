"""``check --static`` of a hang inside nested loops of unknown trip count: the products of
their trip counts leave the deadlock check undecided for every value, so the program is
verified again exactly with small values of its scalars - the first that hang are the
finding, naming them (a run with them hangs at the same TPOPs); a kernel no small value
hangs stays "not proven", never a FAIL."""
import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe.errors import DeadlockError
from ptopipe.passes.static_check import FAILED, NOT_PROVEN, verdict, verify_program
from ptopipe.runtime import run as dsl_run

from markers import line_of

TM, K, N = 16, 32, 32
SLOT = TM * N * 4
HR = TM // 2
VEC = pl.Tile[[HR, N], pl.f32, pl.Vec]


def build(ack_first: bool):
    """Per outer iteration the Cube pops an acknowledgement (V2C), then pushes m tiles
    (C2V); the Vector kernel pops the m tiles and pushes the acknowledgement - first
    (``ack_first``: fine) or after its pops (a hang once n and m are at least 1)."""
    @pl.aiv
    def vec(x: pl.Tensor[[TM, N], pl.f32], out: pl.Tensor[[TM, N], pl.f32], fifo: pl.Tensor[[16 * SLOT], pl.u8],
            n: pl.Scalar[pl.index], m: pl.Scalar[pl.index]):
        c2v = pl.reserve_buffer(name="c2v", size=4 * SLOT, base=pl.AUTO)
        v2c = pl.import_peer_buffer(name="v2c", peer_func=cube)
        pl.aiv_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=c2v.base,
                               v2c_consumer_buf=v2c.base, slot_num=4)
        sub = pl.get_subblockid()
        for i in pl.range(n):
            if ack_first:
                pl.TPUSH(pl.load(x, [sub * HR, 0], [HR, N]), v2c, split=pl.TILE_UP_DOWN)
            for j in pl.range(m):
                t = pl.TPOP(c2v, VEC, split=pl.TILE_UP_DOWN)
                pl.store(t, [sub * HR, 0], out)
                pl.barrier()                    # (the store's read before the free: A5 pto-isa)
                pl.TFREE(c2v)
            if not ack_first:
                pl.TPUSH(pl.load(x, [sub * HR, 0], [HR, N]), v2c, split=pl.TILE_UP_DOWN)

    @pl.aic
    def cube(a: pl.Tensor[[TM, K], pl.f32], b: pl.Tensor[[K, N], pl.f32], fifo: pl.Tensor[[16 * SLOT], pl.u8],
             n: pl.Scalar[pl.index], m: pl.Scalar[pl.index]):
        v2c = pl.reserve_buffer(name="v2c", size=4 * SLOT, base=pl.AUTO)
        c2v = pl.import_peer_buffer(name="c2v", peer_func=vec)
        pl.aic_initialize_pipe(pl.DIR_C2V | pl.DIR_V2C, SLOT, fifo, c2v_consumer_buf=c2v.base,
                               v2c_consumer_buf=v2c.base, slot_num=4)
        a0 = pl.move(pl.load(a, [0, 0], [TM, K], space=pl.Mat), space=pl.Left)
        b0 = pl.move(pl.load(b, [0, 0], [K, N], space=pl.Mat), space=pl.Right)
        for i in pl.range(n):
            g = pl.TPOP(v2c, pl.Tile[[TM, N], pl.f32, pl.Mat], split=pl.TILE_UP_DOWN)      # ACK
            pl.TFREE(v2c)
            for j in pl.range(m):
                pl.TPUSH(pl.matmul(a0, b0), c2v, split=pl.TILE_UP_DOWN)
    return pl.program(cube, vec, name="nested"), cube


def _args(n, m):
    rng = np.random.default_rng(0)
    return dict(x=rng.integers(-3, 4, (TM, N)).astype(np.float32), a=rng.integers(-3, 4, (TM, K)).astype(np.float32),
                b=rng.integers(-3, 4, (K, N)).astype(np.float32), out=np.zeros((TM, N), np.float32),
                fifo=ptopipe.gm_buffer(16 * SLOT), n=n, m=m)


def _status(prog, scalars, platform="a2a3", protocol="spec"):
    def verify_with(values):
        warnings = []
        return verify_program(prog, platform, protocol, values, warnings), warnings
    return verdict(verify_with, scalars)


@pytest.mark.parametrize("platform,protocol", [("a2a3", "spec"), ("a2a3", "pto-isa"), ("a5", "spec"),
                                               ("a5", "pto-isa")])
def test_a_nested_hang_no_given_value_shows_is_found_with_small_values_a_run_hangs_with(platform, protocol):
    prog, cube = build(ack_first=False)
    # m = 0 (the launch's): no hang; for every value: the first small values that hang
    status, found, _ = _status(prog, {"n": 2, "m": 0}, platform, protocol)
    assert status == FAILED, found
    (e,) = found
    assert e.kind == "deadlock" and f":{line_of(cube.pyfunc, 'ACK')}:" in e.where, str(e)
    assert e.values == "m=1, n=1" and "found by verifying exactly with small values" in e.details, str(e)
    dsl_run(prog, _args(2, 0), platform=platform, protocol=protocol)            # the launch's values pass
    with pytest.raises(DeadlockError) as ran:                                   # the named ones hang
        dsl_run(prog, _args(1, 1), platform=platform, protocol=protocol)
    assert f":{line_of(cube.pyfunc, 'ACK')}:" in str(ran.value)


def test_a_nested_kernel_no_small_value_hangs_stays_not_proven():
    prog, _ = build(ack_first=True)
    status, found, warnings = _status(prog, {"n": 2, "m": 2})
    assert status == NOT_PROVEN and found == [], [str(e) for e in found]
    assert any("deadlock freedom" in w for w in warnings), warnings
